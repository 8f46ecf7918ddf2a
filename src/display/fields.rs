//! The fields of every record, by their NDJSON key names, read straight
//! from what the record is made from without building it: what display
//! filters (`-Y`) and field export (`-T fields`) see. The described records
//! (`records`: packet, message, flow, handshake) are read through their
//! descriptions, each name resolved to key indices once (`lookup`); the
//! `game` records through [`GameRecord`].
//!
//! A field may occur several times in one record (`frames.channel`, one per
//! capsule; `anomalies.kind`, one per anomaly). [`Record::visit`] hands each
//! occurrence to a callback, which stops the walk by returning `true`.

use std::sync::LazyLock;
use std::time::Duration;

use crate::records::flow::FlowRecord;
pub(crate) use crate::records::game::GameRecord;
use crate::records::handshake::HandshakeRecord;
use crate::records::message::MessageRecord;
pub use crate::records::packet::PacketRecord;
use crate::records::{Closed, KeyDoc, KeyPath};
pub(crate) use crate::records::{Obj, Ty, Value};

/// Which record a field belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordType {
    /// `packet` records (`read`).
    Packet,
    /// `message` records (`messages`).
    Message,
    /// `flow` records (`flows`).
    Flow,
    /// `handshake` records (`handshakes`).
    Handshake,
    /// `game` and `game_opaque` records (the `game` command).
    Game,
}

impl RecordType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RecordType::Packet => "packet",
            RecordType::Message => "message",
            RecordType::Flow => "flow",
            RecordType::Handshake => "handshake",
            RecordType::Game => "game",
        }
    }

    /// Filters that hold for some records of this type in the samples,
    /// for `-Y`'s help (checked against them by `tests/command_line.rs`).
    pub(crate) fn filter_examples(self) -> &'static [&'static str] {
        match self {
            RecordType::Packet => &[
                "kind == nack",
                "id == 0x86 && len > 1000",
                "anomalies.kind == resend",
            ],
            RecordType::Message => &[
                "id == 0x86 && len > 1000",
                "dir == c2s && reliability == RELIABLE_ORDERED",
                "data contains \"86\"",
            ],
            RecordType::Flow => &[
                "c2s.lost > 0 || rtt_ms.median > 50",
                "state == disconnected_by_client",
            ],
            RecordType::Handshake => &["outcome != connected", "mtu_probes == 1492"],
            RecordType::Game => &[
                "game.name == login",
                "reason == encrypted && dir == s2c",
                "game.login.display_name == Steve",
            ],
        }
    }

    /// `-Y`'s help for the command of these records, with its examples.
    pub fn filter_help(self) -> String {
        let examples: Vec<String> = self
            .filter_examples()
            .iter()
            .map(|e| format!("`{e}`"))
            .collect();
        format!(
            "Display filter over the {} records' fields (`raknet-dissect fields`): {}",
            self.as_str(),
            examples.join(", ")
        )
    }

    fn bit(self) -> u8 {
        match self {
            RecordType::Packet => PK,
            RecordType::Message => MS,
            RecordType::Flow => FL,
            RecordType::Handshake => HS,
            RecordType::Game => GM,
        }
    }

    /// Every record type, in the order `fields` lists them.
    pub const ALL: [RecordType; 5] = [
        RecordType::Packet,
        RecordType::Message,
        RecordType::Flow,
        RecordType::Handshake,
        RecordType::Game,
    ];
}

/// What a filter or an export reads for a field name: resolved from the
/// name once, when it is compiled for a record type (`lookup`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// Seconds since the capture's first datagram, as `read`'s time column:
    /// only through `Since`, which knows when that was.
    TimeRelative,
    /// A decoded field of a game packet (`login.display_name`), by its
    /// path; or, unresolved, the name itself ([`FIELDS`]).
    Path(&'static str),
    /// A key of a described record (`records`), resolved to its key
    /// indices for that record type.
    Key(KeyPath),
}

