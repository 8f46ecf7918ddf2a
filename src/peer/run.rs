//! The live commands as library calls: [`ping`], [`connect`] and [`probe`]
//! drive a client, `serve` (through [`crate::replay::run::serve`]) a server;
//! each says what happens as [`PeerRecord`]s to a [`Report`], and the caller
//! chooses how to print them.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::{Client, PeerError, Server};
use crate::records::peer::{
    guid_hex, ms, AppCounts, Asked, ClosedJson, ConnectedJson, FailedJson, JoinStatusJson,
    ListeningJson, NoJoinStatusJson, NoPongJson, PeerMessageJson, PeerRecord, PongJson, ProbeJson,
    ProbeStepJson, TransportsJson,
};
use crate::session::handshake::{
    HandshakeEvent, MTU_PROBES, PROTOCOL_MINECRAFT, PROTOCOL_ORIGINAL,
};
use crate::session::{ClientConfig, CloseReason, Event, ServerConfig};
use crate::wire::cursor::parse_hex;
use crate::wire::datagram::ORDERING_CHANNELS;
use crate::wire::{Motd, Reliability};

/// The port a target without one gets: Minecraft Bedrock's.
pub(crate) const DEFAULT_PORT: u16 = 19132;

/// Queue at most this much ahead of the wire in a bulk send.
pub(crate) const QUEUE_AHEAD: usize = 4 << 20;

/// Where a live command says what happens.
pub trait Report {
    /// A record: print it, as a line or as NDJSON.
    fn record(&mut self, r: PeerRecord) -> io::Result<()>;
    /// A handshake step of a client, as it happens.
    fn handshake_step(&mut self, _t: Duration, _e: &HandshakeEvent) {}
    /// Something gone wrong that ends the command's work (a socket error).
    fn warn(&mut self, _what: &str) {}
}

/// How a live command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It did what was asked.
    Done,
    /// No pong, a refused or unanswered handshake, nothing listening, a
    /// peer that timed out.
    NoConnection,
    /// Connected, but the Bedrock game login did not reach the spawn:
    /// refused (PlayStatus), disconnected, or never answered.
    LoginFailed,
    /// A replay the server cut short: it disconnected or went silent
    /// before everything was sent.
    ReplayCut,
}

/// `HOST:PORT`, `[V6]:PORT`, or a host alone (port 19132, Minecraft
/// Bedrock's).
pub fn resolve(target: &str) -> Result<SocketAddr, String> {
    let with_port = |t: &str| -> std::io::Result<Vec<SocketAddr>> {
        if let Ok(a) = t.parse::<SocketAddr>() {
            return Ok(vec![a]);
        }
        if let Ok(ip) = t.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
            return Ok(vec![SocketAddr::new(ip, DEFAULT_PORT)]);
        }
        match t.to_socket_addrs() {
            Ok(a) => Ok(a.collect()),
            // No port: a host name alone.
            Err(_) if !t.contains(':') => Ok((t, DEFAULT_PORT).to_socket_addrs()?.collect()),
            Err(e) => Err(e),
        }
    };
    with_port(target)
        .map_err(|e| format!("{target}: {e}"))?
        .into_iter()
        .next()
        .ok_or_else(|| format!("{target}: no address"))
}

/// An address with the transport it is reached over: `raknet://HOST:PORT`,
/// `nethernet://HOST:PORT`, or the address alone (`auto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// The transport named, or `auto`.
    pub transport: Transport,
    /// The address.
    pub addr: SocketAddr,
}

/// An [`Endpoint`] from its text; the address as [`resolve`] reads it.
pub fn resolve_endpoint(target: &str) -> Result<Endpoint, String> {
    let (transport, rest) = match target.split_once("://") {
        Some((scheme, rest)) => match scheme.to_ascii_lowercase().as_str() {
            "raknet" => (Transport::RakNet, rest),
            "nethernet" => (Transport::NetherNet, rest),
            other => {
                return Err(format!(
                    "{target}: {other}://: the transports are raknet:// and nethernet://"
                ))
            }
        },
        None => (Transport::Auto, target),
    };
    let addr = resolve(rest.trim_end_matches('/'))?;
    Ok(Endpoint { transport, addr })
}

/// A GUID for a new peer, from the operating system's randomness.
pub(crate) fn new_guid() -> Result<u64, crate::random::RandomError> {
    crate::random::guid()
}

