//! Every field of every game packet, from minecraft-data's definitions.
//!
//! `schema.json.z` beside this module's parent is made by
//! `scripts/bedrock-schema.py` from minecraft-data 3.119.0 (MIT: see
//! `LICENSE-minecraft-data`): the `protocol.json` types of every version from
//! 1.16.201, each distinct definition once, a table per version from type
//! name to definition, zlib-compressed (323 KB for 55 versions). It is
//! inflated and parsed on first use; each protocol's table is compiled
//! (`compile`) when a flow of that protocol first needs it, and packets
//! are walked by `decode`.
//!
//! A protocol number the data does not know uses the nearest older one
//! (the nearest newer one below the oldest), as packet names do. Where
//! minecraft-data and Mojang's published layouts disagree, the
//! definitions are corrected as they are compiled (`corrections.rs`).

pub mod compare;
pub(crate) mod compile;
pub(crate) mod corrections;
pub(crate) mod decode;
pub(crate) mod encode;
pub(crate) mod lean;
pub(crate) mod zero;

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

pub(crate) use compile::{Compiled, NodeId};
pub use decode::{DecodeError, Session, Shown, Span};

/// The generated data, embedded.
const DATA: &[u8] = include_bytes!("../schema.json.z");

/// The parsed data: each definition kept as its JSON text, parsed when a
/// protocol's table is compiled.
struct Schema {
    defs: Vec<Box<serde_json::value::RawValue>>,
    tables: Vec<HashMap<String, usize>>,
    /// Ascending protocol numbers and their table.
    protocols: Vec<(u32, usize)>,
}

#[derive(serde::Deserialize)]
struct Data {
    defs: Vec<Box<serde_json::value::RawValue>>,
    tables: Vec<HashMap<String, usize>>,
    protocols: Vec<(u32, usize)>,
}

fn schema() -> &'static Schema {
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(|| {
        let mut text = Vec::new();
        flate2::read::ZlibDecoder::new(DATA)
            .read_to_end(&mut text)
            .expect("the embedded definitions inflate");
        let d: Data = serde_json::from_slice(&text).expect("the embedded definitions parse");
        Schema {
            defs: d.defs,
            tables: d.tables,
            protocols: d.protocols,
        }
    })
}

/// The protocol number whose definitions serve `protocol`: itself when
/// known, else the nearest older (or, below all, the oldest).
pub(crate) fn nearest(protocol: u32) -> u32 {
    let ps = &schema().protocols;
    match ps.binary_search_by_key(&protocol, |p| p.0) {
        Ok(i) => ps[i].0,
        Err(0) => ps.first().map_or(protocol, |p| p.0),
        Err(i) => ps[i - 1].0,
    }
}

/// The protocol numbers the definitions are for, ascending.
pub fn protocols() -> Vec<u32> {
    schema().protocols.iter().map(|p| p.0).collect()
}

/// Whether a correction ([`corrections`]) changes packet `name`'s layout
/// in `protocol` (the nearest known): on its own type or on a type it
/// uses. There, minecraft-data's readers (bedrock-protocol's) and ours
/// read the same bytes differently.
#[cfg(test)]
pub(crate) fn corrected(protocol: u32, name: &str) -> bool {
    let s = schema();
    let number = nearest(protocol);
    let Some(&(_, table)) = s.protocols.iter().find(|p| p.0 == number) else {
        return false;
    };
    let types: std::collections::HashSet<&str> = corrections::all()
        .iter()
        .filter(|c| c.covers(number))
        .map(|c| c.ty.as_str())
        .collect();
    // The types the packet's definition names, and theirs, in turn.
    let mut seen = std::collections::HashSet::new();
    let mut todo = vec![format!("packet_{name}")];
    while let Some(ty) = todo.pop() {
        if types.contains(ty.as_str()) {
            return true;
        }
        let Some(raw) = s.tables[table].get(&ty).and_then(|&i| s.defs.get(i)) else {
            continue;
        };
        let Ok(def) = serde_json::from_str::<Value>(raw.get()) else {
            continue;
        };
        let mut stack = vec![&def];
        while let Some(v) = stack.pop() {
            match v {
                Value::String(t) if s.tables[table].contains_key(t) && seen.insert(t.clone()) => {
                    todo.push(t.clone());
                }
                Value::Array(a) => stack.extend(a),
                Value::Object(m) => stack.extend(m.values()),
                _ => {}
            }
        }
        seen.insert(ty);
    }
    false
}

/// One protocol's definitions, compiled.
#[derive(Debug)]
pub struct Definitions {
    /// The protocol number they are minecraft-data's for.
    pub(crate) protocol: u32,
    compiled: Compiled,
    /// Packet id → (name, its parameters' node).
    packets: HashMap<u16, (String, NodeId)>,
}

/// A protocol's table of definitions: the schema, the table's index, the
/// protocol (for the corrections that apply to it).
struct Table<'a>(&'a Schema, usize, u32);

impl compile::Types for Table<'_> {
    fn def(&self, name: &str) -> Option<Value> {
        let raw = self.0.defs.get(*self.0.tables[self.1].get(name)?)?;
        let mut def = serde_json::from_str(raw.get()).ok()?;
        corrections::correct(name, self.2, &mut def);
        Some(def)
    }
}

