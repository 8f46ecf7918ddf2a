//! `plot FILE -o OUT.svg`: a picture per flow, over capture time.
//!
//! Each flow drawn gets four panels, all over the seconds since its first
//! packet: throughput each way (bytes/s of RakNet UDP payload, bucketed),
//! the resent packets each way (a marker per packet that carried a reliable
//! message again), the RTT samples (a data datagram to the first ACK that
//! covers it), and the loss each way per bucket (datagrams NACKed by the
//! receiver, and gaps in the datagram numbers it received).
//!
//! Memory is bounded whatever the capture: time series live in at most
//! [`MAX_BUCKETS`] buckets whose width doubles as a flow goes on, RTT samples
//! and resend markers are thinned past a cap, and at most [`MAX_TRACKED`]
//! flows are followed (the first seen).
//!
//! Colours are fixed, so that a reader (and the tests) can tell the series
//! apart: blue is client to server (`c2s`), orange server to client (`s2c`);
//! in the loss panel the darker shade is NACKed datagrams, the lighter gaps.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Seek, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{drive, mirror_config, CaptureArgs, Next, EXIT_BAD_FILE, EXIT_ERROR, EXIT_USAGE};
use crate::dissect::{Body, Dir, Packet};
use crate::mirror::{Mirror, Observation};
use crate::wire::Datagram;

/// `plot`: draw each flow (or one) as an SVG.
#[derive(Args, Debug, Default)]
pub struct PlotArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// Where to write the SVG; `-` writes it to standard output.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: PathBuf,
    /// Draw from this time on: seconds since the capture's first packet, the
    /// clock of `read`'s lines. The time axes then count on that clock too.
    #[arg(long, value_name = "SECONDS", value_parser = super::args::parse_seconds)]
    pub from: Option<Duration>,
    /// Draw up to this time (seconds since the capture's first packet).
    #[arg(long, value_name = "SECONDS", value_parser = super::args::parse_seconds)]
    pub to: Option<Duration>,
}

/// Buckets a flow's time series has at most; past them, their width doubles.
pub const MAX_BUCKETS: usize = 256;
/// The narrowest bucket, in microseconds.
const BASE_BUCKET_US: u64 = 1_000;
/// RTT points kept per flow and direction; past it, every other one goes.
pub const MAX_RTT_POINTS: usize = 1_000;
/// Resend markers kept per flow and direction; past it, every other one goes.
pub const MAX_RESEND_MARKS: usize = 1_000;
/// Flows followed at once: the first seen. Later ones are only counted.
pub const MAX_TRACKED: usize = 256;
/// Flows drawn at most: those with the most packets.
pub const MAX_DRAWN: usize = 16;
/// Flows named one by one on stderr when some are left out.
const MAX_LISTED: usize = 20;

/// Client to server: throughput, RTT of its datagrams, resend markers.
const C2S: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
/// Server to client.
const S2C: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
/// Loss: datagrams NACKed, c2s and s2c.
const NACK_C2S: RGBColor = RGBColor(0x08, 0x30, 0x6b);
const NACK_S2C: RGBColor = RGBColor(0xa6, 0x36, 0x03);
/// Loss: gaps in the datagram numbers received, c2s and s2c.
const GAP_C2S: RGBColor = RGBColor(0x6b, 0xae, 0xd6);
const GAP_S2C: RGBColor = RGBColor(0xfd, 0xae, 0x6b);

const WIDTH: u32 = 1100;
/// Height of one flow's picture: title and four panels.
const FLOW_HEIGHT: u32 = 960;
const TITLE_H: u32 = 58;
const THROUGHPUT_H: u32 = 260;
const RESEND_H: u32 = 110;
const RTT_H: u32 = 230;
/// Space between two panels.
const PANEL_GAP: u32 = 14;
const FONT: &str = "sans-serif";

/// Series of a flow's buckets: bytes, datagrams NACKed, gaps; each per direction.
const CH_BYTES: usize = 0;
const CH_NACKED: usize = 2;
const CH_GAPS: usize = 4;
const CHANNELS: usize = 6;

/// Time series in fixed-width buckets from time 0: at most `cap` buckets;
/// a time past the last doubles the width, merging buckets by pairs.
#[derive(Debug, Clone)]
pub struct Buckets {
    width_us: u64,
    cap: usize,
    bins: Vec<[u64; CHANNELS]>,
}

impl Buckets {
    /// Buckets `base_us` wide (at least 1 µs), at most `cap` of them (at least 2).
    pub fn new(base_us: u64, cap: usize) -> Self {
        Buckets {
            width_us: base_us.max(1),
            cap: cap.max(2),
            bins: Vec::new(),
        }
    }

    /// Add `v` to series `ch` at `t_us` (microseconds from the start).
    pub fn add(&mut self, t_us: u64, ch: usize, v: u64) {
        if ch >= CHANNELS {
            return;
        }
        let mut i = t_us / self.width_us;
        while i >= self.cap as u64 {
            self.widen();
            i = t_us / self.width_us;
        }
        // i < cap, so it fits a usize.
        let i = i as usize;
        if self.bins.len() <= i {
            self.bins.resize(i + 1, [0; CHANNELS]);
        }
        self.bins[i][ch] = self.bins[i][ch].saturating_add(v);
    }

