//! One flow's game layer, fed the 0xFE messages each side's application
//! received, in delivery order: what each direction negotiated (framing,
//! compression, encryption) and the game packets or opaque batches that
//! come out.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use super::batch::{self, BatchError, Compression, Header, MAX_DECOMPRESSED};
use super::crypto::{Decryptor, Keys, Mode};
use super::login::{self, Learned};
use crate::dissect::Dir;

/// The first byte of every game-layer message.
pub const GAME_MESSAGE: u8 = 0xfe;

/// One game packet.
#[derive(Debug, Clone)]
pub struct GamePacket {
    /// Who sent it.
    pub dir: Dir,
    /// The batch's index in its direction, from 0.
    pub batch: u64,
    /// Its header: packet id and sub-client ids.
    pub header: Header,
    /// Its name in the protocol definitions of the flow's version.
    pub name: Option<&'static str>,
    /// The decompressed packet, header included: a view of its batch's
    /// inflated buffer.
    pub data: Bytes,
    /// Whether its batch was encrypted on the wire.
    pub encrypted: bool,
    /// Its fields: by the definitions (when the flow decodes them), with
    /// what the hand decoders add (the login packets).
    pub fields: Option<Value>,
    /// Why its fields stopped decoding (the field and offset), or that
    /// another protocol's definitions were used (once per flow).
    pub anomaly: Option<String>,
    /// Where its fields stopped decoding against the definition: the
    /// field, its offset in the body and why (`fields` then keeps what
    /// decoded before it).
    pub error: Option<String>,
    /// Where the definitions' fields are in the body, in wire order: kept
    /// only for the `-V` tree (`Game::layout`).
    pub layout: Option<Vec<super::schema::Span>>,
    /// Its fields, still to decode (`Game::defer_fields`): `fields`,
    /// `anomaly`, `error` and `layout` are set by [`GamePacket::finish`].
    pub(crate) pending: Option<super::fields::Pending>,
}

impl GamePacket {
    /// Its fields decoded, if they were left for later
    /// (`Game::defer_fields`): whether they were.
    pub fn finish(&mut self) -> bool {
        let Some(p) = self.pending.take().filter(|p| !p.is_written()) else {
            return false;
        };
        let d = p.decode(self.data.get(self.header.len..).unwrap_or_default());
        (self.fields, self.anomaly) = (d.fields, d.anomaly);
        (self.error, self.layout) = (d.error, d.layout);
        true
    }

    /// [`GamePacket::finish`] with the fields written as JSON at the end
    /// of `out` instead of kept as a value (`fields` stays `None`): where
    /// they are in `out` (`None` when the packet has none); `None` when
    /// they were not left for later.
    pub(crate) fn finish_json(&mut self, out: &mut Vec<u8>) -> Option<Option<Range<usize>>> {
        // Left in the packet, written: freed with it by the thread that
        // made it.
        let p = self.pending.as_mut().filter(|p| !p.is_written())?;
        let start = out.len();
        let body = self.data.get(self.header.len..).unwrap_or_default();
        let (fields, anomaly, error) = p.write_json(body, out);
        (self.anomaly, self.error) = (anomaly, error);
        Some(fields.then_some(start..out.len()))
    }
}

/// What decides how a batch is inflated, as its flow stood before it
/// ([`GameFlow::inflating`]): two batches with the same inflate alike,
/// wherever that is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Inflating {
    negotiated: bool,
    compression: Compression,
    raknet_known: bool,
    settings: bool,
    /// An algorithm byte before the body (1.20.60 on, after NetworkSettings).
    prefixed: bool,
    protocol_known: bool,
}

impl Inflating {
    /// `body` inflated as a batch of this flow, to at most `max` bytes.
    fn inflate(self, body: &[u8], max: usize) -> Result<Vec<u8>, BatchError> {
        let c = self.compression;
        if !self.negotiated {
            // Before 1.19.30: the whole body, zlib-wrapped before RakNet 10.
            let r = batch::decompress(c, body, max);
            if r.is_ok() {
                return r;
            }
            if !self.raknet_known {
                if let Ok(z) = batch::decompress(Compression::Zlib, body, max) {
                    return Ok(z);
                }
            }
            // bedrock-protocol sends batches under its threshold raw: keep
            // them when they hold whole records.
            return match batch::split(body) {
                Ok(r) if !r.is_empty() => Ok(body.to_vec()),
                _ => r,
            };
        }
        if self.prefixed {
            if let Some((&a, rest)) = body.split_first() {
                if let Some(c) = Compression::from_algorithm(u16::from(a)) {
                    let r = batch::decompress(c, rest, max);
                    if r.is_ok() || self.protocol_known {
                        return r;
                    }
                }
            }
        }
        match batch::decompress(c, body, max) {
            // 1.19.30 to 1.20.51: small batches go uncompressed, unmarked.
            Err(_) if self.settings && c != Compression::None => Ok(body.to_vec()),
            r => r,
        }
    }
}

/// Bytes a batch opened ahead inflates to at most: a larger one is
/// inflated in its turn, so that the batches out at once hold little
/// memory whatever they inflate to.
pub(crate) const AHEAD_MAX: usize = 512 << 10;

/// A batch's packets, each its own bytes (or why its records do not add
/// up), or why it does not inflate.
type Inflated = Result<Result<Vec<Bytes>, String>, BatchError>;

/// An inflated batch cut into its packets, each a view of the batch's
/// buffer (no copy: the buffer is freed with its last packet).
fn split_owned(b: Vec<u8>) -> Result<Vec<Bytes>, String> {
    let b = Bytes::from(b);
    match batch::split(&b) {
        Ok(r) => Ok(r.iter().map(|p| b.slice_ref(p)).collect()),
        Err(e) => Err(e.to_string()),
    }
}

