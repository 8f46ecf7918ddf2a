//! `stats` on the bundled samples (made from real RakNet peers), checked
//! against an independent count, done here, of what `messages --json` and
//! `read --json` print: messages by id, reliability and channel; packets,
//! bytes, ACKs, NACKs, resends and messages per interval. Also the text
//! tables, a bad `--interval`, and the bound on the number of intervals.

mod common;

use std::collections::BTreeMap;

use serde_json::Value;

fn run(args: &[&str]) -> (i32, String, String) {
    let o = common::run_bin(args);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8(o.stdout).expect("utf-8 stdout"),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn json_lines(args: &[&str]) -> Vec<Value> {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{args:?}: {e}: {l}")))
        .collect()
}

fn sample(name: &str) -> String {
    common::sample(name).to_string_lossy().into_owned()
}

fn side(v: &Value) -> usize {
    match v["dir"].as_str() {
        Some("c2s") => 0,
        Some("s2c") => 1,
        d => panic!("dir {d:?} in {v}"),
    }
}

/// Capture time in microseconds (the samples' resolution), exact.
fn micros(v: &Value) -> i64 {
    (v["ts"].as_f64().expect("ts") * 1e6).round() as i64
}

fn u(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v}"))
}

/// `[c2s, s2c]` of `[messages, bytes]`, by key.
type ByKey<K> = BTreeMap<K, [[u64; 2]; 2]>;

/// The keys of a `stats_interval` (and `stats`) direction object.
const TRAFFIC: [&str; 8] = [
    "packets",
    "bytes",
    "data",
    "acks",
    "nacks",
    "resends",
    "messages",
    "message_bytes",
];

/// `[c2s, s2c]` of the [`TRAFFIC`] counts.
type Traffic = [[u64; 8]; 2];

fn traffic(v: &Value) -> Traffic {
    let one = |o: &Value| {
        let mut keys: Vec<&str> = o
            .as_object()
            .unwrap_or_else(|| panic!("object: {o}"))
            .keys()
            .map(String::as_str)
            .collect();
        let mut want = TRAFFIC.to_vec();
        keys.sort();
        want.sort();
        assert_eq!(keys, want, "keys");
        TRAFFIC.map(|k| u(o, k))
    };
    [one(&v["c2s"]), one(&v["s2c"])]
}

fn msgs(v: &Value) -> [[u64; 2]; 2] {
    let one = |o: &Value| [u(o, "messages"), u(o, "bytes")];
    [one(&v["c2s"]), one(&v["s2c"])]
}

/// What `stats` should say, counted from `messages` and `read` records.
#[derive(Debug, Default, PartialEq)]
struct Expected {
    ids: ByKey<Option<u64>>,
    names: BTreeMap<Option<u64>, Value>,
    reliabilities: ByKey<String>,
    channels: ByKey<u64>,
    intervals: Vec<Traffic>,
    total: Traffic,
}

fn expected(file: &str, interval_us: i64, flow: Option<u64>) -> (Expected, f64) {
    let keep = |v: &Value| flow.is_none_or(|f| u(v, "flow") == f);
    let packets: Vec<Value> = json_lines(&["read", file, "--json"])
        .into_iter()
        .filter(keep)
        .collect();
    let messages: Vec<Value> = json_lines(&["messages", file, "--json"])
        .into_iter()
        .filter(keep)
        .collect();
    assert!(!packets.is_empty() && !messages.is_empty(), "{file}");
    let first = micros(&packets[0]);
    let mut e = Expected::default();
    let at = |e: &mut Expected, v: &Value| -> usize {
        let us = micros(v) - first;
        assert!(us >= 0, "{file}: in time order");
        let i = usize::try_from(us / interval_us).expect("index");
        if e.intervals.len() <= i {
            e.intervals.resize(i + 1, Traffic::default());
        }
        i
    };
    for p in &packets {
        let (d, i) = (side(p), at(&mut e, p));
        let kind = p["kind"].as_str().expect("kind");
        let resends = p["anomalies"]
            .as_array()
            .expect("anomalies")
            .iter()
            .filter(|a| a["kind"] == "resend")
            .count() as u64;
        let add = |t: &mut Traffic| {
            t[d][0] += 1;
            t[d][1] += u(p, "len");
            t[d][2] += u64::from(kind == "data");
            t[d][3] += u64::from(kind == "ack");
            t[d][4] += u64::from(kind == "nack");
            t[d][5] += resends;
        };
        add(&mut e.intervals[i]);
        add(&mut e.total);
    }
    for m in &messages {
        let (d, i, len) = (side(m), at(&mut e, m), u(m, "len"));
        for t in [&mut e.intervals[i], &mut e.total] {
            t[d][6] += 1;
            t[d][7] += len;
        }
        let count = |c: &mut [[u64; 2]; 2]| {
            c[d][0] += 1;
            c[d][1] += len;
        };
        count(e.ids.entry(m["id"].as_u64()).or_default());
        e.names.insert(m["id"].as_u64(), m["name"].clone());
        let r = m["reliability"].as_str().expect("reliability").to_string();
        count(e.reliabilities.entry(r).or_default());
        if let Some(c) = m["channel"].as_u64() {
            count(e.channels.entry(c).or_default());
        }
    }
    (e, packets[0]["ts"].as_f64().expect("ts"))
}

