#include "rtloop/telemetry/sample_log.h"

#include <time.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "rtloop/telemetry/proto_convert.h"
#include "rtloop/telemetry/utf8.h"
#include "rtloop/telemetry/v1/record.pb.h"

namespace rtloop::telemetry {
namespace {

constexpr std::uint8_t kCrcTag = (15u << 3) | 5u;  // field 15, wire type fixed32
constexpr std::size_t kCrcTrailerBytes = 5;
constexpr std::size_t kWriteBufferBytes = 1u << 20;

constexpr std::array<std::uint32_t, 256> MakeCrcTable() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<std::uint32_t, 256> kCrcTable = MakeCrcTable();

std::int64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void AppendVarint(std::string* out, std::uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

std::string Offset(std::uint64_t offset) { return "byte offset " + std::to_string(offset); }

// The serialized bytes of `record`; empty when protobuf cannot serialize it.
std::string Serialize(const v1::Record& record) {
  std::string body;
  if (!record.SerializeToString(&body)) body.clear();
  return body;
}

}  // namespace

std::uint32_t Crc32c(const void* data, std::size_t size, std::uint32_t crc) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (std::size_t i = 0; i < size; ++i) crc = kCrcTable[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
  return ~crc;
}

// ---------------------------------------------------------------------------------------------
// SampleLogWriter

struct SampleLogWriter::Pending {
  TaskId task = 0;
  std::vector<Sample> samples;
};

Result<std::unique_ptr<SampleLogWriter>> SampleLogWriter::Open(const SampleLogConfig& config,
                                                               const TelemetryHub& hub,
                                                               const SystemInfo& system) {
  if (config.path.empty()) {
    return InvalidArgumentError("sample log path is empty: give a file name to record to");
  }
  // Binary: never standard output, where a program's text goes too ('-' is refused, and the
  // messages do not offer it). A program whose stdout is the log alone opens an OutputFile itself.
  Result<OutputFile> file =
      OutputFile::Open(config.path, {.what = "recording", .allow_stdout = false});
  if (!file.ok()) return file.status();
  return Open(config, std::move(*file), hub, system);
}

Result<std::unique_ptr<SampleLogWriter>> SampleLogWriter::Open(const SampleLogConfig& config,
                                                               OutputFile file,
                                                               const TelemetryHub& hub,
                                                               const SystemInfo& system) {
  if (config.batch_samples == 0) {
    return InvalidArgumentError("SampleLogConfig::batch_samples must be > 0");
  }
  if (!file.is_open()) {
    return InvalidArgumentError("SampleLogWriter::Open: the output file is not open");
  }
  SampleLogConfig cfg = config;
  cfg.path = file.target().path;
  std::unique_ptr<SampleLogWriter> rec(new SampleLogWriter(cfg, hub, std::move(file)));
  v1::Record record;
  v1::RecordHeader* h = record.mutable_header();
  h->set_magic(kSampleLogMagic);
  h->set_format_version(kSampleLogFormatVersion);
  h->set_tool_name(ToValidUtf8(config.tool_name));
  h->set_tool_version(config.tool_version);
  h->set_command_line(config.command_line);
  h->set_start_realtime_ns(ClockNs(CLOCK_REALTIME));
  h->set_start_monotonic_ns(ClockNs(CLOCK_MONOTONIC));
  ToProto(system, h->mutable_system());
  for (const TaskReport& r : MakeTaskReports(nullptr, &hub, {.histograms = false})) {
    ToProto(r.id, r.info.config, r.stats.state, h->add_tasks());
  }
  // Written at once: a run killed before its first flush still leaves a readable file (a header
  // and "ends without a trailer"). A write error surfaces in status() and stops recording.
  if (rec->AppendRecord(Serialize(record))) rec->FlushBuffer();
  return rec;
}

SampleLogWriter::SampleLogWriter(const SampleLogConfig& config, const TelemetryHub& hub,
                                 OutputFile file)
    : config_(config),
      hub_(hub),
      file_(std::move(file)),
      last_flush_(std::chrono::steady_clock::now()) {
  buffer_.reserve(kWriteBufferBytes + (64u << 10));
}

SampleLogWriter::~SampleLogWriter() { (void)Close(); }

void SampleLogWriter::OnSamples(TaskId task, std::span<const Sample> samples) {
  if (closed_ || failed()) {
    samples_not_recorded_.fetch_add(samples.size(), std::memory_order_relaxed);
    return;
  }
  if (task >= pending_.size()) pending_.resize(std::size_t{task} + 1);
  if (!pending_[task]) {
    pending_[task] = std::make_unique<Pending>();
    pending_[task]->task = task;
    pending_[task]->samples.reserve(config_.batch_samples);
  }
  Pending& p = *pending_[task];
  for (const Sample& s : samples) {
    if (!p.samples.empty() && s.seq != p.samples.front().seq + p.samples.size()) FlushTask(p);
    p.samples.push_back(s);
    if (p.samples.size() >= config_.batch_samples) FlushTask(p);
  }
}

void SampleLogWriter::OnDrainEnd() {
  if (closed_ || failed()) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_flush_ < config_.flush_interval) return;
  last_flush_ = now;
  FlushAll();
  FlushBuffer();
}

void SampleLogWriter::FlushTask(Pending& pending) {
  if (pending.samples.empty()) return;
  const std::size_t n = pending.samples.size();
  if (failed()) {
    samples_not_recorded_.fetch_add(n, std::memory_order_relaxed);
  } else {
    v1::Record record;
    ToProto(pending.task, 0, pending.samples, record.mutable_batch());
    buffered_samples_ += n;
    ++batches_recorded_;
    AppendRecord(Serialize(record));
  }
  pending.samples.clear();
}

void SampleLogWriter::FlushAll() {
  for (std::unique_ptr<Pending>& p : pending_) {
    if (p) FlushTask(*p);
  }
}

bool SampleLogWriter::AppendRecord(const std::string& body) {
  if (failed()) return false;
  if (body.empty()) {  // a Record always has a body: empty means it did not serialize
    Fail(InternalError("cannot serialize a record for \"" + config_.path + "\""));
    return false;
  }
  const std::uint32_t crc = Crc32c(body.data(), body.size());
  AppendVarint(&buffer_, body.size() + kCrcTrailerBytes);
  buffer_.append(body);
  buffer_.push_back(static_cast<char>(kCrcTag));
  for (int i = 0; i < 4; ++i) buffer_.push_back(static_cast<char>((crc >> (8 * i)) & 0xffu));
  if (buffer_.size() >= kWriteBufferBytes) return FlushBuffer();
  return true;
}

bool SampleLogWriter::WriteBytes(const char* data, std::size_t size) {
  const Status s = file_.Write(std::string_view(data, size));
  if (!s.ok()) Fail(s);
  return s.ok();
}

bool SampleLogWriter::FlushBuffer() {
  // Every sample in buffer_ ends up in exactly one of the two counters, whatever failed and when.
  const bool ok = !failed() && WriteBytes(buffer_.data(), buffer_.size());
  buffer_.clear();
  (ok ? samples_recorded_ : samples_not_recorded_)
      .fetch_add(buffered_samples_, std::memory_order_relaxed);
  buffered_samples_ = 0;
  return ok;
}

void SampleLogWriter::Fail(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    if (!status_.ok()) return;
    status_ = status;
  }
  failed_.store(true, std::memory_order_release);
  if (config_.on_error) {
    config_.on_error(status);
  } else {
    std::fprintf(stderr, "rtloop: the sample log stopped, the tasks keep running: %s\n",
                 status.ToString().c_str());
  }
}

