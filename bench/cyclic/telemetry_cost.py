#!/usr/bin/env python3
"""What telemetry costs the loop: the same rtloop-cyclic run with telemetry off, on without a
client, and on with a local client streaming every sample, A/B in one session.

Each round runs the three modes one after the other (the order rotates from round to round, so
that a slow drift of the machine does not favour one mode), each for the same duration; the ratios
on/off and client/off of the average and the 99th percentile wake-up latency are taken per round
and reported as medians over the rounds. Results are read the way fidelity.py reads them
(cyclictest's --json: the "%.2f" avg, p99 from the 1-us -h histogram, all threads pooled).

  off     rtloop-cyclic OPTIONS                      (the telemetry hub is always there: it owns
                                                      the percentiles; no server, no consumer)
  on      rtloop-cyclic OPTIONS --telemetry=ADDR     (the runtime's defaults, no client)
  client  as on, plus rtloop-cyclic-sink ADDR streaming every sample

Where the cost comes from: during every run the script reads /proc/PID/task/*/schedstat twice (1 s
after the start and 0.5 s before the end) and reports per group of threads (measurement, main,
collector, gRPC and the other telemetry threads, and the client process) how often they were
scheduled in (wake-ups/s) and how much CPU they used (ms/s), and which CPUs they may run on. With
--perf it also runs each mode once more under `perf record -e sched:sched_switch -a` and counts,
per CPU, the switches to each thread group.

  bench/cyclic/telemetry_cost.py --rtloop build/bin/rtloop-cyclic --pairs 5 --duration 10
  bench/cyclic/telemetry_cost.py --load stress            # under stress-ng on every CPU
  bench/cyclic/telemetry_cost.py -- -m -a 1 -p 99 -i 500  # other options (no -D/-h/--json/-q)

Targets at the runtime's defaults (issue 9): on/off <= 1.01 for avg and p99, client/off <= 1.03.
On a machine where the measurement threads leave no CPU free (2 CPUs and -S) every telemetry
wake-up lands on a measured CPU; with a housekeeping CPU the runtime moves its threads there.
Needs root (SCHED_FIFO) and, for --load stress, stress-ng. Python 3 standard library only; take
the measurement runs under `flock /tmp/rtloop-measure.lock` on a shared machine.
"""

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fidelity  # noqa: E402  (the measurement and its parsing, shared)

DEFAULT_OPTIONS = ["-m", "-Sp99", "-i1000"]
MODES = ["off", "on", "client"]

# Thread groups by name (comm). The main thread is the one whose tid is the pid.
GROUPS = [
    ("measure", lambda comm: comm.startswith("cyclic")),
    ("collector", lambda comm: comm == "rtloop-collect"),
    ("grpc", lambda comm: comm in ("default-executo", "resolver-execut", "grpc_global_tim",
                                   "event_engine", "timer_manager", "nexting_thread",
                                   "rtloop-pump", "rtloop-grpc-sup") or comm.startswith("grpcpp")),
    ("http", lambda comm: comm.startswith("civetweb") or comm == "rtloop-window"),
]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rtloop", default=None, help="rtloop-cyclic binary (default: build/bin)")
    p.add_argument("--sink", default=None, help="rtloop-cyclic-sink (default: next to --rtloop)")
    p.add_argument("--pairs", type=int, default=5, help="rounds of the three modes (default 5)")
    p.add_argument("--duration", type=int, default=10, help="seconds per run (default 10)")
    p.add_argument("--buckets", type=int, default=10000, help="-h buckets (us) for p99")
    p.add_argument("--load", choices=["idle", "stress"], default="idle")
    p.add_argument("--stress", default="--cpu 0 --cpu-method all",
                   help="stress-ng arguments for --load stress (default: every CPU busy)")
    p.add_argument("--port", type=int, default=50556,
                   help="loopback port of the telemetry server (0: a free one, chosen once)")
    p.add_argument("--perf", action="store_true",
                   help="also one run per mode under perf sched_switch tracing (per-CPU counts)")
    p.add_argument("options", nargs="*", help="rtloop-cyclic options after '--' (default: %s)"
                   % " ".join(DEFAULT_OPTIONS))
    a = p.parse_args()
    a.rtloop = fidelity.find_rtloop(p, a.rtloop)
    if a.port == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            a.port = s.getsockname()[1]
    if a.sink is None:
        a.sink = os.path.join(os.path.dirname(a.rtloop), "rtloop-cyclic-sink")
    if not os.access(a.sink, os.X_OK):
        p.error("rtloop-cyclic-sink not found: pass --sink PATH")
    if a.pairs < 1 or a.duration < 3:
        p.error("--pairs must be >= 1 and --duration >= 3")
    for opt in a.options:
        if opt.startswith(("-D", "--duration", "-h", "-H", "--histogram", "--histofall",
                           "--json", "-l", "--loops", "-q", "--telemetry")):
            p.error("option %s is set by the script" % opt)
    return a


# --- Where the cost comes from: /proc ---

