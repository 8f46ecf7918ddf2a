//! The early game packets decoded by hand (docs/bedrock-protocol.md §2, §4): what a
//! person debugging a login needs, as JSON fields. Every length is checked
//! against what is there; skins and other blobs are never copied.

use serde_json::{json, Map, Value};

use super::body::Body;
use super::crypto::decode_base64;

/// Packet ids with a hand decoder.
pub(crate) const LOGIN: u16 = 1;
pub(crate) const PLAY_STATUS: u16 = 2;
pub(crate) const SERVER_TO_CLIENT_HANDSHAKE: u16 = 3;
pub(crate) const CLIENT_TO_SERVER_HANDSHAKE: u16 = 4;
pub(crate) const DISCONNECT: u16 = 5;
pub(crate) const NETWORK_SETTINGS: u16 = 143;
pub(crate) const REQUEST_NETWORK_SETTINGS: u16 = 193;

/// What a packet tells the game flow besides its fields.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Learned {
    /// The client's protocol (RequestNetworkSettings, Login).
    pub(crate) protocol: Option<u32>,
    /// NetworkSettings' algorithm (0 deflate, 1 snappy, 0xffff none).
    pub(crate) algorithm: Option<u16>,
    /// The ServerToClientHandshake's salt and the server's public key.
    pub(crate) salt: Option<Vec<u8>>,
    pub(crate) server_key: Option<String>,
    /// The Login's client public key, player name and game version.
    pub(crate) client_key: Option<String>,
    pub(crate) player: Option<String>,
    pub(crate) game_version: Option<String>,
    /// Leave the signatures unchecked (the `*_verifies` and
    /// `signature_valid` fields absent): for the commands that only count
    /// and name packets, as a check costs about 0.9 ms.
    pub(crate) unchecked: bool,
}

/// The names of PlayStatus values (md `packet_play_status`).
pub(crate) fn play_status_name(v: i32) -> Option<&'static str> {
    Some(match v {
        0 => "login_success",
        1 => "failed_client",
        2 => "failed_spawn",
        3 => "player_spawn",
        4 => "failed_invalid_tenant",
        5 => "failed_vanilla_edu",
        6 => "failed_edu_vanilla",
        7 => "failed_server_full",
        8 => "failed_editor_vanilla_mismatch",
        9 => "failed_vanilla_editor_mismatch",
        _ => return None,
    })
}

/// Device OS numbers of the client data (gophertunnel `os.go`).
pub(crate) fn device_os_name(v: i64) -> Option<&'static str> {
    Some(match v {
        1 => "Android",
        2 => "iOS",
        3 => "OSX",
        4 => "FireOS",
        5 => "GearVR",
        6 => "Hololens",
        7 => "Win10",
        8 => "Win32",
        9 => "Dedicated",
        10 => "tvOS",
        11 => "PlayStation",
        12 => "Switch",
        13 => "Xbox",
        14 => "WindowsPhone",
        15 => "Linux",
        _ => return None,
    })
}

/// Mojang's legacy root public key: the chain of an Xbox-authenticated
/// Login is signed by it (base64 DER SubjectPublicKeyInfo, P-384).
pub(crate) const MOJANG_ROOT_KEY: &str = "MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAECRXueJeTDqNRRgJi/vlRufByu/2G0i2Ebt6YMar5QX/R0DIIyrJMcUpruK4QveTfJSTp3Shlq4Gk34cD/4GUWwkv0DVuzeuB+tXija7HBxii03NHDbPAD0AKnLr2wdAp";

/// Signature checks remembered, at most (then forgotten all at once).
const VERIFIED_CACHE: usize = 4096;

/// Whether `token` (a JWT) carries a valid ES384 signature by `key` (base64
/// DER SubjectPublicKeyInfo).
///
/// A check costs about half a millisecond, and the same token is met again
/// and again: by each pass of `export` over the same captures, in every
/// Login of a player who reconnects with the day's chain. The answers are
/// remembered for the process, by the SHA-256 of token and key.
pub(crate) fn jwt_verifies(token: &str, key: &str) -> bool {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update((token.len() as u64).to_le_bytes());
    h.update(token);
    h.update(key);
    let id: [u8; 32] = h.finalize().into();
    let known = verified();
    if let Some(&ok) = known.lock().ok().as_ref().and_then(|m| m.get(&id)) {
        return ok;
    }
    let ok = check_jwt(token, key);
    if let Ok(mut m) = known.lock() {
        if m.len() >= VERIFIED_CACHE {
            m.clear();
        }
        m.insert(id, ok);
    }
    ok
}

