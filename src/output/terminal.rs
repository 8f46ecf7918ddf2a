//! What a terminal is asked besides the records: its width (the binary
//! draws the progress bar, `cli::progress`).

use std::io::{self, IsTerminal};

/// The width of the terminal standard output is, asked of the terminal
/// itself (`COLUMNS` when it does not say); none for a pipe or a file.
// The TIOCGWINSZ ioctl(2) has no safe wrapper in std.
#[allow(unsafe_code)]
pub fn terminal_width() -> Option<u16> {
    if !io::stdout().is_terminal() {
        return None;
    }
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize into the struct given.
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 {
        return Some(ws.ws_col);
    }
    std::env::var("COLUMNS").ok()?.parse().ok()
}
