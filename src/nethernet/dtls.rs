//! DTLS 1.2 (RFC 6347) as WebRTC runs it under SCTP: the records of a
//! datagram, the handshake messages in the clear (hellos, certificates,
//! alerts), and the application data records decrypted with a key log.
//!
//! A datagram holds one or more records, each a 13-byte header (content
//! type, version, epoch, 48-bit sequence number, length) and its fragment.
//! Epoch 0 is in the clear; from the ChangeCipherSpec on (epoch 1) a
//! record is sealed with the negotiated AEAD suite, keyed from the master
//! secret that an NSS key log names by the ClientHello's random
//! (`CLIENT_RANDOM <random> <master secret>`), as [`Keys::derive`] does
//! with TLS 1.2's PRF (RFC 5246 §5, §6.3).

use aes_gcm::aead::{AeadInOut, KeyInit};
use hmac::Mac;

use crate::wire::cursor::{Reader, Result};

/// The record content types (RFC 6347 §4.1, RFC 9147 for 25 and 26).
pub mod content {
    /// ChangeCipherSpec: the sender's next records are sealed.
    pub const CHANGE_CIPHER_SPEC: u8 = 20;
    /// An alert: a level and a description.
    pub const ALERT: u8 = 21;
    /// Handshake messages.
    pub const HANDSHAKE: u8 = 22;
    /// Application data: in WebRTC, SCTP packets.
    pub const APPLICATION_DATA: u8 = 23;
    /// Heartbeat (RFC 6520).
    pub const HEARTBEAT: u8 = 24;
    /// DTLS 1.3's ACK.
    pub const ACK: u8 = 26;
}

/// A content type's name.
pub fn content_name(t: u8) -> &'static str {
    match t {
        content::CHANGE_CIPHER_SPEC => "change_cipher_spec",
        content::ALERT => "alert",
        content::HANDSHAKE => "handshake",
        content::APPLICATION_DATA => "application_data",
        content::HEARTBEAT => "heartbeat",
        content::ACK => "ack",
        c if is_unified(c) => "ciphertext",
        _ => "unknown",
    }
}

/// A record version's name: DTLS counts down from 0xFEFF (1.0).
pub fn version_name(v: u16) -> &'static str {
    match v {
        0xFEFF => "DTLS 1.0",
        0xFEFD => "DTLS 1.2",
        0xFEFC => "DTLS 1.3",
        _ => "unknown",
    }
}

/// One record of a datagram, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Offset of the record's header in the datagram.
    pub at: usize,
    /// The content type ([`content`]).
    pub content: u8,
    /// The record version (0xFEFD: DTLS 1.2).
    pub version: u16,
    /// The epoch: 0 in the clear, 1 on after ChangeCipherSpec.
    pub epoch: u16,
    /// The 48-bit sequence number within the epoch.
    pub seq: u64,
    /// The record's payload (sealed from epoch 1).
    pub fragment: &'a [u8],
    /// A DTLS 1.3 ciphertext record (RFC 9147 §4: the unified header):
    /// `content` is then its first byte, `epoch` the epoch's two low bits,
    /// `seq` the 8 or 16 bits of the (encrypted) sequence number, and
    /// `fragment` the ciphertext; its content type is inside it.
    pub unified: bool,
}

impl Record<'_> {
    /// Epoch and sequence number as the AEAD's associated data and
    /// ChaCha20's nonce take them: 16 bits, then 48.
    pub fn seq_num(&self) -> u64 {
        (u64::from(self.epoch) << 48) | self.seq
    }
}

/// Records a datagram may hold at most (a flight packs a few): more is
/// malformed rather than a list to grow.
pub const MAX_RECORDS: usize = 64;

/// Whether `b` starts like a DTLS record (RFC 7983: a first byte of 20 to
/// 63, a DTLS version; or DTLS 1.3's unified header).
pub fn looks_like(b: &[u8]) -> bool {
    (b.len() >= 13 && (20..=63).contains(&b[0]) && b[1] == 0xFE)
        || (b.len() >= 2 && is_unified(b[0]))
}

/// Whether a record's first byte is DTLS 1.3's unified header
/// (`0b001CSLEE`: connection id present, 16-bit sequence number, length
/// present, the epoch's two low bits).
pub fn is_unified(first: u8) -> bool {
    first & 0xE0 == 0x20
}

