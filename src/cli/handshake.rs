//! `handshake FILE`: each connection attempt of a capture, its timeline and
//! its outcome (`mirror::handshake`).

use std::io::Write;

use clap::Args;

use super::{drive_items, mirror_config, CaptureArgs, Next, OutputArgs};
use crate::display::RecordType;
use crate::mirror::handshake::HandshakeTracker;
use crate::mirror::Mirror;
use crate::output::handshake::HandshakeJson;
use crate::pipeline::Item;

#[derive(Args, Debug, Default)]
pub struct HandshakeArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub display: super::DisplayArgs,
}

pub fn run_handshake(args: &HandshakeArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let shown = match args
        .display
        .compile(RecordType::Handshake, args.output.json)
    {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let mut mirror = Mirror::new(mirror_config(&args.capture), false);
    let mut tracker = HandshakeTracker::new();
    let code = drive_items(
        None,
        &args.capture.printing_at_end(),
        false,
        &mut mirror,
        out,
        |item, _| {
            match item {
                Item::Icmp { note: i, .. } => tracker.icmp(i.flow, i.dir, i.ts, i.frame, i.kind),
                Item::Packet { packet, obs, .. } => tracker.observe(packet, &obs.messages),
                Item::File { .. } => {}
            }
            Ok(Next::Continue)
        },
    )?;
    shown.write_header(out)?;
    for a in tracker.finish() {
        if !args.output.quiet && args.capture.flow.is_none_or(|f| f == a.flow) {
            let j = HandshakeJson::new(&a);
            shown.record(&j, || j.lines(), out)?;
        }
    }
    Ok(code)
}
