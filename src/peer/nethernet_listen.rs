//! NetherNet's listening side, for whatever plays the game behind it
//! (`serve --bedrock --nethernet`'s game server, `proxy`'s sessions): the
//! signaling on TCP (answered by [`Signaling`], sans IO) and each player's ICE,
//! DTLS and SCTP ([`nethernet::rtc`]) over the UDP socket of a RakNet
//! RakNet server of the same port number, which diverts the
//! datagrams of STUN and DTLS to it. Each player's datagrams are told
//! apart by the ICE username (STUN) and then by address. It hands out
//! each player's join, the batches of its reliable channel (and whole
//! ones of the unreliable), and its end; it writes the `joined` and
//! `login` records of the transport.
//!
//! Bounded: at most [`MAX_HTTP`] signaling connections at once, the
//! oldest that has sent nothing (else the oldest) closed for a new one,
//! and new ones read a few at a time (each [`HTTP_TIMEOUT`] at most, its
//! request bounded by the HTTP reader), at most `max_clients` players, of
//! which at most [`MAX_PENDING`] not yet joined: a new offer beyond that
//! evicts the oldest pending one whose side has sent no connectivity
//! check that passed (else the oldest), so that a flood of offers keeps
//! only its newest and a real client, whose checks come within a round
//! trip, gets in; a player whose channels are not open within
//! [`JOIN_TIMEOUT`] is dropped.
//!
//! [`nethernet::rtc`]: crate::nethernet::rtc

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::run::Report;
use super::signaling::unix_now;
use crate::bedrock::identity::KeyPair;
use crate::nethernet::cert::Cert;
use crate::nethernet::framing::{Reassembler, Step};
use crate::nethernet::http::{self, Start};
use crate::nethernet::ice::Credentials;
use crate::nethernet::rtc::{Rtc, RtcConfig, RtcEvent, MAX_MESSAGE_SIZE};
use crate::nethernet::{dcep, identity, sdp, stun};
use crate::records::peer::{JoinedJson, PeerLoginJson, PeerRecord};

/// Signaling connections at once, at most.
pub const MAX_HTTP: usize = 32;
/// A signaling connection's life, at most.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(5);
/// Players not yet joined, at most.
pub const MAX_PENDING: usize = 16;
/// Players not yet joined from one address (of their signaling
/// connection), at most.
pub const MAX_PENDING_PER_IP: usize = 4;
/// From the answer to both channels open, at most.
pub const JOIN_TIMEOUT: Duration = Duration::from_secs(10);

/// One signaling connection.
struct Http {
    stream: TcpStream,
    reader: http::Stream,
    since: Instant,
    /// Bytes read from it.
    got: usize,
    /// For a capture: when it was taken (since the Unix epoch), and what
    /// it sent, as each read returned it (at most [`RECORDED`] bytes).
    accepted: Duration,
    read: Vec<(Duration, Vec<u8>)>,
}

/// Bytes of a signaling request kept for a capture, at most.
const RECORDED: usize = 64 << 10;

/// One player's connection, joining or joined.
struct Conn {
    id: u64,
    /// Its signaling connection's address.
    peer: SocketAddr,
    ufrag: String,
    /// Its candidates, and the addresses its checks came from.
    remotes: Vec<SocketAddr>,
    rtc: Rtc,
    reliable: Reassembler,
    open: u8,
    since: Instant,
    joined: bool,
    key_logged: bool,
    /// Its DTLS key-log line is in the server's capture.
    key_recorded: bool,
    /// Its offer: its `a=identity` is checked when it joins (a flood's
    /// offers never do, and each check is two P-384 verifications).
    offer: sdp::Sdp,
    network_id: String,
    /// Why it ends, once it does.
    ended: Option<String>,
}

/// What the listener hands out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NetEvent {
    /// Player `id`'s channels are open: it is in (its `joined` record
    /// written); its signaling connection's address.
    Joined(u64, SocketAddr),
    /// A batch from player `id`.
    Batch(u64, Vec<u8>),
    /// Player `id` has gone (its record written).
    Gone(u64),
}

