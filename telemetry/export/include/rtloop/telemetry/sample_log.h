// SampleLogWriter and SampleLogReader: the binary sample log, one file per run holding every
// sample the collector delivered plus a header (system, tasks) and a trailer (final statistics and
// histograms). The format is proto/rtloop/telemetry/v1/record.proto: length-delimited
// rtloop.telemetry.v1.Record messages, each ending with a CRC-32C; readable by any protobuf reader.
//
//   Result<std::unique_ptr<SampleLogWriter>> log =
//       SampleLogWriter::Open({.path = "run.rtlog"}, hub, ReadSystemInfo());
//   if (!log.ok()) return log.status();
//   collector.AddSink(log->get());   // batches are written from the collector thread
//   ... collector.Stop();
//   Status s = (*log)->Close();      // trailer with the final statistics
//
// Reading: SampleLogReader checks the framing and the CRC of each record and hands out its bytes;
// sample_log_file.h (in rtloop::telemetry, which has the generated protobuf code) parses them:
//   Result<SampleLogContents> file = ReadSampleLog("run.rtlog");
//   // Damage (truncation, bit flips) is reported with its byte offset; what came before is kept:
//   if (!file->error.ok()) std::cerr << file->error.ToString();
//
// A writer that cannot write (ENOSPC, EACCES, EIO ...) keeps the first error in status(), stops
// writing and counts what it could not record; the tasks and the collector carry on undisturbed.
//
// This header is part of the telemetry core (rtloop::telemetry_core): no protobuf in it; the
// writer uses protobuf privately.
//
// The file goes through OutputFile (output_file.h), never to standard output (the log is binary;
// "-" is refused by Open(config, ...); the Open() that takes an OutputFile writes wherever that
// goes): while recording it is PATH.partial, and
// Close() renames it to PATH once the trailer is on disk. A run killed meanwhile leaves
// PATH.partial, readable up to the cut ("ends without a trailer"); a recording that failed keeps
// what it wrote in PATH.partial and never appears as PATH; Abandon() removes it.
//
// Threading: OnSamples()/OnDrainEnd() are called by the collector (one thread at a time); Close()
// after the collector stopped. status()/counters may be read from any thread. Not RT-safe: file
// I/O. SampleLogReader is a single-thread value.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "rtloop/framework/status.h"
#include "rtloop/framework/system_info.h"
#include "rtloop/telemetry/collector.h"
#include "rtloop/telemetry/output_file.h"
#include "rtloop/telemetry/sample.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace rtloop::telemetry {

// The header's magic string and the format version this code writes and reads.
inline constexpr char kSampleLogMagic[] = "rtloop-record";
inline constexpr std::uint32_t kSampleLogFormatVersion = 1;
// Records larger than this are treated as corruption by the reader.
inline constexpr std::uint64_t kMaxRecordBytes = 64u << 20;

struct SampleLogConfig {
  std::string path;                    // file to create or replace; see above
  std::string tool_name = "rtloop";    // written in the header
  std::string tool_version = "0.1.0";  // written in the header
  std::string command_line = {};       // written in the header
  std::size_t batch_samples = 4096;    // a task's batch is written when it holds this many
  // Partial batches are written at least this often (on the collector's drain pass).
  std::chrono::nanoseconds flush_interval{std::chrono::milliseconds(200)};
  bool fsync_on_close = true;
  // Called once, on the thread that hit it, when recording stops because of an error. nullptr:
  // one line on stderr.
  std::function<void(const Status&)> on_error = {};
};

class SampleLogWriter final : public SampleSink {
 public:
  // Creates config.path (as PATH.partial) and writes the header (system, every task of `hub`:
  // open it after the tasks are added). Errors name the path and the errno. `hub` must outlive the
  // writer. Not RT-safe.
  static Result<std::unique_ptr<SampleLogWriter>> Open(const SampleLogConfig& config,
                                                       const TelemetryHub& hub,
                                                       const SystemInfo& system);
  // The same into a file opened beforehand (e.g. when a run validates and opens all its outputs
  // before it starts measuring); config.path is taken from it.
  static Result<std::unique_ptr<SampleLogWriter>> Open(const SampleLogConfig& config,
                                                       OutputFile file, const TelemetryHub& hub,
                                                       const SystemInfo& system);
  ~SampleLogWriter() override;  // Close() if not closed
  SampleLogWriter(const SampleLogWriter&) = delete;
  SampleLogWriter& operator=(const SampleLogWriter&) = delete;

