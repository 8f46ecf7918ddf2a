//! The run every capture command makes: the pipeline over its files (or a
//! live reader) with its progress shown, `-c`, `--flow`, and
//! the same errors and outcomes for every command.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::ahead::Window;
use super::notes::{NoteKind, Notes};
use super::progress::Progress;
use super::separate::Part;
use super::{Input, Item, Next, Pipeline, PipelineOptions, ReadOutcome};
use crate::bedrock::{Game, GameEvent};
use crate::capture::CaptureReader;
use crate::mirror::{Message, Mirror, MirrorConfig};
use crate::session::receive::Reassembly;

/// What a capture command reads, and how: its command line's capture
/// options.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// The capture files, in order.
    pub paths: Vec<PathBuf>,
    /// The dissector's options and what the pipeline hands out.
    pub options: PipelineOptions,
    /// The command prints only once the capture is read (its progress bar
    /// may share a terminal with standard output).
    pub summary_only: bool,
    /// Stop after this many RakNet packets (`-c`).
    pub count: Option<u64>,
    /// The one flow shown (`--flow`): a number the capture does not have is
    /// exit 2.
    pub flow: Option<u32>,
    /// The file of a `--separate` run this run reads.
    pub part: Option<Part>,
    /// Where the run's notes go (files not read, the summary, hints).
    pub notes: Notes,
    /// Where the run's progress is shown (a file of a `--separate` run
    /// counts into the run's).
    pub progress: Progress,
    /// How split messages are joined (`--reassembly`).
    pub reassembly: Reassembly,
    /// Threads that print the records (`--threads`), where the output
    /// allows several.
    pub threads: usize,
    /// DTLS key logs for NetherNet (`--tls-keylog`).
    pub tls_keylog: Vec<PathBuf>,
    /// A DTLS key log read when it can be (`SSLKEYLOGFILE`).
    pub tls_keylog_env: Option<PathBuf>,
}

impl Reading {
    /// A run over `paths`, expanded ([`super::expand_paths`]: directories,
    /// globs), printing on the `threads` asked for ([`super::threads`]: the
    /// cores when none); the rest as by default.
    pub fn new(paths: impl IntoIterator<Item = PathBuf>, threads: Option<u16>) -> Reading {
        let paths = super::expand_paths(paths);
        let threads = super::threads(threads, &paths);
        let options = PipelineOptions {
            one_thread: threads == 1,
            ..PipelineOptions::default()
        };
        Reading {
            paths,
            options,
            threads,
            ..Reading::default()
        }
    }

    /// The mirror's configuration of the run.
    pub(crate) fn mirror_config(&self) -> MirrorConfig {
        MirrorConfig::reassembling(self.reassembly)
    }

    /// The names records carry: the files' when several are read as one
    /// capture, this file's in a `--separate` run, none for one file.
    pub(crate) fn file_names(&self) -> Vec<String> {
        match &self.part {
            Some(p) => vec![p.name.clone()],
            None => super::file_names(&self.paths),
        }
    }

    /// The name of this file, on the run of one file of a `--separate` run.
    pub(crate) fn part_name(&self) -> Option<&str> {
        self.part.as_ref().map(|p| p.name.as_str())
    }
}

