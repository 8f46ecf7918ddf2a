//! The reliability mirror: each flow's RakNet state replayed as each side saw it.
//!
//! One receive half (`session::receive`) per direction turns the captured data datagrams into
//! the messages that side's application received, in delivery order. Around
//! it, what only an observer can see: which datagrams each ACK and NACK
//! covers (RTT samples), resends and their cause, duplicated datagrams,
//! datagrams never acknowledged, NACKs of datagrams the capture shows, gaps.
//!
//! Memory is bounded: per flow, the datagram and reliable-index histories are
//! windows of fixed size; flows are evicted when idle and, past `max_flows`,
//! least recently seen first.

pub mod handshake;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::net::SocketAddr;
use std::time::Duration;

use crate::dissect::{Anomaly, Body, Dir, Flow, Packet};
use crate::session::receive::{Delivered, ReceiveConfig, ReceiveEvent, ReceiveHalf};
use crate::wire::ids::*;
use crate::wire::{AckList, AckRange, DataDatagram, Datagram, Offline, Reliability};

/// Settings of the mirror: each direction's receive half, and the bounds.
#[derive(Debug, Clone)]
pub struct MirrorConfig {
    /// The receive half of each direction (reassembly, bounds on what a peer sends).
    pub receive: ReceiveConfig,
    pub(crate) max_flows: usize,
    pub(crate) idle_timeout: Duration,
    /// Datagrams remembered per direction for ACK/NACK matching and resends.
    pub(crate) history: usize,
    /// RTT samples kept per flow (past it, every other one is dropped).
    pub(crate) max_rtt_samples: usize,
    /// Hand out delivered messages; off, only their counts and findings.
    pub(crate) messages: bool,
    /// Bytes all flows may hold together (messages and parts held, hole
    /// windows, histories); past it the least recently seen flows are closed.
    pub(crate) memory_budget: usize,
}

impl MirrorConfig {
    /// The defaults, with split packets reassembled as `reassembly` says.
    pub(crate) fn reassembling(reassembly: crate::session::receive::Reassembly) -> MirrorConfig {
        let mut cfg = MirrorConfig::default();
        cfg.receive.reassembly = reassembly;
        cfg
    }
}

impl Default for MirrorConfig {
    fn default() -> Self {
        MirrorConfig {
            receive: ReceiveConfig {
                // Per flow and direction; the budget below bounds the sum.
                max_held_bytes: 16 << 20,
                // The original accepts holes of a million, but its sender never
                // has more than 512 reliable messages in flight.
                max_reliable_hole: 65_536,
                ..ReceiveConfig::default()
            },
            max_flows: 65_536,
            idle_timeout: Duration::from_secs(600),
            history: 2048,
            max_rtt_samples: 1024,
            messages: true,
            memory_budget: 256 << 20,
        }
    }
}

/// A message delivered to one side's application.
#[derive(Debug, Clone)]
pub struct Message {
    /// The flow's number.
    pub flow: u32,
    /// `c2s`: received by the server.
    pub dir: Dir,
    /// The frame that completed delivery.
    pub frame: u64,
    /// That frame's capture time.
    pub ts: Duration,
    /// The whole message (empty when `receive.keep_data` is off, or `keep_only` names another id).
    pub data: Vec<u8>,
    /// As on the wire (for a split message, its first-arrived part's).
    pub reliability: Reliability,
    /// Ordering channel, for ordered and sequenced messages.
    pub channel: Option<u8>,
    /// What was wrong or notable about its delivery.
    pub anomalies: Vec<Anomaly>,
}

/// How far a connection got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum FlowState {
    /// Only pings and pongs.
    Unconnected,
    Handshake,
    Connected,
    Refused,
    /// A side sent a disconnection notification.
    DisconnectedByClient,
    DisconnectedByServer,
}

impl FlowState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FlowState::Unconnected => "unconnected",
            FlowState::Handshake => "handshake",
            FlowState::Connected => "connected",
            FlowState::Refused => "refused",
            FlowState::DisconnectedByClient => "disconnected_by_client",
            FlowState::DisconnectedByServer => "disconnected_by_server",
        }
    }
}

/// Counts for one direction (what its sender sent, what its receiver got).
#[derive(Debug, Clone, Default)]
pub struct DirStats {
    pub(crate) packets: u64,
    pub(crate) bytes: u64,
    pub(crate) data_datagrams: u64,
    /// ACK and NACK datagrams sent in this direction.
    pub(crate) acks: u64,
    pub(crate) nacks: u64,
    /// Datagram numbers of this direction NACKed by the receiver.
    pub nacked: u64,
    /// Datagram numbers of this direction never seen in the capture.
    pub never_seen: u64,
    /// Datagrams of this direction that no ACK covered.
    pub(crate) never_acked: u64,
    pub(crate) resends: u64,
    pub(crate) duplicates: u64,
    pub(crate) messages: u64,
    pub(crate) splits: u64,
    pub(crate) anomalies: u64,
}

struct SentDatagram {
    seq: u32,
    ts: Duration,
    frame: u64,
    acked: bool,
    nacked: bool,
}

/// One direction: its receiver's state and the observer's history of it.
struct Half {
    rx: ReceiveHalf,
    /// Recent datagrams, direct-mapped by datagram number (a power-of-two ring).
    sent: Vec<Option<SentDatagram>>,
    /// Recent reliable indices and the datagram that first carried them,
    /// direct-mapped by reliable index.
    reliable_seen: Vec<Option<(u32, u32)>>,
    stats: DirStats,
}

