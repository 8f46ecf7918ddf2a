//! The `packet` record of a NetherNet datagram (`read`): a UDP datagram of
//! a NetherNet conversation, with what it held: a STUN check, DTLS records
//! (the handshake in the clear; the rest opened with a key log), the SCTP
//! chunks inside, and what they did (a channel opened, an alert).
//!
//! Its keys shared with a RakNet `packet` record (`type` ... `len`,
//! `anomalies`) are read by the same names, so that one filter compiled
//! for `read` reads both (`display::fields`).

use std::net::SocketAddr;
use std::time::Duration;

use super::packet::{Ends, Ip, Udp};
use super::value::{int, visit_addr};
use super::{object, Closed, Described, Key, Ty, Value, FLOW_DOC, TYPE_DOC};
use crate::dissect::{Anomaly, Dir};
use crate::nethernet::association::{ChunkSeen, Event, RecordSeen};
use crate::nethernet::conversations::Seen;
use crate::nethernet::lan::{LanSeen, ServerData};
use crate::nethernet::signaling::{HttpSeen, IdentitySeen};
use crate::nethernet::{dtls, sctp, stun};

/// A STUN message, as a datagram's record shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StunSeen {
    /// Request, indication, success or error response.
    pub class: stun::Class,
    /// USERNAME, when it has one.
    pub username: Option<String>,
    /// Whether it nominates the pair.
    pub use_candidate: bool,
    /// Whether FINGERPRINT holds (`None` without one).
    pub fingerprint_ok: Option<bool>,
    /// Whether MESSAGE-INTEGRITY verifies with the SDP's ice-pwd (`None`
    /// without one, or without the signaling).
    pub integrity_ok: Option<bool>,
    /// An error response's ERROR-CODE: code and reason phrase.
    pub error: Option<(u16, String)>,
}

/// A NetherNet datagram and what it held, owned (printed on another
/// thread than the one that read it).
#[derive(Debug, Clone)]
pub struct NethernetPacket {
    /// Its frame number.
    pub frame: u64,
    /// Its capture time.
    pub ts: Duration,
    /// Its sender.
    pub src: SocketAddr,
    /// Its receiver.
    pub dst: SocketAddr,
    /// Its conversation's flow id.
    pub flow: u32,
    /// `c2s` when the server received it.
    pub dir: Dir,
    /// UDP payload bytes.
    pub len: usize,
    /// `stun`, `dtls`, or `other` (neither: an anomaly says what).
    pub kind: &'static str,
    /// The STUN message.
    pub stun: Option<StunSeen>,
    /// The DTLS records, in order.
    pub records: Vec<RecordSeen>,
    /// The SCTP chunks of the records opened, in order.
    pub chunks: Vec<ChunkSeen>,
    /// Data channels it opened (DCEP), by label.
    pub opened: Vec<String>,
    /// Alerts it carried: `(level, description)` when read.
    pub alerts: Vec<Option<(u8, u8)>>,
    /// A signaling segment: the HTTP messages it completed.
    pub http: Vec<HttpSeen>,
    /// What was wrong with it.
    pub anomalies: Vec<Anomaly>,
    /// Its payload, kept when `-V`, `-x` or `-w` wants it.
    pub bytes: Option<Vec<u8>>,
    /// A signaling segment's TCP sequence number and flags (for `-w`).
    pub tcp: Option<crate::capture::TcpSegment>,
    /// The key-log line that opened its association, on the datagram
    /// whose handshake message made it usable (`-w` writes it first, as a
    /// pcapng Decryption Secrets Block).
    pub secret: Option<String>,
    /// DATA chunks it carried that their receiver had already seen.
    pub resent: u32,
    /// A LAN discovery datagram (UDP 7551): what it said.
    pub lan: Option<LanSeen>,
}

impl NethernetPacket {
    /// A datagram of flow `flow` going `dir` that held nothing yet.
    pub(crate) fn empty(
        (frame, ts): (u64, Duration),
        (src, dst): (SocketAddr, SocketAddr),
        (flow, dir): (u32, Dir),
        len: usize,
        kind: &'static str,
    ) -> Self {
        NethernetPacket {
            frame,
            ts,
            src,
            dst,
            flow,
            dir,
            len,
            kind,
            stun: None,
            records: Vec::new(),
            chunks: Vec::new(),
            opened: Vec::new(),
            alerts: Vec::new(),
            http: Vec::new(),
            anomalies: Vec::new(),
            bytes: None,
            tcp: None,
            secret: None,
            resent: 0,
            lan: None,
        }
    }

