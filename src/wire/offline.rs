//! Offline (unconnected) messages, docs/wire-format.md §2 and §3.
//!
//! An offline message is recognised by its first byte and the 16-byte magic
//! at the offset that id places it ([`offline_id`]). All fields are
//! byte-aligned; GUIDs and times are 8 bytes big-endian.

use super::address::SystemAddress;
use super::cursor::{Reader, Result, WriteExt};
use super::ids::*;
use super::MAGIC;

/// `UDP_HEADER_SIZE` of the original: what it adds to a request 1's length to get the MTU.
pub(crate) const UDP_HEADER_SIZE: usize = 28;
/// Bytes of a request 1 before its padding: id, magic, protocol.
const REQUEST_1_HEAD: usize = 18;

/// Where the magic sits for an offline id, or `None` if the id is not offline.
fn magic_offset(id: u8) -> Option<usize> {
    match id {
        UNCONNECTED_PING | UNCONNECTED_PING_OPEN_CONNECTIONS | OUT_OF_BAND_INTERNAL => Some(9),
        UNCONNECTED_PONG => Some(17),
        INCOMPATIBLE_PROTOCOL_VERSION => Some(2),
        OPEN_CONNECTION_REQUEST_1
        | OPEN_CONNECTION_REPLY_1
        | OPEN_CONNECTION_REQUEST_2
        | OPEN_CONNECTION_REPLY_2
        | CONNECTION_ATTEMPT_FAILED
        | ALREADY_CONNECTED
        | NO_FREE_INCOMING_CONNECTIONS
        | CONNECTION_BANNED
        | IP_RECENTLY_CONNECTED => Some(1),
        _ => None,
    }
}

/// The id of `payload` if it is an offline message: an offline id with the
/// magic at that id's offset (the original's `ProcessOfflineNetworkPacket` test).
pub fn offline_id(payload: &[u8]) -> Option<u8> {
    let id = *payload.first()?;
    let at = magic_offset(id)?;
    (payload.get(at..at + 16)? == MAGIC).then_some(id)
}

/// Security fields of Open Connection Reply 1 (a server built with security).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply1Security<'a> {
    /// The cookie request 2 must return (u32 big-endian).
    pub cookie: u32,
    /// 64 bytes when the server is built with libcat; absent from non-libcat writers.
    pub public_key: Option<&'a [u8]>,
}

/// Security fields of Open Connection Request 2 (sent when reply 1 had them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request2Security<'a> {
    /// Reply 1's cookie, returned.
    pub cookie: u32,
    /// The 64-byte challenge, when `clientWroteChallenge` is set.
    pub challenge: Option<&'a [u8]>,
}

