//! The capture commands that print records, as library calls: [`packets`]
//! (`read`, `live`), [`messages`], [`flows`], [`handshakes`], [`game`],
//! [`stats`] and [`plot`]
//! run the pipeline over what a [`Reading`] names and print what it finds
//! with the printers of [`super::print`], on `reading.threads` threads
//! where the output allows it. What to print comes compiled ([`Shown`]:
//! the caller said what was wrong with the options), made again for each
//! printing thread; each call returns how the capture was read.

use std::io::{self, Write};
use std::sync::Mutex;
use std::time::Duration;

use super::fields::DescribedRecord;
use super::print::{Choice, FlowPrinter, GamePrinter, MessagePrinter, PacketPrinter, Shown};
use super::records::{Clock, GameItem, MessageChoice, MessageItem, PacketItem, PacketRecords};
use super::RecordType;
use crate::analysis::plot::Collector;
use crate::analysis::stats::{Stats, MAX_INTERVALS};
use crate::bedrock::{event_names, Detect, Game, Keys};
use crate::capture::write::Recorder;
use crate::capture::CaptureReader;
use crate::dissect::SpentPackets;
use crate::mirror::handshake::{Attempt, HandshakeTracker};
use crate::mirror::{FlowMirror, Mirror, Observation};
use crate::nethernet::timeline::{Signals, Timeline};
use crate::output::handshake::HandshakeJson;
use crate::output::json::PlotFlowJson;
use crate::output::stats::{write_json, write_text};
use crate::output::text::{Palette, TimeFormat};
use crate::output::ColorChoice;
use crate::pipeline::drive::{drive_items, drive_messages, nethernet_delivered, no_game, Reading};
use crate::pipeline::notes::NoteKind;
use crate::pipeline::{ordered, Item, Next, ReadOutcome};
use crate::records::nethernet::NethernetFlow;

/// What to print of each record, compiled (once per printing thread).
pub(crate) type Compile<'a> = &'a (dyn Fn() -> Shown + Sync);

/// `read`'s options beside what it reads and what it shows.
#[derive(Default)]
pub struct PacketOptions {
    /// When lines are colored (`--color`).
    pub color: ColorChoice,
    /// No lines, only what comes at the end (`-q`, `-w -`).
    pub quiet: bool,
    /// The time column's format (`-t`).
    pub time: TimeFormat,
    /// The field tree of each packet (`-V`).
    pub verbose: bool,
    /// A hex dump of each packet's UDP payload (`-x`).
    pub hex: bool,
    /// Where the packets shown are written as pcapng (`-w`).
    pub write: Option<Recorder>,
    /// Key material for the game packets the lines name.
    pub keys: Keys,
}

