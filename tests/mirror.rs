//! Acceptance test of `raknet-dissect messages`: what the mirror says each
//! application received must be what the application really received.
//!
//! Two REAL peers talk through `scripts/relay.py` (seeded loss, duplication and
//! reordering); tcpdump records the SERVER's side of the relay only (relay <->
//! server), so every c2s datagram in the file reached the server's socket. Then
//! `raknet-dissect messages CAPTURE --dir c2s --json`, less the messages the
//! library consumes itself, must equal, message for message and in order, the
//! list the server application got:
//!
//! - the original RakNet (PyPI `raknet`, `scripts/peers.py --scenario mirror`):
//!   400 client messages of all eight reliabilities (5-7 go on the wire as 0, 2,
//!   3; split UNRELIABLE(_SEQUENCED) as RELIABLE(_SEQUENCED)), channels 0, 1, 2, 5
//!   and 31, 1 byte to 100 kB (about 90 split), at 10% loss, 5% duplication, 5%
//!   reordering, and again with a clean relay;
//! - rust-raknet 1.4 on both ends (Minecraft dialect, `examples/mc_pair.rs
//!   --messages 400`: ReliableOrdered on channels 0-3 up to 100 kB, the other
//!   four reliabilities up to 1340 bytes, sequenced ones on channels 4 and 5),
//!   the same two ways; rust-raknet joins split parts by index, so only the
//!   default reassembly is compared, and an "arrival" anomaly is neither
//!   required nor refused there.
//!
//! The original joins the parts of a split message in ARRIVAL order
//! (docs/wire-format.md section 7), so with loss its application gets some split
//! messages scrambled; peers.py marks them (`"scrambled": true`). The mirror
//! reassembles by split index by default and flags those messages with an anomaly
//! whose kind contains "arrival": they are compared with the bytes the client
//! sent. With `--reassembly arrival` every message must be byte for byte what
//! the server application got.
//!
//! A client that connects again from the same address has new datagram numbers
//! and indices: `samples/handshake.pcap` written twice, 30 s apart (with and
//! without its second offline handshake), must give its messages twice, one
//! flow of two `sessions` and two complete handshake attempts; and the
//! original library really doing it (`peers.py --scenario reconnect`, the client
//! on the LOWER port) must give what each application got, also when the
//! capture is cut so that the flow is first seen at a ConnectionRequest (roles
//! from the messages, not the ports) or in mid-session (roles guessed by port,
//! then corrected by the second ConnectionRequest).
//!
//! Needs root, tcpdump, Python 3 and (part 1) Python with `raknet`; skipped (with a
//! line saying so) without them, unless RAKNET_DISSECT_REQUIRE_PEERS=1. After a
//! failure the files stay in `target/tmp/mirror/<test>-<pid>/` (capture, ground
//! truth, relay counts and trace, the `messages` output; the failure names the
//! directory): `raknet-dissect .../capture.pcap` prints every packet.

mod common;

use common::Tcpdump;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use raknet_dissect::capture::CaptureReader;
use serde_json::Value;

/// Seeds: the relay's (its drops, duplicates and hold-backs depend only on
/// this and each datagram's rank in its direction) and the peers' (payloads).
/// RAKNET_DISSECT_MIRROR_SEED=N replaces the relay's, to explore other losses.
const RELAY_SEED: u64 = 7;
const PEERS_SEED: u64 = 1;

fn relay_seed() -> u64 {
    std::env::var("RAKNET_DISSECT_MIRROR_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(RELAY_SEED)
}
/// Client messages per run (the original's server sends a quarter as many back).
const MESSAGES: usize = 400;
/// One run (peers or mc_pair) is cut off after this.
const RUN_LIMIT: Duration = Duration::from_secs(58);

/// Message ids the original RakPeer handles itself (never given to the application).
const ORIGINAL_CONSUMED: &[u64] = &[0x00, 0x03, 0x09];
/// Message ids rust-raknet handles itself (it gives only game packets, 0xFE, to
/// the application).
const RUST_RAKNET_CONSUMED: &[u64] = &[0x00, 0x03, 0x09, 0x13, 0x15];

// ---------------------------------------------------------------------------
// Files, ports, tools
// ---------------------------------------------------------------------------

/// `target/tmp/mirror/NAME-PID/`, new: two test runs at once (two `cargo test`)
/// must not write into each other's files. Removed when the test passes.
fn work_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("mirror")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("work dir");
    dir
}

fn capture_ready() -> bool {
    common::require_tool("tcpdump") && common::require_tool("python3") && common::require_root()
}

/// Send SIGINT to a child we started.
fn interrupt(child: &Child) {
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
}

