//! From one captured frame to at most one UDP datagram: link layer, IPv4 or
//! IPv6 (with extension headers, through etherparse's lax slices so that a
//! packet cut by the snapshot length still yields what it holds), fragment
//! reassembly, UDP; or an ICMP error and the UDP datagram it quotes.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use etherparse::err::ip::LaxHeaderSliceError;
use etherparse::{
    IpFragOffset, IpNumber, Ipv6ExtensionsSlice, Ipv6FragmentHeaderSlice, LaxIpSlice, LaxIpv4Slice,
    LaxIpv6Slice,
};

use super::defrag::{DefragLimits, DefragPool, FragKey};
use super::icmp::{self, Quoted};
use super::ipv6::{ipv6_extension, Ipv6Extension};
use super::link::{link_payload, LinkPayload};
use super::{CaptureStats, TcpSegment, UdpDatagram};

const UDP_HEADER_LEN: usize = 8;

/// The frame being decoded, as the capture file describes it.
struct Frame {
    number: u64,
    ts: Duration,
    /// The snapshot length cut this frame (fewer bytes captured than were on the wire).
    cut: bool,
}

/// Decodes frames and keeps the counters and the reassembly pool.
pub(crate) struct Decoder {
    pub(crate) stats: CaptureStats,
    pool: DefragPool,
    /// Payload buffers handed back by the caller, reused for the next datagrams.
    spare: Vec<Vec<u8>>,
    /// Hand out TCP segments too (not fragmented ones).
    pub(crate) tcp: bool,
}

/// Largest buffer kept for reuse (a UDP payload is at most 65,535 bytes).
const SPARE_MAX: usize = 1 << 16;
/// Most buffers kept for reuse: enough for the batches in flight between a
/// background reader and its consumer.
const SPARES: usize = 2048;
/// Capacity of a new payload buffer: a datagram of the largest usual MTU.
const FRESH_BUFFER: usize = 1536;

impl Decoder {
    pub(crate) fn new(limits: DefragLimits) -> Self {
        Decoder {
            stats: CaptureStats::default(),
            pool: DefragPool::new(limits),
            spare: Vec::new(),
            tcp: false,
        }
    }

    /// Keep `buf` to hold the next datagram's payload.
    pub(crate) fn recycle(&mut self, mut buf: Vec<u8>) {
        if buf.capacity() <= SPARE_MAX && self.spare.len() < SPARES {
            buf.clear();
            self.spare.push(buf);
        }
    }

    #[cfg(test)]
    pub(crate) fn set_defrag_limits(&mut self, limits: DefragLimits) {
        self.pool.set_limits(limits);
    }

    /// Counts a packet record too broken to decode.
    pub(crate) fn bad_record(&mut self) {
        self.stats.frames += 1;
        self.stats.bad_records += 1;
    }

    /// Decodes the next frame of the capture (`data` as captured, `orig_len`
    /// as it was on the wire).
    pub(crate) fn decode(
        &mut self,
        linktype: u32,
        ts: Duration,
        data: &[u8],
        orig_len: u32,
    ) -> Option<UdpDatagram> {
        self.stats.frames += 1;
        let frame = Frame {
            number: self.stats.frames,
            ts,
            cut: (data.len() as u64) < u64::from(orig_len),
        };
        match link_payload(linktype, data) {
            LinkPayload::Ip(packet) => self.ip(&frame, packet),
            LinkPayload::NotIp => {
                self.stats.non_udp += 1;
                None
            }
            LinkPayload::TooShort => {
                self.header_cut(&frame);
                None
            }
            LinkPayload::Unsupported => {
                self.stats.unsupported_link += 1;
                None
            }
        }
    }