    /// What `seen` (a datagram of `len` bytes from `src` to `dst`) held.
    pub fn new(
        seen: &Seen<'_>,
        (frame, ts): (u64, Duration),
        (src, dst): (SocketAddr, SocketAddr),
        len: usize,
    ) -> Self {
        let c = seen.conversation;
        let dir = if src == c.client() {
            Dir::C2s
        } else {
            Dir::S2c
        };
        let mut p = NethernetPacket::empty((frame, ts), (src, dst), (c.id, dir), len, "other");
        for e in seen.events {
            match e {
                Event::Stun {
                    class,
                    username,
                    use_candidate,
                    fingerprint_ok,
                    integrity_ok,
                    error,
                } => {
                    p.kind = "stun";
                    p.stun = Some(StunSeen {
                        class: *class,
                        username: username.clone(),
                        use_candidate: *use_candidate,
                        fingerprint_ok: *fingerprint_ok,
                        integrity_ok: *integrity_ok,
                        error: error.clone(),
                    });
                }
                Event::Record(r) => {
                    p.kind = "dtls";
                    p.records.push(r.clone());
                }
                Event::Chunks(c) => p.chunks.extend_from_slice(c),
                Event::ChannelOpen(ch) => p.opened.push(ch.label.clone()),
                Event::Alert { alert, .. } => p.alerts.push(*alert),
                Event::Keyed(line) => p.secret = Some(line.clone()),
                Event::Resent(_) => p.resent += 1,
                Event::Anomaly { kind, detail } => p.anomalies.push(Anomaly {
                    kind: kind.as_str(),
                    detail: detail.clone(),
                }),
                _ => {}
            }
        }
        p
    }
}

impl NethernetPacket {
    /// A LAN discovery datagram (UDP 7551) of flow `flow`, `dir`, that
    /// opened with the LAN key: what it said, or why it did not read.
    pub fn lan(
        (frame, ts): (u64, Duration),
        (src, dst): (SocketAddr, SocketAddr),
        (flow, dir): (u32, Dir),
        len: usize,
        read: Result<&crate::nethernet::lan::Lan, crate::nethernet::lan::LanError>,
    ) -> Self {
        let mut p = NethernetPacket::empty((frame, ts), (src, dst), (flow, dir), len, "lan");
        match read {
            Ok(l) => p.lan = Some(LanSeen::of(l)),
            Err(e) => p.anomalies.push(Anomaly {
                kind: "malformed",
                detail: format!("LAN discovery: {e}"),
            }),
        }
        if let Some(e) = p.lan.as_ref().and_then(|l| l.error.clone()) {
            p.anomalies.push(Anomaly {
                kind: "malformed",
                detail: format!("LAN discovery response: {e}"),
            });
        }
        p
    }

    /// A TCP segment of the signaling (`seen`), of `len` payload bytes
    /// from `src` to `dst`.
    pub fn signaling(
        seen: &crate::nethernet::signaling::Seen<'_>,
        (frame, ts): (u64, Duration),
        (src, dst): (SocketAddr, SocketAddr),
        len: usize,
    ) -> Self {
        use crate::capture::tcp::Note;
        use crate::nethernet::signaling::Event as S;
        let c = seen.connection;
        let dir = if src == c.client { Dir::C2s } else { Dir::S2c };
        let mut p = NethernetPacket::empty((frame, ts), (src, dst), (c.id, dir), len, "http");
        for e in seen.events {
            let (kind, detail) = match e {
                S::Http { message, .. } => {
                    p.http.push((**message).clone());
                    continue;
                }
                S::Tcp(Note::Retransmission { offset, len }) => (
                    "duplicate",
                    format!("TCP: {len} bytes at stream offset {offset} sent again"),
                ),
                S::Tcp(Note::Overlap { offset, old }) => (
                    "duplicate",
                    format!("TCP: {old} bytes at stream offset {offset} sent again, with new ones"),
                ),
                S::Tcp(Note::OutOfOrder { offset, missing }) => (
                    "out_of_order",
                    format!("TCP: {missing} bytes before stream offset {offset} missing yet"),
                ),
                S::Tcp(Note::Gap { offset, missing }) => (
                    "gap",
                    format!("TCP: {missing} bytes at stream offset {offset} never seen"),
                ),
                S::Malformed(why) => ("malformed", format!("HTTP: {why}")),
            };
            p.anomalies.push(Anomaly { kind, detail });
        }
        p
    }
}

/// What a NetherNet `packet` record is made from.
pub struct NethernetRecord<'a> {
    /// The datagram.
    pub packet: &'a NethernetPacket,
    /// The capture file, when several are read.
    pub file: Option<&'a str>,
}

keyed!(NethernetRecord);

type K = Key<NethernetRecord<'static>>;

