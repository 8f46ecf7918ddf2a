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
    peers.py server --port P [--host 127.0.0.1] [--protocol 6] [--internal-ids 10]
                    [--max-incoming 4] [--pong TEXT] [--echo] [--out-json FILE]
                    [--once] [--expect N] [--shutdown-after S] [--rcvbuf BYTES]
                    [--timeout 30] [-v]
    peers.py client --connect HOST:PORT [--protocol 6] [--internal-ids 10]
                    [--scenario basic|all-reliabilities|mirror|peer] [--messages N]
                    [--seed 1] [--out-json FILE] [--sent-json FILE] [--wait 2]
                    [--bulk-bytes B --bulk-size N] [--rcvbuf BYTES] [--timeout 30] [-v]
    peers.py scenarios            # list the scenarios of `session`

`session` starts a server on 127.0.0.1:P and a client (on port Q, default 0 =
ephemeral) in this one process; the client connects to R (default P: use R to
put a relay between them).  `server` and `client` run one original peer alone,
to face another implementation (raknet-dissect serve / connect): see "Server
alone" and "Client alone" below.  Scenarios of `session`:

    ping              unconnected ping/pong only, no connection
    basic             ping, connect, 3 RELIABLE_ORDERED messages each way, disconnect
    all-reliabilities ping, connect, every reliability 0..7 (incl. *_WITH_ACK_RECEIPT)
                      on channels 0, 1, 5, 31 with sizes 1..1400 bytes, both ways,
                      plus split messages (5000, 1600, 1500, 1500 bytes), disconnect
    reconnect         ping, then twice: connect, the all-reliabilities exchange
                      (seeds S and S+1), disconnect; the second time with a new
                      client RakPeer bound to the same UDP port as the first (the
                      first one's, when --client-port is 0): one client address,
                      two connections (raknet-dissect's `sessions`)
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

Server alone (`server`)
-----------------------
An original-library server on HOST:P (RakPeer startup, SetMaximumIncomingConnections
= --max-incoming, offline ping response = --pong).  P = 0 binds an ephemeral
port.  Once it is ready it prints exactly one line to stdout (flushed), and
nothing else there:

    listening 127.0.0.1:P          # HOST:P, P the port actually bound

It records every packet its application gets from receive() in the --out-json
format below (side "server"; dir "c2s" for the client's connected messages).
With --out-json every packet is kept in memory until exit (its hex is twice its
size): leave it out for large transfers, user messages are then only counted.

    --echo          send every user message (id >= 0x86) back to its sender,
                    RELIABLE_ORDERED on channel 0, HIGH_PRIORITY: the Python API
                    does not tell the reliability or the channel a message came
                    with, so the echo cannot repeat them
    --once          exit 0 after the first client disconnects (the server gets
                    ID_DISCONNECTION_NOTIFICATION or ID_CONNECTION_LOST)
    --expect N      exit 0 once N user messages were received (after waiting at
                    most 1 s more for the client's disconnection); with --once,
                    a client that leaves before N makes the exit status 1
    --shutdown-after S
                    S seconds after the first client connected (the server
                    application got ID_NEW_INCOMING_CONNECTION), shut the
                    server down: RakPeer.shutdown(1.0), which sends
                    ID_DISCONNECTION_NOTIFICATION to every connected client
                    and waits at most 1 s for its acknowledgement; then exit 0
                    (a server that goes away cleanly, tests/handshake.rs).
                    It prints `server: shut down after S s` to stderr then.
                    Checked between receive() polls (every 0.5 ms), so it
                    comes within a few ms of S.  S = 0: at once.
    --rcvbuf BYTES  see "Socket receive buffer" below
    --timeout S     overall limit (default 30 s): exit status 3
    SIGTERM, SIGINT exit status 143, 130

Without --once, --expect and --shutdown-after it serves until --timeout.  It
writes --out-json on exit in every case, and prints two lines to stderr (the
benchmark scripts/bench-peer.sh reads them):

    server: N user messages, B bytes in T s (X MB/s from first to last user message)
    server: first user message at E1, last at E2 (epoch s)      # only when N > 0

(B counts the whole messages, id byte included; T and X are 0 for N < 2.)

Client alone (`client`)
-----------------------
An original-library client (ephemeral port) connects to HOST:PORT (6 attempts,
1 s apart).  A failure is reported with the id RakNet returned, e.g.
`peers.py: client: connection to 127.0.0.1:19132 failed: ID_CONNECTION_ATTEMPT_FAILED
(0x11)`, exit status 1.  Connected, it sends the client-to-server messages of
--scenario (default all-reliabilities; the client's half of what `session`
sends, with its pacing: a poll and 20 ms after every 8 messages):

    basic, all-reliabilities   as for `session`
    mirror                     as for `session`, --messages N (default 320)
    peer                       as mirror, but --messages N defaults to 1000, and
                               it adds one message of 1,000,000 bytes
                               (RELIABLE_ORDERED, channel 0) and one of 300,000
                               (RELIABLE_ORDERED_WITH_ACK_RECEIPT, channel 5) to
                               mirror's 100000, 65000 and 30000 (all five at
                               1/6 ... 5/6 of the list).  The first 40 cover every
                               reliability 0..7 on every channel of 0, 1, 2, 5, 31.

Then it waits until every *_WITH_ACK_RECEIPT message got its receipt (0x0E or
0x0F), at most --wait S seconds (default 2), and 0.3 s more for incoming
messages; a plan without such messages (basic) just waits --wait S.  The API has
no other way to see acknowledgements (no GetStatistics): the disconnection
covers the rest.  RakPeer::Shutdown, the only way to close in the Python API
(CloseConnection with notification for every connection), queues
ID_DISCONNECTION_NOTIFICATION (RELIABLE_ORDERED, channel 0, LOW_PRIORITY)
behind everything sent, and returns as soon as all of it, the notification
included, is acknowledged; it is given at most 1 s (on loopback it takes tens
of ms).  Everything received from the server is recorded for
--out-json (side "client", dir "s2c": 0x10, receipts, echoes ...).  In
--sent-json, "delivered" and "scrambled" are null (a client alone cannot tell)
and each entry has "receipt_status": "acked", "loss" or null (no receipt
asked, or none came).

    --bulk-bytes B --bulk-size N   instead of a scenario: send B bytes as
                    ceil(B/N) messages of N bytes (the last one shorter when N
                    does not divide B), RELIABLE_ORDERED on channel 0: byte 0 =
                    0x86, bytes 1..4 = serial (u32 BE, from 0), then filler
                    (bytes 0x86..0xFF).  Every message ending a run of ~1 MB
                    (every ceil(10^6/N)-th; every 1000th for N = 1000) and the
                    last one are RELIABLE_ORDERED_WITH_ACK_RECEIPT instead;
                    at most 8 of those are unacknowledged at a time (so at most
                    ~8 MB are queued in RakNet; it accepts any amount), and it
                    polls receive() every 256 messages.  Once every receipt
                    came (the last one: the server acknowledged the datagram of
                    the last message; a resend of an earlier one may still be
                    under way, which the disconnection waits for) it prints one
                    line to stderr

                        client: sent B bytes in T s (X MB/s)

                    (T from the first send to the last receipt) and disconnects.
                    --sent-json then has "sent": [] and a "bulk" object
                    {"bytes", "size", "messages", "seconds"}.

Exit status: 0 = connected, everything sent, and every receipt of a reliable
message (6, 7) came and said acked; 1 = no connection, or the server closed or
lost the connection before the end, or a reliable message's receipt was
missing or a loss; 2 = bad arguments; 3 = --timeout (default 30 s) reached;
143, 130 = SIGTERM, SIGINT.  --out-json and --sent-json are written in every
case.

Socket receive buffer (`--rcvbuf BYTES`, server and client): RakNet asks for
SO_RCVBUF 256 KB (Linux doubles it: 512 KB, ~220 full datagrams).  The burst
of a big split message (the peer scenario's 1 MB) can overflow it on loopback,
even on an idle machine: the kernel drops datagrams at that socket (netstat
-su: receive buffer errors); RakNet resends them, and the PyPI build, which
joins split parts in arrival order (see "Scrambled split messages"), then
delivers the message with its parts permuted.  On a 2-CPU machine the original
server got the peer scenario's 1 MB message scrambled in 8 of 14
original-to-original runs (every other message intact and in order; with
--echo, the client's copy too, in most runs).  --rcvbuf raises
the buffer of this peer's socket to BYTES (as given to setsockopt; Linux
doubles it; SO_RCVBUFFORCE as root, else net.core.rmem_max caps it; never
lowered), found through /proc by its port, as the Python API does not expose
it.  With --rcvbuf 8000000 no datagram was dropped in 12 runs of the peer
scenario (6 with --echo and --rcvbuf on both ends).  It changes only the
kernel's buffer, not what RakNet does with what arrives.  Bulk transfers suffer
from the drops too (resends, a slower sender): see scripts/bench-peer.sh.

Scrambled split messages: the PyPI build joins the parts of a split message in
the order they ARRIVE (docs/wire-format.md section 7), so with loss the application
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
  (0x0E/0x0F send receipts with a u32 receipt number, little-endian: the
  number send() returned, counting every send from 1; 0x11, 0x16).

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
import collections
import json
import os
import random
import signal
import socket
import struct
import sys
import time

try:
    import raknet
    from raknet import MessageIdentifiers as MI
    from raknet import ConnectionAttemptError, PacketPriority, PacketReliability, RakPeer
    from raknet import StartupError
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

# peer scenario (`client --scenario peer`): mirror's big messages plus 1 MB and 300 KB,
# as (size, reliability, channel); None = drawn as for any other message.
PEER_BIG = [(100000, None, None), (1000000, 3, 0), (65000, None, None), (300000, 7, 5),
            (30000, None, None)]
PEER_MESSAGES = 1000

# client --bulk-bytes: a receipt every ~BULK_RECEIPT_BYTES, at most BULK_WINDOW
# receipts outstanding, a poll every BULK_POLL messages.
BULK_RECEIPT_BYTES = 1000000
BULK_WINDOW = 8
BULK_POLL = 256
# Shutdown of a client alone: returns once everything is acknowledged, at most this.
DISCONNECT_FLUSH = 1.0
# Failures the client can get in answer to connect().
CONNECT_FAILURES = (0x11, 0x12, 0x14, 0x17, 0x18, 0x19, 0x1A)

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


class Stopped(Exception):
    """SIGTERM (server and client): stop, write the files, exit 128 + 15."""


def grow_rcvbuf(peer, size):
    """Raise SO_RCVBUF of `peer`'s UDP socket to `size` (never lower it): the
    Python API has no access to the socket, so find its descriptor by the bound
    port (/proc, Linux only).  SO_RCVBUFFORCE first (root: past
    net.core.rmem_max), then SO_RCVBUF.  Return the new size, or None."""
    port = peer.get_bound_address(0).port
    inodes = set()
    for path in ("/proc/net/udp", "/proc/net/udp6"):
        try:
            with open(path) as f:
                for line in f.read().splitlines()[1:]:
                    col = line.split()
                    if int(col[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add("socket:[%s]" % col[9])
        except OSError:
            pass
    got = None
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + fd) not in inodes:
                continue
        except OSError:
            continue
        sock = socket.socket(fileno=int(fd))
        try:
            before = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
            if before < size:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33),
                                    size)
                except OSError:  # not root: rmem_max caps it
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)
                if sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) < before:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, before // 2)
            got = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        finally:
            sock.detach()  # the descriptor stays RakNet's
    if got is None:
        print("peers.py: --rcvbuf: cannot find the socket of port %d" % port, file=sys.stderr)
    return got


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


def plan_mirror(seed, n, bigs=None):
    """The mirror scenario's plan: n client messages, n // 4 server ones,
    4 client messages then 1 server message.  bigs: the big messages of each
    side, (size, reliability or None, channel or None), evenly spread
    (default MIRROR_BIG at 1/4, 1/2, 3/4)."""
    if bigs is None:
        bigs = [(size, None, None) for size in MIRROR_BIG]
    rng = random.Random(seed)
    sides = {}
    for side, count, base in (("client", n, 0), ("server", n // 4, 0x8000)):
        out = []
        big = {count * (k + 1) // (len(bigs) + 1): b for k, b in enumerate(bigs)}
        for i in range(count):
            if i < 8 * len(MIRROR_CHANNELS):  # every reliability on every channel
                rel, ch = i % 8, MIRROR_CHANNELS[(i // 8) % len(MIRROR_CHANNELS)]
            else:
                rel, ch = rng.randrange(8), rng.choice(MIRROR_CHANNELS)
            if i in big:
                size, brel, bch = big[i]
                rel = rel if brel is None else brel
                ch = ch if bch is None else bch
            else:
                size = mirror_size(rng)
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


def plan_peer(seed, n):
    """The peer scenario's plan (client --scenario peer): mirror's, with PEER_BIG."""
    return plan_mirror(seed, n, PEER_BIG)


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
        self.receipts = {}  # (side, receipt number) -> "acked" | "loss"
        self.closed = {}  # side -> name of the first 0x15 / 0x16 it got

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
                self.handle(side, p)
        return got

    def handle(self, side, p):
        """Record one packet that `side`'s receive() returned."""
        e = self.rec.record(side, p)
        log(self.args, side, "got", e["name"], e["len"], e["hex"][:32])
        if side == "server" and e["id"] == MI.ID_NEW_INCOMING_CONNECTION:
            self.client_addr = p.system_address
        if side == "client" and e["id"] == MI.ID_CONNECTION_REQUEST_ACCEPTED:
            self.server_addr = p.system_address
        if e["id"] in (MI.ID_SND_RECEIPT_ACKED, MI.ID_SND_RECEIPT_LOSS) and e["len"] >= 5:
            # The receipt number that send() returned, u32 in host (little-endian) order.
            num = int.from_bytes(bytes.fromhex(e["hex"][2:10]), "little")
            self.receipts[(side, num)] = (
                "acked" if e["id"] == MI.ID_SND_RECEIPT_ACKED else "loss")
        if e["id"] in (MI.ID_DISCONNECTION_NOTIFICATION, MI.ID_CONNECTION_LOST):
            self.closed.setdefault(side, e["name"])
        return e

    def wait_for(self, cond, secs, what, step=0.005):
        end = time.monotonic() + secs
        while time.monotonic() < end:
            self.poll()
            if cond():
                return True
            time.sleep(step)
        log(self.args, "gave up waiting for", what)
        return False

    # -- steps -------------------------------------------------------------
    def start(self, server_max_incoming=4, with_server=True, client_host=HOST):
        a = self.args
        if with_server:
            self._start_server(server_max_incoming)
        self.start_client(a.client_port, client_host)

    def start_client(self, port, host=HOST):
        """A new client RakPeer bound to host:port (0: any)."""
        a = self.args
        self.client = RakPeer()
        cp = a.client_protocol if a.client_protocol is not None else a.protocol
        self.client.startup(host, port, max_connections=1,
                            protocol_version=cp, max_internal_ids=a.internal_ids)
        self.server_addr = self.client_addr = None

    def _start_server(self, server_max_incoming, host=HOST):
        a = self.args
        self.server = RakPeer()
        self.server.startup(host, a.port, max_connections=max(4, server_max_incoming),
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

    def connect(self, attempts=6, interval_ms=1000, host=HOST):
        """Connect the client to host:--connect-port; True once both ends see the
        connection (only the client's end without a server in this process)."""
        self.client.connect(host, self.args.connect_port,
                            num_attempts=attempts, attempt_interval_ms=interval_ms)

        def linked():
            return self.server_addr is not None and (
                self.server is None or self.client_addr is not None)

        def done():
            return linked() or self.connect_failure() is not None
        self.wait_for(done, attempts * interval_ms / 1000.0 + 3, "connection")
        return linked()

    def connect_failure(self):
        """The first failure the client got in answer to connect(), or None."""
        for e in self.rec.got:
            if e["side"] == "client" and e["id"] in CONNECT_FAILURES:
                return e
        return None

    def send_plan(self, plan, burst, gap):
        """Send plan, recording each message; after every `burst` messages a poll
        and `gap` seconds to let a few datagrams go out."""
        pri = PacketPriority.HIGH_PRIORITY
        for k, (side, rel, ch, payload) in enumerate(plan):
            peer, addr = ((self.client, self.server_addr) if side == "client"
                          else (self.server, self.client_addr))
            receipt = peer.send(payload, pri, REL_BY_VALUE[rel], ch, addr)
            self.rec.note_sent(side, rel, ch, payload,
                               receipt if rel in RECEIPT_VALUES else None)
            if k % burst == burst - 1:
                self.poll()
                time.sleep(gap)

    def exchange(self, plan, must_arrive=None, wait=10.0):
        """Send plan; wait (at most `wait` s) until every message whose reliability
        is in must_arrive (default: every message) arrived, byte for byte or
        scrambled (see the module doc), and every receipt came."""
        def receipts(side):
            return self.rec.count(side, MI.ID_SND_RECEIPT_ACKED) + self.rec.count(
                side, MI.ID_SND_RECEIPT_LOSS)
        # Receipts of an earlier exchange (reconnect) do not count for this one.
        before = {side: receipts(side) for side in ("client", "server")}
        self.send_plan(plan, 8, 0.02)
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
                if receipts(side) - before[side] < n:
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
        self.send_plan(plan, 2 * BULK_BURST, BULK_GAP)
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

    def disconnect(self, flush=1.0):
        def gone():
            return sum(1 for e in self.rec.got
                       if e["side"] == "server" and e["id"] in (0x15, 0x16))
        before = gone()
        # Shutdown of the client sends 0x15 (reliable ordered) and waits for its ACK.
        self.client.shutdown(flush)
        if self.server is None:
            return
        self.wait_for(lambda: gone() > before, 3, "disconnection notification")

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
        elif sc == "reconnect":
            s.start()
            if not s.ping():
                print("peers.py: no pong", file=sys.stderr)
                status = 1
            # The second client takes the first one's port.
            args.client_port = s.client.get_bound_address(0).port
            for k in range(2):
                if k:
                    s.start_client(args.client_port)
                if not s.connect():
                    print("peers.py: connection %d failed" % (k + 1), file=sys.stderr)
                    status = 1
                    break
                s.wait_for(lambda: False, 0.2, "(settle)")
                s.exchange(plan_messages("all-reliabilities", args.seed + k))
                s.disconnect()
                log(args, "connection %d closed" % (k + 1))
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
    write_outputs(args, s.rec, {
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
    }, status)
    return status


def write_outputs(args, rec, sent_doc, status):
    """Write --out-json (rec.got) and --sent-json (sent_doc), if asked; with -v or
    a failure, count what each side received on stderr."""
    if args.out_json:
        with open(args.out_json, "w") as f:  # a JSON list, one object per line
            f.write("[\n" + ",\n".join(json.dumps(e) for e in rec.got) + "\n]\n")
    if getattr(args, "sent_json", None):
        with open(args.sent_json, "w") as f:
            json.dump(sent_doc, f, indent=1)
            f.write("\n")
    if args.verbose or status:
        kinds = {}
        for e in rec.got:
            kinds[(e["side"], e["name"])] = kinds.get((e["side"], e["name"]), 0) + 1
        for (side, name), n in sorted(kinds.items()):
            print("peers.py: %-6s received %3d x %s" % (side, n, name), file=sys.stderr)


# -- server alone ---------------------------------------------------------------
class Server(Session):
    """`server`: an original-library server alone.  User messages are counted
    (and timed), echoed with --echo, and recorded only for --out-json."""

    def __init__(self, args):
        super().__init__(args)
        self.users = 0
        self.user_bytes = 0
        self.first = self.last = None  # (perf_counter, epoch) of a user message
        self.connected_at = None  # monotonic time of the first NEW_INCOMING_CONNECTION

    def handle(self, side, p):
        data = p.data
        if (self.connected_at is None and data
                and data[0] == MI.ID_NEW_INCOMING_CONNECTION):
            self.connected_at = time.monotonic()
        if data and data[0] >= MI.ID_USER_PACKET_ENUM:
            now = (time.perf_counter(), time.time())
            if self.first is None:
                self.first = now
            self.last = now
            self.users += 1
            self.user_bytes += len(data)
            if self.args.echo:  # the original reliability and channel are unknown
                self.server.send(data, PacketPriority.HIGH_PRIORITY,
                                 PacketReliability.RELIABLE_ORDERED, 0, p.system_address)
            if not self.args.out_json:
                return None
        return super().handle(side, p)

    def report(self):
        """The two stderr lines of the module doc (scripts/bench-peer.sh reads them)."""
        secs = self.last[0] - self.first[0] if self.users >= 2 else 0.0
        print("server: %d user messages, %d bytes in %.3f s (%.2f MB/s from first to "
              "last user message)" % (self.users, self.user_bytes, secs,
                                      self.user_bytes / 1e6 / secs if secs > 0 else 0.0),
              file=sys.stderr, flush=True)
        if self.users:
            print("server: first user message at %.6f, last at %.6f (epoch s)" % (
                self.first[1], self.last[1]), file=sys.stderr, flush=True)


def run_server(args):
    s = Server(args)
    status = 0
    try:
        try:
            s._start_server(args.max_incoming, host=args.host)
        except StartupError as e:
            print("peers.py: server: cannot start on %s:%d: %s" % (args.host, args.port, e),
                  file=sys.stderr)
            status = 1
        else:
            if args.rcvbuf:
                log(args, "server SO_RCVBUF", grow_rcvbuf(s.server, args.rcvbuf))
            print("listening %s:%d" % (args.host, s.server.get_bound_address(0).port),
                  flush=True)

            def expected():
                return args.expect is not None and s.users >= args.expect

            def shutdown_due():
                return (args.shutdown_after is not None and s.connected_at is not None
                        and time.monotonic() >= s.connected_at + args.shutdown_after)

            s.wait_for(lambda: expected() or (args.once and "server" in s.closed)
                       or shutdown_due(), float("inf"), "clients", step=0.0005)
            if shutdown_due():
                # With a block duration, Shutdown notifies every connection
                # (ID_DISCONNECTION_NOTIFICATION) and waits for the ACKs.
                s.server.shutdown(1.0)
                s.server = None
                print("server: shut down after %.3f s" % (
                    time.monotonic() - s.connected_at), file=sys.stderr, flush=True)
            elif expected():
                s.wait_for(lambda: "server" in s.closed, 1.0, "the client's disconnection",
                           step=0.001)
            elif args.expect is not None:  # --once, and the client left early
                print("peers.py: server: the client left (%s) after %d of %d user messages"
                      % (s.closed["server"], s.users, args.expect), file=sys.stderr)
                status = 1
    except Timeout:
        print("peers.py: overall timeout of %ss reached" % args.timeout, file=sys.stderr)
        status = 3
    except Stopped:
        status = 143
    except KeyboardInterrupt:
        status = 130
    finally:  # also on an unexpected exception
        signal.setitimer(signal.ITIMER_REAL, 0)
        s.stop()
        s.report()
        write_outputs(args, s.rec, None, status)
    return status


# -- client alone ---------------------------------------------------------------
def client_scenario(s, args):
    """Send the client's half of --scenario, wait for its receipts (or --wait s);
    return the exit status."""
    sc = args.scenario
    if sc == "mirror":
        plan = plan_mirror(args.seed, args.messages or 320)
    elif sc == "peer":
        plan = plan_peer(args.seed, args.messages or PEER_MESSAGES)
    else:
        plan = plan_messages(sc, args.seed)
    plan = [m for m in plan if m[0] == "client"]
    s.wait_for(lambda: False, 0.2, "(settle)")
    s.send_plan(plan, 8, 0.02)
    log(args, "client: %d messages sent" % len(plan))
    want = [m for m in s.rec.sent if m["receipt"] is not None]

    def receipts_done():
        return all(("client", m["receipt"]) in s.receipts for m in want)

    def closed():
        return "client" in s.closed
    if want:
        s.wait_for(lambda: receipts_done() or closed(), args.wait, "receipts")
        s.wait_for(closed, 0.3, "(incoming)")
    else:
        s.wait_for(closed, args.wait, "(incoming)")
    status = 0
    for m in s.rec.sent:
        m["receipt_status"] = s.receipts.get(("client", m["receipt"]))
    bad = [m for m in want
           if m["reliability_value"] in RELIABLE_VALUES and m["receipt_status"] != "acked"]
    if bad:
        print("peers.py: client: %d of %d reliable messages with a receipt not "
              "acknowledged (%d losses, %d missing)" % (
                  len(bad), sum(1 for m in want if m["reliability_value"] in RELIABLE_VALUES),
                  sum(1 for m in bad if m["receipt_status"] == "loss"),
                  sum(1 for m in bad if m["receipt_status"] is None)), file=sys.stderr)
        status = 1
    lost = sum(1 for m in want if m["reliability_value"] not in RELIABLE_VALUES
               and m["receipt_status"] == "loss")
    if lost:
        print("peers.py: client: %d UNRELIABLE_WITH_ACK_RECEIPT messages reported lost"
              % lost, file=sys.stderr)
    return status


def client_bulk(s, args):
    """--bulk-bytes B --bulk-size N (module doc); return (status, bulk dict)."""
    total, size = args.bulk_bytes, args.bulk_size
    count = -(-total // size)
    every = max(1, -(-BULK_RECEIPT_BYTES // size))
    filler = (MIRROR_FILL * (size // len(MIRROR_FILL) + 1))[:max(0, size - 5)]
    pri = PacketPriority.HIGH_PRIORITY
    ordered = PacketReliability.RELIABLE_ORDERED
    with_receipt = PacketReliability.RELIABLE_ORDERED_WITH_ACK_RECEIPT
    send, addr = s.client.send, s.server_addr
    outstanding = collections.deque()  # receipt numbers, in send order

    def settled():  # drop the acknowledged (or lost) ones at the front
        while outstanding and ("client", outstanding[0]) in s.receipts:
            outstanding.popleft()
        return "client" in s.closed

    t0 = time.perf_counter()
    for k in range(count):
        payload = b"\x86" + struct.pack(">I", k & 0xFFFFFFFF) + filler
        if len(payload) > min(size, total - k * size):  # the last one, or size < 5
            payload = payload[:min(size, total - k * size)]
        if k % every == every - 1 or k == count - 1:
            outstanding.append(send(payload, pri, with_receipt, 0, addr))
            while len(outstanding) > BULK_WINDOW and not settled():
                if not s.poll():
                    time.sleep(0.0002)
        else:
            send(payload, pri, ordered, 0, addr)
            if k % BULK_POLL == BULK_POLL - 1:
                s.poll()
        if "client" in s.closed:
            break
    s.wait_for(lambda: settled() or not outstanding, float("inf"), "receipts",
               step=0.0005)
    secs = time.perf_counter() - t0
    bulk = {"bytes": total, "size": size, "messages": count, "seconds": round(secs, 6)}
    if "client" in s.closed:  # run_client says so
        return 1, bulk
    print("client: sent %d bytes in %.3f s (%.2f MB/s)" % (total, secs, total / 1e6 / secs),
          file=sys.stderr, flush=True)
    losses = sum(1 for (side, _), v in s.receipts.items() if side == "client" and v == "loss")
    if losses:
        print("peers.py: client: %d receipts said loss" % losses, file=sys.stderr)
        return 1, bulk
    return 0, bulk


def run_client(args):
    host = args.connect_host
    loopback = host == "localhost" or host.startswith("127.")
    s = Session(args)
    status = 0
    bulk = None
    client_port = None
    try:
        s.start(with_server=False, client_host=HOST if loopback else None)
        client_port = s.client.get_bound_address(0).port
        if args.rcvbuf:
            log(args, "client SO_RCVBUF", grow_rcvbuf(s.client, args.rcvbuf))
        if not s.connect(host=host):
            f = s.connect_failure()
            print("peers.py: client: connection to %s failed: %s" % (
                args.connect, "%s (0x%02X)" % (f["name"], f["id"]) if f else "no answer"),
                file=sys.stderr)
            status = 1
        else:
            if args.bulk_bytes is not None:
                status, bulk = client_bulk(s, args)
            else:
                status = client_scenario(s, args)
            if "client" in s.closed:
                print("peers.py: client: the connection ended early (%s)"
                      % s.closed["client"], file=sys.stderr)
                status = 1
            s.disconnect(DISCONNECT_FLUSH)
    except (ConnectionAttemptError, StartupError) as e:
        print("peers.py: client: connection to %s failed: %s" % (args.connect, e),
              file=sys.stderr)
        status = 1
    except Timeout:
        print("peers.py: overall timeout of %ss reached" % args.timeout, file=sys.stderr)
        status = 3
    except Stopped:
        status = 143
    except KeyboardInterrupt:
        status = 130
    finally:  # also on an unexpected exception
        signal.setitimer(signal.ITIMER_REAL, 0)
        s.stop()
        for m in s.rec.sent:  # also when the scenario was cut short
            m["delivered"] = m["scrambled"] = None  # only the server can tell
            m.setdefault("receipt_status", s.receipts.get(("client", m["receipt"])))
        doc = {
            "scenario": None if args.bulk_bytes is not None else args.scenario,
            "seed": args.seed,
            "server": "%s:%d" % (host, args.connect_port),
            "client_port": client_port,
            "connect_port": args.connect_port,
            "protocol": args.protocol,
            "client_protocol": args.protocol,
            "internal_ids": args.internal_ids,
            "raknet_python": raknet_version(),
            "sent": s.rec.sent,
        }
        if args.bulk_bytes is not None:
            doc["bulk"] = bulk
        write_outputs(args, s.rec, doc, status)
    return status


SCENARIOS = ["ping", "basic", "all-reliabilities", "reconnect", "mismatch", "full", "no-server",
             "bulk", "mirror"]
CLIENT_SCENARIOS = ["basic", "all-reliabilities", "mirror", "peer"]


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

    v = sub.add_parser("server", help="run an original-library server alone")
    v.add_argument("--port", type=int, required=True, help="UDP port (0: any)")
    v.add_argument("--host", default=HOST, help="address to bind (default: %(default)s)")
    v.add_argument("--protocol", type=int, default=6, help="RakNet protocol version")
    v.add_argument("--internal-ids", type=int, default=10,
                   help="MAXIMUM_NUMBER_OF_INTERNAL_IDS (10 original, 20 Bedrock)")
    v.add_argument("--max-incoming", type=int, default=4,
                   help="SetMaximumIncomingConnections (0: refuse with 0x14)")
    v.add_argument("--pong", default="raknet-dissect sample server",
                   help="raw offline ping response (default: %(default)s)")
    v.add_argument("--echo", action="store_true",
                   help="send every user message back, RELIABLE_ORDERED on channel 0")
    v.add_argument("--out-json", help="write what the application received")
    v.add_argument("--once", action="store_true",
                   help="exit 0 after the first client disconnects")
    v.add_argument("--expect", type=int, default=None, metavar="N",
                   help="exit 0 once N user messages were received")
    v.add_argument("--shutdown-after", type=float, default=None, metavar="S",
                   help="shut down (notifying the clients) S seconds after the "
                        "first client connected, then exit 0")
    v.add_argument("--timeout", type=float, default=30, help="overall limit, seconds")
    v.add_argument("--rcvbuf", type=int, default=0, metavar="BYTES",
                   help="raise the socket's SO_RCVBUF to BYTES (module doc)")
    v.add_argument("-v", "--verbose", action="store_true")
    v.set_defaults(pong_motd=None)

    c = sub.add_parser("client", help="run an original-library client alone")
    c.add_argument("--connect", required=True, metavar="HOST:PORT")
    c.add_argument("--protocol", type=int, default=6, help="RakNet protocol version")
    c.add_argument("--internal-ids", type=int, default=10,
                   help="MAXIMUM_NUMBER_OF_INTERNAL_IDS (10 original, 20 Bedrock)")
    c.add_argument("--scenario", choices=CLIENT_SCENARIOS, default=None,
                   help="the client's half of a session scenario (default "
                        "all-reliabilities), or peer")
    c.add_argument("--messages", type=int, default=None,
                   help="mirror: messages sent (default 320); peer: (default %d)"
                        % PEER_MESSAGES)
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--out-json", help="write what the application received")
    c.add_argument("--sent-json", help="write what the application sent")
    c.add_argument("--wait", type=float, default=2.0,
                   help="after sending: at most this long for the receipts, or this "
                        "long for incoming messages (default %(default)s s)")
    c.add_argument("--bulk-bytes", type=int, default=None, metavar="B",
                   help="instead of a scenario, send B bytes of RELIABLE_ORDERED "
                        "messages on channel 0 (with --bulk-size)")
    c.add_argument("--bulk-size", type=int, default=None, metavar="N",
                   help="size of each --bulk-bytes message")
    c.add_argument("--timeout", type=float, default=30, help="overall limit, seconds")
    c.add_argument("--rcvbuf", type=int, default=0, metavar="BYTES",
                   help="raise the socket's SO_RCVBUF to BYTES (module doc)")
    c.add_argument("-v", "--verbose", action="store_true")
    c.set_defaults(client_port=0, client_protocol=None)

    args = ap.parse_args(argv)
    if args.cmd == "scenarios":
        print("\n".join(SCENARIOS))
        return 0
    if args.cmd == "server" and args.shutdown_after is not None and args.shutdown_after < 0:
        ap.error("--shutdown-after must be >= 0")
    if args.cmd == "client":
        host, _, port = args.connect.rpartition(":")
        if not host.strip("[]") or not port.isdigit() or not 0 < int(port) < 65536:
            ap.error("--connect wants HOST:PORT, not %r" % args.connect)
        args.connect_host, args.connect_port = host.strip("[]"), int(port)
        if (args.bulk_bytes is None) != (args.bulk_size is None):
            ap.error("--bulk-bytes and --bulk-size go together")
        if args.bulk_bytes is not None:
            if args.scenario is not None:
                ap.error("--scenario and --bulk-bytes exclude each other")
            if args.bulk_bytes < 1 or args.bulk_size < 1:
                ap.error("--bulk-bytes and --bulk-size must be positive")
        elif args.scenario is None:
            args.scenario = "all-reliabilities"

    def on_alarm(*_):
        raise Timeout()
    signal.signal(signal.SIGALRM, on_alarm)
    if args.cmd in ("server", "client"):
        def on_term(*_):
            raise Stopped()
        signal.signal(signal.SIGTERM, on_term)
    signal.setitimer(signal.ITIMER_REAL, args.timeout)
    if args.cmd == "server":
        return run_server(args)
    if args.cmd == "client":
        return run_client(args)
    return run_session(args)


if __name__ == "__main__":
    sys.exit(main())
