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

#[test]
fn counts_past_the_end_and_nesting_are_bounded() {
    let types = json!({
        "root": ["array", {"countType": "varint", "type": "u8"}],
        "deep": ["container", [{"name": "d", "type": ["option", "deep"]}]],
        "enc": ["container", [{"name": "e", "type": ["encapsulated", {"lengthType": "varint", "type": "li32"}]},
                              {"name": "after", "type": "u8"}]]
    });
    let e = run(types.clone(), "root", "ffffffff0f00", Session::default()).unwrap_err();
    assert!(e.what.contains("more than the 1 bytes left"), "{e}");
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
        let v: Value = serde_json::from_str(line).unwrap();
        let protocol = v["protocol"].as_u64().unwrap() as u32;
        let bytes = crate::wire::cursor::parse_hex(v["hex"].as_str().unwrap()).unwrap();
        let h = Header::parse(&bytes).unwrap();
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
        let v: Value = serde_json::from_str(line).unwrap();
        let protocol = v["protocol"].as_u64().unwrap() as u32;
        let bytes = crate::wire::cursor::parse_hex(v["hex"].as_str().unwrap()).unwrap();
        let h = Header::parse(&bytes).unwrap();
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

/// Every packet type of 1.16.201, 1.21.50 and 1.26.45 with zero-valued
/// parameters, serialised by bedrock-protocol and read back by its own
/// deserializer (testdata/every_packet.jsonl, scripts/bedrock-vectors.js):
/// ours decodes each to its last byte with the same fields.
#[test]
fn every_packet_type_as_bedrock_protocol_reads_it() {
    let text = include_str!("../testdata/every_packet.jsonl");
    let mut failures = Vec::new();
    let mut n = 0;
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let protocol = v["protocol"].as_u64().unwrap() as u32;
        let bytes = crate::wire::cursor::parse_hex(v["hex"].as_str().unwrap()).unwrap();
        let h = Header::parse(&bytes).unwrap();
        let what = format!("{} {}", v["version"], v["name"]);
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
    assert!(n >= 600, "{n}");
    assert!(
        failures.is_empty(),
        "{} of {n}: {failures:#?}",
        failures.len()
    );
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
