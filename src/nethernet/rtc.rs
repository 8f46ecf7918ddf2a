//! One NetherNet connection's transport as a peer of ours runs it,
//! sans-IO: ICE ([`super::ice`]), DTLS 1.2 (the `dimpl` crate), SCTP (the
//! `dcsctp` crate) and DCEP ([`super::dcep`]) on one UDP socket, the
//! datagrams told apart by their first byte (RFC 7983: 0-3 STUN, 20-63
//! DTLS). Fed datagrams and the time, it gives datagrams to send, the
//! next time it must be woken, and events: the channels opened, the
//! messages each delivered, the end.
//!
//! The side that sent the offer opens NetherNet's two channels once SCTP
//! is up (the DTLS client on even stream ids, the server on odd ones, RFC
//! 8832 §6); the other side takes the channels opened to it and
//! acknowledges them. The DTLS roles follow `a=setup`. The other side's
//! certificate must be the one its SDP names (SHA-256), or the connection
//! fails.
//!
//! The master secret for the NSS key log: dimpl has no key-log call, but
//! every TLS 1.2 PRF goes through its crypto provider's HMAC, and the
//! key expansion's first HMAC is keyed by the master secret over `"key
//! expansion" || server_random || client_random`. The provider given to
//! dimpl here notes those (at most [`MAX_NOTED`] at once, process-wide);
//! each connection takes the one of its own ClientHello's random.
//!
//! Two things the peers taught: aiortc reads one DTLS record per datagram
//! (the rest waits in OpenSSL until the next datagram), so every record
//! goes out in its own datagram; and dimpl's server must be woken once
//! before the first ClientHello is fed to it.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dcsctp::api::{
    DcSctpSocket, Message as SctpMessage, Options, PpId, SendOptions, SocketEvent, SocketTime,
    StreamId,
};
use dimpl::crypto::{CryptoProvider, HashAlgorithm, HmacProvider};
use dimpl::{Config, Dtls, DtlsCertificate, Output};

use super::cert::Cert;
use super::dcep::{self, Open};
use super::ice::{Agent, Credentials, IceState};

/// PPID of DCEP messages.
pub const PPID_DCEP: u32 = 50;
/// PPID of a binary message.
pub const PPID_BINARY: u32 = 53;
/// PPID of an empty binary message (sent as one zero byte).
pub const PPID_BINARY_EMPTY: u32 = 57;
/// The largest message either side takes (`a=max-message-size`).
pub const MAX_MESSAGE_SIZE: usize = 262_144;
/// Key-expansion secrets noted and not yet taken, at most.
pub const MAX_NOTED: usize = 256;
/// Events and datagrams waiting to be taken, at most each (beyond, the
/// connection fails: its driver is not keeping up).
pub const MAX_QUEUED: usize = 65_536;

/// What a connection reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RtcEvent {
    /// ICE chose the pair: the other side's address.
    IceConnected(SocketAddr),
    /// The DTLS handshake is done (we are its client, or its server).
    DtlsConnected {
        /// We sent the ClientHello.
        client: bool,
    },
    /// The SCTP association is up.
    SctpConnected,
    /// A channel is open both ways.
    ChannelOpen {
        /// Its label.
        label: String,
        /// Its SCTP stream.
        stream: u16,
    },
    /// A message a channel delivered.
    Message {
        /// The channel's label.
        label: String,
        /// The message.
        data: Vec<u8>,
    },
    /// A channel closed (its streams reset both ways).
    ChannelClosed {
        /// Its label.
        label: String,
    },
    /// The other side ended the association (SCTP ABORT or SHUTDOWN, DTLS
    /// close_notify).
    Closed(String),
    /// The connection failed, and why.
    Failed(String),
}

/// How a connection starts: from the two SDPs.
#[derive(Debug, Clone)]
pub struct RtcConfig {
    /// ICE's controlling side: the offerer.
    pub controlling: bool,
    /// We send the ClientHello (our SDP's `a=setup` is `active`, or the
    /// other's is `passive`).
    pub dtls_client: bool,
    /// Both sides' ICE credentials.
    pub ice: Credentials,
    /// The other side's candidates.
    pub remotes: Vec<SocketAddr>,
    /// The other side's certificate's SHA-256, as its SDP writes it
    /// (`AB:CD:...`).
    pub remote_fingerprint: String,
    /// Our certificate (its fingerprint is in our SDP).
    pub cert: Cert,
    /// The channels we open once SCTP is up (the offerer's two; none on
    /// the answerer's side).
    pub open: Vec<Open>,
}

/// One channel.
#[derive(Debug, Clone)]
struct Channel {
    open: Open,
    stream: u16,
    /// DATA_CHANNEL_ACK came (or we sent it).
    acked: bool,
    /// The stream was reset each way.
    reset_in: bool,
    reset_out: bool,
    closed: bool,
}

/// The key-expansion secrets noted: `(client random, master secret)`.
static NOTED: Mutex<VecDeque<([u8; 32], [u8; 48])>> = Mutex::new(VecDeque::new());

