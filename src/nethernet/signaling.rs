//! NetherNet's HTTP signaling in a capture: each TCP connection whose
//! client asks for `/v1/join...` (the server's status, then the offer and
//! its answer), put back in order ([`crate::capture::tcp`]) and read as
//! HTTP ([`super::http`]). Sans-IO: the pipeline hands it the TCP segments
//! the capture holds. A connection whose first request is for another
//! path, or that is not HTTP, is let go (its segments are not read again).

use std::collections::HashMap;
use std::net::SocketAddr;

use super::{http, sdp};
use crate::capture::tcp::{Direction, Note, DEFAULT_HELD};
use crate::capture::TcpSegment;

/// Connections followed (or let go) at most; segments of more are counted.
pub const MAX_CONNECTIONS: usize = 4096;

/// What a NetherNet signaling request's path starts with.
pub const JOIN_PATH: &str = "/v1/join";

/// One HTTP message of the signaling, as its records show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSeen {
    /// The request's method (`GET`, `POST`); `None` for a response.
    pub method: Option<String>,
    /// The request's target (`/v1/join/1234`).
    pub target: Option<String>,
    /// The response's status code.
    pub status: Option<u16>,
    /// The response's reason phrase.
    pub reason: Option<String>,
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// Body bytes.
    pub body_len: usize,
    /// The body, when it is text (JSON, SDP) and at most 64 KiB.
    pub body: Option<String>,
    /// An SDP body's ICE username fragment.
    pub ice_ufrag: Option<String>,
    /// An SDP body's ICE password: the key of MESSAGE-INTEGRITY on the
    /// checks sent to the SDP's sender.
    pub ice_pwd: Option<String>,
    /// An SDP body's candidates, as `ip:port`.
    pub candidates: Vec<String>,
    /// An SDP body's `a=fingerprint:sha-256`: its sender's DTLS
    /// certificate, as the handshake must then show it.
    pub fingerprint: Option<String>,
    /// An SDP body's `a=identity`, decoded and checked.
    pub identity: Option<IdentitySeen>,
}

/// An SDP's identity assertion as a record shows it: who it names, and
/// whether its signatures verify.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IdentitySeen {
    /// `idp.domain`: the auth service's, or `self` (an operator's).
    pub domain: Option<String>,
    /// The token's `xid` claim: the player's XUID.
    pub xuid: Option<String>,
    /// The token's `xname` claim: the player's display name.
    pub name: Option<String>,
    /// The token's `pfid` claim: the PlayFab id.
    pub pfid: Option<String>,
    /// Whether the token names a `cpk` (its fingerprints' signing key).
    pub cpk: bool,
    /// Whether the fingerprints JWS verifies with the `cpk` over the
    /// SDP's `a=fingerprint` lines (`None`: no usable `cpk`).
    pub fingerprints_verify: Option<bool>,
    /// Whether the token verifies with its own `cpk` (an operator's or an
    /// offline player's; the auth service's key is not in a capture).
    pub self_signed: Option<bool>,
    /// Why the assertion was not read, when it was not.
    pub error: Option<String>,
}

