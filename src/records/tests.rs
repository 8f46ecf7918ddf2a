use serde::Serialize;

use super::flow::{FlowRecord, Rtt};
use super::game::GameRecord;
use super::handshake::{HandshakeRecord, StepOf};
use super::message::MessageRecord;
use super::packet::{FrameOf, PacketRecord};
use super::value::int;
use super::*;
use crate::mirror::DirStats;

/// A record of every shape a key can take, to hold the writer to serde.
struct Sample {
    n: u64,
    x: f64,
    s: String,
    g: Option<u64>,
    b: Vec<u8>,
    list: Vec<u16>,
    inner: Option<Inner>,
    flag: bool,
    none: Option<u8>,
    gone: Option<u8>,
}

struct Inner {
    k: i64,
    items: Vec<Inner2>,
}

struct Inner2 {
    v: &'static str,
}

type K = Key<Sample>;

impl Described for Sample {
    type Of<'a> = Sample;
    const KEYS: &'static [K] = &[
        K::new("n", Ty::Int, "n", |r, f| int(r.n, f)),
        K::new("x", Ty::Float, "x", |r, f| f(Value::Float(r.x))),
        K::new("s", Ty::Str, "s", |r, f| f(Value::Str(&r.s))),
        K::new("g", Ty::Guid, "g", |r, f| {
            r.g.is_some_and(|g| f(Value::Guid(g)))
        })
        .or_null(),
        K::new("b", Ty::Bytes, "b", |r, f| f(Value::Bytes(&r.b))),
        K::new("list", Ty::Int, "list", |r, f| {
            r.list.iter().any(|&v| int(v, f))
        })
        .many(),
        K::new("inner", Ty::Object, "inner", |r, f| {
            r.inner.as_ref().is_some_and(|i| object::<Inner>(i, f))
        })
        .nested::<Inner>()
        .or_null(),
        K::new("flag", Ty::Bool, "flag", |r, f| f(Value::Bool(r.flag))),
        K::new("none", Ty::Int, "none", |r, f| {
            r.none.is_some_and(|v| int(v, f))
        })
        .or_null(),
        K::new("gone", Ty::Int, "gone", |r, f| {
            r.gone.is_some_and(|v| int(v, f))
        })
        .skip(),
    ];
}

type IK = Key<Inner>;

impl Described for Inner {
    type Of<'a> = Inner;
    const KEYS: &'static [IK] = &[
        IK::new("k", Ty::Int, "k", |r, f| int(r.k, f)),
        IK::new("items", Ty::Object, "items", |r, f| {
            r.items.iter().any(|i| object::<Inner2>(i, f))
        })
        .many()
        .nested::<Inner2>(),
    ];
}

impl Described for Inner2 {
    type Of<'a> = Inner2;
    const KEYS: &'static [Key<Self>] = &[Key::new("v", Ty::Str, "v", |r, f| f(Value::Str(r.v)))];
}

#[derive(Serialize)]
struct SampleSerde {
    n: u64,
    x: f64,
    s: String,
    g: Option<String>,
    b: String,
    list: Vec<u16>,
    inner: Option<InnerSerde>,
    flag: bool,
    none: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gone: Option<u8>,
}

#[derive(Serialize)]
struct InnerSerde {
    k: i64,
    items: Vec<Inner2Serde>,
}

#[derive(Serialize)]
struct Inner2Serde {
    v: &'static str,
}