/// A batch opened ahead of its turn ([`GameFlow::ahead`]): its index, the
/// flow's state it was opened with, and the decryption to do elsewhere.
pub(crate) struct Ahead {
    dir: Dir,
    batch: u64,
    /// The decryption's generation on that side (`None`: not encrypted).
    generation: Option<u64>,
    /// The stream as it stood before this batch.
    decryptor: Option<Box<Decryptor>>,
    inflating: Inflating,
}

/// What [`Ahead::open`] made of a batch, on any thread.
pub(crate) struct Opened {
    /// The plaintext (the payload itself when not encrypted); `None`: the
    /// checksum does not verify.
    plain: Option<Vec<u8>>,
    /// Its packets, inflated as the flow stood when it was opened.
    inflated: Option<Inflated>,
}

impl Ahead {
    /// Decrypt and inflate the batch's `payload` (on a worker thread).
    pub(crate) fn open(&mut self, payload: &[u8]) -> Opened {
        let plain = match self.decryptor.as_mut() {
            Some(d) => d.decrypt(payload),
            None => Some(payload.to_vec()),
        };
        // A batch that inflates past AHEAD_MAX is not kept: it is
        // inflated again in its turn.
        let inflated = plain
            .as_deref()
            .map(|p| self.inflating.inflate(p, MAX_DECOMPRESSED))
            .filter(|r| r.as_ref().map_or(true, |b| b.len() <= AHEAD_MAX))
            .map(|r| r.map(split_owned));
        Opened { plain, inflated }
    }
}

impl Opened {
    /// The bytes it holds: its plaintext and its packets.
    pub(crate) fn holds(&self) -> usize {
        let packets = match &self.inflated {
            Some(Ok(Ok(p))) => p.iter().map(Bytes::len).sum(),
            _ => 0,
        };
        self.plain.as_ref().map_or(0, Vec::len) + packets
    }

    /// Its packets let go (the batch is inflated again in its turn).
    pub(crate) fn forget_packets(&mut self) {
        self.inflated = None;
    }
}

/// Why a batch shows no packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpaqueReason {
    /// Encrypted, and no key fits (or the stream was lost).
    Encrypted,
    /// It does not decompress.
    Decompress,
    /// Its records do not add up.
    Malformed,
}

impl OpaqueReason {
    /// The reason as the records write it (`encrypted`, `decompress`, `malformed`).
    pub fn as_str(self) -> &'static str {
        match self {
            OpaqueReason::Encrypted => "encrypted",
            OpaqueReason::Decompress => "decompress",
            OpaqueReason::Malformed => "malformed",
        }
    }
}

/// A batch whose packets cannot be shown.
#[derive(Debug, Clone)]
pub struct Opaque {
    /// Who sent it.
    pub dir: Dir,
    /// The batch's index in its direction, from 0.
    pub batch: u64,
    /// Bytes of the message after its 0xFE.
    pub len: usize,
    /// Why it shows no packets.
    pub reason: OpaqueReason,
    /// The error in words.
    pub detail: String,
}

/// What a batch gave.
// A batch's events are one vector: a packet boxed would cost the reading
// thread a malloc and a free per packet.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum GameEvent {
    /// A game packet decoded (its fields, as far as the schema goes).
    Packet(GamePacket),
    /// A batch whose packets cannot be shown, and why.
    Opaque(Opaque),
}

/// What a message's game events name, for its line and record: the
/// packets' names (`unknown(0x1ff)` without one), or the reason a batch
/// shows none.
pub fn event_names(events: &[GameEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            GameEvent::Packet(p) => match p.name {
                Some(n) => n.to_string(),
                None => format!("unknown(0x{:x})", p.header.id),
            },
            GameEvent::Opaque(o) => o.reason.as_str().to_string(),
        })
        .collect()
}

/// A direction's encryption.
enum Enc {
    /// Not (yet) encrypted.
    Off,
    /// The next batch is the first encrypted one.
    Starting,
    On(Box<Decryptor>),
    /// Encrypted and no key fits, or a checksum failed: opaque from here.
    Lost(String),
}

/// Where a connection's encryption stands, for `flows`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encryption {
    None,
    /// Encrypted, and not (all) decrypted.
    Encrypted,
    Decrypted,
}

impl Encryption {
    pub fn as_str(self) -> &'static str {
        match self {
            Encryption::None => "none",
            Encryption::Encrypted => "encrypted",
            Encryption::Decrypted => "decrypted",
        }
    }
}

struct Side {
    batches: u64,
    enc: Enc,
    /// Turned on with a new key each time: a batch opened ahead under
    /// another generation is opened again.
    generation: u64,
    /// Batches opened ahead and not read yet, and the generation they
    /// were opened under (`None`: not encrypted).
    ahead: (u64, Option<u64>),
    /// Batches shown opaque because of the encryption.
    opaque: u64,
}

impl Side {
    fn new() -> Self {
        Side {
            batches: 0,
            enc: Enc::Off,
            generation: 0,
            ahead: (0, None),
            opaque: 0,
        }
    }
}

/// The game layer of one flow.
pub struct GameFlow {
    /// The RakNet protocol of the Open Connection Requests, when seen.
    pub raknet_protocol: Option<u8>,
    learned: Learned,
    /// The session began with RequestNetworkSettings (1.19.30 on):
    /// compression is negotiated; `None` until the first batch.
    negotiated: Option<bool>,
    /// NetworkSettings was delivered: batches after it are compressed.
    settings: bool,
    sides: [Side; 2],
    keys: Arc<Keys>,
    /// Game packets delivered each way.
    pub packets: [u64; 2],
    /// How far the game login got.
    pub login: LoginProgress,
    /// Decode every packet's fields by the definitions (`None`: only the
    /// hand decoders' fields).
    pub fields: Option<super::fields::Fields>,
}

