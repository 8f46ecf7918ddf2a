//! The pipeline every capture command runs: capture files (or a live
//! reader) → [`Dissector`] → [`Mirror`], one packet at a time, with the
//! mirror's findings for each packet.
//!
//! ```no_run
//! use raknet_dissect::mirror::{Mirror, MirrorConfig};
//! use raknet_dissect::pipeline::{Input, Item, Next, Pipeline};
//!
//! let mut mirror = Mirror::new(MirrorConfig::default(), true);
//! let mut pipeline = Pipeline::new(Default::default());
//! let end = pipeline.run(Input::files(["capture.pcap"]), &mut mirror, |item| {
//!     if let Item::Packet { packet, .. } = item {
//!         println!("{} {}", packet.frame, packet.kind());
//!     }
//!     Ok::<_, std::io::Error>(Next::Continue)
//! });
//! let flows = mirror.finish().closed;
//! # let _ = (end, flows);
//! ```
//!
//! Several files are one capture, merged by time as mergecap merges them,
//! through one dissector and one mirror: a flow that a rotated capture
//! (`tcpdump -C`) cut in two is one flow, and captures of one moment taken
//! in several places interleave. Frame numbers count from 1 in each file,
//! as tshark numbers them (records name the file), and times count from
//! the earliest datagram of all.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use crate::capture::{CaptureError, CaptureReader};
use crate::dissect::{
    Counted, Dir, DissectStats, Dissector, IcmpNote, Options, OwnedPacket, Packet, Shell,
    SpentPackets,
};
use crate::mirror::{Mirror, Observation};
use crate::nethernet::conversations::{Conversations, Seen};
use crate::nethernet::signaling::{self, Signaling};

pub(crate) mod ahead;
pub mod drive;
pub mod notes;
pub mod ordered;
pub mod progress;
pub mod separate;

/// Files merged by time are each read on a thread of their own when there
/// are at most this many (rotations of one capture), on this one past it.
const MERGE_BACKGROUND: usize = 4;

/// Files merged by time stay open from their first look when there are at
/// most this many; past it each is opened again when its first datagram is
/// due (file descriptors for a fleet).
const MERGE_KEEP_OPEN: usize = 64;

/// Owned packets' allocations kept for reuse, at most (more than the
/// printing threads hold in flight).
const MAX_SHELLS: usize = 1 << 14;

/// Whether to read on after an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Read on.
    Continue,
    /// Stop reading: the run ends, its last item [`Item::Counted`].
    Stop,
}

/// What the pipeline reads.
pub enum Input {
    /// Capture files, in this order; `-` is standard input.
    Files(Vec<PathBuf>),
    /// An open reader (a live capture).
    Reader(Box<CaptureReader>),
}

impl Input {
    /// Capture files, read in this order.
    pub fn files<P: AsRef<Path>>(paths: impl IntoIterator<Item = P>) -> Input {
        Input::Files(paths.into_iter().map(|p| p.as_ref().to_owned()).collect())
    }
}

/// How the dissector finds RakNet, and what the pipeline reports.
#[derive(Debug, Clone, Default)]
pub struct PipelineOptions {
    /// UDP ports decoded as RakNet whatever they carry (`-d`).
    pub decode_as: Vec<u16>,
    /// Only flows whose handshake is seen, or forced, are RakNet.
    pub no_heuristics: bool,
    /// Build each packet's `-V` field tree.
    pub trace: bool,
    /// Bytes read from the files so far are added here (for a progress bar).
    pub consumed: Option<Arc<AtomicU64>>,
    /// Hand packets out as [`Item::Owned`] (for another thread), not
    /// [`Item::Packet`]; those given back here are reused.
    pub owned: Option<SpentPackets>,
    /// Read the files on the caller's thread (`--threads 1`: one thread
    /// does all the work), not on a reading thread of their own.
    pub one_thread: bool,
    /// The DTLS secrets NetherNet's records open with (`--tls-keylog`).
    pub tls_keylog: Arc<crate::nethernet::dtls::KeyLog>,
}

