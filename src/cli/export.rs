//! `export CAPTURE... -o DIR`: Parquet tables of the records `--json`
//! prints: `read` (packets), `messages`, `flows`, `handshake` (handshakes)
//! and `game`, each command run as typed with `--json`, its records
//! written as rows by [`crate::output::parquet`].

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Parser};

use super::args::{CaptureArgs, KeyArgs, ReassemblyArg};
use super::{Cli, EXIT_ERROR, EXIT_OK};
use crate::output::parquet::{NdjsonToParquet, TableWriter};

#[derive(Args, Debug, Clone)]
pub struct ExportArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// The directory the tables go to: packets.parquet, messages.parquet,
    /// flows.parquet, handshakes.parquet, game.parquet (made if missing).
    #[arg(
        short = 'o',
        long = "output",
        visible_alias = "out",
        value_name = "DIR"
    )]
    pub out: PathBuf,
    /// Key material for the game table (and the game names of the others).
    #[command(flatten)]
    pub keys: KeyArgs,
}

/// The tables: file stem, command.
const TABLES: [(&str, &str); 5] = [
    ("packets", "read"),
    ("messages", "messages"),
    ("flows", "flows"),
    ("handshakes", "handshake"),
    ("game", "game"),
];

/// The command line of `command` that gives a table's records.
fn argv(command: &str, a: &ExportArgs) -> Vec<OsString> {
    let mut v: Vec<OsString> = ["raknet-dissect", command, "--json", "--threads", "1"]
        .map(Into::into)
        .into();
    v.extend(a.capture.paths().into_iter().map(Into::into));
    let mut opt = |k: &str, val: String| v.extend([k.into(), val.into()]);
    for p in &a.capture.decode.decode_as {
        opt("-d", p.to_string());
    }
    if let Some(f) = a.capture.flow {
        opt("--flow", f.to_string());
    }
    if let Some(c) = a.capture.count {
        opt("-c", c.to_string());
    }
    if a.capture.decode.reassembly == ReassemblyArg::Arrival {
        opt("--reassembly", "arrival".into());
    }
    if command != "messages" {
        for k in &a.keys.keylog {
            opt("--keylog", k.display().to_string());
        }
        for k in &a.keys.key {
            opt("--key", k.display().to_string());
        }
    }
    for (on, flag) in [
        (a.capture.decode.no_heuristics, "--no-heuristics"),
        (a.capture.separate, "--separate"),
    ] {
        v.extend(on.then(|| flag.into()));
    }
    v
}

/// `export`: each table in turn; a table with no rows is left out.
pub fn run_export(a: &ExportArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let made = !a.out.exists();
    if let Err(e) = std::fs::create_dir_all(&a.out) {
        return Ok(super::say(
            &format!("cannot make {}: {e}", a.out.display()),
            EXIT_ERROR,
        ));
    }
    // The tables at once, a thread each (each pass then prints on one).
    let threads = a.capture.threads();
    let each = |&(table, command): &(&str, &str)| {
        let path = a.out.join(format!("{table}.parquet"));
        let mut sink = NdjsonToParquet::new(TableWriter::create(&path)?);
        let cli = Cli::try_parse_from(argv(command, a))?;
        let c = super::run(cli.command, &cli.read, &mut sink)?;
        anyhow::Ok((path, sink.finish()?, c))
    };
    // The longest passes first (the game table: inflating, decrypting, the
    // logins' P-384 checks; the messages), the short ones fill in.
    let (mut code, mut written) = (EXIT_OK, 0);
    for done in crate::pipeline::ordered::map_starting(threads, &TABLES, &[4, 1], each) {
        let (path, rows, c) = done?;
        if rows == 0 {
            std::fs::remove_file(&path)?;
        } else {
            written += 1;
            writeln!(out, "{}: {rows} rows", path.display())?;
        }
        if code == EXIT_OK {
            code = c;
        }
    }
    if written == 0 {
        let _ = made && std::fs::remove_dir(&a.out).is_ok();
        super::say(
            &format!("no records: nothing written to {}", a.out.display()),
            code,
        );
    }
    Ok(code)
}
