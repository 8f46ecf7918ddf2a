//! ProtoDef JSON (minecraft-data's `protocol.json` types) turned into a
//! tree of [`Node`]s in one arena per protocol table: named types resolved
//! to their node once (recursive types too), option objects parsed, so the
//! decoder walks plain enums.

use std::collections::HashMap;

use serde_json::Value;

/// A node's index in [`Compiled::nodes`].
pub(crate) type NodeId = u32;

/// A number on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Num {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    Li16,
    Lu16,
    Li32,
    Lu32,
    Li64,
    Lu64,
    F32,
    F64,
    Lf32,
    Lf64,
    /// Unsigned LEB128, 32 bits.
    Varint,
    /// Unsigned LEB128, 64 bits.
    Varint64,
    /// Unsigned LEB128, 128 bits.
    Varint128,
    Zigzag32,
    Zigzag64,
}

/// How many elements, bytes or characters.
#[derive(Debug, Clone)]
pub(crate) enum Count {
    /// A number read first.
    Prefix(NodeId),
    /// A field read before (`count: "values_len"`).
    Field(Box<str>),
    Fixed(usize),
}

/// A field named in a `switch`'s `compareTo`: a path of names, `..` to go
/// up a container; several joined by `||`.
#[derive(Debug, Clone)]
pub(crate) struct Compare(pub(crate) Vec<Vec<Box<str>>>);

/// A container's fields in wire order (`None`: an anonymous field, whose
/// object's members are the container's), and the order its members are
/// written in, worked out once here rather than sorted for every packet.
#[derive(Debug, Clone)]
pub(crate) struct Fields {
    list: Vec<(Option<Box<str>>, NodeId)>,
    /// Sorted by name, each name once: the index of the field that gives
    /// each member (the last of a name), as `lean::sort_members` leaves
    /// them. `None` when an anonymous field adds members only a packet
    /// knows (they are sorted then).
    pub(crate) order: Option<Box<[u16]>>,
}

impl Fields {
    fn new(list: Vec<(Option<Box<str>>, NodeId)>) -> Fields {
        let order = list
            .iter()
            .map(|(name, _)| name.as_deref())
            .collect::<Option<Vec<&str>>>()
            .filter(|_| list.len() <= usize::from(u16::MAX))
            .map(|names| {
                let mut at: Vec<u16> = (0..names.len() as u16).collect();
                // Stable: of a name given twice, the last stays last.
                at.sort_by_key(|&i| names[usize::from(i)]);
                let mut kept: Vec<u16> = Vec::with_capacity(at.len());
                for i in at {
                    match kept.last_mut() {
                        Some(last) if names[usize::from(*last)] == names[usize::from(i)] => {
                            *last = i
                        }
                        _ => kept.push(i),
                    }
                }
                kept.into_boxed_slice()
            });
        Fields { list, order }
    }
}

impl std::ops::Deref for Fields {
    type Target = [(Option<Box<str>>, NodeId)];
    fn deref(&self) -> &Self::Target {
        &self.list
    }
}

impl<'a> IntoIterator for &'a Fields {
    type Item = &'a (Option<Box<str>>, NodeId);
    type IntoIter = std::slice::Iter<'a, (Option<Box<str>>, NodeId)>;
    fn into_iter(self) -> Self::IntoIter {
        self.list.iter()
    }
}

/// One definition.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    Num(Num),
    Bool,
    Void,
    /// 16 bytes.
    Uuid,
    /// A rotation in a byte (360/256 degrees each).
    ByteRot,
    /// Text with a length before it.
    PString(Count),
    Cstring,
    Buffer(Count),
    RestBuffer,
    Container(Fields),
    Switch {
        compare: Compare,
        cases: Vec<(Box<str>, NodeId)>,
        default: Option<NodeId>,
    },
    Array {
        count: Count,
        of: NodeId,
    },
    /// Numbers to names: keys in decimal, values as ProtoDef reads them
    /// (`"true"`/`"false"` booleans, numeric strings numbers).
    Mapper {
        ty: NodeId,
        map: Vec<(Box<str>, Value)>,
        /// Each key as a number, when it is one (read numbers are
        /// matched without text).
        nums: Box<[Option<i64>]>,
    },
    Bitfield(Vec<(Box<str>, u8, bool)>),
    Option(NodeId),
    Bitflags {
        ty: NodeId,
        flags: Vec<(Box<str>, u128)>,
    },
    Encapsulated {
        len: NodeId,
        inner: NodeId,
    },
    MaybeIncompleteArray {
        count: NodeId,
        of: NodeId,
    },
    OptionalOnRemaining(NodeId),
    /// `byte`, `short` or `int` by the `values_len` read before.
    EnumSize,
    /// NBT, little-endian with varints (`nbt`) or plain little-endian (`lnbt`).
    Nbt {
        varint: bool,
    },
    /// NBT values until a zero byte.
    NbtLoop,
    /// A name the definitions declare and nothing implements (MapInfo), or
    /// a form this decoder does not know: decoding stops there.
    Unknown(Box<str>),
}

