//! The framing of one 0xFE message (docs/bedrock-protocol.md §1-2): the compression of
//! each generation, and the records of a batch: `varuint32 length` then a
//! game packet, whose `varuint32` header holds the packet id (10 bits) and
//! the sub-client ids. Stateless; every size a peer controls is bounded.

use std::fmt;

/// Decompressed bytes of one batch at most (gophertunnel's listener default).
pub(crate) const MAX_DECOMPRESSED: usize = 16 << 20;
/// Game packets in one batch at most (gophertunnel allows 812, forks 1600).
pub(crate) const MAX_PACKETS_PER_BATCH: usize = 4096;

/// How a batch body is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed (before NetworkSettings, or the 0xFF algorithm byte).
    None,
    /// Raw DEFLATE (RFC 1951): RakNet 10 on, algorithm 0.
    Deflate,
    /// zlib-wrapped DEFLATE (RFC 1950): RakNet 9 and older.
    Zlib,
    /// Raw Snappy blocks: algorithm 1.
    Snappy,
}

impl Compression {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Deflate => "deflate",
            Compression::Zlib => "zlib",
            Compression::Snappy => "snappy",
        }
    }

    /// The algorithm byte of 1.20.60 on (and NetworkSettings' u16).
    pub(crate) fn from_algorithm(a: u16) -> Option<Compression> {
        match a {
            0 => Some(Compression::Deflate),
            1 => Some(Compression::Snappy),
            0xff | 0xffff => Some(Compression::None),
            _ => None,
        }
    }
}

/// Why a batch does not give packets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BatchError {
    /// The body does not decompress (or would pass [`MAX_DECOMPRESSED`]).
    Decompress(String),
    /// The records do not add up: a length past the end, an empty packet,
    /// too many packets, an unknown algorithm byte.
    Malformed(String),
}

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BatchError::Decompress(e) | BatchError::Malformed(e) => f.write_str(e),
        }
    }
}

