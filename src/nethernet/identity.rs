//! The identity assertions of NetherNet's SDPs (`a=identity`, after RFC
//! 8827 §5): who joined and who answered, read from a capture without any
//! key.
//!
//! The attribute is base64 of `{"idp": {"domain", "protocol"},
//! "assertion": "<JSON text>"}`; the assertion holds a `token` (a JWT: the
//! player's GameServerToken from the auth service in the offer, the
//! operator's self-signed one in the answer, each with a `cpk` claim, a
//! P-384 public key) and `fingerprints`, a detached JWS
//! (`header..signature`) by the `cpk` key over the canonical JSON of the
//! SDP's `a=fingerprint` lines: `{"fingerprint":[{"algorithm":..,
//! "digest":..}]}`, keys sorted, no whitespace. A valid one proves the
//! token's holder made the DTLS certificate the SDP names.

use base64::Engine as _;
use p384::ecdsa::signature::Verifier;
use serde_json::Value;

use super::sdp::Sdp;

/// What an `a=identity` says, and what checks of it found.
#[derive(Debug, Clone, PartialEq)]
pub struct Assertion {
    /// `idp.domain`: the auth service's, or the operator's own (`self`).
    pub domain: Option<String>,
    /// The token's header and claims, as JSON.
    pub header: Value,
    /// The token's claims (`xid`, `xname`, `pfid`, `cpk`, ...).
    pub claims: Value,
    /// Whether the fingerprints JWS verifies with the token's `cpk` over
    /// the SDP's fingerprints; `None` when there is no usable `cpk`.
    pub fingerprints_verify: Option<bool>,
    /// Whether the token verifies with its own `cpk` (a self-signed token:
    /// the operator's, an offline player's); `false` for a token the auth
    /// service signed (its key is not in the capture), `None` without a
    /// `cpk`.
    pub self_signed: Option<bool>,
}

/// Why an `a=identity` was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    #[error("a=identity is not base64 of JSON")]
    /// Not base64 of a JSON object.
    Envelope,
    #[error("a=identity has no assertion, or it is not JSON with a token and fingerprints")]
    /// No assertion, or not JSON with a token and fingerprints.
    Assertion,
    #[error("the assertion's token is not a JWT")]
    /// A token that is not three base64url parts of JSON.
    Token,
}

/// The `a=identity` of `sdp`, decoded and checked; `None` when it has
/// none.
pub fn of(sdp: &Sdp) -> Option<Result<Assertion, IdentityError>> {
    Some(decode(sdp.identity.as_deref()?, sdp))
}

fn b64(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    let engines = [
        &base64::engine::general_purpose::STANDARD,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        &base64::engine::general_purpose::URL_SAFE,
        &base64::engine::general_purpose::STANDARD_NO_PAD,
    ];
    engines.iter().find_map(|e| e.decode(s).ok())
}

/// The attribute's value `text` in `sdp`.
pub fn decode(text: &str, sdp: &Sdp) -> Result<Assertion, IdentityError> {
    let envelope: Value = b64(text)
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or(IdentityError::Envelope)?;
    let assertion: Value = envelope["assertion"]
        .as_str()
        .and_then(|a| serde_json::from_str(a).ok())
        .ok_or(IdentityError::Assertion)?;
    let (Some(token), Some(jws)) = (
        assertion["token"].as_str(),
        assertion["fingerprints"].as_str(),
    ) else {
        return Err(IdentityError::Assertion);
    };
    let mut parts = token.split('.');
    let (Some(h), Some(c), Some(sig), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(IdentityError::Token);
    };
    let json = |p: &str| b64(p).and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    let (Some(header), Some(claims)) = (json(h), json(c)) else {
        return Err(IdentityError::Token);
    };
    let key = cpk(&claims["cpk"]);
    let self_signed = key
        .as_ref()
        .map(|k| header["alg"] == "ES384" && es384(k, &format!("{h}.{c}"), sig));
    let fingerprints_verify = key.as_ref().map(|k| {
        let mut p = jws.split('.');
        match (p.next(), p.next(), p.next(), p.next()) {
            (Some(fh), Some(""), Some(fs), None) => {
                let payload = canonical_fingerprints(sdp);
                let signing = format!(
                    "{fh}.{}",
                    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload)
                );
                es384(k, &signing, fs)
            }
            _ => false,
        }
    });
    Ok(Assertion {
        domain: envelope["idp"]["domain"].as_str().map(str::to_string),
        header,
        claims,
        fingerprints_verify,
        self_signed,
    })
}

