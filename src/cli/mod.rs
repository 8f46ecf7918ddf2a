//! The command line: clap definitions and the commands that drive the
//! library. `main.rs` only calls [`main`].
//!
//! Exit codes: 0 success (also when a reader closes the pipe), 1 an
//! unexpected error, 2 a usage error, 3 a file that cannot be opened or is
//! not a capture, 4 a display filter (`-Y`) that does not parse, 5 a capture cut short (everything before the cut was
//! printed), 6 no connection (`ping`, `connect`: no pong, a handshake
//! refused or unanswered, nothing listening, a peer that timed out), 7 a
//! replay cut short (the server disconnected or went silent first), 8 live
//! capture not permitted (root or CAP_NET_RAW needed).

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod docs;
mod handshake;
mod live;
mod peer;
mod plot;
mod replay;
mod stats;

use crate::capture::CaptureReader;
use crate::display::{
    DisplayFilter, FieldExport, JsonRecord, MessageRecord, Record, RecordType, Since,
};
use crate::dissect::{Dir, Dissector, Options, Packet};
use crate::mirror::{FlowMirror, Message, Mirror, MirrorConfig, Observation};
use crate::output::json::{EndJson, FlowJson, IcmpJson, MessageJson, PacketJson};
use crate::output::table;
use crate::output::text::{self, Palette};
use crate::output::ColorChoice;
use crate::session::receive::Reassembly;

pub const EXIT_OK: u8 = 0;
pub const EXIT_ERROR: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_BAD_FILE: u8 = 3;
pub const EXIT_BAD_FILTER: u8 = 4;
pub const EXIT_CUT_SHORT: u8 = 5;
pub use peer::EXIT_NO_CONNECTION;

#[derive(Parser, Debug)]
#[command(
    name = "raknet-dissect",
    version,
    about = "Dissect and analyze RakNet traffic (original RakNet and Minecraft Bedrock)",
    args_conflicts_with_subcommands = true,
    disable_version_flag = true,
    after_help = "Exit codes: 0 ok, 1 error, 2 usage, 3 file cannot be opened or is not a capture, \
                  4 bad display filter (-Y), 5 capture cut short (everything before the cut is printed), \
                  6 no connection (no pong, handshake refused or unanswered, port unreachable, timed out), \
                  7 replay cut short by the server, \
                  8 live capture not permitted (root or CAP_NET_RAW needed)."
)]
pub struct Cli {
    /// Print the version (-V is --verbose, as in tshark).
    #[arg(long, action = clap::ArgAction::Version)]
    version: Option<bool>,
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub read: ReadArgs,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print every RakNet packet of a capture (the default command).
    Read(ReadArgs),
    /// The messages each side's application received, in delivery order.
    Messages(MessagesArgs),
    /// A table of the flows: roles, handshake, counts, loss, resends, RTT.
    Flows(FlowsArgs),
    /// Each connection attempt: a timeline of handshake steps, an outcome and a diagnosis.
    Handshake(handshake::HandshakeArgs),
    /// Unconnected ping: latency, server GUID, pong payload (Minecraft MOTD fields).
    Ping(peer::PingArgs),
    /// Connect to a server as a RakNet client, send messages, print what comes back.
    Connect(peer::ConnectArgs),
    /// A RakNet server that prints the messages it receives (and can echo them).
    Serve(peer::ServeArgs),
    /// Perform a handshake live, one line per step, ending with the outcome and a diagnosis.
    Probe(peer::ProbeArgs),
    /// Replay a captured client's messages against a live server and compare what comes back.
    Replay(replay::ReplayArgs),
    /// Capture live on an interface (root or CAP_NET_RAW): packets as they come, then the flows.
    Live(live::LiveArgs),
    /// Statistics of a capture: message ids, reliabilities, channels, rates per interval.
    Stats(stats::StatsArgs),
    /// Draw each flow as an SVG: throughput each way, RTT, loss and resends over time.
    Plot(plot::PlotArgs),
    /// List the field names of -Y and -e: the NDJSON keys of packet, message and flow records.
    Fields {
        /// NDJSON: one `field` record per name.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff), generated from these definitions: the top level's, or
    /// COMMAND's (raknet-dissect-COMMAND(1)); --all DIR writes every page into DIR.
    Man {
        /// The command whose page to print: read, messages, flows, ...
        #[arg(value_name = "COMMAND")]
        command: Option<String>,
        /// Write every page (raknet-dissect.1, raknet-dissect-read.1, ...) into DIR.
        #[arg(long, value_name = "DIR", conflicts_with = "command")]
        all: Option<PathBuf>,
    },
}

/// What to print of each record and which records: `-Y`, `-T`, `-e`, `-E`.
#[derive(Args, Debug, Default, Clone)]
pub struct DisplayArgs {
    /// Display filter over the NDJSON key names: `kind == "nack"`, `id == 0x86 && len > 1000`,
    /// `flow == 2 && channel == 3`, `anomalies`; `raknet-dissect fields` lists the names.
    #[arg(
        short = 'Y',
        long = "filter",
        visible_alias = "display-filter",
        value_name = "EXPR"
    )]
    pub filter: Option<String>,
    /// Output format: text (the default), json (as --json), or fields (the -e fields).
    #[arg(short = 'T', value_enum, value_name = "FORMAT")]
    pub format: Option<FormatArg>,
    /// A field to print with -T fields (repeatable, in order); implies -T fields.
    #[arg(short = 'e', value_name = "FIELD")]
    pub fields: Vec<String>,
    /// Field export option: header=y|n, separator=/t|/s|TEXT, aggregator=TEXT,
    /// occurrence=a|f|l, quote=d|s|n (repeatable).
    #[arg(short = 'E', value_name = "OPTION=VALUE")]
    pub export_options: Vec<String>,
    /// Time column of packet and message lines (tshark's -t): r since the first packet,
    /// a time of day (UTC), ad date and time (UTC), e epoch seconds, d since the
    /// previous packet read, dd since the previous line shown.
    #[arg(short = 't', value_enum, default_value_t, value_name = "FORMAT")]
    pub time_format: text::TimeFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    Text,
    Json,
    Fields,
}

