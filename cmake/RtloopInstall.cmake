# cmake --install gives a relocatable `rtloop` package and the tools (rtloop-cyclic, rtloop-top,
# rtloop-bench).
# find_package(rtloop) then link:
#   rtloop::framework        the executor alone
#   rtloop::readiness        + the readiness checks of `rtloop-bench doctor` (framework/readiness)
#   rtloop::telemetry_core   + hub, rings, histograms, collector, task reports, file I/O (no
#                            protobuf or gRPC: telemetry/core)
#   rtloop::explain          + outlier explanation: why a cycle was late (telemetry/explain)
#   rtloop::telemetry        + gRPC server/client, HTTP endpoint, proto conversions, sample log
#                            (brings rtloop::proto and gRPC: telemetry/export)
#   rtloop::runtime          + rtloop::Runtime: what an application links; it includes
#                            "rtloop/rtloop.h" (telemetry/runtime/README.md)
include(CMakePackageConfigHelpers)

set(RTLOOP_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/rtloop)
set(_rtloop_installed_targets rtloop_framework)
foreach(t rtloop_readiness rtloop_proto rtloop_proto_grpc rtloop_telemetry_core rtloop_explain
          rtloop_telemetry rtloop_runtime)
  if(TARGET ${t})
    list(APPEND _rtloop_installed_targets ${t})
  endif()
endforeach()

# Shared libraries (-DBUILD_SHARED_LIBS=ON, as the Debian packages build them) carry an soname
# that changes with every minor version while rtloop is 0.x (librtloop_framework.so.0.1).
set_target_properties(${_rtloop_installed_targets} PROPERTIES
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})

# Install components (the Debian packages, cmake/RtloopPackaging.cmake): "runtime" holds the
# shared libraries and the tools, "dev" everything an application builds against.
install(TARGETS ${_rtloop_installed_targets} EXPORT rtloopTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/framework/include/rtloop
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/framework/readiness/include/rtloop
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/telemetry/core/include/rtloop
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/telemetry/export/include/rtloop
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/telemetry/explain/include/rtloop
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/telemetry/runtime/include/rtloop
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(EXPORT rtloopTargets NAMESPACE rtloop:: DESTINATION ${RTLOOP_INSTALL_CMAKEDIR}
        COMPONENT dev)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/rtloopConfig.cmake.in
  ${PROJECT_BINARY_DIR}/rtloopConfig.cmake INSTALL_DESTINATION ${RTLOOP_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rtloopConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/rtloopConfig.cmake ${PROJECT_BINARY_DIR}/rtloopConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/FindConcurrentQueue.cmake
        DESTINATION ${RTLOOP_INSTALL_CMAKEDIR} COMPONENT dev)

# On a board (examples/board/README.md): the systemd unit for an rtloop application and its guide.
install(FILES ${PROJECT_SOURCE_DIR}/examples/board/rtloop-app@.service
        DESTINATION ${CMAKE_INSTALL_DATADIR}/rtloop/systemd COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/examples/board/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}
        RENAME on-a-board.md COMPONENT runtime)
