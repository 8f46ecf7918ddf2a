//! `replay --bedrock`: a captured Bedrock client's game packets after its
//! spawn, decrypted from the capture with the key material given, sent to
//! a live server in a fresh session: our client logs in anew (new keys, its
//! own login packets), then plays the captured packets, re-framed and
//! re-encrypted for the new session, in order and with their spacing (or at
//! once). The server's answers now are set beside those in the capture:
//! counts by name and the first divergence.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use crate::bedrock::client::GameClient;
use crate::bedrock::crypto::Keys;
use crate::bedrock::speak::SessionEvent;
use crate::bedrock::{Detect, Game, GameEvent};
use crate::dissect::Dir;
use crate::mirror::{Mirror, MirrorConfig};
use crate::peer::bedrock::{record_event, GameLink, RakNetLink};
use crate::peer::run::{connect_client, connected_record, Outcome, Report};
use crate::pipeline::{Input, Item, Next, Pipeline, PipelineOptions};
use crate::records::peer::{GameReplayJson, PeerRecord};
use crate::session::ClientConfig;

/// A captured Bedrock session, as the game replay plays it.
#[derive(Debug, Clone, Default)]
pub(crate) struct GameScript {
    pub(crate) flow: u32,
    /// The game version of the session's protocol.
    pub(crate) version: String,
    /// The client's packets after its spawn (SetLocalPlayerAsInitialized
    /// excluded): time after the spawn, name, bytes (header included).
    pub(crate) c2s: Vec<(Duration, String, Vec<u8>)>,
    /// The names of the server's packets after the spawn.
    pub(crate) s2c: Vec<String>,
    /// The server's packets after the spawn: time after it, bytes (header
    /// included), for `serve --bedrock --replay`.
    pub(crate) s2c_packets: Vec<(Duration, Vec<u8>)>,
    /// The session went over NetherNet (its replay does too).
    pub(crate) nethernet: bool,
}

/// Why a capture has no game session to replay.
#[derive(Debug, thiserror::Error)]
pub enum GameLoadError {
    /// A capture file could not be read.
    #[error("{0}")]
    Capture(#[from] crate::capture::CaptureError),
    /// No player spawned (in flow N, or in any flow).
    #[error("{}", match .0 {
        Some(f) => format!("flow {f} has no Bedrock player that spawned (is the key log the capture's?)"),
        None => "no Bedrock flow whose player spawned: nothing to replay (is the key log the capture's?)".to_string(),
    })]
    NoSpawn(Option<u32>),
    /// The flow's game protocol, and so its version, was not seen.
    #[error("flow {0}: the game version was not seen")]
    NoVersion(u32),
    /// The capture's DTLS key log (`--tls-keylog`) could not be read.
    #[error("{0}")]
    TlsKeyLog(#[from] crate::nethernet::dtls::KeyLogError),
}

#[derive(Default)]
struct Collect {
    spawned: Option<Duration>,
    script: GameScript,
    opaque: u64,
}

/// The game session of flow `flow` (default: the first whose client
/// spawned) of `files`, decrypted with `keys`; a NetherNet session's DTLS
/// with the key logs `tls` (none: the file SSLKEYLOGFILE names, if any).
pub(crate) fn load_game(
    files: &[PathBuf],
    flow: Option<u32>,
    keys: Keys,
    tls: &[PathBuf],
) -> Result<GameScript, GameLoadError> {
    let mut mirror = Mirror::new(MirrorConfig::default(), true);
    let mut game = Game::new(Detect::Auto, keys);
    game.fields = false;
    let mut flows: BTreeMap<u32, Collect> = BTreeMap::new();
    let env = std::env::var_os("SSLKEYLOGFILE").map(PathBuf::from);
    let env = env.filter(|_| tls.is_empty());
    let tls = crate::nethernet::dtls::KeyLog::from_files(tls, env.as_deref())?;
    let options = PipelineOptions {
        tls_keylog: std::sync::Arc::new(tls),
        ..PipelineOptions::default()
    };
    let mut pipeline = Pipeline::new(options);
    let ended = pipeline
        .run(Input::Files(files.to_vec()), &mut mirror, |item| {
            let delivered = match item {
                Item::Packet { obs, .. } => obs
                    .messages
                    .iter()
                    .filter(|m| flow.is_none_or(|f| f == m.flow))
                    .map(|m| (m.clone(), game.message(m).unwrap_or_default(), false))
                    .collect(),
                Item::Nethernet {
                    seen, frame, ts, ..
                } => crate::pipeline::drive::nethernet_delivered(&mut game, &seen, frame, ts, true)
                    .into_iter()
                    .filter(|d| flow.is_none_or(|f| f == d.message.flow))
                    .map(|d| (d.message, d.game.unwrap_or_default(), true))
                    .collect(),
                _ => Vec::new(),
            };
            for (m, events, nethernet) in delivered {
                for e in events {
                    let c = flows.entry(m.flow).or_default();
                    c.script.flow = m.flow;
                    c.script.nethernet = nethernet;
                    match e {
                        GameEvent::Packet(p) => {
                            let name = p.name.unwrap_or("?").to_string();
                            match (p.dir, c.spawned) {
                                (Dir::C2s, None) if name == "set_local_player_as_initialized" => {
                                    c.spawned = Some(m.ts)
                                }
                                (Dir::C2s, Some(t0)) => c.script.c2s.push((
                                    m.ts.saturating_sub(t0),
                                    name,
                                    p.data.to_vec(),
                                )),
                                (Dir::S2c, Some(t0)) => {
                                    c.script.s2c.push(name);
                                    c.script
                                        .s2c_packets
                                        .push((m.ts.saturating_sub(t0), p.data.to_vec()));
                                }
                                _ => {}
                            }
                        }
                        GameEvent::Opaque(_) => c.opaque += 1,
                    }
                }
                if let (Some(c), Some(f)) = (flows.get_mut(&m.flow), game.flow(m.flow)) {
                    if let Some(v) = f
                        .protocol()
                        .and_then(|p| crate::bedrock::names::versions(p).last())
                    {
                        c.script.version = v.to_string();
                    }
                }
            }
            Ok::<_, std::convert::Infallible>(Next::Continue)
        })
        .unwrap_or_else(|e| match e {});
    if let Some(e) = ended.unreadable.into_iter().next() {
        return Err(GameLoadError::Capture(e.error));
    }
    let Some((_, c)) = flows.into_iter().find(|(_, c)| c.spawned.is_some()) else {
        return Err(GameLoadError::NoSpawn(flow));
    };
    if c.script.version.is_empty() {
        return Err(GameLoadError::NoVersion(c.script.flow));
    }
    Ok(c.script)
}

