#!/usr/bin/env python3
"""bench/rtcost/rtcost.py's --perf summary on made-up counts (no PMU needed): the per-round ratio
rtloop/cyclictest of each event, its median and range, the user and kernel counts' sum, and an
event a round did not count (None: "<not supported>") left out rather than taken as zero.

  python3 tests/testing/rtcost_perf_summary_test.py   # exit 0 when every check holds
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                                "rtcost"))
import rtcost  # noqa: E402


def row(k, tool, user, kernel, misses=None):
    return {"round": k, "mode": "bare", "tool": tool, "wakeups": 1000,
            "per_wakeup": {"instructions:u": user, "instructions:k": kernel,
                           "instructions": user + kernel, "cycles": None, "cache-misses": misses}}


def main():
    rows = [row(0, "cyclictest", 200, 3800), row(0, "rtloop", 400, 3800),
            row(1, "rtloop", 400, 3900), row(1, "cyclictest", 200, 3700),
            row(2, "cyclictest", 200, 3800, misses=2.0), row(2, "rtloop", 400, 3800)]
    s = rtcost.perf_summary(rows, ["bare"])["bare"]
    checks = [
        ("three rounds", s["instructions"]["rounds"] == 3),
        ("sum ratio median 4200/4000", abs(s["instructions"]["ratio_median"] - 1.05) < 1e-9),
        ("sum ratio max 4300/3900", abs(s["instructions"]["ratio_max"] - 4300 / 3900) < 1e-9),
        ("user ratio 2", s["instructions:u"]["ratio_median"] == 2.0),
        ("kernel median 1", s["instructions:k"]["ratio_median"] == 1.0),
        ("an event never counted is left out", "cycles" not in s),
        ("a round's one-sided count is not a pair", "cache-misses" not in s),
    ]
    failed = [name for name, ok in checks if not ok]
    for name in failed:
        print("FAIL %s: %r" % (name, s))
    print("%d of %d checks hold" % (len(checks) - len(failed), len(checks)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
