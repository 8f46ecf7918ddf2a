//! `ping`, `connect` and `serve`: the live client and server on the command
//! line (`peer/` around `session/`).

use std::io::{self, BufRead, IsTerminal, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use clap::{Args, ValueEnum};
use serde::Serialize;

use super::{EXIT_OK, EXIT_USAGE};
use crate::peer::{self, Client, PeerError, Server};
use crate::session::handshake::{
    HandshakeEvent, MTU_PROBES, PROTOCOL_MINECRAFT, PROTOCOL_ORIGINAL,
};
use crate::session::{ClientConfig, CloseReason, Delivered, Event, ServerConfig};
use crate::wire::cursor::hex;
use crate::wire::{message_name, Motd, Reliability};

/// Exit code when no connection could be made: no pong, a refused or
/// unanswered handshake, nothing listening (the diagnosis is printed).
pub const EXIT_NO_CONNECTION: u8 = 6;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Dialect {
    /// The original RakNet: protocol 6, 10 internal addresses.
    #[default]
    Original,
    /// Minecraft Bedrock: protocol 11, 20 internal addresses.
    Minecraft,
}

/// The dialect options shared by `connect` and `serve`.
#[derive(Args, Debug, Clone, Default)]
pub struct DialectArgs {
    /// Defaults for the protocol byte and address count.
    #[arg(long, value_enum, default_value = "original")]
    pub dialect: Dialect,
    /// RakNet protocol byte (default: 6 original, 11 Minecraft; a Minecraft
    /// server accepts 9, 10 and 11 unless this is given).
    #[arg(long, value_name = "V")]
    pub protocol: Option<u8>,
    /// Internal addresses in the connected handshake (default: 10 original, 20 Minecraft).
    #[arg(long, value_name = "N")]
    pub addresses: Option<usize>,
}

impl DialectArgs {
    fn protocol(&self) -> u8 {
        self.protocol.unwrap_or(match self.dialect {
            Dialect::Original => PROTOCOL_ORIGINAL,
            Dialect::Minecraft => PROTOCOL_MINECRAFT,
        })
    }
    /// Protocol bytes a server accepts.
    fn accepted(&self) -> Vec<u8> {
        match (self.protocol, self.dialect) {
            (Some(p), _) => vec![p],
            (None, Dialect::Original) => vec![PROTOCOL_ORIGINAL],
            (None, Dialect::Minecraft) => vec![9, 10, PROTOCOL_MINECRAFT],
        }
    }
    fn addresses(&self) -> usize {
        self.addresses.unwrap_or(match self.dialect {
            Dialect::Original => 10,
            Dialect::Minecraft => 20,
        })
    }
}

#[derive(Args, Debug)]
pub struct PingArgs {
    /// The server, HOST:PORT (IPv6 as [ADDR]:PORT).
    #[arg(value_name = "HOST:PORT")]
    pub target: String,
    /// Pings to send, one a second.
    #[arg(short = 'c', long, default_value = "1", value_name = "N")]
    pub count: u32,
    /// Seconds to wait for each pong.
    #[arg(long, default_value = "1", value_name = "SECONDS", value_parser = parse_seconds)]
    pub timeout: Duration,
    /// NDJSON: one `pong` record per ping answered.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct ConnectArgs {
    /// The server, HOST:PORT (IPv6 as [ADDR]:PORT).
    #[arg(value_name = "HOST:PORT")]
    pub target: String,
    /// A message to send, in hex (its first byte is the message id); `-`
    /// reads one message per line from standard input: `HEX`, or
    /// `RELIABILITY[/CHANNEL] HEX` for that message's own. Repeatable.
    #[arg(long = "send", value_name = "HEX")]
    pub send: Vec<String>,
    /// Send the messages N times over (a bulk transfer).
    #[arg(long, default_value = "1", value_name = "N")]
    pub repeat: u64,
    /// Reliability of the messages sent: a name (reliable-ordered, unreliable, ...) or 0 to 7.
    #[arg(long, default_value = "reliable-ordered", value_name = "R", value_parser = parse_reliability)]
    pub reliability: Reliability,
    /// Ordering channel (0 to 31).
    #[arg(long, default_value = "0", value_name = "C", value_parser = clap::value_parser!(u8).range(0..32))]
    pub channel: u8,
    /// Seconds to keep receiving after everything sent was acknowledged.
    #[arg(long, default_value = "1", value_name = "SECONDS", value_parser = parse_seconds)]
    pub wait: Duration,
    /// Largest MTU to probe with (1492, 1200 and 576 are tried, from this one down).
    #[arg(long, value_name = "M")]
    pub mtu: Option<u16>,
    #[command(flatten)]
    pub dialect: DialectArgs,
    /// NDJSON: `connected`, `message` and `closed` records.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:19132", value_name = "ADDR")]
    pub listen: String,
    /// Play the captured server of this capture: its pong payload and
    /// protocol, and its messages with their timing, from each client's connection on.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<std::path::PathBuf>,
    /// With --replay: the flow to play (default: the first whose client sent messages).
    #[arg(long, value_name = "N", requires = "replay")]
    pub flow: Option<u32>,
    /// With --replay: send the captured messages at once instead of with their timing.
    #[arg(long, requires = "replay")]
    pub asap: bool,
    /// Answer pings with a Minecraft MOTD carrying this text.
    #[arg(long, value_name = "TEXT", conflicts_with = "pong_hex")]
    pub motd: Option<String>,
    /// Answer pings with these raw bytes (hex).
    #[arg(long, value_name = "HEX")]
    pub pong_hex: Option<String>,
    /// Connected clients at most; more are refused (ID_NO_FREE_INCOMING_CONNECTIONS).
    #[arg(long, default_value = "32", value_name = "N")]
    pub max_clients: usize,
    /// Send every message received back, with its reliability and channel.
    #[arg(long)]
    pub echo: bool,
    /// Exit when the first client's connection ends.
    #[arg(long)]
    pub once: bool,
    /// Largest MTU granted.
    #[arg(long, default_value = "1492", value_name = "M")]
    pub mtu: u16,
    #[command(flatten)]
    pub dialect: DialectArgs,
    /// NDJSON: `listening`, `connected`, `message` and `closed` records.
    #[arg(long)]
    pub json: bool,
}

pub fn parse_reliability(s: &str) -> Result<Reliability, String> {
    if let Ok(n) = s.parse::<u8>() {
        return (n < 8)
            .then_some(Reliability(n))
            .ok_or_else(|| format!("{s:?}: a reliability is 0 to 7"));
    }
    let wanted = s.to_ascii_uppercase().replace('-', "_");
    (0..8)
        .map(Reliability)
        .find(|r| r.name() == wanted)
        .ok_or_else(|| {
            format!(
                "{s:?} is not a reliability: unreliable, unreliable-sequenced, reliable, \
                 reliable-ordered, reliable-sequenced, unreliable-with-ack-receipt, \
                 reliable-with-ack-receipt, reliable-ordered-with-ack-receipt, or 0 to 7"
            )
        })
}

pub(super) fn parse_hex(s: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = s
        .chars()
        .filter(|c| !c.is_whitespace() && *c != ':')
        .map(|c| c.to_digit(16).map(|d| d as u8))
        .collect::<Option<_>>()
        .ok_or_else(|| format!("{s:?} is not hex"))?;
    if digits.len() % 2 != 0 {
        return Err(format!("{s:?}: odd number of hex digits"));
    }
    Ok(digits.chunks(2).map(|p| p[0] << 4 | p[1]).collect())
}

/// Seconds on the command line: finite, 0 to a million (about 11 days).
pub(super) fn parse_seconds(s: &str) -> Result<Duration, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| (0.0..=1e6).contains(v))
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("{s:?} is not a number of seconds from 0 to 1000000"))
}

