//! The records of the live commands (`ping`, `connect`, `serve`, `probe`,
//! `replay`): each an NDJSON object with a `type` (docs/json.md lists their
//! keys), reported by `peer::run` and `replay::run` to a `peer::run::Report`.
//! Their text lines are `output::peer`'s.

use std::net::SocketAddr;
use std::time::Duration;

use serde::Serialize;

use crate::session::{CloseReason, Delivered};
use crate::wire::cursor::hex;
use crate::wire::message_name;

/// Milliseconds, to the microsecond.
pub fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// A GUID in NDJSON: hex, as the capture records write it (an integer would
/// lose precision in tools that read numbers as doubles).
pub fn guid_hex(g: u64) -> String {
    format!("{g:#018x}")
}

/// "1 byte", "2 bytes".
pub fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    crate::wire::plural(n as u64, one, many)
}

/// One record of a live command.
#[derive(Serialize)]
#[serde(untagged)]
pub enum PeerRecord {
    Pong(PongJson),
    NoPong(NoPongJson),
    Failed(FailedJson),
    Listening(ListeningJson),
    Connected(ConnectedJson),
    Message(PeerMessageJson),
    Closed(ClosedJson),
    Step(ProbeStepJson),
    Probe(ProbeJson),
    Replay(ReplayJson),
    /// A Bedrock game packet a live peer received (`connect --bedrock`).
    Game(PeerGameJson),
    /// A step of a live Bedrock login (`connect --bedrock`).
    Login(PeerLoginJson),
    /// The end of a game replay: the server's answers then and now.
    GameReplay(GameReplayJson),
}

impl PeerRecord {
    /// Per-message records, left out by `-q`.
    pub fn is_per_message(&self) -> bool {
        matches!(
            self,
            PeerRecord::Message(_) | PeerRecord::Step(_) | PeerRecord::Game(_)
        )
    }
}

/// `replay --bedrock`'s summary: what was sent, and the server's packets
/// after the spawn in the capture and now, by name, with the first place
/// their sequences part.
#[derive(Serialize)]
pub struct GameReplayJson {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub file: String,
    pub flow: u32,
    pub version: String,
    /// The captured client's packets sent, of how many.
    pub sent: usize,
    pub packets: usize,
    /// Server packets after the spawn, by name: in the capture, now.
    pub captured: std::collections::BTreeMap<String, usize>,
    pub now: std::collections::BTreeMap<String, usize>,
    /// The first index where the two sequences differ, with each side's
    /// packet there (null past its end); absent when they are the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_divergence: Option<serde_json::Value>,
}

impl GameReplayJson {
    pub fn new(
        file: &str,
        flow: u32,
        version: &str,
        (sent, packets): (usize, usize),
        captured: &[String],
        now: &[String],
    ) -> Self {
        let count = |v: &[String]| {
            let mut m = std::collections::BTreeMap::new();
            for n in v {
                *m.entry(n.clone()).or_insert(0) += 1;
            }
            m
        };
        let first_divergence = (0..captured.len().max(now.len()))
            .find(|&i| captured.get(i) != now.get(i))
            .map(
                |i| serde_json::json!({"index": i, "captured": captured.get(i), "now": now.get(i)}),
            );
        GameReplayJson {
            kind: "game_replay",
            file: file.to_string(),
            flow,
            version: version.to_string(),
            sent,
            packets,
            captured: count(captured),
            now: count(now),
            first_divergence,
        }
    }
}

/// A game packet received by a live Bedrock peer.
#[derive(Serialize)]
pub struct PeerGameJson {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub peer: String,
    pub dir: &'static str,
    pub ts: f64,
    pub name: String,
    pub fields: serde_json::Value,
}

