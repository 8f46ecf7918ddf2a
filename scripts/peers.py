#!/usr/bin/env python3
"""Drive two REAL peers of the original RakNet C++ library over loopback.

The peers come from the PyPI package `raknet` (bindings of the C++ library,
version 0.3.0).  This script is the ground-truth generator for raknet-dissect:
it records, in order, every packet each application got from `RakPeer.receive()`.

Usage
-----
    peers.py session --port P [--client-port Q] [--connect-port R]
                     [--scenario NAME] [--protocol 6] [--client-protocol N]
                     [--internal-ids 10] [--seed 1] [--pong TEXT | --pong-motd TEXT]
                     [--out-json FILE] [--sent-json FILE] [--timeout 30] [-v]
                     [--messages N]       # bulk (default 12000), mirror (default 320)
                     [--allow-undelivered]
    peers.py scenarios            # list the scenarios

`session` starts a server on 127.0.0.1:P and a client (on port Q, default 0 =
ephemeral) in this one process; the client connects to R (default P: use R to
put a relay between them).  Scenarios:

    ping              unconnected ping/pong only, no connection
    basic             ping, connect, 3 RELIABLE_ORDERED messages each way, disconnect
    all-reliabilities ping, connect, every reliability 0..7 (incl. *_WITH_ACK_RECEIPT)
                      on channels 0, 1, 5, 31 with sizes 1..1400 bytes, both ways,
                      plus split messages (5000, 1600, 1500, 1500 bytes), disconnect
    mismatch          the client uses another RakNet protocol version (0x19 reply)
    full              the server accepts no incoming connection (0x14 reply)
    no-server         nothing listens on the client's target port (R, default P+2);
                      the client gives up (local 0x11)
    bulk              a large capture for benchmarks (scripts/bench-vs-tshark.sh):
                      ping, connect, then --messages N (default 12000) messages each
                      way, reliabilities drawn from all of 0..7 (incl. the
                      *_WITH_ACK_RECEIPT ones) on channels 0, 1, 7, 31, sizes 1..3000
                      bytes (mean ~1000; 1 in 5 over 1432, so split), sent in
                      bursts of 8 per side with a poll and a 1 ms pause between
                      bursts; then it waits (at most 30 s) for every reliable
                      message and every receipt, and disconnects.  With the
                      defaults it takes about 3-5 s and puts ~27,000 UDP packets
                      (~26 MB) on the wire: capture it with a large buffer
                      (tcpdump -B 131072), or the kernel drops some.
                      Serials wrap at 0x8000 per side for N > 32768.  Unreliable
                      messages that RakNet drops are reported in one line; only a
                      reliable one missing makes the exit status 1.  --timeout
                      (default 30 s) bounds the whole run as for the others.
    mirror            the acceptance test of `raknet-dissect messages` (tests/mirror.rs),
                      meant to go through scripts/relay.py: connect (no ping),
                      then --messages N (default 320) messages client to server and
                      N/4 server to client (4 client messages, then 1 server one),
                      then wait (at most 20 s) for every RELIABLE, RELIABLE_ORDERED
                      (and *_WITH_ACK_RECEIPT) message, and at most 2 s more for
                      the receipts (with loss some never come), and disconnect.  The first 40 messages of each side cover every
                      reliability 0..7 on every channel of 0, 1, 2, 5, 31; the rest
                      are drawn at random from them.  Sizes 1..100000 bytes: 1 in 20
                      of 1-4 bytes, 1 in 2 up to 400, 1 in 4 up to 1400, 1 in 5
                      split (1501-40000), and 100000, 65000 and 30000 bytes at 1/4,
                      1/2 and 3/4 of each side's list (no size in 1401..1500:
                      at MTU 1492 a message is split when over 1432 bytes; a lost
                      0x05 makes the MTU 1200 or 576, and the limit MTU - 60).
                      The bytes after the 4-byte header are all 0x86..0xFF
                      (see "scrambled" below), and --allow-undelivered is implied
                      for RELIABLE_SEQUENCED, which RakNet may drop by design.

Scrambled split messages: the PyPI build joins the parts of a split message in
the order they ARRIVE (WIRE_FORMAT.md section 7), so with loss the application
can get a split message with its parts permuted.  A received message that
matches no sent one byte for byte, but has the length and the same bytes (as a
multiset) as a message of over 516 bytes (split at the smallest MTU, 576) that
the peer sent and that is not yet delivered, is
recorded as that message with "scrambled": true in its "sent" object (and in
the --sent-json entry; "delivered" stays false there).  In the mirror scenario
every byte after the header is >= 0x86 (ID_USER_PACKET_ENUM), so a scrambled
message still reaches the application: it never starts with an id that RakPeer
would handle itself (0x15 ...).

Ground truth (`--out-json`): a JSON list, one object per packet returned by
`receive()`, in the order this script got them:

    {"n": 0, "time": <epoch s>, "side": "server"|"client",
     "dir": "c2s"|"s2c"|null, "kind": "offline"|"connected"|"local",
     "id": 134, "name": "ID_USER_PACKET_ENUM+0", "len": 17, "hex": "86...",
     "sent": {"serial": 3, "reliability": "RELIABLE", "reliability_value": 2,
              "channel": 5}}          # "sent" only for our own user messages
                                      # (+ "scrambled": true, see above)

- `side` is the application whose receive() returned the packet; `dir` is the
  wire direction of the message it came from (c2s = received by the server),
  null for notifications generated locally.
- `kind`: `connected` = a message delivered by the reliability layer, byte for
  byte what the peer sent (0x10, 0x13, 0x15, user messages >= 0x86);
  `offline` = delivered because of an offline message (0x01 at the server; 0x1C
  at the client is rewritten by RakNet as id | u32 ping ms | pong payload;
  0x19/0x14 replies); `local` = generated locally, never on the wire
  (0x0E/0x0F send receipts with a u32 receipt number, 0x11, 0x16).

`--sent-json` writes what was sent: {"scenario", "seed", "server",
"client_port", "connect_port", "protocol", "client_protocol", "internal_ids",
"raknet_python", "sent": [{"index", "serial", "side", "dir", "reliability",
"reliability_value", "channel", "len", "hex", "receipt", "delivered",
"scrambled"}]}.

User message layout (deterministic for a given --seed): byte 0 = 0x86 +
reliability value (0x86..0x8D), byte 1 = ordering channel, bytes 2..3 = serial
(u16 BE; server-to-client serials start at 0x8000), then seeded random bytes.
Shorter messages are prefixes of that layout (a 1-byte message is the id only).

Every wait is bounded; the whole run is bounded by --timeout (exit status 3).
Exit status 1 means a reliable message was not delivered byte for byte (or no
pong, or no connection); with --allow-undelivered, undelivered and scrambled
messages are still reported on stderr but do not make the status 1.
"""