/// Every record of a datagram, in order.
pub fn records(b: &[u8]) -> Result<Vec<Record<'_>>> {
    let mut r = Reader::new(b);
    let mut out = Vec::new();
    while r.remaining() > 0 {
        if out.len() == MAX_RECORDS {
            return Err(r.invalid(
                "DTLS record",
                format!("more than {MAX_RECORDS} in a datagram"),
            ));
        }
        let at = r.offset();
        let content = r.u8("DTLS content type")?;
        if is_unified(content) {
            // A connection id's length is not in the header (it was agreed
            // in the encrypted handshake): the record runs to the end.
            let cid = content & 0x10 != 0;
            let seq = match (cid, content & 0x08 != 0) {
                (true, _) => 0,
                (false, true) => u64::from(r.u16_be("DTLS 1.3 sequence number")?),
                (false, false) => u64::from(r.u8("DTLS 1.3 sequence number")?),
            };
            let len = match (cid, content & 0x04 != 0) {
                (false, true) => usize::from(r.u16_be("DTLS 1.3 record length")?),
                _ => r.remaining(),
            };
            let fragment = r.raw(len, "DTLS 1.3 ciphertext")?;
            out.push(Record {
                at,
                content,
                version: 0xFEFC,
                epoch: u16::from(content & 0x03),
                seq,
                fragment,
                unified: true,
            });
            continue;
        }
        let version = r.u16_be("DTLS version")?;
        let epoch = r.u16_be("DTLS epoch")?;
        let seq = r
            .raw(6, "DTLS sequence number")?
            .iter()
            .fold(0u64, |s, &x| (s << 8) | u64::from(x));
        let len = usize::from(r.u16_be("DTLS record length")?);
        let fragment = r.raw(len, "DTLS record fragment")?;
        out.push(Record {
            at,
            content,
            version,
            epoch,
            seq,
            fragment,
            unified: false,
        });
    }
    Ok(out)
}

/// The handshake message types (RFC 5246 §7.4, RFC 6347 §4.3.2).
pub fn handshake_name(t: u8) -> &'static str {
    match t {
        0 => "hello_request",
        1 => "client_hello",
        2 => "server_hello",
        3 => "hello_verify_request",
        4 => "new_session_ticket",
        11 => "certificate",
        12 => "server_key_exchange",
        13 => "certificate_request",
        14 => "server_hello_done",
        15 => "certificate_verify",
        16 => "client_key_exchange",
        20 => "finished",
        _ => "unknown",
    }
}

/// A handshake message, or a fragment of one, from a record in the clear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handshake<'a> {
    /// The handshake message type ([`handshake_name`]).
    pub kind: u8,
    /// The whole message's length.
    pub length: u32,
    /// The message's number in the handshake (DTLS counts them).
    pub message_seq: u16,
    /// Where this fragment starts in the message.
    pub fragment_offset: u32,
    /// The fragment's bytes.
    pub body: &'a [u8],
}

impl Handshake<'_> {
    /// Whether this fragment is the whole message.
    pub fn is_whole(&self) -> bool {
        self.fragment_offset == 0 && self.body.len() as u32 == self.length
    }
}

fn u24(r: &mut Reader<'_>, field: &'static str) -> Result<u32> {
    let b = r.raw(3, field)?;
    Ok(u32::from_be_bytes([0, b[0], b[1], b[2]]))
}

/// The handshake messages (or fragments) of a record's fragment.
pub fn handshakes(fragment: &[u8], base: usize) -> Result<Vec<Handshake<'_>>> {
    let mut r = Reader::with_base(fragment, base);
    let mut out = Vec::new();
    while r.remaining() > 0 {
        if out.len() == MAX_RECORDS {
            return Err(r.invalid(
                "DTLS handshake",
                format!("more than {MAX_RECORDS} in a record"),
            ));
        }
        let kind = r.u8("DTLS handshake type")?;
        let length = u24(&mut r, "DTLS handshake length")?;
        let message_seq = r.u16_be("DTLS message sequence")?;
        let fragment_offset = u24(&mut r, "DTLS fragment offset")?;
        let n = u24(&mut r, "DTLS fragment length")?;
        if fragment_offset.saturating_add(n) > length {
            return Err(r.invalid(
                "DTLS fragment length",
                format!("{n} bytes at {fragment_offset} of a {length}-byte message"),
            ));
        }
        let body = r.raw(n as usize, "DTLS handshake body")?;
        out.push(Handshake {
            kind,
            length,
            message_seq,
            fragment_offset,
            body,
        });
    }
    Ok(out)
}

/// A handshake message's bytes at most (a certificate chain of a few
/// KB; WebRTC's is one self-signed certificate).
pub const MAX_HANDSHAKE: u32 = 64 << 10;

/// Handshake messages under reassembly at most, per direction.
pub const MAX_PENDING: usize = 8;

/// A whole handshake message, reassembled from its fragments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WholeHandshake {
    /// The handshake message type ([`handshake_name`]).
    pub kind: u8,
    /// The message's number in the handshake.
    pub message_seq: u16,
    /// The whole message's body.
    pub body: Vec<u8>,
}

/// A handshake message under reassembly: its type, its bytes, the byte
/// ranges received.
type Partial = (u8, Vec<u8>, Vec<(u32, u32)>);

/// One direction's handshake fragments, put back together (DTLS splits a
/// message that does not fit the path's MTU, and may send a fragment
/// again): each message once, when all its bytes are in.
#[derive(Debug, Default)]
pub struct Reassembly {
    /// message_seq -> the message under reassembly.
    pending: std::collections::BTreeMap<u16, Partial>,
    /// Messages already given whole (their fragments sent again are not
    /// given twice).
    done: std::collections::BTreeSet<u16>,
}

