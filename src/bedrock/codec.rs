//! One endpoint's batch framing, both ways, as a Bedrock client or server
//! does it (docs/bedrock-protocol.md §1-3): packets joined with their lengths,
//! compressed as the generation and NetworkSettings say (DEFLATE always
//! before 1.19.30; after NetworkSettings from 1.19.30, above the
//! threshold, with the algorithm byte from 1.20.60), encrypted with a
//! checksum once the key is set, behind the 0xFE id.

use super::batch::{self, BatchError, Compression, MAX_DECOMPRESSED};
use super::crypto::{Decryptor, Encryptor, Mode};

/// 1.19.30: compression negotiated by RequestNetworkSettings.
pub(crate) const NEGOTIATED_FROM: u32 = 554;
/// 1.20.60: the algorithm byte.
pub(crate) const PREFIXED_FROM: u32 = 649;
/// 1.16.220 (431): AES-CTR; CFB8 before (docs/bedrock-protocol.md §3.2: 429 on).
pub(crate) const CTR_FROM: u32 = 429;

/// Why a batch could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CodecError {
    NotABatch,
    /// The checksum of an encrypted batch does not verify.
    Checksum,
    Batch(BatchError),
}

impl std::fmt::Display for CodecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CodecError::NotABatch => write!(f, "not a 0xFE batch"),
            CodecError::Checksum => write!(f, "the checksum does not verify"),
            CodecError::Batch(e) => write!(f, "{e}"),
        }
    }
}

/// A message's body (decrypted, still compressed) and its packets.
type Opened<'m> = (std::borrow::Cow<'m, [u8]>, Vec<Vec<u8>>);

/// The framing state of one connection at one end.
#[derive(Clone)]
pub struct Codec {
    pub(crate) protocol: u32,
    /// Compression and threshold once NetworkSettings went by.
    settings: Option<(Compression, usize)>,
    enc: Option<Encryptor>,
    dec: Option<Decryptor>,
    /// NetherNet's batches: no 0xFE before them (and no Bedrock
    /// encryption: the server goes on after Login without a handshake).
    nethernet: bool,
}

impl Codec {
    pub(crate) fn new(protocol: u32) -> Self {
        Codec {
            protocol,
            settings: None,
            enc: None,
            dec: None,
            nethernet: false,
        }
    }

    /// Batches as NetherNet carries them: without the 0xFE byte.
    pub(crate) fn set_nethernet(&mut self) {
        self.nethernet = true;
    }

    fn legacy(&self) -> bool {
        self.protocol < NEGOTIATED_FROM
    }

    /// NetworkSettings: compression from the next batch each way.
    pub(crate) fn set_compression(&mut self, c: Compression, threshold: usize) {
        self.settings = Some((c, threshold));
    }

    /// The key from the handshake: both ways encrypted from now on.
    pub(crate) fn set_key(&mut self, key: [u8; 32]) {
        let mode = if self.protocol >= CTR_FROM {
            Mode::Ctr
        } else {
            Mode::Cfb8
        };
        self.enc = Some(Encryptor::new(key, mode));
        self.dec = Some(Decryptor::new(key, mode));
    }

    pub(crate) fn encrypted(&self) -> bool {
        self.enc.is_some()
    }

    /// `packets` (each with its header) as one 0xFE message.
    pub fn encode(&mut self, packets: &[Vec<u8>]) -> Vec<u8> {
        let refs: Vec<&[u8]> = packets.iter().map(Vec::as_slice).collect();
        let body = batch::join(&refs);
        let body = if self.legacy() {
            compress(Compression::Deflate, &body)
        } else {
            match self.settings {
                None => body,
                Some((c, threshold)) => {
                    let squeeze = c != Compression::None && body.len() >= threshold;
                    let data = if squeeze { compress(c, &body) } else { body };
                    if self.protocol >= PREFIXED_FROM {
                        let a = match (squeeze, c) {
                            (true, Compression::Snappy) => 1,
                            (true, _) => 0,
                            (false, _) => 0xff,
                        };
                        let mut out = Vec::with_capacity(data.len() + 1);
                        out.push(a);
                        out.extend(data);
                        out
                    } else {
                        data
                    }
                }
            }
        };
        self.seal_body(&body)
    }

    /// A 0xFE message's packets, each with its header.
    pub(crate) fn decode(&mut self, message: &[u8]) -> Result<Vec<Vec<u8>>, CodecError> {
        self.open(message).map(|(_, packets)| packets)
    }

    /// The body of `body` (decrypted, as [`Self::decode_body`] gives it)
    /// as a message: encrypted if the key is set, behind 0xFE unless over
    /// NetherNet. A proxy hands a batch on this way, its compression as it
    /// came.
    pub(crate) fn seal_body(&mut self, body: &[u8]) -> Vec<u8> {
        let body = match &mut self.enc {
            Some(e) => e.seal(body),
            None => body.to_vec(),
        };
        if self.nethernet {
            return body;
        }
        let mut out = Vec::with_capacity(body.len() + 1);
        out.push(0xfe);
        out.extend(body);
        out
    }

    /// [`Self::decode`], with the message's body decrypted but still
    /// compressed (its algorithm byte included).
    pub(crate) fn decode_body(
        &mut self,
        message: &[u8],
    ) -> Result<(Vec<u8>, Vec<Vec<u8>>), CodecError> {
        self.open(message)
            .map(|(body, packets)| (body.into_owned(), packets))
    }

