//! Connected datagrams: the header flags (docs/wire-format.md §4), ACK/NACK range
//! lists (§5) and the capsules a data datagram carries (§6).
//!
//! Decoding is lax where a dissector needs it: [`Datagram::parse_lax`]
//! returns the capsules or ranges decoded before an error along with the
//! error, so a packet can be shown as far as it goes.

use std::fmt;

use super::cursor::{Reader, Result, WireError, WriteExt};

pub(crate) const FLAG_VALID: u8 = 0x80;
pub(crate) const FLAG_ACK: u8 = 0x40;
pub(crate) const FLAG_NACK: u8 = 0x20;
/// In an ACK, bit 5 says the `AS` float follows (CCRakNetUDT builds only).
pub(crate) const FLAG_ACK_HAS_B_AND_AS: u8 = 0x20;
pub(crate) const FLAG_PACKET_PAIR: u8 = 0x10;
pub(crate) const FLAG_CONTINUOUS_SEND: u8 = 0x08;
pub(crate) const FLAG_NEEDS_B_AND_AS: u8 = 0x04;

/// Ordering channels the original accepts (`NUMBER_OF_ORDERED_STREAMS`).
pub(crate) const ORDERING_CHANNELS: u8 = 32;

/// A reliability as it travels in the top three bits of a capsule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reliability(pub(crate) u8);

impl Reliability {
    /// 0: no index, may be lost or reordered.
    pub const UNRELIABLE: Self = Reliability(0);
    /// 1: a sequence and an ordering index; older arrivals are dropped.
    pub const UNRELIABLE_SEQUENCED: Self = Reliability(1);
    /// 2: resent until acknowledged, delivered as it arrives.
    pub const RELIABLE: Self = Reliability(2);
    /// 3: resent until acknowledged, delivered in order on its channel.
    pub const RELIABLE_ORDERED: Self = Reliability(3);
    /// 4: resent until acknowledged; older arrivals are dropped.
    pub const RELIABLE_SEQUENCED: Self = Reliability(4);
    /// 5: UNRELIABLE with a local receipt (sent as 0).
    pub const UNRELIABLE_WITH_ACK_RECEIPT: Self = Reliability(5);
    /// 6: RELIABLE with a local receipt (sent as 2).
    pub const RELIABLE_WITH_ACK_RECEIPT: Self = Reliability(6);
    /// 7: RELIABLE_ORDERED with a local receipt (sent as 3).
    pub const RELIABLE_ORDERED_WITH_ACK_RECEIPT: Self = Reliability(7);

    pub(crate) fn name(self) -> &'static str {
        match self.0 {
            0 => "UNRELIABLE",
            1 => "UNRELIABLE_SEQUENCED",
            2 => "RELIABLE",
            3 => "RELIABLE_ORDERED",
            4 => "RELIABLE_SEQUENCED",
            5 => "UNRELIABLE_WITH_ACK_RECEIPT",
            6 => "RELIABLE_WITH_ACK_RECEIPT",
            7 => "RELIABLE_ORDERED_WITH_ACK_RECEIPT",
            _ => "INVALID",
        }
    }

    /// A reliability by its name in any case, with `-` for `_`
    /// (`reliable-ordered`), or by its number, 0 to 7.
    pub fn parse(s: &str) -> std::result::Result<Self, String> {
        if let Ok(n) = s.parse::<u8>() {
            return (n < 8)
                .then_some(Reliability(n))
                .ok_or_else(|| format!("{s:?}: a reliability is 0 to 7"));
        }
        let wanted = s.to_ascii_uppercase().replace('-', "_");
        (0..8)
            .map(Reliability)
            .find(|r| r.name() == wanted)
            .ok_or_else(|| {
                format!(
                    "{s:?} is not a reliability: unreliable, unreliable-sequenced, reliable, \
                     reliable-ordered, reliable-sequenced, unreliable-with-ack-receipt, \
                     reliable-with-ack-receipt, reliable-ordered-with-ack-receipt, or 0 to 7"
                )
            })
    }

    /// Carries a `reliableMessageNumber` on the wire (the decoder's rule: 2, 3, 4).
    pub(crate) fn has_reliable_index(self) -> bool {
        matches!(self.0, 2..=4)
    }

    /// Carries a `sequencingIndex` (1, 4).
    pub(crate) fn is_sequenced(self) -> bool {
        matches!(self.0, 1 | 4)
    }

    /// Carries an `orderingIndex` and channel (1, 3, 4, and 7 as the original decodes it).
    pub(crate) fn has_ordering(self) -> bool {
        matches!(self.0, 1 | 3 | 4 | 7)
    }

    /// 5 to 7 are local: the original rewrites them to 0, 2, 3 before sending.
    pub(crate) fn is_ack_receipt(self) -> bool {
        matches!(self.0, 5..=7)
    }
}

