#!/usr/bin/env python3
"""NetherNet peers: a Minecraft Bedrock NetherNet server and client on aiortc.

Built to Mojang's "NetherNet HTTP Signaling - Partner Onboarding Guide"
(github Mojang/bedrock-protocol-docs, additional_docs/NetherNetOnboardingGuide.md;
docs/nethernet.md sums it up), on aiortc (PyPI: ICE through aioice, DTLS 1.2
through pyOpenSSL, SCTP and DCEP in Python), over 127.0.0.1 only:

  signaling  HTTP/1.1 on TCP 127.0.0.1:PORT, plain HTTP as on BDS:
             GET /v1/join            -> 200 application/json {name, protocol, version,
                                        level, players, maxPlayers, gameType}
             POST /v1/join/{networkId} (application/sdp, the offer, full ICE)
                                     -> 200 application/sdp, the answer (full ICE)
             Both SDPs carry a session-level a=identity (guide section 5): base64 of
             {"idp":{"domain":..,"protocol":"default"},"assertion":"{\"token\":JWT,
             \"fingerprints\":detached JWS}"}; the JWT self-signed ES384 with its cpk
             (a JWK) as a claim, the JWS over the canonical JSON of the SDP's
             a=fingerprint lines, signed with the cpk key. The client's token is an
             OFFLINE stand-in for the GameServerToken of Minecraft's auth service
             (same kind of claims, marked offline, self-signed). Each side checks the
             other's assertion and strips a=identity before handing the SDP to aiortc.
  ICE        host candidates on 127.0.0.1 only (aioice.ice.get_host_addresses is
             replaced), no STUN/TURN server.
  channels   the client opens ReliableDataChannel (ordered, reliable) and
             UnreliableDataChannel (ordered=False, maxRetransmits=0).
  game       the game packets of a real bedrock-protocol session (a samples/*.packets.jsonl
             file: side, dir, batch, name, id, hex), re-batched as NetherNet does
             (guide section 6.1; docs/nethernet.md): a batch = [compression byte,
             from the batch after network_settings on] + varuint32(len) + packet, ...;
             compressed (0x00, raw DEFLATE) when longer than network_settings'
             threshold, else 0xff + the packets (bedrock-protocol's rule); no 0xFE, no
             Bedrock encryption: the handshake packets (server_to_client_handshake,
             client_to_server_handshake) are left out, the server goes on after Login.
             A batch is cut into segments of at most --segment-size bytes, each sent
             as one message [N = segments still to come][bytes] on the reliable
             channel. The session's order is kept: a side sends its next batch once
             it has received every batch that precedes it in the jsonl.
             Before the client's disconnect (or at the end), the server sends
             --pings network_stack_latency packets (needs_response=1) on the
             unreliable channel, one batch each, framing byte 0; the client answers
             each on the unreliable channel (needs_response=0).
  close      the client closes both channels (SCTP stream reset) once its last
             message is out; each side then closes its peer connection.

Outputs, both sides appending to the same files (one write per line):
  --keylog FILE  the DTLS key log, NSS format (CLIENT_RANDOM <client random> <master
                 secret>), from pyOpenSSL's Context.set_keylog_callback hooked into
                 aiortc's RTCCertificate._create_ssl_context: both ends write the
                 association's line, so it appears twice.
  --truth FILE   JSONL, one object per line, each with "type", "side" (the writer),
                 "seq" (per writer) and "t" (unix time):
    meta      versions, port, network id, segment size, packets file
    http      method, path, status, content_type, body: each request and response,
              recorded by the side that sent or received it ("event")
    sdp       kind offer|answer, sdp (as sent, a=identity included), identity (the
              decoded envelope: idp, token header and claims, fingerprints JWS,
              canonical fingerprint JSON), verified (the receiver's check)
    dtls      role (client = sent the ClientHello), version, cipher, local and remote
              fingerprints, the ICE pair (local/remote address)
    channel   label, stream_id, ordered, max_retransmits, event open|close
    message   event sent|received, label, stream_id, ordered, index (per side,
              label and event), hex (the whole data channel message, framing byte
              included)
    batch     event sent|received, dir, label, index (the batch's index in its direction
              on its channel, 0-based), source_batch (the jsonl's batch), segments,
              compression (null: no compression byte; "none": 0xff; "deflate": 0x00),
              hex (the reassembled batch, compression byte included; the packet
              records that follow are its packets, decompressed)
    packet    event sent|received, dir, label, batch, index (in the batch), name, id, hex
    result    ok, error
Exit status 0 only when everything expected was sent and received intact.

Through a lossy path (scripts/nethernet-capture.sh RELAY=SEED): the client runs
--relay LISTEN:UPSTREAM: before applying the answer, it starts scripts/relay.py --listen
127.0.0.1:LISTEN --upstream 127.0.0.1:UPSTREAM --target <the server's candidate> (plus
--relay-args: seed, rates, output files) and rewrites the address and port of every
a=candidate line of the answer to 127.0.0.1:LISTEN; the server runs --relay-candidate
UPSTREAM: it rewrites the offer's candidates to 127.0.0.1:UPSTREAM. So each side's only
remote candidate is a socket of the one relay, and every UDP datagram goes
client <-> LISTEN (relay) UPSTREAM <-> server (relay.py's "c2s" is client to server).
The SDPs recorded (sdp, http) stay the ones sent on the wire; a "relay" record gives the
rewritten SDP each side applied and the relay's arguments. --lossy makes the unreliable
pings best effort: the server sends them all, the client answers each one it receives
within --ping-wait seconds, the server collects the answers for as long; a "pings"
record says which arrived (the reliable channel must still be intact).

Failures on purpose (--fault, for `handshake`'s diagnoses; the side given it acts):
  unreachable  server: every a=candidate of its answer names 127.0.0.1:PORT+9, and it
               applies the offer with its candidates moved to 127.0.0.1:PORT+8; nothing
               listens on either: each side's STUN checks go unanswered (ICMP port
               unreachable, which the capture leaves out), ICE fails.
  fingerprint  server: the answer's a=fingerprint is not its certificate's (the last
               byte changed, before a=identity signs the fingerprints, so the identity
               still verifies): ICE and the DTLS handshake complete, then the client's
               aiortc finds the mismatch and never starts SCTP.
  ciphers      this side's DTLS offers or accepts only ECDHE-RSA-AES128-GCM-SHA256;
               with aiortc's ECDSA certificates on the client (the DTLS server: the
               answer is a=setup:active), the handshake fails: no shared cipher, a fatal
               handshake_failure alert in the clear.
  ice-pwd      server: the answer's a=ice-pwd is not the one its ICE agent checks with
               (its first character changed, before a=identity): the client keys its
               checks' MESSAGE-INTEGRITY with it, the server answers them 401.
  identity     server: the answer's a=fingerprint changed after a=identity signed it: the
               client's check of the fingerprints JWS fails, it gives up before ICE.
A "fault" record names it; both sides then fail (exit 1) and record why.

A client that is not the recorded one (our `connect --bedrock --nethernet`): server --game answers
by what the client sends, not in lockstep: each client batch is matched by its first packet's name
(and its count so far) to the recording's client batch of that name, and the recording's server
batches after that one are sent; others are recorded ("game" records) and ignored. Client batches
of notices only (client_cache_status, which no server answers) match nothing, in the recording too. It ends when
the client closes its channels, and succeeds when the recording's spawn (play_status
player_spawn) went out and the client then sent set_local_player_as_initialized.

A browser as the client (scripts/chromium-capture.sh): server --chromium-page PAGEPORT also
serves scripts/chromium_page.html (GET /chromium.html), the client's side of the session as
client_main would play it (GET /chromium/session.json: batches, segments, pings, network id)
and takes the page's own records (POST /chromium/truth: JSON lines in the --truth format,
appended with "side":"client"); requests there are "page" records, not "http". It succeeds
when its session and the page's "result" both do. --allow-no-identity takes an offer without
a=identity (sdp record: identity null, verified false, identity_absent true);
--chromium-no-identity makes the page send none. page --chromium-page PAGEPORT (with --game)
serves the page alone, for a server that is not this one on --port (our `serve --bedrock
--nethernet`): the page then plays the recorded client by what that server sends
(run_game_client's rule, in the page), and the run ends with the page's result.

  python3 scripts/nethernet_peers.py server --port 19760 --truth T.jsonl --keylog K.keylog
  python3 scripts/nethernet_peers.py client --port 19760 --truth T.jsonl --keylog K.keylog
  (scripts/nethernet-capture.sh runs both under tcpdump.)
"""

