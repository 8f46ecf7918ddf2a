//! A client and a server driven in memory with a fake clock, latency, and
//! seeded loss, duplication and reordering (quinn-proto's `Pair`).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::time::Duration;

use super::*;
use crate::wire::Reliability;

const C: &str = "127.0.0.1:40000";
const S: &str = "127.0.0.1:19132";

fn addr(s: &str) -> SocketAddr {
    s.parse().expect("test address")
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() % 1_000_000) as f64 / 1_000_000.0 < p
    }
}

#[derive(Clone, Copy)]
struct Link {
    loss: f64,
    dup: f64,
    reorder: f64,
    latency: Duration,
}

impl Link {
    fn clean() -> Self {
        Link {
            loss: 0.0,
            dup: 0.0,
            reorder: 0.0,
            latency: Duration::from_millis(5),
        }
    }
    fn lossy(loss: f64) -> Self {
        Link {
            loss,
            dup: 0.05,
            reorder: 0.05,
            latency: Duration::from_millis(5),
        }
    }
}

#[allow(clippy::large_enum_variant)] // one per test pair
enum ClientSide {
    Handshake(ClientHandshake),
    Connected(Connection),
    Failed(HandshakeError),
}

struct Pair {
    now: Duration,
    rng: Rng,
    link: Link,
    client: ClientSide,
    server: Listener,
    /// In flight: (arrival time, tie-breaker) -> (to_server, bytes).
    wire: BTreeMap<(Duration, u64), (bool, Vec<u8>)>,
    n: u64,
    client_events: Vec<Event>,
    server_events: Vec<Event>,
    datagrams: u64,
}

impl Pair {
    fn new(link: Link, seed: u64, client_cfg: ClientConfig, server_cfg: ServerConfig) -> Self {
        let now = Duration::ZERO;
        Pair {
            now,
            rng: Rng(seed | 1),
            link,
            client: ClientSide::Handshake(ClientHandshake::new(client_cfg, addr(S), addr(C), now)),
            server: Listener::new(server_cfg, addr(S)),
            wire: BTreeMap::new(),
            n: 0,
            client_events: Vec::new(),
            server_events: Vec::new(),
            datagrams: 0,
        }
    }

    fn put(&mut self, to_server: bool, bytes: Vec<u8>) {
        if std::env::var_os("PAIR_TRACE").is_some() {
            eprintln!(
                "{:?} {} {}",
                self.now,
                if to_server { "c2s" } else { "s2c" },
                crate::wire::cursor::hex(&bytes[..bytes.len().min(40)])
            );
        }
        self.datagrams += 1;
        if self.rng.chance(self.link.loss) {
            return;
        }
        let copies = if self.rng.chance(self.link.dup) { 2 } else { 1 };
        for _ in 0..copies {
            let mut at = self.now + self.link.latency;
            if self.rng.chance(self.link.reorder) {
                at += Duration::from_millis(1 + self.rng.next() % 20);
            }
            self.n += 1;
            self.wire.insert((at, self.n), (to_server, bytes.clone()));
        }
    }

    fn client_conn(&mut self) -> &mut Connection {
        match &mut self.client {
            ClientSide::Connected(c) => c,
            _ => panic!("the client is not connected"),
        }
    }

