//! `handshake FILE`: each connection attempt of a capture, its timeline and
//! its outcome (`mirror::handshake`).

use std::io::Write;

use clap::Args;

use super::{drive_items, mirror_config, CaptureArgs, Next, OutputArgs};
use crate::bedrock::{Detect, Game};
use crate::display::RecordType;
use crate::mirror::handshake::{Attempt, HandshakeTracker};
use crate::mirror::Mirror;
use crate::output::handshake::HandshakeJson;
use crate::pipeline::Item;

#[derive(Args, Debug, Default, Clone)]
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
    if !args.output.quiet {
        shown.write_header(out)?;
    }
    // Attempts as their flows end (then at the end, in flow order).
    let print = |attempts: Vec<Attempt>, game: &mut Game, out: &mut dyn Write| {
        for (a, login) in attempts.iter().zip(game.logins(&attempts)) {
            if !args.output.quiet && args.capture.flow.is_none_or(|f| f == a.flow) {
                let mut j = HandshakeJson::new(a);
                (j.game, j.file) = (login, args.capture.part_name());
                shown.record(&j, || j.lines(), out)?;
            }
        }
        anyhow::Ok(())
    };
    let cap = args.capture.printing_at_end();
    let code = drive_items(None, &cap.reading(false), &mut mirror, out, |item, out| {
        match item {
            Item::Icmp { note: i, .. } => tracker.icmp(i.flow, i.dir, i.ts, i.frame, i.kind),
            Item::Packet { packet, obs, .. } => {
                tracker.observe(packet, &obs.messages);
                game.packet(packet);
                obs.messages.iter().for_each(|m| drop(game.message(m)));
                print(tracker.take_ended(&obs.ended), &mut game, out)?;
                // The flows that ended, not those of every attempt handed
                // out: a flow past its bounded attempts goes on.
                obs.ended.iter().for_each(|&f| drop(game.close(f)));
            }
            Item::File { .. } | Item::Counted(_) | Item::Owned { .. } => {}
        }
        Ok(Next::Continue)
    })?;
    print(tracker.finish(), &mut game, out)?;
    Ok(code)
}
