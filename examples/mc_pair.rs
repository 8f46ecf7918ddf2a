//! A Minecraft-dialect RakNet pair over loopback, made with the `rust-raknet`
//! crate (a dev-dependency), to produce sample captures.
//!
//! ```text
//! cargo run --example mc_pair -- [PORT] [--version V] [--host IP] [--out-json FILE]
//!     [--connect-port R] [--messages N] [--seed S] [--sent-json FILE] [--timeout SECS]
//!     [--big BYTES] [--role pair|server|client] [--echo] [--once] [--expect N] [--wait SECS]
//! ```
//!
//! PORT defaults to 19133; `--version` is the RakNet protocol byte the client
//! sends (default: the crate's, 10). `--host` is the address the server binds
//! and the client connects to (default 127.0.0.1; `--host ::1` runs the pair
//! over IPv6 loopback). `--out-json` writes what each application
//! received, in the format of `scripts/peers.py` (a JSON list of objects with
//! `n`, `time`, `side`, `dir`, `kind`, `id`, `name`, `len`, `hex`; rust-raknet
//! hands only game messages to the application, so every `kind` is `connected`).
//!
//! A server listens on HOST:PORT with a Bedrock MOTD; a client sends an
//! unconnected ping and prints the MOTD, connects, and the two exchange
//! 0xFE-prefixed game-style messages both ways (RELIABLE_ORDERED, channel 0,
//! one of them large enough to be split, plus a batch of three small ones
//! that share a datagram); then the client disconnects. Each side prints what
//! it received, one line per message: `<side> received <len> bytes: <hex head>`.
//! Payloads are deterministic. The whole run is bounded by 30 seconds.
//!
//! Options for the acceptance test of `raknet-dissect messages` (tests/mirror.rs);
//! without them the run is the one above:
//!
//! - `--connect-port R`: the client connects to HOST:R instead of HOST:PORT (put
//!   `scripts/relay.py --listen HOST:R --target HOST:PORT` there). The unconnected
//!   ping is then skipped: rust-raknet pings from a socket of its own, and the relay
//!   only serves the first client address it sees.
//! - `--messages N`: instead of the 6 client messages, the client sends N
//!   (`--seed S`, default 1, picks them): every fifth is of one of
//!   `Unreliable`, `Reliable` (unordered), `UnreliableSequenced`, `ReliableSequenced`
//!   (the sequenced ones on channels 4 and 5, which carry nothing ordered, see
//!   below), the rest `ReliableOrdered` on channels 0 to 3; the first 10 cover
//!   every (reliability, channel) pair. Sizes: ReliableOrdered 1 to 100,000 bytes
//!   (100,000, 65,000 and 30,000 at 1/4, 1/2 and 3/4 of the list, 1 in 5 of the
//!   others split: 1341 to 40,000), the others 1 to 1340 (rust-raknet splits only
//!   ReliableOrdered; 1340 = MTU 1400 - 60). Layout: `fe`, reliability (0..4),
//!   channel, serial (u16 BE), then seeded bytes. The server receives until it
//!   has every Reliable and ReliableOrdered one (at most 30 s), then sends its 3
//!   messages, and records everything until the client disconnects. Each server
//!   record gets `"sent": {"serial", "reliability", "reliability_value",
//!   "channel"}` when it is byte for byte one of the client's messages. The
//!   overall bound becomes 50 s (`--timeout` changes it).
//!   Sequenced messages are kept off the ordered channels on purpose:
//!   rust-raknet 1.4 delivers a sequenced message as soon as its sequence index
//!   is new, whatever its ordering index, where the original library holds it
//!   back behind a missing ordered message of its channel (docs/wire-format.md §7).
//! - `--sent-json FILE`: the client's messages, as peers.py writes them
//!   (`{"sent": [{"index", "serial", "side", "dir", "reliability",
//!   "reliability_value", "channel", "len", "hex"}]}`).
//! - `--big BYTES`: one more `ReliableOrdered` message of BYTES bytes (channel
//!   0, same layout, serial = the number of other messages) in the middle of the
//!   plan; with `--messages` (pair) or in the client role (below). rust-raknet
//!   splits it into MTU - 60 = 1340-byte fragments (747 for 1,000,000 bytes)
//!   and refuses more than 64 MiB per message counting 128 bytes of bookkeeping
//!   per fragment: 61,250,000 bytes pass, 61,258,000 do not (exit 1).
//!
//! `--role server` and `--role client` run one side alone, against another
//! implementation (`--role pair`, the default, is the run above):
//!
//! ```text
//! mc_pair --role server [PORT] [--host IP] [--echo] [--once] [--expect N]
//!     [--out-json FILE] [--timeout SECS] [--messages N] [--seed S] [--big BYTES]
//! mc_pair --role client --connect-port R [--host IP] [--messages N] [--seed S]
//!     [--big BYTES] [--out-json FILE] [--sent-json FILE] [--wait SECS]
//!     [--timeout SECS] [--version V]
//! ```
//!
//! - The server binds HOST:PORT (PORT 0: a free one) with the MOTD above, then
//!   prints exactly one line `listening ADDR` (a Rust socket address:
//!   `127.0.0.1:19133`, `[::1]:19133`) and flushes stdout. It accepts every
//!   client, each served by a task of its own, and records each message it
//!   receives (side `server`, dir `c2s`; given the client's `--messages`,
//!   `--seed` and `--big`, records get `sent` as in the pair). `--echo` sends
//!   each one back as `ReliableOrdered`, on ordering channel 0: rust-raknet's
//!   `send` has no channel argument. It answers unconnected pings (0x01 and
//!   0x02, which must carry the client GUID) and accepts RakNet protocol 10 and
//!   11 only (the crate's fixed list; others get INCOMPATIBLE_PROTOCOL_VERSION
//!   naming 10); the MTU is the client's request, at most 1400. It ends with
//!   `--once` when the first connection ends (a disconnection, or the crate's
//!   60 s silence timeout), with `--expect N` once N messages were received
//!   in all and every connection has ended (waiting at most 1 s for that),
//!   otherwise at `--timeout`.
//! - The client connects to HOST:R (R from `--connect-port`, else PORT; `--host
//!   ::1` for IPv6), records everything it receives from then on (side `client`,
//!   dir `s2c`), sends the plan (`--messages N`, or the pair's 6 messages, the
//!   last three with one `send_batch`; `--big` in the middle), waits until the
//!   server acknowledged all of it, receives for `--wait` more seconds (default
//!   2; less if the server disconnects), then disconnects (`close`: a reliable
//!   ID_DISCONNECTION_NOTIFICATION and ten bare 0x15 datagrams). `--sent-json`
//!   writes the plan.
//! - Both print the pair's lines (`<side> received ...`) and write `--out-json`
//!   at exit whatever the outcome. Exit status: 0 done; 1 error (bind, send,
//!   or connection: the client prints the crate's error, or gives up when the
//!   server does not answer within 10 s, as rust-raknet's `connect` retries
//!   forever); 3 `--timeout` reached (default 60 s in these roles).

