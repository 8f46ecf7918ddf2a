//! One RakNet connection after the offline handshake, sans-IO: the receive
//! half and the send half of one side, plus RakNet's own connected messages
//! (ConnectionRequest, ConnectionRequestAccepted, NewIncomingConnection,
//! pings, disconnection), keepalives and the time-out of a silent peer.
//!
//! quinn-proto's shape: [`Connection::handle`] takes a datagram,
//! [`Connection::poll_transmit`] gives the next one to send,
//! [`Connection::poll_timeout`] the next timer, [`Connection::poll_event`]
//! what the application should hear. `now` is the time since an origin the
//! caller chose; nothing here reads a clock.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use super::receive::{Delivered, ReceiveConfig, ReceiveEvent, ReceiveHalf};
use super::send::{SendConfig, SendEvent, SendHalf, SendStats};
use crate::wire::{Connected, Datagram, Reader, Reliability, SystemAddress};

/// Which side of the connection this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The side that sent Open Connection Request 1.
    Client,
    /// The side that answered it.
    Server,
}

/// Settings of one connection.
#[derive(Debug, Clone)]
pub struct ConnectionConfig {
    pub(crate) role: Role,
    pub(crate) mtu: u16,
    /// Our GUID.
    pub(crate) guid: u64,
    /// The peer's address, as we see it.
    pub(crate) peer: SocketAddr,
    /// Our address, as far as we know it (for the address lists).
    pub(crate) local: SocketAddr,
    /// Internal addresses in ConnectionRequestAccepted and
    /// NewIncomingConnection: 10 in the original, 20 in Minecraft.
    pub(crate) address_count: usize,
    /// A peer silent this long while we wait for an ACK is gone (10 s by default).
    pub(crate) timeout: Duration,
    /// Reliable parts in flight at most (the original's window is 512).
    pub(crate) max_unacked: u32,
    pub(crate) receive: ReceiveConfig,
}

impl ConnectionConfig {
    pub(crate) fn new(role: Role, peer: SocketAddr, local: SocketAddr) -> Self {
        ConnectionConfig {
            role,
            mtu: 1492,
            guid: 0,
            peer,
            local,
            address_count: 10,
            timeout: Duration::from_secs(10),
            max_unacked: 2048,
            receive: ReceiveConfig {
                max_held_bytes: 64 << 20,
                ..ReceiveConfig::default()
            },
        }
    }
}

/// Why a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// We closed it, and the peer acknowledged our disconnection notification
    /// (or did not within the closing time).
    ByUs,
    /// The peer sent a disconnection notification.
    ByPeer,
    /// Nothing came from the peer for the time-out while we waited for an ACK,
    /// or the connection never completed.
    TimedOut,
}

impl CloseReason {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CloseReason::ByUs => "closed",
            CloseReason::ByPeer => "disconnected_by_peer",
            CloseReason::TimedOut => "timed_out",
        }
    }
}

/// What the application hears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The connected handshake finished (client: ConnectionRequestAccepted
    /// arrived; server: NewIncomingConnection arrived).
    Connected,
    /// A message for the application, in delivery order.
    Message(Delivered),
    /// Every part of the message sent with this receipt number was acknowledged.
    ReceiptAcked(u32),
    /// The unreliable message sent with this receipt number was NACKed or never acknowledged.
    ReceiptLost(u32),
    /// The connection is over; nothing more will come.
    Closed(CloseReason),
}

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Waiting for ConnectionRequest(Accepted) / NewIncomingConnection.
    Connecting,
    /// The connected handshake is done; messages flow.
    Connected,
    /// Our disconnection notification is out, waiting for its ACK.
    Closing,
    /// Over: nothing is sent or delivered any more.
    Closed,
}

/// Counters of one connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ConnectionStats {
    pub(crate) datagrams_received: u64,
    pub(crate) bytes_received: u64,
    pub(crate) messages_delivered: u64,
    pub(crate) duplicates_dropped: u64,
    pub(crate) malformed: u64,
    /// Tail-loss probes sent ([`PROBE_AFTER`]).
    pub(crate) probes: u64,
    pub(crate) send: SendStats,
}

