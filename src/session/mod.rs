//! The RakNet reliability layer as deterministic, socket-free state machines
//! (DESIGN.md, `session/`): fed timestamps and decoded datagrams, they yield
//! events. Nothing here reads a clock or touches a socket.
//!
//! - [`receive`]: the receive half (datagram numbers, reliable-index
//!   de-duplication, split reassembly, ordering channels), written once for
//!   both the capture mirror and the live peer.

pub mod receive;

pub use receive::{Delivered, Reassembly, ReceiveConfig, ReceiveEvent, ReceiveHalf};
