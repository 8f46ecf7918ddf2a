//! STUN (RFC 8489) as ICE uses it (RFC 8445): the Binding requests and
//! responses two NetherNet peers exchange on each candidate pair before
//! DTLS starts on the same 5-tuple.
//!
//! A message is a 20-byte header (type, length, the magic cookie
//! 0x2112A442, a 96-bit transaction id) and attributes, each a type, a
//! length and a value padded to 4 bytes. [`Message::parse`] reads them
//! without copying; [`Message::integrity`] checks MESSAGE-INTEGRITY
//! (HMAC-SHA1 keyed by the ICE password of the side that receives the
//! request: the `a=ice-pwd` of its SDP) and [`Message::fingerprint_ok`]
//! FINGERPRINT (CRC-32 xor 0x5354554E), each over the message up to the
//! attribute with the header's length counting up to its end.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use hmac::{KeyInit, Mac};

use crate::wire::cursor::{Reader, Result};

/// The magic cookie of every STUN message since RFC 5389.
pub const MAGIC_COOKIE: u32 = 0x2112_A442;

/// Attributes a message may hold at most (ICE's have about eight): more
/// is malformed rather than a list to grow.
pub const MAX_ATTRIBUTES: usize = 64;

/// The attribute types ICE uses (RFC 8489 §18.3, RFC 8445 §16.1) and the
/// few others WebRTC stacks add.
pub mod attr {
    /// The address the responder saw the request come from, in the clear (RFC 3489's).
    pub const MAPPED_ADDRESS: u16 = 0x0001;
    /// The credentials: `receiver-ufrag:sender-ufrag` in ICE.
    pub const USERNAME: u16 = 0x0006;
    /// HMAC-SHA1 over the message before it, keyed by the ICE password.
    pub const MESSAGE_INTEGRITY: u16 = 0x0008;
    /// An error response's code and reason phrase.
    pub const ERROR_CODE: u16 = 0x0009;
    /// The attribute types an error response did not understand.
    pub const UNKNOWN_ATTRIBUTES: u16 = 0x000A;
    /// The address the responder saw the request come from, xor'd with the magic cookie (and the transaction id for IPv6).
    pub const XOR_MAPPED_ADDRESS: u16 = 0x0020;
    /// The priority the sender would give a peer-reflexive candidate.
    pub const PRIORITY: u16 = 0x0024;
    /// The controlling agent nominates this pair.
    pub const USE_CANDIDATE: u16 = 0x0025;
    /// The sender's software, in words.
    pub const SOFTWARE: u16 = 0x8022;
    /// CRC-32 of the message before it, xor 0x5354554E.
    pub const FINGERPRINT: u16 = 0x8028;
    /// The sender is the controlled agent; its tie-breaker.
    pub const ICE_CONTROLLED: u16 = 0x8029;
    /// The sender is the controlling agent; its tie-breaker.
    pub const ICE_CONTROLLING: u16 = 0x802A;
    /// Google's network cost (libwebrtc).
    pub const GOOG_NETWORK_INFO: u16 = 0xC057;
}

/// An attribute's name, or `None` for a type this module does not name.
pub fn attr_name(t: u16) -> Option<&'static str> {
    Some(match t {
        attr::MAPPED_ADDRESS => "MAPPED-ADDRESS",
        attr::USERNAME => "USERNAME",
        attr::MESSAGE_INTEGRITY => "MESSAGE-INTEGRITY",
        attr::ERROR_CODE => "ERROR-CODE",
        attr::UNKNOWN_ATTRIBUTES => "UNKNOWN-ATTRIBUTES",
        attr::XOR_MAPPED_ADDRESS => "XOR-MAPPED-ADDRESS",
        attr::PRIORITY => "PRIORITY",
        attr::USE_CANDIDATE => "USE-CANDIDATE",
        attr::SOFTWARE => "SOFTWARE",
        attr::FINGERPRINT => "FINGERPRINT",
        attr::ICE_CONTROLLED => "ICE-CONTROLLED",
        attr::ICE_CONTROLLING => "ICE-CONTROLLING",
        attr::GOOG_NETWORK_INFO => "GOOG-NETWORK-INFO",
        _ => return None,
    })
}

