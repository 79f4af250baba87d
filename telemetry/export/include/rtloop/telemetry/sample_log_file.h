// Reading a sample log as rtloop.telemetry.v1 messages: one record at a time (ReadRecord) or a
// whole file (ReadSampleLog). Part of rtloop::telemetry (it needs the generated protobuf code);
// the framing and CRC checks are the core's SampleLogReader (sample_log.h).
//
//   Result<SampleLogContents> file = ReadSampleLog("run.rtlog");
//   if (!file.ok()) return file.status();                  // missing, not a sample log, ...
//   if (!file->error.ok()) Warn(file->error);               // damage after the header
//   for (const v1::SampleBatch& b : file->batches) Use(b);  // everything before the damage
//
// Threading: pure functions and single-thread values. Not RT-safe: file I/O, allocation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rtloop/framework/status.h"
#include "rtloop/telemetry/sample_log.h"
#include "rtloop/telemetry/v1/record.pb.h"

namespace rtloop::telemetry {

// Reads the next record of `reader` into `record`: true, false at a clean end, or the reader's
// DataLoss (and DataLoss for bytes that pass the CRC but do not parse as a Record).
Result<bool> ReadRecord(SampleLogReader& reader, v1::Record* record);

// A whole sample log, read as far as it is intact.
struct SampleLogContents {
  v1::RecordHeader header;
  std::vector<v1::SampleBatch> batches;
  std::optional<v1::RecordTrailer> trailer;
  // OK, or what was wrong (DataLoss with the byte offset; a missing trailer is reported as
  // DataLoss "... ends without a trailer" at the file size).
  Status error;
  std::uint64_t valid_bytes = 0;  // bytes of intact records
};

// Reads `path`. Fails (NotFound, PermissionDenied, DataLoss) only when the file cannot be opened or
// has no valid header; later damage goes to SampleLogContents::error.
Result<SampleLogContents> ReadSampleLog(const std::string& path);

}  // namespace rtloop::telemetry