import argparse
import asyncio
import base64
import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import zlib

import aioice.ice
import aiortc
import OpenSSL
from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
from aiortc.rtcdtlstransport import RTCCertificate
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

# --- loopback only -------------------------------------------------------------------
aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"]

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PACKETS = os.path.join(HERE, "..", "samples", "bedrock-login.packets.jsonl")
RELIABLE = "ReliableDataChannel"
UNRELIABLE = "UnreliableDataChannel"
MAX_MESSAGE_SIZE = 262144  # aiortc's a=max-message-size, the guide's example too
SKIPPED = {"server_to_client_handshake", "client_to_server_handshake"}
# Client packets a server does not answer (--game matches the client's batches without them).
NOTICES = {"client_cache_status"}
GAME_VERSIONS = {2169: "1.26.45", 527: "1.19.1"}
NETWORK_STACK_LATENCY = 115


class Failure(Exception):
    pass


# --- output --------------------------------------------------------------------------
class Recorder:
    """Appends JSON lines to the truth file, one os.write per line (O_APPEND), so the
    two processes' lines never mix."""

    def __init__(self, path, side):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.side = side
        self.seq = 0

    def __call__(self, type_, **fields):
        rec = {"type": type_, "side": self.side, "seq": self.seq, "t": round(time.time(), 6)}
        rec.update(fields)
        self.seq += 1
        os.write(self.fd, (json.dumps(rec, separators=(",", ":")) + "\n").encode())


def hook_keylog(path, ciphers=None):
    """Every DTLS context aiortc makes writes its NSS key-log lines to `path` (and
    takes only `ciphers`, an OpenSSL cipher list, when given: --fault ciphers)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    original = RTCCertificate._create_ssl_context

    def create(self, srtp_profiles):
        ctx = original(self, srtp_profiles)
        ctx.set_keylog_callback(lambda conn, line: os.write(fd, bytes(line) + b"\n"))
        if ciphers:
            ctx.set_cipher_list(ciphers)
        return ctx

    RTCCertificate._create_ssl_context = create


# --- identity (guide section 5) ------------------------------------------------------
def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def jwk(public_key):
    nums = public_key.public_numbers()
    return {"crv": "P-384", "kty": "EC", "x": b64url(nums.x.to_bytes(48, "big")),
            "y": b64url(nums.y.to_bytes(48, "big"))}


def jwk_public_key(key):
    if key.get("kty") != "EC" or key.get("crv") != "P-384":
        raise Failure(f"cpk is not a P-384 JWK: {key}")
    x = int.from_bytes(b64url_decode(key["x"]), "big")
    y = int.from_bytes(b64url_decode(key["y"]), "big")
    return ec.EllipticCurvePublicNumbers(x, y, ec.SECP384R1()).public_key()


def es384_sign(private_key, signing_input):
    r, s = decode_dss_signature(private_key.sign(signing_input, ec.ECDSA(hashes.SHA384())))
    return r.to_bytes(48, "big") + s.to_bytes(48, "big")


def es384_verify(public_key, signing_input, signature):
    if len(signature) != 96:
        raise Failure("ES384 signature is not 96 bytes")
    der = encode_dss_signature(int.from_bytes(signature[:48], "big"), int.from_bytes(signature[48:], "big"))
    public_key.verify(der, signing_input, ec.ECDSA(hashes.SHA384()))


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def make_token(private_key, header_extra, claims):
    header = {"alg": "ES384"}
    header.update(header_extra)
    claims = dict(claims, cpk=jwk(private_key.public_key()))
    signing_input = (b64url(canonical(header)) + "." + b64url(canonical(claims))).encode()
    return signing_input.decode() + "." + b64url(es384_sign(private_key, signing_input))


def sdp_fingerprints(sdp):
    """The a=fingerprint lines of an SDP, in order, as the guide's canonical JSON."""
    fps = []
    for line in sdp.splitlines():
        m = re.match(r"a=fingerprint:(\S+) (\S+)$", line.strip())
        if m:
            fps.append({"algorithm": m.group(1), "digest": m.group(2)})
    if not fps:
        raise Failure("SDP without a=fingerprint")
    return canonical({"fingerprint": fps})


def add_identity(sdp, private_key, token, domain):
    payload = sdp_fingerprints(sdp)
    header = b64url(canonical({"alg": "ES384"}))
    signature = es384_sign(private_key, (header + "." + b64url(payload)).encode())
    assertion = json.dumps({"fingerprints": header + ".." + b64url(signature), "token": token},
                           separators=(",", ":"))
    envelope = json.dumps({"assertion": assertion, "idp": {"domain": domain, "protocol": "default"}},
                          separators=(",", ":"))
    line = "a=identity:" + base64.b64encode(envelope.encode()).decode()
    lines = sdp.split("\r\n")
    first_m = next(i for i, l in enumerate(lines) if l.startswith("m="))
    lines.insert(first_m, line)
    return "\r\n".join(lines)


def check_identity(sdp):
    """Decode and verify an SDP's a=identity: the JWT's self-signature with its cpk and the
    detached JWS over the fingerprints. Returns (sdp without a=identity, decoded record)."""
    lines = sdp.split("\r\n")
    found = [l for l in lines if l.startswith("a=identity:")]
    if len(found) != 1:
        raise Failure(f"{len(found)} a=identity lines in the SDP")
    envelope = json.loads(base64.b64decode(found[0][len("a=identity:"):]))
    assertion = json.loads(envelope["assertion"])
    token = assertion["token"]
    h64, c64, s64 = token.split(".")
    header = json.loads(b64url_decode(h64))
    claims = json.loads(b64url_decode(c64))
    if header.get("alg") != "ES384":
        raise Failure(f"token alg {header.get('alg')}")
    key = jwk_public_key(claims["cpk"])
    es384_verify(key, (h64 + "." + c64).encode(), b64url_decode(s64))
    fh64, empty, fs64 = assertion["fingerprints"].split(".")
    if empty:
        raise Failure("fingerprints JWS is not detached")
    if json.loads(b64url_decode(fh64)).get("alg") != "ES384":
        raise Failure("fingerprints JWS alg")
    payload = sdp_fingerprints(sdp)
    es384_verify(key, (fh64 + "." + b64url(payload)).encode(), b64url_decode(fs64))
    if "exp" in claims and claims["exp"] < time.time():
        raise Failure("token expired")
    stripped = "\r\n".join(l for l in lines if not l.startswith("a=identity:"))
    decoded = {"idp": envelope["idp"], "token_header": header, "token_claims": claims,
               "fingerprints": assertion["fingerprints"], "fingerprints_payload": payload.decode(),
               "cpk_sha256": hashlib.sha256(canonical(claims["cpk"])).hexdigest()}
    return stripped, decoded


def decode_identity(sdp):
    """The decoded a=identity of our own SDP (for the record)."""
    _, decoded = check_identity(sdp)
    return decoded


