#!/usr/bin/env bash
# rtloop's PREEMPT_RT lab: boots Debian 12's real-time kernel (linux-image-rt-ARCH) under qemu
# with an isolated CPU (isolcpus=1 nohz_full=1 rcu_nocbs=1, 2 vCPUs) and runs rtloop's real-time
# checks inside (tests/rtlab/guest-checks.sh: one PASS/FAIL/SKIP line each); exit 0 when none
# FAILed, 1 when one did or the guest did not finish, 2 for a bad command line or setup.
#
#   tests/rtlab/rtlab.sh [--arch=amd64|arm64] [--kernel=bookworm|backports] [--keep]
#                                                     (also: cmake/dev.sh rtlab ...)
#
# --kernel=bookworm (the default): Debian 12's own RT kernel and rtla (6.1). --kernel=backports:
# the kernel and rtla of bookworm-backports (6.12: timerlat's user-space interface, timerlat_fd,
# and `rtla timerlat -U`), the rest of the image from bookworm. --arch=arm64: rtloop cross-built
# for arm64 (cmake/toolchain-arm64.cmake), an arm64 root (mmdebstrap through qemu-user-static),
# booted in qemu-system-aarch64 -M virt; emulated aarch64 is slower, so only the functional
# checks run there (the measuring ones SKIP, saying so).
#
# Phases, each timed: host packages (apt-get, only those missing), the project's binaries
# (build-rtlab/ or build-rtlab-arm64/, static rtloop libraries) and its Debian packages (rtloop,
# rtloop-bench-micro: `cmake/dev.sh package --arch=ARCH --debs` in build-ARCH/, installed in the
# guest with dpkg -i, their dependencies in the image), the root image (mmdebstrap,
# cached in RTLAB_CACHE keyed by a hash of its package list), the lab disk (mkfs.ext4 -d:
# binaries, the check script), the boot and checks (qemu TCG, bounded by RTLAB_TIMEOUT seconds),
# the results (read back with debugfs: nothing is mounted on the host). The root image is booted
# with snapshot=on: the cached image is never written. Nothing of the host's kernel settings is
# touched.
#
# Environment: RTLAB_CACHE (default /var/cache/rtloop-ci/rtlab), RTLAB_TIMEOUT (default 1200 s
# for boot + checks, either architecture), RTLAB_MIRROR (default http://deb.debian.org/debian),
# BUILD_DIR (default build-rtlab, build-rtlab-arm64), RTLAB_PKG_DIR (default build-ARCH: the
# packages' tree, as `cmake/dev.sh package` makes it), JOBS, RTLAB_ONLY (the checks to run, by
# their timeline names, e.g. "explain timerlat-user"; default all), RTLAB_FULL=1 (arm64: the
# measuring checks too), RTLAB_VALGRIND=1 (also the rtcost-a53 check: valgrind's .debs for ARCH
# are fetched with apt-get download, libc6-dbg at the image's libc6 version, and put on the lab
# disk; the image stays as it is; RTLAB_VALGRIND=lines: with --lines), RTLAB_PERF=1 (arm64 only:
# the rtcost-perf check alone, in a guest of one vCPU under qemu's precise instruction counting,
# -icount shift=0, whose PMU then counts the guest's instructions: perf stat per wake-up, user and
# kernel, of cyclictest's and rtloop-cyclic's threads; linux-perf joins the image's packages, a
# separate cached image). --keep leaves the work
# directory (console log, lab disk, results) and says where; without it only the results
# directory is kept (RTLAB_OUT, default BUILD_DIR/rtlab, BUILD_DIR/rtlab-backports with
# --kernel=backports).
#
# Thread contract: a host-side shell script; not re-entrant per cache directory (an flock on
# RTLAB_CACHE/lock serialises image builds).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
ARCH=amd64
KERNEL=bookworm
KEEP=0
for a in "$@"; do
  case $a in
    --arch=*) ARCH=${a#--arch=} ;;
    --kernel=*) KERNEL=${a#--kernel=} ;;
    --keep) KEEP=1 ;;
    -h | --help) sed -n '2,41p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "rtlab: unknown option '$a' (expected --arch=amd64|arm64, --kernel=bookworm|backports, --keep)" >&2; exit 2 ;;
  esac
