//! `handshake FILE`: each connection attempt of a capture, its timeline and
//! its outcome (`mirror::handshake`).

use std::io::Write;

use clap::Args;

use super::{drive_items, mirror_config, CaptureArgs, Next, OutputArgs};
use crate::display::{JsonRecord, RecordType};
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
    let mut line = String::new();
    if let Some(x) = &shown.export {
        out.write_all(x.header().as_bytes())?;
    }
    for a in tracker.finish() {
        if args.output.quiet || args.capture.flow.is_some_and(|f| f != a.flow) {
            continue;
        }
        let j = HandshakeJson::new(&a);
        // A filter or an export reads the record itself.
        if shown.filter.is_some() || shown.export.is_some() {
            let r = JsonRecord(serde_json::to_value(&j)?);
            if !shown.wants(&r) {
                continue;
            }
            if let Some(x) = &shown.export {
                line.clear();
                x.push_row(&r, &mut line);
                out.write_all(line.as_bytes())?;
                continue;
            }
        }
        if shown.json {
            serde_json::to_writer(&mut *out, &j)?;
            out.write_all(b"\n")?;
            continue;
        }
        writeln!(out, "{}", j.lines())?;
    }
    Ok(code)
}