/// The steps of the game login seen, for the diagnosis.
#[derive(Debug, Clone, Default)]
pub struct LoginProgress {
    /// The login packets in the order delivered (at most 32).
    pub steps: Vec<&'static str>,
    /// The last PlayStatus.
    pub status: Option<i32>,
    /// A Disconnect: who sent it, its message, and the step it came after.
    pub disconnect: Option<(Dir, String, &'static str)>,
    /// PlayStatus player_spawn, or the client's initialisation.
    pub spawned: bool,
}

impl GameFlow {
    /// `signatures`: check the login's signatures (see
    /// [`Learned::unchecked`]).
    /// The keys from now on (a capture's secrets, read as they come).
    pub(crate) fn set_keys(&mut self, keys: Arc<Keys>) {
        self.keys = keys;
    }

    pub fn new(raknet_protocol: Option<u8>, keys: Arc<Keys>, signatures: bool) -> Self {
        GameFlow {
            raknet_protocol,
            learned: Learned {
                unchecked: !signatures,
                ..Learned::default()
            },
            negotiated: None,
            settings: false,
            sides: [Side::new(), Side::new()],
            keys,
            packets: [0; 2],
            login: LoginProgress::default(),
            fields: None,
        }
    }

    /// The game protocol (RequestNetworkSettings or Login).
    pub fn protocol(&self) -> Option<u32> {
        self.learned.protocol
    }

    /// The game version the client data names, and the player's name.
    pub fn game_version(&self) -> Option<&str> {
        self.learned.game_version.as_deref()
    }
    pub fn player(&self) -> Option<&str> {
        self.learned.player.as_deref()
    }

    /// The compression of this session's batches: negotiated by
    /// NetworkSettings from 1.19.30 on; before, by the RakNet protocol
    /// (jsp-raknet says 10 whatever the game version: the first batch
    /// decides).
    pub fn compression(&self) -> Compression {
        match (self.negotiated, self.raknet_protocol) {
            (Some(true), _) if !self.settings => Compression::None,
            (Some(true), _) => self
                .learned
                .algorithm
                .and_then(Compression::from_algorithm)
                .unwrap_or(Compression::Deflate),
            (_, Some(p)) if p <= 9 => Compression::Zlib,
            _ => Compression::Deflate,
        }
    }

    pub fn encryption(&self) -> Encryption {
        let on = |s: &Side| matches!(s.enc, Enc::On(_));
        let off = |s: &Side| matches!(s.enc, Enc::Off);
        if self.sides.iter().all(off) {
            Encryption::None
        } else if self.sides.iter().all(|s| on(s) || off(s)) && self.sides.iter().any(on) {
            Encryption::Decrypted
        } else {
            Encryption::Encrypted
        }
    }

    /// Whether `message` (0xFE and a batch) is the start of a game
    /// session: a RequestNetworkSettings, or a Login however compressed.
    pub fn looks_like_login(message: &[u8]) -> bool {
        let Some((&GAME_MESSAGE, body)) = message.split_first() else {
            return false;
        };
        let tries = [Compression::None, Compression::Deflate, Compression::Zlib];
        tries.iter().any(|&c| {
            batch::decompress(c, body, 1 << 20)
                .ok()
                .and_then(|b| {
                    let first = batch::split(&b).ok()?.first().copied()?;
                    let h = Header::parse(first)?;
                    Some(matches!(
                        h.id,
                        login::REQUEST_NETWORK_SETTINGS | login::LOGIN
                    ))
                })
                .unwrap_or(false)
        })
    }

    /// A 0xFE message delivered in direction `dir`; its packets or why not.
    pub fn message(&mut self, dir: Dir, message: &[u8]) -> Vec<GameEvent> {
        self.batch(dir, message.get(1..).unwrap_or_default())
    }

    /// A batch delivered in direction `dir`, as a transport hands it over
    /// (RakNet: the 0xFE message without its 0xFE; NetherNet: a message
    /// reassembled from the reliable channel, which never turns Bedrock's
    /// encryption on since no ServerToClientHandshake is sent).
    pub fn batch(&mut self, dir: Dir, payload: &[u8]) -> Vec<GameEvent> {
        let d = dir.index();
        let batch = self.sides[d].batches;
        self.sides[d].batches += 1;
        self.read_batch(dir, batch, payload, None)
    }

    /// A batch of this flow opened ahead of its turn, on another thread:
    /// its index counted and its decryption's stream moved past it now,
    /// in the order the batches came, as [`GameFlow::batch`] would; `None`
    /// while the flow's state may still change how the batch opens (the
    /// first batch, the encryption starting or lost).
    pub(crate) fn ahead(&mut self, dir: Dir, payload: &[u8]) -> Option<Ahead> {
        self.negotiated?;
        let inflating = self.inflating();
        let side = &mut self.sides[dir.index()];
        let generation = match &side.enc {
            // Not encrypted before the spawn: the encryption may start yet
            // (a batch opened ahead would be read again in its turn).
            Enc::Off if !self.login.spawned => return None,
            Enc::Off => None,
            Enc::On(_) => Some(side.generation),
            Enc::Starting | Enc::Lost(_) => return None,
        };
        // Batches still out under another encryption may be read here, in
        // their turn, with this side's stream: it must not move past them.
        if side.ahead.0 > 0 && side.ahead.1 != generation {
            return None;
        }
        let decryptor = match &mut side.enc {
            Enc::On(dec) => {
                let before = dec.clone();
                dec.skip(payload);
                Some(before)
            }
            _ => None,
        };
        side.ahead = (side.ahead.0 + 1, generation);
        let batch = side.batches;
        side.batches += 1;
        Some(Ahead {
            dir,
            batch,
            generation,
            decryptor,
            inflating,
        })
    }