impl IdentitySeen {
    fn of(sdp: &sdp::Sdp) -> Option<Self> {
        let claim = |c: &serde_json::Value, k: &str| match &c[k] {
            serde_json::Value::String(s) => Some(s.chars().take(256).collect()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        Some(match super::identity::of(sdp)? {
            Ok(a) => IdentitySeen {
                domain: a.domain.map(|d| d.chars().take(256).collect()),
                xuid: claim(&a.claims, "xid"),
                name: claim(&a.claims, "xname"),
                pfid: claim(&a.claims, "pfid"),
                cpk: !a.claims["cpk"].is_null(),
                fingerprints_verify: a.fingerprints_verify,
                self_signed: a.self_signed,
                error: None,
            },
            Err(e) => IdentitySeen {
                error: Some(e.to_string()),
                ..IdentitySeen::default()
            },
        })
    }

    /// In words, for a step of `handshake`.
    pub fn words(&self) -> String {
        if let Some(e) = &self.error {
            return format!("identity unread: {e}");
        }
        let mut w = String::from("identity");
        if let Some(n) = &self.name {
            w.push_str(&format!(" {n}"));
        }
        let ids: Vec<String> = [
            ("xuid", &self.xuid),
            ("pfid", &self.pfid),
            ("domain", &self.domain),
        ]
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k} {v}")))
        .collect();
        if !ids.is_empty() {
            w.push_str(&format!(" ({})", ids.join(", ")));
        }
        w.push_str(match self.fingerprints_verify {
            Some(true) => ", fingerprints signed by its cpk",
            Some(false) => ", fingerprints NOT signed by its cpk",
            None => ", no cpk to check the fingerprints with",
        });
        w
    }
}

impl HttpSeen {
    fn of(m: &http::Message, identities: &mut Identities) -> Self {
        let (method, target, status, reason) = match &m.start {
            http::Start::Request { method, target } => {
                (Some(method.clone()), Some(target.clone()), None, None)
            }
            http::Start::Response { status, reason } => {
                (None, None, Some(*status), Some(reason.clone()))
            }
        };
        let body = (m.body.len() <= 1 << 16)
            .then(|| std::str::from_utf8(&m.body).ok().map(str::to_string))
            .flatten()
            .filter(|b| !b.is_empty());
        let sdp = body
            .as_deref()
            .filter(|b| b.starts_with("v=0"))
            .and_then(|b| sdp::Sdp::parse(b).ok());
        HttpSeen {
            method,
            target,
            status,
            reason,
            content_type: m.header("content-type").map(str::to_string),
            body_len: m.body.len(),
            ice_ufrag: sdp.as_ref().and_then(|s| s.ice_ufrag.clone()),
            ice_pwd: sdp.as_ref().and_then(|s| s.ice_pwd.clone()),
            fingerprint: sdp.as_ref().and_then(|s| {
                s.fingerprints
                    .iter()
                    .find(|(alg, _)| alg.eq_ignore_ascii_case("sha-256"))
                    .map(|(_, v)| v.to_ascii_uppercase())
            }),
            identity: sdp.as_ref().and_then(|s| identities.of(s)),
            candidates: sdp
                .map(|s| s.candidates.iter().map(|c| c.address.to_string()).collect())
                .unwrap_or_default(),
            body,
        }
    }
}

/// What a segment showed.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A whole HTTP message, from `from`.
    Http {
        /// Its sender.
        from: SocketAddr,
        /// What it said.
        message: Box<HttpSeen>,
    },
    /// The stream's order, as the reassembly saw it.
    Tcp(Note),
    /// Bytes that are not HTTP.
    Malformed(String),
}

/// One signaling connection.
#[derive(Debug)]
pub struct Connection {
    /// Its flow id.
    pub id: u32,
    /// The client (who sent the SYN, or the first request).
    pub client: SocketAddr,
    /// The server.
    pub server: SocketAddr,
    /// `[client's, server's]`.
    dirs: [Direction; 2],
    http: [http::Stream; 2],
    /// Its first request was for [`JOIN_PATH`].
    pub join: bool,
    /// A FIN read from `[client, server]`.
    fin: [bool; 2],
}

/// What one segment of a followed connection showed.
#[derive(Debug)]
pub struct Seen<'c> {
    /// Its connection.
    pub connection: &'c Connection,
    /// What happened, in order.
    pub events: &'c [Event],
}

/// A capture's signaling connections.
#[derive(Debug, Default)]
pub struct Signaling {
    /// `None`: let go (not NetherNet's signaling).
    table: HashMap<(SocketAddr, SocketAddr), Option<Connection>>,
    events: Vec<Event>,
    bytes: Vec<u8>,
    notes: Vec<Note>,
    /// Segments of connections past [`MAX_CONNECTIONS`], not read.
    pub refused: u64,
    /// The connection the last segment closed (FIN both ways, or RST),
    /// let go at the next.
    closing: Option<(SocketAddr, SocketAddr)>,
    /// Connections let go, closed.
    pub closed: u64,
    identities: Identities,
}