/// One row of the field list (`raknet-dissect fields`).
#[derive(Debug, Clone, Copy)]
pub struct FieldDef {
    /// The field's name, as `-Y` and `-e` take it.
    pub name: &'static str,
    /// What a record reads: in [`lookup`]'s answer, resolved for the
    /// record type asked ([`Field::Key`]); in [`FIELDS`], the name.
    pub(crate) read: Field,
    /// The closed set its values come from ([`check_closed`]).
    pub(crate) closed: Option<Closed>,
    pub(crate) ty: Ty,
    /// The records that have it: [`PK`], [`MS`], [`FL`] or'ed.
    records: u8,
    /// Its doc line: its records' descriptions', merged.
    pub(crate) meaning: &'static str,
}

const fn def(name: &'static str, ty: Ty, records: u8, meaning: &'static str) -> FieldDef {
    FieldDef {
        name,
        read: Field::Path(name),
        closed: None,
        ty,
        records,
        meaning,
    }
}

/// In `packet` records.
const PK: u8 = 1;
/// In `message` records.
const MS: u8 = 2;
/// In `flow` records.
const FL: u8 = 4;
/// In `handshake` records.
const HS: u8 = 8;
/// In `game` and `game_opaque` records.
const GM: u8 = 16;

/// Names that stand for a key of another name, in the record types that
/// have that key and none of their own name: tshark's, and a packet's
/// frames' keys at its top level (`channel` is each frame's
/// `frames.channel`, as a message's `channel` is its own).
const ALIASES: &[(&str, &str)] = &[
    ("frame.number", "frame"),
    ("frame.time_epoch", "ts"),
    ("reliability", "frames.reliability"),
    ("reliable_index", "frames.reliable_index"),
    ("sequence_index", "frames.sequence_index"),
    ("order_index", "frames.order_index"),
    ("channel", "frames.channel"),
    ("split", "frames.split"),
    ("split.count", "frames.split.count"),
    ("split.id", "frames.split.id"),
    ("split.index", "frames.split.index"),
];

/// A name the context of a record answers ([`Since`]), not the record.
const TIME_RELATIVE: FieldDef = FieldDef {
    read: Field::TimeRelative,
    ..def(
        "frame.time_relative",
        Ty::Float,
        PK | MS,
        "tshark's name: seconds since the capture's first UDP datagram, as read's time column.",
    )
};