/// The MTUs a client probes when the largest is `first`: it, then the
/// standard ones below it.
pub(crate) fn mtus_from(first: u16) -> Vec<u16> {
    let first = first.clamp(400, 1492);
    let mut mtus: Vec<u16> = MTU_PROBES.iter().copied().filter(|&p| p < first).collect();
    mtus.insert(0, first);
    mtus
}

/// Which transport a client uses, or tries (`--transport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Transport {
    /// NetherNet and RakNet both, as the game's newer clients do.
    #[default]
    Auto,
    /// RakNet only.
    #[value(name = "raknet")]
    RakNet,
    /// NetherNet only.
    #[value(name = "nethernet")]
    NetherNet,
}

impl Transport {
    /// The transport `--transport` gives (`given`), or NetherNet with
    /// `--nethernet`, else `default`.
    pub fn chosen(given: Option<Transport>, nethernet: bool, default: Transport) -> Transport {
        match (given, nethernet) {
            (Some(t), _) => t,
            (None, true) => Transport::NetherNet,
            (None, false) => default,
        }
    }
}

/// `ping`: `count` rounds, one a second, each an unconnected RakNet ping
/// and a NetherNet `GET /v1/join` to the same port (at once, each waiting
/// up to `timeout`), or one of them. A transport whose port turns out
/// closed (ICMP port unreachable; TCP refused) is not tried again. Trying
/// both ends with a `transports` record of which answered.
pub fn ping(
    target: SocketAddr,
    count: u32,
    timeout: Duration,
    transport: Transport,
    report: &mut dyn Report,
) -> io::Result<Outcome> {
    let me = new_guid()?;
    let mut raknet = (transport != Transport::NetherNet).then_some(0u32);
    let mut nethernet = (transport != Transport::RakNet).then_some(0u32);
    let mut tried = (0, 0);
    for seq in 0..count {
        if raknet.is_none() && nethernet.is_none() {
            break;
        }
        if seq > 0 {
            std::thread::sleep(Duration::from_secs(1));
        }
        let timeout = timeout.max(Duration::from_millis(1));
        let (pong, status) = std::thread::scope(|s| {
            let status = nethernet
                .is_some()
                .then(|| s.spawn(|| super::signaling::join_status(target, timeout)));
            let pong = raknet.is_some().then(|| super::ping(target, me, timeout));
            let status =
                status.map(|h| h.join().map_err(|_| io::Error::other("a thread panicked")));
            (pong, status)
        });
        if let Some(pong) = pong {
            tried.0 += 1;
            if !record_pong(target, seq, timeout, pong, report, raknet.as_mut())? {
                raknet = None;
            }
        }
        if let Some(status) = status {
            tried.1 += 1;
            if !record_status(target, seq, status?, report, nethernet.as_mut())? {
                nethernet = None;
            }
        }
    }
    let (r, n) = (raknet.unwrap_or(0), nethernet.unwrap_or(0));
    if transport == Transport::Auto {
        let answered = match (n > 0, r > 0) {
            (true, true) => "both",
            (true, false) => "nethernet",
            (false, true) => "raknet",
            (false, false) => "none",
        };
        report.record(PeerRecord::Transports(TransportsJson {
            kind: "transports",
            target: target.to_string(),
            raknet: r,
            nethernet: n,
            answered,
        }))?;
    }
    if r + n > 0 {
        return Ok(Outcome::Done);
    }
    let asked = |n: u32, one, many| {
        format!(
            "{n} {}",
            crate::records::peer::plural(n as usize, one, many)
        )
    };
    report.warn(&match transport {
        Transport::RakNet => format!(
            "no pong from {target} to {}",
            asked(tried.0, "ping", "pings")
        ),
        Transport::NetherNet => format!(
            "no NetherNet status from {target} to {}",
            asked(tried.1, "request", "requests")
        ),
        Transport::Auto => format!(
            "no answer from {target}: no pong to {}, no NetherNet status to {}",
            asked(tried.0, "ping", "pings"),
            asked(tried.1, "request", "requests")
        ),
    });
    Ok(Outcome::NoConnection)
}

