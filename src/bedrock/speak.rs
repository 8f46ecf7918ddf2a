//! What a Bedrock client and server share (sans-IO, like `session/`): the
//! definitions of their version, the framing (`Codec`), packets built
//! from zero values with the fields meant set, a queue of 0xFE messages to
//! hand to RakNet (reliable ordered, channel 0) and of events for the
//! application. [`super::client::GameClient`] and
//! [`super::server::GameServer`] drive the login on top.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::Value;

use super::batch::Header;
use super::codec::Codec;
use super::schema::{self, Definitions, Session};

/// Why a Bedrock client or server could not do what it was asked, or what
/// its peer sent could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SpeakError {
    /// The definitions know no such game version.
    #[error(
        "no Bedrock version {version:?}; the versions known: {}",
        known_versions().collect::<Vec<_>>().join(", ")
    )]
    UnknownVersion {
        /// The version asked for.
        version: String,
    },
    /// The definitions of a known protocol did not load.
    #[error("no definitions for protocol {0}")]
    NoDefinitions(u32),
    /// The version has no packet of that name.
    #[error("{version} has no packet {name}")]
    NoPacket {
        /// The game version.
        version: String,
        /// The packet name asked for.
        name: String,
    },
    /// A packet's fields do not encode (the schema names the field).
    #[error("{0}")]
    Encode(String),
    /// What the peer sent cannot be used for the login (in words).
    #[error("{0}")]
    Peer(&'static str),
    /// No randomness for a key, salt or UUID.
    #[error(transparent)]
    Random(#[from] crate::random::RandomError),
}

/// What a Bedrock session tells its application.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEvent {
    /// A game packet from the peer, with its fields.
    Packet {
        /// The packet's name (`start_game`).
        name: String,
        /// Its fields as decoded, an object.
        fields: Value,
    },
    /// The connection's key, as a key-log line (`BEDROCK_SALT_KEY salt key`,
    /// docs/bedrock-protocol.md §8).
    KeyLog(String),
    /// The login went through (PlayStatus login_success).
    LoggedIn,
    /// The player spawned (client: PlayStatus player_spawn; server: the
    /// client's SetLocalPlayerAsInitialized).
    Spawned,
    /// The login was refused: why, in words.
    Refused(String),
    /// The peer disconnected, with its message.
    Disconnected(String),
    /// Something the peer sent cannot be read or used.
    Error(String),
}

/// The protocol number of game version `v` ("1.26.45").
pub(crate) fn protocol_of(version: &str) -> Option<u32> {
    super::names::protocols().find(|&p| super::names::versions(p).contains(&version))
}

/// The newest game version of protocol `p` the definitions know.
pub(crate) fn version_of(p: u32) -> Option<&'static str> {
    super::names::versions(p).last().copied()
}

/// The newest game version the definitions know.
pub(crate) fn newest_version() -> &'static str {
    let p = super::names::protocols().max().unwrap_or(0);
    super::names::versions(p).last().copied().unwrap_or("")
}

/// Every game version the definitions know, oldest first.
pub(crate) fn known_versions() -> impl Iterator<Item = &'static str> {
    let mut protocols: Vec<u32> = super::names::protocols().collect();
    protocols.sort_unstable();
    protocols
        .into_iter()
        .flat_map(|p| super::names::versions(p).iter().copied())
}

/// `--version V` of a Bedrock peer: a game version the definitions know
/// (the error lists them).
pub fn known_version(v: &str) -> Result<String, SpeakError> {
    match protocol_of(v) {
        Some(_) => Ok(v.to_string()),
        None => Err(SpeakError::UnknownVersion {
            version: v.to_string(),
        }),
    }
}

