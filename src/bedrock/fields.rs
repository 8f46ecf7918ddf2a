//! Every field of a flow's game packets: the schema decoder
//! ([`super::schema`]) for the flow's protocol, with the session state the
//! layouts need (the shield's item id), merged with what the hand decoders
//! add (JWT claims, signature checks, names for enums).

use std::sync::Arc;

use serde_json::Value;

use super::schema::{self, Definitions, Session};

/// The newest protocol the definitions know, for a flow whose protocol was
/// not seen (a capture that starts mid-session).
fn newest() -> u32 {
    schema::nearest(u32::MAX)
}

/// One flow's field decoder.
#[derive(Debug, Default)]
pub struct Fields {
    defs: Option<Arc<Definitions>>,
    /// The protocol `defs` were chosen for.
    chosen_for: Option<u32>,
    session: Session,
    /// Whether the definitions used were said, once.
    said: bool,
}

impl Fields {
    /// Packet `id`'s fields from its `body` by the definitions of
    /// `protocol` (the flow's: the nearest known, the newest when unseen),
    /// `hand`'s keys added where the definitions have none. Returns them
    /// and an anomaly: the field and offset where the packet stopped
    /// decoding (then only `hand` is kept), or, once per flow, that
    /// another protocol's definitions serve this one.
    pub fn decode(
        &mut self,
        protocol: Option<u32>,
        id: u16,
        body: &[u8],
        hand: Option<Value>,
    ) -> (Option<Value>, Option<String>) {
        if self.defs.is_none() || self.chosen_for != protocol {
            self.defs = schema::definitions(protocol.unwrap_or_else(newest));
            self.chosen_for = protocol;
            self.said = false;
        }
        let Some(defs) = &self.defs else {
            return (hand, None);
        };
        let mut note = None;
        if !self.said && protocol != Some(defs.protocol) {
            self.said = true;
            note = Some(match protocol {
                Some(p) => format!(
                    "fields: protocol {p} is not in the definitions; those of protocol {} are used",
                    defs.protocol
                ),
                None => format!(
                    "fields: the protocol was not seen (no RequestNetworkSettings or Login); the newest definitions (protocol {}) are used",
                    defs.protocol
                ),
            });
        }
        let decoded = match defs.decode(id, body, self.session) {
            None => return (hand, note),
            Some(Err(e)) => return (hand, Some(format!("fields: {e}"))),
            Some(Ok(v)) => v,
        };
        if matches!(defs.name(id), Some("start_game" | "item_registry")) {
            if let Some(id) = shield_id(&decoded) {
                self.session.shield_item_id = Some(id);
            }
        }
        let merged = match (decoded, hand) {
            (Value::Object(mut d), Some(Value::Object(h))) => {
                for (k, v) in h {
                    d.entry(k).or_insert(v);
                }
                Value::Object(d)
            }
            (d, _) => d,
        };
        (Some(merged), note)
    }
}

/// The runtime id of `minecraft:shield` in a StartGame's or ItemRegistry's
/// item table.
fn shield_id(v: &Value) -> Option<i64> {
    let items = ["itemstates", "items", "item_states"]
        .iter()
        .find_map(|k| v.get(k)?.as_array())?;
    items.iter().find_map(|i| {
        (i.get("name")?.as_str()? == "minecraft:shield").then(|| i.get("runtime_id")?.as_i64())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hand_fields_add_to_the_definitions_and_an_error_keeps_them() {
        let mut f = Fields::default();
        // play_status 2 (player_spawn) in protocol 2169.
        let (v, note) = f.decode(
            Some(2169),
            2,
            &[0, 0, 0, 3],
            Some(json!({"status": 3, "status_name": "player_spawn"})),
        );
        assert_eq!(note, None);
        let v = v.unwrap();
        assert_eq!(v["status_name"], "player_spawn");
        assert_eq!(
            v["status"], "player_spawn",
            "the definitions' mapper wins: {v}"
        );
        // Cut short: the hand fields stay, the anomaly says where.
        let (v, note) = f.decode(Some(2169), 2, &[0, 0], Some(json!({"x": 1})));
        assert_eq!(v, Some(json!({"x": 1})));
        assert_eq!(
            note.as_deref(),
            Some("fields: status at byte 0: 4 bytes wanted, 2 left")
        );
    }

    #[test]
    fn another_protocols_definitions_are_said_once() {
        let mut f = Fields::default();
        let (_, note) = f.decode(Some(2170), 2, &[0, 0, 0, 3], None);
        assert!(note.unwrap().contains("those of protocol 2169"));
        let (_, note) = f.decode(Some(2170), 2, &[0, 0, 0, 3], None);
        assert_eq!(note, None);
        let mut f = Fields::default();
        let (v, note) = f.decode(None, 2, &[0, 0, 0, 3], None);
        assert!(note.unwrap().contains("the newest definitions"));
        assert!(v.is_some());
    }

    #[test]
    fn the_shield_is_found_in_the_item_table() {
        let v = json!({"itemstates": [{"name": "minecraft:apple", "runtime_id": 5},
                                      {"name": "minecraft:shield", "runtime_id": 355}]});
        assert_eq!(shield_id(&v), Some(355));
        assert_eq!(shield_id(&json!({})), None);
    }
}
