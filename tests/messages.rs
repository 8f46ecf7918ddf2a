//! `messages` on the bundled samples equals what the peers' applications
//! received (the `*.expected.json` ground truth their scripts recorded), and
//! `flows` describes the sessions. No outside tool is needed.

mod common;

use serde_json::Value;

fn json_lines(args: &[&str]) -> Vec<Value> {
    let o = common::run_bin(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

fn expected(name: &str) -> Vec<Value> {
    let path = common::sample(name);
    serde_json::from_str(&std::fs::read_to_string(&path).expect("ground truth")).expect("JSON")
}

/// What an application gets of a direction: `keep` picks the ids it is handed
/// (RakPeer consumes connected pings, pongs and the connection request itself).
fn compare(capture: &str, truth: &str, dir: &str, side: &str, keep: impl Fn(u64) -> bool) {
    let got: Vec<Value> = json_lines(&[
        "messages",
        &common::sample(capture).to_string_lossy(),
        "--json",
        "--dir",
        dir,
    ])
    .into_iter()
    .filter(|m| keep(m["id"].as_u64().unwrap_or(0)))
    .collect();
    let want: Vec<Value> = expected(truth)
        .into_iter()
        .filter(|m| m["side"] == side && m["kind"] == "connected")
        .collect();
    assert!(want.len() >= 3, "{truth}: {} messages", want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            (g["id"].as_u64(), g["len"].as_u64(), g["data"].as_str()),
            (w["id"].as_u64(), w["len"].as_u64(), w["hex"].as_str()),
            "{capture} {dir}: message {i} differs from what the {side} application received"
        );
        assert_eq!(g["type"], "message");
        assert_eq!(g["dir"], dir);
    }
    assert_eq!(
        got.len(),
        want.len(),
        "{capture} {dir}: as many messages as the {side} application received"
    );
}

fn app_visible(id: u64) -> bool {
    !matches!(id, 0x00 | 0x03 | 0x09)
}

#[test]
fn original_library_session_both_directions() {
    // Captured on loopback: each side's capture is what its receiver got.
    compare(
        "handshake.pcap",
        "handshake.expected.json",
        "c2s",
        "server",
        app_visible,
    );
    compare(
        "handshake.pcap",
        "handshake.expected.json",
        "s2c",
        "client",
        app_visible,
    );
    compare(
        "handshake.pcapng",
        "handshake.expected.json",
        "c2s",
        "server",
        app_visible,
    );
    compare(
        "cooked.pcap",
        "cooked.expected.json",
        "c2s",
        "server",
        app_visible,
    );
    compare(
        "original-mc-dialect.pcap",
        "original-mc-dialect.expected.json",
        "c2s",
        "server",
        app_visible,
    );
}

#[test]
fn lossy_session_on_the_server_side() {
    // Captured between the relay and the server: c2s is what the server got.
    compare(
        "lossy.pcap",
        "lossy.expected.json",
        "c2s",
        "server",
        app_visible,
    );
    let packets = json_lines(&[&common::sample("lossy.pcap").to_string_lossy(), "--json"]);
    let kinds: Vec<&str> = packets
        .iter()
        .flat_map(|p| p["anomalies"].as_array().into_iter().flatten())
        .filter_map(|a| a["kind"].as_str())
        .collect();
    for want in ["resend", "gap"] {
        assert!(
            kinds.contains(&want),
            "lossy.pcap shows no {want}: {kinds:?}"
        );
    }
}

#[test]
fn minecraft_dialect_game_messages() {
    // rust-raknet hands its application only game messages (0xfe).
    let game = |id: u64| id == 0xfe;
    compare(
        "minecraft.pcap",
        "minecraft.expected.json",
        "c2s",
        "server",
        game,
    );
    compare("ipv6.pcap", "ipv6.expected.json", "c2s", "server", game);
}

#[test]
fn filters_narrow_the_messages() {
    let f = common::sample("handshake.pcap")
        .to_string_lossy()
        .into_owned();
    let all = json_lines(&["messages", &f, "--json"]);
    let ch5 = json_lines(&["messages", &f, "--json", "--channel", "5"]);
    assert!(!ch5.is_empty() && ch5.iter().all(|m| m["channel"] == 5));
    assert_eq!(ch5.len(), all.iter().filter(|m| m["channel"] == 5).count());
    let id = json_lines(&["messages", &f, "--json", "--id", "0x88"]);
    assert!(!id.is_empty() && id.iter().all(|m| m["id"] == 0x88));
    // One flow in this capture: --flow 2 prints no message, and says so
    // with exit 2, as every command does (issue 13).
    let flow = common::run_bin(&["messages", &f, "--json", "--flow", "2"]);
    assert!(flow.stdout.is_empty(), "one flow in this capture");
    assert_eq!(flow.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&flow.stderr).contains("no flow 2: the capture has 1 RakNet flow")
    );
    assert_eq!(
        json_lines(&["messages", &f, "--json", "--flow", "1"]).len(),
        all.len()
    );
    let cut = json_lines(&["messages", &f, "--json", "--data-limit", "4"]);
    assert!(cut.iter().all(|m| m["data"].as_str().unwrap().len() <= 8));
    assert!(cut.iter().any(|m| m["data_truncated"] == true));
    let text = common::run_bin(&["messages", &f]);
    assert_eq!(
        String::from_utf8_lossy(&text.stdout).lines().count(),
        all.len(),
        "one line per message"
    );
}

#[test]
fn flows_describe_the_sessions() {
    let f = common::sample("lossy.pcap").to_string_lossy().into_owned();
    let flows = json_lines(&["flows", &f, "--json"]);
    assert_eq!(flows.len(), 1);
    let fl = &flows[0];
    assert_eq!(fl["type"], "flow");
    assert_eq!(fl["protocol"], 6);
    assert_eq!(fl["mtu"], 1492);
    assert_eq!(fl["state"], "disconnected_by_client");
    assert!(fl["client_guid"].as_str().unwrap().starts_with("0x"));
    for dir in ["c2s", "s2c"] {
        assert!(fl[dir]["packets"].as_u64().unwrap() > 30);
        assert!(fl[dir]["messages"].as_u64().unwrap() > 20);
    }
    assert!(fl["s2c"]["resends"].as_u64().unwrap() > 0, "{fl}");
    assert!(fl["rtt_ms"]["samples"].as_u64().unwrap() > 10);
    let refused = json_lines(&[
        "flows",
        &common::sample("incompatible-protocol.pcap").to_string_lossy(),
        "--json",
    ]);
    assert!(
        refused.iter().any(|f| f["state"] == "refused"),
        "{refused:?}"
    );
    let table = common::run_bin(&["flows", &f]);
    let t = String::from_utf8_lossy(&table.stdout);
    assert!(
        t.contains("disconnected_by_client") && t.contains("RTT"),
        "{t}"
    );
}