/// `stats --json` read back into the same shape, checking the record order
/// and the `stats` record; returns it too.
fn got(file: &str, extra: &[&str], interval_s: f64) -> (Expected, Value) {
    let mut args = vec!["stats", file, "--json"];
    args.extend(extra);
    let records = json_lines(&args);
    let order = [
        "stats_id",
        "stats_reliability",
        "stats_channel",
        "stats_interval",
        "stats",
    ];
    let rank = |v: &Value| {
        order
            .iter()
            .position(|t| v["type"] == *t)
            .unwrap_or_else(|| panic!("type of {v}"))
    };
    assert!(
        records.windows(2).all(|w| rank(&w[0]) <= rank(&w[1])),
        "{file}: records in the documented order"
    );
    let (total, rest) = records.split_last().expect("records");
    assert_eq!(total["type"], "stats", "{file}: a stats record last");
    let mut g = Expected {
        total: traffic(total),
        ..Expected::default()
    };
    for r in rest {
        match r["type"].as_str() {
            Some("stats_id") => {
                let id = r["id"].as_u64();
                g.names.insert(id, r["name"].clone());
                assert!(g.ids.insert(id, msgs(r)).is_none(), "one row per id");
            }
            Some("stats_reliability") => {
                let k = r["reliability"].as_str().expect("name").to_string();
                assert!(g.reliabilities.insert(k, msgs(r)).is_none());
            }
            Some("stats_channel") => {
                assert!(g.channels.insert(u(r, "channel"), msgs(r)).is_none());
            }
            Some("stats_interval") => {
                let i = g.intervals.len();
                assert_eq!(
                    u(r, "index"),
                    i as u64,
                    "{file}: intervals in order, none left out"
                );
                let t = r["t"].as_f64().expect("t");
                assert!(
                    (t - i as f64 * interval_s).abs() < 1e-9,
                    "t {t} of interval {i}"
                );
                g.intervals.push(traffic(r));
            }
            t => panic!("unexpected record type {t:?}"),
        }
    }
    // Row orders: ids ascending, as the BTreeMap iterates.
    let ids: Vec<Option<u64>> = rest
        .iter()
        .filter(|r| r["type"] == "stats_id")
        .map(|r| r["id"].as_u64())
        .collect();
    assert_eq!(ids, g.ids.keys().copied().collect::<Vec<_>>());
    (g, total.clone())
}

fn check(name: &str, interval: &str, flow: Option<u64>) {
    let file = sample(name);
    let interval_s: f64 = interval.parse().expect("interval");
    let interval_us = (interval_s * 1e6).round() as i64;
    let flow_arg = flow.map(|f| f.to_string());
    let mut extra = vec!["--interval", interval];
    if let Some(f) = &flow_arg {
        extra.extend(["--flow", f]);
    }
    let (want, first_ts) = expected(&file, interval_us, flow);
    let (have, total) = got(&file, &extra, interval_s);
    assert_eq!(have.ids, want.ids, "{name}: messages by id");
    assert_eq!(have.names, want.names, "{name}: message names");
    assert_eq!(
        have.reliabilities, want.reliabilities,
        "{name}: by reliability"
    );
    assert_eq!(have.channels, want.channels, "{name}: by channel");
    assert_eq!(have.total, want.total, "{name}: totals");
    assert_eq!(
        have.intervals.len(),
        want.intervals.len(),
        "{name}: intervals"
    );
    for (i, (h, w)) in have.intervals.iter().zip(&want.intervals).enumerate() {
        assert_eq!(h, w, "{name} --interval {interval}: interval {i}");
    }
    assert_eq!(u(&total, "intervals"), want.intervals.len() as u64);
    assert_eq!(u(&total, "intervals_omitted"), 0);
    assert_eq!(total["flow"].as_u64(), flow);
    assert_eq!(total["interval"].as_f64(), Some(interval_s));
    assert_eq!(total["first_ts"].as_f64(), Some(first_ts));
    let last = total["last_ts"].as_f64().expect("last_ts");
    let duration = total["duration"].as_f64().expect("duration");
    assert!((last - first_ts - duration).abs() < 1e-6);
}

