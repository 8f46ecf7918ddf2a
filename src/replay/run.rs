//! `replay` and `serve` as library calls: [`replay_file`] takes a session
//! out of capture files, sends its client's messages to a live server with
//! a new client and compares what comes back with the capture (or replays
//! the game session, `--bedrock`); [`serve`] serves, playing a captured
//! server's messages to each client with `--replay`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::bedrock::{load_game, replay_game, GameLoadError, GameReplayOptions, GameScript};
use super::{CapturedMessage, CapturedSession, SessionCollector};
use crate::bedrock::Keys;
use crate::capture::CaptureError;
use crate::mirror::{Mirror, MirrorConfig};
use crate::peer::bedrock::serve_plan;
use crate::peer::record::Recorder;
use crate::peer::run::{
    addresses_for, connect_client, connected_record, mtus_from, new_guid, pump, pump_until,
    Outcome, Outgoing, Pumped, Report, ServerScript, QUEUE_AHEAD,
};
use crate::peer::serve::{serve_setup, ServeSetup};
use crate::pipeline::{Input, Item, Next, Pipeline, PipelineOptions};
use crate::records::peer::{ms, Divergence, IdCount, PeerMessageJson, PeerRecord, ReplayJson};
use crate::session::{ClientConfig, CloseReason, Event};
use crate::wire::{message_name, Reliability};

/// Why no session could be taken out of a capture.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A capture file could not be read.
    #[error("{0}")]
    Capture(#[from] CaptureError),
    /// The capture holds no session to replay.
    #[error("{file}: {why}")]
    NoSession {
        /// The capture file, as named.
        file: String,
        /// What it lacks.
        why: super::NoSession,
    },
}

impl LoadError {
    /// Whether the mistake is in what was asked (a flow the capture does
    /// not have), not in the file (one that cannot be read, or holds no
    /// session).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            LoadError::NoSession {
                why: super::NoSession::NoFlow(_),
                ..
            }
        )
    }
}

/// Why a replay, or a `serve` that plays a capture, could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The captured RakNet session could not be taken out.
    #[error("{0}")]
    Load(#[from] LoadError),
    /// The capture's game session (`--bedrock`).
    #[error("{file}: {why}")]
    Game {
        /// The capture file, as named.
        file: String,
        /// Why it has no game session.
        why: GameLoadError,
    },
    /// The file to record the new session to cannot be made.
    #[error("--record {path}: {error}")]
    Record {
        /// The file, as named.
        path: String,
        /// Why it could not be created.
        error: std::io::Error,
    },
    /// `serve`: the address cannot be listened on (in words).
    #[error("{0}")]
    Listen(String),
}

/// The game session of `file` ([`super::bedrock::load_game`]), an error
/// naming the file.
pub(crate) fn load_game_file(
    file: &Path,
    flow: Option<u32>,
    (keys, tls): (Keys, &[PathBuf]),
) -> Result<GameScript, StartError> {
    load_game(&[file.to_path_buf()], flow, keys, tls).map_err(|why| StartError::Game {
        file: file.display().to_string(),
        why,
    })
}

/// [`load`] of `files`, decoding `ports` as RakNet.
pub(crate) fn load_ports(
    files: &[PathBuf],
    flow: Option<u32>,
    ports: &[u16],
) -> Result<CapturedSession, LoadError> {
    let opts = PipelineOptions {
        decode_as: ports.to_vec(),
        ..PipelineOptions::default()
    };
    load(files, flow, opts)
}

/// Flow `flow` of the capture files (or the first whose client sent
/// messages), through the dissector and the mirror as every command reads
/// it. A file cut short still gives the sessions before the cut.
pub(crate) fn load(
    files: &[PathBuf],
    flow: Option<u32>,
    opts: PipelineOptions,
) -> Result<CapturedSession, LoadError> {
    let mut mirror = Mirror::new(MirrorConfig::default(), true);
    let mut sessions = SessionCollector::new();
    let mut pipeline = Pipeline::new(opts);
    let ended = pipeline
        .run(Input::Files(files.to_vec()), &mut mirror, |item| {
            if let Item::Packet { packet, obs, .. } = item {
                sessions.observe(packet, &obs.messages);
                for f in obs.closed.drain(..) {
                    sessions.flow_ended(&f);
                }
            }
            Ok::<_, std::convert::Infallible>(Next::Continue)
        })
        .unwrap_or_else(|e| match e {});
    for f in mirror.finish().closed {
        sessions.flow_ended(&f);
    }
    if let Some(e) = ended.unreadable.into_iter().next() {
        return Err(e.error.into());
    }
    let file = files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    sessions
        .take(flow)
        .map_err(|why| LoadError::NoSession { file, why })
}

/// The server side of a captured session, as `serve --replay` plays it:
/// its messages at their times from the connection's start.
pub(crate) fn server_script(s: &CapturedSession, asap: bool) -> ServerScript {
    ServerScript {
        base: s
            .connected_ts
            .or(s.s2c.first().map(|m| m.ts))
            .unwrap_or(Duration::ZERO),
        asap,
        messages: s
            .s2c
            .iter()
            .map(|m| {
                (
                    m.ts,
                    Outgoing {
                        data: m.data.clone(),
                        reliability: m.reliability,
                        channel: m.channel,
                    },
                )
            })
            .collect(),
    }
}

