//! clap's usage errors, said for this command line: a flag that a command
//! lacks is named with the commands that have it (clap's own tip, "to pass
//! '-Y' as a value, use '-- -Y'", fits a program whose files start with a
//! dash, not a mistyped option). Like [`super::manpages`], it reads the
//! clap definitions and goes with the binary's layer.

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// The text of usage error `e` of command line `root`, when this module
/// says it better than clap; `None` for clap's own.
pub fn explain(e: &clap::Error, root: &clap::Command) -> Option<String> {
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(flag)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let text = e.render().to_string();
    // clap's suggestion of a similar flag is kept; only its tip to pass the
    // flag as a value goes.
    let tip = text.lines().find(|l| l.contains("as a value, use '--"))?;
    let has = |c: &clap::Command| {
        c.get_arguments().any(|a| {
            a.get_short().is_some_and(|s| *flag == format!("-{s}"))
                || a.get_long().is_some_and(|l| *flag == format!("--{l}"))
        })
    };
    let owners: Vec<&str> = root
        .get_subcommands()
        .filter(|c| has(c))
        .map(|c| c.get_name())
        .collect();
    let instead = match owners.len() {
        0 => format!(
            "  tip: no command has {flag}: `raknet-dissect COMMAND --help` lists each one's"
        ),
        _ => format!(
            "  tip: {flag} is an option of {}; this command's are in its --help",
            owners.join(", ")
        ),
    };
    Some(text.replacen(tip, &instead, 1))
}

#[cfg(test)]
mod tests {
    use clap::{Arg, ArgAction, Command};

    fn root() -> Command {
        Command::new("raknet-dissect")
            .subcommand(
                Command::new("read").arg(Arg::new("filter").short('Y').action(ArgAction::Set)),
            )
            .subcommand(
                Command::new("ping")
                    .arg(Arg::new("target"))
                    .arg(Arg::new("count").short('c').action(ArgAction::Set)),
            )
    }

    #[test]
    fn a_flag_of_another_command_names_it() {
        let e = root()
            .try_get_matches_from(["raknet-dissect", "ping", "-Y", "x"])
            .unwrap_err();
        let said = super::explain(&e, &root()).expect("explained");
        assert!(said.contains("-Y is an option of read"), "{said}");
        assert!(!said.contains("as a value"), "{said}");
        let e = root()
            .try_get_matches_from(["raknet-dissect", "ping", "-Q"])
            .unwrap_err();
        let said = super::explain(&e, &root()).expect("explained");
        assert!(said.contains("no command has -Q"), "{said}");
    }
}
