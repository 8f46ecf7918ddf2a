//! Printing the records a user picked: the filter (`-Y`), then a field
//! export row (`-T fields`), an NDJSON record (`--json`; or the record
//! itself, handed to a sink: `export`'s tables, `Choice::sink`) or a
//! line, for packets (`PacketPrinter`) and delivered messages
//! (`MessagePrinter`).
//! The command line only says which; the formatting is `output`'s.

use std::fmt;
use std::io::{self, Write};
use std::time::Duration;

use super::fields::{DescribedRecord, Record, Since};
use super::{DisplayFilter, FieldExport, PacketRecord, RecordType};
use crate::bedrock::GameSummary;
use crate::dissect::{Anomaly, IcmpNote, Packet};
use crate::mirror::{FlowMirror, Message};
use crate::output::peer::plural;
use crate::output::table;
use crate::output::text::{self, LineFormatter, Palette, TimeColumn, TimeFormat};
use crate::records::flow::FlowRecord;
use crate::records::icmp::{EndRecord, IcmpRecord};
use crate::records::message::MessageRecord;
use crate::records::nethernet::NethernetFlow;
use crate::records::walk::SharedSink;
use crate::records::Keyed;

/// The output format asked for (`-T`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Text (`-T text`).
    Text,
    /// NDJSON records (`-T json`, `--json`).
    Json,
    /// The `-e` fields, one line per record (`-T fields`).
    Fields,
}

/// `-T`'s values, named without a help of their own (the option's
/// help says what each is, on one line).
impl clap::ValueEnum for Format {
    fn value_variants<'a>() -> &'a [Self] {
        &[Format::Text, Format::Json, Format::Fields]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Fields => "fields",
        }))
    }
}

/// What the user asked to print, checked: `-Y`, `-T`, `-e`, `-E` and
/// `--json` together.
#[derive(Debug, Clone, Default)]
pub struct Choice<'a> {
    /// The display filter (`-Y`).
    pub filter: Option<&'a str>,
    /// The output format (`-T`).
    pub format: Option<Format>,
    /// The fields to print (`-e`).
    pub fields: &'a [String],
    /// The field export options (`-E`).
    pub export_options: &'a [String],
    /// NDJSON records (`--json`).
    pub json: bool,
    /// Records to hand to this sink, not printed (`export`): as `--json`.
    pub sink: Option<SharedSink>,
}

/// `proxy`'s live view: its game packets filtered and exported as
/// `game`'s.
impl crate::peer::proxy::View for Shown {
    fn look(&self, r: &crate::records::game::GameRecord<'_>) -> Option<Option<String>> {
        if !self.wants(r) {
            return None;
        }
        Some(self.export.as_ref().map(|x| {
            let mut row = String::new();
            x.push_row(r, &mut row);
            row
        }))
    }

    fn header(&self) -> String {
        self.export.as_ref().map(|x| x.header()).unwrap_or_default()
    }
}

/// Why a [`Choice`] cannot be printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShowError {
    /// Options that contradict each other (a usage error).
    Conflict(String),
    /// The filter does not parse.
    Filter(String),
    /// A field export the record type cannot give.
    Export(String),
}

impl fmt::Display for ShowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShowError::Conflict(e) | ShowError::Export(e) => f.write_str(e),
            ShowError::Filter(e) => write!(f, "bad filter: {e}"),
        }
    }
}

/// A [`Choice`] compiled for one record type.
#[derive(Debug)]
pub struct Shown {
    pub(crate) filter: Option<DisplayFilter>,
    pub(crate) export: Option<FieldExport>,
    pub(crate) json: bool,
    /// Where the records go instead of their NDJSON lines ([`Choice::sink`]).
    pub(crate) sink: Option<SharedSink>,
}