#[test]
fn lossy_matches_messages_and_read() {
    check("lossy.pcap", "1", None);
    check("lossy.pcap", "0.25", None);
}

#[test]
fn handshake_and_minecraft_match_messages_and_read() {
    check("handshake.pcap", "1", None);
    check("handshake.pcap", "0.1", None);
    check("minecraft.pcap", "1", None);
    check("minecraft.pcap", "0.5", Some(2));
}

/// The totals agree with the `flow` record too (one flow in lossy.pcap).
#[test]
fn totals_match_the_flow_record() {
    let file = sample("lossy.pcap");
    let flows = json_lines(&["flows", &file, "--json"]);
    assert_eq!(flows.len(), 1);
    let stats = json_lines(&["stats", &file, "--json"]);
    let total = stats.last().expect("stats record");
    for dir in ["c2s", "s2c"] {
        let (f, s) = (&flows[0][dir], &total[dir]);
        assert_eq!(u(f, "data_datagrams"), u(s, "data"), "{dir}");
        for k in ["packets", "bytes", "acks", "nacks", "resends", "messages"] {
            assert_eq!(u(f, k), u(s, k), "{dir} {k}");
        }
    }
    assert_eq!(
        u(&total["c2s"], "resends") + u(&total["s2c"], "resends"),
        30
    );
}

#[test]
fn text_tables() {
    let file = sample("lossy.pcap");
    let (code, out, err) = run(&["stats", &file]);
    assert_eq!(code, 0, "{err}");
    for want in [
        "Messages delivered, by id",
        "│ 0x86 ",
        "ID_USER_PACKET_ENUM+7",
        "Messages delivered, by reliability",
        "RELIABLE_SEQUENCED",
        "Ordered and sequenced messages, by channel",
        "Traffic per 1 s from the first packet",
        "resends c2s / s2c",
        "│ total ",
    ] {
        assert!(out.contains(want), "{want:?} in:\n{out}");
    }
    // One traffic row per second of the capture (10.75 s), then the total.
    let rows = out
        .lines()
        .skip_while(|l| !l.starts_with("Traffic"))
        .filter(|l| l.starts_with("│ "))
        .count();
    assert_eq!(rows, 1 + 11 + 1, "header, 11 intervals, total:\n{out}");
    let packets = json_lines(&["read", &file, "--json"]).len();
    let lines: Vec<&str> = out.lines().collect();
    let (summary, capture) = (lines[lines.len() - 2], lines[lines.len() - 1]);
    assert!(
        summary.starts_with(&format!("{packets} RakNet packets (")),
        "{summary}"
    );
    // Then the capture's frames: the RakNet packets and the two datagrams
    // the original library's sockets send themselves.
    assert_eq!(
        capture,
        format!(
            "Capture: {} frames read, {packets} RakNet; skipped: 2 UDP datagrams not RakNet",
            packets + 2
        )
    );
    // A flow the capture does not have: one line and exit 2, as in every
    // command (issue 13); nothing on standard output.
    let (code, out, err) = run(&["stats", &file, "--flow", "7"]);
    assert_eq!((code, out.trim()), (2, ""));
    assert!(
        err.contains("no flow 7: the capture has 1 RakNet flow"),
        "{err}"
    );
}

