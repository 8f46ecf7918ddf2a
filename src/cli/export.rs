//! `export CAPTURE... -o DIR`: Parquet tables of the records `--json`
//! prints: `read` (packets), `messages`, `flows`, `handshake` (handshakes)
//! and `game`, each command run as with `--json`, its records handed as
//! records (not their lines) to a table of [`crate::output::parquet`].

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use clap::Args;

use super::args::{CaptureArgs, DisplayArgs, KeyArgs, OutputArgs};
use super::{capture::GameArgs, capture::HandshakeArgs, Command, EXIT_ERROR, EXIT_OK};
use super::{FlowsArgs, MessagesArgs, ReadArgs};
use crate::output::parquet::{NoText, TableWriter};
use crate::records::walk::SharedSink;

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

/// `command` as a table's pass runs it: on one thread, its records to `sink`.
#[allow(clippy::needless_update)] // the same macro for HandshakeArgs, which has no other field
fn command(command: &str, a: &ExportArgs, sink: SharedSink) -> Command {
    let (capture, keys) = (a.capture.clone(), a.keys.clone());
    macro_rules! args {
        ($t:ident $(, $k:ident)?) => {
            $t {
                capture: CaptureArgs { threads: Some(1), ..capture },
                output: OutputArgs { json: true, ..OutputArgs::default() },
                display: DisplayArgs { sink: Some(sink), ..DisplayArgs::default() },
                $($k,)? ..$t::default()
            }
        };
    }
    match command {
        "read" => Command::Read(args!(ReadArgs, keys)),
        "messages" => Command::Messages(args!(MessagesArgs)),
        "flows" => Command::Flows(args!(FlowsArgs, keys)),
        "handshake" => Command::Handshake(args!(HandshakeArgs, keys)),
        _ => Command::Game(args!(GameArgs, keys)),
    }
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
    let each = |&(table, name): &(&str, &str)| {
        let path = a.out.join(format!("{table}.parquet"));
        let table = Arc::new(Mutex::new(TableWriter::create(&path)?));
        let pass = command(name, a, SharedSink(table.clone()));
        let c = super::run(Some(pass), &ReadArgs::default(), &mut NoText)?;
        // The pass is over: the printers, and their handles on it, are gone.
        let table = Arc::into_inner(table).and_then(|t| t.into_inner().ok());
        let table = table.ok_or_else(|| anyhow::anyhow!("{}: not closed", path.display()))?;
        anyhow::Ok((path, table.finish()?, c))
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
