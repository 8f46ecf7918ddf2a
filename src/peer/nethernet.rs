//! `connect --bedrock` over NetherNet: the join (the offer posted to the
//! server's signaling, the answer applied, ICE, DTLS and SCTP run on one
//! UDP socket by [`crate::nethernet::rtc`], NetherNet's two channels
//! opened), then the same game client as over RakNet
//! (`peer::bedrock::play`), its batches carried by the reliable
//! channel in NetherNet's segments.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::signaling::{exchange, SignalingError, JOIN_PATH};
use crate::capture::write::Recorder;
use crate::nethernet::cert::Cert;
use crate::nethernet::framing::{Reassembler, Step};
use crate::nethernet::rtc::{Rtc, RtcConfig, RtcEvent};

/// The largest NetherNet segment: a data channel message, the framing
/// byte included.
const SEGMENT: usize = crate::nethernet::rtc::MAX_MESSAGE_SIZE;

/// Why a NetherNet join did not get to its channels.
#[derive(Debug, thiserror::Error)]
pub(crate) enum JoinError {
    #[error("{0}")]
    Signaling(#[from] SignalingError),
    #[error("POST {path}: HTTP {status} {reason}: the server refused the offer")]
    Refused {
        path: String,
        status: u16,
        reason: String,
    },
    #[error("the answer is not SDP we can use: {0}")]
    Answer(String),
    #[error("{0}")]
    Transport(String),
    #[error("no open channels within {0:?} (ICE, DTLS or SCTP did not finish)")]
    Timeout(Duration),
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl From<crate::random::RandomError> for JoinError {
    fn from(e: crate::random::RandomError) -> Self {
        JoinError::Io(e.into())
    }
}

impl JoinError {
    /// The step that failed, in words for the records.
    pub(crate) fn step(&self) -> &'static str {
        match self {
            JoinError::Signaling(e) => e.step(),
            JoinError::Refused { .. } => "offer_refused",
            JoinError::Answer(_) => "bad_answer",
            JoinError::Transport(_) => "transport",
            JoinError::Timeout(_) => "timeout",
            JoinError::Io(_) => "io_error",
        }
    }
}

/// What a join found out, for its record.
#[derive(Debug, Clone)]
pub(crate) struct Joined {
    pub(crate) network_id: String,
    /// The other side's address ICE chose.
    pub(crate) remote: SocketAddr,
    /// We sent the ClientHello.
    pub(crate) dtls_client: bool,
    /// From the offer sent to both channels open.
    pub(crate) took: Duration,
    /// The server's identity assertion, in words.
    pub(crate) server_identity: String,
}

/// A NetherNet client's connection: one UDP socket, the transport, the
/// reassembly of the reliable channel's segments.
pub(crate) struct NetherNetLink {
    sock: super::Socket,
    local: SocketAddr,
    rtc: Rtc,
    epoch: Instant,
    reliable: Reassembler,
    /// Batches delivered and not yet handed on (by `pump`).
    inbox: std::collections::VecDeque<Vec<u8>>,
    /// Channels opened.
    open: u8,
    ended: Option<String>,
    key_log: Option<std::path::PathBuf>,
    key_logged: bool,
    /// The DTLS key-log line is in the capture.
    key_recorded: bool,
}

/// The local address a socket for `target` binds: the interface the
/// system routes to `target` from, any port (so that on loopback the only
/// candidate is loopback).
fn local_for(target: SocketAddr) -> io::Result<SocketAddr> {
    let probe = std::net::UdpSocket::bind(super::wildcard_for(target))?;
    probe.connect(target)?;
    Ok(SocketAddr::new(probe.local_addr()?.ip(), 0))
}

/// A join's offer, made and not yet answered: the socket its candidate
/// names, the certificate its fingerprint names, the request to post.
pub(crate) struct Offer {
    sock: super::Socket,
    cert: Cert,
    ufrag: String,
    pwd: String,
    pub(crate) network_id: String,
    /// `POST` here, on the server's signaling port.
    pub(crate) path: String,
    /// The offer's SDP, with its identity assertion.
    pub(crate) sdp: String,
    start: Instant,
}

impl Offer {
    /// The offer of a join of the NetherNet server whose signaling is on
    /// TCP `target`: our candidate on the interface toward it, an offline
    /// identity for `name` (its key from `identity_file`, else a new one).
    pub(crate) fn new(
        target: SocketAddr,
        name: &str,
        identity_file: Option<&std::path::Path>,
    ) -> Result<Offer, JoinError> {
        use crate::nethernet::{identity, sdp};
        let sock = super::Socket::bind(local_for(target)?)?;
        let local = sock.local_addr()?;
        let cert = Cert::self_signed("raknet-dissect").map_err(io::Error::from)?;
        let (ufrag, pwd) = (
            crate::nethernet::ice::random_credential(4)?,
            crate::nethernet::ice::random_credential(22)?,
        );
        let network_id = (u64::from_le_bytes(crate::random::bytes::<8>()?) >> 1).to_string();
        let mut offer = sdp::Local {
            session: u64::from_le_bytes(crate::random::bytes::<8>()?) >> 2,
            ice_ufrag: ufrag.clone(),
            ice_pwd: pwd.clone(),
            fingerprint_sha256: cert.fingerprint(),
            setup: "actpass",
            candidates: vec![local],
            max_message_size: crate::nethernet::rtc::MAX_MESSAGE_SIZE as u64,
            identity: None,
        };
        // An offline stand-in for the auth service's GameServerToken,
        // marked as such, self-signed.
        let key = match identity_file {
            Some(p) => crate::bedrock::identity::KeyPair::load_or_create(p)?,
            None => crate::bedrock::identity::KeyPair::generate()?,
        };
        let now = crate::nethernet::identity::unix_now();
        let claims = serde_json::json!({
            "offline": true,
            "iss": "raknet-dissect OFFLINE (not Minecraft auth)",
            "xid": "0",
            "xname": name,
            "pfid": "OFFLINE0000000000",
            "perms": [],
            "iat": now,
            "exp": now + 3600,
        });
        let serde_json::Value::Object(claims) = claims else {
            unreachable!("an object")
        };
        let token = identity::self_signed_token(&key.secret, Default::default(), claims);
        let unsigned =
            sdp::Sdp::parse(&offer.write()).map_err(|e| JoinError::Answer(e.to_string()))?;
        offer.identity = Some(identity::attribute(
            &key.secret,
            &token,
            "offline.raknet-dissect.invalid",
            &unsigned,
        ));
        Ok(Offer {
            sock,
            cert,
            ufrag,
            pwd,
            path: format!("{JOIN_PATH}/{network_id}"),
            network_id,
            sdp: offer.write(),
            start: Instant::now(),
        })
    }