/// A `varuint32` at `*pos`, moving past it; `None` when cut short or
/// longer than 5 bytes.
pub(crate) fn read_varu32(b: &[u8], pos: &mut usize) -> Option<u32> {
    let mut v: u32 = 0;
    for i in 0..5 {
        let byte = *b.get(*pos)?;
        *pos += 1;
        v |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// `v` as a `varuint32`, appended to `out`.
pub(crate) fn write_varu32(out: &mut Vec<u8>, mut v: u32) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// `data` decompressed with `c`, at most `limit` bytes.
pub(crate) fn decompress(c: Compression, data: &[u8], limit: usize) -> Result<Vec<u8>, BatchError> {
    let too_big = || BatchError::Decompress(format!("decompresses to more than {limit} bytes"));
    match c {
        Compression::None => Ok(data.to_vec()),
        Compression::Snappy => {
            let n = snap::raw::decompress_len(data)
                .map_err(|e| BatchError::Decompress(format!("snappy: {e}")))?;
            if n > limit {
                return Err(too_big());
            }
            snap::raw::Decoder::new()
                .decompress_vec(data)
                .map_err(|e| BatchError::Decompress(format!("snappy: {e}")))
        }
        Compression::Deflate | Compression::Zlib => inflate(c == Compression::Zlib, data, limit),
    }
}

thread_local! {
    /// One inflate state per thread and wrapping, reset for each batch: a
    /// new one costs its window and tables (a quarter of the time of a
    /// small batch).
    static INFLATERS: std::cell::RefCell<[Option<flate2::Decompress>; 2]> =
        const { std::cell::RefCell::new([None, None]) };
}

/// DEFLATE (`zlib`: with the RFC 1950 wrapper) to its end, at most
/// `limit` bytes out; a stream cut short is an error, as it is to zlib
/// and Go's flate, which the peers use.
fn inflate(zlib: bool, data: &[u8], limit: usize) -> Result<Vec<u8>, BatchError> {
    use flate2::{Decompress, FlushDecompress, Status};
    let name = if zlib { "zlib" } else { "deflate" };
    INFLATERS.with(|cell| {
        let mut slots = cell.borrow_mut();
        let d = slots[usize::from(zlib)].get_or_insert_with(|| Decompress::new(zlib));
        d.reset(zlib);
        // One byte past the limit tells a bomb from a batch at the limit.
        let cap = limit.saturating_add(1);
        let mut out = Vec::with_capacity(data.len().saturating_mul(4).max(256).min(cap));
        loop {
            let consumed = d.total_in() as usize;
            let before = out.len();
            let status = d
                .decompress_vec(&data[consumed..], &mut out, FlushDecompress::Finish)
                .map_err(|e| BatchError::Decompress(format!("{name}: {e}")))?;
            if out.len() > limit {
                return Err(BatchError::Decompress(format!(
                    "decompresses to more than {limit} bytes"
                )));
            }
            if status == Status::StreamEnd {
                return Ok(out);
            }
            if out.len() == out.capacity() {
                let more = out.len().min(cap - out.len()).max(1);
                out.reserve_exact(more);
            } else if out.len() == before && d.total_in() as usize == consumed {
                return Err(BatchError::Decompress(format!(
                    "{name}: the stream ends before its last block"
                )));
            }
        }
    })
}

/// The records of a decompressed batch: each packet's bytes (header
/// included), in order.
pub(crate) fn split(body: &[u8]) -> Result<Vec<&[u8]>, BatchError> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < body.len() {
        let at = pos;
        let len = read_varu32(body, &mut pos)
            .ok_or_else(|| BatchError::Malformed(format!("record length cut short at byte {at}")))?
            as usize;
        if len == 0 {
            return Err(BatchError::Malformed(format!("empty packet at byte {at}")));
        }
        let end = pos
            .checked_add(len)
            .filter(|&e| e <= body.len())
            .ok_or_else(|| {
                BatchError::Malformed(format!(
                    "record at byte {at} claims {len} bytes, {} remain",
                    body.len() - pos
                ))
            })?;
        if out.len() == MAX_PACKETS_PER_BATCH {
            return Err(BatchError::Malformed(format!(
                "more than {MAX_PACKETS_PER_BATCH} packets in one batch"
            )));
        }
        out.push(&body[pos..end]);
        pos = end;
    }
    Ok(out)
}

/// A game packet's header (docs/bedrock-protocol.md §1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The packet id, 10 bits.
    pub(crate) id: u16,
    /// Sender and target sub-client ids (split screen; normally 0).
    pub(crate) sender: u8,
    pub(crate) target: u8,
    /// Bytes the header took.
    pub(crate) len: usize,
}

impl Header {
    /// The header at the start of a packet's bytes.
    pub(crate) fn parse(packet: &[u8]) -> Option<Header> {
        let mut pos = 0;
        let v = read_varu32(packet, &mut pos)?;
        Some(Header {
            id: (v & 0x3ff) as u16,
            sender: ((v >> 10) & 3) as u8,
            target: ((v >> 12) & 3) as u8,
            len: pos,
        })
    }
}

