//! The argument groups the subcommands share, flattened into each that
//! takes them, so that a flag means the same wherever it is accepted:
//! [`OutputArgs`] (`--json`, `--color`, `-q`) in every command that prints,
//! [`CaptureArgs`] (files, `-r`, `-d`, `--flow`, `-c`) in every command that
//! reads a capture, [`DisplayArgs`] (`-Y`, `-T`, `-e`, `-E`) in every command
//! that prints records of a capture.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, ValueEnum};

use super::printer::Printer;
use crate::output::text::TimeFormat;
use crate::output::ColorChoice;
use crate::pipeline::drive::Reading;
use crate::session::receive::Reassembly;

/// `--json`, `--color`, `-q`: every command that prints.
#[derive(Args, Debug, Default, Clone)]
pub struct OutputArgs {
    /// NDJSON: one JSON object per line, each with a `type` (docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// Colour the output: auto (a terminal, without NO_COLOR or TERM=dumb), always, never.
    #[arg(long, visible_alias = "colour", default_value = "auto", value_name = "WHEN",
          value_parser = PossibleValuesParser::new(["auto", "always", "never"]).map(ColorChoice::from_name))]
    pub color: ColorChoice,
    /// Quiet: no per-packet or per-message output, only what comes at the end
    /// (summaries, tables); nothing at all for a command that prints only that.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

impl OutputArgs {
    /// The printer of a live command's records, as these flags ask.
    pub fn printer<'o, W: std::io::Write>(&self, out: &'o mut W) -> Printer<'o, W> {
        let pal = crate::output::text::Palette::choose(self.color, self.json);
        Printer::new(out, self.json, self.quiet, pal)
    }
}

/// Which UDP is RakNet and how it is reassembled: every command that dissects.
#[derive(Args, Debug, Default, Clone)]
pub struct DecodeArgs {
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
    /// A DTLS key log (NSS format, as SSLKEYLOGFILE) opening NetherNet's
    /// records; SSLKEYLOGFILE and a pcapng's own secrets are read too.
    /// Repeatable.
    #[arg(long, value_name = "FILE")]
    pub tls_keylog: Vec<PathBuf>,
}

impl DecodeArgs {
    pub fn reassembly(&self) -> Reassembly {
        match self.reassembly {
            ReassemblyArg::Index => Reassembly::ByIndex,
            ReassemblyArg::Arrival => Reassembly::Arrival,
        }
    }
}

/// Where the capture comes from, which UDP is RakNet, and how much of it:
/// every command that reads a capture.
#[derive(Args, Debug, Default, Clone)]
pub struct CaptureArgs {
    /// Capture files (pcap or pcapng), read in this order as one capture; `-`
    /// reads standard input; a directory, its captures; a quoted glob, its matches.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// A capture file, tshark's spelling (repeatable).
    #[arg(short = 'r', long = "read-file", value_name = "FILE")]
    pub read_file: Vec<PathBuf>,
    #[command(flatten)]
    pub decode: DecodeArgs,
    /// Only this flow (its number, as `flows` shows it); a number the capture
    /// does not have is an error (exit 2) once the capture is read.
    #[arg(long, value_name = "N", value_parser = crate::output::text::parse_count::<u32>)]
    pub flow: Option<u32>,
    /// Stop after reading N RakNet packets (as tshark's -c; N > 0).
    #[arg(short = 'c', long = "count", value_name = "N", value_parser = crate::output::text::parse_count::<u64>)]
    pub count: Option<u64>,
    /// Threads that print (lines, records, field rows) while one reads and
    /// another dissects: the cores available unless given; 1 runs all on
    /// one thread, the reading too. The output is the same whatever the
    /// number.
    #[arg(long, value_name = "N", value_parser = crate::output::text::parse_count::<u16>)]
    pub threads: Option<u16>,
    /// Each file is a capture of its own (its own flows, flow numbers and
    /// times), not a part of one: the files are read in parallel (--threads)
    /// and printed one after the other, every record naming its file.
    #[arg(long)]
    pub separate: bool,
    /// Set on the run of one file of a `--separate` run.
    #[arg(skip)]
    pub part: Option<crate::pipeline::separate::Part>,
}

impl CaptureArgs {
    /// The files to read: the FILE arguments, then the -r ones.
    pub fn paths(&self) -> Vec<PathBuf> {
        crate::pipeline::expand_paths(self.files.iter().chain(&self.read_file).cloned())
    }

    /// What the pipeline reads, and how.
    pub fn reading(&self) -> Reading {
        let paths = self.files.iter().chain(&self.read_file).cloned();
        let mut r = Reading::new(paths, self.threads);
        let (o, d) = (&mut r.options, &self.decode);
        (o.decode_as, o.no_heuristics) = (d.decode_as.clone(), d.no_heuristics);
        (r.reassembly, r.count, r.flow) = (d.reassembly(), self.count, self.flow);
        r.tls_keylog = d.tls_keylog.clone();
        r.tls_keylog_env = std::env::var_os("SSLKEYLOGFILE").map(PathBuf::from);
        (r.notes, r.progress) = (super::stderr_notes(), super::progress::bar());
        r.part = self.part.clone();
        r
    }

