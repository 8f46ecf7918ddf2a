//! The nearest valid name to a mistyped one (fields, filter values,
//! commands), by edit distance (strsim, as clap suggests).

/// The name of `names` nearest `name`, within an edit distance of 2 (case
/// ignored); the first of equally near ones.
pub(crate) fn nearest<'n>(name: &str, names: impl Iterator<Item = &'n str>) -> Option<&'n str> {
    let lower = name.to_ascii_lowercase();
    names
        // A length gap past 2 is past 2 edits: no quadratic work on it.
        .filter(|n| n.chars().count().abs_diff(name.chars().count()) <= 2)
        .map(|n| (strsim::levenshtein(&n.to_ascii_lowercase(), &lower), n))
        .filter(|&(d, _)| d <= 2)
        .min_by_key(|&(d, _)| d)
        .map(|(_, n)| n)
}

/// When the first file of the default command (`read`) is no file but
/// a word near a command's name (`flow`), the line that says so: a
/// mistyped command, not a capture to read.
pub fn mistyped_command<'n>(
    word: &std::path::Path,
    commands: impl Iterator<Item = &'n str>,
) -> Option<String> {
    let text = word.to_str()?;
    if word.exists() || text.contains(['/', '.', '*', '?', '[']) || text == "-" {
        return None;
    }
    nearest(text, commands).map(|c| {
        format!("no command or file {text:?}: did you mean the command `{c}`? (`raknet-dissect --help` lists them)")
    })
}

#[cfg(test)]
mod tests {
    use super::nearest;

    #[test]
    fn a_word_near_a_command_is_a_mistyped_command() {
        use std::path::Path;
        let commands = || ["flows", "messages", "game"].into_iter();
        let said = super::mistyped_command(Path::new("flow"), commands()).unwrap();
        assert!(said.contains("`flows`"), "{said}");
        assert_eq!(
            super::mistyped_command(Path::new("x.pcap"), commands()),
            None
        );
        assert_eq!(
            super::mistyped_command(Path::new("zzzzzz"), commands()),
            None
        );
        assert_eq!(
            super::mistyped_command(Path::new("src"), ["sr"].into_iter()),
            None
        );
    }

    #[test]
    fn within_two_edits_only() {
        let names = ["flows", "messages", "read"];
        assert_eq!(nearest("flow", names.iter().copied()), Some("flows"));
        assert_eq!(nearest("mesages", names.iter().copied()), Some("messages"));
        assert_eq!(nearest("FLOWS", names.iter().copied()), Some("flows"));
        assert_eq!(nearest("handshake", names.iter().copied()), None);
        assert_eq!(nearest(&"x".repeat(10_000), names.iter().copied()), None);
    }
}
