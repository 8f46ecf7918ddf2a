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
    /// Binding requests and success responses sent by the first sender,
    /// then by the other side.
    requests: [u32; 2],
    answers: [u32; 2],
    errors: u32,
    client_hello: bool,
    server_hello: bool,
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
                    ..
                } => match class {
                    stun::Class::Request => {
                        self.requests[side] += 1;
                        if let Some(u) = username
                            .as_ref()
                            .filter(|u| self.usernames.len() < 4 && !self.usernames.contains(u))
                        {
                            self.usernames.push(u.clone());
                        }
                        let what = match username {
                            Some(u) => format!(
                                "user {u}{}",
                                if *use_candidate {
                                    ", nominating the pair"
                                } else {
                                    ""
                                }
                            ),
                            None => String::new(),
                        };
                        self.step("stun_request", dir, frame, ts, what);
                    }
                    stun::Class::Success => {
                        self.answers[side] += 1;
                        self.step("stun_response", dir, frame, ts, String::new());
                    }
                    stun::Class::Error => {
                        self.errors += 1;
                        self.step("stun_error", dir, frame, ts, String::new());
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
                Event::Negotiated { suite, .. } => {
                    let name = dtls::suite_name(*suite).unwrap_or("an unknown suite");
                    self.step("suite", dir, frame, ts, name.to_string());
                }
                Event::Certificate { fingerprint, .. } => {
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

    /// The join as an attempt: its steps, outcome and diagnosis.
    pub(crate) fn attempt(&self) -> Attempt {
        let client = self.client.or(self.first_sender);
        let server = if client == self.first_sender {
            self.other
        } else {
            self.first_sender
        };
        let name = |a: Option<SocketAddr>| a.map_or("?".to_string(), |a| a.to_string());
        let (outcome, diagnosis): (&'static str, String) = if let Some((from, alert)) = self.fatal {
            let who = if Some(from) == client {
                "client"
            } else {
                "server"
            };
            let what = match alert {
                Some(d) => format!("a fatal DTLS alert, {}", dtls::alert_name(d)),
                None => "a sealed DTLS alert".to_string(),
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
        } else if self.requests.iter().sum::<u32>() > 0 && self.answers.iter().sum::<u32>() == 0 {
            let (a, b) = (name(self.first_sender), name(self.other));
            (
                "no_stun_answer",
                format!(
                    "{} STUN binding requests between {a} and {b}, none answered: the candidate pair is unreachable (a firewall, NAT, or an address in the SDP that is not the peer's)",
                    self.requests.iter().sum::<u32>()
                ),
            )
        } else if self.errors > 0 && self.answers.iter().sum::<u32>() == 0 {
            ("stun_error", "every STUN check was answered with an error (wrong ICE credentials: the SDP's ice-ufrag and ice-pwd)".into())
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

/// A request's method and target, and its answer's status and reason.
type Exchange = (String, String, Option<(u16, String)>);

/// One signaling connection's steps: the status request and its answer,
/// the offer and its answer.
#[derive(Debug, Default)]
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
            if let Some(u) = &h.ice_ufrag {
                if self.ufrags.len() < 4 {
                    self.ufrags.push(u.clone());
                }
            }
            let (step, detail) = match (&h.method, &h.target, h.status) {
                (Some(m), Some(t), _) => {
                    if self.exchanges.len() < 16 {
                        self.exchanges.push((m.clone(), t.clone(), None));
                    }
                    self.asked = Some((m.clone(), t.clone()));
                    let step = if m == "GET" {
                        "join_status_request"
                    } else {
                        "offer"
                    };
                    (step, format!("{m} {t}"))
                }
                (_, _, Some(status)) => {
                    let reason = h.reason.clone().unwrap_or_default();
                    if let Some(x) = self.exchanges.iter_mut().rev().find(|x| x.2.is_none()) {
                        x.2 = Some((status, reason.clone()));
                    }
                    let asked = self.asked.take();
                    let step = match asked.as_ref().map(|(m, _)| m.as_str()) {
                        Some("GET") => "join_status",
                        _ => {
                            self.candidates = h.candidates.clone();
                            "answer"
                        }
                    };
                    (step, format!("{status} {reason}"))
                }
                _ => continue,
            };
            if self.steps.len() < MAX_STEPS {
                self.steps.push(Step {
                    ts,
                    frame,
                    dir: Some(dir),
                    step,
                    detail,
                });
            }
        }
    }
}

/// The joins of a capture: each ICE conversation with the signaling that
/// named its ICE credentials (and the status request of the same client
/// before it) in one timeline; the signaling that led to no conversation
/// as a join of its own, which stopped there, said why.
pub(crate) fn joins(timelines: &[&Timeline], signals: &[&Signals]) -> Vec<Attempt> {
    let mut used = vec![false; signals.len()];
    let mut out = Vec::new();
    for t in timelines {
        let mut a = t.attempt();
        // The offer/answer whose ufrags the checks' USERNAMEs carry.
        let offer = signals.iter().position(|s| {
            !s.ufrags.is_empty()
                && s.ufrags
                    .iter()
                    .all(|u| t.usernames.iter().any(|n| n.contains(u.as_str())))
        });
        if let Some(i) = offer {
            used[i] = true;
            let mut steps = signals[i].steps.clone();
            // The same client's status request, just before.
            if let Some(j) = status_before(signals, i, &used) {
                used[j] = true;
                steps.splice(0..0, signals[j].steps.iter().cloned());
                a.start = signals[j].start;
            } else {
                a.start = signals[i].start;
            }
            steps.append(&mut a.steps);
            a.steps = steps;
            a.steps.truncate(MAX_STEPS);
        }
        out.push(a);
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
                && signals[j].exchanges.iter().any(|x| x.0 == "POST")
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
            None if self.exchanges.iter().any(|x| x.0 == "POST") => (
                "no_ice",
                format!(
                    "the answer came, but no STUN check followed between the candidates it named ({}) and the client",
                    self.candidates.join(", ")
                ),
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
