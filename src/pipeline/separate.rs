//! `--separate`: capture files that are captures of their own (a fleet's,
//! one per server and day), not the parts of one. Each file is read by a
//! run of its own (its own dissector, mirror, flow numbers and time
//! origin) on one of `threads` workers, several files at once, and the
//! output is each file's in turn, in the order the files were given: the
//! same bytes whatever the number of threads.
//!
//! The first unfinished file's output is written as it is made; a later
//! file's is held in at most `HELD` (4) chunks of `CHUNK` bytes (1 MiB),
//! and its worker waits while they are full, so memory stays flat however
//! large the files and however much they print.
//!
//! ```
//! use raknet_dissect::pipeline::separate;
//! use std::io::Write;
//!
//! let mut out = Vec::new();
//! let codes = separate::each_in_order(2, 3, &mut out, |i, out| {
//!     (0..1000).try_for_each(|n| writeln!(out, "{i} {n}")).map(|_| i * 10)
//! })
//! .unwrap();
//! let want: String = (0..3)
//!     .flat_map(|i| (0..1000).map(move |n| format!("{i} {n}\n")))
//!     .collect();
//! assert_eq!(String::from_utf8(out).unwrap(), want);
//! assert_eq!(codes.into_iter().map(Result::unwrap).collect::<Vec<_>>(), [0, 10, 20]);
//! ```

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

/// Bytes a worker gathers before handing them on.
pub(crate) const CHUNK: usize = 1024 << 10;

/// Chunks of a file's output held while an earlier file is written, at
/// most (4 MiB with [`CHUNK`]), per file in flight.
pub(crate) const HELD: usize = 4;

/// The run of one file of a `--separate` run: what its records call it,
/// and where it counts the bytes it reads (for the run's one progress bar).
#[derive(Debug, Clone, Default)]
pub struct Part {
    pub(crate) name: String,
    pub(crate) consumed: Option<Arc<AtomicU64>>,
}

/// A `--separate` run of a command over capture files.
pub struct Plan {
    /// The capture files, each a run of its own, in output order.
    pub paths: Vec<PathBuf>,
    /// Files read at once.
    pub threads: usize,
    /// Each file's output under a `==> FILE <==` line (text that does not
    /// say which file it comes from).
    pub heading: bool,
    /// The command prints only when a file is read (for the progress bar).
    pub summary_only: bool,
    /// Where a file's failure is said.
    pub notes: super::notes::Notes,
    /// Where the run's progress is shown, one bar for every file.
    pub progress: super::progress::Progress,
}

impl Plan {
    /// `run_file(i, part, out)` for each file, its output in file order,
    /// one progress bar for them all; each file's result, in file order,
    /// `None` for a file whose run failed (its error is said, with its
    /// file, through the notes). A closed output ends the run.
    pub fn run<R: Send>(
        &self,
        out: &mut dyn Write,
        run_file: impl Fn(usize, Part, &mut dyn Write) -> anyhow::Result<R> + Sync,
    ) -> anyhow::Result<Vec<Option<R>>> {
        let bar = self.progress.start(&self.paths, self.summary_only);
        let each = |i: usize, out: &mut dyn Write| {
            let path = &self.paths[i];
            if self.heading {
                writeln!(out, "==> {} <==", path.display())?;
            }
            let part = Part {
                name: path.display().to_string(),
                consumed: bar.as_ref().map(|b| Arc::clone(&b.consumed)),
            };
            run_file(i, part, out)
        };
        let ran = each_in_order(self.threads, self.paths.len(), out, each);
        drop(bar);
        let mut results = Vec::with_capacity(self.paths.len());
        for (r, path) in ran?.into_iter().zip(&self.paths) {
            results.push(match r {
                Err(e) if super::is_broken_pipe(&e) => return Err(e),
                Err(e) => {
                    let line = format!("{}: {e:#}", path.display());
                    self.notes.say(super::notes::NoteKind::Failed, &line);
                    None
                }
                Ok(r) => Some(r),
            });
        }
        Ok(results)
    }
}

/// Chunks written out, for the workers to fill again (a fresh chunk each
/// time would cost a page fault every 4 KiB of output).
type Spent = Mutex<Vec<Vec<u8>>>;

/// A file's output on its way to the writer, a chunk at a time.
struct Chunks<'s> {
    buf: Vec<u8>,
    to: SyncSender<Vec<u8>>,
    spent: &'s Spent,
}

impl Chunks<'_> {
    fn hand_on(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let again = self.spent.lock().ok().and_then(|mut s| s.pop());
        let next = again.unwrap_or_else(|| Vec::with_capacity(CHUNK));
        let chunk = std::mem::replace(&mut self.buf, next);
        // The writer is gone only when writing failed (a closed pipe): this
        // file's run stops at once.
        self.to
            .send(chunk)
            .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
    }
}