impl Half {
    fn new(cfg: &ReceiveConfig) -> Self {
        Half {
            rx: ReceiveHalf::new(cfg.clone()),
            sent: Vec::new(),
            reliable_seen: Vec::new(),
            stats: DirStats::default(),
        }
    }

    fn slot(&self, seq: u32) -> usize {
        seq as usize & (self.sent.len().wrapping_sub(1))
    }

    fn find(&mut self, seq: u32) -> Option<&mut SentDatagram> {
        if self.sent.is_empty() {
            return None;
        }
        let i = self.slot(seq);
        self.sent[i].as_mut().filter(|d| d.seq == seq)
    }

    /// Remember a datagram; the one it displaces counts as never acknowledged if it was not.
    fn remember(&mut self, d: SentDatagram, history: usize) {
        if self.sent.is_empty() {
            self.sent.resize_with(INITIAL_SLOTS, || None);
        }
        let mut i = self.slot(d.seq);
        // A busy slot means the window is full: grow it up to `history`, then overwrite.
        if self.sent[i].is_some() && self.sent.len() < history.next_power_of_two() {
            let old = std::mem::take(&mut self.sent);
            self.sent.resize_with(old.len() * 2, || None);
            for e in old.into_iter().flatten() {
                let j = self.slot(e.seq);
                self.sent[j] = Some(e);
            }
            i = self.slot(d.seq);
        }
        if let Some(old) = self.sent[i].replace(d) {
            if !old.acked {
                self.stats.never_acked += 1;
            }
        }
    }

    /// Bytes held for this direction.
    fn footprint(&self) -> usize {
        self.sent.capacity() * std::mem::size_of::<Option<SentDatagram>>()
            + self.reliable_seen.capacity() * std::mem::size_of::<Option<(u32, u32)>>()
            + self.rx.footprint()
    }

    /// The datagram that first carried reliable index `ri`, remembering `seq` if none did.
    fn first_carrier(&mut self, ri: u32, seq: u32, history: usize) -> Option<u32> {
        if self.reliable_seen.is_empty() {
            self.reliable_seen.resize_with(INITIAL_SLOTS, || None);
        }
        let mask = |v: &Vec<Option<(u32, u32)>>| v.len() - 1;
        let mut i = ri as usize & mask(&self.reliable_seen);
        match self.reliable_seen[i] {
            Some((r, first)) if r == ri => return Some(first),
            Some(_) if self.reliable_seen.len() < (history * 4).next_power_of_two() => {
                let old = std::mem::take(&mut self.reliable_seen);
                self.reliable_seen.resize_with(old.len() * 2, || None);
                let m = mask(&self.reliable_seen);
                for (r, first) in old.into_iter().flatten() {
                    self.reliable_seen[r as usize & m] = Some((r, first));
                }
                i = ri as usize & m;
            }
            _ => {}
        }
        self.reliable_seen[i] = Some((ri, seq));
        None
    }
}

/// Slots a history starts with; it doubles as the flow needs, up to `history`.
const INITIAL_SLOTS: usize = 8;

/// What the mirror knows of one flow.
pub struct FlowMirror {
    /// The flow's number, as the dissector gave it.
    pub id: u32,
    /// The client's address.
    pub client: SocketAddr,
    /// The server's address.
    pub server: SocketAddr,
    pub(crate) client_guid: Option<u64>,
    pub(crate) server_guid: Option<u64>,
    pub(crate) protocol: Option<u8>,
    pub(crate) mtu: Option<u16>,
    /// State of the flow's latest session.
    pub(crate) state: FlowState,
    /// Sessions seen: each run of data datagrams with its own reliability
    /// state (a client that reconnects from the same address starts another).
    /// 0 when the flow carried offline messages only.
    pub(crate) sessions: u32,
    /// Whether the current session has carried data datagrams.
    session_used: bool,
    pub(crate) first_ts: Duration,
    pub(crate) last_ts: Duration,
    halves: [Option<Box<Half>>; 2],
    /// RTT samples in ms (thinned past `max_rtt_samples`), and the exact extremes.
    rtt: Vec<f64>,
    rtt_min: f64,
    rtt_max: f64,
    rtt_count: usize,
    /// Bytes this flow held when last measured.
    footprint: usize,
    /// The RTT figures, fixed when the flow is closed (its samples are dropped then).
    rtt_closed: Option<(f64, f64, f64, usize)>,
    /// Per-direction counters of halves already dropped, or not yet made.
    idle_stats: [DirStats; 2],
}

impl FlowMirror {
    /// A flow first seen at `ts`, with these roles.
    fn new(id: u32, client: SocketAddr, server: SocketAddr, ts: Duration) -> FlowMirror {
        FlowMirror {
            id,
            client,
            server,
            client_guid: None,
            server_guid: None,
            protocol: None,
            mtu: None,
            state: FlowState::Unconnected,
            sessions: 0,
            session_used: false,
            first_ts: ts,
            last_ts: ts,
            halves: [None, None],
            rtt: Vec::new(),
            rtt_min: f64::INFINITY,
            rtt_max: 0.0,
            rtt_count: 0,
            footprint: 0,
            rtt_closed: None,
            idle_stats: [DirStats::default(), DirStats::default()],
        }
    }

    /// The counters of one direction (`c2s`: as the server received it).
    pub fn stats(&self, dir: Dir) -> &DirStats {
        match &self.halves[dir.index()] {
            Some(h) => &h.stats,
            None => &self.idle_stats[dir.index()],
        }
    }

