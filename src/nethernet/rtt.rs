//! Round-trip times from SCTP's SACKs, as the capture saw them: a DATA
//! chunk's first sending, then the first SACK from the other side whose
//! cumulative TSN covers it. Karn's rule: a TSN sent more than once gives
//! no sample (which sending the SACK answered is unknown). Sans-IO, fed the
//! chunks each datagram showed with its capture time.

use std::collections::BTreeMap;
use std::time::Duration;

use super::association::ChunkSeen;
use super::sctp::chunk;

/// TSNs in flight kept at most per side (the oldest let go past it).
pub const MAX_IN_FLIGHT: usize = 4096;

/// Samples kept for the median at most (counted past it).
pub const MAX_SAMPLES: usize = 4096;

/// One association's RTT samples.
#[derive(Debug, Default, Clone)]
pub struct SctpRtt {
    /// By sending side (0: the conversation's first sender): each TSN in
    /// flight, when first sent and whether sent again since.
    in_flight: [BTreeMap<u32, (Duration, bool)>; 2],
    samples: Vec<f64>,
    count: usize,
    min: f64,
    max: f64,
}

/// Whether TSN `a` comes at or before `b`, in serial arithmetic.
fn at_or_before(a: u32, b: u32) -> bool {
    b.wrapping_sub(a) < 1 << 31
}

impl SctpRtt {
    /// The chunks of a datagram `side` sent at `ts`; the sample its
    /// SACK gave, if any (milliseconds).
    pub fn chunks(&mut self, side: usize, ts: Duration, chunks: &[ChunkSeen]) -> Option<f64> {
        let mut sample = None;
        for c in chunks {
            match (c.kind, c.tsn, c.cumulative_tsn) {
                (chunk::DATA | chunk::I_DATA, Some(tsn), _) => self.data(side, tsn, ts),
                (chunk::SACK, _, Some(cum)) => sample = self.sack(side, cum, ts).or(sample),
                _ => {}
            }
        }
        sample
    }

    fn data(&mut self, side: usize, tsn: u32, ts: Duration) {
        let flight = &mut self.in_flight[side & 1];
        match flight.get_mut(&tsn) {
            Some(sent) => sent.1 = true,
            None => {
                if flight.len() >= MAX_IN_FLIGHT {
                    flight.pop_first();
                }
                flight.insert(tsn, (ts, false));
            }
        }
    }

    /// A SACK `side` sent: it acknowledges the other side's DATA.
    fn sack(&mut self, side: usize, cum: u32, ts: Duration) -> Option<f64> {
        let flight = &mut self.in_flight[(side & 1) ^ 1];
        // The latest TSN it newly covers: its first sending, unless resent.
        let mut newest: Option<(u32, Duration, bool)> = None;
        flight.retain(|&tsn, &mut (sent, again)| {
            if !at_or_before(tsn, cum) {
                return true;
            }
            if newest.is_none_or(|(n, _, _)| at_or_before(n, tsn)) {
                newest = Some((tsn, sent, again));
            }
            false
        });
        if let Some((_, sent, false)) = newest {
            let ms = ts.saturating_sub(sent).as_secs_f64() * 1e3;
            if self.count == 0 {
                (self.min, self.max) = (ms, ms);
            }
            (self.min, self.max) = (self.min.min(ms), self.max.max(ms));
            self.count += 1;
            if self.samples.len() < MAX_SAMPLES {
                self.samples.push(ms);
            }
            return Some(ms);
        }
        None
    }

    /// `(min, median, max, samples)` in milliseconds, once there is one;
    /// the median of the first [`MAX_SAMPLES`].
    pub fn summary(&self) -> Option<(f64, f64, f64, usize)> {
        if self.count == 0 {
            return None;
        }
        let mut v = self.samples.clone();
        let mid = v.len() / 2;
        let (_, median, _) = v.select_nth_unstable_by(mid, |a, b| a.total_cmp(b));
        Some((self.min, *median, self.max, self.count))
    }

    /// TSNs held in flight (for the memory budget).
    pub fn held(&self) -> usize {
        self.in_flight.iter().map(BTreeMap::len).sum::<usize>() * 24 + self.samples.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(tsn: u32) -> ChunkSeen {
        ChunkSeen {
            kind: chunk::DATA,
            tsn: Some(tsn),
            ..ChunkSeen::default()
        }
    }

    fn sack(cum: u32) -> ChunkSeen {
        ChunkSeen {
            kind: chunk::SACK,
            cumulative_tsn: Some(cum),
            ..ChunkSeen::default()
        }
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_sack_times_the_newest_tsn_it_covers_unless_resent() {
        let mut r = SctpRtt::default();
        r.chunks(0, Duration::ZERO, &[data(10), data(11)]);
        r.chunks(1, MS * 5, &[sack(11)]);
        assert_eq!(r.summary(), Some((5.0, 5.0, 5.0, 1)));
        // 12 sent twice: its SACK gives no sample.
        r.chunks(0, MS * 10, &[data(12)]);
        r.chunks(0, MS * 30, &[data(12)]);
        r.chunks(1, MS * 31, &[sack(12)]);
        assert_eq!(r.summary().unwrap().3, 1);
        // Wrapping TSNs; a SACK that covers nothing new gives nothing.
        r.chunks(0, MS * 40, &[data(u32::MAX), data(0)]);
        r.chunks(1, MS * 42, &[sack(0), sack(0)]);
        // The median of an even count: the upper one, as RakNet flows take it.
        assert_eq!(r.summary(), Some((2.0, 5.0, 5.0, 2)));
        // The other direction on its own.
        r.chunks(1, MS * 50, &[data(7)]);
        r.chunks(0, MS * 58, &[sack(7)]);
        assert_eq!(r.summary(), Some((2.0, 5.0, 8.0, 3)));
    }

    #[test]
    fn in_flight_is_bounded() {
        let mut r = SctpRtt::default();
        for t in 0..(MAX_IN_FLIGHT as u32 + 10) {
            r.chunks(0, MS, &[data(t)]);
        }
        assert_eq!(r.in_flight[0].len(), MAX_IN_FLIGHT);
    }
}