done
case $KERNEL in
  bookworm | backports) ;;
  *) echo "rtlab: --kernel=$KERNEL: bookworm (Debian 12's 6.1, the default) or backports (6.12)" >&2; exit 2 ;;
esac
case $ARCH in
  amd64 | arm64) ;;
  *) echo "rtlab: --arch=$ARCH: supported are amd64 and arm64" >&2; exit 2 ;;
esac
if [[ -n ${RTLAB_PERF:-} ]]; then
  [[ $ARCH == arm64 ]] ||
    { echo "rtlab: RTLAB_PERF needs --arch=arm64 (qemu emulates an Arm PMU that counts instructions; its x86 TCG has none)" >&2; exit 2; }
  [[ -z ${RTLAB_ONLY:-} || $RTLAB_ONLY == rtcost-perf ]] ||
    { echo "rtlab: RTLAB_PERF runs the rtcost-perf check alone (one vCPU: the other checks need CPU 1); unset RTLAB_ONLY" >&2; exit 2; }
  RTLAB_ONLY=rtcost-perf
fi
[[ $(dpkg --print-architecture 2>/dev/null) == amd64 ]] ||
  { echo "rtlab: the lab runs on an amd64 Debian host (arm64's binaries are cross-built there)" >&2; exit 2; }
((EUID == 0)) || { echo "rtlab: run as root (mmdebstrap's root mode, apt-get)" >&2; exit 2; }

