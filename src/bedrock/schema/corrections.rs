//! Corrections to minecraft-data's definitions, where they and Mojang's
//! published packet layouts (`Mojang/bedrock-protocol-docs`, one branch per
//! game version) disagree: Mojang's are what the game sends.
//!
//! `corrections.json` beside this module lists them, each with the type it
//! changes, the field, what it does, the protocols it applies to, the
//! source and what minecraft-data had. They are applied to a type's
//! definition as a protocol's table is compiled; docs/bedrock.md lists
//! them for people.
//!
//! A correction names its field by a dotted path: each part is the
//! nearest field of that name below the part before it (the type itself
//! for the first), looking through containers, arrays, options, switches
//! and mappers. What it does:
//! - `set`: the field's type becomes `value`;
//! - `mapped_as`: a mapped field's underlying number becomes `value` (its
//!   names stay);
//! - `insert_after`: the field `value` (`{name, type}`) comes after it;
//! - `remove`: it goes.

use std::sync::OnceLock;

use serde_json::Value;

/// One correction.
#[derive(Debug, Clone, serde::Deserialize)]
pub(crate) struct Correction {
    /// The definition it changes (`packet_agent_action`, `MaterialReducer`).
    #[serde(rename = "type")]
    pub(crate) ty: String,
    /// The field, a dotted path.
    pub(crate) field: String,
    pub(crate) op: Op,
    #[serde(default)]
    pub(crate) value: Value,
    /// The protocols it applies to, both ends in (none: every one).
    #[serde(default)]
    pub(crate) from: Option<u32>,
    #[serde(default)]
    pub(crate) to: Option<u32>,
    /// Where Mojang says so, and what minecraft-data has: for people (the
    /// table of docs/bedrock.md, which a test holds to them).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) source: String,
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) was: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Op {
    Set,
    MappedAs,
    InsertAfter,
    Remove,
}

/// Every correction, from the embedded list.
pub(crate) fn all() -> &'static [Correction] {
    static ALL: OnceLock<Vec<Correction>> = OnceLock::new();
    ALL.get_or_init(|| {
        serde_json::from_str(include_str!("corrections.json"))
            .expect("the embedded corrections parse")
    })
}

impl Correction {
    /// Whether it applies to `protocol`.
    pub(crate) fn covers(&self, protocol: u32) -> bool {
        self.from.is_none_or(|f| protocol >= f) && self.to.is_none_or(|t| protocol <= t)
    }
}

/// Definition `def` of type `ty` for `protocol`, corrected; the number of
/// corrections that found their field.
pub(crate) fn correct(ty: &str, protocol: u32, def: &mut Value) -> usize {
    let mut n = 0;
    for c in all().iter().filter(|c| c.ty == ty && c.covers(protocol)) {
        if apply(c, def) {
            n += 1;
        }
    }
    n
}

/// `c` applied to `def`: whether its field was found.
pub(crate) fn apply(c: &Correction, def: &mut Value) -> bool {
    let parts: Vec<&str> = c.field.split('.').collect();
    let Some((last, path)) = parts.split_last() else {
        return false;
    };
    let mut at = def;
    for part in path {
        match find(at, part) {
            Some(f) => at = &mut f["type"],
            None => return false,
        }
    }
    match c.op {
        Op::Set => find(at, last)
            .map(|f| f["type"] = c.value.clone())
            .is_some(),
        Op::MappedAs => match find(at, last) {
            Some(f) if f["type"][0] == "mapper" => {
                f["type"][1]["type"] = c.value.clone();
                true
            }
            _ => false,
        },
        Op::InsertAfter | Op::Remove => {
            let Some((fields, i)) = container_of(at, last) else {
                return false;
            };
            if c.op == Op::Remove {
                fields.remove(i);
            } else {
                fields.insert(i + 1, c.value.clone());
            }
            true
        }
    }
}

/// The nearest field named `name` below `v` (breadth first): its
/// `{name, type}` object.
fn find<'a>(v: &'a mut Value, name: &str) -> Option<&'a mut Value> {
    let (fields, i) = container_of(v, name)?;
    fields.get_mut(i)
}