    /// Make the buckets as wide again, summing them by pairs.
    fn widen(&mut self) {
        let merged: Vec<[u64; CHANNELS]> = self
            .bins
            .chunks(2)
            .map(|pair| {
                let mut m = pair[0];
                if let Some(b) = pair.get(1) {
                    for (x, y) in m.iter_mut().zip(b) {
                        *x = x.saturating_add(*y);
                    }
                }
                m
            })
            .collect();
        self.bins = merged;
        self.width_us = self.width_us.saturating_mul(2);
    }

    /// Width of a bucket, in microseconds.
    pub fn width_us(&self) -> u64 {
        self.width_us
    }

    /// Buckets in use: up to the last one that something fell in.
    pub fn len(&self) -> usize {
        self.bins.len()
    }

    /// Series `ch`, one value per bucket (`len()` values).
    pub fn series(&self, ch: usize) -> Vec<u64> {
        self.bins
            .iter()
            .map(|b| b.get(ch).copied().unwrap_or(0))
            .collect()
    }
}

/// A sample of at most `cap` items spread evenly over all pushed: every
/// `stride`-th item is kept; at the cap, every other kept item goes and the
/// stride doubles.
#[derive(Debug, Clone)]
pub struct Thinned<T> {
    cap: usize,
    stride: u64,
    seen: u64,
    items: Vec<T>,
}

impl<T> Thinned<T> {
    /// At most `cap` items (at least 2; rounded up to even, so that the
    /// kept items stay evenly spaced).
    pub fn new(cap: usize) -> Self {
        Thinned {
            cap: cap.max(2).next_multiple_of(2),
            stride: 1,
            seen: 0,
            items: Vec::new(),
        }
    }

    /// Offer an item.
    pub fn push(&mut self, x: T) {
        let n = self.seen;
        self.seen += 1;
        if n % self.stride != 0 {
            return;
        }
        if self.items.len() >= self.cap {
            let mut k = 0usize;
            self.items.retain(|_| {
                k += 1;
                k % 2 == 1
            });
            self.stride = self.stride.saturating_mul(2);
            if n % self.stride != 0 {
                return;
            }
        }
        self.items.push(x);
    }

    /// The items kept, in the order pushed.
    pub fn items(&self) -> &[T] {
        &self.items
    }

    /// Items offered, kept or not.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// One item kept for every `stride()` offered.
    #[cfg(test)]
    pub fn stride(&self) -> u64 {
        self.stride
    }
}

/// Datagram numbers an ACK/NACK range covers (24-bit numbers, so at most 2^24).
pub fn range_len(min: u32, max: u32) -> u64 {
    u64::from(max.wrapping_sub(min) & 0xff_ffff) + 1
}

/// What the picture needs of one flow.
struct FlowPlot {
    id: u32,
    client: SocketAddr,
    server: SocketAddr,
    start: Duration,
    /// With `--from`/`--to`: `start` in seconds since the capture's first
    /// packet, added to the time axes' labels.
    axis_offset: Option<f64>,
    /// The latest time seen, in µs from `start`.
    end_us: u64,
    packets: [u64; 2],
    bytes: [u64; 2],
    buckets: Buckets,
    /// RTT points (µs from start, ms), by the direction of the acknowledged datagrams.
    rtt: [Thinned<(u64, f64)>; 2],
    rtt_min: f64,
    rtt_max: f64,
    /// Times (µs from start) of the packets with a `resend` finding, by direction.
    resends: [Thinned<u64>; 2],
    nacked: [u64; 2],
    gaps: [u64; 2],
}

impl FlowPlot {
    fn new(p: &Packet<'_>) -> Self {
        let mut f = FlowPlot {
            id: p.flow,
            client: p.src,
            server: p.dst,
            start: p.ts,
            axis_offset: None,
            end_us: 0,
            packets: [0; 2],
            bytes: [0; 2],
            buckets: Buckets::new(BASE_BUCKET_US, MAX_BUCKETS),
            rtt: [Thinned::new(MAX_RTT_POINTS), Thinned::new(MAX_RTT_POINTS)],
            rtt_min: f64::INFINITY,
            rtt_max: 0.0,
            resends: [
                Thinned::new(MAX_RESEND_MARKS),
                Thinned::new(MAX_RESEND_MARKS),
            ],
            nacked: [0; 2],
            gaps: [0; 2],
        };
        f.roles(p);
        f
    }

    /// Client and server as the dissector sees them now (a handshake can settle them late).
    fn roles(&mut self, p: &Packet<'_>) {
        (self.client, self.server) = match p.dir {
            Dir::C2s => (p.src, p.dst),
            Dir::S2c => (p.dst, p.src),
        };
    }

