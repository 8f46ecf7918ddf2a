//! `live -i IFACE`: what `read` does, on traffic as it crosses an
//! interface, then the flows table; `-w` saves what was captured.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::args::{parse_seconds, DecodeArgs, DisplayArgs, OutputArgs, TimeArgs};
use super::capture::read_packets;
use super::terminal_width;
use super::{CaptureArgs, ReadArgs, EXIT_OK, EXIT_USAGE};
use crate::capture::live::{stop_on_interrupt, LiveError, LiveOptions};
use crate::capture::write::writes_stdout;
use crate::capture::CaptureReader;
use crate::display::print::Format;
use crate::mirror::FlowMirror;

#[derive(Args, Debug, Clone)]
pub struct LiveArgs {
    /// The interface to capture on; `any` for all of them.
    #[arg(
        short = 'i',
        long = "interface",
        value_name = "IFACE",
        required_unless_present = "list"
    )]
    pub interface: Option<String>,
    /// List the interfaces and exit.
    #[arg(short = 'D', long = "list-interfaces")]
    pub list: bool,
    /// Capture filter: `host ADDR`, `port N`, `src`/`dst`, `and`, `or`, `not`, parentheses
    /// (with the `libpcap` feature: tcpdump's full syntax).
    #[arg(short = 'f', long = "capture-filter", value_name = "FILTER")]
    pub capture_filter: Option<String>,
    /// Also write what is captured to this pcapng file.
    #[arg(short = 'w', long = "write", value_name = "OUT.pcapng")]
    pub write: Option<PathBuf>,
    /// Stop after N RakNet packets (N > 0).
    #[arg(short = 'c', long = "count", value_name = "N", value_parser = crate::output::text::parse_count::<u64>)]
    pub count: Option<u64>,
    /// Only this flow (its number, as the flows table shows it).
    #[arg(long, value_name = "N", value_parser = crate::output::text::parse_count::<u32>)]
    pub flow: Option<u32>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub duration: Option<Duration>,
    /// Print the field tree of each packet.
    #[arg(short = 'V', long)]
    pub verbose: bool,
    /// Print a hex dump of each packet's UDP payload.
    #[arg(short = 'x', long)]
    pub hex: bool,
    /// Every column of the flows table at the end.
    #[arg(long)]
    pub wide: bool,
    #[command(flatten)]
    pub decode: DecodeArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub display: DisplayArgs,
    #[command(flatten)]
    pub time: TimeArgs,
}

pub fn run_live(a: &LiveArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    if a.list {
        crate::capture::live::list_interfaces(out)?;
        return Ok(EXIT_OK);
    }
    let interface = a.interface.as_deref().unwrap_or("any");
    let mut opts = match LiveOptions::new(interface, a.capture_filter.as_deref()) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("raknet-dissect: -f: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    // Ctrl-C ends the capture: the flows table still comes.
    opts.stop = stop_on_interrupt();
    opts.write = a.write.clone();
    opts.duration = a.duration;
    let kernel = Arc::clone(&opts.kernel);
    // Inline, not in the background: a batch would wait to fill up.
    let reader = match CaptureReader::live(opts) {
        Ok(r) => r,
        Err(e @ LiveError::Permission { .. }) => {
            return Ok(super::say(&e.to_string(), super::EXIT_NO_PERMISSION))
        }
        Err(e @ (LiveError::NoInterface(_) | LiveError::Filter(_))) => {
            return Ok(super::say(&e.to_string(), EXIT_USAGE))
        }
        Err(e) => {
            eprintln!("raknet-dissect: live capture: {e}");
            return Ok(super::EXIT_ERROR);
        }
    };
    eprintln!("raknet-dissect: capturing on {interface}");
    let read = ReadArgs {
        capture: CaptureArgs {
            decode: a.decode.clone(),
            flow: a.flow,
            count: a.count,
            ..CaptureArgs::default()
        },
        output: OutputArgs {
            quiet: a.output.quiet || writes_stdout(a.write.as_deref()),
            ..a.output.clone()
        },
        display: a.display.clone(),
        time: a.time,
        verbose: a.verbose,
        hex: a.hex,
        ..ReadArgs::default()
    };
    let mut flows: Vec<FlowMirror> = Vec::new();
    let code = read_packets(&read, Some(reader), Some(&mut flows), out)?;
    flows.retain(|f| a.flow.is_none_or(|n| n == f.id));
    let fields = a.display.format == Some(Format::Fields)
        || (a.display.format.is_none() && !a.display.fields.is_empty());
    // A field export stays one table: no flows after it (nor after a capture).
    if !fields && !writes_stdout(a.write.as_deref()) {
        let json = a.output.json || a.display.format == Some(Format::Json);
        crate::display::run::flows_at_end(flows, json, (a.wide, terminal_width()), out)?;
    }
    out.flush()?;
    let k = kernel.lock().map(|k| *k).unwrap_or_default();
    eprintln!(
        "raknet-dissect: the kernel passed {} packets to the capture and dropped {}",
        k.packets, k.drops
    );
    Ok(code)
}
