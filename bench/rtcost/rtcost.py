#!/usr/bin/env python3
"""The real-time thread's own cost per wake-up, rtloop-cyclic side by side with cyclictest (issue 23).

Each round runs cyclictest and rtloop-cyclic with the same options, one after the other (the order
alternates from round to round, so a slow drift of the machine favours neither), for every mode:

  bare       rtloop-cyclic OPTIONS                     against cyclictest OPTIONS
  telemetry  rtloop-cyclic OPTIONS --telemetry=ADDR     against cyclictest OPTIONS
  client     as telemetry, plus rtloop-cyclic-sink streaming every sample
  tasks8     both with -t8 (eight measuring threads on the same CPU): a Runtime with 8 tasks

Measures (README.md says what each can and cannot settle):

  schedstat   CPU time of the measuring threads over --seconds of steady state, divided by their
              wake-ups (/proc/PID/task/TID/schedstat: run time and times scheduled in), in ns per
              wake-up; the per-round ratio rtloop/cyclictest with its median and a 95 % bootstrap
              interval of the mean over the rounds.
  perf        (--perf) instructions (user and kernel apart, and their sum), cycles and cache misses
              of the measuring threads per wake-up with `perf stat -t`, where the kernel gives
              hardware counters (a VM often does not: the script says so); --perf-rounds N runs
              each mode N times, alternating, for the ratio's median and interval.
  cachegrind  (--cachegrind) instructions, data references and simulated I1/D1/LL misses per cycle
              of the measuring thread, under valgrind's cache simulation (callgrind, one profile
              per thread), from two runs of different lengths (-l N1 and -l N2: the difference
              divided by N2 - N1 leaves set-up and exit out).
              Deterministic, so it settles what time cannot on a noisy machine; but it simulates
              caches that nothing else evicts, i.e. warm ones. --cache picks their geometry: the
              host's (valgrind's detection, the default) or a named core's (a53: a Cortex-A53's
              32 KiB L1s and a 512 KiB L2), or I1=..,D1=..,LL=.. as valgrind's SIZE,ASSOC,LINE.
  lines       (--lines) the cache lines a cycle touches: the same two runs with tiny simulated
              caches, fully associative and LRU, of C = 8 .. 256 lines of 64 bytes (I1 and D1
              alike). A cycle that touches N distinct lines evicts itself from a cache of C < N
              lines (its own lines come back after N others) and misses about N times; from
              C >= N on it misses ~0 times. So the misses per cycle against C trace the working set
              (the "stack distance" method): the footprint is the smallest C at which a cycle
              misses less than once, and the misses at the smallest C approach the lines a cold
              wake-up must fetch.

  flock /tmp/rtloop-measure.lock python3 bench/rtcost/rtcost.py --bin build/bin
  python3 bench/rtcost/rtcost.py --rounds 12 --seconds 3 --modes bare,telemetry --json cost.json
  python3 bench/rtcost/rtcost.py --cachegrind --perf --rounds 0      # the counting measures only
  python3 bench/rtcost/rtcost.py --lines --rounds 0                  # cache lines per cycle
  rtloop-rtcost --rounds 0 --cachegrind --cache=a53   # on a Cortex-A53 board (or any, simulated)
  rtloop-rtcost --cachegrind --lines --perf           # installed (rtloop-bench-micro), on a board
  python3 bench/rtcost/rtcost.py -- -m -a1 -p80 -i500                # other options

Targets (issue 23; reported, never asserted): schedstat and instructions per wake-up within 1.05x
of cyclictest's, bare and with telemetry. Exit 0 when every run ran (whatever the figures), 1 when
a program failed, 2 on bad usage. Needs root for SCHED_FIFO and -m. Python 3 standard library only.
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

# The source tree and the installed one (rtloop-bench-micro: /usr/share/rtloop/bench/) alike:
# ../cyclic beside this file's real path (/usr/bin/rtloop-rtcost is a symbolic link to it).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "cyclic"))
import telemetry_cost  # noqa: E402  (read_threads: the threads' schedstat, shared)

DEFAULT_OPTIONS = ["-m", "-t1", "-a1", "-p80", "-i1000"]
MODES = ["bare", "telemetry", "client", "tasks8"]
SET_BY_SCRIPT = ("-D", "--duration", "-l", "--loops", "-q", "--quiet", "--telemetry", "--json")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", default=default_bin(),
                   help="directory of rtloop-cyclic (default: build/bin in a source tree, the "
                        "installed one's directory when run as rtloop-rtcost)")
    p.add_argument("--cyclictest", default=shutil.which("cyclictest"),
                   help="cyclictest to compare with (default: the one on PATH)")
    p.add_argument("--rounds", type=int, default=8, help="rounds of every mode (default 8; 0: none)")
    p.add_argument("--seconds", type=float, default=3.0, help="steady state measured per run (3)")
    p.add_argument("--warmup", type=float, default=1.0,
                   help="seconds from when the measuring threads run (waited for up to 30 s) "
                        "to the measurement (1)")
    p.add_argument("--modes", default=",".join(MODES), help="comma list of " + ", ".join(MODES))
    p.add_argument("--perf", action="store_true",
                   help="also perf stat per wake-up (--perf-rounds times each mode)")
    p.add_argument("--perf-rounds", type=int, default=1,
                   help="--perf's rounds of every mode, the order alternating (default 1)")
    p.add_argument("--cachegrind", action="store_true",
                   help="also cachegrind per cycle (bare and telemetry)")
    p.add_argument("--cache", default="host",
                   help="--cachegrind's simulated caches: host (valgrind's detection), %s, or "
                        "I1=SIZE,ASSOC,LINE,D1=...,LL=... (bytes; default host)" % ", ".join(CACHES))
    p.add_argument("--lines", action="store_true",
                   help="also the cache lines a cycle touches (tiny simulated caches, see above)")
    p.add_argument("--capacities", default=",".join(str(c) for c in LINE_CAPACITIES),
                   help="--lines' cache sizes in lines, ascending (%(default)s)")
    p.add_argument("--loops", default="300,1300", help="cachegrind's two run lengths (300,1300)")
    p.add_argument("--json", help="also write every figure to this file")
    p.add_argument("options", nargs="*",
                   help="options of both tools after '--' (default: %s)" % " ".join(DEFAULT_OPTIONS))
    a = p.parse_args()
    a.modes = [m for m in a.modes.split(",") if m]
    for m in a.modes:
        if m not in MODES:
            p.error("unknown mode %r: pick from %s" % (m, ", ".join(MODES)))
    if a.rounds < 0 or a.seconds <= 0 or a.warmup < 0 or a.perf_rounds < 1:
        p.error("--rounds must be >= 0, --seconds > 0, --warmup >= 0, --perf-rounds >= 1")
    try:
        a.loops = [int(x) for x in a.loops.split(",")]
        assert len(a.loops) == 2 and 0 < a.loops[0] < a.loops[1]
    except (ValueError, AssertionError):
        p.error("--loops must be N1,N2 with 0 < N1 < N2, got %r" % a.loops)
    try:
        a.capacities = [int(x) for x in a.capacities.split(",")]
        assert a.capacities == sorted(set(a.capacities)) and a.capacities[0] >= 1
    except (ValueError, AssertionError):
        p.error("--capacities must be ascending line counts >= 1, got %r" % a.capacities)
    try:
        a.cache_options = cache_options(a.cache)
    except ValueError as e:
        p.error("--cache %s" % e)
    for opt in a.options:
        if opt.startswith(SET_BY_SCRIPT):
            p.error("option %s is set by the script" % opt)
    a.options = a.options or DEFAULT_OPTIONS
    a.rtloop = os.path.join(a.bin, "rtloop-cyclic")
    if not os.access(a.rtloop, os.X_OK):
        p.error("no rtloop-cyclic in %s: build it, or give --bin DIR" % a.bin)
    # The lean rtloop-cyclic hands --telemetry over to rtloop-cyclic-full (execv, same PID: the
    # schedstat figures follow it); valgrind does not follow an exec, so it runs that one itself.
    a.rtloop_full = helper_program(a.bin, "rtloop-cyclic-full") or a.rtloop
    a.sink = helper_program(a.bin, "rtloop-cyclic-sink")
    if a.sink is None and "client" in a.modes and a.rounds:
        p.error("mode client needs rtloop-cyclic-sink, in neither %s nor %s: build it, install "
                "rtloop-bench-micro, or leave the mode out (--modes bare,telemetry,tasks8)" % (
                    a.bin, os.path.join(a.bin, LIBEXEC)))
    if not a.cyclictest or not os.access(a.cyclictest, os.X_OK):
        p.error("cyclictest not found: apt-get install rt-tests, or give --cyclictest PATH")
    if (a.cachegrind or a.lines) and shutil.which("valgrind") is None:
        p.error("--cachegrind and --lines need valgrind: apt-get install valgrind")
    if a.perf and shutil.which("perf") is None:
        p.error("--perf needs perf: apt-get install linux-perf")
    return a


# Where the packages put the helper programs, relative to the tools' directory.
LIBEXEC = os.path.join("..", "libexec", "rtloop")


def default_bin():
    """build/bin run from a source tree; the directory of rtloop-rtcost when it is installed."""
    here = os.path.dirname(os.path.abspath(sys.argv[0]))
    if os.path.basename(sys.argv[0]) == "rtloop-rtcost":
        return here
    return "build/bin"


def helper_program(bin_dir, name):
    """`name` in bin_dir (a build tree) or bin_dir/../libexec/rtloop (installed), or None."""
    for d in (bin_dir, os.path.join(bin_dir, LIBEXEC)):
        path = os.path.normpath(os.path.join(d, name))
        if os.access(path, os.X_OK):
            return path
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def with_threads(options, n):
    """`options` with -tN replaced (or added)."""
    out = [o for o in options if not re.fullmatch(r"-t\d*|--threads(=\d+)?", o)]
    return out + ["-t%d" % n]


def commands(args, mode, port):
    """(cyclictest argv, rtloop-cyclic argv, sink argv or None) of one mode."""
    options = with_threads(args.options, 8) if mode == "tasks8" else list(args.options)
    ct = [args.cyclictest] + options + ["-q"]
    rt = [args.rtloop] + options + ["-q"]
    sink = None
    if mode in ("telemetry", "client"):
        rt.append("--telemetry=127.0.0.1:%d" % port)
    if mode == "client":
        sink = [args.sink, "127.0.0.1:%d" % port, "10"]
    return ct, rt, sink


def alternating_runs(args, mode, port, k):
    """[(tool, argv, sink argv or None)] of `mode` in round k: cyclictest first in even rounds,
    rtloop-cyclic first in odd ones (a slow drift of the machine favours neither)."""
    ct, rt, sink = commands(args, mode, port)
    runs = [("cyclictest", ct, None), ("rtloop", rt, sink)]
    return runs[::-1] if k % 2 else runs


def measuring_threads(pid, tool):
    """{tid: (cpu_ns, slices)} of the measuring threads of `pid`: cyclictest's threads but the
    main one, rtloop-cyclic's "cyclicN" threads."""
    out = {}
    for tid, (comm, cpu_ns, slices, _allowed) in telemetry_cost.read_threads(pid).items():
        if tool == "cyclictest" and tid == pid:
            continue
        if tool == "rtloop" and not re.fullmatch(r"cyclic\d+", comm):
            continue
        out[tid] = (cpu_ns, slices)
    return out


