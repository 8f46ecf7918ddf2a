//! Connection attempts as a capture shows them: a timeline of handshake
//! steps per attempt and an `outcome` with a one-line `diagnosis`
//! (`raknet-dissect handshake`).
//!
//! Fed every dissected packet, the messages the mirror delivered because of
//! it, and ICMP errors quoting a flow's UDP. An attempt starts with the first
//! ping or Open Connection Request 1 of a flow, or with one that follows a
//! finished attempt (refused, connected, disconnected), or with a
//! ConnectionRequest after a disconnection (a client that connects again
//! from the same address, its offline handshake not captured). Memory: a bounded
//! number of steps per attempt (the rest are counted) and of attempts per
//! flow; the flows themselves are bounded by the dissector's table.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use crate::dissect::{Body, Dir, Packet};
use crate::wire::ids::{
    ALREADY_CONNECTED, CONNECTION_BANNED, CONNECTION_REQUEST, IP_RECENTLY_CONNECTED,
    NO_FREE_INCOMING_CONNECTIONS,
};
use crate::wire::{Datagram, Offline};

/// Steps kept per attempt; later ones are counted in `steps_omitted`.
const MAX_STEPS: usize = 64;
/// Attempts kept per flow; older ones are reported at once when exceeded.
const MAX_ATTEMPTS: usize = 16;

/// Every outcome, in the order they are decided (the first that applies).
pub const OUTCOMES: [(&str, &str); 18] = [
    (
        "port_unreachable",
        "an ICMP port unreachable came back for the client's datagrams",
    ),
    (
        "incompatible_protocol",
        "the server answered ID_INCOMPATIBLE_PROTOCOL_VERSION",
    ),
    (
        "already_connected",
        "the server answered ID_ALREADY_CONNECTED",
    ),
    (
        "no_free_incoming_connections",
        "the server answered ID_NO_FREE_INCOMING_CONNECTIONS: full",
    ),
    ("banned", "the server answered ID_CONNECTION_BANNED"),
    (
        "ip_recently_connected",
        "the server answered ID_IP_RECENTLY_CONNECTED",
    ),
    (
        "disconnected_by_client",
        "connected, then the client sent ID_DISCONNECTION_NOTIFICATION",
    ),
    (
        "disconnected_by_server",
        "connected, then the server sent ID_DISCONNECTION_NOTIFICATION",
    ),
    (
        "timed_out",
        "connected, then one side went silent for the time-out while the other kept sending",
    ),
    (
        "connected",
        "connected, and still so when the capture ended",
    ),
    (
        "no_new_incoming_connection",
        "ConnectionRequestAccepted came, NewIncomingConnection never did",
    ),
    (
        "connection_request_unanswered",
        "reply 2 came, ConnectionRequest got no ConnectionRequestAccepted",
    ),
    (
        "no_reply_2",
        "reply 1 came, Open Connection Request 2 got no reply",
    ),
    (
        "mtu_probes_unanswered",
        "no Open Connection Reply 1 to any Open Connection Request 1",
    ),
    (
        "no_reply_to_ping",
        "unconnected pings got no pong, and no connection was tried",
    ),
    (
        "pinged",
        "unconnected pings answered; no connection was tried",
    ),
    (
        "capture_ended",
        "the capture ended while the handshake was still under way",
    ),
    ("other", "none of the above"),
];

/// One side silent this long while the other keeps sending counts as a
/// time-out: a peer gives up about the time-out after the last datagram it
/// *received*, having sent its last resends a little before that (ours
/// stops ~9 s in with its backoff, the original ~10 s), so a capture shows
/// less than the full time-out.
pub(crate) const SILENT: Duration = Duration::from_secs(5);
/// A request with no reply this long before the capture ended (or sent
/// this many times) counts as unanswered, not as cut off by the capture.
const UNANSWERED_AFTER: Duration = Duration::from_secs(1);

/// One step of an attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Capture time.
    pub(crate) ts: Duration,
    pub(crate) frame: u64,
    pub(crate) dir: Option<Dir>,
    pub(crate) step: &'static str,
    pub(crate) detail: String,
}

