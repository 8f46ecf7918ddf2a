//! The capture commands' wiring: `read`, `messages`, `flows`, `fields`
//! (each run through [`crate::pipeline::drive`]).

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Mutex;

use clap::Args;

use super::args::{parse_id, CaptureArgs, DirArg, DisplayArgs, FormatArg, OutputArgs, TimeArgs};
use super::{EXIT_BAD_FILE, EXIT_BAD_FILTER, EXIT_OK, EXIT_USAGE};
use crate::bedrock::{event_names, Detect, Game, Keys};
use crate::capture::write::{self, Recorder};
use crate::capture::CaptureReader;
use crate::display::print::{
    Choice, FlowPrinter, Format, MessagePrinter, PacketPrinter, ShowError, Shown,
};
use crate::display::records::{Clock, MessageChoice, MessageItem, PacketItem, PacketRecords};
use crate::display::RecordType;
use crate::dissect::{Dir, SpentPackets};
use crate::mirror::{FlowMirror, Mirror, MirrorConfig, Observation};
use crate::output::terminal::terminal_width;
use crate::output::text::Palette;
use crate::pipeline::ordered;

pub use crate::pipeline::drive::{drive, drive_items, drive_messages};
pub use crate::pipeline::Next;

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
    pub keys: super::args::KeyArgs,
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
    pub dir: Option<DirArg>,
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
    pub keys: super::args::KeyArgs,
}

impl DisplayArgs {
    /// Compile the filter and the field export; `Err` is the exit code,
    /// after one line on stderr.
    pub fn compile(&self, record: RecordType, json: bool) -> Result<Shown, u8> {
        let format = self.format.map(|f| match f {
            FormatArg::Text => Format::Text,
            FormatArg::Json => Format::Json,
            FormatArg::Fields => Format::Fields,
        });
        let (filter, fields) = (self.filter.as_deref(), &self.fields[..]);
        let c = Choice {
            filter,
            format,
            fields,
            export_options: &self.export_options,
            json,
        };
        Shown::new(&c, record).map_err(|e| {
            eprintln!("raknet-dissect: {e}");
            match e {
                ShowError::Filter(_) => EXIT_BAD_FILTER,
                _ => EXIT_USAGE,
            }
        })
    }
}

