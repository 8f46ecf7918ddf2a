//! The types every layer above the dissector shares: a packet and its
//! body, its direction, its anomalies, a flow as the table knows it, and
//! what a run counted.

use std::net::SocketAddr;
use std::time::Duration;

use serde::Serialize;

use crate::wire::{Datagram, Offline, Trace, WireError};

/// Which way a packet goes, relative to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    /// Client to server.
    C2s,
    /// Server to client.
    S2c,
}

/// `--dir`'s values, `c2s` and `s2c`, named without a help of their own.
impl clap::ValueEnum for Dir {
    fn value_variants<'a>() -> &'a [Self] {
        &[Dir::C2s, Dir::S2c]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.as_str()))
    }
}

impl Dir {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Dir::C2s => "c2s",
            Dir::S2c => "s2c",
        }
    }

    /// The other direction.
    pub(crate) fn reverse(self) -> Dir {
        match self {
            Dir::C2s => Dir::S2c,
            Dir::S2c => Dir::C2s,
        }
    }

    /// 0 for c2s, 1 for s2c: the index of per-direction pairs `[c2s, s2c]`.
    pub(crate) fn index(self) -> usize {
        match self {
            Dir::C2s => 0,
            Dir::S2c => 1,
        }
    }
}

/// Every `kind` an [`Anomaly`] has (docs/json.md, "Anomaly kinds"):
/// the dissector's, the mirror's, and the game layer's `fields`.
pub const ANOMALY_KINDS: [&str; 24] = [
    "truncated",
    "malformed",
    "trailing_bytes",
    "short_datagram",
    "ack_receipt_on_wire",
    "duplicate",
    "resend",
    "gap",
    "out_of_order",
    "datagram_dropped",
    "stale_sequenced",
    "old_ordered",
    "invalid_channel",
    "split_incomplete",
    "split_arrival_order",
    "nack_of_seen",
    "nack_of_acked",
    "bound_exceeded",
    "fields",
    // NetherNet's (`nethernet::association::Problem`).
    "not_webrtc",
    "undecryptable",
    "checksum",
    "abandoned",
    "framing",
];

/// Something wrong or notable about a packet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Anomaly {
    pub(crate) kind: &'static str,
    pub(crate) detail: String,
}

impl Anomaly {
    pub(crate) fn from_wire(e: &WireError, truncated: bool) -> Anomaly {
        if truncated && e.is_too_short() {
            Anomaly {
                kind: "truncated",
                detail: format!(
                    "cut by the snapshot length at byte {}: {}",
                    e.offset, e.field
                ),
            }
        } else {
            Anomaly {
                kind: "malformed",
                detail: e.to_string(),
            }
        }
    }
}

/// How a flow was recognised as RakNet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Detection {
    Handshake,
    Port,
    Heuristic,
}

/// What the table knows of one flow.
#[derive(Debug, Clone)]
pub(crate) struct Flow {
    pub(crate) id: u32,
    pub(crate) client: SocketAddr,
    pub(crate) server: SocketAddr,
    /// True once the roles come from a handshake message rather than a guess.
    pub(crate) roles_known: bool,
    pub(crate) protocol: Option<u8>,
    pub(crate) mtu: Option<u16>,
    pub(crate) client_guid: Option<u64>,
    pub(crate) server_guid: Option<u64>,
    pub(crate) last_seen: Duration,
    pub(crate) packets: u64,
}

/// The decoded body of a packet.
#[derive(Debug, Clone)]
pub(crate) enum Body<'a> {
    /// An offline message; `msg` is `None` when it did not decode.
    Offline { id: u8, msg: Option<Offline<'a>> },
    /// A connected datagram; `None` when not even its header decoded.
    Datagram(Option<Datagram<'a>>),
}

/// One RakNet packet, decoded.
#[derive(Debug, Clone)]
pub struct Packet<'a> {
    /// Frame number in its capture file, from 1.
    pub frame: u64,
    pub(crate) ts: Duration,
    pub(crate) src: SocketAddr,
    pub(crate) dst: SocketAddr,
    pub(crate) flow: u32,
    pub(crate) dir: Dir,
    pub(crate) body: Body<'a>,
    pub(crate) anomalies: Vec<Anomaly>,
    /// The field tree, when tracing.
    pub trace: Option<Trace>,
    /// The UDP payload, whole.
    pub payload: &'a [u8],
    pub(crate) udp_len: usize,
}

impl Packet<'_> {
    /// `offline`, `data`, `ack` or `nack`.
    pub fn kind(&self) -> &'static str {
        match &self.body {
            Body::Offline { .. } => "offline",
            Body::Datagram(Some(Datagram::Ack(_))) => "ack",
            Body::Datagram(Some(Datagram::Nack(_))) => "nack",
            Body::Datagram(_) => "data",
        }
    }
}

/// An ICMP error quoting a datagram of a RakNet flow: not a packet of the
/// flow, an event of it.
#[derive(Debug, Clone)]
pub struct IcmpNote {
    pub(crate) flow: u32,
    /// The direction of the quoted datagram.
    pub(crate) dir: Dir,
    pub(crate) ts: Duration,
    /// The time lines are counted from (the first datagram's).
    pub(crate) since: Duration,
    pub(crate) frame: u64,
    /// `port_unreachable`, `fragmentation_needed`, ... ([`crate::capture::IcmpKind`]).
    pub(crate) kind: &'static str,
    /// Who sent the error.
    pub(crate) from: std::net::IpAddr,
    /// The quoted datagram's endpoints.
    pub(crate) src: SocketAddr,
    pub(crate) dst: SocketAddr,
    /// The MTU a "fragmentation needed" or "packet too big" states.
    pub(crate) mtu: Option<u16>,
}

/// Counters of what was skipped.
#[derive(Debug, Default, Clone, Serialize)]
pub struct DissectStats {
    pub(crate) raknet_packets: u64,
    pub(crate) not_raknet: u64,
    pub(crate) flows: u64,
    pub(crate) flows_evicted: u64,
    pub(crate) malformed: u64,
}

/// What a run read and what it skipped, over all files (`stats` prints
/// it; the pipeline's warnings say the same in words).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Counted {
    /// Frames read.
    pub(crate) frames: u64,
    /// RakNet packets handed out.
    pub(crate) raknet_packets: u64,
    /// Frames that were not UDP.
    pub(crate) non_udp: u64,
    /// UDP datagrams that were not RakNet.
    pub(crate) not_raknet: u64,
    /// Frames of a link type not decoded.
    pub(crate) unsupported_link: u64,
    /// IP fragments given up.
    pub(crate) fragments_dropped: u64,
    /// Frames with a malformed link, IP or UDP header.
    pub(crate) bad_ip: u64,
    /// Packet records too malformed to read.
    pub(crate) bad_records: u64,
}
