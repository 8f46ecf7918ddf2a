//! A server (`session::Listener`) fed arbitrary datagrams from a few
//! addresses, with time moving on: no panic, and its table stays bounded.
#![no_main]

use std::net::SocketAddr;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use raknet_dissect::session::{Listener, ServerConfig};

fuzz_target!(|data: &[u8]| {
    let local: SocketAddr = "127.0.0.1:19132".parse().expect("an address");
    let mut l = Listener::new(
        ServerConfig {
            max_clients: 2,
            max_pending: 2,
            ..ServerConfig::default()
        },
        local,
    );
    let mut out = Vec::new();
    let mut now = Duration::ZERO;
    // Each chunk: one byte of address and time, then a 16-bit length
    // (little-endian: an Open Connection Request 1 is padded to its MTU),
    // then the datagram.
    let mut rest = data;
    while let [head, lo, hi, tail @ ..] = rest {
        let n = usize::from(u16::from_le_bytes([*lo, *hi])).min(tail.len());
        let (d, next) = tail.split_at(n);
        let from = SocketAddr::from(([127, 0, 0, 1], 40000 + u16::from(head & 3)));
        now += Duration::from_millis(u64::from(head >> 2) * 50);
        l.handle(now, from, d);
        while l.poll_transmit(now, &mut out).is_some() {}
        while l.poll_event().is_some() {}
        assert!(l.len() <= 4);
        rest = next;
    }
});
