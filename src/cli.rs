//! The command line: clap definitions and the commands that drive the
//! library. `main.rs` only calls [`main`].
//!
//! Exit codes: 0 success (also when a reader closes the pipe), 1 an
//! unexpected error, 2 a usage error, 3 a file that cannot be opened or is
//! not a capture, 5 a capture cut short (everything before the cut was
//! printed).

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::capture::CaptureReader;
use crate::dissect::{Dissector, Options};
use crate::output::json::PacketJson;
use crate::output::text::{self, Palette};
use crate::output::ColorChoice;

pub const EXIT_OK: u8 = 0;
pub const EXIT_ERROR: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_BAD_FILE: u8 = 3;
pub const EXIT_CUT_SHORT: u8 = 5;

#[derive(Parser, Debug)]
#[command(
    name = "raknet-dissect",
    version,
    about = "Dissect and analyze RakNet traffic (original RakNet and Minecraft Bedrock)",
    args_conflicts_with_subcommands = true,
    disable_version_flag = true,
    after_help = "Exit codes: 0 ok, 1 error, 2 usage, 3 file cannot be opened or is not a capture, \
                  5 capture cut short (everything before the cut is printed)."
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorArg {
    Auto,
    Always,
    Never,
}

#[derive(Args, Debug, Default)]
pub struct ReadArgs {
    /// Capture file (pcap or pcapng); `-` reads standard input.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Capture file, tshark's spelling.
    #[arg(short = 'r', long = "read-file", value_name = "FILE")]
    pub read_file: Option<PathBuf>,
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
    /// Decode a UDP port as RakNet: `PORT` or tshark's `udp.port==PORT,raknet`. Repeatable.
    #[arg(short = 'd', long = "decode-as", value_name = "PORT", value_parser = parse_decode_as)]
    pub decode_as: Vec<u16>,
    /// Only flows whose handshake is seen, or forced with -d, are RakNet.
    #[arg(long)]
    pub no_heuristics: bool,
    /// Colour the output: auto (a terminal, without NO_COLOR or TERM=dumb), always, never.
    #[arg(long, value_enum, default_value = "auto", value_name = "WHEN")]
    pub color: Option<ColorArg>,
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
    let read = match cli.command {
        Some(Command::Read(a)) => a,
        None => cli.read,
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let code = match run_read(&read, &mut out) {
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

/// `read`: one line (or tree, or JSON record) per RakNet packet.
pub fn run_read(args: &ReadArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let Some(path) = args.read_file.as_ref().or(args.file.as_ref()) else {
        eprintln!("raknet-dissect: no capture file given (FILE, -r FILE, or - for standard input)");
        return Ok(EXIT_USAGE);
    };
    let mut reader = match CaptureReader::open(path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("raknet-dissect: {e}");
            return Ok(EXIT_BAD_FILE);
        }
    };
    let color = match args.color {
        Some(ColorArg::Always) => ColorChoice::Always,
        Some(ColorArg::Never) => ColorChoice::Never,
        _ => ColorChoice::Auto,
    };
    let pal = Palette {
        enabled: !args.json && color.enabled(),
    };
    let mut dissector = Dissector::new(Options {
        ports: args.decode_as.clone(),
        heuristics: !args.no_heuristics,
        trace: args.verbose && !args.json,
        ..Options::default()
    });
    let mut first_ts: Option<Duration> = None;
    let mut shown = 0u64;
    let mut lines = text::LineFormatter::new(pal);
    let mut buf: Vec<u8> = Vec::with_capacity(512);
    while let Some(item) = reader.next_datagram() {
        let d = match item {
            Ok(d) => d,
            Err(e) => {
                out.flush()?;
                eprintln!("raknet-dissect: warning: {e}");
                return Ok(EXIT_CUT_SHORT);
            }
        };
        let since = *first_ts.get_or_insert(d.ts);
        let Some(p) = dissector.dissect(&d) else {
            reader.recycle(d);
            continue;
        };
        if args.json {
            serde_json::to_writer(&mut *out, &PacketJson::new(&p))?;
            out.write_all(b"\n")?;
        } else {
            buf.clear();
            lines.push_line(&mut buf, &p, since);
            buf.push(b'\n');
            out.write_all(&buf)?;
            if let Some(t) = &p.trace {
                out.write_all(text::tree(&p, t).as_bytes())?;
            }
            if args.hex {
                out.write_all(text::hex_dump(p.payload).as_bytes())?;
            }
            if args.verbose || args.hex {
                writeln!(out)?;
            }
        }
        drop(p);
        reader.recycle(d);
        shown += 1;
        if args.count.is_some_and(|n| shown >= n) {
            break;
        }
    }
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
        let c = Cli::try_parse_from(["raknet-dissect", "read", "-r", "f.pcap"]).unwrap();
        assert!(matches!(c.command, Some(Command::Read(_))));
    }

    impl Cli {
        fn command_for_test() -> clap::Command {
            <Cli as clap::CommandFactory>::command()
        }
    }
}
