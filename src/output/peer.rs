//! The records of the live commands (`ping`, `connect`, `serve`, `probe`,
//! `replay`): each an NDJSON object with a `type`, and a text line.
//! docs/json.md lists their keys.

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

    pub fn lines(&self) -> String {
        let mut s = format!(
            "replayed flow {} of {} (Bedrock {}): {} of {} client packets sent after the spawn\n",
            self.flow, self.file, self.version, self.sent, self.packets
        );
        s.push_str("server packets after the spawn   captured   now\n");
        let names: std::collections::BTreeSet<&String> =
            self.captured.keys().chain(self.now.keys()).collect();
        for n in names {
            let (c, w) = (
                self.captured.get(n).copied().unwrap_or(0),
                self.now.get(n).copied().unwrap_or(0),
            );
            let mark = if c == w { "" } else { "  *" };
            s.push_str(&format!("  {n:<30} {c:>8} {w:>5}{mark}\n"));
        }
        match &self.first_divergence {
            None => s.push_str("the same packets in the same order"),
            Some(d) => s.push_str(&format!(
                "first divergence at server packet {}: captured {}, now {}",
                d["index"],
                d["captured"].as_str().unwrap_or("(none)"),
                d["now"].as_str().unwrap_or("(none)")
            )),
        }
        s
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

impl PeerRecord {
    /// The record as a text line (or lines).
    pub fn line(&self) -> String {
        match self {
            PeerRecord::Pong(r) => r.line(),
            PeerRecord::NoPong(r) => format!(
                "no pong from {}: seq {}, {} s",
                r.target, r.seq, r.timeout_s
            ),
            PeerRecord::Failed(r) => format!("{}: {} [{}]", r.target, r.error, r.step),
            PeerRecord::Listening(r) => format!("listening {}", r.address),
            PeerRecord::Connected(r) => r.line(),
            PeerRecord::Message(r) => r.line(),
            PeerRecord::Closed(r) => r.line(),
            PeerRecord::Step(r) => format!("{:>+11.6}  {:<30} {}", r.t, r.step, r.detail),
            PeerRecord::Probe(r) => format!("outcome: {} ({})", r.outcome, r.diagnosis),
            PeerRecord::Replay(r) => r.lines(),
            PeerRecord::Game(r) => {
                let keys = crate::output::game::key_fields(&r.fields);
                format!("{:>11.6} {} {} {}{keys}", r.ts, r.peer, r.dir, r.name)
            }
            PeerRecord::Login(r) if r.detail.is_empty() => {
                format!("{:>11.6} {} game login: {}", r.ts, r.peer, r.event)
            }
            PeerRecord::Login(r) => {
                format!(
                    "{:>11.6} {} game login: {}: {}",
                    r.ts, r.peer, r.event, r.detail
                )
            }
            PeerRecord::GameReplay(r) => r.lines(),
        }
    }

    /// Per-message records, left out by `-q`.
    pub fn is_per_message(&self) -> bool {
        matches!(
            self,
            PeerRecord::Message(_) | PeerRecord::Step(_) | PeerRecord::Game(_)
        )
    }
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

impl PongJson {
    fn line(&self) -> String {
        let mut line = format!(
            "pong from {}: seq {}, rtt {:.3} ms, server guid {}, {} {} of payload",
            self.target,
            self.seq,
            self.rtt_ms,
            self.server_guid,
            self.payload.len() / 2,
            plural(self.payload.len() / 2, "byte", "bytes")
        );
        if let Some(m) = &self.motd {
            for (name, value) in m {
                let v = value.as_str().unwrap_or_default();
                line.push_str(&format!("\n  {name}: {v}"));
            }
        } else if let Some(t) = &self.text {
            line.push_str(&format!(": {t:?}"));
        } else if !self.payload.is_empty() {
            line.push_str(&format!(": {}", self.payload));
        }
        line
    }
}

/// "1 byte", "2 bytes".
pub fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    crate::wire::plural(n as u64, one, many)
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

impl ConnectedJson {
    fn line(&self) -> String {
        if let Some(t) = &self.text {
            return t.clone();
        }
        match self.handshake_ms {
            Some(h) => format!(
                "connected to {}: server guid {}, MTU {}, handshake {h:.3} ms",
                self.peer,
                self.guid.as_deref().unwrap_or("-"),
                self.mtu
            ),
            None => format!("connected {}: MTU {}", self.peer, self.mtu),
        }
    }
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

    fn line(&self) -> String {
        let mut s = format!(
            "{:>10.6} {} {} {} {} {} {}",
            self.ts,
            self.dir,
            self.peer,
            self.name.as_deref().unwrap_or("-"),
            self.len,
            plural(self.len, "byte", "bytes"),
            self.reliability
        );
        if let Some(c) = self.channel {
            s.push_str(&format!(" ch {c}"));
        }
        let head = &self.data[..self.data.len().min(64)];
        s.push_str(&format!(" {head}"));
        if self.data.len() > 64 {
            s.push('…');
        }
        s
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

    fn line(&self) -> String {
        let n = |v: u64, one: &'static str, many: &'static str| {
            format!("{v} {}", plural(v as usize, one, many))
        };
        format!(
            "closed {} ({}): sent {} ({}) in {}, {}; received {} in {}; rtt {}; {:.3} s",
            self.peer,
            self.reason,
            n(self.messages_sent, "message", "messages"),
            n(self.bytes_sent, "byte", "bytes"),
            n(self.datagrams_sent, "datagram", "datagrams"),
            n(self.resends, "resend", "resends"),
            n(self.messages_received, "message", "messages"),
            n(self.datagrams_received, "datagram", "datagrams"),
            self.rtt_ms.map_or("-".into(), |v| format!("{v:.3} ms")),
            self.seconds
        )
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

impl ReplayJson {
    fn lines(&self) -> String {
        let mut s = format!(
            "{}: sent {} of {} messages, {} of {} acknowledged; {} {}, rtt {}; {:.3} s\n",
            self.outcome,
            self.messages_sent,
            self.messages_captured,
            self.messages_acknowledged,
            self.messages_trackable,
            self.resends,
            plural(self.resends as usize, "resend", "resends"),
            self.rtt_ms.map_or("-".into(), |v| format!("{v:.3} ms")),
            self.seconds
        );
        s.push_str(&format!(
            "server messages: {} in the capture, {} live\n",
            self.server_messages_captured, self.server_messages_live
        ));
        for c in &self.server_ids {
            s.push_str(&format!(
                "  {:#04x} {:<28} captured {:>6}  live {:>6}\n",
                c.id, c.name, c.captured, c.live
            ));
        }
        match &self.first_divergence {
            None => s.push_str("the server's messages follow the capture, id for id"),
            Some(d) => s.push_str(&format!(
                "first divergence at server message {}: captured {}, live {}",
                d.index,
                d.captured.as_deref().unwrap_or("nothing"),
                d.live.as_deref().unwrap_or("nothing")
            )),
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_say_one_byte_and_two_bytes() {
        let r = PeerRecord::Pong(PongJson {
            kind: "pong",
            target: "127.0.0.1:19132".into(),
            seq: 0,
            rtt_ms: 0.5,
            server_guid: guid_hex(1),
            payload: "61".into(),
            motd: None,
            text: Some("a".into()),
        });
        assert_eq!(
            r.line(),
            "pong from 127.0.0.1:19132: seq 0, rtt 0.500 ms, server guid 0x0000000000000001, 1 byte of payload: \"a\""
        );
        let c = ClosedJson {
            kind: "closed",
            peer: "p".into(),
            reason: "closed",
            messages_sent: 1,
            bytes_sent: 2,
            messages_received: 0,
            datagrams_sent: 1,
            datagrams_received: 1,
            resends: 0,
            rtt_ms: None,
            seconds: 0.0,
        };
        assert_eq!(
            c.line(),
            "closed p (closed): sent 1 message (2 bytes) in 1 datagram, 0 resends; received 0 messages in 1 datagram; rtt -; 0.000 s"
        );
    }
}
