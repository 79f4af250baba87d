// Fuzzes rtloop-cyclic's command line (bench/cyclic/cyclic_options.h): one argument per line of
// the input, parsed as argv for a fixed 4-CPU machine. Every input must give either options that
// keep the parser's promises (a plan per thread, values in range) or one InvalidArgument line —
// never a crash, undefined behaviour, an exception or a hang. The parser only inspects the paths
// an input names (output files are checked, not created; token and TLS files are read bounded,
// input_file.h): relative ones resolve in the working directory.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cyclic_options.h"
#include "fuzz_util.h"
#include "rtloop/telemetry/output_file.h"

namespace {

const rtloop::cyclic::MachineCpus& FourCpus() {
  static const rtloop::cyclic::MachineCpus kFour{
      .configured = 4, .online = {0, 1, 2, 3}, .allowed = {0, 1, 2, 3}, .isolated = {}};
  return kFour;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> words =
      rtloop::fuzz::Lines(std::string_view(reinterpret_cast<const char*>(data), size));
  if (words.size() > 64) return -1;  // a command line, not a file of them
  std::vector<const char*> argv = {"rtloop-cyclic"};
  for (const std::string& w : words) argv.push_back(w.c_str());
  argv.push_back(nullptr);
  const rtloop::Result<rtloop::cyclic::CyclicOptions> o = rtloop::cyclic::ParseCyclicOptions(
      static_cast<int>(argv.size() - 1), argv.data(), FourCpus());
  if (!o.ok()) {
    RTLOOP_FUZZ_CHECK(o.status().code() == rtloop::StatusCode::kInvalidArgument);
    RTLOOP_FUZZ_CHECK(!o.status().message().empty());
    // What PrintUsageError prints is one line whatever the values held.
    const std::string line = rtloop::telemetry::EscapeControlCharacters(o.status().message());
    RTLOOP_FUZZ_CHECK(line.find('\n') == std::string::npos);
    return 0;
  }
  if (o->help) return 0;
  RTLOOP_FUZZ_CHECK(o->num_threads >= 1 && o->num_threads <= 256);
  RTLOOP_FUZZ_CHECK(o->threads.size() == static_cast<std::size_t>(o->num_threads));
  RTLOOP_FUZZ_CHECK(o->histogram <= 1000000);
  for (const rtloop::cyclic::ThreadPlan& t : o->threads) {
    RTLOOP_FUZZ_CHECK(t.interval_us >= 1);
    RTLOOP_FUZZ_CHECK(t.priority >= 0 && t.priority <= 99);
    RTLOOP_FUZZ_CHECK(t.cpu >= -1 && t.cpu < 4);
    RTLOOP_FUZZ_CHECK(t.phase_ns >= 0);
  }
  return 0;
}
