//! `game FILE`: the Minecraft Bedrock game packets inside the 0xFE
//! messages each application received (`bedrock::Game` over the mirror).

use std::io::Write;

use clap::Args;

use super::args::{CaptureArgs, KeyArgs, OutputArgs};
use super::capture::{drive_messages, mirror_config};
use crate::bedrock::{Detect, Game};
use crate::display::print::GamePrinter;
use crate::display::records::GameItem;
use crate::display::RecordType;
use crate::mirror::Mirror;
use crate::output::text::Palette;
use crate::pipeline::ordered;

#[derive(Args, Debug, Default, Clone)]
pub struct GameArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub display: super::DisplayArgs,
    /// Print each packet's fields as a tree: in wire order, with offsets.
    #[arg(short = 'V', long)]
    pub verbose: bool,
    /// Hex dump of each decompressed packet.
    #[arg(short = 'x', long = "hex")]
    pub hex: bool,
    /// Bytes of each packet's `data` in --json records (all by default).
    #[arg(long, value_name = "N")]
    pub data_limit: Option<usize>,
    #[command(flatten)]
    pub keys: KeyArgs,
    /// Every flow's 0xFE messages are game batches (a capture that starts
    /// after the login); by default a flow is Bedrock when its first 0xFE
    /// message is a login or its pong is Minecraft's.
    #[arg(long)]
    pub bedrock: bool,
    /// Only the login packets' fields (decoded by hand), not every
    /// packet's from minecraft-data's definitions: faster.
    #[arg(long)]
    pub no_fields: bool,
}

/// `game`: a line (or record) per game packet, in delivery order.
pub fn run_game(a: &GameArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let (keys, shown) = match (
        a.keys.load(),
        a.display.compile(RecordType::Game, a.output.json),
    ) {
        (Ok(k), Ok(s)) => (k, s),
        (Err(code), _) | (_, Err(code)) => return Ok(code),
    };
    let mut game = Game::new(Detect::forced(a.bedrock), keys);
    (game.fields, game.layout) = (!a.no_fields, a.verbose && shown.text());
    let mut mirror = Mirror::new(mirror_config(&a.capture), false);
    let pal = Palette::choose(a.output.color, !shown.text());
    if !a.output.quiet {
        shown.write_header(out)?;
    }
    let files = a.capture.file_names();
    let printer = || {
        let shown = a.display.compile(RecordType::Game, a.output.json);
        let mut p = GamePrinter::new(shown.expect("compiled"), pal, files.clone());
        (p.verbose, p.hex, p.data_limit) = (a.verbose, a.hex, a.data_limit);
        p
    };
    let print = |p: &mut GamePrinter, g: &mut _, out: &mut dyn Write| p.print(g, out);
    let (cap, only, null) = (&a.capture, a.capture.flow, &mut std::io::sink());
    let code = ordered::run(cap.threads(), out, printer, print, drop, |sink| {
        drive_messages(
            &cap.reading(false),
            &mut mirror,
            &mut game,
            null,
            |message, ev, since, file, _| match ev {
                Some(events) if !a.output.quiet && only.is_none_or(|f| f == message.flow) => {
                    let bytes = message.data.len() * 4;
                    let item = GameItem {
                        events,
                        message,
                        since,
                        file,
                    };
                    Ok(sink.push_weighing(item, bytes)?)
                }
                _ => Ok(()),
            },
        )
    })?;
    Ok(crate::pipeline::drive::no_game(&game).map_or(code, |l| super::say(&l, code)))
}
