//! std UDP sockets driving `session/` as a real client or server
//! (docs/architecture.md, `peer/`). One non-blocking socket each, `poll(2)` for the
//! next datagram or timer, no async runtime: a RakNet connection is one
//! socket and a handful of timers.

/// Recording a session as pcapng (the writer lives with the capture code).
pub(crate) mod record {
    pub(crate) use crate::capture::write::Recorder;
}

pub mod bedrock;
pub mod nethernet;
pub mod nethernet_listen;
pub mod nethernet_serve;
pub mod proxy;
pub mod run;
pub mod serve;
pub(crate) mod signaling;

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use crate::session::handshake::HandshakeEvent;
use crate::session::{
    ClientConfig, ClientHandshake, CloseReason, Connection, Event, HandshakeError, Listener,
    ServerConfig,
};
use crate::wire::{Offline, Reader, Reliability};
use record::Recorder;

/// Socket buffers asked for: a bulk sender and its peer on loopback
/// overflow the default 208 KiB quickly.
const SOCKET_BUFFER: usize = 8 << 20;
/// Largest datagram read.
const MAX_DATAGRAM: usize = 65_536;

/// Why a client could not connect, or a peer stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PeerError {
    #[error("{0}")]
    Handshake(#[from] HandshakeError),
    /// ICMP port unreachable: nothing listens there.
    #[error("port unreachable: nothing listens on {0} (ICMP port unreachable)")]
    PortUnreachable(SocketAddr),
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl PeerError {
    /// The step that failed, in the words of `handshake` outcomes.
    pub(crate) fn step(&self) -> &'static str {
        match self {
            PeerError::Handshake(h) => h.step(),
            PeerError::PortUnreachable(_) => "port_unreachable",
            PeerError::Io(_) => "io_error",
        }
    }
}

/// Connections went, with what they held: hand the freed memory back to
/// the system (glibc keeps freed small blocks in its arenas otherwise, and
/// a server that held a split bomb would stay that large).
// glibc's malloc_trim(3) through libc.
#[allow(unsafe_code)]
fn give_back_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// A non-blocking UDP socket with the time since its creation as `now`.
#[derive(Debug)]
struct Socket {
    sock: UdpSocket,
    epoch: Instant,
    rbuf: Vec<u8>,
    /// A datagram the kernel would not take yet.
    blocked: Option<(SocketAddr, Vec<u8>)>,
}

