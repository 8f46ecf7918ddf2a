//! The text lines of the live commands' records ([`crate::records::peer`]:
//! what `ping`, `connect`, `serve`, `probe` and `replay` report).

use std::io::{self, Write};

use super::text::Palette;
pub(crate) use crate::records::peer::plural;
use crate::records::peer::*;

impl PeerRecord {
    /// The record on `out`: its NDJSON with `json`, else its line (a ping
    /// unanswered in the anomaly colour; a message's only with
    /// `message_lines`).
    pub fn write(
        &self,
        json: bool,
        message_lines: bool,
        pal: &Palette,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        if let PeerRecord::Row(row) = self {
            out.write_all(row.as_bytes())
        } else if json {
            serde_json::to_writer(&mut *out, self)?;
            out.write_all(b"\n")
        } else if message_lines || !matches!(self, PeerRecord::Message(_)) {
            let line = self.line();
            let line = match self {
                PeerRecord::NoPong(_) | PeerRecord::NoJoinStatus(_) => pal.paint_anomaly(&line),
                _ => line,
            };
            writeln!(out, "{line}")
        } else {
            Ok(())
        }
    }

    /// The record as a text line (or lines).
    pub fn line(&self) -> String {
        match self {
            PeerRecord::Pong(r) => r.line(),
            PeerRecord::NoPong(r) => format!(
                "no pong from {}: seq {}, {} s",
                r.asked.target, r.asked.seq, r.timeout_s
            ),
            PeerRecord::JoinStatus(r) => r.line(),
            PeerRecord::NoJoinStatus(r) => format!(
                "no NetherNet status from {}: seq {}, {}",
                r.asked.target, r.asked.seq, r.error
            ),
            PeerRecord::Transports(r) => r.line(),
            PeerRecord::Joined(r) => format!(
                "joined {} over NetherNet in {:.3} ms: network id {}, ICE {}, we are the DTLS {}; \
                 the server's identity: {}",
                r.peer, r.join_ms, r.network_id, r.remote, r.dtls_role, r.server_identity
            ),
            PeerRecord::Failed(r) => format!("{}: {} [{}]", r.target, r.error, r.step),
            PeerRecord::Listening(r) => match r.transport {
                Some("raknet") => format!(
                    "listening {} (RakNet protocol {}, guid {})",
                    r.address, r.protocol, r.guid
                ),
                Some("nethernet") => format!("listening {} (NetherNet)", r.address),
                _ => format!("listening {}", r.address),
            },
            PeerRecord::Connected(r) => r.line(),
            PeerRecord::Message(r) => r.line(),
            PeerRecord::Closed(r) => r.line(),
            PeerRecord::Step(r) => format!("{:>+11.6}  {:<30} {}", r.t, r.step, r.detail),
            PeerRecord::Probe(r) => format!("outcome: {} ({})", r.outcome, r.diagnosis),
            PeerRecord::Replay(r) => r.lines(),
            PeerRecord::Game(r) => {
                let keys = crate::output::game::key_fields(&r.fields);
                let relay = r.relay.map_or(String::new(), |w| format!(" [{w}]"));
                let error = (r.error.as_ref()).map_or(String::new(), |e| format!(" [error: {e}]"));
                format!(
                    "{:>11.6} {} {} {}{relay}{keys}{error}",
                    r.ts, r.peer, r.dir, r.name
                )
            }
            PeerRecord::Row(row) => row.trim_end().to_string(),
            PeerRecord::GameCounts(r) => {
                let mut s = format!("{} player(s); game packets by name:\n", r.players);
                s.push_str(&format!("  {:<40} {:>9} {:>9}", "name", "c2s", "s2c"));
                let names: std::collections::BTreeSet<&String> =
                    r.c2s.keys().chain(r.s2c.keys()).collect();
                for n in names {
                    let (c, sv) = (
                        r.c2s.get(n).copied().unwrap_or(0),
                        r.s2c.get(n).copied().unwrap_or(0),
                    );
                    s.push_str(&format!("\n  {n:<40} {c:>9} {sv:>9}"));
                }
                s
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
}

impl GameReplayJson {
    pub(crate) fn lines(&self) -> String {
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

impl PongJson {
    fn line(&self) -> String {
        let mut line = format!(
            "pong from {}: seq {}, rtt {:.3} ms, server guid {}, {} {} of payload",
            self.asked.target,
            self.asked.seq,
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

impl JoinStatusJson {
    fn line(&self) -> String {
        let mut line = format!(
            "NetherNet status from {}: seq {}, rtt {:.3} ms, HTTP {}",
            self.asked.target, self.asked.seq, self.rtt_ms, self.status
        );
        if let Some(m) = &self.server {
            for (name, value) in m {
                match value.as_str() {
                    Some(v) => line.push_str(&format!("\n  {name}: {v}")),
                    None => line.push_str(&format!("\n  {name}: {value}")),
                }
            }
        } else if let Some(b) = &self.body {
            line.push_str(&format!(": {b:?}"));
        }
        line
    }
}

impl TransportsJson {
    fn line(&self) -> String {
        let t = &self.target;
        match self.answered {
            "both" => format!("{t} answered on NetherNet and RakNet"),
            "nethernet" => format!("{t} answered on NetherNet only (no RakNet pong)"),
            "raknet" => format!("{t} answered on RakNet only (no NetherNet status)"),
            _ => format!("{t} answered on neither NetherNet nor RakNet"),
        }
    }
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

impl PeerMessageJson {
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

impl ClosedJson {
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
            asked: Asked {
                kind: "pong",
                transport: "raknet",
                target: "127.0.0.1:19132".into(),
                seq: 0,
            },
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