/// [`DisplayArgs`] checked and compiled for one record type.
pub(crate) struct Shown {
    pub filter: Option<DisplayFilter>,
    pub export: Option<FieldExport>,
    pub json: bool,
}

impl DisplayArgs {
    /// Compile the filter and the field export; `Err` is the exit code,
    /// after one line on stderr.
    pub(crate) fn compile(&self, record: RecordType, json: bool) -> Result<Shown, u8> {
        let filter = match self
            .filter
            .as_deref()
            .map(|t| DisplayFilter::parse(t, record))
        {
            None => None,
            Some(Ok(f)) => Some(f),
            Some(Err(e)) => {
                eprintln!("raknet-dissect: bad filter: {e}");
                return Err(EXIT_BAD_FILTER);
            }
        };
        let fields = self.format == Some(FormatArg::Fields)
            || (self.format.is_none() && !self.fields.is_empty());
        let export_asked = !self.fields.is_empty() || !self.export_options.is_empty();
        if export_asked && !fields {
            eprintln!("raknet-dissect: -e and -E need -T fields");
            return Err(EXIT_USAGE);
        }
        let export = if fields {
            match FieldExport::new(&self.fields, &self.export_options, record) {
                Ok(x) => Some(x),
                Err(e) => {
                    eprintln!("raknet-dissect: {e}");
                    return Err(EXIT_USAGE);
                }
            }
        } else {
            None
        };
        Ok(Shown {
            filter,
            export,
            json: json || self.format == Some(FormatArg::Json),
        })
    }
}

impl Shown {
    /// Whether `r` passes the filter.
    pub fn wants(&self, r: &dyn Record) -> bool {
        self.filter.as_ref().is_none_or(|f| f.matches(r))
    }
}