    /// The batch [`GameFlow::ahead`] opened, its turn come: what it was
    /// opened into, when the flow is as it was then (the same encryption
    /// key, the same compression), else opened again here; its packets then
    /// read in order as [`GameFlow::batch`] reads them.
    pub(crate) fn finish_ahead(
        &mut self,
        payload: &[u8],
        a: Ahead,
        opened: Opened,
    ) -> Vec<GameEvent> {
        let side = &mut self.sides[a.dir.index()];
        side.ahead.0 = side.ahead.0.saturating_sub(1);
        let same = match (&side.enc, a.generation) {
            (Enc::Off, None) => true,
            (Enc::On(_), Some(g)) => g == side.generation,
            _ => false,
        };
        let opened = same.then(|| Opened {
            inflated: opened.inflated.filter(|_| self.inflating() == a.inflating),
            ..opened
        });
        self.read_batch(a.dir, a.batch, payload, opened)
    }

    /// The encryption of side `d` lost at batch `batch`: why.
    fn lose(&mut self, d: usize, batch: u64) -> String {
        let why = format!(
            "the checksum of batch {batch} does not verify: the rest of this direction is not shown"
        );
        self.sides[d].enc = Enc::Lost(why.clone());
        self.sides[d].opaque += 1;
        why
    }

    /// Batch number `batch` of direction `dir` decrypted, inflated and its
    /// packets read; with what was `opened` of it already.
    fn read_batch(
        &mut self,
        dir: Dir,
        batch: u64,
        payload: &[u8],
        opened: Option<Opened>,
    ) -> Vec<GameEvent> {
        let d = dir.index();
        let opaque = |reason, detail: String| {
            vec![GameEvent::Opaque(Opaque {
                dir,
                batch,
                len: payload.len(),
                reason,
                detail,
            })]
        };
        // Decrypt.
        let encrypted = !matches!(self.sides[d].enc, Enc::Off);
        let mut inflated = None;
        let plain: std::borrow::Cow<'_, [u8]> = match opened {
            Some(o) => match o.plain {
                Some(p) => {
                    inflated = o.inflated;
                    std::borrow::Cow::Owned(p)
                }
                None => return opaque(OpaqueReason::Encrypted, self.lose(d, batch)),
            },
            None => {
                if matches!(self.sides[d].enc, Enc::Starting) {
                    self.sides[d].enc = self.first_encrypted(payload);
                    self.sides[d].generation += 1;
                }
                match &mut self.sides[d].enc {
                    Enc::Off => std::borrow::Cow::Borrowed(payload),
                    Enc::Starting => unreachable!("settled above"),
                    Enc::Lost(why) => {
                        let why = why.clone();
                        self.sides[d].opaque += 1;
                        return opaque(OpaqueReason::Encrypted, why);
                    }
                    Enc::On(dec) => match dec.decrypt(payload) {
                        Some(p) => std::borrow::Cow::Owned(p),
                        None => return opaque(OpaqueReason::Encrypted, self.lose(d, batch)),
                    },
                }
            }
        };
        let body: &[u8] = &plain;
        let split = match inflated {
            Some(r) => r,
            None => self.decompress(body).map(split_owned),
        };
        let records = match split {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return opaque(OpaqueReason::Malformed, e),
            Err(BatchError::Decompress(e)) => return opaque(OpaqueReason::Decompress, e),
            Err(BatchError::Malformed(e)) => return opaque(OpaqueReason::Malformed, e),
        };
        let mut out = Vec::with_capacity(records.len());
        for rec in records {
            let Some(header) = Header::parse(&rec) else {
                out.extend(opaque(
                    OpaqueReason::Malformed,
                    "a packet header that does not parse".into(),
                ));
                continue;
            };
            // The salt before a handshake: a new one starts the encryption.
            let salt = (header.id == login::SERVER_TO_CLIENT_HANDSHAKE)
                .then(|| self.learned.salt.take())
                .flatten();
            let hand = login::decode(
                header.id,
                &rec[header.len..],
                self.protocol(),
                &mut self.learned,
            );
            self.after(dir, header.id, salt);
            // Named once, by the protocol as it stands after the packet.
            let name = super::names::packet_name(self.protocol(), header.id);
            self.progress(dir, header.id, name, hand.as_ref());
            let body = &rec[header.len..];
            let (decoded, pending) = match &mut self.fields {
                Some(f) => match f.prepare(self.learned.protocol, header.id, body, hand) {
                    Ok(p) => (Default::default(), Some(p)),
                    Err(d) => (d, None),
                },
                None => (
                    super::fields::Decoded {
                        fields: hand,
                        ..Default::default()
                    },
                    None,
                ),
            };
            self.packets[d] += 1;
            out.push(GameEvent::Packet(GamePacket {
                dir,
                batch,
                header,
                name,
                data: rec,
                encrypted,
                fields: decoded.fields,
                anomaly: decoded.anomaly,
                error: decoded.error,
                layout: decoded.layout,
                pending,
            }));
        }
        out
    }

    /// The body of a (decrypted) batch, decompressed as this generation does.
    fn decompress(&mut self, body: &[u8]) -> Result<Vec<u8>, BatchError> {
        if self.negotiated.is_none() {
            // A session that starts with an uncompressed RequestNetworkSettings.
            let first = batch::split(body)
                .ok()
                .and_then(|r| r.first().and_then(|p| Header::parse(p)));
            self.negotiated = Some(first.is_some_and(|h| h.id == login::REQUEST_NETWORK_SETTINGS));
        }
        self.inflating().inflate(body, MAX_DECOMPRESSED)
    }

    /// How the next batch is inflated, as the flow stands (once the first
    /// batch decided whether the compression is negotiated).
    fn inflating(&self) -> Inflating {
        Inflating {
            negotiated: self.negotiated == Some(true),
            compression: self.compression(),
            raknet_known: self.raknet_protocol.is_some(),
            settings: self.settings,
            prefixed: self.settings && self.protocol().is_none_or(|p| p >= 649),
            protocol_known: self.protocol().is_some(),
        }
    }