# --- the Bedrock side: batches -------------------------------------------------------
def varuint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_varuint(data, pos):
    n = shift = 0
    while True:
        if pos >= len(data) or shift > 28:
            raise Failure("bad varuint32")
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, pos
        shift += 7


def split_packets(data):
    packets, pos = [], 0
    while pos < len(data):
        n, pos = read_varuint(data, pos)
        if pos + n > len(data):
            raise Failure("packet runs past the batch")
        packets.append(data[pos:pos + n])
        pos += n
    return packets


def network_settings_params(packet):
    """(threshold, algorithm) of a network_settings packet: u16 LE threshold, then (1.19.30+)
    u16 LE algorithm 0 = deflate, 1 = snappy, 0xffff = none; before, deflate alone."""
    _, pos = read_varuint(packet, 0)
    threshold = int.from_bytes(packet[pos:pos + 2], "little")
    if len(packet) >= pos + 4:
        algorithm = {0: "deflate", 1: "snappy", 0xFFFF: "none"}.get(int.from_bytes(packet[pos + 2:pos + 4], "little"))
    else:
        algorithm = "deflate"
    if algorithm not in ("deflate", "none"):
        raise Failure(f"network_settings algorithm {algorithm}: not supported here")
    return threshold, algorithm


def load_session(path, max_packets):
    """The session's steps, in order: batches {dir, index, source_batch, packets, compression}
    and one {"dir": "unreliable"} step for the pings."""
    packets = []
    for line in open(path):
        o = json.loads(line)
        if o["name"] in SKIPPED:
            continue
        packets.append(o)
    if max_packets:
        packets = packets[:max_packets]
    steps = []
    for o in packets:
        last = steps[-1] if steps else None
        if last and last["dir"] == o["dir"] and last["source_batch"] == o["batch"]:
            last["packets"].append(o)
        else:
            steps.append({"dir": o["dir"], "source_batch": o["batch"], "packets": [o]})
    # Compression: from the batch after network_settings on, each way (gophertunnel turns it
    # on when it sends / handles network_settings); the parameters are network_settings'.
    settings, counts = None, {"c2s": 0, "s2c": 0}
    for step in steps:
        step["index"] = counts[step["dir"]]
        counts[step["dir"]] += 1
        step["compression"] = settings
        for p in step["packets"]:
            if p["name"] == "network_settings":
                settings = network_settings_params(bytes.fromhex(p["hex"]))
    # The unreliable pings: before the client's disconnect, else at the end.
    at = next((i for i, s in enumerate(steps) if s["dir"] == "c2s" and
               any(p["name"] == "disconnect" for p in s["packets"])), len(steps))
    settings = None
    for step in steps[:at]:
        for p in step["packets"]:
            if p["name"] == "network_settings":
                settings = network_settings_params(bytes.fromhex(p["hex"]))
    steps.insert(at, {"dir": "unreliable", "compression": settings})
    protocol = None
    for o in packets:
        pkt = bytes.fromhex(o["hex"])
        if o["name"] in ("request_network_settings", "login"):
            _, pos = read_varuint(pkt, 0)
            protocol = int.from_bytes(pkt[pos:pos + 4], "big")
            break
    return steps, protocol


def encode_batch(packets, compression):
    """NetherNet batch bytes: no 0xFE; compression byte only once compression is on."""
    payload = b"".join(varuint(len(p)) + p for p in packets)
    if compression is None:
        return payload, None
    threshold, algorithm = compression
    if algorithm == "deflate" and len(payload) > threshold:
        c = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
        return b"\x00" + c.compress(payload) + c.flush(), "deflate"
    return b"\xff" + payload, "none"


def decode_batch(data, compression):
    if compression is None:
        return data, None
    if not data:
        raise Failure("empty batch")
    if data[0] == 0x00:
        return zlib.decompress(data[1:], -15), "deflate"
    if data[0] == 0xFF:
        return data[1:], "none"
    raise Failure(f"compression byte {data[0]:#x}")


def segments(batch, size):
    parts = [batch[i:i + size] for i in range(0, len(batch), size)] or [b""]
    if len(parts) > 256:
        raise Failure(f"a batch of {len(batch)} bytes needs {len(parts)} segments (at most 256)")
    return [bytes([len(parts) - 1 - i]) + part for i, part in enumerate(parts)]


def latency_packet(timestamp, needs_response):
    return varuint(NETWORK_STACK_LATENCY) + timestamp.to_bytes(8, "little") + bytes([needs_response])


