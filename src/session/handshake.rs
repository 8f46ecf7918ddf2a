//! The offline handshake, sans-IO: the client's (Open Connection Request 1
//! with MTU probing, request 2) and the server's ([`Listener`]: pongs,
//! replies 1 and 2, refusals, and the table of its connections), both
//! dialects. Each ends in a [`Connection`].

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use super::connection::{CloseReason, Connection, ConnectionConfig, Event, Role, State};
use crate::wire::ids::{
    ALREADY_CONNECTED, CONNECTION_BANNED, IP_RECENTLY_CONNECTED, NO_FREE_INCOMING_CONNECTIONS,
};
use crate::wire::{Offline, Reader, SystemAddress};

/// MTUs the original tries, in order (`RakPeer.cpp` `mtuSizes`).
pub(crate) const MTU_PROBES: [u16; 3] = [1492, 1200, 576];
/// The original's `MAXIMUM_MTU_SIZE`.
pub(crate) const MAX_MTU: u16 = 1492;
const MIN_MTU: u16 = 576;

/// The RakNet protocol byte of each dialect.
pub(crate) const PROTOCOL_ORIGINAL: u8 = 6;
pub(crate) const PROTOCOL_MINECRAFT: u8 = 11;

/// Settings of a client's handshake and of the connection it makes.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Our GUID, in request 2 and ConnectionRequest.
    pub guid: u64,
    /// RakNet protocol byte in Open Connection Request 1.
    pub protocol: u8,
    /// MTUs to try, largest first.
    pub mtus: Vec<u16>,
    /// Attempts per MTU (the original: 4, 500 ms apart, 12 in all).
    pub attempts_per_mtu: u32,
    /// Attempts of Open Connection Request 2.
    pub request2_attempts: u32,
    /// Time between attempts.
    pub interval: Duration,
    /// Addresses in NewIncomingConnection: 10 original, 20 Minecraft.
    pub address_count: usize,
    /// The connection's time-out: a peer silent this long while we wait for an ACK is gone.
    pub timeout: Duration,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            guid: 0,
            protocol: PROTOCOL_ORIGINAL,
            mtus: MTU_PROBES.to_vec(),
            attempts_per_mtu: 4,
            request2_attempts: 10,
            interval: Duration::from_millis(500),
            address_count: 10,
            timeout: Duration::from_secs(10),
        }
    }
}

/// A handshake step that failed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandshakeError {
    /// No Open Connection Reply 1 to any probe; `mtus` were tried.
    Request1Unanswered {
        /// Requests sent in all.
        attempts: u32,
        /// The MTUs probed, in order.
        mtus: Vec<u16>,
    },
    /// Reply 1 came, but no reply 2.
    Request2Unanswered {
        /// Requests 2 sent.
        attempts: u32,
        /// The MTU they asked for.
        mtu: u16,
    },
    /// The server speaks another RakNet protocol version.
    IncompatibleProtocol {
        /// Our protocol byte.
        ours: u8,
        /// The server's, from its 0x19.
        server: u8,
    },
    /// The server refused with 0x12, 0x14, 0x17 or 0x1a.
    Refused {
        /// The refusal's message id.
        id: u8,
    },
    /// The connected handshake (ConnectionRequest) failed.
    ConnectionRequest(CloseReason),
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandshakeError::Request1Unanswered { attempts, mtus } => write!(
                f,
                "open connection request 1: no reply after {attempts} attempts (MTU {})",
                mtus.iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            HandshakeError::Request2Unanswered { attempts, mtu } => write!(
                f,
                "open connection request 2: no reply after {attempts} attempts (MTU {mtu})"
            ),
            HandshakeError::IncompatibleProtocol { ours, server } => write!(
                f,
                "open connection request 1: incompatible protocol version (ours {ours}, the server's {server})"
            ),
            HandshakeError::Refused { id } => write!(
                f,
                "open connection request 2: refused, {}",
                match *id {
                    ALREADY_CONNECTED => "already connected (ID_ALREADY_CONNECTED)",
                    NO_FREE_INCOMING_CONNECTIONS =>
                        "the server is full (ID_NO_FREE_INCOMING_CONNECTIONS)",
                    CONNECTION_BANNED => "banned (ID_CONNECTION_BANNED)",
                    IP_RECENTLY_CONNECTED =>
                        "this address connected too recently (ID_IP_RECENTLY_CONNECTED)",
                    _ => "by the server",
                }
            ),
            HandshakeError::ConnectionRequest(reason) => write!(
                f,
                "connection request: {}",
                match reason {
                    CloseReason::TimedOut => "no ConnectionRequestAccepted before the time-out",
                    CloseReason::ByPeer => "the server disconnected",
                    CloseReason::ByUs => "closed",
                }
            ),
        }
    }
}

