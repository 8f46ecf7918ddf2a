//! `stats FILE`: a capture counted. The messages delivered to each side's
//! application (what `messages` prints) by message id, reliability and
//! ordering channel, and the traffic per time interval from the first packet:
//! packets, bytes, ACKs, NACKs, resends, messages. Across every flow, or one
//! with `--flow`.

use std::borrow::Cow;
use std::io::Write;
use std::time::Duration;

use clap::Args;
use serde::Serialize;

use super::args::parse_seconds;
use super::{drive, mirror_config, terminal_width, CaptureArgs, Next, EXIT_BAD_FILE, EXIT_USAGE};
use crate::dissect::Dir;
use crate::mirror::{Message, Mirror};
use crate::output::table;
use crate::wire::{message_name, Reliability};

/// Intervals counted at most: the buckets are a `Vec` of at most this many.
/// Traffic past the last one counts in the totals only.
pub const MAX_INTERVALS: usize = 100_000;
/// Interval rows the text table shows at most.
pub const MAX_TABLE_INTERVALS: usize = 10_000;

/// Arguments of `stats`.
#[derive(Args, Debug, Default)]
pub struct StatsArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// Length of the intervals of the traffic table, in seconds from the first
    /// packet (fractions allowed).
    #[arg(long, default_value = "1", value_name = "SECONDS", value_parser = parse_interval)]
    pub interval: Duration,
    // --json: `stats_id`, `stats_reliability`, `stats_channel` and
    // `stats_interval` records, then one `stats` record.
    #[command(flatten)]
    pub output: super::OutputArgs,
}

/// `--interval`: seconds as [`parse_seconds`] reads them, more than 0 (at least 1 ns).
fn parse_interval(s: &str) -> Result<Duration, String> {
    parse_seconds(s)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{s:?} is not an interval: seconds, more than 0, at most 1000000"))
}

/// Messages and their bytes.
#[derive(Serialize, Default, Clone, Copy, Debug, PartialEq, Eq)]
struct Msgs {
    messages: u64,
    bytes: u64,
}

impl Msgs {
    fn add(&mut self, len: usize) {
        self.messages += 1;
        self.bytes += len as u64;
    }
}

/// Traffic one way, in an interval or in the whole capture.
#[derive(Serialize, Default, Clone, Copy, Debug, PartialEq, Eq)]
struct Traffic {
    /// RakNet packets sent this way (offline, data, ACK, NACK).
    packets: u64,
    /// Their UDP payload bytes.
    bytes: u64,
    data: u64,
    acks: u64,
    nacks: u64,
    /// Capsules the mirror flagged `resend`.
    resends: u64,
    /// Messages delivered to this way's receiver, and their bytes.
    messages: u64,
    message_bytes: u64,
}

/// `[c2s, s2c]`.
type Both<T> = [T; 2];

/// Index of an empty message (no id) in [`Stats::ids`].
const NO_ID: usize = 256;
/// Index of every reliability above 7 (`INVALID`).
const INVALID: usize = 8;

/// Everything `stats` counts; memory is bounded whatever the input.
struct Stats {
    interval: Duration,
    /// Intervals allocated at most.
    cap: usize,
    /// The first packet's time (the intervals' origin) and the last's.
    first: Option<Duration>,
    last: Duration,
    /// By message id; [`NO_ID`] for empty messages.
    ids: Vec<Both<Msgs>>,
    /// By reliability number; [`INVALID`] above 7.
    reliabilities: Vec<Both<Msgs>>,
    channels: Vec<Both<Msgs>>,
    intervals: Vec<Both<Traffic>>,
    /// The highest interval number reached, past `cap` too.
    last_interval: u64,
    total: Both<Traffic>,
}

impl Stats {
    fn new(interval: Duration, cap: usize) -> Self {
        Stats {
            interval: interval.max(Duration::from_nanos(1)),
            cap,
            first: None,
            last: Duration::ZERO,
            ids: vec![Both::default(); NO_ID + 1],
            reliabilities: vec![Both::default(); INVALID + 1],
            channels: vec![Both::default(); 256],
            intervals: Vec::new(),
            last_interval: 0,
            total: Both::default(),
        }
    }