/// How `replay` runs.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// Shown in the `replay` record.
    pub file: String,
    /// The live server.
    pub target: SocketAddr,
    /// Play the captured timing this many times faster.
    pub speed: f64,
    /// Send as fast as the connection allows.
    pub asap: bool,
    /// RakNet protocol byte (default: the captured one, else 6).
    pub protocol: Option<u8>,
    /// Largest MTU to probe with (default: the captured one).
    pub mtu: Option<u16>,
    /// Internal addresses in NewIncomingConnection.
    pub addresses: Option<usize>,
    /// Keep receiving this long after everything was sent and acknowledged.
    pub wait: Duration,
}

/// What `replay` plays besides its [`ReplayOptions`].
#[derive(Debug, Clone, Default)]
pub struct ReplayFile {
    /// The capture file.
    pub file: PathBuf,
    /// The flow (default: the first whose client sent messages, or spawned).
    pub flow: Option<u32>,
    /// UDP ports of the capture decoded as RakNet.
    pub ports: Vec<u16>,
    /// Write the new session's own traffic to this pcapng file.
    pub record: Option<PathBuf>,
    /// The game replay (`--bedrock`), with the capture's key material.
    pub game: Option<Keys>,
    /// With `game`: where the new session's key is appended.
    pub keylog_out: Option<PathBuf>,
    /// With `game`: a NetherNet capture's DTLS key logs (none:
    /// `$SSLKEYLOGFILE`).
    pub tls_keylog: Vec<PathBuf>,
}

/// `replay`: the session of `f` taken out of its capture and played to
/// `o.target` (or its game session, with `f.game`); `Err` when it could not
/// start.
pub fn replay_file(
    f: &ReplayFile,
    o: &ReplayOptions,
    report: &mut dyn Report,
) -> anyhow::Result<Result<Outcome, StartError>> {
    if let Some(keys) = &f.game {
        let script = match load_game_file(&f.file, f.flow, (keys.clone(), &f.tls_keylog)) {
            Ok(s) => s,
            Err(e) => return Ok(Err(e)),
        };
        let g = GameReplayOptions {
            file: o.file.clone(),
            target: o.target,
            asap: o.asap,
            speed: o.speed,
            wait: o.wait,
            keylog_out: crate::peer::bedrock::keylog_path(f.keylog_out.clone()),
        };
        let cfg =
            crate::peer::bedrock::game_dialect(&script.version, o.protocol, o.addresses, o.mtu);
        return Ok(Ok(replay_game(&script, cfg?, &g, report)?));
    }
    let session = match load_ports(std::slice::from_ref(&f.file), f.flow, &f.ports) {
        Ok(s) => s,
        Err(e) => return Ok(Err(e.into())),
    };
    let recorder = match f.record.as_deref().map(|p| (p, Recorder::create(p))) {
        None => None,
        Some((_, Ok(r))) => Some(r),
        Some((p, Err(error))) => {
            let path = p.display().to_string();
            return Ok(Err(StartError::Record { path, error }));
        }
    };
    Ok(Ok(match replay(&session, o, recorder, report)? {
        ReplayOutcome::Completed => Outcome::Done,
        ReplayOutcome::CutShort => Outcome::ReplayCut,
        ReplayOutcome::NoConnection => Outcome::NoConnection,
    }))
}

/// What `serve` plays of a capture (`--replay`): the captured server of
/// flow `flow` (its pong, protocol and messages), or, serving the game,
/// its game packets after the spawn (decrypted with `keys`); `asap`: at
/// once, not with their timing.
#[derive(Debug, Clone, Default)]
pub struct ServeReplay {
    /// The capture file.
    pub file: PathBuf,
    /// The flow whose server is played (default: the first whose client
    /// sent messages, or spawned).
    pub flow: Option<u32>,
    /// Send at once, not at the captured times.
    pub asap: bool,
    /// Key material to decrypt the game packets with (serving the game).
    pub keys: Keys,
    /// A NetherNet capture's DTLS key logs (none: `$SSLKEYLOGFILE`).
    pub tls_keylog: Vec<PathBuf>,
}

/// The game login of `serve --bedrock`: its version (default: the
/// capture's, else the newest) and where each connection's key goes.
#[derive(Debug, Clone, Default)]
pub struct ServeGame {
    /// The game version (`1.26.45`); default: the capture's, else the newest.
    pub version: Option<String>,
    /// Where each connection's key is appended.
    pub keylog_out: Option<PathBuf>,
}

