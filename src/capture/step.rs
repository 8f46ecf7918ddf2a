//! What one step of reading a source gives: shared by the file sources and
//! the live one.

use std::io;

use super::{CaptureError, Secrets, UdpDatagram};

/// One step of reading: a datagram, or a record that gave none, or the end.
pub(crate) enum Step {
    Datagram(UdpDatagram),
    /// Keys for the datagrams after it (a pcapng Decryption Secrets Block).
    Secrets(Secrets),
    Skipped,
    End,
    Failed(Failure),
}

/// Why reading stopped, before the frame number is known.
pub(crate) enum Failure {
    CutShort(String),
    Malformed(String),
    Io(io::Error),
}

impl Failure {
    pub(crate) fn into_error(self, frame: u64) -> CaptureError {
        match self {
            Failure::CutShort(detail) => CaptureError::CutShort { frame, detail },
            Failure::Malformed(detail) => CaptureError::Malformed { frame, detail },
            Failure::Io(source) => CaptureError::Io { frame, source },
        }
    }
}
