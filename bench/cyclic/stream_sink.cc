// rtloop-cyclic-sink: a telemetry client that streams every sample of every task from a running
// rtloop process (e.g. rtloop-cyclic --telemetry=ADDR) and counts them: the load a dashboard
// puts on the measurement, for bench/cyclic/fidelity.py.
//
//   rtloop-cyclic-sink 127.0.0.1:50555 [CONNECT_TIMEOUT_S]
//
// Retries the connection for CONNECT_TIMEOUT_S (default 10) seconds, then reads the stream until
// the server ends it and prints "samples=N lost=M batches=B" on stderr. Exit 0 when the stream
// ended normally (the server stopped), 1 otherwise.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "rtloop/telemetry/client.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: rtloop-cyclic-sink HOST:PORT [CONNECT_TIMEOUT_S]\n");
    return 2;
  }
  const int timeout_s = argc > 2 ? std::atoi(argv[2]) : 10;
  rtloop::telemetry::ClientConfig cc;
  cc.address = argv[1];
  rtloop::Result<std::unique_ptr<rtloop::telemetry::Client>> client =
      rtloop::telemetry::Client::Create(cc);
  if (!client.ok()) {
    std::fprintf(stderr, "rtloop-cyclic-sink: %s\n", client.status().message().c_str());
    return 2;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (!(*client)->WaitForConnected(std::chrono::milliseconds(200)).ok()) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "rtloop-cyclic-sink: no server at %s\n", argv[1]);
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  rtloop::telemetry::v1::StreamSamplesRequest req;  // every task
  std::unique_ptr<rtloop::telemetry::SampleStream> stream = (*client)->StreamSamples(req);
  rtloop::telemetry::v1::StreamSamplesResponse msg;
  unsigned long long samples = 0;
  unsigned long long lost = 0;
  unsigned long long batches = 0;
  while (stream->Next(&msg)) {
    samples += static_cast<unsigned long long>(msg.batch().latency_ns_size());
    lost += msg.batch().lost_before();
    ++batches;
  }
  const rtloop::Status end = stream->Finish();
  std::fprintf(stderr, "rtloop-cyclic-sink: samples=%llu lost=%llu batches=%llu end=%s\n", samples,
               lost, batches, end.ok() ? "ok" : end.message().c_str());
  return samples > 0 ? 0 : 1;
}
