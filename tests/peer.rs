//! End-to-end tests of the live peer commands (`ping`, `connect`, `serve`)
//! against REAL RakNet implementations over loopback:
//!
//! - the original C++ library (PyPI `raknet`, driven by `scripts/peers.py
//!   server` / `client`), directly and through `scripts/relay.py` (seeded
//!   loss, duplication and reordering);
//! - rust-raknet 1.4 (Minecraft dialect, `examples/mc_pair.rs --role
//!   server|client`), over IPv4 and IPv6 loopback.
//!
//! What each application received (the peers' `--out-json`, our NDJSON
//! records) is compared with what the other side sent: every reliable message
//! exactly once and byte for byte, RELIABLE_ORDERED ones in order per channel,
//! sequenced ones at most once and in order, unreliable ones at most once (and
//! at least 90% of them on clean loopback). The original library joins the
//! parts of a split message in ARRIVAL order (docs/wire-format.md section 7): when a
//! datagram is lost (relay, or a full socket buffer) its application can get a
//! split message with its parts permuted. Such a message counts as delivered
//! only when it is exactly the sender's parts (MTU - 60 bytes each), each once,
//! in another order; the tests print how many there were.
//!
//! Needs Python with `raknet` (target/venv, see tests/common), the mc_pair
//! example, and for the capture test root and tcpdump; each test says
//! `skipped: ...` and passes without them, unless RAKNET_DISSECT_REQUIRE_PEERS=1.
//! Every test uses its own fixed ports (19400-19499) so they run in parallel;
//! every wait is bounded and every child process is killed when a test fails.
//! After a failure the files of the test stay in `target/tmp/peer/<test>-<pid>/`.

mod common;

use common::{
    args, read_json, read_text, reader_lines, tail, wait_line, Ours, Proc, Tcpdump, Work,
};

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

// ---------------------------------------------------------------------------
// Ports: one block per test, so that the tests can run in parallel.
// ---------------------------------------------------------------------------

const PORT_ORIGINAL_SERVER: u16 = 19400;
const PORT_LOSSY_10: u16 = 19410; // + 1: the relay
const PORT_LOSSY_30: u16 = 19412; // + 1: the relay
const PORT_ORIGINAL_CLIENT: u16 = 19420;
const PORT_MC_SERVER_V4: u16 = 19430;
const PORT_MC_CLIENT_V6: u16 = 19431;
const PORT_MC_SERVER_V6: u16 = 19432;
const PORT_SERVER_KILLED: u16 = 19440;
const PORT_SERVER_STOPPED: u16 = 19441;
const PORT_CLIENT_KILLED: u16 = 19442;
const PORT_NOTHING: u16 = 19450;
const PORT_PROTOCOL: u16 = 19451;
const PORT_FULL: u16 = 19452;
const PORT_PING_ORIGINAL: u16 = 19453;
const PORT_PING_MOTD: u16 = 19454;
const PORT_PING_NOTHING: u16 = 19455;
const PORT_CAPTURE: u16 = 19460;

/// The exit status of `connect` / `ping` when no connection (or no pong) was had.
const EXIT_NO_CONNECTION: i32 = 6;

/// Ordering channels used towards the original server (one per run).
const CHANNELS: [u8; 4] = [0, 1, 5, 31];

/// SO_RCVBUF for the original peers (see "Socket receive buffer" in
/// scripts/peers.py): without it the kernel drops parts of a 1 MB burst at the
/// Python peer's socket, and the original then scrambles the message.
const PY_RCVBUF: &str = "8000000";

// ---------------------------------------------------------------------------
// Prerequisites
// ---------------------------------------------------------------------------

fn need_python() -> Option<String> {
    let py = common::raknet_python();
    if py.is_none() {
        common::skip_or_fail("Python package raknet (PyPI) not installed");
    }
    py
}

/// The mc_pair example (rust-raknet), built for this run's profile; skipped
/// or failed like the other peers when it cannot be built.
fn need_mc_pair() -> Option<PathBuf> {
    match common::mc_pair_built() {
        Ok(p) => Some(p),
        Err(e) => {
            common::skip_or_fail(&format!(
                "mc_pair (rust-raknet example) not installed ({e})"
            ));
            None
        }
    }
}

fn need_relay() -> bool {
    common::require_tool("python3")
}

fn need_capture() -> bool {
    common::require_tool("tcpdump") && common::require_root()
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

// ---------------------------------------------------------------------------
// Child processes
// ---------------------------------------------------------------------------

/// `connect` with the given messages on standard input (`--send -`).
fn connect_args(target: &str, rel: u8, channel: u8, extra: &[&str]) -> Vec<String> {
    let mut v = args(&["connect", target, "--send", "-", "--json"]);
    v.extend(args(&[
        "--reliability",
        &rel.to_string(),
        "--channel",
        &channel.to_string(),
    ]));
    v.extend(args(extra));
    v
}

fn stdin_lines(msgs: &[Vec<u8>]) -> Vec<u8> {
    let mut s = String::with_capacity(msgs.iter().map(|m| m.len() * 2 + 1).sum());
    for m in msgs {
        s.push_str(&hex(m));
        s.push('\n');
    }
    s.into_bytes()
}

// ---------------------------------------------------------------------------
// Other peers
// ---------------------------------------------------------------------------

/// `peers.py server`: an original-library server alone.
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
            .args(["server", "--port", &port.to_string()])
            .args(["--rcvbuf", PY_RCVBUF, "--out-json"])
            .arg(&out_json)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_file).expect("stderr file"));
        let mut proc = Proc::spawn(&mut cmd, "peers.py server");
        let lines = reader_lines(proc.child.stdout.take().expect("stdout piped"));
        let ready = wait_line(&lines, "listening ", Duration::from_secs(15));
        assert!(
            ready.is_some(),
            "peers.py server did not say it is listening; stderr:\n{}",
            tail(&read_text(&stderr_file), 10)
        );
        PyServer {
            proc,
            out_json,
            stderr_file,
        }
    }

    /// Stop it with SIGTERM (it writes --out-json then); its exit code and
    /// the packets its application received.
    fn stop(mut self) -> (Option<i32>, Vec<Value>) {
        self.proc.signal(libc::SIGTERM);
        let status = self.proc.wait_or_kill(Duration::from_secs(20));
        let status = status.unwrap_or_else(|| {
            panic!(
                "peers.py server ignored SIGTERM for 20 s; stderr:\n{}",
                tail(&read_text(&self.stderr_file), 10)
            )
        });
        let got = read_json(&self.out_json)
            .as_array()
            .expect("the server's --out-json is a list")
            .clone();
        (status.code(), got)
    }

    fn stderr(&self) -> String {
        read_text(&self.stderr_file)
    }
}

/// `scripts/relay.py` on 127.0.0.1:`listen`, forwarding to 127.0.0.1:`target`.
struct Relay {
    proc: Proc,
    stats: PathBuf,
}

#[derive(Clone, Copy, Debug)]
struct Impairment {
    loss: f64,
    dup: f64,
    reorder: f64,
}

impl Relay {
    fn start(work: &Work, listen: u16, target: u16, seed: u64, how: Impairment) -> Relay {
        let stats = work.file(&format!("relay-{seed}.json"));
        let mut cmd = Command::new("python3");
        cmd.arg(common::root().join("scripts/relay.py"))
            .args(["--listen", &format!("127.0.0.1:{listen}")])
            .args(["--target", &format!("127.0.0.1:{target}")])
            .args(["--seed", &seed.to_string()])
            .args(["--loss", &how.loss.to_string()])
            .args(["--dup", &how.dup.to_string()])
            .args(["--reorder", &how.reorder.to_string()])
            .args(["--duration", "60", "--stats-json"])
            .arg(&stats)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut proc = Proc::spawn(&mut cmd, "relay.py");
        let lines = reader_lines(proc.child.stderr.take().expect("stderr piped"));
        assert!(
            wait_line(&lines, "relay: listening on", Duration::from_secs(10)).is_some(),
            "relay.py did not say it is listening"
        );
        Relay { proc, stats }
    }

    /// Stop it (SIGINT); its counts.
    fn stop(mut self) -> Value {
        self.proc.signal(libc::SIGINT);
        assert!(
            self.proc.wait_or_kill(Duration::from_secs(10)).is_some(),
            "relay.py ignored SIGINT"
        );
        read_json(&self.stats)
    }
}

/// `mc_pair --role server`: a rust-raknet server alone; ready.
fn start_mc_server(exe: &Path, work: &Work, host: &str, port: u16, out_json: &Path) -> Proc {
    let err = work.file(&format!("mc-server-{port}.err"));
    let mut cmd = Command::new(exe);
    cmd.args(["--role", "server", &port.to_string(), "--host", host])
        .args(["--echo", "--once", "--timeout", "60", "--out-json"])
        .arg(out_json)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&err).expect("stderr file"));
    let mut proc = Proc::spawn(&mut cmd, "mc_pair --role server");
    let lines = reader_lines(proc.child.stdout.take().expect("stdout piped"));
    assert!(
        wait_line(&lines, "listening ", Duration::from_secs(15)).is_some(),
        "mc_pair server did not say it is listening; stderr:\n{}",
        tail(&read_text(&err), 10)
    );
    // Keep reading its stdout (one line per message) so that it never blocks.
    std::thread::spawn(move || for _ in lines {});
    proc
}

// ---------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------

