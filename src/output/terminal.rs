//! What a terminal is asked and shown besides the records: its width, and
//! a progress bar while large captures are read.

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

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

/// Files smaller than this (in all) are read without a progress bar.
pub const PROGRESS_MIN_BYTES: u64 = 16 << 20;

/// A progress bar on standard error while capture files are read, drawn by
/// a thread of its own; cleared when dropped.
pub struct Progress {
    bar: indicatif::ProgressBar,
    /// Bytes read so far, for the reader to add to.
    pub consumed: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
}

impl Progress {
    /// A bar for reading `paths`, when standard error is a terminal, the
    /// files add up to at least [`PROGRESS_MIN_BYTES`], and standard output
    /// is not the same terminal (unless the command prints only at the end).
    pub fn start(paths: &[PathBuf], summary_only: bool) -> Option<Progress> {
        if !io::stderr().is_terminal() || (io::stdout().is_terminal() && !summary_only) {
            return None;
        }
        let total: u64 = paths
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok().filter(|m| m.is_file()))
            .map(|m| m.len())
            .sum();
        if total < PROGRESS_MIN_BYTES {
            return None;
        }
        let bar = indicatif::ProgressBar::new(total);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{spinner} reading {bytes}/{total_bytes} [{wide_bar}] {bytes_per_sec}, {eta} left",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        let consumed = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let (b, c, d) = (bar.clone(), Arc::clone(&consumed), Arc::clone(&done));
        std::thread::spawn(move || {
            while !d.load(Ordering::Relaxed) {
                b.set_position(c.load(Ordering::Relaxed));
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Some(Progress {
            bar,
            consumed,
            done,
        })
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        self.bar.finish_and_clear();
    }
}