/// A RakNet ping's record; false when its port is closed (a `failed`
/// record), so that it is not tried again.
fn record_pong(
    target: SocketAddr,
    seq: u32,
    timeout: Duration,
    pong: Result<Option<super::Pong>, super::PeerError>,
    report: &mut dyn Report,
    answered: Option<&mut u32>,
) -> io::Result<bool> {
    match pong {
        Ok(Some(p)) => {
            if let Some(a) = answered {
                *a += 1;
            }
            let motd = Motd::parse(&p.payload);
            let text = std::str::from_utf8(&p.payload)
                .ok()
                .filter(|t| motd.is_none() && !t.is_empty() && t.chars().all(|c| !c.is_control()))
                .map(str::to_owned);
            report.record(PeerRecord::Pong(PongJson {
                asked: Asked {
                    kind: "pong",
                    transport: "raknet",
                    target: target.to_string(),
                    seq,
                },
                rtt_ms: ms(p.rtt),
                server_guid: guid_hex(p.server_guid),
                payload: crate::wire::cursor::hex(&p.payload),
                motd: motd.map(crate::records::value::motd_object),
                text,
            }))?;
        }
        Ok(None) => report.record(PeerRecord::NoPong(NoPongJson {
            asked: Asked {
                kind: "no_pong",
                transport: "raknet",
                target: target.to_string(),
                seq,
            },
            timeout_s: timeout.as_secs_f64(),
        }))?,
        Err(e) => {
            report.record(failed(target, &e))?;
            return Ok(false);
        }
    }
    Ok(true)
}

/// A NetherNet status request's record; false when nothing listens on
/// its TCP port, so that it is not tried again.
fn record_status(
    target: SocketAddr,
    seq: u32,
    status: Result<super::signaling::Answer, super::signaling::SignalingError>,
    report: &mut dyn Report,
    answered: Option<&mut u32>,
) -> io::Result<bool> {
    let no = |status, step, error| {
        PeerRecord::NoJoinStatus(NoJoinStatusJson {
            asked: Asked {
                kind: "no_join_status",
                transport: "nethernet",
                target: target.to_string(),
                seq,
            },
            status,
            step,
            error,
        })
    };
    match status {
        Ok(a) if (200..300).contains(&a.status) => {
            if let Some(n) = answered {
                *n += 1;
            }
            let server = serde_json::from_slice::<serde_json::Value>(&a.body)
                .ok()
                .and_then(|v| match v {
                    serde_json::Value::Object(m) => Some(m),
                    _ => None,
                });
            let body = server
                .is_none()
                .then(|| String::from_utf8_lossy(&a.body).into_owned());
            report.record(PeerRecord::JoinStatus(JoinStatusJson {
                asked: Asked {
                    kind: "join_status",
                    transport: "nethernet",
                    target: target.to_string(),
                    seq,
                },
                rtt_ms: ms(a.rtt),
                status: a.status,
                content_type: a.content_type,
                server,
                body,
            }))?;
        }
        Ok(a) => {
            let error = format!("HTTP {} {}: no NetherNet there", a.status, a.reason);
            report.record(no(Some(a.status), "status", error))?;
        }
        Err(e) => {
            report.record(no(None, e.step(), e.to_string()))?;
            return Ok(!matches!(e, super::signaling::SignalingError::Refused(_)));
        }
    }
    Ok(true)
}

/// The `failed` record of a connection that could not be made.
pub(crate) fn failed(target: SocketAddr, e: &PeerError) -> PeerRecord {
    PeerRecord::Failed(FailedJson {
        kind: "failed",
        target: target.to_string(),
        step: e.step(),
        error: e.to_string(),
    })
}

/// Connect to `target`, each handshake step to the report; a failure is a
/// `failed` record and `Err(Outcome::NoConnection)`.
pub(crate) fn connect_client(
    target: SocketAddr,
    cfg: ClientConfig,
    recorder: Option<super::record::Recorder>,
    report: &mut dyn Report,
) -> io::Result<Result<Client, Outcome>> {
    match Client::connect_recorded(target, cfg, recorder, |t, e| report.handshake_step(t, e)) {
        Ok(mut c) => {
            recording_stopped(&mut c, report);
            Ok(Ok(c))
        }
        Err(e) => {
            report.record(failed(target, &e))?;
            Ok(Err(Outcome::NoConnection))
        }
    }
}