pub(super) fn resolve(target: &str) -> Result<SocketAddr, String> {
    target
        .to_socket_addrs()
        .map_err(|e| format!("{target}: {e}"))?
        .next()
        .ok_or_else(|| format!("{target}: no address"))
}

pub(super) fn guid() -> u64 {
    // Unique enough for a tool: time and process id mixed.
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64;
    (t ^ (u64::from(std::process::id()) << 32)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

pub(super) fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

pub(super) fn emit(
    out: &mut impl Write,
    json: bool,
    record: &impl Serialize,
    line: &str,
) -> io::Result<()> {
    if json {
        serde_json::to_writer(&mut *out, record)?;
        out.write_all(b"\n")?;
    } else {
        writeln!(out, "{line}")?;
    }
    out.flush()
}

#[derive(Serialize)]
struct PongJson<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    target: String,
    seq: u32,
    rtt_ms: f64,
    server_guid: String,
    payload: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    motd: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
}

pub fn run_ping(a: &PingArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let target = match resolve(&a.target) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("raknet-dissect: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let me = guid();
    let mut answered = 0;
    for seq in 0..a.count {
        if seq > 0 {
            std::thread::sleep(Duration::from_secs(1));
        }
        match peer::ping(target, me, a.timeout.max(Duration::from_millis(1))) {
            Ok(Some(p)) => {
                answered += 1;
                let motd = Motd::parse(&p.payload);
                let text = std::str::from_utf8(&p.payload).ok().filter(|t| {
                    motd.is_none() && !t.is_empty() && t.chars().all(|c| !c.is_control())
                });
                let mut line = format!(
                    "pong from {target}: seq {seq}, rtt {:.3} ms, server guid {:#018x}, {} bytes of payload",
                    ms(p.rtt),
                    p.server_guid,
                    p.payload.len()
                );
                if let Some(m) = &motd {
                    for (name, value) in &m.fields {
                        line.push_str(&format!("\n  {name}: {value}"));
                    }
                } else if let Some(t) = text {
                    line.push_str(&format!(": {t:?}"));
                } else if !p.payload.is_empty() {
                    line.push_str(&format!(": {}", hex(&p.payload)));
                }
                let record = PongJson {
                    kind: "pong",
                    target: target.to_string(),
                    seq,
                    rtt_ms: ms(p.rtt),
                    server_guid: guid_hex(p.server_guid),
                    payload: hex(&p.payload),
                    motd: motd.map(|m| {
                        m.fields
                            .into_iter()
                            .map(|(k, v)| (k.to_string(), serde_json::Value::String(v)))
                            .collect()
                    }),
                    text,
                };
                emit(out, a.json, &record, &line)?;
            }
            Ok(None) => {
                if !a.json {
                    writeln!(
                        out,
                        "no pong from {target}: seq {seq}, {} s",
                        a.timeout.as_secs_f64()
                    )?;
                    out.flush()?;
                }
            }
            Err(e) => {
                out.flush()?;
                eprintln!("raknet-dissect: ping {target}: {e}");
                return Ok(EXIT_NO_CONNECTION);
            }
        }
    }
    if answered == 0 {
        eprintln!(
            "raknet-dissect: no pong from {target} to {} ping(s)",
            a.count
        );
        return Ok(EXIT_NO_CONNECTION);
    }
    Ok(EXIT_OK)
}

#[derive(Serialize)]
pub(super) struct ConnectedJson {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) peer: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) guid: Option<String>,
    pub(super) mtu: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) handshake_ms: Option<f64>,
}