    fn observe(&mut self, p: &Packet<'_>, obs: &Observation) {
        self.roles(p);
        let t = u64::try_from(p.ts.saturating_sub(self.start).as_micros()).unwrap_or(u64::MAX);
        self.end_us = self.end_us.max(t);
        let d = p.dir.index();
        self.packets[d] += 1;
        let len = p.payload.len() as u64;
        self.bytes[d] += len;
        self.buckets.add(t, CH_BYTES + d, len);
        let mut findings = p.anomalies.iter().chain(&obs.anomalies);
        match &p.body {
            Body::Datagram(Some(Datagram::Nack(l))) => {
                // A NACK covers datagrams sent the other way.
                let n: u64 = l.ranges.iter().map(|r| range_len(r.min, r.max)).sum();
                let o = p.dir.reverse().index();
                self.nacked[o] += n;
                self.buckets.add(t, CH_NACKED + o, n);
            }
            Body::Datagram(Some(Datagram::Ack(_))) => {
                // Samples of datagrams sent the other way.
                let o = p.dir.reverse().index();
                for &ms in &obs.rtt_ms {
                    if ms.is_finite() {
                        self.rtt_min = self.rtt_min.min(ms);
                        self.rtt_max = self.rtt_max.max(ms);
                        self.rtt[o].push((t, ms));
                    }
                }
            }
            Body::Datagram(_) => {
                let mut resent = false;
                for a in findings.by_ref() {
                    match a.kind {
                        "resend" => resent = true,
                        "gap" => {
                            self.gaps[d] += 1;
                            self.buckets.add(t, CH_GAPS + d, 1);
                        }
                        _ => {}
                    }
                }
                if resent {
                    self.resends[d].push(t);
                }
            }
            Body::Offline { .. } => {}
        }
    }

    fn total_packets(&self) -> u64 {
        self.packets[0] + self.packets[1]
    }
}

/// The flows followed while reading, and what was only counted.
#[derive(Default)]
struct Collector {
    only: Option<u32>,
    /// `--from`, `--to`: the part of the capture drawn, from its first packet.
    window: Option<(Duration, Duration)>,
    flows: HashMap<u32, FlowPlot>,
    /// The highest flow id seen (the dissector numbers flows in sequence).
    max_id: u32,
    seen_flows: u64,
    first_ids: Vec<u32>,
    untracked_flows: u64,
    untracked_packets: u64,
}

impl Collector {
    /// `since`: the capture's first packet's time.
    fn observe(&mut self, p: &Packet<'_>, obs: &Observation, since: Duration) {
        if p.flow > self.max_id {
            self.max_id = p.flow;
            self.seen_flows += 1;
            if self.first_ids.len() < MAX_LISTED {
                self.first_ids.push(p.flow);
            }
        }
        if self.only.is_some_and(|n| n != p.flow) {
            return;
        }
        let rel = p.ts.saturating_sub(since);
        if self.window.is_some_and(|(from, to)| rel < from || rel > to) {
            return;
        }
        if let Some(f) = self.flows.get_mut(&p.flow) {
            f.observe(p, obs);
        } else if self.flows.len() < MAX_TRACKED {
            let mut f = FlowPlot::new(p);
            if let Some((from, _)) = self.window {
                // Every flow's axis starts at --from, on the capture's clock.
                f.start = since + from;
                f.axis_offset = Some(from.as_secs_f64());
            }
            f.observe(p, obs);
            self.flows.insert(p.flow, f);
        } else {
            // Its flow is counted at the end, from the id sequence.
            self.untracked_packets += 1;
        }
    }
}

/// The output file, opened (not truncated) before the capture is read.
struct Output {
    path: PathBuf,
    file: Option<File>,
    created: bool,
}

impl Output {
    fn open(path: &Path) -> Result<Output, String> {
        if path.as_os_str() == "-" {
            return Ok(Output {
                path: path.to_path_buf(),
                file: None,
                created: false,
            });
        }
        let existed = path.exists();
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| e.to_string())?;
        Ok(Output {
            path: path.to_path_buf(),
            file: Some(file),
            created: !existed,
        })
    }

    /// Nothing to write after all: remove the file if it is ours.
    fn abandon(self) {
        if self.created {
            drop(self.file);
            let _ = std::fs::remove_file(&self.path);
        }
    }

    fn write(self, svg: &str, out: &mut impl Write) -> Result<(), String> {
        match self.file {
            None => out.write_all(svg.as_bytes()).map_err(|e| e.to_string()),
            Some(mut f) => {
                f.set_len(0).map_err(|e| e.to_string())?;
                f.rewind().map_err(|e| e.to_string())?;
                f.write_all(svg.as_bytes()).map_err(|e| e.to_string())?;
                f.flush().map_err(|e| e.to_string())
            }
        }
    }
}