/// One connection: see the module documentation.
#[derive(Debug)]
pub struct Connection {
    cfg: ConnectionConfig,
    state: State,
    recv: ReceiveHalf,
    send: SendHalf,
    events: VecDeque<Event>,
    created: Duration,
    last_receive: Duration,
    /// When the peer's last data datagram (not an ACK or NACK) arrived.
    last_data_receive: Duration,
    /// A tail-loss probe went out since then.
    probed: bool,
    closing_since: Option<Duration>,
    connected_at: Option<Duration>,
    close_reason: Option<CloseReason>,
    stats: ConnectionStats,
    /// The sender's statistics as they were when [`Connection::release`]
    /// gave its buffers back.
    released: Option<crate::session::send::SendStats>,
    /// The peer's GUID, once known (ConnectionRequest at the server).
    pub(crate) peer_guid: Option<u64>,
}

/// Time allowed for our disconnection notification to be acknowledged.
const CLOSING_TIME: Duration = Duration::from_secs(1);

/// The tail-loss probe: once we have sent since the peer's last data
/// datagram and nothing but ACKs has come for this long, one ping goes
/// out. Its pong comes in a datagram numbered after any the peer lost, so
/// the gap shows at once and is NACKed: a peer that resends only after a
/// NACK (jsp-raknet) resends its lost reply now, not after the keepalive
/// ping of half the time-out (5 s).
pub(crate) const PROBE_AFTER: Duration = Duration::from_secs(1);

fn time_ms(now: Duration) -> u64 {
    now.as_millis() as u64
}

impl Connection {
    /// A connection right after Open Connection Reply 2. A client queues its
    /// ConnectionRequest at once.
    pub(crate) fn new(cfg: ConnectionConfig, now: Duration) -> Self {
        let send = SendHalf::new(SendConfig {
            mtu: cfg.mtu,
            max_unacked: cfg.max_unacked,
        });
        let mut c = Connection {
            recv: ReceiveHalf::new(cfg.receive.clone()),
            send,
            state: State::Connecting,
            events: VecDeque::new(),
            created: now,
            last_receive: now,
            last_data_receive: now,
            probed: false,
            closing_since: None,
            connected_at: None,
            close_reason: None,
            stats: ConnectionStats::default(),
            released: None,
            peer_guid: None,
            cfg,
        };
        if c.cfg.role == Role::Client {
            let mut m = Vec::new();
            Connected::ConnectionRequest {
                client_guid: c.cfg.guid,
                time: time_ms(now),
                security: None,
                password: &[],
            }
            .emit(&mut m);
            c.send.send(now, &m, Reliability::RELIABLE, 0, None);
        }
        c
    }

    /// Where the connection is now.
    pub fn state(&self) -> State {
        self.state
    }

    pub(crate) fn mtu(&self) -> u16 {
        self.cfg.mtu
    }