impl Described for NethernetRecord<'static> {
    type Of<'a> = NethernetRecord<'a>;
    const KEYS: &'static [K] = &[
        K::new("type", Ty::Str, TYPE_DOC, |_, f| f(Value::Str("packet"))).closed(Closed::RecordType),
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
            "tshark's IP fields (`ip.src`, ...); as a test: always there.",
            |r, f| object::<Ip>(&Ends::of(r.packet.src, r.packet.dst), f),
        )
        .filter_only()
        .nested::<Ip>(),
        K::new(
            "udp",
            Ty::Object,
            "tshark's UDP fields of a NetherNet datagram (`udp.port`, ...); as a test: a datagram, not a signaling segment.",
            |r, f| {
                r.packet.kind != "http" && object::<Udp>(&Ends::of(r.packet.src, r.packet.dst), f)
            },
        )
        .present(|r| r.packet.kind != "http")
        .filter_only()
        .nested::<Udp>(),
        K::new(
            "tcp",
            Ty::Object,
            "tshark's TCP fields of a signaling segment (`tcp.port`, `tcp.srcport`, `tcp.dstport`); as a test: a signaling segment.",
            |r, f| {
                r.packet.kind == "http" && object::<Udp>(&Ends::of(r.packet.src, r.packet.dst), f)
            },
        )
        .present(|r| r.packet.kind == "http")
        .filter_only()
        .nested::<Udp>(),
        K::new("flow", Ty::Int, FLOW_DOC, |r, f| int(r.packet.flow, f)),
        K::new(
            "transport",
            Ty::Str,
            "The transport: \"raknet\" or \"nethernet\".",
            |_, f| f(Value::Str("nethernet")),
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
            |r, f| f(Value::Str(r.packet.kind)),
        )
        .closed(Closed::Kind),
        K::new("len", Ty::Int, "UDP payload bytes.", |r, f| {
            int(r.packet.len as u64, f)
        }),
        K::new(
            "stun",
            Ty::Object,
            "NetherNet: the STUN message (an ICE check), {class, username, use_candidate, fingerprint_ok, integrity_ok, error_code, error_reason}.",
            |r, f| r.packet.stun.as_ref().is_some_and(|s| object::<StunSeen>(s, f)),
        )
        .skip()
        .nested::<StunSeen>(),
        K::new(
            "dtls",
            Ty::Object,
            "NetherNet: the datagram's DTLS records, in order.",
            |r, f| r.packet.records.iter().any(|x| object::<RecordSeen>(x, f)),
        )
        .present(|r| !r.packet.records.is_empty())
        .nested::<RecordSeen>(),
        K::new(
            "sctp",
            Ty::Object,
            "NetherNet: the SCTP chunks of the records opened, in order.",
            |r, f| r.packet.chunks.iter().any(|c| object::<ChunkSeen>(c, f)),
        )
        .present(|r| !r.packet.chunks.is_empty())
        .nested::<ChunkSeen>(),
        K::new(
            "channels_opened",
            Ty::Str,
            "NetherNet: the data channels DCEP opened in it, by label.",
            |r, f| r.packet.opened.iter().any(|l| f(Value::Str(l))),
        )
        .present(|r| !r.packet.opened.is_empty()),
        K::new(
            "alerts",
            Ty::Str,
            "NetherNet: the DTLS alerts it carried (\"encrypted\" when not read).",
            |r, f| {
                r.packet.alerts.iter().any(|a| match a {
                    Some((_, d)) => f(Value::Str(dtls::alert_name(*d))),
                    None => f(Value::Str("encrypted")),
                })
            },
        )
        .present(|r| !r.packet.alerts.is_empty()),
        K::new(
            "http",
            Ty::Object,
            "NetherNet's signaling: the HTTP messages the segment completed.",
            |r, f| r.packet.http.iter().any(|h| object::<HttpSeen>(h, f)),
        )
        .present(|r| !r.packet.http.is_empty())
        .nested::<HttpSeen>(),
        K::new(
            "lan",
            Ty::Object,
            "NetherNet's LAN discovery (UDP 7551): the request, response or signal the datagram carried.",
            |r, f| r.packet.lan.as_ref().is_some_and(|l| object::<LanSeen>(l, f)),
        )
        .skip()
        .nested::<LanSeen>(),
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

type HK = Key<HttpSeen>;

