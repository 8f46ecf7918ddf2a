//! clap's usage errors, said for this command line: a flag that a command
//! lacks is named with the commands that have it (clap's own tip, "to pass
//! '-Y' as a value, use '-- -Y'", fits a program whose files start with a
//! dash, not a mistyped option). Like [`super::docs`], it reads the
//! clap definitions (`tests/usability.rs` checks what it says).

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
