//! The `packet` record: one RakNet UDP datagram of a capture (`read`),
//! with the objects inside it: its frames, a frame's split and a pong's
//! MOTD (an object whose keys vary by payload: `value::motd_object`).

use super::value::{int, visit_addr, visit_display};
use super::{object, Closed, Described, Key, Obj, Ty, Value, FLOW_DOC, TYPE_DOC};
use crate::dissect::{Anomaly, Body, Packet};
use crate::wire::{Capsule, Datagram, Motd, Offline, Split};

/// What a `packet` record is made from.
pub struct PacketRecord<'a> {
    /// The dissected packet.
    pub packet: &'a Packet<'a>,
    /// The capture file, when several are read.
    pub file: Option<&'a str>,
}

impl<'a> PacketRecord<'a> {
    /// An offline message's id, and its fields when it decoded.
    fn offline(&self) -> Option<(u8, Option<&'a Offline<'a>>)> {
        match &self.packet.body {
            Body::Offline { id, msg } => Some((*id, msg.as_ref())),
            Body::Datagram(_) => None,
        }
    }
    /// The offline message's fields.
    fn msg(&self) -> Option<&'a Offline<'a>> {
        self.offline().and_then(|(_, m)| m)
    }
    /// A data datagram's capsules (`None`: not a data datagram that decoded).
    fn capsules(&self) -> Option<&'a [Capsule<'a>]> {
        match &self.packet.body {
            Body::Datagram(Some(Datagram::Data(d))) => Some(&d.capsules),
            _ => None,
        }
    }
}

keyed!(
    PacketRecord,
    |r, out| crate::write_keys!(PacketRecord<'static>, r, out;
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29)
);

type K = Key<PacketRecord<'static>>;

/// A message id's name, as `name` keys give it.
fn name(id: u8, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
    f(Value::Str(&crate::wire::message_name(id)))
}

