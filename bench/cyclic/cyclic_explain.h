// CyclicExplain: rtloop-cyclic's --explain=FILE: why the late cycles were late
// (telemetry/explain/README.md). An ExplainSession over the measurement threads, with
// --explain-above / --explain-execution-above as every thread's thresholds, and the output: the
// records as JSON in FILE, a summary after the run (stdout, or stderr when FILE is stdout).
//
//   Result<std::unique_ptr<CyclicExplain>> e = CyclicExplain::Open(options, std::move(file),
//                                                                 runtime->executor(), ids);
//   runtime->Start();
//   (*e)->Begin(*runtime);          // the threads' tids are known now
//   ... the run ... runtime->Stop();
//   (*e)->End();                    // the last samples explained
//   Status s = (*e)->Write(stdout); // FILE completed (FILE.partial renamed), the summary printed
//
// An extension (bench/cyclic/README.md, "Why was that cycle late"); cyclictest's -b and
// --tracemark keep their 2.4 meaning and are independent of it.
//
// Threading: every method on rtloop-cyclic's main thread.
#pragma once

#include <cstdio>
#include <memory>
#include <vector>

#include "cyclic_options.h"
#include "rtloop/explain/report.h"
#include "rtloop/explain/session.h"
#include "rtloop/framework/status.h"
#include "rtloop/runtime.h"
#include "rtloop/telemetry/output_file.h"

namespace rtloop::cyclic {

class CyclicExplain {
 public:
  // Before the threads start: the trace is opened on their CPUs (or the note says why not).
  static std::unique_ptr<CyclicExplain> Open(const CyclicOptions& options,
                                             telemetry::OutputFile file, const Executor& executor,
                                             const std::vector<TaskId>& ids);
  // After runtime.Start(): the explaining starts, off the measured CPUs, and the runtime's
  // servers show its records (Runtime::outlier_feed()).
  Status Begin(Runtime& runtime);
  // After the runtime stopped: the last samples are read and every pending window recorded.
  void End();
  // Writes FILE and prints the summary to `summary` (stderr instead when FILE is stdout).
  Status Write(std::FILE* summary);
  // A set-up error: FILE is not left behind.
  void Abandon();

 private:
  CyclicExplain(const CyclicOptions& options, telemetry::OutputFile file)
      : o_(options), file_(std::move(file)) {}
  explain::Thresholds thresholds() const;

  const CyclicOptions& o_;
  telemetry::OutputFile file_;
  std::shared_ptr<explain::ExplainSession> session_;
  bool begun_ = false;
};

}  // namespace rtloop::cyclic
