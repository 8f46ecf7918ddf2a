//! `replay FILE --target HOST:PORT`: arguments, and `replay::run` printed.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::args::{parse_decode_as, parse_seconds, parse_speed, parse_target, OutputArgs};
use super::EXIT_NO_CONNECTION;
use super::{EXIT_BAD_FILE, EXIT_ERROR, EXIT_OK, EXIT_USAGE};
use crate::peer::record::Recorder;
use crate::pipeline::PipelineOptions;
use crate::replay::run::{self, LoadError, ReplayOptions, ReplayOutcome};
use crate::replay::CapturedSession;

/// Exit code of a replay the server cut short (it disconnected, or went
/// silent) before every message was sent and acknowledged.
pub const EXIT_REPLAY_CUT: u8 = 7;

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// Capture file (pcap or pcapng) holding the session.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The live server: HOST:PORT, [IPV6]:PORT, or HOST (port 19132).
    #[arg(long, value_name = "HOST:PORT", value_parser = parse_target)]
    pub target: SocketAddr,
    /// The flow to replay (see `flows`); default: the first whose client sent messages.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub flow: Option<u32>,
    /// Play the captured timing this many times faster.
    #[arg(long, default_value = "1", value_name = "X", conflicts_with = "asap", value_parser = parse_speed)]
    pub speed: f64,
    /// Send as fast as the connection allows, ignoring the captured timing.
    #[arg(long)]
    pub asap: bool,
    /// RakNet protocol byte (default: the captured one).
    #[arg(long, value_name = "V")]
    pub protocol: Option<u8>,
    /// Largest MTU to probe with (default: the captured one).
    #[arg(long, value_name = "M")]
    pub mtu: Option<u16>,
    /// Internal addresses in NewIncomingConnection (default: 10 for protocol 6, else 20).
    #[arg(long, value_name = "N")]
    pub addresses: Option<usize>,
    /// Seconds to keep receiving after everything was sent and acknowledged.
    #[arg(long, default_value = "1", value_name = "SECONDS", value_parser = parse_seconds)]
    pub wait: Duration,
    /// Write the replayed session's own traffic to this pcapng file.
    #[arg(long, value_name = "OUT.pcapng")]
    pub record: Option<PathBuf>,
    /// Decode a UDP port of the capture as RakNet. Repeatable.
    #[arg(short = 'd', long = "decode-as", value_name = "PORT", value_parser = parse_decode_as)]
    pub decode_as: Vec<u16>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// A session out of capture files; `Err` is the exit code, after one line.
pub(super) fn load(
    files: &[PathBuf],
    flow: Option<u32>,
    ports: &[u16],
) -> Result<CapturedSession, u8> {
    let opts = PipelineOptions {
        decode_as: ports.to_vec(),
        ..PipelineOptions::default()
    };
    run::load(files, flow, opts).map_err(|e| {
        eprintln!("raknet-dissect: {e}");
        match e {
            LoadError::NoSession { why, .. } if why.starts_with("no RakNet flow ") => EXIT_USAGE,
            _ => EXIT_BAD_FILE,
        }
    })
}

pub fn run_replay(a: &ReplayArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let session = match load(std::slice::from_ref(&a.file), a.flow, &a.decode_as) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let recorder = match &a.record {
        Some(p) => match Recorder::create(p) {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("raknet-dissect: --record {}: {e}", p.display());
                return Ok(EXIT_ERROR);
            }
        },
        None => None,
    };
    let o = ReplayOptions {
        file: a.file.display().to_string(),
        target: a.target,
        speed: a.speed,
        asap: a.asap,
        protocol: a.protocol,
        mtu: a.mtu,
        addresses: a.addresses,
        wait: a.wait,
    };
    let mut p = a.output.printer(out);
    // The server's messages are records with --json; text shows the summary.
    p.message_lines = false;
    Ok(match run::replay(&session, &o, recorder, &mut p)? {
        ReplayOutcome::Completed => EXIT_OK,
        ReplayOutcome::CutShort => EXIT_REPLAY_CUT,
        ReplayOutcome::NoConnection => EXIT_NO_CONNECTION,
    })
}