impl fmt::Display for Reliability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The split header of a fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    /// Fragments in the message (u32 big-endian).
    pub count: u32,
    /// The message's split id, shared by its fragments (u16 big-endian).
    pub id: u16,
    /// This fragment's place, from 0 (u32 big-endian).
    pub index: u32,
}

/// One message (or fragment) inside a data datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capsule<'a> {
    /// The top three bits of the flags byte.
    pub reliability: Reliability,
    /// `reliableMessageNumber` (24 bits), for reliabilities 2 to 4.
    pub reliable_index: Option<u32>,
    /// `sequencingIndex` (24 bits), for reliabilities 1 and 4.
    pub sequence_index: Option<u32>,
    /// `orderingIndex` (24 bits), for reliabilities 1, 3, 4 and 7.
    pub order_index: Option<u32>,
    /// Ordering channel, 0 to 31, with the ordering index.
    pub channel: Option<u8>,
    /// The split header, when the message is a fragment.
    pub split: Option<Split>,
    /// `dataBitLength`; the payload is `ceil(bit_length / 8)` bytes.
    pub bit_length: u16,
    /// The message (or fragment) bytes.
    pub payload: &'a [u8],
}

impl<'a> Capsule<'a> {
    /// Decode one capsule. The original rejects reliability >= 8 (impossible
    /// in 3 bits), a zero length, a channel >= 32 and a split index >= count.
    pub fn parse(r: &mut Reader<'a>) -> Result<Self> {
        if !r.is_tracing() {
            if let Some((c, len)) = Self::parse_fast(r.rest()) {
                r.raw(len, "capsule")?;
                return Ok(c);
            }
        }
        Self::parse_checked(r)
    }

    /// The common case without the per-field bookkeeping: a well-formed
    /// capsule wholly present. `None` sends the caller to the checked path,
    /// which names what is wrong.
    fn parse_fast(b: &'a [u8]) -> Option<(Self, usize)> {
        let u24 = |at: usize| -> Option<u32> {
            let x = b.get(at..at + 3)?;
            Some(u32::from_le_bytes([x[0], x[1], x[2], 0]))
        };
        let be32 = |at: usize| -> Option<u32> {
            let x = b.get(at..at + 4)?;
            Some(u32::from_be_bytes([x[0], x[1], x[2], x[3]]))
        };
        let flags = *b.first()?;
        let reliability = Reliability(flags >> 5);
        let bit_length = u16::from_be_bytes([*b.get(1)?, *b.get(2)?]);
        if bit_length == 0 {
            return None;
        }
        let mut at = 3;
        let reliable_index = if reliability.has_reliable_index() {
            at += 3;
            Some(u24(at - 3)?)
        } else {
            None
        };
        let sequence_index = if reliability.is_sequenced() {
            at += 3;
            Some(u24(at - 3)?)
        } else {
            None
        };
        let (order_index, channel) = if reliability.has_ordering() {
            let oi = u24(at)?;
            let ch = *b.get(at + 3)?;
            at += 4;
            if ch >= ORDERING_CHANNELS {
                return None;
            }
            (Some(oi), Some(ch))
        } else {
            (None, None)
        };
        let split = if flags & 0x10 != 0 {
            let count = be32(at)?;
            let id = u16::from_be_bytes([*b.get(at + 4)?, *b.get(at + 5)?]);
            let index = be32(at + 6)?;
            at += 10;
            if index >= count {
                return None;
            }
            Some(Split { count, id, index })
        } else {
            None
        };
        let end = at + (bit_length as usize).div_ceil(8);
        let payload = b.get(at..end)?;
        let c = Capsule {
            reliability,
            reliable_index,
            sequence_index,
            order_index,
            channel,
            split,
            bit_length,
            payload,
        };
        Some((c, end))
    }