use rust_raknet::{RaknetListener, RaknetSocket, Reliability};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// A game-style message: 0xFE, then a deterministic pattern.
fn game_message(len: usize, seed: u8) -> Vec<u8> {
    let mut m: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed))
        .collect();
    m[0] = 0xFE;
    m
}

/// What the applications received, in order, as peers.py records it.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<Received>>>);

#[derive(serde::Serialize)]
struct Received {
    n: usize,
    time: f64,
    side: String,
    dir: &'static str,
    kind: &'static str,
    id: u8,
    name: String,
    len: usize,
    hex: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    sent: Option<SentRef>,
}

/// How a received message was sent (`--messages` mode).
#[derive(serde::Serialize, Clone)]
struct SentRef {
    serial: u16,
    reliability: &'static str,
    reliability_value: u8,
    channel: u8,
}

impl Log {
    fn show(&self, side: &str, m: &[u8]) {
        self.show_sent(side, m, None)
    }

    fn show_sent(&self, side: &str, m: &[u8], sent: Option<SentRef>) {
        let head: String = m.iter().take(16).map(|b| format!("{b:02x}")).collect();
        let more = if m.len() > 16 { "..." } else { "" };
        println!("{side} received {} bytes: {head}{more}", m.len());
        let time = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        let id = m.first().copied().unwrap_or(0);
        let name = if id >= 0x86 {
            format!("ID_USER_PACKET_ENUM+{}", id - 0x86)
        } else {
            format!("UNKNOWN_0x{id:02X}")
        };
        let mut v = self.0.lock().unwrap();
        let n = v.len();
        v.push(Received {
            n,
            time: (time * 1e6).round() / 1e6,
            side: side.to_string(),
            dir: if side == "server" { "c2s" } else { "s2c" },
            kind: "connected",
            id,
            name,
            len: m.len(),
            hex: m.iter().map(|b| format!("{b:02x}")).collect(),
            sent,
        });
    }

