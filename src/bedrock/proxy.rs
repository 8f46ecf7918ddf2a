//! A Bedrock proxy's two legs for one player, sans IO: toward the player
//! we are its server, toward the upstream server its client, and every
//! game packet one side sends is handed to the other, batch for batch, in
//! its order, each leg compressed and encrypted with its own keys.
//!
//! What is not passed as it came, and why (docs/proxy.md):
//! - the Login: the player's identity is checked, then the upstream gets a
//!   Login of ours: the player's name, UUID and XUID in an offline identity
//!   self-signed with the proxy's key (the upstream must take offline
//!   logins), and the player's client data (skin, device, ...) re-signed
//!   with that key, its `ServerAddress` the upstream's;
//! - the encryption handshake, each leg its own: ServerToClientHandshake
//!   from the upstream answered here, ours sent to the player, whose
//!   ClientToServerHandshake ends here (none over NetherNet);
//! - nothing else: every other packet passes byte for byte.
//!
//! Both legs speak the player's version: the version of the protocol its
//! RequestNetworkSettings names, when the definitions know it.

use std::collections::VecDeque;

use serde_json::{json, Value};

use super::batch::Compression;
use super::crypto::{derive_key, shared_secret};
use super::identity::{server_handshake, KeyPair, Player};
use super::login::{jwt_parts, jwt_verifies};
use super::speak::{key_log_line, SessionEvent, SpeakError, Speaker};

/// Which way a packet went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// From the player to the upstream server.
    C2s,
    /// From the upstream server to the player.
    S2c,
}

impl Dir {
    /// `c2s` or `s2c`, as `game` says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::C2s => "c2s",
            Dir::S2c => "s2c",
        }
    }
}

/// What the proxy did with a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relay {
    /// Passed to the other side byte for byte.
    Passed,
    /// Passed rewritten (the Login).
    Rewritten,
    /// Ended here (a leg's own encryption handshake).
    Consumed,
}

/// One of the proxy's two legs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leg {
    /// Between the player and the proxy.
    Player,
    /// Between the proxy and the upstream server.
    Upstream,
}

/// What a proxy session tells its application.
#[derive(Debug, Clone, PartialEq)]
pub enum ProxyEvent {
    /// A game packet that came from one side.
    Packet {
        /// Which way.
        dir: Dir,
        /// Its name (`unknown(0x..)` when the version has none).
        name: String,
        /// Its fields as decoded (null where they do not decode).
        fields: Value,
        /// Its bytes, header included, as they came.
        data: Vec<u8>,
        /// What was done with it.
        relay: Relay,
        /// Why its fields (or header) did not decode (it passed all the same).
        error: Option<String>,
    },
    /// A leg's key, as a key-log line (`BEDROCK_SALT_KEY salt key`).
    KeyLog(Leg, String),
    /// The player's Login came: its name, checked.
    Login(String),
    /// Both legs encrypted as each needs (or NetherNet): packets flow.
    Relaying,
    /// Something a side sent cannot be read or used, in words.
    Error(Leg, String),
    /// The upstream moves the player to another server: its address and
    /// port as the Transfer said (the player was sent the proxy's).
    Transfer(String, u16),
}

/// Messages waiting for a leg that cannot take them yet, at most (the
/// excess is an error, the session's end).
pub const MAX_WAITING: usize = 1024;

/// One player's session through the proxy.
pub struct ProxySession {
    /// Toward the player: we are its server.
    pub player: Speaker,
    /// Toward the upstream server: we are its client.
    pub upstream: Speaker,
    /// Our key toward the player (its handshake).
    server_key: KeyPair,
    /// Our identity upstream, made at the player's Login.
    identity: Option<Player>,
    /// "host:port" of the upstream, the client data's `ServerAddress`.
    upstream_address: String,
    player_nethernet: bool,
    upstream_nethernet: bool,
    /// The first batch from the player was read (the version settled).
    started: bool,
    /// The player's name, from its Login.
    pub name: Option<String>,
    /// The player sent a Disconnect.
    pub player_left: bool,
    /// The upstream sent a Disconnect.
    pub server_left: bool,
    /// Where the player reaches the proxy: a Transfer is rewritten to
    /// point here (none: passed as it came).
    pub transfer_via: Option<(String, u16)>,
    events: VecDeque<ProxyEvent>,
}

