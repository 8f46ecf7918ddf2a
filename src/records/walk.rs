//! A record's leaves, for a table: each value its JSON holds that is not
//! an object, with the dotted path of keys that leads to it (`c2s.lost`,
//! `fields.status`), in JSON order. Generated from the description, by the
//! rules `super::write_object` follows (a key left out, `null`, an
//! array, a nested object), so that a table holds what the NDJSON line
//! shows: an array is one leaf, its JSON text as the line has it; an
//! object's keys are leaves under its name, and an empty object is a
//! `null` leaf of its own name. Decoded JSON (`Obj::Json`, a game packet's
//! `fields`) is walked the same way.
//!
//! [`RecordSink`] is where whole records go instead of their NDJSON text:
//! `export`'s Parquet tables (`output::parquet::TableWriter`).

use std::cell::Cell;
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex};

use super::value::{motd_object, write_value};
use super::{Absent, Described, Keyed, Obj, Value};
use crate::wire::Motd;

/// One leaf of a record, as `leaves` hands it out.
#[derive(Debug, Clone, Copy)]
pub enum Leaf<'a> {
    /// `null`: a key without a value, or an empty object.
    Null,
    /// A value that is not an object or an array.
    Value(Value<'a>),
    /// A value kept whole as its JSON text: an array (or an object nested
    /// deeper than `MAX_DEPTH`).
    Json(&'a [u8]),
}

/// Objects nested deeper than this are one [`Leaf::Json`] (the records
/// nest a few levels; decoded game fields, a few more).
pub(crate) const MAX_DEPTH: usize = 64;

thread_local! {
    /// The JSON text of an array being handed out, kept for the next one
    /// (a record's arrays one after another, never two at once).
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// `used` with an empty buffer, the one the last call left (a record's
/// arrays come one after another: no allocation each), kept unless large.
fn scratch(used: impl FnOnce(&mut Vec<u8>)) {
    let mut buf = SCRATCH.take();
    buf.clear();
    used(&mut buf);
    if buf.capacity() <= 1 << 20 {
        SCRATCH.set(buf);
    }
}

/// Where a walk's leaves go: each with its dotted path.
pub type Leaves<'f> = dyn FnMut(&str, Leaf<'_>) + 'f;

/// Each leaf of `r`, described by `D`, handed to `f` in JSON order with
/// its path (`path`, then `.` and the key's name, when `path` is not
/// empty); returns whether there was one (whether the object is not
/// `{}`). `path` is as it was on return.
pub(crate) fn leaves<D: Described>(r: &D::Of<'_>, path: &mut String, f: &mut Leaves<'_>) -> bool {
    let base = path.len();
    let mut any = false;
    for k in D::KEYS {
        if !k.in_json || k.present.is_some_and(|present| !present(r)) {
            continue;
        }
        path.truncate(base);
        if base > 0 {
            path.push('.');
        }
        path.push_str(k.name);
        if k.many {
            scratch(|array| {
                array.push(b'[');
                (k.get)(r, &mut |v| {
                    if array.len() > 1 {
                        array.push(b',');
                    }
                    write_value(&v, array);
                    false
                });
                array.push(b']');
                f(path, Leaf::Json(array));
            });
            any = true;
            continue;
        }
        let mut wrote = false;
        (k.get)(r, &mut |v| {
            value(v, path, f);
            wrote = true;
            true
        });
        if !wrote && k.absent != Absent::Skip {
            f(path, Leaf::Null);
            wrote = true;
        }
        any |= wrote;
    }
    path.truncate(base);
    any
}

/// `v`, the value at `path`: a leaf, or the leaves of the object it is.
fn value(v: Value<'_>, path: &mut String, f: &mut Leaves<'_>) {
    match v {
        Value::Object(Obj::Keyed(o)) => {
            if !o.leaves(path, f) {
                f(path, Leaf::Null);
            }
        }
        Value::Object(Obj::Json(j)) => json(j, path, f, 0),
        Value::Object(Obj::Raw(j)) => {
            let j = serde_json::from_slice(j).unwrap_or_default();
            json(&j, path, f, 0);
        }
        Value::Object(Obj::Motd(p)) => {
            let m = Motd::parse(p).map(motd_object).unwrap_or_default();
            json(&serde_json::Value::Object(m), path, f, 0);
        }
        Value::Range(..) => scratch(|text| {
            write_value(&v, text);
            f(path, Leaf::Json(text));
        }),
        v => f(path, Leaf::Value(v)),
    }
}

/// The leaves of decoded JSON `j` at `path`.
fn json(j: &serde_json::Value, path: &mut String, f: &mut Leaves<'_>, depth: usize) {
    use serde_json::Value as J;
    match j {
        J::Object(m) if !m.is_empty() && depth < MAX_DEPTH => {
            json_members(m, path, f, depth);
        }
        J::Object(m) if m.is_empty() => f(path, Leaf::Null),
        J::Null => f(path, Leaf::Null),
        J::Bool(b) => f(path, Leaf::Value(Value::Bool(*b))),
        J::Number(n) => f(path, number(n)),
        J::String(s) => f(path, Leaf::Value(Value::Str(s))),
        J::Array(_) | J::Object(_) => scratch(|text| {
            write_value(&Value::Object(Obj::Json(j)), text);
            f(path, Leaf::Json(text));
        }),
    }
}

/// The members of a JSON object, each a leaf or leaves under `path`;
/// whether there was one.
pub(crate) fn json_members(
    m: &serde_json::Map<String, serde_json::Value>,
    path: &mut String,
    f: &mut Leaves<'_>,
    depth: usize,
) -> bool {
    let base = path.len();
    for (k, x) in m {
        path.truncate(base);
        if base > 0 {
            path.push('.');
        }
        path.push_str(k);
        json(x, path, f, depth + 1);
    }
    path.truncate(base);
    !m.is_empty()
}

/// A JSON number as a leaf: an integer when it is one, else a float.
fn number(n: &serde_json::Number) -> Leaf<'static> {
    match (n.as_i64(), n.as_u64(), n.as_f64()) {
        (Some(i), ..) => Leaf::Value(Value::Int(i.into())),
        (_, Some(u), _) => Leaf::Value(Value::Int(u.into())),
        (.., Some(x)) => Leaf::Value(Value::Float(x)),
        _ => Leaf::Null,
    }
}