    fn write(&self, path: &str) -> std::io::Result<()> {
        let v = self.0.lock().unwrap();
        let lines: Vec<String> = v
            .iter()
            .map(|e| serde_json::to_string(e).unwrap_or_default())
            .collect();
        std::fs::write(path, format!("[\n{}\n]\n", lines.join(",\n")))
    }
}

fn client_messages() -> Vec<Vec<u8>> {
    vec![
        game_message(1, 0),
        game_message(100, 1),
        game_message(5000, 2),
    ]
}

fn client_batch() -> Vec<Vec<u8>> {
    vec![
        game_message(10, 3),
        game_message(20, 4),
        game_message(30, 5),
    ]
}

fn server_messages() -> Vec<Vec<u8>> {
    vec![
        game_message(64, 0x10),
        game_message(3000, 0x11),
        game_message(1, 0x12),
    ]
}

/// One client message of the `--messages` plan.
struct Planned {
    serial: u16,
    reliability: Reliability,
    channel: u8,
    data: Vec<u8>,
}

fn reliability_name(r: Reliability) -> &'static str {
    match r {
        Reliability::Unreliable => "UNRELIABLE",
        Reliability::UnreliableSequenced => "UNRELIABLE_SEQUENCED",
        Reliability::Reliable => "RELIABLE",
        Reliability::ReliableOrdered => "RELIABLE_ORDERED",
        Reliability::ReliableSequenced => "RELIABLE_SEQUENCED",
    }
}

/// splitmix64: a small seeded generator (no extra dependency).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in lo..=hi.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Largest message rust-raknet sends unsplit at MTU 1400 (MTU - 60); only
/// ReliableOrdered may be larger.
const MAX_UNSPLIT: usize = 1340;

/// The client's messages for `--messages N --seed S` (see the module doc).
fn plan_messages(n: usize, seed: u64) -> Vec<Planned> {
    let mut rng = Rng(seed ^ 0x006D_635F_7061_6972);
    // (reliability, channel) pairs covered by the first 10 messages.
    let cover = [
        (Reliability::ReliableOrdered, 0),
        (Reliability::Reliable, 0),
        (Reliability::ReliableOrdered, 1),
        (Reliability::Unreliable, 0),
        (Reliability::ReliableOrdered, 2),
        (Reliability::UnreliableSequenced, 4),
        (Reliability::ReliableOrdered, 3),
        (Reliability::ReliableSequenced, 4),
        (Reliability::UnreliableSequenced, 5),
        (Reliability::ReliableSequenced, 5),
    ];
    let big: HashMap<usize, usize> = [100_000, 65_000, 30_000]
        .iter()
        .enumerate()
        .map(|(k, &size)| (n * (k + 1) / 4, size))
        .collect();
    (0..n)
        .map(|i| {
            let (reliability, channel) = if i < cover.len() {
                cover[i]
            } else if i % 5 == 4 {
                match rng.range(0, 3) {
                    0 => (Reliability::Unreliable, 0),
                    1 => (Reliability::Reliable, 0),
                    2 => (Reliability::UnreliableSequenced, 4 + rng.range(0, 1) as u8),
                    _ => (Reliability::ReliableSequenced, 4 + rng.range(0, 1) as u8),
                }
            } else {
                (Reliability::ReliableOrdered, rng.range(0, 3) as u8)
            };
            let r = rng.unit();
            let mut size = if r < 0.05 {
                rng.range(1, 4)
            } else if r < 0.55 {
                rng.range(5, 400)
            } else if r < 0.80 {
                rng.range(401, MAX_UNSPLIT)
            } else {
                rng.range(MAX_UNSPLIT + 1, 40_000)
            };
            if reliability == Reliability::ReliableOrdered {
                if let Some(&b) = big.get(&i) {
                    size = b;
                }
            } else if size > MAX_UNSPLIT {
                size = rng.range(5, MAX_UNSPLIT);
            }
            let serial = i as u16;
            let mut data = vec![0xFE, reliability as u8, channel];
            data.extend_from_slice(&serial.to_be_bytes());
            while data.len() < size {
                data.extend_from_slice(&rng.next().to_le_bytes());
            }
            data.truncate(size);
            Planned {
                serial,
                reliability,
                channel,
                data,
            }
        })
        .collect()
}

