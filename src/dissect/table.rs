//! The flow table's key and hasher: both endpoints as one byte string,
//! hashed in one call.

use std::net::SocketAddr;

/// A flow's key: both endpoints, lower first, as one byte string (hashed in
/// one call, which makes the per-packet lookup cheap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct FlowKey([u8; 36]);

/// The flow table's hasher: `ahash` over the 36-byte key, a fraction of
/// SipHash's cost on the per-packet path, seeded per process from the
/// operating system so that a capture cannot aim collisions at the table.
pub(super) type FlowHashBuilder = ahash::RandomState;

fn endpoint_bytes(a: SocketAddr, out: &mut [u8]) {
    let ip = match a {
        SocketAddr::V4(v4) => v4.ip().to_ipv6_mapped().octets(),
        SocketAddr::V6(v6) => v6.ip().octets(),
    };
    out[..16].copy_from_slice(&ip);
    out[16..18].copy_from_slice(&a.port().to_be_bytes());
}

pub(super) fn key(a: SocketAddr, b: SocketAddr) -> FlowKey {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let mut k = [0u8; 36];
    endpoint_bytes(lo, &mut k[..18]);
    endpoint_bytes(hi, &mut k[18..]);
    FlowKey(k)
}