impl Described for HttpSeen {
    type Of<'a> = HttpSeen;
    const KEYS: &'static [HK] = &[
        HK::new(
            "method",
            Ty::Str,
            "A request's method (GET, POST).",
            |h, f| h.method.as_deref().is_some_and(|v| f(Value::Str(v))),
        )
        .skip(),
        HK::new(
            "target",
            Ty::Str,
            "A request's target (/v1/join, /v1/join/NETWORK_ID).",
            |h, f| h.target.as_deref().is_some_and(|v| f(Value::Str(v))),
        )
        .skip(),
        HK::new("status", Ty::Int, "A response's status code.", |h, f| {
            h.status.is_some_and(|v| int(v, f))
        })
        .skip(),
        HK::new("reason", Ty::Str, "A response's reason phrase.", |h, f| {
            h.reason.as_deref().is_some_and(|v| f(Value::Str(v)))
        })
        .skip(),
        HK::new("content_type", Ty::Str, "Its Content-Type.", |h, f| {
            h.content_type.as_deref().is_some_and(|v| f(Value::Str(v)))
        })
        .skip(),
        HK::new("body_len", Ty::Int, "Its body's bytes.", |h, f| {
            int(h.body_len as u64, f)
        }),
        HK::new(
            "ice_ufrag",
            Ty::Str,
            "An SDP body's ICE username fragment (the STUN checks' USERNAME has it).",
            |h, f| h.ice_ufrag.as_deref().is_some_and(|v| f(Value::Str(v))),
        )
        .skip(),
        HK::new(
            "candidates",
            Ty::Str,
            "An SDP body's ICE candidates, \"ip:port\".",
            |h, f| h.candidates.iter().any(|c| f(Value::Str(c))),
        )
        .present(|h| !h.candidates.is_empty()),
        HK::new(
            "ice_pwd",
            Ty::Str,
            "An SDP body's ICE password (MESSAGE-INTEGRITY of the checks sent to its sender is keyed with it).",
            |h, f| h.ice_pwd.as_deref().is_some_and(|v| f(Value::Str(v))),
        )
        .skip(),
        HK::new(
            "fingerprint",
            Ty::Str,
            "An SDP body's a=fingerprint:sha-256, upper case: the certificate its sender's DTLS must show.",
            |h, f| h.fingerprint.as_deref().is_some_and(|v| f(Value::Str(v))),
        )
        .skip(),
        HK::new(
            "identity",
            Ty::Object,
            "An SDP body's a=identity: who it names and whether its signatures verify.",
            |h, f| h.identity.as_ref().is_some_and(|i| object::<IdentitySeen>(i, f)),
        )
        .skip()
        .nested::<IdentitySeen>(),
        HK::new(
            "body",
            Ty::Str,
            "Its body, when it is text of at most 64 KiB (the status JSON, the SDP).",
            |h, f| h.body.as_deref().is_some_and(|v| f(Value::Str(v))),
        )
        .skip(),
    ];
}

type LK = Key<LanSeen>;

impl Described for LanSeen {
    type Of<'a> = LanSeen;
    const KEYS: &'static [LK] = &[
        LK::new(
            "packet",
            Ty::Str,
            "request (a client looking for worlds), response (a world's card) or message (a signal); other for an id not known.",
            |l, f| f(Value::Str(l.packet)),
        ),
        LK::new("sender", Ty::Str, "The sender's network id (a string: ids pass 2^53).", |l, f| {
            f(Value::Str(&l.sender))
        }),
        LK::new("recipient", Ty::Str, "A message's recipient network id.", |l, f| {
            l.recipient.as_deref().is_some_and(|v| f(Value::Str(v)))
        })
        .skip(),
        LK::new(
            "signal",
            Ty::Str,
            "A message's signal: CONNECTREQUEST (an SDP offer), CONNECTRESPONSE (the answer), CANDIDATEADD, CONNECTERROR.",
            |l, f| l.signal.as_deref().is_some_and(|v| f(Value::Str(v))),
        )
        .skip(),
        LK::new("connection", Ty::Str, "A message's connection id.", |l, f| {
            l.connection.as_deref().is_some_and(|v| f(Value::Str(v)))
        })
        .skip(),
        LK::new(
            "data",
            Ty::Str,
            "A message's data: the SDP, the ICE candidate, the error code.",
            |l, f| l.data.as_deref().is_some_and(|v| f(Value::Str(v))),
        )
        .skip(),
        LK::new(
            "ice_ufrag",
            Ty::Str,
            "An SDP signal's ICE username fragment (the STUN checks' USERNAME has it).",
            |l, f| l.ice_ufrag.as_deref().is_some_and(|v| f(Value::Str(v))),
        )
        .skip(),
        LK::new(
            "server_data",
            Ty::Object,
            "A response's world card (go-nethernet's layouts, versions 4 to 6).",
            |l, f| l.server_data.as_ref().is_some_and(|d| object::<ServerData>(d, f)),
        )
        .skip()
        .nested::<ServerData>(),
        LK::new("error", Ty::Str, "Why a response's server data did not read.", |l, f| {
            l.error.as_deref().is_some_and(|v| f(Value::Str(v)))
        })
        .skip(),
    ];
}

type WK = Key<ServerData>;