/// Wait for `child` at most `limit`; kill it after that.
fn wait_or_kill(child: &mut Child, limit: Duration) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Lines of a child's stderr, in a thread; `ready` is sent the first line that
/// contains `marker`; all of it is returned by the thread at EOF.
fn watch_stderr(
    child: &mut Child,
    marker: &'static str,
) -> (mpsc::Receiver<()>, std::thread::JoinHandle<String>) {
    let err = child.stderr.take().expect("stderr piped");
    let (tx, rx) = mpsc::channel();
    let t = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if line.contains(marker) {
                let _ = tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    (rx, t)
}

/// scripts/relay.py, listening on 127.0.0.1:R, forwarding to 127.0.0.1:P.
struct Relay {
    child: Child,
    stderr: std::thread::JoinHandle<String>,
    stats: PathBuf,
}

#[derive(Clone, Copy)]
struct Impairment {
    loss: f64,
    dup: f64,
    reorder: f64,
}

const LOSSY: Impairment = Impairment {
    loss: 0.10,
    dup: 0.05,
    reorder: 0.05,
};
const CLEAN: Impairment = Impairment {
    loss: 0.0,
    dup: 0.0,
    reorder: 0.0,
};

impl Relay {
    fn start(dir: &Path, server: u16, relay: u16, how: Impairment) -> Relay {
        let stats = dir.join("relay.json");
        let mut child = Command::new("python3")
            .arg(common::root().join("scripts/relay.py"))
            .args(["--listen", &format!("127.0.0.1:{relay}")])
            .args(["--target", &format!("127.0.0.1:{server}")])
            .args(["--seed", &relay_seed().to_string()])
            .args(["--loss", &how.loss.to_string()])
            .args(["--dup", &how.dup.to_string()])
            .args(["--reorder", &how.reorder.to_string()])
            .args(["--duration", "60", "--stats-json"])
            .arg(&stats)
            .arg("--trace")
            .arg(dir.join("relay-trace.jsonl"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("relay.py starts");
        let (ready, stderr) = watch_stderr(&mut child, "relay: listening on");
        if ready.recv_timeout(Duration::from_secs(10)).is_err() {
            let _ = child.kill();
            panic!("relay.py did not say it is listening");
        }
        Relay {
            child,
            stderr,
            stats,
        }
    }

    /// Stop it; returns its counts (relay.json).
    fn stop(mut self) -> Value {
        interrupt(&self.child);
        wait_or_kill(&mut self.child, Duration::from_secs(10));
        let err = self.stderr.join().unwrap_or_default();
        let text = std::fs::read_to_string(&self.stats)
            .unwrap_or_else(|e| panic!("relay.py wrote no counts ({e}); it said:\n{err}"));
        serde_json::from_str(&text).expect("relay.json is JSON")
    }
}

/// Run `cmd` (at most RUN_LIMIT) with stdout and stderr to files in `dir`;
/// returns its exit code and the seconds it took.
fn run_logged(cmd: &mut Command, dir: &Path, name: &str) -> (Option<i32>, f64) {
    let out = std::fs::File::create(dir.join(format!("{name}.out"))).expect("log file");
    let err = std::fs::File::create(dir.join(format!("{name}.err"))).expect("log file");
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {name}: {e}"));
    wait_or_kill(&mut child, RUN_LIMIT);
    let code = child.try_wait().ok().flatten().and_then(|s| s.code());
    (code, start.elapsed().as_secs_f64())
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()))
}

fn tail(path: &Path) -> String {
    let mut s = String::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = f.read_to_string(&mut s);
    }
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

// ---------------------------------------------------------------------------
// One captured run
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Dialect {
    /// The original C++ library (peers.py).
    Original,
    /// rust-raknet on both ends (mc_pair).
    RustRaknet,
}

/// What a run left behind.
struct Run {
    dir: PathBuf,
    pcap: PathBuf,
    dialect: Dialect,
    /// Ground truth: what each application received (peers.py / mc_pair --out-json).
    received: Vec<Value>,
    /// What the client sent (`sent` of --sent-json).
    sent: Vec<Value>,
    relay: Value,
    /// The MTU the server agreed to (its ID_OPEN_CONNECTION_REPLY_2). A lost
    /// 0x05 makes the original client try 1200, then 576: this decides which
    /// messages are split.
    mtu: u16,
}

/// The MTU of the last ID_OPEN_CONNECTION_REPLY_2 (0x08) in the capture:
/// `08`, magic (16), server GUID (8), client address (7 for IPv4), MTU (u16 BE).
fn negotiated_mtu(pcap: &Path) -> u16 {
    let mut r = CaptureReader::open(pcap).expect("capture opens");
    let mut mtu = None;
    while let Some(d) = r.next_datagram() {
        let d = d.expect("capture reads to the end");
        let p = &d.payload;
        if p.len() == 35 && p[0] == 0x08 && p[25] == 4 {
            mtu = Some(u16::from_be_bytes([p[32], p[33]]));
        }
    }
    mtu.expect("an ID_OPEN_CONNECTION_REPLY_2 (IPv4) in the capture")
}

fn run_original(name: &str, py: &str, how: Impairment) -> Run {
    let dir = work_dir(name);
    let port = common::free_port_pair();
    let pcap = dir.join("capture.pcap");
    // The server's side of the relay only: relay <-> server (and the server's
    // self-test datagram to its own port).
    let dump = Tcpdump::start(&pcap, &format!("udp port {port}"));
    let relay = Relay::start(&dir, port, port + 1, how);
    let (code, secs) = run_logged(
        Command::new(py)
            .arg(common::root().join("scripts/peers.py"))
            .args(["session", "--port", &port.to_string()])
            .args(["--connect-port", &(port + 1).to_string()])
            .args(["--scenario", "mirror", "--seed", &PEERS_SEED.to_string()])
            .args(["--messages", &MESSAGES.to_string()])
            .args(["--timeout", "50", "--allow-undelivered", "--out-json"])
            .arg(dir.join("received.json"))
            .arg("--sent-json")
            .arg(dir.join("sent.json")),
        &dir,
        "peers",
    );
    let relay = relay.stop();
    dump.stop();
    println!(
        "{name}: peers.py ran {secs:.1} s (exit {code:?}); relay c2s {}",
        relay["c2s"]
    );
    // Exit 0 with --allow-undelivered: connected, and nothing timed out.
    assert_eq!(
        code,
        Some(0),
        "peers.py failed; its stderr ends with:\n{}",
        tail(&dir.join("peers.err"))
    );
    let received = read_json(&dir.join("received.json"))
        .as_array()
        .expect("received.json is a list")
        .clone();
    let sent = read_json(&dir.join("sent.json"))["sent"]
        .as_array()
        .expect("sent.json has a list `sent`")
        .clone();
    Run {
        mtu: negotiated_mtu(&pcap),
        dir,
        pcap,
        dialect: Dialect::Original,
        received,
        sent,
        relay,
    }
}

fn run_minecraft(name: &str, how: Impairment) -> Run {
    let exe = common::mc_pair_exe();
    let dir = work_dir(name);
    let port = common::free_port_pair();
    let pcap = dir.join("capture.pcap");
    let dump = Tcpdump::start(&pcap, &format!("udp port {port}"));
    let relay = Relay::start(&dir, port, port + 1, how);
    let (code, secs) = run_logged(
        Command::new(&exe)
            .arg(port.to_string())
            .args(["--connect-port", &(port + 1).to_string()])
            .args(["--messages", &MESSAGES.to_string()])
            .args(["--seed", &PEERS_SEED.to_string(), "--timeout", "50"])
            .arg("--out-json")
            .arg(dir.join("received.json"))
            .arg("--sent-json")
            .arg(dir.join("sent.json")),
        &dir,
        "mc_pair",
    );
    let relay = relay.stop();
    dump.stop();
    println!(
        "{name}: mc_pair ran {secs:.1} s (exit {code:?}); relay c2s {}",
        relay["c2s"]
    );
    assert_eq!(
        code,
        Some(0),
        "mc_pair failed; it said:\n{}\n{}",
        tail(&dir.join("mc_pair.out")),
        tail(&dir.join("mc_pair.err"))
    );
    let received = read_json(&dir.join("received.json"))
        .as_array()
        .expect("received.json is a list")
        .clone();
    let sent = read_json(&dir.join("sent.json"))["sent"]
        .as_array()
        .expect("sent.json has a list `sent`")
        .clone();
    Run {
        mtu: negotiated_mtu(&pcap),
        dir,
        pcap,
        dialect: Dialect::RustRaknet,
        received,
        sent,
        relay,
    }
}

// ---------------------------------------------------------------------------
// Ground truth
// ---------------------------------------------------------------------------

/// One message the server application received, as the mirror must show it.
#[derive(Debug)]
struct Expected {
    /// Position in the server's receive() order, and `n` in received.json.
    n: u64,
    time: f64,
    /// What the application got.
    hex: String,
    /// What the client sent, when the application got it scrambled (the
    /// original's arrival-order reassembly): the mirror's default output.
    sender_hex: Option<String>,
    /// Reliability name on the wire and ordering channel, when we sent it.
    reliability: Option<&'static str>,
    channel: Option<u64>,
    /// Serial and reliability as sent, for messages.
    what: String,
}

/// Both libraries split a message longer than MTU - 60 bytes (the original's
/// `maxDataSizeBytes`, 1432 at MTU 1492; rust-raknet's `mtu - 60`), in parts
/// of that size.
fn split_limit(mtu: u16) -> usize {
    usize::from(mtu) - 60
}

/// The reliability a message goes on the wire with.
fn wire_reliability(dialect: Dialect, value: u64, len: usize, mtu: u16) -> &'static str {
    const NAMES: [&str; 5] = [
        "UNRELIABLE",
        "UNRELIABLE_SEQUENCED",
        "RELIABLE",
        "RELIABLE_ORDERED",
        "RELIABLE_SEQUENCED",
    ];
    let on_wire = match dialect {
        // 5-7 (*_WITH_ACK_RECEIPT) go out as 0, 2, 3; split messages are made
        // reliable.
        Dialect::Original => {
            let v = [0, 1, 2, 3, 4, 0, 2, 3][value as usize % 8];
            match (v, len > split_limit(mtu)) {
                (0, true) => 2,
                (1, true) => 4,
                (v, _) => v,
            }
        }
        Dialect::RustRaknet => value as usize,
    };
    NAMES[on_wire.min(4)]
}

