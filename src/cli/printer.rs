//! The records of the live commands (`peer::run`, `replay::run`) printed
//! as lines or NDJSON, as each comes.

use std::io::{self, IsTerminal, Write};
use std::time::Duration;

use super::{OutputArgs, EXIT_OK};
use crate::output::peer::PeerRecord;
use crate::output::text::Palette;
use crate::peer::run::{self, Outcome, Report};
use crate::session::handshake::HandshakeEvent;

/// Exit code when no connection could be made: no pong, a refused or
/// unanswered handshake, nothing listening (the diagnosis is printed).
pub const EXIT_NO_CONNECTION: u8 = 6;

/// Prints the records of a live command: NDJSON or lines, each flushed as
/// it comes; handshake steps on standard error when it is a terminal.
pub(super) struct Printer<'o, W: Write> {
    pub out: &'o mut W,
    pub output: &'o OutputArgs,
    /// Lines of `message` records in text mode (replay leaves them to --json).
    pub message_lines: bool,
    steps: bool,
    pal: Palette,
}

impl<'o, W: Write> Printer<'o, W> {
    pub fn new(out: &'o mut W, output: &'o OutputArgs) -> Self {
        Printer {
            steps: !output.json && io::stderr().is_terminal(),
            pal: super::palette(output.color, output.json),
            message_lines: true,
            out,
            output,
        }
    }
}

impl<W: Write> Report for Printer<'_, W> {
    fn record(&mut self, r: PeerRecord) -> io::Result<()> {
        if self.output.quiet && r.is_per_message() {
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
            if !self.output.json {
                return Ok(());
            }
        }
        if self.output.json {
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

/// The exit code of an outcome.
pub(super) fn exit_code(o: Outcome) -> u8 {
    match o {
        Outcome::Done => EXIT_OK,
        Outcome::NoConnection => EXIT_NO_CONNECTION,
    }
}
