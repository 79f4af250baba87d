#!/usr/bin/env bash
# rtloop developer entry point: installs the Debian 12 packages the build needs (only those
# missing), configures and builds into build/, then runs the main job or the tests.
#
#   cmake/dev.sh run [ARGS...]   install, build, run the main job (the README's Quick start)
#   cmake/dev.sh test            install, build, run every test (ctest)
#   cmake/dev.sh deps | build    just that step
#
# Environment: BUILD_DIR (default build), RTLOOP_CMAKE_ARGS (extra -D options), JOBS.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libeigen3-dev libconcurrentqueue-dev
  libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libgtest-dev libgmock-dev libbenchmark-dev
  procps
  openssl  # tests: generates the TLS test certificate
  python3-grpcio python3-grpc-tools  # tests: the README's Python telemetry client (tests/examples)
  python3-pkg-resources  # grpc_tools.protoc imports it; Debian 12's python3-grpc-tools does not depend on it
  nlohmann-json3-dev  # rtloop-bench: result.json, cyclictest --json input; tests: Prometheus replies, the Grafana dashboard
  stress-ng stress rt-tests iperf3  # rtloop-bench's load scenarios (rt-tests: hackbench) and tests
  gnuplot-nox  # rtloop-bench: plot.png, max-over-time.png
  libtomlplusplus-dev  # examples/plc: its task configuration is a TOML file (toml++)
  libgpiod-dev  # examples/gpio_toggle: drives a GPIO line through libgpiod v1 (optional in CMake)
  libcivetweb-dev     # the HTTP endpoint (telemetry/src/http) is served by civetweb
  prometheus-cpp-dev  # /metrics: prometheus-cpp's core and its TextSerializer
  libjs-dygraphs      # the live page's charts, embedded into the library at build time
  prometheus          # tests: a real Prometheus server scrapes /metrics; promtool lints it
  chromium            # tests: the live page in headless Chromium (DOM, console, screenshot)
  fonts-dejavu-core   # tests: text in Chromium's screenshot of the page
)

die() { echo "cmake/dev.sh: $*" >&2; exit 2; }

install_deps() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  local sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null || die "missing packages (${missing[*]}) and not root: run as root or install sudo"
    sudo=(sudo)
  fi
  command -v apt-get >/dev/null || die "apt-get not found: rtloop's build expects Debian 12 packages (${missing[*]})"
  echo "cmake/dev.sh: installing ${missing[*]}" >&2
  "${sudo[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
}

build() {
  # shellcheck disable=SC2086  # RTLOOP_CMAKE_ARGS is a list of -D options
  cmake -S . -B "$BUILD_DIR" -G Ninja ${RTLOOP_CMAKE_ARGS:-}
  cmake --build "$BUILD_DIR" -j "$JOBS"
}

# The main job's embedded defaults (README "Quick start"): one measuring thread per CPU (-S) at
# SCHED_FIFO 99 with memory locked, 1000 us interval on every thread (-d0), 10 s, cyclictest's
# -q summary, then our percentile table, with the gRPC telemetry API served on 127.0.0.1:50051
# meanwhile (watch it with build/bin/rtloop-top). Extra ARGS are appended (later options win).
MAIN_DEFAULTS=(-S -m -p 99 -i 1000 -d 0 -D 10s -q --percentiles --telemetry)

run_main() {
  exec "$BUILD_DIR/bin/rtloop-cyclic" "${MAIN_DEFAULTS[@]}" "$@"
}

run_tests() {
  ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 600
}

case "${1:-}" in
  deps) install_deps ;;
  build) install_deps; build ;;
  run) shift; install_deps; build; run_main "$@" ;;
  test) install_deps; build; run_tests ;;
  *) die "usage: cmake/dev.sh run [ARGS...] | test | deps | build" ;;
esac
