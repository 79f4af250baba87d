// Valid UTF-8 and JSON strings (utf8.h): a decoder step after the WHATWG Encoding Standard's UTF-8
// decoder, and the two writers built on it.
#include "rtloop/telemetry/utf8.h"

#include <cstdint>
#include <cstdio>

namespace rtloop::telemetry {
namespace {

constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD

// The sequence starting at text[i] (text[i] >= 0x80): its length and whether it is well-formed.
// An ill-formed one is its maximal subpart: the lead byte and the continuation bytes that were
// still acceptable when the sequence broke off (at least 1 byte; the breaking byte is not part).
struct Sequence {
  std::size_t length = 1;
  bool valid = false;
};

Sequence NextSequence(std::string_view text, std::size_t i) noexcept {
  const auto lead = static_cast<unsigned char>(text[i]);
  std::size_t needed = 0;
  unsigned char lower = 0x80;
  unsigned char upper = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    needed = 1;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    needed = 2;
    if (lead == 0xe0) lower = 0xa0;  // overlong below U+0800
    if (lead == 0xed) upper = 0x9f;  // surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    needed = 3;
    if (lead == 0xf0) lower = 0x90;  // overlong below U+10000
    if (lead == 0xf4) upper = 0x8f;  // beyond U+10FFFF
  } else {
    return {};  // a continuation byte, an overlong lead (0xC0, 0xC1) or 0xF5..0xFF
  }
  std::size_t j = i + 1;
  for (std::size_t k = 0; k < needed; ++k, ++j) {
    if (j >= text.size()) return {j - i, false};
    const auto b = static_cast<unsigned char>(text[j]);
    if (b < lower || b > upper) return {j - i, false};
    lower = 0x80;
    upper = 0xbf;
  }
  return {j - i, true};
}

}  // namespace

bool IsValidUtf8(std::string_view text) noexcept {
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const Sequence s = NextSequence(text, i);
    if (!s.valid) return false;
    i += s.length;
  }
  return true;
}

std::string ToValidUtf8(std::string_view text) {
  if (IsValidUtf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      out.push_back(text[i++]);
      continue;
    }
    const Sequence s = NextSequence(text, i);
    if (s.valid) {
      out.append(text.substr(i, s.length));
    } else {
      out.append(kReplacement);
    }
    i += s.length;
  }
  return out;
}

void AppendJsonString(std::string& out, std::string_view text) {
  out.push_back('"');
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x80) {
      const Sequence s = NextSequence(text, i);
      if (s.valid) {
        out.append(text.substr(i, s.length));
      } else {
        out.append("\\ufffd");
      }
      i += s.length;
      continue;
    }
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out.append(buf);
    } else {
      out.push_back(c);
    }
    ++i;
  }
  out.push_back('"');
}

}  // namespace rtloop::telemetry
