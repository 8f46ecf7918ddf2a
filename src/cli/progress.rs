//! The progress bar on standard error while large captures are read: the
//! pipeline's [`Progress`] hook, drawn with indicatif.

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::pipeline::progress::{Bar, Progress};

/// Files smaller than this (in all) are read without a progress bar.
pub const PROGRESS_MIN_BYTES: u64 = 16 << 20;

/// A bar, drawn by a thread of its own and cleared when the run is done
/// with it, when standard error is a terminal, the files add up to at least
/// [`PROGRESS_MIN_BYTES`], and standard output is not the same terminal
/// (unless the command prints only at the end).
pub fn bar() -> Progress {
    Progress::new(start)
}

fn start(paths: &[PathBuf], summary_only: bool) -> Option<Bar> {
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
    Some(Bar::new(consumed, move || {
        done.store(true, Ordering::Relaxed);
        bar.finish_and_clear();
    }))
}
