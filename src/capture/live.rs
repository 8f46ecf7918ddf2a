//! Live capture on Linux without any system library: an `AF_PACKET`
//! datagram socket (the kernel strips the link header and hands over IP
//! packets), a classic BPF program in the kernel that keeps only UDP, ICMP
//! and ICMPv6 (and IPv6 fragments), and the kernel's drop counters.
//!
//! On a loopback interface the kernel shows every packet twice, outgoing and
//! incoming; the outgoing copy is skipped, as libpcap does.

// AF_PACKET sockets, interface flags, SIGINT: socket, setsockopt, ioctl, recvfrom, poll, signal.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The largest packet read (an IPv4/IPv6 packet is at most 64 KiB).
const SNAPLEN: usize = 65_535;
const PACKET_OUTGOING: u8 = 4;
/// Network-layer offset for BPF loads on a packet socket (`SKF_NET_OFF`).
const SKF_NET_OFF: u32 = 0xfff0_0000u32;

/// An interface the system has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    pub(crate) index: u32,
    pub(crate) name: String,
    pub(crate) loopback: bool,
    pub(crate) up: bool,
}

impl std::fmt::Display for Interface {
    /// `-D`'s line: `1. lo (loopback)`, `3. eth1 (down)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}. {}", self.index, self.name)?;
        match (self.loopback, self.up) {
            (false, true) => Ok(()),
            (true, true) => f.write_str(" (loopback)"),
            (false, false) => f.write_str(" (down)"),
            (true, false) => f.write_str(" (loopback, down)"),
        }
    }
}

/// Set by the signal handler of [`stop_on_interrupt`].
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// A flag that SIGINT or SIGTERM sets (for [`LiveOptions::stop`]): a live
/// capture then ends as at the end of a file, its summary still printed.
pub fn stop_on_interrupt() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    use std::sync::atomic::Ordering;
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_interrupt as *const () as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGTERM,
            on_interrupt as *const () as libc::sighandler_t,
        );
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = std::sync::Arc::clone(&stop);
    std::thread::spawn(move || loop {
        if INTERRUPTED.load(Ordering::Relaxed) {
            flag.store(true, Ordering::Relaxed);
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    });
    stop
}

/// `live -D`: every interface, one a line, then `any`.
pub fn list_interfaces(out: &mut dyn io::Write) -> io::Result<()> {
    for i in interfaces()? {
        writeln!(out, "{i}")?;
    }
    writeln!(out, "any (all interfaces)")
}

/// Every interface, in index order (`-D`).
pub fn interfaces() -> io::Result<Vec<Interface>> {
    let mut out = Vec::new();
    // SAFETY: if_nameindex returns a NULL-terminated array we free below.
    unsafe {
        let list = libc::if_nameindex();
        if list.is_null() {
            return Err(io::Error::last_os_error());
        }
        let mut p = list;
        while (*p).if_index != 0 && !(*p).if_name.is_null() {
            let name = std::ffi::CStr::from_ptr((*p).if_name)
                .to_string_lossy()
                .into_owned();
            let (up, loopback) = flags(&name).unwrap_or((false, false));
            out.push(Interface {
                index: (*p).if_index,
                name,
                loopback,
                up,
            });
            p = p.add(1);
        }
        libc::if_freenameindex(list);
    }
    out.sort_by_key(|i| i.index);
    Ok(out)
}

/// (up, loopback) of an interface, by SIOCGIFFLAGS.
fn flags(name: &str) -> io::Result<(bool, bool)> {
    // SAFETY: a plain UDP socket for the ioctl, closed by OwnedFd.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ifreq is plain old data; zeroed is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req
        .ifr_name
        .iter_mut()
        .zip(name.bytes().take(libc::IFNAMSIZ - 1))
    {
        *d = s as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS fills ifr_ifru.ifru_flags of a valid ifreq.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the union member SIOCGIFFLAGS wrote.
    let f = unsafe { req.ifr_ifru.ifru_flags } as libc::c_int;
    Ok((f & libc::IFF_UP != 0, f & libc::IFF_LOOPBACK != 0))
}

/// Why live capture cannot start.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// Not allowed to open a packet socket.
    #[error(
        "live capture needs root or the CAP_NET_RAW capability: run it with sudo, or grant it once with \
         `sudo setcap cap_net_raw+ep {exe}`"
    )]
    Permission {
        /// The executable, for the `setcap` command suggested.
        exe: String,
    },
    /// The interface named does not exist.
    #[error("no such interface: {0} (raknet-dissect live -D lists them)")]
    NoInterface(String),
    /// libpcap did not compile the filter.
    #[error("-f: {0}")]
    Filter(String),
    /// Opening or reading the socket failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Kernel counters of a packet socket (`PACKET_STATISTICS`), since it opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelStats {
    /// Packets the filter passed.
    pub packets: u64,
    /// Packets dropped because the socket's buffer was full.
    pub drops: u64,
}