impl Shown {
    /// Compile the filter and the field export of `c` for `record`s.
    pub fn new(c: &Choice<'_>, record: RecordType) -> Result<Shown, ShowError> {
        let fields =
            c.format == Some(Format::Fields) || (c.format.is_none() && !c.fields.is_empty());
        if c.json && (fields || c.format == Some(Format::Text)) {
            let other = if fields { "-T fields (-e)" } else { "-T text" };
            return Err(ShowError::Conflict(format!(
                "--json and {other} cannot be used together"
            )));
        }
        if (!c.fields.is_empty() || !c.export_options.is_empty()) && !fields {
            return Err(ShowError::Conflict("-e and -E need -T fields".into()));
        }
        let filter = c
            .filter
            .map(|t| DisplayFilter::parse(t, record))
            .transpose()
            .map_err(|e| ShowError::Filter(e.to_string()))?;
        let export = fields
            .then(|| FieldExport::new(c.fields, c.export_options, record))
            .transpose()
            .map_err(ShowError::Export)?;
        Ok(Shown {
            filter,
            export,
            json: c.json || c.format == Some(Format::Json) || c.sink.is_some(),
            sink: c.sink.clone(),
        })
    }

    /// Whether it asks anything of a record: a filter, or a field export.
    pub fn reads_records(&self) -> bool {
        self.filter.is_some() || self.export.is_some()
    }

    /// Whether it prints field export rows (`-T fields`) in place of
    /// records.
    pub fn exports(&self) -> bool {
        self.export.is_some()
    }

    /// Whether `r` passes the filter.
    pub(crate) fn wants(&self, r: &dyn Record) -> bool {
        self.filter.as_ref().is_none_or(|f| f.matches(r))
    }

    /// Whether lines of text are printed (no JSON, no field export).
    pub(crate) fn text(&self) -> bool {
        !self.json && self.export.is_none()
    }

    /// A record of this type: dropped by the filter, a field export row,
    /// an NDJSON line, or the text `lines` give.
    pub(crate) fn record(
        &self,
        j: &dyn Keyed,
        lines: impl FnOnce() -> String,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        // A filter or an export reads the record itself.
        if self.filter.is_some() || self.export.is_some() {
            let r = DescribedRecord(j);
            if !self.wants(&r) {
                return Ok(());
            }
            if let Some(x) = &self.export {
                let mut row = String::new();
                x.push_row(&r, &mut row);
                return out.write_all(row.as_bytes());
            }
        }
        if self.json {
            return self.keyed(j, out);
        }
        writeln!(out, "{}", lines())
    }

    /// `r` as an NDJSON line, or to the sink.
    pub(crate) fn keyed(&self, r: &dyn Keyed, out: &mut dyn Write) -> io::Result<()> {
        match &self.sink {
            Some(s) => s.record(r),
            None => keyed_line(out, r),
        }
    }

    /// The field export's header line, if there is one to print.
    pub(crate) fn write_header(&self, out: &mut dyn Write) -> io::Result<()> {
        match &self.export {
            Some(x) => out.write_all(x.header().as_bytes()),
            None => Ok(()),
        }
    }
}

/// A described record as one NDJSON line.
fn keyed_line(out: &mut dyn Write, r: &dyn Keyed) -> io::Result<()> {
    crate::output::write_line_once(out, |line| {
        crate::records::write_line(r, line);
        Ok(())
    })
}

/// `value` as one NDJSON line.
fn json_line(out: &mut dyn Write, value: &impl serde::Serialize) -> io::Result<()> {
    crate::output::write_line_once(out, |line| {
        serde_json::to_writer(&mut *line, value)?;
        line.push(b'\n');
        Ok(())
    })
}

/// Packet lines (with `-V` trees and `-x` dumps), rows or records.
pub(crate) struct PacketPrinter {
    pub(crate) shown: Shown,
    /// File names for the records' `file` key and the `==> FILE <==`
    /// lines: empty for a single capture.
    pub(crate) files: Vec<String>,
    /// `-V`: the field tree after each line.
    pub(crate) verbose: bool,
    /// `-x`: the hex dump after each line.
    pub(crate) hex: bool,
    /// `-q`: nothing printed (packets still counted).
    pub(crate) quiet: bool,
    /// `--flow N`: only that flow's packets.
    pub(crate) only: Option<u32>,
    /// `-w`: the packets shown, also written here.
    pub(crate) writer: Option<crate::capture::write::Recorder>,
    /// In a Bedrock flow, the game packets inside the messages the next
    /// packet delivered (set before [`PacketPrinter::read`]).
    pub(crate) game: Option<Vec<crate::bedrock::GameEvent>>,
    pal: Palette,
    lines: LineFormatter,
    buf: Vec<u8>,
    row: String,
}

