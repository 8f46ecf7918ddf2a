//! ICE as a NetherNet peer runs it (RFC 8445), sans-IO: one local socket,
//! host candidates only (the game's peers use no STUN or TURN server),
//! full ICE on both sides with every candidate in the SDP.
//!
//! The offerer (the client) is controlling: it sends a Binding request to
//! each remote candidate with USE-CANDIDATE (aggressive nomination), and
//! the first that succeeds is the pair. The answerer (the server) is
//! controlled: it answers every check whose USERNAME and MESSAGE-INTEGRITY
//! are right, checks back (a triggered check), and takes the pair the
//! controlling side nominates. Both answer checks for as long as the
//! session lasts (the other side's consent checks, RFC 7675). Checks are
//! sent every [`CHECK_EVERY`] until the pair is chosen, for at most
//! [`GIVE_UP`]; a 401 or 400 answer, or no answer, is reported.
//!
//! Fed `(now, from, bytes)` for each STUN datagram and polled for what to
//! send and when to be woken; no socket, no clock inside.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use super::stun::{attr, Builder, Class, Message};

/// Between two rounds of checks while no pair is chosen.
pub const CHECK_EVERY: Duration = Duration::from_millis(50);
/// Consent checks on the chosen pair (RFC 7675: about every 5 s).
pub const CONSENT_EVERY: Duration = Duration::from_secs(5);
/// No pair by then: ICE failed.
pub const GIVE_UP: Duration = Duration::from_secs(10);
/// No answer to a check on the chosen pair for this long: the other side
/// is gone (RFC 7675's consent, 30 s).
pub const CONSENT_LOST: Duration = Duration::from_secs(30);
/// Remote candidates kept at most.
pub const MAX_REMOTE: usize = 16;
/// Datagrams waiting to be sent at most (answers beyond are dropped, as
/// a lost datagram would be: the peer checks again).
pub const MAX_QUEUED: usize = 64;

/// A fresh ufrag or password of `n` characters (at most 32; RFC 8839
/// §5.4: letters, digits, `+`, `/`), from the operating system's
/// randomness.
pub fn random_credential(n: usize) -> Result<String, crate::random::RandomError> {
    const SET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = crate::random::bytes::<32>()?;
    Ok(bytes[..n.min(32)]
        .iter()
        .map(|b| char::from(SET[usize::from(b & 63)]))
        .collect())
}

/// The credentials of both sides, from the SDPs.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// Ours (`a=ice-ufrag`, `a=ice-pwd` of our SDP).
    pub local_ufrag: String,
    /// The key of MESSAGE-INTEGRITY on checks sent to us.
    pub local_pwd: String,
    /// The other side's.
    pub remote_ufrag: String,
    /// The key of MESSAGE-INTEGRITY on our checks.
    pub remote_pwd: String,
}

/// Where ICE stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IceState {
    /// Checking the candidates.
    Checking,
    /// The pair chosen: the remote address everything else goes to.
    Connected(SocketAddr),
    /// No pair within [`GIVE_UP`], and why.
    Failed(String),
}

/// One remote candidate and our checks to it.
#[derive(Debug, Clone)]
struct Remote {
    addr: SocketAddr,
    /// The transaction of our last check, and when it went.
    pending: Option<([u8; 12], Duration)>,
    /// A check of ours to it succeeded.
    succeeded: bool,
    /// What its last error answer said.
    error: Option<(u16, String)>,
}

/// An ICE agent; see the module.
pub struct Agent {
    controlling: bool,
    tie_breaker: u64,
    creds: Credentials,
    remotes: Vec<Remote>,
    state: IceState,
    /// When the next round of checks is due.
    next: Duration,
    started: Option<Duration>,
    /// When a check of ours last succeeded.
    answered_at: Duration,
    out: VecDeque<(SocketAddr, Vec<u8>)>,
    /// Transaction ids to come: each check takes one.
    ids: Box<dyn FnMut() -> [u8; 12] + Send>,
    /// Checks answered, ours answered, bad checks dropped.
    pub stats: IceStats,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("controlling", &self.controlling)
            .field("state", &self.state)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// What an agent counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IceStats {
    /// Checks sent.
    pub checks_sent: u64,
    /// The other side's checks answered with success.
    pub checks_answered: u64,
    /// Messages dropped: a wrong USERNAME or MESSAGE-INTEGRITY, not
    /// Binding, not for a check of ours.
    pub dropped: u64,
}

