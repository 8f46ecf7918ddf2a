use serde_json::{json, Value};

use super::compile::Types;
use super::*;
use crate::bedrock::batch::Header;

struct T(serde_json::Map<String, Value>);
impl Types for T {
    fn def(&self, name: &str) -> Option<Value> {
        self.0.get(name).cloned()
    }
}

/// Decode `hex` as type `root` of the definitions `types`.
fn run(types: Value, root: &str, hex: &str, s: Session) -> Result<Value, DecodeError> {
    let t = T(types.as_object().cloned().unwrap());
    let mut c = Compiled::default();
    let id = c.named(root, &t);
    let bytes = crate::wire::cursor::parse_hex(hex).unwrap();
    decode::decode(&c, id, &bytes, s)
}

#[test]
fn every_version_compiles_and_names_its_packets_as_packet_names_do() {
    let s = schema();
    assert_eq!(s.protocols.len(), 53);
    for &(p, _) in &s.protocols {
        let d = definitions(p).expect("known");
        assert!(d.len() > 150, "{p}: {}", d.len());
        for id in 0..1024u16 {
            assert_eq!(
                d.name(id),
                crate::bedrock::names::packet_name(Some(p), id),
                "protocol {p} id {id}"
            );
        }
    }
    // Unknown numbers take the nearest older known one.
    assert_eq!(nearest(2169), 2169);
    assert_eq!(nearest(2170), 2169);
    assert_eq!(nearest(1), 422);
    assert_eq!(nearest(u32::MAX), s.protocols.last().unwrap().0);
}

#[test]
fn containers_switches_mappers_and_counts() {
    let types = json!({
        "string": ["pstring", {"countType": "varint"}],
        "root": ["container", [
            {"name": "kind", "type": ["mapper", {"type": "u8", "mappings": {"0": "a", "1": "b"}}]},
            {"anon": true, "type": ["switch", {"compareTo": "kind", "fields": {
                "a": ["container", [{"name": "n", "type": "li16"}]],
                "b": ["container", [{"name": "s", "type": "string"}]]}}]},
            {"name": "len", "type": "varint"},
            {"name": "xs", "type": ["array", {"count": "len", "type": "zigzag32"}]},
            {"name": "opt", "type": ["option", "bool"]},
            {"name": "bits", "type": ["bitfield", [
                {"name": "hi", "size": 4, "signed": false},
                {"name": "lo", "size": 4, "signed": true}]]},
            {"name": "flags", "type": ["bitflags", {"type": "u8", "flags": ["x", "y", "z"]}]},
            {"name": "big", "type": "lu64"},
            {"name": "rest", "type": "restBuffer"}
        ]]
    });
    let v = run(
        types.clone(),
        "root",
        "01026869020103000f05ffffffffffffffffabcd",
        Session::default(),
    )
    .unwrap();
    assert_eq!(
        v,
        json!({"kind": "b", "s": "hi", "len": 2, "xs": [-1, -2], "opt": null,
               "bits": {"hi": 0, "lo": -1},
               "flags": {"_value": 5, "x": true, "y": false, "z": true},
               "big": "18446744073709551615", "rest": "abcd"})
    );
    // The other case, and an error naming the field and the offset.
    let e = run(types, "root", "000100", Session::default()).unwrap_err();
    assert_eq!(e.field, "len");
    assert_eq!(e.offset, 3);
    assert!(
        e.to_string()
            .starts_with("len at byte 3: 1 bytes wanted, 0 left"),
        "{e}"
    );
}

/// [`run`], traced: the value and each span as `depth name start..end`.
fn traced(types: Value, root: &str, hex: &str) -> (Value, Vec<String>, Vec<Span>) {
    let t = T(types.as_object().cloned().unwrap());
    let mut c = Compiled::default();
    let id = c.named(root, &t);
    let bytes = crate::wire::cursor::parse_hex(hex).unwrap();
    let (v, spans) = decode::decode_traced(&c, id, &bytes, Session::default()).unwrap();
    let spans = spans.expect("under MAX_SPANS");
    assert_eq!(
        decode::decode(&c, id, &bytes, Session::default()).unwrap(),
        v,
        "the same value traced or not"
    );
    let lines = spans
        .iter()
        .map(|s| format!("{} {} {}..{}", s.depth, s.name, s.start, s.end))
        .collect();
    (v, lines, spans)
}

