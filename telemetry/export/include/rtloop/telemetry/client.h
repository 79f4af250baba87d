// Client: the library client of the rtloop telemetry service (proto/rtloop/telemetry/v1/
// telemetry.proto), used by rtloop-top, the tests and any C++ dashboard.
//
//   rtloop::telemetry::ClientConfig cc;
//   cc.address = "127.0.0.1:50051";
//   rtloop::Result<std::unique_ptr<rtloop::telemetry::Client>> client =
//       rtloop::telemetry::Client::Create(cc);
//   if (!client.ok()) return Fail(client.status());
//   rtloop::Result<v1::GetStatsResponse> stats = (*client)->GetStats({}, false);
//   v1::ListOutliersRequest lo;                        // outlier records 0.. (and the counts)
//   rtloop::Result<v1::ListOutliersResponse> page = (*client)->ListOutliers(lo);
//   // then lo.set_first(page->next()) for the records made since
//
//   v1::StreamSamplesRequest req;                      // all tasks
//   auto stream = (*client)->StreamSamples(req);
//   v1::StreamSamplesResponse batch;
//   while (stream->Next(&batch)) Consume(batch);      // blocks; false at the end
//   rtloop::Status end = stream->Finish();             // why the stream ended
//   if (end.ok() && stream->end() != nullptr) ...      // the run ended: last seq per task
//
// Errors are rtloop Statuses whose message names the address and the RPC; a missing or wrong
// token is kUnauthenticated, an unreachable server or a TLS mismatch kUnavailable, whose message
// says which by looking (a TCP connection to the address, up to 1 s): refused is "nothing listens
// on ADDR: has the run ended?" with sys_errno() ECONNREFUSED; accepted is "something listens ...
// do both sides agree on TLS"; else "cannot reach ADDR" with the reason.
//
// Threading: a Client may be used from several threads at once. A stream object belongs to one
// reading thread, except Cancel(), which any thread may call. Not RT-safe: everything here
// allocates and does network I/O; never call it from an RT thread. The first gRPC use in a process
// starts gRPC's threads, which inherit the creating thread's scheduling and affinity.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rtloop/framework/status.h"
#include "rtloop/telemetry/v1/telemetry.pb.h"

namespace rtloop::telemetry {

struct ClientConfig {
  // Server address, HOST:PORT (e.g. "127.0.0.1:50051", "[::1]:50051"); ":PORT" is 127.0.0.1:PORT.
  std::string address = "127.0.0.1:50051";
  // Bearer token sent with every call (1..4096 printable ASCII characters, no spaces); empty:
  // none (see also token_file).
  std::string token;
  // File holding the bearer token (one line, read with input_file.h's ReadTokenFile: a regular
  // file of at most 16 KiB); used when `token` is empty. Empty: none.
  std::string token_file;
  // PEM file with the root certificate(s) that signed the server's certificate: use TLS. Empty:
  // plaintext.
  std::string tls_ca_file;
  // Name checked against the server certificate instead of the address' host; empty: the host.
  std::string tls_server_name;
  // gRPC's bandwidth-delay probing, which grows the receive windows of a fast connection. Off, the
  // transport holds at most ~64 KB per stream for a slow reader, so the server's drop-oldest
  // buffer (and lost_before) takes over sooner; on (gRPC's default), throughput is higher.
  bool bdp_probe = true;
  // Deadline of each unary call (and of connecting, for them).
  std::chrono::milliseconds call_timeout{5000};
};

// A server stream of messages of type `Message` (v1::StreamSamplesResponse, v1::GetStatsResponse
// or v1::ListOutliersResponse).
template <typename Message>
class ClientStream {
 public:
  class Impl;
  explicit ClientStream(std::unique_ptr<Impl> impl);
  ~ClientStream();  // cancels the call when it is still open
  ClientStream(const ClientStream&) = delete;
  ClientStream& operator=(const ClientStream&) = delete;

  // Blocks until the server has accepted the stream (or ended it): for StreamSamples, every sample
  // produced from then on reaches this stream. False only when Next() already saw the end; a
  // stream the server refused (bad request, token, limit) also returns true: Next() then returns
  // false and Finish() says why.
  bool WaitForReady();
  // Blocks for the next message; false when the stream ended (then call Finish()). A sample
  // stream's final message (StreamEnd only, no batch) is not handed out: it is in end(). A stats
  // stream's final message holds the final statistics: it is handed out, with `end` set.
  bool Next(Message* message);
  // After Next() returned false: OK when the server ended the stream normally (the run ended:
  // end() is set), else why not. A stream the server served and then stopped is kUnavailable
  // "the server ended the stream: ..."; one it never served carries the usual connectivity hint.
  Status Finish();
  // The server's final message when the run ended normally (reason, and for a sample stream per
  // task the last seq and what this stream sent and lost); nullptr otherwise or before it came.
  const v1::StreamEnd* end() const;
  // Any thread: ends the stream; a blocked Next() returns false soon. After the stream ended
  // (Next() returned false) it changes nothing: Finish() still says how it ended.
  void Cancel();

 private:
  std::unique_ptr<Impl> impl_;
};

using SampleStream = ClientStream<v1::StreamSamplesResponse>;
using StatsStream = ClientStream<v1::GetStatsResponse>;
using OutlierStream = ClientStream<v1::ListOutliersResponse>;

class Client {
 public:
  // Validates the config and reads the token and CA files (bounded, never blocking: a FIFO,
  // /dev/zero or a huge file is an error naming it); does not connect yet (the first call does).
  // Errors: bad address, bad token, unreadable file. The first Client or Server of a process
  // sets gRPC's log function (see server.h: gRPC's log stays off stderr unless
  // RTLOOP_GRPC_VERBOSE=1).
  static Result<std::unique_ptr<Client>> Create(const ClientConfig& config);

  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const std::string& address() const noexcept;

  // Waits up to `timeout` for the connection (TCP, TLS) to be ready. kUnavailable otherwise (the
  // reason as for calls, above).
  Status WaitForConnected(std::chrono::milliseconds timeout);

  Result<v1::GetSystemInfoResponse> GetSystemInfo();
  Result<v1::ListTasksResponse> ListTasks();
  // `task_ids` empty: all tasks.
  Result<v1::GetStatsResponse> GetStats(const std::vector<std::uint32_t>& task_ids,
                                        bool include_histogram);
  // Resets the statistics of `task_ids` (empty: all; what a reset keeps: telemetry.proto,
  // ResetStats). Needs the server's token (ClientConfig); a server without one refuses it
  // (kPermissionDenied).
  Result<v1::ResetStatsResponse> ResetStats(const std::vector<std::uint32_t>& task_ids);
  // Outlier records from request.first on, with the counts (telemetry.proto, ListOutliers). A
  // server older than the call (API revision < 2: GetSystemInfo's api_features has no
  // "list_outliers") gives kFailedPrecondition saying so.
  Result<v1::ListOutliersResponse> ListOutliers(const v1::ListOutliersRequest& request);

  // Server streams. They never fail here: errors (bad request, token, stream limit) come back from
  // Finish() once Next() returned false.
  std::unique_ptr<StatsStream> WatchStats(const v1::WatchStatsRequest& request);
  std::unique_ptr<SampleStream> StreamSamples(const v1::StreamSamplesRequest& request);
  // The outlier records as they are made (API revision 2, feature "watch_outliers"); the last
  // message of a run that ended holds the last records and the final counts, with `end` set.
  std::unique_ptr<OutlierStream> WatchOutliers(const v1::WatchOutliersRequest& request);

 private:
  class Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rtloop::telemetry
