//! The capture commands' arguments: `read`, `messages`, `flows`,
//! `handshake`, `game`, `stats`, `fields` (each a call of
//! [`crate::display::run`]).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::args::{parse_id, parse_interval, CaptureArgs, DisplayArgs, KeyArgs};
use super::args::{OutputArgs, TimeArgs};
use super::{or_exit, Code, EXIT_BAD_FILTER, EXIT_ERROR, EXIT_OK, EXIT_USAGE};
use crate::capture::write::{self, Recorder};
use crate::capture::CaptureReader;
use crate::display::print::{Choice, ShowError, Shown};
use crate::display::records::MessageChoice;
use crate::display::run::StatsOptions;
use crate::display::run::{self, FlowOptions, GameOptions, MessageOptions, PacketOptions};
use crate::display::RecordType;
use crate::dissect::Dir;
use crate::mirror::FlowMirror;
use crate::output::terminal::terminal_width;

/// `read`'s own options beside the shared ones.
#[derive(Args, Debug, Default, Clone)]
pub struct ReadArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub display: DisplayArgs,
    #[command(flatten)]
    pub time: TimeArgs,
    /// Print the field tree of each packet, with byte offsets and lengths.
    #[arg(short = 'V', long)]
    pub verbose: bool,
    /// Print a hex dump of each packet's UDP payload.
    #[arg(short = 'x', long)]
    pub hex: bool,
    /// Write the RakNet packets that pass -Y (all of them without -Y) to this
    /// pcapng file (raw IP, the capture's timestamps).
    #[arg(short = 'w', long = "write", value_name = "OUT.pcapng")]
    pub write: Option<PathBuf>,
    /// A statistic, tshark's spelling: `conv,udp` (or `conv,raknet`) prints
    /// the `flows` table; `stats` has the other counts.
    #[arg(short = 'z', value_name = "STAT")]
    pub stat: Option<String>,
    #[command(flatten)]
    pub keys: KeyArgs,
}

#[derive(Args, Debug, Default, Clone)]
pub struct MessagesArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub display: DisplayArgs,
    #[command(flatten)]
    pub time: TimeArgs,
    /// Only messages received by the server (c2s) or by the client (s2c).
    #[arg(long, value_enum, value_name = "DIR")]
    pub dir: Option<Dir>,
    /// Only messages on this ordering channel (0 to 31).
    #[arg(long, value_name = "C", value_parser = crate::output::text::parse_channel)]
    pub channel: Option<u8>,
    /// Only messages with this id (decimal or 0x hex).
    #[arg(long, value_name = "ID", value_parser = parse_id)]
    pub id: Option<u8>,
    /// Show at most N bytes of each message's data in JSON.
    #[arg(long, value_name = "N")]
    pub data_limit: Option<usize>,
}

#[derive(Args, Debug, Default, Clone)]
pub struct FlowsArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub display: DisplayArgs,
    /// Every column of the table (the default fits 100 columns; --json has every figure).
    #[arg(long)]
    pub wide: bool,
    #[command(flatten)]
    pub keys: KeyArgs,
}

impl DisplayArgs {
    /// Compile the filter and the field export; `Err` is the exit code,
    /// after one line on stderr.
    pub fn compile(&self, record: RecordType, json: bool) -> Result<Shown, u8> {
        let format = self.format;
        let (filter, fields) = (self.filter.as_deref(), &self.fields[..]);
        let c = Choice {
            filter,
            format,
            fields,
            export_options: &self.export_options,
            json,
            sink: self.sink.clone(),
        };
        Shown::new(&c, record).map_err(|e| {
            eprintln!("raknet-dissect: {e}");
            match e {
                ShowError::Filter(_) => EXIT_BAD_FILTER,
                _ => EXIT_USAGE,
            }
        })
    }

    /// [`Self::compile`], once it succeeded (for each printing thread).
    pub fn compiled(&self, record: RecordType, json: bool) -> Shown {
        self.compile(record, json).expect("compiled before")
    }
}

