//! `proxy --listen ADDR --upstream HOST:PORT`: a Bedrock proxy on either
//! transport. Players connect to our server on `listen`, over RakNet or
//! NetherNet (both on one port number, as a dedicated server: the
//! datagrams of STUN and DTLS go to the NetherNet listener
//! (`peer::nethernet_listen`), the rest to RakNet);
//! for each, our client connects to the upstream from a socket of its
//! own, over RakNet or NetherNet (the offer posted from a thread, the
//! rest on the proxy's loop), and a [`ProxySession`] hands every game
//! packet across, both legs decrypted and encrypted again with their own
//! keys (a NetherNet leg has no encryption handshake of its own). What each side sent is a
//! `game` record (`--hide` and `--only` choose which are shown), each
//! step a `login` record, and at the end a `game_counts` record counts
//! every packet by name and way.
//!
//! Bounded: at most `max_players` players at once (each transport's),
//! and for each at most [`MAX_WAITING`] messages waiting for an upstream
//! connection that is not up yet (beyond, the player is dropped).

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::nethernet::{Joined, NetherNetLink, Offer};
use super::nethernet_listen::{Listener, NetEvent, Signaling};
use super::run::{Endpoint, Outcome, Report, Transport};
use super::signaling::{exchange, Answer, SignalingError};
use crate::bedrock::proxy::{Leg, ProxyEvent, ProxySession, Relay, MAX_WAITING};
use crate::capture::write::Recorder;
use crate::records::peer::{
    ConnectedJson, GameCountsJson, PeerGameJson, PeerLoginJson, PeerRecord,
};
use crate::session::handshake::HandshakeError;
use crate::session::{ClientConfig, ClientHandshake, Connection, Event};
use crate::wire::Reliability;

