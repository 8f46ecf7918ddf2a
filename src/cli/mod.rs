//! The command line: clap definitions, the choice of output, and the
//! wiring of the library's layers; nothing else. `main.rs` only calls
//! [`main`]. The exit codes are the `EXIT_*` constants of [`exit`], with
//! the code of each outcome the library reports; what each means, and
//! which commands give it, is [`crate::output::man`]'s table.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::display::RecordType;
use crate::output::file::OutputFile;

pub mod args;
mod capture;
mod docs;
pub mod exit;
mod export;
mod live;
mod peer;
mod plot;
mod printer;
mod progress;
mod replay;
mod usage;

pub use crate::output::terminal::terminal_width;
pub use args::{CaptureArgs, DisplayArgs, OutputArgs};
pub use capture::{FlowsArgs, MessagesArgs, ReadArgs};

pub use exit::*;

/// One line on standard error, and `code`.
fn say(line: &str, code: u8) -> u8 {
    eprintln!("raknet-dissect: {line}");
    code
}

/// The value of a `Result<T, u8>`, or the run's end with its exit code.
macro_rules! or_exit {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(code) => return Ok(code),
        }
    };
}
pub(crate) use or_exit;

/// `path` opened for a picture written at the end of the run: not one of
/// the captures `inputs` (exit 2), writable (exit 1).
fn open_picture(path: &Path, inputs: &[PathBuf]) -> Result<OutputFile, u8> {
    let shown = path.display();
    if crate::output::file::is_one_of(path, inputs) {
        let why = format!("{shown} is the capture file: not overwriting it");
        return Err(say(&why, EXIT_USAGE));
    }
    OutputFile::open(path).map_err(|e| say(&format!("cannot write {shown}: {e}"), EXIT_ERROR))
}

/// A capture run's notes on standard error; its summary on a terminal only.
fn stderr_notes() -> crate::pipeline::notes::Notes {
    use crate::pipeline::notes::{NoteKind, Notes};
    Notes::new(|kind, line| {
        if kind != NoteKind::Summary || io::IsTerminal::is_terminal(&io::stderr()) {
            eprintln!("raknet-dissect: {line}");
        }
    })
}

#[derive(Parser, Debug)]
#[command(
    name = "raknet-dissect",
    version,
    about = "Dissect and analyze RakNet traffic (original RakNet and Minecraft Bedrock)",
    args_conflicts_with_subcommands = true,
    disable_version_flag = true,
    mut_arg("filter", |a| a.help(RecordType::Packet.filter_help())),
    mut_arg("separate", |a| a.conflicts_with("write")),
    after_help = crate::output::man::exit_codes_line()
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

