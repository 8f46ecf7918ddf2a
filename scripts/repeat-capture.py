#!/usr/bin/env python3
"""repeat-capture.py SRC DST MB [--servers PORT,PORT...]: a large capture made of copies of a real one.

Copies SRC (a little-endian microsecond pcap) until DST holds MB megabytes,
a second after the last packet of the one before, UDP checksums zeroed (as
IPv4 allows). Used by the benchmark scripts (bench-game.sh, bench-threads.sh,
bench-nethernet.sh).

Without --servers, each copy gets its own client and server ports (so each is
its own flow): a RakNet session's two ports.

With --servers (NetherNet: the signaling's TCP port and the server's UDP port),
those ports and their address stay as they are, and each copy's other side gets
its own IPv4 address instead (127.1.0.1, 127.1.0.2, ...), its ports kept: every
TCP connection and UDP conversation of each copy is its own, and the server's
ports are those a DTLS key list names (tshark's dtls.keys_list). The IPv4 header
checksum is recomputed; TCP's is left as it was (wrong for the new address:
neither tool checks it by default)."""
import struct, sys

args = sys.argv[1:]
servers = set()
if "--servers" in args:
    i = args.index("--servers")
    servers = {int(p) for p in args[i + 1].split(",")}
    del args[i:i + 2]
src, dst, mb = args[0], args[1], int(args[2])
data = open(src, "rb").read()
header, body = data[:24], data[24:]
assert struct.unpack("<I", header[:4])[0] == 0xA1B2C3D4, "a little-endian microsecond pcap"
link = struct.unpack("<I", header[20:24])[0]
offset = {1: 14, 113: 16, 0: 4, 101: 0}[link]  # to the IP header
records, pos = [], 0
while pos + 16 <= len(body):
    sec, usec, incl, orig = struct.unpack("<IIII", body[pos:pos + 16])
    records.append((sec, usec, orig, bytearray(body[pos + 16:pos + 16 + incl])))
    pos += 16 + incl
ports = sorted({struct.unpack(">H", r[3][offset + 20 + i:offset + 22 + i])[0]
                for r in records for i in (0, 2)})


def ip_checksum(h):
    s = sum(struct.unpack(f">{len(h) // 2}H", bytes(h)))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


out = open(dst, "wb")
out.write(header)
# Each copy a second after the last packet of the one before.
span = records[-1][0] - records[0][0] + 2
size, copy = 24, 0
while size < mb * 1_000_000:
    for sec, usec, orig, pkt in records:
        p = bytearray(pkt)
        ihl = (p[offset] & 15) * 4
        u = offset + ihl
        proto = p[offset + 9]
        if servers:
            client = bytes([127, 1 + (copy >> 16), (copy >> 8) & 255, copy & 255])
            sport, dport = struct.unpack(">HH", p[u:u + 4])
            # The side whose port is not a server's is the copy's client.
            if sport not in servers:
                p[offset + 12:offset + 16] = client
            if dport not in servers:
                p[offset + 16:offset + 20] = client
            p[offset + 10:offset + 12] = b"\0\0"
            p[offset + 10:offset + 12] = struct.pack(">H", ip_checksum(p[offset:offset + ihl]))
        else:
            for i in (0, 2):
                old = struct.unpack(">H", p[u + i:u + i + 2])[0]
                # Each copy's ports: the server's stays apart from the client's.
                new = 20000 + (copy * 2 + ports.index(old) % 2) % 40000
                p[u + i:u + i + 2] = struct.pack(">H", new)
        if proto == 17:
            p[u + 6:u + 8] = b"\0\0"
        rec = struct.pack("<IIII", sec + span * copy, usec, len(p), orig) + p
        out.write(rec)
        size += len(rec)
    copy += 1
print(f"{dst}: {copy} sessions, {size / 1e6:.0f} MB")
