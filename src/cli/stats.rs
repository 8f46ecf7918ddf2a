//! `stats FILE`: tables of what a capture holds. (Being written.)

use std::io::Write;

use clap::Args;

use super::CaptureArgs;

#[derive(Args, Debug, Default)]
pub struct StatsArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
}

pub fn run_stats(_args: &StatsArgs, _out: &mut impl Write) -> anyhow::Result<u8> {
    anyhow::bail!("stats: not written yet")
}
