//! NDJSON records (docs/json.md): one object per line,
//! snake_case keys in a fixed order, a `type` on every record, bytes in hex.

use std::io;

use serde::Serialize;

use crate::dissect::{Anomaly, Body, IcmpNote, Packet};
use crate::mirror::Message;
use crate::wire::{Datagram, Offline};

pub use crate::records::packet::{motd_object, FrameJson, SplitJson};
pub use crate::wire::cursor::hex;

fn guid(g: u64) -> String {
    format!("{g:#018x}")
}

/// A `packet` record.
#[derive(Serialize)]
pub struct PacketJson {
    #[serde(rename = "type")]
    pub kind_of_record: &'static str,
    /// The capture file, when several are read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    pub frame: u64,
    pub ts: f64,
    pub src: String,
    pub dst: String,
    pub flow: u32,
    pub dir: &'static str,
    pub kind: &'static str,
    pub len: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_guid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_guid: Option<String>,
    /// The sender's GUID in an out-of-band message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cookie: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub motd: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames: Option<Vec<FrameJson>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranges: Option<Vec<[u32; 2]>>,
    pub anomalies: Vec<Anomaly>,
}

/// `a` as its `Display` writes it; an IPv4 one without the formatting
/// machinery, which costs a packet record more than the rest of its
/// addresses' handling (two per packet).
pub fn addr_text(a: std::net::SocketAddr) -> String {
    let std::net::SocketAddr::V4(v4) = a else {
        return a.to_string();
    };
    fn decimal(s: &mut String, mut n: u16) {
        let mut digits = [0u8; 5];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        digits[i..].iter().for_each(|&d| s.push(char::from(d)));
    }
    let mut s = String::with_capacity(21);
    for (i, octet) in v4.ip().octets().into_iter().enumerate() {
        if i > 0 {
            s.push('.');
        }
        decimal(&mut s, u16::from(octet));
    }
    s.push(':');
    decimal(&mut s, v4.port());
    s
}

impl PacketJson {
    /// The record for `p`; `ts` is seconds since the Unix epoch.
    pub fn new(p: &Packet<'_>) -> Self {
        let mut j = PacketJson {
            kind_of_record: "packet",
            file: None,
            frame: p.frame,
            ts: p.ts.as_secs_f64(),
            src: addr_text(p.src),
            dst: addr_text(p.dst),
            flow: p.flow,
            dir: p.dir.as_str(),
            kind: p.kind(),
            len: p.payload.len(),
            id: None,
            name: None,
            protocol: None,
            mtu: None,
            client_guid: None,
            server_guid: None,
            guid: None,
            time: None,
            cookie: None,
            security: None,
            address: None,
            payload: None,
            motd: None,
            seq: None,
            frames: None,
            ranges: None,
            anomalies: p.anomalies.clone(),
        };
        match &p.body {
            Body::Offline { id, msg } => {
                j.id = Some(*id);
                j.name = Some(crate::wire::message_name(*id).into_owned());
                if let Some(m) = msg {
                    j.offline_fields(m);
                }
            }
            Body::Datagram(Some(Datagram::Data(d))) => {
                j.seq = Some(d.seq);
                j.frames = Some(d.capsules.iter().map(FrameJson::new).collect());
            }
            Body::Datagram(Some(Datagram::Ack(l) | Datagram::Nack(l))) => {
                j.ranges = Some(l.ranges.iter().map(|r| [r.min, r.max]).collect());
            }
            Body::Datagram(None) => {}
        }
        j
    }

    fn offline_fields(&mut self, m: &Offline<'_>) {
        self.protocol = m.protocol();
        self.mtu = m.mtu();
        self.client_guid = m.client_guid().map(guid);
        self.server_guid = m.server_guid().map(guid);
        self.guid = m.sender_guid().map(guid);
        self.time = m.time();
        self.cookie = m.cookie();
        self.security = m.security();
        self.address = m.address().map(ToString::to_string);
        self.payload = m.payload().map(hex);
        self.motd = m.motd().map(motd_object);
    }
}

