//! `ping`, `connect`, `serve`, `probe`: arguments, and the records of
//! `peer::run` printed as lines or NDJSON.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;

use super::args::{parse_hex, parse_seconds, parse_target, OutputArgs};
use super::{Code, EXIT_USAGE};
use crate::peer::run::{self, ConnectPlan};
use crate::peer::{bedrock, nethernet};
use crate::replay::run::{ServeGame, ServeReplay};
use crate::wire::Reliability;

/// The dialect options shared by `connect`, `serve` and `probe`.
#[derive(Args, Debug, Clone, Default)]
pub struct DialectArgs {
    /// Defaults for the protocol byte and address count.
    #[arg(long, value_enum, default_value = "original")]
    pub dialect: run::DialectName,
    /// RakNet protocol byte (default: 6 original, 11 Minecraft; a Minecraft
    /// server accepts 9, 10 and 11 unless this is given).
    #[arg(long, value_name = "V")]
    pub protocol: Option<u8>,
    /// Internal addresses in the connected handshake (default: 10 original, 20 Minecraft).
    #[arg(long, value_name = "N")]
    pub addresses: Option<usize>,
}

impl DialectArgs {
    /// The library's dialect, with these overrides.
    fn get(&self) -> run::Dialect {
        run::Dialect::of(self.dialect, self.protocol, self.addresses)
    }
}

#[derive(Args, Debug, Clone)]
pub struct PingArgs {
    /// The server: HOST:PORT, [IPV6]:PORT, or HOST (port 19132).
    #[arg(value_name = "HOST:PORT", value_parser = parse_target)]
    pub target: SocketAddr,
    /// Pings to send, one a second (N > 0).
    #[arg(short = 'c', long, default_value = "1", value_name = "N", value_parser = crate::output::text::parse_count::<u32>)]
    pub count: u32,
    /// Seconds to wait for each pong.
    #[arg(long, default_value = "1", value_name = "SECONDS", value_parser = parse_seconds)]
    pub timeout: Duration,
    #[command(flatten)]
    pub transport: super::args::TransportArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug, Clone)]
pub struct ConnectArgs {
    /// The server: HOST:PORT, [IPV6]:PORT, or HOST (port 19132).
    #[arg(value_name = "HOST:PORT", value_parser = parse_target)]
    pub target: SocketAddr,
    /// A message to send, in hex (its first byte is the message id); `-`
    /// reads one message per line from standard input: `HEX`, or
    /// `RELIABILITY[/CHANNEL] HEX` for that message's own. Repeatable.
    #[arg(long = "send", value_name = "HEX")]
    pub send: Vec<String>,
    /// Send the messages N times over (a bulk transfer).
    #[arg(long, default_value = "1", value_name = "N")]
    pub repeat: u64,
    /// Reliability of the messages sent: a name (reliable-ordered, unreliable, ...) or 0 to 7.
    #[arg(long, default_value = "reliable-ordered", value_name = "R", value_parser = Reliability::parse)]
    pub reliability: Reliability,
    /// Ordering channel (0 to 31).
    #[arg(long, default_value = "0", value_name = "C", value_parser = crate::output::text::parse_channel)]
    pub channel: u8,
    /// Seconds to keep receiving after everything sent was acknowledged.
    #[arg(long, default_value = "1", value_name = "SECONDS", value_parser = parse_seconds)]
    pub wait: Duration,
    /// Largest MTU to probe with (1492, 1200 and 576 are tried, from this one down).
    #[arg(long, value_name = "M")]
    pub mtu: Option<u16>,
    #[command(flatten)]
    pub dialect: DialectArgs,
    #[command(flatten)]
    pub game: BedrockArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `connect --bedrock`: the Minecraft Bedrock game login on the connection.
#[derive(Args, Debug, Clone, Default)]
pub struct BedrockArgs {
    /// Log in to a Minecraft Bedrock server (an offline identity), print the game packets it sends.
    #[arg(long)]
    pub bedrock: bool,
    /// With --bedrock: the player's name.
    #[arg(
        long,
        default_value = "raknet-dissect",
        value_name = "NAME",
        requires = "bedrock"
    )]
    pub name: String,
    /// With --bedrock: the game version (default: the newest the definitions know).
    #[arg(long = "version", value_name = "V", requires = "bedrock", value_parser = crate::bedrock::speak::known_version)]
    pub game_version: Option<String>,
    /// With --bedrock: seconds to stay connected.
    #[arg(long, default_value = "10", value_name = "SECONDS", value_parser = parse_seconds, requires = "bedrock")]
    pub duration: Duration,
    /// Append each connection's key to this key log (default: $BEDROCK_KEYLOG_FILE).
    #[arg(long, value_name = "FILE", requires = "bedrock")]
    pub keylog_out: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub nethernet: super::args::NetherNetArgs,
}

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:19132", value_name = "ADDR", value_parser = parse_target)]
    pub listen: SocketAddr,
    /// Play the captured server of this capture: its pong payload and
    /// protocol, and its messages with their timing, from each client's connection on.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<std::path::PathBuf>,
    /// With --replay: the flow to play (default: the first whose client sent messages).
    #[arg(long, value_name = "N", requires = "replay", value_parser = crate::output::text::parse_count::<u32>)]
    pub flow: Option<u32>,
    /// With --replay: send the captured messages at once instead of with their timing.
    #[arg(long, requires = "replay")]
    pub asap: bool,
    /// Answer pings with a Minecraft MOTD carrying this text.
    #[arg(long, value_name = "TEXT", conflicts_with = "pong_hex")]
    pub motd: Option<String>,
    /// Answer pings with these raw bytes (hex).
    #[arg(long, value_name = "HEX", value_parser = parse_hex)]
    pub pong_hex: Option<Vec<u8>>,
    /// Connected clients at most; more are refused (ID_NO_FREE_INCOMING_CONNECTIONS).
    #[arg(long, default_value = "32", value_name = "N")]
    pub max_clients: usize,
    /// Send every message received back, with its reliability and channel.
    #[arg(long)]
    pub echo: bool,
    /// Exit when the first client's connection ends.
    #[arg(long)]
    pub once: bool,
    /// Largest MTU granted.
    #[arg(long, default_value = "1492", value_name = "M")]
    pub mtu: u16,
    #[command(flatten)]
    pub dialect: DialectArgs,
    #[command(flatten)]
    pub game: ServeBedrockArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `serve --bedrock`: Minecraft Bedrock game logins on the connections.
