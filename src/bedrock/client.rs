//! A Bedrock client's login, sans-IO: fed the 0xFE messages RakNet
//! delivers, it answers as bedrock-protocol's client does
//! (RequestNetworkSettings from 1.19.30, Login with an offline identity,
//! the key from the server's handshake, ClientToServerHandshake encrypted,
//! the resource packs accepted, RequestChunkRadius after StartGame,
//! SetLocalPlayerAsInitialized at spawn) and hands the rest to its
//! application as events.

use serde_json::{json, Value};

use super::codec::NEGOTIATED_FROM;
use super::crypto::{decode_base64, derive_key, shared_secret};
use super::identity::Player;
use super::login::{jwt_parts, jwt_verifies};
use super::speak::{key_log_line, refusal, SessionEvent, SpeakError, Speaker};

/// The key and salt of a ServerToClientHandshake (`f`, its fields) for
/// the client whose private key is `secret`: the token checked against the
/// key it names, the salt read, the shared secret derived.
pub(crate) fn handshake_key(
    f: &Value,
    secret: &p384::SecretKey,
) -> Result<(Vec<u8>, [u8; 32]), SpeakError> {
    let token = f["token"].as_str().unwrap_or("");
    let (header, claims) =
        jwt_parts(token).ok_or(SpeakError::Peer("the server's handshake is not a JWT"))?;
    let x5u = header["x5u"]
        .as_str()
        .ok_or(SpeakError::Peer("the server's handshake names no key"))?;
    if !jwt_verifies(token, x5u) {
        return Err(SpeakError::Peer(
            "the server's handshake signature does not verify",
        ));
    }
    let salt = claims["salt"]
        .as_str()
        .and_then(decode_base64)
        .ok_or(SpeakError::Peer("the server's handshake has no salt"))?;
    let shared = shared_secret(secret, x5u)
        .ok_or(SpeakError::Peer("the server's key is not a P-384 key"))?;
    let key = derive_key(&salt, &shared);
    Ok((salt, key))
}

/// One client connection's game login.
#[derive(Clone)]
pub struct GameClient {
    /// The connection's version, definitions, framing and queues.
    pub speaker: Speaker,
    pub(crate) player: Player,
    /// "host:port", for the client data.
    server: String,
    runtime_id: Value,
    /// PlayStatus `player_spawn` came and the client answered it: in the game.
    pub spawned: bool,
    /// The PlayStatus that refused the login (`failed_client`, ...).
    pub(crate) refused: Option<String>,
}

impl GameClient {
    /// A client of game `version` logging in as `name` to `server`.
    pub(crate) fn new(version: &str, name: &str, server: &str) -> Result<Self, SpeakError> {
        GameClient::with_player(version, Player::new(name)?, server)
    }

    /// A client of game `version` logging in as `player` (its key made
    /// before: a test or a fuzz target reuses one).
    pub fn with_player(version: &str, player: Player, server: &str) -> Result<Self, SpeakError> {
        Ok(GameClient {
            speaker: Speaker::new(version)?,
            player,
            server: server.to_string(),
            runtime_id: Value::from(0),
            spawned: false,
            refused: None,
        })
    }

    /// The first batch: RequestNetworkSettings (1.19.30 on) or the Login.
    pub fn start(&mut self) -> Result<(), SpeakError> {
        let p = self.speaker.protocol;
        if p >= NEGOTIATED_FROM {
            self.speaker
                .queue("request_network_settings", json!({"client_protocol": p}))?;
            self.speaker.flush();
            Ok(())
        } else {
            self.login()
        }
    }

    fn login(&mut self) -> Result<(), SpeakError> {
        let s = &mut self.speaker;
        let (identity, client) = self
            .player
            .login_tokens(s.protocol, &s.version, &self.server)?;
        s.queue(
            "login",
            json!({"protocol_version": s.protocol, "tokens": {"identity": identity, "client": client}}),
        )?;
        s.flush();
        Ok(())
    }

    /// A 0xFE message RakNet delivered.
    pub fn handle(&mut self, message: &[u8]) {
        for (name, f) in self.speaker.receive(message) {
            if let Err(e) = self.react(&name, &f) {
                self.speaker.event(SessionEvent::Error(e.to_string()));
            }
        }
    }

    fn react(&mut self, name: &str, f: &Value) -> Result<(), SpeakError> {
        let s = &mut self.speaker;
        match name {
            "network_settings" => {
                let algorithm = match f["compression_algorithm"].as_str() {
                    Some("snappy") => super::batch::Compression::Snappy,
                    _ => super::batch::Compression::Deflate,
                };
                let threshold = f["compression_threshold"].as_u64().unwrap_or(0) as usize;
                let first = s.protocol >= NEGOTIATED_FROM && !s.codec.encrypted();
                s.codec.set_compression(algorithm, threshold);
                if first {
                    return self.login();
                }
            }
            "server_to_client_handshake" => {
                let (salt, key) = handshake_key(f, &self.player.key.secret)?;
                s.event(SessionEvent::KeyLog(key_log_line(&salt, &key)));
                s.codec.set_key(key);
                s.queue("client_to_server_handshake", json!({}))?;
                s.flush();
            }
            "play_status" => match f["status"].as_str().unwrap_or("") {
                "login_success" => s.event(SessionEvent::LoggedIn),
                "player_spawn" => {
                    s.queue(
                        "set_local_player_as_initialized",
                        json!({"runtime_entity_id": self.runtime_id}),
                    )?;
                    s.flush();
                    self.spawned = true;
                    s.event(SessionEvent::Spawned);
                }
                other => {
                    let why = refusal(other, s.protocol, None);
                    self.refused = Some(other.to_string());
                    s.event(SessionEvent::Refused(why));
                }
            },
            "resource_packs_info" => {
                s.queue(
                    "resource_pack_client_response",
                    json!({"response_status": "have_all_packs", "response_status_name": "have_all_packs"}),
                )?;
                s.flush();
            }
            "resource_pack_stack" => {
                s.queue(
                    "resource_pack_client_response",
                    json!({"response_status": "completed", "response_status_name": "completed"}),
                )?;
                s.flush();
            }
            "start_game" => {
                self.runtime_id = f["runtime_entity_id"].clone();
                s.queue(
                    "request_chunk_radius",
                    json!({"chunk_radius": 8, "max_radius": 8}),
                )?;
                s.flush();
            }
            "disconnect" => {
                let m = f["message"].as_str().unwrap_or("").to_string();
                s.event(SessionEvent::Disconnected(m));
            }
            _ => {}
        }
        Ok(())
    }

    /// Send packet `name` with `set` over its zero value.
    pub(crate) fn send(&mut self, name: &str, set: Value) -> Result<(), SpeakError> {
        self.speaker.queue(name, set)?;
        self.speaker.flush();
        Ok(())
    }

    /// The next 0xFE message to send: a batch, compressed and encrypted as negotiated.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.speaker.poll_transmit()
    }

    /// The next thing the application should hear.
    pub fn poll_event(&mut self) -> Option<SessionEvent> {
        self.speaker.poll_event()
    }
}
