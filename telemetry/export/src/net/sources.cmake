# What both servers (gRPC, src/grpc/; HTTP, src/http/) and the gRPC client share, without gRPC or
# civetweb headers: address parsing and loopback detection, the bearer-token check, the bind probe
# (net_util.h) and the per-client request rate limit (rate_limiter.h). Internal to
# rtloop_telemetry: its sources include them as "net_util.h" and "rate_limiter.h".
target_sources(rtloop_telemetry PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/net_util.cc
  ${CMAKE_CURRENT_LIST_DIR}/rate_limiter.cc  # per-client request rate, both servers
)
target_include_directories(rtloop_telemetry PRIVATE ${CMAKE_CURRENT_LIST_DIR})