impl ConnectedJson {
    /// The `connected` record of a client just connected.
    pub(super) fn of(client: &Client) -> Self {
        ConnectedJson {
            kind: "connected",
            peer: client.server().to_string(),
            guid: client.server_guid.map(guid_hex),
            mtu: client.connection().mtu(),
            handshake_ms: Some(ms(client.handshake_time)),
        }
    }
}

/// Connect to `target` as `connect` and `replay` do: each handshake step on
/// stderr when it is a terminal (not with `--json`), a failure in one line
/// naming the step. `Err` is the exit code.
pub(super) fn connect_client(
    target: SocketAddr,
    cfg: ClientConfig,
    recorder: Option<crate::peer::record::Recorder>,
    json: bool,
    out: &mut impl Write,
) -> io::Result<Result<Client, u8>> {
    let verbose = !json && io::stderr().is_terminal();
    match Client::connect_recorded(target, cfg, recorder, |t, e| {
        if verbose {
            eprintln!("{:>10.6} {}", t.as_secs_f64(), step_line(e));
        }
    }) {
        Ok(c) => Ok(Ok(c)),
        Err(e) => {
            out.flush()?;
            eprintln!(
                "raknet-dissect: cannot connect to {target}: {e} [{}]",
                e.step()
            );
            Ok(Err(EXIT_NO_CONNECTION))
        }
    }
}

/// A GUID in NDJSON: hex, as the capture records write it (an integer would
/// lose precision in tools that read numbers as doubles).
pub(super) fn guid_hex(g: u64) -> String {
    format!("{g:#018x}")
}

