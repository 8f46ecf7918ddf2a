//! The live commands as library calls: [`ping`], [`connect`], [`serve`] and
//! [`probe`] drive a [`Client`] or a [`Server`] and say what happens as
//! [`PeerRecord`]s to a [`Report`]; the caller chooses how to print them.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::{Client, PeerError, Server};
use crate::output::json::motd_object;
use crate::output::peer::{
    guid_hex, ms, AppCounts, ClosedJson, ConnectedJson, FailedJson, ListeningJson, NoPongJson,
    PeerMessageJson, PeerRecord, PongJson, ProbeJson, ProbeStepJson,
};
use crate::session::handshake::{HandshakeEvent, MTU_PROBES, PROTOCOL_ORIGINAL};
use crate::session::{ClientConfig, CloseReason, Event};
use crate::wire::{Motd, Reliability};

/// The port a target without one gets: Minecraft Bedrock's.
pub const DEFAULT_PORT: u16 = 19132;

/// Queue at most this much ahead of the wire in a bulk send.
pub const QUEUE_AHEAD: usize = 4 << 20;

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
}

/// `HOST:PORT`, `[V6]:PORT`, or a host alone (port [`DEFAULT_PORT`]).
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

/// A GUID for a new peer: time and process id mixed (unique enough for a tool).
pub fn new_guid() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64;
    (t ^ (u64::from(std::process::id()) << 32)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// The MTUs a client probes when the largest is `first`: it, then the
/// standard ones below it.
pub fn mtus_from(first: u16) -> Vec<u16> {
    let first = first.clamp(400, 1492);
    let mut mtus: Vec<u16> = MTU_PROBES.iter().copied().filter(|&p| p < first).collect();
    mtus.insert(0, first);
    mtus
}

/// `ping`: `count` unconnected pings, one a second.
pub fn ping(
    target: SocketAddr,
    count: u32,
    timeout: Duration,
    report: &mut dyn Report,
) -> io::Result<Outcome> {
    let me = new_guid();
    let mut answered = 0;
    for seq in 0..count {
        if seq > 0 {
            std::thread::sleep(Duration::from_secs(1));
        }
        match super::ping(target, me, timeout.max(Duration::from_millis(1))) {
            Ok(Some(p)) => {
                answered += 1;
                let motd = Motd::parse(&p.payload);
                let text = std::str::from_utf8(&p.payload)
                    .ok()
                    .filter(|t| {
                        motd.is_none() && !t.is_empty() && t.chars().all(|c| !c.is_control())
                    })
                    .map(str::to_owned);
                report.record(PeerRecord::Pong(PongJson {
                    kind: "pong",
                    target: target.to_string(),
                    seq,
                    rtt_ms: ms(p.rtt),
                    server_guid: guid_hex(p.server_guid),
                    payload: crate::wire::cursor::hex(&p.payload),
                    motd: motd.map(motd_object),
                    text,
                }))?;
            }
            Ok(None) => report.record(PeerRecord::NoPong(NoPongJson {
                kind: "no_pong",
                target: target.to_string(),
                seq,
                timeout_s: timeout.as_secs_f64(),
            }))?,
            Err(e) => {
                report.record(failed(target, &e))?;
                return Ok(Outcome::NoConnection);
            }
        }
    }
    Ok(if answered == 0 {
        report.warn(&format!(
            "no pong from {target} to {count} {}",
            crate::output::peer::plural(count as usize, "ping", "pings")
        ));
        Outcome::NoConnection
    } else {
        Outcome::Done
    })
}

fn failed(target: SocketAddr, e: &PeerError) -> PeerRecord {
    PeerRecord::Failed(FailedJson {
        kind: "failed",
        target: target.to_string(),
        step: e.step(),
        error: e.to_string(),
    })
}

/// Connect to `target`, each handshake step to the report; a failure is a
/// `failed` record and `Err(Outcome::NoConnection)`.
pub fn connect_client(
    target: SocketAddr,
    cfg: ClientConfig,
    recorder: Option<super::record::Recorder>,
    report: &mut dyn Report,
) -> io::Result<Result<Client, Outcome>> {
    match Client::connect_recorded(target, cfg, recorder, |t, e| report.handshake_step(t, e)) {
        Ok(c) => Ok(Ok(c)),
        Err(e) => {
            report.record(failed(target, &e))?;
            Ok(Err(Outcome::NoConnection))
        }
    }
}

/// The `connected` record of a client just connected.
pub fn connected_record(client: &Client, text: Option<String>) -> ConnectedJson {
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
pub fn pump(
    client: &mut Client,
    until: Duration,
    report: &mut dyn Report,
    on_event: &mut dyn FnMut(Event, &mut dyn Report) -> io::Result<()>,
) -> io::Result<Option<Pumped>> {
    if let Err(e) = client.step(until) {
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

/// How [`pump`] ended.
pub enum Pumped {
    Closed(CloseReason),
    /// A socket error (warned of).
    Failed,
}

/// [`pump`] until `until` or the end of the connection; the close reason
/// when it closed.
pub fn pump_until(
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
    pub data: Vec<u8>,
    pub reliability: Reliability,
    pub channel: u8,
}

/// What `connect` does once connected.
#[derive(Debug, Clone)]
pub struct ConnectPlan {
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
    pub messages: Vec<(Duration, Outgoing)>,
    pub base: Duration,
    pub asap: bool,
}

/// What `serve` does.
#[derive(Debug, Clone, Default)]
pub struct ServePlan {
    /// Send every message received back.
    pub echo: bool,
    /// Return when the first client's connection ends.
    pub once: bool,
    pub script: Option<ServerScript>,
}

/// A Minecraft pong (MOTD) carrying `text`.
pub fn minecraft_pong(text: &str, guid: u64, port: u16, max_clients: usize) -> Vec<u8> {
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

/// `serve`: a server on `server` (bound; its pong set), each connection,
/// message and close a record; runs until `plan.once` ends it.
pub fn serve(
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
pub fn addresses_for(protocol: u8) -> usize {
    if protocol == PROTOCOL_ORIGINAL {
        10
    } else {
        20
    }
}

#[cfg(test)]
mod tests {
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
