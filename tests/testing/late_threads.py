#!/usr/bin/env python3
"""A stand-in for cyclictest whose measuring thread starts late: it waits --delay seconds (default
1.5), then runs one thread waking every millisecond until SIGINT. bench/rtcost's test gives it as
--cyclictest to check that the script waits for a tool's measuring threads (a slow board, an
emulated one, or -m on a large process take seconds to start them) instead of calling the run
failed. Every other argument (cyclictest's options) is ignored.

  tests/testing/late_threads.py --delay 1.5 -m -t1 -a1 -p80 -i1000 -q

Threads: the main one (sleeps, then waits for the signal) and the "measuring" one.
"""
import signal
import sys
import threading
import time

delay = 1.5
if "--delay" in sys.argv[1:-1]:
    delay = float(sys.argv[sys.argv.index("--delay") + 1])
stop = threading.Event()
signal.signal(signal.SIGINT, lambda *_: stop.set())
signal.signal(signal.SIGTERM, lambda *_: stop.set())
stop.wait(delay)


def wake_every_ms():
    while not stop.is_set():
        time.sleep(0.001)


worker = threading.Thread(target=wake_every_ms)
worker.start()
while worker.is_alive():
    worker.join(0.1)