def read_threads(pid):
    """{tid: (comm, cpu_ns, slices, allowed)} of process `pid` now ({} once it has exited)."""
    out = {}
    base = "/proc/%d/task" % pid
    try:
        tids = os.listdir(base)
    except OSError:
        return out
    for tid in tids:
        try:
            with open("%s/%s/comm" % (base, tid)) as f:
                comm = f.read().strip()
            with open("%s/%s/schedstat" % (base, tid)) as f:
                cpu_ns, _wait_ns, slices = (int(x) for x in f.read().split())
            allowed = ""
            with open("%s/%s/status" % (base, tid)) as f:
                for line in f:
                    if line.startswith("Cpus_allowed_list:"):
                        allowed = line.split()[1]
            out[int(tid)] = (comm, cpu_ns, slices, allowed)
        except (OSError, ValueError):
            continue
    return out


def group_of(pid, tid, comm):
    if tid == pid:
        return "main"
    for name, match in GROUPS:
        if match(comm):
            return name
    return "other"  # unnamed helpers: -F, --max-over-time, short-lived start-up threads


def sample_costs(proc, sink, duration):
    """Reads the threads of `proc` (and `sink`) 1 s after the start and 0.5 s before the end;
    returns per group {wakeups_per_s, cpu_ms_per_s, allowed}."""
    time.sleep(1.0)
    t0 = time.monotonic()
    first = read_threads(proc.pid)
    first_sink = read_threads(sink.pid) if sink is not None else {}
    time.sleep(max(duration - 1.5, 0.5))
    dt = time.monotonic() - t0
    last = read_threads(proc.pid)
    last_sink = read_threads(sink.pid) if sink is not None else {}
    groups = {}

    def add(name, a, b):
        g = groups.setdefault(name, {"wakeups_per_s": 0.0, "cpu_ms_per_s": 0.0, "allowed": set()})
        g["wakeups_per_s"] += (b[2] - a[2]) / dt
        g["cpu_ms_per_s"] += (b[1] - a[1]) / 1e6 / dt
        g["allowed"].add(b[3])

    for tid, b in last.items():
        a = first.get(tid, (b[0], 0, 0, b[3]))  # a thread born meanwhile counts from 0
        add(group_of(proc.pid, tid, b[0]), a, b)
    for tid, b in last_sink.items():
        a = first_sink.get(tid, (b[0], 0, 0, b[3]))
        add("client", a, b)
    return groups


# --- Runs ---

def mode_command(args, options, mode, out_json):
    cmd = fidelity.measurement_command(args.rtloop, options, args.duration, args.buckets, out_json)
    sink_cmd = None
    if mode in ("on", "client"):
        cmd.append("--telemetry=127.0.0.1:%d" % args.port)
    if mode == "client":
        sink_cmd = [args.sink, "127.0.0.1:%d" % args.port, "10"]
    return cmd, sink_cmd


def run_mode(args, options, mode, tmp, tag):
    out_json = os.path.join(tmp, "%s-%s.json" % (tag, mode))
    cmd, sink_cmd = mode_command(args, options, mode, out_json)
    s = fidelity.run_measurement(cmd, out_json, args.buckets, args.duration, sink_cmd,
                                 lambda proc, sink: sample_costs(proc, sink, args.duration))
    if mode == "client" and s["sink"].get("exit") != 0:
        raise RuntimeError("the client did not account for every sample: %s" % s["sink"])
    return s