fn hex(b: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        s.push(D[(x >> 4) as usize] as char);
        s.push(D[(x & 15) as usize] as char);
    }
    s
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(
        s.len().is_multiple_of(2),
        "odd hex: {}",
        &s[..s.len().min(40)]
    );
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A message size: 1 to `max` bytes, a fifth of them split at MTU 1492.
fn message_size(rng: &mut Rng, max: usize) -> usize {
    let r = rng.unit();
    if r < 0.05 {
        rng.range(1, 4)
    } else if r < 0.55 {
        rng.range(5, 400)
    } else if r < 0.80 {
        rng.range(401, 1500)
    } else if r < 0.97 {
        rng.range(1501, 12000.min(max))
    } else {
        rng.range(12001.min(max), max)
    }
}

/// `head` (id, ...), a big-endian u16 serial, then seeded bytes, all
/// 0x86..=0xFF (as scripts/peers.py's mirror scenario: a split message that
/// the original delivers scrambled still starts with a user id, so RakPeer
/// gives it to the application instead of handling it itself); cut to `size`.
fn make_message(head: &[u8], serial: u16, size: usize, rng: &mut Rng) -> Vec<u8> {
    let mut m = head.to_vec();
    m.extend_from_slice(&serial.to_be_bytes());
    while m.len() < size {
        m.extend(rng.next().to_le_bytes().map(|b| 0x86 + b % 122));
    }
    m.truncate(size);
    m
}

/// Messages of one `connect` run: id 0x86 + reliability, channel, serial.
/// Index 1 is 1 byte, 2 is 4 bytes, 3 and 4 are 1432 and 1433 bytes (the
/// largest unsplit message at MTU 1492, and one byte more); `bigs` (size at
/// a position) replace others.
fn plan_run(
    rel: u8,
    channel: u8,
    n: usize,
    serial: &mut u16,
    max: usize,
    bigs: &[(usize, usize)],
    rng: &mut Rng,
) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let size = match i {
                1 => 1,
                2 => 4,
                3 => 1432,
                4 => 1433,
                _ => bigs
                    .iter()
                    .find(|(at, _)| *at == i)
                    .map(|(_, s)| *s)
                    .unwrap_or_else(|| message_size(rng, max)),
            };
            let m = make_message(&[0x86 + rel, channel], *serial, size, rng);
            *serial = serial.wrapping_add(1);
            m
        })
        .collect()
}

fn describe(m: &[u8]) -> String {
    let serial = if m.len() >= 4 {
        format!("serial {:#06x}, ", u16::from_be_bytes([m[2], m[3]]))
    } else {
        String::new()
    };
    format!(
        "{serial}{} bytes ({}..)",
        m.len(),
        hex(&m[..m.len().min(6)])
    )
}

const RELIABILITY_NAMES: [&str; 8] = [
    "UNRELIABLE",
    "UNRELIABLE_SEQUENCED",
    "RELIABLE",
    "RELIABLE_ORDERED",
    "RELIABLE_SEQUENCED",
    "UNRELIABLE_WITH_ACK_RECEIPT",
    "RELIABLE_WITH_ACK_RECEIPT",
    "RELIABLE_ORDERED_WITH_ACK_RECEIPT",
];

fn reliability_value(name: &str) -> Option<u8> {
    RELIABILITY_NAMES
        .iter()
        .position(|n| *n == name)
        .map(|p| p as u8)
}

/// The reliability a message of the original library (and of our sender)
/// goes on the wire with: 5-7 as 0, 2, 3; split UNRELIABLE(_SEQUENCED) as
/// RELIABLE(_SEQUENCED). `part` = MTU - 60, the largest unsplit message.
fn wire_original(rel: u8, len: usize, part: usize) -> u8 {
    let v = [0, 1, 2, 3, 4, 0, 2, 3][rel as usize % 8];
    match (v, len > part) {
        (0, true) => 2,
        (1, true) => 4,
        (v, _) => v,
    }
}

/// A message as sent: its reliability on the wire and its channel.
#[derive(Clone, Debug)]
struct Sent {
    wire: u8,
    channel: u8,
    data: Vec<u8>,
}

/// A message as an application received it; wire reliability and channel
/// when the receiver reports them (ours does).
#[derive(Clone, Debug)]
struct Got {
    wire: Option<u8>,
    channel: Option<u8>,
    data: Vec<u8>,
}

impl Got {
    fn bare(data: Vec<u8>) -> Got {
        Got {
            wire: None,
            channel: None,
            data,
        }
    }

    /// One of our `message` records.
    fn from_record(r: &Value) -> Got {
        Got {
            wire: r["reliability"].as_str().and_then(reliability_value),
            channel: r["channel"].as_u64().map(|c| c as u8),
            data: unhex(r["data"].as_str().expect("a message record has data")),
        }
    }
}

/// Sequenced and ordered messages are per channel; the others are not.
fn group_key(wire: u8, channel: u8) -> (u8, u8) {
    if matches!(wire, 1 | 3 | 4) {
        (wire, channel)
    } else {
        (wire, 0)
    }
}

fn group_name(k: (u8, u8)) -> String {
    if matches!(k.0, 1 | 3 | 4) {
        format!("{} ch {}", RELIABILITY_NAMES[k.0 as usize], k.1)
    } else {
        RELIABILITY_NAMES[k.0 as usize].to_string()
    }
}

/// `got` is `sent` cut in parts of `part` bytes (the last one shorter), each
/// part once, in another order: what the original's arrival-order
/// reassembly makes of a split message whose parts came out of order.
fn is_parts_permutation(got: &[u8], sent: &[u8], part: usize) -> bool {
    if got.len() != sent.len() || got == sent || part == 0 || sent.len() <= part {
        return false;
    }
    let mut pool: HashMap<&[u8], usize> = HashMap::new();
    for c in sent.chunks(part) {
        *pool.entry(c).or_default() += 1;
    }
    let last = sent.len() % part;
    let mut take = |c: &[u8]| match pool.get_mut(c) {
        Some(n) if *n > 0 => {
            *n -= 1;
            true
        }
        _ => false,
    };
    let mut pos = 0;
    while pos < got.len() {
        if pos + part <= got.len() && take(&got[pos..pos + part]) {
            pos += part;
        } else if last > 0 && pos + last <= got.len() && take(&got[pos..pos + last]) {
            pos += last;
        } else {
            return false;
        }
    }
    true
}

/// Finds which sent message a received one is.
struct Identifier<'a> {
    sent: &'a [Sent],
    by_content: HashMap<&'a [u8], Vec<usize>>,
    by_len: HashMap<usize, Vec<usize>>,
    part: usize,
}

impl<'a> Identifier<'a> {
    fn new(sent: &'a [Sent], part: usize) -> Self {
        let mut by_content: HashMap<&[u8], Vec<usize>> = HashMap::new();
        let mut by_len: HashMap<usize, Vec<usize>> = HashMap::new();
        for (i, s) in sent.iter().enumerate() {
            by_content.entry(&s.data[..]).or_default().push(i);
            if s.data.len() > part {
                by_len.entry(s.data.len()).or_default().push(i);
            }
        }
        Identifier {
            sent,
            by_content,
            by_len,
            part,
        }
    }

    /// The indices of the sent messages it may be, and whether it came
    /// scrambled (parts joined in arrival order).
    fn identify(&self, data: &[u8]) -> Option<(Vec<usize>, bool)> {
        if let Some(v) = self.by_content.get(data) {
            return Some((v.clone(), false));
        }
        let cands = self.by_len.get(&data.len())?;
        cands
            .iter()
            .find(|&&i| is_parts_permutation(data, &self.sent[i].data, self.part))
            .map(|&i| (vec![i], true))
    }
}

/// Counts of one comparison, for the report.
#[derive(Default, Debug, Clone)]
struct Tally {
    /// Per group name: (sent, received).
    groups: BTreeMap<String, (usize, usize)>,
    scrambled: usize,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        for (k, (s, g)) in &other.groups {
            let e = self.groups.entry(k.clone()).or_default();
            e.0 += s;
            e.1 += g;
        }
        self.scrambled += other.scrambled;
    }

    fn sent(&self) -> usize {
        self.groups.values().map(|v| v.0).sum()
    }

    fn received(&self) -> usize {
        self.groups.values().map(|v| v.1).sum()
    }

    fn line(&self) -> String {
        let g: Vec<String> = self
            .groups
            .iter()
            .map(|(k, (s, r))| format!("{k} {r}/{s}"))
            .collect();
        format!(
            "{} of {} messages received ({}); {} scrambled by the original's arrival-order reassembly",
            self.received(),
            self.sent(),
            g.join(", "),
            self.scrambled
        )
    }
}

fn multiset<'a>(v: &[&'a [u8]]) -> HashMap<&'a [u8], usize> {
    let mut m = HashMap::new();
    for x in v {
        *m.entry(*x).or_insert(0usize) += 1;
    }
    m
}

/// Whether `got` is a subsequence of `sent` (greedy); else the first
/// message of `got` that breaks it.
fn subsequence_break<'a>(sent: &[&[u8]], got: &[&'a [u8]]) -> Option<(usize, &'a [u8])> {
    let mut j = 0;
    for (i, g) in got.iter().enumerate() {
        while j < sent.len() && sent[j] != *g {
            j += 1;
        }
        if j == sent.len() {
            return Some((i, g));
        }
        j += 1;
    }
    None
}

