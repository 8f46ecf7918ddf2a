#!/usr/bin/env python3
"""Cross-check a nethernet-capture.sh capture with tshark against its truth file.

    scripts/nethernet-tshark-check.py BASE [UDPPORT ...]

BASE is OUTDIR/nethernet-join or OUTDIR/nethernet-lossy (BASE.pcap, .keylog,
.truth.jsonl). UDPPORTs: the ports for dtls.keys_list (default: with a relay, the
relay's two ports from the truth's meta; else the first STUN source port). Needs
tshark (4.0) and openssl on PATH.

For each UDP conversation (read alone: a capture holding both legs of the relay carries
the same SCTP association twice) and direction (src -> dst) it prints: DATA chunks, distinct
TSNs, TSNs seen more than once, chunks tshark marks sctp.retransmission, SACKs, SACK
gap blocks and duplicate-TSN reports, FORWARD-TSNs; then the data channel messages
(PPID 51/53/56/57) as tshark reassembles them per stream (sctp.reassembly on; a
message counted once per TSN range, copies of a retransmitted one dropped), and
compares them with the truth: the messages the side at the receiving end of that
direction recorded receiving (per label, in order; unordered streams as multisets),
and those the sending side recorded sending. "receiver" equal means the capture holds
exactly what that application got; "sender" equal, everything it sent.
Exit status 1 if any direction matches neither.
"""

import collections
import json
import os
import subprocess
import sys
import tempfile

base = sys.argv[1]
truth = [json.loads(l) for l in open(base + ".truth.jsonl")]
meta = next(r for r in truth if r["type"] == "meta" and r["side"] == "client")
ports = sys.argv[2:]
if not ports:
    if meta.get("relay"):
        ports = meta["relay"].split(":")
    else:
        out = subprocess.run(["tshark", "-r", base + ".pcap", "-Y", "stun", "-T", "fields", "-e", "udp.srcport"],
                             capture_output=True, text=True).stdout.split()
        ports = out[:1]
pem = os.path.join(tempfile.gettempdir(), "nethernet-check-any.pem")
if not os.path.exists(pem):
    subprocess.run(["openssl", "genrsa", "-out", pem, "2048"], check=True, capture_output=True)
keys = ";".join(f"127.0.0.1,{p},sctp,{pem}" for p in ports)
FIELDS = ["frame.number", "udp.srcport", "udp.dstport", "sctp.chunk_type", "sctp.data_tsn_raw", "sctp.data_sid",
          "sctp.data_ssn", "sctp.data_payload_proto_id", "sctp.data_b_bit", "sctp.data_e_bit", "sctp.data_u_bit",
          "sctp.retransmission", "sctp.sack_number_of_gap_blocks", "sctp.sack_number_of_duplicated_tsns",
          "sctp.reassembled_in", "data.data", "sctp.fragments"]


def tshark(pcap, *opts):
    cmd = ["tshark", "-r", pcap, "-o", "tls.keylog_file:" + base + ".keylog",
           "-o", "udp.try_heuristic_first:TRUE", "-o", "dtls.keys_list:" + keys, *opts, "-Y", "sctp",
           "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|"]
    for f in FIELDS:
        cmd += ["-e", f]
    rows = []
    for line in subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines():
        rows.append(dict(zip(FIELDS, [v.split("|") if v else [] for v in line.split("\t")])))
    return rows


# tshark tracks an SCTP association by its ports and verification tags, whatever the UDP
# conversation: with both legs of a relay in one capture, it would take the second leg's
# chunks for retransmissions of the first's. So each UDP conversation is read alone.
convs = []
for line in subprocess.run(["tshark", "-r", base + ".pcap", "-Y", "udp", "-T", "fields", "-e", "udp.srcport",
                            "-e", "udp.dstport"], capture_output=True, text=True, check=True).stdout.splitlines():
    pair = tuple(sorted(line.split("\t")))
    if pair not in convs:
        convs.append(pair)
rows = []
with tempfile.TemporaryDirectory() as tmp:
    for a, b in convs:
        leg = os.path.join(tmp, f"{a}-{b}.pcap")
        subprocess.run(["tshark", "-r", base + ".pcap", "-Y", f"udp.port == {a} && udp.port == {b}", "-w", leg],
                       check=True, capture_output=True)
        rows += tshark(leg)
