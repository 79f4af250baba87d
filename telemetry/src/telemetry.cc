// rtloop_telemetry's own translation unit: the library is the core's objects
// (rtloop_telemetry_core) plus the gRPC sources added by src/grpc/sources.cmake; add_library()
// needs at least one source.
namespace rtloop::telemetry {}
