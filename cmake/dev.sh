#!/usr/bin/env bash
# rtloop developer entry point: installs the Debian 12 packages the build needs (only those
# missing), configures and builds into build/, then runs the main job or the tests.
#
#   cmake/dev.sh run [ARGS...]   install, build, run the main job (the README's Quick start)
#   cmake/dev.sh test            install, build, run every test (ctest, JOBS at a time; the
#                                measuring ones alone)
#   cmake/dev.sh deps | build    just that step
#   cmake/dev.sh deps --arch=arm64|armhf
#                                what a cross build for ARCH needs (the cross compiler, ARCH's
#                                multiarch libraries, qemu-user-static registered with binfmt_misc)
#   cmake/dev.sh package [--arch=amd64|arm64|armhf] [--debs]
#                                the Debian packages for that architecture (default: this
#                                machine's), cross-compiled from Debian 12's multiarch packages
#                                into build-ARCH/, written to build-ARCH/packages/ (cmake/README.md),
#                                and the static tools' tarball (not with --debs: the lab's use)
#   cmake/dev.sh test --arch=arm64|armhf
#                                the test suite built for ARCH in build-ARCH/, run under
#                                qemu-user (cmake/README.md: what skips there and why; .ci/run
#                                runs 4 executables of it for arm64 and package for armhf)
#   cmake/dev.sh rtlab [--arch=amd64|arm64] [--kernel=bookworm|backports] [--keep]
#                                the PREEMPT_RT lab: Debian 12's real-time kernel under qemu with
#                                an isolated CPU, rtloop's real-time checks inside
#                                (tests/rtlab/README.md; root, several minutes)
#   cmake/dev.sh install PKG...  apt-get install of the named Debian packages not installed yet
#
# Environment: BUILD_DIR (default build; build-ARCH with --arch), RTLOOP_CMAKE_ARGS (extra -D
# options), JOBS (build jobs and tests at a time), TEST_JOBS (tests at a time: JOBS, 1 under
# qemu-user); with test --arch, TEST_TARGETS (only these test executables, e.g.
# "rtloop_framework_tests rtloop_cyclic_tests").
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
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
  valgrind  # tests and bench/rtcost: the RT thread's simulated instructions and cache misses per cycle
  linux-perf  # tests and bench/rtcost: perf stat of the RT thread (counters where the kernel has them)
  systemd  # tests: systemd-analyze verify of the board's unit (examples/board)
  libtomlplusplus-dev  # examples/plc: its task configuration is a TOML file (toml++)
  libgpiod-dev  # examples/gpio_toggle: drives a GPIO line through libgpiod v1 (optional in CMake)
  libcivetweb-dev     # the HTTP endpoint (telemetry/export/src/http) is served by civetweb
  prometheus-cpp-dev  # /metrics: prometheus-cpp's core and its TextSerializer
  libjs-dygraphs      # the live page's charts, embedded into the library at build time
  prometheus          # tests: a real Prometheus server scrapes /metrics; promtool lints it
  chromium            # tests: the live page in headless Chromium (DOM, console, screenshot)
  fonts-dejavu-core   # tests: text in Chromium's screenshot of the page
)

# A cross build (package/test --arch=ARCH) needs on the build machine: the cross compiler, the
# code generators and header-only libraries (they run or are read here), qemu-user for the
# target's programs; and for ARCH, as ARCH:foreign multiarch packages, every library the build
# links (all Multi-Arch: same in Debian 12).
CROSS_HOST_PACKAGES=(
  cmake ninja-build pkg-config dpkg-dev file
  protobuf-compiler protobuf-compiler-grpc  # protoc and grpc_cpp_plugin run on the build machine
  libeigen3-dev libconcurrentqueue-dev nlohmann-json3-dev libjs-dygraphs  # arch: all
  prometheus-cpp-dev  # its headers (prometheus-cpp-dev:ARCH would replace this machine's: it
                      # depends on the civetweb program, not Multi-Arch); the library is ARCH's
  qemu-user-static    # runs ARCH's programs: gtest's test listing, the tests, the checks
)
CROSS_TARGET_PACKAGES=(
  libprotobuf-dev libgrpc++-dev libcivetweb-dev libprometheus-cpp-core1.0
  libtomlplusplus-dev libgpiod-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)