    /// The body (decrypted, still compressed; borrowed from `message`
    /// when it was not encrypted) and the packets of a message.
    fn open<'m>(&mut self, message: &'m [u8]) -> Result<Opened<'m>, CodecError> {
        use std::borrow::Cow;
        let body = match message.split_first() {
            _ if self.nethernet => message,
            Some((&0xfe, body)) => body,
            _ => return Err(CodecError::NotABatch),
        };
        let opened: Cow<'m, [u8]> = match &mut self.dec {
            Some(d) => Cow::Owned(d.decrypt(body).ok_or(CodecError::Checksum)?),
            None => Cow::Borrowed(body),
        };
        let body = &opened[..];
        let raw_if_whole = |body: &[u8], r: Result<Vec<u8>, BatchError>| match r {
            Err(_) if batch::split(body).is_ok_and(|p| !p.is_empty()) => Ok(body.to_vec()),
            r => r,
        };
        let data = if self.legacy() {
            raw_if_whole(
                body,
                batch::decompress(Compression::Deflate, body, MAX_DECOMPRESSED),
            )
        } else {
            match self.settings {
                None => Ok(body.to_vec()),
                Some(_) if self.protocol >= PREFIXED_FROM => match body.split_first() {
                    Some((&a, rest)) => match Compression::from_algorithm(u16::from(a)) {
                        Some(c) => batch::decompress(c, rest, MAX_DECOMPRESSED),
                        None => Err(BatchError::Malformed(format!("compression algorithm {a}"))),
                    },
                    None => Err(BatchError::Malformed("an empty batch".into())),
                },
                Some((c, _)) => raw_if_whole(body, batch::decompress(c, body, MAX_DECOMPRESSED)),
            }
        }
        .map_err(CodecError::Batch)?;
        let records = batch::split(&data).map_err(CodecError::Batch)?;
        let packets = records.into_iter().map(<[u8]>::to_vec).collect();
        Ok((opened, packets))
    }
}

fn compress(c: Compression, data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    match c {
        Compression::Snappy => snap::raw::Encoder::new()
            .compress_vec(data)
            .unwrap_or_else(|_| data.to_vec()),
        Compression::Zlib => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            let _ = e.write_all(data);
            e.finish().unwrap_or_default()
        }
        _ => {
            let mut e =
                flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            let _ = e.write_all(data);
            e.finish().unwrap_or_default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(protocol: u32) -> (Codec, Codec) {
        (Codec::new(protocol), Codec::new(protocol))
    }

    #[test]
    fn every_generation_round_trips() {
        let big = vec![7u8; 2000];
        let packets = vec![vec![0x09, 1, 2, 3], big.clone()];
        for protocol in [422, 527, 560, 630, 649, 2169] {
            for c in [Compression::Deflate, Compression::Snappy] {
                let (mut a, mut b) = pair(protocol);
                // Before NetworkSettings.
                assert_eq!(
                    b.decode(&a.encode(&packets)).unwrap(),
                    packets,
                    "{protocol}"
                );
                a.set_compression(c, 512);
                b.set_compression(c, 512);
                for p in [&packets[..1], &packets[..]] {
                    assert_eq!(b.decode(&a.encode(p)).unwrap(), p, "{protocol} {c:?}");
                }
                let key = [9u8; 32];
                a.set_key(key);
                b.set_key(key);
                for _ in 0..3 {
                    let m = a.encode(&packets);
                    assert!(!m.windows(16).any(|w| w == &big[..16]), "encrypted");
                    assert_eq!(b.decode(&m).unwrap(), packets, "{protocol} {c:?} encrypted");
                }
                // A batch out of step fails its checksum.
                let m = a.encode(&packets);
                let _ = a.encode(&packets);
                let skipped = a.encode(&packets);
                assert!(b.decode(&m).is_ok());
                assert_eq!(b.decode(&skipped), Err(CodecError::Checksum));
            }
        }
    }

    #[test]
    fn the_passive_decoder_reads_what_the_codec_writes() {
        // A small batch under the threshold in 1.20.60+: the 0xff byte.
        let (mut a, _) = pair(2169);
        a.set_compression(Compression::Deflate, 512);
        assert_eq!(a.encode(&[vec![0x0a, 1]])[..2], [0xfe, 0xff]);
        let m = a.encode(&[vec![0x0a; 600]]);
        assert_eq!(m[1], 0);
        assert_eq!(Codec::new(1).decode(&[0x00]), Err(CodecError::NotABatch));
    }

    /// NetherNet's batches: no 0xFE; the first without a compression
    /// byte, then with one; read back by the passive decoder's framing
    /// (the sample join's first batch is `c1 01 00 00 08 79` after its
    /// length byte).
    #[test]
    fn nethernet_batches_have_no_fe() {
        let (mut a, mut b) = pair(2169);
        a.set_nethernet();
        b.set_nethernet();
        let first = vec![0xc1, 0x01, 0, 0, 0x08, 0x79];
        assert_eq!(
            a.encode(std::slice::from_ref(&first)),
            [&[6u8][..], &first].concat()
        );
        a.set_compression(Compression::Deflate, 512);
        b.set_compression(Compression::Deflate, 512);
        for p in [vec![vec![0x0a, 1]], vec![vec![0x0a; 600]]] {
            let m = a.encode(&p);
            assert!(m[0] == 0xff || m[0] == 0, "{m:?}");
            assert_eq!(b.decode(&m).unwrap(), p);
        }
    }
}
