//! `proxy --listen ADDR --upstream HOST:PORT`: a Bedrock proxy over
//! RakNet. Players connect to our RakNet server on `listen`; for each, our
//! RakNet client connects to the upstream from a socket of its own, and a
//! [`ProxySession`] hands every game packet across, both legs decrypted
//! and encrypted again with their own keys. What each side sent is a
//! `game` record (`--hide` and `--only` choose which are shown), each
//! step a `login` record, and at the end a `game_counts` record counts
//! every packet by name and way.
//!
//! Bounded: at most `max_players` players at once (RakNet's own bound),
//! and for each at most [`MAX_WAITING`] messages waiting for an upstream
//! connection that is not up yet (beyond, the player is dropped).

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::run::{Outcome, Report};
use crate::bedrock::proxy::{Leg, ProxyEvent, ProxySession, Relay, MAX_WAITING};
use crate::capture::write::Recorder;
use crate::records::peer::{
    ConnectedJson, GameCountsJson, PeerGameJson, PeerLoginJson, PeerRecord,
};
use crate::session::handshake::HandshakeError;
use crate::session::{ClientConfig, ClientHandshake, Connection, Event};
use crate::wire::Reliability;

/// What `proxy` does.
#[derive(Debug, Clone)]
pub struct ProxyPlan {
    /// Where players connect.
    pub listen: SocketAddr,
    /// The upstream server, and its name as given (the players' client
    /// data's `ServerAddress`).
    pub upstream: (SocketAddr, String),
    /// The game version spoken until a player names its own.
    pub version: String,
    /// Players at once, at most.
    pub max_players: usize,
    /// Stop once the first player has left.
    pub once: bool,
    /// Both legs' keys appended here.
    pub keylog_out: Option<PathBuf>,
    /// Packets not shown (by name).
    pub hide: Vec<String>,
    /// Only these packets shown (by name), when any is given.
    pub only: Vec<String>,
    /// Both legs' datagrams written here (pcapng), with both legs' keys in
    /// Decryption Secrets Blocks.
    pub write: Option<PathBuf>,
}

/// The plan of `proxy`: players on `listen`, the upstream `upstream`, game
/// `version` or the newest, players at most and `--once`, the key log
/// given or `$BEDROCK_KEYLOG_FILE`, the packets hidden and the only ones
/// shown.
pub fn plan(
    (listen, upstream): (SocketAddr, SocketAddr),
    version: Option<String>,
    (max_players, once): (usize, bool),
    keylog_out: Option<PathBuf>,
    (hide, only): (Vec<String>, Vec<String>),
    write: Option<PathBuf>,
) -> ProxyPlan {
    ProxyPlan {
        listen,
        upstream: (upstream, upstream.to_string()),
        version: version.unwrap_or_else(|| crate::bedrock::speak::newest_version().to_string()),
        max_players,
        once,
        keylog_out: super::bedrock::keylog_path(keylog_out),
        hide,
        only,
        write,
    }
}

impl ProxyPlan {
    fn shown(&self, name: &str) -> bool {
        !self.hide.iter().any(|h| h == name)
            && (self.only.is_empty() || self.only.iter().any(|o| o == name))
    }
}

/// The upstream leg of one player: its own socket, the handshake, then
/// the connection.
struct Upstream {
    s: super::Socket,
    target: SocketAddr,
    local: SocketAddr,
    cfg: ClientConfig,
    hs: Option<ClientHandshake>,
    conn: Option<Connection>,
    /// Connected (ConnectionRequestAccepted came).
    up: bool,
    /// Messages for it before it was up.
    waiting: VecDeque<Vec<u8>>,
    out: Vec<u8>,
    /// The protocol was tried again once (the server named another).
    retried: bool,
    started: Duration,
}

/// What the upstream leg says.
enum UpEvent {
    Connected(Duration),
    Message(Vec<u8>),
    Closed(String),
}