impl PacketPrinter {
    pub(crate) fn new(shown: Shown, pal: Palette, time: TimeFormat, files: Vec<String>) -> Self {
        PacketPrinter {
            shown,
            files,
            verbose: false,
            hex: false,
            quiet: false,
            only: None,
            writer: None,
            game: None,
            pal,
            lines: LineFormatter::new(pal, time),
            buf: Vec::with_capacity(512),
            row: String::new(),
        }
    }

    /// Each ICMP error and each packet read, shown or not, for the time
    /// column's deltas.
    pub(crate) fn seen(&mut self, ts: Duration) {
        self.lines.seen(ts);
    }

    /// The time column as it stood before the next record (see
    /// [`crate::display::records`]).
    pub(crate) fn set_time(&mut self, time: TimeColumn) {
        self.lines.set_time(time);
    }

    /// Whether packet `p` passes the filter (`since`: the capture's first
    /// datagram).
    pub(crate) fn wants(&self, p: &Packet<'_>, since: Duration, file: usize) -> bool {
        let file = self.files.get(file).map(String::as_str);
        self.shown.wants(&Since {
            record: &PacketRecord { packet: p, file },
            start: since,
        })
    }

    /// Whether ICMP errors and the end-of-capture anomalies are shown:
    /// not when a filter, a field export or `--flow` chose what to print.
    pub(crate) fn plain(&self) -> bool {
        !self.quiet
            && self.shown.export.is_none()
            && self.shown.filter.is_none()
            && self.only.is_none()
    }

    /// Packet `p` read: printed (and written with `-w`) when chosen, as
    /// [`PacketPrinter::packet`]; counted either way.
    pub(crate) fn read(
        &mut self,
        p: &Packet<'_>,
        since: Duration,
        file: usize,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        self.seen(p.ts);
        // -q prints nothing, and still writes what passes -Y with -w.
        let idle = self.quiet && self.writer.is_none();
        if idle || self.only.is_some_and(|f| f != p.flow) || !self.wants(p, since, file) {
            return Ok(());
        }
        if let Some(w) = self.writer.as_mut() {
            w.record_at(p.ts, p.src, p.dst, p.payload)?;
        }
        if self.quiet {
            return Ok(());
        }
        self.packet(p, since, file, out)
    }

    /// A NetherNet datagram (from capture file `file`): its line or
    /// record, when it passes the filter and `--flow`.
    pub(crate) fn nethernet(
        &mut self,
        p: &crate::records::nethernet::NethernetPacket,
        since: Duration,
        file: usize,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        self.seen(p.ts);
        let file = self.files.get(file).map(String::as_str);
        let record = crate::records::nethernet::NethernetRecord { packet: p, file };
        let with_start = Since {
            record: &record,
            start: since,
        };
        // -w: the key that opens the records after it, whatever is chosen.
        if let (Some(w), Some(line)) = (self.writer.as_mut(), &p.secret) {
            w.secrets(
                crate::capture::Secrets::TLS_KEY_LOG,
                format!("{line}\n").as_bytes(),
            )?;
        }
        let idle = self.quiet && self.writer.is_none();
        if idle || self.only.is_some_and(|f| f != p.flow) || !self.shown.wants(&with_start) {
            return Ok(());
        }
        // -w: the datagram (or segment) rebuilt from its payload.
        if let (Some(w), Some(b)) = (self.writer.as_mut(), p.bytes.as_deref()) {
            match p.tcp {
                Some(seg) => w.record_tcp_at(p.ts, p.src, p.dst, seg, b)?,
                None => w.record_at(p.ts, p.src, p.dst, b)?,
            }
        }
        if self.quiet {
            return Ok(());
        }
        if let Some(x) = &self.shown.export {
            self.row.clear();
            x.push_row(&with_start, &mut self.row);
            return out.write_all(self.row.as_bytes());
        }
        if let Some(s) = self.shown.sink.as_ref() {
            return s.record(&record);
        }
        if self.shown.json {
            return self.shown.keyed(&record, out);
        }
        writeln!(out, "{}", self.lines.nethernet_line(p, since))?;
        if let Some(b) = p.bytes.as_deref() {
            if self.verbose {
                out.write_all(crate::output::nethernet::tree(p, b).as_bytes())?;
            }
            if self.hex {
                out.write_all(text::hex_dump(b).as_bytes())?;
            }
            if self.verbose || self.hex {
                writeln!(out)?;
            }
        }
        Ok(())
    }