/// `plot`: read the capture, then write the SVG. Exit codes as for `read`,
/// and 1 when the output cannot be written, 2 when `--flow N` is not in
/// the capture.
pub fn run_plot(args: &PlotArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let shown = args.output.display();
    for input in &args.capture.paths() {
        let same = input.as_os_str() != "-"
            && args.output.as_os_str() != "-"
            && matches!(
                (input.canonicalize(), args.output.canonicalize()),
                (Ok(a), Ok(b)) if a == b
            );
        if same {
            eprintln!("raknet-dissect: {shown} is the capture file: not overwriting it");
            return Ok(EXIT_USAGE);
        }
    }
    let output = match Output::open(&args.output) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("raknet-dissect: cannot write {shown}: {e}");
            return Ok(EXIT_ERROR);
        }
    };
    let mut cfg = mirror_config(&args.capture);
    // The picture needs findings and RTT samples, not the messages.
    cfg.receive.keep_data = false;
    cfg.messages = false;
    let mut mirror = Mirror::new(cfg, false);
    let window = match (args.from, args.to) {
        (None, None) => None,
        (from, to) => Some((from.unwrap_or_default(), to.unwrap_or(Duration::MAX))),
    };
    if let Some((from, to)) = window.filter(|(from, to)| from > to) {
        output.abandon();
        eprintln!(
            "raknet-dissect: --from {} is after --to {}",
            from.as_secs_f64(),
            to.as_secs_f64()
        );
        return Ok(EXIT_USAGE);
    }
    let mut col = Collector {
        only: args.capture.flow,
        window,
        ..Collector::default()
    };
    let mut sink = std::io::sink();
    // Nothing is printed until the picture is written: a progress bar may
    // share the terminal.
    let code = drive(
        &args.capture.printing_at_end(),
        &mut mirror,
        &mut sink,
        |p, obs, since, _| {
            col.observe(p, obs, since);
            Ok(Next::Continue)
        },
    )?;
    if code == EXIT_USAGE || code == EXIT_BAD_FILE {
        output.abandon();
        return Ok(code);
    }
    col.untracked_flows = col.seen_flows.saturating_sub(col.flows.len() as u64);
    if let Some(n) = args.capture.flow {
        if !col.flows.contains_key(&n) {
            output.abandon();
            match window {
                Some(_) if n >= 1 && n <= col.max_id => {
                    let part = match (args.from, args.to) {
                        (Some(f), Some(t)) => {
                            format!("between {} s and {} s", f.as_secs_f64(), t.as_secs_f64())
                        }
                        (Some(f), None) => format!("from {} s on", f.as_secs_f64()),
                        (None, t) => format!("up to {} s", t.unwrap_or_default().as_secs_f64()),
                    };
                    eprintln!("raknet-dissect: flow {n} has no packet {part}");
                }
                _ => {
                    let ids = list_ids(&col.first_ids, col.seen_flows);
                    eprintln!("raknet-dissect: no flow {n} in the capture ({ids})");
                }
            }
            return Ok(EXIT_USAGE);
        }
    }
    let mut chosen: Vec<&FlowPlot> = col.flows.values().collect();
    // The most packets first; ties by id.
    chosen.sort_by_key(|f| (std::cmp::Reverse(f.total_packets()), f.id));
    let mut left: Vec<&FlowPlot> = chosen.split_off(chosen.len().min(MAX_DRAWN));
    chosen.sort_by_key(|f| f.id);
    left.sort_by_key(|f| f.id);
    report_left_out(&chosen, &left, &col);
    let svg = match render(&chosen) {
        Ok(s) => s,
        Err(e) => {
            output.abandon();
            anyhow::bail!("plot: drawing failed: {e}");
        }
    };
    if let Err(e) = output.write(&svg, out) {
        eprintln!("raknet-dissect: cannot write {shown}: {e}");
        return Ok(EXIT_ERROR);
    }
    Ok(code)
}

/// "it has 3 flows: 1, 2, 3" or "it has no RakNet flow".
fn list_ids(first: &[u32], count: u64) -> String {
    if count == 0 {
        return "it has no RakNet flow".to_string();
    }
    let ids: Vec<String> = first.iter().map(u32::to_string).collect();
    let more = if count > first.len() as u64 {
        ", ..."
    } else {
        ""
    };
    let s = if count == 1 { "" } else { "s" };
    format!("it has {count} flow{s}: {}{more}", ids.join(", "))
}

/// Say on stderr which flows are not in the picture.
fn report_left_out(drawn: &[&FlowPlot], left: &[&FlowPlot], col: &Collector) {
    if left.is_empty() && col.untracked_flows == 0 {
        return;
    }
    if !left.is_empty() {
        let names: Vec<String> = left
            .iter()
            .take(MAX_LISTED)
            .map(|f| format!("{} ({} packets)", f.id, f.total_packets()))
            .collect();
        let more = left.len().saturating_sub(MAX_LISTED);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        eprintln!(
            "raknet-dissect: plot: drew the {} flows with the most packets; left out flows {}{more} (--flow N draws one)",
            drawn.len(),
            names.join(", ")
        );
    }
    if col.untracked_flows > 0 {
        eprintln!(
            "raknet-dissect: plot: {} flows ({} packets) after the first {MAX_TRACKED} were not followed and are left out (--flow N draws one)",
            col.untracked_flows, col.untracked_packets
        );
    }
}

