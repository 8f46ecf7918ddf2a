//! Formatting on worker threads, written in the order the records came.
//!
//! The capture commands' stateful work (reading, the dissector's flow
//! table, the mirror, the game layer) runs in capture order on one thread;
//! what costs most after it, turning each packet or message into a line or
//! a JSON record, depends only on the record and on the printer's options.
//! [`run`] hands records in batches to `threads` workers, each with a
//! printer of its own, and writes the bytes each batch made in the order
//! the batches were made: the output is the one thread's, byte for byte.
//! At most `AHEAD` (4) batches per worker are in flight, so memory stays flat
//! whatever the capture's size. With one thread there are no workers: each
//! record is formatted as it is pushed, straight to the output.
//!
//! ```
//! use raknet_dissect::pipeline::ordered;
//! use std::io::Write;
//!
//! let mut out = Vec::new();
//! ordered::run(
//!     2,
//!     &mut out,
//!     || (),
//!     |_, n: &mut u32, out: &mut dyn Write| writeln!(out, "{n}"),
//!     drop,
//!     |sink| (1..=1000).try_for_each(|n| sink.push(n)),
//! )
//! .unwrap();
//! let want: String = (1..=1000).map(|n| format!("{n}\n")).collect();
//! assert_eq!(String::from_utf8(out).unwrap(), want);
//! ```

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::sync::Mutex;

use crate::wire::in_place;

/// Records in a batch: enough that a handoff costs little against the
/// formatting, few enough that workers stay busy to the end.
pub(crate) const BATCH: usize = 1024;

/// The bytes a batch's records may hold (as [`Sink::push_weighing`] is
/// told), at most: a batch of large records goes early, so that memory
/// stays flat whatever they carry.
pub(crate) const BATCH_BYTES: usize = 1 << 20;

/// Batches in flight (queued, being formatted, or formatted and waiting
/// for an earlier one) per worker, at most.
pub(crate) const AHEAD: usize = 4;

/// A batch formatted: its bytes, and its records, back to the producer's
/// thread to be done with there (freeing memory on the thread that made it
/// is what allocators do fastest).
type Done<R> = (u64, io::Result<Vec<u8>>, Vec<R>);
/// A batch to format, and a buffer to format it into (one that was written
/// before, so its memory is reused).
type Job<R> = (u64, Vec<R>, Vec<u8>);

type Inline<'o, R> = Box<dyn FnMut(&mut R, &mut dyn Write) -> io::Result<()> + 'o>;

/// Where the producer puts its records; see [`run`].
pub struct Sink<'o, R> {
    /// With one thread: the record formatted at once.
    inline: Option<Inline<'o, R>>,
    /// Each record once formatted, on this thread.
    spent: Box<dyn FnMut(R) + 'o>,
    batch: Vec<R>,
    /// The bytes the batch's records hold, as the producer said.
    weight: usize,
    /// Emptied batches, for the next records.
    batches: Vec<Vec<R>>,
    jobs: Option<SyncSender<Job<R>>>,
    /// Buffers written out, for the next batches.
    spare: Vec<Vec<u8>>,
    done: Receiver<Done<R>>,
    /// Formatted batches that wait for an earlier one.
    waiting: BTreeMap<u64, Vec<u8>>,
    sent: u64,
    written: u64,
    limit: u64,
    out: &'o mut dyn Write,
}