impl std::error::Error for HandshakeError {}

impl HandshakeError {
    /// The step, in the words of `handshake` outcomes.
    pub(crate) fn step(&self) -> &'static str {
        match self {
            HandshakeError::Request1Unanswered { .. } => "mtu_probes_unanswered",
            HandshakeError::Request2Unanswered { .. } => "no_reply_2",
            HandshakeError::IncompatibleProtocol { .. } => "incompatible_protocol",
            HandshakeError::Refused { id } => match *id {
                ALREADY_CONNECTED => "already_connected",
                NO_FREE_INCOMING_CONNECTIONS => "no_free_incoming_connections",
                CONNECTION_BANNED => "banned",
                IP_RECENTLY_CONNECTED => "ip_recently_connected",
                _ => "refused",
            },
            HandshakeError::ConnectionRequest(_) => "connection_request_unanswered",
        }
    }
}

#[derive(Debug)]
enum ClientStep {
    Request1,
    Request2 { mtu: u16, cookie: Option<u32> },
    Done,
}

/// What a client handshake produced, step by step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandshakeEvent {
    /// Open Connection Request 1 went out.
    Request1Sent {
        /// The MTU it probes.
        mtu: u16,
    },
    /// Open Connection Reply 1 arrived.
    Reply1 {
        /// The server's GUID.
        server_guid: u64,
        /// The MTU the server took.
        mtu: u16,
    },
    /// Open Connection Request 2 went out.
    Request2Sent {
        /// The MTU it asks for.
        mtu: u16,
    },
    /// Open Connection Reply 2 arrived: the connection starts.
    Reply2 {
        /// The connection's MTU.
        mtu: u16,
    },
    /// ConnectionRequest queued (the driver reports it).
    ConnectionRequestSent,
    /// ConnectionRequestAccepted arrived and NewIncomingConnection went out.
    Accepted,
}

/// The client's offline handshake. When reply 2 arrives, [`Self::handle`]
/// returns the [`Connection`], which then carries on with ConnectionRequest.
#[derive(Debug)]
pub struct ClientHandshake {
    cfg: ClientConfig,
    server: SocketAddr,
    local: SocketAddr,
    step: ClientStep,
    attempts: u32,
    next_at: Duration,
    events: VecDeque<HandshakeEvent>,
    server_guid: Option<u64>,
}

impl ClientHandshake {
    /// A handshake with `server` from `local`, its first request due at `now`.
    pub fn new(cfg: ClientConfig, server: SocketAddr, local: SocketAddr, now: Duration) -> Self {
        ClientHandshake {
            cfg,
            server,
            local,
            step: ClientStep::Request1,
            attempts: 0,
            next_at: now,
            events: VecDeque::new(),
            server_guid: None,
        }
    }

    fn request1_mtu(&self) -> Option<u16> {
        let i = self.attempts / self.cfg.attempts_per_mtu.max(1);
        self.cfg.mtus.get(i as usize).copied()
    }

    /// The next request to send, when it is due. `Err` when every attempt
    /// of a step went unanswered.
    pub fn poll_transmit(
        &mut self,
        now: Duration,
        out: &mut Vec<u8>,
    ) -> Result<bool, HandshakeError> {
        out.clear();
        if now < self.next_at {
            return Ok(false);
        }
        match &self.step {
            ClientStep::Request1 => {
                let Some(mtu) = self.request1_mtu() else {
                    return Err(HandshakeError::Request1Unanswered {
                        attempts: self.attempts,
                        mtus: self.cfg.mtus.clone(),
                    });
                };
                Offline::OpenConnectionRequest1 {
                    protocol: self.cfg.protocol,
                    mtu,
                }
                .emit(out);
                self.events.push_back(HandshakeEvent::Request1Sent { mtu });
            }
            ClientStep::Request2 { mtu, cookie } => {
                if self.attempts >= self.cfg.request2_attempts {
                    return Err(HandshakeError::Request2Unanswered {
                        attempts: self.attempts,
                        mtu: *mtu,
                    });
                }
                Offline::OpenConnectionRequest2 {
                    security: cookie.map(|cookie| crate::wire::offline::Request2Security {
                        cookie,
                        challenge: None,
                    }),
                    server_address: SystemAddress::from_socket_addr(self.server),
                    mtu: *mtu,
                    client_guid: self.cfg.guid,
                }
                .emit(out);
                self.events
                    .push_back(HandshakeEvent::Request2Sent { mtu: *mtu });
            }
            ClientStep::Done => return Ok(false),
        }
        self.attempts += 1;
        self.next_at = now + self.cfg.interval;
        Ok(true)
    }