/// One protocol table's types, compiled.
#[derive(Debug, Default)]
pub(crate) struct Compiled {
    pub(crate) nodes: Vec<Node>,
    /// Named types compiled so far.
    pub(crate) named: HashMap<Box<str>, NodeId>,
}

/// A named type's definition, or none.
pub(crate) trait Types {
    fn def(&self, name: &str) -> Option<Value>;
}

impl Compiled {
    /// The node of named type `name` (compiled on first use).
    pub(crate) fn named(&mut self, name: &str, types: &dyn Types) -> NodeId {
        if let Some(&id) = self.named.get(name) {
            return id;
        }
        if let Some(n) = native(name) {
            return self.push_named(name, n);
        }
        let Some(def) = types.def(name) else {
            return self.push_named(name, Node::Unknown(name.into()));
        };
        let def = &def;
        if def.as_str() == Some("native") {
            return self.push_named(name, Node::Unknown(name.into()));
        }
        // Reserve the id first: a type may refer to itself.
        let id = self.push_named(name, Node::Void);
        let node = self.node(def, types);
        self.nodes[id as usize] = self.nodes[node as usize].clone();
        id
    }

    fn push_named(&mut self, name: &str, n: Node) -> NodeId {
        let id = self.push(n);
        self.named.insert(name.into(), id);
        id
    }

    fn push(&mut self, n: Node) -> NodeId {
        self.nodes.push(n);
        (self.nodes.len() - 1) as NodeId
    }

    /// A definition: a type name, or `[kind, options]`.
    fn node(&mut self, def: &Value, types: &dyn Types) -> NodeId {
        match def {
            Value::String(name) => self.named(name, types),
            Value::Array(a) => match (a.first().and_then(Value::as_str), a.get(1)) {
                (Some(kind), Some(opts)) => {
                    let n = self.form(kind, opts, types);
                    self.push(n)
                }
                (Some("enum_size_based_on_values_len"), None) => self.push(Node::EnumSize),
                _ => self.push(Node::Unknown(format!("{def}").into())),
            },
            _ => self.push(Node::Unknown(format!("{def}").into())),
        }
    }

    fn count(&mut self, o: &Value, prefix_key: &str, types: &dyn Types) -> Option<Count> {
        if let Some(t) = o.get(prefix_key) {
            return Some(Count::Prefix(self.node(t, types)));
        }
        match o.get("count")? {
            Value::Number(n) => n.as_u64().map(|n| Count::Fixed(n as usize)),
            Value::String(s) => Some(Count::Field(s.as_str().into())),
            _ => None,
        }
    }

