//! `read -V` on a NetherNet datagram or signaling segment: its layers as a
//! tree with byte offsets into the UDP (or TCP) payload, as RakNet's tree
//! has them: a STUN message's header and attributes; each DTLS record's
//! header, the handshake messages in the clear (type, length, sequence,
//! fragment), alerts in the clear; a sealed record's SCTP chunks once the
//! key log opened it (their offsets are in the decrypted plaintext, which
//! is not kept: listed without); an HTTP message's start line.

use std::fmt::Write as _;

use crate::nethernet::{dtls, sctp, stun};
use crate::records::nethernet::NethernetPacket;

/// One row: offset, length, depth, name and value.
fn row(s: &mut String, at: usize, len: usize, depth: usize, name: &str, value: &str) {
    let indent = "  ".repeat(depth + 2);
    if value.is_empty() {
        let _ = writeln!(s, "  {at:>5} {len:>4} {indent}{name}");
    } else {
        let _ = writeln!(s, "  {at:>5} {len:>4} {indent}{name}: {value}");
    }
}

/// A row without offsets (decrypted bytes, not kept).
fn note(s: &mut String, depth: usize, text: &str) {
    let indent = "  ".repeat(depth + 2);
    let _ = writeln!(s, "             {indent}{text}");
}

/// At most 32 bytes in hex, the rest counted.
fn hex(b: &[u8]) -> String {
    let mut h = crate::wire::cursor::hex(&b[..b.len().min(32)]);
    if b.len() > 32 {
        let _ = write!(h, "… ({} bytes)", b.len());
    }
    h
}

/// The tree of `p`, whose payload is `payload`.
pub fn tree(p: &NethernetPacket, payload: &[u8]) -> String {
    let mut s = String::new();
    let proto = if p.kind == "http" { "TCP" } else { "UDP" };
    let _ = writeln!(
        s,
        "  {proto} {} → {}, flow {} {}, {} bytes of payload",
        p.src,
        p.dst,
        p.flow,
        p.dir.as_str(),
        payload.len()
    );
    if p.kind == "http" {
        http(p, payload, &mut s);
    } else if p.kind == "lan" {
        lan(p, payload, &mut s);
    } else if stun::looks_like(payload) {
        stun_tree(p, payload, &mut s);
    } else if dtls::looks_like(payload) {
        dtls_tree(p, payload, &mut s);
    }
    for a in &p.anomalies {
        let _ = writeln!(s, "  anomaly: {}: {}", a.kind, a.detail);
    }
    s
}

fn http(p: &NethernetPacket, payload: &[u8], s: &mut String) {
    let _ = writeln!(s, "  NetherNet signaling (HTTP/1.1)");
    let first = payload.split(|&b| b == b'\n').next().unwrap_or_default();
    if first.starts_with(b"GET ") || first.starts_with(b"POST ") || first.starts_with(b"HTTP/") {
        let line = String::from_utf8_lossy(first);
        row(s, 0, first.len(), 0, "start line", line.trim_end());
    } else {
        row(s, 0, payload.len(), 0, "bytes of a message", "");
    }
    for h in &p.http {
        let what = match (&h.method, &h.target, h.status) {
            (Some(m), Some(t), _) => format!("{m} {t}"),
            (_, _, Some(st)) => format!("{st} {}", h.reason.as_deref().unwrap_or("")),
            _ => String::new(),
        };
        note(
            s,
            0,
            &format!("completes: {what}, {} bytes of body", h.body_len),
        );
        if let Some(u) = &h.ice_ufrag {
            note(
                s,
                1,
                &format!("SDP: ice-ufrag {u}, candidates {}", h.candidates.join(", ")),
            );
        }
        if let Some(f) = &h.fingerprint {
            note(s, 1, &format!("SDP: fingerprint sha-256 {f}"));
        }
    }
}