impl<R> Sink<'_, R> {
    /// The next record, after every one pushed before it.
    pub fn push(&mut self, r: R) -> io::Result<()> {
        self.push_weighing(r, 0)
    }

    /// [`Sink::push`] for a record that holds about `bytes` bytes.
    pub(crate) fn push_weighing(&mut self, mut r: R, bytes: usize) -> io::Result<()> {
        if let Some(format) = self.inline.as_mut() {
            format(&mut r, &mut *self.out)?;
            (self.spent)(r);
            return Ok(());
        }
        self.batch.push(r);
        self.weight += bytes;
        if self.batch.len() >= BATCH || self.weight >= BATCH_BYTES {
            self.send()?;
        }
        Ok(())
    }

    fn send(&mut self) -> io::Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        self.weight = 0;
        let next = self
            .batches
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(BATCH));
        let batch = std::mem::replace(&mut self.batch, next);
        // Wait for the oldest batches while too many are out.
        while self.sent - self.written >= self.limit {
            self.receive(true)?;
        }
        let jobs = self.jobs.as_ref().expect("sending before finish");
        let buf = self.spare.pop().unwrap_or_default();
        if jobs.send((self.sent, batch, buf)).is_err() {
            // Only when every worker stopped: a panic, reported at the join.
            return Err(io::Error::other("the formatting threads stopped"));
        }
        self.sent += 1;
        // Write whatever is ready, without waiting.
        while self.receive(false)? {}
        Ok(())
    }

    /// Take one finished batch (waiting for it with `block`) and write
    /// every batch now in order; false when none was ready.
    fn receive(&mut self, block: bool) -> io::Result<bool> {
        let got = if block {
            self.done.recv().ok()
        } else {
            self.done.try_recv().ok()
        };
        let Some((seq, bytes, mut records)) = got else {
            if block {
                return Err(io::Error::other("the formatting threads stopped"));
            }
            return Ok(false);
        };
        records.drain(..).for_each(&mut self.spent);
        self.batches.push(records);
        self.waiting.insert(seq, bytes?);
        while let Some(mut bytes) = self.waiting.remove(&self.written) {
            self.out.write_all(&bytes)?;
            self.written += 1;
            bytes.clear();
            self.spare.push(bytes);
        }
        Ok(true)
    }

    /// Send the last batch and write everything still out, in order.
    fn finish(&mut self) -> io::Result<()> {
        if self.inline.is_some() {
            return Ok(());
        }
        self.send()?;
        self.jobs = None;
        while self.written < self.sent {
            self.receive(true)?;
        }
        Ok(())
    }
}