    fn form(&mut self, kind: &str, o: &Value, types: &dyn Types) -> Node {
        let unknown = || Node::Unknown(format!("[\"{kind}\", {o}]").into());
        match kind {
            "container" => {
                let Some(fields) = o.as_array() else {
                    return unknown();
                };
                let mut out = Vec::with_capacity(fields.len());
                for f in fields {
                    let node = match f.get("type") {
                        Some(t) => self.node(t, types),
                        None => return unknown(),
                    };
                    let anon = f.get("anon").and_then(Value::as_bool).unwrap_or(false);
                    let name = f.get("name").and_then(Value::as_str);
                    out.push(((!anon).then(|| name.unwrap_or("?").into()), node));
                }
                Node::Container(Fields::new(out))
            }
            "switch" => {
                let compare = o
                    .get("compareTo")
                    .and_then(Value::as_str)
                    .map(parse_compare)
                    .unwrap_or(Compare(Vec::new()));
                let mut cases = Vec::new();
                if let Some(fields) = o.get("fields").and_then(Value::as_object) {
                    for (k, v) in fields {
                        cases.push((k.as_str().into(), self.node(v, types)));
                    }
                }
                let default = o.get("default").map(|d| self.node(d, types));
                Node::Switch {
                    compare,
                    cases,
                    default,
                }
            }
            "array" => {
                let (Some(count), Some(t)) = (self.count(o, "countType", types), o.get("type"))
                else {
                    return unknown();
                };
                Node::Array {
                    count,
                    of: self.node(t, types),
                }
            }
            "pstring" => match self.count(o, "countType", types) {
                Some(c) => Node::PString(c),
                None => unknown(),
            },
            "buffer" => {
                if o.get("rest").and_then(Value::as_bool) == Some(true) {
                    return Node::RestBuffer;
                }
                match self.count(o, "countType", types) {
                    Some(c) => Node::Buffer(c),
                    None => unknown(),
                }
            }
            "mapper" => {
                let (Some(t), Some(m)) =
                    (o.get("type"), o.get("mappings").and_then(Value::as_object))
                else {
                    return unknown();
                };
                let ty = self.node(t, types);
                let map: Vec<(Box<str>, Value)> = m
                    .iter()
                    .map(|(k, v)| {
                        let key = k
                            .strip_prefix("0x")
                            .and_then(|h| i64::from_str_radix(h, 16).ok())
                            .map_or_else(|| k.as_str().into(), |n| n.to_string().into());
                        let v = v.as_str().unwrap_or("");
                        let value = match v {
                            "true" => Value::Bool(true),
                            "false" => Value::Bool(false),
                            _ => v
                                .parse::<i64>()
                                .map_or_else(|_| Value::String(v.into()), Value::from),
                        };
                        (key, value)
                    })
                    .collect();
                let nums = map.iter().map(|(k, _)| k.parse().ok()).collect();
                Node::Mapper { ty, map, nums }
            }
            "bitfield" => {
                let Some(fields) = o.as_array() else {
                    return unknown();
                };
                let mut out = Vec::new();
                for f in fields {
                    let name = f.get("name").and_then(Value::as_str).unwrap_or("?");
                    let size = f.get("size").and_then(Value::as_u64).unwrap_or(0).min(64) as u8;
                    let signed = f.get("signed").and_then(Value::as_bool).unwrap_or(false);
                    out.push((name.into(), size, signed));
                }
                Node::Bitfield(out)
            }
            "option" => Node::Option(self.node(o, types)),
            "bitflags" => {
                let Some(t) = o.get("type") else {
                    return unknown();
                };
                let ty = self.node(t, types);
                let shift = o.get("shift").and_then(Value::as_bool).unwrap_or(false);
                let mut flags = Vec::new();
                match o.get("flags") {
                    Some(Value::Array(a)) => {
                        for (i, n) in a.iter().enumerate().take(128) {
                            flags.push((n.as_str().unwrap_or("?").into(), 1u128 << i));
                        }
                    }
                    Some(Value::Object(m)) => {
                        for (k, v) in m {
                            let v = v.as_u64().unwrap_or(0);
                            let mask = if shift {
                                1u128.checked_shl(v as u32).unwrap_or(0)
                            } else {
                                u128::from(v)
                            };
                            flags.push((k.as_str().into(), mask));
                        }
                    }
                    _ => return unknown(),
                }
                Node::Bitflags { ty, flags }
            }
            "encapsulated" => {
                let (Some(l), Some(t)) = (o.get("lengthType"), o.get("type")) else {
                    return unknown();
                };
                Node::Encapsulated {
                    len: self.node(l, types),
                    inner: self.node(t, types),
                }
            }
            "maybeIncompleteArray" => {
                let (Some(c), Some(t)) = (o.get("countType"), o.get("type")) else {
                    return unknown();
                };
                Node::MaybeIncompleteArray {
                    count: self.node(c, types),
                    of: self.node(t, types),
                }
            }
            "optionalOnRemaining" => match o.get("type") {
                Some(t) => Node::OptionalOnRemaining(self.node(t, types)),
                None => unknown(),
            },
            _ => unknown(),
        }
    }
}

