//! What one side's SCTP stack delivered to its data channels, replayed
//! from the chunks a capture saw going to it: the receive half of an
//! association, as `session::receive` is RakNet's, for DATA and I-DATA
//! alike.
//!
//! Each user-data chunk is taken once by its TSN (a chunk seen again is a
//! retransmission), fragments are put back together (DATA: consecutive
//! TSNs from the B bit to the E bit, one stream sequence number; I-DATA:
//! fragment sequence numbers 0 to the E bit's, one message id), and a
//! whole message is delivered at once when unordered, or in stream order
//! when ordered. FORWARD-TSN and I-FORWARD-TSN (what the sender abandoned,
//! as the unreliable channel does) drop the fragments they cover and move
//! the streams' expected sequence past the skipped messages.
//!
//! Everything a peer controls is bounded: bytes and chunks held in
//! fragments, messages waiting for their turn, streams; past a bound the
//! oldest is dropped and said ([`Event::Dropped`]).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use super::sctp::{Body, Chunk, Data, ForwardTsn};

/// Bounds on what one direction holds.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes of fragments and waiting messages at most.
    pub bytes: usize,
    /// Fragments held at most.
    pub fragments: usize,
    /// Streams tracked at most (data channels use a few).
    pub streams: usize,
    /// TSNs remembered to tell a retransmission from a new chunk.
    pub remembered: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            bytes: 32 << 20,
            fragments: 65_536,
            streams: 1024,
            remembered: 1 << 16,
        }
    }
}

/// A message delivered to the application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The stream (the data channel) it came on.
    pub stream: u16,
    /// Its payload protocol identifier (53: binary; 50: DCEP).
    pub ppid: u32,
    /// Delivered as it completed, not in stream order.
    pub unordered: bool,
    /// The TSN of its first fragment.
    pub first_tsn: u32,
    /// The TSN of its last fragment.
    pub last_tsn: u32,
    /// The message's bytes.
    pub data: Vec<u8>,
}

/// What a chunk did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A message delivered, in the order the application got it.
    Delivered(Message),
    /// A chunk whose TSN was seen before: sent again.
    /// The TSN seen again.
    Retransmitted {
        /// Its TSN.
        tsn: u32,
    },
    /// Fragments or messages abandoned by a FORWARD-TSN (the sender gave
    /// up on them): how many messages a stream skipped.
    /// The stream, and how many of its ordered messages it skipped.
    Abandoned {
        /// The stream.
        stream: u16,
        /// Its ordered messages skipped.
        messages: u32,
    },
    /// A bound was reached and something held was let go: what.
    Dropped(&'static str),
}

/// A fragment held until its message is whole.
#[derive(Debug, Clone)]
struct Fragment {
    data: Vec<u8>,
    ppid: Option<u32>,
    beginning: bool,
    ending: bool,
    stream: u16,
    unordered: bool,
    message: u32,
    fsn: u32,
}

#[derive(Debug, Default)]
struct Stream {
    /// The next stream sequence number (DATA, 16 bits) or message id
    /// (I-DATA) an ordered message must have to be delivered.
    next: u32,
    /// Ordered messages that came early, by their number.
    waiting: BTreeMap<u32, Message>,
}

/// One direction of an association: what its receiver delivered.
#[derive(Debug, Default)]
pub struct Receiver {
    limits: Limits,
    /// TSN -> fragment, for the messages not yet whole.
    fragments: BTreeMap<u32, Fragment>,
    held: usize,
    seen: HashSet<u32>,
    seen_order: VecDeque<u32>,
    streams: HashMap<u16, Stream>,
    /// Whether the sender uses I-DATA (then sequence numbers are 32-bit
    /// message ids).
    interleaved: bool,
    /// Whether the association's start was not seen: a stream's first
    /// ordered message then sets where its sequence starts.
    mid_stream: bool,
    /// Messages delivered, retransmissions seen.
    pub delivered: u64,
    /// Chunks seen again (their TSN was taken before).
    pub retransmitted: u64,
}

impl Receiver {
    /// A receiver from the association's start: every stream's ordered
    /// messages are numbered from 0.
    pub fn new(limits: Limits) -> Self {
        Receiver {
            limits,
            ..Receiver::default()
        }
    }

    /// A receiver whose association began before the capture: each
    /// stream's first ordered message is taken as its turn.
    pub fn mid_stream(limits: Limits) -> Self {
        Receiver {
            mid_stream: true,
            ..Receiver::new(limits)
        }
    }

