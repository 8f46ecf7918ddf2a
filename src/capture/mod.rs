//! Capture sources: pcap and pcapng files (or standard input) turned into a
//! stream of UDP datagrams with their timestamps and endpoints.
//!
//! Owns link-layer decoding (Ethernet with VLAN, Linux cooked v1/v2, raw IP,
//! BSD loopback), IPv4/IPv6 fragment reassembly in a bounded pool, and the
//! detection of packets cut by the snapshot length. Streaming: memory does not
//! grow with the file size.
//!
//! ICMP and ICMPv6 errors that quote a UDP datagram come out too, as that
//! datagram with [`UdpDatagram::icmp`] set: a client that sends to a port
//! where nothing listens gets "port unreachable" back from the kernel, and
//! the error names the client's flow. Read are ICMPv4 destination
//! unreachable (3), time exceeded (11) and parameter problem (12), and
//! ICMPv6 destination unreachable (1), packet too big (2), time exceeded (3)
//! and parameter problem (4), whose quote holds an IP header (with its IPv4
//! options or IPv6 extension headers) and the whole 8-byte UDP header. Other
//! ICMP messages (echo, redirect, a quote cut before the end of the UDP
//! header, a quoted later fragment or another protocol) count as not UDP.
//!
//! ```no_run
//! # use raknet_dissect::capture::CaptureReader;
//! let mut reader = CaptureReader::open("capture.pcapng".as_ref())?;
//! while let Some(datagram) = reader.next_datagram() {
//!     let datagram = datagram?; // an error is final: warn and stop
//!     println!("{} {} -> {} {} bytes", datagram.frame, datagram.src, datagram.dst, datagram.payload.len());
//! }
//! # Ok::<(), raknet_dissect::capture::CaptureError>(())
//! ```

mod decode;
mod defrag;
pub mod filter;
mod icmp;
mod ipv6;
mod link;
pub mod live;
mod source;
mod step;
pub mod tcp;
#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod testutil;
pub mod write;

use std::fmt;
use std::io::{self, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use decode::Decoder;
pub(crate) use defrag::DefragLimits;
pub(crate) use icmp::{IcmpError, IcmpKind};
use source::{Source, Step};

/// One UDP datagram taken from a capture, or the UDP datagram quoted by an
/// ICMP error (`icmp` is then set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpDatagram {
    /// 1-based frame number in the capture (of the frame that completed it,
    /// for a reassembled IP datagram; of the ICMP message, for an error).
    pub frame: u64,
    /// Capture timestamp, since the Unix epoch (of the ICMP message, for an
    /// error).
    pub ts: Duration,
    /// The sender's endpoint. For an ICMP error, the quoted datagram's: the
    /// host the error goes back to, not the one that sent the error.
    pub src: SocketAddr,
    /// The receiver's endpoint. For an ICMP error, the quoted datagram's
    /// (for port unreachable, the port nobody listens on).
    pub dst: SocketAddr,
    /// The UDP payload bytes present in the capture. For an ICMP error, the
    /// bytes of the quoted payload (often only the first few, or none).
    pub payload: Vec<u8>,
    /// The payload length announced by the UDP header; larger than
    /// `payload.len()` when the snapshot length cut the packet, or when an
    /// ICMP error quoted only part of the datagram.
    pub udp_len: usize,
    /// `None` for a datagram seen on the wire. `Some` when this datagram was
    /// not captured itself but quoted by an ICMP or ICMPv6 error: it is
    /// what the error is about (a datagram `src` sent earlier to `dst`), not
    /// a new datagram.
    pub icmp: Option<IcmpError>,
    /// `Some` when this is not a UDP datagram but a TCP segment (its
    /// ports in `src` and `dst`, its payload in `payload`), which only a
    /// reader asked for them hands out ([`CaptureReader::with_tcp`]).
    pub tcp: Option<TcpSegment>,
}

/// Keys a capture carries for the packets after them: a pcapng Decryption
/// Secrets Block (section 4.7 of the pcapng specification), whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secrets {
    /// The secrets type ([`Secrets::TLS_KEY_LOG`], or another the
    /// specification registers).
    pub kind: u32,
    /// The secrets, as the type says (for TLS, NSS key-log lines).
    pub data: Vec<u8>,
}