/// A message's class: the two bits spread over its type (RFC 8489 §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A request (ICE: a Binding request, a connectivity check).
    Request,
    /// An indication: no response expected (a keepalive).
    Indication,
    /// A success response.
    Success,
    /// An error response.
    Error,
}

impl Class {
    /// The class in words.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Request => "request",
            Class::Indication => "indication",
            Class::Success => "success response",
            Class::Error => "error response",
        }
    }
}

/// One attribute: its type, where its value starts in the message, and
/// the value (without padding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attribute<'a> {
    /// The attribute type ([`attr`]).
    pub kind: u16,
    /// Offset of the attribute's type field in the message.
    pub at: usize,
    /// The value, without its padding.
    pub value: &'a [u8],
}

/// A STUN message, borrowed from the datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message<'a> {
    /// The whole message (header and attributes, as the length says).
    pub bytes: &'a [u8],
    /// The method: 0x001 is Binding, the only one ICE sends.
    pub method: u16,
    /// Request, indication or response.
    pub class: Class,
    /// The 96-bit transaction id, which the response repeats.
    pub transaction: [u8; 12],
    /// The attributes, in order.
    pub attributes: Vec<Attribute<'a>>,
}

/// The class of a message type's bits C1 (0x100) and C0 (0x010).
fn class_of(t: u16) -> Class {
    match ((t >> 7) & 0b10) | ((t >> 4) & 0b01) {
        0b00 => Class::Request,
        0b01 => Class::Indication,
        0b10 => Class::Success,
        _ => Class::Error,
    }
}

/// The method of a message type: its 12 bits around the class bits.
fn method_of(t: u16) -> u16 {
    (t & 0x000F) | ((t & 0x00E0) >> 1) | ((t & 0x3E00) >> 2)
}

/// Whether `b` can be a STUN message: a first byte of 0 to 3 (RFC 7983),
/// the cookie in place, a length that is a multiple of 4 (RFC 8489).
pub fn looks_like(b: &[u8]) -> bool {
    b.len() >= 20
        && b[0] <= 3
        && b[4..8] == MAGIC_COOKIE.to_be_bytes()
        && u16::from_be_bytes([b[2], b[3]]).is_multiple_of(4)
}

impl<'a> Message<'a> {
    /// The message at the start of `b` (a UDP payload).
    pub fn parse(b: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(b);
        let t = r.u16_be("STUN message type")?;
        if t & 0xC000 != 0 {
            return Err(Reader::invalid_at(
                0,
                "STUN message type",
                "the first two bits are not 0",
            ));
        }
        let len = usize::from(r.u16_be("STUN message length")?);
        if len % 4 != 0 {
            return Err(Reader::invalid_at(
                2,
                "STUN message length",
                format!("{len} is not a multiple of 4"),
            ));
        }
        let cookie = r.u32_be("STUN magic cookie")?;
        if cookie != MAGIC_COOKIE {
            return Err(Reader::invalid_at(
                4,
                "STUN magic cookie",
                format!("{cookie:#010x}, not 0x2112a442"),
            ));
        }
        let mut transaction = [0; 12];
        transaction.copy_from_slice(r.raw(12, "STUN transaction id")?);
        let body = r.raw(len, "STUN attributes")?;
        let mut attributes = Vec::new();
        let mut a = Reader::with_base(body, 20);
        while a.remaining() > 0 {
            if attributes.len() == MAX_ATTRIBUTES {
                return Err(a.invalid("STUN attribute", format!("more than {MAX_ATTRIBUTES}")));
            }
            let at = a.offset();
            let kind = a.u16_be("STUN attribute type")?;
            let n = usize::from(a.u16_be("STUN attribute length")?);
            let value = a.raw(n, "STUN attribute value")?;
            // Padding to 4 bytes; the last attribute's may be missing in
            // a sloppy message, which loses nothing.
            let pad = (4 - n % 4) % 4;
            a.raw(pad.min(a.remaining()), "STUN attribute padding")?;
            attributes.push(Attribute { kind, at, value });
        }
        Ok(Message {
            bytes: &b[..20 + len],
            method: method_of(t),
            class: class_of(t),
            transaction,
            attributes,
        })
    }