/// The `connected` record of a client just connected.
pub(crate) fn connected_record(client: &Client, text: Option<String>) -> ConnectedJson {
    ConnectedJson {
        kind: "connected",
        peer: client.server().to_string(),
        guid: client.server_guid.map(guid_hex),
        mtu: client.connection().mtu(),
        handshake_ms: Some(ms(client.handshake_time)),
        text,
    }
}

/// Step `client` until `until` (a failure is warned of and ends the
/// pumping), then hand each event to `on_event`. `Some` once the connection
/// has closed, or the step failed; `None` while it is up.
pub(crate) fn pump(
    client: &mut Client,
    until: Duration,
    report: &mut dyn Report,
    on_event: &mut dyn FnMut(Event, &mut dyn Report) -> io::Result<()>,
) -> io::Result<Option<Pumped>> {
    let stepped = client.step(until);
    recording_stopped(client, report);
    if let Err(e) = stepped {
        report.warn(&format!("{}: {e}", client.server()));
        return Ok(Some(Pumped::Failed));
    }
    while let Some(e) = client.poll_event() {
        match e {
            Event::Closed(r) => return Ok(Some(Pumped::Closed(r))),
            e => on_event(e, report)?,
        }
    }
    Ok(None)
}

/// A recording that stopped (a write error) warned of, once.
pub(crate) fn recording_stopped(client: &mut Client, report: &mut dyn Report) {
    if let Some(e) = client.recording_stopped() {
        report.warn(&format!("recording stopped: {e}"));
    }
}

/// How [`pump`] ended.
pub(crate) enum Pumped {
    Closed(CloseReason),
    /// A socket error (warned of).
    Failed,
}

/// [`pump`] until `until` or the end of the connection; the close reason
/// when it closed.
pub(crate) fn pump_until(
    client: &mut Client,
    until: Duration,
    report: &mut dyn Report,
    on_event: &mut dyn FnMut(Event, &mut dyn Report) -> io::Result<()>,
) -> io::Result<Option<CloseReason>> {
    while client.now() < until {
        match pump(client, until, report, on_event)? {
            None => {}
            Some(Pumped::Closed(r)) => return Ok(Some(r)),
            Some(Pumped::Failed) => break,
        }
    }
    Ok(None)
}

/// One message to send, with its reliability and channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub(crate) data: Vec<u8>,
    pub(crate) reliability: Reliability,
    pub(crate) channel: u8,
}

impl Outgoing {
    /// A line of `connect`'s standard input: `HEX`, or `RELIABILITY[/CHANNEL]
    /// HEX` to send that message otherwise than `reliability` on `channel`.
    pub(crate) fn parse_line(
        line: &str,
        reliability: Reliability,
        channel: u8,
    ) -> Result<Self, String> {
        let (mut reliability, mut channel) = (reliability, channel);
        let hex = match line.split_once(char::is_whitespace) {
            Some((head, rest)) => {
                let (r, c) = head.split_once('/').unwrap_or((head, ""));
                reliability = Reliability::parse(r)?;
                if !c.is_empty() {
                    channel = c
                        .parse::<u8>()
                        .ok()
                        .filter(|c| *c < ORDERING_CHANNELS)
                        .ok_or_else(|| format!("{c:?} is not a channel (0 to 31)"))?;
                }
                rest
            }
            None => line,
        };
        Ok(Outgoing {
            data: parse_hex(hex)?,
            reliability,
            channel,
        })
    }
}

/// The messages `connect --send` names: each value in hex, or `-` for the
/// lines of `stdin`, each `HEX` or `RELIABILITY[/CHANNEL] HEX`.
pub fn messages_to_send(
    send: &[String],
    reliability: Reliability,
    channel: u8,
    stdin: impl io::BufRead,
) -> Result<Vec<Outgoing>, String> {
    let mut v = Vec::new();
    let mut stdin = Some(stdin);
    for s in send {
        if s != "-" {
            v.push(Outgoing {
                data: parse_hex(s)?,
                reliability,
                channel,
            });
            continue;
        }
        for (n, line) in stdin.take().into_iter().flat_map(|i| i.lines()).enumerate() {
            let line = line.map_err(|e| format!("standard input: {e}"))?;
            if !line.trim().is_empty() {
                v.push(
                    Outgoing::parse_line(line.trim(), reliability, channel)
                        .map_err(|e| format!("standard input line {}: {e}", n + 1))?,
                );
            }
        }
    }
    if v.iter().any(|m| m.data.is_empty()) {
        return Err("an empty message cannot be sent".into());
    }
    Ok(v)
}

