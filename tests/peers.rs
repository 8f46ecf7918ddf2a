//! Captures made now from real peers over loopback: the original RakNet
//! library (PyPI `raknet`, driven by scripts/peers.py) and the Minecraft
//! dialect (`rust-raknet`, examples/mc_pair.rs), recorded with tcpdump.
//! Every RakNet datagram of the capture must be shown, and none malformed.
//!
//! Needs root, tcpdump and Python with `raknet`; skipped (with a line saying
//! so) without them, unless RAKNET_DISSECT_REQUIRE_PEERS=1.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Tcpdump;

use raknet_dissect::capture::CaptureReader;

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("peers");
    std::fs::create_dir_all(&dir).expect("tmp dir");
    dir.join(name)
}

/// UDP datagrams in a capture between two different endpoints (the
/// original library's start-up datagram goes from a socket to itself).
fn udp_between_peers(path: &Path) -> u64 {
    let mut r = CaptureReader::open(path).expect("capture opens");
    let mut n = 0;
    while let Some(d) = r.next_datagram() {
        let d = d.expect("capture reads to the end");
        if d.src != d.dst {
            n += 1;
        }
    }
    n
}

fn dissect_json(path: &Path) -> Vec<serde_json::Value> {
    let o = common::bin()
        .arg(path)
        .arg("--json")
        .output()
        .expect("binary runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

/// Everything between the peers is shown, nothing is malformed; returns the packets.
fn check_capture(path: &Path) -> Vec<serde_json::Value> {
    let packets = dissect_json(path);
    let mut bad = Vec::new();
    for p in &packets {
        for a in p["anomalies"].as_array().expect("anomalies") {
            if a["kind"] == "malformed" || a["kind"] == "truncated" {
                bad.push(p.to_string());
            }
        }
    }
    assert!(bad.is_empty(), "malformed packets:\n{}", bad.join("\n"));
    assert_eq!(
        packets.len() as u64,
        udp_between_peers(path),
        "every datagram between the peers is shown"
    );
    packets
}

fn capture_ready() -> bool {
    common::require_tool("tcpdump") && common::require_root()
}

#[test]
fn original_library_all_reliabilities() {
    if !capture_ready() {
        return;
    }
    let Some(py) = common::raknet_python() else {
        common::skip_or_fail("Python package raknet (PyPI) not installed");
        return;
    };
    let port = common::free_port_pair();
    let pcap = tmp("original.pcap");
    let truth = tmp("original.expected.json");
    let dump = Tcpdump::start(&pcap, &format!("udp port {port} or udp port {}", port + 1));
    let status = Command::new(&py)
        .arg(common::root().join("scripts/peers.py"))
        .args(["session", "--port", &port.to_string()])
        .args(["--client-port", &(port + 1).to_string()])
        .args(["--scenario", "all-reliabilities", "--timeout", "60"])
        .arg("--out-json")
        .arg(&truth)
        .status()
        .expect("peers.py runs");
    dump.stop();
    assert!(status.success(), "peers.py: {status}");
    let packets = check_capture(&pcap);
    // The capture holds the whole session: handshake, data, ACKs, splits, goodbye.
    let names: Vec<String> = packets
        .iter()
        .flat_map(|p| {
            let mut v = vec![p["name"].as_str().unwrap_or("").to_string()];
            for f in p["frames"].as_array().into_iter().flatten() {
                v.push(f["name"].as_str().unwrap_or("").to_string());
            }
            v
        })
        .collect();
    for want in [
        "ID_OPEN_CONNECTION_REQUEST_1",
        "ID_OPEN_CONNECTION_REPLY_2",
        "ID_CONNECTION_REQUEST_ACCEPTED",
        "ID_NEW_INCOMING_CONNECTION",
        "ID_DISCONNECTION_NOTIFICATION",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} not seen");
    }
    assert!(packets.iter().any(|p| p["kind"] == "ack"));
    assert!(packets
        .iter()
        .flat_map(|p| p["frames"].as_array().into_iter().flatten())
        .any(|f| f.get("split").is_some()));
    // Each user message the server application received was on the wire, c2s.
    let received: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&truth).expect("ground truth")).unwrap();
    let wire_ids: std::collections::HashSet<u64> = packets
        .iter()
        .filter(|p| p["dir"] == "c2s")
        .flat_map(|p| p["frames"].as_array().into_iter().flatten())
        .filter_map(|f| f["id"].as_u64())
        .collect();
    let mut user = 0;
    for m in received
        .iter()
        .filter(|m| m["side"] == "server" && m["kind"] == "connected")
    {
        let id = m["id"].as_u64().unwrap();
        assert!(
            wire_ids.contains(&id),
            "id {id:#x} delivered but not seen c2s"
        );
        user += 1;
    }
    assert!(user > 20, "{user} messages received by the server");
}

#[test]
fn minecraft_dialect_rust_raknet() {
    if !capture_ready() {
        return;
    }
    let exe = common::mc_pair_exe();
    let port = common::free_port_pair();
    let pcap = tmp("minecraft.pcap");
    let dump = Tcpdump::start(&pcap, &format!("udp port {port}"));
    let out = Command::new(&exe)
        .arg(port.to_string())
        .output()
        .expect("mc_pair runs");
    dump.stop();
    assert!(
        out.status.success(),
        "mc_pair: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let packets = check_capture(&pcap);
    let protocol = packets
        .iter()
        .find(|p| p["name"] == "ID_OPEN_CONNECTION_REQUEST_1")
        .and_then(|p| p["protocol"].as_u64());
    assert!(
        matches!(protocol, Some(9..=11)),
        "Minecraft protocol: {protocol:?}"
    );
    let pong = packets
        .iter()
        .find(|p| p["name"] == "ID_UNCONNECTED_PONG")
        .expect("a pong");
    assert_eq!(pong["motd"]["edition"], "MCPE");
    assert!(packets
        .iter()
        .flat_map(|p| p["frames"].as_array().into_iter().flatten())
        .any(|f| f["id"] == 0xfe));
}