impl Described for PacketRecord<'static> {
    type Of<'a> = PacketRecord<'a>;
    const KEYS: &'static [K] = &[
        K::new("type", Ty::Str, TYPE_DOC, |_, f| f(Value::Str("packet")))
            .closed(Closed::RecordType),
        K::new(
            "file",
            Ty::Str,
            "The capture file, when several are read.",
            |r, f| r.file.is_some_and(|n| f(Value::Str(n))),
        )
        .skip(),
        K::new(
            "frame",
            Ty::Int,
            "Frame number in the capture, 1-based.",
            |r, f| int(r.packet.frame, f),
        ),
        K::new(
            "ts",
            Ty::Float,
            "Capture time, seconds since the Unix epoch.",
            |r, f| f(Value::Float(r.packet.ts.as_secs_f64())),
        ),
        // Digit by digit, not through Display: measured faster.
        K::new("src", Ty::Str, "Sender, \"ip:port\".", |r, f| {
            visit_addr(r.packet.src, f)
        }),
        K::new("dst", Ty::Str, "Receiver, \"ip:port\".", |r, f| {
            visit_addr(r.packet.dst, f)
        }),
        // tshark's names for the addresses and ports: filters alone.
        K::new(
            "ip",
            Ty::Object,
            "tshark's IP fields of the datagram (`ip.src`, ...); as a test: always there.",
            |r, f| object::<Ip>(&Ends::of(r.packet.src, r.packet.dst), f),
        )
        .filter_only()
        .nested::<Ip>(),
        K::new(
            "udp",
            Ty::Object,
            "tshark's UDP fields of the datagram (`udp.port`, ...); as a test: always there.",
            |r, f| object::<Udp>(&Ends::of(r.packet.src, r.packet.dst), f),
        )
        .filter_only()
        .nested::<Udp>(),
        K::new("flow", Ty::Int, FLOW_DOC, |r, f| int(r.packet.flow, f)),
        K::new(
            "transport",
            Ty::Str,
            "The transport: \"raknet\" or \"nethernet\".",
            |_, f| f(Value::Str("raknet")),
        ),
        K::new(
            "dir",
            Ty::Str,
            "\"c2s\" (client to server) or \"s2c\".",
            |r, f| f(Value::Str(r.packet.dir.as_str())),
        )
        .closed(Closed::Dir),
        K::new(
            "kind",
            Ty::Str,
            "RakNet: \"offline\", \"data\", \"ack\" or \"nack\"; NetherNet: \"stun\", \"dtls\" or \"other\", \"http\" for the signaling.",
            |r, f| f(Value::Str(r.packet.kind())),
        )
        .closed(Closed::Kind),
        K::new("len", Ty::Int, "UDP payload bytes.", |r, f| {
            int(r.packet.payload.len() as u64, f)
        }),
        K::new(
            "id",
            Ty::Int,
            "The offline message id (filters: or else each frame's).",
            |r, f| r.offline().is_some_and(|(i, _)| int(i, f)),
        )
        .skip()
        // Filters: the offline id, or else each frame's.
        .filter(|r, f| match r.offline() {
            Some((i, _)) => int(i, f),
            None => r
                .capsules()
                .unwrap_or(&[])
                .iter()
                .filter_map(Capsule::message_id)
                .any(|i| int(i, f)),
        }),
        K::new(
            "name",
            Ty::Str,
            "The offline message name, ID_* (filters: or else each frame's).",
            |r, f| r.offline().is_some_and(|(i, _)| name(i, f)),
        )
        .skip()
        .closed(Closed::Message)
        .filter(|r, f| match r.offline() {
            Some((i, _)) => name(i, f),
            None => r
                .capsules()
                .unwrap_or(&[])
                .iter()
                .filter_map(Capsule::message_id)
                .any(|i| name(i, f)),
        }),
        K::new(
            "protocol",
            Ty::Int,
            "RakNet protocol byte (Open Connection Request 1, Incompatible Protocol Version).",
            |r, f| {
                r.msg()
                    .and_then(Offline::protocol)
                    .is_some_and(|v| int(v, f))
            },
        )
        .skip(),
        K::new(
            "mtu",
            Ty::Int,
            "MTU of an open connection request or reply.",
            |r, f| r.msg().and_then(Offline::mtu).is_some_and(|v| int(v, f)),
        )
        .skip(),
        K::new(
            "client_guid",
            Ty::Guid,
            "Client GUID (unconnected ping, Open Connection Request 2).",
            |r, f| {
                r.msg()
                    .and_then(Offline::client_guid)
                    .is_some_and(|g| f(Value::Guid(g)))
            },
        )
        .skip(),
        K::new(
            "server_guid",
            Ty::Guid,
            "Server GUID (pong, replies, refusals).",
            |r, f| {
                r.msg()
                    .and_then(Offline::server_guid)
                    .is_some_and(|g| f(Value::Guid(g)))
            },
        )
        .skip(),
        K::new(
            "guid",
            Ty::Guid,
            "Sender GUID of an out-of-band message (0x0d).",
            |r, f| {
                r.msg()
                    .and_then(Offline::sender_guid)
                    .is_some_and(|g| f(Value::Guid(g)))
            },
        )
        .skip(),
        K::new(
            "time",
            Ty::Int,
            "sendPingTime of an unconnected ping or pong, ms.",
            |r, f| r.msg().and_then(Offline::time).is_some_and(|v| int(v, f)),
        )
        .skip(),
        K::new(
            "cookie",
            Ty::Int,
            "Security cookie in Reply 1 or Request 2.",
            |r, f| r.msg().and_then(Offline::cookie).is_some_and(|v| int(v, f)),
        )
        .skip(),
        K::new(
            "security",
            Ty::Bool,
            "Reply 1: the server has security. Reply 2: a security answer is present.",
            |r, f| {
                r.msg()
                    .and_then(Offline::security)
                    .is_some_and(|b| f(Value::Bool(b)))
            },
        )
        .skip(),
        K::new(
            "address",
            Ty::Str,
            "Request 2: the server's address; Reply 2: the client's.",
            |r, f| {
                r.msg()
                    .and_then(Offline::address)
                    .is_some_and(|a| visit_display(a, f))
            },
        )
        .skip(),
        K::new(
            "payload",
            Ty::Bytes,
            "Pong or out-of-band payload.",
            |r, f| {
                r.msg()
                    .and_then(Offline::payload)
                    .is_some_and(|p| f(Value::Bytes(p)))
            },
        )
        .skip(),
        K::new(
            "motd",
            Ty::Object,
            "Minecraft MOTD of a pong, as an object (`motd.version`, ...).",
            |r, f| match r.msg() {
                Some(m) if m.motd().is_some() => {
                    m.payload().is_some_and(|p| f(Value::Object(Obj::Motd(p))))
                }
                _ => false,
            },
        )
        .skip()
        .nested::<Motd>(),
        K::new(
            "seq",
            Ty::Int,
            "datagramNumber of a data datagram.",
            |r, f| match &r.packet.body {
                Body::Datagram(Some(Datagram::Data(d))) => int(d.seq, f),
                _ => false,
            },
        )
        .skip(),
        K::new(
            "frames",
            Ty::Object,
            "The capsules of a data datagram (present when there is at least one).",
            |r, f| {
                r.capsules()
                    .unwrap_or(&[])
                    .iter()
                    .any(|c| object::<FrameOf>(&FrameOf(c), f))
            },
        )
        .present(|r| r.capsules().is_some())
        .nested::<FrameOf>(),
        K::new(
            "ranges",
            Ty::Ranges,
            "Datagram numbers an ACK or NACK covers; `ranges == N` holds when N is covered.",
            |r, f| match &r.packet.body {
                Body::Datagram(Some(Datagram::Ack(l) | Datagram::Nack(l))) => {
                    l.ranges.iter().any(|x| f(Value::Range(x.min, x.max)))
                }
                _ => false,
            },
        )
        .present(|r| {
            matches!(
                &r.packet.body,
                Body::Datagram(Some(Datagram::Ack(_) | Datagram::Nack(_)))
            )
        }),
        K::new(
            "anomalies",
            Ty::Object,
            "Findings of the dissector and the mirror; as a test: at least one.",
            |r, f| r.packet.anomalies.iter().any(|a| object::<Anomaly>(a, f)),
        )
        .many()
        .nested::<Anomaly>(),
    ];
}