/// Why a fragment was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReassemblyError {
    #[error("a handshake message of {0} bytes, more than the {MAX_HANDSHAKE} reassembled")]
    /// The message's declared length.
    TooLong(u32),
    /// Too many messages at once under reassembly.
    #[error("more than {MAX_PENDING} handshake messages under reassembly")]
    TooMany,
    #[error("a fragment of message {0} disagrees with an earlier one on its type or length")]
    /// The message sequence number.
    Inconsistent(u16),
}

impl Reassembly {
    /// Take one fragment; the message, when this fragment completes it.
    pub fn push(
        &mut self,
        h: &Handshake<'_>,
    ) -> std::result::Result<Option<WholeHandshake>, ReassemblyError> {
        if self.done.contains(&h.message_seq) {
            return Ok(None);
        }
        if h.length > MAX_HANDSHAKE {
            return Err(ReassemblyError::TooLong(h.length));
        }
        if !self.pending.contains_key(&h.message_seq) && self.pending.len() >= MAX_PENDING {
            return Err(ReassemblyError::TooMany);
        }
        let (kind, buf, covered) = self
            .pending
            .entry(h.message_seq)
            .or_insert_with(|| (h.kind, vec![0; h.length as usize], Vec::new()));
        if *kind != h.kind || buf.len() != h.length as usize {
            return Err(ReassemblyError::Inconsistent(h.message_seq));
        }
        // `handshakes` gives only fragments within their message; a
        // `Handshake` built otherwise is refused, not a panic.
        let start = h.fragment_offset;
        let Some(slot) = u32::try_from(h.body.len())
            .ok()
            .and_then(|n| start.checked_add(n))
            .and_then(|end| buf.get_mut(start as usize..end as usize))
        else {
            return Err(ReassemblyError::Inconsistent(h.message_seq));
        };
        slot.copy_from_slice(h.body);
        let end = start + h.body.len() as u32;
        covered.push((start, end));
        covered.sort_unstable();
        let mut reach = 0;
        for &(s, e) in covered.iter() {
            if s > reach {
                break;
            }
            reach = reach.max(e);
        }
        if reach < h.length {
            // Keep the list short: merged ranges only.
            let mut merged: Vec<(u32, u32)> = Vec::new();
            for &(s, e) in covered.iter() {
                match merged.last_mut() {
                    Some(last) if s <= last.1 => last.1 = last.1.max(e),
                    _ => merged.push((s, e)),
                }
            }
            *covered = merged;
            return Ok(None);
        }
        let (kind, body, _) = self.pending.remove(&h.message_seq).unwrap_or_default();
        if self.done.len() < 64 {
            self.done.insert(h.message_seq);
        }
        Ok(Some(WholeHandshake {
            kind,
            message_seq: h.message_seq,
            body,
        }))
    }
}

/// What a ClientHello or ServerHello says that a dissector shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// The version the hello offers or chose.
    pub version: u16,
    /// The hello's 32 random bytes (the client's names the association in a key log).
    pub random: [u8; 32],
    /// The client's offered suites, or the one the server chose.
    pub cipher_suites: Vec<u16>,
    /// The ClientHello's cookie (empty before HelloVerifyRequest).
    pub cookie: Vec<u8>,
    /// The extension types, in order.
    pub extensions: Vec<u16>,
    /// supported_versions (RFC 8446 §4.2.1): the versions a ClientHello
    /// offers, or the one a ServerHello chose (DTLS 1.3: 0xFEFC); the
    /// legacy `version` says 1.2 in both.
    pub supported_versions: Vec<u16>,
}

impl Hello {
    /// The version a ServerHello chose: supported_versions' when it has
    /// one, else its legacy version.
    pub fn chosen_version(&self) -> u16 {
        self.supported_versions
            .first()
            .copied()
            .unwrap_or(self.version)
    }
}

/// The supported_versions extension.
pub const EXT_SUPPORTED_VERSIONS: u16 = 43;

/// The extended master secret extension (RFC 7627).
pub const EXT_EXTENDED_MASTER_SECRET: u16 = 23;

/// Cipher suites a ClientHello may offer at most that are kept.
const MAX_SUITES: usize = 256;

