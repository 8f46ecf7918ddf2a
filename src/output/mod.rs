//! Formatters that only format: summary lines, the `-V` tree, hex, NDJSON.

pub mod file;
pub mod game;
pub(crate) mod handshake;
pub(crate) mod json;
pub(crate) mod ladder;
pub mod man;
pub mod nethernet;
pub mod parquet;
pub(crate) mod peer;
pub(crate) mod stats;
pub(crate) mod svg;
pub(crate) mod table;
pub mod terminal;
pub mod text;

use std::io::IsTerminal;

/// `--color auto|always|never`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorChoice {
    /// Colour a terminal, unless `NO_COLOR` is set or `TERM=dumb`.
    #[default]
    Auto,
    /// Colour always.
    Always,
    /// Colour never.
    Never,
}

impl ColorChoice {
    /// The choice of its name on the command line (`auto`, `always`,
    /// `never`; another name is `auto`: the parser offers only these).
    pub fn from_name(name: String) -> ColorChoice {
        match name.as_str() {
            "always" => ColorChoice::Always,
            "never" => ColorChoice::Never,
            _ => ColorChoice::Auto,
        }
    }

    /// Whether to colour standard output. `auto` colours a terminal only, and
    /// not when `NO_COLOR` is set (to anything but empty) or `TERM=dumb`.
    pub(crate) fn enabled(self) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
                let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
                !no_color && !dumb && std::io::stdout().is_terminal()
            }
        }
    }
}

/// Standard output for a command's records, to be buffered by the caller:
/// the file descriptor itself (a duplicate of it), not `std::io::stdout()`,
/// whose line buffering looks through every byte written for the last
/// newline (1.5% of `game --json`); the standard handle if it cannot be
/// duplicated. Nothing else in the program writes to standard output.
pub fn stdout_writer() -> Box<dyn std::io::Write> {
    use std::os::fd::AsFd;
    let out = std::io::stdout();
    match out.as_fd().try_clone_to_owned() {
        Ok(fd) => Box::new(std::fs::File::from(fd)),
        Err(_) => Box::new(out),
    }
}

/// A record made by `make` in this thread's line buffer, then written to
/// `out` at once (serde_json and the hand writers put out a record a token
/// at a time: through `out` each would be a call). The buffer keeps at
/// most 1 MiB between records, as one can be megabytes (a Login's). On a
/// formatting thread (`pipeline::ordered`), whose `out` is the buffer of
/// the batch it formats, the record is made in that buffer itself, not
/// copied there.
pub(crate) fn write_line_once(
    out: &mut dyn std::io::Write,
    make: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    thread_local! {
        static LINE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    // On a formatting thread, the line is made in its batch's buffer.
    let make = match crate::wire::in_place::line(make) {
        Ok(r) => return r,
        Err(make) => make,
    };
    LINE.with_borrow_mut(|line| {
        line.clear();
        let r = make(line).and_then(|()| out.write_all(line));
        line.clear();
        line.shrink_to(1 << 20);
        r
    })
}