impl Secrets {
    /// `TLSK`: TLS and DTLS secrets as NSS key-log lines (`CLIENT_RANDOM ...`),
    /// as Wireshark's `editcap --inject-secrets tls,FILE` writes them.
    pub const TLS_KEY_LOG: u32 = 0x544c_534b;
    /// `BDKL`, ours (not in the pcapng registry): Bedrock's keys as key-log
    /// lines (`BEDROCK_SALT_KEY`, `BEDROCK_KEY`, ...: docs/proxy.md), as
    /// `proxy -w` writes them; `game` and the others read them.
    pub const BEDROCK_KEY_LOG: u32 = 0x4244_4b4c;
    /// The block type of a Decryption Secrets Block.
    pub const BLOCK: u32 = 0x0000_000A;
}

/// What a TCP segment's header says of its place in its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSegment {
    /// Its sequence number.
    pub seq: u32,
    /// SYN: the stream starts after this number.
    pub syn: bool,
    /// FIN: the sender's stream ends with this segment.
    pub fin: bool,
    /// RST: the connection was reset.
    pub rst: bool,
}

impl UdpDatagram {
    /// True when the capture holds fewer payload bytes than the UDP header
    /// announced (always so for an ICMP error that quotes only part of the
    /// datagram).
    pub(crate) fn truncated(&self) -> bool {
        self.payload.len() < self.udp_len
    }
}

/// The container format of a capture, told by its magic number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CaptureFormat {
    Pcap,
    PcapNg,
}

impl fmt::Display for CaptureFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CaptureFormat::Pcap => "pcap",
            CaptureFormat::PcapNg => "pcapng",
        })
    }
}

/// What became of the frames read so far. A frame may count twice: a
/// truncated datagram in `udp` and `truncated`, the fragment that completes
/// a datagram in `udp` and `fragments_reassembled`. An ICMP error returned
/// as the datagram it quotes counts in `icmp_errors` only.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CaptureStats {
    /// Packet records read (pcap records; pcapng enhanced, simple and obsolete packet blocks).
    pub frames: u64,
    /// UDP datagrams returned, reassembled ones counted once (not the ICMP
    /// errors: see `icmp_errors`).
    pub udp: u64,
    /// ICMP and ICMPv6 errors returned as the UDP datagram they quote (with
    /// [`UdpDatagram::icmp`] set).
    pub(crate) icmp_errors: u64,
    /// Frames that are not UDP: ARP, TCP, ICMP other than the errors
    /// counted in `icmp_errors`, other ethertypes or IP protocols.
    pub(crate) non_udp: u64,
    /// Frames of a link type this reader does not decode.
    pub(crate) unsupported_link: u64,
    /// IP fragments that became part of a reassembled datagram.
    pub(crate) fragments_reassembled: u64,
    /// IP fragments given up: evicted, timed out, inconsistent, cut by the
    /// snapshot length, or still incomplete at the end of the capture.
    pub(crate) fragments_dropped: u64,
    /// Frames cut by the snapshot length: returned with a partial payload
    /// (see [`UdpDatagram::truncated`]), or skipped when a header itself was cut.
    pub(crate) truncated: u64,
    /// Frames skipped because a link, IP or UDP header is malformed.
    pub(crate) bad_ip: u64,
    /// Packet records too malformed to read (bad interface id, lengths
    /// beyond their block), skipped.
    pub(crate) bad_records: u64,
}

/// Why a capture cannot be read, or stopped being readable.
///
/// Every error from [`CaptureReader::next_datagram`] is final: the datagrams
/// returned before it are good, nothing follows it.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The file did not open.
    #[error("{}: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// Why it did not open.
        source: io::Error,
    },
    /// The input is not a pcap or pcapng file.
    #[error("{name}: not a pcap or pcapng file ({reason})")]
    NotACapture {
        /// The input's name in messages (a path, or "standard input").
        name: String,
        /// What its first bytes were instead.
        reason: String,
    },
    /// The file ends in the middle of a record (e.g. cut with `head -c`, or
    /// still being written). `frame` is the last complete frame.
    #[error("capture cut short after frame {frame}: {detail}")]
    CutShort {
        /// The last complete frame.
        frame: u64,
        /// What the reader said.
        detail: String,
    },
    /// A block that cannot be read past: broken framing (lengths that
    /// disagree), a record larger than the read buffer, or a section or
    /// interface description that pcap-file refuses. `frame` is the last
    /// complete frame.
    #[error("malformed capture after frame {frame}: {detail}")]
    Malformed {
        /// The last complete frame.
        frame: u64,
        /// What is wrong with the block.
        detail: String,
    },
    /// The input itself failed (not a format problem).
    #[error("read error after frame {frame}: {source}")]
    Io {
        /// The last complete frame.
        frame: u64,
        /// The read error.
        source: io::Error,
    },
}

