//! Connected messages: RakNet's own messages inside capsules (docs/wire-format.md §8).
//!
//! Anything with another id is an application message, returned as
//! [`Connected::User`] with its bytes.

use super::address::SystemAddress;
use super::cursor::{Reader, Result, WriteExt};
use super::ids::*;

/// Bytes of the two trailing times of 0x10 and 0x13; the address list runs until they are left.
const TWO_TIMES: usize = 16;
/// Upper bound on addresses decoded from one list (20 in Minecraft, 10 in the original).
const MAX_ADDRESSES: usize = 64;

/// The libcat fields of a Connection Request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSecurity<'a> {
    /// 32-byte proof.
    pub proof: &'a [u8],
    /// 160-byte identity, when `doIdentity` is set.
    pub identity: Option<&'a [u8]>,
}

/// A message inside a capsule: one of RakNet's own, or an application's.
/// Times are the sender's RakNet clock in milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connected<'a> {
    /// 0x00
    ConnectedPing {
        /// The pinger's clock.
        time: u64,
    },
    /// 0x03
    ConnectedPong {
        /// The ping's time, echoed.
        ping_time: u64,
        /// The ponger's clock.
        pong_time: u64,
    },
    /// 0x04, never sent by 4.081 but accepted.
    DetectLostConnections,
    /// 0x09; the password is whatever follows the security fields.
    ConnectionRequest {
        /// The client's GUID.
        client_guid: u64,
        /// The client's clock.
        time: u64,
        /// Present when `doSecurity` is 1.
        security: Option<RequestSecurity<'a>>,
        /// The bytes after the security fields, compared whole by the server.
        password: &'a [u8],
    },
    /// 0x0a
    RemoteSystemRequiresPublicKey {
        /// 1 when the identity is missing, 2 when it is invalid.
        reason: u8,
    },
    /// 0x10; the address count is derived from the length (10 original, 20 Minecraft).
    ConnectionRequestAccepted {
        /// The client's address as the server sees it.
        client_address: SystemAddress,
        /// The server's slot for the client (big-endian on the wire).
        system_index: u16,
        /// The server's internal addresses.
        addresses: Vec<SystemAddress>,
        /// The Connection Request's time, echoed.
        request_time: u64,
        /// The server's clock.
        time: u64,
    },
    /// 0x13 (no index field).
    NewIncomingConnection {
        /// The server's address as the client sees it.
        server_address: SystemAddress,
        /// The client's internal addresses.
        addresses: Vec<SystemAddress>,
        /// The accepted message's second time (the server's clock), echoed.
        pong_time: u64,
        /// The client's clock.
        time: u64,
    },
    /// 0x15
    DisconnectionNotification,
    /// 0x18
    InvalidPassword {
        /// The sender's GUID.
        guid: u64,
    },
    /// 0x1b: a time prefix before an application message.
    Timestamp {
        /// The sender's clock.
        time: u64,
        /// The application message that follows, id first.
        rest: &'a [u8],
    },
    /// Anything else: an application message, whole.
    User {
        /// The first byte.
        id: u8,
        /// The whole message, id included.
        data: &'a [u8],
    },
}

fn parse_addresses(r: &mut Reader<'_>) -> Result<Vec<SystemAddress>> {
    let mut addresses = Vec::new();
    r.open("internal addresses", String::new);
    while r.remaining() > TWO_TIMES && addresses.len() < MAX_ADDRESSES {
        addresses.push(SystemAddress::parse(r, "internal address")?);
    }
    let count = addresses.len();
    r.close_with(Some(|| count.to_string()));
    Ok(addresses)
}

