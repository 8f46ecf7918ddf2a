//! A Bedrock server's side of one connection, sans-IO: offline-mode
//! clients are logged in as bedrock-protocol's server does (NetworkSettings
//! from 1.19.30, the Login's chain or token checked, the handshake with a
//! fresh key and salt, then encryption; resource packs, StartGame and the
//! packets a client needs to spawn), a client of another protocol refused
//! with PlayStatus, and the rest handed to the application as events.

use serde_json::{json, Value};

use super::batch::Compression;
use super::codec::NEGOTIATED_FROM;
use super::crypto::{derive_key, shared_secret};
use super::identity::{server_handshake, KeyPair};
use super::login::{chain_verifies, jwt_parts, jwt_verifies};
use super::speak::{key_log_line, SessionEvent, SpeakError, Speaker};

/// Batches above this many bytes are compressed (bedrock-protocol's default).
pub(crate) const COMPRESSION_THRESHOLD: usize = 512;

/// One client connection at the server.
#[derive(Clone)]
pub struct GameServer {
    /// The connection's version, definitions, framing and queues.
    pub speaker: Speaker,
    key: KeyPair,
    /// The player's name from the Login.
    pub(crate) player: Option<String>,
    /// The client sent SetLocalPlayerAsInitialized: in the game.
    pub spawned: bool,
    started: bool,
    /// Over NetherNet: batches without 0xFE, and no encryption handshake
    /// (the server goes on after the Login as if the client had answered
    /// one).
    nethernet: bool,
}

impl GameServer {
    pub(crate) fn new(version: &str) -> Result<Self, SpeakError> {
        GameServer::with_key(version, KeyPair::generate()?)
    }

    /// A server of game `version` whose handshakes are signed with `key`
    /// (made before: a test or a fuzz target reuses one).
    pub fn with_key(version: &str, key: KeyPair) -> Result<Self, SpeakError> {
        Ok(GameServer {
            speaker: Speaker::new(version)?,
            key,
            player: None,
            spawned: false,
            started: false,
            nethernet: false,
        })
    }

    /// This server over NetherNet.
    pub(crate) fn over_nethernet(mut self) -> Self {
        self.speaker.codec.set_nethernet();
        self.nethernet = true;
        self
    }

    /// A 0xFE message RakNet delivered.
    pub fn handle(&mut self, message: &[u8]) {
        for (name, f) in self.speaker.receive(message) {
            if let Err(e) = self.react(&name, &f) {
                self.speaker.event(SessionEvent::Error(e.to_string()));
            }
        }
    }

    /// Refuse a client of protocol `theirs`.
    fn refuse(&mut self, theirs: i64) -> Result<(), SpeakError> {
        let s = &mut self.speaker;
        let status = if theirs < i64::from(s.protocol) {
            "failed_client"
        } else {
            "failed_spawn"
        };
        s.queue("play_status", json!({"status": status}))?;
        s.flush();
        let why = format!(
            "refused a client of protocol {theirs}: this server speaks {} ({})",
            s.protocol, s.version
        );
        s.event(SessionEvent::Refused(why));
        Ok(())
    }