/// How the game replay runs.
#[derive(Debug, Clone)]
pub(crate) struct GameReplayOptions {
    pub(crate) file: String,
    pub(crate) target: SocketAddr,
    /// Send at once instead of with the captured spacing.
    pub(crate) asap: bool,
    /// The captured spacing divided by this.
    pub(crate) speed: f64,
    /// Keep receiving this long after the last packet.
    pub(crate) wait: Duration,
    /// Append the new session's key here.
    pub(crate) keylog_out: Option<PathBuf>,
}

/// Play `script` to `o.target` in a fresh session.
pub(crate) fn replay_game(
    script: &GameScript,
    cfg: ClientConfig,
    o: &GameReplayOptions,
    report: &mut dyn Report,
) -> anyhow::Result<Outcome> {
    let target = o.target;
    let server = match script.nethernet {
        true => crate::peer::nethernet::login_address(target),
        false => target.to_string(),
    };
    let mut game = GameClient::new(&script.version, "raknet-dissect", &server)
        .map_err(|e| anyhow::anyhow!(e))?;
    // The session's own transport: NetherNet for a NetherNet capture.
    let mut link: Box<dyn GameLink> = if script.nethernet {
        game.speaker.codec.set_nethernet();
        let tls = std::env::var_os("SSLKEYLOGFILE").map(PathBuf::from);
        let wait = Duration::from_secs(10);
        match crate::peer::nethernet::join_recorded(
            target,
            "raknet-dissect",
            wait,
            (tls, None),
            report,
        )? {
            Some(l) => Box::new(l),
            None => return Ok(Outcome::NoConnection),
        }
    } else {
        let client = match connect_client(target, cfg, None, report)? {
            Ok(c) => c,
            Err(out) => return Ok(out),
        };
        report.record(PeerRecord::Connected(connected_record(&client, None)))?;
        Box::new(RakNetLink(client))
    };
    let peer = target.to_string();
    let start = link.now();
    game.start().map_err(|e| anyhow::anyhow!(e))?;
    let login_deadline = start + Duration::from_secs(15);
    let mut spawned_at: Option<Duration> = None;
    let mut failed = false;
    let mut closed = false;
    let mut next = 0;
    let mut now_s2c: Vec<String> = Vec::new();
    let mut end: Option<Duration> = None;
    loop {
        let now = link.now();
        if let Some(t0) = spawned_at {
            while let Some((at, _, bytes)) = script.c2s.get(next) {
                let due = if o.asap {
                    t0
                } else {
                    t0 + at.div_f64(o.speed.max(1e-3))
                };
                if due > now {
                    break;
                }
                game.speaker.queue_raw(bytes.clone());
                game.speaker.flush();
                next += 1;
            }
            if next == script.c2s.len() && end.is_none() {
                end = Some(now + o.wait);
            }
        }
        while let Some(m) = game.poll_transmit() {
            link.send_batch(&m)?;
        }
        if closed
            || failed
            || end.is_some_and(|e| now >= e)
            || (spawned_at.is_none() && now >= login_deadline)
        {
            break;
        }
        let until = link.now() + Duration::from_millis(10);
        match link.pump(until, report, &mut |b| game.handle(b))? {
            None => {}
            Some(_) => closed = true,
        }
        let ts = (link.now() - start).as_secs_f64();
        while let Some(e) = game.poll_event() {
            match &e {
                SessionEvent::Packet { name, .. } if spawned_at.is_some() => {
                    now_s2c.push(name.clone())
                }
                SessionEvent::Spawned => spawned_at = Some(link.now()),
                SessionEvent::Refused(_) => failed = true,
                SessionEvent::Disconnected(_) => closed = true,
                _ => {}
            }
            record_event(report, &peer, "s2c", ts, e, o.keylog_out.as_deref(), None)?;
        }
    }
    // Leave, unless the captured client's own Disconnect was played.
    let played_disconnect = script.c2s[..next].iter().any(|(_, n, _)| n == "disconnect");
    if !closed && spawned_at.is_some() && !played_disconnect {
        let _ = game.send(
            "disconnect",
            json!({"message": "raknet-dissect: replay over"}),
        );
        while let Some(m) = game.poll_transmit() {
            link.send_batch(&m)?;
        }
    }
    let linger = !closed && spawned_at.is_some();
    link.leave(linger, report)?;
    report.record(PeerRecord::GameReplay(GameReplayJson::new(
        &o.file,
        script.flow,
        &script.version,
        (next, script.c2s.len()),
        &script.s2c,
        &now_s2c,
    )))?;
    Ok(match (spawned_at, next == script.c2s.len()) {
        (None, _) => Outcome::LoginFailed,
        (Some(_), true) => Outcome::Done,
        (Some(_), false) => Outcome::ReplayCut,
    })
}
