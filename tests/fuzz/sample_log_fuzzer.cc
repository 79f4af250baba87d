// Fuzzes the sample-log reader (sample_log.h: framing and CRC; sample_log_file.h: the records as
// rtloop.telemetry.v1 messages) and its consumer in rtloop-bench plot (plots.h SampleLogPlot). An
// even first byte takes the rest as the file itself; an odd one as record bodies, each a 2-byte
// little-endian length and that many bytes, which the fuzzer frames with valid length prefixes and
// CRC-32C, so that mutations reach the message parser and what uses the messages instead of
// stopping at the checksum. Any file must give its intact records and one DataLoss (or a refusal
// naming the file), never a crash, undefined behaviour or an allocation the file does not hold.
#include <google/protobuf/stubs/logging.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "plots.h"
#include "rtloop/telemetry/sample_log.h"
#include "rtloop/telemetry/sample_log_file.h"

namespace {

void AppendVarint(std::string* out, std::uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Record bodies -> a sample log with valid framing (as SampleLogWriter::AppendRecord frames them).
std::string Frame(const std::uint8_t* data, std::size_t size) {
  std::string out;
  std::size_t at = 0;
  while (at + 2 <= size) {
    const std::size_t len = std::min<std::size_t>(
        std::size_t{data[at]} | (std::size_t{data[at + 1]} << 8), size - at - 2);
    const std::string body(reinterpret_cast<const char*>(data) + at + 2, len);
    at += 2 + len;
    AppendVarint(&out, body.size() + 5);
    out += body;
    out.push_back(static_cast<char>((15u << 3) | 5u));  // field 15, fixed32: the CRC
    const std::uint32_t crc = rtloop::telemetry::Crc32c(body.data(), body.size());
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(crc >> (8 * i)));
  }
  return out;
}

}  // namespace

// protobuf logs every string field that is not UTF-8 on stderr: quiet, the reader reports it.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return -1;
  static rtloop::fuzz::MemoryFile file;
  const std::string bytes = data[0] % 2 == 0
                                ? std::string(reinterpret_cast<const char*>(data) + 1, size - 1)
                                : Frame(data + 1, size - 1);
  const std::string path =
      file.Write(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  const rtloop::Result<rtloop::telemetry::SampleLogContents> log =
      rtloop::telemetry::ReadSampleLog(path);
  if (!log.ok()) {
    RTLOOP_FUZZ_CHECK(!log.status().message().empty());
  } else {
    RTLOOP_FUZZ_CHECK(log->valid_bytes <= bytes.size());
    RTLOOP_FUZZ_CHECK(log->error.ok() || !log->error.message().empty());
  }
  // rtloop-bench plot RUN.rtlog: the same file, turned into a histogram and max-over-time windows.
  rtloop::bench::LatencyData histogram;
  rtloop::bench::MaxOverTime windows;
  (void)rtloop::bench::SampleLogPlot(path, "fuzz", &histogram, &windows);
  return 0;
}