    /// Everything due at `now`: arrivals, then transmissions.
    fn step(&mut self) {
        while let Some(entry) = self.wire.first_entry() {
            if entry.key().0 > self.now {
                break;
            }
            let (to_server, bytes) = entry.remove();
            if to_server {
                self.server.handle(self.now, addr(C), &bytes);
                while let Some((_, e)) = self.server.poll_event() {
                    self.server_events.push(e);
                }
            } else {
                match &mut self.client {
                    ClientSide::Handshake(h) => match h.handle(self.now, &bytes) {
                        Ok(Some(c)) => self.client = ClientSide::Connected(c),
                        Ok(None) => {}
                        Err(e) => self.client = ClientSide::Failed(e),
                    },
                    ClientSide::Connected(c) => {
                        if bytes[0] & 0x80 != 0 {
                            c.handle(self.now, &bytes);
                        }
                        while let Some(e) = c.poll_event() {
                            self.client_events.push(e);
                        }
                    }
                    ClientSide::Failed(_) => {}
                }
            }
        }
        let mut buf = Vec::new();
        loop {
            let mut any = false;
            match &mut self.client {
                ClientSide::Handshake(h) => match h.poll_transmit(self.now, &mut buf) {
                    Ok(true) => {
                        let b = std::mem::take(&mut buf);
                        self.put(true, b);
                        any = true;
                    }
                    Ok(false) => {}
                    Err(e) => self.client = ClientSide::Failed(e),
                },
                ClientSide::Connected(c) => {
                    if c.poll_transmit(self.now, &mut buf) {
                        let b = std::mem::take(&mut buf);
                        self.put(true, b);
                        any = true;
                    }
                    while let Some(e) = self.client_conn().poll_event() {
                        self.client_events.push(e);
                    }
                }
                ClientSide::Failed(_) => {}
            }
            if self.server.poll_transmit(self.now, &mut buf).is_some() {
                let b = std::mem::take(&mut buf);
                self.put(false, b);
                any = true;
            }
            while let Some((_, e)) = self.server.poll_event() {
                self.server_events.push(e);
            }
            if !any {
                break;
            }
        }
    }

    fn next_time(&mut self) -> Option<Duration> {
        let mut t = self.wire.keys().next().map(|k| k.0);
        let mut min = |x: Option<Duration>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t: Duration| t.min(x)));
            }
        };
        match &mut self.client {
            ClientSide::Handshake(h) => min(Some(h.poll_timeout())),
            ClientSide::Connected(c) => min(c.poll_timeout()),
            ClientSide::Failed(_) => {}
        }
        min(self.server.poll_timeout());
        t
    }

    /// Run until `done` or the fake clock passes `limit`.
    fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&mut Pair) -> bool) -> bool {
        loop {
            self.step();
            if done(self) {
                return true;
            }
            let next = self.next_time().unwrap_or(limit);
            if next > limit || self.now > limit {
                return false;
            }
            // Never go back; a timer due now that sent nothing moves on by 1 ms.
            self.now = next.max(self.now + Duration::from_micros(100));
        }
    }

    fn connect(&mut self) {
        let ok = self.run_until(Duration::from_secs(30), |p| {
            p.client_events.contains(&Event::Connected)
                && p.server_events.contains(&Event::Connected)
        });
        assert!(ok, "connected within 30 s of fake time: client {:?} server {:?} conns {} client state {:?}", self.client_events, self.server_events, self.server.len(), match &self.client { ClientSide::Connected(c) => format!("{:?} {:?}", c.state(), c.stats()), ClientSide::Failed(e) => e.to_string(), _ => "handshake".into() });
    }
}

fn pair(link: Link, seed: u64) -> Pair {
    Pair::new(
        link,
        seed,
        ClientConfig {
            guid: 1,
            ..ClientConfig::default()
        },
        ServerConfig {
            guid: 2,
            ..ServerConfig::default()
        },
    )
}

#[test]
fn handshake_connects_both_sides() {
    let mut p = pair(Link::clean(), 1);
    p.connect();
    assert_eq!(p.client_conn().mtu(), 1492);
    assert_eq!(p.server.len(), 1);
    assert!(p.now < Duration::from_millis(100), "{:?}", p.now);
}

#[test]
fn protocol_mismatch_and_full_server_are_typed_errors() {
    let mut p = Pair::new(
        Link::clean(),
        1,
        ClientConfig {
            protocol: 11,
            ..ClientConfig::default()
        },
        ServerConfig::default(),
    );
    p.run_until(Duration::from_secs(10), |p| {
        matches!(p.client, ClientSide::Failed(_))
    });
    match &p.client {
        ClientSide::Failed(e) => {
            assert_eq!(
                e,
                &HandshakeError::IncompatibleProtocol {
                    ours: 11,
                    server: 6
                }
            );
            assert_eq!(e.step(), "incompatible_protocol");
        }
        _ => panic!("expected a failure"),
    }
    let mut p = Pair::new(
        Link::clean(),
        1,
        ClientConfig::default(),
        ServerConfig {
            max_clients: 0,
            ..ServerConfig::default()
        },
    );
    p.run_until(Duration::from_secs(10), |p| {
        matches!(p.client, ClientSide::Failed(_))
    });
    assert!(matches!(
        p.client,
        ClientSide::Failed(HandshakeError::Refused { id: 0x14 })
    ));
}

