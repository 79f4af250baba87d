// The WatchOutliers stream (API revision 2, feature "watch_outliers"): the outlier records as the
// explanation makes them, in pages as ListOutliers answers them (outlier_fill.h). Internal to
// rtloop_telemetry; includes gRPC headers (slow to compile): only server_core.cc includes it.
//
//   // in the service: return StartOutlierStream(core, context, *request);
//
// The stream looks for new records every interval (the pump thread wakes it: the feed has no
// notification of its own), sends a message when there are new records or the counts changed
// (the first one at once), at most kDefaultOutliersPerCall records a message, the next right
// after the client took it while more wait. When the run ends (Server::Finish) it sends the
// records still to come (until the delivery deadline), then a last message with `end` set and
// the final counts, then OK. Stream limit, stall timeout and stop as for the other streams
// (stream_reactor.h).
//
// Threading: the reactor's methods run on gRPC's threads and the pump, under its lock. Not
// RT-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include "rtloop/telemetry/v1/telemetry.pb.h"
#include "server_core.h"

namespace rtloop::telemetry::internal {

// Admits the call (token, rate), checks the request (INVALID_ARGUMENT: an unknown task id, an
// interval below ServerConfig::min_watch_interval), reserves a stream slot and starts the stream;
// a refused call gets a reactor that fails at once with the reason.
grpc::ServerWriteReactor<v1::ListOutliersResponse>* StartOutlierStream(
    ServerCore* core, grpc::CallbackServerContext* context,
    const v1::WatchOutliersRequest& request);

}  // namespace rtloop::telemetry::internal
