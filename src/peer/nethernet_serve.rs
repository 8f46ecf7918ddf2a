//! `serve --bedrock --nethernet`: a NetherNet server, as a dedicated
//! server is one: the signaling on TCP (`GET /v1/join` answered with the
//! status, `POST /v1/join/{networkId}` with the answer to the offer) and
//! every player's ICE, DTLS and SCTP on one UDP socket of the same port
//! number, each player's datagrams told apart by the ICE username (STUN)
//! and then by address. Each player is a [`nethernet::rtc`] connection
//! (we answer `a=setup:active`: the DTLS client, as aiortc's and
//! go-nethernet's servers are) carrying the same game server as over
//! RakNet ([`crate::bedrock::server`]), its batches without 0xFE, no
//! encryption handshake.
//!
//! The listening side (the signaling and its answers, each player's
//! transport, their bounds) is [`super::nethernet_listen`]'s; this module
//! plays the game of each player it hands over.
//!
//! [`nethernet::rtc`]: crate::nethernet::rtc

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::bedrock::{record_event, BedrockServePlan, RakNetGames};
use super::nethernet_listen::{Listener, NetEvent, Signaling};
use super::run::{Outcome, Report, Transport};
use crate::bedrock::identity::KeyPair;
use crate::bedrock::server::GameServer;
use crate::bedrock::speak::SessionEvent;
use crate::nethernet::cert::Cert;

/// What `serve --bedrock --nethernet` does besides what every Bedrock
/// server does ([`BedrockServePlan`]: the version, `--once`, the key log,
/// the script of `--replay`).
#[derive(Clone)]
pub struct NetherNetServePlan {
    /// RakNet too, on the same UDP socket (as a dedicated server does):
    /// not with `--transport nethernet`.
    pub raknet: bool,
    /// Players at once, at most (each transport's).
    pub max_clients: usize,
    /// The server's name in its status.
    pub motd: String,
    /// The operator's key: the identity assertion of every answer.
    pub identity: KeyPair,
    /// DTLS key-log lines appended here.
    pub tls_keylog_out: Option<PathBuf>,
}

/// The plan of `serve --bedrock` with NetherNet: `None` for RakNet only
/// (`transport`: `--transport`, and `--nethernet`, which serves both);
/// players at most, the status's name (`--motd`), the identity key's file,
/// the DTLS key log given or the environment's `SSLKEYLOGFILE`.
pub fn plan(
    (transport, nethernet): (Option<Transport>, bool),
    max_clients: usize,
    motd: Option<String>,
    identity: Option<PathBuf>,
    tls_keylog: Option<PathBuf>,
) -> anyhow::Result<Option<NetherNetServePlan>> {
    let raknet = match (transport, nethernet) {
        (None, false) | (Some(Transport::RakNet), _) => return Ok(None),
        (Some(Transport::NetherNet), _) => false,
        (Some(Transport::Auto), _) | (None, true) => true,
    };
    let identity = match identity {
        Some(path) => KeyPair::load_or_create(&path)
            .map_err(|e| anyhow::anyhow!("--identity {}: {e}", path.display()))?,
        None => KeyPair::generate()?,
    };
    Ok(Some(NetherNetServePlan {
        raknet,
        max_clients,
        motd: motd.unwrap_or_else(|| "raknet-dissect".to_string()),
        identity,
        tls_keylog_out: tls_keylog.or_else(|| std::env::var_os("SSLKEYLOGFILE").map(PathBuf::from)),
    }))
}

/// A NetherNet player's game: from its spawn, with `--replay`, when,
/// and the next scripted packet.
struct Game {
    game: GameServer,
    peer: String,
    playing: Option<(Duration, usize)>,
}