#[derive(Serialize)]
pub(super) struct PeerMessageJson {
    #[serde(rename = "type")]
    kind: &'static str,
    peer: String,
    dir: &'static str,
    ts: f64,
    id: Option<u8>,
    name: Option<String>,
    len: usize,
    reliability: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    channel: Option<u8>,
    data: String,
}

impl PeerMessageJson {
    pub(super) fn new(peer: SocketAddr, dir: &'static str, m: &Delivered) -> Self {
        let id = m.data.first().copied();
        PeerMessageJson {
            kind: "message",
            peer: peer.to_string(),
            dir,
            ts: m.ts.as_secs_f64(),
            id,
            name: id.map(|i| message_name(i).into_owned()),
            len: m.data.len(),
            reliability: m.reliability.name(),
            channel: m.channel,
            data: hex(&m.data),
        }
    }

    fn line(&self) -> String {
        let mut s = format!(
            "{:>10.6} {} {} {} {} bytes {}",
            self.ts,
            self.dir,
            self.peer,
            self.name.as_deref().unwrap_or("-"),
            self.len,
            self.reliability
        );
        if let Some(c) = self.channel {
            s.push_str(&format!(" ch {c}"));
        }
        let head = &self.data[..self.data.len().min(64)];
        s.push_str(&format!(" {head}"));
        if self.data.len() > 64 {
            s.push('…');
        }
        s
    }
}

#[derive(Serialize)]
struct ClosedJson {
    #[serde(rename = "type")]
    kind: &'static str,
    peer: String,
    reason: &'static str,
    messages_sent: u64,
    bytes_sent: u64,
    messages_received: u64,
    datagrams_sent: u64,
    datagrams_received: u64,
    resends: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    rtt_ms: Option<f64>,
    seconds: f64,
}

fn closed_record(
    peer: SocketAddr,
    reason: CloseReason,
    c: &crate::session::Connection,
    seconds: f64,
) -> ClosedJson {
    let s = c.stats();
    ClosedJson {
        kind: "closed",
        peer: peer.to_string(),
        reason: reason.as_str(),
        messages_sent: s.send.messages_queued,
        bytes_sent: s.send.bytes_queued,
        messages_received: s.messages_delivered,
        datagrams_sent: s.send.datagrams_sent,
        datagrams_received: s.datagrams_received,
        resends: s.send.resends_after_nack + s.send.resends_after_timeout,
        rtt_ms: c.rtt().map(ms),
        seconds,
    }
}

fn closed_line(r: &ClosedJson) -> String {
    format!(
        "closed {} ({}): sent {} messages ({} bytes) in {} datagrams, {} resends; received {} messages in {} datagrams; rtt {}; {:.3} s",
        r.peer,
        r.reason,
        r.messages_sent,
        r.bytes_sent,
        r.datagrams_sent,
        r.resends,
        r.messages_received,
        r.datagrams_received,
        r.rtt_ms.map_or("-".into(), |v| format!("{v:.3} ms")),
        r.seconds
    )
}

pub(super) fn step_line(e: &HandshakeEvent) -> String {
    match e {
        HandshakeEvent::Request1Sent { mtu } => {
            format!("open connection request 1 sent (MTU {mtu})")
        }
        HandshakeEvent::Reply1 { server_guid, mtu } => {
            format!("open connection reply 1: server guid {server_guid:#018x}, MTU {mtu}")
        }
        HandshakeEvent::Request2Sent { mtu } => {
            format!("open connection request 2 sent (MTU {mtu})")
        }
        HandshakeEvent::Reply2 { mtu } => format!("open connection reply 2: MTU {mtu}"),
        HandshakeEvent::ConnectionRequestSent => "connection request sent".into(),
        HandshakeEvent::Accepted => {
            "connection request accepted; new incoming connection sent".into()
        }
    }
}

/// One message to send, with its reliability and channel.
struct Outgoing {
    data: Vec<u8>,
    reliability: Reliability,
    channel: u8,
}