    fn react(&mut self, name: &str, f: &Value) -> Result<(), SpeakError> {
        let p = i64::from(self.speaker.protocol);
        match name {
            "request_network_settings" => {
                let theirs = f["client_protocol"].as_i64().unwrap_or(0);
                if theirs != p {
                    return self.refuse(theirs);
                }
                let s = &mut self.speaker;
                s.queue(
                    "network_settings",
                    json!({"compression_threshold": COMPRESSION_THRESHOLD, "compression_algorithm": "deflate"}),
                )?;
                s.flush();
                s.codec
                    .set_compression(Compression::Deflate, COMPRESSION_THRESHOLD);
            }
            "login" => {
                let theirs = f["protocol_version"].as_i64().unwrap_or(0);
                if theirs != p {
                    return self.refuse(theirs);
                }
                let identity = f["tokens"]["identity"].as_str().unwrap_or("");
                let (name, client_key) = client_identity(identity)?;
                self.player = Some(name);
                let s = &mut self.speaker;
                if s.protocol < NEGOTIATED_FROM {
                    // bedrock-protocol's server sends it here too: the threshold.
                    s.queue(
                        "network_settings",
                        json!({"compression_threshold": COMPRESSION_THRESHOLD}),
                    )?;
                    s.flush();
                }
                if self.nethernet {
                    return self.logged_in();
                }
                let (token, salt) = server_handshake(&self.key)?;
                s.queue("server_to_client_handshake", json!({"token": token}))?;
                s.flush();
                let secret = shared_secret(&self.key.secret, &client_key)
                    .ok_or(SpeakError::Peer("the client's key is not a P-384 key"))?;
                let key = derive_key(&salt, &secret);
                s.event(SessionEvent::KeyLog(key_log_line(&salt, &key)));
                s.codec.set_key(key);
            }
            "client_to_server_handshake" => return self.logged_in(),
            "resource_pack_client_response" => {
                let status = f["response_status"].as_str().unwrap_or("");
                let s = &mut self.speaker;
                if status == "completed" && !self.started {
                    self.started = true;
                    s.queue("start_game", start_game(&s.version))?;
                    for (extra, set) in [
                        ("item_registry", json!({})),
                        ("set_time", json!({"time": 6000})),
                        ("set_difficulty", json!({"difficulty": 1})),
                        ("set_commands_enabled", json!({"enabled": true})),
                    ] {
                        if s.defs.id(extra).is_some() {
                            s.queue(extra, set)?;
                        }
                    }
                    s.flush();
                } else if status != "completed" {
                    s.queue("resource_pack_stack", json!({"game_version": "*"}))?;
                    s.flush();
                }
            }
            "request_chunk_radius" => {
                let r = f["chunk_radius"].as_i64().unwrap_or(8).clamp(1, 8);
                let s = &mut self.speaker;
                s.queue("chunk_radius_update", json!({"chunk_radius": r}))?;
                s.queue("play_status", json!({"status": "player_spawn"}))?;
                s.flush();
            }
            "set_local_player_as_initialized" => {
                self.spawned = true;
                self.speaker.event(SessionEvent::Spawned);
            }
            "disconnect" => {
                let m = f["message"].as_str().unwrap_or("").to_string();
                self.speaker.event(SessionEvent::Disconnected(m));
            }
            _ => {}
        }
        Ok(())
    }

    /// The login done: PlayStatus login_success, then the resource packs.
    fn logged_in(&mut self) -> Result<(), SpeakError> {
        let s = &mut self.speaker;
        s.queue("play_status", json!({"status": "login_success"}))?;
        s.flush();
        s.event(SessionEvent::LoggedIn);
        s.queue("resource_packs_info", json!({}))?;
        s.flush();
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

/// The player's name and key from the Login's identity: the self-signed
/// token (1.26.10 on) or the chain, checked.
pub(crate) fn client_identity(identity: &str) -> Result<(String, String), SpeakError> {
    let v: Value = serde_json::from_str(identity)
        .map_err(|_| SpeakError::Peer("the Login's identity is not JSON"))?;
    if let Some(token) = v["Token"].as_str().filter(|t| !t.is_empty()) {
        let (_, claims) =
            jwt_parts(token).ok_or(SpeakError::Peer("the Login's token is not a JWT"))?;
        let cpk = claims["cpk"]
            .as_str()
            .ok_or(SpeakError::Peer("the Login's token names no key"))?;
        if !jwt_verifies(token, cpk) {
            return Err(SpeakError::Peer("the Login's token does not verify"));
        }
        let name = claims["xname"].as_str().unwrap_or("").to_string();
        return Ok((name, cpk.to_string()));
    }
    let chain_text;
    let chain_v = match v["Certificate"].as_str() {
        Some(c) => {
            chain_text = serde_json::from_str::<Value>(c)
                .map_err(|_| SpeakError::Peer("the Certificate is not JSON"))?;
            &chain_text["chain"]
        }
        None => &v["chain"],
    };
    let chain: Vec<&str> = chain_v
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !chain_verifies(&chain).0 {
        return Err(SpeakError::Peer("the Login's chain does not verify"));
    }
    let (_, last) = chain
        .last()
        .and_then(|t| jwt_parts(t))
        .ok_or(SpeakError::Peer("the Login has no chain"))?;
    let key = last["identityPublicKey"]
        .as_str()
        .ok_or(SpeakError::Peer("the Login's chain names no key"))?;
    let name = last["extraData"]["displayName"].as_str().unwrap_or("");
    Ok((name.to_string(), key.to_string()))
}

/// StartGame's fields as bedrock-protocol's examples set them (the rest
/// zero).
fn start_game(version: &str) -> Value {
    json!({
        "entity_id": 1, "runtime_entity_id": 1,
        "player_gamemode": "creative", "world_gamemode": "creative",
        "player_position": {"x": 0.5, "y": 65.62, "z": 0.5},
        "spawn_position": {"x": 0, "y": 64, "z": 0},
        "seed": 1234, "difficulty": 1, "generator": 2, "dimension": "overworld",
        "permission_level": "operator", "server_chunk_tick_range": 4,
        "game_version": "*", "level_id": "raknet-dissect",
        "world_name": format!("raknet-dissect {version}"),
        "engine": "raknet-dissect", "multiplayer_correlation_id": "<raknet-dissect>",
    })
}
