//! Each record type described once: its keys in JSON order, each with its
//! name, its type, its doc line and how to read it. From that one
//! description come the record's NDJSON writer ([`write_line`]), what `-Y`
//! and `-e` read of it (`visit_index`, only the keys a filter names), the
//! names `raknet-dissect fields` lists (`display::fields::FIELDS`, through
//! `paths`), the columns of `export`'s tables (`walk::leaves`, each
//! leaf with its dotted path), and the check of docs/json.md's key tables
//! (`tests.rs`).
//!
//! To add a key to a record type: one `K::new(name, type, doc, get)` entry
//! in its `KEYS`, at its place in the JSON order (`.or_null()`, `.skip()`,
//! `.many()`, `.present(..)`, `.nested::<N>()` say what JSON shows of it),
//! and a row in its table in docs/json.md, which a test asks for; the
//! writer, the filters and `raknet-dissect fields` take it from there (a
//! record written through [`crate::write_keys!`], `message`, also needs
//! the next index in that call, which fails to compile without it). To add
//! a record type: a struct of what its record is made from, `impl
//! Described` for it (at `'static`, as [`flow::FlowRecord`], when it
//! borrows) listing its keys, `impl Keyed` for it (three lines), then its
//! `RecordType` in `display::fields` (a bit, and an arm of `key_of` and
//! `paths_of`) and its docs/json.md section in `tests.rs`. A key whose
//! values come from a closed set says so (`.closed(..)`: filters check
//! their values against it); one that only filters read, `.filter_only()`.
//!
//! A filter or an export names its keys once, when it is compiled: each
//! name is resolved to a `KeyPath` (`key_path`), the indices of its
//! keys, and each record is read at those indices (`visit_index`).
//!
//! Described: `packet`, `message`, `flow`, `handshake` and `game` (with
//! `game_opaque`) records, and `read`'s `icmp` and `end_of_capture`
//! (`icmp.rs`, not filtered). A key holding decoded JSON (a game packet's
//! `fields`) is read by name below it (`visit_path`), as the JSON
//! nests. Not described: the live commands' records ([`peer`]: serde
//! structs, which `peer` and `replay` report and `output::peer` prints).

/// `impl Keyed` for record type `$t`, read through its description
/// (`Described` at `'static`); written by `write_object`, or by `$write`
/// (`|record, out| ...`: a generated fast path).
macro_rules! keyed {
    ($t:ident) => {
        keyed!($t, |r, out| $crate::records::write_object::<$t<'static>>(
            r, out
        ));
    };
    ($t:ident, |$r:ident, $out:ident| $write:expr) => {
        impl $crate::records::Keyed for $t<'_> {
            fn write_json(&self, $out: &mut Vec<u8>) {
                let $r = self;
                $write
            }
            fn visit(&self, path: &str, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
                $crate::records::visit_path::<$t<'static>>(self, path, f)
            }
            fn visit_key(&self, path: &[u8], f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
                $crate::records::visit_index::<$t<'static>>(self, path, f)
            }
            fn leaves(&self, path: &mut String, f: &mut $crate::records::walk::Leaves<'_>) -> bool {
                $crate::records::walk::leaves::<$t<'static>>(self, path, f)
            }
        }
    };
}

pub(crate) mod anomaly;
pub(crate) mod closed;
pub mod flow;
pub mod game;
pub(crate) mod handshake;
pub(crate) mod icmp;
pub mod message;
pub mod nethernet;
pub mod packet;
pub mod peer;
pub(crate) mod value;
pub mod walk;

use std::borrow::Cow;

pub(crate) use closed::Closed;
pub use value::{Obj, Ty, Value};

/// The doc line of every record type's `type`: one line for `fields`,
/// whichever records it lists the name for.
pub(crate) const TYPE_DOC: &str = "The record type: \"packet\", \"message\", \"flow\", \"handshake\", \"game\" or \"game_opaque\" (read: also \"icmp\", \"end_of_capture\").";

/// The doc line of every record type's `flow`.
pub(crate) const FLOW_DOC: &str = "Flow id, 1-based in order of first sight.";