/// One thing the pipeline hands out.
pub enum Item<'p, 'a> {
    /// A RakNet packet, its anomalies not yet merged with the mirror's
    /// findings in `obs` (messages delivered, flows closed, RTT samples).
    Packet {
        /// The packet, borrowing the datagram read.
        packet: &'p mut Packet<'a>,
        /// What the mirror found in it.
        obs: &'p mut Observation,
        /// The time lines are counted from (the first datagram's).
        since: Duration,
        /// Index of the file in [`Input::Files`] (0 for a reader).
        file: usize,
    },
    /// A RakNet packet as [`Item::Packet`], owning its datagram (with
    /// [`PipelineOptions::owned`]).
    Owned {
        /// The packet and its datagram.
        packet: OwnedPacket,
        /// What the mirror found in it.
        obs: &'p mut Observation,
        /// The time lines are counted from (the first datagram's).
        since: Duration,
        /// Index of the file in [`Input::Files`] (0 for a reader).
        file: usize,
    },
    /// A UDP datagram of a NetherNet conversation, and what it showed.
    Nethernet {
        /// Its conversation and events.
        seen: Seen<'p>,
        /// Its frame number.
        frame: u64,
        /// Its capture time.
        ts: Duration,
        /// Its sender.
        src: std::net::SocketAddr,
        /// Its receiver.
        dst: std::net::SocketAddr,
        /// Its UDP payload.
        payload: &'p [u8],
        /// The time lines are counted from (the first datagram's).
        since: Duration,
        /// Index of the file in [`Input::Files`] (0 for a reader).
        file: usize,
    },
    /// A TCP segment of NetherNet's HTTP signaling, and what it showed.
    Signaling {
        /// Its connection and events.
        seen: signaling::Seen<'p>,
        /// Its frame number.
        frame: u64,
        /// Its capture time.
        ts: Duration,
        /// Its sender.
        src: std::net::SocketAddr,
        /// Its receiver.
        dst: std::net::SocketAddr,
        /// Its TCP payload.
        payload: &'p [u8],
        /// Its TCP header's sequence number and flags.
        segment: crate::capture::TcpSegment,
        /// The time lines are counted from (the first datagram's).
        since: Duration,
        /// Index of the file in [`Input::Files`] (0 for a reader).
        file: usize,
    },
    /// An ICMP error quoting a datagram of a RakNet flow.
    Icmp {
        /// The error and the flow it names.
        note: IcmpNote,
        /// Index of the file in [`Input::Files`] (0 for a reader).
        file: usize,
    },
    /// A NetherNet LAN discovery datagram (UDP 7551), read.
    Lan {
        /// What it said, with its flow and direction.
        packet: Box<crate::records::nethernet::NethernetPacket>,
        /// Its UDP payload.
        payload: &'p [u8],
        /// Time of the capture's first datagram.
        since: Duration,
        /// Index of the file in [`Input::Files`] (0 for a reader).
        file: usize,
    },
    /// Secrets of a kind the pipeline does not use itself (a pcapng
    /// Decryption Secrets Block: Bedrock's key log), for the packets after.
    Secrets {
        /// The secrets type ([`crate::capture::Secrets`]).
        kind: u32,
        /// The secrets.
        data: &'p [u8],
    },
    /// The pipeline starts reading file `index` (not for a reader).
    File {
        /// Index of the file in [`Input::Files`].
        index: usize,
        /// Its path, as given.
        path: &'p Path,
    },
    /// Everything was read (or the run stopped): what was counted and
    /// skipped, over all files; the last item.
    Counted(Counted),
}

/// Capture files: each path as given, a directory as the capture files in
/// it and its subdirectories (`.pcap`, `.pcapng`, `.cap`; 8 levels deep at
/// most), in name order. A directory with none stays as it is (and is then
/// a file that cannot be read, said so). A path that does not exist and
/// has `*`, `?` or `[` in it is a glob (`captures/*/*.pcap`,
/// `day1/**/*.pcapng`, for a fleet too large for the shell's command
/// line): the files it matches, in name order, and the capture files of the
/// directories it matches; one that matches nothing stays as it is.
pub fn expand_paths(paths: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        let pattern = p
            .to_str()
            .filter(|t| t.contains(['*', '?', '[']) && !p.exists());
        let matched: Vec<PathBuf> = pattern
            .and_then(|t| glob::glob(t).ok())
            .map(|m| m.filter_map(Result::ok).collect())
            .unwrap_or_default();
        if matched.is_empty() {
            out.extend(expand_dirs([p]));
        } else {
            out.extend(expand_dirs(matched));
        }
    }
    out
}