#[test]
fn the_writer_writes_what_serde_writes() {
    let floats = [
        0.0,
        -0.0,
        1.0,
        0.000202,
        1_795_322_000.813_314,
        1e21,
        1.5e-7,
        f64::MAX,
        f64::NAN,
    ];
    for (case, x) in floats.into_iter().enumerate() {
        let odd = case % 2 == 1;
        let r = Sample {
            n: if odd { u64::MAX } else { case as u64 },
            x,
            s: ["plain", "a \"quoted\" \\ line\n\t\u{1}é€"][case % 2].into(),
            g: odd.then_some(0x0006_60d5_fa1d_57ec),
            b: (0..case as u8 * 7).collect(),
            list: (0..case as u16).collect(),
            inner: (case % 3 != 0).then(|| Inner {
                k: -(case as i64),
                items: ["x", "y\"z"][..case % 3]
                    .iter()
                    .map(|v| Inner2 { v })
                    .collect(),
            }),
            flag: odd,
            none: odd.then_some(7),
            gone: (case % 4 == 1).then_some(9),
        };
        let serde = SampleSerde {
            n: r.n,
            x: r.x,
            s: r.s.clone(),
            g: r.g.map(|g| format!("{g:#018x}")),
            b: crate::wire::cursor::hex(&r.b),
            list: r.list.clone(),
            inner: r.inner.as_ref().map(|i| InnerSerde {
                k: i.k,
                items: i.items.iter().map(|i| Inner2Serde { v: i.v }).collect(),
            }),
            flag: r.flag,
            none: r.none,
            gone: r.gone,
        };
        let mut ours = Vec::new();
        write_line(&With::<Sample>(&r), &mut ours);
        let mut theirs = serde_json::to_vec(&serde).unwrap();
        theirs.push(b'\n');
        assert_eq!(
            String::from_utf8(ours).unwrap(),
            String::from_utf8(theirs).unwrap(),
            "case {case}"
        );
    }
}