/// How a key's values are read from a record: each value is handed to the
/// callback, which stops the walk by returning `true`; returns whether it
/// did. A key without a value hands none.
pub(crate) type Get<D> =
    for<'r, 'a> fn(&'r <D as Described>::Of<'a>, &mut dyn FnMut(Value<'_>) -> bool) -> bool;

/// What a record shows of a key without a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Absent {
    /// The key always has a value (`null` if it had none).
    Never,
    /// `null` (docs/json.md: "integer or null").
    Null,
    /// The key is left out (serde's `skip_serializing_if`).
    Skip,
}

/// One key of a record type, `D`.
pub struct Key<D: Described> {
    pub(crate) name: &'static str,
    pub(crate) ty: Ty,
    /// One line, for `raknet-dissect fields`.
    pub(crate) doc: &'static str,
    /// What the record shows when it has no value.
    pub(crate) absent: Absent,
    /// A JSON array of every value `get` hands out (possibly none).
    pub(crate) many: bool,
    /// The keys of the object(s) it holds.
    pub(crate) nested: Option<fn() -> Vec<KeyDoc>>,
    /// Its values, as JSON shows them.
    pub(crate) get: Get<D>,
    /// What filters read instead, when that is more than JSON shows (a
    /// message's whole `data` where JSON has `--data-limit` of it).
    pub(crate) filter: Option<Get<D>>,
    /// Whether the key is there at all: JSON leaves it out otherwise
    /// (however many values a `many` key would hold; without `null` for
    /// one that would be `null`).
    pub(crate) present: Option<Present<D>>,
    /// The closed set its values come from, which a filter's values are
    /// checked against.
    pub(crate) closed: Option<Closed>,
    /// Whether JSON (and so export's tables and docs/json.md) has it: a
    /// key only filters read is not written (a packet's `ip.src`).
    pub(crate) in_json: bool,
}

/// Whether a record has a key (see [`Key::present`]).
pub(crate) type Present<D> = for<'r, 'a> fn(&'r <D as Described>::Of<'a>) -> bool;

impl<D: Described> Key<D> {
    /// A key with one value, always.
    pub(crate) const fn new(name: &'static str, ty: Ty, doc: &'static str, get: Get<D>) -> Self {
        Key {
            name,
            ty,
            doc,
            absent: Absent::Never,
            many: false,
            nested: None,
            get,
            filter: None,
            present: None,
            closed: None,
            in_json: true,
        }
    }

    /// `null` when it has no value.
    pub(crate) const fn or_null(mut self) -> Self {
        self.absent = Absent::Null;
        self
    }

    /// Left out when it has no value (serde's `skip_serializing_if`).
    pub(crate) const fn skip(mut self) -> Self {
        self.absent = Absent::Skip;
        self
    }

    /// An array of every value.
    pub(crate) const fn many(mut self) -> Self {
        self.many = true;
        self
    }

    /// Its values are objects described by `N`.
    pub(crate) const fn nested<N: Described>(mut self) -> Self {
        self.nested = Some(docs::<N>);
        self
    }

    /// An array, left out of the record when `present` says it is not
    /// there (an empty one is `[]`).
    pub(crate) const fn present(mut self, present: Present<D>) -> Self {
        self.many = true;
        self.absent = Absent::Skip;
        self.present = Some(present);
        self
    }

    /// Left out of a record of which `present` says it does not have the
    /// key (a `game_opaque` record has no `name`, not even `null`).
    pub(crate) const fn when(mut self, present: Present<D>) -> Self {
        self.present = Some(present);
        self
    }

    /// What filters read of it, when it is more than JSON shows.
    pub(crate) const fn filter(mut self, get: Get<D>) -> Self {
        self.filter = Some(get);
        self
    }

    /// Its values come from `set`: a filter comparing it with a value
    /// outside the set is refused, with the nearest one.
    pub(crate) const fn closed(mut self, set: Closed) -> Self {
        self.closed = Some(set);
        self
    }

    /// Read by filters and `-e` alone, never written (tshark's names for
    /// what JSON shows otherwise: a packet's `ip.src`, `udp.port`).
    pub(crate) const fn filter_only(mut self) -> Self {
        self.in_json = false;
        self
    }

    fn doc(&self) -> KeyDoc {
        KeyDoc {
            name: self.name,
            ty: self.ty,
            doc: self.doc,
            #[cfg(test)]
            absent: self.absent,
            #[cfg(test)]
            many: self.many,
            nested: self.nested,
            closed: self.closed,
            #[cfg(test)]
            in_json: self.in_json,
        }
    }
}

/// A record type's (or a nested object's) description. Implemented for the
/// type at `'static`; `Of<'a>` is the type with the lifetime of what it
/// borrows, so that a `&'static` table can describe borrowed records.
pub trait Described: Sized + 'static {
    /// The described type with the lifetime of what it borrows.
    type Of<'a>;
    /// Every key, in JSON order.
    const KEYS: &'static [Key<Self>];

    /// `r` as a JSON object: `write_object`, or its fast path
    /// ([`crate::write_keys!`]) for a type written by the million.
    fn write(r: &Self::Of<'_>, out: &mut Vec<u8>) {
        write_object::<Self>(r, out);
    }
}

