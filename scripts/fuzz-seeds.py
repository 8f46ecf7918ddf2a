#!/usr/bin/env python3
"""fuzz-seeds.py: the committed seed corpora of the fuzz targets, cut from
the bundled captures of real peers (samples/), in each target's input
format (fuzz/fuzz_targets/*.rs say it). Rewrites fuzz/seeds/TARGET/.

    scripts/fuzz-seeds.py            # needs target/debug/raknet-dissect (cargo build)

Seeds are small on purpose: a few datagrams of each kind, one handshake,
one Bedrock login with its key; libFuzzer grows the rest. The dictionaries
in fuzz/dict/ are written by hand.
"""

import json
import os
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "samples")
OUT = os.path.join(ROOT, "fuzz", "seeds")
BIN = os.path.join(ROOT, "target", "debug", "raknet-dissect")
# The longest input fuzz-campaign.sh gives server and session.
MAX_LEN = 16384


def udp_payloads(path):
    """(src port, dst port, payload) of each UDP datagram of a classic
    Ethernet pcap (the samples' link type), IPv4 or IPv6."""
    data = open(path, "rb").read()
    magic = struct.unpack("<I", data[:4])[0]
    end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    if struct.unpack(end + "I", data[20:24])[0] != 1:
        return
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack(end + "I", data[off + 8 : off + 12])[0]
        frame = data[off + 16 : off + 16 + incl]
        off += 16 + incl
        etype = struct.unpack(">H", frame[12:14])[0]
        ip = frame[14:]
        if etype == 0x0800 and ip[9] == 17:
            udp = ip[(ip[0] & 15) * 4 :]
        elif etype == 0x86DD and ip[6] == 17:
            udp = ip[40:]
        else:
            continue
        sport, dport, ulen = struct.unpack(">HHH", udp[:6])
        yield sport, dport, udp[8:ulen]


def write(target, name, blob):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(blob)


def chunk(head, body):
    return bytes([head]) + struct.pack("<H", len(body)) + body


def datagrams(sample):
    return list(udp_payloads(os.path.join(SAMPLES, sample)))