/// Adds `--big`'s message in the middle of `plan`: `ReliableOrdered` on channel
/// 0, serial = the number of other messages, the layout of `plan_messages`.
fn insert_big(plan: &mut Vec<Planned>, size: usize, seed: u64) {
    let mut rng = Rng(seed ^ 0x0062_6967_5f6d_7367);
    let serial = plan.len() as u16;
    let reliability = Reliability::ReliableOrdered;
    let mut data = vec![0xFE, reliability as u8, 0];
    data.extend_from_slice(&serial.to_be_bytes());
    while data.len() < size {
        data.extend_from_slice(&rng.next().to_le_bytes());
    }
    data.truncate(size);
    let at = plan.len() / 2;
    plan.insert(
        at,
        Planned {
            serial,
            reliability,
            channel: 0,
            data,
        },
    );
}

/// The pair's 6 client messages as a plan (serials 0 to 5), for the client role.
fn default_plan() -> Vec<Planned> {
    client_messages()
        .into_iter()
        .chain(client_batch())
        .enumerate()
        .map(|(i, data)| Planned {
            serial: i as u16,
            reliability: Reliability::ReliableOrdered,
            channel: 0,
            data,
        })
        .collect()
}

/// The plan's messages by content. Short messages can be equal (prefixes of
/// the layout): a list per content, popped in send order.
fn sent_index(plan: &[Planned]) -> HashMap<Vec<u8>, Vec<SentRef>> {
    let mut by_bytes: HashMap<Vec<u8>, Vec<SentRef>> = HashMap::new();
    for p in plan.iter().rev() {
        by_bytes.entry(p.data.clone()).or_default().push(SentRef {
            serial: p.serial,
            reliability: reliability_name(p.reliability),
            reliability_value: p.reliability as u8,
            channel: p.channel,
        });
    }
    by_bytes
}

fn write_sent_json(path: &str, plan: &[Planned]) -> std::io::Result<()> {
    let sent: Vec<serde_json::Value> = plan
        .iter()
        .enumerate()
        .map(|(index, p)| {
            serde_json::json!({
                "index": index,
                "serial": p.serial,
                "side": "client",
                "dir": "c2s",
                "reliability": reliability_name(p.reliability),
                "reliability_value": p.reliability as u8,
                "channel": p.channel,
                "len": p.data.len(),
                "hex": p.data.iter().map(|b| format!("{b:02x}")).collect::<String>(),
            })
        })
        .collect();
    let doc = serde_json::json!({ "implementation": "rust-raknet 1.4", "sent": sent });
    std::fs::write(path, format!("{doc:#}\n"))
}

/// Command-line options.
struct Opts {
    host: IpAddr,
    port: u16,
    version: Option<u8>,
    /// The port the client connects to (a relay), when not `port`.
    connect_port: Option<u16>,
    /// `--messages N`: the client's messages (None: the default exchange).
    plan: Option<Vec<Planned>>,
    /// Client role: how many of the plan's last messages go in one `send_batch`.
    batch: usize,
    /// Server role: `--echo`, `--once`, `--expect N`.
    echo: bool,
    once: bool,
    expect: Option<usize>,
    /// Client role: `--wait SECS`.
    wait: f64,
}

/// `--role`.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    Pair,
    Server,
    Client,
}

/// How long the client role waits for the server's answers to its connection
/// request (rust-raknet's `connect` retries every 2 s without end).
const CONNECT_WAIT: Duration = Duration::from_secs(10);

/// What a connection task of the server role tells the accepting loop.
enum Event {
    Received,
    Ended(String, String),
}

