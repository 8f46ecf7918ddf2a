//! End-to-end tests of `raknet-dissect handshake CAPTURE --json` and
//! `raknet-dissect probe HOST:PORT --json`: RakNet connections that fail FOR
//! REAL over loopback, captured with tcpdump.
//!
//! The peers are real: the original C++ library (PyPI `raknet`, through
//! `scripts/peers.py server` / `client`) and our own `probe`, `connect` and
//! `ping`; the failures come from the peers themselves (another protocol
//! version, a full server, no server, a server that shuts down or is stopped
//! with SIGSTOP) or from `scripts/relay.py` put between them (`--max-size`:
//! large datagrams lost; `--drop-after-id`: everything dropped after a given
//! handshake message). Each test captures the traffic on `lo`, runs
//! `handshake --json` on the capture and checks the `outcome` (and the
//! salient fields) of every connection attempt, and where a live client can
//! meet the same failure, the `probe` record of `probe --json`.
//!
//! Needs root (live capture), tcpdump, python3 and a Python with `raknet`
//! (tests/common); without them each test prints `skipped: ...` and passes,
//! unless RAKNET_DISSECT_REQUIRE_PEERS=1. Each test has its own block of five
//! or ten UDP ports in 19500-19584 and captures only those (ICMP errors
//! quoting them included), so the tests run in parallel; every wait is
//! bounded and every child process is killed when a test fails. After a
//! failure the test's files (captures, the peers' output) stay in
//! `target/tmp/handshake/<test>-<pid>/`.
//!
//! Outcomes asserted (docs/handshake.md, the outcome table):
//! `incompatible_protocol`, `no_free_incoming_connections`,
//! `port_unreachable`, `connected` after an MTU fall-back (and a server's
//! MTU cap, which is no fall-back), `no_reply_2`,
//! `connection_request_unanswered`, `disconnected_by_server`, `timed_out`.

mod common;

use common::{
    args, read_json, read_text, reader_lines, tail, wait_line, Finished, Ours, Proc, Tcpdump, Work,
};

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

// ---------------------------------------------------------------------------
// Ports: one block of five or ten per test (its capture takes the block).
// ---------------------------------------------------------------------------

const PORT_PROTOCOL: u16 = 19500;
const PORT_FULL: u16 = 19510;
const PORT_NOTHING: u16 = 19520;
const PORT_MTU: u16 = 19530; // + 1, 2, 3: relays of connect, the original client, probe
const PORT_NO_REPLY_2: u16 = 19540; // + 1: the relay of probe
const PORT_NO_REPLY_2_ORIGINAL: u16 = 19545; // + 1: the relay of the original client
const PORT_REQUEST_LOST: u16 = 19550; // + 1, 2: relays of probe, the original client
const PORT_SHUTDOWN_ORIGINAL: u16 = 19560;
const PORT_SHUTDOWN_OURS: u16 = 19565;
const PORT_SILENT: u16 = 19570;
const PORT_CLIENT_GONE: u16 = 19575;
const PORT_MTU_CAP: u16 = 19580;

/// Exit status of `probe`, `connect` and `ping` without a connection (or pong).
const EXIT_NO_CONNECTION: i32 = 6;

/// The largest UDP payload relay.py lets through in the MTU test: the
/// Open Connection Request 1 of MTU 1200 is padded to 1200 - 28 bytes, so
/// the 1492 probes (1464 bytes) are lost and the 1200 ones pass.
const MAX_PAYLOAD: usize = 1200 - 28;

// ---------------------------------------------------------------------------
// Prerequisites
// ---------------------------------------------------------------------------

/// Root, tcpdump, python3 (relay.py) and a Python with `raknet`; None (after
/// saying `skipped: ...`, or panicking under RAKNET_DISSECT_REQUIRE_PEERS=1)
/// when one is missing.
fn prerequisites() -> Option<String> {
    if !(common::require_tool("tcpdump") && common::require_root()) {
        return None;
    }
    if !common::require_tool("python3") {
        return None;
    }
    let py = common::raknet_python();
    if py.is_none() {
        common::skip_or_fail("Python package raknet (PyPI) not installed");
    }
    py
}

/// Nothing must listen on `port` (UDP, 127.0.0.1) for the test to mean anything.
fn assert_port_free(port: u16) {
    if let Err(e) = UdpSocket::bind(("127.0.0.1", port)) {
        panic!("UDP port {port} is in use ({e}): another program takes this test's port");
    }
}

// ---------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------

/// Wait at most `limit` for `path` to contain `needle`.
fn wait_file_contains(path: &Path, needle: &str, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if read_text(path).contains(needle) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

// ---------------------------------------------------------------------------
// Child processes
// ---------------------------------------------------------------------------

fn parse_ndjson(what: &str, stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {l}")))
        .collect()
}

/// `raknet-dissect ARGS` to completion (at most `limit`).
fn ours(a: &[String], limit: Duration) -> Finished {
    let t0 = Instant::now();
    let out = common::run_with_timeout(common::bin().args(a), limit);
    Finished {
        code: out.status.code(),
        records: parse_ndjson(&a.join(" "), &out.stdout),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        secs: t0.elapsed().as_secs_f64(),
    }
}

/// `ours` in a thread, to run while something else happens.
fn ours_in_background(a: Vec<String>, limit: Duration) -> JoinHandle<Finished> {
    std::thread::spawn(move || ours(&a, limit))
}

/// `probe TARGET --json EXTRA...` (at most 30 s).
fn probe(target: &str, extra: &[&str]) -> JoinHandle<Finished> {
    let mut a = args(&["probe", target, "--json"]);
    a.extend(args(extra));
    ours_in_background(a, Duration::from_secs(30))
}

// ---------------------------------------------------------------------------
// Other peers
// ---------------------------------------------------------------------------

/// `peers.py server --port PORT EXTRA...` (an original-library server),
/// ready (it printed `listening`).
struct PyServer {
    proc: Proc,
    out_json: PathBuf,
    stderr_file: PathBuf,
}

impl PyServer {
    fn start(py: &str, work: &Work, port: u16, extra: &[&str]) -> PyServer {
        assert_port_free(port);
        let out_json = work.file(&format!("server-{port}.json"));
        let stderr_file = work.file(&format!("server-{port}.err"));
        let mut cmd = Command::new(py);
        cmd.arg(common::root().join("scripts/peers.py"))
            .args(["server", "--port", &port.to_string(), "--out-json"])
            .arg(&out_json)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_file).expect("stderr file"));
        let mut proc = Proc::spawn(&mut cmd, "peers.py server");
        let lines = reader_lines(proc.child.stdout.take().expect("stdout piped"));
        assert!(
            wait_line(&lines, "listening ", Duration::from_secs(15)).is_some(),
            "peers.py server did not say it is listening; stderr:\n{}",
            tail(&read_text(&stderr_file), 10)
        );
        PyServer {
            proc,
            out_json,
            stderr_file,
        }
    }

    /// Stop it with SIGTERM (it writes --out-json then): the packets its
    /// application received.
    fn stop(mut self) -> Vec<Value> {
        self.proc.signal(libc::SIGTERM);
        assert!(
            self.proc.wait_or_kill(Duration::from_secs(10)).is_some(),
            "peers.py server ignored SIGTERM; stderr:\n{}",
            tail(&read_text(&self.stderr_file), 10)
        );
        self.received()
    }

    fn received(&self) -> Vec<Value> {
        read_json(&self.out_json)
            .as_array()
            .expect("the server's --out-json is a list")
            .clone()
    }

    fn stderr(&self) -> String {
        read_text(&self.stderr_file)
    }
}

/// `peers.py client --connect TARGET EXTRA...` (an original-library client),
/// started; `-v` so that its stderr says when it is connected ("messages sent").
struct PyClient {
    proc: Proc,
    sent_json: PathBuf,
    stderr_file: PathBuf,
}