impl Described for ServerData {
    type Of<'a> = ServerData;
    const KEYS: &'static [WK] = &[
        WK::new(
            "version",
            Ty::Int,
            "The layout's version: 4, 5 or 6.",
            |d, f| int(d.version, f),
        ),
        WK::new(
            "server_name",
            Ty::Str,
            "The host's name, under the level's on the card.",
            |d, f| f(Value::Str(&d.server_name)),
        ),
        WK::new("level_name", Ty::Str, "The world's name.", |d, f| {
            f(Value::Str(&d.level_name))
        }),
        WK::new(
            "game_type",
            Ty::Int,
            "The default game mode (0 survival, 1 creative, 2 adventure).",
            |d, f| int(d.game_type, f),
        ),
        WK::new("player_count", Ty::Int, "Players in the world.", |d, f| {
            int(d.player_count, f)
        }),
        WK::new(
            "max_player_count",
            Ty::Int,
            "Players it takes at most.",
            |d, f| int(d.max_player_count, f),
        ),
        WK::new("editor_world", Ty::Bool, "Made in Editor Mode.", |d, f| {
            f(Value::Bool(d.editor_world))
        }),
        WK::new("hardcore", Ty::Bool, "Hardcore.", |d, f| {
            f(Value::Bool(d.hardcore))
        }),
        WK::new(
            "accepts_online_auth",
            Ty::Bool,
            "Versions 5 and 6: whether it takes Xbox-signed logins.",
            |d, f| d.accepts_online_auth.is_some_and(|b| f(Value::Bool(b))),
        )
        .skip(),
        WK::new(
            "accepts_self_signed_auth",
            Ty::Bool,
            "Versions 5 and 6: whether it takes self-signed logins.",
            |d, f| {
                d.accepts_self_signed_auth
                    .is_some_and(|b| f(Value::Bool(b)))
            },
        )
        .skip(),
        WK::new("nonce", Ty::Str, "Version 6: its nonce.", |d, f| {
            d.nonce.as_deref().is_some_and(|v| f(Value::Str(v)))
        })
        .skip(),
        WK::new(
            "transport_layer",
            Ty::Int,
            "The transport (2: NetherNet).",
            |d, f| int(d.transport_layer, f),
        ),
        WK::new(
            "connection_type",
            Ty::Int,
            "The connection type (4: LAN signaling).",
            |d, f| int(d.connection_type, f),
        ),
    ];
}

type IK = Key<IdentitySeen>;

impl Described for IdentitySeen {
    type Of<'a> = IdentitySeen;
    const KEYS: &'static [IK] = &[
        IK::new("domain", Ty::Str, "idp.domain: the auth service's, or self (an operator's).", |i, f| {
            i.domain.as_deref().is_some_and(|v| f(Value::Str(v)))
        })
        .skip(),
        IK::new("xuid", Ty::Str, "The token's xid claim: the player's XUID.", |i, f| {
            i.xuid.as_deref().is_some_and(|v| f(Value::Str(v)))
        })
        .skip(),
        IK::new("name", Ty::Str, "The token's xname claim: the player's display name.", |i, f| {
            i.name.as_deref().is_some_and(|v| f(Value::Str(v)))
        })
        .skip(),
        IK::new("pfid", Ty::Str, "The token's pfid claim: the PlayFab id.", |i, f| {
            i.pfid.as_deref().is_some_and(|v| f(Value::Str(v)))
        })
        .skip(),
        IK::new("cpk", Ty::Bool, "Whether the token names a cpk, the fingerprints' signing key.", |i, f| {
            f(Value::Bool(i.cpk))
        }),
        IK::new(
            "fingerprints_verify",
            Ty::Bool,
            "Whether the fingerprints JWS verifies with the cpk over the SDP's a=fingerprint lines; absent without a usable cpk.",
            |i, f| i.fingerprints_verify.is_some_and(|b| f(Value::Bool(b))),
        )
        .skip(),
        IK::new(
            "self_signed",
            Ty::Bool,
            "Whether the token verifies with its own cpk (an operator's, an offline player's; the auth service's key is not in a capture).",
            |i, f| i.self_signed.is_some_and(|b| f(Value::Bool(b))),
        )
        .skip(),
        IK::new("error", Ty::Str, "Why the assertion was not read, when it was not.", |i, f| {
            i.error.as_deref().is_some_and(|v| f(Value::Str(v)))
        })
        .skip(),
    ];
}

type SK = Key<StunSeen>;

impl Described for StunSeen {
    type Of<'a> = StunSeen;
    const KEYS: &'static [SK] = &[
        SK::new(
            "class",
            Ty::Str,
            "request, indication, success response or error response.",
            |s, f| f(Value::Str(s.class.as_str())),
        ),
        SK::new(
            "username",
            Ty::Str,
            "USERNAME: the receiver's ICE ufrag, a colon, the sender's.",
            |s, f| s.username.as_deref().is_some_and(|u| f(Value::Str(u))),
        )
        .skip(),
        SK::new(
            "use_candidate",
            Ty::Bool,
            "Whether it nominates the candidate pair (USE-CANDIDATE).",
            |s, f| f(Value::Bool(s.use_candidate)),
        ),
        SK::new(
            "fingerprint_ok",
            Ty::Bool,
            "Whether its FINGERPRINT holds; absent without one.",
            |s, f| s.fingerprint_ok.is_some_and(|b| f(Value::Bool(b))),
        )
        .skip(),
        SK::new(
            "integrity_ok",
            Ty::Bool,
            "Whether its MESSAGE-INTEGRITY verifies with the ice-pwd of the SDP of its key's owner (a request's receiver, a response's sender); absent without one or without that SDP.",
            |s, f| s.integrity_ok.is_some_and(|b| f(Value::Bool(b))),
        )
        .skip(),
        SK::new(
            "error_code",
            Ty::Int,
            "An error response's ERROR-CODE (401: Unauthorized, the credentials; 487: role conflict).",
            |s, f| s.error.as_ref().is_some_and(|(c, _)| int(*c, f)),
        )
        .skip(),
        SK::new(
            "error_reason",
            Ty::Str,
            "An error response's reason phrase.",
            |s, f| s.error.as_ref().is_some_and(|(_, r)| f(Value::Str(r))),
        )
        .skip(),
    ];
}

