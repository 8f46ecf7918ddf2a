//! `serve --bedrock --nethernet`: a NetherNet server, as a dedicated
//! server is one: the signaling on TCP (`GET /v1/join` answered with the
//! status, `POST /v1/join/{networkId}` with the answer to the offer) and
//! every player's ICE, DTLS and SCTP on one UDP socket of the same port
//! number, each player's datagrams told apart by the ICE username (STUN)
//! and then by address. Each player is a [`nethernet::rtc`] connection
//! (we answer `a=setup:active`: the DTLS client, as aiortc's and
//! go-nethernet's servers are) carrying the same game server as over
//! RakNet ([`crate::bedrock::server`]), its batches without 0xFE, no
//! encryption handshake.
//!
//! Bounded: at most [`MAX_HTTP`] signaling connections at once, the
//! oldest that has sent nothing (else the oldest) closed for a new one,
//! and new ones read a few at a time (each [`HTTP_TIMEOUT`] at most, its request
//! bounded by the HTTP reader), at
//! most `max_clients` players, of which at most [`MAX_PENDING`] not yet
//! joined: a new offer beyond that evicts the oldest pending one whose
//! side has sent no connectivity check that passed (else the oldest), so
//! that a flood of offers keeps only its newest and a real client, whose
//! checks come within a round trip, gets in; a player whose channels are
//! not open within [`JOIN_TIMEOUT`] is dropped.
//!
//! [`nethernet::rtc`]: crate::nethernet::rtc

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::bedrock::{record_event, BedrockServePlan, RakNetGames};
use super::run::{Outcome, Report, Transport};
use crate::bedrock::identity::KeyPair;
use crate::bedrock::server::GameServer;
use crate::bedrock::speak::SessionEvent;
use crate::nethernet::cert::Cert;
use crate::nethernet::framing::{Reassembler, Step};
use crate::nethernet::http::{self, Start};
use crate::nethernet::ice::Credentials;
use crate::nethernet::rtc::{Rtc, RtcConfig, RtcEvent, MAX_MESSAGE_SIZE};
use crate::nethernet::{dcep, identity, sdp, stun};
use crate::records::peer::{JoinedJson, ListeningJson, PeerLoginJson, PeerRecord};

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
/// Reading datagrams in one turn stops after this long: then the
/// signaling and every player have theirs, whatever a flood sends.
pub const READ_TURN: Duration = Duration::from_millis(10);

/// What `serve --bedrock --nethernet` does besides what every Bedrock
/// server does ([`BedrockServePlan`]: the version, `--once`, the key log,
/// the script of `--replay`).
#[derive(Clone)]
pub struct NetherNetServePlan {
    /// RakNet too, on the same UDP socket (as a dedicated server does):
    /// not with `--transport nethernet`.
    pub raknet: bool,
    /// Players at once, at most (each transport's).
    pub max_clients: usize,
    /// The server's name in its status.
    pub motd: String,
    /// The operator's key: the identity assertion of every answer.
    pub identity: KeyPair,
    /// DTLS key-log lines appended here.
    pub tls_keylog_out: Option<PathBuf>,
}

/// One signaling connection.
struct Http {
    stream: TcpStream,
    reader: http::Stream,
    since: Instant,
    /// Bytes read from it.
    got: usize,
}

/// One player.
struct Player {
    /// Its signaling connection's address.
    peer: SocketAddr,
    ufrag: String,
    /// Its candidates, and the addresses its checks came from.
    remotes: Vec<SocketAddr>,
    rtc: Rtc,
    game: GameServer,
    reliable: Reassembler,
    open: u8,
    since: Instant,
    joined: bool,
    key_logged: bool,
    /// Its offer: its `a=identity` is checked when it joins (a flood's
    /// offers never do, and each check is two P-384 verifications).
    offer: sdp::Sdp,
    network_id: String,
    /// From its spawn, with `--replay`: when, and the next scripted packet.
    playing: Option<(Duration, usize)>,
}

