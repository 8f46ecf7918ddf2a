//! Our Bedrock client and server (bedrock::client, bedrock::server) facing
//! a hostile peer: they first log in to each other in memory (a real
//! login, encryption on), then the input, cut into 0xFE messages (a head
//! byte: its low bit which side gets it; a 16-bit little-endian length),
//! is delivered to them as if the peer had sent it, framed in clear or
//! through the peer's own codec. No panic; what they answer stays small.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use raknet_dissect::bedrock::client::GameClient;
use raknet_dissect::bedrock::identity::{KeyPair, Player};
use raknet_dissect::bedrock::server::GameServer;

/// The peers before the login, made once: key generation would be most of
/// each execution.
static FRESH: LazyLock<(GameClient, GameServer)> = LazyLock::new(|| {
    let c = GameClient::with_player(
        "1.26.45",
        Player::new("Steve").expect("randomness"),
        "127.0.0.1:19132",
    )
    .expect("the client is made");
    let s = GameServer::with_key("1.26.45", KeyPair::generate().expect("randomness"))
        .expect("the server is made");
    (c, s)
});

/// The same peers logged in to each other (ECDH, signatures, encryption
/// on), made once and copied for each input: a login costs milliseconds.
static LOGGED_IN: LazyLock<(GameClient, GameServer)> = LazyLock::new(|| {
    let (mut c, mut s) = FRESH.clone();
    c.start().expect("the client starts");
    for _ in 0..20 {
        while let Some(m) = c.poll_transmit() {
            s.handle(&m);
        }
        while let Some(m) = s.poll_transmit() {
            c.handle(&m);
        }
    }
    assert!(c.spawned && s.spawned, "the in-memory login spawns");
    while s.poll_event().is_some() {}
    while c.poll_event().is_some() {}
    (c, s)
});

fuzz_target!(|data: &[u8]| {
    // Logged in when the first byte is 0xff; else the input meets peers
    // before the login.
    let (mut c, mut s) = if data.first() == Some(&0xff) {
        LOGGED_IN.clone()
    } else {
        FRESH.clone()
    };
    let mut rest = data.get(1..).unwrap_or(&[]);
    while let [head, lo, hi, tail @ ..] = rest {
        let n = usize::from(u16::from_le_bytes([*lo, *hi])).min(tail.len());
        let (body, next) = tail.split_at(n);
        rest = next;
        let mut m = vec![0xfe];
        m.extend_from_slice(body);
        // Framed by the peer's codec (so it decrypts and decompresses), or raw.
        let framed = head & 2 != 0;
        if head & 1 == 0 {
            if framed {
                m = c.speaker.codec.encode(&[body.to_vec()]);
            }
            s.handle(&m);
        } else {
            if framed {
                m = s.speaker.codec.encode(&[body.to_vec()]);
            }
            c.handle(&m);
        }
        let mut out = 0usize;
        while let Some(m) = s.poll_transmit() {
            out += m.len();
        }
        while let Some(m) = c.poll_transmit() {
            out += m.len();
        }
        while s.poll_event().is_some() {}
        while c.poll_event().is_some() {}
        assert!(out < 4 << 20, "{out} bytes answered to one message");
    }
});