impl<'a> Connected<'a> {
    pub(crate) fn id(&self) -> u8 {
        match self {
            Connected::ConnectedPing { .. } => CONNECTED_PING,
            Connected::ConnectedPong { .. } => CONNECTED_PONG,
            Connected::DetectLostConnections => DETECT_LOST_CONNECTIONS,
            Connected::ConnectionRequest { .. } => CONNECTION_REQUEST,
            Connected::RemoteSystemRequiresPublicKey { .. } => REMOTE_SYSTEM_REQUIRES_PUBLIC_KEY,
            Connected::ConnectionRequestAccepted { .. } => CONNECTION_REQUEST_ACCEPTED,
            Connected::NewIncomingConnection { .. } => NEW_INCOMING_CONNECTION,
            Connected::DisconnectionNotification => DISCONNECTION_NOTIFICATION,
            Connected::InvalidPassword { .. } => INVALID_PASSWORD,
            Connected::Timestamp { .. } => TIMESTAMP,
            Connected::User { id, .. } => *id,
        }
    }

    /// Decode a whole message (a capsule payload, or a reassembled one).
    pub fn parse(r: &mut Reader<'a>) -> Result<Self> {
        let all = r.rest();
        let id = r.u8("message id")?;
        r.describe(|| format!("{id:#04x} {}", message_name(id)));
        let m = match id {
            CONNECTED_PING => Connected::ConnectedPing {
                time: r.u64_be("ping time")?,
            },
            CONNECTED_PONG => Connected::ConnectedPong {
                ping_time: r.u64_be("ping time")?,
                pong_time: r.u64_be("pong time")?,
            },
            DETECT_LOST_CONNECTIONS => Connected::DetectLostConnections,
            CONNECTION_REQUEST => {
                let client_guid = r.guid("client guid")?;
                let time = r.u64_be("time")?;
                let do_security = r.u8("do security")?;
                let security = if do_security != 0 {
                    let proof = r.bytes(32, "proof")?;
                    let do_identity = r.u8("do identity")?;
                    let identity = if do_identity != 0 {
                        Some(r.bytes(160, "identity")?)
                    } else {
                        None
                    };
                    Some(RequestSecurity { proof, identity })
                } else {
                    None
                };
                let password = r.rest_bytes("password");
                Connected::ConnectionRequest {
                    client_guid,
                    time,
                    security,
                    password,
                }
            }
            REMOTE_SYSTEM_REQUIRES_PUBLIC_KEY => Connected::RemoteSystemRequiresPublicKey {
                reason: r.u8("reason")?,
            },
            CONNECTION_REQUEST_ACCEPTED => {
                let client_address = SystemAddress::parse(r, "client address")?;
                let system_index = r.u16_be("system index")?;
                let addresses = parse_addresses(r)?;
                Connected::ConnectionRequestAccepted {
                    client_address,
                    system_index,
                    addresses,
                    request_time: r.u64_be("request time")?,
                    time: r.u64_be("time")?,
                }
            }
            NEW_INCOMING_CONNECTION => {
                let server_address = SystemAddress::parse(r, "server address")?;
                let addresses = parse_addresses(r)?;
                Connected::NewIncomingConnection {
                    server_address,
                    addresses,
                    pong_time: r.u64_be("pong time")?,
                    time: r.u64_be("time")?,
                }
            }
            DISCONNECTION_NOTIFICATION => Connected::DisconnectionNotification,
            INVALID_PASSWORD => Connected::InvalidPassword {
                guid: r.guid("guid")?,
            },
            TIMESTAMP => {
                let time = r.u64_be("time")?;
                let rest = r.rest_bytes("timestamped message");
                Connected::Timestamp { time, rest }
            }
            _ => {
                let data = all;
                r.rest_bytes("data");
                Connected::User { id, data }
            }
        };
        Ok(m)
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        if let Connected::User { data, .. } = self {
            out.extend_from_slice(data);
            return;
        }
        out.put_u8(self.id());
        match self {
            Connected::ConnectedPing { time } => out.put_u64_be(*time),
            Connected::ConnectedPong {
                ping_time,
                pong_time,
            } => {
                out.put_u64_be(*ping_time);
                out.put_u64_be(*pong_time);
            }
            Connected::ConnectionRequest {
                client_guid,
                time,
                security,
                password,
            } => {
                out.put_u64_be(*client_guid);
                out.put_u64_be(*time);
                match security {
                    Some(s) => {
                        out.put_u8(1);
                        out.extend_from_slice(s.proof);
                        match s.identity {
                            Some(i) => {
                                out.put_u8(1);
                                out.extend_from_slice(i);
                            }
                            None => out.put_u8(0),
                        }
                    }
                    None => out.put_u8(0),
                }
                out.extend_from_slice(password);
            }
            Connected::RemoteSystemRequiresPublicKey { reason } => out.put_u8(*reason),
            Connected::ConnectionRequestAccepted {
                client_address,
                system_index,
                addresses,
                request_time,
                time,
            } => {
                client_address.emit(out);
                out.put_u16_be(*system_index);
                for a in addresses {
                    a.emit(out);
                }
                out.put_u64_be(*request_time);
                out.put_u64_be(*time);
            }
            Connected::NewIncomingConnection {
                server_address,
                addresses,
                pong_time,
                time,
            } => {
                server_address.emit(out);
                for a in addresses {
                    a.emit(out);
                }
                out.put_u64_be(*pong_time);
                out.put_u64_be(*time);
            }
            Connected::InvalidPassword { guid } => out.put_u64_be(*guid),
            Connected::Timestamp { time, rest } => {
                out.put_u64_be(*time);
                out.extend_from_slice(rest);
            }
            Connected::DetectLostConnections
            | Connected::DisconnectionNotification
            | Connected::User { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, SocketAddrV4};

    fn round_trip(m: &Connected<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        m.emit(&mut out);
        let mut r = Reader::new(&out);
        assert_eq!(&Connected::parse(&mut r).unwrap(), m);
        assert_eq!(r.remaining(), 0);
        out
    }

    fn v4(port: u16) -> SystemAddress {
        SystemAddress::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
    }

    #[test]
    fn accepted_with_10_and_20_addresses() {
        for n in [10, 20] {
            let out = round_trip(&Connected::ConnectionRequestAccepted {
                client_address: v4(5000),
                system_index: 0,
                addresses: vec![SystemAddress::UNASSIGNED; n],
                request_time: 1,
                time: 2,
            });
            assert_eq!(out.len(), 1 + 7 + 2 + 7 * n + 16);
        }
    }

    #[test]
    fn new_incoming_has_no_index() {
        let out = round_trip(&Connected::NewIncomingConnection {
            server_address: v4(19132),
            addresses: vec![SystemAddress::UNASSIGNED; 10],
            pong_time: 3,
            time: 4,
        });
        assert_eq!(out.len(), 1 + 7 + 70 + 16);
    }

    #[test]
    fn connection_request_password_is_the_rest() {
        let out = round_trip(&Connected::ConnectionRequest {
            client_guid: 1,
            time: 2,
            security: None,
            password: b"secret",
        });
        assert_eq!(out.len(), 1 + 8 + 8 + 1 + 6);
        let proof = [1u8; 32];
        let identity = [2u8; 160];
        round_trip(&Connected::ConnectionRequest {
            client_guid: 1,
            time: 2,
            security: Some(RequestSecurity {
                proof: &proof,
                identity: Some(&identity),
            }),
            password: b"",
        });
    }

    #[test]
    fn small_messages() {
        assert_eq!(round_trip(&Connected::ConnectedPing { time: 5 }).len(), 9);
        assert_eq!(
            round_trip(&Connected::ConnectedPong {
                ping_time: 5,
                pong_time: 6
            })
            .len(),
            17
        );
        assert_eq!(round_trip(&Connected::DisconnectionNotification), [0x15]);
        round_trip(&Connected::DetectLostConnections);
        round_trip(&Connected::InvalidPassword { guid: 9 });
        round_trip(&Connected::RemoteSystemRequiresPublicKey { reason: 1 });
        round_trip(&Connected::Timestamp {
            time: 7,
            rest: &[0x86, 1],
        });
        round_trip(&Connected::User {
            id: 0xfe,
            data: &[0xfe, 1, 2],
        });
    }

    #[test]
    fn accepted_too_short_names_the_field() {
        let e = Connected::parse(&mut Reader::with_base(&[0x10, 4, 0, 0], 20)).unwrap_err();
        assert_eq!((e.field, e.offset), ("client address", 21));
    }
}