/// Identity assertions already checked (each costs P-384 signature checks,
/// about a millisecond each): by the attribute and the fingerprints it
/// signs, at most [`Identities::MAX`], then forgotten all at once.
#[derive(Debug, Default)]
struct Identities(HashMap<(String, String), Option<IdentitySeen>>);

impl Identities {
    const MAX: usize = 1024;

    fn of(&mut self, sdp: &sdp::Sdp) -> Option<IdentitySeen> {
        let key = (
            sdp.identity.clone()?,
            super::identity::canonical_fingerprints(sdp),
        );
        if let Some(seen) = self.0.get(&key) {
            return seen.clone();
        }
        if self.0.len() >= Self::MAX {
            self.0.clear();
        }
        let seen = IdentitySeen::of(sdp);
        self.0.insert(key, seen.clone());
        seen
    }
}

impl Signaling {
    /// A TCP segment from `src` to `dst`; `None` unless its connection is
    /// NetherNet's signaling. A connection whose first request asks for
    /// [`JOIN_PATH`] gets its flow id from `new_id`.
    pub fn segment(
        &mut self,
        src: SocketAddr,
        dst: SocketAddr,
        seg: TcpSegment,
        payload: &[u8],
        new_id: impl FnOnce() -> u32,
    ) -> Option<Seen<'_>> {
        if let Some(k) = self.closing.take() {
            self.table.remove(&k);
            self.closed += 1;
        }
        let key = if src <= dst { (src, dst) } else { (dst, src) };
        if !self.table.contains_key(&key) {
            if self.table.len() >= MAX_CONNECTIONS {
                // Room from a connection let go (not signaling), if any.
                let gone = self
                    .table
                    .iter()
                    .find(|(_, c)| c.is_none())
                    .map(|(k, _)| *k);
                match gone {
                    Some(k) => drop(self.table.remove(&k)),
                    None => {
                        self.refused += 1;
                        return None;
                    }
                }
            }
            // Its client: the SYN's sender, or the first to send data.
            let (client, server) = match (seg.syn, payload.is_empty()) {
                (true, _) | (false, false) => (src, dst),
                (false, true) => return None,
            };
            self.table.insert(
                key,
                Some(Connection {
                    id: 0,
                    client,
                    server,
                    dirs: [Direction::new(DEFAULT_HELD), Direction::new(DEFAULT_HELD)],
                    http: [http::Stream::new(), http::Stream::new()],
                    join: false,
                    fin: [false; 2],
                }),
            );
        }
        let Some(c) = self.table.get_mut(&key)?.as_mut() else {
            // Let go: forgotten once it closes.
            if seg.fin || seg.rst {
                self.table.remove(&key);
            }
            return None;
        };
        let side = usize::from(src != c.client);
        c.fin[side] |= seg.fin;
        if seg.rst || c.fin == [true; 2] {
            self.closing = Some(key);
        }
        self.events.clear();
        self.bytes.clear();
        self.notes.clear();
        c.dirs[side].segment(
            seg.seq,
            seg.syn,
            seg.fin,
            payload,
            &mut self.bytes,
            &mut self.notes,
        );
        self.events.extend(self.notes.drain(..).map(Event::Tcp));
        let messages = match c.http[side].push(&self.bytes) {
            Ok(m) => m,
            Err(e) => {
                self.events.push(Event::Malformed(e.to_string()));
                Vec::new()
            }
        };
        let mut messages = messages;
        if seg.fin {
            messages.extend(c.http[side].finish());
        }
        let mut let_go = false;
        let mut new_id = Some(new_id);
        for m in messages {
            if !c.join {
                // The first request decides: NetherNet's, or let go.
                let join = matches!(&m.start, http::Start::Request { target, .. }
                    if target.starts_with(JOIN_PATH));
                if !join {
                    let_go = true;
                    break;
                }
                c.join = true;
                c.id = new_id.take().map_or(0, |f| f());
                // A connection whose first request is the other side's.
                if side == 1 {
                    std::mem::swap(&mut c.client, &mut c.server);
                    c.dirs.swap(0, 1);
                    c.http.swap(0, 1);
                }
                self.events.push(Event::Http {
                    from: src,
                    message: Box::new(HttpSeen::of(&m, &mut self.identities)),
                });
                // Only the first may decide: `new_id` is spent.
                continue;
            }
            self.events.push(Event::Http {
                from: src,
                message: Box::new(HttpSeen::of(&m, &mut self.identities)),
            });
        }
        // Nothing decided after 64 KiB each way: not signaling either.
        let_go |= !c.join && c.dirs.iter().any(|d| d.taken() >= 1 << 16);
        if let_go {
            self.table.insert(key, None);
            return None;
        }
        if !c.join {
            return None;
        }
        Some(Seen {
            connection: self.table.get(&key)?.as_ref()?,
            events: &self.events,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(seq: u32, syn: bool, fin: bool) -> TcpSegment {
        TcpSegment {
            seq,
            syn,
            fin,
            rst: false,
        }
    }

    /// An identity assertion is checked once: the same SDP again gives
    /// the same answer from memory; the memory stays bounded.
    #[test]
    fn identities_are_checked_once_and_bounded() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
        let truth = std::fs::read_to_string(root.join("nethernet-join.truth.jsonl")).unwrap();
        let offer = truth
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|r| r["type"] == "sdp" && r["kind"] == "offer")
            .unwrap();
        let mut sdp = sdp::Sdp::parse(offer["sdp"].as_str().unwrap()).unwrap();
        let mut ids = Identities::default();
        let first = ids.of(&sdp).unwrap();
        assert_eq!(first.fingerprints_verify, Some(true));
        assert_eq!(first.name.as_deref(), Some("Steve"));
        assert_eq!(ids.of(&sdp), Some(first));
        assert_eq!(ids.0.len(), 1);
        for i in 0..Identities::MAX + 5 {
            sdp.identity = Some(format!("x{i}"));
            assert!(ids.of(&sdp).unwrap().error.is_some());
            assert!(ids.0.len() <= Identities::MAX);
        }
    }