impl Upstream {
    fn new(target: SocketAddr, cfg: ClientConfig) -> io::Result<Upstream> {
        let s = super::Socket::bind(super::wildcard_for(target))?;
        s.sock.connect(target)?;
        let local = s.local_addr()?;
        let now = s.now();
        Ok(Upstream {
            hs: Some(ClientHandshake::new(cfg.clone(), target, local, now)),
            s,
            target,
            local,
            cfg,
            conn: None,
            up: false,
            waiting: VecDeque::new(),
            out: Vec::new(),
            retried: false,
            started: now,
        })
    }

    /// A message for the upstream: sent, or kept until the connection is
    /// up; false when too many wait.
    fn send(&mut self, m: Vec<u8>) -> bool {
        match &mut self.conn {
            Some(c) if self.up => {
                c.send(self.s.now(), &m, Reliability::RELIABLE_ORDERED, 0, None);
                true
            }
            _ if self.waiting.len() >= MAX_WAITING => false,
            _ => {
                self.waiting.push_back(m);
                true
            }
        }
    }

    /// When something is next due, on this leg's clock.
    fn wake(&mut self) -> Duration {
        let now = self.s.now();
        match (&self.hs, &mut self.conn) {
            (Some(hs), _) => hs.poll_timeout(),
            (None, Some(c)) if c.has_events() => now,
            (None, Some(c)) => c.poll_timeout().unwrap_or(now + Duration::from_millis(20)),
            (None, None) => now + Duration::from_secs(1),
        }
    }

    /// Time left until [`Self::wake`].
    fn wait(&mut self) -> Duration {
        let now = self.s.now();
        self.wake().saturating_sub(now)
    }

    /// Send what is due, read what came, drive the handshake and the
    /// connection; every datagram into `rec` too.
    fn turn(&mut self, events: &mut Vec<UpEvent>, rec: &mut Option<Recorder>) {
        if let Err(why) = self.drive(events, rec) {
            events.push(UpEvent::Closed(why));
            self.hs = None;
            self.conn = None;
        }
    }

    fn drive(
        &mut self,
        events: &mut Vec<UpEvent>,
        rec: &mut Option<Recorder>,
    ) -> Result<(), String> {
        let (target, local) = (self.target, self.local);
        let e = |e: io::Error| format!("{target}: {e}");
        let mut record = |src, dst, data: &[u8]| {
            if let Some(r) = rec {
                if r.record(src, dst, data).is_err() {
                    *rec = None;
                }
            }
        };
        if let Some(hs) = &mut self.hs {
            let now = self.s.now();
            if hs
                .poll_transmit(now, &mut self.out)
                .map_err(|x| x.to_string())?
            {
                self.s.sock.send(&self.out).map_err(e)?;
                record(local, target, &self.out);
            }
            while let Some((_, n)) = self.s.recv().map_err(e)? {
                let now = self.s.now();
                record(target, local, &self.s.rbuf[..n]);
                match hs.handle(now, &self.s.rbuf[..n]) {
                    Ok(Some(c)) => {
                        self.conn = Some(c);
                        break;
                    }
                    Ok(None) => {}
                    Err(HandshakeError::IncompatibleProtocol { ours, server })
                        if !self.retried && server != ours =>
                    {
                        // jsp-raknet takes one protocol only: the one it names.
                        self.retried = true;
                        self.cfg.protocol = server;
                        let cfg = self.cfg.clone();
                        *hs = ClientHandshake::new(cfg, target, self.local, now);
                        return Ok(());
                    }
                    Err(x) => return Err(x.to_string()),
                }
            }
            while hs.poll_event().is_some() {}
            if self.conn.is_some() {
                self.hs = None;
            }
        }
        let Some(c) = &mut self.conn else {
            return Ok(());
        };
        let now = self.s.now();
        while c.poll_transmit(now, &mut self.out) {
            if !self.s.send_to(target, &self.out).map_err(e)? {
                break;
            }
            record(local, target, &self.out);
        }
        while let Some((from, n)) = self.s.recv().map_err(e)? {
            if from == target {
                record(target, local, &self.s.rbuf[..n]);
                c.handle(self.s.now(), &self.s.rbuf[..n]);
            }
        }
        while let Some(ev) = c.poll_event() {
            match ev {
                Event::Connected => {
                    self.up = true;
                    events.push(UpEvent::Connected(self.s.now() - self.started));
                    let now = self.s.now();
                    while let Some(m) = self.waiting.pop_front() {
                        c.send(now, &m, Reliability::RELIABLE_ORDERED, 0, None);
                    }
                }
                Event::Message(m) if m.data.first() == Some(&0xfe) => {
                    events.push(UpEvent::Message(m.data.to_vec()));
                }
                Event::Closed(r) => {
                    return Err(format!("the upstream connection closed: {r:?}"));
                }
                _ => {}
            }
        }
        let now = self.s.now();
        while c.poll_transmit(now, &mut self.out) {
            if !self.s.send_to(target, &self.out).map_err(e)? {
                break;
            }
            record(local, target, &self.out);
        }
        Ok(())
    }

