# Every dependency comes from a Debian 12 package (see README "Development"); nothing is downloaded.
find_package(Threads REQUIRED)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
# The HTTP endpoint (telemetry/src/http): civetweb serves, prometheus-cpp's core writes /metrics.
find_package(civetweb CONFIG REQUIRED)
find_package(prometheus-cpp CONFIG REQUIRED)
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
