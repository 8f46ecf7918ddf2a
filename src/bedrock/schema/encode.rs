//! The interpreter's other direction: a JSON tree of fields (as
//! [`super::decode`] makes them) written back to a packet's bytes by its
//! compiled definition. Decoding then encoding gives the packet's bytes
//! back (tested on every packet type bedrock-protocol serialises); the
//! Bedrock client and server of `peer/` will build packets with it.

use serde_json::{Map, Value};

use super::compile::{Compiled, Count, Node, NodeId, Num};
use super::decode::{Session, MAX_DEPTH};

/// Why fields could not be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeError {
    /// The field: `a.b[3].c`.
    pub(crate) field: String,
    pub(crate) what: String,
}

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.what)
    }
}

/// Write `v` as node `root` of `c`, appending to `out`.
pub(crate) fn encode(
    c: &Compiled,
    root: NodeId,
    v: &Value,
    s: Session,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    Encoder {
        c,
        s,
        scopes: Vec::new(),
        path: Vec::new(),
    }
    .value(root, v, out)
}

struct Encoder<'a, 'v> {
    c: &'a Compiled,
    s: Session,
    /// The objects of the containers being written, innermost last.
    scopes: Vec<&'v Map<String, Value>>,
    path: Vec<String>,
}

fn leb(mut v: u128, out: &mut Vec<u8>) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

impl<'a, 'v> Encoder<'a, 'v> {
    fn err(&self, what: String) -> EncodeError {
        let mut field = String::new();
        for p in &self.path {
            if !field.is_empty() && !p.starts_with('[') {
                field.push('.');
            }
            field.push_str(p);
        }
        EncodeError { field, what }
    }

