//! The Minecraft Bedrock game layer carried in RakNet's 0xFE messages
//! (facts: `docs/bedrock-protocol.md`). Sans-IO: [`Game`] is fed the packets of a capture
//! (for the RakNet protocol and the pong's MOTD) and the messages each
//! side's application received, in delivery order (from the mirror: loss,
//! resends, duplicates and split reassembly already resolved, which
//! decryption needs), and gives game packets or opaque batches.
//!
//! - `batch`: framing and compression of one batch, stateless;
//! - [`crypto`]: key material, key derivation, the ciphers and checksum;
//! - [`login`]: the early packets decoded by hand;
//! - `flow`: one flow's state: negotiated compression, encryption;
//! - [`names`]: packet names per protocol version, from minecraft-data.

pub(crate) mod batch;
mod body;
pub mod client;
pub(crate) mod codec;
pub mod crypto;
pub(crate) mod fields;
pub(crate) mod flow;
pub mod identity;
pub mod login;
pub mod names;
pub(crate) mod packets;
pub mod proxy;
pub mod schema;
pub mod server;
pub mod speak;

use std::collections::HashMap;
use std::sync::Arc;

use crate::dissect::{Body, Packet};
use crate::mirror::{Message, Observation};
use crate::wire::Offline;

pub use crypto::Keys;
pub(crate) use flow::{event_names, Ahead, GameFlow, GameSummary, Opened, PerDir, GAME_MESSAGE};
pub use flow::{GameEvent, GamePacket, Opaque, OpaqueReason};

/// Flows with a game layer followed at once; past it, later flows' 0xFE
/// messages stay RakNet messages (and [`Game::untracked`] counts them).
pub(crate) const MAX_GAME_FLOWS: usize = 65_536;

/// Which flows are Bedrock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detect {
    /// A flow whose first 0xFE message is a login (or whose pong says
    /// MCPE/MCEE) is Bedrock.
    Auto,
    /// Every flow's 0xFE messages are batches (captures that start mid-session).
    Always,
    /// None.
    Never,
}

impl Detect {
    /// [`Detect::Always`] when `forced` (`--bedrock`), else [`Detect::Auto`].
    pub(crate) fn forced(forced: bool) -> Detect {
        if forced {
            Detect::Always
        } else {
            Detect::Auto
        }
    }
}

/// The game layer of every flow of a capture.
pub struct Game {
    detect: Detect,
    keys: Arc<Keys>,
    /// Per flow: its RakNet protocol and whether a pong named Minecraft.
    hints: HashMap<u32, (Option<u8>, bool)>,
    flows: HashMap<u32, GameFlow>,
    /// Flows decided not to be Bedrock.
    not_game: std::collections::HashSet<u32>,
    /// Servers' protocol and version, from their Minecraft pongs.
    servers: HashMap<std::net::SocketAddr, (u32, String)>,
    /// 0xFE messages of flows past [`MAX_GAME_FLOWS`].
    pub(crate) untracked: u64,
    /// Flows found to be Bedrock so far (closed ones included).
    pub(crate) game_flows: u64,
    /// RakNet packets seen.
    pub(crate) packets: u64,
    /// Check the logins' signatures (on by default): off for the commands
    /// that only name and count packets.
    pub(crate) signatures: bool,
    /// Decode every packet's fields by minecraft-data's definitions (on by
    /// default): off for the commands that only name and count packets.
    pub fields: bool,
    /// Keep where each field is on the wire ([`GamePacket::layout`]), for
    /// the `-V` tree (off by default: the decoder then keeps no trace).
    pub(crate) layout: bool,
    /// Leave each game packet's fields to decode where it is printed
    /// ([`GamePacket::finish`], on the printing threads): off by default;
    /// `game` sets it. StartGame and ItemRegistry, whose fields later
    /// packets depend on, are decoded at once all the same.
    pub(crate) defer_fields: bool,
}

impl Game {
    /// No flow seen yet: Bedrock found as `detect` says, batches decrypted with `keys`.
    pub fn new(detect: Detect, keys: Keys) -> Self {
        Game {
            detect,
            keys: Arc::new(keys),
            hints: HashMap::new(),
            flows: HashMap::new(),
            not_game: Default::default(),
            servers: HashMap::new(),
            untracked: 0,
            game_flows: 0,
            packets: 0,
            signatures: true,
            fields: true,
            layout: false,
            defer_fields: false,
        }
    }