    fn parse_checked(r: &mut Reader<'a>) -> Result<Self> {
        let start = r.offset();
        let flags = r.u8("capsule flags")?;
        let reliability = Reliability(flags >> 5);
        let has_split = flags & 0x10 != 0;
        r.describe(|| format!("{flags:#04x}"));
        r.record_at("reliability", start, 1, || {
            format!("{} {}", reliability.0, reliability.name())
        });
        r.record_at("has split", start, 1, || has_split.to_string());
        let bit_length = r.u16_be("length in bits")?;
        if bit_length == 0 {
            return Err(Reader::invalid_at(start + 1, "length in bits", "zero"));
        }
        let reliable_index = if reliability.has_reliable_index() {
            Some(r.u24_le("reliable index")?)
        } else {
            None
        };
        let sequence_index = if reliability.is_sequenced() {
            Some(r.u24_le("sequence index")?)
        } else {
            None
        };
        let (order_index, channel) = if reliability.has_ordering() {
            let oi = r.u24_le("order index")?;
            let at = r.offset();
            let ch = r.u8("order channel")?;
            if ch >= ORDERING_CHANNELS {
                return Err(Reader::invalid_at(
                    at,
                    "order channel",
                    format!("{ch}, at most {}", ORDERING_CHANNELS - 1),
                ));
            }
            (Some(oi), Some(ch))
        } else {
            (None, None)
        };
        let split = if has_split {
            let at = r.offset();
            let count = r.u32_be("split count")?;
            let id = r.u16_be("split id")?;
            let index = r.u32_be("split index")?;
            if index >= count {
                return Err(Reader::invalid_at(
                    at + 6,
                    "split index",
                    format!("{index} not below split count {count}"),
                ));
            }
            Some(Split { count, id, index })
        } else {
            None
        };
        let len = (bit_length as usize).div_ceil(8);
        let payload = r.bytes(len, "payload")?;
        Ok(Capsule {
            reliability,
            reliable_index,
            sequence_index,
            order_index,
            channel,
            split,
            bit_length,
            payload,
        })
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        let split_bit = if self.split.is_some() { 0x10 } else { 0 };
        out.put_u8((self.reliability.0 << 5) | split_bit);
        out.put_u16_be(self.bit_length);
        if self.reliability.has_reliable_index() {
            out.put_u24_le(self.reliable_index.unwrap_or(0));
        }
        if self.reliability.is_sequenced() {
            out.put_u24_le(self.sequence_index.unwrap_or(0));
        }
        if self.reliability.has_ordering() {
            out.put_u24_le(self.order_index.unwrap_or(0));
            out.put_u8(self.channel.unwrap_or(0));
        }
        if let Some(s) = self.split {
            out.put_u32_be(s.count);
            out.put_u16_be(s.id);
            out.put_u32_be(s.index);
        }
        out.extend_from_slice(self.payload);
    }

    /// The message id: the first payload byte, for a whole message or a first fragment.
    pub(crate) fn message_id(&self) -> Option<u8> {
        match self.split {
            Some(s) if s.index != 0 => None,
            _ => self.payload.first().copied(),
        }
    }

    /// Header bytes this capsule takes before its payload.
    pub(crate) fn header_len(&self) -> usize {
        let mut n = 3;
        if self.reliability.has_reliable_index() {
            n += 3;
        }
        if self.reliability.is_sequenced() {
            n += 3;
        }
        if self.reliability.has_ordering() {
            n += 4;
        }
        if self.split.is_some() {
            n += 10;
        }
        n
    }
}

/// One ACK/NACK record: a single number when `min == max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckRange {
    /// First datagram number (24 bits).
    pub min: u32,
    /// Last datagram number, included.
    pub max: u32,
}

/// An ACK or a NACK.
#[derive(Debug, Clone, PartialEq)]
pub struct AckList {
    /// The first byte, as received (valid and ACK or NACK bits).
    pub flags: u8,
    /// The `AS` float of CCRakNetUDT builds (ACK flag 0x20); absent by default.
    pub arrival_rate: Option<f32>,
    /// The datagram numbers acknowledged (or not), in the order sent.
    pub ranges: Vec<AckRange>,
}