/// An HTTP response, closing the connection.
fn response(status: u16, reason: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
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
    /// Its game.
    pub game: GameServer,
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
        let remotes: Vec<SocketAddr> = offer
            .candidates
            .iter()
            .filter(|c| c.transport == "udp" && c.address.is_ipv4() == local_ip.is_ipv4())
            .map(|c| c.address)
            .collect();
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
        let game = GameServer::new(&self.version)
            .map_err(|e| anyhow::anyhow!(e))?
            .over_nethernet();
        let pending = Pending {
            ufrag: our_ufrag,
            remotes,
            rtc,
            game,
            offer,
            network_id: network_id.to_string(),
        };
        let answer = response(200, "OK", "application/sdp", answer.write().as_bytes());
        Ok(Reply::Join(answer, Box::new(pending)))
    }
}

/// The server: its sockets, signaling connections and players.
struct Server<'p> {
    plan: &'p NetherNetServePlan,
    game: &'p BedrockServePlan,
    tcp: TcpListener,
    /// The UDP socket, and the RakNet listener on it.
    udp: super::Server,
    /// The games of RakNet's clients (with `plan.raknet`).
    raknet: RakNetGames,
    http: Vec<Http>,
    players: Vec<Player>,
    epoch: Instant,
    /// A player has joined and gone (`--once`).
    done: bool,
    sig: Signaling,
}

