//! A NetherNet join's timeline, from its conversation's datagrams: the ICE
//! checks, the DTLS handshake, SCTP's association, the data channels, and
//! where it stopped, with why in words (`handshake`). Sans-IO: fed what
//! each datagram showed ([`Seen`]).

use std::net::SocketAddr;
use std::time::Duration;

use super::association::Event;
use super::conversations::Seen;
use super::{dtls, sctp, stun};
use crate::dissect::Dir;
use crate::mirror::handshake::{Attempt, Step};

/// Steps kept at most; past them, counted.
const MAX_STEPS: usize = 64;

/// One conversation's timeline so far.
#[derive(Debug, Default)]
pub struct Timeline {
    id: u32,
    first_sender: Option<SocketAddr>,
    other: Option<SocketAddr>,
    start: Duration,
    end: Duration,
    steps: Vec<Step>,
    omitted: u32,
    /// Steps already taken, by name and direction (each is kept once).
    seen: Vec<(&'static str, Option<Dir>)>,
    /// Binding requests, success and error responses sent by the first
    /// sender, then by the other side.
    requests: [u32; 2],
    answers: [u32; 2],
    errors: [u32; 2],
    /// Checks sent by each side whose MESSAGE-INTEGRITY the SDP's ice-pwd
    /// did not verify.
    bad_integrity: [u32; 2],
    /// Checks sent by each side whose MESSAGE-INTEGRITY it verified.
    good_integrity: [u32; 2],
    /// The first error response each side sent: code and reason.
    error: [Option<(u16, String)>; 2],
    /// Each side's certificate's SHA-256 (`certificate_fingerprint`).
    certificates: Vec<(SocketAddr, String)>,
    client_hello: bool,
    server_hello: bool,
    /// The ServerHello chose DTLS 1.3 (whose records this tool does not
    /// open).
    dtls13: bool,
    /// Sealed records sent by the first sender, by the other side.
    sealed: [u64; 2],
    cookie_ack: bool,
    channels: Vec<String>,
    /// A fatal alert: who sent it and what it said (`None`: sealed).
    fatal: Option<(SocketAddr, Option<u8>)>,
    closed_by: Option<SocketAddr>,
    decrypts: bool,
    client: Option<SocketAddr>,
    /// The STUN checks' USERNAMEs (a few): the signaling's ufrags.
    usernames: Vec<String>,
}

impl Timeline {
    /// A datagram of the conversation (`frame`, at `ts`, from `src`).
    pub fn observe(&mut self, seen: &Seen<'_>, frame: u64, ts: Duration, src: SocketAddr) {
        let c = seen.conversation;
        if self.first_sender.is_none() {
            (self.id, self.start) = (c.id, ts);
            (self.first_sender, self.other) = (Some(c.first_sender), Some(c.other));
        }
        self.end = ts;
        let a = &c.association;
        self.decrypts = a.decrypts();
        self.client = Some(c.client());
        let side = usize::from(Some(src) != self.first_sender);
        let dir = self.dir(src);
        for e in seen.events {
            match e {
                Event::Stun {
                    class,
                    username,
                    use_candidate,
                    integrity_ok,
                    error,
                    ..
                } => match class {
                    stun::Class::Request => {
                        self.requests[side] += 1;
                        match integrity_ok {
                            Some(false) => self.bad_integrity[side] += 1,
                            Some(true) => self.good_integrity[side] += 1,
                            None => {}
                        }
                        if let Some(u) = username
                            .as_ref()
                            .filter(|u| self.usernames.len() < 4 && !self.usernames.contains(u))
                        {
                            self.usernames.push(u.clone());
                        }
                        let to = if Some(src) == self.first_sender {
                            self.other
                        } else {
                            self.first_sender
                        };
                        let mut what =
                            format!("{src} → {}", to.map_or("?".into(), |a| a.to_string()));
                        if let Some(u) = username {
                            what.push_str(&format!(", user {u}"));
                        }
                        if *use_candidate {
                            what.push_str(", nominating the pair");
                        }
                        if *integrity_ok == Some(false) {
                            what.push_str(
                                ", MESSAGE-INTEGRITY does not verify with the SDP's ice-pwd",
                            );
                        }
                        self.step("stun_request", dir, frame, ts, what);
                    }
                    stun::Class::Success => {
                        self.answers[side] += 1;
                        self.step("stun_response", dir, frame, ts, String::new());
                    }
                    stun::Class::Error => {
                        self.errors[side] += 1;
                        if self.error[side].is_none() {
                            self.error[side] = error.clone();
                        }
                        let what = error
                            .as_ref()
                            .map_or(String::new(), |(c, r)| format!("{c} {r}"));
                        self.step("stun_error", dir, frame, ts, what);
                    }
                    stun::Class::Indication => {}
                },
                Event::Handshake { kind, .. } => {
                    let name = dtls::handshake_name(*kind);
                    match *kind {
                        1 => self.client_hello = true,
                        2 => self.server_hello = true,
                        _ => {}
                    }
                    self.step(name, dir, frame, ts, String::new());
                }
                Event::Negotiated { suite, version } => {
                    self.dtls13 = *version == 0xFEFC;
                    let name = dtls::suite_name(*suite).unwrap_or("an unknown suite");
                    let detail = format!("{}, {name}", dtls::version_name(*version));
                    self.step("suite", dir, frame, ts, detail);
                }
                Event::Certificate { fingerprint, .. } => {
                    if self.certificates.len() < 2 && !self.certificates.iter().any(|c| c.0 == src)
                    {
                        self.certificates.push((src, fingerprint.clone()));
                    }
                    self.step(
                        "certificate_fingerprint",
                        dir,
                        frame,
                        ts,
                        fingerprint.clone(),
                    );
                }
                Event::Record(r) if r.epoch > 0 => {
                    self.sealed[side] += 1;
                    if r.content == dtls::content::APPLICATION_DATA {
                        self.step("dtls_application_data", dir, frame, ts, String::new());
                    }
                }
                Event::Chunks(chunks) => {
                    for ch in chunks {
                        let name = match ch.kind {
                            sctp::chunk::INIT => "sctp_init",
                            sctp::chunk::INIT_ACK => "sctp_init_ack",
                            sctp::chunk::COOKIE_ECHO => "sctp_cookie_echo",
                            sctp::chunk::COOKIE_ACK => {
                                self.cookie_ack = true;
                                "sctp_cookie_ack"
                            }
                            sctp::chunk::ABORT => "sctp_abort",
                            _ => continue,
                        };
                        self.step(name, dir, frame, ts, String::new());
                    }
                }
                Event::ChannelOpen(ch) => {
                    if self.channels.len() < 16 {
                        self.channels.push(ch.label.clone());
                    }
                    // A channel each: both are steps.
                    let label = ch.label.clone();
                    if self.steps.len() < MAX_STEPS {
                        self.steps.push(Step {
                            ts,
                            frame,
                            dir: Some(dir),
                            step: "channel_open",
                            detail: label,
                        });
                    } else {
                        self.omitted += 1;
                    }
                }
                Event::Alert { from, alert } => {
                    let (level, what) = match alert {
                        Some((l, d)) => (Some(*l), dtls::alert_name(*d).to_string()),
                        None => (None, "sealed".to_string()),
                    };
                    // Sealed, after records flowed both ways: a close,
                    // as a rule (without the key, which one is unknown).
                    let closing = alert.is_none() && self.sealed.iter().all(|&n| n > 1);
                    if alert.is_some_and(|(_, d)| d == 0) || closing {
                        self.closed_by = self.closed_by.or(Some(*from));
                        let detail = if closing { "sealed alert" } else { "" };
                        self.step("close_notify", dir, frame, ts, detail.into());
                    } else if level != Some(1) && self.fatal.is_none() {
                        self.fatal = Some((*from, alert.map(|(_, d)| d)));
                        self.step("alert", dir, frame, ts, what);
                    }
                }
                _ => {}
            }
        }
    }