/// dimpl's HMAC, noting the master secret of each key expansion.
#[derive(Debug)]
struct NotingHmac;

static NOTING_HMAC: NotingHmac = NotingHmac;

const KEY_EXPANSION: &[u8] = b"key expansion";

impl HmacProvider for NotingHmac {
    fn hmac(
        &self,
        hash: HashAlgorithm,
        key: &[u8],
        data: &[u8],
        out: &mut [u8],
    ) -> Result<usize, dimpl::CryptoError> {
        if let (Ok(master), Some(rest)) =
            (<[u8; 48]>::try_from(key), data.strip_prefix(KEY_EXPANSION))
        {
            if let Some(Ok(client)) = rest.get(32..).map(<[u8; 32]>::try_from) {
                if let Ok(mut n) = NOTED.lock() {
                    if !n.iter().any(|(c, _)| *c == client) {
                        if n.len() >= MAX_NOTED {
                            n.pop_front();
                        }
                        n.push_back((client, master));
                    }
                }
            }
        }
        dimpl::crypto::rust_crypto::default_provider()
            .hmac_provider
            .hmac(hash, key, data, out)
    }
}

fn provider() -> CryptoProvider {
    let mut p = dimpl::crypto::rust_crypto::default_provider();
    p.hmac_provider = &NOTING_HMAC;
    p
}

/// Why a connection could not start.
#[derive(Debug, thiserror::Error)]
pub enum RtcError {
    /// The other side's fingerprint is not 32 hex pairs.
    #[error("the other side's a=fingerprint:sha-256 is not 32 hex pairs: {0}")]
    Fingerprint(String),
    /// dimpl refused the configuration.
    #[error("DTLS: {0}")]
    Dtls(String),
}

/// One connection; see the module.
pub struct Rtc {
    epoch: Instant,
    ice: Agent,
    dtls: Dtls,
    dtls_client: bool,
    dtls_timeout: Option<Instant>,
    dtls_up: bool,
    remote_sha256: [u8; 32],
    sctp: Box<dyn DcSctpSocket>,
    remote: Option<SocketAddr>,
    /// Datagrams to send before ICE chose the pair (DTLS's server side
    /// answers where the ClientHello came from).
    transmit: VecDeque<(SocketAddr, Vec<u8>)>,
    events: VecDeque<RtcEvent>,
    to_open: Vec<Open>,
    channels: Vec<Channel>,
    buf: Vec<u8>,
    /// The ClientHello's random (ours or theirs), once seen.
    client_random: Option<[u8; 32]>,
    key_log: Option<String>,
    /// ICE's pair was reported.
    ice_reported: bool,
    ended: bool,
    /// The SCTP association is up.
    sctp_up: bool,
    /// SCTP INITs that came once the association was up, dropped.
    late_inits: u64,
}

impl std::fmt::Debug for Rtc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rtc")
            .field("remote", &self.remote)
            .field("dtls_client", &self.dtls_client)
            .field("dtls_up", &self.dtls_up)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

fn unhex_fingerprint(text: &str) -> Option<[u8; 32]> {
    let bytes: Option<Vec<u8>> = text
        .split(':')
        .map(|h| u8::from_str_radix(h, 16).ok())
        .collect();
    bytes?.try_into().ok()
}

