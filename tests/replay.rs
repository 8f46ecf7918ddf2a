//! `replay` and `serve --replay` against real peers: a capture of original
//! RakNet peers replayed to a fresh original server (PyPI `raknet`), a
//! Minecraft-dialect capture replayed to rust-raknet, and the captured
//! server played to an original client. What those applications receive
//! must be what the capture's applications received (`messages`).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{reader_lines, run_bin, run_with_timeout, sample, wait_line, Proc, TempDir};
use serde_json::Value;

/// A server started with `cmd`, once it printed its `listening` line; its
/// stdout stays drained (a closed pipe would end a server that prints).
struct Listening {
    proc: Proc,
    _lines: std::sync::mpsc::Receiver<String>,
}

impl Listening {
    fn start(cmd: &mut Command, what: &str) -> Listening {
        let mut proc = Proc::spawn(cmd.stdout(Stdio::piped()).stderr(Stdio::null()), what);
        let lines = reader_lines(proc.child.stdout.take().expect("stdout piped"));
        if wait_line(&lines, "listening", Duration::from_secs(20)).is_none() {
            panic!("{what} did not say `listening` within 20 s");
        }
        Listening {
            proc,
            _lines: lines,
        }
    }

    /// Wait at most `limit` for it to exit by itself.
    fn wait(&mut self, limit: Duration) -> bool {
        self.proc.wait_for(limit).is_some()
    }
}

fn python() -> Option<String> {
    let py = common::raknet_python();
    if py.is_none() {
        common::skip_or_fail("Python package raknet (PyPI) not installed");
    }
    py
}

/// User messages (id 0x86 and up, or Minecraft's 0xfe) that `messages`
/// shows received in direction `dir` of the capture, as hex, in order.
fn captured(capture: &Path, dir: &str) -> Vec<String> {
    let o = run_bin(&[
        "messages",
        &*capture.to_string_lossy(),
        "--dir",
        dir,
        "--json",
    ]);
    assert!(o.status.success(), "{o:?}");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON record"))
        .filter(|r| r["id"].as_u64().is_some_and(|id| id >= 0x86))
        .map(|r| r["data"].as_str().expect("data").to_string())
        .collect()
}

/// The user messages a peer's application received, from its `--out-json`.
fn received(out_json: &Path) -> Vec<String> {
    let text =
        std::fs::read_to_string(out_json).unwrap_or_else(|e| panic!("{}: {e}", out_json.display()));
    let records: Vec<Value> = serde_json::from_str(&text).expect("a JSON list");
    records
        .iter()
        .filter(|r| r["kind"] == "connected" && r["id"].as_u64().is_some_and(|id| id >= 0x86))
        .map(|r| r["hex"].as_str().expect("hex").to_string())
        .collect()
}

fn last_record(stdout: &[u8]) -> Value {
    let text = String::from_utf8_lossy(stdout);
    let last = text.lines().last().expect("some output");
    serde_json::from_str(last).expect("a JSON record")
}

#[test]
fn replay_to_a_fresh_original_server_delivers_the_captured_messages() {
    let Some(py) = python() else { return };
    let dir = TempDir::new("replay-orig");
    let out_json = dir.path().join("server.json");
    let record = dir.path().join("replayed.pcapng");
    let port = "19610";
    let mut server = Listening::start(
        Command::new(&py).args([
            &*common::root().join("scripts/peers.py").to_string_lossy(),
            "server",
            "--port",
            port,
            "--once",
            "--out-json",
            &*out_json.to_string_lossy(),
            "--timeout",
            "30",
        ]),
        "peers.py server",
    );
    let capture = sample("handshake.pcap");
    let o = run_with_timeout(
        common::bin().args([
            "replay",
            &*capture.to_string_lossy(),
            "--target",
            format!("127.0.0.1:{port}").as_str(),
            "--asap",
            "--wait",
            "0.3",
            "--record",
            &*record.to_string_lossy(),
            "--json",
        ]),
        Duration::from_secs(30),
    );
    assert!(o.status.success(), "{o:?}");
    let r = last_record(&o.stdout);
    assert_eq!(r["type"], "replay");
    assert_eq!(r["outcome"], "completed");
    assert_eq!(r["protocol"], 6);
    let want = captured(&capture, "c2s");
    assert!(want.len() >= 30, "the sample has its client's messages");
    assert_eq!(r["messages_sent"].as_u64(), Some(want.len() as u64));
    assert_eq!(r["messages_acknowledged"], r["messages_trackable"]);
    assert!(
        server.wait(Duration::from_secs(10)),
        "server ends with the disconnection"
    );
    assert_eq!(
        received(&out_json),
        want,
        "the server application's messages"
    );
    // The recording is a capture like any other: the same messages in it.
    assert_eq!(captured(&record, "c2s"), want);
}

