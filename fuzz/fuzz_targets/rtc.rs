//! A NetherNet peer's transport (`nethernet::rtc`: ICE, DTLS, SCTP, DCEP)
//! facing a hostile peer: first arbitrary datagrams from a few addresses
//! (STUN, DTLS, anything) with time moving on; then two of our peers
//! joined through a path the input drives (each datagram delivered,
//! dropped, repeated or with a byte changed). No panic, and every queue
//! stays bounded.
#![no_main]

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use raknet_dissect::nethernet::cert::Cert;
use raknet_dissect::nethernet::dcep::Open;
use raknet_dissect::nethernet::ice::Credentials;
use raknet_dissect::nethernet::rtc::{Rtc, RtcConfig, RtcEvent, MAX_QUEUED};

/// Two certificates made once (a P-256 key a run would be most of it).
fn certs() -> &'static (Cert, Cert) {
    static C: OnceLock<(Cert, Cert)> = OnceLock::new();
    C.get_or_init(|| {
        (
            Cert::self_signed("a").expect("randomness"),
            Cert::self_signed("b").expect("randomness"),
        )
    })
}

fn peer(offerer: bool, dtls_client: bool, remote: SocketAddr, now: Instant) -> Rtc {
    let (a, b) = certs();
    let (mine, theirs) = if offerer { (a, b) } else { (b, a) };
    let (l, r) = if offerer { ("aaaa", "bbbb") } else { ("bbbb", "aaaa") };
    let cfg = RtcConfig {
        controlling: offerer,
        dtls_client,
        ice: Credentials {
            local_ufrag: l.into(),
            local_pwd: format!("{l}-password-22-chars!"),
            remote_ufrag: r.into(),
            remote_pwd: format!("{r}-password-22-chars!"),
        },
        remotes: vec![remote],
        remote_fingerprint: theirs.fingerprint(),
        cert: mine.clone(),
        open: if offerer {
            vec![Open::reliable(), Open::unreliable()]
        } else {
            Vec::new()
        },
    };
    let mut n = 0u32;
    let ids = move || {
        n += 1;
        let mut id = [7u8; 12];
        id[..4].copy_from_slice(&n.to_be_bytes());
        id
    };
    Rtc::new(cfg, now, u64::from(offerer), ids).expect("a valid configuration")
}

/// Everything `p` has to say, taken (and counted: bounded).
fn drain(p: &mut Rtc) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some((_, d)) = p.poll_transmit() {
        out.push(d);
        assert!(out.len() <= MAX_QUEUED);
    }
    let mut events = 0;
    while let Some(e) = p.poll_event() {
        events += 1;
        assert!(events <= MAX_QUEUED + 1);
        if let RtcEvent::Message { data, .. } = e {
            assert!(data.len() <= raknet_dissect::nethernet::rtc::MAX_MESSAGE_SIZE);
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, mut rest)) = data.split_first() else {
        return;
    };
    let start = Instant::now();
    let (a_addr, b_addr): (SocketAddr, SocketAddr) = (
        "127.0.0.1:40001".parse().expect("an address"),
        "127.0.0.1:40002".parse().expect("an address"),
    );
    if mode & 1 == 0 {
        // Arbitrary datagrams at one peer: a chunk is a byte of address
        // and time, a length byte, the datagram.
        let mut p = peer(mode & 2 == 0, mode & 4 == 0, b_addr, start);
        let mut now = start;
        while let [head, len, tail @ ..] = rest {
            let n = usize::from(*len).min(tail.len());
            let (d, next) = tail.split_at(n);
            let from = SocketAddr::from(([127, 0, 0, 1], 40000 + u16::from(head & 3)));
            now += Duration::from_millis(u64::from(head >> 2) * 20);
            p.handle_datagram(now, from, d);
            p.handle_timeout(now);
            drain(&mut p);
            rest = next;
        }
        return;
    }
    // Two peers; each input byte decides the fate of one datagram.
    let mut a = peer(true, mode & 2 == 0, b_addr, start);
    let mut b = peer(false, mode & 2 != 0, a_addr, start);
    let mut now = start;
    let mut choices = rest.iter().copied();
    for _ in 0..400 {
        a.handle_timeout(now);
        b.handle_timeout(now);
        for (from_a, out) in [(true, drain(&mut a)), (false, drain(&mut b))] {
            for d in out {
                let c = choices.next().unwrap_or(0);
                let (to, from) = if from_a { (&mut b, a_addr) } else { (&mut a, b_addr) };
                match c & 3 {
                    0 => to.handle_datagram(now, from, &d),
                    1 => {}
                    2 => {
                        to.handle_datagram(now, from, &d);
                        to.handle_datagram(now, from, &d);
                    }
                    _ => {
                        let mut d = d;
                        if !d.is_empty() {
                            let i = usize::from(c >> 2) % d.len();
                            d[i] ^= 0x5a;
                        }
                        to.handle_datagram(now, from, &d);
                    }
                }
            }
        }
        let _ = a.send(now, "ReliableDataChannel", &[1, 2, 3]);
        now += Duration::from_millis(20);
    }
});