/// `set`'s keys over `base`'s, objects merged key by key. A name where the
/// version has a plain number (a field mapped in one version and not in
/// another: `permission_level`) keeps the number: one set of fields serves
/// every version.
pub(crate) fn merge(base: &mut Value, set: &Value) {
    match (base, set) {
        (Value::Number(_), Value::String(s)) if s.parse::<f64>().is_err() => {}
        (Value::Object(b), Value::Object(s)) => {
            for (k, v) in s {
                match b.get_mut(k) {
                    Some(old) => merge(old, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, s) => *b = s.clone(),
    }
}

/// One packet of a delivered message.
pub(crate) struct Received {
    /// Its bytes, header included.
    pub(crate) data: Vec<u8>,
    /// Its name (`unknown(0x..)` when the version has none, `unparsed`
    /// when its header does not read).
    pub(crate) name: String,
    /// Its fields (null where they do not decode).
    pub(crate) fields: Value,
    /// Why its fields (or its header) did not decode.
    pub(crate) error: Option<String>,
    /// Its header read.
    pub(crate) header: bool,
}

/// The state one end of a Bedrock connection keeps.
#[derive(Clone)]
pub struct Speaker {
    pub(crate) version: String,
    pub(crate) protocol: u32,
    pub(crate) defs: Arc<Definitions>,
    /// Compression and encryption of the connection's batches.
    pub codec: Codec,
    pub(crate) session: Session,
    pending: Vec<Vec<u8>>,
    out: VecDeque<Vec<u8>>,
    events: VecDeque<SessionEvent>,
}

impl Speaker {
    /// For game `version`; an error names the versions known.
    pub(crate) fn new(version: &str) -> Result<Self, SpeakError> {
        let protocol = protocol_of(version).ok_or_else(|| SpeakError::UnknownVersion {
            version: version.to_string(),
        })?;
        let defs = schema::definitions(protocol).ok_or(SpeakError::NoDefinitions(protocol))?;
        Ok(Speaker {
            version: version.to_string(),
            protocol,
            defs,
            codec: Codec::new(protocol),
            session: Session::default(),
            pending: Vec::new(),
            out: VecDeque::new(),
            events: VecDeque::new(),
        })
    }

    /// Packet `name`: its zero value with `set` over it, encoded.
    pub(crate) fn build(&self, name: &str, set: &Value) -> Result<Vec<u8>, SpeakError> {
        let mut fields = self.defs.zero(name).ok_or_else(|| SpeakError::NoPacket {
            version: self.version.clone(),
            name: name.to_string(),
        })?;
        merge(&mut fields, set);
        self.defs
            .packet(name, &fields, self.session)
            .map_err(SpeakError::Encode)
    }

    /// Queue packet `name` for the next batch.
    pub(crate) fn queue(&mut self, name: &str, set: Value) -> Result<(), SpeakError> {
        let p = self.build(name, &set)?;
        self.pending.push(p);
        Ok(())
    }

    /// Queue an already encoded packet (header included).
    pub(crate) fn queue_raw(&mut self, packet: Vec<u8>) {
        self.pending.push(packet);
    }

    /// The queued packets as one batch, framed as things stand now.
    pub(crate) fn flush(&mut self) {
        if !self.pending.is_empty() {
            let batch = std::mem::take(&mut self.pending);
            let m = self.codec.encode(&batch);
            self.out.push_back(m);
        }
    }

    pub(crate) fn event(&mut self, e: SessionEvent) {
        self.events.push_back(e);
    }

    /// A delivered 0xFE message's packets: name and fields (an error event
    /// for what does not read).
    pub(crate) fn receive(&mut self, message: &[u8]) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        let packets = match self.codec.decode(message) {
            Ok(p) => self.name(p),
            Err(e) => {
                self.event(SessionEvent::Error(format!("a batch from the peer: {e}")));
                Vec::new()
            }
        };
        for r in packets {
            if let Some(e) = r.error {
                self.event(SessionEvent::Error(match r.header {
                    true => format!("{}: {e}", r.name),
                    false => e,
                }));
                if !r.header {
                    continue;
                }
            }
            self.event(SessionEvent::Packet {
                name: r.name.clone(),
                fields: r.fields.clone(),
            });
            out.push((r.name, r.fields));
        }
        out
    }

    /// A delivered message's body (decrypted, still compressed) and its
    /// packets, each with its bytes (its header included) and what did not
    /// read in it; no events but for a batch that does not read at all.
    pub(crate) fn receive_raw(&mut self, message: &[u8]) -> (Option<Vec<u8>>, Vec<Received>) {
        match self.codec.decode_body(message) {
            Ok((body, packets)) => (Some(body), self.name(packets)),
            Err(e) => {
                self.event(SessionEvent::Error(format!("a batch from the peer: {e}")));
                (None, Vec::new())
            }
        }
    }

    /// Each packet named, its fields decoded (or why not).
    fn name(&self, packets: Vec<Vec<u8>>) -> Vec<Received> {
        let mut out = Vec::with_capacity(packets.len());
        for p in packets {
            let Some(h) = Header::parse(&p) else {
                out.push(Received {
                    data: p,
                    name: "unparsed".into(),
                    fields: Value::Null,
                    error: Some("a packet header that does not parse".into()),
                    header: false,
                });
                continue;
            };
            let name = self
                .defs
                .name(h.id)
                .map_or_else(|| format!("unknown({:#x})", h.id), str::to_string);
            let (fields, error) = match self.defs.decode(h.id, &p[h.len..], self.session) {
                Some(Ok(v)) => (v, None),
                Some(Err(e)) => (Value::Null, Some(e.to_string())),
                None => (Value::Null, None),
            };
            out.push(Received {
                data: p,
                name,
                fields,
                error,
                header: true,
            });
        }
        out
    }

    /// A batch's body as it came from another connection of the same
    /// settings (decrypted, still compressed), sent as it is: after what
    /// is queued.
    pub(crate) fn send_body(&mut self, body: &[u8]) {
        self.flush();
        let m = self.codec.seal_body(body);
        self.out.push_back(m);
    }

    /// The next 0xFE message to send.
    pub(crate) fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.out.pop_front()
    }

    pub(crate) fn poll_event(&mut self) -> Option<SessionEvent> {
        self.events.pop_front()
    }
}

/// The key-log line of a connection.
pub(crate) fn key_log_line(salt: &[u8], key: &[u8; 32]) -> String {
    format!(
        "BEDROCK_SALT_KEY {} {}",
        crate::wire::cursor::hex(salt),
        crate::wire::cursor::hex(key)
    )
}

/// A PlayStatus refusal in words, with both protocols.
pub(crate) fn refusal(status: &str, ours: u32, theirs: Option<u32>) -> String {
    let names = |p: u32| {
        super::names::versions(p)
            .last()
            .map_or(format!("protocol {p}"), |v| format!("protocol {p} ({v})"))
    };
    let what = match status {
        "failed_client" => "the server refused the client as too old (outdated client)",
        "failed_spawn" => "the server refused the client as too new (outdated server)",
        "failed_server_full" => "the server is full",
        other => return format!("the server refused the login: {other}"),
    };
    match theirs {
        Some(t) => format!(
            "{what}: the client speaks {}, the server {}",
            names(ours),
            names(t)
        ),
        None => format!("{what}: the client speaks {}", names(ours)),
    }
}
