//! 24-bit sequence arithmetic as the original does it, and the window of
//! reliable indexes received (`hasReceivedPacketQueue`).

use std::collections::VecDeque;

/// Datagram numbers, reliable, ordering and sequencing indexes are all `uint24_t`.
pub(super) const MASK24: u32 = 0xff_ffff;
/// `(uint24_t)-1 / 2`, the half range of every 24-bit comparison.
pub(super) const HALF24: u32 = 0x7f_ffff;
/// `OnGotPacket`: a datagram skipping more numbers than this is dropped.
/// `a - b` in 24 bits.
pub(super) fn sub24(a: u32, b: u32) -> u32 {
    a.wrapping_sub(b) & MASK24
}

/// `CCRakNetSlidingWindow::GreaterThan`: `a` is ahead of `b` by 1 to 2^23.
pub(super) fn datagram_newer(a: u32, b: u32) -> bool {
    a != b && sub24(b, a) > HALF24
}

/// `ReliabilityLayer::IsOlderOrderedPacket`, branch for branch: its two
/// halves disagree on whether 2^23 - 1 and 2^23 behind are "older".
pub(super) fn is_older(new: u32, waiting: u32) -> bool {
    if waiting > HALF24 {
        new > waiting - HALF24 && new < waiting
    } else {
        new >= sub24(waiting, HALF24 + 1) || new < waiting
    }
}

/// Why a reliable message was not accepted.
pub(super) enum Reject {
    Duplicate,
    TooFar { hole: u32, base: u32 },
}

/// The original's `hasReceivedPacketQueue`: slot `i` is reliable index
/// `base + i`, `true` while it is a hole. Never longer than the hole bound + 1.
#[derive(Debug)]
pub(super) struct ReliableWindow {
    /// `receivedPacketsBaseIndex`; `None` until the first one when joining mid-stream.
    pub(super) base: Option<u32>,
    pub(super) holes: VecDeque<bool>,
}

impl ReliableWindow {
    pub(super) fn receive(&mut self, ri: u32, max_hole: u32) -> Result<(), Reject> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
