//! What `read` and `messages` hand their printers: owned records, so that
//! the printing can run on the formatting workers of
//! [`crate::pipeline::ordered`] while the capture is read, dissected and
//! mirrored in order on one thread. A record carries what its line depends
//! on besides itself: the time column as the records before it left it
//! (`Clock`), and what the game layer made of it.

use crate::nethernet::association::DataChannel;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use super::print::{GamePrinter, MessagePrinter, PacketPrinter, MAX_TABLE_ROWS};
use crate::bedrock::{Game, GameEvent};
use crate::dissect::{Anomaly, Dir, IcmpNote, OwnedPacket, SpentPackets};
use crate::mirror::{FlowMirror, Message};
use crate::output::text::{TimeColumn, TimeFormat};
use crate::pipeline::Item;
use crate::records::nethernet::NethernetPacket;

/// The time column followed on the producing thread: every record read,
/// shown or not, moves it. Not when the column depends on which lines were
/// shown (`-t dd`): only the printer knows that, so such a run stays on
/// one thread ([`Clock::parallel`]) and the printer keeps its own column.
#[derive(Debug, Clone)]
pub(crate) struct Clock(TimeColumn);

impl Clock {
    pub(crate) fn new(format: TimeFormat) -> Clock {
        Clock(TimeColumn::new(format))
    }

    /// Whether records can be printed on other threads.
    pub(crate) fn parallel(&self) -> bool {
        !self.0.follows_shown()
    }

    /// A record read at `ts`: the column as it stood before it.
    pub(crate) fn tick(&mut self, ts: Duration) -> Option<TimeColumn> {
        let before = self.parallel().then(|| self.0.clone());
        self.0.seen(ts);
        before
    }
}

/// One thing `read` prints (or not, as the filter decides).
pub(crate) enum PacketItem {
    /// The next capture file starts.
    File(PathBuf),
    Icmp {
        note: IcmpNote,
        file: usize,
        time: Option<TimeColumn>,
    },
    Packet {
        packet: OwnedPacket,
        since: Duration,
        file: usize,
        /// The game packets inside the messages it delivered (a Bedrock flow).
        game: Option<Vec<GameEvent>>,
        time: Option<TimeColumn>,
    },
    /// A NetherNet datagram.
    Nethernet {
        packet: Box<crate::records::nethernet::NethernetPacket>,
        since: Duration,
        file: usize,
        time: Option<TimeColumn>,
    },
    /// The capture was read: what the receivers still held, and whether
    /// `-c` stopped the run (then that is not shown).
    End {
        anomalies: Vec<Anomaly>,
        stopped: bool,
    },
}

/// What `read` keeps while it turns the pipeline's items into records:
/// the clock, the game layer (which names the game packets of Bedrock
/// flows), and the packets read.
pub(crate) struct PacketRecords {
    pub(crate) clock: Clock,
    pub(crate) game: Game,
    pub(crate) read: u64,
    /// NetherNet's payloads kept for `-V` and `-x`.
    pub(crate) keep_bytes: bool,
}

impl PacketRecords {
    pub(crate) fn new(clock: Clock, game: Game) -> PacketRecords {
        PacketRecords {
            clock,
            game,
            read: 0,
            keep_bytes: false,
        }
    }

