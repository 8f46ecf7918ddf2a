#!/usr/bin/env python3
"""Snappy batches from Google's own snappy (libsnappy, through ctypes), for
the game layer's tests: bedrock-protocol cannot send snappy, and the Python
packages (cramjam, python-snappy 0.7) wrap the same Rust crate we decode
with, so they would not be a second implementation.

The session: the game packets that bedrock-protocol's peers recorded
sending in samples/bedrock-login.packets.jsonl (1.26.45), in the order they
were sent, each batch as it was batched, less the encryption handshake
(server_to_client_handshake, client_to_server_handshake: there is no key
here, so the session stays in the clear). The server's NetworkSettings is
changed to say algorithm 1 (snappy); every batch after it, both ways, is
the algorithm byte 0x01 then the batch body compressed by
snappy_compress(). Written as NDJSON, one 0xFE message a line:

    {"dir": "c2s", "message": "fe...", "packets": ["c101...", ...]}

Usage:
    scripts/bedrock-snappy.py [OUT]      (default src/bedrock/testdata/snappy-1.26.45.jsonl)
    scripts/bedrock-snappy.py --check    each message of the committed file
                                         decompresses, with libsnappy's
                                         snappy_uncompress, to its packets
Needs libsnappy.so.1 (Debian: libsnappy1v5).
"""
import ctypes
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "samples", "bedrock-login.packets.jsonl")
OUT = os.path.join(ROOT, "src", "bedrock", "testdata", "snappy-1.26.45.jsonl")
SKIP = {"server_to_client_handshake", "client_to_server_handshake"}
NETWORK_SETTINGS = 143


def libsnappy():
    try:
        return ctypes.CDLL("libsnappy.so.1")
    except OSError as e:
        sys.exit(f"bedrock-snappy: libsnappy not installed ({e}): apt-get install libsnappy1v5")


def compress(lib, data):
    n = ctypes.c_size_t(lib.snappy_max_compressed_length(ctypes.c_size_t(len(data))))
    out = ctypes.create_string_buffer(n.value)
    if lib.snappy_compress(data, ctypes.c_size_t(len(data)), out, ctypes.byref(n)) != 0:
        raise RuntimeError("snappy_compress failed")
    return out.raw[: n.value]


def uncompress(lib, data):
    n = ctypes.c_size_t()
    if lib.snappy_uncompressed_length(data, ctypes.c_size_t(len(data)), ctypes.byref(n)) != 0:
        raise ValueError("not snappy")
    out = ctypes.create_string_buffer(max(n.value, 1))
    if lib.snappy_uncompress(data, ctypes.c_size_t(len(data)), out, ctypes.byref(n)) != 0:
        raise ValueError("snappy_uncompress failed")
    return out.raw[: n.value]


def varu32(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v == 0:
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


def join(packets):
    return b"".join(varu32(len(p)) + p for p in packets)


def build(lib):
    batches = []  # (dir, batch, [packet bytes]) in the order sent
    index = {}
    for line in open(SRC):
        p = json.loads(line)
        if p["name"] in SKIP:
            continue
        data = bytearray.fromhex(p["hex"])
        if p["id"] == NETWORK_SETTINGS:
            data[4:6] = (1).to_bytes(2, "little")  # the algorithm: snappy
        key = (p["dir"], p["batch"])
        if key not in index:
            index[key] = len(batches)
            batches.append((p["dir"], p["batch"], []))
        batches[index[key]][2].append(bytes(data))
    out = []
    settled = False  # NetworkSettings sent: batches after it are snappy
    for d, _, packets in batches:
        body = join(packets)
        message = b"\xfe" + (b"\x01" + compress(lib, body) if settled else body)
        out.append({"dir": d, "message": message.hex(), "packets": [p.hex() for p in packets]})
        if any(p[0] == 0x8F for p in packets) and d == "s2c":
            settled = True
    return out


def check(lib, path):
    n = 0
    for line in open(path):
        r = json.loads(line)
        m = bytes.fromhex(r["message"])
        packets = [bytes.fromhex(p) for p in r["packets"]]
        if m[1:2] == b"\x01":
            if uncompress(lib, m[2:]) != join(packets):
                sys.exit(f"bedrock-snappy: {path}: message {n} is not its packets")
        elif m[1:] != join(packets):
            sys.exit(f"bedrock-snappy: {path}: clear message {n} is not its packets")
        n += 1
    print(f"{path}: {n} messages, each its packets under libsnappy")


def main():
    lib = libsnappy()
    if sys.argv[1:] == ["--check"]:
        check(lib, OUT)
        return
    path = sys.argv[1] if len(sys.argv) > 1 else OUT
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for r in build(lib):
            f.write(json.dumps(r) + "\n")
    check(lib, path)


main()