/// `serve --bedrock --nethernet` on `udp` (bound, its pong set; the
/// signaling on TCP on the same port); see the module. `Err` when the TCP
/// port cannot be bound (in words).
pub(crate) fn serve(
    mut udp: super::Server,
    plan: &BedrockServePlan,
    net: &NetherNetServePlan,
    report: &mut dyn Report,
) -> anyhow::Result<Result<Outcome, String>> {
    let bound = udp.local_addr()?;
    let cert = Cert::self_signed("raknet-dissect")?;
    let o = (net.motd.as_str(), net.max_clients);
    let sig = Signaling::new(&plan.version, o, (cert, &net.identity), bound.port())?;
    let mut listener =
        match Listener::bind(bound, sig, net.max_clients, net.tls_keylog_out.clone())? {
            Ok(l) => l,
            Err(why) => return Ok(Err(why)),
        };
    if net.raknet {
        report.record(super::bedrock::raknet_listening(&udp, Some("raknet"))?)?;
    }
    report.record(super::nethernet_listen::listening(bound))?;
    (udp.divert, udp.only_diverted) = (true, !net.raknet);
    let mut raknet = RakNetGames::default();
    let mut games: HashMap<u64, Game> = HashMap::new();
    let mut events = Vec::new();
    let epoch = Instant::now();
    let mut done = false;
    let mut closing: Option<Instant> = None;
    loop {
        let mut fds = listener.fds();
        fds.push(udp.fd());
        let now = Instant::now();
        let mut wake = now + Duration::from_millis(20);
        if let Some(t) = listener.poll_timeout() {
            wake = wake.min(t);
        }
        let raknet_wake = udp
            .listener
            .poll_timeout()
            .map(|t| t.saturating_sub(udp.now()));
        let mut wait = wake.saturating_duration_since(now);
        if let Some(t) = raknet_wake {
            wait = wait.min(t);
        }
        if udp.listener.is_busy() {
            wait = Duration::ZERO;
        }
        super::wait_any(&fds, wait)?;
        listener.signaling(raknet.len(), &mut udp.recorder, report)?;
        // Datagrams: RakNet's to its listener (dropped without `raknet`),
        // STUN and DTLS to the NetherNet player they are for.
        udp.step(udp.now())?;
        let now = Instant::now();
        udp.drain_diverted(|from, d| listener.datagram(now, from, d));
        let t = udp.now();
        done |= raknet.turn(&mut udp.listener, t, plan, report)?;
        events.clear();
        listener.turn(report, &mut events)?;
        let ts = epoch.elapsed().as_secs_f64();
        for e in events.drain(..) {
            match e {
                NetEvent::Joined(id, peer) => {
                    let game = GameServer::new(&plan.version)
                        .map_err(|e| anyhow::anyhow!(e))?
                        .over_nethernet();
                    let peer = peer.to_string();
                    games.insert(
                        id,
                        Game {
                            game,
                            peer,
                            playing: None,
                        },
                    );
                }
                NetEvent::Batch(id, b) => {
                    if let Some(g) = games.get_mut(&id) {
                        g.game.handle(&b);
                    }
                }
                NetEvent::Gone(id) => {
                    games.remove(&id);
                    done |= plan.once;
                }
            }
        }
        for (&id, g) in &mut games {
            if let Some((t0, next)) = &mut g.playing {
                if !super::bedrock::play_due(&mut g.game, plan, (*t0, next), t) {
                    g.playing = None;
                }
            }
            while let Some(batch) = g.game.poll_transmit() {
                listener.send(id, &batch);
            }
            while let Some(e) = g.game.poll_event() {
                let detail = match &e {
                    SessionEvent::Spawned if !plan.script.is_empty() => {
                        g.playing = Some((t, 0));
                        g.game.player.clone()
                    }
                    SessionEvent::LoggedIn | SessionEvent::Spawned => g.game.player.clone(),
                    _ => None,
                };
                let keys = plan.keylog_out.as_deref();
                record_event(report, &g.peer, "c2s", ts, e, keys, detail)?;
            }
        }
        listener.transmit(&mut udp)?;
        // What the last player is owed still goes (RakNet's last
        // acknowledgements, the closing of SCTP).
        if done && closing.is_none() {
            closing = Some(Instant::now() + Duration::from_millis(50));
        }
        if closing.is_some_and(|at| Instant::now() >= at) {
            return Ok(Ok(Outcome::Done));
        }
    }
}