    /// The record of `item` (with [`crate::pipeline::PipelineOptions::owned`]);
    /// none for the run's counts. The flows that ended go to `flows`, at
    /// most [`MAX_TABLE_ROWS`].
    pub(crate) fn record(
        &mut self,
        item: Item<'_, '_>,
        flows: Option<&mut Vec<FlowMirror>>,
    ) -> Option<PacketItem> {
        Some(match item {
            Item::File { path, .. } => PacketItem::File(path.to_owned()),
            Item::Icmp { note, file } => PacketItem::Icmp {
                time: self.clock.tick(note.ts),
                note,
                file,
            },
            Item::Owned {
                mut packet,
                obs,
                since,
                file,
            } => {
                packet.anomalies_mut().append(&mut obs.anomalies);
                if let Some(f) = flows {
                    let room = MAX_TABLE_ROWS.saturating_sub(f.len());
                    f.extend(obs.closed.drain(..).take(room));
                }
                self.read += 1;
                let game = self.game.delivered(packet.get(), obs);
                PacketItem::Packet {
                    time: self.clock.tick(packet.get().ts),
                    packet,
                    since,
                    file,
                    game,
                }
            }
            Item::Nethernet {
                seen,
                frame,
                ts,
                src,
                dst,
                payload,
                since,
                file,
            } => {
                let p = NethernetPacket::new(&seen, (frame, ts), (src, dst), payload.len());
                self.nethernet(p, payload, since, file)
            }
            Item::Signaling {
                seen,
                frame,
                ts,
                src,
                dst,
                payload,
                segment,
                since,
                file,
            } => {
                let mut p =
                    NethernetPacket::signaling(&seen, (frame, ts), (src, dst), payload.len());
                p.tcp = Some(segment);
                self.nethernet(p, payload, since, file)
            }
            Item::Lan {
                packet,
                payload,
                since,
                file,
            } => self.nethernet(*packet, payload, since, file),
            Item::Packet { .. } | Item::Counted(_) => return None,
            Item::Secrets { kind, data } => {
                self.game.secrets(kind, data);
                return None;
            }
        })
    }
}

impl PacketRecords {
    /// A NetherNet datagram's or signaling segment's item: its payload kept
    /// for `-V`, `-x` and `-w`, counted for `-c`.
    fn nethernet(
        &mut self,
        mut p: NethernetPacket,
        payload: &[u8],
        since: Duration,
        file: usize,
    ) -> PacketItem {
        p.bytes = self.keep_bytes.then(|| payload.to_vec());
        self.read += 1;
        PacketItem::Nethernet {
            time: self.clock.tick(p.ts),
            packet: Box::new(p),
            since,
            file,
        }
    }
}

impl PacketItem {
    /// Printed: its packet goes back to the pipeline through `spent`.
    pub(crate) fn recycle(self, spent: &SpentPackets) {
        if let PacketItem::Packet { packet, .. } = self {
            spent.give(packet);
        }
    }
}

impl PacketPrinter {
    /// Print `item` as [`PacketPrinter::read`] and its siblings do.
    pub(crate) fn print(&mut self, item: &mut PacketItem, out: &mut dyn Write) -> io::Result<()> {
        match item {
            PacketItem::File(path) => self.file(path, out),
            PacketItem::Icmp { note, file, time } => {
                if let Some(t) = time.take() {
                    self.set_time(t);
                }
                self.icmp(note, *file, out)
            }
            PacketItem::Packet {
                packet,
                since,
                file,
                game,
                time,
            } => {
                if let Some(t) = time.take() {
                    self.set_time(t);
                }
                self.game = game.take();
                self.read(packet.get(), *since, *file, out)
            }
            PacketItem::Nethernet {
                packet,
                since,
                file,
                time,
            } => {
                if let Some(t) = time.take() {
                    self.set_time(t);
                }
                self.nethernet(packet, *since, *file, out)
            }
            PacketItem::End { anomalies, stopped } => {
                if let Some(w) = self.writer.as_mut() {
                    w.flush()?;
                }
                if self.plain() && !*stopped {
                    self.end(anomalies, out)?;
                }
                Ok(())
            }
        }
    }
}

/// One message delivered, for `messages`.
pub(crate) struct MessageItem {
    pub(crate) message: Message,
    /// The game packets inside it, by name (a Bedrock flow's 0xFE message).
    pub(crate) game: Option<Vec<String>>,
    pub(crate) since: Duration,
    pub(crate) file: usize,
    pub(crate) time: Option<TimeColumn>,
    /// The data channel of a NetherNet message.
    pub(crate) channel: Option<DataChannel>,
}

impl MessageItem {
    pub(crate) fn new(
        message: Message,
        game: Option<Vec<String>>,
        since: Duration,
        file: usize,
        time: Option<TimeColumn>,
    ) -> MessageItem {
        MessageItem {
            message,
            game,
            since,
            file,
            time,
            channel: None,
        }
    }
}

