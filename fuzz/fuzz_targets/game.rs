//! The Bedrock game layer on arbitrary messages: the input's first 32 bytes
//! are the key (as a key log's `BEDROCK_KEY` line gives it, so that the
//! encryption paths run, and a seed from a real session with its own key
//! decrypts), the rest is cut into 0xFE messages (a head byte: its low bit
//! the direction; a 16-bit little-endian length) fed to one game flow;
//! every event is formatted.
#![no_main]

use libfuzzer_sys::fuzz_target;
use raknet_dissect::records::game::GameRecord;
use raknet_dissect::bedrock::{Detect, Game, GameEvent, Keys};
use raknet_dissect::dissect::Dir;
use raknet_dissect::mirror::Message;
use raknet_dissect::output::game;
use raknet_dissect::output::text::Palette;
use raknet_dissect::wire::Reliability;
use std::time::Duration;

fuzz_target!(|data: &[u8]| {
    let Some((key, mut rest)) = data.split_first_chunk::<32>() else {
        return;
    };
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    let mut keys = Keys::default();
    keys.add_key_log(&format!("BEDROCK_KEY {hex}"));
    let mut g = Game::new(Detect::Always, keys);
    let mut n = 0u64;
    while let [head, lo, hi, tail @ ..] = rest {
        let len = usize::from(u16::from_le_bytes([*lo, *hi])).min(tail.len());
        let (body, next) = tail.split_at(len);
        rest = next;
        let mut data = vec![0xfe];
        data.extend_from_slice(body);
        let m = Message {
            flow: 1,
            dir: if head & 1 == 0 { Dir::C2s } else { Dir::S2c },
            frame: n,
            ts: Duration::from_millis(n),
            data,
            reliability: Reliability::RELIABLE_ORDERED,
            channel: Some(0),
            anomalies: Vec::new(),
        };
        n += 1;
        for e in g.message(&m).unwrap_or_default() {
            // The record, as `game --json` writes it: one line of JSON.
            let mut line = Vec::new();
            raknet_dissect::records::write_line(&GameRecord::new(&m, &e), &mut line);
            assert!(serde_json::from_slice::<serde_json::Value>(&line).is_ok());
            if let GameEvent::Packet(p) = e {
                let _ = game::line(&p, &m, Duration::ZERO, Palette { enabled: true });
                let _ = game::tree(&p);
            }
        }
    }
    if let Some(f) = g.flow(1) {
        let _ = f.diagnosis(None);
    }
});
