#!/usr/bin/env bash
# Runs rtloop's libFuzzer fuzzers (README.md here): each for SECONDS, JOBS at a time, every one
# time-boxed (SECONDS + 60 s, then killed), on a copy of its seed corpus plus the inputs that once
# crashed it. Exit 0 when no fuzzer found anything; 1 otherwise, with each finding's input kept
# in OUT/ and its report in OUT/NAME.log.
#
#   tests/fuzz/run.sh [--seconds 60] [--jobs 2] [--bin build-fuzz/bin] [--out DIR] [--seed N] [NAME...]
#
# NAME: grpc_request_fuzzer ... (default: every *_fuzzer in --bin). --seed: libFuzzer's -seed
# (1..4294967295; default: a new random one each run, printed in each log as "INFO: Seed:").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
repo=$PWD
seconds=60
jobs=2
bin=build-fuzz/bin
out=""
seed=""
names=()
while (($#)); do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    -*) echo "tests/fuzz/run.sh: unknown option $1" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || { echo "tests/fuzz/run.sh: --seconds must be a whole number > 0" >&2; exit 2; }
[[ -z $seed || ($seed =~ ^[0-9]+$ && $seed -gt 0 && $seed -le 4294967295) ]] || { echo "tests/fuzz/run.sh: --seed must be a whole number from 1 to 4294967295" >&2; exit 2; }
bin=$(cd "$bin" 2>/dev/null && pwd) || { echo "tests/fuzz/run.sh: no $bin: build the fuzzers first (README.md)" >&2; exit 2; }
if ((${#names[@]} == 0)); then
  for f in "$bin"/*_fuzzer; do names+=("$(basename "$f")"); done
fi
out=${out:-$(mktemp -d /tmp/rtloop-fuzz-run-XXXXXX)}
mkdir -p "$out"

# One fuzzer: a fresh working corpus (the seeds stay untouched), libFuzzer's own stop after
# SECONDS, and timeout(1) as the box around it.
fuzz_one() {
  local name=$1 work="$out/$1.corpus" inputs=()
  mkdir -p "$work"
  inputs=("$repo/tests/fuzz/corpus/$name")
  [[ -d $repo/tests/fuzz/regressions/$name ]] && inputs+=("$repo/tests/fuzz/regressions/$name")
  local start=$SECONDS rc=0
  timeout --kill-after=10 $((seconds + 60)) "$bin/$name" -max_total_time="$seconds" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/$name-" \
    ${seed:+-seed="$seed"} "$work" "${inputs[@]}" > "$out/$name.log" 2>&1 || rc=$?
  local runs
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/$name.log" | grep -o '[0-9]*$' || echo "?")
  if ((rc == 0)); then
    echo "$name: no finding in $((SECONDS - start)) s ($runs runs)"
  else
    echo "$name: FINDING (exit $rc after $((SECONDS - start)) s); report: $out/$name.log"
    grep -E 'INFO: Seed:|ERROR:|runtime error|what\(\)|Test unit written' "$out/$name.log" | head -6 | sed 's/^/  /'
  fi
  return $rc
}

failed=0
pids=()
for name in "${names[@]}"; do
  [[ -x $bin/$name ]] || { echo "tests/fuzz/run.sh: no fuzzer $bin/$name" >&2; exit 2; }
  fuzz_one "$name" &
  pids+=($!)
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || failed=1; done
done
for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || failed=1; done
if ((failed)); then
  echo "tests/fuzz/run.sh: findings above; add each input to tests/fuzz/regressions/NAME/ with its fix (README.md)" >&2
  exit 1
fi
echo "tests/fuzz/run.sh: ${#names[@]} fuzzers, ${seconds} s each, no finding (work in $out)"
