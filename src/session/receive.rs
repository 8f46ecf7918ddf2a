//! The receive half of the reliability layer: what one side's application
//! gets from the data datagrams it receives (WIRE_FORMAT.md §4-7).
//!
//! It follows the original library (RakNet 4.081,
//! `ReliabilityLayer.cpp:HandleSocketReceiveFromConnectedPlayer` and
//! `CCRakNetSlidingWindow.cpp:OnGotPacket`) step by step, per datagram:
//! the 24-bit datagram number (gaps the original NAKs, late datagrams,
//! datagrams it drops), then per capsule: channel check, de-duplication of
//! reliable messages by reliable index with the original's hole queue, split
//! reassembly, and the ordering channels with the original's heap.
//!
//! Two deliberate departures, both configurable or reported:
//! - splits are joined by split index ([`Reassembly::ByIndex`]); the original
//!   joins them in arrival order ([`Reassembly::Arrival`]), and
//!   [`Delivered::arrival_order_differs`] says when that would have mattered;
//! - everything a peer controls is bounded by [`ReceiveConfig`]: what would
//!   go past a bound is dropped and reported as [`ReceiveEvent::BoundExceeded`].
//!
//! Sans-IO: [`ReceiveHalf::handle_datagram`] in, [`ReceiveHalf::poll_event`] out.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::time::Duration;

use crate::wire::{Capsule, Reliability};

/// Datagram numbers, reliable, ordering and sequencing indexes are all `uint24_t`.
const MASK24: u32 = 0xff_ffff;
/// `(uint24_t)-1 / 2`, the half range of every 24-bit comparison.
const HALF24: u32 = 0x7f_ffff;
/// `OnGotPacket`: a datagram skipping more numbers than this is dropped.
const MAX_DATAGRAM_SKIP: u32 = 50_000;
/// `OnGotPacket`: at most this many skipped numbers are NAKed.
const MAX_NAKS_PER_GAP: u32 = 1_000;
/// `NUMBER_OF_ORDERED_STREAMS`.
const ORDERING_CHANNELS: usize = 32;
/// Heap weight of one ordering index: `orderedHoleCount * 1048576`.
const ORDER_WEIGHT: u64 = 1 << 20;

/// Bookkeeping charged to [`ReceiveHalf::held_bytes`] for every held split
/// part or ordering-heap message, so that many tiny parts count too.
pub const HELD_ENTRY_OVERHEAD: usize = 64;

/// How the parts of a split message are joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reassembly {
    /// By split index: the bytes the sender sent.
    #[default]
    ByIndex,
    /// In arrival order, as the original 4.081 does
    /// (`BuildPacketFromSplitPacketList`): out-of-order parts give other bytes.
    Arrival,
}

/// Bounds on everything a peer controls, and the reassembly mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiveConfig {
    pub reassembly: Reassembly,
    /// Parts per split message; a part announcing more is dropped.
    pub max_split_parts: u32,
    /// Split messages in progress at once; a part of one more is dropped.
    pub max_concurrent_splits: usize,
    /// Bytes held in splits and ordering heaps ([`HELD_ENTRY_OVERHEAD`] per entry included).
    pub max_held_bytes: usize,
    /// Ordering index ahead of the channel's read index by more than this: dropped.
    pub max_ordering_gap: u32,
    /// Reliable index past the first missing one by more than this: dropped
    /// (the original's hole queue bound, 1,000,000).
    pub max_reliable_hole: u32,
    /// Take the first datagram number, reliable index and per-channel
    /// ordering index seen as the expected ones, for a capture that starts
    /// after the connection did. Off: everything starts at 0, as in the original.
    pub join_mid_stream: bool,
    /// Copy message bytes into `Delivered::data`. Off, `data` is empty: for
    /// a caller that only wants the events (it saves a copy per message).
    pub keep_data: bool,
}

impl Default for ReceiveConfig {
    fn default() -> Self {
        ReceiveConfig {
            reassembly: Reassembly::ByIndex,
            max_split_parts: 65_536,
            max_concurrent_splits: 1024,
            max_held_bytes: 64 << 20,
            max_ordering_gap: 65_536,
            max_reliable_hole: 1_000_000,
            join_mid_stream: false,
            keep_data: true,
        }
    }
}

/// A message handed to the application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// The datagram that completed delivery: for a message released from an
    /// ordering heap, the one that released it.
    pub frame: u64,
    pub ts: Duration,
    /// The whole message, joined per [`ReceiveConfig::reassembly`].
    pub data: Vec<u8>,
    /// As on the wire; for a split message, the first-arrived part's
    /// (the original continues with that part's header).
    pub reliability: Reliability,
    pub channel: Option<u8>,
    pub order_index: Option<u32>,
    pub sequence_index: Option<u32>,
    pub reliable_index: Option<u32>,
    /// `(split id, split count)`.
    pub split: Option<(u16, u32)>,
    /// For a split message: the parts did not arrive in index order, so the
    /// original 4.081 (which joins in arrival order) would have delivered
    /// other bytes than the sender sent.
    pub arrival_order_differs: bool,
}

/// What the receive half saw, in the order it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReceiveEvent {
    /// A message handed to the application, in delivery order.
    Delivered(Delivered),
    /// Datagram numbers skipped, as the original NAKs them: the last `count`
    /// (at most 1000) before the datagram that revealed the gap.
    DatagramGap {
        frame: u64,
        first_missing: u32,
        count: u32,
    },
    /// A datagram number not newer than expected: late (reordered) or
    /// duplicated; still processed, as the original does.
    LateDatagram { frame: u64, seq: u32 },
    /// More than 50,000 numbers skipped: the original drops the whole datagram.
    DatagramDropped { frame: u64, seq: u32, skipped: u32 },
    /// A reliable message already received (a resend or a duplicate): dropped.
    DuplicateReliable { frame: u64, reliable_index: u32 },
    /// A sequenced message older than one already delivered on its channel
    /// (by sequence index, or by ordering index): dropped.
    StaleSequenced {
        frame: u64,
        channel: u8,
        order_index: u32,
        sequence_index: u32,
    },
    /// An ordered message whose ordering index the channel has passed: dropped.
    OldOrdered {
        frame: u64,
        channel: u8,
        order_index: u32,
    },
    /// An ordering channel of 32 or more: dropped.
    InvalidChannel { frame: u64, channel: u8 },
    /// At [`ReceiveHalf::finish`]: a split message still missing parts.
    SplitIncomplete {
        split_id: u16,
        have: u32,
        count: u32,
    },
    /// A bound of [`ReceiveConfig`] would be exceeded, or a part is
    /// malformed for reassembly: the capsule was dropped. Also, at
    /// [`ReceiveHalf::finish`], `what: "held at end"` for each message still
    /// waiting in an ordering heap (never delivered).
    BoundExceeded {
        frame: u64,
        what: &'static str,
        detail: String,
    },
}

/// `a - b` in 24 bits.
fn sub24(a: u32, b: u32) -> u32 {
    a.wrapping_sub(b) & MASK24
}

/// `CCRakNetSlidingWindow::GreaterThan`: `a` is ahead of `b` by 1 to 2^23.
fn datagram_newer(a: u32, b: u32) -> bool {
    a != b && sub24(b, a) > HALF24
}

/// `ReliabilityLayer::IsOlderOrderedPacket`, branch for branch: its two
/// halves disagree on whether 2^23 - 1 and 2^23 behind are "older".
fn is_older(new: u32, waiting: u32) -> bool {
    if waiting > HALF24 {
        new > waiting - HALF24 && new < waiting
    } else {
        new >= sub24(waiting, HALF24 + 1) || new < waiting
    }
}

/// A message after reassembly, before delivery.
#[derive(Debug)]
struct Message {
    data: Vec<u8>,
    reliability: Reliability,
    channel: Option<u8>,
    order_index: Option<u32>,
    sequence_index: Option<u32>,
    reliable_index: Option<u32>,
    split: Option<(u16, u32)>,
    arrival_order_differs: bool,
}

impl Message {
    fn from_capsule(c: &Capsule<'_>, data: Vec<u8>) -> Self {
        Message {
            data,
            reliability: c.reliability,
            channel: c.channel,
            order_index: c.order_index.map(|i| i & MASK24),
            sequence_index: c.sequence_index.map(|i| i & MASK24),
            reliable_index: c.reliable_index.map(|i| i & MASK24),
            split: None,
            arrival_order_differs: false,
        }
    }

    fn is_sequenced(&self) -> bool {
        self.reliability.is_sequenced()
    }

    fn delivered(self, now: Duration, frame: u64) -> ReceiveEvent {
        ReceiveEvent::Delivered(Delivered {
            frame,
            ts: now,
            data: self.data,
            reliability: self.reliability,
            channel: self.channel,
            order_index: self.order_index,
            sequence_index: self.sequence_index,
            reliable_index: self.reliable_index,
            split: self.split,
            arrival_order_differs: self.arrival_order_differs,
        })
    }