# How long a tool may take to start its measuring threads: on a slow board, under emulation or
# under load, locking memory (-m) and starting the telemetry server take seconds (the arm64 lab's
# emulated rtloop-cyclic had none after 0.5 s). The warm-up counts from when they run.
START_TIMEOUT = 30.0


def expected_threads(argv):
    """The measuring threads `argv` asks for: N of its last -tN/--threads=N, else 1 (-t alone or
    -S: one per CPU, at least 1)."""
    n = 1
    for o in argv:
        m = re.fullmatch(r"(?:-t|--threads=)(\d+)", o)
        if m:
            n = max(1, int(m.group(1)))
    return n


def wait_for_threads(proc, tool, want):
    """Polls until `want` measuring threads of `proc` run, it ends, or START_TIMEOUT passes;
    returns the number seen."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        n = len(measuring_threads(proc.pid, tool))
        if n >= want or proc.poll() is not None or time.monotonic() > deadline:
            return n
        time.sleep(0.05)


def stop(proc):
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_one(argv, tool, args, sink_argv=None, during=None):
    """Starts `argv`, waits for its measuring threads (START_TIMEOUT), measures them over
    args.seconds after args.warmup; returns {ns_per_wakeup, wakeups, threads, extra} or raises
    RuntimeError saying why it did not run."""
    want = expected_threads(argv)
    started = 0
    late = False  # still running at START_TIMEOUT without its threads
    first = {}
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
        sink = None
        try:
            started = wait_for_threads(proc, tool, want)
            late = started < want and proc.poll() is None
            if sink_argv is not None:
                sink = subprocess.Popen(sink_argv, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
            alive = started >= want and proc.poll() is None
            if alive:
                time.sleep(args.warmup)
                first = measuring_threads(proc.pid, tool)
                extra = during(list(first)) if during is not None else None
                if during is None:
                    time.sleep(args.seconds)
                last = measuring_threads(proc.pid, tool)
                alive = proc.poll() is None
        finally:
            stop(proc)
            stop(sink)
        if not alive or not first:
            err.seek(0)
            lines = err.read().decode(errors="replace").strip().splitlines()
            said = lines[-1] if lines else "no message"
            if late:
                raise RuntimeError("%s started %d of its %d measuring thread(s) within %.0f s "
                                   "(stopped then; last message: %s)" % (
                                       os.path.basename(argv[0]), started, want, START_TIMEOUT,
                                       said))
            raise RuntimeError("%s did not run (exit %s): %s" % (
                os.path.basename(argv[0]), proc.returncode, said))
    cpu = sum(last[t][0] - first[t][0] for t in first if t in last)
    slices = sum(last[t][1] - first[t][1] for t in first if t in last)
    return {"ns_per_wakeup": cpu / slices if slices else None, "wakeups": slices,
            "threads": len(first), "extra": extra}


def bootstrap_mean_ci(values, resamples=2000, seed=1):
    """95 % percentile-bootstrap interval of the mean of `values` (fixed seed: reproducible)."""
    if len(values) < 2:
        return (values[0], values[0]) if values else (None, None)
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(values, k=len(values))) for _ in range(resamples))
    return means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


# --- perf stat ---

# User and kernel instructions apart (the whole wake-up is their sum: cachegrind sees the user part
# only), the core's cycles and its cache misses. A counter the kernel or the PMU does not give
# reads "<not supported>" and is left out of the figures (None).
PERF_EVENTS = ("instructions:u", "instructions:k", "cycles", "cache-misses")


def perf_during(args):
    def run(tids):
        out = subprocess.run(["perf", "stat", "-x,", "-e", ",".join(PERF_EVENTS),
                              "-t", ",".join(str(t) for t in tids), "--", "sleep",
                              str(args.seconds)], capture_output=True, text=True, check=False)
        counts = {}
        for line in out.stderr.splitlines():
            f = line.split(",")
            if len(f) >= 3 and f[2] in PERF_EVENTS:
                counts[f[2]] = None if f[0].startswith("<not") else float(f[0])
        if counts.get("instructions:u") is not None and counts.get("instructions:k") is not None:
            counts["instructions"] = counts["instructions:u"] + counts["instructions:k"]
        return counts
    return run


def perf_rows(args, port):
    """perf stat of every mode, --perf-rounds times, the tools' order alternating by round."""
    rows = []
    for k in range(args.perf_rounds):
        for mode in args.modes:
            for tool, argv, sink_argv in alternating_runs(args, mode, port, k):
                r = run_one(argv, tool, args, sink_argv, perf_during(args))
                per = {e: (v / r["wakeups"] if v is not None and r["wakeups"] else None)
                       for e, v in (r["extra"] or {}).items()}
                rows.append({"round": k, "mode": mode, "tool": tool, "wakeups": r["wakeups"],
                             "per_wakeup": per})
    return rows


