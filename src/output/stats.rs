//! `stats` printed: the tables of counts, or the `stats_*` records.

use std::borrow::Cow;
use std::io::{self, Write};

use serde::Serialize;

use crate::analysis::stats::{
    nice_interval, used, Both, Msgs, Stats, Traffic, MAX_TABLE_INTERVALS,
};
use crate::dissect::Counted;
use crate::output::table;
use crate::wire::{message_name, Reliability};

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
    /// The whole capture's frames, read and skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    capture: Option<Counted>,
}

/// The records (`stats_id`, `stats_reliability`, `stats_channel`,
/// `stats_interval`, then `stats`); returns a warning when intervals had to
/// be left out.
/// `file` names the capture file in every record (`--separate`).
pub(crate) fn write_json(
    st: &Stats,
    flow: Option<u32>,
    file: Option<&str>,
    out: &mut dyn Write,
) -> io::Result<Option<String>> {
    for (i, b) in used(&st.ids) {
        let name = id_name(i);
        let id = u8::try_from(i).ok();
        let (c2s, s2c) = (b[0], b[1]);
        record(
            out,
            file,
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
            file,
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
            file,
            &ChannelJson {
                kind: "stats_channel",
                channel,
                c2s,
                s2c,
            },
        )?;
    }
    for (label, b) in &st.labels {
        #[derive(Serialize)]
        struct LabelJson<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            label: &'a str,
            c2s: Msgs,
            s2c: Msgs,
        }
        let (c2s, s2c) = (b[0], b[1]);
        record(
            out,
            file,
            &LabelJson {
                kind: "stats_data_channel",
                label,
                c2s,
                s2c,
            },
        )?;
    }
    for (name, b) in &st.game {
        #[derive(Serialize)]
        struct GameJson<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            name: &'a str,
            c2s: u64,
            s2c: u64,
        }
        let (c2s, s2c) = (b[0], b[1]);
        record(
            out,
            file,
            &GameJson {
                kind: "stats_game",
                name,
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
            file,
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
        file,
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
            capture: st.capture,
        },
    )?;
    Ok((omitted > 0).then(|| {
        format!(
            "{intervals} intervals of {} s: stats_interval records for the first {} only (the totals count all); try --interval {}",
            st.interval.as_secs_f64(),
            shown,
            nice_interval(st.duration().as_secs_f64(), st.cap),
        )
    }))
}