/// A ClientHello's (`client` true) or ServerHello's body.
pub fn hello(body: &[u8], client: bool) -> Result<Hello> {
    let mut r = Reader::new(body);
    let version = r.u16_be("hello version")?;
    let mut random = [0; 32];
    random.copy_from_slice(r.raw(32, "hello random")?);
    let sid = usize::from(r.u8("session id length")?);
    r.raw(sid, "session id")?;
    let mut cookie = Vec::new();
    let mut cipher_suites = Vec::new();
    if client {
        let n = usize::from(r.u8("cookie length")?);
        cookie = r.raw(n, "cookie")?.to_vec();
        let n = usize::from(r.u16_be("cipher suites length")?);
        let suites = r.raw(n, "cipher suites")?;
        cipher_suites = suites
            .chunks_exact(2)
            .take(MAX_SUITES)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
            .collect();
        let n = usize::from(r.u8("compression methods length")?);
        r.raw(n, "compression methods")?;
    } else {
        cipher_suites.push(r.u16_be("cipher suite")?);
        r.u8("compression method")?;
    }
    let mut extensions = Vec::new();
    let mut supported_versions = Vec::new();
    if r.remaining() > 0 {
        let n = usize::from(r.u16_be("extensions length")?);
        let mut e = Reader::new(r.raw(n, "extensions")?);
        while e.remaining() > 0 && extensions.len() < MAX_SUITES {
            let kind = e.u16_be("extension type")?;
            extensions.push(kind);
            let n = usize::from(e.u16_be("extension length")?);
            let data = e.raw(n, "extension data")?;
            if kind == EXT_SUPPORTED_VERSIONS {
                // A client's: a length byte, then the list; a server's:
                // the one it chose.
                let list = if client {
                    data.get(1..).unwrap_or_default()
                } else {
                    data
                };
                supported_versions = list
                    .chunks_exact(2)
                    .take(16)
                    .map(|c| u16::from_be_bytes([c[0], c[1]]))
                    .collect();
            }
        }
    }
    Ok(Hello {
        version,
        random,
        cipher_suites,
        cookie,
        extensions,
        supported_versions,
    })
}

/// The certificates of a Certificate message, DER each, the sender's
/// first.
pub fn certificates(body: &[u8]) -> Result<Vec<&[u8]>> {
    let mut r = Reader::new(body);
    let n = u24(&mut r, "certificate list length")? as usize;
    let mut list = Reader::new(r.raw(n, "certificate list")?);
    let mut out = Vec::new();
    while list.remaining() > 0 && out.len() < 16 {
        let n = u24(&mut list, "certificate length")? as usize;
        out.push(list.raw(n, "certificate")?);
    }
    Ok(out)
}

/// A certificate's SHA-256 as an SDP's `a=fingerprint:sha-256` writes it:
/// uppercase hex pairs joined by colons.
pub fn fingerprint(der: &[u8]) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(der);
    let mut s = String::with_capacity(95);
    for (i, b) in d.iter().enumerate() {
        if i > 0 {
            s.push(':');
        }
        s.push_str(&format!("{b:02X}"));
    }
    s
}

/// An alert's level and description names (RFC 5246 §7.2).
pub fn alert_name(description: u8) -> &'static str {
    match description {
        0 => "close_notify",
        10 => "unexpected_message",
        20 => "bad_record_mac",
        40 => "handshake_failure",
        42 => "bad_certificate",
        43 => "unsupported_certificate",
        44 => "certificate_revoked",
        45 => "certificate_expired",
        46 => "certificate_unknown",
        47 => "illegal_parameter",
        48 => "unknown_ca",
        50 => "decode_error",
        51 => "decrypt_error",
        70 => "protocol_version",
        71 => "insufficient_security",
        80 => "internal_error",
        90 => "user_canceled",
        110 => "unsupported_extension",
        _ => "unknown",
    }
}

/// The AEAD suites WebRTC stacks negotiate, by their TLS numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suite {
    /// ECDHE with AES-128-GCM and SHA-256 (0xC02B ECDSA, 0xC02F RSA).
    Aes128Gcm,
    /// ECDHE with AES-256-GCM and SHA-384 (0xC02C, 0xC030).
    Aes256Gcm,
    /// ECDHE with ChaCha20-Poly1305 and SHA-256 (0xCCA9, 0xCCA8).
    ChaCha20Poly1305,
}

impl Suite {
    /// The suite of a ServerHello's number, when it is one of these.
    pub fn from_id(id: u16) -> Option<Suite> {
        Some(match id {
            0xC02B | 0xC02F => Suite::Aes128Gcm,
            0xC02C | 0xC030 => Suite::Aes256Gcm,
            0xCCA9 | 0xCCA8 => Suite::ChaCha20Poly1305,
            _ => return None,
        })
    }

    fn key_len(self) -> usize {
        match self {
            Suite::Aes128Gcm => 16,
            Suite::Aes256Gcm | Suite::ChaCha20Poly1305 => 32,
        }
    }

    /// The fixed IV's length: GCM's salt, or ChaCha20's whole nonce.
    fn iv_len(self) -> usize {
        match self {
            Suite::Aes128Gcm | Suite::Aes256Gcm => 4,
            Suite::ChaCha20Poly1305 => 12,
        }
    }
}

