//! NetherNet's codecs on arbitrary bytes: STUN (with its integrity and
//! fingerprint checks), DTLS records, handshake fragments put together,
//! hellos and certificates, SCTP packets and what a receive half delivers
//! from them, DCEP, the 1-byte framing, HTTP from a TCP stream's segments,
//! SDP and its identity assertion, LAN discovery's plaintexts (its HMAC
//! cannot be forged, so they are read as if opened) and what a record
//! shows of them. None may panic, and every bound must
//! hold whatever the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use raknet_dissect::capture::tcp;
use raknet_dissect::nethernet::{
    dcep, delivery, dtls, framing, http, identity, lan, sctp, sdp, stun,
};

fuzz_target!(|data: &[u8]| {
    let _ = lan::open(data);
    if let Ok(l) = lan::parse(data) {
        let _ = lan::LanSeen::of(&l);
    }
    if let Ok(m) = stun::Message::parse(data) {
        let _ = (m.integrity(b"pwd"), m.fingerprint_ok(), m.xor_mapped_address(), m.error_code());
        let _ = (m.username(), m.priority(), m.role());
    }
    if let Ok(records) = dtls::records(data) {
        let mut flight = dtls::Reassembly::default();
        for r in &records {
            if let Ok(hs) = dtls::handshakes(r.fragment, r.at + 13) {
                for h in &hs {
                    if let Ok(Some(w)) = flight.push(h) {
                        assert!(w.body.len() as u32 <= dtls::MAX_HANDSHAKE);
                        let _ = dtls::hello(&w.body, w.kind == 1);
                        let _ = dtls::certificates(&w.body);
                    }
                }
            }
            let keys = dtls::Keys::derive(dtls::Suite::Aes128Gcm, &[0; 48], &[1; 32], &[2; 32]);
            let _ = keys.decrypt(r, true);
        }
    }
    // The same bytes as a run of SCTP packets, each prefixed by a length
    // byte, to one receiver.
    let mut receiver = delivery::Receiver::new(delivery::Limits {
        bytes: 4096,
        fragments: 16,
        streams: 4,
        remembered: 64,
    });
    let mut events = Vec::new();
    let mut rest = data;
    while let Some((&n, tail)) = rest.split_first() {
        let (packet, after) = tail.split_at((n as usize).min(tail.len()));
        let _ = sctp::checksum_ok(packet);
        if let Ok(p) = sctp::Packet::parse(packet) {
            receiver.chunks(&p.chunks, &mut events);
            assert!(receiver.held() <= 4096 + 255, "the receiver's bound");
        }
        rest = after;
    }
    let _ = dcep::Message::parse(data);
    let mut segments = framing::Reassembler::new(1024);
    for piece in data.chunks(7) {
        let _ = segments.push(piece);
        assert!(segments.held() <= 1024);
    }
    // TCP segments of 5 bytes with sequence numbers taken from the data,
    // then read as HTTP.
    let mut d = tcp::Direction::new(512);
    let (mut out, mut notes) = (Vec::new(), Vec::new());
    for (i, piece) in data.chunks(9).enumerate() {
        let seq = u32::from_le_bytes([piece[0], piece.get(1).copied().unwrap_or(0), 0, 0]);
        d.segment(seq, i == 0, false, piece.get(2..).unwrap_or(&[]), &mut out, &mut notes);
        assert!(d.held() <= 512 + 9);
    }
    d.finish(&mut out, &mut notes);
    let mut h = http::Stream::new();
    let _ = h.push(&out);
    let _ = h.push(data);
    let _ = h.finish();
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(s) = sdp::Sdp::parse(text) {
            assert!(s.candidates.len() <= sdp::MAX_CANDIDATES);
            let _ = identity::of(&s);
            let _ = identity::decode(text, &s);
        }
    }
});