type RK = Key<RecordSeen>;

impl Described for RecordSeen {
    type Of<'a> = RecordSeen;
    const KEYS: &'static [RK] = &[
        RK::new(
            "content",
            Ty::Str,
            "The record's content type: handshake, change_cipher_spec, alert or application_data.",
            |r, f| f(Value::Str(dtls::content_name(r.content))),
        ),
        RK::new("epoch", Ty::Int, "Its epoch: 0 in the clear.", |r, f| {
            int(r.epoch, f)
        }),
        RK::new(
            "seq",
            Ty::Int,
            "Its sequence number within the epoch.",
            |r, f| int(r.seq, f),
        ),
        RK::new(
            "len",
            Ty::Int,
            "Its length (sealed, from epoch 1).",
            |r, f| int(r.len as u64, f),
        ),
        RK::new(
            "opened",
            Ty::Bool,
            "Whether it was read: in the clear, or opened with the key log.",
            |r, f| f(Value::Bool(r.opened)),
        ),
        RK::new(
            "handshake",
            Ty::Str,
            "A handshake record in the clear: the messages it holds (client_hello, certificate, ...).",
            |r, f| {
                r.handshakes
                    .iter()
                    .any(|&k| f(Value::Str(dtls::handshake_name(k))))
            },
        )
        .present(|r| !r.handshakes.is_empty()),
    ];
}

type CK = Key<ChunkSeen>;

impl Described for ChunkSeen {
    type Of<'a> = ChunkSeen;
    const KEYS: &'static [CK] = &[
        CK::new(
            "chunk",
            Ty::Str,
            "The chunk type: DATA, I_DATA, SACK, INIT, FORWARD_TSN, ...",
            |c, f| f(Value::Str(sctp::chunk_name(c.kind))),
        ),
        CK::new("tsn", Ty::Int, "DATA, I-DATA: its TSN.", |c, f| {
            c.tsn.is_some_and(|v| int(v, f))
        })
        .skip(),
        CK::new("stream", Ty::Int, "DATA, I-DATA: its stream.", |c, f| {
            c.stream.is_some_and(|v| int(v, f))
        })
        .skip(),
        CK::new(
            "message",
            Ty::Int,
            "DATA: its stream sequence number; I-DATA: its message id.",
            |c, f| c.message.is_some_and(|v| int(v, f)),
        )
        .skip(),
        CK::new(
            "ppid",
            Ty::Int,
            "DATA, I-DATA: its payload protocol identifier (50 DCEP, 53 binary).",
            |c, f| c.ppid.is_some_and(|v| int(v, f)),
        )
        .skip(),
        CK::new(
            "len",
            Ty::Int,
            "DATA, I-DATA: its payload's bytes.",
            |c, f| c.len.is_some_and(|v| int(v as u64, f)),
        )
        .skip(),
        CK::new(
            "cumulative_tsn",
            Ty::Int,
            "SACK, FORWARD-TSN, SHUTDOWN: the cumulative TSN.",
            |c, f| c.cumulative_tsn.is_some_and(|v| int(v, f)),
        )
        .skip(),
        CK::new("gaps", Ty::Int, "SACK: its gap blocks.", |c, f| {
            c.gaps.is_some_and(|v| int(v as u64, f))
        })
        .skip(),
        CK::new(
            "duplicates",
            Ty::Int,
            "SACK: the duplicate TSNs it reports.",
            |c, f| c.duplicates.is_some_and(|v| int(v as u64, f)),
        )
        .skip(),
    ];
}

/// One direction of a NetherNet flow, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NethernetDir {
    /// UDP datagrams sent this way.
    pub packets: u64,
    /// Their payload bytes.
    pub bytes: u64,
    /// STUN messages sent.
    pub stun: u64,
    /// DTLS records sent.
    pub dtls_records: u64,
    /// Of those, after the handshake (sealed).
    pub encrypted: u64,
    /// Of those, opened with the key log.
    pub decrypted: u64,
    /// SCTP packets in them.
    pub sctp_packets: u64,
    /// DATA chunks sent again.
    pub resends: u64,
    /// Data-channel messages delivered to the receiver's application.
    pub messages: u64,
    /// NetherNet batches delivered to it.
    pub batches: u64,
}