/// Which RakNet a live command speaks: the original's defaults (protocol
/// 6, 10 internal addresses) or Minecraft's (11, 20), and the user's
/// overrides of either.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dialect {
    /// Minecraft's defaults (protocol 11, 20 addresses), else the original's.
    pub minecraft: bool,
    /// The protocol byte (a Minecraft server accepts 9, 10 and 11 unless
    /// this is given).
    pub protocol: Option<u8>,
    /// Internal addresses in the connected handshake.
    pub addresses: Option<usize>,
}

/// `--dialect`: whose defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum DialectName {
    /// The original RakNet: protocol 6, 10 internal addresses.
    #[default]
    Original,
    /// Minecraft Bedrock: protocol 11, 20 internal addresses.
    Minecraft,
}

impl Dialect {
    /// `name`'s defaults, with the protocol byte and address count given.
    pub fn of(name: DialectName, protocol: Option<u8>, addresses: Option<usize>) -> Dialect {
        Dialect {
            minecraft: name == DialectName::Minecraft,
            protocol,
            addresses,
        }
    }

    /// The protocol byte sent.
    pub(crate) fn protocol(&self) -> u8 {
        let default = if self.minecraft {
            PROTOCOL_MINECRAFT
        } else {
            PROTOCOL_ORIGINAL
        };
        self.protocol.unwrap_or(default)
    }

    fn default_addresses(&self) -> usize {
        if self.minecraft {
            20
        } else {
            10
        }
    }

    /// A client configuration with a fresh GUID, probing from `mtu` down
    /// when given.
    pub fn client(&self, mtu: Option<u16>) -> Result<ClientConfig, crate::random::RandomError> {
        let mut cfg = ClientConfig {
            guid: new_guid()?,
            protocol: self.protocol(),
            address_count: self.addresses.unwrap_or(self.default_addresses()),
            ..ClientConfig::default()
        };
        if let Some(m) = mtu {
            cfg.mtus = mtus_from(m);
        }
        Ok(cfg)
    }

    /// A server configuration; `captured`: the protocol of a captured
    /// server played back, which it speaks unless a protocol was given.
    pub(crate) fn server(&self, captured: Option<u8>) -> ServerConfig {
        let (protocol, accept, addresses) = match (self.protocol, captured) {
            (None, Some(p)) => (p, vec![p], addresses_for(p)),
            (Some(p), _) => (p, vec![p], self.default_addresses()),
            (None, None) if self.minecraft => (
                PROTOCOL_MINECRAFT,
                vec![9, 10, PROTOCOL_MINECRAFT],
                self.default_addresses(),
            ),
            (None, None) => (PROTOCOL_ORIGINAL, vec![PROTOCOL_ORIGINAL], 10),
        };
        ServerConfig {
            protocol,
            accept_protocols: accept,
            address_count: self.addresses.unwrap_or(addresses),
            ..ServerConfig::default()
        }
    }
}

/// What `connect` does once connected.
#[derive(Debug, Clone)]
pub struct ConnectPlan {
    /// The messages to send, in order.
    pub messages: Vec<Outgoing>,
    /// Send the messages this many times over.
    pub repeat: u64,
    /// Keep receiving this long after everything sent was acknowledged.
    pub wait: Duration,
}