#[test]
fn the_trace_has_each_field_in_wire_order_with_its_bytes() {
    let types = json!({
        "string": ["pstring", {"countType": "varint"}],
        "root": ["container", [
            {"name": "kind", "type": ["mapper", {"type": "u8", "mappings": {"0": "a", "1": "b"}}]},
            {"anon": true, "type": ["switch", {"compareTo": "kind", "fields": {
                "a": ["container", [{"name": "n", "type": "li16"}]],
                "b": ["container", [{"name": "s", "type": "string"}]]}}]},
            {"name": "xs", "type": ["array", {"countType": "varint", "type": "zigzag32"}]},
            {"name": "opt", "type": ["option", "bool"]},
            {"name": "bits", "type": ["bitfield", [
                {"name": "hi", "size": 4, "signed": false},
                {"name": "lo", "size": 4, "signed": true}]]},
            {"name": "flags", "type": ["bitflags", {"type": "u8", "flags": ["x", "y"]}]},
            {"name": "pairs", "type": ["array", {"countType": "u8", "type": ["container", [
                {"name": "a", "type": "u8"}, {"name": "b", "type": "lu16"}]]}]},
            {"name": "rest", "type": ["encapsulated", {"lengthType": "u8", "type":
                ["maybeIncompleteArray", {"countType": "u8", "type": "li16"}]}]}
        ]]
    });
    // kind b, s "hi", xs [-1, -2], opt none, bits, flags, two pairs, then
    // in 4 bytes three li16 promised and one and a half there.
    let hex = "01 026869 020103 00 0f 03 02 01 0200 03 0400 04 03 0700 08";
    let (v, lines, spans) = traced(types, "root", &hex.replace(' ', ""));
    assert_eq!(v["s"], "hi");
    assert_eq!(
        lines,
        [
            "0 kind 0..1",
            "0 s 1..4",
            "0 xs 4..7",
            "1 [0] 5..6",
            "1 [1] 6..7",
            "0 opt 7..8",
            "0 bits 8..9",
            "1 hi 8..9",
            "1 lo 8..9",
            "0 flags 9..10",
            "1 _value 9..10",
            "1 x 9..10",
            "1 y 9..10",
            "0 pairs 10..17",
            "1 [0] 11..14",
            "2 a 11..12",
            "2 b 12..14",
            "1 [1] 14..17",
            "2 a 14..15",
            "2 b 15..17",
            "0 rest 17..22",
            "1 [0] 19..21",
        ]
    );
    // Values where they are single; what a composite holds, where its
    // parts follow.
    assert_eq!(spans[0].shown, Shown::Value(json!("b")));
    assert_eq!(spans[2].shown, Shown::Array(2));
    assert_eq!(spans[3].shown, Shown::Value(json!(-1)));
    assert_eq!(spans[5].shown, Shown::Value(Value::Null));
    assert_eq!(spans[6].shown, Shown::Object);
    assert_eq!(spans[8].shown, Shown::Value(json!(-1)));
    assert_eq!(spans[11].shown, Shown::Value(json!(true)));
    assert_eq!(
        spans[20].shown,
        Shown::Array(1),
        "the cut-short element dropped"
    );
}

#[test]
fn the_trace_goes_into_nbt() {
    // A compound "" holding int "a" = -1 and a list of two strings.
    let (_, lines, spans) = traced(json!({}), "nbt", "0a000301610109016208040178017900");
    assert_eq!(
        lines,
        [
            "0 type 0..1",
            "0 name 1..2",
            "0 value 2..16",
            "1 a 2..6",
            "2 type 2..3",
            "2 value 5..6",
            "1 b 6..15",
            "2 type 6..7",
            "2 value 9..15",
            "3 type 9..10",
            "3 value 10..15",
            "4 [0] 11..13",
            "4 [1] 13..15",
        ]
    );
    assert_eq!(spans[5].shown, Shown::Value(json!(-1)));
    assert_eq!(spans[12].shown, Shown::Value(json!("y")));
}