    /// Take back the counting of the frame just decoded into `d` (a live
    /// capture filter rejected it): frame numbers stay those of what is kept.
    pub(crate) fn forget(&mut self, d: &UdpDatagram) {
        self.stats.frames = self.stats.frames.saturating_sub(1);
        if d.icmp.is_some() {
            self.stats.icmp_errors = self.stats.icmp_errors.saturating_sub(1);
        } else {
            self.stats.udp = self.stats.udp.saturating_sub(1);
        }
    }

    /// Gives up the reassemblies still in progress (end of the capture).
    pub(crate) fn finish(&mut self) {
        self.pool.finish(&mut self.stats);
    }

    /// A header too short: the snapshot length's doing, or a malformed packet.
    fn header_cut(&mut self, frame: &Frame) {
        if frame.cut {
            self.stats.truncated += 1;
        } else {
            self.stats.bad_ip += 1;
        }
    }

    fn ip(&mut self, frame: &Frame, packet: &[u8]) -> Option<UdpDatagram> {
        match LaxIpSlice::from_slice(packet) {
            Ok((LaxIpSlice::Ipv4(ip), _)) => self.ipv4(frame, &ip),
            Ok((LaxIpSlice::Ipv6(ip), ext_error)) => {
                self.ipv6(frame, packet, &ip, ext_error.is_some())
            }
            Err(LaxHeaderSliceError::Len(_)) => {
                self.header_cut(frame);
                None
            }
            Err(LaxHeaderSliceError::Content(_)) => {
                self.stats.bad_ip += 1;
                None
            }
        }
    }

    fn ipv4(&mut self, frame: &Frame, ip: &LaxIpv4Slice<'_>) -> Option<UdpDatagram> {
        let header = ip.header();
        let src = IpAddr::from(header.source_addr());
        let dst = IpAddr::from(header.destination_addr());
        let payload = ip.payload();
        if header.is_fragmenting_payload() {
            // The IPv4 header names the protocol in every fragment.
            if header.protocol() != IpNumber::UDP {
                self.stats.non_udp += 1;
                return None;
            }
            let key = FragKey {
                src,
                dst,
                id: u32::from(header.identification()),
                protocol: header.protocol().0,
            };
            let whole = self.fragment(
                frame,
                key,
                header.fragments_offset(),
                header.more_fragments(),
                payload.payload,
                payload.incomplete,
            )?;
            let datagram = self.udp(frame, src, dst, &whole, false);
            self.pool.recycle(whole);
            return datagram;
        }
        if payload.ip_number == IpNumber::ICMP {
            let quoted = icmp::icmpv4(src, payload.payload);
            return self.icmp_error(frame, quoted);
        }
        if payload.ip_number == IpNumber::TCP && self.tcp {
            return self.tcp_segment(frame, src, dst, payload.payload);
        }
        if payload.ip_number != IpNumber::UDP {
            self.stats.non_udp += 1;
            return None;
        }
        self.udp(frame, src, dst, payload.payload, payload.incomplete)
    }