    /// RTT samples in milliseconds: (min, median, max, count).
    pub fn rtt_ms(&self) -> Option<(f64, f64, f64, usize)> {
        if self.rtt_closed.is_some() {
            return self.rtt_closed;
        }
        if self.rtt.is_empty() {
            return None;
        }
        let mut v = self.rtt.clone();
        let mid = v.len() / 2;
        let (_, median, _) = v.select_nth_unstable_by(mid, |a, b| a.total_cmp(b));
        Some((self.rtt_min, *median, self.rtt_max, self.rtt_count))
    }

    fn measure(&self) -> usize {
        self.halves
            .iter()
            .flatten()
            .map(|h| h.footprint())
            .sum::<usize>()
            + self.rtt.capacity() * std::mem::size_of::<f64>()
    }

    fn half(&mut self, dir: Dir, cfg: &ReceiveConfig) -> &mut Half {
        let i = dir.index();
        let stats = &mut self.idle_stats[i];
        // Without the handshake, the first numbers seen are where the receiver stood.
        let join = self.state < FlowState::Handshake;
        self.halves[i].get_or_insert_with(|| {
            let mut cfg = cfg.clone();
            cfg.join_mid_stream = cfg.join_mid_stream || join;
            let mut h = Box::new(Half::new(&cfg));
            h.stats = std::mem::take(stats);
            h
        })
    }

    /// The current session is over: its receive state ends (what it still
    /// holds becomes anomalies of `out`, its counts stay in the flow's), and
    /// the next data datagram starts another session.
    fn new_session(&mut self, messages: bool, out: &mut Observation) {
        end_halves(self, messages, out, "ended by a new connection");
        self.state = FlowState::Unconnected;
        self.session_used = false;
    }

    /// Client and server the other way round: each direction's receive state,
    /// history and counts go with its sender.
    fn swap_roles(&mut self) {
        std::mem::swap(&mut self.client, &mut self.server);
        self.halves.swap(0, 1);
        self.idle_stats.swap(0, 1);
        self.state = match self.state {
            FlowState::DisconnectedByClient => FlowState::DisconnectedByServer,
            FlowState::DisconnectedByServer => FlowState::DisconnectedByClient,
            s => s,
        };
    }

    fn learn(&mut self, flow: &Flow) {
        self.client = flow.client;
        self.server = flow.server;
        self.client_guid = flow.client_guid.or(self.client_guid);
        self.server_guid = flow.server_guid.or(self.server_guid);
        self.protocol = flow.protocol.or(self.protocol);
        self.mtu = flow.mtu.or(self.mtu);
    }
}

/// End both receive halves of `f`: what their receivers still hold becomes
/// anomalies of `out` that say whose they are and `why` (they show on another
/// flow's packet, or at the end), and their counts move to the flow's totals.
fn end_halves(f: &mut FlowMirror, messages: bool, out: &mut Observation, why: &str) {
    for dir in [Dir::C2s, Dir::S2c] {
        let i = dir.index();
        if let Some(mut h) = f.halves[i].take() {
            h.rx.finish();
            let mut held = Vec::new();
            drain(
                &mut h,
                f.id,
                dir,
                &mut held,
                messages.then_some(&mut out.messages),
            );
            h.stats.never_acked += h.sent.iter().flatten().filter(|d| !d.acked).count() as u64;
            h.stats.anomalies += held.len() as u64;
            out.anomalies.extend(held.into_iter().map(|a| Anomaly {
                kind: a.kind,
                detail: format!("flow {} {} {why}: {}", f.id, dir.as_str(), a.detail),
            }));
            f.idle_stats[i] = std::mem::take(&mut h.stats);
        }
    }
}

fn anomaly(kind: &'static str, detail: String) -> Anomaly {
    Anomaly { kind, detail }
}

/// Hashes the dissector's flow ids, which it hands out in sequence.
// Not ahash: with it a million short flows peaked 60 MB higher (tests/adversarial.rs).
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 29)
    }
}

/// Counters across all flows.
#[derive(Debug, Default, Clone)]
pub(crate) struct MirrorStats {
    pub(crate) flows_evicted: u64,
    /// Flows closed early because all flows together held more than the budget.
    pub(crate) flows_shed: u64,
}

/// The flow table of the mirror, keyed by the dissector's flow id.
pub struct Mirror {
    cfg: MirrorConfig,
    flows: HashMap<u32, FlowMirror, BuildHasherDefault<IdHasher>>,
    keep_done: bool,
    /// Sum of the flows' footprints.
    total: usize,
    /// The capture time of the last sweep for idle flows.
    swept: Option<Duration>,
    pub(crate) stats: MirrorStats,
}

/// What observing one packet produced.
#[derive(Default)]
pub struct Observation {
    /// To attach to the packet.
    pub(crate) anomalies: Vec<Anomaly>,
    /// Messages delivered because of this packet.
    pub messages: Vec<Message>,
    /// Flows that ended here (evicted, or at the end), with `keep_done`.
    pub closed: Vec<FlowMirror>,
    /// The ids of the flows that ended here, with `keep_done` or without:
    /// for the layers above that hold state per flow (the game layer).
    pub ended: Vec<u32>,
    /// RTT samples (ms) this packet produced, when it is an ACK: one per
    /// datagram of the other direction that it acknowledged first, the time
    /// from that datagram to this ACK. Cleared by each [`Mirror::observe`].
    pub(crate) rtt_ms: Vec<f64>,
}

impl Mirror {
    /// `keep_done`: hand out the flows that end, in [`Observation::closed`].
    pub fn new(cfg: MirrorConfig, keep_done: bool) -> Self {
        Mirror {
            cfg,
            flows: HashMap::default(),
            keep_done,
            total: 0,
            swept: None,
            stats: MirrorStats::default(),
        }
    }

