//! The `handshake` record: one connection attempt, its timeline of steps
//! and its outcome (`handshake`).

use std::time::Duration;

use super::value::{int, visit_display};
use super::{object, Closed, Described, Key, Ty, Value, FLOW_DOC, TYPE_DOC};
use crate::mirror::handshake::{Attempt, Step};

/// What a `handshake` record is made from.
pub(crate) struct HandshakeRecord<'a> {
    pub(crate) attempt: &'a Attempt,
    /// The capture file (`--separate`).
    pub(crate) file: Option<&'a str>,
    /// On a Bedrock flow, where the game login got (the flow's last
    /// connected attempt only).
    pub(crate) game: Option<String>,
}

impl<'a> HandshakeRecord<'a> {
    pub(crate) fn new(attempt: &'a Attempt) -> Self {
        HandshakeRecord {
            attempt,
            file: None,
            game: None,
        }
    }
}

keyed!(HandshakeRecord);

type K = Key<HandshakeRecord<'static>>;

impl Described for HandshakeRecord<'static> {
    type Of<'a> = HandshakeRecord<'a>;
    const KEYS: &'static [K] = &[
        K::new("type", Ty::Str, TYPE_DOC, |_, f| f(Value::Str("handshake"))).closed(Closed::RecordType),
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
            |r, f| int(r.attempt.flow, f),
        ),
        K::new(
            "transport",
            Ty::Str,
            "The transport: \"raknet\" or \"nethernet\".",
            |r, f| f(Value::Str(if r.attempt.nethernet { "nethernet" } else { "raknet" })),
        ),
        K::new(
            "attempt",
            Ty::Int,
            "Attempt number within the flow, 1-based.",
            |r, f| int(r.attempt.number, f),
        ),
        K::new(
            "client",
            Ty::Str,
            "The client's address, \"ip:port\": null when the attempt is known only from an ICMP error.",
            |r, f| r.attempt.client.is_some_and(|a| visit_display(a, f)),
        )
        .or_null(),
        K::new(
            "server",
            Ty::Str,
            "The server's address, \"ip:port\" (or null).",
            |r, f| r.attempt.server.is_some_and(|a| visit_display(a, f)),
        )
        .or_null(),
        K::new(
            "ts",
            Ty::Float,
            "The attempt's start, seconds since the Unix epoch.",
            |r, f| f(Value::Float(r.attempt.start.as_secs_f64())),
        ),
        K::new(
            "duration",
            Ty::Float,
            "Seconds from the attempt's start to its end.",
            |r, f| {
                let d = r.attempt.end.saturating_sub(r.attempt.start);
                f(Value::Float(d.as_secs_f64()))
            },
        ),
        K::new(
            "outcome",
            Ty::Str,
            "How the attempt ended: connected, no_free_incoming_connections, port_unreachable, ... (`handshake` lists them).",
            |r, f| f(Value::Str(r.attempt.outcome)),
        ),
        K::new("diagnosis", Ty::Str, "The outcome in a sentence.", |r, f| {
            f(Value::Str(&r.attempt.diagnosis))
        }),
        K::new(
            "client_protocol",
            Ty::Int,
            "Protocol byte of Open Connection Request 1.",
            |r, f| r.attempt.client_protocol.is_some_and(|p| int(p, f)),
        )
        .or_null(),
        K::new(
            "server_protocol",
            Ty::Int,
            "The server's protocol, from Incompatible Protocol Version.",
            |r, f| r.attempt.server_protocol.is_some_and(|p| int(p, f)),
        )
        .or_null(),
        K::new(
            "mtu_probes",
            Ty::Int,
            "The MTU of each Open Connection Request 1, in order.",
            |r, f| r.attempt.request1_mtus.iter().any(|&m| int(m, f)),
        )
        .many(),
        K::new(
            "mtu",
            Ty::Int,
            "The MTU of Reply 2, or else of Reply 1.",
            |r, f| {
                let a = r.attempt;
                a.reply2_mtu.or(a.reply1_mtu).is_some_and(|m| int(m, f))
            },
        )
        .or_null(),
        K::new("pings", Ty::Int, "Unconnected pings seen.", |r, f| {
            int(r.attempt.pings, f)
        }),
        K::new("pongs", Ty::Int, "Unconnected pongs seen.", |r, f| {
            int(r.attempt.pongs, f)
        }),
        K::new(
            "connection_request_acked",
            Ty::Bool,
            "Whether the server ACKed the datagram carrying ConnectionRequest.",
            |r, f| f(Value::Bool(r.attempt.connection_request_acked)),
        ),
        K::new("steps", Ty::Object, "The timeline, a step each.", |r, f| {
            let start = r.attempt.start;
            r.attempt
                .steps
                .iter()
                .any(|step| object::<StepOf>(&StepOf { step, start }, f))
        })
        .many()
        .nested::<StepOf>(),
        K::new(
            "steps_omitted",
            Ty::Int,
            "Steps after the 64th.",
            |r, f| r.attempt.steps_omitted > 0 && int(r.attempt.steps_omitted, f),
        )
        .skip(),
        K::new(
            "game",
            Ty::Str,
            "Bedrock: where the game login got, in words.",
            |r, f| r.game.as_deref().is_some_and(|g| f(Value::Str(g))),
        )
        .skip(),
    ];
}

/// One step of the timeline, with the attempt's start its `t` counts from.
pub(crate) struct StepOf<'a> {
    pub(crate) step: &'a Step,
    pub(crate) start: Duration,
}

type SK = Key<StepOf<'static>>;

/// An object of `steps`.
impl Described for StepOf<'static> {
    type Of<'a> = StepOf<'a>;
    const KEYS: &'static [SK] = &[
        SK::new(
            "t",
            Ty::Float,
            "Each step's time, seconds since the attempt's ts.",
            |s, f| {
                f(Value::Float(
                    s.step.ts.saturating_sub(s.start).as_secs_f64(),
                ))
            },
        ),
        SK::new("frame", Ty::Int, "Each step's frame.", |s, f| {
            int(s.step.frame, f)
        }),
        SK::new("dir", Ty::Str, "Each step's direction.", |s, f| {
            s.step.dir.is_some_and(|d| f(Value::Str(d.as_str())))
        })
        .or_null(),
        SK::new(
            "step",
            Ty::Str,
            "Each step: open_connection_request_1, refused, icmp, ...",
            |s, f| f(Value::Str(s.step.step)),
        ),
        SK::new("detail", Ty::Str, "Each step's detail.", |s, f| {
            !s.step.detail.is_empty() && f(Value::Str(&s.step.detail))
        })
        .skip(),
    ];
}