/// NetherNet's listening side; see the module.
pub(crate) struct Listener {
    tcp: TcpListener,
    http: Vec<Http>,
    sig: Signaling,
    conns: Vec<Conn>,
    next_id: u64,
    epoch: Instant,
    max_clients: usize,
    /// DTLS key-log lines appended here.
    tls_keylog_out: Option<PathBuf>,
}

impl Listener {
    /// Signaling on TCP `bound` (the UDP socket's address), answered by
    /// `sig`; at most `max_clients` players; each player's DTLS key-log
    /// line appended to `tls_keylog_out`. `Err` (in words) when the TCP
    /// port cannot be bound.
    pub(crate) fn bind(
        bound: SocketAddr,
        sig: Signaling,
        max_clients: usize,
        tls_keylog_out: Option<PathBuf>,
    ) -> io::Result<Result<Listener, String>> {
        let tcp = match TcpListener::bind(bound) {
            Ok(tcp) => tcp,
            Err(e) => return Ok(Err(format!("cannot listen on TCP {bound}: {e}"))),
        };
        tcp.set_nonblocking(true)?;
        Ok(Ok(Listener {
            tcp,
            http: Vec::new(),
            sig,
            conns: Vec::new(),
            next_id: 0,
            epoch: Instant::now(),
            max_clients,
            tls_keylog_out,
        }))
    }

    /// The sockets to wait on: the TCP listener and every signaling
    /// connection.
    pub(crate) fn fds(&self) -> Vec<RawFd> {
        let mut fds = vec![self.tcp.as_raw_fd()];
        fds.extend(self.http.iter().map(|h| h.stream.as_raw_fd()));
        fds
    }

    /// Players in, over NetherNet.
    pub(crate) fn joined(&self) -> usize {
        self.conns.iter().filter(|c| c.joined).count()
    }

    /// Bytes queued toward player `id`, not yet acknowledged.
    pub(crate) fn buffered(&self, id: u64) -> usize {
        self.conns
            .iter()
            .find(|c| c.id == id)
            .map_or(0, |c| c.rtc.buffered())
    }