    /// An integer from a JSON number or a decimal string. A varint128
    /// past `i128::MAX` (the decoder writes it as a decimal string) comes
    /// back as the `i128` of the same bits, which encodes to it again.
    fn int(&self, v: &Value) -> Result<i128, EncodeError> {
        match v {
            Value::Number(n) => n
                .as_i64()
                .map(i128::from)
                .or_else(|| n.as_u64().map(i128::from))
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i128)),
            Value::String(s) => s
                .parse()
                .ok()
                .or_else(|| s.parse::<u128>().ok().map(|u| u as i128)),
            Value::Bool(b) => Some(i128::from(*b)),
            _ => None,
        }
        .ok_or_else(|| self.err(format!("{v} is not an integer")))
    }

    fn float(&self, v: &Value) -> Result<f64, EncodeError> {
        match v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        }
        .ok_or_else(|| self.err(format!("{v} is not a number")))
    }

    fn num(&self, n: Num, v: &Value, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        use Num::*;
        match n {
            F32 => out.extend((self.float(v)? as f32).to_be_bytes()),
            F64 => out.extend(self.float(v)?.to_be_bytes()),
            Lf32 => out.extend((self.float(v)? as f32).to_le_bytes()),
            Lf64 => out.extend(self.float(v)?.to_le_bytes()),
            _ => {
                let i = self.int(v)?;
                match n {
                    I8 | U8 => out.push(i as u8),
                    I16 | U16 => out.extend((i as u16).to_be_bytes()),
                    I32 | U32 => out.extend((i as u32).to_be_bytes()),
                    I64 | U64 => out.extend((i as u64).to_be_bytes()),
                    Li16 | Lu16 => out.extend((i as u16).to_le_bytes()),
                    Li32 | Lu32 => out.extend((i as u32).to_le_bytes()),
                    Li64 | Lu64 => out.extend((i as u64).to_le_bytes()),
                    Varint => leb(u128::from(i as u32), out),
                    Varint64 => leb(u128::from(i as u64), out),
                    Varint128 => leb(i as u128, out),
                    Zigzag32 => {
                        let i = i as i32;
                        leb(u128::from(((i << 1) ^ (i >> 31)) as u32), out)
                    }
                    Zigzag64 => {
                        let i = i as i64;
                        leb(u128::from(((i << 1) ^ (i >> 63)) as u64), out)
                    }
                    F32 | F64 | Lf32 | Lf64 => unreachable!("floats above"),
                }
            }
        }
        Ok(())
    }

    fn lookup(&self, path: &[Box<str>]) -> Option<&Value> {
        super::compile::lookup(&self.scopes, path)
    }

    /// A count written before its elements (none when the count is a
    /// field written before, or fixed).
    fn count(&self, c: &Count, n: usize, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        match c {
            Count::Prefix(id) => {
                let Node::Num(num) = &self.c.nodes[*id as usize] else {
                    return Err(self.err("a count of a type that is not a number".into()));
                };
                self.num(*num, &Value::from(n as u64), out)
            }
            Count::Field(_) => Ok(()),
            Count::Fixed(f) if *f == n => Ok(()),
            Count::Fixed(f) => Err(self.err(format!("{n} elements, {f} wanted"))),
        }
    }

    fn hex(&self, v: &Value) -> Result<Vec<u8>, EncodeError> {
        v.as_str()
            .and_then(|s| crate::wire::cursor::parse_hex(s).ok())
            .ok_or_else(|| self.err(format!("{v} is not hex")))
    }

    fn value(&mut self, id: NodeId, v: &'v Value, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        if self.path.len() > MAX_DEPTH * 4 {
            return Err(self.err("nested too deep".into()));
        }
        let c = self.c;
        match &c.nodes[id as usize] {
            Node::Num(n) => self.num(*n, v, out)?,
            Node::Bool => out.push(u8::from(v.as_bool().unwrap_or(self.int(v)? != 0))),
            Node::Void | Node::EnumSize => {}
            Node::Uuid => {
                let s = v.as_str().unwrap_or("");
                let h: String = s.chars().filter(|c| *c != '-').collect();
                let mut b = crate::wire::cursor::parse_hex(&h)
                    .ok()
                    .filter(|b| b.len() == 16)
                    .ok_or_else(|| self.err(format!("{v} is not a UUID")))?;
                b[..8].reverse();
                b[8..].reverse();
                out.extend(b);
            }
            Node::ByteRot => out.push((self.float(v)? / (360.0 / 256.0)).round() as u8),
            Node::PString(count) => {
                let s = v
                    .as_str()
                    .ok_or_else(|| self.err(format!("{v} is not text")))?;
                self.count(count, s.len(), out)?;
                out.extend(s.as_bytes());
            }
            Node::Cstring => {
                out.extend(v.as_str().unwrap_or("").as_bytes());
                out.push(0);
            }
            Node::Buffer(count) => {
                let b = self.hex(v)?;
                self.count(count, b.len(), out)?;
                out.extend(b);
            }
            Node::RestBuffer => out.extend(self.hex(v)?),
            Node::Container(fields) => {
                let obj = v
                    .as_object()
                    .ok_or_else(|| self.err(format!("{v} is not an object")))?;
                self.scopes.push(obj);
                for (name, node) in fields {
                    let fv = match name {
                        Some(n) => obj.get(&**n).unwrap_or(&Value::Null),
                        None => v,
                    };
                    self.path.push(name.as_deref().unwrap_or("").to_string());
                    let r = self.value(*node, fv, out);
                    self.path.pop();
                    if let Err(e) = r {
                        self.scopes.pop();
                        return Err(e);
                    }
                }
                self.scopes.pop();
            }
            Node::Switch {
                compare,
                cases,
                default,
            } => {
                let key = compare.key(|p| self.lookup(p));
                let shield = self.s.shield_item_id.map(|s| s.to_string());
                let case = cases
                    .iter()
                    .find(|(k, _)| match k.strip_prefix('/') {
                        Some("ShieldItemID") => shield.as_deref() == Some(&*key),
                        _ => **k == *key,
                    })
                    .map(|(_, n)| *n)
                    .or(*default);
                if let Some(n) = case {
                    self.value(n, v, out)?;
                }
            }
            Node::Array { count, of } => {
                let items = self.items(v)?;
                self.count(count, items.len(), out)?;
                self.elements(*of, items, out)?;
            }
            Node::MaybeIncompleteArray { count, of } => {
                let items = self.items(v)?;
                let Node::Num(n) = &c.nodes[*count as usize] else {
                    return Err(self.err("a count that is not a number".into()));
                };
                self.num(*n, &Value::from(items.len() as u64), out)?;
                self.elements(*of, items, out)?;
            }
            Node::Mapper { ty, map, .. } => {
                // A name several numbers map to is written as ProtoDef's
                // writer does: the last of them in a JavaScript object's
                // key order (array indices ascending, then the rest in
                // order).
                let order = |(i, (k, _)): &(usize, &(Box<str>, Value))| match k.parse::<u32>() {
                    Ok(n) => (0, u64::from(n)),
                    Err(_) => (1, *i as u64),
                };
                let named = map.iter().enumerate().filter(|(_, (_, name))| name == v);
                let raw = match named.max_by_key(order) {
                    Some((_, (k, _))) => Value::String(k.to_string()),
                    None => v.clone(),
                };
                let Node::Num(n) = &c.nodes[*ty as usize] else {
                    return Err(self.err("a mapper of a type that is not a number".into()));
                };
                self.num(*n, &raw, out)?;
            }
            Node::Bitfield(fields) => {
                let bits: u32 = fields.iter().map(|f| u32::from(f.1)).sum();
                if !bits.is_multiple_of(8) || bits > 128 {
                    return Err(self.err(format!("a bitfield of {bits} bits")));
                }
                let mut all: u128 = 0;
                for (name, size, _) in fields {
                    let size = u32::from(*size);
                    let f = v.get(&**name).map_or(Ok(0), |x| self.int(x))?;
                    let mask = if size >= 128 {
                        u128::MAX
                    } else {
                        (1u128 << size) - 1
                    };
                    all = all.checked_shl(size).unwrap_or(0) | (f as u128 & mask);
                }
                let bytes = all.to_be_bytes();
                out.extend(&bytes[16 - bits as usize / 8..]);
            }
            Node::Option(inner) => {
                if v.is_null() {
                    out.push(0);
                } else {
                    out.push(1);
                    self.value(*inner, v, out)?;
                }
            }
            Node::Bitflags { ty, .. } => {
                let raw = v.get("_value").unwrap_or(&Value::Null);
                self.value(*ty, raw, out)?;
            }
            Node::Encapsulated { len, inner } => {
                let mut body = Vec::new();
                if !v.is_null() {
                    self.value(*inner, v, &mut body)?;
                }
                let Node::Num(n) = &c.nodes[*len as usize] else {
                    return Err(self.err("a length of a type that is not a number".into()));
                };
                self.num(*n, &Value::from(body.len() as u64), out)?;
                out.extend(body);
            }
            Node::OptionalOnRemaining(inner) => {
                if !v.is_null() {
                    self.value(*inner, v, out)?;
                }
            }
            Node::Nbt { varint } => self.nbt(*varint, v, out)?,
            Node::NbtLoop => {
                for t in v.as_array().into_iter().flatten() {
                    self.nbt(true, t, out)?;
                }
                out.push(0);
            }
            Node::Unknown(what) => {
                return Err(self.err(format!("no encoder for the type {what}")));
            }
        }
        Ok(())
    }

    fn items(&self, v: &'v Value) -> Result<&'v [Value], EncodeError> {
        v.as_array()
            .map(Vec::as_slice)
            .ok_or_else(|| self.err(format!("{v} is not an array")))
    }

    fn elements(
        &mut self,
        of: NodeId,
        items: &'v [Value],
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        for (i, item) in items.iter().enumerate() {
            self.path.push(format!("[{i}]"));
            let r = self.value(of, item, out);
            self.path.pop();
            r?;
        }
        Ok(())
    }

    fn nbt_string(&self, s: &str, varint: bool, out: &mut Vec<u8>) {
        if varint {
            leb(s.len() as u128, out);
        } else {
            out.extend((s.len() as u16).to_le_bytes());
        }
        out.extend(s.as_bytes());
    }

    fn nbt_len(&self, n: usize, varint: bool, out: &mut Vec<u8>) {
        if varint {
            let i = n as i32;
            leb(u128::from(((i << 1) ^ (i >> 31)) as u32), out);
        } else {
            out.extend((n as i32).to_le_bytes());
        }
    }

    fn nbt(&self, varint: bool, v: &Value, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let tag = tag_of(v["type"].as_str().unwrap_or(""))
            .ok_or_else(|| self.err(format!("{} is not an NBT tag", v["type"])))?;
        out.push(tag);
        if tag == 0 {
            return Ok(());
        }
        self.nbt_string(v["name"].as_str().unwrap_or(""), varint, out);
        self.nbt_payload(tag, varint, &v["value"], out, 0)
    }

    fn nbt_payload(
        &self,
        tag: u8,
        varint: bool,
        v: &Value,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), EncodeError> {
        if depth > MAX_DEPTH {
            return Err(self.err("NBT nested too deep".into()));
        }
        use Num::*;
        let (int32, int64) = if varint {
            (Zigzag32, Zigzag64)
        } else {
            (Li32, Li64)
        };
        match tag {
            1 => self.num(I8, v, out)?,
            2 => self.num(Li16, v, out)?,
            3 => self.num(int32, v, out)?,
            4 => self.num(int64, v, out)?,
            5 => self.num(Lf32, v, out)?,
            6 => self.num(Lf64, v, out)?,
            7 | 11 | 12 => {
                let items = v.as_array().map(Vec::as_slice).unwrap_or(&[]);
                self.nbt_len(items.len(), varint, out);
                let kind = match tag {
                    7 => I8,
                    11 => Li32,
                    _ => Li64,
                };
                for i in items {
                    self.num(kind, i, out)?;
                }
            }
            8 => self.nbt_string(v.as_str().unwrap_or(""), varint, out),
            9 => {
                let inner = tag_of(v["type"].as_str().unwrap_or("")).unwrap_or(0);
                out.push(inner);
                let items = v["value"].as_array().map(Vec::as_slice).unwrap_or(&[]);
                self.nbt_len(items.len(), varint, out);
                for i in items {
                    self.nbt_payload(inner, varint, i, out, depth + 1)?;
                }
            }
            10 => {
                for (name, e) in v.as_object().into_iter().flatten() {
                    let t = tag_of(e["type"].as_str().unwrap_or(""))
                        .ok_or_else(|| self.err(format!("{} is not an NBT tag", e["type"])))?;
                    out.push(t);
                    self.nbt_string(name, varint, out);
                    self.nbt_payload(t, varint, &e["value"], out, depth + 1)?;
                }
                out.push(0);
            }
            _ => {}
        }
        Ok(())
    }
}

fn tag_of(name: &str) -> Option<u8> {
    Some(match name {
        "end" => 0,
        "byte" => 1,
        "short" => 2,
        "int" => 3,
        "long" => 4,
        "float" => 5,
        "double" => 6,
        "byteArray" => 7,
        "string" => 8,
        "list" => 9,
        "compound" => 10,
        "intArray" => 11,
        "longArray" => 12,
        _ => return None,
    })
}