/// An open packet socket on one interface (or all, for `any`).
#[derive(Debug)]
pub(crate) struct LiveSocket {
    fd: OwnedFd,
    loopbacks: Vec<u32>,
    buf: Vec<u8>,
    stats: KernelStats,
}

fn bpf(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// Accept IPv4 UDP/ICMP/TCP (fragments included: their protocol field is
/// still set) and IPv6 UDP, ICMPv6, TCP and fragment headers (TCP for
/// NetherNet's HTTP signaling); drop the rest in the kernel, and the outgoing copy of every packet on a loopback interface
/// (`loopbacks`), as libpcap does, so that each is queued once.
fn udp_filter(loopbacks: &[u32]) -> Vec<libc::sock_filter> {
    const LDB: u16 = (libc::BPF_LD | libc::BPF_B | libc::BPF_ABS) as u16;
    const LDW: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const AND: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
    const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    // Ancillary loads (SKF_AD_OFF + SKF_AD_PKTTYPE / SKF_AD_IFINDEX).
    const AD_PKTTYPE: u32 = (-0x1000i32 + 4) as u32;
    const AD_IFINDEX: u32 = (-0x1000i32 + 8) as u32;
    let mut prog = Vec::new();
    if !loopbacks.is_empty() && loopbacks.len() < 100 {
        let n = loopbacks.len() as u8;
        prog.push(bpf(LDW, 0, 0, AD_PKTTYPE));
        // Not outgoing: skip the ifindex checks, the jump and the drop.
        prog.push(bpf(JEQ, 0, n + 3, u32::from(PACKET_OUTGOING)));
        prog.push(bpf(LDW, 0, 0, AD_IFINDEX));
        for (i, lo) in loopbacks.iter().enumerate() {
            // A loopback: to the drop, past the other checks and the jump.
            prog.push(bpf(JEQ, n - i as u8, 0, *lo));
        }
        // Outgoing on another interface: past the drop.
        prog.push(bpf((libc::BPF_JMP | libc::BPF_JA) as u16, 0, 0, 1));
        prog.push(bpf(RET, 0, 0, 0));
    }
    prog.extend([
        bpf(LDB, 0, 0, SKF_NET_OFF),     // 0: version nibble
        bpf(AND, 0, 0, 0xf0),            // 1
        bpf(JEQ, 0, 5, 0x40),            // 2: IPv4? else 8
        bpf(LDB, 0, 0, SKF_NET_OFF + 9), // 3: protocol
        bpf(JEQ, 10, 0, 17),             // 4: UDP -> accept (15)
        bpf(JEQ, 9, 0, 1),               // 5: ICMP -> accept
        bpf(JEQ, 8, 0, 6),               // 6: TCP -> accept
        bpf(RET, 0, 0, 0),               // 7: drop
        bpf(JEQ, 0, 5, 0x60),            // 8: IPv6? else drop (14)
        bpf(LDB, 0, 0, SKF_NET_OFF + 6), // 9: next header
        bpf(JEQ, 4, 0, 17),              // 10: UDP -> accept
        bpf(JEQ, 3, 0, 58),              // 11: ICMPv6 -> accept
        bpf(JEQ, 2, 0, 44),              // 12: fragment -> accept
        bpf(JEQ, 1, 0, 6),               // 13: TCP -> accept
        bpf(RET, 0, 0, 0),               // 14: drop
        bpf(RET, 0, 0, SNAPLEN as u32),  // 15: accept whole
    ]);
    prog
}

impl LiveSocket {
    /// Open a packet socket on `interface` ("any" for all).
    pub(crate) fn open(interface: &str) -> Result<LiveSocket, LiveError> {
        let all = interfaces()?;
        let index = if interface == "any" {
            0
        } else {
            let c =
                CString::new(interface).map_err(|_| LiveError::NoInterface(interface.into()))?;
            // SAFETY: a valid C string.
            let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
            if i == 0 {
                return Err(LiveError::NoInterface(interface.into()));
            }
            i
        };
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: socket(2) with constant arguments.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                proto.into(),
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(match e.raw_os_error() {
                Some(libc::EPERM) | Some(libc::EACCES) => LiveError::Permission {
                    exe: std::env::current_exe()
                        .map(|p| p.display().to_string())
                        .unwrap_or_else(|_| "raknet-dissect".into()),
                },
                _ => LiveError::Io(e),
            });
        }
        // SAFETY: fd is a socket we own from here on.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let raw = fd.as_raw_fd();
        // The filter first, then bind: nothing unfiltered is queued.
        let loopbacks: Vec<u32> = all.iter().filter(|i| i.loopback).map(|i| i.index).collect();
        let prog = udp_filter(&loopbacks);
        let fprog = libc::sock_fprog {
            len: prog.len() as u16,
            filter: prog.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: a valid sock_fprog pointing at `prog`, alive for the call.
        let r = unsafe {
            libc::setsockopt(
                raw,
                libc::SOL_SOCKET,
                libc::SO_ATTACH_FILTER,
                &fprog as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error().into());
        }
        let rcvbuf: libc::c_int = 32 << 20;
        // SAFETY: an int option; failure leaves the default, which still works.
        unsafe {
            libc::setsockopt(
                raw,
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                &rcvbuf as *const _ as *const libc::c_void,
                4,
            );
            libc::setsockopt(
                raw,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                &rcvbuf as *const _ as *const libc::c_void,
                4,
            );
        }
        // SAFETY: sockaddr_ll is plain old data.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = index as i32;
        // SAFETY: a valid sockaddr_ll of the right size.
        let r = unsafe {
            libc::bind(
                raw,
                &sll as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error().into());
        }
        let mut s = LiveSocket {
            fd,
            loopbacks,
            buf: vec![0; SNAPLEN],
            stats: KernelStats::default(),
        };
        s.read_stats(); // the counters reset when read: start from zero
        s.stats = KernelStats::default();
        Ok(s)
    }

    /// The next IP packet and its time, waiting at most `wait`; `Ok(None)`
    /// when none came in time.
    pub(crate) fn next(&mut self, wait: Duration) -> io::Result<Option<(Duration, &[u8], u32)>> {
        let mut polled = false;
        loop {
            // SAFETY: sockaddr_ll is plain old data.
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            // SAFETY: buf and from are valid for writes of their sizes.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr() as *mut libc::c_void,
                    self.buf.len(),
                    libc::MSG_TRUNC | libc::MSG_DONTWAIT,
                    &mut from as *mut _ as *mut libc::sockaddr,
                    &mut len,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::Interrupted => continue,
                    // Nothing queued: wait once, then try again.
                    io::ErrorKind::WouldBlock if !polled => {
                        polled = true;
                        let mut pfd = libc::pollfd {
                            fd: self.fd.as_raw_fd(),
                            events: libc::POLLIN,
                            revents: 0,
                        };
                        let ms = wait.as_millis().min(i32::MAX as u128) as i32;
                        // SAFETY: one valid pollfd.
                        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
                        if r <= 0 {
                            return Ok(None); // timed out or interrupted
                        }
                        continue;
                    }
                    io::ErrorKind::WouldBlock => return Ok(None),
                    _ => return Err(e),
                }
            }
            if from.sll_pkttype == PACKET_OUTGOING
                && self.loopbacks.contains(&(from.sll_ifindex as u32))
            {
                continue; // the incoming copy follows
            }
            let ts = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or(Duration::ZERO);
            let wire_len = n as usize;
            let kept = wire_len.min(self.buf.len());
            return Ok(Some((ts, &self.buf[..kept], wire_len as u32)));
        }
    }

    /// Add the kernel's counters since the last read (they reset when read).
    fn read_stats(&mut self) {
        // SAFETY: tpacket_stats is plain old data.
        let mut st: libc::tpacket_stats = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: valid pointers for PACKET_STATISTICS.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                &mut st as *mut _ as *mut libc::c_void,
                &mut len,
            )
        };
        if r == 0 {
            self.stats.packets += u64::from(st.tp_packets);
            self.stats.drops += u64::from(st.tp_drops);
        }
    }

    /// The kernel's counters so far.
    pub(crate) fn stats(&mut self) -> KernelStats {
        self.read_stats();
        self.stats
    }
}

