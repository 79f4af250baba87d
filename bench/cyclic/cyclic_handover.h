// The lean rtloop-cyclic's hand-over (README.md, "Two binaries"): a run that serves (--telemetry,
// --metrics) or records (--record) needs the servers' libraries, which the lean binary does not
// link, so it replaces itself (execv, same PID, same arguments) with rtloop-cyclic-full, the same
// tool with them linked in, found next to it or where the package installs it.
//
//   RunCyclic(argc, argv, {.hand_over = &HandOverToFull});  // main.cc of the lean binary
//
// Built into the lean executable only, never into a library: no library that serves requests
// links a call that starts a program (SecurityLimits.NoLibraryThatServesRequestsCanStartAProcess).
//
// Threading: main thread, before any other thread exists (execv replaces the process).
#pragma once

#include <string>
#include <vector>

namespace rtloop::cyclic {

// Where rtloop-cyclic-full is looked for, in order, given the directory of the running binary:
// that directory (the build tree, the static tools' tarball) and its ../libexec/rtloop (an
// installed tree).
std::vector<std::string> FullBinaryCandidates(const std::string& own_dir);

// execv()s the first candidate that exists, with `argv` unchanged; returns only when none could
// be run, after printing which paths were tried and the fix (kExitFatal).
int HandOverToFull(const char* const* argv);

}  // namespace rtloop::cyclic
