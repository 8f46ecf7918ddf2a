//! Property tests for the whole codec: encode then decode is the identity for
//! every message type, and no byte string makes a decoder panic.

use proptest::collection::vec;
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};

use super::connected::RequestSecurity;
use super::offline::{Reply1Security, Request2Security};
use super::*;

fn address() -> impl Strategy<Value = SystemAddress> {
    prop_oneof![
        (any::<u32>(), any::<u16>())
            .prop_map(|(ip, port)| SystemAddress::V4(SocketAddrV4::new(Ipv4Addr::from(ip), port))),
        (
            any::<u128>(),
            any::<u16>(),
            any::<u32>(),
            any::<u32>(),
            any::<u16>()
        )
            .prop_map(|(ip, port, flow, scope, family)| SystemAddress::V6 {
                addr: SocketAddrV6::new(Ipv6Addr::from(ip), port, flow, scope),
                family,
            }),
    ]
}

/// Owned inputs for an offline message (the message borrows from them).
#[derive(Debug, Clone)]
struct OfflineCase {
    choice: u8,
    a: u64,
    b: u64,
    small: u8,
    mtu: u16,
    cookie: Option<u32>,
    with_blob: bool,
    blob: Vec<u8>,
    addr: SystemAddress,
}

fn offline_case() -> impl Strategy<Value = OfflineCase> {
    (
        0u8..9,
        any::<u64>(),
        any::<u64>(),
        any::<u8>(),
        46u16..=1500,
        proptest::option::of(any::<u32>()),
        any::<bool>(),
        vec(any::<u8>(), 0..200),
        address(),
    )
        .prop_map(
            |(choice, a, b, small, mtu, cookie, with_blob, blob, addr)| OfflineCase {
                choice,
                a,
                b,
                small,
                mtu,
                cookie,
                with_blob,
                blob,
                addr,
            },
        )
}

fn blob(c: &OfflineCase, n: usize) -> Vec<u8> {
    c.blob
        .iter()
        .copied()
        .cycle()
        .take(n)
        .chain(std::iter::repeat(7))
        .take(n)
        .collect()
}

fn check_offline(c: &OfflineCase) {
    let key = blob(c, 64);
    let answer = blob(c, 128);
    let m = match c.choice {
        0 => Offline::UnconnectedPing {
            open_connections: c.small & 1 == 1,
            time: c.a,
            client_guid: c.with_blob.then_some(c.b),
        },
        1 => Offline::UnconnectedPong {
            time: c.a,
            server_guid: c.b,
            payload: &c.blob,
        },
        2 => Offline::OpenConnectionRequest1 {
            protocol: c.small,
            mtu: c.mtu,
        },
        3 => Offline::OpenConnectionReply1 {
            server_guid: c.a,
            security: c.cookie.map(|cookie| Reply1Security {
                cookie,
                public_key: c.with_blob.then_some(&key[..]),
            }),
            mtu: c.mtu,
        },
        4 => Offline::OpenConnectionRequest2 {
            security: c.cookie.map(|cookie| Request2Security {
                cookie,
                challenge: c.with_blob.then_some(&key[..]),
            }),
            server_address: c.addr,
            mtu: c.mtu,
            client_guid: c.a,
        },
        5 => Offline::OpenConnectionReply2 {
            server_guid: c.a,
            client_address: c.addr,
            mtu: c.mtu,
            security_answer: c.with_blob.then_some(&answer[..]),
        },
        6 => Offline::IncompatibleProtocolVersion {
            protocol: c.small,
            server_guid: c.a,
        },
        7 => Offline::Refusal {
            id: [0x11, 0x12, 0x14, 0x17, 0x1a][c.small as usize % 5],
            server_guid: c.a,
        },
        _ => Offline::OutOfBand {
            guid: c.a,
            payload: &c.blob,
        },
    };
    let mut out = Vec::new();
    m.emit(&mut out);
    assert_eq!(offline_id(&out), Some(m.id()));
    let mut r = Reader::new(&out);
    assert_eq!(Offline::parse(&mut r).expect("own encoding decodes"), m);
    assert_eq!(r.remaining(), 0);
}

fn reliability_fields() -> impl Strategy<Value = (u8, u32, u32, u32, u8)> {
    // 5 to 7 are never on the wire; 0..=4 are what encoders send.
    (0u8..5, 0u32..1 << 24, 0u32..1 << 24, 0u32..1 << 24, 0u8..32)
}

#[derive(Debug, Clone)]
struct CapsuleCase {
    rel: (u8, u32, u32, u32, u8),
    split: Option<(u32, u16, u32)>,
    payload: Vec<u8>,
}

fn capsule_case() -> impl Strategy<Value = CapsuleCase> {
    (
        reliability_fields(),
        proptest::option::of((1u32..1000, any::<u16>(), any::<u32>())),
        vec(any::<u8>(), 1..300),
    )
        .prop_map(|(rel, split, payload)| CapsuleCase {
            rel,
            split: split.map(|(count, id, i)| (count, id, i % count)),
            payload,
        })
}

fn capsule(c: &CapsuleCase) -> Capsule<'_> {
    let (r, ri, si, oi, ch) = c.rel;
    let rel = Reliability(r);
    Capsule {
        reliability: rel,
        reliable_index: rel.has_reliable_index().then_some(ri),
        sequence_index: rel.is_sequenced().then_some(si),
        order_index: rel.has_ordering().then_some(oi),
        channel: rel.has_ordering().then_some(ch),
        split: c.split.map(|(count, id, index)| Split { count, id, index }),
        bit_length: (c.payload.len() * 8) as u16,
        payload: &c.payload,
    }
}