/// A standard-input line: `HEX`, or `RELIABILITY[/CHANNEL] HEX` to override
/// `--reliability` and `--channel` for that message.
fn parse_line(line: &str, a: &ConnectArgs) -> Result<Outgoing, String> {
    let (mut reliability, mut channel) = (a.reliability, a.channel);
    let hex_part = match line.split_once(char::is_whitespace) {
        Some((head, rest)) => {
            let (r, c) = head.split_once('/').unwrap_or((head, ""));
            reliability = parse_reliability(r)?;
            if !c.is_empty() {
                channel = c
                    .parse::<u8>()
                    .ok()
                    .filter(|c| *c < 32)
                    .ok_or_else(|| format!("{c:?} is not a channel (0 to 31)"))?;
            }
            rest
        }
        None => line,
    };
    Ok(Outgoing {
        data: parse_hex(hex_part)?,
        reliability,
        channel,
    })
}

/// Messages to send: `--send` values, `-` for standard input lines.
fn messages(a: &ConnectArgs) -> Result<Vec<Outgoing>, String> {
    let mut v = Vec::new();
    for s in &a.send {
        if s == "-" {
            for (n, line) in io::stdin().lock().lines().enumerate() {
                let line = line.map_err(|e| format!("standard input: {e}"))?;
                if !line.trim().is_empty() {
                    v.push(
                        parse_line(line.trim(), a)
                            .map_err(|e| format!("standard input line {}: {e}", n + 1))?,
                    );
                }
            }
        } else {
            v.push(Outgoing {
                data: parse_hex(s)?,
                reliability: a.reliability,
                channel: a.channel,
            });
        }
    }
    if v.iter().any(|m| m.data.is_empty()) {
        return Err("an empty message cannot be sent".into());
    }
    Ok(v)
}

/// Queue at most this much ahead of the wire in a bulk send.
const QUEUE_AHEAD: usize = 4 << 20;

/// Step `client` until `until` (a failure is said on stderr and ends the
/// pumping), then hand each event to `on_event`. `Some` once the connection
/// has closed, or the step failed; `None` while it is up.
pub(super) fn pump(
    client: &mut Client,
    until: Duration,
    on_event: &mut dyn FnMut(Event) -> io::Result<()>,
) -> io::Result<Option<Pumped>> {
    if let Err(e) = client.step(until) {
        eprintln!("raknet-dissect: {}: {e}", client.server());
        return Ok(Some(Pumped::Failed));
    }
    while let Some(e) = client.poll_event() {
        match e {
            Event::Closed(r) => return Ok(Some(Pumped::Closed(r))),
            e => on_event(e)?,
        }
    }
    Ok(None)
}

/// How [`pump`] ended.
pub(super) enum Pumped {
    Closed(CloseReason),
    /// A socket error (said on stderr).
    Failed,
}

/// [`pump`] until `until` or the end of the connection; the close reason
/// when it closed.
pub(super) fn pump_until(
    client: &mut Client,
    until: Duration,
    on_event: &mut dyn FnMut(Event) -> io::Result<()>,
) -> io::Result<Option<CloseReason>> {
    while client.now() < until {
        match pump(client, until, on_event)? {
            None => {}
            Some(Pumped::Closed(r)) => return Ok(Some(r)),
            Some(Pumped::Failed) => break,
        }
    }
    Ok(None)
}

