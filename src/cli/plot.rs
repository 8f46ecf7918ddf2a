//! `plot FILE -o OUT.svg`: a picture per flow. (Being written.)

use std::io::Write;

use clap::Args;

use super::CaptureArgs;

#[derive(Args, Debug, Default)]
pub struct PlotArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
}

pub fn run_plot(_args: &PlotArgs, _out: &mut impl Write) -> anyhow::Result<u8> {
    anyhow::bail!("plot: not written yet")
}
