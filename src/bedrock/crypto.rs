//! Bedrock encryption (docs/bedrock-protocol.md §3): the key from an ECDH P-384 secret
//! and the ServerToClientHandshake's salt, AES-256-CTR (AES-256-CFB8
//! before 1.16.220) as one stream per direction, and the 8-byte SHA-256
//! checksum that tells a right key from a wrong one. Key material comes
//! from a key log (§8) or a private key of either side.

use std::fmt;

use aes::cipher::{BlockModeDecrypt, KeyIvInit, StreamCipher, StreamCipherSeek};
use base64::Engine;
use sha2::{Digest, Sha256};

/// Bytes of the checksum at the end of every encrypted batch.
pub(crate) const CHECKSUM_LEN: usize = 8;

/// Key material for the connections of a capture.
#[derive(Default, Clone)]
pub struct Keys {
    /// `BEDROCK_KEY`: AES keys tried on every connection.
    pub(crate) keys: Vec<[u8; 32]>,
    /// `BEDROCK_SALT_KEY`: a connection's key, by its salt.
    pub(crate) salt_keys: Vec<(Vec<u8>, [u8; 32])>,
    /// `BEDROCK_SHARED_SECRET`: ECDH secrets tried with every salt.
    pub(crate) secrets: Vec<[u8; 48]>,
    /// `BEDROCK_SALT_SECRET`: a connection's secret, by its salt.
    pub(crate) salt_secrets: Vec<(Vec<u8>, [u8; 48])>,
    /// Private keys of either side (`--key`).
    pub(crate) private: Vec<p384::SecretKey>,
}

/// Why key files give no keys.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    /// The file cannot be read.
    #[error("{}: {error}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why it could not be read.
        error: std::io::Error,
    },
    /// The file is not text (a capture or another binary file).
    #[error("{}: not a key log or a PEM file (binary, not text)", .0.display())]
    NotText(std::path::PathBuf),
    /// A key log with no key line (of how many lines that are not one).
    #[error(
        "{}: not a key log: no BEDROCK_KEY, BEDROCK_SALT_KEY, BEDROCK_SHARED_SECRET or BEDROCK_SALT_SECRET line ({others} other lines)",
        path.display()
    )]
    NoKeyLine {
        /// The file.
        path: std::path::PathBuf,
        /// Its lines that are not key lines.
        others: usize,
    },
    /// A PEM file with no EC P-384 private key.
    #[error("{}: no EC P-384 private key in it", .0.display())]
    NoPrivateKey(std::path::PathBuf),
}

impl KeysError {
    /// The file is there but is not what was asked for (a usage mistake,
    /// not a file that cannot be read).
    pub fn is_wrong_file(&self) -> bool {
        !matches!(self, KeysError::Read { .. })
    }
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the secrets themselves.
        f.debug_struct("Keys")
            .field("keys", &self.keys.len())
            .field("salt_keys", &self.salt_keys.len())
            .field("secrets", &self.secrets.len())
            .field("salt_secrets", &self.salt_secrets.len())
            .field("private", &self.private.len())
            .finish()
    }
}

fn unhex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let v = crate::wire::cursor::parse_hex(s).ok()?;
    v.try_into().ok()
}

impl Keys {
    /// Whether there is nothing to try.
    pub(crate) fn is_empty(&self) -> bool {
        self.keys.is_empty()
            && self.salt_keys.is_empty()
            && self.secrets.is_empty()
            && self.salt_secrets.is_empty()
            && self.private.is_empty()
    }