/// The fields of the nearest container below `v` with a field named
/// `name`, and its index there.
fn container_of<'a>(v: &'a mut Value, name: &str) -> Option<(&'a mut Vec<Value>, usize)> {
    let path = locate(v, name)?;
    let mut at = v;
    for step in path {
        at = match step {
            Step::Index(i) => at.get_mut(i)?,
            Step::Key(k) => at.get_mut(k)?,
        };
    }
    let fields = at.as_array_mut()?;
    let i = fields.iter().position(|f| f["name"] == name)?;
    Some((fields, i))
}

#[derive(Clone)]
enum Step {
    Index(usize),
    Key(String),
}

/// The steps from `v` to the nearest array of fields (a container's)
/// holding one named `name`, breadth first.
fn locate(v: &Value, name: &str) -> Option<Vec<Step>> {
    let mut queue = std::collections::VecDeque::from([(v, Vec::new())]);
    while let Some((v, path)) = queue.pop_front() {
        match v {
            Value::Array(a) => {
                let fields = a
                    .iter()
                    .all(|f| f.get("name").is_some() && f.get("type").is_some());
                if !a.is_empty() && fields && a.iter().any(|f| f["name"] == name) {
                    return Some(path);
                }
                for (i, x) in a.iter().enumerate() {
                    let mut p = path.clone();
                    p.push(Step::Index(i));
                    queue.push_back((x, p));
                }
            }
            Value::Object(m) => {
                for (k, x) in m {
                    let mut p = path.clone();
                    p.push(Step::Key(k.clone()));
                    queue.push_back((x, p));
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_list_parses_and_says_where_each_comes_from() {
        assert!(all().len() >= 10);
        for c in all() {
            assert!(c.source.contains("Mojang"), "{c:?}");
            assert!(!c.was.is_empty(), "{c:?}");
            let needs_value = c.op != Op::Remove;
            assert_eq!(needs_value, !c.value.is_null(), "{c:?}");
        }
    }

    /// docs/bedrock.md's table has a row for each, with its source.
    #[test]
    fn docs_bedrock_md_lists_every_correction() {
        let doc = include_str!("../../../docs/bedrock.md");
        for c in all() {
            let row = doc
                .lines()
                .find(|l| l.starts_with(&format!("| `{}` | `{}` |", c.ty, c.field)))
                .unwrap_or_else(|| panic!("no row for {} {}", c.ty, c.field));
            assert!(row.contains(&c.source), "{row}");
            assert!(row.contains(&c.was), "{row}");
        }
    }

    #[test]
    fn each_op_on_a_definition() {
        let def = json!(["container", [
            {"name": "a", "type": "u8"},
            {"name": "m", "type": ["mapper", {"type": "zigzag32", "mappings": {"1": "x"}}]},
            {"name": "o", "type": ["option", ["container", [{"name": "has", "type": "bool"}, {"name": "a", "type": "string"}]]]}
        ]]);
        let c = |field: &str, op: Op, value: Value| Correction {
            ty: "t".into(),
            field: field.into(),
            op,
            value,
            from: None,
            to: None,
            source: "Mojang".into(),
            was: "x".into(),
        };
        let mut d = def.clone();
        // The nearest `a` is the packet's own, not the option's.
        assert!(apply(&c("a", Op::Set, json!("zigzag32")), &mut d));
        assert_eq!(d[1][0]["type"], "zigzag32");
        assert_eq!(d[1][2]["type"][1][1][1]["type"], "string");
        assert!(apply(&c("o.a", Op::Set, json!("lf32")), &mut d));
        assert_eq!(d[1][2]["type"][1][1][1]["type"], "lf32");
        assert!(apply(&c("m", Op::MappedAs, json!("li32")), &mut d));
        assert_eq!(
            d[1][1]["type"][1],
            json!({"type": "li32", "mappings": {"1": "x"}})
        );
        assert!(apply(&c("o.has", Op::Remove, Value::Null), &mut d));
        assert_eq!(d[1][2]["type"][1][1].as_array().unwrap().len(), 1);
        let f = json!({"name": "b", "type": "varint"});
        assert!(apply(&c("a", Op::InsertAfter, f.clone()), &mut d));
        assert_eq!(d[1][1], f);
        assert!(!apply(&c("nothing", Op::Set, json!("u8")), &mut d));
        assert!(
            !apply(&c("a", Op::MappedAs, json!("u8")), &mut d),
            "not mapped"
        );
    }
}