def perf_switches(args, options, mode, tmp):
    """One run under perf: per (CPU, thread group) the times a thread of the group was switched
    out (each wake-up ends with one; counting the switch-out side, because this VM's trace misses
    some switches in from the idle task), over duration - 2 s."""
    out_json = os.path.join(tmp, "perf-%s.json" % mode)
    data = os.path.join(tmp, "perf-%s.data" % mode)
    cmd, sink_cmd = mode_command(args, options, mode, out_json)
    record_s = args.duration - 2

    def trace(proc, sink):
        time.sleep(1.0)
        subprocess.run(["perf", "record", "-q", "-e", "sched:sched_switch", "-a", "-o", data,
                        "--", "sleep", str(record_s)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
        return proc.pid, sink.pid if sink is not None else None

    s = fidelity.run_measurement(cmd, out_json, args.buckets, args.duration, sink_cmd, trace)
    pid, sink_pid = s["extra"]
    script = subprocess.run(["perf", "script", "-i", data, "-F", "cpu,trace"],
                            capture_output=True, text=True, check=False).stdout
    counts = {}
    for line in script.splitlines():
        # "[001] prev_comm=NAME prev_pid=TID prev_prio=P prev_state=S ==> next_comm=... ..."
        if "==>" not in line:
            continue
        cpu = line.split("]")[0].strip(" [")
        prev = line.split("==>")[0].split()
        fields = dict(f.split("=", 1) for f in prev if "=" in f)
        comm, tid = fields.get("prev_comm", "?"), int(fields.get("prev_pid", "0"))
        if tid == 0:
            continue  # the idle task
        if tid == sink_pid:
            group = "client"
        elif comm.startswith(("rtloop-cyclic-s",)):
            group = "client"
        else:
            group = group_of(pid, tid, comm)
            if group == "other" and not comm.startswith(("rtloop", "default-exec", "cyclic")):
                group = "system"  # kernel threads, perf, this script
        counts.setdefault(cpu, {}).setdefault(group, 0)
        counts[cpu][group] += 1
    return {cpu: {g: n / record_s for g, n in c.items()} for cpu, c in counts.items()}


def median_groups(runs):
    names = sorted({g for r in runs for g in r["extra"]})
    out = {}
    for g in names:
        wake = [r["extra"].get(g, {}).get("wakeups_per_s", 0.0) for r in runs]
        cpu = [r["extra"].get(g, {}).get("cpu_ms_per_s", 0.0) for r in runs]
        allowed = sorted(set().union(*(r["extra"].get(g, {}).get("allowed", set()) for r in runs)))
        out[g] = (statistics.median(wake), statistics.median(cpu), ",".join(allowed))
    return out


def print_round(k, order, results):
    for mode in order:
        s = results[mode]
        note = ("streamed %s lost %s" % (s["sink"].get("samples", "?"), s["sink"].get("lost", "?"))
                if mode == "client" else "")
        print("%-5d %-7s %9.2f %9.0f %9.0f %9d  %s" % (k, mode, s["avg"], s["p99"], s["max"],
                                                       s["cycles"], note))
    off = results["off"]
    for mode in ("on", "client"):
        r = results[mode]
        print("%-5d %-7s %9.3f %9.3f %9.3f" % (k, mode + "/off", fidelity.ratio(r["avg"], off["avg"]),
                                               fidelity.ratio(r["p99"], off["p99"]),
                                               fidelity.ratio(r["max"], off["max"])))


def main():
    args = parse_args()
    options = args.options or DEFAULT_OPTIONS
    if args.load == "stress" and shutil.which("stress-ng") is None:
        sys.exit("stress-ng not found: apt-get install stress-ng (or --load idle)")
    print("# rtloop-cyclic: %s, client: %s" % (args.rtloop, args.sink))
    print("# options: %s -q -D%d -h%d --json=...; modes off / on (--telemetry) / client" % (
        " ".join(options), args.duration, args.buckets))
    print("# machine: %s, %d CPUs, kernel %s, load: %s%s" % (
        os.uname().nodename, os.cpu_count(), os.uname().release, args.load,
        (" (stress-ng %s)" % args.stress) if args.load == "stress" else ""))
    stress = None
    if args.load == "stress":
        stress = subprocess.Popen(["stress-ng"] + args.stress.split() + ["--quiet"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        time.sleep(1.0)
    runs = {m: [] for m in MODES}
    ratios = {m: [] for m in ("on", "client")}
    perf = {}
    try:
        with tempfile.TemporaryDirectory(prefix="rtloop-telemetry-cost-") as tmp:
            print("\n%-5s %-7s %9s %9s %9s %9s" % ("round", "mode", "avg_us", "p99_us", "max_us",
                                                  "cycles"))
            for k in range(args.pairs):
                order = MODES[k % 3:] + MODES[:k % 3]
                results = {m: run_mode(args, options, m, tmp, "r%d" % k) for m in order}
                for m in MODES:
                    runs[m].append(results[m])
                for m in ("on", "client"):
                    ratios[m].append({q: fidelity.ratio(results[m][q], results["off"][q])
                                      for q in ("avg", "p99", "max")})
                print_round(k, order, results)
            if args.perf:
                perf = {m: perf_switches(args, options, m, tmp) for m in MODES}
    finally:
        if stress is not None:
            os.killpg(stress.pid, signal.SIGTERM)
            stress.wait()

    print("\n## where the cost comes from (medians over the rounds)")
    print("%-7s %-10s %12s %10s  %s" % ("mode", "threads", "wakeups/s", "cpu ms/s", "cpus"))
    for m in MODES:
        for g, (wake, cpu, allowed) in median_groups(runs[m]).items():
            print("%-7s %-10s %12.1f %10.2f  %s" % (m, g, wake, cpu, allowed))
    if perf:
        print("\n## switches out per second of each thread group, per CPU (one traced run a mode)")
        for m, per_cpu in perf.items():
            for cpu, groups in sorted(per_cpu.items()):
                print("%-7s cpu %s: %s" % (m, cpu, ", ".join(
                    "%s %.0f" % (g, n) for g, n in sorted(groups.items()))))

    print("\n## summary: medians of %d rounds (targets: on/off <= 1.01, client/off <= 1.03)"
          % args.pairs)
    for m in ("on", "client"):
        med = {q: statistics.median(r[q] for r in ratios[m]) for q in ("avg", "p99", "max")}
        print("%-10s avg %.3f  p99 %.3f  max %.3f" % (m + "/off", med["avg"], med["p99"],
                                                       med["max"]))


if __name__ == "__main__":
    main()