/// `connect`: connect, send the plan's messages (a bounded queue ahead of
/// the wire), wait for every ACK and then `wait`, close; every message from
/// the server is a `message` record.
pub fn connect(
    target: SocketAddr,
    cfg: ClientConfig,
    plan: &ConnectPlan,
    report: &mut dyn Report,
) -> anyhow::Result<Outcome> {
    let mut client = match connect_client(target, cfg, None, report)? {
        Ok(c) => c,
        Err(o) => return Ok(o),
    };
    report.record(PeerRecord::Connected(connected_record(&client, None)))?;
    let start = client.now();
    let mut app = AppCounts::default();
    let mut print = |e: Event, report: &mut dyn Report| -> io::Result<()> {
        if let Event::Message(m) = e {
            app.messages_received += 1;
            report.record(PeerRecord::Message(PeerMessageJson::new(target, "s2c", &m)))?;
        }
        Ok(())
    };
    let msgs = &plan.messages;
    let total = if msgs.is_empty() {
        0
    } else {
        msgs.len() as u64 * plan.repeat
    };
    let mut closed: Option<CloseReason> = None;
    let mut next = 0u64;
    let mut failed = false;
    while closed.is_none() && !failed && (next < total || !client.connection().is_idle()) {
        while next < total && client.connection().queued_bytes() < QUEUE_AHEAD {
            let m = &msgs[(next % msgs.len() as u64) as usize];
            client.send(&m.data, m.reliability, m.channel, Some(next as u32));
            app.messages_sent += 1;
            app.bytes_sent += m.data.len() as u64;
            next += 1;
        }
        let until = client.now() + Duration::from_millis(50);
        match pump(&mut client, until, report, &mut print)? {
            None => {}
            Some(Pumped::Closed(r)) => closed = Some(r),
            Some(Pumped::Failed) => failed = true,
        }
    }
    if closed.is_none() && !failed {
        let until = client.now() + plan.wait;
        closed = pump_until(&mut client, until, report, &mut print)?;
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
    let r = ClosedJson::new(target, reason, client.connection(), app, seconds);
    report.record(PeerRecord::Closed(r))?;
    Ok(match reason {
        CloseReason::TimedOut => Outcome::NoConnection,
        _ => Outcome::Done,
    })
}

/// Messages a server plays to every client from its connection on, at
/// their times after `base` (or at once with `asap`): `serve --replay`.
#[derive(Debug, Clone, Default)]
pub struct ServerScript {
    pub(crate) messages: Vec<(Duration, Outgoing)>,
    pub(crate) base: Duration,
    pub(crate) asap: bool,
}

/// What `serve` does.
#[derive(Debug, Clone, Default)]
pub struct ServePlan {
    /// Send every message received back.
    pub echo: bool,
    /// Return when the first client's connection ends.
    pub once: bool,
    /// `--replay`: messages played to every client.
    pub script: Option<ServerScript>,
}

/// A Minecraft pong (MOTD) carrying `text`.
pub(crate) fn minecraft_pong(text: &str, guid: u64, port: u16, max_clients: usize) -> Vec<u8> {
    motd_pong(text, (800, "1.21.80"), "Survival", guid, port, max_clients)
}

/// A Minecraft pong: `text`, the game protocol and version it names, its
/// game mode, the server's GUID and port, its player limit.
pub(crate) fn motd_pong(
    text: &str,
    (protocol, version): (u32, &str),
    mode: &str,
    guid: u64,
    port: u16,
    max_clients: usize,
) -> Vec<u8> {
    let values = [
        "MCPE".to_string(),
        text.replace(';', "\\;"),
        protocol.to_string(),
        version.to_string(),
        "0".into(),
        max_clients.to_string(),
        guid.to_string(),
        "raknet-dissect".into(),
        mode.to_string(),
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

/// `serve`: a server on `server` (bound; its pong set), each connection,
/// message and close a record; runs until `plan.once` ends it.
pub(crate) fn serve(
    server: &mut Server,
    plan: &ServePlan,
    report: &mut dyn Report,
) -> io::Result<Outcome> {
    let bound = server.local_addr()?;
    let l = server.listener();
    report.record(PeerRecord::Listening(ListeningJson {
        kind: "listening",
        address: bound.to_string(),
        guid: guid_hex(l.config().guid),
        protocol: l.config().protocol,
        transport: None,
    }))?;
    // Each connected client's position in the script, and when it connected.
    let mut playing: Vec<(SocketAddr, Duration, usize)> = Vec::new();
    let mut counts: Vec<(SocketAddr, AppCounts)> = Vec::new();
    loop {
        let mut until = server.now() + Duration::from_millis(200);
        if let Some(s) = &plan.script {
            let now = server.now();
            for (peer, start, next) in playing.iter_mut() {
                while let Some((ts, m)) = s.messages.get(*next) {
                    let due = if s.asap {
                        *start
                    } else {
                        *start + ts.saturating_sub(s.base)
                    };
                    if due > now {
                        until = until.min(due);
                        break;
                    }
                    server.send(*peer, &m.data, m.reliability, m.channel);
                    count(&mut counts, *peer, |c| {
                        c.messages_sent += 1;
                        c.bytes_sent += m.data.len() as u64;
                    });
                    *next += 1;
                }
            }
            playing.retain(|(_, _, next)| *next < s.messages.len());
        }
        server.step(until)?;
        let mut done = false;
        while let Some((peer, e)) = server.poll_event() {
            match e {
                Event::Connected => {
                    let c = server.listener().connection(peer);
                    report.record(PeerRecord::Connected(ConnectedJson {
                        kind: "connected",
                        peer: peer.to_string(),
                        guid: c.and_then(|c| c.peer_guid).map(guid_hex),
                        mtu: c.map_or(0, |c| c.mtu()),
                        handshake_ms: None,
                        text: None,
                    }))?;
                    if plan.script.as_ref().is_some_and(|s| !s.messages.is_empty()) {
                        playing.push((peer, server.now(), 0));
                    }
                }
                Event::Message(m) => {
                    count(&mut counts, peer, |c| c.messages_received += 1);
                    report.record(PeerRecord::Message(PeerMessageJson::new(peer, "c2s", &m)))?;
                    if plan.echo {
                        server.send(peer, &m.data, m.reliability, m.channel.unwrap_or(0));
                        count(&mut counts, peer, |c| {
                            c.messages_sent += 1;
                            c.bytes_sent += m.data.len() as u64;
                        });
                    }
                }
                Event::Closed(reason) => {
                    let app = counts
                        .iter()
                        .position(|(p, _)| *p == peer)
                        .map(|i| counts.swap_remove(i).1)
                        .unwrap_or_default();
                    let l = server.listener();
                    if let Some(c) = l.connection(peer).or_else(|| l.closed_connection(peer)) {
                        let seconds = server.now().saturating_sub(c.created()).as_secs_f64();
                        let r = ClosedJson::new(peer, reason, c, app, seconds);
                        report.record(PeerRecord::Closed(r))?;
                    }
                    done |= plan.once;
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
            return Ok(Outcome::Done);
        }
    }
}

/// Counts of `peer`'s connection (at most one entry per connected client).
fn count(
    counts: &mut Vec<(SocketAddr, AppCounts)>,
    peer: SocketAddr,
    f: impl FnOnce(&mut AppCounts),
) {
    match counts.iter_mut().find(|(p, _)| *p == peer) {
        Some((_, c)) => f(c),
        None => {
            let mut c = AppCounts::default();
            f(&mut c);
            counts.push((peer, c));
        }
    }
}

/// The words of a handshake step, for lines.
pub fn step_line(e: &HandshakeEvent) -> String {
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

/// `probe`: a ping, then the handshake performed step by step (a `step`
/// record each as it happens), then the outcome and a diagnosis in the
/// words of `handshake`.
pub fn probe(
    target: SocketAddr,
    cfg: ClientConfig,
    report: &mut dyn Report,
) -> io::Result<Outcome> {
    let started = Instant::now();
    let step = |report: &mut dyn Report, t: Duration, name: &'static str, detail: String| {
        report.record(PeerRecord::Step(ProbeStepJson {
            kind: "step",
            t: t.as_secs_f64(),
            step: name,
            detail,
        }))
    };
    // 1. An unconnected ping.
    let ping = super::ping(target, cfg.guid, Duration::from_secs(1));
    match &ping {
        Ok(Some(p)) => step(
            report,
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
            report,
            started.elapsed(),
            "unconnected_ping",
            "no pong within 1 s".into(),
        )?,
        Err(e) => step(report, started.elapsed(), "unconnected_ping", e.to_string())?,
    }
    // 2. The handshake, step by step.
    let offset = started.elapsed();
    let mut io_error = None;
    let result = Client::connect(target, cfg, |t, e| {
        if let Err(err) = step(report, offset + t, probe_step_name(e), step_line(e)) {
            io_error.get_or_insert(err);
        }
    });
    if let Some(e) = io_error {
        return Err(e);
    }
    let (outcome, diagnosis, mtu, server_guid, code) = match result {
        Ok(mut c) => {
            let mtu = c.connection().mtu();
            let guid = c.server_guid;
            let diagnosis = format!("connected in {:.3} ms, MTU {mtu}", ms(c.handshake_time));
            let reason = c.close().map(CloseReason::as_str).unwrap_or("closed");
            step(report, started.elapsed(), "disconnected", reason.into())?;
            ("connected", diagnosis, Some(mtu), guid, Outcome::Done)
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
            (e.step(), d, None, None, Outcome::NoConnection)
        }
    };
    report.record(PeerRecord::Probe(ProbeJson {
        kind: "probe",
        target: target.to_string(),
        outcome,
        diagnosis,
        mtu,
        server_guid: server_guid.map(guid_hex),
        seconds: started.elapsed().as_secs_f64(),
    }))?;
    Ok(code)
}

/// The address count of a protocol: 10 for the original's 6, else 20.
pub(crate) fn addresses_for(protocol: u8) -> usize {
    if protocol == PROTOCOL_ORIGINAL {
        10
    } else {
        20
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn dialects_and_their_overrides() {
        let original = Dialect::default();
        let mc = Dialect {
            minecraft: true,
            ..Dialect::default()
        };
        assert_eq!(
            (
                original.client(None).unwrap().protocol,
                original.client(None).unwrap().address_count
            ),
            (6, 10)
        );
        assert_eq!(
            (
                mc.client(None).unwrap().protocol,
                mc.client(None).unwrap().address_count
            ),
            (11, 20)
        );
        assert_eq!(mc.server(None).accept_protocols, [9, 10, 11]);
        assert_eq!(original.server(None).accept_protocols, [6]);
        // A captured server's protocol, unless one was given.
        let s = original.server(Some(10));
        assert_eq!(
            (s.protocol, s.accept_protocols, s.address_count),
            (10, vec![10], 20)
        );
        let given = Dialect {
            protocol: Some(9),
            addresses: Some(3),
            ..mc
        };
        let s = given.server(Some(10));
        assert_eq!(
            (s.protocol, s.accept_protocols, s.address_count),
            (9, vec![9], 3)
        );
        assert_eq!(given.client(Some(1200)).unwrap().mtus[0], 1200);
    }

    #[test]
    fn messages_to_send_from_values_and_standard_input() {
        let send = ["86 aa".to_string(), "-".to_string()];
        let stdin = "8601\n\nreliable-sequenced/5 86:02\n".as_bytes();
        let v = messages_to_send(&send, Reliability::RELIABLE_ORDERED, 0, stdin).unwrap();
        let got: Vec<_> = v
            .iter()
            .map(|m| (m.data.clone(), m.reliability, m.channel))
            .collect();
        assert_eq!(
            got,
            [
                (vec![0x86, 0xaa], Reliability::RELIABLE_ORDERED, 0),
                (vec![0x86, 0x01], Reliability::RELIABLE_ORDERED, 0),
                (vec![0x86, 0x02], Reliability::RELIABLE_SEQUENCED, 5)
            ]
        );
        let none: &[u8] = b"";
        for (bad, input) in [
            ("", none),
            ("-", b"reliable/32 86"),
            ("-", b"x 86"),
            ("-", b"zz"),
        ] {
            let r = messages_to_send(&[bad.to_string()], Reliability::RELIABLE, 0, input);
            assert!(r.is_err(), "{bad:?} {input:?}");
        }
    }

    use super::*;

    #[test]
    fn targets_without_a_port_get_19132() {
        assert_eq!(resolve("127.0.0.1"), Ok("127.0.0.1:19132".parse().unwrap()));
        assert_eq!(resolve("127.0.0.1:7"), Ok("127.0.0.1:7".parse().unwrap()));
        assert_eq!(resolve("[::1]"), Ok("[::1]:19132".parse().unwrap()));
        assert_eq!(resolve("::1"), Ok("[::1]:19132".parse().unwrap()));
        assert_eq!(resolve("[::1]:5"), Ok("[::1]:5".parse().unwrap()));
        assert_eq!(resolve("localhost").map(|a| a.port()), Ok(19132));
        assert!(resolve("127.0.0.1:x").is_err());
    }

    #[test]
    fn mtus_start_at_the_first_and_keep_the_smaller_standard_ones() {
        assert_eq!(mtus_from(1400), vec![1400, 1200, 576]);
        assert_eq!(mtus_from(9000), vec![1492, 1200, 576]);
        assert_eq!(mtus_from(1), vec![400]);
    }
}