/// One capsule of a data datagram (an object of `frames`).
pub(crate) struct FrameOf<'a>(pub(crate) &'a Capsule<'a>);

type FK = Key<FrameOf<'static>>;

impl Described for FrameOf<'static> {
    type Of<'a> = FrameOf<'a>;
    fn write(r: &FrameOf<'_>, out: &mut Vec<u8>) {
        // Key by key at constant indices: a frame or more per packet.
        crate::write_keys!(FrameOf<'static>, r, out; 0 1 2 3 4 5 6 7 8);
    }
    const KEYS: &'static [FK] = &[
        FK::new(
            "reliability",
            Ty::Str,
            "Each frame's reliability.",
            |c, f| f(Value::Str(c.0.reliability.name())),
        )
        .closed(Closed::Reliability),
        FK::new(
            "reliable_index",
            Ty::Int,
            "Each frame's reliableMessageNumber.",
            |c, f| c.0.reliable_index.is_some_and(|v| int(v, f)),
        )
        .skip(),
        FK::new(
            "sequence_index",
            Ty::Int,
            "Each frame's sequencingIndex.",
            |c, f| c.0.sequence_index.is_some_and(|v| int(v, f)),
        )
        .skip(),
        FK::new(
            "order_index",
            Ty::Int,
            "Each frame's orderingIndex.",
            |c, f| c.0.order_index.is_some_and(|v| int(v, f)),
        )
        .skip(),
        FK::new(
            "channel",
            Ty::Int,
            "Each frame's ordering channel.",
            |c, f| c.0.channel.is_some_and(|v| int(v, f)),
        )
        .skip(),
        FK::new(
            "split",
            Ty::Object,
            "Each split frame's {count, id, index}.",
            |c, f| c.0.split.as_ref().is_some_and(|s| object::<Split>(s, f)),
        )
        .skip()
        .nested::<Split>(),
        FK::new("len", Ty::Int, "Bytes of each frame's payload.", |c, f| {
            int(c.0.payload.len() as u64, f)
        }),
        FK::new(
            "id",
            Ty::Int,
            "Each frame's message id (whole messages and first fragments).",
            |c, f| c.0.message_id().is_some_and(|i| int(i, f)),
        )
        .skip(),
        FK::new("name", Ty::Str, "Each frame's message name.", |c, f| {
            c.0.message_id().is_some_and(|i| name(i, f))
        })
        .skip()
        .closed(Closed::Message),
    ];
}

