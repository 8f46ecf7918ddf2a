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
pub(crate) fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// A GUID in NDJSON: hex, as the capture records write it (an integer would
/// lose precision in tools that read numbers as doubles).
pub(crate) fn guid_hex(g: u64) -> String {
    format!("{g:#018x}")
}

/// "1 byte", "2 bytes".
pub(crate) fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    crate::wire::plural(n as u64, one, many)
}

/// One record of a live command.
#[derive(Serialize)]
#[serde(untagged)]
pub enum PeerRecord {
    /// An answered ping (`ping`).
    Pong(PongJson),
    /// An unanswered ping (`ping`).
    NoPong(NoPongJson),
    /// A NetherNet server's status (`ping`: `GET /v1/join` answered 2xx).
    JoinStatus(JoinStatusJson),
    /// No NetherNet status: a status other than 2xx, or no HTTP answer.
    NoJoinStatus(NoJoinStatusJson),
    /// Which transports answered (`ping` trying both).
    Transports(TransportsJson),
    /// A NetherNet join done: its channels open (`connect --nethernet`).
    Joined(JoinedJson),
    /// A peer not reached or lost (`ping`, `connect`, `replay`).
    Failed(FailedJson),
    /// `serve`'s socket, bound.
    Listening(ListeningJson),
    /// A handshake done (`connect`, `replay`; `serve`, per client).
    Connected(ConnectedJson),
    /// A message from the peer.
    Message(PeerMessageJson),
    /// A connection's end.
    Closed(ClosedJson),
    /// A step of `probe`.
    Step(ProbeStepJson),
    /// `probe`'s outcome.
    Probe(ProbeJson),
    /// `replay`'s summary.
    Replay(ReplayJson),
    /// A Bedrock game packet a live peer received (`connect --bedrock`).
    Game(PeerGameJson),
    /// A step of a live Bedrock login (`connect --bedrock`).
    Login(PeerLoginJson),
    /// The end of a game replay: the server's answers then and now.
    GameReplay(GameReplayJson),
    /// `proxy`'s packets by name at its end.
    GameCounts(GameCountsJson),
    /// A row of `-T fields` (`proxy -e`), its line end included: printed
    /// as it is.
    Row(String),
}

impl PeerRecord {
    /// Per-message records, left out by `-q`.
    pub fn is_per_message(&self) -> bool {
        matches!(
            self,
            PeerRecord::Message(_) | PeerRecord::Step(_) | PeerRecord::Game(_) | PeerRecord::Row(_)
        )
    }
}

/// `replay --bedrock`'s summary: what was sent, and the server's packets
/// after the spawn in the capture and now, by name, with the first place
/// their sequences part.
#[derive(Serialize)]
pub struct GameReplayJson {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) file: String,
    pub(crate) flow: u32,
    pub(crate) version: String,
    /// The captured client's packets sent, of how many.
    pub(crate) sent: usize,
    pub(crate) packets: usize,
    /// Server packets after the spawn, by name: in the capture, now.
    pub(crate) captured: std::collections::BTreeMap<String, usize>,
    pub(crate) now: std::collections::BTreeMap<String, usize>,
    /// The first index where the two sequences differ, with each side's
    /// packet there (null past its end); absent when they are the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) first_divergence: Option<serde_json::Value>,
}

impl GameReplayJson {
    pub(crate) fn new(
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
    pub(crate) kind: &'static str,
    pub(crate) peer: String,
    pub(crate) dir: &'static str,
    pub(crate) ts: f64,
    pub(crate) name: String,
    pub(crate) fields: serde_json::Value,
    /// `proxy`: `rewritten` (the Login) or `consumed` (a leg's own
    /// handshake); absent for a packet passed as it came.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) relay: Option<&'static str>,
    /// `proxy`: why the fields did not decode (the packet passed all the
    /// same), as `game`'s `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

/// `proxy`'s last record: every game packet by name, each way.
#[derive(Serialize)]
pub struct GameCountsJson {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    /// Players that connected.
    pub(crate) players: u64,
    pub(crate) c2s: std::collections::BTreeMap<String, u64>,
    pub(crate) s2c: std::collections::BTreeMap<String, u64>,
}

/// A step of a live Bedrock login: `key_log` (detail: the key-log line),
/// `logged_in`, `spawned`, `refused`, `disconnected`, `error`, `no_answer`.
#[derive(Serialize)]
pub struct PeerLoginJson {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) peer: String,
    pub(crate) ts: f64,
    pub(crate) event: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) detail: String,
}

