#include "rtloop/telemetry/sample_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "file_test_util.h"
#include "rtloop/telemetry/proto_convert.h"
#include "rtloop/telemetry/sample_log_file.h"
#include "test_util.h"

namespace rtloop::telemetry {
namespace {

using rtloop::testing::FileSizeLimit;
using testing::MakeCycle;
using testing::MakeTaskConfig;

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("rtloop_log_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::string ReadAll(const std::string& path) {
  std::string data(std::filesystem::file_size(path), '\0');
  std::FILE* f = std::fopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr) << path;
  if (f == nullptr) return {};
  data.resize(std::fread(data.data(), 1, data.size(), f));
  std::fclose(f);
  return data;
}

void WriteAll(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
}

SystemInfo FakeSystem() {
  SystemInfo s;
  s.host_name = "testhost";
  s.kernel_release = "6.1.0-rt";
  s.preempt_model = PreemptModel::kRt;
  s.online_cpus = {0, 1};
  return s;
}

class SampleLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TaskConfig a = MakeTaskConfig("alpha", std::chrono::microseconds(500));
    a.cpus = {1};
    a.priority = 90;
    ASSERT_TRUE(hub_.AddTask(0, a).ok());
    ASSERT_TRUE(hub_.AddTask(1, MakeTaskConfig("beta")).ok());
    hub_.OnRtThreadStart(0);
    hub_.OnRtThreadStart(1);
  }
  void TearDown() override {
    for (const std::string& p : cleanup_) std::remove(p.c_str());
  }
  // Records `n` cycles per task through a collector into `path`.
  void Record(const std::string& path, std::uint64_t n, SampleLogConfig config = {}) {
    cleanup_.push_back(path);
    config.path = path;
    config.batch_samples = 256;
    config.tool_name = "sample_log_test";
    Result<std::unique_ptr<SampleLogWriter>> rec =
        SampleLogWriter::Open(config, hub_, FakeSystem());
    ASSERT_TRUE(rec.ok()) << rec.status().ToString();
    Collector collector(hub_);
    ASSERT_TRUE(collector.AddSink(rec->get()).ok());
    for (std::uint64_t i = 0; i < n; ++i) {
      fed_.OnCycle(MakeCycle(0, i, static_cast<std::int64_t>(i * 7919 % 50'000) - 10, 3000));
      fed_.OnCycle(MakeCycle(1, i, static_cast<std::int64_t>(20'000 + i % 13), 100));
      if (i % 500 == 499) collector.DrainOnce();
    }
    collector.Stop();
    Status s = (*rec)->Close();
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ((*rec)->samples_recorded(), 2 * n);
  }
  testing::HubWithStats fed_{{.min_ring_capacity = 1024}};
  TelemetryHub& hub_ = fed_.hub;
  std::vector<std::string> cleanup_;
};

TEST_F(SampleLogTest, RoundTripGivesTheSameSamplesAndStatistics) {
  const std::string path = TempPath("roundtrip");
  Record(path, 3000);
  Result<SampleLogContents> file = ReadSampleLog(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_TRUE(file->error.ok()) << file->error.ToString();
  EXPECT_EQ(file->header.magic(), "rtloop-record");
  EXPECT_EQ(file->header.format_version(), 1u);
  EXPECT_EQ(file->header.tool_name(), "sample_log_test");
  EXPECT_EQ(file->header.system().host_name(), "testhost");
  EXPECT_EQ(file->header.system().preempt_model(), "rt");
  ASSERT_EQ(file->header.tasks_size(), 2);
  EXPECT_EQ(file->header.tasks(0).name(), "alpha");
  EXPECT_EQ(file->header.tasks(0).period_ns(), 500'000);
  EXPECT_EQ(file->header.tasks(0).priority(), 90);
  EXPECT_EQ(file->header.tasks(0).cpus_size(), 1);

  std::vector<Sample> samples[2];
  for (const v1::SampleBatch& b : file->batches) {
    ASSERT_LT(b.task_id(), 2u);
    ASSERT_TRUE(FromProto(b, &samples[b.task_id()]).ok());
  }
  for (TaskId t : {0u, 1u}) {
    ASSERT_EQ(samples[t].size(), 3000u);
    for (std::uint64_t i = 0; i < 3000; ++i) {
      const Sample expected = MakeSample(
          t == 0 ? MakeCycle(0, i, static_cast<std::int64_t>(i * 7919 % 50'000) - 10, 3000)
                 : MakeCycle(1, i, static_cast<std::int64_t>(20'000 + i % 13), 100));
      ASSERT_EQ(samples[t][i].seq, expected.seq);
      ASSERT_EQ(samples[t][i].release_ns, expected.release_ns);
      ASSERT_EQ(samples[t][i].latency_ns, expected.latency_ns);
      ASSERT_EQ(samples[t][i].execution_ns, expected.execution_ns);
      ASSERT_EQ(samples[t][i].flags, expected.flags);
    }
  }
  ASSERT_TRUE(file->trailer.has_value());
  EXPECT_EQ(file->trailer->samples_recorded(), 6000u);
  EXPECT_EQ(file->trailer->samples_not_recorded(), 0u);
  ASSERT_EQ(file->trailer->stats_size(), 2);
  ASSERT_EQ(file->trailer->histograms_size(), 4);
  for (const v1::TaskStats& st : file->trailer->stats()) {
    v1::TaskStats expected;
    ToProto(*hub_.Snapshot(st.task_id()), &expected);
    EXPECT_EQ(st.cycles(), 3000u);
    EXPECT_EQ(st.latency().DebugString(), expected.latency().DebugString());
    EXPECT_EQ(st.execution().DebugString(), expected.execution().DebugString());
    EXPECT_EQ(st.delivered(), 3000u);
  }
  EXPECT_EQ(file->valid_bytes, std::filesystem::file_size(path));
}

// Byte offsets where records start, and the file size, read by SampleLogReader from an intact
// file.
std::vector<std::uint64_t> RecordBoundaries(const std::string& path) {
  std::vector<std::uint64_t> at = {0};
  Result<std::unique_ptr<SampleLogReader>> reader = SampleLogReader::Open(path);
  EXPECT_TRUE(reader.ok());
  if (!reader.ok()) return at;
  v1::Record record;
  for (;;) {
    Result<bool> next = ReadRecord(**reader, &record);
    EXPECT_TRUE(next.ok()) << next.status().ToString();
    if (!next.ok() || !*next) break;
    at.push_back((*reader)->offset());
  }
  return at;
}

// The start of the record that holds byte `pos` (or the record boundary `pos` itself).
std::uint64_t RecordStartAt(const std::vector<std::uint64_t>& boundaries, std::uint64_t pos) {
  return *(std::upper_bound(boundaries.begin(), boundaries.end(), pos) - 1);
}

TEST_F(SampleLogTest, EveryCutAndEveryByteFlipIsReportedAtTheStartOfTheDamagedRecord) {
  const std::string path = TempPath("every");
  Record(path, 300);  // header, 4 batches, trailer: a few KB
  const std::string data = ReadAll(path);
  const std::vector<std::uint64_t> boundaries = RecordBoundaries(path);
  ASSERT_GE(boundaries.size(), 6u);
  ASSERT_EQ(boundaries.back(), data.size());
  Result<SampleLogContents> whole = ReadSampleLog(path);
  ASSERT_TRUE(whole.ok());
  const std::string bad_path = TempPath("every_bad");
  cleanup_.push_back(bad_path);
  auto check = [&](const std::string& bad, std::uint64_t damaged_record, const std::string& what) {
    WriteAll(bad_path, bad);
    Result<SampleLogContents> file = ReadSampleLog(bad_path);
    if (damaged_record == 0) {  // the header: nothing to keep
      ASSERT_FALSE(file.ok()) << what;
      EXPECT_EQ(file.status().code(), StatusCode::kDataLoss) << what;
      EXPECT_NE(file.status().message().find("byte offset 0"), std::string::npos)
          << what << ": " << file.status().message();
      return;
    }
    ASSERT_TRUE(file.ok()) << what << ": " << file.status().ToString();
    EXPECT_EQ(file->error.code(), StatusCode::kDataLoss) << what;
    EXPECT_NE(file->error.message().find("byte offset " + std::to_string(damaged_record)),
              std::string::npos)
        << what << ": " << file->error.message();
    ASSERT_EQ(file->valid_bytes, damaged_record) << what;  // every record before is kept
    // The reader stays at the damage: asking again repeats the same error.
    Result<std::unique_ptr<SampleLogReader>> reader = SampleLogReader::Open(bad_path);
    ASSERT_TRUE(reader.ok());
    std::string record;
    Result<bool> next = true;
    while (next.ok() && *next) next = (*reader)->Next(&record);
    if (next.ok()) {  // a clean cut between records: only the trailer is missing
      EXPECT_EQ(damaged_record, bad.size()) << what;
      return;
    }
    EXPECT_EQ((*reader)->Next(&record).status().message(), next.status().message()) << what;
    EXPECT_EQ((*reader)->offset(), damaged_record) << what;
    ASSERT_LE(file->batches.size(), whole->batches.size());
    for (std::size_t i = 0; i < file->batches.size(); ++i) {
      ASSERT_EQ(file->batches[i].SerializeAsString(), whole->batches[i].SerializeAsString());
    }
  };
  // Every byte near a record boundary (length prefixes, CRC fields), a stride elsewhere: the test
  // stays short on a loaded 2-core machine.
  auto near_boundary = [&](std::uint64_t pos) {
    const std::uint64_t start = RecordStartAt(boundaries, pos);
    const auto next = std::upper_bound(boundaries.begin(), boundaries.end(), pos);
    return pos - start < 12 || (next != boundaries.end() && *next - pos <= 12);
  };
  int checked = 0;
  for (std::uint64_t cut = 1; cut < data.size(); ++cut) {
    if (!near_boundary(cut) && cut % 41 != 0) continue;
    check(data.substr(0, cut), RecordStartAt(boundaries, cut), "cut at " + std::to_string(cut));
    ++checked;
  }
  for (std::uint64_t pos = 0; pos < data.size(); ++pos) {
    if (!near_boundary(pos) && pos % 37 != 0) continue;
    ++checked;
    std::string bad = data;
    bad[pos] = static_cast<char>(bad[pos] ^ static_cast<char>(1 << (pos % 8)));
    check(bad, RecordStartAt(boundaries, pos), "bit flip at " + std::to_string(pos));
  }
  EXPECT_GT(checked, 400);
}

TEST_F(SampleLogTest, UnwritablePathFailsAtOpenWithAClearMessage) {
  Result<std::unique_ptr<SampleLogWriter>> missing_dir =
      SampleLogWriter::Open({.path = "/nonexistent-rtloop-dir/run.rtrec"}, hub_, FakeSystem());
  ASSERT_FALSE(missing_dir.ok());
  EXPECT_EQ(missing_dir.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing_dir.status().message().find("/nonexistent-rtloop-dir/run.rtrec"),
            std::string::npos)
      << missing_dir.status().message();
  Result<std::unique_ptr<SampleLogWriter>> dir = SampleLogWriter::Open(
      {.path = std::filesystem::temp_directory_path().string()}, hub_, FakeSystem());
  EXPECT_FALSE(dir.ok());
  EXPECT_FALSE(SampleLogWriter::Open({.path = ""}, hub_, FakeSystem()).ok());
}

TEST_F(SampleLogTest, FullDiskStopsRecordingWithoutDisturbingTheCollectorOrSubscribers) {
  const std::string path = TempPath("full");
  cleanup_.push_back(path);
  cleanup_.push_back(path + ".partial");
  int errors = 0;
  SampleLogConfig config{.path = path, .flush_interval = std::chrono::nanoseconds(0)};
  config.on_error = [&errors](const Status&) { ++errors; };
  Result<std::unique_ptr<SampleLogWriter>> rec = SampleLogWriter::Open(config, hub_, FakeSystem());
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  Collector collector(hub_);
  ASSERT_TRUE(collector.AddSink(rec->get()).ok());
  auto sub = collector.Subscribe({});
  Status closed;
  {
    const FileSizeLimit limit(2048);  // the header fits, the batches do not
    for (std::uint64_t i = 0; i < 1000; ++i) {
      fed_.OnCycle(MakeCycle(0, i, 1000, 100));
      if (i % 100 == 99) collector.DrainOnce();
    }
    collector.Stop();
    EXPECT_TRUE((*rec)->failed());
    closed = (*rec)->Close();
  }
  EXPECT_FALSE(closed.ok());
  EXPECT_NE(closed.message().find("File too large"), std::string::npos) << closed.ToString();
  EXPECT_NE(closed.message().find(path + ".partial"), std::string::npos) << closed.ToString();
  EXPECT_EQ(errors, 1);
  EXPECT_EQ((*rec)->samples_recorded() + (*rec)->samples_not_recorded(), 1000u);
  EXPECT_EQ(sub->stats().offered, 1000u);
  EXPECT_EQ(hub_.task(0)->ring().writer().dropped(), 0u);
  // The failed recording never appears under its name; what it wrote stays readable.
  EXPECT_FALSE(std::filesystem::exists(path));
  Result<SampleLogContents> partial = ReadSampleLog(path + ".partial");
  ASSERT_TRUE(partial.ok()) << partial.status().ToString();
  EXPECT_EQ(partial->header.tasks_size(), 2);
  EXPECT_FALSE(partial->trailer.has_value());
}

TEST_F(SampleLogTest, NonRegularTargetsAreRefusedAtOpen) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "needs /dev/full";
  Result<std::unique_ptr<SampleLogWriter>> rec =
      SampleLogWriter::Open({.path = "/dev/full"}, hub_, FakeSystem());
  ASSERT_FALSE(rec.ok());
  EXPECT_NE(rec.status().message().find("character device"), std::string::npos)
      << rec.status().message();
}

// The sample log is binary: "-" (standard output, where a program's text goes) is refused, and a
// refused path's message does not suggest it (it did: "..., or '-' for standard output").
TEST_F(SampleLogTest, StandardOutputIsRefusedAndNeverSuggested) {
  for (const char* path : {"-", "/dev/stdout"}) {
    Result<std::unique_ptr<SampleLogWriter>> rec =
        SampleLogWriter::Open({.path = path}, hub_, FakeSystem());
    ASSERT_FALSE(rec.ok()) << path;
    EXPECT_NE(rec.status().message().find("cannot go to standard output"), std::string::npos)
        << rec.status().message();
  }
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "needs /dev/full";
  Result<std::unique_ptr<SampleLogWriter>> full =
      SampleLogWriter::Open({.path = "/dev/full"}, hub_, FakeSystem());
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().message().find("'-'"), std::string::npos) << full.status().message();
}

TEST_F(SampleLogTest, AbandonLeavesNoFileBehind) {
  const std::string path = TempPath("abandoned");
  cleanup_.push_back(path);
  Result<std::unique_ptr<SampleLogWriter>> rec =
      SampleLogWriter::Open({.path = path}, hub_, FakeSystem());
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_TRUE(std::filesystem::exists(path + ".partial"));
  (*rec)->Abandon();
  EXPECT_TRUE((*rec)->Close().ok());
  rec->reset();
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(SampleLogTest, HeaderIsOnDiskAsSoonAsTheWriterIsOpen) {
  const std::string path = TempPath("header_first");
  cleanup_.push_back(path);
  Result<std::unique_ptr<SampleLogWriter>> rec =
      SampleLogWriter::Open({.path = path}, hub_, FakeSystem());
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  // As a reader sees the file of a run killed now: PATH.partial, the header, then the end.
  EXPECT_EQ((*rec)->current_path(), path + ".partial");
  EXPECT_FALSE(std::filesystem::exists(path));
  Result<SampleLogContents> file = ReadSampleLog(path + ".partial");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->header.tasks_size(), 2);
  EXPECT_EQ(file->error.code(), StatusCode::kDataLoss);
  EXPECT_NE(file->error.message().find("without a trailer"), std::string::npos)
      << file->error.message();
  EXPECT_TRUE((*rec)->Close().ok());
  EXPECT_TRUE(std::filesystem::exists(path)) << "Close() renames it";
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

TEST_F(SampleLogTest, ReaderRejectsAFileThatIsNotARecording) {
  const std::string path = TempPath("notrec");
  cleanup_.push_back(path);
  WriteAll(path, "hello, this is plain text and no recording at all\n");
  Result<SampleLogContents> file = ReadSampleLog(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kDataLoss);
  Result<SampleLogContents> missing = ReadSampleLog(TempPath("does_not_exist"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// Issue 18 §4: the gRPC histogram carries the bounds of the histogram's own layout (a client
// needs no constant): with 7 bits up to 2^30 ns, 2 ns buckets above 256 ns and the overflow bucket
// from 2^30 on; the LatencyStats count it as overflow.
TEST(ProtoConvertTest, HistogramBucketsFollowTheHistogramsLayout) {
  const Result<HistogramLayout> small =
      HistogramLayout::Create({.precision_bits = 7, .range_bits = 30});
  ASSERT_TRUE(small.ok());
  LatencyHistogram h(*small);
  constexpr std::int64_t kTop = std::int64_t{1} << 30;
  for (const std::int64_t v : {std::int64_t{-9}, std::int64_t{300}, kTop - 1, kTop + 7}) {
    h.Record(v);
  }
  v1::Histogram pb;
  ToProto(4, v1::QUANTITY_WAKEUP_LATENCY, h, &pb);
  ASSERT_EQ(pb.buckets_size(), 4);
  EXPECT_EQ(pb.buckets(0).lower_ns(), -9);
  EXPECT_EQ(pb.buckets(0).upper_ns(), 0);
  EXPECT_EQ(pb.buckets(1).lower_ns(), 300);
  EXPECT_EQ(pb.buckets(1).upper_ns(), 302);
  EXPECT_EQ(pb.buckets(2).lower_ns(), kTop - (kTop >> 8));
  EXPECT_EQ(pb.buckets(2).upper_ns(), kTop);
  EXPECT_EQ(pb.buckets(3).lower_ns(), kTop);
  EXPECT_EQ(pb.buckets(3).upper_ns(), kTop + 8);
  v1::LatencyStats stats;
  ToProto(h.Summary(), &stats);
  EXPECT_EQ(stats.overflow_count(), 1u);
  EXPECT_EQ(stats.max_ns(), kTop + 7);
}

TEST(ProtoConvertTest, SampleBatchRoundTripsAndOutOfRangeColumnsAreRejected) {
  std::vector<Sample> in(3);
  for (std::size_t i = 0; i < in.size(); ++i) {
    in[i] = MakeSample(MakeCycle(5, 10 + i, -static_cast<std::int64_t>(i) * 1000, 700));
  }
  v1::SampleBatch batch;
  ToProto(5, 2, in, &batch);
  EXPECT_EQ(batch.first_seq(), 10u);
  EXPECT_EQ(batch.lost_before(), 2u);
  std::vector<Sample> out;
  ASSERT_TRUE(FromProto(batch, &out).ok());
  ASSERT_EQ(out.size(), 3u);
  for (std::size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].seq, in[i].seq);
    EXPECT_EQ(out[i].latency_ns, in[i].latency_ns);
    EXPECT_EQ(out[i].task, 5u);
  }
  v1::SampleBatch wide = batch;
  wide.set_latency_ns(1, std::int64_t{1} << 40);  // not something rtloop writes
  out.clear();
  Status s = FromProto(wide, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("latency_ns[1]"), std::string::npos) << s.message();
  EXPECT_TRUE(out.empty());
  wide = batch;
  wide.set_task_id(70'000);
  EXPECT_EQ(FromProto(wide, &out).code(), StatusCode::kInvalidArgument);
  wide = batch;
  wide.add_flags(0);  // columns of different lengths
  EXPECT_EQ(FromProto(wide, &out).code(), StatusCode::kInvalidArgument);
}

TEST_F(SampleLogTest, FileIsReadableAsPlainLengthDelimitedProtobuf) {
  const std::string path = TempPath("plain");
  Record(path, 300);
  const std::string data = ReadAll(path);
  // A generic reader: varint length, then a v1::Record, until the end.
  std::size_t pos = 0;
  int records = 0;
  while (pos < data.size()) {
    std::uint64_t len = 0;
    int shift = 0;
    while (true) {
      const auto c = static_cast<unsigned char>(data[pos++]);
      len |= static_cast<std::uint64_t>(c & 0x7f) << shift;
      if ((c & 0x80) == 0) break;
      shift += 7;
    }
    v1::Record r;
    ASSERT_TRUE(r.ParseFromArray(data.data() + pos, static_cast<int>(len)));
    EXPECT_NE(r.crc32c(), 0u);
    pos += len;
    ++records;
  }
  EXPECT_EQ(pos, data.size());
  EXPECT_GE(records, 4);  // header, >= 2 batches, trailer
}

}  // namespace
}  // namespace rtloop::telemetry
