//! Whole-reader tests: captures built in memory, read back.

use std::io::{self, Cursor, Read};
use std::net::SocketAddr;
use std::time::Duration;

use etherparse::IpNumber;
use pcap_file::Endianness;

use super::testutil::*;
use super::*;

fn reader(bytes: Vec<u8>) -> CaptureReader {
    CaptureReader::from_reader(Box::new(Cursor::new(bytes))).expect("a valid capture")
}

/// Every datagram, and the final error if any.
fn drain(mut r: CaptureReader) -> (Vec<UdpDatagram>, Option<CaptureError>, CaptureStats) {
    let mut datagrams = Vec::new();
    let mut error = None;
    while let Some(next) = r.next_datagram() {
        match next {
            Ok(d) => datagrams.push(d),
            Err(e) => {
                assert!(error.is_none(), "nothing after an error");
                error = Some(e);
            }
        }
    }
    assert!(r.next_datagram().is_none(), "the end stays the end");
    (datagrams, error, r.stats().clone())
}

fn read_all(bytes: Vec<u8>) -> (Vec<UdpDatagram>, CaptureStats) {
    let (datagrams, error, stats) = drain(reader(bytes));
    assert!(error.is_none(), "unexpected error: {error:?}");
    (datagrams, stats)
}

fn addr(s: &str) -> SocketAddr {
    s.parse().expect("test address")
}

#[test]
fn pcap_ethernet_ipv4() {
    let bytes = pcap_eth(&[
        Rec::new(
            Duration::new(1_700_000_000, 123_456_000),
            eth4(&udp4(A4, B4, 50000, 19132, b"\x01hello")),
        ),
        Rec::new(
            Duration::new(1_700_000_001, 0),
            eth4(&udp4(B4, A4, 19132, 50000, b"\x1c")),
        ),
    ]);
    let r = reader(bytes);
    assert_eq!(r.format(), CaptureFormat::Pcap);
    let (datagrams, error, stats) = drain(r);
    assert!(error.is_none());
    assert_eq!(
        datagrams[0],
        UdpDatagram {
            frame: 1,
            ts: Duration::new(1_700_000_000, 123_456_000),
            src: addr("192.168.1.10:50000"),
            dst: addr("192.168.1.20:19132"),
            payload: b"\x01hello".to_vec(),
            udp_len: 6,
            icmp: None,
            tcp: None,
        }
    );
    assert!(!datagrams[0].truncated());
    assert_eq!(datagrams[1].frame, 2);
    assert_eq!(datagrams[1].src, addr("192.168.1.20:19132"));
    assert_eq!(
        stats,
        CaptureStats {
            frames: 2,
            udp: 2,
            ..CaptureStats::default()
        }
    );
}

#[test]
fn pcap_both_byte_orders_and_nanoseconds() {
    let ts = Duration::new(1_600_000_000, 987_654_321);
    for endianness in [Endianness::Big, Endianness::Little] {
        for nanos in [false, true] {
            let bytes = pcap(
                1,
                nanos,
                endianness,
                &[Rec::new(ts, eth4(&udp4(A4, B4, 1, 2, b"x")))],
            );
            let (datagrams, _) = read_all(bytes);
            let expected = if nanos {
                ts
            } else {
                Duration::new(1_600_000_000, 987_654_000)
            };
            assert_eq!(datagrams[0].ts, expected, "{endianness:?} nanos={nanos}");
            assert_eq!(datagrams[0].payload, b"x");
        }
    }
}

#[test]
fn pcap_fraction_out_of_range_carries() {
    // pcap-file's strict reader would refuse this record; it is still readable.
    let mut bytes = pcap_eth(&[Rec::new(
        Duration::from_secs(10),
        eth4(&udp4(A4, B4, 1, 2, b"x")),
    )]);
    bytes[28..32].copy_from_slice(&1_500_000u32.to_le_bytes());
    let (datagrams, _) = read_all(bytes);
    assert_eq!(datagrams[0].ts, Duration::new(11, 500_000_000));
}

/// The same UDP packet under every supported link type.
#[test]
fn every_link_type() {
    let ip4 = udp4(A4, B4, 1000, 2000, b"four");
    let ip6 = udp6(A6, B6, 1000, 2000, b"six");
    let sll = |protocol: u16, ip: &[u8]| {
        let mut f = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0];
        f.extend(protocol.to_be_bytes());
        f.extend_from_slice(ip);
        f
    };
    let sll2 = |protocol: u16, ip: &[u8]| {
        let mut f = protocol.to_be_bytes().to_vec();
        f.extend([0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0]);
        f.extend_from_slice(ip);
        f
    };
    let null = |family: [u8; 4], ip: &[u8]| {
        let mut f = family.to_vec();
        f.extend_from_slice(ip);
        f
    };
    let cases: Vec<(&str, u32, Vec<u8>, bool)> = vec![
        ("ethernet v4", 1, eth(0x0800, &ip4), false),
        ("ethernet v6", 1, eth(0x86dd, &ip6), true),
        ("sll v4", 113, sll(0x0800, &ip4), false),
        ("sll v6", 113, sll(0x86dd, &ip6), true),
        ("sll2 v4", 276, sll2(0x0800, &ip4), false),
        ("sll2 v6", 276, sll2(0x86dd, &ip6), true),
        ("raw v4", 101, ip4.clone(), false),
        ("raw v6", 101, ip6.clone(), true),
        ("dlt 12", 12, ip4.clone(), false),
        ("dlt 14", 14, ip6.clone(), true),
        ("ipv4", 228, ip4.clone(), false),
        ("ipv6", 229, ip6.clone(), true),
        ("null host order", 0, null(2u32.to_le_bytes(), &ip4), false),
        ("null darwin v6", 0, null(30u32.to_le_bytes(), &ip6), true),
        ("null freebsd v6", 0, null(28u32.to_le_bytes(), &ip6), true),
        (
            "null other-endian",
            0,
            null(24u32.to_be_bytes(), &ip6),
            true,
        ),
        ("loop", 108, null(2u32.to_be_bytes(), &ip4), false),
        ("loop v6", 108, null(24u32.to_be_bytes(), &ip6), true),
    ];
    for (what, linktype, frame, v6) in cases {
        let bytes = pcap(
            linktype,
            false,
            Endianness::Little,
            &[Rec::new(ms(1), frame)],
        );
        let (datagrams, stats) = read_all(bytes);
        assert_eq!(datagrams.len(), 1, "{what}: {stats:?}");
        let d = &datagrams[0];
        if v6 {
            assert_eq!(d.src, addr("[2001:db8::1]:1000"), "{what}");
            assert_eq!(d.payload, b"six", "{what}");
        } else {
            assert_eq!(d.dst, addr("192.168.1.20:2000"), "{what}");
            assert_eq!(d.payload, b"four", "{what}");
        }
    }
}

#[test]
fn unsupported_link_type_is_counted_not_fatal() {
    // 802.11 radiotap, then a pcap of Ethernet: two separate files.
    let bytes = pcap(
        127,
        false,
        Endianness::Little,
        &[Rec::new(ms(1), vec![0; 40])],
    );
    let (datagrams, stats) = read_all(bytes);
    assert!(datagrams.is_empty());
    assert_eq!(stats.frames, 1);
    assert_eq!(stats.unsupported_link, 1);
}

#[test]
fn pcap_linktype_high_bits_are_ignored() {
    // FCS length in the top bits of the link type field.
    let mut bytes = pcap_eth(&[Rec::new(ms(1), eth4(&udp4(A4, B4, 1, 2, b"x")))]);
    bytes[20..24].copy_from_slice(&0x1000_0001u32.to_le_bytes());
    let (datagrams, _) = read_all(bytes);
    assert_eq!(datagrams.len(), 1);
}

