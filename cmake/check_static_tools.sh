#!/usr/bin/env bash
# The single-file static tools run in an empty root, as on a board with nothing installed (a
# Buildroot image, a bare /data/ directory): a directory holding only rtloop-cyclic,
# rtloop-cyclic-full and rtloop-bench, chroot into it (no /proc there), `rtloop-cyclic -t1 -i1000
# -l200 -q` prints its summary, so does the same with --telemetry (handed over to
# rtloop-cyclic-full, which serves), --metrics (not in the static tools) is refused with the
# reason, and `rtloop-bench doctor` runs
# and judges (its exit status, 0 or 1, is the judgement of this
# machine, not checked here; 2 or a crash fails).
#
#   cmake/check_static_tools.sh build-arm64/static/bin
#
# The tools' architecture is read from their ELF header. Another architecture's run through
# qemu-user-static: binfmt_misc when it has the handler registered (its F flag makes it work in a
# chroot), else the static qemu binary is copied into the root and runs the tool.
# Used by cmake/dev.sh package and by the ctest test StaticTools.RunInAnEmptyRoot (label board).
# Exit: 0 the checks passed, 1 a check failed, 77 skipped (the reason on stderr: the tools are not
# built, not root, no way to run the architecture).
set -uo pipefail

skip() { echo "check_static_tools: skipped: $*" >&2; exit 77; }
fail() { echo "check_static_tools: FAILED: $*" >&2; exit 1; }

bin=${1:?usage: check_static_tools.sh STATIC_BIN_DIR}
for t in rtloop-cyclic rtloop-cyclic-full rtloop-bench; do
  [[ -x $bin/$t ]] || skip "$bin/$t not built (cmake/dev.sh package builds the static tools into" \
    "BUILD_DIR/static/bin; or configure a tree with -DRTLOOP_STATIC_TOOLS=ON and build" \
    "rtloop-cyclic rtloop-cyclic-full rtloop-bench)"
done
# e_machine, bytes 18-19 of the ELF header (little-endian on every supported target).
machine=$(od -An -tx1 -j18 -N2 "$bin/rtloop-cyclic" | tr -d ' \n')
case $machine in
  3e00) arch=x86_64 qemu='' binfmt='' ;;
  b700) arch=aarch64 qemu=qemu-aarch64-static binfmt=qemu-aarch64 ;;
  2800) arch=arm qemu=qemu-arm-static binfmt=qemu-arm ;;
  *) fail "$bin/rtloop-cyclic: unknown ELF machine 0x$machine" ;;
esac
for t in rtloop-cyclic rtloop-cyclic-full; do
  if ldd "$bin/$t" 2>/dev/null | grep -q '=>'; then
    fail "$bin/$t is not static (ldd lists shared libraries)"
  fi
done
((EUID == 0)) || skip "chroot needs root (CAP_SYS_CHROOT)"

root=$(mktemp -d "${TMPDIR:-/tmp}/rtloop-empty-root.XXXXXX") || fail "mktemp"
trap 'rm -rf "$root"' EXIT
cp "$bin/rtloop-cyclic" "$bin/rtloop-cyclic-full" "$bin/rtloop-bench" "$root/" ||
  fail "cannot copy the tools to $root"
run=()
if [[ $(uname -m) != "$arch" ]]; then
  if ! grep -qs '^flags:.*F' "/proc/sys/fs/binfmt_misc/$binfmt" ||
     ! grep -qxs enabled "/proc/sys/fs/binfmt_misc/$binfmt"; then
    q=$(command -v "$qemu") || skip "no binfmt_misc handler $binfmt with the F flag and no" \
      "$qemu to copy into the root (apt-get install qemu-user-static)"
    cp "$q" "$root/" || fail "cannot copy $q"
    run=("/$qemu")
  fi
fi

echo "check_static_tools: $arch, empty root $root: $(cd "$root" && echo *)" >&2
out=$(chroot "$root" "${run[@]}" /rtloop-cyclic -t1 -i1000 -l200 -q 2>&1) ||
  fail "rtloop-cyclic -t1 -i1000 -l200 -q in an empty root (exit $?): $out"
printf '%s\n' "$out"
grep -q 'Max:' <<<"$out" || fail "rtloop-cyclic printed no summary (no 'Max:') in an empty root"

# The lean rtloop-cyclic hands a run that serves over to rtloop-cyclic-full beside it (found by
# its argv[0]: no /proc in this root). Not through a copied qemu: its execve of another
# architecture's binary needs binfmt_misc.
if ((${#run[@]} == 0)); then
  out=$(chroot "$root" /rtloop-cyclic -t1 -i1000 -l200 -q --telemetry=127.0.0.1:0 2>&1) ||
    fail "rtloop-cyclic --telemetry in an empty root (exit $?): $out"
  grep -q 'serving on 127.0.0.1:' <<<"$out" && grep -q 'Max:' <<<"$out" ||
    fail "rtloop-cyclic --telemetry in an empty root: no server or no summary: $out"
else
  echo "check_static_tools: the hand-over to rtloop-cyclic-full not checked: no binfmt_misc" \
    "handler for $arch" >&2
fi

# No HTTP endpoint in the static tools (RTLOOP_HTTP=OFF): --metrics is refused at the option
# check with the reason (exit 2), before anything starts.
rc=0
out=$(chroot "$root" "${run[@]}" /rtloop-cyclic -t1 -l1 -q --metrics=127.0.0.1:0 2>&1) || rc=$?
if ((rc != 2)) || ! grep -q 'not in this build' <<<"$out"; then
  fail "rtloop-cyclic --metrics: expected exit 2 saying the endpoint is not in this build," \
    "got exit $rc: $out"
fi

rc=0
out=$(chroot "$root" "${run[@]}" /rtloop-bench doctor 2>&1) || rc=$?
printf '%s\n' "$out"
((rc <= 1)) || fail "rtloop-bench doctor in an empty root exited $rc"
grep -Eq '^[0-9]+ FAIL, [0-9]+ WARN, [0-9]+ OK$' <<<"$out" ||
  fail "rtloop-bench doctor printed no judgement (no 'N FAIL, N WARN, N OK' line)"
# In an empty root no board tool is there: the doctor must say so, naming the packages.
grep -q 'stress-ng not found in PATH' <<<"$out" ||
  fail "rtloop-bench doctor did not report stress-ng missing in an empty root"
echo "check_static_tools: $arch: both tools ran in an empty root" >&2
