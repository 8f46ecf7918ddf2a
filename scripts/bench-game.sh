#!/usr/bin/env bash
# bench-game.sh: what the Bedrock game layer costs. Builds a large capture by
# repeating a real bedrock-protocol session (each copy on its own client and
# server ports, starting a second after the one before ended; UDP checksums
# zeroed, as IPv4 allows), then times, output to
# /dev/null, median wall time of RUNS runs after a warm-up:
#     raknet-dissect messages BIG --json                  (the mirror alone)
#     raknet-dissect game BIG --json                      (+ the game layer, no key)
#     raknet-dissect game BIG --json --keylog KEYLOG --no-fields (+ decryption)
#     raknet-dissect game BIG --json --keylog KEYLOG      (+ every packet's fields)
# and prints MB/s of capture (file bytes / 10^6 / wall s) and the peak RSS.
#
# The session, SESSION=play (the default): a gameplay session of 1.26.45,
# the login and 300 rounds of the client's move_player and the server's
# level_chunk + move_entity (1.1 MB; made once with scripts/bedrock-capture.sh
# PLAY=300, which needs root, node and npm, into target/bench/play/); the
# mix of a real server's traffic, where chunks are most of the bytes.
# SESSION=login: samples/bedrock-login.pcap, a session that is all login
# (12.9 KB, of which the Login is 10 KB): there the cost is the P-384
# signature checks of each Login, about 1.5 ms a login whatever the
# capture's size.
#
# Usage: scripts/bench-game.sh [MB] [RUNS]     (default 200 MB, 5 runs)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MB=${1:-200}
RUNS=${2:-5}
SESSION=${SESSION:-play}
DIR=$ROOT/target/bench
BIG=$DIR/bedrock-$SESSION-$MB.pcap
mkdir -p "$DIR"
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
BIN=$ROOT/target/release/raknet-dissect
case $SESSION in
    play)
        SRC=$DIR/play/bedrock-1.26.45.pcap
        KEYLOG=$DIR/play/bedrock-1.26.45.keylog
        [ -s "$SRC" ] || PLAY=300 "$ROOT/scripts/bedrock-capture.sh" 1.26.45 "$DIR/play" 19496 ;;
    login)
        SRC=$ROOT/samples/bedrock-login.pcap
        KEYLOG=$ROOT/samples/bedrock-login.keylog ;;
    *) echo "bench-game: SESSION=play|login, not $SESSION" >&2; exit 2 ;;
esac
if ! [ -s "$BIG" ]; then
    python3 - "$SRC" "$BIG" "$MB" <<'EOF'
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
EOF
fi
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
echo "$BIG: $((bytes / 1000000)) MB ($SESSION session repeated), $RUNS runs each"
run "messages --json" "$BIN" messages "$BIG" --json
run "game --json (no key)" "$BIN" game "$BIG" --json
run "game --json --keylog --no-fields" "$BIN" game "$BIG" --json --keylog "$KEYLOG" --no-fields
run "game --json --keylog" "$BIN" game "$BIG" --json --keylog "$KEYLOG"