/// [`expand_paths`] without the globs.
fn expand_dirs(paths: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                if depth < 8 {
                    walk(&p, depth + 1, out);
                }
            } else if p.extension().and_then(|e| e.to_str()).is_some_and(|e| {
                matches!(e.to_ascii_lowercase().as_str(), "pcap" | "pcapng" | "cap")
            }) {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let before = out.len();
            walk(&p, 0, &mut out);
            if out.len() == before {
                out.push(p);
            }
        } else {
            out.push(p);
        }
    }
    out
}

/// The printing threads of a run ([`ordered`]): those asked for
/// (`--threads`), else the cores available; one when standard input is
/// read (`-`), whose lines come as they arrive.
pub fn threads(asked: Option<u16>, paths: &[PathBuf]) -> usize {
    if paths.iter().any(|p| p.as_os_str() == "-") {
        return 1;
    }
    let cores = || std::thread::available_parallelism().map_or(1, |n| n.get());
    asked.map_or_else(cores, usize::from)
}

/// Whether `e` is the reader of the output going away (`| head`): not an
/// error for a command that prints.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The file names records carry: none for one file.
pub(crate) fn file_names(paths: &[PathBuf]) -> Vec<String> {
    if paths.len() < 2 {
        return Vec::new();
    }
    paths.iter().map(|p| p.display().to_string()).collect()
}

/// A file that could not be read to its end.
#[derive(Debug)]
pub struct FileError {
    /// Index of the file in [`Input::Files`].
    pub file: usize,
    /// Why it could not be read on.
    pub error: CaptureError,
}

/// How a capture run ended, for its caller to report (the command line
/// gives each its exit code). Every line of it was said through the run's
/// [`notes::Notes`] already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOutcome {
    /// Every file was read to its end.
    Read,
    /// A mistake in what the run was asked: no file given, a `--flow` the
    /// capture does not have.
    Usage,
    /// A file could not be opened, or is not a capture (the others were
    /// still read).
    BadFile,
    /// A file is malformed past some point: everything before it was read.
    Malformed,
    /// A file was cut short: everything before the cut was read.
    CutShort,
}

/// How a run ended.
#[derive(Debug, Default)]
pub struct Ended {
    /// Files that could not be opened, or are not captures.
    pub unreadable: Vec<FileError>,
    /// Files that ended early (cut short, malformed past a point, a read
    /// error): everything before was handed out.
    pub cut_short: Vec<FileError>,
    /// The caller asked to stop.
    pub stopped: bool,
    /// Frames read, over all files.
    pub frames: u64,
    /// Frames that were not UDP, over all files.
    pub non_udp: u64,
    /// Frames of a link type not decoded, over all files.
    pub unsupported_link: u64,
    /// IP fragments given up (their datagram never completed, or they
    /// conflicted), over all files.
    pub fragments_dropped: u64,
    /// Frames whose link, IP or UDP header is malformed, over all files.
    pub bad_ip: u64,
    /// Packet records too malformed to read (a pcapng packet block naming
    /// no interface, lengths past its block), over all files.
    pub bad_records: u64,
}

impl Ended {
    /// Adds what a reader counted.
    fn add(&mut self, c: &crate::capture::CaptureStats) {
        self.frames += c.frames;
        self.non_udp += c.non_udp;
        self.unsupported_link += c.unsupported_link;
        self.fragments_dropped += c.fragments_dropped;
        self.bad_ip += c.bad_ip;
        self.bad_records += c.bad_records;
    }

    /// What went wrong, a line each: the files that could not be read, then
    /// those cut short (warnings, named when `paths` has several).
    pub(crate) fn problems(&self, paths: &[PathBuf]) -> Vec<String> {
        let mut lines: Vec<String> = self
            .unreadable
            .iter()
            .map(|e| e.error.to_string())
            .collect();
        for e in &self.cut_short {
            match paths.get(e.file).filter(|_| paths.len() > 1) {
                Some(p) => lines.push(format!("warning: {}: {}", p.display(), e.error)),
                None => lines.push(format!("warning: {}", e.error)),
            }
        }
        // What was dropped on the way, never silently.
        let plural = crate::wire::plural;
        for (n, one, many, why) in [
            (
                self.unsupported_link,
                "frame",
                "frames",
                "of a link type not decoded",
            ),
            (
                self.fragments_dropped,
                "IP fragment",
                "IP fragments",
                "dropped: their datagram never completed, or they conflicted",
            ),
            (
                self.bad_ip,
                "frame",
                "frames",
                "with a malformed link, IP or UDP header",
            ),
            (
                self.bad_records,
                "packet record",
                "packet records",
                "malformed (a pcapng packet block naming no interface, or lengths past its block)",
            ),
        ] {
            if n > 0 {
                lines.push(format!(
                    "warning: {n} {} {why}: skipped",
                    plural(n, one, many)
                ));
            }
        }
        lines
    }