    /// The first attribute of type `kind`.
    pub fn attribute(&self, kind: u16) -> Option<&Attribute<'a>> {
        self.attributes.iter().find(|a| a.kind == kind)
    }

    /// USERNAME: `remote-ufrag:local-ufrag` in ICE (the receiver's
    /// fragment first).
    pub fn username(&self) -> Option<&'a str> {
        std::str::from_utf8(self.attribute(attr::USERNAME)?.value).ok()
    }

    /// PRIORITY: the candidate priority the sender would give a
    /// peer-reflexive candidate.
    pub fn priority(&self) -> Option<u32> {
        Some(u32::from_be_bytes(
            self.attribute(attr::PRIORITY)?.value.try_into().ok()?,
        ))
    }

    /// Whether the controlling side nominated this pair (USE-CANDIDATE).
    pub fn use_candidate(&self) -> bool {
        self.attribute(attr::USE_CANDIDATE).is_some()
    }

    /// The ICE role the sender claims, with its tie-breaker:
    /// `(true, ..)` for ICE-CONTROLLING.
    pub fn role(&self) -> Option<(bool, u64)> {
        let (controlling, a) = match self.attribute(attr::ICE_CONTROLLING) {
            Some(a) => (true, a),
            None => (false, self.attribute(attr::ICE_CONTROLLED)?),
        };
        Some((controlling, u64::from_be_bytes(a.value.try_into().ok()?)))
    }

    /// XOR-MAPPED-ADDRESS: the address the request came from, as the
    /// responder saw it.
    pub fn xor_mapped_address(&self) -> Option<SocketAddr> {
        let v = self.attribute(attr::XOR_MAPPED_ADDRESS)?.value;
        let cookie = MAGIC_COOKIE.to_be_bytes();
        let port = u16::from_be_bytes([*v.get(2)?, *v.get(3)?]) ^ (MAGIC_COOKIE >> 16) as u16;
        let ip = match v.get(1)? {
            1 => {
                let x: [u8; 4] = v.get(4..8)?.try_into().ok()?;
                IpAddr::V4(Ipv4Addr::from(std::array::from_fn::<u8, 4, _>(|i| {
                    x[i] ^ cookie[i]
                })))
            }
            2 => {
                let x: [u8; 16] = v.get(4..20)?.try_into().ok()?;
                let mut mask = [0u8; 16];
                mask[..4].copy_from_slice(&cookie);
                mask[4..].copy_from_slice(&self.transaction);
                IpAddr::V6(Ipv6Addr::from(std::array::from_fn::<u8, 16, _>(|i| {
                    x[i] ^ mask[i]
                })))
            }
            _ => return None,
        };
        Some(SocketAddr::new(ip, port))
    }

    /// ERROR-CODE: the code (e.g. 401, 487) and its reason phrase.
    pub fn error_code(&self) -> Option<(u16, &'a str)> {
        let v = self.attribute(attr::ERROR_CODE)?.value;
        let code = u16::from(*v.get(2)? & 0x07) * 100 + u16::from(*v.get(3)?);
        Some((code, std::str::from_utf8(v.get(4..)?).unwrap_or("")))
    }

    /// The message as its hash sees it: the bytes before attribute `a`,
    /// with the header's length set to count up to the end of `a`.
    fn prefix(&self, a: &Attribute<'_>) -> ([u8; 20], &'a [u8]) {
        let mut head = [0u8; 20];
        head.copy_from_slice(&self.bytes[..20]);
        let end = a.at + 4 + a.value.len();
        let len = (end - 20) as u16;
        head[2..4].copy_from_slice(&len.to_be_bytes());
        (head, &self.bytes[20..a.at])
    }

    /// Whether MESSAGE-INTEGRITY verifies with `password` (ICE's
    /// short-term credential: the receiver's `ice-pwd`); `None` when the
    /// message has none.
    pub fn integrity(&self, password: &[u8]) -> Option<bool> {
        let a = self.attribute(attr::MESSAGE_INTEGRITY)?;
        if a.value.len() != 20 {
            return Some(false);
        }
        let (head, body) = self.prefix(a);
        let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(password).ok()?;
        mac.update(&head);
        mac.update(body);
        Some(mac.verify_slice(a.value).is_ok())
    }

    /// Whether FINGERPRINT matches; `None` when the message has none.
    pub fn fingerprint_ok(&self) -> Option<bool> {
        let a = self.attribute(attr::FINGERPRINT)?;
        let want: [u8; 4] = a.value.try_into().ok()?;
        let (head, body) = self.prefix(a);
        let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
        let mut d = crc.digest();
        d.update(&head);
        d.update(body);
        Some(d.finalize() ^ 0x5354_554E == u32::from_be_bytes(want))
    }
}