/// One connection attempt and what became of it.
#[derive(Debug, Clone, Default)]
pub struct Attempt {
    pub(crate) flow: u32,
    /// 1-based, per flow.
    pub(crate) number: u32,
    pub(crate) client: Option<SocketAddr>,
    pub(crate) server: Option<SocketAddr>,
    pub(crate) start: Duration,
    pub(crate) end: Duration,
    pub(crate) steps: Vec<Step>,
    pub(crate) steps_omitted: u32,
    pub(crate) pings: u32,
    pub(crate) pongs: u32,
    pub(crate) request1_mtus: Vec<u16>,
    pub(crate) reply1_mtu: Option<u16>,
    /// The MTU of the last Request 1 before the first Reply 1: the probe it answered.
    reply1_probe: Option<u16>,
    pub(crate) request2: u32,
    pub(crate) reply2_mtu: Option<u16>,
    pub(crate) client_protocol: Option<u8>,
    pub(crate) server_protocol: Option<u8>,
    pub(crate) refusal: Option<u8>,
    connection_request_seq: Option<u32>,
    pub(crate) connection_request: bool,
    pub(crate) connection_request_acked: bool,
    pub(crate) accepted: bool,
    pub(crate) new_incoming_connection: bool,
    pub(crate) first_data: Option<Duration>,
    pub(crate) disconnected_by: Option<Dir>,
    pub(crate) icmp: Option<String>,
    last_request: Duration,
    /// When each kind of request was last sent (for "unanswered").
    last_ping: Duration,
    last_request1: Duration,
    last_request2: Duration,
    connection_request_at: Duration,
    disconnected_at: Option<Duration>,
    last_c2s: Option<Duration>,
    last_s2c: Option<Duration>,
    pub(crate) outcome: &'static str,
    pub(crate) diagnosis: String,
    /// A NetherNet join (`nethernet::timeline`), not a RakNet attempt.
    pub(crate) nethernet: bool,
}

impl Attempt {
    fn step(&mut self, p: &Packet<'_>, step: &'static str, detail: String) {
        self.step_at(p.ts, p.frame, Some(p.dir), step, detail);
    }

    fn step_at(
        &mut self,
        ts: Duration,
        frame: u64,
        dir: Option<Dir>,
        step: &'static str,
        detail: String,
    ) {
        if self.steps.len() < MAX_STEPS {
            // Most attempts of a flood have one or two steps: room for
            // those first, not the four a Vec starts with.
            if self.steps.capacity() == 0 {
                self.steps.reserve_exact(2);
            }
            self.steps.push(Step {
                ts,
                frame,
                dir,
                step,
                detail,
            });
        } else {
            self.steps_omitted += 1;
        }
    }

    /// Client and server the other way round: the steps so far went the
    /// other way too.
    fn swap_roles(&mut self) {
        std::mem::swap(&mut self.client, &mut self.server);
        std::mem::swap(&mut self.last_c2s, &mut self.last_s2c);
        self.disconnected_by = self.disconnected_by.map(Dir::reverse);
        for s in &mut self.steps {
            s.dir = s.dir.map(Dir::reverse);
            let swapped = match (s.step, s.detail.as_str()) {
                ("disconnection_notification", "by the client") => Some("by the server".into()),
                ("disconnection_notification", "by the server") => Some("by the client".into()),
                ("first_data", d) => match d.split_once(' ') {
                    Some(("c2s", rest)) => Some(format!("s2c {rest}")),
                    Some(("s2c", rest)) => Some(format!("c2s {rest}")),
                    _ => None,
                },
                _ => None,
            };
            if let Some(d) = swapped {
                s.detail = d;
            }
        }
    }

    /// No further handshake step can follow: a new request starts a new attempt.
    fn finished(&self) -> bool {
        self.refusal.is_some()
            || self.server_protocol.is_some()
            || self.disconnected_by.is_some()
            || self.new_incoming_connection
    }

    fn secs(&self, t: Duration) -> f64 {
        t.saturating_sub(self.start).as_secs_f64()
    }

