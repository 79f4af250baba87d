// The process' standard streams and stop signals as rtloop-cyclic uses them: standard output and
// standard error are outputs like --json (a closed pipe or a full disk behind them is an output
// failure, exit 4, never a silent loss or a death by SIGPIPE), and messages go to stderr on one
// line with control characters escaped.
//
//   IgnoreSigpipe();                                   // before anything is written
//   if (const char* closed = ClosedStandardStream()) Complain(std::string(closed) + " is closed");
//   WriteAll(stdout, text);                            // checked later with ferror()/fflush()
//
// Threading: the main thread of rtloop-cyclic only (signal dispositions are process-wide). Not
// RT-safe: stdio.
#pragma once

#include <cstdio>
#include <string>

namespace rtloop::cyclic {

// Writes `s` to `f` (stdio's error flag keeps a failure for the caller's check).
void WriteAll(std::FILE* f, const std::string& s);

// One line "rtloop-cyclic: MESSAGE" on stderr, after flushing stdout, control characters escaped.
void Complain(const std::string& message);

// SIGPIPE ignored: a write to a closed pipe fails with EPIPE instead of killing the process
// without a word or a clean-up.
void IgnoreSigpipe();

// Which of standard output and standard error is not open ("standard output"...), or nullptr. A
// closed descriptor is given /dev/null, so that no file the run opens takes its number and
// receives the results.
const char* ClosedStandardStream();

// SIGINT/SIGTERM taken by default again and unblocked: after the main loop a second one ends the
// process even if writing the final output were to hang (a stdout pipe nobody reads).
void RestoreStopSignals();

}  // namespace rtloop::cyclic