import argparse
import json
import random
import signal
import struct
import sys
import time

try:
    import raknet
    from raknet import MessageIdentifiers as MI
    from raknet import PacketPriority, PacketReliability, RakPeer
except ImportError:  # pragma: no cover
    sys.exit("peers.py: the Python package `raknet` is missing (pip install raknet)")

HOST = "127.0.0.1"

RELIABILITIES = [
    PacketReliability.UNRELIABLE,
    PacketReliability.UNRELIABLE_SEQUENCED,
    PacketReliability.RELIABLE,
    PacketReliability.RELIABLE_ORDERED,
    PacketReliability.RELIABLE_SEQUENCED,
    PacketReliability.UNRELIABLE_WITH_ACK_RECEIPT,
    PacketReliability.RELIABLE_WITH_ACK_RECEIPT,
    PacketReliability.RELIABLE_ORDERED_WITH_ACK_RECEIPT,
]
REL_BY_VALUE = {int(r): r for r in RELIABILITIES}
RELIABLE_VALUES = {2, 3, 4, 6, 7}
RECEIPT_VALUES = {5, 6, 7}
CHANNELS = [0, 1, 5, 31]
SIZES = [1, 2, 4, 17, 100, 300, 700, 1400]  # 1400: near the largest unsplit (1432)
# (size, reliability, channel): each needs splitting at MTU 1492.
# UNRELIABLE and UNRELIABLE_SEQUENCED ones go out as RELIABLE / RELIABLE_SEQUENCED.
SPLITS = [(5000, 3, 0), (1600, 0, 0), (1500, 1, 1), (1500, 7, 31)]
# bulk scenario (benchmark capture): channels, burst size and pause between bursts.
BULK_CHANNELS = [0, 1, 7, 31]
BULK_BURST = 8
BULK_GAP = 0.001

