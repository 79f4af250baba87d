// End-to-end telemetry streaming over gRPC on loopback (Google Benchmark; run with
// --benchmark_format=json). Everything runs in this process: producer -> SampleRing -> Collector
// -> per-stream Subscription -> Server -> loopback TCP -> Client.
//
//   BM_RingToClientOneSubscriber/RATE: a producer thread pushes 1 s worth of samples of one task
//     into its ring at RATE samples/s (in blocks of 1000; it spins when the ring is full, so the
//     ring drops nothing); one client reads. items_per_second = samples the client received per
//     second of wall time until the last one arrived; `lost` = samples the stream dropped because
//     the client fell behind (goal: 2 M samples/s with lost 0).
//   BM_EightTasksFourSubscribers: an rtloop::Runtime runs 8 SCHED_OTHER tasks at 10 kHz for 2 s;
//   four
//     clients stream every task. Counters: received per client, lost (all clients), ring drops
//     (goal: lost 0).
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "rtloop/framework/executor.h"
#include "rtloop/runtime.h"
#include "rtloop/telemetry/client.h"
#include "rtloop/telemetry/collector.h"
#include "rtloop/telemetry/server.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace {

using namespace rtloop;             // NOLINT(google-build-using-namespace): benchmark brevity
using namespace rtloop::telemetry;  // NOLINT(google-build-using-namespace)
using std::chrono::steady_clock;

std::unique_ptr<Server> StartServer(TelemetryHub& hub, Collector& collector,
                                    Executor* executor = nullptr) {
  ServerConfig sc;
  sc.address = "127.0.0.1:0";
  sc.log_to_stderr = false;
  sc.stream_buffer_samples = 1 << 20;
  sc.max_stream_buffer_samples = 1 << 20;
  sc.max_batch_samples = 16384;
  Result<std::unique_ptr<Server>> server = Server::Start(sc, hub, collector, executor);
  RTLOOP_CHECK(server.ok(), "server start failed");
  return std::move(*server);
}

std::unique_ptr<Client> Connect(const std::string& address) {
  ClientConfig cc;
  cc.address = address;
  Result<std::unique_ptr<Client>> c = Client::Create(cc);
  RTLOOP_CHECK(c.ok(), "client create failed");
  return std::move(*c);
}

// Reads a stream until `expected` samples are accounted for (received + lost) or it ends.
struct Reader {
  std::atomic<std::uint64_t> received{0};
  std::atomic<std::uint64_t> lost{0};
  void Run(SampleStream& stream, std::uint64_t expected) {
    v1::StreamSamplesResponse r;
    while (received.load() + lost.load() < expected && stream.Next(&r)) {
      lost += r.batch().lost_before();
      received += static_cast<std::uint64_t>(r.batch().release_ns_size());
    }
  }
};