    /// The line before the records of capture file `path` (text only, and
    /// only when there are several files).
    pub(crate) fn file(&mut self, path: &std::path::Path, out: &mut dyn Write) -> io::Result<()> {
        if self.quiet || self.files.is_empty() || !self.shown.text() {
            return Ok(());
        }
        writeln!(out, "==> {} <==", path.display())
    }

    /// An ICMP error about a flow's datagram, as a line or a record (when
    /// [`PacketPrinter::plain`]).
    pub(crate) fn icmp(
        &mut self,
        n: &IcmpNote,
        file: usize,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        self.seen(n.ts);
        if !self.plain() {
            return Ok(());
        }
        if self.shown.json {
            let file = self.files.get(file).map(String::as_str);
            self.shown.keyed(&IcmpRecord { note: n, file }, out)
        } else {
            writeln!(out, "{}", self.lines.icmp_line(n))
        }
    }

    /// Packet `p` from capture file `file`, as it was chosen to be shown.
    pub(crate) fn packet(
        &mut self,
        p: &Packet<'_>,
        since: Duration,
        file: usize,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        let file = self.files.get(file).map(String::as_str);
        let record = PacketRecord { packet: p, file };
        if let Some(x) = &self.shown.export {
            self.row.clear();
            let record = Since {
                record: &record,
                start: since,
            };
            x.push_row(&record, &mut self.row);
            return out.write_all(self.row.as_bytes());
        }
        if let Some(s) = self.shown.sink.as_ref() {
            return s.record(&record);
        }
        if self.shown.json {
            self.buf.clear();
            crate::records::write_line(&record, &mut self.buf);
            return out.write_all(&self.buf);
        }
        self.buf.clear();
        self.lines.push_line(&mut self.buf, p, since);
        let game = self.game.take();
        if let Some(events) = &game {
            let names = crate::bedrock::event_names(events);
            crate::output::game::name_packet(&mut self.buf, &names);
        }
        self.buf.push(b'\n');
        out.write_all(&self.buf)?;
        if let Some(t) = &p.trace {
            out.write_all(text::tree(p, t).as_bytes())?;
            if let Some(events) = game.filter(|e| !e.is_empty()) {
                out.write_all(crate::output::game::delivered_tree(&events).as_bytes())?;
            }
        }
        if self.hex {
            out.write_all(text::hex_dump(p.payload).as_bytes())?;
        }
        if self.verbose || self.hex {
            writeln!(out)?;
        }
        Ok(())
    }

    /// What the receivers still held at the end of the capture: an
    /// `end_of_capture` record, or a line per anomaly.
    pub(crate) fn end(&self, anomalies: &[Anomaly], out: &mut dyn Write) -> io::Result<()> {
        if anomalies.is_empty() {
            return Ok(());
        }
        if self.shown.json {
            return self.shown.keyed(&EndRecord { anomalies }, out);
        }
        for a in anomalies {
            let line = format!("end of capture: [{}: {}]", a.kind, a.detail);
            writeln!(out, "{}", self.pal.paint_anomaly(&line))?;
        }
        Ok(())
    }
}