/// tshark's `ip` fields of a packet: filters read them, JSON has `src`
/// and `dst`.
pub(crate) struct Ip;

/// The two ends of a datagram or a segment, as tshark's `ip`, `udp` and
/// `tcp` fields read them.
pub(crate) struct Ends {
    src: std::net::SocketAddr,
    dst: std::net::SocketAddr,
}

impl Ends {
    pub(crate) fn of(src: std::net::SocketAddr, dst: std::net::SocketAddr) -> Ends {
        Ends { src, dst }
    }
}

type IK = Key<Ip>;

impl Described for Ip {
    type Of<'a> = Ends;
    const KEYS: &'static [IK] = &[
        IK::new(
            "src",
            Ty::Ip,
            "The address of src, IPv4 or IPv6 (`ip.src == 127.0.0.1`, `ip.src == 10.0.0.0/8`).",
            |p, f| f(Value::Ip(p.src.ip())),
        ),
        IK::new("dst", Ty::Ip, "The address of dst.", |p, f| {
            f(Value::Ip(p.dst.ip()))
        }),
        IK::new(
            "addr",
            Ty::Ip,
            "The address of src, then of dst (either one matches).",
            |p, f| f(Value::Ip(p.src.ip())) || f(Value::Ip(p.dst.ip())),
        ),
    ];
}

/// tshark's `udp` fields of a packet (and `tcp`'s of a signaling
/// segment: the same names).
pub(crate) struct Udp;

type UK = Key<Udp>;

impl Described for Udp {
    type Of<'a> = Ends;
    const KEYS: &'static [UK] = &[
        UK::new("srcport", Ty::Int, "The port of src.", |p, f| {
            int(p.src.port(), f)
        }),
        UK::new("dstport", Ty::Int, "The port of dst.", |p, f| {
            int(p.dst.port(), f)
        }),
        UK::new(
            "port",
            Ty::Int,
            "The port of src, then of dst (either one matches).",
            |p, f| int(p.src.port(), f) || int(p.dst.port(), f),
        ),
    ];
}

/// The keys of a pong's `motd` (`value::motd_object` writes the object;
/// filters read its keys here).
macro_rules! motd_keys {
    ($($name:literal: $doc:literal,)*) => {
        &[$(MK::new($name, Ty::Str, $doc, |m, f| {
            // The last of a name: `extra` may come more than once.
            m.fields
                .iter()
                .rev()
                .find(|(k, _)| *k == $name)
                .is_some_and(|(_, v)| f(Value::Str(v)))
        })
        .skip(),)*]
    };
}

type MK = Key<Motd>;

impl Described for Motd {
    type Of<'a> = Motd;
    const KEYS: &'static [MK] = motd_keys!(
        "edition": "MOTD edition (MCPE or MCEE).",
        "motd": "MOTD first line.",
        "protocol_version": "MOTD game protocol version.",
        "version": "MOTD game version.",
        "players_online": "MOTD players online.",
        "players_max": "MOTD player limit.",
        "server_guid": "MOTD server id.",
        "sub_motd": "MOTD second line.",
        "game_mode": "MOTD game mode.",
        "nintendo_limited": "MOTD Nintendo-limited flag.",
        "port_v4": "MOTD IPv4 port.",
        "port_v6": "MOTD IPv6 port.",
        "extra": "MOTD fields after the twelfth (the last one).",
    );
}

type SK = Key<Split>;

/// A split frame's `split` object.
impl Described for Split {
    type Of<'a> = Split;
    fn write(r: &Split, out: &mut Vec<u8>) {
        crate::write_keys!(Split, r, out; 0 1 2);
    }
    const KEYS: &'static [SK] = &[
        SK::new(
            "count",
            Ty::Int,
            "splitPacketCount of each split frame.",
            |s, f| int(s.count, f),
        ),
        SK::new(
            "id",
            Ty::Int,
            "splitPacketId of each split frame.",
            |s, f| int(s.id, f),
        ),
        SK::new(
            "index",
            Ty::Int,
            "splitPacketIndex of each split frame.",
            |s, f| int(s.index, f),
        ),
    ];
}
