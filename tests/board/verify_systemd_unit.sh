#!/usr/bin/env bash
# ctest SystemdUnit.VerifiesCleanAndKeepsTheRtSettings: the shipped unit
# (examples/board/rtloop-app@.service) passes `systemd-analyze verify` without a single message,
# and holds the settings an rtloop application needs on a board.
#
#   tests/board/verify_systemd_unit.sh examples/board/rtloop-app@.service
#
# verify runs in a scratch root (--root): this machine's unit directory (the targets the unit
# names), the unit under /etc/systemd/system, and an executable for its instance's ExecStart.
# A unit with an unknown key must fail the same check (so the check itself is proven to see one).
# Exit: 0 pass, 1 fail, 77 skipped (systemd-analyze absent: apt-get install systemd).
set -uo pipefail

unit=${1:?usage: verify_systemd_unit.sh UNIT_FILE}
name=$(basename "$unit")
instance=${name/@./@rtloop-cyclic.}
fail() { echo "verify_systemd_unit: FAILED: $*" >&2; exit 1; }
command -v systemd-analyze >/dev/null ||
  { echo "verify_systemd_unit: skipped: systemd-analyze not found (apt-get install systemd)" >&2; exit 77; }
[[ -d /usr/lib/systemd/system ]] ||
  { echo "verify_systemd_unit: skipped: no /usr/lib/systemd/system (systemd's units)" >&2; exit 77; }

for setting in '^CPUAffinity=' '^LimitRTPRIO=99$' '^LimitMEMLOCK=infinity$' \
  '^AmbientCapabilities=CAP_SYS_NICE CAP_IPC_LOCK$' '^Restart=on-failure$'; do
  grep -q "$setting" "$unit" || fail "$unit has no line matching $setting"
done

root=$(mktemp -d "${TMPDIR:-/tmp}/rtloop-unit-root.XXXXXX") || fail "mktemp"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/lib/systemd" "$root/etc/systemd/system" "$root/usr/local/bin"
cp -a /usr/lib/systemd/system "$root/usr/lib/systemd/"
cp /bin/true "$root/usr/local/bin/rtloop-cyclic"

# verify UNIT_TEXT_FILE: systemd-analyze's whole output (empty when the unit is clean).
verify() {
  cp "$1" "$root/etc/systemd/system/$name"
  systemd-analyze verify --man=no --generators=no --root="$root" \
    "/etc/systemd/system/$instance" 2>&1
  echo "exit=$?"
}

out=$(verify "$unit")
echo "$out"
[[ $out == "exit=0" ]] || fail "systemd-analyze verify $instance was not clean"

broken="$root/broken.service"
{ cat "$unit"; printf '[Service]\nLimitRTPRIOX=99\n'; } >"$broken"
out=$(verify "$broken")
[[ $out == *"Unknown key"* ]] || fail "verify did not see an unknown key: $out"
echo "verify_systemd_unit: $name is clean"
