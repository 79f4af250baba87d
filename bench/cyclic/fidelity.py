#!/usr/bin/env python3
"""Side-by-side fidelity check: Debian's cyclictest against rtloop-cyclic with identical options.

Runs the two tools alternately (A B A B ...), several pairs per load (idle, and under stress-ng),
each run for the same duration, and prints per pair and as medians the ratios rtloop/cyclictest of
the average, the 99th percentile and the maximum wake-up latency. Both tools write their results
with --json (cyclictest 2.4's format, which rtloop-cyclic reproduces): avg is the "%.2f" mean,
max the exact max, and p99 comes from each tool's own 1-us -h histogram (overflows counted above
the last bucket), so both are read the same way. All threads of a run are pooled.

  bench/cyclic/fidelity.py --rtloop build/bin/rtloop-cyclic --pairs 3 --duration 10
  bench/cyclic/fidelity.py --telemetry --sink build/bin/rtloop-cyclic-sink   # with a client
  bench/cyclic/fidelity.py -- -m -a 1 -p 99 -i 500                            # other options

Needs root (SCHED_FIFO), cyclictest (apt-get install rt-tests) and, for the load phase, stress-ng
(apt-get install stress-ng). Python 3 standard library only.
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

DEFAULT_OPTIONS = ["-m", "-Sp99", "-i1000"]


def find_rtloop(parser, given):
    """`given`, else build/bin/rtloop-cyclic next to this checkout, else rtloop-cyclic on PATH;
    a parser error when none is executable."""
    if given is not None:
        return given
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in [os.path.join(here, "../../build/bin/rtloop-cyclic"),
                 shutil.which("rtloop-cyclic") or ""]:
        if cand and os.access(cand, os.X_OK):
            return cand
    parser.error("rtloop-cyclic not found: pass --rtloop PATH")
    return None


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cyclictest", default=shutil.which("cyclictest") or "/usr/bin/cyclictest")
    p.add_argument("--rtloop", default=None, help="rtloop-cyclic binary (default: next to this "
                   "script's build, or on PATH)")
    p.add_argument("--pairs", type=int, default=3, help="A/B pairs per load (default 3)")
    p.add_argument("--duration", type=int, default=10, help="seconds per run (>= 10 advised)")
    p.add_argument("--buckets", type=int, default=10000, help="-h buckets (us) for p99")
    p.add_argument("--load", choices=["idle", "stress", "both"], default="both")
    p.add_argument("--stress", default="--cpu 0 --cpu-method all",
                   help="stress-ng arguments for the load phase (default: every CPU busy)")
    p.add_argument("--telemetry", action="store_true",
                   help="run rtloop-cyclic with --telemetry and a client streaming every sample")
    p.add_argument("--sink", default=None, help="rtloop-cyclic-sink binary (for --telemetry)")
    p.add_argument("--port", type=int, default=50555)
    p.add_argument("options", nargs="*", help="cyclictest options after '--' (default: %s)"
                   % " ".join(DEFAULT_OPTIONS))
    a = p.parse_args()
    a.rtloop = find_rtloop(p, a.rtloop)
    if a.telemetry and a.sink is None:
        a.sink = os.path.join(os.path.dirname(a.rtloop), "rtloop-cyclic-sink")
    if a.pairs < 1 or a.duration < 1:
        p.error("--pairs and --duration must be >= 1")
    for opt in a.options:
        if opt.startswith(("-D", "--duration", "-h", "-H", "--histogram", "--histofall",
                           "--json", "-l", "--loops")):
            p.error("option %s is set by the script (duration, histogram, json, loops)" % opt)
    return a


def summarize(path, buckets):
    """avg, p99, max and cycles over all threads of one --json result (us)."""
    with open(path) as f:
        doc = json.load(f)
    total_cycles = 0
    weighted_avg = 0.0
    max_us = 0
    hist = {}
    for t in doc["thread"].values():
        cycles = int(t["cycles"])
        if cycles == 0:
            continue
        total_cycles += cycles
        weighted_avg += float(t["avg"]) * cycles
        max_us = max(max_us, int(t["max"]))
        for k, v in t["histogram"].items():
            hist[int(k)] = hist.get(int(k), 0) + int(v)
    if total_cycles == 0:
        raise RuntimeError("%s: no cycles" % path)
    rank = 0.99 * total_cycles
    seen = 0
    p99 = None
    for k in sorted(hist):
        seen += hist[k]
        if seen >= rank:
            p99 = k
            break
    if p99 is None:  # in the overflow: at least the histogram's range
        p99 = buckets
    return {"avg": weighted_avg / total_cycles, "p99": float(p99), "max": float(max_us),
            "cycles": total_cycles}


def measurement_command(binary, options, duration, buckets, out_json):
    """The command line of one measured run: `options` plus -q, -D, -h and --json."""
    return [binary] + list(options) + ["-q", "-D%d" % duration, "-h%d" % buckets,
                                       "--json=" + out_json]


def parse_sink_summary(stderr_text):
    """rtloop-cyclic-sink's "samples=N lost=M batches=B end=..." line as a dict ({} if absent)."""
    summary = [l for l in (stderr_text or "").split("\n") if "samples=" in l]
    last = summary[-1] if summary else ""
    return dict(f.split("=", 1) for f in last.split() if "=" in f)