    /// How the files were read, the worst first: a file that could not be
    /// read, one malformed past a point, one cut short, else all of them.
    pub(crate) fn outcome(&self) -> ReadOutcome {
        if !self.unreadable.is_empty() {
            ReadOutcome::BadFile
        } else if self.malformed() {
            ReadOutcome::Malformed
        } else if !self.cut_short.is_empty() {
            ReadOutcome::CutShort
        } else {
            ReadOutcome::Read
        }
    }

    /// Whether a file stopped at a block that cannot be read past (not
    /// merely cut short at its end).
    pub(crate) fn malformed(&self) -> bool {
        self.cut_short
            .iter()
            .any(|e| matches!(e.error, CaptureError::Malformed { .. }))
    }

    /// The counts of this run, with the dissector's.
    pub(crate) fn counted(&self, d: &DissectStats) -> Counted {
        Counted {
            frames: self.frames,
            raknet_packets: d.raknet_packets,
            non_udp: self.non_udp,
            not_raknet: d.not_raknet,
            unsupported_link: self.unsupported_link,
            fragments_dropped: self.fragments_dropped,
            bad_ip: self.bad_ip,
            bad_records: self.bad_records,
        }
    }

    /// What was read: frames, RakNet packets and flows, what was skipped.
    pub(crate) fn summary(&self, d: &DissectStats, nethernet: &Conversations) -> String {
        let plural = crate::wire::plural;
        // NetherNet's datagrams are among those the dissector did not take.
        let (n, sessions) = (nethernet.datagrams, nethernet.started);
        let nethernet = match n {
            0 => String::new(),
            _ => format!(
                ", {n} NetherNet {} in {sessions} {}",
                plural(n, "datagram", "datagrams"),
                plural(sessions, "conversation", "conversations")
            ),
        };
        format!(
            "{} frames, {} RakNet {} in {} {}{nethernet}, {} other UDP datagrams and {} non-UDP frames skipped",
            self.frames,
            d.raknet_packets,
            plural(d.raknet_packets, "packet", "packets"),
            d.flows,
            plural(d.flows, "flow", "flows"),
            d.not_raknet.saturating_sub(n),
            self.non_udp
        )
    }
}

/// The dissector and the options of one run; see the module doc.
pub struct Pipeline {
    opts: PipelineOptions,
    dissector: Dissector,
    /// Allocations of owned packets given back, for the next ones.
    shells: Vec<Shell>,
    /// The NetherNet conversations among the datagrams that are not RakNet.
    nethernet: Conversations,
    /// NetherNet's signaling among the TCP segments.
    signaling: Signaling,
    /// NetherNet's LAN discovery (UDP 7551).
    lans: crate::nethernet::lan::Lans,
    /// TCP segments: of the signaling, of other connections.
    tcp: [u64; 2],
}

/// Files up to this size are read without a reading thread.
const SMALL_FILE: u64 = 1 << 20;

/// A regular file of at most [`SMALL_FILE`] bytes.
fn is_small(path: &std::path::Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() <= SMALL_FILE)
}

impl Pipeline {
    /// A pipeline with a dissector set by `opts`, before any run.
    pub fn new(opts: PipelineOptions) -> Pipeline {
        let dissector = Dissector::new(Options {
            ports: opts.decode_as.clone(),
            heuristics: !opts.no_heuristics,
            trace: opts.trace,
            ..Options::default()
        });
        let nethernet = Conversations::new(Arc::clone(&opts.tls_keylog));
        Pipeline {
            opts,
            dissector,
            shells: Vec::new(),
            nethernet,
            signaling: Signaling::default(),
            lans: Default::default(),
            tcp: [0; 2],
        }
    }

    /// The dissector's counters (RakNet packets, flows, other UDP).
    pub(crate) fn dissect_stats(&self) -> &DissectStats {
        self.dissector.stats()
    }

    /// The NetherNet conversations read.
    pub(crate) fn nethernet(&self) -> &Conversations {
        &self.nethernet
    }

    /// TCP segments of NetherNet's signaling read.
    pub(crate) fn signaling_segments(&self) -> u64 {
        self.tcp[0]
    }