    /// The connected handshake completed at some point.
    pub(crate) fn ever_connected(&self) -> bool {
        self.connected_at.is_some()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// Queue an application message (see [`SendHalf::send`]). Ignored once
    /// the connection is closing.
    pub(crate) fn send(
        &mut self,
        now: Duration,
        data: &[u8],
        reliability: Reliability,
        channel: u8,
        receipt: Option<u32>,
    ) {
        if matches!(self.state, State::Connecting | State::Connected) && !data.is_empty() {
            self.send.send(now, data, reliability, channel, receipt);
        }
    }

    /// Send a disconnection notification; the connection closes when it is
    /// acknowledged, or after a second.
    pub(crate) fn close(&mut self, now: Duration) {
        if matches!(self.state, State::Connecting | State::Connected) {
            self.send
                .send(now, &[0x15], Reliability::RELIABLE_ORDERED, 0, None);
            self.state = State::Closing;
            self.closing_since = Some(now);
        }
    }

    /// Close (as [`Connection::close`]) and drop at once what it holds
    /// received: for a server over its budget of held data.
    pub(crate) fn shed(&mut self, now: Duration) {
        self.close(now);
        self.recv = ReceiveHalf::new(self.cfg.receive.clone());
    }

    /// One UDP datagram from the peer.
    pub fn handle(&mut self, now: Duration, bytes: &[u8]) {
        if self.state == State::Closed {
            return;
        }
        self.stats.datagrams_received += 1;
        self.stats.bytes_received += bytes.len() as u64;
        let mut r = Reader::new(bytes);
        let lax = Datagram::parse_lax(&mut r);
        if lax.error.is_some() {
            self.stats.malformed += 1;
        }
        let Some(d) = lax.value else {
            return;
        };
        self.last_receive = now;
        match d {
            Datagram::Data(d) => {
                (self.last_data_receive, self.probed) = (now, false);
                self.send.on_datagram_received(now, d.seq);
                self.recv.handle_datagram(now, 0, d.seq, &d.capsules);
                while let Some(e) = self.recv.poll_event() {
                    match e {
                        ReceiveEvent::Delivered(m) => self.on_message(now, m),
                        ReceiveEvent::DatagramGap {
                            first_missing,
                            count,
                            ..
                        } => self.send.on_gap(first_missing, count),
                        ReceiveEvent::DuplicateReliable { .. } => {
                            self.stats.duplicates_dropped += 1
                        }
                        _ => {}
                    }
                }
            }
            Datagram::Ack(l) => self.send.on_ack(now, &l.ranges),
            Datagram::Nack(l) => self.send.on_nack(now, &l.ranges),
        }
        self.pump_send_events();
        self.check_closing(now);
    }

    fn pump_send_events(&mut self) {
        while let Some(e) = self.send.poll_event() {
            self.events.push_back(match e {
                SendEvent::ReceiptAcked(r) => Event::ReceiptAcked(r),
                SendEvent::ReceiptLost(r) => Event::ReceiptLost(r),
            });
        }
    }

    fn addresses(&self) -> Vec<SystemAddress> {
        let mut v = vec![SystemAddress::from_socket_addr(self.cfg.local)];
        v.resize(self.cfg.address_count.max(1), SystemAddress::UNASSIGNED);
        v
    }

    fn on_message(&mut self, now: Duration, m: Delivered) {
        let reply = |c: &mut Self, msg: Connected<'_>, rel: Reliability| {
            let mut out = Vec::new();
            msg.emit(&mut out);
            c.send.send(now, &out, rel, 0, None);
        };
        let parsed = Connected::parse(&mut Reader::new(&m.data));
        match (parsed, self.cfg.role) {
            (Ok(Connected::ConnectedPing { time }), _) => reply(
                self,
                Connected::ConnectedPong {
                    ping_time: time,
                    pong_time: time_ms(now),
                },
                Reliability::UNRELIABLE,
            ),
            (Ok(Connected::ConnectedPong { .. }), _)
            | (Ok(Connected::DetectLostConnections), _) => {}
            (
                Ok(Connected::ConnectionRequest {
                    client_guid, time, ..
                }),
                Role::Server,
            ) => {
                self.peer_guid = Some(client_guid);
                let accepted = Connected::ConnectionRequestAccepted {
                    client_address: SystemAddress::from_socket_addr(self.cfg.peer),
                    system_index: 0,
                    addresses: self.addresses(),
                    request_time: time,
                    time: time_ms(now),
                };
                reply(self, accepted, Reliability::RELIABLE_ORDERED);
            }
            (Ok(Connected::ConnectionRequestAccepted { time, .. }), Role::Client) => {
                if self.state == State::Connecting {
                    let nic = Connected::NewIncomingConnection {
                        server_address: SystemAddress::from_socket_addr(self.cfg.peer),
                        addresses: self.addresses(),
                        pong_time: time,
                        time: time_ms(now),
                    };
                    reply(self, nic, Reliability::RELIABLE_ORDERED);
                    self.state = State::Connected;
                    self.connected_at = Some(now);
                    self.events.push_back(Event::Connected);
                }
            }
            (Ok(Connected::NewIncomingConnection { .. }), Role::Server) => {
                if self.state == State::Connecting {
                    self.state = State::Connected;
                    self.connected_at = Some(now);
                    self.events.push_back(Event::Connected);
                }
            }
            (Ok(Connected::DisconnectionNotification), _) => {
                // Our ACK of it goes out with the next poll_transmit.
                self.finish(CloseReason::ByPeer);
            }
            _ => {
                self.stats.messages_delivered += 1;
                self.events.push_back(Event::Message(m));
            }
        }
    }

    fn finish(&mut self, reason: CloseReason) {
        if self.state != State::Closed {
            self.state = State::Closed;
            self.close_reason = Some(reason);
            self.events.push_back(Event::Closed(reason));
        }
    }

    fn check_closing(&mut self, now: Duration) {
        if let Some(since) = self.closing_since {
            if self.state == State::Closing && (self.send.is_idle() || now >= since + CLOSING_TIME)
            {
                self.finish(CloseReason::ByUs);
            }
        }
    }