/// An answered ping: its RTT and the server's GUID and payload.
#[derive(Serialize)]
pub struct PongJson {
    #[serde(flatten)]
    pub(crate) asked: Asked,
    pub(crate) rtt_ms: f64,
    pub(crate) server_guid: String,
    pub(crate) payload: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) motd: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) text: Option<String>,
}

/// What each round's record of `ping` starts with.
#[derive(Serialize)]
pub struct Asked {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    /// `raknet` or `nethernet`.
    pub(crate) transport: &'static str,
    pub(crate) target: String,
    /// The round, from 0.
    pub(crate) seq: u32,
}

/// A ping that went unanswered.
#[derive(Serialize)]
pub struct NoPongJson {
    #[serde(flatten)]
    pub(crate) asked: Asked,
    pub(crate) timeout_s: f64,
}

/// A NetherNet server's answer to `GET /v1/join` with a 2xx status.
#[derive(Serialize)]
pub struct JoinStatusJson {
    #[serde(flatten)]
    pub(crate) asked: Asked,
    /// From the TCP connect to the whole answer.
    pub(crate) rtt_ms: f64,
    pub(crate) status: u16,
    pub(crate) content_type: Option<String>,
    /// The body when it is a JSON object (`name`, `protocol`, `version`,
    /// `level`, `players`, `maxPlayers`, `gameType` on a dedicated server),
    /// its keys as sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) server: Option<serde_json::Map<String, serde_json::Value>>,
    /// The body as text, when it is not a JSON object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) body: Option<String>,
}

/// No NetherNet status: an answer other than 2xx (`status`), or none
/// (`step`, `error`).
#[derive(Serialize)]
pub struct NoJoinStatusJson {
    #[serde(flatten)]
    pub(crate) asked: Asked,
    /// The HTTP status, when the server answered.
    pub(crate) status: Option<u16>,
    /// Why there was no answer (`refused`, `timeout`, `closed`,
    /// `not_http`, `io_error`), or `status` for an answer other than 2xx.
    pub(crate) step: &'static str,
    pub(crate) error: String,
}

/// A NetherNet join done: the offer answered, ICE, DTLS and SCTP up,
/// NetherNet's two channels open.
#[derive(Serialize)]
pub struct JoinedJson {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) transport: &'static str,
    /// The server's signaling address (TCP).
    pub(crate) peer: String,
    /// The network id the offer was posted to.
    pub(crate) network_id: String,
    /// The server's address ICE chose (UDP).
    pub(crate) remote: String,
    /// `client` (we sent the ClientHello) or `server`.
    pub(crate) dtls_role: &'static str,
    /// From the offer posted to both channels open.
    pub(crate) join_ms: f64,
    /// What the server's identity assertion says, checked.
    pub(crate) server_identity: String,
}

/// Which transports answered `ping`'s requests.
#[derive(Serialize)]
pub struct TransportsJson {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) target: String,
    /// Pongs to RakNet's unconnected pings.
    pub(crate) raknet: u32,
    /// 2xx answers to NetherNet's `GET /v1/join`.
    pub(crate) nethernet: u32,
    /// `nethernet`, `raknet`, `both` or `none`.
    pub(crate) answered: &'static str,
}

/// A live command that could not reach or keep its peer: the step, in the
/// words of `handshake` outcomes, and what happened.
#[derive(Serialize)]
pub struct FailedJson {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) target: String,
    pub(crate) step: &'static str,
    pub(crate) error: String,
}