/// Check what an application received (`got`, in delivery order) against
/// what the peer sent (`sent`, in send order), adding problems. `clean`:
/// nothing was lost on the way (at least 90% of unreliable messages must
/// arrive, none twice); `last_sequenced`: the last sequenced message of each
/// channel must arrive when it is RELIABLE_SEQUENCED (right when nothing
/// ordered shares its channel, as in our `connect` runs).
fn check_delivery(
    what: &str,
    sent: &[Sent],
    got: &[Got],
    part: usize,
    clean: bool,
    last_sequenced: bool,
    problems: &mut Vec<String>,
) -> Tally {
    let ident = Identifier::new(sent, part);
    let mut tally = Tally::default();
    let mut sent_groups: BTreeMap<(u8, u8), Vec<&[u8]>> = BTreeMap::new();
    for s in sent {
        sent_groups
            .entry(group_key(s.wire, s.channel))
            .or_default()
            .push(&s.data);
    }
    let mut got_groups: BTreeMap<(u8, u8), Vec<&[u8]>> = BTreeMap::new();
    let mut unknown = 0;
    for g in got {
        let Some((cands, scrambled)) = ident.identify(&g.data) else {
            unknown += 1;
            if unknown <= 5 {
                problems.push(format!(
                    "{what}: received a message that was never sent: {}",
                    describe(&g.data)
                ));
            }
            continue;
        };
        tally.scrambled += scrambled as usize;
        let first = &sent[cands[0]];
        let key = match g.wire {
            Some(w) => {
                let k = group_key(w, g.channel.unwrap_or(0));
                if !cands
                    .iter()
                    .any(|&i| group_key(sent[i].wire, sent[i].channel) == k)
                {
                    problems.push(format!(
                        "{what}: {} arrived as {} (channel {:?}) but was sent as {} (channel {})",
                        describe(&first.data),
                        RELIABILITY_NAMES[w as usize % 8],
                        g.channel,
                        RELIABILITY_NAMES[first.wire as usize],
                        first.channel
                    ));
                }
                k
            }
            None => group_key(first.wire, first.channel),
        };
        got_groups.entry(key).or_default().push(&first.data);
    }
    if unknown > 5 {
        problems.push(format!(
            "{what}: {unknown} messages received that were never sent"
        ));
    }
    let keys: HashSet<(u8, u8)> = sent_groups
        .keys()
        .chain(got_groups.keys())
        .copied()
        .collect();
    let mut keys: Vec<(u8, u8)> = keys.into_iter().collect();
    keys.sort_unstable();
    let empty = Vec::new();
    for k in keys {
        let s = sent_groups.get(&k).unwrap_or(&empty);
        let g = got_groups.get(&k).unwrap_or(&empty);
        let name = group_name(k);
        tally.groups.insert(name.clone(), (s.len(), g.len()));
        let sm = multiset(s);
        let gm = multiset(g);
        let missing: Vec<&[u8]> = s
            .iter()
            .filter(|x| gm.get(*x).copied().unwrap_or(0) < sm[*x])
            .copied()
            .collect();
        let extra: Vec<&[u8]> = g
            .iter()
            .filter(|x| gm[*x] > sm.get(*x).copied().unwrap_or(0))
            .copied()
            .collect();
        let list = |v: &[&[u8]]| {
            v.iter()
                .take(4)
                .map(|m| describe(m))
                .collect::<Vec<_>>()
                .join("; ")
        };
        match k.0 {
            2 | 3 => {
                if !missing.is_empty() {
                    problems.push(format!(
                        "{what}: {name}: {} of {} reliable messages never arrived, e.g. {}",
                        missing.len(),
                        s.len(),
                        list(&missing)
                    ));
                }
                if !extra.is_empty() {
                    problems.push(format!(
                        "{what}: {name}: {} reliable messages arrived more than once, e.g. {}",
                        extra.len(),
                        list(&extra)
                    ));
                }
                if k.0 == 3 && missing.is_empty() && extra.is_empty() && s != g {
                    let i = s
                        .iter()
                        .zip(g.iter())
                        .position(|(a, b)| a != b)
                        .unwrap_or(0);
                    problems.push(format!(
                        "{what}: {name}: out of order: delivery {i} is {} where {} was sent",
                        describe(g[i]),
                        describe(s[i])
                    ));
                }
            }
            1 | 4 => {
                if let Some((i, m)) = subsequence_break(s, g) {
                    problems.push(format!(
                        "{what}: {name}: delivery {i} ({}) is twice, out of order or never sent",
                        describe(m)
                    ));
                }
            }
            _ => {
                if !extra.is_empty() && clean {
                    problems.push(format!(
                        "{what}: {name}: {} unreliable messages arrived twice, e.g. {}",
                        extra.len(),
                        list(&extra)
                    ));
                }
                if clean && g.len() * 10 < s.len() * 9 {
                    problems.push(format!(
                        "{what}: {name}: only {} of {} unreliable messages arrived on clean loopback",
                        g.len(),
                        s.len()
                    ));
                }
            }
        }
    }
    if last_sequenced {
        // The last sequenced message of each channel, if RELIABLE_SEQUENCED,
        // supersedes nothing newer: it must be delivered.
        let mut last: HashMap<u8, &Sent> = HashMap::new();
        for s in sent.iter().filter(|s| matches!(s.wire, 1 | 4)) {
            last.insert(s.channel, s);
        }
        for (ch, s) in last {
            let g = got_groups.get(&(s.wire, ch)).map_or(&empty, |v| v);
            if s.wire == 4 && g.last().copied() != Some(&s.data[..]) {
                problems.push(format!(
                    "{what}: the last RELIABLE_SEQUENCED message of channel {ch} ({}) was not delivered last",
                    describe(&s.data)
                ));
            }
        }
    }
    tally
}

/// Echoes: `echoes` (what the peer's application got back, in order) against
/// what our server received (`server_got`, with wire reliabilities and
/// channels), echoed with the same reliability and channel: every RELIABLE
/// and RELIABLE_ORDERED one exactly once, no message more often than it was
/// received, and per channel the RELIABLE_ORDERED ones in the order received
/// (those identifiable: their content is unique). Returns (reliable echoes
/// expected, echoes, scrambled).
fn check_echoes(
    what: &str,
    server_got: &[Got],
    echoes: &[Vec<u8>],
    part: usize,
    problems: &mut Vec<String>,
) -> (usize, usize, usize) {
    let as_sent: Vec<Sent> = server_got
        .iter()
        .map(|g| Sent {
            wire: g.wire.expect("our records name the reliability"),
            channel: g.channel.unwrap_or(0),
            data: g.data.clone(),
        })
        .collect();
    let ident = Identifier::new(&as_sent, part);
    let mut must: HashMap<&[u8], usize> = HashMap::new();
    let mut may: HashMap<&[u8], usize> = HashMap::new();
    for s in &as_sent {
        let m = if matches!(s.wire, 2 | 3) {
            &mut must
        } else {
            &mut may
        };
        *m.entry(&s.data[..]).or_default() += 1;
    }
    let mut back: Vec<&[u8]> = Vec::new();
    let mut scrambled = 0;
    for e in echoes {
        match ident.identify(e) {
            Some((c, s)) => {
                scrambled += s as usize;
                back.push(&as_sent[c[0]].data);
            }
            None => problems.push(format!(
                "{what}: an echo that our server never received: {}",
                describe(e)
            )),
        }
    }
    let bm = multiset(&back);
    let mut lost = Vec::new();
    let mut dup = Vec::new();
    for (x, n) in &must {
        let b = bm.get(x).copied().unwrap_or(0);
        if b < *n {
            lost.push(describe(x));
        }
    }
    for (x, b) in &bm {
        if *b > must.get(x).copied().unwrap_or(0) + may.get(x).copied().unwrap_or(0) {
            dup.push(describe(x));
        }
    }
    if !lost.is_empty() {
        problems.push(format!(
            "{what}: {} reliable echoes never came back, e.g. {}",
            lost.len(),
            lost[..lost.len().min(4)].join("; ")
        ));
    }
    if !dup.is_empty() {
        problems.push(format!(
            "{what}: {} echoes came back more often than sent, e.g. {}",
            dup.len(),
            dup[..dup.len().min(4)].join("; ")
        ));
    }
    // Order per channel of the identifiable RELIABLE_ORDERED ones.
    let count = multiset(&as_sent.iter().map(|s| &s.data[..]).collect::<Vec<_>>());
    let mut channel_of: HashMap<&[u8], u8> = HashMap::new();
    let mut want: BTreeMap<u8, Vec<&[u8]>> = BTreeMap::new();
    for s in as_sent
        .iter()
        .filter(|s| s.wire == 3 && count[&s.data[..]] == 1)
    {
        channel_of.insert(&s.data, s.channel);
        want.entry(s.channel).or_default().push(&s.data);
    }
    let mut have: BTreeMap<u8, Vec<&[u8]>> = BTreeMap::new();
    for b in &back {
        if let Some(ch) = channel_of.get(b) {
            have.entry(*ch).or_default().push(b);
        }
    }
    for (ch, w) in &want {
        let h = have.get(ch).cloned().unwrap_or_default();
        if lost.is_empty() && dup.is_empty() && *w != h {
            let i = w
                .iter()
                .zip(h.iter())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            problems.push(format!(
                "{what}: RELIABLE_ORDERED echoes of channel {ch} out of order at {i}: {} where {} was received",
                h.get(i).map_or("-".into(), |m| describe(m)),
                w.get(i).map_or("-".into(), |m| describe(m)),
            ));
        }
    }
    (must.values().sum(), back.len(), scrambled)
}