/// A LAN discovery datagram: the HMAC, the ciphertext, and what the
/// plaintext said (its offsets are the plaintext's).
fn lan(p: &NethernetPacket, payload: &[u8], s: &mut String) {
    let _ = writeln!(s, "  NetherNet LAN discovery");
    row(
        s,
        0,
        32.min(payload.len()),
        0,
        "HMAC-SHA256",
        "verifies (the key is SHA-256 of le64 0xDEADBEEF)",
    );
    let sealed = payload.len().saturating_sub(32);
    row(
        s,
        32,
        sealed,
        0,
        "AES-256-ECB ciphertext",
        &format!("{sealed} bytes"),
    );
    let Some(l) = &p.lan else { return };
    note(s, 0, "plaintext:");
    row(s, 0, 2, 1, "length", "");
    row(s, 2, 2, 1, "packet", l.packet);
    row(s, 4, 8, 1, "sender", &l.sender);
    row(s, 12, 8, 1, "padding", "");
    if let Some(r) = &l.recipient {
        row(s, 20, 8, 1, "recipient", r);
    }
    if let (Some(k), Some(c)) = (&l.signal, &l.connection) {
        note(s, 1, &format!("signal {k}, connection {c}"));
        if let Some(u) = &l.ice_ufrag {
            note(s, 2, &format!("SDP: ice-ufrag {u}"));
        }
        if let Some(d) = l.data.as_deref().filter(|_| l.ice_ufrag.is_none()) {
            note(s, 2, d.trim());
        }
    }
    if let Some(d) = &l.server_data {
        note(s, 1, &format!("server data, version {}", d.version));
        note(
            s,
            2,
            &format!(
                "server name {:?}, level name {:?}",
                d.server_name, d.level_name
            ),
        );
        note(
            s,
            2,
            &format!(
                "game type {}, players {}/{}, editor {}, hardcore {}, transport {}, connection type {}",
                d.game_type, d.player_count, d.max_player_count, d.editor_world, d.hardcore, d.transport_layer, d.connection_type
            ),
        );
    }
}

fn stun_tree(p: &NethernetPacket, payload: &[u8], s: &mut String) {
    let _ = writeln!(s, "  STUN");
    let Ok(m) = stun::Message::parse(payload) else {
        row(s, 0, payload.len(), 0, "malformed", "");
        return;
    };
    let kind = u16::from_be_bytes([payload[0], payload[1]]);
    let class = m.class.as_str();
    row(s, 0, 2, 0, "type", &format!("{kind:#06x} Binding {class}"));
    let len = u16::from_be_bytes([payload[2], payload[3]]);
    row(s, 2, 2, 0, "length", &len.to_string());
    row(s, 4, 4, 0, "magic cookie", "0x2112a442");
    row(
        s,
        8,
        12,
        0,
        "transaction id",
        &crate::wire::cursor::hex(&m.transaction),
    );
    for a in &m.attributes {
        let name = stun::attr_name(a.kind)
            .map_or_else(|| format!("attribute {:#06x}", a.kind), str::to_string);
        let value = match a.kind {
            stun::attr::USERNAME => String::from_utf8_lossy(a.value).into_owned(),
            stun::attr::PRIORITY => m.priority().map_or(String::new(), |v| v.to_string()),
            stun::attr::XOR_MAPPED_ADDRESS => m
                .xor_mapped_address()
                .map_or(hex(a.value), |v| v.to_string()),
            stun::attr::ERROR_CODE => m
                .error_code()
                .map_or(hex(a.value), |(c, r)| format!("{c} {r}")),
            stun::attr::MESSAGE_INTEGRITY => {
                let ok = p.stun.as_ref().and_then(|st| st.integrity_ok);
                let said = match ok {
                    Some(true) => " (verifies with the SDP's ice-pwd)",
                    Some(false) => " (does NOT verify with the SDP's ice-pwd)",
                    None => " (no SDP in the capture to check it with)",
                };
                format!("{}{said}", hex(a.value))
            }
            stun::attr::FINGERPRINT => {
                let ok = m.fingerprint_ok() == Some(true);
                format!("{} ({})", hex(a.value), if ok { "holds" } else { "WRONG" })
            }
            stun::attr::ICE_CONTROLLING | stun::attr::ICE_CONTROLLED => {
                format!("tie-breaker {}", hex(a.value))
            }
            stun::attr::USE_CANDIDATE => String::new(),
            _ => hex(a.value),
        };
        row(s, a.at, 4 + a.value.len(), 1, &name, &value);
    }
}

/// A DTLS 1.3 record's unified header (RFC 9147 §4), then its ciphertext.
fn unified_tree(r: &dtls::Record<'_>, s: &mut String) {
    let _ = writeln!(s, "  DTLS 1.3 record (sealed: its content type is inside)");
    let b = r.content;
    let flags = format!(
        "{b:#04x}: connection id {}, {}-bit sequence number, length {}, epoch's low bits {}",
        if b & 0x10 != 0 {
            "present (length unknown here)"
        } else {
            "absent"
        },
        if b & 0x08 != 0 { 16 } else { 8 },
        if b & 0x04 != 0 {
            "present"
        } else {
            "absent (to the datagram's end)"
        },
        b & 0x03
    );
    row(s, r.at, 1, 0, "unified header", &flags);
    let mut at = r.at + 1;
    if b & 0x10 == 0 {
        let n = if b & 0x08 != 0 { 2 } else { 1 };
        row(
            s,
            at,
            n,
            0,
            "sequence number (encrypted)",
            &r.seq.to_string(),
        );
        at += n;
        if b & 0x04 != 0 {
            row(s, at, 2, 0, "length", &r.fragment.len().to_string());
            at += 2;
        }
    }
    row(
        s,
        at,
        r.fragment.len(),
        0,
        "ciphertext",
        &format!("{} bytes", r.fragment.len()),
    );
}