# --- one side's session over its two channels ----------------------------------------
class Peer:
    def __init__(self, side, args, record):
        self.side = side
        self.args = args
        self.record = record
        self.channels = {}
        self.inbox = {RELIABLE: asyncio.Queue(), UNRELIABLE: asyncio.Queue()}
        self.counts = {}
        self.partial = {RELIABLE: [], UNRELIABLE: []}
        self.closed = {RELIABLE: asyncio.Event(), UNRELIABLE: asyncio.Event()}
        self.both_open = asyncio.Event()

    def chan_info(self, ch):
        return {"label": ch.label, "stream_id": ch.id, "ordered": ch.ordered}

    def add_channel(self, ch):
        if ch.label not in (RELIABLE, UNRELIABLE):
            raise Failure(f"unexpected data channel {ch.label!r}")
        self.channels[ch.label] = ch

        def opened():
            self.record("channel", event="open", max_retransmits=ch.maxRetransmits,
                        max_packet_life_time=ch.maxPacketLifeTime, protocol=ch.protocol,
                        negotiated=ch.negotiated, **self.chan_info(ch))
            if len(self.channels) == 2 and all(c.readyState == "open" for c in self.channels.values()):
                self.both_open.set()

        @ch.on("message")
        def on_message(msg):
            if isinstance(msg, str):
                msg = msg.encode()
            self.note_message("received", ch, msg)
            self.inbox[ch.label].put_nowait(msg)

        @ch.on("close")
        def on_close():
            self.record("channel", event="close", **self.chan_info(ch))
            self.closed[ch.label].set()

        if ch.readyState == "open":
            opened()
        else:
            ch.on("open", opened)

    def note_message(self, event, ch, msg):
        key = (ch.label, event)
        index = self.counts.get(key, 0)
        self.counts[key] = index + 1
        self.record("message", event=event, index=index, hex=msg.hex(), **self.chan_info(ch))

    def send(self, label, msg):
        ch = self.channels[label]
        self.note_message("sent", ch, msg)
        ch.send(msg)

    async def send_batch(self, label, step, packets):
        batch, comp = encode_batch(packets, step["compression"])
        size = self.args.segment_size if label == RELIABLE else MAX_MESSAGE_SIZE - 1
        segs = segments(batch, size)
        if label == UNRELIABLE and len(segs) != 1:
            raise Failure("the unreliable channel does not fragment")
        for seg in segs:
            self.send(label, seg)
        self.note_batch("sent", label, step, batch, comp, len(segs), packets)

    def note_batch(self, event, label, step, batch, comp, nsegs, packets):
        d = step["dir"]
        self.record("batch", event=event, dir=d, label=label, index=step.get("index"),
                    source_batch=step.get("source_batch"), segments=nsegs, compression=comp,
                    hex=batch.hex())
        for i, p in enumerate(packets):
            pid, _ = read_varuint(p, 0)
            name = None
            if step.get("packets"):
                name = step["packets"][i]["name"]
            elif pid & 0x3FF == NETWORK_STACK_LATENCY:
                name = "network_stack_latency"
            self.record("packet", event=event, dir=d, label=label, batch=step.get("index"), index=i,
                        name=name, id=pid & 0x3FF, hex=p.hex())

    async def recv_batch(self, label, step, timeout):
        """Reassemble one NetherNet message: segments counting down to 0."""
        parts, expect, nsegs = [], None, 0
        while True:
            msg = await asyncio.wait_for(self.inbox[label].get(), timeout)
            if not msg:
                raise Failure(f"empty message on {label}")
            n = msg[0]
            if expect is not None and n != expect:
                raise Failure(f"segment countdown {n}, expected {expect}")
            if label == UNRELIABLE and n != 0:
                raise Failure(f"framing byte {n} on the unreliable channel")
            parts.append(msg[1:])
            nsegs += 1
            if n == 0:
                break
            expect = n - 1
        batch = b"".join(parts)
        payload, comp = decode_batch(batch, step["compression"])
        packets = split_packets(payload)
        self.note_batch("received", label, step, batch, comp, nsegs, packets)
        return packets

    async def run_session(self, steps):
        mine = "c2s" if self.side == "client" else "s2c"
        for step in steps:
            if step["dir"] == "unreliable":
                await self.pings(step)
                continue
            expected = [bytes.fromhex(p["hex"]) for p in step["packets"]]
            if step["dir"] == mine:
                await self.send_batch(RELIABLE, step, expected)
            else:
                got = await self.recv_batch(RELIABLE, step, self.args.step_timeout)
                if got != expected:
                    raise Failure(f"{step['dir']} batch {step['index']}: received packets differ from the jsonl's")

    async def game_batch(self, msg, direction, index, compression, names):
        """--game: the batch whose first segment is `msg`, reassembled, recorded; its packets
        and their names."""
        parts = [msg]
        while msg[0] != 0:
            msg = await asyncio.wait_for(self.inbox[RELIABLE].get(), self.args.step_timeout)
            parts.append(msg)
        batch = b"".join(m[1:] for m in parts)
        payload, comp = decode_batch(batch, compression)
        packets = split_packets(payload)
        pnames = [names.get(read_varuint(p, 0)[0] & 0x3FF, "unknown") for p in packets]
        step = {"dir": direction, "index": index, "source_batch": None, "compression": compression}
        self.note_batch("received", RELIABLE, step, batch, comp, len(parts), packets)
        self.record("game", event="received", names=pnames)
        return packets, pnames

    async def run_game(self, steps):
        """--game (server): answer a client that is not the recorded one (ours), by what it
        sends: each batch it sends is matched by its first packet's name (and how many times
        that name came before) to the recording's client batch of that name, and the server
        batches that follow that one in the recording are sent. A batch matching none is
        recorded and ignored. It ends when the client closes its channels; it succeeds when
        the recording's spawn (play_status player_spawn) was sent and the client then sent
        set_local_player_as_initialized."""
        names = {}
        for step in steps:
            for p in step.get("packets", []):
                names[p["id"] & 0x3FF] = p["name"]
        answers, seen, first = {}, {}, []
        trigger = None
        for step in steps:
            # A client batch the server never answers (a notice) triggers nothing: the
            # recording may put the server's answer to the batch before it after it.
            if step["dir"] == "c2s" and all(p["name"] in NOTICES for p in step["packets"]):
                continue
            if step["dir"] == "c2s":
                name = step["packets"][0]["name"]
                k = (name, seen.get(name, 0))
                seen[name] = k[1] + 1
                trigger = k
                answers[trigger] = []
            elif step["dir"] == "s2c":
                (answers[trigger] if trigger else first).append(step)
        got, compression, spawn_sent, initialized = {}, None, False, False
        for step in first:
            await self.send_batch(RELIABLE, step, [bytes.fromhex(p["hex"]) for p in step["packets"]])
        index = 0
        closing = asyncio.ensure_future(self.closed[RELIABLE].wait())
        while True:
            getting = asyncio.ensure_future(self.inbox[RELIABLE].get())
            done, _ = await asyncio.wait({getting, closing}, timeout=self.args.step_timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
            if getting not in done:
                getting.cancel()
                break
            packets, pnames = await self.game_batch(getting.result(), "c2s", index, compression, names)
            index += 1
            if "set_local_player_as_initialized" in pnames and spawn_sent:
                initialized = True
            k = (pnames[0], got.get(pnames[0], 0)) if pnames and not set(pnames) <= NOTICES else None
            if k:
                got[pnames[0]] = k[1] + 1
            for answer in answers.get(k, []):
                packets = [bytes.fromhex(p["hex"]) for p in answer["packets"]]
                await self.send_batch(RELIABLE, answer, packets)
                self.record("game", event="sent", names=[p["name"] for p in answer["packets"]])
                for p in answer["packets"]:
                    if p["name"] == "network_settings":
                        compression = network_settings_params(bytes.fromhex(p["hex"]))
                    if p["name"] == "play_status" and bytes.fromhex(p["hex"])[1:5] == (3).to_bytes(4, "big"):
                        spawn_sent = True
        closing.cancel()
        self.record("game", event="end", spawn_sent=spawn_sent, initialized=initialized)
        if not (spawn_sent and initialized):
            raise Failure(f"the client did not reach the spawn (spawn sent {spawn_sent}, "
                          f"set_local_player_as_initialized {initialized})")

    async def run_game_client(self, steps):
        """--game (client): play the recording's client to a server that is not the recorded
        one (ours), by what it sends: the client batches before the server's first are sent at
        once; each packet of a server batch is matched by its name (and how many times that
        name came before) to the recording's server batch that began with it, and the client
        batches that follow that one in the recording are sent (not its chat or disconnect). It succeeds once the server's spawn
        (play_status player_spawn) came and set_local_player_as_initialized went out; with
        --chat it then sends the recording's chat, waits for a server batch holding a text
        packet (the echo) and sends the recording's disconnect; the client then lingers and
        closes its channels."""
        names = {}
        for step in steps:
            for p in step.get("packets", []):
                names[p["id"] & 0x3FF] = p["name"]
        answers, seen, first, trigger = {}, {}, [], None
        for step in steps:
            if step["dir"] == "s2c":
                name = step["packets"][0]["name"]
                trigger = (name, seen.get(name, 0))
                seen[name] = trigger[1] + 1
                answers[trigger] = []
            elif step["dir"] == "c2s":
                (answers[trigger] if trigger else first).append(step)
        compression, got, index, spawned = None, {}, 0, False

        async def send(step):
            await self.send_batch(RELIABLE, step, [bytes.fromhex(p["hex"]) for p in step["packets"]])
            self.record("game", event="sent", names=[p["name"] for p in step["packets"]])

        for step in first:
            await send(step)
        while not spawned:
            msg = await asyncio.wait_for(self.inbox[RELIABLE].get(), self.args.step_timeout)
            packets, pnames = await self.game_batch(msg, "s2c", index, compression, names)
            index += 1
            for p, n in zip(packets, pnames):
                if n == "network_settings":
                    compression = network_settings_params(p)
                if n == "play_status" and p[1:5] == (3).to_bytes(4, "big"):
                    spawned = True
            # Each packet may be the one a recorded batch began with (a server may batch
            # what the recording's sent apart).
            for n in pnames:
                k = (n, got.get(n, 0))
                got[n] = k[1] + 1
                for answer in answers.get(k, []):
                    if any(p["name"] in ("disconnect", "text") for p in answer["packets"]):
                        continue
                    await send(answer)
        if self.args.chat:
            said = [s for s in steps if s["dir"] == "c2s" and any(p["name"] == "text" for p in s["packets"])]
            bye = [s for s in steps if s["dir"] == "c2s" and any(p["name"] == "disconnect" for p in s["packets"])]
            if not said or not bye:
                raise Failure("--chat: the recording has no chat or no disconnect")
            await send(said[0])
            echoed = False
            while not echoed:
                msg = await asyncio.wait_for(self.inbox[RELIABLE].get(), self.args.step_timeout)
                _, pnames = await self.game_batch(msg, "s2c", index, compression, names)
                index += 1
                echoed = "text" in pnames
            await send(bye[0])
        self.record("game", event="end", spawned=spawned)

    async def pings(self, step):
        n = self.args.pings
        stamps = [1_000_000 * (i + 1) for i in range(n)]
        if self.args.lossy:
            return await self.lossy_pings(step, stamps)
        if self.side == "server":
            for i, ts in enumerate(stamps):
                await self.send_batch(UNRELIABLE, dict(step, dir="s2c", index=i), [latency_packet(ts, 1)])
            for i, ts in enumerate(stamps):
                got = await self.recv_batch(UNRELIABLE, dict(step, dir="c2s", index=i), self.args.step_timeout)
                if got != [latency_packet(ts, 0)]:
                    raise Failure("unexpected ping answer")
        else:
            for i, ts in enumerate(stamps):
                got = await self.recv_batch(UNRELIABLE, dict(step, dir="s2c", index=i), self.args.step_timeout)
                if got != [latency_packet(ts, 1)]:
                    raise Failure("unexpected ping")
                await self.send_batch(UNRELIABLE, dict(step, dir="c2s", index=i), [latency_packet(ts, 0)])

    async def lossy_pings(self, step, stamps):
        """Best-effort pings: any may be lost (maxRetransmits=0) or arrive out of order."""
        mine, theirs, flag_in = ("s2c", "c2s", 0) if self.side == "server" else ("c2s", "s2c", 1)
        if self.side == "server":
            for i, ts in enumerate(stamps):
                await self.send_batch(UNRELIABLE, dict(step, dir=mine, index=i), [latency_packet(ts, 1)])
        got, answered = [], []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.args.ping_wait
        while len(got) < len(stamps):
            left = deadline - loop.time()
            if left <= 0:
                break
            try:
                msg = await asyncio.wait_for(self.inbox[UNRELIABLE].get(), left)
            except asyncio.TimeoutError:
                break
            if not msg or msg[0] != 0:
                raise Failure("bad framing byte on the unreliable channel")
            payload, comp = decode_batch(msg[1:], step["compression"])
            packets = split_packets(payload)
            match = [i for i, ts in enumerate(stamps) if packets == [latency_packet(ts, flag_in)]]
            if not match or match[0] in got:
                raise Failure("unexpected or repeated message on the unreliable channel")
            i = match[0]
            got.append(i)
            self.note_batch("received", UNRELIABLE, dict(step, dir=theirs, index=i), msg[1:], comp, 1, packets)
            if self.side == "client":
                await self.send_batch(UNRELIABLE, dict(step, dir=mine, index=i), [latency_packet(stamps[i], 0)])
                answered.append(i)
        self.record("pings", sent=len(stamps) if self.side == "server" else len(answered),
                    received=got, lost=[i for i in range(len(stamps)) if i not in got])

    def check_drained(self):
        for label, q in self.inbox.items():
            if self.args.lossy and label == UNRELIABLE:
                continue
            if not q.empty():
                raise Failure(f"{q.qsize()} unexpected messages left on {label}")


def record_dtls(record, pc):
    dtls = pc.sctp.transport
    ssl = dtls._ssl
    conn = getattr(dtls.transport.iceGatherer, "_connection", None)
    pair = getattr(conn, "_nominated", {}).get(1)
    record("dtls", role=dtls._role, version=ssl.get_protocol_version_name(), cipher=ssl.get_cipher_name(),
           local_fingerprints=[f.__dict__ for f in dtls.getLocalParameters().fingerprints],
           ice_role=dtls.transport.role,
           local_address=list(pair.local_addr) if pair else None,
           remote_address=list(pair.remote_addr) if pair else None,
           sctp_remote_partial_reliability=pc.sctp._remote_partial_reliability,
           sctp_remote_max_message_size=pc.sctp._remote_max_message_size)


# --- the lossy path --------------------------------------------------------------------
CANDIDATE = re.compile(r"^(a=candidate:\S+ \d+ \S+ \d+ )(\S+) (\d+)( typ .*)$")
FINGERPRINT = re.compile(r"^(a=fingerprint:sha-256 \S+:)([0-9A-Fa-f]{2})$")


def dead_candidates(sdp, port):
    """--fault unreachable: every candidate of `sdp` moved to 127.0.0.1:`port`."""
    lines = sdp.split("\r\n")
    for i, l in enumerate(lines):
        m = CANDIDATE.match(l)
        if m:
            lines[i] = f"{m.group(1)}127.0.0.1 {port}{m.group(4)}"
    return "\r\n".join(lines)


def wrong_fingerprint(sdp):
    """--fault fingerprint: the last byte of every sha-256 a=fingerprint changed."""
    lines = sdp.split("\r\n")
    for i, l in enumerate(lines):
        m = FINGERPRINT.match(l)
        if m:
            lines[i] = f"{m.group(1)}{(int(m.group(2), 16) ^ 0xFF):02X}"
    return "\r\n".join(lines)


class RelayProcess:
    """scripts/relay.py between this side and the other side's candidate (see --relay)."""

    def __init__(self, args, record):
        self.args = args
        self.record = record
        self.proc = None

    async def apply(self, sdp):
        """Start the relay toward the SDP's candidate; the SDP with the relay as candidate."""
        if not (self.args.relay or self.args.relay_candidate):
            return sdp
        if self.args.relay:
            listen, upstream = self.args.relay.split(":")
        else:
            listen, upstream = self.args.relay_candidate, None
        lines = sdp.split("\r\n")
        targets = []
        for i, l in enumerate(lines):
            m = CANDIDATE.match(l)
            if m:
                targets.append(f"{m.group(2)}:{m.group(3)}")
                lines[i] = f"{m.group(1)}127.0.0.1 {listen}{m.group(4)}"
        if len(set(targets)) != 1 or not targets[0].startswith("127.0.0.1:"):
            raise Failure(f"--relay wants one 127.0.0.1 candidate, the SDP has {targets}")
        if upstream is None:  # --relay-candidate: the other side runs the relay
            self.record("relay", candidate=f"127.0.0.1:{listen}", target=targets[0],
                        remote_sdp_applied="\r\n".join(lines))
            return "\r\n".join(lines)
        cmd = [sys.executable, os.path.join(HERE, "relay.py"), "--listen", f"127.0.0.1:{listen}",
               "--upstream", f"127.0.0.1:{upstream}", "--target", targets[0]] + self.args.relay_args.split()
        self.proc = await asyncio.create_subprocess_exec(*cmd, stderr=subprocess.PIPE)
        line = await asyncio.wait_for(self.proc.stderr.readline(), 5)
        if b"listening on" not in line:
            raise Failure(f"relay.py did not start: {line!r}")
        self.record("relay", listen=f"127.0.0.1:{listen}", upstream=f"127.0.0.1:{upstream}", target=targets[0],
                    argv=cmd[1:], remote_sdp_applied="\r\n".join(lines))
        return "\r\n".join(lines)

    async def stop(self):
        if self.proc and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGINT)
            rest = await asyncio.wait_for(self.proc.stderr.read(), 10)
            await self.proc.wait()
            sys.stderr.write(f"nethernet_peers: " + rest.decode(errors="replace"))