    /// The direction of a datagram from `src`.
    fn dir(&self, src: SocketAddr) -> Dir {
        if Some(src) == self.client {
            Dir::C2s
        } else {
            Dir::S2c
        }
    }

    /// Step `name` in direction `dir`, the first time only.
    fn step(&mut self, name: &'static str, dir: Dir, frame: u64, ts: Duration, detail: String) {
        if self.seen.contains(&(name, Some(dir))) {
            return;
        }
        if self.steps.len() >= MAX_STEPS {
            self.omitted += 1;
            return;
        }
        self.seen.push((name, Some(dir)));
        self.steps.push(Step {
            ts,
            frame,
            dir: Some(dir),
            step: name,
            detail,
        });
    }

    /// The checks that went unanswered: `(sender, receiver, requests,
    /// "client" or "server")` for each side none of whose requests got an
    /// answer.
    fn unanswered(&self, client: Option<SocketAddr>) -> Vec<Unanswered> {
        let sides = [self.first_sender, self.other];
        (0..2)
            .filter(|&s| {
                self.requests[s] > 0 && self.answers[1 - s] == 0 && self.errors[1 - s] == 0
            })
            .filter_map(|s| {
                let (from, to) = (sides[s]?, sides[1 - s]?);
                let who = if Some(from) == client {
                    "client"
                } else {
                    "server"
                };
                Some((from, to, self.requests[s], who))
            })
            .collect()
    }

