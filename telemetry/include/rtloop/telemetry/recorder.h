// Recorder and RecordReader: the binary sample log (proto/rtloop/telemetry/v1/record.proto).
//
//   Result<std::unique_ptr<Recorder>> rec = Recorder::Open({.path = "run.rtrec"}, hub, system);
//   if (!rec.ok()) return rec.status();
//   collector.AddSink(rec->get());   // batches are written from the collector thread
//   ... collector.Stop();
//   Status s = (*rec)->Close();      // trailer with the final statistics
//
//   Result<RecordContents> file = ReadRecordFile("run.rtrec");
//   // Damage (truncation, bit flips) is reported with its byte offset; what came before is kept:
//   if (!file->error.ok()) std::cerr << file->error.ToString();
//
// File layout: length-delimited Record messages: header, column-packed SampleBatch records,
// trailer; each record carries a CRC-32C. A recorder that cannot write (ENOSPC, EACCES, EIO ...)
// keeps the first error in status(), stops writing and counts what it could not record; the tasks
// and the collector carry on undisturbed.
//
// The file goes through OutputFile (output_file.h): while recording it is PATH.partial, and
// Close() renames it to PATH once the trailer is on disk. A run killed meanwhile leaves
// PATH.partial, readable up to the cut ("ends without a trailer"); a recording that failed keeps
// what it wrote in PATH.partial and never appears as PATH; Abandon() removes it.
//
// Threading: OnSamples()/OnDrainEnd() are called by the collector (one thread at a time); Close()
// after the collector stopped. status()/counters may be read from any thread. Not RT-safe: file
// I/O. RecordReader is a single-thread value.
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
#include "rtloop/telemetry/v1/record.pb.h"

namespace rtloop::telemetry {

inline constexpr char kRecordMagic[] = "rtloop-record";
inline constexpr std::uint32_t kRecordFormatVersion = 1;
// Records larger than this are treated as corruption by the reader.
inline constexpr std::uint64_t kMaxRecordBytes = 64u << 20;

struct RecorderConfig {
  std::string path;                    // file to create or replace ("-": stdout); see above
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

class Recorder final : public SampleSink {
 public:
  // Creates config.path (as PATH.partial) and writes the header (system, every task of `hub`).
  // Errors name the path and the errno. `hub` must outlive the recorder. Not RT-safe.
  static Result<std::unique_ptr<Recorder>> Open(const RecorderConfig& config,
                                                const TelemetryHub& hub, const SystemInfo& system);
  // The same into a file opened beforehand (e.g. when a run validates and opens all its outputs
  // before it starts measuring); config.path is taken from it.
  static Result<std::unique_ptr<Recorder>> Open(const RecorderConfig& config, OutputFile file,
                                                const TelemetryHub& hub, const SystemInfo& system);
  ~Recorder() override;  // Close() if not closed
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

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
  Recorder(const RecorderConfig& config, const TelemetryHub& hub, OutputFile file);
  bool WriteRecord(const v1::Record& record);  // serialize + append to buffer_
  bool WriteBytes(const char* data, std::size_t size);
  bool FlushBuffer();
  void Fail(Status status);
  void FlushTask(Pending& pending);
  void FlushAll();

  const RecorderConfig config_;
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

// Reads a recording one record at a time.
class RecordReader {
 public:
  // NotFound / PermissionDenied naming the path when it cannot be opened. Not RT-safe.
  static Result<std::unique_ptr<RecordReader>> Open(const std::string& path);
  ~RecordReader();
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  // Reads the next record into `record`: true, or false at a clean end of file. A truncated or
  // corrupt record gives DataLoss naming the byte offset where it starts and what is wrong; the
  // records before it were returned intact. After an error every later call returns the same error.
  Result<bool> Next(v1::Record* record);
  // Byte offset of the next record.
  std::uint64_t offset() const noexcept { return offset_; }

 private:
  RecordReader(std::FILE* file, std::string path) noexcept : file_(file), path_(std::move(path)) {}
  Result<bool> ReadNext(v1::Record* record);
  std::FILE* file_;
  std::string path_;
  Status error_;  // the first error: reading stops there
  std::uint64_t offset_ = 0;
  std::string payload_;
};

// A whole recording, read as far as it is intact.
struct RecordContents {
  v1::RecordHeader header;
  std::vector<v1::SampleBatch> batches;
  std::optional<v1::RecordTrailer> trailer;
  // OK, or what was wrong (DataLoss with the byte offset; a missing trailer is reported as
  // DataLoss "... ends without a trailer" at the file size).
  Status error;
  std::uint64_t valid_bytes = 0;  // bytes of intact records
};

// Reads `path`. Fails (NotFound, PermissionDenied, DataLoss) only when the file cannot be opened or
// has no valid header; later damage goes to RecordContents::error. Not RT-safe.
Result<RecordContents> ReadRecordFile(const std::string& path);

// CRC-32C (Castagnoli), as used in record files.
std::uint32_t Crc32c(const void* data, std::size_t size, std::uint32_t crc = 0) noexcept;

}  // namespace rtloop::telemetry