    /// The interval `ts` falls in, unless past the cap; the first call sets the
    /// origin. A time before the origin (a capture out of time order) falls in
    /// the first interval.
    fn slot(&mut self, ts: Duration) -> Option<&mut Both<Traffic>> {
        let first = *self.first.get_or_insert(ts);
        let n = ts.saturating_sub(first).as_nanos() / self.interval.as_nanos();
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        self.last_interval = self.last_interval.max(n);
        let i = usize::try_from(n).ok().filter(|&i| i < self.cap)?;
        if i >= self.intervals.len() {
            self.intervals.resize(i + 1, Both::default());
        }
        self.intervals.get_mut(i)
    }

    /// A RakNet packet of `kind` (`Packet::kind`), `len` payload bytes,
    /// carrying `resends` resent capsules.
    fn packet(&mut self, dir: Dir, ts: Duration, kind: &str, len: usize, resends: u64) {
        self.last = if self.first.is_some() {
            self.last.max(ts)
        } else {
            ts
        };
        let add = |t: &mut Traffic| {
            t.packets += 1;
            t.bytes += len as u64;
            match kind {
                "data" => t.data += 1,
                "ack" => t.acks += 1,
                "nack" => t.nacks += 1,
                _ => {}
            }
            t.resends += resends;
        };
        let d = dir.index();
        add(&mut self.total[d]);
        if let Some(b) = self.slot(ts) {
            add(&mut b[d]);
        }
    }

    /// A message delivered.
    fn message(&mut self, m: &Message) {
        let (d, len) = (m.dir.index(), m.data.len());
        let id = m.data.first().map_or(NO_ID, |&b| usize::from(b));
        self.ids[id][d].add(len);
        self.reliabilities[usize::from(m.reliability.0).min(INVALID)][d].add(len);
        if let Some(c) = m.channel {
            self.channels[usize::from(c)][d].add(len);
        }
        let add = |t: &mut Traffic| {
            t.messages += 1;
            t.message_bytes += len as u64;
        };
        add(&mut self.total[d]);
        if let Some(b) = self.slot(m.ts) {
            add(&mut b[d]);
        }
    }

    /// Intervals from the first packet to the last, counted or not.
    fn interval_count(&self) -> u64 {
        if self.first.is_some() {
            self.last_interval.saturating_add(1)
        } else {
            0
        }
    }

    /// Intervals with a row: the first [`Stats::interval_count`], at most `cap`.
    fn rows(&self, max: usize) -> impl Iterator<Item = (usize, Both<Traffic>)> + '_ {
        let n = usize::try_from(self.interval_count()).unwrap_or(usize::MAX);
        (0..n.min(self.cap).min(max))
            .map(|i| (i, self.intervals.get(i).copied().unwrap_or_default()))
    }

    /// Seconds from the first packet to the start of interval `i`.
    fn start(&self, i: usize) -> f64 {
        u32::try_from(i)
            .ok()
            .and_then(|i| self.interval.checked_mul(i))
            .map_or(f64::INFINITY, |d| d.as_secs_f64())
    }

    fn duration(&self) -> Duration {
        self.first
            .map_or(Duration::ZERO, |f| self.last.saturating_sub(f))
    }
}

/// The rows of `v` with a message, with their index.
fn used(v: &[Both<Msgs>]) -> impl Iterator<Item = (usize, &Both<Msgs>)> {
    v.iter()
        .enumerate()
        .filter(|(_, b)| b[0].messages + b[1].messages > 0)
}

fn reliability_name(i: usize) -> &'static str {
    Reliability(u8::try_from(i).unwrap_or(u8::MAX)).name()
}

fn id_name(i: usize) -> Option<Cow<'static, str>> {
    u8::try_from(i).ok().map(message_name)
}

#[derive(Serialize)]
struct IdJson {
    #[serde(rename = "type")]
    kind: &'static str,
    id: Option<u8>,
    name: Option<Cow<'static, str>>,
    c2s: Msgs,
    s2c: Msgs,
}