    /// Secrets a capture carries (a pcapng Decryption Secrets Block of
    /// kind [`crate::capture::Secrets::BEDROCK_KEY_LOG`]): the key-log lines
    /// join the keys given, for every flow's batches not yet opened. The
    /// lines that do not read, in words.
    pub fn secrets(&mut self, kind: u32, data: &[u8]) -> Vec<String> {
        if kind != crate::capture::Secrets::BEDROCK_KEY_LOG {
            return Vec::new();
        }
        let warnings = Arc::make_mut(&mut self.keys).add_key_log(&String::from_utf8_lossy(data));
        for f in self.flows.values_mut() {
            f.set_keys(Arc::clone(&self.keys));
        }
        warnings
    }

    /// A game layer for naming and counting packets: the logins'
    /// signatures unchecked.
    pub(crate) fn counting(detect: Detect, keys: Keys) -> Self {
        Game {
            signatures: false,
            fields: false,
            ..Game::new(detect, keys)
        }
    }

    /// A packet of the capture: the RakNet protocol of an Open Connection
    /// Request 1, a Minecraft pong.
    pub fn packet(&mut self, p: &Packet<'_>) {
        self.packets += 1;
        let Body::Offline { msg: Some(msg), .. } = &p.body else {
            return;
        };
        if self.hints.len() >= MAX_GAME_FLOWS && !self.hints.contains_key(&p.flow) {
            return;
        }
        match msg {
            Offline::OpenConnectionRequest1 { protocol, .. } => {
                self.hints.entry(p.flow).or_default().0 = Some(*protocol);
            }
            Offline::UnconnectedPong { .. } => {
                let Some(motd) = msg.motd() else { return };
                self.hints.entry(p.flow).or_default().1 = true;
                let protocol = motd.get("protocol_version").and_then(|v| v.parse().ok());
                if let (Some(protocol), true) = (protocol, self.servers.len() < MAX_GAME_FLOWS) {
                    let version = motd.get("version").unwrap_or("").to_string();
                    self.servers.insert(p.src, (protocol, version));
                }
            }
            _ => {}
        }
    }

    /// A delivered message: for a game flow's 0xFE message, its packets
    /// (or why not); `None` for anything else, which stays a RakNet message.
    pub fn message(&mut self, m: &Message) -> Option<Vec<GameEvent>> {
        if m.data.first() != Some(&GAME_MESSAGE) || self.detect == Detect::Never {
            return None;
        }
        if !self.flows.contains_key(&m.flow) {
            if self.not_game.contains(&m.flow) {
                return None;
            }
            let (raknet, pong) = self.hints.get(&m.flow).copied().unwrap_or_default();
            let game = match self.detect {
                Detect::Always => true,
                _ => pong || GameFlow::looks_like_login(&m.data),
            };
            if !game {
                if self.not_game.len() < MAX_GAME_FLOWS {
                    self.not_game.insert(m.flow);
                }
                return None;
            }
            if self.flows.len() >= MAX_GAME_FLOWS {
                self.untracked += 1;
                return None;
            }
            let mut f = GameFlow::new(raknet, Arc::clone(&self.keys), self.signatures);
            f.fields = self.new_fields();
            self.flows.insert(m.flow, f);
            self.game_flows += 1;
        }
        let f = self.flows.get_mut(&m.flow)?;
        Some(f.message(m.dir, &m.data))
    }

    /// Message `m`'s batch opened ahead of its turn ([`GameFlow::ahead`]),
    /// when it is a batch of a flow already found to be Bedrock and that
    /// flow's state allows; its turn comes in [`Game::finish_ahead`]. The
    /// caller opens no batch of a flow ahead while an earlier message of
    /// that flow waits for [`Game::message`].
    pub(crate) fn ahead(&mut self, m: &Message) -> Option<Ahead> {
        if m.data.first() != Some(&GAME_MESSAGE) || self.detect == Detect::Never {
            return None;
        }
        self.flows.get_mut(&m.flow)?.ahead(m.dir, &m.data[1..])
    }

    /// Whether a key was given to decrypt the flows with.
    pub(crate) fn decrypts(&self) -> bool {
        !self.keys.is_empty()
    }

