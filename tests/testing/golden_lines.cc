// golden_lines.h: the pattern matcher (a backtracking match over short lines; no std::regex, which
// trips a gcc 12 false positive under -fsanitize=address -Werror).
#include "golden_lines.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace rtloop::testing {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

enum class Kind { kLiteral, kInt, kFloat, kId, kWord, kAny };

struct Token {
  Kind kind = Kind::kLiteral;
  std::string text;       // kLiteral
  std::size_t width = 0;  // a numeric placeholder's printf width (%5int); 0: any padding
};

// Splits a pattern line into literal runs and placeholders; false (with `error`) when malformed.
bool Tokenize(std::string_view pattern, std::vector<Token>* tokens, std::string* error) {
  static constexpr struct {
    std::string_view name;
    Kind kind;
  } kPlaceholders[] = {{"int", Kind::kInt}, {"float", Kind::kFloat}, {"pid", Kind::kId},
                       {"tid", Kind::kId},  {"word", Kind::kWord},   {"any", Kind::kAny}};
  std::string literal;
  auto flush = [&] {
    if (!literal.empty()) tokens->push_back({Kind::kLiteral, literal});
    literal.clear();
  };
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      literal += pattern[i];
      continue;
    }
    std::string_view rest = pattern.substr(i + 1);
    std::size_t width = 0;
    while (!rest.empty() && IsDigit(rest[0])) {
      width = width * 10 + static_cast<std::size_t>(rest[0] - '0');
      rest.remove_prefix(1);
      ++i;
    }
    if (width != 0 && rest.substr(0, 3) != "int" && rest.substr(0, 5) != "float" &&
        rest.substr(0, 3) != "pid" && rest.substr(0, 3) != "tid") {
      *error = "a width only before int, float, pid or tid, at column " + std::to_string(i + 1);
      return false;
    }
    if (rest.substr(0, 1) == "%") {
      literal += '%';
      ++i;
      continue;
    }
    bool found = false;
    for (const auto& p : kPlaceholders) {
      if (rest.substr(0, p.name.size()) == p.name) {
        flush();
        tokens->push_back({p.kind, "", width});
        i += p.name.size();
        found = true;
        break;
      }
    }
    // %e after the longer names (%e is not a prefix of any of them, but keep the order obvious).
    if (!found && rest.substr(0, 1) == "e") {
      literal += '\033';
      ++i;
      found = true;
    }
    if (!found) {
      *error = "unknown placeholder at column " + std::to_string(i + 1) + " (write %% for '%')";
      return false;
    }
  }
  flush();
  return true;
}

// The ends (longest first) a placeholder of `kind` can have when it starts at `pos` of `line`.
std::vector<std::size_t> Ends(Kind kind, std::string_view line, std::size_t pos) {
  std::vector<std::size_t> ends;
  const std::size_t n = line.size();
  if (kind == Kind::kAny) {
    for (std::size_t e = n + 1; e-- > pos;) ends.push_back(e);
    return ends;
  }
  if (kind == Kind::kWord) {
    std::size_t e = pos;
    while (e < n && line[e] != ' ' && line[e] != '\t') ++e;
    for (; e > pos; --e) ends.push_back(e);
    return ends;
  }
  std::size_t p = pos;
  while (p < n && line[p] == ' ') ++p;
  if (kind != Kind::kId && p < n && line[p] == '-') ++p;
  const std::size_t digits = p;
  while (p < n && IsDigit(line[p])) ++p;
  if (p == digits) return ends;
  if (kind == Kind::kId) {
    const std::string_view number = line.substr(digits, p - digits);
    if (number.find_first_not_of('0') == std::string_view::npos) return ends;  // 0 is no id
  }
  std::vector<std::size_t> int_ends;
  for (std::size_t e = p; e > digits; --e) int_ends.push_back(e);
  if (kind == Kind::kFloat && p < n && line[p] == '.') {
    std::size_t f = p + 1;
    while (f < n && IsDigit(line[f])) ++f;
    for (std::size_t e = f; e > p + 1; --e) ends.push_back(e);
  }
  ends.insert(ends.end(), int_ends.begin(), int_ends.end());
  return ends;
}

bool MatchTokens(const std::vector<Token>& tokens, std::size_t t, std::string_view line,
                 std::size_t pos) {
  if (t == tokens.size()) return pos == line.size();
  const Token& token = tokens[t];
  if (token.kind == Kind::kLiteral) {
    return line.substr(pos, token.text.size()) == token.text &&
           MatchTokens(tokens, t + 1, line, pos + token.text.size());
  }
  for (const std::size_t end : Ends(token.kind, line, pos)) {
    // printf's "%5d": exactly 5 columns, or more without padding for a longer number.
    const std::size_t len = end - pos;
    if (token.width != 0 && len != token.width && (len < token.width || line[pos] == ' ')) {
      continue;
    }
    if (MatchTokens(tokens, t + 1, line, end)) return true;
  }
  return false;
}

std::vector<std::string_view> LineViews(std::string_view text, bool* ends_with_newline) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  *ends_with_newline = text.empty() || text.back() == '\n';
  return lines;
}

struct PatternLine {
  std::string_view pattern;
  bool repeat = false;          // %lines or %lines*
  bool optional = false;        // %lines*: also no line
  std::size_t golden_line = 0;  // 1-based, for the report
};