    /// Adds the lines of a key log (docs/bedrock-protocol.md §8); returns a warning per
    /// line it skipped (unknown label, bad hex), with its line number.
    pub fn add_key_log(&mut self, text: &str) -> Vec<String> {
        let mut warnings = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            let ok = match words.as_slice() {
                ["BEDROCK_KEY", k] => unhex::<32>(k).map(|k| self.keys.push(k)),
                ["BEDROCK_SALT_KEY", s, k] => crate::wire::cursor::parse_hex(s)
                    .ok()
                    .zip(unhex::<32>(k))
                    .map(|(s, k)| self.salt_keys.push((s, k))),
                ["BEDROCK_SHARED_SECRET", k] => unhex::<48>(k).map(|k| self.secrets.push(k)),
                ["BEDROCK_SALT_SECRET", s, k] => crate::wire::cursor::parse_hex(s)
                    .ok()
                    .zip(unhex::<48>(k))
                    .map(|(s, k)| self.salt_secrets.push((s, k))),
                _ => None,
            };
            if ok.is_none() {
                let label = words.first().copied().unwrap_or("");
                warnings.push(format!(
                    "line {}: {label}: not a key line this tool reads",
                    n + 1
                ));
            }
        }
        warnings
    }

    /// Key logs and PEM files read into one set; `Err` names the file that
    /// cannot be read or holds no key (a key log with no key line, a binary
    /// file, a PEM file with no P-384 key); the warnings name the lines
    /// skipped in key logs that hold keys.
    pub fn from_files(
        key_logs: &[std::path::PathBuf],
        pems: &[std::path::PathBuf],
    ) -> Result<(Keys, Vec<String>), KeysError> {
        let read = |p: &std::path::PathBuf| {
            let bytes = std::fs::read(p).map_err(|error| KeysError::Read {
                path: p.clone(),
                error,
            })?;
            String::from_utf8(bytes).map_err(|_| KeysError::NotText(p.clone()))
        };
        let mut keys = Keys::default();
        let mut warnings = Vec::new();
        for p in key_logs {
            let before = keys.count();
            let skipped = keys.add_key_log(&read(p)?);
            if keys.count() == before {
                return Err(KeysError::NoKeyLine {
                    path: p.clone(),
                    others: skipped.len(),
                });
            }
            warnings.extend(skipped.iter().map(|w| format!("{}: {w}", p.display())));
        }
        for p in pems {
            if keys.add_pem(&read(p)?) == 0 {
                return Err(KeysError::NoPrivateKey(p.clone()));
            }
        }
        Ok((keys, warnings))
    }

    /// How many keys, secrets and private keys are held.
    pub(crate) fn count(&self) -> usize {
        self.keys.len()
            + self.salt_keys.len()
            + self.secrets.len()
            + self.salt_secrets.len()
            + self.private.len()
    }

    /// Adds every EC P-384 private key of a PEM file (PKCS#8 or SEC1);
    /// returns how many it found.
    pub(crate) fn add_pem(&mut self, text: &str) -> usize {
        use p384::pkcs8::DecodePrivateKey;
        let mut found = 0;
        let mut rest = text;
        while let Some(start) = rest.find("-----BEGIN ") {
            let block = &rest[start..];
            let Some(end_label) = block.find("-----END ") else {
                break;
            };
            let end = block[end_label..]
                .find("\n")
                .map_or(block.len(), |i| end_label + i + 1);
            let pem = &block[..end];
            let key = p384::SecretKey::from_pkcs8_pem(pem)
                .ok()
                .or_else(|| p384::SecretKey::from_sec1_pem(pem).ok());
            if let Some(k) = key {
                self.private.push(k);
                found += 1;
            }
            rest = &block[end..];
        }
        found
    }

    /// The AES keys to try on a connection with `salt`, whose sides'
    /// public keys (base64 DER, as in the Login and the handshake's `x5u`)
    /// are `publics`: bound ones first.
    pub(crate) fn candidates(&self, salt: &[u8], publics: &[&str]) -> Vec<[u8; 32]> {
        let mut out: Vec<[u8; 32]> = Vec::new();
        for (s, k) in &self.salt_keys {
            if s == salt {
                out.push(*k);
            }
        }
        for (s, secret) in &self.salt_secrets {
            if s == salt {
                out.push(derive_key(salt, secret));
            }
        }
        out.extend(self.keys.iter().copied());
        for secret in &self.secrets {
            out.push(derive_key(salt, secret));
        }
        for private in &self.private {
            for public in publics {
                if let Some(secret) = shared_secret(private, public) {
                    out.push(derive_key(salt, &secret));
                }
            }
        }
        out.dedup();
        out
    }
}