    pub(crate) fn poll_timeout(&self) -> Duration {
        self.next_at
    }

    pub(crate) fn poll_event(&mut self) -> Option<HandshakeEvent> {
        self.events.pop_front()
    }

    /// An offline message from the server. `Ok(Some(connection))` when
    /// reply 2 completes the offline handshake.
    pub fn handle(
        &mut self,
        now: Duration,
        bytes: &[u8],
    ) -> Result<Option<Connection>, HandshakeError> {
        let Ok(msg) = Offline::parse(&mut Reader::new(bytes)) else {
            return Ok(None);
        };
        match (msg, &self.step) {
            (
                Offline::OpenConnectionReply1 {
                    server_guid,
                    security,
                    mtu,
                },
                ClientStep::Request1,
            ) => {
                // The server's value, never above what we probed with.
                let probed = self.request1_mtu().unwrap_or(MIN_MTU);
                let mtu = mtu.clamp(MIN_MTU.min(probed), MAX_MTU);
                self.events
                    .push_back(HandshakeEvent::Reply1 { server_guid, mtu });
                self.server_guid = Some(server_guid);
                self.step = ClientStep::Request2 {
                    mtu,
                    cookie: security.map(|s| s.cookie),
                };
                self.attempts = 0;
                self.next_at = now;
                Ok(None)
            }
            (Offline::OpenConnectionReply2 { mtu, .. }, ClientStep::Request2 { .. }) => {
                let mtu = mtu.clamp(MIN_MTU, MAX_MTU);
                self.events.push_back(HandshakeEvent::Reply2 { mtu });
                self.step = ClientStep::Done;
                let mut cfg = ConnectionConfig::new(Role::Client, self.server, self.local);
                cfg.mtu = mtu;
                cfg.guid = self.cfg.guid;
                cfg.address_count = self.cfg.address_count;
                cfg.timeout = self.cfg.timeout;
                Ok(Some(Connection::new(cfg, now)))
            }
            (Offline::IncompatibleProtocolVersion { protocol, .. }, _) => {
                Err(HandshakeError::IncompatibleProtocol {
                    ours: self.cfg.protocol,
                    server: protocol,
                })
            }
            (Offline::Refusal { id, .. }, _) if id != 0x11 => Err(HandshakeError::Refused { id }),
            _ => Ok(None),
        }
    }

    /// The server's GUID, from reply 1.
    pub(crate) fn server_guid(&self) -> Option<u64> {
        self.server_guid
    }
}

/// Settings of a server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Our GUID, in pongs and replies.
    pub guid: u64,
    /// The protocol byte named in 0x19 refusals.
    pub protocol: u8,
    /// Protocol bytes accepted in Open Connection Request 1 (empty: only
    /// `protocol`); others get 0x19.
    pub accept_protocols: Vec<u8>,
    /// The unconnected pong payload (raw; a Minecraft MOTD is length-prefixed).
    pub pong: Vec<u8>,
    /// Connected clients at most; more get 0x14.
    pub max_clients: usize,
    /// Handshakes in progress (reply 2 sent, not yet connected) at most;
    /// past it the oldest is dropped for the new one, so that a flood of
    /// half-open handshakes cannot keep real clients out.
    pub max_pending: usize,
    /// Handshakes in progress from one IP address at most; past it that
    /// address's oldest is dropped for the new one (never a refusal: one
    /// address may be a NAT with many players behind it).
    pub max_pending_per_ip: usize,
    /// Largest MTU granted in replies 1 and 2 (by default 1492, the original's).
    pub max_mtu: u16,
    /// Addresses in ConnectionRequestAccepted: 10 original, 20 Minecraft.
    pub address_count: usize,
    /// Each connection's time-out: a client silent this long while we wait for an ACK is gone.
    pub timeout: Duration,
    /// Bytes all connections may hold together in split parts and ordering
    /// heaps (each holds 64 MiB at most); past it the largest holder is
    /// closed and its data dropped.
    pub max_held_total: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            guid: 0,
            protocol: PROTOCOL_ORIGINAL,
            accept_protocols: Vec::new(),
            pong: Vec::new(),
            max_clients: 32,
            max_pending: 256,
            max_pending_per_ip: 8,
            max_mtu: MAX_MTU,
            address_count: 10,
            timeout: Duration::from_secs(10),
            max_held_total: 128 << 20,
        }
    }
}