#[test]
fn mtu_falls_back_when_large_probes_are_lost() {
    // Drop everything client-to-server over 1200 bytes: like a path MTU of 1200.
    let mut p = pair(Link::clean(), 3);
    let ok = p.run_until(Duration::from_secs(30), |p| {
        p.wire
            .retain(|_, (to_server, b)| !(*to_server && b.len() > 1200 - 28));
        matches!(p.client, ClientSide::Connected(_))
    });
    assert!(ok);
    assert_eq!(p.client_conn().mtu(), 1200);
    assert!(p.now >= Duration::from_secs(2), "four 1492 probes first");
}

#[test]
fn nothing_answers_then_request1_fails() {
    let mut p = pair(
        Link {
            loss: 1.0,
            ..Link::clean()
        },
        1,
    );
    p.run_until(Duration::from_secs(30), |p| {
        matches!(p.client, ClientSide::Failed(_))
    });
    match &p.client {
        ClientSide::Failed(HandshakeError::Request1Unanswered { attempts, mtus }) => {
            assert_eq!(*attempts, 12);
            assert_eq!(mtus, &vec![1492, 1200, 576]);
        }
        _ => panic!("expected request 1 unanswered"),
    }
}

/// (reliability, channel, serial) in the first bytes of each message.
fn message(rel: u8, ch: u8, serial: u32, len: usize) -> Vec<u8> {
    let mut m = vec![0x86, rel, ch];
    m.extend_from_slice(&serial.to_be_bytes());
    m.extend((0..len.saturating_sub(7)).map(|i| (i as u32 ^ serial) as u8));
    m.truncate(len.max(7));
    m
}

fn exchange(link: Link, seed: u64, n: u32) {
    let mut p = pair(link, seed);
    p.connect();
    let mut rng = Rng(seed * 7 + 1);
    let mut sent = Vec::new();
    for serial in 0..n {
        let rel = (serial % 8) as u8;
        let ch = (serial / 8 % 4) as u8;
        let len = match rng.next() % 20 {
            0 => 100_000,
            1..=4 => 1500 + (rng.next() % 5000) as usize,
            _ => 7 + (rng.next() % 1400) as usize,
        };
        let len = if serial == n / 2 + 3 { 1_000_000 } else { len };
        let m = message(rel, ch, serial, len);
        let now = p.now;
        p.client_conn()
            .send(now, &m, Reliability(rel), ch, Some(serial));
        sent.push((rel, ch, m));
    }
    let reliable: Vec<_> = sent
        .iter()
        .filter(|(r, _, _)| matches!(r, 2 | 3 | 6 | 7))
        .collect();
    let ok = p.run_until(Duration::from_secs(600), |p| {
        let got = p
            .server_events
            .iter()
            .filter(|e| matches!(e, Event::Message(m) if matches!(m.data[1], 2 | 3 | 6 | 7)))
            .count();
        got >= reliable.len()
    });
    let got = p
        .server_events
        .iter()
        .filter(|e| matches!(e, Event::Message(_)))
        .count();
    let closed: Vec<_> = p
        .client_events
        .iter()
        .chain(&p.server_events)
        .filter(|e| matches!(e, Event::Closed(_)))
        .cloned()
        .collect();
    let now = p.now;
    let stats = p.client_conn().stats();
    assert!(
        ok,
        "every reliable message arrived within 600 s (loss {}): {got} messages, {} reliable sent, at {now:?}, closed {closed:?}, client {stats:?}",
        link.loss,
        reliable.len()
    );
    let received: Vec<&Vec<u8>> = p
        .server_events
        .iter()
        .filter_map(|e| match e {
            Event::Message(m) => Some(&m.data),
            _ => None,
        })
        .collect();
    // Exactly once, byte for byte.
    let mut seen = HashMap::new();
    for m in &received {
        *seen.entry(m.as_slice()).or_insert(0) += 1;
    }
    for (rel, _, m) in &sent {
        let count = seen.get(m.as_slice()).copied().unwrap_or(0);
        if matches!(rel, 2 | 3 | 6 | 7) {
            assert_eq!(
                count,
                1,
                "reliable message {:?} arrived {count} times",
                &m[..7]
            );
        } else if matches!(rel, 1 | 4) {
            // Unreliable ones may come twice when the link duplicates a
            // datagram (the original does not de-duplicate them either);
            // a sequenced one, never.
            assert!(count <= 1, "sequenced message arrived twice");
        }
    }
    // Ordered ones in order per channel; sequenced never go back.
    let mut last_ordered: HashMap<u8, u32> = HashMap::new();
    for m in &received {
        let (rel, ch) = (m[1], m[2]);
        let serial = u32::from_be_bytes([m[3], m[4], m[5], m[6]]);
        if matches!(rel, 3 | 7) {
            if let Some(prev) = last_ordered.insert(ch, serial) {
                assert!(
                    serial > prev,
                    "ordered message out of order on channel {ch}"
                );
            }
        }
    }
    // Disconnect from the client; the server hears it.
    let now = p.now;
    p.client_conn().close(now);
    let ok = p.run_until(p.now + Duration::from_secs(5), |p| {
        p.client_events.contains(&Event::Closed(CloseReason::ByUs))
            && p.server_events
                .contains(&Event::Closed(CloseReason::ByPeer))
    });
    assert!(ok || link.loss > 0.0, "clean close without loss");
}

