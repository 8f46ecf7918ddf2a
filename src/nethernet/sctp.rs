//! SCTP (RFC 9260) as WebRTC carries it inside DTLS (RFC 8261): a packet
//! is a 12-byte common header (ports, verification tag, CRC-32C checksum)
//! and chunks, each a type, flags, a length and a value padded to 4
//! bytes. The chunks a data channel uses: DATA and I-DATA (RFC 8260: a
//! message id and a fragment sequence number where DATA has a stream
//! sequence number), SACK, INIT/INIT ACK, COOKIE ECHO/ACK, HEARTBEAT,
//! FORWARD-TSN and I-FORWARD-TSN (RFC 3758, 8260: what the unreliable
//! channel abandons), RE-CONFIG, ABORT, SHUTDOWN.

use crate::wire::cursor::{Reader, Result};

/// Chunk types (RFC 9260 §3.2, RFC 8260, RFC 3758, RFC 6525, RFC 4820).
pub mod chunk {
    /// DATA: user data with a stream sequence number.
    pub const DATA: u8 = 0;
    /// INIT: starts an association.
    pub const INIT: u8 = 1;
    /// INIT ACK: answers INIT, with a cookie.
    pub const INIT_ACK: u8 = 2;
    /// SACK: what the receiver has.
    pub const SACK: u8 = 3;
    /// HEARTBEAT: a path check.
    pub const HEARTBEAT: u8 = 4;
    /// HEARTBEAT ACK: its answer.
    pub const HEARTBEAT_ACK: u8 = 5;
    /// ABORT: the association ends at once.
    pub const ABORT: u8 = 6;
    /// SHUTDOWN: the sender has nothing more to send.
    pub const SHUTDOWN: u8 = 7;
    /// SHUTDOWN ACK: its answer.
    pub const SHUTDOWN_ACK: u8 = 8;
    /// ERROR: a reported error cause.
    pub const ERROR: u8 = 9;
    /// COOKIE ECHO: the INIT ACK's cookie sent back.
    pub const COOKIE_ECHO: u8 = 10;
    /// COOKIE ACK: the association is up.
    pub const COOKIE_ACK: u8 = 11;
    /// SHUTDOWN COMPLETE: the association is closed.
    pub const SHUTDOWN_COMPLETE: u8 = 14;
    /// I-DATA (RFC 8260): user data with a message id and a fragment number.
    pub const I_DATA: u8 = 64;
    /// RE-CONFIG (RFC 6525): streams reset (a data channel closes).
    pub const RE_CONFIG: u8 = 130;
    /// PAD (RFC 4820): padding for path MTU probes.
    pub const PAD: u8 = 132;
    /// FORWARD-TSN (RFC 3758): the sender gave up on data up to a TSN.
    pub const FORWARD_TSN: u8 = 192;
    /// I-FORWARD-TSN (RFC 8260): FORWARD-TSN for I-DATA.
    pub const I_FORWARD_TSN: u8 = 194;
}

/// A chunk type's name, as tshark writes it.
pub fn chunk_name(t: u8) -> &'static str {
    match t {
        chunk::DATA => "DATA",
        chunk::INIT => "INIT",
        chunk::INIT_ACK => "INIT_ACK",
        chunk::SACK => "SACK",
        chunk::HEARTBEAT => "HEARTBEAT",
        chunk::HEARTBEAT_ACK => "HEARTBEAT_ACK",
        chunk::ABORT => "ABORT",
        chunk::SHUTDOWN => "SHUTDOWN",
        chunk::SHUTDOWN_ACK => "SHUTDOWN_ACK",
        chunk::ERROR => "ERROR",
        chunk::COOKIE_ECHO => "COOKIE_ECHO",
        chunk::COOKIE_ACK => "COOKIE_ACK",
        chunk::SHUTDOWN_COMPLETE => "SHUTDOWN_COMPLETE",
        chunk::I_DATA => "I_DATA",
        chunk::RE_CONFIG => "RE_CONFIG",
        chunk::PAD => "PAD",
        chunk::FORWARD_TSN => "FORWARD_TSN",
        chunk::I_FORWARD_TSN => "I_FORWARD_TSN",
        _ => "UNKNOWN",
    }
}

/// Payload protocol identifiers of WebRTC data channels (RFC 8831 §8).
pub mod ppid {
    /// DCEP: a channel opens (RFC 8832).
    pub const DCEP: u32 = 50;
    /// A text message.
    pub const STRING: u32 = 51;
    /// A binary message: NetherNet's segments.
    pub const BINARY: u32 = 53;
    /// An empty text message.
    pub const STRING_EMPTY: u32 = 56;
    /// An empty binary message.
    pub const BINARY_EMPTY: u32 = 57;
}

