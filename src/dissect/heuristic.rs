//! Which UDP is RakNet without a handshake seen: the heuristic for flows
//! first seen mid-connection, and the ports `-d` forces.

use crate::wire::{Datagram, Reader, Reliability};

/// The heuristic for flows seen without their handshake: a datagram that
/// decodes strictly to its end with sane values, or a well-formed ACK/NACK.
pub fn looks_like_raknet(p: &[u8]) -> bool {
    if p.len() < 4 || p[0] & 0x80 == 0 {
        return false;
    }
    match Datagram::parse(&mut Reader::new(p)) {
        Ok(Datagram::Data(d)) => d.capsules.iter().all(|c| {
            c.reliability.0 <= Reliability::RELIABLE_SEQUENCED.0
                && c.split.is_none_or(|s| s.count <= 1 << 20)
                && (c.bit_length as usize).div_ceil(8) == c.payload.len()
        }),
        Ok(Datagram::Ack(l)) | Ok(Datagram::Nack(l)) => {
            !l.ranges.is_empty() && p[0] & 0x1f == 0 && l.arrival_rate.is_none()
        }
        Err(_) => false,
    }
}

/// A port to decode as RakNet, as `-d` takes it: `19132`, or Wireshark's
/// Decode As spelling `udp.port==19132,raknet`.
pub fn parse_decode_as(s: &str) -> Result<u16, String> {
    let port = match s.strip_prefix("udp.port==") {
        Some(rest) => {
            let (port, proto) = rest.split_once(',').unwrap_or((rest, "raknet"));
            if !proto.eq_ignore_ascii_case("raknet") {
                return Err(format!("only raknet can be decoded, not {proto:?}"));
            }
            port
        }
        None => s,
    };
    port.trim()
        .parse::<u16>()
        .map_err(|_| format!("{s:?} is not a port or udp.port==PORT,raknet"))
}
