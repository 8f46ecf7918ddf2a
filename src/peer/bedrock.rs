//! `connect --bedrock`: our RakNet client carrying the Bedrock game login
//! ([`crate::bedrock::client::GameClient`]): every game packet the server
//! sends is a `game` record, each step of the login a `login` record, the
//! connection's key appended to a key log; it stays until the duration is
//! over and leaves with a Disconnect.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use super::run::{connect_client, connected_record, pump, Dialect, Outcome, Pumped, Report};
use crate::bedrock::client::GameClient;
use crate::bedrock::speak::{refusal, SessionEvent};
use crate::records::peer::{PeerGameJson, PeerLoginJson, PeerRecord};
use crate::session::{ClientConfig, Event};
use crate::wire::Reliability;

/// What `connect --bedrock` does.
#[derive(Debug, Clone)]
pub struct BedrockPlan {
    /// Game version ("1.26.45").
    pub(crate) version: String,
    /// The player's name.
    pub(crate) name: String,
    /// How long to stay after connecting.
    pub(crate) duration: Duration,
    /// Append the connection's key here (`--keylog-out`, or the
    /// environment's `BEDROCK_KEYLOG_FILE`).
    pub(crate) keylog_out: Option<PathBuf>,
    /// The RakNet protocol was not given: a server that names another one
    /// (ID_INCOMPATIBLE_PROTOCOL_VERSION: jsp-raknet takes only 10) is
    /// tried again with it.
    pub(crate) retry_protocol: bool,
    /// RakNet, NetherNet, or NetherNet when the server has it (auto).
    pub transport: super::run::Transport,
    /// Append NetherNet's DTLS key-log line here (`--tls-keylog-out`, or
    /// the environment's `SSLKEYLOGFILE`).
    pub tls_keylog_out: Option<PathBuf>,
    /// NetherNet: the key of our identity assertion, kept in this file
    /// (made on first use); a fresh one when none.
    pub identity: Option<PathBuf>,
}

/// The plan of `connect --bedrock`: `version` or the newest, the key log
/// given or `$BEDROCK_KEYLOG_FILE`.
pub fn plan(
    version: Option<String>,
    name: &str,
    duration: Duration,
    keylog: Option<PathBuf>,
) -> BedrockPlan {
    BedrockPlan {
        version: version.unwrap_or_else(|| crate::bedrock::speak::newest_version().to_string()),
        name: name.to_string(),
        duration,
        keylog_out: keylog_path(keylog),
        retry_protocol: true,
        transport: super::run::Transport::RakNet,
        tls_keylog_out: std::env::var_os("SSLKEYLOGFILE").map(PathBuf::from),
        identity: None,
    }
}

/// The key log given, or the file `BEDROCK_KEYLOG_FILE` names.
pub(crate) fn keylog_path(given: Option<PathBuf>) -> Option<PathBuf> {
    given.or_else(|| std::env::var_os("BEDROCK_KEYLOG_FILE").map(PathBuf::from))
}

/// Packets to play, each at a time after a start (header included).
pub(crate) type Script = Vec<(Duration, Vec<u8>)>;

/// The plan of `serve --bedrock`: `version` or the newest, with a
/// captured server's packets to play (`(version, script)`: the capture's
/// version comes first).
pub(crate) fn serve_plan(
    version: Option<String>,
    once: bool,
    keylog: Option<PathBuf>,
    replay: Option<(String, Script, bool)>,
) -> BedrockServePlan {
    let (captured, script, asap) = replay.unwrap_or_default();
    let newest = || crate::bedrock::speak::newest_version().to_string();
    BedrockServePlan {
        version: version
            .or((!captured.is_empty()).then_some(captured))
            .unwrap_or_else(newest),
        once,
        keylog_out: keylog_path(keylog),
        script,
        asap,
    }
}

/// The RakNet protocol a Bedrock peer of game `version` speaks: 11 from
/// 1.19.30 (the game version that made compression negotiated), 10 before.
pub(crate) fn raknet_protocol_of(version: &str) -> u8 {
    let game = crate::bedrock::speak::protocol_of(version).unwrap_or(0);
    if game >= crate::bedrock::codec::NEGOTIATED_FROM {
        11
    } else {
        10
    }
}

