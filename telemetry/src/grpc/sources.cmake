# gRPC service and client sources of rtloop_telemetry (owned by the gRPC issue's work).
target_sources(rtloop_telemetry PRIVATE)
