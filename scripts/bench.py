#!/usr/bin/env python3
"""redlock-run side by side with flock(1), on this machine, in one run.

Started by scripts/bench.sh, which provides the binaries and a throwaway redis-server.
Prints a markdown table of figures and their ratios to flock's, then one of waiting at scale
(lines of up to 500 waiters on one key, a long hold, the server's memory per waiter); exits
non-zero only when something did not work (a failed run, a lost increment, a waiter that did
not get its turn), never for a missed target.
"""

import argparse
import collections
import functools
import os
import platform
import resource
import select
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def run_timed(argv, env):
    """Runs argv to its end; returns (wall nanoseconds, wait status, CPU seconds: its own and
    that of the processes it reaped)."""
    start = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env)
    _, status, usage = os.wait4(pid, 0)
    return time.perf_counter_ns() - start, status, usage.ru_utime + usage.ru_stime


def children_cpu():
    """The CPU seconds of the bench's children reaped so far, and of what they reaped."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_so_far(pid):
    """A running process's CPU seconds so far (its main thread's: the barrier shell's)."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def percentile(values, p):
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, -(-len(ordered) * p // 100) - 1))
    return ordered[index]


def ms(ns):
    return f"{ns / 1e6:.2f} ms"


def most_at_once(sections):
    """The most of sections ((start, end) pairs) that were inside at once."""
    events = sorted([(a, 1) for a, _ in sections] + [(b, -1) for _, b in sections],
                    key=lambda e: (e[0], e[1]))
    inside = most = 0
    for _, step in events:
        inside += step
        most = max(most, inside)
    return most


# A holder's command in the rows that wait at scale: it says that it holds, then holds until
# the bench closes its stdin, which ends it at once (a file it polled for would not).
HOLD = ["sh", "-c", "echo held && exec cat >/dev/null"]
# Runs its command ("$@") once the bench lets it go: it says that it is ready on stdout, then
# waits for the end of stdin, a pipe that the bench closes for all of them at once.
BARRIER = ["sh", "-c", 'echo && read -r _; exec "$@" </dev/null >/dev/null', "sh"]
# A line of waiters behind holders: the waiters' options for redlock-run and for flock(1)
# (None: flock has no counterpart); the holders' options for redlock-run (flock's hold KEY
# exclusively), and how many hold: as many as KEY admits, so that every waiter waits; and the
# most sections that may run at once (None: any number).
Line = collections.namedtuple("Line", "options flock_options holder_options holders most")
LINES = {
    "exclusive": Line((), (), (), 1, 1),
    "shared": Line(("-s",), ("-s",), (), 1, None),
    "limit": Line(("-l", "4"), None, ("-l", "4"), 4, 4),
}


class Server:
    """One connection to the server that stays open, speaking RESP itself, for the rows that
    watch the server while redlock-run waits: it opens no connection while they count those,
    and it counts the commands it sends, which their figures then leave out."""

    def __init__(self, url):
        host, port = url[len("redis://"):].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.replies = self.sock.makefile("rb")
        self.sent = collections.Counter()

    def call(self, *words):
        words = [str(w) for w in words]
        self.sock.sendall(f"*{len(words)}\r\n".encode() + b"".join(
            f"${len(w.encode())}\r\n{w}\r\n".encode() for w in words))
        reply = self.reply()
        # Counted once answered: the server counts a command once it has run, so an INFO
        # commandstats does not count itself.
        self.sent[words[0].lower()] += 1
        return reply

    def reply(self):
        line = self.replies.readline().rstrip(b"\r\n")
        kind, rest = line[:1], line[1:].decode()
        if kind == b"-":
            raise RuntimeError(rest)
        if kind == b":":
            return int(rest)
        if kind == b"$":
            return None if int(rest) < 0 else self.replies.read(int(rest) + 2)[:-2].decode()
        if kind == b"*":
            return None if int(rest) < 0 else [self.reply() for _ in range(int(rest))]
        return rest

    def info(self, section):
        return dict(line.split(":", 1) for line in self.call("INFO", section).splitlines()
                    if ":" in line)

    def reset(self):
        """CONFIG RESETSTAT: executed() counts from here."""
        self.call("CONFIG", "RESETSTAT")
        self.sent.clear()

    def executed(self):
        """Calls per command since reset(), scripts' own included and the bench's left out."""
        calls = collections.Counter()
        for name, fields in self.info("commandstats").items():
            name = name[len("cmdstat_"):]
            if not name.startswith("config"):  # the bench's RESETSTAT: scripts may not CONFIG
                calls[name] = int(dict(f.split("=") for f in fields.split(","))["calls"])
        calls.subtract(self.sent)
        return +calls

    def cpu(self):
        """The server's CPU time so far (user + system), in seconds."""
        fields = self.info("cpu")
        return float(fields["used_cpu_user"]) + float(fields["used_cpu_sys"])


class Processes:
    """The processes of one measurement, each of which must exit 0. Leaving the `with` block
    stops those still running (the measurement failed), so that none outlives the bench."""

    def __init__(self, bench, label):
        self.bench, self.label, self.started = bench, label, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in self.started:
            for pipe in (p.stdin, p.stdout):
                if pipe:
                    pipe.close()  # a holder's stdin: it lets go
            if p.poll() is None:
                p.terminate()  # redlock-run passes it on, and releases
        for p in self.started:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def start(self, argv, **kwargs):
        p = subprocess.Popen(argv, env=self.bench.env, **kwargs)
        self.started.append(p)
        return p

    def hold(self, argvs):
        """Starts a holder per argv, each running HOLD, and returns them once all hold."""
        holders = [self.start(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                   for argv in argvs]
        for h in holders:
            said = h.stdout.readline()
            h.stdout.close()
            if said != b"held\n":
                raise RuntimeError(f"{self.label}: a holder exited with {h.wait()} unheld")
        return holders

    @staticmethod
    def release(holders):
        for h in holders:
            h.stdin.close()

    def finish(self, timeout=120):
        """Waits for all the processes to exit: a failure unless each exits 0 in time. It
        returns as the last one exits: Popen.wait with a timeout polls, sleeping up to 50 ms
        at a time (0.5 ms, then twice as long each time), which rounded a short line's time up
        to the next of its steps (2 sections in 3.6 ms took 7.5 ms)."""
        deadline = time.monotonic() + timeout
        running = {os.pidfd_open(p.pid): p for p in self.started if p.returncode is None}
        poller = select.poll()
        for fd in running:
            poller.register(fd, select.POLLIN)
        while running and time.monotonic() < deadline:
            for fd, _ in poller.poll(max(0.0, deadline - time.monotonic()) * 1000):
                poller.unregister(fd)
                os.close(fd)
                running.pop(fd).wait()
        for fd in running:
            os.close(fd)
        ends = collections.Counter()
        for p in self.started:
            code = p.poll()
            if code is None:
                ends[f"still ran after {timeout} s"] += 1
                continue
            if code:
                ends[f"exited with {code}" if code > 0 else f"killed by signal {-code}"] += 1
        if ends:
            self.bench.failures.append(f"{self.label}: of {len(self.started)} processes, " +
                                       ", ".join(f"{n} {end}" for end, n in ends.items()))


class Bench:
    def __init__(self, args):
        self.args = args
        self.flock = shutil.which("flock")
        self.redlock = os.path.abspath(args.redlock_run)
        self.critical = os.path.abspath(args.critical)
        self.url = args.url
        self.tmp = tempfile.mkdtemp(prefix="redlock-bench.")
        self.env = dict(os.environ, REDLOCK_URL=self.url)
        self.failures = []

    def lock_argv(self, tool, key, command, options=()):
        if tool == "flock":
            return [self.flock, *options, os.path.join(self.tmp, key + ".lock")] + command
        return [self.redlock, *options, key, "--"] + command

    def check(self, tool, status):
        if status != 0:
            self.failures.append(f"{tool} exited with wait status {status} "
                                 f"(exit {status >> 8}, signal {status & 0x7f})")

    def uncontended(self, runs):
        """Median and p90 of `LOCK KEY -- true`, the two tools interleaved, and the median CPU
        seconds of a run (the tool's, its command's and, for redlock-run, its guard's)."""
        times = {"flock": [], "redlock-run": []}
        cpu = {"flock": [], "redlock-run": []}
        true = shutil.which("true")
        for i in range(runs):
            order = ("flock", "redlock-run") if i % 2 == 0 else ("redlock-run", "flock")
            for tool in order:
                ns, status, seconds = run_timed(self.lock_argv(tool, "uncontended", [true]),
                                                self.env)
                self.check(tool, status)
                times[tool].append(ns)
                cpu[tool].append(seconds)
        return {t: (statistics.median(v), percentile(v, 90), statistics.median(cpu[t]))
                for t, v in times.items()}

    def versus(self, runs, env, options=()):
        """Medians of `redlock-run KEY -- true` on the plain server and with env (another URL)
        and options, interleaved, each run of one followed by a run of the other."""
        times = {"plain": [], "other": []}
        true = shutil.which("true")
        other_env = dict(self.env, **env)
        for i in range(runs + 1):  # the first of each untimed: the scripts get cached
            order = ("plain", "other") if i % 2 == 0 else ("other", "plain")
            for kind in order:
                argv = [self.redlock] + (list(options) if kind == "other" else []) + [
                    "versus", "--", true]
                ns, status, _ = run_timed(argv, other_env if kind == "other" else self.env)
                self.check(f"redlock-run {' '.join(options)} with {env}", status)
                if i:
                    times[kind].append(ns)
        return {k: statistics.median(v) for k, v in times.items()}

    def contended(self, tool, workers, iterations, work_us, env=None, label=None):
        """workers x iterations critical sections through one lock."""
        label = label or tool
        env = env or self.env
        counter = os.path.join(self.tmp, f"{label}.counter")
        log = os.path.join(self.tmp, f"{label}.log")
        for path in (counter, log):
            if os.path.exists(path):
                os.unlink(path)
        argv = self.lock_argv(tool, "contended", [self.critical, counter, log, str(work_us)])

        def worker():
            for _ in range(iterations):
                _, status, _ = run_timed(argv, env)
                self.check(label, status)

        threads = [threading.Thread(target=worker) for _ in range(workers)]
        start = time.perf_counter_ns()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter_ns() - start
        with open(counter) as f:
            count = int(f.read().strip() or 0)
        with open(log) as f:
            sections = sorted(tuple(map(int, line.split())) for line in f if line.strip())
        gaps = [b[0] - a[1] for a, b in zip(sections, sections[1:])]
        overlaps = sum(1 for g in gaps if g < 0)
        if overlaps:
            self.failures.append(f"{label}: {overlaps} critical sections overlapped")
        return {
            "per_second": len(sections) / (wall / 1e9),
            "gap_median": statistics.median(gaps) if gaps else 0,
            "gap_p99": percentile(gaps, 99) if gaps else 0,
            "count": count,
        }

    def limited(self, workers, iterations, work_us, limit):
        """workers x iterations sections through `--limit limit` (a semaphore): sections per
        second, and the most that were inside at once (never more than limit)."""
        counter = os.path.join(self.tmp, "limited.counter")
        log = os.path.join(self.tmp, "limited.log")
        argv = [self.redlock, "-l", str(limit), "limited", "--",
                self.critical, counter, log, str(work_us)]

        def worker():
            for _ in range(iterations):
                _, status, _ = run_timed(argv, self.env)
                self.check(f"--limit {limit}", status)

        threads = [threading.Thread(target=worker) for _ in range(workers)]
        start = time.perf_counter_ns()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter_ns() - start
        with open(log) as f:
            sections = [tuple(map(int, line.split())) for line in f if line.strip()]
        most = most_at_once(sections)
        if most > limit:
            self.failures.append(f"--limit {limit}: {most} sections at once")
        return {"per_second": len(sections) / (wall / 1e9), "most": most}

    def redis(self, *args, url=None):
        out = subprocess.run(["redis-cli", "-u", url or self.url] + list(args),
                             capture_output=True, text=True, check=True)
        return out.stdout

    def commandstats(self, urls=None):
        """Calls per command since the last RESETSTAT, summed over the servers."""
        stats = {}
        for url in urls or [self.url]:
            for line in self.redis("INFO", "commandstats", url=url).splitlines():
                if line.startswith("cmdstat_"):
                    name, fields = line[len("cmdstat_"):].split(":", 1)
                    calls = int(dict(f.split("=") for f in fields.split(","))["calls"])
                    stats[name] = stats.get(name, 0) + calls
        return stats

    def wait_until_old(self, urls, seconds):
        """Waits until every server has run that long: a younger one may have lost a lock in
        a restart, and does not count towards a quorum while another holds the key (the man
        page, SEVERAL SERVERS), so contenders on new servers wait for it."""
        while True:
            ages = []
            for url in urls:
                fields = dict(line.split(":", 1) for line in
                              self.redis("INFO", "server", url=url).split() if ":" in line)
                ages.append(int(fields["uptime_in_seconds"]))
            if min(ages) >= seconds:
                return
            time.sleep(seconds - min(ages))

    def server_cpu(self, url=None):
        """The server's CPU time so far (user + system), in seconds."""
        fields = dict(line.split(":", 1) for line in self.redis("INFO", "cpu", url=url).split()
                      if ":" in line)
        return float(fields["used_cpu_user"]) + float(fields["used_cpu_sys"])

    def server_work(self, runs, body):
        """Commands the server executed (scripts' own included) and its CPU time in ms, per
        call of body, over runs calls."""
        self.redis("CONFIG", "RESETSTAT")
        cpu = self.server_cpu()
        for _ in range(runs):
            body()
        cpu = self.server_cpu() - cpu
        executed = sum(n for name, n in self.commandstats().items()
                       if not name.startswith(("info", "config")))  # the bench's own
        return executed / runs, cpu * 1e3 / runs

    def plain_pair(self):
        """A section's work for the server done the plain way, as a tool that runs once per
        section would: a connection, SET NX PX, a compare-and-delete script, and closing."""
        host, port = self.url[len("redis://"):].rsplit(":", 1)
        release = ("if redis.call('GET', KEYS[1]) == ARGV[1] then "
                   "return redis.call('DEL', KEYS[1]) end return 0")

        def command(conn, *words):
            conn.sendall(f"*{len(words)}\r\n".encode() + b"".join(
                f"${len(w.encode())}\r\n{w}\r\n".encode() for w in words))
            reply = conn.recv(4096)
            if reply.startswith(b"-"):
                raise RuntimeError(reply.decode())

        def pair():
            with socket.create_connection((host, int(port))) as conn:
                command(conn, "SET", "plain", "token", "NX", "PX", "30000")
                command(conn, "EVAL", release, "1", "plain", "token")
        return pair

    def peak_rss(self, tool):
        """VmHWM of the tool's own process while its command sleeps, in KiB."""
        argv = self.lock_argv(tool, "rss", [shutil.which("sleep"), "0.6"])
        pid = os.posix_spawn(argv[0], argv, self.env)
        time.sleep(0.3)
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f)
        _, status = os.waitpid(pid, 0)
        self.check(tool, status)
        return int(fields["VmHWM"].split()[0])

    # Waiting at scale (issue 23): lines of many waiters on one key.

    @functools.cached_property
    def server(self):
        return Server(self.url)

    def fresh_files(self, name):
        """A counter and a log for `critical`, neither there yet."""
        paths = [os.path.join(self.tmp, f"{name}.{kind}") for kind in ("counter", "log")]
        for path in paths:
            if os.path.exists(path):
                os.unlink(path)
        return paths

    def in_line(self, tool, key):
        """How many wait for KEY: in redlock-run's line, or blocked on flock's file."""
        if tool == "redlock-run":
            return self.server.call("ZCARD", f"{{{key}}}:waiting")
        st = os.stat(os.path.join(self.tmp, key + ".lock"))
        lock = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        with open("/proc/locks") as f:  # a blocked request's line has "->"
            return sum(1 for line in f if "->" in line and lock in line.split())

    def wait_in_line(self, tool, key, waiters, blocked=False, timeout=60):
        """Returns once all the waiters (Popen's) wait for KEY, and, with `blocked`, the server
        counts as many blocked clients; a failure when one exits first, or time runs out."""
        deadline = time.monotonic() + timeout
        while True:
            n = self.in_line(tool, key)
            if n == len(waiters) and (not blocked or n == int(
                    self.server.info("clients")["blocked_clients"])):
                return
            if time.monotonic() > deadline or any(p.poll() is not None for p in waiters):
                self.failures.append(f"{tool}: {n} of {len(waiters)} waiters in line on "
                                     f"{key}, and no more")
                return
            time.sleep(0.005)

    def watch(self, tool):
        """For redlock-run, counts the server's work from here: returns its CPU time so far."""
        if tool != "redlock-run":
            return None
        self.server.reset()
        return self.server.cpu()

    def line_result(self, sections, wall, cpu):
        """A line's figures: its sections and seconds, and the server's work since watch()
        returned cpu: commands executed, CPU seconds (None for flock)."""
        result = {"sections": sections, "seconds": wall / 1e9, "commands": None, "cpu": None}
        if cpu is not None:
            result["commands"] = sum(self.server.executed().values())
            result["cpu"] = self.server.cpu() - cpu
        return result

    def check_line(self, label, counter, log, waiters, most, after=0):
        """A failure unless each waiter ran its section once, at most `most` (None: any
        number) inside at once, none before `after` (ns, when the holders let go), and, for a
        lock, without losing an increment."""
        with open(log) as f:
            sections = [tuple(map(int, line.split())) for line in f if line.strip()]
        problems = []
        if len(sections) != waiters:
            problems.append(f"{len(sections)} sections")
        if most is not None and most_at_once(sections) > most:
            problems.append(f"{most_at_once(sections)} sections at once")
        if any(start < after for start, _ in sections):
            problems.append("a section while the holders held")
        if most == 1:
            with open(counter) as f:
                count = int(f.read().strip() or 0)
            if count != waiters:
                problems.append(f"the counter at {count}")
        if problems:
            self.failures.append(f"{label}: {', '.join(problems)} for {waiters} waiters")

    def together(self, tool, waiters):
        """`waiters` processes of `LOCK KEY -- critical` (no work), started together: each
        waits at BARRIER until all are there, then the bench lets them all go at once. Their
        sections per second, from then to the last exit, and for redlock-run, the server's
        work in that time (see line_result)."""
        key, label = f"together-{waiters}", f"{tool}, {waiters} started together"
        counter, log = self.fresh_files(f"{tool}-{key}")
        argv = BARRIER + self.lock_argv(tool, key, [self.critical, counter, log, "0"])
        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        reaped = children_cpu()
        with Processes(self, label) as procs, open(ready_r, "rb") as ready, \
                open(go_w, "wb") as go:
            try:
                for _ in range(waiters):
                    procs.start(argv, stdin=go_r, stdout=ready_w)
            finally:
                os.close(go_r)
                os.close(ready_w)
            ready.read(waiters)  # short only if one died before saying so: finish() tells
            barrier = sum(cpu_so_far(p.pid) for p in procs.started if p.poll() is None)
            cpu = self.watch(tool)
            start = time.monotonic_ns()
            go.close()
            procs.finish()
            wall = time.monotonic_ns() - start
        self.check_line(label, counter, log, waiters, most=1)
        result = self.line_result(waiters, wall, cpu)
        result["processes"] = children_cpu() - reaped - barrier
        return result

    def queued(self, tool, kind, waiters):
        """A line of `waiters` behind holders, as LINES[kind] says: the holders take KEY first,
        then the waiters (`LOCK KEY -- critical`, no work) start, and once all are in line
        the holders let go. Sections per second from then to the last exit; the server's
        work (see line_result) from the waiters' start, lining up included."""
        line = LINES[kind]
        options, holder_options = line.options, line.holder_options
        if tool == "flock":
            options, holder_options = line.flock_options, ()
        key, label = f"queued-{kind}-{waiters}", f"{tool}, {waiters} in line ({kind})"
        counter, log = self.fresh_files(f"{tool}-{key}")
        command = [self.critical, counter, log, "0"]
        with Processes(self, label) as procs:
            held = procs.hold([self.lock_argv(tool, key, HOLD, holder_options)] * line.holders)
            cpu = self.watch(tool)
            started = [procs.start(self.lock_argv(tool, key, command, options),
                                   stdin=subprocess.DEVNULL) for _ in range(waiters)]
            self.wait_in_line(tool, key, started)
            start = time.monotonic_ns()
            procs.release(held)
            procs.finish()
            wall = time.monotonic_ns() - start
        self.check_line(label, counter, log, waiters, most=line.most, after=start)
        return self.line_result(waiters, wall, cpu)

    def server_during(self, seconds):
        """What the server does over the next `seconds`: the commands it executes (as
        Server.executed), the connections it accepts, its CPU time; and how long that was."""
        cpu = self.watch("redlock-run")
        start = time.monotonic()
        time.sleep(seconds)
        executed = self.server.executed()
        cpu = self.server.cpu() - cpu
        # Counted since the RESETSTAT of watch(), as the commands are.
        connections = int(self.server.info("stats")["total_connections_received"])
        return executed, connections, cpu, time.monotonic() - start

    def long_hold(self, waiters, window, alone):
        """`waiters` waiters (`redlock-run KEY -- true`) in line behind a holder with a 1 s
        lease that holds on: what the server does over `window` seconds once all are blocked.
        Commands executed per second, and per waiter per lease, as requests (EVALSHA, EVAL,
        BLPOP), less the holder's renewals, counted first over `alone` seconds; connections
        accepted per second; CPU seconds per second. Then each waiter must get its turn
        once the holder lets go."""
        key, lease = "long-hold", 1.0
        with Processes(self, f"{waiters} waiters behind a long hold") as procs:
            held = procs.hold([self.lock_argv("redlock-run", key, HOLD, ("-t", "1s"))])
            # Past the holder's first renewal (a third of the lease in): it opens the
            # connection that the later ones use, which is no reconnection.
            time.sleep(lease / 2)
            renewals, _, _, alone = self.server_during(alone)
            # The waiters arrive over a lease, not all at once: each looks again about once
            # a lease, and looks that come in bursts would make the count depend on where
            # the window starts.
            true, line = [shutil.which("true")], []
            for _ in range(waiters):
                line.append(procs.start(self.lock_argv("redlock-run", key, true),
                                        stdin=subprocess.DEVNULL))
                time.sleep(lease / waiters)
            self.wait_in_line("redlock-run", key, line, blocked=True)
            executed, connections, cpu, seconds = self.server_during(window)
            procs.release(held)
            procs.finish()
        per_second = sum(executed.values()) / seconds
        executed.subtract({name: n * seconds / alone for name, n in renewals.items()})
        leases = waiters * seconds / lease  # that the waiters waited out, all together
        requests = sum(executed[name] for name in ("evalsha", "eval", "blpop"))
        return {"per_second": per_second, "commands": sum(executed.values()) / leases,
                "requests": requests / leases, "connections": connections / seconds,
                "cpu": cpu / seconds}

    def memory(self, count, ttl, settle):
        """The server's memory (INFO's used_memory) per held lock, from `count` holders each
        on its own key, and per blocked waiter, from as many waiters in line behind one
        holder (less a held lock), `settle` seconds after all are in place; `ttl` is the
        lease ("1s"), None the default. In bytes."""
        options = ("-t", ttl) if ttl else ()
        lease = float(ttl.removesuffix("s")) if ttl else 30.0  # redlock-run's default
        name = f"memory-{ttl or 'default'}"

        def used():
            return int(self.server.info("memory")["used_memory"])

        with Processes(self, f"{count} holders of a {name} key each") as procs:
            before = used()
            held = procs.hold([self.lock_argv("redlock-run", f"{name}-{i}", HOLD, options)
                               for i in range(count)])
            # Past their first renewal (a third of the lease in), which opens a connection
            # of its own that a holder keeps from then on.
            time.sleep(lease / 3 + settle)
            per_lock = (used() - before) / count
            procs.release(held)
            procs.finish()
        with Processes(self, f"{count} waiters on {name}") as procs:
            before = used()
            held = procs.hold([self.lock_argv("redlock-run", name, HOLD, options)])
            line = [procs.start(self.lock_argv("redlock-run", name, [shutil.which("true")],
                                               options), stdin=subprocess.DEVNULL)
                    for _ in range(count)]
            self.wait_in_line("redlock-run", name, line, blocked=True)
            time.sleep(settle)
            per_waiter = (used() - before - per_lock) / count
            procs.release(held)
            procs.finish()
        return per_lock, per_waiter


# --profile: where an uncontended run's time goes, from the timestamps strace takes of a few
# system calls (filtered in the kernel with seccomp-bpf, so that the others run at full
# speed): each phase runs from one call to the next.
PROFILE_CALLS = "execve,clone,vfork,connect,sendto,recvfrom,flock,wait4,exit_group"
PHASES = {
    "redlock-run": [
        ("start-up: loading, linking, options, the guard's fork, token", "execve", "connect"),
        ("connect and the acquire's round trip", "connect", "acquire reply"),
        ("starting the command (vfork to its execve)", "acquire reply", "command execve"),
        ("the command itself", "command execve", "command exit"),
        ("from the command's exit to the release's reply", "command exit", "release reply"),
        ("reaping the guard", "release reply", "guard reaped"),
        ("exit", "guard reaped", "exit"),
    ],
    "flock": [
        ("start-up: loading, linking, options, open", "execve", "flock"),
        ("the lock (flock(2))", "flock", "flock"),
        ("starting the command (fork to its execve)", "flock", "command execve"),
        ("the command itself", "command execve", "command exit"),
        ("from the command's exit to the unlock and exit", "command exit", "exit"),
    ],
}


def profile_events(trace):
    """The events of one strace -f -ttt log, by name: when each happened (seconds). A call
    that blocked is logged when it starts and again when it returns: a reply counts when its
    recvfrom returns; the command, from when its execve starts."""
    events, main, command = {}, None, None
    for line in trace.splitlines():
        pid, stamp, call = line.split(None, 2)
        stamp = float(stamp)
        if main is None:
            main = pid
            events["execve"] = stamp
            continue
        if pid != main:
            if command is None and call.startswith("execve("):
                command = pid
                events["command execve"] = stamp
            elif pid == command and call.startswith("+++ exited"):
                events["command exit"] = stamp
            continue
        if call.startswith("connect("):
            events.setdefault("connect", stamp)
        elif (call.startswith("recvfrom(") and "<unfinished" not in call) or \
                call.startswith("<... recvfrom resumed>"):
            events["release reply" if "command exit" in events else "acquire reply"] = stamp
        elif call.startswith("flock("):
            events["flock"] = stamp
        elif "release reply" in events and (
                (call.startswith("wait4(") and "<unfinished" not in call) or
                call.startswith("<... wait4 resumed>")):
            events["guard reaped"] = stamp
        elif call.startswith("+++ exited"):
            events["exit"] = stamp
    return events


def profile(bench, runs):
    """Medians of each phase of `LOCK KEY -- true`, per tool, interleaved."""
    strace = shutil.which("strace")
    true = shutil.which("true")
    phases = {tool: {name: [] for name, _, _ in PHASES[tool]} for tool in PHASES}
    totals = {tool: [] for tool in PHASES}
    log = os.path.join(bench.tmp, "trace")
    for i in range(runs + 1):
        for tool in ("flock", "redlock-run") if i % 2 == 0 else ("redlock-run", "flock"):
            argv = [strace, "-f", "--seccomp-bpf", "-ttt", "-e", f"trace={PROFILE_CALLS}",
                    "-o", log] + bench.lock_argv(tool, "profile", [true])
            _, status, _ = run_timed(argv, bench.env)
            bench.check(f"{tool} under strace", status)
            with open(log) as f:
                events = profile_events(f.read())
            if i == 0:
                continue  # the first of each warms the caches, and the server's scripts
            for name, start, end in PHASES[tool]:
                phases[tool][name].append(events[end] - events[start])
            totals[tool].append(events["exit"] - events["execve"])
    return ({tool: {n: statistics.median(v) for n, v in p.items()} for tool, p in
             phases.items()}, {tool: statistics.median(v) for tool, v in totals.items()})


def print_profile(bench, runs):
    phases, totals = profile(bench, runs)
    print(f"Where `LOCK KEY -- true` spends its time, median of {runs} runs of each under "
          f"strace (only {PROFILE_CALLS} traced, filtered by seccomp-bpf; tracing stretches "
          "every phase, and most the ones that start or end a process):")
    print()
    print("| phase | flock(1) | redlock-run |")
    print("|---|---:|---:|")
    flock, red = phases["flock"], phases["redlock-run"]
    rows = [("start-up: loading, linking, options (redlock-run: and the guard's fork)",
             flock[PHASES["flock"][0][0]], red[PHASES["redlock-run"][0][0]]),
            ("taking the lock (redlock-run: connect, a round trip)", 0.0,
             red[PHASES["redlock-run"][1][0]]),
            ("starting the command", flock[PHASES["flock"][2][0]],
             red[PHASES["redlock-run"][2][0]]),
            ("the command (`true`)", flock["the command itself"], red["the command itself"]),
            ("from the command's exit to the release's reply", None,
             red[PHASES["redlock-run"][4][0]]),
            ("reaping the guard (a tracer slows its exit most)", None,
             red["reaping the guard"]),
            ("exit", flock[PHASES["flock"][4][0]], red["exit"])]
    for label, f, r in rows:
        print(f"| {label} | {'' if f is None else ms(f * 1e9)} | {ms(r * 1e9)} |")
    print(f"| whole run (execve to exit) | {ms(totals['flock'] * 1e9)} | "
          f"{ms(totals['redlock-run'] * 1e9)} |")
    untraced = bench.uncontended(runs)
    print(f"| whole run, untraced (spawn to reaped), for comparison | "
          f"{ms(untraced['flock'][0])} | {ms(untraced['redlock-run'][0])} |")


def repeated(measure, tools, runs):
    """measure(tool) runs times for each tool, interleaved: the median of the sections per
    second, and the server's work per section over all the runs."""
    results = {tool: [] for tool in tools}
    for i in range(runs):
        for tool in tools if i % 2 == 0 else tools[::-1]:
            results[tool].append(measure(tool))
    summary = {}
    for tool, measured in results.items():
        sections = sum(r["sections"] for r in measured)
        summary[tool] = {"per_second": statistics.median(r["sections"] / r["seconds"]
                                                         for r in measured)}
        if all("processes" in r for r in measured):
            summary[tool]["processes"] = sum(r["processes"] for r in measured) / sections
        if tool == "redlock-run":
            summary[tool]["commands"] = sum(r["commands"] for r in measured) / sections
            summary[tool]["cpu"] = sum(r["cpu"] for r in measured) / sections
    return summary


def waiting_at_scale(bench, quick):
    """The second table's figures (issue 23): lines of W waiters on one key, started together
    and behind holders; a long hold with a line behind it; the server's memory per waiter."""
    together = (10, 20) if quick else (2, 4, 8, 10, 50, 100, 500)
    queued = (10, 20) if quick else (10, 100, 500)

    def runs(waiters):  # some 200 sections each, for the small lines' sake
        return 1 if quick else max(1, min(10, 200 // waiters))

    lines = {}
    for w in together:
        lines["together", w] = repeated(lambda tool: bench.together(tool, w),
                                        ("flock", "redlock-run"), runs(w))
    for kind, line in LINES.items():
        tools = ("redlock-run",) if line.flock_options is None else ("flock", "redlock-run")
        for w in queued:
            lines[kind, w] = repeated(lambda tool: bench.queued(tool, kind, w), tools, runs(w))
    hold_waiters, window, alone = (10, 2, 0.5) if quick else (100, 10, 2)
    # The default lease waits 10 s for its holders' first renewal (see memory()): not in quick.
    memory_count, settle, ttls = (10, 0.2, ("1s",)) if quick else (100, 2, ("1s", None))
    return {
        "lines": lines,
        "scale": (10, queued[-1]),
        "hold": (hold_waiters, window, bench.long_hold(hold_waiters, window, alone)),
        "memory": (memory_count, {ttl: bench.memory(memory_count, ttl, settle)
                                  for ttl in ttls}),
    }


LINE_LABELS = {
    "together": "{} started together",
    "exclusive": "{} in line behind a holder",
    "shared": "`-s`: {} in line behind an exclusive holder",
    "limit": "`--limit 4`: {} in line behind 4 holders",
}


def print_waiting(figures, verdict):
    """The second table, of waiting_at_scale()'s figures."""

    def row(measure, flock="", redlock="", ratio="", target="", ok=None, commands="", cpu=""):
        judged = "" if ok is None else verdict(ok)
        print(f"| {measure} | {flock} | {redlock} | {ratio} | {target} | {judged} | {commands} "
              f"| {cpu} |")

    def us(seconds):
        return f"{seconds * 1e6:.1f} µs"

    lines, (small, large) = figures["lines"], figures["scale"]
    print()
    print("Waiting at scale: W processes on one key, each running `critical` (no work) once. "
          "Sections/s count from when all are let go to the last exit; the Redis work per "
          "section, from their start. flock(1)'s `-s` waits behind `flock -x`; it has no "
          "`--limit`.")
    print()
    print("| measure | flock(1) | redlock-run | redlock-run / flock | target | | "
          "Redis commands per section | Redis CPU per section |")
    print("|---|---:|---:|---:|---|---|---:|---:|")
    for (kind, w), m in lines.items():
        red = m["redlock-run"]
        measure, work = f"{LINE_LABELS[kind].format(w)}: sections/s", {
            "commands": f"{red['commands']:.2f}", "cpu": us(red["cpu"])}
        if "flock" in m:
            ratio = red["per_second"] / m["flock"]["per_second"]
            row(measure, f"{m['flock']['per_second']:.0f}", f"{red['per_second']:.0f}",
                f"{ratio:.2f}×", "≥ 0.9×", ratio >= 0.9, **work)
        else:
            row(measure, redlock=f"{red['per_second']:.0f}", **work)
    for kind, label in LINE_LABELS.items():
        one, many = lines[kind, small]["redlock-run"], lines[kind, large]["redlock-run"]
        ratio = many["cpu"] / one["cpu"]
        row(f"{label.format('W')}: Redis CPU per section at W = {large}",
            redlock=us(many["cpu"]), ratio=f"{ratio:.2f}× W = {small} ({us(one['cpu'])})",
            target="≤ 1.2×", ok=ratio <= 1.2)
    # What bounds a line started together: with every process and the server on these
    # cores, sections/s cannot pass the cores' count over the CPU time a section costs.
    for (kind, w), m in lines.items():
        if "processes" not in m.get("flock", {}):
            continue
        flock, red = m["flock"]["processes"], m["redlock-run"]["processes"] + m["redlock-run"][
            "cpu"]
        row(f"{LINE_LABELS[kind].format(w)}: CPU time per section, the processes' and "
            "Redis's", ms(flock * 1e9), ms(red * 1e9), f"{red / flock:.2f}×")

    waiters, window, hold = figures["hold"]
    held = f"{waiters} waiters behind a `-t 1s` holder, over {window} s"
    row(f"{held}: Redis commands/s (the holder's renewals included)",
        redlock=f"{hold['per_second']:.0f}")
    row(f"{held}: requests (EVALSHA, EVAL, BLPOP) per waiter per lease (the holder's left "
        "out)", redlock=f"{hold['requests']:.2f}", target="≤ 2", ok=hold["requests"] <= 2)
    row(f"{held}: Redis commands per waiter per lease (the holder's left out)",
        redlock=f"{hold['commands']:.2f}", target="≤ 8", ok=hold["commands"] <= 8)
    row(f"{held}: new connections/s", redlock=f"{hold['connections']:.2f}", target="0",
        ok=hold["connections"] == 0)
    row(f"{held}: Redis CPU",
        redlock=f"{hold['cpu'] * 1e3:.2f} ms/s ({hold['cpu']:.1%} of a core)")

    count, memory = figures["memory"]
    for ttl, (per_lock, per_waiter) in memory.items():
        lease = f"`-t {ttl}`" if ttl else "the default 30 s lease"
        ratio = per_waiter / per_lock
        row(f"Redis memory per held lock, {lease} ({count} holders, a key each, renewed)",
            redlock=f"{per_lock / 1024:.1f} KiB")
        row(f"Redis memory per blocked waiter, {lease} (1 holder, {count} waiters)",
            redlock=f"{per_waiter / 1024:.1f} KiB", ratio=f"{ratio:.2f}× a held lock",
            target="≤ 2×", ok=ratio <= 2)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--redlock-run", required=True)
    parser.add_argument("--critical", required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--tls-url", help="the same server over rediss://, if there is one")
    parser.add_argument("--cacert", help="the CA of the --tls-url server")
    parser.add_argument("--quorum-urls",
                        help="three servers, separated by spaces, the first --url: a quorum")
    parser.add_argument("--engines-command",
                        help="starts a Sentinel master and a cluster once the rows that "
                        "compare with flock are measured, and prints three URLs: the "
                        "Sentinels', a cluster node that owns the slot of the key `versus`, "
                        "and one that does not")
    parser.add_argument("--quick", action="store_true",
                        help="a few runs, to check that the bench works, not its figures")
    parser.add_argument("--profile", action="store_true",
                        help="where an uncontended run's time goes, phase by phase, only")
    args = parser.parse_args()

    runs, workers, iterations = (20, 4, 10) if args.quick else (200, 8, 50)
    work_us = 1000
    bench = Bench(args)
    if args.profile:
        print_profile(bench, runs)
        shutil.rmtree(bench.tmp, ignore_errors=True)
        return 1 if bench.failures else 0

    # One untimed run each, so that neither pays for cold caches (nor redlock-run for a
    # server that does not know its scripts yet).
    bench.uncontended(1)
    uncontended = bench.uncontended(runs)
    true = shutil.which("true")
    work_runs = runs // 2
    redlock_work = bench.server_work(work_runs, lambda: bench.check(
        "redlock-run", run_timed(bench.lock_argv("redlock-run", "work", [true]), bench.env)[1]))
    pair = bench.plain_pair()
    pair()  # the script cached
    plain_work = bench.server_work(work_runs, pair)
    flock_c = bench.contended("flock", workers, iterations, work_us)
    bench.redis("CONFIG", "RESETSTAT")
    redlock_c = bench.contended("redlock-run", workers, iterations, work_us)
    stats = bench.commandstats()
    # Fewer workers: the handoff's cost weighs most when few wait.
    fewer = [(w, bench.contended("flock", w, iterations, work_us, label=f"flock{w}"),
              bench.contended("redlock-run", w, iterations, work_us, label=f"redlock{w}"))
             for w in (2, 4)]
    sent = {name: stats.get(name, 0) for name in ("evalsha", "eval", "blpop", "auth", "select")}
    sections = workers * iterations
    per_section = sum(sent.values()) / sections
    rss = {tool: bench.peak_rss(tool) for tool in ("flock", "redlock-run")}
    limit = 4
    limited = bench.limited(workers, iterations, work_us, limit)
    # Before the Sentinels and the cluster start, as the rows above: they compare with flock.
    waiting = waiting_at_scale(bench, args.quick)
    # Every engine against the one plain server, interleaved in the same run.
    engines = [("`--limit 4`", {}, ("-l", "4"))]
    if args.tls_url:
        engines.append(("rediss:// (TLS)", {"REDLOCK_URL": args.tls_url,
                                            "REDLOCK_CACERT": args.cacert}, ()))
    if args.quorum_urls:
        engines.append(("3 servers (Redlock)", {"REDLOCK_URL": args.quorum_urls}, ()))
    if args.engines_command:
        sentinel, owner, other = subprocess.run(
            [args.engines_command], capture_output=True, text=True,
            check=True).stdout.split()
        engines.append(("Sentinel (master and replica, 3 Sentinels)",
                        {"REDLOCK_URL": sentinel}, ()))
        engines.append(("Cluster, through the node that owns the slot",
                        {"REDLOCK_URL": owner}, ()))
        engines.append(("Cluster, through a node that does not (MOVED)",
                        {"REDLOCK_URL": other}, ()))
    versus = [(label, bench.versus(runs // 2, env, options)) for label, env, options in engines]
    quorum = None
    if args.quorum_urls:
        urls = args.quorum_urls.split()
        quorum = True
        one_c = bench.contended("redlock-run", workers, iterations, work_us, label="one")
        # Servers older than the default lease (30s), as a fleet's are.
        bench.wait_until_old(urls, 31)
        for url in urls:
            bench.redis("CONFIG", "RESETSTAT", url=url)
        three_c = bench.contended("redlock-run", workers, iterations, work_us,
                                  env=dict(bench.env, REDLOCK_URL=args.quorum_urls),
                                  label="three")
        three_stats = bench.commandstats(urls)
        three_sent = sum(three_stats.get(name, 0) for name in ("evalsha", "eval", "blpop"))

    def verdict(ok):
        return "" if args.quick else ("met" if ok else "**missed**")

    fu, ru = uncontended["flock"], uncontended["redlock-run"]
    ratio_u = ru[0] / fu[0]
    ratio_c = redlock_c["per_second"] / flock_c["per_second"]
    redis_version = bench.redis("INFO", "server")
    redis_version = next((l.split(":", 1)[1].strip() for l in redis_version.splitlines()
                          if l.startswith("redis_version:")), "?")

    print(f"redlock-run vs flock(1) on {platform.node()} ({os.cpu_count()} cores, Linux "
          f"{platform.release()}), Redis {redis_version} at {args.url}"
          f"{', quick mode: figures not judged' if args.quick else ''}")
    print()
    print("| measure | flock(1) | redlock-run | redlock-run / flock | target | |")
    print("|---|---:|---:|---:|---|---|")
    print(f"| `LOCK KEY -- true`, median of {runs} | {ms(fu[0])} | {ms(ru[0])} | "
          f"{ratio_u:.2f}× | ≤ 1.15× | {verdict(ratio_u <= 1.15)} |")
    print(f"| `LOCK KEY -- true`, p90 | {ms(fu[1])} | {ms(ru[1])} | {ru[1] / fu[1]:.2f}× | | |")
    print(f"| `LOCK KEY -- true`: CPU time of a run (the tool, its command and guard), median "
          f"| {ms(fu[2] * 1e9)} | {ms(ru[2] * 1e9)} | {ru[2] / fu[2]:.2f}× | | |")
    print(f"| {workers} workers × {iterations}, {work_us // 1000} ms sections: sections/s | "
          f"{flock_c['per_second']:.0f} | {redlock_c['per_second']:.0f} | {ratio_c:.0%} | "
          f"≥ 100% | {verdict(ratio_c >= 1)} |")
    for w, f, r in fewer:
        print(f"| {w} workers × {iterations}: sections/s | {f['per_second']:.0f} | "
              f"{r['per_second']:.0f} | {r['per_second'] / f['per_second']:.0%} | ≥ 100% | "
              f"{verdict(r['per_second'] >= f['per_second'])} |")
    print(f"| handoff gap (release to next start), median | {ms(flock_c['gap_median'])} | "
          f"{ms(redlock_c['gap_median'])} | | ≤ flock's + 0.3 ms | "
          f"{verdict(redlock_c['gap_median'] <= flock_c['gap_median'] + 0.3e6)} |")
    print(f"| handoff gap, p99 | {ms(flock_c['gap_p99'])} | {ms(redlock_c['gap_p99'])} | | | |")
    print(f"| shared counter after {sections} sections | {flock_c['count']} | "
          f"{redlock_c['count']} | | = {sections} | "
          f"{'' if flock_c['count'] == redlock_c['count'] == sections else '**wrong**'} |")
    # An attempt, a BLPOP with the next attempt behind it, the release, and the release's
    # follow-up when others wait behind the waiter it woke (did that one come?).
    print(f"| Redis commands sent per section | | {per_section:.2f} | | ≤ 5 | "
          f"{verdict(per_section <= 5)} |")
    print(f"| Redis commands executed per uncontended run (scripts' own included) | | "
          f"{redlock_work[0]:.2f} | {redlock_work[0] / plain_work[0]:.2f}× a plain SET NX + "
          f"compare-and-delete ({plain_work[0]:.2f}) | ≤ 8 | {verdict(redlock_work[0] <= 8)} |")
    print(f"| Redis CPU time per uncontended run | | {redlock_work[1] * 1e3:.1f} µs | "
          f"{redlock_work[1] / plain_work[1]:.2f}× the plain pair ({plain_work[1] * 1e3:.1f} µs) "
          f"| | |")
    all_cpu = ru[2] + redlock_work[1] / 1e3
    print(f"| CPU time of an uncontended run, the server's included | {ms(fu[2] * 1e9)} | "
          f"{ms(all_cpu * 1e9)} | {all_cpu / fu[2]:.2f}× | | |")
    print(f"| peak RSS while the command sleeps | {rss['flock'] / 1024:.2f} MiB | "
          f"{rss['redlock-run'] / 1024:.2f} MiB | | ≤ 2.5 MiB | "
          f"{verdict(rss['redlock-run'] <= 2.5 * 1024)} |")
    print(f"| {workers} workers × {iterations} under `--limit {limit}`: sections/s | | "
          f"{limited['per_second']:.0f} | {limited['per_second'] / redlock_c['per_second']:.2f}× "
          f"a lock ({redlock_c['per_second']:.0f}); at most {limited['most']} inside at once | | |")
    for label, m in versus:
        ratio = m["other"] / m["plain"]
        target = "≤ 1.2×" if label.startswith("3 servers") else ""
        print(f"| `LOCK KEY -- true`, {label}, median of {runs // 2} | | {ms(m['other'])} | "
              f"{ratio:.2f}× one plain server ({ms(m['plain'])}) | {target} | "
              f"{verdict(ratio <= 1.2) if target else ''} |")
    if quorum:
        ratio_qc = three_c["per_second"] / one_c["per_second"]
        print(f"| {workers} workers × {iterations} on 3 servers: sections/s | | "
              f"{three_c['per_second']:.0f} | {ratio_qc:.0%} of one server "
              f"({one_c['per_second']:.0f}) | ≥ 70% | {verdict(ratio_qc >= 0.7)} |")
        print(f"| Redis commands per section on 3 servers (all servers) | | "
              f"{three_sent / sections:.2f} | {three_sent / sections / per_section:.2f}× one "
              f"server | | |")
    print()
    print("Commands sent in the contended run: " +
          ", ".join(f"{name.upper()} {n}" for name, n in sent.items() if n) + ".")
    print_waiting(waiting, verdict)

    if any(c["count"] != w * iterations for w, f, r in fewer for c in (f, r)):
        bench.failures.append("a counter is off with fewer workers: increments were lost")
    if flock_c["count"] != sections or redlock_c["count"] != sections or (
            quorum and (one_c["count"] != sections or three_c["count"] != sections)):
        bench.failures.append("a counter is off: increments were lost")
    for failure in bench.failures:
        print(f"bench: {failure}", file=sys.stderr)
    shutil.rmtree(bench.tmp, ignore_errors=True)
    return 1 if bench.failures else 0


if __name__ == "__main__":
    sys.exit(main())