    /// After a run: why `--flow N` names no flow of the capture, if so
    /// (`no flow 7: the capture has 6 RakNet flows`).
    pub(crate) fn no_such_flow(&self, flow: Option<u32>) -> Option<String> {
        // Flow ids number NetherNet's conversations and signaling
        // connections too.
        let last = self.dissector.last_flow_id();
        let n = flow.filter(|&n| n > last)?;
        let flows = self.dissector.stats().flows;
        if u64::from(last) == flows {
            let plural = crate::wire::plural(flows, "flow", "flows");
            return Some(format!(
                "no flow {n}: the capture has {flows} RakNet {plural}"
            ));
        }
        Some(format!(
            "no flow {n}: the capture's flows are numbered 1 to {last} \
             (NetherNet's signaling connections among them)"
        ))
    }

    /// Read `input` through the dissector into `mirror`, handing each item
    /// to `each`; stops early when `each` says [`Next::Stop`] or fails.
    pub fn run<E>(
        &mut self,
        input: Input,
        mirror: &mut Mirror,
        mut each: impl FnMut(Item<'_, '_>) -> Result<Next, E>,
    ) -> Result<Ended, E> {
        let mut ended = Ended::default();
        let mut first_ts: Option<Duration> = None;
        let mut obs = Observation::default();
        match input {
            Input::Reader(r) => {
                self.read(
                    *r,
                    0,
                    mirror,
                    &mut first_ts,
                    &mut obs,
                    &mut ended,
                    &mut each,
                )?;
            }
            Input::Files(paths) if paths.len() > 1 => {
                self.merged(
                    &paths,
                    mirror,
                    &mut first_ts,
                    &mut obs,
                    &mut ended,
                    &mut each,
                )?;
            }
            Input::Files(paths) => {
                for (index, path) in paths.iter().enumerate() {
                    let reader = match self.open(path, true) {
                        Ok(r) => r,
                        Err(error) => {
                            ended.unreadable.push(FileError { file: index, error });
                            continue;
                        }
                    };
                    if each(Item::File { index, path })? == Next::Stop {
                        ended.stopped = true;
                        break;
                    }
                    let stop = self.read(
                        reader,
                        index,
                        mirror,
                        &mut first_ts,
                        &mut obs,
                        &mut ended,
                        &mut each,
                    )?;
                    if stop {
                        ended.stopped = true;
                        break;
                    }
                }
            }
        }
        // TCP that is not NetherNet's signaling is skipped, as before.
        ended.non_udp += self.tcp[1];
        let counted = ended.counted(self.dissect_stats());
        each(Item::Counted(counted))?;
        Ok(ended)
    }

    /// Opens a capture file; on a thread of its own when `background` and
    /// the file is large enough to gain from it.
    fn open(&self, path: &Path, background: bool) -> Result<CaptureReader, CaptureError> {
        let r = CaptureReader::open_counted(path, self.opts.consumed.clone())?.with_tcp();
        // A small file is read on this thread: a reading thread's start and
        // handoffs would cost more than the overlap gains (a fleet of
        // captures of a few kilobytes each).
        Ok(if !background || self.opts.one_thread || is_small(path) {
            r
        } else {
            r.in_background()
        })
    }