#[derive(Serialize)]
struct ReliabilityJson {
    #[serde(rename = "type")]
    kind: &'static str,
    reliability: &'static str,
    c2s: Msgs,
    s2c: Msgs,
}

#[derive(Serialize)]
struct ChannelJson {
    #[serde(rename = "type")]
    kind: &'static str,
    channel: usize,
    c2s: Msgs,
    s2c: Msgs,
}

#[derive(Serialize)]
struct IntervalJson {
    #[serde(rename = "type")]
    kind: &'static str,
    index: usize,
    t: f64,
    c2s: Traffic,
    s2c: Traffic,
}

#[derive(Serialize)]
struct TotalJson {
    #[serde(rename = "type")]
    kind: &'static str,
    flow: Option<u32>,
    interval: f64,
    first_ts: Option<f64>,
    last_ts: Option<f64>,
    duration: f64,
    intervals: u64,
    intervals_omitted: u64,
    c2s: Traffic,
    s2c: Traffic,
}

/// `stats`: count the capture, then print the tables or the records.
pub fn run_stats(args: &StatsArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let mut mirror = Mirror::new(mirror_config(&args.capture), false);
    let mut st = Stats::new(args.interval, MAX_INTERVALS);
    let want = |flow: u32| args.capture.flow.is_none_or(|f| f == flow);
    // Everything is printed at the end: a progress bar may share the terminal.
    let code = drive(
        &args.capture.printing_at_end(),
        &mut mirror,
        out,
        |p, obs, _, _| {
            if want(p.flow) {
                let resends = obs.anomalies.iter().filter(|a| a.kind == "resend").count();
                st.packet(p.dir, p.ts, p.kind(), p.payload.len(), resends as u64);
            }
            for m in obs.messages.iter().filter(|m| want(m.flow)) {
                st.message(m);
            }
            Ok(Next::Continue)
        },
    )?;
    if code == EXIT_USAGE || code == EXIT_BAD_FILE {
        return Ok(code);
    }
    for m in mirror.finish().messages.iter().filter(|m| want(m.flow)) {
        st.message(m);
    }
    if args.output.quiet {
        return Ok(code);
    }
    if args.output.json {
        write_json(&st, args.capture.flow, out)?;
    } else {
        write_text(&st, args.capture.flow, out)?;
    }
    Ok(code)
}

fn write_json(st: &Stats, flow: Option<u32>, out: &mut impl Write) -> anyhow::Result<()> {
    for (i, b) in used(&st.ids) {
        let name = id_name(i);
        let id = u8::try_from(i).ok();
        let (c2s, s2c) = (b[0], b[1]);
        record(
            out,
            &IdJson {
                kind: "stats_id",
                id,
                name,
                c2s,
                s2c,
            },
        )?;
    }
    for (i, b) in used(&st.reliabilities) {
        let reliability = reliability_name(i);
        let (c2s, s2c) = (b[0], b[1]);
        let kind = "stats_reliability";
        record(
            out,
            &ReliabilityJson {
                kind,
                reliability,
                c2s,
                s2c,
            },
        )?;
    }
    for (channel, b) in used(&st.channels) {
        let (c2s, s2c) = (b[0], b[1]);
        record(
            out,
            &ChannelJson {
                kind: "stats_channel",
                channel,
                c2s,
                s2c,
            },
        )?;
    }
    let mut shown = 0u64;
    for (index, b) in st.rows(usize::MAX) {
        shown += 1;
        let (t, c2s, s2c) = (st.start(index), b[0], b[1]);
        record(
            out,
            &IntervalJson {
                kind: "stats_interval",
                index,
                t,
                c2s,
                s2c,
            },
        )?;
    }
    let intervals = st.interval_count();
    let omitted = intervals.saturating_sub(shown);
    record(
        out,
        &TotalJson {
            kind: "stats",
            flow,
            interval: st.interval.as_secs_f64(),
            first_ts: st.first.map(|f| f.as_secs_f64()),
            last_ts: st.first.map(|_| st.last.as_secs_f64()),
            duration: st.duration().as_secs_f64(),
            intervals,
            intervals_omitted: omitted,
            c2s: st.total[0],
            s2c: st.total[1],
        },
    )?;
    if omitted > 0 {
        out.flush()?;
        eprintln!(
            "raknet-dissect: warning: {intervals} intervals of {} s: stats_interval records for the first {} only (the totals count all); try --interval {}",
            st.interval.as_secs_f64(),
            shown,
            nice_interval(st.duration().as_secs_f64(), st.cap),
        );
    }
    Ok(())
}