# --- HTTP/1.1, the minimum ------------------------------------------------------------
async def read_http(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    first = lines[0]
    headers = {}
    for l in lines[1:]:
        if ":" in l:
            k, v = l.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return first, headers, body


def http_message(first, headers, body):
    out = first + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + f"Content-Length: {len(body)}\r\n\r\n"
    return out.encode() + body


async def http_request(port, method, path, ctype=None, body=b""):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    headers = [("Host", f"127.0.0.1:{port}"), ("User-Agent", "raknet-dissect-nethernet-peers"),
               ("Connection", "close")]
    if ctype:
        headers.append(("Content-Type", ctype))
    writer.write(http_message(f"{method} {path} HTTP/1.1", headers, body))
    await writer.drain()
    first, rheaders, rbody = await read_http(reader)
    writer.close()
    await writer.wait_closed()
    status = int(first.split()[1])
    return status, rheaders, rbody


# --- a browser as the client (--chromium-page) -----------------------------------------
def chromium_session(args, steps, protocol):
    """session.json for scripts/chromium_page.html: the client's side of the session, computed
    here as client_main would (the same batches, segments, pings, network id)."""
    out = []
    for step in steps:
        comp = list(step["compression"]) if step["compression"] else None
        if step["dir"] == "unreliable":
            pings = []
            for i in range(args.pings):
                ts = 1_000_000 * (i + 1)
                answer = latency_packet(ts, 0)
                batch, c = encode_batch([answer], step["compression"])
                pings.append({"stamp": ts, "ping_hex": latency_packet(ts, 1).hex(), "answer_hex": answer.hex(),
                              "answer_batch_hex": batch.hex(), "answer_compression": c,
                              "answer_segments": [x.hex() for x in segments(batch, MAX_MESSAGE_SIZE - 1)]})
            out.append({"dir": "unreliable", "compression": comp, "pings": pings})
            continue
        s = {"dir": step["dir"], "index": step["index"], "source_batch": step["source_batch"], "compression": comp,
             "packets": [{"name": p["name"], "id": p.get("id"), "hex": p["hex"]} for p in step["packets"]]}
        if step["dir"] == "c2s":
            batch, c = encode_batch([bytes.fromhex(p["hex"]) for p in step["packets"]], step["compression"])
            s.update(batch_hex=batch.hex(), batch_compression=c,
                     segments=[x.hex() for x in segments(batch, args.segment_size)])
        out.append(s)
    network_id = str(random.Random(args.seed).getrandbits(63))
    meta = {"port": args.port, "packets": os.path.basename(args.packets), "max_packets": args.max_packets,
            "protocol": protocol, "segment_size": args.segment_size, "pings": args.pings,
            "steps": [{k: v for k, v in s.items() if k != "packets"} | {"names": [p["name"] for p in s.get("packets", [])]}
                      for s in steps]}
    return {"port": args.port, "network_id": network_id, "steps": out, "meta": meta,
            "identity": not args.chromium_no_identity, "get_user_media": True, "game": args.game,
            "timeout": args.timeout, "step_timeout": args.step_timeout, "linger": args.linger}


class ChromiumPage:
    """--chromium-page PORT: the server also serves, on 127.0.0.1:PORT (its own listener, or
    the signaling one when PORT is --port), scripts/chromium_page.html (GET /chromium.html),
    the client's side of the session (GET /chromium/session.json) and takes the page's truth
    (POST /chromium/truth, JSON lines appended to --truth with "side":"client"). Each request
    is recorded as a "page" record (not "http": the signaling's records stay those of the join)."""

    PATHS = ("/chromium.html", "/chromium/session.json", "/chromium/truth", "/favicon.ico")

    def __init__(self, args, record, steps, protocol):
        self.args = args
        self.record = record
        with open(os.path.join(HERE, "chromium_page.html"), "rb") as f:
            self.html = f.read()
        self.session = json.dumps(chromium_session(args, steps, protocol), separators=(",", ":")).encode()
        self.fd = os.open(args.truth, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.done = asyncio.Event()
        self.failed = asyncio.Event()
        self.ok = None
        self.error = None
        self.server = None

    async def start(self):
        if self.args.chromium_page != self.args.port:
            self.server = await asyncio.start_server(self.handle, "127.0.0.1", self.args.chromium_page)
        print(f"nethernet_peers: chromium page on http://127.0.0.1:{self.args.chromium_page}/chromium.html",
              file=sys.stderr, flush=True)

    def stop(self):
        if self.server:
            self.server.close()

    def serves(self, path):
        return path.split("?")[0] in self.PATHS

    async def handle(self, reader, writer):
        try:
            try:
                first, headers, body = await read_http(reader)
            except asyncio.IncompleteReadError as exc:
                if not exc.partial:
                    return
                raise
            method, path = first.split()[:2]
            await self.respond(method, path, body, writer)
        except Exception as exc:  # noqa: BLE001 - the page's failure shows in its truth, or its absence
            print(f"nethernet_peers: chromium page: {exc!r}", file=sys.stderr, flush=True)
        finally:
            writer.close()

    async def respond(self, method, path, body, writer):
        path = path.split("?")[0]
        status, ctype, out, note = 404, "text/plain", b"not found\n", {}
        if method == "GET" and path == "/chromium.html":
            status, ctype, out = 200, "text/html; charset=utf-8", self.html
        elif method == "GET" and path == "/chromium/session.json":
            status, ctype, out = 200, "application/json", self.session
        elif method == "POST" and path == "/chromium/truth":
            note = self.take_truth(body)
            status, ctype, out = 200, "text/plain", b"ok\n"
        writer.write(http_message(f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}",
                                  [("Content-Type", ctype), ("Cache-Control", "no-store"),
                                   ("Connection", "close")], out))
        self.record("page", method=method, path=path, status=status, request_bytes=len(body),
                    response_bytes=len(out), **note)
        await writer.drain()
        if self.done.is_set():
            print(f"nethernet_peers: chromium client: {'ok' if self.ok else 'FAILED: ' + str(self.error)}",
                  file=sys.stderr, flush=True)
            if not self.ok:
                self.failed.set()

    def take_truth(self, body):
        n = 0
        for line in body.decode("utf-8").splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            rec["side"] = "client"
            os.write(self.fd, (json.dumps(rec, separators=(",", ":")) + "\n").encode())
            n += 1
            if rec.get("type") == "result":
                self.ok, self.error = bool(rec.get("ok")), rec.get("error")
                self.done.set()
        return {"records": n}


async def chromium_server_main(args, record, steps, protocol):
    """The server, its client a browser on --chromium-page: ok when the server's session and
    the page's (its "result" record) both are."""
    page = ChromiumPage(args, record, steps, protocol)
    await page.start()
    main_task = asyncio.ensure_future(server_main(args, record, steps, protocol, page=page))
    failed = asyncio.ensure_future(page.failed.wait())
    try:
        await asyncio.wait({main_task, failed}, return_when=asyncio.FIRST_COMPLETED)
        if not main_task.done():
            main_task.cancel()
            await asyncio.gather(main_task, return_exceptions=True)
            raise Failure(f"the Chromium client failed: {page.error}")
        if main_task.exception() is not None:
            # Still take the page's truth, if it comes soon, for the record.
            await asyncio.wait({failed}, timeout=min(5, args.step_timeout))
            main_task.result()
        await asyncio.wait_for(page.done.wait(), args.step_timeout)
        if not page.ok:
            raise Failure(f"the Chromium client failed: {page.error}")
    finally:
        failed.cancel()
        if not main_task.done():
            main_task.cancel()
            await asyncio.gather(main_task, return_exceptions=True)
        page.stop()


async def page_main(args, record, steps, protocol):
    """page: only the page, its session and its truth; the server on --port is another's (our
    `serve --bedrock --nethernet`, with --game). Ok when the page's "result" is."""
    page = ChromiumPage(args, record, steps, protocol)
    await page.start()
    try:
        await page.done.wait()
    finally:
        page.stop()
    if not page.ok:
        raise Failure(f"the Chromium client failed: {page.error}")


# --- the server -----------------------------------------------------------------------
async def server_main(args, record, steps, protocol, page=None):
    key = ec.generate_private_key(ec.SECP384R1())
    der = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    now = int(time.time())
    # As BDS / go-nethernet: x5u (base64 DER of the key) in the header, iat/exp, cpk.
    token = make_token(key, {"x5u": base64.b64encode(der).decode()},
                       {"iat": now, "exp": now + 3600, "iss": "raknet-dissect nethernet_peers.py server"})
    peer = Peer("server", args, record)
    relay = RelayProcess(args, record)
    session = {}
    joined = asyncio.Event()
    info = {"name": "raknet-dissect NetherNet test server", "protocol": protocol or 0,
            "version": args.game_version or GAME_VERSIONS.get(protocol, "unknown"), "level": "Bedrock level",
            "players": 0, "maxPlayers": 10, "gameType": 0}

    async def handle(reader, writer):
        try:
            try:
                first, headers, body = await read_http(reader)
            except asyncio.IncompleteReadError as exc:
                if page is not None and not exc.partial:
                    return  # --chromium-page: a browser's connection that carried no request
                raise
            method, path = first.split()[:2]
            if page is not None and page.serves(path):
                await page.respond(method, path, body, writer)
                return
            record("http", event="received", method=method, path=path,
                   content_type=headers.get("content-type"), body=body.decode("utf-8", "replace"))
            status, ctype, out = 404, "text/plain", b"not found\n"
            if method == "GET" and path == "/v1/join":
                status, ctype, out = 200, "application/json", json.dumps(info, separators=(",", ":")).encode()
            elif method == "POST" and args.refuse_offer:
                # --refuse-offer: a server that turns the offer down.
                status, ctype, out = 403, "text/plain", b"offer refused\n"
                session["refused"] = True
            elif method == "POST" and path.startswith("/v1/join/") and "pc" not in session:
                status, ctype, out = 200, "application/sdp", (await answer(path[len("/v1/join/"):], body)).encode()
            elif method == "POST":
                status, ctype, out = 409, "text/plain", b"one session only\n"
            writer.write(http_message(f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}",
                                      [("Content-Type", ctype), ("Connection", "close")], out))
            record("http", event="sent", status=status, content_type=ctype, body=out.decode("utf-8", "replace"))
            await writer.drain()
            if session.get("refused"):
                joined.set()
        except Exception as exc:  # noqa: BLE001 - recorded, the session fails
            session.setdefault("error", f"HTTP: {exc!r}")
            joined.set()
        finally:
            writer.close()

    async def answer(network_id, body):
        offer = body.decode()
        if args.allow_no_identity and not any(l.startswith("a=identity:") for l in offer.split("\r\n")):
            # --allow-no-identity: an offer without a=identity (a browser's own SDP) is taken.
            stripped = offer
            record("sdp", kind="offer", network_id=network_id, sdp=offer, identity=None, verified=False,
                   identity_absent=True)
        else:
            stripped, ident = check_identity(offer)
            record("sdp", kind="offer", network_id=network_id, sdp=offer, identity=ident, verified=True)
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        session["pc"] = pc
        pc.on("datachannel", peer.add_channel)
        applied = await relay.apply(stripped)
        if args.fault == "unreachable":
            applied = dead_candidates(applied, args.port + 8)
        await pc.setRemoteDescription(RTCSessionDescription(applied, "offer"))
        await pc.setLocalDescription(await pc.createAnswer())  # gathers every candidate
        local = pc.localDescription.sdp
        if args.fault == "unreachable":
            local = dead_candidates(local, args.port + 9)
        elif args.fault == "fingerprint":
            local = wrong_fingerprint(local)
        elif args.fault == "ice-pwd":
            local = re.sub(r"(?m)^a=ice-pwd:(.)", lambda m: "a=ice-pwd:" + ("B" if m.group(1) != "B" else "C"), local)
        sdp = add_identity(local, key, token, "self")
        ident = decode_identity(sdp)
        if args.fault == "identity":
            sdp = wrong_fingerprint(sdp)  # after the JWS signed the right one
        record("sdp", kind="answer", network_id=network_id, sdp=sdp, identity=ident)
        joined.set()
        return sdp

    server = await asyncio.start_server(handle, "127.0.0.1", args.port)
    print(f"nethernet_peers: server listening on 127.0.0.1:{args.port}", file=sys.stderr, flush=True)
    try:
        await asyncio.wait_for(joined.wait(), args.timeout)
        if "error" in session:
            raise Failure(session["error"])
        if session.get("refused"):
            return  # the offer was turned down, as asked
        pc = session["pc"]
        await asyncio.wait_for(peer.both_open.wait(), args.step_timeout)
        record_dtls(record, pc)
        if args.game:
            await peer.run_game(steps)
            await pc.close()
            return
        await peer.run_session(steps)
        # The client closes the channels after its last message.
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in peer.closed.values())), args.step_timeout)
        peer.check_drained()
        await pc.close()
    finally:
        if page is not None and args.chromium_page == args.port:
            page.server = server  # the page's truth still comes on it; ChromiumPage.stop closes it
        else:
            server.close()
        if "pc" in session:
            await session["pc"].close()
        await relay.stop()