/// A cipher suite's name, for those a WebRTC stack may offer.
pub fn suite_name(id: u16) -> Option<&'static str> {
    Some(match id {
        // TLS 1.3's and DTLS 1.3's (RFC 8446 §B.4).
        0x1301 => "TLS_AES_128_GCM_SHA256",
        0x1302 => "TLS_AES_256_GCM_SHA384",
        0x1303 => "TLS_CHACHA20_POLY1305_SHA256",
        0xC02B => "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        0xC02C => "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        0xC02F => "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        0xC030 => "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        0xCCA9 => "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        0xCCA8 => "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        0xC009 => "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
        0xC00A => "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
        0xC013 => "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
        0xC014 => "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
        0x009C => "TLS_RSA_WITH_AES_128_GCM_SHA256",
        0x002F => "TLS_RSA_WITH_AES_128_CBC_SHA",
        0x0035 => "TLS_RSA_WITH_AES_256_CBC_SHA",
        _ => return None,
    })
}

/// TLS 1.2's PRF (P_hash, RFC 5246 §5) with `mac`, an HMAC keyed by the
/// secret over the pieces given: `out.len()` bytes.
fn p_hash(mac: impl Fn(&[&[u8]]) -> Vec<u8>, label: &[u8], seed: &[u8], out: &mut [u8]) {
    let mut a = mac(&[label, seed]);
    let mut done = 0;
    while done < out.len() {
        let block = mac(&[&a, label, seed]);
        let n = block.len().min(out.len() - done);
        out[done..done + n].copy_from_slice(&block[..n]);
        done += n;
        a = mac(&[&a]);
    }
}

/// HMAC-`D` keyed by `secret` over the pieces given.
fn hmac_of<D: hmac::EagerHash>(secret: &[u8]) -> impl Fn(&[&[u8]]) -> Vec<u8> + '_ {
    move |parts| {
        let mut m = <hmac::Hmac<D> as KeyInit>::new_from_slice(secret)
            .expect("HMAC takes a key of any length");
        for p in parts {
            m.update(p);
        }
        m.finalize().into_bytes().to_vec()
    }
}

/// One direction's key and fixed IV.
#[derive(Clone)]
struct Half {
    key: Vec<u8>,
    iv: Vec<u8>,
}

/// The keys of one DTLS association, both directions, from its master
/// secret.
#[derive(Clone)]
pub struct Keys {
    /// The suite the keys are for.
    pub suite: Suite,
    client: Half,
    server: Half,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // No key material in a debug print.
        f.debug_struct("Keys").field("suite", &self.suite).finish()
    }
}

/// Why a record did not decrypt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecryptError {
    #[error("record too short for its suite ({0} bytes)")]
    /// The record's length.
    TooShort(usize),
    /// The AEAD tag did not verify.
    #[error("authentication failed (a wrong key, or a corrupt record)")]
    Auth,
}

impl Keys {
    /// The key block (RFC 5246 §6.3) of `master` (48 bytes) and the two
    /// hellos' randoms.
    pub fn derive(
        suite: Suite,
        master: &[u8],
        client_random: &[u8; 32],
        server_random: &[u8; 32],
    ) -> Keys {
        let (k, i) = (suite.key_len(), suite.iv_len());
        let mut block = vec![0u8; 2 * (k + i)];
        let mut seed = [0u8; 64];
        seed[..32].copy_from_slice(server_random);
        seed[32..].copy_from_slice(client_random);
        match suite {
            Suite::Aes256Gcm => p_hash(
                hmac_of::<sha2::Sha384>(master),
                b"key expansion",
                &seed,
                &mut block,
            ),
            _ => p_hash(
                hmac_of::<sha2::Sha256>(master),
                b"key expansion",
                &seed,
                &mut block,
            ),
        }
        // AEAD suites have no MAC keys: client key, server key, client
        // IV, server IV.
        Keys {
            suite,
            client: Half {
                key: block[..k].to_vec(),
                iv: block[2 * k..2 * k + i].to_vec(),
            },
            server: Half {
                key: block[k..2 * k].to_vec(),
                iv: block[2 * k + i..].to_vec(),
            },
        }
    }

    /// The plaintext of an encrypted record sent by the DTLS client
    /// (`from_client`) or the server.
    pub fn decrypt(
        &self,
        r: &Record<'_>,
        from_client: bool,
    ) -> std::result::Result<Vec<u8>, DecryptError> {
        let half = if from_client {
            &self.client
        } else {
            &self.server
        };
        let seq = r.seq_num().to_be_bytes();
        let (nonce, sealed): ([u8; 12], &[u8]) = match self.suite {
            Suite::Aes128Gcm | Suite::Aes256Gcm => {
                if r.fragment.len() < 8 + 16 {
                    return Err(DecryptError::TooShort(r.fragment.len()));
                }
                let mut n = [0u8; 12];
                n[..4].copy_from_slice(&half.iv);
                n[4..].copy_from_slice(&r.fragment[..8]);
                (n, &r.fragment[8..])
            }
            Suite::ChaCha20Poly1305 => {
                if r.fragment.len() < 16 {
                    return Err(DecryptError::TooShort(r.fragment.len()));
                }
                let mut n = [0u8; 12];
                n.copy_from_slice(&half.iv);
                for (x, s) in n[4..].iter_mut().zip(seq) {
                    *x ^= s;
                }
                (n, r.fragment)
            }
        };
        let (body, tag) = sealed.split_at(sealed.len() - 16);
        let mut aad = [0u8; 13];
        aad[..8].copy_from_slice(&seq);
        aad[8] = r.content;
        aad[9..11].copy_from_slice(&r.version.to_be_bytes());
        aad[11..].copy_from_slice(&(body.len() as u16).to_be_bytes());
        let mut out = body.to_vec();
        let ok = match self.suite {
            Suite::Aes128Gcm => open::<aes_gcm::Aes128Gcm>(&half.key, &nonce, &aad, &mut out, tag),
            Suite::Aes256Gcm => open::<aes_gcm::Aes256Gcm>(&half.key, &nonce, &aad, &mut out, tag),
            Suite::ChaCha20Poly1305 => {
                open::<chacha20poly1305::ChaCha20Poly1305>(&half.key, &nonce, &aad, &mut out, tag)
            }
        };
        if ok {
            Ok(out)
        } else {
            Err(DecryptError::Auth)
        }
    }
}