/// `read`: one line (or tree, or record) per RakNet packet, over `live`
/// when given; `flows` collects the flows as they end (and at the end),
/// for a table after the packets. Printed on `reading.threads` threads
/// (one for a live capture, with `-w`, and with `-t dd`).
pub fn packets(
    reading: &Reading,
    shown: Compile<'_>,
    o: PacketOptions,
    live: Option<CaptureReader>,
    mut flows: Option<&mut Vec<FlowMirror>>,
    out: &mut impl Write,
) -> anyhow::Result<ReadOutcome> {
    let first = shown();
    let pal = Palette::choose(o.color, first.json || first.export.is_some());
    let mut cfg = reading.mirror_config();
    // Packets need the mirror's findings, and the game layer the 0xFE
    // messages' bytes (the lines of Bedrock flows name the game packets).
    cfg.receive.keep_only = Some(crate::bedrock::GAME_MESSAGE);
    let mut mirror = Mirror::new(cfg, flows.is_some());
    if !o.quiet {
        first.write_header(out)?;
    }
    let mut cap = reading.clone();
    (cap.summary_only, cap.options.trace) = (o.quiet, o.verbose && first.text());
    cap.options.owned = Some(SpentPackets::default());
    let (files, clock) = (reading.file_names(), Clock::new(o.time));
    let parallel = clock.parallel() && live.is_none() && o.write.is_none();
    let writes = o.write.is_some();
    let writer = Mutex::new(o.write);
    let printer = || {
        let mut printer = PacketPrinter::new(shown(), pal, o.time, files.clone());
        (printer.verbose, printer.hex, printer.quiet) = (o.verbose, o.hex, o.quiet);
        (printer.only, printer.writer) = (cap.flow, writer.lock().ok().and_then(|mut w| w.take()));
        printer
    };
    let threads = if parallel { reading.threads.max(1) } else { 1 };
    let spent = cap.options.owned.clone().unwrap_or_default();
    let print = |p: &mut PacketPrinter, item: &mut _, out: &mut dyn Write| p.print(item, out);
    let mut records = PacketRecords::new(clock, Game::counting(Detect::Auto, o.keys));
    records.keep_bytes = ((o.verbose || o.hex) && first.text()) || writes;
    let recycle = |item: PacketItem| item.recycle(&spent);
    ordered::run(threads, out, printer, print, recycle, |sink| {
        let null = &mut io::sink();
        let outcome = drive_items(live, &cap, &mut mirror, null, |item, _| {
            let r = records.record(item, flows.as_deref_mut());
            Ok(r.map_or(Ok(()), |r| sink.push(r))
                .map(|()| Next::Continue)?)
        })?;
        // What the receivers still held at the end (incomplete splits,
        // messages waiting in ordering heaps) belongs to no packet: a line
        // each, unless a filter or a field export chose what to print.
        let end = mirror.finish();
        let stopped = reading.count.is_some_and(|n| records.read >= n);
        sink.push(PacketItem::End {
            anomalies: end.anomalies,
            stopped,
        })?;
        if let Some(f) = flows {
            f.extend(end.closed);
        }
        Ok(outcome)
    })
}

/// `messages`' options beside what it reads and what it shows.
pub struct MessageOptions {
    /// When lines are colored (`--color`).
    pub color: ColorChoice,
    /// The time column's format (`-t`).
    pub time: TimeFormat,
    /// Which messages are printed (`-q`, `--flow`, `--dir`, ...).
    pub only: MessageChoice,
    /// Bytes of each message's data in a record, at most.
    pub data_limit: Option<usize>,
}

/// `messages`: what each application received, in delivery order, printed
/// on `reading.threads` threads.
pub fn messages(
    reading: &Reading,
    shown: Compile<'_>,
    o: &MessageOptions,
    out: &mut impl Write,
) -> anyhow::Result<ReadOutcome> {
    let first = shown();
    let pal = Palette::choose(o.color, first.json || first.export.is_some());
    let mut mirror = Mirror::new(reading.mirror_config(), false);
    if !o.only.quiet {
        first.write_header(out)?;
    }
    let files = reading.file_names();
    let printer = || {
        let mut printer = MessagePrinter::new(shown(), pal, o.time, files.clone());
        printer.data_limit = o.data_limit;
        printer
    };
    let mut clock = Clock::new(o.time);
    let threads = if clock.parallel() {
        reading.threads.max(1)
    } else {
        1
    };
    let print = |p: &mut MessagePrinter, m: &mut _, out: &mut dyn Write| p.print(m, &o.only, out);
    // Bedrock flows' 0xFE messages are named by the game packets inside.
    let mut game = Game::counting(Detect::Auto, Keys::default());
    ordered::run(threads, out, printer, print, drop, |sink| {
        let null = &mut io::sink();
        drive_messages(
            reading,
            &mut mirror,
            &mut game,
            false,
            null,
            |d, since, file, _| {
                let (time, game) = (clock.tick(d.message.ts), d.game.as_deref().map(event_names));
                let bytes = d.message.data.len();
                let mut m = MessageItem::new(d.message, game, since, file, time);
                m.channel = d.channel;
                Ok(sink.push_weighing(m, bytes)?)
            },
        )
    })
}

/// `flows`' options beside what it reads and what it shows.
#[derive(Default)]
pub struct FlowOptions {
    /// No rows, no table (`-q`).
    pub quiet: bool,
    /// Every column of the table.
    pub wide: bool,
    /// The terminal's width, for the table.
    pub width: Option<u16>,
    /// Key material for the flows' game sessions.
    pub keys: Keys,
}