/// Counters of a server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ServerStats {
    pub(crate) pings: u64,
    pub(crate) refused: u64,
    pub(crate) junk: u64,
    pub(crate) handshakes_dropped: u64,
    /// Connections closed because all together held more than
    /// `max_held_total` (the largest holder goes).
    pub(crate) shed: u64,
}

/// A server: answers offline messages statelessly until Open Connection
/// Request 2, then keeps one [`Connection`] per client address, bounded by
/// `max_clients + max_pending`; handshakes that do not complete time out.
#[derive(Debug)]
pub struct Listener {
    cfg: ServerConfig,
    local: SocketAddr,
    conns: HashMap<SocketAddr, Connection>,
    offline_out: VecDeque<(SocketAddr, Vec<u8>)>,
    events: VecDeque<(SocketAddr, Event)>,
    /// Round-robin position for transmits.
    order: Vec<SocketAddr>,
    cursor: usize,
    stats: ServerStats,
    recently_closed: VecDeque<(SocketAddr, Connection)>,
}

/// Offline replies queued at most (a flood of requests is answered up to this).
const MAX_OFFLINE_QUEUE: usize = 1024;
/// Closed connections kept for their statistics.
const MAX_RECENTLY_CLOSED: usize = 64;

impl Listener {
    /// A server with no connection, at `local` (its address in the address lists).
    pub fn new(cfg: ServerConfig, local: SocketAddr) -> Self {
        Listener {
            cfg,
            local,
            conns: HashMap::new(),
            offline_out: VecDeque::new(),
            events: VecDeque::new(),
            order: Vec::new(),
            cursor: 0,
            stats: ServerStats::default(),
            recently_closed: VecDeque::new(),
        }
    }

    pub(crate) fn set_pong(&mut self, pong: Vec<u8>) {
        self.cfg.pong = pong;
    }

    fn connected(&self) -> usize {
        self.conns
            .values()
            .filter(|c| c.state() != State::Connecting)
            .count()
    }

    fn reply(&mut self, to: SocketAddr, msg: Offline<'_>) {
        if self.offline_out.len() < MAX_OFFLINE_QUEUE {
            let mut out = Vec::new();
            msg.emit(&mut out);
            self.offline_out.push_back((to, out));
        }
    }

    /// One UDP datagram from `from`.
    pub fn handle(&mut self, now: Duration, from: SocketAddr, bytes: &[u8]) {
        if let Some(c) = self.conns.get_mut(&from) {
            if bytes.first().is_some_and(|b| b & 0x80 != 0) {
                let before = c.held_bytes();
                c.handle(now, bytes);
                let grew = c.held_bytes() > before;
                self.collect(now, from);
                if grew {
                    self.shed(now);
                }
                return;
            }
        }
        let Ok(msg) = Offline::parse(&mut Reader::new(bytes)) else {
            self.stats.junk += 1;
            return;
        };
        let guid = self.cfg.guid;
        match msg {
            Offline::UnconnectedPing {
                open_connections,
                time,
                ..
            } => {
                self.stats.pings += 1;
                if !open_connections || self.connected() < self.cfg.max_clients {
                    let pong = std::mem::take(&mut self.cfg.pong);
                    self.reply(
                        from,
                        Offline::UnconnectedPong {
                            time,
                            server_guid: guid,
                            payload: &pong,
                        },
                    );
                    self.cfg.pong = pong;
                }
            }
            Offline::OpenConnectionRequest1 { protocol, mtu } => {
                let accepted = if self.cfg.accept_protocols.is_empty() {
                    protocol == self.cfg.protocol
                } else {
                    self.cfg.accept_protocols.contains(&protocol)
                };
                if !accepted {
                    self.stats.refused += 1;
                    self.reply(
                        from,
                        Offline::IncompatibleProtocolVersion {
                            protocol: self.cfg.protocol,
                            server_guid: guid,
                        },
                    );
                } else {
                    self.reply(
                        from,
                        Offline::OpenConnectionReply1 {
                            server_guid: guid,
                            security: None,
                            mtu: mtu.min(self.cfg.max_mtu),
                        },
                    );
                }
            }
            Offline::OpenConnectionRequest2 {
                mtu, client_guid, ..
            } => self.on_request2(now, from, mtu, client_guid),
            _ => self.stats.junk += 1,
        }
    }