/// The value `path` names among `scopes` (the containers being read or
/// written, innermost last): `..` goes up one explicitly, then the first
/// scope outward that has the name, then into its objects.
pub(crate) fn lookup<'a, S: std::borrow::Borrow<serde_json::Map<String, Value>>>(
    scopes: &'a [S],
    path: &[Box<str>],
) -> Option<&'a Value> {
    lookup_in(scopes, path, |s, k| s.borrow().get(k), |v, k| v.get(k))
}

/// [`lookup`] over any scopes and values: `field` finds a name in a scope,
/// `member` a key in a value.
pub(crate) fn lookup_in<'a, S, V>(
    scopes: &'a [S],
    path: &[Box<str>],
    field: impl Fn(&'a S, &str) -> Option<&'a V>,
    member: impl Fn(&'a V, &str) -> Option<&'a V>,
) -> Option<&'a V> {
    let mut top = scopes.len();
    let mut i = 0;
    while path.get(i).is_some_and(|p| &**p == "..") {
        top = top.saturating_sub(1);
        i += 1;
    }
    let first = path.get(i)?;
    let mut v = scopes[..top].iter().rev().find_map(|s| field(s, first))?;
    for p in &path[i + 1..] {
        v = member(v, p)?;
    }
    Some(v)
}

/// A value a switch compares: what [`Compare::key`] reads of it.
pub(crate) trait Compared {
    /// Its text as ProtoDef compares it: a string's own, else its JSON.
    fn text(&self) -> std::borrow::Cow<'_, str>;
    /// Whether it counts as set in `a || b`: not false, null or 0.
    fn is_set(&self) -> bool;
}

impl Compared for Value {
    fn text(&self) -> std::borrow::Cow<'_, str> {
        use std::borrow::Cow;
        match self {
            Value::String(s) => Cow::Borrowed(s),
            Value::Bool(b) => Cow::Borrowed(if *b { "true" } else { "false" }),
            v => Cow::Owned(v.to_string()),
        }
    }

    fn is_set(&self) -> bool {
        !matches!(self, Value::Bool(false) | Value::Null) && *self != 0
    }
}

impl Compared for super::lean::Lean<'_> {
    fn text(&self) -> std::borrow::Cow<'_, str> {
        super::lean::Lean::text(self)
    }

    fn is_set(&self) -> bool {
        super::lean::Lean::is_set(self)
    }
}

impl Compare {
    /// The case a switch takes, as ProtoDef compares: the named value as
    /// text (`"undefined"` when absent); for `a || b`, whether any is set.
    pub(crate) fn key<'a, V: Compared + 'a>(
        &self,
        find: impl Fn(&[Box<str>]) -> Option<&'a V>,
    ) -> std::borrow::Cow<'a, str> {
        use std::borrow::Cow;
        if self.0.len() > 1 {
            let any = self.0.iter().any(|p| find(p).is_some_and(V::is_set));
            return Cow::Borrowed(if any { "true" } else { "false" });
        }
        match self.0.first().and_then(|p| find(p)) {
            Some(v) => v.text(),
            None => Cow::Borrowed("undefined"),
        }
    }
}

/// `compareTo`: `a`, `../a`, `a.b`, `a.b || c.d`.
fn parse_compare(s: &str) -> Compare {
    Compare(
        s.split("||")
            .map(|alt| {
                alt.trim()
                    .split('/')
                    .flat_map(|seg| {
                        let parts: Vec<&str> = if seg == ".." {
                            vec![seg]
                        } else {
                            seg.split('.').collect()
                        };
                        parts
                    })
                    .filter(|p| !p.is_empty())
                    .map(Into::into)
                    .collect::<Vec<Box<str>>>()
            })
            .collect(),
    )
}

