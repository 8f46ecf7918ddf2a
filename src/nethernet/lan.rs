//! NetherNet's LAN discovery, UDP port 7551: how a Bedrock client finds the
//! worlds of its local network, and the signaling of a LAN join in place of
//! HTTP's.
//!
//! Every datagram is an HMAC-SHA256 (32 bytes, over the plaintext) and
//! then the plaintext encrypted with AES-256-ECB (PKCS#7 padding), both
//! keyed by SHA-256 of the little-endian u64 0xDEADBEEF: a key every
//! implementation knows, so every datagram opens. The plaintext is
//! little-endian: a u16 length (of what follows it in one implementation,
//! of the whole in another; neither reader checks it), a u16 packet id, the
//! sender's u64 network id, 8 bytes of padding, then
//!
//! - 0, a request (a client looking for worlds; nothing more);
//! - 1, a response: a u32 count of characters, then the world's
//!   "server data" as lowercase hex ([`ServerData`]);
//! - 2, a message: the recipient's u64 network id, a u32 byte count, then a
//!   text signal `KIND CONNECTION-ID DATA` ([`Signal`]): CONNECTREQUEST (an
//!   SDP offer), CONNECTRESPONSE (the answer), CANDIDATEADD (an ICE
//!   candidate), CONNECTERROR (a code).

use aes::cipher::{BlockCipherDecrypt, KeyInit};
use hmac::Mac;
use sha2::{Digest, Sha256};

/// The UDP port of LAN discovery.
pub const PORT: u16 = 7551;

/// The key of every LAN discovery datagram: SHA-256 of le64(0xDEADBEEF).
fn key() -> [u8; 32] {
    Sha256::digest(0xDEAD_BEEFu64.to_le_bytes()).into()
}

/// Why a datagram to or from port 7551 is not LAN discovery.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LanError {
    /// Shorter than an HMAC and one AES block, or not whole blocks.
    #[error("{0} bytes: not an HMAC and whole AES blocks")]
    Size(usize),
    /// The PKCS#7 padding is wrong: not this key.
    #[error("the padding does not open: not LAN discovery's key")]
    Padding,
    /// The HMAC does not match the plaintext.
    #[error("the HMAC does not match")]
    Hmac,
    /// The plaintext ends early.
    #[error("the plaintext ends at byte {0}, within its {1}")]
    Short(usize, &'static str),
}

/// What a LAN discovery datagram said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lan {
    /// The plaintext's length field.
    pub length: u16,
    /// The packet id (0 request, 1 response, 2 message).
    pub id: u16,
    /// The sender's network id.
    pub sender: u64,
    /// What follows the header.
    pub body: Body,
}

/// A LAN discovery packet's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// A client looking for worlds.
    Request,
    /// A world's advertisement: its server data, or why it did not read.
    Response(Result<ServerData, String>),
    /// A signal to `recipient`.
    Message {
        /// The recipient's network id.
        recipient: u64,
        /// The signal.
        signal: Signal,
    },
    /// A packet id this tool does not know: its bytes after the header.
    Other(usize),
}

/// A LAN signal: `KIND CONNECTION-ID DATA`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    /// CONNECTREQUEST, CONNECTRESPONSE, CANDIDATEADD, CONNECTERROR (or
    /// what else it says).
    pub kind: String,
    /// The connection it belongs to.
    pub connection: String,
    /// The SDP, the candidate or the error code.
    pub data: String,
}

/// A world's card, as the response carries it (go-nethernet's layouts:
/// version 4, then 5 and 6 with length-prefixed strings).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerData {
    /// The layout's version (4, 5 or 6).
    pub version: u8,
    /// The host's name (shown under the level's).
    pub server_name: String,
    /// The world's name.
    pub level_name: String,
    /// The default game mode.
    pub game_type: i32,
    /// Players in the world, and at most.
    pub player_count: i32,
    /// See `player_count`.
    pub max_player_count: i32,
    /// Made in Editor Mode.
    pub editor_world: bool,
    /// Hardcore.
    pub hardcore: bool,
    /// Versions 5 and 6: whether it takes online (Xbox) logins.
    pub accepts_online_auth: Option<bool>,
    /// Versions 5 and 6: whether it takes self-signed logins.
    pub accepts_self_signed_auth: Option<bool>,
    /// Version 6: a nonce.
    pub nonce: Option<String>,
    /// The transport layer (2: NetherNet).
    pub transport_layer: i32,
    /// The connection type (4: LAN signaling).
    pub connection_type: i32,
}

