//! The interpreter: a packet's bytes walked by its compiled definition into
//! a JSON tree, as bedrock-protocol's deserializer reads them (field names
//! of the definitions; mapped names for mapped numbers; numbers as JSON
//! numbers up to 2^53, decimal strings past; buffers as lowercase hex;
//! UUIDs as strings; NBT as prismarine-nbt's `{type, value}` objects),
//! with every count and length bounded by the bytes that remain.

use std::borrow::Cow;

use bumpalo::Bump;
use serde_json::Value;

use super::compile::{Compiled, Count, Node, NodeId, Num};
use super::lean::{sort_members, with_arena, Lean, List, Members};

/// Definitions (containers, arrays, switches, options ...) and NBT nested
/// deeper than this are an error.
pub(crate) const MAX_DEPTH: usize = 96;

/// Where and why a packet did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// The field: `a.b[3].c` (empty for the packet itself).
    pub(crate) field: String,
    /// Offset in the packet body.
    pub(crate) offset: usize,
    pub(crate) what: String,
    /// What decoded before it: the packet's fields up to the one that
    /// stopped, that one's own parts included (`None` when nothing did).
    pub(crate) partial: Option<Box<Value>>,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let field = if self.field.is_empty() {
            "the packet"
        } else {
            &self.field
        };
        write!(f, "{field} at byte {}: {}", self.offset, self.what)
    }
}

/// Session state a layout depends on.
#[derive(Debug, Clone, Copy, Default)]
pub struct Session {
    /// The shield's item id (StartGame's or ItemRegistry's item table):
    /// items with it carry a blocking tick.
    pub shield_item_id: Option<i64>,
}

/// Spans a trace holds at most: past them a packet's layout is dropped
/// (its fields still decode), so a peer's packet of a million tiny
/// elements costs no more than its value does.
pub(crate) const MAX_SPANS: usize = 1 << 20;

/// Where one field of a decoded packet is: a step of the trace
/// `decode_traced` keeps, in wire order.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// 0 for the packet's own fields, one more for each container,
    /// array element or NBT tag it is inside.
    pub(crate) depth: u16,
    /// The field's name, as in the decoded value; `[3]` for an element.
    pub(crate) name: Box<str>,
    /// Its bytes, offsets in the body: a bitfield's and a bitflags' parts
    /// each have the whole bitfield's.
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) shown: Shown,
}

/// What a [`Span`] shows of its field's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Shown {
    /// The value: a number, string, bool or null (or an object or array
    /// whose parts have no spans: empty ones).
    Value(Value),
    /// An object: its fields are the spans after it, one deeper.
    Object,
    /// An array of this many elements: the spans after it, one deeper.
    Array(usize),
}

/// Decode `body` as node `root` of `c`; all of it must be used.
pub(crate) fn decode(
    c: &Compiled,
    root: NodeId,
    body: &[u8],
    s: Session,
) -> Result<Value, DecodeError> {
    with_arena(|arena| {
        decode_lean(c, root, body, s, arena)
            .map(Lean::into_value)
            .map_err(valued)
    })
}

/// A packet that stopped decoding, and what decoded before it, as the
/// interpreter builds it (not yet in [`DecodeError::partial`]).
pub(crate) type Stopped<'a> = (DecodeError, Option<Lean<'a>>);

/// The error with what decoded before it as a value.
fn valued((mut e, partial): Stopped<'_>) -> DecodeError {
    e.partial = partial.map(|p| Box::new(p.into_value()));
    e
}

/// [`decode`], the value as the interpreter builds it (for output written
/// straight from it), its arrays and objects in `arena`.
pub(crate) fn decode_lean<'a>(
    c: &'a Compiled,
    root: NodeId,
    body: &'a [u8],
    s: Session,
    arena: &'a Bump,
) -> Result<Lean<'a>, Stopped<'a>> {
    run(c, root, body, s, None, arena).map(|(v, _)| v)
}

/// A value and the spans of its fields (`None` past [`MAX_SPANS`]).
pub(crate) type Traced = (Value, Option<Vec<Span>>);

/// [`decode`], and where each field was read: the spans in wire order.
/// Only the `-V` tree asks, so [`decode`] keeps no trace.
pub(crate) fn decode_traced(
    c: &Compiled,
    root: NodeId,
    body: &[u8],
    s: Session,
) -> Result<Traced, DecodeError> {
    with_arena(|arena| {
        run(c, root, body, s, Some(Vec::new()), arena)
            .map(|(v, t)| (v.into_value(), t))
            .map_err(valued)
    })
}

