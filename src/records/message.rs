//! The `message` record: one message delivered to one side's application
//! (`messages`), after de-duplication, split reassembly and ordering.

use super::value::int;
use super::{object, Closed, Described, Key, Ty, Value, FLOW_DOC, TYPE_DOC};
use crate::dissect::Anomaly;
use crate::mirror::Message;
use crate::nethernet::association::DataChannel;

/// What a `message` record is made from.
pub struct MessageRecord<'a> {
    /// The delivered message.
    pub message: &'a Message,
    /// Bytes of `data` JSON shows (`--data-limit`; all when `None`).
    pub data_limit: Option<usize>,
    /// In a Bedrock flow, what the game layer found inside (packet names).
    pub game: Option<&'a [String]>,
    /// The capture file of the packet that completed it, when several are
    /// read.
    pub file: Option<&'a str>,
    /// The data channel of a NetherNet message (none: a RakNet one).
    pub data_channel: Option<&'a DataChannel>,
}

/// Whether `r` is a RakNet message (a key of those alone).
fn raknet(r: &MessageRecord<'_>) -> bool {
    r.data_channel.is_none()
}

impl MessageRecord<'_> {
    /// The bytes of `data` JSON shows.
    fn shown(&self) -> &[u8] {
        let data = &self.message.data;
        match self.data_limit {
            Some(n) if n < data.len() => &data[..n],
            _ => data,
        }
    }
}

// Key by key at constant indices: write_object's fast path.
keyed!(
    MessageRecord,
    |r, out| crate::write_keys!(MessageRecord<'static>, r, out;
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17)
);

type K = Key<MessageRecord<'static>>;