/// `read`: one line (or tree, or JSON record) per RakNet packet.
pub fn run_read(args: &ReadArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    match args.stat.as_deref() {
        None => read_packets(args, None, None, out),
        Some("conv,udp" | "conv,raknet") => {
            let flows = FlowsArgs {
                capture: args.capture.clone(),
                output: OutputArgs {
                    quiet: false,
                    ..args.output.clone()
                },
                display: args.display.clone(),
                ..FlowsArgs::default()
            };
            run_flows(&flows, out)
        }
        Some(other) => Ok(super::say(
            &format!(
                "-z {other}: not a statistic here; -z conv,udp is `raknet-dissect flows`, \
                 and `raknet-dissect stats` counts messages, reliabilities, channels and rates"
            ),
            EXIT_USAGE,
        )),
    }
}

/// `read`, over a live reader when given; `flows` collects the flows as
/// they end (and at the end), for a table after the packets.
pub fn read_packets(
    args: &ReadArgs,
    live: Option<CaptureReader>,
    flows: Option<&mut Vec<FlowMirror>>,
    out: &mut impl Write,
) -> anyhow::Result<u8> {
    or_exit!(args.display.compile(RecordType::Packet, args.output.json));
    let keys = or_exit!(args.keys.load());
    let writer = match args.write.as_deref().map(Recorder::create).transpose() {
        Ok(w) => w,
        Err(e) => {
            let p = args.write.as_deref().unwrap_or(std::path::Path::new("-"));
            eprintln!("raknet-dissect: -w {}: {e}", p.display());
            return Ok(super::EXIT_ERROR);
        }
    };
    let o = PacketOptions {
        color: args.output.color,
        quiet: args.output.quiet || write::writes_stdout(args.write.as_deref()),
        time: args.time.time_format,
        verbose: args.verbose,
        hex: args.hex,
        write: writer,
        keys,
    };
    let shown = || args.display.compiled(RecordType::Packet, args.output.json);
    let reading = args.capture.reading();
    Ok(run::packets(&reading, &shown, o, live, flows, out)?.code())
}

/// `messages`: what each application received, in delivery order.
pub fn run_messages(args: &MessagesArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    if let Err(code) = args.display.compile(RecordType::Message, args.output.json) {
        return Ok(code);
    }
    let only = MessageChoice {
        quiet: args.output.quiet,
        flow: args.capture.flow,
        dir: args.dir,
        channel: args.channel,
        id: args.id,
    };
    let (color, time, data_limit) = (args.output.color, args.time.time_format, args.data_limit);
    let o = MessageOptions {
        color,
        time,
        only,
        data_limit,
    };
    let shown = || args.display.compiled(RecordType::Message, args.output.json);
    Ok(run::messages(&args.capture.reading(), &shown, &o, out)?.code())
}

/// `fields`: every name `-Y` and `-e` know, with its type, its records
/// and its meaning.
pub fn print_fields(o: &OutputArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    if !o.quiet {
        crate::display::print::field_list(o.json, terminal_width().or(Some(100)), out)?;
    }
    Ok(EXIT_OK)
}

/// `flows`: a row per flow, or a `flow` record per flow as it ends.
pub fn run_flows(args: &FlowsArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let shown = or_exit!(args.display.compile(RecordType::Flow, args.output.json));
    let keys = or_exit!(args.keys.load());
    let (quiet, wide, width) = (args.output.quiet, args.wide, terminal_width());
    let o = FlowOptions {
        quiet,
        wide,
        width,
        keys,
    };
    let reading = args.capture.reading_at_end();
    Ok(run::flows(&reading, shown, o, out)?.code())
}

/// `handshake FILE`: each connection attempt of a capture, its timeline and
/// its outcome (`mirror::handshake`).
#[derive(Args, Debug, Default, Clone)]
pub struct HandshakeArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub display: DisplayArgs,
    /// Keys for a Bedrock login after the encryption starts.
    #[command(flatten)]
    pub keys: KeyArgs,
    /// Also draw the attempts shown as a ladder diagram (time down, client
    /// and server columns, an arrow per step, the failing step in red) to
    /// this SVG file; `-`: to standard output, instead of the records.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