/// A STUN message being written (RFC 8489): a Binding request, success
/// or error response, its attributes in order, then MESSAGE-INTEGRITY and
/// FINGERPRINT when [`Builder::finish`] is asked for them.
#[derive(Debug, Clone)]
pub struct Builder {
    bytes: Vec<u8>,
    /// The byte values are padded with (RFC 8489 allows any; 0 here).
    pad: u8,
}

impl Builder {
    /// A message of `class` and method Binding, transaction `transaction`.
    pub fn binding(class: Class, transaction: [u8; 12]) -> Builder {
        let t: u16 = match class {
            Class::Request => 0x0001,
            Class::Indication => 0x0011,
            Class::Success => 0x0101,
            Class::Error => 0x0111,
        };
        let mut bytes = Vec::with_capacity(128);
        bytes.extend_from_slice(&t.to_be_bytes());
        bytes.extend_from_slice(&[0, 0]);
        bytes.extend_from_slice(&MAGIC_COOKIE.to_be_bytes());
        bytes.extend_from_slice(&transaction);
        Builder { bytes, pad: 0 }
    }

    /// An attribute of `kind` with `value` (padded to 4 bytes).
    pub fn attr(mut self, kind: u16, value: &[u8]) -> Builder {
        self.bytes.extend_from_slice(&kind.to_be_bytes());
        self.bytes
            .extend_from_slice(&(value.len() as u16).to_be_bytes());
        self.bytes.extend_from_slice(value);
        let pad = (4 - value.len() % 4) % 4;
        self.bytes.extend(std::iter::repeat_n(self.pad, pad));
        self.set_length(0);
        self
    }

    /// XOR-MAPPED-ADDRESS of `addr`.
    pub fn xor_mapped_address(self, addr: SocketAddr) -> Builder {
        let mut mask = [0u8; 16];
        mask[..4].copy_from_slice(&MAGIC_COOKIE.to_be_bytes());
        mask[4..].copy_from_slice(&self.bytes[8..20]);
        let port = addr.port() ^ (MAGIC_COOKIE >> 16) as u16;
        let mut v = vec![0];
        let ip: Vec<u8> = match addr.ip() {
            IpAddr::V4(a) => {
                v.push(1);
                a.octets().iter().zip(mask).map(|(b, m)| b ^ m).collect()
            }
            IpAddr::V6(a) => {
                v.push(2);
                a.octets().iter().zip(mask).map(|(b, m)| b ^ m).collect()
            }
        };
        v.extend_from_slice(&port.to_be_bytes());
        v.extend(ip);
        self.attr(attr::XOR_MAPPED_ADDRESS, &v)
    }

    /// ERROR-CODE `code` with `reason`.
    pub fn error_code(self, code: u16, reason: &str) -> Builder {
        let mut v = vec![0, 0, (code / 100) as u8, (code % 100) as u8];
        v.extend_from_slice(reason.as_bytes());
        self.attr(attr::ERROR_CODE, &v)
    }

    /// The header's length: the attributes so far and `more` bytes.
    fn set_length(&mut self, more: usize) {
        let len = (self.bytes.len() - 20 + more) as u16;
        self.bytes[2..4].copy_from_slice(&len.to_be_bytes());
    }

    /// The message, with MESSAGE-INTEGRITY keyed by `password` (ICE's
    /// short-term credential: the receiver's `ice-pwd`, or our own in a
    /// response) when given, then FINGERPRINT.
    pub fn finish(mut self, password: Option<&[u8]>, fingerprint: bool) -> Vec<u8> {
        if let Some(p) = password {
            self.set_length(24);
            let mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(p).map(|mut m| {
                m.update(&self.bytes);
                m.finalize().into_bytes()
            });
            let mac = mac.map(|m| m.to_vec()).unwrap_or_else(|_| vec![0; 20]);
            self = self.attr(attr::MESSAGE_INTEGRITY, &mac);
        }
        if fingerprint {
            self.set_length(8);
            let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(&self.bytes);
            self = self.attr(attr::FINGERPRINT, &(crc ^ 0x5354_554E).to_be_bytes());
        }
        self.bytes
    }
}