stats = collections.OrderedDict()
msgs = collections.defaultdict(list)   # (src, dst) -> [(sid, unordered, tsn range, hex)]
seen_msgs = set()
for r in rows:
    key = (r["udp.srcport"][0], r["udp.dstport"][0])
    s = stats.setdefault(key, collections.Counter(tsns=0))
    s.setdefault("tsn_set", collections.Counter())
    types = r["sctp.chunk_type"]
    s["packets"] += 1
    for t in types:
        s["chunk_" + t] += 1
    for tsn in r["sctp.data_tsn_raw"]:
        s["tsn_set"][tsn] += 1
    s["retransmission"] += len(r["sctp.retransmission"])
    s["sack_gap_blocks"] += sum(int(x) for x in r["sctp.sack_number_of_gap_blocks"])
    s["sack_dup_tsns"] += sum(int(x) for x in r["sctp.sack_number_of_duplicated_tsns"])
    if types.count("0") > 1:
        s["frames_with_several_data"] += 1
    # A complete message in this frame: a single-chunk one (B and E set), or the one
    # tshark reassembled here (sctp.fragments). data.data holds it (PPID 53: no sub-dissector).
    for i, tsn in enumerate(r["sctp.data_tsn_raw"]):
        ppid = r["sctp.data_payload_proto_id"][i]
        if ppid not in ("51", "53", "56", "57"):
            continue
        b, e = r["sctp.data_b_bit"][i] in ("1", "True"), r["sctp.data_e_bit"][i] in ("1", "True")
        if not e:
            continue
        if not r["data.data"]:
            continue  # an E fragment whose message tshark could not reassemble (yet)
        data = r["data.data"][-1] if len(r["data.data"]) > 1 else r["data.data"][0]
        n = len(data) // 2
        uid = (key, tsn)
        if uid in seen_msgs:
            s["message_copies"] += 1
            continue
        seen_msgs.add(uid)
        msgs[key].append((int(r["sctp.data_sid"][i], 0), r["sctp.data_u_bit"][i] in ("1", "True"),
                          int(r["sctp.data_ssn"][i]), data.replace(":", "")))

# truth
tmsgs = collections.defaultdict(list)  # (side, event, stream) -> [hex]
ordered = {}
for r in truth:
    if r["type"] == "message":
        tmsgs[(r["side"], r["event"], r["stream_id"])].append(r["hex"])
        ordered[r["stream_id"]] = r["ordered"]
dtls = {r["side"]: r for r in truth if r["type"] == "dtls"}
# which side owns which UDP port: the dtls record's local address is the peer's ICE port.
side_port = {str(d["local_address"][1]): side for side, d in dtls.items() if d.get("local_address")}

failed = False
print(f"{'direction':<14} {'pkts':>5} {'DATA':>5} {'TSNs':>5} {'TSN>1':>6} {'rexmit':>6} {'SACK':>5} "
      f"{'gaps':>5} {'dupTSN':>6} {'FWD':>4}  messages per stream vs truth")
for key, s in stats.items():
    tsn_set = s.pop("tsn_set")
    multi = sum(1 for v in tsn_set.values() if v > 1)
    if key[1] in side_port:
        receiver, sender, leg = side_port[key[1]], None, "to " + side_port[key[1]]
        sender = "server" if receiver == "client" else "client"
    elif key[0] in side_port:
        sender = side_port[key[0]]
        receiver = "server" if sender == "client" else "client"
        leg = "from " + sender
    else:
        receiver = sender = leg = None
    got = collections.defaultdict(list)
    for sid, unordered, ssn, data in msgs[key]:
        got[sid].append((ssn, unordered, data))
    verdicts = []
    for sid in sorted(set(got) | {k[2] for k in tmsgs}):
        items = got.get(sid, [])
        if ordered.get(sid, True):
            seq = [d for _, _, d in sorted(items, key=lambda x: x[0])]
            cmp = lambda a, b: a == b
        else:
            seq = [d for _, _, d in items]
            cmp = lambda a, b: sorted(a) == sorted(b)
        recv = tmsgs.get((receiver, "received", sid), [])
        sent = tmsgs.get((sender, "sent", sid), [])
        v = f"s{sid}:{len(seq)}"
        ok = []
        if cmp(seq, recv):
            ok.append(f"={receiver} received")
        if cmp(seq, sent):
            ok.append(f"={sender} sent")
        if not ok:
            ok.append(f"!= {receiver} received ({len(recv)}) and {sender} sent ({len(sent)})")
            failed = True
        verdicts.append(v + " " + " ".join(ok))
    print(f"{key[0]}->{key[1]:<8} {s['packets']:>5} {s['chunk_0']:>5} {len(tsn_set):>5} {multi:>6} "
          f"{s['retransmission']:>6} {s['chunk_3']:>5} {s['sack_gap_blocks']:>5} {s['sack_dup_tsns']:>6} "
          f"{s['chunk_192']:>4}  ({leg}) " + "; ".join(verdicts))
    if s["frames_with_several_data"]:
        print(f"  note: {s['frames_with_several_data']} frames with several DATA chunks")
sys.exit(1 if failed else 0)