/// Message lines, rows or records, in delivery order.
pub(crate) struct MessagePrinter {
    pub(crate) shown: Shown,
    /// File names for the records' `file` key: empty for one capture.
    pub(crate) files: Vec<String>,
    /// Bytes of each message's data in records and rows (`--data-limit`;
    /// all when `None`).
    pub(crate) data_limit: Option<usize>,
    /// What the game layer found in the next message (its packet names),
    /// for its line and record.
    pub(crate) game: Option<Vec<String>>,
    pal: Palette,
    time: TimeColumn,
    row: String,
    /// A record's line, built before it is written.
    line: Vec<u8>,
    /// The data channel of the next message, a NetherNet one.
    pub(crate) channel: Option<crate::nethernet::association::DataChannel>,
}

impl MessagePrinter {
    pub(crate) fn new(shown: Shown, pal: Palette, time: TimeFormat, files: Vec<String>) -> Self {
        MessagePrinter {
            shown,
            files,
            data_limit: None,
            game: None,
            pal,
            time: TimeColumn::new(time),
            row: String::new(),
            line: Vec::new(),
            channel: None,
        }
    }

    /// The time column as it stood before the next message (see
    /// [`crate::display::records`]).
    pub(crate) fn set_time(&mut self, time: TimeColumn) {
        self.time = time;
    }

    /// Message `m` was delivered: whether it passes the filter (`since`:
    /// the capture's first datagram); set [`MessagePrinter::game`] first.
    pub(crate) fn wants(&mut self, m: &Message, since: Duration, file: usize) -> bool {
        self.time.seen(m.ts);
        let file = self.files.get(file).map(String::as_str);
        let record = MessageRecord {
            message: m,
            data_limit: self.data_limit,
            game: self.game.as_deref(),
            file,
            data_channel: self.channel.as_ref(),
        };
        self.shown.wants(&Since {
            record: &record,
            start: since,
        })
    }

    /// Message `m` (from capture file `file`), as chosen to be shown.
    pub(crate) fn message(
        &mut self,
        m: &Message,
        since: Duration,
        file: usize,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        let file = self.files.get(file).map(String::as_str);
        let message = MessageRecord {
            message: m,
            data_limit: self.data_limit,
            game: self.game.as_deref(),
            file,
            data_channel: self.channel.as_ref(),
        };
        if let Some(x) = &self.shown.export {
            self.row.clear();
            x.push_row(
                &Since {
                    record: &message,
                    start: since,
                },
                &mut self.row,
            );
            return out.write_all(self.row.as_bytes());
        }
        if let Some(s) = self.shown.sink.as_ref() {
            let r = s.record(&message);
            self.game = None;
            return r;
        }
        if self.shown.json {
            self.line.clear();
            crate::records::write_line(&message, &mut self.line);
            self.game = None;
            return out.write_all(&self.line);
        }
        let via = self.channel.as_ref();
        let mut line = text::message_line(m, via, since, &mut self.time, self.pal);
        match self.game.take() {
            // A NetherNet message that completed a batch.
            Some(names) if via.is_some() && !names.is_empty() => {
                line.push_str(&format!(" ⇒ game[{}]", names.join(",")));
            }
            Some(names) if via.is_none() => {
                line = crate::output::game::name_message(&line, &names);
            }
            _ => {}
        }
        writeln!(out, "{line}")
    }
}

/// Game packet lines (with `-V` trees and `-x` dumps), records or field
/// export rows, as the filter chooses.
pub(crate) struct GamePrinter {
    pub(crate) shown: Shown,
    pub(crate) verbose: bool,
    pub(crate) hex: bool,
    /// Bytes of each packet's `data` in records (`--data-limit`).
    pub(crate) data_limit: Option<usize>,
    /// File names for the records' `file` key: empty for one capture.
    pub(crate) files: Vec<String>,
    pal: Palette,
    /// The fields of a message's packets written as JSON, and where each
    /// packet's are (`GamePrinter::print`): kept to be written again.
    pub(crate) fields_json: (Vec<u8>, Vec<Option<std::ops::Range<usize>>>),
}

