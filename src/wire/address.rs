//! RakNet's `SystemAddress` on the wire (docs/wire-format.md §1.1).
//!
//! IPv4 is 7 bytes: version 4, the address with every byte inverted, the port
//! big-endian. IPv6 is 29 bytes: version 6 and a raw `sockaddr_in6` (family in
//! host order, port big-endian, flow info, 16 address bytes, scope id in host
//! order).

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use super::cursor::{Reader, Result, WriteExt};

/// Length of an IPv4 `SystemAddress` on the wire.
pub(crate) const V4_LEN: usize = 7;
/// Length of an IPv6 `SystemAddress` on the wire (1 + sizeof(sockaddr_in6)).
pub(crate) const V6_LEN: usize = 29;

/// An address as RakNet writes it: IPv4, or IPv6 with its raw family field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemAddress {
    /// Version 4: the address (bytes inverted on the wire) and port.
    V4(SocketAddrV4),
    /// `family` is the raw first two bytes of the `sockaddr_in6` read
    /// little-endian (10 on Linux, 23 on Windows; BSD puts length and family
    /// in one byte each), kept so that re-encoding is exact.
    V6 {
        /// Address, port, flow info and scope id.
        addr: SocketAddrV6,
        /// The raw family field, as described above.
        family: u16,
    },
}

impl SystemAddress {
    /// `UNASSIGNED_SYSTEM_ADDRESS`, what unused address-list slots hold.
    pub(crate) const UNASSIGNED: SystemAddress =
        SystemAddress::V4(SocketAddrV4::new(Ipv4Addr::new(0, 0, 0, 0), 0));

    /// An address as the original library on Linux would write it.
    pub fn from_socket_addr(a: SocketAddr) -> Self {
        match a {
            SocketAddr::V4(v4) => SystemAddress::V4(v4),
            SocketAddr::V6(v6) => SystemAddress::V6 {
                addr: v6,
                family: 10,
            },
        }
    }

    /// Decode one address (7 or 29 bytes, by its version byte); errors name `field`.
    pub fn parse(r: &mut Reader<'_>, field: &'static str) -> Result<Self> {
        let at = r.offset();
        if r.remaining() == 0 {
            r.raw(1, field)?;
        }
        let version = r.peek().unwrap_or(0);
        let need = if version == 6 { V6_LEN } else { V4_LEN };
        // Read the whole address at once so a short one is reported at its start.
        let b = match version {
            4 | 6 => &r.raw(need, field)?[1..],
            v => {
                return Err(Reader::invalid_at(
                    at,
                    field,
                    format!("IP version {v}, expected 4 or 6"),
                ))
            }
        };
        let a = match version {
            4 => {
                let ip = Ipv4Addr::new(!b[0], !b[1], !b[2], !b[3]);
                let port = u16::from_be_bytes([b[4], b[5]]);
                SystemAddress::V4(SocketAddrV4::new(ip, port))
            }
            _ => {
                let family = u16::from_le_bytes([b[0], b[1]]);
                let port = u16::from_be_bytes([b[2], b[3]]);
                let flowinfo = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
                let mut ip = [0u8; 16];
                ip.copy_from_slice(&b[8..24]);
                let scope = u32::from_le_bytes([b[24], b[25], b[26], b[27]]);
                SystemAddress::V6 {
                    addr: SocketAddrV6::new(Ipv6Addr::from(ip), port, flowinfo, scope),
                    family,
                }
            }
        };
        let len = r.offset() - at;
        r.record(field, len, || a.to_string());
        Ok(a)
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        match self {
            SystemAddress::V4(a) => {
                out.put_u8(4);
                for b in a.ip().octets() {
                    out.put_u8(!b);
                }
                out.put_u16_be(a.port());
            }
            SystemAddress::V6 { addr, family } => {
                out.put_u8(6);
                out.extend_from_slice(&family.to_le_bytes());
                out.put_u16_be(addr.port());
                out.put_u32_be(addr.flowinfo());
                out.extend_from_slice(&addr.ip().octets());
                out.extend_from_slice(&addr.scope_id().to_le_bytes());
            }
        }
    }
}

impl fmt::Display for SystemAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SystemAddress::V4(a) => write!(f, "{a}"),
            SystemAddress::V6 { addr, .. } => write!(f, "[{}]:{}", addr.ip(), addr.port()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_sample_from_the_original() {
        // docs/wire-format.md §1.1: 192.168.1.2:19132 -> 04 3f 57 fe fd 4a bc
        let bytes = [0x04, 0x3f, 0x57, 0xfe, 0xfd, 0x4a, 0xbc];
        let a = SystemAddress::parse(&mut Reader::new(&bytes), "address").unwrap();
        assert_eq!(a.to_string(), "192.168.1.2:19132");
        let mut out = Vec::new();
        a.emit(&mut out);
        assert_eq!(out, bytes);
    }

    #[test]
    fn unassigned_is_all_ones() {
        let mut out = Vec::new();
        SystemAddress::UNASSIGNED.emit(&mut out);
        assert_eq!(out, [4, 0xff, 0xff, 0xff, 0xff, 0, 0]);
    }

    #[test]
    fn ipv6_is_29_bytes_and_round_trips() {
        let a = SystemAddress::V6 {
            addr: SocketAddrV6::new(Ipv6Addr::LOCALHOST, 19132, 0, 0),
            family: 10,
        };
        let mut out = Vec::new();
        a.emit(&mut out);
        assert_eq!(out.len(), V6_LEN);
        assert_eq!(&out[..5], &[6, 10, 0, 0x4a, 0xbc]);
        let b = SystemAddress::parse(&mut Reader::new(&out), "address").unwrap();
        assert_eq!(a, b);
        assert_eq!(b.to_string(), "[::1]:19132");
    }

    #[test]
    fn bad_version_is_an_error() {
        let e = SystemAddress::parse(&mut Reader::new(&[5, 0, 0]), "client address").unwrap_err();
        assert_eq!(e.offset, 0);
        assert_eq!(e.field, "client address");
    }
}
