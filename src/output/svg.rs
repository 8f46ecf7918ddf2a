//! The `plot` picture: an SVG per capture, a block per flow drawn. A flow
//! with connected traffic gets four panels over time (throughput each way,
//! resent packets, RTT samples, loss); a flow of unconnected messages only
//! (pings and pongs) gets its title and a line saying so. The time axes
//! count in milliseconds when the flow spans less than 2 s.
//!
//! Colours are fixed, so that a reader (and the tests) can tell the series
//! apart: blue is client to server (`c2s`), orange server to client (`s2c`);
//! in the loss panel the darker shade is NACKed datagrams, the lighter gaps.

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::analysis::plot::{FlowPlot, CH_BYTES, CH_GAPS, CH_NACKED};

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
/// Height of a flow of unconnected messages only: its title and a line.
const OFFLINE_HEIGHT: u32 = 110;
const TITLE_H: u32 = 58;
const THROUGHPUT_H: u32 = 260;
const RESEND_H: u32 = 110;
const RTT_H: u32 = 230;
/// Space between two panels.
const PANEL_GAP: u32 = 14;
const FONT: &str = "sans-serif";

/// A bucket width for people: "64 ms", "2.048 s", "500 µs".
pub(crate) fn human_width(us: u64) -> String {
    if us < 1_000 {
        format!("{us} µs")
    } else if us < 10_000_000 && us.is_multiple_of(1_000) {
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

/// The time axis' unit for a span of `secs`: (factor from seconds, name).
fn time_unit(secs: f64) -> (f64, &'static str) {
    if secs < 2.0 {
        (1e3, "ms")
    } else {
        (1.0, "s")
    }
}

/// The whole SVG document.
pub(crate) fn render(flows: &[&FlowPlot]) -> Result<String, String> {
    let heights: Vec<u32> = flows.iter().map(|f| flow_height(f)).collect();
    let mut buf = String::new();
    {
        let height = heights.iter().sum::<u32>().max(120);
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
        let mut rest = root;
        for (f, h) in flows.iter().zip(heights) {
            let (area, below) = rest.split_vertically(h);
            draw_flow(&area, f).map_err(|e| e.to_string())?;
            rest = below;
        }
        rest.present().map_err(|e| e.to_string())?;
    }
    Ok(buf)
}

/// Whether a flow has connected traffic to draw panels of.
fn connected(f: &FlowPlot) -> bool {
    f.datagrams.iter().any(|&n| n > 0)
}

/// The height of a flow's block: four panels, or its title and a line.
fn flow_height(f: &FlowPlot) -> u32 {
    if connected(f) {
        FLOW_HEIGHT
    } else {
        OFFLINE_HEIGHT
    }
}

/// One flow: its title, then the four panels.
fn draw_flow<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, f: &FlowPlot) -> DrawResult<DB> {
    let w = f.words();
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
    if !connected(f) {
        let grey = BLACK.mix(0.55);
        let style = TextStyle::from((FONT, 14).into_font()).color(&grey);
        return tput.draw_text(
            "unconnected messages only (pings, pongs, a handshake that did not connect): no connected traffic to plot",
            &style,
            (Y_LABEL_W, 8),
        );
    }

    let b = &f.buckets;
    let n = b.len().max(1);
    // The x axis in seconds, or in milliseconds under 2 s.
    let (scale, unit) = time_unit(n as f64 * b.width_us() as f64 / 1e6);
    let width_s = b.width_us() as f64 / 1e6 * scale;
    let x_max = n as f64 * width_s;
    let xs = |i: usize| (i as f64 + 0.5) * width_s;
    let x_at = |t_us: u64| t_us as f64 / 1e6 * scale;
    let off = f.axis_offset.unwrap_or(0.0) * scale;
    let x_fmt = |v: &f64| tick(*v + off, x_max);
    let bucket = human_width(b.width_us());
    let time_desc = if f.axis_offset.is_some() {
        format!("time since the capture's first packet ({unit})")
    } else {
        format!("time since the flow's first packet ({unit})")
    };
    let time_desc = time_desc.as_str();

    // 1. Throughput.
    let rates: [Vec<f64>; 2] = [0, 1].map(|d| {
        b.series(CH_BYTES + d)
            .into_iter()
            .map(|v| v as f64 / (width_s / scale))
            .collect()
    });
    let max_rate = rates.iter().flatten().copied().fold(0.0, f64::max);
    let (div, unit) = rate_unit(max_rate);
    let y_max = (max_rate / div * 1.1).max(1.0);
    let plot = header(
        &tput,
        &format!("Throughput: {}, in {bucket} buckets", w.throughput),
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
    let plot = header(&resend, w.resent, &[])?;
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
                .map(|&t| TriangleMarker::new((x_at(t), row), 6, color.filled())),
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
        w.rtt,
        &[
            (Key::Square(C2S), w.rtt_keys[0]),
            (Key::Square(S2C), w.rtt_keys[1]),
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
                .map(|&(t, ms)| Circle::new((x_at(t), ms), 3, color.filled())),
        )?;
    }
    if f.rtt.iter().all(|r| r.seen() == 0) {
        note(&chart, x_max, rtt_top / 2.0, w.no_rtt)?;
    }

    // 4. Loss.
    let series: [(usize, Key, &str); 4] = [
        (CH_NACKED, Key::Dot(NACK_C2S), w.nacked[0]),
        (CH_GAPS, Key::Ring(GAP_C2S), w.gaps[0]),
        (CH_NACKED + 1, Key::Dot(NACK_S2C), w.nacked[1]),
        (CH_GAPS + 1, Key::Ring(GAP_S2C), w.gaps[1]),
    ];
    let keys: Vec<(Key, &str)> = series.iter().map(|&(_, k, name)| (k, name)).collect();
    let plot = header(&loss, &format!("{}, in {bucket} buckets", w.loss), &keys)?;
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
        .y_desc(w.loss_unit)
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
        note(&chart, x_max, top / 2.0, w.no_loss)?;
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
        "duration {dur} s; packets {} c2s / {} s2c; resent packets {} / {}; {} {} / {}; gaps {} / {}; {rtt}",
        f.packets[0],
        f.packets[1],
        f.resends[0].seen(),
        f.resends[1].seen(),
        if f.sctp.is_some() {
            "reported missing"
        } else {
            "NACKed"
        },
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
    fn labels() {
        assert_eq!(human_width(500), "500 µs");
        assert_eq!(human_width(64_000), "64 ms");
        assert_eq!(human_width(16_384_000), "16.384 s");
        assert_eq!(trim_float(2.50, 3), "2.5");
        assert_eq!(trim_float(3.0, 2), "3");
        assert_eq!(rate_unit(12_345.0), (1e3, "kB/s"));
        assert_eq!(rate_unit(12.0), (1.0, "B/s"));
        assert_eq!(time_unit(0.004), (1e3, "ms"));
        assert_eq!(time_unit(10.75), (1.0, "s"));
    }

    #[test]
    fn an_empty_picture_is_still_an_svg() {
        let svg = render(&[]).expect("svg");
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("no RakNet flow"));
    }
}