    fn ipv6(
        &mut self,
        frame: &Frame,
        packet: &[u8],
        ip: &LaxIpv6Slice<'_>,
        ext_error: bool,
    ) -> Option<UdpDatagram> {
        let header = ip.header();
        let src = IpAddr::from(header.source_addr());
        let dst = IpAddr::from(header.destination_addr());
        let payload = ip.payload();
        // Before the extension header errors: etherparse reads on after a
        // fragment header, into what may be the middle of a datagram.
        if let Some(fragment) = fragment_header(header.next_header(), ip.extensions()) {
            // The fragmentable part: everything after the fragment header, to
            // the end of the IP payload.
            let start = offset_in(packet, fragment.slice()).map(|at| at + fragment.slice().len());
            let end = offset_in(packet, payload.payload).map(|at| at + payload.payload.len());
            let Some(fragmentable) = start
                .zip(end)
                .and_then(|(start, end)| packet.get(start..end))
            else {
                self.stats.bad_ip += 1;
                return None;
            };
            let next = fragment.next_header();
            if !may_lead_to_udp(next) {
                self.stats.non_udp += 1;
                return None;
            }
            let key = FragKey {
                src,
                dst,
                id: fragment.identification(),
                protocol: next.0,
            };
            let whole = self.fragment(
                frame,
                key,
                fragment.fragment_offset(),
                fragment.more_fragments(),
                fragmentable,
                payload.incomplete,
            )?;
            let (_, ip_number, udp, error) = Ipv6ExtensionsSlice::from_slice_lax(next, &whole);
            let datagram = if error.is_some() {
                self.stats.bad_ip += 1;
                None
            } else if ip_number != IpNumber::UDP {
                self.stats.non_udp += 1;
                None
            } else {
                self.udp(frame, src, dst, udp, false)
            };
            self.pool.recycle(whole);
            return datagram;
        }
        if ext_error {
            // An extension header cut by the snapshot length, or malformed.
            if payload.incomplete {
                self.stats.truncated += 1;
            } else {
                self.stats.bad_ip += 1;
            }
            return None;
        }
        if payload.ip_number == IpNumber::IPV6_ICMP {
            let quoted = icmp::icmpv6(src, payload.payload);
            return self.icmp_error(frame, quoted);
        }
        if payload.ip_number == IpNumber::TCP && self.tcp {
            return self.tcp_segment(frame, src, dst, payload.payload);
        }
        if payload.ip_number != IpNumber::UDP {
            self.stats.non_udp += 1;
            return None;
        }
        self.udp(frame, src, dst, payload.payload, payload.incomplete)
    }

    /// A TCP segment, as a datagram whose `tcp` says where it goes in its
    /// stream; a header that does not fit is a bad one.
    fn tcp_segment(
        &mut self,
        frame: &Frame,
        src: IpAddr,
        dst: IpAddr,
        b: &[u8],
    ) -> Option<UdpDatagram> {
        let offset = usize::from(b.get(12)? >> 4) * 4;
        let (Some(header), Some(payload)) = (b.get(..20), b.get(offset..)) else {
            self.stats.bad_ip += 1;
            return None;
        };
        if offset < 20 {
            self.stats.bad_ip += 1;
            return None;
        }
        let port = |at: usize| u16::from_be_bytes([header[at], header[at + 1]]);
        let flags = header[13];
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.extend_from_slice(payload);
        Some(UdpDatagram {
            frame: frame.number,
            ts: frame.ts,
            src: SocketAddr::new(src, port(0)),
            dst: SocketAddr::new(dst, port(2)),
            udp_len: payload.len(),
            payload: buf,
            icmp: None,
            tcp: Some(TcpSegment {
                seq: u32::from_be_bytes([header[4], header[5], header[6], header[7]]),
                fin: flags & 0x01 != 0,
                syn: flags & 0x02 != 0,
                rst: flags & 0x04 != 0,
            }),
        })
    }

    /// An ICMP error quoting a UDP datagram, as that datagram with the
    /// error attached; any other ICMP message counts as not UDP. A quote is
    /// partial by design, so a short one does not count as truncated.
    fn icmp_error(&mut self, frame: &Frame, quoted: Option<Quoted<'_>>) -> Option<UdpDatagram> {
        let Some(quoted) = quoted else {
            self.stats.non_udp += 1;
            return None;
        };
        self.stats.icmp_errors += 1;
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.extend_from_slice(quoted.payload);
        Some(UdpDatagram {
            frame: frame.number,
            ts: frame.ts,
            src: quoted.src,
            dst: quoted.dst,
            payload: buf,
            udp_len: quoted.udp_len,
            icmp: Some(quoted.error),
            tcp: None,
        })
    }

    /// Hands a fragment to the pool; the whole IP payload once complete.
    fn fragment(
        &mut self,
        frame: &Frame,
        key: FragKey,
        offset: IpFragOffset,
        more_fragments: bool,
        payload: &[u8],
        incomplete: bool,
    ) -> Option<Vec<u8>> {
        if incomplete {
            // A fragment missing bytes can never complete its datagram.
            self.stats.truncated += 1;
            self.stats.fragments_dropped += 1;
            return None;
        }
        self.pool.add(
            key,
            frame.ts,
            offset,
            more_fragments,
            payload,
            &mut self.stats,
        )
    }