fn run<'a>(
    c: &'a Compiled,
    root: NodeId,
    body: &'a [u8],
    s: Session,
    trace: Option<Vec<Span>>,
    arena: &'a Bump,
) -> Result<(Lean<'a>, Option<Vec<Span>>), Stopped<'a>> {
    let mut d = Decoder {
        c,
        arena,
        s,
        b: body,
        pos: 0,
        end: body.len(),
        scopes: Vec::new(),
        path: Vec::new(),
        depth: 0,
        trace,
        tdepth: 0,
        partial: None,
    };
    let v = match d.value(root) {
        Ok(v) => v,
        Err(e) => return Err((e, d.partial.take())),
    };
    if d.pos != body.len() {
        let e = d.err(format!(
            "{} bytes left after the last field",
            body.len() - d.pos
        ));
        return Err((e, Some(v)));
    }
    Ok((v, d.trace))
}

/// A step of the path to the field being read.
enum Seg<'a> {
    Field(&'a str),
    Element(u64),
}

struct Decoder<'a> {
    c: &'a Compiled,
    /// Where the value's arrays and objects are made.
    arena: &'a Bump,
    s: Session,
    b: &'a [u8],
    pos: usize,
    /// The end of what the current field may read (an encapsulated length).
    end: usize,
    /// The containers being read, innermost last.
    scopes: Vec<Members<'a>>,
    /// The field being read, for errors (made into text only then).
    path: Vec<Seg<'a>>,
    /// Nodes being read, one inside the other.
    depth: usize,
    /// The spans so far, when asked for ([`decode_traced`]).
    trace: Option<Vec<Span>>,
    /// The depth of the next span.
    tdepth: u16,
    /// What decoded before the error being returned: the containers and
    /// arrays it passes through add themselves as it goes up.
    partial: Option<Lean<'a>>,
}

/// Text from the wire: borrowed when it is UTF-8, else with U+FFFD for
/// what is not (made in `arena`).
fn text<'a>(b: &'a [u8], arena: &'a Bump) -> Lean<'a> {
    Lean::Str(match String::from_utf8_lossy(b) {
        Cow::Borrowed(s) => s,
        Cow::Owned(s) => arena.alloc_str(&s),
    })
}

impl<'a> Decoder<'a> {
    fn err(&self, what: String) -> DecodeError {
        use std::fmt::Write;
        let mut field = String::new();
        for p in &self.path {
            match p {
                Seg::Field(name) => {
                    if !field.is_empty() {
                        field.push('.');
                    }
                    field.push_str(name);
                }
                Seg::Element(i) => {
                    let _ = write!(field, "[{i}]");
                }
            }
        }
        DecodeError {
            field,
            offset: self.pos,
            what,
            partial: None,
        }
    }

    /// A span for the field about to be read from `start` (from here when
    /// `None`), closed by [`Decoder::close`]; its index, when tracing.
    fn open(&mut self, start: Option<usize>, name: impl FnOnce() -> Box<str>) -> Option<usize> {
        let t = self.trace.as_mut()?;
        if t.len() >= MAX_SPANS {
            self.trace = None;
            return None;
        }
        t.push(Span {
            depth: self.tdepth,
            name: name(),
            start: start.unwrap_or(self.pos),
            end: self.pos,
            shown: Shown::Object,
        });
        self.tdepth += 1;
        Some(t.len() - 1)
    }

    /// Span `at` (from [`Decoder::open`]) read, its value `v`.
    fn close(&mut self, at: Option<usize>, v: &Lean<'_>) {
        let Some(i) = at else {
            return;
        };
        self.tdepth -= 1;
        let Some(t) = self.trace.as_mut() else {
            return;
        };
        let parts = t.len() > i + 1;
        let (end, span) = (self.pos, &mut t[i]);
        span.end = end;
        span.shown = match v {
            Lean::Object(_) if parts => Shown::Object,
            Lean::Array(a) if parts => Shown::Array(a.len()),
            v => Shown::Value(v.to_value()),
        };
    }