def perf_summary(rows, modes):
    """{mode: {event: {cyclictest median, rtloop median, ratio median, min, max, ci95}}}: the
    per-round ratio rtloop/cyclictest of each counted event."""
    out = {}
    for mode in modes:
        for event in ("instructions",) + PERF_EVENTS:
            pairs = {}
            for r in rows:
                v = r["per_wakeup"].get(event)
                if r["mode"] == mode and v is not None:
                    pairs.setdefault(r["round"], {})[r["tool"]] = v
            both = [p for p in pairs.values() if len(p) == 2 and p["cyclictest"] > 0]
            if not both:
                continue
            ratios = [p["rtloop"] / p["cyclictest"] for p in both]
            lo, hi = bootstrap_mean_ci(ratios)
            out.setdefault(mode, {})[event] = {
                "rounds": len(both),
                "cyclictest_median": statistics.median(p["cyclictest"] for p in both),
                "rtloop_median": statistics.median(p["rtloop"] for p in both),
                "ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
                "ratio_max": max(ratios), "ratio_ci95": [lo, hi]}
    return out


def print_perf(result, modes):
    rows = result.get("perf", [])
    print("\n## perf stat per wake-up of the measuring threads (user + kernel; target: "
          "instructions ratio <= 1.05)")
    for row in rows:
        p = row["per_wakeup"]
        if all(v is None for v in p.values()):
            text = "no hardware counters here (perf stat: <not supported>)"
        else:
            text = "  ".join("%s %s" % (e, fmt(p[e], "%.1f")) for e in ("instructions",) + PERF_EVENTS
                             if e in p)
        print("%-5d %-10s %-10s %s" % (row["round"], row["mode"], row["tool"], text))
    summary = perf_summary(rows, modes)
    if summary:
        result["perf_summary"] = summary
        print("\n%-10s %-15s %7s %12s %12s %8s %15s %17s" % (
            "mode", "event", "rounds", "cyclictest", "rtloop", "median", "min..max",
            "95% CI of mean"))
        for mode, events in summary.items():
            for event, s in events.items():
                print("%-10s %-15s %7d %12.1f %12.1f %8.3f %15s   [%.3f, %.3f]" % (
                    mode, event, s["rounds"], s["cyclictest_median"], s["rtloop_median"],
                    s["ratio_median"], "%.3f..%.3f" % (s["ratio_min"], s["ratio_max"]),
                    s["ratio_ci95"][0], s["ratio_ci95"][1]))


