// The /proc readers of the counter evidence (counter_proc.h).
#include "counter_proc.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace rtloop::explain::internal {
namespace {

bool IsSpace(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsDigit(char c) noexcept { return c >= '0' && c <= '9'; }

std::string_view TrimLeft(std::string_view s) noexcept {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  return s;
}

std::string_view Trim(std::string_view s) noexcept {
  s = TrimLeft(s);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// The next whitespace-separated word of *s, removed from it; empty at the end.
std::string_view NextWord(std::string_view* s) noexcept {
  *s = TrimLeft(*s);
  std::size_t n = 0;
  while (n < s->size() && !IsSpace((*s)[n])) ++n;
  const std::string_view word = s->substr(0, n);
  s->remove_prefix(n);
  return word;
}

// A decimal number made of digits only; false for anything else (or overflow).
bool ParseU64(std::string_view word, std::uint64_t* out) noexcept {
  if (word.empty() || word.size() > 20) return false;
  std::uint64_t v = 0;
  for (const char c : word) {
    if (!IsDigit(c)) return false;
    const std::uint64_t next = v * 10 + static_cast<std::uint64_t>(c - '0');
    if (next < v) return false;
    v = next;
  }
  *out = v;
  return true;
}

bool ParseInt(std::string_view word, int* out) noexcept {
  bool negative = false;
  if (!word.empty() && word.front() == '-') {
    negative = true;
    word.remove_prefix(1);
  }
  std::uint64_t v = 0;
  if (!ParseU64(word, &v) || v > 0x7fffffff) return false;
  *out = negative ? -static_cast<int>(v) : static_cast<int>(v);
  return true;
}

// "CPU12" -> 12; -1 for another word.
int CpuWordNumber(std::string_view word) noexcept {
  if (word.size() < 4 || word.substr(0, 3) != "CPU") return -1;
  int cpu = -1;
  return ParseInt(word.substr(3), &cpu) ? cpu : -1;
}

bool IsTriggerType(std::string_view word) noexcept {
  for (const std::string_view t : {"edge", "Edge", "level", "Level", "fasteoi", "EDGE", "LEVEL"}) {
    if (word.size() >= t.size() && word.substr(word.size() - t.size()) == t) return true;
  }
  return false;
}

// The value of "key:\t value" in a status text; empty when absent.
std::string_view StatusValue(std::string_view text, std::string_view key) noexcept {
  std::string_view value;
  ForEachLine(text, [&](std::string_view line) {
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ':') {
      value = Trim(line.substr(key.size() + 1));
    }
  });
  return value;
}

}  // namespace

ProcFile::~ProcFile() {
  if (fd_ >= 0) ::close(fd_);
}

ProcFile::ProcFile(ProcFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      buffer_(std::move(other.buffer_)),
      truncated_(other.truncated_),
      last_errno_(other.last_errno_) {}

ProcFile& ProcFile::operator=(ProcFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    buffer_ = std::move(other.buffer_);
    truncated_ = other.truncated_;
    last_errno_ = other.last_errno_;
  }
  return *this;
}

int ProcFile::Open(const std::string& path, std::size_t capacity) {
  if (fd_ >= 0) ::close(fd_);
  path_ = path;
  buffer_.assign(capacity, '\0');
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  last_errno_ = fd_ < 0 ? errno : 0;
  return last_errno_;
}

std::string_view ProcFile::Read() {
  truncated_ = false;
  if (fd_ < 0 || buffer_.empty()) return {};
  // pread from 0 regenerates a seq_file's text; a long file comes in several reads.
  std::size_t have = 0;
  while (have < buffer_.size()) {
    const ssize_t n =
        ::pread(fd_, buffer_.data() + have, buffer_.size() - have, static_cast<off_t>(have));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      last_errno_ = errno;
      return {};
    }
    if (n == 0) break;
    have += static_cast<std::size_t>(n);
  }
  last_errno_ = 0;
  std::string_view text(buffer_.data(), have);
  if (have == buffer_.size()) {
    char probe = 0;
    ssize_t n = 0;
    do {
      n = ::pread(fd_, &probe, 1, static_cast<off_t>(have));
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
      truncated_ = true;
      const std::size_t last_nl = text.rfind('\n');
      text = last_nl == std::string_view::npos ? std::string_view() : text.substr(0, last_nl + 1);
    }
  }
  return text;
}

std::string_view FirstLine(std::string_view text) noexcept {
  return text.substr(0, text.find('\n'));
}

std::string_view AfterFirstLine(std::string_view text) noexcept {
  const std::size_t nl = text.find('\n');
  return nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
}

int CpuColumn(std::string_view header, int cpu) noexcept {
  int column = 0;
  for (std::string_view word = NextWord(&header); !word.empty(); word = NextWord(&header)) {
    if (CpuWordNumber(word) == cpu) return column;
    ++column;
  }
  return -1;
}

int CpuColumns(std::string_view header) noexcept {
  int columns = 0;
  for (std::string_view word = NextWord(&header); !word.empty(); word = NextWord(&header)) {
    if (CpuWordNumber(word) >= 0) ++columns;
  }
  return columns;
}

