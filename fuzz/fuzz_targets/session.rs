//! Both ends of a connection past the handshake: our client and our server
//! (session::ClientHandshake, session::Listener) connect in memory, then the
//! input, cut into datagrams (a head byte: direction and time step; a
//! 16-bit little-endian length), is delivered as if the peer had sent it: to the server
//! from the client's address (a hostile client), or to the client (a
//! hostile server). No panic, and what each side holds that the peer
//! controls stays within its budgets.
#![no_main]

use std::net::SocketAddr;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use raknet_dissect::session::{ClientConfig, ClientHandshake, Connection, Listener, ServerConfig};

const BUDGET: usize = 1 << 20;

fn connect(now: &mut Duration) -> Option<(Listener, Connection, SocketAddr)> {
    let (c, s): (SocketAddr, SocketAddr) = (
        "127.0.0.1:50000".parse().ok()?,
        "127.0.0.1:19132".parse().ok()?,
    );
    let mut server = Listener::new(
        ServerConfig {
            guid: 2,
            max_held_total: BUDGET,
            ..ServerConfig::default()
        },
        s,
    );
    let mut h = ClientHandshake::new(
        ClientConfig {
            guid: 1,
            ..ClientConfig::default()
        },
        s,
        c,
        *now,
    );
    let mut buf = Vec::new();
    for _ in 0..200 {
        while let Ok(true) = h.poll_transmit(*now, &mut buf) {
            server.handle(*now, c, &buf);
        }
        while server.poll_transmit(*now, &mut buf).is_some() {
            if let Ok(Some(conn)) = h.handle(*now, &buf) {
                return pump(server, conn, c, now);
            }
        }
        *now += Duration::from_millis(10);
    }
    None
}

/// The connected handshake (ConnectionRequest, Accepted, NewIncoming), both
/// ways until both sides are connected.
fn pump(
    mut server: Listener,
    mut client: Connection,
    c: SocketAddr,
    now: &mut Duration,
) -> Option<(Listener, Connection, SocketAddr)> {
    let mut buf = Vec::new();
    for _ in 0..200 {
        while client.poll_transmit(*now, &mut buf) {
            server.handle(*now, c, &buf);
        }
        while server.poll_transmit(*now, &mut buf).is_some() {
            client.handle(*now, &buf);
        }
        while server.poll_event().is_some() {}
        while client.poll_event().is_some() {}
        let up = |s: raknet_dissect::session::State| s == raknet_dissect::session::State::Connected;
        if up(client.state()) && server.connection(c).is_some_and(|s| up(s.state())) {
            return Some((server, client, c));
        }
        *now += Duration::from_millis(10);
    }
    None
}

fuzz_target!(|data: &[u8]| {
    let mut now = Duration::ZERO;
    let Some((mut server, mut client, c)) = connect(&mut now) else {
        panic!("the in-memory handshake connects");
    };
    let mut rest = data;
    let mut buf = Vec::new();
    while let [head, lo, hi, tail @ ..] = rest {
        let n = usize::from(u16::from_le_bytes([*lo, *hi])).min(tail.len());
        let (d, next) = tail.split_at(n);
        rest = next;
        now += Duration::from_millis(u64::from(head >> 1) * 20);
        let mut bytes = d.to_vec();
        if let Some(b) = bytes.first_mut() {
            *b |= 0x80; // a data, ACK or NACK datagram, not offline
        }
        if head & 1 == 0 {
            server.handle(now, c, &bytes);
        } else {
            client.handle(now, &bytes);
        }
        // Both sides answer as they would; what they send is not delivered.
        while server.poll_transmit(now, &mut buf).is_some() {}
        while client.poll_transmit(now, &mut buf) {}
        while server.poll_event().is_some() {}
        while client.poll_event().is_some() {}
        let held = server.connection(c).map_or(0, Connection::held_bytes);
        assert!(held <= BUDGET + (64 << 10), "the server holds {held} bytes");
        assert!(
            client.held_bytes() <= 64 << 20,
            "the client holds {} bytes",
            client.held_bytes()
        );
    }
});
