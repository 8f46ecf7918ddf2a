//! A Minecraft-dialect RakNet pair over loopback, made with the `rust-raknet`
//! crate (a dev-dependency), to produce sample captures.
//!
//! ```text
//! cargo run --example mc_pair -- [PORT] [--version V] [--host IP] [--out-json FILE]
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

use rust_raknet::{RaknetListener, RaknetSocket, Reliability};
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
}

impl Log {
    fn show(&self, side: &str, m: &[u8]) {
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

async fn run(host: IpAddr, port: u16, version: Option<u8>, log: Log) -> Result<(), Error> {
    let addr = SocketAddr::new(host, port);
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

    let (latency, motd) = RaknetSocket::ping(&addr).await?;
    println!("client ping: {latency} ms, motd {motd:?}");

    let client = match version {
        Some(v) => RaknetSocket::connect_with_version(&addr, v).await?,
        None => RaknetSocket::connect(&addr).await?,
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
    let mut host = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--version" => version = Some(args.next().ok_or("--version needs a value")?.parse()?),
            "--out-json" => out_json = Some(args.next().ok_or("--out-json needs a file")?),
            "--host" => {
                let h = args.next().ok_or("--host needs an IP address")?;
                // Accept "::1" and "[::1]".
                host = h.trim_start_matches('[').trim_end_matches(']').parse()?;
            }
            p => port = p.parse()?,
        }
    }
    let log = Log::default();
    let result = tokio::time::timeout(
        Duration::from_secs(30),
        run(host, port, version, log.clone()),
    )
    .await
    .map_err(|_| Error::from("mc_pair: timed out after 30 s"))
    .and_then(|r| r);
    if let Some(path) = out_json {
        log.write(&path)?;
    }
    result
}