/// Run `produce` on this thread; each record it pushes is formatted by
/// `format` on one of `threads` workers (each with its own state from
/// `worker`) into a buffer, and the buffers are written to `out` in the
/// order of the records (with one thread, each is formatted to `out` as
/// it is pushed, on this thread). Each record formatted is handed to
/// `spent` on this thread (to recycle it, or to drop it where it was made).
/// Returns what `produce` returned, once everything is written; a write
/// error (a closed pipe) ends the run with that error.
pub fn run<R, S, T, E>(
    threads: usize,
    out: &mut dyn Write,
    worker: impl Fn() -> S + Sync,
    format: impl Fn(&mut S, &mut R, &mut dyn Write) -> io::Result<()> + Sync,
    spent: impl FnMut(R),
    produce: impl FnOnce(&mut Sink<'_, R>) -> Result<T, E>,
) -> Result<T, E>
where
    R: Send,
    E: From<io::Error>,
{
    if threads <= 1 {
        let (_, done) = channel::<Done<R>>();
        let mut state = worker();
        let mut sink = Sink {
            inline: Some(Box::new(|r: &mut R, out: &mut dyn Write| {
                format(&mut state, r, out)
            })),
            spent: Box::new(spent),
            batch: Vec::new(),
            weight: 0,
            batches: Vec::new(),
            jobs: None,
            spare: Vec::new(),
            done,
            waiting: BTreeMap::new(),
            sent: 0,
            written: 0,
            limit: 0,
            out,
        };
        return produce(&mut sink);
    }
    let (jobs_tx, jobs) = sync_channel::<Job<R>>(threads * 2);
    let jobs = Mutex::new(jobs);
    let (done_tx, done) = channel::<Done<R>>();
    std::thread::scope(|s| {
        for i in 0..threads {
            let (jobs, done_tx, worker, format) = (&jobs, done_tx.clone(), &worker, &format);
            std::thread::Builder::new()
                .name(format!("format-{i}"))
                .spawn_scoped(s, move || {
                    let mut state = worker();
                    loop {
                        // The lock is held only to take a batch.
                        let job = jobs.lock().map(|j| j.recv());
                        let Ok(Ok((seq, mut batch, mut buf))) = job else {
                            return;
                        };
                        let r = in_place::formatting(&mut buf, |out| {
                            batch
                                .iter_mut()
                                .try_for_each(|r| format(&mut state, r, out))
                        });
                        let r = r.map(|()| buf);
                        if done_tx.send((seq, r, batch)).is_err() {
                            return;
                        }
                    }
                })
                .expect("a formatting thread starts");
        }
        drop(done_tx);
        let mut sink = Sink {
            inline: None,
            spent: Box::new(spent),
            batch: Vec::with_capacity(BATCH),
            weight: 0,
            batches: Vec::new(),
            jobs: Some(jobs_tx),
            spare: Vec::new(),
            done,
            waiting: BTreeMap::new(),
            sent: 0,
            written: 0,
            limit: (threads * AHEAD) as u64,
            out,
        };
        let r = produce(&mut sink);
        // Everything pushed before an error is still written.
        let finished = sink.finish();
        let t = r?;
        finished?;
        Ok(t)
    })
}

/// `f` of each item, on up to `threads` threads at once (an item each in
/// turn), in the items' order: for a few long independent jobs, such as
/// the tables of `export`.
#[cfg(test)]
pub(crate) fn map<T: Sync, R: Send>(
    threads: usize,
    items: &[T],
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    map_starting(threads, items, &[], f)
}

/// `f` of each item, on up to `threads` threads at once (an item each in
/// turn): the items at the indices of `first` started first (the longest
/// jobs, so that the short ones fill the threads at the end), then the
/// others in order; the results in the items' order.
pub fn map_starting<T: Sync, R: Send>(
    threads: usize,
    items: &[T],
    first: &[usize],
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let start: Vec<usize> = first
        .iter()
        .copied()
        .filter(|&i| i < items.len())
        .chain((0..items.len()).filter(|i| !first.contains(i)))
        .collect();
    let next = AtomicUsize::new(0);
    let done: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let work = || loop {
        let k = next.fetch_add(1, Ordering::Relaxed);
        let Some(&i) = start.get(k) else {
            break;
        };
        let item = &items[i];
        let r = f(item);
        if let Ok(mut slot) = done[i].lock() {
            *slot = Some(r);
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads.clamp(1, items.len().max(1)) {
            s.spawn(work);
        }
        work();
    });
    done.into_iter()
        .map(|m| m.into_inner().ok().flatten().expect("every item done"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_starts_the_first_given_and_answers_in_order() {
        use std::sync::Mutex;
        for threads in [1, 2, 3] {
            let started = Mutex::new(Vec::new());
            let r = map_starting(threads, &[10, 11, 12, 13, 14], &[4, 1], |&x| {
                started.lock().unwrap().push(x);
                x * 2
            });
            assert_eq!(r, [20, 22, 24, 26, 28]);
            let started = started.into_inner().unwrap();
            assert_eq!(started.len(), 5);
            if threads == 1 {
                assert_eq!(started, [14, 11, 10, 12, 13]);
            }
        }
    }

    #[test]
    fn order_is_kept_whatever_the_workers_take() {
        for threads in [1, 2, 5] {
            let (mut out, mut spent) = (Vec::new(), Vec::new());
            let n = BATCH * 40 + 7;
            run(
                threads,
                &mut out,
                || 0u64,
                |calls, i: &mut usize, out: &mut dyn Write| {
                    let i = *i;
                    *calls += 1;
                    // Uneven work, so batches finish out of order.
                    if i % (BATCH * 3) < BATCH {
                        std::thread::sleep(std::time::Duration::from_micros(20));
                    }
                    writeln!(out, "{i}")
                },
                |i| spent.push(i),
                |sink| (0..n).try_for_each(|i| sink.push(i)),
            )
            .unwrap();
            let want: String = (0..n).map(|i| format!("{i}\n")).collect();
            assert_eq!(String::from_utf8(out).unwrap(), want, "{threads} threads");
            // Every record came back once, on this thread.
            spent.sort_unstable();
            assert_eq!(spent, (0..n).collect::<Vec<_>>());
        }
    }

    /// Lines made in place on the formatting threads come out as written
    /// through `out`, in order, mixed with writes through it, and a line
    /// that fails leaves nothing; elsewhere nothing is made in place.
    #[test]
    fn lines_made_in_place_keep_their_order() {
        assert!(
            in_place::line(|_| Ok(())).is_err(),
            "not on a formatting thread"
        );
        for threads in [1, 2, 3] {
            let mut out = Vec::new();
            let n = BATCH * 3 + 5;
            let r = run(
                threads,
                &mut out,
                || (),
                |_, i: &mut usize, out: &mut dyn Write| {
                    let i = *i;
                    write!(out, "{i}:")?;
                    let line = |buf: &mut Vec<u8>| {
                        buf.extend_from_slice(b"half");
                        if i % 7 == 3 {
                            return Err(io::Error::other("cut"));
                        }
                        writeln!(buf, " {i}")
                    };
                    match in_place::line(line) {
                        Ok(r) => {
                            assert!(threads > 1, "made in place with one thread");
                            r.or_else(|_| writeln!(out, " failed"))
                        }
                        Err(line) => {
                            let mut buf = Vec::new();
                            match line(&mut buf) {
                                Ok(()) => out.write_all(&buf),
                                Err(_) => writeln!(out, " failed"),
                            }
                        }
                    }
                },
                drop,
                |sink| (0..n).try_for_each(|i| sink.push(i)),
            );
            r.unwrap();
            let want: String = (0..n)
                .map(|i| match i % 7 {
                    3 => format!("{i}: failed\n"),
                    _ => format!("{i}:half {i}\n"),
                })
                .collect();
            assert_eq!(String::from_utf8(out).unwrap(), want, "{threads} threads");
        }
    }

    #[test]
    fn heavy_records_go_in_smaller_batches() {
        let (mut out, mut sizes) = (Vec::new(), Vec::new());
        run(
            2,
            &mut out,
            || (),
            |_, i: &mut usize, out: &mut dyn Write| writeln!(out, "{i}"),
            drop,
            |sink| {
                for i in 0..100 {
                    sink.push_weighing(i, BATCH_BYTES / 10 + 1)?;
                    sizes.push(sink.batch.len());
                }
                io::Result::Ok(())
            },
        )
        .unwrap();
        // Ten records of a tenth of the budget fill a batch; the weight
        // starts again with each.
        assert_eq!(sizes.iter().max(), Some(&9));
        assert_eq!(sizes.iter().filter(|&&n| n == 0).count(), 10);
        let want: String = (0..100).map(|i| format!("{i}\n")).collect();
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }

    #[test]
    fn map_keeps_the_order_of_the_items() {
        let items: Vec<u64> = (0..37).collect();
        for threads in [0, 1, 2, 8, 100] {
            let got = map(threads, &items, |&i| {
                std::thread::sleep(std::time::Duration::from_micros((37 - i) * 10));
                i * i
            });
            assert_eq!(got, items.iter().map(|i| i * i).collect::<Vec<_>>());
        }
        assert!(map(4, &[] as &[u8], |_| 1).is_empty());
    }

    #[test]
    fn an_error_stops_the_run_and_what_came_before_is_written() {
        let mut out = Vec::new();
        let r: Result<(), io::Error> = run(
            2,
            &mut out,
            || (),
            |_, i: &mut usize, out: &mut dyn Write| writeln!(out, "{i}"),
            drop,
            |sink| {
                (0..10).try_for_each(|i| sink.push(i))?;
                Err(io::Error::other("stopped"))
            },
        );
        assert_eq!(r.unwrap_err().to_string(), "stopped");
        assert_eq!(
            out.len(),
            (0..10).map(|i| format!("{i}\n").len()).sum::<usize>()
        );
    }

    #[test]
    fn a_closed_output_is_an_error() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let r: Result<(), io::Error> = run(
            2,
            &mut Closed,
            || (),
            |_, i: &mut usize, out: &mut dyn Write| writeln!(out, "{i}"),
            drop,
            |sink| (0..100_000).try_for_each(|i| sink.push(i)),
        );
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::BrokenPipe);
    }
}