/// Chunks a packet may hold at most: more is malformed rather than a list
/// to grow (a 1,200-byte packet holds at most 75 of 16 bytes).
pub const MAX_CHUNKS: usize = 256;

/// Gap blocks and duplicate TSNs a SACK may list at most that are kept.
pub const MAX_SACK_ENTRIES: usize = 1024;

/// One user-data chunk, DATA or I-DATA, its payload borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Data<'a> {
    /// I-DATA (a message id and a fragment sequence number) rather than
    /// DATA (a stream sequence number).
    pub interleaved: bool,
    /// The U bit: delivered as it completes, not in stream order.
    pub unordered: bool,
    /// The B bit: the first fragment of a message.
    pub beginning: bool,
    /// The E bit: the last fragment.
    pub ending: bool,
    /// The I bit: the sender asks for a SACK at once.
    pub immediate: bool,
    /// Its transmission sequence number, counting the sender's chunks of user data.
    pub tsn: u32,
    /// The stream (data channel) it belongs to.
    pub stream: u16,
    /// DATA: the stream sequence number (16 bits); I-DATA: the message id.
    pub message: u32,
    /// DATA: every fragment's; I-DATA: the first fragment's (the others
    /// carry their FSN there, see `fsn`).
    pub ppid: Option<u32>,
    /// I-DATA's fragment sequence number (0 for the first fragment).
    pub fsn: u32,
    /// This fragment's bytes.
    pub payload: &'a [u8],
}

/// A SACK: what the receiver has, up to and past the cumulative TSN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sack {
    /// The highest TSN received with none missing before it.
    pub cumulative_tsn: u32,
    /// Advertised receiver window, bytes.
    pub a_rwnd: u32,
    /// Gap ack blocks, as offsets from the cumulative TSN (inclusive).
    pub gaps: Vec<(u16, u16)>,
    /// TSNs received more than once since the last SACK.
    pub duplicates: Vec<u32>,
}

/// INIT and INIT ACK's fixed part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Init {
    /// The tag the other side must put in its packets.
    pub initiate_tag: u32,
    /// The sender's receive window, bytes.
    pub a_rwnd: u32,
    /// Streams the sender may send on.
    pub outbound_streams: u16,
    /// Streams the sender accepts.
    pub inbound_streams: u16,
    /// The TSN of the sender's first chunk of user data.
    pub initial_tsn: u32,
}

/// FORWARD-TSN and I-FORWARD-TSN: the sender abandoned everything up to
/// `new_cumulative_tsn`; for each stream, the last sequence number (or
/// message id) skipped, and for I-FORWARD-TSN whether it was unordered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardTsn {
    /// Every TSN up to this one is done with.
    pub new_cumulative_tsn: u32,
    /// For each stream it skips: the stream, the last sequence number (or message id) skipped, and for I-FORWARD-TSN whether that was unordered.
    pub streams: Vec<(u16, u32, bool)>,
}

/// A chunk, decoded where this module knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body<'a> {
    /// DATA or I-DATA.
    Data(Data<'a>),
    /// SACK.
    Sack(Sack),
    /// INIT or INIT ACK.
    Init(Init),
    /// FORWARD-TSN or I-FORWARD-TSN.
    ForwardTsn(ForwardTsn),
    /// SHUTDOWN: the cumulative TSN the sender has.
    Shutdown(u32),
    /// Any other chunk: its value.
    Other(&'a [u8]),
}

/// One chunk of a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk<'a> {
    /// Offset of the chunk's type byte in the packet.
    pub at: usize,
    /// The chunk type ([`chunk`]).
    pub kind: u8,
    /// Its flags (for user data: the U, B and E bits).
    pub flags: u8,
    /// What it holds.
    pub body: Body<'a>,
}

/// An SCTP packet, borrowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<'a> {
    /// The sender's SCTP port (5000 in WebRTC).
    pub src_port: u16,
    /// The receiver's SCTP port.
    pub dst_port: u16,
    /// The tag the receiver chose in its INIT.
    pub verification_tag: u32,
    /// The checksum as sent (CRC-32C, least significant byte first).
    pub checksum: u32,
    /// The chunks, in order.
    pub chunks: Vec<Chunk<'a>>,
}

/// The CRC-32C of a packet with its checksum field taken as zero, as the
/// field holds it (RFC 9260 Appendix A).
pub fn checksum(packet: &[u8]) -> u32 {
    let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);
    let mut d = crc.digest();
    d.update(packet.get(..8).unwrap_or(packet));
    if packet.len() >= 12 {
        d.update(&[0; 4]);
        d.update(&packet[12..]);
    }
    d.finalize()
}

