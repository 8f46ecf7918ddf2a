//! `replay FILE --target HOST:PORT`: arguments, and `replay::run` printed.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::args::{parse_decode_as, parse_seconds, parse_speed, parse_target, OutputArgs};
use super::{EXIT_BAD_FILE, EXIT_ERROR, EXIT_OK};
use super::{EXIT_NO_CONNECTION, EXIT_REPLAY_CUT};
use crate::peer::record::Recorder;
use crate::replay::run::{self, ReplayOptions, ReplayOutcome};
use crate::replay::CapturedSession;

#[derive(Args, Debug, Clone)]
pub struct ReplayArgs {
    /// Capture file (pcap or pcapng) holding the session.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The live server: HOST:PORT, [IPV6]:PORT, or HOST (port 19132).
    #[arg(long, value_name = "HOST:PORT", value_parser = parse_target)]
    pub target: SocketAddr,
    /// The flow to replay (see `flows`); default: the first whose client sent messages.
    #[arg(long, value_name = "N", value_parser = crate::output::text::parse_count::<u32>)]
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
    pub game: ReplayBedrockArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `replay --bedrock`: the captured client's game packets in a fresh login, the answers compared.
#[derive(Args, Debug, Clone, Default)]
pub struct ReplayBedrockArgs {
    /// Replay the captured Bedrock client's game packets after its spawn (decrypted: --keylog, --key).
    #[arg(long)]
    pub bedrock: bool,
    #[command(flatten)]
    pub keys: super::args::KeyArgs,
    /// Append the new session's key to this key log (default: $BEDROCK_KEYLOG_FILE).
    #[arg(long, value_name = "FILE", requires = "bedrock")]
    pub keylog_out: Option<PathBuf>,
}

/// A session out of capture files; `Err` is the exit code, after one line.
pub(super) fn load(
    files: &[PathBuf],
    flow: Option<u32>,
    ports: &[u16],
) -> Result<CapturedSession, u8> {
    run::load_ports(files, flow, ports).map_err(|e| {
        eprintln!("raknet-dissect: {e}");
        e.exit_code()
    })
}

/// The game session of a capture (`--bedrock`); `Err` is the exit code,
/// after one line.
pub(super) fn load_game(
    file: &std::path::Path,
    flow: Option<u32>,
    keys: &super::args::KeyArgs,
) -> Result<crate::replay::bedrock::GameScript, u8> {
    let keys = keys.load()?;
    crate::replay::bedrock::load_game(&[file.to_path_buf()], flow, keys)
        .map_err(|why| super::say(&format!("{}: {why}", file.display()), EXIT_BAD_FILE))
}

pub fn run_replay(a: &ReplayArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    if a.game.bedrock {
        let script = match load_game(&a.file, a.flow, &a.game.keys) {
            Ok(s) => s,
            Err(code) => return Ok(code),
        };
        let o = crate::replay::bedrock::GameReplayOptions {
            file: a.file.display().to_string(),
            target: a.target,
            asap: a.asap,
            speed: a.speed,
            wait: a.wait,
            keylog_out: crate::peer::bedrock::keylog_path(a.game.keylog_out.clone()),
        };
        let cfg =
            crate::peer::bedrock::game_dialect(&script.version, a.protocol, a.addresses, a.mtu);
        let mut p = a.output.printer(out);
        return Ok(crate::replay::bedrock::replay_game(&script, cfg?, &o, &mut p)?.exit_code());
    }
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