    fn describe(&self) -> String {
        let mut s = format!(
            "{} channel {} order index {}",
            self.reliability,
            self.channel.unwrap_or(0),
            self.order_index.unwrap_or(0)
        );
        if let Some(si) = self.sequence_index {
            let _ = write!(s, " sequence index {si}");
        }
        let n = self.data.len() as u64;
        let _ = write!(s, ", {n} {}", crate::wire::plural(n, "byte", "bytes"));
        s
    }
}

/// Why a reliable message was not accepted.
enum Reject {
    Duplicate,
    TooFar { hole: u32, base: u32 },
}

/// The original's `hasReceivedPacketQueue`: slot `i` is reliable index
/// `base + i`, `true` while it is a hole. Never longer than the hole bound + 1.
#[derive(Debug)]
struct ReliableWindow {
    /// `receivedPacketsBaseIndex`; `None` until the first one when joining mid-stream.
    base: Option<u32>,
    holes: VecDeque<bool>,
}

impl ReliableWindow {
    fn receive(&mut self, ri: u32, max_hole: u32) -> Result<(), Reject> {
        let base = *self.base.get_or_insert(ri);
        let hole = sub24(ri, base);
        if hole == 0 {
            self.holes.pop_front();
            self.base = Some((base + 1) & MASK24);
        } else if hole > HALF24 {
            return Err(Reject::Duplicate);
        } else if (hole as usize) < self.holes.len() {
            let slot = &mut self.holes[hole as usize];
            if !*slot {
                return Err(Reject::Duplicate);
            }
            *slot = false;
        } else {
            if hole > max_hole {
                return Err(Reject::TooFar { hole, base });
            }
            self.holes.resize(hole as usize, true);
            self.holes.push_back(false);
        }
        while self.holes.front() == Some(&false) {
            self.holes.pop_front();
            self.base = self.base.map(|b| (b + 1) & MASK24);
        }
        Ok(())
    }
}

/// One split message in progress (`SplitPacketChannel`).
#[derive(Debug)]
struct SplitBuf {
    /// The first-arrived part's header: its count decides completion.
    first: Message,
    count: u32,
    /// `(split index, payload)` in arrival order.
    parts: Vec<(u32, Vec<u8>)>,
    /// Indexes held, to refuse duplicates ([`Reassembly::ByIndex`] only).
    indexes: BTreeSet<u32>,
    /// Charged to `held`.
    cost: usize,
    out_of_order: bool,
}

/// A message waiting in an ordering heap.
#[derive(Debug)]
struct Held {
    weight: u64,
    /// The datagram that brought it, for the report at `finish`.
    frame: u64,
    msg: Message,
}

impl Held {
    fn cost(&self) -> usize {
        self.msg.data.len() + HELD_ENTRY_OVERHEAD
    }
}

/// A binary min-heap with the sift rules of the original's
/// `DataStructures::Heap<.., false>`, so that messages of equal weight
/// come out in the same order as there.
#[derive(Debug, Default)]
struct OrderingHeap {
    nodes: Vec<Held>,
}

impl OrderingHeap {
    fn push(&mut self, h: Held) {
        self.nodes.push(h);
        let mut i = self.nodes.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.nodes[parent].weight > self.nodes[i].weight {
                self.nodes.swap(parent, i);
                i = parent;
            } else {
                break;
            }
        }
    }

    fn peek(&self) -> Option<&Held> {
        self.nodes.first()
    }

    fn pop(&mut self) -> Option<Held> {
        if self.nodes.is_empty() {
            return None;
        }
        let top = self.nodes.swap_remove(0);
        let n = self.nodes.len();
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            if l >= n {
                break;
            }
            let w = self.nodes[i].weight;
            if r >= n {
                if w > self.nodes[l].weight {
                    self.nodes.swap(l, i);
                }
                break;
            }
            let (wl, wr) = (self.nodes[l].weight, self.nodes[r].weight);
            if wl >= w && wr >= w {
                break;
            }
            let child = if wl < wr { l } else { r };
            self.nodes.swap(child, i);
            i = child;
        }
        Some(top)
    }

    fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// One ordering channel's read state.
#[derive(Debug, Default)]
struct Channel {
    /// False until the first message when joining mid-stream.
    synced: bool,
    /// `orderedReadIndex`.
    read_index: u32,
    /// `highestSequencedReadIndex`.
    highest_sequenced: u32,
    /// `heapIndexOffsets`: weights are relative to it.
    heap_offset: u32,
    heap: OrderingHeap,
}

/// The receive half of one direction of a connection.
#[derive(Debug)]
pub struct ReceiveHalf {
    cfg: ReceiveConfig,
    /// `expectedNextSequenceNumber`; `None` until the first one when joining mid-stream.
    expected_datagram: Option<u32>,
    reliable: ReliableWindow,
    splits: BTreeMap<u16, SplitBuf>,
    channels: Vec<Channel>,
    held: usize,
    events: VecDeque<ReceiveEvent>,
}

impl ReceiveHalf {
    pub fn new(cfg: ReceiveConfig) -> Self {
        let start = if cfg.join_mid_stream { None } else { Some(0) };
        // The 32 channels are made on the first ordered or sequenced message.
        let channels = Vec::new();
        ReceiveHalf {
            expected_datagram: start,
            reliable: ReliableWindow {
                base: start,
                holes: VecDeque::new(),
            },
            splits: BTreeMap::new(),
            channels,
            held: 0,
            events: VecDeque::new(),
            cfg,
        }
    }

