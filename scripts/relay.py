#!/usr/bin/env python3
"""A seeded UDP relay that drops, duplicates and reorders datagrams.

Put it between a RakNet client and server to make loss, duplication and
reordering happen in a repeatable way (sample captures, tests), or to break a
handshake at a chosen point (--max-size, --drop-after-id: tests/handshake.rs).
Pure stdlib.

Usage
-----
    relay.py --listen HOST:R --target HOST:P --seed S
             [--loss 0.1] [--dup 0.05] [--reorder 0.05] [--reorder-ms 20]
             [--delay-ms 0] [--duration 60] [--upstream HOST:PORT]
             [--max-size N] [--drop-after-id [DIR:]ID] [--latest-client]
             [--stats-json FILE] [--trace FILE] [-v]

HOST is an IPv4 address or a bracketed IPv6 one: `127.0.0.1:19160`,
`[::1]:19160`.

    client ──▶ R (listen socket) ──▶ relay's upstream socket ──▶ P (server)
    client ◀── R                ◀── upstream socket          ◀── P

- The client is the source of the first datagram that arrives on the listen
  socket; later datagrams from any other address are ignored (counted as
  `ignored`).  Replies go back to that address from the listen socket.
  With --latest-client the client is instead the source of the LATEST
  datagram on the listen socket: a client that moves to another port (as
  `raknet-dissect probe`, which pings from one socket and then connects from
  another) is followed, and the server's datagrams go to the new address from
  then on.  Every client still shares the one upstream socket, so use it for
  one client at a time.
- The server is talked to from ONE upstream socket (ephemeral port unless
  --upstream), so the server sees the relay's upstream address as its client.
  Datagrams reaching the upstream socket from anywhere but the target are
  ignored.

Decisions
---------
Each direction (c2s: client to server, s2c: server to client) has its own
PRNG, `random.Random("<seed>/c2s")` and `random.Random("<seed>/s2c")` (string
seeds are hashed with SHA-512 by Python, so they are the same on every run and
platform).  For the k-th datagram received in a direction, exactly three
numbers are drawn, u1, u2, u3 = rng.random() x 3, whatever the outcome, and:

    u1 < loss                  drop it
    else u2 < reorder          hold it back: it is sent right AFTER the next
                               datagram of the same direction that is sent, or
                               after --reorder-ms if none comes first
    else u3 < dup              send it twice, back to back
    else                       send it

So the decision for datagram k depends only on the seed, the direction and k,
never on timing.  With --delay-ms D every datagram (and every copy) is sent
D ms after it was received (hold-back time adds to that).

Deterministic drops (both off by default)
-----------------------------------------
Two rules are applied after the draw above (the three numbers are drawn for
every datagram all the same, so the seeded decisions of the other datagrams do
not change), and override it:

    --max-size N          drop, in both directions, every datagram whose UDP
                          payload is longer than N bytes: a path that loses
                          large datagrams.  RakNet pads Open Connection Request
                          1 to MTU - 28 bytes (IP + UDP headers), so with
                          N = 1200 - 28 = 1172 the 1492 probes are lost, the
                          1200 ones pass, and a client falls back to MTU 1200
                          (its datagrams are then at most 1172 bytes too).
    --drop-after-id [DIR:]ID
                          once a datagram of direction DIR (c2s or s2c; default
                          c2s) whose FIRST byte is ID (0x07, 7, ...) has passed
                          the relay (it was not dropped itself), drop every
                          datagram received after it, in both directions, until
                          exit: the peers are cut off from each other from that
                          point on.  Datagrams received before it (held back or
                          delayed) still go out.  For a RakNet handshake:
                            c2s:0x07  request 2 reaches the server, whose reply
                                      2 is dropped (and so is every resent
                                      request 2): the client sees no reply 2;
                            s2c:0x08  reply 2 reaches the client, whose
                                      ConnectionRequest (and everything after)
                                      is dropped: the client sees its
                                      ConnectionRequest unanswered.
                          Only the first matching datagram counts; later ones
                          are dropped like any other.

Bounds and output
-----------------
The relay exits after --duration seconds (default 60), or on SIGINT/SIGTERM.
Datagrams still held back at exit are sent then (counted in `flushed_at_exit`).
It prints `relay: listening on ...` on stderr once both sockets are bound
(wait for that line before starting the client), and one summary line at
exit.  --stats-json writes:

    {"seed": S, "loss": .., "dup": .., "reorder": .., "reorder_ms": ..,
     "delay_ms": .., "listen": "127.0.0.1:R", "target": "127.0.0.1:P",
     "upstream": "127.0.0.1:U", "client": "127.0.0.1:C" | null (the last one
                                           with --latest-client),
     "max_size": N | null, "drop_after_id": "c2s:0x07" | null,
     "cut_after": <seconds from start when the --drop-after-id datagram
                   passed> | null,
     "exit": "duration" | "SIGINT" | "SIGTERM", "seconds": 3.2,
     "c2s": {"received": n, "forwarded": n, "dropped": n, "duplicated": n,
             "reordered": n, "flushed_at_exit": n, "ignored": n,
             "bytes_received": n, "bytes_forwarded": n,
             "dropped_max_size": n, "dropped_after_id": n},
     "s2c": {...}}

`received` counts datagrams taken in; `forwarded` counts datagrams sent out,
duplicate copies included (forwarded = received - dropped + duplicated, when
every send succeeded); `reordered` counts the datagrams held back.  `dropped`
counts every drop; `dropped_max_size` and `dropped_after_id` the ones of those
two rules (the rest were drawn by --loss).
--trace writes one JSON object per received datagram:
{"dir": "c2s", "k": 0, "len": 33, "action": "forward"|"drop"|"hold"|"dup",
 "time": <epoch seconds, comparable to a capture's timestamps>}, plus
"why": "loss"|"max-size"|"drop-after-id" when the action is "drop".
The k-th datagram of a direction in the trace is the k-th one the relay read
from that direction's socket.

Exit status: 0 (also when stopped by a signal), 2 on bad arguments or when a
socket cannot be bound.
"""

