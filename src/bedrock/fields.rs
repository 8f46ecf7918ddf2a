//! Every field of a flow's game packets: the schema decoder
//! ([`super::schema`]) for the flow's protocol, with the session state the
//! layouts need (the shield's item id), merged with what the hand decoders
//! add (JWT claims, signature checks, names for enums).

use std::sync::Arc;

use serde_json::Value;

use super::schema::decode::Traced;
use super::schema::lean::{with_arena, Lean};
use super::schema::{self, DecodeError, Definitions, Session, Span};

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
    /// Keep where each field is on the wire (for the `-V` tree): off, the
    /// decoder keeps no trace.
    pub(crate) layout: bool,
    /// Leave each packet's decoding for later ([`Pending`]), but for those
    /// whose fields later packets depend on.
    pub(crate) defer: bool,
}

/// What [`Fields::decode`] made of a packet.
#[derive(Debug, Default)]
pub(crate) struct Decoded {
    /// The definitions' fields with the hand decoders' added (only the
    /// hand decoders' when the definitions have no such packet or it
    /// stopped decoding).
    pub(crate) fields: Option<Value>,
    /// Where the packet stopped decoding, or, once per flow, that another
    /// protocol's definitions serve this one.
    pub(crate) anomaly: Option<String>,
    /// Where the packet stopped decoding (the field, its offset in the
    /// body, why): `fields` then holds what decoded before it.
    pub(crate) error: Option<String>,
    /// With [`Fields::layout`]: the definitions' fields in wire order,
    /// each with its bytes in the body (the hand decoders' keys have none).
    pub(crate) layout: Option<Vec<Span>>,
}

impl Fields {
    /// Packet `id`'s fields from its `body` by the definitions of
    /// `protocol` (the flow's: the nearest known, the newest when unseen),
    /// `hand`'s keys added where the definitions have none; with an
    /// anomaly: the field and offset where the packet stopped decoding
    /// (then only `hand` is kept), or, once per flow, that another
    /// protocol's definitions serve this one.
    #[cfg(test)]
    pub(crate) fn decode(
        &mut self,
        protocol: Option<u32>,
        id: u16,
        body: &[u8],
        hand: Option<Value>,
    ) -> Decoded {
        match self.prepare(protocol, id, body, hand) {
            Ok(p) => p.decode(body),
            Err(d) => d,
        }
    }

    /// [`Fields::decode`] in two halves: what depends on the flow (the
    /// definitions chosen, the note said once, the shield's id), done now,
    /// and the decoding itself, done by [`Pending::decode`] where it is
    /// wanted (on a printing thread). A StartGame or ItemRegistry, whose
    /// fields later packets depend on, is decoded now, as is everything
    /// unless [`Fields::defer`]: `Err` with the result.
    pub(crate) fn prepare(
        &mut self,
        protocol: Option<u32>,
        id: u16,
        body: &[u8],
        hand: Option<Value>,
    ) -> Result<Pending, Decoded> {
        if self.defs.is_none() || self.chosen_for != protocol {
            self.defs = schema::definitions(protocol.unwrap_or_else(newest));
            self.chosen_for = protocol;
            self.said = false;
        }
        let Some(defs) = &self.defs else {
            return Err(Decoded {
                fields: hand,
                ..Decoded::default()
            });
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
        let pending = Pending {
            defs: Arc::clone(defs),
            session: self.session,
            layout: self.layout,
            id,
            hand,
            note,
            written: false,
        };
        let shield = matches!(defs.name(id), Some("start_game" | "item_registry"));
        if self.defer {
            if shield {
                // Its item table now (for the layouts of the packets after
                // it), its fields later with the others'.
                let session = self.session;
                let shield = with_arena(|arena| {
                    let table = defs.decode_lean(id, body, session, arena);
                    table.and_then(Result::ok).and_then(|v| shield_id_lean(&v))
                });
                if let Some(s) = shield {
                    self.session.shield_item_id = Some(s);
                }
            }
            return Ok(pending);
        }
        let (decoded, shield_id) = pending.run(body, shield);
        if let Some(s) = shield_id {
            self.session.shield_item_id = Some(s);
        }
        Err(decoded)
    }
}

/// What [`Pending::write_json`] wrote: whether there were fields, the
/// packet's anomaly and its error (as [`Decoded`] has them).
pub(crate) type Written = (bool, Option<String>, Option<String>);

/// A packet's fields, to decode: the definitions and session state of its
/// flow when it came ([`Fields::prepare`]), what the hand decoders read,
/// and the note for the flow, if it is the one to say it.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    defs: Arc<Definitions>,
    session: Session,
    layout: bool,
    id: u16,
    hand: Option<Value>,
    note: Option<String>,
    /// Written by [`Pending::write_json`] already.
    written: bool,
}