/// The checks [`jwt_verifies`] remembers.
fn verified() -> &'static std::sync::Mutex<std::collections::HashMap<[u8; 32], bool>> {
    static KNOWN: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<[u8; 32], bool>>> =
        std::sync::OnceLock::new();
    KNOWN.get_or_init(Default::default)
}

/// Forgets the checks `jwt_verifies` remembered: a benchmark that
/// measures a capture's first reading calls it between iterations.
pub fn forget_verified() {
    if let Ok(mut m) = verified().lock() {
        m.clear();
    }
}

/// [`jwt_verifies`] without the memory: the ES384 check itself.
fn check_jwt(token: &str, key: &str) -> bool {
    use p384::ecdsa::{signature::Verifier, Signature, VerifyingKey};
    use p384::pkcs8::DecodePublicKey;
    let Some((signed, sig)) = token.rsplit_once('.') else {
        return false;
    };
    let public = decode_base64(key).and_then(|der| p384::PublicKey::from_public_key_der(&der).ok());
    let sig = decode_base64(sig).and_then(|s| Signature::from_slice(&s).ok());
    match (public, sig) {
        (Some(p), Some(s)) => VerifyingKey::from(p).verify(signed.as_bytes(), &s).is_ok(),
        _ => false,
    }
}

/// A Login chain checked as the servers check it: each JWT signed by the
/// key its predecessor names (`identityPublicKey`), the first by the key in
/// its own header (`x5u`). Returns whether the whole chain verifies and
/// whether Mojang's root key signed a link of it.
pub(crate) fn chain_verifies(chain: &[&str]) -> (bool, bool) {
    let mut signer: Option<String> = None;
    let (mut all, mut mojang) = (!chain.is_empty(), false);
    for jwt in chain {
        let Some((h, p)) = jwt_parts(jwt) else {
            return (false, mojang);
        };
        let key = signer
            .take()
            .or_else(|| h["x5u"].as_str().map(str::to_string));
        let ok = key.as_deref().is_some_and(|k| jwt_verifies(jwt, k));
        mojang |= ok && key.as_deref() == Some(MOJANG_ROOT_KEY);
        all &= ok;
        signer = p["identityPublicKey"].as_str().map(str::to_string);
    }
    (all, mojang)
}

/// A JWT's header and payload, as JSON (the signature is not checked here).
pub(crate) fn jwt_parts(token: &str) -> Option<(Value, Value)> {
    let mut it = token.split('.');
    let header = serde_json::from_slice(&decode_base64(it.next()?)?).ok()?;
    let payload = serde_json::from_slice(&decode_base64(it.next()?)?).ok()?;
    Some((header, payload))
}

/// Decodes the fields of packet `id` (`body`: after the header), for
/// `protocol` when known. `None` for ids without a hand decoder; fields
/// that do not decode end the object with an `error` key.
pub(crate) fn decode(
    id: u16,
    body: &[u8],
    protocol: Option<u32>,
    learned: &mut Learned,
) -> Option<Value> {
    let mut r = Body::new(body);
    let mut f = Map::new();
    let ok = match id {
        REQUEST_NETWORK_SETTINGS => r.i32_be().map(|p| {
            f.insert("client_protocol".into(), p.into());
            learned.protocol = u32::try_from(p).ok();
        }),
        NETWORK_SETTINGS => network_settings(&mut r, &mut f, learned),
        LOGIN => login(&mut r, &mut f, learned),
        PLAY_STATUS => r.i32_be().map(|s| {
            f.insert("status".into(), s.into());
            if let Some(n) = play_status_name(s) {
                f.insert("status_name".into(), n.into());
            }
        }),
        SERVER_TO_CLIENT_HANDSHAKE => r.string().and_then(|t| {
            let (h, p) = jwt_parts(t)?;
            let x5u = h["x5u"].as_str()?.to_string();
            let salt_b64 = p["salt"].as_str()?;
            let salt = decode_base64(salt_b64)?;
            f.insert("salt".into(), crate::wire::cursor::hex(&salt).into());
            f.insert("server_public_key".into(), x5u.clone().into());
            if !learned.unchecked {
                f.insert("signature_valid".into(), jwt_verifies(t, &x5u).into());
            }
            learned.salt = Some(salt);
            learned.server_key = Some(x5u);
            Some(())
        }),
        CLIENT_TO_SERVER_HANDSHAKE => Some(()),
        DISCONNECT => disconnect(&mut r, &mut f, protocol),
        _ => super::packets::decode(id, &mut r, &mut f, protocol)?,
    };
    if ok.is_none() {
        f.insert(
            "error".into(),
            format!("cut short or malformed at byte {}", r.pos).into(),
        );
    }
    Some(Value::Object(f))
}