/// The RakNet dialect of a Bedrock peer of game `version`: Minecraft's,
/// with [`raknet_protocol_of`] unless `protocol` is given.
pub(crate) fn game_dialect_of(
    version: &str,
    protocol: Option<u8>,
    addresses: Option<usize>,
) -> Dialect {
    Dialect {
        minecraft: true,
        protocol: Some(protocol.unwrap_or_else(|| raknet_protocol_of(version))),
        addresses,
    }
}

/// The RakNet client of a Bedrock login: the Minecraft dialect, protocol 11
/// from 1.19.30 (10 before), unless `protocol` is given.
pub(crate) fn game_dialect(
    version: &str,
    protocol: Option<u8>,
    addresses: Option<usize>,
    mtu: Option<u16>,
) -> Result<ClientConfig, crate::random::RandomError> {
    game_dialect_of(version, protocol, addresses).client(mtu)
}

/// The game protocol a Minecraft server's pong names.
fn server_protocol(target: SocketAddr) -> Option<u32> {
    let pong = super::ping(
        target,
        super::run::new_guid().ok()?,
        Duration::from_millis(500),
    )
    .ok()??;
    let motd = crate::wire::Motd::parse(&pong.payload)?;
    motd.fields
        .iter()
        .find(|(k, _)| *k == "protocol_version")
        .and_then(|(_, v)| v.parse().ok())
}

/// How a game login ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Login {
    Pending,
    Spawned,
    /// Refused, disconnected before the spawn, or an error.
    Failed,
}

/// Append `line` to the key log at `path`.
pub(crate) fn append_key_log(path: &std::path::Path, line: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    writeln!(f, "{line}")
}

/// A session event recorded: a game packet as a `game` record (`dir`: the
/// way it went), anything else as a `login` record whose detail is
/// `detail` or the event's own words; a key-log line also appended to
/// `keylog` (a failure warned of).
pub(crate) fn record_event(
    report: &mut dyn Report,
    peer: &str,
    dir: &'static str,
    ts: f64,
    e: SessionEvent,
    keylog: Option<&std::path::Path>,
    detail: Option<String>,
) -> std::io::Result<()> {
    let (event, own) = match e {
        SessionEvent::Packet { name, fields } => {
            let (kind, peer) = ("game", peer.to_string());
            return report.record(PeerRecord::Game(PeerGameJson {
                kind,
                peer,
                dir,
                ts,
                name,
                fields,
                relay: None,
                error: None,
            }));
        }
        SessionEvent::KeyLog(line) => {
            if let Some(path) = keylog {
                if let Err(e) = append_key_log(path, &line) {
                    report.warn(&format!("cannot write the key log {}: {e}", path.display()));
                }
            }
            ("key_log", line)
        }
        SessionEvent::LoggedIn => ("logged_in", String::new()),
        SessionEvent::Spawned => ("spawned", String::new()),
        SessionEvent::Refused(w) => ("refused", w),
        SessionEvent::Disconnected(m) => {
            let who = if dir == "s2c" { "server" } else { "client" };
            ("disconnected", format!("the {who} disconnected: {m:?}"))
        }
        SessionEvent::Error(w) => ("error", w),
    };
    report.record(PeerRecord::Login(PeerLoginJson {
        kind: "login",
        peer: peer.to_string(),
        ts,
        event,
        detail: detail.unwrap_or(own),
    }))
}

/// `connect --bedrock` as the command asks it: `plan` over a client of the
/// game version's dialect, with the RakNet `protocol` and `addresses` when
/// given (a protocol given is not retried), probing from `mtu`.
pub fn connect_game(
    target: SocketAddr,
    mut plan: BedrockPlan,
    (protocol, addresses, mtu): (Option<u8>, Option<usize>, Option<u16>),
    report: &mut dyn Report,
) -> anyhow::Result<Outcome> {
    plan.retry_protocol = protocol.is_none();
    let cfg = game_dialect(&plan.version, protocol, addresses, mtu)?;
    connect_bedrock(target, cfg, &plan, report)
}

