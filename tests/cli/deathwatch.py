#!/usr/bin/env python3
"""Prints, in microseconds since the epoch (CLOCK_REALTIME), when a process exits.

    deathwatch.py PID
    deathwatch.py --pidfile FILE [--timeout SECONDS] [--ready FILE]

Any process will do, not only a child: a pidfd (Linux 5.3) becomes readable when the
process exits, whoever its parent is. To stamp that moment within microseconds even when
every CPU is busy, the watcher makes itself SCHED_FIFO, so that its wake-up preempts any
ordinary task; without the privilege (not root, no CAP_SYS_NICE) it says so on stderr and
goes on, less exactly. Exit status 0 with the time on stdout; 1 if the process could not
be watched (already gone, or the pid file never came), 2 on a usage error.
"""

import argparse
import os
import select
import sys
import time


def main():
    ap = argparse.ArgumentParser(description="print when a process exits (µs, epoch)")
    ap.add_argument("pid", nargs="?", type=int, help="the process to watch")
    ap.add_argument("--pidfile", help="wait for this file, and read the pid from it")
    ap.add_argument("--timeout", type=float, default=120, help="give up after this (s)")
    ap.add_argument("--ready", help="write this file once the process is being watched")
    a = ap.parse_args()
    if (a.pid is None) == (a.pidfile is None):
        ap.error("give a PID or --pidfile, not both")

    # Real-time first: everything after this, the wake-up at the exit included, runs
    # ahead of ordinary (SCHED_OTHER) tasks.
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
    except OSError as e:
        print(f"deathwatch: not SCHED_FIFO ({e.strerror}); times may be late under load",
              file=sys.stderr)

    give_up = time.monotonic() + a.timeout
    pid = a.pid
    # The pid file: wait until it holds a whole line (it may be seen half-written).
    while pid is None:
        try:
            with open(a.pidfile) as f:
                text = f.read()
            if text.endswith("\n"):
                pid = int(text)
                break
        except FileNotFoundError:
            pass
        if time.monotonic() >= give_up:
            print(f"deathwatch: no pid in {a.pidfile}", file=sys.stderr)
            return 1
        time.sleep(0.001)

    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        print(f"deathwatch: no process {pid}", file=sys.stderr)
        return 1
    if a.ready:
        with open(a.ready, "w") as f:
            f.write(f"{pid}\n")

    # POLLIN on a pidfd: the process has exited (it may still be a zombie, unreaped).
    p = select.poll()
    p.register(fd, select.POLLIN)
    left = give_up - time.monotonic()
    if not p.poll(max(left, 0) * 1000):
        print(f"deathwatch: {pid} still runs after {a.timeout}s", file=sys.stderr)
        return 1
    print(time.time_ns() // 1000, flush=True)  # read first thing after the wake-up
    return 0


if __name__ == "__main__":
    sys.exit(main())
