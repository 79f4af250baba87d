// rtloop-cyclic-sink: a telemetry client that streams every sample of every task from a running
// rtloop process (e.g. rtloop-cyclic --telemetry=ADDR) and counts them: the load a dashboard
// puts on the measurement, for bench/cyclic/fidelity.py, and a check that every sample arrives.
//
//   rtloop-cyclic-sink 127.0.0.1:50555 [CONNECT_TIMEOUT_S]
//
// Retries the connection for CONNECT_TIMEOUT_S (default 10) seconds, then reads the stream until
// the server ends it and prints on stderr
//   rtloop-cyclic-sink: samples=N lost=M batches=B end=run-ended
//   rtloop-cyclic-sink: task 0: last seq 4999, 5000 samples: received 5000, lost 0, ring 0,
//   first seq 0
// (one line per task from the server's final message; first seq: the first this sink received,
// the samples before it came before the sink did), or end=<why> when the stream did not end
// normally. Exit 0 when the run ended normally and the counts add up: received = what the server
// says it sent; without loss the last sample received is the task's last; for a sink connected
// before the run started, received + lost + dropped in the ring = samples. 1 otherwise, 2 on bad
// usage.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "rtloop/telemetry/client.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: rtloop-cyclic-sink HOST:PORT [CONNECT_TIMEOUT_S]\n");
    return 2;
  }
  char* end_of_number = nullptr;
  const long timeout_s = argc > 2 ? std::strtol(argv[2], &end_of_number, 10) : 10;
  if (argc > 2 && (*end_of_number != '\0' || timeout_s < 0)) {
    std::fprintf(stderr, "rtloop-cyclic-sink: CONNECT_TIMEOUT_S must be a whole number >= 0\n");
    return 2;
  }
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
  std::map<std::uint32_t, unsigned long long> received;  // per task
  std::map<std::uint32_t, unsigned long long> first_seq;
  std::map<std::uint32_t, unsigned long long> next_seq;  // last seq received + 1
  while (stream->Next(&msg)) {
    const auto n = static_cast<unsigned long long>(msg.batch().latency_ns_size());
    samples += n;
    lost += msg.batch().lost_before();
    received[msg.batch().task_id()] += n;
    first_seq.try_emplace(msg.batch().task_id(), msg.batch().first_seq());
    next_seq[msg.batch().task_id()] = msg.batch().first_seq() + n;
    ++batches;
  }
  const rtloop::Status end = stream->Finish();
  const rtloop::telemetry::v1::StreamEnd* final_message = stream->end();
  const bool normal = end.ok() && final_message != nullptr &&
                      final_message->reason() == rtloop::telemetry::v1::STREAM_END_REASON_RUN_ENDED;
  std::fprintf(stderr, "rtloop-cyclic-sink: samples=%llu lost=%llu batches=%llu end=%s\n", samples,
               lost, batches,
               normal     ? "run-ended"
               : end.ok() ? "ok"
                          : end.message().c_str());
  if (!normal) return 1;
  bool accounted = true;
  for (const rtloop::telemetry::v1::TaskStreamEnd& t : final_message->tasks()) {
    const unsigned long long got = received[t.task_id()];
    std::fprintf(stderr,
                 "rtloop-cyclic-sink: task %u: last seq %llu, %llu samples: received %llu, lost "
                 "%llu, ring %llu, first seq %llu\n",
                 t.task_id(), static_cast<unsigned long long>(t.last_seq()),
                 static_cast<unsigned long long>(t.samples()), got,
                 static_cast<unsigned long long>(t.lost_total()),
                 static_cast<unsigned long long>(t.ring_dropped()),
                 first_seq.count(t.task_id()) != 0 ? first_seq[t.task_id()] : 0ull);
    const bool from_start = first_seq.count(t.task_id()) == 0 || first_seq[t.task_id()] == 0;
    if (got != t.sent()) accounted = false;
    if (from_start && got + t.lost_total() + t.ring_dropped() != t.samples()) accounted = false;
    // Nothing lost: the stream carried the tail, up to the task's last sample.
    if (t.lost_total() == 0 && t.ring_dropped() == 0 && t.samples() > 0 &&
        next_seq[t.task_id()] != t.samples()) {
      accounted = false;
    }
  }
  if (!accounted) {
    std::fprintf(stderr, "rtloop-cyclic-sink: the counts do not add up (see above)\n");
    return 1;
  }
  return 0;
}