    /// Decide the outcome, the capture having ended at `end`.
    fn decide(&mut self, end: Duration) {
        // A request is unanswered when the capture went on for a while after
        // the last one of its kind.
        let waited_since = |t: Duration| end.saturating_sub(t) >= UNANSWERED_AFTER;
        let waited = waited_since(self.last_request);
        let probes = || {
            let mut mtus: Vec<String> = Vec::new();
            for m in &self.request1_mtus {
                if mtus.last() != Some(&m.to_string()) {
                    mtus.push(m.to_string());
                }
            }
            mtus.join(", ")
        };
        let fallback = self.mtu_note();
        let (outcome, diagnosis) = if let Some(kind) = &self.icmp {
            (
                "port_unreachable",
                match kind.as_str() {
                    "port_unreachable" => format!(
                        "nothing listens on {}: the kernel answered ICMP port unreachable",
                        self.server.map_or("the server".into(), |s| s.to_string())
                    ),
                    other => {
                        format!("an ICMP error ({other}) came back for the client's datagrams")
                    }
                },
            )
        } else if let Some(server) = self.server_protocol {
            (
                "incompatible_protocol",
                format!(
                    "the client speaks RakNet protocol {} and the server {server}",
                    self.client_protocol.map_or("?".into(), |c| c.to_string())
                ),
            )
        } else if let Some(id) = self.refusal {
            match id {
                ALREADY_CONNECTED => (
                    "already_connected",
                    "the server still holds a connection from this address or GUID".into(),
                ),
                NO_FREE_INCOMING_CONNECTIONS => (
                    "no_free_incoming_connections",
                    "the server is full: it accepts no more incoming connections".into(),
                ),
                CONNECTION_BANNED => ("banned", "the server has banned this client".into()),
                IP_RECENTLY_CONNECTED => (
                    "ip_recently_connected",
                    "this address connected less than the server's limit ago".into(),
                ),
                other => ("other", format!("refused with id {other:#04x}")),
            }
        } else if let Some(dir) = self.disconnected_by {
            match dir {
                Dir::C2s => (
                    "disconnected_by_client",
                    format!(
                        "connected, the client disconnected after {:.3} s{fallback}",
                        self.secs(self.disconnected_at.unwrap_or(end))
                    ),
                ),
                Dir::S2c => (
                    "disconnected_by_server",
                    format!(
                        "connected, the server disconnected after {:.3} s{fallback}",
                        self.secs(self.disconnected_at.unwrap_or(end))
                    ),
                ),
            }
        } else if self.new_incoming_connection || self.accepted {
            let (c, s) = (self.last_c2s.unwrap_or(end), self.last_s2c.unwrap_or(end));
            if c >= s + SILENT {
                (
                    "timed_out",
                    format!(
                        "the server went silent at {:.3} s; the client kept sending for {:.1} s{fallback}",
                        self.secs(s),
                        (c - s).as_secs_f64()
                    ),
                )
            } else if s >= c + SILENT {
                (
                    "timed_out",
                    format!(
                        "the client went silent at {:.3} s; the server kept sending for {:.1} s{fallback}",
                        self.secs(c),
                        (s - c).as_secs_f64()
                    ),
                )
            } else if !self.new_incoming_connection {
                if waited {
                    (
                        "no_new_incoming_connection",
                        "the server accepted, the client never sent NewIncomingConnection".into(),
                    )
                } else {
                    (
                        "capture_ended",
                        "the capture ended after ConnectionRequestAccepted".into(),
                    )
                }
            } else {
                (
                    "connected",
                    format!("connected in {:.3} s{fallback}", self.connected_in()),
                )
            }
        } else if self.connection_request || self.reply2_mtu.is_some() {
            if waited_since(self.connection_request_at) || !self.connection_request {
                let acked = if self.connection_request_acked {
                    "acknowledged but not accepted"
                } else if self.connection_request {
                    "never acknowledged"
                } else {
                    "never sent"
                };
                (
                    "connection_request_unanswered",
                    format!("reply 2 came; the ConnectionRequest was {acked}{fallback}"),
                )
            } else {
                (
                    "capture_ended",
                    "the capture ended after ConnectionRequest".into(),
                )
            }
        } else if self.reply1_mtu.is_some() {
            if waited_since(self.last_request2) || self.request2 >= 2 {
                (
                    "no_reply_2",
                    format!(
                        "reply 1 came; {} Open Connection Request 2 got no reply{fallback}",
                        self.request2
                    ),
                )
            } else {
                ("capture_ended", "the capture ended after reply 1".into())
            }
        } else if !self.request1_mtus.is_empty() {
            if waited_since(self.last_request1) || self.request1_mtus.len() >= 2 {
                (
                    "mtu_probes_unanswered",
                    format!(
                        "{} Open Connection Request 1 (MTU {}) got no reply: no server, a server with no free slot \
                         for unconnected peers, or datagrams of that size dropped on the way",
                        self.request1_mtus.len(),
                        probes()
                    ),
                )
            } else {
                (
                    "capture_ended",
                    "the capture ended after Open Connection Request 1".into(),
                )
            }
        } else if self.pings > 0 && self.pongs == 0 {
            if waited_since(self.last_ping) || self.pings >= 2 {
                (
                    "no_reply_to_ping",
                    format!("{} unconnected pings got no pong", self.pings),
                )
            } else {
                (
                    "capture_ended",
                    "the capture ended after an unconnected ping".into(),
                )
            }
        } else if self.pongs > 0 {
            (
                "pinged",
                format!(
                    "{} pings, {} pongs; no connection tried",
                    self.pings, self.pongs
                ),
            )
        } else {
            ("other", "no handshake step seen".into())
        };
        self.outcome = outcome;
        self.diagnosis = diagnosis;
        self.end = end;
    }