/// `flows`: a row per flow, or a `flow` record per flow as it ends (evicted
/// while reading, or at the end of the capture).
pub fn flows(
    reading: &Reading,
    shown: Shown,
    o: FlowOptions,
    out: &mut impl Write,
) -> anyhow::Result<ReadOutcome> {
    // The 0xFE messages, for the game layer of Bedrock flows.
    let mut cfg = reading.mirror_config();
    cfg.receive.keep_only = Some(crate::bedrock::GAME_MESSAGE);
    let mut mirror = Mirror::new(cfg, true);
    let quiet = o.quiet;
    if let Some(x) = shown.export.as_ref().filter(|_| !quiet) {
        out.write_all(x.header().as_bytes())?;
    }
    let mut printer = FlowPrinter::new(shown);
    printer.file = reading.part_name().map(Into::into);
    let mut game = Game::counting(Detect::Auto, o.keys);
    let take =
        |obs: &mut Observation, game: &mut Game, printer: &mut FlowPrinter, out: &mut dyn Write| {
            obs.messages.iter().for_each(|m| drop(game.message(m)));
            for f in obs.closed.drain(..) {
                let g = game.close(f.id);
                if !quiet && reading.flow.is_none_or(|n| n == f.id) {
                    printer.flow(f, g, out)?;
                }
            }
            anyhow::Ok(())
        };
    // NetherNet's flows as they stand, written at the end (their
    // conversations last the capture).
    let mut nethernet = std::collections::BTreeMap::new();
    let outcome = drive_items(None, reading, &mut mirror, out, |item, out| {
        match item {
            Item::Packet { packet, obs, .. } => {
                game.packet(packet);
                take(obs, &mut game, &mut printer, out)?;
            }
            Item::Nethernet {
                seen, frame, ts, ..
            } => {
                drop(nethernet_delivered(&mut game, &seen, frame, ts, true));
                let c = seen.conversation;
                nethernet.insert(c.id, NethernetFlow::of(c));
                // Flows let go, idle, are written as they end.
                for &id in seen.retired {
                    if let Some(f) = nethernet.remove(&id) {
                        let g = game.close(id);
                        if !quiet && reading.flow.is_none_or(|n| n == id) {
                            printer.nethernet(f, g, out)?;
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(Next::Continue)
    })?;
    take(&mut mirror.finish(), &mut game, &mut printer, out)?;
    for (id, f) in nethernet {
        let g = game.close(id);
        if !quiet && reading.flow.is_none_or(|n| n == id) {
            printer.nethernet(f, g, out)?;
        }
    }
    // No table at all when the capture could not be read or --flow was wrong.
    let failed = outcome == ReadOutcome::Usage
        || (outcome == ReadOutcome::BadFile && printer.rows.is_empty());
    if printer.shown.text() && !quiet && !failed {
        printer.table(o.wide, o.width, out)?;
    }
    Ok(outcome)
}

/// The flows of a live capture after its packets: a `flow` record each, or
/// their table (`wide`: every column; `width`: the terminal's).
pub fn flows_at_end(
    mut flows: Vec<FlowMirror>,
    json: bool,
    (wide, width): (bool, Option<u16>),
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let choice = Choice {
        json,
        ..Choice::default()
    };
    let shown = Shown::new(&choice, RecordType::Flow).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut printer = FlowPrinter::new(shown);
    flows.sort_by_key(|f| f.id);
    for f in flows {
        printer.flow(f, None, out)?;
    }
    if !json && !printer.rows.is_empty() {
        printer.table(wide, width, out)?;
    }
    Ok(())
}

/// `handshake`: each connection attempt, as its flow ends (then the rest
/// at the end, in flow order), with its Bedrock login (`keys`); with
/// `ladder`, the attempts shown drawn as one SVG ladder diagram
/// (`--svg`), put there.
pub fn handshakes(
    reading: &Reading,
    shown: &Shown,
    (quiet, keys): (bool, Keys),
    ladder: Option<&mut String>,
    out: &mut impl Write,
) -> anyhow::Result<ReadOutcome> {
    let mut drawn: Vec<Attempt> = Vec::new();
    let mut mirror = Mirror::new(reading.mirror_config(), false);
    let mut tracker = HandshakeTracker::new();
    // Bedrock flows: the game login after the RakNet connection.
    let mut game = Game::counting(Detect::Auto, keys);
    if !quiet {
        shown.write_header(out)?;
    }
    // Attempts as their flows end (then at the end, in flow order).
    let draw = ladder.is_some();
    let mut print = |attempts: Vec<Attempt>, game: &mut Game, out: &mut dyn Write| {
        for (a, login) in attempts.iter().zip(game.logins(&attempts)) {
            if reading.flow.is_some_and(|f| f != a.flow) {
                continue;
            }
            let mut j = HandshakeJson::new(a);
            (j.game, j.file) = (login, reading.part_name());
            if draw && shown.wants(&DescribedRecord(&j)) {
                drawn.push(a.clone());
            }
            if !quiet {
                shown.record(&j, || j.lines(), out)?;
            }
        }
        anyhow::Ok(())
    };
    // NetherNet's joins, written at the end (their conversations last the
    // capture).
    let mut joins: std::collections::BTreeMap<u32, Timeline> = Default::default();
    let mut signals: std::collections::BTreeMap<u32, Signals> = Default::default();
    // LAN discovery's, by flow and connection id ("": the discovery).
    let mut lan: std::collections::BTreeMap<(u32, String), Signals> = Default::default();
    let outcome = drive_items(None, reading, &mut mirror, out, |item, out| {
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
            Item::Nethernet {
                seen,
                frame,
                ts,
                src,
                ..
            } => {
                drop(nethernet_delivered(&mut game, &seen, frame, ts, true));
                let id = seen.conversation.id;
                joins.entry(id).or_default().observe(&seen, frame, ts, src);
            }
            Item::Signaling {
                seen,
                frame,
                ts,
                src,
                ..
            } => {
                let id = seen.connection.id;
                signals
                    .entry(id)
                    .or_default()
                    .observe(&seen, frame, ts, src);
            }
            Item::Lan { packet: p, .. } => {
                // A connection's signals go with the discovery before them.
                let Some(l) = &p.lan else {
                    return Ok(Next::Continue);
                };
                let key = (p.flow, l.connection.clone().unwrap_or_default());
                let discovery = lan.get(&(p.flow, String::new())).cloned();
                let s = lan
                    .entry(key)
                    .or_insert_with(|| discovery.unwrap_or_default());
                s.observe_lan(l, p.flow, (p.frame, p.ts), (p.src, p.dst), p.dir);
            }
            Item::Secrets { kind, data } => {
                game.secrets(kind, data);
            }
            Item::File { .. } | Item::Counted(_) | Item::Owned { .. } => {}
        }
        Ok(Next::Continue)
    })?;
    print(tracker.finish(), &mut game, out)?;
    let timelines: Vec<&Timeline> = joins.values().collect();
    // A flow's discovery alone only when no connection followed it.
    let lan_signals = lan
        .iter()
        .filter(|((f, c), _)| !c.is_empty() || !lan.keys().any(|(g, d)| g == f && !d.is_empty()))
        .map(|(_, s)| s);
    let all: Vec<&Signals> = signals.values().chain(lan_signals).collect();
    let attempts = crate::nethernet::timeline::joins(&timelines, &all);
    print(attempts, &mut game, out)?;
    if let Some(svg) = ladder {
        *svg = crate::output::ladder::ladder(&drawn);
    }
    Ok(outcome)
}

/// `game`'s options beside what it reads and what it shows.
#[derive(Default)]
pub struct GameOptions {
    /// When lines are colored (`--color`).
    pub color: ColorChoice,
    /// No lines or records.
    pub quiet: bool,
    /// Each packet's fields as a tree, in wire order, with offsets.
    pub verbose: bool,
    /// A hex dump of each decompressed packet.
    pub hex: bool,
    /// Bytes of each packet's `data` in a record, at most.
    pub data_limit: Option<usize>,
    /// Key material to decrypt the game packets with.
    pub keys: Keys,
    /// Every flow's 0xFE messages are game batches (`--bedrock`).
    pub bedrock: bool,
    /// Every packet's fields decoded, not only the login's.
    pub fields: bool,
}

/// `game`: a line (or record) per game packet, in delivery order; a run
/// that found no Bedrock flow says so, with what to try.
pub fn game(
    reading: &Reading,
    shown: Compile<'_>,
    o: GameOptions,
    out: &mut impl Write,
) -> anyhow::Result<ReadOutcome> {
    let first = shown();
    let mut game = Game::new(Detect::forced(o.bedrock), o.keys);
    (game.fields, game.layout) = (o.fields, o.verbose && first.text());
    // Each packet's fields are decoded on the thread that prints it.
    game.defer_fields = true;
    let mut mirror = Mirror::new(reading.mirror_config(), false);
    let pal = Palette::choose(o.color, !first.text());
    if !o.quiet {
        first.write_header(out)?;
    }
    let files = reading.file_names();
    let printer = || {
        let mut p = GamePrinter::new(shown(), pal, files.clone());
        (p.verbose, p.hex, p.data_limit) = (o.verbose, o.hex, o.data_limit);
        p
    };
    let print = |p: &mut GamePrinter, g: &mut _, out: &mut dyn Write| p.print(g, out);
    let (only, null) = (reading.flow, &mut io::sink());
    let threads = reading.threads.max(1);
    let outcome = ordered::run(threads, out, printer, print, drop, |sink| {
        drive_messages(
            reading,
            &mut mirror,
            &mut game,
            true,
            null,
            |d, since, file, _| match d.game {
                Some(events) if !o.quiet && only.is_none_or(|f| f == d.message.flow) => {
                    let bytes = d.message.data.len() * 4;
                    let item = GameItem {
                        events,
                        message: d.message,
                        since,
                        file,
                    };
                    Ok(sink.push_weighing(item, bytes)?)
                }
                _ => Ok(()),
            },
        )
    })?;
    if let Some(line) = no_game(&game) {
        reading.notes.say(NoteKind::Hint, &line);
    }
    Ok(outcome)
}

/// `stats`' options beside what it reads.
#[derive(Debug, Clone, Default)]
pub struct StatsOptions {
    /// The length of the traffic table's intervals.
    pub interval: Duration,
    /// The records, not the tables.
    pub json: bool,
    /// Nothing printed.
    pub quiet: bool,
    /// The terminal's width, for the tables.
    pub width: Option<u16>,
}

/// `stats`: count the capture (one flow with `reading.flow`), then print
/// the tables or the records; nothing when the capture could not be read.
pub fn stats(
    reading: &Reading,
    o: &StatsOptions,
    out: &mut impl Write,
) -> anyhow::Result<ReadOutcome> {
    let mut mirror = Mirror::new(reading.mirror_config(), false);
    let mut st = Stats::new(o.interval, MAX_INTERVALS);
    let only = reading.flow;
    let outcome = drive_items(None, reading, &mut mirror, out, |item, _| {
        match item {
            Item::Packet { packet, obs, .. } => st.observe(packet, obs, only),
            Item::Counted(c) => st.capture = Some(c),
            // NetherNet: its datagrams as traffic, the messages its data
            // channels delivered by label, the game packets of its batches.
            Item::Nethernet {
                seen,
                frame,
                ts,
                src,
                payload,
                ..
            } if only.is_none_or(|f| f == seen.conversation.id) => {
                let c = seen.conversation;
                let dir = if src == c.client() {
                    crate::dissect::Dir::C2s
                } else {
                    crate::dissect::Dir::S2c
                };
                st.packet(dir, ts, "nethernet", payload.len(), 0);
                st.nethernet += 1;
                for d in nethernet_delivered(st.game_layer(), &seen, frame, ts, false) {
                    st.data_channel(&d);
                }
            }
            Item::Signaling {
                seen,
                ts,
                src,
                payload,
                ..
            } if only.is_none_or(|f| f == seen.connection.id) => {
                let dir = if src == seen.connection.client {
                    crate::dissect::Dir::C2s
                } else {
                    crate::dissect::Dir::S2c
                };
                st.packet(dir, ts, "http", payload.len(), 0);
                st.nethernet += 1;
            }
            _ => {}
        }
        Ok(Next::Continue)
    })?;
    if matches!(outcome, ReadOutcome::Usage | ReadOutcome::BadFile) {
        return Ok(outcome);
    }
    let finished = mirror.finish();
    for m in finished
        .messages
        .iter()
        .filter(|m| only.is_none_or(|f| f == m.flow))
    {
        st.message(m);
    }
    if o.quiet {
        return Ok(outcome);
    }
    if o.json {
        if let Some(warning) = write_json(&st, only, reading.part_name(), out)? {
            out.flush()?;
            reading
                .notes
                .say(NoteKind::Problem, &format!("warning: {warning}"));
        }
    } else {
        write_text(&st, only, o.width, out)?;
    }
    Ok(outcome)
}

/// `plot`'s options beside what it reads.
#[derive(Debug, Clone, Default)]
pub struct PlotOptions {
    /// Draw from this time on (since the capture's first packet).
    pub from: Option<Duration>,
    /// Draw up to this time.
    pub to: Option<Duration>,
    /// No notes on the flows left out.
    pub quiet: bool,
    /// A `plot_flow` record per flow drawn.
    pub json: bool,
}

/// What `plot` drew: the SVG, and the `plot_flow` records asked for.
#[derive(Debug)]
pub struct Drawn {
    /// How reading the capture ended.
    pub outcome: ReadOutcome,
    /// The SVG document.
    pub svg: String,
    /// The `plot_flow` records, NDJSON (empty unless asked for).
    pub records: Vec<u8>,
}

/// Why `plot` drew nothing.
#[derive(Debug)]
pub enum NotDrawn {
    /// The capture could not be read, or has no flow `reading.flow` (said).
    NotRead(ReadOutcome),
    /// Nothing falls between `from` and `to`, or in the flow: why.
    Nothing(String),
}

/// `plot`: each flow of the capture (one with `reading.flow`) drawn, the
/// flows left out said through the notes.
pub fn plot(reading: &Reading, o: &PlotOptions) -> anyhow::Result<Result<Drawn, NotDrawn>> {
    let mut cfg = reading.mirror_config();
    // The picture needs findings and RTT samples, not the messages.
    cfg.receive.keep_data = false;
    cfg.messages = false;
    let mut mirror = Mirror::new(cfg, false);
    let mut col = Collector::new(reading.flow, o.from, o.to);
    let outcome = drive_items(None, reading, &mut mirror, &mut io::sink(), |item, _| {
        match item {
            Item::Packet {
                packet, obs, since, ..
            } => col.observe(packet, obs, since),
            Item::Nethernet {
                seen,
                frame,
                ts,
                src,
                dst,
                payload,
                since,
                ..
            } => {
                let p = crate::records::nethernet::NethernetPacket::new(
                    &seen,
                    (frame, ts),
                    (src, dst),
                    payload.len(),
                );
                col.nethernet(&p, since);
            }
            _ => {}
        }
        Ok(Next::Continue)
    })?;
    if matches!(outcome, ReadOutcome::Usage | ReadOutcome::BadFile) {
        return Ok(Err(NotDrawn::NotRead(outcome)));
    }
    if let Some(why) = col.nothing_drawn() {
        return Ok(Err(NotDrawn::Nothing(why)));
    }
    let (drawn, left) = col.choose();
    if !o.quiet {
        for note in col.left_out(drawn.len(), &left) {
            reading.notes.say(NoteKind::Hint, &format!("plot: {note}"));
        }
    }
    let svg = crate::output::svg::render(&drawn)
        .map_err(|e| anyhow::anyhow!("plot: drawing failed: {e}"))?;
    let mut records = Vec::new();
    for f in drawn.iter().filter(|_| o.json) {
        serde_json::to_writer(&mut records, &PlotFlowJson::new(f))?;
        records.push(b'\n');
    }
    Ok(Ok(Drawn {
        outcome,
        svg,
        records,
    }))
}