    fn on_request2(&mut self, now: Duration, from: SocketAddr, mtu: u16, client_guid: u64) {
        let guid = self.cfg.guid;
        let reply2 = |l: &mut Self, mtu: u16| {
            l.reply(
                from,
                Offline::OpenConnectionReply2 {
                    server_guid: guid,
                    client_address: SystemAddress::from_socket_addr(from),
                    mtu,
                    security_answer: None,
                },
            )
        };
        if let Some(c) = self.conns.get(&from) {
            if c.state() == State::Connecting {
                // The client's retransmission: our reply 2 was lost.
                let mtu = c.mtu();
                reply2(self, mtu);
            } else {
                self.stats.refused += 1;
                self.reply(
                    from,
                    Offline::Refusal {
                        id: ALREADY_CONNECTED,
                        server_guid: guid,
                    },
                );
            }
            return;
        }
        let refuse = |l: &mut Self, id: u8| {
            l.stats.refused += 1;
            l.reply(
                from,
                Offline::Refusal {
                    id,
                    server_guid: guid,
                },
            );
        };
        if self.connected() >= self.cfg.max_clients {
            return refuse(self, NO_FREE_INCOMING_CONNECTIONS);
        }
        // Half-open handshakes are bounded per address and in all; past
        // either bound, the oldest of them (of this address, or of all)
        // makes room for the new one: a flood keeps only its newest, and
        // a client that answers promptly still gets in, even from the
        // flooding address (one behind the same NAT, or a client retrying).
        let pending = |c: &Connection| c.state() == State::Connecting;
        let oldest = |l: &Self, same_ip: bool| {
            let mine = l
                .conns
                .iter()
                .filter(|(a, c)| pending(c) && (!same_ip || a.ip() == from.ip()));
            let count = mine.clone().count();
            let first = mine.min_by_key(|(_, c)| c.created()).map(|(a, _)| *a);
            (count, first)
        };
        let (from_ip, first_of_ip) = oldest(self, true);
        let evict = if from_ip >= self.cfg.max_pending_per_ip {
            first_of_ip
        } else {
            match oldest(self, false) {
                (n, first) if n >= self.cfg.max_pending => first,
                _ => None,
            }
        };
        if let Some(a) = evict {
            self.conns.remove(&a);
            self.order.retain(|o| *o != a);
            self.cursor = 0;
            self.stats.handshakes_dropped += 1;
        }
        let mtu = mtu.clamp(MIN_MTU, self.cfg.max_mtu);
        let mut cfg = ConnectionConfig::new(Role::Server, from, self.local);
        cfg.mtu = mtu;
        cfg.guid = guid;
        cfg.address_count = self.cfg.address_count;
        cfg.timeout = self.cfg.timeout;
        let mut c = Connection::new(cfg, now);
        c.peer_guid = Some(client_guid);
        self.conns.insert(from, c);
        self.order.push(from);
        reply2(self, mtu);
    }

    /// Move a connection's events out; forget it once closed and flushed.
    fn collect(&mut self, _now: Duration, addr: SocketAddr) {
        let Some(c) = self.conns.get_mut(&addr) else {
            return;
        };
        let was_connected = c.ever_connected();
        while let Some(e) = c.poll_event() {
            if matches!(e, Event::Closed(_)) && !was_connected {
                // A handshake that never completed: not an application event.
                self.stats.handshakes_dropped += 1;
                continue;
            }
            self.events.push_back((addr, e));
        }
    }