/// The comparisons themselves: they must see a loss, a duplicate, a
/// reordering, a stranger, and tell a scrambled split message (exactly the
/// sender's parts) from a corrupted one. No peer needed.
#[test]
fn checks_catch_what_they_should() {
    let mut rng = Rng(9);
    let part = 100;
    let msgs: Vec<Vec<u8>> = (0..6u16)
        .map(|i| make_message(&[0x89, 0], i, if i == 2 { 350 } else { 40 }, &mut rng))
        .collect();
    let sent: Vec<Sent> = msgs
        .iter()
        .map(|m| Sent {
            wire: 3,
            channel: 0,
            data: m.clone(),
        })
        .collect();
    let got =
        |idx: &[usize]| -> Vec<Got> { idx.iter().map(|&i| Got::bare(msgs[i].clone())).collect() };
    let run = |g: &[Got], clean: bool| {
        let mut p = Vec::new();
        let t = check_delivery("t", &sent, g, part, clean, true, &mut p);
        (t, p)
    };
    assert!(run(&got(&[0, 1, 2, 3, 4, 5]), true).1.is_empty());
    for (case, idx) in [
        ("a loss", vec![0, 1, 2, 3, 5]),
        ("a duplicate", vec![0, 1, 2, 2, 3, 4, 5]),
        ("a reordering", vec![0, 2, 1, 3, 4, 5]),
    ] {
        assert!(!run(&got(&idx), false).1.is_empty(), "{case} is seen");
    }
    let mut stranger = got(&[0, 1, 2, 3, 4, 5]);
    stranger.push(Got::bare(vec![0x89, 0, 0, 99]));
    assert!(!run(&stranger, false).1.is_empty(), "a stranger is seen");
    // Message 2 (350 bytes: parts of 100, 100, 100, 50) with its parts permuted.
    let m = &msgs[2];
    let mut scrambled = m[300..].to_vec();
    scrambled.extend_from_slice(&m[100..300]);
    scrambled.extend_from_slice(&m[..100]);
    let mut g = got(&[0, 1]);
    g.push(Got::bare(scrambled.clone()));
    g.extend(got(&[3, 4, 5]));
    let (t, p) = run(&g, false);
    assert!(p.is_empty(), "{p:?}");
    assert_eq!(t.scrambled, 1);
    let mut corrupted = scrambled;
    corrupted[7] ^= 1;
    g[2] = Got::bare(corrupted);
    assert!(
        !run(&g, false).1.is_empty(),
        "a corrupted split message is seen"
    );
    // Sequenced: a subsequence in order; the last RELIABLE_SEQUENCED must come.
    let seq: Vec<Sent> = sent
        .iter()
        .map(|s| Sent {
            wire: 4,
            ..s.clone()
        })
        .collect();
    let check_seq = |idx: &[usize]| {
        let mut p = Vec::new();
        check_delivery("s", &seq, &got(idx), part, false, true, &mut p);
        p
    };
    assert!(check_seq(&[0, 2, 5]).is_empty());
    assert!(
        !check_seq(&[0, 2, 1, 5]).is_empty(),
        "a stale one delivered"
    );
    assert!(!check_seq(&[0, 2, 4]).is_empty(), "the last one missing");
    // Unreliable on clean loopback: at least 90%.
    let unrel: Vec<Sent> = sent
        .iter()
        .map(|s| Sent {
            wire: 0,
            ..s.clone()
        })
        .collect();
    let mut p = Vec::new();
    check_delivery("u", &unrel, &got(&[0, 1, 2, 3]), part, true, false, &mut p);
    assert!(
        !p.is_empty(),
        "4 of 6 unreliable messages on clean loopback"
    );
    // Echoes: a reliable echo missing, or one twice.
    let server: Vec<Got> = msgs
        .iter()
        .map(|m| Got {
            wire: Some(3),
            channel: Some(0),
            data: m.clone(),
        })
        .collect();
    let mut p = Vec::new();
    check_echoes("e", &server, &msgs, part, &mut p);
    assert!(p.is_empty(), "{p:?}");
    check_echoes("e", &server, &msgs[1..], part, &mut p);
    assert!(!p.is_empty(), "a lost echo is seen");
    let mut p = Vec::new();
    let mut swapped = msgs.clone();
    swapped.swap(3, 4);
    check_echoes("e", &server, &swapped, part, &mut p);
    assert!(!p.is_empty(), "echoes out of order are seen");
}