/// The key `path` of `record`s: what reads it (its indices; a NetherNet
/// datagram's own key, which a RakNet packet lacks, by its name) and its
/// description.
fn key_of(record: RecordType, path: &'static str) -> Option<(Field, KeyDoc)> {
    use crate::records::nethernet::NethernetRecord;
    use crate::records::{key, key_path, Described};
    fn both<D: Described>(path: &str) -> Option<(Field, KeyDoc)> {
        Some((Field::Key(key_path::<D>(path)?), key::<D>(path)?))
    }
    match record {
        RecordType::Packet => both::<PacketRecord<'static>>(path)
            .or_else(|| Some((Field::Path(path), key::<NethernetRecord<'static>>(path)?))),
        RecordType::Message => both::<MessageRecord<'static>>(path),
        RecordType::Flow => both::<FlowRecord<'static>>(path).or_else(|| {
            let k = key::<crate::records::nethernet::NethernetFlowRecord<'static>>(path)?;
            Some((Field::Path(path), k))
        }),
        RecordType::Handshake => both::<HandshakeRecord<'static>>(path),
        RecordType::Game => both::<GameRecord<'static>>(path),
    }
}

/// Every key path of `record`s, in JSON order (`packet`, `flow`: a
/// RakNet one's, then those only a NetherNet one has).
fn paths_of(record: RecordType) -> Vec<(std::borrow::Cow<'static, str>, KeyDoc)> {
    use crate::records::nethernet::{NethernetFlowRecord, NethernetRecord};
    use crate::records::paths;
    let both = |mut all: Vec<(std::borrow::Cow<'static, str>, KeyDoc)>, more: Vec<_>| {
        for (name, k) in more {
            if all.iter().all(|(n, _)| *n != name) {
                all.push((name, k));
            }
        }
        all
    };
    match record {
        RecordType::Packet => both(
            paths::<PacketRecord<'static>>(),
            paths::<NethernetRecord<'static>>(),
        ),
        RecordType::Message => paths::<MessageRecord<'static>>(),
        RecordType::Flow => both(
            paths::<FlowRecord<'static>>(),
            paths::<NethernetFlowRecord<'static>>(),
        ),
        RecordType::Handshake => paths::<HandshakeRecord<'static>>(),
        RecordType::Game => paths::<GameRecord<'static>>(),
    }
}

/// What `name` is in `record`s: the key it names, or the key an alias
/// stands for, or the context's ([`TIME_RELATIVE`]).
fn resolve(
    name: &'static str,
    record: RecordType,
) -> Option<(Field, Ty, Option<Closed>, &'static str)> {
    if let Some((read, k)) = key_of(record, name) {
        return Some((read, k.ty, k.closed, k.doc));
    }
    if name == TIME_RELATIVE.name && TIME_RELATIVE.in_record(record) {
        return Some((
            TIME_RELATIVE.read,
            TIME_RELATIVE.ty,
            None,
            TIME_RELATIVE.meaning,
        ));
    }
    let &(_, target) = ALIASES.iter().find(|(a, _)| *a == name)?;
    let (read, k) = key_of(record, target)?;
    let doc = if name.starts_with("frame.") {
        "tshark's name for"
    } else {
        "Same as"
    };
    Some((read, k.ty, k.closed, leak(format!("{doc} {target}."))))
}

/// `s`, kept for the process (the field list is made once).
fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// Every field name: each record type's keys (in [`RecordType::ALL`]'s
/// order, each in JSON order), an alias after the key it stands for, with
/// the records that have it and its doc line, theirs merged.
pub static FIELDS: LazyLock<Vec<FieldDef>> = LazyLock::new(|| {
    fn add(names: &mut Vec<&'static str>, name: &'static str) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let mut names: Vec<&'static str> = Vec::new();
    for r in RecordType::ALL {
        for (path, _) in paths_of(r) {
            let name = match path {
                std::borrow::Cow::Borrowed(n) => n,
                std::borrow::Cow::Owned(n) => match names.iter().find(|m| **m == n) {
                    Some(m) => m,
                    None => leak(n),
                },
            };
            add(&mut names, name);
            if name == "ts" {
                add(&mut names, TIME_RELATIVE.name);
            }
            for (alias, _) in ALIASES.iter().filter(|(_, t)| *t == name) {
                add(&mut names, alias);
            }
        }
    }
    names
        .into_iter()
        .filter_map(|name| {
            let of: Vec<(RecordType, Ty, Option<Closed>, &'static str)> = RecordType::ALL
                .into_iter()
                .filter_map(|r| resolve(name, r).map(|(_, ty, c, doc)| (r, ty, c, doc)))
                .collect();
            let &(_, ty, closed, _) = of.first()?;
            let records = of.iter().fold(0, |b, (r, ..)| b | r.bit());
            let docs: Vec<(RecordType, &'static str)> =
                of.iter().map(|&(r, _, _, doc)| (r, doc)).collect();
            Some(FieldDef {
                closed,
                ..def(name, ty, records, merged(&docs))
            })
        })
        .collect()
});

/// One doc line for a name of several record types: theirs, when they
/// agree; else each record type's, after its name.
fn merged(docs: &[(RecordType, &'static str)]) -> &'static str {
    let mut groups: Vec<(Vec<&str>, &str)> = Vec::new();
    for &(r, doc) in docs {
        match groups.iter_mut().find(|(_, d)| *d == doc) {
            Some((rs, _)) => rs.push(r.as_str()),
            None => groups.push((vec![r.as_str()], doc)),
        }
    }
    match groups.as_slice() {
        [(_, doc)] => doc,
        _ => leak(
            groups
                .iter()
                .map(|(rs, doc)| {
                    let label = rs.join(", ");
                    // A doc line that names its record already.
                    if doc.starts_with(&format!("{label}:")) {
                        doc.to_string()
                    } else {
                        format!("{label}: {doc}")
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
        ),
    }
}

/// The fields of each record type (in [`RecordType::ALL`]'s order), each
/// resolved for it: what it reads, its type and its closed set there.
static BY_RECORD: LazyLock<Vec<Vec<FieldDef>>> = LazyLock::new(|| {
    RecordType::ALL
        .iter()
        .map(|&r| {
            FIELDS
                .iter()
                .filter_map(|d| {
                    let (read, ty, closed, _) = resolve(d.name, r)?;
                    Some(FieldDef {
                        read,
                        ty,
                        closed,
                        ..*d
                    })
                })
                .collect()
        })
        .collect()
});

/// What a filter compiled for `record`s reads for the field `name`.
#[cfg(test)]
pub(crate) fn read_in(name: &str, record: RecordType) -> Field {
    lookup(name, record)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .read
}

/// The field called `name` in `record`s; `Err` says why there is none.
pub(crate) fn lookup(name: &str, record: RecordType) -> Result<&'static FieldDef, String> {
    if record == RecordType::Game {
        return game_lookup(name);
    }
    if let Some(d) = of_record(record).iter().find(|d| d.name == name) {
        return Ok(d);
    }
    match FIELDS.iter().find(|d| d.name == name) {
        Some(d) if d.in_record(record) => Ok(d),
        Some(_) => Err(format!(
            "field {name:?} is not in {} records",
            record.as_str()
        )),
        None => Err(unknown(name, record, std::iter::empty())),
    }
}

/// The fields of `record`s, resolved for them.
fn of_record(record: RecordType) -> &'static [FieldDef] {
    RecordType::ALL
        .iter()
        .position(|&r| r == record)
        .and_then(|i| BY_RECORD.get(i))
        .map_or(&[], Vec::as_slice)
}

/// Checks a value a filter compares field `d` with (`==`, `!=`, `in`)
/// against the closed set its values come from in the record type it was
/// looked up for (kinds, directions, anomaly kinds, message and game
/// packet names, reliabilities): a value outside it is a typo, said with
/// the nearest valid one. Fields of open sets take anything.
pub(crate) fn check_closed(d: &FieldDef, value: &str) -> Result<(), String> {
    let Some(set) = d.closed else { return Ok(()) };
    if set.accepts(value) {
        return Ok(());
    }
    let (what, names) = (set.what(), set.names());
    Err(match nearest(value, names.iter().copied()) {
        Some(n) => format!("{{field}} has no {what} {value:?} (did you mean {n}?)"),
        None if names.len() <= 20 => {
            format!(
                "{{field}} has no {what} {value:?} (it is one of {})",
                names.join(", ")
            )
        }
        None => format!("{{field}} has no {what} {value:?}"),
    })
}

/// Why there is no field `name` in `record`s, with the nearest of their
/// names and of `more` when one is close.
fn unknown<'n>(name: &str, record: RecordType, more: impl Iterator<Item = &'n str>) -> String {
    let near = nearest(
        name,
        FIELDS
            .iter()
            .filter(|d| d.in_record(record))
            .map(|d| d.name)
            .chain(more),
    );
    match near {
        Some(n) => format!("unknown field {name:?} (did you mean {n}?)"),
        None => format!("unknown field {name:?} (`raknet-dissect fields` lists them)"),
    }
}

/// A field of game records: its key (`name`, `game.name`: tshark's style),
/// or a decoded field (`game.login.display_name`).
fn game_lookup(full: &str) -> Result<&'static FieldDef, String> {
    let name = full.strip_prefix("game.").unwrap_or(full);
    if let Some(d) = of_record(RecordType::Game).iter().find(|d| d.name == name) {
        return Ok(d);
    }
    if FIELDS.iter().any(|d| d.name == name) {
        return Err(format!("field {full:?} is not in game records"));
    }
    if let Some(d) = game_field(name) {
        return Ok(d);
    }
    if name.split('.').any(str::is_empty) {
        return Err(format!("field {full:?} has an empty name between dots"));
    }
    let head = name.split('.').next().unwrap_or(name);
    if head == "fields" || crate::bedrock::names::is_packet_name(head) {
        return Err(format!(
            "field {full:?}: more than {MAX_GAME_FIELDS} distinct game field names in one run"
        ));
    }
    let packets = crate::bedrock::names::all_names();
    Err(if name.contains('.') && head != "fields" {
        match nearest(head, packets) {
            Some(n) => format!("unknown game packet {head:?} in {full:?} (did you mean {n}?)"),
            None => format!("unknown game packet {head:?} in {full:?}"),
        }
    } else {
        unknown(name, RecordType::Game, packets).replace(&format!("{name:?}"), &format!("{full:?}"))
    })
}

/// Distinct decoded game field names made at most in one process (each is
/// made once and kept for the process: a filter or export names a few).
pub(crate) const MAX_GAME_FIELDS: usize = 4096;

/// A decoded field of game records: `fields.PATH`, `PACKET` or
/// `PACKET.PATH` with PACKET a game packet name minecraft-data knows. Made
/// once per distinct name and kept (leaked) for the process, at most
/// [`MAX_GAME_FIELDS`] of them.
fn game_field(name: &str) -> Option<&'static FieldDef> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static MADE: OnceLock<Mutex<HashMap<&'static str, &'static FieldDef>>> = OnceLock::new();
    let (head, rest) = name.split_once('.').unwrap_or((name, ""));
    let known = head == "fields" && !rest.is_empty() || crate::bedrock::names::is_packet_name(head);
    if !known || (name.contains('.') && rest.split('.').any(str::is_empty)) {
        return None;
    }
    let mut made = MADE.get_or_init(Default::default).lock().ok()?;
    if let Some(d) = made.get(name) {
        return Some(d);
    }
    if made.len() >= MAX_GAME_FIELDS {
        return None;
    }
    let name: &'static str = Box::leak(name.to_string().into_boxed_str());
    let meaning = "A decoded game field.";
    let d: &'static FieldDef = Box::leak(Box::new(def(name, Ty::Any, GM, meaning)));
    made.insert(name, d);
    Some(d)
}

impl FieldDef {
    /// Whether records of type `r` have the field.
    pub fn in_record(&self, r: RecordType) -> bool {
        self.records & r.bit() != 0
    }
}

use super::suggest::nearest;

/// A record whose fields can be read by [`Field`].
pub trait Record {
    /// Call `f` with each occurrence of `field`, in record order, until it
    /// returns `true`; returns whether it did.
    fn visit(&self, field: Field, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool;

    /// The capture time of a packet or message record (`ts`), exactly.
    fn time(&self) -> Option<Duration> {
        None
    }
}

/// A packet or message record with the time its capture started (the
/// first datagram's, which `read`'s time column counts from), so that it
/// has `frame.time_relative`.
pub(crate) struct Since<'a> {
    pub(crate) record: &'a dyn Record,
    pub(crate) start: Duration,
}

impl Record for Since<'_> {
    fn visit(&self, field: Field, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
        match field {
            Field::TimeRelative => self
                .record
                .time()
                .is_some_and(|t| f(Value::Float(t.saturating_sub(self.start).as_secs_f64()))),
            _ => self.record.visit(field, f),
        }
    }

    fn time(&self) -> Option<Duration> {
        self.record.time()
    }
}

/// A packet, its fields read through its description (`records::packet`)
/// at the key indices the filter resolved.
impl Record for PacketRecord<'_> {
    fn visit(&self, field: Field, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
        match field {
            Field::Key(k) => {
                crate::records::visit_index::<PacketRecord<'static>>(self, k.indices(), f)
            }
            _ => false,
        }
    }

    fn time(&self) -> Option<Duration> {
        Some(self.packet.ts)
    }
}

/// `r`, a NetherNet record described by `N`, read for `field`, resolved
/// for the RakNet records of its type (`P`): a key both have, by the name
/// of the key `P` resolved; its own, by name.
fn by_name<P: crate::records::Described, N: crate::records::Described>(
    r: &N::Of<'_>,
    field: Field,
    f: &mut dyn FnMut(Value<'_>) -> bool,
) -> bool {
    use crate::records::{path_name, visit_path};
    match field {
        Field::Key(k) => path_name::<P>(k.indices()).is_some_and(|p| visit_path::<N>(r, &p, f)),
        Field::Path(p) => visit_path::<N>(r, p, f),
        Field::TimeRelative => false,
    }
}

/// A NetherNet flow, read as `by_name` says.
impl Record for crate::records::nethernet::NethernetFlowRecord<'_> {
    fn visit(&self, field: Field, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
        use crate::records::nethernet::NethernetFlowRecord as N;
        by_name::<FlowRecord<'static>, N<'static>>(self, field, f)
    }
}

/// A NetherNet datagram, read as `by_name` says.
impl Record for crate::records::nethernet::NethernetRecord<'_> {
    fn visit(&self, field: Field, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
        use crate::records::nethernet::NethernetRecord as N;
        by_name::<PacketRecord<'static>, N<'static>>(self, field, f)
    }

    fn time(&self) -> Option<Duration> {
        Some(self.packet.ts)
    }
}

/// A delivered message, its fields read through its description
/// (`records::message`) at the key indices the filter resolved.
impl Record for MessageRecord<'_> {
    fn visit(&self, field: Field, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
        match field {
            Field::Key(p) => {
                crate::records::visit_index::<MessageRecord<'static>>(self, p.indices(), f)
            }
            _ => false,
        }
    }

    fn time(&self) -> Option<Duration> {
        Some(self.message.ts)
    }
}