def main():
    if not os.path.exists(BIN):
        sys.exit(f"{BIN} missing: run `cargo build` first")
    for t in ("wire", "dissect", "filter", "server", "session", "game", "parsers", "schema"):
        d = os.path.join(OUT, t)
        if os.path.isdir(d):
            for f in os.listdir(d):
                os.remove(os.path.join(d, f))

    # wire, dissect, filter: one datagram of each kind (first byte, and the
    # flags of a data datagram), from both dialects.
    seen = set()
    kinds = []
    for sample in ("handshake.pcap", "minecraft.pcap", "lossy.pcap", "ipv6.pcap", "bedrock-login.pcap"):
        for _, _, p in datagrams(sample):
            if not p or len(p) > 4096:
                continue
            kind = (p[0], len(p) > 100)
            if kind in seen:
                continue
            seen.add(kind)
            kinds.append(p)
    for i, p in enumerate(kinds):
        name = f"{i:02}-{p[0]:02x}"
        write("wire", name, p)
        write("dissect", name, p)
    filters = [
        "frames.id == 0x09",
        "frames.reliability == RELIABLE_ORDERED && frames.channel > 0",
        'kind == "ack" || kind == "nack"',
        "guid == 0x000660d5c342be73",
        "len > 100 and not frames.split",
        'motd.edition == "MCPE" or name contains "PONG"',
    ]
    for i, f in enumerate(filters):
        write("filter", f"{i:02}", f.encode() + b"\0" + kinds[i * 3 % len(kinds)])

    # server: what a real client (the original library's) sent a server,
    # its whole connection from the unconnected ping on; and a Minecraft
    # dialect client's.
    for sample, port in (("handshake.pcap", 19140), ("minecraft.pcap", None)):
        ds = datagrams(sample)
        if port is None:
            port = ds[0][1]
        blob = b"".join(chunk(0, p) for s, d, p in ds if d == port)[:MAX_LEN]
        write("server", sample.split(".")[0], blob)

    # session: the data datagrams (ACKs, NACKs, capsules) a real connection
    # carried after its offline handshake, each to the side it went to.
    for sample, port in (("handshake.pcap", 19140), ("lossy.pcap", None)):
        ds = datagrams(sample)
        if port is None:
            port = ds[0][1]
        blob = b""
        for s, d, p in ds:
            c = chunk(0 if d == port else 1, p)
            if p and p[0] & 0x80 and port in (s, d) and len(blob) + len(c) <= MAX_LEN:
                blob += c
        write("session", sample.split(".")[0], blob)

    # game: a real Bedrock session's 0xFE messages in delivery order, with
    # the session's key, so the seed decrypts.
    for sample in ("bedrock-login", "bedrock-1.19.1"):
        key = open(os.path.join(SAMPLES, sample + ".keylog")).read().split()[-1]
        out = subprocess.run(
            [BIN, "messages", "--json", os.path.join(SAMPLES, sample + ".pcap")],
            check=True, capture_output=True, text=True,
        ).stdout
        blob = bytes.fromhex(key)
        for line in out.splitlines():
            m = json.loads(line)
            data = bytes.fromhex(m["data"])
            if data[:1] == b"\xfe":
                blob += chunk(0 if m["dir"] == "c2s" else 1, data[1:])
        write("game", sample, blob)

    # schema: every packet type bedrock-protocol serialised (the schema
    # tests' vectors): the protocol's index among those the definitions
    # know, the packet id, the body after the header.
    import zlib
    with open(os.path.join(ROOT, "src", "bedrock", "schema.json.z"), "rb") as f:
        protocols = [p for p, _ in json.loads(zlib.decompress(f.read()))["protocols"]]
    every = os.path.join(ROOT, "src", "bedrock", "testdata", "every_packet.jsonl")
    for line in open(every):
        v = json.loads(line)
        if v["version"] != "1.26.45":
            continue
        data = bytes.fromhex(v["hex"])
        head, n = 0, 0
        while True:
            b = data[n]
            head |= (b & 0x7F) << (7 * n)
            n += 1
            if not b & 0x80:
                break
        seed = struct.pack("<HH", protocols.index(v["protocol"]), head & 0x3FF) + data[n:]
        write("schema", v["name"], seed)

    # parsers: a capture filter, then -e fields and -E options, cut at NULs.
    for i, text in enumerate([
        "udp port 19132 and host 127.0.0.1\0frame.number\0raknet.msg.name\0\0\0separator=,\0header=y",
        "not (src net 10.0.0.0/8 or dst portrange 19000-19999)\0game.name\0game.login.display_name",
        "fe0a0b0c\0raknet.guid\0\0\0\0quote=d\0occurrence=f",
        "RELIABLE_ORDERED",
        'game.name == "text" && game.text.message contains "hi"',
    ]):
        write("parsers", f"{i:02}", text.encode())

    # signaling: [chunk size, players in], then the signaling TCP stream: the status
    # request, the offers of aiortc and Chromium (the samples' truth), one pipelined.
    offers = []
    for name in ("nethernet-join", "nethernet-chromium"):
        for line in open(os.path.join(SAMPLES, f"{name}.truth.jsonl")):
            v = json.loads(line)
            if v.get("type") == "sdp" and v.get("kind") == "offer":
                offers.append(v["sdp"].encode())
                break
    get = b"GET /v1/join HTTP/1.1\r\nHost: 127.0.0.1:19132\r\n\r\n"
    post = lambda sdp: (b"POST /v1/join/4242 HTTP/1.1\r\nHost: 127.0.0.1:19132\r\nContent-Type: "
                        b"application/sdp\r\nContent-Length: " + str(len(sdp)).encode() + b"\r\n\r\n" + sdp)
    write("signaling", "status", bytes([0, 0]) + get)
    for i, sdp in enumerate(offers):
        write("signaling", f"offer{i}", bytes([97, 1]) + post(sdp))
    write("signaling", "pipelined", bytes([13, 0]) + get + post(offers[0]))

    for t in sorted(os.listdir(OUT)):
        files = os.listdir(os.path.join(OUT, t))
        size = sum(os.path.getsize(os.path.join(OUT, t, f)) for f in files)
        print(f"fuzz/seeds/{t}: {len(files)} files, {size} bytes")


if __name__ == "__main__":
    main()