fn assert_no_problems(what: &str, problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{what}: {} problem(s):\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

// ---------------------------------------------------------------------------
// Our client -> the original server (tests 1, 2 and 7)
// ---------------------------------------------------------------------------

/// One `connect` invocation: one reliability, one channel.
struct RunPlan {
    rel: u8,
    channel: u8,
    msgs: Vec<Vec<u8>>,
}

/// Eight runs, one per reliability 0..7, on channels 0, 1, 5, 31 in turn;
/// `n` messages each up to `max` bytes, plus `bigs` in each run and `mb` (a
/// message of 1,000,000 bytes) in the RELIABLE_ORDERED run.
fn plan_original(n: usize, max: usize, bigs: &[usize], mb: bool, seed: u64) -> Vec<RunPlan> {
    let mut rng = Rng(seed);
    let mut serial = 0u16;
    (0..8u8)
        .map(|rel| {
            let channel = CHANNELS[rel as usize % CHANNELS.len()];
            let mut at: Vec<(usize, usize)> = bigs
                .iter()
                .enumerate()
                .map(|(k, &s)| (n * (k + 1) / (bigs.len() + 2), s))
                .collect();
            if mb && rel == 3 {
                at.push((n * (bigs.len() + 1) / (bigs.len() + 2), 1_000_000));
            }
            RunPlan {
                rel,
                channel,
                msgs: plan_run(rel, channel, n, &mut serial, max, &at, &mut rng),
            }
        })
        .collect()
}

struct RunResult {
    /// `connect`'s exit status and stderr.
    code: Option<i32>,
    stderr: String,
    mtu: u16,
    secs: f64,
    closed: Value,
    relay: Option<Value>,
}

struct OriginalExchange {
    runs: Vec<RunResult>,
    /// User messages (id >= 0x86) the server application received, in order.
    server_got: Vec<Vec<u8>>,
    /// ID_NEW_INCOMING_CONNECTION messages the server application received.
    connections: usize,
    /// ID_DISCONNECTION_NOTIFICATION messages it received (one per run that
    /// closed: then the server had our notification, whatever our client
    /// heard back).
    disconnections: usize,
    secs: f64,
}

/// Run `plan` against `peers.py server` on `port`, each run a `connect` of
/// its own (through a fresh relay on port + 1 when `how` is given; the relay
/// serves one client address), then stop the server.
fn exchange_with_original(
    py: &str,
    work: &Work,
    port: u16,
    plan: &[RunPlan],
    how: Option<Impairment>,
    capture: Option<&Path>,
) -> OriginalExchange {
    let start = Instant::now();
    let dump = capture.map(|p| Tcpdump::start(p, &format!("udp port {port}")));
    let server = PyServer::start(py, work, port, &["--timeout", "110"]);
    let mut runs = Vec::new();
    for r in plan {
        let relay = how.map(|h| Relay::start(work, port + 1, port, 700 + u64::from(r.rel), h));
        let target = format!(
            "127.0.0.1:{}",
            if relay.is_some() { port + 1 } else { port }
        );
        let a = connect_args(&target, r.rel, r.channel, &["--wait", "0.2"]);
        let run = Ours::spawn(&a, Some(stdin_lines(&r.msgs)));
        let f = run.finish(Duration::from_secs(60));
        let relay = relay.map(Relay::stop);
        let connected = f.of_type("connected");
        let closed = f.of_type("closed");
        assert!(
            connected.len() == 1 && closed.len() == 1,
            "run of {} on channel {}: exit {:?}, {} connected / {} closed records; relay: {:?}; stderr:\n{}\nserver stderr:\n{}",
            RELIABILITY_NAMES[r.rel as usize],
            r.channel,
            f.code,
            connected.len(),
            closed.len(),
            relay.as_ref().map(|v| (&v["c2s"], &v["s2c"])),
            tail(&f.stderr, 10),
            tail(&server.stderr(), 10)
        );
        runs.push(RunResult {
            code: f.code,
            stderr: f.stderr.clone(),
            mtu: connected[0]["mtu"].as_u64().expect("mtu") as u16,
            secs: f.secs,
            closed: closed[0].clone(),
            relay,
        });
    }
    let (code, got) = server.stop();
    if let Some(d) = dump {
        d.stop();
    }
    assert_eq!(
        code,
        Some(143),
        "peers.py server: exit status after SIGTERM"
    );
    let mut server_got = Vec::new();
    let mut connections = 0;
    let mut disconnections = 0;
    for e in got
        .iter()
        .filter(|e| e["side"] == "server" && e["kind"] == "connected")
    {
        match e["id"].as_u64() {
            Some(0x13) => connections += 1,
            Some(0x15) => disconnections += 1,
            Some(id) if id >= 0x86 => server_got.push(unhex(e["hex"].as_str().expect("hex"))),
            _ => {}
        }
    }
    OriginalExchange {
        runs,
        server_got,
        connections,
        disconnections,
        secs: start.elapsed().as_secs_f64(),
    }
}

/// Compare, run by run. A message the server received belongs to the run
/// that sent it (as is, or scrambled): the original delivers a RELIABLE
/// message before the connection's ID_NEW_INCOMING_CONNECTION when that one
/// (RELIABLE_ORDERED) was lost, so the runs cannot be told by that.
fn check_original_exchange(
    what: &str,
    plan: &[RunPlan],
    x: &OriginalExchange,
    clean: bool,
) -> (Tally, Vec<String>) {
    let mut problems = Vec::new();
    let mut total = Tally::default();
    if x.connections != plan.len() {
        problems.push(format!(
            "{what}: the server saw {} connections, we made {}",
            x.connections,
            plan.len()
        ));
    }
    let sents: Vec<Vec<Sent>> = plan
        .iter()
        .zip(&x.runs)
        .map(|(r, res)| {
            let part = usize::from(res.mtu) - 60;
            r.msgs
                .iter()
                .map(|m| Sent {
                    wire: wire_original(r.rel, m.len(), part),
                    channel: r.channel,
                    data: m.clone(),
                })
                .collect()
        })
        .collect();
    let idents: Vec<Identifier> = sents
        .iter()
        .zip(&x.runs)
        .map(|(s, res)| Identifier::new(s, usize::from(res.mtu) - 60))
        .collect();
    let mut gots: Vec<Vec<Got>> = vec![Vec::new(); plan.len()];
    let mut unknown = Vec::new();
    for m in &x.server_got {
        match idents.iter().position(|i| i.identify(m).is_some()) {
            Some(k) => gots[k].push(Got::bare(m.clone())),
            None => unknown.push(describe(m)),
        }
    }
    if !unknown.is_empty() {
        problems.push(format!(
            "{what}: {} messages received that no run sent, e.g. {}",
            unknown.len(),
            unknown[..unknown.len().min(4)].join("; ")
        ));
    }
    for (k, (r, res)) in plan.iter().zip(&x.runs).enumerate() {
        let part = usize::from(res.mtu) - 60;
        let sent = &sents[k];
        let got = &gots[k];
        let name = format!(
            "{what}: run {} ch {}",
            RELIABILITY_NAMES[r.rel as usize], r.channel
        );
        let t = check_delivery(&name, sent, got, part, clean, true, &mut problems);
        let relay = res.relay.as_ref().map_or(String::new(), |v| {
            format!(
                "; relay c2s {} of {} dropped, s2c {} of {} dropped",
                v["c2s"]["dropped"],
                v["c2s"]["received"],
                v["s2c"]["dropped"],
                v["s2c"]["received"]
            )
        });
        println!(
            "{name}: MTU {}, {:.2} s, {} datagrams sent, {} resends, closed {}{relay}; {}",
            res.mtu,
            res.secs,
            res.closed["datagrams_sent"],
            res.closed["resends"],
            res.closed["reason"],
            t.line()
        );
        if res.code != Some(0) || res.closed["reason"] != "closed" {
            problems.push(format!(
                "{name}: `connect` exited {:?} with closed reason {} (expected 0 and \"closed\": it connected, every message was delivered, and the server application got {} disconnection notifications for {} runs); stderr: {}",
                res.code,
                res.closed["reason"],
                x.disconnections,
                plan.len(),
                res.stderr.trim()
            ));
        }
        total.add(&t);
    }
    (total, problems)
}

// ---------------------------------------------------------------------------
// 1. Our `connect` -> the original server
// ---------------------------------------------------------------------------

fn test1_plan() -> Vec<RunPlan> {
    plan_original(125, 40_000, &[100_000, 30_000], true, 1)
}

/// 1000 messages (8 runs of 125: every reliability 0..7, channels 0, 1, 5,
/// 31), 1 byte to 100 kB plus one of 1,000,000 bytes, from our client to
/// `peers.py server`: reliable ones exactly once byte for byte, ordered ones
/// in order, sequenced ones at most once in order (the last
/// RELIABLE_SEQUENCED one delivered), unreliable ones at least 90%.
#[test]
fn connect_to_original_server_every_reliability() {
    let Some(py) = need_python() else { return };
    let work = Work::new("original-server");
    let plan = test1_plan();
    let x = exchange_with_original(&py, &work, PORT_ORIGINAL_SERVER, &plan, None, None);
    let (t, problems) = check_original_exchange("original server", &plan, &x, true);
    println!(
        "original server: {}; {} bytes sent; {:.1} s in all",
        t.line(),
        plan.iter()
            .flat_map(|r| &r.msgs)
            .map(Vec::len)
            .sum::<usize>(),
        x.secs
    );
    assert_no_problems("our client -> original server", &problems);
    assert_eq!(t.sent(), 1000);
    assert!(plan
        .iter()
        .flat_map(|r| &r.msgs)
        .any(|m| m.len() == 1_000_000));
}

// ---------------------------------------------------------------------------
// 2. The same through a lossy relay
// ---------------------------------------------------------------------------

fn lossy(port: u16, loss: f64, mb: bool) {
    let Some(py) = need_python() else { return };
    if !need_relay() {
        return;
    }
    let work = Work::new(&format!("lossy-{}", (loss * 100.0) as u32));
    let how = Impairment {
        loss,
        dup: 0.05,
        reorder: 0.05,
    };
    let plan = plan_original(40, 20_000, &[30_000], mb, 2);
    let x = exchange_with_original(&py, &work, port, &plan, Some(how), None);
    let what = format!("{}% loss", (loss * 100.0) as u32);
    let (t, problems) = check_original_exchange(&what, &plan, &x, false);
    let (mut dropped, mut received) = (0u64, 0u64);
    for r in &x.runs {
        let v = r.relay.as_ref().expect("relay counts");
        for d in ["c2s", "s2c"] {
            dropped += v[d]["dropped"].as_u64().unwrap_or(0);
            received += v[d]["received"].as_u64().unwrap_or(0);
        }
    }
    println!(
        "{what}: {}; the relay dropped {dropped} of {received} datagrams ({:.1}%); {:.1} s in all",
        t.line(),
        100.0 * dropped as f64 / received.max(1) as f64,
        x.secs
    );
    assert!(
        dropped > 0,
        "the relay dropped nothing: the test proves nothing"
    );
    assert_no_problems(
        &format!("our client -> relay ({what}) -> original server"),
        &problems,
    );
}

/// 320 messages (one of 1 MB) through scripts/relay.py at 10% loss, 5%
/// duplication, 5% reordering (seeded).
#[test]
fn connect_to_original_server_10_percent_loss() {
    lossy(PORT_LOSSY_10, 0.10, true);
}

/// 320 messages through scripts/relay.py at 30% loss, 5% duplication, 5%
/// reordering (seeded).
#[test]
fn connect_to_original_server_30_percent_loss() {
    lossy(PORT_LOSSY_30, 0.30, false);
}

// ---------------------------------------------------------------------------
// 3. The original client -> our `serve --echo`
// ---------------------------------------------------------------------------

/// `peers.py client --scenario peer` (1000 messages of every reliability on
/// channels 0, 1, 2, 5, 31, incl. 1 MB and 300 kB) -> `serve --echo --once`:
/// what our server reports is what the client sent (reliable exactly once,
/// ordered in order, with the right reliability and channel), our server
/// closes with `disconnected_by_peer` and exits, and the echoes reach the
/// client (reliable ones exactly once, ordered ones in order).
#[test]
fn original_client_to_serve_echo() {
    let Some(py) = need_python() else { return };
    let work = Work::new("original-client");
    let port = PORT_ORIGINAL_CLIENT;
    assert_port_free(port);
    let listen = format!("127.0.0.1:{port}");
    let mut serve = Ours::spawn(
        &args(&["serve", "--listen", &listen, "--echo", "--once", "--json"]),
        None,
    );
    let l = serve.wait_record("listening", Duration::from_secs(10));
    assert_eq!(
        l.as_ref().map(|l| l["address"].clone()),
        Some(Value::from(listen.clone())),
        "serve prints `listening` first"
    );
    let start = Instant::now();
    let client_err = work.file("client.err");
    let mut client = Proc::spawn(
        Command::new(&py)
            .arg(common::root().join("scripts/peers.py"))
            .args(["client", "--connect", &listen, "--scenario", "peer"])
            .args(["--rcvbuf", PY_RCVBUF, "--wait", "5", "--timeout", "60"])
            .arg("--out-json")
            .arg(work.file("client.json"))
            .arg("--sent-json")
            .arg(work.file("sent.json"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&client_err).expect("stderr file")),
        "peers.py client",
    );
    let status = client.wait_or_kill(Duration::from_secs(70));
    let client_secs = start.elapsed().as_secs_f64();
    if status.and_then(|s| s.code()) != Some(0) {
        serve.proc.signal(libc::SIGTERM); // it would wait for a client forever
    }
    let f = serve.finish(Duration::from_secs(20));
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "peers.py client failed; its stderr:\n{}\nour server's:\n{}",
        tail(&read_text(&client_err), 15),
        tail(&f.stderr, 10)
    );
    assert_eq!(
        f.code,
        Some(0),
        "serve --once: exit status; stderr:\n{}",
        f.stderr
    );
    assert_eq!(f.records[0]["type"], "listening", "the first record");
    let connected = f.one("connected");
    let closed = f.one("closed");
    assert_eq!(
        closed["reason"], "disconnected_by_peer",
        "our server's connection ends when the client disconnects"
    );
    let mtu = connected["mtu"].as_u64().expect("mtu") as usize;
    let part = mtu - 60;

    let sent_doc = read_json(&work.file("sent.json"));
    let sent: Vec<Sent> = sent_doc["sent"]
        .as_array()
        .expect("sent.json: sent")
        .iter()
        .filter(|s| s["side"] == "client")
        .map(|s| {
            let data = unhex(s["hex"].as_str().expect("hex"));
            let rel = s["reliability_value"].as_u64().expect("reliability_value") as u8;
            Sent {
                wire: wire_original(rel, data.len(), part),
                channel: s["channel"].as_u64().expect("channel") as u8,
                data,
            }
        })
        .collect();
    let messages = f.of_type("message");
    let mut problems = Vec::new();
    for m in &messages {
        if m["dir"] != "c2s" || m["peer"] != connected["peer"] {
            problems.push(format!(
                "a message record with dir {} peer {}",
                m["dir"], m["peer"]
            ));
        }
        if m["len"].as_u64() != m["data"].as_str().map(|d| d.len() as u64 / 2) {
            problems.push(format!(
                "a message record whose len is not its data's: {}",
                m["len"]
            ));
        }
    }
    let got: Vec<Got> = messages.iter().map(|r| Got::from_record(r)).collect();
    let t = check_delivery("our server", &sent, &got, part, true, false, &mut problems);
    println!(
        "original client -> serve: MTU {mtu}; {}; client ran {client_secs:.1} s, our server {:.1} s",
        t.line(),
        f.secs
    );
    assert_eq!(t.scrambled, 0, "our server never joins parts out of order");

    // The echoes, as the client application got them.
    let echoes: Vec<Vec<u8>> = read_json(&work.file("client.json"))
        .as_array()
        .expect("client.json is a list")
        .iter()
        .filter(|e| e["side"] == "client" && e["kind"] == "connected")
        .filter(|e| e["id"].as_u64().is_some_and(|id| id >= 0x86))
        .map(|e| unhex(e["hex"].as_str().expect("hex")))
        .collect();
    let (want, back, scrambled) = check_echoes(
        "echoes to the original client",
        &got,
        &echoes,
        part,
        &mut problems,
    );
    println!(
        "original client -> serve: {back} echoes came back ({want} reliable ones expected), {scrambled} scrambled by the original's arrival-order reassembly; server closed record: {closed}"
    );
    assert_no_problems("original client -> our serve --echo", &problems);
    assert_eq!(
        t.sent(),
        1000,
        "the peer scenario sends 1000 client messages"
    );
    assert!(
        sent.iter().any(|s| s.data.len() == 1_000_000),
        "one of them of 1,000,000 bytes"
    );
}