/// SHA-256(salt ‖ shared secret).
pub(crate) fn derive_key(salt: &[u8], secret: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(salt);
    h.update(secret);
    h.finalize().into()
}

/// The ECDH secret of `private` and a public key given as base64 DER
/// (SubjectPublicKeyInfo); `None` when it is not a P-384 key.
pub(crate) fn shared_secret(private: &p384::SecretKey, public_b64: &str) -> Option<[u8; 48]> {
    use p384::pkcs8::DecodePublicKey;
    let der = decode_base64(public_b64)?;
    let public = p384::PublicKey::from_public_key_der(&der).ok()?;
    let shared = p384::ecdh::diffie_hellman(private.to_nonzero_scalar(), public.as_affine());
    shared.raw_secret_bytes().as_slice().try_into().ok()
}

/// Base64 with or without padding, standard or URL-safe alphabet (the
/// implementations differ).
pub(crate) fn decode_base64(s: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let t = s.trim().trim_end_matches('=');
    STANDARD_NO_PAD
        .decode(t)
        .ok()
        .or_else(|| URL_SAFE_NO_PAD.decode(t).ok())
}

/// The cipher of one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// AES-256-GCM without its tag, which is CTR from `key[0..12] ‖ 00000002` (1.16.220 on).
    Ctr,
    /// AES-256-CFB8 with `key[0..16]` as IV (before 1.16.220).
    Cfb8,
}

/// The IV of `mode`: CTR's counter block `key[0..12] ‖ 00000002` (GCM's first
/// keystream block for a 96-bit IV), CFB8's `key[0..16]`.
fn iv(key: &[u8; 32], mode: Mode) -> [u8; 16] {
    let mut iv = [0u8; 16];
    match mode {
        Mode::Ctr => {
            iv[..12].copy_from_slice(&key[..12]);
            iv[15] = 2;
        }
        Mode::Cfb8 => iv.copy_from_slice(&key[..16]),
    }
    iv
}

/// One direction's decryption state: the stream and the checksum counter.
pub(crate) struct Decryptor {
    key: [u8; 32],
    pub(crate) mode: Mode,
    stream: Stream,
    /// Batches decrypted so far (the checksum's counter).
    pub(crate) counter: u64,
    /// Where the stream stands, so that a copy can be made (the RustCrypto
    /// stream types are not `Clone`): bytes through CTR, CFB8's register.
    at: StreamPosition,
}

/// How far a stream has gone: CTR's byte offset, and CFB8's shift register
/// (the IV, then the last 16 ciphertext bytes), from which a copy restarts.
#[derive(Clone, Copy)]
struct StreamPosition {
    bytes: u64,
    register: [u8; 16],
}

impl StreamPosition {
    fn new(iv: [u8; 16]) -> Self {
        StreamPosition {
            bytes: 0,
            register: iv,
        }
    }

    /// The CTR stream of `key` at this position (the same both ways).
    fn ctr(&self, key: &[u8; 32]) -> Box<ctr::Ctr128BE<aes::Aes256>> {
        let mut c = ctr::Ctr128BE::new(&(*key).into(), &iv(key, Mode::Ctr).into());
        c.seek(self.bytes);
        Box::new(c)
    }

    /// `ciphertext` went through the stream.
    fn advance(&mut self, ciphertext: &[u8]) {
        self.bytes += ciphertext.len() as u64;
        let n = ciphertext.len();
        if n >= 16 {
            self.register.copy_from_slice(&ciphertext[n - 16..]);
        } else {
            self.register.copy_within(n.., 0);
            self.register[16 - n..].copy_from_slice(ciphertext);
        }
    }
}

