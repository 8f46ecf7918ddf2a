//! ICMP and ICMPv6 errors about a UDP datagram: the error, and the UDP
//! datagram it quotes (RFC 792, RFC 1191, RFC 4443, RFC 4884).
//!
//! Every byte is read with checked accessors: a quote is as untrusted as
//! the rest of the frame, and often cut short on purpose.

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use etherparse::{IpNumber, Ipv4HeaderSlice, Ipv6HeaderSlice};

use super::ipv6::{ipv6_extension, Ipv6Extension};

/// An ICMP or ICMPv6 error about a UDP datagram, as carried by
/// [`UdpDatagram::icmp`](super::UdpDatagram::icmp).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IcmpError {
    /// Who sent the ICMP message: the host or router that refused or
    /// dropped the datagram (the destination itself for port unreachable).
    pub(crate) from: IpAddr,
    /// What the error says, grouped across ICMPv4 and ICMPv6.
    pub(crate) kind: IcmpKind,
    /// The ICMP type as on the wire (ICMPv4 or ICMPv6 numbering: see
    /// whether `from` is an IPv4 or IPv6 address).
    pub(crate) icmp_type: u8,
    /// The ICMP code as on the wire.
    pub(crate) code: u8,
}

/// What an ICMP error says, the same for ICMPv4 and ICMPv6.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum IcmpKind {
    /// Nothing listens on the destination port (ICMPv4 3/3, ICMPv6 1/4).
    PortUnreachable,
    /// The destination host cannot be reached (ICMPv4 3/1, 3/7, 3/12;
    /// ICMPv6 1/3 address unreachable).
    HostUnreachable,
    /// No route to the destination network (ICMPv4 3/0, 3/6, 3/11; ICMPv6
    /// 1/0 no route).
    NetUnreachable,
    /// The destination does not speak the protocol (ICMPv4 3/2).
    ProtocolUnreachable,
    /// A filter refused the datagram (ICMPv4 3/9, 3/10, 3/13; ICMPv6 1/1,
    /// 1/5 source address failed policy, 1/6 reject route).
    AdminProhibited,
    /// Too large for a link on the path: ICMPv4 3/4 "fragmentation needed
    /// and DF set", ICMPv6 2 "packet too big". `mtu` is the largest packet
    /// the link takes, when the message states one (ICMPv4 routers older
    /// than RFC 1191 send 0, read as `None`; an ICMPv6 MTU beyond 65,535 is
    /// given as 65,535).
    FragmentationNeeded { mtu: Option<u16> },
    /// The hop limit ran out on the way, or reassembly timed out (ICMPv4
    /// 11, ICMPv6 3).
    TimeExceeded,
    /// Any other error code of the error types read (ICMPv4 3 and 12,
    /// ICMPv6 1 and 4 parameter problem): see `icmp_type` and `code`.
    Other,
}

impl IcmpKind {
    /// The kind's snake_case name, e.g. `port_unreachable`.
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            IcmpKind::PortUnreachable => "port_unreachable",
            IcmpKind::HostUnreachable => "host_unreachable",
            IcmpKind::NetUnreachable => "net_unreachable",
            IcmpKind::ProtocolUnreachable => "protocol_unreachable",
            IcmpKind::AdminProhibited => "admin_prohibited",
            IcmpKind::FragmentationNeeded { .. } => "fragmentation_needed",
            IcmpKind::TimeExceeded => "time_exceeded",
            IcmpKind::Other => "other",
        }
    }
}

impl fmt::Display for IcmpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An ICMP error and the UDP datagram it quotes.
#[derive(Debug)]
pub(crate) struct Quoted<'a> {
    pub(crate) error: IcmpError,
    /// The quoted datagram's endpoints, as its sender wrote them.
    pub(crate) src: SocketAddr,
    pub(crate) dst: SocketAddr,
    /// The payload length in the quoted UDP header (its length field minus 8).
    pub(crate) udp_len: usize,
    /// The quoted payload bytes present, at most `udp_len`.
    pub(crate) payload: &'a [u8],
}

/// Length of the ICMP header before the quote (type, code, checksum and four
/// type-specific bytes), the same in ICMPv4 and ICMPv6.
const ICMP_HEADER_LEN: usize = 8;
const UDP_HEADER_LEN: usize = 8;