#[test]
fn a_path_reads_its_key_alone_through_nested_objects_and_arrays() {
    let r = Sample {
        n: 1,
        x: 2.5,
        s: "s".into(),
        g: None,
        b: vec![],
        list: vec![3, 4],
        inner: Some(Inner {
            k: 5,
            items: vec![Inner2 { v: "a" }, Inner2 { v: "b" }],
        }),
        flag: false,
        none: None,
        gone: None,
    };
    let values = |path: &str| {
        let mut seen = Vec::new();
        visit_path::<Sample>(&r, path, &mut |v| {
            seen.push(match v {
                Value::Int(i) => i.to_string(),
                Value::Str(s) => s.to_string(),
                Value::Object(o) => o.to_json(),
                other => format!("{other:?}"),
            });
            false
        });
        seen.join(",")
    };
    assert_eq!(values("list"), "3,4");
    assert_eq!(values("inner.k"), "5");
    assert_eq!(values("inner.items.v"), "a,b");
    assert_eq!(values("inner.items"), r#"{"v":"a"},{"v":"b"}"#);
    assert_eq!(values("g"), "");
    assert_eq!(values("gone"), "");
    assert_eq!(values("nope"), "");
    assert_eq!(values("n.deeper"), "");
    // The walk stops when the callback says so.
    let mut calls = 0;
    assert!(visit_path::<Sample>(&r, "list", &mut |_| {
        calls += 1;
        true
    }));
    assert_eq!(calls, 1);
}

#[test]
fn key_names_need_no_escaping_and_paths_are_unique() {
    for (record, keys) in [
        ("flow", paths::<FlowRecord<'static>>()),
        ("game", paths::<GameRecord<'static>>()),
        ("handshake", paths::<HandshakeRecord<'static>>()),
        ("message", paths::<MessageRecord<'static>>()),
        ("packet", paths::<PacketRecord<'static>>()),
    ] {
        for (i, (name, _)) in keys.iter().enumerate() {
            assert!(
                name.split('.').all(|s| !s.is_empty()
                    && s.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')),
                "{record}: {name}"
            );
            assert!(
                keys[..i].iter().all(|(n, _)| n != name),
                "{record}: {name} twice"
            );
        }
    }
}

/// The JSON type docs/json.md gives a key.
fn json_type(k: &KeyDoc) -> String {
    let (one, many) = match k.ty {
        Ty::Int => ("integer", "integers"),
        Ty::Float => ("float", "floats"),
        Ty::Str | Ty::Guid | Ty::Ip => ("string", "strings"),
        Ty::Bytes => ("string (hex)", "strings (hex)"),
        Ty::Bool => ("bool", "bools"),
        Ty::Object => ("object", "objects"),
        Ty::Ranges => ("array of `[min, max]`", "`[min, max]`"),
        Ty::Any => ("any", "any"),
    };
    match (k.many, k.absent) {
        (true, _) => format!("array of {many}"),
        (false, Absent::Null) => format!("{one} or null"),
        (false, _) => one.to_string(),
    }
}

/// A row of a key table: its keys, its JSON type (none in a table without
/// that column) and its meaning.
struct Row {
    keys: Vec<String>,
    ty: Option<String>,
    meaning: String,
}

/// The key tables (`| key | ...`) of docs/json.md's section on `record`.
fn tables(record: &str) -> Vec<Vec<Row>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/json.md");
    let text = std::fs::read_to_string(path).expect("docs/json.md");
    // A heading of its own ("## `packet` of NetherNet"), or the record's.
    let heading = match record.strip_prefix("## ") {
        Some(_) => record.to_string(),
        None => format!("## `{record}`"),
    };
    let section: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != heading)
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < section.len() {
        let cells = |l: &str| -> Vec<String> {
            l.trim()
                .trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect()
        };
        if !section[i].starts_with("| key |") {
            i += 1;
            continue;
        }
        let typed = cells(section[i]).get(1).is_some_and(|c| c == "JSON type");
        let mut rows = Vec::new();
        i += 2;
        while i < section.len() && section[i].starts_with('|') {
            let c = cells(section[i]);
            rows.push(Row {
                keys: c[0]
                    .split(", ")
                    .map(|k| k.trim_matches('`').to_string())
                    .collect(),
                ty: typed.then(|| c[1].clone()),
                meaning: c[c.len() - 1].clone(),
            });
            i += 1;
        }
        out.push(rows);
    }
    out
}

/// `rows` list exactly `keys`, in order, with their types; an object a
/// key nests has a table of its own in `rest`, or names its keys in the
/// row's meaning.
fn check(record: &str, rows: &[Row], keys: Vec<KeyDoc>, rest: &mut dyn Iterator<Item = &Vec<Row>>) {
    // Keys only filters read are not in JSON, nor in its tables.
    let keys: Vec<KeyDoc> = keys.into_iter().filter(|k| k.in_json).collect();
    let listed: Vec<(&str, &Row)> = rows
        .iter()
        .flat_map(|r| r.keys.iter().map(move |k| (k.as_str(), r)))
        .collect();
    let names: Vec<&str> = listed.iter().map(|(k, _)| *k).collect();
    let described: Vec<&str> = keys.iter().map(|k| k.name).collect();
    assert_eq!(names, described, "docs/json.md's table of {record}");
    for ((name, row), k) in listed.iter().zip(&keys) {
        match &row.ty {
            Some(t) => assert_eq!(*t, json_type(k), "docs/json.md: {record} key {name}"),
            None => assert!(
                k.ty == Ty::Int && k.absent == Absent::Never,
                "{record} key {name}: the table says all are integers"
            ),
        }
    }
    for (name, row) in &listed {
        let Some(k) = keys.iter().find(|k| k.name == *name) else {
            continue;
        };
        let Some(nested) = k.nested.map(|n| n()) else {
            continue;
        };
        // Both directions share one table.
        if *name == "s2c" {
            continue;
        }
        let inline = |keys: &[KeyDoc]| {
            keys.iter().all(|n| {
                row.meaning.contains(&format!("`{}`", n.name))
                    || row.meaning.contains(&format!("\"{}\"", n.name))
            })
        };
        let deeper: Vec<KeyDoc> = nested
            .iter()
            .filter_map(|n| n.nested.map(|m| m()))
            .flatten()
            .collect();
        if inline(&nested) && inline(&deeper) {
            continue;
        }
        let table = rest
            .next()
            .unwrap_or_else(|| panic!("docs/json.md: no table for {record}'s {name}"));
        check(&format!("{record}.{name}"), table, nested, rest);
    }
}

#[test]
fn docs_json_md_lists_the_described_keys() {
    for (record, keys) in [
        ("flow", docs::<FlowRecord<'static>>()),
        ("game", docs::<GameRecord<'static>>()),
        ("handshake", docs::<HandshakeRecord<'static>>()),
        ("message", docs::<MessageRecord<'static>>()),
        ("packet", docs::<PacketRecord<'static>>()),
        (
            "## `packet` of NetherNet",
            docs::<super::nethernet::NethernetRecord<'static>>(),
        ),
        (
            "## `flow` of NetherNet",
            docs::<super::nethernet::NethernetFlowRecord<'static>>(),
        ),
    ] {
        let all = tables(record);
        let mut rest = all.iter().skip(1);
        let first = all.first().expect("a key table");
        check(record, first, keys, &mut rest);
    }
    // The nested objects' own descriptions are the ones the tables match.
    assert_eq!(docs::<DirStats>().len(), 14);
    assert_eq!(docs::<StepOf<'static>>().len(), 5);
    assert_eq!(docs::<Rtt>().len(), 4);
    assert_eq!(docs::<crate::dissect::Anomaly>().len(), 2);
    assert_eq!(docs::<FrameOf<'static>>().len(), 9);
    assert_eq!(docs::<crate::wire::Split>().len(), 3);
}

#[test]
fn every_path_resolves_to_key_indices_that_read_it() {
    fn each<D: Described>(record: &str) {
        for (name, _) in paths::<D>() {
            let p = key_path::<D>(&name).unwrap_or_else(|| panic!("{record}: {name}"));
            assert_eq!(
                p.indices().len(),
                name.split('.').count(),
                "{record}: {name}"
            );
        }
    }
    each::<FlowRecord<'static>>("flow");
    each::<GameRecord<'static>>("game");
    each::<HandshakeRecord<'static>>("handshake");
    each::<MessageRecord<'static>>("message");
    each::<PacketRecord<'static>>("packet");
    each::<Sample>("sample");
    // The same values by name and by indices.
    let r = Sample {
        n: 1,
        x: 2.5,
        s: "s".into(),
        g: None,
        b: vec![],
        list: vec![3, 4],
        inner: Some(Inner {
            k: 5,
            items: vec![Inner2 { v: "a" }, Inner2 { v: "b" }],
        }),
        flag: false,
        none: None,
        gone: None,
    };
    for path in [
        "n",
        "list",
        "inner",
        "inner.k",
        "inner.items",
        "inner.items.v",
        "gone",
    ] {
        let text = |by_index: bool| {
            let mut seen = Vec::new();
            let mut f = |v: Value<'_>| {
                seen.push(format!("{v:?}"));
                false
            };
            if by_index {
                let p = key_path::<Sample>(path).unwrap();
                visit_index::<Sample>(&r, p.indices(), &mut f);
            } else {
                visit_path::<Sample>(&r, path, &mut f);
            }
            seen.join(",")
        };
        assert_eq!(text(true), text(false), "{path}");
    }
    assert!(key_path::<Sample>("inner.nope").is_none());
    assert!(key_path::<Sample>("n.deeper").is_none());
    assert!(!visit_index::<Sample>(&r, &[200], &mut |_| true));
}

#[test]
fn addresses_as_display_writes_them() {
    use std::net::SocketAddr;
    let text = |a: SocketAddr| {
        let mut seen = String::new();
        value::visit_addr(a, &mut |v| {
            if let Value::Str(s) = v {
                seen = s.to_string();
            }
            true
        });
        seen
    };
    for a in [
        "0.0.0.0:0",
        "127.0.0.1:19132",
        "255.255.255.255:65535",
        "10.0.9.100:1",
        "[::1]:19132",
        "[fe80::1%2]:7",
    ] {
        let a: SocketAddr = a.parse().unwrap();
        assert_eq!(text(a), a.to_string());
    }
    for n in (0..=65535u32).step_by(7) {
        let a = SocketAddr::from(([n as u8, (n >> 8) as u8, 0, 9], n as u16));
        assert_eq!(text(a), a.to_string());
    }
}
