//! The `game` and `game_opaque` records: what the Bedrock game layer made
//! of a delivered 0xFE message, one record per game packet, or per batch
//! that shows none (`game`).
//!
//! Both are one described type, [`GameRecord`]: a `game_opaque` record has
//! the keys of a `game` record that it shares (`frame` ... `batch`, `len`)
//! and its own two (`reason`, `detail`), so that a filter compiled once
//! for the `game` command reads either.

use super::value::int;
use super::{object, Closed, Described, Key, Obj, Ty, Value, FLOW_DOC, TYPE_DOC};
use crate::bedrock::{GameEvent, GamePacket, Opaque};
use crate::mirror::Message;

/// What a `game` or `game_opaque` record is made from.
pub struct GameRecord<'a> {
    /// The RakNet message that carried the batch.
    pub(crate) message: &'a Message,
    pub(crate) event: &'a GameEvent,
    /// Bytes of `data` JSON shows (`--data-limit`; all when `None`).
    pub(crate) data_limit: Option<usize>,
    /// The capture file, when several are read.
    pub(crate) file: Option<&'a str>,
    /// The packet's fields written as JSON already
    /// ([`GamePacket::finish_json`](crate::bedrock::GamePacket)), shown
    /// for `fields` in place of the value the packet has not.
    pub(crate) fields_json: Option<&'a [u8]>,
}

impl<'a> GameRecord<'a> {
    /// The record of `event`, found in `message`: all of its `data` shown,
    /// without a file.
    pub fn new(message: &'a Message, event: &'a GameEvent) -> Self {
        GameRecord {
            message,
            event,
            data_limit: None,
            file: None,
            fields_json: None,
        }
    }

    /// The game packet, when the record is one (`game`).
    pub(crate) fn packet(&self) -> Option<&'a GamePacket> {
        match self.event {
            GameEvent::Packet(p) => Some(p),
            GameEvent::Opaque(_) => None,
        }
    }

    /// The batch that shows no packets, when the record is one
    /// (`game_opaque`).
    pub(crate) fn opaque(&self) -> Option<&'a Opaque> {
        match self.event {
            GameEvent::Packet(_) => None,
            GameEvent::Opaque(o) => Some(o),
        }
    }

    /// The bytes of `data` JSON shows.
    fn shown(&self) -> Option<&'a [u8]> {
        let data = &self.packet()?.data;
        Some(match self.data_limit {
            Some(n) if n < data.len() => &data[..n],
            _ => data,
        })
    }
}

keyed!(GameRecord);

type K = Key<GameRecord<'static>>;

/// A key of `game` records alone.
fn in_packet(r: &GameRecord<'_>) -> bool {
    r.packet().is_some()
}