    /// A span with no parts, when tracing.
    fn leaf(&mut self, name: &str, bytes: std::ops::Range<usize>, v: &Lean<'_>) {
        let Some(t) = self.trace.as_mut() else {
            return;
        };
        if t.len() >= MAX_SPANS {
            self.trace = None;
            return;
        }
        t.push(Span {
            depth: self.tdepth,
            name: name.into(),
            start: bytes.start,
            end: bytes.end,
            shown: Shown::Value(v.to_value()),
        });
    }

    /// The trace's length and depth, to go back to when a read that
    /// failed is not an error.
    fn mark(&self) -> (usize, u16) {
        (self.trace.as_ref().map_or(0, Vec::len), self.tdepth)
    }

    fn back_to(&mut self, (len, depth): (usize, u16)) {
        if let Some(t) = self.trace.as_mut() {
            t.truncate(len);
        }
        self.tdepth = depth;
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.end - self.pos {
            return Err(self.err(format!("{n} bytes wanted, {} left", self.end - self.pos)));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn arr<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let s = self.take(N)?;
        let mut a = [0; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn leb(&mut self, bits: u32) -> Result<u128, DecodeError> {
        let mut v: u128 = 0;
        let mut shift = 0;
        loop {
            let b = self.take(1)?[0];
            v |= u128::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
            if shift >= bits {
                return Err(self.err(format!("a varint longer than {bits} bits")));
            }
        }
    }

    /// A number as the wire has it.
    fn num(&mut self, n: Num) -> Result<Lean<'a>, DecodeError> {
        use Num::*;
        let arena = self.arena;
        let int = |v: i64| Lean::int(i128::from(v), arena);
        Ok(match n {
            I8 => Lean::Int(i64::from(self.arr::<1>()?[0] as i8)),
            U8 => Lean::Int(i64::from(self.arr::<1>()?[0])),
            I16 => Lean::Int(i64::from(i16::from_be_bytes(self.arr()?))),
            U16 => Lean::Int(i64::from(u16::from_be_bytes(self.arr()?))),
            I32 => Lean::Int(i64::from(i32::from_be_bytes(self.arr()?))),
            U32 => Lean::Int(i64::from(u32::from_be_bytes(self.arr()?))),
            I64 => int(i64::from_be_bytes(self.arr()?)),
            U64 => Lean::uint(u128::from(u64::from_be_bytes(self.arr()?)), arena),
            Li16 => Lean::Int(i64::from(i16::from_le_bytes(self.arr()?))),
            Lu16 => Lean::Int(i64::from(u16::from_le_bytes(self.arr()?))),
            Li32 => Lean::Int(i64::from(i32::from_le_bytes(self.arr()?))),
            Lu32 => Lean::Int(i64::from(u32::from_le_bytes(self.arr()?))),
            Li64 => int(i64::from_le_bytes(self.arr()?)),
            Lu64 => Lean::uint(u128::from(u64::from_le_bytes(self.arr()?)), arena),
            F32 => Lean::Float(f64::from(f32::from_be_bytes(self.arr()?))),
            F64 => Lean::Float(f64::from_be_bytes(self.arr()?)),
            Lf32 => Lean::Float(f64::from(f32::from_le_bytes(self.arr()?))),
            Lf64 => Lean::Float(f64::from_le_bytes(self.arr()?)),
            // A varint is a signed 32-bit integer in LEB128 (two's
            // complement: a negative takes 5 bytes), as ProtoDef and
            // bedrock-protocol read it: a block's y of -45 is -45.
            Varint => Lean::Int(i64::from(self.leb(35)? as u32 as i32)),
            Varint64 => Lean::uint(u128::from(self.leb(70)? as u64), arena),
            Varint128 => Lean::uint(self.leb(133)?, arena),
            Zigzag32 => {
                let v = self.leb(35)? as u32;
                Lean::Int(i64::from((v >> 1) as i32 ^ -((v & 1) as i32)))
            }
            Zigzag64 => {
                let v = self.leb(70)? as u64;
                int((v >> 1) as i64 ^ -((v & 1) as i64))
            }
        })
    }

    /// A count or length: a non-negative integer.
    fn count(&mut self, c: &Count) -> Result<usize, DecodeError> {
        let n = match c {
            Count::Fixed(n) => return Ok(*n),
            Count::Prefix(id) => {
                let v = self.value(*id)?;
                v.as_i64().ok_or_else(|| v.json())
            }
            Count::Field(name) => match self.lookup(std::slice::from_ref(name)) {
                Some(v) => v.as_i64().ok_or_else(|| v.json()),
                None => return Err(self.err(format!("no field {name:?} to count by"))),
            },
        };
        match n {
            Ok(n) if n >= 0 => Ok(n as usize),
            Ok(n) => Err(self.err(format!("a count of {n}"))),
            Err(v) => Err(self.err(format!("a count of {v}"))),
        }
    }

    /// `n` elements, each one byte at least (or a few of nothing).
    fn check_count(&self, n: usize) -> Result<(), DecodeError> {
        if n > 64 && n > self.end - self.pos {
            return Err(self.err(format!(
                "a count of {n}, more than the {} bytes left",
                self.end - self.pos
            )));
        }
        Ok(())
    }

    /// The value `path` names among the containers being read: `..` goes
    /// up one explicitly, then the first scope outward that has the name,
    /// then into its objects.
    fn lookup(&self, path: &[Box<str>]) -> Option<&Lean<'a>> {
        // A container being read may hold a name twice: its last counts.
        fn field<'s, 'a>(s: &'s Members<'a>, name: &str) -> Option<&'s Lean<'a>> {
            s.iter().rev().find(|(k, _)| *k == name).map(|(_, v)| v)
        }
        super::compile::lookup_in(&self.scopes, path, field, |v, k| v.get(k))
    }

    fn value(&mut self, id: NodeId) -> Result<Lean<'a>, DecodeError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.err("nested too deep".into()));
        }
        self.depth += 1;
        let v = self.node(id);
        self.depth -= 1;
        v
    }

    fn node(&mut self, id: NodeId) -> Result<Lean<'a>, DecodeError> {
        let c = self.c;
        Ok(match &c.nodes[id as usize] {
            Node::Num(n) => self.num(*n)?,
            Node::Bool => Lean::Bool(self.take(1)?[0] != 0),
            Node::Void => Lean::Null,
            Node::Uuid => {
                let b = self.arr::<16>()?;
                Lean::Str(self.arena.alloc_str(&uuid(&b)))
            }
            Node::ByteRot => Lean::Float(f64::from(self.take(1)?[0]) * (360.0 / 256.0)),
            Node::PString(count) => {
                let n = self.count(count)?;
                text(self.take(n)?, self.arena)
            }
            Node::Cstring => {
                let rest = &self.b[self.pos..self.end];
                let Some(n) = rest.iter().position(|&b| b == 0) else {
                    return Err(self.err("a C string with no end".into()));
                };
                self.pos += n + 1;
                text(&rest[..n], self.arena)
            }
            Node::Buffer(count) => {
                let n = self.count(count)?;
                Lean::Hex(self.take(n)?)
            }
            Node::RestBuffer => {
                let n = self.end - self.pos;
                Lean::Hex(self.take(n)?)
            }
            Node::Container(fields) => {
                self.scopes
                    .push(List::with_capacity_in(fields.len(), self.arena));
                for (name, node) in fields {
                    self.path.push(Seg::Field(name.as_deref().unwrap_or("")));
                    // An anonymous field's parts are its container's.
                    let at = match name {
                        Some(n) => self.open(None, || n.clone()),
                        None => None,
                    };
                    let r = self.value(*node);
                    self.path.pop();
                    let v = match r {
                        Ok(v) => v,
                        Err(e) => {
                            // What decoded so far goes up with the error.
                            let mut m = self
                                .scopes
                                .pop()
                                .unwrap_or_else(|| List::new_in(self.arena));
                            match (name, self.partial.take()) {
                                (Some(n), Some(p)) => m.push((&**n, p)),
                                (None, Some(Lean::Object(p))) => m.extend(p),
                                _ => {}
                            }
                            sort_members(&mut m);
                            self.partial = Some(Lean::Object(m));
                            return Err(e);
                        }
                    };
                    self.close(at, &v);
                    let top = self.scopes.last_mut().expect("pushed above");
                    match (name, v) {
                        (Some(n), v) => top.push((&**n, v)),
                        (None, Lean::Object(m)) => top.extend(m),
                        (None, _) => {}
                    }
                }
                let mut m = self
                    .scopes
                    .pop()
                    .unwrap_or_else(|| List::new_in(self.arena));
                match &fields.order {
                    // A member from each field, in the fields' order: put
                    // in the order worked out when the fields were.
                    Some(order) if m.len() == fields.len() => {
                        let mut sorted = List::with_capacity_in(order.len(), self.arena);
                        for &i in order.iter() {
                            let taken = std::mem::replace(&mut m[usize::from(i)], ("", Lean::Null));
                            sorted.push(taken);
                        }
                        // The arena's, emptied after: not walked to be dropped.
                        std::mem::forget(m);
                        Lean::Object(sorted)
                    }
                    _ => {
                        sort_members(&mut m);
                        Lean::Object(m)
                    }
                }
            }
            Node::Switch {
                compare,
                cases,
                default,
            } => {
                let case = {
                    let key = compare.key(|p| self.lookup(p));
                    let shield = self.s.shield_item_id;
                    cases
                        .iter()
                        .find(|(k, _)| match k.strip_prefix('/') {
                            Some("ShieldItemID") => {
                                shield.is_some_and(|s| key.parse::<i64>() == Ok(s))
                            }
                            _ => **k == *key,
                        })
                        .map(|(_, n)| *n)
                        .or(*default)
                };
                match case {
                    Some(n) => self.value(n)?,
                    None => Lean::Null,
                }
            }
            Node::Array { count, of } => {
                let n = self.count(count)?;
                self.check_count(n)?;
                let mut out = List::with_capacity_in(n.min(4096), self.arena);
                for i in 0..n {
                    self.path.push(Seg::Element(i as u64));
                    let at = self.open(None, || format!("[{i}]").into());
                    let v = self.value(*of);
                    self.path.pop();
                    let v = match v {
                        Ok(v) => v,
                        Err(e) => {
                            out.extend(self.partial.take());
                            self.partial = Some(Lean::Array(out));
                            return Err(e);
                        }
                    };
                    self.close(at, &v);
                    out.push(v);
                }
                Lean::Array(out)
            }
            Node::MaybeIncompleteArray { count, of } => {
                let n = self.value(*count)?;
                let n = n.as_u64().unwrap_or(0);
                let mut out = List::new_in(self.arena);
                let mut i = 0;
                while i < n && self.pos < self.end {
                    let (at, mark) = (self.pos, self.mark());
                    self.path.push(Seg::Element(i));
                    let span = self.open(None, || format!("[{i}]").into());
                    let v = self.value(*of);
                    self.path.pop();
                    match v {
                        Ok(v) => {
                            self.close(span, &v);
                            out.push(v);
                        }
                        Err(_) => {
                            // A cut-short element ends the array (as
                            // bedrock-protocol reads it), and its spans.
                            self.pos = at;
                            self.back_to(mark);
                            self.partial = None;
                            break;
                        }
                    }
                    i += 1;
                }
                Lean::Array(out)
            }
            Node::Mapper { ty, map, nums } => {
                let v = self.value(*ty)?;
                let at = match v.as_i64() {
                    Some(n) => nums.iter().position(|k| *k == Some(n)),
                    None => {
                        let t = v.text();
                        map.iter().position(|(k, _)| **k == *t)
                    }
                };
                match at {
                    Some(i) => Lean::Json(&map[i].1),
                    None => v,
                }
            }
            Node::Bitfield(fields) => {
                let bits: u32 = fields.iter().map(|f| u32::from(f.1)).sum();
                if !bits.is_multiple_of(8) || bits > 128 {
                    return Err(self.err(format!("a bitfield of {bits} bits")));
                }
                let start = self.pos;
                let bytes = self.take(bits as usize / 8)?;
                let mut all: u128 = 0;
                for &b in bytes {
                    all = all << 8 | u128::from(b);
                }
                let mut m = List::with_capacity_in(fields.len(), self.arena);
                let mut left = bits;
                for (name, size, signed) in fields {
                    let size = u32::from(*size);
                    left -= size;
                    let mask = if size >= 128 {
                        u128::MAX
                    } else {
                        (1u128 << size) - 1
                    };
                    let raw = (all >> left) & mask;
                    let v = if *signed && size > 0 && raw >> (size - 1) & 1 == 1 {
                        raw as i128 - (1i128 << size)
                    } else {
                        raw as i128
                    };
                    let v = Lean::int(v, self.arena);
                    self.leaf(name, start..self.pos, &v);
                    m.push((&**name, v));
                }
                sort_members(&mut m);
                Lean::Object(m)
            }
            Node::Option(inner) => {
                if self.take(1)?[0] != 0 {
                    self.value(*inner)?
                } else {
                    Lean::Null
                }
            }
            Node::Bitflags { ty, flags } => {
                let start = self.pos;
                let v = self.value(*ty)?;
                let n: u128 = match &v {
                    Lean::Int(i) => *i as u64 as u128,
                    Lean::Json(Value::Number(n)) => n
                        .as_u64()
                        .map(u128::from)
                        .or_else(|| n.as_i64().map(|i| i as u64 as u128))
                        .unwrap_or(0),
                    Lean::Str(_) | Lean::Json(Value::String(_)) => {
                        let s = v.text();
                        s.parse::<u128>()
                            .or_else(|_| s.parse::<i128>().map(|i| i as u64 as u128))
                            .unwrap_or(0)
                    }
                    _ => 0,
                };
                self.leaf("_value", start..self.pos, &v);
                let mut m = List::with_capacity_in(flags.len() + 1, self.arena);
                m.push(("_value", v));
                for (name, mask) in flags {
                    let on = Lean::Bool(*mask != 0 && n & mask == *mask);
                    self.leaf(name, start..self.pos, &on);
                    m.push((&**name, on));
                }
                sort_members(&mut m);
                Lean::Object(m)
            }
            Node::Encapsulated { len, inner } => {
                let n = self.value(*len)?;
                let n = match n.as_u64() {
                    Some(n) => n as usize,
                    None => return Err(self.err(format!("a length of {}", n.json()))),
                };
                if n == 0 {
                    return Ok(Lean::Null);
                }
                if n > self.end - self.pos {
                    return Err(self.err(format!(
                        "a length of {n}, more than the {} bytes left",
                        self.end - self.pos
                    )));
                }
                let (outer, stop) = (self.end, self.pos + n);
                self.end = stop;
                let v = self.value(*inner);
                self.end = outer;
                let v = v?;
                self.pos = stop;
                v
            }
            Node::OptionalOnRemaining(inner) => {
                if self.pos >= self.end {
                    Lean::Null
                } else {
                    self.value(*inner)?
                }
            }
            Node::EnumSize => {
                let n = self
                    .lookup(&["values_len".into()])
                    .and_then(Lean::as_u64)
                    .unwrap_or(0);
                Lean::Str(match n {
                    0..=0x100 => "byte",
                    0x101..=0x10000 => "short",
                    _ => "int",
                })
            }
            Node::Nbt { varint } => self.nbt(*varint, 0)?,
            Node::NbtLoop => {
                let mut out = List::new_in(self.arena);
                loop {
                    if self.take(1)?[0] == 0 {
                        break;
                    }
                    self.pos -= 1;
                    let i = out.len();
                    let at = self.open(None, || format!("[{i}]").into());
                    let v = self.nbt(true, 0)?;
                    self.close(at, &v);
                    out.push(v);
                }
                Lean::Array(out)
            }
            Node::Unknown(what) => {
                return Err(self.err(format!("no decoder for the type {what}")));
            }
        })
    }

    /// One named NBT tag (`{type, name, value}`), as prismarine-nbt reads it.
    fn nbt(&mut self, varint: bool, depth: usize) -> Result<Lean<'a>, DecodeError> {
        let start = self.pos;
        let tag = self.take(1)?[0];
        let kind = Lean::Str(tag_name(tag, self)?);
        self.leaf("type", start..self.pos, &kind);
        if tag == 0 {
            return Ok(Lean::Object(bumpalo::vec![in self.arena; ("type", kind)]));
        }
        let start = self.pos;
        let name = self.nbt_string(varint)?;
        self.leaf("name", start..self.pos, &name);
        let at = self.open(None, || "value".into());
        let v = self.nbt_payload(tag, varint, depth)?;
        self.close(at, &v);
        // Sorted: name, type, value.
        Ok(Lean::Object(bumpalo::vec![in self.arena;
            ("name", name),
            ("type", kind),
            ("value", v),
        ]))
    }

    fn nbt_string(&mut self, varint: bool) -> Result<Lean<'a>, DecodeError> {
        let n = if varint {
            self.leb(35)? as usize
        } else {
            usize::from(u16::from_le_bytes(self.arr()?))
        };
        Ok(text(self.take(n)?, self.arena))
    }

    fn nbt_len(&mut self, varint: bool) -> Result<usize, DecodeError> {
        let n = if varint {
            let v = self.leb(35)? as u32;
            (v >> 1) as i32 ^ -((v & 1) as i32)
        } else {
            i32::from_le_bytes(self.arr()?)
        };
        let n = usize::try_from(n).map_err(|_| self.err(format!("an NBT length of {n}")))?;
        self.check_count(n)?;
        Ok(n)
    }

    fn nbt_payload(
        &mut self,
        tag: u8,
        varint: bool,
        depth: usize,
    ) -> Result<Lean<'a>, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(self.err("NBT nested too deep".into()));
        }
        use Num::*;
        let (int32, int64) = if varint {
            (Zigzag32, Zigzag64)
        } else {
            (Li32, Li64)
        };
        Ok(match tag {
            1 => self.num(I8)?,
            2 => self.num(Li16)?,
            3 => self.num(int32)?,
            4 => self.num(int64)?,
            5 => self.num(Lf32)?,
            6 => self.num(Lf64)?,
            7 | 11 | 12 => {
                let n = self.nbt_len(varint)?;
                let kind = match tag {
                    7 => I8,
                    11 => Li32,
                    _ => Li64,
                };
                let mut out = List::with_capacity_in(n.min(4096), self.arena);
                for i in 0..n {
                    let start = self.pos;
                    let v = self.num(kind)?;
                    if self.trace.is_some() {
                        self.leaf(&format!("[{i}]"), start..self.pos, &v);
                    }
                    out.push(v);
                }
                Lean::Array(out)
            }
            8 => self.nbt_string(varint)?,
            9 => {
                let start = self.pos;
                let inner = self.take(1)?[0];
                let name = Lean::Str(tag_name(inner, self)?);
                self.leaf("type", start..self.pos, &name);
                let list = self.open(None, || "value".into());
                let n = self.nbt_len(varint)?;
                let mut out = List::with_capacity_in(n.min(4096), self.arena);
                for i in 0..n {
                    let at = self.open(None, || format!("[{i}]").into());
                    let v = self.nbt_payload(inner, varint, depth + 1)?;
                    self.close(at, &v);
                    out.push(v);
                }
                let out = Lean::Array(out);
                self.close(list, &out);
                Lean::Object(bumpalo::vec![in self.arena;
                    ("type", name),
                    ("value", out),
                ])
            }
            10 => {
                let mut m = List::new_in(self.arena);
                loop {
                    let start = self.pos;
                    let t = self.take(1)?[0];
                    if t == 0 {
                        break;
                    }
                    let name = match self.nbt_string(varint)? {
                        Lean::Str(s) => s,
                        _ => "",
                    };
                    // The tag, from its type byte; its name is the key.
                    let tag = self.open(Some(start), || (*name).into());
                    let kind = Lean::Str(tag_name(t, self)?);
                    self.leaf("type", start..start + 1, &kind);
                    let at = self.open(None, || "value".into());
                    let v = self.nbt_payload(t, varint, depth + 1)?;
                    self.close(at, &v);
                    let e = Lean::Object(bumpalo::vec![in self.arena;
                        ("type", kind),
                        ("value", v),
                    ]);
                    self.close(tag, &e);
                    m.push((name, e));
                }
                sort_members(&mut m);
                Lean::Object(m)
            }
            0 => Lean::Null,
            t => return Err(self.err(format!("NBT tag type {t}"))),
        })
    }
}

fn tag_name(t: u8, d: &Decoder<'_>) -> Result<&'static str, DecodeError> {
    Ok(match t {
        0 => "end",
        1 => "byte",
        2 => "short",
        3 => "int",
        4 => "long",
        5 => "float",
        6 => "double",
        7 => "byteArray",
        8 => "string",
        9 => "list",
        10 => "compound",
        11 => "intArray",
        12 => "longArray",
        t => return Err(d.err(format!("NBT tag type {t}"))),
    })
}

/// A binary UUID: two little-endian 64-bit halves, most significant first
/// (as the game writes them; see bedrock/body.rs).
fn uuid(b: &[u8; 16]) -> String {
    crate::wire::cursor::uuid_le_halves(b)
}
