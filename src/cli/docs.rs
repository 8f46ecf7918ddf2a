//! `completions SHELL` and `man [COMMAND | --all DIR]`: shell completion
//! scripts and man pages generated from this command line's clap
//! definitions ([`Cli`]), with what the generators get wrong put right
//! (bash, for a binary name with a hyphen) and what they cannot know added
//! ([`crate::output::man`]: the filter grammar, the exit codes, the
//! licences). `tests/cli.rs` checks every page's sections.

use std::io::Write;
use std::path::Path;

use clap::CommandFactory;
use clap_complete::Shell;
use clap_mangen::Man;

use super::exit::{EXIT_OK, EXIT_USAGE};
use super::Cli;
use crate::output::man::{extra_sections, section, Block};

/// The binary's name, as completions and man pages spell it.
const BIN: &str = "raknet-dissect";

/// `completions SHELL`: the script on `out`.
pub fn completions(shell: Shell, out: &mut dyn Write) -> anyhow::Result<u8> {
    let mut root = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut root, BIN, &mut script);
    let script = String::from_utf8(script)?;
    let script = match shell {
        Shell::Bash => crate::output::man::bash_fixed(&script, BIN),
        _ => script,
    };
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
        for cmd in std::iter::once(&root).chain(subcommands(&root)) {
            let path = dir.join(Man::new(cmd.clone()).get_filename());
            let mut page = Vec::new();
            render(cmd, &root, &mut page)?;
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
    render(cmd, &root, out)?;
    Ok(EXIT_OK)
}

/// The command tree, built (so that subcommands know their full names),
/// without the `help` subcommand, which has no page.
fn built(root: clap::Command) -> clap::Command {
    let mut root = root.disable_help_subcommand(true);
    root.build();
    root
}

fn subcommands(root: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    root.get_subcommands().filter(|c| !c.is_hide_set())
}

/// Whether `cmd` takes a display filter (`-Y`).
fn takes_filter(cmd: &clap::Command) -> bool {
    cmd.get_arguments().any(|a| a.get_id() == "filter")
}

/// One page: clap_mangen's sections, then FILTERS (commands with -Y),
/// EXIT STATUS and SEE ALSO.
fn render(cmd: &clap::Command, root: &clap::Command, out: &mut dyn Write) -> std::io::Result<()> {
    let version = root.get_version().unwrap_or_default();
    let man = Man::new(cmd.clone()).source(format!("{BIN} {version}"));
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(out)?;
    }
    if cmd.get_subcommands().any(|c| !c.is_hide_set()) {
        man.render_subcommands_section(out)?;
    }
    let mut roff = String::new();
    let which = (!std::ptr::eq(cmd, root)).then(|| cmd.get_name());
    for (title, blocks) in extra_sections(which, takes_filter(cmd)) {
        section(&mut roff, title, &blocks);
    }
    let see_also: Vec<String> = if std::ptr::eq(cmd, root) {
        subcommands(root)
            .map(|c| format!("{BIN}-{}(1)", c.get_name()))
            .collect()
    } else {
        vec![format!("{BIN}(1)")]
    };
    section(&mut roff, "SEE ALSO", &[Block::Para(&see_also.join(", "))]);
    out.write_all(roff.as_bytes())?;
    if cmd.get_version().is_some() {
        man.render_version_section(out)?;
    }
    Ok(())
}
