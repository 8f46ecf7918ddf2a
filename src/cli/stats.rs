//! `stats FILE`: a capture counted. The messages delivered to each side's
//! application (what `messages` prints) by message id, reliability and
//! ordering channel, and the traffic per time interval from the first packet:
//! packets, bytes, ACKs, NACKs, resends, messages. Across every flow, or one
//! with `--flow`.

use std::io::Write;
use std::time::Duration;

use clap::Args;

use super::args::parse_interval;
use super::{
    drive_items, mirror_config, terminal_width, CaptureArgs, Next, EXIT_BAD_FILE, EXIT_USAGE,
};
use crate::analysis::stats::{Stats, MAX_INTERVALS};
use crate::mirror::Mirror;
use crate::output::stats::{write_json, write_text};
use crate::pipeline::Item;

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
    pub output: super::OutputArgs,
}

/// `stats`: count the capture, then print the tables or the records.
pub fn run_stats(args: &StatsArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let mut mirror = Mirror::new(mirror_config(&args.capture), false);
    let mut st = Stats::new(args.interval, MAX_INTERVALS);
    let only = args.capture.flow;
    // Everything is printed at the end: a progress bar may share the terminal.
    let cap = args.capture.printing_at_end();
    let code = drive_items(None, &cap.reading(false), &mut mirror, out, |item, _| {
        match item {
            Item::Packet { packet, obs, .. } => st.observe(packet, obs, only),
            Item::Counted(c) => st.capture = Some(c),
            _ => {}
        }
        Ok(Next::Continue)
    })?;
    if code == EXIT_USAGE || code == EXIT_BAD_FILE {
        return Ok(code);
    }
    for m in mirror
        .finish()
        .messages
        .iter()
        .filter(|m| only.is_none_or(|f| f == m.flow))
    {
        st.message(m);
    }
    if args.output.quiet {
        return Ok(code);
    }
    if args.output.json {
        if let Some(warning) = write_json(&st, only, args.capture.part_name(), out)? {
            out.flush()?;
            eprintln!("raknet-dissect: warning: {warning}");
        }
    } else {
        write_text(&st, only, terminal_width(), out)?;
    }
    Ok(code)
}
