#!/usr/bin/env bash
# bench-nethernet.sh: raknet-dissect against tshark on a large NetherNet capture,
# with the same DTLS key log.
#
# Usage:
#     scripts/bench-nethernet.sh [MB]        # default 1000 (a 1 GB capture)
#
# The capture: samples/nethernet-join.pcap (a real aiortc join: HTTP signaling,
# ICE, DTLS 1.2, SCTP, the Bedrock login of a bedrock-protocol session) repeated
# by scripts/repeat-capture.py --servers until it holds MB megabytes: the server's
# signaling port and UDP port kept, each copy's client on an address of its own
# (127.1.x.y), so each copy is its own TCP connections and UDP conversation, and
# the one key log line opens every copy (they share the ClientHello's random).
# Written to target/bench/nethernet-MB.pcap once.
#
# Timed once each (the machines are shared: quote ratios of one run), output to
# /dev/null, with peak RSS (/usr/bin/time -f %M):
#     raknet-dissect FILE                          a line per datagram and segment
#     raknet-dissect FILE --tls-keylog K           the same, SCTP chunks decrypted
#     raknet-dissect game FILE --json --tls-keylog K    every game packet, decoded
#     tshark -r FILE                               (no key: STUN, DTLS, HTTP lines)
#     tshark -r FILE -o tls.keylog_file:K -o dtls.keys_list:...,sctp,...
#                                                  DTLS decrypted, SCTP and DCEP lines
# and, for memory, raknet-dissect on a tenth of FILE: peak RSS must not grow with
# the file (flat: conversations idle for 60 s, 10 s after a close_notify, and
# closed signaling connections are let go).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MB=${1:-1000}
DIR=$ROOT/target/bench
mkdir -p "$DIR"
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
BIN=$ROOT/target/release/raknet-dissect
SRC=$ROOT/samples/nethernet-join.pcap
KEYLOG=$ROOT/samples/nethernet-join.keylog
# The server's ports: the signaling's (the TCP port of the HTTP requests) and
# its UDP port (the flow record's server).
sig=$("$BIN" "$SRC" --json -Y http | jq -r 'select(.http[0].method) | .dst' | head -1 | sed 's/.*://')
udp=$("$BIN" flows "$SRC" --json | jq -r 'select(.transport == "nethernet") | .server' | head -1 | sed 's/.*://')
BIG=$DIR/nethernet-$MB.pcap
SMALL=$DIR/nethernet-$((MB / 10)).pcap
[ -s "$BIG" ] || python3 "$ROOT/scripts/repeat-capture.py" "$SRC" "$BIG" "$MB" --servers "$sig,$udp"
[ -s "$SMALL" ] || python3 "$ROOT/scripts/repeat-capture.py" "$SRC" "$SMALL" "$((MB / 10))" --servers "$sig,$udp"
pem=$DIR/any-rsa.pem
[ -s "$pem" ] || openssl genrsa -out "$pem" 2048 2>/dev/null
bytes=$(stat -c %s "$BIG")
run() {
    local name=$1; shift
    local s e rss
    s=$(date +%s.%N)
    rss=$( { /usr/bin/time -f %M "$@" > /dev/null; } 2>&1 | tail -1)
    e=$(date +%s.%N)
    local wall
    wall=$(echo "$e - $s" | bc -l)
    printf '%-44s %8.2f s %8.1f MB/s %9s KB peak RSS\n' "$name" "$wall" \
        "$(echo "$bytes / 1000000 / $wall" | bc -l)" "$rss"
    echo "$wall" > "$DIR/.last"
}
echo "$BIG: $((bytes / 1000000)) MB; signaling port $sig, server UDP port $udp"
run "raknet-dissect read" "$BIN" "$BIG"; ours_read=$(cat "$DIR/.last")
run "raknet-dissect read --tls-keylog" "$BIN" "$BIG" --tls-keylog "$KEYLOG"; ours_keyed=$(cat "$DIR/.last")
run "raknet-dissect game --json --tls-keylog" "$BIN" game "$BIG" --json --tls-keylog "$KEYLOG"; ours_game=$(cat "$DIR/.last")
if command -v tshark >/dev/null; then
    run "tshark (no key)" tshark -r "$BIG"; ts_plain=$(cat "$DIR/.last")
    run "tshark (key log: DTLS, SCTP, DCEP)" tshark -r "$BIG" -o "tls.keylog_file:$KEYLOG" \
        -o udp.try_heuristic_first:TRUE -o "dtls.keys_list:127.0.0.1,$udp,sctp,$pem"
    ts_keyed=$(cat "$DIR/.last")
    printf 'ratios (tshark time / ours): read %.1fx, read with keys %.1fx, game --json vs tshark with keys %.1fx\n' \
        "$(echo "$ts_plain / $ours_read" | bc -l)" "$(echo "$ts_keyed / $ours_keyed" | bc -l)" \
        "$(echo "$ts_keyed / $ours_game" | bc -l)"
else
    echo "skipped: tshark not installed (apt-get install tshark)"
fi
echo "memory: the same commands on $SMALL ($((MB / 10)) MB)"
bytes=$(stat -c %s "$SMALL")
run "raknet-dissect read (a tenth)" "$BIN" "$SMALL"
run "raknet-dissect game --json --tls-keylog (a tenth)" "$BIN" game "$SMALL" --json --tls-keylog "$KEYLOG"