/// In every packet of the vectors, the trace's top spans tile the body
/// and are the value's keys; each span lies within its parent.
#[test]
fn the_trace_covers_every_packet_of_the_vectors() {
    let mut n = 0;
    for text in [
        include_str!("../testdata/packets.jsonl"),
        include_str!("../testdata/every_packet.jsonl"),
        include_str!("../testdata/start_game.jsonl"),
    ] {
        for line in text.lines() {
            let (_, protocol, bytes, h) = vector(line);
            let body = &bytes[h.len..];
            let d = definitions(protocol).unwrap();
            let Some(Ok((got, spans))) = d.decode_traced(h.id, body, Session::default()) else {
                continue;
            };
            let what = format!("{} {}", protocol, d.name(h.id).unwrap_or("?"));
            let plain = d.decode(h.id, body, Session::default()).unwrap().unwrap();
            assert_eq!(got, plain, "{what}");
            let spans = spans.unwrap();
            let mut at = 0;
            let mut names = Vec::new();
            // The open spans: (depth, end).
            let mut open: Vec<(u16, usize)> = Vec::new();
            for s in &spans {
                assert!(s.start <= s.end && s.end <= body.len(), "{what}: {s:?}");
                while open.last().is_some_and(|o| o.0 >= s.depth) {
                    open.pop();
                }
                assert_eq!(usize::from(s.depth), open.len(), "{what}: {s:?}");
                if let Some(&(_, end)) = open.last() {
                    assert!(s.end <= end, "{what}: {s:?} past its parent");
                } else {
                    assert_eq!(s.start, at, "{what}: {s:?} after a gap");
                    at = s.end;
                    names.push(s.name.to_string());
                }
                open.push((s.depth, s.end));
            }
            assert_eq!(at, body.len(), "{what}: the spans end before the body");
            let mut keys: Vec<String> = got
                .as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default();
            names.sort();
            names.dedup();
            keys.sort();
            assert_eq!(names, keys, "{what}");
            n += 1;
        }
    }
    assert!(n >= 700, "{n}");
}

#[test]
fn counts_past_the_end_and_nesting_are_bounded() {
    let types = json!({
        "root": ["array", {"countType": "varint", "type": "u8"}],
        "deep": ["container", [{"name": "d", "type": ["option", "deep"]}]],
        "enc": ["container", [{"name": "e", "type": ["encapsulated", {"lengthType": "varint", "type": "li32"}]},
                              {"name": "after", "type": "u8"}]]
    });
    let e = run(types.clone(), "root", "ffffffff0700", Session::default()).unwrap_err();
    assert!(e.what.contains("more than the 1 bytes left"), "{e}");
    // A varint is signed: 0xffffffff is -1, no count at all.
    let e = run(types.clone(), "root", "ffffffff0f00", Session::default()).unwrap_err();
    assert!(e.what.contains("a count of -1"), "{e}");
    let deep = "01".repeat(10_000);
    let e = run(types.clone(), "deep", &deep, Session::default()).unwrap_err();
    assert_eq!(e.what, "nested too deep");
    // An encapsulated value reads within its length, and the next field
    // starts after it.
    let v = run(types.clone(), "enc", "04010000002a", Session::default()).unwrap();
    assert_eq!(v, json!({"e": 1, "after": 42}));
    assert!(run(types, "enc", "05010000002a", Session::default()).is_err());
}

#[test]
fn the_shield_item_id_picks_the_layout() {
    let types = json!({
        "root": ["container", [
            {"name": "network_id", "type": "zigzag32"},
            {"name": "extra", "type": ["switch", {"compareTo": "network_id",
                "default": "u8", "fields": {"/ShieldItemID": "li16"}}]}
        ]]
    });
    let with = Session {
        shield_item_id: Some(1),
    };
    assert_eq!(
        run(types.clone(), "root", "020100", with).unwrap(),
        json!({"network_id": 1, "extra": 1})
    );
    assert_eq!(
        run(types, "root", "0401", with).unwrap(),
        json!({"network_id": 2, "extra": 1})
    );
}

#[test]
fn nbt_as_prismarine_reads_it() {
    let types = json!({});
    // Network NBT: a compound "" holding int "a" = -1 (zigzag 1) and a list
    // of two strings (its count a zigzag 4).
    let v = run(
        types.clone(),
        "nbt",
        "0a000301610109016208040178017900",
        Session::default(),
    )
    .unwrap();
    assert_eq!(
        v,
        json!({"type": "compound", "name": "", "value": {
            "a": {"type": "int", "value": -1},
            "b": {"type": "list", "value": {"type": "string", "value": ["x", "y"]}}}})
    );
    // Little-endian NBT: a long past 2^53 is a string.
    let v = run(
        types,
        "lnbt",
        "0a0000040100 6cffffffffffffff7f00"
            .replace(' ', "")
            .as_str(),
        Session::default(),
    )
    .unwrap();
    assert_eq!(
        v["value"]["l"],
        json!({"type": "long", "value": "9223372036854775807"})
    );
}

