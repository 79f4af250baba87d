// The checks of rtloop-cyclic's command line that look at several options together or at the
// system: a --warmup that leaves a -D thread without cycles, the telemetry address and the token
// and TLS files (read with input_file.h's bounded reader), and no output on an input or on
// another output's file (output_file.h's CheckOutputsApart). ParseCyclicOptions() runs them
// last; each failure is InvalidArgument with one line (exit 2: nothing measured).
//
// Threading: a plain function. Not RT-safe (reads files).
#pragma once

#include "cyclic_options.h"
#include "rtloop/framework/status.h"

namespace rtloop::cyclic {

// `o` after parsing, with `threads` resolved.
Status CheckOptionsTogether(const CyclicOptions& o);

}  // namespace rtloop::cyclic
