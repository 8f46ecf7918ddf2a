//! The `flow` record: one flow's counts, written when it ends (`flows`,
//! the end of `live`), with its two directions' counts, its RTT and, for a
//! Bedrock flow, its game session.

use super::value::{int, visit_display};
use super::{object, Closed, Described, Key, Ty, Value, FLOW_DOC, TYPE_DOC};
use crate::bedrock::{GameSummary, PerDir};
use crate::dissect::Dir;
use crate::mirror::{DirStats, FlowMirror};

/// What a `flow` record is made from.
pub struct FlowRecord<'a> {
    pub(crate) flow: &'a FlowMirror,
    /// Its RTT samples, summed up once (`FlowMirror::rtt_ms` sorts them).
    pub(crate) rtt: Option<Rtt>,
    /// A Bedrock flow's game session.
    pub(crate) game: Option<&'a GameSummary>,
    /// The capture file, in a run that reads each file as a capture of its
    /// own (`--separate`).
    pub(crate) file: Option<&'a str>,
}

impl<'a> FlowRecord<'a> {
    /// The record of `flow`, its RTT samples summed up; with `game`, its
    /// game session in a Bedrock flow, and `file`, its capture file.
    pub fn new(flow: &'a FlowMirror, game: Option<&'a GameSummary>, file: Option<&'a str>) -> Self {
        let rtt = flow.rtt_ms().map(Rtt::of);
        FlowRecord {
            flow,
            rtt,
            game,
            file,
        }
    }
}

/// Milliseconds rounded to the microsecond.
fn micro(ms: f64) -> f64 {
    (ms * 1e3).round() / 1e3
}

/// A flow's RTT samples, in milliseconds (the `rtt_ms` object).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rtt {
    pub(crate) min: f64,
    pub(crate) median: f64,
    pub(crate) max: f64,
    pub(crate) samples: usize,
}

impl Rtt {
    /// `(min, median, max, samples)` in milliseconds, rounded to the
    /// microsecond.
    pub(crate) fn of((min, median, max, samples): (f64, f64, f64, usize)) -> Rtt {
        Rtt {
            min: micro(min),
            median: micro(median),
            max: micro(max),
            samples,
        }
    }
}

keyed!(FlowRecord);

type K = Key<FlowRecord<'static>>;