fn network_settings(r: &mut Body, f: &mut Map<String, Value>, learned: &mut Learned) -> Option<()> {
    // 1.16.201 to 1.19.21 had the threshold only, big-endian.
    if r.rest() == 2 {
        let b = r.take(2)?;
        f.insert(
            "compression_threshold".into(),
            u16::from_be_bytes([b[0], b[1]]).into(),
        );
        return Some(());
    }
    f.insert("compression_threshold".into(), r.u16_le()?.into());
    let algorithm = r.u16_le()?;
    learned.algorithm = Some(algorithm);
    f.insert("compression_algorithm".into(), algorithm.into());
    let name = match algorithm {
        0 => "deflate",
        1 => "snappy",
        0xffff => "none",
        _ => "unknown",
    };
    f.insert("compression".into(), name.into());
    f.insert("client_throttle".into(), (r.u8()? != 0).into());
    f.insert("client_throttle_threshold".into(), r.u8()?.into());
    let scalar = r.f32_le()?;
    f.insert("client_throttle_scalar".into(), json!(scalar));
    Some(())
}

fn login(r: &mut Body, f: &mut Map<String, Value>, learned: &mut Learned) -> Option<()> {
    let protocol = r.i32_be()?;
    f.insert("protocol".into(), protocol.into());
    learned.protocol = u32::try_from(protocol).ok();
    let len = r.varu32()? as usize;
    let blob = r.take(len)?;
    let mut b = Body::new(blob);
    let n = b.u32_le()? as usize;
    let identity = std::str::from_utf8(b.take(n)?).ok()?;
    let n = b.u32_le()? as usize;
    let client = std::str::from_utf8(b.take(n)?).ok()?;
    let identity: Value = serde_json::from_str(identity).ok()?;
    // 1.21.90 on: the chain is a string inside Certificate, beside a Token.
    let chain_holder = match identity.get("Certificate").and_then(Value::as_str) {
        Some(cert) => {
            if let Some(t) = identity.get("AuthenticationType") {
                f.insert("authentication_type".into(), t.clone());
            }
            serde_json::from_str(cert).ok()?
        }
        None => identity.clone(),
    };
    // bedrock-protocol's offline logins of 1.26.10 on carry `[""]`.
    let chain: Vec<&str> = chain_holder["chain"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .filter(|t| !t.is_empty())
                .collect()
        })
        .unwrap_or_default();
    f.insert("chain_length".into(), chain.len().into());
    if !chain.is_empty() && !learned.unchecked {
        let (verifies, mojang) = chain_verifies(&chain);
        f.insert("chain_verifies".into(), verifies.into());
        f.insert("signed_by_mojang".into(), mojang.into());
    }
    let mut identity_fields = Map::new();
    for jwt in &chain {
        let Some((_, p)) = jwt_parts(jwt) else {
            continue;
        };
        if let Some(extra) = p.get("extraData").and_then(Value::as_object) {
            for (from, to) in [
                ("displayName", "display_name"),
                ("XUID", "xuid"),
                ("identity", "identity"),
                ("titleId", "title_id"),
            ] {
                if let Some(v) = extra.get(from) {
                    identity_fields.insert(to.into(), v.clone());
                }
            }
        }
        if let Some(k) = p.get("identityPublicKey").and_then(Value::as_str) {
            learned.client_key = Some(k.to_string());
        }
    }
    // The OIDC token of 1.21.90 on names the player too.
    if let Some(token) = identity
        .get("Token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    {
        if let Some((_, p)) = jwt_parts(token) {
            for (from, to) in [("xname", "display_name"), ("xid", "xuid")] {
                if let Some(v) = p.get(from) {
                    identity_fields.entry(to).or_insert_with(|| v.clone());
                }
            }
            if let Some(k) = p.get("cpk").and_then(Value::as_str) {
                learned.client_key = Some(k.to_string());
                // A self-signed (offline) token is ES384 by its own key; the
                // services' RS256 tokens need their published keys.
                if !learned.unchecked && jwt_parts(token).is_some_and(|(h, _)| h["alg"] == "ES384")
                {
                    f.insert("token_verifies".into(), jwt_verifies(token, k).into());
                }
            }
        }
    }
    if let Some(k) = &learned.client_key {
        identity_fields.insert("client_public_key".into(), k.clone().into());
    }
    learned.player = identity_fields
        .get("display_name")
        .and_then(Value::as_str)
        .map(str::to_string);
    f.extend(identity_fields);
    if let Some((h, p)) = jwt_parts(client) {
        if learned.client_key.is_none() {
            learned.client_key = h["x5u"].as_str().map(str::to_string);
        }
        let c = &mut *f;
        for (from, to) in [
            ("GameVersion", "game_version"),
            ("DeviceModel", "device_model"),
            ("LanguageCode", "language"),
            ("ServerAddress", "server_address"),
            ("ThirdPartyName", "third_party_name"),
        ] {
            if let Some(v) = p.get(from) {
                c.insert(to.into(), v.clone());
            }
        }
        if let Some(os) = p.get("DeviceOS").and_then(Value::as_i64) {
            c.insert("device_os".into(), os.into());
            if let Some(n) = device_os_name(os) {
                c.insert("device_os_name".into(), n.into());
            }
        }
        learned.game_version = c
            .get("game_version")
            .and_then(Value::as_str)
            .map(str::to_string);
    }
    Some(())
}