impl PyClient {
    fn start(py: &str, work: &Work, name: &str, target: &str, extra: &[&str]) -> PyClient {
        let sent_json = work.file(&format!("{name}.sent.json"));
        let stderr_file = work.file(&format!("{name}.err"));
        let mut cmd = Command::new(py);
        cmd.arg(common::root().join("scripts/peers.py"))
            .args(["client", "--connect", target, "-v", "--sent-json"])
            .arg(&sent_json)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr_file).expect("stderr file"));
        PyClient {
            proc: Proc::spawn(&mut cmd, &format!("peers.py client ({name})")),
            sent_json,
            stderr_file,
        }
    }

    /// Wait (at most `limit`) until it has connected and sent its scenario.
    fn wait_connected(&self, limit: Duration) -> bool {
        wait_file_contains(&self.stderr_file, "messages sent", limit)
    }

    /// Wait at most `limit` for it to exit: its exit code, its stderr, and
    /// the UDP port it used (from --sent-json).
    fn finish(mut self, limit: Duration) -> (Option<i32>, String, u16) {
        let code = self.proc.exit_code(limit);
        let stderr = read_text(&self.stderr_file);
        let port = read_json(&self.sent_json)["client_port"]
            .as_u64()
            .unwrap_or_else(|| panic!("no client_port in --sent-json; stderr:\n{stderr}"));
        (code, stderr, port as u16)
    }
}

/// `scripts/relay.py --listen 127.0.0.1:LISTEN --target 127.0.0.1:TARGET EXTRA...`, ready.
struct Relay {
    proc: Proc,
    stats: PathBuf,
}

impl Relay {
    fn start(work: &Work, listen: u16, target: u16, extra: &[&str]) -> Relay {
        assert_port_free(listen);
        let stats = work.file(&format!("relay-{listen}.json"));
        let mut cmd = Command::new("python3");
        cmd.arg(common::root().join("scripts/relay.py"))
            .args(["--listen", &format!("127.0.0.1:{listen}")])
            .args(["--target", &format!("127.0.0.1:{target}")])
            .args(["--seed", "1", "--duration", "60", "--stats-json"])
            .arg(&stats)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut proc = Proc::spawn(&mut cmd, &format!("relay.py {listen}"));
        let lines = reader_lines(proc.child.stderr.take().expect("stderr piped"));
        assert!(
            wait_line(&lines, "relay: listening on", Duration::from_secs(10)).is_some(),
            "relay.py did not say it is listening"
        );
        Relay { proc, stats }
    }

    /// Stop it (SIGINT): its counts.
    fn stop(mut self) -> Value {
        self.proc.signal(libc::SIGINT);
        assert!(
            self.proc.wait_or_kill(Duration::from_secs(10)).is_some(),
            "relay.py ignored SIGINT"
        );
        read_json(&self.stats)
    }
}

/// tcpdump for the UDP ports `lo..=hi` and the ICMP errors quoting them
/// (ports at bytes 28-31 of the ICMP message: 8 of ICMP, 20 of IPv4).
fn capture_ports(path: PathBuf, lo: u16, hi: u16) -> Tcpdump {
    let filter = format!(
        "(udp and portrange {lo}-{hi}) or (icmp and ((icmp[28:2] >= {lo} and icmp[28:2] <= {hi}) or (icmp[30:2] >= {lo} and icmp[30:2] <= {hi})))"
    );
    Tcpdump::start(&path, &filter)
}

// ---------------------------------------------------------------------------
// `handshake` records
// ---------------------------------------------------------------------------

/// `handshake CAPTURE --json`: its records (it must exit 0, and print only
/// `handshake` records).
fn handshake(pcap: &Path) -> Vec<Value> {
    let out = common::run_with_timeout(
        common::bin().arg("handshake").arg(pcap).arg("--json"),
        Duration::from_secs(30),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "handshake {}: {}",
        pcap.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let records = parse_ndjson("handshake", &out.stdout);
    for r in &records {
        assert_eq!(r["type"], "handshake", "{r}");
    }
    records
}

/// The attempts whose server is 127.0.0.1:`port`.
fn to_server(records: &[Value], port: u16) -> Vec<&Value> {
    let s = format!("127.0.0.1:{port}");
    records
        .iter()
        .filter(|r| r["server"] == s.as_str())
        .collect()
}

/// The attempts from client 127.0.0.1:`port`.
fn from_client(records: &[Value], port: u16) -> Vec<&Value> {
    let c = format!("127.0.0.1:{port}");
    records
        .iter()
        .filter(|r| r["client"] == c.as_str())
        .collect()
}

/// Attempts that sent an Open Connection Request 1 (not only pings).
fn with_probes<'a>(records: &[&'a Value]) -> Vec<&'a Value> {
    records
        .iter()
        .copied()
        .filter(|r| r["mtu_probes"].as_array().is_some_and(|a| !a.is_empty()))
        .collect()
}