pub fn run_connect(a: &ConnectArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let target = match resolve(&a.target) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("raknet-dissect: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let msgs = match messages(a) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("raknet-dissect: --send: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let mut cfg = ClientConfig {
        guid: guid(),
        protocol: a.dialect.protocol(),
        address_count: a.dialect.addresses(),
        ..ClientConfig::default()
    };
    if let Some(m) = a.mtu {
        let mut mtus: Vec<u16> = MTU_PROBES.iter().copied().filter(|&p| p < m).collect();
        mtus.insert(0, m.clamp(400, 1492));
        cfg.mtus = mtus;
    }
    let mut client = match connect_client(target, cfg, None, a.json, out)? {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let connected = ConnectedJson::of(&client);
    emit(
        out,
        a.json,
        &connected,
        &format!(
            "connected to {target}: server guid {}, MTU {}, handshake {:.3} ms",
            client
                .server_guid
                .map_or("-".into(), |g| format!("{g:#018x}")),
            connected.mtu,
            ms(client.handshake_time)
        ),
    )?;
    let start = client.now();
    let mut closed: Option<CloseReason> = None;
    let mut print = |e: Event| -> io::Result<()> {
        if let Event::Message(m) = e {
            let r = PeerMessageJson::new(target, "s2c", &m);
            if a.json {
                serde_json::to_writer(&mut *out, &r)?;
                out.write_all(b"\n")?;
            } else {
                writeln!(out, "{}", r.line())?;
            }
            out.flush()?;
        }
        Ok(())
    };
    // Send, keeping the queue bounded, then wait for every ACK.
    let total = msgs.len() as u64 * a.repeat;
    let mut next = 0u64;
    let mut failed = false;
    while closed.is_none() && !failed && (next < total || !client.connection().is_idle()) {
        while next < total && client.connection().queued_bytes() < QUEUE_AHEAD {
            let m = &msgs[(next % msgs.len() as u64) as usize];
            client.send(&m.data, m.reliability, m.channel, Some(next as u32));
            next += 1;
        }
        let until = client.now() + Duration::from_millis(50);
        match pump(&mut client, until, &mut print)? {
            None => {}
            Some(Pumped::Closed(r)) => closed = Some(r),
            Some(Pumped::Failed) => failed = true,
        }
    }
    if closed.is_none() && !failed {
        let until = client.now() + a.wait;
        closed = pump_until(&mut client, until, &mut print)?;
    }
    // Closing also sends the last ACK when the server closed first (of its
    // disconnection notification, which it waits for).
    let reason = match (client.close(), closed) {
        (_, Some(r)) => r,
        (Ok(r), None) => r,
        (Err(PeerError::PortUnreachable(_)), None) => CloseReason::TimedOut,
        (Err(e), None) => return Err(e.into()),
    };
    let seconds = (client.now() - start).as_secs_f64();
    let r = closed_record(target, reason, client.connection(), seconds);
    let line = closed_line(&r);
    emit(out, a.json, &r, &line)?;
    Ok(match reason {
        CloseReason::TimedOut => EXIT_NO_CONNECTION,
        _ => EXIT_OK,
    })
}

#[derive(Serialize)]
struct ListeningJson {
    #[serde(rename = "type")]
    kind: &'static str,
    address: String,
    guid: String,
    protocol: u8,
}

fn minecraft_pong(text: &str, guid: u64, port: u16, max_clients: usize) -> Vec<u8> {
    let values = [
        "MCPE".to_string(),
        text.replace(';', "\\;"),
        "800".into(),
        "1.21.80".into(),
        "0".into(),
        max_clients.to_string(),
        guid.to_string(),
        "raknet-dissect".into(),
        "Survival".into(),
        "1".into(),
        port.to_string(),
        port.to_string(),
    ];
    let motd = Motd {
        fields: crate::wire::motd::MOTD_FIELDS
            .iter()
            .copied()
            .zip(values)
            .collect(),
    };
    let mut out = Vec::new();
    motd.emit(&mut out);
    out
}

pub fn run_serve(a: &ServeArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let listen = match resolve(&a.listen) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("raknet-dissect: --listen {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let me = guid();
    let session = match &a.replay {
        Some(path) => match super::replay::load_session(path, a.flow, &[], out)? {
            Ok(s) => Some(s),
            Err(code) => return Ok(code),
        },
        None => None,
    };
    let mut cfg = ServerConfig {
        guid: me,
        protocol: a.dialect.protocol(),
        accept_protocols: a.dialect.accepted(),
        max_clients: a.max_clients,
        max_mtu: a.mtu.clamp(576, 1492),
        address_count: a.dialect.addresses(),
        ..ServerConfig::default()
    };
    // The captured server's protocol, unless told otherwise.
    if let (Some(s), None) = (&session, a.dialect.protocol) {
        if let Some(p) = s.protocol {
            cfg.protocol = p;
            cfg.accept_protocols = vec![p];
            if a.dialect.addresses.is_none() {
                cfg.address_count = if p == PROTOCOL_ORIGINAL { 10 } else { 20 };
            }
        }
    }
    let mut server = match Server::bind(listen, cfg.clone()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("raknet-dissect: cannot listen on {listen}: {e}");
            return Ok(super::EXIT_ERROR);
        }
    };
    let bound = server.local_addr()?;
    cfg.pong = match (&a.motd, &a.pong_hex) {
        (Some(text), _) => minecraft_pong(text, me, bound.port(), a.max_clients),
        (None, Some(h)) => match parse_hex(h) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("raknet-dissect: --pong-hex: {e}");
                return Ok(EXIT_USAGE);
            }
        },
        (None, None) => session
            .as_ref()
            .and_then(|s| s.pong.clone())
            .unwrap_or_else(|| b"raknet-dissect".to_vec()),
    };
    server.set_pong(cfg.pong.clone());
    let r = ListeningJson {
        kind: "listening",
        address: bound.to_string(),
        guid: guid_hex(me),
        protocol: cfg.protocol,
    };
    emit(out, a.json, &r, &format!("listening {bound}"))?;
    // With --replay: each connected client's position in the captured
    // server messages, and when its connection started.
    let mut playing: Vec<(SocketAddr, Duration, usize)> = Vec::new();
    let base = session.as_ref().map_or(Duration::ZERO, |s| {
        s.connected_ts
            .or(s.s2c.first().map(|m| m.ts))
            .unwrap_or(Duration::ZERO)
    });
    loop {
        let mut until = server.now() + Duration::from_millis(200);
        if let Some(s) = &session {
            let now = server.now();
            for (peer, start, next) in playing.iter_mut() {
                while let Some(m) = s.s2c.get(*next) {
                    let due = if a.asap {
                        *start
                    } else {
                        *start + m.ts.saturating_sub(base)
                    };
                    if due > now {
                        until = until.min(due);
                        break;
                    }
                    server.send(*peer, &m.data, m.reliability, m.channel);
                    *next += 1;
                }
            }
            playing.retain(|(_, _, next)| *next < s.s2c.len());
        }
        server.step(until)?;
        let mut done = false;
        while let Some((peer, e)) = server.poll_event() {
            match e {
                Event::Connected => {
                    let c = server.listener().connection(peer);
                    let r = ConnectedJson {
                        kind: "connected",
                        peer: peer.to_string(),
                        guid: c.and_then(|c| c.peer_guid).map(guid_hex),
                        mtu: c.map_or(0, |c| c.mtu()),
                        handshake_ms: None,
                    };
                    emit(out, a.json, &r, &format!("connected {peer}: MTU {}", r.mtu))?;
                    if session.as_ref().is_some_and(|s| !s.s2c.is_empty()) {
                        playing.push((peer, server.now(), 0));
                    }
                }
                Event::Message(m) => {
                    let r = PeerMessageJson::new(peer, "c2s", &m);
                    let line = r.line();
                    emit(out, a.json, &r, &line)?;
                    if a.echo {
                        server.send(peer, &m.data, m.reliability, m.channel.unwrap_or(0));
                    }
                }
                Event::Closed(reason) => {
                    let l = server.listener();
                    if let Some(c) = l.connection(peer).or_else(|| l.closed_connection(peer)) {
                        let seconds = server.now().saturating_sub(c.created()).as_secs_f64();
                        let r = closed_record(peer, reason, c, seconds);
                        let line = closed_line(&r);
                        emit(out, a.json, &r, &line)?;
                    }
                    done |= a.once;
                }
                _ => {}
            }
        }
        if done {
            // Let the last ACKs go out.
            let until = server.now() + Duration::from_millis(50);
            while server.now() < until {
                server.step(until)?;
            }
            return Ok(EXIT_OK);
        }
    }
}