/// `connect --bedrock`: log in, print what the server sends, stay for the
/// plan's duration, leave. `Outcome::LoginFailed` when the login did not
/// reach the spawn (refused, disconnected, no answer).
pub(crate) fn connect_bedrock(
    target: SocketAddr,
    cfg: ClientConfig,
    plan: &BedrockPlan,
    report: &mut dyn Report,
) -> anyhow::Result<Outcome> {
    let game = GameClient::new(&plan.version, &plan.name, &target.to_string())
        .map_err(|e| anyhow::anyhow!(e))?;
    let client = match super::Client::connect_recorded(target, cfg.clone(), None, |t, e| {
        report.handshake_step(t, e)
    }) {
        Ok(c) => c,
        Err(super::PeerError::Handshake(
            crate::session::handshake::HandshakeError::IncompatibleProtocol { ours, server },
        )) if plan.retry_protocol && server != ours => {
            report.warn(&format!(
                "{target} speaks RakNet protocol {server}, not {ours}: trying again with {server}"
            ));
            let cfg = ClientConfig {
                protocol: server,
                ..cfg
            };
            match connect_client(target, cfg, None, report)? {
                Ok(c) => c,
                Err(o) => return Ok(o),
            }
        }
        Err(e) => {
            report.record(super::run::failed(target, &e))?;
            return Ok(Outcome::NoConnection);
        }
    };
    report.record(PeerRecord::Connected(connected_record(&client, None)))?;
    play(&mut RakNetLink(client), game, target, plan, report)
}

/// What carries a game client's batches: RakNet's 0xFE messages, or
/// NetherNet's reliable channel.
pub(crate) trait GameLink {
    /// Time since the link was made.
    fn now(&self) -> Duration;
    /// Send a batch as [`GameClient::poll_transmit`] framed it.
    fn send_batch(&mut self, batch: &[u8]) -> std::io::Result<()>;
    /// Receive until `until`, each batch to `on_batch`; `Some` once the
    /// link has ended (closed, or a socket error warned of).
    fn pump(
        &mut self,
        until: Duration,
        report: &mut dyn Report,
        on_batch: &mut dyn FnMut(&[u8]),
    ) -> anyhow::Result<Option<String>>;
    /// Leave: with `linger`, what is queued goes out first (200 ms); then
    /// the link closes.
    fn leave(&mut self, linger: bool, report: &mut dyn Report) -> anyhow::Result<()>;
}

/// A RakNet client as a [`GameLink`].
pub(crate) struct RakNetLink(pub(crate) super::Client);

impl GameLink for RakNetLink {
    fn now(&self) -> Duration {
        self.0.now()
    }

    fn send_batch(&mut self, batch: &[u8]) -> std::io::Result<()> {
        self.0.send(batch, Reliability::RELIABLE_ORDERED, 0, None);
        Ok(())
    }

    fn pump(
        &mut self,
        until: Duration,
        report: &mut dyn Report,
        on_batch: &mut dyn FnMut(&[u8]),
    ) -> anyhow::Result<Option<String>> {
        let mut on_event = |e: Event, _: &mut dyn Report| {
            if let Event::Message(m) = e {
                if m.data.first() == Some(&0xfe) {
                    on_batch(&m.data);
                }
            }
            Ok(())
        };
        Ok(match pump(&mut self.0, until, report, &mut on_event)? {
            None => None,
            Some(Pumped::Closed(r)) => Some(format!("{r:?}")),
            Some(Pumped::Failed) => Some("a socket error".into()),
        })
    }

    fn leave(&mut self, linger: bool, report: &mut dyn Report) -> anyhow::Result<()> {
        if linger {
            let until = self.0.now() + Duration::from_millis(200);
            let _ = pump(&mut self.0, until, report, &mut |_, _| Ok(()))?;
        }
        let _ = self.0.close();
        Ok(())
    }
}

