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

use crate::dissect::Body;
use crate::records::flow::FlowRecord;
pub(crate) use crate::records::game::GameRecord;
use crate::records::handshake::HandshakeRecord;
use crate::records::message::MessageRecord;
pub use crate::records::packet::PacketRecord;
use crate::records::KeyPath;
pub(crate) use crate::records::{Obj, Ty, Value};
use crate::wire::Offline;

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

/// A field, resolved from its name once, when the filter is compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// The field named `type`.
    Type,
    /// The capture file: only through `Since` (packets, messages, game
    /// packets) or a record's `file` key.
    File,
    /// The field named `frame` or `frame.number`.
    Frame,
    /// The field named `ts` or `frame.time_epoch`.
    Ts,
    /// Seconds since the capture's first datagram, as `read`'s time column:
    /// only through `Since`, which knows when that was.
    TimeRelative,
    /// The field named `src`.
    Src,
    /// The field named `dst`.
    Dst,
    /// The address of `src`, of `dst`, of either (`ip.addr`).
    SrcIp,
    /// The field named `ip.dst`.
    DstIp,
    /// The field named `ip.addr`.
    AnyIp,
    /// The port of `src`, of `dst`, of either (`udp.port`).
    SrcPort,
    /// The field named `udp.dstport`.
    DstPort,
    /// The field named `udp.port`.
    AnyPort,
    /// The field named `flow`.
    Flow,
    /// The field named `dir`.
    Dir,
    /// The field named `kind`.
    Kind,
    /// The field named `len`.
    Len,
    /// The record's `id`, or in a packet without one (a data datagram), its
    /// frames' ids.
    Id,
    /// The field named `name`.
    Name,
    /// The field named `protocol`.
    Protocol,
    /// The field named `mtu`.
    Mtu,
    /// The field named `client_guid`.
    ClientGuid,
    /// The field named `server_guid`.
    ServerGuid,
    /// The field named `guid`.
    Guid,
    /// The field named `time`.
    Time,
    /// The field named `cookie`.
    Cookie,
    /// The field named `security`.
    Security,
    /// The field named `address`.
    Address,
    /// The field named `payload`.
    Payload,
    /// The field named `motd`.
    Motd,
    /// A key of a pong's MOTD (`motd.edition`, `motd.players_online`, ...), by its name.
    MotdKey(&'static str),
    /// The field named `seq`.
    Seq,
    /// The field named `frames`.
    Frames,
    /// The field named `ranges`.
    Ranges,
    /// The field named `reliability` or `frames.reliability`.
    Reliability,
    /// The field named `reliable_index` or `frames.reliable_index`.
    ReliableIndex,
    /// The field named `sequence_index` or `frames.sequence_index`.
    SequenceIndex,
    /// The field named `order_index` or `frames.order_index`.
    OrderIndex,
    /// The field named `channel` or `frames.channel`.
    Channel,
    /// The field named `split` or `frames.split`.
    Split,
    /// The field named `split.count` or `frames.split.count`.
    SplitCount,
    /// The field named `split.id` or `frames.split.id`.
    SplitId,
    /// The field named `split.index` or `frames.split.index`.
    SplitIndex,
    /// The field named `frames.len`.
    FrameLen,
    /// The field named `frames.id`.
    FrameId,
    /// The field named `frames.name`.
    FrameName,
    /// The field named `data`.
    Data,
    /// Bedrock: a message's game packets, a handshake's game login.
    Game,
    /// The field named `data_truncated`.
    DataTruncated,
    /// The field named `anomalies`.
    Anomalies,
    /// The field named `anomalies.kind`.
    AnomalyKind,
    /// The field named `anomalies.detail`.
    AnomalyDetail,
    /// A key of a `flow` record, by its dotted path (`c2s.lost`).
    Path(&'static str),
    /// A key of a described record (`records`), resolved to its key
    /// indices when the filter or export was compiled for that record type
    /// (`FieldDef::read`).
    Key(KeyPath),
}

/// One row of the field list (`raknet-dissect fields`).
#[derive(Debug, Clone, Copy)]
pub struct FieldDef {
    /// The field's name, as `-Y` and `-e` take it.
    pub name: &'static str,
    /// What the name means, whatever the record (closed sets of values go
    /// by it: [`check_closed`]).
    pub(crate) field: Field,
    /// What a record reads: `field`, or in a [`lookup`] for a described
    /// record type, the key it names there resolved ([`Field::Key`]).
    pub(crate) read: Field,
    pub(crate) ty: Ty,
    /// The records that have it: [`PK`], [`MS`], [`FL`] or'ed.
    records: u8,
    pub(crate) meaning: &'static str,
}

const fn def(
    name: &'static str,
    field: Field,
    ty: Ty,
    records: u8,
    meaning: &'static str,
) -> FieldDef {
    FieldDef {
        name,
        field,
        read: field,
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

/// Every field name: those listed below, then the keys of the described
/// records (`records::message`, `records::flow`, `records::handshake`), in
/// their JSON order.
pub static FIELDS: LazyLock<Vec<FieldDef>> = LazyLock::new(|| {
    let mut all = LISTED.to_vec();
    let described = [
        (PK, crate::records::paths::<PacketRecord<'static>>()),
        (MS, crate::records::paths::<MessageRecord<'static>>()),
        (FL, crate::records::paths::<FlowRecord<'static>>()),
        (HS, crate::records::paths::<HandshakeRecord<'static>>()),
        (GM, crate::records::paths::<GameRecord<'static>>()),
    ];
    for (bit, keys) in described {
        for (name, k) in keys {
            match all.iter_mut().find(|d| d.name == name) {
                Some(d) => d.records |= bit,
                None => {
                    // Made once, kept for the process (a few dozen names).
                    let name: &'static str = match name {
                        std::borrow::Cow::Borrowed(n) => n,
                        std::borrow::Cow::Owned(n) => Box::leak(n.into_boxed_str()),
                    };
                    all.push(def(name, Field::Path(name), k.ty, bit, k.doc));
                }
            }
        }
    }
    all
});

/// The fields of each record type (in [`RecordType::ALL`]'s order), with
/// what they read resolved for it ([`FieldDef::read`]).
static BY_RECORD: LazyLock<Vec<Vec<FieldDef>>> = LazyLock::new(|| {
    RecordType::ALL
        .iter()
        .map(|&r| {
            FIELDS
                .iter()
                .filter(|d| d.in_record(r))
                .map(|d| FieldDef {
                    read: resolve(d, r),
                    ..*d
                })
                .collect()
        })
        .collect()
});

/// What a filter compiled for `record`s reads for a name of `field`: for
/// test records that answer by hand-listed field.
#[cfg(test)]
pub(crate) fn read_in(field: Field, record: RecordType) -> Field {
    FIELDS
        .iter()
        .filter(|d| d.field == field && d.in_record(record))
        .find_map(|d| lookup(d.name, record).ok())
        .map_or(field, |d| d.read)
}

/// The key indices `path` names in `record`s, when they are described.
fn key_path(record: RecordType, path: &str) -> Option<KeyPath> {
    use crate::records::key_path;
    match record {
        RecordType::Packet => key_path::<PacketRecord<'static>>(path),
        RecordType::Message => key_path::<MessageRecord<'static>>(path),
        RecordType::Flow => key_path::<FlowRecord<'static>>(path),
        RecordType::Handshake => key_path::<HandshakeRecord<'static>>(path),
        RecordType::Game => key_path::<GameRecord<'static>>(path),
    }
}

/// What `d` reads in `record`s: the key it names, or for an alias
/// (`frame.number`, `frame.time_epoch`), the key a name of the same field
/// names; else (`frame.time_relative`, which [`Since`] answers) `d.field`.
fn resolve(d: &FieldDef, record: RecordType) -> Field {
    key_path(record, d.name)
        .or_else(|| {
            FIELDS
                .iter()
                .filter(|e| e.field == d.field && e.in_record(record))
                .find_map(|e| key_path(record, e.name))
        })
        .map_or(d.field, Field::Key)
}

/// The names of game records, the aliases of tshark's and the packet's
/// own (its frames' keys at the top level, its MOTD's keys), and the names
/// the described records (`packet`, `message`, `flow`, `handshake`) share
/// with them or with each other, for a doc line that covers them all:
/// which of the described records have a name (`PK`, `MS`, `FL`, `HS`)
/// comes from their descriptions, not from here.
const LISTED: &[FieldDef] = &[
    def(
        "type",
        Field::Type,
        Ty::Str,
        0,
        "The record type: \"packet\", \"message\", \"flow\", \"handshake\", \"game\" or \"game_opaque\".",
    ),
    def(
        "file",
        Field::File,
        Ty::Str,
        0,
        "The capture file: of a packet, message or game record when several files are read as one capture; of every record with --separate.",
    ),
    def(
        "frame",
        Field::Frame,
        Ty::Int,
        0,
        "Frame number in the capture, 1-based (message, game: the packet that completed delivery).",
    ),
    def(
        "ts",
        Field::Ts,
        Ty::Float,
        0,
        "Capture time, seconds since the Unix epoch (handshake: the attempt's start).",
    ),
    def("src", Field::Src, Ty::Str, 0, "Sender, \"ip:port\"."),
    def("dst", Field::Dst, Ty::Str, 0, "Receiver, \"ip:port\"."),
    def(
        "frame.number",
        Field::Frame,
        Ty::Int,
        PK | MS,
        "tshark alias of frame.",
    ),
    def(
        "frame.time_relative",
        Field::TimeRelative,
        Ty::Float,
        PK | MS,
        "tshark alias: seconds since the capture's first UDP datagram, as read's time column.",
    ),
    def(
        "frame.time_epoch",
        Field::Ts,
        Ty::Float,
        PK | MS | HS,
        "tshark alias of ts.",
    ),
    def(
        "ip.src",
        Field::SrcIp,
        Ty::Ip,
        PK,
        "tshark alias: the address of src, IPv4 or IPv6 (`ip.src == 127.0.0.1`, `ip.src == 10.0.0.0/8`).",
    ),
    def(
        "ip.dst",
        Field::DstIp,
        Ty::Ip,
        PK,
        "tshark alias: the address of dst.",
    ),
    def(
        "ip.addr",
        Field::AnyIp,
        Ty::Ip,
        PK,
        "tshark alias: the address of src, then of dst (either one matches).",
    ),
    def(
        "udp.srcport",
        Field::SrcPort,
        Ty::Int,
        PK,
        "tshark alias: the port of src.",
    ),
    def(
        "udp.dstport",
        Field::DstPort,
        Ty::Int,
        PK,
        "tshark alias: the port of dst.",
    ),
    def(
        "udp.port",
        Field::AnyPort,
        Ty::Int,
        PK,
        "tshark alias: the port of src, then of dst (either one matches).",
    ),
    def(
        "flow",
        Field::Flow,
        Ty::Int,
        0,
        "Flow id, 1-based in order of first sight.",
    ),
    def(
        "dir",
        Field::Dir,
        Ty::Str,
        0,
        "\"c2s\" or \"s2c\" (message, game: c2s is received by the server).",
    ),
    def(
        "kind",
        Field::Kind,
        Ty::Str,
        0,
        "\"offline\", \"data\", \"ack\" or \"nack\".",
    ),
    def(
        "len",
        Field::Len,
        Ty::Int,
        0,
        "Packet: UDP payload bytes. Message: bytes of the whole message. Game: bytes of the game packet, header included (game_opaque: of the batch).",
    ),
    def(
        "id",
        Field::Id,
        Ty::Int,
        0,
        "Message id. Packet: the offline message id, or else each frame's id. Game: the game packet id (10 bits).",
    ),
    def(
        "name",
        Field::Name,
        Ty::Str,
        0,
        "Message name (ID_*). Packet: the offline message's, or else each frame's. Game: the game packet's (login, play_status, ...).",
    ),
    def(
        "protocol",
        Field::Protocol,
        Ty::Int,
        0,
        "RakNet protocol byte (Open Connection Request 1, Incompatible Protocol Version).",
    ),
    def(
        "mtu",
        Field::Mtu,
        Ty::Int,
        0,
        "MTU in an open connection request or reply (flow, handshake: the one agreed).",
    ),
    def(
        "client_guid",
        Field::ClientGuid,
        Ty::Guid,
        0,
        "Client GUID (unconnected ping, Open Connection Request 2).",
    ),
    def(
        "server_guid",
        Field::ServerGuid,
        Ty::Guid,
        0,
        "Server GUID (pong, replies, refusals).",
    ),
    def(
        "guid",
        Field::Guid,
        Ty::Guid,
        0,
        "Sender GUID of an out-of-band message (0x0d).",
    ),
    def(
        "time",
        Field::Time,
        Ty::Int,
        0,
        "sendPingTime of an unconnected ping or pong, ms.",
    ),
    def(
        "cookie",
        Field::Cookie,
        Ty::Int,
        0,
        "Security cookie in Reply 1 or Request 2.",
    ),
    def(
        "security",
        Field::Security,
        Ty::Bool,
        0,
        "Reply 1: server has security. Reply 2: a security answer is present.",
    ),
    def(
        "address",
        Field::Address,
        Ty::Str,
        0,
        "Request 2: the server's address. Reply 2: the client's address.",
    ),
    def(
        "payload",
        Field::Payload,
        Ty::Bytes,
        0,
        "Pong payload or out-of-band payload.",
    ),
    def(
        "motd",
        Field::Motd,
        Ty::Object,
        0,
        "Minecraft MOTD of a pong, as an object.",
    ),
    def(
        "motd.edition",
        Field::MotdKey("edition"),
        Ty::Str,
        PK,
        "MOTD edition (MCPE or MCEE).",
    ),
    def(
        "motd.motd",
        Field::MotdKey("motd"),
        Ty::Str,
        PK,
        "MOTD first line.",
    ),
    def(
        "motd.protocol_version",
        Field::MotdKey("protocol_version"),
        Ty::Str,
        PK,
        "MOTD game protocol version.",
    ),
    def(
        "motd.version",
        Field::MotdKey("version"),
        Ty::Str,
        PK,
        "MOTD game version.",
    ),
    def(
        "motd.players_online",
        Field::MotdKey("players_online"),
        Ty::Str,
        PK,
        "MOTD players online.",
    ),
    def(
        "motd.players_max",
        Field::MotdKey("players_max"),
        Ty::Str,
        PK,
        "MOTD player limit.",
    ),
    def(
        "motd.server_guid",
        Field::MotdKey("server_guid"),
        Ty::Str,
        PK,
        "MOTD server id.",
    ),
    def(
        "motd.sub_motd",
        Field::MotdKey("sub_motd"),
        Ty::Str,
        PK,
        "MOTD second line.",
    ),
    def(
        "motd.game_mode",
        Field::MotdKey("game_mode"),
        Ty::Str,
        PK,
        "MOTD game mode.",
    ),
    def(
        "motd.nintendo_limited",
        Field::MotdKey("nintendo_limited"),
        Ty::Str,
        PK,
        "MOTD Nintendo-limited flag.",
    ),
    def(
        "motd.port_v4",
        Field::MotdKey("port_v4"),
        Ty::Str,
        PK,
        "MOTD IPv4 port.",
    ),
    def(
        "motd.port_v6",
        Field::MotdKey("port_v6"),
        Ty::Str,
        PK,
        "MOTD IPv6 port.",
    ),
    def(
        "motd.extra",
        Field::MotdKey("extra"),
        Ty::Str,
        PK,
        "MOTD fields after the twelfth (the last one).",
    ),
    def(
        "seq",
        Field::Seq,
        Ty::Int,
        0,
        "datagramNumber of a data datagram.",
    ),
    def(
        "frames",
        Field::Frames,
        Ty::Object,
        0,
        "The capsules of a data datagram (present when there is at least one).",
    ),
    def(
        "ranges",
        Field::Ranges,
        Ty::Ranges,
        0,
        "Datagram numbers an ACK or NACK covers; `ranges == N` holds when N is covered.",
    ),
    def(
        "reliability",
        Field::Reliability,
        Ty::Str,
        PK,
        "Reliability name. Packet: each frame's.",
    ),
    def(
        "reliable_index",
        Field::ReliableIndex,
        Ty::Int,
        PK,
        "Each frame's reliableMessageNumber.",
    ),
    def(
        "sequence_index",
        Field::SequenceIndex,
        Ty::Int,
        PK,
        "Each frame's sequencingIndex.",
    ),
    def(
        "order_index",
        Field::OrderIndex,
        Ty::Int,
        PK,
        "Each frame's orderingIndex.",
    ),
    def(
        "channel",
        Field::Channel,
        Ty::Int,
        PK,
        "Ordering channel. Packet: each frame's.",
    ),
    def(
        "split",
        Field::Split,
        Ty::Object,
        PK,
        "Each split frame's {count, id, index}.",
    ),
    def(
        "split.count",
        Field::SplitCount,
        Ty::Int,
        PK,
        "splitPacketCount of each split frame.",
    ),
    def(
        "split.id",
        Field::SplitId,
        Ty::Int,
        PK,
        "splitPacketId of each split frame.",
    ),
    def(
        "split.index",
        Field::SplitIndex,
        Ty::Int,
        PK,
        "splitPacketIndex of each split frame.",
    ),
    def(
        "frames.reliability",
        Field::Reliability,
        Ty::Str,
        0,
        "Same as reliability.",
    ),
    def(
        "frames.reliable_index",
        Field::ReliableIndex,
        Ty::Int,
        0,
        "Same as reliable_index.",
    ),
    def(
        "frames.sequence_index",
        Field::SequenceIndex,
        Ty::Int,
        0,
        "Same as sequence_index.",
    ),
    def(
        "frames.order_index",
        Field::OrderIndex,
        Ty::Int,
        0,
        "Same as order_index.",
    ),
    def(
        "frames.channel",
        Field::Channel,
        Ty::Int,
        0,
        "Same as channel.",
    ),
    def(
        "frames.split",
        Field::Split,
        Ty::Object,
        0,
        "Same as split.",
    ),
    def(
        "frames.split.count",
        Field::SplitCount,
        Ty::Int,
        0,
        "Same as split.count.",
    ),
    def(
        "frames.split.id",
        Field::SplitId,
        Ty::Int,
        0,
        "Same as split.id.",
    ),
    def(
        "frames.split.index",
        Field::SplitIndex,
        Ty::Int,
        0,
        "Same as split.index.",
    ),
    def(
        "frames.len",
        Field::FrameLen,
        Ty::Int,
        0,
        "Bytes of each frame's payload.",
    ),
    def(
        "frames.id",
        Field::FrameId,
        Ty::Int,
        0,
        "Each frame's message id (whole messages and first fragments).",
    ),
    def(
        "frames.name",
        Field::FrameName,
        Ty::Str,
        0,
        "Each frame's message name.",
    ),
    def(
        "game",
        Field::Game,
        Ty::Str,
        0,
        "Bedrock flows: message, the names of the game packets inside (or encrypted, decompress, malformed); flow, the game session (an object); handshake, where the game login got, in words.",
    ),
    def(
        "data",
        Field::Data,
        Ty::Bytes,
        0,
        "The whole message, id byte included (game: the decompressed packet, header included); not cut by --data-limit.",
    ),
    def(
        "data_truncated",
        Field::DataTruncated,
        Ty::Bool,
        0,
        "Whether --data-limit cut the printed data.",
    ),
    def("client", Field::Path("client"), Ty::Str, 0, "The client's address, \"ip:port\" (the side that sent Open Connection Request 1)."),
    def("server", Field::Path("server"), Ty::Str, 0, "The server's address, \"ip:port\"."),
    def("duration", Field::Path("duration"), Ty::Float, 0, "Seconds: flow, last_ts - first_ts; handshake, from the attempt's start to its end."),
    def(
        "anomalies",
        Field::Anomalies,
        Ty::Object,
        0,
        "Findings of the dissector and the mirror; as a test: at least one.",
    ),
    def(
        "anomalies.kind",
        Field::AnomalyKind,
        Ty::Str,
        0,
        "Each anomaly's kind (gap, resend, duplicate, ...).",
    ),
    def(
        "anomalies.detail",
        Field::AnomalyDetail,
        Ty::Str,
        0,
        "Each anomaly's detail text.",
    ),
];

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

/// Checks a value a filter compares `field` with (`==`, `!=`, `in`) in
/// `record`s against the closed set that field's values come from (kinds,
/// directions, anomaly kinds, message and game packet names,
/// reliabilities): a value outside it is a typo, said with the nearest
/// valid one. Fields of open sets take anything.
pub(crate) fn check_closed(field: Field, record: RecordType, value: &str) -> Result<(), String> {
    use crate::wire::Reliability;
    const TYPES: [&str; 8] = [
        "packet",
        "message",
        "flow",
        "handshake",
        "game",
        "game_opaque",
        "icmp",
        "end_of_capture",
    ];
    let reliabilities: Vec<&str> = (0..8).map(|r| Reliability(r).name()).collect();
    let (what, names): (&str, Vec<&'static str>) = match field {
        Field::Type => ("record type", TYPES.to_vec()),
        Field::Dir => ("direction", vec!["c2s", "s2c"]),
        Field::Kind => ("packet kind", vec!["offline", "data", "ack", "nack"]),
        Field::AnomalyKind => ("anomaly kind", crate::dissect::ANOMALY_KINDS.to_vec()),
        Field::Reliability => ("reliability", reliabilities),
        Field::Name | Field::FrameName if record == RecordType::Game => {
            if value.starts_with("unknown(") {
                return Ok(());
            }
            ("game packet", crate::bedrock::names::all_names().collect())
        }
        Field::Name | Field::FrameName => {
            let user = value
                .strip_prefix("ID_USER_PACKET_ENUM+")
                .and_then(|n| n.parse::<u8>().ok());
            if user.is_some_and(|n| (1..=0xff - crate::wire::ids::USER_PACKET_ENUM).contains(&n)) {
                return Ok(());
            }
            ("message", crate::wire::ids::MESSAGE_NAMES.to_vec())
        }
        _ => return Ok(()),
    };
    if names.contains(&value) {
        return Ok(());
    }
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
    let d: &'static FieldDef =
        Box::leak(Box::new(def(name, Field::Path(name), Ty::Any, GM, meaning)));
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
    /// The capture file it came from, when records name it.
    pub(crate) file: Option<&'a str>,
}

impl Record for Since<'_> {
    fn visit(&self, field: Field, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
        match field {
            Field::TimeRelative => self
                .record
                .time()
                .is_some_and(|t| f(Value::Float(t.saturating_sub(self.start).as_secs_f64()))),
            Field::File => self.file.is_some_and(|n| f(Value::Str(n))),
            _ => self.record.visit(field, f),
        }
    }

    fn time(&self) -> Option<Duration> {
        self.record.time()
    }
}

/// A packet, its fields read through its description (`records::packet`)
/// at the key indices the filter resolved; the tshark aliases of its
/// addresses and ports, and the MOTD's keys (which vary by payload), read
/// here.
impl Record for PacketRecord<'_> {
    fn visit(&self, field: Field, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
        let p = self.packet;
        let port = |v: u16, f: &mut dyn FnMut(Value<'_>) -> bool| f(Value::Int(v.into()));
        match field {
            Field::Key(k) => {
                crate::records::visit_index::<PacketRecord<'static>>(self, k.indices(), f)
            }
            Field::SrcIp => f(Value::Ip(p.src.ip())),
            Field::DstIp => f(Value::Ip(p.dst.ip())),
            Field::AnyIp => f(Value::Ip(p.src.ip())) || f(Value::Ip(p.dst.ip())),
            Field::SrcPort => port(p.src.port(), f),
            Field::DstPort => port(p.dst.port(), f),
            Field::AnyPort => port(p.src.port(), f) || port(p.dst.port(), f),
            Field::MotdKey(k) => {
                let msg = match &p.body {
                    Body::Offline { msg, .. } => msg.as_ref(),
                    Body::Datagram(_) => None,
                };
                msg.and_then(Offline::motd).is_some_and(|m| {
                    m.fields
                        .iter()
                        .rev()
                        .find(|(key, _)| *key == k)
                        .is_some_and(|(_, v)| f(Value::Str(v)))
                })
            }
            _ => false,
        }
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
            Field::Type => "type",
            Field::File => "file",
            Field::Flow => "flow",
            Field::ClientGuid => "client_guid",
            Field::ServerGuid => "server_guid",
            Field::Protocol => "protocol",
            Field::Mtu => "mtu",
            Field::Ts => "ts",
            Field::Game => "game",
            _ => return false,
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
        use crate::records::paths;
        let flow = paths::<FlowRecord<'static>>();
        let handshake = paths::<HandshakeRecord<'static>>();
        let message = paths::<MessageRecord<'static>>();
        let packet = paths::<PacketRecord<'static>>();
        let game = paths::<GameRecord<'static>>();
        for (record, keys) in [
            (RecordType::Flow, &flow),
            (RecordType::Handshake, &handshake),
            (RecordType::Message, &message),
            (RecordType::Packet, &packet),
            (RecordType::Game, &game),
        ] {
            for (name, k) in keys {
                let d = lookup(name, record).unwrap();
                assert!(matches!(d.read, Field::Key(_)), "{name} resolved");
                if LISTED.iter().all(|l| l.name != name) {
                    assert_eq!((d.ty, d.meaning), (k.ty, k.doc), "{name}");
                }
            }
            // Every name of the record: listed or described, never both
            // ways for the record (its bit comes from its description).
            for d in FIELDS.iter().filter(|d| d.in_record(record)) {
                let described = keys.iter().any(|(n, _)| n == d.name);
                let listed = LISTED
                    .iter()
                    .any(|l| l.name == d.name && l.in_record(record));
                assert!(
                    described != listed || d.name.starts_with("frame."),
                    "{}",
                    d.name
                );
            }
        }
        // Aliases read the key of the name they stand for; the time since
        // the capture's start is the context's.
        let read = |n: &str| lookup(n, RecordType::Message).unwrap().read;
        assert_eq!(read("frame.number"), read("frame"));
        assert_eq!(read("frame.time_epoch"), read("ts"));
        assert_eq!(read("frame.time_relative"), Field::TimeRelative);
        assert_eq!(
            lookup("frame.time_epoch", RecordType::Handshake)
                .unwrap()
                .read,
            lookup("ts", RecordType::Handshake).unwrap().read
        );
        // A packet's top-level frame names read its frames' keys; its
        // addresses' and ports' aliases and the MOTD's keys are its own.
        let read = |n: &str| lookup(n, RecordType::Packet).unwrap().read;
        assert_eq!(read("channel"), read("frames.channel"));
        assert_eq!(read("split.count"), read("frames.split.count"));
        assert_eq!(read("ip.src"), Field::SrcIp);
        assert_eq!(read("motd.motd"), Field::MotdKey("motd"));
        for d in FIELDS.iter().filter(|d| d.in_record(RecordType::Packet)) {
            let r = read(d.name);
            assert!(
                matches!(r, Field::Key(_))
                    || matches!(
                        r,
                        Field::SrcIp
                            | Field::DstIp
                            | Field::AnyIp
                            | Field::SrcPort
                            | Field::DstPort
                            | Field::AnyPort
                            | Field::MotdKey(_)
                            | Field::TimeRelative
                    ),
                "{}",
                d.name
            );
        }
        // A name both have is listed, with a doc line that covers both.
        for (name, _) in &flow {
            if handshake.iter().any(|(n, _)| n == name) {
                assert!(LISTED.iter().any(|l| l.name == name), "{name}");
            }
        }
        assert!(lookup("c2s.lost", RecordType::Handshake).is_err());
        assert!(lookup("steps.step", RecordType::Flow).is_err());
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
            data: vec![0x01, 0, 0, 0x08, 0x79],
            encrypted: false,
            fields: Some(
                serde_json::json!({"protocol": 2169, "display_name": "Steve",
                "chain": {"verifies": true}}),
            ),
            anomaly: None,
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