    /// [`Self::reading`] for a command that prints only once the capture is
    /// read: its progress bar may share a terminal with standard output.
    pub fn reading_at_end(&self) -> Reading {
        Reading {
            summary_only: true,
            ..self.reading()
        }
    }

    pub fn threads(&self) -> usize {
        crate::pipeline::threads(self.threads, &self.paths())
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ReassemblyArg {
    #[default]
    Index,
    Arrival,
}

/// What to print of each record and which records: `-Y`, `-T`, `-e`, `-E`.
#[derive(Args, Debug, Default, Clone)]
pub struct DisplayArgs {
    /// Display filter over the record's field names (`raknet-dissect fields`
    /// lists them): `kind == "nack"`, `id == 0x86 && len > 1000`, `dir == c2s`.
    #[arg(
        short = 'Y',
        long = "filter",
        visible_alias = "display-filter",
        value_name = "EXPR"
    )]
    pub filter: Option<String>,
    /// Output format: text (the default), json (as --json), or fields (the -e fields).
    #[arg(short = 'T', value_enum, value_name = "FORMAT")]
    pub format: Option<crate::display::print::Format>,
    /// A field to print with -T fields (repeatable, in order); implies -T fields.
    #[arg(short = 'e', value_name = "FIELD")]
    pub fields: Vec<String>,
    /// Field export option: header=y|n, separator=/t|/s|TEXT, aggregator=TEXT,
    /// occurrence=a|f|l, quote=d|s|n (repeatable).
    #[arg(short = 'E', value_name = "OPTION=VALUE")]
    pub export_options: Vec<String>,
    /// Where the records go instead of their lines (`export`'s tables).
    #[arg(skip)]
    pub sink: Option<crate::records::walk::SharedSink>,
}

/// Key material for Bedrock's encryption (docs/bedrock-protocol.md §8).
#[derive(Args, Debug, Default, Clone)]
pub struct KeyArgs {
    /// A key log (BEDROCK_KEY, BEDROCK_SALT_KEY, ... lines; repeatable).
    #[arg(long, value_name = "FILE")]
    pub keylog: Vec<PathBuf>,
    /// A PEM file with EC P-384 private keys of either side (repeatable).
    #[arg(long, value_name = "PEM")]
    pub key: Vec<PathBuf>,
    /// The keys, once read (for the runs of a `--separate` run).
    #[arg(skip)]
    pub loaded: Option<crate::bedrock::Keys>,
}

impl KeyArgs {
    /// The keys; `Err` is the exit code after one line on stderr.
    pub fn load(&self) -> Result<crate::bedrock::Keys, u8> {
        if let Some(keys) = &self.loaded {
            return Ok(keys.clone());
        }
        match crate::bedrock::Keys::from_files(&self.keylog, &self.key) {
            Ok((keys, warnings)) => {
                warnings
                    .iter()
                    .for_each(|w| eprintln!("raknet-dissect: warning: {w}"));
                Ok(keys)
            }
            Err(e) if e.is_wrong_file() => Err(super::say(&e.to_string(), super::EXIT_USAGE)),
            Err(e) => Err(super::say(&e.to_string(), super::EXIT_BAD_FILE)),
        }
    }
}

/// The time column of the commands that print a line per packet or message.
#[derive(Args, Debug, Default, Clone, Copy)]
pub struct TimeArgs {
    /// Time column of packet and message lines (tshark's -t): r since the first packet,
    /// a time of day (UTC), ad date and time (UTC), e epoch seconds, d since the
    /// previous packet read, dd since the previous line shown.
    #[arg(short = 't', default_value = "r", value_name = "FORMAT", value_parser = TimeFormat::parser())]
    pub time_format: TimeFormat,
}

/// NetherNet's options of `connect --bedrock` and `serve --bedrock`.
#[derive(Args, Debug, Default, Clone)]
pub struct NetherNetArgs {
    #[command(flatten)]
    pub transport: TransportArgs,
    /// NetherNet: append each connection's DTLS key-log line here (default: $SSLKEYLOGFILE).
    #[arg(long, value_name = "FILE", requires = "bedrock")]
    pub tls_keylog_out: Option<PathBuf>,
    /// NetherNet: the P-384 key of our a=identity (PEM; made on first use).
    #[arg(long, value_name = "FILE", requires = "bedrock")]
    pub identity: Option<PathBuf>,
}

/// `--transport` and `--nethernet`: `ping`, `connect`, `probe`, and `serve --bedrock`.
#[derive(Args, Debug, Default, Clone)]
pub struct TransportArgs {
    /// NetherNet (/v1/join on the TCP port), RakNet (the UDP port), or auto (a client: NetherNet first; serve: both).
    #[arg(long, value_enum, value_name = "T")]
    pub transport: Option<crate::peer::run::Transport>,
    /// NetherNet (a client: only it, `--transport nethernet`; serve --bedrock: beside RakNet).
    #[arg(long, conflicts_with = "transport")]
    pub nethernet: bool,
}

pub use crate::dissect::parse_decode_as;
pub use crate::output::text::{parse_interval, parse_seconds, parse_speed};
pub use crate::peer::run::resolve as parse_target;
pub use crate::wire::cursor::parse_hex;
pub use crate::wire::ids::parse_id;