# --- the client -----------------------------------------------------------------------
async def client_main(args, record, steps, protocol):
    status, headers, body = await http_request(args.port, "GET", "/v1/join")
    record("http", event="received", method="GET", path="/v1/join", status=status,
           content_type=headers.get("content-type"), body=body.decode("utf-8", "replace"))
    if not 200 <= status < 300:
        raise Failure(f"GET /v1/join: {status}")
    json.loads(body)

    key = ec.generate_private_key(ec.SECP384R1())
    now = int(time.time())
    rnd = random.Random(args.seed)
    network_id = str(rnd.getrandbits(63))
    # OFFLINE stand-in for the GameServerToken (really RS256 from Minecraft's auth service).
    token = make_token(key, {"typ": "JWT"}, {
        "offline": True, "iss": "raknet-dissect OFFLINE (not Minecraft auth)",
        "xid": "0", "xname": "Steve", "pfid": "OFFLINE0000000000",
        "uuid": "00000000-0000-4000-8000-000000000000", "perms": [], "iat": now, "exp": now + 3600})
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    peer = Peer("client", args, record)
    relay = RelayProcess(args, record)
    try:
        peer.add_channel(pc.createDataChannel(RELIABLE))
        peer.add_channel(pc.createDataChannel(UNRELIABLE, ordered=False, maxRetransmits=0))
        await pc.setLocalDescription(await pc.createOffer())  # gathers every candidate
        offer = add_identity(pc.localDescription.sdp, key, token, "offline.raknet-dissect.invalid")
        if args.relay and args.relay_offer:
            # --relay-offer: the server (one that takes no --relay-candidate) knows only the
            # relay's upstream socket (a=identity signs the fingerprints, not the candidates).
            offer = dead_candidates(offer, int(args.relay.split(":")[1]))
        record("sdp", kind="offer", network_id=network_id, sdp=offer, identity=decode_identity(offer))
        path = f"/v1/join/{network_id}"
        record("http", event="sent", method="POST", path=path, content_type="application/sdp", body=offer)
        status, headers, body = await http_request(args.port, "POST", path, "application/sdp", offer.encode())
        record("http", event="received", status=status, content_type=headers.get("content-type"),
               body=body.decode("utf-8", "replace"))
        if not 200 <= status < 300:
            raise Failure(f"POST {path}: {status}")
        answer = body.decode()
        stripped, ident = check_identity(answer)
        record("sdp", kind="answer", network_id=network_id, sdp=answer, identity=ident, verified=True)
        await pc.setRemoteDescription(RTCSessionDescription(await relay.apply(stripped), "answer"))
        await asyncio.wait_for(peer.both_open.wait(), args.step_timeout)
        record_dtls(record, pc)
        if args.sctp_init_flood:
            await sctp_init_flood(pc, record, args.sctp_init_flood, args.seed)
        elif args.game:
            await peer.run_game_client(steps)
        else:
            await peer.run_session(steps)
        # Let every message leave before the stream resets.
        for _ in range(200):
            if all(ch.bufferedAmount == 0 for ch in peer.channels.values()):
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(args.linger)
        for ch in peer.channels.values():
            ch.close()
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in peer.closed.values())), args.step_timeout)
        if not (args.game or args.sctp_init_flood):
            peer.check_drained()
    finally:
        await pc.close()
        await relay.stop()