/// What `-Y` and `-e` make of the proxy's game packets (the command line
/// gives one: the display layer's filter and field export, which read a
/// packet as `game` reads one of a capture).
pub trait View: Send + Sync + std::fmt::Debug {
    /// `None`: the packet is not shown; `Some(None)`: its record is;
    /// `Some(Some(row))`: this row (`-T fields`) in its place.
    fn look(&self, r: &crate::records::game::GameRecord<'_>) -> Option<Option<String>>;
    /// The rows' header line, if there is one (`-E header=y`).
    fn header(&self) -> String;
}

/// What `proxy` does.
#[derive(Debug, Clone)]
pub struct ProxyPlan {
    /// Where players connect, over which transport (`auto`: both).
    pub listen: (Transport, SocketAddr),
    /// The upstream server, and its name as given (the players' client
    /// data's `ServerAddress`).
    pub upstream: (SocketAddr, String),
    /// The upstream's transport (`auto`: NetherNet when its signaling
    /// answers the status request, else RakNet, as the game's clients try).
    pub upstream_transport: Transport,
    /// The game version spoken until a player names its own.
    pub version: String,
    /// Players at once, at most.
    pub max_players: usize,
    /// Bytes queued toward either side of a session, at most
    /// ([`MAX_QUEUED`] unless given).
    pub max_queued: usize,
    /// Stop once the first player has left.
    pub once: bool,
    /// Both legs' keys appended here.
    pub keylog_out: Option<PathBuf>,
    /// The NetherNet legs' DTLS keys appended here.
    pub tls_keylog_out: Option<PathBuf>,
    /// Packets not shown (by name).
    pub hide: Vec<String>,
    /// Only these packets shown (by name), when any is given.
    pub only: Vec<String>,
    /// Both legs' datagrams written here (pcapng), with both legs' keys in
    /// Decryption Secrets Blocks.
    pub write: Option<PathBuf>,
    /// `-Y` over the game packets (`game`'s field names), and `-T fields`
    /// rows in place of the records (`-e`), when given.
    pub view: Option<std::sync::Arc<dyn View>>,
}

/// The plan of `proxy`: players on `listen`, the upstream `upstream`, game
/// `version` or the newest, players at most and `--once`, the key log
/// given or `$BEDROCK_KEYLOG_FILE` and the DTLS key log given or
/// `$SSLKEYLOGFILE`, the packets hidden and the only ones shown.
pub fn plan(
    (listen, upstream): (Endpoint, Endpoint),
    version: Option<String>,
    (max_players, once, max_queued): (usize, bool, usize),
    (keylog_out, tls_keylog_out): (Option<PathBuf>, Option<PathBuf>),
    (hide, only): (Vec<String>, Vec<String>),
    write: Option<PathBuf>,
) -> ProxyPlan {
    ProxyPlan {
        listen: (listen.transport, listen.addr),
        upstream: (upstream.addr, upstream.addr.to_string()),
        upstream_transport: upstream.transport,
        tls_keylog_out: tls_keylog_out
            .or_else(|| std::env::var_os("SSLKEYLOGFILE").map(PathBuf::from)),
        version: version.unwrap_or_else(|| crate::bedrock::speak::newest_version().to_string()),
        max_players,
        once,
        max_queued,
        keylog_out: super::bedrock::keylog_path(keylog_out),
        hide,
        only,
        write,
        view: None,
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

/// Why a session ends when its upstream is not up in time.
fn waited_too_many() -> String {
    format!("more than {MAX_WAITING} messages waited for the upstream")
}

/// What the upstream leg says.
enum UpEvent {
    Connected(Duration),
    /// A NetherNet leg's channels are open.
    Joined(Joined),
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
    /// up; `Err` when too many wait.
    fn send(&mut self, m: Vec<u8>) -> Result<(), String> {
        match &mut self.conn {
            Some(c) if self.up => {
                c.send(self.s.now(), &m, Reliability::RELIABLE_ORDERED, 0, None);
                Ok(())
            }
            _ if self.waiting.len() >= MAX_WAITING => Err(waited_too_many()),
            _ => {
                self.waiting.push_back(m);
                Ok(())
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

/// The upstream leg of one player over NetherNet: the offer posted from
/// a thread of its own (the signaling's TCP exchange blocks), then the
/// link run by the proxy's loop, without blocking.
struct NetUp {
    target: SocketAddr,
    /// Its DTLS key-log line appended here.
    tls_keylog_out: Option<PathBuf>,
    local: SocketAddr,
    state: NetState,
    /// Messages for it before its channels were open.
    waiting: VecDeque<Vec<u8>>,
    started: Instant,
    /// What the answer said, for the `joined` record.
    joined: Option<Joined>,
}

enum NetState {
    /// The offer is posted; the answer comes through the channel.
    Asking(
        Option<Box<Offer>>,
        mpsc::Receiver<Result<Answer, SignalingError>>,
    ),
    /// ICE, DTLS and SCTP under way.
    Joining(Box<NetherNetLink>),
    /// Both channels open.
    Up(Box<NetherNetLink>),
    Gone,
}

/// How long a NetherNet upstream has to open its channels, the offer's
/// answer included.
const NETHERNET_JOIN: Duration = Duration::from_secs(10);

impl NetUp {
    fn new(target: SocketAddr, tls_keylog_out: Option<PathBuf>) -> io::Result<NetUp> {
        let offer = Offer::new(target, "raknet-dissect proxy", None)
            .map_err(|e| io::Error::other(e.to_string()))?;
        let local = offer.local()?;
        let (tx, rx) = mpsc::channel();
        let (path, sdp) = (offer.path.clone(), offer.sdp.clone());
        std::thread::Builder::new()
            .name("nethernet-offer".into())
            .spawn(move || {
                let a = exchange(
                    target,
                    "POST",
                    &path,
                    Some("application/sdp"),
                    sdp.as_bytes(),
                    NETHERNET_JOIN,
                );
                let _ = tx.send(a);
            })?;
        Ok(NetUp {
            target,
            tls_keylog_out,
            local,
            state: NetState::Asking(Some(Box::new(offer)), rx),
            waiting: VecDeque::new(),
            started: Instant::now(),
            joined: None,
        })
    }

    fn link(&self) -> Option<&NetherNetLink> {
        match &self.state {
            NetState::Joining(l) | NetState::Up(l) => Some(&**l),
            _ => None,
        }
    }

    /// A batch for the upstream: queued, or kept until the channels are
    /// open; `Err` when it cannot go (too large, or too many wait).
    fn send(&mut self, m: Vec<u8>) -> Result<(), String> {
        match &mut self.state {
            NetState::Up(l) => l.queue_batch(&m).map_err(|e| e.to_string()),
            NetState::Gone => Ok(()),
            _ if self.waiting.len() >= MAX_WAITING => Err(waited_too_many()),
            _ => {
                self.waiting.push_back(m);
                Ok(())
            }
        }
    }

    fn wait(&mut self) -> Duration {
        match &mut self.state {
            // The answer comes through a channel poll does not see.
            NetState::Asking(..) => Duration::from_millis(5),
            NetState::Joining(l) | NetState::Up(l) => {
                l.poll_timeout().map_or(Duration::from_millis(20), |t| {
                    t.saturating_duration_since(Instant::now())
                })
            }
            NetState::Gone => Duration::from_secs(1),
        }
    }

    fn turn(&mut self, events: &mut Vec<UpEvent>, rec: &mut Option<Recorder>) {
        if let Err(why) = self.drive(events, rec) {
            events.push(UpEvent::Closed(why));
            if let Some(l) = self.link_mut() {
                let _ = l.close(rec);
            }
            self.state = NetState::Gone;
        }
    }

    fn link_mut(&mut self) -> Option<&mut NetherNetLink> {
        match &mut self.state {
            NetState::Joining(l) | NetState::Up(l) => Some(&mut **l),
            _ => None,
        }
    }

    fn drive(
        &mut self,
        events: &mut Vec<UpEvent>,
        rec: &mut Option<Recorder>,
    ) -> Result<(), String> {
        let target = self.target;
        if let NetState::Asking(offer, rx) = &mut self.state {
            let answer = match rx.try_recv() {
                Ok(Ok(a)) => a,
                Ok(Err(e)) => return Err(format!("the offer to {target}: {e}")),
                Err(mpsc::TryRecvError::Empty) => return Ok(()),
                Err(mpsc::TryRecvError::Disconnected) => {
                    return Err("the offer's thread ended without an answer".into())
                }
            };
            if let Some(r) = rec {
                if answer.transcript.record(r).is_err() {
                    *rec = None;
                }
            }
            let offer = offer.take().ok_or("the offer was answered twice")?;
            let (link, joined) = offer
                .answered(&answer, self.tls_keylog_out.clone(), &mut |_, _| {})
                .map_err(|e| format!("{target}: {e}"))?;
            self.joined = Some(joined);
            self.state = NetState::Joining(Box::new(link));
        }
        let joining = matches!(self.state, NetState::Joining(_));
        let Some(l) = self.link_mut() else {
            return Ok(());
        };
        l.turn(rec).map_err(|e| format!("{target}: {e}"))?;
        while let Some(b) = l.take_batch() {
            events.push(UpEvent::Message(b));
        }
        let ended = l.ended().map(str::to_owned);
        let open = l.is_open();
        if let Some(why) = ended {
            return Err(format!("the upstream's association ended: {why}"));
        }
        if joining && open {
            let NetState::Joining(mut l) = std::mem::replace(&mut self.state, NetState::Gone)
            else {
                unreachable!("joining")
            };
            for m in self.waiting.drain(..) {
                l.queue_batch(&m).map_err(|e| e.to_string())?;
            }
            l.flush(rec).map_err(|e| e.to_string())?;
            let remote = l.remote();
            self.state = NetState::Up(l);
            if let Some(mut j) = self.joined.take() {
                j.took = self.started.elapsed();
                j.remote = remote.unwrap_or(j.remote);
                events.push(UpEvent::Joined(j));
            }
        } else if joining && self.started.elapsed() > NETHERNET_JOIN {
            return Err(format!(
                "no open channels within {} s (ICE, DTLS or SCTP did not finish)",
                NETHERNET_JOIN.as_secs()
            ));
        }
        Ok(())
    }
}

/// A player's upstream leg, on either transport.
enum UpLeg {
    RakNet(Box<Upstream>),
    NetherNet(Box<NetUp>),
}

impl UpLeg {
    /// The leg to `target`, over NetherNet (its DTLS key-log line to
    /// `tls`) or RakNet (with `cfg`).
    fn new(
        target: SocketAddr,
        nethernet: bool,
        cfg: ClientConfig,
        tls: Option<PathBuf>,
    ) -> io::Result<UpLeg> {
        Ok(match nethernet {
            true => UpLeg::NetherNet(Box::new(NetUp::new(target, tls)?)),
            false => UpLeg::RakNet(Box::new(Upstream::new(target, cfg)?)),
        })
    }

    fn target(&self) -> SocketAddr {
        match self {
            UpLeg::RakNet(u) => u.target,
            UpLeg::NetherNet(n) => n.target,
        }
    }

    fn local(&self) -> SocketAddr {
        match self {
            UpLeg::RakNet(u) => u.local,
            UpLeg::NetherNet(n) => n.local,
        }
    }

    fn transport(&self) -> &'static str {
        match self {
            UpLeg::RakNet(_) => "RakNet",
            UpLeg::NetherNet(_) => "NetherNet",
        }
    }

    fn fd(&self) -> Option<std::os::fd::RawFd> {
        match self {
            UpLeg::RakNet(u) => Some(u.s.sock.as_raw_fd()),
            UpLeg::NetherNet(n) => n.link().map(NetherNetLink::fd),
        }
    }

    fn wait(&mut self) -> Duration {
        match self {
            UpLeg::RakNet(u) => u.wait(),
            UpLeg::NetherNet(n) => n.wait(),
        }
    }

    fn turn(&mut self, events: &mut Vec<UpEvent>, rec: &mut Option<Recorder>) {
        match self {
            UpLeg::RakNet(u) => u.turn(events, rec),
            UpLeg::NetherNet(n) => n.turn(events, rec),
        }
    }

    fn send(&mut self, m: Vec<u8>) -> Result<(), String> {
        match self {
            UpLeg::RakNet(u) => u.send(m),
            UpLeg::NetherNet(n) => n.send(m),
        }
    }

    fn flush(&mut self, rec: &mut Option<Recorder>) {
        match self {
            UpLeg::RakNet(u) => u.flush(rec),
            UpLeg::NetherNet(n) => {
                if let NetState::Up(l) = &mut n.state {
                    let _ = l.flush(rec);
                }
            }
        }
    }

    fn close(&mut self, rec: &mut Option<Recorder>) {
        match self {
            UpLeg::RakNet(u) => u.close(rec),
            UpLeg::NetherNet(n) => {
                if let Some(l) = n.link_mut() {
                    let _ = l.close(rec);
                }
            }
        }
    }

    /// Bytes queued toward the upstream, not yet acknowledged.
    fn queued(&self) -> usize {
        match self {
            UpLeg::RakNet(u) => u.conn.as_ref().map_or(0, Connection::queued_bytes),
            UpLeg::NetherNet(n) => n.link().map_or(0, NetherNetLink::buffered),
        }
    }

    /// Nothing more to do: the connection closed (or never was).
    fn is_done(&self) -> bool {
        match self {
            UpLeg::RakNet(u) => u.hs.is_none() && u.conn.as_ref().is_none_or(Connection::is_closed),
            UpLeg::NetherNet(n) => n.link().is_none_or(|l| l.ended().is_some()),
        }
    }

    fn mtu(&self) -> u16 {
        match self {
            UpLeg::RakNet(u) => u.conn.as_ref().map_or(0, Connection::mtu),
            UpLeg::NetherNet(_) => 0,
        }
    }
}

/// Bytes queued toward one side of a session and not yet sent, at most,
/// unless `--max-queued` says otherwise: a side that does not keep up (a
/// player that stopped acknowledging while the upstream streams chunks)
/// ends its session instead of growing the proxy's memory.
pub const MAX_QUEUED: usize = 32 << 20;

/// How long the proxy waits for the status of a server a player is
/// transferred to (`auto`), its loop stopped meanwhile.
const TRANSFER_STATUS: Duration = Duration::from_millis(500);

/// Whether the signaling of `target` answers NetherNet's status request
/// (`GET /v1/join`) with a 2xx within `timeout`.
fn speaks_nethernet(target: SocketAddr, timeout: Duration) -> bool {
    super::signaling::join_status(target, timeout).is_ok_and(|a| (200..300).contains(&a.status))
}

/// Transferred players waiting to come back, at most (the oldest goes).
const MAX_TRANSFERS: usize = 256;
/// How long a transferred player has to come back.
const TRANSFER_WAIT: Duration = Duration::from_secs(60);

/// One player through the proxy.
struct Player {
    /// Its address (over NetherNet, its signaling connection's).
    addr: SocketAddr,
    /// Over NetherNet: its id at the NetherNet listener.
    net: Option<u64>,
    /// Its number, from 1 (the `flow` of `-Y` and `-e`).
    n: u32,
    up: UpLeg,
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

/// A player transferred: its address, where to (and the name given),
/// since when, and whether over NetherNet.
type Transferred = (std::net::IpAddr, SocketAddr, String, Instant, bool);

/// The proxy's state: the players' side (RakNet, and NetherNet on the
/// same port), the players, the transfers awaited.
struct Proxy<'p> {
    plan: &'p ProxyPlan,
    server: super::Server,
    net: Option<Listener>,
    dialect: super::run::Dialect,
    /// The upstream is spoken to over NetherNet.
    up_nethernet: bool,
    players: Vec<Player>,
    /// Upstream legs closing (their Disconnect acknowledged, or a second).
    leaving: Vec<(UpLeg, Instant)>,
    transfers: VecDeque<Transferred>,
    counts: Counts,
    done: bool,
}

/// How long a closing upstream leg has to see its Disconnect through.
const LEAVING: Duration = Duration::from_secs(1);

/// Whether `--listen` takes NetherNet players: `nethernet://`, or `auto`
/// (both, as a dedicated server does, when the TCP port is free).
fn listens_nethernet(t: Transport) -> bool {
    t != Transport::RakNet
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
    let mut server = match super::Server::bind(plan.listen.1, cfg) {
        Ok(s) => s,
        Err(e) => anyhow::bail!("cannot listen on {}: {e}", plan.listen.1),
    };
    let bound = server.local_addr()?;
    let up_nethernet = match plan.upstream_transport {
        Transport::Auto => {
            let yes = speaks_nethernet(plan.upstream.0, Duration::from_secs(2));
            let chose = if yes { "NetherNet" } else { "RakNet" };
            report.warn(&format!(
                "{}: {} NetherNet status: the upstream legs go over {chose}",
                plan.upstream.0,
                if yes { "a" } else { "no" }
            ));
            yes
        }
        t => t == Transport::NetherNet,
    };
    // The upstream's pong, as it gives it (RakNet), else ours.
    let pong = (!up_nethernet)
        .then(|| super::ping(plan.upstream.0, guid, Duration::from_millis(500)))
        .and_then(Result::ok)
        .flatten()
        .map(|p| p.payload)
        .unwrap_or_else(|| {
            super::bedrock::bedrock_pong(&plan.version, guid, bound.port(), plan.max_players)
        });
    server.set_pong(pong);
    let net = match listens_nethernet(plan.listen.0) {
        true => {
            let cert = crate::nethernet::cert::Cert::self_signed("raknet-dissect")?;
            let key = crate::bedrock::identity::KeyPair::generate()?;
            let o = ("raknet-dissect proxy", plan.max_players);
            let sig = Signaling::new(&plan.version, o, (cert, &key), bound.port())?;
            let tls = plan.tls_keylog_out.clone();
            match Listener::bind(bound, sig, plan.max_players, tls)? {
                Ok(l) => Some(l),
                Err(why) if plan.listen.0 == Transport::NetherNet => anyhow::bail!(why),
                Err(why) => {
                    report.warn(&format!("{why}: players over RakNet only"));
                    None
                }
            }
        }
        false => None,
    };
    (server.divert, server.only_diverted) = (net.is_some(), plan.listen.0 == Transport::NetherNet);
    if let Some(path) = &plan.write {
        let r = Recorder::create(path);
        server.recorder =
            Some(r.map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?);
    }
    if plan.listen.0 != Transport::NetherNet {
        let t = net.as_ref().map(|_| "raknet");
        report.record(super::bedrock::raknet_listening(&server, t)?)?;
    }
    if net.is_some() {
        report.record(super::nethernet_listen::listening(bound))?;
    }
    if let Some(header) = plan.view.as_ref().map(|v| v.header()) {
        if !header.is_empty() {
            report.record(PeerRecord::Row(header))?;
        }
    }
    let mut p = Proxy {
        plan,
        server,
        net,
        dialect,
        up_nethernet,
        players: Vec::new(),
        leaving: Vec::new(),
        transfers: VecDeque::new(),
        counts: Counts::default(),
        done: false,
    };
    while !p.done && !stop.load(Ordering::Relaxed) {
        p.turn(report)?;
    }
    p.finish(report)
}

impl Proxy<'_> {
    /// One turn: wait for a datagram, a connection or a timer; then the
    /// players' side, every player's session and upstream leg, and the
    /// players that ended.
    fn turn(&mut self, report: &mut dyn Report) -> anyhow::Result<()> {
        let server = &mut self.server;
        let mut fds = vec![server.fd()];
        fds.extend(self.players.iter().filter_map(|p| p.up.fd()));
        fds.extend(self.leaving.iter().filter_map(|l| l.0.fd()));
        let mut wait = Duration::from_millis(20);
        for p in &mut self.players {
            wait = wait.min(p.up.wait());
        }
        if let Some(t) = server.listener.poll_timeout() {
            wait = wait.min(t.saturating_sub(server.now()));
        }
        if let Some(net) = &mut self.net {
            fds.extend(net.fds());
            if let Some(t) = net.poll_timeout() {
                wait = wait.min(t.saturating_duration_since(Instant::now()));
            }
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
        self.raknet_players(report)?;
        self.nethernet_players(report)?;
        let mut up_events = Vec::new();
        for i in 0..self.players.len() {
            up_events.clear();
            self.player_turn(i, now, ts, &mut up_events, report)?;
        }
        for p in &mut self.players {
            if p.closing.as_ref().is_some_and(|(at, _)| *at <= now) {
                let (_, why) = p.closing.take().unwrap_or_default();
                p.ended.get_or_insert(why);
            }
        }
        // What the turn queued (ACKs, the relayed batches) goes now.
        self.server.step(self.server.now())?;
        if let Some(net) = &mut self.net {
            net.transmit(&mut self.server)?;
        }
        self.end_players(now, report)?;
        self.see_leaving_through();
        Ok(())
    }

    /// The closing upstream legs driven: each goes once its connection
    /// has closed, or after [`LEAVING`].
    fn see_leaving_through(&mut self) {
        let rec = &mut self.server.recorder;
        self.leaving.retain_mut(|(up, since)| {
            up.turn(&mut Vec::new(), rec);
            !up.is_done() && since.elapsed() < LEAVING
        });
    }

    /// A player in, over RakNet (`net` none) or NetherNet: its session,
    /// and its upstream leg started (to the server it was transferred to,
    /// when it was).
    fn start_player(
        &mut self,
        addr: SocketAddr,
        net: Option<u64>,
        report: &mut dyn Report,
    ) -> anyhow::Result<()> {
        let plan = self.plan;
        let cfg = self.dialect.client(None)?;
        // A player the upstream transferred comes back: its session goes
        // on to the server it was sent to.
        self.transfers.retain(|t| t.3.elapsed() < TRANSFER_WAIT);
        let (target, name, nethernet) = match self.transfers.iter().position(|t| t.0 == addr.ip()) {
            Some(i) => {
                let t = self
                    .transfers
                    .remove(i)
                    .unwrap_or_else(|| unreachable!("found"));
                (t.1, t.2, t.4)
            }
            None => (plan.upstream.0, plan.upstream.1.clone(), self.up_nethernet),
        };
        let name = match nethernet {
            true => super::nethernet::login_address(target),
            false => name,
        };
        let mut session = ProxySession::new(&plan.version, &name, (net.is_some(), nethernet))
            .map_err(|e| anyhow::anyhow!(e))?;
        let via = super::local_toward(self.server.local_addr()?, addr);
        session.transfer_via = Some((via.ip().to_string(), via.port()));
        let up = UpLeg::new(target, nethernet, cfg, plan.tls_keylog_out.clone())?;
        let c = net
            .is_none()
            .then(|| self.server.listener.connection(addr))
            .flatten();
        let how = if net.is_some() {
            "joined over NetherNet"
        } else {
            "connected over RakNet"
        };
        report.record(PeerRecord::Connected(ConnectedJson {
            kind: "connected",
            peer: addr.to_string(),
            guid: c
                .and_then(|c| c.peer_guid)
                .map(crate::records::peer::guid_hex),
            mtu: c.map_or(0, |c| c.mtu()),
            handshake_ms: None,
            text: Some(format!(
                "player {addr} {how}; its upstream leg from {} over {}",
                up.local(),
                up.transport()
            )),
        }))?;
        self.counts.players += 1;
        self.players.push(Player {
            addr,
            net,
            n: u32::try_from(self.counts.players).unwrap_or(u32::MAX),
            up,
            session,
            ended: None,
            closing: None,
        });
        Ok(())
    }

    /// What the RakNet listener says: players in, their messages, their
    /// leaving.
    fn raknet_players(&mut self, report: &mut dyn Report) -> anyhow::Result<()> {
        while let Some((addr, e)) = self.server.poll_event() {
            let player = |ps: &mut Vec<Player>| {
                ps.iter_mut()
                    .position(|p| p.net.is_none() && p.addr == addr)
            };
            match e {
                Event::Connected => {
                    self.players.retain(|p| p.net.is_some() || p.addr != addr);
                    self.start_player(addr, None, report)?;
                }
                Event::Message(m) if m.data.first() == Some(&0xfe) => {
                    if let Some(i) = player(&mut self.players) {
                        self.players[i].session.from_player(&m.data);
                    }
                }
                Event::Closed(r) => {
                    if let Some(i) = player(&mut self.players) {
                        let p = &mut self.players[i];
                        p.ended.get_or_insert(format!("the player left: {r:?}"));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// What the NetherNet listener says: the signaling answered, the
    /// datagrams diverted to it, players in, their batches, their leaving.
    fn nethernet_players(&mut self, report: &mut dyn Report) -> anyhow::Result<()> {
        let Some(net) = &mut self.net else {
            return Ok(());
        };
        let raknet = self.players.iter().filter(|p| p.net.is_none()).count();
        net.signaling(raknet, &mut self.server.recorder, report)?;
        let now = Instant::now();
        self.server
            .drain_diverted(|from, d| net.datagram(now, from, d));
        let mut events = Vec::new();
        net.turn(report, &mut events)?;
        for e in events {
            let find = |ps: &[Player], id| ps.iter().position(|p| p.net == Some(id));
            match e {
                NetEvent::Joined(id, peer) => self.start_player(peer, Some(id), report)?,
                NetEvent::Batch(id, b) => {
                    if let Some(i) = find(&self.players, id) {
                        self.players[i].session.from_player(&b);
                    }
                }
                NetEvent::Gone(id) => {
                    if let Some(i) = find(&self.players, id) {
                        let p = &mut self.players[i];
                        p.ended.get_or_insert("the player left (NetherNet)".into());
                    }
                }
            }
        }
        Ok(())
    }

    /// Player `i`'s turn: its upstream leg's events, its session's
    /// events (records, keys, transfers), what each side is owed.
    fn player_turn(
        &mut self,
        i: usize,
        now: Duration,
        ts: f64,
        up_events: &mut Vec<UpEvent>,
        report: &mut dyn Report,
    ) -> anyhow::Result<()> {
        let plan = self.plan;
        let server = &mut self.server;
        let p = &mut self.players[i];
        p.up.turn(up_events, &mut server.recorder);
        for e in up_events.drain(..) {
            match e {
                UpEvent::Connected(t) => report.record(PeerRecord::Connected(ConnectedJson {
                    kind: "connected",
                    peer: p.up.target().to_string(),
                    guid: None,
                    mtu: p.up.mtu(),
                    handshake_ms: Some(crate::records::peer::ms(t)),
                    text: Some(format!(
                        "upstream {} connected over {} for player {} in {:.3} ms",
                        p.up.target(),
                        p.up.transport(),
                        p.addr,
                        crate::records::peer::ms(t)
                    )),
                }))?,
                UpEvent::Joined(j) => {
                    report.record(super::nethernet::joined_record(p.up.target(), j))?
                }
                UpEvent::Message(m) => p.session.from_upstream(&m),
                // The player hears of it (a Disconnect, unless one went
                // either way) and has a moment to leave itself.
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
        // Keys first: a leg's key goes into the capture before its first
        // encrypted batch.
        while let Some(e) = p.session.poll_event() {
            if let ProxyEvent::Transfer(host, port) = &e {
                use std::net::ToSocketAddrs;
                let to = format!("{host}:{port}");
                match (host.as_str(), *port)
                    .to_socket_addrs()
                    .map(|mut a| a.next())
                {
                    Ok(Some(target)) => {
                        if self.transfers.len() >= MAX_TRANSFERS {
                            self.transfers.pop_front();
                        }
                        let nethernet = match plan.upstream_transport {
                            Transport::Auto => speaks_nethernet(target, TRANSFER_STATUS),
                            t => t == Transport::NetherNet,
                        };
                        let t = (p.addr.ip(), target, to, Instant::now(), nethernet);
                        self.transfers.push_back(t);
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
            let who = (p.addr, p.n, Some(p.session.player.protocol));
            said(plan, report, who, ts, e, &mut self.counts)?;
        }
        while let Some(m) = p.session.poll_to_upstream() {
            if let Err(why) = p.up.send(m) {
                p.ended.get_or_insert(why);
            }
        }
        p.up.flush(&mut server.recorder);
        let to_player = match (p.net, &mut self.net) {
            (Some(id), Some(net)) => {
                while let Some(m) = p.session.poll_to_player() {
                    net.send(id, &m);
                }
                net.buffered(id)
            }
            _ => {
                while let Some(m) = p.session.poll_to_player() {
                    server.send(p.addr, &m, Reliability::RELIABLE_ORDERED, 0);
                }
                server
                    .listener
                    .connection(p.addr)
                    .map_or(0, Connection::queued_bytes)
            }
        };
        let to_upstream = p.up.queued();
        let bound = plan.max_queued;
        if to_player.max(to_upstream) > bound {
            let (who, n) = match to_player > bound {
                true => ("the player", to_player),
                false => ("the upstream", to_upstream),
            };
            p.ended.get_or_insert(format!(
                "{who} does not keep up: {} KB queued toward it, more than {} KB",
                n >> 10,
                bound >> 10
            ));
        }
        Ok(())
    }

    /// The players whose session ended: both legs closed, a record each.
    fn end_players(&mut self, now: Duration, report: &mut dyn Report) -> anyhow::Result<()> {
        let mut i = 0;
        while i < self.players.len() {
            let Some(why) = self.players[i].ended.clone() else {
                i += 1;
                continue;
            };
            let mut p = self.players.remove(i);
            p.up.close(&mut self.server.recorder);
            self.leaving.push((p.up, Instant::now()));
            match (p.net, &mut self.net) {
                (Some(id), Some(net)) => net.end(id, why.clone()),
                _ => self.server.listener.close(now, p.addr),
            }
            report.record(PeerRecord::Login(PeerLoginJson {
                kind: "login",
                peer: p.addr.to_string(),
                ts: self.server.now().as_secs_f64(),
                event: "closed",
                detail: why,
            }))?;
            let transferred = self.transfers.iter().any(|t| t.0 == p.addr.ip());
            self.done |= self.plan.once && !transferred;
        }
        Ok(())
    }

    /// What is owed still goes (the players' last acknowledgements), the
    /// capture is closed; the counts.
    fn finish(mut self, report: &mut dyn Report) -> anyhow::Result<Outcome> {
        for mut p in std::mem::take(&mut self.players) {
            p.up.close(&mut self.server.recorder);
            self.leaving.push((p.up, Instant::now()));
        }
        let until = self.server.now() + Duration::from_millis(50);
        while self.server.now() < until || !self.leaving.is_empty() {
            let server = &mut self.server;
            let mut fds = vec![server.fd()];
            fds.extend(self.leaving.iter().filter_map(|l| l.0.fd()));
            super::wait_any(&fds, Duration::from_millis(5))?;
            server.step(server.now())?;
            if let Some(net) = &mut self.net {
                let mut events = Vec::new();
                net.turn(report, &mut events)?;
                net.transmit(server)?;
            }
            self.see_leaving_through();
        }
        let server = &mut self.server;
        if let Some(mut r) = server.recorder.take() {
            if let Err(e) = r.flush() {
                server.record_error = Some(e);
            }
        }
        if let (Some(e), Some(path)) = (server.record_error.take(), &self.plan.write) {
            report.warn(&format!("{}: the capture stopped: {e}", path.display()));
        }
        report.record(PeerRecord::GameCounts(GameCountsJson {
            kind: "game_counts",
            players: self.counts.players,
            c2s: self.counts.c2s,
            s2c: self.counts.s2c,
        }))?;
        Ok(Outcome::Done)
    }
}

/// A packet of the proxy's as the game layer of a capture has it (for
/// `-Y` and `-e`): its header read, its name in `protocol`'s definitions.
fn as_game_packet(
    dir: crate::bedrock::proxy::Dir,
    protocol: Option<u32>,
    data: Vec<u8>,
    fields: &serde_json::Value,
    error: &Option<String>,
) -> crate::bedrock::GamePacket {
    use crate::bedrock::batch::Header;
    let none = Header {
        id: 0,
        sender: 0,
        target: 0,
        len: 0,
    };
    let header = Header::parse(&data).unwrap_or(none);
    crate::bedrock::GamePacket {
        dir: match dir {
            crate::bedrock::proxy::Dir::C2s => crate::dissect::Dir::C2s,
            crate::bedrock::proxy::Dir::S2c => crate::dissect::Dir::S2c,
        },
        batch: 0,
        name: crate::bedrock::names::packet_name(protocol, header.id),
        header,
        data: data.into(),
        encrypted: false,
        fields: (!fields.is_null()).then(|| fields.clone()),
        anomaly: None,
        error: error.clone(),
        layout: None,
        pending: None,
    }
}

/// A session's event as a record (a packet counted, and shown unless
/// hidden, or a `-T fields` row); keys appended to the key log.
fn said(
    plan: &ProxyPlan,
    report: &mut dyn Report,
    (addr, n, protocol): (SocketAddr, u32, Option<u32>),
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
            data,
        } => {
            let by = match dir {
                crate::bedrock::proxy::Dir::C2s => &mut counts.c2s,
                crate::bedrock::proxy::Dir::S2c => &mut counts.s2c,
            };
            *by.entry(name.clone()).or_default() += 1;
            if !plan.shown(&name) {
                return Ok(());
            }
            if let Some(view) = &plan.view {
                // `-Y` and `-e` read it as `game` reads a packet of a
                // capture: the player's number for its flow.
                let packet = as_game_packet(dir, protocol, data, &fields, &error);
                let message = crate::mirror::Message {
                    flow: n,
                    dir: packet.dir,
                    frame: 0,
                    ts: Duration::from_secs_f64(ts),
                    data: Vec::new(),
                    reliability: Reliability::RELIABLE_ORDERED,
                    channel: Some(0),
                    anomalies: Vec::new(),
                };
                let event = crate::bedrock::GameEvent::Packet(packet);
                let r = crate::records::game::GameRecord::new(&message, &event);
                match view.look(&r) {
                    None => return Ok(()),
                    Some(Some(row)) => return report.record(PeerRecord::Row(row)),
                    Some(None) => {}
                }
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