# --- cachegrind (callgrind's cache simulation, one profile per thread) ---

CG_FIELDS = ("instructions", "i1_misses", "data_refs", "d1_misses", "lli_misses", "lld_misses")

# Named geometries for --cache: {name: (what, {level: (size bytes, ways, line bytes)})}. The
# Cortex-A53 (Arm's Cortex-A53 MPCore TRM, DDI 0500: L1 instruction cache 2-way and data cache
# 4-way, 64-byte lines, each 8-64 KiB; the cluster's L2 16-way, 64-byte lines, 128 KiB-2 MiB)
# with the sizes A53 boards commonly have: 32 KiB L1s, a 512 KiB L2 (give a board's own as
# I1=..,D1=..,LL=..). cachegrind's caches are exact LRU, the L2 the measured thread's alone.
CACHES = {
    "a53": ("Cortex-A53: L1I 32 KiB 2-way, L1D 32 KiB 4-way, L2 512 KiB 16-way, 64-byte lines",
            {"I1": (32768, 2, 64), "D1": (32768, 4, 64), "LL": (524288, 16, 64)}),
}


def cache_options(spec):
    """valgrind's --I1/--D1/--LL options of a --cache value: [] for "host", a named geometry
    (CACHES), or "I1=S,A,L,D1=S,A,L,LL=S,A,L" (all three). Raises ValueError saying what is wrong:
    valgrind wants a power-of-two line of at least 16 bytes and a power-of-two number of sets."""
    if spec == "host":
        return []
    if spec in CACHES:
        levels = CACHES[spec][1]
    else:
        m = re.fullmatch(r"I1=(\d+),(\d+),(\d+),D1=(\d+),(\d+),(\d+),LL=(\d+),(\d+),(\d+)", spec)
        if not m:
            raise ValueError("must be host, %s or I1=SIZE,ASSOC,LINE,D1=...,LL=..., got %r" % (
                ", ".join(CACHES), spec))
        n = [int(x) for x in m.groups()]
        levels = {"I1": tuple(n[0:3]), "D1": tuple(n[3:6]), "LL": tuple(n[6:9])}
    out = []
    for level in ("I1", "D1", "LL"):
        size, ways, line = levels[level]
        sets = size // (ways * line) if ways and line else 0
        if line < 16 or line & (line - 1) or sets < 1 or sets * ways * line != size \
                or sets & (sets - 1):
            raise ValueError("%s=%d,%d,%d: the line must be a power of two >= 16 bytes and "
                             "SIZE / (ASSOC * LINE) a power of two" % (level, size, ways, line))
        out.append("--%s=%d,%d,%d" % (level, size, ways, line))
    return out