impl Described for FlowRecord<'static> {
    type Of<'a> = FlowRecord<'a>;
    const KEYS: &'static [K] = &[
        K::new("type", Ty::Str, TYPE_DOC, |_, f| f(Value::Str("flow"))).closed(Closed::RecordType),
        K::new(
            "file",
            Ty::Str,
            "The capture file, in a --separate run of several.",
            |r, f| r.file.is_some_and(|n| f(Value::Str(n))),
        )
        .skip(),
        K::new(
            "flow",
            Ty::Int,
            FLOW_DOC,
            |r, f| int(r.flow.id, f),
        ),
        K::new(
            "transport",
            Ty::Str,
            "The transport: \"raknet\" (NetherNet's flows, when read, say \"nethernet\").",
            |_, f| f(Value::Str("raknet")),
        ),
        K::new(
            "client",
            Ty::Str,
            "The client's address, \"ip:port\" (the side that sent Open Connection Request 1).",
            |r, f| visit_display(r.flow.client, f),
        ),
        K::new(
            "server",
            Ty::Str,
            "The server's address, \"ip:port\".",
            |r, f| visit_display(r.flow.server, f),
        ),
        K::new(
            "client_guid",
            Ty::Guid,
            "Client GUID, from the ping, Request 2 or ConnectionRequest.",
            |r, f| r.flow.client_guid.is_some_and(|g| f(Value::Guid(g))),
        )
        .or_null(),
        K::new(
            "server_guid",
            Ty::Guid,
            "Server GUID, from the pong, Reply 1 or Reply 2.",
            |r, f| r.flow.server_guid.is_some_and(|g| f(Value::Guid(g))),
        )
        .or_null(),
        K::new(
            "protocol",
            Ty::Int,
            "The protocol byte of the client's Open Connection Request 1.",
            |r, f| r.flow.protocol.is_some_and(|p| int(p, f)),
        )
        .or_null(),
        K::new(
            "mtu",
            Ty::Int,
            "The MTU of Open Connection Reply 2.",
            |r, f| r.flow.mtu.is_some_and(|m| int(m, f)),
        )
        .or_null(),
        K::new(
            "state",
            Ty::Str,
            "unconnected, handshake, connected, refused, disconnected_by_client or disconnected_by_server.",
            |r, f| f(Value::Str(r.flow.state.as_str())),
        ),
        K::new(
            "sessions",
            Ty::Int,
            "Connections on this endpoint pair: 2 or more when the client reconnected from the same address; 0 for offline messages only.",
            |r, f| int(r.flow.sessions, f),
        ),
        K::new(
            "first_ts",
            Ty::Float,
            "Time of the flow's first packet, seconds since the Unix epoch.",
            |r, f| f(Value::Float(r.flow.first_ts.as_secs_f64())),
        ),
        K::new("last_ts", Ty::Float, "Time of its last packet.", |r, f| {
            f(Value::Float(r.flow.last_ts.as_secs_f64()))
        }),
        K::new("duration", Ty::Float, "Seconds, last_ts - first_ts.", |r, f| {
            let d = r.flow.last_ts.saturating_sub(r.flow.first_ts);
            f(Value::Float(d.as_secs_f64()))
        }),
        K::new(
            "c2s",
            Ty::Object,
            "Counts of the client-to-server direction (the keys below, as c2s.KEY).",
            |r, f| object::<DirStats>(r.flow.stats(Dir::C2s), f),
        )
        .nested::<DirStats>(),
        K::new(
            "s2c",
            Ty::Object,
            "Counts of the server-to-client direction (as s2c.KEY).",
            |r, f| object::<DirStats>(r.flow.stats(Dir::S2c), f),
        )
        .nested::<DirStats>(),
        K::new(
            "rtt_ms",
            Ty::Object,
            "RTT samples, from a data datagram to the first ACK covering it: null when none.",
            |r, f| r.rtt.as_ref().is_some_and(|t| object::<Rtt>(t, f)),
        )
        .or_null()
        .nested::<Rtt>(),
        K::new(
            "game",
            Ty::Object,
            "Bedrock: the flow's game session.",
            |r, f| r.game.is_some_and(|g| object::<GameSummary>(g, f)),
        )
        .nested::<GameSummary>()
        .skip(),
    ];
}

type DK = Key<DirStats>;

/// The `c2s` and `s2c` objects.
impl Described for DirStats {
    type Of<'a> = DirStats;
    const KEYS: &'static [DK] = &[
        DK::new(
            "packets",
            Ty::Int,
            "RakNet packets sent this way.",
            |s, f| int(s.packets, f),
        ),
        DK::new("bytes", Ty::Int, "Their UDP payload bytes.", |s, f| {
            int(s.bytes, f)
        }),
        DK::new("data_datagrams", Ty::Int, "Data datagrams.", |s, f| {
            int(s.data_datagrams, f)
        }),
        DK::new("acks", Ty::Int, "ACK datagrams sent this way.", |s, f| {
            int(s.acks, f)
        }),
        DK::new("nacks", Ty::Int, "NACK datagrams sent this way.", |s, f| {
            int(s.nacks, f)
        }),
        // Not their sum: the two often count the same datagrams.
        DK::new(
            "lost",
            Ty::Int,
            "Datagrams lost on the way: the larger of nacked and never_seen.",
            |s, f| int(s.nacked.max(s.never_seen), f),
        ),
        DK::new(
            "nacked",
            Ty::Int,
            "Datagram numbers the receiver NACKed.",
            |s, f| int(s.nacked, f),
        ),
        DK::new(
            "never_seen",
            Ty::Int,
            "Datagram numbers the capture never showed.",
            |s, f| int(s.never_seen, f),
        ),
        DK::new(
            "never_acked",
            Ty::Int,
            "Datagrams no ACK covered.",
            |s, f| int(s.never_acked, f),
        ),
        DK::new("resends", Ty::Int, "Capsules resent.", |s, f| {
            int(s.resends, f)
        }),
        DK::new(
            "duplicates",
            Ty::Int,
            "Datagrams or reliable messages received twice.",
            |s, f| int(s.duplicates, f),
        ),
        DK::new(
            "messages",
            Ty::Int,
            "Messages delivered to the receiver's application.",
            |s, f| int(s.messages, f),
        ),
        DK::new(
            "splits_reassembled",
            Ty::Int,
            "Split messages reassembled.",
            |s, f| int(s.splits, f),
        ),
        DK::new(
            "anomalies",
            Ty::Int,
            "Anomalies raised in this direction.",
            |s, f| int(s.anomalies, f),
        ),
    ];
}

