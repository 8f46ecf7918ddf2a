#!/usr/bin/env bash
# bench-game.sh: what the Bedrock game layer costs. Builds a large capture by
# repeating the real bedrock-protocol session of samples/bedrock-login.pcap
# (each copy on its own client and server ports, 2 s later than the one
# before; UDP checksums zeroed, as IPv4 allows), then times, output to
# /dev/null, median wall time of RUNS runs after a warm-up:
#     raknet-dissect messages BIG --json                  (the mirror alone)
#     raknet-dissect game BIG --json                      (+ the game layer, no key)
#     raknet-dissect game BIG --json --keylog KEYLOG      (+ decryption)
# and prints MB/s of capture (file bytes / 10^6 / wall s) and the peak RSS.
#
# Usage: scripts/bench-game.sh [MB] [RUNS]     (default 200 MB, 5 runs)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MB=${1:-200}
RUNS=${2:-5}
DIR=$ROOT/target/bench
BIG=$DIR/bedrock-$MB.pcap
mkdir -p "$DIR"
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
BIN=$ROOT/target/release/raknet-dissect
if ! [ -s "$BIG" ]; then
    python3 - "$ROOT/samples/bedrock-login.pcap" "$BIG" "$MB" <<'EOF'
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
        rec = struct.pack("<IIII", sec + 2 * copy, usec, len(p), orig) + p
        out.write(rec)
        size += len(rec)
    copy += 1
print(f"{dst}: {copy} sessions, {size / 1e6:.0f} MB")
EOF
fi
KEYLOG=$ROOT/samples/bedrock-login.keylog
bytes=$(stat -c %s "$BIG")
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() {
    local name=$1; shift
    "$@" > /dev/null
    local times=()
    for _ in $(seq "$RUNS"); do
        local s e
        s=$(date +%s.%N); "$@" > /dev/null; e=$(date +%s.%N)
        times+=("$(echo "$e - $s" | bc -l)")
    done
    local wall rss
    wall=$(printf '%s\n' "${times[@]}" | median)
    rss=$( { /usr/bin/time -f %M "$@" > /dev/null; } 2>&1 | tail -1)
    printf '%-40s %8.3f s %9.1f MB/s %8s KB peak RSS\n' "$name" "$wall" \
        "$(echo "$bytes / 1000000 / $wall" | bc -l)" "$rss"
}
echo "$BIG: $((bytes / 1000000)) MB, $RUNS runs each"
run "messages --json" "$BIN" messages "$BIG" --json
run "game --json (no key)" "$BIN" game "$BIG" --json
run "game --json --keylog" "$BIN" game "$BIG" --json --keylog "$KEYLOG"