Status SampleLogWriter::status() const {
  std::lock_guard<std::mutex> lock(status_mu_);
  return status_;
}

Status SampleLogWriter::Close() {
  if (closed_) return status();
  FlushAll();
  if (!failed()) {
    v1::Record record;
    v1::RecordTrailer* tr = record.mutable_trailer();
    tr->set_end_realtime_ns(ClockNs(CLOCK_REALTIME));
    tr->set_end_monotonic_ns(ClockNs(CLOCK_MONOTONIC));
    const std::int64_t now_rt = ClockNs(CLOCK_REALTIME);
    for (const TaskReport& snap : hub_.SnapshotAll()) {
      v1::TaskStats* st = tr->add_stats();
      ToProto(snap, st);
      st->set_timestamp_ns(now_rt);
      const TaskTelemetry* t = hub_.task(snap.id);
      ToProto(snap.id, v1::QUANTITY_WAKEUP_LATENCY, t->latency(), tr->add_histograms());
      ToProto(snap.id, v1::QUANTITY_EXECUTION_TIME, t->execution(), tr->add_histograms());
    }
    tr->set_samples_recorded(samples_recorded() + buffered_samples_);
    tr->set_batches_recorded(batches_recorded_);
    tr->set_samples_not_recorded(samples_not_recorded());
    AppendRecord(Serialize(record));
  }
  FlushBuffer();
  closed_ = true;
  if (!failed()) {
    // A failed sync or rename keeps PATH.partial: the samples in it are still readable.
    const Status s = file_.Commit(config_.fsync_on_close, /*keep_partial_on_error=*/true);
    if (!s.ok()) Fail(s);
  } else {
    (void)file_.KeepPartial();
  }
  Status s = status();
  if (s.ok() || file_.target().kind != OutputKind::kRegular) return s;
  return Status(s.code(),
                s.message() + "; the " + std::to_string(samples_recorded()) +
                    " samples recorded before are in '" + file_.target().partial_path + "'",
                s.sys_errno());
}