/// `buf` decrypted in place by AEAD `A`; whether the tag verified.
fn open<A: AeadInOut + KeyInit>(
    key: &[u8],
    nonce: &[u8; 12],
    aad: &[u8],
    buf: &mut [u8],
    tag: &[u8],
) -> bool {
    let Ok(cipher) = A::new_from_slice(key) else {
        return false;
    };
    let (Ok(nonce), Ok(tag)) = (nonce[..].try_into(), tag.try_into()) else {
        return false;
    };
    cipher
        .decrypt_inout_detached(nonce, aad, buf.into(), tag)
        .is_ok()
}

/// The master secrets of an NSS key log, by client random
/// (`CLIENT_RANDOM <64 hex> <96 hex>` lines; the others, TLS 1.3's
/// traffic secrets among them, are counted but not used here).
#[derive(Debug, Default, Clone)]
pub struct KeyLog {
    secrets: std::collections::HashMap<[u8; 32], [u8; 48]>,
    /// Lines that were not a CLIENT_RANDOM line.
    pub other_lines: usize,
}

/// Master secrets a key log may hold at most (one per DTLS association).
pub const MAX_SECRETS: usize = 1 << 20;

impl KeyLog {
    /// The CLIENT_RANDOM lines of `text`.
    pub fn parse(text: &str) -> KeyLog {
        let mut log = KeyLog::default();
        log.add(text);
        log
    }

    /// Adds the CLIENT_RANDOM lines of `text` (a capture's secrets block),
    /// up to [`MAX_SECRETS`] in all; returns how many were new.
    pub fn add(&mut self, text: &str) -> usize {
        let before = self.secrets.len();
        for line in text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let mut f = line.split_ascii_whitespace();
            let parsed = match (f.next(), f.next(), f.next()) {
                (Some("CLIENT_RANDOM"), Some(r), Some(m)) => {
                    hex_array::<32>(r).zip(hex_array::<48>(m))
                }
                _ => None,
            };
            match parsed {
                Some((r, m)) if self.secrets.len() < MAX_SECRETS => {
                    self.secrets.insert(r, m);
                }
                _ => self.other_lines += 1,
            }
        }
        self.secrets.len() - before
    }

    /// The master secret of the association whose ClientHello had
    /// `client_random`.
    pub fn master(&self, client_random: &[u8; 32]) -> Option<&[u8; 48]> {
        self.secrets.get(client_random)
    }

    /// Master secrets held.
    pub fn len(&self) -> usize {
        self.secrets.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// The CLIENT_RANDOM lines of the files `paths` (`--tls-keylog`),
    /// then of `optional` when it can be read (`SSLKEYLOGFILE`, which a
    /// browser makes when it first writes to it). A file given that cannot
    /// be read, or holds no CLIENT_RANDOM line, is an error.
    pub fn from_files(
        paths: &[std::path::PathBuf],
        optional: Option<&std::path::Path>,
    ) -> std::result::Result<KeyLog, KeyLogError> {
        /// A key log this large is not one (a million secrets is 200 MB).
        const MAX_BYTES: u64 = 256 << 20;
        let read = |p: &std::path::Path| -> std::result::Result<String, KeyLogError> {
            let error = |e: std::io::Error| KeyLogError::Unreadable(p.to_owned(), e);
            let len = std::fs::metadata(p).map_err(error)?.len();
            if len > MAX_BYTES {
                return Err(KeyLogError::TooLarge(p.to_owned(), len));
            }
            let bytes = std::fs::read(p).map_err(error)?;
            String::from_utf8(bytes).map_err(|_| KeyLogError::NoSecret(p.to_owned()))
        };
        let mut text = String::new();
        for p in paths {
            let t = read(p)?;
            if KeyLog::parse(&t).is_empty() {
                return Err(KeyLogError::NoSecret(p.clone()));
            }
            text.push_str(&t);
            text.push('\n');
        }
        if let Some(t) = optional.and_then(|p| read(p).ok()) {
            text.push_str(&t);
        }
        Ok(KeyLog::parse(&text))
    }
}