impl GamePrinter {
    pub(crate) fn new(shown: Shown, pal: Palette, files: Vec<String>) -> Self {
        GamePrinter {
            shown,
            verbose: false,
            hex: false,
            data_limit: None,
            files,
            pal,
            fields_json: Default::default(),
        }
    }

    /// Whether the packets' fields may be written as JSON straight from
    /// the decoder: NDJSON lines are printed and nothing else reads the
    /// fields (no filter, no field export, no sink, no `-V` tree).
    pub(crate) fn raw_fields(&self) -> bool {
        let s = &self.shown;
        s.json && s.filter.is_none() && s.export.is_none() && s.sink.is_none() && !self.verbose
    }

    /// What the game layer made of message `m` (from capture file
    /// `file`), the fields of event `i` written as JSON already when
    /// `fields(i)` has them.
    pub(crate) fn events<'j>(
        &self,
        events: &[crate::bedrock::GameEvent],
        m: &Message,
        since: Duration,
        file: usize,
        fields: impl Fn(usize) -> Option<&'j [u8]>,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        use crate::bedrock::GameEvent;
        use crate::output::game;
        for (i, e) in events.iter().enumerate() {
            let record = crate::records::game::GameRecord {
                data_limit: self.data_limit,
                file: self.files.get(file).map(String::as_str),
                fields_json: fields(i),
                ..crate::records::game::GameRecord::new(m, e)
            };
            let since_start = Since {
                record: &record,
                start: since,
            };
            if !self.shown.wants(&since_start) {
                continue;
            }
            if let Some(x) = &self.shown.export {
                let mut row = String::new();
                x.push_row(&since_start, &mut row);
                out.write_all(row.as_bytes())?;
                continue;
            }
            if self.shown.json {
                self.shown.keyed(&record, out)?;
                continue;
            }
            match e {
                GameEvent::Packet(p) => {
                    writeln!(out, "{}", game::line(p, m, since, self.pal))?;
                    if self.verbose {
                        out.write_all(game::tree(p).as_bytes())?;
                    }
                    if self.hex {
                        out.write_all(text::hex_dump(&p.data).as_bytes())?;
                    }
                    if self.verbose || self.hex {
                        writeln!(out)?;
                    }
                }
                GameEvent::Opaque(o) => {
                    writeln!(out, "{}", game::opaque_line(o, m, since, self.pal))?
                }
            }
        }
        Ok(())
    }
}

/// Rows the flow tables show at most; past them, `--json` has every flow.
pub(crate) const MAX_TABLE_ROWS: usize = 10_000;

/// Flow records or rows, as flows end; the table of those kept at the end.
pub(crate) struct FlowPrinter {
    pub(crate) shown: Shown,
    /// The flows kept for the table (at most [`MAX_TABLE_ROWS`]), with
    /// their game sessions.
    pub(crate) rows: Vec<(FlowMirror, Option<GameSummary>)>,
    /// Flows past [`MAX_TABLE_ROWS`], said under the table.
    pub(crate) omitted: usize,
    /// The file the records name (`--separate`).
    pub(crate) file: Option<String>,
    row: String,
    /// NetherNet's flows kept for their table (at most [`MAX_TABLE_ROWS`]).
    pub(crate) nethernet: Vec<(NethernetFlow, Option<GameSummary>)>,
}

impl FlowPrinter {
    pub(crate) fn new(shown: Shown) -> Self {
        FlowPrinter {
            shown,
            rows: Vec::new(),
            omitted: 0,
            file: None,
            row: String::new(),
            nethernet: Vec::new(),
        }
    }

