// Fuzzes the bounded reader of token, TLS and configuration files (input_file.h) with file
// contents: ReadTokenFile and CheckBearerToken, and ReadInputFile with a small limit. A token the
// reader accepts must be one a server can be given and a client can send: printable ASCII without
// spaces, at most kMaxBearerTokenBytes, and exactly what the gRPC server's "Bearer <token>" check
// (net_util.h) and the HTTP endpoint's (http_request.h) take.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "http_request.h"
#include "net_util.h"
#include "rtloop/telemetry/input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static rtloop::fuzz::MemoryFile file;
  const std::string path = file.Write(data, size);
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  const rtloop::Result<std::string> token = rtloop::telemetry::ReadTokenFile(path);
  if (token.ok()) {
    RTLOOP_FUZZ_CHECK(!token->empty() && token->size() <= rtloop::telemetry::kMaxBearerTokenBytes);
    for (const char c : *token) RTLOOP_FUZZ_CHECK(c > 0x20 && c < 0x7f);
    RTLOOP_FUZZ_CHECK(bytes.find(*token) != std::string_view::npos);
    const std::string header = "Bearer " + *token;
    const auto grpc_token = rtloop::telemetry::internal::BearerToken(header);
    RTLOOP_FUZZ_CHECK(grpc_token && *grpc_token == *token);
    RTLOOP_FUZZ_CHECK(rtloop::telemetry::internal::BearerMatches(header.c_str(), *token));
  } else {
    RTLOOP_FUZZ_CHECK(!token.status().message().empty());
  }
  // The same rules on the raw bytes, as a config's token value would be checked.
  const rtloop::Status raw = rtloop::telemetry::CheckBearerToken(bytes, "fuzz");
  RTLOOP_FUZZ_CHECK(raw.ok() || raw.code() == rtloop::StatusCode::kInvalidArgument);

  const rtloop::Result<std::string> small =
      rtloop::telemetry::ReadInputFile(path, {.what = "fuzz file", .max_bytes = 256});
  if (small.ok()) {
    RTLOOP_FUZZ_CHECK(*small == bytes);
  } else {
    RTLOOP_FUZZ_CHECK(size == 0 || size > 256);
  }
  return 0;
}