def run_measurement(cmd, out_json, buckets, duration, sink_cmd=None, while_running=None):
    """Runs `cmd` (and `sink_cmd`, a client started right after it), waits for both and returns
    summarize()'s figures plus "cmd" and "sink" (the sink's summary fields). `while_running`,
    when given, is called as while_running(proc, sink) once both are started and may take its
    time (it must return before the run ends to see it)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sink = None
    if sink_cmd is not None:
        sink = subprocess.Popen(sink_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
    extra = while_running(proc, sink) if while_running is not None else None
    _, err = proc.communicate(timeout=duration + 60)
    sink_fields = {}
    if sink is not None:
        _, serr = sink.communicate(timeout=30)
        sink_fields = parse_sink_summary(serr)
        sink_fields["exit"] = sink.returncode
    if proc.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (" ".join(cmd), proc.returncode, err.strip()))
    s = summarize(out_json, buckets)
    s["cmd"] = " ".join(cmd)
    s["sink"] = sink_fields
    s["extra"] = extra
    return s


def run_one(tool, binary, options, duration, buckets, tmp, tag, args):
    out_json = os.path.join(tmp, "%s-%s.json" % (tag, tool))
    cmd = measurement_command(binary, options, duration, buckets, out_json)
    sink_cmd = None
    if tool == "rtloop" and args.telemetry:
        cmd.append("--telemetry=127.0.0.1:%d" % args.port)
        sink_cmd = [args.sink, "127.0.0.1:%d" % args.port, "10"]
    s = run_measurement(cmd, out_json, buckets, duration, sink_cmd)
    f = s["sink"]
    s["sink"] = ("streamed %s lost %s" % (f.get("samples", "?"), f.get("lost", "?"))
                 if sink_cmd is not None else "")
    return s


def ratio(b, a):
    return b / a if a > 0 else float("nan")


def main():
    args = parse_args()
    options = args.options or DEFAULT_OPTIONS
    loads = ["idle", "stress"] if args.load == "both" else [args.load]
    if "stress" in loads and shutil.which("stress-ng") is None:
        sys.exit("stress-ng not found: apt-get install stress-ng (or --load idle)")
    print("# cyclictest: %s" % args.cyclictest)
    print("# rtloop-cyclic: %s%s" % (args.rtloop, " --telemetry + streaming client"
                                     if args.telemetry else ""))
    print("# options: %s -q -D%d -h%d --json=..." % (" ".join(options), args.duration,
                                                     args.buckets))
    print("# machine: %s, %d CPUs, kernel %s" % (os.uname().nodename, os.cpu_count(),
                                                 os.uname().release))
    overall = {}
    with tempfile.TemporaryDirectory(prefix="rtloop-fidelity-") as tmp:
        for load in loads:
            stress = None
            if load == "stress":
                stress = subprocess.Popen(["stress-ng"] + args.stress.split() + ["--quiet"],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True)
                time.sleep(1.0)
            try:
                print("\n## load: %s%s" % (load, (" (stress-ng %s)" % args.stress)
                                           if load == "stress" else ""))
                print("%-4s %-8s %9s %9s %9s %9s  %s" % ("pair", "tool", "avg_us", "p99_us",
                                                        "max_us", "cycles", ""))
                rows = []
                for k in range(args.pairs):
                    a = run_one("cyclictest", args.cyclictest, options, args.duration,
                                args.buckets, tmp, "%s-%d" % (load, k), args)
                    b = run_one("rtloop", args.rtloop, options, args.duration, args.buckets,
                                tmp, "%s-%d" % (load, k), args)
                    r = {m: ratio(b[m], a[m]) for m in ("avg", "p99", "max")}
                    rows.append(r)
                    for name, s in (("A ct", a), ("B rt", b)):
                        print("%-4d %-8s %9.2f %9.0f %9.0f %9d  %s" % (
                            k, name, s["avg"], s["p99"], s["max"], s["cycles"], s["sink"]))
                    print("%-4d %-8s %9.3f %9.3f %9.3f" % (k, "B/A", r["avg"], r["p99"],
                                                          r["max"]))
                med = {m: statistics.median(r[m] for r in rows) for m in ("avg", "p99", "max")}
                overall[load] = med
                print("median B/A (%s, %d pairs): avg %.3f  p99 %.3f  max %.3f" % (
                    load, len(rows), med["avg"], med["p99"], med["max"]))
            finally:
                if stress is not None:
                    os.killpg(stress.pid, signal.SIGTERM)
                    stress.wait()
    print("\n## summary (rtloop-cyclic / cyclictest, medians; target avg <= 1.05, p99 <= 1.10)")
    for load, med in overall.items():
        print("%-7s avg %.3f  p99 %.3f  max %.3f" % (load, med["avg"], med["p99"], med["max"]))


if __name__ == "__main__":
    main()