CACHE=${RTLAB_CACHE:-/var/cache/rtloop-ci/rtlab}
MIRROR=${RTLAB_MIRROR:-http://deb.debian.org/debian}
# Boot + checks took 130..190 s on either architecture (tests/rtlab/README.md, "Measured").
TIMEOUT=${RTLAB_TIMEOUT:-1200}
if [[ $ARCH == amd64 ]]; then
  BUILD_DIR=${BUILD_DIR:-build-rtlab}
  QEMU=(qemu-system-x86_64 -accel tcg -cpu max)
  CONSOLE=ttyS0
  HOST_PACKAGES=(mmdebstrap qemu-system-x86 e2fsprogs)
else
  # Emulated aarch64 on this amd64 host (TCG, a virt board, Cortex-A57: -cpu max's pointer
  # authentication and SVE cost more to emulate). The binaries come from the cross build.
  BUILD_DIR=${BUILD_DIR:-build-rtlab-arm64}
  QEMU=(qemu-system-aarch64 -accel tcg -M virt -cpu cortex-a57)
  CONSOLE=ttyAMA0
  # RTLAB_PERF: qemu's Arm PMU counts instructions (INST_RETIRED) only under precise icount (a
  # fixed shift), and its count is the sum over all vCPUs: one vCPU makes a thread's count its own.
  [[ -z ${RTLAB_PERF:-} ]] || QEMU+=(-icount shift=0)
  # arch-test: mmdebstrap's check that this host runs arm64's programs (only recommended by it).
  HOST_PACKAGES=(mmdebstrap arch-test qemu-system-arm qemu-user-static e2fsprogs)
fi
JOBS=${JOBS:-$(nproc)}
OUT=${RTLAB_OUT:-$BUILD_DIR/rtlab$([[ $KERNEL == bookworm ]] || echo "-$KERNEL")}  # rtlab-backports for that kernel
SUITE=bookworm
# The apt sources of the image, and where the kernel and rtla come from: backports' packages are
# named with /SUITE (apt takes that version of them, and of the dependencies only it has).
SOURCES=("deb $MIRROR $SUITE main")
FROM=
if [[ $KERNEL == backports ]]; then
  SOURCES+=("deb $MIRROR $SUITE-backports main")
  FROM=/$SUITE-backports
fi

# What the guest runs: the RT kernel and the reference tools beside rtloop's; jq reads rtloop's
# JSON in the check script; iproute2 brings up loopback (gRPC in the tests); gnuplot-nox: without
# it `rtloop-bench run` exits 1 (no plots) and its scenario test expects 0; the runtime
# libraries of rtloop's binaries are added from `dpkg -S` of their ldd output (image_packages).
GUEST_PACKAGES=("linux-image-rt-$ARCH$FROM" initramfs-tools rt-tests "rtla$FROM" stress-ng procps
  iproute2 jq util-linux coreutils gnuplot-nox)
[[ -z ${RTLAB_PERF:-} ]] || GUEST_PACKAGES+=(linux-perf)  # perf stat in the rtcost-perf check
# The guest's CPUs and the isolation: CPU 1 isolated for the measured threads; RTLAB_PERF's one.
SMP=2
ISOLATION="isolcpus=1 nohz_full=1 rcu_nocbs=1"
[[ -z ${RTLAB_PERF:-} ]] || { SMP=1; ISOLATION=; }
# rtloop's binaries that run in the guest; the tests are run there by --gtest_filter.
TOOLS=(rtloop-cyclic rtloop-cyclic-full rtloop-bench rtloop-top)
EXAMPLES=(rtloop-motion rtloop-plc)  # the examples with --require-rt (examples/common/example_cli.cc)
TESTS=(rtloop_framework_tests rtloop_explain_tests rtloop_runtime_tests rtloop_cyclic_tests
  rtloop_bench_tests)
# The project's Debian packages installed in the guest, as on a board (rtloop-dev is not: it
# depends on the -dev packages of a build machine; CI's consumer project checks it on the host).
PKG_DIR=${RTLAB_PKG_DIR:-build-$ARCH}
DEBS=(rtloop rtloop-bench-micro)

WORK=$(mktemp -d /tmp/rtlab.XXXXXX)
IMAGE_TMP=  # an image being built in the cache: removed unless it was completed
cleanup() {
  local rc=$?
  [[ -n $IMAGE_TMP ]] && rm -rf "$IMAGE_TMP"
  if ((KEEP)); then echo "rtlab: kept $WORK (console.log, lab.img)" >&2; else rm -rf "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

declare -A SECONDS_OF
PHASES=()
# phase NAME COMMAND...: runs it, records its wall time. COMMAND runs in a `||` context, where
# bash ignores set -e: each phase function returns its first failure itself (`|| return`).
phase() {
  local name=$1 t0 rc=0
  shift
  t0=$(date +%s.%N)
  "$@" || rc=$?
  SECONDS_OF[$name]=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
  PHASES+=("$name")
  echo "rtlab: phase $name: ${SECONDS_OF[$name]} s" >&2
  return "$rc"
}

host_packages() { cmake/dev.sh install "${HOST_PACKAGES[@]}"; }

build_binaries() {
  local toolchain=()
  cmake/dev.sh deps --arch="$ARCH" || return  # arm64: the cross build's packages, qemu-user
  [[ $ARCH == amd64 ]] || toolchain=(-DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/toolchain-$ARCH.cmake")
  # shellcheck disable=SC2086  # RTLOOP_CMAKE_ARGS is a list of -D options
  nice -n 19 cmake -S . -B "$BUILD_DIR" -G Ninja "${toolchain[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DBUILD_SHARED_LIBS=OFF ${RTLOOP_CMAKE_ARGS:-} >/dev/null || return
  nice -n 19 cmake --build "$BUILD_DIR" -j "$JOBS" --target "${TOOLS[@]}" "${EXAMPLES[@]}" "${TESTS[@]}" ||
    return
  BUILD_DIR=$PKG_DIR JOBS=$JOBS nice -n 19 cmake/dev.sh package --arch="$ARCH" --debs >&2
}

# deb_files: the .deb of each of DEBS, one a line (built by build_binaries).
deb_files() {
  local n f
  for n in "${DEBS[@]}"; do
    f=$(find "$PKG_DIR/packages" -maxdepth 1 -name "${n}_*_$ARCH.deb" | sort | tail -1)
    [[ -n $f ]] || { echo "rtlab: no ${n}_*_$ARCH.deb in $PKG_DIR/packages" >&2; return 1; }
    echo "$f"
  done
}

# deb_depends: the packages DEBS depend on, by name (versions and alternatives after the first
# dropped, DEBS themselves left out), one a line: the image holds them, so dpkg -i needs no network.
deb_depends() {
  local f
  deb_files | while read -r f; do dpkg-deb -f "$f" Depends Pre-Depends; done |
    sed 's/^[A-Za-z-]*: //' | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/:any//; s/ //g' |
    grep -v '^$' | grep -vxF -f <(printf '%s\n' "${DEBS[@]}") | sort -u
}

# loaded_libraries BINARY: ldd's lines for it; an arm64 one's from its own dynamic loader run
# through qemu-user (binfmt_misc), which finds the libraries in this host's multiarch directories
# (/usr/lib/aarch64-linux-gnu: the cross build's :arm64 packages).
loaded_libraries() {
  if [[ $ARCH == amd64 ]]; then ldd "$1"; else LD_TRACE_LOADED_OBJECTS=1 "$1"; fi
}

# image_packages: GUEST_PACKAGES, what the project's packages depend on, and the Debian packages
# holding the shared libraries the binaries load (libc6's own are in every root), one a line,
# sorted (arm64's: dpkg -S names them PACKAGE:arm64, the :arm64 dropped as in the image it is the
# native architecture).
image_packages() {
  local libs
  libs=$(for b in "${TOOLS[@]}" "${EXAMPLES[@]}" "${TESTS[@]}"; do loaded_libraries "$BUILD_DIR/bin/$b"; done |
    awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u)
  { printf '%s\n' "${GUEST_PACKAGES[@]}"
    deb_depends || return 1
    for l in $libs; do
      dpkg -S "$(readlink -f "$l")" 2>/dev/null || dpkg -S "$l" 2>/dev/null ||
        { echo "rtlab: no Debian package holds $l (ldd of rtloop's binaries)" >&2; return 1; }
    done | sed 's/:.*//; s/, /\n/g' | sort -u; } | sort -u
}

# build_image PACKAGES_FILE DIR: mmdebstrap's minbase root with PACKAGES, as DIR/root.img (ext4)
# with the kernel and initrd beside it.
build_image() {
  local list=$1 dir=$2 tmp root k
  tmp=$(mktemp -d "$CACHE/build.XXXXXX")
  IMAGE_TMP=$tmp
  root=$tmp/root
  echo "rtlab: building the root image in $dir (mmdebstrap $SUITE, kernel from $KERNEL, $(wc -l <"$list") packages)" >&2
  # shellcheck disable=SC2016  # the hooks' $1 is mmdebstrap's (the root), not this shell's
  nice -n 19 mmdebstrap --variant=minbase --architectures="$ARCH" --include="$(paste -sd, "$list")" \
    --customize-hook='echo rtlab > "$1/etc/hostname"' \
    --customize-hook="upload $ROOT/tests/rtlab/guest-init.sh /sbin/rtlab-init" \
    --customize-hook='chmod 755 "$1/sbin/rtlab-init"' \
    "$SUITE" "$root" "${SOURCES[@]}" >"$tmp/mmdebstrap.log" 2>&1 ||
    { tail -20 "$tmp/mmdebstrap.log" >&2; return 1; }
  k=("$root"/boot/vmlinuz-*-rt-"$ARCH")
  { ((${#k[@]} == 1)) && [[ -f ${k[0]} ]]; } ||
    { echo "rtlab: expected one RT kernel in the image, found: ${k[*]##*/}" >&2; return 1; }
  # arm64's vmlinuz is a gzip'ed Image: given to qemu unpacked.
  if gzip -t "${k[0]}" 2>/dev/null; then zcat "${k[0]}" >"$tmp/vmlinuz"; else cp "${k[0]}" "$tmp/vmlinuz"; fi
  cp "$root/boot/initrd.img-${k[0]#*/boot/vmlinuz-}" "$tmp/initrd.img"
  { echo "kernel ${k[0]#*/boot/vmlinuz-} ($KERNEL)"
    dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Package} ${Version}\n' "linux-image-*-rt-$ARCH" rtla; } >"$tmp/versions.txt"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  mkfs.ext4 -q -L rtlab-root -d "$root" "$tmp/root.img" 2G >/dev/null
  rm -rf "$root"
  cp "$list" "$tmp/packages.txt"
  rm -rf "$dir" && mv "$tmp" "$dir"
  IMAGE_TMP=
  # One image per architecture and kernel is kept: those of older package lists go.
  find "$CACHE" -maxdepth 1 -name "$ARCH-$KERNEL-*" ! -path "$dir" -exec rm -rf {} +
}

ensure_image() {
  local list=$WORK/packages.txt key
  image_packages >"$list" || return
  key=$( { echo "$SUITE $MIRROR kernel=$KERNEL"; printf '%s\n' "${SOURCES[@]}"
            cat "$list" tests/rtlab/guest-init.sh; } | sha256sum | cut -c1-16)
  IMAGE_DIR=$CACHE/$ARCH-$KERNEL-$key
  mkdir -p "$CACHE"
  exec 9>"$CACHE/lock"
  flock 9
  if [[ -f $IMAGE_DIR/root.img ]]; then
    echo "rtlab: cached root image $IMAGE_DIR" >&2
  else
    build_image "$list" "$IMAGE_DIR" || { flock -u 9; return 1; }
  fi
  flock -u 9
  sed 's/^/rtlab: image: /' "$IMAGE_DIR/versions.txt" >&2 || true
}

# valgrind_debs DIR: valgrind and what it depends on, libc6-dbg (at exactly the image's libc6
# version, read from the image's dpkg status with debugfs), for ARCH, into DIR: the rtcost-a53
# check installs them in the guest (RTLAB_VALGRIND=1), which has no network.
valgrind_debs() {
  local libc
  libc=$(debugfs -R "cat /var/lib/dpkg/status" "$IMAGE_DIR/root.img" 2>/dev/null |
    awk '/^Package: / { p = ($2 == "libc6") } p && /^Version: / { print $2; exit }')
  [[ -n $libc ]] || { echo "rtlab: no libc6 version in $IMAGE_DIR/root.img" >&2; return 1; }
  (cd "$1" && apt-get download -q "valgrind:$ARCH" "libc6-dbg:$ARCH=$libc" >&2) ||
    { echo "rtlab: apt-get download valgrind:$ARCH libc6-dbg:$ARCH=$libc failed (apt-get update?)" >&2; return 1; }
}

# lab_disk: the second disk (ext4, read-write in the guest): rtloop's binaries and the source
# tree's files (git ls-files), both mounted in the guest at their absolute paths on this host (the
# tests name the programs they start and the files they read, e.g. result.schema.json, by
# them), the check script, results/ (written by the guest, read back with debugfs).
lab_disk() {
  local d=$WORK/lab b
  mkdir -p "$d/bin" "$d/results" "$d/examples"
  for b in "${TOOLS[@]}" "${EXAMPLES[@]}" "${TESTS[@]}"; do cp "$BUILD_DIR/bin/$b" "$d/bin/" || return; done
  # A test program's paths file, when it has one (tests/testing/test_paths.h): where it finds the
  # programs it starts and the source files it reads, the paths this disk is mounted at.
  for b in "${TESTS[@]}"; do
    [[ ! -e $BUILD_DIR/bin/$b.paths ]] || cp "$BUILD_DIR/bin/$b.paths" "$d/bin/" || return
  done
  cp examples/plc/conveyor.toml "$d/examples/" || return
  mkdir -p "$d/debs"
  deb_files >"$WORK/debs.txt" || return
  xargs cp -t "$d/debs" <"$WORK/debs.txt" || return
  if [[ -n ${RTLAB_VALGRIND:-} ]]; then mkdir -p "$d/valgrind-debs" && valgrind_debs "$d/valgrind-debs" || return; fi
  cp tests/rtlab/guest-checks.sh "$d/" || return
  mkdir -p "$d/src"
  git ls-files -z | xargs -0 cp --parents -t "$d/src" || return
  { printf 'BUILD_BIN=%q\n' "$(cd "$BUILD_DIR" && pwd)/bin"
    printf 'SRC_ROOT=%q\n' "$ROOT"
    printf 'RTLAB_KERNEL=%q\n' "$KERNEL"
    printf 'RTLAB_ARCH=%q\n' "$ARCH"
    printf 'RTLAB_ONLY=%q\n' "${RTLAB_ONLY:-}"
    printf 'RTLAB_FULL=%q\n' "${RTLAB_FULL:-}"
    printf 'RTLAB_VALGRIND=%q\n' "${RTLAB_VALGRIND:-}"
    printf 'RTLAB_PERF=%q\n' "${RTLAB_PERF:-}"; } >"$d/lab.env"
  mkfs.ext4 -q -L rtlab-lab -d "$d" "$WORK/lab.img" 1G >/dev/null || return
  rm -rf "$d"
}

boot() {
  local rc=0
  echo "rtlab: booting $IMAGE_DIR (${QEMU[*]}, $SMP vCPU(s), 1 GiB; at most $TIMEOUT s)" >&2
  timeout --kill-after=15 "$TIMEOUT" nice -n 19 "${QEMU[@]}" -smp "$SMP" -m 1024 \
    -display none -monitor none -serial "file:$WORK/console.log" -no-reboot \
    -kernel "$IMAGE_DIR/vmlinuz" -initrd "$IMAGE_DIR/initrd.img" \
    -drive "file=$IMAGE_DIR/root.img,if=virtio,format=raw,snapshot=on" \
    -drive "file=$WORK/lab.img,if=virtio,format=raw" \
    -append "console=$CONSOLE root=/dev/vda rw $ISOLATION panic=-1 init=/sbin/rtlab-init" \
    || rc=$?
  ((rc == 124 || rc == 137)) && echo "rtlab: the guest did not power off within $TIMEOUT s" >&2
  return "$rc"
}

# results: the guest's results/ read from the lab disk with debugfs (no mount), into OUT.
results() {
  rm -rf "$OUT" && mkdir -p "$OUT"
  debugfs -R "rdump /results $OUT" "$WORK/lab.img" >/dev/null 2>&1 || true
  cp "$WORK/console.log" "$OUT/results/" 2>/dev/null || true
}

phase host-packages host_packages
phase build build_binaries
phase image ensure_image
phase lab-disk lab_disk
boot_rc=0
phase boot+checks boot || boot_rc=$?
phase results results

R=$OUT/results
echo
echo "== rtloop PREEMPT_RT lab ($ARCH, Debian 12 linux-image-rt-$ARCH from $KERNEL under qemu TCG) =="
[[ -f $R/timeline.txt ]] && sed 's/^/  /' "$R/timeline.txt"
[[ -f $R/table.txt ]] && { echo; cat "$R/table.txt"; }
echo
if [[ -f $R/checks.txt ]]; then cat "$R/checks.txt"; else echo "FAIL no check results (see $R/console.log)"; fi
echo
printf 'rtlab: times:'
for p in "${PHASES[@]}"; do printf ' %s %s s;' "$p" "${SECONDS_OF[$p]}"; done
echo
echo "rtlab: results in $R"
if ((boot_rc != 0)); then
  echo "rtlab: FAIL: qemu ended with $boot_rc (124: the timeout); the console's last lines:" >&2
  tail -25 "$R/console.log" >&2 || true
  exit 1
fi
[[ -f $R/summary.txt ]] || { echo "rtlab: FAIL: the guest wrote no summary" >&2; exit 1; }
cat "$R/summary.txt"
! grep -q '^FAIL' "$R/checks.txt"
