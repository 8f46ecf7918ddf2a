//! `replay FILE --target HOST:PORT`: arguments, and `replay::run` printed.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::args::{parse_decode_as, parse_seconds, parse_speed, parse_target, OutputArgs};
use super::Code;
use crate::replay::run::{self, ReplayFile, ReplayOptions};

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
    /// A NetherNet capture's DTLS key log (NSS; repeatable; default: $SSLKEYLOGFILE).
    #[arg(long, value_name = "FILE", requires = "bedrock")]
    pub tls_keylog: Vec<PathBuf>,
}

/// `replay`: the captured session (or game session) played to the target.
pub fn run_replay(a: &ReplayArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let game = super::or_exit!(a.game.bedrock.then(|| a.game.keys.load()).transpose());
    let f = ReplayFile {
        file: a.file.clone(),
        flow: a.flow,
        ports: a.decode_as.clone(),
        record: a.record.clone(),
        game,
        keylog_out: a.game.keylog_out.clone(),
        tls_keylog: a.game.tls_keylog.clone(),
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
    // A RakNet replay's server messages are records with --json only (text
    // shows the summary); a game replay's lines show what comes.
    p.message_lines = a.game.bedrock;
    Ok(match run::replay_file(&f, &o, &mut p)? {
        Ok(outcome) => outcome.code(),
        Err(e) => super::say(&e.to_string(), e.code()),
    })
}
