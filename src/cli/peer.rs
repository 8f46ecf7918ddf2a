//! `ping`, `connect`, `serve`, `probe`: arguments, and the records of
//! `peer::run` printed as lines or NDJSON.

use std::io::{self, BufRead, Write};
use std::net::SocketAddr;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::args::{parse_hex, parse_reliability, parse_seconds, parse_target, OutputArgs};
use super::printer::{exit_code, Printer};
use super::{EXIT_ERROR, EXIT_USAGE};
use crate::peer::run::{self, ConnectPlan, Outgoing, ServePlan};
use crate::peer::Server;
use crate::session::handshake::{PROTOCOL_MINECRAFT, PROTOCOL_ORIGINAL};
use crate::session::{ClientConfig, ServerConfig};
use crate::wire::Reliability;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Dialect {
    /// The original RakNet: protocol 6, 10 internal addresses.
    #[default]
    Original,
    /// Minecraft Bedrock: protocol 11, 20 internal addresses.
    Minecraft,
}

/// The dialect options shared by `connect`, `serve` and `probe`.
#[derive(Args, Debug, Clone, Default)]
pub struct DialectArgs {
    /// Defaults for the protocol byte and address count.
    #[arg(long, value_enum, default_value = "original")]
    pub dialect: Dialect,
    /// RakNet protocol byte (default: 6 original, 11 Minecraft; a Minecraft
    /// server accepts 9, 10 and 11 unless this is given).
    #[arg(long, value_name = "V")]
    pub protocol: Option<u8>,
    /// Internal addresses in the connected handshake (default: 10 original, 20 Minecraft).
    #[arg(long, value_name = "N")]
    pub addresses: Option<usize>,
}

impl DialectArgs {
    fn protocol(&self) -> u8 {
        self.protocol.unwrap_or(match self.dialect {
            Dialect::Original => PROTOCOL_ORIGINAL,
            Dialect::Minecraft => PROTOCOL_MINECRAFT,
        })
    }
    /// Protocol bytes a server accepts.
    fn accepted(&self) -> Vec<u8> {
        match (self.protocol, self.dialect) {
            (Some(p), _) => vec![p],
            (None, Dialect::Original) => vec![PROTOCOL_ORIGINAL],
            (None, Dialect::Minecraft) => vec![9, 10, PROTOCOL_MINECRAFT],
        }
    }
    fn addresses(&self) -> usize {
        self.addresses.unwrap_or(match self.dialect {
            Dialect::Original => 10,
            Dialect::Minecraft => 20,
        })
    }

    /// A client configuration, probing from `mtu` down when given.
    fn client(&self, mtu: Option<u16>) -> ClientConfig {
        let mut cfg = ClientConfig {
            guid: run::new_guid(),
            protocol: self.protocol(),
            address_count: self.addresses(),
            ..ClientConfig::default()
        };
        if let Some(m) = mtu {
            cfg.mtus = run::mtus_from(m);
        }
        cfg
    }
}