pub fn mirror_config(cap: &CaptureArgs) -> MirrorConfig {
    MirrorConfig::reassembling(cap.decode.reassembly())
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
/// they end (and at the end), for a table after the packets. Printed on
/// `--threads` threads (one for a live capture and with `-w`).
pub fn read_packets(
    args: &ReadArgs,
    live: Option<CaptureReader>,
    mut flows: Option<&mut Vec<FlowMirror>>,
    out: &mut impl Write,
) -> anyhow::Result<u8> {
    let (shown, keys) = match (
        args.display.compile(RecordType::Packet, args.output.json),
        args.keys.load(),
    ) {
        (Ok(s), Ok(k)) => (s, k),
        (Err(code), _) | (_, Err(code)) => return Ok(code),
    };
    let quiet = args.output.quiet || write::writes_stdout(args.write.as_deref());
    let pal = Palette::choose(args.output.color, shown.json || shown.export.is_some());
    let writer = match args.write.as_deref().map(Recorder::create).transpose() {
        Ok(w) => w,
        Err(e) => {
            let p = args.write.as_deref().unwrap_or(std::path::Path::new("-"));
            eprintln!("raknet-dissect: -w {}: {e}", p.display());
            return Ok(super::EXIT_ERROR);
        }
    };
    let mut cfg = mirror_config(&args.capture);
    // Packets need the mirror's findings, and the game layer the 0xFE
    // messages' bytes (the lines of Bedrock flows name the game packets).
    cfg.receive.keep_only = Some(crate::bedrock::GAME_MESSAGE);
    let mut mirror = Mirror::new(cfg, flows.is_some());
    let trace = args.verbose && shown.text();
    if !quiet {
        shown.write_header(out)?;
    }
    let cap = CaptureArgs {
        summary_only: quiet,
        owned: Some(SpentPackets::default()),
        ..args.capture.clone()
    };
    let (files, clock) = (args.capture.file_names(), Clock::new(args.time.time_format));
    let parallel = clock.parallel() && live.is_none() && writer.is_none();
    let writer = Mutex::new(writer);
    let printer = || {
        let shown = args
            .display
            .compile(RecordType::Packet, args.output.json)
            .expect("compiled");
        let mut printer = PacketPrinter::new(shown, pal, args.time.time_format, files.clone());
        (printer.verbose, printer.hex, printer.quiet) = (args.verbose, args.hex, quiet);
        (printer.only, printer.writer) = (cap.flow, writer.lock().ok().and_then(|mut w| w.take()));
        printer
    };
    let threads = if parallel { cap.threads() } else { 1 };
    let spent = cap.owned.clone().unwrap_or_default();
    let print = |p: &mut PacketPrinter, item: &mut _, out: &mut dyn Write| p.print(item, out);
    let mut records = PacketRecords::new(clock, Game::counting(Detect::Auto, keys));
    let recycle = |item: PacketItem| item.recycle(&spent);
    ordered::run(threads, out, printer, print, recycle, |sink| {
        let null = &mut io::sink();
        let code = drive_items(live, &cap.reading(trace), &mut mirror, null, |item, _| {
            let r = records.record(item, flows.as_deref_mut());
            Ok(r.map_or(Ok(()), |r| sink.push(r))
                .map(|()| Next::Continue)?)
        })?;
        // What the receivers still held at the end (incomplete splits,
        // messages waiting in ordering heaps) belongs to no packet: a line
        // each, unless a filter or a field export chose what to print.
        let end = mirror.finish();
        let stopped = args.capture.count.is_some_and(|n| records.read >= n);
        sink.push(PacketItem::End {
            anomalies: end.anomalies,
            stopped,
        })?;
        if let Some(f) = flows {
            f.extend(end.closed);
        }
        Ok(code)
    })
}

/// `messages`: what each application received, in delivery order, printed
/// on `--threads` threads.
pub fn run_messages(args: &MessagesArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let shown = match args.display.compile(RecordType::Message, args.output.json) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let pal = Palette::choose(args.output.color, shown.json || shown.export.is_some());
    let mut mirror = Mirror::new(mirror_config(&args.capture), false);
    let choice = MessageChoice {
        quiet: args.output.quiet,
        flow: args.capture.flow,
        dir: args
            .dir
            .map(|d| if d == DirArg::C2s { Dir::C2s } else { Dir::S2c }),
        channel: args.channel,
        id: args.id,
    };
    if !args.output.quiet {
        shown.write_header(out)?;
    }
    let time = args.time.time_format;
    let files = args.capture.file_names();
    let printer = || {
        let shown = args.display.compile(RecordType::Message, args.output.json);
        let mut printer =
            MessagePrinter::new(shown.expect("compiled before"), pal, time, files.clone());
        printer.data_limit = args.data_limit;
        printer
    };
    let mut clock = Clock::new(time);
    let threads = if clock.parallel() {
        args.capture.threads()
    } else {
        1
    };
    let print = |p: &mut MessagePrinter, m: &mut _, out: &mut dyn Write| p.print(m, &choice, out);
    // Bedrock flows' 0xFE messages are named by the game packets inside.
    let mut game = Game::counting(Detect::Auto, Keys::default());
    ordered::run(threads, out, printer, print, drop, |sink| {
        let (cap, null) = (&args.capture, &mut io::sink());
        drive_messages(
            &cap.reading(false),
            &mut mirror,
            &mut game,
            null,
            |message, ev, since, file, _| {
                let (time, game) = (clock.tick(message.ts), ev.as_deref().map(event_names));
                let bytes = message.data.len();
                let m = MessageItem::new(message, game, since, file, time);
                Ok(sink.push_weighing(m, bytes)?)
            },
        )
    })
}

/// `fields`: every name `-Y` and `-e` know, with its type, its records
/// and its meaning.
pub fn print_fields(o: &OutputArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    if !o.quiet {
        crate::display::print::field_list(o.json, terminal_width().or(Some(100)), out)?;
    }
    Ok(EXIT_OK)
}

/// `flows`: a row per flow, or a `flow` record per flow as it ends (evicted
/// while reading, or at the end of the capture).
pub fn run_flows(args: &FlowsArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    // The 0xFE messages, for the game layer of Bedrock flows.
    let mut cfg = mirror_config(&args.capture);
    cfg.receive.keep_only = Some(crate::bedrock::GAME_MESSAGE);
    let mut mirror = Mirror::new(cfg, true);
    let (shown, keys) = match (
        args.display.compile(RecordType::Flow, args.output.json),
        args.keys.load(),
    ) {
        (Ok(s), Ok(k)) => (s, k),
        (Err(code), _) | (_, Err(code)) => return Ok(code),
    };
    let quiet = args.output.quiet;
    if let Some(x) = shown.export.as_ref().filter(|_| !quiet) {
        out.write_all(x.header().as_bytes())?;
    }
    let mut printer = FlowPrinter::new(shown);
    printer.file = args.capture.part_name().map(Into::into);
    let mut game = Game::counting(Detect::Auto, keys);
    let mut take = |obs: &mut Observation, game: &mut Game, out: &mut dyn Write| {
        obs.messages.iter().for_each(|m| drop(game.message(m)));
        for f in obs.closed.drain(..) {
            let g = game.close(f.id);
            if !quiet && args.capture.flow.is_none_or(|n| n == f.id) {
                printer.flow(f, g, out)?;
            }
        }
        anyhow::Ok(())
    };
    let code = drive(
        &args.capture.printing_at_end().reading(false),
        &mut mirror,
        out,
        |p, obs, _, out| {
            game.packet(p);
            take(obs, &mut game, out)?;
            Ok(Next::Continue)
        },
    )?;
    take(&mut mirror.finish(), &mut game, out)?;
    // No table at all when the capture could not be read or --flow was wrong.
    let failed = code == EXIT_USAGE || (code == EXIT_BAD_FILE && printer.rows.is_empty());
    if printer.shown.text() && !quiet && !failed {
        printer.table(args.wide, terminal_width(), out)?;
    }
    Ok(code)
}