#[test]
fn exchange_without_loss() {
    exchange(Link::clean(), 1, 1000);
}

#[test]
fn exchange_with_10_percent_loss() {
    exchange(Link::lossy(0.10), 2, 1000);
}

#[test]
fn exchange_with_30_percent_loss() {
    exchange(Link::lossy(0.30), 3, 400);
}

#[test]
fn server_closes_and_silent_peer_times_out() {
    let mut p = pair(Link::clean(), 4);
    p.connect();
    let now = p.now;
    p.server.close_all(now);
    assert!(p.run_until(now + Duration::from_secs(5), |p| {
        p.client_events
            .contains(&Event::Closed(CloseReason::ByPeer))
    }));
    // A new pair whose server goes silent after connecting.
    let mut p = pair(Link::clean(), 5);
    p.connect();
    p.link.loss = 1.0;
    let start = p.now;
    let now = p.now;
    p.client_conn()
        .send(now, b"\x86x", Reliability::RELIABLE, 0, None);
    assert!(p.run_until(start + Duration::from_secs(30), |p| {
        p.client_events
            .contains(&Event::Closed(CloseReason::TimedOut))
    }));
    assert!(p.now - start >= Duration::from_secs(10));
}

#[test]
fn handshake_floods_and_junk_stay_bounded() {
    let mut l = Listener::new(
        ServerConfig {
            max_pending: 64,
            ..ServerConfig::default()
        },
        addr(S),
    );
    let mut out = Vec::new();
    let mut req2 = Vec::new();
    crate::wire::Offline::OpenConnectionRequest2 {
        security: None,
        server_address: crate::wire::SystemAddress::from_socket_addr(addr(S)),
        mtu: 1492,
        client_guid: 9,
    }
    .emit(&mut req2);
    let mut rng = Rng(99);
    for i in 0..100_000u32 {
        let from = SocketAddr::from(([10, (i >> 16) as u8, (i >> 8) as u8, i as u8], 1000));
        let now = Duration::from_micros(u64::from(i));
        l.handle(now, from, &req2);
        let junk: Vec<u8> = (0..(rng.next() % 60)).map(|_| rng.next() as u8).collect();
        l.handle(now, from, &junk);
        let mut flipped = req2.clone();
        let at = (rng.next() as usize) % flipped.len();
        flipped[at] ^= 0x80;
        l.handle(now, from, &flipped);
        while l.poll_transmit(now, &mut out).is_some() {}
        assert!(l.len() <= 32 + 64);
    }
    // Half-open handshakes expire.
    let later = Duration::from_secs(60);
    while l.poll_transmit(later, &mut out).is_some() {}
    assert_eq!(l.len(), 0);
}

