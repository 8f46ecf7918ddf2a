//! One direction of a TCP connection put back in order by sequence number,
//! for what is read from a stream (NetherNet's HTTP signaling): segments
//! that come early wait for the bytes before them, a segment sent again is
//! said and not taken twice, a segment that overlaps what was taken gives
//! only its new bytes, and a hole that never fills (a segment the capture
//! missed) is said and stepped over, so that the bytes after it still
//! come.
//!
//! Sequence numbers are taken relative to the stream's first byte (the
//! SYN's number plus one, or the first segment's when the capture starts
//! mid-stream) and counted in 64 bits, so they wrap as TCP's do.

use std::collections::BTreeMap;

/// Bytes held out of order per direction by default: a few windows' worth.
pub const DEFAULT_HELD: usize = 1 << 20;

/// What a segment showed besides its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Note {
    /// Every byte was taken before: sent again.
    Retransmission {
        /// Stream offset of the segment's first byte.
        offset: u64,
        /// Its length in bytes.
        len: usize,
    },
    /// Some bytes were taken before, the rest are new.
    Overlap {
        /// Stream offset of the segment's first byte.
        offset: u64,
        /// Bytes of it taken before.
        old: usize,
    },
    /// Bytes before this segment are missing (it waits for them).
    OutOfOrder {
        /// Stream offset of the segment's first byte.
        offset: u64,
        /// Bytes missing before it.
        missing: u64,
    },
    /// A hole that was given up on (the wait bound was reached, or the
    /// stream ended): these bytes were never seen.
    Gap {
        /// Stream offset of the first byte never seen.
        offset: u64,
        /// Bytes never seen.
        missing: u64,
    },
}

/// One direction of a TCP connection.
#[derive(Debug)]
pub struct Direction {
    /// The sequence number of the stream's first byte.
    start: Option<u32>,
    /// Bytes given out so far: the next byte's offset.
    next: u64,
    /// Early segments, by offset.
    waiting: BTreeMap<u64, Vec<u8>>,
    held: usize,
    limit: usize,
    /// Whether a FIN was seen (at `fin_at`).
    pub fin_at: Option<u64>,
}

impl Default for Direction {
    fn default() -> Self {
        Direction::new(DEFAULT_HELD)
    }
}

impl Direction {
    /// A direction that holds at most `limit` bytes out of order.
    pub fn new(limit: usize) -> Self {
        Direction {
            start: None,
            next: 0,
            waiting: BTreeMap::new(),
            held: 0,
            limit,
            fin_at: None,
        }
    }

    /// Bytes given out so far.
    pub fn taken(&self) -> u64 {
        self.next
    }

    /// Bytes waiting for a hole to fill.
    pub fn held(&self) -> usize {
        self.held
    }

    /// The stream offset of sequence number `seq`, near the next byte.
    fn offset(&self, start: u32, seq: u32) -> i128 {
        let here = start.wrapping_add(self.next as u32);
        i128::from(self.next) + i128::from(seq.wrapping_sub(here) as i32)
    }

    /// Take one segment: its sequence number, flags and payload. The bytes
    /// it puts in order are appended to `out`; what else it showed to
    /// `notes`.
    pub fn segment(
        &mut self,
        seq: u32,
        syn: bool,
        fin: bool,
        payload: &[u8],
        out: &mut Vec<u8>,
        notes: &mut Vec<Note>,
    ) {
        if syn {
            if self.start.is_none() {
                self.start = Some(seq.wrapping_add(1));
            }
            // A SYN's own number is not a byte of the stream.
            let rest = seq.wrapping_add(1);
            if payload.is_empty() && !fin {
                return;
            }
            return self.segment(rest, false, fin, payload, out, notes);
        }
        let start = *self.start.get_or_insert(seq);
        let at = self.offset(start, seq);
        if fin {
            let end = at + payload.len() as i128;
            if end >= 0 {
                self.fin_at = Some(end as u64);
            }
        }
        if payload.is_empty() {
            return;
        }
        let end = at + payload.len() as i128;
        let next = i128::from(self.next);
        if end <= next {
            notes.push(Note::Retransmission {
                offset: at.max(0) as u64,
                len: payload.len(),
            });
            return;
        }
        let (at, bytes) = if at < next {
            let old = (next - at) as usize;
            notes.push(Note::Overlap {
                offset: at.max(0) as u64,
                old,
            });
            (self.next, &payload[old..])
        } else {
            (at as u64, payload)
        };
        if at > self.next {
            notes.push(Note::OutOfOrder {
                offset: at,
                missing: at - self.next,
            });
            if self.waiting.get(&at).is_none_or(|w| w.len() < bytes.len()) {
                if let Some(old) = self.waiting.insert(at, bytes.to_vec()) {
                    self.held -= old.len();
                }
                self.held += bytes.len();
            }
            while self.held > self.limit {
                // Give up on the hole: what waits goes out after it.
                self.skip(out, notes);
            }
            return;
        }
        out.extend_from_slice(bytes);
        self.next += bytes.len() as u64;
        self.drain(out);
    }