die() { echo "cmake/dev.sh: $*" >&2; exit 2; }

as_root() {
  if ((EUID == 0)); then "$@"; return; fi
  command -v sudo >/dev/null || die "not root: run as root or install sudo to run: $*"
  sudo "$@"
}

# apt_update: apt-get update, tried again when it fails. A Debian mirror, or a cache in front of
# one, can serve an index newer than the Release file it served a moment before ("File has
# unexpected size (357500 != 356976). Mirror sync in progress?": bookworm-security's armhf index,
# 2026-12-06, consistent again minutes later). After four tries (3 minutes) apt's error stands.
apt_update() {
  local try
  for try in 1 2 3 4; do
    as_root apt-get update -q && return 0
    ((try < 4)) || break
    echo "cmake/dev.sh: apt-get update failed (try $try of 4): trying again in $((try * 30)) s" >&2
    sleep $((try * 30))
  done
  die "apt-get update failed 4 times (apt's messages above): check the network and the sources in /etc/apt, then run this again"
}

# install_packages PKG...: apt-get install of those not installed yet (PKG may be name:arch).
install_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  command -v apt-get >/dev/null || die "apt-get not found: rtloop's build expects Debian 12 packages (${missing[*]})"
  echo "cmake/dev.sh: installing ${missing[*]}" >&2
  apt_update
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends "${missing[@]}"
}

install_deps() { install_packages "${PACKAGES[@]}"; }

HOST_ARCH=$(dpkg --print-architecture 2>/dev/null || echo amd64)

# install_cross_deps ARCH: the multiarch architecture, the cross compiler, ARCH's libraries.
install_cross_deps() {
  local arch=$1 p target=()
  if ! grep -qx "$arch" < <(dpkg --print-foreign-architectures); then  # no pipe: SIGPIPE
    echo "cmake/dev.sh: adding the $arch architecture to dpkg (dpkg --add-architecture $arch)" >&2
    as_root dpkg --add-architecture "$arch"
    apt_update
  fi
  for p in "${CROSS_TARGET_PACKAGES[@]}"; do target+=("$p:$arch"); done
  install_packages "${CROSS_HOST_PACKAGES[@]}" "crossbuild-essential-$arch" "${target[@]}"
}

# cmake_arch_args ARCH: the toolchain file of a cross build (nothing for this machine's).
cmake_arch_args() {
  local arch=$1
  [[ $arch == "$HOST_ARCH" ]] && return 0
  [[ -f cmake/toolchain-$arch.cmake ]] ||
    die "--arch=$arch: no cmake/toolchain-$arch.cmake (supported: amd64 arm64 armhf)"
  echo "-DCMAKE_TOOLCHAIN_FILE=$PWD/cmake/toolchain-$arch.cmake"
}

build() {
  # shellcheck disable=SC2086  # RTLOOP_CMAKE_ARGS is a list of -D options
  cmake -S . -B "$BUILD_DIR" -G Ninja ${RTLOOP_CMAKE_ARGS:-}
  cmake --build "$BUILD_DIR" -j "$JOBS"
}

# The tools of the Debian package (with the shared libraries) and of the tarball (single static
# files). The tarball's rtloop-cyclic is the lean one (bench/cyclic/README.md, "Two binaries"):
# no server linked in, it hands --telemetry/--record over to rtloop-cyclic-full beside it. The
# package's rtloop-cyclic has the servers through librtloop_telemetry.so: one binary.
PACKAGE_TOOLS=(rtloop-cyclic rtloop-top rtloop-bench)
STATIC_TOOLS=(rtloop-cyclic rtloop-cyclic-full rtloop-top rtloop-bench)