impl Pending {
    /// The fields from the packet's `body` (the bytes after its header).
    pub(crate) fn decode(self, body: &[u8]) -> Decoded {
        self.run(body, false).0
    }

    /// [`Pending::decode`], and with `shield` the shield's item id in the
    /// item table it holds.
    fn run(self, body: &[u8], shield: bool) -> (Decoded, Option<i64>) {
        let (defs, session, id) = (&self.defs, self.session, self.id);
        let result = if self.layout {
            defs.decode_traced(id, body, session)
        } else {
            defs.decode(id, body, session).map(|r| r.map(|v| (v, None)))
        };
        let shield = match &result {
            Some(Ok((v, _))) if shield => shield_id(v),
            _ => None,
        };
        (self.outcome(result), shield)
    }

    /// What the definitions made of the packet (`None`: they have no such
    /// packet), with the hand decoders' keys and the flow's note.
    fn outcome(self, result: Option<Result<Traced, DecodeError>>) -> Decoded {
        let Pending {
            defs,
            id,
            hand,
            note,
            ..
        } = self;
        match result {
            None => {
                // An id the definitions lack: said, with what the hand
                // decoders read (or nothing), never no fields at all.
                let e = format!(
                    "the packet at byte 0: protocol {}'s definitions have no packet {id}",
                    defs.protocol
                );
                let anomaly = match note {
                    Some(n) => format!("{n}; fields: {e}"),
                    None => format!("fields: {e}"),
                };
                Decoded {
                    fields: Some(hand.unwrap_or_else(|| Value::Object(Default::default()))),
                    anomaly: Some(anomaly),
                    error: Some(e),
                    layout: None,
                }
            }
            Some(Err(mut e)) => {
                let partial = e.partial.take().map(|p| *p);
                Decoded {
                    fields: merge(partial, hand),
                    anomaly: Some(format!("fields: {e}")),
                    error: Some(e.to_string()),
                    layout: None,
                }
            }
            Some(Ok((decoded, layout))) => Decoded {
                fields: merge(Some(decoded), hand),
                anomaly: note,
                error: None,
                layout,
            },
        }
    }

    /// [`Pending::decode`] with the fields written as JSON to `out` (the
    /// text `Decoded::fields` would be written as) without a value made of
    /// them: whether there were fields, the anomaly and the error. For
    /// output that writes the fields and reads nothing in them (`game
    /// --json` without a filter).
    ///
    /// It stays where it is, written (what the reading thread made of it,
    /// the hand decoders' values, is freed there, with its packet: glibc
    /// frees another thread's memory at a cost to both).
    pub(crate) fn write_json(&mut self, body: &[u8], out: &mut Vec<u8>) -> Written {
        use super::schema::lean::sort_members;
        use crate::wire::json::write_value;
        self.written = true;
        if self.layout {
            let d = self.take().decode(body);
            if let Some(f) = &d.fields {
                write_value(out, f);
            }
            return (d.fields.is_some(), d.anomaly, d.error);
        }
        let hand = self.hand.as_ref();
        let (defs, id, session) = (&self.defs, self.id, self.session);
        // What the definitions made of it, written as `merge` would have
        // merged it with the hand decoders' keys: `Ok` with whether there
        // were fields and the error (what decoded before it is written).
        let result = with_arena(|arena| {
            let (decoded, error) = match defs.decode_lean(id, body, session, arena) {
                Some(Ok(v)) => (Some(v), None),
                Some(Err((e, partial))) => (partial, Some(e)),
                None => return Err(()),
            };
            let fields = match decoded {
                Some(Lean::Object(mut m)) => {
                    // The hand decoders' keys the definitions lack (looked
                    // for among the definitions' alone, which are sorted).
                    let lacked: Vec<_> = hand
                        .and_then(Value::as_object)
                        .into_iter()
                        .flatten()
                        .filter(|(k, _)| m.binary_search_by(|(mk, _)| (**mk).cmp(k)).is_err())
                        .map(|(k, v)| (k.as_str(), Lean::Json(v)))
                        .collect();
                    if !lacked.is_empty() {
                        m.extend(lacked);
                        sort_members(&mut m);
                    }
                    let v = Lean::Object(m);
                    v.write_json(out);
                    // All of it is the arena's, emptied after: not walked
                    // to be dropped.
                    std::mem::forget(v);
                    true
                }
                Some(v) => {
                    v.write_json(out);
                    std::mem::forget(v);
                    true
                }
                None => hand.is_some_and(|h| {
                    write_value(out, h);
                    true
                }),
            };
            Ok((fields, error))
        });
        match result {
            Ok((fields, None)) => (fields, self.note.take(), None),
            Ok((fields, Some(e))) => (fields, Some(format!("fields: {e}")), Some(e.to_string())),
            Err(()) => {
                let d = self.take().outcome(None);
                if let Some(f) = &d.fields {
                    write_value(out, f);
                }
                (d.fields.is_some(), d.anomaly, d.error)
            }
        }
    }