/// Where records go as records, not as NDJSON text (`export`'s tables).
pub trait RecordSink: Send {
    /// One record: a row.
    fn record(&mut self, r: &dyn Keyed) -> io::Result<()>;
}

/// A [`RecordSink`] the printers of a run share (a printer is made per
/// worker thread; `export` runs on one).
#[derive(Clone)]
pub struct SharedSink(pub Arc<Mutex<dyn RecordSink>>);

impl SharedSink {
    pub(crate) fn record(&self, r: &dyn Keyed) -> io::Result<()> {
        let mut sink = self
            .0
            .lock()
            .map_err(|_| io::Error::other("a record sink that failed"))?;
        sink.record(r)
    }
}

impl fmt::Debug for SharedSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SharedSink")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{write_line, Key, Ty};
    use serde_json::{json, Map, Value as J};

    /// What a table's row holds of a line: its leaves by dotted path (an
    /// array as its JSON, an empty object as null), in the line's order.
    fn flatten(prefix: &str, v: &J, out: &mut Vec<(String, J)>) {
        match v {
            J::Object(m) if !m.is_empty() => {
                for (k, x) in m {
                    let name = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    flatten(&name, x, out);
                }
            }
            J::Object(_) => out.push((prefix.into(), J::Null)),
            J::Array(_) => out.push((prefix.into(), J::String(v.to_string()))),
            x => out.push((prefix.into(), x.clone())),
        }
    }

    /// A leaf as JSON: its value, an array as its text.
    fn leaf_json(l: Leaf<'_>) -> J {
        match l {
            Leaf::Null => J::Null,
            Leaf::Json(t) => J::String(String::from_utf8(t.to_vec()).unwrap()),
            Leaf::Value(v) => {
                let mut t = Vec::new();
                write_value(&v, &mut t);
                serde_json::from_slice(&t).unwrap()
            }
        }
    }

    fn walked(r: &dyn Keyed) -> Vec<(String, J)> {
        let mut got = Vec::new();
        let mut path = String::new();
        r.leaves(&mut path, &mut |p, l| {
            got.push((p.to_string(), leaf_json(l)))
        });
        assert!(path.is_empty());
        got
    }

    /// A record of every rule: skipped, null, an array (and one left
    /// out), a nested object (and an empty one), decoded JSON, a range.
    struct Sample {
        name: Option<&'static str>,
        list: Vec<u32>,
        listed: bool,
        inner: Option<u8>,
        fields: J,
    }

    struct Inner;

    impl Described for Inner {
        type Of<'a> = Option<u8>;
        const KEYS: &'static [Key<Inner>] = &[Key::<Inner>::new("n", Ty::Int, "n", |n, f| {
            n.is_some_and(|n| f(Value::Int(n.into())))
        })
        .skip()];
    }

    impl Described for Sample {
        type Of<'a> = Sample;
        const KEYS: &'static [Key<Sample>] = &[
            Key::<Sample>::new("type", Ty::Str, "t", |_, f| f(Value::Str("sample"))),
            Key::<Sample>::new("skipped", Ty::Str, "s", |r, f| {
                r.name.is_some_and(|n| f(Value::Str(n)))
            })
            .skip(),
            Key::<Sample>::new("name", Ty::Str, "n", |r, f| {
                r.name.is_some_and(|n| f(Value::Str(n)))
            })
            .or_null(),
            Key::<Sample>::new("list", Ty::Int, "l", |r, f| {
                r.list.iter().any(|&x| f(Value::Int(x.into())))
            })
            .many(),
            Key::<Sample>::new("maybe", Ty::Int, "m", |r, f| {
                r.list.iter().any(|&x| f(Value::Int(x.into())))
            })
            .present(|r| r.listed),
            Key::<Sample>::new("inner", Ty::Object, "i", |r, f| {
                super::super::object::<Inner>(&r.inner, f)
            })
            .nested::<Inner>(),
            Key::<Sample>::new("fields", Ty::Object, "f", |r, f| {
                f(Value::Object(Obj::Json(&r.fields)))
            }),
            Key::<Sample>::new("range", Ty::Ranges, "r", |_, f| f(Value::Range(3, 5))),
            Key::<Sample>::new("guid", Ty::Guid, "g", |_, f| f(Value::Guid(0xab))),
            Key::<Sample>::new("ts", Ty::Float, "ts", |_, f| f(Value::Float(1.5))),
        ];
    }

    #[test]
    fn leaves_are_the_lines_leaves_in_its_order() {
        let deep = (0..MAX_DEPTH + 3).fold(json!(1), |v, _| json!({ "d": v }));
        for (name, list, listed, inner, fields) in [
            (
                Some("a\"b"),
                vec![],
                true,
                Some(7),
                json!({"s": "x", "n": [1, {"a": 2}], "e": {}, "z": {"y": -3, "big": u64::MAX, "f": 0.25}}),
            ),
            (None, vec![1, 2], false, None, json!({})),
            (None, vec![4], true, Some(0), json!(null)),
            (Some(""), vec![], false, None, deep),
        ] {
            let r = Sample {
                name,
                list,
                listed,
                inner,
                fields,
            };
            let with = super::super::With::<Sample>(&r);
            let mut line = Vec::new();
            write_line(&with, &mut line);
            // The line's keys in its order (serde_json sorts a map's).
            let text = String::from_utf8(line.clone()).unwrap();
            let parsed: Map<String, J> = serde_json::from_slice(&line).unwrap();
            let mut want = Vec::new();
            flatten("", &J::Object(parsed), &mut want);
            let mut got = Vec::new();
            for (p, v) in walked(&with) {
                match v {
                    // Deeper than MAX_DEPTH: the rest as its JSON text.
                    J::String(t) if p.ends_with(".d") && t.starts_with('{') => {
                        flatten(&p, &serde_json::from_str(&t).unwrap(), &mut got)
                    }
                    v => got.push((p, v)),
                }
            }
            // The keys in the line's order.
            let mut top: Vec<&str> = got
                .iter()
                .map(|(p, _)| p.split('.').next().unwrap())
                .collect();
            top.dedup();
            let at: Vec<usize> = top
                .iter()
                .map(|k| text.find(&format!("\"{k}\":")).unwrap())
                .collect();
            assert!(at.windows(2).all(|w| w[0] < w[1]), "{top:?} in {text}");
            got.sort_by(|a, b| a.0.cmp(&b.0));
            want.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn an_empty_nested_object_is_a_null_leaf_of_its_name() {
        let r = Sample {
            name: None,
            list: vec![],
            listed: false,
            inner: None,
            fields: json!({"a": {}}),
        };
        let got = walked(&super::super::With::<Sample>(&r));
        let names: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            names,
            ["type", "name", "list", "inner", "fields.a", "range", "guid", "ts"]
        );
        assert_eq!(got[3].1, J::Null);
        assert_eq!(got[5].1, json!("[3,5]"));
        assert_eq!(got[6].1, json!("0x00000000000000ab"));
    }
}
