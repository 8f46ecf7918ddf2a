//! NetherNet through the commands, against the real aiortc sessions of
//! `samples/nethernet-*.pcap`: what each application received (recorded
//! inside the peers, `.truth.jsonl`) is what `game` must show.

mod common;

use common::{run_bin, sample};
use serde_json::Value;

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
    let lines = String::from_utf8(out.stdout).unwrap();
    let records = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    (records, stderr)
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
    for name in ["nethernet-join", "nethernet-lossy"] {
        let truth = truth(name);
        let pcap = sample(&format!("{name}.pcap"));
        let keylog = sample(&format!("{name}.keylog"));
        let (records, _) = records(&[
            "game",
            pcap.to_str().unwrap(),
            "--json",
            "--tls-keylog",
            keylog.to_str().unwrap(),
        ]);
        let game: Vec<&Value> = records.iter().filter(|r| r["type"] == "game").collect();
        assert!(
            records.iter().all(|r| r["type"] == "game"),
            "{name}: a batch that shows nothing"
        );
        let mut flows: Vec<u64> = game.iter().map(|r| r["flow"].as_u64().unwrap()).collect();
        flows.sort();
        flows.dedup();
        assert_eq!(flows.len(), if name == "nethernet-join" { 1 } else { 2 });
        // The reliable channel's packets, in order; the unreliable one's
        // (whole batches, which may overtake) as a count.
        let want_rel = |side| received(&truth, side, "ReliableDataChannel");
        let want_unrel = |side| received(&truth, side, "UnreliableDataChannel").len();
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
    assert!(stderr.contains("NetherNet flow 1"), "{stderr}");
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
    for name in ["nethernet-join", "nethernet-lossy"] {
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
