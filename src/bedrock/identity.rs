//! The keys and tokens a Bedrock peer makes: a fresh P-384 key, ES384 JWTs
//! signed with it (header `x5u`: the public key, base64 DER), the offline
//! Login of each generation (docs/bedrock-protocol.md §4.1: a self-signed chain up
//! to 1.21.80, inside the Certificate/Token object from 1.21.90, a
//! self-signed token from 1.26.10 as bedrock-protocol makes it), and the
//! server's handshake JWT with its salt.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use p384::pkcs8::EncodePublicKey;
use serde_json::{json, Value};

use crate::random::{bytes as random, RandomError};

/// A P-384 key and its public half as Bedrock writes it.
#[derive(Clone)]
pub struct KeyPair {
    pub(crate) secret: p384::SecretKey,
    /// Base64 of the DER SubjectPublicKeyInfo (`MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAE…`).
    pub(crate) public: String,
}

impl KeyPair {
    /// A fresh key, from the operating system's randomness.
    pub fn generate() -> Result<Self, RandomError> {
        loop {
            if let Ok(secret) = p384::SecretKey::from_slice(&random::<48>()?) {
                return Ok(KeyPair::from_secret(secret));
            }
        }
    }

    pub(crate) fn from_secret(secret: p384::SecretKey) -> Self {
        let public = secret
            .public_key()
            .to_public_key_der()
            .map(|d| STANDARD.encode(d.as_bytes()))
            .unwrap_or_default();
        KeyPair { secret, public }
    }

    /// The key kept in `path` (PKCS#8 PEM), or a fresh one written there
    /// (readable by its owner only) when the file does not exist: an
    /// operator's long-lived key, which clients can pin.
    pub fn load_or_create(path: &std::path::Path) -> std::io::Result<KeyPair> {
        use p384::pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};
        match std::fs::read_to_string(path) {
            Ok(text) => p384::SecretKey::from_pkcs8_pem(&text)
                .map(KeyPair::from_secret)
                .map_err(|e| std::io::Error::other(format!("not a P-384 PKCS#8 PEM key: {e}"))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let k = KeyPair::generate()?;
                let pem = k
                    .secret
                    .to_pkcs8_pem(LineEnding::LF)
                    .map_err(|e| std::io::Error::other(e.to_string()))?;
                use std::os::unix::fs::OpenOptionsExt;
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(path)?;
                std::io::Write::write_all(&mut f, pem.as_bytes())?;
                Ok(k)
            }
            Err(e) => Err(e),
        }
    }

    /// An ES384 JWT of `claims`, header `x5u` this key.
    pub(crate) fn jwt(&self, claims: &Value) -> String {
        let header = json!({"alg": "ES384", "x5u": self.public});
        let claims = claims.to_string();
        crate::wire::jws::es384(&self.secret, &header.to_string(), claims.as_bytes())
    }
}

/// A random version-4 UUID, as text.
pub(crate) fn uuid4() -> Result<String, RandomError> {
    let mut b = random::<16>()?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    Ok(crate::wire::cursor::uuid_text(&b))
}

/// Seconds since the Unix epoch.
fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// An offline player: a name, a UUID and a fresh key.
#[derive(Clone)]
pub struct Player {
    pub(crate) name: String,
    pub(crate) uuid: String,
    pub(crate) key: KeyPair,
}

impl Player {
    /// A player called `name`, with a random UUID and a fresh P-384 key.
    pub fn new(name: &str) -> Result<Self, RandomError> {
        Ok(Player {
            name: name.to_string(),
            uuid: uuid4()?,
            key: KeyPair::generate()?,
        })
    }

    /// The Login's identity for `protocol`, offline and self-signed: a
    /// chain of one (before 1.21.90), that chain as the Certificate (to
    /// 1.26.0), or a Token with `cpk` (1.26.10 on), with XUID `xuid`.
    pub(crate) fn identity(&self, protocol: u32, xuid: &str) -> String {
        let t = now();
        let chain = || {
            let jwt = self.key.jwt(&json!({
                "extraData": {"displayName": self.name, "identity": self.uuid, "titleId": "89692877", "XUID": xuid},
                "certificateAuthority": true,
                "identityPublicKey": self.key.public,
                "nbf": t - 60, "exp": t + 3600, "iss": "self",
            }));
            json!({"chain": [jwt]}).to_string()
        };
        if protocol < 818 {
            chain()
        } else if protocol < 944 {
            json!({"AuthenticationType": 2, "Certificate": chain(), "Token": ""}).to_string()
        } else {
            let token = self.key.jwt(&json!({
                "cpk": self.key.public, "xid": xuid, "xname": self.name, "identity": self.uuid,
                "nbf": t - 60, "exp": t + 3600, "iss": "self",
                "aud": "api://auth-minecraft-services/multiplayer",
            }));
            // bedrock-protocol's offline client: an empty chain token.
            json!({"AuthenticationType": 2, "Certificate": json!({"chain": [""]}).to_string(), "Token": token})
                .to_string()
        }
    }