/// The game over `link`: log in, print what the server sends, stay for
/// the plan's duration, leave with a Disconnect. `Outcome::LoginFailed`
/// when the login did not reach the spawn (refused, disconnected, no
/// answer).
pub(crate) fn play(
    link: &mut dyn GameLink,
    mut game: GameClient,
    target: SocketAddr,
    plan: &BedrockPlan,
    report: &mut dyn Report,
) -> anyhow::Result<Outcome> {
    let peer = target.to_string();
    let start = link.now();
    let deadline = start + plan.duration;
    game.start().map_err(|e| anyhow::anyhow!(e))?;
    let mut login = Login::Pending;
    let mut closed = None;
    while closed.is_none() && link.now() < deadline && login != Login::Failed {
        while let Some(m) = game.poll_transmit() {
            link.send_batch(&m)?;
        }
        let until = (link.now() + Duration::from_millis(20)).min(deadline);
        closed = link.pump(until, report, &mut |b| game.handle(b))?;
        let ts = (link.now() - start).as_secs_f64();
        while let Some(e) = game.poll_event() {
            let detail = match &e {
                SessionEvent::Spawned => {
                    login = Login::Spawned;
                    Some(format!("as {}", plan.name))
                }
                SessionEvent::Refused(_) => {
                    login = Login::Failed;
                    // The server's protocol from its pong, when it has one.
                    let theirs = server_protocol(target);
                    game.refused
                        .as_ref()
                        .zip(theirs)
                        .map(|(status, t)| refusal(status, game.speaker.protocol, Some(t)))
                }
                SessionEvent::Disconnected(_) if login != Login::Spawned => {
                    login = Login::Failed;
                    None
                }
                _ => None,
            };
            record_event(
                report,
                &peer,
                "s2c",
                ts,
                e,
                plan.keylog_out.as_deref(),
                detail,
            )?;
        }
    }
    if login == Login::Pending {
        let ts = (link.now() - start).as_secs_f64();
        let detail = if closed.is_some() {
            "the connection closed before the spawn".to_string()
        } else {
            format!(
                "no spawn within {} s (the server never answered the login, or sent no StartGame)",
                plan.duration.as_secs_f64()
            )
        };
        report.record(PeerRecord::Login(PeerLoginJson {
            kind: "login",
            peer: peer.clone(),
            ts,
            event: "no_answer",
            detail,
        }))?;
    }
    if closed.is_none() {
        if login == Login::Spawned {
            let _ = game.send("disconnect", json!({"message": "raknet-dissect: bye"}));
            while let Some(m) = game.poll_transmit() {
                link.send_batch(&m)?;
            }
        }
        link.leave(login == Login::Spawned, report)?;
    }
    Ok(match login {
        Login::Spawned => Outcome::Done,
        _ => Outcome::LoginFailed,
    })
}

/// What `serve --bedrock` does.
#[derive(Debug, Clone)]
pub struct BedrockServePlan {
    /// Game version ("1.26.45").
    pub(crate) version: String,
    /// End when the first client's connection ends.
    pub(crate) once: bool,
    /// Append each connection's key here.
    pub(crate) keylog_out: Option<PathBuf>,
    /// `--replay`: a captured server's game packets after the spawn, played
    /// to each client from its spawn on (times after it; at once with asap).
    pub(crate) script: Script,
    pub(crate) asap: bool,
}

/// A Minecraft pong naming `version` and its protocol.
pub(crate) fn bedrock_pong(version: &str, guid: u64, port: u16, max_clients: usize) -> Vec<u8> {
    let protocol = crate::bedrock::speak::protocol_of(version).unwrap_or(0);
    super::run::motd_pong(
        "raknet-dissect",
        (protocol, version),
        "Creative",
        guid,
        port,
        max_clients,
    )
}

/// The scripted packets of `plan` due at `now` for a game whose player
/// spawned at `t0` (`next` the first not yet played), queued and flushed;
/// false once all are played.
pub(crate) fn play_due(
    g: &mut crate::bedrock::server::GameServer,
    plan: &BedrockServePlan,
    (t0, next): (Duration, &mut usize),
    now: Duration,
) -> bool {
    while let Some((at, bytes)) = plan.script.get(*next) {
        if !plan.asap && t0 + *at > now {
            break;
        }
        g.speaker.queue_raw(bytes.clone());
        g.speaker.flush();
        *next += 1;
    }
    *next < plan.script.len()
}

/// The Bedrock games of a RakNet server's connections: each client's
/// [`GameServer`](crate::bedrock::server::GameServer), and from its spawn
/// the time and the next scripted packet. `serve --bedrock` drives one
/// over its own socket, `serve --bedrock --nethernet` beside its NetherNet
/// players on the same socket.
#[derive(Default)]
pub(crate) struct RakNetGames {
    games: Vec<(SocketAddr, crate::bedrock::server::GameServer)>,
    playing: Vec<(SocketAddr, Duration, usize)>,
}

impl RakNetGames {
    /// Players in the game.
    pub(crate) fn len(&self) -> usize {
        self.games.len()
    }

