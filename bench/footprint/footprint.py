#!/usr/bin/env python3
"""Memory footprint of rtloop's programs side by side with cyclictest, in one run (issue 18).

Each program runs with locked memory (-m) and one 1 kHz thread unless the row says otherwise; after
--settle seconds (2 by default, the figures settle within one) the script reads
/proc/PID/status (VmRSS, RssAnon, RssFile, VmLck, Threads) and the threads' names, then stops the
program with SIGINT. RssAnon is the process's private memory (stacks, heap); RssFile is the pages
of its executable and shared libraries, which the page cache shares with every other process that
maps the same files. VmLck is the size of every locked mapping, resident or not (a malloc arena's
64 MiB reservation counts in full): what the memlock limit (ulimit -l) is checked against.

Targets (exit 1 when one is missed; 2 when a program did not run):
  rtloop-cyclic -m -t1                          VmRSS <= 2 x cyclictest -m -t1's VmRSS
  (the floor's rows, rtloop-footprint-floor*, have none: they say what the servers' libraries
  and libstdc++ cost; README.md, "The floor")
  with --telemetry --metrics, rtloop-quickstart
  --metrics, and 4 tasks with both servers (also
  with small histograms, --hdr-layout=7:30)     VmRSS <= 32 MiB and VmLck <= 48 MiB

  flock /tmp/rtloop-measure.lock python3 bench/footprint/footprint.py --bin build/bin
  python3 bench/footprint/footprint.py --json footprint.json   # also the figures as JSON
  python3 bench/footprint/footprint.py --report-only           # exit 0 whatever the figures
  python3 bench/footprint/footprint.py --unlocked              # no -m, no targets (no privilege)

Needs the memlock limit (root, CAP_IPC_LOCK or ulimit -l unlimited) for -m. Python 3 standard
library only.
"""

import argparse
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

MIB = 1024 * 1024
SERVERS = ["--telemetry=127.0.0.1:0", "--metrics=127.0.0.1:0"]


def rows(bin_dir, cyclictest, lock):
    """(label, argv, targets): targets is a list of (field, bound in bytes or 'x<ratio>')."""
    cyclic = os.path.join(bin_dir, "rtloop-cyclic")
    quickstart = os.path.join(bin_dir, "rtloop-quickstart")
    out = []
    if not lock:  # the smoke test's unprivileged run: same rows, nothing locked, nothing judged
        return [(label.replace(" -m", ""),
                 [a for a in argv if a != "-m"] + (["-u"] if label.startswith("floor") else []),
                 []) for label, argv, _ in rows(bin_dir, cyclictest, True)]
    if cyclictest:
        out.append(("cyclictest -m -t1", [cyclictest, "-m", "-t1", "-q"], []))
    out.append(("rtloop-cyclic -m -t1", [cyclic, "-m", "-t1", "-q"],
                [("VmRSS", "x2")] if cyclictest else []))
    # The floor (README.md, "The floor"): the executor and the telemetry core alone, no servers;
    # built where rtloop's libraries are static. No target: it says what the rest costs.
    for suffix, how in (("", "libstdc++ shared"), ("-static-libstdc++", "libstdc++ linked in")):
        floor = os.path.join(bin_dir, "rtloop-footprint-floor" + suffix)
        if os.access(floor, os.X_OK):
            out.append((f"floor: executor + telemetry, no servers ({how})", [floor], []))
    out.append(("rtloop-cyclic -m -t1 --telemetry", [cyclic, "-m", "-t1", "-q", SERVERS[0]], []))
    small = [("VmRSS", 32 * MIB), ("VmLck", 48 * MIB)]
    out.append(("rtloop-cyclic -m -t1 --telemetry --metrics",
                [cyclic, "-m", "-t1", "-q"] + SERVERS, small))
    out.append(("rtloop-cyclic -m -t4 --telemetry --metrics (4 tasks)",
                [cyclic, "-m", "-t4", "-q"] + SERVERS, small))
    # A small board's histograms (bench/footprint/README.md, "Memory per task"): 0.8 % up to 1.07 s.
    out.append(("rtloop-cyclic -m -t4 --telemetry --metrics --hdr-layout=7:30",
                [cyclic, "-m", "-t4", "-q", "--hdr-layout=7:30"] + SERVERS, small))
    out.append(("rtloop-quickstart --metrics",
                [quickstart, "127.0.0.1:0", "--metrics=127.0.0.1:0"], small))
    return out


