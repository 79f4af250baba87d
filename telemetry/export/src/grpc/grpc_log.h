// Where gRPC's own log lines go in an rtloop process. gRPC prints ERROR lines to stderr by
// default (a port in use costs ~700 characters of it before rtloop's own one-line message); rtloop
// installs its log function instead, at the first Server::Start() or Client::Create():
//   - gRPC's lines are dropped, unless RTLOOP_GRPC_VERBOSE is set (to anything but "" or "0") or
//     GRPC_VERBOSITY / GRPC_TRACE is set: then they go to stderr as "gRPC E file:line] message"
//     (GRPC_VERBOSITY still selects the severities gRPC passes on; ERROR by default);
//   - the last ERROR line is kept, so a message of rtloop can quote it when gRPC gave no reason;
//   - an accept() failure of a listener ("Failed accept4: ...": gRPC 1.51 then stops accepting on
//     that port for good) is reported to the registered listeners (Server restarts its listener).
// Internal to rtloop_telemetry.
//
// Threading: all functions are thread-safe. Listeners are called on a gRPC thread that may hold
// gRPC locks: they must only record the event and wake their own thread, never call into gRPC.
// Not RT-safe.
#pragma once

#include <functional>
#include <string>

namespace rtloop::telemetry::internal {

// Installs the log function once per process; later calls do nothing.
void SetUpGrpcLogging();

// The last ERROR line gRPC logged in this process, "" if none.
std::string LastGrpcError();

// Registers `listener` for accept failures (called with gRPC's message); returns an id for
// RemoveAcceptFailureListener(), which returns only once no call of it runs any more.
using AcceptFailureListener = std::function<void(const std::string& message)>;
int AddAcceptFailureListener(AcceptFailureListener listener);
void RemoveAcceptFailureListener(int id);

}  // namespace rtloop::telemetry::internal