bool ParseCounterLine(std::string_view line, int total_columns, std::span<const int> columns,
                      std::span<std::uint64_t> counts, std::string_view* label,
                      std::string_view* description) noexcept {
  const std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) return false;
  *label = Trim(line.substr(0, colon));
  if (label->empty()) return false;
  for (std::uint64_t& c : counts) c = kNoCount;
  std::string_view rest = line.substr(colon + 1);
  int numbers = 0;
  for (int column = 0; column < total_columns; ++column) {
    std::string_view probe = rest;
    std::uint64_t value = 0;
    if (!ParseU64(NextWord(&probe), &value)) break;
    rest = probe;
    ++numbers;
    for (std::size_t i = 0; i < columns.size() && i < counts.size(); ++i) {
      if (columns[i] == column) counts[i] = value;
    }
  }
  if (numbers < total_columns) {
    // Fewer numbers than CPUs: a count for the whole machine ("ERR:  0"), not the CPU's.
    for (std::uint64_t& c : counts) c = kNoCount;
  }
  *description = Trim(rest);
  return true;
}

std::string_view IrqDeviceName(std::string_view description) noexcept {
  std::string_view rest = Trim(description);
  std::string_view after_trigger;
  std::string_view last_word;
  bool trigger_seen = false;
  for (std::string_view word = NextWord(&rest); !word.empty(); word = NextWord(&rest)) {
    if (IsTriggerType(word)) {
      trigger_seen = true;
      after_trigger = Trim(rest);
    }
    last_word = word;
  }
  if (trigger_seen && !after_trigger.empty()) return after_trigger;
  return last_word;
}

bool IsIrqNumber(std::string_view label) noexcept {
  std::uint64_t v = 0;
  return ParseU64(label, &v);
}

std::uint64_t StatSteal(std::string_view proc_stat, int cpu) noexcept {
  std::uint64_t steal = kNoCount;
  ForEachLine(proc_stat, [&](std::string_view line) {
    std::string_view rest = line;
    const std::string_view name = NextWord(&rest);
    int n = -1;
    if (name.size() < 4 || name.substr(0, 3) != "cpu" || !ParseInt(name.substr(3), &n) ||
        n != cpu) {
      return;
    }
    // user nice system idle iowait irq softirq steal ...
    for (int field = 1; field <= 8; ++field) {
      std::uint64_t value = 0;
      if (!ParseU64(NextWord(&rest), &value)) return;
      if (field == 8) steal = value;
    }
  });
  return steal;
}

bool ParseTaskStat(std::string_view text, TaskStat* out) noexcept {
  const std::size_t open = text.find('(');
  const std::size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return false;
  }
  TaskStat s;
  s.comm = text.substr(open + 1, close - open - 1);
  std::string_view rest = text.substr(close + 1);
  const std::string_view state = NextWord(&rest);  // field 3
  if (state.size() != 1) return false;
  s.state = state.front();
  for (int field = 4; field <= 41; ++field) {
    const std::string_view word = NextWord(&rest);
    if (word.empty()) {
      if (field <= 12) return false;  // not even the fault counts
      break;                          // an old kernel without the last fields
    }
    std::uint64_t value = 0;
    int signed_value = 0;
    switch (field) {
      case 10:
        if (!ParseU64(word, &s.minflt)) return false;
        break;
      case 12:
        if (!ParseU64(word, &s.majflt)) return false;
        break;
      case 39:
        if (ParseInt(word, &signed_value)) s.processor = signed_value;
        break;
      case 40:
        if (ParseU64(word, &value)) s.rt_priority = static_cast<int>(value);
        break;
      case 41:
        if (ParseU64(word, &value)) s.policy = static_cast<int>(value);
        break;
      default:
        break;
    }
  }
  *out = s;
  return true;
}

TaskStatus ParseTaskStatus(std::string_view text) noexcept {
  TaskStatus s;
  std::uint64_t value = 0;
  if (ParseU64(StatusValue(text, "voluntary_ctxt_switches"), &value)) s.voluntary = value;
  if (ParseU64(StatusValue(text, "nonvoluntary_ctxt_switches"), &value)) s.nonvoluntary = value;
  s.cpus_allowed_list = StatusValue(text, "Cpus_allowed_list");
  return s;
}

bool CpuListContains(std::string_view list, int cpu) noexcept {
  list = Trim(list);
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view part = list.substr(0, comma);
    const std::size_t dash = part.find('-');
    int lo = 0;
    int hi = 0;
    if (dash == std::string_view::npos) {
      if (ParseInt(part, &lo) && lo == cpu) return true;
    } else if (ParseInt(part.substr(0, dash), &lo) && ParseInt(part.substr(dash + 1), &hi) &&
               lo <= cpu && cpu <= hi) {
      return true;
    }
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

std::string PolicyName(int policy) {
  switch (policy) {
    case 0:
      return "OTHER";
    case 1:
      return "FIFO";
    case 2:
      return "RR";
    case 3:
      return "BATCH";
    case 5:
      return "IDLE";
    case 6:
      return "DEADLINE";
    default:
      return "policy " + std::to_string(policy);
  }
}

}  // namespace rtloop::explain::internal
