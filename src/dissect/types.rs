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
    C2s,
    S2c,
}

impl Dir {
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::C2s => "c2s",
            Dir::S2c => "s2c",
        }
    }

    /// The other direction.
    pub fn reverse(self) -> Dir {
        match self {
            Dir::C2s => Dir::S2c,
            Dir::S2c => Dir::C2s,
        }
    }

    /// 0 for c2s, 1 for s2c: the index of per-direction pairs `[c2s, s2c]`.
    pub fn index(self) -> usize {
        match self {
            Dir::C2s => 0,
            Dir::S2c => 1,
        }
    }
}

/// Every `kind` an [`Anomaly`] has (docs/json.md, "Anomaly kinds"):
/// the dissector's, the mirror's, and the game layer's `fields`.
pub const ANOMALY_KINDS: [&str; 19] = [
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
];

/// Something wrong or notable about a packet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Anomaly {
    pub kind: &'static str,
    pub detail: String,
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
pub enum Detection {
    Handshake,
    Port,
    Heuristic,
}

/// What the table knows of one flow.
#[derive(Debug, Clone)]
pub struct Flow {
    pub id: u32,
    pub client: SocketAddr,
    pub server: SocketAddr,
    /// True once the roles come from a handshake message rather than a guess.
    pub roles_known: bool,
    pub detection: Detection,
    pub protocol: Option<u8>,
    pub mtu: Option<u16>,
    pub client_guid: Option<u64>,
    pub server_guid: Option<u64>,
    pub first_seen: Duration,
    pub last_seen: Duration,
    pub packets: u64,
}

/// The decoded body of a packet.
#[derive(Debug, Clone)]
pub enum Body<'a> {
    /// An offline message; `msg` is `None` when it did not decode.
    Offline { id: u8, msg: Option<Offline<'a>> },
    /// A connected datagram; `None` when not even its header decoded.
    Datagram(Option<Datagram<'a>>),
}

/// One RakNet packet, decoded.
#[derive(Debug, Clone)]
pub struct Packet<'a> {
    pub frame: u64,
    pub ts: Duration,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub flow: u32,
    pub dir: Dir,
    pub body: Body<'a>,
    pub anomalies: Vec<Anomaly>,
    /// The field tree, when tracing.
    pub trace: Option<Trace>,
    pub payload: &'a [u8],
    pub udp_len: usize,
}

impl Packet<'_> {
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
    pub flow: u32,
    /// The direction of the quoted datagram.
    pub dir: Dir,
    pub ts: Duration,
    /// The time lines are counted from (the first datagram's).
    pub since: Duration,
    pub frame: u64,
    /// `port_unreachable`, `fragmentation_needed`, ... ([`crate::capture::IcmpKind`]).
    pub kind: &'static str,
    /// Who sent the error.
    pub from: std::net::IpAddr,
    /// The quoted datagram's endpoints.
    pub src: SocketAddr,
    pub dst: SocketAddr,
    /// The MTU a "fragmentation needed" or "packet too big" states.
    pub mtu: Option<u16>,
}

/// Counters of what was skipped.
#[derive(Debug, Default, Clone, Serialize)]
pub struct DissectStats {
    pub raknet_packets: u64,
    pub not_raknet: u64,
    pub flows: u64,
    pub flows_evicted: u64,
    pub malformed: u64,
}

/// What a run read and what it skipped, over all files (`stats` prints
/// it; the pipeline's warnings say the same in words).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Counted {
    /// Frames read.
    pub frames: u64,
    /// RakNet packets handed out.
    pub raknet_packets: u64,
    /// Frames that were not UDP.
    pub non_udp: u64,
    /// UDP datagrams that were not RakNet.
    pub not_raknet: u64,
    /// Frames of a link type not decoded.
    pub unsupported_link: u64,
    /// IP fragments given up.
    pub fragments_dropped: u64,
    /// Frames with a malformed link, IP or UDP header.
    pub bad_ip: u64,
    /// Packet records too malformed to read.
    pub bad_records: u64,
}
