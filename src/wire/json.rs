//! A JSON value written compactly, byte for byte what `serde_json` writes,
//! faster where it costs: decoded game fields carry long strings (the hex
//! of a chunk's bytes, names), and `serde_json` looks at every byte of a
//! string for characters to escape, one at a time, through the writer it
//! is given. Here a string is checked 32 bytes at a time and copied whole
//! when nothing in it needs escaping (the usual case); the rest, numbers
//! and the strings that need escaping, are `serde_json`'s own.

use serde_json::Value;

/// `v` as compact JSON, appended to `out` (what `serde_json::to_writer`
/// writes).
pub(crate) fn write_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // Writing to a Vec cannot fail.
        Value::Number(n) => drop(serde_json::to_writer(&mut *out, n)),
        Value::String(s) => write_str(out, s),
        Value::Array(a) => write_array(out, a, write_value),
        Value::Object(m) => write_object(out, m.iter().map(|(k, v)| (k.as_str(), v)), write_value),
    }
}

/// `items` as a JSON array, each written by `each`.
pub(crate) fn write_array<T>(
    out: &mut Vec<u8>,
    items: impl IntoIterator<Item = T>,
    mut each: impl FnMut(&mut Vec<u8>, T),
) {
    out.push(b'[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        each(out, item);
    }
    out.push(b']');
}

/// `members` as a JSON object, in the order given, each value written by
/// `each`.
pub(crate) fn write_object<'k, T>(
    out: &mut Vec<u8>,
    members: impl IntoIterator<Item = (&'k str, T)>,
    mut each: impl FnMut(&mut Vec<u8>, T),
) {
    out.push(b'{');
    for (i, (k, item)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, k);
        out.push(b':');
        each(out, item);
    }
    out.push(b'}');
}

/// Bytes as a JSON string of lowercase hex.
pub(crate) fn write_hex(out: &mut Vec<u8>, b: &[u8]) {
    out.push(b'"');
    crate::wire::cursor::hex_extend(out, b);
    out.push(b'"');
}

/// `s` as a JSON string.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    if needs_escape(s.as_bytes()) {
        // Writing to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    } else {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    }
}

/// Whether JSON needs an escape for a byte of `b`: a control character, a
/// quote or a backslash (what `serde_json` escapes; not `/`, not DEL, not
/// non-ASCII).
fn needs_escape(b: &[u8]) -> bool {
    let escaped = |x: u8| (x < 0x20) | (x == b'"') | (x == b'\\');
    let mut blocks = b.chunks_exact(32);
    for block in &mut blocks {
        // No early exit inside a block: the compiler makes it vector code.
        if block.iter().fold(false, |any, &x| any | escaped(x)) {
            return true;
        }
    }
    blocks.remainder().iter().any(|&x| escaped(x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn same(v: &Value) {
        let mut ours = Vec::new();
        write_value(&mut ours, v);
        assert_eq!(
            String::from_utf8(ours).unwrap(),
            serde_json::to_string(v).unwrap()
        );
    }

    #[test]
    fn what_serde_json_writes() {
        same(&json!(null));
        same(
            &json!({"a": [1, -2, 3.5, 1e300, -0.0, u64::MAX, i64::MIN], "b": true, "c": false,
            "d": "plain", "e": "quote \" backslash \\ tab \t nul \u{0} del \u{7f} é /",
            "": {}, "f": [], "g": [[], {}, null]}),
        );
        // Escapes at every position of the 32-byte blocks and after them.
        for at in 0..70 {
            for c in ['"', '\\', '\n', '\u{1f}', '\u{0}'] {
                let mut s = "x".repeat(70);
                s.replace_range(at..at + 1, &c.to_string());
                same(&Value::String(s.clone()));
                same(&json!({ s.clone(): s }));
            }
        }
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| json!(f)),
            any::<String>().prop_map(Value::String),
            "[ -~\\t\\n\"\\\\]{0,80}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::btree_map(any::<String>(), inner, 0..8)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_value_as_serde_json_writes_it(v in value()) {
            same(&v);
        }
    }
}