/// What the server application received, in order, less what the library consumes.
fn expected_messages(run: &Run) -> Vec<Expected> {
    let by_serial: HashMap<u64, &Value> = run
        .sent
        .iter()
        .filter_map(|s| Some((s["serial"].as_u64()?, s)))
        .collect();
    let mut by_hex: HashMap<&str, &Value> = HashMap::new();
    for s in &run.sent {
        by_hex.entry(s["hex"].as_str().unwrap_or("")).or_insert(s);
    }
    let consumed = match run.dialect {
        Dialect::Original => ORIGINAL_CONSUMED,
        Dialect::RustRaknet => RUST_RAKNET_CONSUMED,
    };
    run.received
        .iter()
        .filter(|e| e["side"] == "server" && e["kind"] == "connected")
        .filter(|e| !consumed.contains(&e["id"].as_u64().unwrap_or(0)))
        .map(|e| {
            let hex = e["hex"].as_str().expect("hex").to_string();
            // The client's message: by the serial peers.py matched (also for a
            // scrambled one), else by content (a duplicated unreliable message is
            // delivered twice but matched once).
            let sent = e["sent"]["serial"]
                .as_u64()
                .and_then(|s| by_serial.get(&s).copied())
                .or_else(|| by_hex.get(hex.as_str()).copied());
            let scrambled = e["sent"]["scrambled"] == true;
            let sender_hex = if scrambled {
                let s = sent.expect("a scrambled message has a `sent` serial");
                Some(s["hex"].as_str().expect("hex").to_string())
            } else {
                None
            };
            let (reliability, channel, what) = match sent {
                Some(s) => {
                    let value = s["reliability_value"].as_u64().expect("reliability_value");
                    let len = s["len"].as_u64().unwrap_or(0) as usize;
                    let r = wire_reliability(run.dialect, value, len, run.mtu);
                    let ch = matches!(
                        r,
                        "UNRELIABLE_SEQUENCED" | "RELIABLE_ORDERED" | "RELIABLE_SEQUENCED"
                    )
                    .then(|| s["channel"].as_u64().expect("channel"));
                    let what = format!(
                        "serial {:#x}, sent {} ch {}, {} bytes{}",
                        s["serial"].as_u64().unwrap_or(0),
                        s["reliability"].as_str().unwrap_or("?"),
                        s["channel"],
                        len,
                        if scrambled {
                            ", SCRAMBLED by the server"
                        } else {
                            ""
                        }
                    );
                    (Some(r), ch, what)
                }
                None => (None, None, e["name"].as_str().unwrap_or("?").to_string()),
            };
            Expected {
                n: e["n"].as_u64().unwrap_or(0),
                time: e["time"].as_f64().unwrap_or(0.0),
                hex,
                sender_hex,
                reliability,
                channel,
                what,
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The `messages` command and the comparison
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Reassembly {
    /// The default: parts joined by split index; arrival-order trouble is an anomaly.
    Index,
    /// `--reassembly arrival`: parts joined in arrival order, as the original does.
    Arrival,
}

/// `raknet-dissect messages PCAP --dir c2s --json [--reassembly arrival]`, its
/// `message` records, minus the ids the library consumes. Saved in the run dir.
fn mirror_messages(run: &Run, mode: Reassembly) -> Vec<Value> {
    let mut args = vec![
        "messages".to_string(),
        run.pcap.to_string_lossy().into_owned(),
        "--dir".into(),
        "c2s".into(),
        "--json".into(),
    ];
    if mode == Reassembly::Arrival {
        args.extend(["--reassembly".into(), "arrival".into()]);
    }
    let out = common::run_with_timeout(common::bin().args(&args), Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "`raknet-dissect {}` failed ({}):\n{}",
        args.join(" "),
        out.status,
        stderr
    );
    let file = run.dir.join(match mode {
        Reassembly::Index => "messages.ndjson",
        Reassembly::Arrival => "messages-arrival.ndjson",
    });
    std::fs::write(&file, &out.stdout).expect("save the messages output");
    let consumed = match run.dialect {
        Dialect::Original => ORIGINAL_CONSUMED,
        Dialect::RustRaknet => RUST_RAKNET_CONSUMED,
    };
    String::from_utf8(out.stdout)
        .expect("utf-8 output")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .filter(|r| r["type"] == "message")
        .filter(|r| !consumed.contains(&r["id"].as_u64().unwrap_or(u64::MAX)))
        .collect()
}

fn has_arrival_anomaly(r: &Value) -> bool {
    r["anomalies"].as_array().is_some_and(|a| {
        a.iter()
            .any(|x| x["kind"].as_str().is_some_and(|k| k.contains("arrival")))
    })
}

/// `abcd...` (n bytes) for a message, short.
fn short_hex(h: &str) -> String {
    if h.len() <= 24 {
        h.to_string()
    } else {
        format!("{}..({} bytes)", &h[..24], h.len() / 2)
    }
}

/// Where two hex strings first differ, as a byte offset and both excerpts.
fn hex_diff(want: &str, got: &str) -> String {
    let a = want.as_bytes();
    let b = got.as_bytes();
    let i = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()))
        / 2
        * 2;
    let ex = |h: &str| h.get(i..(i + 16).min(h.len())).unwrap_or("").to_string();
    format!(
        "first difference at byte {}: expected {}.. got {}.. (lengths {} and {})",
        i / 2,
        ex(want),
        ex(got),
        want.len() / 2,
        got.len() / 2
    )
}

/// The data the mirror must show for `e` in `mode`.
fn wanted_hex(e: &Expected, mode: Reassembly) -> &str {
    match (mode, &e.sender_hex) {
        (Reassembly::Index, Some(h)) => h,
        _ => &e.hex,
    }
}

/// Longest common subsequence alignment of two key lists: pairs (i, j) of equal keys.
fn align(a: &[&str], b: &[&str]) -> Vec<(usize, usize)> {
    let (n, m) = (a.len(), b.len());
    let mut t = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            t[i][j] = if a[i] == b[j] {
                t[i + 1][j + 1] + 1
            } else {
                t[i + 1][j].max(t[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut pairs) = (0, 0, Vec::new());
    while i < n && j < m {
        if a[i] == b[j] {
            pairs.push((i, j));
            i += 1;
            j += 1;
        } else if t[i + 1][j] >= t[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    pairs
}

/// Every difference between the ground truth and the mirror's records, one
/// line each: `#index field: expected X, got Y`.
fn compare(
    expected: &[Expected],
    got: &[Value],
    mode: Reassembly,
    dialect: Dialect,
) -> Vec<String> {
    let mut bad = Vec::new();
    // One flow, c2s, frames and times in delivery order.
    let flows: BTreeMap<String, usize> = got.iter().fold(BTreeMap::new(), |mut m, r| {
        *m.entry(r["flow"].to_string()).or_default() += 1;
        m
    });
    if flows.len() > 1 {
        bad.push(format!(
            "records from several flows (flow: count): {flows:?}"
        ));
    }
    for (j, r) in got.iter().enumerate() {
        if r["dir"] != "c2s" {
            bad.push(format!("got #{j}: dir {} with --dir c2s", r["dir"]));
        }
        if j > 0 && r["frame"].as_u64() < got[j - 1]["frame"].as_u64() {
            bad.push(format!(
                "got #{j}: frame {} before frame {} of #{}: not in delivery order",
                r["frame"],
                got[j - 1]["frame"],
                j - 1
            ));
        }
    }
    let want_keys: Vec<String> = expected
        .iter()
        .map(|e| wanted_hex(e, mode).to_string())
        .collect();
    let got_keys: Vec<String> = got
        .iter()
        .map(|r| r["data"].as_str().unwrap_or("").to_string())
        .collect();
    let a: Vec<&str> = want_keys.iter().map(String::as_str).collect();
    let b: Vec<&str> = got_keys.iter().map(String::as_str).collect();
    let pairs = align(&a, &b);
    // The gaps between matched pairs: (expected range, got range).
    let mut gaps = Vec::new();
    let (mut i, mut j) = (0, 0);
    for &(pi, pj) in pairs
        .iter()
        .chain(std::iter::once(&(expected.len(), got.len())))
    {
        if i < pi || j < pj {
            gaps.push((i..pi, j..pj));
        }
        (i, j) = (pi + 1, pj + 1);
    }
    // A message that is in both lists but elsewhere is "out of order".
    let mut unmatched_got: HashMap<&str, Vec<usize>> = HashMap::new();
    for (_, g) in &gaps {
        for k in g.clone() {
            unmatched_got.entry(b[k]).or_default().push(k);
        }
    }
    let mut moved_got = std::collections::HashSet::new();
    let mut moved_exp = std::collections::HashSet::new();
    let mut matched: Vec<(usize, usize)> = pairs.clone();
    let mut lines: Vec<(usize, String)> = Vec::new();
    for (e_range, _) in &gaps {
        for k in e_range.clone() {
            if let Some(js) = unmatched_got.get_mut(a[k]) {
                if !js.is_empty() {
                    let jj = js.remove(0);
                    moved_exp.insert(k);
                    moved_got.insert(jj);
                    matched.push((k, jj));
                    lines.push((
                        k,
                        format!(
                            "#{k} out of order: the server application got ({}) {} as its \
                             #{k}, the mirror shows it as #{jj} (frame {})",
                            expected[k].what,
                            short_hex(a[k]),
                            got[jj]["frame"]
                        ),
                    ));
                }
            }
        }
    }
    let describe = |r: &Value| {
        format!(
            "id {:#04x} {} bytes, frame {}, {} {}",
            r["id"].as_u64().unwrap_or(0),
            r["len"],
            r["frame"],
            r["reliability"].as_str().unwrap_or("?"),
            short_hex(r["data"].as_str().unwrap_or(""))
        )
    };
    // In each gap the rest, side by side: "data" differences, then "missing" or "extra".
    for (e_range, g_range) in &gaps {
        let es: Vec<usize> = e_range.clone().filter(|k| !moved_exp.contains(k)).collect();
        let gs: Vec<usize> = g_range.clone().filter(|k| !moved_got.contains(k)).collect();
        for (&k, &jj) in es.iter().zip(&gs) {
            let e = &expected[k];
            lines.push((
                k,
                format!(
                    "#{k} data: expected ({}) {}; got #{jj} {}: {}",
                    e.what,
                    short_hex(a[k]),
                    describe(&got[jj]),
                    hex_diff(a[k], b[jj])
                ),
            ));
        }
        for &k in es.iter().skip(gs.len()) {
            lines.push((
                k,
                format!(
                    "#{k} missing: the server application got ({}) {} (received.json n={}), \
                     the mirror does not show it",
                    expected[k].what,
                    short_hex(a[k]),
                    expected[k].n
                ),
            ));
        }
        for &jj in gs.iter().skip(es.len()) {
            lines.push((
                e_range.start,
                format!(
                    "got #{jj} extra: {}; the server application never got it",
                    describe(&got[jj])
                ),
            ));
        }
    }
    for &(k, jj) in &matched {
        let mut v = Vec::new();
        check_fields(k, &expected[k], jj, &got[jj], mode, dialect, &mut v);
        lines.extend(v.into_iter().map(|l| (k, l)));
    }
    lines.sort_by_key(|(k, _)| *k);
    bad.extend(lines.into_iter().map(|(_, l)| l));
    bad
}

/// The fields of a matched pair (same data): id, len, reliability, channel,
/// the arrival anomaly, and the time.
fn check_fields(
    i: usize,
    e: &Expected,
    j: usize,
    r: &Value,
    mode: Reassembly,
    dialect: Dialect,
    bad: &mut Vec<String>,
) {
    let at = if i == j {
        format!("#{i}")
    } else {
        format!("#{i} (got #{j})")
    };
    let data = wanted_hex(e, mode);
    let id = u64::from_str_radix(data.get(..2).unwrap_or("ff"), 16).unwrap_or(0);
    if r["id"].as_u64() != Some(id) {
        bad.push(format!("{at} id: expected {id:#04x}, got {}", r["id"]));
    }
    if r["len"].as_u64() != Some(data.len() as u64 / 2) {
        bad.push(format!(
            "{at} len: expected {}, got {}",
            data.len() / 2,
            r["len"]
        ));
    }
    if let Some(want) = e.reliability {
        if r["reliability"].as_str() != Some(want) {
            bad.push(format!(
                "{at} reliability: expected {want} ({}), got {}",
                e.what, r["reliability"]
            ));
        }
        match e.channel {
            Some(ch) if r["channel"].as_u64() != Some(ch) => bad.push(format!(
                "{at} channel: expected {ch} ({}), got {}",
                e.what, r["channel"]
            )),
            None if !r["channel"].is_null() => bad.push(format!(
                "{at} channel: expected none ({want} is neither ordered nor sequenced), got {}",
                r["channel"]
            )),
            _ => {}
        }
    }
    // Only the original joins parts in arrival order: for rust-raknet (which joins
    // them by index) an "arrival" anomaly says what the original would have done.
    if mode == Reassembly::Index && dialect == Dialect::Original {
        let flagged = has_arrival_anomaly(r);
        if e.sender_hex.is_some() && !flagged {
            bad.push(format!(
                "{at} anomalies: the server application got this split message scrambled \
                 (parts joined in arrival order), expected an anomaly whose kind contains \
                 \"arrival\", got {}",
                r["anomalies"]
            ));
        } else if e.sender_hex.is_none() && flagged {
            bad.push(format!(
                "{at} anomalies: an \"arrival\" anomaly, but the server application got \
                 this message intact ({}): {}",
                e.what, r["anomalies"]
            ));
        }
    }
    // The packet that completed the message came before the application polled it.
    if let Some(ts) = r["ts"].as_f64() {
        if e.time > 0.0 && ts > e.time + 0.5 {
            bad.push(format!(
                "{at} ts: {ts:.6} (frame {}) is after the server application got the \
                 message at {:.6}",
                r["frame"], e.time
            ));
        }
    } else {
        bad.push(format!("{at} ts: missing or not a number: {}", r["ts"]));
    }
}

/// Run `messages` in `mode` and compare; returns the report lines (empty: equal).
fn check_mode(run: &Run, expected: &[Expected], mode: Reassembly) -> Vec<String> {
    let got = mirror_messages(run, mode);
    let mut bad = compare(expected, &got, mode, run.dialect);
    let flagged = got.iter().filter(|r| has_arrival_anomaly(r)).count();
    println!(
        "{}: messages ({:?} reassembly): {} records vs {} received by the server \
         application; {} with an arrival anomaly; {} differences",
        run.dir.file_name().unwrap_or_default().to_string_lossy(),
        mode,
        got.len(),
        expected.len(),
        flagged,
        bad.len()
    );
    if !bad.is_empty() {
        let total = bad.len();
        bad.truncate(40);
        if total > 40 {
            bad.push(format!("... and {} more", total - 40));
        }
    }
    bad
}

/// Is `raknet-dissect messages` there at all? (A clear failure until it is.)
/// Before it exists, `messages` is taken for a FILE and `--help` prints the
/// top-level help, so look for the subcommand's own usage line.
fn assert_messages_command_exists() {
    let out = common::run_bin(&["messages", "--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("raknet-dissect messages"),
        "`raknet-dissect messages` is not available yet (`raknet-dissect messages --help` \
         shows no `raknet-dissect messages` usage line; {}); everything before it (peers, \
         relay, capture, ground truth) worked",
        out.status
    );
}

/// The checks of one run in every mode; panics with every difference.
fn check_run(run: &Run, expected: &[Expected], modes: &[Reassembly]) {
    assert_messages_command_exists();
    let mut report = Vec::new();
    for &mode in modes {
        let bad = check_mode(run, expected, mode);
        if !bad.is_empty() {
            report.push(format!(
                "--- `messages --dir c2s --json{}` differs from what the server application \
                 received (index: field: expected, got):",
                if mode == Reassembly::Arrival {
                    " --reassembly arrival"
                } else {
                    ""
                }
            ));
            report.extend(bad);
        }
    }
    assert!(
        report.is_empty(),
        "{}\nfiles: {} (capture.pcap, received.json, sent.json, messages*.ndjson; \
         `raknet-dissect {}` prints every packet)",
        report.join("\n"),
        run.dir.display(),
        run.pcap.display()
    );
}

// ---------------------------------------------------------------------------
// What the scenario must have exercised (else the comparison proves little)
// ---------------------------------------------------------------------------

fn check_scenario(run: &Run, expected: &[Expected], how: Impairment) {
    let client: Vec<&Value> = run.sent.iter().filter(|s| s["side"] == "client").collect();
    let lens: Vec<u64> = client.iter().filter_map(|s| s["len"].as_u64()).collect();
    let mut reliabilities: Vec<u64> = client
        .iter()
        .filter_map(|s| s["reliability_value"].as_u64())
        .collect();
    reliabilities.sort_unstable();
    reliabilities.dedup();
    let mut channels: Vec<u64> = client
        .iter()
        .filter_map(|s| s["channel"].as_u64())
        .collect();
    channels.sort_unstable();
    channels.dedup();
    let split = lens
        .iter()
        .filter(|&&l| l as usize > split_limit(run.mtu))
        .count();
    assert!(client.len() >= 300, "{} client messages", client.len());
    let want_rel: Vec<u64> = match run.dialect {
        Dialect::Original => (0..8).collect(),
        Dialect::RustRaknet => (0..5).collect(),
    };
    assert_eq!(reliabilities, want_rel, "every reliability sent");
    assert!(channels.len() >= 4, "channels {channels:?}");
    assert_eq!(
        lens.iter().min(),
        Some(&1),
        "the smallest message is 1 byte"
    );
    assert!(lens.iter().max() >= Some(&100_000), "a 100 kB message");
    assert!(split >= 5, "{split} split messages");
    let user = expected.iter().filter(|e| e.reliability.is_some()).count();
    assert!(
        user >= 200,
        "the server application got only {user} of our messages"
    );
    let c2s = &run.relay["c2s"];
    if how.loss > 0.0 {
        for k in ["dropped", "duplicated", "reordered"] {
            assert!(c2s[k].as_u64() > Some(0), "relay c2s {k}: {c2s}");
        }
    } else {
        assert_eq!(c2s["received"], c2s["forwarded"], "a clean relay: {c2s}");
    }
    let scrambled = expected.iter().filter(|e| e.sender_hex.is_some()).count();
    println!(
        "{}: MTU {}; client sent {} messages ({} split, {}..{} bytes, channels {:?}); the \
         server application got {} messages ({} of ours, {} scrambled by arrival-order \
         reassembly)",
        run.dir.file_name().unwrap_or_default().to_string_lossy(),
        run.mtu,
        client.len(),
        split,
        lens.iter().min().unwrap_or(&0),
        lens.iter().max().unwrap_or(&0),
        channels,
        expected.len(),
        user,
        scrambled
    );
    if how.loss == 0.0 {
        assert_eq!(scrambled, 0, "nothing is scrambled without loss");
    } else if run.dialect == Dialect::Original {
        // About 1 in 3 split messages at this loss: the arrival-order case is exercised.
        assert!(
            scrambled > 0,
            "no split message arrived scrambled at 10% loss"
        );
    }
}

// ---------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------

fn original(name: &str, how: Impairment) {
    if !capture_ready() {
        return;
    }
    let Some(py) = common::raknet_python() else {
        common::skip_or_fail("Python package raknet (PyPI) not installed");
        return;
    };
    let run = run_original(name, &py, how);
    let expected = expected_messages(&run);
    check_scenario(&run, &expected, how);
    check_run(&run, &expected, &[Reassembly::Index, Reassembly::Arrival]);
    let _ = std::fs::remove_dir_all(&run.dir);
}

fn minecraft(name: &str, how: Impairment) {
    if !capture_ready() {
        return;
    }
    let run = run_minecraft(name, how);
    let expected = expected_messages(&run);
    check_scenario(&run, &expected, how);
    // rust-raknet joins split parts by index: the default mode only.
    check_run(&run, &expected, &[Reassembly::Index]);
    let _ = std::fs::remove_dir_all(&run.dir);
}

#[test]
fn original_library_through_lossy_relay() {
    original("original-lossy", LOSSY);
}

#[test]
fn original_library_through_clean_relay() {
    original("original-clean", CLEAN);
}

#[test]
fn rust_raknet_through_lossy_relay() {
    minecraft("rust-raknet-lossy", LOSSY);
}

#[test]
fn rust_raknet_through_clean_relay() {
    minecraft("rust-raknet-clean", CLEAN);
}

// ---------------------------------------------------------------------------
// A client that connects again from the same address; a capture that starts
// in the middle of a connection
// ---------------------------------------------------------------------------

/// Every UDP datagram of `pcap` but the peers' start-up datagrams (each to its
/// own port).
fn udp_of(pcap: &Path) -> Vec<raknet_dissect::capture::UdpDatagram> {
    let mut r = CaptureReader::open(pcap).expect("capture opens");
    let mut v = Vec::new();
    while let Some(d) = r.next_datagram() {
        let d = d.expect("capture reads to the end");
        if d.src != d.dst {
            v.push(d);
        }
    }
    v
}

/// `datagrams` written to `path` (pcapng, raw IP), each at its time plus `shift`
/// and then again at its time plus `again` (when given).
fn write_udp(
    path: &Path,
    datagrams: &[&raknet_dissect::capture::UdpDatagram],
    again: Option<(Duration, &[&raknet_dissect::capture::UdpDatagram])>,
) {
    let mut w = raknet_dissect::capture::write::Recorder::create(path).expect("capture file");
    let mut all: Vec<(Duration, &raknet_dissect::capture::UdpDatagram)> =
        datagrams.iter().map(|d| (d.ts, *d)).collect();
    if let Some((shift, more)) = again {
        all.extend(more.iter().map(|d| (d.ts + shift, *d)));
    }
    for (ts, d) in all {
        w.record_at(ts, d.src, d.dst, &d.payload)
            .expect("datagram written");
    }
    w.flush().expect("capture flushed");
}

/// `raknet-dissect COMMAND PCAP --json`: its records (it must exit 0).
fn records(command: &str, pcap: &Path) -> Vec<Value> {
    let out = common::run_with_timeout(
        common::bin().arg(command).arg(pcap).arg("--json"),
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "`raknet-dissect {command} {}` failed: {}",
        pcap.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The messages of `messages --json`, as (dir, data) in delivery order.
fn dir_data(messages: &[Value]) -> Vec<(String, String)> {
    messages
        .iter()
        .map(|m| {
            (
                m["dir"].as_str().unwrap_or("?").to_string(),
                m["data"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect()
}

fn step_names(attempt: &Value) -> Vec<&str> {
    attempt["steps"]
        .as_array()
        .map(|a| a.iter().filter_map(|s| s["step"].as_str()).collect())
        .unwrap_or_default()
}

/// An attempt that connected and ended with the client's disconnection.
fn assert_connected_then_disconnected(a: &Value) {
    let steps = step_names(a);
    for s in [
        "connection_request",
        "connection_request_accepted",
        "new_incoming_connection",
        "disconnection_notification",
    ] {
        assert!(
            steps.contains(&s),
            "attempt {} lacks {s}: {a}",
            a["attempt"]
        );
    }
    assert_eq!(a["outcome"], "disconnected_by_client", "{a}");
}

/// The flow record of a capture with one flow.
fn one_flow(pcap: &Path) -> Value {
    let flows = records("flows", pcap);
    assert_eq!(flows.len(), 1, "one flow: {flows:?}");
    flows[0].clone()
}

/// `samples/handshake.pcap` (the original library: ping, connect, every
/// reliability both ways, disconnect) and the same datagrams again 30 s
/// later, from the same two ports: a client that connects again from the
/// same address, its Open Connection handshake in the capture (`whole`) or
/// not (only its datagrams from the ConnectionRequest on). Each session has
/// its own datagram numbers and indices: `messages` must give what the
/// capture gives once, twice; `flows` one flow with `sessions` 2 and no
/// duplicates; `handshake` two attempts, each connected and disconnected.
fn sample_twice(whole: bool) {
    let work = work_dir(if whole { "twice" } else { "twice-no-offline" });
    let sample = common::sample("handshake.pcap");
    let once = udp_of(&sample);
    let all: Vec<&_> = once.iter().collect();
    let connected: Vec<&_> = once
        .iter()
        .skip_while(|d| d.payload.first().is_none_or(|&b| b < 0x80))
        .collect();
    assert_eq!(
        connected.len(),
        all.len() - 6,
        "ping, pong, requests and replies 1, 2"
    );
    let pcap = work.join("twice.pcapng");
    let again = if whole { &all } else { &connected };
    write_udp(&pcap, &all, Some((Duration::from_secs(30), again)));

    let single = records("messages", &sample);
    assert_eq!(single.len(), 80, "messages of samples/handshake.pcap");
    let double = records("messages", &pcap);
    let mut want = dir_data(&single);
    want.extend(dir_data(&single));
    assert_eq!(double.len(), 160);
    assert_eq!(dir_data(&double), want, "each session's messages, in order");
    for m in &double {
        assert_eq!(m["anomalies"], serde_json::json!([]), "{m}");
    }
    let flagged = |pcap: &Path| {
        records("read", pcap)
            .iter()
            .filter(|p| p["anomalies"].as_array().is_some_and(|a| !a.is_empty()))
            .count()
    };
    assert_eq!(
        flagged(&pcap),
        2 * flagged(&sample),
        "no duplicate, no out of order"
    );

    let (one, two) = (one_flow(&sample), one_flow(&pcap));
    assert_eq!(one["sessions"], 1);
    assert_eq!(two["sessions"], 2, "{two}");
    assert_eq!(two["state"], "disconnected_by_client");
    assert_eq!(
        (&two["client"], &two["server"]),
        (&one["client"], &one["server"])
    );
    for dir in ["c2s", "s2c"] {
        for k in ["messages", "data_datagrams", "splits_reassembled"] {
            let (a, b) = (one[dir][k].as_u64().unwrap(), two[dir][k].as_u64());
            assert_eq!(b, Some(2 * a), "{dir}.{k}: {two}");
        }
        assert_eq!(two[dir]["duplicates"], 0, "{two}");
        assert_eq!(
            two[dir]["anomalies"],
            one[dir]["anomalies"].as_u64().unwrap() * 2
        );
    }

    let attempts = records("handshake", &pcap);
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    for a in &attempts {
        assert_connected_then_disconnected(a);
    }
    let starts: Vec<f64> = attempts.iter().filter_map(|a| a["ts"].as_f64()).collect();
    assert!(
        starts[1] - starts[0] > 29.0,
        "the second attempt 30 s later: {starts:?}"
    );
    let first = step_names(&attempts[1])[0];
    assert_eq!(
        first,
        if whole {
            "unconnected_ping"
        } else {
            "connection_request"
        }
    );
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn sample_twice_from_the_same_port_is_two_sessions() {
    sample_twice(true);
}

#[test]
fn sample_twice_without_the_second_offline_handshake_is_two_sessions() {
    sample_twice(false);
}

/// What each application of a peers.py run got from the library
/// (`--out-json`), connected messages only: (dir, hex) in receive() order,
/// per direction.
fn received_by(received: &[Value], dir: &str) -> Vec<(String, String)> {
    received
        .iter()
        .filter(|e| e["kind"] == "connected" && e["dir"] == dir)
        .map(|e| {
            (
                dir.to_string(),
                e["hex"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect()
}

/// `messages` less what the original library consumes, for one direction.
fn shown_to(messages: &[Value], dir: &str) -> Vec<(String, String)> {
    let kept: Vec<Value> = messages
        .iter()
        .filter(|m| m["dir"] == dir)
        .filter(|m| !ORIGINAL_CONSUMED.contains(&m["id"].as_u64().unwrap_or(u64::MAX)))
        .cloned()
        .collect();
    dir_data(&kept)
}

/// The original library (`peers.py session --scenario reconnect`): a client
/// on port P connects to a server on P + 1, exchanges every reliability both
/// ways, disconnects, and a new client RakPeer on the same port P does it all
/// again. Captured with tcpdump:
///
/// - `messages` must be, per direction and in order, what each application
///   got over both connections; `flows` one flow, `sessions` 2, no
///   duplicates; `handshake` two attempts, each connected and disconnected.
/// - The capture cut before its first data datagram (the flow is first seen
///   at the ConnectionRequest, sent from the LOWER port, which the port guess
///   would take for the server's): the ConnectionRequest is c2s, the roles are
///   right, and `messages` gives exactly what the whole capture gives.
/// - Only its data, ACK and NACK datagrams, from after the first
///   NewIncomingConnection: roles guessed by port, the wrong way round, until
///   the second ConnectionRequest says otherwise; from there, the messages of
///   the second connection are those of the whole capture, and the flow record
///   names the client and the server right.
#[test]
fn original_library_reconnects_from_the_same_lower_port() {
    if !capture_ready() {
        return;
    }
    let Some(py) = common::raknet_python() else {
        common::skip_or_fail("Python package raknet (PyPI) not installed");
        return;
    };
    let dir = work_dir("reconnect");
    let port = common::free_port_pair();
    let (client_port, server_port) = (port, port + 1);
    let pcap = dir.join("capture.pcap");
    let dump = Tcpdump::start(&pcap, &format!("udp port {server_port}"));
    let (code, secs) = run_logged(
        Command::new(&py)
            .arg(common::root().join("scripts/peers.py"))
            .args(["session", "--port", &server_port.to_string()])
            .args(["--client-port", &client_port.to_string()])
            .args(["--scenario", "reconnect", "--seed", &PEERS_SEED.to_string()])
            .args(["--timeout", "40", "-v", "--out-json"])
            .arg(dir.join("received.json")),
        &dir,
        "peers",
    );
    dump.stop();
    println!("reconnect: peers.py ran {secs:.1} s (exit {code:?})");
    assert_eq!(
        code,
        Some(0),
        "peers.py failed; its stderr ends with:\n{}",
        tail(&dir.join("peers.err"))
    );
    let received = read_json(&dir.join("received.json"))
        .as_array()
        .expect("received.json is a list")
        .clone();
    let client = format!("127.0.0.1:{client_port}");
    let server = format!("127.0.0.1:{server_port}");

    // The whole capture.
    let all = records("messages", &pcap);
    for d in ["c2s", "s2c"] {
        let (want, got) = (received_by(&received, d), shown_to(&all, d));
        let accepted = if d == "c2s" { "13" } else { "10" };
        let twice = want.iter().filter(|(_, h)| h.starts_with(accepted)).count();
        assert_eq!(twice, 2, "{d}: the application got two connections");
        assert_eq!(got, want, "{d}: messages against what the application got");
    }
    let f = one_flow(&pcap);
    println!("reconnect: {f}");
    assert_eq!(
        (f["client"].as_str(), f["server"].as_str()),
        (Some(&*client), Some(&*server))
    );
    assert_eq!(f["sessions"], 2, "{f}");
    assert_eq!(f["state"], "disconnected_by_client", "{f}");
    for d in ["c2s", "s2c"] {
        assert_eq!(f[d]["duplicates"], 0, "{f}");
    }
    let attempts = records("handshake", &pcap);
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    for a in &attempts {
        assert_connected_then_disconnected(a);
        assert_eq!(a["client"].as_str(), Some(&*client), "{a}");
    }

    // From the first data datagram on: the ConnectionRequest first.
    let udp = udp_of(&pcap);
    let first_data = udp
        .iter()
        .position(|d| d.payload.first().is_some_and(|&b| b >= 0x80))
        .expect("data datagrams");
    let cut: Vec<&_> = udp[first_data..].iter().collect();
    assert_eq!(
        cut[0].src.port(),
        client_port,
        "the client sends the first datagram"
    );
    let cut_pcap = dir.join("from-first-datagram.pcapng");
    write_udp(&cut_pcap, &cut, None);
    let packets = records("read", &cut_pcap);
    let request = &packets[0];
    assert_eq!(
        request["frames"][0]["id"], 9,
        "a ConnectionRequest: {request}"
    );
    assert_eq!(request["dir"], "c2s", "{request}");
    assert!(
        packets
            .iter()
            .all(|p| (p["dir"] == "c2s") == (p["src"] == client.as_str())),
        "every packet from the client is c2s"
    );
    let got = records("messages", &cut_pcap);
    assert_eq!(
        dir_data(&got),
        dir_data(&all),
        "messages of the cut capture"
    );
    let f = one_flow(&cut_pcap);
    assert_eq!(
        (f["client"].as_str(), f["server"].as_str()),
        (Some(&*client), Some(&*server))
    );
    assert_eq!(f["sessions"], 2, "{f}");

    // Only datagrams, from after the first NewIncomingConnection.
    let nic_frame = records("read", &pcap)
        .iter()
        .find(|p| {
            p["frames"]
                .as_array()
                .is_some_and(|f| f.iter().any(|c| c["id"] == 0x13))
        })
        .and_then(|p| p["frame"].as_u64())
        .expect("a datagram with NewIncomingConnection");
    let after_nic = udp
        .iter()
        .position(|d| d.frame == nic_frame)
        .expect("its datagram");
    let data_only: Vec<&_> = udp[after_nic + 1..]
        .iter()
        .filter(|d| d.payload.first().is_some_and(|&b| b >= 0x80))
        .collect();
    let data_pcap = dir.join("data-only.pcapng");
    write_udp(&data_pcap, &data_only, None);
    let got = records("messages", &data_pcap);
    let second = |v: &[Value]| -> Vec<(String, String)> {
        let requests: Vec<usize> = v
            .iter()
            .enumerate()
            .filter(|(_, m)| m["id"] == 9)
            .map(|(i, _)| i)
            .collect();
        dir_data(&v[*requests.last().expect("a ConnectionRequest")..])
    };
    assert_eq!(
        second(&got),
        second(&all),
        "the second connection's messages, once the roles are right"
    );
    let f = one_flow(&data_pcap);
    assert_eq!(
        (f["client"].as_str(), f["server"].as_str()),
        (Some(&*client), Some(&*server))
    );
    assert_eq!(f["sessions"], 2, "{f}");
    assert_eq!(f["state"], "disconnected_by_client", "{f}");
    let attempts = records("handshake", &data_pcap);
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    for a in &attempts {
        assert_eq!(a["client"].as_str(), Some(&*client), "{a}");
        assert_eq!(a["outcome"], "disconnected_by_client", "{a}");
    }
    assert_connected_then_disconnected(&attempts[1]);
    let _ = std::fs::remove_dir_all(&dir);
}
