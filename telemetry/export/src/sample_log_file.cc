#include "rtloop/telemetry/sample_log_file.h"

#include <string>
#include <utility>

namespace rtloop::telemetry {
namespace {

std::string Offset(std::uint64_t offset) { return "byte offset " + std::to_string(offset); }

// The first record: a header with the magic and a format this code understands.
Status CheckHeader(const std::string& path, const v1::Record& record) {
  if (!record.has_header() || record.header().magic() != kSampleLogMagic) {
    return DataLossError("\"" + path +
                         "\" is not an rtloop sample log: the first record is not a " +
                         "header with magic \"" + kSampleLogMagic + "\"");
  }
  if (record.header().format_version() > kSampleLogFormatVersion) {
    return InvalidArgumentError("sample log \"" + path + "\" has format version " +
                                std::to_string(record.header().format_version()) +
                                "; this reader understands up to " +
                                std::to_string(kSampleLogFormatVersion) + ": use a newer rtloop");
  }
  return Status::Ok();
}

// Files `record` (read at `at`) into `contents`; a Status when it cannot follow what came before.
Status Add(const std::string& path, std::uint64_t at, v1::Record& record,
           SampleLogContents* contents) {
  if (contents->trailer) {
    return DataLossError("sample log \"" + path +
                         "\" is corrupt: a record follows the trailer at " + Offset(at));
  }
  if (record.has_batch()) {
    contents->batches.push_back(std::move(*record.mutable_batch()));
  } else if (record.has_trailer()) {
    contents->trailer = std::move(*record.mutable_trailer());
  } else {
    return DataLossError("sample log \"" + path + "\" is corrupt: unexpected " +
                         (record.has_header() ? "second header" : "empty record") + " at " +
                         Offset(at));
  }
  return Status::Ok();
}

}  // namespace

Result<bool> ReadRecord(SampleLogReader& reader, v1::Record* record) {
  std::string bytes;
  Result<bool> next = reader.Next(&bytes);
  if (!next.ok() || !*next) return next;
  if (!record->ParseFromString(bytes)) {
    return DataLossError("sample log \"" + reader.path() + "\" is corrupt: the record at " +
                         Offset(reader.record_offset()) +
                         " does not parse as rtloop.telemetry.v1.Record");
  }
  return true;
}

Result<SampleLogContents> ReadSampleLog(const std::string& path) {
  Result<std::unique_ptr<SampleLogReader>> reader = SampleLogReader::Open(path);
  if (!reader.ok()) return reader.status();
  SampleLogReader& r = **reader;
  SampleLogContents contents;
  v1::Record record;
  Result<bool> first = ReadRecord(r, &record);
  if (!first.ok()) return first.status();
  if (!*first) return DataLossError("sample log \"" + path + "\" is empty: no header record");
  RTLOOP_RETURN_IF_ERROR(CheckHeader(path, record));
  contents.header = std::move(*record.mutable_header());
  contents.valid_bytes = r.offset();
  for (;;) {
    const std::uint64_t at = r.offset();
    Result<bool> next = ReadRecord(r, &record);
    if (!next.ok()) {
      contents.error = next.status();
      break;
    }
    if (!*next) {
      if (!contents.trailer) {
        contents.error =
            DataLossError("sample log \"" + path + "\" ends at " + Offset(at) +
                          " without a trailer: it was cut short (crash, kill or full disk); the " +
                          std::to_string(contents.batches.size()) + " batches before are intact");
      }
      break;
    }
    contents.error = Add(path, at, record, &contents);
    if (!contents.error.ok()) break;
    contents.valid_bytes = r.offset();
  }
  return contents;
}

}  // namespace rtloop::telemetry