#[derive(Subcommand, Debug, Clone)]
pub enum Command {
    /// Print every RakNet packet of a capture (the default command).
    #[command(mut_arg("filter", |a| a.help(RecordType::Packet.filter_help())))]
    #[command(mut_arg("separate", |a| a.conflicts_with("write")))]
    Read(ReadArgs),
    /// The messages each side's application received, in delivery order.
    #[command(mut_arg("filter", |a| a.help(RecordType::Message.filter_help())))]
    Messages(MessagesArgs),
    /// A table of the flows: roles, handshake, counts, loss, resends, RTT.
    #[command(mut_arg("filter", |a| a.help(RecordType::Flow.filter_help())))]
    Flows(FlowsArgs),
    /// Each connection attempt: a timeline of handshake steps, an outcome and a diagnosis.
    #[command(mut_arg("filter", |a| a.help(RecordType::Handshake.filter_help())))]
    Handshake(capture::HandshakeArgs),
    /// Ask a server over RakNet (unconnected ping: latency, GUID, MOTD) and NetherNet (the /v1/join status) at once; say which answered.
    Ping(peer::PingArgs),
    /// Connect to a server as a RakNet client, send messages, print what comes back.
    Connect(peer::ConnectArgs),
    /// A RakNet server that prints the messages it receives (and can echo them).
    Serve(peer::ServeArgs),
    /// A Bedrock proxy: players connect to it, it logs in upstream for them and shows every game packet.
    #[command(after_long_help = crate::output::man::PROXY_EXAMPLES)]
    #[command(mut_arg("filter", |a| a.help(RecordType::Game.filter_help())))]
    Proxy(peer::ProxyArgs),
    /// Perform a handshake live, one line per step, ending with the outcome and a diagnosis.
    Probe(peer::ProbeArgs),
    /// Replay a captured client's messages against a live server and compare what comes back.
    Replay(replay::ReplayArgs),
    /// Capture live on an interface (root or CAP_NET_RAW): packets as they come, then the flows.
    #[command(mut_arg("filter", |a| a.help(RecordType::Packet.filter_help())))]
    Live(live::LiveArgs),
    /// Minecraft Bedrock game packets inside the 0xFE messages, decrypted given keys.
    #[command(mut_arg("filter", |a| a.help(RecordType::Game.filter_help())))]
    Game(capture::GameArgs),
    /// Statistics of a capture: message ids, reliabilities, channels, rates per interval.
    Stats(capture::StatsArgs),
    /// Draw each flow as an SVG: throughput each way, RTT, loss and resends over time.
    #[command(mut_arg("separate", |a| a.conflicts_with("svg").hide(true)))]
    Plot(plot::PlotArgs),
    /// Write Parquet tables (packets, messages, flows, handshakes, game) of the --json records.
    Export(export::ExportArgs),
    /// List the field names of -Y and -e: the NDJSON keys of packet, message, flow, handshake and game records.
    Fields {
        #[command(flatten)]
        output: OutputArgs,
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
        all: Option<std::path::PathBuf>,
    },
}

/// The arguments of a command that can read its files `--separate`: of
/// the capture, of the display with the records it prints, of the keys,
/// of the output.
type Separable<'a> = (
    &'a mut CaptureArgs,
    Option<(&'a mut DisplayArgs, RecordType)>,
    Option<&'a mut args::KeyArgs>,
    &'a OutputArgs,
);

fn separable<'a>(
    command: &'a mut Option<Command>,
    read: &'a mut ReadArgs,
) -> Option<Separable<'a>> {
    use RecordType::*;
    macro_rules! of {
        ($a:ident, $records:ident, $keys:expr) => {
            (
                &mut $a.capture,
                Some((&mut $a.display, $records)),
                $keys,
                &$a.output,
            )
        };
    }
    Some(match command {
        None => of!(read, Packet, Some(&mut read.keys)),
        Some(Command::Read(a)) => of!(a, Packet, Some(&mut a.keys)),
        Some(Command::Messages(a)) => of!(a, Message, None),
        Some(Command::Flows(a)) => of!(a, Flow, Some(&mut a.keys)),
        Some(Command::Handshake(a)) => of!(a, Handshake, Some(&mut a.keys)),
        Some(Command::Game(a)) => of!(a, Game, Some(&mut a.keys)),
        Some(Command::Stats(a)) => (&mut a.capture, None, None, &a.output),
        _ => None?,
    })
}

