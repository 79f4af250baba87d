// Fuzzes the parsers of the outlier explanation (telemetry/explain): what the kernel hands rtloop
// (trace pages, tracefs format files, trace text, /proc files) is trusted for its shape only. The
// first byte picks the reader; the rest is its input:
//   0: binary ring-buffer pages (trace_pipe_raw) walked and decoded with this repository's
//      captured formats (tests/explain/testdata/trace_raw), then attributed;
//   1: header_page, header_event and one event format, '\x1e'-separated, then a page in that
//      layout;
//   2: a trace file's text (ParseTrace), then attributed;
//   3: /proc/interrupts or /proc/softirqs; 4: /proc/stat; 5: a task's stat; 6: its status and a
//      CPU list.
// Promises: no read outside the input (ASan), records inside their page, a decoded event's
// strings inside its record or the decoder's names, an attribution never sums past its window,
// a task's comm inside its stat text.
//
// Thread contract: single-threaded, as libFuzzer calls LLVMFuzzerTestOneInput. Not RT-safe.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "counter_proc.h"
#include "fuzz_util.h"
#include "test_paths.h"
#include "trace_internal.h"

using rtloop::testing::SourcePath;

namespace {

using namespace rtloop::explain;         // NOLINT
using namespace rtloop::explain::trace;  // NOLINT

std::string Testdata(const std::string& name) {
  std::ifstream in(SourcePath("tests/explain/testdata") + "/trace_raw/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Captured {
  RingLayout layout;
  EventDecoder decoder;
  Captured() {
    std::string why;
    RTLOOP_FUZZ_CHECK(ParseHeaderPage(Testdata("header_page.txt"), &layout, &why));
    RTLOOP_FUZZ_CHECK(ParseHeaderEvent(Testdata("header_event.txt"), &layout, &why));
    for (const char* f : {"sched_switch", "sched_waking", "irq_handler_entry", "irq_handler_exit",
                          "softirq_entry", "softirq_exit", "hrtimer_expire_entry"}) {
      EventFormat format;
      RTLOOP_FUZZ_CHECK(ParseEventFormat(Testdata(std::string(f) + ".format"), &format, &why));
      decoder.Add(format);
    }
  }
};

bool Inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

// Attribution over the events, for a window from the middle of their time span: the causes
// never sum past the window.
void CheckAttribution(const std::vector<TraceEvent>& events) {
  if (events.empty()) return;
  const std::int64_t a = events.front().ts_ns;
  const std::int64_t b = events.back().ts_ns;
  if (a < 0 || b < 0 || a > (INT64_MAX >> 2) || b > (INT64_MAX >> 2)) return;
  Target t;
  t.tid = events[events.size() / 2].pid;
  t.begin_ns = std::min(a, b) + (std::max(a, b) - std::min(a, b)) / 4;
  t.end_ns = std::max(a, b) - (std::max(a, b) - std::min(a, b)) / 4;
  const Attribution at = Attribute(events, t);
  std::int64_t sum = at.timer_delay_ns;
  for (const ThreadRun& r : at.threads) sum += r.ns;
  for (const Cause& c : at.interrupts) sum += c.ns;
  RTLOOP_FUZZ_CHECK(sum >= 0 && sum <= t.end_ns - t.begin_ns);
  RTLOOP_FUZZ_CHECK(at.raw.size() <= kMaxRawLines);
  for (std::size_t i : at.raw) RTLOOP_FUZZ_CHECK(i < events.size());
}

// The events' views point into `pages`, each page its own allocation (ASan sees its end).
void WalkAndDecode(const RingLayout& layout, const EventDecoder& decoder, std::string_view bytes,
                   std::vector<std::string>* pages, std::vector<TraceEvent>* events) {
  const auto size = static_cast<std::size_t>(layout.page_size);
  pages->reserve(bytes.size() / size + 1);  // no reallocation: the views stay valid
  for (std::size_t at = 0; at < bytes.size(); at += size) {
    const std::string& page = pages->emplace_back(bytes.substr(at, size));
    PageInfo info;
    std::string why;
    std::size_t n = 0;
    const bool ok = WalkPage(
        layout, page, &info,
        [&](const RawRecord& r) {
          RTLOOP_FUZZ_CHECK(Inside(r.data, page));
          TraceEvent e;
          decoder.Decode(r, 1, &e);
          const bool softirq =
              e.type == EventType::kSoftirqEntry || e.type == EventType::kSoftirqExit;
          RTLOOP_FUZZ_CHECK(Inside(e.prev_comm, r.data) && Inside(e.next_comm, r.data));
          RTLOOP_FUZZ_CHECK(softirq || Inside(e.irq_name, r.data));
          (void)FormatEvent(e);
          if (events->size() < 4096) events->push_back(e);
          ++n;
        },
        &why);
    RTLOOP_FUZZ_CHECK(ok || !why.empty());
    RTLOOP_FUZZ_CHECK(n == info.records && info.used <= page.size());
  }
}

void FuzzPages(std::string_view bytes) {
  static const Captured kCaptured;
  std::vector<std::string> pages;
  std::vector<TraceEvent> events;
  WalkAndDecode(kCaptured.layout, kCaptured.decoder, bytes, &pages, &events);
  CheckAttribution(events);
}

void FuzzLayout(std::string_view bytes) {
  std::vector<std::string_view> parts;
  for (int i = 0; i < 3; ++i) {
    const std::size_t sep = bytes.find('\x1e');
    if (sep == std::string_view::npos) return;
    parts.push_back(bytes.substr(0, sep));
    bytes.remove_prefix(sep + 1);
  }
  RingLayout layout;
  EventFormat format;
  std::string why;
  if (!ParseHeaderPage(parts[0], &layout, &why) || !ParseHeaderEvent(parts[1], &layout, &why) ||
      !ParseEventFormat(parts[2], &format, &why)) {
    RTLOOP_FUZZ_CHECK(!why.empty());
    return;
  }
  RTLOOP_FUZZ_CHECK(layout.page_size > layout.data_offset);
  EventDecoder decoder;
  decoder.Add(format);
  std::vector<std::string> pages;
  std::vector<TraceEvent> events;
  WalkAndDecode(layout, decoder, bytes.substr(0, std::size_t{4} * 65536), &pages, &events);
}

void FuzzText(std::string_view text) {
  const std::vector<TraceEvent> events = ParseTrace(text);
  for (const TraceEvent& e : events) {
    RTLOOP_FUZZ_CHECK(Inside(e.line, text) && e.ts_ns >= 0);
    (void)FormatEvent(e);
  }
  CheckAttribution(events);
}

void FuzzCounters(std::string_view text) {
  using namespace rtloop::explain::internal;  // NOLINT
  const std::string_view header = FirstLine(text);
  const int total = CpuColumns(header);
  std::vector<int> columns;
  columns.reserve(8);
  for (int cpu = 0; cpu < 8; ++cpu) columns.push_back(CpuColumn(header, cpu));
  std::vector<std::uint64_t> counts(columns.size());
  ForEachLine(AfterFirstLine(text), [&](std::string_view line) {
    std::string_view label;
    std::string_view description;
    if (!ParseCounterLine(line, total, columns, counts, &label, &description)) return;
    RTLOOP_FUZZ_CHECK(Inside(label, line) && Inside(description, line));
    const std::string_view device = IrqDeviceName(description);
    RTLOOP_FUZZ_CHECK(Inside(device, description));
    (void)IsIrqNumber(label);
  });
}

void FuzzTask(std::string_view text, bool stat) {
  using namespace rtloop::explain::internal;  // NOLINT
  if (stat) {
    TaskStat s;
    if (ParseTaskStat(text, &s)) RTLOOP_FUZZ_CHECK(Inside(s.comm, text));
    return;
  }
  const TaskStatus status = ParseTaskStatus(text);
  RTLOOP_FUZZ_CHECK(Inside(status.cpus_allowed_list, text));
  for (int cpu = -1; cpu < 70; ++cpu) (void)CpuListContains(status.cpus_allowed_list, cpu);
  for (int cpu = -1; cpu < 70; ++cpu) (void)CpuListContains(text.substr(0, 64), cpu);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 7) {
    case 0:
      FuzzPages(rest);
      break;
    case 1:
      FuzzLayout(rest);
      break;
    case 2:
      FuzzText(rest);
      break;
    case 3:
      FuzzCounters(rest);
      break;
    case 4:
      for (int cpu = -1; cpu < 8; ++cpu) (void)rtloop::explain::internal::StatSteal(rest, cpu);
      break;
    case 5:
      FuzzTask(rest, true);
      break;
    default:
      FuzzTask(rest, false);
      break;
  }
  return 0;
}