// ---------------------------------------------------------------------------
// 4. rust-raknet (Minecraft dialect), IPv4 and IPv6
// ---------------------------------------------------------------------------

/// Game-style messages (0xFE, reliability 3, channel 0, serial, seeded bytes).
fn mc_messages(n: usize, bigs: &[(usize, usize)], seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| {
            let size = bigs
                .iter()
                .find(|(at, _)| *at == i)
                .map(|(_, s)| *s)
                .unwrap_or_else(|| message_size(&mut rng, 40_000));
            make_message(&[0xFE, 3, 0], i as u16, size.max(1), &mut rng)
        })
        .collect()
}

/// Our `connect --dialect minecraft` -> `mc_pair --role server --echo --once`.
fn connect_to_mc_server(host: &str, port: u16, msgs: &[Vec<u8>], work: &Work) {
    let Some(exe) = need_mc_pair() else { return };
    let bracketed = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let out_json = work.file(&format!("mc-server-{port}.json"));
    let mut server = start_mc_server(&exe, work, host, port, &out_json);
    let run = Ours::spawn(
        &connect_args(
            &bracketed,
            3,
            0,
            // rust-raknet 1.4 hands its application at most 100 messages
            // left over when the peer disconnects: give it time to drain.
            &["--dialect", "minecraft", "--wait", "3"],
        ),
        Some(stdin_lines(msgs)),
    );
    let f = run.finish(Duration::from_secs(60));
    let status = server.wait_or_kill(Duration::from_secs(15));
    assert_eq!(
        f.code,
        Some(0),
        "connect {bracketed} --dialect minecraft; stderr:\n{}",
        tail(&f.stderr, 10)
    );
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "mc_pair --role server --once ends with our client's disconnection; stderr:\n{}",
        tail(&read_text(&work.file(&format!("mc-server-{port}.err"))), 10)
    );
    let connected = f.one("connected");
    let closed = f.one("closed");
    let mtu = connected["mtu"].as_u64().expect("mtu") as usize;
    assert!(
        mtu <= 1400,
        "rust-raknet grants at most MTU 1400, not {mtu}"
    );
    assert_eq!(closed["reason"], "closed");
    let sent: Vec<Sent> = msgs
        .iter()
        .map(|m| Sent {
            wire: 3,
            channel: 0,
            data: m.clone(),
        })
        .collect();
    let mut problems = Vec::new();
    // What rust-raknet's application received.
    let server_got: Vec<Got> = read_json(&out_json)
        .as_array()
        .expect("mc_pair --out-json is a list")
        .iter()
        .filter(|e| e["side"] == "server")
        .map(|e| Got::bare(unhex(e["hex"].as_str().expect("hex"))))
        .collect();
    let what = format!("rust-raknet server {bracketed}");
    let t1 = check_delivery(
        &what,
        &sent,
        &server_got,
        mtu - 60,
        true,
        false,
        &mut problems,
    );
    // Its echoes (ReliableOrdered, channel 0), as our client reports them.
    let echoes: Vec<Got> = f
        .of_type("message")
        .iter()
        .map(|r| Got::from_record(r))
        .collect();
    for r in f.of_type("message") {
        if r["dir"] != "s2c" {
            problems.push(format!("an s2c message record with dir {}", r["dir"]));
        }
    }
    let what = format!("echoes from rust-raknet {bracketed}");
    let t2 = check_delivery(&what, &sent, &echoes, mtu - 60, true, false, &mut problems);
    println!(
        "connect -> rust-raknet server {bracketed}: MTU {mtu}, {:.2} s, {} resends; server got {}; echoes: {}",
        f.secs,
        closed["resends"],
        t1.line(),
        t2.line()
    );
    assert_no_problems(
        &format!("our client -> rust-raknet server {bracketed}"),
        &problems,
    );
}

/// 1000 messages (ReliableOrdered, channel 0; up to 100 kB, one of 1 MB) from
/// our client to rust-raknet over IPv4; its application gets them all in
/// order, and its echoes come back all in order.
#[test]
fn connect_to_rust_raknet_server_ipv4() {
    let work = Work::new("mc-server-v4");
    let msgs = mc_messages(1000, &[(250, 100_000), (500, 1_000_000), (750, 30_000)], 3);
    connect_to_mc_server("127.0.0.1", PORT_MC_SERVER_V4, &msgs, &work);
}

/// The same over IPv6 loopback (fewer messages); and a client asking for
/// protocol 9 is refused with [incompatible_protocol] (rust-raknet takes 10
/// and 11 only).
#[test]
fn connect_to_rust_raknet_server_ipv6() {
    let Some(exe) = need_mc_pair() else { return };
    let work = Work::new("mc-server-v6");
    let port = PORT_MC_SERVER_V6;
    {
        // protocol 9 first: --once ends the server after a connection, not a refusal.
        let out_json = work.file("refused.json");
        let _server = start_mc_server(&exe, &work, "::1", port, &out_json);
        let t0 = Instant::now();
        let f = Ours::spawn(
            &args(&[
                "connect",
                &format!("[::1]:{port}"),
                "--dialect",
                "minecraft",
                "--protocol",
                "9",
                "--send",
                "fe00",
                "--json",
            ]),
            None,
        )
        .finish(Duration::from_secs(20));
        println!(
            "connect --protocol 9 -> rust-raknet: exit {:?} after {:.2} s: {}",
            f.code,
            t0.elapsed().as_secs_f64(),
            f.stderr.trim()
        );
        assert_eq!(f.code, Some(EXIT_NO_CONNECTION), "stderr: {}", f.stderr);
        assert!(
            f.stderr.contains("[incompatible_protocol]"),
            "stderr names the step: {}",
            f.stderr
        );
    }
    let msgs = mc_messages(40, &[(20, 100_000)], 4);
    connect_to_mc_server("::1", port, &msgs, &work);
}

