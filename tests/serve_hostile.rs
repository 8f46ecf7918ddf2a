//! `serve` under a hostile peer, end to end over loopback: a flood of
//! half-open handshakes (Open Connection Request 2 from 1,000 addresses,
//! then silence) must not keep a real client (our `connect`) out, and split
//! bombs (parts of split messages that never complete, then silence) are
//! given back, resident memory included, when their connections time out.

mod common;

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use common::{args, Ours};
use raknet_dissect::wire::{Offline, SystemAddress};

/// Open Connection Request 2 to `server` (docs/wire-format.md section 3).
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

/// 1,000 Open Connection Request 2 to `server`, each from a socket of its
/// own bound to `ip(i)`, then silence; how many got Reply 2 (the sockets
/// stay open while the caller holds them).
fn flood(server: SocketAddr, ip: impl Fn(u32) -> Ipv4Addr) -> (usize, Vec<UdpSocket>) {
    let mut flooders = Vec::new();
    for i in 0..1_000u32 {
        let s = UdpSocket::bind((ip(i), 0)).expect("a loopback address");
        s.send_to(&request2(server, u64::from(i)), server)
            .expect("send");
        flooders.push(s);
    }
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
    (replies, flooders)
}

/// 1,000 half-open handshakes, then a real client: connected within a
/// second. The flood comes from 125 addresses of 127.1.0.0/16 (Linux
/// answers for all of 127.0.0.0/8), 8 ports each; then from 1,000 ports
/// of 127.0.0.1 itself, the client's own address (a NAT with many players
/// behind it, or one player's crashed client retrying): that address's
/// oldest half-open handshake makes room for the newest, and nobody is
/// refused.
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
    let many = |i: u32| Ipv4Addr::new(127, 1, ((i / 8) >> 8) as u8, ((i / 8) & 0xff) as u8 + 1);
    let same = |_| Ipv4Addr::LOCALHOST;
    for (what, ip) in [
        ("125 addresses", &many as &dyn Fn(u32) -> Ipv4Addr),
        ("127.0.0.1", &same),
    ] {
        // Each gets Open Connection Reply 2: the server holds as many
        // half-open handshakes as it has slots, the oldest going first.
        let (replies, _flooders) = flood(server, ip);
        assert_eq!(
            replies, 1_000,
            "{what}: every Request 2 answered with a Reply 2"
        );
        // A real client, from 127.0.0.1: connected within a second.
        let start = Instant::now();
        let client = Ours::spawn(
            &args(&[
                "connect", &listen, "--send", "86aa", "--wait", "0.2", "--json",
            ]),
            None,
        );
        let f = client.finish(Duration::from_secs(30));
        let took = start.elapsed();
        assert_eq!(f.code, Some(0), "{what}: connect: {}", f.stderr);
        let connected = f.one("connected");
        assert!(
            took < Duration::from_secs(2),
            "{what}: the client's whole run took {took:?}; connected: {connected}"
        );
        assert!(
            connected["handshake_ms"].as_f64().unwrap_or(f64::MAX) < 1000.0,
            "{what}: {connected}"
        );
    }
    serve.proc.signal(libc::SIGTERM);
    let _ = serve.finish(Duration::from_secs(20));
}

/// The resident memory of process `pid`, in KiB.
fn rss_kb(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Our client connects to `server` from `local` over a real socket (the
/// library's handshake and connection), then is left to the caller.
fn connect_raw(server: SocketAddr, local: &UdpSocket) -> raknet_dissect::session::Connection {
    use raknet_dissect::session::{ClientConfig, ClientHandshake, State};
    let start = Instant::now();
    let now = || start.elapsed();
    let me = local.local_addr().unwrap();
    local
        .set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let mut h = ClientHandshake::new(ClientConfig::default(), server, me, now());
    let mut buf = Vec::new();
    let mut rx = [0u8; 2048];
    let mut conn = loop {
        assert!(start.elapsed() < Duration::from_secs(10), "handshake");
        while let Ok(true) = h.poll_transmit(now(), &mut buf) {
            local.send_to(&buf, server).unwrap();
        }
        if let Ok((n, _)) = local.recv_from(&mut rx) {
            if let Ok(Some(c)) = h.handle(now(), &rx[..n]) {
                break c;
            }
        }
    };
    while conn.state() != State::Connected {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "connected handshake"
        );
        while conn.poll_transmit(now(), &mut buf) {
            local.send_to(&buf, server).unwrap();
        }
        if let Ok((n, _)) = local.recv_from(&mut rx) {
            conn.handle(now(), &rx[..n]);
        }
        while conn.poll_event().is_some() {}
    }
    // Its NewIncomingConnection, resent until the server acknowledged it (a
    // busy server's socket buffer may drop the first), and the ACKs due.
    while !conn.is_idle() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "NewIncomingConnection acknowledged"
        );
        while conn.poll_transmit(now(), &mut buf) {
            local.send_to(&buf, server).unwrap();
        }
        if let Ok((n, _)) = local.recv_from(&mut rx) {
            conn.handle(now(), &rx[..n]);
        }
        while conn.poll_event().is_some() {}
    }
    while conn.poll_transmit(now(), &mut buf) {
        local.send_to(&buf, server).unwrap();
    }
    conn
}