/// What `live` captures and where it stops.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// An interface name, or "any".
    pub(crate) interface: String,
    /// Only datagrams (and ICMP errors quoting datagrams) that match.
    pub(crate) filter: Option<super::filter::Filter>,
    /// With the `libpcap` feature: a filter in tcpdump's full syntax, given
    /// to libpcap (which then captures, instead of the packet socket).
    #[cfg_attr(not(feature = "libpcap"), allow(dead_code))]
    pub(crate) bpf: Option<String>,
    /// Capture through libpcap (the `libpcap` feature), not the packet socket.
    pub(crate) libpcap: bool,
    /// Also write what is captured (and matches) to this pcapng file.
    pub write: Option<std::path::PathBuf>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Set (e.g. by a Ctrl-C handler) to stop.
    pub stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// The kernel's counters, filled in when the capture ends.
    pub kernel: std::sync::Arc<std::sync::Mutex<KernelStats>>,
}

impl LiveOptions {
    /// A capture on `interface` (or "any") with `capture_filter` (`-f`): in
    /// tcpdump's full syntax when built with libpcap (which then captures),
    /// otherwise our expressions over the packet socket. Runs until
    /// [`LiveOptions::stop`] is set.
    pub fn new(
        interface: &str,
        capture_filter: Option<&str>,
    ) -> Result<Self, super::filter::FilterError> {
        let libpcap = cfg!(feature = "libpcap");
        let filter = capture_filter
            .filter(|_| !libpcap)
            .map(super::filter::Filter::parse)
            .transpose()?;
        Ok(LiveOptions {
            interface: interface.to_string(),
            filter,
            bpf: capture_filter.filter(|_| libpcap).map(str::to_string),
            libpcap,
            write: None,
            duration: None,
            stop: Default::default(),
            kernel: Default::default(),
        })
    }
}