/// bedrock-protocol's own serialised packets (testdata/packets.jsonl,
/// scripts/bedrock-vectors.js): each decodes, to its last byte, to the
/// parameters it was made from (UUIDs each half turned, as bedrock-protocol
/// writes them in byte order).
#[test]
fn the_vectors_decode_to_their_parameters() {
    let text = include_str!("../testdata/packets.jsonl");
    let mut n = 0;
    for line in text.lines() {
        let (v, protocol, bytes, h) = vector(line);
        let d = definitions(protocol).unwrap();
        let got = d
            .decode(h.id, &bytes[h.len..], Session::default())
            .expect("a known packet")
            .unwrap_or_else(|e| panic!("{line}: {e}"));
        same(&v["params"], &got, line);
        n += 1;
    }
    assert!(n >= 128, "{n}");
}

/// Every key of `want` (the parameters bedrock-protocol was given: one set
/// for every version, so some are not in this version's layout) that `got`
/// has holds the same value.
fn same(want: &Value, got: &Value, ctx: &str) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                if let Some(gv) = g.get(k) {
                    same(wv, gv, ctx);
                }
            }
        }
        (Value::Array(w), Value::Array(g)) => {
            assert_eq!(w.len(), g.len(), "{want} vs {got} ({ctx})");
            for (a, b) in w.iter().zip(g) {
                same(a, b, ctx);
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            assert!(
                a == b || (a - b).abs() <= 1e-6 * a.abs(),
                "{a} vs {b} ({ctx})"
            );
        }
        // A binary UUID (a text one in older layouts stays as it is).
        (Value::String(a), Value::String(b))
            if a != b && a.len() == 36 && a.as_bytes()[8] == b'-' =>
        {
            assert_eq!(
                crate::wire::cursor::uuid_turned(a).as_deref(),
                Some(b.as_str()),
                "({ctx})"
            );
        }
        (Value::String(a), Value::Number(b)) | (Value::Number(b), Value::String(a)) => {
            assert_eq!(a.parse::<f64>().ok(), b.as_f64(), "({ctx})");
        }
        // Not read in this layout (a switch's void case, an absent option).
        (_, Value::Null) | (Value::Null, _) => {}
        _ => assert_eq!(want, got, "({ctx})"),
    }
}

/// bedrock-protocol's StartGame in every minecraft-data version
/// (testdata/start_game.jsonl): each decodes to its last byte, with the
/// level settings the hand decoder reads.
#[test]
fn start_game_decodes_in_every_version() {
    let text = include_str!("../testdata/start_game.jsonl");
    let mut n = 0;
    for line in text.lines() {
        let (v, protocol, bytes, h) = vector(line);
        let got = definitions(protocol)
            .unwrap()
            .decode(h.id, &bytes[h.len..], Session::default())
            .expect("start_game is known")
            .unwrap_or_else(|e| panic!("{}: {e}", v["version"]));
        assert!(got.get("entity_id").is_some(), "{got}");
        n += 1;
    }
    assert_eq!(n, 55);
}

/// A packet cut short keeps what decoded: every field before the one that
/// stopped, equal to the whole packet's, and the error names that field
/// and its offset.
#[test]
fn a_packet_cut_short_keeps_what_decoded() {
    let line = include_str!("../testdata/start_game.jsonl")
        .lines()
        .last()
        .unwrap();
    let (_, protocol, bytes, h) = vector(line);
    let body = &bytes[h.len..];
    let d = definitions(protocol).unwrap();
    let whole = d.decode(h.id, body, Session::default()).unwrap().unwrap();
    for cut in [1, 40, body.len() / 2, body.len() - 1] {
        let e = d
            .decode(h.id, &body[..cut], Session::default())
            .unwrap()
            .expect_err("cut short");
        assert!(e.offset <= cut, "{cut}: {e}");
        assert!(!e.field.is_empty(), "{cut}: {e}");
        let partial = e.partial.as_deref().expect("what decoded");
        let got = partial.as_object().unwrap();
        let top = e.field.split(['.', '[']).next().unwrap();
        // Every key before the stopped one is whole; the stopped one (an
        // object or array) holds only its parts that decoded.
        for (k, x) in got {
            if k != top {
                assert_eq!(Some(x), whole.get(k), "{cut}: {k}");
            }
        }
        // The fields in wire order, from the whole packet's trace.
        let (_, spans) = d
            .decode_traced(h.id, body, Session::default())
            .unwrap()
            .unwrap();
        let keys: Vec<&str> = spans
            .iter()
            .flatten()
            .filter(|s| s.depth == 0)
            .map(|s| &*s.name)
            .collect();
        let at = keys.iter().position(|k| *k == top).unwrap();
        assert!(keys[..at].iter().all(|k| got.contains_key(*k)), "{cut}");
        if cut > 40 {
            assert!(got.len() > 3, "{cut}: {partial}");
        }
    }
}