    /// Close idle flows and, at the bound, the least recently seen eighth
    /// (in batches, so that a stream of new flows stays linear).
    fn evict(&mut self, now: Duration, out: &mut Observation) {
        let idle = self.cfg.idle_timeout;
        let max = self.cfg.max_flows.max(1);
        let mut gone: Vec<u32> = self
            .flows
            .values()
            .filter(|f| now.saturating_sub(f.last_ts) > idle)
            .map(|f| f.id)
            .collect();
        if self.flows.len() - gone.len() >= max {
            let mut by_age: Vec<(Duration, u32)> =
                self.flows.values().map(|f| (f.last_ts, f.id)).collect();
            let excess = by_age.len() - (max - max.div_ceil(8));
            by_age.select_nth_unstable(excess - 1);
            gone.extend(by_age[..excess].iter().map(|(_, id)| *id));
            gone.sort_unstable();
            gone.dedup();
            out.anomalies.push(anomaly(
                "bound_exceeded",
                format!(
                    "flows: {} held at once, the bound; closed the {excess} least recently seen",
                    self.flows.len()
                ),
            ));
        }
        for id in gone {
            if let Some(f) = self.flows.remove(&id) {
                self.stats.flows_evicted += 1;
                self.close(f, out, "closed (idle, or the flow bound)");
            }
        }
    }

    /// Re-measure a flow after a packet, and shed flows past the budget.
    fn account(&mut self, flow: u32, out: &mut Observation) {
        let (old, new) = match self.flows.get_mut(&flow) {
            Some(f) => {
                let new = f.measure();
                (std::mem::replace(&mut f.footprint, new), new)
            }
            None => (0, 0),
        };
        self.total = (self.total + new).saturating_sub(old);
        if self.total > self.cfg.memory_budget {
            self.shed(out);
        }
    }

    /// Close the least recently seen flows until all together hold no more
    /// than seven eighths of the budget.
    fn shed(&mut self, out: &mut Observation) {
        let mut by_age: Vec<(Duration, u32)> =
            self.flows.values().map(|f| (f.last_ts, f.id)).collect();
        by_age.sort_unstable();
        let target = self.cfg.memory_budget / 8 * 7;
        let mut closed = 0u64;
        for (_, id) in by_age {
            if self.total <= target {
                break;
            }
            if let Some(f) = self.flows.remove(&id) {
                closed += 1;
                self.close(f, out, "closed (memory budget)");
            }
        }
        self.stats.flows_shed += closed;
        out.anomalies.push(anomaly(
            "bound_exceeded",
            format!(
                "memory budget: flows held more than {} MiB together; closed the {closed} least recently seen",
                self.cfg.memory_budget >> 20
            ),
        ));
    }

    /// End of a flow: what its receivers still hold becomes anomalies.
    fn close(&mut self, mut f: FlowMirror, out: &mut Observation, why: &str) {
        self.total = self.total.saturating_sub(f.footprint);
        f.footprint = 0;
        end_halves(&mut f, self.cfg.messages, out, why);
        out.ended.push(f.id);
        if self.keep_done {
            f.rtt_closed = f.rtt_ms();
            f.rtt = Vec::new();
            out.closed.push(f);
        }
    }

    /// Feed one dissected packet, with the dissector's view of its flow.
    /// `flow` gives the dissector's view of the flow (GUIDs, protocol, MTU),
    /// asked for only when the packet can have changed it. The findings go
    /// into `out`, which is cleared first (its buffers are reused).
    pub(crate) fn observe<'f>(
        &mut self,
        p: &Packet<'_>,
        flow: impl FnOnce() -> Option<&'f Flow>,
        out: &mut Observation,
    ) {
        out.anomalies.clear();
        out.messages.clear();
        out.closed.clear();
        out.ended.clear();
        out.rtt_ms.clear();
        // Idle flows go as capture time passes (a tenth of the timeout at
        // most after their time), so that memory follows the flows alive,
        // not all the flows of the capture.
        let every = self.cfg.idle_timeout / 10;
        match self.swept {
            Some(t) if p.ts.saturating_sub(t) < every => {}
            Some(_) => {
                self.swept = Some(p.ts);
                self.evict(p.ts, out);
            }
            None => self.swept = Some(p.ts),
        }
        let (client, server) = match p.dir {
            Dir::C2s => (p.src, p.dst),
            Dir::S2c => (p.dst, p.src),
        };
        if !self.flows.contains_key(&p.flow) {
            if self.flows.len() >= self.cfg.max_flows.max(1) || self.flows.len() % 4096 == 4095 {
                self.evict(p.ts, out);
            }
            let f = FlowMirror::new(p.flow, client, server, p.ts);
            self.flows.insert(p.flow, f);
        }
        let cfg = &self.cfg;
        let f = self
            .flows
            .get_mut(&p.flow)
            .expect("flow inserted above when absent");
        f.last_ts = p.ts;
        // The dissector took the roles the other way round at first (a guess
        // by port, before a message that only one side sends).
        if client != server && (f.client, f.server) == (server, client) {
            f.swap_roles();
        }
        match &p.body {
            Body::Offline { msg, .. } => offline(f, cfg, p, msg.as_ref(), flow, out),
            Body::Datagram(Some(Datagram::Data(d))) => data(f, cfg, p, d, flow, out),
            Body::Datagram(Some(Datagram::Ack(l))) => acks(f, cfg, p, l, true, out),
            Body::Datagram(Some(Datagram::Nack(l))) => acks(f, cfg, p, l, false, out),
            Body::Datagram(None) => {}
        }
        self.account(p.flow, out);
    }

    /// End of input: close every flow, in id order.
    pub fn finish(&mut self) -> Observation {
        let mut out = Observation::default();
        let mut ids: Vec<u32> = self.flows.keys().copied().collect();
        ids.sort();
        for id in ids {
            if let Some(f) = self.flows.remove(&id) {
                self.close(f, &mut out, "at the end of the capture");
            }
        }
        out
    }
}