impl ProxySession {
    /// A session of game `version` (until the player names another it
    /// knows) to the upstream at `upstream_address`; either leg over
    /// NetherNet (no 0xFE, no encryption handshake).
    pub fn new(
        version: &str,
        upstream_address: &str,
        (player_nethernet, upstream_nethernet): (bool, bool),
    ) -> Result<Self, SpeakError> {
        let mut s = ProxySession {
            player: Speaker::new(version)?,
            upstream: Speaker::new(version)?,
            server_key: KeyPair::generate()?,
            identity: None,
            upstream_address: upstream_address.to_string(),
            player_nethernet,
            upstream_nethernet,
            started: false,
            name: None,
            player_left: false,
            server_left: false,
            transfer_via: None,
            events: VecDeque::new(),
        };
        s.set_transports();
        Ok(s)
    }

    fn set_transports(&mut self) {
        if self.player_nethernet {
            self.player.codec.set_nethernet();
        }
        if self.upstream_nethernet {
            self.upstream.codec.set_nethernet();
        }
    }

    /// The game version both legs speak.
    pub fn version(&self) -> &str {
        &self.player.version
    }

    /// A message the player's transport delivered.
    pub fn from_player(&mut self, message: &[u8]) {
        if !self.started {
            self.started = true;
            self.settle_version(message);
        }
        let (body, packets) = self.player.receive_raw(message);
        self.errors(Leg::Player);
        // A batch of packets that all pass goes on as it came, its
        // compression untouched (both legs have the same settings).
        let own =
            |n: &str| n == "login" || (n == "client_to_server_handshake" && !self.player_nethernet);
        let whole = body.filter(|_| !packets.iter().any(|r| own(&r.name)));
        if let Some(body) = &whole {
            self.upstream.send_body(body);
        }
        for r in packets {
            self.player_left |= r.name == "disconnect";
            let relay = match whole {
                Some(_) => Ok(Relay::Passed),
                None => self.client_packet(&r.name, &r.fields, &r.data),
            };
            let relay = match relay {
                Ok(relay) => relay,
                Err(e) => {
                    self.error(Leg::Player, format!("{}: {e}", r.name));
                    Relay::Consumed
                }
            };
            self.events.push_back(ProxyEvent::Packet {
                dir: Dir::C2s,
                name: r.name,
                fields: r.fields,
                data: r.data,
                relay,
                error: r.error,
            });
        }
        self.upstream.flush();
    }

    /// A message the upstream's transport delivered.
    pub fn from_upstream(&mut self, message: &[u8]) {
        let (body, packets) = self.upstream.receive_raw(message);
        self.errors(Leg::Upstream);
        let own = |n: &str| {
            n == "network_settings"
                || (n == "transfer" && self.transfer_via.is_some())
                || (n == "server_to_client_handshake" && !self.upstream_nethernet)
        };
        let whole = body.filter(|_| !packets.iter().any(|r| own(&r.name)));
        if let Some(body) = &whole {
            self.player.send_body(body);
        }
        for r in packets {
            self.server_left |= r.name == "disconnect";
            let relay = match whole {
                Some(_) => Ok(Relay::Passed),
                None => self.server_packet(&r.name, &r.fields, &r.data),
            };
            let relay = match relay {
                Ok(relay) => relay,
                Err(e) => {
                    self.error(Leg::Upstream, format!("{}: {e}", r.name));
                    Relay::Consumed
                }
            };
            self.events.push_back(ProxyEvent::Packet {
                dir: Dir::S2c,
                name: r.name,
                fields: r.fields,
                data: r.data,
                relay,
                error: r.error,
            });
        }
        self.player.flush();
    }

    /// Tell the player its session is over (the upstream went without a
    /// word): a Disconnect with `message`, ours.
    pub fn disconnect_player(&mut self, message: &str) -> Result<(), SpeakError> {
        self.player.flush();
        self.player
            .queue("disconnect", json!({"message": message}))?;
        self.player.flush();
        Ok(())
    }

    /// The next message for the player's transport.
    pub fn poll_to_player(&mut self) -> Option<Vec<u8>> {
        self.player.poll_transmit()
    }

    /// The next message for the upstream's transport.
    pub fn poll_to_upstream(&mut self) -> Option<Vec<u8>> {
        self.upstream.poll_transmit()
    }

    /// The next thing the application should hear.
    pub fn poll_event(&mut self) -> Option<ProxyEvent> {
        self.events.pop_front()
    }