#[test]
fn byte_rates_are_bytes_over_the_interval() {
    let file = sample("lossy.pcap");
    let (code, out, err) = run(&["stats", &file, "--interval", "0.5"]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<Vec<String>> = out
        .lines()
        .skip_while(|l| !l.starts_with("Traffic"))
        .filter(|l| l.starts_with("│ "))
        .skip(1)
        .map(|l| l.split(['│', '┆']).map(|c| c.trim().to_string()).collect())
        .collect();
    let records = json_lines(&["stats", &file, "--interval", "0.5", "--json"]);
    let intervals: Vec<&Value> = records
        .iter()
        .filter(|r| r["type"] == "stats_interval")
        .collect();
    assert_eq!(rows.len(), intervals.len() + 1, "{out}");
    let rate = |bytes: u64, over: f64| format!("{:.0}", bytes as f64 / over);
    let mut nonzero = 0;
    for (row, r) in rows.iter().zip(&intervals) {
        let (c, s) = (u(&r["c2s"], "bytes"), u(&r["s2c"], "bytes"));
        nonzero += usize::from(c + s > 0);
        assert_eq!(
            row[4],
            format!("{} / {}", rate(c, 0.5), rate(s, 0.5)),
            "{row:?}"
        );
    }
    assert!(nonzero >= 3, "{out}");
    // The total row: over the whole capture.
    let total = records.last().expect("stats record");
    let d = total["duration"].as_f64().expect("duration");
    let (c, s) = (u(&total["c2s"], "bytes"), u(&total["s2c"], "bytes"));
    let last = rows.last().expect("total row");
    assert_eq!(last[1], "total");
    assert_eq!(last[4], format!("{} / {}", rate(c, d), rate(s, d)));
}

#[test]
fn bad_interval_is_a_usage_error() {
    let file = sample("lossy.pcap");
    for bad in ["0", "-1", "nan", "inf", "1e9", "0.0000000001", "x", ""] {
        let (code, out, err) = run(&["stats", &file, &format!("--interval={bad}")]);
        assert_eq!(code, 2, "--interval {bad:?}: {err}");
        assert!(
            out.is_empty() && err.contains("--interval"),
            "{bad:?}: {err}"
        );
    }
    let (code, _, _) = run(&["stats", "/nonexistent.pcap"]);
    assert_eq!(code, 3);
}

#[test]
fn too_many_intervals_are_bounded() {
    let file = sample("lossy.pcap");
    // 10.75 s in 100 µs: 107,525 intervals; the table shows 10,000.
    let (code, out, err) = run(&["stats", &file, "--interval", "0.0001"]);
    assert_eq!(code, 0, "{err}");
    let note = out
        .lines()
        .find(|l| l.contains("intervals of 0.0001 s"))
        .unwrap_or_else(|| panic!("a note:\n{}", common::tail(&out, 5)));
    assert!(
        note.starts_with("107525 intervals") && note.contains("the first 10000"),
        "{note}"
    );
    let rows = out
        .lines()
        .skip_while(|l| !l.starts_with("Traffic"))
        .filter(|l| l.starts_with("│ "))
        .count();
    assert_eq!(rows, 1 + 10_000 + 1);
    // The suggested interval fits.
    let suggested = note
        .split("--interval ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .expect("a suggested interval");
    let (code, out, _) = run(&["stats", &file, "--interval", suggested]);
    assert_eq!(code, 0);
    assert!(!out.contains("the table shows the first"), "{suggested}");

    // NDJSON: the first 100,000 intervals, the rest counted as omitted.
    let records = json_lines(&["stats", &file, "--json", "--interval", "0.000001"]);
    let total = records.last().expect("stats");
    let intervals = records
        .iter()
        .filter(|r| r["type"] == "stats_interval")
        .count() as u64;
    assert_eq!(intervals, 100_000);
    assert_eq!(u(total, "intervals"), 10_752_437);
    assert_eq!(u(total, "intervals_omitted"), 10_752_437 - 100_000);
    assert_eq!(
        u(&total["c2s"], "packets") + u(&total["s2c"], "packets"),
        126
    );
}

/// handshake.pcap with its last RakNet packet moved 10^9 s later: finishes
/// at once, with the intervals bounded and every packet in the totals.
#[test]
fn a_packet_far_in_the_future() {
    let original = sample("handshake.pcap");
    let read = json_lines(&["read", &original, "--json"]);
    let frame = u(read.last().expect("packets"), "frame");
    let bytes = std::fs::read(&original).expect("sample");
    assert_eq!(
        bytes[..4],
        [0xd4, 0xc3, 0xb2, 0xa1],
        "little-endian µs pcap"
    );
    let mut far = bytes.clone();
    let (mut at, mut n) = (24, 0);
    while at + 16 <= bytes.len() {
        n += 1;
        let word = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4"));
        if n == frame {
            far[at..at + 4].copy_from_slice(&(word(at) + 1_000_000_000).to_le_bytes());
        }
        at += 16 + word(at + 8) as usize;
    }
    assert!(n >= frame, "frame {frame} of {n}");
    let work = common::Work::new("far");
    let path = work.file("far.pcap");
    std::fs::write(&path, &far).expect("write");
    let file = path.to_string_lossy().into_owned();

    let start = std::time::Instant::now();
    let records = json_lines(&["stats", &file, "--json"]);
    let total = records.last().expect("stats");
    assert_eq!(u(total, "intervals"), 1_000_000_001);
    assert_eq!(u(total, "intervals_omitted"), 1_000_000_001 - 100_000);
    let intervals = records
        .iter()
        .filter(|r| r["type"] == "stats_interval")
        .count();
    assert_eq!(intervals, 100_000);
    let packets = json_lines(&["read", &file, "--json"]).len() as u64;
    assert_eq!(packets, read.len() as u64);
    assert_eq!(
        u(&total["c2s"], "packets") + u(&total["s2c"], "packets"),
        packets
    );
    let (code, out, _) = run(&["stats", &file]);
    assert_eq!(code, 0);
    assert!(
        out.contains("1000000001 intervals of 1 s: the table shows the first 10000"),
        "{}",
        common::tail(&out, 4)
    );
    assert!(start.elapsed().as_secs() < 20, "{:?}", start.elapsed());
}