    /// Send what is queued now (the batches a turn handed it), not at the
    /// next timer.
    fn flush(&mut self, rec: &mut Option<Recorder>) {
        let Some(c) = self.conn.as_mut().filter(|_| self.up) else {
            return;
        };
        let now = self.s.now();
        while c.poll_transmit(now, &mut self.out) {
            match self.s.send_to(self.target, &self.out) {
                Ok(true) => {
                    if let Some(r) = rec {
                        let _ = r.record(self.local, self.target, &self.out);
                    }
                }
                _ => break,
            }
        }
    }

    /// Disconnect, best effort.
    fn close(&mut self, rec: &mut Option<Recorder>) {
        if let Some(c) = &mut self.conn {
            let now = self.s.now();
            c.close(now);
            while c.poll_transmit(now, &mut self.out) {
                if self.s.sock.send(&self.out).is_ok() {
                    if let Some(r) = rec {
                        let _ = r.record(self.local, self.target, &self.out);
                    }
                }
            }
        }
    }
}

/// Bytes queued toward one side and not yet sent, at most: a side that
/// does not keep up (a player that stopped acknowledging while the
/// upstream streams chunks) ends its session instead of growing the
/// proxy's memory.
pub const MAX_QUEUED: usize = 32 << 20;

/// Transferred players waiting to come back, at most (the oldest goes).
const MAX_TRANSFERS: usize = 256;
/// How long a transferred player has to come back.
const TRANSFER_WAIT: Duration = Duration::from_secs(60);

/// One player through the proxy.
struct Player {
    addr: SocketAddr,
    up: Upstream,
    session: ProxySession,
    /// Why it ends, once it does.
    ended: Option<String>,
    /// The upstream is gone: the player's connection closes at this time
    /// (on the server's clock) unless the player closes it first.
    closing: Option<(Duration, String)>,
}

/// Packets by name, each way.
#[derive(Default)]
struct Counts {
    c2s: BTreeMap<String, u64>,
    s2c: BTreeMap<String, u64>,
    players: u64,
}