/// `serve`'s socket, once bound: its address, GUID and protocol.
#[derive(Serialize)]
pub struct ListeningJson {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) address: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) guid: String,
    pub(crate) protocol: u8,
    /// `nethernet` for a NetherNet server (its TCP and UDP port); absent
    /// for RakNet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) transport: Option<&'static str>,
}

/// A handshake done: the peer, its GUID, the MTU and the time it took.
#[derive(Serialize)]
pub struct ConnectedJson {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) peer: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) guid: Option<String>,
    pub(crate) mtu: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) handshake_ms: Option<f64>,
    /// The line's words when a command says more than "connected".
    #[serde(skip)]
    pub(crate) text: Option<String>,
}

/// A message delivered from the peer, its data in hex.
#[derive(Serialize)]
pub struct PeerMessageJson {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) peer: String,
    pub(crate) dir: &'static str,
    pub(crate) ts: f64,
    pub(crate) id: Option<u8>,
    pub(crate) name: Option<String>,
    pub(crate) len: usize,
    pub(crate) reliability: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) channel: Option<u8>,
    pub(crate) data: String,
}

impl PeerMessageJson {
    pub(crate) fn new(peer: SocketAddr, dir: &'static str, m: &Delivered) -> Self {
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
    pub(crate) kind: &'static str,
    pub(crate) peer: String,
    pub(crate) reason: &'static str,
    pub(crate) messages_sent: u64,
    pub(crate) bytes_sent: u64,
    pub(crate) messages_received: u64,
    pub(crate) datagrams_sent: u64,
    pub(crate) datagrams_received: u64,
    pub(crate) resends: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) rtt_ms: Option<f64>,
    pub(crate) seconds: f64,
}

/// What a driver counted of the application's messages on one connection.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct AppCounts {
    pub(crate) messages_sent: u64,
    pub(crate) bytes_sent: u64,
    pub(crate) messages_received: u64,
}

impl ClosedJson {
    pub(crate) fn new(
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

/// A step of `probe`, printed as it happens.
#[derive(Serialize)]
pub struct ProbeStepJson {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) t: f64,
    pub(crate) step: &'static str,
    pub(crate) detail: String,
}

/// `probe`'s outcome and its diagnosis.
#[derive(Serialize)]
pub struct ProbeJson {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) target: String,
    pub(crate) outcome: &'static str,
    pub(crate) diagnosis: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) mtu: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) server_guid: Option<String>,
    pub(crate) seconds: f64,
}

#[derive(Serialize)]
pub(crate) struct IdCount {
    pub(crate) id: u8,
    pub(crate) name: String,
    pub(crate) captured: usize,
    pub(crate) live: usize,
}

#[derive(Serialize)]
pub(crate) struct Divergence {
    pub(crate) index: usize,
    pub(crate) captured: Option<String>,
    pub(crate) live: Option<String>,
}

/// `replay`'s summary: what was sent and how the live server's messages
/// compare with the captured ones.
#[derive(Serialize)]
pub struct ReplayJson {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) file: String,
    pub(crate) flow: u32,
    pub(crate) target: String,
    pub(crate) outcome: &'static str,
    pub(crate) handshake_ms: f64,
    pub(crate) protocol: u8,
    pub(crate) mtu: u16,
    pub(crate) messages_sent: usize,
    /// The client messages of the capture.
    #[serde(skip)]
    pub(crate) messages_captured: usize,
    pub(crate) messages_acknowledged: usize,
    /// Messages whose acknowledgement can be known (all but sequenced ones).
    pub(crate) messages_trackable: usize,
    pub(crate) server_messages_captured: usize,
    pub(crate) server_messages_live: usize,
    pub(crate) server_ids: Vec<IdCount>,
    pub(crate) first_divergence: Option<Divergence>,
    pub(crate) rtt_ms: Option<f64>,
    pub(crate) resends: u64,
    pub(crate) datagrams_sent: u64,
    pub(crate) seconds: f64,
}