impl<'a> Packet<'a> {
    /// The packet `b` (a decrypted DTLS record's payload).
    pub fn parse(b: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(b);
        let src_port = r.u16_be("SCTP source port")?;
        let dst_port = r.u16_be("SCTP destination port")?;
        let verification_tag = r.u32_be("SCTP verification tag")?;
        let c = r.raw(4, "SCTP checksum")?;
        let checksum = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        let mut chunks = Vec::new();
        while r.remaining() > 0 {
            if chunks.len() == MAX_CHUNKS {
                return Err(r.invalid("SCTP chunk", format!("more than {MAX_CHUNKS} in a packet")));
            }
            let at = r.offset();
            let kind = r.u8("SCTP chunk type")?;
            let flags = r.u8("SCTP chunk flags")?;
            let len = usize::from(r.u16_be("SCTP chunk length")?);
            if len < 4 {
                return Err(Reader::invalid_at(
                    at + 2,
                    "SCTP chunk length",
                    format!("{len}, less than its 4-byte header"),
                ));
            }
            let value = r.raw(len - 4, "SCTP chunk value")?;
            // The last chunk's padding may be left off.
            let pad = (4 - len % 4) % 4;
            r.raw(pad.min(r.remaining()), "SCTP chunk padding")?;
            let body = body(kind, flags, value, at + 4)?;
            chunks.push(Chunk {
                at,
                kind,
                flags,
                body,
            });
        }
        Ok(Packet {
            src_port,
            dst_port,
            verification_tag,
            checksum,
            chunks,
        })
    }
}

/// Whether a packet's checksum field holds its CRC-32C.
pub fn checksum_ok(packet: &[u8]) -> bool {
    packet.len() >= 12
        && u32::from_le_bytes([packet[8], packet[9], packet[10], packet[11]]) == checksum(packet)
}

