//! `plot FILE -o OUT.svg`: a picture per flow, over capture time
//! (`display::run::plot`: `analysis::plot` collects the series,
//! `output::svg` draws them).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{CaptureArgs, Code, OutputArgs, EXIT_ERROR, EXIT_USAGE};
use crate::display::run::{NotDrawn, PlotOptions};

/// `plot`: draw each flow (or one) as an SVG.
#[derive(Args, Debug, Default, Clone)]
pub struct PlotArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// Where to write the SVG; `-` writes it to standard output.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub svg: PathBuf,
    /// Draw from this time on: seconds since the capture's first packet, the
    /// clock of `read`'s lines. The time axes then count on that clock too.
    #[arg(long, value_name = "SECONDS", value_parser = super::args::parse_seconds)]
    pub from: Option<Duration>,
    /// Draw up to this time (seconds since the capture's first packet).
    #[arg(long, value_name = "SECONDS", value_parser = super::args::parse_seconds)]
    pub to: Option<Duration>,
    // --json: a `plot_flow` record per flow drawn, on standard output; -q:
    // no notes on standard error about the flows left out.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `plot`: read the capture, then write the SVG. Exit codes as for `read`,
/// and 1 when the output cannot be written, 2 when `--flow N` is not in
/// the capture or nothing falls between `--from` and `--to`.
pub fn run_plot(args: &PlotArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let shown = args.svg.display();
    if args.output.json && args.svg.as_os_str() == "-" {
        eprintln!("raknet-dissect: --json and -o - both write to standard output: name a file");
        return Ok(EXIT_USAGE);
    }
    if let (Some(from), Some(to)) = (args.from, args.to) {
        if from > to {
            let (f, t) = (from.as_secs_f64(), to.as_secs_f64());
            eprintln!("raknet-dissect: --from {f} is after --to {t}");
            return Ok(EXIT_USAGE);
        }
    }
    let output = super::or_exit!(super::open_picture(&args.svg, &args.capture.paths()));
    // Nothing is printed until the picture is written: a progress bar may
    // share the terminal.
    let reading = args.capture.reading_at_end();
    let (from, to, quiet, json) = (args.from, args.to, args.output.quiet, args.output.json);
    let o = PlotOptions {
        from,
        to,
        quiet,
        json,
    };
    let drawn = match crate::display::run::plot(&reading, &o) {
        Ok(Ok(drawn)) => drawn,
        Ok(Err(NotDrawn::NotRead(outcome))) => {
            output.abandon();
            return Ok(outcome.code());
        }
        Ok(Err(NotDrawn::Nothing(why))) => {
            output.abandon();
            return Ok(super::say(&why, EXIT_USAGE));
        }
        Err(e) => {
            output.abandon();
            return Err(e);
        }
    };
    if let Err(e) = output.write(&drawn.svg, out) {
        eprintln!("raknet-dissect: cannot write {shown}: {e}");
        return Ok(EXIT_ERROR);
    }
    out.write_all(&drawn.records)?;
    Ok(drawn.outcome.code())
}
