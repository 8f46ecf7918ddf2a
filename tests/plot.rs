//! End-to-end tests of `raknet-dissect plot FILE -o OUT.svg`, on the bundled
//! real-peer samples (chiefly `lossy.pcap`: an original-RakNet session through
//! a seeded lossy relay). The SVG is parsed as XML and its parts are counted
//! against what `read --json` and `flows --json` say of the same capture.
//!
//! The picture's series are told apart by element and colour (src/cli/plot.rs
//! fixes them): throughput is a `polyline` per direction, blue (c2s) and
//! orange (s2c); resent packets are filled `polygon` triangles, RTT samples
//! filled `circle`s, both in the same two colours. Legend samples are `rect`s,
//! so they never count as points.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

mod common;

use common::{run_bin, sample, Work};

const C2S: &str = "#1F77B4";
const S2C: &str = "#FF7F0E";

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `read --json` of a sample: its packet records.
fn packets(name: &str) -> Vec<Value> {
    let o = run_bin(&["read", &s(&sample(name)), "--json"]);
    assert!(o.status.success(), "read failed: {}", stderr(&o));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("NDJSON line"))
        .filter(|v| v["type"] == "packet")
        .collect()
}

/// `flows --json` of a sample.
fn flows(name: &str) -> Vec<Value> {
    let o = run_bin(&["flows", &s(&sample(name)), "--json"]);
    assert!(o.status.success(), "flows failed: {}", stderr(&o));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("NDJSON line"))
        .collect()
}

/// Run `plot` on a sample into `out`; the SVG text.
fn plot(name: &str, out: &Path, extra: &[&str]) -> String {
    let mut args = vec!["plot".to_string(), s(&sample(name)), "-o".into(), s(out)];
    args.extend(extra.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run_bin(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "plot {name} failed: {}",
        stderr(&o)
    );
    std::fs::read_to_string(out).unwrap_or_else(|e| panic!("no SVG at {}: {e}", out.display()))
}

/// How many `x,y` pairs a polyline or polygon has.
fn point_count(n: roxmltree::Node) -> usize {
    n.attribute("points")
        .unwrap_or("")
        .split_whitespace()
        .filter(|p| p.contains(','))
        .count()
}

/// Elements named `tag` whose attribute `attr` is `color`.
fn with_color<'a, 'i>(
    doc: &'a roxmltree::Document<'i>,
    tag: &str,
    attr: &str,
    color: &str,
) -> Vec<roxmltree::Node<'a, 'i>> {
    doc.descendants()
        .filter(|n| n.has_tag_name(tag) && n.attribute(attr) == Some(color))
        .collect()
}

/// All the text of the SVG, one string per `text` element.
fn texts(doc: &roxmltree::Document) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| {
            let t: String = n.descendants().filter_map(|t| t.text()).collect();
            t.trim().to_string()
        })
        .collect()
}

/// The bucket width `plot` must pick for a flow lasting `dur_us`: 1 ms,
/// doubled until fewer than 256 buckets cover the flow.
fn bucket_us(dur_us: u64) -> u64 {
    let mut w = 1_000u64;
    while dur_us / w >= 256 {
        w *= 2;
    }
    w
}

fn ts_us(v: &Value) -> u64 {
    (v["ts"].as_f64().expect("ts") * 1e6).round() as u64
}