    /// The first batch is RequestNetworkSettings (1.19.30 on): both legs
    /// then speak the version of the protocol it names, if known.
    fn settle_version(&mut self, message: &[u8]) {
        // Read as 1.19.30 on reads it: whole, uncompressed.
        let mut probe = super::codec::Codec::new(super::codec::NEGOTIATED_FROM);
        if self.player_nethernet {
            probe.set_nethernet();
        }
        let Ok(packets) = probe.decode(message) else {
            return;
        };
        let Some(first) = packets.first() else { return };
        let Some(h) = super::batch::Header::parse(first) else {
            return;
        };
        // RequestNetworkSettings (0xc1), its protocol a big-endian i32, in
        // every version that has it.
        let body = &first[h.len..];
        if h.id != 0xc1 || body.len() < 4 {
            return;
        }
        let theirs = u32::from_be_bytes([body[0], body[1], body[2], body[3]]);
        if theirs == self.player.protocol {
            return;
        }
        if let Some(v) = super::speak::version_of(theirs) {
            if let (Ok(p), Ok(u)) = (Speaker::new(v), Speaker::new(v)) {
                (self.player, self.upstream) = (p, u);
                self.set_transports();
            }
        }
    }

    fn client_packet(&mut self, name: &str, f: &Value, data: &[u8]) -> Result<Relay, SpeakError> {
        match name {
            "login" => {
                self.login(f)?;
                Ok(Relay::Rewritten)
            }
            "client_to_server_handshake" if !self.player_nethernet => Ok(Relay::Consumed),
            _ => {
                self.upstream.queue_raw(data.to_vec());
                Ok(Relay::Passed)
            }
        }
    }

    fn server_packet(&mut self, name: &str, f: &Value, data: &[u8]) -> Result<Relay, SpeakError> {
        match name {
            "network_settings" => {
                // What comes before it goes as it stood; the settings
                // then hold from the next batch each way, on both legs.
                self.player.flush();
                self.player.queue_raw(data.to_vec());
                self.player.flush();
                let algorithm = match f["compression_algorithm"].as_str() {
                    Some("snappy") => Compression::Snappy,
                    _ => Compression::Deflate,
                };
                let threshold = f["compression_threshold"].as_u64().unwrap_or(0) as usize;
                self.upstream.codec.set_compression(algorithm, threshold);
                self.player.codec.set_compression(algorithm, threshold);
                Ok(Relay::Passed)
            }
            "server_to_client_handshake" if !self.upstream_nethernet => {
                self.upstream_handshake(f)?;
                Ok(Relay::Consumed)
            }
            "transfer" if self.transfer_via.is_some() => {
                let (host, port) = self.transfer_via.clone().unwrap_or_default();
                let to = f["server_address"].as_str().unwrap_or("").to_string();
                let to_port = f["port"].as_u64().unwrap_or(19132) as u16;
                let mut set = f.clone();
                set["server_address"] = Value::from(host);
                set["port"] = Value::from(port);
                let p = self.player.build("transfer", &set)?;
                self.player.queue_raw(p);
                self.events.push_back(ProxyEvent::Transfer(to, to_port));
                Ok(Relay::Rewritten)
            }
            _ => {
                self.player.queue_raw(data.to_vec());
                Ok(Relay::Passed)
            }
        }
    }

    /// The player's Login: checked, re-signed upstream; our handshake to
    /// the player.
    fn login(&mut self, f: &Value) -> Result<(), SpeakError> {
        let identity = f["tokens"]["identity"].as_str().unwrap_or("");
        let (name, client_key) = super::server::client_identity(identity)?;
        let (uuid, xuid) = identity_ids(identity);
        let mut ours = Player::new(&name)?;
        if let Some(u) = uuid {
            ours.uuid = u;
        }
        let client = f["tokens"]["client"].as_str().unwrap_or("");
        if !jwt_verifies(client, &client_key) {
            return Err(SpeakError::Peer(
                "the Login's client data is not signed by the player's key",
            ));
        }
        let (_, mut data) =
            jwt_parts(client).ok_or(SpeakError::Peer("the Login's client data is not a JWT"))?;
        if let Some(d) = data.as_object_mut() {
            d.insert(
                "ServerAddress".into(),
                Value::from(self.upstream_address.clone()),
            );
        }
        let u = &mut self.upstream;
        let identity = ours.identity(u.protocol, xuid.as_deref().unwrap_or("0"));
        let client = ours.key.jwt(&data);
        // Whatever came before the Login in its batch goes first.
        u.flush();
        u.queue(
            "login",
            json!({"protocol_version": f["protocol_version"], "tokens": {"identity": identity, "client": client}}),
        )?;
        u.flush();
        self.identity = Some(ours);
        self.name = Some(name.clone());
        self.events.push_back(ProxyEvent::Login(name));
        if self.player_nethernet {
            return Ok(());
        }
        let p = &mut self.player;
        let (token, salt) = server_handshake(&self.server_key)?;
        p.flush();
        p.queue("server_to_client_handshake", json!({"token": token}))?;
        p.flush();
        let secret = shared_secret(&self.server_key.secret, &client_key)
            .ok_or(SpeakError::Peer("the player's key is not a P-384 key"))?;
        let key = derive_key(&salt, &secret);
        self.events
            .push_back(ProxyEvent::KeyLog(Leg::Player, key_log_line(&salt, &key)));
        p.codec.set_key(key);
        Ok(())
    }