proptest! {
    #[test]
    fn offline_round_trips(c in offline_case()) {
        check_offline(&c);
    }

    #[test]
    fn data_datagram_round_trips(
        flags in prop_oneof![Just(0x80u8), Just(0x84), Just(0x88), Just(0x8c), Just(0x90)],
        seq in 0u32..1 << 24,
        cases in vec(capsule_case(), 1..6),
    ) {
        let d = Datagram::Data(DataDatagram {
            flags,
            seq,
            capsules: cases.iter().map(capsule).collect(),
        });
        let mut out = Vec::new();
        d.emit(&mut out);
        prop_assert_eq!(Datagram::parse(&mut Reader::new(&out)).expect("decodes"), d);
    }

    #[test]
    fn ack_and_nack_round_trip(
        nack in any::<bool>(),
        raw in vec((0u32..1 << 24, 0u32..1000), 0..40),
        arrival in proptest::option::of(any::<u32>()),
    ) {
        let ranges: Vec<AckRange> = raw
            .iter()
            .map(|&(min, span)| AckRange { min, max: (min + span).min((1 << 24) - 1) })
            .collect();
        let list = AckList {
            flags: 0,
            arrival_rate: if nack { None } else { arrival.map(f32::from_bits).filter(|f| !f.is_nan()) },
            ranges,
        };
        let d = if nack { Datagram::Nack(list) } else { Datagram::Ack(list) };
        let mut out = Vec::new();
        d.emit(&mut out);
        let back = Datagram::parse(&mut Reader::new(&out)).expect("decodes");
        let mut again = Vec::new();
        back.emit(&mut again);
        prop_assert_eq!(&again, &out);
        match (&back, &d) {
            (Datagram::Ack(a), Datagram::Ack(b)) | (Datagram::Nack(a), Datagram::Nack(b)) => {
                prop_assert_eq!(&a.ranges, &b.ranges);
                prop_assert_eq!(a.arrival_rate.map(f32::to_bits), b.arrival_rate.map(f32::to_bits));
            }
            _ => prop_assert!(false, "kind changed: {:?}", back),
        }
    }

    #[test]
    fn connected_round_trips(
        choice in 0u8..11,
        a in any::<u64>(),
        b in any::<u64>(),
        small in any::<u8>(),
        index in any::<u16>(),
        addrs in vec(address(), 0..21),
        first in address(),
        blob in vec(any::<u8>(), 0..64),
        with_sec in any::<bool>(),
    ) {
        let proof = [small; 32];
        let identity = [small; 160];
        let mut user = vec![0x86u8.max(small)];
        user.extend_from_slice(&blob);
        let m = match choice {
            0 => Connected::ConnectedPing { time: a },
            1 => Connected::ConnectedPong { ping_time: a, pong_time: b },
            2 => Connected::DetectLostConnections,
            3 => Connected::ConnectionRequest {
                client_guid: a,
                time: b,
                security: with_sec.then_some(RequestSecurity {
                    proof: &proof,
                    identity: (small & 1 == 1).then_some(&identity[..]),
                }),
                password: &blob,
            },
            4 => Connected::RemoteSystemRequiresPublicKey { reason: small },
            5 => Connected::ConnectionRequestAccepted {
                client_address: first,
                system_index: index,
                addresses: addrs.clone(),
                request_time: a,
                time: b,
            },
            6 => Connected::NewIncomingConnection {
                server_address: first,
                addresses: addrs.clone(),
                pong_time: a,
                time: b,
            },
            7 => Connected::DisconnectionNotification,
            8 => Connected::InvalidPassword { guid: a },
            9 => Connected::Timestamp { time: a, rest: &blob },
            _ => Connected::User { id: user[0], data: &user },
        };
        let mut out = Vec::new();
        m.emit(&mut out);
        let mut r = Reader::new(&out);
        prop_assert_eq!(Connected::parse(&mut r).expect("decodes"), m);
        prop_assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn random_bytes_never_panic(bytes in vec(any::<u8>(), 0..600), base in 0usize..2000) {
        let _ = Datagram::parse_lax(&mut Reader::with_base(&bytes, base).traced());
        let _ = Offline::parse(&mut Reader::new(&bytes).traced());
        let _ = Connected::parse(&mut Reader::new(&bytes).traced());
        let _ = Capsule::parse(&mut Reader::new(&bytes));
        let _ = SystemAddress::parse(&mut Reader::new(&bytes), "address");
        let _ = Motd::parse(&bytes);
        let _ = offline_id(&bytes);
    }

    #[test]
    fn offline_prefix_with_random_tail_never_panics(
        id in prop_oneof![Just(1u8), Just(5), Just(6), Just(7), Just(8), Just(0x0d), Just(0x19), Just(0x1c)],
        tail in vec(any::<u8>(), 0..200),
    ) {
        let mut bytes = vec![id];
        match id {
            0x01 | 0x0d => bytes.extend_from_slice(&[0; 8]),
            0x1c => bytes.extend_from_slice(&[0; 16]),
            0x19 => bytes.push(6),
            _ => {}
        }
        bytes.extend_from_slice(&MAGIC);
        bytes.extend_from_slice(&tail);
        prop_assert_eq!(offline_id(&bytes), Some(id));
        let _ = Offline::parse(&mut Reader::new(&bytes).traced());
    }
}