# mirror scenario (tests/mirror.rs): channels, sizes, filler bytes.
MIRROR_CHANNELS = [0, 1, 2, 5, 31]
MIRROR_BIG = [100000, 65000, 30000]  # at 1/4, 1/2, 3/4 of each side's list
MIRROR_RELIABLE = {2, 3, 6, 7}  # must arrive (4, RELIABLE_SEQUENCED, may be skipped)
# Filler: every byte 0x86..0xFF, so a message whose split parts RakNet joined in
# arrival order still starts with a user id and reaches the application.
MIRROR_FILL = bytes(0x86 + (b % 122) for b in range(256))
# Only split messages can be scrambled: longer than MTU - 60, and the smallest MTU
# RakNet tries is 576 (a lost 0x05 makes the client go 1492, 1200, 576).
SCRAMBLE_MIN = 576 - 60 + 1

NAMES = {
    getattr(MI, n): n
    for n in dir(MI)
    if n.startswith("ID_") and isinstance(getattr(MI, n), int)
}
LOCAL_IDS = {0x0B, 0x0C, 0x0E, 0x0F, 0x11, 0x16, 0x1E}
OFFLINE_IDS = {0x01, 0x02, 0x0D, 0x12, 0x14, 0x17, 0x19, 0x1A, 0x1C, 0x1D}


def id_name(i):
    if i >= MI.ID_USER_PACKET_ENUM:
        return "ID_USER_PACKET_ENUM+%d" % (i - MI.ID_USER_PACKET_ENUM)
    return NAMES.get(i, "UNKNOWN_0x%02X" % i)


def raknet_version():
    try:
        from importlib.metadata import version
        return version("raknet")
    except Exception:  # pragma: no cover
        return None


class Timeout(Exception):
    pass


def log(args, *a):
    if args.verbose:
        print("peers.py:", *a, file=sys.stderr, flush=True)


def make_payload(rng, rel, channel, serial, size):
    head = bytes([0x86 + rel, channel]) + struct.pack(">H", serial)
    if size <= len(head):
        return head[:size]
    return head + bytes(rng.getrandbits(8) for _ in range(size - len(head)))


def bulk_size(rng):
    """Sizes 1..3000, mean ~1000: 1 in 10 up to 64 bytes, 1 in 5 over 1432 (split)."""
    r = rng.random()
    if r < 0.10:
        return rng.randint(1, 64)
    if r < 0.40:
        return rng.randint(65, 800)
    if r < 0.80:
        return rng.randint(801, 1432)
    return rng.randint(1433, 3000)


def plan_bulk(seed, n):
    """The bulk scenario's plan: n messages each way, interleaved client/server."""
    rng = random.Random(seed)
    plan = []
    for i in range(n):
        for side, base in (("client", 0), ("server", 0x8000)):
            rel = rng.randrange(8)
            ch = rng.choice(BULK_CHANNELS)
            size = bulk_size(rng)
            head = bytes([0x86 + rel, ch]) + struct.pack(">H", base | (i & 0x7FFF))
            payload = (head + rng.randbytes(size - 4))[:size] if size > 4 else head[:size]
            plan.append((side, rel, ch, payload))
    return plan