/// `serve`: `setup` serving the game when `game` is given, playing the
/// capture of `replay` when given; `Err` when it could not start.
pub fn serve(
    mut setup: ServeSetup,
    game: Option<ServeGame>,
    replay: Option<&ServeReplay>,
    report: &mut dyn Report,
) -> anyhow::Result<Result<Outcome, StartError>> {
    let mut captured = None;
    match replay {
        Some(r) if game.is_some() => {
            match load_game_file(&r.file, r.flow, (r.keys.clone(), &r.tls_keylog)) {
                Ok(s) => captured = Some((s.version, s.s2c_packets, r.asap)),
                Err(e) => return Ok(Err(e)),
            }
        }
        Some(r) => match load_ports(std::slice::from_ref(&r.file), r.flow, &[]) {
            Ok(s) => {
                (setup.captured_pong, setup.captured_protocol) = (s.pong.clone(), s.protocol);
                setup.plan.script = Some(server_script(&s, r.asap));
            }
            Err(e) => return Ok(Err(e.into())),
        },
        None => {}
    }
    let once = setup.plan.once;
    setup.bedrock = game.map(|g| serve_plan(g.version, once, g.keylog_out, captured));
    Ok(serve_setup(setup, report)?.map_err(StartError::Listen))
}

/// How a replay ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplayOutcome {
    /// Every message was sent and the connection stayed up.
    Completed,
    /// The server disconnected or went silent first.
    CutShort,
    /// No connection could be made.
    NoConnection,
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

/// Replay `session`'s client messages to `o.target` on the captured
/// schedule, every server message a `message` record, then one `replay`
/// record comparing the server's messages with the capture's.
pub(crate) fn replay(
    session: &CapturedSession,
    o: &ReplayOptions,
    recorder: Option<Recorder>,
    report: &mut dyn Report,
) -> anyhow::Result<ReplayOutcome> {
    let protocol = o.protocol.or(session.protocol).unwrap_or(6);
    let cfg = ClientConfig {
        guid: new_guid()?,
        protocol,
        mtus: mtus_from(o.mtu.or(session.mtu).unwrap_or(1492)),
        address_count: o.addresses.unwrap_or(addresses_for(protocol)),
        ..ClientConfig::default()
    };
    let target = o.target;
    let mut client = match connect_client(target, cfg, recorder, report)? {
        Ok(c) => c,
        Err(_) => return Ok(ReplayOutcome::NoConnection),
    };
    let text = format!(
        "replaying flow {} of {} ({} client {}) to {target}: connected, MTU {}, protocol {protocol}, handshake {:.3} ms",
        session.flow,
        o.file,
        session.c2s.len(),
        crate::records::peer::plural(session.c2s.len(), "message", "messages"),
        client.connection().mtu(),
        ms(client.handshake_time)
    );
    let connected = connected_record(&client, Some(text));
    let mtu = connected.mtu;
    report.record(PeerRecord::Connected(connected))?;
    let start = client.now();
    let t0 = session.c2s.first().map_or(Duration::ZERO, |m| m.ts);
    let due = |m: &CapturedMessage| -> Duration {
        if o.asap {
            start
        } else {
            start + m.ts.saturating_sub(t0).div_f64(o.speed)
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
    let mut handle = |e: Event, report: &mut dyn Report| -> std::io::Result<()> {
        match e {
            Event::Message(m) => {
                report.record(PeerRecord::Message(PeerMessageJson::new(target, "s2c", &m)))?;
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
            && client.connection().queued_bytes() < QUEUE_AHEAD
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
        match pump(&mut client, until, report, &mut handle)? {
            None => {}
            Some(Pumped::Closed(r)) => closed = Some(r),
            Some(Pumped::Failed) => failed = true,
        }
    }
    if closed.is_none() && !failed {
        let until = client.now() + o.wait;
        closed = pump_until(&mut client, until, report, &mut handle)?;
    }
    let ran_to_end = closed.is_none() && next == session.c2s.len();
    // Closing also sends the last ACK when the server closed first.
    let closing = client.close().unwrap_or(CloseReason::TimedOut);
    let reason = closed.unwrap_or(closing);
    // The close may have delivered a last event or two.
    while let Some(e) = client.poll_event() {
        handle(e, report)?;
    }
    crate::peer::run::recording_stopped(&mut client, report);
    if let Err(e) = client.finish_recording() {
        report.warn(&format!("--record: {e}"));
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
    let first_divergence = (0..session.s2c.len().max(live.len()))
        .find(|&i| session.s2c.get(i).map(|m| m.data.first()) != live.get(i).map(|d| d.first()))
        .map(|i| Divergence {
            index: i,
            captured: session.s2c.get(i).and_then(|m| id_name(&m.data)),
            live: live.get(i).and_then(|d| id_name(d)),
        });
    let stats = client.connection().stats();
    report.record(PeerRecord::Replay(ReplayJson {
        kind: "replay",
        file: o.file.clone(),
        flow: session.flow,
        target: target.to_string(),
        outcome: if ran_to_end {
            "completed"
        } else {
            reason.as_str()
        },
        handshake_ms: ms(client.handshake_time),
        protocol,
        mtu,
        messages_sent: next,
        messages_captured: session.c2s.len(),
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
    }))?;
    Ok(if ran_to_end {
        ReplayOutcome::Completed
    } else {
        ReplayOutcome::CutShort
    })
}
