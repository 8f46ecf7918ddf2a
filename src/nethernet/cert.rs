//! The DTLS certificate a NetherNet peer of ours presents: self-signed,
//! ECDSA P-256 with SHA-256 (what WebRTC stacks make), a fresh key for
//! each session from the operating system's randomness. The other side
//! checks it only against the SHA-256 our SDP names (`a=fingerprint`),
//! so it carries nothing but a name and a long validity. The DER is
//! written here (a handful of fixed shapes): the crates that build
//! certificates pull a second crypto library in.

use p256::ecdsa::signature::Signer;

use crate::random::{bytes as random, RandomError};

/// A certificate and its key.
#[derive(Clone)]
pub struct Cert {
    /// The certificate, DER.
    pub der: Vec<u8>,
    /// The private key, PKCS#8 DER (as the DTLS stack takes it).
    pub key_pkcs8: Vec<u8>,
}

impl std::fmt::Debug for Cert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cert")
            .field("fingerprint", &self.fingerprint())
            .finish_non_exhaustive()
    }
}

/// A DER element: tag, length, body.
fn der(tag: u8, body: &[u8]) -> Vec<u8> {
    let n = body.len();
    let mut out = vec![tag];
    match n {
        0..=0x7f => out.push(n as u8),
        0x80..=0xff => out.extend([0x81, n as u8]),
        _ => out.extend([0x82, (n >> 8) as u8, n as u8]),
    }
    out.extend_from_slice(body);
    out
}

fn seq(parts: &[&[u8]]) -> Vec<u8> {
    der(0x30, &parts.concat())
}

/// ecdsa-with-SHA256 (1.2.840.10045.4.3.2).
const ECDSA_SHA256: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
/// id-ecPublicKey (1.2.840.10045.2.1).
const EC_PUBLIC_KEY: &[u8] = &[0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
/// prime256v1 (1.2.840.10045.3.1.7).
const PRIME256V1: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
/// commonName (2.5.4.3).
const COMMON_NAME: &[u8] = &[0x06, 0x03, 0x55, 0x04, 0x03];

impl Cert {
    /// A fresh self-signed certificate named `name`.
    pub fn self_signed(name: &str) -> Result<Cert, RandomError> {
        let key = loop {
            if let Ok(k) = p256::ecdsa::SigningKey::from_slice(&random::<32>()?) {
                break k;
            }
        };
        let point = key.verifying_key().to_sec1_point(false);
        let mut serial = random::<16>()?;
        // Positive, and no leading zero byte.
        serial[0] = (serial[0] & 0x7f) | 0x40;
        let name = seq(&[&der(
            0x31,
            &seq(&[COMMON_NAME, &der(0x0c, name.as_bytes())]),
        )]);
        let alg = seq(&[ECDSA_SHA256]);
        let validity = seq(&[&der(0x17, b"250101000000Z"), &der(0x17, b"491231235959Z")]);
        let mut bits = vec![0u8];
        bits.extend_from_slice(point.as_bytes());
        let spki = seq(&[&seq(&[EC_PUBLIC_KEY, PRIME256V1]), &der(0x03, &bits)]);
        let version = [0xa0, 0x03, 0x02, 0x01, 0x02];
        let serial = der(0x02, &serial);
        let tbs = seq(&[&version, &serial, &alg, &name, &validity, &name, &spki]);
        let sig: p256::ecdsa::Signature = key.sign(&tbs);
        let mut sig_bits = vec![0u8];
        sig_bits.extend_from_slice(sig.to_der().as_bytes());
        let cert = seq(&[&tbs, &alg, &der(0x03, &sig_bits)]);
        // PrivateKeyInfo { 0, {id-ecPublicKey, prime256v1}, ECPrivateKey { 1, d } }.
        let ec_key = seq(&[&[0x02, 0x01, 0x01], &der(0x04, &key.to_bytes())]);
        let key_pkcs8 = seq(&[
            &[0x02, 0x01, 0x00],
            &seq(&[EC_PUBLIC_KEY, PRIME256V1]),
            &der(0x04, &ec_key),
        ]);
        Ok(Cert {
            der: cert,
            key_pkcs8,
        })
    }

    /// Its SHA-256 as `a=fingerprint:sha-256` writes it (`AB:CD:...`).
    pub fn fingerprint(&self) -> String {
        super::dtls::fingerprint(&self.der)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The certificate reads as one: the passive dissector's parser takes
    /// it from a Certificate message, and its signature verifies with the
    /// key inside it.
    #[test]
    fn a_certificate_made_here_is_one() {
        use p256::ecdsa::signature::Verifier;
        let c = Cert::self_signed("raknet-dissect").unwrap();
        let d = Cert::self_signed("raknet-dissect").unwrap();
        assert_ne!(c.fingerprint(), d.fingerprint());
        assert_eq!(c.fingerprint().len(), 95);
        // A Certificate handshake body: a 24-bit list length, each with
        // its own 24-bit length.
        let n = c.der.len() as u32;
        let mut body = (n + 3).to_be_bytes()[1..].to_vec();
        body.extend(&n.to_be_bytes()[1..]);
        body.extend(&c.der);
        let certs = crate::nethernet::dtls::certificates(&body).unwrap();
        assert_eq!(certs, [&c.der[..]]);
        // The element at `at`: where its body starts and ends.
        let element = |b: &[u8], at: usize| -> (usize, usize) {
            let (head, len) = match b[at + 1] {
                0x81 => (3, usize::from(b[at + 2])),
                0x82 => (4, usize::from(u16::from_be_bytes([b[at + 2], b[at + 3]]))),
                n => (2, usize::from(n)),
            };
            (at + head, at + head + len)
        };
        let (body, _) = element(&c.der, 0);
        let (_, tbs_end) = element(&c.der, body);
        let tbs = &c.der[body..tbs_end];
        let (_, alg_end) = element(&c.der, tbs_end);
        let (bits, _) = element(&c.der, alg_end);
        let point = &tbs[tbs.len() - 65..];
        let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(point).unwrap();
        let sig = p256::ecdsa::Signature::from_der(&c.der[bits + 1..]).unwrap();
        assert!(key.verify(tbs, &sig).is_ok());
    }
}