/// One NDJSON line.
fn record(out: &mut impl Write, r: &impl Serialize) -> anyhow::Result<()> {
    serde_json::to_writer(&mut *out, r)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// `c2s / s2c` of `get`.
fn pair<T>(b: &Both<T>, get: impl Fn(&T) -> u64) -> String {
    format!("{} / {}", get(&b[0]), get(&b[1]))
}

/// A table of message counts: a row per used entry of `v` (its key cells
/// from `key`), then a total row.
fn messages_table(
    key_header: &[&str],
    v: &[Both<Msgs>],
    key: impl Fn(usize) -> Vec<String>,
    text_columns: usize,
    width: Option<u16>,
) -> String {
    let mut total = Both::<Msgs>::default();
    let mut rows = Vec::new();
    for (i, b) in used(v) {
        for d in 0..2 {
            total[d].messages += b[d].messages;
            total[d].bytes += b[d].bytes;
        }
        let mut row = key(i);
        row.extend([pair(b, |m| m.messages), pair(b, |m| m.bytes)]);
        rows.push(row);
    }
    let mut row = vec![String::new(); key_header.len()];
    row[0] = "total".into();
    row.extend([pair(&total, |m| m.messages), pair(&total, |m| m.bytes)]);
    rows.push(row);
    let mut header = key_header.to_vec();
    header.extend(["messages c2s / s2c", "bytes c2s / s2c"]);
    table::counts_table(&header, rows, text_columns, width)
}

fn write_text(st: &Stats, flow: Option<u32>, out: &mut impl Write) -> anyhow::Result<()> {
    let in_flow = flow.map_or(String::new(), |f| format!(" in flow {f}"));
    if st.first.is_none() {
        writeln!(out, "No RakNet packets{in_flow}.")?;
        return Ok(());
    }
    let width = terminal_width();
    if used(&st.ids).next().is_none() {
        writeln!(out, "No messages delivered{in_flow}.\n")?;
    } else {
        let id = |i: usize| match id_name(i) {
            Some(n) => vec![format!("{i:#04x}"), n.into_owned()],
            None => vec!["-".into(), "(empty)".into()],
        };
        let by_id = messages_table(&["id", "name"], &st.ids, id, 2, width);
        writeln!(out, "Messages delivered{in_flow}, by id\n{by_id}\n")?;
        let name = |i: usize| vec![reliability_name(i).to_string()];
        let by_r = messages_table(&["reliability"], &st.reliabilities, name, 1, width);
        writeln!(out, "Messages delivered{in_flow}, by reliability\n{by_r}\n")?;
        if used(&st.channels).next().is_none() {
            writeln!(out, "No ordered or sequenced messages.\n")?;
        } else {
            let channel = |i: usize| vec![i.to_string()];
            let by_c = messages_table(&["channel"], &st.channels, channel, 0, width);
            writeln!(
                out,
                "Ordered and sequenced messages{in_flow}, by channel\n{by_c}\n"
            )?;
        }
    }
    let secs = st.interval.as_secs_f64();
    writeln!(out, "Traffic{in_flow} per {secs} s from the first packet")?;
    // Byte rate each way over `over` seconds, in B/s.
    let rate = |b: &Both<Traffic>, over: f64| -> String {
        let per_s = |t: &Traffic| {
            if over > 0.0 {
                format!("{:.0}", t.bytes as f64 / over)
            } else {
                "-".into()
            }
        };
        format!("{} / {}", per_s(&b[0]), per_s(&b[1]))
    };
    let dur = st.duration().as_secs_f64();
    let traffic = |b: &Both<Traffic>, label: String, over: f64| -> Vec<String> {
        vec![
            label,
            pair(b, |t| t.packets),
            pair(b, |t| t.bytes),
            rate(b, over),
            pair(b, |t| t.acks),
            pair(b, |t| t.nacks),
            pair(b, |t| t.resends),
            pair(b, |t| t.messages),
        ]
    };
    let mut rows: Vec<Vec<String>> = st
        .rows(MAX_TABLE_INTERVALS)
        .map(|(i, b)| traffic(&b, st.start(i).to_string(), secs))
        .collect();
    let shown = rows.len();
    rows.push(traffic(&st.total, "total".into(), dur));
    let header = [
        "t s",
        "packets c2s / s2c",
        "bytes c2s / s2c",
        "B/s c2s / s2c",
        "ACKs c2s / s2c",
        "NACKs c2s / s2c",
        "resends c2s / s2c",
        "messages c2s / s2c",
    ];
    writeln!(out, "{}", table::counts_table(&header, rows, 0, width))?;
    let n = st.interval_count();
    if n > shown as u64 {
        writeln!(
            out,
            "{n} intervals of {secs} s: the table shows the first {shown} (the total row counts all); \
             --interval {} fits the capture in the table",
            nice_interval(dur, MAX_TABLE_INTERVALS)
        )?;
    }
    let [c, s] = &st.total;
    writeln!(
        out,
        "{} RakNet packets{in_flow} ({} bytes) over {dur:.3} s, {} messages delivered ({} bytes)",
        c.packets + s.packets,
        c.bytes + s.bytes,
        c.messages + s.messages,
        c.message_bytes + s.message_bytes,
    )?;
    Ok(())
}

/// A round interval (1, 2 or 5 times a power of ten, in seconds) that cuts
/// `span` seconds into at most `rows` intervals, as `--interval` reads it.
fn nice_interval(span: f64, rows: usize) -> String {
    let need = (span / rows.saturating_sub(1).max(1) as f64).clamp(1e-9, 1e6);
    let e = need.log10().floor() as i32;
    let base = 10f64.powi(e);
    let m = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .find(|m| m * base >= need)
        .unwrap_or(10.0);
    let decimals = usize::try_from(-e).unwrap_or(0);
    format!("{:.*}", decimals, (m * base).min(1e6))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: f64) -> Duration {
        Duration::from_secs_f64(secs)
    }

    #[test]
    fn buckets_from_the_first_packet_with_empty_ones_between() {
        let mut st = Stats::new(s(0.5), 100);
        st.packet(Dir::C2s, s(100.2), "data", 10, 0);
        st.packet(Dir::S2c, s(100.69), "ack", 7, 0);
        st.packet(Dir::S2c, s(100.7), "nack", 5, 0);
        st.packet(Dir::C2s, s(102.0), "data", 30, 2);
        assert_eq!(st.interval_count(), 4);
        assert_eq!(st.intervals.len(), 4);
        let i = &st.intervals;
        assert_eq!((i[0][0].packets, i[0][0].bytes, i[0][0].data), (1, 10, 1));
        assert_eq!((i[0][1].acks, i[0][1].nacks), (1, 0));
        assert_eq!((i[1][1].nacks, i[1][1].bytes), (1, 5));
        assert_eq!(i[2], Both::default());
        assert_eq!((i[3][0].resends, i[3][0].bytes), (2, 30));
        assert_eq!(st.total[0].packets, 2);
        assert_eq!(st.total[1].bytes, 12);
        assert_eq!(st.duration(), s(102.0) - s(100.2));
        assert_eq!(st.start(3), 1.5);
    }

    #[test]
    fn a_far_packet_allocates_no_more_than_the_cap() {
        let mut st = Stats::new(s(1.0), MAX_INTERVALS);
        st.packet(Dir::C2s, s(0.0), "data", 1, 0);
        st.packet(Dir::C2s, s(1e9), "data", 1, 0);
        assert_eq!(st.intervals.len(), 1);
        assert_eq!(st.interval_count(), 1_000_000_001);
        // Rows (zeros after the first) up to the cap, not past it.
        assert_eq!(st.rows(usize::MAX).count(), MAX_INTERVALS);
        assert_eq!(st.rows(MAX_TABLE_INTERVALS).count(), MAX_TABLE_INTERVALS);
        assert_eq!(
            st.rows(usize::MAX).nth(7).map(|r| r.1),
            Some(Both::default())
        );
        assert_eq!(st.total[0].packets, 2);
        // 1 ns intervals over the same span: still bounded.
        let mut st = Stats::new(Duration::from_nanos(1), 10);
        st.packet(Dir::C2s, s(0.0), "data", 1, 0);
        st.packet(Dir::S2c, s(9e-9), "ack", 1, 0);
        st.packet(Dir::S2c, Duration::MAX, "ack", 1, 0);
        assert_eq!(st.intervals.len(), 10);
        assert_eq!(st.interval_count(), u64::MAX);
        assert_eq!(st.intervals[9][1].acks, 1);
    }

    #[test]
    fn time_going_backwards_counts_in_the_first_interval() {
        let mut st = Stats::new(s(1.0), 10);
        st.packet(Dir::C2s, s(50.0), "data", 1, 0);
        st.packet(Dir::C2s, s(40.0), "data", 1, 0);
        assert_eq!(st.intervals.len(), 1);
        assert_eq!(st.intervals[0][0].packets, 2);
        assert_eq!(st.duration(), Duration::ZERO);
    }

    #[test]
    fn messages_by_id_reliability_channel_and_interval() {
        let msg = |dir, ts, data: &[u8], r: u8, channel| Message {
            flow: 1,
            dir,
            frame: 1,
            ts: s(ts),
            data: data.to_vec(),
            reliability: Reliability(r),
            channel,
            anomalies: Vec::new(),
        };
        let mut st = Stats::new(s(1.0), 10);
        st.packet(Dir::C2s, s(10.0), "data", 1, 0);
        st.message(&msg(Dir::C2s, 10.0, &[0x86, 1, 2], 3, Some(0)));
        st.message(&msg(Dir::S2c, 11.5, &[0x86], 2, None));
        st.message(&msg(Dir::S2c, 11.5, &[], 200, Some(31)));
        assert_eq!(
            st.ids[0x86],
            [
                Msgs {
                    messages: 1,
                    bytes: 3
                },
                Msgs {
                    messages: 1,
                    bytes: 1
                }
            ]
        );
        assert_eq!(st.ids[NO_ID][1].messages, 1);
        assert_eq!(st.reliabilities[3][0].messages, 1);
        assert_eq!(st.reliabilities[INVALID][1].messages, 1);
        assert_eq!(reliability_name(INVALID), "INVALID");
        assert_eq!(
            (st.channels[0][0].messages, st.channels[31][1].bytes),
            (1, 0)
        );
        assert_eq!(used(&st.channels).count(), 2);
        assert_eq!(st.intervals[1][1].messages, 2);
        assert_eq!(st.total[1].message_bytes, 1);
        assert_eq!(id_name(NO_ID), None);
    }

    #[test]
    fn interval_argument() {
        assert_eq!(parse_interval("0.25"), Ok(s(0.25)));
        assert_eq!(parse_interval("1"), Ok(s(1.0)));
        for bad in ["0", "-1", "NaN", "inf", "1e9", "1e-12", "x", ""] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn suggested_intervals_fit() {
        assert_eq!(nice_interval(10.75, 10_000), "0.002");
        assert_eq!(nice_interval(1e9, 10_000), "200000");
        assert_eq!(nice_interval(49_995.0, 10_000), "5");
        assert_eq!(nice_interval(1e12, 10_000), "1000000");
        for span in [0.5, 10.75, 123.0, 99_990.0, 7e6] {
            let i: f64 = nice_interval(span, 10_000).parse().unwrap();
            assert!((span / i).floor() + 1.0 <= 10_000.0, "{span}: {i}");
        }
    }
}