/// Records `packets` as one uncompressed batch body (for tests and peers).
pub(crate) fn join(packets: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in packets {
        write_varu32(&mut out, p.len() as u32);
        out.extend_from_slice(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    fn deflate(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn varints_round_trip_and_refuse_six_bytes() {
        for v in [0, 1, 127, 128, 300, 0x3fff, u32::MAX] {
            let mut b = Vec::new();
            write_varu32(&mut b, v);
            let mut pos = 0;
            assert_eq!(read_varu32(&b, &mut pos), Some(v));
            assert_eq!(pos, b.len());
        }
        assert_eq!(read_varu32(&[0x80, 0x80], &mut 0), None);
        assert_eq!(read_varu32(&[0xff; 6], &mut 0), None);
    }

    #[test]
    fn headers_carry_ten_bits_of_id_and_the_sub_clients() {
        // 0xc1 = 193, request_network_settings: two varint bytes.
        let h = Header::parse(&[0xc1, 0x01, 0, 0, 2, 0x3a]).unwrap();
        assert_eq!((h.id, h.sender, h.target, h.len), (193, 0, 0, 2));
        // id 9 from sub-client 1 to 2: 9 | 1 << 10 | 2 << 12.
        let mut b = Vec::new();
        write_varu32(&mut b, 9 | 1 << 10 | 2 << 12);
        let h = Header::parse(&b).unwrap();
        assert_eq!((h.id, h.sender, h.target), (9, 1, 2));
    }

    #[test]
    fn each_compression_decompresses() {
        let body = join(&[&[0x09, 1, 2, 3], &[0x05, 0]]);
        assert_eq!(
            decompress(Compression::Deflate, &deflate(&body), 1 << 20).unwrap(),
            body
        );
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&body).unwrap();
        let z = z.finish().unwrap();
        assert_eq!(decompress(Compression::Zlib, &z, 1 << 20).unwrap(), body);
        let s = snap::raw::Encoder::new().compress_vec(&body).unwrap();
        assert_eq!(decompress(Compression::Snappy, &s, 1 << 20).unwrap(), body);
        assert_eq!(
            split(&body).unwrap(),
            [&[0x09, 1, 2, 3][..], &[0x05, 0][..]]
        );
        assert!(decompress(Compression::Deflate, &[0xff, 0xff], 1 << 20).is_err());
        // Cut short: an error, not the bytes so far.
        let long = deflate(&[7u8; 5000].repeat(3));
        let e = decompress(Compression::Deflate, &long[..long.len() - 2], 1 << 20).unwrap_err();
        assert!(e.to_string().contains("ends before"), "{e}");
        // The state is reused: the next batch is whole again.
        assert_eq!(
            decompress(Compression::Deflate, &long, 1 << 20).unwrap(),
            [7u8; 5000].repeat(3)
        );
    }

    #[test]
    fn bombs_and_forged_lengths_are_refused_without_allocating_the_lie() {
        let zeros = vec![0u8; 2 << 20];
        let bomb = deflate(&zeros);
        assert!(bomb.len() < 10_000);
        let e = decompress(Compression::Deflate, &bomb, 1 << 20).unwrap_err();
        assert!(e.to_string().contains("more than"), "{e}");
        assert_eq!(
            decompress(Compression::Deflate, &bomb, 2 << 20)
                .unwrap()
                .len(),
            2 << 20
        );
        // A snappy header claiming 4 GiB.
        let forged = [0xff, 0xff, 0xff, 0xff, 0x0f, 0];
        assert!(decompress(Compression::Snappy, &forged, 1 << 20).is_err());
        // A record longer than the batch; an empty record; too many.
        assert!(split(&[0x05, 1]).is_err());
        assert!(split(&[0x00]).is_err());
        assert!(split(&[0xff, 0xff, 0xff, 0xff, 0x0f, 1]).is_err());
        let many = [1u8, 0x09].repeat(MAX_PACKETS_PER_BATCH + 1);
        assert!(split(&many).unwrap_err().to_string().contains("more than"));
    }

    proptest! {
        #[test]
        fn framing_round_trips(packets in proptest::collection::vec(
            proptest::collection::vec(any::<u8>(), 1..300), 0..20)
        ) {
            let refs: Vec<&[u8]> = packets.iter().map(Vec::as_slice).collect();
            let body = join(&refs);
            let back = split(&body).unwrap();
            prop_assert_eq!(back, refs.clone());
            let d = decompress(Compression::Deflate, &deflate(&body), MAX_DECOMPRESSED).unwrap();
            prop_assert_eq!(d, body);
        }

        #[test]
        fn any_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = split(&b);
            for c in [Compression::Deflate, Compression::Zlib, Compression::Snappy] {
                let _ = decompress(c, &b, 1 << 16);
            }
            let _ = Header::parse(&b);
        }
    }
}