#[test]
fn replay_to_rust_raknet_delivers_the_captured_messages() {
    let exe = match common::mc_pair_built() {
        Ok(p) => p,
        Err(e) => {
            common::skip_or_fail(&format!(
                "mc_pair (rust-raknet example) not installed ({e})"
            ));
            return;
        }
    };
    let dir = TempDir::new("replay-mc");
    let out_json = dir.path().join("server.json");
    let port = "19612";
    let mut server = Listening::start(
        Command::new(&exe).args([
            "--role",
            "server",
            "--host",
            "127.0.0.1",
            port,
            "--once",
            "--out-json",
            &*out_json.to_string_lossy(),
            "--timeout",
            "30",
        ]),
        "mc_pair --role server",
    );
    let capture = sample("minecraft.pcap");
    let o = run_with_timeout(
        common::bin().args([
            "replay",
            &*capture.to_string_lossy(),
            "--target",
            format!("127.0.0.1:{port}").as_str(),
            "--asap",
            "--wait",
            "1",
            "--json",
        ]),
        Duration::from_secs(30),
    );
    assert!(o.status.success(), "{o:?}");
    let r = last_record(&o.stdout);
    assert_eq!(
        (r["outcome"].as_str(), r["protocol"].as_u64()),
        (Some("completed"), Some(10))
    );
    assert!(
        server.wait(Duration::from_secs(10)),
        "server ends with the disconnection"
    );
    let want = captured(&capture, "c2s");
    assert!(!want.is_empty());
    // rust-raknet's records carry every message (kind "connected").
    assert_eq!(received(&out_json), want);
}

#[test]
fn serve_replay_plays_the_captured_server_to_an_original_client() {
    let Some(py) = python() else { return };
    let dir = TempDir::new("serve-replay");
    let out_json = dir.path().join("client.json");
    let port = "19614";
    let capture = sample("handshake.pcap");
    let mut server = Listening::start(
        common::bin().args([
            "serve",
            "--listen",
            format!("127.0.0.1:{port}").as_str(),
            "--replay",
            &*capture.to_string_lossy(),
            "--once",
        ]),
        "raknet-dissect serve --replay",
    );
    // It answers pings with the captured server's pong payload.
    let o = run_bin(&[
        "ping",
        format!("127.0.0.1:{port}").as_str(),
        "--json",
        "--transport",
        "raknet",
    ]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        last_record(&o.stdout)["text"],
        "raknet-dissect sample server"
    );
    let o = run_with_timeout(
        Command::new(&py).args([
            &*common::root().join("scripts/peers.py").to_string_lossy(),
            "client",
            "--connect",
            format!("127.0.0.1:{port}").as_str(),
            "--scenario",
            "basic",
            "--wait",
            "2",
            "--out-json",
            &*out_json.to_string_lossy(),
            "--timeout",
            "30",
        ]),
        Duration::from_secs(40),
    );
    assert!(o.status.success(), "{o:?}");
    assert!(server.wait(Duration::from_secs(10)), "serve --once ends");
    let want = captured(&capture, "s2c");
    assert!(want.len() >= 30);
    assert_eq!(
        received(&out_json),
        want,
        "the client application's messages"
    );
}

#[test]
fn replay_failures_have_exit_codes() {
    // Nothing listens: the handshake diagnosis, exit 6.
    let o = run_bin(&[
        "replay",
        &*sample("handshake.pcap").to_string_lossy(),
        "--target",
        "127.0.0.1:19616",
        "--asap",
    ]);
    assert_eq!(o.status.code(), Some(6), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("[port_unreachable]"));
    // Not a capture: exit 3.
    let o = run_bin(&["replay", "Cargo.toml", "--target", "127.0.0.1:19616"]);
    assert_eq!(o.status.code(), Some(3), "{o:?}");
    // No such flow: exit 2 with the reason, as every command answers a
    // --flow the capture does not have (issue 13; it was 3 here).
    let o = run_bin(&[
        "replay",
        &*sample("handshake.pcap").to_string_lossy(),
        "--flow",
        "99",
        "--target",
        "127.0.0.1:19616",
    ]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("no RakNet flow 99"));
}