impl Described for GameRecord<'static> {
    type Of<'a> = GameRecord<'a>;
    const KEYS: &'static [K] = &[
        // "game": a game packet; "game_opaque": a batch that shows none.
        K::new("type", Ty::Str, TYPE_DOC, |r, f| {
            f(Value::Str(if in_packet(r) { "game" } else { "game_opaque" }))
        })
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
            "The frame that completed the RakNet message carrying it.",
            |r, f| int(r.message.frame, f),
        ),
        K::new(
            "ts",
            Ty::Float,
            "That frame's time, seconds since the Unix epoch.",
            |r, f| f(Value::Float(r.message.ts.as_secs_f64())),
        ),
        K::new("flow", Ty::Int, FLOW_DOC, |r, f| int(r.message.flow, f)),
        K::new(
            "dir",
            Ty::Str,
            "\"c2s\" (received by the server) or \"s2c\".",
            |r, f| f(Value::Str(r.message.dir.as_str())),
        )
        .closed(Closed::Dir),
        K::new(
            "batch",
            Ty::Int,
            "The index of its 0xFE batch in its direction, from 0.",
            |r, f| match r.event {
                GameEvent::Packet(p) => int(p.batch, f),
                GameEvent::Opaque(o) => int(o.batch, f),
            },
        ),
        K::new(
            "id",
            Ty::Int,
            "game: the packet id (10 bits of the header).",
            |r, f| r.packet().is_some_and(|p| int(p.header.id, f)),
        )
        .skip(),
        K::new(
            "name",
            Ty::Str,
            "game: its name in the protocol definitions of the flow's version (or null).",
            |r, f| r.packet().and_then(|p| p.name).is_some_and(|n| f(Value::Str(n))),
        )
        .or_null()
        .when(in_packet)
        .closed(Closed::GamePacket),
        K::new(
            "sender_subclient",
            Ty::Int,
            "game: the sub-client that sent it (split screen), when not 0.",
            |r, f| {
                r.packet()
                    .is_some_and(|p| p.header.sender != 0 && int(p.header.sender, f))
            },
        )
        .skip(),
        K::new(
            "target_subclient",
            Ty::Int,
            "game: the sub-client it is for, when not 0.",
            |r, f| {
                r.packet()
                    .is_some_and(|p| p.header.target != 0 && int(p.header.target, f))
            },
        )
        .skip(),
        K::new(
            "len",
            Ty::Int,
            "game: bytes of the packet, header included; game_opaque: of the message after its 0xFE.",
            |r, f| match r.event {
                GameEvent::Packet(p) => int(p.data.len() as u64, f),
                GameEvent::Opaque(o) => int(o.len as u64, f),
            },
        ),
        K::new(
            "encrypted",
            Ty::Bool,
            "game: whether its batch was encrypted on the wire.",
            |r, f| r.packet().is_some_and(|p| f(Value::Bool(p.encrypted))),
        )
        .skip(),
        K::new(
            "reason",
            Ty::Str,
            "game_opaque: why the batch shows no packets: encrypted, decompress or malformed.",
            |r, f| r.opaque().is_some_and(|o| f(Value::Str(o.reason.as_str()))),
        )
        .skip(),
        K::new(
            "detail",
            Ty::Str,
            "game_opaque: the reason in words.",
            |r, f| r.opaque().is_some_and(|o| f(Value::Str(&o.detail))),
        )
        .skip(),
        K::new(
            "anomalies",
            Ty::Object,
            "game: where its fields stopped decoding, when they did: {\"kind\":\"fields\",\"detail\":...}.",
            |r, f| {
                r.packet()
                    .and_then(|p| p.anomaly.as_deref())
                    .is_some_and(|a| object::<FieldsAnomaly>(&a, f))
            },
        )
        .present(|r| r.packet().is_some_and(|p| p.anomaly.is_some()))
        .nested::<FieldsAnomaly>(),
        K::new(
            "error",
            Ty::Str,
            "game: where its fields stopped decoding against the definition (the field, its offset in the body, why); fields keeps what decoded before it.",
            |r, f| {
                r.packet()
                    .and_then(|p| p.error.as_deref())
                    .is_some_and(|e| f(Value::Str(e)))
            },
        )
        .skip(),
        K::new(
            "data",
            Ty::Bytes,
            "game: the decompressed packet, header included, as lowercase hex (cut by --data-limit; filters read it whole).",
            |r, f| r.shown().is_some_and(|d| f(Value::Bytes(d))),
        )
        .skip()
        .filter(|r, f| r.packet().is_some_and(|p| f(Value::Bytes(&p.data)))),
        K::new(
            "data_truncated",
            Ty::Bool,
            "game: present (true) when data was cut by --data-limit.",
            |r, f| {
                r.packet()
                    .zip(r.shown())
                    .is_some_and(|(p, d)| d.len() < p.data.len() && f(Value::Bool(true)))
            },
        )
        .skip(),
        K::new(
            "fields",
            Ty::Object,
            "game: the packet's fields, decoded (docs/json.md). One of them: fields.KEY (fields.display_name), or PACKET.KEY, only in packets named PACKET (game.login.display_name, game.disconnect.message); PACKET alone: packets of that name.",
            |r, f| match r.fields_json {
                Some(j) => f(Value::Object(Obj::Raw(j))),
                None => r
                    .packet()
                    .and_then(|p| p.fields.as_ref())
                    .is_some_and(|v| f(Value::Object(Obj::Json(v)))),
            },
        )
        .skip(),
    ];
}

/// An object of a game packet's `anomalies`: `{"kind":"fields","detail":...}`.
pub(crate) struct FieldsAnomaly;

type AK = Key<FieldsAnomaly>;

