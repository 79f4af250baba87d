// The HTTP endpoint's address check, apart from http_server.cc so that a program checks an
// address (rtloop-cyclic --metrics=HOST:PORT, Runtime::Check) without linking civetweb: a lean
// rtloop-cyclic hands a run that serves over to rtloop-cyclic-full (bench/cyclic/README.md).
//
//   Status s = rtloop::telemetry::CheckHttpAddress("0.0.0.0:9101");  // OK
//
// Threading: pure functions, any thread.
#include "net_util.h"
#include "rtloop/telemetry/http_server.h"

namespace rtloop::telemetry {
namespace internal {

Result<HostPort> ParseHttpAddress(std::string_view address) {
  Result<HostPort> hp = ParseAddress(address, AddressRole::kListen);
  if (hp.ok() && hp->host.find(':') != std::string::npos) {
    return InvalidArgumentError("bad address \"" + std::string(address) +
                                "\": Debian's civetweb is built without IPv6; use an IPv4 "
                                "address (127.0.0.1, 0.0.0.0 or the board's LAN address)");
  }
  return hp;
}

}  // namespace internal

Status CheckHttpAddress(std::string_view address) {
  return internal::ParseHttpAddress(address).status();
}

}  // namespace rtloop::telemetry
