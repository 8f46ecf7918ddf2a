//! Link layers: from a captured frame to the IP packet it carries.
//!
//! Link type numbers are LINKTYPE_* values (tcpdump.org/linktypes.html).

/// What a frame carries, as far as the link layer tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LinkPayload<'a> {
    /// An IPv4 or IPv6 packet (the version nibble tells which).
    Ip(&'a [u8]),
    /// Something else: ARP, LLC, another ethertype or address family.
    NotIp,
    /// The link header is shorter than its fixed size.
    TooShort,
    /// A link type this reader does not decode.
    Unsupported,
}

pub(crate) const LINKTYPE_NULL: u32 = 0;
pub(crate) const LINKTYPE_ETHERNET: u32 = 1;
/// DLT_RAW as most systems number it, seen in old files.
pub(crate) const DLT_RAW_12: u32 = 12;
/// DLT_RAW as OpenBSD numbers it, seen in old files.
pub(crate) const DLT_RAW_14: u32 = 14;
pub(crate) const LINKTYPE_RAW: u32 = 101;
pub(crate) const LINKTYPE_LOOP: u32 = 108;
pub(crate) const LINKTYPE_LINUX_SLL: u32 = 113;
pub(crate) const LINKTYPE_IPV4: u32 = 228;
pub(crate) const LINKTYPE_IPV6: u32 = 229;
pub(crate) const LINKTYPE_LINUX_SLL2: u32 = 276;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88a8;
/// Pre-standard QinQ outer tags.
const ETHERTYPE_QINQ_OLD: u16 = 0x9100;
const ETHERTYPE_QINQ_OLD2: u16 = 0x9200;
/// More stacked VLAN tags than this is not a real frame.
const MAX_VLAN_TAGS: usize = 8;

/// BSD address families: AF_INET everywhere, AF_INET6 on NetBSD/OpenBSD (24),
/// FreeBSD (28) and Darwin (30).
const AF_INET: u32 = 2;
const AF_INET6_BSD: u32 = 24;
const AF_INET6_FREEBSD: u32 = 28;
const AF_INET6_DARWIN: u32 = 30;

/// Strips the link header of `frame` for link type `linktype`.
pub(crate) fn link_payload(linktype: u32, frame: &[u8]) -> LinkPayload<'_> {
    match linktype {
        LINKTYPE_ETHERNET => match (be16(frame, 12), frame.get(14..)) {
            (Some(ethertype), Some(rest)) => by_ethertype(ethertype, rest),
            _ => LinkPayload::TooShort,
        },
        // Packet type, ARPHRD type, address length, 8 address bytes, protocol.
        LINKTYPE_LINUX_SLL => match (be16(frame, 14), frame.get(16..)) {
            (Some(protocol), Some(rest)) => by_ethertype(protocol, rest),
            _ => LinkPayload::TooShort,
        },
        // Protocol, reserved, interface index, ARPHRD type, packet type,
        // address length, 8 address bytes.
        LINKTYPE_LINUX_SLL2 => match (be16(frame, 0), frame.get(20..)) {
            (Some(protocol), Some(rest)) => by_ethertype(protocol, rest),
            _ => LinkPayload::TooShort,
        },
        LINKTYPE_RAW | DLT_RAW_12 | DLT_RAW_14 | LINKTYPE_IPV4 | LINKTYPE_IPV6 => {
            LinkPayload::Ip(frame)
        }
        LINKTYPE_NULL | LINKTYPE_LOOP => {
            let (Some(family), Some(rest)) = (frame.get(..4), frame.get(4..)) else {
                return LinkPayload::TooShort;
            };
            let family = [family[0], family[1], family[2], family[3]];
            // NULL is in the byte order of the capturing host, LOOP in network
            // order (but writers disagree): the family is small, which tells.
            let le = u32::from_le_bytes(family);
            let family = if le <= 0xffff {
                le
            } else {
                u32::from_be_bytes(family)
            };
            match family {
                AF_INET | AF_INET6_BSD | AF_INET6_FREEBSD | AF_INET6_DARWIN => {
                    LinkPayload::Ip(rest)
                }
                _ => LinkPayload::NotIp,
            }
        }
        _ => LinkPayload::Unsupported,
    }
}

/// Follows 802.1Q / 802.1ad tags to the ethertype that says what is carried.
fn by_ethertype(mut ethertype: u16, mut rest: &[u8]) -> LinkPayload<'_> {
    for _ in 0..=MAX_VLAN_TAGS {
        match ethertype {
            ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => return LinkPayload::Ip(rest),
            ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD | ETHERTYPE_QINQ_OLD2 => {
                // Tag control information, then the inner ethertype.
                match (be16(rest, 2), rest.get(4..)) {
                    (Some(inner), Some(after)) => {
                        ethertype = inner;
                        rest = after;
                    }
                    _ => return LinkPayload::TooShort,
                }
            }
            _ => return LinkPayload::NotIp,
        }
    }
    LinkPayload::NotIp
}

fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    let b = bytes.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const IP: &[u8] = &[0x45, 0, 0, 20];

    fn ethernet(ethertype: u16, rest: &[u8]) -> Vec<u8> {
        let mut f = vec![0xaa; 12];
        f.extend(ethertype.to_be_bytes());
        f.extend(rest);
        f
    }

    #[test]
    fn ethernet_ip_and_not_ip() {
        assert_eq!(
            link_payload(LINKTYPE_ETHERNET, &ethernet(0x0800, IP)),
            LinkPayload::Ip(IP)
        );
        assert_eq!(
            link_payload(LINKTYPE_ETHERNET, &ethernet(0x86dd, IP)),
            LinkPayload::Ip(IP)
        );
        assert_eq!(
            link_payload(LINKTYPE_ETHERNET, &ethernet(0x0806, IP)),
            LinkPayload::NotIp
        );
        // 802.3 length field, LLC follows.
        assert_eq!(
            link_payload(LINKTYPE_ETHERNET, &ethernet(46, IP)),
            LinkPayload::NotIp
        );
        assert_eq!(
            link_payload(LINKTYPE_ETHERNET, &[0; 13]),
            LinkPayload::TooShort
        );
    }

    #[test]
    fn vlan_and_qinq() {
        let mut tagged = vec![0x00, 0x07, 0x08, 0x00];
        tagged.extend(IP);
        assert_eq!(
            link_payload(LINKTYPE_ETHERNET, &ethernet(0x8100, &tagged)),
            LinkPayload::Ip(IP)
        );
        let mut qinq = vec![0x00, 0x64, 0x81, 0x00, 0x00, 0x07, 0x86, 0xdd];
        qinq.extend(IP);
        assert_eq!(
            link_payload(LINKTYPE_ETHERNET, &ethernet(0x88a8, &qinq)),
            LinkPayload::Ip(IP)
        );
        assert_eq!(
            link_payload(LINKTYPE_ETHERNET, &ethernet(0x8100, &[0, 7, 8])),
            LinkPayload::TooShort
        );
        // Endless tags end, they do not loop.
        let endless: Vec<u8> = [0u8, 1, 0x81, 0x00].repeat(100);
        assert_eq!(
            link_payload(LINKTYPE_ETHERNET, &ethernet(0x8100, &endless)),
            LinkPayload::NotIp
        );
    }

    #[test]
    fn linux_cooked_v1_and_v2() {
        let mut sll = vec![0, 0, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x08, 0x00];
        sll.extend(IP);
        assert_eq!(link_payload(LINKTYPE_LINUX_SLL, &sll), LinkPayload::Ip(IP));
        let mut sll2 = vec![
            0x86, 0xdd, 0, 0, 0, 0, 0, 1, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0,
        ];
        sll2.extend(IP);
        assert_eq!(
            link_payload(LINKTYPE_LINUX_SLL2, &sll2),
            LinkPayload::Ip(IP)
        );
        assert_eq!(
            link_payload(LINKTYPE_LINUX_SLL2, &sll2[..19]),
            LinkPayload::TooShort
        );
    }

    #[test]
    fn null_and_loop_in_either_byte_order() {
        for family in [2u32, 24, 28, 30] {
            for header in [family.to_le_bytes(), family.to_be_bytes()] {
                let mut f = header.to_vec();
                f.extend(IP);
                assert_eq!(link_payload(LINKTYPE_NULL, &f), LinkPayload::Ip(IP));
                assert_eq!(link_payload(LINKTYPE_LOOP, &f), LinkPayload::Ip(IP));
            }
        }
        let mut appletalk = 16u32.to_le_bytes().to_vec();
        appletalk.extend(IP);
        assert_eq!(link_payload(LINKTYPE_NULL, &appletalk), LinkPayload::NotIp);
        assert_eq!(link_payload(LINKTYPE_NULL, &[2, 0]), LinkPayload::TooShort);
    }

    #[test]
    fn raw_and_unsupported() {
        for lt in [12, 14, 101, 228, 229] {
            assert_eq!(link_payload(lt, IP), LinkPayload::Ip(IP));
        }
        assert_eq!(link_payload(105, IP), LinkPayload::Unsupported);
        assert_eq!(link_payload(u32::MAX, &[]), LinkPayload::Unsupported);
    }
}