/// Every packet type of 1.16.201, 1.21.50 and 1.26.45 with zero-valued
/// parameters, serialised by bedrock-protocol and read back by its own
/// deserializer (testdata/every_packet.jsonl, scripts/bedrock-vectors.js):
/// ours decodes each to its last byte with the same fields.
#[test]
fn every_packet_type_as_bedrock_protocol_reads_it() {
    let n = as_bedrock_protocol_reads(include_str!("../testdata/every_packet.jsonl"));
    assert!(n >= 590, "{n}");
}

/// The same with seeded random values in every field (every case of every
/// switch, options present and absent, negative numbers, non-ASCII text)
/// for 1.21.50, 1.21.130 and 1.26.45 (testdata/every_packet_random.jsonl).
#[test]
fn every_packet_type_with_random_values_as_bedrock_protocol_reads_it() {
    let n = as_bedrock_protocol_reads(include_str!("../testdata/every_packet_random.jsonl"));
    assert!(n >= 650, "{n}");
}

/// The packets a correction changes, whose bytes bedrock-protocol writes
/// by minecraft-data's layout (the vectors leave them out).
const CORRECTED: &[&str] = &[
    "move_player",
    "crafting_data",
    "update_equipment",
    "education_settings",
    "remove_volume_entity",
    "agent_action",
    "lesson_progress",
    "camera_instruction",
    "camera_aim_assist_presets",
    "server_script_debug_drawer",
];

/// Each vector of `text` decoded as bedrock-protocol read it, and encoded
/// back; those of a packet a correction changes left out. The vectors
/// compared.
fn as_bedrock_protocol_reads(text: &str) -> usize {
    let mut failures = Vec::new();
    let mut n = 0;
    for line in text.lines() {
        let (v, protocol, bytes, h) = vector(line);
        let name = v["name"].as_str().unwrap();
        let what = format!("{} {name}", v["version"]);
        // Where Mojang's layout corrects minecraft-data's, bedrock-protocol
        // writes what the game would not.
        if corrected(protocol, name) {
            assert!(CORRECTED.contains(&name), "{what}");
            continue;
        }
        match definitions(protocol)
            .unwrap()
            .decode(h.id, &bytes[h.len..], Session::default())
        {
            Some(Ok(got)) => {
                let d = compare::differences(&v["fields"], &got);
                if !d.is_empty() {
                    failures.push(format!("{what}: {d:?}"));
                }
                round_trip(protocol, h.id, &bytes[h.len..], &got, &what, &mut failures);
            }
            Some(Err(e)) => failures.push(format!("{what}: {e}")),
            None => failures.push(format!("{what}: unknown")),
        }
        n += 1;
    }
    assert!(
        failures.is_empty(),
        "{} of {n}: {failures:#?}",
        failures.len()
    );
    n
}

/// Encoding the decoded fields gives the body back.
fn round_trip(
    protocol: u32,
    id: u16,
    body: &[u8],
    fields: &Value,
    what: &str,
    failures: &mut Vec<String>,
) {
    let d = definitions(protocol).unwrap();
    match d.encode(id, fields, Session::default()) {
        Some(Ok(b)) if b == body => {}
        // An NBT compound's tags come back in their names' order (the
        // fields are a JSON object, its keys sorted): the same bytes, in
        // another order, that read as the same fields.
        Some(Ok(b))
            if b.len() == body.len()
                && d.decode(id, &b, Session::default())
                    .and_then(Result::ok)
                    .as_ref()
                    == Some(fields) => {}
        Some(Ok(b)) => failures.push(format!(
            "{what}: encodes to {}, not {}",
            crate::wire::cursor::hex(&b),
            crate::wire::cursor::hex(body)
        )),
        Some(Err(e)) => failures.push(format!("{what}: encode: {e}")),
        None => failures.push(format!("{what}: no encoder")),
    }
}