#[derive(Args, Debug)]
pub struct PingArgs {
    /// The server: HOST:PORT, [IPV6]:PORT, or HOST (port 19132).
    #[arg(value_name = "HOST:PORT", value_parser = parse_target)]
    pub target: SocketAddr,
    /// Pings to send, one a second (N > 0).
    #[arg(short = 'c', long, default_value = "1", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub count: u32,
    /// Seconds to wait for each pong.
    #[arg(long, default_value = "1", value_name = "SECONDS", value_parser = parse_seconds)]
    pub timeout: Duration,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
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
    #[arg(long, default_value = "reliable-ordered", value_name = "R", value_parser = parse_reliability)]
    pub reliability: Reliability,
    /// Ordering channel (0 to 31).
    #[arg(long, default_value = "0", value_name = "C", value_parser = clap::value_parser!(u8).range(0..32))]
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
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:19132", value_name = "ADDR", value_parser = parse_target)]
    pub listen: SocketAddr,
    /// Play the captured server of this capture: its pong payload and
    /// protocol, and its messages with their timing, from each client's connection on.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<std::path::PathBuf>,
    /// With --replay: the flow to play (default: the first whose client sent messages).
    #[arg(long, value_name = "N", requires = "replay", value_parser = clap::value_parser!(u32).range(1..))]
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
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// The server: HOST:PORT, [IPV6]:PORT, or HOST (port 19132).
    #[arg(value_name = "HOST:PORT", value_parser = parse_target)]
    pub target: SocketAddr,
    /// Largest MTU to probe with.
    #[arg(long, value_name = "M")]
    pub mtu: Option<u16>,
    #[command(flatten)]
    pub dialect: DialectArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

pub fn run_ping(a: &PingArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let mut p = Printer::new(out, &a.output);
    Ok(exit_code(run::ping(a.target, a.count, a.timeout, &mut p)?))
}

/// A standard-input line: `HEX`, or `RELIABILITY[/CHANNEL] HEX` to override
/// `--reliability` and `--channel` for that message.
fn parse_line(line: &str, a: &ConnectArgs) -> Result<Outgoing, String> {
    let (mut reliability, mut channel) = (a.reliability, a.channel);
    let hex_part = match line.split_once(char::is_whitespace) {
        Some((head, rest)) => {
            let (r, c) = head.split_once('/').unwrap_or((head, ""));
            reliability = parse_reliability(r)?;
            if !c.is_empty() {
                channel = c
                    .parse::<u8>()
                    .ok()
                    .filter(|c| *c < 32)
                    .ok_or_else(|| format!("{c:?} is not a channel (0 to 31)"))?;
            }
            rest
        }
        None => line,
    };
    Ok(Outgoing {
        data: parse_hex(hex_part)?,
        reliability,
        channel,
    })
}

/// Messages to send: `--send` values, `-` for standard input lines.
fn messages(a: &ConnectArgs) -> Result<Vec<Outgoing>, String> {
    let mut v = Vec::new();
    for s in &a.send {
        if s == "-" {
            for (n, line) in io::stdin().lock().lines().enumerate() {
                let line = line.map_err(|e| format!("standard input: {e}"))?;
                if !line.trim().is_empty() {
                    v.push(
                        parse_line(line.trim(), a)
                            .map_err(|e| format!("standard input line {}: {e}", n + 1))?,
                    );
                }
            }
        } else {
            v.push(Outgoing {
                data: parse_hex(s)?,
                reliability: a.reliability,
                channel: a.channel,
            });
        }
    }
    if v.iter().any(|m| m.data.is_empty()) {
        return Err("an empty message cannot be sent".into());
    }
    Ok(v)
}

pub fn run_connect(a: &ConnectArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let plan = match messages(a) {
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
    let mut p = Printer::new(out, &a.output);
    Ok(exit_code(run::connect(
        a.target,
        a.dialect.client(a.mtu),
        &plan,
        &mut p,
    )?))
}

pub fn run_serve(a: &ServeArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let guid = run::new_guid();
    let session = match &a.replay {
        Some(path) => match super::replay::load(std::slice::from_ref(path), a.flow, &[]) {
            Ok(s) => Some(s),
            Err(code) => return Ok(code),
        },
        None => None,
    };
    let mut cfg = ServerConfig {
        guid,
        protocol: a.dialect.protocol(),
        accept_protocols: a.dialect.accepted(),
        max_clients: a.max_clients,
        max_mtu: a.mtu.clamp(576, 1492),
        address_count: a.dialect.addresses(),
        ..ServerConfig::default()
    };
    // The captured server's protocol, unless told otherwise.
    if let (Some(p), None) = (
        session.as_ref().and_then(|s| s.protocol),
        a.dialect.protocol,
    ) {
        cfg.protocol = p;
        cfg.accept_protocols = vec![p];
        if a.dialect.addresses.is_none() {
            cfg.address_count = run::addresses_for(p);
        }
    }
    let mut server = match Server::bind(a.listen, cfg) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("raknet-dissect: cannot listen on {}: {e}", a.listen);
            return Ok(EXIT_ERROR);
        }
    };
    let port = server.local_addr()?.port();
    server.set_pong(match (&a.motd, &a.pong_hex) {
        (Some(text), _) => run::minecraft_pong(text, guid, port, a.max_clients),
        (None, Some(h)) => h.clone(),
        (None, None) => session
            .as_ref()
            .and_then(|s| s.pong.clone())
            .unwrap_or_else(|| b"raknet-dissect".to_vec()),
    });
    let plan = ServePlan {
        echo: a.echo,
        once: a.once,
        script: session
            .as_ref()
            .map(|s| crate::replay::run::server_script(s, a.asap)),
    };
    let mut p = Printer::new(out, &a.output);
    Ok(exit_code(run::serve(&mut server, &plan, &mut p)?))
}

/// `probe`: the handshake steps performed live, one line each as it
/// happens, then the outcome and a diagnosis, in the words of `handshake`.
pub fn run_probe(a: &ProbeArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let mut p = Printer::new(out, &a.output);
    Ok(exit_code(run::probe(
        a.target,
        a.dialect.client(a.mtu),
        &mut p,
    )?))
}