def read_status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "VmLck"):
                fields[key] = int(value.split()[0]) * 1024
            elif key == "Threads":
                fields[key] = int(value)
    names = collections.Counter()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names[f.read().strip()] += 1
        except OSError:
            pass  # ended meanwhile
    fields["thread_names"] = dict(sorted(names.items()))
    return fields


def measure(argv, settle):
    """Figures of `argv` after `settle` s, or (None, why) when it did not run that long."""
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
        except OSError as e:
            return None, str(e)
        deadline = time.monotonic() + settle
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        figures = None
        if proc.poll() is None:
            try:
                figures = read_status(proc.pid)
            except OSError:
                figures = None
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if figures is not None:
            return figures, ""
        err.seek(0)
        lines = err.read().decode(errors="replace").strip().splitlines()
        return None, f"exit {proc.returncode}: " + (lines[-1] if lines else "no message")


def judge(targets, figures, reference):
    """[(text, ok)] for each target of a row."""
    verdicts = []
    for field, bound in targets:
        if isinstance(bound, str):  # "x<ratio>" of the reference row
            limit = float(bound[1:]) * reference[field]
            text = f"{field} <= {bound[1:]}x cyclictest ({limit / MIB:.1f} MiB)"
        else:
            limit = bound
            text = f"{field} <= {bound / MIB:.0f} MiB"
        verdicts.append((text, figures[field] <= limit))
    return verdicts


def mib(n):
    return f"{n / MIB:7.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/bin", help="directory of rtloop-cyclic etc.")
    ap.add_argument("--cyclictest", default=shutil.which("cyclictest"),
                    help="cyclictest to compare with (default: the one on PATH)")
    ap.add_argument("--settle", type=float, default=2.0, help="seconds before reading (2)")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--report-only", action="store_true", help="exit 0 when a target is missed")
    ap.add_argument("--unlocked", action="store_true",
                    help="without -m and without targets (a run without the memlock privilege)")
    args = ap.parse_args()
    if args.settle <= 0:
        ap.error(f"--settle must be > 0, got {args.settle}")
    for name in ("rtloop-cyclic", "rtloop-quickstart"):
        if not os.access(os.path.join(args.bin, name), os.X_OK):
            ap.error(f"no {name} in {args.bin}: build it, or give --bin DIR")

    results, missed, failed, reference = [], 0, 0, None
    table = rows(args.bin, args.cyclictest, not args.unlocked)
    w = max(len(label) for label, _, _ in table)
    print(f"{'program':{w}} {'VmRSS':>7} {'RssAnon':>7} {'RssFile':>7} {'VmLck':>7} {'thr':>3}"
          "  targets (MiB)")
    for label, argv, targets in table:
        figures, why = measure(argv, args.settle)
        if figures is None:
            failed += 1
            print(f"{label:{w}} did not run: {why}")
            results.append({"program": label, "command": argv, "error": why})
            continue
        if label.startswith("cyclictest"):
            reference = figures
        verdicts = judge(targets, figures, reference) if (reference or not targets) else []
        missed += sum(1 for _, ok in verdicts if not ok)
        text = "; ".join(f"{t}: {'ok' if ok else 'MISSED'}" for t, ok in verdicts)
        print(f"{label:{w}} {mib(figures['VmRSS'])} {mib(figures['RssAnon'])} "
              f"{mib(figures['RssFile'])} {mib(figures['VmLck'])} {figures['Threads']:3}  {text}")
        results.append({"program": label, "command": argv, **figures,
                        "targets": [{"target": t, "met": ok} for t, ok in verdicts]})
    print("\nthreads:")
    for r in results:
        if "thread_names" in r:
            names = ", ".join(f"{n} x{c}" if c > 1 else n for n, c in r["thread_names"].items())
            print(f"  {r['program']}: {names}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"schema": 1, "settle_s": args.settle, "rows": results}, f, indent=1)
    print(f"\n{missed} target(s) missed, {failed} program(s) did not run")
    if failed:
        return 2
    return 0 if missed == 0 or args.report_only else 1


if __name__ == "__main__":
    sys.exit(main())