/// Where the capture comes from and which UDP is RakNet (every command).
#[derive(Args, Debug, Default, Clone)]
pub struct CaptureArgs {
    /// Capture file (pcap or pcapng); `-` reads standard input.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Capture file, tshark's spelling.
    #[arg(short = 'r', long = "read-file", value_name = "FILE")]
    pub read_file: Option<PathBuf>,
    /// Decode a UDP port as RakNet: `PORT` or tshark's `udp.port==PORT,raknet`. Repeatable.
    #[arg(short = 'd', long = "decode-as", value_name = "PORT", value_parser = parse_decode_as)]
    pub decode_as: Vec<u16>,
    /// Only flows whose handshake is seen, or forced with -d, are RakNet.
    #[arg(long)]
    pub no_heuristics: bool,
    /// How split messages are joined: by part index (what the sender sent), or in
    /// arrival order (what an original RakNet 4.081 receiver delivers).
    #[arg(long, value_enum, default_value = "index", value_name = "ORDER")]
    pub reassembly: ReassemblyArg,
    /// Set by commands that print nothing on standard output until the
    /// capture is read (`flows`, `stats`, `-q`): their progress bar may share a
    /// terminal with standard output.
    #[arg(skip)]
    pub summary_only: bool,
}

impl CaptureArgs {
    /// These arguments, for a command that prints only once the capture is
    /// read (see `summary_only`).
    fn printing_at_end(&self) -> CaptureArgs {
        CaptureArgs {
            summary_only: true,
            ..self.clone()
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ReassemblyArg {
    #[default]
    Index,
    Arrival,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DirArg {
    C2s,
    S2c,
}

#[derive(Args, Debug, Default)]
pub struct MessagesArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// NDJSON: one `message` record per line.
    #[arg(long)]
    pub json: bool,
    /// Only this flow.
    #[arg(long, value_name = "N")]
    pub flow: Option<u32>,
    /// Only messages received by the server (c2s) or by the client (s2c).
    #[arg(long, value_enum, value_name = "DIR")]
    pub dir: Option<DirArg>,
    /// Only messages on this ordering channel.
    #[arg(long, value_name = "C")]
    pub channel: Option<u8>,
    /// Only messages with this id (decimal or 0x hex).
    #[arg(long, value_name = "ID", value_parser = parse_id)]
    pub id: Option<u8>,
    /// Show at most N bytes of each message's data in JSON.
    #[arg(long, value_name = "N")]
    pub data_limit: Option<usize>,
    /// Colour the output: auto, always, never.
    #[arg(long, value_enum, default_value = "auto", value_name = "WHEN")]
    pub color: Option<ColorArg>,
    #[command(flatten)]
    pub display: DisplayArgs,
}

#[derive(Args, Debug, Default)]
pub struct FlowsArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// NDJSON: one `flow` record per line.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub display: DisplayArgs,
}

fn parse_id(s: &str) -> Result<u8, String> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u8::from_str_radix(h, 16),
        None => s.parse::<u8>(),
    };
    v.map_err(|_| format!("{s:?} is not a message id (0-255 or 0x00-0xff)"))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorArg {
    Auto,
    Always,
    Never,
}

#[derive(Args, Debug, Default)]
pub struct ReadArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// Print the field tree of each packet, with byte offsets and lengths.
    #[arg(short = 'V', long)]
    pub verbose: bool,
    /// Print a hex dump of each packet's UDP payload.
    #[arg(short = 'x', long)]
    pub hex: bool,
    /// NDJSON: one `packet` record per line.
    #[arg(long)]
    pub json: bool,
    /// Stop after N RakNet packets.
    #[arg(short = 'c', long = "count", value_name = "N")]
    pub count: Option<u64>,
    /// No per-packet output (live: only the flows at the end).
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Colour the output: auto (a terminal, without NO_COLOR or TERM=dumb), always, never.
    #[arg(long, value_enum, default_value = "auto", value_name = "WHEN")]
    pub color: Option<ColorArg>,
    #[command(flatten)]
    pub display: DisplayArgs,
}