    /// The next datagram to send and its destination.
    pub fn poll_transmit(&mut self, now: Duration, out: &mut Vec<u8>) -> Option<SocketAddr> {
        if let Some((to, bytes)) = self.offline_out.pop_front() {
            *out = bytes;
            return Some(to);
        }
        let n = self.order.len();
        for _ in 0..n {
            self.cursor = (self.cursor + 1) % self.order.len();
            let addr = self.order[self.cursor];
            let Some(c) = self.conns.get_mut(&addr) else {
                continue;
            };
            let sent = c.poll_transmit(now, out);
            self.collect(now, addr);
            if sent {
                return Some(addr);
            }
        }
        self.sweep();
        None
    }

    /// Past the budget of held data, close the connection holding the most
    /// and drop what it held.
    fn shed(&mut self, now: Duration) {
        let total: usize = self.conns.values().map(Connection::held_bytes).sum();
        if total <= self.cfg.max_held_total {
            return;
        }
        let largest = self
            .conns
            .iter_mut()
            .max_by_key(|(_, c)| c.held_bytes())
            .map(|(_, c)| c);
        if let Some(c) = largest {
            c.shed(now);
            self.stats.shed += 1;
        }
    }

    /// Move closed connections out of the table; the last few stay
    /// readable through [`Self::closed_connection`] for their statistics.
    fn sweep(&mut self) {
        let before = self.conns.len();
        let closed: Vec<SocketAddr> = self
            .conns
            .iter()
            .filter(|(_, c)| c.is_closed())
            .map(|(a, _)| *a)
            .collect();
        for addr in closed {
            if let Some(mut c) = self.conns.remove(&addr) {
                c.release();
                if self.recently_closed.len() >= MAX_RECENTLY_CLOSED {
                    self.recently_closed.pop_front();
                }
                self.recently_closed.push_back((addr, c));
            }
        }
        if self.conns.len() != before {
            let conns = &self.conns;
            self.order.retain(|a| conns.contains_key(a));
            self.cursor = 0;
        }
    }

    pub(crate) fn poll_timeout(&mut self) -> Option<Duration> {
        self.conns
            .values_mut()
            .filter_map(|c| c.poll_timeout())
            .min()
    }

    /// The next event of a connection, with its client's address.
    pub fn poll_event(&mut self) -> Option<(SocketAddr, Event)> {
        self.events.pop_front()
    }

    /// Events or offline replies wait: a driver should not sleep.
    pub(crate) fn is_busy(&self) -> bool {
        !self.events.is_empty() || !self.offline_out.is_empty()
    }

    /// Queue a message to a connected client.
    pub(crate) fn send(
        &mut self,
        now: Duration,
        to: SocketAddr,
        data: &[u8],
        reliability: crate::wire::Reliability,
        channel: u8,
    ) {
        if let Some(c) = self.conns.get_mut(&to) {
            c.send(now, data, reliability, channel, None);
        }
    }

    /// Disconnect the client at `to` (its notification queued).
    pub(crate) fn close(&mut self, now: Duration, to: SocketAddr) {
        if let Some(c) = self.conns.get_mut(&to) {
            c.close(now);
        }
    }

    #[cfg(test)]
    pub(crate) fn close_all(&mut self, now: Duration) {
        for c in self.conns.values_mut() {
            c.close(now);
        }
    }

    /// The configuration the listener was made with.
    pub(crate) fn config(&self) -> &ServerConfig {
        &self.cfg
    }

    /// The connection of the client at `addr`, in any state.
    pub fn connection(&self, addr: SocketAddr) -> Option<&Connection> {
        self.conns.get(&addr)
    }

    /// A connection that closed lately (the last 64 are kept), for its statistics.
    pub(crate) fn closed_connection(&self, addr: SocketAddr) -> Option<&Connection> {
        self.recently_closed
            .iter()
            .rev()
            .find(|(a, _)| *a == addr)
            .map(|(_, c)| c)
    }

    /// Connections held, in any state (bounded by `max_clients + max_pending`).
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// No connection held.
    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    #[cfg(test)]
    pub(crate) fn stats(&self) -> &ServerStats {
        &self.stats
    }
}