void SampleLogWriter::Abandon() {
  if (closed_) return;
  closed_ = true;
  file_.Discard();
  for (std::unique_ptr<Pending>& p : pending_) {
    if (p) p->samples.clear();
  }
  buffer_.clear();
  buffered_samples_ = 0;
}

// ---------------------------------------------------------------------------------------------
// SampleLogReader

Result<std::unique_ptr<SampleLogReader>> SampleLogReader::Open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rbe");
  if (f == nullptr) {
    return ErrnoError(errno, "cannot open sample log \"" + path + "\"",
                      "check the path and its permissions");
  }
  return std::unique_ptr<SampleLogReader>(new SampleLogReader(f, path));
}

SampleLogReader::~SampleLogReader() {
  if (file_ != nullptr) std::fclose(file_);
}

Result<bool> SampleLogReader::Next(std::string* record) {
  if (!error_.ok()) return error_;
  record_offset_ = offset_;
  Result<bool> next = ReadNext(record);
  if (!next.ok()) error_ = next.status();
  return next;
}

Result<bool> SampleLogReader::ReadNext(std::string* payload) {
  const std::uint64_t start = offset_;
  std::uint64_t length = 0;
  int shift = 0;
  std::uint64_t pos = start;
  for (;;) {
    const int c = std::fgetc(file_);
    if (c == EOF) {
      if (std::ferror(file_)) {
        return ErrnoError(errno, "cannot read sample log \"" + path_ + "\" at " + Offset(pos));
      }
      if (pos == start) return false;  // clean end between records
      return DataLossError("sample log \"" + path_ + "\" is truncated: the record at " +
                           Offset(start) + " ends inside its length prefix");
    }
    ++pos;
    length |= static_cast<std::uint64_t>(c & 0x7f) << shift;
    if ((c & 0x80) == 0) break;
    shift += 7;
    if (shift > 63) {
      return DataLossError("sample log \"" + path_ + "\" is corrupt: the record at " +
                           Offset(start) + " has an invalid length prefix");
    }
  }
  if (length < kCrcTrailerBytes || length > kMaxRecordBytes) {
    return DataLossError("sample log \"" + path_ + "\" is corrupt: the record at " + Offset(start) +
                         " claims " + std::to_string(length) + " bytes (expected " +
                         std::to_string(kCrcTrailerBytes) + " .. " +
                         std::to_string(kMaxRecordBytes) + ")");
  }
  // Bounded above, so it fits a 32-bit size_t too (armhf).
  const auto bytes = static_cast<std::size_t>(length);
  payload->resize(bytes);
  const std::size_t got = std::fread(payload->data(), 1, bytes, file_);
  if (got != bytes) {
    if (std::ferror(file_)) {
      return ErrnoError(errno, "cannot read sample log \"" + path_ + "\" at " + Offset(pos));
    }
    return DataLossError("sample log \"" + path_ + "\" is truncated: the record at " +
                         Offset(start) + " needs " + std::to_string(length) +
                         " bytes but the file ends after " + std::to_string(got) +
                         " (at byte offset " + std::to_string(pos + got) + ")");
  }
  const std::size_t body = bytes - kCrcTrailerBytes;
  std::uint32_t stored = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    stored |= static_cast<std::uint32_t>(static_cast<unsigned char>((*payload)[body + 1 + i]))
              << (8 * i);
  }
  const std::uint32_t computed = Crc32c(payload->data(), body);
  if (static_cast<unsigned char>((*payload)[body]) != kCrcTag || stored != computed) {
    return DataLossError("sample log \"" + path_ +
                         "\" is corrupt: checksum mismatch in the record at " + Offset(start) +
                         " (" + std::to_string(length) + " bytes)");
  }
  offset_ = pos + length;
  return true;
}

}  // namespace rtloop::telemetry