/// `19132` or `udp.port==19132,raknet`.
fn parse_decode_as(s: &str) -> Result<u16, String> {
    let port = match s.strip_prefix("udp.port==") {
        Some(rest) => {
            let (port, proto) = rest.split_once(',').unwrap_or((rest, "raknet"));
            if !proto.eq_ignore_ascii_case("raknet") {
                return Err(format!("only raknet can be decoded, not {proto:?}"));
            }
            port
        }
        None => s,
    };
    port.trim()
        .parse::<u16>()
        .map_err(|_| format!("{s:?} is not a port or udp.port==PORT,raknet"))
}

/// Run the command line; returns the process exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let result = match cli.command {
        Some(Command::Read(a)) => run_read(&a, &mut out),
        None => run_read(&cli.read, &mut out),
        Some(Command::Messages(a)) => run_messages(&a, &mut out),
        Some(Command::Flows(a)) => run_flows(&a, &mut out),
        Some(Command::Handshake(a)) => handshake::run_handshake(&a, &mut out),
        Some(Command::Ping(a)) => peer::run_ping(&a, &mut out),
        Some(Command::Connect(a)) => peer::run_connect(&a, &mut out),
        Some(Command::Serve(a)) => peer::run_serve(&a, &mut out),
        Some(Command::Probe(a)) => peer::run_probe(&a, &mut out),
        Some(Command::Replay(a)) => replay::run_replay(&a, &mut out),
        Some(Command::Live(a)) => live::run_live(&a, &mut out),
        Some(Command::Stats(a)) => stats::run_stats(&a, &mut out),
        Some(Command::Plot(a)) => plot::run_plot(&a, &mut out),
        Some(Command::Completions { shell }) => docs::completions(shell, &mut out),
        Some(Command::Fields { json }) => print_fields(json, &mut out),
        Some(Command::Man { command, all }) => {
            docs::man(command.as_deref(), all.as_deref(), &mut out)
        }
    };
    let code = match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => EXIT_OK,
        Err(e) => {
            let _ = out.flush();
            eprintln!("raknet-dissect: {e:#}");
            EXIT_ERROR
        }
    };
    match out.flush() {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => ExitCode::from(EXIT_ERROR),
        _ => ExitCode::from(code),
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

fn palette(color: Option<ColorArg>, json: bool) -> Palette {
    let choice = match color {
        Some(ColorArg::Always) => ColorChoice::Always,
        Some(ColorArg::Never) => ColorChoice::Never,
        _ => ColorChoice::Auto,
    };
    Palette {
        enabled: !json && choice.enabled(),
    }
}

fn mirror_config(cap: &CaptureArgs) -> MirrorConfig {
    let mut cfg = MirrorConfig::default();
    cfg.receive.reassembly = match cap.reassembly {
        ReassemblyArg::Index => Reassembly::ByIndex,
        ReassemblyArg::Arrival => Reassembly::Arrival,
    };
    cfg
}

/// Whether to read on after a packet.
enum Next {
    Continue,
    Stop,
}

pub(crate) use crate::dissect::IcmpNote as IcmpSeen;

/// Read the capture, dissect every datagram, feed the mirror, and hand each
/// RakNet packet (with the mirror's findings attached) to `each`. Returns the
/// exit code: 0, or 3 for a file that is not a capture, 5 for one cut short.
fn drive(
    cap: &CaptureArgs,
    mirror: &mut Mirror,
    out: &mut impl Write,
    each: impl FnMut(
        &mut Packet<'_>,
        &mut Observation,
        Duration,
        &mut dyn Write,
    ) -> anyhow::Result<Next>,
) -> anyhow::Result<u8> {
    drive_from(None, cap, false, mirror, out, &mut |_, _| Ok(()), each)
}

/// [`drive`] over `reader` when given (live capture), else over the capture
/// file of `cap`; `trace` builds each packet's `-V` field tree, and `on_icmp`
/// gets the ICMP errors about the flows' datagrams.
fn drive_from(
    reader: Option<CaptureReader>,
    cap: &CaptureArgs,
    trace: bool,
    mirror: &mut Mirror,
    out: &mut impl Write,
    on_icmp: &mut dyn FnMut(IcmpSeen, &mut dyn Write) -> anyhow::Result<()>,
    mut each: impl FnMut(
        &mut Packet<'_>,
        &mut Observation,
        Duration,
        &mut dyn Write,
    ) -> anyhow::Result<Next>,
) -> anyhow::Result<u8> {
    let mut bar: Option<Progress> = None;
    let mut reader = match reader {
        Some(r) => r,
        None => {
            let Some(path) = cap.read_file.as_ref().or(cap.file.as_ref()) else {
                eprintln!(
                    "raknet-dissect: no capture file given (FILE, -r FILE, or - for standard input)"
                );
                return Ok(EXIT_USAGE);
            };
            bar = Progress::start(path, cap.summary_only);
            match CaptureReader::open_counted(path, bar.as_ref().map(|b| Arc::clone(&b.consumed))) {
                Ok(r) => r.in_background(),
                Err(e) => {
                    eprintln!("raknet-dissect: {e}");
                    return Ok(EXIT_BAD_FILE);
                }
            }
        }
    };
    let mut dissector = Dissector::new(Options {
        ports: cap.decode_as.clone(),
        heuristics: !cap.no_heuristics,
        trace,
        ..Options::default()
    });
    let mut first_ts: Option<Duration> = None;
    let mut obs = Observation::default();
    let mut datagrams = 0u64;
    while let Some(item) = reader.next_datagram() {
        datagrams += 1;
        if datagrams % 1024 == 0 {
            if let Some(b) = &bar {
                b.update();
            }
        }
        let d = match item {
            Ok(d) => d,
            Err(e) => {
                drop(bar.take());
                out.flush()?;
                eprintln!("raknet-dissect: warning: {e}");
                return Ok(EXIT_CUT_SHORT);
            }
        };
        let since = *first_ts.get_or_insert(d.ts);
        if let Some(icmp) = &d.icmp {
            // Not traffic: an error about a datagram of the flow it quotes.
            if let Some(f) = dissector.flow(d.src, d.dst) {
                on_icmp(
                    IcmpSeen {
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
                    },
                    &mut *out,
                )?;
            }
            reader.recycle(d);
            continue;
        }
        let Some(mut p) = dissector.dissect(&d) else {
            reader.recycle(d);
            continue;
        };
        mirror.observe(&p, || dissector.flow(p.src, p.dst), &mut obs);
        let next = each(&mut p, &mut obs, since, out)?;
        dissector.recycle(p);
        reader.recycle(d);
        if matches!(next, Next::Stop) {
            break;
        }
    }
    drop(bar);
    if io::stderr().is_terminal() {
        out.flush()?;
        let (c, d) = (reader.stats(), dissector.stats());
        eprintln!(
            "raknet-dissect: {} frames, {} RakNet packets in {} flows, {} other UDP datagrams and {} non-UDP frames skipped",
            c.frames, d.raknet_packets, d.flows, d.not_raknet, c.non_udp
        );
    }
    Ok(EXIT_OK)
}

/// Files smaller than this are read without a progress bar.
const PROGRESS_MIN_BYTES: u64 = 16 << 20;

/// A progress bar on standard error while a capture file is read; cleared
/// when dropped.
struct Progress {
    bar: indicatif::ProgressBar,
    consumed: Arc<AtomicU64>,
}

impl Progress {
    /// A bar for reading `path`, when standard error is a terminal, the file
    /// is at least [`PROGRESS_MIN_BYTES`], and standard output is not the
    /// same terminal (unless the command prints only at the end).
    fn start(path: &std::path::Path, summary_only: bool) -> Option<Progress> {
        if !io::stderr().is_terminal() || (io::stdout().is_terminal() && !summary_only) {
            return None;
        }
        let meta = std::fs::metadata(path).ok()?;
        if !meta.is_file() || meta.len() < PROGRESS_MIN_BYTES {
            return None;
        }
        let bar = indicatif::ProgressBar::new(meta.len());
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{spinner} reading {bytes}/{total_bytes} [{wide_bar}] {bytes_per_sec}, {eta} left",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        Some(Progress {
            bar,
            consumed: Arc::new(AtomicU64::new(0)),
        })
    }

    fn update(&self) {
        self.bar.set_position(self.consumed.load(Ordering::Relaxed));
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// `read`: one line (or tree, or JSON record) per RakNet packet.
pub fn run_read(args: &ReadArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    read_packets(args, None, None, out)
}

/// `read`, over a live reader when given; `flows` collects the flows as
/// they end (and at the end), for a table after the packets.
fn read_packets(
    args: &ReadArgs,
    live: Option<CaptureReader>,
    mut flows: Option<&mut Vec<FlowMirror>>,
    out: &mut impl Write,
) -> anyhow::Result<u8> {
    let shown = match args.display.compile(RecordType::Packet, args.json) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let json = shown.json;
    let pal = palette(args.color, json || shown.export.is_some());
    let mut cfg = mirror_config(&args.capture);
    // Packets need the mirror's findings, not the messages' bytes.
    cfg.receive.keep_data = false;
    cfg.messages = false;
    let mut mirror = Mirror::new(cfg, flows.is_some());
    let mut read = 0u64;
    // Packet and ICMP lines share one time column (for -t d and dd).
    let lines = std::cell::RefCell::new(text::LineFormatter::new(pal, args.display.time_format));
    let mut buf: Vec<u8> = Vec::with_capacity(512);
    let mut row = String::new();
    let trace = args.verbose && !json && shown.export.is_none();
    if let Some(x) = shown.export.as_ref().filter(|_| !args.quiet) {
        out.write_all(x.header().as_bytes())?;
    }
    let cap = CaptureArgs {
        summary_only: args.quiet,
        ..args.capture.clone()
    };
    // ICMP errors about a flow's datagrams are lines (records) of their own,
    // unless a filter or a field export chose what to print.
    let icmp_shown = !args.quiet && shown.export.is_none() && shown.filter.is_none();
    let code = drive_from(
        live,
        &cap,
        trace,
        &mut mirror,
        out,
        &mut |n, out| {
            lines.borrow_mut().seen(n.ts);
            if !icmp_shown {
            } else if json {
                serde_json::to_writer(&mut *out, &IcmpJson::new(&n))?;
                out.write_all(b"\n")?;
            } else {
                writeln!(out, "{}", lines.borrow_mut().icmp_line(&n))?;
            }
            Ok(())
        },
        |p, obs, since, out| {
            p.anomalies.append(&mut obs.anomalies);
            if let Some(f) = flows.as_deref_mut() {
                f.extend(
                    obs.closed
                        .drain(..)
                        .take(MAX_TABLE_ROWS.saturating_sub(f.len())),
                );
            }
            read += 1;
            let stop = if args.count.is_some_and(|n| read >= n) {
                Next::Stop
            } else {
                Next::Continue
            };
            lines.borrow_mut().seen(p.ts);
            let record = Since {
                record: &*p,
                start: since,
            };
            if args.quiet || !shown.wants(&record) {
                // Counted (for -c), not shown.
            } else if let Some(x) = &shown.export {
                row.clear();
                x.push_row(&record, &mut row);
                out.write_all(row.as_bytes())?;
            } else if json {
                serde_json::to_writer(&mut *out, &PacketJson::new(p))?;
                out.write_all(b"\n")?;
            } else {
                buf.clear();
                lines.borrow_mut().push_line(&mut buf, p, since);
                buf.push(b'\n');
                out.write_all(&buf)?;
                if let Some(t) = &p.trace {
                    out.write_all(text::tree(p, t).as_bytes())?;
                }
                if args.hex {
                    out.write_all(text::hex_dump(p.payload).as_bytes())?;
                }
                if args.verbose || args.hex {
                    writeln!(out)?;
                }
            }
            Ok(stop)
        },
    )?;
    // What the receivers still held at the end (incomplete splits, messages
    // waiting in ordering heaps) belongs to no packet: a line each, unless
    // a filter or a field export chose what to print.
    let end = mirror.finish();
    let plain = shown.export.is_none() && shown.filter.is_none();
    if plain && !args.quiet && args.count.is_none_or(|n| read < n) && !end.anomalies.is_empty() {
        if json {
            let record = EndJson {
                kind_of_record: "end_of_capture",
                anomalies: &end.anomalies,
            };
            serde_json::to_writer(&mut *out, &record)?;
            out.write_all(b"\n")?;
        } else {
            for a in &end.anomalies {
                let line = format!("end of capture: [{}: {}]", a.kind, a.detail);
                writeln!(out, "{}", pal.paint_anomaly(&line))?;
            }
        }
    }
    if let Some(f) = flows {
        f.extend(end.closed);
    }
    Ok(code)
}

/// `messages`: what each application received, in delivery order.
pub fn run_messages(args: &MessagesArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let shown = match args.display.compile(RecordType::Message, args.json) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let pal = palette(args.color, shown.json || shown.export.is_some());
    let mut mirror = Mirror::new(mirror_config(&args.capture), false);
    let want = |m: &Message| {
        args.flow.is_none_or(|f| f == m.flow)
            && args.dir.is_none_or(|d| {
                m.dir
                    == match d {
                        DirArg::C2s => Dir::C2s,
                        DirArg::S2c => Dir::S2c,
                    }
            })
            && args.channel.is_none_or(|c| m.channel == Some(c))
            && args.id.is_none_or(|i| m.data.first() == Some(&i))
    };
    if let Some(x) = &shown.export {
        out.write_all(x.header().as_bytes())?;
    }
    let mut first: Option<Duration> = None;
    let mut row = String::new();
    let mut time = text::TimeColumn::new(args.display.time_format);
    let mut emit = |m: &Message, since: Duration, out: &mut dyn Write| -> anyhow::Result<()> {
        time.seen(m.ts);
        let message = MessageRecord {
            message: m,
            data_limit: args.data_limit,
        };
        let record = Since {
            record: &message,
            start: since,
        };
        if !want(m) || !shown.wants(&record) {
            return Ok(());
        }
        if let Some(x) = &shown.export {
            row.clear();
            x.push_row(&record, &mut row);
            out.write_all(row.as_bytes())?;
        } else if shown.json {
            serde_json::to_writer(&mut *out, &MessageJson::new(m, args.data_limit))?;
            out.write_all(b"\n")?;
        } else {
            writeln!(out, "{}", text::message_line(m, since, &mut time, pal))?;
        }
        Ok(())
    };
    let code = drive(&args.capture, &mut mirror, out, |_, obs, since, out| {
        first.get_or_insert(since);
        for m in &obs.messages {
            emit(m, since, out)?;
        }
        Ok(Next::Continue)
    })?;
    let since = first.unwrap_or_default();
    for m in &mirror.finish().messages {
        emit(m, since, out)?;
    }
    Ok(code)
}

/// `fields`: every name `-Y` and `-e` know, with its type, its records
/// and its meaning.
fn print_fields(json: bool, out: &mut impl Write) -> anyhow::Result<u8> {
    #[derive(serde::Serialize)]
    struct FieldJson {
        #[serde(rename = "type")]
        kind_of_record: &'static str,
        name: &'static str,
        value: &'static str,
        records: Vec<&'static str>,
        meaning: &'static str,
    }
    let mut rows = Vec::new();
    for d in crate::display::FIELDS {
        let records: Vec<&'static str> = RecordType::ALL
            .into_iter()
            .filter(|r| d.in_record(*r))
            .map(RecordType::as_str)
            .collect();
        if json {
            serde_json::to_writer(
                &mut *out,
                &FieldJson {
                    kind_of_record: "field",
                    name: d.name,
                    value: d.ty.as_str(),
                    records,
                    meaning: d.meaning,
                },
            )?;
            out.write_all(b"\n")?;
        } else {
            rows.push(vec![
                d.name.to_string(),
                d.ty.as_str().to_string(),
                records.join(", "),
                d.meaning.to_string(),
            ]);
        }
    }
    if !json {
        let header = ["field", "value", "records", "meaning"];
        writeln!(
            out,
            "{}",
            table::counts_table(&header, rows, header.len(), terminal_width())
        )?;
    }
    Ok(EXIT_OK)
}

/// Rows the `flows` table shows at most; past them, `--json` has every flow.
const MAX_TABLE_ROWS: usize = 10_000;

/// `flows`: a row per flow, or a `flow` record per flow as it ends (evicted
/// while reading, or at the end of the capture).
pub fn run_flows(args: &FlowsArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let mut cfg = mirror_config(&args.capture);
    // The table needs counts and findings, not the messages' bytes.
    cfg.receive.keep_data = false;
    cfg.messages = false;
    let mut mirror = Mirror::new(cfg, true);
    let shown = match args.display.compile(RecordType::Flow, args.json) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    if let Some(x) = &shown.export {
        out.write_all(x.header().as_bytes())?;
    }
    let mut rows: Vec<FlowMirror> = Vec::new();
    let mut omitted = 0usize;
    let mut line = String::new();
    let mut take = |closed: &mut Vec<FlowMirror>, out: &mut dyn Write| -> anyhow::Result<()> {
        for f in closed.drain(..) {
            // A filter or an export reads the record itself.
            let record = (shown.filter.is_some() || shown.export.is_some())
                .then(|| serde_json::to_value(FlowJson::new(&f)).map(JsonRecord))
                .transpose()?;
            if record.as_ref().is_some_and(|r| !shown.wants(r)) {
                continue;
            }
            if let (Some(x), Some(r)) = (&shown.export, &record) {
                line.clear();
                x.push_row(r, &mut line);
                out.write_all(line.as_bytes())?;
            } else if shown.json {
                serde_json::to_writer(&mut *out, &FlowJson::new(&f))?;
                out.write_all(b"\n")?;
            } else if rows.len() < MAX_TABLE_ROWS {
                rows.push(f);
            } else {
                omitted += 1;
            }
        }
        Ok(())
    };
    let code = drive(
        &args.capture.printing_at_end(),
        &mut mirror,
        out,
        |_, obs, _, out| {
            take(&mut obs.closed, out)?;
            Ok(Next::Continue)
        },
    )?;
    take(&mut mirror.finish().closed, out)?;
    if !shown.json && shown.export.is_none() {
        rows.sort_by_key(|f| f.id);
        let refs: Vec<&FlowMirror> = rows.iter().collect();
        writeln!(out, "{}", table::flows_table(&refs, terminal_width()))?;
        if omitted > 0 {
            writeln!(
                out,
                "{omitted} more flows not shown: --json lists every flow"
            )?;
        }
    }
    Ok(code)
}

/// The width to fit tables to: the terminal's, from `COLUMNS`, when standard
/// output is one; none for a pipe or a file.
fn terminal_width() -> Option<u16> {
    if !io::stdout().is_terminal() {
        return None;
    }
    std::env::var("COLUMNS").ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_as_spellings() {
        assert_eq!(parse_decode_as("19132"), Ok(19132));
        assert_eq!(parse_decode_as("udp.port==7777,raknet"), Ok(7777));
        assert!(parse_decode_as("udp.port==53,dns").is_err());
        assert!(parse_decode_as("x").is_err());
    }

    #[test]
    fn cli_shapes() {
        Cli::command_for_test().debug_assert();
        let c = Cli::try_parse_from(["raknet-dissect", "f.pcap", "-V"]).unwrap();
        assert!(c.command.is_none() && c.read.verbose);
        let c = Cli::try_parse_from([
            "raknet-dissect",
            "messages",
            "f.pcap",
            "--dir",
            "c2s",
            "--id",
            "0x86",
        ])
        .unwrap();
        assert!(matches!(
            c.command,
            Some(Command::Messages(MessagesArgs { id: Some(0x86), .. }))
        ));
        let c = Cli::try_parse_from(["raknet-dissect", "read", "-r", "f.pcap"]).unwrap();
        assert!(matches!(c.command, Some(Command::Read(_))));
    }

    impl Cli {
        fn command_for_test() -> clap::Command {
            <Cli as clap::CommandFactory>::command()
        }
    }
}
