//! `completions SHELL` and `man [COMMAND | --all DIR]` of this command
//! line ([`crate::output::manpages`] makes them).

use std::io::Write;
use std::path::Path;

use clap::CommandFactory;
use clap_complete::Shell;

use super::Cli;

pub fn completions(shell: Shell, out: &mut impl Write) -> anyhow::Result<u8> {
    crate::output::manpages::completions(Cli::command(), shell, out)
}

pub fn man(command: Option<&str>, all: Option<&Path>, out: &mut impl Write) -> anyhow::Result<u8> {
    crate::output::manpages::man(Cli::command(), command, all, out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_page_has_its_sections() {
        let root = <super::Cli as clap::CommandFactory>::command();
        assert_eq!(crate::output::manpages::check_pages(root), Ok(()));
    }
}