/// The round trip on the other vectors and on every packet of the two
/// bundled real-peer sessions (what bedrock-protocol's peers really sent).
#[test]
fn decode_then_encode_gives_the_bytes_back() {
    let mut failures = Vec::new();
    let mut n = 0;
    let mut check = |protocol: u32, hex: &str, what: String| {
        let bytes = crate::wire::cursor::parse_hex(hex).unwrap();
        let h = Header::parse(&bytes).unwrap();
        let d = definitions(protocol).unwrap();
        match d.decode(h.id, &bytes[h.len..], Session::default()) {
            Some(Ok(got)) => {
                round_trip(protocol, h.id, &bytes[h.len..], &got, &what, &mut failures)
            }
            other => failures.push(format!("{what}: {other:?}")),
        }
        n += 1;
    };
    for text in [
        include_str!("../testdata/packets.jsonl"),
        include_str!("../testdata/start_game.jsonl"),
    ] {
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let what = format!("{} {}", v["version"], v["name"]);
            check(
                v["protocol"].as_u64().unwrap() as u32,
                v["hex"].as_str().unwrap(),
                what,
            );
        }
    }
    for (protocol, text) in [
        (
            2169,
            include_str!("../../../samples/bedrock-login.packets.jsonl"),
        ),
        (
            527,
            include_str!("../../../samples/bedrock-1.19.1.packets.jsonl"),
        ),
    ] {
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let what = format!("{protocol} {}", v["name"]);
            check(protocol, v["hex"].as_str().unwrap(), what);
        }
    }
    assert!(n >= 128 + 55 + 46, "{n}");
    assert!(
        failures.is_empty(),
        "{} of {n}: {failures:#?}",
        failures.len()
    );
}

/// Every packet of every protocol has a zero value that encodes and
/// decodes back (but the few whose definitions name a type nothing
/// implements: MapInfo).
#[test]
fn zero_values_encode_and_decode() {
    let mut bad = Vec::new();
    let mut n = 0;
    for p in protocols() {
        let d = definitions(p).unwrap();
        for id in 0..1024u16 {
            let Some(name) = d.name(id).map(str::to_string) else {
                continue;
            };
            n += 1;
            let z = d.zero(&name).unwrap();
            let r = d.packet(&name, &z, Session::default()).and_then(|bytes| {
                let h = Header::parse(&bytes).ok_or("no header")?;
                assert_eq!(h.id, id);
                d.decode(id, &bytes[h.len..], Session::default())
                    .unwrap()
                    .map_err(|e| e.to_string())
            });
            if let Err(e) = r {
                bad.push(format!("{p} {name}: {e}"));
            }
        }
    }
    assert!(n > 10_000, "{n}");
    assert!(bad.iter().all(|b| b.contains("MapInfo")), "{bad:#?}");
    assert!(bad.len() <= 4, "{bad:#?}");
}

/// A varint128 past `i128::MAX` decodes to a decimal string and encodes
/// back to its bytes (the `schema` fuzz target found it did not).
#[test]
fn the_largest_varint128_round_trips() {
    let types = json!({"root": ["container", [{"name": "v", "type": "varint128"}]]});
    let t = T(types.as_object().cloned().unwrap());
    let mut c = Compiled::default();
    let id = c.named("root", &t);
    for v in [u128::MAX, 1 << 127, (1 << 127) - 1, 1 << 53, (1 << 53) + 1] {
        let mut bytes = Vec::new();
        let mut x = v;
        loop {
            let b = (x & 0x7f) as u8;
            x >>= 7;
            bytes.push(if x == 0 { b } else { b | 0x80 });
            if x == 0 {
                break;
            }
        }
        let got = decode::decode(&c, id, &bytes, Session::default()).unwrap();
        assert_eq!(got["v"].to_string().trim_matches('"'), v.to_string());
        let mut back = Vec::new();
        encode::encode(&c, id, &got, Session::default(), &mut back).unwrap();
        assert_eq!(back, bytes, "{v}");
    }
}