#[test]
fn vlan_and_qinq() {
    let ip = udp4(A4, B4, 1, 2, b"tagged");
    let mut one = vec![0x20, 0x07, 0x08, 0x00];
    one.extend(&ip);
    let mut two = vec![0x00, 0x64, 0x81, 0x00, 0x00, 0x07, 0x08, 0x00];
    two.extend(&ip);
    let bytes = pcap_eth(&[
        Rec::new(ms(1), eth(0x8100, &one)),
        Rec::new(ms(2), eth(0x88a8, &two)),
        Rec::new(ms(3), eth(0x9100, &two)),
    ]);
    let (datagrams, stats) = read_all(bytes);
    assert_eq!(datagrams.len(), 3, "{stats:?}");
    assert!(datagrams.iter().all(|d| d.payload == b"tagged"));
}

#[test]
fn non_udp_is_counted_and_skipped() {
    let bytes = pcap_eth(&[
        Rec::new(ms(1), eth(0x0806, &[0; 28])), // ARP
        Rec::new(ms(2), eth4(&ip4_proto(IpNumber::TCP, &[0; 20]))), // TCP
        Rec::new(ms(3), eth4(&ip4_proto(IpNumber::ICMP, &[8, 0, 0, 0]))), // ICMP
        Rec::new(ms(4), eth4(&udp4(A4, B4, 1, 2, b"u"))),
    ]);
    let (datagrams, stats) = read_all(bytes);
    assert_eq!(datagrams.len(), 1);
    assert_eq!(datagrams[0].frame, 4);
    assert_eq!(stats.non_udp, 3);
    assert_eq!(stats.udp, 1);
}

#[test]
fn ethernet_padding_is_not_payload() {
    let mut frame = eth4(&udp4(A4, B4, 1, 2, b"ab"));
    frame.resize(60, 0); // minimum Ethernet frame
    frame.extend([0xde, 0xad, 0xbe, 0xef]); // and an FCS
    let (datagrams, _) = read_all(pcap_eth(&[Rec::new(ms(1), frame)]));
    assert_eq!(datagrams[0].payload, b"ab");
    assert_eq!(datagrams[0].udp_len, 2);
}

#[test]
fn malformed_ip_and_udp_are_bad_ip() {
    let mut long_udp = udp4(A4, B4, 1, 2, b"abcd");
    long_udp[24..26].copy_from_slice(&100u16.to_be_bytes()); // UDP length past the IP packet
    let mut short_udp = udp4(A4, B4, 1, 2, b"abcd");
    short_udp[24..26].copy_from_slice(&4u16.to_be_bytes()); // below the header size
    let bytes = pcap_eth(&[
        Rec::new(ms(1), eth4(&long_udp)),
        Rec::new(ms(2), eth4(&short_udp)),
        Rec::new(ms(3), eth4(&[0x43, 0, 0, 20])), // IHL below 5
        Rec::new(ms(4), eth4(&[0x45, 0, 0])),     // IP header cut, frame not cut
        Rec::new(ms(5), eth4(&[0x75; 40])),       // version 7
        Rec::new(ms(6), vec![0; 10]),             // Ethernet header cut
    ]);
    let (datagrams, stats) = read_all(bytes);
    assert!(datagrams.is_empty());
    assert_eq!(stats.bad_ip, 6, "{stats:?}");
}

#[test]
fn ipv6_extension_headers() {
    // Hop-by-hop (next: destination options), destination options (next: UDP).
    let segment = udp_segment(7, 8, b"behind extensions");
    let mut ip = vec![0x60, 0, 0, 0];
    ip.extend(
        u16::try_from(16 + segment.len())
            .expect("small")
            .to_be_bytes(),
    );
    ip.extend([0, 64]);
    ip.extend(A6);
    ip.extend(B6);
    ip.extend([60, 0, 1, 4, 0, 0, 0, 0]);
    ip.extend([17, 0, 1, 4, 0, 0, 0, 0]);
    ip.extend(&segment);
    let (datagrams, stats) = read_all(pcap_eth(&[Rec::new(ms(1), eth(0x86dd, &ip))]));
    assert_eq!(datagrams.len(), 1, "{stats:?}");
    assert_eq!(datagrams[0].payload, b"behind extensions");
    assert_eq!(datagrams[0].dst, addr("[2001:db8::2]:8"));
}

#[test]
fn ipv4_fragments_out_of_order() {
    let payload: Vec<u8> = (0..100).collect();
    let segment = udp_segment(4000, 19132, &payload);
    let frags = frag4(0x1234, &segment, 32); // 108 bytes: 32 + 32 + 32 + 12
    assert_eq!(frags.len(), 4);
    let order = [2, 0, 3, 1];
    let mut records = vec![Rec::new(ms(0), eth4(&udp4(A4, B4, 1, 2, b"before")))];
    for (i, &f) in order.iter().enumerate() {
        records.push(Rec::new(ms(10 + i as u64), eth4(&frags[f])));
    }
    records.push(Rec::new(ms(20), eth4(&udp4(A4, B4, 1, 2, b"after"))));
    let (datagrams, stats) = read_all(pcap_eth(&records));
    assert_eq!(datagrams.len(), 3);
    let whole = &datagrams[1];
    assert_eq!(whole.payload, payload);
    assert_eq!(whole.udp_len, 100);
    assert_eq!(whole.frame, 5, "the frame that completed it");
    assert_eq!(whole.ts, ms(13));
    assert_eq!(whole.src, addr("192.168.1.10:4000"));
    assert_eq!(datagrams[2].frame, 6);
    assert_eq!(stats.fragments_reassembled, 4);
    assert_eq!(stats.fragments_dropped, 0);
    assert_eq!(stats.udp, 3);
    assert_eq!(stats.frames, 6);
}

#[test]
fn ipv4_fragments_of_other_protocols_are_not_kept() {
    let mut frags = frag4(1, &[0; 64], 32);
    for f in &mut frags {
        f[9] = 1; // ICMP
    }
    let records: Vec<Rec> = frags
        .into_iter()
        .map(|f| Rec::new(ms(1), eth4(&f)))
        .collect();
    let (_, stats) = read_all(pcap_eth(&records));
    assert_eq!(stats.non_udp, 2);
    assert_eq!(stats.fragments_dropped + stats.fragments_reassembled, 0);
}

#[test]
fn ipv6_fragments() {
    let payload: Vec<u8> = (0..=255).cycle().take(3000).collect();
    let segment = udp_segment(19132, 50000, &payload);
    let mut frags = frag6(0xdead_beef, IpNumber::UDP, &segment, 1448);
    frags.reverse();
    let records: Vec<Rec> = frags
        .iter()
        .map(|f| Rec::new(ms(1), eth(0x86dd, f)))
        .collect();
    let (datagrams, stats) = read_all(pcap_eth(&records));
    assert_eq!(datagrams.len(), 1, "{stats:?}");
    assert_eq!(datagrams[0].payload, payload);
    assert_eq!(datagrams[0].src, addr("[2001:db8::1]:19132"));
    assert_eq!(datagrams[0].frame, 3);
    assert_eq!(stats.fragments_reassembled, 3);
}

#[test]
fn ipv6_fragments_with_destination_options_inside() {
    // The destination options header is part of the fragmentable part: the
    // later fragments start with bytes that only look like headers.
    let mut fragmentable = vec![17, 0, 1, 4, 0, 0, 0, 0];
    let payload = [0x3cu8; 40]; // 60 = "destination options" as a next header
    fragmentable.extend(udp_segment(1, 2, &payload));
    let frags = frag6(7, IpNumber::IPV6_DESTINATION_OPTIONS, &fragmentable, 16);
    let records: Vec<Rec> = frags
        .iter()
        .map(|f| Rec::new(ms(1), eth(0x86dd, f)))
        .collect();
    let (datagrams, stats) = read_all(pcap_eth(&records));
    assert_eq!(datagrams.len(), 1, "{stats:?}");
    assert_eq!(datagrams[0].payload, payload);
}