/// `mc_pair --role client --messages 1000 --big 1000000` (every rust-raknet
/// reliability, channels 0-5) -> our `serve --dialect minecraft --echo
/// --once` on [::1]: our server reports every Reliable and ReliableOrdered
/// message exactly once, ordered ones in order per channel, with their
/// reliability and channel; it closes with `disconnected_by_peer`; the
/// rust-raknet client gets the reliable echoes exactly once.
#[test]
fn rust_raknet_client_to_serve_ipv6() {
    let Some(exe) = need_mc_pair() else { return };
    let work = Work::new("mc-client-v6");
    let port = PORT_MC_CLIENT_V6;
    let listen = format!("[::1]:{port}");
    let mut serve = Ours::spawn(
        &args(&[
            "serve",
            "--listen",
            &listen,
            "--dialect",
            "minecraft",
            "--echo",
            "--once",
            "--json",
        ]),
        None,
    );
    let l = serve
        .wait_record("listening", Duration::from_secs(10))
        .expect("serve prints `listening`");
    assert_eq!(l["address"], listen.as_str());
    assert_eq!(l["protocol"], 11, "the Minecraft dialect's protocol");
    let start = Instant::now();
    let err = work.file("mc-client.err");
    let mut client = Proc::spawn(
        Command::new(&exe)
            .args(["--role", "client", "--host", "::1"])
            .args(["--connect-port", &port.to_string()])
            .args(["--messages", "1000", "--big", "1000000", "--seed", "1"])
            .args(["--wait", "2", "--timeout", "50", "--out-json"])
            .arg(work.file("mc-client.json"))
            .arg("--sent-json")
            .arg(work.file("mc-sent.json"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err).expect("stderr file")),
        "mc_pair --role client",
    );
    let status = client.wait_or_kill(Duration::from_secs(60));
    let client_secs = start.elapsed().as_secs_f64();
    if status.and_then(|s| s.code()) != Some(0) {
        serve.proc.signal(libc::SIGTERM); // it would wait for a client forever
    }
    let f = serve.finish(Duration::from_secs(20));
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "mc_pair client failed; stderr:\n{}\nour server's:\n{}",
        tail(&read_text(&err), 10),
        tail(&f.stderr, 10)
    );
    assert_eq!(f.code, Some(0), "serve --once; stderr:\n{}", f.stderr);
    let connected = f.one("connected");
    let closed = f.one("closed");
    assert_eq!(closed["reason"], "disconnected_by_peer");
    let mtu = connected["mtu"].as_u64().expect("mtu") as usize;
    assert_eq!(mtu, 1400, "rust-raknet asks for MTU 1400");
    let sent: Vec<Sent> = read_json(&work.file("mc-sent.json"))["sent"]
        .as_array()
        .expect("mc-sent.json: sent")
        .iter()
        .map(|s| Sent {
            // rust-raknet sends each reliability as it is (it splits only
            // ReliableOrdered messages).
            wire: s["reliability_value"].as_u64().expect("reliability_value") as u8,
            channel: s["channel"].as_u64().expect("channel") as u8,
            data: unhex(s["hex"].as_str().expect("hex")),
        })
        .collect();
    let got: Vec<Got> = f
        .of_type("message")
        .iter()
        .map(|r| Got::from_record(r))
        .collect();
    let mut problems = Vec::new();
    let t = check_delivery(
        "our server (IPv6)",
        &sent,
        &got,
        mtu - 60,
        true,
        false,
        &mut problems,
    );
    let echoes: Vec<Vec<u8>> = read_json(&work.file("mc-client.json"))
        .as_array()
        .expect("mc-client.json is a list")
        .iter()
        .filter(|e| e["side"] == "client")
        .map(|e| unhex(e["hex"].as_str().expect("hex")))
        .collect();
    let (want, back, _) = check_echoes(
        "echoes to rust-raknet (IPv6)",
        &got,
        &echoes,
        mtu - 60,
        &mut problems,
    );
    println!(
        "rust-raknet client -> serve [::1]: {}; {back} echoes came back ({want} reliable expected); client ran {client_secs:.1} s; our server: {} resends, {} datagrams sent",
        t.line(),
        closed["resends"],
        closed["datagrams_sent"]
    );
    assert_no_problems("rust-raknet client -> our serve on [::1]", &problems);
    assert_eq!(t.sent(), 1001, "1000 messages and the 1 MB one");
}

// ---------------------------------------------------------------------------
// 5. Disconnections
// ---------------------------------------------------------------------------

/// Our `connect --wait W` connected to `peers.py server`, which then gets
/// `sig`: our client must print `closed` (timed_out or disconnected_by_peer)
/// within 15 s, and exit (6 for timed_out).
fn server_goes_away(port: u16, sig: libc::c_int, wait: &str) {
    let Some(py) = need_python() else { return };
    let work = Work::new(&format!("server-gone-{sig}"));
    let server = PyServer::start(&py, &work, port, &["--timeout", "60"]);
    let mut run = Ours::spawn(
        &args(&[
            "connect",
            &format!("127.0.0.1:{port}"),
            "--send",
            "86aabbccdd",
            "--wait",
            wait,
            "--json",
        ]),
        None,
    );
    let c = run.wait_record("connected", Duration::from_secs(10));
    assert!(c.is_some(), "our client did not connect");
    std::thread::sleep(Duration::from_millis(300));
    server.proc.signal(sig);
    let t0 = Instant::now();
    let closed = run.wait_record("closed", Duration::from_secs(40));
    let after = t0.elapsed().as_secs_f64();
    let f = run.finish(Duration::from_secs(10));
    let exited = t0.elapsed().as_secs_f64();
    if sig == libc::SIGSTOP {
        server.proc.signal(libc::SIGCONT);
    }
    drop(server);
    let closed = closed.unwrap_or_else(|| panic!("no `closed` record; stderr:\n{}", f.stderr));
    println!(
        "server {} while connected: our client printed closed ({}) {after:.2} s later, exited {exited:.2} s later with {:?}; stderr: {}",
        if sig == libc::SIGSTOP { "stopped (SIGSTOP, silent)" } else { "killed (SIGKILL)" },
        closed["reason"],
        f.code,
        f.stderr.trim()
    );
    let reason = closed["reason"].as_str().unwrap_or("");
    assert!(
        matches!(reason, "timed_out" | "disconnected_by_peer"),
        "closed reason {reason:?}"
    );
    assert_eq!(
        f.code,
        Some(if reason == "timed_out" {
            EXIT_NO_CONNECTION
        } else {
            0
        }),
        "exit status for {reason}"
    );
    assert!(
        after <= 15.0,
        "our client noticed the server was gone only after {after:.1} s (the timeout is 10 s)"
    );
}

/// The server process is killed: its port answers ICMP port unreachable.
#[test]
fn connect_sees_killed_server() {
    server_goes_away(PORT_SERVER_KILLED, libc::SIGKILL, "15");
}

/// The server process is stopped: its socket stays, nothing answers, no
/// ICMP. Only our 10 s time-out can tell; `--wait 30` must not be waited out.
#[test]
fn connect_sees_silent_server() {
    server_goes_away(PORT_SERVER_STOPPED, libc::SIGSTOP, "30");
}

/// The original client is killed while connected to our `serve --once`:
/// our server prints `closed` with `timed_out` within 15 s and exits 0.
#[test]
fn serve_sees_killed_client() {
    let Some(py) = need_python() else { return };
    let work = Work::new("client-killed");
    let port = PORT_CLIENT_KILLED;
    assert_port_free(port);
    let listen = format!("127.0.0.1:{port}");
    let mut serve = Ours::spawn(
        &args(&["serve", "--listen", &listen, "--once", "--json"]),
        None,
    );
    serve
        .wait_record("listening", Duration::from_secs(10))
        .expect("serve prints `listening`");
    let client = Proc::spawn(
        Command::new(&py)
            .arg(common::root().join("scripts/peers.py"))
            .args(["client", "--connect", &listen, "--scenario", "basic"])
            .args(["--wait", "30", "--timeout", "40"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(work.file("client.err")).expect("stderr file")),
        "peers.py client",
    );
    assert!(
        serve
            .wait_record("connected", Duration::from_secs(15))
            .is_some(),
        "the original client did not connect; its stderr:\n{}",
        read_text(&work.file("client.err"))
    );
    std::thread::sleep(Duration::from_millis(500));
    client.signal(libc::SIGKILL);
    let t0 = Instant::now();
    let closed = serve.wait_record("closed", Duration::from_secs(30));
    let after = t0.elapsed().as_secs_f64();
    let f = serve.finish(Duration::from_secs(10));
    let exited = t0.elapsed().as_secs_f64();
    drop(client);
    let closed = closed.unwrap_or_else(|| panic!("no `closed` record; stderr:\n{}", f.stderr));
    println!(
        "client killed while connected to serve: closed ({}) {after:.2} s later, serve exited {exited:.2} s later with {:?}",
        closed["reason"], f.code
    );
    assert_eq!(closed["reason"], "timed_out");
    assert_eq!(
        f.code,
        Some(0),
        "serve --once exits 0 when its client is gone"
    );
    assert!(after <= 15.0, "our server noticed only after {after:.1} s");
    let msgs = f.of_type("message");
    assert_eq!(msgs.len(), 3, "the basic scenario's 3 client messages");
}

// ---------------------------------------------------------------------------
// 6. Failures and pings
// ---------------------------------------------------------------------------

/// Nothing listens: exit 6 with [port_unreachable], in under 3 s.
#[test]
fn connect_to_nothing_is_port_unreachable() {
    assert_port_free(PORT_NOTHING);
    let t0 = Instant::now();
    let f = Ours::spawn(
        &args(&[
            "connect",
            &format!("127.0.0.1:{PORT_NOTHING}"),
            "--send",
            "86",
            "--json",
        ]),
        None,
    )
    .finish(Duration::from_secs(20));
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "connect to nothing: exit {:?} after {secs:.3} s: {}",
        f.code,
        f.stderr.trim()
    );
    assert_eq!(f.code, Some(EXIT_NO_CONNECTION));
    assert!(
        f.stderr.contains("[port_unreachable]"),
        "stderr: {}",
        f.stderr
    );
    // With --json the failure is also a `failed` record (issue 13), as
    // `probe` prints its `probe` record; nothing else is printed.
    assert_eq!(f.records.len(), 1, "one record on stdout: {:?}", f.records);
    assert_eq!(f.records[0]["type"], "failed", "{:?}", f.records);
    assert_eq!(f.records[0]["step"], "port_unreachable", "{:?}", f.records);
    assert!(secs < 3.0, "took {secs:.1} s");
}

