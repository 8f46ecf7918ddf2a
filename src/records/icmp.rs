//! The `icmp` record (an ICMP error about a datagram of a flow) and the
//! `end_of_capture` record (what the receivers still held at the end),
//! which `read` prints among its `packet` records.

use super::value::{int, visit_addr, visit_display};
use super::{object, Described, Key, Ty, Value};
use crate::dissect::{Anomaly, IcmpNote};

/// What an `icmp` record is made from.
pub(crate) struct IcmpRecord<'a> {
    pub(crate) note: &'a IcmpNote,
    /// The capture file, when a run reads several.
    pub(crate) file: Option<&'a str>,
}

keyed!(IcmpRecord);

type K = Key<IcmpRecord<'static>>;

impl Described for IcmpRecord<'static> {
    type Of<'a> = IcmpRecord<'a>;
    const KEYS: &'static [K] = &[
        K::new("type", Ty::Str, "The record type: \"icmp\".", |_, f| {
            f(Value::Str("icmp"))
        }),
        K::new(
            "frame",
            Ty::Int,
            "The frame's number in the capture.",
            |r, f| int(r.note.frame, f),
        ),
        K::new(
            "ts",
            Ty::Float,
            "Capture time, seconds since the Unix epoch.",
            |r, f| f(Value::Float(r.note.ts.as_secs_f64())),
        ),
        K::new(
            "flow",
            Ty::Int,
            "The flow of the quoted datagram.",
            |r, f| int(r.note.flow, f),
        ),
        K::new(
            "from",
            Ty::Str,
            "The address of the host or router that sent the error.",
            |r, f| visit_display(r.note.from, f),
        ),
        K::new("kind", Ty::Str, "The ICMP error's kind.", |r, f| {
            f(Value::Str(r.note.kind))
        }),
        K::new(
            "mtu",
            Ty::Int,
            "The MTU that fragmentation_needed states.",
            |r, f| r.note.mtu.is_some_and(|m| int(m, f)),
        )
        .skip(),
        K::new(
            "datagram",
            Ty::Object,
            "The quoted datagram: its endpoints and its direction.",
            |r, f| object::<Quoted>(r.note, f),
        )
        .nested::<Quoted>(),
        K::new(
            "file",
            Ty::Str,
            "The capture file, when a run reads several.",
            |r, f| r.file.is_some_and(|n| f(Value::Str(n))),
        )
        .skip(),
    ];
}

/// The `datagram` object of an `icmp` record.
pub(crate) struct Quoted;

impl Described for Quoted {
    type Of<'a> = IcmpNote;
    const KEYS: &'static [Key<Quoted>] = &[
        Key::new(
            "src",
            Ty::Str,
            "Its source, as its sender wrote it.",
            |n, f| visit_addr(n.src, f),
        ),
        Key::new("dst", Ty::Str, "Its destination.", |n, f| {
            visit_addr(n.dst, f)
        }),
        Key::new("dir", Ty::Str, "Its direction in the flow.", |n, f| {
            f(Value::Str(n.dir.as_str()))
        }),
    ];
}

/// What an `end_of_capture` record is made from.
pub(crate) struct EndRecord<'a> {
    pub(crate) anomalies: &'a [Anomaly],
}

keyed!(EndRecord);

type E = Key<EndRecord<'static>>;

impl Described for EndRecord<'static> {
    type Of<'a> = EndRecord<'a>;
    const KEYS: &'static [E] = &[
        E::new(
            "type",
            Ty::Str,
            "The record type: \"end_of_capture\".",
            |_, f| f(Value::Str("end_of_capture")),
        ),
        E::new(
            "anomalies",
            Ty::Object,
            "What the receivers still held: {kind, detail}.",
            |r, f| r.anomalies.iter().any(|a| object::<Anomaly>(a, f)),
        )
        .many()
        .nested::<Anomaly>(),
    ];
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::time::Duration;

    use super::*;
    use crate::dissect::Dir;

    /// The records as the serde structs that wrote them before they were
    /// described wrote them.
    #[derive(serde::Serialize)]
    struct QuotedJson {
        src: String,
        dst: String,
        dir: &'static str,
    }

    #[derive(serde::Serialize)]
    struct IcmpJson {
        #[serde(rename = "type")]
        kind_of_record: &'static str,
        frame: u64,
        ts: f64,
        flow: u32,
        from: String,
        kind: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        mtu: Option<u16>,
        datagram: QuotedJson,
        #[serde(skip_serializing_if = "Option::is_none")]
        file: Option<String>,
    }

    #[derive(serde::Serialize)]
    struct EndJson<'a> {
        #[serde(rename = "type")]
        kind_of_record: &'static str,
        anomalies: &'a [Anomaly],
    }

    fn line(r: &dyn super::super::Keyed) -> String {
        let mut out = Vec::new();
        super::super::write_line(r, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn written_as_the_serde_records_were() {
        let v6: SocketAddr = "[::1]:19132".parse().unwrap();
        for (mtu, file, src) in [
            (None, None, "127.0.0.1:5".parse().unwrap()),
            (Some(1400), Some("a \"b\".pcap"), v6),
        ] {
            let n = IcmpNote {
                flow: 2,
                dir: Dir::S2c,
                ts: Duration::from_micros(1_795_321_090_869_812),
                since: Duration::ZERO,
                frame: 3,
                kind: "port_unreachable",
                from: "10.0.0.1".parse().unwrap(),
                src,
                dst: v6,
                mtu,
            };
            let want = IcmpJson {
                kind_of_record: "icmp",
                frame: n.frame,
                ts: n.ts.as_secs_f64(),
                flow: n.flow,
                from: n.from.to_string(),
                kind: n.kind,
                mtu: n.mtu,
                datagram: QuotedJson {
                    src: n.src.to_string(),
                    dst: n.dst.to_string(),
                    dir: n.dir.as_str(),
                },
                file: file.map(Into::into),
            };
            let want = serde_json::to_string(&want).unwrap() + "\n";
            assert_eq!(line(&IcmpRecord { note: &n, file }), want);
        }
        let anomalies = [Anomaly {
            kind: "split_incomplete",
            detail: "flow 1 \"c2s\"".into(),
        }];
        for a in [&anomalies[..], &[]] {
            let want = EndJson {
                kind_of_record: "end_of_capture",
                anomalies: a,
            };
            let want = serde_json::to_string(&want).unwrap() + "\n";
            assert_eq!(line(&EndRecord { anomalies: a }), want);
        }
    }
}