def cache_description(spec):
    if spec == "host" and os.uname().machine.startswith(("aarch64", "arm")):
        # valgrind 3.19's cachegrind/cg-arch.c: no detection on ARM, fixed defaults.
        return ("valgrind's fixed defaults on ARM (it detects no ARM core's caches: L1s 16 KiB "
                "4-way, LL 256 KiB 8-way), not this board's: give --cache=a53 or the board's own")
    if spec == "host":
        return "the host's caches as valgrind detects them"
    return CACHES[spec][0] if spec in CACHES else spec


def measuring_profile(path, tool):
    """True when the per-thread profile at `path` is a measuring thread's: any of cyclictest's
    but the main thread's (Debian's cyclictest has no symbols to tell them by), rtloop-cyclic's
    task threads (they run the executor's start hooks)."""
    if tool == "cyclictest":
        return not path.endswith("-01")
    marker = "Executor::Impl::RunStartHooks"
    with open(path, errors="replace") as f:
        return any(line.startswith("fn=") and marker in line for line in f)


# One run under valgrind, at most (seconds): natively 2-10 s; on an emulated arm64 guest, valgrind's
# start and the gRPC libraries' set-up take minutes.
VALGRIND_TIMEOUT = 1800


def cachegrind_counts(argv, tool, tmp, caches=()):
    """The measuring threads' simulated counts over a whole run of `argv` (`caches`: valgrind's
    --I1/--D1/--LL options, else the host's caches)."""
    for old in os.listdir(tmp):
        os.unlink(os.path.join(tmp, old))
    res = subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes",
                          "--cache-sim=yes", "--compress-strings=no",
                          "--callgrind-out-file=" + os.path.join(tmp, "cg")] + list(caches)
                         + argv, capture_output=True, text=True, check=False,
                         timeout=VALGRIND_TIMEOUT)
    counts = dict.fromkeys(CG_FIELDS, 0)
    found = 0
    for name in sorted(os.listdir(tmp)):
        path = os.path.join(tmp, name)
        if not re.fullmatch(r"cg-\d+", name) or not measuring_profile(path, tool):
            continue
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
        events = next(l.split()[1:] for l in lines if l.startswith("events:"))
        summary = next(l.split()[1:] for l in lines if l.startswith("summary:"))
        v = dict(zip(events, (int(x) for x in summary)))
        counts["instructions"] += v["Ir"]
        counts["i1_misses"] += v["I1mr"]
        counts["data_refs"] += v["Dr"] + v["Dw"]
        counts["d1_misses"] += v["D1mr"] + v["D1mw"]
        counts["lli_misses"] += v["ILmr"]
        counts["lld_misses"] += v["DLmr"] + v["DLmw"]
        found += 1
    if res.returncode != 0 or found == 0:
        tail = res.stderr.strip().splitlines()[-1:] or ["no message"]
        raise RuntimeError("%s under callgrind: exit %d, %d measuring thread(s) found: %s" % (
            os.path.basename(argv[0]), res.returncode, found, tail[0]))
    return counts


