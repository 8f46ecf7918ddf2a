//! `serve` under a hostile peer, end to end over loopback: a flood of
//! half-open handshakes (Open Connection Request 2 from 1,000 addresses,
//! then silence) must not keep a real client (our `connect`) out.

mod common;

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use common::{args, Ours};
use raknet_dissect::wire::{Offline, SystemAddress};

/// Open Connection Request 2 to `server` (WIRE_FORMAT.md section 3).
fn request2(server: SocketAddr, guid: u64) -> Vec<u8> {
    let mut b = Vec::new();
    Offline::OpenConnectionRequest2 {
        security: None,
        server_address: SystemAddress::from_socket_addr(server),
        mtu: 1400,
        client_guid: guid,
    }
    .emit(&mut b);
    b
}

#[test]
fn a_half_open_flood_does_not_keep_a_client_out() {
    let port = common::free_port_pair();
    let listen = format!("127.0.0.1:{port}");
    let server: SocketAddr = listen.parse().unwrap();
    let mut serve = Ours::spawn(&args(&["serve", "--listen", &listen, "--json"]), None);
    assert!(
        serve
            .wait_record("listening", Duration::from_secs(10))
            .is_some(),
        "serve listens"
    );
    // 1,000 half-open handshakes: 125 addresses of 127.1.0.0/16 (Linux
    // answers for all of 127.0.0.0/8), 8 ports each, then silence.
    let mut flooders = Vec::new();
    for i in 0..125u32 {
        let ip = Ipv4Addr::new(127, 1, (i >> 8) as u8, (i & 0xff) as u8 + 1);
        for _ in 0..8 {
            let s = UdpSocket::bind((ip, 0)).expect("a loopback address");
            s.send_to(&request2(server, u64::from(i)), server)
                .expect("send");
            flooders.push(s);
        }
    }
    // Each got Open Connection Reply 2: the server holds 1,000 half-open
    // handshakes (as many as it has slots, the oldest going first).
    let mut replies = 0;
    for s in &flooders {
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut buf = [0u8; 1500];
        if let Ok((n, _)) = s.recv_from(&mut buf) {
            if n > 0 && buf[0] == 0x08 {
                replies += 1;
            }
        }
    }
    assert_eq!(replies, 1_000, "every Request 2 answered with a Reply 2");
    // A real client now: connected within a second.
    let start = Instant::now();
    let client = Ours::spawn(
        &args(&[
            "connect", &listen, "--send", "86aa", "--wait", "0.2", "--json",
        ]),
        None,
    );
    let f = client.finish(Duration::from_secs(30));
    let took = start.elapsed();
    serve.proc.signal(libc::SIGTERM);
    let _ = serve.finish(Duration::from_secs(20));
    assert_eq!(f.code, Some(0), "connect: {}", f.stderr);
    let connected = f.one("connected");
    assert!(
        took < Duration::from_secs(2),
        "the client's whole run took {took:?}; connected: {connected}"
    );
    assert!(
        connected["handshake_ms"].as_f64().unwrap_or(f64::MAX) < 1000.0,
        "{connected}"
    );
}