impl Described for MessageRecord<'static> {
    type Of<'a> = MessageRecord<'a>;
    const KEYS: &'static [K] = &[
        K::new("type", Ty::Str, TYPE_DOC, |_, f| f(Value::Str("message")))
            .closed(Closed::RecordType),
        K::new(
            "file",
            Ty::Str,
            "The capture file of the packet that completed delivery, when several are read.",
            |r, f| r.file.is_some_and(|n| f(Value::Str(n))),
        )
        .skip(),
        K::new("flow", Ty::Int, FLOW_DOC, |r, f| int(r.message.flow, f)),
        K::new(
            "dir",
            Ty::Str,
            "\"c2s\": received by the server; \"s2c\": received by the client.",
            |r, f| f(Value::Str(r.message.dir.as_str())),
        )
        .closed(Closed::Dir),
        K::new(
            "frame",
            Ty::Int,
            "The packet that completed delivery (or released it from an ordering heap).",
            |r, f| int(r.message.frame, f),
        ),
        K::new(
            "ts",
            Ty::Float,
            "That packet's time, seconds since the Unix epoch.",
            |r, f| f(Value::Float(r.message.ts.as_secs_f64())),
        ),
        K::new(
            "id",
            Ty::Int,
            "The message id (first byte); null for an empty message.",
            |r, f| r.message.data.first().is_some_and(|&i| int(i, f)),
        )
        .or_null()
        .when(raknet),
        K::new(
            "name",
            Ty::Str,
            "The message name; null for an empty message.",
            |r, f| {
                r.message
                    .data
                    .first()
                    .is_some_and(|&i| f(Value::Str(&crate::wire::message_name(i))))
            },
        )
        .or_null()
        .when(raknet)
        .closed(Closed::Message),
        K::new("len", Ty::Int, "Bytes in the whole message.", |r, f| {
            int(r.message.data.len() as u64, f)
        }),
        K::new(
            "reliability",
            Ty::Str,
            "Reliability name, as on the wire (a split message: its first part's).",
            |r, f| f(Value::Str(r.message.reliability.name())),
        )
        .closed(Closed::Reliability),
        K::new(
            "channel",
            Ty::Int,
            "orderingChannel, when the message is ordered or sequenced.",
            |r, f| r.message.channel.is_some_and(|c| int(c, f)),
        )
        .skip(),
        K::new(
            "stream",
            Ty::Int,
            "NetherNet: the SCTP stream of its data channel.",
            |r, f| r.data_channel.is_some_and(|c| int(c.stream, f)),
        )
        .skip(),
        K::new(
            "label",
            Ty::Str,
            "NetherNet: its data channel's label (ReliableDataChannel, UnreliableDataChannel).",
            |r, f| {
                r.data_channel
                    .and_then(|c| c.label.as_deref())
                    .is_some_and(|l| f(Value::Str(l)))
            },
        )
        .skip(),
        K::new(
            "ppid",
            Ty::Int,
            "NetherNet: its payload protocol identifier (53: binary).",
            |r, f| r.data_channel.is_some_and(|c| int(c.ppid, f)),
        )
        .skip(),
        K::new(
            "data",
            Ty::Bytes,
            "The message, id byte included (JSON: --data-limit of it; filters: all of it).",
            |r, f| f(Value::Bytes(r.shown())),
        )
        // Filters read the whole message, whatever JSON shows of it.
        .filter(|r, f| f(Value::Bytes(&r.message.data))),
        K::new(
            "data_truncated",
            Ty::Bool,
            "true when --data-limit cut data.",
            |r, f| r.shown().len() < r.message.data.len() && f(Value::Bool(true)),
        )
        .skip(),
        K::new(
            "anomalies",
            Ty::Object,
            "Findings about the message itself, {kind, detail}.",
            |r, f| r.message.anomalies.iter().any(|a| object::<Anomaly>(a, f)),
        )
        .many()
        .nested::<Anomaly>(),
        K::new(
            "game",
            Ty::Str,
            "Bedrock: the game packets inside (or encrypted, decompress, malformed).",
            |r, f| r.game.is_some_and(|g| g.iter().any(|n| f(Value::Str(n)))),
        )
        // In a Bedrock flow only; there, even when it names none.
        .present(|r| r.game.is_some()),
    ];
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde::Serialize;

    use super::*;
    use crate::dissect::Dir;

    /// The record as serde wrote it before it was described.
    #[derive(Serialize)]
    struct MessageSerde<'a> {
        #[serde(rename = "type")]
        kind_of_record: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        file: Option<&'a str>,
        flow: u32,
        dir: &'static str,
        frame: u64,
        ts: f64,
        id: Option<u8>,
        name: Option<std::borrow::Cow<'static, str>>,
        len: usize,
        reliability: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        channel: Option<u8>,
        data: String,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        data_truncated: bool,
        anomalies: &'a [Anomaly],
        #[serde(skip_serializing_if = "Option::is_none")]
        game: Option<&'a [String]>,
    }

    impl<'a> MessageSerde<'a> {
        fn new(r: &MessageRecord<'a>) -> Self {
            let m = r.message;
            let id = m.data.first().copied();
            let shown = r.data_limit.map_or(m.data.len(), |n| n.min(m.data.len()));
            MessageSerde {
                kind_of_record: "message",
                file: r.file,
                flow: m.flow,
                dir: m.dir.as_str(),
                frame: m.frame,
                ts: m.ts.as_secs_f64(),
                id,
                name: id.map(crate::wire::message_name),
                len: m.data.len(),
                reliability: m.reliability.name(),
                channel: m.channel,
                data: crate::wire::cursor::hex(&m.data[..shown]),
                data_truncated: shown < m.data.len(),
                anomalies: &m.anomalies,
                game: r.game,
            }
        }
    }

    #[test]
    fn a_message_line_is_what_serde_wrote() {
        let anomaly = Anomaly {
            kind: "gap",
            detail: "a \"quoted\" \\ detail\n".into(),
        };
        let names = ["login".to_string(), "encrypted".to_string()];
        let mut m = Message {
            flow: 7,
            dir: Dir::C2s,
            frame: 123_456,
            ts: Duration::from_micros(1_732_551_111_123_456),
            reliability: crate::wire::Reliability::RELIABLE_ORDERED,
            channel: Some(3),
            data: vec![0x86, 0x00, 0xff, 0x10],
            anomalies: vec![],
        };
        for case in 0..8 {
            let r = MessageRecord {
                data_channel: None,
                message: &m,
                data_limit: [None, Some(2), Some(0), Some(4), Some(9)][case % 5],
                game: match case {
                    3 => Some(&names[..]),
                    6 => Some(&[]),
                    _ => None,
                },
                file: (case == 1).then_some("dir/\"odd\" name.pcap"),
            };
            let mut ours = Vec::new();
            super::super::write_line(&r, &mut ours);
            let mut theirs = serde_json::to_vec(&MessageSerde::new(&r)).unwrap();
            theirs.push(b'\n');
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                String::from_utf8(theirs).unwrap(),
                "case {case}"
            );
            m.channel = None;
            m.ts = Duration::from_nanos(1);
            m.anomalies = vec![anomaly.clone(), anomaly.clone()];
            m.data = if case == 4 {
                vec![]
            } else {
                (0..=255).collect()
            };
        }
    }

    #[test]
    fn filters_read_the_whole_data_and_each_anomaly() {
        let m = Message {
            flow: 1,
            dir: Dir::S2c,
            frame: 2,
            ts: Duration::from_secs(3),
            reliability: crate::wire::Reliability::RELIABLE,
            channel: None,
            data: vec![0x86, 1, 2, 3],
            anomalies: vec![
                Anomaly {
                    kind: "gap",
                    detail: "one".into(),
                },
                Anomaly {
                    kind: "resend",
                    detail: "two".into(),
                },
            ],
        };
        let r = MessageRecord {
            data_channel: None,
            message: &m,
            data_limit: Some(1),
            game: None,
            file: None,
        };
        let values = |path: &str| {
            let p = super::super::key_path::<MessageRecord<'static>>(path).expect(path);
            let mut seen = Vec::new();
            super::super::visit_index::<MessageRecord<'static>>(&r, p.indices(), &mut |v| {
                seen.push(match v {
                    Value::Bytes(b) => crate::wire::cursor::hex(b),
                    Value::Str(s) => s.to_string(),
                    Value::Bool(b) => b.to_string(),
                    Value::Object(o) => o.to_json(),
                    other => format!("{other:?}"),
                });
                false
            });
            seen.join(",")
        };
        assert_eq!(values("data"), "86010203");
        assert_eq!(values("data_truncated"), "true");
        assert_eq!(values("anomalies.kind"), "gap,resend");
        assert_eq!(values("anomalies.detail"), "one,two");
        assert_eq!(
            values("anomalies"),
            r#"{"kind":"gap","detail":"one"},{"kind":"resend","detail":"two"}"#
        );
        assert_eq!(values("game"), "");
        assert_eq!(values("channel"), "");
        assert!(super::super::key_path::<MessageRecord<'static>>("anomalies.nope").is_none());
        assert!(super::super::key_path::<MessageRecord<'static>>("seq").is_none());
    }
}
