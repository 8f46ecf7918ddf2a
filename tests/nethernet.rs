//! NetherNet through the commands, against the real aiortc sessions of
//! `samples/nethernet-*.pcap`: what each application received (recorded
//! inside the peers, `.truth.jsonl`) is what `game` must show.

mod common;

use common::{run_bin, sample};
use serde_json::Value;

/// A command's standard output, one JSON record a line.
fn ndjson(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// The records of `samples/NAME.truth.jsonl`.
fn truth(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(sample(&format!("{name}.truth.jsonl"))).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `raknet-dissect ARGS`, its standard output's JSON records and its
/// standard error; the run must succeed.
fn records(args: &[&str]) -> (Vec<Value>, String) {
    let out = run_bin(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {stderr}");
    (ndjson(&out.stdout), stderr)
}

/// The game packets a side's application received, by channel label, in
/// the order it received them: `(name, data)`.
fn received(truth: &[Value], side: &str, label: &str) -> Vec<(String, String)> {
    truth
        .iter()
        .filter(|r| {
            r["type"] == "packet"
                && r["side"] == side
                && r["event"] == "received"
                && r["label"] == label
        })
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["hex"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `game --json --tls-keylog` names every game packet each application
/// received, with the bytes it received, in its order; through the lossy
/// relay too, where each leg is a conversation of its own and shows what
/// the peer on its side received.
#[test]
fn game_shows_what_each_application_received() {
    for name in ["nethernet-join", "nethernet-lossy", "nethernet-chromium"] {
        let legs = if name == "nethernet-lossy" { 2 } else { 1 };
        let (pcap, keylog) = (
            sample(&format!("{name}.pcap")),
            sample(&format!("{name}.keylog")),
        );
        game_equals_truth(name, &pcap, &keylog, &truth(name), legs);
    }
}

/// `game --json --tls-keylog` on `pcap`: `legs` flows, each showing what
/// the side on its leg received, as `truth` says (`name`: for messages).
fn game_equals_truth(
    name: &str,
    pcap: &std::path::Path,
    keylog: &std::path::Path,
    truth: &[Value],
    legs: usize,
) {
    {
        let (records, _) = records(&[
            "game",
            pcap.to_str().unwrap(),
            "--json",
            "--tls-keylog",
            keylog.to_str().unwrap(),
        ]);
        // NetherNet's flows alone (a capture made while other tests run
        // may hold their loopback traffic too).
        let (all, _) = self::records(&["flows", pcap.to_str().unwrap(), "--json"]);
        let nethernet: Vec<&Value> = all
            .iter()
            .filter(|f| f["transport"] == "nethernet")
            .map(|f| &f["flow"])
            .collect();
        let game: Vec<&Value> = records
            .iter()
            .filter(|r| r["type"] == "game" && nethernet.contains(&&r["flow"]))
            .collect();
        let odd = records.iter().find(|r| r["type"] != "game");
        assert!(odd.is_none(), "{name}: a batch that shows nothing: {odd:?}");
        let mut flows: Vec<u64> = game.iter().map(|r| r["flow"].as_u64().unwrap()).collect();
        flows.sort();
        flows.dedup();
        assert_eq!(flows.len(), legs, "{name}");
        // The reliable channel's packets, in order; the unreliable one's
        // (whole batches, which may overtake) as a count.
        let want_rel = |side| received(truth, side, "ReliableDataChannel");
        let want_unrel = |side| received(truth, side, "UnreliableDataChannel").len();
        for (side, dir) in [("server", "c2s"), ("client", "s2c")] {
            let want = want_rel(side);
            assert!(want.len() > 5, "{name}: {side} received {}", want.len());
            let of_flow = |flow: u64| -> Vec<(String, String)> {
                game.iter()
                    .filter(|r| r["flow"] == flow && r["dir"] == dir)
                    .map(|r| {
                        (
                            r["name"].as_str().unwrap_or("").to_string(),
                            r["data"].as_str().unwrap().to_string(),
                        )
                    })
                    .collect()
            };
            // A flow (its leg) shows exactly what this side received: the
            // reliable channel's packets in order, the unreliable's after
            // or among them.
            let shown = flows.iter().map(|&f| of_flow(f)).find(|got| {
                let reliable: Vec<&(String, String)> =
                    got.iter().filter(|p| want.contains(p)).collect();
                reliable.len() == want.len()
                    && reliable.iter().zip(&want).all(|(g, w)| *g == w)
                    && got.len() == want.len() + want_unrel(side)
            });
            assert!(
                shown.is_some(),
                "{name}: no flow shows what the {side} received ({} reliable, {} unreliable): {:?}",
                want.len(),
                want_unrel(side),
                flows.iter().map(|&f| of_flow(f).len()).collect::<Vec<_>>()
            );
        }
    }
}

/// Without the key log the records stay closed: `game` shows no packet,
/// and says why, with what to give it.
#[test]
fn without_keys_game_shows_no_packet() {
    let pcap = sample("nethernet-join.pcap");
    let out = common::bin()
        .args(["game", pcap.to_str().unwrap(), "--json"])
        .env_remove("SSLKEYLOGFILE")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("NetherNet flow 3"), "{stderr}");
    assert!(stderr.contains("--tls-keylog"), "{stderr}");
    assert!(!stderr.contains("no RakNet packets"), "{stderr}");
}

/// The key log may come from SSLKEYLOGFILE, as browsers write it; a file
/// given with no secret in it is one error, exit 2.
#[test]
fn key_logs_from_the_environment_and_bad_ones() {
    let pcap = sample("nethernet-join.pcap");
    let keylog = sample("nethernet-join.keylog");
    let out = common::bin()
        .args(["game", pcap.to_str().unwrap(), "--json"])
        .env("SSLKEYLOGFILE", &keylog)
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines = String::from_utf8_lossy(&out.stdout).lines().count();
    assert!(lines > 10, "{lines} records");
    let readme = common::root().join("README.md");
    let out = run_bin(&[
        "game",
        pcap.to_str().unwrap(),
        "--tls-keylog",
        readme.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no CLIENT_RANDOM line"), "{stderr}");
}

/// `messages` shows what each side's data channels delivered to its
/// application, message by message, in its order, with the channel each
/// came on; a message that completed a batch names its game packets.
#[test]
fn messages_show_what_each_data_channel_delivered() {
    for name in ["nethernet-join", "nethernet-lossy", "nethernet-chromium"] {
        let truth = truth(name);
        let pcap = sample(&format!("{name}.pcap"));
        let keylog = sample(&format!("{name}.keylog"));
        let (records, _) = records(&[
            "messages",
            pcap.to_str().unwrap(),
            "--json",
            "--tls-keylog",
            keylog.to_str().unwrap(),
        ]);
        assert!(records
            .iter()
            .all(|r| r["type"] == "message" && r.get("id").is_none()));
        let mut flows: Vec<u64> = records
            .iter()
            .map(|r| r["flow"].as_u64().unwrap())
            .collect();
        flows.sort();
        flows.dedup();
        for (side, dir) in [("server", "c2s"), ("client", "s2c")] {
            let want: Vec<(u64, String, String)> = truth
                .iter()
                .filter(|r| r["type"] == "message" && r["side"] == side && r["event"] == "received")
                .map(|r| {
                    (
                        r["stream_id"].as_u64().unwrap(),
                        r["label"].as_str().unwrap().to_string(),
                        r["hex"].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            assert!(want.len() > 5);
            let of_flow = |flow: u64| -> Vec<(u64, String, String)> {
                records
                    .iter()
                    .filter(|r| r["flow"] == flow && r["dir"] == dir)
                    .map(|r| {
                        (
                            r["stream"].as_u64().unwrap(),
                            r["label"].as_str().unwrap().to_string(),
                            r["data"].as_str().unwrap().to_string(),
                        )
                    })
                    .collect()
            };
            assert!(
                flows.iter().any(|&f| of_flow(f) == want),
                "{name}: no flow shows the {} messages the {side} received",
                want.len()
            );
        }
        // The last segment of the login names it.
        assert!(records
            .iter()
            .any(|r| r["game"] == serde_json::json!(["login"])));
    }
}

/// SCTP chunk type numbers, as tshark's `sctp.chunk_type` prints them.
fn chunk_number(name: &str) -> &'static str {
    match name {
        "DATA" => "0",
        "INIT" => "1",
        "INIT_ACK" => "2",
        "SACK" => "3",
        "HEARTBEAT" => "4",
        "HEARTBEAT_ACK" => "5",
        "ABORT" => "6",
        "SHUTDOWN" => "7",
        "SHUTDOWN_ACK" => "8",
        "ERROR" => "9",
        "COOKIE_ECHO" => "10",
        "COOKIE_ACK" => "11",
        "SHUTDOWN_COMPLETE" => "14",
        "I_DATA" => "64",
        "RE_CONFIG" => "130",
        "PAD" => "132",
        "FORWARD_TSN" => "192",
        "I_FORWARD_TSN" => "194",
        other => panic!("chunk {other}"),
    }
}

#[test]
fn tshark_shows_the_same_sctp_chunks() {
    if !common::require_tool("tshark") || !common::require_tool("openssl") {
        return;
    }
    let dir = common::TempDir::new("nethernet-tshark");
    let pem = common::any_pem(&dir);
    for name in ["nethernet-join", "nethernet-lossy", "nethernet-chromium"] {
        let pcap = sample(&format!("{name}.pcap"));
        let keylog = sample(&format!("{name}.keylog"));
        let keys = common::dtls_keys_list(pcap.to_str().unwrap(), &pem);
        let fields = ["frame.number", "sctp.chunk_type", "sctp.data_tsn_raw"];
        let more = [
            "sctp.data_sid",
            "sctp.data_payload_proto_id",
            "_ws.malformed",
        ];
        // tshark's `-Y udp` datagrams, decrypted, fields `-e`, and ours
        // (`kind != http`: the datagrams), with the same key log.
        let tshark_fields = |fields: &[&str]| -> String {
            let mut tshark = std::process::Command::new("tshark");
            tshark
                .args(["-r", pcap.to_str().unwrap(), "-Y", "udp"])
                .arg("-o")
                .arg(format!("tls.keylog_file:{}", keylog.display()))
                .arg("-o")
                .arg(&keys)
                .args(["-T", "fields", "-E", "aggregator=,"]);
            for f in fields {
                tshark.args(["-e", f]);
            }
            let o = common::run_with_timeout(&mut tshark, std::time::Duration::from_secs(60));
            assert!(o.status.success());
            String::from_utf8_lossy(&o.stdout).into_owned()
        };
        let our_fields = |fields: &[&str]| -> String {
            let mut args = vec![
                pcap.to_str().unwrap(),
                "--tls-keylog",
                keylog.to_str().unwrap(),
            ];
            args.extend(["-Y", "kind != http", "-T", "fields", "-E", "aggregator=,"]);
            for f in fields {
                args.extend(["-e", f]);
            }
            let out = run_bin(&args);
            assert!(out.status.success());
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let all: Vec<&str> = fields.iter().chain(&more).copied().collect();
        let theirs: Vec<Vec<String>> = tshark_fields(&all)
            .lines()
            .map(|l| {
                l.split('\t')
                    .map(|c| {
                        // Stream ids as tshark prints them: 0x0001.
                        match c.strip_prefix("0x") {
                            Some(h) => u64::from_str_radix(h, 16).unwrap().to_string(),
                            None => c.to_string(),
                        }
                    })
                    .collect()
            })
            .collect();
        assert!(
            theirs.iter().all(|r| r.get(5).is_none_or(|m| m.is_empty())),
            "{name}: tshark marks a frame malformed"
        );
        let sctp = our_fields(&[
            "frame",
            "sctp.chunk",
            "sctp.tsn",
            "sctp.stream",
            "sctp.ppid",
        ]);
        let ours: Vec<Vec<String>> = sctp
            .lines()
            .map(|l| {
                let mut c: Vec<String> = l.split('\t').map(str::to_string).collect();
                c[1] = c[1]
                    .split(',')
                    .filter(|n| !n.is_empty())
                    .map(chunk_number)
                    .collect::<Vec<_>>()
                    .join(",");
                c
            })
            .collect();
        // Every UDP datagram is a line of ours, with tshark's chunks.
        assert_eq!(ours.len(), theirs.len(), "{name}: datagrams");
        let mut chunks = 0;
        for (o, t) in ours.iter().zip(&theirs) {
            assert_eq!(o[..5], t[..5], "{name}: ours {o:?}, tshark's {t:?}");
            chunks += o[1].split(',').filter(|c| !c.is_empty()).count();
        }
        assert!(chunks > 50, "{name}: {chunks} chunks compared");
        eprintln!(
            "{name}: {} datagrams, {chunks} SCTP chunks agree with tshark",
            ours.len()
        );
        // Each DTLS record's content type, epoch, sequence number and
        // length, and the label of each data channel DCEP opened.
        let theirs = tshark_fields(&[
            "frame.number",
            "dtls.record.content_type",
            "dtls.record.epoch",
            "dtls.record.sequence_number",
            "dtls.record.length",
            "rtcdc.label",
        ]);
        let dtls = our_fields(&[
            "frame",
            "dtls.content",
            "dtls.epoch",
            "dtls.seq",
            "dtls.len",
            "channels_opened",
        ]);
        // Content types as tshark numbers them.
        let ours = dtls
            .replace("change_cipher_spec", "20")
            .replace("alert", "21")
            .replace("handshake", "22")
            .replace("application_data", "23");
        let (ours, theirs): (Vec<&str>, Vec<&str>) =
            (ours.lines().collect(), theirs.lines().collect());
        assert_eq!(ours.len(), theirs.len(), "{name}: datagrams");
        let mut records = 0;
        for (o, t) in ours.iter().zip(&theirs) {
            // The label: where tshark shows one. Through the relay, the
            // second leg's copy of an SCTP packet is the same association
            // to tshark (same ports and tags): a retransmission it does
            // not dissect again.
            let (o5, t5) = (o.rsplit_once('\t').unwrap(), t.rsplit_once('\t').unwrap());
            assert_eq!(o5.0, t5.0, "{name}: ours, then tshark's");
            assert!(t5.1.is_empty() || t5.1 == o5.1, "{name}: {o} / {t}");
            records += o
                .split('\t')
                .nth(1)
                .map_or(0, |c| c.split(',').filter(|x| !x.is_empty()).count());
        }
        let labels = ours.iter().filter(|l| l.ends_with("DataChannel")).count();
        assert!(
            records > 80 && labels >= 2,
            "{name}: {records} records, {labels} labels"
        );
        eprintln!("{name}: {records} DTLS records and {labels} DCEP labels agree with tshark");
    }
}

/// `flows` writes a NetherNet flow: its roles, DTLS suite, channels, the
/// messages each application received, who closed it and the player;
/// without keys, what the capture shows in the clear.
#[test]
fn flows_show_a_nethernet_join() {
    let truth = truth("nethernet-join");
    let received = |side: &str| {
        truth
            .iter()
            .filter(|r| r["type"] == "message" && r["side"] == side && r["event"] == "received")
            .count() as u64
    };
    let pcap = sample("nethernet-join.pcap");
    let keylog = sample("nethernet-join.keylog");
    let (records, _) = records(&[
        "flows",
        pcap.to_str().unwrap(),
        "--json",
        "--tls-keylog",
        keylog.to_str().unwrap(),
    ]);
    assert_eq!(records.len(), 1);
    let f = &records[0];
    assert_eq!(f["transport"], "nethernet");
    assert_eq!(
        f["dtls"]["suite"],
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
    );
    assert_eq!(f["dtls"]["decrypted"], true);
    assert_eq!(
        f["channels"],
        serde_json::json!(["ReliableDataChannel", "UnreliableDataChannel"])
    );
    assert_eq!(f["c2s"]["messages"], received("server"));
    assert_eq!(f["s2c"]["messages"], received("client"));
    assert_eq!(f["game"]["player"], "Steve");
    // The server's close_notify ends it; the DTLS client is the server
    // (aiortc's answerer).
    assert_eq!(f["state"], "disconnected_by_server");
    assert_eq!(f["dtls"]["client"], f["server"]);
    // Without keys: connected (sealed records both ways), nothing inside.
    let out = common::bin()
        .args(["flows", pcap.to_str().unwrap(), "--json"])
        .env_remove("SSLKEYLOGFILE")
        .output()
        .unwrap();
    let f: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(f["state"], "connected");
    assert_eq!(f["dtls"]["decrypted"], false);
    assert_eq!(f["c2s"]["messages"], 0);
    assert!(f["c2s"]["encrypted"].as_u64().unwrap() > 10);
}

/// `samples/NAME.pcap` with only the frames `keep` says yes to (1-based),
/// written to `dir`: a join whose later datagrams never arrived.
fn cut(name: &str, dir: &common::TempDir, keep: impl Fn(u64) -> bool) -> std::path::PathBuf {
    let bytes = std::fs::read(sample(&format!("{name}.pcap"))).unwrap();
    // A little-endian classic pcap (what tcpdump wrote).
    assert_eq!(bytes[..4], [0xd4, 0xc3, 0xb2, 0xa1]);
    let mut out = bytes[..24].to_vec();
    let (mut at, mut frame) = (24, 0);
    while at + 16 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        frame += 1;
        if keep(frame) {
            out.extend_from_slice(&bytes[at..at + 16 + len]);
        }
        at += 16 + len;
    }
    let path = dir.path().join(format!("{name}-cut.pcap"));
    std::fs::write(&path, out).unwrap();
    path
}

/// `handshake` on a NetherNet join: connected, with its steps in order
/// and the game login after it; cut where a failing join stops (no STUN
/// answer, no DTLS answer, DTLS unfinished, SCTP not up, no channel),
/// each with its outcome and a diagnosis in words.
#[test]
fn handshake_says_where_a_join_stopped() {
    let keylog = sample("nethernet-join.keylog");
    let k = keylog.to_str().unwrap();
    let join = sample("nethernet-join.pcap");
    let (joined, _) = records(&[
        "handshake",
        join.to_str().unwrap(),
        "--json",
        "--tls-keylog",
        k,
    ]);
    assert_eq!(joined.len(), 1);
    let h = &joined[0];
    assert_eq!(
        (&h["transport"], &h["outcome"]),
        (&"nethernet".into(), &"connected".into())
    );
    let steps: Vec<&str> = h["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    let order = [
        "stun_request",
        "stun_response",
        "client_hello",
        "server_hello",
        "sctp_init",
        "sctp_cookie_ack",
        "channel_open",
        "close_notify",
    ];
    let at = |s: &str| {
        steps
            .iter()
            .position(|x| *x == s)
            .unwrap_or_else(|| panic!("{s}: {steps:?}"))
    };
    assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{steps:?}");
    assert!(
        h["game"]
            .as_str()
            .unwrap()
            .contains("set_local_player_as_initialized"),
        "{h}"
    );
    // The frames of the sample where each stage begins (`read` shows
    // them): STUN answers 22 and 24, the ClientHello 25, the ServerHello
    // 26, SCTP's INIT 29, COOKIE ACK 35, the channels 36 and 37.
    let dir = common::TempDir::new("nethernet-cut");
    for (keep, outcome, words) in [
        (
            &(|f: u64| f <= 23 && f != 22) as &dyn Fn(u64) -> bool,
            "no_stun_answer",
            "no candidate pair is reachable",
        ),
        (&|f| f <= 25, "dtls_unanswered", "never answered"),
        (&|f| f <= 26, "dtls_incomplete", "did not finish"),
        (&|f| f <= 33, "sctp_not_established", "COOKIE ACK"),
        (&|f| f <= 35, "channel_not_opened", "no data channel"),
    ] {
        let path = cut("nethernet-join", &dir, keep);
        let (cut, _) = records(&[
            "handshake",
            path.to_str().unwrap(),
            "--json",
            "--tls-keylog",
            k,
        ]);
        assert_eq!(cut.len(), 1, "{outcome}");
        assert_eq!(cut[0]["outcome"], outcome, "{}", cut[0]);
        let diagnosis = cut[0]["diagnosis"].as_str().unwrap();
        assert!(diagnosis.contains(words), "{outcome}: {diagnosis}");
    }
}

/// The signaling: `read` shows the status request, the offer and the
/// answer as the peers sent them; `handshake` puts them first in the
/// join's timeline; and a server without a NetherNet endpoint (Python's
/// http.server, a real one, answering 404) is said to have none.
#[test]
fn the_signaling_is_read_and_a_missing_endpoint_said() {
    let truth = truth("nethernet-join");
    let pcap = sample("nethernet-join.pcap");
    let (segments, _) = records(&[pcap.to_str().unwrap(), "--json", "-Y", "http"]);
    let http: Vec<&Value> = segments
        .iter()
        .flat_map(|r| r["http"].as_array().unwrap())
        .collect();
    // What the client sent and received, in order: GET, 200, POST, 200.
    let want: Vec<(Option<&str>, Option<u64>)> = truth
        .iter()
        .filter(|r| r["type"] == "http" && r["side"] == "client")
        .flat_map(|r| {
            // A record per exchange the client made: its request, then
            // the status it got.
            let mut v = Vec::new();
            if let Some(m) = r["method"].as_str() {
                v.push((Some(m), None));
            }
            if let Some(status) = r["status"].as_u64() {
                v.push((None, Some(status)));
            }
            v
        })
        .collect();
    let got: Vec<(Option<&str>, Option<u64>)> = http
        .iter()
        .map(|h| (h["method"].as_str(), h["status"].as_u64()))
        .collect();
    assert_eq!(got, want);
    // The offer's and the answer's ICE credentials, as the checks carry them.
    let ufrags: Vec<&str> = http
        .iter()
        .filter_map(|h| h["ice_ufrag"].as_str())
        .collect();
    assert_eq!(ufrags.len(), 2);
    let (checks, _) = records(&[pcap.to_str().unwrap(), "--json", "-Y", "stun.username"]);
    let user = checks[0]["stun"]["username"].as_str().unwrap();
    assert!(ufrags.iter().all(|u| user.contains(u)), "{user} {ufrags:?}");
    let (joins, _) = records(&["handshake", pcap.to_str().unwrap(), "--json"]);
    assert_eq!(joins.len(), 1);
    let steps: Vec<&str> = joins[0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps[..5],
        [
            "join_status_request",
            "join_status",
            "offer",
            "answer",
            "stun_request"
        ]
    );
    // No endpoint.
    let none = sample("nethernet-no-endpoint.pcap");
    let (joins, stderr) = records(&["handshake", none.to_str().unwrap(), "--json"]);
    assert_eq!(joins.len(), 1);
    assert_eq!(joins[0]["outcome"], "no_nethernet_endpoint");
    assert!(
        joins[0]["diagnosis"].as_str().unwrap().contains("404"),
        "{}",
        joins[0]
    );
    assert!(!stderr.contains("no RakNet packets"), "{stderr}");
    // An offer refused (aiortc's server run with --refuse-offer: 403).
    let refused = sample("nethernet-refused.pcap");
    let (joins, _) = records(&["handshake", refused.to_str().unwrap(), "--json"]);
    assert_eq!(joins.len(), 1);
    assert_eq!(joins[0]["outcome"], "offer_refused");
    assert!(
        joins[0]["diagnosis"].as_str().unwrap().contains("403"),
        "{}",
        joins[0]
    );
    let steps: Vec<&str> = joins[0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        ["join_status_request", "join_status", "offer", "answer"]
    );
}

/// The SDP the truth's `side` recorded of `kind` (offer or answer).
fn truth_sdp(truth: &[Value], side: &str, kind: &str) -> String {
    truth
        .iter()
        .find(|r| r["type"] == "sdp" && r["side"] == side && r["kind"] == kind)
        .and_then(|r| r["sdp"].as_str())
        .unwrap_or_else(|| panic!("no {kind} recorded by the {side}"))
        .to_string()
}

/// An SDP's lines that start with `prefix`, the prefix cut off.
fn sdp_values<'a>(sdp: &'a str, prefix: &str) -> Vec<&'a str> {
    sdp.lines()
        .filter_map(|l| l.trim_end().strip_prefix(prefix))
        .collect()
}

/// Joins made to fail on purpose, each with aiortc (nethernet_peers.py
/// --fault): the outcome and the diagnosis say what the fault was, with
/// the addresses, certificates and codes of the capture.
#[test]
fn handshake_diagnoses_failed_joins() {
    // Unreachable candidates: each side's checks go to a port nobody
    // listens on; the client's, to the answer's candidate.
    let truth_u = truth("nethernet-unreachable");
    assert!(truth_u
        .iter()
        .any(|r| r["type"] == "result" && r["side"] == "client" && r["ok"] == false));
    let answer = truth_sdp(&truth_u, "client", "answer");
    let cand = sdp_values(&answer, "a=candidate:");
    assert_eq!(cand.len(), 1, "{answer}");
    let f: Vec<&str> = cand[0].split_whitespace().collect();
    let dead = format!("{}:{}", f[4], f[5]);
    let pcap = sample("nethernet-unreachable.pcap");
    let (joins, _) = records(&["handshake", pcap.to_str().unwrap(), "--json"]);
    assert_eq!(joins.len(), 1, "{joins:?}");
    assert_eq!(joins[0]["outcome"], "no_stun_answer", "{}", joins[0]);
    let d = joins[0]["diagnosis"].as_str().unwrap();
    assert!(
        d.contains(&format!("to {dead} (a candidate of the answer)")),
        "{d}"
    );
    assert!(
        d.contains("from the client") && d.contains("from the server"),
        "{d}"
    );
    // Both conversations' checks are the join's steps.
    let requests = joins[0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["step"] == "stun_request")
        .count();
    assert_eq!(requests, 2, "{}", joins[0]);

    // A fingerprint in the answer that is not the server's certificate:
    // the handshake completes, the client's aiortc stops there.
    let truth_f = truth("nethernet-fingerprint");
    let answer = truth_sdp(&truth_f, "client", "answer");
    let said = sdp_values(&answer, "a=fingerprint:sha-256 ")[0].to_string();
    let pcap = sample("nethernet-fingerprint.pcap");
    let k = sample("nethernet-fingerprint.keylog");
    for keys in [false, true] {
        let mut args = vec!["handshake", pcap.to_str().unwrap(), "--json"];
        if keys {
            args.extend(["--tls-keylog", k.to_str().unwrap()]);
        }
        let (joins, _) = records(&args);
        assert_eq!(joins.len(), 1, "{joins:?}");
        assert_eq!(joins[0]["outcome"], "fingerprint_mismatch", "{}", joins[0]);
        let d = joins[0]["diagnosis"].as_str().unwrap();
        assert!(
            d.contains(&format!("the answer's a=fingerprint says {said}")),
            "{d}"
        );
        assert!(d.starts_with("the server's DTLS certificate"), "{d}");
        // What the certificate really hashes to: the step that shows it,
        // which is not the SDP's, and differs in the byte changed.
        let got = joins[0]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["step"] == "certificate_fingerprint" && s["dir"] == "s2c")
            .and_then(|s| s["detail"].as_str())
            .unwrap()
            .to_string();
        assert_ne!(got, said);
        assert_eq!(got[..got.len() - 2], said[..said.len() - 2]);
    }
    // With the key, the reason is on the wire: the server's SCTP INIT, never
    // answered.
    let (packets, _) = records(&[
        pcap.to_str().unwrap(),
        "--json",
        "--tls-keylog",
        k.to_str().unwrap(),
        "-Y",
        "sctp",
    ]);
    let kinds: Vec<&str> = packets
        .iter()
        .flat_map(|p| p["sctp"].as_array().unwrap())
        .map(|c| c["chunk"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["INIT", "INIT", "ABORT"]);

    // No shared cipher suite: the DTLS server (the client here) sends a
    // fatal handshake_failure in the clear.
    let pcap = sample("nethernet-alert.pcap");
    let (joins, _) = records(&["handshake", pcap.to_str().unwrap(), "--json"]);
    assert_eq!(joins[0]["outcome"], "dtls_alert", "{}", joins[0]);
    let d = joins[0]["diagnosis"].as_str().unwrap();
    assert!(
        d.starts_with("the client (") && d.contains("handshake_failure"),
        "{d}"
    );
    let client = truth("nethernet-alert");
    assert!(client
        .iter()
        .any(|r| r["type"] == "fault" && r["side"] == "client" && r["fault"] == "ciphers"));

    // An answer whose ice-pwd is not the server's: the client's checks
    // verify with it, and the server answers them 401.
    let pcap = sample("nethernet-ice-pwd.pcap");
    let (joins, _) = records(&["handshake", pcap.to_str().unwrap(), "--json"]);
    assert_eq!(joins[0]["outcome"], "stun_error", "{}", joins[0]);
    let d = joins[0]["diagnosis"].as_str().unwrap();
    assert!(
        d.contains("401") && d.contains("verifies with the answer's ice-pwd"),
        "{d}"
    );

    // An answer whose identity assertion does not sign its fingerprints:
    // the client's check fails (InvalidSignature), it never checks a pair.
    let truth_i = truth("nethernet-identity");
    assert!(truth_i.iter().any(|r| r["type"] == "result"
        && r["side"] == "client"
        && r["error"].as_str().unwrap().contains("InvalidSignature")));
    let pcap = sample("nethernet-identity.pcap");
    let (joins, _) = records(&["handshake", pcap.to_str().unwrap(), "--json"]);
    assert_eq!(joins.len(), 1, "{joins:?}");
    assert_eq!(joins[0]["outcome"], "identity_unverified", "{}", joins[0]);
    let (http, _) = records(&[pcap.to_str().unwrap(), "--json", "-Y", "http.identity"]);
    let ids: Vec<&Value> = http
        .iter()
        .flat_map(|r| r["http"].as_array().unwrap())
        .filter_map(|h| h.get("identity"))
        .collect();
    // The offer's verifies and names the player; the answer's does not.
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert_eq!(ids[0]["name"], "Steve");
    assert_eq!(ids[0]["fingerprints_verify"], true);
    assert_eq!(ids[1]["fingerprints_verify"], false);
    assert_eq!(ids[1]["self_signed"], true, "the token itself is intact");
}

/// MESSAGE-INTEGRITY, keyed with the ice-pwd of the SDPs the signaling
/// carried, verifies on every check and success answer aiortc sent.
#[test]
fn stun_integrity_is_checked_against_the_sdp() {
    for name in ["nethernet-join", "nethernet-fingerprint"] {
        let pcap = sample(&format!("{name}.pcap"));
        let (stun, _) = records(&[pcap.to_str().unwrap(), "--json", "-Y", "stun"]);
        assert!(stun.len() >= 4, "{name}");
        for s in &stun {
            let class = s["stun"]["class"].as_str().unwrap();
            if class == "request" || class == "success response" {
                assert_eq!(s["stun"]["integrity_ok"], true, "{name}: {s}");
            }
        }
    }
    // Without the signaling (the UDP alone), nothing to check it with:
    // no integrity_ok.
    let pcap = sample("nethernet-join.pcap");
    let (all, _) = records(&[pcap.to_str().unwrap(), "--json"]);
    let udp: std::collections::HashSet<u64> = all
        .iter()
        .filter(|r| r["kind"] != "http")
        .map(|r| r["frame"].as_u64().unwrap())
        .collect();
    let dir = common::TempDir::new("nethernet-no-signaling");
    let alone = cut("nethernet-join", &dir, |f| udp.contains(&f));
    let (stun, _) = records(&[alone.to_str().unwrap(), "--json", "-Y", "stun"]);
    assert_eq!(stun.len(), 4);
    assert!(
        stun.iter().all(|s| s["stun"].get("integrity_ok").is_none()),
        "{stun:?}"
    );
}

/// The texts of an SVG's elements of `class` (`<text class="...">TEXT<`),
/// unescaped.
fn svg_texts(svg: &str, class: &str) -> Vec<String> {
    let open = format!("class=\"{class}\"");
    svg.match_indices(&open)
        .map(|(i, _)| {
            let rest = &svg[i..];
            let start = rest.find('>').unwrap() + 1;
            let end = rest[start..].find('<').unwrap() + start;
            rest[start..end]
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&amp;", "&")
        })
        .collect()
}

/// `handshake --svg`: the ladder diagram has a block per attempt the
/// records show, a label per step in the records' order, and the failing
/// step (the one the diagnosis names) alone in red; RakNet attempts alike.
/// `--svg -` writes the picture alone on standard output; the capture
/// itself is never overwritten.
#[test]
fn handshake_draws_a_ladder_diagram() {
    let dir = common::TempDir::new("nethernet-ladder");
    for (name, failed) in [
        ("nethernet-fingerprint", Some("certificate_fingerprint")),
        ("nethernet-alert", Some("alert")),
        ("nethernet-ice-pwd", Some("stun_error")),
        ("nethernet-join", None),
        ("server-full", Some("refused")),
    ] {
        let pcap = sample(&format!("{name}.pcap"));
        let svg_path = dir.path().join(format!("{name}.svg"));
        let (joins, _) = records(&[
            "handshake",
            pcap.to_str().unwrap(),
            "--json",
            "--svg",
            svg_path.to_str().unwrap(),
        ]);
        let svg = std::fs::read_to_string(&svg_path).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(
            svg.matches("<g class=\"attempt\"").count(),
            joins.len(),
            "{name}"
        );
        let labels: Vec<String> = svg_texts(&svg, "step")
            .into_iter()
            .chain(svg_texts(&svg, "step failed"))
            .collect();
        let steps: Vec<&Value> = joins
            .iter()
            .flat_map(|j| j["steps"].as_array().unwrap())
            .collect();
        assert_eq!(labels.len(), steps.len(), "{name}");
        let red = svg_texts(&svg, "step failed");
        match failed {
            None => assert!(red.is_empty(), "{name}: {red:?}"),
            Some(step) => {
                assert_eq!(red.len(), 1, "{name}: {red:?}");
                assert!(red[0].starts_with(step), "{name}: {red:?}");
            }
        }
        // The outcome and the diagnosis under the steps.
        let verdict = svg_texts(&svg, "outcome").join(" ");
        let last = joins.last().unwrap();
        assert!(
            verdict.contains(last["outcome"].as_str().unwrap()),
            "{name}: {verdict}"
        );
    }
    // The mismatched certificate is the one in red: the server's.
    let svg = std::fs::read_to_string(dir.path().join("nethernet-fingerprint.svg")).unwrap();
    let red = svg_texts(&svg, "step failed");
    let truth_f = truth("nethernet-fingerprint");
    let said = sdp_values(
        &truth_sdp(&truth_f, "client", "answer"),
        "a=fingerprint:sha-256 ",
    )[0]
    .to_string();
    assert!(red[0].contains(&said[..20]), "{red:?}");
    // -: the SVG alone on standard output.
    let pcap = sample("nethernet-alert.pcap");
    let o = common::run_bin(&["handshake", pcap.to_str().unwrap(), "--svg", "-"]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.starts_with("<svg") && !text.contains("flow 3 attempt 1  "),
        "{text}"
    );
    // Never over the capture.
    let o = common::run_bin(&[
        "handshake",
        pcap.to_str().unwrap(),
        "--svg",
        pcap.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(std::fs::read(&pcap)
        .unwrap()
        .starts_with(&[0xd4, 0xc3, 0xb2, 0xa1]));
}

/// The truth file at `path`.
fn truth_at(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A join made now, not the samples': aiortc peers (the version `.ci/run`
/// installs) run by scripts/nethernet-capture.sh under tcpdump, a clean
/// join and one with a fingerprint that does not match. What the peers
/// recorded is what `game`, `messages` and `handshake` must show. Needs
/// root, tcpdump and a Python with aiortc (skipped otherwise, failed in
/// CI).
#[test]
fn a_join_made_now_reads_as_its_peers_saw_it() {
    if !common::require_root() || !common::require_tool("tcpdump") {
        return;
    }
    let Some(py) = common::aiortc_python() else {
        common::skip_or_fail("no Python with aiortc (target/venv/bin/pip install aiortc==1.16.0)");
        return;
    };
    let dir = common::TempDir::new("nethernet-now");
    let capture = |env: &[(&str, &str)], port: &str| {
        let o = common::run_with_timeout(
            std::process::Command::new(common::root().join("scripts/nethernet-capture.sh"))
                .args([dir.path().to_str().unwrap(), port])
                .env("NETHERNET_PYTHON", &py)
                .envs(env.iter().copied()),
            std::time::Duration::from_secs(90),
        );
        assert!(
            o.status.success(),
            "nethernet-capture.sh {env:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    capture(&[("SEGMENT", "1500"), ("MAX_PACKETS", "30")], "19860");
    let base = dir.path().join("nethernet-join");
    let (pcap, keylog) = (base.with_extension("pcap"), base.with_extension("keylog"));
    let truth = truth_at(&base.with_extension("truth.jsonl"));
    game_equals_truth("a join made now", &pcap, &keylog, &truth, 1);
    let (joins, _) = records(&[
        "handshake",
        pcap.to_str().unwrap(),
        "--json",
        "--tls-keylog",
        keylog.to_str().unwrap(),
    ]);
    let joins: Vec<&Value> = joins
        .iter()
        .filter(|j| j["transport"] == "nethernet")
        .collect();
    assert_eq!(joins.len(), 1);
    assert_eq!(joins[0]["outcome"], "connected", "{}", joins[0]);
    // The client is the offerer (the truth's client), whoever checked first.
    let client_port = truth
        .iter()
        .find(|r| r["type"] == "dtls" && r["side"] == "client")
        .and_then(|r| r["local_address"][1].as_u64())
        .unwrap();
    assert!(
        joins[0]["client"]
            .as_str()
            .unwrap()
            .ends_with(&format!(":{client_port}")),
        "{} vs {client_port}",
        joins[0]
    );
    capture(&[("FAULT", "fingerprint")], "19870");
    let pcap = dir.path().join("nethernet-fingerprint.pcap");
    let (joins, _) = records(&["handshake", pcap.to_str().unwrap(), "--json"]);
    let join = joins
        .iter()
        .find(|j| j["transport"] == "nethernet")
        .unwrap();
    assert_eq!(join["outcome"], "fingerprint_mismatch", "{join}");
}

/// What scripts/chromium-capture.sh needs (root, tcpdump, unshare,
/// aiortc's Python, Chromium): that Python, or why not (skipped).
fn chromium_ready() -> Option<String> {
    if !common::require_root()
        || !common::require_tool("tcpdump")
        || !common::require_tool("unshare")
    {
        return None;
    }
    let Some(py) = common::aiortc_python() else {
        common::skip_or_fail("no Python with aiortc (target/venv/bin/pip install aiortc==1.16.0)");
        return None;
    };
    if !std::path::Path::new("/usr/lib/chromium/chromium").exists() {
        common::skip_or_fail("no Chromium (apt-get install -y chromium)");
        return None;
    }
    Some(py)
}

/// A join made now by a second WebRTC stack: headless Chromium (libwebrtc,
/// BoringSSL, dcsctp) as the client of the aiortc server, run by
/// scripts/chromium-capture.sh in a network namespace that has only lo.
/// What the page and the server recorded is what `game` and `messages`
/// must show; the join is `connected`, with Chromium the client. Needs
/// root, tcpdump, unshare, aiortc and Chromium (skipped otherwise, failed
/// in CI).
#[test]
fn a_chromium_join_made_now_reads_as_its_peers_saw_it() {
    let Some(py) = chromium_ready() else {
        return;
    };
    let dir = common::TempDir::new("nethernet-chromium-now");
    let o = common::run_with_timeout(
        std::process::Command::new(common::root().join("scripts/chromium-capture.sh"))
            .args([dir.path().to_str().unwrap(), "19900"])
            .env("NETHERNET_PYTHON", &py)
            .env("SEGMENT", "1500"),
        std::time::Duration::from_secs(120),
    );
    assert!(
        o.status.success(),
        "chromium-capture.sh: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let base = dir.path().join("nethernet-chromium");
    let (pcap, keylog) = (base.with_extension("pcap"), base.with_extension("keylog"));
    let truth = truth_at(&base.with_extension("truth.jsonl"));
    game_equals_truth("a Chromium join made now", &pcap, &keylog, &truth, 1);
    let (joins, _) = records(&["handshake", pcap.to_str().unwrap(), "--json"]);
    let joins: Vec<&Value> = joins
        .iter()
        .filter(|j| j["transport"] == "nethernet")
        .collect();
    assert_eq!(joins.len(), 1);
    assert_eq!(joins[0]["outcome"], "connected", "{}", joins[0]);
    // The client is Chromium: the port of the page's ICE candidate.
    let sdp = truth_sdp(&truth, "client", "offer");
    let candidate = sdp_values(&sdp, "a=candidate:")
        .into_iter()
        .find(|c| c.contains(" udp ") || c.contains(" UDP "))
        .unwrap_or_else(|| panic!("no UDP candidate in the offer: {sdp}"));
    let port = candidate.split_whitespace().nth(5).unwrap();
    assert!(
        joins[0]["client"]
            .as_str()
            .unwrap()
            .ends_with(&format!(":{port}")),
        "{} vs {candidate}",
        joins[0]
    );
}

/// Issue 28: libwebrtc, the game client's own WebRTC stack, joins our
/// server. Headless Chromium runs scripts/chromium_page.html against `serve
/// --bedrock --nethernet` (scripts/chromium-capture.sh with OURS, in a
/// network namespace that has only lo): the page plays bedrock-protocol's
/// recorded client by what our server sends, logs in and spawns. Our
/// server says `joined` and `spawned`; our key log opens the capture in
/// `game` with nothing opaque, and its packets each way are, byte for byte
/// and in order, those the page sent and received on the reliable channel.
#[test]
fn chromium_joins_our_server_and_spawns() {
    let Some(py) = chromium_ready() else {
        return;
    };
    let dir = common::TempDir::new("nethernet-chromium-ours");
    let o = common::run_with_timeout(
        std::process::Command::new(common::root().join("scripts/chromium-capture.sh"))
            .args([dir.path().to_str().unwrap(), "19940"])
            .env("NETHERNET_PYTHON", &py)
            .env("OURS", common::bin_path())
            .env("SEGMENT", "1500"),
        std::time::Duration::from_secs(120),
    );
    assert!(
        o.status.success(),
        "chromium-capture.sh: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let base = dir.path().join("nethernet-chromium");
    let (pcap, keylog) = (base.with_extension("pcap"), base.with_extension("keylog"));
    let ours = ndjson(&std::fs::read(base.with_extension("server.jsonl")).unwrap());
    let joined: Vec<&Value> = ours.iter().filter(|r| r["type"] == "joined").collect();
    assert_eq!(joined.len(), 1, "{ours:?}");
    println!("Chromium joined: {}", joined[0]);
    let events: Vec<&str> = ours.iter().filter_map(|r| r["event"].as_str()).collect();
    assert!(events.contains(&"spawned"), "{events:?}");
    let truth = truth_at(&base.with_extension("truth.jsonl"));
    let page = |event: &str| -> Vec<String> {
        truth
            .iter()
            .filter(|r| {
                r["type"] == "packet"
                    && r["side"] == "client"
                    && r["event"] == event
                    && r["label"] == "ReliableDataChannel"
            })
            .map(|r| r["hex"].as_str().unwrap().to_string())
            .collect()
    };
    let (records, _) = records(&[
        "game",
        pcap.to_str().unwrap(),
        "--json",
        "--tls-keylog",
        keylog.to_str().unwrap(),
    ]);
    assert!(
        records.iter().all(|r| r["type"] == "game"),
        "every batch decrypts"
    );
    let shown = |dir: &str| -> Vec<String> {
        records
            .iter()
            .filter(|r| r["dir"] == dir)
            .map(|r| r["data"].as_str().unwrap().to_string())
            .collect()
    };
    let (sent, received) = (page("sent"), page("received"));
    assert!(
        sent.len() >= 5 && received.len() >= 8,
        "{sent:?} {received:?}"
    );
    assert_eq!(shown("c2s"), sent, "what the page sent");
    // Our server may go on after the spawn; the page stops reading there.
    let s2c = shown("s2c");
    assert_eq!(&s2c[..received.len().min(s2c.len())], &received[..]);
    // And what our server's game read is what the page sent.
    let c2s = ours
        .iter()
        .filter(|r| r["type"] == "game" && r["dir"] == "c2s")
        .count();
    assert_eq!(c2s, sent.len());
}

/// `-V` on NetherNet: a tree with byte offsets into the payload. Every
/// datagram's DTLS records follow each other to its last byte (each
/// header's offset plus 13 plus its length is the next's), a STUN
/// message's attributes end where it does, MESSAGE-INTEGRITY is said to
/// verify with the SDP's ice-pwd; `-x` dumps the payload; `-c` counts
/// NetherNet's datagrams and segments as tshark counts frames.
#[test]
fn verbose_trees_and_hex_of_nethernet() {
    let pcap = sample("nethernet-join.pcap");
    let k = sample("nethernet-join.keylog");
    let out = run_bin(&[
        pcap.to_str().unwrap(),
        "-V",
        "--tls-keylog",
        k.to_str().unwrap(),
        "-Y",
        "kind == dtls",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut datagrams = 0;
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let payload: usize = block
            .lines()
            .find_map(|l| {
                l.split(", ")
                    .last()?
                    .strip_suffix(" bytes of payload")?
                    .parse()
                    .ok()
            })
            .unwrap_or_else(|| panic!("{block}"));
        let field = |name: &str| -> Vec<(usize, String)> {
            block
                .lines()
                .filter_map(|l| {
                    let (head, value) = l.split_once(&format!(" {name}: "))?;
                    let at = head.split_whitespace().next()?.parse().ok()?;
                    Some((at, value.to_string()))
                })
                .collect()
        };
        let (types, lengths) = (field("content type"), field("length"));
        assert!(!types.is_empty() && types.len() == lengths.len(), "{block}");
        let mut next = 0;
        for ((at, _), (_, len)) in types.iter().zip(&lengths) {
            assert_eq!(*at, next, "{block}");
            next = at + 13 + len.parse::<usize>().unwrap();
        }
        assert_eq!(next, payload, "{block}");
        datagrams += 1;
    }
    assert_eq!(datagrams, 84, "every DTLS datagram has its tree");
    assert!(
        text.contains("SCTP (decrypted)")
            && text.contains("DCEP DATA_CHANNEL_OPEN: ReliableDataChannel")
    );
    assert!(
        text.contains("handshake: certificate, message 1, 110 bytes, fragment at 0 of 350"),
        "{text}"
    );
    // A STUN check.
    let out = run_bin(&[pcap.to_str().unwrap(), "-V", "-x", "-Y", "frame == 19"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("      0    2     type: 0x0001 Binding request"),
        "{text}"
    );
    assert!(
        text.contains("     20   13       USERNAME: yJtn:eIan"),
        "{text}"
    );
    assert!(text.contains("(verifies with the SDP's ice-pwd)"), "{text}");
    assert!(
        text.contains("     84    8       FINGERPRINT: ") && text.contains("(holds)"),
        "{text}"
    );
    assert!(text.contains("  0000  00 01 00 48 21 12 a4 42"), "{text}");
    // -c: the first five frames that are read, signaling included.
    let out = run_bin(&[pcap.to_str().unwrap(), "-c", "5"]);
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 5);
}

/// `export` on a NetherNet capture: each table holds the rows the command
/// prints as records (packets, messages, flows, handshakes, game), with
/// NetherNet's own columns, as DuckDB reads them. Needs a Python with
/// duckdb (`.ci/run` installs it).
#[test]
fn export_writes_nethernet_tables() {
    let Some(py) = common::duckdb_python() else {
        common::skip_or_fail("no Python with duckdb (pip install duckdb)");
        return;
    };
    let pcap = sample("nethernet-join.pcap");
    let k = sample("nethernet-join.keylog");
    let (p, k) = (pcap.to_str().unwrap(), k.to_str().unwrap());
    let dir = common::TempDir::new("nethernet-export");
    let out = dir.path().join("tables");
    let o = run_bin(&["export", p, "--tls-keylog", k, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let query = |sql: &str| -> String {
        let o = std::process::Command::new(&py)
            .args([
                "-c",
                &format!("import duckdb; print(duckdb.sql({sql:?}).fetchall())"),
            ])
            .current_dir(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap().trim().to_string()
    };
    for (table, args) in [
        ("packets", vec![p, "--json", "--tls-keylog", k]),
        ("messages", vec!["messages", p, "--json", "--tls-keylog", k]),
        ("game", vec!["game", p, "--json", "--tls-keylog", k]),
        ("flows", vec!["flows", p, "--json", "--tls-keylog", k]),
        (
            "handshakes",
            vec!["handshake", p, "--json", "--tls-keylog", k],
        ),
    ] {
        let (want, _) = records(&args);
        let got = query(&format!("select count(*) from '{table}.parquet'"));
        assert_eq!(got, format!("[({},)]", want.len()), "{table}");
    }
    assert_eq!(
        query("select count(*) from 'packets.parquet' where transport = 'nethernet' and \"stun.integrity_ok\""),
        "[(4,)]"
    );
    assert_eq!(
        query("select outcome from 'handshakes.parquet'"),
        "[('connected',)]"
    );
    assert_eq!(
        query("select count(*) from 'messages.parquet' where label = 'ReliableDataChannel'"),
        "[(20,)]"
    );
}

/// `stats` on NetherNet: the messages each data channel delivered, by
/// label and direction, and the game packets by name, are what each
/// application received (the truth of the aiortc join).
#[test]
fn stats_count_what_each_application_received() {
    let truth = truth("nethernet-join");
    let pcap = sample("nethernet-join.pcap");
    let k = sample("nethernet-join.keylog");
    let (stats, _) = records(&[
        "stats",
        pcap.to_str().unwrap(),
        "--tls-keylog",
        k.to_str().unwrap(),
        "--json",
    ]);
    // c2s: what the server received; s2c: the client.
    let count = |kind: &str, side: &str, key: &str, value: &str| {
        truth
            .iter()
            .filter(|r| {
                r["type"] == kind
                    && r["event"] == "received"
                    && r["side"] == side
                    && r[key] == value
            })
            .count() as u64
    };
    let labels: Vec<&Value> = stats
        .iter()
        .filter(|r| r["type"] == "stats_data_channel")
        .collect();
    assert_eq!(labels.len(), 2, "{stats:?}");
    for l in &labels {
        let label = l["label"].as_str().unwrap();
        assert_eq!(
            l["c2s"]["messages"],
            count("message", "server", "label", label),
            "{label}"
        );
        assert_eq!(
            l["s2c"]["messages"],
            count("message", "client", "label", label),
            "{label}"
        );
    }
    let games: Vec<&Value> = stats.iter().filter(|r| r["type"] == "stats_game").collect();
    assert!(games.len() > 10);
    for g in games {
        let name = g["name"].as_str().unwrap();
        assert_eq!(g["c2s"], count("packet", "server", "name", name), "{name}");
        assert_eq!(g["s2c"], count("packet", "client", "name", name), "{name}");
    }
}

/// `-w` keeps NetherNet: the datagrams and signaling segments `read`
/// shows (here all, and a filtered few) are written, and the file reads
/// back to the same records (frame numbers aside), tshark too.
#[test]
fn write_keeps_nethernet() {
    let pcap = sample("nethernet-join.pcap");
    let k = sample("nethernet-join.keylog");
    let (p, k) = (pcap.to_str().unwrap(), k.to_str().unwrap());
    let dir = common::TempDir::new("nethernet-write");
    let strip = |mut v: Vec<Value>| -> Vec<Value> {
        for r in &mut v {
            r.as_object_mut().unwrap().remove("frame");
        }
        v
    };
    for filter in ["transport == nethernet", "kind == stun || http"] {
        let out = dir.path().join("w.pcapng");
        let o = run_bin(&[p, "-Y", filter, "-w", out.to_str().unwrap(), "-q"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let (want, _) = records(&[p, "--json", "--tls-keylog", k, "-Y", filter]);
        let (got, _) = records(&[out.to_str().unwrap(), "--json", "--tls-keylog", k]);
        assert!(want.len() >= 4);
        assert_eq!(strip(got), strip(want), "{filter}");
    }
}

/// A pcapng's Decryption Secrets Block opens the records with no key
/// argument: one `editcap --inject-secrets` wrote (Wireshark's tool), and
/// the one `read -w` writes before the records its key log opened, which
/// tshark reads too.
#[test]
fn pcapng_secrets_open_the_records() {
    let pcap = sample("nethernet-join.pcap");
    let k = sample("nethernet-join.keylog");
    let (p, k) = (pcap.to_str().unwrap(), k.to_str().unwrap());
    let dir = common::TempDir::new("nethernet-secrets");
    let game = |file: &str, more: &[&str]| -> Vec<Value> {
        let out = common::bin()
            .args(["game", file, "--json"])
            .args(more)
            .env_remove("SSLKEYLOGFILE")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let keyed = game(p, &["--tls-keylog", k]);
    assert!(keyed.len() > 20, "{} packets", keyed.len());
    assert!(game(p, &[]).is_empty());
    let strip = |v: &[Value]| -> Vec<Value> {
        let mut v = v.to_vec();
        for r in &mut v {
            r.as_object_mut().unwrap().remove("frame");
        }
        v
    };
    let written = dir.path().join("w.pcapng");
    let w = written.to_str().unwrap();
    let o = run_bin(&[p, "--tls-keylog", k, "-w", w, "-q"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(strip(&game(w, &[])), strip(&keyed), "read -w's secrets");
    if common::require_tool("tshark") && common::require_tool("openssl") {
        // tshark with the block alone decrypts what it decrypts with the
        // key log (SCTP DATA chunks: frames with a PPID).
        let pem = common::any_pem(&dir);
        let data = |file: &str, more: &[String]| -> usize {
            let o = std::process::Command::new("tshark")
                .args(["-r", file, "-Y", "sctp.data_payload_proto_id"])
                .args(["-o", &common::dtls_keys_list(file, &pem)])
                .args(more)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            String::from_utf8_lossy(&o.stdout).lines().count()
        };
        let with_log = data(p, &["-o".into(), format!("tls.keylog_file:{k}")]);
        assert!(with_log > 20, "{with_log}");
        assert_eq!(data(w, &[]), with_log);
    }
    if common::require_tool("editcap") {
        let injected = dir.path().join("editcap.pcapng");
        let o = std::process::Command::new("editcap")
            .arg("--inject-secrets")
            .arg(format!("tls,{k}"))
            .args([p, injected.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(game(injected.to_str().unwrap(), &[]), keyed, "editcap's");
    }
}

/// `plot` draws NetherNet flows, a `plot_flow` record each: bytes and
/// datagrams each way as `read` shows them; once decrypted, SCTP's
/// story, checked against tshark's parse of the same chunks: datagrams
/// carrying a TSN already seen that way (resends), TSNs skipped in arrival
/// order (gaps), TSNs the SACKs' gap blocks report missing (each once).
#[test]
fn plot_draws_nethernet_flows() {
    let pcap = sample("nethernet-lossy.pcap");
    let k = sample("nethernet-lossy.keylog");
    let (p, k) = (pcap.to_str().unwrap(), k.to_str().unwrap());
    let dir = common::TempDir::new("nethernet-plot");
    let svg = dir.path().join("p.svg");
    let (plots, _) = records(&[
        "plot",
        p,
        "--tls-keylog",
        k,
        "-o",
        svg.to_str().unwrap(),
        "--json",
    ]);
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.contains("SCTP DATA chunk"), "NetherNet's words");
    assert_eq!(plots.len(), 2, "the two legs of the relayed join");
    let (read, _) = records(&[p, "--json", "--tls-keylog", k]);
    let tshark = common::require_tool("tshark") && common::require_tool("openssl");
    let rows: Vec<Vec<String>> = if tshark {
        let pem = common::any_pem(&dir);
        let o = std::process::Command::new("tshark")
            .args(["-r", p, "-Y", "sctp", "-T", "fields", "-E", "separator=/t"])
            .args(["-o", &format!("tls.keylog_file:{k}")])
            .args(["-o", &common::dtls_keys_list(p, &pem)])
            .args([
                "-e",
                "udp.srcport",
                "-e",
                "udp.dstport",
                "-e",
                "sctp.data_tsn_raw",
            ])
            .args(["-e", "sctp.sack_cumulative_tsn_ack_raw"])
            .args([
                "-e",
                "sctp.sack_gap_block_start",
                "-e",
                "sctp.sack_gap_block_end",
            ])
            .output()
            .unwrap();
        assert!(o.status.success());
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| l.split('\t').map(str::to_string).collect())
            .collect()
    } else {
        Vec::new()
    };
    let port = |a: &Value| a.as_str().unwrap().rsplit(':').next().unwrap().to_string();
    let nums = |s: &str| -> Vec<u32> {
        s.split(',')
            .filter(|x| !x.is_empty())
            .map(|x| x.parse().unwrap())
            .collect()
    };
    for f in &plots {
        assert_eq!(f["transport"], "nethernet");
        for (d, name) in ["c2s", "s2c"].iter().enumerate() {
            let mine: Vec<&Value> = read
                .iter()
                .filter(|r| r["flow"] == f["flow"] && r["kind"] != "http" && r["dir"] == *name)
                .collect();
            let bytes: u64 = mine.iter().map(|r| r["len"].as_u64().unwrap()).sum();
            assert_eq!(
                f["packets"][d],
                mine.len() as u64,
                "flow {} {name}",
                f["flow"]
            );
            assert_eq!(f["bytes"][d], bytes, "flow {} {name}", f["flow"]);
        }
        if !tshark {
            continue;
        }
        let (client, server) = (port(&f["client"]), port(&f["server"]));
        let mut seen: [std::collections::HashSet<u32>; 2] = Default::default();
        let (mut highest, mut reported) = ([None::<u32>; 2], [None::<u32>; 2]);
        let (mut resends, mut gaps, mut nacked) = ([0u64; 2], [0u64; 2], [0u64; 2]);
        for r in &rows {
            let d = match (&r[0], &r[1]) {
                (s, t) if *s == client && *t == server => 0,
                (s, t) if *s == server && *t == client => 1,
                _ => continue,
            };
            let mut again = false;
            for tsn in nums(&r[2]) {
                again |= !seen[d].insert(tsn);
                match highest[d] {
                    Some(h) if tsn > h => {
                        gaps[d] += u64::from(tsn - h - 1);
                        highest[d] = Some(tsn);
                    }
                    Some(_) => {}
                    None => highest[d] = Some(tsn),
                }
            }
            resends[d] += u64::from(again);
            if let Some(cum) = nums(&r[3]).first() {
                let (o, mut next) = (1 - d, 1);
                for (start, end) in nums(&r[4]).into_iter().zip(nums(&r[5])) {
                    if start > next {
                        let (first, last) = (cum + next, cum + start - 1);
                        let from = reported[o].map_or(first, |r: u32| first.max(r + 1));
                        if from <= last {
                            nacked[o] += u64::from(last - from + 1);
                            reported[o] = Some(last);
                        }
                    }
                    next = next.max(end + 1);
                }
            }
        }
        let want = |v: [u64; 2]| serde_json::json!(v);
        assert_eq!(f["resends"], want(resends), "flow {}", f["flow"]);
        assert_eq!(f["gaps"], want(gaps), "flow {}", f["flow"]);
        assert_eq!(f["nacked"], want(nacked), "flow {}", f["flow"]);
        assert!(
            resends.iter().sum::<u64>() > 0,
            "the lossy relay made the stacks resend"
        );
    }
}

/// The discovery packets a LAN truth file recorded sent.
fn lan_sent(truth: Vec<Value>) -> Vec<Value> {
    truth
        .into_iter()
        .filter(|r| {
            r["event"] == "sent"
                && r["packet"]
                    .as_str()
                    .is_some_and(|p| p.starts_with("discovery_"))
        })
        .collect()
}

/// LAN discovery (UDP 7551) as the npm package nethernet's server and
/// client sent it (`samples/nethernet-lan.pcap`; the truth recorded inside
/// them): every datagram opens with the public key, each record says what
/// its sender sent (packet, ids, signal, connection, data; the world's
/// card field by field), in order; the SDPs of the signals teach the ICE
/// passwords (every STUN check of the join verifies); `handshake` joins
/// the discovery and the signals to the ICE conversation, and says why
/// the second, bad offer was refused. With the key log taken from inside
/// werift (the package's WebRTC, a third stack), `messages` and `game`
/// show what each side's data channel delivered.
#[test]
fn lan_discovery_reads_as_its_peers_sent_it() {
    let pcap = sample("nethernet-lan.pcap");
    let p = pcap.to_str().unwrap();
    let truth = truth("nethernet-lan");
    let received: Vec<(String, String)> = truth
        .iter()
        .filter(|r| r["type"] == "message" && r["event"] == "received")
        .map(|r| {
            (
                r["side"].as_str().unwrap().into(),
                r["hex"].as_str().unwrap().into(),
            )
        })
        .collect();
    let sent = lan_sent(truth);
    let (all, _) = records(&[p, "--json"]);
    let lan: Vec<&Value> = all.iter().filter(|r| r["kind"] == "lan").collect();
    assert_eq!(lan.len(), sent.len());
    for (r, t) in lan.iter().zip(&sent) {
        let l = &r["lan"];
        let kind = t["packet"]
            .as_str()
            .unwrap()
            .trim_start_matches("discovery_");
        assert_eq!(l["packet"], kind, "{r}");
        assert_eq!(l["sender"], t["sender_id"], "{r}");
        assert_eq!(r["anomalies"], serde_json::json!([]), "{r}");
        let f = &t["fields"];
        match kind {
            "message" => {
                assert_eq!(l["recipient"], f["recipient_id"]);
                assert_eq!(l["signal"], f["signal"]["type"]);
                assert_eq!(l["connection"], f["signal"]["connection_id"]);
                assert_eq!(l["data"], f["signal"]["data"]);
            }
            "response" => {
                let (mine, theirs) = (&l["server_data"], &f["server_data"]);
                for (ours, name) in [
                    ("version", "version"),
                    ("server_name", "serverName"),
                    ("level_name", "levelName"),
                    ("game_type", "gameType"),
                    ("player_count", "playerCount"),
                    ("max_player_count", "maxPlayerCount"),
                    ("editor_world", "editorWorld"),
                    ("hardcore", "hardcore"),
                    ("accepts_online_auth", "acceptsOnlineAuth"),
                    ("accepts_self_signed_auth", "acceptsSelfSignedAuth"),
                    ("nonce", "nonce"),
                    ("transport_layer", "transportLayer"),
                    ("connection_type", "connectionType"),
                ] {
                    assert_eq!(mine[ours], theirs[name], "{ours}");
                }
            }
            _ => {}
        }
    }
    let checks: Vec<&Value> = all.iter().filter(|r| r["kind"] == "stun").collect();
    assert!(checks.len() >= 4);
    assert!(
        checks.iter().all(|r| r["stun"]["integrity_ok"] == true),
        "{checks:?}"
    );
    let (joins, _) = records(&["handshake", p, "--json"]);
    let outcomes: Vec<&str> = joins
        .iter()
        .map(|j| j["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["offer_refused", "connected"], "{joins:?}");
    let steps = |j: &Value| -> Vec<String> {
        j["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["step"].as_str().unwrap().to_string())
            .collect()
    };
    let refused = steps(&joins[0]);
    assert_eq!(
        refused,
        ["lan_request", "lan_response", "offer", "connect_error"]
    );
    assert!(joins[0]["diagnosis"]
        .as_str()
        .unwrap()
        .contains("answered 13 CONNECTERROR"));
    let joined = steps(&joins[1]);
    for s in [
        "lan_request",
        "lan_response",
        "offer",
        "answer",
        "stun_request",
        "client_hello",
    ] {
        assert!(joined.iter().any(|x| x == s), "{s}: {joined:?}");
    }
    let k = sample("nethernet-lan.keylog");
    let k = k.to_str().unwrap();
    let (messages, _) = records(&["messages", p, "--json", "--tls-keylog", k]);
    let shown: Vec<(String, String)> = messages
        .iter()
        .map(|m| {
            let side = if m["dir"] == "c2s" {
                "server"
            } else {
                "client"
            };
            (side.to_string(), m["data"].as_str().unwrap().to_string())
        })
        .collect();
    assert!(!received.is_empty());
    let mut want = received.clone();
    want.sort();
    let mut got = shown;
    got.sort();
    assert_eq!(got, want, "what each side's data channel delivered");
    let (game, _) = records(&["game", p, "--json", "--tls-keylog", k]);
    let names: Vec<(&str, &str)> = game
        .iter()
        .map(|g| (g["dir"].as_str().unwrap(), g["name"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(
        names,
        [
            ("c2s", "request_network_settings"),
            ("s2c", "request_network_settings")
        ]
    );
}

/// A LAN join made now by the npm package nethernet (its server and
/// client, on werift's WebRTC) in a network namespace with only lo: what
/// they recorded sending is what `read` shows, and the join connects.
/// Needs root, tcpdump, unshare and node (the package is installed under
/// scripts/lan by the script when missing).
#[test]
fn a_lan_join_made_now_reads_as_its_peers_sent_it() {
    if !common::require_root()
        || !common::require_tool("tcpdump")
        || !common::require_tool("unshare")
        || !common::require_tool("node")
    {
        return;
    }
    let dir = common::TempDir::new("nethernet-lan-now");
    let o = common::run_with_timeout(
        std::process::Command::new(common::root().join("scripts/lan-discovery-capture.sh"))
            .arg(dir.path()),
        std::time::Duration::from_secs(120),
    );
    assert!(
        o.status.success(),
        "lan-discovery-capture.sh: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let pcap = dir.path().join("nethernet-lan.pcap");
    let sent = lan_sent(truth_at(&dir.path().join("nethernet-lan.truth.jsonl")));
    let (all, _) = records(&[pcap.to_str().unwrap(), "--json"]);
    let lan: Vec<(String, String, String)> = all
        .iter()
        .filter(|r| r["kind"] == "lan")
        .map(|r| {
            let l = &r["lan"];
            let s = |v: &Value| v.as_str().unwrap_or("").to_string();
            (s(&l["packet"]), s(&l["sender"]), s(&l["signal"]))
        })
        .collect();
    let want: Vec<(String, String, String)> = sent
        .iter()
        .map(|t| {
            let s = |v: &Value| v.as_str().unwrap_or("").to_string();
            let kind = s(&t["packet"]).trim_start_matches("discovery_").to_string();
            (kind, s(&t["sender_id"]), s(&t["fields"]["signal"]["type"]))
        })
        .collect();
    // Each sender's in its order (the two sides' may cross on the wire).
    let by = |v: &[(String, String, String)], who: &str| -> Vec<(String, String, String)> {
        v.iter().filter(|x| x.1 == who).cloned().collect()
    };
    assert_eq!(lan.len(), want.len(), "{lan:?}");
    for (_, who, _) in &want {
        assert_eq!(by(&lan, who), by(&want, who));
    }
    let (joins, _) = records(&["handshake", pcap.to_str().unwrap(), "--json"]);
    assert!(
        joins.iter().any(|j| j["outcome"] == "connected"),
        "{joins:?}"
    );
    // With werift's keys: what each side's data channel delivered.
    let truth = truth_at(&dir.path().join("nethernet-lan.truth.jsonl"));
    let mut want: Vec<String> = truth
        .iter()
        .filter(|r| r["type"] == "message" && r["event"] == "received")
        .map(|r| r["hex"].as_str().unwrap().to_string())
        .collect();
    let keylog = dir.path().join("nethernet-lan.keylog");
    let (messages, _) = records(&[
        "messages",
        pcap.to_str().unwrap(),
        "--json",
        "--tls-keylog",
        keylog.to_str().unwrap(),
    ]);
    let mut got: Vec<String> = messages
        .iter()
        .map(|m| m["data"].as_str().unwrap().to_string())
        .collect();
    want.sort();
    got.sort();
    assert!(!want.is_empty());
    assert_eq!(got, want);
}

/// DTLS 1.3 as two libwebrtc peers negotiate it (two peer connections of
/// one headless Chromium 156 page; `samples/webrtc-dtls13*.pcap`, made by
/// scripts/chromium-dtls13-capture.sh): the conversation found from its
/// UDP traffic alone, every record read (the sealed ones by their unified
/// headers; without post-quantum key exchange a ServerHello and a sealed
/// record share a datagram), no anomaly, the version and suite the page's
/// getStats reported, and the join connected.
#[test]
fn dtls_13_between_two_chromium_peers_reads_cleanly() {
    for name in ["webrtc-dtls13", "webrtc-dtls13-nopqc"] {
        let pcap = sample(&format!("{name}.pcap"));
        let p = pcap.to_str().unwrap();
        let log = std::fs::read_to_string(sample(&format!("{name}.log"))).unwrap();
        assert!(
            log.contains("tlsVersion=FEFC cipher=TLS_AES_128_GCM_SHA256"),
            "{log}"
        );
        let (all, _) = records(&[p, "--json"]);
        assert!(!all.is_empty());
        for r in &all {
            assert!(r["kind"] == "stun" || r["kind"] == "dtls", "{name}: {r}");
            assert_eq!(r["anomalies"], serde_json::json!([]), "{name}: {r}");
        }
        let contents: Vec<&str> = all
            .iter()
            .flat_map(|r| r["dtls"].as_array().into_iter().flatten())
            .map(|d| d["content"].as_str().unwrap())
            .collect();
        let sealed = contents.iter().filter(|c| **c == "ciphertext").count();
        assert!(sealed >= 10, "{name}: {contents:?}");
        let (joins, _) = records(&["handshake", p, "--json"]);
        assert_eq!(joins.len(), 1, "{joins:?}");
        assert_eq!(joins[0]["outcome"], "connected", "{}", joins[0]);
        let steps = joins[0]["steps"].to_string();
        assert!(steps.contains("TLS_AES_128_GCM_SHA256"), "{steps}");
        assert!(steps.contains("DTLS 1.3"), "{steps}");
        let (flows, _) = records(&["flows", p, "--json"]);
        let dtls = &flows[0]["dtls"];
        assert_eq!(
            (dtls["version"].as_str(), dtls["suite"].as_str()),
            (Some("DTLS 1.3"), Some("TLS_AES_128_GCM_SHA256"))
        );
    }
}

/// tshark's `ip.*`, `udp.*` and `tcp.*` names filter NetherNet's records
/// too: `udp` and `ip` select the datagrams tshark selects with the same
/// filter; `tcp` only signaling segments, `udp` no segment.
#[test]
fn tshark_names_filter_nethernet() {
    let pcap = sample("nethernet-join.pcap");
    let p = pcap.to_str().unwrap();
    let frames = |args: &[&str]| -> Vec<String> {
        let o = run_bin(args);
        assert!(o.status.success(), "{args:?}");
        String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    };
    for filter in [
        "udp.srcport == 45216",
        "udp.port == 57265 && ip.dst == 127.0.0.1",
        "udp",
    ] {
        let ours = frames(&[p, "-Y", filter, "-T", "fields", "-e", "frame"]);
        assert!(!ours.is_empty(), "{filter}");
        if common::require_tool("tshark") {
            let o = std::process::Command::new("tshark")
                .args(["-r", p, "-Y", filter, "-T", "fields", "-e", "frame.number"])
                .output()
                .unwrap();
            let theirs: Vec<String> = String::from_utf8(o.stdout)
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect();
            assert_eq!(ours, theirs, "{filter}");
        }
    }
    let tcp = frames(&[p, "-Y", "tcp.port == 19760", "-T", "fields", "-e", "kind"]);
    assert!(
        !tcp.is_empty() && tcp.iter().all(|k| k == "http"),
        "{tcp:?}"
    );
    assert!(frames(&[p, "-Y", "udp && kind == http"]).is_empty());
}

/// `flows` gives a NetherNet flow's RTT from SCTP's SACKs (`rtt_ms`, as a
/// RakNet flow's): on loopback, well under a few milliseconds at the
/// median, a sample for most DATA chunks of the clean join (those sent
/// once and then covered by a SACK); through the lossy relay, on each leg;
/// without the key log, none (null).
#[test]
fn flows_give_rtt_from_sacks() {
    for (name, legs) in [("nethernet-join", 1), ("nethernet-lossy", 2)] {
        let pcap = sample(&format!("{name}.pcap"));
        let k = sample(&format!("{name}.keylog"));
        let (p, k) = (pcap.to_str().unwrap(), k.to_str().unwrap());
        let (flows, _) = records(&["flows", p, "--json", "--tls-keylog", k]);
        let flows: Vec<&Value> = flows
            .iter()
            .filter(|f| f["transport"] == "nethernet")
            .collect();
        assert_eq!(flows.len(), legs, "{name}");
        let (data, _) = records(&[p, "--json", "--tls-keylog", k, "-Y", "sctp.chunk == DATA"]);
        for f in flows {
            let rtt = &f["rtt_ms"];
            let (min, median, max) = (
                rtt["min"].as_f64().unwrap(),
                rtt["median"].as_f64().unwrap(),
                rtt["max"].as_f64().unwrap(),
            );
            let samples = rtt["samples"].as_u64().unwrap();
            assert!(0.0 < min && min <= median && median <= max, "{name}: {rtt}");
            assert!(median < 5.0, "{name}: loopback, {rtt}");
            // At most a sample per DATA-carrying datagram of the flow.
            let carrying = data.iter().filter(|r| r["flow"] == f["flow"]).count() as u64;
            assert!(
                samples * 2 >= carrying / 2 && samples <= carrying,
                "{name}: {samples} of {carrying}"
            );
        }
        let (bare, _) = records(&["flows", p, "--json"]);
        assert!(bare
            .iter()
            .filter(|f| f["transport"] == "nethernet")
            .all(|f| f["rtt_ms"].is_null()));
    }
}

/// `serve --bedrock --nethernet --listen LISTEN --json` and `more`,
/// once it listens.
fn nethernet_server(listen: &str, more: &[&str]) -> common::Ours {
    let mut args = vec![
        "serve",
        "--listen",
        listen,
        "--bedrock",
        "--nethernet",
        "--json",
    ];
    args.extend_from_slice(more);
    let mut serve = common::Ours::spawn(&common::args(&args), None);
    // RakNet's first, beside NetherNet, unless NetherNet alone was asked.
    let alone = more.windows(2).any(|w| w == ["--transport", "nethernet"]);
    let n = if alone { 1 } else { 2 };
    let got = serve.wait_records("listening", n, std::time::Duration::from_secs(10));
    assert_eq!(got, n, "listening records");
    let l = serve
        .wait_record("listening", std::time::Duration::ZERO)
        .unwrap();
    assert_eq!(l["transport"], if alone { "nethernet" } else { "raknet" });
    serve
}

/// aiortc's client (`--game`, and `more`) against our server `serve`:
/// both waited for, then the capture stopped; the client's exit code, the
/// server's run, the capture.
fn aiortc_client_against(
    py: &str,
    j: &Join,
    more: &[&str],
    serve: common::Ours,
    dump: common::Tcpdump,
) -> (Option<i32>, common::Finished, std::path::PathBuf) {
    let files = (
        j.packets.as_path(),
        j.truth.as_path(),
        j.theirs_keys.as_path(),
    );
    let mut client = common::nethernet_peer_with(py, "client", j.port, files, more);
    let code = client.exit_code(std::time::Duration::from_secs(90));
    let f = serve.finish(std::time::Duration::from_secs(30));
    std::thread::sleep(std::time::Duration::from_millis(300));
    (code, f, dump.stop())
}

/// The files of one version's join, and its port.
struct Join {
    port: u16,
    /// bedrock-protocol's session of the version (made now).
    packets: std::path::PathBuf,
    /// The aiortc peer's record of what its application sent and received.
    truth: std::path::PathBuf,
    /// The aiortc peer's DTLS key log, and ours.
    theirs_keys: std::path::PathBuf,
    our_keys: std::path::PathBuf,
}

fn join_files(dir: &common::TempDir, version: &str) -> Join {
    let port = common::free_port_pair();
    let file = |s: &str| dir.path().join(format!("{version}.{s}"));
    Join {
        port,
        packets: common::bedrock_protocol_packets(dir, version, port + 1),
        truth: file("truth.jsonl"),
        theirs_keys: file("aiortc.keylog"),
        our_keys: file("ours.keylog"),
    }
}

/// The capture `pcap` of a join, read by `game` with each key log of
/// `keys`: the flow whose login names `name` shows, byte for byte, the
/// packets `side`'s application sent and received (its `truth`), with 0
/// opaque, and both key logs hold the same line.
fn join_reads_as_the_peer_saw_it(
    what: &str,
    pcap: &std::path::Path,
    keys: [&std::path::Path; 2],
    truth: &std::path::Path,
    side: &str,
    name: &str,
) {
    let line = |p: &std::path::Path| {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .next()
            .unwrap_or("")
            .to_string()
    };
    assert!(line(keys[0]).starts_with("CLIENT_RANDOM "), "{what}");
    assert_eq!(line(keys[0]), line(keys[1]), "{what}: the key-log lines");
    let t: Vec<Value> = std::fs::read_to_string(truth)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let want = |event: &str| -> Vec<String> {
        t.iter()
            .filter(|r| r["type"] == "packet" && r["side"] == side && r["event"] == event)
            .map(|r| r["hex"].as_str().unwrap().to_string())
            .collect()
    };
    let (sent, received) = (want("sent"), want("received"));
    let (ours_sent, ours_received) = if side == "server" {
        ("s2c", "c2s")
    } else {
        ("c2s", "s2c")
    };
    for keys in keys {
        let (records, _) = records(&[
            "game",
            pcap.to_str().unwrap(),
            "--json",
            "--tls-keylog",
            keys.to_str().unwrap(),
        ]);
        let flow = records
            .iter()
            .find(|r| r["name"] == "login" && r["fields"].to_string().contains(name))
            .map(|r| r["flow"].clone())
            .expect("the join's login in the capture");
        let of = |dir: &str| -> Vec<String> {
            records
                .iter()
                .filter(|r| r["flow"] == flow && r["type"] == "game" && r["dir"] == dir)
                .map(|r| r["data"].as_str().unwrap().to_string())
                .collect()
        };
        let opaque = records
            .iter()
            .filter(|r| r["flow"] == flow && r["type"] == "game_opaque")
            .count();
        assert_eq!(opaque, 0, "{what} {}", keys.display());
        assert_eq!(of(ours_sent), sent, "{what}: what the {side} sent");
        assert_eq!(
            of(ours_received),
            received,
            "{what}: what the {side} received"
        );
        println!(
            "{what}, {}: {} packets sent and {} received, as the {side} saw them",
            keys.display(),
            sent.len(),
            received.len()
        );
    }
}

/// Issue 28: our client (`connect --bedrock --nethernet`) joins aiortc's
/// NetherNet server (scripts/nethernet_peers.py --game, playing the
/// server's side of a bedrock-protocol session of that version) and
/// spawns, in two game versions; the capture of the join, read by `game`
/// with our DTLS key log and then with aiortc's, shows every packet the
/// server's application sent and received, byte for byte (0 opaque), and
/// tshark decrypts the game messages with our key log.
#[test]
fn our_client_joins_aiortcs_server_and_spawns() {
    let Some(py) = common::nethernet_game_peers() else {
        return;
    };
    let dir = common::TempDir::new("nethernet-connect");
    for version in ["1.26.45", "1.26.10"] {
        let j = join_files(&dir, version);
        let file = |s: &str| dir.path().join(format!("{version}.{s}"));
        let dump = common::Tcpdump::start(&file("pcap"), &format!("tcp port {} or udp", j.port));
        let mut server =
            common::nethernet_peer(&py, "server", j.port, &j.packets, &j.truth, &j.theirs_keys);
        let name = format!("nn-{}", version.replace('.', "-"));
        let target = format!("127.0.0.1:{}", j.port);
        let ours = common::run_with_timeout(
            common::bin()
                .args([
                    "connect",
                    &target,
                    "--bedrock",
                    "--nethernet",
                    "--version",
                    version,
                ])
                .args([
                    "--name",
                    &name,
                    "--duration",
                    "2",
                    "--json",
                    "--tls-keylog-out",
                ])
                .arg(&j.our_keys),
            std::time::Duration::from_secs(30),
        );
        let code = server.exit_code(std::time::Duration::from_secs(20));
        std::thread::sleep(std::time::Duration::from_millis(300));
        let pcap = dump.stop();
        let out: Vec<Value> = ndjson(&ours.stdout);
        let err = String::from_utf8_lossy(&ours.stderr);
        assert_eq!(ours.status.code(), Some(0), "{version}: {out:?} {err}");
        assert_eq!(code, Some(0), "{version}: the server's run failed");
        let joined = out
            .iter()
            .find(|r| r["type"] == "joined")
            .expect("a joined record");
        println!("{version}: {joined}");
        let identity = joined["server_identity"].as_str().unwrap();
        assert!(
            identity.starts_with("fingerprints signed, token self-signed"),
            "{identity}"
        );
        assert!(
            out.iter()
                .any(|r| r["type"] == "login" && r["event"] == "spawned"),
            "{out:?}"
        );
        join_reads_as_the_peer_saw_it(
            version,
            &pcap,
            [&j.our_keys, &j.theirs_keys],
            &j.truth,
            "server",
            &name,
        );
        if common::require_tool("tshark") && common::require_tool("openssl") {
            // tshark decrypts with our key log: at least as many binary
            // data chunks (PPID 53) as we read messages.
            let o = common::run_with_timeout(
                std::process::Command::new("tshark")
                    .args(["-r", pcap.to_str().unwrap(), "-o"])
                    .arg(format!("tls.keylog_file:{}", j.our_keys.display()))
                    .args([
                        "-o",
                        &common::dtls_keys_list(pcap.to_str().unwrap(), &common::any_pem(&dir)),
                    ])
                    .args(["-o", "udp.try_heuristic_first:TRUE"])
                    .args(["-Y", "sctp.data_payload_proto_id == 53"])
                    .args([
                        "-T",
                        "fields",
                        "-e",
                        "sctp.data_payload_proto_id",
                        "-E",
                        "aggregator=,",
                    ]),
                std::time::Duration::from_secs(60),
            );
            let ppids: usize = String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(|l| l.split(',').filter(|p| *p == "53").count())
                .sum();
            let keys = j.our_keys.to_str().unwrap();
            let args = [
                "messages",
                pcap.to_str().unwrap(),
                "--json",
                "--tls-keylog",
                keys,
                "-Y",
                "ppid == 53",
            ];
            let ours = records(&args)
                .0
                .iter()
                .filter(|r| r["type"] == "message")
                .count();
            println!("{version}: tshark decrypts {ppids} PPID 53 chunks, we {ours} messages");
            assert!(
                ppids >= ours && ours > 10,
                "{version}: tshark {ppids}, ours {ours}"
            );
        }
    }
}

/// Issue 28: aiortc's NetherNet client (nethernet_peers.py client --game,
/// playing the client's side of a bedrock-protocol session of that
/// version) joins our `serve --bedrock --nethernet` and spawns, in two
/// game versions; the capture reads, with our key log and with aiortc's,
/// as the client's application saw it, byte for byte.
#[test]
fn aiortcs_client_joins_our_server_and_spawns() {
    let Some(py) = common::nethernet_game_peers() else {
        return;
    };
    let dir = common::TempDir::new("nethernet-serve");
    for version in ["1.26.45", "1.26.10"] {
        let j = join_files(&dir, version);
        let file = |s: &str| dir.path().join(format!("{version}.{s}"));
        let dump = common::Tcpdump::start(&file("pcap"), &format!("port {}", j.port));
        let listen = format!("127.0.0.1:{}", j.port);
        let pem = file("operator.pem");
        let (keys, pem) = (j.our_keys.to_str().unwrap(), pem.to_str().unwrap());
        let more = [
            "--version",
            version,
            "--once",
            "--tls-keylog-out",
            keys,
            "--identity",
            pem,
        ];
        let serve = nethernet_server(&listen, &more);
        let (code, f, pcap) = aiortc_client_against(&py, &j, &[], serve, dump);
        assert_eq!(code, Some(0), "{version}: aiortc's client failed");
        assert_eq!(f.code, Some(0), "{version}: {}", f.stderr);
        let joined = f.one("joined");
        println!("{version}: {joined}");
        assert!(joined["server_identity"]
            .as_str()
            .unwrap()
            .contains("fingerprints signed, token self-signed"));
        let logins: Vec<&str> = f
            .of_type("login")
            .iter()
            .map(|r| r["event"].as_str().unwrap())
            .collect();
        assert!(logins.contains(&"spawned"), "{logins:?}");
        // The operator's key stays: a second run would sign with it.
        assert!(std::fs::read_to_string(file("operator.pem"))
            .unwrap()
            .contains("PRIVATE KEY"));
        join_reads_as_the_peer_saw_it(
            version,
            &pcap,
            [&j.our_keys, &j.theirs_keys],
            &j.truth,
            "client",
            "",
        );
    }
}

/// Issue 28: `serve --bedrock --nethernet` speaks both transports on one
/// port number, as a dedicated server does: `ping` finds both, and
/// bedrock-protocol's client (RakNet, on the UDP port) and aiortc's client
/// (NetherNet: the signaling on the TCP port, ICE, DTLS and SCTP on the
/// same UDP port) log in and spawn at the same time. The capture of both
/// opens in `game` with the two key logs, every batch of both sessions
/// decrypted.
#[test]
fn one_port_serves_raknet_and_nethernet_clients_at_once() {
    let Some(py) = common::nethernet_game_peers() else {
        return;
    };
    let dir = common::TempDir::new("nethernet-both");
    let version = "1.26.45";
    let j = join_files(&dir, version);
    let file = |s: &str| dir.path().join(s);
    let dump = common::Tcpdump::start(&file("both.pcap"), &format!("port {}", j.port));
    let listen = format!("127.0.0.1:{}", j.port);
    let bedrock_keys = file("bedrock.keylog");
    let more = [
        "--version",
        version,
        "--protocol",
        "10",
        "--tls-keylog-out",
        j.our_keys.to_str().unwrap(),
        "--keylog-out",
        bedrock_keys.to_str().unwrap(),
    ];
    let serve = nethernet_server(&listen, &more);
    let ping = common::run_with_timeout(
        std::process::Command::new(common::bin_path()).args(["ping", &listen, "--json"]),
        std::time::Duration::from_secs(20),
    );
    let answered = ndjson(&ping.stdout)
        .into_iter()
        .find(|r| r["type"] == "transports")
        .expect("a transports record");
    assert_eq!(answered["answered"], "both", "{answered}");
    let files = (
        j.packets.as_path(),
        j.truth.as_path(),
        j.theirs_keys.as_path(),
    );
    let mut nethernet = common::nethernet_peer_with(&py, "client", j.port, files, &[]);
    let raknet = std::process::Command::new("node")
        .arg(common::root().join("scripts/bedrock_peers.js"))
        .args(["--version", version, "--port", &j.port.to_string()])
        .args(["--client-only", "1", "--out"])
        .arg(file("raknet-sent.jsonl"))
        .arg("--keylog")
        .arg(file("raknet-client.keylog"))
        .output()
        .expect("node runs");
    assert!(
        raknet.status.success(),
        "bedrock-protocol's client: {}",
        String::from_utf8_lossy(&raknet.stderr)
    );
    let code = nethernet.exit_code(std::time::Duration::from_secs(90));
    assert_eq!(code, Some(0), "aiortc's client failed");
    serve.proc.signal(libc::SIGTERM);
    let f = serve.finish(std::time::Duration::from_secs(10));
    std::thread::sleep(std::time::Duration::from_millis(300));
    let pcap = dump.stop();
    assert_eq!(f.of_type("joined").len(), 1, "one NetherNet join");
    assert_eq!(f.of_type("connected").len(), 1, "one RakNet connection");
    let spawned: Vec<&str> = f
        .of_type("login")
        .iter()
        .filter(|r| r["event"] == "spawned")
        .map(|r| r["peer"].as_str().unwrap())
        .collect();
    assert_eq!(spawned.len(), 2, "both spawned: {spawned:?}");
    // The RakNet client's key is ours, and both sessions read whole.
    let theirs = std::fs::read_to_string(file("raknet-client.keylog")).unwrap();
    let ours = std::fs::read_to_string(&bedrock_keys).unwrap();
    assert_eq!(theirs.trim(), ours.trim());
    let (records, _) = records(&[
        "game",
        pcap.to_str().unwrap(),
        "--json",
        "--keylog",
        bedrock_keys.to_str().unwrap(),
        "--tls-keylog",
        j.our_keys.to_str().unwrap(),
    ]);
    let opaque = records.iter().filter(|r| r["type"] != "game").count();
    assert_eq!(opaque, 0, "every batch of both sessions decrypts");
    let starts: Vec<&Value> = records
        .iter()
        .filter(|r| r["name"] == "start_game")
        .collect();
    assert_eq!(starts.len(), 2, "a start_game to each client");
    join_reads_as_the_peer_saw_it(
        version,
        &pcap,
        [&j.our_keys, &j.theirs_keys],
        &j.truth,
        "client",
        "",
    );
}

/// Issue 28: `serve --bedrock --nethernet --replay` plays a captured
/// NetherNet server (the sample join, its DTLS key log given with
/// `--tls-keylog`) to aiortc's client after its spawn: the capture of the
/// new session shows, after the spawn, the captured server's packets byte
/// for byte.
#[test]
fn serve_replays_a_captured_nethernet_server_to_aiortcs_client() {
    let Some(py) = common::nethernet_game_peers() else {
        return;
    };
    let after_spawn = |records: &[Value]| -> Vec<(String, String)> {
        let s2c: Vec<(String, String)> = records
            .iter()
            .filter(|r| r["type"] == "game" && r["dir"] == "s2c")
            .map(|r| {
                let name = r["name"].as_str().unwrap().to_string();
                (name, r["data"].as_str().unwrap().to_string())
            })
            .collect();
        let spawn = s2c
            .iter()
            .position(|(n, d)| n == "play_status" && d == "0200000003")
            .expect("player_spawn");
        let mut after = s2c[spawn + 1..].to_vec();
        // The captured unreliable pings went apart; their order against
        // the reliable packets is not the capture's to keep.
        after.sort();
        after
    };
    let (sample_pcap, sample_keys) = (
        sample("nethernet-join.pcap"),
        sample("nethernet-join.keylog"),
    );
    let (captured, _) = records(&[
        "game",
        sample_pcap.to_str().unwrap(),
        "--json",
        "--tls-keylog",
        sample_keys.to_str().unwrap(),
    ]);
    let want = after_spawn(&captured);
    assert!(want.iter().any(|(n, _)| n == "text"), "{want:?}");
    let dir = common::TempDir::new("nethernet-serve-replay");
    let j = join_files(&dir, "1.26.45");
    let dump = common::Tcpdump::start(&dir.path().join("replay.pcap"), &format!("port {}", j.port));
    let listen = format!("127.0.0.1:{}", j.port);
    let more = [
        "--once",
        "--replay",
        sample_pcap.to_str().unwrap(),
        "--tls-keylog",
        sample_keys.to_str().unwrap(),
        "--asap",
        "--tls-keylog-out",
        j.our_keys.to_str().unwrap(),
    ];
    let serve = nethernet_server(&listen, &more);
    let (code, f, pcap) = aiortc_client_against(&py, &j, &["--linger", "1"], serve, dump);
    assert_eq!(code, Some(0), "aiortc's client failed");
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    let (now, _) = records(&[
        "game",
        pcap.to_str().unwrap(),
        "--json",
        "--tls-keylog",
        j.our_keys.to_str().unwrap(),
    ]);
    assert!(
        now.iter().all(|r| r["type"] == "game"),
        "every batch decrypts"
    );
    assert_eq!(
        after_spawn(&now),
        want,
        "the captured server's packets after the spawn"
    );
}

/// A TCP connection to `to` from the address `from` (another loopback
/// address than the client's: a flood's own).
fn connect_from(from: &str, to: &str) -> std::io::Result<std::net::TcpStream> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    let src: std::net::SocketAddr = format!("{from}:0").parse().unwrap();
    s.bind(&src.into())?;
    let dst: std::net::SocketAddr = to.parse().unwrap();
    s.connect(&dst.into())?;
    Ok(s.into())
}

/// Issue 28: floods do not lock a real client out of `serve --bedrock
/// --nethernet`. While offers are posted from another address (127.0.0.2)
/// as fast as four connections go (each a pending player that never
/// checks: hundreds a second), signaling connections are opened from it
/// and left silent, and STUN requests, DTLS ClientHellos and junk come to
/// the UDP port from 64 sockets (about 10,000 a second), our own client
/// joins and spawns, its join (offer to both channels open) within a
/// second: the flood's address keeps only its newest few pending offers.
#[test]
fn floods_do_not_lock_out_a_real_client() {
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let port = common::free_port_pair();
    let listen = format!("127.0.0.1:{port}");
    let serve = nethernet_server(&listen, &["--once"]);
    let stop = AtomicBool::new(false);
    let (offers, silent, datagrams) = (
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    );
    let fingerprint: Vec<String> = (0..32).map(|i| format!("{i:02X}")).collect();
    let fingerprint = fingerprint.join(":");
    let joined = std::thread::scope(|s| {
        for t in 0..4u32 {
            let (stop, offers, listen, fingerprint) = (&stop, &offers, &listen, &fingerprint);
            s.spawn(move || {
                let mut n = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let sdp = format!(
                        "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n\
                         a=candidate:1 1 udp 1 127.0.0.1 9 typ host\r\na=ice-ufrag:f{t}{n}\r\na=ice-pwd:flood-password-of-22-chars\r\n\
                         a=fingerprint:sha-256 {fingerprint}\r\na=setup:actpass\r\n"
                    );
                    let req = format!(
                        "POST /v1/join/{t}{n} HTTP/1.1\r\nHost: x\r\nContent-Type: application/sdp\r\nContent-Length: {}\r\n\r\n{sdp}",
                        sdp.len()
                    );
                    if let Ok(mut c) = connect_from("127.0.0.2", listen) {
                        let _ = c.set_read_timeout(Some(std::time::Duration::from_secs(2)));
                        if c.write_all(req.as_bytes()).is_ok() {
                            let _ = std::io::Read::read(&mut c, &mut [0u8; 4096]);
                            offers.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
        // Connections that say nothing.
        s.spawn(|| {
            let mut held = std::collections::VecDeque::new();
            while !stop.load(Ordering::Relaxed) {
                if let Ok(c) = connect_from("127.0.0.2", &listen) {
                    held.push_back(c);
                    silent.fetch_add(1, Ordering::Relaxed);
                }
                if held.len() > 64 {
                    held.pop_front();
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        });
        // STUN requests, ClientHellos and junk from 64 addresses.
        s.spawn(|| {
            let socks: Vec<std::net::UdpSocket> = (0..64)
                .filter_map(|_| std::net::UdpSocket::bind("127.0.0.1:0").ok())
                .collect();
            let stun = {
                let mut b = vec![0, 1, 0, 8, 0x21, 0x12, 0xa4, 0x42];
                b.extend([7u8; 12]);
                b.extend([0, 6, 0, 4]);
                b.extend(b"ab:c");
                b
            };
            let mut hello = vec![22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 60, 1, 0, 0, 48];
            hello.resize(73, 3);
            let mut i = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let d: &[u8] = match i % 3 {
                    0 => &stun,
                    1 => &hello,
                    _ => b"junk junk junk",
                };
                let _ = socks[i % socks.len()].send_to(d, listen.as_str());
                datagrams.fetch_add(1, Ordering::Relaxed);
                i += 1;
                // About 10,000 a second, as the RakNet floods.
                if i.is_multiple_of(10) {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(700));
        let o = common::run_with_timeout(
            common::bin().args([
                "connect",
                &listen,
                "--bedrock",
                "--nethernet",
                "--duration",
                "3",
                "--json",
            ]),
            std::time::Duration::from_secs(30),
        );
        stop.store(true, Ordering::Relaxed);
        o
    });
    // (Its leaving may be lost in the flood: the server is stopped.)
    serve.proc.signal(libc::SIGTERM);
    let f = serve.finish(std::time::Duration::from_secs(20));
    let out: Vec<Value> = ndjson(&joined.stdout);
    let err = String::from_utf8_lossy(&joined.stderr);
    println!(
        "during {} offers, {} silent connections, {} datagrams: {out:?}",
        offers.load(Ordering::Relaxed),
        silent.load(Ordering::Relaxed),
        datagrams.load(Ordering::Relaxed)
    );
    assert_eq!(joined.status.code(), Some(0), "{out:?} {err}");
    let j = out.iter().find(|r| r["type"] == "joined").expect("joined");
    println!("the server's side: {:?}", f.of_type("joined"));
    let ms = j["join_ms"].as_f64().unwrap();
    assert!(ms < 1000.0, "the join took {ms} ms");
    assert!(out
        .iter()
        .any(|r| r["type"] == "login" && r["event"] == "spawned"));
    assert!(
        offers.load(Ordering::Relaxed) > 20,
        "the flood of offers did not press"
    );
    let evicted = f
        .of_type("login")
        .iter()
        .filter(|r| r["event"] == "evicted")
        .count();
    println!("join {ms} ms; the server evicted {evicted} pending offers");
    assert!(evicted > 0);
}

/// Issue 28: an SCTP INIT flood does not lock out a real client. An
/// aiortc client joins `serve --bedrock --nethernet` (real ICE, DTLS and
/// SCTP) and then sends SCTP INITs inside its association as fast as it
/// can (`--sctp-init-flood`: about 13,000 a second here, more than the
/// RakNet floods' 10,000); meanwhile our client joins and spawns,
/// its join within a second. The server drops every INIT that comes once
/// an association is up (each would cost it a cookie), and says how many
/// when the flooder leaves.
#[test]
fn an_sctp_init_flood_does_not_lock_out_a_real_client() {
    let Some(py) = common::aiortc_python() else {
        common::skip_or_fail("no Python with aiortc (target/venv/bin/pip install aiortc==1.16.0)");
        return;
    };
    let dir = common::TempDir::new("nethernet-init-flood");
    let port = common::free_port_pair();
    let listen = format!("127.0.0.1:{port}");
    let serve = nethernet_server(&listen, &[]);
    let packets = sample("bedrock-login.packets.jsonl");
    let flooders: Vec<common::Proc> = (0..1)
        .map(|i| {
            let (truth, keys) = (
                dir.path().join(format!("flood{i}.jsonl")),
                dir.path().join(format!("flood{i}.keylog")),
            );
            let seed = (i + 10).to_string();
            let more = ["--sctp-init-flood", "4", "--seed", &seed];
            common::nethernet_peer_with(&py, "client", port, (&packets, &truth, &keys), &more)
        })
        .collect();
    // Flooding (its join takes a few hundred ms).
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let o = common::run_with_timeout(
        common::bin().args([
            "connect",
            &listen,
            "--bedrock",
            "--nethernet",
            "--duration",
            "1",
            "--json",
        ]),
        std::time::Duration::from_secs(30),
    );
    let codes: Vec<Option<i32>> = flooders
        .into_iter()
        .map(|mut f| f.exit_code(std::time::Duration::from_secs(30)))
        .collect();
    serve.proc.signal(libc::SIGTERM);
    let f = serve.finish(std::time::Duration::from_secs(20));
    let out = ndjson(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out:?} {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let j = out.iter().find(|r| r["type"] == "joined").expect("joined");
    let ms = j["join_ms"].as_f64().unwrap();
    println!("our join during the INIT flood: {ms} ms; the flooders: {codes:?}");
    assert!(ms < 1000.0, "the join took {ms} ms");
    assert!(out.iter().any(|r| r["event"] == "spawned"), "{out:?}");
    // What the flooders sent, and what the server said it dropped.
    let sent: u64 = (0..1)
        .map(|i| {
            let t = std::fs::read_to_string(dir.path().join(format!("flood{i}.jsonl"))).unwrap();
            ndjson(t.as_bytes())
                .iter()
                .filter(|r| r["type"] == "flood")
                .map(|r| r["packets"].as_u64().unwrap())
                .sum::<u64>()
        })
        .sum();
    let dropped: u64 = f
        .of_type("login")
        .iter()
        .filter_map(|r| {
            let d = r["detail"].as_str()?;
            let n = d.split("; ").nth(1)?.split(' ').next()?;
            n.parse::<u64>().ok()
        })
        .sum();
    println!("{sent} INITs sent, {dropped} dropped");
    assert!(sent > 1000, "the flood did not press: {sent}");
    assert!(dropped > 0 && dropped <= sent, "{dropped} of {sent}");
}

/// Issue 28: `replay --bedrock` of a captured NetherNet session (the
/// sample join, its DTLS key log named by SSLKEYLOGFILE) joins a fresh
/// NetherNet server (aiortc's, nethernet_peers.py --game) over NetherNet,
/// logs in anew and plays the captured client's packets after its spawn:
/// the server's application receives them byte for byte, in order.
#[test]
fn a_captured_nethernet_session_replays_to_a_fresh_server() {
    let Some(py) = common::nethernet_game_peers() else {
        return;
    };
    let dir = common::TempDir::new("nethernet-replay");
    let keylog = dir.path().join("capture.keylog");
    std::fs::copy(sample("nethernet-join.keylog"), &keylog).unwrap();
    let pcap = sample("nethernet-join.pcap");
    // The captured client's packets after its spawn.
    let (captured, _) = records(&[
        "game",
        pcap.to_str().unwrap(),
        "--json",
        "--tls-keylog",
        keylog.to_str().unwrap(),
    ]);
    let after_spawn = |names_hex: Vec<(String, String)>| -> Vec<(String, String)> {
        let spawn = names_hex
            .iter()
            .position(|(n, _)| n == "set_local_player_as_initialized")
            .expect("the spawn");
        names_hex[spawn + 1..].to_vec()
    };
    let want = after_spawn(
        captured
            .iter()
            .filter(|r| r["type"] == "game" && r["dir"] == "c2s")
            .map(|r| {
                (
                    r["name"].as_str().unwrap().into(),
                    r["data"].as_str().unwrap().into(),
                )
            })
            .collect(),
    );
    assert!(want.len() >= 2, "{want:?}");
    let port = common::free_port_pair();
    let (truth, theirs) = (
        dir.path().join("truth.jsonl"),
        dir.path().join("aiortc.keylog"),
    );
    let packets = sample("bedrock-login.packets.jsonl");
    let mut server = common::nethernet_peer(&py, "server", port, &packets, &truth, &theirs);
    let target = format!("127.0.0.1:{port}");
    let o = common::run_with_timeout(
        common::bin()
            .args([
                "replay",
                pcap.to_str().unwrap(),
                "--target",
                &target,
                "--bedrock",
            ])
            .args(["--asap", "--json"])
            .env("SSLKEYLOGFILE", &keylog),
        std::time::Duration::from_secs(60),
    );
    let code = server.exit_code(std::time::Duration::from_secs(20));
    let out: Vec<Value> = ndjson(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{out:?} {err}");
    assert_eq!(code, Some(0), "the server's run failed");
    assert!(out.iter().any(|r| r["type"] == "joined"), "{out:?}");
    let replay = out
        .iter()
        .find(|r| r["type"] == "game_replay")
        .expect("game_replay");
    assert_eq!(replay["sent"], want.len(), "{replay}");
    // What the server's application received after the spawn.
    let t: Vec<Value> = std::fs::read_to_string(&truth)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let got = after_spawn(
        t.iter()
            .filter(|r| r["type"] == "packet" && r["side"] == "server" && r["event"] == "received")
            .map(|r| {
                // (--game records no names: set_local_player_as_initialized is id 0x71.)
                let hex = r["hex"].as_str().unwrap().to_string();
                let name = match hex.starts_with("71") {
                    true => "set_local_player_as_initialized".to_string(),
                    false => r["name"].as_str().unwrap_or("unknown").to_string(),
                };
                (name, hex)
            })
            .collect(),
    );
    let hex = |v: &[(String, String)]| v.iter().map(|(_, h)| h.clone()).collect::<Vec<_>>();
    assert_eq!(
        hex(&got),
        hex(&want),
        "the server received, after the spawn"
    );
    println!(
        "replayed over NetherNet: {} packets after the spawn, byte for byte",
        want.len()
    );
}

/// Issue 28: `probe --nethernet` performs the join step by step against
/// aiortc's NetherNet server, each step a record as it happens, and says
/// where a join stopped when nothing listens.
#[test]
fn probe_reports_the_nethernet_join_step_by_step() {
    let Some(py) = common::nethernet_game_peers() else {
        return;
    };
    let dir = common::TempDir::new("nethernet-probe");
    let port = common::free_port_pair();
    let (truth, keys) = (dir.path().join("t.jsonl"), dir.path().join("k.keylog"));
    let packets = sample("bedrock-login.packets.jsonl");
    let mut server = common::nethernet_peer(&py, "server", port, &packets, &truth, &keys);
    let target = format!("127.0.0.1:{port}");
    let probe = |target: &str| {
        let o = common::run_with_timeout(
            common::bin().args(["probe", target, "--nethernet", "--json"]),
            std::time::Duration::from_secs(30),
        );
        let records: Vec<Value> = ndjson(&o.stdout);
        (o.status.code(), records)
    };
    let (code, records) = probe(&target);
    server.wait_or_kill(std::time::Duration::from_secs(15));
    let steps: Vec<&str> = records
        .iter()
        .filter(|r| r["type"] == "step")
        .map(|r| r["step"].as_str().unwrap())
        .collect();
    println!("{steps:?}");
    assert_eq!(code, Some(0), "{records:?}");
    for want in [
        "join_status",
        "offer_answered",
        "ice_connected",
        "dtls_connected",
        "sctp_connected",
        "channel_open",
        "closed",
    ] {
        assert!(steps.contains(&want), "{want}: {steps:?}");
    }
    assert_eq!(steps.iter().filter(|s| **s == "channel_open").count(), 2);
    let outcome = records.iter().find(|r| r["type"] == "probe").unwrap();
    assert_eq!(outcome["outcome"], "joined", "{outcome}");
    // Nothing listens.
    let free = common::free_port_pair();
    let (code, records) = probe(&format!("127.0.0.1:{free}"));
    assert_eq!(code, Some(6), "{records:?}");
    let outcome = records.iter().find(|r| r["type"] == "probe").unwrap();
    assert_eq!(outcome["outcome"], "failed");
    assert!(
        outcome["diagnosis"]
            .as_str()
            .unwrap()
            .ends_with("[refused]"),
        "{outcome}"
    );
}

/// Issue 28: aiortc's client joins our `serve --bedrock --nethernet`
/// through the seeded lossy relay (scripts/relay.py: 10% loss, 5%
/// duplicates, 5% reordered, both ways; our server learns the relay's
/// address from the checks that come from it) and spawns; the capture of
/// the legs reads, with our key log, as the client's application saw it.
#[test]
fn aiortcs_client_joins_our_server_through_a_lossy_relay() {
    let Some(py) = common::nethernet_game_peers() else {
        return;
    };
    let dir = common::TempDir::new("nethernet-serve-lossy");
    let j = join_files(&dir, "1.26.45");
    // The relay's two sockets: a pair of its own (the join's port and the
    // next are ours and bedrock_peers.js's).
    let listen = common::free_port_pair();
    let upstream = listen + 1;
    let filter = format!(
        "port {} or udp port {listen} or udp port {upstream}",
        j.port
    );
    let dump = common::Tcpdump::start(&dir.path().join("lossy.pcap"), &filter);
    let serve = nethernet_server(
        &format!("127.0.0.1:{}", j.port),
        &[
            "--once",
            "--version",
            "1.26.45",
            "--tls-keylog-out",
            j.our_keys.to_str().unwrap(),
        ],
    );
    let relay = format!("{listen}:{upstream}");
    let stats = dir.path().join("relay.json");
    let rates = format!(
        "--relay-args=--seed 7 --loss 0.1 --dup 0.05 --reorder 0.05 --duration 120 --stats-json {}",
        stats.display()
    );
    let more = [
        "--relay",
        &relay,
        "--relay-offer",
        &rates,
        "--step-timeout",
        "30",
    ];
    let (code, f, pcap) = aiortc_client_against(&py, &j, &more, serve, dump);
    let result = std::fs::read_to_string(&j.truth)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"type\":\"result\"") || l.contains("\"type\":\"game\""))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        code,
        Some(0),
        "aiortc's client failed through the relay: {result}"
    );
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    let logins: Vec<&str> = f
        .of_type("login")
        .iter()
        .map(|r| r["event"].as_str().unwrap())
        .collect();
    assert!(logins.contains(&"spawned"), "{logins:?}");
    // Everything went through the relay, and some of it was lost there.
    let st: Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    println!("relay: {st}");
    for dir in ["c2s", "s2c"] {
        assert!(st[dir]["forwarded"].as_u64().unwrap() > 10, "{st}");
    }
    let dropped = st["c2s"]["dropped"].as_u64().unwrap() + st["s2c"]["dropped"].as_u64().unwrap();
    assert!(dropped > 0, "{st}");
    let keys = [j.our_keys.as_path(), j.theirs_keys.as_path()];
    join_reads_as_the_peer_saw_it("through the relay", &pcap, keys, &j.truth, "client", "");
}