/// A described value, whatever its type: what the writer, the filters and
/// nested keys take.
pub trait Keyed {
    /// The JSON object, its keys in their order.
    fn write_json(&self, out: &mut Vec<u8>);
    /// Each value at `path` (`c2s.lost`, `steps.step`), as `visit_path`.
    fn visit(&self, path: &str, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool;
    /// Each value at the key indices `path`, as `visit_index`.
    fn visit_key(&self, path: &[u8], f: &mut dyn FnMut(Value<'_>) -> bool) -> bool;
    /// Each leaf under `path`, as `walk::leaves`; whether there was one.
    fn leaves(&self, path: &mut String, f: &mut walk::Leaves<'_>) -> bool;
}

/// A value with its description.
pub(crate) struct With<'r, 'a, D: Described>(pub(crate) &'r D::Of<'a>);

impl<D: Described> Keyed for With<'_, '_, D> {
    fn write_json(&self, out: &mut Vec<u8>) {
        D::write(self.0, out);
    }
    fn visit(&self, path: &str, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
        visit_path::<D>(self.0, path, f)
    }
    fn visit_key(&self, path: &[u8], f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
        visit_index::<D>(self.0, path, f)
    }
    fn leaves(&self, path: &mut String, f: &mut walk::Leaves<'_>) -> bool {
        walk::leaves::<D>(self.0, path, f)
    }
}

/// Hand `v`, an object described by `D`, to `f`: a nested key's `get`.
pub(crate) fn object<D: Described>(v: &D::Of<'_>, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
    f(Value::Object(Obj::Keyed(&With::<D>(v))))
}

/// `r`'s NDJSON line.
pub fn write_line(r: &(impl Keyed + ?Sized), out: &mut Vec<u8>) {
    r.write_json(out);
    out.push(b'\n');
}

/// `r` as a JSON object: each key of `D` in order, with its value, or
/// without one `null` or left out ([`Absent`]).
pub(crate) fn write_object<D: Described>(r: &D::Of<'_>, out: &mut Vec<u8>) {
    out.push(b'{');
    let mut empty = true;
    for k in D::KEYS {
        write_member::<D, { usize::MAX }>(k, r, out, &mut empty);
    }
    out.push(b'}');
}

/// The fast path of `write_object`, for a record type written by the
/// million (`message`): its key `I`, at an index known when compiled, so
/// that the key's name, accessor and absence are constants the compiler
/// folds and inlines, where the loop calls through them (measured:
/// `messages --json`, 15% slower through the loop). [`crate::write_keys!`] calls
/// it for each index.
#[inline(always)]
pub fn write_at<D: Described, const I: usize>(r: &D::Of<'_>, out: &mut Vec<u8>, empty: &mut bool) {
    if let Some(k) = D::KEYS.get(I) {
        write_member::<D, I>(k, r, out, empty);
    }
}

/// `r` as a JSON object, as `write_object` writes it, through
/// [`write_at`] for each of the indices given, which must be those of
/// every key of the type (a compile-time check).
#[macro_export]
macro_rules! write_keys {
    ($d:ty, $r:expr, $out:expr; $($i:literal)*) => {{
        const _: () = assert!(
            <$d as $crate::records::Described>::KEYS.len() == [$($i),*].len()
        );
        let out: &mut Vec<u8> = $out;
        out.push(b'{');
        let mut empty = true;
        $($crate::records::write_at::<$d, $i>($r, out, &mut empty);)*
        out.push(b'}');
    }};
}

/// Key `k` of `r`, after a comma unless it is the first written, or
/// nothing when it is left out. `I`, its index for [`write_at`], makes
/// each key's callback a function of its own, inlined where it is called.
#[inline(always)]
fn write_member<D: Described, const I: usize>(
    k: &Key<D>,
    r: &D::Of<'_>,
    out: &mut Vec<u8>,
    empty: &mut bool,
) {
    if !k.in_json || k.present.is_some_and(|present| !present(r)) {
        return;
    }
    let mark = out.len();
    if !*empty {
        out.push(b',');
    }
    // Key names are plain identifiers (a test checks): no escaping.
    out.push(b'"');
    out.extend_from_slice(k.name.as_bytes());
    out.extend_from_slice(b"\":");
    if write_key::<D, I>(k, r, out) || k.absent != Absent::Skip {
        *empty = false;
    } else {
        out.truncate(mark);
    }
}

/// The value(s) of `k` in `r`; whether it had any (without, `null` is
/// written unless it is left out).
#[inline(always)]
fn write_key<D: Described, const I: usize>(k: &Key<D>, r: &D::Of<'_>, out: &mut Vec<u8>) -> bool {
    if k.many {
        out.push(b'[');
        let mut first = true;
        (k.get)(r, &mut |v| {
            if !first {
                out.push(b',');
            }
            first = false;
            value::write_value(&v, out);
            false
        });
        out.push(b']');
        return true;
    }
    let mut wrote = false;
    (k.get)(r, &mut |v| {
        value::write_value(&v, out);
        wrote = true;
        true
    });
    if !wrote && k.absent != Absent::Skip {
        out.extend_from_slice(b"null");
    }
    wrote
}

/// Each value at `path` in `r`, a key or a dotted path through nested
/// objects (an array stands for each of its elements), handed to `f`
/// until it returns `true`; returns whether it did. Reads that key alone.
pub(crate) fn visit_path<D: Described>(
    r: &D::Of<'_>,
    path: &str,
    f: &mut dyn FnMut(Value<'_>) -> bool,
) -> bool {
    let (head, rest) = path.split_once('.').unwrap_or((path, ""));
    let Some(k) = D::KEYS.iter().find(|k| k.name == head) else {
        return false;
    };
    let get = k.filter.unwrap_or(k.get);
    if rest.is_empty() {
        return get(r, f);
    }
    get(r, &mut |v| match v {
        Value::Object(Obj::Keyed(o)) => o.visit(rest, f),
        Value::Object(Obj::Json(j)) => value::visit_json(j, rest, f),
        Value::Object(Obj::Raw(j)) => serde_json::from_slice(j)
            .is_ok_and(|j: serde_json::Value| value::visit_json(&j, rest, f)),
        Value::Object(Obj::Motd(p)) => crate::wire::Motd::parse(p)
            .is_some_and(|m| visit_path::<crate::wire::Motd>(&m, rest, f)),
        _ => false,
    })
}

/// A key path resolved to the indices of its keys, each in the object
/// the one before holds (`c2s.lost`: `c2s` in the flow record, then
/// `lost` in its object): what a compiled filter reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyPath {
    at: [u8; 7],
    len: u8,
}

impl KeyPath {
    /// The indices, outermost first.
    pub(crate) fn indices(&self) -> &[u8] {
        &self.at[..usize::from(self.len)]
    }
}

/// `path` (`c2s.lost`) in records described by `D`, resolved to key
/// indices; `None` when a name on it is not a key there (or the path is
/// deeper than seven keys).
pub(crate) fn key_path<D: Described>(path: &str) -> Option<KeyPath> {
    let mut keys = docs::<D>();
    let mut p = KeyPath { at: [0; 7], len: 0 };
    for (depth, name) in path.split('.').enumerate() {
        let i = keys.iter().position(|k| k.name == name)?;
        *p.at.get_mut(depth)? = u8::try_from(i).ok()?;
        p.len += 1;
        keys = match keys[i].nested {
            Some(nested) => nested(),
            None => Vec::new(),
        };
    }
    Some(p)
}

/// Each value at the key indices `path` in `r` (from [`key_path`]),
/// handed to `f` until it returns `true`; returns whether it did. Reads
/// those keys alone, without a name compared.
pub(crate) fn visit_index<D: Described>(
    r: &D::Of<'_>,
    path: &[u8],
    f: &mut dyn FnMut(Value<'_>) -> bool,
) -> bool {
    let Some((k, rest)) = path
        .split_first()
        .and_then(|(&i, rest)| Some((D::KEYS.get(usize::from(i))?, rest)))
    else {
        return false;
    };
    let get = k.filter.unwrap_or(k.get);
    if rest.is_empty() {
        return get(r, f);
    }
    get(r, &mut |v| match v {
        Value::Object(Obj::Keyed(o)) => o.visit_key(rest, f),
        // Written from its payload (`value::motd_object`), read through
        // its description.
        Value::Object(Obj::Motd(p)) => crate::wire::Motd::parse(p)
            .is_some_and(|m| visit_index::<crate::wire::Motd>(&m, rest, f)),
        _ => false,
    })
}

/// A key as documentation sees it: [`Key`] without its accessors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyDoc {
    pub(crate) name: &'static str,
    pub(crate) ty: Ty,
    pub(crate) doc: &'static str,
    #[cfg(test)]
    pub(crate) absent: Absent,
    #[cfg(test)]
    pub(crate) many: bool,
    pub(crate) nested: Option<fn() -> Vec<KeyDoc>>,
    pub(crate) closed: Option<Closed>,
    #[cfg(test)]
    pub(crate) in_json: bool,
}

/// The keys of `D`, in JSON order.
pub(crate) fn docs<D: Described>() -> Vec<KeyDoc> {
    D::KEYS.iter().map(Key::doc).collect()
}

/// The dotted path of the key indices `path` in records described by
/// `D` (what [`key_path`] resolved).
pub(crate) fn path_name<D: Described>(path: &[u8]) -> Option<String> {
    let mut keys = docs::<D>();
    let mut names = Vec::new();
    for &i in path {
        let k = *keys.get(usize::from(i))?;
        names.push(k.name);
        keys = k.nested.map(|n| n()).unwrap_or_default();
    }
    Some(names.join("."))
}

/// The key at `path` (`c2s.lost`) in records described by `D`.
pub(crate) fn key<D: Described>(path: &str) -> Option<KeyDoc> {
    let mut keys = docs::<D>();
    let mut found = None;
    for name in path.split('.') {
        let k = *keys.iter().find(|k| k.name == name)?;
        keys = k.nested.map(|n| n()).unwrap_or_default();
        found = Some(k);
    }
    found
}

/// Every key of `D` and of the objects it nests, depth first, each named
/// by its dotted path (`c2s`, `c2s.packets`, ...): the names of `-Y`/`-e`.
pub(crate) fn paths<D: Described>() -> Vec<(Cow<'static, str>, KeyDoc)> {
    fn walk(prefix: &str, keys: Vec<KeyDoc>, out: &mut Vec<(Cow<'static, str>, KeyDoc)>) {
        for k in keys {
            let name: Cow<'static, str> = if prefix.is_empty() {
                Cow::Borrowed(k.name)
            } else {
                Cow::Owned(format!("{prefix}.{}", k.name))
            };
            let inner = k.nested.map(|n| n());
            out.push((name.clone(), k));
            if let Some(inner) = inner {
                walk(&name, inner, out);
            }
        }
    }
    let mut out = Vec::new();
    walk("", docs::<D>(), &mut out);
    out
}

#[cfg(test)]
mod tests;
