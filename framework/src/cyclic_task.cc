#include "rtloop/framework/cyclic_task.h"

namespace rtloop {

StepResult CyclicTask::Step(const CycleContext& /*ctx*/) noexcept { return StepResult::kContinue; }

}  // namespace rtloop
