# Every dependency comes from a Debian 12 package (see README "Development"); nothing is downloaded.
find_package(Threads REQUIRED)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
# The HTTP endpoint (telemetry/export/src/http): civetweb serves, prometheus-cpp's core writes /metrics.
# The static tools have none (Debian 12 ships no static civetweb/prometheus-cpp).
if(RTLOOP_STATIC_TOOLS AND RTLOOP_HTTP)
  message(STATUS "RTLOOP_STATIC_TOOLS=ON: building without the HTTP endpoint (RTLOOP_HTTP=OFF)")
  set(RTLOOP_HTTP OFF)
endif()
if(NOT RTLOOP_HTTP)
  # nothing: telemetry/export/src/http/sources.cmake builds http_server_absent.cc
elseif(CMAKE_CROSSCOMPILING)
  # Debian 12's prometheus-cpp-dev cannot be installed for a second architecture: it depends on
  # the civetweb program, which is not Multi-Arch. A cross build links the target's
  # libprometheus-cpp-core1.0:<arch> (Multi-Arch: same) with the build machine's headers
  # (prometheus-cpp-dev), which are the same on every architecture.
  find_package(prometheus-cpp CONFIG QUIET)
  find_package(civetweb CONFIG REQUIRED)
  if(NOT TARGET prometheus-cpp::core)
    find_library(RTLOOP_PROMETHEUS_CORE_LIBRARY
                 NAMES prometheus-cpp-core libprometheus-cpp-core.so.1.0)
    find_path(RTLOOP_PROMETHEUS_INCLUDE_DIR prometheus/text_serializer.h)
    if(NOT RTLOOP_PROMETHEUS_CORE_LIBRARY OR NOT RTLOOP_PROMETHEUS_INCLUDE_DIR)
      message(FATAL_ERROR "prometheus-cpp for ${CMAKE_LIBRARY_ARCHITECTURE} not found: apt-get "
              "install prometheus-cpp-dev libprometheus-cpp-core1.0:<arch> (cmake/README.md)")
    endif()
    add_library(prometheus-cpp::core SHARED IMPORTED GLOBAL)
    set_target_properties(prometheus-cpp::core PROPERTIES
      IMPORTED_LOCATION "${RTLOOP_PROMETHEUS_CORE_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${RTLOOP_PROMETHEUS_INCLUDE_DIR}")
  endif()
else()
  find_package(civetweb CONFIG REQUIRED)
  find_package(prometheus-cpp CONFIG REQUIRED)
endif()
if(RTLOOP_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
  include(GoogleTest)
endif()
if(RTLOOP_BUILD_BENCH)
  find_package(benchmark CONFIG REQUIRED)
endif()
include(FindConcurrentQueue)
if(RTLOOP_BUILD_EXAMPLES)
  # examples/plc reads its task configuration with toml++ (libtomlplusplus-dev).
  find_package(tomlplusplus CONFIG REQUIRED)
  # examples/gpio_toggle drives a GPIO line with libgpiod v1 (libgpiod-dev) when it is there;
  # without it the example still builds, with its LED and --sim outputs only.
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(GPIOD IMPORTED_TARGET libgpiod)
endif()
if(RTLOOP_STATIC_TOOLS)
  include(RtloopStaticTools)
endif()