#[test]
fn atomic_ipv6_fragment_is_a_whole_datagram() {
    let frags = frag6(9, IpNumber::UDP, &udp_segment(1, 2, b"atomic"), 64);
    assert_eq!(frags.len(), 1);
    let (datagrams, stats) = read_all(pcap_eth(&[Rec::new(ms(1), eth(0x86dd, &frags[0]))]));
    assert_eq!(datagrams[0].payload, b"atomic");
    assert_eq!(stats.fragments_reassembled, 0);
}

#[test]
fn snaplen_cut_datagram_is_returned_truncated() {
    let payload = vec![0x84; 1000];
    let frame = eth4(&udp4(A4, B4, 1, 2, &payload));
    let bytes = pcap_eth(&[
        Rec::cut(ms(1), frame.clone(), 96),
        Rec::cut(ms(2), frame.clone(), 30), // inside the IP header
        Rec::cut(ms(3), frame.clone(), 38), // inside the UDP header
        Rec::cut(ms(4), frame, 10),         // inside the Ethernet header
    ]);
    let (datagrams, stats) = read_all(bytes);
    assert_eq!(datagrams.len(), 1);
    let d = &datagrams[0];
    assert_eq!(d.payload.len(), 96 - 14 - 20 - 8);
    assert_eq!(d.udp_len, 1000);
    assert!(d.truncated());
    assert_eq!(stats.truncated, 4);
    assert_eq!(stats.udp, 1);
    assert_eq!(stats.bad_ip, 0);
}

#[test]
fn snaplen_cut_fragment_is_dropped() {
    let frags = frag4(5, &udp_segment(1, 2, &[0; 64]), 40);
    let bytes = pcap_eth(&[
        Rec::cut(ms(1), eth4(&frags[0]), 40),
        Rec::new(ms(2), eth4(&frags[1])),
    ]);
    let (datagrams, stats) = read_all(bytes);
    assert!(datagrams.is_empty());
    assert_eq!(stats.truncated, 1);
    assert_eq!(
        stats.fragments_dropped, 2,
        "the cut one, and at the end the other"
    );
}

#[test]
fn bounded_pool_evicts_and_counts() {
    // Four datagrams in two fragments each, first halves all first, second
    // halves in reverse: with room for two reassemblies, only 3 and 2 complete.
    let frags: Vec<Vec<Vec<u8>>> = (0..4)
        .map(|id| frag4(id, &udp_segment(1, 2, &[id as u8; 24]), 16))
        .collect();
    let mut records = Vec::new();
    for f in &frags {
        records.push(Rec::new(ms(1), eth4(&f[0])));
    }
    for f in frags.iter().rev() {
        records.push(Rec::new(ms(2), eth4(&f[1])));
    }
    let limits = DefragLimits {
        max_reassemblies: 2,
        ..DefragLimits::default()
    };
    let r = reader(pcap_eth(&records)).with_defrag_limits(limits);
    let (datagrams, error, stats) = drain(r);
    assert!(error.is_none());
    let ids: Vec<u8> = datagrams.iter().map(|d| d.payload[0]).collect();
    assert_eq!(ids, [3, 2]);
    assert_eq!(stats.fragments_reassembled, 4);
    // Two first halves evicted, and the second halves of 0 and 1 never completed.
    assert_eq!(stats.fragments_dropped, 4);
}

#[test]
fn fragments_time_out_in_capture_time() {
    let frags = frag4(3, &udp_segment(1, 2, &[0; 24]), 16);
    let bytes = pcap_eth(&[
        Rec::new(Duration::from_secs(100), eth4(&frags[0])),
        Rec::new(Duration::from_secs(120), eth4(&udp4(A4, B4, 1, 2, b"x"))),
        Rec::new(Duration::from_secs(140), eth4(&frags[1])),
    ]);
    let (datagrams, stats) = read_all(bytes);
    assert_eq!(datagrams.len(), 1, "only the plain datagram");
    assert_eq!(stats.fragments_dropped, 2);
}

#[test]
fn pcapng_interfaces_sections_and_resolutions() {
    let frame = |payload: &[u8]| eth4(&udp4(A4, B4, 1, 2, payload));
    let raw = |payload: &[u8]| udp4(A4, B4, 1, 2, payload);
    let mut ng = PcapNg::new(false);
    // Section 1: microseconds (default), nanoseconds, 2^-20 s with an offset.
    ng.interface(1, 0, &[]);
    ng.interface(101, 0, &[PcapNg::tsresol(9)]);
    let offset = ng.tsoffset(1_000_000_000);
    ng.interface(1, 0, &[PcapNg::tsresol(0x80 | 20), offset]);
    ng.enhanced(0, 1_700_000_000_123_456, &frame(b"us"), 0);
    ng.enhanced(1, 1_700_000_000_123_456_789, &raw(b"ns"), 0);
    ng.enhanced(2, (700_000_000 << 20) | (1 << 19), &frame(b"bin"), 0);
    // Section 2, big-endian: interface 0 is now raw IP with milliseconds.
    ng.section(true);
    ng.interface(101, 0, &[PcapNg::tsresol(3)]);
    ng.enhanced(0, 1_800_000_000_250, &raw(b"ms"), 0);
    // Interface 1 belonged to the first section only.
    ng.enhanced(1, 0, &raw(b"gone"), 0);
    let bytes = ng.bytes.clone();

    let r = reader(bytes.clone());
    assert_eq!(r.format(), CaptureFormat::PcapNg);
    let (datagrams, error, stats) = drain(r);
    assert!(error.is_none(), "{error:?}");
    let got: Vec<(&[u8], Duration)> = datagrams.iter().map(|d| (&d.payload[..], d.ts)).collect();
    assert_eq!(
        got,
        [
            (&b"us"[..], Duration::new(1_700_000_000, 123_456_000)),
            (&b"ns"[..], Duration::new(1_700_000_000, 123_456_789)),
            (&b"bin"[..], Duration::new(1_700_000_000, 500_000_000)),
            (&b"ms"[..], Duration::new(1_800_000_000, 250_000_000)),
        ]
    );
    assert_eq!(stats.frames, 5);
    assert_eq!(stats.bad_records, 1);

    // pcap-file's own typed decoding agrees on every timestamp.
    let mut typed = pcap_file::pcapng::PcapNgReader::new(Cursor::new(bytes)).expect("valid");
    let mut theirs = Vec::new();
    while let Some(block) = typed.next_block() {
        match block {
            Ok((pcap_file::pcapng::Block::EnhancedPacket(epb), _)) => theirs.push(epb.timestamp),
            Ok(_) => {}
            Err(_) => break, // the block with a stale interface id
        }
    }
    let ours: Vec<Duration> = datagrams.iter().map(|d| d.ts).collect();
    assert_eq!(theirs, ours);
}