#[test]
fn lossy_picture_matches_the_capture() {
    let work = Work::new("lossy");
    let out = work.file("lossy.svg");
    let text = plot("lossy.pcap", &out, &[]);
    let doc = roxmltree::Document::parse(&text).expect("the SVG is well-formed XML");

    // The root: an SVG element with a size.
    let root = doc.root_element();
    assert!(root.has_tag_name("svg"), "root is {:?}", root.tag_name());
    let w: u32 = root
        .attribute("width")
        .expect("width")
        .parse()
        .expect("int");
    let h: u32 = root
        .attribute("height")
        .expect("height")
        .parse()
        .expect("int");
    assert!(w >= 600 && h >= 600, "{w}x{h}");

    // Ground truth from the other commands.
    let pkts = packets("lossy.pcap");
    let flow = &flows("lossy.pcap")[0];
    assert_eq!(flow["flow"], 1);
    let client = flow["client"].as_str().expect("client");
    let server = flow["server"].as_str().expect("server");

    // The title names the flow and both ends.
    let all = texts(&doc);
    let title = all
        .iter()
        .find(|t| t.starts_with("flow 1:"))
        .unwrap_or_else(|| panic!("no flow 1 title in {all:?}"));
    assert!(
        title.contains(client) && title.contains(server),
        "title {title:?} lacks {client} / {server}"
    );
    // Axis descriptions with units.
    for unit in ["(kB/s)", "RTT (ms)", "(s)"] {
        assert!(
            all.iter().any(|t| t.contains(unit)),
            "no axis label with {unit}"
        );
    }

    // Throughput: a polyline per direction, one point per bucket.
    let first = pkts.iter().map(ts_us).min().expect("packets");
    let last = pkts.iter().map(ts_us).max().expect("packets");
    let width = bucket_us(last - first);
    assert_eq!(width, 64_000, "lossy.pcap lasts {} µs", last - first);
    let buckets = ((last - first) / width + 1) as usize;
    assert!(
        all.iter().any(|t| t.contains("in 64 ms buckets")),
        "the bucket width is not stated"
    );
    for color in [C2S, S2C] {
        let lines = with_color(&doc, "polyline", "stroke", color);
        let longest = lines.iter().map(|n| point_count(*n)).max().unwrap_or(0);
        assert_eq!(
            longest, buckets,
            "throughput {color}: {longest} points, want {buckets}"
        );
    }

    // Resends: one triangle per packet with a `resend` finding, per direction.
    let (rc, rs) = resent_packets(&pkts, |_| true);
    assert!(rc + rs > 0, "lossy.pcap has resends");
    assert_eq!(
        with_color(&doc, "polygon", "fill", C2S).len(),
        rc,
        "c2s resends"
    );
    assert_eq!(
        with_color(&doc, "polygon", "fill", S2C).len(),
        rs,
        "s2c resends"
    );

    // RTT: a point per sample (there are fewer than the cap).
    let samples = flow["rtt_ms"]["samples"].as_u64().expect("RTT samples") as usize;
    let dots = with_color(&doc, "circle", "fill", C2S).len()
        + with_color(&doc, "circle", "fill", S2C).len();
    assert!(dots > 0, "no RTT point");
    assert_eq!(dots, samples, "RTT points");
    // Both directions were acknowledged.
    assert!(!with_color(&doc, "circle", "fill", C2S).is_empty());
    assert!(!with_color(&doc, "circle", "fill", S2C).is_empty());

    // Loss: the NACK and gap totals stated match the flow record.
    let summary = all
        .iter()
        .find(|t| t.contains("NACKed "))
        .expect("summary line");
    let want = format!(
        "NACKed {} / {}",
        flow["c2s"]["nacked"], flow["s2c"]["nacked"]
    );
    assert!(summary.contains(&want), "{summary:?} lacks {want:?}");
    let want = format!("resent packets {rc} / {rs}");
    assert!(summary.contains(&want), "{summary:?} lacks {want:?}");
}

#[test]
fn one_flow_and_a_missing_flow() {
    let work = Work::new("flow");
    let out = work.file("one.svg");
    let text = plot("lossy.pcap", &out, &["--flow", "1"]);
    let doc = roxmltree::Document::parse(&text).expect("XML");
    assert!(texts(&doc).iter().any(|t| t.starts_with("flow 1:")));

    let missing = work.file("missing.svg");
    let o = run_bin(&[
        "plot",
        &s(&sample("lossy.pcap")),
        "-o",
        &s(&missing),
        "--flow",
        "99",
    ]);
    assert_ne!(o.status.code(), Some(0), "--flow 99 succeeded");
    let err = stderr(&o);
    assert!(err.contains("no flow 99"), "stderr: {err}");
    assert!(!missing.exists(), "an SVG was left for a missing flow");
}

/// Packets with a `resend` finding among those `keep` takes: (c2s, s2c).
fn resent_packets(pkts: &[Value], keep: impl Fn(&Value) -> bool) -> (usize, usize) {
    let count = |dir: &str| {
        pkts.iter()
            .filter(|p| p["dir"] == dir && keep(p))
            .filter(|p| {
                p["anomalies"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|a| a["kind"] == "resend"))
            })
            .count()
    };
    (count("c2s"), count("s2c"))
}

/// The time column of `read`'s lines (seconds since the capture's first
/// packet), by frame.
fn read_times(name: &str) -> std::collections::HashMap<u64, f64> {
    let o = run_bin(&["read", &s(&sample(name)), "--color", "never"]);
    assert!(o.status.success(), "read failed: {}", stderr(&o));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
        })
        .collect()
}