/// dimpl's configuration, the same for every connection: made once (its
/// checks cost a debug build 47 ms, which a flood of offers paid each).
fn config() -> Result<Arc<Config>, RtcError> {
    static CONFIG: std::sync::OnceLock<Result<Arc<Config>, String>> = std::sync::OnceLock::new();
    CONFIG
        .get_or_init(|| {
            Config::builder()
                .with_crypto_provider(provider())
                .build()
                .map(Arc::new)
                .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(RtcError::Dtls)
}

impl Rtc {
    /// A connection as `cfg` says, started at `now`. `tie_breaker` and
    /// `ids` (STUN transaction ids) come from the caller's randomness.
    pub fn new(
        cfg: RtcConfig,
        now: Instant,
        tie_breaker: u64,
        ids: impl FnMut() -> [u8; 12] + Send + 'static,
    ) -> Result<Rtc, RtcError> {
        let remote_sha256 = unhex_fingerprint(&cfg.remote_fingerprint)
            .ok_or_else(|| RtcError::Fingerprint(cfg.remote_fingerprint.clone()))?;
        let cert = DtlsCertificate {
            certificate: cfg.cert.der.clone(),
            private_key: cfg.cert.key_pkcs8.clone(),
        };
        let mut dtls = Dtls::new_12(config()?, cert, now);
        if cfg.dtls_client {
            dtls.set_active(true);
        } else {
            // dimpl's server takes its random on its first wake.
            dtls.handle_timeout(now)
                .map_err(|e| RtcError::Dtls(e.to_string()))?;
        }
        let options = Options {
            max_message_size: MAX_MESSAGE_SIZE,
            ..Options::default()
        };
        Ok(Rtc {
            epoch: now,
            ice: Agent::new(cfg.controlling, tie_breaker, cfg.ice, &cfg.remotes, ids),
            dtls,
            dtls_client: cfg.dtls_client,
            dtls_timeout: None,
            dtls_up: false,
            remote_sha256,
            sctp: dcsctp::new_socket("raknet-dissect", &options),
            remote: None,
            transmit: VecDeque::new(),
            events: VecDeque::new(),
            to_open: cfg.open,
            channels: Vec::new(),
            buf: vec![0; 2048],
            client_random: None,
            key_log: None,
            ice_reported: false,
            ended: false,
            sctp_up: false,
            late_inits: 0,
        })
    }

    fn since(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.epoch)
    }

    fn sctp_time(&self, now: Instant) -> SocketTime {
        SocketTime::zero() + self.since(now)
    }

    fn event(&mut self, e: RtcEvent) {
        if self.events.len() < MAX_QUEUED {
            self.events.push_back(e);
        } else if !self.ended {
            self.ended = true;
            self.events
                .push_back(RtcEvent::Failed("events not taken".into()));
        }
    }

    fn fail(&mut self, why: String) {
        if !self.ended {
            self.ended = true;
            self.event(RtcEvent::Failed(why));
        }
    }

    fn send_to(&mut self, to: SocketAddr, bytes: Vec<u8>) {
        if self.transmit.len() < MAX_QUEUED {
            self.transmit.push_back((to, bytes));
        }
    }

    /// A ClientHello in DTLS datagram `b`: its random, for the key log.
    fn note_client_hello(&mut self, b: &[u8]) {
        if self.client_random.is_some() {
            return;
        }
        let Ok(records) = super::dtls::records(b) else {
            return;
        };
        for r in records.iter().filter(|r| r.content == 22 && r.epoch == 0) {
            let Ok(hs) = super::dtls::handshakes(r.fragment, 0) else {
                continue;
            };
            for h in hs.iter().filter(|h| h.kind == 1 && h.is_whole()) {
                if let Ok(hello) = super::dtls::hello(h.body, true) {
                    self.client_random = Some(hello.random);
                }
            }
        }
    }

    /// A datagram from `from`.
    pub fn handle_datagram(&mut self, now: Instant, from: SocketAddr, data: &[u8]) {
        if self.ended {
            return;
        }
        match data.first() {
            Some(0..=3) => self.ice.handle(self.since(now), from, data),
            Some(20..=63) => {
                // From the other side's candidate only (the pair, or the
                // address its ClientHello came from before ICE chose).
                match self.remote {
                    Some(r) if r != from => return,
                    Some(_) => {}
                    None if self.dtls_client => return,
                    None => self.remote = Some(from),
                }
                if !self.dtls_client {
                    self.note_client_hello(data);
                }
                if let Err(e) = self.dtls.handle_packet(data) {
                    self.fail(format!("DTLS: {e}"));
                }
            }
            _ => {}
        }
        self.sctp.advance_time(self.sctp_time(now));
        self.pump(now);
    }

    /// Whatever is due by `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.ended {
            return;
        }
        self.ice.handle_timeout(self.since(now));
        if self.dtls_timeout.is_some_and(|t| t <= now) {
            self.dtls_timeout = None;
            if let Err(e) = self.dtls.handle_timeout(now) {
                self.fail(format!("DTLS: {e}"));
            }
        }
        self.sctp.advance_time(self.sctp_time(now));
        self.pump(now);
    }

    /// When [`Rtc::handle_timeout`] is next due.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        if self.ended {
            return None;
        }
        let ice = self.ice.timeout().map(|d| self.epoch + d);
        let st = self.sctp.poll_timeout();
        let sctp =
            (st != SocketTime::infinite_future()).then(|| self.epoch + (st - SocketTime::zero()));
        [ice, self.dtls_timeout, sctp].into_iter().flatten().min()
    }

    /// Whether the other side has sent a connectivity check that passed
    /// (its USERNAME and MESSAGE-INTEGRITY right): a peer, not just an offer.
    pub fn checked(&self) -> bool {
        self.ice.stats.checks_answered > 0
    }

    /// SCTP INITs the other side sent once the association was up
    /// (dropped, unanswered).
    pub fn late_inits(&self) -> u64 {
        self.late_inits
    }

    /// The other side's address, once known.
    pub fn remote(&self) -> Option<SocketAddr> {
        self.remote
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self) -> Option<(SocketAddr, Vec<u8>)> {
        self.transmit.pop_front()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<RtcEvent> {
        self.events.pop_front()
    }

    /// The NSS key-log line of this connection's DTLS
    /// (`CLIENT_RANDOM <random> <master secret>`), once its keys are made.
    pub fn key_log_line(&mut self) -> Option<&str> {
        if self.key_log.is_none() {
            let random = self.client_random?;
            let noted = NOTED.lock().ok()?;
            let (_, master) = noted.iter().find(|(c, _)| *c == random)?;
            self.key_log = Some(format!(
                "CLIENT_RANDOM {} {}",
                crate::wire::cursor::hex(&random),
                crate::wire::cursor::hex(master)
            ));
        }
        self.key_log.as_deref()
    }

    fn pump(&mut self, now: Instant) {
        loop {
            while let Some(t) = self.ice.poll_transmit() {
                self.send_to(t.0, t.1);
            }
            if let (IceState::Connected(a), false) = (self.ice.state(), self.ice_reported) {
                // (The DTLS server may have its ClientHello already.)
                let a = *a;
                self.ice_reported = true;
                self.remote.get_or_insert(a);
                self.event(RtcEvent::IceConnected(a));
                if self.dtls_client {
                    // The ClientHello now that there is somewhere to send it.
                    if let Err(e) = self.dtls.handle_timeout(now) {
                        self.fail(format!("DTLS: {e}"));
                    }
                }
            }
            if let IceState::Failed(why) = self.ice.state() {
                let why = format!("ICE: {why}");
                self.fail(why);
                return;
            }
            let mut more = self.drain_dtls(now);
            more |= self.drain_sctp();
            if !more || self.ended {
                break;
            }
        }
    }

    /// dimpl's output; whether it gave SCTP something.
    fn drain_dtls(&mut self, now: Instant) -> bool {
        if self.dtls_client && self.remote.is_none() {
            return false;
        }
        let mut more = false;
        loop {
            match self.dtls.poll_output(&mut self.buf) {
                Output::Packet(p) => {
                    let p = p.to_vec();
                    if self.dtls_client {
                        self.note_client_hello(&p);
                    }
                    if let Some(to) = self.remote {
                        self.send_to(to, p);
                    }
                }
                Output::BufferTooSmall { needed } => {
                    if needed > 1 << 20 {
                        self.fail(format!("DTLS wants a {needed}-byte buffer"));
                        return false;
                    }
                    self.buf.resize(needed, 0);
                }
                Output::Timeout(t) => {
                    self.dtls_timeout = Some(t);
                    break;
                }
                Output::Connected => {
                    self.dtls_up = true;
                    let client = self.dtls_client;
                    self.event(RtcEvent::DtlsConnected { client });
                    // Both sides send INIT (aiortc does too); SCTP sorts it.
                    self.sctp.advance_time(self.sctp_time(now));
                    self.sctp.connect();
                    more = true;
                }
                Output::PeerCert(der) => {
                    use sha2::Digest;
                    if sha2::Sha256::digest(der).as_slice() != self.remote_sha256 {
                        self.fail(
                            "the other side's DTLS certificate is not the one its SDP names (a=fingerprint)"
                                .into(),
                        );
                        return false;
                    }
                }
                // An INIT (alone in its packet, RFC 9260 6.10) once the
                // association is up would restart it; a WebRTC peer never
                // does over the same DTLS, and answering each costs a
                // cookie: a flood of them is dropped, counted.
                Output::ApplicationData(d) if self.sctp_up && d.get(12) == Some(&1) => {
                    self.late_inits += 1;
                }
                Output::ApplicationData(d) => {
                    self.sctp.handle_input(d);
                    more = true;
                }
                Output::CloseNotify => {
                    self.ended = true;
                    self.event(RtcEvent::Closed("DTLS close_notify".into()));
                    return false;
                }
                _ => {}
            }
        }
        more
    }

    /// dcsctp's events and messages; whether there were any.
    fn drain_sctp(&mut self) -> bool {
        let mut more = false;
        while let Some(ev) = self.sctp.poll_event() {
            more = true;
            match ev {
                SocketEvent::SendPacket(p) => {
                    if !self.dtls_up {
                        continue;
                    }
                    if let Err(e) = self.dtls.send_application_data(&p) {
                        self.fail(format!("DTLS: {e}"));
                        return false;
                    }
                    // One record a datagram (aiortc reads one a datagram).
                    self.flush_records();
                }
                SocketEvent::OnConnected() => {
                    self.sctp_up = true;
                    self.event(RtcEvent::SctpConnected);
                    self.open_channels();
                }
                SocketEvent::OnStreamsResetPerformed(ids) => {
                    for id in ids {
                        self.reset(id.0, false);
                    }
                }
                SocketEvent::OnIncomingStreamReset(ids) => {
                    for id in ids {
                        self.reset(id.0, true);
                    }
                }
                SocketEvent::OnAborted(kind, why) => {
                    self.ended = true;
                    self.event(RtcEvent::Closed(format!("SCTP ABORT: {kind:?} {why}")));
                    return false;
                }
                SocketEvent::OnClosed() => {
                    self.ended = true;
                    self.event(RtcEvent::Closed("SCTP SHUTDOWN".into()));
                    return false;
                }
                SocketEvent::OnError(kind, why) => {
                    self.event(RtcEvent::Failed(format!("SCTP: {kind:?} {why}")))
                }
                _ => {}
            }
        }
        while let Some(m) = self.sctp.get_next_message() {
            more = true;
            self.on_message(m);
        }
        more
    }

    /// dimpl's queued records, each in its own datagram.
    fn flush_records(&mut self) {
        let Some(to) = self.remote else { return };
        while let Output::Packet(p) = self.dtls.poll_output(&mut self.buf) {
            let p = p.to_vec();
            self.send_to(to, p);
        }
    }

    fn open_channels(&mut self) {
        let mut stream: u16 = if self.dtls_client { 0 } else { 1 };
        for open in std::mem::take(&mut self.to_open) {
            // DCEP goes ordered and reliable whatever the channel (RFC 8832 §6).
            let m = SctpMessage::new(StreamId(stream), PpId(PPID_DCEP), open.emit());
            if let Err(e) = self.sctp.send(m, &SendOptions::default()) {
                self.fail(format!("DCEP: {e}"));
                return;
            }
            self.channels.push(Channel {
                open,
                stream,
                acked: false,
                reset_in: false,
                reset_out: false,
                closed: false,
            });
            stream += 2;
        }
    }

    fn on_message(&mut self, m: SctpMessage) {
        let stream = m.stream_id.0;
        let i = self.channels.iter().position(|c| c.stream == stream);
        match (m.ppid.0, i) {
            (PPID_DCEP, i) => match (dcep::Message::parse(&m.payload), i) {
                (Ok(dcep::Message::Ack), Some(i)) if !self.channels[i].acked => {
                    self.channels[i].acked = true;
                    let label = self.channels[i].open.label.clone();
                    self.event(RtcEvent::ChannelOpen { label, stream });
                }
                (Ok(dcep::Message::Open(open)), None) if self.channels.len() < 16 => {
                    let ack = SctpMessage::new(StreamId(stream), PpId(PPID_DCEP), vec![dcep::ACK]);
                    if let Err(e) = self.sctp.send(ack, &SendOptions::default()) {
                        self.fail(format!("DCEP: {e}"));
                        return;
                    }
                    let label = open.label.clone();
                    self.channels.push(Channel {
                        open,
                        stream,
                        acked: true,
                        reset_in: false,
                        reset_out: false,
                        closed: false,
                    });
                    self.event(RtcEvent::ChannelOpen { label, stream });
                }
                _ => {}
            },
            (PPID_BINARY, Some(i)) => {
                let label = self.channels[i].open.label.clone();
                self.event(RtcEvent::Message {
                    label,
                    data: m.payload,
                });
            }
            (PPID_BINARY_EMPTY, Some(i)) => {
                let label = self.channels[i].open.label.clone();
                self.event(RtcEvent::Message {
                    label,
                    data: Vec::new(),
                });
            }
            _ => {}
        }
    }

    fn reset(&mut self, stream: u16, incoming: bool) {
        let Some(i) = self.channels.iter().position(|c| c.stream == stream) else {
            return;
        };
        let c = &mut self.channels[i];
        if incoming {
            c.reset_in = true;
        } else {
            c.reset_out = true;
        }
        let answer = incoming && !c.reset_out;
        if answer {
            // The other side closed the channel: ours goes too.
            let _ = self.sctp.reset_streams(&[StreamId(stream)]);
        }
        let c = &mut self.channels[i];
        if c.reset_in && c.reset_out && !c.closed {
            c.closed = true;
            let label = c.open.label.clone();
            self.event(RtcEvent::ChannelClosed { label });
        }
    }

    /// Send `data` on channel `label` (as that channel delivers: ordered
    /// or not, resent or not).
    pub fn send(&mut self, now: Instant, label: &str, data: &[u8]) -> Result<(), String> {
        let c = self
            .channels
            .iter()
            .find(|c| c.open.label == label && c.acked && !c.closed)
            .ok_or_else(|| format!("no open channel {label}"))?;
        if data.len() > MAX_MESSAGE_SIZE {
            return Err(format!(
                "a message of {} bytes, more than {MAX_MESSAGE_SIZE}",
                data.len()
            ));
        }
        let options = SendOptions {
            unordered: !c.open.ordered,
            max_retransmissions: match c.open.reliability {
                dcep::Reliability::Retransmits(n) => Some(n.min(u32::from(u16::MAX)) as u16),
                _ => None,
            },
            ..SendOptions::default()
        };
        let (ppid, payload) = match data.is_empty() {
            true => (PPID_BINARY_EMPTY, vec![0]),
            false => (PPID_BINARY, data.to_vec()),
        };
        let m = SctpMessage::new(StreamId(c.stream), PpId(ppid), payload);
        self.sctp.advance_time(self.sctp_time(now));
        self.sctp.send(m, &options).map_err(|e| e.to_string())?;
        self.pump(now);
        Ok(())
    }

    /// Bytes queued on the channels, not yet acknowledged.
    pub fn buffered(&self) -> usize {
        self.channels
            .iter()
            .map(|c| self.sctp.buffered_amount(StreamId(c.stream)))
            .sum()
    }

    /// Close every channel (their streams reset, RFC 8831 §6.7).
    pub fn close_channels(&mut self, now: Instant) {
        let ids: Vec<StreamId> = self
            .channels
            .iter()
            .filter(|c| !c.reset_out)
            .map(|c| StreamId(c.stream))
            .collect();
        if ids.is_empty() {
            return;
        }
        self.sctp.advance_time(self.sctp_time(now));
        let _ = self.sctp.reset_streams(&ids);
        self.pump(now);
    }

    /// Whether every channel opened has closed.
    pub fn channels_closed(&self) -> bool {
        !self.channels.is_empty() && self.channels.iter().all(|c| c.closed)
    }

    /// End the association (SCTP SHUTDOWN) and the DTLS session
    /// (close_notify).
    pub fn close(&mut self, now: Instant) {
        self.sctp.advance_time(self.sctp_time(now));
        self.sctp.shutdown();
        self.pump(now);
        let _ = self.dtls.close();
        self.flush_records();
        self.ended = true;
    }
}