/// `proxy`; see the module. Ends with `--once` when the first player has
/// left, or when `stop` is set (SIGINT), with the counts.
pub fn proxy(
    plan: &ProxyPlan,
    stop: &AtomicBool,
    report: &mut dyn Report,
) -> anyhow::Result<Outcome> {
    let guid = super::run::new_guid()?;
    // The version's definitions read now, not while the first player's
    // handshake waits (a debug build takes a tenth of a second).
    ProxySession::new(&plan.version, "", (false, false)).map_err(|e| anyhow::anyhow!(e))?;
    let dialect = super::bedrock::game_dialect_of(&plan.version, None, None);
    let mut cfg = dialect.server(None);
    cfg.guid = guid;
    cfg.max_clients = plan.max_players;
    // Every Bedrock client's RakNet: 10 (jsp-raknet, the game before
    // 1.19.30) or 11.
    cfg.accept_protocols = vec![10, 11];
    let mut server = match super::Server::bind(plan.listen, cfg) {
        Ok(s) => s,
        Err(e) => anyhow::bail!("cannot listen on {}: {e}", plan.listen),
    };
    let port = server.local_addr()?.port();
    // The upstream's pong, as it gives it, else ours.
    let pong = super::ping(plan.upstream.0, guid, Duration::from_millis(500))
        .ok()
        .flatten()
        .map(|p| p.payload)
        .unwrap_or_else(|| {
            super::bedrock::bedrock_pong(&plan.version, guid, port, plan.max_players)
        });
    server.set_pong(pong);
    if let Some(path) = &plan.write {
        let r = Recorder::create(path);
        server.recorder =
            Some(r.map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?);
    }
    report.record(super::bedrock::raknet_listening(&server, None)?)?;
    let mut players: Vec<Player> = Vec::new();
    // Players transferred: their address, where to, and since when.
    let mut transfers: VecDeque<(std::net::IpAddr, SocketAddr, String, std::time::Instant)> =
        VecDeque::new();
    let mut counts = Counts::default();
    let mut done = false;
    while !done && !stop.load(Ordering::Relaxed) {
        let mut fds = vec![server.s.sock.as_raw_fd()];
        fds.extend(players.iter().map(|p| p.up.s.sock.as_raw_fd()));
        let mut wait = Duration::from_millis(20);
        for p in &mut players {
            wait = wait.min(p.up.wait());
        }
        if let Some(t) = server.listener.poll_timeout() {
            wait = wait.min(t.saturating_sub(server.now()));
        }
        if server.listener.is_busy() {
            wait = Duration::ZERO;
        }
        super::wait_any(&fds, wait)?;
        let now = server.now();
        server.step(now)?;
        // The ACKs of what came go before the turn's work (a Login's
        // checks and signatures take a debug build tens of ms).
        server.step(server.now())?;
        let ts = now.as_secs_f64();
        while let Some((addr, e)) = server.poll_event() {
            match e {
                Event::Connected => {
                    players.retain(|p| p.addr != addr);
                    let cfg = dialect.client(None)?;
                    // A player the upstream transferred comes back: its
                    // session goes on to the server it was sent to.
                    transfers.retain(|t| t.3.elapsed() < TRANSFER_WAIT);
                    let (target, name) = match transfers.iter().position(|t| t.0 == addr.ip()) {
                        Some(i) => {
                            let t = transfers.remove(i).unwrap_or_else(|| unreachable!("found"));
                            (t.1, t.2)
                        }
                        None => plan.upstream.clone(),
                    };
                    let mut session = ProxySession::new(&plan.version, &name, (false, false))
                        .map_err(|e| anyhow::anyhow!(e))?;
                    let via = super::local_toward(server.local_addr()?, addr);
                    session.transfer_via = Some((via.ip().to_string(), via.port()));
                    let up = Upstream::new(target, cfg)?;
                    let c = server.listener.connection(addr);
                    report.record(PeerRecord::Connected(ConnectedJson {
                        kind: "connected",
                        peer: addr.to_string(),
                        guid: c
                            .and_then(|c| c.peer_guid)
                            .map(crate::records::peer::guid_hex),
                        mtu: c.map_or(0, |c| c.mtu()),
                        handshake_ms: None,
                        text: Some(format!(
                            "player {addr} connected; its upstream leg from {}",
                            up.local
                        )),
                    }))?;
                    counts.players += 1;
                    players.push(Player {
                        addr,
                        up,
                        session,
                        ended: None,
                        closing: None,
                    });
                }
                Event::Message(m) if m.data.first() == Some(&0xfe) => {
                    if let Some(p) = players.iter_mut().find(|p| p.addr == addr) {
                        p.session.from_player(&m.data);
                    }
                }
                Event::Closed(r) => {
                    if let Some(p) = players.iter_mut().find(|p| p.addr == addr) {
                        p.ended.get_or_insert(format!("the player left: {r:?}"));
                    }
                }
                _ => {}
            }
        }
        let mut up_events = Vec::new();
        for p in &mut players {
            up_events.clear();
            p.up.turn(&mut up_events, &mut server.recorder);
            for e in up_events.drain(..) {
                match e {
                    UpEvent::Connected(t) => {
                        report.record(PeerRecord::Connected(ConnectedJson {
                            kind: "connected",
                            peer: p.up.target.to_string(),
                            guid: None,
                            mtu: p.up.conn.as_ref().map_or(0, Connection::mtu),
                            handshake_ms: Some(crate::records::peer::ms(t)),
                            text: Some(format!(
                                "upstream {} connected for player {} in {:.3} ms",
                                p.up.target,
                                p.addr,
                                crate::records::peer::ms(t)
                            )),
                        }))?
                    }
                    UpEvent::Message(m) => p.session.from_upstream(&m),
                    // The player hears of it (a Disconnect, unless one
                    // went either way) and has a moment to leave itself.
                    UpEvent::Closed(why) if p.closing.is_none() => {
                        let s = &mut p.session;
                        if !s.player_left && !s.server_left {
                            let m = format!("raknet-dissect proxy: the upstream is gone ({why})");
                            if let Err(e) = s.disconnect_player(&m) {
                                report.warn(&format!("{}: {e}", p.addr));
                            }
                        }
                        let grace = Duration::from_millis(if s.player_left { 2000 } else { 500 });
                        p.closing = Some((now + grace, why));
                    }
                    UpEvent::Closed(_) => {}
                }
            }
            // Keys first: a leg's key goes into the capture before its
            // first encrypted batch.
            while let Some(e) = p.session.poll_event() {
                if let ProxyEvent::Transfer(host, port) = &e {
                    use std::net::ToSocketAddrs;
                    let to = format!("{host}:{port}");
                    match (host.as_str(), *port)
                        .to_socket_addrs()
                        .map(|mut a| a.next())
                    {
                        Ok(Some(target)) => {
                            if transfers.len() >= MAX_TRANSFERS {
                                transfers.pop_front();
                            }
                            let since = std::time::Instant::now();
                            transfers.push_back((p.addr.ip(), target, to, since));
                        }
                        _ => report.warn(&format!(
                            "{}: a Transfer to {to}, which does not resolve",
                            p.addr
                        )),
                    }
                }
                if let (ProxyEvent::KeyLog(_, line), Some(r)) = (&e, &mut server.recorder) {
                    // For the datagrams after it: the leg's encrypted batches.
                    let kind = crate::capture::Secrets::BEDROCK_KEY_LOG;
                    if let Err(e) = r.secrets(kind, format!("{line}\n").as_bytes()) {
                        server.record_error = Some(e);
                        server.recorder = None;
                    }
                }
                said(plan, report, p.addr, ts, e, &mut counts)?;
            }
            while let Some(m) = p.session.poll_to_upstream() {
                if !p.up.send(m) {
                    p.ended.get_or_insert(format!(
                        "more than {MAX_WAITING} messages waited for the upstream"
                    ));
                }
            }
            p.up.flush(&mut server.recorder);
            while let Some(m) = p.session.poll_to_player() {
                server.send(p.addr, &m, Reliability::RELIABLE_ORDERED, 0);
            }
            let to_player = server
                .listener
                .connection(p.addr)
                .map_or(0, Connection::queued_bytes);
            let to_upstream = p.up.conn.as_ref().map_or(0, Connection::queued_bytes);
            if to_player.max(to_upstream) > MAX_QUEUED {
                let who = if to_player > MAX_QUEUED {
                    "the player"
                } else {
                    "the upstream"
                };
                p.ended.get_or_insert(format!(
                    "{who} does not keep up: more than {} MB queued toward it",
                    MAX_QUEUED >> 20
                ));
            }
        }
        for p in &mut players {
            if p.closing.as_ref().is_some_and(|(at, _)| *at <= now) {
                let (_, why) = p.closing.take().unwrap_or_default();
                p.ended.get_or_insert(why);
            }
        }
        // What the turn queued (ACKs, the relayed batches) goes now.
        server.step(server.now())?;
        let mut i = 0;
        while i < players.len() {
            let Some(why) = players[i].ended.clone() else {
                i += 1;
                continue;
            };
            let mut p = players.remove(i);
            p.up.close(&mut server.recorder);
            server.listener.close(now, p.addr);
            report.record(PeerRecord::Login(PeerLoginJson {
                kind: "login",
                peer: p.addr.to_string(),
                ts: server.now().as_secs_f64(),
                event: "closed",
                detail: why,
            }))?;
            done |= plan.once && !transfers.iter().any(|t| t.0 == p.addr.ip());
        }
    }
    // What is owed still goes (the players' last acknowledgements).
    for p in &mut players {
        p.up.close(&mut server.recorder);
    }
    let until = server.now() + Duration::from_millis(50);
    while server.now() < until {
        server.step(until)?;
    }
    if let Some(mut r) = server.recorder.take() {
        if let Err(e) = r.flush() {
            server.record_error = Some(e);
        }
    }
    if let (Some(e), Some(path)) = (server.record_error.take(), &plan.write) {
        report.warn(&format!("{}: the capture stopped: {e}", path.display()));
    }
    report.record(PeerRecord::GameCounts(GameCountsJson {
        kind: "game_counts",
        players: counts.players,
        c2s: counts.c2s,
        s2c: counts.s2c,
    }))?;
    Ok(Outcome::Done)
}

