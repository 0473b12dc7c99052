#!/usr/bin/env python3
"""A scripted relay for the fault scenarios: it sits between redlock-run and a real
redis-server and misbehaves on demand, for the network faults a real server cannot show.

    relay.py --listen PORT|PATH --target REDIS_SOCKET --control FILE
             [--ready FILE] [--log FILE]

--listen is a loopback TCP port (0 picks a free one) or a Unix socket path. Once it accepts
connections, the port (or the path) is written to the --ready file (atomically). Each client
gets a connection of its own to the redis-server listening on the Unix socket --target.

The first line of the control FILE picks the behaviour. It is looked at on every wake-up
(data in either direction, a new connection, and at least every 50 ms; stat says whether to
read it again), so a test can switch it at any moment with `echo MODE > FILE`. A missing or
empty file means pass, and so does an unknown mode (logged). `echo` empties the file before
it writes, so while traffic flows, `echo MODE > FILE.tmp && mv FILE.tmp FILE` is the exact way.

    pass        bytes are relayed both ways unchanged
    delay MS    replies (server to client) are held MS ms from their arrival, order kept;
                requests pass at once
    drop        requests reach the server, but a reply is thrown away and the client (with
                its upstream connection) is closed at once
    drop-once   drop, for one reply only: then the control file is set to pass
    blackhole   nothing is forwarded either way and nothing answers; connections stay open
    reconnect   pass, but when the server hangs up (a restart), the client's connection stays
                open, and its next request reaches the server over a new connection, as a
                proxy that pools its connections to the server does; a client whose server
                cannot be reached then is closed
    one-reply   the next reply passes, and what comes after it is swallowed: then the
                control file is set to blackhole (replies are assumed to arrive whole)
    hold        requests on the connections open when it began are held (as if lost in
                transit, and sent again late), even once their client hangs up, until the
                mode changes; new connections pass
    refuse      new connections are accepted and closed at once; open ones are closed
    answer TEXT each request is answered by the relay with the error -TEXT (a cluster's
                -TRYAGAIN, say) and never reaches the server
    answer-to COMMAND TEXT
                as answer, for the requests of COMMAND (GETRANGE, say) only; the others
                pass. (The answers go out at once: a client that sends one of these behind
                another request still to be answered would see them out of order.)
    swallow-to COMMAND
                the requests of COMMAND (INFO, say) are thrown away, never answered; the
                others pass

A mode applies to the bytes that arrive while it is in force. When either side of a
connection hangs up, what is already on its way (held replies included) is written out, then
both sides are closed; a client whose redis-server cannot be reached is closed at once.
--log appends one line per event. SIGTERM or SIGINT closes everything and exits 0.
"""

import argparse
import collections
import os
import selectors
import signal
import socket
import stat
import time

POLL = 0.05  # the longest sleep: open connections notice `refuse` within this
CHUNK = 65536
HIGH_WATER = 1 << 20  # stop reading one side while this much waits for the other

log_file = None


def log(message):
    if log_file:
        log_file.write(f"{time.time():.6f} {message}\n")


def read_mode(path):
    """The control file's first line as a tuple: ('pass',), ('delay', ms), ..."""
    try:
        with open(path) as f:
            words = f.readline().split()
    except OSError:
        words = []
    if not words:
        return ("pass",)
    if len(words) == 1 and words[0] in ("pass", "drop", "drop-once", "blackhole", "refuse",
                                        "one-reply", "hold", "reconnect"):
        return (words[0],)
    if len(words) >= 2 and words[0] == "answer":
        return ("answer", " ".join(words[1:]))
    if len(words) >= 3 and words[0] == "answer-to":
        return ("answer-to", words[1].upper(), " ".join(words[2:]))
    if len(words) == 2 and words[0] == "swallow-to":
        return ("swallow-to", words[1].upper())
    if len(words) == 2 and words[0] == "delay":
        try:
            ms = float(words[1])
        except ValueError:
            ms = -1
        if ms >= 0:
            return ("delay", ms)
    return ("bad", " ".join(words))  # logged, then relayed as pass