#[cfg(test)]
mod tests_support {
    use super::*;

    fn ids(seed: u8) -> impl FnMut() -> [u8; 12] + Send {
        let mut n = 0u32;
        move || {
            n += 1;
            let mut id = [seed; 12];
            id[..4].copy_from_slice(&n.to_be_bytes());
            id
        }
    }

    /// An offerer and an answerer, as a NetherNet client and server make
    /// them (the answerer the DTLS client, as aiortc's and go-nethernet's
    /// servers are, or the other way).
    pub(super) fn pair(answerer_dtls_client: bool) -> (Rtc, Rtc, SocketAddr, SocketAddr, Instant) {
        let (c, s): (SocketAddr, SocketAddr) = (
            "127.0.0.1:40001".parse().unwrap(),
            "127.0.0.1:40002".parse().unwrap(),
        );
        let (cc, sc) = (
            Cert::self_signed("client").unwrap(),
            Cert::self_signed("server").unwrap(),
        );
        let creds = |l: &str, r: &str| Credentials {
            local_ufrag: l.into(),
            local_pwd: format!("{l}-password-of-22-chars"),
            remote_ufrag: r.into(),
            remote_pwd: format!("{r}-password-of-22-chars"),
        };
        let now = Instant::now();
        let client = Rtc::new(
            RtcConfig {
                controlling: true,
                dtls_client: !answerer_dtls_client,
                ice: creds("cccc", "ssss"),
                remotes: vec![s],
                remote_fingerprint: sc.fingerprint(),
                cert: cc.clone(),
                open: vec![Open::reliable(), Open::unreliable()],
            },
            now,
            1,
            ids(1),
        )
        .unwrap();
        let server = Rtc::new(
            RtcConfig {
                controlling: false,
                dtls_client: answerer_dtls_client,
                ice: creds("ssss", "cccc"),
                remotes: vec![c],
                remote_fingerprint: cc.fingerprint(),
                cert: sc,
                open: vec![],
            },
            now,
            2,
            ids(2),
        )
        .unwrap();
        (client, server, c, s, now)
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::*;
    use super::*;

    /// Both sides run until `until`; datagrams cross, the `drop`ped ones
    /// (by their number) lost. The events of each.
    fn run(
        a: &mut Rtc,
        b: &mut Rtc,
        (ca, cb): (SocketAddr, SocketAddr),
        start: Instant,
        until: Duration,
        drop: &dyn Fn(u64) -> bool,
        on: &mut dyn FnMut(bool, &RtcEvent, &mut Rtc, Instant),
    ) {
        let mut now = start;
        let mut n = 0u64;
        while now < start + until {
            for (x, is_a) in [(&mut *a, true), (&mut *b, false)] {
                if x.poll_timeout().is_some_and(|t| t <= now) {
                    x.handle_timeout(now);
                }
                let _ = is_a;
            }
            loop {
                let mut any = false;
                while let Some((_, d)) = a.poll_transmit() {
                    n += 1;
                    any = true;
                    if !drop(n) {
                        b.handle_datagram(now, ca, &d);
                    }
                }
                while let Some((_, d)) = b.poll_transmit() {
                    n += 1;
                    any = true;
                    if !drop(n) {
                        a.handle_datagram(now, cb, &d);
                    }
                }
                while let Some(e) = a.poll_event() {
                    any = true;
                    on(true, &e, a, now);
                }
                while let Some(e) = b.poll_event() {
                    any = true;
                    on(false, &e, b, now);
                }
                if !any {
                    break;
                }
            }
            now += Duration::from_millis(5);
        }
    }

    /// Both DTLS roles: the channels open, messages of every size up to
    /// the largest cross both ways in order on the reliable channel, the
    /// unreliable one carries them unordered, both sides write the same
    /// key-log line, and closing the channels closes them on both sides.
    #[test]
    fn two_peers_of_ours_open_the_channels_and_talk() {
        for answerer_dtls_client in [true, false] {
            let (mut client, mut server, c, s, now) = pair(answerer_dtls_client);
            let sizes = [1usize, 1000, 1500, 70_000, MAX_MESSAGE_SIZE];
            let mut got: [Vec<(String, usize)>; 2] = Default::default();
            let mut open = [0; 2];
            let mut closed = [0; 2];
            run(
                &mut client,
                &mut server,
                (c, s),
                now,
                Duration::from_secs(3),
                &|_| false,
                &mut |is_client, e, me, now| {
                    let side = usize::from(!is_client);
                    match e {
                        RtcEvent::ChannelOpen { label, .. } => {
                            open[side] += 1;
                            if open[side] == 2 {
                                for n in sizes {
                                    me.send(now, dcep::RELIABLE_LABEL, &vec![side as u8; n])
                                        .unwrap();
                                }
                                me.send(now, dcep::UNRELIABLE_LABEL, b"ping").unwrap();
                            }
                            let _ = label;
                        }
                        RtcEvent::Message { label, data } => {
                            assert!(data
                                .iter()
                                .all(|&b| usize::from(b) != side || data.is_empty()));
                            got[side].push((label.clone(), data.len()));
                            if got[side].len() == sizes.len() + 1 && is_client {
                                me.close_channels(now);
                            }
                        }
                        RtcEvent::ChannelClosed { .. } => closed[side] += 1,
                        RtcEvent::Failed(why) => panic!("{why}"),
                        _ => {}
                    }
                },
            );
            for (side, got) in got.iter().enumerate() {
                let reliable: Vec<usize> = got
                    .iter()
                    .filter(|(l, _)| l == dcep::RELIABLE_LABEL)
                    .map(|(_, n)| *n)
                    .collect();
                assert_eq!(
                    reliable, sizes,
                    "side {side}, answerer DTLS client {answerer_dtls_client}"
                );
                assert!(got.contains(&(dcep::UNRELIABLE_LABEL.to_string(), 4)));
            }
            assert_eq!(closed, [2, 2]);
            let (kc, ks) = (
                client.key_log_line().map(str::to_owned),
                server.key_log_line().map(str::to_owned),
            );
            assert!(kc
                .as_deref()
                .is_some_and(|l| l.starts_with("CLIENT_RANDOM ") && l.len() == 14 + 64 + 1 + 96));
            assert_eq!(kc, ks);
        }
    }

    /// One datagram in five lost, both ways: the reliable channel still
    /// delivers everything in order.
    #[test]
    fn the_reliable_channel_survives_loss() {
        let (mut client, mut server, c, s, now) = pair(true);
        let mut got = Vec::new();
        let mut open = 0;
        run(
            &mut client,
            &mut server,
            (c, s),
            now,
            Duration::from_secs(20),
            &|n| n % 5 == 0,
            &mut |is_client, e, me, now| match e {
                RtcEvent::ChannelOpen { .. } if is_client => {
                    open += 1;
                    if open == 2 {
                        for i in 0..50u8 {
                            me.send(now, dcep::RELIABLE_LABEL, &vec![i; 3000]).unwrap();
                        }
                    }
                }
                RtcEvent::Message { data, .. } if !is_client => got.push(data[0]),
                RtcEvent::Failed(why) => panic!("{why}"),
                _ => {}
            },
        );
        assert_eq!(got, (0..50).collect::<Vec<u8>>());
    }

    /// A certificate that is not the one the SDP names fails the
    /// connection, in words.
    #[test]
    fn a_wrong_certificate_fails() {
        let (mut client, mut server, c, s, now) = pair(true);
        client.remote_sha256[0] ^= 1;
        let mut failed = None;
        run(
            &mut client,
            &mut server,
            (c, s),
            now,
            Duration::from_secs(2),
            &|_| false,
            &mut |is_client, e, _, _| {
                if let (true, RtcEvent::Failed(why)) = (is_client, e) {
                    failed = Some(why.clone());
                }
            },
        );
        assert!(failed.is_some_and(|w| w.contains("a=fingerprint")));
    }
}

/// Our Bedrock client and server over two of our NetherNet transports in
/// memory, the path losing one datagram in ten and delaying the rest 10
/// ms: login, spawn, 10,000 game packets each way on the reliable channel
/// (batches of 100), a batch larger than a data channel message (cut into
/// segments), and pings on the unreliable channel (some lost).
#[cfg(test)]
mod game_tests {
    use super::tests_support::*;
    use super::*;
    use crate::bedrock::client::GameClient;
    use crate::bedrock::server::GameServer;
    use crate::bedrock::speak::SessionEvent;
    use crate::nethernet::framing::{segments, Reassembler, Step, DEFAULT_LIMIT};
    use serde_json::json;