def cachegrind_runs(args):
    """(tool, mode, argv) of cyclictest and rtloop-cyclic bare and with telemetry, for valgrind
    (no -m: valgrind and mlockall do not mix; the counts do not depend on it)."""
    options = [o for o in args.options if o != "-m"]
    port = free_port()
    return [("cyclictest", "bare", [args.cyclictest] + options),
            ("rtloop", "bare", [args.rtloop] + options),
            ("rtloop", "telemetry",
             [args.rtloop_full] + options + ["--telemetry=127.0.0.1:%d" % port])]


def per_cycle(args, argv, tool, tmp, caches=()):
    """The simulated counts of one cycle: two runs' difference over their loops' difference."""
    n1, n2 = args.loops
    a = cachegrind_counts(argv + ["-q", "-l%d" % n1], tool, tmp, caches)
    b = cachegrind_counts(argv + ["-q", "-l%d" % n2], tool, tmp, caches)
    return {k: (b[k] - a[k]) / (n2 - n1) for k in CG_FIELDS}


def cachegrind_rows(args, tmp):
    """Per cycle of the measuring thread, with the caches of --cache simulated."""
    return [{"tool": tool, "mode": mode, "cache": args.cache,
             "per_cycle": per_cycle(args, argv, tool, tmp, args.cache_options)}
            for tool, mode, argv in cachegrind_runs(args)]