enum Backend {
    Packet(LiveSocket),
    #[cfg(feature = "libpcap")]
    Pcap(Box<pcap::Capture<pcap::Active>>, u32),
}

/// The live source behind a [`super::CaptureReader`].
pub(crate) struct LiveSource {
    backend: Backend,
    opts: LiveOptions,
    writer: Option<super::write::Recorder>,
    /// The packet being decoded, reused from one to the next.
    packet: Vec<u8>,
    deadline: Option<std::time::Instant>,
}

/// How long one wait for a packet lasts before the stop conditions are checked again.
const POLL: Duration = Duration::from_millis(100);

impl LiveSource {
    pub(crate) fn open(opts: LiveOptions) -> Result<LiveSource, LiveError> {
        let (backend, linktype) = if opts.libpcap {
            open_pcap(&opts)?
        } else {
            (
                Backend::Packet(LiveSocket::open(&opts.interface)?),
                LINKTYPE_RAW,
            )
        };
        let writer = match &opts.write {
            Some(p) => Some(super::write::Recorder::create_for(
                p,
                pcap_file::DataLink::from(linktype),
            )?),
            None => None,
        };
        Ok(LiveSource {
            backend,
            deadline: opts.duration.map(|d| std::time::Instant::now() + d),
            opts,
            writer,
            packet: Vec::new(),
        })
    }

    fn end(&mut self) -> super::step::Step {
        if let Some(w) = &mut self.writer {
            let _ = w.flush();
        }
        let stats = match &mut self.backend {
            Backend::Packet(s) => s.stats(),
            #[cfg(feature = "libpcap")]
            Backend::Pcap(c, _) => c
                .stats()
                .map(|s| KernelStats {
                    packets: u64::from(s.received),
                    drops: u64::from(s.dropped),
                })
                .unwrap_or_default(),
        };
        if let Ok(mut k) = self.opts.kernel.lock() {
            *k = stats;
        }
        super::step::Step::End
    }

