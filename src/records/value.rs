//! The values of a record's keys, as filters compare them and the writer
//! puts them in JSON: [`Ty`], what a key holds; [`Value`], one value of it.

use std::fmt::{self, Write as _};
use std::net::IpAddr;

use super::Keyed;
use crate::wire::Motd;

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
    pub(crate) fn as_str(self) -> &'static str {
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
    /// An integer, of whatever width the record holds.
    Int(i128),
    /// A float (a timestamp, a rate).
    Float(f64),
    /// A string.
    Str(&'a str),
    /// A GUID: JSON shows it as a string, `0x` and 16 hex digits.
    Guid(u64),
    /// Bytes: JSON shows them as a hex string.
    Bytes(&'a [u8]),
    /// A bool.
    Bool(bool),
    /// An inclusive range of datagram numbers.
    Range(u32, u32),
    /// An IP address: JSON shows it as a string.
    Ip(IpAddr),
    /// An object or array, for presence and export.
    Object(Obj<'a>),
}

/// The objects a field can hold, turned into JSON only when exported.
#[derive(Debug, Clone, Copy)]
pub enum Obj<'a> {
    /// A pong's MOTD, from its payload (its keys vary by payload).
    Motd(&'a [u8]),
    /// Decoded JSON (a game packet's `fields`, or a value under them).
    Json(&'a serde_json::Value),
    /// Decoded JSON written already (a game packet's `fields` written
    /// straight from the decoder): written as it is, parsed when read.
    Raw(&'a [u8]),
    /// An object of a described record (`c2s`, a packet's frames).
    Keyed(&'a dyn Keyed),
}

/// A Minecraft MOTD as the `motd` object of a `packet` record: every value a
/// string, the keys in alphabetical order.
pub(crate) fn motd_object(m: Motd) -> serde_json::Map<String, serde_json::Value> {
    m.fields
        .into_iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v)))
        .collect()
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

/// Visit a socket address as a string, as its `Display` writes it: an
/// IPv4 one digit by digit, without the formatting machinery, which costs
/// a packet record more than the rest of its addresses' handling (two per
/// packet; measured on `read --json`).
pub(crate) fn visit_addr(a: std::net::SocketAddr, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
    let std::net::SocketAddr::V4(v4) = a else {
        return visit_display(a, f);
    };
    fn decimal(s: &mut Small, mut n: u16) {
        let mut digits = [0u8; 5];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let d = &digits[i..];
        s.buf[s.len..s.len + d.len()].copy_from_slice(d);
        s.len += d.len();
    }
    // At most 21 bytes ("255.255.255.255:65535") of the 64.
    let mut s = Small::new();
    for (i, octet) in v4.ip().octets().into_iter().enumerate() {
        if i > 0 {
            s.buf[s.len] = b'.';
            s.len += 1;
        }
        decimal(&mut s, u16::from(octet));
    }
    s.buf[s.len] = b':';
    s.len += 1;
    decimal(&mut s, v4.port());
    f(Value::Str(s.as_str()))
}

/// Visit one displayable value as a string, formatted without allocating
/// when it fits in 64 bytes.
pub(crate) fn visit_display(v: impl fmt::Display, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
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
    pub(crate) fn to_json(self) -> String {
        let mut out = Vec::new();
        write_value(&Value::Object(self), &mut out);
        String::from_utf8(out).unwrap_or_default()
    }
}

/// An integer value.
pub(crate) fn int(v: impl Into<i128>, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
    f(Value::Int(v.into()))
}

/// `v` as JSON, byte for byte as serde_json writes the same value (numbers,
/// floats and escapes are serde_json's own).
// Inlined into the writer's fast path (`super::write_at`), where the
// variant is known.
#[inline(always)]
pub(crate) fn write_value(v: &Value<'_>, out: &mut Vec<u8>) {
    // serde_json fails only when its writer does, and a Vec takes every byte.
    let _ = match v {
        // As u64 or i64 when it fits, the same digits without 128-bit
        // division (most of a record's integers).
        Value::Int(i) => match (u64::try_from(*i), i64::try_from(*i)) {
            (Ok(u), _) => serde_json::to_writer(&mut *out, &u),
            (_, Ok(s)) => serde_json::to_writer(&mut *out, &s),
            _ => serde_json::to_writer(&mut *out, i),
        },
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
            crate::wire::json::write_hex(out, b);
            Ok(())
        }
        Value::Range(lo, hi) => serde_json::to_writer(&mut *out, &[lo, hi]),
        Value::Ip(a) => serde_json::to_writer(&mut *out, &a.to_string()),
        Value::Object(o) => match o {
            Obj::Keyed(k) => {
                k.write_json(out);
                Ok(())
            }
            Obj::Motd(p) => serde_json::to_writer(
                &mut *out,
                &Motd::parse(p).map(motd_object).unwrap_or_default(),
            ),
            Obj::Json(j) => {
                crate::wire::json::write_value(out, j);
                Ok(())
            }
            Obj::Raw(j) => {
                out.extend_from_slice(j);
                Ok(())
            }
        },
    };
}

/// The values at `path` under `v`, decoded JSON (a game packet's
/// `fields`): an array on the way stands for each of its elements; an
/// array of objects at the end, for each object.
pub(crate) fn visit_json(
    v: &serde_json::Value,
    path: &str,
    f: &mut dyn FnMut(Value<'_>) -> bool,
) -> bool {
    if let serde_json::Value::Array(a) = v {
        return if path.is_empty() && a.iter().any(|x| x.is_object()) {
            a.iter().any(|x| f(Value::Object(Obj::Json(x))))
        } else {
            a.iter().any(|x| visit_json(x, path, f))
        };
    }
    if !path.is_empty() {
        let (key, rest) = path.split_once('.').unwrap_or((path, ""));
        return v.get(key).is_some_and(|next| visit_json(next, rest, f));
    }
    match v {
        serde_json::Value::Null => false,
        serde_json::Value::Bool(b) => f(Value::Bool(*b)),
        serde_json::Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => f(Value::Int(u.into())),
            (None, Some(i)) => f(Value::Int(i.into())),
            _ => n.as_f64().is_some_and(|x| f(Value::Float(x))),
        },
        serde_json::Value::String(s) => f(Value::Str(s)),
        serde_json::Value::Array(_) | serde_json::Value::Object(_) => {
            f(Value::Object(Obj::Json(v)))
        }
    }
}