    /// One turn at `now`: the scripted packets due, the listener's events
    /// (a `connected` record and a game per connection, its messages to
    /// it, a `login` record when it closes), what each game sends and its
    /// events. True once a connection closed and `plan.once` says stop.
    pub(crate) fn turn(
        &mut self,
        listener: &mut crate::session::Listener,
        now: Duration,
        plan: &BedrockServePlan,
        report: &mut dyn Report,
    ) -> anyhow::Result<bool> {
        use crate::bedrock::server::GameServer;
        use crate::records::peer::{guid_hex, ConnectedJson};
        let games = &mut self.games;
        self.playing.retain_mut(|(peer, t0, next)| {
            let g = games.iter_mut().find(|(p, _)| p == peer);
            g.is_some_and(|(_, g)| play_due(g, plan, (*t0, next), now))
        });
        let ts = now.as_secs_f64();
        let mut done = false;
        while let Some((peer, e)) = listener.poll_event() {
            match e {
                Event::Connected => {
                    let c = listener.connection(peer);
                    report.record(PeerRecord::Connected(ConnectedJson {
                        kind: "connected",
                        peer: peer.to_string(),
                        guid: c.and_then(|c| c.peer_guid).map(guid_hex),
                        mtu: c.map_or(0, |c| c.mtu()),
                        handshake_ms: None,
                        text: None,
                    }))?;
                    let g = GameServer::new(&plan.version).map_err(|e| anyhow::anyhow!(e))?;
                    games.retain(|(p, _)| *p != peer);
                    games.push((peer, g));
                }
                Event::Message(m) if m.data.first() == Some(&0xfe) => {
                    if let Some((_, g)) = games.iter_mut().find(|(p, _)| *p == peer) {
                        g.handle(&m.data);
                    }
                }
                Event::Closed(_) => {
                    games.retain(|(p, _)| *p != peer);
                    report.record(PeerRecord::Login(PeerLoginJson {
                        kind: "login",
                        peer: peer.to_string(),
                        ts,
                        event: "closed",
                        detail: String::new(),
                    }))?;
                    done |= plan.once;
                }
                _ => {}
            }
        }
        for (peer, g) in games.iter_mut() {
            while let Some(m) = g.poll_transmit() {
                listener.send(now, *peer, &m, Reliability::RELIABLE_ORDERED, 0);
            }
            while let Some(e) = g.poll_event() {
                let detail = match &e {
                    SessionEvent::Spawned if !plan.script.is_empty() => {
                        self.playing.push((*peer, now, 0));
                        g.player.clone()
                    }
                    SessionEvent::LoggedIn | SessionEvent::Spawned => g.player.clone(),
                    _ => None,
                };
                let peer = peer.to_string();
                record_event(
                    report,
                    &peer,
                    "c2s",
                    ts,
                    e,
                    plan.keylog_out.as_deref(),
                    detail,
                )?;
            }
        }
        Ok(done)
    }
}

/// `serve --bedrock`: log in each offline-mode client
/// ([`crate::bedrock::server::GameServer`]), print the game packets it
/// sends (`game` records, `c2s`) and the steps of its login.
pub(crate) fn serve_bedrock(
    server: &mut super::Server,
    plan: &BedrockServePlan,
    report: &mut dyn Report,
) -> anyhow::Result<Outcome> {
    report.record(raknet_listening(server, None)?)?;
    let mut games = RakNetGames::default();
    loop {
        let until = server.now() + Duration::from_millis(20);
        server.step(until)?;
        let now = server.now();
        if games.turn(&mut server.listener, now, plan, report)? {
            let until = server.now() + Duration::from_millis(50);
            while server.now() < until {
                server.step(until)?;
            }
            return Ok(Outcome::Done);
        }
    }
}

/// The `listening` record of a RakNet server (`transport` said when
/// another one listens beside it).
pub(crate) fn raknet_listening(
    server: &super::Server,
    transport: Option<&'static str>,
) -> std::io::Result<PeerRecord> {
    use crate::records::peer::{guid_hex, ListeningJson};
    let cfg = server.listener.config();
    Ok(PeerRecord::Listening(ListeningJson {
        kind: "listening",
        address: server.local_addr()?.to_string(),
        guid: guid_hex(cfg.guid),
        protocol: cfg.protocol,
        transport,
    }))
}