    fn send_batches(rtc: &mut Rtc, now: Instant, batches: Vec<Vec<u8>>) {
        for b in batches {
            for s in segments(&b, MAX_MESSAGE_SIZE).unwrap() {
                rtc.send(now, dcep::RELIABLE_LABEL, &s).unwrap();
            }
        }
    }

    /// What one end's game saw: texts, spawn.
    fn events(
        e: impl Iterator<Item = SessionEvent>,
        texts: &mut usize,
        spawned: &mut bool,
        who: &str,
    ) {
        for e in e {
            match e {
                SessionEvent::Spawned => *spawned = true,
                SessionEvent::Packet { name, .. } if name == "text" => *texts += 1,
                SessionEvent::Error(e) | SessionEvent::Refused(e) => panic!("{who}: {e}"),
                _ => {}
            }
        }
    }

    #[test]
    fn a_game_over_a_lossy_path() {
        let (mut a, mut b, ca, cb, start) = pair(true);
        let mut client =
            GameClient::new("1.26.45", "Steve", "http://127.0.0.1:19132:19132").unwrap();
        client.speaker.codec.set_nethernet();
        let mut server = GameServer::new("1.26.45").unwrap().over_nethernet();
        let mut reassembly = [(); 2].map(|_| Reassembler::new(DEFAULT_LIMIT));
        let (mut texts, mut spawned, mut pings) = ([0usize; 2], [false; 2], 0);
        let (mut open, mut started, mut sent) = ([0; 2], false, false);
        // In flight: (due, to b, bytes).
        let mut wire: std::collections::VecDeque<(Instant, bool, Vec<u8>)> = Default::default();
        let mut n = 0u64;
        let mut now = start;
        let big: String = (0..900_000u32)
            .map(|i| char::from(b'a' + (i.wrapping_mul(2_654_435_761) >> 27) as u8 % 26))
            .collect();
        while now < start + Duration::from_secs(300) {
            for (x, to_b) in [(&mut a, true), (&mut b, false)] {
                if x.poll_timeout().is_some_and(|t| t <= now) {
                    x.handle_timeout(now);
                }
                while let Some((_, d)) = x.poll_transmit() {
                    n += 1;
                    if n % 10 != 3 {
                        wire.push_back((now + Duration::from_millis(10), to_b, d));
                    }
                }
            }
            while wire.front().is_some_and(|(t, ..)| *t <= now) {
                let (_, to_b, d) = wire.pop_front().unwrap();
                match to_b {
                    true => b.handle_datagram(now, ca, &d),
                    false => a.handle_datagram(now, cb, &d),
                }
            }
            for (side, x) in [(0usize, &mut a), (1, &mut b)] {
                while let Some(e) = x.poll_event() {
                    match e {
                        RtcEvent::ChannelOpen { .. } => open[side] += 1,
                        RtcEvent::Message { label, data } if label == dcep::RELIABLE_LABEL => {
                            if let Step::Whole(batch) = reassembly[side].push(&data) {
                                match side {
                                    0 => client.handle(&batch),
                                    _ => server.handle(&batch),
                                }
                            }
                        }
                        RtcEvent::Message { data, .. } => {
                            assert_eq!(data, [0, 9, 9]);
                            pings += 1;
                        }
                        RtcEvent::Failed(why) | RtcEvent::Closed(why) => panic!("{why}"),
                        _ => {}
                    }
                }
            }
            if open == [2, 2] && !started {
                started = true;
                client.start().unwrap();
            }
            events(
                std::iter::from_fn(|| client.poll_event()),
                &mut texts[0],
                &mut spawned[0],
                "client",
            );
            events(
                std::iter::from_fn(|| server.poll_event()),
                &mut texts[1],
                &mut spawned[1],
                "server",
            );
            if spawned == [true, true] && !sent {
                sent = true;
                for i in 0..10_000 {
                    let m =
                        json!({"type": "chat", "source_name": "Steve", "message": format!("c{i}")});
                    client.speaker.queue("text", m).unwrap();
                    let m = json!({"type": "chat", "source_name": "Server", "message": format!("s{i}")});
                    server.speaker.queue("text", m).unwrap();
                    if i % 100 == 99 {
                        client.speaker.flush();
                        server.speaker.flush();
                    }
                }
                let m = json!({"type": "chat", "source_name": "Steve", "message": big.clone()});
                client.speaker.queue("text", m).unwrap();
                client.speaker.flush();
                for _ in 0..50 {
                    a.send(now, dcep::UNRELIABLE_LABEL, &[0, 9, 9]).unwrap();
                }
            }
            let batches: Vec<_> = std::iter::from_fn(|| client.poll_transmit()).collect();
            send_batches(&mut a, now, batches);
            let batches: Vec<_> = std::iter::from_fn(|| server.poll_transmit()).collect();
            send_batches(&mut b, now, batches);
            if texts == [10_000, 10_001] && wire.is_empty() {
                break;
            }
            now += Duration::from_millis(5);
        }
        println!(
            "after {:?} of path time: the client got {} texts, the server {}, {pings} of 50 pings, {n} datagrams",
            now - start,
            texts[0],
            texts[1]
        );
        assert_eq!(spawned, [true, true]);
        assert_eq!(texts, [10_000, 10_001]);
        assert!(pings < 50 && pings > 20, "{pings} pings");
    }
}