    /// Why ICE failed, when it did: no DTLS started, and the client's
    /// checks (the controlling agent's: they nominate) got no success
    /// answer. `None` when ICE passed, or no check was seen.
    fn ice_failure(&self, client: Option<SocketAddr>) -> Option<(&'static str, String)> {
        if self.client_hello || self.requests.iter().sum::<u32>() == 0 {
            return None;
        }
        let c = usize::from(client != self.first_sender);
        if self.answers[1 - c] > 0 {
            return None;
        }
        let integrity = self.integrity_words(client);
        if self.errors[1 - c] > 0 {
            let n = self.requests[c];
            let code = self.error[1 - c]
                .as_ref()
                .map_or(String::new(), |(c, r)| format!(" ({c} {r})"));
            let why = if self.good_integrity[c] > 0 && self.bad_integrity[c] == 0 {
                ", though their MESSAGE-INTEGRITY verifies with the answer's ice-pwd: the server's ICE agent checks with another password than its SDP gave".to_string()
            } else if self.bad_integrity[c] > 0 {
                integrity
            } else {
                ": wrong ICE credentials (the SDP's ice-ufrag and ice-pwd)".to_string()
            };
            return Some((
                "stun_error",
                format!("the server answered the client's {n} STUN checks with errors{code}{why}"),
            ));
        }
        Some((
            "no_stun_answer",
            unreachable_words(&self.unanswered(client), &[], &[]) + &integrity,
        ))
    }

    /// Binding requests `who` sent.
    fn checks_from(&self, who: Option<SocketAddr>) -> u32 {
        if who.is_none() {
            return 0;
        }
        let side = usize::from(who != self.first_sender);
        self.requests[side]
    }

    /// What the checks' MESSAGE-INTEGRITY showed, when it failed.
    fn integrity_words(&self, client: Option<SocketAddr>) -> String {
        let sides = [self.first_sender, self.other];
        let mut out = String::new();
        for (side, bad) in sides.into_iter().zip(self.bad_integrity) {
            if bad > 0 {
                let (who, whose) = if side == client {
                    ("client", "answer")
                } else {
                    ("server", "offer")
                };
                out.push_str(&format!(
                    "; {bad} of the {who}'s checks carry a MESSAGE-INTEGRITY that the {whose}'s ice-pwd does not verify"
                ));
            }
        }
        out
    }

