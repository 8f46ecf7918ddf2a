//! `replay FILE --target HOST:PORT`: the captured client's messages, sent to
//! a live server by a new client, and what came back compared with the
//! capture.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde::Serialize;

use super::peer::{
    connect_client, emit, guid, ms, parse_seconds, pump, pump_until, resolve, ConnectedJson,
    PeerMessageJson, Pumped,
};
use super::{parse_decode_as, EXIT_BAD_FILE, EXIT_OK, EXIT_USAGE};
use crate::peer::record::Recorder;
use crate::replay::{CapturedMessage, CapturedSession, SessionCollector};
use crate::session::handshake::MTU_PROBES;
use crate::session::{ClientConfig, CloseReason, Event};
use crate::wire::{message_name, Reliability};

/// Exit code of a replay the server cut short (it disconnected, or went
/// silent) before every message was sent and acknowledged.
pub const EXIT_REPLAY_CUT: u8 = 7;

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// Capture file (pcap or pcapng) holding the session.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The live server, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub target: String,
    /// The flow to replay (see `flows`); default: the first whose client sent messages.
    #[arg(long, value_name = "N")]
    pub flow: Option<u32>,
    /// Play the captured timing this many times faster.
    #[arg(long, default_value = "1", value_name = "X", conflicts_with = "asap", value_parser = parse_speed)]
    pub speed: f64,
    /// Send as fast as the connection allows, ignoring the captured timing.
    #[arg(long)]
    pub asap: bool,
    /// RakNet protocol byte (default: the captured one).
    #[arg(long, value_name = "V")]
    pub protocol: Option<u8>,
    /// Largest MTU to probe with (default: the captured one).
    #[arg(long, value_name = "M")]
    pub mtu: Option<u16>,
    /// Internal addresses in NewIncomingConnection (default: 10 for protocol 6, else 20).
    #[arg(long, value_name = "N")]
    pub addresses: Option<usize>,
    /// Seconds to keep receiving after everything was sent and acknowledged.
    #[arg(long, default_value = "1", value_name = "SECONDS", value_parser = parse_seconds)]
    pub wait: Duration,
    /// Write the replayed session's own traffic to this pcapng file.
    #[arg(long, value_name = "OUT.pcapng")]
    pub record: Option<PathBuf>,
    /// Decode a UDP port of the capture as RakNet. Repeatable.
    #[arg(short = 'd', long = "decode-as", value_name = "PORT", value_parser = parse_decode_as)]
    pub decode_as: Vec<u16>,
    /// NDJSON: `connected`, `message` (from the server), then one `replay` record.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct IdCount {
    id: u8,
    name: String,
    captured: usize,
    live: usize,
}

#[derive(Serialize)]
struct Divergence {
    index: usize,
    captured: Option<String>,
    live: Option<String>,
}

#[derive(Serialize)]
struct ReplayJson {
    #[serde(rename = "type")]
    kind: &'static str,
    file: String,
    flow: u32,
    target: String,
    outcome: &'static str,
    handshake_ms: f64,
    protocol: u8,
    mtu: u16,
    messages_sent: usize,
    messages_acknowledged: usize,
    /// Messages whose acknowledgement can be known (all but sequenced ones).
    messages_trackable: usize,
    server_messages_captured: usize,
    server_messages_live: usize,
    server_ids: Vec<IdCount>,
    first_divergence: Option<Divergence>,
    rtt_ms: Option<f64>,
    resends: u64,
    datagrams_sent: u64,
    seconds: f64,
}

/// Flow `flow` of a capture (or the first whose client sent messages), run
/// through the dissector and the mirror like any command's; `Err` holds
/// the exit code when the capture is bad or holds no such session.
pub(super) fn load_session(
    file: &std::path::Path,
    flow: Option<u32>,
    ports: &[u16],
    out: &mut impl Write,
) -> anyhow::Result<Result<CapturedSession, u8>> {
    let cap = super::CaptureArgs {
        file: Some(file.to_owned()),
        decode_as: ports.to_vec(),
        ..Default::default()
    };
    let mut mirror = crate::mirror::Mirror::new(super::mirror_config(&cap), true);
    let mut sessions = SessionCollector::new();
    let code = super::drive(&cap, &mut mirror, out, |p, obs, _, _| {
        sessions.observe(p, &obs.messages);
        for f in obs.closed.drain(..) {
            sessions.flow_ended(&f);
        }
        Ok(super::Next::Continue)
    })?;
    for f in mirror.finish().closed {
        sessions.flow_ended(&f);
    }
    // A capture cut short still holds the sessions before the cut.
    if code != EXIT_OK && code != super::EXIT_CUT_SHORT {
        return Ok(Err(code));
    }
    Ok(sessions.take(flow).map_err(|e| {
        eprintln!("raknet-dissect: {}: {e}", file.display());
        EXIT_BAD_FILE
    }))
}

