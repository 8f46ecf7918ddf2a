//! `plot FILE -o OUT.svg`: a picture per flow, over capture time
//! (`analysis::plot` collects the series, `output::svg` draws them).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{
    drive, mirror_config, CaptureArgs, Next, OutputArgs, EXIT_BAD_FILE, EXIT_ERROR, EXIT_USAGE,
};
use crate::analysis::plot::Collector;
use crate::mirror::Mirror;
use crate::output::file::OutputFile;

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
    if crate::output::file::is_one_of(&args.svg, &args.capture.paths()) {
        return Ok(super::say(
            &format!("{shown} is the capture file: not overwriting it"),
            EXIT_USAGE,
        ));
    }
    if let (Some(from), Some(to)) = (args.from, args.to) {
        if from > to {
            let (f, t) = (from.as_secs_f64(), to.as_secs_f64());
            eprintln!("raknet-dissect: --from {f} is after --to {t}");
            return Ok(EXIT_USAGE);
        }
    }
    let output = match OutputFile::open(&args.svg) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("raknet-dissect: cannot write {shown}: {e}");
            return Ok(EXIT_ERROR);
        }
    };
    let mut cfg = mirror_config(&args.capture);
    // The picture needs findings and RTT samples, not the messages.
    cfg.receive.keep_data = false;
    cfg.messages = false;
    let mut mirror = Mirror::new(cfg, false);
    let mut col = Collector::new(args.capture.flow, args.from, args.to);
    // Nothing is printed until the picture is written: a progress bar may
    // share the terminal.
    let code = drive(
        &args.capture.printing_at_end().reading(false),
        &mut mirror,
        &mut std::io::sink(),
        |p, obs, since, _| {
            col.observe(p, obs, since);
            Ok(Next::Continue)
        },
    )?;
    if code == EXIT_USAGE || code == EXIT_BAD_FILE {
        output.abandon();
        return Ok(code);
    }
    if let Some(why) = col.nothing_drawn() {
        output.abandon();
        eprintln!("raknet-dissect: {why}");
        return Ok(EXIT_USAGE);
    }
    let (drawn, left) = col.choose();
    if !args.output.quiet {
        for note in col.left_out(drawn.len(), &left) {
            eprintln!("raknet-dissect: plot: {note}");
        }
    }
    let svg = match crate::output::svg::render(&drawn) {
        Ok(s) => s,
        Err(e) => {
            output.abandon();
            anyhow::bail!("plot: drawing failed: {e}");
        }
    };
    if let Err(e) = output.write(&svg, out) {
        eprintln!("raknet-dissect: cannot write {shown}: {e}");
        return Ok(EXIT_ERROR);
    }
    if args.output.json {
        for f in &drawn {
            serde_json::to_writer(&mut *out, &crate::output::json::PlotFlowJson::new(f))?;
            out.write_all(b"\n")?;
        }
    }
    Ok(code)
}
