//! NDJSON records (docs/json.md): one object per line,
//! snake_case keys in a fixed order, a `type` on every record, bytes in hex.

use serde::Serialize;

use crate::dissect::{Anomaly, IcmpNote};

pub use crate::records::value::motd_object;
pub use crate::wire::cursor::hex;

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

    use super::*;

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