/// Streaming reader of UDP datagrams from a pcap or pcapng capture.
///
/// Reads one record at a time into a fixed buffer, so memory stays constant
/// whatever the file size; the source need not be seekable.
/// `CaptureReader::in_background` moves the reading and decoding to a
/// thread of its own, a bounded number of batches ahead of the caller.
pub struct CaptureReader {
    name: String,
    format: CaptureFormat,
    engine: Engine,
    done: bool,
    /// Secrets read before the datagram last handed out, not yet taken.
    secrets: Vec<Secrets>,
}

#[allow(clippy::large_enum_variant)] // one per reader, never moved after opening
enum Engine {
    Inline { source: Source, decoder: Decoder },
    Background(Background),
}

/// Secrets blocks, and their bytes, held at most before the datagram they
/// precede (a file of nothing else must not fill memory).
const MAX_PENDING_SECRETS: (usize, usize) = (4096, 16 << 20);

/// `s`, if the secrets pending before the next datagram leave room for
/// it; otherwise a bad record.
fn room_for<'a>(
    pending: impl Iterator<Item = &'a Secrets>,
    s: Secrets,
    decoder: &mut Decoder,
) -> Option<Secrets> {
    let (blocks, most) = MAX_PENDING_SECRETS;
    let (n, bytes) = pending.fold((0, 0usize), |(n, b), p| (n + 1, b + p.data.len()));
    if n < blocks && bytes.saturating_add(s.data.len()) <= most {
        Some(s)
    } else {
        decoder.bad_record();
        None
    }
}

/// Datagrams per batch handed from the reading thread to the caller.
const BATCH: usize = 512;
/// Batches in flight: memory ahead of the caller is bounded by
/// `BATCH * BATCHES_AHEAD` datagrams.
const BATCHES_AHEAD: usize = 2;

/// A reader that counts what it reads.
struct Counted<R> {
    inner: R,
    n: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n.fetch_add(k as u64, Ordering::Relaxed);
        Ok(k)
    }
}

struct Batch {
    items: Vec<Result<UdpDatagram, CaptureError>>,
    /// Secrets, each with the index of the item it came before.
    secrets: Vec<(usize, Secrets)>,
    /// The reader's counters after the last item of the batch.
    stats: CaptureStats,
}

struct Background {
    batches: std::sync::mpsc::Receiver<Batch>,
    /// Payload buffers going back to the reading thread for reuse.
    spent: std::sync::mpsc::Sender<Vec<Vec<u8>>>,
    spent_batch: Vec<Vec<u8>>,
    current: std::vec::IntoIter<Result<UdpDatagram, CaptureError>>,
    /// The current batch's secrets, and the index of its next item.
    secrets: std::collections::VecDeque<(usize, Secrets)>,
    index: usize,
    stats: CaptureStats,
}