    /// Whether a game message may be read by [`Game::message`] now, before
    /// `held` messages of other flows that came before it are handed on:
    /// a flow's state is its own, and only the bounds on the flows kept
    /// are shared (reading it now must leave room for every message held).
    pub(crate) fn reads_early(&self, held: usize) -> bool {
        self.flows.len() + held < MAX_GAME_FLOWS && self.not_game.len() + held < MAX_GAME_FLOWS
    }

    /// [`Game::message`] of a message opened ahead, in its turn.
    pub(crate) fn finish_ahead(
        &mut self,
        m: &Message,
        a: Ahead,
        o: Opened,
    ) -> Option<Vec<GameEvent>> {
        match self.flows.get_mut(&m.flow) {
            Some(f) => Some(f.finish_ahead(&m.data[1..], a, o)),
            None => self.message(m),
        }
    }

    /// A new flow's field decoder, when fields are decoded.
    fn new_fields(&self) -> Option<fields::Fields> {
        self.fields.then(|| {
            let mut d = fields::Fields::default();
            (d.layout, d.defer) = (self.layout, self.defer_fields);
            d
        })
    }

    /// A batch a NetherNet conversation's application received (`dir`:
    /// `c2s` when the server did): its packets, or why not. NetherNet
    /// carries nothing but Bedrock: every conversation is a game flow.
    /// `None` past `MAX_GAME_FLOWS` flows.
    pub fn batch(
        &mut self,
        flow: u32,
        dir: crate::dissect::Dir,
        batch: &[u8],
    ) -> Option<Vec<GameEvent>> {
        if !self.flows.contains_key(&flow) {
            if self.flows.len() >= MAX_GAME_FLOWS {
                self.untracked += 1;
                return None;
            }
            let mut f = GameFlow::new(None, Arc::clone(&self.keys), self.signatures);
            f.fields = self.new_fields();
            self.flows.insert(flow, f);
            self.game_flows += 1;
        }
        Some(self.flows.get_mut(&flow)?.batch(dir, batch))
    }

    /// A packet and what the mirror made of it: the game packets in the
    /// messages it delivered when its flow is Bedrock, for the packet lines
    /// of `read`; `None` in a flow that is not. The flows that ended here
    /// are forgotten.
    pub(crate) fn delivered(
        &mut self,
        p: &Packet<'_>,
        obs: &Observation,
    ) -> Option<Vec<GameEvent>> {
        self.packet(p);
        let mut events = Vec::new();
        for m in &obs.messages {
            events.extend(self.message(m).into_iter().flatten());
        }
        let game = self.flows.contains_key(&p.flow);
        obs.ended.iter().for_each(|&f| drop(self.close(f)));
        game.then_some(events)
    }

    /// A flow's game layer, if it has one.
    pub fn flow(&self, id: u32) -> Option<&GameFlow> {
        self.flows.get(&id)
    }

    /// Flow `id` ended: what its game layer saw, and its state forgotten
    /// (a flow id is never used again).
    pub fn close(&mut self, id: u32) -> Option<GameSummary> {
        self.hints.remove(&id);
        self.not_game.remove(&id);
        self.flows.remove(&id).map(|f| f.summary())
    }

    /// Where flow `id`'s game login got, in words, when it has a game
    /// layer; `server`: its server's address, whose pong may have said its
    /// protocol.
    pub(crate) fn diagnosis(
        &self,
        id: u32,
        server: Option<std::net::SocketAddr>,
    ) -> Option<String> {
        let known = server.and_then(|a| self.servers.get(&a));
        let f = self.flows.get(&id)?;
        Some(f.diagnosis(known.map(|(p, v)| (*p, v.as_str()))))
    }

    /// The game login of each connection attempt: the diagnosis goes with
    /// the last attempt of its flow that connected, `None` elsewhere.
    pub(crate) fn logins(
        &self,
        attempts: &[crate::mirror::handshake::Attempt],
    ) -> Vec<Option<String>> {
        let last: HashMap<u32, u32> = attempts
            .iter()
            .filter(|a| a.accepted)
            .map(|a| (a.flow, a.number))
            .collect();
        attempts
            .iter()
            .map(|a| {
                (last.get(&a.flow) == Some(&a.number))
                    .then(|| self.diagnosis(a.flow, a.server))
                    .flatten()
            })
            .collect()
    }
}

#[cfg(test)]
mod login_tests;