fn dtls_tree(p: &NethernetPacket, payload: &[u8], s: &mut String) {
    let Ok(records) = dtls::records(payload) else {
        let _ = writeln!(s, "  DTLS");
        row(s, 0, payload.len(), 0, "malformed", "");
        return;
    };
    let mut chunks_shown = false;
    for (i, r) in records.iter().enumerate() {
        let seen = p.records.get(i);
        let opened = seen.is_some_and(|x| x.opened);
        if r.unified {
            unified_tree(r, s);
            continue;
        }
        let _ = writeln!(
            s,
            "  DTLS record {}{}",
            dtls::content_name(r.content),
            if r.epoch > 0 && !opened {
                " (sealed)"
            } else if r.epoch > 0 {
                " (opened with the key log)"
            } else {
                ""
            }
        );
        let at = r.at;
        row(
            s,
            at,
            1,
            0,
            "content type",
            &format!("{} {}", r.content, dtls::content_name(r.content)),
        );
        row(
            s,
            at + 1,
            2,
            0,
            "version",
            &format!("{:#06x} {}", r.version, dtls::version_name(r.version)),
        );
        row(s, at + 3, 2, 0, "epoch", &r.epoch.to_string());
        row(s, at + 5, 6, 0, "sequence number", &r.seq.to_string());
        row(s, at + 11, 2, 0, "length", &r.fragment.len().to_string());
        let body = at + 13;
        match r.content {
            dtls::content::HANDSHAKE if r.epoch == 0 => {
                let mut off = body;
                for h in dtls::handshakes(r.fragment, body).unwrap_or_default() {
                    let whole = if h.is_whole() {
                        String::new()
                    } else {
                        format!(", fragment at {} of {}", h.fragment_offset, h.length)
                    };
                    let what = format!(
                        "{}, message {}, {} bytes{whole}",
                        dtls::handshake_name(h.kind),
                        h.message_seq,
                        h.body.len()
                    );
                    row(s, off, 12 + h.body.len(), 1, "handshake", &what);
                    off += 12 + h.body.len();
                }
            }
            dtls::content::ALERT if r.epoch == 0 && r.fragment.len() >= 2 => {
                let level = if r.fragment[0] == 2 {
                    "fatal"
                } else {
                    "warning"
                };
                row(
                    s,
                    body,
                    1,
                    1,
                    "level",
                    &format!("{} {level}", r.fragment[0]),
                );
                let d = r.fragment[1];
                row(
                    s,
                    body + 1,
                    1,
                    1,
                    "description",
                    &format!("{d} {}", dtls::alert_name(d)),
                );
            }
            dtls::content::APPLICATION_DATA if opened && !chunks_shown => {
                chunks_shown = true;
                row(
                    s,
                    body,
                    r.fragment.len(),
                    1,
                    "sealed: explicit nonce, ciphertext, tag",
                    "",
                );
                note(s, 1, "SCTP (decrypted)");
                for c in &p.chunks {
                    note(s, 2, &chunk(c));
                }
                for label in &p.opened {
                    note(s, 2, &format!("DCEP DATA_CHANNEL_OPEN: {label}"));
                }
            }
            _ => row(s, body, r.fragment.len(), 1, "fragment", &hex(r.fragment)),
        }
    }
}

/// An SCTP chunk in words.
fn chunk(c: &crate::nethernet::association::ChunkSeen) -> String {
    let mut t = format!("chunk {} flags {:#04x}", sctp::chunk_name(c.kind), c.flags);
    for (name, v) in [
        ("tsn", c.tsn.map(u64::from)),
        ("stream", c.stream.map(u64::from)),
        ("ssn/mid", c.message.map(u64::from)),
        ("ppid", c.ppid.map(u64::from)),
        ("bytes", c.len.map(|v| v as u64)),
        ("cumulative tsn", c.cumulative_tsn.map(u64::from)),
        ("gap blocks", c.gaps.map(|v| v as u64)),
        ("duplicates", c.duplicates.map(|v| v as u64)),
    ] {
        if let Some(v) = v {
            let _ = write!(t, ", {name} {v}");
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_cut() {
        assert_eq!(hex(&[1, 2]), "0102");
        assert!(hex(&[0; 40]).ends_with("… (40 bytes)"));
    }
}
