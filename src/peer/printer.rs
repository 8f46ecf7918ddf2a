//! A [`Report`] that prints the records of the live commands
//! (`peer::run`, `replay::run`) as lines or NDJSON, as each comes.

use std::io::{self, IsTerminal, Write};
use std::time::Duration;

use super::run::{self, Report};
use crate::output::peer::PeerRecord;
use crate::output::text::Palette;
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
    steps: bool,
    pal: Palette,
}

impl<'o, W: Write> Printer<'o, W> {
    pub fn new(out: &'o mut W, json: bool, quiet: bool, pal: Palette) -> Self {
        Printer {
            steps: !json && io::stderr().is_terminal(),
            pal,
            message_lines: true,
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
        if let PeerRecord::Failed(f) = &r {
            // On standard error whatever the format; a record too with --json.
            self.out.flush()?;
            eprintln!(
                "raknet-dissect: {}",
                self.pal
                    .paint_anomaly(&format!("{}: {} [{}]", f.target, f.error, f.step))
            );
            if !self.json {
                return Ok(());
            }
        }
        if self.json {
            serde_json::to_writer(&mut *self.out, &r)?;
            self.out.write_all(b"\n")?;
        } else if self.message_lines || !matches!(r, PeerRecord::Message(_)) {
            let line = r.line();
            let line = match r {
                PeerRecord::NoPong(_) => self.pal.paint_anomaly(&line),
                _ => line,
            };
            writeln!(self.out, "{line}")?;
        }
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