    /// Several files as one capture, merged by time as mergecap merges them:
    /// at each step the earliest next datagram of any file (a tie goes to
    /// the file given first), each file's own order kept. A file is opened
    /// when its first datagram is due: captures that follow each other
    /// (rotations) are open one or two at a time, and a fleet of more than
    /// [`MERGE_KEEP_OPEN`] files is looked at once for its first time,
    /// closed, and opened again when due.
    #[allow(clippy::too_many_arguments)]
    fn merged<E>(
        &mut self,
        paths: &[PathBuf],
        mirror: &mut Mirror,
        first_ts: &mut Option<Duration>,
        obs: &mut Observation,
        ended: &mut Ended,
        each: &mut impl FnMut(Item<'_, '_>) -> Result<Next, E>,
    ) -> Result<(), E> {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        #[derive(Default)]
        struct Slot {
            reader: Option<CaptureReader>,
            next: Option<crate::capture::UdpDatagram>,
            /// The secrets that came before `next`.
            secrets: Vec<crate::capture::Secrets>,
        }
        // Its next datagram, or its end (stats counted, error said).
        let advance = |slot: &mut Slot, index: usize, ended: &mut Ended| -> Option<Duration> {
            let reader = slot.reader.as_mut()?;
            match reader.next_datagram() {
                Some(Ok(d)) => {
                    let ts = d.ts;
                    slot.next = Some(d);
                    slot.secrets.append(&mut reader.take_secrets());
                    return Some(ts);
                }
                Some(Err(error)) => ended.cut_short.push(FileError { file: index, error }),
                None => {}
            }
            if let Some(r) = slot.reader.take() {
                ended.add(r.stats());
            }
            None
        };
        let background = paths.len() <= MERGE_BACKGROUND;
        let keep_open = paths.len() <= MERGE_KEEP_OPEN;
        let mut slots: Vec<Slot> = Vec::with_capacity(paths.len());
        let mut due = BinaryHeap::new();
        for (index, path) in paths.iter().enumerate() {
            let mut slot = Slot::default();
            match self.open(path, background && keep_open) {
                Ok(r) => slot.reader = Some(r),
                Err(error) => ended.unreadable.push(FileError { file: index, error }),
            }
            if let Some(ts) = advance(&mut slot, index, ended) {
                due.push(Reverse((ts, index)));
                // Standard input cannot be opened again.
                if !keep_open && path.as_os_str() != "-" {
                    slot = Slot::default();
                }
            }
            slots.push(slot);
        }
        let mut current = None;
        while let Some(Reverse((_, index))) = due.pop() {
            let slot = &mut slots[index];
            if slot.reader.is_none() {
                match self.open(&paths[index], false) {
                    Ok(r) => slot.reader = Some(r),
                    Err(error) => {
                        ended.unreadable.push(FileError { file: index, error });
                        continue;
                    }
                }
                if advance(slot, index, ended).is_none() {
                    continue;
                }
            }
            let Some(d) = slot.next.take() else { continue };
            if self.secrets(std::mem::take(&mut slot.secrets), each)? {
                ended.stopped = true;
                break;
            }
            if current != Some(index) {
                current = Some(index);
                let path = &paths[index];
                if each(Item::File { index, path })? == Next::Stop {
                    ended.stopped = true;
                    break;
                }
            }
            let reader = slot
                .reader
                .as_mut()
                .expect("a file with a datagram is open");
            let stop = self.datagram(d, reader, index, mirror, first_ts, obs, each)?;
            if let Some(ts) = advance(slot, index, ended) {
                due.push(Reverse((ts, index)));
            }
            if stop {
                ended.stopped = true;
                break;
            }
        }
        for r in slots.into_iter().filter_map(|s| s.reader) {
            ended.add(r.stats());
        }
        Ok(())
    }

    /// One reader to its end; true when `each` asked to stop.
    #[allow(clippy::too_many_arguments)]
    fn read<E>(
        &mut self,
        mut reader: CaptureReader,
        file: usize,
        mirror: &mut Mirror,
        first_ts: &mut Option<Duration>,
        obs: &mut Observation,
        ended: &mut Ended,
        each: &mut impl FnMut(Item<'_, '_>) -> Result<Next, E>,
    ) -> Result<bool, E> {
        let mut stop = false;
        while let Some(item) = reader.next_datagram() {
            let d = match item {
                Ok(d) => d,
                Err(error) => {
                    ended.cut_short.push(FileError { file, error });
                    break;
                }
            };
            if self.secrets(reader.take_secrets(), each)? {
                stop = true;
                break;
            }
            if self.datagram(d, &mut reader, file, mirror, first_ts, obs, each)? {
                stop = true;
                break;
            }
        }
        ended.add(reader.stats());
        Ok(stop)
    }