enum Stream {
    Ctr(Box<ctr::Ctr128BE<aes::Aes256>>),
    Cfb8(Box<cfb8::Decryptor<aes::Aes256>>),
}

impl Decryptor {
    pub(crate) fn new(key: [u8; 32], mode: Mode) -> Self {
        Decryptor::at(key, mode, StreamPosition::new(iv(&key, mode)), 0)
    }

    fn at(key: [u8; 32], mode: Mode, at: StreamPosition, counter: u64) -> Self {
        let stream = match mode {
            Mode::Ctr => Stream::Ctr(at.ctr(&key)),
            Mode::Cfb8 => Stream::Cfb8(Box::new(cfb8::Decryptor::new(
                &key.into(),
                &at.register.into(),
            ))),
        };
        Decryptor {
            key,
            mode,
            stream,
            counter,
            at,
        }
    }

    /// Decrypts `data` (a batch after its 0xFE) in place.
    fn apply(&mut self, data: &mut [u8]) {
        self.at.advance(data);
        match &mut self.stream {
            Stream::Ctr(c) => c.apply_keystream(data),
            Stream::Cfb8(c) => {
                for b in data.iter_mut() {
                    let mut block = [*b].into();
                    c.decrypt_block(&mut block);
                    *b = block[0];
                }
            }
        }
    }

    /// Decrypts a batch and checks its checksum: the plaintext without the
    /// checksum, or `None` when the checksum does not verify (the stream
    /// has moved on all the same).
    pub(crate) fn decrypt(&mut self, data: &[u8]) -> Option<Vec<u8>> {
        let mut buf = data.to_vec();
        self.apply(&mut buf);
        let counter = self.counter;
        self.counter += 1;
        let body_len = buf.len().checked_sub(CHECKSUM_LEN)?;
        let sum = checksum(counter, &buf[..body_len], &self.key);
        if sum != buf[body_len..] {
            return None;
        }
        buf.truncate(body_len);
        Some(buf)
    }

    /// The stream and the counter moved past `data`, a batch, as
    /// [`Decryptor::decrypt`] moves them, without decrypting it (another
    /// thread does, from a copy made before).
    pub(crate) fn skip(&mut self, data: &[u8]) {
        self.at.advance(data);
        self.counter += 1;
        match &mut self.stream {
            Stream::Ctr(c) => c.seek(self.at.bytes),
            Stream::Cfb8(c) => {
                **c = cfb8::Decryptor::new(&self.key.into(), &self.at.register.into());
            }
        }
    }

    /// Whether `key` in `mode` opens `first`, the first encrypted batch of a
    /// direction (without changing any state).
    #[cfg(test)]
    pub(crate) fn opens(key: [u8; 32], mode: Mode, first: &[u8]) -> bool {
        Decryptor::new(key, mode).decrypt(first).is_some()
    }
}

/// The first 8 bytes of SHA-256(counter as u64 LE ‖ plaintext ‖ key).
pub(crate) fn checksum(counter: u64, plaintext: &[u8], key: &[u8; 32]) -> [u8; CHECKSUM_LEN] {
    let mut h = Sha256::new();
    h.update(counter.to_le_bytes());
    h.update(plaintext);
    h.update(key);
    let d = h.finalize();
    let mut out = [0u8; CHECKSUM_LEN];
    out.copy_from_slice(&d[..CHECKSUM_LEN]);
    out
}

impl Clone for Decryptor {
    /// The same key, mode, counter and stream position.
    fn clone(&self) -> Self {
        Decryptor::at(self.key, self.mode, self.at, self.counter)
    }
}

/// One direction's encryption, as a peer does it: the stream and the
/// checksum counter (for tests, and for peers that speak Bedrock).
pub(crate) struct Encryptor {
    key: [u8; 32],
    mode: Mode,
    stream: EncStream,
    counter: u64,
    at: StreamPosition,
}

