//! The stateless RakNet codec: bytes to typed messages and back.
//!
//! Every decoder reads through [`cursor::Reader`], which checks bounds on
//! every field: no input can make a decoder panic, and every error names the
//! field and its byte offset in the UDP payload. Reads borrow from the input.
//! The facts come from `docs/wire-format.md` (the original C++ library, 4.081).

pub(crate) mod address;
pub(crate) mod connected;
pub mod cursor;
pub(crate) mod datagram;
pub mod ids;
pub(crate) mod in_place;
pub(crate) mod json;
pub(crate) mod jws;
pub(crate) mod motd;
pub(crate) mod offline;

pub use address::SystemAddress;
pub use connected::Connected;
pub use cursor::{Reader, Trace, TraceField, WireError, WireErrorKind};
pub use datagram::{AckList, AckRange, Capsule, DataDatagram, Datagram, Reliability, Spare, Split};
pub(crate) use ids::message_name;
pub use motd::Motd;
pub use offline::{offline_id, Offline};

/// `OFFLINE_MESSAGE_DATA_ID`, the magic of every offline message.
pub(crate) const MAGIC: [u8; 16] = [
    0x00, 0xff, 0xff, 0x00, 0xfe, 0xfe, 0xfe, 0xfe, 0xfd, 0xfd, 0xfd, 0xfd, 0x12, 0x34, 0x56, 0x78,
];

#[cfg(test)]
mod proptests;

/// `one` or `many` as `n` asks ("1 byte", "2 bytes"): every line that counts uses it.
pub(crate) fn plural(n: u64, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}