    pub(crate) fn step(&mut self, decoder: &mut super::decode::Decoder) -> super::step::Step {
        use super::step::{Failure, Step};
        use std::sync::atomic::Ordering;
        if self.opts.stop.load(Ordering::Relaxed)
            || self
                .deadline
                .is_some_and(|d| std::time::Instant::now() >= d)
        {
            return self.end();
        }
        let wait = match self.deadline {
            Some(d) => d
                .saturating_duration_since(std::time::Instant::now())
                .min(POLL),
            None => POLL,
        };
        let packet = &mut self.packet;
        packet.clear();
        let (ts, orig_len, linktype) = match &mut self.backend {
            Backend::Packet(sock) => match sock.next(wait) {
                Ok(Some((ts, p, n))) => {
                    packet.extend_from_slice(p);
                    (ts, n, LINKTYPE_RAW)
                }
                Ok(None) => return Step::Skipped,
                Err(e) => return Step::Failed(Failure::Io(e)),
            },
            #[cfg(feature = "libpcap")]
            Backend::Pcap(c, linktype) => {
                // Non-blocking: wait on its descriptor ourselves, so that a
                // stop is seen within POLL even when nothing comes.
                let mut polled = false;
                loop {
                    match c.next_packet() {
                        Ok(p) => {
                            let ts = Duration::from_secs(p.header.ts.tv_sec.max(0) as u64)
                                + Duration::from_micros(p.header.ts.tv_usec.max(0) as u64);
                            packet.extend_from_slice(p.data);
                            break (ts, p.header.len, *linktype);
                        }
                        Err(pcap::Error::TimeoutExpired) if !polled => {
                            polled = true;
                            let mut pfd = libc::pollfd {
                                fd: c.as_raw_fd(),
                                events: libc::POLLIN,
                                revents: 0,
                            };
                            // SAFETY: one valid pollfd.
                            unsafe { libc::poll(&mut pfd, 1, wait.as_millis() as i32) };
                        }
                        Err(pcap::Error::TimeoutExpired) => return Step::Skipped,
                        Err(e) => {
                            return Step::Failed(Failure::Io(io::Error::other(e.to_string())))
                        }
                    }
                }
            }
        };
        let packet = &self.packet;
        let datagram = decoder.decode(linktype, ts, packet, orig_len);
        let keep = match (&datagram, &self.opts.filter) {
            (Some(d), Some(f)) => f.matches(d.src, d.dst),
            _ => true,
        };
        if !keep {
            if let Some(d) = &datagram {
                decoder.forget(d);
            }
            return Step::Skipped;
        }
        if let Some(w) = &mut self.writer {
            if let Err(e) = w.write_ip(ts, packet, orig_len) {
                return Step::Failed(Failure::Io(e));
            }
        }
        match datagram {
            Some(d) => Step::Datagram(d),
            None => Step::Skipped,
        }
    }
}

/// `LINKTYPE_RAW`: the packet begins with its IPv4 or IPv6 header.
const LINKTYPE_RAW: u32 = 101;

#[cfg(not(feature = "libpcap"))]
fn open_pcap(_: &LiveOptions) -> Result<(Backend, u32), LiveError> {
    Err(LiveError::Io(io::Error::other(
        "this build has no libpcap: build with --features libpcap",
    )))
}

/// libpcap on the interface, in immediate mode, keeping UDP and ICMP (and
/// the user's filter, in tcpdump's syntax).
#[cfg(feature = "libpcap")]
fn open_pcap(opts: &LiveOptions) -> Result<(Backend, u32), LiveError> {
    let permission = |e: &pcap::Error| {
        let t = e.to_string().to_ascii_lowercase();
        t.contains("permission") || t.contains("not permitted")
    };
    let to_err = |e: pcap::Error| {
        if permission(&e) {
            LiveError::Permission {
                exe: std::env::current_exe()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|_| "raknet-dissect".into()),
            }
        } else if e.to_string().contains("No such device") {
            LiveError::NoInterface(opts.interface.clone())
        } else {
            LiveError::Io(io::Error::other(e.to_string()))
        }
    };
    let mut cap = pcap::Capture::from_device(opts.interface.as_str())
        .map_err(to_err)?
        .immediate_mode(true)
        .timeout(POLL.as_millis() as i32)
        .snaplen(SNAPLEN as i32)
        .buffer_size(32 << 20)
        .open()
        .map_err(to_err)?;
    // TCP: NetherNet's HTTP signaling.
    let base = "udp or icmp or icmp6 or tcp or (ip6 and ip6[6] == 44)";
    let program = match &opts.bpf {
        Some(f) => format!("({base}) and ({f})"),
        None => base.to_string(),
    };
    cap.filter(&program, true)
        .map_err(|e| LiveError::Filter(e.to_string()))?;
    let cap = cap.setnonblock().map_err(to_err)?;
    let linktype = cap.get_datalink().0 as u32;
    Ok((Backend::Pcap(Box::new(cap), linktype), linktype))
}