  // SampleSink (collector thread).
  void OnSamples(TaskId task, std::span<const Sample> samples) override;
  void OnDrainEnd() override;

  // Writes pending batches and the trailer (final statistics and histograms from the hub), syncs,
  // closes and renames PATH.partial to PATH. Returns the first error, if any; its message then
  // says that what was recorded before it is in PATH.partial. Idempotent.
  Status Close();
  // Drops the recording: closes and removes PATH.partial, writes no trailer (for a run whose
  // set-up failed before anything was measured). Close() afterwards returns OK. Idempotent.
  void Abandon();
  std::uint64_t batches_recorded() const noexcept { return batches_recorded_; }  // after Close()

  // The first error (OK while recording works). Any thread.
  Status status() const;
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  std::uint64_t samples_recorded() const noexcept {
    return samples_recorded_.load(std::memory_order_relaxed);
  }
  std::uint64_t samples_not_recorded() const noexcept {
    return samples_not_recorded_.load(std::memory_order_relaxed);
  }
  const std::string& path() const noexcept { return config_.path; }
  // Where the bytes are now: PATH.partial until Close() succeeded, then PATH.
  const std::string& current_path() const noexcept { return file_.current_path(); }

 private:
  struct Pending;
  SampleLogWriter(const SampleLogConfig& config, const TelemetryHub& hub, OutputFile file);
  // Frames one serialized rtloop.telemetry.v1.Record (length prefix, CRC) into buffer_.
  bool AppendRecord(const std::string& body);
  bool WriteBytes(const char* data, std::size_t size);
  bool FlushBuffer();
  void Fail(const Status& status);
  void FlushTask(Pending& pending);
  void FlushAll();

  const SampleLogConfig config_;
  const TelemetryHub& hub_;
  OutputFile file_;
  std::string buffer_;
  std::vector<std::unique_ptr<Pending>> pending_;  // by task id
  std::chrono::steady_clock::time_point last_flush_;
  mutable std::mutex status_mu_;
  Status status_;  // guarded by status_mu_
  std::atomic<bool> failed_{false};
  bool closed_ = false;
  std::uint64_t batches_recorded_ = 0;
  std::uint64_t buffered_samples_ = 0;  // in batches written to buffer_ but not to the file
  std::atomic<std::uint64_t> samples_recorded_{0};
  std::atomic<std::uint64_t> samples_not_recorded_{0};
};

// Reads a sample log one record at a time, checking the framing and each record's CRC-32C.
class SampleLogReader {
 public:
  // NotFound / PermissionDenied naming the path when it cannot be opened. Not RT-safe.
  static Result<std::unique_ptr<SampleLogReader>> Open(const std::string& path);
  ~SampleLogReader();
  SampleLogReader(const SampleLogReader&) = delete;
  SampleLogReader& operator=(const SampleLogReader&) = delete;

  // Reads the next record: true with `record` holding the serialized rtloop.telemetry.v1.Record
  // (its CRC checked; parse it with ParseSampleLogRecord, sample_log_file.h), or false at a clean
  // end of file. A truncated or corrupt record gives DataLoss naming the byte offset where it
  // starts and what is wrong; the records before it were returned intact. After an error every
  // later call returns the same error.
  Result<bool> Next(std::string* record);
  // Byte offset of the next record.
  std::uint64_t offset() const noexcept { return offset_; }
  // Byte offset where the record last returned by Next() starts.
  std::uint64_t record_offset() const noexcept { return record_offset_; }
  const std::string& path() const noexcept { return path_; }

 private:
  SampleLogReader(std::FILE* file, std::string path) noexcept
      : file_(file), path_(std::move(path)) {}
  Result<bool> ReadNext(std::string* record);
  std::FILE* file_;
  std::string path_;
  Status error_;  // the first error: reading stops there
  std::uint64_t offset_ = 0;
  std::uint64_t record_offset_ = 0;
};

// CRC-32C (Castagnoli), as used in sample log records.
std::uint32_t Crc32c(const void* data, std::size_t size, std::uint32_t crc = 0) noexcept;

}  // namespace rtloop::telemetry