    /// Give out the waiting segments that now follow in order.
    fn drain(&mut self, out: &mut Vec<u8>) {
        while let Some(entry) = self.waiting.first_entry() {
            let at = *entry.key();
            if at > self.next {
                break;
            }
            let bytes = entry.remove();
            self.held -= bytes.len();
            let end = at + bytes.len() as u64;
            if end > self.next {
                out.extend_from_slice(&bytes[(self.next - at) as usize..]);
                self.next = end;
            }
        }
    }

    /// Step over the first hole: the bytes after it go out, the hole is
    /// said.
    fn skip(&mut self, out: &mut Vec<u8>, notes: &mut Vec<Note>) {
        if let Some((&at, _)) = self.waiting.first_key_value() {
            if at > self.next {
                notes.push(Note::Gap {
                    offset: self.next,
                    missing: at - self.next,
                });
                self.next = at;
            }
            self.drain(out);
        }
    }

    /// The stream ended (or the capture did): every waiting byte goes out,
    /// each hole said.
    pub fn finish(&mut self, out: &mut Vec<u8>, notes: &mut Vec<Note>) {
        while !self.waiting.is_empty() {
            self.skip(out, notes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_early_again_and_overlapping() {
        let mut d = Direction::default();
        let (mut out, mut notes) = (Vec::new(), Vec::new());
        d.segment(999, true, false, b"", &mut out, &mut notes);
        d.segment(1000, false, false, b"GET ", &mut out, &mut notes);
        d.segment(1008, false, false, b"n HTTP", &mut out, &mut notes);
        assert_eq!(out, b"GET ");
        assert_eq!(
            notes,
            [Note::OutOfOrder {
                offset: 8,
                missing: 4
            }]
        );
        d.segment(1004, false, false, b"/joi", &mut out, &mut notes);
        assert_eq!(out, b"GET /join HTTP");
        d.segment(1000, false, false, b"GET ", &mut out, &mut notes);
        d.segment(1010, false, true, b"HTTP/1.1", &mut out, &mut notes);
        assert_eq!(out, b"GET /join HTTP/1.1");
        assert_eq!(notes[1], Note::Retransmission { offset: 0, len: 4 });
        assert_eq!(notes[2], Note::Overlap { offset: 10, old: 4 });
        assert_eq!((d.taken(), d.held(), d.fin_at), (18, 0, Some(18)));
    }

    #[test]
    fn sequence_numbers_wrap_and_holes_are_stepped_over() {
        let mut d = Direction::new(4);
        let (mut out, mut notes) = (Vec::new(), Vec::new());
        // Mid-stream, just below the wrap.
        d.segment(u32::MAX - 1, false, false, b"ab", &mut out, &mut notes);
        d.segment(0, false, false, b"cd", &mut out, &mut notes);
        assert_eq!(out, b"abcd");
        // A lost segment, then more than the bound waits: the hole is
        // given up.
        d.segment(4, false, false, b"gh", &mut out, &mut notes);
        d.segment(6, false, false, b"ijk", &mut out, &mut notes);
        assert_eq!(out, b"abcdghijk");
        assert!(notes.contains(&Note::Gap {
            offset: 4,
            missing: 2
        }));
        // Overlapping by one byte: only the new one.
        d.segment(8, false, false, b"lm", &mut out, &mut notes);
        assert_eq!(out, b"abcdghijkm");
        // A hole at the end of the capture: said, and what follows given.
        let mut end = Vec::new();
        d.segment(11, false, false, b"z", &mut end, &mut notes);
        assert!(end.is_empty());
        d.finish(&mut end, &mut notes);
        assert_eq!(end, b"z");
        assert_eq!(
            notes.last(),
            Some(&Note::Gap {
                offset: 12,
                missing: 1
            })
        );
        assert_eq!(d.held(), 0);
    }
}
