#!/usr/bin/env bash
# The lean rtloop-cyclic (bench/cyclic/README.md, "Two binaries"): it links no server library, and
# hands a run that serves over to rtloop-cyclic-full, or says what is missing when that is not
# there. CTest CyclicLean.LinksNoServerAndHandsOver, where rtloop's libraries are static.
#
#   tests/cyclic/lean_binary_test.sh build/bin/rtloop-cyclic [--shared-libstdc++]
#
# --shared-libstdc++: a sanitizer build, whose lean binary keeps the shared libstdc++.
set -uo pipefail
fail() { echo "lean_binary_test: FAILED: $*" >&2; exit 1; }

lean=${1:?usage: lean_binary_test.sh RTLOOP_CYCLIC [--shared-libstdc++]}
forbidden='grpc|protobuf|absl|ssl|crypto|cares|re2|civetweb|prometheus|libz\.|libm\.'
[[ ${2:-} == --shared-libstdc++ ]] || forbidden+='|stdc\+\+'
needed=$(readelf -d "$lean" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p') || fail "readelf -d $lean"
bad=$(grep -E "$forbidden" <<<"$needed")
[[ -z $bad ]] || fail "$lean needs libraries the lean binary must not map:" $bad

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rtloop-lean.XXXXXX") || fail mktemp
trap 'rm -rf "$tmp"' EXIT

# Beside rtloop-cyclic-full: --telemetry runs there (its gRPC server says where it serves).
out=$("$lean" -t1 -i1000 -l50 -q --telemetry=127.0.0.1:0 2>&1) ||
  fail "rtloop-cyclic --telemetry beside rtloop-cyclic-full exited $?: $out"
grep -q 'serving on 127.0.0.1:' <<<"$out" || fail "no gRPC server after the hand-over: $out"
grep -q 'Max:' <<<"$out" || fail "no summary after the hand-over: $out"

# Alone: a bare run works; --telemetry and --record fail with exit 1, naming the missing binary
# and the fix, and leave no file behind.
cp "$lean" "$tmp/rtloop-cyclic" || fail "cp"
out=$("$tmp/rtloop-cyclic" -t1 -i1000 -l50 -q 2>&1) || fail "a bare run of the lone lean binary: $out"
for args in "--telemetry=127.0.0.1:0" "--record=$tmp/run.rec"; do
  rc=0
  out=$("$tmp/rtloop-cyclic" -t1 -i1000 -l50 -q "$args" 2>&1) || rc=$?
  ((rc == 1)) || fail "$args without rtloop-cyclic-full: exit $rc (expected 1): $out"
  grep -q "$tmp/rtloop-cyclic-full: No such file" <<<"$out" &&
    grep -q "copy rtloop-cyclic-full from the tools tarball" <<<"$out" ||
    fail "$args without rtloop-cyclic-full: the message names neither the path nor the fix: $out"
done
[[ -z $(find "$tmp" -name 'run.rec*') ]] || fail "--record left a file behind"
echo "lean_binary_test: the lean binary maps no server library, hands over, and says what is missing"
