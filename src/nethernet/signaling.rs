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
}

impl HttpSeen {
    fn of(m: &http::Message) -> Self {
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
        let key = if src <= dst { (src, dst) } else { (dst, src) };
        if !self.table.contains_key(&key) {
            if self.table.len() >= MAX_CONNECTIONS {
                self.refused += 1;
                return None;
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
                }),
            );
        }
        let c = self.table.get_mut(&key)?.as_mut()?;
        let side = usize::from(src != c.client);
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
                    message: Box::new(HttpSeen::of(&m)),
                });
                // Only the first may decide: `new_id` is spent.
                continue;
            }
            self.events.push(Event::Http {
                from: src,
                message: Box::new(HttpSeen::of(&m)),
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
