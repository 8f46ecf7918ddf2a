//! Fields compared with bedrock-protocol's deserializer, after the
//! normalisation docs/json.md states: its 64-bit numbers and Buffers as
//! scripts/bedrock-fields.js writes them, binary UUIDs read in byte order
//! there and as two little-endian halves here, 32-bit floats equal as
//! 32-bit floats, a null or absent field the same, keys only we have
//! (the hand decoders' additions) ignored, and a mapper's `false` equal to
//! the number bedrock-protocol gives for it (protodef's compiled mapper
//! returns `mapped || raw`, so a value mapped to false comes out as the
//! raw number: its defect, which ItemExtraData's `has_nbt` shows).

use serde_json::Value;

/// Where `ours` differs from `theirs` (bedrock-protocol's), a line each
/// with the field's path.
pub fn differences(theirs: &Value, ours: &Value) -> Vec<String> {
    let mut why = Vec::new();
    walk(theirs, ours, &mut String::new(), &mut why);
    why
}

fn walk(theirs: &Value, ours: &Value, path: &mut String, why: &mut Vec<String>) {
    match (theirs, ours) {
        (Value::Object(t), Value::Object(o)) => {
            for (k, tv) in t {
                let len = path.len();
                path.push('.');
                path.push_str(k);
                match o.get(k) {
                    Some(ov) => walk(tv, ov, path, why),
                    None if tv.is_null() => {}
                    None => why.push(format!("{path}: missing")),
                }
                path.truncate(len);
            }
        }
        (Value::Array(t), Value::Array(o)) if t.len() == o.len() => {
            for (i, (a, b)) in t.iter().zip(o).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(a, b, path, why);
                path.truncate(len);
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            if a != b && (a as f32) != (b as f32) {
                why.push(format!("{path}: {a} vs {b}"));
            }
        }
        (Value::String(a), Value::String(b))
            if a != b && crate::wire::cursor::uuid_turned(a).as_deref() != Some(b) =>
        {
            why.push(format!("{path}: {a:?} vs {b:?}"));
        }
        (Value::Null, Value::Null) | (Value::String(_), Value::String(_)) => {}
        (Value::Number(_), Value::Bool(false)) => {}
        (t, o) if t != o => why.push(format!("{path}: {t} vs {o}")),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_counts_as_equal() {
        let theirs =
            json!({"a": 0.1, "u": "00112233-4455-6677-8899-aabbccddeeff", "n": null, "x": [1, 2]});
        let ours = json!({"a": 0.10000000149011612, "u": "77665544-3322-1100-ffee-ddccbbaa9988",
                          "x": [1, 2], "hand": true});
        assert!(
            differences(&theirs, &ours).is_empty(),
            "{:?}",
            differences(&theirs, &ours)
        );
        let ours = json!({"a": 0.2, "u": "x", "x": [1]});
        assert_eq!(
            differences(&theirs, &ours),
            [
                ".a: 0.1 vs 0.2",
                ".u: \"00112233-4455-6677-8899-aabbccddeeff\" vs \"x\"",
                ".x: [1,2] vs [1]"
            ]
        );
        assert_eq!(differences(&json!({"k": 1}), &json!({})), [".k: missing"]);
    }
}