impl Agent {
    /// An agent with `creds`, controlling (the offerer) or not, checking
    /// `remotes` (the other SDP's candidates; more than [`MAX_REMOTE`] are
    /// left out). `tie_breaker` and the transaction ids come from the
    /// caller's randomness.
    pub fn new(
        controlling: bool,
        tie_breaker: u64,
        creds: Credentials,
        remotes: &[SocketAddr],
        ids: impl FnMut() -> [u8; 12] + Send + 'static,
    ) -> Agent {
        let remotes = remotes
            .iter()
            .take(MAX_REMOTE)
            .map(|&addr| Remote {
                addr,
                pending: None,
                succeeded: false,
                error: None,
            })
            .collect();
        Agent {
            controlling,
            tie_breaker,
            creds,
            remotes,
            state: IceState::Checking,
            next: Duration::ZERO,
            started: None,
            answered_at: Duration::ZERO,
            out: VecDeque::new(),
            ids: Box::new(ids),
            stats: IceStats::default(),
        }
    }

    /// Where ICE stands.
    pub fn state(&self) -> &IceState {
        &self.state
    }

    /// The chosen pair's remote address.
    pub fn selected(&self) -> Option<SocketAddr> {
        match self.state {
            IceState::Connected(a) => Some(a),
            _ => None,
        }
    }

    fn queue(&mut self, to: SocketAddr, bytes: Vec<u8>) {
        if self.out.len() < MAX_QUEUED {
            self.out.push_back((to, bytes));
        }
    }

    /// A check to `i`: USERNAME `remote:local`, PRIORITY, the role, and
    /// USE-CANDIDATE from the controlling side.
    fn check(&mut self, i: usize, now: Duration) {
        let id = (self.ids)();
        let user = format!("{}:{}", self.creds.remote_ufrag, self.creds.local_ufrag);
        // A peer-reflexive candidate's priority (RFC 8445 §7.1.1).
        let priority = (110u32 << 24) | (65535 << 8) | 255;
        let role = match self.controlling {
            true => attr::ICE_CONTROLLING,
            false => attr::ICE_CONTROLLED,
        };
        let mut b = Builder::binding(Class::Request, id)
            .attr(attr::USERNAME, user.as_bytes())
            .attr(attr::PRIORITY, &priority.to_be_bytes())
            .attr(role, &self.tie_breaker.to_be_bytes());
        if self.controlling {
            b = b.attr(attr::USE_CANDIDATE, &[]);
        }
        let bytes = b.finish(Some(self.creds.remote_pwd.as_bytes()), true);
        let r = &mut self.remotes[i];
        r.pending = Some((id, now));
        let to = r.addr;
        self.stats.checks_sent += 1;
        self.queue(to, bytes);
    }

    /// A STUN datagram from `from`.
    pub fn handle(&mut self, now: Duration, from: SocketAddr, bytes: &[u8]) {
        let Ok(m) = Message::parse(bytes) else {
            self.stats.dropped += 1;
            return;
        };
        if m.method != 1 {
            self.stats.dropped += 1;
            return;
        }
        match m.class {
            Class::Request => self.answer(now, from, &m),
            Class::Success | Class::Error => self.answered(now, from, &m),
            Class::Indication => {}
        }
    }