// Shows control characters (the terminal escapes) so a report can be read.
std::string Visible(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '\033') {
      out += "\\e";
    } else if (c == '\t') {
      out += "\\t";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += "\\x" + std::to_string(static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out;
}

class GoldenMatcher {
 public:
  GoldenMatcher(std::vector<PatternLine> patterns, std::vector<std::string_view> lines)
      : patterns_(std::move(patterns)), lines_(std::move(lines)) {}

  // True on a match; else furthest_* say where the furthest attempt failed.
  bool Match(std::size_t p, std::size_t l) {
    if (p == patterns_.size()) {
      if (l == lines_.size()) return true;
      Note(l, p, "an extra line the golden does not have");
      return false;
    }
    const PatternLine& pl = patterns_[p];
    if (pl.optional && Match(p + 1, l)) return true;  // %lines* standing for no line
    if (l == lines_.size()) {
      Note(l, p, "the output ends before this line");
      return false;
    }
    std::string error;
    if (!MatchLine(pl.pattern, lines_[l], &error)) {
      Note(l, p, error.empty() ? "" : "bad pattern: " + error);
      return false;
    }
    if (!pl.repeat) return Match(p + 1, l + 1);
    // %lines: as many lines as match (at least this one), then fewer when the rest fails.
    std::size_t last = l + 1;
    while (last < lines_.size() && MatchLine(pl.pattern, lines_[last])) ++last;
    for (std::size_t end = last; end > l; --end) {
      if (Match(p + 1, end)) return true;
    }
    return false;
  }

  std::string Report(std::string_view actual) const {
    std::ostringstream out;
    out << "output line " << furthest_line_ + 1 << " does not match the golden";
    if (furthest_pattern_ < patterns_.size()) {
      const PatternLine& pl = patterns_[furthest_pattern_];
      out << " (golden line " << pl.golden_line << ")\n  expected: "
          << (pl.optional ? "%lines* "
              : pl.repeat ? "%lines "
                          : "")
          << Visible(pl.pattern);
    } else {
      out << "\n  expected: the end of the output";
    }
    out << "\n  actual:   ";
    if (furthest_line_ < lines_.size()) {
      out << Visible(lines_[furthest_line_]);
    } else {
      out << "(no more lines)";
    }
    if (!furthest_why_.empty()) out << "\n  why:      " << furthest_why_;
    out << "\n--- the whole output (" << lines_.size() << " lines) ---\n";
    std::size_t n = 0;
    for (const std::string_view line : lines_) out << ++n << ": " << Visible(line) << "\n";
    if (!actual.empty() && actual.back() != '\n') out << "(no newline at the end)\n";
    out << "---";
    return out.str();
  }

 private:
  void Note(std::size_t line, std::size_t pattern, std::string why) {
    if (!noted_ || line > furthest_line_) {
      noted_ = true;
      furthest_line_ = line;
      furthest_pattern_ = pattern;
      furthest_why_ = std::move(why);
    }
  }

  std::vector<PatternLine> patterns_;
  std::vector<std::string_view> lines_;
  bool noted_ = false;
  std::size_t furthest_line_ = 0;
  std::size_t furthest_pattern_ = 0;
  std::string furthest_why_;
};

}  // namespace

bool MatchLine(std::string_view pattern, std::string_view line, std::string* error) {
  std::vector<Token> tokens;
  std::string why;
  if (!Tokenize(pattern, &tokens, &why)) {
    if (error != nullptr) *error = why;
    return false;
  }
  if (error != nullptr) error->clear();
  return MatchTokens(tokens, 0, line, 0);
}

std::string MatchGolden(std::string_view golden, std::string_view actual) {
  bool golden_newline = true;
  const std::vector<std::string_view> golden_lines = LineViews(golden, &golden_newline);
  std::vector<PatternLine> patterns;
  bool want_newline = true;
  for (std::size_t i = 0; i < golden_lines.size(); ++i) {
    const std::string_view g = golden_lines[i];
    if (g.substr(0, 2) == "%#") continue;
    if (g == "%noeol") {
      if (i + 1 != golden_lines.size())
        return "golden line " + std::to_string(i + 1) + ": %noeol must be the golden's last line";
      want_newline = false;
      continue;
    }
    if (g.substr(0, 7) == "%lines ") {
      patterns.push_back({g.substr(7), true, false, i + 1});
    } else if (g.substr(0, 8) == "%lines* ") {
      patterns.push_back({g.substr(8), true, true, i + 1});
    } else {
      patterns.push_back({g, false, false, i + 1});
    }
  }
  bool actual_newline = true;
  const std::vector<std::string_view> lines = LineViews(actual, &actual_newline);
  GoldenMatcher matcher(std::move(patterns), lines);
  if (!matcher.Match(0, 0)) return matcher.Report(actual);
  if (actual_newline != want_newline) {
    return std::string("the lines match, but the output ") +
           (want_newline ? "does not end with a newline (the golden has no %noeol)"
                         : "ends with a newline (the golden ends with %noeol)");
  }
  return "";
}

std::string MatchGoldenFile(const std::string& golden_path, std::string_view actual) {
  if (const char* dir = std::getenv("RTLOOP_GOLDEN_ACTUAL_DIR"); dir != nullptr && *dir != '\0') {
    const std::filesystem::path out =
        std::filesystem::path(dir) / std::filesystem::path(golden_path).filename();
    std::ofstream(out, std::ios::binary) << actual;
  }
  std::ifstream in(golden_path, std::ios::binary);
  if (!in) return "cannot read the golden file " + golden_path;
  std::stringstream golden;
  golden << in.rdbuf();
  const std::string why = MatchGolden(golden.str(), actual);
  return why.empty() ? why : golden_path + ": " + why;
}

std::vector<std::string> SplitLines(std::string_view text) {
  bool ends_with_newline = false;
  const std::vector<std::string_view> views = LineViews(text, &ends_with_newline);
  return {views.begin(), views.end()};
}

}  // namespace rtloop::testing