    /// The upstream's handshake, answered with our identity's key.
    fn upstream_handshake(&mut self, f: &Value) -> Result<(), SpeakError> {
        let ours = self
            .identity
            .as_ref()
            .ok_or(SpeakError::Peer("a handshake before the Login"))?;
        let (salt, key) = super::client::handshake_key(f, &ours.key.secret)?;
        self.events
            .push_back(ProxyEvent::KeyLog(Leg::Upstream, key_log_line(&salt, &key)));
        let u = &mut self.upstream;
        u.codec.set_key(key);
        u.queue("client_to_server_handshake", json!({}))?;
        u.flush();
        self.events.push_back(ProxyEvent::Relaying);
        Ok(())
    }

    fn error(&mut self, leg: Leg, why: String) {
        self.events.push_back(ProxyEvent::Error(leg, why));
    }

    /// A leg's own errors (a batch that did not read) as the session's.
    fn errors(&mut self, leg: Leg) {
        let s = match leg {
            Leg::Player => &mut self.player,
            Leg::Upstream => &mut self.upstream,
        };
        let mut found = Vec::new();
        while let Some(e) = s.poll_event() {
            if let SessionEvent::Error(why) = e {
                found.push(why);
            }
        }
        for why in found {
            self.error(leg, why);
        }
    }
}

