#!/usr/bin/env python3
"""repeat-capture.py SRC DST MB: a large capture made of copies of a real one.

Copies SRC (a little-endian microsecond pcap) until DST holds MB megabytes,
each copy on its own client and server ports (so each is its own flow), a
second after the last packet of the one before, UDP checksums zeroed (as
IPv4 allows). Used by the benchmark scripts (bench-game.sh,
bench-threads.sh)."""
import struct, sys
src, dst, mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
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
        for i in (0, 2):
            old = struct.unpack(">H", p[u + i:u + i + 2])[0]
            # Each copy's ports: the server's stays apart from the client's.
            new = 20000 + (copy * 2 + ports.index(old) % 2) % 40000
            p[u + i:u + i + 2] = struct.pack(">H", new)
        p[u + 6:u + 8] = b"\0\0"
        rec = struct.pack("<IIII", sec + span * copy, usec, len(p), orig) + p
        out.write(rec)
        size += len(rec)
    copy += 1
print(f"{dst}: {copy} sessions, {size / 1e6:.0f} MB")
