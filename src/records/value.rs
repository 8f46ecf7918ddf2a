//! The values of a record's keys, as filters compare them and the writer
//! puts them in JSON: [`Ty`], what a key holds; [`Value`], one value of it.

use std::fmt::{self, Write as _};
use std::net::IpAddr;

use super::packet::{motd_object, FrameJson, SplitJson};
use super::Keyed;
use crate::dissect::Anomaly;
use crate::wire::{Capsule, Motd};

/// What a field's values are, which decides the comparisons it allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// An integer: every comparison, with a number.
    Int,
    /// A float (`ts`): every comparison, with a number.
    Float,
    /// A string: every comparison (byte order) and `contains`, with a string.
    Str,
    /// A GUID, printed `0x` and 16 hex digits: compared as a number, written
    /// as a number or as the printed string.
    Guid,
    /// Bytes, printed as hex: `==`, `!=` and `contains`, with hex digits
    /// (`"86aa"`, `"86:aa"`).
    Bytes,
    /// `true` or `false`.
    Bool,
    /// ACK/NACK ranges: `== N` holds when a range covers datagram number N.
    Ranges,
    /// An IP address (`ip.src`): compared with an address (`127.0.0.1`,
    /// `::1`) or, for `==` and `!=`, a network (`10.0.0.0/8`).
    Ip,
    /// An object or array: only its presence can be tested.
    Object,
    /// A decoded game field (`game.login.protocol`), whatever JSON value it
    /// holds: compared as a number with a number, as a string with a string,
    /// as a bool with `true` or `false`.
    Any,
}

impl Ty {
    pub fn as_str(self) -> &'static str {
        match self {
            Ty::Int => "integer",
            Ty::Float => "float",
            Ty::Str => "string",
            Ty::Guid => "guid",
            Ty::Bytes => "hex bytes",
            Ty::Bool => "bool",
            Ty::Ranges => "ranges",
            Ty::Ip => "ip address",
            Ty::Object => "object",
            Ty::Any => "any",
        }
    }
}

/// One occurrence of a field.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    Int(i128),
    Float(f64),
    Str(&'a str),
    Guid(u64),
    Bytes(&'a [u8]),
    Bool(bool),
    /// An inclusive range of datagram numbers.
    Range(u32, u32),
    Ip(IpAddr),
    /// An object or array, for presence and export.
    Object(Obj<'a>),
}

/// The objects a field can hold, turned into JSON only when exported.
#[derive(Debug, Clone, Copy)]
pub enum Obj<'a> {
    Frame(&'a Capsule<'a>),
    Split(crate::wire::Split),
    Motd(&'a [u8]),
    Anomaly(&'a Anomaly),
    Json(&'a serde_json::Value),
    /// An object of a described record (`c2s`, a handshake's steps).
    Keyed(&'a dyn Keyed),
}

/// A string up to 64 bytes formatted on the stack (addresses, GUIDs).
struct Small {
    buf: [u8; 64],
    len: usize,
}

impl Small {
    fn new() -> Self {
        Small {
            buf: [0; 64],
            len: 0,
        }
    }
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl fmt::Write for Small {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Visit one displayable value as a string, formatted without allocating
/// when it fits in 64 bytes.
pub fn visit_display(v: impl fmt::Display, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
    let mut s = Small::new();
    if write!(s, "{v}").is_ok() {
        f(Value::Str(s.as_str()))
    } else {
        f(Value::Str(&v.to_string()))
    }
}

impl fmt::Debug for dyn Keyed + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Keyed")
    }
}

impl Obj<'_> {
    /// The object as its NDJSON text.
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        write_value(&Value::Object(*self), &mut out);
        String::from_utf8(out).unwrap_or_default()
    }
}

/// An integer value.
pub fn int(v: impl Into<i128>, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
    f(Value::Int(v.into()))
}

/// `v` as JSON, byte for byte as serde_json writes the same value (numbers,
/// floats and escapes are serde_json's own).
pub fn write_value(v: &Value<'_>, out: &mut Vec<u8>) {
    // serde_json fails only when its writer does, and a Vec takes every byte.
    let _ = match v {
        Value::Int(i) => serde_json::to_writer(&mut *out, i),
        Value::Float(x) => serde_json::to_writer(&mut *out, x),
        Value::Str(s) => serde_json::to_writer(&mut *out, s),
        Value::Bool(b) => serde_json::to_writer(&mut *out, b),
        Value::Guid(g) => {
            out.extend_from_slice(b"\"0x");
            crate::wire::cursor::hex_extend(out, &g.to_be_bytes());
            out.push(b'"');
            Ok(())
        }
        Value::Bytes(b) => {
            out.push(b'"');
            crate::wire::cursor::hex_extend(out, b);
            out.push(b'"');
            Ok(())
        }
        Value::Range(lo, hi) => serde_json::to_writer(&mut *out, &[lo, hi]),
        Value::Ip(a) => serde_json::to_writer(&mut *out, &a.to_string()),
        Value::Object(o) => match o {
            Obj::Keyed(k) => {
                k.write_json(out);
                Ok(())
            }
            Obj::Frame(c) => serde_json::to_writer(&mut *out, &FrameJson::new(c)),
            Obj::Split(s) => serde_json::to_writer(&mut *out, &SplitJson::new(*s)),
            Obj::Motd(p) => serde_json::to_writer(
                &mut *out,
                &Motd::parse(p).map(motd_object).unwrap_or_default(),
            ),
            Obj::Anomaly(a) => serde_json::to_writer(&mut *out, a),
            Obj::Json(j) => serde_json::to_writer(&mut *out, j),
        },
    };
}
