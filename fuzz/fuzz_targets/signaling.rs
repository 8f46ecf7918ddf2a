//! The NetherNet server's signaling ([`Signaling::respond`]) facing a
//! hostile client: its TCP stream, cut into chunks the input sizes, read
//! by the HTTP reader; every request answered with a response, each offer
//! taken made into a player whose transport then runs a few turns (its
//! ICE checks to whatever the offer named). Input: a chunk size (0: all
//! at once), the players already in (mod 5; 4 is full), then the stream.
//! No panic, every response an HTTP one, every answer an SDP answer.
#![no_main]

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use raknet_dissect::bedrock::identity::KeyPair;
use raknet_dissect::nethernet::cert::Cert;
use raknet_dissect::nethernet::http;
use raknet_dissect::peer::nethernet_listen::{Reply, Signaling};

/// The signaling, made once (a key and a certificate would be most of a run).
fn signaling() -> &'static Signaling {
    static S: OnceLock<Signaling> = OnceLock::new();
    S.get_or_init(|| {
        let cert = Cert::self_signed("fuzz").expect("randomness");
        let key = KeyPair::generate().expect("randomness");
        Signaling::new("1.26.45", ("fuzz", 4), (cert, &key), 19132).expect("an identity")
    })
}

fuzz_target!(|data: &[u8]| {
    let [size, joined, stream @ ..] = data else {
        return;
    };
    let sig = signaling();
    let size = if *size == 0 { stream.len().max(1) } else { usize::from(*size) };
    let local = std::net::IpAddr::from([127, 0, 0, 1]);
    let mut reader = http::Stream::new();
    for chunk in stream.chunks(size) {
        let Ok(messages) = reader.push(chunk) else {
            return;
        };
        for m in messages {
            match sig.respond(&m, local, usize::from(joined % 5)) {
                Ok(Reply::Respond(out)) => assert!(out.starts_with(b"HTTP/1.1 ")),
                Ok(Reply::Join(out, mut p)) => {
                    assert!(out.starts_with(b"HTTP/1.1 200 OK\r\n"));
                    let text = String::from_utf8_lossy(&out);
                    assert!(text.contains("a=setup:active") && text.contains("a=identity:"));
                    let mut now = Instant::now();
                    for _ in 0..4 {
                        now += Duration::from_millis(200);
                        p.rtc.handle_timeout(now);
                        while p.rtc.poll_transmit().is_some() {}
                        while p.rtc.poll_event().is_some() {}
                    }
                }
                Err(_) => {}
            }
        }
    }
});