/// ProtoDef's and bedrock-protocol's native types.
fn native(name: &str) -> Option<Node> {
    use Num::*;
    Some(match name {
        "i8" => Node::Num(I8),
        "u8" => Node::Num(U8),
        "i16" => Node::Num(I16),
        "u16" => Node::Num(U16),
        "i32" => Node::Num(I32),
        "u32" => Node::Num(U32),
        "i64" => Node::Num(I64),
        "u64" => Node::Num(U64),
        "li8" => Node::Num(I8),
        "lu8" => Node::Num(U8),
        "li16" => Node::Num(Li16),
        "lu16" => Node::Num(Lu16),
        "li32" => Node::Num(Li32),
        "lu32" => Node::Num(Lu32),
        "li64" => Node::Num(Li64),
        "lu64" => Node::Num(Lu64),
        "f32" => Node::Num(F32),
        "f64" => Node::Num(F64),
        "lf32" => Node::Num(Lf32),
        "lf64" => Node::Num(Lf64),
        "varint" => Node::Num(Varint),
        "varint64" => Node::Num(Varint64),
        "varint128" => Node::Num(Varint128),
        "zigzag32" => Node::Num(Zigzag32),
        "zigzag64" => Node::Num(Zigzag64),
        "bool" => Node::Bool,
        "void" => Node::Void,
        "uuid" => Node::Uuid,
        "byterot" => Node::ByteRot,
        "cstring" => Node::Cstring,
        "restBuffer" => Node::RestBuffer,
        "nbt" => Node::Nbt { varint: true },
        "lnbt" => Node::Nbt { varint: false },
        "nbtLoop" => Node::NbtLoop,
        "enum_size_based_on_values_len" => Node::EnumSize,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_containers_members_are_in_the_order_sorting_them_leaves() {
        let named = |n: &str, id| (Some(n.into()), id);
        let f = Fields::new(vec![
            named("b", 0),
            named("a", 1),
            named("b", 2),
            named("c", 3),
        ]);
        // Sorted by name, the later "b" kept, as `sort_members` does.
        assert_eq!(f.order.as_deref(), Some(&[1, 2, 3][..]));
        let arena = bumpalo::Bump::new();
        let mut m = bumpalo::vec![in &arena;
            ("b", super::super::lean::Lean::Int(0)),
            ("a", super::super::lean::Lean::Int(1)),
            ("b", super::super::lean::Lean::Int(2)),
            ("c", super::super::lean::Lean::Int(3)),
        ];
        super::super::lean::sort_members(&mut m);
        let sorted: Vec<i64> = m.iter().filter_map(|(_, v)| v.as_i64()).collect();
        let ordered: Vec<i64> = f.order.iter().flatten().map(|&i| i64::from(i)).collect();
        assert_eq!(sorted, ordered);
        // An anonymous field's members are known only once read.
        assert!(Fields::new(vec![named("b", 0), (None, 1)]).order.is_none());
    }

    struct T(serde_json::Map<String, Value>);
    impl Types for T {
        fn def(&self, name: &str) -> Option<Value> {
            self.0.get(name).cloned()
        }
    }

    #[test]
    fn named_types_resolve_once_and_recursion_ends() {
        let t = T(serde_json::from_str(
            r#"{"string":["pstring",{"countType":"varint"}],
                "tree":["container",[{"name":"n","type":"string"},
                    {"name":"kids","type":["array",{"countType":"varint","type":"tree"}]}]],
                "MapInfo":"native"}"#,
        )
        .unwrap());
        let mut c = Compiled::default();
        let a = c.named("tree", &t);
        let b = c.named("tree", &t);
        assert_eq!(a, b);
        let Node::Container(fields) = &c.nodes[a as usize] else {
            panic!("{:?}", c.nodes[a as usize]);
        };
        assert_eq!(fields.len(), 2);
        let Node::Array { of, .. } = &c.nodes[fields[1].1 as usize] else {
            panic!()
        };
        // The element is the tree itself.
        assert_eq!(*of, a);
        let (m, n) = (c.named("MapInfo", &t), c.named("nope", &t));
        assert!(matches!(c.nodes[m as usize], Node::Unknown(_)));
        assert!(matches!(c.nodes[n as usize], Node::Unknown(_)));
    }

    #[test]
    fn compare_paths() {
        let c = parse_compare("../a.b || c");
        assert_eq!(c.0.len(), 2);
        assert_eq!(&*c.0[0][0], "..");
        assert_eq!(&*c.0[0][2], "b");
        assert_eq!(&*c.0[1][0], "c");
    }
}