import argparse
import heapq
import json
import os
import random
import select
import signal
import socket
import sys
import time

DIRS = ("c2s", "s2c")


def parse_hostport(text):
    """'1.2.3.4:5' or '[::1]:5' -> (family, host, port)."""
    if text.startswith("["):
        host, sep, port = text[1:].partition("]:")
        if not sep:
            raise argparse.ArgumentTypeError("expected [IPv6]:PORT, got %r" % text)
        family = socket.AF_INET6
    else:
        host, sep, port = text.rpartition(":")
        if not sep or ":" in host:
            raise argparse.ArgumentTypeError(
                "expected HOST:PORT or [IPv6]:PORT, got %r" % text)
        family = socket.AF_INET
    try:
        socket.inet_pton(family, host)
        port = int(port)
    except (OSError, ValueError):
        raise argparse.ArgumentTypeError("bad address %r" % text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError("bad port in %r" % text)
    return family, host, port


def fmt_addr(addr):
    host, port = addr[0], addr[1]
    return ("[%s]:%d" % (host, port)) if ":" in host else ("%s:%d" % (host, port))


def probability(text):
    v = float(text)
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError("a probability is between 0 and 1: %r" % text)
    return v


def drop_after_spec(text):
    """'[c2s:|s2c:]ID' (ID decimal or 0x hex, 0..255) -> (dir, id)."""
    d, sep, ident = text.rpartition(":")
    d = d if sep else "c2s"
    if d not in DIRS:
        raise argparse.ArgumentTypeError("expected [c2s:|s2c:]ID, got %r" % text)
    try:
        v = int(ident, 0)
    except ValueError:
        raise argparse.ArgumentTypeError("bad message id in %r" % text)
    if not 0 <= v <= 255:
        raise argparse.ArgumentTypeError("a message id is 0..255: %r" % text)
    return d, v


def sockaddr(family, host, port):
    return (host, port) if family == socket.AF_INET else (host, port, 0, 0)


class Direction:
    """Decisions and counters of one direction."""

    def __init__(self, name, seed):
        self.name = name
        self.rng = random.Random("%s/%s" % (seed, name))
        self.k = 0
        self.held = []  # [(release deadline, data)] in arrival order
        self.stats = {
            "received": 0, "forwarded": 0, "dropped": 0, "duplicated": 0,
            "reordered": 0, "flushed_at_exit": 0, "ignored": 0,
            "bytes_received": 0, "bytes_forwarded": 0,
            "dropped_max_size": 0, "dropped_after_id": 0,
        }

    def decide(self, loss, reorder, dup):
        u1, u2, u3 = self.rng.random(), self.rng.random(), self.rng.random()
        self.k += 1
        if u1 < loss:
            return "drop"
        if u2 < reorder:
            return "hold"
        if u3 < dup:
            return "dup"
        return "forward"


class Relay:
    def __init__(self, args):
        self.a = args
        self.t0 = time.monotonic()
        lf, lh, lp = args.listen
        tf, th, tp = args.target
        self.listen = socket.socket(lf, socket.SOCK_DGRAM)
        self.up = socket.socket(tf, socket.SOCK_DGRAM)
        for s in (self.listen, self.up):
            s.setblocking(False)
            for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
                try:
                    s.setsockopt(socket.SOL_SOCKET, opt, 4 << 20)
                except OSError:
                    pass
        if lf == socket.AF_INET6:
            self.listen.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        self.listen.bind(sockaddr(lf, lh, lp))
        if args.upstream is not None:
            uf, uh, up = args.upstream
            if uf != tf:
                raise OSError("--upstream and --target must be of the same family")
            self.up.bind(sockaddr(uf, uh, up))
        else:
            # The loopback of the target's family for a loopback target, else any.
            if th in ("127.0.0.1", "::1"):
                self.up.bind(sockaddr(tf, th, 0))
            else:
                self.up.bind(sockaddr(tf, "::" if tf == socket.AF_INET6 else "0.0.0.0", 0))
        self.target = sockaddr(tf, th, tp)
        self.client = None
        self.dirs = {d: Direction(d, args.seed) for d in DIRS}
        self.timers = []  # heap of (due, seq, kind, payload)
        self.seq = 0
        self.trace = open(args.trace, "w") if args.trace else None
        self.cut_after = None  # when the --drop-after-id datagram passed

    # -- helpers ---------------------------------------------------------------
    def now(self):
        return time.monotonic() - self.t0

    def _push(self, due, kind, payload):
        self.seq += 1
        heapq.heappush(self.timers, (due, self.seq, kind, payload))

    def _out(self, d):
        return (self.up, self.target) if d.name == "c2s" else (self.listen, self.client)

    def _send_now(self, d, data):
        sock, dest = self._out(d)
        if dest is None:
            return
        try:
            sock.sendto(data, dest)
        except OSError as e:  # e.g. ECONNREFUSED reported late, ENOBUFS
            if self.a.verbose:
                print("relay: %s send failed: %s" % (d.name, e), file=sys.stderr)
            return
        d.stats["forwarded"] += 1
        d.stats["bytes_forwarded"] += len(data)

    def _send(self, d, data):
        """Send now, or after --delay-ms."""
        if self.a.delay_ms > 0:
            self._push(self.now() + self.a.delay_ms / 1000.0, "send", (d.name, data))
        else:
            self._send_now(d, data)

    def _release_held(self, d):
        held, d.held = d.held, []
        for _, data in held:
            self._send(d, data)

    # -- datagram handling -------------------------------------------------------
    def on_datagram(self, dname, data):
        a = self.a
        d = self.dirs[dname]
        d.stats["received"] += 1
        d.stats["bytes_received"] += len(data)
        k = d.k
        action = d.decide(a.loss, a.reorder, a.dup)
        why = "loss" if action == "drop" else None
        if self.cut_after is not None:
            action, why = "drop", "drop-after-id"
            d.stats["dropped_after_id"] += 1
        elif a.max_size is not None and len(data) > a.max_size:
            action, why = "drop", "max-size"
            d.stats["dropped_max_size"] += 1
        elif (action != "drop" and a.drop_after_id is not None
              and dname == a.drop_after_id[0] and data[:1] == bytes([a.drop_after_id[1]])):
            self.cut_after = self.now()  # this one passes; everything later is dropped
            if a.verbose:
                print("relay: %s datagram 0x%02x passed at %.3f s: dropping everything "
                      "from now on" % (dname, a.drop_after_id[1], self.cut_after),
                      file=sys.stderr)
        if self.trace:
            rec = {"dir": dname, "k": k, "len": len(data), "action": action,
                   "time": round(time.time(), 6)}
            if why:
                rec["why"] = why
            self.trace.write(json.dumps(rec) + "\n")
        if action == "drop":
            d.stats["dropped"] += 1
            return
        if action == "hold":
            d.stats["reordered"] += 1
            due = self.now() + a.reorder_ms / 1000.0
            d.held.append((due, data))
            self._push(due, "release", dname)
            return
        self._send(d, data)
        if action == "dup":
            d.stats["duplicated"] += 1
            self._send(d, data)
        # The datagrams held back go out after this one.
        self._release_held(d)

    def on_timer(self, kind, payload):
        if kind == "send":
            dname, data = payload
            self._send_now(self.dirs[dname], data)
        elif kind == "release":
            d = self.dirs[payload]
            now = self.now()
            # Release every held datagram whose time has come, with the ones held
            # before it (keep their relative order).
            if d.held and d.held[0][0] <= now + 1e-9:
                last = max(i for i, (due, _) in enumerate(d.held) if due <= now + 1e-9)
                out, d.held = d.held[:last + 1], d.held[last + 1:]
                for _, data in out:
                    self._send(d, data)

    def drain(self, sock):
        """Read every datagram waiting on sock."""
        while True:
            try:
                data, src = sock.recvfrom(65535)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # ICMP errors surface here on some systems
                if self.a.verbose:
                    print("relay: recv: %s" % e, file=sys.stderr)
                return
            if sock is self.listen:
                if self.client is None or (self.a.latest_client and src != self.client):
                    self.client = src
                    if self.a.verbose:
                        print("relay: client is %s" % fmt_addr(src), file=sys.stderr)
                if src[:2] != self.client[:2]:
                    self.dirs["c2s"].stats["ignored"] += 1
                    continue
                self.on_datagram("c2s", data)
            else:
                if src[:2] != self.target[:2] or self.client is None:
                    self.dirs["s2c"].stats["ignored"] += 1
                    continue
                self.on_datagram("s2c", data)

    # -- main loop ---------------------------------------------------------------
    def run(self):
        rfd, wfd = os.pipe()
        os.set_blocking(rfd, False)
        os.set_blocking(wfd, False)
        caught = []

        def on_signal(signum, _frame):
            caught.append(signal.Signals(signum).name)
        old_wakeup = signal.set_wakeup_fd(wfd)
        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
        print("relay: listening on %s, target %s via %s, seed %s" % (
            fmt_addr(self.listen.getsockname()), fmt_addr(self.target),
            fmt_addr(self.up.getsockname()), self.a.seed), file=sys.stderr, flush=True)
        end = self.a.duration
        reason = "duration"
        try:
            while True:
                if caught:
                    reason = caught[0]
                    break
                now = self.now()
                while self.timers and self.timers[0][0] <= now:
                    _, _, kind, payload = heapq.heappop(self.timers)
                    self.on_timer(kind, payload)
                if now >= end:
                    break
                wait = end - now
                if self.timers:
                    wait = min(wait, max(0.0, self.timers[0][0] - now))
                try:
                    ready, _, _ = select.select([self.listen, self.up, rfd], [], [], wait)
                except InterruptedError:
                    continue
                for r in ready:
                    if r == rfd:
                        try:
                            os.read(rfd, 64)
                        except BlockingIOError:
                            pass
                    else:
                        self.drain(r)
        finally:
            signal.set_wakeup_fd(old_wakeup)
            os.close(rfd)
            os.close(wfd)
        # Flush: pending delayed sends first (they were due earlier), then held ones.
        self.a.delay_ms = 0
        for _, _, kind, payload in sorted(self.timers):
            if kind == "send":
                self._send_now(self.dirs[payload[0]], payload[1])
        self.timers = []
        for d in self.dirs.values():
            d.stats["flushed_at_exit"] = len(d.held)
            self._release_held(d)
        if self.trace:
            self.trace.close()
        return reason

    def stats(self, reason):
        a = self.a
        return {
            "seed": a.seed, "loss": a.loss, "dup": a.dup, "reorder": a.reorder,
            "reorder_ms": a.reorder_ms, "delay_ms": a.delay_ms_orig,
            "listen": fmt_addr(self.listen.getsockname()),
            "target": fmt_addr(self.target),
            "upstream": fmt_addr(self.up.getsockname()),
            "client": fmt_addr(self.client) if self.client else None,
            "max_size": a.max_size,
            "drop_after_id": ("%s:0x%02x" % a.drop_after_id) if a.drop_after_id else None,
            "cut_after": round(self.cut_after, 6) if self.cut_after is not None else None,
            "exit": reason, "seconds": round(self.now(), 3),
            "c2s": self.dirs["c2s"].stats, "s2c": self.dirs["s2c"].stats,
        }


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Seeded UDP relay that drops, duplicates and reorders datagrams.",
        epilog="See the top of this file for the exact decision rule.")
    ap.add_argument("--listen", type=parse_hostport, required=True,
                    help="HOST:PORT or [IPv6]:PORT the client sends to")
    ap.add_argument("--target", type=parse_hostport, required=True,
                    help="HOST:PORT or [IPv6]:PORT of the server")
    ap.add_argument("--upstream", type=parse_hostport, default=None,
                    help="address of the socket that talks to the server "
                         "(default: an ephemeral port)")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--loss", type=probability, default=0.0)
    ap.add_argument("--dup", type=probability, default=0.0)
    ap.add_argument("--reorder", type=probability, default=0.0)
    ap.add_argument("--reorder-ms", type=float, default=20.0,
                    help="longest hold-back of a reordered datagram (default 20)")
    ap.add_argument("--delay-ms", type=float, default=0.0,
                    help="fixed delay added to every datagram (default 0)")
    ap.add_argument("--duration", type=float, default=60.0,
                    help="exit after this many seconds (default 60)")
    ap.add_argument("--max-size", type=int, default=None, metavar="N",
                    help="drop every datagram (both directions) whose UDP payload "
                         "is longer than N bytes")
    ap.add_argument("--drop-after-id", type=drop_after_spec, default=None,
                    metavar="[DIR:]ID",
                    help="once a DIR (default c2s) datagram starting with byte ID "
                         "has passed, drop everything later, both directions")
    ap.add_argument("--latest-client", action="store_true",
                    help="the client is the source of the latest datagram on the "
                         "listen socket (default: of the first)")
    ap.add_argument("--stats-json", help="write the counts here at exit")
    ap.add_argument("--trace", help="write one JSON line per received datagram")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.duration <= 0 or args.reorder_ms < 0 or args.delay_ms < 0:
        ap.error("--duration must be > 0, --reorder-ms and --delay-ms >= 0")
    if args.max_size is not None and args.max_size < 0:
        ap.error("--max-size must be >= 0")
    args.delay_ms_orig = args.delay_ms
    try:
        relay = Relay(args)
    except OSError as e:
        print("relay: cannot bind: %s" % e, file=sys.stderr)
        return 2
    reason = relay.run()
    st = relay.stats(reason)
    extra = {d: "" for d in DIRS}
    if args.max_size is not None or args.drop_after_id is not None:
        extra = {d: " (%d over --max-size, %d after --drop-after-id)" % (
            st[d]["dropped_max_size"], st[d]["dropped_after_id"]) for d in DIRS}
    print("relay: exit (%s) after %.1f s; %s" % (reason, st["seconds"], "; ".join(
        "%s received %d forwarded %d dropped %d%s duplicated %d reordered %d" % (
            d, st[d]["received"], st[d]["forwarded"], st[d]["dropped"], extra[d],
            st[d]["duplicated"], st[d]["reordered"]) for d in DIRS)),
        file=sys.stderr, flush=True)
    if args.stats_json:
        with open(args.stats_json, "w") as f:
            json.dump(st, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