/// Two clients connect, each sends 40 MB of parts of split messages that
/// never complete (a split bomb), and goes silent. The server holds them
/// until the connections time out (10 s), then gives the memory back: its
/// resident memory returns to within 20 MB of what it was idle.
#[test]
fn split_bombs_are_given_back_when_their_connections_time_out() {
    use raknet_dissect::wire::{Capsule, DataDatagram, Datagram, Reliability, Split};
    let port = common::free_port_pair();
    let listen = format!("127.0.0.1:{port}");
    let server: SocketAddr = listen.parse().unwrap();
    let mut serve = Ours::spawn(&args(&["serve", "--listen", &listen, "--json"]), None);
    assert!(serve
        .wait_record("listening", Duration::from_secs(10))
        .is_some());
    let pid = serve.proc.child.id();
    std::thread::sleep(Duration::from_millis(300));
    let idle = rss_kb(pid);
    let payload = [0x5a; 1400];
    let mut sockets = Vec::new();
    for client in 0..2u16 {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let _conn = connect_raw(server, &s);
        assert_eq!(
            serve.wait_records("connected", usize::from(client) + 1, Duration::from_secs(5)),
            usize::from(client) + 1,
            "the server saw bomber {client} connect"
        );
        // Datagram numbers after the handshake's few; reliable indexes from
        // 100 on, 1,000 split messages of 65,535 parts, 30 parts each.
        let mut seq = 50u32;
        let mut sent = 0usize;
        'bomb: for id in 0..1_000u16 {
            for index in 0..30u32 {
                let d = Datagram::Data(DataDatagram {
                    flags: 0,
                    seq,
                    capsules: vec![Capsule {
                        reliability: Reliability::RELIABLE,
                        reliable_index: Some(100 + seq),
                        sequence_index: None,
                        order_index: None,
                        channel: None,
                        split: Some(Split {
                            count: 65_535,
                            id: id.wrapping_add(client * 7_000),
                            index,
                        }),
                        bit_length: (payload.len() * 8) as u16,
                        payload: &payload,
                    }],
                });
                let mut b = Vec::new();
                d.emit(&mut b);
                s.send_to(&b, server).unwrap();
                seq += 1;
                sent += payload.len();
                if sent >= 40 << 20 {
                    break 'bomb;
                }
                if seq.is_multiple_of(64) {
                    std::thread::sleep(Duration::from_micros(500));
                }
            }
        }
        sockets.push(s);
    }
    std::thread::sleep(Duration::from_millis(500));
    let loaded = rss_kb(pid);
    // Silent now: the server times them out after 10 s.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut after = loaded;
    while Instant::now() < deadline {
        let closed = serve.wait_records("closed", 2, Duration::from_millis(500));
        after = rss_kb(pid);
        if closed == 2 && after <= idle + 20 * 1024 {
            break;
        }
    }
    serve.proc.signal(libc::SIGTERM);
    let f = serve.finish(Duration::from_secs(20));
    println!("serve RSS: idle {idle} KiB, loaded {loaded} KiB, after the time-outs {after} KiB");
    assert!(
        loaded > idle + 40 * 1024,
        "the bombs were held: {loaded} KiB"
    );
    assert_eq!(f.of_type("closed").len(), 2, "both timed out");
    assert!(
        after <= idle + 20 * 1024,
        "idle {idle} KiB, loaded {loaded} KiB, after the time-outs {after} KiB"
    );
}
