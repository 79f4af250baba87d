# gRPC service and client sources of rtloop_telemetry (owned by the gRPC issue's work). Only
# server.cc and client.cc include gRPC headers (each costs seconds to compile); the rest does not.
target_sources(rtloop_telemetry PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/net_util.cc
  ${CMAKE_CURRENT_LIST_DIR}/service_fill.cc
  ${CMAKE_CURRENT_LIST_DIR}/server.cc
  ${CMAKE_CURRENT_LIST_DIR}/client.cc
)
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/service_fill.cc PROPERTIES
  COMPILE_DEFINITIONS RTLOOP_VERSION_STRING="${PROJECT_VERSION}")