#[test]
fn pcapng_simple_and_obsolete_packet_blocks() {
    let frame = eth4(&udp4(A4, B4, 1, 2, b"abc"));
    let mut ng = PcapNg::new(false);
    ng.interface(1, 0, &[]);
    ng.obsolete(0, 5_000_000, &frame);
    ng.simple(u32::try_from(frame.len()).expect("small"), &frame);
    let mut ng_cut = PcapNg::new(true);
    ng_cut.interface(1, 44, &[]);
    ng_cut.simple(u32::try_from(frame.len()).expect("small"), &frame[..44]);
    for (bytes, cut) in [(ng.bytes, false), (ng_cut.bytes, true)] {
        let (datagrams, stats) = read_all(bytes);
        assert!(!datagrams.is_empty(), "{stats:?}");
        for d in &datagrams {
            assert_eq!(d.truncated(), cut);
            assert_eq!(d.udp_len, 3);
        }
        if !cut {
            assert_eq!(datagrams.len(), 2);
            assert_eq!(datagrams[0].ts, Duration::from_secs(5));
            assert_eq!(
                datagrams[1].ts,
                Duration::from_secs(5),
                "the last timestamp seen"
            );
        }
    }
}

#[test]
fn pcapng_snaplen_cut_and_bad_records() {
    let frame = eth4(&udp4(A4, B4, 1, 2, &[7; 200]));
    let mut ng = PcapNg::new(false);
    ng.interface(1, 64, &[]);
    ng.enhanced(
        0,
        1,
        &frame[..64],
        u32::try_from(frame.len()).expect("small"),
    );
    ng.enhanced(3, 1, &frame, 0); // no interface 3
    ng.block(6, &[0; 8]); // too short for an enhanced packet block
    ng.block(0x0000_0bad, &[0; 8]); // a custom block: skipped
    ng.block(0x1234_5678, &[0; 4]); // unknown: skipped
    let (datagrams, stats) = read_all(ng.bytes);
    assert_eq!(datagrams.len(), 1);
    assert!(datagrams[0].truncated());
    assert_eq!(datagrams[0].payload.len(), 64 - 42);
    assert_eq!(stats.frames, 3);
    assert_eq!(stats.bad_records, 2);
    assert_eq!(stats.truncated, 1);
}

#[test]
fn pcap_cut_short_returns_what_precedes() {
    let records: Vec<Rec> = (0..3)
        .map(|i| Rec::new(ms(i), eth4(&udp4(A4, B4, 1, 2, &[i as u8; 10]))))
        .collect();
    let whole = pcap_eth(&records);
    let record_len = (whole.len() - 24) / 3;
    // Inside the third record's data, inside its header, and right after it.
    for (cut, complete) in [
        (whole.len() - 5, 2),
        (24 + 2 * record_len + 7, 2),
        (24 + record_len + 1, 1),
    ] {
        let (datagrams, error, stats) = drain(reader(whole[..cut].to_vec()));
        assert_eq!(datagrams.len(), complete);
        let error = error.expect("a cut file ends in an error");
        let message = error.to_string();
        match error {
            CaptureError::CutShort { frame, .. } => assert_eq!(frame, complete as u64),
            other => panic!("expected CutShort, got {other:?}"),
        }
        assert!(
            message.starts_with(&format!("capture cut short after frame {complete}: the file ends inside the record at byte ")),
            "{message}"
        );
        assert_eq!(stats.frames, complete as u64);
    }
    // Exactly at a record boundary the file is just shorter.
    let (datagrams, error, _) = drain(reader(whole[..24 + record_len].to_vec()));
    assert_eq!(datagrams.len(), 1);
    assert!(error.is_none());
}

#[test]
fn pcapng_cut_short_returns_what_precedes() {
    let mut ng = PcapNg::new(false);
    ng.interface(1, 0, &[]);
    for i in 0..3u8 {
        ng.enhanced(0, u64::from(i), &eth4(&udp4(A4, B4, 1, 2, &[i; 10])), 0);
    }
    let whole = ng.bytes;
    let (datagrams, error, _) = drain(reader(whole[..whole.len() - 9].to_vec()));
    assert_eq!(datagrams.len(), 2);
    match error {
        Some(CaptureError::CutShort { frame: 2, detail }) => {
            assert!(
                detail.starts_with("the file ends inside the block at byte "),
                "{detail}"
            );
        }
        other => panic!("expected CutShort after frame 2, got {other:?}"),
    }
}

#[test]
fn header_cut_short() {
    let whole = pcap_eth(&[]);
    match CaptureReader::from_reader(Box::new(Cursor::new(whole[..10].to_vec()))) {
        Err(CaptureError::CutShort { frame: 0, detail }) => {
            assert_eq!(detail, "the file ends inside the pcap file header");
        }
        other => panic!("{other:?}"),
    }
    let ng = PcapNg::new(false).bytes;
    assert!(matches!(
        CaptureReader::from_reader(Box::new(Cursor::new(ng[..20].to_vec()))),
        Err(CaptureError::CutShort { frame: 0, .. })
    ));
}