/// An offline message. Times are the sender's RakNet clock in milliseconds,
/// GUIDs each side's 64-bit identifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Offline<'a> {
    /// 0x01, or 0x02 when `open_connections` (answered only by a server with free slots).
    UnconnectedPing {
        /// Sent as 0x02.
        open_connections: bool,
        /// The pinger's clock.
        time: u64,
        /// Absent in some old clients' 25-byte pings.
        client_guid: Option<u64>,
    },
    /// 0x1c; `payload` is raw in the original, a length-prefixed MOTD in Minecraft.
    UnconnectedPong {
        /// The ping's time, echoed.
        time: u64,
        /// The server's GUID.
        server_guid: u64,
        /// Everything after the magic.
        payload: &'a [u8],
    },
    /// 0x05; the MTU is the whole UDP payload length plus 28.
    OpenConnectionRequest1 {
        /// The client's RakNet protocol version.
        protocol: u8,
        /// The MTU this request probes, from its length.
        mtu: u16,
    },
    /// 0x06
    OpenConnectionReply1 {
        /// The server's GUID.
        server_guid: u64,
        /// Present when the server has security on.
        security: Option<Reply1Security<'a>>,
        /// The MTU the server takes from request 1.
        mtu: u16,
    },
    /// 0x07
    OpenConnectionRequest2 {
        /// Present when reply 1 had security.
        security: Option<Request2Security<'a>>,
        /// The server's address as the client sees it.
        server_address: SystemAddress,
        /// The MTU the client asks for.
        mtu: u16,
        /// The client's GUID.
        client_guid: u64,
    },
    /// 0x08; `security_answer` is the 128-byte answer when the security bit is set.
    OpenConnectionReply2 {
        /// The server's GUID.
        server_guid: u64,
        /// The client's address as the server sees it.
        client_address: SystemAddress,
        /// The MTU the connection uses.
        mtu: u16,
        /// See above.
        security_answer: Option<&'a [u8]>,
    },
    /// 0x19
    IncompatibleProtocolVersion {
        /// The server's protocol version.
        protocol: u8,
        /// The server's GUID.
        server_guid: u64,
    },
    /// 0x11, 0x12, 0x14, 0x17, 0x1a: `id | magic | GUID`.
    Refusal {
        /// Which refusal, one of the ids above.
        id: u8,
        /// The server's GUID.
        server_guid: u64,
    },
    /// 0x0d: `id | GUID | magic | payload` (GUID before the magic).
    OutOfBand {
        /// The sender's GUID.
        guid: u64,
        /// Everything after the magic.
        payload: &'a [u8],
    },
}

/// The fields that several offline messages carry, each `None` for the
/// messages without it: what the `packet` record and display filters show.
impl<'a> Offline<'a> {
    /// The protocol byte: the client's in Request 1, the server's in
    /// Incompatible Protocol Version.
    pub(crate) fn protocol(&self) -> Option<u8> {
        match self {
            Offline::OpenConnectionRequest1 { protocol, .. }
            | Offline::IncompatibleProtocolVersion { protocol, .. } => Some(*protocol),
            _ => None,
        }
    }

    /// The MTU of an open connection request or reply.
    pub(crate) fn mtu(&self) -> Option<u16> {
        match self {
            Offline::OpenConnectionRequest1 { mtu, .. }
            | Offline::OpenConnectionReply1 { mtu, .. }
            | Offline::OpenConnectionRequest2 { mtu, .. }
            | Offline::OpenConnectionReply2 { mtu, .. } => Some(*mtu),
            _ => None,
        }
    }

    /// `clientGuid` of a ping (absent in the old 25-byte ones) or of Request 2.
    pub(crate) fn client_guid(&self) -> Option<u64> {
        match self {
            Offline::UnconnectedPing { client_guid, .. } => *client_guid,
            Offline::OpenConnectionRequest2 { client_guid, .. } => Some(*client_guid),
            _ => None,
        }
    }

    /// `serverGuid` of a pong, a reply, Incompatible Protocol Version or a refusal.
    pub(crate) fn server_guid(&self) -> Option<u64> {
        match self {
            Offline::UnconnectedPong { server_guid, .. }
            | Offline::OpenConnectionReply1 { server_guid, .. }
            | Offline::OpenConnectionReply2 { server_guid, .. }
            | Offline::IncompatibleProtocolVersion { server_guid, .. }
            | Offline::Refusal { server_guid, .. } => Some(*server_guid),
            _ => None,
        }
    }

    /// The sender's GUID of an out-of-band message.
    pub(crate) fn sender_guid(&self) -> Option<u64> {
        match self {
            Offline::OutOfBand { guid, .. } => Some(*guid),
            _ => None,
        }
    }

    /// `sendPingTime` of a ping or pong.
    pub(crate) fn time(&self) -> Option<u64> {
        match self {
            Offline::UnconnectedPing { time, .. } | Offline::UnconnectedPong { time, .. } => {
                Some(*time)
            }
            _ => None,
        }
    }

    /// The security cookie of Reply 1 or Request 2, when there is security.
    pub(crate) fn cookie(&self) -> Option<u32> {
        match self {
            Offline::OpenConnectionReply1 { security, .. } => security.as_ref().map(|s| s.cookie),
            Offline::OpenConnectionRequest2 { security, .. } => security.as_ref().map(|s| s.cookie),
            _ => None,
        }
    }