def mirror_size(rng):
    """1..40000 bytes, never 1401..1500 (over 1500 is always split)."""
    r = rng.random()
    if r < 0.05:
        return rng.randint(1, 4)
    if r < 0.55:
        return rng.randint(5, 400)
    if r < 0.80:
        return rng.randint(401, 1400)
    if r < 0.97:
        return rng.randint(1501, 12000)
    return rng.randint(12001, 40000)


def plan_mirror(seed, n):
    """The mirror scenario's plan: n client messages, n // 4 server ones,
    4 client messages then 1 server message."""
    rng = random.Random(seed)
    sides = {}
    for side, count, base in (("client", n, 0), ("server", n // 4, 0x8000)):
        out = []
        big = {count * (k + 1) // 4: size for k, size in enumerate(MIRROR_BIG)}
        for i in range(count):
            if i < 8 * len(MIRROR_CHANNELS):  # every reliability on every channel
                rel, ch = i % 8, MIRROR_CHANNELS[(i // 8) % len(MIRROR_CHANNELS)]
            else:
                rel, ch = rng.randrange(8), rng.choice(MIRROR_CHANNELS)
            size = big.get(i) or mirror_size(rng)
            head = bytes([0x86 + rel, ch]) + struct.pack(">H", (base + i) & 0xFFFF)
            if size <= 4:
                payload = head[:size]
            else:
                payload = head + rng.randbytes(size - 4).translate(MIRROR_FILL)
            out.append((side, rel, ch, payload))
        sides[side] = out
    plan = []
    c, sv = sides["client"], sides["server"]
    for i in range(len(c)):
        plan.append(c[i])
        if i % 4 == 3 and i // 4 < len(sv):
            plan.append(sv[i // 4])
    plan.extend(sv[len(c) // 4:])
    return plan


def plan_messages(scenario, seed):
    """Return the list of (side, rel, channel, payload) to send, in send order."""
    rng = random.Random(seed)
    c2s, s2c = [], []
    if scenario == "basic":
        for k, size in enumerate([1, 40, 300]):
            c2s.append((3, 0, make_payload(rng, 3, 0, k, size)))
            s2c.append((3, 0, make_payload(rng, 3, 0, 0x8000 + k, size)))
    elif scenario == "all-reliabilities":
        for side, out, base in (("client", c2s, 0), ("server", s2c, 0x8000)):
            serial = base
            for rel in range(8):
                for ci, ch in enumerate(CHANNELS):
                    size = SIZES[(rel + 3 * ci) % len(SIZES)]
                    out.append((rel, ch, make_payload(rng, rel, ch, serial, size)))
                    serial += 1
            for size, rel, ch in SPLITS:
                out.append((rel, ch, make_payload(rng, rel, ch, serial, size)))
                serial += 1
    plan = []
    for i in range(max(len(c2s), len(s2c))):
        if i < len(c2s):
            plan.append(("client",) + c2s[i])
        if i < len(s2c):
            plan.append(("server",) + s2c[i])
    return plan


class Recorder:
    def __init__(self):
        self.got = []
        self.sent = []
        self.pending = {}  # (side, payload) -> list of sent indices
        self.by_content = {}  # (side, len, sorted bytes) -> sent indices (split ones)

    def note_sent(self, side, rel, ch, payload, receipt):
        idx = len(self.sent)
        serial = int.from_bytes(payload[2:4], "big") if len(payload) >= 4 else None
        self.sent.append(
            {
                "index": idx,
                "serial": serial,
                "side": side,
                "dir": "c2s" if side == "client" else "s2c",
                "reliability": REL_BY_VALUE[rel].name,
                "reliability_value": rel,
                "channel": ch,
                "len": len(payload),
                "hex": payload.hex(),
                "receipt": receipt,
                "delivered": False,
                "scrambled": False,
            }
        )
        self.pending.setdefault((side, payload), []).append(idx)
        if len(payload) >= SCRAMBLE_MIN:
            key = (side, len(payload), bytes(sorted(payload)))
            self.by_content.setdefault(key, []).append(idx)

    def _scrambled_match(self, peer, data):
        """A split message of `peer`, not yet delivered, with the bytes of `data`
        in another order (parts joined in arrival order), or None."""
        if len(data) < SCRAMBLE_MIN:
            return None
        for idx in self.by_content.get((peer, len(data), bytes(sorted(data))), []):
            s = self.sent[idx]
            if not s["delivered"] and not s["scrambled"]:
                return s
        return None

    def record(self, side, pkt):
        data = bytes(pkt.data)
        i = data[0] if data else -1
        if i in LOCAL_IDS:
            kind, d = "local", None
        else:
            kind = "offline" if i in OFFLINE_IDS else "connected"
            d = "c2s" if side == "server" else "s2c"
        e = {
            "n": len(self.got),
            "time": round(time.time(), 6),
            "side": side,
            "dir": d,
            "kind": kind,
            "id": i,
            "name": id_name(i),
            "len": len(data),
            "hex": data.hex(),
        }
        peer = "client" if side == "server" else "server"
        if kind == "connected" and self.pending.get((peer, data)):
            s = self.sent[self.pending[(peer, data)].pop(0)]
            s["delivered"] = True
            e["sent"] = {
                "serial": s["serial"],
                "reliability": s["reliability"],
                "reliability_value": s["reliability_value"],
                "channel": s["channel"],
            }
        elif kind == "connected":
            s = self._scrambled_match(peer, data)
            if s is not None:
                s["scrambled"] = True
                self.pending[(peer, bytes.fromhex(s["hex"]))].remove(s["index"])
                e["sent"] = {
                    "serial": s["serial"],
                    "reliability": s["reliability"],
                    "reliability_value": s["reliability_value"],
                    "channel": s["channel"],
                    "scrambled": True,
                }
        self.got.append(e)
        return e

    def count(self, side, ident):
        return sum(1 for e in self.got if e["side"] == side and e["id"] == ident)


class Session:
    def __init__(self, args):
        self.args = args
        self.rec = Recorder()
        self.server = None
        self.client = None
        self.client_addr = None  # SystemAddress of the client, seen by the server
        self.server_addr = None  # SystemAddress of the server, seen by the client

    # -- polling -----------------------------------------------------------
    def poll(self):
        got = False
        for side, peer in (("server", self.server), ("client", self.client)):
            if peer is None:
                continue
            while True:
                p = peer.receive()
                if p is None:
                    break
                got = True
                e = self.rec.record(side, p)
                log(self.args, side, "got", e["name"], e["len"], e["hex"][:32])
                if side == "server" and e["id"] == MI.ID_NEW_INCOMING_CONNECTION:
                    self.client_addr = p.system_address
                if side == "client" and e["id"] == MI.ID_CONNECTION_REQUEST_ACCEPTED:
                    self.server_addr = p.system_address
        return got

    def wait_for(self, cond, secs, what):
        end = time.monotonic() + secs
        while time.monotonic() < end:
            self.poll()
            if cond():
                return True
            time.sleep(0.005)
        log(self.args, "gave up waiting for", what)
        return False

    # -- steps -------------------------------------------------------------
    def start(self, server_max_incoming=4, with_server=True):
        a = self.args
        if with_server:
            self._start_server(server_max_incoming)
        self.client = RakPeer()
        cp = a.client_protocol if a.client_protocol is not None else a.protocol
        self.client.startup(HOST, a.client_port, max_connections=1,
                            protocol_version=cp, max_internal_ids=a.internal_ids)

    def _start_server(self, server_max_incoming):
        a = self.args
        self.server = RakPeer()
        self.server.startup(HOST, a.port, max_connections=4,
                            protocol_version=a.protocol, max_internal_ids=a.internal_ids)
        self.server.max_incoming_connections = server_max_incoming
        if a.pong_motd is not None:
            m = a.pong_motd.replace("{port}", str(a.port)).encode()
            self.server.offline_ping_response = struct.pack(">H", len(m)) + m
        else:
            self.server.offline_ping_response = a.pong.encode()

    def ping(self):
        before = self.rec.count("client", MI.ID_UNCONNECTED_PONG)
        self.client.ping(HOST, self.args.connect_port)
        return self.wait_for(
            lambda: self.rec.count("client", MI.ID_UNCONNECTED_PONG) > before, 3, "pong")

    def connect(self, attempts=6, interval_ms=1000):
        self.client.connect(HOST, self.args.connect_port,
                            num_attempts=attempts, attempt_interval_ms=interval_ms)

        def done():
            return (self.client_addr is not None and self.server_addr is not None) or any(
                e["side"] == "client" and e["id"] in (0x11, 0x12, 0x14, 0x17, 0x18, 0x19, 0x1A)
                for e in self.rec.got)
        self.wait_for(done, attempts * interval_ms / 1000.0 + 3, "connection")
        return self.client_addr is not None and self.server_addr is not None

    def exchange(self, plan, must_arrive=None, wait=10.0):
        """Send plan; wait (at most `wait` s) until every message whose reliability
        is in must_arrive (default: every message) arrived, byte for byte or
        scrambled (see the module doc), and every receipt came."""
        pri = PacketPriority.HIGH_PRIORITY
        for k, (side, rel, ch, payload) in enumerate(plan):
            peer, addr = ((self.client, self.server_addr) if side == "client"
                          else (self.server, self.client_addr))
            receipt = peer.send(payload, pri, REL_BY_VALUE[rel], ch, addr)
            self.rec.note_sent(side, rel, ch, payload,
                               receipt if rel in RECEIPT_VALUES else None)
            if k % 8 == 7:  # let a few datagrams go out between bursts
                self.poll()
                time.sleep(0.02)
        want_receipts = {
            "client": sum(1 for s in plan if s[0] == "client" and s[1] in RECEIPT_VALUES),
            "server": sum(1 for s in plan if s[0] == "server" and s[1] in RECEIPT_VALUES),
        }

        def arrived(s):
            if must_arrive is None:
                return s["delivered"]
            return (s["delivered"] or s["scrambled"]
                    or s["reliability_value"] not in must_arrive)

        def receipts_done():
            for side, n in want_receipts.items():
                r = self.rec.count(side, MI.ID_SND_RECEIPT_ACKED) + self.rec.count(
                    side, MI.ID_SND_RECEIPT_LOSS)
                if r < n:
                    return False
            return True

        def done():
            return all(arrived(s) for s in self.rec.sent) and (
                must_arrive is not None or receipts_done())
        self.wait_for(done, wait, "deliveries and receipts")
        if must_arrive is not None:  # receipts: wanted, but not worth a long wait
            self.wait_for(receipts_done, 2.0, "receipts")
        # Let the final ACKs and any connected ping/pong settle.
        self.wait_for(lambda: False, 0.3, "(settle)")

    def exchange_bulk(self, plan, wait=30.0):
        """Send plan in bursts (BULK_BURST per side, then a poll and BULK_GAP s),
        then wait (at most `wait` s) for every reliable message and receipt."""
        pri = PacketPriority.HIGH_PRIORITY
        for k, (side, rel, ch, payload) in enumerate(plan):
            peer, addr = ((self.client, self.server_addr) if side == "client"
                          else (self.server, self.client_addr))
            receipt = peer.send(payload, pri, REL_BY_VALUE[rel], ch, addr)
            self.rec.note_sent(side, rel, ch, payload,
                               receipt if rel in RECEIPT_VALUES else None)
            if k % (2 * BULK_BURST) == 2 * BULK_BURST - 1:
                self.poll()
                time.sleep(BULK_GAP)
        log(self.args, "bulk: %d messages sent" % len(plan))
        want_receipts = {
            "client": sum(1 for s in plan if s[0] == "client" and s[1] in RECEIPT_VALUES),
            "server": sum(1 for s in plan if s[0] == "server" and s[1] in RECEIPT_VALUES),
        }
        reliable = [s for s in self.rec.sent if s["reliability_value"] in RELIABLE_VALUES]

        def done():
            if any(not s["delivered"] for s in reliable):
                return False
            for side, n in want_receipts.items():
                r = self.rec.count(side, MI.ID_SND_RECEIPT_ACKED) + self.rec.count(
                    side, MI.ID_SND_RECEIPT_LOSS)
                if r < n:
                    return False
            return True
        self.wait_for(done, wait, "deliveries and receipts")
        # Stragglers among the unreliable ones, final ACKs.
        self.wait_for(lambda: all(s["delivered"] for s in self.rec.sent), 0.5,
                      "(unreliable stragglers)")

    def disconnect(self):
        # Shutdown of the client sends 0x15 (reliable ordered) and waits for its ACK.
        self.client.shutdown(1.0)
        self.wait_for(
            lambda: any(e["side"] == "server" and e["id"] in (0x15, 0x16)
                        for e in self.rec.got), 3, "disconnection notification")

    def stop(self):
        for p in (self.client, self.server):
            if p is not None:
                try:
                    p.shutdown(0.0)
                except Exception:  # pragma: no cover
                    pass
        self.client = self.server = None


def run_session(args):
    if args.connect_port is None:
        args.connect_port = args.port + 2 if args.scenario == "no-server" else args.port
    sc = args.scenario
    s = Session(args)
    status = 0
    try:
        if sc == "no-server":
            s.start(with_server=False)  # nothing listens at the target
            s.connect(attempts=3, interval_ms=300)
        elif sc == "full":
            s.start(server_max_incoming=0)
            s.ping()
            s.connect(attempts=3, interval_ms=300)
        elif sc == "mismatch":
            if args.client_protocol is None:
                args.client_protocol = args.protocol + 1
            s.start()
            s.connect(attempts=3, interval_ms=300)
        elif sc == "mirror":
            s.start()  # no ping: nothing offline that a lost datagram could fail
            if not s.connect():
                print("peers.py: connection failed", file=sys.stderr)
                status = 1
            else:
                s.wait_for(lambda: False, 0.2, "(settle)")
                s.exchange(plan_mirror(args.seed, args.messages or 320),
                           must_arrive=MIRROR_RELIABLE, wait=20.0)
                s.disconnect()
        else:
            s.start()
            if not s.ping():
                print("peers.py: no pong", file=sys.stderr)
                status = 1
            if sc != "ping":
                if not s.connect():
                    print("peers.py: connection failed", file=sys.stderr)
                    status = 1
                else:
                    s.wait_for(lambda: False, 0.2, "(settle)")
                    if sc == "bulk":
                        s.exchange_bulk(plan_bulk(args.seed, args.messages or 12000))
                    else:
                        s.exchange(plan_messages(sc, args.seed))
                    s.disconnect()
            else:
                s.wait_for(lambda: False, 0.2, "(settle)")
        missing = [m for m in s.rec.sent if not m["delivered"]]
        scrambled = [m for m in missing if m["scrambled"]]
        many = sc in ("bulk", "mirror")
        if many and missing:  # one line, not one per dropped unreliable message
            print("peers.py: not delivered: %d of %d messages (%d reliable; %d of them "
                  "scrambled: split parts joined in arrival order)" % (
                      len(missing), len(s.rec.sent),
                      sum(1 for m in missing if m["reliability_value"] in RELIABLE_VALUES),
                      len(scrambled)), file=sys.stderr)
        for m in (missing if not many else []):
            print("peers.py: not delivered: %s %s ch %d len %d%s" % (
                m["dir"], m["reliability"], m["channel"], m["len"],
                " (scrambled: split parts joined in arrival order)" if m["scrambled"]
                else ""), file=sys.stderr)
        must = MIRROR_RELIABLE if sc == "mirror" else RELIABLE_VALUES
        if any(m["reliability_value"] in must for m in missing) and not args.allow_undelivered:
            status = 1
    except Timeout:
        print("peers.py: overall timeout of %ss reached" % args.timeout, file=sys.stderr)
        status = 3
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        s.stop()
    if args.out_json:
        with open(args.out_json, "w") as f:  # a JSON list, one object per line
            f.write("[\n" + ",\n".join(json.dumps(e) for e in s.rec.got) + "\n]\n")
    if args.sent_json:
        with open(args.sent_json, "w") as f:
            json.dump({
                "scenario": sc,
                "seed": args.seed,
                "server": "%s:%d" % (HOST, args.port),
                "client_port": args.client_port,
                "connect_port": args.connect_port,
                "protocol": args.protocol,
                "client_protocol": args.client_protocol if args.client_protocol is not None
                else args.protocol,
                "internal_ids": args.internal_ids,
                "raknet_python": raknet_version(),
                "sent": s.rec.sent,
            }, f, indent=1)
            f.write("\n")
    if args.verbose or status:
        kinds = {}
        for e in s.rec.got:
            kinds[(e["side"], e["name"])] = kinds.get((e["side"], e["name"]), 0) + 1
        for (side, name), n in sorted(kinds.items()):
            print("peers.py: %-6s received %3d x %s" % (side, n, name), file=sys.stderr)
    return status


SCENARIOS = ["ping", "basic", "all-reliabilities", "mismatch", "full", "no-server", "bulk",
             "mirror"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("scenarios", help="list the scenarios")
    s = sub.add_parser("session", help="run a server and a client in this process")
    s.add_argument("--port", type=int, required=True, help="server UDP port on 127.0.0.1")
    s.add_argument("--client-port", type=int, default=0, help="client UDP port (0: any)")
    s.add_argument("--connect-port", type=int, default=None,
                   help="port the client pings and connects to (default: --port)")
    s.add_argument("--scenario", choices=SCENARIOS, default="all-reliabilities")
    s.add_argument("--protocol", type=int, default=6, help="RakNet protocol version")
    s.add_argument("--client-protocol", type=int, default=None,
                   help="client's protocol version (default: --protocol)")
    s.add_argument("--internal-ids", type=int, default=10,
                   help="MAXIMUM_NUMBER_OF_INTERNAL_IDS (10 original, 20 Bedrock)")
    s.add_argument("--seed", type=int, default=1)
    g = s.add_mutually_exclusive_group()
    g.add_argument("--pong", default="raknet-dissect sample server",
                   help="raw offline ping response (default: %(default)s)")
    g.add_argument("--pong-motd", default=None,
                   help="offline ping response as u16 BE length + string (Bedrock "
                        "style); {port} is replaced by --port")
    s.add_argument("--out-json", help="write what each application received")
    s.add_argument("--sent-json", help="write what each application sent")
    s.add_argument("--timeout", type=float, default=30, help="overall limit, seconds")
    s.add_argument("--messages", type=int, default=None,
                   help="bulk: messages sent each way (default 12000); mirror: "
                        "messages sent by the client (default 320; the server sends 1/4)")
    s.add_argument("--allow-undelivered", action="store_true",
                   help="a reliable message not delivered byte for byte (lost, or "
                        "scrambled by RakNet's arrival-order reassembly) is reported "
                        "but does not make the exit status 1")
    s.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.cmd == "scenarios":
        print("\n".join(SCENARIOS))
        return 0

    def on_alarm(*_):
        raise Timeout()
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, args.timeout)
    return run_session(args)


if __name__ == "__main__":
    sys.exit(main())
