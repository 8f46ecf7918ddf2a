//! A decoded packet as the interpreter builds it: the JSON tree of
//! [`super::decode`] without `serde_json`'s costs. Keys are the
//! definitions' names, borrowed; strings that are valid UTF-8 are borrowed
//! from the packet; buffers stay bytes until written as hex; arrays and
//! objects are vectors in an arena ([`with_arena`]) emptied for the next
//! packet, so that a packet's thousand small objects cost no malloc and
//! free each; an object is a vector of its members, sorted by key once it
//! is complete (the order `serde_json`'s map keeps, so that both write the
//! same text). Written
//! as JSON straight from here ([`Lean::write_json`]), or made into a
//! `serde_json` value for what reads values ([`Lean::into_value`]).

use std::borrow::Cow;

use bumpalo::Bump;
use serde_json::Value;

/// A vector in the arena a packet's value is built in.
pub(crate) type List<'a, T> = bumpalo::collections::Vec<'a, T>;

/// An object's members.
pub(crate) type Members<'a> = List<'a, (&'a str, Lean<'a>)>;

/// Bytes an emptied arena keeps for the next packet, at most: past them
/// it is given back (a packet of megabytes leaves no megabytes behind).
const ARENA_KEPT: usize = 1 << 20;

/// Bytes of a new arena: what most packets' values take, so that they are
/// made without the arena growing (each growth a malloc, and for the
/// larger chunks, fresh pages).
const ARENA_FIRST: usize = 256 << 10;

/// `f` with this thread's arena, which is emptied after it (a new one
/// when this thread's is in use further up the stack).
pub(crate) fn with_arena<R>(f: impl FnOnce(&Bump) -> R) -> R {
    thread_local! {
        static ARENA: std::cell::RefCell<Bump> = std::cell::RefCell::new(Bump::with_capacity(ARENA_FIRST));
    }
    ARENA.with(|cell| match cell.try_borrow_mut() {
        Ok(mut arena) => {
            let r = f(&arena);
            arena.reset();
            if arena.allocated_bytes() > ARENA_KEPT {
                *arena = Bump::with_capacity(ARENA_FIRST);
            }
            r
        }
        Err(_) => f(&Bump::new()),
    })
}

/// 2^53: JSON numbers are exact up to it; integers past it are strings.
const EXACT: u128 = 1 << 53;