/// Run the pipeline over the capture files of `cap` (or `live`), handing
/// each item to `each`, with its progress shown, `-c`, and the
/// same errors for every command: files that cannot be read (the others
/// are still read), files cut short (a warning), a `--flow` the capture
/// does not have, each said through the notes. Returns how it ended.
pub(crate) fn drive_items(
    live: Option<CaptureReader>,
    cap: &Reading,
    mirror: &mut Mirror,
    out: &mut impl Write,
    mut each: impl FnMut(Item<'_, '_>, &mut dyn Write) -> anyhow::Result<Next>,
) -> anyhow::Result<ReadOutcome> {
    let paths = &cap.paths;
    let mut opts = cap.options.clone();
    let env = cap.tls_keylog_env.as_deref();
    match crate::nethernet::dtls::KeyLog::from_files(&cap.tls_keylog, env) {
        Ok(log) => opts.tls_keylog = Arc::new(log),
        Err(e) => {
            cap.notes.say(NoteKind::Usage, &e.to_string());
            return Ok(ReadOutcome::Usage);
        }
    }
    let (input, bar) = match live {
        Some(r) => (Input::Reader(Box::new(r)), None),
        None if paths.is_empty() => {
            let why = "no capture file given (FILE, -r FILE, or - for standard input)";
            cap.notes.say(NoteKind::Usage, why);
            return Ok(ReadOutcome::Usage);
        }
        None => {
            // A file of a --separate run counts into the run's one bar.
            let bar = match cap.part {
                None => cap.progress.start(paths, cap.summary_only),
                Some(_) => None,
            };
            opts.consumed = bar.as_ref().map(|b| Arc::clone(&b.consumed));
            opts.consumed = opts.consumed.or(cap.part.clone().and_then(|p| p.consumed));
            (Input::Files(paths.clone()), bar)
        }
    };
    let mut pipeline = Pipeline::new(opts);
    let mut packets = 0u64;
    let ended = pipeline.run(input, mirror, |item| {
        // -c counts NetherNet's datagrams and signaling segments too.
        let last = matches!(
            item,
            Item::Packet { .. }
                | Item::Owned { .. }
                | Item::Nethernet { .. }
                | Item::Signaling { .. }
                | Item::Lan { .. }
        ) && {
            packets += 1;
            cap.count.is_some_and(|n| packets >= n)
        };
        let next = each(item, &mut *out)?;
        Ok::<_, anyhow::Error>(if last { Next::Stop } else { next })
    })?;
    drop(bar);
    out.flush()?;
    // In a --separate run, every line names its file.
    let name = |l: String| match cap.part.as_ref().map(|p| p.name.as_str()) {
        Some(n) if !l.starts_with(n) => format!("{n}: {l}"),
        _ => l,
    };
    for line in ended.problems(paths) {
        cap.notes.say_once(NoteKind::Problem, &name(line));
    }
    // Not once a file of a --separate run: a fleet would fill the terminal.
    if cap.part.is_none() {
        let summary = ended.summary(pipeline.dissect_stats(), pipeline.nethernet());
        cap.notes.say(NoteKind::Summary, &summary);
    }
    // Nothing to show is said, with what to try.
    let nethernet = pipeline.nethernet().datagrams > 0 || pipeline.signaling_segments() > 0;
    if let Some(why) =
        nothing_read(&ended, pipeline.dissect_stats(), cap.count).filter(|_| !nethernet)
    {
        cap.notes.say_once(NoteKind::Hint, &name(why));
    }
    match (ended.outcome(), pipeline.no_such_flow(cap.flow)) {
        (ReadOutcome::Read, Some(why)) => {
            cap.notes.say(NoteKind::Usage, &why);
            Ok(ReadOutcome::Usage)
        }
        (outcome, _) => Ok(outcome),
    }
}

/// Why a run that read its files found no RakNet packet, with what to try;
/// `None` when it found some (or could not read them: said already).
fn nothing_read(
    ended: &super::Ended,
    d: &crate::dissect::DissectStats,
    count: Option<u64>,
) -> Option<String> {
    if d.raknet_packets > 0 || !ended.unreadable.is_empty() || count == Some(0) {
        return None;
    }
    let plural = crate::wire::plural;
    Some(if d.not_raknet > 0 {
        format!(
            "no RakNet packets: {} {} not RakNet. A capture that begins after the \
             handshake needs the server's port: -d PORT (decode as RakNet)",
            d.not_raknet,
            plural(d.not_raknet, "UDP datagram was", "UDP datagrams were")
        )
    } else {
        let frames = plural(ended.frames, "frame", "frames");
        format!(
            "no RakNet packets: {} {frames}, none of them UDP",
            ended.frames
        )
    })
}

/// The line that says a `game` run found no Bedrock flow, with what to
/// try; `None` when it found one, or no RakNet at all ([`drive_items`] said
/// that).
pub(crate) fn no_game(game: &Game) -> Option<String> {
    (game.game_flows == 0 && game.packets > 0).then(|| {
        "no Minecraft Bedrock flow among the RakNet flows (none carries the game batches \
         a Bedrock peer sends); --bedrock reads every flow as Bedrock"
            .to_string()
    })
}