impl Server<'_> {
    /// Players in the game, of either transport.
    fn joined(&self) -> usize {
        self.players.iter().filter(|p| p.joined).count() + self.raknet.len()
    }

    /// The response to a signaling request from `peer`; a player taken
    /// in, the oldest still joining making room: first one whose side
    /// never sent a check that passed (an offer alone, as a flood's are).
    fn respond(
        &mut self,
        m: &http::Message,
        peer: SocketAddr,
        local_ip: std::net::IpAddr,
        report: &mut dyn Report,
    ) -> anyhow::Result<Vec<u8>> {
        let (out, p) = match self.sig.respond(m, local_ip, self.joined())? {
            Reply::Respond(out) => return Ok(out),
            Reply::Join(out, p) => (out, p),
        };
        // Room is made at the address with the most players still
        // joining (this one's when it has its share): its oldest that has
        // not checked, else its oldest. A flood from one address keeps
        // only its newest few; a client from another keeps its place.
        let pending = |ip| {
            (self.players.iter())
                .filter(|p| !p.joined && p.peer.ip() == ip)
                .count()
        };
        let total = self.players.iter().filter(|p| !p.joined).count();
        let full =
            total >= MAX_PENDING || self.players.len() >= self.plan.max_clients + MAX_PENDING;
        let from = if pending(peer.ip()) >= MAX_PENDING_PER_IP {
            Some(peer.ip())
        } else if full {
            (self.players.iter())
                .filter(|p| !p.joined)
                .map(|p| p.peer.ip())
                .max_by_key(|&ip| pending(ip))
        } else {
            None
        };
        if let Some(ip) = from {
            let of_ip = |p: &Player| !p.joined && p.peer.ip() == ip;
            let silent = self
                .players
                .iter()
                .position(|p| of_ip(p) && !p.rtc.checked());
            if let Some(i) = silent.or_else(|| self.players.iter().position(of_ip)) {
                let old = self.players.remove(i);
                let why = "a newer offer took its place".into();
                self.said(report, &old, "evicted", why)?;
            }
        }
        let Pending {
            ufrag,
            remotes,
            rtc,
            game,
            offer,
            network_id,
        } = *p;
        self.players.push(Player {
            peer,
            ufrag,
            remotes,
            rtc,
            game,
            reliable: Reassembler::new(crate::nethernet::framing::DEFAULT_LIMIT),
            open: 0,
            since: Instant::now(),
            joined: false,
            key_logged: false,
            offer,
            network_id,
            playing: None,
        });
        Ok(out)
    }

    /// A `login` record about `p`.
    fn said(
        &self,
        report: &mut dyn Report,
        p: &Player,
        event: &'static str,
        detail: String,
    ) -> io::Result<()> {
        report.record(PeerRecord::Login(PeerLoginJson {
            kind: "login",
            peer: p.peer.to_string(),
            ts: self.epoch.elapsed().as_secs_f64(),
            event,
            detail,
        }))
    }

    /// New signaling connections, and the requests of those open.
    fn signaling(&mut self, report: &mut dyn Report) -> anyhow::Result<()> {
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
                        self.http[i].got += n;
                        let pushed = self.http[i].reader.push(&buf[..n]);
                        match pushed {
                            Ok(ms) if !ms.is_empty() => {
                                let (peer, local) = (
                                    self.http[i].stream.peer_addr()?,
                                    self.http[i].stream.local_addr()?,
                                );
                                let out = self.respond(&ms[0], peer, local.ip(), report)?;
                                let s = &mut self.http[i].stream;
                                let _ = s.set_nonblocking(false);
                                let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
                                let _ = s.write_all(&out);
                                done = true;
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

    /// Datagrams, timers and the games of every player: STUN and DTLS
    /// to the NetherNet player they are for, the rest to RakNet (RFC 7983's
    /// first-byte ranges: RakNet's offline messages and datagrams fall in
    /// neither).
    fn players(&mut self, report: &mut dyn Report) -> anyhow::Result<()> {
        let now = Instant::now();
        for n in 0usize.. {
            if n % 64 == 63 && now.elapsed() > READ_TURN {
                break;
            }
            let got = match self.udp.s.recv() {
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                got => got?,
            };
            let Some((from, n)) = got else { break };
            let data = &self.udp.s.rbuf[..n];
            if stun::looks_like(data) || data.first().is_some_and(|b| (20..=63).contains(b)) {
                if let Some(i) = route(&mut self.players, from, data) {
                    self.players[i].rtc.handle_datagram(now, from, data);
                }
            } else if self.plan.raknet {
                let t = self.udp.s.now();
                self.udp.listener.handle(t, from, data);
            }
        }
        let t = self.udp.s.now();
        if self
            .raknet
            .turn(&mut self.udp.listener, t, self.game, report)?
        {
            self.done = true;
        }
        let mut out = Vec::new();
        while let Some(to) = self.udp.listener.poll_transmit(t, &mut out) {
            if !self.udp.s.send_to(to, &out).unwrap_or(true) {
                break;
            }
        }
        let mut i = 0;
        while i < self.players.len() {
            let ended = self.player(i, report)?;
            if let Some(mut why) = ended {
                let p = self.players.remove(i);
                if p.rtc.late_inits() > 0 {
                    let n = p.rtc.late_inits();
                    why += &format!("; {n} SCTP INITs after the association was up, dropped");
                }
                if p.joined {
                    self.said(report, &p, "closed", why)?;
                    self.done |= self.game.once;
                } else {
                    self.said(report, &p, "no_join", why)?;
                }
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// Player `i`'s turn; `Some(why)` once it has ended.
    fn player(&mut self, i: usize, report: &mut dyn Report) -> anyhow::Result<Option<String>> {
        let now = Instant::now();
        let (epoch, t) = (self.epoch, self.udp.s.now());
        let p = &mut self.players[i];
        if let Some((t0, next)) = &mut p.playing {
            if !super::bedrock::play_due(&mut p.game, self.game, (*t0, next), t) {
                p.playing = None;
            }
        }
        if p.rtc.poll_timeout().is_some_and(|t| t <= now) {
            p.rtc.handle_timeout(now);
        }
        let mut ended = None;
        while let Some(e) = p.rtc.poll_event() {
            match e {
                RtcEvent::ChannelOpen { .. } => {
                    p.open += 1;
                    if p.open == 2 && !p.joined {
                        p.joined = true;
                        report.record(PeerRecord::Joined(JoinedJson {
                            kind: "joined",
                            transport: "nethernet",
                            peer: p.peer.to_string(),
                            network_id: p.network_id.clone(),
                            remote: p.rtc_remote(),
                            dtls_role: "client",
                            join_ms: crate::records::peer::ms(p.since.elapsed()),
                            server_identity: format!(
                                "the client's: {}",
                                identity::summary(&p.offer)
                            ),
                        }))?;
                    }
                }
                RtcEvent::Message { label, data } => {
                    if label == dcep::RELIABLE_LABEL {
                        if let Step::Whole(b) = p.reliable.push(&data) {
                            p.game.handle(&b);
                        }
                    } else if let Some((0, rest)) = data.split_first() {
                        p.game.handle(rest);
                    }
                }
                RtcEvent::Closed(why) | RtcEvent::Failed(why) => ended = Some(why),
                _ => {}
            }
        }
        if !p.joined && p.since.elapsed() > JOIN_TIMEOUT {
            ended = Some(format!(
                "channels not open within {} s",
                JOIN_TIMEOUT.as_secs()
            ));
        }
        while let Some(batch) = p.game.poll_transmit() {
            match crate::nethernet::framing::segments(&batch, MAX_MESSAGE_SIZE) {
                Some(segs) => {
                    for s in segs {
                        if let Err(e) = p.rtc.send(now, dcep::RELIABLE_LABEL, &s) {
                            ended.get_or_insert(e);
                        }
                    }
                }
                None => {
                    ended.get_or_insert(format!("a batch of {} bytes", batch.len()));
                }
            }
        }
        let ts = epoch.elapsed().as_secs_f64();
        let peer = p.peer.to_string();
        while let Some(e) = p.game.poll_event() {
            let detail = match &e {
                SessionEvent::Spawned if !self.game.script.is_empty() => {
                    p.playing = Some((t, 0));
                    p.game.player.clone()
                }
                SessionEvent::LoggedIn | SessionEvent::Spawned => p.game.player.clone(),
                _ => None,
            };
            record_event(
                report,
                &peer,
                "c2s",
                ts,
                e,
                self.game.keylog_out.as_deref(),
                detail,
            )?;
        }
        if !p.key_logged {
            if let (Some(path), Some(line)) = (&self.plan.tls_keylog_out, p.rtc.key_log_line()) {
                p.key_logged = true;
                let _ = super::bedrock::append_key_log(path, line);
            }
        }
        while let Some((to, d)) = p.rtc.poll_transmit() {
            self.udp.s.send_to(to, &d)?;
        }
        Ok(ended)
    }

    /// When something is next due, at most 20 ms away.
    fn next_wake(&mut self) -> Duration {
        let now = Instant::now();
        let mut wake = now + Duration::from_millis(20);
        if self.udp.listener.is_busy() {
            return Duration::ZERO;
        }
        if let Some(t) = self.udp.listener.poll_timeout() {
            wake = wake.min(now + t.saturating_sub(self.udp.s.now()));
        }
        for p in &mut self.players {
            if let Some(t) = p.rtc.poll_timeout() {
                wake = wake.min(t);
            }
        }
        wake.saturating_duration_since(now)
    }
}

/// The player of `players` a datagram from `from` is for.
fn route(players: &mut [Player], from: SocketAddr, data: &[u8]) -> Option<usize> {
    if stun::looks_like(data) {
        if let Ok(m) = stun::Message::parse(data) {
            if m.class == stun::Class::Request {
                let ours = m.username()?.split(':').next()?;
                let i = players.iter().position(|p| p.ufrag == ours)?;
                let p = &mut players[i];
                if !p.remotes.contains(&from) && p.remotes.len() < 16 {
                    p.remotes.push(from);
                }
                return Some(i);
            }
        }
    }
    players.iter().position(|p| p.remotes.contains(&from))
}

impl Player {
    fn rtc_remote(&self) -> String {
        self.rtc
            .remote()
            .map_or_else(|| "-".to_string(), |a| a.to_string())
    }
}

/// The plan of `serve --bedrock` with NetherNet: `None` for RakNet only
/// (`transport`: `--transport`, and `--nethernet`, which serves both);
/// players at most, the status's name (`--motd`), the identity key's file,
/// the DTLS key log given or the environment's `SSLKEYLOGFILE`.
pub fn plan(
    (transport, nethernet): (Option<Transport>, bool),
    max_clients: usize,
    motd: Option<String>,
    identity: Option<PathBuf>,
    tls_keylog: Option<PathBuf>,
) -> anyhow::Result<Option<NetherNetServePlan>> {
    let raknet = match (transport, nethernet) {
        (None, false) | (Some(Transport::RakNet), _) => return Ok(None),
        (Some(Transport::NetherNet), _) => false,
        (Some(Transport::Auto), _) | (None, true) => true,
    };
    let identity = match identity {
        Some(path) => KeyPair::load_or_create(&path)
            .map_err(|e| anyhow::anyhow!("--identity {}: {e}", path.display()))?,
        None => KeyPair::generate()?,
    };
    Ok(Some(NetherNetServePlan {
        raknet,
        max_clients,
        motd: motd.unwrap_or_else(|| "raknet-dissect".to_string()),
        identity,
        tls_keylog_out: tls_keylog.or_else(|| std::env::var_os("SSLKEYLOGFILE").map(PathBuf::from)),
    }))
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

/// `serve --bedrock --nethernet` on `udp` (bound, its pong set; the
/// signaling on TCP on the same port); see the module. `Err` when the TCP
/// port cannot be bound (in words).
pub(crate) fn serve(
    udp: super::Server,
    game: &BedrockServePlan,
    plan: &NetherNetServePlan,
    report: &mut dyn Report,
) -> anyhow::Result<Result<Outcome, String>> {
    let bound = udp.local_addr()?;
    let tcp = match TcpListener::bind(bound) {
        Ok(tcp) => tcp,
        Err(e) => return Ok(Err(format!("cannot listen on TCP {bound}: {e}"))),
    };
    tcp.set_nonblocking(true)?;
    if plan.raknet {
        report.record(super::bedrock::raknet_listening(&udp, Some("raknet"))?)?;
    }
    report.record(PeerRecord::Listening(ListeningJson {
        kind: "listening",
        address: bound.to_string(),
        guid: String::new(),
        protocol: 0,
        transport: Some("nethernet"),
    }))?;
    let cert = Cert::self_signed("raknet-dissect")?;
    let o = (plan.motd.as_str(), plan.max_clients);
    let sig = Signaling::new(&game.version, o, (cert, &plan.identity), bound.port())?;
    let mut s = Server {
        plan,
        game,
        sig,
        tcp,
        udp,
        raknet: RakNetGames::default(),
        http: Vec::new(),
        players: Vec::new(),
        epoch: Instant::now(),
        done: false,
    };
    loop {
        let mut fds = vec![s.tcp.as_raw_fd(), s.udp.s.sock.as_raw_fd()];
        fds.extend(s.http.iter().map(|h| h.stream.as_raw_fd()));
        super::wait_any(&fds, s.next_wake())?;
        s.signaling(report)?;
        s.players(report)?;
        if s.done {
            // What the last player is owed still goes (RakNet's last
            // acknowledgements, the closing of SCTP).
            let until = Instant::now() + Duration::from_millis(50);
            while Instant::now() < until {
                super::wait_any(&[s.udp.s.sock.as_raw_fd()], s.next_wake())?;
                s.players(report)?;
            }
            return Ok(Ok(Outcome::Done));
        }
    }
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