#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// The server, HOST:PORT (IPv6 as [ADDR]:PORT).
    #[arg(value_name = "HOST:PORT")]
    pub target: String,
    /// Largest MTU to probe with.
    #[arg(long, value_name = "M")]
    pub mtu: Option<u16>,
    #[command(flatten)]
    pub dialect: DialectArgs,
    /// NDJSON: `step` records as they happen, then one `probe` record.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct ProbeStepJson {
    #[serde(rename = "type")]
    kind: &'static str,
    t: f64,
    step: &'static str,
    detail: String,
}

#[derive(Serialize)]
struct ProbeJson {
    #[serde(rename = "type")]
    kind: &'static str,
    target: String,
    outcome: &'static str,
    diagnosis: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    mtu: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_guid: Option<String>,
    seconds: f64,
}

fn probe_step_name(e: &HandshakeEvent) -> &'static str {
    match e {
        HandshakeEvent::Request1Sent { .. } => "open_connection_request_1",
        HandshakeEvent::Reply1 { .. } => "open_connection_reply_1",
        HandshakeEvent::Request2Sent { .. } => "open_connection_request_2",
        HandshakeEvent::Reply2 { .. } => "open_connection_reply_2",
        HandshakeEvent::ConnectionRequestSent => "connection_request",
        HandshakeEvent::Accepted => "connection_request_accepted",
    }
}