    /// What became of the MTU, for the diagnosis: the client fell back to
    /// a smaller Request 1 after larger ones went unanswered, and/or the
    /// server answered with less than the probe it got (its own limit).
    fn mtu_note(&self) -> String {
        let (Some(&first), Some(probe), Some(got)) = (
            self.request1_mtus.first(),
            self.reply1_probe,
            self.reply1_mtu,
        ) else {
            return String::new();
        };
        let mut note = String::new();
        if probe < first && got < first {
            note = format!(
                "; MTU fell back from {first} to {probe}: the larger probes went unanswered"
            );
        }
        if got < probe {
            note += &format!("; the server capped the MTU at {got}");
        }
        note
    }

    fn connected_in(&self) -> f64 {
        self.steps
            .iter()
            .find(|s| s.step == "new_incoming_connection")
            .map_or(0.0, |s| self.secs(s.ts))
    }
}

#[derive(Debug, Default)]
struct FlowAttempts {
    attempts: Vec<Attempt>,
    count: u32,
}

/// The attempts of every flow of a capture.
#[derive(Debug, Default)]
pub struct HandshakeTracker {
    flows: BTreeMap<u32, FlowAttempts>,
    /// Attempts pushed out of a flow's bounded list, decided already.
    done: Vec<Attempt>,
    last_ts: Duration,
}

