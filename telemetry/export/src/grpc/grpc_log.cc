#include "grpc_log.h"

#include <grpc/support/log.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace rtloop::telemetry::internal {
namespace {

struct LogState {
  std::mutex mu;
  bool verbose = false;
  std::string last_error;                          // guarded by mu
  std::map<int, AcceptFailureListener> listeners;  // guarded by mu
  int next_id = 1;                                 // guarded by mu
};

LogState& State() {
  static LogState* state = new LogState();  // never destroyed: gRPC may log during exit
  return *state;
}

bool EnvSet(const char* name, bool zero_means_off) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return false;
  return !(zero_means_off && std::strcmp(v, "0") == 0);
}

void OnGrpcLog(gpr_log_func_args* args) {
  LogState& s = State();
  const char* message = args->message != nullptr ? args->message : "";
  std::lock_guard lock(s.mu);
  if (s.verbose) {
    const char* file = args->file != nullptr ? args->file : "?";
    std::fprintf(stderr, "gRPC %s %s:%d] %s\n", gpr_log_severity_string(args->severity), file,
                 args->line, message);
  }
  if (args->severity != GPR_LOG_SEVERITY_ERROR) return;
  s.last_error = message;
  if (std::strstr(message, "Failed accept4") != nullptr) {
    for (const auto& [id, listener] : s.listeners) listener(message);
  }
}

}  // namespace

void SetUpGrpcLogging() {
  static std::once_flag once;
  std::call_once(once, [] {
    LogState& s = State();
    {
      std::lock_guard lock(s.mu);
      s.verbose = EnvSet("RTLOOP_GRPC_VERBOSE", true) || EnvSet("GRPC_VERBOSITY", false) ||
                  EnvSet("GRPC_TRACE", false);
    }
    gpr_set_log_function(&OnGrpcLog);
  });
}

std::string LastGrpcError() {
  LogState& s = State();
  std::lock_guard lock(s.mu);
  return s.last_error;
}

int AddAcceptFailureListener(AcceptFailureListener listener) {
  LogState& s = State();
  std::lock_guard lock(s.mu);
  const int id = s.next_id++;
  s.listeners.emplace(id, std::move(listener));
  return id;
}

void RemoveAcceptFailureListener(int id) {
  LogState& s = State();
  std::lock_guard lock(s.mu);  // a running call holds the lock: it has returned once we get it
  s.listeners.erase(id);
}

}  // namespace rtloop::telemetry::internal
