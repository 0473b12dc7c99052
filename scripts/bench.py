#!/usr/bin/env python3
"""redlock-run side by side with flock(1), on this machine, in one run.

Started by scripts/bench.sh, which provides the binaries and a throwaway redis-server.
Prints a markdown table of figures and their ratios to flock's; exits non-zero only when
something did not work (a failed run, a lost increment), never for a missed target.
"""

import argparse
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def run_timed(argv, env):
    """Runs argv to its end; returns (wall nanoseconds, wait status)."""
    start = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env)
    _, status = os.waitpid(pid, 0)
    return time.perf_counter_ns() - start, status


def percentile(values, p):
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, -(-len(ordered) * p // 100) - 1))
    return ordered[index]


def ms(ns):
    return f"{ns / 1e6:.2f} ms"


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

    def lock_argv(self, tool, key, command):
        if tool == "flock":
            return [self.flock, os.path.join(self.tmp, key + ".lock")] + command
        return [self.redlock, key, "--"] + command

    def check(self, tool, status):
        if status != 0:
            self.failures.append(f"{tool} exited with wait status {status} "
                                 f"(exit {status >> 8}, signal {status & 0x7f})")

    def uncontended(self, runs):
        """Median and p90 of `LOCK KEY -- true`, the two tools interleaved."""
        times = {"flock": [], "redlock-run": []}
        true = shutil.which("true")
        for i in range(runs):
            order = ("flock", "redlock-run") if i % 2 == 0 else ("redlock-run", "flock")
            for tool in order:
                ns, status = run_timed(self.lock_argv(tool, "uncontended", [true]), self.env)
                self.check(tool, status)
                times[tool].append(ns)
        return {t: (statistics.median(v), percentile(v, 90)) for t, v in times.items()}

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
                ns, status = run_timed(argv, other_env if kind == "other" else self.env)
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
                _, status = run_timed(argv, env)
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
                _, status = run_timed(argv, self.env)
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
        events = sorted([(a, 1) for a, _ in sections] + [(b, -1) for _, b in sections],
                        key=lambda e: (e[0], e[1]))
        inside = most = 0
        for _, step in events:
            inside += step
            most = max(most, inside)
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
            _, status = run_timed(argv, bench.env)
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
    print(f"| Redis commands sent per section | | {per_section:.2f} | | ≤ 4 | "
          f"{verdict(per_section <= 4)} |")
    print(f"| Redis commands executed per uncontended run (scripts' own included) | | "
          f"{redlock_work[0]:.2f} | {redlock_work[0] / plain_work[0]:.2f}× a plain SET NX + "
          f"compare-and-delete ({plain_work[0]:.2f}) | ≤ 8 | {verdict(redlock_work[0] <= 8)} |")
    print(f"| Redis CPU time per uncontended run | | {redlock_work[1] * 1e3:.1f} µs | "
          f"{redlock_work[1] / plain_work[1]:.2f}× the plain pair ({plain_work[1] * 1e3:.1f} µs) "
          f"| | |")
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