/// `--speed`: 0.001 to 1,000,000 times the captured pace.
fn parse_speed(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| (0.001..=1e6).contains(v))
        .ok_or_else(|| format!("{s:?} is not a speed from 0.001 to 1000000"))
}

/// The receipt-bearing twin of a reliability, to count acknowledgements;
/// the same on the wire.
fn with_receipt(r: Reliability) -> Option<Reliability> {
    match r.0 {
        0 => Some(Reliability::UNRELIABLE_WITH_ACK_RECEIPT),
        2 => Some(Reliability::RELIABLE_WITH_ACK_RECEIPT),
        3 => Some(Reliability::RELIABLE_ORDERED_WITH_ACK_RECEIPT),
        _ => None,
    }
}

fn id_name(d: &[u8]) -> Option<String> {
    d.first().map(|&i| format!("{i:#04x} {}", message_name(i)))
}

pub fn run_replay(a: &ReplayArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let target = match resolve(&a.target) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("raknet-dissect: --target {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let session = match load_session(&a.file, a.flow, &a.decode_as, out)? {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let protocol = a.protocol.or(session.protocol).unwrap_or(6);
    let first_mtu = a.mtu.or(session.mtu).unwrap_or(1492).clamp(400, 1492);
    let mut mtus: Vec<u16> = MTU_PROBES
        .iter()
        .copied()
        .filter(|&m| m < first_mtu)
        .collect();
    mtus.insert(0, first_mtu);
    let cfg = ClientConfig {
        guid: guid(),
        protocol,
        mtus,
        address_count: a.addresses.unwrap_or(if protocol == 6 { 10 } else { 20 }),
        ..ClientConfig::default()
    };
    let recorder = match &a.record {
        Some(p) => match Recorder::create(p) {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("raknet-dissect: --record {}: {e}", p.display());
                return Ok(super::EXIT_ERROR);
            }
        },
        None => None,
    };
    let mut client = match connect_client(target, cfg, recorder, a.json, out)? {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let connected = ConnectedJson::of(&client);
    let mtu = connected.mtu;
    emit(
        out,
        a.json,
        &connected,
        &format!(
            "replaying flow {} of {} ({} client messages) to {target}: connected, MTU {mtu}, protocol {protocol}, handshake {:.3} ms",
            session.flow,
            a.file.display(),
            session.c2s.len(),
            ms(client.handshake_time)
        ),
    )?;
    let start = client.now();
    let t0 = session.c2s.first().map_or(Duration::ZERO, |m| m.ts);
    let due = |m: &CapturedMessage| -> Duration {
        if a.asap {
            start
        } else {
            start + m.ts.saturating_sub(t0).div_f64(a.speed)
        }
    };
    let mut live: Vec<Vec<u8>> = Vec::new();
    let mut acked = 0usize;
    let trackable = session
        .c2s
        .iter()
        .filter(|m| with_receipt(m.reliability).is_some())
        .count();
    let mut closed: Option<CloseReason> = None;
    let mut failed = false;
    let mut next = 0usize;
    let mut handle = |e: Event| -> std::io::Result<()> {
        match e {
            Event::Message(m) => {
                let r = PeerMessageJson::new(target, "s2c", &m);
                if a.json {
                    serde_json::to_writer(&mut *out, &r)?;
                    out.write_all(b"\n")?;
                }
                if live.len() < 1_000_000 {
                    live.push(m.data);
                }
            }
            Event::ReceiptAcked(_) => acked += 1,
            _ => {}
        }
        Ok(())
    };
    // Send on the captured schedule (bounded queue), then wait for the ACKs.
    while closed.is_none()
        && !failed
        && (next < session.c2s.len() || !client.connection().is_idle())
    {
        let now = client.now();
        while next < session.c2s.len()
            && due(&session.c2s[next]) <= now
            && client.connection().queued_bytes() < 4 << 20
        {
            let m = &session.c2s[next];
            let (rel, receipt) = match with_receipt(m.reliability) {
                Some(r) => (r, Some(next as u32)),
                None => (m.reliability, None),
            };
            client.send(&m.data, rel, m.channel, receipt);
            next += 1;
        }
        let mut until = client.now() + Duration::from_millis(50);
        if let Some(m) = session.c2s.get(next) {
            until = until.min(due(m).max(client.now()));
        }
        match pump(&mut client, until, &mut handle)? {
            None => {}
            Some(Pumped::Closed(r)) => closed = Some(r),
            Some(Pumped::Failed) => failed = true,
        }
    }
    if closed.is_none() && !failed {
        let until = client.now() + a.wait;
        closed = pump_until(&mut client, until, &mut handle)?;
    }
    let ran_to_end = closed.is_none() && next == session.c2s.len();
    // Closing also sends the last ACK when the server closed first.
    let closing = client.close().unwrap_or(CloseReason::TimedOut);
    let reason = closed.unwrap_or(closing);
    // The close may have delivered a last event or two.
    while let Some(e) = client.poll_event() {
        handle(e)?;
    }
    if let Err(e) = client.finish_recording() {
        eprintln!("raknet-dissect: --record: {e}");
    }
    // The server's messages, captured and live, by id, and where they part.
    let mut ids: BTreeMap<u8, (usize, usize)> = BTreeMap::new();
    for m in &session.s2c {
        if let Some(&i) = m.data.first() {
            ids.entry(i).or_default().0 += 1;
        }
    }
    for d in &live {
        if let Some(&i) = d.first() {
            ids.entry(i).or_default().1 += 1;
        }
    }
    let captured_ids: Vec<Option<u8>> = session
        .s2c
        .iter()
        .map(|m| m.data.first().copied())
        .collect();
    let live_ids: Vec<Option<u8>> = live.iter().map(|d| d.first().copied()).collect();
    let first_divergence = (0..captured_ids.len().max(live_ids.len()))
        .find(|&i| captured_ids.get(i) != live_ids.get(i))
        .map(|i| Divergence {
            index: i,
            captured: session.s2c.get(i).and_then(|m| id_name(&m.data)),
            live: live.get(i).and_then(|d| id_name(d)),
        });
    let stats = client.connection().stats();
    let outcome = if ran_to_end {
        "completed"
    } else {
        reason.as_str()
    };
    let r = ReplayJson {
        kind: "replay",
        file: a.file.display().to_string(),
        flow: session.flow,
        target: target.to_string(),
        outcome,
        handshake_ms: ms(client.handshake_time),
        protocol,
        mtu,
        messages_sent: next,
        messages_acknowledged: acked,
        messages_trackable: trackable,
        server_messages_captured: session.s2c.len(),
        server_messages_live: live.len(),
        server_ids: ids
            .into_iter()
            .map(|(id, (captured, live))| IdCount {
                id,
                name: message_name(id).into_owned(),
                captured,
                live,
            })
            .collect(),
        first_divergence,
        rtt_ms: client.connection().rtt().map(ms),
        resends: stats.send.resends_after_nack + stats.send.resends_after_timeout,
        datagrams_sent: stats.send.datagrams_sent,
        seconds: (client.now() - start).as_secs_f64(),
    };
    if a.json {
        serde_json::to_writer(&mut *out, &r)?;
        out.write_all(b"\n")?;
    } else {
        writeln!(
            out,
            "{}: sent {} of {} messages, {} of {} acknowledged; {} resends, rtt {}; {:.3} s",
            r.outcome,
            r.messages_sent,
            session.c2s.len(),
            r.messages_acknowledged,
            r.messages_trackable,
            r.resends,
            r.rtt_ms.map_or("-".into(), |v| format!("{v:.3} ms")),
            r.seconds
        )?;
        writeln!(
            out,
            "server messages: {} in the capture, {} live",
            r.server_messages_captured, r.server_messages_live
        )?;
        for c in &r.server_ids {
            writeln!(
                out,
                "  {:#04x} {:<28} captured {:>6}  live {:>6}",
                c.id, c.name, c.captured, c.live
            )?;
        }
        match &r.first_divergence {
            None => writeln!(out, "the server's messages follow the capture, id for id")?,
            Some(d) => writeln!(
                out,
                "first divergence at server message {}: captured {}, live {}",
                d.index,
                d.captured.as_deref().unwrap_or("nothing"),
                d.live.as_deref().unwrap_or("nothing")
            )?,
        }
    }
    out.flush()?;
    Ok(if ran_to_end { EXIT_OK } else { EXIT_REPLAY_CUT })
}