    /// Reply 1: whether the server has security. Reply 2: whether a security
    /// answer is present.
    pub(crate) fn security(&self) -> Option<bool> {
        match self {
            Offline::OpenConnectionReply1 { security, .. } => Some(security.is_some()),
            Offline::OpenConnectionReply2 {
                security_answer, ..
            } => Some(security_answer.is_some()),
            _ => None,
        }
    }

    /// Request 2: the server's address as the client addressed it. Reply 2:
    /// the client's address as the server sees it.
    pub(crate) fn address(&self) -> Option<&SystemAddress> {
        match self {
            Offline::OpenConnectionRequest2 { server_address, .. } => Some(server_address),
            Offline::OpenConnectionReply2 { client_address, .. } => Some(client_address),
            _ => None,
        }
    }

    /// The payload of a pong or of an out-of-band message.
    pub(crate) fn payload(&self) -> Option<&'a [u8]> {
        match self {
            Offline::UnconnectedPong { payload, .. } | Offline::OutOfBand { payload, .. } => {
                Some(payload)
            }
            _ => None,
        }
    }

    /// A pong's payload parsed as a Minecraft MOTD, when it is one.
    pub(crate) fn motd(&self) -> Option<super::Motd> {
        match self {
            Offline::UnconnectedPong { payload, .. } => super::Motd::parse(payload),
            _ => None,
        }
    }

    pub(crate) fn id(&self) -> u8 {
        match self {
            Offline::UnconnectedPing {
                open_connections, ..
            } => {
                if *open_connections {
                    UNCONNECTED_PING_OPEN_CONNECTIONS
                } else {
                    UNCONNECTED_PING
                }
            }
            Offline::UnconnectedPong { .. } => UNCONNECTED_PONG,
            Offline::OpenConnectionRequest1 { .. } => OPEN_CONNECTION_REQUEST_1,
            Offline::OpenConnectionReply1 { .. } => OPEN_CONNECTION_REPLY_1,
            Offline::OpenConnectionRequest2 { .. } => OPEN_CONNECTION_REQUEST_2,
            Offline::OpenConnectionReply2 { .. } => OPEN_CONNECTION_REPLY_2,
            Offline::IncompatibleProtocolVersion { .. } => INCOMPATIBLE_PROTOCOL_VERSION,
            Offline::Refusal { id, .. } => *id,
            Offline::OutOfBand { .. } => OUT_OF_BAND_INTERNAL,
        }
    }

    /// Decode an offline message. Bytes after its last field are left in the
    /// reader for the caller to report.
    pub fn parse(r: &mut Reader<'a>) -> Result<Self> {
        let id = r.u8("message id")?;
        r.describe(|| format!("{id:#04x} {}", message_name(id)));
        let total = r.remaining() + 1;
        let msg = match id {
            UNCONNECTED_PING | UNCONNECTED_PING_OPEN_CONNECTIONS => {
                let time = r.u64_be("ping time")?;
                r.magic()?;
                let client_guid = if r.remaining() >= 8 {
                    Some(r.guid("client guid")?)
                } else {
                    None
                };
                Offline::UnconnectedPing {
                    open_connections: id == UNCONNECTED_PING_OPEN_CONNECTIONS,
                    time,
                    client_guid,
                }
            }
            UNCONNECTED_PONG => {
                let time = r.u64_be("ping time")?;
                let server_guid = r.guid("server guid")?;
                r.magic()?;
                let payload = r.rest_bytes("pong payload");
                Offline::UnconnectedPong {
                    time,
                    server_guid,
                    payload,
                }
            }
            OPEN_CONNECTION_REQUEST_1 => {
                r.magic()?;
                let protocol = r.u8("protocol version")?;
                r.rest_bytes("mtu padding");
                let mtu = (total + UDP_HEADER_SIZE).min(u16::MAX as usize) as u16;
                let at = r.offset();
                r.record_at("mtu", at, 0, || format!("{mtu} (payload length + 28)"));
                Offline::OpenConnectionRequest1 { protocol, mtu }
            }
            OPEN_CONNECTION_REPLY_1 => {
                r.magic()?;
                let server_guid = r.guid("server guid")?;
                let has_security = r.u8("server has security")?;
                let security = if has_security != 0 {
                    let cookie = r.u32_be("cookie")?;
                    // A libcat server adds a 64-byte key; a non-libcat one goes straight to the MTU.
                    let public_key = if r.remaining() >= 66 {
                        Some(r.bytes(64, "server public key")?)
                    } else {
                        None
                    };
                    Some(Reply1Security { cookie, public_key })
                } else {
                    None
                };
                let mtu = r.u16_be("mtu")?;
                Offline::OpenConnectionReply1 {
                    server_guid,
                    security,
                    mtu,
                }
            }
            OPEN_CONNECTION_REQUEST_2 => {
                r.magic()?;
                // Nothing says which variant this is (the server picks by its own
                // configuration); the length does: address, mtu and guid end it.
                let rest = r.rest();
                let plain_len = |at: usize| match rest.get(at) {
                    Some(4) => Some(at + super::address::V4_LEN + 10),
                    Some(6) => Some(at + super::address::V6_LEN + 10),
                    _ => None,
                };
                let security = if plain_len(0) == Some(rest.len()) {
                    None
                } else {
                    let cookie = r.u32_be("cookie")?;
                    let wrote = r.u8("client wrote challenge")?;
                    let challenge = if wrote != 0 {
                        Some(r.bytes(64, "client challenge")?)
                    } else {
                        None
                    };
                    Some(Request2Security { cookie, challenge })
                };
                let server_address = SystemAddress::parse(r, "server address")?;
                let mtu = r.u16_be("mtu")?;
                let client_guid = r.guid("client guid")?;
                Offline::OpenConnectionRequest2 {
                    security,
                    server_address,
                    mtu,
                    client_guid,
                }
            }
            OPEN_CONNECTION_REPLY_2 => {
                r.magic()?;
                let server_guid = r.guid("server guid")?;
                let client_address = SystemAddress::parse(r, "client address")?;
                let mtu = r.u16_be("mtu")?;
                // One bit, the MSB of a final byte; some writers omit the byte.
                let flags = if r.remaining() > 0 {
                    r.u8("requires security")?
                } else {
                    0
                };
                let security_answer = if flags & 0x80 != 0 {
                    r.describe(|| format!("{flags:#04x} (bit 7 set: true)"));
                    Some(r.bytes(128, "security answer")?)
                } else {
                    r.describe(|| format!("{flags:#04x} (bit 7 clear: false)"));
                    None
                };
                Offline::OpenConnectionReply2 {
                    server_guid,
                    client_address,
                    mtu,
                    security_answer,
                }
            }
            INCOMPATIBLE_PROTOCOL_VERSION => {
                let protocol = r.u8("server protocol version")?;
                r.magic()?;
                let server_guid = r.guid("server guid")?;
                Offline::IncompatibleProtocolVersion {
                    protocol,
                    server_guid,
                }
            }
            CONNECTION_ATTEMPT_FAILED
            | ALREADY_CONNECTED
            | NO_FREE_INCOMING_CONNECTIONS
            | CONNECTION_BANNED
            | IP_RECENTLY_CONNECTED => {
                r.magic()?;
                let server_guid = r.guid("server guid")?;
                Offline::Refusal { id, server_guid }
            }
            OUT_OF_BAND_INTERNAL => {
                let guid = r.guid("guid")?;
                r.magic()?;
                let payload = r.rest_bytes("out of band payload");
                Offline::OutOfBand { guid, payload }
            }
            _ => {
                return Err(Reader::invalid_at(
                    r.offset() - 1,
                    "message id",
                    format!("{id:#04x} is not an offline message"),
                ))
            }
        };
        Ok(msg)
    }

    /// Append the message's bytes to `out`; request 1 is zero-padded so that its length gives `mtu`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.put_u8(self.id());
        match self {
            Offline::UnconnectedPing {
                time, client_guid, ..
            } => {
                out.put_u64_be(*time);
                out.put_magic();
                if let Some(g) = client_guid {
                    out.put_u64_be(*g);
                }
            }
            Offline::UnconnectedPong {
                time,
                server_guid,
                payload,
            } => {
                out.put_u64_be(*time);
                out.put_u64_be(*server_guid);
                out.put_magic();
                out.extend_from_slice(payload);
            }
            Offline::OpenConnectionRequest1 { protocol, mtu } => {
                out.put_magic();
                out.put_u8(*protocol);
                let len = (*mtu as usize)
                    .saturating_sub(UDP_HEADER_SIZE)
                    .max(REQUEST_1_HEAD);
                out.resize(len, 0);
            }
            Offline::OpenConnectionReply1 {
                server_guid,
                security,
                mtu,
            } => {
                out.put_magic();
                out.put_u64_be(*server_guid);
                match security {
                    Some(s) => {
                        out.put_u8(1);
                        out.put_u32_be(s.cookie);
                        if let Some(k) = s.public_key {
                            out.extend_from_slice(k);
                        }
                    }
                    None => out.put_u8(0),
                }
                out.put_u16_be(*mtu);
            }
            Offline::OpenConnectionRequest2 {
                security,
                server_address,
                mtu,
                client_guid,
            } => {
                out.put_magic();
                if let Some(s) = security {
                    out.put_u32_be(s.cookie);
                    match s.challenge {
                        Some(c) => {
                            out.put_u8(1);
                            out.extend_from_slice(c);
                        }
                        None => out.put_u8(0),
                    }
                }
                server_address.emit(out);
                out.put_u16_be(*mtu);
                out.put_u64_be(*client_guid);
            }
            Offline::OpenConnectionReply2 {
                server_guid,
                client_address,
                mtu,
                security_answer,
            } => {
                out.put_magic();
                out.put_u64_be(*server_guid);
                client_address.emit(out);
                out.put_u16_be(*mtu);
                match security_answer {
                    Some(a) => {
                        out.put_u8(0x80);
                        out.extend_from_slice(a);
                    }
                    None => out.put_u8(0),
                }
            }
            Offline::IncompatibleProtocolVersion {
                protocol,
                server_guid,
            } => {
                out.put_u8(*protocol);
                out.put_magic();
                out.put_u64_be(*server_guid);
            }
            Offline::Refusal { server_guid, .. } => {
                out.put_magic();
                out.put_u64_be(*server_guid);
            }
            Offline::OutOfBand { guid, payload } => {
                out.put_u64_be(*guid);
                out.put_magic();
                out.extend_from_slice(payload);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, SocketAddrV4};

    fn round_trip(m: &Offline<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        m.emit(&mut out);
        assert_eq!(offline_id(&out), Some(m.id()), "classified as offline");
        let mut r = Reader::new(&out);
        assert_eq!(&Offline::parse(&mut r).unwrap(), m);
        assert_eq!(r.remaining(), 0);
        out
    }

    #[test]
    fn ping_is_33_bytes() {
        let out = round_trip(&Offline::UnconnectedPing {
            open_connections: false,
            time: 0x1234,
            client_guid: Some(7),
        });
        assert_eq!(out.len(), 33);
        assert_eq!(&out[9..25], &MAGIC);
    }

    #[test]
    fn request_1_mtu_is_length_plus_28() {
        let out = round_trip(&Offline::OpenConnectionRequest1 {
            protocol: 6,
            mtu: 1492,
        });
        assert_eq!(out.len(), 1464);
        assert_eq!(out[17], 6);
        assert!(out[18..].iter().all(|&b| b == 0));
    }

    #[test]
    fn reply_2_security_is_a_bit() {
        let client = SystemAddress::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 50000));
        let out = round_trip(&Offline::OpenConnectionReply2 {
            server_guid: 1,
            client_address: client,
            mtu: 1400,
            security_answer: None,
        });
        assert_eq!(&out[out.len() - 3..], &[0x05, 0x78, 0x00]);
        let answer = [0xaa; 128];
        let out = round_trip(&Offline::OpenConnectionReply2 {
            server_guid: 1,
            client_address: client,
            mtu: 1400,
            security_answer: Some(&answer),
        });
        assert_eq!(&out[32..35], &[0x05, 0x78, 0x80]);
        // 0x01 is "false" to the original, which reads the top bit.
        let mut bytes = out[..35].to_vec();
        bytes[34] = 0x01;
        match Offline::parse(&mut Reader::new(&bytes)).unwrap() {
            Offline::OpenConnectionReply2 {
                security_answer, ..
            } => assert!(security_answer.is_none()),
            other => panic!("decoded {other:?}"),
        }
    }

    #[test]
    fn request_2_variants_are_told_apart_by_length() {
        let server = SystemAddress::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 19132));
        let plain = round_trip(&Offline::OpenConnectionRequest2 {
            security: None,
            server_address: server,
            mtu: 1492,
            client_guid: 9,
        });
        assert_eq!(plain.len(), 34);
        let cookie = round_trip(&Offline::OpenConnectionRequest2 {
            security: Some(Request2Security {
                cookie: 0xdeadbeef,
                challenge: None,
            }),
            server_address: server,
            mtu: 1492,
            client_guid: 9,
        });
        assert_eq!(cookie.len(), 39);
        let challenge = [3u8; 64];
        round_trip(&Offline::OpenConnectionRequest2 {
            security: Some(Request2Security {
                cookie: 1,
                challenge: Some(&challenge),
            }),
            server_address: server,
            mtu: 576,
            client_guid: 9,
        });
    }

    #[test]
    fn incompatible_protocol_is_26_bytes() {
        let out = round_trip(&Offline::IncompatibleProtocolVersion {
            protocol: 6,
            server_guid: 2,
        });
        assert_eq!(out.len(), 26);
    }

    #[test]
    fn out_of_band_has_guid_before_magic() {
        let out = round_trip(&Offline::OutOfBand {
            guid: 0x0102030405060708,
            payload: &[0x1d, 1, 2],
        });
        assert_eq!(&out[1..9], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&out[9..25], &MAGIC);
    }

    #[test]
    fn reply_1_with_and_without_key() {
        let key = [5u8; 64];
        round_trip(&Offline::OpenConnectionReply1 {
            server_guid: 3,
            security: Some(Reply1Security {
                cookie: 4,
                public_key: Some(&key),
            }),
            mtu: 1492,
        });
        round_trip(&Offline::OpenConnectionReply1 {
            server_guid: 3,
            security: Some(Reply1Security {
                cookie: 4,
                public_key: None,
            }),
            mtu: 1492,
        });
        for id in [0x11, 0x12, 0x14, 0x17, 0x1a] {
            round_trip(&Offline::Refusal { id, server_guid: 5 });
        }
    }

    #[test]
    fn the_start_up_datagram_is_not_offline() {
        assert_eq!(offline_id(&[0, 0, 0, 0]), None);
        assert_eq!(offline_id(&[0x05; 40]), None);
    }

    #[test]
    fn truncated_reply_names_the_field() {
        let mut bytes = vec![OPEN_CONNECTION_REPLY_1];
        bytes.extend_from_slice(&MAGIC);
        bytes.extend_from_slice(&[0; 4]);
        let e = Offline::parse(&mut Reader::new(&bytes)).unwrap_err();
        assert_eq!((e.offset, e.field), (17, "server guid"));
    }
}
