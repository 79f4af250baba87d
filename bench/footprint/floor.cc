// rtloop-footprint-floor: the smallest process rtloop's executor and telemetry make, for the
// footprint benchmark (footprint.py, README.md "The floor"): an Executor with one 1 kHz task,
// memory locked, and the telemetry hub and collector that record every cycle, but no server and
// no command line. It says how much of rtloop-cyclic's footprint is the executor's and the
// telemetry's own, and how much is the rest (servers' libraries, the tool's code). Built twice:
// rtloop-footprint-floor (libstdc++ shared, as every rtloop program) and
// rtloop-footprint-floor-static-libstdc++ (libstdc++ linked in: only the parts it uses are mapped).
//
//   rtloop-footprint-floor [SECONDS]     # runs SECONDS (default 60) or until SIGINT/SIGTERM
//   rtloop-footprint-floor -u [SECONDS]  # memory not locked (footprint.py --unlocked)
//
// The task is SCHED_FIFO 80 on the last CPU when the process may (root, CAP_SYS_NICE), else
// SCHED_OTHER; memory is locked as rtloop-cyclic -m locks it (ExecutorConfig::lock_memory).
// Threading: main() controls; one RT task thread; the collector's thread.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "rtloop/framework/executor.h"
#include "rtloop/framework/stop_signals.h"
#include "rtloop/telemetry/collector.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace {

class Idle final : public rtloop::PeriodicTask {
 public:
  rtloop::StepResult Step(const rtloop::CycleContext& /*ctx*/) noexcept override {
    return rtloop::StepResult::kContinue;
  }
};

int Fail(const char* what, const rtloop::Status& s) {
  std::fprintf(stderr, "rtloop-footprint-floor: %s: %s\n", what, s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const bool unlocked = argc > 1 && std::string_view(argv[1]) == "-u";
  const int at = unlocked ? 2 : 1;
  char* end = nullptr;
  const long seconds = argc > at ? std::strtol(argv[at], &end, 10) : 60;
  if (argc > at + 1 || (argc > at && (*end != '\0' || seconds <= 0))) {
    std::fprintf(stderr, "usage: rtloop-footprint-floor [-u] [SECONDS > 0]\n");
    return 2;
  }
  rtloop::Result<std::unique_ptr<rtloop::StopSignals>> signals = rtloop::StopSignals::Install();
  if (!signals.ok()) return Fail("signals", signals.status());
  rtloop::ExecutorConfig ec;
  ec.lock_memory = !unlocked;
  rtloop::Result<std::unique_ptr<rtloop::Executor>> ex = rtloop::Executor::Create(ec);
  if (!ex.ok()) return Fail("executor", ex.status());
  rtloop::telemetry::TelemetryHub hub;
  hub.AttachStats(**ex);
  Idle idle;
  rtloop::TaskConfig tc;
  tc.name = "floor";
  tc.period = std::chrono::milliseconds(1);
  if (geteuid() == 0) {
    tc.policy = rtloop::SchedPolicy::kFifo;
    tc.priority = 80;
    tc.cpus = {static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)) - 1};
  }
  tc.observers.push_back(&hub);
  if (rtloop::Result<rtloop::TaskId> id = (*ex)->AddTask(idle, tc); !id.ok()) {
    return Fail("task", id.status());
  }
  rtloop::telemetry::Collector collector(hub);
  if (rtloop::Status s = collector.Start(); !s.ok()) return Fail("collector", s);
  if (rtloop::Status s = (*ex)->Start(); !s.ok()) return Fail("start", s);
  (void)(*signals)->WaitForStop(std::chrono::seconds(seconds), [] { return false; });
  (void)(*ex)->Stop();
  collector.Stop();
  return 0;
}
