#!/usr/bin/env python3
"""Stamps the moment processes exit, in microseconds since the epoch (CLOCK_REALTIME, the
clock Redis's PEXPIRETIME counts on).

    deathwatch.py < PIDS > EVENTS

It reads process ids, one a line, as they come, and answers each on standard output with
"watching PID" once it watches it (or "gone PID" if it exited already), then "exited PID US"
when it exits. Any process will do, not only a child: a pidfd (Linux 5.3) becomes readable
when the process exits, whoever its parent is. One watcher serves a whole scenario, so that
no try waits for a Python to start on a busy machine.

To stamp an exit within microseconds even when every CPU is busy, the watcher makes itself
SCHED_FIFO, so that its wake-up preempts any ordinary task; without the privilege (not root,
no CAP_SYS_NICE) it says so on stderr and goes on, less exactly (later, never earlier).
It ends at the end of its input, once every process it watches has exited.
"""

import os
import select
import sys
import time


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
    except OSError as e:
        print(f"deathwatch: not SCHED_FIFO ({e.strerror}): exits may be stamped late",
              file=sys.stderr)
    poll = select.poll()
    stdin = sys.stdin.fileno()
    poll.register(stdin, select.POLLIN)
    watched = {}  # pidfd -> pid
    pending = b""
    reading = True
    while reading or watched:
        for fd, _ in poll.poll():
            if fd in watched:  # readable pidfd: the process has exited
                now = time.time_ns() // 1000  # first thing after the wake-up
                say(f"exited {watched[fd]} {now}")
                poll.unregister(fd)
                os.close(fd)
                del watched[fd]
                continue
            data = os.read(stdin, 4096)
            if not data:
                poll.unregister(stdin)
                reading = False
                continue
            *lines, pending = (pending + data).split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                pid = int(line)
                try:
                    pidfd = os.pidfd_open(pid)
                except ProcessLookupError:
                    say(f"gone {pid}")
                    continue
                watched[pidfd] = pid
                poll.register(pidfd, select.POLLIN)
                say(f"watching {pid}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