    /// Our side's address: the offer's candidate.
    pub(crate) fn local(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// The server's `answer` applied: the transport made (ICE, DTLS and
    /// SCTP start at once), the link that runs it, and what the answer
    /// said; the DTLS key-log line goes to `tls_key_log` when given.
    pub(crate) fn answered(
        self,
        answer: &super::signaling::Answer,
        tls_key_log: Option<std::path::PathBuf>,
        on_step: &mut dyn FnMut(&'static str, String),
    ) -> Result<(NetherNetLink, Joined), JoinError> {
        use crate::nethernet::{dcep::Open, ice::Credentials, identity, sdp};
        if !(200..300).contains(&answer.status) {
            return Err(JoinError::Refused {
                path: self.path,
                status: answer.status,
                reason: answer.reason.clone(),
            });
        }
        let local = self.sock.local_addr()?;
        let text = String::from_utf8_lossy(&answer.body);
        let theirs = sdp::Sdp::parse(&text).map_err(|e| JoinError::Answer(e.to_string()))?;
        let server_identity = identity::summary(&theirs);
        let need = |v: Option<String>, what: &str| {
            v.ok_or_else(|| JoinError::Answer(format!("the answer has no {what}")))
        };
        let remote_fingerprint = need(theirs.sha256().map(str::to_owned), "a=fingerprint:sha-256")?;
        on_step(
            "offer_answered",
            format!(
                "POST {}: HTTP {}, a=setup:{}, {} candidate(s); the server's identity: {server_identity}",
                self.path,
                answer.status,
                theirs.setup.as_deref().unwrap_or("-"),
                theirs.candidates.len()
            ),
        );
        let dtls_client = match need(theirs.setup.clone(), "a=setup")?.as_str() {
            "active" => false,
            "passive" => true,
            other => return Err(JoinError::Answer(format!("a=setup:{other} in an answer"))),
        };
        let remotes = theirs.udp_candidates(local.ip());
        let Some(&first) = remotes.first() else {
            return Err(JoinError::Answer(
                "no UDP candidate of our address family".into(),
            ));
        };
        let cfg = RtcConfig {
            controlling: true,
            dtls_client,
            ice: Credentials {
                local_ufrag: self.ufrag,
                local_pwd: self.pwd,
                remote_ufrag: need(theirs.ice_ufrag.clone(), "a=ice-ufrag")?,
                remote_pwd: need(theirs.ice_pwd.clone(), "a=ice-pwd")?,
            },
            remotes,
            remote_fingerprint,
            cert: self.cert,
            open: vec![Open::reliable(), Open::unreliable()],
        };
        let tie = u64::from_le_bytes(crate::random::bytes::<8>()?);
        let ids = || crate::random::bytes::<12>().unwrap_or_default();
        let rtc = Rtc::new(cfg, Instant::now(), tie, ids)
            .map_err(|e| JoinError::Transport(e.to_string()))?;
        let link = NetherNetLink {
            sock: self.sock,
            local,
            rtc,
            epoch: self.start,
            reliable: Reassembler::new(crate::nethernet::framing::DEFAULT_LIMIT),
            inbox: Default::default(),
            open: 0,
            ended: None,
            key_log: tls_key_log,
            key_logged: false,
            key_recorded: false,
        };
        let joined = Joined {
            network_id: self.network_id,
            remote: first,
            dtls_client,
            took: self.start.elapsed(),
            server_identity,
        };
        Ok((link, joined))
    }
}

impl NetherNetLink {
    /// Join the NetherNet server whose signaling is on TCP `target`: the
    /// offer ([`Offer::new`]) posted, the answer applied, ICE, DTLS and
    /// SCTP run, NetherNet's two channels opened, within `timeout`. The
    /// DTLS key-log line goes to `tls_key_log` when given.
    pub(crate) fn join(
        target: SocketAddr,
        name: &str,
        timeout: Duration,
        (tls_key_log, identity_file): (Option<std::path::PathBuf>, Option<&std::path::Path>),
        on_step: &mut dyn FnMut(&'static str, String),
    ) -> Result<(NetherNetLink, Joined), JoinError> {
        let offer = Offer::new(target, name, identity_file)?;
        let start = offer.start;
        let answer = exchange(
            target,
            "POST",
            &offer.path,
            Some("application/sdp"),
            offer.sdp.as_bytes(),
            timeout,
        )?;
        let (mut link, mut joined) = offer.answered(&answer, tls_key_log, on_step)?;
        let deadline = start + timeout;
        while link.open < 2 {
            if Instant::now() >= deadline {
                return Err(JoinError::Timeout(timeout));
            }
            for e in link.step(deadline.min(Instant::now() + Duration::from_millis(50)))? {
                match &e {
                    RtcEvent::ChannelOpen { label, stream } => {
                        on_step("channel_open", format!("{label} on stream {stream}"))
                    }
                    RtcEvent::IceConnected(a) => on_step("ice_connected", format!("the pair: {a}")),
                    RtcEvent::DtlsConnected { client } => on_step(
                        "dtls_connected",
                        format!(
                            "we are the DTLS {}",
                            if *client { "client" } else { "server" }
                        ),
                    ),
                    RtcEvent::SctpConnected => on_step("sctp_connected", String::new()),
                    _ => {}
                }
                match e {
                    RtcEvent::IceConnected(a) => joined.remote = a,
                    RtcEvent::Failed(why) | RtcEvent::Closed(why) => {
                        return Err(JoinError::Transport(why))
                    }
                    _ => {}
                }
            }
        }
        joined.took = start.elapsed();
        Ok((link, joined))
    }

    /// Whether NetherNet's two channels are open.
    pub(crate) fn is_open(&self) -> bool {
        self.open >= 2
    }

    /// Send what the transport has queued, wait for a datagram or a timer
    /// up to `until`, feed what came; the events ([`Self::turn`]).
    fn step(&mut self, until: Instant) -> io::Result<Vec<RtcEvent>> {
        self.flush(&mut None)?;
        let wake = self.rtc.poll_timeout().map_or(until, |t| t.min(until));
        let wait = wake.saturating_duration_since(Instant::now());
        self.sock.wait(self.sock.now() + wait)?;
        self.turn(&mut None)
    }

    /// Without waiting: what came fed to the transport, its timers run,
    /// what it queued sent; every datagram into `rec` too, after the DTLS
    /// key-log line once it is known (a Decryption Secrets Block before
    /// the first datagram it opens). The events; messages on the reliable
    /// channel are reassembled into the inbox ([`Self::take_batch`]), and
    /// those on the unreliable channel (one segment each) go there too.
    pub(crate) fn turn(&mut self, rec: &mut Option<Recorder>) -> io::Result<Vec<RtcEvent>> {
        let mut events = Vec::new();
        let now = Instant::now();
        while let Some((from, n)) = self.sock.recv()? {
            self.rtc.handle_datagram(now, from, &self.sock.rbuf[..n]);
            self.record_key(rec);
            if let Some(r) = rec {
                if r.record(from, self.local, &self.sock.rbuf[..n]).is_err() {
                    *rec = None;
                }
            }
        }
        if self.rtc.poll_timeout().is_some_and(|t| t <= now) {
            self.rtc.handle_timeout(now);
        }
        self.flush(rec)?;
        while let Some(e) = self.rtc.poll_event() {
            match &e {
                RtcEvent::Message { label, data } => {
                    if label == crate::nethernet::dcep::RELIABLE_LABEL {
                        if let Step::Whole(b) = self.reliable.push(data) {
                            self.inbox.push_back(b);
                        }
                    } else if let Some((0, rest)) = data.split_first() {
                        self.inbox.push_back(rest.to_vec());
                    }
                    continue;
                }
                RtcEvent::ChannelOpen { .. } => self.open += 1,
                RtcEvent::Closed(why) | RtcEvent::Failed(why) => {
                    self.ended.get_or_insert(why.clone());
                }
                _ => {}
            }
            events.push(e);
        }
        self.write_key_log();
        Ok(events)
    }

    /// A batch delivered and not yet taken.
    pub(crate) fn take_batch(&mut self) -> Option<Vec<u8>> {
        self.inbox.pop_front()
    }

    /// Why the connection ended, once it has.
    pub(crate) fn ended(&self) -> Option<&str> {
        self.ended.as_deref()
    }

    /// When the transport must next be woken.
    pub(crate) fn poll_timeout(&mut self) -> Option<Instant> {
        self.rtc.poll_timeout()
    }

    /// Its socket, for `poll`.
    pub(crate) fn fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.sock.sock.as_raw_fd()
    }

    /// The other side's address ICE chose, once it has.
    pub(crate) fn remote(&self) -> Option<SocketAddr> {
        self.rtc.remote()
    }

    /// Bytes queued toward the other side and not yet acknowledged.
    pub(crate) fn buffered(&self) -> usize {
        self.rtc.buffered()
    }

    /// A batch queued on the reliable channel, in NetherNet's segments
    /// (sent by the next [`Self::flush`]).
    pub(crate) fn queue_batch(&mut self, batch: &[u8]) -> io::Result<()> {
        let segments = crate::nethernet::framing::segments(batch, SEGMENT).ok_or_else(|| {
            io::Error::other(format!(
                "a batch of {} bytes is more than 256 segments",
                batch.len()
            ))
        })?;
        let now = Instant::now();
        for s in segments {
            self.rtc
                .send(now, crate::nethernet::dcep::RELIABLE_LABEL, &s)
                .map_err(io::Error::other)?;
        }
        Ok(())
    }

    /// The channels closed and the association shut down, at once (what
    /// goes out into `rec` too).
    pub(crate) fn close(&mut self, rec: &mut Option<Recorder>) -> io::Result<()> {
        self.rtc.close_channels(Instant::now());
        self.rtc.close(Instant::now());
        self.flush(rec)
    }

    /// The DTLS key-log line into `rec`, once it is known.
    fn record_key(&mut self, rec: &mut Option<Recorder>) {
        let Some(r) = rec else { return };
        if self.key_recorded {
            return;
        }
        if let Some(line) = self.rtc.key_log_line() {
            self.key_recorded = true;
            let kind = crate::capture::Secrets::TLS_KEY_LOG;
            if r.secrets(kind, format!("{line}\n").as_bytes()).is_err() {
                *rec = None;
            }
        }
    }

    /// Every datagram the transport queued, sent (and into `rec`).
    pub(crate) fn flush(&mut self, rec: &mut Option<Recorder>) -> io::Result<()> {
        self.record_key(rec);
        while let Some((to, d)) = self.rtc.poll_transmit() {
            self.sock.send_to(to, &d)?;
            if let Some(r) = rec {
                if r.record(self.local, to, &d).is_err() {
                    *rec = None;
                }
            }
        }
        Ok(())
    }

    /// The DTLS key-log line, once, to the key log.
    fn write_key_log(&mut self) {
        if self.key_logged {
            return;
        }
        let Some(path) = self.key_log.clone() else {
            return;
        };
        if let Some(line) = self.rtc.key_log_line() {
            self.key_logged = true;
            let _ = super::bedrock::append_key_log(&path, line);
        }
    }
}

impl super::bedrock::GameLink for NetherNetLink {
    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    fn send_batch(&mut self, batch: &[u8]) -> io::Result<()> {
        self.queue_batch(batch)?;
        self.flush(&mut None)
    }

    fn pump(
        &mut self,
        until: Duration,
        _report: &mut dyn super::run::Report,
        on_batch: &mut dyn FnMut(&[u8]),
    ) -> anyhow::Result<Option<String>> {
        let until = self.epoch + until;
        loop {
            // Batches handed on: back to the game, which may answer.
            let any = !self.inbox.is_empty();
            while let Some(b) = self.inbox.pop_front() {
                on_batch(&b);
            }
            if any || self.ended.is_some() || Instant::now() >= until {
                return Ok(self.ended.clone());
            }
            self.step(until)?;
        }
    }

    fn leave(&mut self, linger: bool, _report: &mut dyn super::run::Report) -> anyhow::Result<()> {
        let end = Instant::now() + Duration::from_millis(if linger { 500 } else { 0 });
        // What is queued goes out, then the channels close.
        while linger && self.rtc.buffered() > 0 && Instant::now() < end && self.ended.is_none() {
            self.step(end)?;
        }
        self.rtc.close_channels(Instant::now());
        while linger && !self.rtc.channels_closed() && Instant::now() < end && self.ended.is_none()
        {
            self.step(end)?;
        }
        self.rtc.close(Instant::now());
        self.flush(&mut None)?;
        Ok(())
    }
}

/// Join as [`NetherNetLink::join`] does, the join a `joined` record, or
/// its failure a `failed` one (`None`).
pub(crate) fn join_recorded(
    target: SocketAddr,
    name: &str,
    timeout: Duration,
    keys: (Option<std::path::PathBuf>, Option<&std::path::Path>),
    report: &mut dyn super::run::Report,
) -> anyhow::Result<Option<NetherNetLink>> {
    use crate::records::peer::{FailedJson, PeerRecord};
    let (link, joined) = match NetherNetLink::join(target, name, timeout, keys, &mut |_, _| {}) {
        Ok(j) => j,
        Err(e) => {
            report.record(PeerRecord::Failed(FailedJson {
                kind: "failed",
                target: target.to_string(),
                step: e.step(),
                error: e.to_string(),
            }))?;
            return Ok(None);
        }
    };
    report.record(joined_record(target, joined))?;
    Ok(Some(link))
}

/// The `joined` record of a join of `target`.
pub(crate) fn joined_record(target: SocketAddr, j: Joined) -> crate::records::peer::PeerRecord {
    use crate::records::peer::{JoinedJson, PeerRecord};
    PeerRecord::Joined(JoinedJson {
        kind: "joined",
        transport: "nethernet",
        peer: target.to_string(),
        network_id: j.network_id,
        remote: j.remote.to_string(),
        dtls_role: if j.dtls_client { "client" } else { "server" },
        join_ms: crate::records::peer::ms(j.took),
        server_identity: j.server_identity,
    })
}

/// The Login's server address over NetherNet: the signaling URL with the
/// port repeated, as the game writes it.
pub(crate) fn login_address(target: SocketAddr) -> String {
    let (ip, port) = (target.ip(), target.port());
    format!("http://{ip}:{port}:{port}")
}

/// `connect --bedrock` over NetherNet: join, then the game as over
/// RakNet ([`super::bedrock::play`]), the batches without their 0xFE and
/// unencrypted (the server goes on after the Login without a handshake).
pub(crate) fn connect_game(
    target: SocketAddr,
    plan: &super::bedrock::BedrockPlan,
    report: &mut dyn super::run::Report,
) -> anyhow::Result<super::run::Outcome> {
    let server = login_address(target);
    let mut game = crate::bedrock::client::GameClient::new(&plan.version, &plan.name, &server)
        .map_err(|e| anyhow::anyhow!(e))?;
    game.speaker.codec.set_nethernet();
    let timeout = Duration::from_secs(10).min(plan.duration.max(Duration::from_secs(1)));
    let keys = (plan.tls_keylog_out.clone(), plan.identity.as_deref());
    let Some(mut link) = join_recorded(target, &plan.name, timeout, keys, report)? else {
        return Ok(super::run::Outcome::NoConnection);
    };
    super::bedrock::play(&mut link, game, target, plan, report)
}

/// `probe --nethernet`: the join performed step by step, each step a
/// `step` record as it happens (the status, the offer answered, ICE, DTLS,
/// SCTP, each channel), then the channels closed and a `probe` record
/// with the outcome.
pub fn probe(
    target: SocketAddr,
    report: &mut dyn super::run::Report,
) -> anyhow::Result<super::run::Outcome> {
    use crate::records::peer::{ProbeJson, ProbeStepJson};
    let started = Instant::now();
    // Each step as it happens (a record that cannot be written is the
    // run's error, at the end).
    let mut failed = None;
    let mut step = |report: &mut dyn super::run::Report, step: &'static str, detail: String| {
        let r = report.record(crate::records::peer::PeerRecord::Step(ProbeStepJson {
            kind: "step",
            t: started.elapsed().as_secs_f64(),
            step,
            detail,
        }));
        if let Err(e) = r {
            failed.get_or_insert(e);
        }
    };
    let status = super::signaling::join_status(target, Duration::from_secs(2));
    let words = match &status {
        Ok(a) => format!(
            "HTTP {} {}: {}",
            a.status,
            a.reason,
            String::from_utf8_lossy(&a.body)
        ),
        Err(e) => e.to_string(),
    };
    step(report, "join_status", words);
    let joined = NetherNetLink::join(
        target,
        "raknet-dissect",
        Duration::from_secs(10),
        (None, None),
        &mut |name, detail| step(report, name, detail),
    );
    let (outcome, diagnosis, code) = match joined {
        Ok((mut link, j)) => {
            let _ = super::bedrock::GameLink::leave(&mut link, true, report);
            step(
                report,
                "closed",
                "the channels closed, SCTP shut down".into(),
            );
            let role = if j.dtls_client { "client" } else { "server" };
            let d = format!(
                "joined in {:.3} ms, we the DTLS {role}",
                crate::records::peer::ms(j.took)
            );
            ("joined", d, super::run::Outcome::Done)
        }
        Err(e) => (
            "failed",
            format!("{e} [{}]", e.step()),
            super::run::Outcome::NoConnection,
        ),
    };
    if let Some(e) = failed {
        return Err(e.into());
    }
    report.record(crate::records::peer::PeerRecord::Probe(ProbeJson {
        kind: "probe",
        target: target.to_string(),
        outcome,
        diagnosis,
        mtu: None,
        server_guid: None,
        seconds: started.elapsed().as_secs_f64(),
    }))?;
    Ok(code)
}

/// `probe` on the transport `--transport` names (`given`, or NetherNet
/// with `--nethernet`): NetherNet's join ([`probe`]), or RakNet's
/// handshake with `cfg` (`peer::run::probe`; also for `auto`).
pub fn probe_on(
    target: SocketAddr,
    (given, nethernet): (Option<super::run::Transport>, bool),
    cfg: crate::session::ClientConfig,
    report: &mut dyn super::run::Report,
) -> anyhow::Result<super::run::Outcome> {
    use super::run::Transport;
    match Transport::chosen(given, nethernet, Transport::RakNet) {
        super::run::Transport::NetherNet => probe(target, report),
        _ => Ok(super::run::probe(target, cfg, report)?),
    }
}

/// `connect --bedrock` on the transport `plan` names: RakNet, NetherNet,
/// or (auto) NetherNet when the server's status answers, as the game's
/// newer clients choose; the RakNet `protocol`, `addresses` and `mtu`
/// when given.
pub fn connect(
    target: SocketAddr,
    plan: super::bedrock::BedrockPlan,
    dialect: (Option<u8>, Option<usize>, Option<u16>),
    report: &mut dyn super::run::Report,
) -> anyhow::Result<super::run::Outcome> {
    use super::run::Transport;
    let nethernet = match plan.transport {
        Transport::RakNet => false,
        Transport::NetherNet => true,
        Transport::Auto => {
            let status = super::signaling::join_status(target, Duration::from_secs(2));
            let yes = status
                .as_ref()
                .is_ok_and(|a| (200..300).contains(&a.status));
            let words = match &status {
                Ok(a) => format!("HTTP {} {}", a.status, a.reason),
                Err(e) => e.to_string(),
            };
            let chose = if yes { "NetherNet" } else { "RakNet" };
            report.warn(&format!(
                "{target}: NetherNet status: {words}: joining over {chose}"
            ));
            yes
        }
    };
    match nethernet {
        true => connect_game(target, &plan, report),
        false => super::bedrock::connect_game(target, plan, dialect, report),
    }
}