#[test]
fn a_time_window_draws_only_its_packets_on_the_capture_clock() {
    let work = Work::new("window");
    let out = work.file("window.svg");
    let text = plot("lossy.pcap", &out, &["--from", "0.25", "--to", "0.8"]);
    let doc = roxmltree::Document::parse(&text).expect("XML");
    let all = texts(&doc);
    // Under 2 s: the axis counts milliseconds, on the capture's clock.
    assert!(
        all.iter()
            .any(|t| t.starts_with("time since the capture's first packet (ms)")),
        "{all:?}"
    );
    assert!(
        all.iter().any(|t| t.lines().next() == Some("250")),
        "the axis starts at --from: {all:?}"
    );
    // Resend markers: the packets with a resend finding inside the window.
    let times = read_times("lossy.pcap");
    let inside = |p: &Value| {
        let t = times[&p["frame"].as_u64().expect("frame")];
        (0.25..=0.8).contains(&t)
    };
    let pkts = packets("lossy.pcap");
    let (rc, rs) = resent_packets(&pkts, inside);
    let (all_c, all_s) = (
        pkts.iter().filter(|p| p["dir"] == "c2s").count(),
        pkts.iter().filter(|p| p["dir"] == "s2c").count(),
    );
    assert!(
        rc + rs > 0 && rc + rs < 18,
        "{rc} + {rs}: some resends, not all"
    );
    assert_eq!(with_color(&doc, "polygon", "fill", C2S).len(), rc);
    assert_eq!(with_color(&doc, "polygon", "fill", S2C).len(), rs);
    // The summary counts the window's packets only.
    let summary = all
        .iter()
        .find(|t| t.contains("packets "))
        .expect("summary line");
    let (wc, ws) = (
        pkts.iter()
            .filter(|p| p["dir"] == "c2s" && inside(p))
            .count(),
        pkts.iter()
            .filter(|p| p["dir"] == "s2c" && inside(p))
            .count(),
    );
    assert!(wc < all_c && ws < all_s);
    assert!(
        summary.contains(&format!("packets {wc} c2s / {ws} s2c")),
        "{summary}"
    );
    // A window the flow is not in, and a window backwards: usage errors.
    let none = work.file("none.svg");
    for (args, want) in [
        (
            &["--flow", "1", "--from", "20"][..],
            "flow 1 has no packet from 20 s on",
        ),
        (
            &["--from", "2", "--to", "1"][..],
            "--from 2 is after --to 1",
        ),
    ] {
        let mut a = vec!["plot", "-o"];
        let (f, n) = (s(&sample("lossy.pcap")), s(&none));
        a.extend([n.as_str(), f.as_str()]);
        a.extend_from_slice(args);
        let o = run_bin(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(want), "{}", stderr(&o));
        assert!(!none.exists());
    }
}

#[test]
fn unwritable_output_is_exit_1() {
    let work = Work::new("unwritable");
    let bad = work.file("no/such/dir/out.svg");
    let o = run_bin(&["plot", &s(&sample("lossy.pcap")), "-o", &s(&bad)]);
    assert_eq!(o.status.code(), Some(1), "stderr: {}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.starts_with("raknet-dissect: cannot write ") && err.lines().count() == 1,
        "stderr: {err}"
    );
    // A directory is not a file either.
    let o = run_bin(&["plot", &s(&sample("lossy.pcap")), "-o", &s(&work.0)]);
    assert_eq!(o.status.code(), Some(1), "stderr: {}", stderr(&o));
}