    /// Whether [`Pending::write_json`] wrote it.
    pub(crate) fn is_written(&self) -> bool {
        self.written
    }

    /// Its parts, moved out (for the paths that consume them).
    fn take(&mut self) -> Pending {
        Pending {
            defs: Arc::clone(&self.defs),
            hand: self.hand.take(),
            note: self.note.take(),
            ..*self
        }
    }
}

/// The definitions' fields with the hand decoders' keys they lack added.
fn merge(decoded: Option<Value>, hand: Option<Value>) -> Option<Value> {
    match (decoded, hand) {
        (Some(Value::Object(mut d)), Some(Value::Object(h))) => {
            for (k, v) in h {
                d.entry(k).or_insert(v);
            }
            Some(Value::Object(d))
        }
        (None, h) => h,
        (d, _) => d,
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

/// [`shield_id`] of a value as the interpreter builds it.
fn shield_id_lean(v: &Lean<'_>) -> Option<i64> {
    let items = ["itemstates", "items", "item_states"]
        .iter()
        .find_map(|k| match v.get(k)? {
            Lean::Array(a) => Some(a),
            _ => None,
        })?;
    items.iter().find_map(|i| {
        (i.get("name")?.text() == "minecraft:shield").then(|| i.get("runtime_id")?.as_i64())?
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
        let d = f.decode(
            Some(2169),
            2,
            &[0, 0, 0, 3],
            Some(json!({"status": 3, "status_name": "player_spawn"})),
        );
        assert_eq!(d.anomaly, None);
        assert!(d.layout.is_none(), "no trace unless asked");
        let v = d.fields.unwrap();
        assert_eq!(v["status_name"], "player_spawn");
        assert_eq!(
            v["status"], "player_spawn",
            "the definitions' mapper wins: {v}"
        );
        // Cut short: the hand fields stay, the anomaly says where.
        let d = f.decode(Some(2169), 2, &[0, 0], Some(json!({"x": 1})));
        assert_eq!(d.fields, Some(json!({"x": 1})));
        assert_eq!(
            d.anomaly.as_deref(),
            Some("fields: status at byte 0: 4 bytes wanted, 2 left")
        );
        assert_eq!(
            d.error.as_deref(),
            Some("status at byte 0: 4 bytes wanted, 2 left")
        );
        // An id the definitions lack: fields all the same, and an error.
        let d = f.decode(Some(2169), 1000, &[1, 2], None);
        assert_eq!(d.fields, Some(json!({})));
        assert_eq!(
            d.error.as_deref(),
            Some("the packet at byte 0: protocol 2169's definitions have no packet 1000")
        );
    }

    /// Deferred, a packet decodes later as it would have at once; a
    /// StartGame is decoded at once all the same (its item table sets the
    /// shield's id, which later packets' layouts need).
    #[test]
    fn a_deferred_packet_decodes_later_as_at_once() {
        let hand = || Some(json!({"status": 3, "status_name": "player_spawn"}));
        let body = [0, 0, 0, 3];
        let now = Fields::default().decode(Some(2169), 2, &body, hand());
        let mut f = Fields {
            defer: true,
            ..Fields::default()
        };
        let later = f.prepare(Some(2169), 2, &body, hand()).expect("deferred");
        let later = later.decode(&body);
        assert_eq!((later.fields, later.anomaly), (now.fields, now.anomaly));
        // StartGame (id 11): left for later too, its item table read now
        // (here cut short: no shield).
        assert!(f.prepare(Some(2169), 11, &[0], None).is_ok());
        assert_eq!(f.session.shield_item_id, None);
    }

    /// The fields written straight from the decoder are, byte for byte,
    /// the value's JSON, with the same anomaly and error: on every packet
    /// of the vector files (the corrected packets' vectors, written by
    /// minecraft-data's layouts, stop decoding: their partial fields too),
    /// with the hand decoders' keys, and cut short (what decoded before the
    /// stop is written from the arena, the value's partial from a value).
    #[test]
    fn fields_written_as_json_are_the_values() {
        use crate::bedrock::batch::Header;
        let files = [
            include_str!("testdata/packets.jsonl"),
            include_str!("testdata/every_packet.jsonl"),
            include_str!("testdata/every_packet_random.jsonl"),
            include_str!("testdata/start_game.jsonl"),
        ];
        let (mut n, mut errors) = (0, 0);
        for line in files.iter().flat_map(|f| f.lines()) {
            let v: Value = serde_json::from_str(line).unwrap();
            let protocol = v["protocol"].as_u64().unwrap() as u32;
            let bytes = crate::wire::cursor::parse_hex(v["hex"].as_str().unwrap()).unwrap();
            let h = Header::parse(&bytes).unwrap();
            let body = &bytes[h.len..];
            // Keys before, among and after the definitions', and one of
            // theirs (which they keep).
            let mut hand = json!({"a": 0, "status_name": "x", "zz": [1, {"b": 2}]});
            if let Some(Value::Object(fields)) = v.get("fields") {
                if let Some(k) = fields.keys().nth(fields.len() / 2) {
                    hand[k] = json!("the hand decoder's");
                }
            }
            let cut = &body[..body.len() / 2];
            for (body, hand) in [
                (body, None),
                (body, Some(hand.clone())),
                (cut, None),
                (cut, Some(hand)),
            ] {
                let mut f = Fields {
                    defer: true,
                    ..Fields::default()
                };
                let Ok(mut p) = f.prepare(Some(protocol), h.id, body, hand) else {
                    panic!("not deferred: {line}");
                };
                let want = p.clone().decode(body);
                let mut out = Vec::new();
                let (some, anomaly, error) = p.write_json(body, &mut out);
                assert!(p.is_written());
                let text = want
                    .fields
                    .as_ref()
                    .map(|v| serde_json::to_string(v).unwrap());
                assert_eq!(
                    some.then(|| String::from_utf8(out).unwrap()),
                    text,
                    "{line}"
                );
                assert_eq!((anomaly, &error), (want.anomaly, &want.error), "{line}");
                (n, errors) = (n + 1, errors + usize::from(error.is_some()));
            }
        }
        println!("{n} packets, {errors} stopped");
        assert!(n > 2000 && errors > 100, "{n} {errors}");
    }

    #[test]
    fn the_shield_is_found_in_the_table_as_the_interpreter_builds_it() {
        let arena = bumpalo::Bump::new();
        let item = |name: &'static str, id| {
            Lean::Object(bumpalo::vec![in &arena;
                ("name", Lean::Str(name)),
                ("runtime_id", Lean::Int(id)),
            ])
        };
        let table = Lean::Object(bumpalo::vec![in &arena; (
            "itemstates",
            Lean::Array(bumpalo::vec![in &arena;
                item("minecraft:apple", 5),
                item("minecraft:shield", 355),
            ]),
        )]);
        assert_eq!(shield_id_lean(&table), Some(355));
        assert_eq!(shield_id(&table.into_value()), Some(355));
        let none = Lean::Object(super::super::schema::lean::List::new_in(&arena));
        assert_eq!(shield_id_lean(&none), None);
    }

    #[test]
    fn the_layout_is_kept_when_asked_and_the_fields_are_the_same() {
        let hand = || Some(json!({"status": 3, "status_name": "player_spawn"}));
        let plain = Fields::default().decode(Some(2169), 2, &[0, 0, 0, 3], hand());
        let mut f = Fields {
            layout: true,
            ..Fields::default()
        };
        let d = f.decode(Some(2169), 2, &[0, 0, 0, 3], hand());
        assert_eq!(d.fields, plain.fields);
        let layout = d.layout.unwrap();
        assert_eq!(layout.len(), 1, "{layout:?}");
        assert_eq!(
            (&*layout[0].name, layout[0].start, layout[0].end),
            ("status", 0, 4)
        );
        // Cut short: no layout, as no fields.
        assert!(f.decode(Some(2169), 2, &[0, 0], None).layout.is_none());
    }

    #[test]
    fn another_protocols_definitions_are_said_once() {
        let mut f = Fields::default();
        let note = f.decode(Some(2170), 2, &[0, 0, 0, 3], None).anomaly;
        assert!(note.unwrap().contains("those of protocol 2169"));
        let note = f.decode(Some(2170), 2, &[0, 0, 0, 3], None).anomaly;
        assert_eq!(note, None);
        let mut f = Fields::default();
        let d = f.decode(None, 2, &[0, 0, 0, 3], None);
        assert!(d.anomaly.unwrap().contains("the newest definitions"));
        assert!(d.fields.is_some());
    }

    #[test]
    fn the_shield_is_found_in_the_item_table() {
        let v = json!({"itemstates": [{"name": "minecraft:apple", "runtime_id": 5},
                                      {"name": "minecraft:shield", "runtime_id": 355}]});
        assert_eq!(shield_id(&v), Some(355));
        assert_eq!(shield_id(&json!({})), None);
    }
}