impl Clone for Encryptor {
    /// The same key, mode, counter and stream position.
    fn clone(&self) -> Self {
        Encryptor::at(self.key, self.mode, self.at, self.counter)
    }
}

enum EncStream {
    Ctr(Box<ctr::Ctr128BE<aes::Aes256>>),
    Cfb8(Box<cfb8::Encryptor<aes::Aes256>>),
}

impl Encryptor {
    pub(crate) fn new(key: [u8; 32], mode: Mode) -> Self {
        Encryptor::at(key, mode, StreamPosition::new(iv(&key, mode)), 0)
    }

    fn at(key: [u8; 32], mode: Mode, at: StreamPosition, counter: u64) -> Self {
        let stream = match mode {
            Mode::Ctr => EncStream::Ctr(at.ctr(&key)),
            Mode::Cfb8 => EncStream::Cfb8(Box::new(cfb8::Encryptor::new(
                &key.into(),
                &at.register.into(),
            ))),
        };
        Encryptor {
            key,
            mode,
            stream,
            counter,
            at,
        }
    }

    /// A batch body (after 0xFE) with its checksum, encrypted.
    pub(crate) fn seal(&mut self, plaintext: &[u8]) -> Vec<u8> {
        use aes::cipher::BlockModeEncrypt;
        let mut buf = plaintext.to_vec();
        buf.extend_from_slice(&checksum(self.counter, plaintext, &self.key));
        self.counter += 1;
        match &mut self.stream {
            EncStream::Ctr(c) => c.apply_keystream(&mut buf),
            EncStream::Cfb8(c) => {
                for b in buf.iter_mut() {
                    let mut block = [*b].into();
                    c.encrypt_block(&mut block);
                    *b = block[0];
                }
            }
        }
        self.at.advance(&buf);
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream moved past batches without decrypting them decrypts the
    /// next as the stream that decrypted them does, in both modes.
    #[test]
    fn a_stream_skipped_past_batches_opens_the_next() {
        for mode in [Mode::Ctr, Mode::Cfb8] {
            let key = [7u8; 32];
            let mut enc = Encryptor::new(key, mode);
            let batches: Vec<Vec<u8>> = [&b"one"[..], &[9; 40], b"", &[1; 17]]
                .iter()
                .map(|p| enc.seal(p))
                .collect();
            let (mut read, mut skipped) = (Decryptor::new(key, mode), Decryptor::new(key, mode));
            for (i, b) in batches.iter().enumerate() {
                let mut copy = skipped.clone();
                skipped.skip(b);
                let want = read.decrypt(b);
                assert!(want.is_some(), "{mode:?} batch {i}");
                assert_eq!(copy.decrypt(b), want, "{mode:?} batch {i}");
            }
            let next = enc.seal(b"next");
            assert_eq!(
                skipped.decrypt(&next).as_deref(),
                Some(&b"next"[..]),
                "{mode:?}"
            );
        }
    }

    fn key() -> [u8; 32] {
        core::array::from_fn(|i| i as u8)
    }

    #[test]
    fn a_copy_goes_on_where_the_stream_stood() {
        for mode in [Mode::Ctr, Mode::Cfb8] {
            let mut e = Encryptor::new(key(), mode);
            let mut d = Decryptor::new(key(), mode);
            // Batches shorter and longer than CFB8's 16-byte register.
            for (i, n) in [3usize, 40, 7, 16, 1, 33].into_iter().enumerate() {
                let plain: Vec<u8> = (0..n).map(|j| (i * 31 + j) as u8).collect();
                let (mut e2, mut d2) = (e.clone(), d.clone());
                let sealed = e.seal(&plain);
                assert_eq!(e2.seal(&plain), sealed, "{mode:?} batch {i}");
                assert_eq!(d2.decrypt(&sealed).as_deref(), Some(&plain[..]));
                assert_eq!(d.decrypt(&sealed).as_deref(), Some(&plain[..]));
            }
        }
    }

    #[test]
    fn the_ciphers_agree_with_openssl() {
        // printf 'hello world, this is ctr!' | openssl enc -aes-256-ctr
        //   -K 000102…1f -iv 000102030405060708090a0b00000002 | xxd -p
        let mut c = Decryptor::new(key(), Mode::Ctr);
        let mut b =
            crate::wire::cursor::parse_hex("2f67ba77aac5b574ff2df3a7919d1004f0f6ee47d0182b0e19")
                .unwrap();
        c.apply(&mut b);
        assert_eq!(b, b"hello world, this is ctr!");
        // … | openssl enc -aes-256-cfb8 -K 000102…1f -iv 000102…0f
        let mut c = Decryptor::new(key(), Mode::Cfb8);
        let mut b =
            crate::wire::cursor::parse_hex("3206c5baf3bcd419d6e753a9738d388afd305364ef06c3e295")
                .unwrap();
        c.apply(&mut b);
        assert_eq!(b, b"hello world, this is cfb8");
    }

    #[test]
    fn checksums_tell_right_keys_from_wrong_ones() {
        for mode in [Mode::Ctr, Mode::Cfb8] {
            let mut enc = Encryptor::new(key(), mode);
            let sealed = enc.seal(b"\x00batch body");
            let second = enc.seal(b"\x00two");
            assert!(Decryptor::opens(key(), mode, &sealed));
            let mut wrong = key();
            wrong[31] ^= 1;
            assert!(!Decryptor::opens(wrong, mode, &sealed));
            let mut d = Decryptor::new(key(), mode);
            assert_eq!(d.decrypt(&sealed).as_deref(), Some(&b"\x00batch body"[..]));
            assert_eq!(d.decrypt(&second).as_deref(), Some(&b"\x00two"[..]));
            assert_eq!(d.counter, 2);
            // Too short to hold a checksum.
            assert_eq!(Decryptor::new(key(), mode).decrypt(&[1, 2, 3]), None);
        }
    }

    #[test]
    fn key_logs_and_private_keys() {
        let mut k = Keys::default();
        let hex32 = "00".repeat(31) + "01";
        let log = format!(
            "# comment\n\nBEDROCK_KEY {hex32}\nBEDROCK_SALT_KEY 0a0b {hex32}\nBEDROCK_SHARED_SECRET {}\nBEDROCK_NEW_THING x\nBEDROCK_KEY zz\n",
            "11".repeat(48)
        );
        let w = k.add_key_log(&log);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("line 6: BEDROCK_NEW_THING"));
        assert_eq!(
            (k.keys.len(), k.salt_keys.len(), k.secrets.len()),
            (1, 1, 1)
        );
        // The bound key comes first for its salt only.
        let c = k.candidates(&[0x0a, 0x0b], &[]);
        assert_eq!(
            c.len(),
            2,
            "bound and unbound are the same key: deduplicated"
        );
        assert_eq!(c[1], derive_key(&[0x0a, 0x0b], &[0x11; 48]));
        assert_eq!(k.candidates(&[1], &[]).len(), 2);
        // ECDH from either side's private key gives the same secret.
        let a = p384::SecretKey::from_slice(&[3u8; 48]).unwrap();
        let b = p384::SecretKey::from_slice(&[5u8; 48]).unwrap();
        let spki = |s: &p384::SecretKey| {
            use p384::pkcs8::EncodePublicKey;
            let der = s.public_key().to_public_key_der().unwrap();
            base64::engine::general_purpose::STANDARD.encode(der.as_bytes())
        };
        let ab = shared_secret(&a, &spki(&b)).unwrap();
        assert_eq!(Some(ab), shared_secret(&b, &spki(&a)));
        assert!(spki(&a).starts_with("MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAE"));
        assert_eq!(shared_secret(&a, "not base64!"), None);
        // Salts in base64 with or without padding.
        assert_eq!(decode_base64("AAEC"), Some(vec![0, 1, 2]));
        assert_eq!(decode_base64("AAE="), decode_base64("AAE"));
    }
}