    /// The other side's check: answered when its USERNAME is ours and its
    /// MESSAGE-INTEGRITY verifies with our password (else 400 or 401, as
    /// RFC 8489 §9.1.3 says).
    fn answer(&mut self, now: Duration, from: SocketAddr, m: &Message<'_>) {
        let want = format!("{}:", self.creds.local_ufrag);
        let user_ok = m.username().is_some_and(|u| u.starts_with(&want));
        let integrity = m.integrity(self.creds.local_pwd.as_bytes());
        let error = match (user_ok, integrity) {
            (_, None) => Some((400, "Bad Request")),
            (false, _) | (_, Some(false)) => Some((401, "Unauthorized")),
            (true, Some(true)) => None,
        };
        if let Some((code, reason)) = error {
            self.stats.dropped += 1;
            let e = Builder::binding(Class::Error, m.transaction)
                .error_code(code, reason)
                .finish(None, true);
            self.queue(from, e);
            return;
        }
        let ok = Builder::binding(Class::Success, m.transaction)
            .xor_mapped_address(from)
            .finish(Some(self.creds.local_pwd.as_bytes()), true);
        self.stats.checks_answered += 1;
        self.queue(from, ok);
        // A candidate we did not know (peer-reflexive): checked too.
        let i = match self.remotes.iter().position(|r| r.addr == from) {
            Some(i) => i,
            None if self.remotes.len() < MAX_REMOTE => {
                self.remotes.push(Remote {
                    addr: from,
                    pending: None,
                    succeeded: false,
                    error: None,
                });
                self.remotes.len() - 1
            }
            None => return,
        };
        if self.state == IceState::Checking {
            if !self.controlling && m.use_candidate() {
                self.state = IceState::Connected(from);
            }
            // A triggered check, unless one is out.
            if self.remotes[i].pending.is_none() && !self.remotes[i].succeeded {
                self.check(i, now);
            }
        }
    }

    /// An answer to a check of ours.
    fn answered(&mut self, now: Duration, from: SocketAddr, m: &Message<'_>) {
        let Some(i) = self
            .remotes
            .iter()
            .position(|r| r.pending.is_some_and(|(id, _)| id == m.transaction))
        else {
            self.stats.dropped += 1;
            return;
        };
        if m.class == Class::Success
            && m.integrity(self.creds.remote_pwd.as_bytes()) == Some(true)
            && from == self.remotes[i].addr
        {
            self.answered_at = now;
            let r = &mut self.remotes[i];
            r.pending = None;
            r.succeeded = true;
            if self.controlling && self.state == IceState::Checking {
                self.state = IceState::Connected(from);
            }
            return;
        }
        let r = &mut self.remotes[i];
        r.pending = None;
        r.error = Some(match m.error_code() {
            Some((code, reason)) => (code, reason.to_string()),
            None => (
                0,
                "an answer whose MESSAGE-INTEGRITY does not verify".into(),
            ),
        });
    }

    /// What is due by `now`: checks, and giving up.
    pub fn handle_timeout(&mut self, now: Duration) {
        let started = *self.started.get_or_insert(now);
        if self.state == IceState::Checking && now.saturating_sub(started) >= GIVE_UP {
            let why = self
                .remotes
                .iter()
                .find_map(|r| r.error.clone())
                .map_or_else(
                    || format!("no check answered in {} s", GIVE_UP.as_secs()),
                    |(code, reason)| format!("checks answered {code} {reason}"),
                );
            self.state = IceState::Failed(why);
        }
        if now < self.next {
            return;
        }
        match &self.state {
            IceState::Checking => {
                for i in 0..self.remotes.len() {
                    if !self.remotes[i].succeeded || self.controlling {
                        self.check(i, now);
                    }
                }
                self.next = now + CHECK_EVERY;
            }
            IceState::Connected(a) => {
                let a = *a;
                let last = self.answered_at.max(started);
                if now.saturating_sub(last) >= CONSENT_LOST {
                    let why = format!(
                        "no answer to a consent check for {} s",
                        CONSENT_LOST.as_secs()
                    );
                    self.state = IceState::Failed(why);
                    return;
                }
                if let Some(i) = self.remotes.iter().position(|r| r.addr == a) {
                    self.check(i, now);
                }
                self.next = now + CONSENT_EVERY;
            }
            IceState::Failed(_) => self.next = Duration::MAX,
        }
    }

    /// The next datagram to send, and where.
    pub fn poll_transmit(&mut self) -> Option<(SocketAddr, Vec<u8>)> {
        self.out.pop_front()
    }