/// One NDJSON line; `file`, when there is one, is its second key (after
/// `type`, as in every record that names its file).
fn record<R: Serialize>(out: &mut dyn Write, file: Option<&str>, r: &R) -> io::Result<()> {
    let mut line = serde_json::to_vec(r)?;
    if let Some(file) = file {
        // Every record here starts `{"type":"stats…",`: no comma before.
        let at = line.iter().position(|&b| b == b',').map_or(1, |i| i + 1);
        let key = format!("\"file\":{},", serde_json::to_string(file)?);
        line.splice(at..at, key.into_bytes());
    }
    line.push(b'\n');
    out.write_all(&line)
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

/// The tables, `width` columns wide at most.
pub(crate) fn write_text(
    st: &Stats,
    flow: Option<u32>,
    width: Option<u16>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let in_flow = flow.map_or(String::new(), |f| format!(" in flow {f}"));
    if st.first.is_none() {
        writeln!(out, "No RakNet packets{in_flow}.")?;
        return capture_line(st, out);
    }
    if !st.labels.is_empty() {
        let both: Vec<Both<Msgs>> = st.labels.iter().map(|(_, b)| *b).collect();
        let label = |i: usize| vec![st.labels[i].0.clone()];
        let t = messages_table(&["data channel"], &both, label, 1, width);
        writeln!(
            out,
            "NetherNet messages delivered{in_flow}, by data channel\n{t}\n"
        )?;
    }
    if used(&st.ids).next().is_none() && !st.labels.is_empty() {
        // NetherNet alone: no RakNet message.
    } else if used(&st.ids).next().is_none() {
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
    if !st.game.is_empty() {
        let rows: Vec<Vec<String>> = st
            .game
            .iter()
            .map(|(n, b)| vec![n.clone(), format!("{} / {}", b[0], b[1])])
            .collect();
        let t = table::counts_table(&["game packet", "c2s / s2c"], rows, 1, width);
        writeln!(out, "Bedrock game packets{in_flow}, by name\n{t}\n")?;
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
    let packets = c.packets + s.packets;
    let what = match st.nethernet {
        0 => format!("{packets} RakNet packets{in_flow} ("),
        n => format!(
            "{packets} packets{in_flow} ({} RakNet, {n} NetherNet datagrams and signaling segments; ",
            packets - n
        ),
    };
    writeln!(
        out,
        "{what}{} bytes) over {dur:.3} s, {} messages delivered ({} bytes)",
        c.bytes + s.bytes,
        c.messages + s.messages,
        c.message_bytes + s.message_bytes,
    )?;
    capture_line(st, out)
}

/// The capture's frames: how many were read, and what was skipped, by why.
fn capture_line(st: &Stats, out: &mut dyn Write) -> io::Result<()> {
    let Some(c) = st.capture else {
        return Ok(());
    };
    let plural = crate::wire::plural;
    let skipped: Vec<String> = [
        (c.non_udp, "non-UDP frame", "non-UDP frames"),
        (
            c.not_raknet,
            "UDP datagram not RakNet",
            "UDP datagrams not RakNet",
        ),
        (
            c.unsupported_link,
            "frame of a link type not decoded",
            "frames of a link type not decoded",
        ),
        (
            c.fragments_dropped,
            "IP fragment dropped",
            "IP fragments dropped",
        ),
        (
            c.bad_ip,
            "malformed link, IP or UDP header",
            "malformed link, IP or UDP headers",
        ),
        (
            c.bad_records,
            "malformed packet record",
            "malformed packet records",
        ),
    ]
    .into_iter()
    .filter(|&(n, ..)| n > 0)
    .map(|(n, one, many)| format!("{n} {}", plural(n, one, many)))
    .collect();
    let skipped = if skipped.is_empty() {
        "nothing".to_string()
    } else {
        skipped.join(", ")
    };
    writeln!(
        out,
        "Capture: {} {} read, {} RakNet; skipped: {skipped}",
        c.frames,
        plural(c.frames, "frame", "frames"),
        c.raknet_packets,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::{INVALID, NO_ID};

    #[test]
    fn a_record_names_its_file_after_its_type() {
        let r = ChannelJson {
            kind: "stats_channel",
            channel: 3,
            c2s: Msgs::default(),
            s2c: Msgs::default(),
        };
        let (mut plain, mut named) = (Vec::new(), Vec::new());
        record(&mut plain, None, &r).unwrap();
        record(&mut named, Some("a \"b\".pcap"), &r).unwrap();
        let plain = String::from_utf8(plain).unwrap();
        let named = String::from_utf8(named).unwrap();
        let want = plain.replacen(
            "\"stats_channel\",",
            "\"stats_channel\",\"file\":\"a \\\"b\\\".pcap\",",
            1,
        );
        assert_eq!(named, want);
        let v: serde_json::Value = serde_json::from_str(&named).unwrap();
        assert_eq!(v["file"], "a \"b\".pcap");
        assert_eq!(v["channel"], 3);
    }

    #[test]
    fn names_of_the_rows() {
        assert_eq!(reliability_name(INVALID), "INVALID");
        assert_eq!(reliability_name(3), "RELIABLE_ORDERED");
        assert_eq!(id_name(NO_ID), None);
        assert_eq!(
            id_name(0x10).as_deref(),
            Some("ID_CONNECTION_REQUEST_ACCEPTED")
        );
    }
}