#[derive(Args, Debug, Clone, Default)]
pub struct ServeBedrockArgs {
    /// Log in offline-mode Minecraft Bedrock clients, print the game packets they send.
    #[arg(long)]
    pub bedrock: bool,
    /// With --bedrock: the game version (default: the newest the definitions know).
    #[arg(long = "version", value_name = "V", requires = "bedrock", value_parser = crate::bedrock::speak::known_version)]
    pub version: Option<String>,
    /// Append each connection's key to this key log (default: $BEDROCK_KEYLOG_FILE).
    #[arg(long, value_name = "FILE", requires = "bedrock")]
    pub keylog_out: Option<std::path::PathBuf>,
    /// With --bedrock --replay: the capture's key material.
    #[command(flatten)]
    pub keys: super::args::KeyArgs,
    /// With --bedrock --replay: a NetherNet capture's DTLS key log (default: $SSLKEYLOGFILE).
    #[arg(long, value_name = "FILE", requires = "replay")]
    pub tls_keylog: Vec<std::path::PathBuf>,
    #[command(flatten)]
    pub nethernet: super::args::NetherNetArgs,
}

#[derive(Args, Debug, Clone)]
pub struct ProbeArgs {
    /// The server: HOST:PORT, [IPV6]:PORT, or HOST (port 19132).
    #[arg(value_name = "HOST:PORT", value_parser = parse_target)]
    pub target: SocketAddr,
    /// Largest MTU to probe with.
    #[arg(long, value_name = "M")]
    pub mtu: Option<u16>,
    #[command(flatten)]
    pub transport: super::args::TransportArgs,
    #[command(flatten)]
    pub dialect: DialectArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

pub fn run_ping(a: &PingArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let mut p = a.output.printer(out);
    let t = &a.transport;
    let transport = run::Transport::chosen(t.transport, t.nethernet, run::Transport::Auto);
    Ok(run::ping(a.target, a.count, a.timeout, transport, &mut p)?.code())
}

pub fn run_connect(a: &ConnectArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    if a.game.bedrock {
        let (g, d) = (&a.game, &a.dialect);
        let keylog = g.keylog_out.clone();
        let mut plan = bedrock::plan(g.game_version.clone(), &g.name, g.duration, keylog);
        let (n, t) = (&g.nethernet, &g.nethernet.transport);
        plan.transport = run::Transport::chosen(t.transport, t.nethernet, run::Transport::RakNet);
        plan.tls_keylog_out = n.tls_keylog_out.clone().or(plan.tls_keylog_out);
        plan.identity = n.identity.clone();
        let mut p = a.output.printer(out);
        let dialect = (d.protocol, d.addresses, a.mtu);
        return Ok(nethernet::connect(a.target, plan, dialect, &mut p)?.code());
    }
    let plan = match run::messages_to_send(&a.send, a.reliability, a.channel, io::stdin().lock()) {
        Ok(messages) => ConnectPlan {
            messages,
            repeat: a.repeat,
            wait: a.wait,
        },
        Err(e) => {
            eprintln!("raknet-dissect: --send: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let mut p = a.output.printer(out);
    Ok(run::connect(a.target, a.dialect.get().client(a.mtu)?, &plan, &mut p)?.code())
}

pub fn run_serve(a: &ServeArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let (g, n) = (&a.game, &a.game.nethernet);
    let t = (n.transport.transport, n.transport.nethernet);
    let (motd, id, tls) = (a.motd.clone(), n.identity.clone(), n.tls_keylog_out.clone());
    let nethernet = crate::peer::nethernet_serve::plan(t, a.max_clients, motd, id, tls)?;
    // The capture's keys, to play its game session.
    let load = a
        .replay
        .as_ref()
        .filter(|_| g.bedrock)
        .map(|_| g.keys.load());
    let keys = super::or_exit!(load.transpose()).unwrap_or_default();
    let (flow, asap, tls_keylog) = (a.flow, a.asap, g.tls_keylog.clone());
    let replay = (a.replay.clone()).map(|file| ServeReplay {
        file,
        flow,
        asap,
        keys,
        tls_keylog,
    });
    let (version, keylog_out) = (g.version.clone(), g.keylog_out.clone());
    let game = g.bedrock.then_some(ServeGame {
        version,
        keylog_out,
    });
    let mut setup = crate::peer::serve::ServeSetup::new(a.listen, a.dialect.get(), a.max_clients);
    (setup.mtu, setup.motd, setup.pong_hex) = (a.mtu, a.motd.clone(), a.pong_hex.clone());
    (setup.plan.echo, setup.plan.once) = (a.echo, a.once);
    setup.nethernet = nethernet.filter(|_| g.bedrock);
    let mut p = a.output.printer(out);
    let served = crate::replay::run::serve(setup, game, replay.as_ref(), &mut p)?;
    Ok(served.map_or_else(|e| super::say(&e.to_string(), e.code()), |o| o.code()))
}

/// `proxy`: a Bedrock proxy that shows what passes.
#[derive(Args, Debug, Clone)]
pub struct ProxyArgs {
    /// Where players connect: over RakNet and NetherNet on the same port number (as a dedicated server), or raknet://ADDR or nethernet://ADDR for one.
    #[arg(long, default_value = "0.0.0.0:19132", value_name = "ADDR", value_parser = crate::peer::run::resolve_endpoint)]
    pub listen: crate::peer::run::Endpoint,
    /// The server the players' sessions go on to: HOST:PORT, [IPV6]:PORT, or HOST (port 19132); raknet://HOST:PORT or nethernet://HOST:PORT for one transport, else NetherNet when its signaling answers.
    #[arg(long, value_name = "HOST:PORT", value_parser = crate::peer::run::resolve_endpoint)]
    pub upstream: crate::peer::run::Endpoint,
    /// The game version until a player names its own (default: the newest the definitions know).
    #[arg(long = "version", value_name = "V", value_parser = crate::bedrock::speak::known_version)]
    pub version: Option<String>,
    /// Players at once, at most.
    #[arg(long, default_value = "32", value_name = "N")]
    pub max_players: usize,
    /// Stop once the first player has left (the counts printed).
    #[arg(long)]
    pub once: bool,
    /// Kilobytes queued toward either side of a session, at most: beyond, the session ends.
    #[arg(long, default_value = "32768", value_name = "KB")]
    pub max_queued: usize,
    /// Append both legs' keys to this key log (default: $BEDROCK_KEYLOG_FILE).
    #[arg(long, value_name = "FILE")]
    pub keylog_out: Option<std::path::PathBuf>,
    /// Append the NetherNet legs' DTLS keys to this NSS key log (default: $SSLKEYLOGFILE).
    #[arg(long, value_name = "FILE")]
    pub tls_keylog_out: Option<std::path::PathBuf>,
    /// Do not show these packets (names, comma-separated; still counted).
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    pub hide: Vec<String>,
    /// Show only these packets (names, comma-separated).
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    pub only: Vec<String>,
    /// Write both legs to this pcapng file, every key inside (`game FILE` needs no key argument).
    #[arg(short = 'w', long = "write", value_name = "FILE")]
    pub write: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
    /// -Y, -T, -e, -E over the game packets, with `game`'s field names.
    #[command(flatten)]
    pub display: super::args::DisplayArgs,
}

pub fn run_proxy(a: &ProxyArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let (v, w) = (a.version.clone(), a.write.clone());
    let k = (a.keylog_out.clone(), a.tls_keylog_out.clone());
    let queued = a.max_queued.saturating_mul(1024);
    let (shown, p) = (
        (a.hide.clone(), a.only.clone()),
        (a.max_players, a.once, queued),
    );
    let mut plan = crate::peer::proxy::plan((a.listen, a.upstream), v, p, k, shown, w);
    let game = crate::display::fields::RecordType::Game;
    let view = super::or_exit!(a.display.compile(game, a.output.json));
    let rows = view.exports();
    plan.view = view.reads_records().then(|| std::sync::Arc::new(view) as _);
    let stop = crate::capture::live::stop_on_interrupt();
    let mut printer = a.output.printer(out);
    printer.rows_only = rows;
    Ok(crate::peer::proxy::proxy(&plan, &stop, &mut printer)?.code())
}

/// `probe`: the handshake steps performed live, one line each as it
/// happens, then the outcome and a diagnosis, in the words of `handshake`.
pub fn run_probe(a: &ProbeArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let (t, cfg) = (&a.transport, a.dialect.get().client(a.mtu)?);
    let mut p = a.output.printer(out);
    Ok(nethernet::probe_on(a.target, (t.transport, t.nethernet), cfg, &mut p)?.code())
}
