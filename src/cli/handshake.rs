//! `handshake FILE`: each connection attempt of a capture, its timeline and
//! its outcome (`mirror::handshake`).

use std::io::Write;

use clap::Args;

use super::{drive_items, mirror_config, CaptureArgs, Next, OutputArgs};
use crate::bedrock::{Detect, Game};
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
    /// Keys for a Bedrock login after the encryption starts.
    #[command(flatten)]
    pub keys: super::args::KeyArgs,
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
    // Bedrock flows: the game login after the RakNet connection.
    let keys = match args.keys.load() {
        Ok(k) => k,
        Err(code) => return Ok(code),
    };
    let mut game = Game::counting(Detect::Auto, keys);
    let code = drive_items(
        None,
        &args.capture.printing_at_end(),
        false,
        &mut mirror,
        out,
        |item, _| {
            match item {
                Item::Icmp { note: i, .. } => tracker.icmp(i.flow, i.dir, i.ts, i.frame, i.kind),
                Item::Packet { packet, obs, .. } => {
                    tracker.observe(packet, &obs.messages);
                    game.packet(packet);
                    obs.messages.iter().for_each(|m| drop(game.message(m)));
                }
                Item::File { .. } => {}
            }
            Ok(Next::Continue)
        },
    )?;
    shown.write_header(out)?;
    let attempts = tracker.finish();
    let logins = game.logins(&attempts);
    for (a, login) in attempts.iter().zip(logins) {
        if !args.output.quiet && args.capture.flow.is_none_or(|f| f == a.flow) {
            let mut j = HandshakeJson::new(a);
            j.game = login;
            shown.record(&j, || j.lines(), out)?;
        }
    }
    Ok(code)
}