/// A session's event as a record (a packet counted, and shown unless
/// hidden); keys appended to the key log.
fn said(
    plan: &ProxyPlan,
    report: &mut dyn Report,
    addr: SocketAddr,
    ts: f64,
    e: ProxyEvent,
    counts: &mut Counts,
) -> io::Result<()> {
    let login = |event, detail| {
        PeerRecord::Login(PeerLoginJson {
            kind: "login",
            peer: addr.to_string(),
            ts,
            event,
            detail,
        })
    };
    match e {
        ProxyEvent::Packet {
            dir,
            name,
            fields,
            relay,
            error,
            ..
        } => {
            let by = match dir {
                crate::bedrock::proxy::Dir::C2s => &mut counts.c2s,
                crate::bedrock::proxy::Dir::S2c => &mut counts.s2c,
            };
            *by.entry(name.clone()).or_default() += 1;
            if !plan.shown(&name) {
                return Ok(());
            }
            report.record(PeerRecord::Game(PeerGameJson {
                kind: "game",
                peer: addr.to_string(),
                dir: dir.as_str(),
                ts,
                name,
                fields,
                relay: match relay {
                    Relay::Passed => None,
                    Relay::Rewritten => Some("rewritten"),
                    Relay::Consumed => Some("consumed"),
                },
                error,
            }))
        }
        ProxyEvent::KeyLog(leg, line) => {
            if let Some(path) = &plan.keylog_out {
                if let Err(e) = super::bedrock::append_key_log(path, &line) {
                    report.warn(&format!("cannot write the key log {}: {e}", path.display()));
                }
            }
            let leg = match leg {
                Leg::Player => "the player's leg",
                Leg::Upstream => "the upstream leg",
            };
            report.record(login("key_log", format!("{leg}: {line}")))
        }
        ProxyEvent::Login(name) => report.record(login("login", name)),
        ProxyEvent::Transfer(host, port) => {
            let d = format!("to {host}:{port}: the player was sent the proxy's address, and its next session goes there");
            report.record(login("transfer", d))
        }
        ProxyEvent::Relaying => report.record(login("relaying", String::new())),
        ProxyEvent::Error(leg, why) => {
            let leg = match leg {
                Leg::Player => "from the player",
                Leg::Upstream => "from the upstream",
            };
            report.record(login("error", format!("{leg}: {why}")))
        }
    }
}