    /// The UDP header and payload in `segment`; `incomplete` when the
    /// snapshot length cut the IP packet.
    fn udp(
        &mut self,
        frame: &Frame,
        src: IpAddr,
        dst: IpAddr,
        segment: &[u8],
        incomplete: bool,
    ) -> Option<UdpDatagram> {
        let (Some(header), Some(present)) =
            (segment.get(..UDP_HEADER_LEN), segment.get(UDP_HEADER_LEN..))
        else {
            if incomplete {
                self.stats.truncated += 1;
            } else {
                self.stats.bad_ip += 1;
            }
            return None;
        };
        let src_port = u16::from_be_bytes([header[0], header[1]]);
        let dst_port = u16::from_be_bytes([header[2], header[3]]);
        let length = usize::from(u16::from_be_bytes([header[4], header[5]]));
        // Below 8 is malformed (0 would be an IPv6 jumbogram, never captured whole).
        let Some(udp_len) = length.checked_sub(UDP_HEADER_LEN) else {
            self.stats.bad_ip += 1;
            return None;
        };
        if !incomplete && udp_len > present.len() {
            // The UDP header claims more than the whole IP packet holds.
            self.stats.bad_ip += 1;
            return None;
        }
        // Beyond `udp_len`: Ethernet padding or IP trailer, not payload.
        let payload = &present[..udp_len.min(present.len())];
        if payload.len() < udp_len {
            self.stats.truncated += 1;
        }
        self.stats.udp += 1;
        // New buffers hold a full-MTU datagram from the start, so that one
        // first used for a 7-byte ACK need not grow for the next payload.
        let mut buf = self
            .spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(FRESH_BUFFER));
        buf.extend_from_slice(payload);
        Some(UdpDatagram {
            frame: frame.number,
            ts: frame.ts,
            src: SocketAddr::new(src, src_port),
            dst: SocketAddr::new(dst, dst_port),
            payload: buf,
            udp_len,
            icmp: None,
            tcp: None,
        })
    }
}

/// The first fragment header that really fragments (not an atomic fragment),
/// walking the extension headers etherparse parsed.
///
/// Not with etherparse's `Ipv6ExtensionSliceIter`: after a lax parse stopped
/// at a broken header, that iterator reads past the end of its slice
/// (unchecked, undefined behaviour; found by the `capture` fuzz target).
fn fragment_header<'a>(
    first: IpNumber,
    extensions: &Ipv6ExtensionsSlice<'a>,
) -> Option<Ipv6FragmentHeaderSlice<'a>> {
    let mut next = first;
    let mut rest = extensions.slice();
    // Every header is at least 8 bytes long, so this ends.
    loop {
        let Ipv6Extension::Header {
            next: after,
            len,
            fragment,
        } = ipv6_extension(next, rest)
        else {
            return None;
        };
        if let Some(fragment) = fragment {
            return Some(fragment);
        }
        next = after;
        rest = rest.get(len..)?;
    }
}

/// Whether an IPv6 next header after a fragment header can still lead to UDP
/// (extension headers of the fragmentable part may come first).
fn may_lead_to_udp(next: IpNumber) -> bool {
    matches!(
        next,
        IpNumber::UDP
            | IpNumber::IPV6_DESTINATION_OPTIONS
            | IpNumber::IPV6_ROUTE_HEADER
            | IpNumber::AUTHENTICATION_HEADER
    )
}

/// Where `part` starts inside `whole` (both slices of the same frame).
fn offset_in(whole: &[u8], part: &[u8]) -> Option<usize> {
    let offset = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (offset.checked_add(part.len())? <= whole.len()).then_some(offset)
}