/// The player's UUID and XUID from its Login's identity (the token's
/// claims, or the chain's last `extraData`).
fn identity_ids(identity: &str) -> (Option<String>, Option<String>) {
    let Ok(v) = serde_json::from_str::<Value>(identity) else {
        return (None, None);
    };
    let s = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_string);
    if let Some((_, claims)) = v["Token"].as_str().and_then(jwt_parts) {
        return (s(&claims["identity"]), s(&claims["xid"]));
    }
    let chain_text;
    let chain = match v["Certificate"].as_str() {
        Some(c) => {
            chain_text = serde_json::from_str::<Value>(c).unwrap_or_default();
            &chain_text["chain"]
        }
        None => &v["chain"],
    };
    let last = chain
        .as_array()
        .and_then(|a| a.last())
        .and_then(Value::as_str)
        .and_then(jwt_parts);
    match last {
        Some((_, c)) => (s(&c["extraData"]["identity"]), s(&c["extraData"]["XUID"])),
        None => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bedrock::client::GameClient;
    use crate::bedrock::server::GameServer;

    /// Our client, the proxy, our server, in memory: messages handed on
    /// until none moves.
    fn run(c: &mut GameClient, p: &mut ProxySession, s: &mut GameServer) {
        for _ in 0..64 {
            let mut moved = false;
            while let Some(m) = c.poll_transmit() {
                p.from_player(&m);
                moved = true;
            }
            while let Some(m) = p.poll_to_upstream() {
                s.handle(&m);
                moved = true;
            }
            while let Some(m) = s.poll_transmit() {
                p.from_upstream(&m);
                moved = true;
            }
            while let Some(m) = p.poll_to_player() {
                c.handle(&m);
                moved = true;
            }
            if !moved {
                return;
            }
        }
    }

    fn events(p: &mut ProxySession) -> Vec<ProxyEvent> {
        std::iter::from_fn(|| p.poll_event()).collect()
    }

    #[test]
    fn a_login_through_the_proxy_spawns_and_passes_the_rest_byte_for_byte() {
        for (version, nethernet) in [("1.26.45", false), ("1.21.50", false), ("1.26.45", true)] {
            let mut c = GameClient::new(version, "Steve", "127.0.0.1:19132").unwrap();
            if nethernet {
                c.speaker.codec.set_nethernet();
            }
            // The proxy starts at another version: the player's decides.
            let mut p = ProxySession::new("1.19.1", "10.0.0.1:19132", (nethernet, false)).unwrap();
            let mut s = GameServer::new(version).unwrap();
            c.start().unwrap();
            run(&mut c, &mut p, &mut s);
            let cev: Vec<SessionEvent> = std::iter::from_fn(|| c.poll_event()).collect();
            let sev: Vec<SessionEvent> = std::iter::from_fn(|| s.poll_event()).collect();
            assert!(
                c.spawned && s.spawned,
                "{version} nethernet {nethernet}: {:?}\nclient {cev:?}\nserver {sev:?}",
                events(&mut p)
                    .iter()
                    .map(|e| match e {
                        ProxyEvent::Packet {
                            dir, name, relay, ..
                        } => format!("{dir:?} {name} {relay:?}"),
                        e => format!("{e:?}"),
                    })
                    .collect::<Vec<_>>()
            );
            assert_eq!(p.version(), version);
            assert_eq!(s.player.as_deref(), Some("Steve"));
            let ev = events(&mut p);
            assert!(ev.contains(&ProxyEvent::Login("Steve".into())));
            assert!(ev.contains(&ProxyEvent::Relaying));
            let keys = ev
                .iter()
                .filter(|e| matches!(e, ProxyEvent::KeyLog(..)))
                .count();
            assert_eq!(keys, if nethernet { 1 } else { 2 });
            let rewritten: Vec<&str> = ev
                .iter()
                .filter_map(|e| match e {
                    ProxyEvent::Packet { name, relay, .. } if *relay != Relay::Passed => {
                        Some(name.as_str())
                    }
                    _ => None,
                })
                .collect();
            let want: &[&str] = if nethernet {
                &["login", "server_to_client_handshake"]
            } else {
                &[
                    "client_to_server_handshake",
                    "login",
                    "server_to_client_handshake",
                ]
            };
            let mut got = rewritten.clone();
            got.sort_unstable();
            assert_eq!(got, want, "{version}");
            assert!(
                !ev.iter().any(|e| matches!(e, ProxyEvent::Error(..))),
                "{ev:?}"
            );
            // A chat after the spawn arrives as it was sent.
            c.send(
                "text",
                json!({"type": "chat", "source_name": "Steve", "message": "hi"}),
            )
            .unwrap();
            run(&mut c, &mut p, &mut s);
            let chat = std::iter::from_fn(|| s.poll_event()).find_map(|e| match e {
                SessionEvent::Packet { name, fields } if name == "text" => Some(fields),
                _ => None,
            });
            assert_eq!(chat.unwrap()["message"], "hi");
        }
    }

    #[test]
    fn a_login_that_does_not_verify_goes_no_further() {
        // A client whose Login's client data another key signed.
        let mut c = Speaker::new("1.26.45").unwrap();
        let mut p = ProxySession::new("1.26.45", "h:2", (false, false)).unwrap();
        let mut s = GameServer::new("1.26.45").unwrap();
        c.queue(
            "request_network_settings",
            json!({"client_protocol": c.protocol}),
        )
        .unwrap();
        c.flush();
        p.from_player(&c.poll_transmit().unwrap());
        s.handle(&p.poll_to_upstream().unwrap());
        p.from_upstream(&s.poll_transmit().unwrap());
        c.receive(&p.poll_to_player().unwrap());
        c.codec.set_compression(Compression::Deflate, 512);
        let (a, b) = (Player::new("Steve").unwrap(), Player::new("Alex").unwrap());
        let (identity, _) = a.login_tokens(c.protocol, "1.26.45", "h:1").unwrap();
        let (_, client) = b.login_tokens(c.protocol, "1.26.45", "h:1").unwrap();
        c.queue(
            "login",
            json!({"protocol_version": c.protocol, "tokens": {"identity": identity, "client": client}}),
        )
        .unwrap();
        c.flush();
        p.from_player(&c.poll_transmit().unwrap());
        assert!(p.poll_to_upstream().is_none(), "the upstream got no Login");
        assert!(p.poll_to_player().is_none(), "the player got no handshake");
        let ev = events(&mut p);
        assert!(
            ev.iter()
                .any(|e| matches!(e, ProxyEvent::Error(Leg::Player, w) if w.starts_with("login:"))),
            "{ev:?}"
        );
    }
}