void BM_RingToClientOneSubscriber(benchmark::State& state) {
  const auto rate = static_cast<std::uint64_t>(state.range(0));  // samples/s
  const std::uint64_t samples = rate;                            // 1 s worth
  TelemetryHubConfig hc;
  hc.ring_capacity = 1 << 16;
  TelemetryHub hub(hc);
  TaskConfig tc;
  tc.name = "producer";
  tc.period = std::chrono::microseconds(1);
  RTLOOP_CHECK(hub.AddTask(0, tc).ok(), "AddTask failed");
  // No executor: this benchmark writes the ring itself; its task statistics say no cycles.
  struct NoCycles final : TaskStatsReader {
    TaskStatsSnapshot Stats(TaskId) const noexcept override { return {}; }
  } no_cycles;
  hub.AttachStats(no_cycles);
  Collector collector(hub);
  RTLOOP_CHECK(collector.Start().ok(), "collector start failed");
  std::unique_ptr<Server> server = StartServer(hub, collector);
  std::unique_ptr<Client> client = Connect(server->address());
  SampleRing::Writer& writer = hub.task(0)->ring().writer();
  std::uint64_t seq = 0;
  std::uint64_t received = 0;
  std::uint64_t lost = 0;
  for (auto _ : state) {
    std::unique_ptr<SampleStream> stream = client->StreamSamples({});
    stream->WaitForReady();
    Reader reader;
    const auto start = steady_clock::now();
    std::thread consumer([&] { reader.Run(*stream, samples); });
    std::thread producer([&] {
      writer.AttachToCurrentThread();
      Sample s;
      s.latency_ns = 12'345;
      s.execution_ns = 2'000;
      const auto t0 = steady_clock::now();
      for (std::uint64_t i = 0; i < samples; ++i) {
        if (i % 1000 == 0) {
          std::this_thread::sleep_until(t0 + std::chrono::nanoseconds(i * 1'000'000'000 / rate));
        }
        s.seq = seq++;
        s.release_ns = static_cast<std::int64_t>(s.seq) * 1000;
        while (!writer.TryPush(s)) std::this_thread::yield();
      }
    });
    producer.join();
    consumer.join();
    state.SetIterationTime(std::chrono::duration<double>(steady_clock::now() - start).count());
    received += reader.received;
    lost += reader.lost;
    stream->Cancel();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(received));
  state.counters["lost"] = static_cast<double>(lost);
  state.counters["ring_push_retries"] = static_cast<double>(writer.dropped());
  server->Stop();
  collector.Stop();
}
BENCHMARK(BM_RingToClientOneSubscriber)
    ->Arg(2'000'000)
    ->Arg(4'000'000)
    ->Arg(8'000'000)
    ->Arg(16'000'000)
    ->Iterations(2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

class IdleTask final : public PeriodicTask {
 public:
  StepResult Step(const CycleContext& /*ctx*/) noexcept override { return StepResult::kContinue; }
};

void BM_EightTasksFourSubscribers(benchmark::State& state) {
  constexpr int kTasks = 8;
  constexpr int kClients = 4;
  constexpr std::uint64_t kCycles = 20'000;  // 2 s at 10 kHz
  std::uint64_t lost = 0;
  std::uint64_t received = 0;
  std::uint64_t ring_dropped = 0;
  for (auto _ : state) {
    RuntimeConfig rc;
    rc.executor.lock_memory = false;
    rc.telemetry.grpc.address = "127.0.0.1:0";
    rc.telemetry.grpc.log_to_stderr = false;
    rc.telemetry.grpc.stream_buffer_samples = 1 << 20;
    rc.telemetry.grpc.max_stream_buffer_samples = 1 << 20;
    rc.telemetry.grpc.max_batch_samples = 16384;
    Result<std::unique_ptr<Runtime>> made = Runtime::Create(rc);
    RTLOOP_CHECK(made.ok(), "runtime create failed");
    Runtime& rt = **made;
    std::vector<IdleTask> tasks(kTasks);
    for (int i = 0; i < kTasks; ++i) {
      TaskConfig tc;
      tc.name = "t" + std::to_string(i);
      tc.period = std::chrono::microseconds(100);
      tc.policy = SchedPolicy::kOther;
      tc.priority = 0;
      tc.max_cycles = kCycles;
      RTLOOP_CHECK(rt.AddTask(tasks[static_cast<std::size_t>(i)], tc).ok(), "AddTask failed");
    }
    TelemetryHub& hub = *rt.hub();
    std::unique_ptr<Client> client = Connect(rt.grpc_address());
    std::vector<std::unique_ptr<SampleStream>> streams;
    std::vector<Reader> readers(kClients);
    std::vector<std::thread> threads;
    for (int c = 0; c < kClients; ++c) {
      streams.push_back(client->StreamSamples({}));
      streams.back()->WaitForReady();
    }
    RTLOOP_CHECK(rt.Start().ok(), "runtime start failed");
    for (std::size_t c = 0; c < kClients; ++c) {
      threads.emplace_back([&, c] { readers[c].Run(*streams[c], kTasks * kCycles); });
    }
    rt.executor().Wait();
    rt.collector()->Stop();  // every sample into the streams; the server keeps serving
    std::uint64_t delivered = 0;
    for (const TaskReport& s : hub.SnapshotAll()) {
      delivered += s.delivered;
      ring_dropped += s.ring_dropped;
    }
    // Everything the collector delivered must reach each client (or be counted as lost).
    const auto deadline = steady_clock::now() + std::chrono::seconds(10);
    for (Reader& r : readers) {
      while (r.received + r.lost < delivered && steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    for (auto& s : streams) s->Cancel();
    for (std::thread& t : threads) t.join();
    for (Reader& r : readers) {
      lost += r.lost;
      received += r.received;
    }
    (void)rt.Stop();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(received));
  state.counters["received_per_client"] =
      static_cast<double>(received) / static_cast<double>(kClients * state.iterations());
  state.counters["lost"] = static_cast<double>(lost);
  state.counters["ring_dropped"] = static_cast<double>(ring_dropped);
}
BENCHMARK(BM_EightTasksFourSubscribers)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