/// What a record shows of a LAN discovery datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LanSeen {
    /// `request`, `response`, `message`, or `other` (an id not known).
    pub packet: &'static str,
    /// The sender's network id (a string: ids pass 2^53).
    pub sender: String,
    /// A message's recipient.
    pub recipient: Option<String>,
    /// A message's signal: CONNECTREQUEST, CONNECTRESPONSE, CANDIDATEADD,
    /// CONNECTERROR.
    pub signal: Option<String>,
    /// A message's connection id.
    pub connection: Option<String>,
    /// A message's data: the SDP, the candidate, the error code.
    pub data: Option<String>,
    /// An SDP's ICE username fragment (the STUN checks' USERNAME has it).
    pub ice_ufrag: Option<String>,
    /// An SDP's ICE password (MESSAGE-INTEGRITY's key).
    pub ice_pwd: Option<String>,
    /// An SDP's candidates, "ip:port".
    pub candidates: Vec<String>,
    /// An SDP's `a=fingerprint:sha-256`.
    pub fingerprint: Option<String>,
    /// A response's server data.
    pub server_data: Option<ServerData>,
    /// Why a response's server data did not read.
    pub error: Option<String>,
}

impl LanSeen {
    /// What `lan` shows.
    pub fn of(lan: &Lan) -> LanSeen {
        let mut s = LanSeen {
            packet: "other",
            sender: lan.sender.to_string(),
            recipient: None,
            signal: None,
            connection: None,
            data: None,
            ice_ufrag: None,
            ice_pwd: None,
            candidates: Vec::new(),
            fingerprint: None,
            server_data: None,
            error: None,
        };
        match &lan.body {
            Body::Request => s.packet = "request",
            Body::Response(r) => {
                s.packet = "response";
                match r {
                    Ok(d) => s.server_data = Some(d.clone()),
                    Err(e) => s.error = Some(e.clone()),
                }
            }
            Body::Message { recipient, signal } => {
                s.packet = "message";
                s.recipient = Some(recipient.to_string());
                s.signal = Some(signal.kind.clone());
                s.connection = Some(signal.connection.clone());
                s.data = Some(signal.data.clone());
                if let Some(sdp) = signal.sdp() {
                    let addresses = sdp.candidates.iter().map(|c| c.address.to_string());
                    s.candidates = addresses.collect();
                    s.fingerprint = sdp.sha256().map(str::to_string);
                    (s.ice_ufrag, s.ice_pwd) = (sdp.ice_ufrag, sdp.ice_pwd);
                }
            }
            Body::Other(_) => {}
        }
        s
    }
}

impl Signal {
    /// The SDP of a CONNECTREQUEST (the offer) or CONNECTRESPONSE (the
    /// answer).
    pub fn sdp(&self) -> Option<super::sdp::Sdp> {
        matches!(self.kind.as_str(), "CONNECTREQUEST" | "CONNECTRESPONSE")
            .then(|| super::sdp::Sdp::parse(&self.data).ok())
            .flatten()
    }
}

/// A capture's LAN discovery: a flow id per client socket (the end that
/// is not port 7551).
#[derive(Debug, Default)]
pub struct Lans {
    flows: std::collections::HashMap<std::net::SocketAddr, u32>,
    /// Datagrams read as LAN discovery.
    pub datagrams: u64,
}

impl Lans {
    /// Client sockets followed at most; past it the table starts again.
    pub const MAX_FLOWS: usize = 4096;