    /// The Login's two strings for `protocol`: the identity (chain, or
    /// Certificate/Token) and the client-data JWT of `game_version`.
    pub(crate) fn login_tokens(
        &self,
        protocol: u32,
        game_version: &str,
        server: &str,
    ) -> Result<(String, String), RandomError> {
        let identity = self.identity(protocol, "0");
        let mut data = json!({
            "ClientRandomId": i64::from_le_bytes(random::<8>()?) & i64::MAX,
            "CurrentInputMode": 1, "DefaultInputMode": 1,
            "DeviceId": uuid4()?, "DeviceModel": "raknet-dissect", "DeviceOS": 7,
            "GameVersion": game_version, "GuiScale": -1, "LanguageCode": "en_GB", "GraphicsMode": 1,
            "PlatformOfflineId": "", "PlatformOnlineId": "", "PlayFabId": "",
            "SelfSignedId": uuid4()?, "ServerAddress": server, "ThirdPartyName": self.name,
            "ThirdPartyNameOnly": false, "UIProfile": 0, "IsEditorMode": false,
            "TrustedSkin": false, "OverrideSkin": false, "CompatibleWithClientSideChunkGen": false,
            "MaxViewDistance": 0, "MemoryTier": 0, "PlatformType": 0,
        });
        let skin = json!({
            "SkinId": "raknet-dissect", "SkinData": STANDARD.encode(vec![0u8; 64 * 64 * 4]),
            "SkinImageWidth": 64, "SkinImageHeight": 64,
            "SkinResourcePatch": STANDARD.encode(r#"{"geometry":{"default":"geometry.humanoid.custom"}}"#),
            "SkinGeometryData": "", "SkinGeometryDataEngineVersion": "", "SkinAnimationData": "",
            "CapeId": "", "CapeData": "", "CapeImageWidth": 0, "CapeImageHeight": 0,
            "CapeOnClassicSkin": false, "AnimatedImageData": [], "PersonaPieces": [],
            "PieceTintColors": [], "ArmSize": "wide", "SkinColor": "#0", "PersonaSkin": false,
            "PremiumSkin": false, "PlayFabIdSkin": "",
        });
        if let (Some(d), Value::Object(s)) = (data.as_object_mut(), skin) {
            d.extend(s);
        }
        let client = self.key.jwt(&data);
        Ok((identity, client))
    }
}

/// The server's handshake: a JWT with a fresh 16-byte salt, signed by the
/// server's key (header `x5u`). Returns it and the salt.
pub(crate) fn server_handshake(key: &KeyPair) -> Result<(String, [u8; 16]), RandomError> {
    let salt = random::<16>()?;
    Ok((key.jwt(&json!({"salt": STANDARD.encode(salt)})), salt))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bedrock::login::{chain_verifies, jwt_parts, jwt_verifies};

    #[test]
    fn tokens_verify_by_their_keys() {
        let p = Player::new("Steve").unwrap();
        assert!(p.key.public.starts_with("MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAE"));
        let (identity, client) = p.login_tokens(2169, "1.26.45", "127.0.0.1:19132").unwrap();
        assert!(jwt_verifies(&client, &p.key.public));
        let v: Value = serde_json::from_str(&identity).unwrap();
        let token = v["Token"].as_str().unwrap();
        assert!(jwt_verifies(token, &p.key.public));
        assert_eq!(jwt_parts(token).unwrap().1["xname"], "Steve");
        let (identity, _) = p.login_tokens(527, "1.19.1", "h:1").unwrap();
        let v: Value = serde_json::from_str(&identity).unwrap();
        let chain: Vec<&str> = v["chain"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j.as_str().unwrap())
            .collect();
        assert_eq!(chain_verifies(&chain), (true, false));
        let (h, s) = server_handshake(&p.key).unwrap();
        assert!(jwt_verifies(&h, &p.key.public));
        assert_eq!(jwt_parts(&h).unwrap().1["salt"], STANDARD.encode(s));
        assert_ne!(uuid4().unwrap(), uuid4().unwrap());
        // Asked again (the answers are remembered): the same answers, and
        // another key, or a token changed by a byte, still fails.
        let other = Player::new("Alex").unwrap();
        for _ in 0..2 {
            assert!(jwt_verifies(&client, &p.key.public));
            assert!(!jwt_verifies(&client, &other.key.public));
            let mut forged = client.clone().into_bytes();
            let i = forged.len() / 3;
            forged[i] = if forged[i] == b'A' { b'B' } else { b'A' };
            let forged = String::from_utf8(forged).unwrap();
            assert!(!jwt_verifies(&forged, &p.key.public));
        }
    }
}