/// `messages`' own choice of messages: `--flow`, `--dir`, `--channel`,
/// `--id`; none with `-q`.
#[derive(Debug, Clone, Default)]
pub struct MessageChoice {
    /// No messages (`-q`).
    pub quiet: bool,
    /// Only this flow's (`--flow`).
    pub flow: Option<u32>,
    /// Only this direction's (`--dir`).
    pub dir: Option<Dir>,
    /// Only this ordering channel's (`--channel`).
    pub channel: Option<u8>,
    /// Only those whose first byte, the message id, is this (`--id`).
    pub id: Option<u8>,
}

impl MessageChoice {
    pub(crate) fn wants(&self, m: &Message) -> bool {
        !self.quiet
            && self.flow.is_none_or(|f| f == m.flow)
            && self.dir.is_none_or(|d| d == m.dir)
            && self.channel.is_none_or(|c| m.channel == Some(c))
            && self.id.is_none_or(|i| m.data.first() == Some(&i))
    }
}

impl MessagePrinter {
    /// Print `m` when it passes the filter and `choice`, as
    /// [`MessagePrinter::wants`] and [`MessagePrinter::message`] do.
    pub(crate) fn print(
        &mut self,
        m: &mut MessageItem,
        choice: &MessageChoice,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        if let Some(t) = m.time.take() {
            self.set_time(t);
        }
        self.game = m.game.take();
        self.channel = m.channel.take();
        if self.wants(&m.message, m.since, m.file) && choice.wants(&m.message) {
            self.message(&m.message, m.since, m.file, out)?;
        }
        Ok(())
    }
}

/// One 0xFE message's game packets, for `game`.
pub(crate) struct GameItem {
    pub(crate) events: Vec<GameEvent>,
    pub(crate) message: Message,
    pub(crate) since: Duration,
    pub(crate) file: usize,
}

impl GamePrinter {
    /// Print `g` as [`GamePrinter::events`] does.
    pub(crate) fn print(&mut self, g: &mut GameItem, out: &mut dyn Write) -> io::Result<()> {
        use crate::bedrock::GameEvent;
        // The fields left for this thread to decode: written as JSON
        // straight from the decoder when the records are all that reads
        // them, else decoded into values.
        let raw = self.raw_fields();
        let (mut json, mut at) = std::mem::take(&mut self.fields_json);
        json.clear();
        at.clear();
        let mut decoded = false;
        for e in &mut g.events {
            at.push(None);
            if let GameEvent::Packet(p) = e {
                if raw {
                    if let Some(r) = p.finish_json(&mut json) {
                        *at.last_mut().expect("pushed") = r;
                    }
                } else {
                    decoded |= p.finish();
                }
            }
        }
        let fields = |i: usize| at[i].clone().map(|r| &json[r]);
        let r = self.events(&g.events, &g.message, g.since, g.file, fields, out);
        self.fields_json = (json, at);
        // And freed here, by the thread that made them (the item goes back
        // to the reading thread, where freeing another thread's memory
        // costs more than making it did).
        if decoded {
            for e in &mut g.events {
                if let GameEvent::Packet(p) = e {
                    (p.fields, p.layout) = (None, None);
                }
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_gives_the_column_before_each_record() {
        let mut dd = Clock::new(TimeFormat::DeltaDisplayed);
        assert!(!dd.parallel() && dd.tick(Duration::ZERO).is_none());
        let mut clock = Clock::new(TimeFormat::Delta);
        let mut column = TimeColumn::new(TimeFormat::Delta);
        let (a, b) = (Duration::from_millis(1500), Duration::from_millis(1750));
        column.seen(a);
        clock.tick(a);
        let mut before_b = clock.tick(b).unwrap();
        // Printing b on another thread from the column before it gives
        // what the one column, having seen a then b, gives.
        column.seen(b);
        before_b.seen(b);
        let (mut x, mut y) = (Vec::new(), Vec::new());
        column.push(&mut x, b, a);
        before_b.push(&mut y, b, a);
        assert_eq!(String::from_utf8(x).unwrap().trim(), "0.250000");
        assert_eq!(String::from_utf8(y).unwrap().trim(), "0.250000");
    }
}