/// The UDP datagram quoted by an ICMPv4 error (`message` is the IP payload,
/// `from` the IP source). `None` for other ICMP messages and for quotes that
/// do not reach the end of a UDP header.
pub(crate) fn icmpv4(from: IpAddr, message: &[u8]) -> Option<Quoted<'_>> {
    let (&icmp_type, &code) = (message.first()?, message.get(1)?);
    let kind = match (icmp_type, code) {
        (3, 0 | 6 | 11) => IcmpKind::NetUnreachable,
        (3, 1 | 7 | 12) => IcmpKind::HostUnreachable,
        (3, 2) => IcmpKind::ProtocolUnreachable,
        (3, 3) => IcmpKind::PortUnreachable,
        (3, 4) => IcmpKind::FragmentationNeeded {
            mtu: be16(message, 6).filter(|&mtu| mtu != 0),
        },
        (3, 9 | 10 | 13) => IcmpKind::AdminProhibited,
        (11, _) => IcmpKind::TimeExceeded,
        (3 | 12, _) => IcmpKind::Other,
        _ => return None,
    };
    // RFC 4884: a length in 32-bit words, when extensions follow the quote.
    let quote = rfc4884_quote(message, message.get(5), 4)?;
    let ip = Ipv4HeaderSlice::from_slice(quote).ok()?;
    // A later fragment does not start with the UDP header.
    if ip.protocol() != IpNumber::UDP || ip.fragments_offset().value() != 0 {
        return None;
    }
    let segment = quote.get(ip.slice().len()..)?;
    let error = IcmpError {
        from,
        kind,
        icmp_type,
        code,
    };
    udp(
        error,
        IpAddr::from(ip.source_addr()),
        IpAddr::from(ip.destination_addr()),
        segment,
    )
}

/// The UDP datagram quoted by an ICMPv6 error, as [`icmpv4`] (extension
/// headers before the UDP header are walked).
pub(crate) fn icmpv6(from: IpAddr, message: &[u8]) -> Option<Quoted<'_>> {
    let (&icmp_type, &code) = (message.first()?, message.get(1)?);
    let (kind, length) = match (icmp_type, code) {
        (1, 0) => (IcmpKind::NetUnreachable, message.get(4)),
        (1, 1 | 5 | 6) => (IcmpKind::AdminProhibited, message.get(4)),
        (1, 3) => (IcmpKind::HostUnreachable, message.get(4)),
        (1, 4) => (IcmpKind::PortUnreachable, message.get(4)),
        (1, _) => (IcmpKind::Other, message.get(4)),
        (2, _) => {
            let mtu = message
                .get(4..8)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(u32::from_be_bytes)
                .filter(|&mtu| mtu != 0)
                .map(|mtu| u16::try_from(mtu).unwrap_or(u16::MAX));
            (IcmpKind::FragmentationNeeded { mtu }, None)
        }
        (3, _) => (IcmpKind::TimeExceeded, message.get(4)),
        // Parameter problem: a 32-bit pointer, no RFC 4884 length.
        (4, _) => (IcmpKind::Other, None),
        _ => return None,
    };
    // RFC 4884: a length in 64-bit words, when extensions follow the quote.
    let quote = rfc4884_quote(message, length, 8)?;
    let ip = Ipv6HeaderSlice::from_slice(quote).ok()?;
    let mut next = ip.next_header();
    let mut rest = quote.get(ip.slice().len()..)?;
    // Every extension header is at least 8 bytes long, so this ends.
    loop {
        match ipv6_extension(next, rest) {
            Ipv6Extension::Upper => break,
            Ipv6Extension::Header {
                next: after,
                len,
                fragment,
            } => {
                // A later fragment does not start with the UDP header.
                if fragment.is_some_and(|f| f.fragment_offset().value() != 0) {
                    return None;
                }
                next = after;
                rest = rest.get(len..)?;
            }
            Ipv6Extension::Broken => return None,
        }
    }
    if next != IpNumber::UDP {
        return None;
    }
    let error = IcmpError {
        from,
        kind,
        icmp_type,
        code,
    };
    udp(
        error,
        IpAddr::from(ip.source_addr()),
        IpAddr::from(ip.destination_addr()),
        rest,
    )
}

/// The quoted packet after the ICMP header: all the rest, or as many `unit`s
/// as an RFC 4884 length (`length`) states when it is not zero.
fn rfc4884_quote<'a>(message: &'a [u8], length: Option<&u8>, unit: usize) -> Option<&'a [u8]> {
    let rest = message.get(ICMP_HEADER_LEN..)?;
    Some(match length.map(|&l| usize::from(l) * unit) {
        Some(len) if len != 0 => rest.get(..len).unwrap_or(rest),
        _ => rest,
    })
}

/// The quoted UDP header and what is left of its payload.
fn udp(error: IcmpError, src: IpAddr, dst: IpAddr, segment: &[u8]) -> Option<Quoted<'_>> {
    let src_port = be16(segment, 0)?;
    let dst_port = be16(segment, 2)?;
    let udp_len = usize::from(be16(segment, 4)?).saturating_sub(UDP_HEADER_LEN);
    // Checksum at 6..8; the header is complete only with it.
    let present = segment.get(UDP_HEADER_LEN..)?;
    let payload = present.get(..udp_len).unwrap_or(present);
    Some(Quoted {
        error,
        src: SocketAddr::new(src, src_port),
        dst: SocketAddr::new(dst, dst_port),
        udp_len,
        payload,
    })
}

fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    let pair: [u8; 2] = bytes.get(at..at + 2)?.try_into().ok()?;
    Some(u16::from_be_bytes(pair))
}
