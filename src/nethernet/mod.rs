//! NetherNet, Minecraft Bedrock's WebRTC transport (from 1.26.50 the
//! dedicated server's default): the pieces of a session as a capture shows
//! them, each a stateless codec in the manner of `wire`:
//!
//! | piece | carries | module |
//! | --- | --- | --- |
//! | signaling | HTTP/1.1 on TCP: the join status, the SDP offer and answer, who each side is | [`http`], [`sdp`], [`identity`] |
//! | ICE | STUN Binding checks on each candidate pair | [`stun`] |
//! | DTLS 1.2 | records, the handshake in the clear, AEAD records opened with a key log | [`dtls`] |
//! | SCTP | inside DTLS: DATA/I-DATA, SACK, FORWARD-TSN, INIT... | [`sctp`] |
//! | SCTP's receive half | what each side's stack delivered to its channels | [`delivery`] |
//! | DCEP | opens the two data channels (PPID 50) | [`dcep`] |
//! | NetherNet | a 1-byte segment count before each piece of a Bedrock batch | [`framing`] |
//!
//! STUN and DTLS share the UDP 5-tuple: [`classify`] tells them apart by
//! the first byte, as RFC 7983 says. [`association::Association`] reads a
//! 5-tuple's datagrams through all of them, to the batches each side's
//! application received.

pub mod association;
pub mod cert;
pub mod conversations;
pub mod dcep;
pub mod delivery;
pub mod dtls;
pub mod framing;
pub mod http;
pub mod ice;
pub mod identity;
pub mod lan;
pub mod rtc;
pub mod rtt;
pub mod sctp;
pub mod sdp;
pub mod signaling;
pub mod stun;
pub mod timeline;

/// What a UDP payload on an ICE 5-tuple is, by its first byte (RFC 7983
/// §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Demux {
    /// 0 to 3.
    Stun,
    /// 16 to 19.
    Zrtp,
    /// 20 to 63.
    Dtls,
    /// 64 to 79: TURN channel data.
    TurnChannel,
    /// 128 to 191.
    Rtp,
    /// Anything else, or nothing.
    Unknown,
}

/// The RFC 7983 class of a UDP payload.
pub fn classify(payload: &[u8]) -> Demux {
    match payload.first() {
        Some(0..=3) => Demux::Stun,
        Some(16..=19) => Demux::Zrtp,
        Some(20..=63) => Demux::Dtls,
        Some(64..=79) => Demux::TurnChannel,
        Some(128..=191) => Demux::Rtp,
        _ => Demux::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_bytes_demultiplex() {
        assert_eq!(classify(&[0, 1]), Demux::Stun);
        assert_eq!(classify(&[22, 0xfe]), Demux::Dtls);
        assert_eq!(classify(&[63]), Demux::Dtls);
        assert_eq!(classify(&[64]), Demux::TurnChannel);
        assert_eq!(classify(&[0x80]), Demux::Rtp);
        assert_eq!(classify(&[]), Demux::Unknown);
        assert_eq!(classify(&[0xfe]), Demux::Unknown);
    }
}

#[cfg(test)]
mod sample_tests;