/// A NetherNet flow as it stands: what its `flow` record shows, owned.
#[derive(Debug, Clone)]
pub struct NethernetFlow {
    /// Its flow id.
    pub id: u32,
    /// The client: the side that opened the data channels, else the one
    /// that sent the first datagram.
    pub client: SocketAddr,
    /// The other side.
    pub server: SocketAddr,
    /// Its first datagram's time.
    pub first_ts: Duration,
    /// Its last one's.
    pub last_ts: Duration,
    /// How far it got, in the words of RakNet flows' `state`.
    pub state: &'static str,
    /// The DTLS client's address.
    pub dtls_client: Option<SocketAddr>,
    /// The cipher suite the ServerHello chose.
    pub suite: Option<u16>,
    /// The DTLS version it chose.
    pub version: Option<u16>,
    /// Whether the key log opened its records.
    pub decrypted: bool,
    /// The data channels DCEP opened, by label, in stream order.
    pub channels: Vec<String>,
    /// `[c2s, s2c]`.
    pub dirs: [NethernetDir; 2],
    /// RTT samples from SCTP's SACKs, both ways.
    pub rtt: Option<super::flow::Rtt>,
}

impl NethernetFlow {
    /// Conversation `c` as it stands.
    pub fn of(c: &crate::nethernet::conversations::Conversation) -> Self {
        let a = &c.association;
        let (client, server) = (c.client(), c.server());
        let count = |sender: SocketAddr| {
            let sent = a.counts.get(&sender).copied().unwrap_or_default();
            let receiver = if sender == client { server } else { client };
            let got = a.counts.get(&receiver).copied().unwrap_or_default();
            let side = usize::from(sender != c.first_sender);
            NethernetDir {
                packets: c.datagrams[side],
                bytes: c.bytes[side],
                stun: sent.stun,
                dtls_records: sent.dtls_records,
                encrypted: sent.encrypted,
                decrypted: sent.decrypted,
                sctp_packets: sent.sctp_packets,
                resends: sent.retransmitted,
                messages: got.messages,
                batches: got.batches,
            }
        };
        let dirs = [count(client), count(server)];
        let up = dirs.iter().all(|d| d.encrypted > 0);
        let state = match a.closed_by {
            Some(by) if by == client => "disconnected_by_client",
            Some(_) => "disconnected_by_server",
            None if up => "connected",
            None if dirs.iter().any(|d| d.dtls_records > 0) => "handshake",
            None => "unconnected",
        };
        NethernetFlow {
            id: c.id,
            client,
            server,
            first_ts: c.first_ts,
            last_ts: c.last_ts,
            state,
            dtls_client: a.dtls_client,
            suite: a.suite,
            version: a.version,
            decrypted: a.decrypts(),
            channels: a.channels.values().map(|ch| ch.label.clone()).collect(),
            dirs,
            rtt: c.rtt.summary().map(super::flow::Rtt::of),
        }
    }
}

/// What a NetherNet `flow` record is made from.
pub struct NethernetFlowRecord<'a> {
    /// The flow.
    pub flow: &'a NethernetFlow,
    /// Its game session.
    pub game: Option<&'a crate::bedrock::GameSummary>,
    /// The capture file (`--separate`).
    pub file: Option<&'a str>,
}

keyed!(NethernetFlowRecord);

type FK = Key<NethernetFlowRecord<'static>>;