/// A bucket width for people: "64 ms", "2.048 s", "500 µs".
pub fn human_width(us: u64) -> String {
    if us < 1_000 {
        format!("{us} µs")
    } else if us < 10_000_000 && us % 1_000 == 0 {
        format!("{} ms", us / 1_000)
    } else {
        format!("{} s", trim_float(us as f64 / 1e6, 3))
    }
}

/// `v` with at most `decimals` decimals, without trailing zeros.
fn trim_float(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A unit for a rate in bytes/s: (divisor, name).
fn rate_unit(max: f64) -> (f64, &'static str) {
    if max >= 1e6 {
        (1e6, "MB/s")
    } else if max >= 1e3 {
        (1e3, "kB/s")
    } else {
        (1.0, "B/s")
    }
}

/// An axis label with no more decimals than the axis needs.
fn tick(v: f64, span: f64) -> String {
    if span >= 20.0 {
        format!("{v:.0}")
    } else if span >= 2.0 {
        trim_float(v, 1)
    } else {
        trim_float(v, 3)
    }
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// The whole SVG document.
fn render(flows: &[&FlowPlot]) -> Result<String, String> {
    let mut buf = String::new();
    {
        let height = if flows.is_empty() {
            120
        } else {
            FLOW_HEIGHT * flows.len() as u32
        };
        let root = SVGBackend::with_string(&mut buf, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        if flows.is_empty() {
            root.draw_text(
                "no RakNet flow in this capture",
                &(FONT, 20).into_text_style(&root),
                (30, 50),
            )
            .map_err(|e| e.to_string())?;
        }
        for (area, f) in root.split_evenly((flows.len().max(1), 1)).iter().zip(flows) {
            draw_flow(area, f).map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(buf)
}

/// One flow: its title, then the four panels.
fn draw_flow<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, f: &FlowPlot) -> DrawResult<DB> {
    let area = area.margin(8, 8, 12, 12);
    let (title, rest) = area.split_vertically(TITLE_H);
    let (tput, rest) = rest.split_vertically(THROUGHPUT_H);
    let (_, rest) = rest.split_vertically(PANEL_GAP);
    let (resend, rest) = rest.split_vertically(RESEND_H);
    let (_, rest) = rest.split_vertically(PANEL_GAP);
    let (rtt, rest) = rest.split_vertically(RTT_H);
    let (_, loss) = rest.split_vertically(PANEL_GAP);

    // Separate flows with a rule above each title.
    title.draw(&PathElement::new(
        vec![(0, 2), (WIDTH as i32, 2)],
        BLACK.mix(0.3).stroke_width(1),
    ))?;
    title.draw_text(
        &format!(
            "flow {}: {} (client) → {} (server)",
            f.id, f.client, f.server
        ),
        &(FONT, 20, FontStyle::Bold).into_text_style(&title),
        (4, 10),
    )?;
    title.draw_text(&summary(f), &(FONT, 14).into_text_style(&title), (4, 36))?;

    let b = &f.buckets;
    let n = b.len().max(1);
    let width_s = b.width_us() as f64 / 1e6;
    let x_max = n as f64 * width_s;
    let xs = |i: usize| (i as f64 + 0.5) * width_s;
    let off = f.axis_offset.unwrap_or(0.0);
    let x_fmt = |v: &f64| tick(*v + off, x_max);
    let bucket = human_width(b.width_us());
    let time_desc = if f.axis_offset.is_some() {
        "time since the capture's first packet (s)"
    } else {
        "time since the flow's first packet (s)"
    };

    // 1. Throughput.
    let rates: [Vec<f64>; 2] = [0, 1].map(|d| {
        b.series(CH_BYTES + d)
            .into_iter()
            .map(|v| v as f64 / width_s)
            .collect()
    });
    let max_rate = rates.iter().flatten().copied().fold(0.0, f64::max);
    let (div, unit) = rate_unit(max_rate);
    let y_max = (max_rate / div * 1.1).max(1.0);
    let plot = header(
        &tput,
        &format!("Throughput: RakNet UDP payload, in {bucket} buckets"),
        &[
            (Key::Square(C2S), "c2s (client → server)"),
            (Key::Square(S2C), "s2c (server → client)"),
        ],
    )?;
    let mut chart = chart_on(&plot, x_max, y_max)?;
    let y_fmt = |v: &f64| tick(*v, y_max);
    chart
        .configure_mesh()
        .x_desc(time_desc)
        .y_desc(format!("throughput ({unit})"))
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 13))
        .light_line_style(TRANSPARENT)
        .bold_line_style(BLACK.mix(0.12))
        .draw()?;
    for (d, color) in [C2S, S2C].into_iter().enumerate() {
        let pts: Vec<(f64, f64)> = rates[d]
            .iter()
            .enumerate()
            .map(|(i, v)| (xs(i), v / div))
            .collect();
        chart.draw_series(LineSeries::new(pts, color.stroke_width(2)))?;
    }

    // 2. Resent packets, a row per direction.
    let plot = header(
        &resend,
        "Resent packets: ▲ a data datagram carrying a reliable message again",
        &[],
    )?;
    let mut chart = ChartBuilder::on(&plot)
        .margin_right(16)
        .x_label_area_size(24)
        .y_label_area_size(Y_LABEL_W)
        .build_cartesian_2d(0.0..x_max, -0.6..1.6)?;
    let row_fmt = |v: &f64| {
        if (*v - 1.0).abs() < 1e-6 {
            "c2s".to_string()
        } else if v.abs() < 1e-6 {
            "s2c".to_string()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(3)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&row_fmt)
        .label_style((FONT, 12))
        .light_line_style(TRANSPARENT)
        .bold_line_style(BLACK.mix(0.12))
        .draw()?;
    for (d, (color, row)) in [(C2S, 1.0), (S2C, 0.0)].into_iter().enumerate() {
        chart.draw_series(
            f.resends[d]
                .items()
                .iter()
                .map(|&t| TriangleMarker::new((t as f64 / 1e6, row), 6, color.filled())),
        )?;
    }
    if f.resends.iter().all(|r| r.seen() == 0) {
        note(&chart, x_max, 0.5, "no resends")?;
    }

    // 3. RTT.
    let rtt_top = if f.rtt_max > 0.0 {
        f.rtt_max * 1.15
    } else {
        1.0
    };
    let plot = header(
        &rtt,
        "RTT: a data datagram to the first ACK that covers it, as seen at the capture point",
        &[
            (Key::Square(C2S), "c2s datagrams, ACKed by the server"),
            (Key::Square(S2C), "s2c datagrams, ACKed by the client"),
        ],
    )?;
    let mut chart = chart_on(&plot, x_max, rtt_top)?;
    let rtt_fmt = |v: &f64| tick(*v, rtt_top);
    chart
        .configure_mesh()
        .x_desc(time_desc)
        .y_desc("RTT (ms)")
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&rtt_fmt)
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 13))
        .light_line_style(TRANSPARENT)
        .bold_line_style(BLACK.mix(0.12))
        .draw()?;
    for (d, color) in [C2S, S2C].into_iter().enumerate() {
        chart.draw_series(
            f.rtt[d]
                .items()
                .iter()
                .map(|&(t, ms)| Circle::new((t as f64 / 1e6, ms), 3, color.filled())),
        )?;
    }
    if f.rtt.iter().all(|r| r.seen() == 0) {
        note(
            &chart,
            x_max,
            rtt_top / 2.0,
            "no RTT samples: no ACK covered a data datagram of the capture",
        )?;
    }

    // 4. Loss.
    let series: [(usize, Key, &str); 4] = [
        (CH_NACKED, Key::Dot(NACK_C2S), "c2s datagrams NACKed"),
        (CH_GAPS, Key::Ring(GAP_C2S), "c2s gaps (numbers skipped)"),
        (CH_NACKED + 1, Key::Dot(NACK_S2C), "s2c datagrams NACKed"),
        (
            CH_GAPS + 1,
            Key::Ring(GAP_S2C),
            "s2c gaps (numbers skipped)",
        ),
    ];
    let keys: Vec<(Key, &str)> = series.iter().map(|&(_, k, name)| (k, name)).collect();
    let plot = header(
        &loss,
        &format!("Loss: datagrams the receiver NACKed, and gaps in the numbers it got, in {bucket} buckets"),
        &keys,
    )?;
    let counts: Vec<Vec<u64>> = series.iter().map(|(ch, ..)| b.series(*ch)).collect();
    // c2s above the axis, s2c below it.
    let peak = |c: &[Vec<u64>]| c.iter().flatten().copied().max().unwrap_or(0);
    let (up, down) = (peak(&counts[..2]), peak(&counts[2..]));
    let top = (up as f64 * 1.25).max(1.0);
    let bottom = -(down as f64 * 1.25).max(1.0);
    let mut chart = ChartBuilder::on(&plot)
        .margin_right(16)
        .x_label_area_size(38)
        .y_label_area_size(Y_LABEL_W)
        .build_cartesian_2d(0.0..x_max, bottom..top)?;
    // Whole numbers only, each named by its side of the axis.
    let count_fmt = |v: &f64| match v {
        v if v.fract().abs() > 1e-9 => String::new(),
        v if *v > 0.5 => format!("c2s {v:.0}"),
        v if *v < -0.5 => format!("s2c {:.0}", -v),
        _ => "0".to_string(),
    };
    chart
        .configure_mesh()
        .x_desc(time_desc)
        .y_desc("datagrams per bucket")
        .y_labels(((top - bottom).floor() as usize + 1).min(9))
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&count_fmt)
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 13))
        .light_line_style(TRANSPARENT)
        .bold_line_style(BLACK.mix(0.12))
        .draw()?;
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(0.0, 0.0), (x_max, 0.0)],
        BLACK.mix(0.6).stroke_width(1),
    )))?;
    // A stem and a marker per bucket with loss: NACKed left, gaps right.
    for (k, ((_, key, _), values)) in series.iter().zip(&counts).enumerate() {
        let sign = if k < 2 { 1.0 } else { -1.0 };
        let dx = if k % 2 == 0 {
            -width_s / 4.0
        } else {
            width_s / 4.0
        };
        let hits: Vec<(f64, f64)> = values
            .iter()
            .enumerate()
            .filter(|&(_, &v)| v > 0)
            .map(|(i, &v)| (xs(i) + dx, sign * v as f64))
            .collect();
        let color = key.color();
        chart.draw_series(
            hits.iter()
                .map(|&(x, v)| PathElement::new(vec![(x, 0.0), (x, v)], color.stroke_width(2))),
        )?;
        chart.draw_series(hits.iter().map(|&p| Circle::new(p, 3, key.style())))?;
    }
    if up == 0 && down == 0 {
        note(&chart, x_max, top / 2.0, "no loss seen: no NACK, no gap")?;
    }
    Ok(())
}