/// Serves one connection of the server role until it ends.
async fn serve(
    socket: RaknetSocket,
    echo: bool,
    log: Log,
    index: Arc<Mutex<HashMap<Vec<u8>, Vec<SentRef>>>>,
    events: tokio::sync::mpsc::UnboundedSender<Event>,
) {
    let peer = socket
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?".into());
    println!(
        "server accepted {peer} (client RakNet protocol {:?}, mtu {})",
        socket.raknet_version(),
        socket.mtu()
    );
    let why = loop {
        match socket.recv().await {
            Ok(m) => {
                let sent = index.lock().unwrap().get_mut(&m).and_then(|v| v.pop());
                log.show_sent("server", &m, sent);
                let _ = events.send(Event::Received);
                if echo {
                    if let Err(e) = socket.send(&m, Reliability::ReliableOrdered).await {
                        break format!("echo failed: {e}");
                    }
                }
            }
            Err(e) => break e.to_string(),
        }
    };
    let _ = events.send(Event::Ended(peer, why));
}

/// `--role server` (see the module doc).
async fn run_server(opts: Opts, log: Log) -> Result<(), Error> {
    let addr = SocketAddr::new(opts.host, opts.port);
    let mut listener = RaknetListener::bind(&addr)
        .await
        .map_err(|e| format!("cannot bind {addr}: {e}"))?;
    let local = listener.local_addr()?;
    listener
        .set_motd(
            "raknet-dissect sample",
            10,
            "766",
            "1.21.50",
            "Survival",
            local.port(),
        )
        .await?;
    listener.listen().await;
    println!("listening {local}");
    std::io::stdout().flush()?;
    println!("server guid {}", listener.get_guid());

    let index = Arc::new(Mutex::new(sent_index(opts.plan.as_deref().unwrap_or(&[]))));
    let (events, mut incoming) = tokio::sync::mpsc::unbounded_channel();
    let (mut open, mut received) = (0usize, 0usize);
    // Set once `--expect` is met: the end of the wait for disconnections.
    let mut expected_by: Option<tokio::time::Instant> = None;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let socket = accepted?;
                open += 1;
                tokio::spawn(serve(socket, opts.echo, log.clone(), index.clone(), events.clone()));
            }
            Some(event) = incoming.recv() => match event {
                Event::Received => {
                    received += 1;
                    if expected_by.is_none() && opts.expect.is_some_and(|n| received >= n) {
                        println!("server: {received} messages received (--expect)");
                        expected_by = Some(tokio::time::Instant::now() + Duration::from_secs(1));
                    }
                }
                Event::Ended(peer, why) => {
                    open -= 1;
                    println!("server: connection from {peer} ended ({why})");
                    if opts.once {
                        break;
                    }
                }
            },
            _ = tokio::time::sleep_until(expected_by.unwrap_or_else(tokio::time::Instant::now)),
                if expected_by.is_some() => {
                println!("server: {open} connection(s) still open after 1 s");
                break;
            }
        }
        if expected_by.is_some() && open == 0 {
            break;
        }
    }
    // Closing disconnects whoever is still connected.
    let _ = tokio::time::timeout(Duration::from_secs(1), listener.close()).await;
    println!("server: {received} messages received; done");
    Ok(())
}