    /// When [`Agent::handle_timeout`] is next due.
    pub fn timeout(&self) -> Option<Duration> {
        match self.state {
            IceState::Failed(_) => None,
            _ => Some(self.next),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(seed: u8) -> impl FnMut() -> [u8; 12] + Send {
        let mut n = 0u8;
        move || {
            n = n.wrapping_add(1);
            [seed, n, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        }
    }

    fn pair(pwd_seen_by_client: &str) -> (Agent, Agent, SocketAddr, SocketAddr) {
        let (c, s): (SocketAddr, SocketAddr) = (
            "127.0.0.1:1000".parse().unwrap(),
            "127.0.0.1:2000".parse().unwrap(),
        );
        let client = Agent::new(
            true,
            1,
            Credentials {
                local_ufrag: "cufr".into(),
                local_pwd: "client-password-22chars".into(),
                remote_ufrag: "sufr".into(),
                remote_pwd: pwd_seen_by_client.into(),
            },
            &[s],
            ids(1),
        );
        let server = Agent::new(
            false,
            2,
            Credentials {
                local_ufrag: "sufr".into(),
                local_pwd: "server-password-22chars".into(),
                remote_ufrag: "cufr".into(),
                remote_pwd: "client-password-22chars".into(),
            },
            &[c],
            ids(2),
        );
        (client, server, c, s)
    }

    /// Runs both until `until`, every datagram delivered; the datagrams.
    fn run(
        client: &mut Agent,
        server: &mut Agent,
        c: SocketAddr,
        s: SocketAddr,
        until: Duration,
    ) -> usize {
        let mut now = Duration::ZERO;
        let mut n = 0;
        while now < until {
            client.handle_timeout(now);
            server.handle_timeout(now);
            loop {
                let mut any = false;
                while let Some((to, b)) = client.poll_transmit() {
                    assert_eq!(to, s);
                    server.handle(now, c, &b);
                    (any, n) = (true, n + 1);
                }
                while let Some((to, b)) = server.poll_transmit() {
                    assert_eq!(to, c);
                    client.handle(now, s, &b);
                    (any, n) = (true, n + 1);
                }
                if !any {
                    break;
                }
            }
            now += Duration::from_millis(10);
        }
        n
    }

    #[test]
    fn the_controlling_side_nominates_and_both_agree() {
        let (mut client, mut server, c, s) = pair("server-password-22chars");
        run(&mut client, &mut server, c, s, Duration::from_millis(20));
        assert_eq!(client.state(), &IceState::Connected(s));
        assert_eq!(server.state(), &IceState::Connected(c));
        assert!(client.stats.checks_answered >= 1 && server.stats.checks_answered >= 1);
        // Consent checks go on, answered.
        let before = server.stats.checks_answered;
        run(&mut client, &mut server, c, s, Duration::from_secs(11));
        assert!(server.stats.checks_answered > before);
        assert_eq!(client.state(), &IceState::Connected(s));
    }

    /// A side that stops answering is gone after [`CONSENT_LOST`].
    #[test]
    fn consent_is_lost_when_checks_go_unanswered() {
        let (mut client, mut server, c, s) = pair("server-password-22chars");
        run(&mut client, &mut server, c, s, Duration::from_millis(20));
        assert_eq!(client.state(), &IceState::Connected(s));
        let mut now = Duration::from_millis(20);
        while now < CONSENT_LOST + Duration::from_secs(1) {
            client.handle_timeout(now);
            while client.poll_transmit().is_some() {}
            now += Duration::from_millis(500);
        }
        assert_eq!(
            client.state(),
            &IceState::Failed("no answer to a consent check for 30 s".into())
        );
    }

    #[test]
    fn a_wrong_password_is_refused_and_said() {
        let (mut client, mut server, c, s) = pair("not-the-servers-password");
        run(
            &mut client,
            &mut server,
            c,
            s,
            GIVE_UP + Duration::from_millis(20),
        );
        assert_eq!(
            client.state(),
            &IceState::Failed("checks answered 401 Unauthorized".into())
        );
        // The server never had a check it could answer, nor one to send.
        assert_eq!(
            server.state(),
            &IceState::Failed("no check answered in 10 s".into())
        );
        assert!(server.stats.dropped > 0);
    }

    #[test]
    fn garbage_and_strangers_are_dropped() {
        let (mut client, _, _, s) = pair("server-password-22chars");
        client.handle(Duration::ZERO, s, b"not stun at all");
        let unasked = Builder::binding(Class::Success, [9; 12]).finish(None, true);
        client.handle(Duration::ZERO, s, &unasked);
        assert_eq!(client.stats.dropped, 2);
        assert_eq!(client.state(), &IceState::Checking);
    }
}
