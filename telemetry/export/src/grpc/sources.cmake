# gRPC service and client sources of rtloop_telemetry (owned by the gRPC issue's work). Only
# server.cc, server_core.cc, outlier_stream.cc and client.cc include gRPC's C++ headers (each costs seconds to compile); grpc_log.cc
# only gRPC's small C logging header; the rest none.
target_sources(rtloop_telemetry PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/grpc_log.cc  # gRPC's log lines off stderr unless asked
  ${CMAKE_CURRENT_LIST_DIR}/outlier_fill.cc  # ListOutliers and TaskStats.outliers (no gRPC)
  ${CMAKE_CURRENT_LIST_DIR}/outlier_stream.cc  # WatchOutliers: the records as they are made
  ${CMAKE_CURRENT_LIST_DIR}/service_fill.cc
  ${CMAKE_CURRENT_LIST_DIR}/server.cc       # the grpc::Server: build, restart, finish, stop
  ${CMAKE_CURRENT_LIST_DIR}/server_core.cc  # the service, its stream reactors, the pump
  ${CMAKE_CURRENT_LIST_DIR}/client.cc
)
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/service_fill.cc PROPERTIES
  COMPILE_DEFINITIONS RTLOOP_VERSION_STRING="${PROJECT_VERSION}")