    /// The flow of `client`'s datagrams (`new_id` numbers a new one).
    pub fn flow(&mut self, client: std::net::SocketAddr, new_id: impl FnOnce() -> u32) -> u32 {
        if self.flows.len() >= Self::MAX_FLOWS && !self.flows.contains_key(&client) {
            self.flows.clear();
        }
        *self.flows.entry(client).or_insert_with(new_id)
    }
}

/// The plaintext of a LAN discovery datagram, if it is one: its HMAC
/// verifies over what the key decrypts.
pub fn open(payload: &[u8]) -> Result<Vec<u8>, LanError> {
    let (mac, sealed) = payload
        .split_at_checked(32)
        .filter(|(_, s)| !s.is_empty() && s.len() % 16 == 0)
        .ok_or(LanError::Size(payload.len()))?;
    let key = key();
    let cipher = aes::Aes256::new(&key.into());
    let mut plain = sealed.to_vec();
    for block in plain.chunks_exact_mut(16) {
        let block: &mut [u8; 16] = block.try_into().expect("16 bytes");
        cipher.decrypt_block(block.into());
    }
    let pad = usize::from(*plain.last().expect("a block"));
    let unpadded = plain
        .len()
        .checked_sub(pad)
        .filter(|_| (1..=16).contains(&pad));
    let Some(len) = unpadded.filter(|&n| plain[n..].iter().all(|&b| usize::from(b) == pad)) else {
        return Err(LanError::Padding);
    };
    plain.truncate(len);
    let mut m = <hmac::Hmac<Sha256> as hmac::KeyInit>::new_from_slice(&key).expect("any key");
    m.update(&plain);
    m.verify_slice(mac).map_err(|_| LanError::Hmac)?;
    Ok(plain)
}