    /// Bytes held in fragments and waiting messages.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Take the chunks of one packet sent to this receiver, in order.
    pub fn chunks(&mut self, chunks: &[Chunk<'_>], out: &mut Vec<Event>) {
        for c in chunks {
            match &c.body {
                Body::Data(d) => self.data(d, out),
                Body::ForwardTsn(f) => {
                    self.forward(f, c.kind == super::sctp::chunk::I_FORWARD_TSN, out)
                }
                _ => {}
            }
        }
    }

    fn remember(&mut self, tsn: u32) -> bool {
        if !self.seen.insert(tsn) {
            return false;
        }
        self.seen_order.push_back(tsn);
        if self.seen_order.len() > self.limits.remembered {
            if let Some(old) = self.seen_order.pop_front() {
                self.seen.remove(&old);
            }
        }
        true
    }

    fn data(&mut self, d: &Data<'_>, out: &mut Vec<Event>) {
        if !self.remember(d.tsn) {
            self.retransmitted += 1;
            out.push(Event::Retransmitted { tsn: d.tsn });
            return;
        }
        self.interleaved |= d.interleaved;
        let f = Fragment {
            data: d.payload.to_vec(),
            ppid: d.ppid,
            beginning: d.beginning,
            ending: d.ending,
            stream: d.stream,
            unordered: d.unordered,
            message: d.message,
            fsn: d.fsn,
        };
        if d.beginning && d.ending {
            let m = Message {
                stream: d.stream,
                ppid: d.ppid.unwrap_or(0),
                unordered: d.unordered,
                first_tsn: d.tsn,
                last_tsn: d.tsn,
                data: f.data,
            };
            return self.complete(m, d.message, out);
        }
        if f.data.len() > self.limits.bytes {
            out.push(Event::Dropped(
                "a fragment larger than the reassembly bound",
            ));
            return;
        }
        while self.fragments.len() >= self.limits.fragments
            || self.held + f.data.len() > self.limits.bytes
        {
            let Some((_, old)) = self.fragments.pop_first() else {
                break;
            };
            self.held -= old.data.len();
            out.push(Event::Dropped("a fragment, past the reassembly bound"));
        }
        self.held += f.data.len();
        self.fragments.insert(d.tsn, f);
        let whole = if d.interleaved {
            self.whole_interleaved(d.stream, d.unordered, d.message)
        } else {
            self.whole_by_tsn(d.tsn)
        };
        if let Some((tsns, message)) = whole {
            let mut data = Vec::new();
            let mut ppid = None;
            for t in &tsns {
                if let Some(f) = self.fragments.remove(t) {
                    self.held -= f.data.len();
                    ppid = ppid.or(f.ppid);
                    data.extend_from_slice(&f.data);
                }
            }
            let m = Message {
                stream: d.stream,
                ppid: ppid.unwrap_or(0),
                unordered: d.unordered,
                first_tsn: tsns[0],
                last_tsn: tsns[tsns.len() - 1],
                data,
            };
            self.complete(m, message, out);
        }
    }

    /// DATA: the run of consecutive TSNs through `tsn` from a B fragment
    /// to an E fragment, all of one stream and sequence number.
    fn whole_by_tsn(&self, tsn: u32) -> Option<(Vec<u32>, u32)> {
        let f = self.fragments.get(&tsn)?;
        let same = |g: &Fragment| {
            g.stream == f.stream && g.message == f.message && g.unordered == f.unordered
        };
        let mut start = tsn;
        while !self.fragments.get(&start)?.beginning {
            start = start.wrapping_sub(1);
            if !same(self.fragments.get(&start)?) {
                return None;
            }
        }
        let mut end = tsn;
        while !self.fragments.get(&end)?.ending {
            end = end.wrapping_add(1);
            if !same(self.fragments.get(&end)?) {
                return None;
            }
        }
        let n = end.wrapping_sub(start) as usize + 1;
        Some((
            (0..n).map(|i| start.wrapping_add(i as u32)).collect(),
            f.message,
        ))
    }

    /// I-DATA: every fragment sequence number from 0 to the E fragment's
    /// of one message id.
    fn whole_interleaved(
        &self,
        stream: u16,
        unordered: bool,
        message: u32,
    ) -> Option<(Vec<u32>, u32)> {
        let mut parts: Vec<(u32, u32, bool)> = self
            .fragments
            .iter()
            .filter(|(_, g)| g.stream == stream && g.unordered == unordered && g.message == message)
            .map(|(&t, g)| (if g.beginning { 0 } else { g.fsn }, t, g.ending))
            .collect();
        parts.sort_unstable();
        let last = parts.iter().find(|p| p.2)?.0;
        let complete = parts.len() as u64 == u64::from(last) + 1
            && parts.iter().enumerate().all(|(i, p)| p.0 as usize == i);
        complete.then(|| (parts.iter().map(|p| p.1).collect(), message))
    }

    /// A whole message: delivered now, or when its turn in the stream
    /// comes.
    fn complete(&mut self, m: Message, number: u32, out: &mut Vec<Event>) {
        if m.unordered {
            self.delivered += 1;
            out.push(Event::Delivered(m));
            return;
        }
        if !self.streams.contains_key(&m.stream) && self.streams.len() >= self.limits.streams {
            out.push(Event::Dropped(
                "a message on a stream past the streams bound",
            ));
            return;
        }
        let wrap = if self.interleaved {
            u32::MAX
        } else {
            u32::from(u16::MAX)
        };
        let held = m.data.len();
        let mid_stream = self.mid_stream;
        let s = self.streams.entry(m.stream).or_insert_with(|| Stream {
            next: if mid_stream { number } else { 0 },
            waiting: BTreeMap::new(),
        });
        if number != s.next {
            if self.held + held > self.limits.bytes {
                out.push(Event::Dropped("an early message, past the bytes bound"));
                return;
            }
            self.held += held;
            s.waiting.insert(number, m);
            return;
        }
        s.next = if s.next == wrap { 0 } else { s.next + 1 };
        self.delivered += 1;
        out.push(Event::Delivered(m));
        self.release(out);
    }

    /// Deliver the waiting messages whose turn has come, on every stream.
    fn release(&mut self, out: &mut Vec<Event>) {
        let wrap = if self.interleaved {
            u32::MAX
        } else {
            u32::from(u16::MAX)
        };
        for s in self.streams.values_mut() {
            while let Some(m) = s.waiting.remove(&s.next) {
                self.held -= m.data.len();
                s.next = if s.next == wrap { 0 } else { s.next + 1 };
                self.delivered += 1;
                out.push(Event::Delivered(m));
            }
        }
    }

    fn forward(&mut self, f: &ForwardTsn, interleaved: bool, out: &mut Vec<Event>) {
        // Fragments at or before the new cumulative TSN will never be
        // completed.
        let cut = f.new_cumulative_tsn;
        let stale: Vec<u32> = self
            .fragments
            .keys()
            .copied()
            .filter(|&t| (cut.wrapping_sub(t) as i32) >= 0)
            .collect();
        for t in stale {
            if let Some(g) = self.fragments.remove(&t) {
                self.held -= g.data.len();
            }
        }
        for &(stream, number, unordered) in &f.streams {
            if unordered {
                continue; // unordered messages have no turn to skip
            }
            let wrap = if interleaved {
                u32::MAX
            } else {
                u32::from(u16::MAX)
            };
            let s = self.streams.entry(stream).or_default();
            let next = if number == wrap { 0 } else { number + 1 };
            let skipped = next.wrapping_sub(s.next) & wrap;
            if skipped > 0 && skipped < wrap / 2 {
                out.push(Event::Abandoned {
                    stream,
                    messages: skipped,
                });
                // Waiting messages the skip passes over are gone too.
                let gone: Vec<u32> = s
                    .waiting
                    .keys()
                    .copied()
                    .filter(|&k| (next.wrapping_sub(k) & wrap) <= skipped && k != next)
                    .collect();
                for k in gone {
                    if let Some(m) = s.waiting.remove(&k) {
                        self.held -= m.data.len();
                    }
                }
                s.next = next;
            }
        }
        self.release(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nethernet::sctp::chunk;

    fn data(
        tsn: u32,
        stream: u16,
        ssn: u32,
        b: bool,
        e: bool,
        unordered: bool,
        payload: &'static [u8],
    ) -> Chunk<'static> {
        Chunk {
            at: 0,
            kind: chunk::DATA,
            flags: 0,
            body: Body::Data(Data {
                interleaved: false,
                unordered,
                beginning: b,
                ending: e,
                immediate: false,
                tsn,
                stream,
                message: ssn,
                ppid: Some(53),
                fsn: 0,
                payload,
            }),
        }
    }

    fn delivered(events: &[Event]) -> Vec<Vec<u8>> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Delivered(m) => Some(m.data.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn fragments_reordered_and_resent_deliver_once_in_stream_order() {
        let mut r = Receiver::new(Limits::default());
        let mut ev = Vec::new();
        // Message 1 (SSN 1) arrives before message 0 (SSN 0, two fragments,
        // the second first); one fragment is resent.
        r.chunks(&[data(12, 1, 1, true, true, false, b"second")], &mut ev);
        r.chunks(&[data(11, 1, 0, false, true, false, b"rst")], &mut ev);
        assert!(delivered(&ev).is_empty());
        assert!(r.held() > 0);
        r.chunks(&[data(10, 1, 0, true, false, false, b"fi")], &mut ev);
        r.chunks(&[data(11, 1, 0, false, true, false, b"rst")], &mut ev);
        assert_eq!(delivered(&ev), [b"first".to_vec(), b"second".to_vec()]);
        assert!(ev.contains(&Event::Retransmitted { tsn: 11 }));
        assert_eq!((r.delivered, r.retransmitted, r.held()), (2, 1, 0));
        // Unordered: delivered as it completes.
        let mut ev = Vec::new();
        r.chunks(&[data(14, 3, 0, true, true, true, b"u2")], &mut ev);
        assert_eq!(delivered(&ev), [b"u2".to_vec()]);
    }

    #[test]
    fn forward_tsn_skips_what_was_abandoned() {
        let mut r = Receiver::new(Limits::default());
        let mut ev = Vec::new();
        // SSN 0 lost, SSN 1 waits; a FORWARD-TSN abandons SSN 0.
        r.chunks(&[data(21, 1, 1, true, true, false, b"late")], &mut ev);
        r.chunks(&[data(22, 1, 2, true, false, false, b"half")], &mut ev);
        let fwd = Chunk {
            at: 0,
            kind: chunk::FORWARD_TSN,
            flags: 0,
            body: Body::ForwardTsn(ForwardTsn {
                new_cumulative_tsn: 20,
                streams: vec![(1, 0, false)],
            }),
        };
        r.chunks(&[fwd], &mut ev);
        assert_eq!(delivered(&ev), [b"late".to_vec()]);
        assert!(ev.contains(&Event::Abandoned {
            stream: 1,
            messages: 1
        }));
        assert_eq!(r.held(), 4, "SSN 2's fragment is after the cut");
    }

    #[test]
    fn interleaved_fragments_by_fsn() {
        let mut r = Receiver::new(Limits::default());
        let mut ev = Vec::new();
        let idata = |tsn: u32, mid: u32, fsn: u32, b: bool, e: bool, p: &'static [u8]| Chunk {
            at: 0,
            kind: chunk::I_DATA,
            flags: 0,
            body: Body::Data(Data {
                interleaved: true,
                unordered: false,
                beginning: b,
                ending: e,
                immediate: false,
                tsn,
                stream: 1,
                message: mid,
                ppid: b.then_some(53),
                fsn,
                payload: p,
            }),
        };
        r.chunks(&[idata(3, 0, 2, false, true, b"c")], &mut ev);
        r.chunks(&[idata(1, 0, 0, true, false, b"a")], &mut ev);
        assert!(delivered(&ev).is_empty());
        r.chunks(&[idata(2, 0, 1, false, false, b"b")], &mut ev);
        assert_eq!(delivered(&ev), [b"abc".to_vec()]);
        let Some(Event::Delivered(m)) = ev.last() else {
            panic!()
        };
        assert_eq!((m.ppid, m.first_tsn, m.last_tsn), (53, 1, 3));
    }

    #[test]
    fn mid_stream_the_first_message_sets_the_turn() {
        let mut ev = Vec::new();
        let mut from_start = Receiver::new(Limits::default());
        from_start.chunks(&[data(7, 1, 9, true, true, false, b"nine")], &mut ev);
        assert!(delivered(&ev).is_empty(), "waits for 0..8");
        let mut joined = Receiver::mid_stream(Limits::default());
        joined.chunks(&[data(7, 1, 9, true, true, false, b"nine")], &mut ev);
        joined.chunks(&[data(8, 1, 10, true, true, false, b"ten")], &mut ev);
        assert_eq!(delivered(&ev), [b"nine".to_vec(), b"ten".to_vec()]);
    }

    #[test]
    fn bounds_let_the_oldest_go() {
        let limits = Limits {
            fragments: 2,
            ..Limits::default()
        };
        let mut r = Receiver::new(limits);
        let mut ev = Vec::new();
        for t in 0..10 {
            r.chunks(
                &[data(100 + 2 * t, 1, t, true, false, false, b"xx")],
                &mut ev,
            );
        }
        assert!(ev.iter().filter(|e| matches!(e, Event::Dropped(_))).count() == 8);
        assert_eq!(r.held(), 4);
    }
}