def reply_end(data, pos=0):
    """Where the RESP reply (or request: an array) that starts at data[pos] ends, or None if
    it is not all there."""
    line = data.find(b"\r\n", pos)
    if line < 0:
        return None
    kind, end = data[pos:pos + 1], line + 2
    if kind in (b"+", b"-", b":"):
        return end
    count = int(data[pos + 1:line])
    if kind == b"$":
        return end if count < 0 else (end + count + 2 if len(data) >= end + count + 2 else None)
    for _ in range(max(count, 0)):  # an array
        end = reply_end(data, end)
        if end is None:
            return None
    return end


# The modes that read whole requests (see Relay.answer).
ANSWERING = ("answer", "answer-to", "swallow-to")


def describe(mode):
    return " ".join(f"{w:g}" if isinstance(w, float) else w for w in mode)


class Pair:
    """One client and its own upstream connection."""

    def __init__(self, number, client, upstream):
        self.number = number
        self.client, self.upstream = client, upstream
        self.out = {client: bytearray(), upstream: bytearray()}  # waiting to be written
        self.events = {client: 0, upstream: 0}  # what the selector watches on each
        self.held = collections.deque()  # replies held back: (release time, bytes)
        self.held_requests = bytearray()  # requests held back (mode hold)
        self.unanswered = bytearray()  # the start of a request not all there (mode answer)
        self.draining = False  # a side hung up: write out what is left, then close
        self.closed = False

    def other(self, sock):
        return self.upstream if sock is self.client else self.client

    def sockets(self):
        """Both sides, or the client alone while the upstream is gone (mode reconnect)."""
        return (self.client,) if self.upstream is None else (self.client, self.upstream)

    def side(self, sock):
        return "client" if sock is self.client else "server"