/// A game packet or a batch that shows none, its keys read through its
/// description (`records::game`) at the key indices the filter resolved;
/// its decoded fields (`fields.KEY`, `PACKET`, `PACKET.KEY`) by name.
impl Record for GameRecord<'_> {
    fn visit(&self, field: Field, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
        use crate::records::value::visit_json;
        match field {
            Field::Key(k) => {
                crate::records::visit_index::<GameRecord<'static>>(self, k.indices(), f)
            }
            Field::Path(path) => {
                let Some(p) = self.packet() else { return false };
                let (head, rest) = path.split_once('.').unwrap_or((path, ""));
                if head != "fields" && p.name != Some(head) {
                    return false;
                }
                match &p.fields {
                    Some(v) if !rest.is_empty() || head == "fields" => visit_json(v, rest, f),
                    Some(v) => f(Value::Object(Obj::Json(v))),
                    // A packet of that name, nothing decoded in it.
                    None => rest.is_empty() && f(Value::Bool(true)),
                }
            }
            _ => false,
        }
    }

    fn time(&self) -> Option<Duration> {
        Some(self.message.ts)
    }
}

/// A described record (`flow`, `handshake`), its fields read through its
/// description (`records`): only the key a filter or an export names.
pub(crate) struct DescribedRecord<'a>(pub(crate) &'a dyn crate::records::Keyed);