    /// The join as an attempt: its steps, outcome and diagnosis.
    pub(crate) fn attempt(&self) -> Attempt {
        let client = self.client.or(self.first_sender);
        let server = if client == self.first_sender {
            self.other
        } else {
            self.first_sender
        };
        let (outcome, diagnosis): (&'static str, String) = if let Some((from, alert)) = self.fatal {
            let who = if Some(from) == client {
                "client"
            } else {
                "server"
            };
            let what = match alert {
                Some(d) => format!("a fatal DTLS alert, {}", dtls::alert_name(d)),
                None => "a sealed DTLS alert (encrypted: a key log, --tls-keylog, tells which)"
                    .to_string(),
            };
            let hint = match alert {
                Some(42..=46) => {
                    ": a certificate that does not match the SDP's fingerprint is one cause"
                }
                Some(40) => ": the two sides share no cipher suite or curve",
                _ => "",
            };
            (
                "dtls_alert",
                format!("the {who} ({from}) sent {what}{hint}"),
            )
        } else if let Some(ice) = self.ice_failure(client) {
            ice
        } else if !self.client_hello {
            (
                "no_dtls",
                "ICE checks passed but no DTLS ClientHello followed (the DTLS client never started)".into(),
            )
        } else if !self.server_hello {
            (
                "dtls_unanswered",
                "the DTLS ClientHello was never answered (the DTLS server is not there, or its answers were lost)".into(),
            )
        } else if self.sealed.contains(&0) {
            (
                "dtls_incomplete",
                "the DTLS handshake did not finish: no sealed record from both sides".into(),
            )
        } else if self.dtls13 {
            (
                "connected",
                "ICE and DTLS 1.3 completed and sealed records flowed both ways (this tool does not open DTLS 1.3's records)".into(),
            )
        } else if !self.decrypts {
            (
                "connected",
                "ICE and DTLS completed and sealed records flowed both ways; a key log (--tls-keylog) shows SCTP and the channels".into(),
            )
        } else if !self.cookie_ack {
            (
                "sctp_not_established",
                "DTLS completed, but SCTP's association never did (no COOKIE ACK)".into(),
            )
        } else if self.channels.is_empty() {
            (
                "channel_not_opened",
                "SCTP came up, but no data channel was opened (no DCEP open)".into(),
            )
        } else {
            (
                "connected",
                format!(
                    "ICE, DTLS and SCTP completed; channels {} opened",
                    self.channels.join(", ")
                ),
            )
        };
        let diagnosis = match self.closed_by {
            Some(by) if outcome == "connected" => {
                let who = if Some(by) == client {
                    "client"
                } else {
                    "server"
                };
                format!("{diagnosis}; the {who} closed it (a DTLS alert)")
            }
            _ => diagnosis,
        };
        let mut a = Attempt::default();
        (a.flow, a.number, a.client, a.server) = (self.id, 1, client, server);
        (a.start, a.end) = (self.start, self.end);
        (a.steps, a.steps_omitted) = (self.steps.clone(), self.omitted);
        (a.accepted, a.outcome, a.diagnosis) = (outcome == "connected", outcome, diagnosis);
        a.nethernet = true;
        a
    }
}

/// Checks that went unanswered: sender, receiver, how many, and whether
/// the sender is the `client` or the `server`.
type Unanswered = (SocketAddr, SocketAddr, u32, &'static str);

/// `no_stun_answer`'s diagnosis: each side's unanswered checks, their
/// receivers named as the SDP's candidates they are (`offer`, `answer`:
/// the candidates of each, `ip:port`).
fn unreachable_words(list: &[Unanswered], offer: &[String], answer: &[String]) -> String {
    let parts: Vec<String> = list
        .iter()
        .map(|(from, to, n, who)| {
            let t = to.to_string();
            let named = if answer.contains(&t) {
                " (a candidate of the answer)"
            } else if offer.contains(&t) {
                " (a candidate of the offer)"
            } else {
                ""
            };
            format!("{n} from the {who} {from} to {to}{named}")
        })
        .collect();
    format!(
        "STUN binding requests went unanswered: {}: no candidate pair is reachable (a firewall, NAT, or an SDP candidate that is not the peer's address)",
        parts.join(", ")
    )
}

/// Outcomes of a conversation, from the least progress to the most.
const PROGRESS: [&str; 9] = [
    "no_stun_answer",
    "stun_error",
    "no_dtls",
    "dtls_unanswered",
    "dtls_incomplete",
    "dtls_alert",
    "sctp_not_established",
    "channel_not_opened",
    "connected",
];

/// A request's method and target, and its answer's status and reason.
type Exchange = (String, String, Option<(u16, String)>);

/// Whether an exchange is an offer: HTTP's POST, or LAN's CONNECTREQUEST.
fn offered(x: &Exchange) -> bool {
    x.0 == "POST" || x.0 == "CONNECTREQUEST"
}

/// One signaling connection's steps: the status request and its answer,
/// the offer and its answer (or LAN discovery's request, response and
/// signals of one connection id).
#[derive(Debug, Default, Clone)]
pub struct Signals {
    id: u32,
    client: Option<SocketAddr>,
    server: Option<SocketAddr>,
    start: Duration,
    end: Duration,
    steps: Vec<Step>,
    /// The last request's method and target, waiting for its answer.
    asked: Option<(String, String)>,
    /// `(method, target, status)` of each request, answered or not.
    exchanges: Vec<Exchange>,
    /// The offer's and the answer's ICE ufrags, and the answer's candidates.
    ufrags: Vec<String>,
    candidates: Vec<String>,
    /// The offer's candidates.
    offer_candidates: Vec<String>,
    /// The `a=fingerprint:sha-256` of the offer (the client's certificate)
    /// and of the answer (the server's).
    fingerprints: [Option<String>; 2],
    /// Whether the offer's and the answer's identity assertions verify
    /// over their fingerprints (`None`: none, or no `cpk`).
    signed: [Option<bool>; 2],
}

impl Signals {
    /// A segment of the connection (`frame`, at `ts`, from `src`).
    pub fn observe(
        &mut self,
        seen: &super::signaling::Seen<'_>,
        frame: u64,
        ts: Duration,
        src: SocketAddr,
    ) {
        use super::signaling::Event as S;
        let c = seen.connection;
        if self.client.is_none() {
            (self.id, self.start) = (c.id, ts);
            (self.client, self.server) = (Some(c.client), Some(c.server));
        }
        self.end = ts;
        let dir = if src == c.client { Dir::C2s } else { Dir::S2c };
        for e in seen.events {
            let S::Http { message: h, .. } = e else {
                continue;
            };
            self.ufrag(h.ice_ufrag.as_deref());
            let (step, detail) = match (&h.method, &h.target, h.status) {
                (Some(m), Some(t), _) => {
                    self.ask(m, t);
                    self.asked = Some((m.clone(), t.clone()));
                    if h.ice_ufrag.is_some() {
                        self.offer_candidates = h.candidates.clone();
                        self.fingerprints[0] = h.fingerprint.clone();
                        self.signed[0] = h.identity.as_ref().and_then(|i| i.fingerprints_verify);
                    }
                    let step = if m == "GET" {
                        "join_status_request"
                    } else {
                        "offer"
                    };
                    let mut detail = format!("{m} {t}");
                    if let Some(i) = &h.identity {
                        detail.push_str(&format!("; {}", i.words()));
                    }
                    (step, detail)
                }
                (_, _, Some(status)) => {
                    let reason = h.reason.clone().unwrap_or_default();
                    self.answered(status, &reason);
                    let asked = self.asked.take();
                    let step = match asked.as_ref().map(|(m, _)| m.as_str()) {
                        Some("GET") => "join_status",
                        _ => {
                            self.candidates = h.candidates.clone();
                            self.fingerprints[1] = h.fingerprint.clone();
                            self.signed[1] =
                                h.identity.as_ref().and_then(|i| i.fingerprints_verify);
                            "answer"
                        }
                    };
                    let mut detail = format!("{status} {reason}");
                    if let Some(i) = &h.identity {
                        detail.push_str(&format!("; {}", i.words()));
                    }
                    (step, detail)
                }
                _ => continue,
            };
            self.step(Step {
                ts,
                frame,
                dir: Some(dir),
                step,
                detail,
            });
        }
    }

    /// A step, while there is room.
    fn step(&mut self, step: Step) {
        if self.steps.len() < MAX_STEPS {
            self.steps.push(step);
        }
    }

    /// An SDP's ICE ufrag, kept (four at most).
    fn ufrag(&mut self, u: Option<&str>) {
        if let Some(u) = u.filter(|_| self.ufrags.len() < 4) {
            self.ufrags.push(u.to_string());
        }
    }

    /// A request (16 kept at most), not yet answered.
    fn ask(&mut self, method: &str, target: &str) {
        if self.exchanges.len() < 16 {
            self.exchanges.push((method.into(), target.into(), None));
        }
    }

    /// The answer to the last request not yet answered.
    fn answered(&mut self, status: u16, reason: &str) {
        if let Some(x) = self.exchanges.iter_mut().rev().find(|x| x.2.is_none()) {
            x.2 = Some((status, reason.into()));
        }
    }
}

impl Signals {
    /// A LAN discovery datagram of flow `flow` (`frame`, at `ts`, from
    /// `src` to `dst`, `dir`): the discovery request and response, and a
    /// connection's signals, in place of HTTP's status request, offer and
    /// answer (a CONNECTERROR answers the offer as a refusal, its code in
    /// place of a status).
    pub fn observe_lan(
        &mut self,
        l: &super::lan::LanSeen,
        flow: u32,
        (frame, ts): (u64, Duration),
        (src, dst): (SocketAddr, SocketAddr),
        dir: Dir,
    ) {
        let (client, server) = if dir == Dir::C2s {
            (src, dst)
        } else {
            (dst, src)
        };
        if self.client.is_none() {
            (self.id, self.start, self.client) = (flow, ts, Some(client));
        }
        // A request goes to a broadcast address: the server is who answers.
        if dir == Dir::S2c || self.server.is_none() {
            self.server = Some(server);
        }
        self.end = ts;
        let data = l.data.as_deref().unwrap_or_default().trim();
        let conn = l.connection.as_deref().unwrap_or_default();
        let (step, detail) = match (l.packet, l.signal.as_deref()) {
            ("request", _) => (
                "lan_request",
                format!("network id {}, looking for worlds", l.sender),
            ),
            ("response", _) => (
                "lan_response",
                match &l.server_data {
                    Some(d) => format!(
                        "network id {}: \"{}\" by {}, {}/{} players",
                        l.sender, d.level_name, d.server_name, d.player_count, d.max_player_count
                    ),
                    None => l.error.clone().unwrap_or_default(),
                },
            ),
            ("message", Some("CONNECTREQUEST")) => {
                self.ask("CONNECTREQUEST", &format!("connection {conn}"));
                self.ufrag(l.ice_ufrag.as_deref());
                self.offer_candidates = l.candidates.clone();
                self.fingerprints[0] = l.fingerprint.clone();
                ("offer", format!("CONNECTREQUEST connection {conn}"))
            }
            ("message", Some("CONNECTRESPONSE")) => {
                self.answered(200, "CONNECTRESPONSE");
                self.ufrag(l.ice_ufrag.as_deref());
                self.candidates = l.candidates.clone();
                self.fingerprints[1] = l.fingerprint.clone();
                ("answer", format!("CONNECTRESPONSE connection {conn}"))
            }
            ("message", Some("CONNECTERROR")) => {
                self.answered(data.parse().unwrap_or(0), "CONNECTERROR");
                (
                    "connect_error",
                    format!("CONNECTERROR connection {conn}, code {data}"),
                )
            }
            ("message", Some("CANDIDATEADD")) => ("candidate", data.to_string()),
            ("message", Some(other)) => ("signal", format!("{other} connection {conn}")),
            _ => return,
        };
        self.step(Step {
            ts,
            frame,
            dir: Some(dir),
            step,
            detail,
        });
    }
}

/// The joins of a capture: the ICE conversations whose checks carry the
/// ufrags a signaling exchange named (each side's checks may make one: a
/// conversation per candidate pair) in one timeline with that signaling
/// (and the status request of the same client before it); a conversation
/// no signaling named, a join of its own; the signaling that led to no
/// conversation, a join of its own that stopped there, said why.
pub(crate) fn joins(timelines: &[&Timeline], signals: &[&Signals]) -> Vec<Attempt> {
    let mut used = vec![false; signals.len()];
    // Conversations by the offer/answer whose ufrags their USERNAMEs carry.
    let mut groups: Vec<(Option<usize>, Vec<&Timeline>)> = Vec::new();
    for t in timelines {
        let offer = signals.iter().position(|s| {
            !s.ufrags.is_empty()
                && s.ufrags
                    .iter()
                    .all(|u| t.usernames.iter().any(|n| n.contains(u.as_str())))
        });
        match groups.iter_mut().find(|g| offer.is_some() && g.0 == offer) {
            Some(g) => g.1.push(t),
            None => groups.push((offer, vec![t])),
        }
    }
    let mut out = Vec::new();
    for (offer, group) in groups {
        out.push(join(&group, offer.map(|i| (i, signals)), &mut used));
    }
    // Signaling that led to no ICE conversation.
    for i in 0..signals.len() {
        if used[i] {
            continue;
        }
        // A status request followed by an offer is one join.
        let next = (i + 1..signals.len()).find(|&j| {
            !used[j]
                && signals[j].client.map(|c| c.ip()) == signals[i].client.map(|c| c.ip())
                && signals[j].server == signals[i].server
                && signals[j].exchanges.iter().any(offered)
        });
        let is_status = signals[i].exchanges.iter().all(|x| x.0 == "GET");
        let mut a = signals[i].attempt();
        used[i] = true;
        if let (true, Some(j)) = (is_status, next) {
            used[j] = true;
            let b = signals[j].attempt();
            let mut steps = a.steps.clone();
            steps.extend(b.steps);
            (a.steps, a.end) = (steps, b.end);
            (a.outcome, a.diagnosis, a.flow) = (b.outcome, b.diagnosis, b.flow);
        }
        out.push(a);
    }
    out.sort_by_key(|a| a.flow);
    out
}

/// One join: its conversations (one at least) and the signaling `(i,
/// signals)` that named them. The conversation that got furthest gives
/// the outcome; the steps of all are merged in time order; the SDPs name
/// the unreachable candidates and check the certificates' fingerprints.
fn join(group: &[&Timeline], signal: Option<(usize, &[&Signals])>, used: &mut [bool]) -> Attempt {
    let attempts: Vec<Attempt> = group.iter().map(|t| t.attempt()).collect();
    let rank = |a: &Attempt| PROGRESS.iter().position(|o| *o == a.outcome);
    // The furthest; of equals, the first.
    let best = (0..attempts.len())
        .rev()
        .max_by_key(|&i| rank(&attempts[i]))
        .unwrap_or(0);
    let primary = group[best];
    let mut a = attempts[best].clone();
    let mut steps: Vec<Step> = attempts.iter().flat_map(|x| x.steps.clone()).collect();
    steps.sort_by_key(|s| s.ts);
    (a.start, a.end) = (
        attempts.iter().map(|x| x.start).min().unwrap_or(a.start),
        attempts.iter().map(|x| x.end).max().unwrap_or(a.end),
    );
    let Some((i, signals)) = signal else {
        (a.steps, a.steps_omitted) = (steps, attempts.iter().map(|x| x.steps_omitted).sum());
        a.steps.truncate(MAX_STEPS);
        return a;
    };
    let s = signals[i];
    used[i] = true;
    if a.outcome == "no_stun_answer" {
        let list: Vec<Unanswered> = group.iter().flat_map(|t| t.unanswered(a.client)).collect();
        a.diagnosis = unreachable_words(&list, &s.offer_candidates, &s.candidates)
            + &primary.integrity_words(a.client);
    }
    // Each certificate against its side's SDP (the client's: the offer's).
    let mismatch = primary.certificates.iter().find_map(|(from, got)| {
        let (who, side) = if Some(*from) == a.client {
            ("client", 0)
        } else {
            ("server", 1)
        };
        let want = s.fingerprints[side].as_ref()?;
        let sdp = ["offer", "answer"][side];
        (!want.eq_ignore_ascii_case(got)).then(|| {
            format!("the {who}'s DTLS certificate ({from}) has SHA-256 {got}, but the {sdp}'s a=fingerprint says {want}")
        })
    });
    if let Some(words) = mismatch {
        if a.outcome == "connected" {
            a.diagnosis = format!("{}; yet {words}", a.diagnosis);
        } else {
            a.outcome = "fingerprint_mismatch";
            a.diagnosis = format!("{words}: a WebRTC peer that checks it drops the connection after the DTLS handshake (the SDP was changed on its way, or names another certificate)");
        }
    }
    // An identity that does not sign its SDP's fingerprints: the other
    // side, refusing it, never checks a pair.
    for (side, sdp) in ["offer", "answer"].iter().enumerate() {
        if s.signed[side] != Some(false) {
            continue;
        }
        let words = format!("the {sdp}'s identity assertion does not verify over its a=fingerprint lines (its cpk did not sign them)");
        let (other, judge) = if side == 1 {
            ("client", a.client)
        } else {
            ("server", a.server)
        };
        let silent = group.iter().all(|t| t.checks_from(judge) == 0);
        if silent && !a.accepted && a.outcome != "fingerprint_mismatch" {
            a.outcome = "identity_unverified";
            a.diagnosis = format!(
                "{words}: the {other} refuses the {sdp} and never checks a candidate pair ({})",
                a.diagnosis
            );
        } else {
            a.diagnosis.push_str(&format!("; {words}"));
        }
    }
    let mut lead = s.steps.clone();
    // The same client's status request, just before.
    if let Some(j) = status_before(signals, i, used) {
        used[j] = true;
        lead.splice(0..0, signals[j].steps.iter().cloned());
        a.start = signals[j].start;
    } else {
        a.start = s.start;
    }
    lead.append(&mut steps);
    (a.steps, a.steps_omitted) = (lead, attempts.iter().map(|x| x.steps_omitted).sum());
    a.steps.truncate(MAX_STEPS);
    a
}

/// The status request (a connection of GETs alone) of signaling `i`'s
/// client to the same server, before it.
fn status_before(signals: &[&Signals], i: usize, used: &[bool]) -> Option<usize> {
    let s = signals[i];
    (0..signals.len()).rev().find(|&j| {
        j != i
            && !used[j]
            && signals[j].start <= s.start
            && signals[j].server == s.server
            && signals[j].client.map(|c| c.ip()) == s.client.map(|c| c.ip())
            && !signals[j].exchanges.is_empty()
            && signals[j].exchanges.iter().all(|x| x.0 == "GET")
    })
}

impl Signals {
    /// The signaling alone as a join that stopped there.
    fn attempt(&self) -> Attempt {
        let server = self.server.map_or("?".into(), |s| s.to_string());
        let failed = self.exchanges.iter().find(|x| {
            x.2.as_ref()
                .is_none_or(|(status, _)| !(200..300).contains(status))
        });
        let (outcome, diagnosis): (&'static str, String) = match failed {
            Some((m, t, Some((status, reason)))) if m == "GET" => (
                "no_nethernet_endpoint",
                format!("{m} {t} answered {status} {reason}: the server ({server}) has no NetherNet endpoint (a client falls back to RakNet)"),
            ),
            Some((m, t, Some((status, reason)))) => (
                "offer_refused",
                format!("{m} {t} answered {status} {reason}: the server ({server}) refused the offer"),
            ),
            Some((m, t, None)) => (
                "signaling_unanswered",
                format!("{m} {t} got no answer from the server ({server})"),
            ),
            None if self.exchanges.iter().any(offered) && self.signed[1] == Some(false) => (
                "identity_unverified",
                "the answer's identity assertion does not verify over its a=fingerprint lines (its cpk did not sign them): the client refuses the answer, and no STUN check followed".into(),
            ),
            None if self.exchanges.iter().any(offered) => (
                "no_ice",
                format!(
                    "the answer came, but no STUN check followed between the candidates it named ({}) and the client",
                    self.candidates.join(", ")
                ),
            ),
            None if self.steps.iter().any(|s| s.step == "lan_response") => (
                "status_only",
                format!("the world ({server}) answered the LAN discovery request; no offer followed"),
            ),
            None if self.steps.iter().any(|s| s.step == "lan_request") => (
                "signaling_unanswered",
                "no world answered the LAN discovery request".into(),
            ),
            None => (
                "status_only",
                format!("the server ({server}) answered the status request; no offer followed"),
            ),
        };
        let mut a = Attempt::default();
        (a.flow, a.number, a.client, a.server) = (self.id, 1, self.client, self.server);
        (a.start, a.end, a.steps) = (self.start, self.end, self.steps.clone());
        (a.outcome, a.diagnosis, a.nethernet) = (outcome, diagnosis, true);
        a
    }
}