fn disconnect(r: &mut Body, f: &mut Map<String, Value>, protocol: Option<u32>) -> Option<()> {
    // 1.20.40 (622) on: a reason first (zigzag32 DisconnectFailReason).
    if protocol.is_some_and(|p| p >= 622) {
        f.insert("reason".into(), r.zigzag32()?.into());
    }
    let hide = r.u8()? != 0;
    f.insert("hide_disconnect_reason".into(), hide.into());
    // 1.21.20 (712) on: no message when hidden, then a filtered message.
    if protocol.is_some_and(|p| p >= 712) && hide {
        return Some(());
    }
    f.insert("message".into(), r.string()?.into());
    if protocol.is_some_and(|p| p >= 712) {
        f.insert("filtered_message".into(), r.string()?.into());
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn b64url(v: &Value) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    }

    fn jwt(header: Value, payload: Value) -> String {
        format!("{}.{}.sig", b64url(&header), b64url(&payload))
    }

    fn string(s: &str) -> Vec<u8> {
        let mut b = Vec::new();
        super::super::batch::write_varu32(&mut b, s.len() as u32);
        b.extend_from_slice(s.as_bytes());
        b
    }

    /// An ES384 JWT signed by `key` (JOSE r‖s signature).
    fn signed(key: &p384::SecretKey, header: Value, payload: Value) -> String {
        use p384::ecdsa::{signature::Signer, Signature, SigningKey};
        let input = format!("{}.{}", b64url(&header), b64url(&payload));
        let sig: Signature = SigningKey::from(key).sign(input.as_bytes());
        let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sig.to_bytes());
        format!("{input}.{sig}")
    }

    fn spki(key: &p384::SecretKey) -> String {
        use p384::pkcs8::EncodePublicKey;
        let der = key.public_key().to_public_key_der().unwrap();
        base64::engine::general_purpose::STANDARD.encode(der.as_bytes())
    }

    #[test]
    fn signatures_and_chains_verify_and_tampering_shows() {
        let (a, b) = (
            p384::SecretKey::from_slice(&[3u8; 48]).unwrap(),
            p384::SecretKey::from_slice(&[5u8; 48]).unwrap(),
        );
        let first = signed(
            &a,
            json!({"alg": "ES384", "x5u": spki(&a)}),
            json!({"identityPublicKey": spki(&b)}),
        );
        let second = signed(
            &b,
            json!({"alg": "ES384", "x5u": spki(&b)}),
            json!({"identityPublicKey": spki(&a)}),
        );
        assert!(jwt_verifies(&first, &spki(&a)));
        assert!(!jwt_verifies(&first, &spki(&b)));
        assert_eq!(chain_verifies(&[&first, &second]), (true, false));
        // The second link signed by the wrong key; a payload changed.
        let forged = signed(
            &a,
            json!({"alg": "ES384"}),
            json!({"identityPublicKey": spki(&a)}),
        );
        assert_eq!(chain_verifies(&[&first, &forged]), (false, false));
        let (h, _) = first.split_once('.').unwrap();
        let sig = first.rsplit_once('.').unwrap().1;
        let tampered = format!("{h}.{}.{sig}", b64url(&json!({"identityPublicKey": "x"})));
        assert!(!jwt_verifies(&tampered, &spki(&a)));
        assert_eq!(chain_verifies(&[]), (false, false));
        assert!(!jwt_verifies("not a jwt", MOJANG_ROOT_KEY));
    }

    #[test]
    fn request_and_network_settings() {
        let mut l = Learned::default();
        let f = decode(
            REQUEST_NETWORK_SETTINGS,
            &766i32.to_be_bytes(),
            None,
            &mut l,
        )
        .unwrap();
        assert_eq!(f["client_protocol"], 766);
        assert_eq!(l.protocol, Some(766));
        let mut b = Vec::new();
        b.extend_from_slice(&512u16.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&0f32.to_le_bytes());
        let f = decode(NETWORK_SETTINGS, &b, Some(766), &mut l).unwrap();
        assert_eq!(f["compression"], "snappy");
        assert_eq!(f["compression_threshold"], 512);
        assert_eq!(l.algorithm, Some(1));
        // Cut short: the fields so far and where it stopped.
        let f = decode(NETWORK_SETTINGS, &b[..3], Some(766), &mut l).unwrap();
        assert!(f["error"].as_str().unwrap().contains("byte 2"), "{f}");
    }

    #[test]
    fn login_old_chain_and_new_certificate_forms() {
        let key = "MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEclient";
        let chain_jwt = jwt(
            json!({"alg": "ES384", "x5u": key}),
            json!({"extraData": {"displayName": "Steve", "XUID": "", "identity": "u-u-i-d", "titleId": "896928775"}, "identityPublicKey": key}),
        );
        let client = jwt(
            json!({"alg": "ES384", "x5u": key}),
            json!({"GameVersion": "1.21.90", "DeviceOS": 7, "DeviceModel": "PC", "LanguageCode": "en_US", "ServerAddress": "127.0.0.1:19132", "SkinData": "AAAA"}),
        );
        for identity in [
            json!({"chain": [chain_jwt.clone()]}).to_string(),
            json!({"AuthenticationType": 2, "Certificate": json!({"chain": [chain_jwt.clone()]}).to_string(), "Token": ""}).to_string(),
        ] {
            let mut blob = Vec::new();
            blob.extend_from_slice(&(identity.len() as u32).to_le_bytes());
            blob.extend_from_slice(identity.as_bytes());
            blob.extend_from_slice(&(client.len() as u32).to_le_bytes());
            blob.extend_from_slice(client.as_bytes());
            let mut b = 818i32.to_be_bytes().to_vec();
            super::super::batch::write_varu32(&mut b, blob.len() as u32);
            b.extend_from_slice(&blob);
            let mut l = Learned::default();
            let f = decode(LOGIN, &b, None, &mut l).unwrap();
            assert_eq!(f["protocol"], 818);
            assert_eq!(f["display_name"], "Steve");
            assert_eq!(f["title_id"], "896928775");
            assert_eq!(f["game_version"], "1.21.90");
            assert_eq!(f["device_os_name"], "Win10");
            assert!(f.get("SkinData").is_none() && f.get("error").is_none(), "{f}");
            assert_eq!(l.client_key.as_deref(), Some(key));
            assert_eq!(l.player.as_deref(), Some("Steve"));
        }
    }

    #[test]
    fn play_status_handshake_and_disconnect_by_version() {
        let mut l = Learned::default();
        let f = decode(PLAY_STATUS, &1i32.to_be_bytes(), None, &mut l).unwrap();
        assert_eq!(f["status_name"], "failed_client");
        let token = jwt(
            json!({"alg": "ES384", "x5u": "MHYserver"}),
            json!({"salt": "AAECAwQFBgcICQoLDA0ODw"}),
        );
        let f = decode(SERVER_TO_CLIENT_HANDSHAKE, &string(&token), None, &mut l).unwrap();
        assert_eq!(f["salt"], "000102030405060708090a0b0c0d0e0f");
        assert_eq!(l.server_key.as_deref(), Some("MHYserver"));
        // 1.19 (no reason), 1.20.40 (reason), 1.21.20 hidden and shown.
        let mut old = vec![0];
        old.extend(string("bye"));
        assert_eq!(
            decode(DISCONNECT, &old, Some(560), &mut l).unwrap()["message"],
            "bye"
        );
        let mut mid = vec![4, 0];
        mid.extend(string("kicked"));
        let f = decode(DISCONNECT, &mid, Some(630), &mut l).unwrap();
        assert_eq!(
            (f["reason"].as_i64(), f["message"].as_str()),
            (Some(2), Some("kicked"))
        );
        let f = decode(DISCONNECT, &[4, 1], Some(800), &mut l).unwrap();
        assert!(
            f.get("message").is_none() && f.get("error").is_none(),
            "{f}"
        );
        let mut new = vec![4, 0];
        new.extend(string("a"));
        new.extend(string("b"));
        assert_eq!(
            decode(DISCONNECT, &new, Some(800), &mut l).unwrap()["filtered_message"],
            "b"
        );
        assert_eq!(decode(0x81, &[], None, &mut l), None);
    }
}