/// The canonical JSON of an SDP's fingerprints, as the JWS signs it.
pub fn canonical_fingerprints(sdp: &Sdp) -> String {
    let items: Vec<String> = sdp
        .fingerprints
        .iter()
        .map(|(a, d)| {
            format!(
                "{{\"algorithm\":{},\"digest\":{}}}",
                Value::String(a.clone()),
                Value::String(d.clone())
            )
        })
        .collect();
    format!("{{\"fingerprint\":[{}]}}", items.join(","))
}

/// What `sdp`'s `a=identity` says, checked, in words: `fingerprints
/// signed, token self-signed, domain D, name N` (or what is wrong).
pub fn summary(sdp: &Sdp) -> String {
    match of(sdp) {
        None => "none (no a=identity)".to_string(),
        Some(Err(e)) => format!("unreadable: {e}"),
        Some(Ok(a)) => {
            let fingerprints = match a.fingerprints_verify {
                Some(true) => "signed",
                Some(false) => "NOT signed by its key",
                None => "unchecked (no cpk)",
            };
            let token = match a.self_signed {
                Some(true) => "self-signed",
                Some(false) => "signed by another key",
                None => "without cpk",
            };
            let mut s = format!(
                "fingerprints {fingerprints}, token {token}, domain {}",
                a.domain.as_deref().unwrap_or("-")
            );
            if let Some(n) = a.claims["xname"].as_str() {
                s.push_str(&format!(", name {n}"));
            }
            s
        }
    }
}