/// What a NetherNet datagram delivered, each as a message of its
/// conversation's flow with what the game layer made of it and the data
/// channel it came on: with `batches`, the batches it completed; else the
/// data-channel messages, a message that completed a batch with its game
/// packets. The client opened the channels: what it receives goes `s2c`.
pub(crate) fn nethernet_delivered(
    game: &mut Game,
    seen: &crate::nethernet::conversations::Seen<'_>,
    frame: u64,
    ts: Duration,
    batches: bool,
) -> Vec<Delivered> {
    use crate::nethernet::association::{DataChannel, Event, RELIABLE};
    let c = seen.conversation;
    let mut out = Vec::new();
    let mut events = seen.events.iter().peekable();
    while let Some(e) = events.next() {
        let (to, stream, ppid, data, batch) = match e {
            Event::Batch { to, stream, data } if batches => (to, stream, None, data, Some(data)),
            Event::Message {
                to,
                stream,
                ppid,
                data,
            } if !batches => {
                let batch = match events.peek() {
                    Some(Event::Batch {
                        to: t,
                        stream: s,
                        data,
                    }) if t == to && s == stream => Some(data),
                    _ => None,
                };
                (to, stream, Some(*ppid), data, batch)
            }
            _ => continue,
        };
        let channel = c.association.channels.get(stream);
        let dir = if *to == c.client() {
            crate::dissect::Dir::S2c
        } else {
            crate::dissect::Dir::C2s
        };
        let reliable = channel.is_some_and(|ch| ch.label == RELIABLE);
        let ev = match batch {
            Some(b) => game.batch(c.id, dir, b),
            None => Some(Vec::new()),
        };
        let message = Message {
            flow: c.id,
            dir,
            frame,
            ts,
            data: data.clone(),
            // As DCEP opened the channel: reliable and ordered, or neither.
            reliability: crate::wire::Reliability(if reliable { 3 } else { 0 }),
            channel: None,
            anomalies: Vec::new(),
        };
        let via = DataChannel {
            stream: *stream,
            label: channel.map(|ch| ch.label.clone()),
            // A batch: the binary messages it was made of.
            ppid: ppid.unwrap_or(crate::nethernet::sctp::ppid::BINARY),
        };
        out.push(Delivered {
            message,
            game: ev,
            channel: Some(via),
        });
    }
    out
}

/// A message an application received, as [`drive_messages`] hands it out.
pub(crate) struct Delivered {
    /// The message (a NetherNet one: with its flow, direction, frame and
    /// time; its reliability as its channel's).
    pub(crate) message: Message,
    /// What the game layer made of it, in a Bedrock flow.
    pub(crate) game: Option<Vec<GameEvent>>,
    /// The data channel of a NetherNet message.
    pub(crate) channel: Option<crate::nethernet::association::DataChannel>,
}

impl Delivered {
    /// A RakNet flow's message and what the game layer made of it.
    pub(crate) fn raknet(message: Message, game: Option<Vec<GameEvent>>) -> Delivered {
        Delivered {
            message,
            game,
            channel: None,
        }
    }
}

