//! Which side of a flow is the client: from the messages only one side
//! sends, which replace a guess by port once seen.

use std::net::SocketAddr;

use super::{Dir, Flow};
use crate::capture::UdpDatagram;
use crate::wire::ids::*;
use crate::wire::Offline;

/// Which side an offline message says is the client: `Some(true)` when its
/// sender is.
pub(super) fn sender_is_client(id: u8) -> Option<bool> {
    match id {
        UNCONNECTED_PING
        | UNCONNECTED_PING_OPEN_CONNECTIONS
        | OPEN_CONNECTION_REQUEST_1
        | OPEN_CONNECTION_REQUEST_2 => Some(true),
        UNCONNECTED_PONG
        | OPEN_CONNECTION_REPLY_1
        | OPEN_CONNECTION_REPLY_2
        | INCOMPATIBLE_PROTOCOL_VERSION
        | ALREADY_CONNECTED
        | NO_FREE_INCOMING_CONNECTIONS
        | CONNECTION_BANNED
        | IP_RECENTLY_CONNECTED => Some(false),
        _ => None,
    }
}

/// Connected messages RakPeer itself decodes; a bad one is malformed.
pub(super) fn is_internal(id: u8) -> bool {
    matches!(
        id,
        CONNECTED_PING
            | CONNECTED_PONG
            | DETECT_LOST_CONNECTIONS
            | CONNECTION_REQUEST
            | REMOTE_SYSTEM_REQUIRES_PUBLIC_KEY
            | CONNECTION_REQUEST_ACCEPTED
            | NEW_INCOMING_CONNECTION
            | DISCONNECTION_NOTIFICATION
            | INVALID_PASSWORD
            | TIMESTAMP
    )
}

/// Roles from a message only one of them sends (`client_is_src`: its sender
/// is the client). They replace roles guessed by port; once a message has
/// set them, they stay.
pub(super) fn learn_roles(flow: &mut Flow, d: &UdpDatagram, client_is_src: bool) {
    if !flow.roles_known {
        (flow.client, flow.server) = if client_is_src {
            (d.src, d.dst)
        } else {
            (d.dst, d.src)
        };
        flow.roles_known = true;
    }
}

pub(super) fn dir_of(flow: &Flow, src: SocketAddr) -> Dir {
    if src == flow.client {
        Dir::C2s
    } else {
        Dir::S2c
    }
}

pub(super) fn learn_offline(flow: &mut Flow, m: &Offline<'_>) {
    match m {
        Offline::UnconnectedPing {
            client_guid: Some(g),
            ..
        } => flow.client_guid = Some(*g),
        Offline::UnconnectedPong { server_guid, .. }
        | Offline::OpenConnectionReply1 { server_guid, .. } => {
            flow.server_guid = Some(*server_guid)
        }
        Offline::OpenConnectionRequest1 { protocol, .. } => flow.protocol = Some(*protocol),
        Offline::OpenConnectionRequest2 { client_guid, .. } => {
            flow.client_guid = Some(*client_guid)
        }
        Offline::OpenConnectionReply2 {
            server_guid, mtu, ..
        } => {
            flow.server_guid = Some(*server_guid);
            flow.mtu = Some(*mtu);
        }
        _ => {}
    }
}