class Relay:
    def __init__(self, listener, target, control):
        self.listener, self.target, self.control = listener, target, control
        self.tcp = listener.family == socket.AF_INET
        self.selector = selectors.DefaultSelector()
        self.selector.register(listener, selectors.EVENT_READ, None)
        self.pairs = []
        self.count = 0
        self.mode = ("pass",)
        self.control_key = None  # the control file's (inode, size, mtime) when last read
        self.hold_upto = 0  # mode hold: the connections it holds the requests of

    def refresh_mode(self):
        try:
            st = os.stat(self.control)
        except OSError:
            st = None
        if st is None:
            mode, self.control_key = ("pass",), None
        elif (st.st_ino, st.st_size, st.st_mtime_ns) == self.control_key:
            mode = self.mode  # unchanged since it was read
        else:
            mode = read_mode(self.control)
            # A file written in the last second may be written again within the same
            # timestamp tick and size, unseen by stat: it is read every time until then.
            settled = time.time_ns() - st.st_mtime_ns > 1_000_000_000
            self.control_key = (st.st_ino, st.st_size, st.st_mtime_ns) if settled else None
        if mode != self.mode:
            if mode[0] == "bad":
                log(f"mode {mode[1]!r} unknown: relayed as pass")
            else:
                log(f"mode {describe(mode)}")
            if mode[0] == "hold":
                self.hold_upto = self.count
            elif self.mode[0] == "hold":
                for pair in self.pairs:
                    if pair.held_requests:
                        log(f"#{pair.number} held requests sent: {len(pair.held_requests)} bytes")
                        self.to_server(pair, bytes(pair.held_requests))
                        pair.held_requests.clear()
            self.mode = mode
        if mode[0] == "refuse":
            for pair in list(self.pairs):
                self.close(pair, "refuse")

    def set_mode(self, line):
        """Writes the control file, as a test would, and goes by it from now on."""
        with open(self.control + ".relay", "w") as f:
            f.write(line + "\n")
        os.rename(self.control + ".relay", self.control)
        self.refresh_mode()

    def run(self):
        while True:
            timeout = POLL
            now = time.monotonic()
            for pair in self.pairs:
                if pair.held:
                    timeout = min(timeout, max(0.0, pair.held[0][0] - now))
            events = self.selector.select(timeout)
            self.refresh_mode()
            for key, mask in events:
                if key.data is None:
                    self.accept()
                elif not key.data.closed:
                    self.on_event(key.data, key.fileobj, mask)
            now = time.monotonic()
            for pair in list(self.pairs):
                while pair.held and pair.held[0][0] <= now and not pair.closed:
                    self.send(pair, pair.client, pair.held.popleft()[1])
                if not pair.closed:
                    self.watch(pair)

    def accept(self):
        try:
            client, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        self.count += 1
        if self.mode[0] == "refuse":
            client.close()
            log(f"#{self.count} accepted and closed (refuse)")
            return
        if self.tcp:
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.settimeout(2)
            upstream.connect(self.target)
        except OSError as e:
            log(f"#{self.count} accepted, but the target is unreachable ({e}): closed")
            upstream.close()
            client.close()
            return
        client.setblocking(False)
        upstream.setblocking(False)
        pair = Pair(self.count, client, upstream)
        self.pairs.append(pair)
        self.watch(pair)
        log(f"#{pair.number} accepted")

    def on_event(self, pair, sock, mask):
        if mask & selectors.EVENT_WRITE:
            self.flush(pair, sock)
        if not mask & selectors.EVENT_READ or pair.closed:
            return
        try:
            data = sock.recv(CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self.close(pair, f"{pair.side(sock)} error: {e}")
            return
        if not data and sock is pair.upstream and self.mode[0] == "reconnect":
            self.forget_upstream(pair)
            return
        if not data:
            pair.draining = True
            log(f"#{pair.number} {pair.side(sock)} hung up")
            return
        mode = self.mode[0]
        if sock is pair.client and mode not in ANSWERING and pair.unanswered:
            data = bytes(pair.unanswered) + data  # the rest of a request begun in mode answer
            pair.unanswered.clear()
        if mode == "blackhole":
            what = "request" if sock is pair.client else "reply"
            log(f"#{pair.number} {what} swallowed: {len(data)} bytes")
        elif sock is pair.client and mode == "answer":
            self.answer(pair, data)
        elif sock is pair.client and mode in ("answer-to", "swallow-to"):
            self.answer(pair, data, only=self.mode[1])
        elif sock is pair.client and mode == "hold" and pair.number <= self.hold_upto:
            pair.held_requests += data
            log(f"#{pair.number} request held: {len(data)} bytes")
        elif sock is pair.client:
            self.to_server(pair, data)
        elif mode in ("drop", "drop-once"):
            log(f"#{pair.number} reply dropped: {len(data)} bytes")
            self.close(pair, mode)
            if mode == "drop-once":
                self.set_mode("pass")
        elif mode == "one-reply":
            end = reply_end(data) or len(data)
            self.send(pair, pair.client, data[:end])
            log(f"#{pair.number} one reply passed: {end} bytes; {len(data) - end} swallowed")
            self.set_mode("blackhole")
        elif mode == "delay":
            pair.held.append((time.monotonic() + self.mode[1] / 1000, data))
            log(f"#{pair.number} reply delayed {self.mode[1]:g} ms: {len(data)} bytes")
        elif pair.held:  # pass, behind replies still held: keep the order
            pair.held.append((0, data))
        else:
            self.send(pair, pair.client, data)

    def answer(self, pair, data, only=None):
        """Modes answer, answer-to and swallow-to: each whole request in data (after what came
        before) gets the error (or, swallow-to, nothing), or, with `only`, those of that command
        do and the others go on."""
        text = self.mode[-1] if self.mode[0] != "swallow-to" else None
        pair.unanswered += data
        pos, count = 0, 0
        while pos < len(pair.unanswered):
            end = reply_end(pair.unanswered, pos)
            if end is None:
                break
            request = bytes(pair.unanswered[pos:end])
            # "*N\r\n$LEN\r\nCOMMAND\r\n...": the command is the third line
            if only and request.split(b"\r\n")[2].decode(errors="replace").upper() != only:
                self.to_server(pair, request)
            else:
                if text is not None:
                    self.send(pair, pair.client, f"-{text}\r\n".encode())
                count += 1
            pos = end
        del pair.unanswered[:pos]
        if count:
            what = f"answered -{text}" if text is not None else "swallowed"
            log(f"#{pair.number} {what}: {count} {only or ''} requests")

    def forget_upstream(self, pair):
        """Mode reconnect: the server hung up; the client stays, and to_server connects again."""
        if pair.events[pair.upstream]:
            self.selector.unregister(pair.upstream)
        pair.upstream.close()
        del pair.out[pair.upstream], pair.events[pair.upstream]
        pair.upstream = None
        log(f"#{pair.number} server hung up: the client stays (reconnect)")

    def to_server(self, pair, data):
        if pair.upstream is None:
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.settimeout(2)
                upstream.connect(self.target)
            except OSError as e:
                upstream.close()
                self.close(pair, f"the target is unreachable ({e})")
                return
            upstream.setblocking(False)
            pair.upstream = upstream
            pair.out[upstream], pair.events[upstream] = bytearray(), 0
            log(f"#{pair.number} connected to the server again")
        self.send(pair, pair.upstream, data)

    def send(self, pair, sock, data):
        pair.out[sock] += data
        self.flush(pair, sock)

    def flush(self, pair, sock):
        buffer = pair.out[sock]
        if not buffer:
            return
        try:
            del buffer[: sock.send(buffer)]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as e:
            self.close(pair, f"{pair.side(sock)} error: {e}")

    def watch(self, pair):
        """Tells the selector what to wait for on each side; closes a drained pair."""
        if pair.draining and not (pair.out[pair.client] or pair.out.get(pair.upstream) or pair.held
                                  or pair.held_requests):
            self.close(pair, "drained")
            return
        for sock in pair.sockets():
            events = 0
            if not pair.draining and len(pair.out.get(pair.other(sock), b"")) < HIGH_WATER:
                events |= selectors.EVENT_READ
            if pair.out[sock]:
                events |= selectors.EVENT_WRITE
            if events != pair.events[sock]:
                if not pair.events[sock]:
                    self.selector.register(sock, events, pair)
                elif not events:
                    self.selector.unregister(sock)
                else:
                    self.selector.modify(sock, events, pair)
                pair.events[sock] = events

    def close(self, pair, why):
        if pair.closed:
            return
        pair.closed = True
        for sock in pair.sockets():
            if pair.events[sock]:
                self.selector.unregister(sock)
            sock.close()
        self.pairs.remove(pair)
        left = sum(len(data) for _, data in pair.held) + len(pair.out[pair.client])
        log(f"#{pair.number} closed ({why})" + (f", {left} reply bytes unsent" if left else ""))

    def close_all(self):
        # plain closes, safe even if a signal cut a bookkeeping step short
        for pair in self.pairs:
            for sock in pair.sockets():
                sock.close()
        self.listener.close()


def listen(where):
    """A listening socket on a loopback port (a number) or a Unix socket path."""
    if where.isdigit():
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", int(where)))
    else:
        try:
            if stat.S_ISSOCK(os.lstat(where).st_mode):
                os.unlink(where)  # a stale socket from an earlier run
        except FileNotFoundError:
            pass
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(where)
    sock.listen(128)
    sock.setblocking(False)
    return sock


def stop(signum, frame):
    raise SystemExit(0)


def main():
    global log_file
    parser = argparse.ArgumentParser(description="A scripted relay in front of a redis-server.")
    parser.add_argument("--listen", required=True, metavar="PORT|PATH",
                        help="loopback TCP port (0: any free) or Unix socket path")
    parser.add_argument("--target", required=True, metavar="SOCKET",
                        help="the redis-server's Unix socket")
    parser.add_argument("--control", required=True, metavar="FILE",
                        help="file whose first line is the mode")
    parser.add_argument("--ready", metavar="FILE",
                        help="written with the port or path once listening")
    parser.add_argument("--log", metavar="FILE", help="appends one line per event")
    args = parser.parse_args()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)  # a background job of a script starts with it ignored
    if args.log:
        log_file = open(args.log, "a", buffering=1)
    listener = listen(args.listen)
    where = str(listener.getsockname()[1]) if listener.family == socket.AF_INET else args.listen
    relay = Relay(listener, args.target, args.control)
    relay.refresh_mode()
    log(f"listening on {where}, mode {describe(relay.mode)}")
    if args.ready:
        with open(args.ready + ".tmp", "w") as f:
            f.write(where + "\n")
        os.replace(args.ready + ".tmp", args.ready)
    try:
        relay.run()
    finally:
        relay.close_all()
        if listener.family == socket.AF_UNIX:
            try:
                os.unlink(args.listen)
            except OSError:
                pass
        log("stopped")


if __name__ == "__main__":
    main()