# Capacities of the tiny caches of --lines, in 64-byte lines.
LINE_CAPACITIES = (8, 16, 32, 48, 64, 96, 128, 256)


def tiny_cache(lines):
    """valgrind options: I1 and D1 fully associative (one set) LRU caches of `lines` lines."""
    size = lines * 64
    return ["--I1=%d,%d,64" % (size, lines), "--D1=%d,%d,64" % (size, lines),
            "--LL=8388608,16,64"]


def lines_rows(args, tmp):
    """Per tool and mode: I1 and D1 misses per cycle at every capacity, and the footprints."""
    rows = []
    for tool, mode, argv in cachegrind_runs(args):
        sweep = []
        for c in args.capacities:
            p = per_cycle(args, argv, tool, tmp, tiny_cache(c))
            sweep.append({"lines": c, "i1_misses": p["i1_misses"], "d1_misses": p["d1_misses"]})
        # The floor: misses left at the largest C, lines each cycle touches for the first time.
        # The working set: the smallest C within half a miss of it.
        row = {"tool": tool, "mode": mode, "sweep": sweep}
        for kind, key in (("data", "d1_misses"), ("code", "i1_misses")):
            floor = max(sweep[-1][key], 0.0)
            row[kind + "_new_lines"] = floor
            row[kind + "_working_set_lines"] = next(s["lines"] for s in sweep
                                                    if s[key] <= floor + 0.5)
        rows.append(row)
    return rows


def simulate(args, result, name, rows_of):
    """result[name] = rows_of(args, a temporary directory); 1 (and the reason printed) when a run
    under valgrind failed, else 0."""
    with tempfile.TemporaryDirectory(prefix="rtloop-rtcost-") as tmp:
        try:
            result[name] = rows_of(args, tmp)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print("%s: %s" % (name, e))
            return 1
    return 0


def print_cachegrind(rows):
    base = next((r["per_cycle"] for r in rows if r["tool"] == "cyclictest"), None)
    print("%-10s %-10s %12s %9s %10s %9s %9s %9s %8s" % (
        "tool", "mode", "instructions", "I1 miss", "data refs", "D1 miss", "LLi miss", "LLd miss",
        "Ir ratio"))
    for row in rows:
        p = row["per_cycle"]
        print("%-10s %-10s %12.0f %9.2f %10.0f %9.2f %9.2f %9.2f %8.3f" % (
            row["tool"], row["mode"], p["instructions"], p["i1_misses"], p["data_refs"],
            p["d1_misses"], p["lli_misses"], p["lld_misses"],
            p["instructions"] / base["instructions"] if base else 0))


def print_lines(rows, capacities):
    print("\n## cache lines a cycle touches (misses per cycle, fully associative LRU caches of C"
          " lines)")
    print("(working set: the smallest C within half a miss of the floor; floor: the misses left"
          " at C=%d, lines new to each cycle)" % capacities[-1])
    print("%-10s %-10s %-4s " % ("tool", "mode", "") +
          " ".join("%6s" % ("C=%d" % c) for c in capacities) +
          " %12s %6s" % ("working set", "floor"))
    for row in rows:
        for kind, key in (("data", "d1_misses"), ("code", "i1_misses")):
            print("%-10s %-10s %-4s " % (row["tool"], row["mode"], kind) +
                  " ".join("%6.1f" % s[key] for s in row["sweep"]) +
                  " %12s %6.1f" % ("<= %d" % row[kind + "_working_set_lines"],
                                   row[kind + "_new_lines"]))