# package ARCH [DEBS_ONLY]: shared libraries and tools built for ARCH, then CPack's Debian
# packages, then (unless DEBS_ONLY is 1) the static tools' tarball.
package() {
  local arch=$1 debs_only=${2:-0} toolchain
  toolchain=$(cmake_arch_args "$arch")
  if [[ $arch == "$HOST_ARCH" ]]; then install_deps; else install_cross_deps "$arch"; fi
  BUILD_DIR=${BUILD_DIR:-build-$arch}
  # Only what the packages hold is built (CMAKE_SKIP_INSTALL_ALL_DEPENDENCY: cpack does not build
  # `all`); the tree is the one `test --arch` builds the tests in.
  # shellcheck disable=SC2086  # $toolchain is one option or none
  cmake -S . -B "$BUILD_DIR" -G Ninja $toolchain -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_INSTALL_PREFIX=/usr -DBUILD_SHARED_LIBS=ON -DRTLOOP_BUILD_EXAMPLES=OFF \
    -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON -DRTLOOP_DEB_ARCH="$arch" ${RTLOOP_CMAKE_ARGS:-}
  cmake --build "$BUILD_DIR" -j "$JOBS" --target "${PACKAGE_TOOLS[@]}" rtloop_bench_micro
  rm -f "$BUILD_DIR"/packages/*.deb "$BUILD_DIR"/packages/*.tar.gz
  (cd "$BUILD_DIR" && cpack -G DEB)
  if ((debs_only == 0)); then
    static_tools "$arch" "$toolchain"
    check_static_tools "$arch"
  fi
  ls -l "$BUILD_DIR"/packages/
}

# static_tools ARCH TOOLCHAIN_OPTION: the single-file tools (cmake/README.md, "Static tools") in
# BUILD_DIR/static, stripped, into BUILD_DIR/packages/rtloop-tools-VERSION-ARCH.tar.gz.
static_tools() {
  local arch=$1 toolchain=$2 dir=$BUILD_DIR/static version name strip=strip t
  # shellcheck disable=SC2086  # $toolchain is one option or none
  cmake -S . -B "$dir" -G Ninja $toolchain -DCMAKE_BUILD_TYPE=Release -DRTLOOP_STATIC_TOOLS=ON \
    -DRTLOOP_BUILD_TESTS=OFF -DRTLOOP_BUILD_EXAMPLES=OFF ${RTLOOP_CMAKE_ARGS:-}
  cmake --build "$dir" -j "$JOBS" --target "${STATIC_TOOLS[@]}"
  version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$dir/CMakeCache.txt")
  name=rtloop-tools-$version-$arch
  [[ $arch == "$HOST_ARCH" ]] || strip=$(sed -n 's/^CMAKE_STRIP:FILEPATH=//p' "$dir/CMakeCache.txt")
  rm -rf "${dir:?}/$name" && mkdir -p "$dir/$name" "$BUILD_DIR/packages"
  for t in "${STATIC_TOOLS[@]}"; do
    "$strip" -o "$dir/$name/$t" "$dir/bin/$t"
  done
  tar -C "$dir" -czf "$BUILD_DIR/packages/$name.tar.gz" "$name"
  echo "cmake/dev.sh: $BUILD_DIR/packages/$name.tar.gz (sizes in bytes):" >&2
  (cd "$dir/$name" && stat -c '  %n %s' "${STATIC_TOOLS[@]}" >&2)
}

# ensure_binfmt ARCH: the kernel runs ARCH's programs through qemu-user-static (binfmt_misc, as
# /usr/lib/binfmt.d/qemu-*.conf from qemu-user-static describes, with its F flag: also inside a
# chroot), so tests that start other rtloop programs can. Returns 1 when it cannot (not root, no
# binfmt_misc in this kernel or container).
ensure_binfmt() {
  local name conf
  case $1 in
    arm64) name="qemu-aarch64" ;;
    armhf) name="qemu-arm" ;;
    *) return 0 ;;
  esac
  [[ -e /proc/sys/fs/binfmt_misc/$name ]] && return 0
  conf=/usr/lib/binfmt.d/$name.conf
  ((EUID == 0)) && [[ -f $conf ]] || return 1
  mountpoint -q /proc/sys/fs/binfmt_misc ||
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null || return 1
  cat "$conf" >/proc/sys/fs/binfmt_misc/register 2>/dev/null || return 1
  echo "cmake/dev.sh: registered $name with binfmt_misc ($conf)" >&2
}

# check_static_tools ARCH: each static tool runs in an empty root, as on a board with nothing
# installed (cmake/check_static_tools.sh, also the ctest test StaticTools.RunInAnEmptyRoot).
check_static_tools() {
  local arch=$1 rc=0
  ensure_binfmt "$arch" || true  # else the script copies qemu-user-static into the root
  cmake/check_static_tools.sh "$BUILD_DIR/static/bin" >&2 || rc=$?
  ((rc == 0 || rc == 77)) || die "the static tools failed in an empty root"
}

# The main job's embedded defaults (README "Quick start"): one measuring thread per CPU (-S) at
# SCHED_FIFO 99 with memory locked, 1000 us interval on every thread (-d0), 10 s, cyclictest's
# -q summary, then our percentile table, with the gRPC telemetry API served on 127.0.0.1:50051
# meanwhile (watch it with build/bin/rtloop-top). Extra ARGS are appended (later options win).
MAIN_DEFAULTS=(-S -m -p 99 -i 1000 -d 0 -D 10s -q --percentiles --telemetry)

run_main() {
  exec "$BUILD_DIR/bin/rtloop-cyclic" "${MAIN_DEFAULTS[@]}" "$@"
}

# TEST_JOBS (default JOBS) tests at a time; those labelled measure (a load, the measurement lock)
# run alone (RUN_SERIAL, tests/CMakeLists.txt).
run_tests() {
  ctest --test-dir "$BUILD_DIR" -j "${TEST_JOBS:-$JOBS}" --output-on-failure --timeout 600 "$@"
}

# cross_tests ARCH: the suite built for ARCH in build-ARCH (the packages' tree: shared libraries,
# so the objects are shared with `package`) and run under qemu-user: CMake's
# CMAKE_CROSSCOMPILING_EMULATOR (cmake/toolchain-ARCH.cmake) runs every test binary through it.
# RTLOOP_TEST_EMULATED tells the tests that need what qemu-user does not emulate to skip, with
# the reason; the closing note lists the skipped tests and their reasons. The examples' tests
# (Python, Chromium, Prometheus) are native-only: built with RTLOOP_BUILD_EXAMPLES=OFF.
cross_tests() {
  local arch=$1 toolchain log
  toolchain=$(cmake_arch_args "$arch")
  install_cross_deps "$arch"
  ensure_binfmt "$arch" || echo "cmake/dev.sh: no binfmt_misc for $arch: tests that start" \
    "another rtloop program fail (run as root, or where binfmt_misc can be mounted)" >&2
  BUILD_DIR=${BUILD_DIR:-build-$arch}
  # shellcheck disable=SC2086  # $toolchain is one option
  cmake -S . -B "$BUILD_DIR" -G Ninja $toolchain -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_INSTALL_PREFIX=/usr -DBUILD_SHARED_LIBS=ON -DRTLOOP_BUILD_TESTS=ON \
    -DRTLOOP_BUILD_EXAMPLES=OFF ${RTLOOP_CMAKE_ARGS:-}
  local ctest_args=()
  if [[ -n ${TEST_TARGETS:-} ]]; then
    # Only these test executables (e.g. CI's subset): a test whose program in bin/ was not built
    # (the other executables' placeholders, their fuzz replays) is left out, and so is one whose
    # program is out of date (left by an earlier build of a reused tree: it may no longer match
    # the libraries just rebuilt). In a fresh tree that is everything outside TEST_TARGETS and
    # what they depend on (rtloop-cyclic for its CLI tests).
    # shellcheck disable=SC2086  # a list of targets
    cmake --build "$BUILD_DIR" -j "$JOBS" --target ${TEST_TARGETS}
    local unselected
    unselected=$(ctest --test-dir "$BUILD_DIR" --show-only=json-v1 | BUILD="$(cd "$BUILD_DIR" && pwd)" python3 -c '
import functools, json, os, re, subprocess, sys
build = os.environ["BUILD"]
@functools.cache
def current(program):  # exists, and ninja has nothing to do for it
    if not os.path.exists(program): return False
    dry = subprocess.run(["ninja", "-C", build, "-n", os.path.relpath(program, build)],
                         capture_output=True, text=True)
    return dry.returncode == 0 and "no work to do" in dry.stdout
def selected(cmd):
    return bool(cmd) and all(current(a) for a in cmd if a.startswith(build + "/bin/"))
print("|".join("^" + re.escape(t["name"]) + "$"
               for t in json.load(sys.stdin)["tests"] if not selected(t.get("command"))))')
    [[ -z $unselected ]] || ctest_args=(-E "$unselected")
  else
    cmake --build "$BUILD_DIR" -j "$JOBS"
  fi
  local rc=0
  # One test at a time under emulation (TEST_JOBS=1 unless set): two at a time, a test that times
  # its threads' wake-ups failed in each of two runs (2026-12-06), each a different one.
  TEST_JOBS=${TEST_JOBS:-1} RTLOOP_TEST_EMULATED="qemu-user ($arch)" run_tests "${ctest_args[@]}" ||
    rc=$?
  log=$BUILD_DIR/Testing/Temporary/LastTest.log
  if [[ -f $log ]]; then
    echo "cmake/dev.sh: tests skipped under qemu-user ($arch), with their reasons:"
    # gtest prints "FILE:LINE: Skipped" and the reason on the next line, inside ctest's
    # "N/M Testing: NAME" block.
    awk '/^[0-9]+\/[0-9]+ Testing: / { test = $3 }
         skip { print "  " test ": " $0; skip = 0; n++ }
         /: Skipped$/ { skip = 1 }
         END { if (!n) print "  none" }' "$log"
  fi
  return "$rc"
}

# --arch=ARCH after package/test: the target architecture (default: this machine's).
arch_option() {
  local arch=$HOST_ARCH a
  for a in "$@"; do
    case $a in
      --arch=*) arch=${a#--arch=} ;;
      *) die "unknown option '$a' (expected --arch=amd64|arm64|armhf)" ;;
    esac
  done
  case $arch in
    amd64 | arm64 | armhf) echo "$arch" ;;
    *) die "--arch=$arch: supported are amd64, arm64 and armhf" ;;
  esac
}

usage="usage: cmake/dev.sh run [ARGS...] | test [--arch=ARCH] | deps [--arch=ARCH] | build | package [--arch=ARCH] [--debs] | rtlab [--arch=amd64|arm64] [--kernel=bookworm|backports] [--keep] | install PKG..."
case "${1:-}" in
  deps)
    shift
    arch=$(arch_option "$@") || exit 2
    if [[ $arch == "$HOST_ARCH" ]]; then
      install_deps
    else  # the cross build's (tests/rtlab/rtlab.sh --arch=arm64 builds with it)
      install_cross_deps "$arch"
      ensure_binfmt "$arch" || die "cannot register qemu-user-static for $arch with binfmt_misc (root, binfmt_misc)"
    fi ;;
  build) install_deps; BUILD_DIR=${BUILD_DIR:-build}; build ;;
  run) shift; install_deps; BUILD_DIR=${BUILD_DIR:-build}; build; run_main "$@" ;;
  test)
    shift
    arch=$(arch_option "$@") || exit 2
    if [[ $arch == "$HOST_ARCH" ]]; then
      install_deps; BUILD_DIR=${BUILD_DIR:-build}; build; run_tests
    else
      cross_tests "$arch"
    fi ;;
  package)
    shift
    debs_only=0 rest=()
    for a in "$@"; do
      if [[ $a == --debs ]]; then debs_only=1; else rest+=("$a"); fi
    done
    arch=$(arch_option "${rest[@]}") || exit 2
    package "$arch" "$debs_only" ;;
  install) shift; install_packages "$@" ;;  # the named Debian packages, those missing (rtlab)
  rtlab) shift; exec tests/rtlab/rtlab.sh "$@" ;;
  *) die "$usage" ;;
esac
