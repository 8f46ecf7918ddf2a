//! The exit codes of the command line (README, "Exit codes"; the man
//! pages' EXIT STATUS, [`crate::output::man`]), and the code of each way
//! a library call can end ([`Code`]).

use crate::peer::run::Outcome;
use crate::pipeline::ReadOutcome;
use crate::replay::run::StartError;

pub const EXIT_OK: u8 = 0;
pub const EXIT_ERROR: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_BAD_FILE: u8 = 3;
pub const EXIT_BAD_FILTER: u8 = 4;
pub const EXIT_CUT_SHORT: u8 = 5;
/// No connection could be made: no pong, a refused or unanswered
/// handshake, nothing listening (the diagnosis is printed).
pub const EXIT_NO_CONNECTION: u8 = 6;
/// A replay the server cut short (it disconnected, or went silent) before
/// every message was sent and acknowledged.
pub const EXIT_REPLAY_CUT: u8 = 7;
/// Live capture not permitted (root or CAP_NET_RAW needed).
pub const EXIT_NO_PERMISSION: u8 = 8;
/// A capture malformed past some point (everything before it was printed).
pub const EXIT_MALFORMED: u8 = 9;
/// A Bedrock game login that did not reach the spawn (`connect --bedrock`,
/// `replay --bedrock`).
pub const EXIT_LOGIN_FAILED: u8 = 10;

/// The exit code of how a library call ended.
pub trait Code {
    fn code(&self) -> u8;
}

impl Code for ReadOutcome {
    fn code(&self) -> u8 {
        match self {
            ReadOutcome::Read => EXIT_OK,
            ReadOutcome::Usage => EXIT_USAGE,
            ReadOutcome::BadFile => EXIT_BAD_FILE,
            ReadOutcome::Malformed => EXIT_MALFORMED,
            ReadOutcome::CutShort => EXIT_CUT_SHORT,
        }
    }
}

impl Code for Outcome {
    fn code(&self) -> u8 {
        match self {
            Outcome::Done => EXIT_OK,
            Outcome::NoConnection => EXIT_NO_CONNECTION,
            Outcome::LoginFailed => EXIT_LOGIN_FAILED,
            Outcome::ReplayCut => EXIT_REPLAY_CUT,
        }
    }
}

/// 2 for a flow the capture does not have, 3 for a file that cannot be
/// read or holds no session, 1 for a file to record to that cannot be made.
impl Code for StartError {
    fn code(&self) -> u8 {
        match self {
            StartError::Load(e) if e.is_usage() => EXIT_USAGE,
            StartError::Load(_) | StartError::Game { .. } => EXIT_BAD_FILE,
            StartError::Record { .. } | StartError::Listen(_) => EXIT_ERROR,
        }
    }
}

/// The first code of a `--separate` run's files that is not 0 (a file
/// whose run failed is 1).
pub fn first_failure(codes: impl IntoIterator<Item = Option<u8>>) -> u8 {
    codes
        .into_iter()
        .map(|c| c.unwrap_or(EXIT_ERROR))
        .find(|&c| c != EXIT_OK)
        .unwrap_or(EXIT_OK)
}