/// Lists that `Datagram::parse_lax_in` fills instead of allocating: the
/// ones of an earlier datagram, handed back.
#[derive(Debug, Default)]
pub struct Spare<'a> {
    pub(crate) capsules: Vec<Capsule<'a>>,
    pub(crate) ranges: Vec<AckRange>,
}

impl Spare<'_> {
    /// The lists of a datagram done with, emptied, for the next one.
    pub(crate) fn keep(&mut self, d: Datagram<'_>) {
        match d {
            Datagram::Data(d) => self.capsules = relabel(d.capsules),
            Datagram::Ack(l) | Datagram::Nack(l) => {
                self.ranges = l.ranges;
                self.ranges.clear();
            }
        }
    }

    /// The lists for a datagram borrowing from `'b`.
    pub(crate) fn take<'b>(&mut self) -> Spare<'b> {
        Spare {
            capsules: relabel(std::mem::take(&mut self.capsules)),
            ranges: std::mem::take(&mut self.ranges),
        }
    }
}

/// `v` emptied, as a list of capsules of another lifetime, keeping its
/// buffer: collecting an emptied vector's iterator reuses the allocation
/// (in-place iteration; when it does not, this is a new empty vector).
// `filter` would keep the element type; the point is to change its lifetime.
#[allow(clippy::unnecessary_filter_map)]
fn relabel<'b>(mut v: Vec<Capsule<'_>>) -> Vec<Capsule<'b>> {
    v.clear();
    v.into_iter().filter_map(|_| None).collect()
}

/// A data datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataDatagram<'a> {
    /// The first byte: valid, packet pair, continuous send, needs B and AS.
    pub flags: u8,
    /// `datagramNumber`, 24 bits.
    pub seq: u32,
    /// The messages and fragments, in order.
    pub capsules: Vec<Capsule<'a>>,
}

/// A connected datagram: data, or an acknowledgement list.
#[derive(Debug, Clone, PartialEq)]
pub enum Datagram<'a> {
    /// Valid bit alone: a datagram number and capsules.
    Data(DataDatagram<'a>),
    /// Valid and ACK bits: datagrams received.
    Ack(AckList),
    /// Valid and NACK bits: datagrams missed.
    Nack(AckList),
}

/// The result of a lax parse: what could be decoded, and the error that stopped it.
#[derive(Debug, Clone, PartialEq)]
pub struct Lax<T> {
    /// What was decoded, `None` when not even the header was.
    pub value: Option<T>,
    /// The error that stopped decoding, `None` when it reached the end.
    pub error: Option<WireError>,
}

fn flag_names(flags: u8, ack: bool) -> String {
    let mut names = vec!["valid"];
    if ack {
        names.push("ack");
        if flags & FLAG_ACK_HAS_B_AND_AS != 0 {
            names.push("has B and AS");
        }
    } else if flags & FLAG_NACK != 0 {
        names.push("nack");
    } else {
        if flags & FLAG_PACKET_PAIR != 0 {
            names.push("packet pair");
        }
        if flags & FLAG_CONTINUOUS_SEND != 0 {
            names.push("continuous send");
        }
        if flags & FLAG_NEEDS_B_AND_AS != 0 {
            names.push("needs B and AS");
        }
    }
    format!("{flags:#04x} ({})", names.join(", "))
}

fn parse_ranges(r: &mut Reader<'_>, ranges: &mut Vec<AckRange>) -> Result<()> {
    let count = r.u16_be("range count")?;
    for _ in 0..count {
        let at = r.offset();
        let single = r.u8("min equals max")? != 0;
        let min = r.u24_le("range min")?;
        let max = if single { min } else { r.u24_le("range max")? };
        if max < min {
            return Err(Reader::invalid_at(
                at,
                "range max",
                format!("{max} below min {min}"),
            ));
        }
        ranges.push(AckRange { min, max });
    }
    Ok(())
}

impl<'a> Datagram<'a> {
    /// Decode a datagram, keeping what was decoded before an error.
    pub fn parse_lax(r: &mut Reader<'a>) -> Lax<Self> {
        Self::parse_lax_in(r, Spare::default())
    }

