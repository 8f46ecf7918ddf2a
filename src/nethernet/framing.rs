//! NetherNet's framing inside a data channel message: one byte, the
//! number of segments still to come after this one (0 for a whole message
//! or the last segment; the first segment of a split message carries the
//! highest), then the segment's bytes. Only the reliable channel splits;
//! the reassembled message is a Bedrock batch without its 0xFE byte.

/// `message` cut into data channel messages of at most `max` bytes each
/// (the framing byte included; at least 2), each starting with the count
/// of those still to come; `None` when it would take more than 256.
pub fn segments(message: &[u8], max: usize) -> Option<Vec<Vec<u8>>> {
    let room = max.max(2) - 1;
    let n = message.len().div_ceil(room).max(1);
    if n > 256 {
        return None;
    }
    let mut out = Vec::with_capacity(n);
    let mut chunks = message.chunks(room);
    for left in (0..n).rev() {
        let mut seg = Vec::with_capacity(room + 1);
        seg.push(left as u8);
        seg.extend_from_slice(chunks.next().unwrap_or_default());
        out.push(seg);
    }
    Some(out)
}

/// What a segment made of the message being reassembled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The message is whole: every segment's bytes, in order.
    Whole(Vec<u8>),
    /// More segments are to come.
    Partial,
    /// The segment does not follow the one before (its count is not one
    /// less), or is empty, or the message grew past the bound: what was
    /// being reassembled is dropped, and the segment starts anew when it
    /// can.
    Broken(&'static str),
}

/// The reassembly of one channel's segments, in delivery order.
#[derive(Debug, Default)]
pub struct Reassembler {
    buf: Vec<u8>,
    /// Segments still expected after the last one taken, when a message
    /// is under way.
    expect: Option<u8>,
    /// A message's bytes at most.
    limit: usize,
}

/// A reassembled message's bytes at most by default: a batch can be a
/// few megabytes (a level chunk's worth), and 255 segments of the largest
/// data channel message (256 KiB) are 64 MiB, which a peer must not make
/// us hold.
pub const DEFAULT_LIMIT: usize = 16 << 20;

impl Reassembler {
    /// A reassembler that holds at most `limit` bytes of one message.
    pub fn new(limit: usize) -> Self {
        Reassembler {
            buf: Vec::new(),
            expect: None,
            limit,
        }
    }

    /// Bytes held for the message under way.
    pub fn held(&self) -> usize {
        self.buf.len()
    }

    /// Take one data channel message.
    pub fn push(&mut self, segment: &[u8]) -> Step {
        let Some((&left, bytes)) = segment.split_first() else {
            self.reset();
            return Step::Broken("an empty message, without its segment count");
        };
        let mut broken = None;
        if let Some(e) = self.expect {
            if left != e {
                self.reset();
                broken = Some("a segment count that does not follow the one before");
            }
        }
        if self.buf.len() + bytes.len() > self.limit {
            self.reset();
            return Step::Broken("a message past the reassembly bound");
        }
        self.buf.extend_from_slice(bytes);
        if let Some(why) = broken {
            // The segment starts a message of its own when it can.
            if left == 0 {
                self.buf.clear();
                return Step::Broken(why);
            }
            self.expect = Some(left - 1);
            return Step::Broken(why);
        }
        if left == 0 {
            self.expect = None;
            return Step::Whole(std::mem::take(&mut self.buf));
        }
        self.expect = Some(left - 1);
        Step::Partial
    }

    fn reset(&mut self) {
        self.buf.clear();
        self.expect = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_reassemble_to_the_message() {
        let message: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        for max in [2, 3, 100, 999, 1001, 262_144] {
            let Some(segs) = segments(&message, max) else {
                assert!(message.len().div_ceil(max - 1) > 256, "{max}");
                continue;
            };
            assert!(segs.iter().all(|s| s.len() <= max));
            let mut r = Reassembler::new(DEFAULT_LIMIT);
            let steps: Vec<Step> = segs.iter().map(|s| r.push(s)).collect();
            assert_eq!(steps.last(), Some(&Step::Whole(message.clone())), "{max}");
        }
        assert_eq!(segments(&[], 10), Some(vec![vec![0]]));
        assert_eq!(segments(&message, 4).map(|s| s.len()), None);
    }

    #[test]
    fn segments_count_down() {
        let mut r = Reassembler::new(DEFAULT_LIMIT);
        assert_eq!(r.push(&[0, 1, 2]), Step::Whole(vec![1, 2]));
        assert_eq!(r.push(&[2, 1]), Step::Partial);
        assert_eq!(r.push(&[1, 2]), Step::Partial);
        assert_eq!(r.held(), 2);
        assert_eq!(r.push(&[0, 3]), Step::Whole(vec![1, 2, 3]));
        // A lost middle segment: the message is dropped.
        assert_eq!(r.push(&[2, 1]), Step::Partial);
        assert!(matches!(r.push(&[0, 3]), Step::Broken(_)));
        assert_eq!(r.held(), 0);
        assert_eq!(r.push(&[0, 9]), Step::Whole(vec![9]));
        assert!(matches!(r.push(&[]), Step::Broken(_)));
        let mut small = Reassembler::new(3);
        assert_eq!(small.push(&[1, 1, 2]), Step::Partial);
        assert!(matches!(small.push(&[0, 3, 4]), Step::Broken(_)));
        assert_eq!(small.held(), 0);
    }
}
