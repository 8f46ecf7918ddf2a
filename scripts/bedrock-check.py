#!/usr/bin/env python3
"""Count the RakNet 0xFE messages of a bedrock-capture.sh capture each way and
check them against the batches its .packets.jsonl records (stdlib only; it
shares no code with the dissector).

    scripts/bedrock-check.py samples/bedrock-login.pcap [PORT]

Reads a pcap (Ethernet or Linux cooked, IPv4/UDP), takes the flow of the
server's UDP port (default 19470), parses each connected datagram's
capsules, drops resends (same reliable index), joins split messages by
split index, and counts the messages that start with 0xFE, per direction.
The truth file beside the capture (same name, .packets.jsonl instead of
.pcap) must name as many batches each way, and each clear batch's packets
must be in its 0xFE message byte for byte (raw DEFLATE or stored, with or
without an algorithm byte). With the key log beside it (.keylog) and the
Python package `cryptography`, the encrypted batches are decrypted too
(AES-256-CFB8 below protocol 431, else CTR from key[:12] || 00000002; the
SHA-256 checksum with each direction's counter) and compared the same way.
Exit 0 when they agree, 1 otherwise.
"""

import hashlib
import json
import struct
import sys
import zlib
from pathlib import Path


def packets(path):
    data = Path(path).read_bytes()
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        sys.exit(f"{path}: not a pcap file")
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    off = 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(endian + "IIII", data[off : off + 16])
        frame = data[off + 16 : off + 16 + incl]
        off += 16 + incl
        if linktype == 1:  # Ethernet
            if frame[12:14] != b"\x08\x00":
                continue
            ip = frame[14:]
        elif linktype == 113:  # Linux cooked v1
            if frame[14:16] != b"\x08\x00":
                continue
            ip = frame[16:]
        else:
            sys.exit(f"{path}: link type {linktype} not handled")
        if ip[9] != 17:
            continue
        ihl = (ip[0] & 0x0F) * 4
        sport, dport = struct.unpack(">HH", ip[ihl : ihl + 4])
        yield sport, dport, ip[ihl + 8 :]


def messages(payload):
    """The capsules of a connected datagram: (reliable index or None, split or None, body)."""
    if not payload or not payload[0] & 0x80 or payload[0] & 0x60:
        return  # offline message, ACK or NAK
    i = 4
    while i < len(payload):
        flags = payload[i]
        bits = struct.unpack(">H", payload[i + 1 : i + 3])[0]
        i += 3
        rel = flags >> 5
        rindex = None
        if rel in (2, 3, 4, 6, 7):
            rindex = int.from_bytes(payload[i : i + 3], "little")
            i += 3
        if rel in (1, 4):
            i += 3
        if rel in (1, 3, 4, 7):
            i += 4
        split = None
        if flags & 0x10:
            split = struct.unpack(">IHI", payload[i : i + 10])
            i += 10
        n = (bits + 7) // 8
        yield rindex, split, payload[i : i + n]
        i += n


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def inflations(body):
    """What a batch body may hold: raw DEFLATE or the records as they are,
    with or without an algorithm byte in front."""
    for cand in (body, body[1:]):
        yield cand
        try:
            yield zlib.decompress(cand, -15)
        except zlib.error:
            pass


class Decryptor:
    """One direction's cipher stream and checksum counter (docs/bedrock-protocol.md 3.2, 3.3)."""

    def __init__(self, key, cfb8):
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        try:  # CFB8's home since cryptography 47
            from cryptography.hazmat.decrepit.ciphers.modes import CFB8
        except ImportError:
            CFB8 = modes.CFB8
        mode = CFB8(key[:16]) if cfb8 else modes.CTR(key[:12] + b"\0\0\0\2")
        self.stream = Cipher(algorithms.AES(key), mode).decryptor()
        self.key = key
        self.counter = 0

    def batch(self, body, prefix):
        plain = self.stream.update(body)
        data, check = plain[:-8], plain[-8:]
        want = hashlib.sha256(struct.pack("<Q", self.counter) + data + self.key).digest()[:8]
        self.counter += 1
        if check != want:
            return None
        if prefix:
            algorithm, data = data[0], data[1:]
            if algorithm == 0xFF:
                return data
        return zlib.decompress(data, -15)


def main():
    pcap = sys.argv[1]
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 19470
    seen = {"c2s": set(), "s2c": set()}
    parts = {"c2s": {}, "s2c": {}}
    fe = {"c2s": [], "s2c": []}
    raknet_protocol = None
    for sport, dport, payload in packets(pcap):
        if port not in (sport, dport):
            continue
        d = "c2s" if dport == port else "s2c"
        if payload[:1] == b"\x05" and d == "c2s":
            raknet_protocol = payload[17]
        for rindex, split, body in messages(payload):
            if rindex is not None:
                if rindex in seen[d]:
                    continue
                seen[d].add(rindex)
            if split:
                count, sid, index = split
                p = parts[d].setdefault(sid, {})
                p[index] = body
                if len(p) < count:
                    continue
                body = b"".join(p[k] for k in range(count))
                del parts[d][sid]
            if body[:1] == b"\xfe":
                fe[d].append(body)
    truth = Path(pcap).with_suffix(".packets.jsonl")
    records = [json.loads(line) for line in truth.read_text().splitlines()]
    login = next(r for r in records if r["name"] == "login")
    protocol = struct.unpack(">i", bytes.fromhex(login["hex"])[1:5])[0]
    # bedrock-protocol's rules: AES-256-CFB8 below 1.16.220 (431), the
    # algorithm byte from 1.20.61 (649) once compression is on.
    cfb8, prefix = protocol < 431, protocol >= 649
    keylog = Path(pcap).with_suffix(".keylog")
    key = None
    try:
        import cryptography  # noqa: F401

        key = bytes.fromhex(keylog.read_text().split()[2])
    except (ImportError, OSError, IndexError):
        pass
    ok = True
    print(
        f"{pcap}: RakNet protocol {raknet_protocol} in the client's 0x05, game protocol {protocol} "
        f"({'CFB8' if cfb8 else 'CTR'}, {'an' if prefix else 'no'} algorithm byte)"
    )
    for d in ("c2s", "s2c"):
        batches = {}
        for r in records:
            if r["dir"] == d:
                batches.setdefault(r["batch"], []).append(r)
        dec = Decryptor(key, cfb8) if key else None
        clear = same = 0
        for k in sorted(batches):
            want = b"".join(varint(len(h)) + h for h in (bytes.fromhex(r["hex"]) for r in batches[k]))
            body = fe[d][k][1:] if k < len(fe[d]) else b""
            if not batches[k][0]["encrypted"]:
                clear += 1
                same += any(plain == want for plain in inflations(body))
            elif dec:
                try:
                    same += dec.batch(body, prefix) == want
                except zlib.error:
                    pass
        opened = len(batches) if key else clear
        print(
            f"  {d}: {len(fe[d])} 0xFE messages in the capture, {len(batches)} batches in {truth.name} "
            f"({clear} clear); {same} of {opened} {'' if key else 'clear '}batches byte for byte the same"
            + ("" if key else " (no key log or no `cryptography`: encrypted batches not opened)")
        )
        ok &= len(fe[d]) == len(batches) and same == opened
    print("  agree" if ok else "  DISAGREE")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