async def sctp_init_flood(pc, record, seconds, seed):
    """--sctp-init-flood: SCTP INIT packets (random initiate tags and TSNs, verification tag 0,
    ports 5000) inside the DTLS association, as fast as the loop sends them, for `seconds`."""
    from aiortc.rtcsctptransport import InitChunk, serialize_packet
    dtls = pc.sctp.transport
    rnd = random.Random(seed)
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        chunk = InitChunk()
        chunk.initiate_tag = rnd.getrandbits(32) or 1
        chunk.advertised_rwnd = 131072
        chunk.outbound_streams = chunk.inbound_streams = 65535
        chunk.initial_tsn = rnd.getrandbits(32)
        await dtls._send_data(serialize_packet(5000, 5000, 0, chunk))
        n += 1
        if n % 20 == 0:
            await asyncio.sleep(0.001)
    record("flood", kind="sctp_init", packets=n, seconds=seconds)
    print(f"nethernet_peers: sctp init flood: {n} INITs in {seconds} s", file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("role", choices=["server", "client", "page"])
    ap.add_argument("--port", type=int, default=19760, help="the signaling TCP port (default 19760)")
    ap.add_argument("--packets", default=DEFAULT_PACKETS,
                    help="the game packets to replay (default samples/bedrock-login.packets.jsonl, 1.26.45)")
    ap.add_argument("--max-packets", type=int, default=0,
                    help="only the first N packets of --packets (handshake packets not counted; 0 = all)")
    ap.add_argument("--game-version", help="the version string of GET /v1/join (default: from the protocol)")
    ap.add_argument("--segment-size", type=int, default=MAX_MESSAGE_SIZE - 1,
                    help="bytes of a batch per reliable message, the framing byte not counted (default 262143)")
    ap.add_argument("--pings", type=int, default=3, help="network_stack_latency pings on the unreliable channel")
    ap.add_argument("--truth", required=True, help="JSONL of everything sent and received (appended)")
    ap.add_argument("--keylog", required=True, help="the DTLS NSS key log (appended)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the client's network id")
    ap.add_argument("--timeout", type=float, default=30, help="the whole run, seconds")
    ap.add_argument("--step-timeout", type=float, default=10, help="each wait, seconds")
    ap.add_argument("--linger", type=float, default=0.2, help="client: seconds before closing the channels")
    ap.add_argument("--relay", metavar="LISTEN:UPSTREAM",
                    help="reach the other side through scripts/relay.py listening on 127.0.0.1:LISTEN, "
                         "its upstream socket on 127.0.0.1:UPSTREAM (the top of this file says how)")
    ap.add_argument("--relay-offer", action="store_true",
                    help="client, with --relay: the offer's candidates name the relay's upstream socket, "
                         "so that a server that takes no --relay-candidate reaches this side only through "
                         "the relay")
    ap.add_argument("--relay-candidate", metavar="PORT",
                    help="make 127.0.0.1:PORT the other side's only candidate, no relay started "
                         "(the other side's --relay UPSTREAM port: its relay's socket toward this side)")
    ap.add_argument("--relay-args", default="--seed 1",
                    help="more relay.py arguments, one string (default '--seed 1')")
    ap.add_argument("--lossy", action="store_true",
                    help="the path loses datagrams: the unreliable pings are best effort")
    ap.add_argument("--refuse-offer", action="store_true",
                    help="server: answer the offer 403 (a server that refuses the join)")
    ap.add_argument("--fault", choices=["unreachable", "fingerprint", "ciphers", "ice-pwd", "identity"],
                    help="fail on purpose (the top of this file says how each does)")
    ap.add_argument("--ping-wait", type=float, default=3.0,
                    help="--lossy: seconds each side waits for the pings / their answers (default 3)")
    ap.add_argument("--game", action="store_true",
                    help="server: answer a client that is not the recorded one by the names of what it "
                         "sends (run_game says how); ends when it closes its channels. client: play the "
                         "recorded client to a server that is not the recorded one (run_game_client)")
    ap.add_argument("--chat", action="store_true",
                    help="client --game: after the spawn, the recording's chat, the server's echo "
                         "awaited, then the recording's disconnect")
    ap.add_argument("--sctp-init-flood", type=float, metavar="SECONDS",
                    help="client: once both channels are open, send SCTP INITs inside the association "
                         "for SECONDS (no session), then close")
    ap.add_argument("--allow-no-identity", action="store_true",
                    help="server: take an offer without a=identity (recorded identity null, verified false, "
                         "identity_absent true); an offer with one is still checked")
    ap.add_argument("--chromium-page", type=int, metavar="PORT",
                    help="server: the client is a browser (scripts/chromium_page.html, "
                         "scripts/chromium-capture.sh): serve the page, its session and take its truth "
                         "on 127.0.0.1:PORT (may be --port)")
    ap.add_argument("--chromium-no-identity", action="store_true",
                    help="with --chromium-page: the page sends its offer without a=identity "
                         "(needs --allow-no-identity)")
    args = ap.parse_args()
    if not 1 <= args.segment_size <= MAX_MESSAGE_SIZE - 1:
        ap.error("--segment-size must be 1..262143")
    if args.chromium_page is not None and (args.role == "client" or args.relay or args.relay_candidate
                                           or args.lossy or args.fault or args.refuse_offer):
        ap.error("--chromium-page: server or page only, without --relay, --relay-candidate, --lossy, --fault, "
                 "--refuse-offer")
    if args.role == "page" and (args.chromium_page is None or args.chromium_page == args.port):
        ap.error("page: needs --chromium-page PAGEPORT, not --port (the server's)")

    hook_keylog(args.keylog, b"ECDHE-RSA-AES128-GCM-SHA256" if args.fault == "ciphers" else None)
    record = Recorder(args.truth, args.role)
    steps, protocol = load_session(args.packets, args.max_packets)
    record("meta", role=args.role, pid=os.getpid(), aiortc=aiortc.__version__,
           aioice=getattr(aioice, "__version__", None), pyopenssl=OpenSSL.__version__,
           openssl=OpenSSL.SSL.OpenSSL_version(OpenSSL.SSL.OPENSSL_VERSION).decode(),
           python=sys.version.split()[0], port=args.port, packets=os.path.basename(args.packets),
           max_packets=args.max_packets, protocol=protocol, segment_size=args.segment_size, pings=args.pings,
           **({"relay": args.relay, "relay_args": args.relay_args, "relay_candidate": args.relay_candidate,
              "lossy": args.lossy} if args.relay or args.relay_candidate else {}),
           steps=[{k: v for k, v in s.items() if k != "packets"} | {"names": [p["name"] for p in s.get("packets", [])]}
                  for s in steps])
    if args.fault:
        record("fault", fault=args.fault)
    run = server_main if args.role == "server" else client_main
    if args.chromium_page is not None:
        run = chromium_server_main if args.role == "server" else page_main
    error = None
    try:
        asyncio.run(asyncio.wait_for(run(args, record, steps, protocol), args.timeout))
    except (Exception, asyncio.TimeoutError) as exc:  # noqa: BLE001
        error = f"{type(exc).__name__}: {exc}"
    record("result", ok=error is None, error=error)
    if error:
        print(f"nethernet_peers {args.role}: FAILED: {error}", file=sys.stderr)
        sys.exit(1)
    print(f"nethernet_peers {args.role}: ok", file=sys.stderr)


if __name__ == "__main__":
    main()