fn step_names(r: &Value) -> Vec<String> {
    r["steps"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| s["step"].as_str().unwrap_or("?").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The step names with runs of the same one collapsed.
fn distinct_steps(r: &Value) -> Vec<String> {
    let mut v = step_names(r);
    v.dedup();
    v
}

fn count_steps(r: &Value, name: &str) -> usize {
    step_names(r).iter().filter(|s| *s == name).count()
}

/// The `t` of the first step called `name`.
fn step_time(r: &Value, name: &str) -> Option<f64> {
    r["steps"]
        .as_array()?
        .iter()
        .find(|s| s["step"] == name)
        .and_then(|s| s["t"].as_f64())
}

fn mtu_probes(r: &Value) -> Vec<u64> {
    r["mtu_probes"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default()
}

/// The capture time of the last datagram of each direction, per client
/// address (`read --json`): {client: (last c2s, last s2c)}.
fn last_datagrams(pcap: &Path) -> std::collections::BTreeMap<String, (f64, f64)> {
    let out = common::run_with_timeout(
        common::bin().arg(pcap).arg("--json"),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(0), "read {}", pcap.display());
    let mut last = std::collections::BTreeMap::new();
    for p in parse_ndjson("read", &out.stdout) {
        let (Some(ts), Some(dir)) = (p["ts"].as_f64(), p["dir"].as_str()) else {
            continue;
        };
        let client = if dir == "c2s" { &p["src"] } else { &p["dst"] };
        let e = last
            .entry(client.as_str().unwrap_or("?").to_string())
            .or_insert((0.0, 0.0));
        if dir == "c2s" {
            e.0 = ts;
        } else {
            e.1 = ts;
        }
    }
    last
}

/// One line about an attempt, for the test's output.
fn describe(r: &Value) -> String {
    let mut steps: Vec<(String, usize)> = Vec::new();
    for s in step_names(r) {
        match steps.last_mut() {
            Some((last, n)) if *last == s => *n += 1,
            _ => steps.push((s, 1)),
        }
    }
    let steps: Vec<String> = steps
        .into_iter()
        .map(|(s, n)| if n > 1 { format!("{s} x{n}") } else { s })
        .collect();
    format!(
        "{} -> {}: {} ({}); probes {:?}, mtu {}, protocols {}/{}, {:.3} s; steps: {}",
        r["client"].as_str().unwrap_or("?"),
        r["server"].as_str().unwrap_or("?"),
        r["outcome"].as_str().unwrap_or("?"),
        r["diagnosis"].as_str().unwrap_or("?"),
        mtu_probes(r),
        r["mtu"],
        r["client_protocol"],
        r["server_protocol"],
        r["duration"].as_f64().unwrap_or(-1.0),
        steps.join(", ")
    )
}

fn print_attempts(title: &str, records: &[Value]) {
    println!("{title}: {} attempts", records.len());
    for r in records {
        println!("  {}", describe(r));
    }
}

/// The step names of a `probe --json` run, and the MTU of each request 1 it sent.
fn probe_steps(run: &Finished) -> (Vec<String>, Vec<u64>) {
    let steps = run.of_type("step");
    let names = steps
        .iter()
        .map(|s| s["step"].as_str().unwrap_or("?").to_string())
        .collect();
    let mtus = steps
        .iter()
        .filter(|s| s["step"] == "open_connection_request_1")
        .filter_map(|s| {
            let d = s["detail"].as_str()?;
            let m = d.split("MTU ").nth(1)?;
            m.trim_end_matches(')').parse().ok()
        })
        .collect();
    (names, mtus)
}

fn describe_probe(run: &Finished) -> String {
    let (names, mtus) = probe_steps(run);
    let p = run.of_type("probe");
    let p = p.first().copied().unwrap_or(&Value::Null);
    format!(
        "probe: exit {:?} after {:.2} s, outcome {} ({}), mtu {}; steps {:?}; request 1 MTUs {:?}",
        run.code, run.secs, p["outcome"], p["diagnosis"], p["mtu"], names, mtus
    )
}

fn assert_no_problems(what: &str, problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{what}: {} problem(s):\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

/// Push `msg` unless `ok`.
fn check(problems: &mut Vec<String>, ok: bool, msg: impl FnOnce() -> String) {
    if !ok {
        problems.push(msg());
    }
}

// ---------------------------------------------------------------------------
// 1. Another protocol version
// ---------------------------------------------------------------------------

/// An original client and our `probe`, both speaking RakNet protocol 5, try
/// an original server (protocol 6): it answers ID_INCOMPATIBLE_PROTOCOL_VERSION.
/// `handshake` says `incompatible_protocol`, client_protocol 5 and
/// server_protocol 6, for both attempts; `probe` says `incompatible_protocol`.
#[test]
fn incompatible_protocol_version() {
    let Some(py) = prerequisites() else { return };
    let work = Work::new("protocol");
    let port = PORT_PROTOCOL;
    let server = PyServer::start(&py, &work, port, &["--timeout", "60"]);
    let cap = capture_ports(work.file("protocol.pcap"), port, port + 9);
    let target = format!("127.0.0.1:{port}");
    let client = PyClient::start(&py, &work, "client", &target, &["--protocol", "5"]);
    let (code, stderr, client_port) = client.finish(Duration::from_secs(20));
    let run = probe(&target, &["--protocol", "5"]).join().expect("probe");
    let pcap = cap.stop();
    let got = server.stop();
    let records = handshake(&pcap);
    print_attempts("protocol 5 against 6", &records);
    println!("{}", describe_probe(&run));

    // The peers themselves.
    assert_eq!(
        code,
        Some(1),
        "the original client cannot connect:\n{stderr}"
    );
    assert!(
        stderr.contains("ID_INCOMPATIBLE_PROTOCOL_VERSION (0x19)"),
        "the original client was told 0x19:\n{stderr}"
    );
    assert!(
        got.iter().all(|e| e["id"] != 0x13),
        "no connection reached the server's application: {got:?}"
    );
    // probe
    assert_eq!(run.code, Some(EXIT_NO_CONNECTION), "{}", run.stderr);
    let p = run.one("probe");
    assert_eq!(p["outcome"], "incompatible_protocol", "{p}");
    let d = p["diagnosis"].as_str().unwrap_or("");
    assert!(d.contains("ours 5") && d.contains("the server's 6"), "{d}");
    let (names, mtus) = probe_steps(&run);
    assert_eq!(names, ["unconnected_pong", "open_connection_request_1"]);
    assert_eq!(mtus, [1492]);

    // handshake
    let all = to_server(&records, port);
    assert_eq!(all.len(), records.len(), "only this test's server");
    let tried = with_probes(&all);
    assert_eq!(
        tried.len(),
        2,
        "two connection attempts (the original client's, probe's)"
    );
    let original = from_client(&records, client_port);
    assert_eq!(original.len(), 1, "one attempt from the original client");
    assert!(std::ptr::eq(original[0], tried[0]) || std::ptr::eq(original[0], tried[1]));
    for r in &tried {
        assert_eq!(r["outcome"], "incompatible_protocol", "{}", describe(r));
        assert_eq!(r["client_protocol"], 5, "{}", describe(r));
        assert_eq!(r["server_protocol"], 6, "{}", describe(r));
        assert_eq!(
            r["diagnosis"],
            "the client speaks RakNet protocol 5 and the server 6"
        );
        assert_eq!(
            distinct_steps(r),
            ["open_connection_request_1", "incompatible_protocol_version"],
            "{}",
            describe(r)
        );
        assert_eq!(mtu_probes(r)[0], 1492);
        assert_eq!(r["mtu"], Value::Null, "no reply 1, no MTU: {}", describe(r));
    }
    // probe's ping, from a socket of its own.
    let pings: Vec<&&Value> = all.iter().filter(|r| r["pings"] == 1).collect();
    assert_eq!(pings.len(), 1, "probe's ping");
    assert_eq!(pings[0]["outcome"], "pinged", "{}", describe(pings[0]));
    assert_eq!(pings[0]["pongs"], 1);
}

// ---------------------------------------------------------------------------
// 2. A full server
// ---------------------------------------------------------------------------

/// An original server that accepts no incoming connection
/// (`--max-incoming 0`) answers request 2 with ID_NO_FREE_INCOMING_CONNECTIONS:
/// `handshake` says `no_free_incoming_connections` for the original
/// client's attempt and for probe's, and so does `probe`.
#[test]
fn server_full() {
    let Some(py) = prerequisites() else { return };
    let work = Work::new("full");
    let port = PORT_FULL;
    let server = PyServer::start(
        &py,
        &work,
        port,
        &["--max-incoming", "0", "--timeout", "60"],
    );
    let cap = capture_ports(work.file("full.pcap"), port, port + 9);
    let target = format!("127.0.0.1:{port}");
    let client = PyClient::start(&py, &work, "client", &target, &[]);
    let (code, stderr, client_port) = client.finish(Duration::from_secs(20));
    let run = probe(&target, &[]).join().expect("probe");
    let pcap = cap.stop();
    let got = server.stop();
    let records = handshake(&pcap);
    print_attempts("full server", &records);
    println!("{}", describe_probe(&run));

    assert_eq!(
        code,
        Some(1),
        "the original client cannot connect:\n{stderr}"
    );
    assert!(
        stderr.contains("ID_NO_FREE_INCOMING_CONNECTIONS (0x14)"),
        "the original client was told 0x14:\n{stderr}"
    );
    assert!(
        got.iter().all(|e| e["id"] != 0x13),
        "no connection reached the server's application: {got:?}"
    );
    assert_eq!(run.code, Some(EXIT_NO_CONNECTION), "{}", run.stderr);
    let p = run.one("probe");
    assert_eq!(p["outcome"], "no_free_incoming_connections", "{p}");
    assert!(
        p["diagnosis"]
            .as_str()
            .is_some_and(|d| d.contains("ID_NO_FREE_INCOMING_CONNECTIONS")),
        "{p}"
    );
    let (names, _) = probe_steps(&run);
    assert_eq!(
        names,
        [
            "unconnected_pong",
            "open_connection_request_1",
            "open_connection_reply_1",
            "open_connection_request_2"
        ]
    );

    let all = to_server(&records, port);
    assert_eq!(all.len(), records.len(), "only this test's server");
    let tried = with_probes(&all);
    assert_eq!(tried.len(), 2, "the original client's attempt and probe's");
    assert_eq!(from_client(&records, client_port).len(), 1);
    for r in &tried {
        assert_eq!(
            r["outcome"],
            "no_free_incoming_connections",
            "{}",
            describe(r)
        );
        assert_eq!(
            r["diagnosis"],
            "the server is full: it accepts no more incoming connections"
        );
        assert_eq!(
            distinct_steps(r),
            [
                "open_connection_request_1",
                "open_connection_reply_1",
                "open_connection_request_2",
                "refused"
            ],
            "{}",
            describe(r)
        );
        let refused = &r["steps"]
            .as_array()
            .expect("steps")
            .last()
            .expect("a step")["detail"];
        assert_eq!(refused, "ID_NO_FREE_INCOMING_CONNECTIONS");
        assert_eq!(r["mtu"], 1492, "{}", describe(r));
        assert_eq!(r["client_protocol"], 6);
        assert_eq!(r["server_protocol"], Value::Null);
    }
}

// ---------------------------------------------------------------------------
// 3. No server
// ---------------------------------------------------------------------------

/// Nothing listens on the port: the kernel answers every datagram with ICMP
/// port unreachable. probe (its ping and its handshake), `connect` and the
/// original client (which ignores the ICMP and keeps probing, down to MTU
/// 576) all end in `port_unreachable` in the capture; probe says so live.
#[test]
fn nothing_listens() {
    let Some(py) = prerequisites() else { return };
    let work = Work::new("nothing");
    let port = PORT_NOTHING;
    assert_port_free(port);
    let cap = capture_ports(work.file("nothing.pcap"), port, port + 9);
    let target = format!("127.0.0.1:{port}");
    let client = PyClient::start(&py, &work, "client", &target, &["--timeout", "20"]);
    let run = probe(&target, &[]).join().expect("probe");
    let conn = ours(
        &args(&["connect", &target, "--send", "86aabb", "--json"]),
        Duration::from_secs(30),
    );
    let (code, stderr, client_port) = client.finish(Duration::from_secs(25));
    let pcap = cap.stop();
    let records = handshake(&pcap);
    print_attempts("nothing listens", &records);
    println!("{}", describe_probe(&run));
    println!(
        "connect: exit {:?} after {:.2} s: {}",
        conn.code,
        conn.secs,
        conn.stderr.trim()
    );

    assert_eq!(run.code, Some(EXIT_NO_CONNECTION), "{}", run.stderr);
    let p = run.one("probe");
    assert_eq!(p["outcome"], "port_unreachable", "{p}");
    assert!(
        p["diagnosis"]
            .as_str()
            .is_some_and(|d| d.contains(&target) && d.contains("ICMP port unreachable")),
        "{p}"
    );
    assert!(run.secs < 3.0, "probe took {:.1} s", run.secs);
    let ping_step = run.of_type("step");
    assert!(
        ping_step
            .first()
            .is_some_and(|s| s["step"] == "unconnected_ping"
                && s["detail"]
                    .as_str()
                    .unwrap_or("")
                    .contains("port unreachable")),
        "probe's ping saw the ICMP: {ping_step:?}"
    );
    assert_eq!(conn.code, Some(EXIT_NO_CONNECTION), "{}", conn.stderr);
    assert!(
        conn.stderr.contains("[port_unreachable]"),
        "connect names the step: {}",
        conn.stderr
    );
    assert!(conn.of_type("connected").is_empty());
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("ID_CONNECTION_ATTEMPT_FAILED (0x11)"),
        "{stderr}"
    );

    let all = to_server(&records, port);
    assert_eq!(all.len(), records.len(), "only this test's port");
    assert_eq!(
        all.len(),
        4,
        "probe's ping, probe's handshake, connect, the original client"
    );
    let want = format!("nothing listens on {target}: the kernel answered ICMP port unreachable");
    for r in &all {
        assert_eq!(r["outcome"], "port_unreachable", "{}", describe(r));
        assert_eq!(r["diagnosis"], want.as_str());
        // The kernel answers each datagram (no rate limit on loopback).
        let requests =
            count_steps(r, "unconnected_ping") + count_steps(r, "open_connection_request_1");
        assert!(requests >= 1, "{}", describe(r));
        assert_eq!(count_steps(r, "icmp"), requests, "{}", describe(r));
        assert!(
            r["steps"]
                .as_array()
                .expect("steps")
                .iter()
                .filter(|s| s["step"] == "icmp")
                .all(|s| s["dir"] == "s2c" && s["detail"] == "port_unreachable"),
            "{}",
            describe(r)
        );
    }
    assert_eq!(with_probes(&all).len(), 3);
    let original = from_client(&records, client_port);
    assert_eq!(original.len(), 1);
    let probes = mtu_probes(original[0]);
    assert!(
        probes.len() >= 4
            && probes[0] == 1492
            && probes.windows(2).all(|w| w[0] >= w[1])
            && probes.last() < Some(&1200),
        "the original client probed down to MTU 576 regardless of the ICMP: {probes:?}"
    );
}

// ---------------------------------------------------------------------------
// 4. A path that loses large datagrams: MTU fall-back
// ---------------------------------------------------------------------------

/// relay.py `--max-size 1172` (1200 - 28) drops every datagram over 1172
/// bytes, both ways: the Open Connection Requests 1 of MTU 1492 (1464 bytes)
/// are lost, and the clients fall back to MTU 1200 and connect. Our
/// `connect` (sending a 3000-byte message too, split into datagrams of at
/// most 1172 bytes and echoed back by the original server) and the original
/// client, each through its own relay, are captured and still connected
/// when the capture ends: their side says `connected`, mtu_probes 1492, ...,
/// 1200, mtu 1200 and a diagnosis naming the fall-back; the relays' side to
/// the server saw MTU 1200 only. Then `probe` through a third relay says
/// `connected`, MTU 1200. Every datagram the relays dropped was a 1492 probe.
#[test]
fn mtu_falls_back_when_large_datagrams_are_lost() {
    let Some(py) = prerequisites() else { return };
    let work = Work::new("mtu");
    let port = PORT_MTU;
    let server = PyServer::start(&py, &work, port, &["--echo", "--timeout", "60"]);
    let max = MAX_PAYLOAD.to_string();
    let relays: Vec<Relay> = (1..=3)
        .map(|k| {
            let mut extra = vec!["--max-size", max.as_str()];
            if k == 3 {
                // probe pings from one socket and connects from another.
                extra.push("--latest-client");
            }
            Relay::start(&work, port + k, port, &extra)
        })
        .collect();
    let cap = capture_ports(work.file("mtu.pcap"), port, port + 9);
    let t0 = Instant::now();
    let big: String = std::iter::once("86".to_string())
        .chain((1..3000).map(|i| format!("{:02x}", 0x86 + i % 122)))
        .collect();
    let mut conn = Ours::spawn(
        &args(&[
            "connect",
            &format!("127.0.0.1:{}", port + 1),
            "--send",
            "86aabbccdd",
            "--send",
            &big,
            "--wait",
            "6",
            "--json",
        ]),
        None,
    );
    let client = PyClient::start(
        &py,
        &work,
        "client",
        &format!("127.0.0.1:{}", port + 2),
        &["--scenario", "basic", "--wait", "6", "--timeout", "30"],
    );
    let connected = conn.wait_record("connected", Duration::from_secs(10));
    let connected_secs = t0.elapsed().as_secs_f64();
    let original_connected = client.wait_connected(Duration::from_secs(10));
    // The first echo.
    let echo = conn.wait_record("message", Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(200));
    // Stopped while our connect and the original client are still connected.
    let pcap = cap.stop();
    // probe, live only: it disconnects at once, and the original server's
    // first connected ping, sent right after the connection, then often meets
    // a closed port (ICMP): `icmp_for_the_servers_datagrams` covers that.
    let run = probe(&format!("127.0.0.1:{}", port + 3), &[])
        .join()
        .expect("probe");
    let conn = conn.finish(Duration::from_secs(20));
    let (code, stderr, client_port) = client.finish(Duration::from_secs(20));
    let stats: Vec<Value> = relays.into_iter().map(Relay::stop).collect();
    server.stop();
    let records = handshake(&pcap);
    print_attempts("MTU fall-back", &records);
    println!("{}", describe_probe(&run));
    println!(
        "connect: connected after {connected_secs:.2} s ({}), exit {:?}",
        connected.as_ref().map_or("-".into(), |c| c.to_string()),
        conn.code
    );
    for (k, s) in stats.iter().enumerate() {
        println!(
            "relay {}: c2s {} / s2c {}",
            port + 1 + k as u16,
            s["c2s"],
            s["s2c"]
        );
    }

    // The peers.
    let connected = connected.unwrap_or_else(|| panic!("connect did not connect: {}", conn.stderr));
    assert_eq!(connected["mtu"], 1200, "{connected}");
    assert!(
        echo.is_some(),
        "the original server's echo came back through the relay"
    );
    let echoes: Vec<u64> = conn
        .of_type("message")
        .iter()
        .filter_map(|m| m["len"].as_u64())
        .collect();
    assert!(
        echoes.contains(&3000),
        "the 3000-byte message was echoed: {echoes:?}"
    );
    assert_eq!(conn.code, Some(0), "{}", conn.stderr);
    assert_eq!(conn.one("closed")["reason"], "closed");
    assert!(
        original_connected,
        "the original client connected:\n{stderr}"
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let p = run.one("probe");
    assert_eq!(p["outcome"], "connected", "{p}");
    assert_eq!(p["mtu"], 1200, "{p}");
    assert!(
        p["diagnosis"]
            .as_str()
            .is_some_and(|d| d.contains("MTU 1200")),
        "{p}"
    );
    let (_, probe_mtus) = probe_steps(&run);
    assert_eq!(probe_mtus, [1492, 1492, 1492, 1492, 1200]);
    assert_eq!(
        stats[2]["c2s"]["dropped_max_size"], 4,
        "probe's 4 probes of 1492 were dropped, nothing else: {}",
        stats[2]
    );

    // The relays dropped the 1492 probes and nothing else.
    for s in &stats {
        assert!(
            s["c2s"]["dropped_max_size"].as_u64() >= Some(1),
            "the 1492 probes were dropped: {s}"
        );
        assert_eq!(s["c2s"]["dropped"], s["c2s"]["dropped_max_size"], "{s}");
        assert_eq!(s["s2c"]["dropped"], 0, "{s}");
        assert_eq!(s["max_size"], MAX_PAYLOAD, "{s}");
    }

    // Client side of each relay (every difference is listed).
    let mut problems = Vec::new();
    let fallback = "MTU fell back from 1492 to 1200: the larger probes went unanswered";
    for (k, name) in [(1, "connect"), (2, "the original client")] {
        let relay_port = port + k;
        let tried = with_probes(&to_server(&records, relay_port));
        assert_eq!(
            tried.len(),
            1,
            "{name}: one attempt through relay {relay_port}"
        );
        let r = tried[0];
        let d = describe(r);
        let probes = mtu_probes(r);
        let big_probes = probes.iter().filter(|&&m| m == 1492).count() as u64;
        check(
            &mut problems,
            probes.len() >= 2 && probes[0] == 1492 && probes.last() == Some(&1200),
            || format!("{name}: probes 1492, ..., 1200: {d}"),
        );
        if k == 1 {
            check(
                &mut problems,
                probes == [1492, 1492, 1492, 1492, 1200],
                || format!("{name}: our client's probes, 4 of 1492 then 1200: {d}"),
            );
        }
        let dropped = stats[k as usize - 1]["c2s"]["dropped_max_size"].as_u64();
        check(&mut problems, dropped == Some(big_probes), || {
            format!("{name}: the relay dropped {dropped:?} datagrams, the capture shows {big_probes} probes of 1492")
        });
        check(&mut problems, r["mtu"] == 1200, || {
            format!("{name}: mtu: {d}")
        });
        check(
            &mut problems,
            count_steps(r, "open_connection_reply_1") == 1 && r["connection_request_acked"] == true,
            || format!("{name}: one reply 1, the ConnectionRequest acknowledged: {d}"),
        );
        {
            check(&mut problems, r["outcome"] == "connected", || {
                format!("{name}: outcome {} (want connected): {d}", r["outcome"])
            });
            let diag = r["diagnosis"].as_str().unwrap_or("");
            check(
                &mut problems,
                diag.starts_with("connected in ") && diag.ends_with(fallback),
                || format!("{name}: the diagnosis names the fall-back: {diag:?}"),
            );
        }
    }
    check(
        &mut problems,
        from_client(&records, client_port).len() == 1,
        || "one attempt from the original client's port".into(),
    );
    // The relays' side: the server saw MTU 1200 only, no fall-back.
    let server_side = with_probes(&to_server(&records, port));
    assert_eq!(server_side.len(), 2, "two connections reached the server");
    for r in &server_side {
        let d = describe(r);
        check(
            &mut problems,
            mtu_probes(r) == [1200] && r["mtu"] == 1200,
            || format!("relay to server: MTU 1200 only: {d}"),
        );
        check(
            &mut problems,
            !r["diagnosis"].as_str().unwrap_or("").contains("fell back"),
            || format!("relay to server: no fall-back: {d}"),
        );
        check(
            &mut problems,
            !r["diagnosis"].as_str().unwrap_or("").contains("capped"),
            || format!("relay to server: the original server caps nothing below 1492: {d}"),
        );
    }
    for r in &server_side {
        check(&mut problems, r["outcome"] == "connected", || {
            format!("relay to server: connected: {}", describe(r))
        });
    }
    assert_no_problems("MTU fall-back", &problems);
}

/// Our `serve --mtu 1200` grants at most 1200, and our `connect` probes 1492
/// first: the server answers that very probe (the first datagram) with Reply
/// 1 for 1200, and they connect at 1200. Nothing was lost, so `handshake`
/// must not call it a fall-back: the diagnosis says the server capped the MTU.
#[test]
fn server_caps_the_mtu() {
    if !(common::require_tool("tcpdump") && common::require_root()) {
        return;
    }
    let work = Work::new("mtu-cap");
    let port = PORT_MTU_CAP;
    assert_port_free(port);
    let cap = capture_ports(work.file("mtu-cap.pcap"), port, port + 4);
    let listen = format!("127.0.0.1:{port}");
    let mut serve = Ours::spawn(
        &args(&[
            "serve", "--listen", &listen, "--mtu", "1200", "--once", "--json",
        ]),
        None,
    );
    assert!(
        serve
            .wait_record("listening", Duration::from_secs(10))
            .is_some(),
        "serve --mtu 1200 did not start"
    );
    let conn = ours(
        &args(&[
            "connect",
            &listen,
            "--send",
            "86aabbccdd",
            "--wait",
            "1",
            "--json",
        ]),
        Duration::from_secs(20),
    );
    let serve = serve.finish(Duration::from_secs(10));
    let pcap = cap.stop();
    let records = handshake(&pcap);
    print_attempts("server caps the MTU", &records);

    assert_eq!(conn.code, Some(0), "{}", conn.stderr);
    assert_eq!(conn.one("connected")["mtu"], 1200);
    assert_eq!(serve.code, Some(0), "{}", serve.stderr);
    assert_eq!(records.len(), 1, "one attempt");
    let r = &records[0];
    let d = describe(r);
    assert_eq!(mtu_probes(r), [1492], "one probe: {d}");
    assert_eq!(r["mtu"], 1200, "{d}");
    assert_eq!(count_steps(r, "open_connection_reply_1"), 1, "{d}");
    let answered = step_time(r, "open_connection_reply_1").unwrap_or(f64::MAX)
        - step_time(r, "open_connection_request_1").unwrap_or(0.0);
    assert!(answered < 0.1, "the probe was answered at once: {d}");
    assert_eq!(r["outcome"], "disconnected_by_client", "{d}");
    let diag = r["diagnosis"].as_str().unwrap_or("");
    assert!(
        diag.ends_with("; the server capped the MTU at 1200") && !diag.contains("fell back"),
        "the diagnosis names the server's cap, not a fall-back: {diag:?}"
    );
}

// ---------------------------------------------------------------------------
// 5. A relay that cuts the handshake
// ---------------------------------------------------------------------------

/// The relay's side of a handshake cut after request 2 (`--drop-after-id
/// 0x07`): the server sent reply 2, no ConnectionRequest came.
fn check_reply_2_sent(r: &Value, problems: &mut Vec<String>) {
    let d = describe(r);
    check(
        problems,
        r["outcome"] == "connection_request_unanswered"
            && r["diagnosis"] == "reply 2 came; the ConnectionRequest was never sent",
        || format!("relay to server: connection_request_unanswered, never sent: {d}"),
    );
    check(
        problems,
        count_steps(r, "open_connection_request_2") == 1
            && count_steps(r, "open_connection_reply_2") == 1
            && count_steps(r, "connection_request") == 0,
        || format!("relay to server: one request 2, its reply 2, no ConnectionRequest: {d}"),
    );
}

/// relay.py `--drop-after-id 0x07`, probe through it: request 2 reaches the
/// server, whose reply 2 (and every later datagram, probe's 9 resent
/// requests 2 included) is dropped. probe says `no_reply_2` after its 10
/// requests 2 (5 s); so does the client's side of the capture; the relay's
/// side to the server, where reply 2 was sent and no ConnectionRequest came,
/// says `connection_request_unanswered` (`the ConnectionRequest was never sent`).
#[test]
fn reply_2_lost() {
    let Some(py) = prerequisites() else { return };
    let work = Work::new("no-reply-2");
    let port = PORT_NO_REPLY_2;
    let server = PyServer::start(&py, &work, port, &["--timeout", "60"]);
    let relay = Relay::start(
        &work,
        port + 1,
        port,
        &["--drop-after-id", "0x07", "--latest-client"],
    );
    let cap = capture_ports(work.file("no-reply-2.pcap"), port, port + 4);
    let run = probe(&format!("127.0.0.1:{}", port + 1), &[])
        .join()
        .expect("probe");
    let pcap = cap.stop();
    let stats = relay.stop();
    let got = server.stop();
    let records = handshake(&pcap);
    print_attempts("reply 2 lost (probe)", &records);
    println!("{}", describe_probe(&run));
    println!("relay: {stats}");

    assert_eq!(run.code, Some(EXIT_NO_CONNECTION), "{}", run.stderr);
    let p = run.one("probe");
    assert_eq!(p["outcome"], "no_reply_2", "{p}");
    assert_eq!(
        p["diagnosis"],
        "open connection request 2: no reply after 10 attempts (MTU 1492)"
    );
    let (names, _) = probe_steps(&run);
    assert_eq!(
        names
            .iter()
            .filter(|s| *s == "open_connection_request_2")
            .count(),
        10,
        "{names:?}"
    );
    assert!(
        !names.iter().any(|s| s == "open_connection_reply_2"),
        "{names:?}"
    );
    assert!(
        (4.0..8.0).contains(&run.secs),
        "10 requests 2, 500 ms apart: {:.1} s",
        run.secs
    );
    assert!(got.iter().all(|e| e["id"] != 0x13), "{got:?}");
    // The relay cut after the first request 2: the 9 resent ones and reply 2 dropped.
    assert!(stats["cut_after"].is_number(), "{stats}");
    assert_eq!(stats["c2s"]["dropped_after_id"], 9, "{stats}");
    assert_eq!(stats["s2c"]["dropped_after_id"], 1, "{stats}");
    assert_eq!(stats["c2s"]["dropped"], 9, "{stats}");

    let client_side = to_server(&records, port + 1);
    let tried = with_probes(&client_side);
    assert_eq!(tried.len(), 1, "probe's handshake");
    let r = tried[0];
    assert_eq!(r["outcome"], "no_reply_2", "{}", describe(r));
    assert_eq!(
        r["diagnosis"],
        "reply 1 came; 10 Open Connection Request 2 got no reply"
    );
    assert_eq!(count_steps(r, "open_connection_request_2"), 10);
    assert_eq!(count_steps(r, "open_connection_reply_2"), 0);
    assert_eq!(r["mtu"], 1492, "{}", describe(r));
    assert_eq!(client_side.len(), 2, "and probe's ping");
    let server_side = with_probes(&to_server(&records, port));
    assert_eq!(server_side.len(), 1, "the relay reached the server");
    let mut problems = Vec::new();
    check_reply_2_sent(server_side[0], &mut problems);
    assert_no_problems("reply 2 lost (probe)", &problems);
}

/// The same relay with the original client: it sends request 2 once per
/// reply 1, then goes back to request 1 (every later one dropped too) until
/// it gives up (ID_CONNECTION_ATTEMPT_FAILED, ~6 s). Its side of the
/// capture must say `no_reply_2` all the same: request 2 went unanswered
/// for seconds, and the requests 1 after it were repeated.
#[test]
fn reply_2_lost_original_client() {
    let Some(py) = prerequisites() else { return };
    let work = Work::new("no-reply-2-original");
    let port = PORT_NO_REPLY_2_ORIGINAL;
    let server = PyServer::start(&py, &work, port, &["--timeout", "60"]);
    let relay = Relay::start(&work, port + 1, port, &["--drop-after-id", "c2s:0x07"]);
    let cap = capture_ports(work.file("no-reply-2.pcap"), port, port + 4);
    let client = PyClient::start(
        &py,
        &work,
        "client",
        &format!("127.0.0.1:{}", port + 1),
        &["--timeout", "20"],
    );
    let (code, stderr, client_port) = client.finish(Duration::from_secs(25));
    let pcap = cap.stop();
    let stats = relay.stop();
    let got = server.stop();
    let records = handshake(&pcap);
    print_attempts("reply 2 lost (original client)", &records);
    println!("original client: exit {code:?}: {}", tail(&stderr, 2));
    println!("relay: {stats}");

    assert_eq!(
        code,
        Some(1),
        "the original client cannot connect:\n{stderr}"
    );
    assert!(
        stderr.contains("ID_CONNECTION_ATTEMPT_FAILED (0x11)"),
        "{stderr}"
    );
    assert!(got.iter().all(|e| e["id"] != 0x13), "{got:?}");
    assert!(stats["cut_after"].is_number(), "{stats}");
    assert_eq!(stats["s2c"]["dropped_after_id"], 1, "reply 2: {stats}");
    assert!(
        stats["c2s"]["dropped_after_id"].as_u64() >= Some(2),
        "the requests 1 after it: {stats}"
    );

    let mine = from_client(&records, client_port);
    assert_eq!(mine.len(), 1, "one attempt from the original client");
    let r = mine[0];
    let d = describe(r);
    let mut problems = Vec::new();
    check(
        &mut problems,
        count_steps(r, "open_connection_request_2") == 1
            && count_steps(r, "open_connection_reply_2") == 0
            && step_names(r)
                .last()
                .is_some_and(|s| s == "open_connection_request_1")
            && count_steps(r, "open_connection_request_1") >= 3,
        || format!("request 1, reply 1, request 2, then requests 1 again: {d}"),
    );
    let last_request_2 = r["steps"].as_array().and_then(|a| {
        a.iter()
            .filter(|s| s["step"] == "open_connection_request_2")
            .filter_map(|s| s["t"].as_f64())
            .next_back()
    });
    let duration = r["duration"].as_f64();
    check(
        &mut problems,
        matches!((last_request_2, duration), (Some(t), Some(e)) if e - t >= 2.0),
        || {
            format!("the capture went on for seconds after request 2 ({last_request_2:?} of {duration:?} s)")
        },
    );
    check(&mut problems, r["outcome"] == "no_reply_2", || {
        format!("outcome {} (want no_reply_2): {d}", r["outcome"])
    });
    check(
        &mut problems,
        r["diagnosis"] == "reply 1 came; 1 Open Connection Request 2 got no reply",
        || format!("diagnosis {}", r["diagnosis"]),
    );
    let server_side = with_probes(&to_server(&records, port));
    assert_eq!(server_side.len(), 1, "the relay reached the server");
    check_reply_2_sent(server_side[0], &mut problems);
    assert_no_problems("reply 2 lost (original client)", &problems);
}

/// relay.py `--drop-after-id s2c:0x08`: reply 2 reaches the client, whose
/// ConnectionRequest (and everything after) is dropped. The clients' side
/// says `connection_request_unanswered` (`never acknowledged`), the relays'
/// side to the server too (`never sent`); probe says
/// `connection_request_unanswered` after its 10 s time-out.
#[test]
fn connection_request_lost() {
    let Some(py) = prerequisites() else { return };
    let work = Work::new("request-lost");
    let port = PORT_REQUEST_LOST;
    let server = PyServer::start(&py, &work, port, &["--timeout", "60"]);
    let r_probe = Relay::start(
        &work,
        port + 1,
        port,
        &["--drop-after-id", "s2c:0x08", "--latest-client"],
    );
    let r_client = Relay::start(&work, port + 2, port, &["--drop-after-id", "s2c:0x08"]);
    let cap = capture_ports(work.file("request-lost.pcap"), port, port + 9);
    let client = PyClient::start(
        &py,
        &work,
        "client",
        &format!("127.0.0.1:{}", port + 2),
        &["--timeout", "20"],
    );
    let run = probe(&format!("127.0.0.1:{}", port + 1), &[])
        .join()
        .expect("probe");
    let (code, stderr, client_port) = client.finish(Duration::from_secs(25));
    let pcap = cap.stop();
    let s_probe = r_probe.stop();
    let s_client = r_client.stop();
    let got = server.stop();
    let records = handshake(&pcap);
    print_attempts("ConnectionRequest lost", &records);
    println!("{}", describe_probe(&run));
    println!("original client: exit {code:?}: {}", tail(&stderr, 3));
    println!("relay of probe: {s_probe}");
    println!("relay of the original client: {s_client}");

    assert_eq!(run.code, Some(EXIT_NO_CONNECTION), "{}", run.stderr);
    let p = run.one("probe");
    assert_eq!(p["outcome"], "connection_request_unanswered", "{p}");
    let (names, _) = probe_steps(&run);
    assert!(
        names.ends_with(&[
            "open_connection_reply_2".to_string(),
            "connection_request".to_string()
        ]),
        "{names:?}"
    );
    assert!(
        (9.0..20.0).contains(&run.secs),
        "probe gave up after its 10 s time-out, not after {:.1} s",
        run.secs
    );
    assert_eq!(
        code,
        Some(1),
        "the original client cannot connect:\n{stderr}"
    );
    assert!(got.iter().all(|e| e["id"] != 0x13), "{got:?}");
    for s in [&s_probe, &s_client] {
        assert!(s["cut_after"].is_number(), "{s}");
        assert_eq!(s["s2c"]["dropped"], 0, "{s}");
        assert!(s["c2s"]["dropped_after_id"].as_u64() >= Some(2), "{s}");
    }

    for (relay_port, name) in [(port + 1, "probe"), (port + 2, "the original client")] {
        let tried = with_probes(&to_server(&records, relay_port));
        assert_eq!(tried.len(), 1, "{name}");
        let r = tried[0];
        assert_eq!(
            r["outcome"],
            "connection_request_unanswered",
            "{name}: {}",
            describe(r)
        );
        assert_eq!(
            r["diagnosis"], "reply 2 came; the ConnectionRequest was never acknowledged",
            "{name}"
        );
        assert_eq!(r["connection_request_acked"], false);
        assert_eq!(count_steps(r, "connection_request"), 1, "{}", describe(r));
        assert_eq!(count_steps(r, "connection_request_accepted"), 0);
        assert_eq!(r["mtu"], 1492, "{}", describe(r));
    }
    assert_eq!(from_client(&records, client_port).len(), 1);
    let server_side = with_probes(&to_server(&records, port));
    assert_eq!(server_side.len(), 2, "both relays reached the server");
    for r in &server_side {
        assert_eq!(
            r["outcome"],
            "connection_request_unanswered",
            "{}",
            describe(r)
        );
        assert_eq!(
            r["diagnosis"],
            "reply 2 came; the ConnectionRequest was never sent"
        );
        assert_eq!(
            count_steps(r, "open_connection_reply_2"),
            1,
            "{}",
            describe(r)
        );
    }
}

// ---------------------------------------------------------------------------
// 6. A server that shuts down
// ---------------------------------------------------------------------------

/// The server's `shut down after X s` line (peers.py --shutdown-after).
fn shutdown_secs(stderr: &str) -> Option<f64> {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("server: shut down after "))
        .and_then(|l| l.trim_end_matches(" s").parse().ok())
}

/// The number in "..., the server disconnected after X s".
fn disconnected_after(r: &Value) -> Option<f64> {
    r["diagnosis"]
        .as_str()?
        .strip_prefix("connected, the server disconnected after ")?
        .trim_end_matches(" s")
        .parse()
        .ok()
}

/// What `handshake` must say of a connection that the server closed
/// (ID_DISCONNECTION_NOTIFICATION, acknowledged by the client); pushes the
/// differences.
fn check_disconnected_by_server(r: &Value, problems: &mut Vec<String>) {
    let d = describe(r);
    check(problems, r["outcome"] == "disconnected_by_server", || {
        format!(
            "outcome {} (want disconnected_by_server): {d}",
            r["outcome"]
        )
    });
    let names = step_names(r);
    let nic = names.iter().position(|s| s == "new_incoming_connection");
    let dn = names.iter().position(|s| s == "disconnection_notification");
    check(problems, nic.is_some() && dn > nic, || {
        format!("connected, then the notification: {d}")
    });
    let notification = r["steps"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["step"] == "disconnection_notification"));
    check(
        problems,
        notification.is_some_and(|s| s["dir"] == "s2c" && s["detail"] == "by the server"),
        || format!("the notification came from the server: {notification:?}"),
    );
    check(problems, count_steps(r, "icmp") == 0, || {
        format!(
            "{} ICMP errors: the client's port was closed before it acknowledged the notification: {d}",
            count_steps(r, "icmp")
        )
    });
    // The time in the diagnosis is the disconnection's, not the capture's end.
    let at = step_time(r, "disconnection_notification");
    let said = disconnected_after(r);
    check(
        problems,
        matches!((at, said), (Some(a), Some(s)) if (s - a).abs() < 0.2),
        || {
            format!(
                "the diagnosis says the server disconnected after {said:?} s, the notification came at {at:?} s: {d}"
            )
        },
    );
}

/// An original server shuts down (RakPeer.shutdown, notifying its client) 1 s
/// after the original client connected: `disconnected_by_server`. A `ping`
/// of the dead port 1 s later makes the capture go on after the
/// disconnection: the diagnosis must give the notification's time.
#[test]
fn server_shutdown_seen_by_original_client() {
    let Some(py) = prerequisites() else { return };
    let work = Work::new("shutdown-original");
    let port = PORT_SHUTDOWN_ORIGINAL;
    let mut server = PyServer::start(
        &py,
        &work,
        port,
        &["--shutdown-after", "1", "--timeout", "30"],
    );
    let cap = capture_ports(work.file("shutdown.pcap"), port, port + 4);
    let target = format!("127.0.0.1:{port}");
    let client = PyClient::start(
        &py,
        &work,
        "client",
        &target,
        &["--scenario", "basic", "--wait", "8", "--timeout", "20"],
    );
    let server_code = server.proc.exit_code(Duration::from_secs(20));
    let (code, stderr, client_port) = client.finish(Duration::from_secs(20));
    std::thread::sleep(Duration::from_secs(1));
    let ping = ours(&args(&["ping", &target, "--json"]), Duration::from_secs(10));
    let pcap = cap.stop();
    let records = handshake(&pcap);
    let server_err = server.stderr();
    let took = shutdown_secs(&server_err);
    print_attempts("server shutdown, original client", &records);
    println!(
        "server exit {server_code:?}, shut down in {took:?} s; client exit {code:?}; ping exit {:?}",
        ping.code
    );

    assert_eq!(server_code, Some(0), "{server_err}");
    assert!(
        took.is_some_and(|t| (1.0..1.5).contains(&t)),
        "the shutdown (1 s after the connection) returned once the notification was acknowledged: {took:?}\n{server_err}"
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("the connection ended early (ID_DISCONNECTION_NOTIFICATION)"),
        "{stderr}"
    );
    assert_eq!(ping.code, Some(EXIT_NO_CONNECTION), "the server is gone");

    let mine = from_client(&records, client_port);
    assert_eq!(mine.len(), 1, "one attempt from the original client");
    let mut problems = Vec::new();
    check_disconnected_by_server(mine[0], &mut problems);
    let rest: Vec<&Value> = records
        .iter()
        .filter(|r| !std::ptr::eq(*r, mine[0]))
        .collect();
    check(
        &mut problems,
        rest.len() == 1 && rest[0]["outcome"] == "port_unreachable",
        || format!("the later ping: port_unreachable: {rest:?}"),
    );
    assert_no_problems("server shutdown seen by the original client", &problems);
}

/// The same with our `connect` as the client: it must acknowledge the
/// server's ID_DISCONNECTION_NOTIFICATION before it closes its socket, as
/// the original does (else the server resends it until its shutdown gives
/// up, and the kernel answers ICMP port unreachable), and `handshake` must
/// say `disconnected_by_server`.
#[test]
fn server_shutdown_seen_by_our_connect() {
    let Some(py) = prerequisites() else { return };
    let work = Work::new("shutdown-ours");
    let port = PORT_SHUTDOWN_OURS;
    let mut server = PyServer::start(
        &py,
        &work,
        port,
        &["--shutdown-after", "1", "--timeout", "30"],
    );
    let cap = capture_ports(work.file("shutdown.pcap"), port, port + 4);
    let target = format!("127.0.0.1:{port}");
    let conn = ours_in_background(
        args(&[
            "connect",
            &target,
            "--send",
            "86aabbccdd",
            "--wait",
            "8",
            "--json",
        ]),
        Duration::from_secs(20),
    );
    let server_code = server.proc.exit_code(Duration::from_secs(20));
    let conn = conn.join().expect("connect");
    let pcap = cap.stop();
    let records = handshake(&pcap);
    let server_err = server.stderr();
    let took = shutdown_secs(&server_err);
    print_attempts("server shutdown, our connect", &records);
    println!(
        "server exit {server_code:?}, shut down in {took:?} s; connect exit {:?} after {:.2} s, {:?}",
        conn.code,
        conn.secs,
        conn.of_type("closed")
    );

    assert_eq!(server_code, Some(0), "{server_err}");
    assert_eq!(conn.code, Some(0), "{}", conn.stderr);
    let closed = conn.one("closed");
    assert_eq!(closed["reason"], "disconnected_by_peer", "{closed}");
    assert!(
        closed["seconds"].as_f64().is_some_and(|s| s < 3.0),
        "connect saw the disconnection at once, not after its --wait: {closed}"
    );
    assert_eq!(records.len(), 1, "one attempt");
    let mut problems = Vec::new();
    check(
        &mut problems,
        took.is_some_and(|t| (1.0..1.5).contains(&t)),
        || {
            format!(
                "the server's shutdown waited {took:?} s (1 s after the connection, then up to its 1 s block): our client never acknowledged the notification"
            )
        },
    );
    check_disconnected_by_server(&records[0], &mut problems);
    assert_no_problems("server shutdown seen by our connect", &problems);
}

// ---------------------------------------------------------------------------
// 7. A server that goes silent
// ---------------------------------------------------------------------------

/// Our `connect --wait 15` and the original client are connected to an
/// original server, which is then stopped (SIGSTOP: its socket stays, it
/// answers nothing, no ICMP). Both clients resend, then give up after their
/// 10 s time-out; the capture goes on. `handshake` must say `timed_out`,
/// `the server went silent at X s` (X when the server was stopped) for both.
#[test]
fn silent_server_times_out() {
    let Some(py) = prerequisites() else { return };
    let work = Work::new("silent");
    let port = PORT_SILENT;
    let server = PyServer::start(&py, &work, port, &["--timeout", "60"]);
    let cap = capture_ports(work.file("silent.pcap"), port, port + 4);
    let target = format!("127.0.0.1:{port}");
    let t0 = Instant::now();
    let mut conn = Ours::spawn(
        &args(&[
            "connect",
            &target,
            "--send",
            "86aabbccdd",
            "--wait",
            "15",
            "--json",
        ]),
        None,
    );
    let client = PyClient::start(
        &py,
        &work,
        "client",
        &target,
        &["--scenario", "basic", "--wait", "20", "--timeout", "30"],
    );
    let connected = conn.wait_record("connected", Duration::from_secs(10));
    let original_connected = client.wait_connected(Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(300));
    server.proc.signal(libc::SIGSTOP);
    let stopped_at = t0.elapsed().as_secs_f64();
    let t_stop = Instant::now();
    let closed = conn.wait_record("closed", Duration::from_secs(20));
    let ours_after = t_stop.elapsed().as_secs_f64();
    let conn = conn.finish(Duration::from_secs(5));
    let (code, stderr, client_port) = client.finish(Duration::from_secs(20));
    let original_after = t_stop.elapsed().as_secs_f64();
    let pcap = cap.stop();
    server.proc.signal(libc::SIGCONT);
    drop(server);
    let records = handshake(&pcap);
    let last = last_datagrams(&pcap);
    print_attempts("silent server", &records);
    for (client, (c, s)) in &last {
        println!(
            "  {client}: its last datagram {:.3} s after the server's last one",
            c - s
        );
    }
    println!(
        "server stopped {stopped_at:.2} s after the clients started; our connect closed {ours_after:.2} s later ({:?}), exit {:?}; the original client exited {original_after:.2} s later with {code:?}",
        closed.as_ref().map(|c| c["reason"].clone()),
        conn.code
    );

    assert!(
        connected.is_some(),
        "our connect connected: {}",
        conn.stderr
    );
    assert!(
        original_connected,
        "the original client connected:\n{stderr}"
    );
    let closed = closed.unwrap_or_else(|| panic!("no `closed` record: {}", conn.stderr));
    assert_eq!(closed["reason"], "timed_out", "{closed}");
    assert_eq!(conn.code, Some(EXIT_NO_CONNECTION));
    assert!(
        (7.0..13.0).contains(&ours_after),
        "our client timed out {ours_after:.1} s after the server stopped (10 s time-out)"
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("ID_CONNECTION_LOST"), "{stderr}");

    let all = to_server(&records, port);
    assert_eq!(all.len(), records.len());
    assert_eq!(
        all.len(),
        2,
        "two attempts: our connect, the original client"
    );
    let mut problems = Vec::new();
    for r in &all {
        let who = if r["client"] == format!("127.0.0.1:{client_port}").as_str() {
            "the original client"
        } else {
            "our connect"
        };
        let d = describe(r);
        check(
            &mut problems,
            count_steps(r, "new_incoming_connection") == 1,
            || format!("{who}: connected first: {d}"),
        );
        // The client went on sending (resends, pings) until its time-out.
        let kept = r["client"]
            .as_str()
            .and_then(|c| last.get(c))
            .map(|(c, s)| c - s);
        check(&mut problems, kept.is_some_and(|k| k >= 5.0), || {
            format!("{who}: kept sending for {kept:?} s after the server went silent")
        });
        check(&mut problems, r["outcome"] == "timed_out", || {
            format!("{who}: outcome {} (want timed_out): {d}", r["outcome"])
        });
        let diag = r["diagnosis"].as_str().unwrap_or("");
        let silent_at: Option<f64> = diag
            .strip_prefix("the server went silent at ")
            .and_then(|s| s.split(" s;").next())
            .and_then(|s| s.parse().ok());
        check(
            &mut problems,
            silent_at.is_some_and(|s| (s - stopped_at).abs() < 1.0),
            || {
                format!(
                    "{who}: the diagnosis says the server went silent at {silent_at:?} s (it was stopped at about {stopped_at:.2} s): {diag:?}"
                )
            },
        );
    }
    assert_no_problems("silent server", &problems);
}

// ---------------------------------------------------------------------------
// 8. ICMP errors for the server's datagrams
// ---------------------------------------------------------------------------

/// The original client is killed (SIGKILL) while connected; 2 s after the
/// connection the original server shuts down, and its
/// ID_DISCONNECTION_NOTIFICATION (resent for its 1 s shutdown block) meets
/// the closed port: the kernel answers ICMP port unreachable quoting the
/// SERVER's datagrams. `port_unreachable` is for ICMP errors answering the
/// client's datagrams (docs/handshake.md), and the server does listen: the attempt must
/// say `disconnected_by_server`, and no diagnosis may say that nothing
/// listens on the server's port.
#[test]
fn icmp_for_the_servers_datagrams() {
    let Some(py) = prerequisites() else { return };
    let work = Work::new("icmp-s2c");
    let port = PORT_CLIENT_GONE;
    let mut server = PyServer::start(
        &py,
        &work,
        port,
        &["--shutdown-after", "2", "--timeout", "30"],
    );
    let cap = capture_ports(work.file("icmp-s2c.pcap"), port, port + 4);
    let target = format!("127.0.0.1:{port}");
    let mut client = PyClient::start(
        &py,
        &work,
        "client",
        &target,
        &["--scenario", "basic", "--wait", "10", "--timeout", "20"],
    );
    assert!(
        client.wait_connected(Duration::from_secs(10)),
        "the original client connected:\n{}",
        read_text(&client.stderr_file)
    );
    client.proc.signal(libc::SIGKILL);
    let client_code = client.proc.wait_or_kill(Duration::from_secs(5));
    let server_code = server.proc.exit_code(Duration::from_secs(20));
    let pcap = cap.stop();
    let server_err = server.stderr();
    let records = handshake(&pcap);
    print_attempts("client killed, then the server shut down", &records);
    println!(
        "client killed ({client_code:?}); server exit {server_code:?}, shut down after {:?} s",
        shutdown_secs(&server_err)
    );

    assert_eq!(server_code, Some(0), "{server_err}");
    assert_eq!(records.len(), 1, "one attempt");
    let r = &records[0];
    let d = describe(r);
    let icmp: Vec<&Value> = r["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter(|s| s["step"] == "icmp")
        .collect();
    assert!(
        !icmp.is_empty() && icmp.iter().all(|s| s["dir"] == "c2s"),
        "the kernel answered the server's datagrams (ICMP towards the server): {d}"
    );
    let mut problems = Vec::new();
    check(
        &mut problems,
        r["outcome"] == "disconnected_by_server",
        || {
            format!(
                "outcome {} (want disconnected_by_server): {d}",
                r["outcome"]
            )
        },
    );
    check(
        &mut problems,
        !r["diagnosis"]
            .as_str()
            .unwrap_or("")
            .contains(&format!("nothing listens on {target}")),
        || format!("the server listens on {target}: {}", r["diagnosis"]),
    );
    assert_no_problems("ICMP errors for the server's datagrams", &problems);
}