#[test]
fn output_to_stdout_and_r_spelling() {
    let o = run_bin(&["plot", "-r", &s(&sample("lossy.pcap")), "-o", "-"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let text = String::from_utf8(o.stdout).expect("utf-8");
    let doc = roxmltree::Document::parse(&text).expect("XML on stdout");
    assert!(doc.root_element().has_tag_name("svg"));
}

#[test]
fn a_flow_without_data_gets_notes() {
    // lossy.pcap's first 100 ms: the handshake and the first data, no loss
    // yet, no resend.
    let work = Work::new("nodata");
    let out = work.file("start.svg");
    let text = plot("lossy.pcap", &out, &["--to", "0.1"]);
    let doc = roxmltree::Document::parse(&text).expect("XML");
    let all = texts(&doc);
    assert!(all.iter().any(|t| t.starts_with("flow 1:")), "{all:?}");
    for note in ["no resends", "no loss seen"] {
        assert!(all.iter().any(|t| t.contains(note)), "no note {note:?}");
    }
    assert!(with_color(&doc, "polygon", "fill", C2S).is_empty());
}

#[test]
fn a_flow_of_pings_only_gets_no_panels() {
    // no-server.pcap: a client pinging a port where nothing listens.
    let work = Work::new("pings");
    let out = work.file("no-server.svg");
    let text = plot("no-server.pcap", &out, &[]);
    let doc = roxmltree::Document::parse(&text).expect("XML");
    let all = texts(&doc);
    assert!(all.iter().any(|t| t.starts_with("flow 1:")), "{all:?}");
    assert!(
        all.iter().any(|t| t.contains("unconnected messages only")),
        "{all:?}"
    );
    for panel in [
        "Throughput",
        "Resent packets",
        "RTT:",
        "Loss:",
        "no resends",
    ] {
        assert!(!all.iter().any(|t| t.contains(panel)), "{panel}: {all:?}");
    }
    let height: u32 = doc
        .root_element()
        .attribute("height")
        .unwrap()
        .parse()
        .unwrap();
    assert!(height <= 200, "a short picture: {height}");
}

#[test]
fn a_window_past_the_end_says_so() {
    let work = Work::new("past");
    let out = work.file("past.svg");
    let o = run_bin(&[
        "plot",
        &s(&sample("lossy.pcap")),
        "-o",
        &s(&out),
        "--from",
        "20",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(
        err.trim_end(),
        "raknet-dissect: no packet from 20 s on: the capture lasts 10.773949 s"
    );
    assert!(!err.contains("not followed") && !out.exists(), "{err}");
}

#[test]
fn short_flows_count_milliseconds() {
    let work = Work::new("ms");
    let out = work.file("handshake.svg");
    let text = plot("handshake.pcap", &out, &[]);
    let doc = roxmltree::Document::parse(&text).expect("XML");
    let all = texts(&doc);
    let first: Vec<&str> = all.iter().filter_map(|t| t.lines().next()).collect();
    assert!(
        first.contains(&"time since the flow's first packet (ms)"),
        "{first:?}"
    );
    // Whole milliseconds, not "0 0 0 0.001".
    for tick in ["100", "200", "300", "700"] {
        assert!(first.contains(&tick), "{tick}: {first:?}");
    }
    // lossy.pcap lasts 10.75 s: seconds.
    let out = work.file("lossy.svg");
    let text = plot("lossy.pcap", &out, &[]);
    let doc = roxmltree::Document::parse(&text).expect("XML");
    assert!(texts(&doc)
        .iter()
        .any(|t| t.starts_with("time since the flow's first packet (s)")));
}

#[test]
fn json_records_what_was_drawn() {
    let work = Work::new("json");
    let out = work.file("lossy.svg");
    let o = run_bin(&["plot", &s(&sample("lossy.pcap")), "-o", &s(&out), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 1);
    let r = &records[0];
    assert_eq!(r["type"], "plot_flow");
    assert_eq!(r["flow"], 1);
    // The same counts as the flow record and the picture's title.
    let f = &flows("lossy.pcap")[0];
    assert_eq!(r["packets"][0], f["c2s"]["packets"]);
    assert_eq!(r["packets"][1], f["s2c"]["packets"]);
    assert_eq!(r["bucket_ms"], 64.0);
    assert!(out.exists());
    // Both on standard output cannot be.
    let o = run_bin(&["plot", &s(&sample("lossy.pcap")), "-o", "-", "--json"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_capture_without_raknet_and_bad_captures() {
    let work = Work::new("bad");
    // A valid pcap with no packet at all.
    let mut empty = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    empty.extend([0u8; 8]);
    empty.extend(65535u32.to_le_bytes());
    empty.extend(1u32.to_le_bytes());
    let cap = work.file("empty.pcap");
    std::fs::write(&cap, &empty).expect("write");
    let out = work.file("empty.svg");
    let o = run_bin(&["plot", &s(&cap), "-o", &s(&out)]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let text = std::fs::read_to_string(&out).expect("SVG");
    let doc = roxmltree::Document::parse(&text).expect("XML");
    assert!(texts(&doc).iter().any(|t| t.contains("no RakNet flow")));

    // Not a capture: exit 3, and no SVG left behind.
    let junk = work.file("junk.pcap");
    std::fs::write(&junk, b"this is not a capture file at all").expect("write");
    let out = work.file("junk.svg");
    let o = run_bin(&["plot", &s(&junk), "-o", &s(&out)]);
    assert_eq!(o.status.code(), Some(3), "stderr: {}", stderr(&o));
    assert!(!out.exists());

    // Cut short: exit 5, and the SVG of what was read.
    let bytes = std::fs::read(sample("lossy.pcap")).expect("lossy.pcap");
    let cut = work.file("cut.pcap");
    std::fs::write(&cut, &bytes[..bytes.len() / 2 + 7]).expect("write");
    let out = work.file("cut.svg");
    let o = run_bin(&["plot", &s(&cut), "-o", &s(&out)]);
    assert_eq!(o.status.code(), Some(5), "stderr: {}", stderr(&o));
    let text = std::fs::read_to_string(&out).expect("SVG of the part read");
    roxmltree::Document::parse(&text).expect("XML");

    // No capture named: a usage error.
    let o = run_bin(&["plot", "-o", &s(&work.file("none.svg"))]);
    assert_eq!(o.status.code(), Some(2), "stderr: {}", stderr(&o));
}

/// `lossy.pcap` played `copies` times one after the other, each copy on its
/// own ports (every UDP port + 100 × copy, checksum cleared) and 20 s later:
/// a flow per copy. Copy 0 keeps only its first `short` records.
fn many_flows(copies: u16, short: usize) -> Vec<u8> {
    let bytes = std::fs::read(sample("lossy.pcap")).expect("lossy.pcap");
    assert_eq!(
        &bytes[..4],
        &[0xd4, 0xc3, 0xb2, 0xa1],
        "little-endian µs pcap"
    );
    assert_eq!(bytes[20], 1, "Ethernet");
    let mut records: Vec<&[u8]> = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        records.push(&bytes[at..at + 16 + len]);
        at += 16 + len;
    }
    let mut out = bytes[..24].to_vec();
    for k in 0..copies {
        let take = if k == 0 { short } else { records.len() };
        for r in &records[..take] {
            let mut r = r.to_vec();
            let sec = u32::from_le_bytes(r[..4].try_into().unwrap()) + 20 * u32::from(k);
            r[..4].copy_from_slice(&sec.to_le_bytes());
            let ip = 16 + 14;
            if r.len() >= ip + 20 && r[ip] >> 4 == 4 && r[ip + 9] == 17 {
                let udp = ip + usize::from(r[ip] & 0xf) * 4;
                for port in [udp, udp + 2] {
                    let p = u16::from_be_bytes([r[port], r[port + 1]]) + 100 * k;
                    r[port..port + 2].copy_from_slice(&p.to_be_bytes());
                }
                r[udp + 6..udp + 8].copy_from_slice(&[0, 0]);
            }
            out.extend(r);
        }
    }
    out
}

#[test]
fn at_most_16_flows_the_busiest_and_the_rest_named() {
    let work = Work::new("many");
    let cap = work.file("many.pcap");
    std::fs::write(&cap, many_flows(18, 12)).expect("write");
    let o = run_bin(&["flows", &s(&cap), "--json"]);
    let n = String::from_utf8_lossy(&o.stdout).lines().count();
    assert_eq!(n, 18, "flows in the made capture: {}", stderr(&o));

    let out = work.file("many.svg");
    let o = run_bin(&["plot", &s(&cap), "-o", &s(&out)]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let text = std::fs::read_to_string(&out).expect("SVG");
    let doc = roxmltree::Document::parse(&text).expect("XML");
    let titles: Vec<String> = texts(&doc)
        .into_iter()
        .filter(|t| t.starts_with("flow "))
        .collect();
    assert_eq!(titles.len(), 16, "{titles:?}");
    // Flow 1 (12 packets) and one of the 17 equal copies, the last, left out.
    assert!(
        !titles.iter().any(|t| t.starts_with("flow 1:")),
        "{titles:?}"
    );
    assert!(
        !titles.iter().any(|t| t.starts_with("flow 18:")),
        "{titles:?}"
    );
    assert!(
        titles[0].starts_with("flow 2:"),
        "drawn in id order: {titles:?}"
    );
    let err = stderr(&o);
    assert!(
        err.contains("left out flows 1 (") && err.contains("18 ("),
        "stderr: {err}"
    );
    // The picture is as tall as its flows.
    let h: u32 = doc
        .root_element()
        .attribute("height")
        .and_then(|h| h.parse().ok())
        .expect("height");
    assert!(h >= 16 * 600, "height {h}");
}
