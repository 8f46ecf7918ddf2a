//! Builders of packets and captures for the tests: IPv4/IPv6 UDP packets and
//! their fragments, link headers, pcap files (through pcap-file's writer) and
//! pcapng files (byte by byte, to control every field).

use std::time::Duration;

use etherparse::{
    IpFragOffset, IpNumber, Ipv4Header, Ipv6FragmentHeader, Ipv6Header, PacketBuilder,
};
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapTsResolution, PcapWriter};
use pcap_file::{DataLink, Endianness};

pub const A4: [u8; 4] = [192, 168, 1, 10];
pub const B4: [u8; 4] = [192, 168, 1, 20];
pub const A6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
pub const B6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

/// An IPv4 packet carrying UDP.
pub fn udp4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ipv4(src, dst, 64)
        .udp(sport, dport)
        .write(&mut out, payload)
        .expect("writing to a Vec cannot fail");
    out
}

/// An IPv6 packet carrying UDP.
pub fn udp6(src: [u8; 16], dst: [u8; 16], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ipv6(src, dst, 64)
        .udp(sport, dport)
        .write(&mut out, payload)
        .expect("writing to a Vec cannot fail");
    out
}

/// An IPv4 packet carrying something else than UDP.
pub fn ip4_proto(protocol: IpNumber, payload: &[u8]) -> Vec<u8> {
    let len = u16::try_from(payload.len()).expect("test payloads are small");
    let mut header = Ipv4Header::new(len, 64, protocol, A4, B4).expect("small payload");
    header.header_checksum = header.calc_header_checksum();
    let mut out = header.to_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

/// An IPv4 packet from `src` to `dst` carrying an ICMP message: type, code,
/// checksum 0 (not checked), the four type-specific bytes `rest`, then `body`
/// (the quoted packet, for an error).
pub fn icmp4(
    src: [u8; 4],
    dst: [u8; 4],
    icmp_type: u8,
    code: u8,
    rest: [u8; 4],
    body: &[u8],
) -> Vec<u8> {
    let mut message = vec![icmp_type, code, 0, 0];
    message.extend(rest);
    message.extend_from_slice(body);
    let len = u16::try_from(message.len()).expect("test payloads are small");
    let mut header = Ipv4Header::new(len, 64, IpNumber::ICMP, src, dst).expect("small payload");
    header.header_checksum = header.calc_header_checksum();
    let mut out = header.to_bytes().to_vec();
    out.extend(message);
    out
}

/// An IPv6 packet from `src` to `dst` carrying an ICMPv6 message, as [`icmp4`].
pub fn icmp6(
    src: [u8; 16],
    dst: [u8; 16],
    icmp_type: u8,
    code: u8,
    rest: [u8; 4],
    body: &[u8],
) -> Vec<u8> {
    let mut message = vec![icmp_type, code, 0, 0];
    message.extend(rest);
    message.extend_from_slice(body);
    let header = Ipv6Header {
        traffic_class: 0,
        flow_label: Default::default(),
        payload_length: u16::try_from(message.len()).expect("small"),
        next_header: IpNumber::IPV6_ICMP,
        hop_limit: 64,
        source: src,
        destination: dst,
    };
    let mut out = header.to_bytes().to_vec();
    out.extend(message);
    out
}

/// A UDP header (checksum 0: not checked) and payload.
pub fn udp_segment(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let len = u16::try_from(8 + payload.len()).expect("test payloads are small");
    let mut out = Vec::new();
    out.extend(sport.to_be_bytes());
    out.extend(dport.to_be_bytes());
    out.extend(len.to_be_bytes());
    out.extend([0, 0]);
    out.extend_from_slice(payload);
    out
}

/// Splits an IP payload into fragments of `chunk` bytes (a multiple of 8).
fn chunks(payload: &[u8], chunk: usize) -> Vec<(u16, bool, &[u8])> {
    let pieces: Vec<&[u8]> = payload.chunks(chunk).collect();
    let last = pieces.len() - 1;
    pieces
        .into_iter()
        .enumerate()
        .map(|(i, piece)| {
            let offset = u16::try_from(i * chunk / 8).expect("small offsets");
            (offset, i != last, piece)
        })
        .collect()
}

/// IPv4 fragments of a UDP segment, in order.
pub fn frag4(id: u16, segment: &[u8], chunk: usize) -> Vec<Vec<u8>> {
    chunks(segment, chunk)
        .into_iter()
        .map(|(offset, more, piece)| {
            let len = u16::try_from(piece.len()).expect("small");
            let mut header = Ipv4Header::new(len, 64, IpNumber::UDP, A4, B4).expect("small");
            header.identification = id;
            header.more_fragments = more;
            header.fragment_offset = IpFragOffset::try_new(offset).expect("small");
            header.header_checksum = header.calc_header_checksum();
            let mut out = header.to_bytes().to_vec();
            out.extend_from_slice(piece);
            out
        })
        .collect()
}

/// IPv6 fragments of `fragmentable` (what follows the fragment header, first
/// header `next`), in order.
pub fn frag6(id: u32, next: IpNumber, fragmentable: &[u8], chunk: usize) -> Vec<Vec<u8>> {
    chunks(fragmentable, chunk)
        .into_iter()
        .map(|(offset, more, piece)| {
            let header = Ipv6Header {
                traffic_class: 0,
                flow_label: Default::default(),
                payload_length: u16::try_from(8 + piece.len()).expect("small"),
                next_header: IpNumber::IPV6_FRAGMENTATION_HEADER,
                hop_limit: 64,
                source: A6,
                destination: B6,
            };
            let fragment = Ipv6FragmentHeader::new(
                next,
                IpFragOffset::try_new(offset).expect("small"),
                more,
                id,
            );
            let mut out = header.to_bytes().to_vec();
            out.extend(fragment.to_bytes());
            out.extend_from_slice(piece);
            out
        })
        .collect()
}

/// An Ethernet II frame.
pub fn eth(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
    out.extend(ethertype.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

pub fn eth4(ip: &[u8]) -> Vec<u8> {
    eth(0x0800, ip)
}

/// One captured record for the file builders.
pub struct Rec {
    pub ts: Duration,
    pub data: Vec<u8>,
    /// Length on the wire; larger than `data` for a cut packet.
    pub orig_len: u32,
}

impl Rec {
    pub fn new(ts: Duration, data: Vec<u8>) -> Self {
        let orig_len = u32::try_from(data.len()).expect("small");
        Rec { ts, data, orig_len }
    }

    /// The record as cut by a snapshot length of `snaplen`.
    pub fn cut(ts: Duration, mut data: Vec<u8>, snaplen: usize) -> Self {
        let orig_len = u32::try_from(data.len()).expect("small");
        data.truncate(snaplen);
        Rec { ts, data, orig_len }
    }
}

pub fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

/// A pcap file through pcap-file's writer.
pub fn pcap(linktype: u32, nanos: bool, endianness: Endianness, records: &[Rec]) -> Vec<u8> {
    let header = PcapHeader {
        datalink: DataLink::from(linktype),
        ts_resolution: if nanos {
            PcapTsResolution::NanoSecond
        } else {
            PcapTsResolution::MicroSecond
        },
        endianness,
        snaplen: 262_144,
        ..PcapHeader::default()
    };
    let mut writer = PcapWriter::with_header(Vec::new(), header).expect("header to a Vec");
    for r in records {
        let packet = PcapPacket::new(r.ts, r.orig_len, &r.data[..]).expect("valid test packet");
        writer.write_packet(&packet).expect("packet to a Vec");
    }
    writer.into_inner()
}

/// A little-endian microsecond pcap of Ethernet frames.
pub fn pcap_eth(records: &[Rec]) -> Vec<u8> {
    pcap(1, false, Endianness::Little, records)
}

/// pcapng written block by block.
pub struct PcapNg {
    pub bytes: Vec<u8>,
    big: bool,
}

impl PcapNg {
    pub fn new(big: bool) -> Self {
        let mut ng = PcapNg {
            bytes: Vec::new(),
            big,
        };
        ng.section(big);
        ng
    }

    fn u16(&self, v: u16) -> [u8; 2] {
        if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    pub fn u32(&self, v: u32) -> [u8; 4] {
        if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    pub fn block(&mut self, kind: u32, body: &[u8]) -> &mut Self {
        let mut body = body.to_vec();
        body.resize(body.len().next_multiple_of(4), 0);
        let len = u32::try_from(body.len() + 12).expect("small");
        let (kind, len_bytes) = (self.u32(kind), self.u32(len));
        self.bytes.extend(kind);
        self.bytes.extend(len_bytes);
        self.bytes.extend(body);
        self.bytes.extend(len_bytes);
        self
    }

    /// Starts a new section (forgetting the interfaces) in the given byte order.
    pub fn section(&mut self, big: bool) -> &mut Self {
        self.big = big;
        let mut body = self.u32(0x1a2b_3c4d).to_vec();
        body.extend(self.u16(1));
        body.extend(self.u16(0));
        body.extend([0xff; 8]); // section length -1: unknown
        self.block(0x0a0d_0d0a, &body)
    }

    /// An interface; options as (code, value).
    pub fn interface(
        &mut self,
        linktype: u16,
        snaplen: u32,
        options: &[(u16, Vec<u8>)],
    ) -> &mut Self {
        let mut body = self.u16(linktype).to_vec();
        body.extend([0, 0]);
        body.extend(self.u32(snaplen));
        if !options.is_empty() {
            for (code, value) in options {
                body.extend(self.u16(*code));
                body.extend(self.u16(u16::try_from(value.len()).expect("small")));
                body.extend(value);
                body.resize(body.len().next_multiple_of(4), 0);
            }
            body.extend([0; 4]); // opt_endofopt
        }
        self.block(1, &body)
    }

    /// `if_tsresol` option.
    pub fn tsresol(value: u8) -> (u16, Vec<u8>) {
        (9, vec![value])
    }

    /// `if_tsoffset` option, in this section's byte order.
    pub fn tsoffset(&self, seconds: i64) -> (u16, Vec<u8>) {
        let bytes = if self.big {
            seconds.to_be_bytes()
        } else {
            seconds.to_le_bytes()
        };
        (14, bytes.to_vec())
    }

    /// An enhanced packet block with a raw timestamp in the interface's units;
    /// `orig_len` 0 means as captured.
    pub fn enhanced(
        &mut self,
        interface: u32,
        raw_ts: u64,
        data: &[u8],
        orig_len: u32,
    ) -> &mut Self {
        let captured = u32::try_from(data.len()).expect("small");
        let orig_len = if orig_len == 0 { captured } else { orig_len };
        let mut body = self.u32(interface).to_vec();
        body.extend(self.u32((raw_ts >> 32) as u32));
        body.extend(self.u32(raw_ts as u32));
        body.extend(self.u32(captured));
        body.extend(self.u32(orig_len));
        body.extend_from_slice(data);
        self.block(6, &body)
    }

    pub fn simple(&mut self, orig_len: u32, data: &[u8]) -> &mut Self {
        let mut body = self.u32(orig_len).to_vec();
        body.extend_from_slice(data);
        self.block(3, &body)
    }

    /// The obsolete packet block (type 2).
    pub fn obsolete(&mut self, interface: u16, raw_ts: u64, data: &[u8]) -> &mut Self {
        let mut body = self.u16(interface).to_vec();
        body.extend(self.u16(0));
        body.extend(self.u32((raw_ts >> 32) as u32));
        body.extend(self.u32(raw_ts as u32));
        let len = u32::try_from(data.len()).expect("small");
        body.extend(self.u32(len));
        body.extend(self.u32(len));
        body.extend_from_slice(data);
        self.block(2, &body)
    }
}

/// `samples/handshake.pcap`'s datagrams with its client moved from port
/// 19141 to 1141, below the server's (only the UDP ports change: roles must
/// come from the messages), without the peers' start-up datagrams to
/// themselves.
pub fn handshake_with_client_below_server() -> Vec<super::UdpDatagram> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/handshake.pcap");
    let mut r = super::CaptureReader::open(&path).expect("the sample opens");
    let mut v = Vec::new();
    while let Some(d) = r.next_datagram() {
        let mut d = d.expect("the sample reads");
        for a in [&mut d.src, &mut d.dst] {
            if a.port() == 19141 {
                a.set_port(1141);
            }
        }
        if d.src != d.dst {
            v.push(d);
        }
    }
    v
}