/// Seconds since the Unix epoch, for a token's `iat` and `exp`.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The value of an `a=identity` line asserting `sdp`'s fingerprints:
/// the envelope (`idp` with `domain`, protocol `default`) of `token` (a
/// JWT whose `cpk` claim is `key`'s public half) and a detached ES384 JWS
/// by `key` over the fingerprints' canonical JSON.
pub fn attribute(key: &p384::SecretKey, token: &str, domain: &str, sdp: &Sdp) -> String {
    let fingerprints = canonical_fingerprints(sdp);
    let jws = crate::wire::jws::es384_detached(key, r#"{"alg":"ES384"}"#, fingerprints.as_bytes());
    let assertion = serde_json::json!({"fingerprints": jws, "token": token}).to_string();
    let envelope = serde_json::json!({
        "assertion": assertion,
        "idp": {"domain": domain, "protocol": "default"},
    });
    base64::engine::general_purpose::STANDARD.encode(envelope.to_string())
}

/// A token for [`attribute`]: an ES384 JWT of `claims` with `key`'s
/// public half added as `cpk`, signed by `key` (self-signed, as an
/// operator's and an offline player's are), its header `alg` and
/// `header_extra`'s members.
pub fn self_signed_token(
    key: &p384::SecretKey,
    header_extra: serde_json::Map<String, Value>,
    mut claims: serde_json::Map<String, Value>,
) -> String {
    let mut header = serde_json::Map::new();
    header.insert("alg".into(), "ES384".into());
    header.extend(header_extra);
    claims.insert("cpk".into(), crate::wire::jws::jwk(&key.public_key()));
    let claims = Value::Object(claims).to_string();
    crate::wire::jws::es384(key, &Value::Object(header).to_string(), claims.as_bytes())
}

/// A `cpk` claim as a P-384 key: a JWK (`kty` EC, `crv` P-384, `x`, `y`)
/// or a base64 DER SubjectPublicKeyInfo.
fn cpk(v: &Value) -> Option<p384::PublicKey> {
    match v {
        Value::Object(_) => {
            if v["kty"] != "EC" || v["crv"] != "P-384" {
                return None;
            }
            let (x, y) = (b64(v["x"].as_str()?)?, b64(v["y"].as_str()?)?);
            if x.len() != 48 || y.len() != 48 {
                return None;
            }
            let mut sec1 = vec![4u8];
            sec1.extend(x);
            sec1.extend(y);
            p384::PublicKey::from_sec1_bytes(&sec1).ok()
        }
        Value::String(s) => {
            use p384::pkcs8::DecodePublicKey;
            p384::PublicKey::from_public_key_der(&b64(s)?).ok()
        }
        _ => None,
    }
}

/// Whether `sig` (base64url of r‖s) is `key`'s ES384 signature of `signed`.
fn es384(key: &p384::PublicKey, signed: &str, sig: &str) -> bool {
    let Some(sig) = b64(sig).and_then(|s| p384::ecdsa::Signature::from_slice(&s).ok()) else {
        return false;
    };
    p384::ecdsa::VerifyingKey::from(key)
        .verify(signed.as_bytes(), &sig)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sdp_of(side: &str, kind: &str) -> Sdp {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/samples/nethernet-join.truth.jsonl"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let r: Value = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|r| r["type"] == "sdp" && r["side"] == side && r["kind"] == kind)
            .unwrap();
        Sdp::parse(r["sdp"].as_str().unwrap()).unwrap()
    }

    /// The assertions the aiortc peers of samples/nethernet-join made
    /// (and each verified with Python's `cryptography`).
    #[test]
    fn the_sample_joins_assertions_verify() {
        let offer = sdp_of("client", "offer");
        let a = of(&offer).unwrap().unwrap();
        assert_eq!(a.domain.as_deref(), Some("offline.raknet-dissect.invalid"));
        assert_eq!(a.claims["xname"], "Steve");
        assert_eq!(
            (a.fingerprints_verify, a.self_signed),
            (Some(true), Some(true))
        );
        let answer = sdp_of("server", "answer");
        let b = of(&answer).unwrap().unwrap();
        assert_eq!(b.domain.as_deref(), Some("self"));
        assert_eq!(b.fingerprints_verify, Some(true));
        // The offer's assertion over the answer's fingerprints: no.
        let moved = decode(offer.identity.as_deref().unwrap(), &answer).unwrap();
        assert_eq!(moved.fingerprints_verify, Some(false));
        // A fingerprint changed by a character: no.
        let mut tampered = offer.clone();
        tampered.fingerprints[0].1.replace_range(0..1, "0");
        assert_eq!(
            of(&tampered).unwrap().unwrap().fingerprints_verify,
            Some(false)
        );
        assert_eq!(decode("not base64!", &offer), Err(IdentityError::Envelope));
    }

    /// An assertion made here reads back as verified, self-signed, with
    /// its claims; over other fingerprints it does not verify.
    #[test]
    fn an_assertion_made_here_verifies() {
        let key = p384::SecretKey::from_slice(&[9; 48]).unwrap();
        let mut claims = serde_json::Map::new();
        claims.insert("xname".into(), "Steve".into());
        claims.insert("offline".into(), true.into());
        let token = self_signed_token(&key, Default::default(), claims);
        let offer = sdp_of("client", "offer");
        let a = attribute(&key, &token, "offline.invalid", &offer);
        let got = decode(&a, &offer).unwrap();
        assert_eq!(got.domain.as_deref(), Some("offline.invalid"));
        assert_eq!(
            (
                got.claims["xname"].as_str(),
                got.claims["offline"].as_bool()
            ),
            (Some("Steve"), Some(true))
        );
        assert_eq!(
            (got.fingerprints_verify, got.self_signed),
            (Some(true), Some(true))
        );
        assert_eq!(got.header["alg"], "ES384");
        let other = decode(&a, &sdp_of("server", "answer")).unwrap();
        assert_eq!(other.fingerprints_verify, Some(false));
    }
}
