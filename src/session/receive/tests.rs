//! The receive half, datagram by datagram, against the original's rules.

use super::window::{sub24, MASK24};
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
            keep_only: None,
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

/// `keep_only`: the bytes of messages with that id (and of split
/// messages, whatever their id), the others delivered empty.
#[test]
fn keep_only_copies_the_messages_of_one_id() {
    let mut rx = Rx::new(ReceiveConfig {
        keep_only: Some(0xfe),
        ..ReceiveConfig::default()
    });
    let ev = rx.send(&[
        ordered(0, 0, 0, &[0xfe, 1, 2]),
        ordered(1, 1, 0, &[0x86, 3]),
    ]);
    assert_eq!(data(&ev), [&[0xfe, 1, 2][..], &[][..]]);
    let ev = rx.send(&[part(ordered(2, 2, 0, &[0x86, 4]), 2, 7, 0)]);
    assert!(data(&ev).is_empty());
    let ev = rx.send(&[part(ordered(3, 2, 0, &[5]), 2, 7, 1)]);
    assert_eq!(data(&ev), [&[0x86, 4, 5][..]]);
}