/// Why a DTLS key log could not be read.
#[derive(Debug, thiserror::Error)]
pub enum KeyLogError {
    /// It could not be opened or read.
    #[error("--tls-keylog {path}: {error}", path = .0.display(), error = .1)]
    Unreadable(std::path::PathBuf, std::io::Error),
    /// It is larger than a key log can be.
    #[error("--tls-keylog {path}: {len} bytes, not a key log", path = .0.display(), len = .1)]
    TooLarge(std::path::PathBuf, u64),
    /// It holds no CLIENT_RANDOM line (or is not text).
    #[error("--tls-keylog {path}: no CLIENT_RANDOM line (an NSS key log, as SSLKEYLOGFILE writes)", path = .0.display())]
    NoSecret(std::path::PathBuf),
}

fn hex_array<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prf_gives_the_tls_12_test_vector() {
        // The TLS 1.2 PRF (SHA-256) vector circulated on the IETF TLS
        // list: secret, label "test label", seed, 100 bytes out (checked
        // here against Python's hmac module too); its first 16 and last 4
        // bytes.
        let secret = hex_array::<16>("9bbe436ba940f017b17652849a71db35").unwrap();
        let seed = hex_array::<16>("a0ba9f936cda311827a6f796ffd5198c").unwrap();
        let mut out = [0u8; 100];
        p_hash(
            hmac_of::<sha2::Sha256>(&secret),
            b"test label",
            &seed,
            &mut out,
        );
        assert_eq!(
            out[..16],
            hex_array::<16>("e3f229ba727be17b8d122620557cd453").unwrap()
        );
        assert_eq!(out[96..], hex_array::<4>("87347b66").unwrap());
    }

    #[test]
    fn records_and_handshakes_of_a_flight() {
        // A ClientHello record (epoch 0, seq 1) and a ChangeCipherSpec.
        let mut hello = Vec::new();
        hello.extend([0xFE, 0xFD]);
        hello.extend([7u8; 32]);
        hello.push(0); // session id
        hello.extend([2, 0xAB, 0xCD]); // cookie
        hello.extend([0, 4, 0xC0, 0x2B, 0xCC, 0xA9]);
        hello.extend([1, 0]);
        hello.extend([0, 4, 0, 23, 0, 0]); // extended_master_secret
        let mut hs = vec![1];
        hs.extend(&(hello.len() as u32).to_be_bytes()[1..]);
        hs.extend([0, 0, 0, 0, 0]);
        hs.extend(&(hello.len() as u32).to_be_bytes()[1..]);
        hs.extend(&hello);
        let mut dgram = vec![22, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 1];
        dgram.extend((hs.len() as u16).to_be_bytes());
        dgram.extend(&hs);
        dgram.extend([20, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 1]);
        assert!(looks_like(&dgram));
        let rs = records(&dgram).unwrap();
        assert_eq!(rs.len(), 2);
        assert_eq!((rs[0].content, rs[0].epoch, rs[0].seq), (22, 0, 1));
        assert_eq!(
            (rs[1].content, rs[1].at, rs[1].seq_num()),
            (20, 13 + hs.len(), 2)
        );
        let h = handshakes(rs[0].fragment, rs[0].at + 13).unwrap();
        assert_eq!(h.len(), 1);
        assert!(h[0].is_whole());
        assert_eq!(handshake_name(h[0].kind), "client_hello");
        let ch = hello_of(h[0].body);
        assert_eq!(ch.cookie, [0xAB, 0xCD]);
        assert_eq!(ch.cipher_suites, [0xC02B, 0xCCA9]);
        assert_eq!(ch.extensions, [EXT_EXTENDED_MASTER_SECRET]);
        // Cut anywhere: an error, never a panic.
        for n in 1..dgram.len() {
            let _ = records(&dgram[..n]);
        }
        // A hello may end before its extensions; cut anywhere else, it
        // is an error.
        for n in 0..hello.len() {
            let cut = super::hello(&hello[..n], true);
            assert_eq!(cut.is_ok(), n == hello.len() - 6, "{n}");
        }
    }

    #[test]
    fn fragments_make_one_message_once() {
        let frag = |off: u32, body: &'static [u8]| Handshake {
            kind: 11,
            length: 6,
            message_seq: 2,
            fragment_offset: off,
            body,
        };
        let mut r = Reassembly::default();
        assert_eq!(r.push(&frag(3, b"def")), Ok(None));
        assert_eq!(r.push(&frag(0, b"ab")), Ok(None));
        assert_eq!(r.push(&frag(1, b"bc")).unwrap().unwrap().body, b"abcdef");
        // Sent again: not given twice.
        assert_eq!(r.push(&frag(0, b"ab")), Ok(None));
        let other = Handshake {
            kind: 12,
            length: 3,
            message_seq: 3,
            fragment_offset: 0,
            body: b"x",
        };
        assert_eq!(r.push(&other), Ok(None));
        let liar = Handshake { kind: 13, ..other };
        assert_eq!(r.push(&liar), Err(ReassemblyError::Inconsistent(3)));
        let past_the_end = Handshake {
            message_seq: 3,
            fragment_offset: 2,
            body: b"yz",
            ..other
        };
        assert_eq!(r.push(&past_the_end), Err(ReassemblyError::Inconsistent(3)));
        let huge = Handshake {
            length: MAX_HANDSHAKE + 1,
            message_seq: 4,
            ..other
        };
        assert!(r.push(&huge).is_err());
    }

    fn hello_of(b: &[u8]) -> Hello {
        hello(b, true).unwrap()
    }

    #[test]
    fn a_key_log_by_client_random() {
        let r = "11".repeat(32);
        let m = "22".repeat(48);
        let log = KeyLog::parse(&format!(
            "# comment\nCLIENT_RANDOM {r} {m}\nCLIENT_HANDSHAKE_TRAFFIC_SECRET {r} {m}\nCLIENT_RANDOM zz {m}\n"
        ));
        assert_eq!((log.len(), log.other_lines), (1, 2));
        assert_eq!(log.master(&[0x11; 32]), Some(&[0x22; 48]));
    }

    #[test]
    fn a_sealed_record_opens_with_its_keys_only() {
        // Seal a record the way RFC 5288 says (the same AEAD crate, the
        // other direction), then open it through `decrypt`.
        use aes_gcm::aead::AeadInOut;
        let keys = Keys::derive(Suite::Aes128Gcm, &[5; 48], &[1; 32], &[2; 32]);
        let plain = b"sctp packet".to_vec();
        let explicit = [0, 1, 0, 0, 0, 0, 0, 9];
        let mut nonce = [0u8; 12];
        nonce[..4].copy_from_slice(&keys.client.iv);
        nonce[4..].copy_from_slice(&explicit);
        let mut aad = Vec::new();
        aad.extend([0, 1, 0, 0, 0, 0, 0, 9, 23, 0xFE, 0xFD]);
        aad.extend((plain.len() as u16).to_be_bytes());
        let cipher = aes_gcm::Aes128Gcm::new_from_slice(&keys.client.key).unwrap();
        let mut body = plain.clone();
        let tag = cipher
            .encrypt_inout_detached((&nonce).into(), &aad, body.as_mut_slice().into())
            .unwrap();
        let mut fragment = explicit.to_vec();
        fragment.extend(&body);
        fragment.extend(tag.as_slice());
        let r = Record {
            at: 0,
            content: 23,
            version: 0xFEFD,
            epoch: 1,
            seq: 9,
            fragment: &fragment,
            unified: false,
        };
        assert_eq!(keys.decrypt(&r, true).unwrap(), plain);
        assert_eq!(keys.decrypt(&r, false), Err(DecryptError::Auth));
        let wrong_seq = Record { seq: 10, ..r };
        assert_eq!(keys.decrypt(&wrong_seq, true), Err(DecryptError::Auth));
        let short = Record {
            fragment: &fragment[..20],
            ..r
        };
        assert_eq!(keys.decrypt(&short, true), Err(DecryptError::TooShort(20)));
    }

    /// A datagram as Chromium's DTLS 1.3 packs one: a record in the clear
    /// (the ServerHello), then sealed ones under the unified header (RFC
    /// 9147 §4): 16-bit sequence and a length (0x2e), 8-bit sequence and no
    /// length (to the end), or a connection id (its length unknown: to the
    /// end).
    #[test]
    fn unified_headers_after_a_record_in_the_clear() {
        let mut d = vec![22, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3];
        d.extend(b"abc");
        d.extend([0x2e, 0x59, 0xfb, 0, 4]);
        d.extend(b"wxyz");
        d.extend([0x20, 7]);
        d.extend(b"tail");
        let r = records(&d).unwrap();
        assert_eq!(r.len(), 3);
        assert!(!r[0].unified && r[0].fragment == b"abc");
        assert!(r[1].unified);
        assert_eq!(
            (r[1].at, r[1].epoch, r[1].seq, r[1].fragment),
            (16, 2, 0x59fb, &b"wxyz"[..])
        );
        assert_eq!((r[2].epoch, r[2].seq, r[2].fragment), (0, 7, &b"tail"[..]));
        assert_eq!(content_name(r[1].content), "ciphertext");
        let cid = [0x3f, 1, 2, 3, 4, 5];
        let r = records(&cid).unwrap();
        assert_eq!((r.len(), r[0].epoch, r[0].fragment.len()), (1, 3, 5));
        // A length past the datagram is malformed, as in DTLS 1.2.
        assert!(records(&[0x2f, 0, 1, 0, 9, 1]).is_err());
        assert!(looks_like(&[0x2f, 0]));
        assert_eq!(suite_name(0x1301), Some("TLS_AES_128_GCM_SHA256"));
    }
}
