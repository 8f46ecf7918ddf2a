//! NDJSON records (docs/json.md): one object per line,
//! snake_case keys in a fixed order, a `type` on every record, bytes in hex.

use serde::Serialize;

pub(crate) use crate::wire::cursor::hex;

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
pub(crate) struct PlotFlowJson {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) flow: u32,
    pub(crate) transport: &'static str,
    pub(crate) client: String,
    pub(crate) server: String,
    /// Seconds from the flow's first packet drawn (or `--from`) to its last.
    pub(crate) duration: f64,
    pub(crate) bucket_ms: f64,
    pub(crate) buckets: usize,
    pub(crate) packets: [u64; 2],
    pub(crate) bytes: [u64; 2],
    pub(crate) resends: [u64; 2],
    pub(crate) nacked: [u64; 2],
    pub(crate) gaps: [u64; 2],
    pub(crate) rtt_samples: [u64; 2],
    pub(crate) rtt_ms_min: Option<f64>,
    pub(crate) rtt_ms_max: Option<f64>,
}

impl PlotFlowJson {
    pub(crate) fn new(f: &crate::analysis::plot::FlowPlot) -> Self {
        let samples = [f.rtt[0].seen(), f.rtt[1].seen()];
        let any = samples.iter().any(|&n| n > 0);
        PlotFlowJson {
            kind: "plot_flow",
            flow: f.id,
            transport: f.words().transport,
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