/// ICE passwords by username fragment, as the signaling's SDPs named
/// them: the keys of the checks' MESSAGE-INTEGRITY.
#[derive(Debug, Default)]
pub struct IcePasswords {
    map: std::collections::HashMap<String, String>,
    order: std::collections::VecDeque<String>,
}

impl IcePasswords {
    /// Pairs kept at most; past them, the oldest is forgotten.
    pub const MAX: usize = 4096;
    /// A ufrag's or a password's characters at most (RFC 8839: 256).
    pub const MAX_LEN: usize = 256;

    /// An SDP's `a=ice-ufrag` and `a=ice-pwd` (longer than
    /// [`IcePasswords::MAX_LEN`]: not kept).
    pub fn learn(&mut self, ufrag: &str, pwd: &str) {
        if ufrag.len() > Self::MAX_LEN || pwd.len() > Self::MAX_LEN {
            return;
        }
        if self.map.insert(ufrag.into(), pwd.into()).is_none() {
            self.order.push_back(ufrag.into());
        }
        while self.order.len() > Self::MAX {
            if let Some(old) = self.order.pop_front() {
                self.map.remove(&old);
            }
        }
    }

    /// The password of `ufrag`, when an SDP named it.
    pub fn get(&self, ufrag: &str) -> Option<&str> {
        self.map.get(ufrag).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 5769 §2.1: a Binding request with SOFTWARE, PRIORITY,
    /// ICE-CONTROLLED, USERNAME "evtj:h6vY", MESSAGE-INTEGRITY keyed by
    /// "VOkJxbRl1RmTxUk/WvJxBt", FINGERPRINT.
    const REQUEST: &str = "000100582112a442b7e7a701bc34d686fa87dfae802200105354554e2074657374\
        20636c69656e74002400046e0001ff80290008932ff9b151263b36000600096576746a3a6836765920202000080014\
        9aeaa70cbfd8cb56781ef2b5b2d3f249c1b571a280280004e57a3bcf";

    fn bytes(h: &str) -> Vec<u8> {
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn the_rfc_5769_request() {
        let b = bytes(REQUEST);
        assert!(looks_like(&b));
        let m = Message::parse(&b).unwrap();
        assert_eq!((m.method, m.class), (1, Class::Request));
        assert_eq!(m.username(), Some("evtj:h6vY"));
        assert_eq!(m.priority(), Some(0x6e0001ff));
        assert_eq!(m.role(), Some((false, 0x932ff9b151263b36)));
        assert!(!m.use_candidate());
        assert_eq!(m.integrity(b"VOkJxbRl1RmTxUk/WvJxBt"), Some(true));
        assert_eq!(m.integrity(b"VOkJxbRl1RmTxUk/WvJxBT"), Some(false));
        assert_eq!(m.fingerprint_ok(), Some(true));
        // One bit changed before them: both fail.
        let mut bad = b.clone();
        bad[40] ^= 1;
        let m = Message::parse(&bad).unwrap();
        assert_eq!(m.integrity(b"VOkJxbRl1RmTxUk/WvJxBt"), Some(false));
        assert_eq!(m.fingerprint_ok(), Some(false));
    }

    /// RFC 5769 §2.1's request written here byte for byte (its padding is
    /// spaces), and a response that reads back.
    #[test]
    fn messages_written_here_are_the_rfc_5769_ones() {
        let b = bytes(REQUEST);
        let transaction: [u8; 12] = b[8..20].try_into().unwrap();
        let mut w = Builder::binding(Class::Request, transaction);
        w.pad = b' ';
        let w = w
            .attr(attr::SOFTWARE, b"STUN test client")
            .attr(attr::PRIORITY, &0x6e0001ffu32.to_be_bytes())
            .attr(attr::ICE_CONTROLLED, &0x932ff9b151263b36u64.to_be_bytes())
            .attr(attr::USERNAME, b"evtj:h6vY");
        assert_eq!(w.finish(Some(b"VOkJxbRl1RmTxUk/WvJxBt"), true), b);
        for addr in [
            "192.0.2.1:32853",
            "[2001:db8:1234:5678:11:2233:4455:6677]:32853",
        ] {
            let addr: SocketAddr = addr.parse().unwrap();
            let r = Builder::binding(Class::Success, transaction)
                .xor_mapped_address(addr)
                .finish(Some(b"pwd"), true);
            let m = Message::parse(&r).unwrap();
            assert_eq!((m.class, m.method), (Class::Success, 1));
            assert_eq!(m.xor_mapped_address(), Some(addr));
            assert_eq!(
                (m.integrity(b"pwd"), m.fingerprint_ok()),
                (Some(true), Some(true))
            );
        }
        let e = Builder::binding(Class::Error, transaction)
            .error_code(401, "Unauthorized")
            .finish(None, true);
        let m = Message::parse(&e).unwrap();
        assert_eq!(m.error_code(), Some((401, "Unauthorized")));
        assert_eq!(
            (m.integrity(b"pwd"), m.fingerprint_ok()),
            (None, Some(true))
        );
    }

    #[test]
    fn class_and_method_bits() {
        assert_eq!(class_of(0x0001), Class::Request);
        assert_eq!(class_of(0x0011), Class::Indication);
        assert_eq!(class_of(0x0101), Class::Success);
        assert_eq!(class_of(0x0111), Class::Error);
        assert_eq!(method_of(0x0101), 1);
        assert_eq!(method_of(0x3EEF), 0xFFF);
    }

    #[test]
    fn xor_mapped_addresses_both_families() {
        // RFC 5769 §2.2's address, 192.0.2.1:32853, as XOR-MAPPED-ADDRESS.
        let mut b = bytes("010100142112a442b7e7a701bc34d686fa87dfae");
        b.extend(bytes("002000080001a147e112a643"));
        b.extend(bytes("0000000000000000")); // two unknown, empty attributes
        let m = Message::parse(&b).unwrap();
        assert_eq!(m.class, Class::Success);
        assert_eq!(
            m.xor_mapped_address(),
            Some("192.0.2.1:32853".parse().unwrap())
        );
        // RFC 5769 §2.3: [2001:db8:1234:5678:11:2233:4455:6677]:32853.
        let mut b = bytes("010100182112a442b7e7a701bc34d686fa87dfae");
        b.extend(bytes("002000140002a1470113a9faa5d3f179bc25f4b5bed2b9d9"));
        let m = Message::parse(&b).unwrap();
        assert_eq!(
            m.xor_mapped_address(),
            Some(
                "[2001:db8:1234:5678:11:2233:4455:6677]:32853"
                    .parse()
                    .unwrap()
            )
        );
    }

    #[test]
    fn what_is_not_stun_is_an_error_not_a_panic() {
        let b = bytes(REQUEST);
        for n in 0..b.len() {
            // Cut anywhere: an error (the length says more), never a panic.
            assert!(Message::parse(&b[..n]).is_err(), "{n}");
        }
        let mut dtls = b.clone();
        dtls[0] = 0x16;
        assert!(!looks_like(&dtls));
        let mut cookie = b.clone();
        cookie[5] ^= 1;
        assert!(Message::parse(&cookie)
            .unwrap_err()
            .to_string()
            .contains("magic cookie"));
        // An attribute longer than the message.
        let mut long = bytes("000100082112a442b7e7a701bc34d686fa87dfae");
        long.extend(bytes("00060010abcd0000"));
        assert!(Message::parse(&long).is_err());
    }

    #[test]
    fn passwords_are_bounded() {
        let mut p = IcePasswords::default();
        for i in 0..IcePasswords::MAX + 10 {
            p.learn(&format!("u{i}"), "pwd");
        }
        assert_eq!(p.get("u0"), None);
        assert_eq!(p.get(&format!("u{}", IcePasswords::MAX + 9)), Some("pwd"));
        assert_eq!(p.map.len(), IcePasswords::MAX);
        p.learn("long", &"x".repeat(IcePasswords::MAX_LEN + 1));
        assert_eq!(p.get("long"), None);
    }
}