/// `--role client` (see the module doc).
async fn run_client(opts: Opts, log: Log) -> Result<(), Error> {
    let plan = opts.plan.expect("a plan");
    let target = SocketAddr::new(opts.host, opts.connect_port.unwrap_or(opts.port));
    let connecting = async {
        match opts.version {
            Some(v) => RaknetSocket::connect_with_version(&target, v).await,
            None => RaknetSocket::connect(&target).await,
        }
    };
    let client = match tokio::time::timeout(CONNECT_WAIT, connecting).await {
        Ok(Ok(c)) => Arc::new(c),
        Ok(Err(e)) => return Err(format!("cannot connect to {target}: {e}").into()),
        Err(_) => {
            return Err(format!(
                "cannot connect to {target}: no answer within {} s",
                CONNECT_WAIT.as_secs()
            )
            .into())
        }
    };
    println!(
        "client connected from {} to {}, mtu {}",
        client.local_addr()?,
        client.peer_addr()?,
        client.mtu()
    );
    let mut receiver = {
        let (client, log) = (client.clone(), log.clone());
        tokio::spawn(async move {
            loop {
                match client.recv().await {
                    Ok(m) => log.show("client", &m),
                    Err(e) => return e,
                }
            }
        })
    };
    let start = std::time::Instant::now();
    let single = plan.len() - opts.batch.min(plan.len());
    for p in &plan[..single] {
        client
            .send_with_order_channel(&p.data, p.reliability, p.channel)
            .await
            .map_err(|e| format!("sending message {} ({} bytes): {e}", p.serial, p.data.len()))?;
    }
    if single < plan.len() {
        let refs: Vec<&[u8]> = plan[single..].iter().map(|p| p.data.as_slice()).collect();
        client
            .send_batch(&refs, Reliability::ReliableOrdered)
            .await
            .map_err(|e| format!("sending the batch: {e}"))?;
    }
    println!("client: {} messages sent", plan.len());
    client
        .flush()
        .await
        .map_err(|e| format!("waiting for the server's acknowledgements: {e}"))?;
    println!(
        "client: every message acknowledged after {:.3} s",
        start.elapsed().as_secs_f64()
    );
    let wait = Duration::from_secs_f64(opts.wait);
    tokio::select! {
        _ = tokio::time::sleep(wait) => {
            client.close().await?;
            // Give the client's ticker time to put the disconnection on the wire;
            // the receiver takes what was delivered before, then ends.
            tokio::time::sleep(Duration::from_millis(200)).await;
            let _ = tokio::time::timeout(Duration::from_secs(1), receiver).await;
        }
        e = &mut receiver => {
            let why = e.map_or_else(|e| e.to_string(), |e| e.to_string());
            println!("client: connection ended by the server ({why})");
        }
    }
    println!("done");
    Ok(())
}

/// The `--messages` run (see the module doc).
async fn run_messages(opts: Opts, log: Log) -> Result<(), Error> {
    let plan = opts.plan.expect("a plan");
    let addr = SocketAddr::new(opts.host, opts.port);
    let connect_addr = SocketAddr::new(opts.host, opts.connect_port.unwrap_or(opts.port));
    let mut listener = RaknetListener::bind(&addr).await?;
    listener
        .set_motd(
            "raknet-dissect sample",
            10,
            "766",
            "1.21.50",
            "Survival",
            opts.port,
        )
        .await?;
    listener.listen().await;
    println!("server guid {} on {addr}", listener.get_guid());

    let mut by_bytes = sent_index(&plan);
    let must: HashSet<u16> = plan
        .iter()
        .filter(|p| {
            matches!(
                p.reliability,
                Reliability::Reliable | Reliability::ReliableOrdered
            )
        })
        .map(|p| p.serial)
        .collect();
    let server_log = log.clone();
    let server = tokio::spawn(async move {
        let log = server_log;
        let socket = listener.accept().await?;
        println!("server accepted {}", socket.peer_addr()?);
        let mut record = |m: &[u8], got: &mut HashSet<u16>| {
            let sent = by_bytes.get_mut(m).and_then(|v| v.pop());
            if let Some(s) = &sent {
                got.insert(s.serial);
            }
            log.show_sent("server", m, sent);
        };
        let mut got: HashSet<u16> = HashSet::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let mut ended = false;
        while !must.is_subset(&got) {
            match tokio::time::timeout_at(deadline, socket.recv()).await {
                Ok(Ok(m)) => record(&m, &mut got),
                Ok(Err(e)) => {
                    println!("server: connection ended ({e})");
                    ended = true;
                    break;
                }
                Err(_) => {
                    println!(
                        "server: {} reliable messages missing after 30 s",
                        must.difference(&got).count()
                    );
                    break;
                }
            }
        }
        if !ended {
            println!("server: every reliable message received; sending");
            for m in server_messages() {
                socket.send(&m, Reliability::ReliableOrdered).await?;
            }
            // Record the rest (unreliable stragglers) until the client disconnects.
            loop {
                match tokio::time::timeout(Duration::from_secs(15), socket.recv()).await {
                    Ok(Ok(m)) => record(&m, &mut got),
                    Ok(Err(e)) => {
                        println!("server: connection ended ({e})");
                        break;
                    }
                    Err(_) => {
                        println!("server: no disconnection within 15 s");
                        break;
                    }
                }
            }
        }
        let missing = must.difference(&got).count();
        drop(socket);
        listener.close().await?;
        if missing > 0 {
            return Err(Error::from(format!(
                "{missing} reliable messages not received"
            )));
        }
        Ok::<_, Error>(())
    });

    let client = match opts.version {
        Some(v) => RaknetSocket::connect_with_version(&connect_addr, v).await?,
        None => RaknetSocket::connect(&connect_addr).await?,
    };
    println!(
        "client connected from {} to {}, mtu {}",
        client.local_addr()?,
        client.peer_addr()?,
        client.mtu()
    );
    for p in &plan {
        client
            .send_with_order_channel(&p.data, p.reliability, p.channel)
            .await?;
    }
    println!("client: {} messages sent", plan.len());
    for _ in 0..server_messages().len() {
        match tokio::time::timeout(Duration::from_secs(40), client.recv()).await {
            Ok(m) => log.show("client", &m?),
            Err(_) => return Err(Error::from("client: no answer from the server")),
        }
    }
    client.flush().await?;
    client.close().await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.await??;
    println!("done");
    Ok(())
}

