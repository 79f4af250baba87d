// Conversion of gRPC statuses to rtloop Statuses. Internal; includes gRPC headers, so only for the
// gRPC translation units.
#pragma once

#include <grpcpp/support/status.h>

#include <string>
#include <string_view>

#include "rtloop/framework/status.h"

namespace rtloop::telemetry {

// "<what> on <address>: <gRPC message>" plus a hint for the usual causes; the code follows the
// gRPC code (UNAVAILABLE and DEADLINE_EXCEEDED -> kUnavailable, UNAUTHENTICATED ->
// kUnauthenticated, ...).
Status FromGrpcStatus(const grpc::Status& status, std::string_view what,
                      const std::string& address);

}  // namespace rtloop::telemetry