/// The definitions for `protocol` (the nearest known), compiled once per
/// process and shared.
pub fn definitions(protocol: u32) -> Option<Arc<Definitions>> {
    static MADE: OnceLock<Mutex<HashMap<usize, Arc<Definitions>>>> = OnceLock::new();
    let s = schema();
    let number = nearest(protocol);
    let &(_, table) = s.protocols.iter().find(|p| p.0 == number)?;
    let mut made = MADE.get_or_init(Default::default).lock().ok()?;
    if let Some(d) = made.get(&table) {
        return Some(Arc::clone(d));
    }
    let d = Arc::new(Definitions::compile(s, table, number));
    made.insert(table, Arc::clone(&d));
    Some(d)
}

impl Definitions {
    fn compile(s: &Schema, table: usize, protocol: u32) -> Self {
        let types = Table(s, table, protocol);
        let mut compiled = Compiled::default();
        let mut packets = HashMap::new();
        // mcpe_packet: a `name` mapper (id → name), then a `params` switch
        // (name → the parameters' type).
        let packet = compile::Types::def(&types, "mcpe_packet");
        let fields = packet
            .as_ref()
            .and_then(|d| d.get(1))
            .and_then(Value::as_array);
        let field =
            |n: &str| fields.and_then(|fs| fs.iter().find(|f| f["name"] == n).map(|f| &f["type"]));
        let ids = field("name").and_then(|t| t[1]["mappings"].as_object());
        let params = field("params").and_then(|t| t[1]["fields"].as_object());
        if let (Some(ids), Some(params)) = (ids, params) {
            for (id, name) in ids {
                let (Ok(id), Some(name)) = (id.parse::<u16>(), name.as_str()) else {
                    continue;
                };
                if let Some(ty) = params.get(name).and_then(Value::as_str) {
                    let node = compiled.named(ty, &types);
                    packets.insert(id, (name.to_string(), node));
                }
            }
        }
        Definitions {
            protocol,
            compiled,
            packets,
        }
    }

    /// The name of packet `id` in these definitions.
    pub(crate) fn name(&self, id: u16) -> Option<&str> {
        self.packets.get(&id).map(|p| p.0.as_str())
    }

    /// Packet `id`'s fields from its body (the bytes after its header);
    /// `None` when these definitions have no such packet.
    pub fn decode(&self, id: u16, body: &[u8], s: Session) -> Option<Result<Value, DecodeError>> {
        let &(_, node) = self.packets.get(&id)?;
        Some(decode::decode(&self.compiled, node, body, s))
    }

    /// [`Definitions::decode`], the value as the interpreter builds it
    /// (borrowing from these definitions and from `body`, its arrays and
    /// objects in `arena`).
    pub(crate) fn decode_lean<'a>(
        &'a self,
        id: u16,
        body: &'a [u8],
        s: Session,
        arena: &'a bumpalo::Bump,
    ) -> Option<Result<lean::Lean<'a>, decode::Stopped<'a>>> {
        let &(_, node) = self.packets.get(&id)?;
        Some(decode::decode_lean(&self.compiled, node, body, s, arena))
    }

    /// [`Definitions::decode`], and where each field is in the body
    /// ([`decode::decode_traced`]): for the `-V` tree.
    pub(crate) fn decode_traced(
        &self,
        id: u16,
        body: &[u8],
        s: Session,
    ) -> Option<Result<decode::Traced, DecodeError>> {
        let &(_, node) = self.packets.get(&id)?;
        Some(decode::decode_traced(&self.compiled, node, body, s))
    }

    /// Packet `id`'s body (the bytes after its header) from its fields.
    pub fn encode(
        &self,
        id: u16,
        fields: &Value,
        s: Session,
    ) -> Option<Result<Vec<u8>, encode::EncodeError>> {
        let &(_, node) = self.packets.get(&id)?;
        let mut out = Vec::new();
        Some(encode::encode(&self.compiled, node, fields, s, &mut out).map(|()| out))
    }

    /// The id of the packet named `name`.
    pub(crate) fn id(&self, name: &str) -> Option<u16> {
        self.packets
            .iter()
            .find(|(_, (n, _))| n == name)
            .map(|(&id, _)| id)
    }

    /// Packet `name`'s zero value ([`zero`]): every field, set to nothing.
    pub(crate) fn zero(&self, name: &str) -> Option<Value> {
        let &(_, node) = self.packets.get(&self.id(name)?)?;
        Some(zero::zero(&self.compiled, node))
    }

    /// Packet `name` from its fields, header (sub-clients 0) included.
    pub(crate) fn packet(&self, name: &str, fields: &Value, s: Session) -> Result<Vec<u8>, String> {
        let id = self
            .id(name)
            .ok_or_else(|| format!("protocol {} has no packet {name}", self.protocol))?;
        let body = self
            .encode(id, fields, s)
            .ok_or_else(|| format!("protocol {} has no packet {name}", self.protocol))?
            .map_err(|e| format!("{name}: {e}"))?;
        let mut out = Vec::with_capacity(body.len() + 2);
        crate::bedrock::batch::write_varu32(&mut out, u32::from(id));
        out.extend(body);
        Ok(out)
    }

    /// Packets these definitions have.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.packets.len()
    }
}

#[cfg(test)]
mod tests;