fn body(kind: u8, flags: u8, value: &[u8], base: usize) -> Result<Body<'_>> {
    let mut r = Reader::with_base(value, base);
    Ok(match kind {
        chunk::DATA | chunk::I_DATA => {
            let interleaved = kind == chunk::I_DATA;
            let tsn = r.u32_be("TSN")?;
            let stream = r.u16_be("stream identifier")?;
            let (message, ppid, fsn) = if interleaved {
                r.u16_be("reserved")?;
                let mid = r.u32_be("message identifier")?;
                let x = r.u32_be("PPID or fragment sequence number")?;
                if flags & 0b10 != 0 {
                    (mid, Some(x), 0)
                } else {
                    (mid, None, x)
                }
            } else {
                let ssn = r.u16_be("stream sequence number")?;
                (
                    u32::from(ssn),
                    Some(r.u32_be("payload protocol identifier")?),
                    0,
                )
            };
            Body::Data(Data {
                interleaved,
                unordered: flags & 0b100 != 0,
                beginning: flags & 0b10 != 0,
                ending: flags & 0b1 != 0,
                immediate: flags & 0b1000 != 0,
                tsn,
                stream,
                message,
                ppid,
                fsn,
                payload: r.rest_bytes("user data"),
            })
        }
        chunk::SACK => {
            let cumulative_tsn = r.u32_be("cumulative TSN ack")?;
            let a_rwnd = r.u32_be("advertised receiver window")?;
            let n_gaps = usize::from(r.u16_be("number of gap ack blocks")?);
            let n_dups = usize::from(r.u16_be("number of duplicate TSNs")?);
            let mut gaps = Vec::with_capacity(n_gaps.min(MAX_SACK_ENTRIES));
            for i in 0..n_gaps {
                let start = r.u16_be("gap ack block start")?;
                let end = r.u16_be("gap ack block end")?;
                if i < MAX_SACK_ENTRIES {
                    gaps.push((start, end));
                }
            }
            let mut duplicates = Vec::with_capacity(n_dups.min(MAX_SACK_ENTRIES));
            for i in 0..n_dups {
                let tsn = r.u32_be("duplicate TSN")?;
                if i < MAX_SACK_ENTRIES {
                    duplicates.push(tsn);
                }
            }
            Body::Sack(Sack {
                cumulative_tsn,
                a_rwnd,
                gaps,
                duplicates,
            })
        }
        chunk::INIT | chunk::INIT_ACK => Body::Init(Init {
            initiate_tag: r.u32_be("initiate tag")?,
            a_rwnd: r.u32_be("advertised receiver window")?,
            outbound_streams: r.u16_be("number of outbound streams")?,
            inbound_streams: r.u16_be("number of inbound streams")?,
            initial_tsn: r.u32_be("initial TSN")?,
        }),
        chunk::FORWARD_TSN | chunk::I_FORWARD_TSN => {
            let new_cumulative_tsn = r.u32_be("new cumulative TSN")?;
            let mut streams = Vec::new();
            while r.remaining() > 0 && streams.len() < MAX_SACK_ENTRIES {
                let stream = r.u16_be("stream")?;
                if kind == chunk::I_FORWARD_TSN {
                    let f = r.u16_be("flags")?;
                    let mid = r.u32_be("message identifier")?;
                    streams.push((stream, mid, f & 1 != 0));
                } else {
                    let ssn = r.u16_be("stream sequence")?;
                    streams.push((stream, u32::from(ssn), false));
                }
            }
            Body::ForwardTsn(ForwardTsn {
                new_cumulative_tsn,
                streams,
            })
        }
        chunk::SHUTDOWN => Body::Shutdown(r.u32_be("cumulative TSN ack")?),
        _ => Body::Other(value),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_is_the_iscsi_crc() {
        // RFC 3720 B.4: 32 bytes of zeros give aa36918a (as bytes on the
        // wire, least significant first: 8a 91 36 aa).
        let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);
        assert_eq!(crc.checksum(&[0u8; 32]), 0x8a9136aa);
        assert_eq!(crc.checksum(&[0xffu8; 32]), 0x62a8ab43);
    }

    fn packet(chunks: &[u8]) -> Vec<u8> {
        let mut p = vec![0x13, 0x88, 0x13, 0x88, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0];
        p.extend(chunks);
        let c = checksum(&p);
        p[8..12].copy_from_slice(&c.to_le_bytes());
        p
    }

    #[test]
    fn data_sack_and_forward_tsn() {
        let mut c = Vec::new();
        // DATA, B and E, stream 1, SSN 7, PPID 53, 3 bytes (padded).
        c.extend([
            0, 0b011, 0, 19, 0, 0, 0, 10, 0, 1, 0, 7, 0, 0, 0, 53, 0xaa, 0xbb, 0xcc, 0,
        ]);
        // I-DATA, unordered, middle fragment FSN 2 of MID 4.
        c.extend([
            64, 0b100, 0, 21, 0, 0, 0, 11, 0, 3, 0, 0, 0, 0, 0, 4, 0, 0, 0, 2, 0x55, 0, 0, 0,
        ]);
        // SACK: cum 9, one gap 2..3, one duplicate 8.
        c.extend([
            3, 0, 0, 24, 0, 0, 0, 9, 0, 1, 0, 0, 0, 1, 0, 1, 0, 2, 0, 3, 0, 0, 0, 8,
        ]);
        // I-FORWARD-TSN: to 12, stream 3 unordered MID 4.
        c.extend([194, 0, 0, 16, 0, 0, 0, 12, 0, 3, 0, 1, 0, 0, 0, 4]);
        let p = packet(&c);
        assert!(checksum_ok(&p));
        let pk = Packet::parse(&p).unwrap();
        assert_eq!(
            (pk.src_port, pk.dst_port, pk.verification_tag),
            (5000, 5000, 0xdeadbeef)
        );
        assert_eq!(pk.chunks.len(), 4);
        let Body::Data(d) = &pk.chunks[0].body else {
            panic!()
        };
        assert_eq!(
            (d.tsn, d.stream, d.message, d.ppid, d.payload),
            (10, 1, 7, Some(53), &[0xaa, 0xbb, 0xcc][..])
        );
        assert!(d.beginning && d.ending && !d.unordered && !d.interleaved);
        let Body::Data(d) = &pk.chunks[1].body else {
            panic!()
        };
        assert!(d.interleaved && d.unordered && !d.beginning);
        assert_eq!(
            (d.tsn, d.stream, d.message, d.ppid, d.fsn),
            (11, 3, 4, None, 2)
        );
        assert_eq!(
            pk.chunks[2].body,
            Body::Sack(Sack {
                cumulative_tsn: 9,
                a_rwnd: 0x10000,
                gaps: vec![(2, 3)],
                duplicates: vec![8]
            })
        );
        assert_eq!(
            pk.chunks[3].body,
            Body::ForwardTsn(ForwardTsn {
                new_cumulative_tsn: 12,
                streams: vec![(3, 4, true)]
            })
        );
        let mut bad = p.clone();
        bad[20] ^= 1;
        assert!(!checksum_ok(&bad));
        for n in 0..p.len() {
            let _ = Packet::parse(&p[..n]);
        }
        // A chunk length under its header.
        assert!(Packet::parse(&packet(&[0, 0, 0, 2])).is_err());
    }
}