/// A step of a live Bedrock login: `key_log` (detail: the key-log line),
/// `logged_in`, `spawned`, `refused`, `disconnected`, `error`, `no_answer`.
#[derive(Serialize)]
pub struct PeerLoginJson {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub peer: String,
    pub ts: f64,
    pub event: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

#[derive(Serialize)]
pub struct PongJson {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub target: String,
    pub seq: u32,
    pub rtt_ms: f64,
    pub server_guid: String,
    pub payload: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub motd: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// A ping that went unanswered.
#[derive(Serialize)]
pub struct NoPongJson {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub target: String,
    pub seq: u32,
    pub timeout_s: f64,
}

/// A live command that could not reach or keep its peer: the step, in the
/// words of `handshake` outcomes, and what happened.
#[derive(Serialize)]
pub struct FailedJson {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub target: String,
    pub step: &'static str,
    pub error: String,
}

#[derive(Serialize)]
pub struct ListeningJson {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub address: String,
    pub guid: String,
    pub protocol: u8,
}

#[derive(Serialize)]
pub struct ConnectedJson {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub peer: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guid: Option<String>,
    pub mtu: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handshake_ms: Option<f64>,
    /// The line's words when a command says more than "connected".
    #[serde(skip)]
    pub text: Option<String>,
}

#[derive(Serialize)]
pub struct PeerMessageJson {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub peer: String,
    pub dir: &'static str,
    pub ts: f64,
    pub id: Option<u8>,
    pub name: Option<String>,
    pub len: usize,
    pub reliability: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<u8>,
    pub data: String,
}

impl PeerMessageJson {
    pub fn new(peer: SocketAddr, dir: &'static str, m: &Delivered) -> Self {
        let id = m.data.first().copied();
        PeerMessageJson {
            kind: "message",
            peer: peer.to_string(),
            dir,
            ts: m.ts.as_secs_f64(),
            id,
            name: id.map(|i| message_name(i).into_owned()),
            len: m.data.len(),
            reliability: m.reliability.name(),
            channel: m.channel,
            data: hex(&m.data),
        }
    }
}

/// A connection's end, with what went each way. Message counts are the
/// application's messages: RakNet's own (ConnectionRequest, pings, ...) are
/// not counted.
#[derive(Serialize)]
pub struct ClosedJson {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub peer: String,
    pub reason: &'static str,
    pub messages_sent: u64,
    pub bytes_sent: u64,
    pub messages_received: u64,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub resends: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<f64>,
    pub seconds: f64,
}

/// What a driver counted of the application's messages on one connection.
#[derive(Debug, Default, Clone, Copy)]
pub struct AppCounts {
    pub messages_sent: u64,
    pub bytes_sent: u64,
    pub messages_received: u64,
}

impl ClosedJson {
    pub fn new(
        peer: SocketAddr,
        reason: CloseReason,
        c: &crate::session::Connection,
        app: AppCounts,
        seconds: f64,
    ) -> Self {
        let s = c.stats();
        ClosedJson {
            kind: "closed",
            peer: peer.to_string(),
            reason: reason.as_str(),
            messages_sent: app.messages_sent,
            bytes_sent: app.bytes_sent,
            messages_received: app.messages_received,
            datagrams_sent: s.send.datagrams_sent,
            datagrams_received: s.datagrams_received,
            resends: s.send.resends_after_nack + s.send.resends_after_timeout,
            rtt_ms: c.rtt().map(ms),
            seconds,
        }
    }
}

#[derive(Serialize)]
pub struct ProbeStepJson {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub t: f64,
    pub step: &'static str,
    pub detail: String,
}

#[derive(Serialize)]
pub struct ProbeJson {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub target: String,
    pub outcome: &'static str,
    pub diagnosis: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_guid: Option<String>,
    pub seconds: f64,
}

#[derive(Serialize)]
pub struct IdCount {
    pub id: u8,
    pub name: String,
    pub captured: usize,
    pub live: usize,
}

#[derive(Serialize)]
pub struct Divergence {
    pub index: usize,
    pub captured: Option<String>,
    pub live: Option<String>,
}

#[derive(Serialize)]
pub struct ReplayJson {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub file: String,
    pub flow: u32,
    pub target: String,
    pub outcome: &'static str,
    pub handshake_ms: f64,
    pub protocol: u8,
    pub mtu: u16,
    pub messages_sent: usize,
    /// The client messages of the capture.
    #[serde(skip)]
    pub messages_captured: usize,
    pub messages_acknowledged: usize,
    /// Messages whose acknowledgement can be known (all but sequenced ones).
    pub messages_trackable: usize,
    pub server_messages_captured: usize,
    pub server_messages_live: usize,
    pub server_ids: Vec<IdCount>,
    pub first_divergence: Option<Divergence>,
    pub rtt_ms: Option<f64>,
    pub resends: u64,
    pub datagrams_sent: u64,
    pub seconds: f64,
}