impl Record for DescribedRecord<'_> {
    fn visit(&self, field: Field, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
        let path = match field {
            Field::Key(p) => return self.0.visit_key(p.indices(), f),
            Field::Path(p) => p,
            Field::TimeRelative => return false,
        };
        self.0.visit(path, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::value::visit_display;

    #[test]
    fn names_are_unique_and_found() {
        for (i, d) in FIELDS.iter().enumerate() {
            assert!(
                FIELDS[..i].iter().all(|e| e.name != d.name),
                "{} twice",
                d.name
            );
            assert!(RecordType::ALL.iter().any(|r| d.in_record(*r)));
        }
        assert!(lookup("channel", RecordType::Message).is_ok());
        assert!(lookup("seq", RecordType::Message)
            .unwrap_err()
            .contains("not in message records"));
        assert!(lookup("chanel", RecordType::Packet)
            .unwrap_err()
            .contains("did you mean channel"));
    }

    #[test]
    fn described_fields_come_from_their_descriptions() {
        for record in RecordType::ALL {
            let keys = paths_of(record);
            for (name, k) in &keys {
                let d = lookup(name, record).unwrap();
                // A NetherNet datagram's own keys are read by name.
                let by_name = match record {
                    RecordType::Packet => {
                        crate::records::key_path::<PacketRecord<'static>>(name).is_none()
                    }
                    RecordType::Flow => {
                        crate::records::key_path::<FlowRecord<'static>>(name).is_none()
                    }
                    _ => false,
                };
                assert!(
                    matches!(d.read, Field::Key(_)) != by_name,
                    "{name} resolved"
                );
                assert_eq!((d.ty, d.closed), (k.ty, k.closed), "{name}");
                // Its doc line is in the list's, which says whose it is
                // when the records' differ.
                let listed = FIELDS.iter().find(|l| l.name == name).unwrap();
                assert!(listed.meaning.contains(k.doc), "{name}");
            }
            // Every other name of the record is an alias of one of its
            // keys, or the time its context knows.
            for d in of_record(record) {
                if keys.iter().any(|(n, _)| n == d.name) {
                    continue;
                }
                let alias = ALIASES.iter().find(|(a, _)| *a == d.name);
                match alias {
                    Some((_, target)) => {
                        assert_eq!(d.read, lookup(target, record).unwrap().read, "{}", d.name)
                    }
                    None => assert_eq!(d.read, Field::TimeRelative, "{}", d.name),
                }
            }
        }
        // Aliases read the key of the name they stand for; the time since
        // the capture's start is the context's.
        let read = |n: &str| read_in(n, RecordType::Message);
        assert_eq!(read("frame.number"), read("frame"));
        assert_eq!(read("frame.time_epoch"), read("ts"));
        assert_eq!(read("frame.time_relative"), Field::TimeRelative);
        assert_eq!(
            read_in("frame.time_epoch", RecordType::Handshake),
            read_in("ts", RecordType::Handshake)
        );
        // A packet's top-level frame names read its frames' keys; a
        // message's are its own.
        let read = |n: &str| read_in(n, RecordType::Packet);
        assert_eq!(read("channel"), read("frames.channel"));
        assert_eq!(read("split.count"), read("frames.split.count"));
        assert_ne!(read("ip.src"), read("ip.dst"));
        assert!(matches!(read("motd.motd"), Field::Key(_)));
        assert!(lookup("channel", RecordType::Message)
            .unwrap()
            .meaning
            .contains("message: "));
        assert!(lookup("c2s.lost", RecordType::Handshake).is_err());
        assert!(lookup("steps.step", RecordType::Flow).is_err());
        // A closed set goes by the record: a game packet's name is not a
        // message's.
        let closed = |n: &str, r| lookup(n, r).unwrap().closed;
        assert_eq!(closed("name", RecordType::Game), Some(Closed::GamePacket));
        assert_eq!(closed("name", RecordType::Message), Some(Closed::Message));
        assert_eq!(
            closed("frames.name", RecordType::Packet),
            Some(Closed::Message)
        );
        assert_eq!(closed("dir", RecordType::Game), Some(Closed::Dir));
        assert_eq!(
            closed("anomalies.kind", RecordType::Packet),
            Some(Closed::AnomalyKind)
        );
        assert_eq!(
            closed("reliability", RecordType::Packet),
            Some(Closed::Reliability)
        );
        assert_eq!(closed("len", RecordType::Packet), None);
    }

    #[test]
    fn a_long_mistyped_name_is_said_unknown() {
        let long = "x".repeat(100_000);
        assert!(lookup(&long, RecordType::Packet)
            .unwrap_err()
            .starts_with("unknown field"));
    }

    #[test]
    fn a_game_field_is_made_once() {
        let a = game_field("text.message").expect("a packet's field");
        let b = game_field("text.message").expect("the same");
        assert!(std::ptr::eq(a, b));
        assert!(game_field("no_such_packet.x").is_none());
    }

    #[test]
    fn game_records_have_their_keys_and_the_decoded_fields() {
        use crate::bedrock::batch::Header;
        use crate::bedrock::{GameEvent, GamePacket};
        use crate::dissect::Dir;
        use crate::mirror::Message;
        let m = Message {
            flow: 3,
            dir: Dir::C2s,
            frame: 19,
            ts: Duration::from_millis(1500),
            data: vec![0xfe],
            reliability: crate::wire::Reliability(3),
            channel: Some(0),
            anomalies: Vec::new(),
        };
        let login = GameEvent::Packet(GamePacket {
            dir: Dir::C2s,
            batch: 1,
            header: Header::parse(&[0x01]).unwrap(),
            name: Some("login"),
            data: vec![0x01, 0, 0, 0x08, 0x79].into(),
            encrypted: false,
            fields: Some(
                serde_json::json!({"protocol": 2169, "display_name": "Steve",
                "chain": {"verifies": true}}),
            ),
            anomaly: None,
            error: None,
            pending: None,
            layout: None,
        });
        let values = |e: &GameEvent, name: &str| {
            let d = lookup(name, RecordType::Game).unwrap();
            let r = GameRecord {
                data_limit: Some(2),
                ..GameRecord::new(&m, e)
            };
            let mut seen = Vec::new();
            r.visit(d.read, &mut |v| {
                seen.push(match v {
                    Value::Int(i) => i.to_string(),
                    Value::Str(s) => s.to_string(),
                    Value::Bool(b) => b.to_string(),
                    Value::Bytes(b) => format!("{} bytes", b.len()),
                    Value::Object(o) => o.to_json(),
                    other => format!("{other:?}"),
                });
                false
            });
            seen.join(",")
        };
        assert_eq!(values(&login, "type"), "game");
        assert_eq!(values(&login, "game.name"), "login");
        assert_eq!(values(&login, "name"), "login");
        assert_eq!(values(&login, "game.id"), "1");
        assert_eq!(values(&login, "game.len"), "5");
        assert_eq!(values(&login, "data"), "5 bytes");
        assert_eq!(values(&login, "data_truncated"), "true");
        assert_eq!(values(&login, "batch"), "1");
        assert_eq!(values(&login, "encrypted"), "false");
        assert_eq!(values(&login, "game.login.display_name"), "Steve");
        assert_eq!(values(&login, "fields.protocol"), "2169");
        assert_eq!(values(&login, "login.chain.verifies"), "true");
        assert_eq!(values(&login, "game.disconnect.message"), "");
        assert!(values(&login, "game.login").contains("\"display_name\":\"Steve\""));
        assert_eq!(values(&login, "reason"), "");
        let opaque = GameEvent::Opaque(crate::bedrock::Opaque {
            dir: Dir::S2c,
            batch: 4,
            len: 99,
            reason: crate::bedrock::OpaqueReason::Encrypted,
            detail: "no key".into(),
        });
        assert_eq!(values(&opaque, "type"), "game_opaque");
        assert_eq!(values(&opaque, "reason"), "encrypted");
        assert_eq!(values(&opaque, "len"), "99");
        assert_eq!(values(&opaque, "batch"), "4");
        assert_eq!(values(&opaque, "name"), "");
        // Names that are not fields of game records, and why.
        let err = |n: &str| lookup(n, RecordType::Game).unwrap_err();
        assert!(
            err("game.logn").contains("did you mean login"),
            "{}",
            err("game.logn")
        );
        assert!(err("game.nme").contains("did you mean name"));
        assert!(err("lgin.display_name").contains("unknown game packet \"lgin\""));
        assert!(err("game.login..x").contains("empty name"));
        assert!(err("seq").contains("not in game records"));
        // Game fields are only in game records.
        assert!(lookup("game.login.display_name", RecordType::Message).is_err());
    }

    #[test]
    fn small_strings_fit_or_fall_back() {
        let mut seen = String::new();
        visit_display(
            "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535",
            &mut |v| {
                if let Value::Str(s) = v {
                    seen = s.to_string();
                }
                true
            },
        );
        assert_eq!(seen, "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535");
        let long = "x".repeat(100);
        visit_display(&long, &mut |v| {
            if let Value::Str(s) = v {
                seen = s.to_string();
            }
            true
        });
        assert_eq!(seen.len(), 100);
    }
}