/// Little-endian reads over a plaintext, each saying what it read.
struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], LanError> {
        let s = self
            .buf
            .get(self.at..self.at.saturating_add(n))
            .ok_or(LanError::Short(self.buf.len(), what))?;
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self, what: &'static str) -> Result<u8, LanError> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &'static str) -> Result<u16, LanError> {
        Ok(u16::from_le_bytes(
            self.take(2, what)?.try_into().expect("2"),
        ))
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, LanError> {
        Ok(u32::from_le_bytes(
            self.take(4, what)?.try_into().expect("4"),
        ))
    }
    fn u64(&mut self, what: &'static str) -> Result<u64, LanError> {
        Ok(u64::from_le_bytes(
            self.take(8, what)?.try_into().expect("8"),
        ))
    }
    fn varuint(&mut self, what: &'static str) -> Result<u32, LanError> {
        let mut v = 0u32;
        for shift in (0..35).step_by(7) {
            let b = self.u8(what)?;
            v |= u32::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(LanError::Short(self.at, what))
    }
    fn zigzag(&mut self, what: &'static str) -> Result<i32, LanError> {
        let v = self.varuint(what)?;
        Ok(((v >> 1) as i32) ^ -((v & 1) as i32))
    }
    fn string(&mut self, n: usize, what: &'static str) -> Result<String, LanError> {
        Ok(String::from_utf8_lossy(self.take(n, what)?).into_owned())
    }
}

/// Reads a plaintext ([`open`]'s).
pub fn parse(plain: &[u8]) -> Result<Lan, LanError> {
    let mut r = Reader { buf: plain, at: 0 };
    let length = r.u16("length")?;
    let id = r.u16("packet id")?;
    let sender = r.u64("sender id")?;
    r.take(8, "padding")?;
    let body = match id {
        0 => Body::Request,
        1 => {
            let n = r.u32("server data length")? as usize;
            // The characters there are, if fewer than said.
            let text = &plain[r.at..plain.len().min(r.at.saturating_add(n))];
            Body::Response(server_data(text))
        }
        2 => {
            let recipient = r.u64("recipient id")?;
            let n = r.u32("signal length")? as usize;
            // Some hosts undercount the signal's bytes: the rest of the
            // datagram is taken.
            let _ = n;
            let text = String::from_utf8_lossy(&plain[r.at..]);
            let mut parts = text.splitn(3, ' ');
            let signal = Signal {
                kind: parts.next().unwrap_or("").to_string(),
                connection: parts.next().unwrap_or("").to_string(),
                data: parts.next().unwrap_or("").to_string(),
            };
            Body::Message { recipient, signal }
        }
        _ => Body::Other(plain.len() - r.at),
    };
    Ok(Lan {
        length,
        id,
        sender,
        body,
    })
}

/// The server data written as hex characters: decoded by its version.
fn server_data(hex: &[u8]) -> Result<ServerData, String> {
    let bytes: Option<Vec<u8>> = hex
        .chunks(2)
        .map(|p| {
            std::str::from_utf8(p)
                .ok()
                .filter(|s| s.len() == 2)
                .and_then(|s| u8::from_str_radix(s, 16).ok())
        })
        .collect();
    let bytes = bytes.ok_or("the server data is not hex")?;
    let mut r = Reader { buf: &bytes, at: 0 };
    let read = |r: &mut Reader<'_>| -> Result<ServerData, LanError> {
        let version = r.u8("version")?;
        let mut d = ServerData {
            version,
            ..ServerData::default()
        };
        match version {
            4 => {
                let n = usize::from(r.u8("server name")?);
                d.server_name = r.string(n, "server name")?;
                let n = usize::from(r.u8("level name")?);
                d.level_name = r.string(n, "level name")?;
                d.game_type = i32::from(r.u8("game type")? >> 1);
                d.player_count = r.u32("player count")? as i32;
                d.max_player_count = r.u32("max player count")? as i32;
                d.editor_world = r.u8("editor world")? != 0;
                d.hardcore = r.u8("hardcore")? != 0;
                d.transport_layer = i32::from(r.u8("transport layer")? >> 1);
                d.connection_type = i32::from(r.u8("connection type")? >> 1);
            }
            5 | 6 => {
                let n = r.varuint("server name")? as usize;
                d.server_name = r.string(n, "server name")?;
                let n = r.varuint("level name")? as usize;
                d.level_name = r.string(n, "level name")?;
                d.game_type = r.zigzag("game type")?;
                d.player_count = r.u32("player count")? as i32;
                d.max_player_count = r.u32("max player count")? as i32;
                d.editor_world = r.u8("editor world")? != 0;
                d.hardcore = r.u8("hardcore")? != 0;
                d.accepts_online_auth = Some(r.u8("online auth")? != 0);
                d.accepts_self_signed_auth = Some(r.u8("self-signed auth")? != 0);
                if version == 6 {
                    let n = r.varuint("nonce")? as usize;
                    d.nonce = Some(r.string(n, "nonce")?);
                }
                d.transport_layer = r.zigzag("transport layer")?;
                d.connection_type = r.zigzag("connection type")?;
            }
            // Another layout: said below.
            _ => {}
        }
        Ok(d)
    };
    let d = read(&mut r).map_err(|e| format!("server data: {e}"))?;
    if !matches!(d.version, 4..=6) {
        return Err(format!(
            "server data version {}, a layout not known",
            d.version
        ));
    }
    match bytes.len() - r.at {
        0 => Ok(d),
        n => Err(format!(
            "server data version {}: {n} bytes after its last field",
            d.version
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aes::cipher::BlockCipherEncrypt;

    /// A datagram sealed as LAN discovery seals one.
    fn seal(plain: &[u8]) -> Vec<u8> {
        let key = key();
        let mut m = <hmac::Hmac<Sha256> as hmac::KeyInit>::new_from_slice(&key).unwrap();
        m.update(plain);
        let mut out = m.finalize().into_bytes().to_vec();
        let pad = 16 - plain.len() % 16;
        let mut body = plain.to_vec();
        body.extend(std::iter::repeat_n(pad as u8, pad));
        let cipher = aes::Aes256::new(&key.into());
        for block in body.chunks_exact_mut(16) {
            let block: &mut [u8; 16] = block.try_into().unwrap();
            cipher.encrypt_block(block.into());
        }
        out.extend(body);
        out
    }

    fn header(id: u16, sender: u64, rest: &[u8]) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend(((18 + rest.len()) as u16).to_le_bytes());
        p.extend(id.to_le_bytes());
        p.extend(sender.to_le_bytes());
        p.extend([0; 8]);
        p.extend(rest);
        p
    }

    #[test]
    fn requests_messages_and_what_is_not_lan_discovery() {
        let plain = header(0, 42, &[]);
        let lan = parse(&open(&seal(&plain)).unwrap()).unwrap();
        assert_eq!((lan.id, lan.sender, lan.body), (0, 42, Body::Request));
        let text = b"CONNECTERROR 7000000000000000008 13";
        let mut rest = 7u64.to_le_bytes().to_vec();
        rest.extend((text.len() as u32 - 3).to_le_bytes()); // undercounted
        rest.extend(text);
        let lan = parse(&open(&seal(&header(2, 9, &rest))).unwrap()).unwrap();
        let Body::Message { recipient, signal } = lan.body else {
            panic!("{lan:?}")
        };
        assert_eq!(recipient, 7);
        assert_eq!(
            (
                signal.kind.as_str(),
                signal.connection.as_str(),
                signal.data.as_str()
            ),
            ("CONNECTERROR", "7000000000000000008", "13")
        );
        // Another key, a changed byte, a size that is not blocks.
        let mut sealed = seal(&plain);
        sealed[0] ^= 1;
        assert_eq!(open(&sealed), Err(LanError::Hmac));
        assert_eq!(open(&[0; 40]), Err(LanError::Size(40)));
        assert!(open(&[0; 48]).is_err());
        assert_eq!(parse(&[1, 0, 0]), Err(LanError::Short(3, "packet id")));
    }

    #[test]
    fn server_data_of_versions_4_and_6() {
        // Version 6 as go-nethernet writes it: varuint strings, zigzag
        // game type, i32 counts, four bools, a nonce, zigzag transport
        // and connection type.
        let mut v6 = vec![6, 5];
        v6.extend(b"Steve");
        v6.push(4);
        v6.extend(b"Wrld");
        v6.push(2); // game type 1
        v6.extend(1i32.to_le_bytes());
        v6.extend(8i32.to_le_bytes());
        v6.extend([0, 0, 1, 1, 2]);
        v6.extend(b"ab");
        v6.extend([4, 8]);
        let hex: String = v6.iter().map(|b| format!("{b:02x}")).collect();
        let d = server_data(hex.as_bytes()).unwrap();
        assert_eq!(
            (d.server_name.as_str(), d.level_name.as_str(), d.game_type),
            ("Steve", "Wrld", 1)
        );
        assert_eq!((d.player_count, d.max_player_count), (1, 8));
        assert_eq!(d.accepts_self_signed_auth, Some(true));
        assert_eq!(d.nonce.as_deref(), Some("ab"));
        assert_eq!((d.transport_layer, d.connection_type), (2, 4));
        // Version 4: u8-length strings, shifted bytes.
        let v4 = "0401610162020100000008000000000004 08".replace(' ', "");
        let d = server_data(v4.as_bytes()).unwrap();
        assert_eq!((d.version, d.game_type, d.transport_layer), (4, 1, 2));
        assert_eq!(d.nonce, None);
        assert!(server_data(b"07").unwrap_err().contains("version 7"));
        assert!(server_data(b"").unwrap_err().contains("ends at byte 0"));
        // The fuzzer's: a response whose server data is empty.
        let mut plain = vec![11, 58, 1, 0, 0];
        plain.extend([3; 15]);
        plain.extend([3, 0, 0, 0]);
        let lan = parse(&plain).unwrap();
        assert!(LanSeen::of(&lan).error.unwrap().contains("ends at byte 0"));
        assert!(server_data(b"zz").unwrap_err().contains("not hex"));
        assert!(server_data(format!("{hex}00").as_bytes())
            .unwrap_err()
            .contains("1 bytes after"));
    }
}