pub fn run_handshake(args: &HandshakeArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let shown = or_exit!(args
        .display
        .compile(RecordType::Handshake, args.output.json));
    let keys = or_exit!(args.keys.load());
    let inputs = args.capture.paths();
    let picture = or_exit!(args
        .svg
        .as_deref()
        .map(|p| super::open_picture(p, &inputs))
        .transpose());
    let reading = args.capture.reading_at_end();
    let quiet = args.output.quiet || args.svg.as_deref() == Some(std::path::Path::new("-"));
    let mut svg = picture.as_ref().map(|_| String::new());
    let code = run::handshakes(&reading, &shown, (quiet, keys), svg.as_mut(), out)?.code();
    match (picture, svg) {
        (Some(p), Some(svg)) => Ok(p.write(&svg, out).map_or_else(
            |e| super::say(&format!("cannot write the SVG: {e}"), EXIT_ERROR),
            |()| code,
        )),
        _ => Ok(code),
    }
}

/// `stats FILE`: a capture counted. The messages delivered to each side's
/// application (what `messages` prints) by message id, reliability and
/// ordering channel, and the traffic per time interval from the first
/// packet: packets, bytes, ACKs, NACKs, resends, messages. Across every
/// flow, or one with `--flow`.
/// Arguments of `stats`.
#[derive(Args, Debug, Default, Clone)]
pub struct StatsArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// Length of the intervals of the traffic table, in seconds from the first
    /// packet (fractions allowed).
    #[arg(long, default_value = "1", value_name = "SECONDS", value_parser = parse_interval)]
    pub interval: Duration,
    // --json: `stats_id`, `stats_reliability`, `stats_channel` and
    // `stats_interval` records, then one `stats` record.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `stats`: count the capture, then print the tables or the records.
pub fn run_stats(args: &StatsArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    // Everything is printed at the end: a progress bar may share the terminal.
    let reading = args.capture.reading_at_end();
    let (interval, json, quiet) = (args.interval, args.output.json, args.output.quiet);
    let o = StatsOptions {
        interval,
        json,
        quiet,
        width: terminal_width(),
    };
    Ok(run::stats(&reading, &o, out)?.code())
}

/// `game FILE`: the Minecraft Bedrock game packets inside the 0xFE
/// messages each application received (`bedrock::Game` over the mirror).
#[derive(Args, Debug, Default, Clone)]
pub struct GameArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub display: DisplayArgs,
    /// Print each packet's fields as a tree: in wire order, with offsets.
    #[arg(short = 'V', long)]
    pub verbose: bool,
    /// Hex dump of each decompressed packet.
    #[arg(short = 'x', long = "hex")]
    pub hex: bool,
    /// Bytes of each packet's `data` in --json records (all by default).
    #[arg(long, value_name = "N")]
    pub data_limit: Option<usize>,
    #[command(flatten)]
    pub keys: KeyArgs,
    /// Every flow's 0xFE messages are game batches (a capture that starts
    /// after the login); by default a flow is Bedrock when its first 0xFE
    /// message is a login or its pong is Minecraft's.
    #[arg(long)]
    pub bedrock: bool,
    /// Only the login packets' fields (decoded by hand), not every
    /// packet's from minecraft-data's definitions: faster.
    #[arg(long)]
    pub no_fields: bool,
}

/// `game`: a line (or record) per game packet, in delivery order.
pub fn run_game(a: &GameArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let keys = or_exit!(a.keys.load());
    or_exit!(a.display.compile(RecordType::Game, a.output.json));
    let o = GameOptions {
        color: a.output.color,
        quiet: a.output.quiet,
        verbose: a.verbose,
        hex: a.hex,
        data_limit: a.data_limit,
        keys,
        bedrock: a.bedrock,
        fields: !a.no_fields,
    };
    let shown = || a.display.compiled(RecordType::Game, a.output.json);
    Ok(run::game(&a.capture.reading(), &shown, o, out)?.code())
}