    /// NetherNet flow `f` (with its game session): a record, or kept for
    /// the table.
    pub(crate) fn nethernet(
        &mut self,
        f: NethernetFlow,
        game: Option<GameSummary>,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        if self.shown.filter.is_some() || self.shown.export.is_some() || self.shown.json {
            let record = crate::records::nethernet::NethernetFlowRecord {
                flow: &f,
                game: game.as_ref(),
                file: self.file.as_deref(),
            };
            if !self.shown.wants(&record) {
                return Ok(());
            }
            if let Some(x) = &self.shown.export {
                self.row.clear();
                x.push_row(&record, &mut self.row);
                return out.write_all(self.row.as_bytes());
            }
            if self.shown.json {
                return self.shown.keyed(&record, out);
            }
        }
        if self.nethernet.len() < MAX_TABLE_ROWS {
            self.nethernet.push((f, game));
        } else {
            self.omitted += 1;
        }
        Ok(())
    }

    /// The table of NetherNet's flows kept, `width` columns at most.
    fn nethernet_table(&self, width: Option<u16>, out: &mut dyn Write) -> io::Result<()> {
        let header = [
            "flow", "client", "server", "state", "dtls", "channels", "c2s msgs", "s2c msgs",
            "resends", "player",
        ];
        let rows = self.nethernet.iter().map(|(f, g)| {
            let dtls = match (f.suite, f.decrypted) {
                (None, _) => "-".to_string(),
                (Some(_), true) => "decrypted".to_string(),
                (Some(_), false) => "encrypted".to_string(),
            };
            vec![
                f.id.to_string(),
                f.client.to_string(),
                f.server.to_string(),
                f.state.to_string(),
                dtls,
                f.channels.len().to_string(),
                f.dirs[0].messages.to_string(),
                f.dirs[1].messages.to_string(),
                (f.dirs[0].resends + f.dirs[1].resends).to_string(),
                g.as_ref()
                    .and_then(|g| g.player.clone())
                    .unwrap_or_else(|| "-".into()),
            ]
        });
        let t = table::counts_table(&header, rows, 5, width);
        writeln!(out, "NetherNet flows:\n{t}")
    }

    /// Flow `f` ended (with `game`, its game session when it is Bedrock):
    /// a row, a record, or kept for the table.
    pub(crate) fn flow(
        &mut self,
        f: FlowMirror,
        game: Option<GameSummary>,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        // A filter, an export or --json reads the record; the table, the flow.
        if self.shown.filter.is_some() || self.shown.export.is_some() || self.shown.json {
            let record = FlowRecord::new(&f, game.as_ref(), self.file.as_deref());
            let r = DescribedRecord(&record);
            if !self.shown.wants(&r) {
                return Ok(());
            }
            if let Some(x) = &self.shown.export {
                self.row.clear();
                x.push_row(&r, &mut self.row);
                return out.write_all(self.row.as_bytes());
            }
            if self.shown.json {
                return self.shown.keyed(&record, out);
            }
        }
        if self.rows.len() < MAX_TABLE_ROWS {
            self.rows.push((f, game));
        } else {
            self.omitted += 1;
        }
        Ok(())
    }

    /// The table of the flows kept, in id order: narrow (fits 100 columns)
    /// or `wide`, `width` columns at most.
    pub(crate) fn table(
        &mut self,
        wide: bool,
        width: Option<u16>,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        if !self.nethernet.is_empty() {
            self.nethernet_table(width, out)?;
            if self.rows.is_empty() {
                return Ok(());
            }
        }
        self.rows.sort_by_key(|(f, _)| f.id);
        let refs: Vec<_> = self.rows.iter().map(|(f, g)| (f, g.as_ref())).collect();
        let t = if wide {
            table::flows_table(&refs, width)
        } else {
            table::flows_table_narrow(&refs, width)
        };
        writeln!(out, "{t}")?;
        if self.omitted > 0 {
            let flows = plural(self.omitted, "flow", "flows");
            writeln!(
                out,
                "{} more {flows} not shown: --json lists every flow",
                self.omitted
            )?;
        }
        Ok(())
    }
}