impl CaptureReader {
    /// Opens a capture file; "-" means standard input.
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        Self::open_counted(path, None)
    }

    /// [`open`](Self::open), adding to `consumed` the bytes read from the
    /// file as they are read (for a progress bar; any thread may load it).
    pub(crate) fn open_counted(
        path: &Path,
        consumed: Option<Arc<AtomicU64>>,
    ) -> Result<Self, CaptureError> {
        if path.as_os_str() == "-" {
            return Self::from_named_reader(Box::new(io::stdin()), "standard input".into());
        }
        let file = std::fs::File::open(path).map_err(|source| CaptureError::Open {
            path: path.to_owned(),
            source,
        })?;
        let reader: Box<dyn Read + Send> = match consumed {
            Some(n) => Box::new(Counted { inner: file, n }),
            None => Box::new(file),
        };
        // A read error before any record (a directory, say) is about the file.
        Self::from_named_reader(reader, path.display().to_string()).map_err(|e| match e {
            CaptureError::Io { frame: 0, source } => CaptureError::Open {
                path: path.to_owned(),
                source,
            },
            other => other,
        })
    }

    /// Captures live on an interface (Linux `AF_PACKET`; needs root or
    /// CAP_NET_RAW). Datagrams come as from a file, until `opts.stop` is set
    /// or `opts.duration` passes; TCP segments too ([`Self::with_tcp`]),
    /// for NetherNet's signaling.
    pub fn live(opts: live::LiveOptions) -> Result<Self, live::LiveError> {
        let name = format!("interface {}", opts.interface);
        let source = live::LiveSource::open(opts)?;
        let reader = CaptureReader {
            name,
            format: CaptureFormat::PcapNg,
            engine: Engine::Inline {
                source: Source::Live(Box::new(source)),
                decoder: Decoder::new(DefragLimits::default()),
            },
            done: false,
            secrets: Vec::new(),
        };
        Ok(reader.with_tcp())
    }

    /// Reads a capture from any byte stream (a pipe, a socket, memory). The
    /// format is told from the first four bytes.
    pub fn from_reader(r: Box<dyn Read + Send>) -> Result<Self, CaptureError> {
        Self::from_named_reader(r, "input".into())
    }

    fn from_named_reader(r: Box<dyn Read + Send>, name: String) -> Result<Self, CaptureError> {
        let (source, format) = Source::open(r, &name)?;
        Ok(CaptureReader {
            name,
            format,
            engine: Engine::Inline {
                source,
                decoder: Decoder::new(DefragLimits::default()),
            },
            done: false,
            secrets: Vec::new(),
        })
    }

    /// Hands out TCP segments too (`UdpDatagram::tcp`), before reading (and
    /// before reading on a thread of its own): for NetherNet's HTTP signaling.
    pub fn with_tcp(mut self) -> Self {
        if let Engine::Inline { decoder, .. } = &mut self.engine {
            decoder.tcp = true;
        }
        self
    }

    /// Replaces the limits of the fragment reassembly pool (before reading,
    /// and before [`Self::in_background`]).
    #[cfg(test)]
    pub(crate) fn with_defrag_limits(mut self, limits: DefragLimits) -> Self {
        if let Engine::Inline { decoder, .. } = &mut self.engine {
            decoder.set_defrag_limits(limits);
        }
        self
    }

    /// Reads and decodes on a thread of its own, in batches of datagrams at
    /// most a few batches ahead of the caller: on a machine with two cores,
    /// the file is read while the caller dissects. Same datagrams, same
    /// errors, same order. [`Self::stats`] then counts what the thread has
    /// read so far (exact once `next_datagram` returned `None` or an error).
    pub(crate) fn in_background(mut self) -> Self {
        let Engine::Inline {
            mut source,
            mut decoder,
        } = std::mem::replace(&mut self.engine, Engine::Background(Background::idle()))
        else {
            return self;
        };
        let (batch_tx, batches) = std::sync::mpsc::sync_channel::<Batch>(BATCHES_AHEAD);
        let (spent, spent_rx) = std::sync::mpsc::channel::<Vec<Vec<u8>>>();
        let spawned = std::thread::Builder::new()
            .name("capture".into())
            .spawn(move || {
                let mut done = false;
                while !done {
                    while let Ok(buffers) = spent_rx.try_recv() {
                        buffers.into_iter().for_each(|b| decoder.recycle(b));
                    }
                    let mut items = Vec::with_capacity(BATCH);
                    let mut secrets = Vec::new();
                    while items.len() < BATCH {
                        match source.step(&mut decoder) {
                            Step::Datagram(d) => items.push(Ok(d)),
                            Step::Secrets(s) => {
                                let pending = secrets.iter().map(|(_, s)| s);
                                if let Some(s) = room_for(pending, s, &mut decoder) {
                                    secrets.push((items.len(), s));
                                }
                            }
                            Step::Skipped => {}
                            Step::End => {
                                decoder.finish();
                                done = true;
                                break;
                            }
                            Step::Failed(failure) => {
                                decoder.finish();
                                items.push(Err(failure.into_error(decoder.stats.frames)));
                                done = true;
                                break;
                            }
                        }
                    }
                    let stats = decoder.stats.clone();
                    let batch = Batch {
                        items,
                        secrets,
                        stats,
                    };
                    if batch_tx.send(batch).is_err() {
                        break; // the caller stopped reading
                    }
                }
            });
        match spawned {
            Ok(_) => {
                self.engine = Engine::Background(Background {
                    batches,
                    spent,
                    ..Background::idle()
                });
            }
            // No thread to be had: the source went with the closure, so
            // the error is all there is to read.
            Err(source) => {
                self.engine = Engine::Background(Background {
                    current: vec![Err(CaptureError::Io { frame: 0, source })].into_iter(),
                    ..Background::idle()
                });
            }
        }
        self
    }

    /// Next UDP datagram; `None` at the end. An `Err` is final (e.g. file cut
    /// short in the middle of a record): the caller prints a warning and stops.
    pub fn next_datagram(&mut self) -> Option<Result<UdpDatagram, CaptureError>> {
        match &mut self.engine {
            Engine::Inline { source, decoder } => {
                while !self.done {
                    match source.step(decoder) {
                        Step::Datagram(datagram) => return Some(Ok(datagram)),
                        Step::Secrets(s) => {
                            if let Some(s) = room_for(self.secrets.iter(), s, decoder) {
                                self.secrets.push(s);
                            }
                        }
                        Step::Skipped => {}
                        Step::End => {
                            self.done = true;
                            decoder.finish();
                        }
                        Step::Failed(failure) => {
                            self.done = true;
                            decoder.finish();
                            return Some(Err(failure.into_error(decoder.stats.frames)));
                        }
                    }
                }
                None
            }
            Engine::Background(b) => loop {
                if let Some(item) = b.current.next() {
                    while b.secrets.front().is_some_and(|(i, _)| *i <= b.index) {
                        self.secrets.extend(b.secrets.pop_front().map(|(_, s)| s));
                    }
                    b.index += 1;
                    return Some(item);
                }
                let batch = b.batches.recv().ok()?;
                b.stats = batch.stats;
                b.current = batch.items.into_iter();
                b.secrets = batch.secrets.into();
                b.index = 0;
            },
        }
    }

    /// The secrets of the capture (pcapng Decryption Secrets Blocks) read
    /// since the last call, all of which came before the datagram
    /// [`Self::next_datagram`] last handed out: they apply to it and to
    /// those after it.
    pub fn take_secrets(&mut self) -> Vec<Secrets> {
        std::mem::take(&mut self.secrets)
    }

    /// Hand a datagram back when done with it: its buffer is reused for the
    /// next one, which saves an allocation per packet.
    pub(crate) fn recycle(&mut self, d: UdpDatagram) {
        match &mut self.engine {
            Engine::Inline { decoder, .. } => decoder.recycle(d.payload),
            Engine::Background(b) => {
                b.spent_batch.push(d.payload);
                if b.spent_batch.len() >= BATCH {
                    // A send fails only when the thread has ended; then the buffers go.
                    let _ = b.spent.send(std::mem::take(&mut b.spent_batch));
                }
            }
        }
    }

    /// Counters of what was read, skipped and reassembled so far.
    pub fn stats(&self) -> &CaptureStats {
        match &self.engine {
            Engine::Inline { decoder, .. } => &decoder.stats,
            Engine::Background(b) => &b.stats,
        }
    }

    /// The container format of the capture.
    #[cfg(test)]
    pub(crate) fn format(&self) -> CaptureFormat {
        self.format
    }

    /// The name used in messages: the path, "standard input" or "input".
    #[cfg(test)]
    pub(crate) fn name(&self) -> &str {
        &self.name
    }
}

impl Background {
    fn idle() -> Self {
        let (_, batches) = std::sync::mpsc::sync_channel(0);
        let (spent, _) = std::sync::mpsc::channel();
        Background {
            batches,
            spent,
            spent_batch: Vec::new(),
            current: Vec::new().into_iter(),
            secrets: Default::default(),
            index: 0,
            stats: CaptureStats::default(),
        }
    }
}

impl Iterator for CaptureReader {
    type Item = Result<UdpDatagram, CaptureError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_datagram()
    }
}

impl fmt::Debug for CaptureReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaptureReader")
            .field("name", &self.name)
            .field("format", &self.format)
            .field("stats", self.stats())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}
