//! JSON Web Signatures with ES384 (RFC 7515, 7518 §3.4), as Bedrock's
//! tokens and NetherNet's identity assertions are signed: base64url (no
//! padding) of the header and of the payload, joined by a dot, signed with
//! a P-384 key; the signature is `r || s`, 48 bytes each.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use p384::ecdsa::signature::Signer;

/// The compact JWS `header.payload.signature` of `payload` under `header`
/// (its JSON text as given).
pub(crate) fn es384(key: &p384::SecretKey, header: &str, payload: &[u8]) -> String {
    let signing = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header),
        URL_SAFE_NO_PAD.encode(payload)
    );
    let sig: p384::ecdsa::Signature = p384::ecdsa::SigningKey::from(key).sign(signing.as_bytes());
    format!("{signing}.{}", URL_SAFE_NO_PAD.encode(sig.to_bytes()))
}

/// [`es384`] with the payload detached (RFC 7515 appendix F):
/// `header..signature`, the payload left to the reader to supply.
pub(crate) fn es384_detached(key: &p384::SecretKey, header: &str, payload: &[u8]) -> String {
    let jws = es384(key, header, payload);
    let mut parts = jws.split('.');
    let (h, _, s) = (parts.next(), parts.next(), parts.next());
    format!("{}..{}", h.unwrap_or_default(), s.unwrap_or_default())
}

/// `key` as a JWK (`kty` EC, `crv` P-384, `x`, `y`: base64url of the
/// coordinates), as NetherNet's `cpk` claims hold it.
pub(crate) fn jwk(key: &p384::PublicKey) -> serde_json::Value {
    use p384::pkcs8::EncodePublicKey;
    // A P-384 SubjectPublicKeyInfo ends with the uncompressed point,
    // 0x04 || x || y.
    let der = key.to_public_key_der();
    let point = der.as_ref().map_or(&[][..], |d| d.as_bytes());
    let xy = point
        .get(point.len().saturating_sub(96)..)
        .unwrap_or_default();
    let (x, y) = xy.split_at(xy.len() / 2);
    serde_json::json!({
        "kty": "EC",
        "crv": "P-384",
        "x": URL_SAFE_NO_PAD.encode(x),
        "y": URL_SAFE_NO_PAD.encode(y),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use p384::ecdsa::signature::Verifier;

    #[test]
    fn a_signature_verifies_and_the_detached_one_is_the_same() {
        let key = p384::SecretKey::from_slice(&[7; 48]).unwrap();
        let jws = es384(&key, r#"{"alg":"ES384"}"#, b"{\"a\":1}");
        let parts: Vec<&str> = jws.split('.').collect();
        assert_eq!(parts[0], "eyJhbGciOiJFUzM4NCJ9");
        let sig = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        let sig = p384::ecdsa::Signature::from_slice(&sig).unwrap();
        let vk = p384::ecdsa::VerifyingKey::from(&key.public_key());
        let signed = format!("{}.{}", parts[0], parts[1]);
        assert!(vk.verify(signed.as_bytes(), &sig).is_ok());
        assert!(vk.verify(b"other", &sig).is_err());
        let detached = es384_detached(&key, r#"{"alg":"ES384"}"#, b"{\"a\":1}");
        assert_eq!(detached, format!("{}..{}", parts[0], parts[2]));
        // The JWK's point is the key's.
        let j = jwk(&key.public_key());
        let mut sec1 = vec![4u8];
        for c in ["x", "y"] {
            let b = URL_SAFE_NO_PAD.decode(j[c].as_str().unwrap()).unwrap();
            assert_eq!(b.len(), 48);
            sec1.extend(b);
        }
        assert_eq!(
            p384::PublicKey::from_sec1_bytes(&sec1).unwrap(),
            key.public_key()
        );
    }
}