/// `probe`: the handshake steps performed live, one line each as it
/// happens, then the outcome and a diagnosis, in the words of `handshake`.
pub fn run_probe(a: &ProbeArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let target = match resolve(&a.target) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("raknet-dissect: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let started = std::time::Instant::now();
    let step = |out: &mut dyn Write, t: Duration, name: &'static str, detail: String| {
        let r = ProbeStepJson {
            kind: "step",
            t: t.as_secs_f64(),
            step: name,
            detail,
        };
        let line = format!("{:>+11.6}  {:<30} {}", r.t, r.step, r.detail);
        let mut o = out;
        emit(&mut o, a.json, &r, &line)
    };
    let me = guid();
    // 1. An unconnected ping.
    let ping = peer::ping(target, me, Duration::from_secs(1));
    match &ping {
        Ok(Some(p)) => step(
            out,
            started.elapsed(),
            "unconnected_pong",
            format!(
                "rtt {:.3} ms, server guid {:#018x}, {} bytes of payload",
                ms(p.rtt),
                p.server_guid,
                p.payload.len()
            ),
        )?,
        Ok(None) => step(
            out,
            started.elapsed(),
            "unconnected_ping",
            "no pong within 1 s".into(),
        )?,
        Err(e) => step(out, started.elapsed(), "unconnected_ping", e.to_string())?,
    }
    // 2. The handshake, step by step.
    let mut cfg = ClientConfig {
        guid: me,
        protocol: a.dialect.protocol(),
        address_count: a.dialect.addresses(),
        ..ClientConfig::default()
    };
    if let Some(m) = a.mtu {
        let mut mtus: Vec<u16> = MTU_PROBES.iter().copied().filter(|&p| p < m).collect();
        mtus.insert(0, m.clamp(400, 1492));
        cfg.mtus = mtus;
    }
    let offset = started.elapsed();
    let mut io_error = None;
    let result = Client::connect(target, cfg, |t, e| {
        if let Err(err) = step(out, offset + t, probe_step_name(e), step_line(e)) {
            io_error.get_or_insert(err);
        }
    });
    if let Some(e) = io_error {
        return Err(e.into());
    }
    let (outcome, diagnosis, mtu, server_guid, code) = match result {
        Ok(mut c) => {
            let mtu = c.connection().mtu();
            let guid = c.server_guid;
            let diagnosis = format!("connected in {:.3} ms, MTU {mtu}", ms(c.handshake_time));
            let reason = c.close().map(CloseReason::as_str).unwrap_or("closed");
            step(out, started.elapsed(), "disconnected", reason.into())?;
            ("connected", diagnosis, Some(mtu), guid, EXIT_OK)
        }
        Err(e) => {
            let no_pong = matches!(ping, Ok(None));
            let mut d = e.to_string();
            if no_pong
                && matches!(
                    e,
                    PeerError::Handshake(crate::session::HandshakeError::Request1Unanswered { .. })
                )
            {
                d.push_str("; no pong either: nothing answers there, or a firewall drops UDP");
            }
            (e.step(), d, None, None, EXIT_NO_CONNECTION)
        }
    };
    let r = ProbeJson {
        kind: "probe",
        target: target.to_string(),
        outcome,
        diagnosis,
        mtu,
        server_guid: server_guid.map(guid_hex),
        seconds: started.elapsed().as_secs_f64(),
    };
    let line = format!("outcome: {} ({})", r.outcome, r.diagnosis);
    emit(out, a.json, &r, &line)?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_messages_and_seconds_never_panic_on_odd_input() {
        assert_eq!(parse_hex("86 aa:BB"), Ok(vec![0x86, 0xaa, 0xbb]));
        assert!(parse_hex("8").unwrap_err().contains("odd number"));
        // A multi-byte character between digits is an error, not a panic.
        for bad in ["aéa", "éé", "zz", "a\u{1F600}b"] {
            assert!(parse_hex(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_seconds("0.5"), Ok(Duration::from_millis(500)));
        for bad in ["inf", "NaN", "-1", "1e300", "x"] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_reliability("reliable-ordered"), Ok(Reliability(3)));
        assert_eq!(parse_reliability("7"), Ok(Reliability(7)));
        assert!(parse_reliability("8").is_err());
    }
}