/// Apply an ACK or NACK to a remembered datagram; true when it was worth an anomaly.
/// An offline message of flow `f`: its counts, and a new session or a
/// handshake step when it says one.
fn offline<'f>(
    f: &mut FlowMirror,
    cfg: &MirrorConfig,
    p: &Packet<'_>,
    msg: Option<&Offline<'_>>,
    flow: impl FnOnce() -> Option<&'f Flow>,
    out: &mut Observation,
) {
    let dir = p.dir;
    if let Some(flow) = flow() {
        f.learn(flow);
    }
    let st = &mut f.idle_stats[dir.index()];
    let st = match &mut f.halves[dir.index()] {
        Some(h) => &mut h.stats,
        None => st,
    };
    st.packets += 1;
    st.bytes += p.payload.len() as u64;
    if let Some(m) = msg {
        // The client opens another connection: its datagram
        // numbers and indices start over, and so do the server's.
        // Request 2 alone only after a finished session, as a
        // copy of the last one may come after the ConnectionRequest.
        let finished = f.state >= FlowState::Refused;
        let again = match m {
            Offline::OpenConnectionRequest1 { .. } => f.session_used || finished,
            Offline::OpenConnectionRequest2 { .. } => finished,
            _ => false,
        };
        if again {
            f.new_session(cfg.messages, out);
        }
        f.state = match m {
            Offline::OpenConnectionRequest1 { .. }
            | Offline::OpenConnectionReply1 { .. }
            | Offline::OpenConnectionRequest2 { .. }
            | Offline::OpenConnectionReply2 { .. } => f.state.max(FlowState::Handshake),
            Offline::IncompatibleProtocolVersion { .. } | Offline::Refusal { .. } => {
                FlowState::Refused
            }
            _ => f.state,
        };
    }
}

/// A data datagram of flow `f`: its counts, copies and resends, what its
/// receiver delivers, and the handshake's end or a goodbye.
fn data<'f>(
    f: &mut FlowMirror,
    cfg: &MirrorConfig,
    p: &Packet<'_>,
    d: &DataDatagram<'_>,
    flow: impl FnOnce() -> Option<&'f Flow>,
    out: &mut Observation,
) {
    let dir = p.dir;
    if d.capsules
        .iter()
        .any(|c| c.message_id() == Some(CONNECTION_REQUEST))
    {
        if let Some(flow) = flow() {
            f.learn(flow);
        }
        // After a disconnection, a ConnectionRequest whose datagram
        // number went back starts another session (one not resent).
        if f.state >= FlowState::DisconnectedByClient
            && f.halves[dir.index()]
                .as_ref()
                .is_none_or(|h| h.rx.is_behind(d.seq))
        {
            f.new_session(cfg.messages, out);
            f.state = FlowState::Handshake;
        }
    }
    if !f.session_used {
        f.session_used = true;
        f.sessions += 1;
    }
    let history = cfg.history;
    let h = f.half(dir, &cfg.receive);
    h.stats.packets += 1;
    h.stats.bytes += p.payload.len() as u64;
    h.stats.data_datagrams += 1;
    // The same datagram number twice is a copy, not a resend (resends get new numbers).
    if let Some(prev) = h.find(d.seq) {
        let prev_frame = prev.frame;
        h.stats.duplicates += 1;
        out.anomalies.push(anomaly(
            "duplicate",
            format!("datagram #{} again (first in frame {prev_frame})", d.seq),
        ));
    } else {
        for c in &d.capsules {
            let Some(ri) = c.reliable_index else { continue };
            match h.first_carrier(ri, d.seq, history) {
                Some(first) if first != d.seq => {
                    h.stats.resends += 1;
                    let cause = match h.find(first) {
                        Some(s) if s.nacked => "after NACK".to_string(),
                        Some(s) => format!(
                            "after timeout ({:.0} ms)",
                            p.ts.saturating_sub(s.ts).as_secs_f64() * 1000.0
                        ),
                        None => "after a datagram no longer remembered".to_string(),
                    };
                    out.anomalies.push(anomaly(
                        "resend",
                        format!("resend of #{first} (reliable index {ri}) {cause}"),
                    ));
                }
                _ => {}
            }
        }
        h.remember(
            SentDatagram {
                seq: d.seq,
                ts: p.ts,
                frame: p.frame,
                acked: false,
                nacked: false,
            },
            history,
        );
    }
    h.rx.handle_datagram(p.ts, p.frame, d.seq, &d.capsules);
    let before = out.anomalies.len();
    let messages = cfg.messages.then_some(&mut out.messages);
    drain(h, p.flow, dir, &mut out.anomalies, messages);
    h.stats.anomalies += (out.anomalies.len() - before) as u64;
    // The handshake's end and a goodbye, as their capsules pass.
    for id in d.capsules.iter().filter_map(|c| c.message_id()) {
        f.state = match (id, dir) {
            (CONNECTION_REQUEST_ACCEPTED | NEW_INCOMING_CONNECTION, _) => {
                f.state.max(FlowState::Connected)
            }
            (DISCONNECTION_NOTIFICATION, Dir::C2s) => FlowState::DisconnectedByClient,
            (DISCONNECTION_NOTIFICATION, Dir::S2c) => FlowState::DisconnectedByServer,
            _ => f.state,
        };
    }
}