    /// A connection closed both ways is let go at the next segment: more
    /// connections than [`MAX_CONNECTIONS`], one after the other, are all
    /// read; one the first request let go is forgotten at its FIN.
    #[test]
    fn closed_connections_are_let_go() {
        let mut s = Signaling::default();
        let server = SocketAddr::from(([127, 0, 0, 1], 19132));
        let ask = b"GET /v1/join HTTP/1.1\r\nHost: a\r\n\r\n";
        let answer = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        let (mut ids, mut seen) = (0, 0);
        for i in 0..MAX_CONNECTIONS as u32 + 10 {
            let client = SocketAddr::from(([127, 0, 0, 2], (i % 60_000) as u16 + 1));
            let n = ask.len() as u32;
            let m = answer.len() as u32;
            s.segment(client, server, seg(0, true, false), &[], || 0);
            let mut id = || {
                ids += 1;
                ids
            };
            seen += usize::from(
                s.segment(client, server, seg(1, false, false), ask, &mut id)
                    .is_some(),
            );
            seen += usize::from(
                s.segment(server, client, seg(1, false, false), answer, || 0)
                    .is_some(),
            );
            s.segment(client, server, seg(1 + n, false, true), &[], || 0);
            s.segment(server, client, seg(1 + m, false, true), &[], || 0);
        }
        assert_eq!(s.refused, 0);
        assert_eq!(seen, 2 * (MAX_CONNECTIONS + 10));
        assert!(s.table.len() <= 1, "{} kept", s.table.len());
        assert_eq!(s.closed, MAX_CONNECTIONS as u64 + 9);
        // Not signaling: let go at once, forgotten at its FIN.
        let other = SocketAddr::from(([127, 0, 0, 3], 5));
        let web = b"GET /index.html HTTP/1.1\r\nHost: a\r\n\r\n";
        assert!(s
            .segment(other, server, seg(1, false, false), web, || 0)
            .is_none());
        assert!(s.table.contains_key(&(server, other)));
        s.segment(
            other,
            server,
            seg(1 + web.len() as u32, false, true),
            &[],
            || 0,
        );
        assert!(!s.table.contains_key(&(server, other)));
    }
}