# --- main ---

def fmt(v, spec="%.0f"):
    return spec % v if v is not None else "n/a"


def main():
    args = parse_args()
    print("# cyclictest: %s; rtloop-cyclic: %s" % (args.cyclictest, args.rtloop))
    print("# options: %s -q; %d rounds x %.1f s after %.1f s warm-up; modes %s" % (
        " ".join(args.options), args.rounds, args.seconds, args.warmup, ",".join(args.modes)))
    print("# machine: %s, %d CPUs, kernel %s" % (os.uname().nodename, os.cpu_count(),
                                                 os.uname().release))
    result = {"schema": 1, "options": args.options, "rounds": [], "summary": {}}
    failed = 0
    port = free_port()
    if args.rounds:
        print("\n%-5s %-10s %14s %14s %7s" % ("round", "mode", "cyclictest ns", "rtloop ns",
                                             "ratio"))
    for k in range(args.rounds):
        for mode in args.modes:
            got = {}
            try:
                for tool, argv, sink_argv in alternating_runs(args, mode, port, k):
                    got[tool] = run_one(argv, tool, args, sink_argv)
            except RuntimeError as e:
                failed += 1
                print("%-5d %-10s %s" % (k, mode, e))
                continue
            c, r = got["cyclictest"]["ns_per_wakeup"], got["rtloop"]["ns_per_wakeup"]
            ratio = r / c if c and r else None
            print("%-5d %-10s %14s %14s %7s" % (k, mode, fmt(c), fmt(r), fmt(ratio, "%.3f")))
            result["rounds"].append({"round": k, "mode": mode, "cyclictest": got["cyclictest"],
                                     "rtloop": got["rtloop"], "ratio": ratio})
    if args.rounds:
        print("\n## schedstat: CPU time per wake-up of the measuring threads (target: ratio <= 1.05)")
        print("%-10s %7s %14s %14s %8s %8s %17s" % ("mode", "rounds", "cyclictest ns",
                                                    "rtloop ns", "median", "mean", "95% CI of mean"))
    for mode in args.modes:
        rs = [x for x in result["rounds"] if x["mode"] == mode and x["ratio"] is not None]
        if not rs:
            continue
        ratios = [x["ratio"] for x in rs]
        lo, hi = bootstrap_mean_ci(ratios)
        s = {"rounds": len(rs),
             "cyclictest_ns_median": statistics.median(x["cyclictest"]["ns_per_wakeup"] for x in rs),
             "rtloop_ns_median": statistics.median(x["rtloop"]["ns_per_wakeup"] for x in rs),
             "ratio_median": statistics.median(ratios), "ratio_mean": statistics.fmean(ratios),
             "ratio_ci95": [lo, hi], "ratio_min": min(ratios), "ratio_max": max(ratios)}
        result["summary"][mode] = s
        print("%-10s %7d %14.0f %14.0f %8.3f %8.3f   [%.3f, %.3f]" % (
            mode, s["rounds"], s["cyclictest_ns_median"], s["rtloop_ns_median"],
            s["ratio_median"], s["ratio_mean"], lo, hi))
    if args.perf:
        try:
            result["perf"] = perf_rows(args, port)
        except RuntimeError as e:
            failed += 1
            print("perf: %s" % e)
        print_perf(result, args.modes)
    if args.cachegrind:
        print("\n## cachegrind per cycle of the measuring thread (-l %d and -l %d; simulated, warm)"
              % tuple(args.loops))
        print("(caches: %s; machine %s)" % (cache_description(args.cache), os.uname().machine))
        failed += simulate(args, result, "cachegrind", cachegrind_rows)
        print_cachegrind(result.get("cachegrind", []))
    if args.lines:
        failed += simulate(args, result, "lines", lines_rows)
        print_lines(result.get("lines", []), args.capacities)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    print("\n%d run(s) failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
