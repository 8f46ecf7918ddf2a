//! A packet's zero value by its definition: every field present, numbers
//! 0, text empty, arrays empty, a mapper's first name, an option absent,
//! each switch at the case the zero values before it select. The Bedrock
//! client and server start from it and set the fields they mean
//! ([`super::Definitions::zero`]), so one builder serves every version.

use serde_json::{Map, Value};

use super::compile::{Compiled, Count, Node, NodeId};
use super::decode::MAX_DEPTH;

/// The zero value of node `id` of `c`.
pub(crate) fn zero(c: &Compiled, id: NodeId) -> Value {
    Zero {
        c,
        scopes: Vec::new(),
        depth: 0,
    }
    .value(id)
}

struct Zero<'a> {
    c: &'a Compiled,
    scopes: Vec<Map<String, Value>>,
    depth: usize,
}

impl Zero<'_> {
    fn value(&mut self, id: NodeId) -> Value {
        if self.depth >= MAX_DEPTH {
            return Value::Null;
        }
        self.depth += 1;
        let v = self.node(id);
        self.depth -= 1;
        v
    }

    fn node(&mut self, id: NodeId) -> Value {
        let c = self.c;
        match &c.nodes[id as usize] {
            Node::Num(_) | Node::ByteRot => Value::from(0),
            Node::Bool => Value::Bool(false),
            Node::Void | Node::Option(_) | Node::OptionalOnRemaining(_) | Node::Unknown(_) => {
                Value::Null
            }
            Node::Uuid => Value::String("00000000-0000-0000-0000-000000000000".into()),
            Node::PString(_) | Node::Cstring | Node::RestBuffer => Value::String(String::new()),
            Node::Buffer(Count::Fixed(n)) => Value::String("00".repeat(*n)),
            Node::Buffer(_) => Value::String(String::new()),
            Node::Container(fields) => {
                self.scopes.push(Map::new());
                for (name, node) in fields {
                    let v = self.value(*node);
                    let top = self.scopes.last_mut().expect("pushed above");
                    match (name, v) {
                        (Some(n), v) => {
                            top.insert(n.to_string(), v);
                        }
                        (None, Value::Object(m)) => top.extend(m),
                        (None, _) => {}
                    }
                }
                Value::Object(self.scopes.pop().unwrap_or_default())
            }
            Node::Switch {
                compare,
                cases,
                default,
            } => {
                let key = compare.key(|p| super::compile::lookup(&self.scopes, p));
                match cases
                    .iter()
                    .find(|(k, _)| **k == *key)
                    .map(|(_, n)| *n)
                    .or(*default)
                {
                    Some(n) => self.value(n),
                    None => Value::Null,
                }
            }
            Node::Array {
                count: Count::Fixed(n),
                of,
            } => Value::Array((0..*n).map(|_| self.value(*of)).collect()),
            Node::Array { .. } | Node::MaybeIncompleteArray { .. } | Node::NbtLoop => {
                Value::Array(Vec::new())
            }
            Node::Mapper { map, .. } => map
                .iter()
                .find(|(k, _)| &**k == "0")
                .or(map.first())
                .map_or(Value::from(0), |(_, v)| v.clone()),
            Node::Bitfield(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(n, ..)| (n.to_string(), Value::from(0)))
                    .collect(),
            ),
            Node::Bitflags { flags, .. } => {
                let mut m = Map::new();
                m.insert("_value".into(), Value::from(0));
                for (n, _) in flags {
                    m.insert(n.to_string(), Value::Bool(false));
                }
                Value::Object(m)
            }
            Node::Encapsulated { inner, .. } => self.value(*inner),
            Node::EnumSize => Value::String("byte".into()),
            Node::Nbt { .. } => serde_json::json!({"type": "compound", "name": "", "value": {}}),
        }
    }
}