    /// State a packet changes: compression after NetworkSettings,
    /// encryption after the ServerToClientHandshake.
    fn after(&mut self, dir: Dir, id: u16, salt_before: Option<Vec<u8>>) {
        if id == login::NETWORK_SETTINGS && dir == Dir::S2c {
            self.settings = true;
        }
        if id == login::SERVER_TO_CLIENT_HANDSHAKE
            && dir == Dir::S2c
            && self.learned.salt.is_some()
            && self.learned.salt != salt_before
        {
            // The server's next batch is encrypted; the client's next one
            // (its ClientToServerHandshake) too.
            for s in &mut self.sides {
                s.enc = Enc::Starting;
            }
        }
    }

    /// The login's progress after packet `id`.
    fn progress(&mut self, dir: Dir, id: u16, name: Option<&str>, fields: Option<&Value>) {
        const STEPS: &[&str] = &[
            "request_network_settings",
            "network_settings",
            "login",
            "server_to_client_handshake",
            "client_to_server_handshake",
            "play_status",
            "resource_packs_info",
            "resource_pack_stack",
            "resource_pack_client_response",
            "start_game",
            "set_local_player_as_initialized",
            "disconnect",
        ];
        let Some(name) = name else {
            return;
        };
        let Some(step) = STEPS.iter().find(|s| **s == name) else {
            return;
        };
        let l = &mut self.login;
        if id == login::PLAY_STATUS {
            l.status = fields.and_then(|f| f["status"].as_i64()).map(|v| v as i32);
            l.spawned |= l.status == Some(3);
        }
        if *step == "set_local_player_as_initialized" {
            l.spawned = true;
        }
        if id == login::DISCONNECT {
            let m = fields.and_then(|f| f["message"].as_str()).unwrap_or("");
            let after = l.steps.last().copied().unwrap_or("nothing");
            l.disconnect = Some((dir, m.to_string(), after));
        }
        if l.steps.len() < 32 {
            l.steps.push(step);
        }
    }

    /// Where the game login got and why it stopped, in words; `server`:
    /// the server's protocol and version from its pong, when there was one.
    pub fn diagnosis(&self, server: Option<(u32, &str)>) -> String {
        let l = &self.login;
        let client = match self.protocol() {
            Some(p) => match super::names::versions(p).first() {
                Some(v) => format!("protocol {p} ({v})"),
                None => format!("protocol {p}"),
            },
            None => "an unknown protocol".to_string(),
        };
        let server_said = |other: &str| match server {
            Some((p, v)) => format!("the server protocol {p} ({v})"),
            None => format!("the server {other}"),
        };
        let opaque: u64 = self.opaque_batches().iter().sum();
        match l.status.map(|s| (s, login::play_status_name(s))) {
            Some((1, _)) => {
                return format!(
                    "the server refused the client as outdated (PlayStatus failed_client): the client speaks {client}, {}",
                    server_said("a newer one")
                )
            }
            Some((2, _)) => {
                return format!(
                    "the server refused the client as too new (PlayStatus failed_spawn: outdated server): the client speaks {client}, {}",
                    server_said("an older one")
                )
            }
            Some((s, name)) if s >= 4 => {
                return format!("the server refused the login: PlayStatus {}", name.unwrap_or("unknown"))
            }
            _ => {}
        }
        if let Some((dir, m, after)) = &l.disconnect {
            let who = if *dir == Dir::S2c { "server" } else { "client" };
            return format!("the {who} disconnected after {after}: {m:?}");
        }
        if l.spawned {
            let who = self.player().map_or(String::new(), |p| format!(" as {p}"));
            return format!("logged in{who} and spawned ({client})");
        }
        if opaque > 0 && self.encryption() == Encryption::Encrypted {
            return format!("encrypted, no key given or none fits: {opaque} batches not shown");
        }
        match l.steps.last() {
            None => "no game packet".to_string(),
            Some(&"request_network_settings") => {
                "the server never answered RequestNetworkSettings".to_string()
            }
            Some(&"login") => "the server never answered the Login".to_string(),
            Some(last) => format!("the login stopped after {last}"),
        }
    }

    /// The decryption of a direction's first encrypted batch: a key that
    /// opens it, or why there is none.
    fn first_encrypted(&self, payload: &[u8]) -> Enc {
        if self.keys.is_empty() {
            return Enc::Lost("no key given (--keylog, --key)".into());
        }
        let salt = self.learned.salt.clone().unwrap_or_default();
        let publics: Vec<&str> = [&self.learned.client_key, &self.learned.server_key]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect();
        // CFB8 up to 1.16.210 (428), CTR after; unknown: both.
        let modes = match self.protocol() {
            Some(p) if p <= 428 => [Mode::Cfb8, Mode::Ctr],
            _ => [Mode::Ctr, Mode::Cfb8],
        };
        for key in self.keys.candidates(&salt, &publics) {
            for mode in modes {
                let mut dec = Decryptor::new(key, mode);
                let mut probe = Decryptor::new(key, mode);
                if probe.decrypt(payload).is_some() {
                    // `message` decrypts this batch again from the start.
                    dec.counter = 0;
                    return Enc::On(Box::new(dec));
                }
            }
        }
        Enc::Lost("none of the keys given opens it".into())
    }

    /// Batches shown opaque because of the encryption, each way.
    pub fn opaque_batches(&self) -> [u64; 2] {
        [self.sides[0].opaque, self.sides[1].opaque]
    }

    /// What `flows` says of this game session.
    pub fn summary(&self) -> GameSummary {
        let both = |v: [u64; 2]| PerDir {
            c2s: v[0],
            s2c: v[1],
        };
        GameSummary {
            protocol: self.protocol(),
            version: self.game_version().map(str::to_string),
            player: self.player().map(str::to_string),
            compression: self.compression().as_str(),
            encryption: self.encryption().as_str(),
            packets: both(self.packets),
            opaque: both(self.opaque_batches()),
        }
    }
}