/// A `message` record: one message delivered to one side's application.
#[derive(Serialize)]
pub struct MessageJson<'a> {
    #[serde(rename = "type")]
    pub kind_of_record: &'static str,
    /// The capture file of the packet that completed it, when several are read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    pub flow: u32,
    pub dir: &'static str,
    pub frame: u64,
    pub ts: f64,
    pub id: Option<u8>,
    pub name: Option<std::borrow::Cow<'static, str>>,
    pub len: usize,
    pub reliability: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<u8>,
    /// The bytes shown (all, or `--data-limit` of them), printed in hex.
    #[serde(serialize_with = "hex_str")]
    pub data: &'a [u8],
    /// Set when `data` was cut by `--data-limit`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub data_truncated: bool,
    pub anomalies: &'a [Anomaly],
    /// In a Bedrock flow, the game packets inside (names; `encrypted`,
    /// `decompress`, `malformed` for a batch that shows none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub game: Option<Vec<String>>,
}

impl<'a> MessageJson<'a> {
    pub fn new(m: &'a Message, data_limit: Option<usize>) -> Self {
        let id = m.data.first().copied();
        let shown = data_limit.map_or(m.data.len(), |n| n.min(m.data.len()));
        MessageJson {
            kind_of_record: "message",
            file: None,
            flow: m.flow,
            dir: m.dir.as_str(),
            frame: m.frame,
            ts: m.ts.as_secs_f64(),
            id,
            name: id.map(crate::wire::message_name),
            len: m.data.len(),
            reliability: m.reliability.name(),
            channel: m.channel,
            data: &m.data[..shown],
            data_truncated: shown < m.data.len(),
            game: None,
            anomalies: &m.anomalies,
        }
    }

    /// The record's JSON line, byte for byte what serde_json prints of it
    /// (a test holds them together), written by hand: `data`, most of a
    /// message record, goes into `out` as hex with neither a string of its
    /// own nor an escaping pass over it.
    pub fn write_line(&self, out: &mut Vec<u8>) -> io::Result<()> {
        fn put<T: Serialize + ?Sized>(out: &mut Vec<u8>, key: &str, v: &T) -> io::Result<()> {
            out.extend_from_slice(b",\"");
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(b"\":");
            serde_json::to_writer(&mut *out, v)?;
            Ok(())
        }
        out.extend_from_slice(b"{\"type\":");
        serde_json::to_writer(&mut *out, self.kind_of_record)?;
        if let Some(f) = &self.file {
            put(out, "file", f)?;
        }
        put(out, "flow", &self.flow)?;
        put(out, "dir", self.dir)?;
        put(out, "frame", &self.frame)?;
        put(out, "ts", &self.ts)?;
        put(out, "id", &self.id)?;
        put(out, "name", &self.name)?;
        put(out, "len", &self.len)?;
        put(out, "reliability", self.reliability)?;
        if let Some(c) = self.channel {
            put(out, "channel", &c)?;
        }
        out.extend_from_slice(b",\"data\":\"");
        crate::wire::cursor::hex_extend(out, self.data);
        out.push(b'"');
        if self.data_truncated {
            put(out, "data_truncated", &true)?;
        }
        put(out, "anomalies", self.anomalies)?;
        if let Some(g) = &self.game {
            put(out, "game", g)?;
        }
        out.extend_from_slice(b"}\n");
        Ok(())
    }
}

/// Bytes as a JSON string of lowercase hex.
fn hex_str<S: serde::Serializer>(b: &&[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&hex(b))
}

/// The quoted datagram of an `icmp` record.
#[derive(Serialize)]
pub struct QuotedJson {
    pub src: String,
    pub dst: String,
    pub dir: &'static str,
}

/// An `icmp` record: an ICMP error about a datagram of a flow.
#[derive(Serialize)]
pub struct IcmpJson {
    #[serde(rename = "type")]
    pub kind_of_record: &'static str,
    pub frame: u64,
    pub ts: f64,
    pub flow: u32,
    pub from: String,
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u16>,
    pub datagram: QuotedJson,
    /// The capture file, when a run reads several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

impl IcmpJson {
    pub fn new(n: &IcmpNote) -> Self {
        IcmpJson {
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
            file: None,
        }
    }
}

/// An `end_of_capture` record: what the receivers still held when the
/// capture ended (incomplete splits, messages waiting in ordering heaps).
#[derive(Serialize)]
pub struct EndJson<'a> {
    #[serde(rename = "type")]
    pub kind_of_record: &'static str,
    pub anomalies: &'a [Anomaly],
}