/// `--separate` with several files: the command on each file alone, on
/// the --threads workers, the outputs in file order (text under a
/// `==> FILE <==` line, a field export's header once); the first exit code
/// that is not 0. `None` when the run is not one.
fn run_separate(
    command: &Option<Command>,
    read: &ReadArgs,
    out: &mut dyn Write,
) -> Option<anyhow::Result<u8>> {
    let (mut command, mut read) = (command.clone(), read.clone());
    // `read` says which file its lines come from itself (not its -z table).
    let reading = matches!(&command, Some(Command::Read(a)) if a.stat.is_none())
        || (command.is_none() && read.stat.is_none());
    let (cap, display, keys, output) =
        separable(&mut command, &mut read).filter(|c| c.0.separate)?;
    let paths = cap.paths();
    if paths.len() < 2 || cap.part.is_some() {
        return None;
    }
    // Mistakes in the options are said once, and keys read once, not once a file.
    if let Some(Err(code)) = display.as_ref().map(|(d, r)| d.compile(*r, output.json)) {
        return Some(Ok(code));
    }
    if let Some(Err(code)) = keys.map(|k| k.load().map(|keys| k.loaded = Some(keys))) {
        return Some(Ok(code));
    }
    let fields = display.is_some_and(|(d, _)| {
        d.format == Some(crate::display::print::Format::Fields) || !d.fields.is_empty()
    });
    let heading = !output.json && !output.quiet && !fields && !reading;
    let plan = crate::pipeline::separate::Plan {
        paths: paths.clone(),
        threads: crate::pipeline::threads(cap.threads, &paths),
        heading,
        summary_only: false,
        notes: stderr_notes(),
        progress: progress::bar(),
    };
    cap.separate = false;
    let ran = plan.run(out, |i, part, out| {
        let (mut command, mut read) = (command.clone(), read.clone());
        let (cap, display, ..) = separable(&mut command, &mut read).expect("a separable command");
        (cap.files, cap.read_file) = (vec![paths[i].clone()], Vec::new());
        (cap.threads, cap.part) = (Some(1), Some(part));
        // A field export's header once, before the first file's rows.
        if let Some((d, _)) = display.filter(|_| i > 0 && fields) {
            d.export_options.push("header=n".into());
        }
        run(command, &read, out)
    });
    Some(ran.map(first_failure))
}

/// Run `command` (`read` when none), printing to `out`.
fn run(command: Option<Command>, read: &ReadArgs, mut out: &mut dyn Write) -> anyhow::Result<u8> {
    if let Some(ran) = run_separate(&command, read, out) {
        return ran;
    }
    let out = &mut out;
    match command {
        Some(Command::Read(a)) => capture::run_read(&a, out),
        None => capture::run_read(read, out),
        Some(Command::Messages(a)) => capture::run_messages(&a, out),
        Some(Command::Flows(a)) => capture::run_flows(&a, out),
        Some(Command::Handshake(a)) => capture::run_handshake(&a, out),
        Some(Command::Ping(a)) => peer::run_ping(&a, out),
        Some(Command::Connect(a)) => peer::run_connect(&a, out),
        Some(Command::Serve(a)) => peer::run_serve(&a, out),
        Some(Command::Proxy(a)) => peer::run_proxy(&a, out),
        Some(Command::Probe(a)) => peer::run_probe(&a, out),
        Some(Command::Replay(a)) => replay::run_replay(&a, out),
        Some(Command::Live(a)) => live::run_live(&a, out),
        Some(Command::Game(a)) => capture::run_game(&a, out),
        Some(Command::Stats(a)) => capture::run_stats(&a, out),
        Some(Command::Plot(a)) => plot::run_plot(&a, out),
        Some(Command::Export(a)) => export::run_export(&a, out),
        Some(Command::Completions { shell }) => docs::completions(shell, out),
        Some(Command::Fields { output }) => capture::print_fields(&output, out),
        Some(Command::Man { command, all }) => docs::man(command.as_deref(), all.as_deref(), out),
    }
}

/// Run the command line; returns the process exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
            match usage::explain(&e, &<Cli as clap::CommandFactory>::command()) {
                Some(t) => eprint!("{t}"),
                None => drop(e.print()),
            }
            return ExitCode::from(code);
        }
    };
    // `raknet-dissect flow x.pcap`: a mistyped command, not two files to read.
    let commands = <Cli as clap::CommandFactory>::command();
    let (files, names) = (&cli.read.capture.files, commands.get_subcommands());
    let names = names.map(|c| c.get_name());
    let first = files.first().filter(|_| cli.command.is_none());
    if let Some(line) = first.and_then(|f| crate::display::suggest::mistyped_command(f, names)) {
        return ExitCode::from(say(&line, EXIT_USAGE));
    }
    let mut out = io::BufWriter::with_capacity(1 << 16, crate::output::stdout_writer());
    let result = run(cli.command, &cli.read, &mut out);
    let code = match result {
        Ok(code) => code,
        Err(e) if crate::pipeline::is_broken_pipe(&e) => EXIT_OK,
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