/// A count each way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PerDir {
    pub c2s: u64,
    pub s2c: u64,
}

/// A game session in a line: what `flows` shows (the `game` key of `flow`
/// records).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GameSummary {
    /// The game protocol (RequestNetworkSettings or Login).
    pub protocol: Option<u32>,
    /// The game version of the Login's client data.
    pub version: Option<String>,
    /// The player's name.
    pub player: Option<String>,
    /// none, deflate, zlib or snappy.
    pub compression: &'static str,
    /// none, encrypted (not decrypted, or not all of it) or decrypted.
    pub encryption: &'static str,
    /// Game packets delivered each way.
    pub packets: PerDir,
    /// Batches not shown each way because of the encryption.
    pub opaque: PerDir,
}

impl GameSummary {
    /// `Bedrock 1.26.45 (924)`, the player, and the encryption, on three
    /// lines, for the tables.
    pub fn lines(&self) -> String {
        let mut s = String::from("Bedrock");
        if let Some(v) = &self.version {
            s.push(' ');
            s.push_str(v);
        }
        if let Some(p) = self.protocol {
            s.push_str(&format!(" ({p})"));
        }
        if let Some(p) = &self.player {
            s.push('\n');
            s.push_str(p);
        }
        s.push_str(&format!("\n{}, {}", self.compression, self.encryption));
        s
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bedrock::batch::{join, write_varu32};
    use crate::bedrock::crypto::Encryptor;
    use base64::Engine;
    use serde_json::json;
    use std::io::Write;

    fn deflate(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn packet(id: u32, body: &[u8]) -> Vec<u8> {
        let mut p = Vec::new();
        write_varu32(&mut p, id);
        p.extend_from_slice(body);
        p
    }

    /// 0xFE, then the batch of `packets`, compressed with the algorithm byte
    /// (or not at all), encrypted when `enc` is given.
    fn message(packets: &[Vec<u8>], compressed: bool, enc: Option<&mut Encryptor>) -> Vec<u8> {
        let refs: Vec<&[u8]> = packets.iter().map(Vec::as_slice).collect();
        let body = join(&refs);
        let mut plain = Vec::new();
        if compressed {
            plain.push(0);
            plain.extend(deflate(&body));
        } else {
            plain = body;
        }
        let mut m = vec![GAME_MESSAGE];
        match enc {
            Some(e) => m.extend(e.seal(&plain)),
            None => m.extend(plain),
        }
        m
    }

    fn stch(salt: &[u8]) -> Vec<u8> {
        let b64 = |v: serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
        };
        let salt = base64::engine::general_purpose::STANDARD.encode(salt);
        let token = format!(
            "{}.{}.sig",
            b64(json!({"x5u": "MHYserver"})),
            b64(json!({"salt": salt}))
        );
        let mut body = Vec::new();
        write_varu32(&mut body, token.len() as u32);
        body.extend_from_slice(token.as_bytes());
        packet(3, &body)
    }

    /// A 1.21 session: settings, login (a stand-in body), the handshake,
    /// then encrypted batches both ways. Returns the messages in delivery
    /// order with their direction.
    fn session(key: [u8; 32]) -> Vec<(Dir, Vec<u8>)> {
        let mut to_client = Encryptor::new(key, Mode::Ctr);
        let mut to_server = Encryptor::new(key, Mode::Ctr);
        let mut settings = 0u16.to_le_bytes().to_vec();
        settings.extend([0, 0, 0, 0]);
        settings.extend(0f32.to_le_bytes());
        vec![
            (
                Dir::C2s,
                message(&[packet(193, &800i32.to_be_bytes())], false, None),
            ),
            (Dir::S2c, message(&[packet(143, &settings)], false, None)),
            (
                Dir::C2s,
                message(&[packet(1, &800i32.to_be_bytes())], true, None),
            ),
            (Dir::S2c, message(&[stch(&[7; 16])], true, None)),
            (
                Dir::C2s,
                message(&[packet(4, &[])], true, Some(&mut to_server)),
            ),
            (
                Dir::S2c,
                message(
                    &[packet(2, &0i32.to_be_bytes()), packet(9, &[1, 2])],
                    true,
                    Some(&mut to_client),
                ),
            ),
            (
                Dir::S2c,
                message(
                    &[packet(2, &3i32.to_be_bytes())],
                    true,
                    Some(&mut to_client),
                ),
            ),
        ]
    }

    fn run(keys: Keys, msgs: &[(Dir, Vec<u8>)]) -> (GameFlow, Vec<GameEvent>) {
        let mut f = GameFlow::new(Some(11), Arc::new(keys), true);
        let mut out = Vec::new();
        for (dir, m) in msgs {
            out.extend(f.message(*dir, m));
        }
        (f, out)
    }

    fn names(ev: &[GameEvent]) -> Vec<String> {
        ev.iter()
            .map(|e| match e {
                GameEvent::Packet(p) => p.name.unwrap_or("?").to_string(),
                GameEvent::Opaque(o) => format!("opaque {}", o.reason.as_str()),
            })
            .collect()
    }

    #[test]
    fn a_session_with_its_key_decrypts_both_ways() {
        let key = [9u8; 32];
        let mut keys = Keys::default();
        keys.add_key_log(&format!(
            "BEDROCK_SALT_KEY {} {}",
            "07".repeat(16),
            "09".repeat(32)
        ));
        let msgs = session(key);
        assert!(GameFlow::looks_like_login(&msgs[0].1));
        assert!(!GameFlow::looks_like_login(&msgs[5].1));
        let (f, ev) = run(keys, &msgs);
        assert_eq!(
            names(&ev),
            [
                "request_network_settings",
                "network_settings",
                "login",
                "server_to_client_handshake",
                "client_to_server_handshake",
                "play_status",
                "text",
                "play_status"
            ]
        );
        let GameEvent::Packet(p) = &ev[6] else {
            panic!()
        };
        assert!(p.encrypted && p.batch == 2 && p.data[..] == [9, 1, 2]);
        let GameEvent::Packet(p) = &ev[7] else {
            panic!()
        };
        assert_eq!(p.fields.as_ref().unwrap()["status_name"], "player_spawn");
        assert_eq!(f.encryption(), Encryption::Decrypted);
        assert_eq!(f.protocol(), Some(800));
        assert_eq!(f.packets, [3, 5]);
    }

    /// What a flow made of messages, to compare: each event's name,
    /// batch, encryption, bytes, or why it is opaque.
    fn shown(ev: &[GameEvent]) -> Vec<String> {
        ev.iter()
            .map(|e| match e {
                GameEvent::Packet(p) => {
                    format!("{:?} {} {} {:?}", p.name, p.batch, p.encrypted, p.data)
                }
                GameEvent::Opaque(o) => format!("{} {:?} {}", o.batch, o.reason, o.detail),
            })
            .collect()
    }

    /// [`session`] with `more` batches each way after the spawn, on the
    /// same streams; without `key`, nothing is encrypted (no handshake).
    /// The key of [`long_session`]'s salt 07.. and key 09...
    pub(crate) fn long_session_keys() -> Keys {
        let mut keys = Keys::default();
        keys.add_key_log(&format!(
            "BEDROCK_SALT_KEY {} {}",
            "07".repeat(16),
            "09".repeat(32)
        ));
        keys
    }

    pub(crate) fn long_session(key: Option<[u8; 32]>, more: u8) -> Vec<(Dir, Vec<u8>)> {
        let mut to_client = key.map(|k| Encryptor::new(k, Mode::Ctr));
        let mut to_server = key.map(|k| Encryptor::new(k, Mode::Ctr));
        let mut settings = 0u16.to_le_bytes().to_vec();
        settings.extend([0, 0, 0, 0]);
        settings.extend(0f32.to_le_bytes());
        let version = 800i32.to_be_bytes();
        let mut msgs = vec![
            (Dir::C2s, message(&[packet(193, &version)], false, None)),
            (Dir::S2c, message(&[packet(143, &settings)], false, None)),
            (Dir::C2s, message(&[packet(1, &version)], true, None)),
        ];
        if key.is_some() {
            msgs.push((Dir::S2c, message(&[stch(&[7; 16])], true, None)));
            msgs.push((
                Dir::C2s,
                message(&[packet(4, &[])], true, to_server.as_mut()),
            ));
        }
        let spawn = packet(2, &3i32.to_be_bytes());
        msgs.push((Dir::S2c, message(&[spawn], true, to_client.as_mut())));
        for i in 0..more {
            let text = packet(9, &[i; 40]);
            let both = [text.clone(), text];
            msgs.push((Dir::S2c, message(&both, true, to_client.as_mut())));
            msgs.push((Dir::C2s, message(&both[..1], true, to_server.as_mut())));
        }
        msgs
    }

    /// Batches opened ahead of their turn ([`GameFlow::ahead`], as the
    /// pipeline's window does: up to `lag` of them out, none ahead while
    /// one that was not is out) and read in their turn
    /// ([`GameFlow::finish_ahead`]) give what reading each in turn gives:
    /// across the encryption's start (batches opened before it are read
    /// again), without encryption, and when a checksum fails with later
    /// batches out.
    #[test]
    fn batches_opened_ahead_read_as_in_their_turn() {
        let keys = long_session_keys;
        let encrypted = long_session(Some([9; 32]), 6);
        let mut broken = encrypted.clone();
        // A byte of an s2c batch after the spawn: its checksum fails.
        broken[9].1[3] ^= 1;
        let plain = long_session(None, 6);
        for case in [&encrypted, &broken, &plain] {
            let mut opened_ahead = 0;
            let (_, want) = run(keys(), case);
            let read = |f: &mut GameFlow, (dir, m): &(Dir, Vec<u8>), a: Option<Ahead>| match a {
                Some(mut a) => {
                    let o = a.open(&m[1..]);
                    f.finish_ahead(&m[1..], a, o)
                }
                None => f.message(*dir, m),
            };
            for lag in 0..16 {
                let mut f = GameFlow::new(Some(11), Arc::new(keys()), true);
                let mut out = Vec::new();
                let mut queue: std::collections::VecDeque<(usize, Option<Ahead>)> =
                    Default::default();
                for (i, (dir, m)) in case.iter().enumerate() {
                    let held = queue.iter().any(|(_, a)| a.is_none());
                    let a = if held { None } else { f.ahead(*dir, &m[1..]) };
                    opened_ahead += usize::from(a.is_some());
                    queue.push_back((i, a));
                    // Read in turn: a batch not opened ahead as soon as it
                    // is first, those opened ahead once `lag` are out, or,
                    // now and then, down to a few (workers finish several
                    // at once).
                    let keep = if i % (2 + lag % 3) == 1 { lag / 3 } else { lag };
                    while queue.len() > keep || queue.front().is_some_and(|(_, a)| a.is_none()) {
                        let (j, a) = queue.pop_front().unwrap();
                        out.extend(read(&mut f, &case[j], a));
                    }
                }
                for (j, a) in queue {
                    out.extend(read(&mut f, &case[j], a));
                }
                assert_eq!(shown(&out), shown(&want), "lag {lag}");
            }
            println!("{opened_ahead} opened ahead");
            assert!(opened_ahead > 20, "{opened_ahead}");
        }
        // The broken batch stops its direction.
        let (_, ev) = run(keys(), &broken);
        assert!(shown(&ev).iter().any(|e| e.contains("does not verify")));
    }

    #[test]
    fn without_a_key_the_rest_is_opaque_and_a_bad_checksum_stops_a_direction() {
        let msgs = session([9u8; 32]);
        let (f, ev) = run(Keys::default(), &msgs);
        let n = names(&ev);
        assert_eq!(
            &n[..4],
            [
                "request_network_settings",
                "network_settings",
                "login",
                "server_to_client_handshake"
            ]
        );
        assert_eq!(&n[4..], ["opaque encrypted"; 3]);
        let GameEvent::Opaque(o) = &ev[4] else {
            panic!()
        };
        assert!(o.detail.contains("no key given"), "{}", o.detail);
        assert_eq!(f.encryption(), Encryption::Encrypted);
        assert_eq!(f.opaque_batches(), [1, 2]);
        // A wrong key: none opens it.
        let mut wrong = Keys::default();
        wrong.add_key_log(&format!("BEDROCK_KEY {}", "01".repeat(32)));
        let (_, ev) = run(wrong, &msgs);
        let GameEvent::Opaque(o) = &ev[4] else {
            panic!()
        };
        assert!(o.detail.contains("none of the keys"), "{}", o.detail);
        // A batch corrupted on the way: that one and the rest of its way.
        let mut bad = msgs.clone();
        let last = bad[5].1.len() - 1;
        bad[5].1[last] ^= 0x40;
        let mut keys = Keys::default();
        keys.add_key_log(&format!("BEDROCK_KEY {}", "09".repeat(32)));
        let (_, ev) = run(keys, &bad);
        assert_eq!(
            &names(&ev)[4..],
            [
                "client_to_server_handshake",
                "opaque encrypted",
                "opaque encrypted"
            ]
        );
    }

    /// Batches compressed by Google's snappy (libsnappy, through
    /// scripts/bedrock-snappy.py) around the packets bedrock-protocol sent
    /// in the bundled session, after a NetworkSettings that says snappy:
    /// every packet back, byte for byte, and the flow says snappy.
    #[test]
    fn snappy_batches_from_libsnappy() {
        let text = include_str!("testdata/snappy-1.26.45.jsonl");
        let mut f = GameFlow::new(Some(11), Arc::new(Keys::default()), true);
        let mut n = 0;
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let dir = if v["dir"] == "c2s" {
                Dir::C2s
            } else {
                Dir::S2c
            };
            let message = crate::wire::cursor::parse_hex(v["message"].as_str().unwrap()).unwrap();
            let want: Vec<Vec<u8>> = v["packets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| crate::wire::cursor::parse_hex(p.as_str().unwrap()).unwrap())
                .collect();
            let got: Vec<Vec<u8>> = f
                .message(dir, &message)
                .into_iter()
                .map(|e| match e {
                    GameEvent::Packet(p) => p.data.to_vec(),
                    GameEvent::Opaque(o) => panic!("batch {n}: {}", o.detail),
                })
                .collect();
            assert_eq!(got, want, "batch {n}");
            n += 1;
        }
        assert_eq!(n, 17);
        assert_eq!(f.compression(), Compression::Snappy);
        assert_eq!(f.player(), Some("Steve"));
        assert_eq!(f.summary().encryption, "none");
    }

    #[test]
    fn generations_of_framing() {
        // RakNet 10 (1.16 to 1.19.21): raw DEFLATE from the first batch.
        let body = join(&[&packet(1, &440i32.to_be_bytes())]);
        let mut m = vec![GAME_MESSAGE];
        m.extend(deflate(&body));
        assert!(GameFlow::looks_like_login(&m));
        let mut f = GameFlow::new(Some(10), Arc::new(Keys::default()), true);
        assert_eq!(names(&f.message(Dir::C2s, &m)), ["login"]);
        assert_eq!(f.compression(), Compression::Deflate);
        // 1.19.30 to 1.20.51: no algorithm byte; small batches raw.
        let mut f = GameFlow::new(Some(11), Arc::new(Keys::default()), true);
        let mut settings = 256u16.to_le_bytes().to_vec();
        settings.extend([0, 0, 0, 0, 0, 0, 0, 0]);
        f.message(
            Dir::C2s,
            &message(&[packet(193, &594i32.to_be_bytes())], false, None),
        );
        f.message(Dir::S2c, &message(&[packet(143, &settings)], false, None));
        let mut m = vec![GAME_MESSAGE];
        m.extend(deflate(&join(&[&packet(1, &594i32.to_be_bytes())])));
        assert_eq!(names(&f.message(Dir::C2s, &m)), ["login"]);
        let raw = message(&[packet(2, &0i32.to_be_bytes())], false, None);
        assert_eq!(names(&f.message(Dir::S2c, &raw)), ["play_status"]);
        // Garbage after the settings: opaque, never a panic.
        let ev = f.message(Dir::S2c, &[GAME_MESSAGE, 0x05, 0xff]);
        assert_eq!(names(&ev), ["opaque malformed"]);
    }

    proptest::proptest! {
        /// Any messages after a real start, with and without keys: events,
        /// never a panic; a diagnosis at the end.
        #[test]
        fn any_messages_never_panic(
            tail in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64), 0..12),
            keyed in proptest::prelude::any::<bool>(),
        ) {
            let mut keys = Keys::default();
            if keyed {
                keys.add_key_log(&format!("BEDROCK_KEY {}", "09".repeat(32)));
            }
            let mut f = GameFlow::new(Some(11), Arc::new(keys), true);
            for (i, (dir, m)) in session([9u8; 32]).into_iter().take(4).enumerate() {
                let _ = (i, f.message(dir, &m));
            }
            for (i, body) in tail.iter().enumerate() {
                let mut m = vec![GAME_MESSAGE];
                m.extend_from_slice(body);
                let dir = if i % 2 == 0 { Dir::C2s } else { Dir::S2c };
                let _ = f.message(dir, &m);
            }
            let _ = f.diagnosis(None);
        }
    }
}
