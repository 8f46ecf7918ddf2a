//! The receive half of the reliability layer: what one side's application
//! gets from the data datagrams it receives (docs/wire-format.md §4-7).
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
//!   go past a bound is dropped and reported as `ReceiveEvent::BoundExceeded`.
//!
//! Sans-IO: `ReceiveHalf::handle_datagram` in, `ReceiveHalf::poll_event` out.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::time::Duration;

use crate::wire::{Capsule, Reliability};

mod ordering;
mod window;

use ordering::{Channel, Held};
use window::{datagram_newer, is_older, sub24, Reject, ReliableWindow, MASK24};

const MAX_DATAGRAM_SKIP: u32 = 50_000;
/// `OnGotPacket`: at most this many skipped numbers are NAKed.
const MAX_NAKS_PER_GAP: u32 = 1_000;
/// `NUMBER_OF_ORDERED_STREAMS`.
const ORDERING_CHANNELS: usize = 32;
/// Heap weight of one ordering index: `orderedHoleCount * 1048576`.
const ORDER_WEIGHT: u64 = 1 << 20;

/// Bookkeeping charged to [`ReceiveHalf::held_bytes`] for every held split
/// part or ordering-heap message, so that many tiny parts count too.
pub(crate) const HELD_ENTRY_OVERHEAD: usize = 64;

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
    pub(crate) reassembly: Reassembly,
    /// Parts per split message; a part announcing more is dropped.
    pub(crate) max_split_parts: u32,
    /// Split messages in progress at once; a part of one more is dropped.
    pub(crate) max_concurrent_splits: usize,
    /// Bytes held in splits and ordering heaps ([`HELD_ENTRY_OVERHEAD`] per entry included).
    pub(crate) max_held_bytes: usize,
    /// Ordering index ahead of the channel's read index by more than this: dropped.
    pub(crate) max_ordering_gap: u32,
    /// Reliable index past the first missing one by more than this: dropped
    /// (the original's hole queue bound, 1,000,000).
    pub(crate) max_reliable_hole: u32,
    /// Take the first datagram number, reliable index and per-channel
    /// ordering index seen as the expected ones, for a capture that starts
    /// after the connection did. Off: everything starts at 0, as in the original.
    pub(crate) join_mid_stream: bool,
    /// Copy message bytes into `Delivered::data`. Off, `data` is empty: for
    /// a caller that only wants the events (it saves a copy per message).
    pub keep_data: bool,
    /// With `keep_data`, copy only the messages with this id (and the
    /// parts of every split message, whose id comes with its first part):
    /// the Bedrock game layer wants the 0xFE messages alone.
    pub(crate) keep_only: Option<u8>,
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
            keep_only: None,
        }
    }
}

/// A message handed to the application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// The datagram that completed delivery: for a message released from an
    /// ordering heap, the one that released it.
    pub frame: u64,
    /// That datagram's time (the caller's `now`).
    pub ts: Duration,
    /// The whole message, joined as the configuration's reassembly says
    /// (empty when `keep_data` is off, or `keep_only` names another id).
    pub data: Vec<u8>,
    /// As on the wire; for a split message, the first-arrived part's
    /// (the original continues with that part's header).
    pub reliability: Reliability,
    /// Ordering channel, for ordered and sequenced messages.
    pub channel: Option<u8>,
    /// Ordering index, for ordered and sequenced messages.
    pub order_index: Option<u32>,
    /// Sequencing index, for sequenced messages.
    pub sequence_index: Option<u32>,
    /// Reliable index, for reliable messages.
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
pub(crate) enum ReceiveEvent {
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

/// The receive half of one direction of a connection.
#[derive(Debug)]
pub(crate) struct ReceiveHalf {
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
    pub(crate) fn new(cfg: ReceiveConfig) -> Self {
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
    pub(crate) fn handle_datagram(
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

    pub(crate) fn poll_event(&mut self) -> Option<ReceiveEvent> {
        self.events.pop_front()
    }

    /// Whether datagram number `seq` is behind the next one expected: a late
    /// or repeated datagram, or numbering that started over. False before
    /// the first datagram of a half that joins mid-stream.
    pub(crate) fn is_behind(&self, seq: u32) -> bool {
        let seq = seq & MASK24;
        self.expected_datagram
            .is_some_and(|e| seq != e && !datagram_newer(seq, e))
    }

    /// End of input: report split messages still incomplete and messages
    /// still waiting in ordering heaps, and let go of them.
    pub(crate) fn finish(&mut self) {
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
        if self.cfg.keep_data && self.cfg.keep_only.is_none_or(|id| b.first() == Some(&id)) {
            b.to_vec()
        } else {
            Vec::new()
        }
    }

    /// Bytes this half holds that a peer controls: held messages and parts,
    /// and the reliable hole window (one byte per slot).
    pub(crate) fn footprint(&self) -> usize {
        self.held + self.reliable.holes.capacity()
    }

    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
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
mod tests;