#[cfg(test)]
mod tests {

    #[test]
    fn addresses_as_display_writes_them() {
        use std::net::SocketAddr;
        for a in [
            "0.0.0.0:0",
            "127.0.0.1:19132",
            "255.255.255.255:65535",
            "10.0.9.100:1",
            "[::1]:19132",
            "[fe80::1%2]:7",
        ] {
            let a: SocketAddr = a.parse().unwrap();
            assert_eq!(super::addr_text(a), a.to_string());
        }
        for n in (0..=65535u32).step_by(7) {
            let a = SocketAddr::from(([n as u8, (n >> 8) as u8, 0, 9], n as u16));
            assert_eq!(super::addr_text(a), a.to_string());
        }
    }

    use super::*;
    use crate::dissect::Dir;

    #[test]
    fn a_message_line_by_hand_is_serdes() {
        use std::time::Duration;
        let anomaly = Anomaly {
            kind: "gap",
            detail: "a \"quoted\" \\ detail\n".into(),
        };
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
        for case in 0..6 {
            let mut j = MessageJson::new(&m, (case == 2).then_some(2));
            if case == 1 {
                j.file = Some("dir/\"odd\" name.pcap".into());
            }
            if case == 3 {
                j.game = Some(vec!["login".into(), "encrypted".into()]);
                j.id = None;
                j.name = None;
            }
            let mut by_hand = Vec::new();
            j.write_line(&mut by_hand).unwrap();
            let mut serde = serde_json::to_vec(&j).unwrap();
            serde.push(b'\n');
            assert_eq!(
                String::from_utf8(by_hand).unwrap(),
                String::from_utf8(serde).unwrap(),
                "case {case}"
            );
            m.channel = None;
            m.ts = Duration::from_nanos(1);
            m.anomalies = vec![anomaly.clone()];
            m.data = if case == 4 {
                vec![]
            } else {
                (0..=255).collect()
            };
        }
    }

    #[test]
    fn hex_is_lowercase() {
        assert_eq!(hex(&[0x00, 0xab, 0xff]), "00abff");
    }
}

/// A `plot_flow` record: what the picture shows of a flow, in figures.
#[derive(Serialize)]
pub struct PlotFlowJson {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub flow: u32,
    pub client: String,
    pub server: String,
    /// Seconds from the flow's first packet drawn (or `--from`) to its last.
    pub duration: f64,
    pub bucket_ms: f64,
    pub buckets: usize,
    pub packets: [u64; 2],
    pub bytes: [u64; 2],
    pub resends: [u64; 2],
    pub nacked: [u64; 2],
    pub gaps: [u64; 2],
    pub rtt_samples: [u64; 2],
    pub rtt_ms_min: Option<f64>,
    pub rtt_ms_max: Option<f64>,
}

impl PlotFlowJson {
    pub fn new(f: &crate::analysis::plot::FlowPlot) -> Self {
        let samples = [f.rtt[0].seen(), f.rtt[1].seen()];
        let any = samples.iter().any(|&n| n > 0);
        PlotFlowJson {
            kind: "plot_flow",
            flow: f.id,
            client: f.client.to_string(),
            server: f.server.to_string(),
            duration: f.end_us as f64 / 1e6,
            bucket_ms: f.buckets.width_us() as f64 / 1e3,
            buckets: f.buckets.len(),
            packets: f.packets,
            bytes: f.bytes,
            resends: [f.resends[0].seen(), f.resends[1].seen()],
            nacked: f.nacked,
            gaps: f.gaps,
            rtt_samples: samples,
            rtt_ms_min: any.then_some(f.rtt_min),
            rtt_ms_max: any.then_some(f.rtt_max),
        }
    }
}