#[test]
fn malformed_pcapng_block_is_final() {
    let mut ng = PcapNg::new(false);
    ng.interface(1, 0, &[]);
    ng.enhanced(0, 0, &eth4(&udp4(A4, B4, 1, 2, b"ok")), 0);
    let good = ng.bytes.len();
    ng.enhanced(0, 0, &eth4(&udp4(A4, B4, 1, 2, b"bad")), 0);
    // Break the trailing length of the second packet block.
    let end = ng.bytes.len();
    ng.bytes[end - 4] ^= 0x40;
    ng.enhanced(0, 0, &eth4(&udp4(A4, B4, 1, 2, b"never")), 0);
    let (datagrams, error, _) = drain(reader(ng.bytes));
    assert_eq!(datagrams.len(), 1);
    match error {
        Some(CaptureError::Malformed { frame: 1, detail }) => {
            assert!(
                detail.starts_with(&format!("the block at byte {good}: ")),
                "{detail}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn record_larger_than_the_buffer() {
    // A pcap record claiming 6 MiB, and the 6 MiB there: not a cut file.
    let mut bytes = pcap_eth(&[]);
    let len = 6u32 << 20;
    bytes.extend([0; 8]);
    bytes.extend(len.to_le_bytes());
    bytes.extend(len.to_le_bytes());
    bytes.resize(bytes.len() + len as usize, 0);
    let (_, error, _) = drain(reader(bytes));
    match error {
        Some(CaptureError::Malformed { frame: 0, detail }) => {
            assert_eq!(
                detail,
                "the record at byte 24 is larger than the 512 KiB read buffer"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn not_a_capture() {
    let cases: [(&[u8], &str); 4] = [
        (b"", "input: not a pcap or pcapng file (empty)"),
        (b"ab", "input: not a pcap or pcapng file (only 2 bytes)"),
        (b"GET / HTTP/1.1\r\n", "input: not a pcap or pcapng file (magic 0x47455420)"),
        (
            &[0x1f, 0x8b, 0x08, 0x00, 0, 0],
            "input: not a pcap or pcapng file (magic 0x1f8b0800, gzip-compressed: decompress it first)",
        ),
    ];
    for (bytes, message) in cases {
        match CaptureReader::from_reader(Box::new(Cursor::new(bytes.to_vec()))) {
            Err(e @ CaptureError::NotACapture { .. }) => assert_eq!(e.to_string(), message),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn open_names_the_file() {
    let dir = std::env::temp_dir().join(format!("raknet-dissect-capture-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let text = dir.join("notes.txt");
    std::fs::write(&text, "hello world").expect("write temp file");
    let e = CaptureReader::open(&text).expect_err("a text file");
    assert_eq!(
        e.to_string(),
        format!(
            "{}: not a pcap or pcapng file (magic 0x68656c6c)",
            text.display()
        )
    );
    let good = dir.join("one.pcap");
    std::fs::write(
        &good,
        pcap_eth(&[Rec::new(ms(1), eth4(&udp4(A4, B4, 1, 2, b"f")))]),
    )
    .expect("write temp file");
    let r = CaptureReader::open(&good).expect("a pcap");
    assert_eq!(r.name(), good.display().to_string());
    assert_eq!(r.count(), 1);
    let missing = dir.join("missing.pcap");
    match CaptureReader::open(&missing) {
        Err(e @ CaptureError::Open { .. }) => {
            assert!(e
                .to_string()
                .starts_with(&format!("{}: ", missing.display())));
        }
        other => panic!("{other:?}"),
    }
    match CaptureReader::open(&dir) {
        Err(e @ CaptureError::Open { .. }) => {
            assert!(
                e.to_string().starts_with(&format!("{}: ", dir.display())),
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(&dir).expect("clean up");
}

/// A pipe-like source: a few bytes per read, interrupted now and then.
struct Trickle {
    data: Vec<u8>,
    at: usize,
    calls: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.calls += 1;
        if self.calls.is_multiple_of(5) {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let n = buf.len().min(3).min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[test]
fn non_seekable_trickling_input() {
    let frags = frag4(8, &udp_segment(1, 2, &[9; 40]), 24);
    let records = vec![
        Rec::new(ms(1), eth4(&udp4(A4, B4, 1, 2, b"one"))),
        Rec::new(ms(2), eth4(&frags[1])),
        Rec::new(ms(3), eth4(&frags[0])),
    ];
    let mut ng = PcapNg::new(true);
    ng.interface(1, 0, &[]);
    for r in &records {
        ng.enhanced(0, r.ts.as_micros() as u64, &r.data, 0);
    }
    for bytes in [pcap_eth(&records), ng.bytes] {
        let expected = read_all(bytes.clone());
        let trickle = Trickle {
            data: bytes,
            at: 0,
            calls: 0,
        };
        let r = CaptureReader::from_reader(Box::new(trickle)).expect("valid capture");
        let (datagrams, error, stats) = drain(r);
        assert!(error.is_none(), "{error:?}");
        assert_eq!((datagrams, stats), expected);
    }
}

#[test]
fn iterator() {
    let records: Vec<Rec> = (0..5)
        .map(|i| Rec::new(ms(i), eth4(&udp4(A4, B4, 1, 2, b"i"))))
        .collect();
    let frames: Vec<u64> = reader(pcap_eth(&records))
        .map(|d| d.expect("valid").frame)
        .collect();
    assert_eq!(frames, [1, 2, 3, 4, 5]);
}

/// Small deterministic generator for the mutation test.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Flipped, overwritten and cut bytes in valid captures never panic. The
/// cargo-fuzz target `capture` does the same, much longer.
#[test]
fn mutated_captures_never_panic() {
    let frags = frag4(8, &udp_segment(1, 2, &[9; 40]), 24);
    let frag6s = frag6(8, IpNumber::UDP, &udp_segment(1, 2, &[9; 40]), 24);
    // A quoted IPv6 datagram with a hop-by-hop header before its UDP header.
    let mut quoted6 = udp6(A6, B6, 1, 2, b"quoted");
    quoted6[6] = 0;
    quoted6.splice(40..40, [17, 0, 1, 4, 0, 0, 0, 0]);
    let records = vec![
        Rec::new(ms(1), eth4(&udp4(A4, B4, 1, 2, b"one"))),
        Rec::new(ms(2), eth4(&frags[1])),
        Rec::new(ms(3), eth4(&frags[0])),
        Rec::new(ms(4), eth(0x86dd, &frag6s[1])),
        Rec::new(ms(5), eth(0x86dd, &frag6s[0])),
        Rec::cut(ms(6), eth4(&udp4(A4, B4, 1, 2, &[1; 100])), 60),
        Rec::new(
            ms(7),
            eth4(&icmp4(
                B4,
                A4,
                3,
                4,
                [0, 2, 5, 0],
                &udp4(A4, B4, 1, 2, b"quoted"),
            )),
        ),
        Rec::new(ms(8), eth(0x86dd, &icmp6(B6, A6, 1, 4, [0; 4], &quoted6))),
    ];
    let mut ng = PcapNg::new(false);
    ng.interface(1, 0, &[PcapNg::tsresol(0x85)]);
    ng.interface(113, 0, &[]);
    for r in &records {
        ng.enhanced(0, r.ts.as_micros() as u64, &r.data, r.orig_len);
    }
    ng.simple(60, &records[0].data);
    let seeds = [
        pcap_eth(&records),
        pcap(0, true, Endianness::Big, &records),
        ng.bytes,
    ];
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for _ in 0..3000 {
        let mut bytes = seeds[rng.below(seeds.len())].clone();
        for _ in 0..1 + rng.below(8) {
            let at = rng.below(bytes.len());
            match rng.below(4) {
                0 => bytes[at] ^= 1 << rng.below(8),
                1 => bytes[at] = rng.next() as u8,
                2 => bytes[at] = [0, 0xff, 0x7f, 0x80][rng.below(4)],
                _ => bytes.truncate(at.max(1)),
            }
        }
        if let Ok(r) = CaptureReader::from_reader(Box::new(Cursor::new(bytes))) {
            let (_, _, stats) = drain(r);
            assert!(stats.udp <= stats.frames);
        }
    }
}

#[test]
fn lenient_packet_records() {
    let frame = eth4(&udp4(A4, B4, 1, 2, b"lenient"));
    // pcap: original length below the captured length.
    let mut bytes = pcap_eth(&[Rec::new(ms(1), frame.clone())]);
    bytes[36..40].copy_from_slice(&0u32.to_le_bytes());
    let (datagrams, _) = read_all(bytes);
    assert_eq!(datagrams[0].payload, b"lenient");

    // pcapng: an epb_flags option of the wrong size, which pcap-file's typed
    // reader refuses.
    let mut body = Vec::new();
    body.extend(0u32.to_le_bytes());
    body.extend([0; 8]);
    body.extend(u32::try_from(frame.len()).expect("small").to_le_bytes());
    body.extend(u32::try_from(frame.len()).expect("small").to_le_bytes());
    body.extend(&frame);
    body.resize(body.len().next_multiple_of(4), 0);
    body.extend([2, 0, 2, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0]);
    let mut ng = PcapNg::new(false);
    ng.interface(1, 0, &[]);
    ng.block(6, &body);
    let (datagrams, _) = read_all(ng.bytes);
    assert_eq!(datagrams[0].payload, b"lenient");
}

#[test]
fn interface_pcap_file_refuses_is_final() {
    // if_tsresol 10^-12: valid pcapng, but pcap-file 3.0.0-rc.3 accepts at
    // most 10^-9 and 2^-29 and cannot go past such an interface block.
    let mut ng = PcapNg::new(false);
    ng.interface(1, 0, &[]);
    ng.enhanced(0, 1, &eth4(&udp4(A4, B4, 1, 2, b"before")), 0);
    ng.interface(1, 0, &[PcapNg::tsresol(12)]);
    ng.enhanced(1, 1, &eth4(&udp4(A4, B4, 1, 2, b"after")), 0);
    let (datagrams, error, _) = drain(reader(ng.bytes));
    assert_eq!(datagrams.len(), 1);
    let error = error.expect("pcap-file refuses the interface");
    assert!(
        matches!(error, CaptureError::Malformed { frame: 1, .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("Invalid timestamp resolution"),
        "{error}"
    );
}

#[test]
fn reader_is_send() {
    fn send<T: Send>() {}
    send::<CaptureReader>();
}

#[test]
fn ipv6_broken_extension_after_a_good_one() {
    // Hop-by-hop, then destination options cut short: etherparse's extension
    // iterator would read past the end here (fuzzer finding).
    let mut ip = vec![0x60, 0, 0, 0, 0, 12, 0, 64];
    ip.extend(A6);
    ip.extend(B6);
    ip.extend([60, 0, 1, 4, 0, 0, 0, 0]);
    ip.extend([17, 9, 0, 0]);
    let (datagrams, stats) = read_all(pcap_eth(&[Rec::new(ms(1), eth(0x86dd, &ip))]));
    assert!(datagrams.is_empty());
    assert_eq!(stats.bad_ip, 1);
}

/// Datagrams (recycled as the CLI does), the final error as text, and the stats.
fn drain_recycling(mut r: CaptureReader) -> (Vec<UdpDatagram>, Option<String>, CaptureStats) {
    let mut datagrams = Vec::new();
    let mut error = None;
    while let Some(next) = r.next_datagram() {
        match next {
            Ok(d) => {
                datagrams.push(d.clone());
                r.recycle(d);
            }
            Err(e) => error = Some(e.to_string()),
        }
    }
    assert!(r.next_datagram().is_none(), "the end stays the end");
    (datagrams, error, r.stats().clone())
}

#[test]
fn background_reader_reads_the_same() {
    // Several batches' worth, then the same file cut inside its last record.
    let records: Vec<Rec> = (0..(3 * BATCH as u32 + 7))
        .map(|i| {
            Rec::new(
                ms(i.into()),
                eth4(&udp4(A4, B4, 1, 2, &vec![i as u8; 1 + (i as usize % 300)])),
            )
        })
        .collect();
    let whole = pcap_eth(&records);
    let mut inputs = vec![whole.clone(), whole[..whole.len() - 5].to_vec()];
    let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/samples");
    for entry in std::fs::read_dir(samples).expect("samples/ exists") {
        let path = entry.expect("a directory entry").path();
        // Not those without UDP (NetherNet's signaling alone).
        let name = path.to_string_lossy();
        let tcp_only = ["nethernet-no-endpoint", "nethernet-refused"]
            .iter()
            .any(|n| name.contains(n));
        if path
            .extension()
            .is_some_and(|e| e == "pcap" || e == "pcapng")
            && !tcp_only
        {
            inputs.push(std::fs::read(&path).expect("sample reads"));
        }
    }
    for bytes in inputs {
        let inline = drain_recycling(reader(bytes.clone()));
        let background = drain_recycling(reader(bytes).in_background());
        assert!(!inline.0.is_empty());
        assert_eq!(inline, background);
    }
    // The caller may stop early: the reading thread ends on its own.
    let mut r = reader(whole).in_background();
    assert!(r.next_datagram().is_some());
    drop(r);
}

/// The first `n` bytes of `packet`: what an ICMP error quotes of it.
fn quote(packet: &[u8], n: usize) -> &[u8] {
    &packet[..n.min(packet.len())]
}

#[test]
fn icmpv4_port_unreachable_quotes_the_udp_datagram() {
    let sent = udp4(
        A4,
        B4,
        50000,
        19132,
        b"\x05\x00\xff\xff\x00\xfe\xfe\xfe\xfe",
    );
    // The receiver answers: the whole datagram quoted (as Linux does), then
    // only the classic IP header + 8 bytes, then a few payload bytes.
    let records = vec![
        Rec::new(ms(1), eth4(&sent)),
        Rec::new(ms(2), eth4(&icmp4(B4, A4, 3, 3, [0; 4], &sent))),
        Rec::new(ms(3), eth4(&icmp4(B4, A4, 3, 3, [0; 4], quote(&sent, 28)))),
        Rec::new(ms(4), eth4(&icmp4(B4, A4, 3, 3, [0; 4], quote(&sent, 31)))),
    ];
    let (datagrams, stats) = read_all(pcap_eth(&records));
    assert_eq!(datagrams.len(), 4, "{stats:?}");
    assert_eq!(datagrams[0].icmp, None);
    let error = IcmpError {
        from: "192.168.1.20".parse().expect("address"),
        kind: IcmpKind::PortUnreachable,
        icmp_type: 3,
        code: 3,
    };
    assert_eq!(
        datagrams[1],
        UdpDatagram {
            frame: 2,
            ts: ms(2),
            src: addr("192.168.1.10:50000"),
            dst: addr("192.168.1.20:19132"),
            payload: b"\x05\x00\xff\xff\x00\xfe\xfe\xfe\xfe".to_vec(),
            udp_len: 9,
            icmp: Some(error),
            tcp: None,
        }
    );
    assert!(!datagrams[1].truncated());
    assert_eq!(datagrams[2].payload, b"");
    assert_eq!(datagrams[2].udp_len, 9);
    assert!(datagrams[2].truncated());
    assert_eq!(datagrams[3].payload, b"\x05\x00\xff");
    assert_eq!(datagrams[3].frame, 4);
    assert!(datagrams[1..].iter().all(|d| d.icmp == Some(error)));
    assert_eq!(
        stats,
        CaptureStats {
            frames: 4,
            udp: 1,
            icmp_errors: 3,
            ..CaptureStats::default()
        },
        "a partial quote is not a truncated frame"
    );
}

#[test]
fn icmpv4_quote_with_ip_options() {
    let mut sent = udp4(A4, B4, 40000, 7777, b"opts");
    sent[0] = 0x46; // IHL 6
    sent.splice(20..20, [1, 1, 1, 0]); // NOP NOP NOP, end of options
    let total = u16::from_be_bytes([sent[2], sent[3]]) + 4;
    sent[2..4].copy_from_slice(&total.to_be_bytes());
    let (datagrams, stats) = read_all(pcap_eth(&[Rec::new(
        ms(1),
        eth4(&icmp4(B4, A4, 3, 3, [0; 4], &sent)),
    )]));
    assert_eq!(datagrams.len(), 1, "{stats:?}");
    assert_eq!(datagrams[0].src, addr("192.168.1.10:40000"));
    assert_eq!(datagrams[0].dst, addr("192.168.1.20:7777"));
    assert_eq!(datagrams[0].payload, b"opts");
    assert_eq!(stats.icmp_errors, 1);
}

#[test]
fn icmpv4_kinds_and_mtu() {
    let sent = udp4(A4, B4, 1, 2, b"x");
    let router = [10, 0, 0, 1];
    let cases: [(u8, u8, [u8; 4], IcmpKind, &str); 9] = [
        (3, 0, [0; 4], IcmpKind::NetUnreachable, "net_unreachable"),
        (3, 1, [0; 4], IcmpKind::HostUnreachable, "host_unreachable"),
        (
            3,
            2,
            [0; 4],
            IcmpKind::ProtocolUnreachable,
            "protocol_unreachable",
        ),
        (
            3,
            4,
            [0, 0, 0x05, 0x78],
            IcmpKind::FragmentationNeeded { mtu: Some(1400) },
            "fragmentation_needed",
        ),
        (
            3,
            4,
            [0; 4],
            IcmpKind::FragmentationNeeded { mtu: None },
            "fragmentation_needed",
        ),
        (3, 13, [0; 4], IcmpKind::AdminProhibited, "admin_prohibited"),
        (3, 5, [0; 4], IcmpKind::Other, "other"),
        (11, 0, [0; 4], IcmpKind::TimeExceeded, "time_exceeded"),
        (12, 0, [20, 0, 0, 0], IcmpKind::Other, "other"),
    ];
    let records: Vec<Rec> = cases
        .iter()
        .map(|&(t, c, rest, _, _)| Rec::new(ms(1), eth4(&icmp4(router, A4, t, c, rest, &sent))))
        .collect();
    let (datagrams, stats) = read_all(pcap_eth(&records));
    assert_eq!(datagrams.len(), cases.len(), "{stats:?}");
    for (d, (t, c, _, kind, name)) in datagrams.iter().zip(cases) {
        let error = d.icmp.expect("an ICMP error");
        assert_eq!((error.icmp_type, error.code), (t, c));
        assert_eq!(error.kind, kind, "{t}/{c}");
        assert_eq!(error.kind.as_str(), name);
        assert_eq!(error.kind.to_string(), name);
        assert_eq!(
            error.from,
            "10.0.0.1".parse::<std::net::IpAddr>().expect("address")
        );
        assert_eq!(d.src, addr("192.168.1.10:1"));
    }
}

#[test]
fn icmpv6_port_unreachable_on_every_ip_link() {
    let sent = udp6(A6, B6, 50000, 19132, b"\x01ping");
    let error = icmp6(B6, A6, 1, 4, [0; 4], &sent);
    let sll = {
        let mut f = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x86, 0xdd];
        f.extend(&error);
        f
    };
    for (what, linktype, frame) in [
        ("ethernet", 1, eth(0x86dd, &error)),
        ("sll", 113, sll),
        ("raw", 101, error.clone()),
    ] {
        let bytes = pcap(
            linktype,
            false,
            Endianness::Little,
            &[Rec::new(ms(9), frame)],
        );
        let (datagrams, stats) = read_all(bytes);
        assert_eq!(datagrams.len(), 1, "{what}: {stats:?}");
        let d = &datagrams[0];
        assert_eq!(d.src, addr("[2001:db8::1]:50000"), "{what}");
        assert_eq!(d.dst, addr("[2001:db8::2]:19132"), "{what}");
        assert_eq!(d.payload, b"\x01ping", "{what}");
        assert_eq!(d.udp_len, 5);
        assert_eq!(d.ts, ms(9));
        assert_eq!(
            d.icmp,
            Some(IcmpError {
                from: "2001:db8::2".parse().expect("address"),
                kind: IcmpKind::PortUnreachable,
                icmp_type: 1,
                code: 4,
            }),
            "{what}"
        );
        assert_eq!((stats.icmp_errors, stats.udp, stats.non_udp), (1, 0, 0));
    }
}

#[test]
fn icmpv6_kinds_and_packet_too_big() {
    let sent = udp6(A6, B6, 1, 2, &[0xaa; 1400]);
    let cases: [(u8, u8, [u8; 4], IcmpKind); 7] = [
        (1, 0, [0; 4], IcmpKind::NetUnreachable),
        (1, 1, [0; 4], IcmpKind::AdminProhibited),
        (1, 3, [0; 4], IcmpKind::HostUnreachable),
        (1, 2, [0; 4], IcmpKind::Other),
        (
            2,
            0,
            1280u32.to_be_bytes(),
            IcmpKind::FragmentationNeeded { mtu: Some(1280) },
        ),
        (
            2,
            0,
            100_000u32.to_be_bytes(),
            IcmpKind::FragmentationNeeded {
                mtu: Some(u16::MAX),
            },
        ),
        (3, 0, [0; 4], IcmpKind::TimeExceeded),
    ];
    // An ICMPv6 error fills at most the IPv6 minimum MTU.
    let records: Vec<Rec> = cases
        .iter()
        .map(|&(t, c, rest, _)| {
            Rec::new(
                ms(1),
                eth(0x86dd, &icmp6(B6, A6, t, c, rest, quote(&sent, 1232))),
            )
        })
        .collect();
    let (datagrams, stats) = read_all(pcap_eth(&records));
    assert_eq!(datagrams.len(), cases.len(), "{stats:?}");
    for (d, (t, c, _, kind)) in datagrams.iter().zip(cases) {
        assert_eq!(d.icmp.map(|e| e.kind), Some(kind), "{t}/{c}");
        assert_eq!(d.udp_len, 1400);
        assert_eq!(d.payload.len(), 1232 - 40 - 8);
        assert!(d.truncated());
    }
    assert_eq!(
        datagrams[4].icmp.expect("error").kind.as_str(),
        "fragmentation_needed"
    );
}

#[test]
fn icmpv6_quote_with_extension_headers() {
    let segment = udp_segment(7, 8, b"behind extensions");
    let mut sent = vec![0x60, 0, 0, 0];
    sent.extend(
        u16::try_from(16 + segment.len())
            .expect("small")
            .to_be_bytes(),
    );
    sent.extend([0, 64]);
    sent.extend(A6);
    sent.extend(B6);
    sent.extend([60, 0, 1, 4, 0, 0, 0, 0]); // hop-by-hop, next: destination options
    sent.extend([44, 0, 1, 4, 0, 0, 0, 0]); // destination options, next: fragment
    sent.extend([17, 0, 0, 1, 0, 0, 0, 9]); // fragment offset 0, more fragments
    sent.extend(&segment);
    let mut later = sent.clone();
    later[59] = (4 << 3) | 1; // fragment offset 32 bytes: no UDP header in there
    let (datagrams, stats) = read_all(pcap_eth(&[
        Rec::new(ms(1), eth(0x86dd, &icmp6(B6, A6, 1, 4, [0; 4], &sent))),
        Rec::new(ms(2), eth(0x86dd, &icmp6(B6, A6, 1, 4, [0; 4], &later))),
    ]));
    assert_eq!(datagrams.len(), 1, "{stats:?}");
    assert_eq!(datagrams[0].payload, b"behind extensions");
    assert_eq!(datagrams[0].dst, addr("[2001:db8::2]:8"));
    assert_eq!((stats.icmp_errors, stats.non_udp), (1, 1));
}

#[test]
fn icmp_that_quotes_no_whole_udp_header_is_not_udp() {
    let sent4 = udp4(A4, B4, 1, 2, b"payload");
    let sent6 = udp6(A6, B6, 1, 2, b"payload");
    let tcp = ip4_proto(IpNumber::TCP, &[0; 20]);
    let mut later_fragment = frag4(1, &udp_segment(1, 2, &[0; 40]), 24).remove(1);
    later_fragment.resize(later_fragment.len().max(28), 0);
    let records = vec![
        // Cut inside the UDP header (no checksum), inside the IP header, none at all.
        Rec::new(ms(1), eth4(&icmp4(B4, A4, 3, 3, [0; 4], quote(&sent4, 26)))),
        Rec::new(ms(2), eth4(&icmp4(B4, A4, 3, 3, [0; 4], quote(&sent4, 12)))),
        Rec::new(ms(3), eth4(&icmp4(B4, A4, 3, 3, [0; 4], &[]))),
        Rec::new(ms(4), eth4(&icmp4(B4, A4, 3, 3, [0; 4], &tcp))),
        Rec::new(ms(5), eth4(&icmp4(B4, A4, 3, 3, [0; 4], &later_fragment))),
        // An IPv6 packet quoted by ICMPv4.
        Rec::new(ms(6), eth4(&icmp4(B4, A4, 3, 3, [0; 4], &sent6))),
        Rec::new(
            ms(7),
            eth(0x86dd, &icmp6(B6, A6, 1, 4, [0; 4], quote(&sent6, 47))),
        ),
        Rec::new(
            ms(8),
            eth(0x86dd, &icmp6(B6, A6, 1, 4, [0; 4], quote(&sent6, 39))),
        ),
        // An ICMP header cut short.
        Rec::new(ms(9), eth4(&ip4_proto(IpNumber::ICMP, &[3]))),
    ];
    let (datagrams, stats) = read_all(pcap_eth(&records));
    assert!(datagrams.is_empty(), "{datagrams:?}");
    assert_eq!(stats.non_udp, 9, "{stats:?}");
    assert_eq!(stats.icmp_errors, 0);
}

#[test]
fn icmp_echo_and_other_messages_are_not_udp() {
    let sent4 = udp4(A4, B4, 1, 2, b"payload");
    let records = vec![
        Rec::new(
            ms(1),
            eth4(&icmp4(A4, B4, 8, 0, [0, 1, 0, 1], b"ping data")),
        ),
        Rec::new(
            ms(2),
            eth4(&icmp4(B4, A4, 0, 0, [0, 1, 0, 1], b"ping data")),
        ),
        // Redirect quotes a datagram too, but is no error about it.
        Rec::new(ms(3), eth4(&icmp4(B4, A4, 5, 1, [10, 0, 0, 1], &sent4))),
        Rec::new(
            ms(4),
            eth(0x86dd, &icmp6(A6, B6, 128, 0, [0, 1, 0, 1], b"ping")),
        ),
        Rec::new(
            ms(5),
            eth(0x86dd, &icmp6(B6, A6, 129, 0, [0, 1, 0, 1], b"ping")),
        ),
        Rec::new(ms(6), eth(0x86dd, &icmp6(A6, B6, 135, 0, [0; 4], &B6))),
    ];
    let (datagrams, stats) = read_all(pcap_eth(&records));
    assert!(datagrams.is_empty());
    assert_eq!(stats.non_udp, 6);
    assert_eq!(stats.icmp_errors, 0);
}

#[test]
fn icmp_rfc4884_length_bounds_the_quote() {
    // Time exceeded with a 128-byte quote (length 32 words) and an extension
    // structure after it, which is not payload.
    let sent = udp4(A4, B4, 1, 2, &[0x11; 300]);
    let mut body = quote(&sent, 128).to_vec();
    body.extend([0x20, 0, 0, 0, 0, 8, 1, 1, 0xee, 0xee, 0xee, 0xee]);
    let frame = icmp4([10, 0, 0, 1], A4, 11, 0, [0, 32, 0, 0], &body);
    let (datagrams, stats) = read_all(pcap_eth(&[Rec::new(ms(1), eth4(&frame))]));
    assert_eq!(datagrams.len(), 1, "{stats:?}");
    assert_eq!(datagrams[0].payload, [0x11; 100]);
    assert_eq!(datagrams[0].udp_len, 300);
}

#[test]
fn icmp_error_cut_by_the_snapshot_length() {
    let sent = udp4(A4, B4, 1, 2, &[0x22; 500]);
    let frame = eth4(&icmp4(B4, A4, 3, 3, [0; 4], &sent));
    let (datagrams, stats) = read_all(pcap_eth(&[
        Rec::cut(ms(1), frame.clone(), 14 + 20 + 8 + 20 + 8 + 10),
        Rec::cut(ms(2), frame, 14 + 20 + 8 + 20 + 4),
    ]));
    assert_eq!(datagrams.len(), 1, "{stats:?}");
    assert_eq!(datagrams[0].payload, [0x22; 10]);
    assert_eq!(datagrams[0].udp_len, 500);
    assert_eq!((stats.icmp_errors, stats.non_udp), (1, 1));
}

#[test]
fn background_reader_reads_icmp_errors_the_same() {
    let sent4 = udp4(A4, B4, 50000, 19132, b"\x05raknet");
    let sent6 = udp6(A6, B6, 50000, 19132, b"\x05raknet");
    let mut records = Vec::new();
    for i in 0..(BATCH as u64 + 3) {
        records.push(Rec::new(ms(4 * i), eth4(&sent4)));
        records.push(Rec::new(
            ms(4 * i + 1),
            eth4(&icmp4(B4, A4, 3, 3, [0; 4], &sent4)),
        ));
        records.push(Rec::new(
            ms(4 * i + 2),
            eth(0x86dd, &icmp6(B6, A6, 2, 0, 1280u32.to_be_bytes(), &sent6)),
        ));
        records.push(Rec::new(
            ms(4 * i + 3),
            eth4(&icmp4(A4, B4, 8, 0, [0; 4], b"echo")),
        ));
    }
    let bytes = pcap_eth(&records);
    let inline = drain_recycling(reader(bytes.clone()));
    let background = drain_recycling(reader(bytes).in_background());
    assert_eq!(inline.2.icmp_errors, 2 * (BATCH as u64 + 3));
    assert_eq!(inline.2.non_udp, BATCH as u64 + 3);
    assert_eq!(
        inline.0.iter().filter(|d| d.icmp.is_some()).count() as u64,
        inline.2.icmp_errors
    );
    assert_eq!(inline, background);
}

/// A pcapng's Decryption Secrets Blocks come out of `take_secrets` after
/// the datagram they precede, inline and from the reading thread alike,
/// across its batches; one whose length runs past its block is a bad
/// record.
#[test]
fn pcapng_secrets_come_before_the_datagram_they_precede() {
    let frame = |i: u32| eth4(&udp4(A4, B4, 1, 2, &i.to_be_bytes()));
    for big in [false, true] {
        let mut ng = PcapNg::new(big);
        ng.interface(1, 0, &[]);
        let dsb = |ng: &mut PcapNg, at: u32| {
            let text = format!("CLIENT_RANDOM {at}");
            let mut body = ng.u32(Secrets::TLS_KEY_LOG).to_vec();
            body.extend(ng.u32(u32::try_from(text.len()).expect("short")));
            body.extend(text.as_bytes());
            ng.block(0x0A, &body);
        };
        for i in 0..1200u32 {
            if [0, 511, 512, 513, 1100].contains(&i) {
                dsb(&mut ng, i);
            }
            if i == 700 {
                let mut body = ng.u32(Secrets::TLS_KEY_LOG).to_vec();
                body.extend(ng.u32(100)); // 100 bytes said, none there
                ng.block(0x0A, &body);
            }
            let f = frame(i);
            ng.enhanced(0, u64::from(i), &f, u32::try_from(f.len()).expect("small"));
        }
        dsb(&mut ng, 9999); // after the last datagram: applies to none
        for background in [false, true] {
            let mut r = reader(ng.bytes.clone());
            if background {
                r = r.in_background();
            }
            let mut seen = Vec::new();
            while let Some(d) = r.next_datagram() {
                let d = d.expect("valid");
                let i = u32::from_be_bytes(d.payload[..4].try_into().expect("4 bytes"));
                for s in r.take_secrets() {
                    assert_eq!(s.kind, Secrets::TLS_KEY_LOG);
                    seen.push((i, String::from_utf8(s.data).expect("text")));
                }
            }
            let want: Vec<(u32, String)> = [0, 511, 512, 513, 1100]
                .map(|i| (i, format!("CLIENT_RANDOM {i}")))
                .into();
            assert_eq!(seen, want, "big {big}, background {background}");
            assert_eq!(r.stats().bad_records, 1);
        }
    }
}

/// Secrets blocks with no datagram after them are held up to a bound; the
/// rest are bad records.
#[test]
fn pcapng_secrets_held_are_bounded() {
    let mut ng = PcapNg::new(false);
    ng.interface(1, 0, &[]);
    for _ in 0..5000 {
        let mut body = ng.u32(Secrets::TLS_KEY_LOG).to_vec();
        body.extend(ng.u32(4));
        body.extend(b"abcd");
        ng.block(Secrets::BLOCK, &body);
    }
    let f = eth4(&udp4(A4, B4, 1, 2, b"x"));
    ng.enhanced(0, 1, &f, u32::try_from(f.len()).expect("small"));
    for background in [false, true] {
        let mut r = reader(ng.bytes.clone());
        if background {
            r = r.in_background();
        }
        assert!(r.next_datagram().is_some());
        assert_eq!(r.take_secrets().len(), 4096);
        assert!(r.next_datagram().is_none());
        assert_eq!(r.stats().bad_records, 5000 - 4096);
    }
}
