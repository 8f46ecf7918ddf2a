//! Bounded IPv4/IPv6 fragment reassembly.
//!
//! etherparse's `IpDefragPool` has no limits (its documentation says it is not
//! safe against memory exhaustion), so this pool keeps etherparse's
//! per-datagram `IpDefragBuf`s itself: at most `max_reassemblies` datagrams in
//! progress and `max_bytes` of buffered data, the oldest evicted first, and
//! each given up `timeout` of capture time after its first fragment.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use etherparse::defrag::{IpDefragBuf, IpFragRange};
use etherparse::{IpFragOffset, IpNumber};

use super::CaptureStats;

/// Limits of the fragment reassembly pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DefragLimits {
    /// Datagrams reassembled at the same time; the oldest is evicted beyond.
    pub(crate) max_reassemblies: usize,
    /// Bytes buffered across all reassemblies; the oldest are evicted beyond.
    pub(crate) max_bytes: usize,
    /// Capture time after the first fragment at which a reassembly is given up.
    pub(crate) timeout: Duration,
}

impl Default for DefragLimits {
    fn default() -> Self {
        DefragLimits {
            max_reassemblies: 256,
            max_bytes: 8 << 20,
            timeout: Duration::from_secs(30),
        }
    }
}

/// What identifies the fragments of one IP datagram (RFC 791 / RFC 8200).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FragKey {
    pub(crate) src: IpAddr,
    pub(crate) dst: IpAddr,
    pub(crate) id: u32,
    /// IPv4 protocol, or the next header of the IPv6 fragment header.
    pub(crate) protocol: u8,
}

struct Reassembly {
    buf: IpDefragBuf,
    first_seen: Duration,
    /// Arrival order, for evicting the oldest deterministically.
    order: u64,
    fragments: u64,
    bytes: usize,
}

/// How many spare buffers to keep for reuse.
const SPARES: usize = 8;
/// How often (capture time) to look for timed-out reassemblies.
const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

pub(crate) struct DefragPool {
    limits: DefragLimits,
    active: HashMap<FragKey, Reassembly>,
    bytes: usize,
    next_order: u64,
    next_sweep: Duration,
    spare_data: Vec<Vec<u8>>,
    spare_sections: Vec<Vec<IpFragRange>>,
}

impl DefragPool {
    pub(crate) fn new(limits: DefragLimits) -> Self {
        DefragPool {
            limits,
            active: HashMap::new(),
            bytes: 0,
            next_order: 0,
            next_sweep: Duration::ZERO,
            spare_data: Vec::new(),
            spare_sections: Vec::new(),
        }
    }

    #[cfg(test)]
    pub(crate) fn set_limits(&mut self, limits: DefragLimits) {
        self.limits = limits;
    }

