//! Lines made in place: a thread that formats records into a buffer of
//! its own (`pipeline::ordered`'s formatting threads) lends it to the
//! writers of whole lines (`output::write_line_once`), which then make
//! each line in that buffer rather than in a line buffer of theirs and
//! copy it over (on `game --json`, a copy of every byte printed).

use std::cell::RefCell;
use std::io::{self, Write};

thread_local! {
    /// The buffer this thread formats into, while it does.
    static BUFFER: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
}

/// `format` run with `buf` lent to this thread's line writers: it writes
/// through the writer it is given, which appends to `buf` as the lines
/// made in place do (in the order written).
pub(crate) fn formatting<T>(buf: &mut Vec<u8>, format: impl FnOnce(&mut dyn Write) -> T) -> T {
    BUFFER.set(Some(std::mem::take(buf)));
    let r = format(&mut Lent);
    *buf = BUFFER.take().unwrap_or_default();
    r
}

/// The writer [`formatting`] gives: appends to the buffer lent.
struct Lent;

impl Write for Lent {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        BUFFER.with_borrow_mut(|buf| match buf {
            Some(buf) => {
                buf.extend_from_slice(b);
                Ok(b.len())
            }
            None => Err(io::Error::other("no buffer is lent")),
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Within [`formatting`], `make` run on the buffer lent itself, and the
/// line it made kept there (none of it when it fails); elsewhere `make`
/// is given back.
pub(crate) fn line<F>(make: F) -> Result<io::Result<()>, F>
where
    F: FnOnce(&mut Vec<u8>) -> io::Result<()>,
{
    BUFFER.with_borrow_mut(|buf| match buf {
        Some(buf) => {
            let at = buf.len();
            let r = make(buf);
            if r.is_err() {
                buf.truncate(at);
            }
            Ok(r)
        }
        None => Err(make),
    })
}