/// `connect --protocol 5` to the original server (protocol 6): exit 6 with
/// [incompatible_protocol].
#[test]
fn connect_with_wrong_protocol_to_original() {
    let Some(py) = need_python() else { return };
    let work = Work::new("protocol");
    let server = PyServer::start(&py, &work, PORT_PROTOCOL, &["--timeout", "30"]);
    let t0 = Instant::now();
    let f = Ours::spawn(
        &args(&[
            "connect",
            &format!("127.0.0.1:{PORT_PROTOCOL}"),
            "--protocol",
            "5",
            "--send",
            "86",
            "--json",
        ]),
        None,
    )
    .finish(Duration::from_secs(20));
    let secs = t0.elapsed().as_secs_f64();
    drop(server);
    println!(
        "connect --protocol 5: exit {:?} after {secs:.3} s: {}",
        f.code,
        f.stderr.trim()
    );
    assert_eq!(f.code, Some(EXIT_NO_CONNECTION));
    assert!(
        f.stderr.contains("[incompatible_protocol]"),
        "stderr: {}",
        f.stderr
    );
    assert!(secs < 5.0, "took {secs:.1} s");
}

/// `serve --max-clients 0`: the original client is refused with
/// ID_NO_FREE_INCOMING_CONNECTIONS, and our server reports no connection.
#[test]
fn serve_full_refuses_original_client() {
    let Some(py) = need_python() else { return };
    let work = Work::new("full");
    assert_port_free(PORT_FULL);
    let listen = format!("127.0.0.1:{PORT_FULL}");
    let mut serve = Ours::spawn(
        &args(&["serve", "--listen", &listen, "--max-clients", "0", "--json"]),
        None,
    );
    serve
        .wait_record("listening", Duration::from_secs(10))
        .expect("serve prints `listening`");
    let out = work.file("client.json");
    let mut client = Proc::spawn(
        Command::new(&py)
            .arg(common::root().join("scripts/peers.py"))
            .args(["client", "--connect", &listen, "--scenario", "basic"])
            .args(["--timeout", "30", "--out-json"])
            .arg(&out)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(work.file("client.err")).expect("stderr file")),
        "peers.py client",
    );
    let status = client.wait_or_kill(Duration::from_secs(40));
    serve.proc.signal(libc::SIGTERM);
    let f = serve.finish(Duration::from_secs(10));
    let err = read_text(&work.file("client.err"));
    println!("original client -> serve --max-clients 0: {}", err.trim());
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(1),
        "the client must fail: {err}"
    );
    let got = read_json(&out);
    let ids: Vec<u64> = got
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|e| e["id"].as_u64())
        .collect();
    assert!(
        ids.contains(&0x14),
        "the client got ID_NO_FREE_INCOMING_CONNECTIONS (0x14); it got {ids:?}"
    );
    assert!(
        f.of_type("connected").is_empty(),
        "nobody connected: {:?}",
        f.records
    );
}

/// `ping` the original server: its pong payload (the --pong text).
#[test]
fn ping_original_server() {
    let Some(py) = need_python() else { return };
    let work = Work::new("ping-original");
    let text = "raknet-dissect peer test";
    let server = PyServer::start(
        &py,
        &work,
        PORT_PING_ORIGINAL,
        &["--pong", text, "--timeout", "30"],
    );
    let f = Ours::spawn(
        &args(&[
            "ping",
            &format!("127.0.0.1:{PORT_PING_ORIGINAL}"),
            "-c",
            "2",
            "--json",
        ]),
        None,
    )
    .finish(Duration::from_secs(20));
    drop(server);
    assert_eq!(f.code, Some(0), "stderr: {}", f.stderr);
    let pongs = f.of_type("pong");
    assert_eq!(pongs.len(), 2, "two pings, two pongs: {:?}", f.records);
    for (i, p) in pongs.iter().enumerate() {
        println!("pong from the original: {p}");
        assert_eq!(p["seq"], i as u64);
        assert_eq!(p["payload"], hex(text.as_bytes()).as_str());
        assert_eq!(p["text"], text);
        assert!(p["rtt_ms"]
            .as_f64()
            .is_some_and(|r| (0.0..1000.0).contains(&r)));
        // Hex like the capture records' GUIDs: 0x and 16 digits, not zero.
        let g = p["server_guid"].as_str().unwrap_or("");
        assert!(
            g.len() == 18 && g.starts_with("0x") && g != "0x0000000000000000",
            "{g}"
        );
        assert!(p.get("motd").is_none(), "not a Minecraft pong");
    }
    assert_eq!(pongs[0]["server_guid"], pongs[1]["server_guid"]);
}

/// `ping` our own `serve --motd hello --dialect minecraft`: a Minecraft MOTD.
#[test]
fn ping_serve_motd() {
    assert_port_free(PORT_PING_MOTD);
    let listen = format!("127.0.0.1:{PORT_PING_MOTD}");
    let mut serve = Ours::spawn(
        &args(&[
            "serve",
            "--listen",
            &listen,
            "--motd",
            "hello",
            "--dialect",
            "minecraft",
            "--json",
        ]),
        None,
    );
    let l = serve
        .wait_record("listening", Duration::from_secs(10))
        .expect("serve prints `listening`");
    let f = Ours::spawn(&args(&["ping", &listen, "--json"]), None).finish(Duration::from_secs(20));
    serve.proc.signal(libc::SIGTERM);
    let _ = serve.finish(Duration::from_secs(10));
    assert_eq!(f.code, Some(0), "stderr: {}", f.stderr);
    let p = f.one("pong");
    println!("pong from serve --motd hello: {p}");
    assert_eq!(p["motd"]["motd"], "hello");
    assert_eq!(p["motd"]["edition"], "MCPE");
    assert_eq!(p["server_guid"], l["guid"]);
}

/// `ping` with nothing listening: exit 6, quickly.
#[test]
fn ping_nothing() {
    assert_port_free(PORT_PING_NOTHING);
    let t0 = Instant::now();
    let f = Ours::spawn(
        &args(&["ping", &format!("127.0.0.1:{PORT_PING_NOTHING}"), "--json"]),
        None,
    )
    .finish(Duration::from_secs(20));
    let secs = t0.elapsed().as_secs_f64();
    assert_eq!(f.code, Some(EXIT_NO_CONNECTION), "stderr: {}", f.stderr);
    assert!(f.of_type("pong").is_empty());
    assert!(secs < 3.0, "took {secs:.1} s");
}

// ---------------------------------------------------------------------------
// 7. The mirror of our own client's traffic
// ---------------------------------------------------------------------------

/// Test 1's exchange recorded with tcpdump: `raknet-dissect messages CAPTURE
/// --dir c2s --json` shows, in order and byte for byte, the user messages the
/// original server's application received.
#[test]
fn capture_of_connect_matches_original_server() {
    let Some(py) = need_python() else { return };
    if !need_capture() {
        return;
    }
    let work = Work::new("capture");
    let pcap = work.file("capture.pcap");
    let plan = test1_plan();
    let x = exchange_with_original(&py, &work, PORT_CAPTURE, &plan, None, Some(&pcap));
    let (t, mut problems) = check_original_exchange("captured", &plan, &x, true);
    let out = common::run_with_timeout(
        common::bin()
            .arg("messages")
            .arg(&pcap)
            .args(["--dir", "c2s", "--json"]),
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records: Vec<Value> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let flows: HashSet<u64> = records.iter().filter_map(|r| r["flow"].as_u64()).collect();
    let mirrored: Vec<Vec<u8>> = records
        .iter()
        .filter(|r| r["type"] == "message")
        .filter(|r| r["id"].as_u64().is_some_and(|id| id >= 0x86))
        .map(|r| unhex(r["data"].as_str().expect("data")))
        .collect();
    let anomalous = records
        .iter()
        .filter(|r| r["anomalies"].as_array().is_some_and(|a| !a.is_empty()))
        .count();
    println!(
        "capture: {} flows, {} user messages mirrored, {} received by the server, {anomalous} records with anomalies; {}",
        flows.len(),
        mirrored.len(),
        x.server_got.len(),
        t.line()
    );
    if flows.len() != plan.len() {
        problems.push(format!(
            "{} flows in the capture, {} connections made",
            flows.len(),
            plan.len()
        ));
    }
    if mirrored != x.server_got {
        let i = mirrored
            .iter()
            .zip(&x.server_got)
            .position(|(a, b)| a != b)
            .unwrap_or(mirrored.len().min(x.server_got.len()));
        problems.push(format!(
            "`messages --dir c2s` shows {} user messages, the server received {}; first difference at {i}: mirror {} / server {}",
            mirrored.len(),
            x.server_got.len(),
            mirrored.get(i).map_or("-".into(), |m| describe(m)),
            x.server_got.get(i).map_or("-".into(), |m| describe(m))
        ));
    }
    assert_no_problems("capture of our client -> original server", &problems);
}
