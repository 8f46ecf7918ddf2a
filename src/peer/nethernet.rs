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
    rtc: Rtc,
    epoch: Instant,
    reliable: Reassembler,
    /// Batches delivered and not yet handed on (by `pump`).
    inbox: std::collections::VecDeque<Vec<u8>>,
    ended: Option<String>,
    key_log: Option<std::path::PathBuf>,
    key_logged: bool,
}

/// The local address a socket for `target` binds: the interface the
/// system routes to `target` from, any port (so that on loopback the only
/// candidate is loopback).
fn local_for(target: SocketAddr) -> io::Result<SocketAddr> {
    let probe = std::net::UdpSocket::bind(super::wildcard_for(target))?;
    probe.connect(target)?;
    Ok(SocketAddr::new(probe.local_addr()?.ip(), 0))
}

impl NetherNetLink {
    /// Join the NetherNet server whose signaling is on TCP `target`: the
    /// offer (our candidate on the interface toward it, an offline
    /// identity for `name`) posted, the answer applied, ICE, DTLS and SCTP
    /// run, NetherNet's two channels opened, within `timeout`. The DTLS
    /// key-log line goes to `tls_key_log` when given.
    pub(crate) fn join(
        target: SocketAddr,
        name: &str,
        timeout: Duration,
        (tls_key_log, identity_file): (Option<std::path::PathBuf>, Option<&std::path::Path>),
        on_step: &mut dyn FnMut(&'static str, String),
    ) -> Result<(NetherNetLink, Joined), JoinError> {
        use crate::nethernet::{dcep::Open, ice::Credentials, identity, sdp};
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
        let path = format!("{JOIN_PATH}/{network_id}");
        let start = Instant::now();
        let answer = exchange(
            target,
            "POST",
            &path,
            Some("application/sdp"),
            offer.write().as_bytes(),
            timeout,
        )?;
        if !(200..300).contains(&answer.status) {
            return Err(JoinError::Refused {
                path,
                status: answer.status,
                reason: answer.reason,
            });
        }
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
                "POST {path}: HTTP {}, a=setup:{}, {} candidate(s); the server's identity: {server_identity}",
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
        let remotes: Vec<SocketAddr> = theirs
            .candidates
            .iter()
            .filter(|c| c.transport == "udp" && c.address.is_ipv4() == local.is_ipv4())
            .map(|c| c.address)
            .collect();
        if remotes.is_empty() {
            return Err(JoinError::Answer(
                "no UDP candidate of our address family".into(),
            ));
        }
        let cfg = RtcConfig {
            controlling: true,
            dtls_client,
            ice: Credentials {
                local_ufrag: ufrag,
                local_pwd: pwd,
                remote_ufrag: need(theirs.ice_ufrag.clone(), "a=ice-ufrag")?,
                remote_pwd: need(theirs.ice_pwd.clone(), "a=ice-pwd")?,
            },
            remotes,
            remote_fingerprint,
            cert,
            open: vec![Open::reliable(), Open::unreliable()],
        };
        let tie = u64::from_le_bytes(crate::random::bytes::<8>()?);
        let ids = || crate::random::bytes::<12>().unwrap_or_default();
        let rtc = Rtc::new(cfg, Instant::now(), tie, ids)
            .map_err(|e| JoinError::Transport(e.to_string()))?;
        let mut link = NetherNetLink {
            sock,
            rtc,
            epoch: start,
            reliable: Reassembler::new(crate::nethernet::framing::DEFAULT_LIMIT),
            inbox: Default::default(),
            ended: None,
            key_log: tls_key_log,
            key_logged: false,
        };
        let deadline = start + timeout;
        let mut open = 0;
        let mut remote = None;
        while open < 2 {
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
                    RtcEvent::ChannelOpen { .. } => open += 1,
                    RtcEvent::IceConnected(a) => remote = Some(a),
                    RtcEvent::Failed(why) | RtcEvent::Closed(why) => {
                        return Err(JoinError::Transport(why))
                    }
                    _ => {}
                }
            }
        }
        let joined = Joined {
            network_id,
            remote: remote.unwrap_or(target),
            dtls_client,
            took: start.elapsed(),
            server_identity,
        };
        Ok((link, joined))
    }

    /// Send what the transport has queued, wait for a datagram or a timer
    /// up to `until`, feed what came; the events. Messages on the reliable
    /// channel are reassembled into `inbox`; those on the unreliable
    /// channel (one segment each) go there too.
    fn step(&mut self, until: Instant) -> io::Result<Vec<RtcEvent>> {
        let mut events = Vec::new();
        self.flush()?;
        let wake = self.rtc.poll_timeout().map_or(until, |t| t.min(until));
        let wait = wake.saturating_duration_since(Instant::now());
        self.sock.wait(self.sock.now() + wait)?;
        let now = Instant::now();
        while let Some((from, n)) = self.sock.recv()? {
            self.rtc.handle_datagram(now, from, &self.sock.rbuf[..n]);
        }
        if self.rtc.poll_timeout().is_some_and(|t| t <= now) {
            self.rtc.handle_timeout(now);
        }
        self.flush()?;
        while let Some(e) = self.rtc.poll_event() {
            if let RtcEvent::Message { label, data } = &e {
                if label == crate::nethernet::dcep::RELIABLE_LABEL {
                    if let Step::Whole(b) = self.reliable.push(data) {
                        self.inbox.push_back(b);
                    }
                } else if let Some((0, rest)) = data.split_first() {
                    self.inbox.push_back(rest.to_vec());
                }
                continue;
            }
            events.push(e);
        }
        self.write_key_log();
        Ok(events)
    }

    /// Every datagram the transport queued, sent.
    fn flush(&mut self) -> io::Result<()> {
        while let Some((to, d)) = self.rtc.poll_transmit() {
            self.sock.send_to(to, &d)?;
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
        self.flush()
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
            for e in self.step(until)? {
                if let RtcEvent::Closed(why) | RtcEvent::Failed(why) = e {
                    self.ended = Some(why);
                }
            }
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
        self.flush()?;
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
    use crate::records::peer::{FailedJson, JoinedJson, PeerRecord};
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
    report.record(PeerRecord::Joined(JoinedJson {
        kind: "joined",
        transport: "nethernet",
        peer: target.to_string(),
        network_id: joined.network_id,
        remote: joined.remote.to_string(),
        dtls_role: if joined.dtls_client {
            "client"
        } else {
            "server"
        },
        join_ms: crate::records::peer::ms(joined.took),
        server_identity: joined.server_identity,
    }))?;
    Ok(Some(link))
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
