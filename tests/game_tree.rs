//! `game -V`: each game packet's tree is in wire order, each line with its
//! offset and length in the packet (header included), as the RakNet tree
//! gives them in the datagram. The expected offsets come from the packet's
//! bytes (the `data` of `game --json`), read here by hand.

mod common;

use common::{run_bin, sample};
use serde_json::Value;

/// `game SAMPLE.pcap --keylog SAMPLE.keylog` with `extra`: its stdout.
fn game(name: &str, extra: &[&str]) -> String {
    let pcap = sample(&format!("{name}.pcap"));
    let keylog = sample(&format!("{name}.keylog"));
    let mut args = vec![
        "game",
        pcap.to_str().unwrap(),
        "--keylog",
        keylog.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = run_bin(&args);
    assert!(
        o.status.success(),
        "game {name} {extra:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn records(name: &str) -> Vec<Value> {
    game(name, &["--json"])
        .lines()
        .map(|l| serde_json::from_str(l).expect("NDJSON"))
        .filter(|r: &Value| r["type"] == "game")
        .collect()
}

/// A tree line with an offset: (offset, length, column of the field, field).
fn row(line: &str) -> Option<(usize, usize, usize, &str)> {
    let (o, rest) = line.trim_start().split_once(' ')?;
    let (l, rest) = rest.trim_start().split_once(' ')?;
    let text = rest.trim_start();
    Some((
        o.parse().ok()?,
        l.parse().ok()?,
        line.len() - text.len(),
        text,
    ))
}

/// Each packet's line and the tree lines under it, in order.
fn blocks(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.is_empty() {
            inside = false;
        } else if inside {
            out.last_mut().unwrap().1.push(line.to_string());
        } else {
            out.push((line.to_string(), Vec::new()));
            inside = true;
        }
    }
    out
}

/// A LEB128 varint at `at`: (value, bytes it took).
fn varint(b: &[u8], at: usize) -> (usize, usize) {
    let (mut v, mut n) = (0, 0);
    loop {
        let x = b[at + n];
        v |= usize::from(x & 0x7f) << (7 * n);
        n += 1;
        if x & 0x80 == 0 {
            return (v, n);
        }
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The client's Text packet of 1.19.1: a varint header, the type (u8),
/// needs_translation (bool), then four varint-prefixed strings; the tree
/// has them in that order, at the offsets the bytes give, then the name
/// of the type, decoded, with no offset.
#[test]
fn the_text_packet_is_in_wire_order_at_its_offsets() {
    let text = records("bedrock-1.19.1")
        .into_iter()
        .find(|r| r["name"] == "text" && r["dir"] == "c2s")
        .expect("the client's text packet");
    let frame = text["frame"].as_u64().unwrap();
    let b = hex(text["data"].as_str().unwrap());
    assert_eq!(b.len(), text["len"].as_u64().unwrap() as usize);
    let mut want = Vec::new();
    let (_, h) = varint(&b, 0);
    want.push((0, h, "header".to_string()));
    want.push((h, 1, "type".into()));
    want.push((h + 1, 1, "needs_translation".into()));
    let mut at = h + 2;
    for name in ["source_name", "message", "xuid", "platform_chat_id"] {
        let (n, len) = varint(&b, at);
        want.push((at, len + n, name.into()));
        at += len + n;
    }
    assert_eq!(at, b.len(), "the fields end with the packet");

    let out = game("bedrock-1.19.1", &["-V"]);
    let (_, tree) = blocks(&out)
        .into_iter()
        .find(|(l, _)| {
            l.trim_start().starts_with(&format!("{frame} "))
                && l.contains(" c2s ")
                && l.contains(" text (0x09)")
        })
        .unwrap_or_else(|| panic!("no text packet of frame {frame} in:\n{out}"));
    let got: Vec<(usize, usize, String)> = tree
        .iter()
        .filter_map(|l| row(l))
        .map(|(o, l, _, t)| (o, l, t.split(':').next().unwrap().to_string()))
        .collect();
    assert_eq!(got, want, "{}", tree.join("\n"));
    let field = |name: &str| {
        tree.iter()
            .find(|l| l.contains(&format!(" {name}: ")))
            .unwrap()
    };
    let source = text["fields"]["source_name"].as_str().unwrap();
    assert!(field("source_name").ends_with(&format!("source_name: \"{source}\"")));
    // After the wire fields, what has no bytes of its own.
    let decoded = tree.iter().position(|l| l.trim() == "decoded (no offset):");
    let last_wire = tree.iter().rposition(|l| row(l).is_some());
    assert!(decoded > last_wire, "{}", tree.join("\n"));
    assert!(field("type_name").trim() == "type_name: \"chat\"");
}

/// In every packet of both samples: the header first, at 0, as long as
/// its varint; the top lines one after the other to the packet's end;
/// each nested line within the line it is under.
#[test]
fn every_packets_tree_covers_its_bytes_in_order() {
    for name in ["bedrock-login", "bedrock-1.19.1"] {
        let packets = records(name);
        let out = game(name, &["-V"]);
        let trees = blocks(&out);
        assert_eq!(trees.len(), packets.len(), "{name}");
        for (p, (line, tree)) in packets.iter().zip(&trees) {
            let b = hex(p["data"].as_str().unwrap());
            let what = format!("{name}: {line}\n{}", tree.join("\n"));
            assert!(
                format!("{line} ").contains(&format!(" len={} ", b.len())),
                "{what}"
            );
            let rows: Vec<_> = tree.iter().filter_map(|l| row(l)).collect();
            let Some(&(o, l, top, text)) = rows.first() else {
                panic!("no line with an offset: {what}");
            };
            assert_eq!((o, l), (0, varint(&b, 0).1), "{what}");
            assert!(text.starts_with("header: id "), "{what}");
            let mut at = 0;
            // The lines each row is inside: (column, end).
            let mut open: Vec<(usize, usize)> = Vec::new();
            for &(o, l, col, text) in &rows {
                while open.last().is_some_and(|&(c, _)| c >= col) {
                    open.pop();
                }
                match open.last() {
                    None => {
                        assert_eq!((col, o), (top, at), "{what}\n{text}");
                        at = o + l;
                    }
                    Some(&(_, end)) => assert!(o + l <= end, "{what}\n{text}"),
                }
                open.push((col, o + l));
            }
            assert_eq!(at, b.len(), "{what}");
        }
    }
}

/// `-V` changes nothing in the records.
#[test]
fn the_records_are_the_same_with_the_tree_asked_for() {
    assert_eq!(
        game("bedrock-login", &["--json"]),
        game("bedrock-login", &["--json", "-V"])
    );
}
