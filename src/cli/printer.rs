//! A [`Report`] that prints the records of the live commands
//! (`peer::run`, `replay::run`) as lines or NDJSON, as each comes; what
//! goes wrong on standard error.

use std::io::{self, IsTerminal, Write};
use std::time::Duration;

use crate::output::text::Palette;
use crate::peer::run::{self, Report};
use crate::records::peer::PeerRecord;
use crate::session::handshake::HandshakeEvent;

/// Prints the records of a live command: NDJSON or lines, each flushed as
/// it comes; handshake steps on standard error when it is a terminal.
/// A failure also goes to standard error, in the anomaly colour.
pub struct Printer<'o, W: Write> {
    pub out: &'o mut W,
    /// NDJSON records instead of lines.
    pub json: bool,
    /// No per-message records or lines (`-q`).
    pub quiet: bool,
    /// Lines of `message` records in text mode (replay leaves them to --json).
    pub message_lines: bool,
    /// `-T fields`: only the rows are printed (`proxy -e`), as tshark does.
    pub rows_only: bool,
    steps: bool,
    pal: Palette,
}

impl<'o, W: Write> Printer<'o, W> {
    pub fn new(out: &'o mut W, json: bool, quiet: bool, pal: Palette) -> Self {
        Printer {
            steps: !json && io::stderr().is_terminal(),
            pal,
            message_lines: true,
            rows_only: false,
            out,
            json,
            quiet,
        }
    }
}

impl<W: Write> Report for Printer<'_, W> {
    fn record(&mut self, r: PeerRecord) -> io::Result<()> {
        if self.quiet && r.is_per_message() {
            return Ok(());
        }
        if self.rows_only && !matches!(r, PeerRecord::Row(_) | PeerRecord::Failed(_)) {
            return Ok(());
        }
        if let PeerRecord::Failed(_) = &r {
            // On standard error whatever the format; a record too with --json.
            self.out.flush()?;
            eprintln!("raknet-dissect: {}", self.pal.paint_anomaly(&r.line()));
            if !self.json {
                return Ok(());
            }
        }
        r.write(self.json, self.message_lines, &self.pal, &mut *self.out)?;
        self.out.flush()
    }

    fn handshake_step(&mut self, t: Duration, e: &HandshakeEvent) {
        if self.steps {
            eprintln!("{:>10.6} {}", t.as_secs_f64(), run::step_line(e));
        }
    }

    fn warn(&mut self, what: &str) {
        let _ = self.out.flush();
        eprintln!("raknet-dissect: {what}");
    }
}
