// Internal: what ExecutorConfig::lock_scope = MemoryLockScope::kRealtime locks, and the figures
// the doctor and the footprint benchmark report. Not installed.
//
//   mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT);       // ProcessSetup::LockMemory
//   Result<std::uint64_t> bytes = LockRealtimeSet();        // Executor::Start, before threads
//   LockThreadStack();                                      // on each RT thread, at set-up
//
// Under MCL_ONFAULT a page is locked once touched, so the 8 MiB stacks of gRPC's and civetweb's
// threads and the code of the server libraries cost only what they use. LockRealtimeSet() then
// makes resident (mlock() populates) every page an RT thread can touch without having touched it
// first: the main heap (rings, histograms, statistics, the application's buffers) and the code
// and data of the executable and of every library except the ones only the telemetry servers
// run (IsServerOnlyLibrary). LockThreadStack() does the same for the calling thread's whole
// stack (its TLS included).
//
// Threading: LockRealtimeSet() on the controlling thread; LockThreadStack() on the thread whose
// stack it locks. Not RT-safe: system calls, /proc reads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "rtloop/framework/status.h"

namespace rtloop::internal {

// True for a library only the telemetry servers' threads run (gRPC, protobuf, abseil, OpenSSL,
// c-ares, re2, zlib, civetweb, prometheus-cpp): `path` as /proc/self/maps gives it.
bool IsServerOnlyLibrary(std::string_view path);

// mlock()s the heap and every file mapping but the server-only libraries' (see above). Returns
// the bytes it locked; an error names the memlock limit and the fix.
Result<std::uint64_t> LockRealtimeSet();

// mlock()s the calling thread's whole stack. Errors name the limit and the fix.
Status LockThreadStack();

// RLIMIT_MEMLOCK as the messages give it: "unlimited" or "<n> KiB".
std::string MemlockLimitText();

}  // namespace rtloop::internal