    /// New signaling connections, and the requests of those open;
    /// `elsewhere` players in over another transport (the status counts
    /// them, and the bound). Each exchange answered goes into `rec` as TCP
    /// segments.
    pub(crate) fn signaling(
        &mut self,
        elsewhere: usize,
        rec: &mut Option<crate::capture::write::Recorder>,
        report: &mut dyn Report,
    ) -> anyhow::Result<()> {
        // A few at a time, each read before more are taken (what waits
        // stays in the listen queue).
        for _ in 0..MAX_HTTP / 4 {
            match self.tcp.accept() {
                Ok((stream, _)) => {
                    // Beyond the bound one goes: the oldest that has said
                    // nothing yet, else the oldest.
                    if self.http.len() >= MAX_HTTP {
                        let quiet = self.http.iter().position(|h| h.got == 0);
                        self.http.remove(quiet.unwrap_or(0));
                    }
                    stream.set_nonblocking(true)?;
                    self.http.push(Http {
                        stream,
                        reader: http::Stream::new(),
                        since: Instant::now(),
                        got: 0,
                        accepted: unix_now(),
                        read: Vec::new(),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e.into()),
            }
        }
        let mut i = 0;
        let mut buf = [0u8; 16 << 10];
        while i < self.http.len() {
            let mut done = self.http[i].since.elapsed() > HTTP_TIMEOUT;
            loop {
                if done {
                    break;
                }
                match self.http[i].stream.read(&mut buf) {
                    Ok(0) => done = true,
                    Ok(n) => {
                        let h = &mut self.http[i];
                        if rec.is_some() && h.got + n <= RECORDED {
                            h.read.push((unix_now(), buf[..n].to_vec()));
                        }
                        h.got += n;
                        let pushed = self.http[i].reader.push(&buf[..n]);
                        match pushed {
                            Ok(ms) if !ms.is_empty() => {
                                let (peer, local) = (
                                    self.http[i].stream.peer_addr()?,
                                    self.http[i].stream.local_addr()?,
                                );
                                let joined = self.joined() + elsewhere;
                                let out = self.respond(&ms[0], peer, local.ip(), joined, report)?;
                                let s = &mut self.http[i].stream;
                                let _ = s.set_nonblocking(false);
                                let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
                                let _ = s.write_all(&out);
                                done = true;
                                if let Some(r) = rec {
                                    let h = &mut self.http[i];
                                    if transcript(h, (peer, local), out).record(r).is_err() {
                                        *rec = None;
                                    }
                                }
                            }
                            Ok(_) => {}
                            Err(_) => {
                                let out = response(400, "Bad Request", "text/plain", b"not HTTP\n");
                                let _ = self.http[i].stream.write_all(&out);
                                done = true;
                            }
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => done = true,
                }
            }
            if done {
                self.http.remove(i);
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// The response to a signaling request from `peer`, `joined` players
    /// in; a player taken in, the oldest still joining making room:
    /// first one whose side never sent a check that passed (an offer
    /// alone, as a flood's are).
    fn respond(
        &mut self,
        m: &http::Message,
        peer: SocketAddr,
        local_ip: std::net::IpAddr,
        joined: usize,
        report: &mut dyn Report,
    ) -> anyhow::Result<Vec<u8>> {
        let (out, p) = match self.sig.respond(m, local_ip, joined)? {
            Reply::Respond(out) => return Ok(out),
            Reply::Join(out, p) => (out, p),
        };
        // Room is made at the address with the most players still
        // joining (this one's when it has its share): its oldest that has
        // not checked, else its oldest. A flood from one address keeps
        // only its newest few; a client from another keeps its place.
        let pending = |ip| {
            (self.conns.iter())
                .filter(|c| !c.joined && c.peer.ip() == ip)
                .count()
        };
        let total = self.conns.iter().filter(|c| !c.joined).count();
        let full = total >= MAX_PENDING || self.conns.len() >= self.max_clients + MAX_PENDING;
        let from = if pending(peer.ip()) >= MAX_PENDING_PER_IP {
            Some(peer.ip())
        } else if full {
            (self.conns.iter())
                .filter(|c| !c.joined)
                .map(|c| c.peer.ip())
                .max_by_key(|&ip| pending(ip))
        } else {
            None
        };
        if let Some(ip) = from {
            let of_ip = |c: &Conn| !c.joined && c.peer.ip() == ip;
            let silent = self.conns.iter().position(|c| of_ip(c) && !c.rtc.checked());
            if let Some(i) = silent.or_else(|| self.conns.iter().position(of_ip)) {
                let old = self.conns.remove(i);
                let why = "a newer offer took its place".into();
                self.said(report, &old, "evicted", why)?;
            }
        }
        let Pending {
            ufrag,
            remotes,
            rtc,
            offer,
            network_id,
        } = *p;
        self.next_id += 1;
        self.conns.push(Conn {
            id: self.next_id,
            peer,
            ufrag,
            remotes,
            rtc,
            reliable: Reassembler::new(crate::nethernet::framing::DEFAULT_LIMIT),
            open: 0,
            since: Instant::now(),
            joined: false,
            key_logged: false,
            key_recorded: false,
            offer,
            network_id,
            ended: None,
        });
        Ok(out)
    }

    /// A `login` record about `c`.
    fn said(
        &self,
        report: &mut dyn Report,
        c: &Conn,
        event: &'static str,
        detail: String,
    ) -> io::Result<()> {
        report.record(PeerRecord::Login(PeerLoginJson {
            kind: "login",
            peer: c.peer.to_string(),
            ts: self.epoch.elapsed().as_secs_f64(),
            event,
            detail,
        }))
    }

    /// A datagram of STUN or DTLS from `from`, to the player it is for.
    pub(crate) fn datagram(&mut self, now: Instant, from: SocketAddr, data: &[u8]) {
        if let Some(i) = route(&mut self.conns, from, data) {
            self.conns[i].rtc.handle_datagram(now, from, data);
        }
    }

    /// Every player's turn: its timers, what its transport says (the
    /// channels open, the batches, the end) into `out`; players that
    /// ended removed, with their record.
    pub(crate) fn turn(
        &mut self,
        report: &mut dyn Report,
        out: &mut Vec<NetEvent>,
    ) -> anyhow::Result<()> {
        let now = Instant::now();
        for c in &mut self.conns {
            if c.rtc.poll_timeout().is_some_and(|t| t <= now) {
                c.rtc.handle_timeout(now);
            }
            while let Some(e) = c.rtc.poll_event() {
                match e {
                    RtcEvent::ChannelOpen { .. } => {
                        c.open += 1;
                        if c.open == 2 && !c.joined {
                            c.joined = true;
                            report.record(PeerRecord::Joined(JoinedJson {
                                kind: "joined",
                                transport: "nethernet",
                                peer: c.peer.to_string(),
                                network_id: c.network_id.clone(),
                                remote: c
                                    .rtc
                                    .remote()
                                    .map_or_else(|| "-".to_string(), |a| a.to_string()),
                                dtls_role: "client",
                                join_ms: crate::records::peer::ms(c.since.elapsed()),
                                server_identity: format!(
                                    "the client's: {}",
                                    identity::summary(&c.offer)
                                ),
                            }))?;
                            out.push(NetEvent::Joined(c.id, c.peer));
                        }
                    }
                    RtcEvent::Message { label, data } => {
                        if label == dcep::RELIABLE_LABEL {
                            if let Step::Whole(b) = c.reliable.push(&data) {
                                out.push(NetEvent::Batch(c.id, b));
                            }
                        } else if let Some((0, rest)) = data.split_first() {
                            out.push(NetEvent::Batch(c.id, rest.to_vec()));
                        }
                    }
                    RtcEvent::Closed(why) | RtcEvent::Failed(why) => {
                        c.ended.get_or_insert(why);
                    }
                    _ => {}
                }
            }
            if !c.joined && c.since.elapsed() > JOIN_TIMEOUT {
                c.ended.get_or_insert(format!(
                    "channels not open within {} s",
                    JOIN_TIMEOUT.as_secs()
                ));
            }
            if !c.key_logged {
                if let (Some(path), Some(line)) = (&self.tls_keylog_out, c.rtc.key_log_line()) {
                    c.key_logged = true;
                    let _ = super::bedrock::append_key_log(path, line);
                }
            }
        }
        let mut i = 0;
        while i < self.conns.len() {
            let Some(mut why) = self.conns[i].ended.clone() else {
                i += 1;
                continue;
            };
            let c = self.conns.remove(i);
            if c.rtc.late_inits() > 0 {
                let n = c.rtc.late_inits();
                why += &format!("; {n} SCTP INITs after the association was up, dropped");
            }
            let event = if c.joined { "closed" } else { "no_join" };
            self.said(report, &c, event, why)?;
            if c.joined {
                out.push(NetEvent::Gone(c.id));
            }
        }
        Ok(())
    }

    /// A batch for player `id`, on its reliable channel in NetherNet's
    /// segments; a batch that cannot go ends the player.
    pub(crate) fn send(&mut self, id: u64, batch: &[u8]) {
        let Some(c) = self.conns.iter_mut().find(|c| c.id == id) else {
            return;
        };
        let Some(segs) = crate::nethernet::framing::segments(batch, MAX_MESSAGE_SIZE) else {
            c.ended
                .get_or_insert(format!("a batch of {} bytes", batch.len()));
            return;
        };
        let now = Instant::now();
        for s in segs {
            if let Err(e) = c.rtc.send(now, dcep::RELIABLE_LABEL, &s) {
                c.ended.get_or_insert(e);
            }
        }
    }

    /// Player `id` ends (its game is over): its channels closed and the
    /// association shut down.
    pub(crate) fn end(&mut self, id: u64, why: String) {
        if let Some(c) = self.conns.iter_mut().find(|c| c.id == id) {
            c.rtc.close_channels(Instant::now());
            c.rtc.close(Instant::now());
            c.ended.get_or_insert(why);
        }
    }

    /// Every player's datagrams sent from `udp`'s socket; into its
    /// capture too, each player's DTLS key-log line (a Decryption Secrets
    /// Block) before the first datagram it opens.
    pub(crate) fn transmit(&mut self, udp: &mut super::Server) -> io::Result<()> {
        for c in &mut self.conns {
            if let (false, Some(r)) = (c.key_recorded, &mut udp.recorder) {
                if let Some(line) = c.rtc.key_log_line() {
                    c.key_recorded = true;
                    let kind = crate::capture::Secrets::TLS_KEY_LOG;
                    if let Err(e) = r.secrets(kind, format!("{line}\n").as_bytes()) {
                        udp.record_error = Some(e);
                        udp.recorder = None;
                    }
                }
            }
            while let Some((to, d)) = c.rtc.poll_transmit() {
                if !udp.send_other(to, &d)? {
                    break;
                }
            }
        }
        Ok(())
    }

    /// When a player's transport is next due.
    pub(crate) fn poll_timeout(&mut self) -> Option<Instant> {
        self.conns
            .iter_mut()
            .filter_map(|c| c.rtc.poll_timeout())
            .min()
    }
}

/// The `listening` record of NetherNet on `bound` (TCP for the signaling,
/// UDP for the players).
pub(crate) fn listening(bound: SocketAddr) -> PeerRecord {
    PeerRecord::Listening(crate::records::peer::ListeningJson {
        kind: "listening",
        address: bound.to_string(),
        guid: String::new(),
        protocol: 0,
        transport: Some("nethernet"),
    })
}

/// A signaling connection answered with `out`, as its client's side:
/// the request as it was read, then the answer, written whole now.
fn transcript(
    h: &mut Http,
    (peer, local): (SocketAddr, SocketAddr),
    out: Vec<u8>,
) -> super::signaling::Transcript {
    let mut request = Vec::new();
    let mut at = h.accepted;
    for (t, b) in h.read.drain(..) {
        request.extend_from_slice(&b);
        at = t;
    }
    super::signaling::Transcript {
        local: peer,
        server: local,
        opened: h.accepted,
        sent: (at, request),
        received: vec![(unix_now(), out)],
    }
}

/// The player of `conns` a datagram from `from` is for.
fn route(conns: &mut [Conn], from: SocketAddr, data: &[u8]) -> Option<usize> {
    if stun::looks_like(data) {
        if let Ok(m) = stun::Message::parse(data) {
            if m.class == stun::Class::Request {
                let ours = m.username()?.split(':').next()?;
                let i = conns.iter().position(|c| c.ufrag == ours)?;
                let c = &mut conns[i];
                if !c.remotes.contains(&from) && c.remotes.len() < 16 {
                    c.remotes.push(from);
                }
                return Some(i);
            }
        }
    }
    conns.iter().position(|c| c.remotes.contains(&from))
}

/// An HTTP response, closing the connection.
pub(crate) fn response(status: u16, reason: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// The signaling's side of the server, sans IO: a request in, its
/// response out, and for an offer that is taken the player it makes. The
/// server (`serve`) keeps the players and makes room for one.
pub struct Signaling {
    /// The game version spoken.
    pub version: String,
    /// The server's name in its status.
    pub motd: String,
    /// Players at once, at most.
    pub max_clients: usize,
    /// The port of every answer's candidate.
    pub udp_port: u16,
    /// The DTLS certificate of every answer (its SHA-256 in each), and
    /// the identity assertion over it: made once, so that an offer costs
    /// no key or signature.
    cert: Cert,
    identity: String,
}

/// What a signaling request gets.
pub enum Reply {
    /// This response.
    Respond(Vec<u8>),
    /// This response (the answer), and the player the offer made.
    Join(Vec<u8>, Box<Pending>),
}

/// A player made by an offer, its channels not yet open.
pub struct Pending {
    /// Our side's ICE username fragment: its checks name it.
    pub ufrag: String,
    /// Its candidates.
    pub remotes: Vec<SocketAddr>,
    /// Its transport.
    pub rtc: Rtc,
    /// Its offer (its `a=identity` checked when it joins:
    /// [`identity::summary`]).
    pub offer: sdp::Sdp,
    /// The network id of its `POST /v1/join/{id}`.
    pub network_id: String,
}

impl Signaling {
    /// The signaling of a server of game `version` whose answers carry
    /// `cert` and `key`'s identity assertion over it.
    pub fn new(
        version: &str,
        (motd, max_clients): (&str, usize),
        (cert, key): (Cert, &KeyPair),
        udp_port: u16,
    ) -> anyhow::Result<Signaling> {
        let identity = operator_identity(key, &cert)?;
        Ok(Signaling {
            version: version.to_string(),
            motd: motd.to_string(),
            max_clients,
            udp_port,
            cert,
            identity,
        })
    }

    /// The status `GET /v1/join` answers, `joined` players in.
    pub fn status(&self, joined: usize) -> Vec<u8> {
        let protocol = crate::bedrock::speak::protocol_of(&self.version).unwrap_or(0);
        serde_json::json!({
            "name": self.motd,
            "protocol": protocol,
            "version": self.version,
            "level": "raknet-dissect",
            "players": joined,
            "maxPlayers": self.max_clients,
            "gameType": 0,
        })
        .to_string()
        .into_bytes()
    }

    /// The response to request `m` that came to `local_ip`, `joined`
    /// players in. `Err` only when the system's randomness fails.
    pub fn respond(
        &self,
        m: &http::Message,
        local_ip: std::net::IpAddr,
        joined: usize,
    ) -> anyhow::Result<Reply> {
        let Start::Request { method, target } = &m.start else {
            return Ok(Reply::Respond(response(
                400,
                "Bad Request",
                "text/plain",
                b"a response?\n",
            )));
        };
        let path = target.split('?').next().unwrap_or("");
        Ok(match (method.as_str(), path) {
            ("GET", "/v1/join") => Reply::Respond(response(
                200,
                "OK",
                "application/json",
                &self.status(joined),
            )),
            ("POST", p) if p.starts_with("/v1/join/") && p.len() > "/v1/join/".len() => {
                let id = &p["/v1/join/".len()..];
                if joined >= self.max_clients {
                    let body = b"the server is full\n";
                    return Ok(Reply::Respond(response(
                        503,
                        "Service Unavailable",
                        "text/plain",
                        body,
                    )));
                }
                self.offer(local_ip, id, &m.body)?
            }
            _ => Reply::Respond(response(404, "Not Found", "text/plain", b"not found\n")),
        })
    }

    /// The answer to an offer, the player made; or the response that
    /// refuses it.
    fn offer(
        &self,
        local_ip: std::net::IpAddr,
        network_id: &str,
        body: &[u8],
    ) -> anyhow::Result<Reply> {
        let refuse = |why: &[u8]| {
            Ok(Reply::Respond(response(
                400,
                "Bad Request",
                "text/plain",
                why,
            )))
        };
        let text = String::from_utf8_lossy(body);
        let Ok(offer) = sdp::Sdp::parse(&text) else {
            return refuse(b"not SDP\n");
        };
        let (Some(ufrag), Some(pwd), Some(fingerprint)) = (
            offer.ice_ufrag.clone(),
            offer.ice_pwd.clone(),
            offer.sha256().map(str::to_owned),
        ) else {
            return refuse(b"no ICE credentials or fingerprint\n");
        };
        let remotes = offer.udp_candidates(local_ip);
        let (our_ufrag, our_pwd) = (
            crate::nethernet::ice::random_credential(4)?,
            crate::nethernet::ice::random_credential(22)?,
        );
        let answer = sdp::Local {
            session: u64::from_le_bytes(crate::random::bytes::<8>()?) >> 2,
            ice_ufrag: our_ufrag.clone(),
            ice_pwd: our_pwd.clone(),
            fingerprint_sha256: self.cert.fingerprint(),
            setup: "active",
            candidates: vec![SocketAddr::new(local_ip, self.udp_port)],
            max_message_size: MAX_MESSAGE_SIZE as u64,
            identity: Some(self.identity.clone()),
        };
        let cfg = RtcConfig {
            controlling: false,
            dtls_client: true,
            ice: Credentials {
                local_ufrag: our_ufrag.clone(),
                local_pwd: our_pwd,
                remote_ufrag: ufrag,
                remote_pwd: pwd,
            },
            remotes: remotes.clone(),
            remote_fingerprint: fingerprint,
            cert: self.cert.clone(),
            open: Vec::new(),
        };
        let tie = u64::from_le_bytes(crate::random::bytes::<8>()?);
        let ids = || crate::random::bytes::<12>().unwrap_or_default();
        let rtc = match Rtc::new(cfg, Instant::now(), tie, ids) {
            Ok(r) => r,
            Err(e) => return refuse(format!("{e}\n").as_bytes()),
        };
        let pending = Pending {
            ufrag: our_ufrag,
            remotes,
            rtc,
            offer,
            network_id: network_id.to_string(),
        };
        let answer = response(200, "OK", "application/sdp", answer.write().as_bytes());
        Ok(Reply::Join(answer, Box::new(pending)))
    }
}

/// The `a=identity` of every answer: the operator's token (self-signed
/// with `key`, a year long), its JWS over `cert`'s fingerprint.
fn operator_identity(key: &KeyPair, cert: &Cert) -> anyhow::Result<String> {
    let now = identity::unix_now();
    let claims = serde_json::json!({
        "iss": "raknet-dissect serve",
        "iat": now,
        "exp": now + 365 * 86_400,
    });
    let serde_json::Value::Object(claims) = claims else {
        unreachable!("an object")
    };
    let token = identity::self_signed_token(&key.secret, Default::default(), claims);
    // Only the fingerprint lines matter to the assertion.
    let fingerprints = format!("v=0\r\na=fingerprint:sha-256 {}\r\n", cert.fingerprint());
    let sdp = sdp::Sdp::parse(&fingerprints)?;
    Ok(identity::attribute(&key.secret, &token, "self", &sdp))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signaling(max: usize) -> Signaling {
        let cert = Cert::self_signed("test").unwrap();
        let key = KeyPair::generate().unwrap();
        Signaling::new("1.26.45", ("test server", max), (cert, &key), 19132).unwrap()
    }

    /// The one request a stream of `bytes` holds, answered with `joined` in.
    fn ask(sig: &Signaling, bytes: &[u8], joined: usize) -> Reply {
        let mut m = http::Stream::new().push(bytes).unwrap();
        assert_eq!(m.len(), 1);
        sig.respond(&m.remove(0), "127.0.0.1".parse().unwrap(), joined)
            .unwrap()
    }

    fn said(r: &Reply) -> String {
        match r {
            Reply::Respond(out) | Reply::Join(out, _) => String::from_utf8_lossy(out).into(),
        }
    }

    fn post(body: &str) -> Vec<u8> {
        format!(
            "POST /v1/join/77 HTTP/1.1\r\nContent-Type: application/sdp\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    #[test]
    fn the_status_names_the_server_and_its_players() {
        let sig = signaling(4);
        let r = said(&ask(&sig, b"GET /v1/join HTTP/1.1\r\n\r\n", 3));
        let (head, body) = r.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["name"], "test server");
        assert_eq!(
            (v["players"].as_u64(), v["maxPlayers"].as_u64()),
            (Some(3), Some(4))
        );
        assert_eq!(v["version"], "1.26.45");
        assert!(said(&ask(&sig, b"GET /v2 HTTP/1.1\r\n\r\n", 0)).starts_with("HTTP/1.1 404"));
    }

    #[test]
    fn an_offer_is_answered_with_our_identity_or_refused() {
        let sig = signaling(1);
        // The offer of the bundled join (aiortc's client).
        let truth = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/samples/nethernet-join.truth.jsonl"
        ))
        .unwrap();
        let offer = truth
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|v| v["type"] == "sdp" && v["kind"] == "offer")
            .unwrap()["sdp"]
            .as_str()
            .unwrap()
            .to_string();
        let r = ask(&sig, &post(&offer), 0);
        let Reply::Join(out, p) = r else {
            panic!("refused: {}", said(&r))
        };
        assert_eq!(p.network_id, "77");
        let client = identity::summary(&p.offer);
        assert!(client.contains("fingerprints signed"), "{client}");
        assert!(!p.remotes.is_empty());
        let text = String::from_utf8(out).unwrap();
        let answer = sdp::Sdp::parse(text.split_once("\r\n\r\n").unwrap().1).unwrap();
        assert_eq!(answer.setup.as_deref(), Some("active"));
        assert_eq!(answer.ice_ufrag.as_deref(), Some(p.ufrag.as_str()));
        assert_eq!(answer.sha256(), Some(sig.cert.fingerprint().as_str()));
        assert!(identity::summary(&answer).starts_with("fingerprints signed"));
        // Full: 503; not SDP, or no credentials: 400.
        assert!(said(&ask(&sig, &post(&offer), 1)).starts_with("HTTP/1.1 503"));
        assert!(said(&ask(&sig, &post("hello"), 0)).starts_with("HTTP/1.1 400"));
        let bare = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n";
        assert!(said(&ask(&sig, &post(bare), 0)).starts_with("HTTP/1.1 400"));
    }
}