/// A varint is signed 32-bit, as bedrock-protocol reads it (ProtoDef's
/// `varint`): `update_block`'s position.y of -45 is 5 bytes on the wire
/// and -45, not 4294967251; it encodes back to the same bytes.
#[test]
fn a_varint_is_signed() {
    let types = json!({"root": ["container", [{"name": "y", "type": "varint"}]]});
    let t = T(types.as_object().cloned().unwrap());
    let mut c = Compiled::default();
    let id = c.named("root", &t);
    for (bytes, v) in [
        (vec![0xd3, 0xff, 0xff, 0xff, 0x0f], -45i64),
        (vec![0x2d], 45),
        (vec![0xff, 0xff, 0xff, 0xff, 0x07], i64::from(i32::MAX)),
        (vec![0x80, 0x80, 0x80, 0x80, 0x08], i64::from(i32::MIN)),
    ] {
        let got = decode::decode(&c, id, &bytes, Session::default()).unwrap();
        assert_eq!(got["y"].as_i64(), Some(v), "{bytes:x?}");
        let mut back = Vec::new();
        encode::encode(&c, id, &got, Session::default(), &mut back).unwrap();
        assert_eq!(back, bytes, "{v}");
    }
}

/// Bytes as Mojang's published layouts have them (corrections.json), for
/// the packets where minecraft-data's definitions differ: each decodes to
/// its last byte with the fields Mojang names, and encodes back.
#[test]
fn mojangs_layouts_where_minecraft_data_differs() {
    fn varu(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    fn zz(v: i64, out: &mut Vec<u8>) {
        varu(((v << 1) ^ (v >> 63)) as u64, out)
    }
    fn s(v: &str, out: &mut Vec<u8>) {
        varu(v.len() as u64, out);
        out.extend(v.as_bytes());
    }
    fn f(v: f32, out: &mut Vec<u8>) {
        out.extend(v.to_le_bytes());
    }
    let check = |protocol: u32, name: &str, body: &[u8], want: Value| {
        let d = definitions(protocol).unwrap();
        let id = d.id(name).unwrap_or_else(|| panic!("{protocol} {name}"));
        let got = d
            .decode(id, body, Session::default())
            .unwrap()
            .unwrap_or_else(|e| panic!("{protocol} {name}: {e}"));
        for (k, v) in want.as_object().unwrap() {
            assert_eq!(&got[k], v, "{protocol} {name} {k}: {got}");
        }
        let back = d.encode(id, &got, Session::default()).unwrap().unwrap();
        assert_eq!(back, body, "{protocol} {name}: encodes back");
    };
    for protocol in [766, 898, 2169] {
        // AgentActionEvent: the action a little-endian int32.
        let mut b = Vec::new();
        s("r1", &mut b);
        b.extend(5i32.to_le_bytes());
        s("{}", &mut b);
        let want = json!({"request_id": "r1", "action_type": "detect_obstacle"});
        check(protocol, "agent_action", &b, want);
        // LessonProgress: the action a varint (zigzag).
        let mut b = Vec::new();
        zz(-3, &mut b);
        zz(70, &mut b);
        s("lesson", &mut b);
        let want = json!({"action": -3, "score": 70, "identifier": "lesson"});
        check(protocol, "lesson_progress", &b, want);
        // RemoveVolumeEntity: the entity, then its dimension.
        let mut b = Vec::new();
        varu(300, &mut b);
        zz(1, &mut b);
        check(
            protocol,
            "remove_volume_entity",
            &b,
            json!({"entity_id": 300, "dimension": 1}),
        );
        // UpdateEquip: the size a varint; an empty compound.
        let mut b = vec![0, 12];
        zz(-2, &mut b);
        zz(-9, &mut b);
        b.extend([10, 0, 0]);
        check(
            protocol,
            "update_equipment",
            &b,
            json!({"size": -2, "entity_id": -9}),
        );
        // MovePlayer: runtime ids of 64 bits.
        let mut b = Vec::new();
        varu(1 << 40, &mut b);
        (0..6).for_each(|_| f(1.5, &mut b));
        b.extend([3, 1]);
        varu(u64::from(u32::MAX) + 7, &mut b);
        if protocol >= 2168 {
            b.push(0); // no teleport: an optional from 1.26.40
        }
        varu(99, &mut b);
        let want = json!({"runtime_id": 1u64 << 40, "mode": "rotation", "ridden_runtime_id": 4294967302u64, "tick": 99});
        check(protocol, "move_player", &b, want);
    }
    for protocol in [766, 898, 924] {
        // CraftingData: a material reducer's outputs, a list.
        let mut b = vec![0, 0, 0, 1];
        zz(12, &mut b);
        b.push(2);
        for (item, count) in [(5, 2), (-7, 64)] {
            zz(item, &mut b);
            zz(count, &mut b);
        }
        b.push(1);
        let items = json!([{"network_id": 5, "count": 2}, {"network_id": -7, "count": 64}]);
        let want =
            json!({"material_reducers": [{"mix": 12, "items": items}], "clear_recipes": true});
        check(protocol, "crafting_data", &b, want);
        // EducationSettings: the external link settings, one presence bool.
        let mut b = Vec::new();
        s("uri", &mut b);
        s("title", &mut b);
        b.extend([1, 0]);
        s("", &mut b);
        s("", &mut b);
        b.push(0); // no agent capabilities
        b.push(0); // no override URI
        b.push(0); // no quiz
        b.push(1);
        s("https://example.net", &mut b);
        s("Example", &mut b);
        let link = json!({"url": "https://example.net", "display_name": "Example"});
        check(
            protocol,
            "education_settings",
            &b,
            json!({"external_link_settings": link}),
        );
        if protocol < 843 {
            continue;
        }
        // CameraInstruction: a fade with no times and a colour.
        let mut b = vec![0, 0, 1, 0, 1];
        (0..3).for_each(|_| f(0.25, &mut b));
        b.extend([0, 0, 0, 0, 0, 0]);
        let fade = json!({"time": null, "color_rgb": {"x": 0.25, "y": 0.25, "z": 0.25}});
        check(protocol, "camera_instruction", &b, json!({"fade": fade}));
    }
    // CameraAimAssistPresets: a category's block tags, names with priorities.
    let mut b = vec![1];
    s("cat", &mut b);
    b.extend([0, 0, 1]);
    s("minecraft:logs", &mut b);
    b.extend(20i32.to_le_bytes());
    b.extend([0, 0, 0, 0]);
    let tags = json!([{"id": "minecraft:logs", "priority": 20}]);
    let d = definitions(898).unwrap();
    let id = d.id("camera_aim_assist_presets").unwrap();
    let got = d.decode(id, &b, Session::default()).unwrap().unwrap();
    assert_eq!(got["categories"][0]["block_tags"], tags, "{got}");
    // The debug drawer of 1.21.90 to 1.21.130: a dimension, then the
    // shape's own data by its index (here a text).
    let mut b = vec![1];
    varu(77, &mut b);
    b.extend([1, 4, 0, 0, 0, 0, 0]);
    zz(2, &mut b);
    varu(2, &mut b);
    s("hello", &mut b);
    let none = Value::Null;
    let shape = json!({"network_id": 77, "shape_type": "text", "location": none, "scale": none,
        "rotation": none, "time_left": none, "color": none, "dimension": 2, "extra_type": "text",
        "extra": {"text": "hello"}});
    check(
        898,
        "server_script_debug_drawer",
        &b,
        json!({"shapes": [shape]}),
    );
}

/// Every correction finds its field in every protocol it covers whose
/// definitions have its type.
#[test]
fn every_correction_finds_its_field() {
    let s = schema();
    for c in super::corrections::all() {
        let mut found = 0;
        for &(protocol, table) in &s.protocols {
            let Some(&i) = s.tables[table].get(&c.ty) else {
                continue;
            };
            if !c.covers(protocol) {
                continue;
            }
            let mut def: Value = serde_json::from_str(s.defs[i].get()).unwrap();
            assert!(
                super::corrections::apply(c, &mut def),
                "{protocol}: {} {}",
                c.ty,
                c.field
            );
            found += 1;
        }
        assert!(found > 0, "{} {} applies nowhere", c.ty, c.field);
        println!("{} {}: {found} protocols", c.ty, c.field);
    }
}

/// A line of the vector files: the record, its protocol, the packet's
/// bytes and its header.
fn vector(line: &str) -> (Value, u32, Vec<u8>, Header) {
    let v: Value = serde_json::from_str(line).unwrap();
    let protocol = v["protocol"].as_u64().unwrap() as u32;
    let bytes = crate::wire::cursor::parse_hex(v["hex"].as_str().unwrap()).unwrap();
    let h = Header::parse(&bytes).unwrap();
    (v, protocol, bytes, h)
}