impl Described for FieldsAnomaly {
    type Of<'a> = &'a str;
    const KEYS: &'static [AK] = &[
        AK::new(
            "kind",
            Ty::Str,
            "Each anomaly's kind: \"fields\".",
            |_, f| f(Value::Str("fields")),
        )
        .closed(Closed::AnomalyKind),
        AK::new(
            "detail",
            Ty::Str,
            "Where the packet stopped decoding against its definition.",
            |a, f| f(Value::Str(a)),
        ),
    ];
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde::Serialize;

    use super::*;
    use crate::bedrock::batch::Header;
    use crate::bedrock::OpaqueReason;
    use crate::dissect::{Anomaly, Dir};

    /// The record as the serde structs that wrote it before it was
    /// described wrote it.
    #[derive(Serialize)]
    struct GameSerde<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        file: Option<&'a str>,
        frame: u64,
        ts: f64,
        flow: u32,
        dir: &'static str,
        batch: u64,
        id: u16,
        name: Option<&'static str>,
        #[serde(skip_serializing_if = "is_zero")]
        sender_subclient: u8,
        #[serde(skip_serializing_if = "is_zero")]
        target_subclient: u8,
        len: usize,
        encrypted: bool,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        anomalies: Vec<Anomaly>,
        data: String,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        data_truncated: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        fields: Option<&'a serde_json::Value>,
    }

    #[derive(Serialize)]
    struct OpaqueSerde<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        file: Option<&'a str>,
        frame: u64,
        ts: f64,
        flow: u32,
        dir: &'static str,
        batch: u64,
        len: usize,
        reason: &'static str,
        detail: &'a str,
    }

    fn is_zero(v: &u8) -> bool {
        *v == 0
    }

    fn message() -> Message {
        Message {
            flow: 3,
            dir: Dir::S2c,
            frame: 40,
            ts: Duration::from_micros(1_795_575_772_492_328),
            data: vec![0xfe],
            reliability: crate::wire::Reliability::RELIABLE_ORDERED,
            channel: Some(0),
            anomalies: Vec::new(),
        }
    }

    fn packet(anomaly: Option<&str>, sender: u8, fields: bool) -> GamePacket {
        GamePacket {
            dir: Dir::S2c,
            batch: 7,
            header: Header {
                id: 2,
                sender,
                target: 0,
                len: 1,
            },
            name: (sender == 0).then_some("play_status"),
            data: vec![0x02, 0, 0, 0, 1, 0xab].into(),
            encrypted: true,
            fields: fields
                .then(|| serde_json::json!({"status": "failed_client", "n": [1, {"a": "\u{1}"}]})),
            anomaly: anomaly.map(str::to_string),
            error: None,
            pending: None,
            layout: None,
        }
    }

    fn line(r: &GameRecord<'_>) -> String {
        let mut out = Vec::new();
        super::super::write_line(r, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn game_records_are_written_as_before() {
        let m = message();
        for (anomaly, sender, fields, limit, file) in [
            (None, 0, true, None, None),
            (
                Some("fields: x at byte 3"),
                2,
                false,
                Some(2),
                Some("a.pcap"),
            ),
            (None, 0, false, Some(6), None),
            (Some("d"), 0, true, Some(0), Some("b\"c")),
        ] {
            let p = packet(anomaly, sender, fields);
            let e = GameEvent::Packet(p.clone());
            let r = GameRecord {
                data_limit: limit,
                file,
                ..GameRecord::new(&m, &e)
            };
            let shown = limit.map_or(p.data.len(), |n| n.min(p.data.len()));
            let want = GameSerde {
                kind: "game",
                file,
                frame: m.frame,
                ts: m.ts.as_secs_f64(),
                flow: m.flow,
                dir: p.dir.as_str(),
                batch: p.batch,
                id: p.header.id,
                name: p.name,
                sender_subclient: p.header.sender,
                target_subclient: p.header.target,
                len: p.data.len(),
                encrypted: p.encrypted,
                anomalies: p
                    .anomaly
                    .iter()
                    .map(|a| Anomaly {
                        kind: "fields",
                        detail: a.clone(),
                    })
                    .collect(),
                data: crate::wire::cursor::hex(&p.data[..shown]),
                data_truncated: shown < p.data.len(),
                fields: p.fields.as_ref(),
            };
            let want = serde_json::to_string(&want).unwrap() + "\n";
            assert_eq!(line(&r), want);
        }
    }

    #[test]
    fn opaque_records_are_written_as_before() {
        let m = message();
        for file in [None, Some("x.pcapng")] {
            let o = Opaque {
                dir: Dir::C2s,
                batch: 2,
                len: 13,
                reason: OpaqueReason::Encrypted,
                detail: "no key given (--keylog, --key)".into(),
            };
            let e = GameEvent::Opaque(o.clone());
            let r = GameRecord {
                file,
                ..GameRecord::new(&m, &e)
            };
            let want = OpaqueSerde {
                kind: "game_opaque",
                file,
                frame: m.frame,
                ts: m.ts.as_secs_f64(),
                flow: m.flow,
                dir: m.dir.as_str(),
                batch: o.batch,
                len: o.len,
                reason: o.reason.as_str(),
                detail: &o.detail,
            };
            assert_eq!(line(&r), serde_json::to_string(&want).unwrap() + "\n");
        }
    }

    #[test]
    fn filters_read_the_whole_data_and_the_kind_of_record() {
        use super::super::{key_path, visit_index, visit_path};
        let m = message();
        let e = GameEvent::Packet(packet(None, 0, true));
        let r = GameRecord {
            data_limit: Some(1),
            ..GameRecord::new(&m, &e)
        };
        let mut data = Vec::new();
        let at = key_path::<GameRecord<'static>>("data").unwrap();
        visit_index::<GameRecord<'static>>(&r, at.indices(), &mut |v| {
            if let Value::Bytes(b) = v {
                data.extend_from_slice(b);
            }
            false
        });
        assert_eq!(data.len(), 6, "the whole packet, not --data-limit's byte");
        let mut reason = 0;
        visit_path::<GameRecord<'static>>(&r, "reason", &mut |_| {
            reason += 1;
            false
        });
        assert_eq!(reason, 0, "a game record has no reason");
    }
}
