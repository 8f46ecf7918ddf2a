//! The schema decoder on (version, packet id, bytes): the input's first two
//! bytes choose one of the protocols the definitions know, the next two the
//! packet id (10 bits), the rest is the packet body. No panic, every count
//! and length bounded, what decodes serialises as JSON, encodes, and
//! decodes again to the same fields (the bytes may differ: a varint can be
//! written longer than it needs, a bool as any non-zero byte).
#![no_main]

use libfuzzer_sys::fuzz_target;
use raknet_dissect::bedrock::schema::{definitions, protocols, Session};

fuzz_target!(|data: &[u8]| {
    let [a, b, c, d, body @ ..] = data else {
        return;
    };
    let ps = protocols();
    let p = ps[usize::from(u16::from_le_bytes([*a, *b])) % ps.len()];
    let id = u16::from_le_bytes([*c, *d]) & 0x3ff;
    let Some(defs) = definitions(p) else {
        return;
    };
    let s = Session {
        shield_item_id: Some(i64::from(*c)),
    };
    if let Some(Ok(v)) = defs.decode(id, body, s) {
        let _ = serde_json::to_string(&v).expect("fields serialise");
        let bytes = defs
            .encode(id, &v, s)
            .expect("a known packet")
            .expect("decoded fields encode");
        let again = defs.decode(id, &bytes, s).expect("known").expect("decodes");
        assert_eq!(v, again, "the fields change through encoding");
    }
});