/// A decoded value, borrowing from the definitions and the packet (`'a`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Lean<'a> {
    Null,
    Bool(bool),
    /// An integer of at most 2^53 in magnitude (a JSON number).
    Int(i64),
    /// A float: a JSON number when finite, else its text as a string.
    Float(f64),
    /// Text, borrowed (from the packet, the definitions) or made in the
    /// arena: nothing in a value needs dropping.
    Str(&'a str),
    /// A buffer: a string of lowercase hex.
    Hex(&'a [u8]),
    /// A value of the definitions themselves (a mapper's name).
    Json(&'a Value),
    Array(List<'a, Lean<'a>>),
    /// Members sorted by key, each key once ([`sort_members`]).
    Object(Members<'a>),
}

/// An object's members, sorted by key, each key once: its last value (as
/// a map that each member was inserted into in turn keeps it).
pub(crate) fn sort_members(m: &mut Members<'_>) {
    if m.windows(2).all(|w| w[0].0 < w[1].0) {
        return;
    }
    // Stable: equal keys stay in the order they came, the last one kept.
    m.sort_by(|a, b| a.0.cmp(b.0));
    let n = m.len();
    let mut w = 0;
    for r in 0..n {
        if r + 1 < n && m[r].0 == m[r + 1].0 {
            continue;
        }
        m.swap(w, r);
        w += 1;
    }
    m.truncate(w);
}

impl<'a> Lean<'a> {
    /// An integer: a number up to 2^53 in magnitude, a decimal string past
    /// (made in `arena`).
    pub(crate) fn int(v: i128, arena: &'a Bump) -> Lean<'a> {
        if v.unsigned_abs() <= EXACT {
            Lean::Int(v as i64)
        } else {
            Lean::Str(bumpalo::format!(in arena, "{}", v).into_bump_str())
        }
    }

    /// [`Lean::int`] of an unsigned 128-bit integer.
    pub(crate) fn uint(v: u128, arena: &'a Bump) -> Lean<'a> {
        if v <= EXACT {
            Lean::Int(v as i64)
        } else {
            Lean::Str(bumpalo::format!(in arena, "{}", v).into_bump_str())
        }
    }

    /// The integer, as `serde_json::Value::as_i64` reads it.
    pub(crate) fn as_i64(&self) -> Option<i64> {
        match self {
            Lean::Int(i) => Some(*i),
            Lean::Json(v) => v.as_i64(),
            _ => None,
        }
    }

    /// The integer, as `serde_json::Value::as_u64` reads it.
    pub(crate) fn as_u64(&self) -> Option<u64> {
        match self {
            Lean::Int(i) => u64::try_from(*i).ok(),
            Lean::Json(v) => v.as_u64(),
            _ => None,
        }
    }

    /// Member `key` of an object.
    pub(crate) fn get(&self, key: &str) -> Option<&Lean<'a>> {
        match self {
            Lean::Object(m) => m.iter().rev().find(|(k, _)| *k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value as a switch compares it: a string's text, else its JSON.
    pub(crate) fn text(&self) -> Cow<'_, str> {
        match self {
            Lean::Str(s) => Cow::Borrowed(s),
            Lean::Json(Value::String(s)) => Cow::Borrowed(s),
            Lean::Bool(b) => Cow::Borrowed(if *b { "true" } else { "false" }),
            Lean::Null => Cow::Borrowed("null"),
            Lean::Hex(b) => Cow::Owned(crate::wire::cursor::hex(b)),
            v => Cow::Owned(v.json()),
        }
    }

    /// Whether a switch on `a || b` counts it as set: not false, null or 0.
    pub(crate) fn is_set(&self) -> bool {
        !matches!(self, Lean::Bool(false) | Lean::Null | Lean::Int(0))
            && !matches!(self, Lean::Json(v) if v.is_null() || *v == false || *v == 0)
    }

    /// The value as JSON text.
    pub(crate) fn json(&self) -> String {
        let mut out = Vec::new();
        self.write_json(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// The value as compact JSON, appended to `out`: what `serde_json`
    /// writes of [`Lean::into_value`].
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        use crate::wire::json::{write_array, write_hex, write_object, write_str, write_value};
        match self {
            Lean::Null => out.extend_from_slice(b"null"),
            Lean::Bool(true) => out.extend_from_slice(b"true"),
            Lean::Bool(false) => out.extend_from_slice(b"false"),
            Lean::Int(i) => out.extend_from_slice(itoa::Buffer::new().format(*i).as_bytes()),
            Lean::Float(f) => match serde_json::Number::from_f64(*f) {
                // Writing to a Vec cannot fail.
                Some(n) => drop(serde_json::to_writer(&mut *out, &n)),
                None => write_str(out, &f.to_string()),
            },
            Lean::Str(s) => write_str(out, s),
            Lean::Hex(b) => write_hex(out, b),
            Lean::Json(v) => write_value(out, v),
            Lean::Array(a) => write_array(out, a, |out, item| item.write_json(out)),
            Lean::Object(m) => write_object(out, m.iter().map(|(k, v)| (&**k, v)), |out, item| {
                item.write_json(out)
            }),
        }
    }

    /// The same value as `serde_json` holds it.
    pub(crate) fn into_value(self) -> Value {
        match self {
            Lean::Null => Value::Null,
            Lean::Bool(b) => Value::Bool(b),
            Lean::Int(i) => Value::from(i),
            Lean::Float(f) => serde_json::Number::from_f64(f)
                .map_or_else(|| Value::String(f.to_string()), Value::Number),
            Lean::Str(s) => Value::String(s.to_owned()),
            Lean::Hex(b) => Value::String(crate::wire::cursor::hex(b)),
            Lean::Json(v) => v.clone(),
            Lean::Array(a) => Value::Array(a.into_iter().map(Lean::into_value).collect()),
            Lean::Object(m) => Value::Object(
                m.into_iter()
                    .map(|(k, v)| (k.to_owned(), v.into_value()))
                    .collect(),
            ),
        }
    }

    /// [`Lean::into_value`] of a copy.
    pub(crate) fn to_value(&self) -> Value {
        self.clone().into_value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn written(l: &Lean<'_>) -> String {
        let mut out = Vec::new();
        l.write_json(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn written_as_serde_json_writes_the_value() {
        let mapped = json!("mapped");
        let arena = Bump::new();
        let mut members = bumpalo::vec![in &arena;
            ("z", Lean::Int(-3)),
            ("a\"b", Lean::Str("x\ny")),
            ("m", Lean::Float(0.1)),
            ("n", Lean::Float(f64::NAN)),
            ("h", Lean::Hex(&[0, 0xab])),
            ("j", Lean::Json(&mapped)),
            ("e", Lean::Float(1e300)),
            ("big", Lean::int(1 << 60, &arena)),
            ("u", Lean::uint(u128::MAX, &arena)),
            (
                "arr",
                Lean::Array(bumpalo::vec![in &arena; Lean::Null, Lean::Bool(true), Lean::Float(-0.0)]),
            ),
            ("z", Lean::Int(7)),
        ];
        sort_members(&mut members);
        let l = Lean::Object(members);
        let v = l.to_value();
        assert_eq!(v["z"], 7, "the last of a key is kept");
        assert_eq!(v["big"], (1u64 << 60).to_string());
        assert_eq!(written(&l), serde_json::to_string(&v).unwrap());
    }

    #[test]
    fn the_arena_is_given_back_past_its_bound_and_nesting_gets_its_own() {
        // A packet of megabytes: the arena after it keeps no more than
        // the bound.
        let before = with_arena(|a| a.allocated_bytes());
        with_arena(|a| a.alloc_slice_fill_copy(4 << 20, 0u8).len());
        let after = with_arena(|a| a.allocated_bytes());
        assert!(after <= ARENA_KEPT.max(before), "{before} {after}");
        // Used further up the stack: a new one, not a panic.
        let (outer, inner) = with_arena(|outer| {
            let x: &u64 = outer.alloc(7);
            let inner = with_arena(|inner| std::ptr::eq(inner, outer));
            (*x, inner)
        });
        assert_eq!((outer, inner), (7, false));
    }

    #[test]
    fn members_sorted_keep_the_last_of_each_key() {
        let arena = Bump::new();
        let mut m = List::from_iter_in(
            ["b", "a", "b", "c", "a", "b"]
                .iter()
                .enumerate()
                .map(|(i, k)| (*k, Lean::Int(i as i64))),
            &arena,
        );
        sort_members(&mut m);
        let got: Vec<(&str, i64)> = m.iter().map(|(k, v)| (&**k, v.as_i64().unwrap())).collect();
        assert_eq!(got, [("a", 4), ("b", 5), ("c", 3)]);
    }

    #[test]
    fn switch_text_and_truth_as_of_the_value() {
        let one = json!(1);
        for (l, text, set) in [
            (Lean::Str("move"), "move", true),
            (Lean::Int(0), "0", false),
            (Lean::Int(-2), "-2", true),
            (Lean::Bool(false), "false", false),
            (Lean::Null, "null", false),
            (Lean::Float(1.5), "1.5", true),
            (Lean::Json(&one), "1", true),
        ] {
            let v = l.to_value();
            let want = match &v {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            };
            assert_eq!((l.text(), want.as_str()), (Cow::Borrowed(text), text));
            let value_set = !matches!(v, Value::Bool(false) | Value::Null) && v != 0;
            assert_eq!((l.is_set(), value_set), (set, set), "{l:?}");
        }
    }
}