/// An ACK (`is_ack`) or NACK of flow `f`: its counts, and the datagrams it
/// covers the other way, with their round-trip times.
fn acks(
    f: &mut FlowMirror,
    cfg: &MirrorConfig,
    p: &Packet<'_>,
    l: &AckList,
    is_ack: bool,
    out: &mut Observation,
) {
    let dir = p.dir;
    {
        let i = dir.index();
        let st = match &mut f.halves[i] {
            Some(h) => &mut h.stats,
            None => &mut f.idle_stats[i],
        };
        st.packets += 1;
        st.bytes += p.payload.len() as u64;
        if is_ack {
            st.acks += 1;
        } else {
            st.nacks += 1;
        }
    }
    // ACKs and NACKs of `dir` cover datagrams sent the other way.
    // RTT samples go straight to `out.rtt_ms` (cleared above).
    let rtts = &mut out.rtt_ms;
    let mut flagged = 0;
    let i = dir.reverse().index();
    // Nothing seen the other way: nothing to match, only to count.
    let Some(peer) = f.halves[i].as_deref_mut() else {
        if !is_ack {
            let st = &mut f.idle_stats[i];
            st.nacked += l
                .ranges
                .iter()
                .map(|r| u64::from(r.max.wrapping_sub(r.min) & 0xff_ffff) + 1)
                .sum::<u64>();
        }
        return;
    };
    // Merged, so that repeated or overlapping ranges cost one walk
    // (most ACKs have one range: no list to build then).
    let one;
    let mut many: Vec<(u32, u32)>;
    let ranges: &[(u32, u32)] = match l.ranges.as_slice() {
        [r] => {
            one = [(r.min, r.max)];
            &one
        }
        all => {
            many = all.iter().map(|r| (r.min, r.max)).collect();
            many.sort_unstable();
            many.dedup_by(|b, a| {
                if b.0 <= a.1.saturating_add(1) {
                    a.1 = a.1.max(b.1);
                    true
                } else {
                    false
                }
            });
            &many
        }
    };
    for &(min, max) in ranges {
        let r = AckRange { min, max };
        let r = &r;
        // A range is at most 2^24 numbers; look only at those remembered.
        let span = r.max.wrapping_sub(r.min) & 0xff_ffff;
        if span as usize > peer.sent.len() {
            for s in peer.sent.iter_mut().flatten() {
                let off = s.seq.wrapping_sub(r.min) & 0xff_ffff;
                if off <= span {
                    flagged += u64::from(mark(s, is_ack, p, rtts, &mut out.anomalies));
                }
            }
            if !is_ack {
                peer.stats.nacked += u64::from(span) + 1;
            }
            continue;
        }
        for k in 0..=span {
            let seq = r.min.wrapping_add(k) & 0xff_ffff;
            if !is_ack {
                peer.stats.nacked += 1;
            }
            if let Some(s) = peer.find(seq) {
                flagged += u64::from(mark(s, is_ack, p, rtts, &mut out.anomalies));
            }
        }
    }
    peer.stats.anomalies += flagged;
    for &r in out.rtt_ms.iter() {
        f.rtt_min = f.rtt_min.min(r);
        f.rtt_max = f.rtt_max.max(r);
        f.rtt_count += 1;
        if f.rtt.len() >= cfg.max_rtt_samples {
            let mut i = 0;
            f.rtt.retain(|_| {
                i += 1;
                i % 2 == 0
            });
        }
        f.rtt.push(r);
    }
}

fn mark(
    s: &mut SentDatagram,
    is_ack: bool,
    p: &Packet<'_>,
    rtts: &mut Vec<f64>,
    anomalies: &mut Vec<Anomaly>,
) -> bool {
    if is_ack {
        if !s.acked {
            s.acked = true;
            rtts.push(p.ts.saturating_sub(s.ts).as_secs_f64() * 1000.0);
        }
        return false;
    }
    if s.nacked {
        return false;
    }
    s.nacked = true;
    anomalies.push(if s.acked {
        anomaly(
            "nack_of_acked",
            format!("NACK of #{}, already acknowledged", s.seq),
        )
    } else {
        anomaly(
            "nack_of_seen",
            format!(
                "NACK of #{}, which the capture shows in frame {}",
                s.seq, s.frame
            ),
        )
    });
    true
}