    /// A capture's secrets: the DTLS key-log lines open the NetherNet
    /// records after them; other kinds go to `each`. True when it asked to
    /// stop.
    fn secrets<E>(
        &mut self,
        secrets: Vec<crate::capture::Secrets>,
        each: &mut impl FnMut(Item<'_, '_>) -> Result<Next, E>,
    ) -> Result<bool, E> {
        for s in secrets {
            if s.kind == crate::capture::Secrets::TLS_KEY_LOG {
                self.nethernet.add_keys(&String::from_utf8_lossy(&s.data));
            } else if each(Item::Secrets {
                kind: s.kind,
                data: &s.data,
            })? == Next::Stop
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// One datagram of `reader` (which gets its buffer back) through the
    /// dissector and the mirror to `each`; true when `each` asked to stop.
    #[allow(clippy::too_many_arguments)]
    fn datagram<E>(
        &mut self,
        d: crate::capture::UdpDatagram,
        reader: &mut CaptureReader,
        file: usize,
        mirror: &mut Mirror,
        first_ts: &mut Option<Duration>,
        obs: &mut Observation,
        each: &mut impl FnMut(Item<'_, '_>) -> Result<Next, E>,
    ) -> Result<bool, E> {
        if let Some(seg) = d.tcp {
            let stop = self.tcp(&d, seg, first_ts, file, each)?;
            reader.recycle(d);
            return Ok(stop);
        }
        let since = *first_ts.get_or_insert(d.ts);
        let lan = crate::nethernet::lan::PORT;
        if d.icmp.is_none() && (d.src.port() == lan || d.dst.port() == lan) {
            if let Some(stop) = self.lan(&d, since, file, each)? {
                reader.recycle(d);
                return Ok(stop);
            }
        }
        if let Some(icmp) = &d.icmp {
            let mut stop = false;
            // Not traffic: an error about a datagram of the flow it quotes.
            if let Some(f) = self.dissector.flow(d.src, d.dst) {
                let note = IcmpNote {
                    since,
                    flow: f.id,
                    dir: if d.src == f.client {
                        Dir::C2s
                    } else {
                        Dir::S2c
                    },
                    ts: d.ts,
                    frame: d.frame,
                    kind: icmp.kind.as_str(),
                    from: icmp.from,
                    src: d.src,
                    dst: d.dst,
                    mtu: match icmp.kind {
                        crate::capture::IcmpKind::FragmentationNeeded { mtu } => mtu,
                        _ => None,
                    },
                };
                stop = each(Item::Icmp { note, file })? == Next::Stop;
            }
            reader.recycle(d);
            return Ok(stop);
        }
        if let Some(spent) = &self.opts.owned {
            // Often: a packet's allocation freed soon is reused from the
            // allocator's small per-size cache (every 64 frames was 10%
            // slower on one thread once packets became self_cells).
            if d.frame.is_multiple_of(4) {
                for p in spent.take() {
                    let (d, shell) = p.recycle(&mut self.dissector);
                    reader.recycle(d);
                    if self.shells.len() < MAX_SHELLS {
                        self.shells.push(shell);
                    }
                }
            }
            let packet = match OwnedPacket::dissect(&mut self.dissector, d, &mut self.shells) {
                Ok(p) => p,
                Err(d) => {
                    let stop = self.other(&d, since, file, each)?;
                    reader.recycle(d);
                    return Ok(stop);
                }
            };
            let (dissector, p) = (&self.dissector, packet.get());
            mirror.observe(p, || dissector.flow(p.src, p.dst), obs);
            let item = Item::Owned {
                packet,
                obs,
                since,
                file,
            };
            return Ok(each(item)? == Next::Stop);
        }
        let Some(mut p) = self.dissector.dissect(&d) else {
            let stop = self.other(&d, since, file, each)?;
            reader.recycle(d);
            return Ok(stop);
        };
        let dissector = &self.dissector;
        mirror.observe(&p, || dissector.flow(p.src, p.dst), obs);
        let next = each(Item::Packet {
            packet: &mut p,
            obs,
            since,
            file,
        });
        self.dissector.recycle(p);
        reader.recycle(d);
        Ok(next? == Next::Stop)
    }
}

impl Pipeline {
    /// A TCP segment: NetherNet's signaling, to `each`, or counted; true
    /// when `each` asked to stop. A signaling segment counts as the
    /// capture's first datagram for `read`'s time column; other TCP does
    /// not.
    fn tcp<E>(
        &mut self,
        d: &crate::capture::UdpDatagram,
        seg: crate::capture::TcpSegment,
        first_ts: &mut Option<Duration>,
        file: usize,
        each: &mut impl FnMut(Item<'_, '_>) -> Result<Next, E>,
    ) -> Result<bool, E> {
        let dissector = &mut self.dissector;
        let new_id = || dissector.new_flow_id();
        let Some(seen) = self
            .signaling
            .segment(d.src, d.dst, seg, &d.payload, new_id)
        else {
            self.tcp[1] += 1;
            return Ok(false);
        };
        self.tcp[0] += 1;
        // The SDPs' ICE credentials key the checks' MESSAGE-INTEGRITY.
        for e in seen.events {
            if let crate::nethernet::signaling::Event::Http { message: h, .. } = e {
                if let (Some(u), Some(p)) = (&h.ice_ufrag, &h.ice_pwd) {
                    self.nethernet.ice.learn(u, p);
                }
            }
        }
        let item = Item::Signaling {
            seen,
            frame: d.frame,
            ts: d.ts,
            src: d.src,
            dst: d.dst,
            payload: &d.payload,
            segment: seg,
            // The signaling starts the capture's clock as a datagram would.
            since: *first_ts.get_or_insert(d.ts),
            file,
        };
        Ok(each(item)? == Next::Stop)
    }

    /// A UDP datagram that is not RakNet: a NetherNet conversation's, to
    /// `each`, or nothing; true when `each` asked to stop.
    /// A datagram to or from port 7551 that opens with LAN discovery's key
    /// (its HMAC verifies: nothing else does), to `each`; `None` when it
    /// does not open. The SDPs of its signals teach the ICE passwords.
    fn lan<E>(
        &mut self,
        d: &crate::capture::UdpDatagram,
        since: Duration,
        file: usize,
        each: &mut impl FnMut(Item<'_, '_>) -> Result<Next, E>,
    ) -> Result<Option<bool>, E> {
        use crate::nethernet::lan;
        let Ok(plain) = lan::open(&d.payload) else {
            return Ok(None);
        };
        let read = lan::parse(&plain);
        // The client is the end that is not port 7551.
        let (client, dir) = if d.src.port() == lan::PORT && d.dst.port() != lan::PORT {
            (d.dst, Dir::S2c)
        } else {
            (d.src, Dir::C2s)
        };
        let dissector = &mut self.dissector;
        let flow = self.lans.flow(client, || dissector.new_flow_id());
        self.lans.datagrams += 1;
        self.nethernet.datagrams += 1;
        let packet = crate::records::nethernet::NethernetPacket::lan(
            (d.frame, d.ts),
            (d.src, d.dst),
            (flow, dir),
            d.payload.len(),
            read.as_ref().map_err(Clone::clone),
        );
        let sdp = packet
            .lan
            .as_ref()
            .and_then(|l| l.ice_ufrag.as_ref().zip(l.ice_pwd.as_ref()));
        if let Some((u, p)) = sdp {
            self.nethernet.ice.learn(u, p);
        }
        let item = Item::Lan {
            packet: Box::new(packet),
            payload: &d.payload,
            since,
            file,
        };
        Ok(Some(each(item)? == Next::Stop))
    }

    fn other<E>(
        &mut self,
        d: &crate::capture::UdpDatagram,
        since: Duration,
        file: usize,
        each: &mut impl FnMut(Item<'_, '_>) -> Result<Next, E>,
    ) -> Result<bool, E> {
        let dissector = &mut self.dissector;
        let new_id = || dissector.new_flow_id();
        let Some(seen) = self
            .nethernet
            .datagram(d.src, d.dst, d.ts, &d.payload, new_id)
        else {
            return Ok(false);
        };
        let item = Item::Nethernet {
            seen,
            frame: d.frame,
            ts: d.ts,
            src: d.src,
            dst: d.dst,
            payload: &d.payload,
            since,
            file,
        };
        Ok(each(item)? == Next::Stop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_and_summary_in_words() {
        let cut = |file| FileError {
            file,
            error: CaptureError::CutShort {
                frame: 7,
                detail: "a record of 40 bytes, 12 present".into(),
            },
        };
        let ended = Ended {
            unreadable: vec![FileError {
                file: 0,
                error: CaptureError::NotACapture {
                    name: "a.txt".into(),
                    reason: "bad magic".into(),
                },
            }],
            cut_short: vec![cut(1)],
            frames: 9,
            non_udp: 1,
            ..Ended::default()
        };
        let two = [PathBuf::from("a.txt"), PathBuf::from("b.pcap")];
        assert_eq!(
            ended.problems(&two),
            [
                "a.txt: not a pcap or pcapng file (bad magic)",
                "warning: b.pcap: capture cut short after frame 7: a record of 40 bytes, 12 present"
            ]
        );
        let one = Ended {
            cut_short: vec![cut(0)],
            ..Ended::default()
        };
        assert_eq!(
            one.problems(&two[1..]),
            ["warning: capture cut short after frame 7: a record of 40 bytes, 12 present"]
        );
        let d = DissectStats {
            raknet_packets: 1,
            flows: 1,
            not_raknet: 2,
            ..DissectStats::default()
        };
        assert_eq!(
            ended.summary(&d, &Conversations::new(Arc::default())),
            "9 frames, 1 RakNet packet in 1 flow, 2 other UDP datagrams and 1 non-UDP frames skipped"
        );
    }
}