impl HandshakeTracker {
    /// No attempt seen yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn current(&mut self, flow: u32, ts: Duration, new_attempt: bool) -> &mut Attempt {
        let f = self.flows.entry(flow).or_default();
        let start_new = match f.attempts.last() {
            None => true,
            Some(a) => new_attempt && a.finished(),
        };
        if start_new {
            if f.attempts.len() >= MAX_ATTEMPTS {
                let mut old = f.attempts.remove(0);
                old.decide(old.last_c2s.max(old.last_s2c).unwrap_or(old.start));
                self.done.push(old);
            }
            f.count += 1;
            // One attempt a flow, mostly: no room for four.
            if f.attempts.len() == f.attempts.capacity() {
                f.attempts.reserve_exact(1);
            }
            f.attempts.push(Attempt {
                flow,
                number: f.count,
                start: ts,
                last_request: ts,
                ..Attempt::default()
            });
        }
        f.attempts
            .last_mut()
            .expect("an attempt was just made if there was none")
    }

    /// A RakNet packet, with the messages the mirror delivered because of it.
    pub fn observe(&mut self, p: &Packet<'_>, delivered: &[crate::mirror::Message]) {
        self.last_ts = self.last_ts.max(p.ts);
        let (client, server) = match p.dir {
            Dir::C2s => (p.src, p.dst),
            Dir::S2c => (p.dst, p.src),
        };
        // The roles were guessed the other way round until this packet: the
        // flow's attempts so far had them reversed too.
        if let Some(f) = self.flows.get_mut(&p.flow) {
            let reversed = |a: &Attempt| {
                client != server && (a.client, a.server) == (Some(server), Some(client))
            };
            if f.attempts.last().is_some_and(reversed) {
                f.attempts.iter_mut().for_each(Attempt::swap_roles);
            }
        }
        let starts = match &p.body {
            Body::Offline {
                msg: Some(Offline::UnconnectedPing { .. } | Offline::OpenConnectionRequest1 { .. }),
                ..
            } => true,
            // A client that connects again without an offline handshake in the
            // capture: a ConnectionRequest after a disconnection, whose datagram
            // number is not past the previous one's (a resend's would be).
            Body::Datagram(Some(Datagram::Data(d)))
                if d.capsules
                    .iter()
                    .any(|c| c.message_id() == Some(CONNECTION_REQUEST)) =>
            {
                self.flows
                    .get(&p.flow)
                    .and_then(|f| f.attempts.last())
                    .is_some_and(|a| {
                        a.disconnected_by.is_some()
                            && a.connection_request_seq.is_none_or(|s| d.seq <= s)
                    })
            }
            _ => false,
        } && p.dir == Dir::C2s;
        // A flow first seen mid-connection has no attempt until something happens.
        let a = self.current(p.flow, p.ts, starts);
        a.client.get_or_insert(client);
        a.server.get_or_insert(server);
        match p.dir {
            Dir::C2s => a.last_c2s = Some(p.ts),
            Dir::S2c => a.last_s2c = Some(p.ts),
        }
        match &p.body {
            Body::Offline { msg: Some(m), .. } => match m {
                Offline::UnconnectedPing { .. } => {
                    a.pings += 1;
                    a.last_request = p.ts;
                    a.last_ping = p.ts;
                    a.step(p, "unconnected_ping", String::new());
                }
                Offline::UnconnectedPong {
                    server_guid,
                    payload,
                    ..
                } => {
                    a.pongs += 1;
                    a.step(
                        p,
                        "unconnected_pong",
                        format!(
                            "server guid {server_guid:#018x}, {} bytes of payload",
                            payload.len()
                        ),
                    );
                }
                Offline::OpenConnectionRequest1 { protocol, mtu } => {
                    a.request1_mtus.push(*mtu);
                    a.client_protocol = Some(*protocol);
                    a.last_request = p.ts;
                    a.last_request1 = p.ts;
                    a.step(
                        p,
                        "open_connection_request_1",
                        format!("protocol {protocol}, MTU {mtu}"),
                    );
                }
                Offline::OpenConnectionReply1 {
                    mtu, server_guid, ..
                } => {
                    if a.reply1_mtu.is_none() {
                        a.reply1_probe = a.request1_mtus.last().copied();
                    }
                    a.reply1_mtu.get_or_insert(*mtu);
                    a.step(
                        p,
                        "open_connection_reply_1",
                        format!("server guid {server_guid:#018x}, MTU {mtu}"),
                    );
                }
                Offline::OpenConnectionRequest2 { mtu, .. } => {
                    a.request2 += 1;
                    a.last_request = p.ts;
                    a.last_request2 = p.ts;
                    a.step(p, "open_connection_request_2", format!("MTU {mtu}"));
                }
                Offline::OpenConnectionReply2 { mtu, .. } => {
                    a.reply2_mtu.get_or_insert(*mtu);
                    a.step(p, "open_connection_reply_2", format!("MTU {mtu}"));
                }
                Offline::IncompatibleProtocolVersion { protocol, .. } => {
                    a.server_protocol = Some(*protocol);
                    a.step(
                        p,
                        "incompatible_protocol_version",
                        format!("the server's protocol {protocol}"),
                    );
                }
                Offline::Refusal { id, .. } => {
                    a.refusal = Some(*id);
                    a.step(p, "refused", crate::wire::message_name(*id).into_owned());
                }
                _ => {}
            },
            Body::Datagram(Some(Datagram::Data(d)))
                if p.dir == Dir::C2s
                    && a.connection_request_seq.is_none()
                    && d.capsules.iter().any(|c| c.message_id() == Some(0x09)) =>
            {
                a.connection_request_seq = Some(d.seq);
                a.connection_request = true;
                a.last_request = p.ts;
                a.connection_request_at = p.ts;
                a.step(p, "connection_request", format!("in datagram #{}", d.seq));
            }
            Body::Datagram(Some(Datagram::Ack(l))) => {
                if let (Dir::S2c, Some(seq), false) =
                    (p.dir, a.connection_request_seq, a.connection_request_acked)
                {
                    if l.ranges.iter().any(|r| (r.min..=r.max).contains(&seq)) {
                        a.connection_request_acked = true;
                        a.step(p, "connection_request_acked", format!("datagram #{seq}"));
                    }
                }
            }
            _ => {}
        }
        for m in delivered.iter().filter(|m| m.flow == p.flow) {
            let Some(&id) = m.data.first() else { continue };
            match (id, m.dir) {
                (0x10, Dir::S2c) if !a.accepted => {
                    a.accepted = true;
                    a.step(p, "connection_request_accepted", String::new());
                }
                (0x13, Dir::C2s) if !a.new_incoming_connection => {
                    a.new_incoming_connection = true;
                    a.step(p, "new_incoming_connection", String::new());
                }
                (0x15, dir) if a.disconnected_by.is_none() => {
                    a.disconnected_by = Some(dir);
                    a.disconnected_at = Some(m.ts);
                    let who = if dir == Dir::C2s {
                        "by the client"
                    } else {
                        "by the server"
                    };
                    a.step(p, "disconnection_notification", who.into());
                }
                (id, dir) if (id >= 0x86 || id == 0xfe) && a.first_data.is_none() => {
                    a.first_data = Some(m.ts);
                    a.step(
                        p,
                        "first_data",
                        format!("{} {} bytes", dir.as_str(), m.data.len()),
                    );
                }
                _ => {}
            }
        }
    }

    /// An ICMP error quoting a datagram of flow `flow` (sent in direction `dir`).
    pub(crate) fn icmp(&mut self, flow: u32, dir: Dir, ts: Duration, frame: u64, kind: &str) {
        self.last_ts = self.last_ts.max(ts);
        let a = self.current(flow, ts, false);
        // Only an error about the client's datagrams before the connection
        // is up tells why it did not come up; one about the server's
        // datagrams (to a client already gone) is only a step.
        if a.icmp.is_none() && dir == Dir::C2s && !a.new_incoming_connection {
            a.icmp = Some(kind.to_string());
        }
        a.step_at(ts, frame, Some(dir.reverse()), "icmp", kind.to_string());
    }

    /// The attempts that are over, to hand out as the capture is read (so
    /// that memory follows the flows alive): those pushed out of a flow's
    /// bounded list, then every attempt of the flows in `ended` (flows the
    /// mirror closed: idle, or past its bound), decided as of the packet
    /// that closed them, in flow order then attempt order.
    pub fn take_ended(&mut self, ended: &[u32]) -> Vec<Attempt> {
        let mut out = std::mem::take(&mut self.done);
        let mut ids = ended.to_vec();
        ids.sort_unstable();
        for id in ids {
            if let Some(f) = self.flows.remove(&id) {
                for mut a in f.attempts {
                    a.decide(self.last_ts);
                    out.push(a);
                }
            }
        }
        out
    }

    /// Every attempt, decided as of the end of the capture, in flow order.
    pub fn finish(mut self) -> Vec<Attempt> {
        let end = self.last_ts;
        let mut all = std::mem::take(&mut self.done);
        for (_, f) in std::mem::take(&mut self.flows) {
            for mut a in f.attempts {
                a.decide(end);
                all.push(a);
            }
        }
        all.sort_by_key(|a| (a.flow, a.number));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::UdpDatagram;
    use crate::dissect::{Dissector, Options};

    /// The attempt of a client that sends Request 1 with each MTU of
    /// `probes` (500 ms apart) and gets Reply 1 with `reply` after the last.
    fn attempt(probes: &[u16], reply: u16) -> Attempt {
        let mut d = Dissector::new(Options::default());
        let mut t = HandshakeTracker::new();
        let (c, s) = ("127.0.0.1:50000", "127.0.0.1:19132");
        let mut send = |ms: u64, src: &str, dst: &str, o: Offline<'_>| {
            let mut payload = Vec::new();
            o.emit(&mut payload);
            let u = UdpDatagram {
                frame: ms + 1,
                ts: Duration::from_millis(ms),
                src: src.parse().unwrap(),
                dst: dst.parse().unwrap(),
                udp_len: payload.len(),
                payload,
                icmp: None,
                tcp: None,
            };
            t.observe(&d.dissect(&u).unwrap(), &[]);
        };
        let mut ms = 0;
        for &mtu in probes {
            let r1 = Offline::OpenConnectionRequest1 { protocol: 6, mtu };
            send(ms, c, s, r1);
            ms += 500;
        }
        let reply = Offline::OpenConnectionReply1 {
            server_guid: 1,
            security: None,
            mtu: reply,
        };
        send(ms - 499, s, c, reply);
        // The capture goes on for 2 s: no Request 2 came.
        t.last_ts += Duration::from_secs(2);
        t.finish().remove(0)
    }

    #[test]
    fn a_smaller_reply_to_the_first_probe_is_the_servers_cap() {
        let a = attempt(&[1492], 1200);
        assert_eq!(a.outcome, "no_reply_2");
        assert_eq!(
            a.diagnosis,
            "reply 1 came; 0 Open Connection Request 2 got no reply; the server capped the MTU at 1200"
        );
    }

    #[test]
    fn smaller_probes_after_unanswered_ones_are_a_fall_back() {
        let a = attempt(&[1492, 1492, 1492, 1492, 1200], 1200);
        assert_eq!(
            a.mtu_note(),
            "; MTU fell back from 1492 to 1200: the larger probes went unanswered"
        );
        let a = attempt(&[1492, 1200], 1100);
        assert_eq!(
            a.mtu_note(),
            "; MTU fell back from 1492 to 1200: the larger probes went unanswered; \
             the server capped the MTU at 1100"
        );
    }

    #[test]
    fn attempts_follow_roles_corrected_by_the_dissector() {
        // samples/handshake.pcap with its client moved below the server's
        // port, from the server's ACK of the ConnectionRequest on: the roles
        // are guessed by port (wrongly) until ConnectionRequestAccepted.
        let v = crate::capture::testutil::handshake_with_client_below_server();
        let request = v.iter().position(|d| d.payload[0] >= 0x80).unwrap();
        let mut d = Dissector::new(Options::default());
        let mut m = crate::mirror::Mirror::new(crate::mirror::MirrorConfig::default(), false);
        let mut obs = crate::mirror::Observation::default();
        let mut t = HandshakeTracker::new();
        for u in &v[request + 1..] {
            let p = d.dissect(u).unwrap();
            m.observe(&p, || d.flow(p.src, p.dst), &mut obs);
            t.observe(&p, &obs.messages);
        }
        let all = t.finish();
        assert_eq!(all.len(), 1);
        let a = &all[0];
        assert_eq!(a.client.map(|c| c.port()), Some(1141));
        assert_eq!(a.server.map(|s| s.port()), Some(19140));
        assert_eq!(a.outcome, "disconnected_by_client", "{}", a.diagnosis);
        let steps: Vec<(Option<Dir>, &str)> = a.steps.iter().map(|s| (s.dir, s.step)).collect();
        assert_eq!(
            steps,
            [
                (Some(Dir::S2c), "connection_request_accepted"),
                (Some(Dir::C2s), "new_incoming_connection"),
                (Some(Dir::S2c), "first_data"),
                (Some(Dir::C2s), "disconnection_notification"),
            ]
        );
    }

    #[test]
    fn a_reply_for_the_probed_mtu_says_nothing() {
        assert_eq!(attempt(&[1492], 1492).mtu_note(), "");
        // A late reply to a larger probe: the MTU did not fall back.
        assert_eq!(attempt(&[1492, 1200], 1492).mtu_note(), "");
    }
}
