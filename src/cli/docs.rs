//! `completions SHELL` and `man [COMMAND | --all DIR]`: shell completion
//! scripts and man pages generated from this command line's clap
//! definitions ([`Cli`]) by [`crate::output::man`], which puts right what
//! the generators get wrong and adds what they cannot know (the filter
//! grammar, the exit codes, the licences). `tests/cli.rs` checks every
//! page's sections.

use std::io::Write;
use std::path::Path;

use clap::CommandFactory;
use clap_complete::Shell;

use super::exit::{EXIT_OK, EXIT_USAGE};
use super::Cli;
use crate::output::man::{built, pages, render, subcommands};

/// The binary's name, as completions and man pages spell it.
const BIN: &str = "raknet-dissect";

/// `completions SHELL`: the script on `out`.
pub fn completions(shell: Shell, out: &mut dyn Write) -> anyhow::Result<u8> {
    let script = crate::output::man::completions(Cli::command(), shell, BIN);
    out.write_all(script.as_bytes())?;
    Ok(EXIT_OK)
}

/// `man`: the top level's page, `COMMAND`'s (`raknet-dissect-COMMAND(1)`),
/// or with `all` every page written into that directory.
pub fn man(command: Option<&str>, all: Option<&Path>, out: &mut dyn Write) -> anyhow::Result<u8> {
    let root = built(Cli::command());
    if let Some(dir) = all {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        for (name, page) in pages(&root, BIN)? {
            let path = dir.join(name);
            std::fs::write(&path, page)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            writeln!(out, "{}", path.display())?;
        }
        return Ok(EXIT_OK);
    }
    let cmd = match command {
        None => &root,
        Some(name) => match subcommands(&root).find(|c| c.get_name() == name) {
            Some(c) => c,
            None => {
                let names: Vec<&str> = subcommands(&root).map(|c| c.get_name()).collect();
                eprintln!(
                    "{BIN}: no command {name:?}: man pages are for {}",
                    names.join(", ")
                );
                return Ok(EXIT_USAGE);
            }
        },
    };
    render(cmd, &root, BIN, out)?;
    Ok(EXIT_OK)
}