    /// Timers: time-out, keepalive, closing.
    fn on_timers(&mut self, now: Duration) {
        if self.state == State::Closed {
            return;
        }
        self.check_closing(now);
        let silent = now.saturating_sub(self.last_receive);
        let waiting = self.send.unacked() > 0 || self.state == State::Connecting;
        if waiting && silent >= self.cfg.timeout {
            self.finish(CloseReason::TimedOut);
            return;
        }
        if self.state == State::Connected {
            let last = self.send.last_reliable_queued().unwrap_or(self.created);
            let probe = self.probe_due().is_some_and(|t| now >= t);
            if probe || now.saturating_sub(last) >= self.cfg.timeout / 2 {
                let mut ping = Vec::new();
                Connected::ConnectedPing { time: time_ms(now) }.emit(&mut ping);
                self.send.send(now, &ping, Reliability::RELIABLE, 0, None);
                if probe {
                    self.probed = true;
                    self.stats.probes += 1;
                }
            }
        }
    }

    /// When the tail-loss probe is due ([`PROBE_AFTER`]): we sent after
    /// the peer's last data datagram, and have not probed since.
    fn probe_due(&self) -> Option<Duration> {
        let sent = self.send.last_reliable_queued()?;
        (self.state == State::Connected && !self.probed && sent > self.last_data_receive)
            .then_some(sent + PROBE_AFTER)
    }

    /// The next datagram to send, into `out`; false when nothing is due.
    pub fn poll_transmit(&mut self, now: Duration, out: &mut Vec<u8>) -> bool {
        self.on_timers(now);
        if self.state == State::Closed {
            // Only a last ACK (of the peer's disconnection notification).
            let sent = self.send.poll_transmit(now + super::send::ACK_DELAY, out)
                && out.first().is_some_and(|b| b & 0x40 != 0);
            if !sent {
                out.clear();
            }
            return sent;
        }
        let sent = self.send.poll_transmit(now, out);
        self.pump_send_events();
        sent
    }

    /// When to call `poll_transmit` next if no datagram arrives before.
    pub(crate) fn poll_timeout(&mut self) -> Option<Duration> {
        if self.state == State::Closed {
            return None;
        }
        let mut t = self.last_receive + self.cfg.timeout;
        if let Some(s) = self.send.poll_timeout() {
            t = t.min(s);
        }
        if let Some(since) = self.closing_since {
            t = t.min(since + CLOSING_TIME);
        }
        if self.state == State::Connected {
            let last = self.send.last_reliable_queued().unwrap_or(self.created);
            t = t.min(last + self.cfg.timeout / 2);
        }
        if let Some(probe) = self.probe_due() {
            t = t.min(probe);
        }
        Some(t)
    }

    /// The next thing the application should hear, in order.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Events wait to be polled (a driver should not sleep then).
    pub(crate) fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// When the connection was made (reply 2), in the caller's time.
    pub(crate) fn created(&self) -> Duration {
        self.created
    }

    /// Bytes queued and not yet sent: for a driver that paces a bulk sender.
    pub(crate) fn queued_bytes(&self) -> usize {
        self.send.queued_bytes()
    }

    /// Everything sent was acknowledged.
    pub fn is_idle(&self) -> bool {
        self.send.is_idle()
    }

    pub(crate) fn rtt(&self) -> Option<Duration> {
        self.send.rtt()
    }

    pub(crate) fn stats(&self) -> ConnectionStats {
        ConnectionStats {
            send: match &self.released {
                Some(s) => s.clone(),
                None => self.send.stats().clone(),
            },
            ..self.stats.clone()
        }
    }

    /// A closed connection gives its buffers back: the parts of split
    /// messages and the messages waiting for their order that it held, and
    /// what it still had to send. Its statistics stay.
    pub(crate) fn release(&mut self) {
        if self.state != State::Closed || self.released.is_some() {
            return;
        }
        self.released = Some(self.send.stats().clone());
        self.recv = ReceiveHalf::new(self.cfg.receive.clone());
        self.send = SendHalf::new(SendConfig {
            mtu: self.cfg.mtu,
            max_unacked: self.cfg.max_unacked,
        });
    }

    /// Bytes this connection holds that its peer controls (split parts,
    /// messages waiting for their order, the reliable hole window).
    pub fn held_bytes(&self) -> usize {
        self.recv.footprint()
    }

    pub(crate) fn close_reason(&self) -> Option<CloseReason> {
        self.close_reason
    }
}