/// `raknet-dissect fields`: every name `-Y` and `-e` know, with its type,
/// its records and its meaning: a `field` record each, or a table `width`
/// columns wide.
pub fn field_list(json: bool, width: Option<u16>, out: &mut dyn Write) -> io::Result<()> {
    #[derive(serde::Serialize)]
    struct FieldJson {
        #[serde(rename = "type")]
        kind_of_record: &'static str,
        name: &'static str,
        value: &'static str,
        records: Vec<&'static str>,
        meaning: &'static str,
    }
    let mut rows = Vec::new();
    for d in super::FIELDS.iter() {
        let records: Vec<&'static str> = RecordType::ALL
            .into_iter()
            .filter(|r| d.in_record(*r))
            .map(RecordType::as_str)
            .collect();
        if json {
            let record = FieldJson {
                kind_of_record: "field",
                name: d.name,
                value: d.ty.as_str(),
                records,
                meaning: d.meaning,
            };
            json_line(out, &record)?;
        } else {
            rows.push(vec![
                d.name.to_string(),
                d.ty.as_str().to_string(),
                records.join(", "),
                d.meaning.to_string(),
            ]);
        }
    }
    if json {
        return Ok(());
    }
    let header = ["field", "value", "records", "meaning"];
    let t = table::counts_table(&header, rows, header.len(), width);
    writeln!(out, "{t}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice<'a>(fields: &'a [String], format: Option<Format>, json: bool) -> Choice<'a> {
        Choice {
            fields,
            format,
            json,
            ..Choice::default()
        }
    }

    #[test]
    fn contradictions_are_refused_as_tshark_refuses_them() {
        let e = vec!["frame".to_string()];
        let err = |c: &Choice| Shown::new(c, RecordType::Packet).unwrap_err();
        assert!(matches!(
            err(&choice(&e, None, true)),
            ShowError::Conflict(_)
        ));
        assert!(matches!(
            err(&choice(&[], Some(Format::Text), true)),
            ShowError::Conflict(_)
        ));
        assert!(matches!(
            err(&choice(&e, Some(Format::Text), false)),
            ShowError::Conflict(_)
        ));
        let bad = Choice {
            filter: Some("id =="),
            ..Choice::default()
        };
        assert!(matches!(err(&bad), ShowError::Filter(_)));
        let unknown = vec!["no.such.field".to_string()];
        assert!(matches!(
            err(&choice(&unknown, None, false)),
            ShowError::Export(_)
        ));
        // -e alone means -T fields; -T json means --json.
        assert!(Shown::new(&choice(&e, None, false), RecordType::Packet)
            .unwrap()
            .export
            .is_some());
        let j = Shown::new(&choice(&[], Some(Format::Json), false), RecordType::Flow).unwrap();
        assert!(j.json && !j.text());
    }

    /// A sink that keeps each record's JSON.
    struct Kept(Vec<String>);

    impl crate::records::walk::RecordSink for Kept {
        fn record(&mut self, r: &dyn Keyed) -> io::Result<()> {
            let mut line = Vec::new();
            r.write_json(&mut line);
            self.0.push(String::from_utf8(line).unwrap_or_default());
            Ok(())
        }
    }

    #[test]
    fn with_a_sink_the_records_go_there_and_nothing_is_printed() {
        let kept = std::sync::Arc::new(std::sync::Mutex::new(Kept(Vec::new())));
        let c = Choice {
            sink: Some(SharedSink(kept.clone())),
            ..Choice::default()
        };
        let shown = Shown::new(&c, RecordType::Packet).unwrap();
        assert!(shown.json && !shown.text());
        let pal = Palette::choose(crate::output::ColorChoice::Never, true);
        let printer = PacketPrinter::new(shown, pal, TimeFormat::default(), Vec::new());
        let anomalies = [Anomaly {
            kind: "gap",
            detail: "x".into(),
        }];
        let mut out = Vec::new();
        printer.end(&anomalies, &mut out).unwrap();
        assert!(out.is_empty());
        let want = r#"{"type":"end_of_capture","anomalies":[{"kind":"gap","detail":"x"}]}"#;
        assert_eq!(kept.lock().unwrap().0, [want]);
    }
}
