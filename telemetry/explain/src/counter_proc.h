// The /proc readers of the counter evidence (counter_evidence.h): parsers of /proc/interrupts,
// /proc/softirqs, /proc/stat and a task's stat and status text, and a file reader that reads into
// a buffer sized once. Internal to rtloop_explain.
//
//   ProcFile interrupts;
//   interrupts.Open("/proc/interrupts", 256 * 1024);
//   std::string_view text = interrupts.Read();   // whole, or cut at the buffer (truncated())
//   const int column = CpuColumn(FirstLine(text), 1);
//   ForEachLine(Rest(text), [&](std::string_view line) { ParseCounterLine(line, ...); });
//
// Threading: the parsers are pure functions (any thread); a ProcFile belongs to one thread.
// Not RT-safe: they read files. The parsers do not allocate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rtloop::explain::internal {

// A count a snapshot could not read (the file, the line or the CPU's column was missing).
inline constexpr std::uint64_t kNoCount = ~std::uint64_t{0};

// A /proc file kept open and read from its start into a buffer allocated once.
class ProcFile {
 public:
  ProcFile() = default;
  ~ProcFile();
  ProcFile(const ProcFile&) = delete;
  ProcFile& operator=(const ProcFile&) = delete;
  ProcFile(ProcFile&& other) noexcept;
  ProcFile& operator=(ProcFile&& other) noexcept;

  // Opens `path` read-only; the buffer holds at most `capacity` bytes. errno on failure, else 0.
  int Open(const std::string& path, std::size_t capacity);
  bool is_open() const noexcept { return fd_ >= 0; }
  // The file's text from its start: at most `capacity` bytes, cut at the last whole line when the
  // file is longer (truncated() is then true). Empty on a read error (last_errno()).
  std::string_view Read();
  bool truncated() const noexcept { return truncated_; }
  int last_errno() const noexcept { return last_errno_; }
  const std::string& path() const noexcept { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
  std::vector<char> buffer_;
  bool truncated_ = false;
  int last_errno_ = 0;
};

// The first line of `text` (without '\n') and the text after it.
std::string_view FirstLine(std::string_view text) noexcept;
std::string_view AfterFirstLine(std::string_view text) noexcept;

// Calls fn(line) for each line of `text`, without the '\n'.
template <typename Fn>
void ForEachLine(std::string_view text, Fn&& fn) {
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    fn(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

// The column of "CPU<cpu>" in the header line of /proc/interrupts or /proc/softirqs ("  CPU0
// CPU1 ..."; offline CPUs have no column), -1 when it is absent.
int CpuColumn(std::string_view header, int cpu) noexcept;
// The number of CPU columns in that header line.
int CpuColumns(std::string_view header) noexcept;

// One body line of /proc/interrupts or /proc/softirqs: " 11:  12345  0  GICv3  27 Level
// arch_timer", "LOC:  2585  2601  Local timer interrupts", "  NET_RX:  553  544". `label` is the
// text before ':' ("11", "LOC", "NET_RX"); counts[i] is the number in column columns[i]
// (kNoCount when there is no such column, and for a line with fewer numbers than CPUs: "ERR:  0"
// counts for the whole machine);
// `description` is the text after the numbers, trimmed. False when the line has no ':'.
bool ParseCounterLine(std::string_view line, int total_columns, std::span<const int> columns,
                      std::span<std::uint64_t> counts, std::string_view* label,
                      std::string_view* description) noexcept;

// The device name of a numbered IRQ line's description: the text after its trigger type
// ("IO-APIC  5-edge  ACPI:Ged" -> "ACPI:Ged", "GICv3  27 Level  arch_timer" -> "arch_timer",
// "PCI-MSIX-0000:00:01.0  3-edge  virtio0-stats" -> "virtio0-stats"); the last word when there is
// no trigger type; empty for an empty description.
std::string_view IrqDeviceName(std::string_view description) noexcept;

// True when `label` is an IRQ number ("11"), false for "LOC", "RES", "IPI0"...
bool IsIrqNumber(std::string_view label) noexcept;

// The steal field (the 8th number) of the "cpu<cpu>" line of /proc/stat, in clock ticks
// (USER_HZ); kNoCount when there is no such line or field.
std::uint64_t StatSteal(std::string_view proc_stat, int cpu) noexcept;

// The fields of /proc/.../task/TID/stat the evidence uses. The comm is between the first '(' and
// the LAST ')' (a comm may hold spaces and parentheses).
struct TaskStat {
  std::string_view comm;
  char state = '?';
  std::uint64_t minflt = 0;  // field 10
  std::uint64_t majflt = 0;  // field 12
  int processor = -1;        // field 39: the CPU it last ran on
  int rt_priority = 0;       // field 40
  int policy = -1;           // field 41: SCHED_OTHER 0, FIFO 1, RR 2, BATCH 3, IDLE 5, DEADLINE 6
};
// False when the text is not a task's stat line (no "(...)", too few fields).
bool ParseTaskStat(std::string_view text, TaskStat* out) noexcept;

// The fields of /proc/.../task/TID/status the evidence uses.
struct TaskStatus {
  std::uint64_t voluntary = kNoCount;     // voluntary_ctxt_switches
  std::uint64_t nonvoluntary = kNoCount;  // nonvoluntary_ctxt_switches
  std::string_view cpus_allowed_list;     // "0-3,6"; empty when absent
};
TaskStatus ParseTaskStatus(std::string_view text) noexcept;

// True when CPU `cpu` is in a list such as "0-3,6" (without allocating).
bool CpuListContains(std::string_view list, int cpu) noexcept;

// "FIFO", "RR", "DEADLINE", "OTHER", "BATCH", "IDLE", or "policy N".
std::string PolicyName(int policy);

}  // namespace rtloop::explain::internal
