//! The exit codes of the command line (README, "Exit codes"; the man
//! pages' EXIT STATUS, [`super::man`]).

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