/// Move a receive half's events into messages (with their anomalies) and packet anomalies.
fn drain(
    h: &mut Half,
    flow: u32,
    dir: Dir,
    anomalies: &mut Vec<Anomaly>,
    mut messages: Option<&mut Vec<Message>>,
) {
    while let Some(ev) = h.rx.poll_event() {
        match ev {
            ReceiveEvent::Delivered(d) => {
                h.stats.messages += 1;
                if d.split.is_some() {
                    h.stats.splits += 1;
                }
                let m = message(flow, dir, d);
                // A message's own findings show on the packet that completed it too.
                anomalies.extend(m.anomalies.iter().cloned());
                if let Some(v) = messages.as_deref_mut() {
                    v.push(m);
                }
            }
            ReceiveEvent::DatagramGap {
                first_missing,
                count,
                ..
            } => {
                h.stats.never_seen += u64::from(count);
                anomalies.push(anomaly(
                    "gap",
                    if count == 1 {
                        format!("datagram #{first_missing} not received")
                    } else {
                        format!(
                            "datagrams #{first_missing} to #{} not received",
                            first_missing.wrapping_add(count - 1) & 0xff_ffff
                        )
                    },
                ));
            }
            ReceiveEvent::LateDatagram { seq, .. } => anomalies.push(anomaly(
                "out_of_order",
                format!("datagram #{seq} after a later one"),
            )),
            ReceiveEvent::DatagramDropped { seq, skipped, .. } => anomalies.push(anomaly(
                "datagram_dropped",
                format!("datagram #{seq} skips {skipped} numbers: the original drops it"),
            )),
            ReceiveEvent::DuplicateReliable { reliable_index, .. } => anomalies.push(anomaly(
                "duplicate",
                format!("reliable index {reliable_index} already received: dropped"),
            )),
            ReceiveEvent::StaleSequenced {
                channel,
                order_index,
                sequence_index,
                ..
            } => anomalies.push(anomaly(
                "stale_sequenced",
                format!(
                    "sequenced message ch={channel} oi={order_index} si={sequence_index} older than one delivered: dropped"
                ),
            )),
            ReceiveEvent::OldOrdered {
                channel,
                order_index,
                ..
            } => anomalies.push(anomaly(
                "old_ordered",
                format!("ordered message ch={channel} oi={order_index} already passed: dropped"),
            )),
            ReceiveEvent::InvalidChannel { channel, .. } => anomalies.push(anomaly(
                "invalid_channel",
                format!("ordering channel {channel}, the original drops it"),
            )),
            ReceiveEvent::SplitIncomplete {
                split_id,
                have,
                count,
            } => anomalies.push(anomaly(
                "split_incomplete",
                format!("split {split_id}: {have} of {count} parts received"),
            )),
            ReceiveEvent::BoundExceeded { what, detail, .. } => {
                anomalies.push(anomaly("bound_exceeded", format!("{what}: {detail}")))
            }
        }
    }
}