#[test]
fn malformed_and_mutated_datagrams_on_a_connection_never_panic() {
    let mut p = pair(Link::clean(), 6);
    p.connect();
    // Real datagrams of the client, mutated, plus random bytes, sent to the
    // server's connection from the client's address.
    let now = p.now;
    let big = vec![0x86u8; 20_000];
    p.client_conn()
        .send(now, &big, Reliability::RELIABLE_ORDERED, 3, None);
    let mut real = Vec::new();
    let mut buf = Vec::new();
    let now = p.now + Duration::from_millis(1);
    while p.client_conn().poll_transmit(now, &mut buf) {
        real.push(buf.clone());
    }
    assert!(!real.is_empty());
    let mut rng = Rng(77);
    let mut out = Vec::new();
    for i in 0..100_000u64 {
        let t = p.now + Duration::from_micros(i);
        let mut d = real[(rng.next() as usize) % real.len()].clone();
        for _ in 0..(rng.next() % 4) {
            let at = (rng.next() as usize) % d.len();
            d[at] = rng.next() as u8;
        }
        if rng.chance(0.2) {
            d.truncate((rng.next() as usize) % d.len());
        }
        if rng.chance(0.1) {
            d = (0..(rng.next() % 80)).map(|_| rng.next() as u8).collect();
            if let Some(b) = d.first_mut() {
                *b |= 0x80;
            }
        }
        p.server.handle(t, addr(C), &d);
        while p.server.poll_transmit(t, &mut out).is_some() {}
        while p.server.poll_event().is_some() {}
    }
    let c = p.server.connection(addr(C)).map(|c| c.stats());
    assert!(p.server.len() <= 1, "{c:?}");
}

/// A client that sends most of a split message and goes silent: the server
/// holds the parts until the connection times out, then gives them back
/// (the closed connection keeps its statistics, not its buffers).
#[test]
fn a_closed_connection_gives_back_what_it_held() {
    let mut p = pair(Link::clean(), 7);
    p.connect();
    let now = p.now;
    // 300 KB: about 210 parts; the link dies after the first 100 datagrams.
    let big = message(2, 0, 1, 300_000);
    p.client_conn()
        .send(now, &big, Reliability::RELIABLE, 0, None);
    let sent_before = p.datagrams;
    assert!(p.run_until(now + Duration::from_secs(5), |p| p.datagrams
        >= sent_before + 100));
    p.link.loss = 1.0;
    let c = addr(C);
    let held = p.server.connection(c).map_or(0, Connection::held_bytes);
    assert!(held > 100_000, "the server holds the parts: {held} bytes");
    let stats = p.server.connection(c).unwrap().stats();
    assert!(p.run_until(now + Duration::from_secs(60), |p| p
        .server
        .connection(c)
        .is_none()));
    let closed = p
        .server
        .closed_connection(c)
        .expect("kept for its statistics");
    assert!(
        closed.held_bytes() < 1_000,
        "{} bytes still held",
        closed.held_bytes()
    );
    assert!(closed.stats().datagrams_received >= stats.datagrams_received);
    assert!(closed.stats().send.datagrams_sent >= stats.send.datagrams_sent);
}

/// All connections together hold at most `max_held_total`: past it the
/// largest holder is closed and what it held dropped.
#[test]
fn held_data_has_a_budget_across_connections() {
    let mut p = Pair::new(
        Link::clean(),
        8,
        ClientConfig {
            guid: 1,
            ..ClientConfig::default()
        },
        ServerConfig {
            guid: 2,
            max_held_total: 50_000,
            ..ServerConfig::default()
        },
    );
    p.connect();
    let now = p.now;
    // A split message held in parts until more than the budget arrived.
    let big = message(2, 0, 1, 200_000);
    p.client_conn()
        .send(now, &big, Reliability::RELIABLE, 0, None);
    assert!(p.run_until(now + Duration::from_secs(10), |p| p.server.stats().shed > 0));
    assert_eq!(p.server.stats().shed, 1);
    let c = addr(C);
    let held = p
        .server
        .connection(c)
        .or_else(|| p.server.closed_connection(c))
        .map_or(0, Connection::held_bytes);
    assert!(held <= 50_000 + 2_000, "{held} bytes held after shedding");
    assert!(p.run_until(p.now + Duration::from_secs(5), |p| {
        p.client_events
            .iter()
            .any(|e| matches!(e, Event::Closed(_)))
    }));
}