async fn run(
    host: IpAddr,
    port: u16,
    connect_port: Option<u16>,
    version: Option<u8>,
    log: Log,
) -> Result<(), Error> {
    let addr = SocketAddr::new(host, port);
    let connect_addr = SocketAddr::new(host, connect_port.unwrap_or(port));
    let mut listener = RaknetListener::bind(&addr).await?;
    listener
        .set_motd(
            "raknet-dissect sample",
            10,
            "766",
            "1.21.50",
            "Survival",
            port,
        )
        .await?;
    listener.listen().await;
    println!(
        "server guid {} motd {:?}",
        listener.get_guid(),
        listener.get_motd().await
    );

    let expected = client_messages().len() + client_batch().len();
    let server_log = log.clone();
    let server = tokio::spawn(async move {
        let log = server_log;
        let socket = listener.accept().await?;
        println!(
            "server accepted {} (client RakNet protocol {:?})",
            socket.peer_addr()?,
            socket.raknet_version()
        );
        for _ in 0..expected {
            log.show("server", &socket.recv().await?);
        }
        for m in server_messages() {
            socket.send(&m, Reliability::ReliableOrdered).await?;
        }
        // The client disconnects once it has our messages: recv then fails.
        match tokio::time::timeout(Duration::from_secs(10), socket.recv()).await {
            Ok(Ok(m)) => log.show("server", &m),
            Ok(Err(e)) => println!("server: connection ended ({e})"),
            Err(_) => println!("server: no disconnection within 10 s"),
        }
        drop(socket);
        listener.close().await?;
        Ok::<_, Error>(())
    });

    if connect_port.is_none() {
        let (latency, motd) = RaknetSocket::ping(&addr).await?;
        println!("client ping: {latency} ms, motd {motd:?}");
    } else {
        println!("client ping skipped (--connect-port)");
    }

    let client = match version {
        Some(v) => RaknetSocket::connect_with_version(&connect_addr, v).await?,
        None => RaknetSocket::connect(&connect_addr).await?,
    };
    println!(
        "client connected from {} to {}, mtu {}",
        client.local_addr()?,
        client.peer_addr()?,
        client.mtu()
    );
    for m in client_messages() {
        client.send(&m, Reliability::ReliableOrdered).await?;
    }
    let batch = client_batch();
    let refs: Vec<&[u8]> = batch.iter().map(|m| m.as_slice()).collect();
    client
        .send_batch(&refs, Reliability::ReliableOrdered)
        .await?;
    for _ in 0..server_messages().len() {
        log.show("client", &client.recv().await?);
    }
    client.flush().await?;
    client.close().await?;
    // Give the client's ticker time to put the disconnection on the wire.
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.await??;
    println!("done");
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let mut port: u16 = 19133;
    let mut version: Option<u8> = None;
    let mut out_json: Option<String> = None;
    let mut sent_json: Option<String> = None;
    let mut connect_port: Option<u16> = None;
    let mut messages: Option<usize> = None;
    let mut seed: u64 = 1;
    let mut timeout: Option<f64> = None;
    let mut host = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut role = Role::Pair;
    let mut big: Option<usize> = None;
    let (mut echo, mut once) = (false, false);
    let mut expect: Option<usize> = None;
    let mut wait: f64 = 2.0;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--version" => version = Some(args.next().ok_or("--version needs a value")?.parse()?),
            "--out-json" => out_json = Some(args.next().ok_or("--out-json needs a file")?),
            "--sent-json" => sent_json = Some(args.next().ok_or("--sent-json needs a file")?),
            "--connect-port" => {
                connect_port = Some(args.next().ok_or("--connect-port needs a port")?.parse()?)
            }
            "--messages" => messages = Some(args.next().ok_or("--messages needs N")?.parse()?),
            "--seed" => seed = args.next().ok_or("--seed needs a value")?.parse()?,
            "--timeout" => timeout = Some(args.next().ok_or("--timeout needs seconds")?.parse()?),
            "--role" => {
                role = match args
                    .next()
                    .ok_or("--role needs pair, server or client")?
                    .as_str()
                {
                    "pair" => Role::Pair,
                    "server" => Role::Server,
                    "client" => Role::Client,
                    r => return Err(format!("--role {r}: pair, server or client").into()),
                }
            }
            "--big" => big = Some(args.next().ok_or("--big needs a size in bytes")?.parse()?),
            "--echo" => echo = true,
            "--once" => once = true,
            "--expect" => expect = Some(args.next().ok_or("--expect needs N")?.parse()?),
            "--wait" => wait = args.next().ok_or("--wait needs seconds")?.parse()?,
            "--host" => {
                let h = args.next().ok_or("--host needs an IP address")?;
                // Accept "::1" and "[::1]".
                host = h.trim_start_matches('[').trim_end_matches(']').parse()?;
            }
            p => port = p.parse()?,
        }
    }
    let mut plan = match role {
        Role::Client => Some(messages.map_or_else(default_plan, |n| plan_messages(n, seed))),
        Role::Server if big.is_some() => {
            Some(messages.map_or_else(default_plan, |n| plan_messages(n, seed)))
        }
        _ => messages.map(|n| plan_messages(n, seed)),
    };
    if let Some(size) = big {
        if size == 0 {
            return Err("--big needs at least 1 byte".into());
        }
        insert_big(
            plan.as_mut()
                .ok_or("--big needs --messages in the pair role")?,
            size,
            seed,
        );
    }
    if let (Some(path), Some(plan)) = (&sent_json, &plan) {
        write_sent_json(path, plan)?;
    }
    let log = Log::default();
    let opts = Opts {
        host,
        port,
        version,
        connect_port,
        batch: if role == Role::Client && messages.is_none() {
            client_batch().len()
        } else {
            0
        },
        plan,
        echo,
        once,
        expect,
        wait,
    };
    if role != Role::Pair {
        let limit = timeout.unwrap_or(60.0);
        let work = async {
            if role == Role::Server {
                run_server(opts, log.clone()).await
            } else {
                run_client(opts, log.clone()).await
            }
        };
        let code = match tokio::time::timeout(Duration::from_secs_f64(limit), work).await {
            Ok(Ok(())) => 0,
            Ok(Err(e)) => {
                eprintln!("mc_pair: {e}");
                1
            }
            Err(_) => {
                eprintln!("mc_pair: timed out after {limit} s");
                3
            }
        };
        if let Some(path) = out_json {
            log.write(&path)?;
        }
        std::io::stdout().flush()?;
        std::process::exit(code);
    }
    let limit = timeout.unwrap_or(if opts.plan.is_some() { 50.0 } else { 30.0 });
    let work = async {
        if opts.plan.is_some() {
            run_messages(opts, log.clone()).await
        } else {
            run(host, port, opts.connect_port, version, log.clone()).await
        }
    };
    let result = tokio::time::timeout(Duration::from_secs_f64(limit), work)
        .await
        .map_err(|_| Error::from(format!("mc_pair: timed out after {limit} s")))
        .and_then(|r| r);
    if let Some(path) = out_json {
        log.write(&path)?;
    }
    result
}