type RK = Key<Rtt>;

/// The `rtt_ms` object.
impl Described for Rtt {
    type Of<'a> = Rtt;
    const KEYS: &'static [RK] = &[
        RK::new("min", Ty::Float, "Smallest RTT sample, ms.", |t, f| {
            f(Value::Float(t.min))
        }),
        RK::new("median", Ty::Float, "Median RTT sample, ms.", |t, f| {
            f(Value::Float(t.median))
        }),
        RK::new("max", Ty::Float, "Largest RTT sample, ms.", |t, f| {
            f(Value::Float(t.max))
        }),
        RK::new("samples", Ty::Int, "RTT samples taken.", |t, f| {
            f(Value::Int(t.samples as i128))
        }),
    ];
}

type GK = Key<GameSummary>;

/// The `game` object of a Bedrock flow.
impl Described for GameSummary {
    type Of<'a> = GameSummary;
    const KEYS: &'static [GK] = &[
        GK::new(
            "protocol",
            Ty::Int,
            "Bedrock: the game protocol (RequestNetworkSettings or Login).",
            |g, f| g.protocol.is_some_and(|p| int(p, f)),
        )
        .or_null(),
        GK::new(
            "version",
            Ty::Str,
            "Bedrock: the game version of the Login's client data.",
            |g, f| g.version.as_deref().is_some_and(|v| f(Value::Str(v))),
        )
        .or_null(),
        GK::new("player", Ty::Str, "Bedrock: the player's name.", |g, f| {
            g.player.as_deref().is_some_and(|p| f(Value::Str(p)))
        })
        .or_null(),
        GK::new(
            "compression",
            Ty::Str,
            "Bedrock: none, deflate, zlib or snappy.",
            |g, f| f(Value::Str(g.compression)),
        ),
        GK::new(
            "encryption",
            Ty::Str,
            "Bedrock: none, encrypted (not decrypted, or not all) or decrypted.",
            |g, f| f(Value::Str(g.encryption)),
        ),
        GK::new(
            "packets",
            Ty::Object,
            "Bedrock: game packets delivered, {\"c2s\": N, \"s2c\": N}.",
            |g, f| object::<GamePackets>(&g.packets, f),
        )
        .nested::<GamePackets>(),
        GK::new(
            "opaque",
            Ty::Object,
            "Bedrock: batches not shown for the encryption, {\"c2s\": N, \"s2c\": N}.",
            |g, f| object::<OpaqueBatches>(&g.opaque, f),
        )
        .nested::<OpaqueBatches>(),
    ];
}

/// The `game.packets` object: game packets delivered each way.
pub(crate) struct GamePackets;

impl Described for GamePackets {
    type Of<'a> = PerDir;
    const KEYS: &'static [Key<Self>] = &[
        Key::new(
            "c2s",
            Ty::Int,
            "Bedrock: game packets delivered to the server.",
            |d, f| int(d.c2s, f),
        ),
        Key::new(
            "s2c",
            Ty::Int,
            "Bedrock: game packets delivered to the client.",
            |d, f| int(d.s2c, f),
        ),
    ];
}

/// The `game.opaque` object: batches not shown each way.
pub(crate) struct OpaqueBatches;

impl Described for OpaqueBatches {
    type Of<'a> = PerDir;
    const KEYS: &'static [Key<Self>] = &[
        Key::new(
            "c2s",
            Ty::Int,
            "Bedrock: client batches not shown for the encryption.",
            |d, f| int(d.c2s, f),
        ),
        Key::new(
            "s2c",
            Ty::Int,
            "Bedrock: server batches not shown for the encryption.",
            |d, f| int(d.s2c, f),
        ),
    ];
}