/// 1,000 half-open handshakes (Request 2, then silence) from the real
/// client's own address (its other ports) and 1,000 from as many
/// addresses fill the pending slots; the client still gets in at once:
/// one address holds at most `max_pending_per_ip` of them, its oldest
/// making room for its newest, and past `max_pending` the oldest of all
/// goes. Nobody is refused.
#[test]
fn half_open_floods_do_not_lock_real_clients_out() {
    let mut p = pair(Link::clean(), 9);
    let mut req2 = Vec::new();
    crate::wire::Offline::OpenConnectionRequest2 {
        security: None,
        server_address: crate::wire::SystemAddress::from_socket_addr(addr(S)),
        mtu: 1492,
        client_guid: 9,
    }
    .emit(&mut req2);
    let mut out = Vec::new();
    let mut refusals = std::collections::HashMap::<u8, u32>::new();
    for i in 0..2_000u32 {
        // As many addresses first, then the client's own address.
        let from = if i < 1_000 {
            SocketAddr::from(([10, 1, (i >> 8) as u8, i as u8], 1000))
        } else {
            SocketAddr::new(addr(C).ip(), 20_000 + i as u16)
        };
        // Time goes on (0.2 s in all), so that "oldest" means something.
        p.now += Duration::from_micros(100);
        p.server.handle(p.now, from, &req2);
        while let Some(to) = p.server.poll_transmit(p.now, &mut out) {
            if to == from && out.first() != Some(&0x08) {
                *refusals.entry(out[0]).or_default() += 1;
            }
        }
    }
    assert!(refusals.is_empty(), "{refusals:?}");
    let max = ServerConfig::default().max_pending;
    assert_eq!(p.server.len(), max);
    assert_eq!(p.server.stats().handshakes_dropped, 2_000 - max as u64);
    let from_c = |p: &Pair| {
        (21_000..22_000u16)
            .filter(|&port| {
                p.server
                    .connection(SocketAddr::new(addr(C).ip(), port))
                    .is_some()
            })
            .count()
    };
    assert_eq!(from_c(&p), ServerConfig::default().max_pending_per_ip);
    let start = p.now;
    p.connect();
    assert!(
        p.now - start < Duration::from_secs(1),
        "{:?}",
        p.now - start
    );
}

/// The tail-loss probe: the client sends, and the server's application
/// answers nothing (its side sends ACKs only): one ping goes out a second
/// later, long before the keepalive of half the time-out, and no other
/// until data comes from the peer again. A reply that arrives in time
/// means no probe.
#[test]
fn a_second_of_silence_after_sending_draws_one_probe() {
    let mut p = pair(Link::clean(), 11);
    p.connect();
    // Quiet first: the handshake's own exchange is over.
    let settle = p.now + Duration::from_secs(3);
    p.run_until(settle, |_| false);
    let probes = |p: &mut Pair| p.client_conn().stats().probes;
    let before = probes(&mut p);
    let t0 = p.now;
    p.client_conn()
        .send(t0, b"\x86x", Reliability::RELIABLE, 0, None);
    p.run_until(t0 + Duration::from_millis(900), |_| false);
    assert_eq!(probes(&mut p), before, "not before a second");
    p.run_until(t0 + Duration::from_millis(1_200), |_| false);
    assert_eq!(probes(&mut p), before + 1, "one probe after a second");
    // Its pong is data from the peer: nothing more is owed.
    p.run_until(t0 + Duration::from_millis(4_000), |_| false);
    assert_eq!(probes(&mut p), before + 1);
}