impl Socket {
    fn bind(local: SocketAddr) -> io::Result<Socket> {
        let domain = socket2::Domain::for_address(local);
        let s = socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))?;
        if local.is_ipv6() {
            // [::] listens on IPv6 only; use 0.0.0.0 for IPv4.
            s.set_only_v6(true)?;
        }
        // Larger buffers where the system allows; the defaults still work.
        let _ = s.set_recv_buffer_size(SOCKET_BUFFER);
        let _ = s.set_send_buffer_size(SOCKET_BUFFER);
        s.bind(&local.into())?;
        s.set_nonblocking(true)?;
        Ok(Socket {
            sock: s.into(),
            epoch: Instant::now(),
            rbuf: vec![0; MAX_DATAGRAM],
            blocked: None,
        })
    }

    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// Send, or keep the datagram for later when the kernel buffer is full.
    /// False when it had to be kept.
    fn send_to(&mut self, to: SocketAddr, bytes: &[u8]) -> io::Result<bool> {
        match self.sock.send_to(bytes, to) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.blocked = Some((to, bytes.to_vec()));
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Retry a kept datagram; true when nothing is kept any more.
    fn unblock(&mut self) -> io::Result<bool> {
        if let Some((to, bytes)) = self.blocked.take() {
            return self.send_to(to, &bytes);
        }
        Ok(true)
    }

    /// Wait until a datagram can be read, the kept one can be written, or
    /// `until` (time since the epoch) comes.
    // ppoll(2) through libc: std has no poll with a nanosecond timeout.
    #[allow(unsafe_code)]
    fn wait(&self, until: Duration) -> io::Result<()> {
        let left = until.saturating_sub(self.now());
        if left.is_zero() {
            return Ok(());
        }
        let mut events = libc::POLLIN;
        if self.blocked.is_some() {
            events |= libc::POLLOUT;
        }
        let mut fd = libc::pollfd {
            fd: self.sock.as_raw_fd(),
            events,
            revents: 0,
        };
        let ts = libc::timespec {
            tv_sec: left.as_secs() as libc::time_t,
            tv_nsec: left.subsec_nanos() as libc::c_long,
        };
        // SAFETY: one valid pollfd, a valid timespec, no signal mask.
        let r = unsafe { libc::ppoll(&mut fd, 1, &ts, std::ptr::null()) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        Ok(())
    }

    /// The next datagram waiting, if any.
    fn recv(&mut self) -> io::Result<Option<(SocketAddr, usize)>> {
        match self.sock.recv_from(&mut self.rbuf) {
            Ok((n, from)) => Ok(Some((from, n))),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Wait until one of `fds` can be read, or `timeout` passes.
// ppoll(2) through libc: std has no poll over several sockets, and poll's
// milliseconds would turn a timer due in 400 µs into a busy loop.
#[allow(unsafe_code)]
pub(crate) fn wait_any(fds: &[std::os::fd::RawFd], timeout: Duration) -> io::Result<()> {
    let mut polls: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let timeout = timeout.min(Duration::from_secs(3600));
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: a valid array of pollfds of the length given, a valid
    // timespec, no signal mask.
    let r = unsafe {
        libc::ppoll(
            polls.as_mut_ptr(),
            polls.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// The result of an unconnected ping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pong {
    pub(crate) rtt: Duration,
    pub(crate) server_guid: u64,
    pub(crate) payload: Vec<u8>,
}

fn wildcard_for(target: SocketAddr) -> SocketAddr {
    if target.is_ipv6() {
        "[::]:0".parse().expect("a valid address")
    } else {
        "0.0.0.0:0".parse().expect("a valid address")
    }
}

/// Map the error a connected UDP socket reports after an ICMP port unreachable.
fn refused(e: io::Error, target: SocketAddr) -> PeerError {
    if e.kind() == io::ErrorKind::ConnectionRefused {
        PeerError::PortUnreachable(target)
    } else {
        PeerError::Io(e)
    }
}

/// One unconnected ping (0x01); `Ok(None)` when no pong came within `timeout`.
pub(crate) fn ping(
    target: SocketAddr,
    guid: u64,
    timeout: Duration,
) -> Result<Option<Pong>, PeerError> {
    let mut s = Socket::bind(wildcard_for(target))?;
    s.sock.connect(target)?;
    let start = s.now();
    let mut out = Vec::new();
    Offline::UnconnectedPing {
        open_connections: false,
        time: start.as_millis() as u64,
        client_guid: Some(guid),
    }
    .emit(&mut out);
    s.sock.send(&out).map_err(|e| refused(e, target))?;
    let until = start + timeout;
    while s.now() < until {
        s.wait(until)?;
        while let Some((_, n)) = s.recv().map_err(|e| refused(e, target))? {
            // Any pong from the target: some servers (rust-raknet 1.4) put
            // their own clock there instead of echoing the ping's time.
            if let Ok(Offline::UnconnectedPong {
                server_guid,
                payload,
                ..
            }) = Offline::parse(&mut Reader::new(&s.rbuf[..n]))
            {
                return Ok(Some(Pong {
                    rtt: s.now() - start,
                    server_guid,
                    payload: payload.to_vec(),
                }));
            }
        }
    }
    Ok(None)
}

/// A connected client.
#[derive(Debug)]
pub(crate) struct Client {
    s: Socket,
    conn: Connection,
    server: SocketAddr,
    out: Vec<u8>,
    /// Time from the first request to ConnectionRequestAccepted.
    pub(crate) handshake_time: Duration,
    pub(crate) server_guid: Option<u64>,
    local: SocketAddr,
    recording: Recording,
}

/// A client's recording of its datagrams, if it records.
#[derive(Debug, Default)]
struct Recording {
    to: Option<Recorder>,
    /// The write error that stopped the recording, until it is taken
    /// ([`Client::recording_stopped`]).
    stopped: Option<io::Error>,
}

impl Recording {
    /// Record a datagram if recording; a write error stops the recording
    /// (and is kept, to be reported once).
    fn datagram(&mut self, src: SocketAddr, dst: SocketAddr, bytes: &[u8]) {
        if let Some(r) = &mut self.to {
            if let Err(e) = r.record(src, dst, bytes) {
                self.stopped = Some(e);
                self.to = None;
            }
        }
    }
}

impl Client {
    /// Connect: offline handshake, then ConnectionRequest until it is
    /// accepted. `on_step` hears each handshake step as it happens.
    pub(crate) fn connect(
        target: SocketAddr,
        cfg: ClientConfig,
        on_step: impl FnMut(Duration, &HandshakeEvent),
    ) -> Result<Client, PeerError> {
        Self::connect_recorded(target, cfg, None, on_step)
    }

    /// [`Self::connect`], writing every datagram sent and received, from the
    /// first request on, to `recorder`.
    pub(crate) fn connect_recorded(
        target: SocketAddr,
        cfg: ClientConfig,
        recorder: Option<Recorder>,
        mut on_step: impl FnMut(Duration, &HandshakeEvent),
    ) -> Result<Client, PeerError> {
        let mut recording = Recording {
            to: recorder,
            stopped: None,
        };
        let mut s = Socket::bind(wildcard_for(target))?;
        // Connected, so that an ICMP port unreachable comes back as an error.
        s.sock.connect(target)?;
        let local = s.local_addr()?;
        let start = s.now();
        let mut hs = ClientHandshake::new(cfg, target, local, start);
        let mut out = Vec::new();
        let mut conn = loop {
            let now = s.now();
            if hs.poll_transmit(now, &mut out)? {
                s.sock.send(&out).map_err(|e| refused(e, target))?;
                recording.datagram(local, target, &out);
            }
            while let Some(e) = hs.poll_event() {
                on_step(now - start, &e);
            }
            s.wait(hs.poll_timeout())?;
            let mut done = None;
            while let Some((_, n)) = s.recv().map_err(|e| refused(e, target))? {
                let now = s.now();
                recording.datagram(target, local, &s.rbuf[..n]);
                if let Some(c) = hs.handle(now, &s.rbuf[..n])? {
                    done = Some(c);
                    break;
                }
            }
            while let Some(e) = hs.poll_event() {
                on_step(s.now() - start, &e);
            }
            if let Some(c) = done {
                break c;
            }
        };
        let server_guid = hs.server_guid();
        on_step(s.now() - start, &HandshakeEvent::ConnectionRequestSent);
        // The connected handshake: ConnectionRequest until accepted.
        loop {
            let now = s.now();
            while conn.poll_transmit(now, &mut out) {
                s.sock.send(&out).map_err(|e| refused(e, target))?;
                recording.datagram(local, target, &out);
            }
            match conn.poll_event() {
                Some(Event::Connected) => {
                    on_step(s.now() - start, &HandshakeEvent::Accepted);
                    break;
                }
                Some(Event::Closed(reason)) => {
                    return Err(HandshakeError::ConnectionRequest(reason).into())
                }
                Some(_) => continue,
                None => {}
            }
            s.wait(
                conn.poll_timeout()
                    .unwrap_or(now + Duration::from_millis(100)),
            )?;
            while let Some((_, n)) = s.recv().map_err(|e| refused(e, target))? {
                let now = s.now();
                let b = &s.rbuf[..n];
                recording.datagram(target, local, b);
                if b.first().is_some_and(|b| b & 0x80 != 0) {
                    conn.handle(now, b);
                }
            }
        }
        Ok(Client {
            handshake_time: s.now() - start,
            s,
            conn,
            server: target,
            out,
            server_guid,
            local,
            recording,
        })
    }

    /// The write error that stopped the recording, once (`None` while it
    /// records, or when it does not).
    pub(crate) fn recording_stopped(&mut self) -> Option<io::Error> {
        self.recording.stopped.take()
    }

    /// Stop recording and flush the file.
    pub(crate) fn finish_recording(&mut self) -> io::Result<()> {
        match self.recording.to.take() {
            Some(mut r) => r.flush(),
            None => Ok(()),
        }
    }

    pub(crate) fn now(&self) -> Duration {
        self.s.now()
    }

    pub(crate) fn server(&self) -> SocketAddr {
        self.server
    }

    pub(crate) fn connection(&self) -> &Connection {
        &self.conn
    }

    pub(crate) fn send(
        &mut self,
        data: &[u8],
        reliability: Reliability,
        channel: u8,
        receipt: Option<u32>,
    ) {
        let now = self.s.now();
        self.conn.send(now, data, reliability, channel, receipt);
    }

    /// Send what is due, then wait for a datagram or a timer, at most until
    /// `until` (time since the client's epoch), and handle what came.
    pub(crate) fn step(&mut self, until: Duration) -> Result<(), PeerError> {
        let target = self.server;
        if self.s.unblock().map_err(|e| refused(e, target))? {
            let now = self.s.now();
            while self.conn.poll_transmit(now, &mut self.out) {
                let out = std::mem::take(&mut self.out);
                let sent = self
                    .s
                    .send_to(target, &out)
                    .map_err(|e| refused(e, target))?;
                if sent {
                    self.recording.datagram(self.local, target, &out);
                }
                self.out = out;
                if !sent {
                    break;
                }
            }
        }
        // Events to hand out (a close among them): no sleeping.
        let wake = if self.conn.has_events() || self.conn.is_closed() {
            Duration::ZERO
        } else {
            self.conn.poll_timeout().map_or(until, |t| t.min(until))
        };
        self.s.wait(wake)?;
        while let Some((from, n)) = self.s.recv().map_err(|e| refused(e, target))? {
            if from == target {
                let now = self.s.now();
                self.recording
                    .datagram(target, self.local, &self.s.rbuf[..n]);
                self.conn.handle(now, &self.s.rbuf[..n]);
            }
        }
        Ok(())
    }

    pub(crate) fn poll_event(&mut self) -> Option<Event> {
        self.conn.poll_event()
    }

    /// Disconnect: send the notification, wait for its ACK (at most a
    /// second), and report how the connection ended.
    pub(crate) fn close(&mut self) -> Result<CloseReason, PeerError> {
        let now = self.s.now();
        self.conn.close(now);
        // The connection closes itself within its closing time (1 s): when
        // the notification is acknowledged, or unacknowledged after that.
        let until = now + Duration::from_secs(3);
        loop {
            if let Some(r) = self.conn.close_reason() {
                // Flush a last ACK, if any.
                let now = self.s.now();
                while self.conn.poll_transmit(now, &mut self.out) {
                    if self.s.sock.send(&self.out).is_ok() {
                        self.recording.datagram(self.local, self.server, &self.out);
                    }
                }
                return Ok(r);
            }
            if self.s.now() >= until {
                return Ok(CloseReason::TimedOut);
            }
            self.step(until)?;
        }
    }
}

/// A server on one socket.
#[derive(Debug)]
pub(crate) struct Server {
    s: Socket,
    listener: Listener,
    out: Vec<u8>,
    /// Every datagram sent and received goes here too (`proxy -w`).
    pub(crate) recorder: Option<Recorder>,
    /// The write error that stopped the recording, until it is taken.
    pub(crate) record_error: Option<io::Error>,
    /// The address the socket is bound to.
    bound: SocketAddr,
    /// The local address each peer's datagrams use, when the socket is
    /// bound to a wildcard (what the kernel routes to it from).
    locals: std::collections::HashMap<std::net::IpAddr, SocketAddr>,
    /// NetherNet beside RakNet on this socket: datagrams of STUN and DTLS
    /// (RFC 7983's first-byte ranges, which RakNet's never fall in) are
    /// kept for [`Server::drain_diverted`] instead.
    pub(crate) divert: bool,
    /// With `divert`: the other datagrams are dropped (no RakNet here).
    pub(crate) only_diverted: bool,
    diverted: std::collections::VecDeque<(SocketAddr, Vec<u8>)>,
    /// Buffers of diverted datagrams handed on, for the next ones (no
    /// allocation per datagram once the turn's largest has been seen).
    spare: Vec<Vec<u8>>,
    /// Diverted datagrams dropped: more than [`MAX_DIVERTED`] waited.
    pub(crate) diverted_dropped: u64,
}

/// Diverted datagrams waiting, at most.
pub(crate) const MAX_DIVERTED: usize = 4096;

/// Reading datagrams in one step stops after this long: then timers and
/// everything else have their turn, whatever a flood sends.
pub const READ_TURN: Duration = Duration::from_millis(10);

/// Whether a datagram is WebRTC's (STUN, or DTLS: RFC 7983), not RakNet's.
pub(crate) fn is_webrtc(data: &[u8]) -> bool {
    use crate::nethernet::{classify, Demux};
    crate::nethernet::stun::looks_like(data) || classify(data) == Demux::Dtls
}

/// The local address that datagrams to `peer` leave from, on a socket
/// bound to `bound` (its own address unless a wildcard).
fn local_toward(bound: SocketAddr, peer: SocketAddr) -> SocketAddr {
    if !bound.ip().is_unspecified() {
        return bound;
    }
    let routed = UdpSocket::bind(wildcard_for(peer))
        .and_then(|s| s.connect(peer).and_then(|()| s.local_addr()));
    match routed {
        Ok(a) => SocketAddr::new(a.ip(), bound.port()),
        Err(_) => bound,
    }
}

impl Server {
    pub(crate) fn bind(local: SocketAddr, cfg: ServerConfig) -> io::Result<Server> {
        let s = Socket::bind(local)?;
        let bound = s.local_addr()?;
        Ok(Server {
            s,
            listener: Listener::new(cfg, bound),
            out: Vec::new(),
            recorder: None,
            record_error: None,
            bound,
            locals: std::collections::HashMap::new(),
            divert: false,
            only_diverted: false,
            diverted: std::collections::VecDeque::new(),
            spare: Vec::new(),
            diverted_dropped: 0,
        })
    }

    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.s.local_addr()
    }

    /// Every diverted datagram ([`Server::divert`]) handed to `f` with its
    /// sender, in order of arrival.
    pub(crate) fn drain_diverted(&mut self, mut f: impl FnMut(SocketAddr, &[u8])) {
        while let Some((from, d)) = self.diverted.pop_front() {
            f(from, &d);
            self.spare.push(d);
        }
    }

    /// A datagram of ours (not RakNet's) sent from this socket, and
    /// recorded; false when the kernel would not take it yet (it goes
    /// with the next step).
    pub(crate) fn send_other(&mut self, to: SocketAddr, data: &[u8]) -> io::Result<bool> {
        let sent = match self.s.send_to(to, data) {
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => true,
            r => r?,
        };
        if sent {
            self.record(to, data, true);
        }
        Ok(sent)
    }

    /// The socket, for `poll`.
    pub(crate) fn fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.s.sock.as_raw_fd()
    }

    pub(crate) fn now(&self) -> Duration {
        self.s.now()
    }

    /// The unconnected pong payload.
    pub(crate) fn set_pong(&mut self, pong: Vec<u8>) {
        self.listener.set_pong(pong);
    }

    pub(crate) fn listener(&self) -> &Listener {
        &self.listener
    }

    pub(crate) fn send(
        &mut self,
        to: SocketAddr,
        data: &[u8],
        reliability: Reliability,
        channel: u8,
    ) {
        let now = self.s.now();
        self.listener.send(now, to, data, reliability, channel);
    }

    /// Send what is due, wait for a datagram or a timer (at most until
    /// `until`), and handle what came. Errors about single datagrams
    /// (an ICMP error for a client gone) are not fatal.
    pub(crate) fn step(&mut self, until: Duration) -> io::Result<()> {
        let held = self.listener.len();
        if self.s.unblock().unwrap_or(true) {
            let now = self.s.now();
            while let Some(to) = self.listener.poll_transmit(now, &mut self.out) {
                let out = std::mem::take(&mut self.out);
                let sent = self.s.send_to(to, &out).unwrap_or(true);
                if sent {
                    self.record(to, &out, true);
                }
                self.out = out;
                if !sent {
                    break;
                }
            }
        }
        if self.listener.len() < held {
            give_back_memory();
        }
        let wake = if self.listener.is_busy() {
            Duration::ZERO
        } else {
            self.listener.poll_timeout().map_or(until, |t| t.min(until))
        };
        self.s.wait(wake)?;
        let started = Instant::now();
        for k in 0usize.. {
            if k % 64 == 63 && started.elapsed() > READ_TURN {
                break;
            }
            match self.s.recv() {
                Ok(Some((from, n))) => {
                    let now = self.s.now();
                    let data = std::mem::take(&mut self.s.rbuf);
                    self.record(from, &data[..n], false);
                    if self.divert && is_webrtc(&data[..n]) {
                        if self.diverted.len() < MAX_DIVERTED {
                            let mut d = self.spare.pop().unwrap_or_default();
                            d.clear();
                            d.extend_from_slice(&data[..n]);
                            self.diverted.push_back((from, d));
                        } else {
                            self.diverted_dropped += 1;
                        }
                    } else if !(self.divert && self.only_diverted) {
                        self.listener.handle(now, from, &data[..n]);
                    }
                    self.s.rbuf = data;
                }
                Ok(None) => break,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    pub(crate) fn poll_event(&mut self) -> Option<(SocketAddr, Event)> {
        self.listener.poll_event()
    }

    /// A datagram to or from `peer` into the recording, if any (a write
    /// error stops it).
    fn record(&mut self, peer: SocketAddr, data: &[u8], sent: bool) {
        let Some(r) = &mut self.recorder else { return };
        let bound = self.bound;
        if self.locals.len() >= 4096 {
            self.locals.clear();
        }
        let local = *self
            .locals
            .entry(peer.ip())
            .or_insert_with(|| local_toward(bound, peer));
        let (src, dst) = if sent { (local, peer) } else { (peer, local) };
        if let Err(e) = r.record(src, dst, data) {
            self.recorder = None;
            self.record_error = Some(e);
        }
    }
}
