// rtloop.h: the one header an application includes. rtloop::Runtime (runtime.h) and what its
// tasks are written with: PeriodicTask and CycleContext, TaskConfig, Status and Result,
// ExitCode, clocks and SpinFor, and the data shared between tasks and other threads
// (SeqLockValue, TripleBuffer). Link rtloop::runtime (telemetry/runtime/README.md).
//
//   #include "rtloop/rtloop.h"
//
//   class Blink final : public rtloop::PeriodicTask {
//     rtloop::StepResult Step(const rtloop::CycleContext&) noexcept override { ... }
//   };
//   int main() {
//     auto rt = rtloop::Runtime::Create(rtloop::RuntimeConfig{});
//     ...
//   }
//
// Threading: declarations only; each header states its own contract (a task's Step() runs on its
// RT thread, the Runtime is driven from one controlling thread).
#pragma once

#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/housekeeping_thread.h"
#include "rtloop/framework/periodic_task.h"
#include "rtloop/framework/seqlock_value.h"
#include "rtloop/framework/status.h"
#include "rtloop/framework/task_config.h"
#include "rtloop/framework/time.h"
#include "rtloop/framework/triple_buffer.h"
#include "rtloop/runtime.h"