/// Width of the y axis labels and description, left of each panel.
const Y_LABEL_W: i32 = 64;

/// A legend entry's sample.
#[derive(Clone, Copy)]
enum Key {
    Square(RGBColor),
    Dot(RGBColor),
    Ring(RGBColor),
}

impl Key {
    fn color(self) -> RGBColor {
        match self {
            Key::Square(c) | Key::Dot(c) | Key::Ring(c) => c,
        }
    }

    /// How markers of this series are drawn.
    fn style(self) -> ShapeStyle {
        match self {
            Key::Ring(c) => c.stroke_width(2),
            Key::Square(c) | Key::Dot(c) => c.filled(),
        }
    }
}

/// A panel's caption and legend, above the plot and never over it; returns
/// the area left for the plot.
fn header<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    caption: &str,
    keys: &[(Key, &str)],
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    let (top, rest) = area.split_vertically(if keys.is_empty() { 24 } else { 44 });
    top.draw_text(
        caption,
        &(FONT, 15, FontStyle::Bold).into_text_style(&top),
        (Y_LABEL_W, 2),
    )?;
    let style = (FONT, 12)
        .into_text_style(&top)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let (mut x, y) = (Y_LABEL_W, 32);
    for &(key, label) in keys {
        match key {
            Key::Square(c) => {
                top.draw(&Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled()))?
            }
            Key::Dot(_) | Key::Ring(_) => top.draw(&Circle::new((x + 7, y), 4, key.style()))?,
        }
        top.draw_text(label, &style, (x + 20, y))?;
        let (w, _) = top.estimate_text_size(label, &style)?;
        x += 20 + w as i32 + 28;
    }
    Ok(rest)
}