    /// One data datagram as the receiver got it. `frame` is an opaque tag
    /// carried into events (the capture frame number).
    pub fn handle_datagram(
        &mut self,
        now: Duration,
        frame: u64,
        seq: u32,
        capsules: &[Capsule<'_>],
    ) {
        let seq = seq & MASK24;
        let expected = *self.expected_datagram.get_or_insert(seq);
        if seq == expected {
            self.expected_datagram = Some((seq + 1) & MASK24);
        } else if datagram_newer(seq, expected) {
            let skipped = sub24(seq, expected);
            if skipped > MAX_DATAGRAM_SKIP {
                self.events.push_back(ReceiveEvent::DatagramDropped {
                    frame,
                    seq,
                    skipped,
                });
                return;
            }
            let count = skipped.min(MAX_NAKS_PER_GAP);
            self.events.push_back(ReceiveEvent::DatagramGap {
                frame,
                first_missing: sub24(seq, count),
                count,
            });
            self.expected_datagram = Some((seq + 1) & MASK24);
        } else {
            self.events
                .push_back(ReceiveEvent::LateDatagram { frame, seq });
        }
        for c in capsules {
            self.handle_capsule(now, frame, c);
        }
    }

    pub fn poll_event(&mut self) -> Option<ReceiveEvent> {
        self.events.pop_front()
    }

    /// Whether datagram number `seq` is behind the next one expected: a late
    /// or repeated datagram, or numbering that started over. False before
    /// the first datagram of a half that joins mid-stream.
    pub fn is_behind(&self, seq: u32) -> bool {
        let seq = seq & MASK24;
        self.expected_datagram
            .is_some_and(|e| seq != e && !datagram_newer(seq, e))
    }

    /// End of input: report split messages still incomplete and messages
    /// still waiting in ordering heaps, and let go of them.
    pub fn finish(&mut self) {
        for (split_id, s) in std::mem::take(&mut self.splits) {
            self.events.push_back(ReceiveEvent::SplitIncomplete {
                split_id,
                have: s.parts.len() as u32,
                count: s.count,
            });
        }
        for (ch, chan) in self.channels.iter_mut().enumerate() {
            while let Some(h) = chan.heap.pop() {
                self.events.push_back(ReceiveEvent::BoundExceeded {
                    frame: h.frame,
                    what: "held at end",
                    detail: format!(
                        "{} never delivered: channel {ch} waits for order index {}",
                        h.msg.describe(),
                        chan.read_index
                    ),
                });
            }
        }
        self.held = 0;
    }

    /// Bytes held in split messages and ordering heaps, with
    /// [`HELD_ENTRY_OVERHEAD`] per entry; never above `max_held_bytes`.
    fn copy(&self, b: &[u8]) -> Vec<u8> {
        if self.cfg.keep_data {
            b.to_vec()
        } else {
            Vec::new()
        }
    }

    /// Bytes this half holds that a peer controls: held messages and parts,
    /// and the reliable hole window (one byte per slot).
    pub fn footprint(&self) -> usize {
        self.held + self.reliable.holes.capacity()
    }

    pub fn held_bytes(&self) -> usize {
        self.held
    }

    fn bound(&mut self, frame: u64, what: &'static str, detail: String) {
        self.events.push_back(ReceiveEvent::BoundExceeded {
            frame,
            what,
            detail,
        });
    }

    fn handle_capsule(&mut self, now: Duration, frame: u64, c: &Capsule<'_>) {
        // The wire decoder already refuses these; a capsule built by hand may not.
        if c.reliability.0 >= 8 {
            let detail = format!("reliability {}, at most 7", c.reliability.0);
            self.bound(frame, "reliability", detail);
            return;
        }
        if let Some(channel) = c.channel.filter(|&ch| ch as usize >= ORDERING_CHANNELS) {
            self.events
                .push_back(ReceiveEvent::InvalidChannel { frame, channel });
            return;
        }
        if let Some(s) = c.split.filter(|s| s.index >= s.count) {
            let detail = format!(
                "split {} index {} not below count {}",
                s.id, s.index, s.count
            );
            self.bound(frame, "split index", detail);
            return;
        }
        if c.reliability.has_reliable_index() {
            let ri = c.reliable_index.unwrap_or(0) & MASK24;
            match self.reliable.receive(ri, self.cfg.max_reliable_hole) {
                Ok(()) => {}
                Err(Reject::Duplicate) => {
                    self.events.push_back(ReceiveEvent::DuplicateReliable {
                        frame,
                        reliable_index: ri,
                    });
                    return;
                }
                Err(Reject::TooFar { hole, base }) => {
                    let detail = format!(
                        "reliable index {ri} is {hole} past the first missing one ({base}), limit {}",
                        self.cfg.max_reliable_hole
                    );
                    self.bound(frame, "reliable hole", detail);
                    return;
                }
            }
        }
        let msg = match c.split {
            Some(_) => match self.insert_split(frame, c) {
                Some(m) => m,
                None => return,
            },
            None => Message::from_capsule(c, self.copy(c.payload)),
        };
        if matches!(msg.reliability.0, 1 | 3 | 4) {
            self.order(now, frame, msg);
        } else {
            self.events.push_back(msg.delivered(now, frame));
        }
    }

    /// `InsertIntoSplitPacketList` then `BuildPacketFromSplitPacketList`:
    /// the whole message once the parts stored reach the first part's count.
    fn insert_split(&mut self, frame: u64, c: &Capsule<'_>) -> Option<Message> {
        let s = c.split.expect("insert_split is called for split capsules");
        if s.count > self.cfg.max_split_parts {
            let detail = format!(
                "split {} announces {} parts, limit {}",
                s.id, s.count, self.cfg.max_split_parts
            );
            self.bound(frame, "split parts", detail);
            return None;
        }
        if !self.splits.contains_key(&s.id) && self.splits.len() >= self.cfg.max_concurrent_splits {
            let detail = format!(
                "split {} would be one more than {} in progress",
                s.id, self.cfg.max_concurrent_splits
            );
            self.bound(frame, "concurrent splits", detail);
            return None;
        }
        let cost = c.payload.len() + HELD_ENTRY_OVERHEAD;
        if self.held + cost > self.cfg.max_held_bytes {
            let detail = format!(
                "split {} part {}: {} + {cost} bytes, limit {}",
                s.id, s.index, self.held, self.cfg.max_held_bytes
            );
            self.bound(frame, "held bytes", detail);
            return None;
        }
        let by_index = self.cfg.reassembly == Reassembly::ByIndex;
        let buf = self.splits.entry(s.id).or_insert_with(|| SplitBuf {
            first: Message::from_capsule(c, Vec::new()),
            count: s.count,
            parts: Vec::new(),
            indexes: BTreeSet::new(),
            cost: 0,
            out_of_order: false,
        });
        if by_index {
            // The original checks neither; joined by index, such a part has no place.
            let problem = if s.index >= buf.count {
                Some(format!("not below the first part's count {}", buf.count))
            } else if !buf.indexes.insert(s.index) {
                Some("already received".to_string())
            } else {
                None
            };
            if let Some(p) = problem {
                let detail = format!("split {} part {} {p}", s.id, s.index);
                self.bound(frame, "split part", detail);
                return None;
            }
        }
        if s.index as usize != buf.parts.len() {
            buf.out_of_order = true;
        }
        let part = if self.cfg.keep_data {
            c.payload.to_vec()
        } else {
            Vec::new()
        };
        buf.parts.push((s.index, part));
        buf.cost += cost;
        self.held += cost;
        if buf.parts.len() < buf.count as usize {
            return None;
        }
        let mut buf = self
            .splits
            .remove(&s.id)
            .expect("the split being completed is in the table");
        self.held -= buf.cost;
        if by_index {
            buf.parts.sort_unstable_by_key(|p| p.0);
        }
        let len = buf.parts.iter().map(|p| p.1.len()).sum();
        let mut data = Vec::with_capacity(len);
        for (_, part) in &buf.parts {
            data.extend_from_slice(part);
        }
        let mut msg = buf.first;
        msg.data = data;
        msg.split = Some((s.id, buf.count));
        msg.arrival_order_differs = buf.out_of_order;
        Some(msg)
    }

    /// Ordered and sequenced messages (1, 3, 4), with the original's heap.
    fn order(&mut self, now: Duration, frame: u64, msg: Message) {
        let ch = msg.channel.unwrap_or(0);
        let oi = msg.order_index.unwrap_or(0);
        let si = msg.sequence_index.unwrap_or(0);
        let sequenced = msg.is_sequenced();
        if self.channels.is_empty() {
            let synced = !self.cfg.join_mid_stream;
            self.channels = (0..ORDERING_CHANNELS)
                .map(|_| Channel {
                    synced,
                    ..Channel::default()
                })
                .collect();
        }
        let chan = &mut self.channels[ch as usize];
        if !chan.synced {
            chan.synced = true;
            chan.read_index = oi;
            chan.highest_sequenced = if sequenced { si } else { 0 };
        }
        if oi == chan.read_index {
            if sequenced {
                if is_older(si, chan.highest_sequenced) {
                    self.events.push_back(ReceiveEvent::StaleSequenced {
                        frame,
                        channel: ch,
                        order_index: oi,
                        sequence_index: si,
                    });
                    return;
                }
                chan.highest_sequenced = (si + 1) & MASK24;
                self.events.push_back(msg.delivered(now, frame));
                return;
            }
            self.events.push_back(msg.delivered(now, frame));
            chan.read_index = (chan.read_index + 1) & MASK24;
            chan.highest_sequenced = 0;
            // As the original: a sequenced message popped sets the highest
            // index to its own (no +1), an ordered one does not reset it.
            while chan
                .heap
                .peek()
                .is_some_and(|h| h.msg.order_index.unwrap_or(0) == chan.read_index)
            {
                let h = chan.heap.pop().expect("peeked above");
                self.held -= h.cost();
                if h.msg.is_sequenced() {
                    chan.highest_sequenced = h.msg.sequence_index.unwrap_or(0);
                } else {
                    chan.read_index = (chan.read_index + 1) & MASK24;
                }
                self.events.push_back(h.msg.delivered(now, frame));
            }
        } else if !is_older(oi, chan.read_index) {
            let ahead = sub24(oi, chan.read_index);
            let read_index = chan.read_index;
            if ahead > self.cfg.max_ordering_gap {
                let detail = format!(
                    "channel {ch} order index {oi} is {ahead} ahead of {read_index}, limit {}",
                    self.cfg.max_ordering_gap
                );
                self.bound(frame, "ordering gap", detail);
                return;
            }
            let cost = msg.data.len() + HELD_ENTRY_OVERHEAD;
            if self.held + cost > self.cfg.max_held_bytes {
                let detail = format!(
                    "channel {ch} order index {oi}: {} + {cost} bytes, limit {}",
                    self.held, self.cfg.max_held_bytes
                );
                self.bound(frame, "held bytes", detail);
                return;
            }
            if chan.heap.is_empty() {
                chan.heap_offset = chan.read_index;
            }
            let slot = u64::from(sub24(oi, chan.heap_offset)) * ORDER_WEIGHT;
            let weight = slot
                + if sequenced {
                    u64::from(si)
                } else {
                    ORDER_WEIGHT - 1
                };
            chan.heap.push(Held { weight, frame, msg });
            self.held += cost;
        } else if sequenced {
            self.events.push_back(ReceiveEvent::StaleSequenced {
                frame,
                channel: ch,
                order_index: oi,
                sequence_index: si,
            });
        } else {
            self.events.push_back(ReceiveEvent::OldOrdered {
                frame,
                channel: ch,
                order_index: oi,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Datagram, Reader, Split};
    use proptest::prelude::*;

    fn capsule<'a>(
        rel: u8,
        ri: Option<u32>,
        si: Option<u32>,
        oi: Option<u32>,
        ch: Option<u8>,
        payload: &'a [u8],
    ) -> Capsule<'a> {
        Capsule {
            reliability: Reliability(rel),
            reliable_index: ri,
            sequence_index: si,
            order_index: oi,
            channel: ch,
            split: None,
            bit_length: (payload.len() * 8) as u16,
            payload,
        }
    }
    fn unreliable(p: &[u8]) -> Capsule<'_> {
        capsule(0, None, None, None, None, p)
    }
    fn reliable(ri: u32, p: &[u8]) -> Capsule<'_> {
        capsule(2, Some(ri), None, None, None, p)
    }
    fn ordered(ri: u32, oi: u32, ch: u8, p: &[u8]) -> Capsule<'_> {
        capsule(3, Some(ri), None, Some(oi), Some(ch), p)
    }
    fn unrel_seq(si: u32, oi: u32, ch: u8, p: &[u8]) -> Capsule<'_> {
        capsule(1, None, Some(si), Some(oi), Some(ch), p)
    }
    fn rel_seq(ri: u32, si: u32, oi: u32, ch: u8, p: &[u8]) -> Capsule<'_> {
        capsule(4, Some(ri), Some(si), Some(oi), Some(ch), p)
    }
    fn part(mut c: Capsule<'_>, count: u32, id: u16, index: u32) -> Capsule<'_> {
        c.split = Some(Split { count, id, index });
        c
    }

    /// A receive half fed one datagram at a time; frame n arrives at n ms.
    struct Rx {
        half: ReceiveHalf,
        next_seq: u32,
        frame: u64,
    }

    impl Rx {
        fn new(cfg: ReceiveConfig) -> Self {
            Rx {
                half: ReceiveHalf::new(cfg),
                next_seq: 0,
                frame: 0,
            }
        }
        fn mid_stream() -> Self {
            Rx::new(ReceiveConfig {
                join_mid_stream: true,
                ..ReceiveConfig::default()
            })
        }
        fn arrival() -> Self {
            Rx::new(ReceiveConfig {
                reassembly: Reassembly::Arrival,
                ..ReceiveConfig::default()
            })
        }
        /// A datagram with an explicit number.
        fn at(&mut self, seq: u32, caps: &[Capsule<'_>]) -> Vec<ReceiveEvent> {
            self.frame += 1;
            let now = Duration::from_millis(self.frame);
            self.half.handle_datagram(now, self.frame, seq, caps);
            self.next_seq = (seq + 1) & MASK24;
            self.drain()
        }
        /// A datagram with the next number.
        fn send(&mut self, caps: &[Capsule<'_>]) -> Vec<ReceiveEvent> {
            self.at(self.next_seq, caps)
        }
        fn drain(&mut self) -> Vec<ReceiveEvent> {
            std::iter::from_fn(|| self.half.poll_event()).collect()
        }
    }

    fn delivered(events: &[ReceiveEvent]) -> Vec<&Delivered> {
        events
            .iter()
            .filter_map(|e| match e {
                ReceiveEvent::Delivered(d) => Some(d),
                _ => None,
            })
            .collect()
    }
    fn data(events: &[ReceiveEvent]) -> Vec<&[u8]> {
        delivered(events).iter().map(|d| &d.data[..]).collect()
    }
    fn others(events: &[ReceiveEvent]) -> Vec<&ReceiveEvent> {
        events
            .iter()
            .filter(|e| !matches!(e, ReceiveEvent::Delivered(_)))
            .collect()
    }
    fn bounds(events: &[ReceiveEvent]) -> Vec<&'static str> {
        events
            .iter()
            .filter_map(|e| match e {
                ReceiveEvent::BoundExceeded { what, .. } => Some(*what),
                _ => None,
            })
            .collect()
    }

    // ---- 24-bit comparisons --------------------------------------------------

    #[test]
    fn is_behind_means_older_than_the_next_expected() {
        let mut rx = ReceiveHalf::new(ReceiveConfig::default());
        assert!(!rx.is_behind(0), "0 is the first expected");
        for seq in 0..5 {
            rx.handle_datagram(Duration::ZERO, 1, seq, &[]);
        }
        assert!(rx.is_behind(0) && rx.is_behind(4));
        assert!(!rx.is_behind(5) && !rx.is_behind(6));
        let joined = ReceiveHalf::new(ReceiveConfig {
            join_mid_stream: true,
            ..ReceiveConfig::default()
        });
        assert!(!joined.is_behind(0) && !joined.is_behind(0x80_0000));
    }

    #[test]
    fn datagram_newer_is_one_to_half_range_ahead() {
        assert!(datagram_newer(1, 0));
        assert!(datagram_newer(0, 0xff_ffff));
        assert!(datagram_newer(0x80_0000, 0));
        assert!(!datagram_newer(0x80_0001, 0));
        assert!(!datagram_newer(0, 0));
        assert!(!datagram_newer(0xff_ffff, 0));
    }

    #[test]
    fn is_older_keeps_the_originals_asymmetry() {
        // waiting above the half range: 1 to 2^23-2 behind is older
        assert!(is_older(0x90_0000 - 0x7f_fffe, 0x90_0000));
        assert!(!is_older(0x90_0000 - 0x7f_ffff, 0x90_0000));
        assert!(!is_older(0x90_0000, 0x90_0000));
        assert!(!is_older(0x90_0001, 0x90_0000));
        // waiting in the lower half: 1 to 2^23 behind is older
        assert!(is_older(sub24(0x10_0000, 0x7f_ffff), 0x10_0000));
        assert!(is_older(sub24(0x10_0000, 0x80_0000), 0x10_0000));
        assert!(!is_older(sub24(0x10_0000, 0x80_0001), 0x10_0000));
        // across the wrap
        assert!(is_older(0xff_ffff, 0));
        assert!(!is_older(0, 0xff_ffff));
        assert!(is_older(0x80_0000, 0));
        assert!(!is_older(0x7f_ffff, 0));
    }

    // ---- datagram numbers ----------------------------------------------------

    #[test]
    fn datagram_numbers_wrap_at_24_bits() {
        let mut rx = Rx::mid_stream();
        assert_eq!(data(&rx.at(0xff_fffe, &[unreliable(b"a")])), [b"a"]);
        assert!(others(&rx.at(0xff_ffff, &[unreliable(b"b")])).is_empty());
        let ev = rx.at(0x00_0001, &[unreliable(b"d")]);
        assert_eq!(
            others(&ev),
            [&ReceiveEvent::DatagramGap {
                frame: 3,
                first_missing: 0,
                count: 1
            }]
        );
        assert_eq!(data(&ev), [b"d"]);
        // the missing one, late: still processed
        let ev = rx.at(0x00_0000, &[unreliable(b"c")]);
        assert_eq!(
            others(&ev),
            [&ReceiveEvent::LateDatagram { frame: 4, seq: 0 }]
        );
        assert_eq!(data(&ev), [b"c"]);
        // a duplicate from before the wrap is late too
        let ev = rx.at(0xff_ffff, &[]);
        assert_eq!(
            ev,
            [ReceiveEvent::LateDatagram {
                frame: 5,
                seq: 0xff_ffff
            }]
        );
        // expected is still 2
        assert!(rx.at(2, &[]).is_empty());
    }

    #[test]
    fn walk_the_whole_datagram_range_from_zero() {
        let mut rx = Rx::new(ReceiveConfig::default());
        assert!(rx.at(0, &[]).is_empty());
        let mut seq = 0u32;
        for _ in 0..430 {
            seq = (seq + 40_000) & MASK24;
            let ev = rx.at(seq, &[unreliable(b"x")]);
            // 39,999 skipped, only the last 1000 NAKed
            assert_eq!(
                others(&ev),
                [&ReceiveEvent::DatagramGap {
                    frame: rx.frame,
                    first_missing: sub24(seq, 1000),
                    count: 1000
                }]
            );
            assert_eq!(data(&ev).len(), 1);
        }
        assert_eq!(seq, 430 * 40_000 - (1 << 24), "the walk wrapped");
        assert!(rx.send(&[]).is_empty());
    }

    #[test]
    fn more_than_50000_skipped_drops_the_datagram() {
        let mut rx = Rx::new(ReceiveConfig::default());
        let ev = rx.at(50_001, &[unreliable(b"x")]);
        assert_eq!(
            ev,
            [ReceiveEvent::DatagramDropped {
                frame: 1,
                seq: 50_001,
                skipped: 50_001
            }]
        );
        // expected did not move
        assert!(rx.at(0, &[]).is_empty());
        let ev = rx.at(50_001, &[unreliable(b"y")]);
        assert_eq!(
            others(&ev),
            [&ReceiveEvent::DatagramGap {
                frame: 3,
                first_missing: 49_001,
                count: 1000
            }]
        );
        assert_eq!(data(&ev), [b"y"]);
        // 2^23 ahead is "newer" (and dropped), 2^23 + 1 ahead is late
        let mut rx = Rx::new(ReceiveConfig::default());
        assert_eq!(
            rx.at(0x80_0000, &[]),
            [ReceiveEvent::DatagramDropped {
                frame: 1,
                seq: 0x80_0000,
                skipped: 0x80_0000
            }]
        );
        assert_eq!(
            rx.at(0x80_0001, &[]),
            [ReceiveEvent::LateDatagram {
                frame: 2,
                seq: 0x80_0001
            }]
        );
    }

    // ---- reliable de-duplication -----------------------------------------------

    #[test]
    fn duplicates_and_resends_are_dropped_holes_filled_late() {
        let mut rx = Rx::new(ReceiveConfig::default());
        assert_eq!(data(&rx.send(&[reliable(0, b"a")])), [b"a"]);
        // the same datagram twice (same number: late), then a resend (new number)
        let ev = rx.at(0, &[reliable(0, b"a")]);
        assert_eq!(
            others(&ev),
            [
                &ReceiveEvent::LateDatagram { frame: 2, seq: 0 },
                &ReceiveEvent::DuplicateReliable {
                    frame: 2,
                    reliable_index: 0
                }
            ]
        );
        let ev = rx.at(1, &[reliable(0, b"a")]);
        assert_eq!(
            ev,
            [ReceiveEvent::DuplicateReliable {
                frame: 3,
                reliable_index: 0
            }]
        );
        // 3 and 5 first, then the holes 4, 1, 2
        assert_eq!(data(&rx.send(&[reliable(3, b"d")])), [b"d"]);
        assert_eq!(data(&rx.send(&[reliable(5, b"f")])), [b"f"]);
        assert!(delivered(&rx.send(&[reliable(3, b"d")])).is_empty());
        assert_eq!(data(&rx.send(&[reliable(4, b"e")])), [b"e"]);
        assert_eq!(data(&rx.send(&[reliable(1, b"b")])), [b"b"]);
        assert_eq!(data(&rx.send(&[reliable(2, b"c")])), [b"c"]);
        for ri in 0..6 {
            let ev = rx.send(&[reliable(ri, b"?")]);
            assert_eq!(
                ev,
                [ReceiveEvent::DuplicateReliable {
                    frame: rx.frame,
                    reliable_index: ri
                }]
            );
        }
        assert!(rx.half.reliable.holes.is_empty());
        assert_eq!(rx.half.reliable.base, Some(6));
        // unreliable messages are never de-duplicated
        assert_eq!(
            data(&rx.send(&[unreliable(b"u"), unreliable(b"u")])),
            [b"u", b"u"]
        );
    }

    #[test]
    fn reliable_index_wraps() {
        let mut rx = Rx::mid_stream();
        assert_eq!(data(&rx.send(&[reliable(0xff_fffe, b"a")])), [b"a"]);
        // 0xffffff and 0 missing
        assert_eq!(data(&rx.send(&[reliable(1, b"d")])), [b"d"]);
        assert_eq!(rx.half.reliable.holes, [true, true, false]);
        assert_eq!(data(&rx.send(&[reliable(0, b"c")])), [b"c"]);
        assert_eq!(data(&rx.send(&[reliable(0xff_ffff, b"b")])), [b"b"]);
        assert_eq!(rx.half.reliable.base, Some(2));
        for ri in [0xff_fffe, 0xff_ffff, 0, 1] {
            assert_eq!(
                rx.send(&[reliable(ri, b"?")]),
                [ReceiveEvent::DuplicateReliable {
                    frame: rx.frame,
                    reliable_index: ri
                }]
            );
        }
        assert_eq!(data(&rx.send(&[reliable(2, b"e")])), [b"e"]);
    }

    #[test]
    fn reliable_hole_bound() {
        let mut rx = Rx::new(ReceiveConfig::default());
        let ev = rx.send(&[reliable(1_000_001, b"x")]);
        assert_eq!(bounds(&ev), ["reliable hole"]);
        assert!(delivered(&ev).is_empty());
        assert_eq!(data(&rx.send(&[reliable(1_000_000, b"y")])), [b"y"]);
        assert_eq!(rx.half.reliable.holes.len(), 1_000_001);
        assert_eq!(data(&rx.send(&[reliable(0, b"z")])), [b"z"]);
        // more than half the range ahead counts as older: a duplicate
        let mut rx = Rx::new(ReceiveConfig {
            max_reliable_hole: 10,
            ..ReceiveConfig::default()
        });
        assert_eq!(
            rx.send(&[reliable(0x80_0000, b"x")]),
            [ReceiveEvent::DuplicateReliable {
                frame: 1,
                reliable_index: 0x80_0000
            }]
        );
        assert_eq!(bounds(&rx.send(&[reliable(11, b"x")])), ["reliable hole"]);
        assert_eq!(data(&rx.send(&[reliable(10, b"y")])), [b"y"]);
        assert!(rx.half.reliable.holes.len() <= 11);
    }

    #[test]
    fn invalid_channel_is_dropped_before_deduplication() {
        let mut rx = Rx::new(ReceiveConfig::default());
        let ev = rx.send(&[ordered(0, 0, 32, b"x")]);
        assert_eq!(
            ev,
            [ReceiveEvent::InvalidChannel {
                frame: 1,
                channel: 32
            }]
        );
        // reliable index 0 was not taken
        assert_eq!(data(&rx.send(&[ordered(0, 0, 0, b"y")])), [b"y"]);
    }

    #[test]
    fn malformed_capsules_built_by_hand_are_refused() {
        let mut rx = Rx::new(ReceiveConfig::default());
        assert_eq!(
            bounds(&rx.send(&[capsule(8, None, None, None, None, b"x")])),
            ["reliability"]
        );
        // 5 to 7 never reach the wire; as the original, delivered at once
        let ev = rx.send(&[capsule(7, None, None, Some(9), Some(0), b"y")]);
        assert_eq!(data(&ev), [b"y"]);
    }

    // ---- splits ------------------------------------------------------------------

    #[test]
    fn split_out_of_order_by_index_and_by_arrival() {
        let parts = [
            part(reliable(10, b"gh"), 3, 7, 2),
            part(reliable(11, b"abc"), 3, 7, 0),
            part(reliable(12, b"def"), 3, 7, 1),
        ];
        let mut rx = Rx::mid_stream();
        assert!(rx.send(&parts[..1]).is_empty());
        assert!(rx.send(&parts[1..2]).is_empty());
        assert_eq!(rx.half.held_bytes(), 5 + 2 * HELD_ENTRY_OVERHEAD);
        let ev = rx.send(&parts[2..]);
        assert_eq!(
            ev,
            [ReceiveEvent::Delivered(Delivered {
                frame: 3,
                ts: Duration::from_millis(3),
                data: b"abcdefgh".to_vec(),
                reliability: Reliability::RELIABLE,
                channel: None,
                order_index: None,
                sequence_index: None,
                reliable_index: Some(10),
                split: Some((7, 3)),
                arrival_order_differs: true,
            })]
        );
        assert_eq!(rx.half.held_bytes(), 0);

        let mut rx = Rx::arrival();
        rx.half.cfg.join_mid_stream = true;
        rx.half.reliable.base = None;
        let ev = rx.send(&parts);
        assert_eq!(data(&ev), [b"ghabcdef"]);
        assert!(delivered(&ev)[0].arrival_order_differs);

        // in index order, both modes agree and nothing differs
        for mode in [Reassembly::ByIndex, Reassembly::Arrival] {
            let mut rx = Rx::new(ReceiveConfig {
                reassembly: mode,
                ..ReceiveConfig::default()
            });
            let ev = rx.send(&[
                part(reliable(0, b"abc"), 3, 7, 0),
                part(reliable(1, b"def"), 3, 7, 1),
                part(reliable(2, b"gh"), 3, 7, 2),
            ]);
            assert_eq!(data(&ev), [b"abcdefgh"]);
            assert!(!delivered(&ev)[0].arrival_order_differs);
        }
    }

    /// Two RELIABLE_ORDERED parts of split 5, index 1 first, in one datagram
    /// as the wire carries them.
    const SPLIT_DATAGRAM: [u8; 48] = [
        0x84, 0x00, 0x00, 0x00, // data datagram #0
        0x70, 0x00, 0x10, // RELIABLE_ORDERED + split, 16 bits
        0x01, 0x00, 0x00, // reliable index 1
        0x00, 0x00, 0x00, 0x00, // order index 0, channel 0
        0x00, 0x00, 0x00, 0x02, 0x00, 0x05, 0x00, 0x00, 0x00, 0x01, // count 2, id 5, index 1
        b'c', b'd', //
        0x70, 0x00, 0x10, // second part
        0x00, 0x00, 0x00, // reliable index 0
        0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x02, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, // index 0
        b'a', b'b',
    ];

    #[test]
    fn split_from_literal_datagram_bytes() {
        let Datagram::Data(d) = Datagram::parse(&mut Reader::new(&SPLIT_DATAGRAM)).unwrap() else {
            panic!("not a data datagram")
        };
        let mut rx = Rx::new(ReceiveConfig::default());
        let ev = rx.at(d.seq, &d.capsules);
        let got = delivered(&ev);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data, b"abcd");
        assert_eq!(got[0].reliability, Reliability::RELIABLE_ORDERED);
        assert_eq!((got[0].channel, got[0].order_index), (Some(0), Some(0)));
        assert_eq!(got[0].split, Some((5, 2)));
        assert!(got[0].arrival_order_differs);
        let mut rx = Rx::arrival();
        assert_eq!(data(&rx.at(d.seq, &d.capsules)), [b"cdab"]);
    }

    #[test]
    fn split_completes_at_the_first_arrived_parts_count() {
        // The original never checks that parts agree on the count.
        for mode in [Reassembly::ByIndex, Reassembly::Arrival] {
            let mut rx = Rx::new(ReceiveConfig {
                reassembly: mode,
                ..ReceiveConfig::default()
            });
            assert!(rx.send(&[part(unreliable(b"b"), 2, 1, 1)]).is_empty());
            let ev = rx.send(&[part(unreliable(b"a"), 3, 1, 0)]);
            let got = delivered(&ev);
            assert_eq!(got[0].split, Some((1, 2)));
            let want: &[u8] = if mode == Reassembly::ByIndex {
                b"ab"
            } else {
                b"ba"
            };
            assert_eq!(got[0].data, want);
        }
        // joined by index, a part beyond the first part's count has no place
        let mut rx = Rx::new(ReceiveConfig::default());
        assert!(rx.send(&[part(unreliable(b"a"), 2, 1, 0)]).is_empty());
        let ev = rx.send(&[part(unreliable(b"c"), 3, 1, 2)]);
        assert_eq!(bounds(&ev), ["split part"]);
        assert_eq!(data(&rx.send(&[part(unreliable(b"b"), 2, 1, 1)])), [b"ab"]);
    }

    #[test]
    fn duplicate_split_part() {
        // Only possible when parts are not reliable (the original's sender
        // never does that) or their reliable indexes differ.
        let mut rx = Rx::new(ReceiveConfig::default());
        assert!(rx.send(&[part(unreliable(b"a"), 2, 9, 0)]).is_empty());
        let ev = rx.send(&[part(unreliable(b"a"), 2, 9, 0)]);
        assert_eq!(bounds(&ev), ["split part"]);
        let ev = rx.send(&[part(unreliable(b"b"), 2, 9, 1)]);
        assert_eq!(data(&ev), [b"ab"]);
        assert!(!delivered(&ev)[0].arrival_order_differs);
        // the original counts the duplicate and completes with it
        let mut rx = Rx::arrival();
        rx.send(&[part(unreliable(b"a"), 2, 9, 0)]);
        let ev = rx.send(&[part(unreliable(b"a"), 2, 9, 0)]);
        assert_eq!(data(&ev), [b"aa"]);
        assert!(delivered(&ev)[0].arrival_order_differs);
    }

    #[test]
    fn split_ids_wrap() {
        let mut rx = Rx::new(ReceiveConfig::default());
        let ev = rx.send(&[
            part(reliable(0, b"A0"), 2, 0xffff, 0),
            part(reliable(1, b"B1"), 2, 0x0000, 1),
            part(reliable(2, b"B0"), 2, 0x0000, 0),
            part(reliable(3, b"A1"), 2, 0xffff, 1),
        ]);
        let got = delivered(&ev);
        assert_eq!(got.len(), 2);
        assert_eq!(
            (got[0].split, &got[0].data[..]),
            (Some((0, 2)), &b"B0B1"[..])
        );
        assert_eq!(
            (got[1].split, &got[1].data[..]),
            (Some((0xffff, 2)), &b"A0A1"[..])
        );
        // an id used again after completion starts a new message
        let ev = rx.send(&[
            part(reliable(4, b"C0"), 2, 0xffff, 0),
            part(reliable(5, b"C1"), 2, 0xffff, 1),
        ]);
        assert_eq!(data(&ev), [b"C0C1"]);
        assert_eq!(rx.half.held_bytes(), 0);
    }

    #[test]
    fn split_ordered_message_waits_for_its_turn() {
        let mut rx = Rx::new(ReceiveConfig::default());
        assert!(rx
            .send(&[part(ordered(1, 1, 0, b"y1"), 2, 3, 1)])
            .is_empty());
        assert!(rx
            .send(&[part(ordered(2, 1, 0, b"y0"), 2, 3, 0)])
            .is_empty());
        assert_eq!(rx.half.held_bytes(), 4 + HELD_ENTRY_OVERHEAD);
        let ev = rx.send(&[ordered(0, 0, 0, b"x")]);
        assert_eq!(data(&ev), [&b"x"[..], &b"y0y1"[..]]);
        let got = delivered(&ev);
        assert_eq!((got[1].frame, got[1].ts), (3, Duration::from_millis(3)));
        assert_eq!(got[1].reliable_index, Some(1));
        assert_eq!(rx.half.held_bytes(), 0);
    }

    // ---- ordering channels ---------------------------------------------------------

    #[test]
    fn ordered_released_from_the_heap_in_order() {
        let mut rx = Rx::new(ReceiveConfig::default());
        assert!(rx.send(&[ordered(0, 2, 5, b"c")]).is_empty());
        assert!(rx.send(&[ordered(1, 1, 5, b"b")]).is_empty());
        // another channel and unordered messages are not held up
        assert_eq!(
            data(&rx.send(&[
                ordered(2, 0, 6, b"other"),
                unreliable(b"u"),
                reliable(3, b"r")
            ])),
            [&b"other"[..], b"u", b"r"]
        );
        assert_eq!(rx.half.held_bytes(), 2 + 2 * HELD_ENTRY_OVERHEAD);
        let ev = rx.send(&[ordered(4, 0, 5, b"a")]);
        assert_eq!(data(&ev), [b"a", b"b", b"c"]);
        let got = delivered(&ev);
        assert!(got.iter().all(|d| d.frame == 4 && d.channel == Some(5)));
        assert_eq!(
            got.iter().map(|d| d.order_index).collect::<Vec<_>>(),
            [Some(0), Some(1), Some(2)]
        );
        assert_eq!(rx.half.held_bytes(), 0);
        assert_eq!(
            rx.send(&[ordered(5, 1, 5, b"b")]),
            [ReceiveEvent::OldOrdered {
                frame: 5,
                channel: 5,
                order_index: 1
            }]
        );
    }

    #[test]
    fn order_index_wraps() {
        let mut rx = Rx::mid_stream();
        assert_eq!(data(&rx.send(&[ordered(40, 0xff_fffd, 0, b"a")])), [b"a"]);
        assert!(rx.send(&[ordered(42, 0, 0, b"d")]).is_empty());
        assert!(rx.send(&[ordered(43, 0xff_ffff, 0, b"c")]).is_empty());
        // a sequenced message tagged with order index 0 (sent after c)
        assert!(rx.send(&[unrel_seq(0, 0, 0, b"s")]).is_empty());
        let ev = rx.send(&[ordered(41, 0xff_fffe, 0, b"b")]);
        assert_eq!(data(&ev), [b"b", b"c", b"s", b"d"]);
        assert_eq!(
            rx.send(&[ordered(44, 0xff_fffd, 0, b"a")]),
            [ReceiveEvent::OldOrdered {
                frame: 6,
                channel: 0,
                order_index: 0xff_fffd
            }]
        );
        assert_eq!(data(&rx.send(&[ordered(45, 1, 0, b"e")])), [b"e"]);
    }

    #[test]
    fn sequenced_held_behind_ordered() {
        let mut rx = Rx::new(ReceiveConfig::default());
        // Sender: O0 (oi 0), then S0 S1 (oi 1, si 0 1), O1 (oi 1), T0 (oi 2, si 0).
        assert!(rx.send(&[unrel_seq(1, 1, 0, b"S1")]).is_empty());
        assert!(rx.send(&[unrel_seq(0, 1, 0, b"S0")]).is_empty());
        assert!(rx.send(&[ordered(1, 1, 0, b"O1")]).is_empty());
        assert!(rx.send(&[rel_seq(2, 0, 2, 0, b"T0")]).is_empty());
        let ev = rx.send(&[ordered(0, 0, 0, b"O0")]);
        assert_eq!(
            data(&ev),
            [&b"O0"[..], b"S0", b"S1", b"O1", b"T0"],
            "sequenced come off the heap by sequence index, before the ordered one that follows them"
        );
        assert_eq!(rx.half.held_bytes(), 0);
        assert_eq!(rx.half.channels[0].read_index, 2);
    }

    #[test]
    fn stale_sequenced_dropped() {
        let mut rx = Rx::new(ReceiveConfig::default());
        assert_eq!(data(&rx.send(&[unrel_seq(3, 0, 1, b"3")])), [b"3"]);
        for si in [2, 3] {
            assert_eq!(
                rx.send(&[unrel_seq(si, 0, 1, b"x")]),
                [ReceiveEvent::StaleSequenced {
                    frame: rx.frame,
                    channel: 1,
                    order_index: 0,
                    sequence_index: si
                }]
            );
        }
        assert_eq!(data(&rx.send(&[unrel_seq(5, 0, 1, b"5")])), [b"5"]);
        // an ordered message passes; sequenced ones tagged before it are stale
        assert_eq!(data(&rx.send(&[ordered(0, 0, 1, b"O0")])), [b"O0"]);
        assert_eq!(
            rx.send(&[rel_seq(1, 6, 0, 1, b"6")]),
            [ReceiveEvent::StaleSequenced {
                frame: rx.frame,
                channel: 1,
                order_index: 0,
                sequence_index: 6
            }]
        );
        // the sequence index restarts at 0 after the ordered message
        assert_eq!(data(&rx.send(&[rel_seq(2, 0, 1, 1, b"0")])), [b"0"]);
    }

    #[test]
    fn sequence_index_wraps() {
        let mut rx = Rx::new(ReceiveConfig::default());
        for si in [0x40_0000, 0x80_0000, 0xc0_0000, 0xff_ffff, 0] {
            assert_eq!(
                data(&rx.send(&[unrel_seq(si, 0, 0, b"s")])).len(),
                1,
                "{si:#x}"
            );
        }
        assert_eq!(rx.half.channels[0].highest_sequenced, 1);
        assert_eq!(
            others(&rx.send(&[unrel_seq(0xff_ffff, 0, 0, b"s")])).len(),
            1,
            "stale"
        );
        // a jump of more than the half range is "older"
        let mut rx = Rx::new(ReceiveConfig::default());
        assert_eq!(
            others(&rx.send(&[unrel_seq(0xff_fffe, 0, 0, b"s")])).len(),
            1
        );
    }

    #[test]
    fn originals_quirks_in_heap_release() {
        // 1. A sequenced message released from the heap sets the highest
        //    sequence index to its own, without the +1 of the direct path:
        //    an unreliable duplicate of it is delivered again.
        let mut rx = Rx::new(ReceiveConfig::default());
        assert!(rx.send(&[unrel_seq(0, 1, 0, b"S0")]).is_empty());
        assert_eq!(data(&rx.send(&[ordered(0, 0, 0, b"O0")])), [b"O0", b"S0"]);
        assert_eq!(data(&rx.send(&[unrel_seq(0, 1, 0, b"S0")])), [b"S0"]);
        assert_eq!(others(&rx.send(&[unrel_seq(0, 1, 0, b"S0")])).len(), 1);

        // 2. An ordered message released from the heap does not reset the
        //    highest sequence index, so the next order index's sequence 0 is stale...
        let mut rx = Rx::new(ReceiveConfig::default());
        assert!(rx.send(&[unrel_seq(3, 1, 0, b"S3")]).is_empty());
        assert!(rx.send(&[ordered(1, 1, 0, b"O1")]).is_empty());
        assert_eq!(
            data(&rx.send(&[ordered(0, 0, 0, b"O0")])),
            [&b"O0"[..], b"S3", b"O1"]
        );
        assert_eq!(
            rx.send(&[unrel_seq(0, 2, 0, b"T0")]),
            [ReceiveEvent::StaleSequenced {
                frame: 4,
                channel: 0,
                order_index: 2,
                sequence_index: 0
            }]
        );
        // ...while delivered directly, it does.
        let mut rx = Rx::new(ReceiveConfig::default());
        assert!(rx.send(&[unrel_seq(3, 1, 0, b"S3")]).is_empty());
        assert_eq!(data(&rx.send(&[ordered(0, 0, 0, b"O0")])), [b"O0", b"S3"]);
        assert_eq!(data(&rx.send(&[ordered(1, 1, 0, b"O1")])), [b"O1"]);
        assert_eq!(data(&rx.send(&[unrel_seq(0, 2, 0, b"T0")])), [b"T0"]);

        // 3. A sequence index of 2^20 or more spills into the next order
        //    index's weight: the ordered message comes off first, and the
        //    sequenced one is stranded (reported at the end).
        let mut rx = Rx::new(ReceiveConfig::default());
        assert!(rx.send(&[unrel_seq(1 << 20, 1, 0, b"S")]).is_empty());
        assert!(rx.send(&[ordered(1, 1, 0, b"O1")]).is_empty());
        assert_eq!(data(&rx.send(&[ordered(0, 0, 0, b"O0")])), [b"O0", b"O1"]);
        assert_eq!(rx.half.held_bytes(), 1 + HELD_ENTRY_OVERHEAD);
        rx.half.finish();
        let ev = rx.drain();
        assert_eq!(bounds(&ev), ["held at end"]);
        assert_eq!(rx.half.held_bytes(), 0);
    }

    #[test]
    fn equal_weights_come_off_as_in_the_originals_heap() {
        // Unreliable duplicates of one sequenced message share a weight.
        let mut rx = Rx::new(ReceiveConfig::default());
        for p in [b"1", b"2", b"3", b"4"] {
            assert!(rx.send(&[unrel_seq(0, 1, 0, p)]).is_empty());
        }
        let ev = rx.send(&[ordered(0, 0, 0, b"O")]);
        // The original's heap: push keeps equal weights below, pop moves the
        // last node up and sifts towards the right child on ties.
        assert_eq!(data(&ev), [b"O", b"1", b"4", b"3", b"2"]);
    }

    // ---- bounds --------------------------------------------------------------------

    #[test]
    fn split_count_of_2_pow_32_minus_1() {
        let mut rx = Rx::new(ReceiveConfig::default());
        let ev = rx.send(&[part(reliable(0, b"x"), u32::MAX, 1, 0)]);
        assert_eq!(bounds(&ev), ["split parts"]);
        assert_eq!(rx.half.held_bytes(), 0);
        assert!(rx.half.splits.is_empty());
        let ev = rx.send(&[part(reliable(1, b"x"), 65_536, 1, 65_535)]);
        assert!(ev.is_empty());
        assert_eq!(rx.half.held_bytes(), 1 + HELD_ENTRY_OVERHEAD);
        // a malformed part (index not below count) is refused too
        let ev = rx.send(&[part(reliable(2, b"x"), 2, 2, 2)]);
        assert_eq!(bounds(&ev), ["split index"]);
    }

    #[test]
    fn a_hundred_thousand_split_ids() {
        let mut rx = Rx::new(ReceiveConfig::default());
        let mut concurrent = 0;
        let mut dup = 0;
        for i in 0..100_000u32 {
            for e in rx.send(&[part(unreliable(b"p"), 2, i as u16, 0)]) {
                match e {
                    ReceiveEvent::BoundExceeded {
                        what: "concurrent splits",
                        ..
                    } => concurrent += 1,
                    ReceiveEvent::BoundExceeded {
                        what: "split part", ..
                    } => dup += 1,
                    e => panic!("unexpected {e:?}"),
                }
            }
            assert!(rx.half.splits.len() <= 1024);
        }
        assert_eq!(dup, 1024, "ids 0..1024 seen again after the u16 wrap");
        assert_eq!(concurrent, 100_000 - 1024 - 1024);
        assert_eq!(rx.half.held_bytes(), 1024 * (1 + HELD_ENTRY_OVERHEAD));
        rx.half.finish();
        let ev = rx.drain();
        assert_eq!(ev.len(), 1024);
        assert_eq!(
            ev[0],
            ReceiveEvent::SplitIncomplete {
                split_id: 0,
                have: 1,
                count: 2
            }
        );
        assert_eq!(rx.half.held_bytes(), 0);
    }

    #[test]
    fn held_bytes_bound_for_splits_and_heaps() {
        let cfg = ReceiveConfig {
            max_held_bytes: 1000,
            ..ReceiveConfig::default()
        };
        let big = [7u8; 200];
        let mut rx = Rx::new(cfg.clone());
        for i in 0..3 {
            assert!(rx.send(&[part(unreliable(&big), 10, 1, i)]).is_empty());
        }
        assert_eq!(rx.half.held_bytes(), 3 * (200 + HELD_ENTRY_OVERHEAD));
        assert_eq!(
            bounds(&rx.send(&[part(unreliable(&big), 10, 1, 3)])),
            ["held bytes"]
        );
        assert!(rx.half.held_bytes() <= 1000);

        let mut rx = Rx::new(cfg);
        for oi in 1..4 {
            assert!(rx.send(&[ordered(oi, oi, 0, &big)]).is_empty());
        }
        let ev = rx.send(&[ordered(4, 4, 0, &big)]);
        assert_eq!(bounds(&ev), ["held bytes"]);
        assert!(rx.half.held_bytes() <= 1000);
        let ev = rx.send(&[ordered(0, 0, 0, b"go")]);
        assert_eq!(data(&ev).len(), 4);
        assert_eq!(rx.half.held_bytes(), 0);
        // a completed split is no longer held, and a message too big to hold is refused
        let mut rx = Rx::new(ReceiveConfig {
            max_held_bytes: 1000,
            ..ReceiveConfig::default()
        });
        let ev = rx.send(&[ordered(1, 1, 0, &[0; 1000])]);
        assert_eq!(bounds(&ev), ["held bytes"]);
    }

    #[test]
    fn ordering_jump_of_2_pow_23() {
        let mut rx = Rx::new(ReceiveConfig::default());
        // 2^23 ahead: the original calls it older
        assert_eq!(
            rx.send(&[ordered(0, 1 << 23, 0, b"x")]),
            [ReceiveEvent::OldOrdered {
                frame: 1,
                channel: 0,
                order_index: 1 << 23
            }]
        );
        // 2^23 - 1 ahead: newer, but past the gap bound
        assert_eq!(
            bounds(&rx.send(&[ordered(1, (1 << 23) - 1, 0, b"x")])),
            ["ordering gap"]
        );
        assert_eq!(
            bounds(&rx.send(&[unrel_seq(0, 65_537, 0, b"x")])),
            ["ordering gap"]
        );
        assert!(rx.send(&[ordered(2, 65_536, 0, b"x")]).is_empty());
        assert_eq!(rx.half.held_bytes(), 1 + HELD_ENTRY_OVERHEAD);
    }

    #[test]
    fn finish_reports_what_is_left() {
        let mut rx = Rx::new(ReceiveConfig::default());
        rx.send(&[
            part(reliable(0, b"a"), 3, 4, 0),
            part(reliable(1, b"c"), 3, 4, 2),
            ordered(2, 2, 3, b"later"),
        ]);
        rx.half.finish();
        let ev = rx.drain();
        assert_eq!(
            ev[0],
            ReceiveEvent::SplitIncomplete {
                split_id: 4,
                have: 2,
                count: 3
            }
        );
        let ReceiveEvent::BoundExceeded {
            frame: 1,
            what: "held at end",
            detail,
        } = &ev[1]
        else {
            panic!("{:?}", ev[1])
        };
        assert_eq!(
            detail,
            "RELIABLE_ORDERED channel 3 order index 2, 5 bytes never delivered: channel 3 waits for order index 0"
        );
        assert_eq!(ev.len(), 2);
        assert_eq!(rx.half.held_bytes(), 0);
    }

    // ---- property: no panic, memory bounded --------------------------------------------

    const PAYLOAD: [u8; 96] = [0x5a; 96];

    #[derive(Debug, Clone)]
    struct CapsuleSpec {
        rel: u8,
        ri: u32,
        si: u32,
        oi: u32,
        ch: u8,
        split: Option<(u32, u16, u32)>,
        len: usize,
    }

    fn index() -> impl Strategy<Value = u32> {
        prop_oneof![
            0u32..12,
            0xff_fff4u32..=0xff_ffff,
            0x7f_fff8u32..0x80_0008,
            any::<u32>()
        ]
    }

    fn capsule_spec() -> impl Strategy<Value = CapsuleSpec> {
        (
            0u8..9,
            index(),
            index(),
            index(),
            prop_oneof![0u8..3, 30u8..34],
            proptest::option::of((
                prop_oneof![1u32..5, Just(u32::MAX), any::<u32>()],
                0u16..6,
                prop_oneof![0u32..5, any::<u32>()],
            )),
            0usize..96,
        )
            .prop_map(|(rel, ri, si, oi, ch, split, len)| CapsuleSpec {
                rel,
                ri,
                si,
                oi,
                ch,
                split,
                len,
            })
    }

    fn build(s: &CapsuleSpec) -> Capsule<'static> {
        let rel = Reliability(s.rel);
        Capsule {
            reliability: rel,
            reliable_index: rel.has_reliable_index().then_some(s.ri),
            sequence_index: rel.is_sequenced().then_some(s.si),
            order_index: rel.has_ordering().then_some(s.oi),
            channel: rel.has_ordering().then_some(s.ch),
            split: s.split.map(|(count, id, index)| Split { count, id, index }),
            bit_length: (s.len * 8) as u16,
            payload: &PAYLOAD[..s.len],
        }
    }

    /// What a model sender emits for `messages` (ordered on channel 0 when
    /// the flag is set, else RELIABLE), split in parts of 4 bytes: owned
    /// capsule fields, one entry per part, indexes from `base` (24-bit wrap).
    fn model_sender(messages: &[(bool, Vec<u8>)], base: u32) -> Vec<(Capsule<'_>, usize)> {
        let (mut ri, mut oi, mut split_id) = (base, base, base as u16);
        let mut out = Vec::new();
        for (m, (is_ordered, bytes)) in messages.iter().enumerate() {
            let chunks: Vec<&[u8]> = bytes.chunks(4).collect();
            let count = chunks.len() as u32;
            for (i, chunk) in chunks.into_iter().enumerate() {
                let mut c = if *is_ordered {
                    ordered(ri, oi, 0, chunk)
                } else {
                    reliable(ri, chunk)
                };
                if count > 1 {
                    c = part(c, count, split_id, i as u32);
                }
                ri = (ri + 1) & MASK24;
                out.push((c, m));
            }
            if count > 1 {
                split_id = split_id.wrapping_add(1);
            }
            if *is_ordered {
                oi = (oi + 1) & MASK24;
            }
        }
        out
    }

    proptest! {
        #[test]
        fn shuffled_and_duplicated_reliable_traffic_arrives_once_in_order(
            messages in proptest::collection::vec(
                (any::<bool>(), proptest::collection::vec(any::<u8>(), 1..14)),
                1..25,
            ),
            base in prop_oneof![Just(0u32), 0xff_fff0u32..=0xff_ffff],
            keys in proptest::collection::vec(any::<u16>(), 200),
            dups in proptest::collection::vec(0usize..200, 0..10),
        ) {
            let sent = model_sender(&messages, base);
            // arrival order: the parts sorted by a random key, plus resends
            let mut arrival: Vec<usize> = (0..sent.len()).collect();
            arrival.sort_by_key(|&i| keys[i % keys.len()]);
            for d in dups {
                arrival.push(d % sent.len());
            }
            let mut half = ReceiveHalf::new(ReceiveConfig {
                join_mid_stream: base != 0,
                ..ReceiveConfig::default()
            });
            let mut got = Vec::new();
            if base != 0 {
                // one message just before `base` sets every expected index
                let prev = sub24(base, 1);
                half.handle_datagram(Duration::ZERO, 0, prev, &[ordered(prev, prev, 0, b"primer")]);
                prop_assert!(matches!(half.poll_event(), Some(ReceiveEvent::Delivered(_))));
            }
            for (n, chunk) in arrival.chunks(3).enumerate() {
                let caps: Vec<_> = chunk.iter().map(|&i| sent[i].0.clone()).collect();
                let seq = base.wrapping_add(n as u32) & MASK24;
                half.handle_datagram(Duration::ZERO, n as u64, seq, &caps);
                while let Some(e) = half.poll_event() {
                    match e {
                        ReceiveEvent::Delivered(d) => got.push(d),
                        ReceiveEvent::DuplicateReliable { .. } => {}
                        e => prop_assert!(false, "unexpected {:?}", e),
                    }
                }
            }
            half.finish();
            prop_assert_eq!(half.poll_event(), None);
            prop_assert_eq!(half.held_bytes(), 0);
            let want_ordered: Vec<&[u8]> =
                messages.iter().filter(|m| m.0).map(|m| &m.1[..]).collect();
            let got_ordered: Vec<&[u8]> = got
                .iter()
                .filter(|d| d.reliability == Reliability::RELIABLE_ORDERED)
                .map(|d| &d.data[..])
                .collect();
            prop_assert_eq!(&got_ordered, &want_ordered);
            let mut want_reliable: Vec<&[u8]> =
                messages.iter().filter(|m| !m.0).map(|m| &m.1[..]).collect();
            let mut got_reliable: Vec<&[u8]> = got
                .iter()
                .filter(|d| d.reliability == Reliability::RELIABLE)
                .map(|d| &d.data[..])
                .collect();
            want_reliable.sort();
            got_reliable.sort();
            prop_assert_eq!(got_reliable, want_reliable);
        }
    }

    proptest! {
        #[test]
        fn random_capsule_streams_never_panic_and_stay_bounded(
            by_index in any::<bool>(),
            join_mid_stream in any::<bool>(),
            datagrams in proptest::collection::vec(
                (index(), proptest::collection::vec(capsule_spec(), 0..6)),
                0..60,
            ),
        ) {
            let cfg = ReceiveConfig {
                reassembly: if by_index { Reassembly::ByIndex } else { Reassembly::Arrival },
                max_split_parts: 4,
                max_concurrent_splits: 3,
                max_held_bytes: 700,
                max_ordering_gap: 8,
                max_reliable_hole: 64,
                join_mid_stream,
                keep_data: true,
            };
            let mut half = ReceiveHalf::new(cfg);
            for (frame, (seq, specs)) in datagrams.iter().enumerate() {
                let caps: Vec<_> = specs.iter().map(build).collect();
                half.handle_datagram(Duration::from_millis(frame as u64), frame as u64, *seq, &caps);
                prop_assert!(half.held_bytes() <= 700);
                prop_assert!(half.splits.len() <= 3);
                prop_assert!(half.reliable.holes.len() <= 65);
                let heap: usize = half.channels.iter().map(|c| c.heap.nodes.iter().map(Held::cost).sum::<usize>()).sum();
                let split: usize = half.splits.values().map(|s| s.cost).sum();
                prop_assert_eq!(heap + split, half.held_bytes());
                while let Some(e) = half.poll_event() {
                    if let ReceiveEvent::Delivered(d) = e {
                        prop_assert!(d.data.len() <= 4 * 96);
                    }
                }
            }
            half.finish();
            prop_assert_eq!(half.held_bytes(), 0);
        }
    }
}
