//! The RakNet reliability layer as deterministic, socket-free state machines
//! (docs/architecture.md, `session/`): fed timestamps and datagrams, they yield events
//! and, when driven actively, datagrams to send and the next timer. Nothing
//! here reads a clock or touches a socket.
//!
//! - [`receive`]: the receive half (datagram numbers, reliable-index
//!   de-duplication, split reassembly, ordering channels), written once for
//!   both the capture mirror and the live peer.
//! - `send`: the send half (indices, splitting, resends, ACKs and NACKs,
//!   congestion window, RTT).
//! - `connection`: both halves of one side plus RakNet's connected
//!   messages, keepalives and time-outs.
//! - [`handshake`]: the offline handshake of a client, and a server
//!   ([`handshake::Listener`]) with its table of connections.

pub(crate) mod connection;
pub mod handshake;
#[cfg(test)]
mod pair_tests;
pub mod receive;
pub(crate) mod send;

pub use connection::{CloseReason, Connection, ConnectionConfig, Event, Role, State};
pub use handshake::{ClientConfig, ClientHandshake, HandshakeError, Listener, ServerConfig};
pub(crate) use receive::Delivered;