impl Described for NethernetFlowRecord<'static> {
    type Of<'a> = NethernetFlowRecord<'a>;
    const KEYS: &'static [FK] = &[
        FK::new("type", Ty::Str, TYPE_DOC, |_, f| f(Value::Str("flow"))).closed(Closed::RecordType),
        FK::new(
            "file",
            Ty::Str,
            "The capture file, in a --separate run of several.",
            |r, f| r.file.is_some_and(|n| f(Value::Str(n))),
        )
        .skip(),
        FK::new("flow", Ty::Int, FLOW_DOC, |r, f| int(r.flow.id, f)),
        FK::new(
            "transport",
            Ty::Str,
            "The transport: \"raknet\" or \"nethernet\".",
            |_, f| f(Value::Str("nethernet")),
        ),
        FK::new(
            "client",
            Ty::Str,
            "The client's address, \"ip:port\".",
            |r, f| visit_addr(r.flow.client, f),
        ),
        FK::new(
            "server",
            Ty::Str,
            "The server's address, \"ip:port\".",
            |r, f| visit_addr(r.flow.server, f),
        ),
        FK::new(
            "state",
            Ty::Str,
            "unconnected, handshake, connected, disconnected_by_client or disconnected_by_server.",
            |r, f| f(Value::Str(r.flow.state)),
        ),
        FK::new(
            "first_ts",
            Ty::Float,
            "Time of the flow's first packet, seconds since the Unix epoch.",
            |r, f| f(Value::Float(r.flow.first_ts.as_secs_f64())),
        ),
        FK::new("last_ts", Ty::Float, "Time of its last packet.", |r, f| {
            f(Value::Float(r.flow.last_ts.as_secs_f64()))
        }),
        FK::new(
            "duration",
            Ty::Float,
            "Seconds, last_ts - first_ts.",
            |r, f| {
                let d = r.flow.last_ts.saturating_sub(r.flow.first_ts);
                f(Value::Float(d.as_secs_f64()))
            },
        ),
        FK::new(
            "dtls",
            Ty::Object,
            "NetherNet: the DTLS association, {client, suite, decrypted}.",
            |r, f| object::<NethernetFlow>(r.flow, f),
        )
        .nested::<NethernetFlow>(),
        FK::new(
            "channels",
            Ty::Str,
            "NetherNet: the data channels opened, by label.",
            |r, f| r.flow.channels.iter().any(|l| f(Value::Str(l))),
        )
        .many(),
        FK::new(
            "c2s",
            Ty::Object,
            "Counts of the client-to-server direction (the keys below, as c2s.KEY).",
            |r, f| object::<NethernetDir>(&r.flow.dirs[0], f),
        )
        .nested::<NethernetDir>(),
        FK::new(
            "s2c",
            Ty::Object,
            "Counts of the server-to-client direction (as s2c.KEY).",
            |r, f| object::<NethernetDir>(&r.flow.dirs[1], f),
        )
        .nested::<NethernetDir>(),
        FK::new(
            "rtt_ms",
            Ty::Object,
            "RTT samples, from a DATA chunk's first sending to the first SACK from the other side covering it (Karn: none for a chunk sent twice), both ways: null when none.",
            |r, f| {
                r.flow
                    .rtt
                    .as_ref()
                    .is_some_and(|t| object::<super::flow::Rtt>(t, f))
            },
        )
        .or_null()
        .nested::<super::flow::Rtt>(),
        FK::new(
            "game",
            Ty::Object,
            "Bedrock: the flow's game session.",
            |r, f| {
                r.game
                    .is_some_and(|g| object::<crate::bedrock::GameSummary>(g, f))
            },
        )
        .nested::<crate::bedrock::GameSummary>()
        .skip(),
    ];
}

type DK = Key<NethernetFlow>;

/// A NetherNet flow's `dtls` object.
impl Described for NethernetFlow {
    type Of<'a> = NethernetFlow;
    const KEYS: &'static [DK] = &[
        DK::new(
            "client",
            Ty::Str,
            "The DTLS client's address (the side that sent the ClientHello).",
            |r, f| r.dtls_client.is_some_and(|a| visit_addr(a, f)),
        )
        .or_null(),
        DK::new(
            "version",
            Ty::Str,
            "The DTLS version the ServerHello chose (DTLS 1.2, DTLS 1.3: from its supported_versions).",
            |r, f| r.version.is_some_and(|v| f(Value::Str(dtls::version_name(v)))),
        )
        .or_null(),
        DK::new(
            "suite",
            Ty::Str,
            "The cipher suite the ServerHello chose (TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, ...).",
            |r, f| {
                r.suite
                    .is_some_and(|s| f(Value::Str(dtls::suite_name(s).unwrap_or("unknown"))))
            },
        )
        .or_null(),
        DK::new(
            "decrypted",
            Ty::Bool,
            "Whether the key log opened its records.",
            |r, f| f(Value::Bool(r.decrypted)),
        ),
    ];
}

type NK = Key<NethernetDir>;

/// One direction's counts of a NetherNet flow.
impl Described for NethernetDir {
    type Of<'a> = NethernetDir;
    const KEYS: &'static [NK] = &[
        NK::new(
            "packets",
            Ty::Int,
            "UDP datagrams sent this way.",
            |d, f| int(d.packets, f),
        ),
        NK::new("bytes", Ty::Int, "Their UDP payload bytes.", |d, f| {
            int(d.bytes, f)
        }),
        NK::new("stun", Ty::Int, "NetherNet: STUN messages sent.", |d, f| {
            int(d.stun, f)
        }),
        NK::new(
            "dtls_records",
            Ty::Int,
            "NetherNet: DTLS records sent.",
            |d, f| int(d.dtls_records, f),
        ),
        NK::new(
            "encrypted",
            Ty::Int,
            "NetherNet: of those, sealed (after the handshake).",
            |d, f| int(d.encrypted, f),
        ),
        NK::new(
            "decrypted",
            Ty::Int,
            "NetherNet: of those, opened with the key log.",
            |d, f| int(d.decrypted, f),
        ),
        NK::new(
            "sctp_packets",
            Ty::Int,
            "NetherNet: SCTP packets in them.",
            |d, f| int(d.sctp_packets, f),
        ),
        NK::new("resends", Ty::Int, "DATA chunks sent again.", |d, f| {
            int(d.resends, f)
        }),
        NK::new(
            "messages",
            Ty::Int,
            "Messages delivered to the receiver's application.",
            |d, f| int(d.messages, f),
        ),
        NK::new(
            "batches",
            Ty::Int,
            "NetherNet: batches delivered to the receiver's application.",
            |d, f| int(d.batches, f),
        ),
    ];
}
