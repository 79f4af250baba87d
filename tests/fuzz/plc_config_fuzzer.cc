// Fuzzes the PLC example's TOML configuration (examples/plc/plc_config.h) with file contents, on a
// machine whose online CPUs are 0 and 1. Any text must give a configuration that keeps the
// promises the PLC relies on (every program in exactly one task, unique names, periods > 0, an
// online CPU, priorities 1..99, sensitivity 1..1000, a belt that holds two items) or one
// InvalidArgument line "FILE:LINE: ..." — never a crash, undefined behaviour, an exception that
// escapes or a hang. Each duration that parses must read back from FormatDuration's form.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "plc_config.h"

namespace {

constexpr std::string_view kSource = "fuzz.toml";

void CheckDuration(std::chrono::nanoseconds d) {
  RTLOOP_FUZZ_CHECK(d.count() >= 0);
  const rtloop::Result<std::chrono::nanoseconds> back = plc::ParseDuration(plc::FormatDuration(d));
  RTLOOP_FUZZ_CHECK(back.ok() && *back == d);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  static const std::vector<int> kOnline = {0, 1};

  // The whole input as one duration value, as a period = "..." would hold it.
  if (size <= 64) {
    const rtloop::Result<std::chrono::nanoseconds> d = plc::ParseDuration(text);
    if (d.ok()) {
      CheckDuration(*d);
    } else {
      RTLOOP_FUZZ_CHECK(d.status().code() == rtloop::StatusCode::kInvalidArgument);
    }
  }

  const rtloop::Result<plc::PlcConfig> c = plc::ParsePlcConfig(text, kSource, kOnline);
  if (!c.ok()) {
    const rtloop::Status status = c.status();  // by value: message() refers into it
    const std::string& m = status.message();
    RTLOOP_FUZZ_CHECK(status.code() == rtloop::StatusCode::kInvalidArgument);
    RTLOOP_FUZZ_CHECK(m.rfind(std::string(kSource) + ":", 0) == 0);
    RTLOOP_FUZZ_CHECK(m.find('\n') == std::string::npos);  // one line, whatever the file held
    return 0;
  }
  RTLOOP_FUZZ_CHECK(c->tasks.size() == plc::kProgramCount);
  std::set<std::string> names;
  std::set<plc::Program> programs;
  for (const plc::TaskSpec& t : c->tasks) {
    RTLOOP_FUZZ_CHECK(!t.name.empty() && names.insert(t.name).second);
    RTLOOP_FUZZ_CHECK(programs.insert(t.program).second);
    RTLOOP_FUZZ_CHECK(t.period.count() > 0);
    CheckDuration(t.period);
    CheckDuration(t.watchdog);
    RTLOOP_FUZZ_CHECK(t.cpu == 0 || t.cpu == 1);
    RTLOOP_FUZZ_CHECK(t.priority >= 1 && t.priority <= 99);
    RTLOOP_FUZZ_CHECK(t.sensitivity >= 1 && t.sensitivity <= 1000);
  }
  for (int i = 0; i < plc::kProgramCount; ++i) {
    RTLOOP_FUZZ_CHECK(c->task(static_cast<plc::Program>(i)).program ==
                      static_cast<plc::Program>(i));
  }
  const plc::ConveyorConfig& v = c->conveyor;
  RTLOOP_FUZZ_CHECK(v.belt_length_mm > 0 && v.speed_mm_per_s > 0 && v.item_length_mm > 0);
  RTLOOP_FUZZ_CHECK(v.item_length_mm * 2.0 <= v.belt_length_mm);
  RTLOOP_FUZZ_CHECK(v.item_interval.count() > 0);
  RTLOOP_FUZZ_CHECK(v.removal_delay.count() >= 0 && v.start_press_at.count() >= 0);
  return 0;
}