    /// Reassemblies in progress.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.active.len()
    }

    /// Adds one fragment; returns the whole IP payload when this fragment
    /// completes it. Give the returned buffer back with [`Self::recycle`].
    pub(crate) fn add(
        &mut self,
        key: FragKey,
        now: Duration,
        offset: IpFragOffset,
        more_fragments: bool,
        payload: &[u8],
        stats: &mut CaptureStats,
    ) -> Option<Vec<u8>> {
        self.expire(now, stats);
        if self.limits.max_reassemblies == 0 {
            stats.fragments_dropped += 1;
            return None;
        }
        if !self.active.contains_key(&key) {
            while self.active.len() >= self.limits.max_reassemblies {
                self.evict_oldest(stats);
            }
            let data = self.spare_data.pop().unwrap_or_default();
            let sections = self.spare_sections.pop().unwrap_or_default();
            let reassembly = Reassembly {
                buf: IpDefragBuf::new(IpNumber(key.protocol), data, sections),
                first_seen: now,
                order: self.next_order,
                fragments: 0,
                bytes: 0,
            };
            self.next_order += 1;
            self.active.insert(key.clone(), reassembly);
        }
        let entry = self.active.get_mut(&key)?;
        if entry.buf.add(offset, more_fragments, payload).is_err() {
            // Unaligned, past 64 KiB, or contradicting an end already seen.
            stats.fragments_dropped += 1;
            if entry.fragments == 0 {
                self.remove(&key, stats);
            }
            return None;
        }
        entry.fragments += 1;
        let bytes = entry.buf.data().len();
        self.bytes = self.bytes.saturating_sub(entry.bytes).saturating_add(bytes);
        entry.bytes = bytes;

        if entry.buf.is_complete() {
            let done = self.active.remove(&key)?;
            self.bytes = self.bytes.saturating_sub(done.bytes);
            stats.fragments_reassembled += done.fragments;
            let (data, sections) = done.buf.take_bufs();
            self.keep_sections(sections);
            return Some(data);
        }
        while self.bytes > self.limits.max_bytes && !self.active.is_empty() {
            self.evict_oldest(stats);
        }
        None
    }

    /// Takes back a buffer returned by [`Self::add`] for reuse.
    pub(crate) fn recycle(&mut self, data: Vec<u8>) {
        if self.spare_data.len() < SPARES {
            self.spare_data.push(data);
        }
    }

    /// Gives up every reassembly still in progress (end of the capture).
    pub(crate) fn finish(&mut self, stats: &mut CaptureStats) {
        while !self.active.is_empty() {
            self.evict_oldest(stats);
        }
    }

    fn expire(&mut self, now: Duration, stats: &mut CaptureStats) {
        if self.active.is_empty() || now < self.next_sweep {
            return;
        }
        self.next_sweep = now.saturating_add(SWEEP_INTERVAL);
        let timeout = self.limits.timeout;
        let expired: Vec<FragKey> = self
            .active
            .iter()
            .filter(|(_, r)| now.saturating_sub(r.first_seen) > timeout)
            .map(|(k, _)| k.clone())
            .collect();
        for key in expired {
            self.remove(&key, stats);
        }
    }

    fn evict_oldest(&mut self, stats: &mut CaptureStats) {
        let oldest = self
            .active
            .iter()
            .min_by_key(|(_, r)| r.order)
            .map(|(k, _)| k.clone());
        if let Some(key) = oldest {
            self.remove(&key, stats);
        }
    }

    fn remove(&mut self, key: &FragKey, stats: &mut CaptureStats) {
        if let Some(gone) = self.active.remove(key) {
            self.bytes = self.bytes.saturating_sub(gone.bytes);
            stats.fragments_dropped += gone.fragments;
            let (data, sections) = gone.buf.take_bufs();
            self.recycle(data);
            self.keep_sections(sections);
        }
    }

    fn keep_sections(&mut self, sections: Vec<IpFragRange>) {
        if self.spare_sections.len() < SPARES {
            self.spare_sections.push(sections);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn key(id: u32) -> FragKey {
        FragKey {
            src: Ipv4Addr::new(10, 0, 0, 1).into(),
            dst: Ipv4Addr::new(10, 0, 0, 2).into(),
            id,
            protocol: 17,
        }
    }

    fn off(bytes: u16) -> IpFragOffset {
        IpFragOffset::try_new(bytes / 8).expect("test offsets are small multiples of 8")
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn reassembles_out_of_order_and_counts() {
        let mut pool = DefragPool::new(DefragLimits::default());
        let mut stats = CaptureStats::default();
        assert_eq!(
            pool.add(key(1), secs(1), off(16), false, &[3; 4], &mut stats),
            None
        );
        assert_eq!(
            pool.add(key(1), secs(1), off(0), true, &[1; 8], &mut stats),
            None
        );
        let whole = pool.add(key(1), secs(1), off(8), true, &[2; 8], &mut stats);
        let mut expected = vec![1; 8];
        expected.extend([2; 8]);
        expected.extend([3; 4]);
        assert_eq!(whole, Some(expected));
        assert_eq!(stats.fragments_reassembled, 3);
        assert_eq!(stats.fragments_dropped, 0);
        assert_eq!(pool.len(), 0);
        assert_eq!(pool.bytes, 0);
    }

    #[test]
    fn evicts_oldest_beyond_max_reassemblies() {
        let limits = DefragLimits {
            max_reassemblies: 2,
            ..DefragLimits::default()
        };
        let mut pool = DefragPool::new(limits);
        let mut stats = CaptureStats::default();
        for id in 0..5 {
            pool.add(key(id), secs(1), off(0), true, &[0; 8], &mut stats);
        }
        assert_eq!(pool.len(), 2);
        assert_eq!(stats.fragments_dropped, 3);
        // The two newest (3 and 4) survive and can complete.
        assert!(pool
            .add(key(4), secs(1), off(8), false, &[1], &mut stats)
            .is_some());
        assert!(pool
            .add(key(3), secs(1), off(8), false, &[1], &mut stats)
            .is_some());
        // 0 was evicted: its last fragment starts a new reassembly that never ends.
        assert!(pool
            .add(key(0), secs(1), off(8), false, &[1], &mut stats)
            .is_none());
        pool.finish(&mut stats);
        assert_eq!(stats.fragments_dropped, 4);
        assert_eq!(stats.fragments_reassembled, 4);
    }

    #[test]
    fn evicts_beyond_max_bytes() {
        let limits = DefragLimits {
            max_bytes: 100,
            ..DefragLimits::default()
        };
        let mut pool = DefragPool::new(limits);
        let mut stats = CaptureStats::default();
        pool.add(key(1), secs(1), off(0), true, &[0; 64], &mut stats);
        pool.add(key(2), secs(1), off(0), true, &[0; 64], &mut stats);
        assert_eq!(pool.len(), 1, "128 bytes > 100: the oldest goes");
        assert_eq!(stats.fragments_dropped, 1);
        assert!(pool.bytes <= 100);
        // A single fragment larger than the whole budget cannot be kept.
        pool.add(key(3), secs(1), off(0), true, &[0; 128], &mut stats);
        assert_eq!(pool.len(), 0);
        assert_eq!(stats.fragments_dropped, 3);
    }

    #[test]
    fn times_out_in_capture_time() {
        let mut pool = DefragPool::new(DefragLimits::default());
        let mut stats = CaptureStats::default();
        pool.add(key(1), secs(100), off(0), true, &[0; 8], &mut stats);
        pool.add(key(2), secs(125), off(0), true, &[0; 8], &mut stats);
        pool.add(key(3), secs(131), off(0), true, &[0; 8], &mut stats);
        assert_eq!(pool.len(), 2, "key 1 is 31 s old");
        assert_eq!(stats.fragments_dropped, 1);
        // Time going backwards (interfaces interleaved) expires nothing.
        pool.add(key(4), secs(5), off(0), true, &[0; 8], &mut stats);
        assert_eq!(pool.len(), 3);
    }

    #[test]
    fn inconsistent_fragments_are_dropped_not_fatal() {
        let mut pool = DefragPool::new(DefragLimits::default());
        let mut stats = CaptureStats::default();
        // Not a multiple of 8 although more fragments follow.
        assert!(pool
            .add(key(1), secs(1), off(0), true, &[0; 5], &mut stats)
            .is_none());
        assert_eq!(pool.len(), 0);
        // Beyond 65535 bytes.
        let far = IpFragOffset::try_new(0x1fff).expect("13-bit offset");
        assert!(pool
            .add(key(2), secs(1), far, false, &[0; 100], &mut stats)
            .is_none());
        // A second end that contradicts the first.
        pool.add(key(3), secs(1), off(8), false, &[0; 8], &mut stats);
        pool.add(key(3), secs(1), off(8), false, &[0; 16], &mut stats);
        assert_eq!(stats.fragments_dropped, 3);
        pool.finish(&mut stats);
        assert_eq!(stats.fragments_dropped, 4);
        assert_eq!(pool.bytes, 0);
    }

    #[test]
    fn zero_reassemblies_drops_everything() {
        let limits = DefragLimits {
            max_reassemblies: 0,
            ..DefragLimits::default()
        };
        let mut pool = DefragPool::new(limits);
        let mut stats = CaptureStats::default();
        assert!(pool
            .add(key(1), secs(1), off(0), true, &[0; 8], &mut stats)
            .is_none());
        assert_eq!(stats.fragments_dropped, 1);
    }
}