fn message(flow: u32, dir: Dir, d: Delivered) -> Message {
    let mut anomalies = Vec::new();
    if d.arrival_order_differs {
        anomalies.push(anomaly(
            "split_arrival_order",
            "parts arrived out of order: an original-RakNet (4.081) receiver joins them in arrival \
             order and would have delivered a corrupted message"
                .to_string(),
        ));
    }
    Message {
        flow,
        dir,
        frame: d.frame,
        ts: d.ts,
        data: d.data,
        reliability: d.reliability,
        channel: d.channel,
        anomalies,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{CaptureReader, UdpDatagram};
    use crate::dissect::{Dissector, Options};

    /// The UDP datagrams of `samples/NAME` (a capture of real peers).
    fn sample(name: &str) -> Vec<UdpDatagram> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("samples")
            .join(name);
        let mut r = CaptureReader::open(&path).expect("the sample opens");
        let mut v = Vec::new();
        while let Some(d) = r.next_datagram() {
            v.push(d.expect("the sample reads to its end"));
        }
        v
    }

    /// `first`, then `again` shifted 30 s later and numbered after it: the
    /// same client connecting again from the same address.
    fn twice(first: &[UdpDatagram], again: &[UdpDatagram]) -> Vec<UdpDatagram> {
        let mut v = first.to_vec();
        for (k, d) in again.iter().enumerate() {
            let mut d = d.clone();
            d.ts += Duration::from_secs(30);
            d.frame = first.len() as u64 + k as u64 + 1;
            v.push(d);
        }
        v
    }

    /// Dissect and mirror `datagrams`: the messages delivered, the flows at
    /// the end, and the anomalies found on the way.
    fn mirror(datagrams: &[UdpDatagram]) -> (Vec<Message>, Vec<FlowMirror>, Vec<Anomaly>) {
        let mut d = Dissector::new(Options::default());
        let mut m = Mirror::new(MirrorConfig::default(), true);
        let mut obs = Observation::default();
        let (mut messages, mut anomalies) = (Vec::new(), Vec::new());
        for u in datagrams {
            let Some(p) = d.dissect(u) else { continue };
            m.observe(&p, || d.flow(p.src, p.dst), &mut obs);
            messages.append(&mut obs.messages);
            anomalies.append(&mut obs.anomalies);
        }
        let mut end = m.finish();
        messages.append(&mut end.messages);
        anomalies.append(&mut end.anomalies);
        (messages, end.closed, anomalies)
    }

    fn data(messages: &[Message]) -> Vec<(Dir, Vec<u8>)> {
        messages.iter().map(|m| (m.dir, m.data.clone())).collect()
    }

    /// A flow idle past the timeout is closed as capture time passes, by
    /// the first packet of any flow a tenth of the timeout later: memory
    /// follows the flows alive, not every flow the capture ever had.
    #[test]
    fn idle_flows_end_as_capture_time_passes() {
        let once = sample("handshake.pcap");
        let mut later = Vec::new();
        for (k, d) in once.iter().enumerate() {
            let mut d = d.clone();
            // The same session 700 s on, from another client port.
            d.ts += Duration::from_secs(700);
            d.frame = once.len() as u64 + k as u64 + 1;
            if d.src.port() == 19141 {
                d.src.set_port(29141);
            } else {
                d.dst.set_port(29141);
            }
            later.push(d);
        }
        let mut d = Dissector::new(Options::default());
        let mut m = Mirror::new(MirrorConfig::default(), false);
        let mut obs = Observation::default();
        let (mut ended, mut first_later) = (Vec::new(), None);
        for u in once.iter().chain(&later) {
            let Some(p) = d.dissect(u) else { continue };
            if u.frame > once.len() as u64 {
                first_later.get_or_insert(u.frame);
            }
            m.observe(&p, || d.flow(p.src, p.dst), &mut obs);
            if !obs.ended.is_empty() {
                ended.push((u.frame, obs.ended.clone()));
            }
            assert!(obs.closed.is_empty(), "closed flows only with keep_done");
        }
        // Flow 1 ends at the second session's first packet, flow 2 at the end.
        assert_eq!(ended, [(first_later.unwrap(), vec![1])]);
        assert_eq!(m.finish().ended, [2]);
    }

    #[test]
    fn a_client_that_connects_again_starts_a_new_session() {
        let once = sample("handshake.pcap");
        let (single, flows, _) = mirror(&once);
        assert_eq!((flows.len(), flows[0].sessions), (1, 1));
        assert_eq!(single.len(), 80);
        // The whole capture again, its offline handshake included.
        let (double, flows, anomalies) = mirror(&twice(&once, &once));
        assert!(anomalies.is_empty(), "{anomalies:?}");
        let mut want = data(&single);
        want.extend(data(&single));
        assert_eq!(data(&double), want, "both sessions' messages, in order");
        let f = &flows[0];
        assert_eq!((flows.len(), f.sessions), (1, 2));
        assert_eq!(f.state, FlowState::DisconnectedByClient);
        for dir in [Dir::C2s, Dir::S2c] {
            let (one, two) = (&mirror(&once).1[0], f);
            assert_eq!(two.stats(dir).messages, 2 * one.stats(dir).messages);
            assert_eq!(
                two.stats(dir).data_datagrams,
                2 * one.stats(dir).data_datagrams
            );
            assert_eq!(two.stats(dir).duplicates, 0);
        }
    }

    #[test]
    fn a_connection_request_after_a_disconnection_starts_a_new_session() {
        let once = sample("handshake.pcap");
        // From the ConnectionRequest on: no offline handshake the second time.
        let connected: Vec<UdpDatagram> = once
            .iter()
            .skip_while(|d| d.payload.first().is_none_or(|&b| b < 0x80))
            .cloned()
            .collect();
        assert_eq!(connected.len(), once.len() - 8);
        let (single, _, _) = mirror(&once);
        let (double, flows, anomalies) = mirror(&twice(&once, &connected));
        assert!(anomalies.is_empty(), "{anomalies:?}");
        let mut want = data(&single);
        want.extend(data(&single));
        assert_eq!(data(&double), want);
        assert_eq!(flows[0].sessions, 2);
        assert_eq!(flows[0].state, FlowState::DisconnectedByClient);
    }

    #[test]
    fn each_direction_follows_its_sender_when_the_roles_are_corrected() {
        // The client moved below the server's port, and the capture cut
        // before the server's ACK of the ConnectionRequest: the dissector
        // guesses the roles by port (wrongly) until ConnectionRequestAccepted.
        let mut once = sample("handshake.pcap");
        once.retain(|d| d.src != d.dst);
        for d in &mut once {
            for a in [&mut d.src, &mut d.dst] {
                if a.port() == 19141 {
                    a.set_port(1141);
                }
            }
        }
        let (all, whole, _) = mirror(&once);
        let request = once.iter().position(|d| d.payload[0] >= 0x80).unwrap();
        let (got, flows, found) = mirror(&once[request + 1..]);
        // The ConnectionRequest's datagram is the one the capture lacks.
        let gap = "datagram #0 not received";
        assert!(found.iter().all(|a| a.detail == gap), "{found:?}");
        // Every message but the ConnectionRequest, each to its receiver.
        assert_eq!(all[0].data[0], CONNECTION_REQUEST);
        assert_eq!(data(&got), data(&all[1..]));
        let f = &flows[0];
        assert_eq!((f.client.port(), f.server.port()), (1141, 19140));
        assert_eq!(f.state, FlowState::DisconnectedByClient);
        assert_eq!(f.sessions, 1);
        for dir in [Dir::C2s, Dir::S2c] {
            let (w, g) = (whole[0].stats(dir), f.stats(dir));
            assert_eq!(g.acks, w.acks, "{dir:?}: every ACK of the capture");
            assert_eq!(g.duplicates + g.resends, 0, "{dir:?}");
        }
        assert_eq!(f.stats(Dir::C2s).never_seen, 1);
        assert_eq!(f.stats(Dir::S2c).anomalies, 0);
        assert_eq!(
            f.stats(Dir::C2s).messages,
            whole[0].stats(Dir::C2s).messages - 1
        );
    }

    #[test]
    fn one_session_when_the_client_does_not_connect_again() {
        // A copy of each data datagram right after it: duplicates, not new sessions.
        let once = sample("handshake.pcap");
        let mut copies = Vec::new();
        for d in &once {
            copies.push(d.clone());
            if d.payload.first().is_some_and(|&b| b >= 0x80) {
                copies.push(d.clone());
            }
        }
        let reliable = |v: Vec<Message>| -> Vec<(Dir, Vec<u8>)> {
            let v: Vec<Message> = v
                .into_iter()
                .filter(|m| m.reliability.has_reliable_index())
                .collect();
            data(&v)
        };
        let (single, one, _) = mirror(&once);
        let (got, flows, _) = mirror(&copies);
        assert_eq!(reliable(got), reliable(single));
        assert_eq!(flows[0].sessions, 1);
        let c2s = one[0].stats(Dir::C2s).data_datagrams;
        assert_eq!(flows[0].stats(Dir::C2s).duplicates, c2s);
    }
}