    /// [`parse_lax`](Self::parse_lax), filling the lists of `spare` (emptied
    /// first) instead of allocating new ones.
    pub(crate) fn parse_lax_in(r: &mut Reader<'a>, spare: Spare<'a>) -> Lax<Self> {
        let Spare {
            mut capsules,
            mut ranges,
        } = spare;
        capsules.clear();
        ranges.clear();
        let flags = match r.u8("datagram flags") {
            Ok(f) => f,
            Err(e) => {
                return Lax {
                    value: None,
                    error: Some(e),
                }
            }
        };
        if flags & FLAG_VALID == 0 {
            return Lax {
                value: None,
                error: Some(Reader::invalid_at(
                    r.offset() - 1,
                    "datagram flags",
                    "valid bit clear",
                )),
            };
        }
        let is_ack = flags & FLAG_ACK != 0;
        let is_nack = !is_ack && flags & FLAG_NACK != 0;
        r.describe(|| flag_names(flags, is_ack));
        if is_ack || is_nack {
            let mut list = AckList {
                flags,
                arrival_rate: None,
                ranges,
            };
            let mut error = None;
            if is_ack && flags & FLAG_ACK_HAS_B_AND_AS != 0 {
                match r.u32_be("arrival rate (AS)") {
                    Ok(bits) => list.arrival_rate = Some(f32::from_bits(bits)),
                    Err(e) => error = Some(e),
                }
            }
            if error.is_none() {
                r.open("ranges", String::new);
                error = parse_ranges(r, &mut list.ranges).err();
                r.close();
            }
            if error.is_none() && r.remaining() > 0 {
                error = Some(r.invalid("trailing bytes", format!("{} bytes", r.remaining())));
            }
            let value = if is_ack {
                Datagram::Ack(list)
            } else {
                Datagram::Nack(list)
            };
            return Lax {
                value: Some(value),
                error,
            };
        }
        let seq = match r.u24_le("datagram number") {
            Ok(s) => s,
            Err(e) => {
                return Lax {
                    value: None,
                    error: Some(e),
                }
            }
        };
        capsules.reserve(4);
        let mut error = None;
        // Trailing zero padding decodes to a zero-length capsule, which ends
        // the chain in the original; anything else must be a whole capsule.
        while r.remaining() > 0 {
            if r.rest().iter().all(|&b| b == 0) {
                r.rest_bytes("padding");
                break;
            }
            let n = capsules.len() + 1;
            r.open("capsule", || n.to_string());
            let c = Capsule::parse(r);
            r.close();
            match c {
                Ok(c) => capsules.push(c),
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        if error.is_none() && capsules.is_empty() {
            error = Some(r.invalid("capsule flags", "no capsule"));
        }
        Lax {
            value: Some(Datagram::Data(DataDatagram {
                flags,
                seq,
                capsules,
            })),
            error,
        }
    }

    /// Decode a whole datagram strictly.
    pub fn parse(r: &mut Reader<'a>) -> Result<Self> {
        let lax = Self::parse_lax(r);
        match (lax.value, lax.error) {
            (Some(v), None) => Ok(v),
            (_, Some(e)) => Err(e),
            (None, None) => Err(r.invalid("datagram flags", "nothing decoded")),
        }
    }

    /// Append the datagram's bytes to `out` (at most 65,535 ranges in a list).
    pub fn emit(&self, out: &mut Vec<u8>) {
        match self {
            Datagram::Data(d) => {
                out.put_u8(d.flags | FLAG_VALID);
                out.put_u24_le(d.seq);
                for c in &d.capsules {
                    c.emit(out);
                }
            }
            Datagram::Ack(l) | Datagram::Nack(l) => {
                let kind = if matches!(self, Datagram::Ack(_)) {
                    FLAG_ACK
                } else {
                    FLAG_NACK
                };
                let mut flags = FLAG_VALID | kind;
                if kind == FLAG_ACK && l.arrival_rate.is_some() {
                    flags |= FLAG_ACK_HAS_B_AND_AS;
                }
                out.put_u8(flags);
                if let (FLAG_ACK, Some(a)) = (kind, l.arrival_rate) {
                    out.put_u32_be(a.to_bits());
                }
                out.put_u16_be(l.ranges.len().min(u16::MAX as usize) as u16);
                for range in l.ranges.iter().take(u16::MAX as usize) {
                    if range.min == range.max {
                        out.put_u8(1);
                        out.put_u24_le(range.min);
                    } else {
                        out.put_u8(0);
                        out.put_u24_le(range.min);
                        out.put_u24_le(range.max);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reliabilities_parse_by_name_or_number() {
        assert_eq!(Reliability::parse("reliable-ordered"), Ok(Reliability(3)));
        assert_eq!(Reliability::parse("RELIABLE_SEQUENCED"), Ok(Reliability(4)));
        assert_eq!(Reliability::parse("7"), Ok(Reliability(7)));
        assert!(Reliability::parse("8").is_err());
        assert!(Reliability::parse("sometimes").is_err());
    }

    #[test]
    fn ack_sample_from_the_original() {
        // docs/wire-format.md §5: ACK for {1},{3..5}
        let bytes = [0xc0, 0, 2, 1, 1, 0, 0, 0, 3, 0, 0, 5, 0, 0];
        let d = Datagram::parse(&mut Reader::new(&bytes)).unwrap();
        let Datagram::Ack(l) = &d else {
            panic!("not an ACK: {d:?}")
        };
        assert_eq!(
            l.ranges,
            [AckRange { min: 1, max: 1 }, AckRange { min: 3, max: 5 }]
        );
        let mut out = Vec::new();
        d.emit(&mut out);
        assert_eq!(out, bytes);
    }

    #[test]
    fn nack_round_trips() {
        let d = Datagram::Nack(AckList {
            flags: 0xa0,
            arrival_rate: None,
            ranges: vec![AckRange { min: 5, max: 5 }],
        });
        let mut out = Vec::new();
        d.emit(&mut out);
        assert_eq!(out, [0xa0, 0, 1, 1, 5, 0, 0]);
        assert_eq!(Datagram::parse(&mut Reader::new(&out)).unwrap(), d);
    }

    #[test]
    fn spare_lists_are_reused_and_emptied() {
        // Three capsules, then an ACK: each parse fills the lists the last
        // datagram handed back, whatever the lifetime of its bytes.
        let mut spare = Spare::default();
        let mut data = vec![0x84, 0, 0, 0];
        for _ in 0..3 {
            data.extend_from_slice(&[0x00, 0x00, 0x08, 0x86]);
        }
        let d = Datagram::parse_lax_in(&mut Reader::new(&data), spare.take()).value;
        let Some(Datagram::Data(dd)) = &d else {
            panic!("{d:?}")
        };
        assert_eq!(dd.capsules.len(), 3);
        let (ptr, cap) = (dd.capsules.as_ptr() as usize, dd.capsules.capacity());
        spare.keep(d.expect("decoded"));
        assert!(spare.capsules.is_empty() && spare.capsules.capacity() == cap);
        {
            let short = vec![0x84, 1, 0, 0, 0x00, 0x00, 0x08, 0x87];
            let d = Datagram::parse_lax_in(&mut Reader::new(&short), spare.take()).value;
            let Some(Datagram::Data(dd)) = &d else {
                panic!("{d:?}")
            };
            assert_eq!(dd.capsules.len(), 1, "emptied before it is filled");
            assert_eq!(dd.capsules.as_ptr() as usize, ptr, "the same buffer");
            spare.keep(d.expect("decoded"));
        }
        let ack = [0xc0, 0, 2, 1, 1, 0, 0, 0, 3, 0, 0, 5, 0, 0];
        let d = Datagram::parse_lax_in(&mut Reader::new(&ack), spare.take()).value;
        spare.keep(d.expect("decoded"));
        let d = Datagram::parse_lax_in(&mut Reader::new(&[0xc0, 0, 1, 1, 9, 0, 0]), spare.take());
        let Some(Datagram::Ack(l)) = d.value else {
            panic!("not an ACK")
        };
        assert_eq!(l.ranges, [AckRange { min: 9, max: 9 }]);
        assert!(l.ranges.capacity() >= 2, "the list of the earlier ACK");
    }

    #[test]
    fn header_sample() {
        // 8c 03 02 01 = continuous send + needs B and AS, number 0x010203
        let mut bytes = vec![0x8c, 0x03, 0x02, 0x01];
        bytes.extend_from_slice(&[0x00, 0x00, 0x08, 0x86]);
        let d = Datagram::parse(&mut Reader::new(&bytes)).unwrap();
        let Datagram::Data(d) = d else { panic!() };
        assert_eq!(d.seq, 0x010203);
        assert_eq!(d.capsules[0].payload, &[0x86]);
    }

    #[test]
    fn capsule_samples() {
        // §6: UNRELIABLE_SEQUENCED with seq 7, order index 2, channel 0, payload fe
        let bytes = [0x20, 0x00, 0x08, 0x07, 0, 0, 0x02, 0, 0, 0x00, 0xfe];
        let c = Capsule::parse(&mut Reader::new(&bytes)).unwrap();
        assert_eq!(c.reliability, Reliability::UNRELIABLE_SEQUENCED);
        assert_eq!(
            (c.sequence_index, c.order_index, c.channel),
            (Some(7), Some(2), Some(0))
        );
        let mut out = Vec::new();
        c.emit(&mut out);
        assert_eq!(out, bytes);
        // 70 03 20 = RELIABLE_ORDERED + split, 800 bits
        let mut r = Reader::new(&[0x70, 0x03, 0x20]);
        assert_eq!(r.u8("f").unwrap() >> 5, 3);
    }

    #[test]
    fn fast_and_checked_paths_agree() {
        let samples: [&[u8]; 4] = [
            &[0x20, 0x00, 0x08, 0x07, 0, 0, 0x02, 0, 0, 0x00, 0xfe],
            &[
                0x70, 0x00, 0x10, 1, 0, 0, 2, 0, 0, 3, 0, 0, 0, 4, 0, 9, 0, 0, 0, 1, 0xaa, 0xbb,
            ],
            &[0x40, 0x00, 0x09, 5, 0, 0, 0x86, 0x01],
            &[0x00, 0x00, 0x08, 0x86, 0xff],
        ];
        for b in samples {
            let fast = Capsule::parse_fast(b);
            let mut r = Reader::new(b).traced();
            let checked = Capsule::parse(&mut r).unwrap();
            let (c, n) = fast.expect("fast path takes a well-formed capsule");
            assert_eq!((c, n), (checked, r.pos()));
        }
    }

    #[test]
    fn split_index_must_be_below_count() {
        let mut bytes = vec![0x50, 0x00, 0x08, 1, 0, 0];
        bytes.extend_from_slice(&[0, 0, 0, 2, 0, 7, 0, 0, 0, 2, 0x86]);
        let e = Capsule::parse(&mut Reader::with_base(&bytes, 4)).unwrap_err();
        assert_eq!((e.field, e.offset), ("split index", 16));
    }

    #[test]
    fn channel_32_is_rejected() {
        let bytes = [0x60, 0x00, 0x08, 0, 0, 0, 0, 0, 0, 32, 0x86];
        let e = Capsule::parse(&mut Reader::new(&bytes)).unwrap_err();
        assert_eq!((e.field, e.offset), ("order channel", 9));
    }

    #[test]
    fn lax_parse_keeps_capsules_before_an_error() {
        let mut bytes = vec![0x84, 0, 0, 0];
        bytes.extend_from_slice(&[0x00, 0x00, 0x08, 0x86]);
        bytes.extend_from_slice(&[0x40, 0x00, 0x40, 1, 0, 0, 0xaa]);
        let lax = Datagram::parse_lax(&mut Reader::new(&bytes));
        let Some(Datagram::Data(d)) = lax.value else {
            panic!()
        };
        assert_eq!(d.capsules.len(), 1);
        let e = lax.error.unwrap();
        assert_eq!((e.field, e.offset), ("payload", 14));
        assert!(e.is_too_short());
    }

    #[test]
    fn zero_padding_ends_the_capsule_chain() {
        let bytes = [0x84, 0, 0, 0, 0x00, 0x00, 0x08, 0x86, 0, 0, 0, 0, 0];
        let d = Datagram::parse(&mut Reader::new(&bytes)).unwrap();
        let Datagram::Data(d) = d else { panic!() };
        assert_eq!(d.capsules.len(), 1);
    }
}