/// A chart over time (0 to `x_max` s) and 0 to `y_max`.
fn chart_on<'a, DB: DrawingBackend + 'a>(
    area: &'a DrawingArea<DB, Shift>,
    x_max: f64,
    y_max: f64,
) -> Result<Chart<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    ChartBuilder::on(area)
        .margin_right(16)
        .x_label_area_size(38)
        .y_label_area_size(Y_LABEL_W)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)
}

type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A grey remark in the middle of a panel.
fn note<'a, DB: DrawingBackend + 'a>(
    chart: &Chart<'a, DB>,
    x_max: f64,
    y: f64,
    text: &str,
) -> DrawResult<DB> {
    let grey = BLACK.mix(0.55);
    let style = TextStyle::from((FONT, 14).into_font())
        .color(&grey)
        .pos(Pos::new(HPos::Center, VPos::Center));
    chart
        .plotting_area()
        .draw(&Text::new(text.to_string(), (x_max / 2.0, y), style))
}

/// The second title line: duration, packets, resends, loss, RTT.
fn summary(f: &FlowPlot) -> String {
    let dur = trim_float(f.end_us as f64 / 1e6, 3);
    let rtt_n = f.rtt[0].seen() + f.rtt[1].seen();
    let rtt = if rtt_n == 0 {
        "no RTT sample".to_string()
    } else {
        format!(
            "RTT {}–{} ms ({rtt_n} samples)",
            trim_float(f.rtt_min, 2),
            trim_float(f.rtt_max, 2)
        )
    };
    format!(
        "duration {dur} s; packets {} c2s / {} s2c; resent packets {} / {}; NACKed {} / {}; gaps {} / {}; {rtt}",
        f.packets[0],
        f.packets[1],
        f.resends[0].seen(),
        f.resends[1].seen(),
        f.nacked[0],
        f.nacked[1],
        f.gaps[0],
        f.gaps[1],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_fill_without_widening() {
        let mut b = Buckets::new(1_000, 8);
        b.add(0, CH_BYTES, 10);
        b.add(999, CH_BYTES, 5);
        b.add(1_000, CH_BYTES + 1, 7);
        b.add(7_999, CH_GAPS, 1);
        assert_eq!(b.width_us(), 1_000);
        assert_eq!(b.len(), 8);
        assert_eq!(b.series(CH_BYTES), vec![15, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(b.series(CH_BYTES + 1), vec![0, 7, 0, 0, 0, 0, 0, 0]);
        assert_eq!(b.series(CH_GAPS)[7], 1);
    }

    #[test]
    fn buckets_widen_by_pairs_and_keep_sums() {
        let mut b = Buckets::new(1_000, 8);
        for t in 0..8u64 {
            b.add(t * 1_000, CH_BYTES, t + 1);
        }
        // 8 ms: past 8 buckets of 1 ms, so 2 ms wide, then 4 ms.
        b.add(8_000, CH_BYTES, 100);
        assert_eq!(b.width_us(), 2_000);
        assert_eq!(b.series(CH_BYTES), vec![3, 7, 11, 15, 100]);
        b.add(31_999, CH_NACKED, 2);
        assert_eq!(b.width_us(), 4_000);
        assert_eq!(b.len(), 8);
        assert_eq!(b.series(CH_BYTES), vec![10, 26, 100, 0, 0, 0, 0, 0]);
        assert_eq!(b.series(CH_NACKED)[7], 2);
        let total: u64 = b.series(CH_BYTES).iter().sum();
        assert_eq!(total, 36 + 100);
    }

    #[test]
    fn buckets_stay_bounded_for_any_time() {
        let mut b = Buckets::new(1_000, MAX_BUCKETS);
        b.add(0, CH_BYTES, 1);
        b.add(u64::MAX, CH_BYTES, 1);
        b.add(u64::MAX / 2, CH_BYTES + 1, u64::MAX);
        b.add(u64::MAX / 2, CH_BYTES + 1, 5);
        assert!(b.len() <= MAX_BUCKETS);
        assert_eq!(b.series(CH_BYTES).iter().sum::<u64>(), 2);
        assert_eq!(b.series(CH_BYTES + 1).iter().sum::<u64>(), u64::MAX);
        // An unknown series is ignored.
        b.add(5, 99, 1);
        assert_eq!(b.series(99).iter().sum::<u64>(), 0);
    }

    #[test]
    fn buckets_for_a_ten_second_flow() {
        // lossy.pcap lasts 10.752436 s: 64 ms buckets, 169 of them.
        let mut b = Buckets::new(BASE_BUCKET_US, MAX_BUCKETS);
        b.add(0, CH_BYTES, 1);
        b.add(10_752_436, CH_BYTES, 1);
        assert_eq!(b.width_us(), 64_000);
        assert_eq!(b.len(), 169);
        assert_eq!(human_width(b.width_us()), "64 ms");
    }

    #[test]
    fn thinning_keeps_every_item_under_the_cap() {
        let mut t = Thinned::new(10);
        for i in 0..10 {
            t.push(i);
        }
        assert_eq!(t.items(), &(0..10).collect::<Vec<_>>()[..]);
        assert_eq!(t.stride(), 1);
    }

    #[test]
    fn thinning_is_bounded_and_even() {
        let mut t = Thinned::new(10);
        for i in 0..1_000u64 {
            t.push(i);
            assert!(t.items().len() <= 10);
        }
        assert_eq!(t.seen(), 1_000);
        let s = t.stride();
        assert!(s >= 100, "stride {s}");
        // Evenly spaced from the first, every `stride`-th.
        for (k, &v) in t.items().iter().enumerate() {
            assert_eq!(v, k as u64 * s);
        }
        // Still covers the whole run, not just its start.
        assert!(*t.items().last().unwrap() >= 1_000 - 2 * s);
    }

    #[test]
    fn thinning_an_odd_cap_rounds_up() {
        let mut t = Thinned::new(3);
        for i in 0..9u64 {
            t.push(i);
        }
        assert!(t.items().len() <= 4);
        assert_eq!(t.items(), &[0, 4, 8]);
    }

    #[test]
    fn nack_range_lengths() {
        assert_eq!(range_len(5, 5), 1);
        assert_eq!(range_len(5, 9), 5);
        // 24-bit numbers wrap.
        assert_eq!(range_len(0xff_fffe, 1), 4);
        assert_eq!(range_len(1, 0), 1 << 24);
    }

    #[test]
    fn labels() {
        assert_eq!(human_width(500), "500 µs");
        assert_eq!(human_width(64_000), "64 ms");
        assert_eq!(human_width(16_384_000), "16.384 s");
        assert_eq!(trim_float(2.50, 3), "2.5");
        assert_eq!(trim_float(3.0, 2), "3");
        assert_eq!(rate_unit(12_345.0), (1e3, "kB/s"));
        assert_eq!(rate_unit(12.0), (1.0, "B/s"));
        assert_eq!(list_ids(&[], 0), "it has no RakNet flow");
        assert_eq!(list_ids(&[1], 1), "it has 1 flow: 1");
        assert_eq!(list_ids(&[1, 2], 3), "it has 3 flows: 1, 2, ...");
    }

    #[test]
    fn an_empty_picture_is_still_an_svg() {
        let svg = render(&[]).expect("svg");
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("no RakNet flow"));
    }
}