impl Write for Chunks<'_> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(b);
        if self.buf.len() >= CHUNK {
            self.hand_on()?;
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Run `job(i, out)` for every `i` in `0..n` (a file each), on up to
/// `threads` threads, taking the files in order; write their outputs to
/// `out` one after the other, in that order. Returns each job's result, in
/// order; an error writing to `out` ends the run (the jobs still running
/// see their writes fail and stop).
pub fn each_in_order<R: Send>(
    threads: usize,
    n: usize,
    out: &mut dyn Write,
    job: impl Fn(usize, &mut dyn Write) -> R + Sync,
) -> io::Result<Vec<R>> {
    if threads <= 1 || n <= 1 {
        let mut results = Vec::with_capacity(n);
        for i in 0..n {
            results.push(job(i, &mut *out));
        }
        return Ok(results);
    }
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..n)
        .map(|_| {
            let (tx, rx) = sync_channel::<Vec<u8>>(HELD);
            (Mutex::new(Some(tx)), rx)
        })
        .unzip();
    let results: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let spent = Spent::default();
    let work = || {
        while !stop.load(Ordering::SeqCst) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            let Some(to) = senders[i].lock().ok().and_then(|mut s| s.take()) else {
                break;
            };
            let mut chunks = Chunks {
                buf: Vec::with_capacity(CHUNK),
                to,
                spent: &spent,
            };
            let r = job(i, &mut chunks);
            // The rest of the output, then the result, then the channel
            // closes (`drop`): a writer that sees it closed finds the result.
            let _ = chunks.hand_on();
            if let Ok(mut slot) = results[i].lock() {
                *slot = Some(r);
            }
            drop(chunks);
        }
    };
    let written = std::thread::scope(|s| {
        for _ in 0..threads.min(n) {
            s.spawn(work);
        }
        write_in_order(receivers, out, &stop, &spent)
    });
    written?;
    Ok(results
        .into_iter()
        .map(|m| {
            m.into_inner()
                .ok()
                .flatten()
                .expect("every file's run ended")
        })
        .collect())
}

/// Each file's chunks as they come, file after file. On an error, `stop`
/// is set (no file is started after it), then the receivers are dropped:
/// the sends of the files in flight fail.
fn write_in_order(
    receivers: Vec<Receiver<Vec<u8>>>,
    out: &mut dyn Write,
    stop: &AtomicBool,
    spent: &Spent,
) -> io::Result<()> {
    let mut write = || {
        for rx in &receivers {
            // The channel closes when the file's run has ended and its
            // result is kept (or its worker stopped).
            for mut chunk in rx.iter() {
                out.write_all(&chunk)?;
                chunk.clear();
                if let Ok(mut s) = spent.lock() {
                    // As many as can be in flight, at most.
                    if s.len() < HELD * 2 {
                        s.push(chunk);
                    }
                }
            }
        }
        out.flush()
    };
    let written = write();
    if written.is_err() {
        stop.store(true, Ordering::SeqCst);
    }
    drop(receivers);
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn expected(sizes: &[usize]) -> Vec<u8> {
        let mut want = Vec::new();
        for (i, &size) in sizes.iter().enumerate() {
            for k in 0..size {
                writeln!(want, "file {i} line {k}").unwrap();
            }
        }
        want
    }

    #[test]
    fn outputs_come_in_file_order_whatever_the_threads() {
        // Files of very different sizes, the large ones well past what is
        // held, so that later files finish first and wait.
        let sizes = [3, 200_000, 0, 10, 150_000, 1, 5_000, 0, 0, 70_000];
        let want = expected(&sizes);
        for threads in [1, 2, 3, 8, 32] {
            let mut out = Vec::new();
            let results = each_in_order(threads, sizes.len(), &mut out, |i, out| {
                if i % 3 == 0 {
                    std::thread::sleep(Duration::from_millis(5));
                }
                for k in 0..sizes[i] {
                    writeln!(out, "file {i} line {k}")?;
                }
                Ok::<_, io::Error>(i)
            })
            .unwrap();
            assert!(out == want, "{threads} threads");
            let results: Vec<usize> = results.into_iter().map(Result::unwrap).collect();
            assert_eq!(results, (0..sizes.len()).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_later_file_waits_with_at_most_what_is_held() {
        // File 0 takes its time; file 1 prints far more than is held. Its
        // worker must wait: the bytes it has handed on while file 0 runs
        // stay under what the channel holds.
        let handed = AtomicUsize::new(0);
        let file0_done = AtomicBool::new(false);
        let most_while_waiting = AtomicUsize::new(0);
        let mut out = Vec::new();
        each_in_order(2, 2, &mut out, |i, out| {
            if i == 0 {
                std::thread::sleep(Duration::from_millis(300));
                file0_done.store(true, Ordering::SeqCst);
                return writeln!(out, "first");
            }
            let line = [b'x'; 1023];
            for _ in 0..(4 * HELD * CHUNK / 1024) {
                out.write_all(&line)?;
                out.write_all(b"\n")?;
                let h = handed.fetch_add(1024, Ordering::SeqCst) + 1024;
                if !file0_done.load(Ordering::SeqCst) {
                    most_while_waiting.fetch_max(h, Ordering::SeqCst);
                }
            }
            Ok(())
        })
        .unwrap();
        let most = most_while_waiting.load(Ordering::SeqCst);
        assert!(
            most <= (HELD + 2) * CHUNK,
            "{most} bytes made while waiting"
        );
        assert_eq!(out.len(), 6 + 4 * HELD * CHUNK);
        assert!(out.starts_with(b"first\n"));
    }

    /// A writer that fails after some bytes, as a closed pipe does.
    struct Closing(usize);

    impl Write for Closing {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if self.0 < b.len() {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            self.0 -= b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_output_stops_every_worker() {
        let started = AtomicUsize::new(0);
        let r = each_in_order(2, 1000, &mut Closing(1 << 20), |_, out| {
            started.fetch_add(1, Ordering::SeqCst);
            let line = [b'y'; 4096];
            for _ in 0..10_000 {
                out.write_all(&line)?;
            }
            Ok::<_, io::Error>(())
        });
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::BrokenPipe);
        // The files in flight when the pipe closed, not all 1000.
        assert!(started.load(Ordering::SeqCst) <= 4);
    }
}