/// [`drive_items`] for the commands that print delivered messages: `each`
/// gets every message in delivery order with what the game layer made of
/// it (a Bedrock flow's 0xFE messages), the time lines count from, and its
/// file; the messages still held at the end come last. With `batches`,
/// each batch a NetherNet application received too, as a message of its
/// flow, with its game packets.
pub(crate) fn drive_messages(
    cap: &Reading,
    mirror: &mut Mirror,
    game: &mut Game,
    batches: bool,
    out: &mut impl Write,
    mut each: impl FnMut(Delivered, Duration, usize, &mut dyn Write) -> anyhow::Result<()>,
) -> anyhow::Result<ReadOutcome> {
    let (mut first, mut last_file) = (None, 0);
    // NetherNet flows whose DTLS records stayed closed (a few are named).
    let mut closed: Vec<u32> = Vec::new();
    // With several threads, batches are opened (decrypted, inflated) on
    // workers ahead of their turn (`ahead`).
    let workers = if cap.threads > 1 { cap.threads } else { 0 };
    // When they decrypt (a key is given), they keep the cores busy: the
    // capture is then read on this thread, not on one more of its own
    // (on two cores, 6% to 10% less wall time, measured on a Bedrock play
    // session; without a key the reading thread gains as much).
    let inline;
    let cap = if workers > 0 && game.decrypts() && !cap.options.one_thread {
        inline = Reading {
            options: PipelineOptions {
                one_thread: true,
                ..cap.options.clone()
            },
            ..cap.clone()
        };
        &inline
    } else {
        cap
    };
    let outcome = std::thread::scope(|scope| {
        let mut window = Window::new(scope, workers);
        let outcome = drive_items(None, cap, mirror, out, |item, out| {
            let mut each = |d, since, file| each(d, since, file, &mut *out);
            if let Item::Packet {
                packet,
                obs,
                since,
                file,
            } = item
            {
                (first, last_file) = (Some(since), file);
                // What an offline packet tells the game layer of its flow
                // (its RakNet protocol, a pong) is for the messages after it.
                let offline = matches!(
                    packet.body,
                    crate::dissect::Body::Offline { msg: Some(_), .. }
                );
                if offline && window.holds(packet.flow) {
                    window.flush(game, &mut |m, g, s, f| each(Delivered::raknet(m, g), s, f))?;
                }
                game.packet(packet);
                for m in obs.messages.drain(..) {
                    window.message(game, m, since, file, &mut |m, g, s, f| {
                        each(Delivered::raknet(m, g), s, f)
                    })?;
                }
                obs.ended.iter().for_each(|&f| window.close(game, f));
            } else if let Item::Secrets { kind, data } = item {
                // For the messages after it: those before go first.
                window.flush(game, &mut |m, g, s, f| each(Delivered::raknet(m, g), s, f))?;
                game.secrets(kind, data);
            } else if let Item::Nethernet {
                seen,
                frame,
                ts,
                since,
                file,
                ..
            } = item
            {
                // The RakNet messages before it first.
                window.flush(game, &mut |m, g, s, f| each(Delivered::raknet(m, g), s, f))?;
                (first, last_file) = (Some(since), file);
                let c = seen.conversation;
                let sealed = c.association.counts.values().any(|n| n.encrypted > 0);
                if sealed
                    && !c.association.decrypts()
                    && closed.len() < 8
                    && !closed.contains(&c.id)
                {
                    closed.push(c.id);
                }
                for d in nethernet_delivered(game, &seen, frame, ts, batches) {
                    each(d, since, file)?;
                }
                seen.retired.iter().for_each(|&f| drop(game.close(f)));
            }
            Ok(Next::Continue)
        });
        let mut each = |d, since, file| each(d, since, file, &mut *out);
        window.flush(game, &mut |m, g, s, f| each(Delivered::raknet(m, g), s, f))?;
        let outcome = outcome?;
        for m in mirror.finish().messages {
            let since = first.unwrap_or_default();
            window.message(game, m, since, last_file, &mut |m, g, s, f| {
                each(Delivered::raknet(m, g), s, f)
            })?;
        }
        window.flush(game, &mut |m, g, s, f| each(Delivered::raknet(m, g), s, f))?;
        anyhow::Ok(outcome)
    })?;
    if batches && !closed.is_empty() {
        let ids: Vec<String> = closed.iter().map(u32::to_string).collect();
        let flows = crate::wire::plural(closed.len() as u64, "flow", "flows");
        cap.notes.say(
            NoteKind::Hint,
            &format!(
                "NetherNet {flows} {}: the DTLS records are not decrypted; \
                 --tls-keylog FILE (an NSS key log, as SSLKEYLOGFILE writes) \
                 or a pcapng holding the keys (editcap --inject-secrets tls,FILE) opens them",
                ids.join(", ")
            ),
        );
    }
    Ok(outcome)
}
