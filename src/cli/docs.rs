//! `completions SHELL` and `man [COMMAND | --all DIR]`: shell completion
//! scripts and man pages generated from the clap definitions, with what the
//! generators get wrong put right (bash, for a binary name with a hyphen)
//! and what they cannot know added (the filter grammar, the exit codes).

use std::io::Write;
use std::path::Path;

use clap::CommandFactory;
use clap_complete::Shell;
use clap_mangen::Man;

use super::{Cli, EXIT_OK, EXIT_USAGE};

/// The binary's name, as completions and man pages spell it.
const BIN: &str = "raknet-dissect";

/// `completions SHELL`: the script on `out`.
pub fn completions(shell: Shell, out: &mut impl Write) -> anyhow::Result<u8> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), BIN, &mut script);
    let script = String::from_utf8(script)?;
    let script = match shell {
        Shell::Bash => bash_fixed(&script, BIN),
        _ => script,
    };
    out.write_all(script.as_bytes())?;
    Ok(EXIT_OK)
}

/// The bash script with its subcommands' cases named as its loop names
/// them. clap_complete (4.6.11, the latest) builds the state `cmd` from the
/// binary name with `-` turned into `__` (`raknet__dissect__subcmd__read`),
/// but labels the cases with every `-` turned into `__subcmd__`
/// (`raknet__subcmd__dissect__subcmd__read`), so no subcommand's options
/// ever complete (clap issue 6421). Nothing changes once that is fixed.
fn bash_fixed(script: &str, bin: &str) -> String {
    let right = format!("{}__subcmd__", bin.replace('-', "__"));
    let wrong = format!("{}__subcmd__", bin.replace('-', "__subcmd__"));
    if right == wrong {
        return script.to_string();
    }
    script.replace(&wrong, &right)
}

/// `man`: the top level's page, `COMMAND`'s (`raknet-dissect-COMMAND(1)`),
/// or with `all` every page written into that directory.
pub fn man(command: Option<&str>, all: Option<&Path>, out: &mut impl Write) -> anyhow::Result<u8> {
    let root = built();
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
fn built() -> clap::Command {
    let mut root = Cli::command().disable_help_subcommand(true);
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
    if takes_filter(cmd) {
        section(&mut roff, "FILTERS", FILTERS);
    }
    let name = cmd.get_name();
    let codes: Vec<Block> = EXIT_STATUS
        .iter()
        .filter(|(_, _, which)| {
            std::ptr::eq(cmd, root)
                || match which {
                    Applies::All => true,
                    Applies::Filter => takes_filter(cmd),
                    Applies::To(names) => names.contains(&name),
                }
        })
        .map(|(code, meaning, _)| Block::Item(code, meaning))
        .collect();
    section(&mut roff, "EXIT STATUS", &codes);
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

/// A piece of a section: a paragraph, preformatted lines, or a tagged
/// paragraph.
enum Block<'a> {
    Para(&'a str),
    Pre(&'a str),
    Item(&'a str, &'a str),
}

/// `text` for roff: backslashes and hyphens escaped, no line taken for a
/// request.
fn roff_text(text: &str) -> String {
    text.lines()
        .map(|l| {
            let l = l.replace('\\', "\\e").replace('-', "\\-");
            if l.starts_with('.') || l.starts_with('\'') {
                format!("\\&{l}")
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn section(roff: &mut String, title: &str, blocks: &[Block]) {
    roff.push_str(&format!(".SH \"{title}\"\n"));
    for b in blocks {
        match b {
            Block::Para(t) => roff.push_str(&format!(".PP\n{}\n", roff_text(t))),
            Block::Pre(t) => roff.push_str(&format!(".PP\n.nf\n{}\n.fi\n", roff_text(t))),
            Block::Item(tag, t) => roff.push_str(&format!(
                ".TP\n\\fB{}\\fR\n{}\n",
                roff_text(tag),
                roff_text(t)
            )),
        }
    }
}

/// The commands an exit code applies to.
enum Applies {
    All,
    /// Those that take `-Y`.
    Filter,
    To(&'static [&'static str]),
}

/// Commands that read a capture file.
const READERS: &[&str] = &[
    "read",
    "messages",
    "flows",
    "handshake",
    "stats",
    "plot",
    "replay",
];

/// Every exit code (`cli`'s module doc), with the commands it applies to.
const EXIT_STATUS: &[(&str, &str, Applies)] = &[
    ("0", "Success, also when a reader closes the pipe early.", Applies::All),
    ("1", "An unexpected error (one line on standard error).", Applies::All),
    ("2", "A usage error: an unknown option, a bad value, a missing file name.", Applies::All),
    ("3", "The capture file cannot be opened or is not a pcap or pcapng capture.", Applies::To(READERS)),
    ("4", "The display filter (-Y) does not parse: one line on standard error gives the column and why.", Applies::Filter),
    (
        "5",
        "The capture is cut short: everything before the cut was printed, then a warning.",
        Applies::To(&["read", "messages", "flows", "handshake", "stats", "plot"]),
    ),
    (
        "6",
        "No connection: no pong, a handshake refused or unanswered, nothing listening (port unreachable), a peer that timed out.",
        Applies::To(&["ping", "connect", "probe", "replay"]),
    ),
    ("7", "The replay was cut short: the server disconnected or went silent first.", Applies::To(&["replay"])),
    ("8", "Live capture is not permitted (root or CAP_NET_RAW needed).", Applies::To(&["live"])),
];

/// The FILTERS section: the -Y grammar (src/display/filter.rs) for people.
const FILTERS: &[Block] = &[
    Block::Para(
        "-Y EXPR (also --filter) prints only the records that pass. Field names are the \
         NDJSON keys of the records (packet, message, flow, handshake); `raknet-dissect \
         fields` lists them with their types, and tshark's names for the same things: \
         frame.number, frame.time_relative, frame.time_epoch, ip.src, ip.dst, ip.addr, \
         udp.srcport, udp.dstport, udp.port.",
    ),
    Block::Pre(
        "expr  = expr || expr | expr && expr | ! expr | ( expr ) | test\n\
         test  = FIELD\n\
        \x20     | FIELD == != < <= > >= VALUE\n\
        \x20     | FIELD contains VALUE\n\
        \x20     | FIELD [not] in { ITEM [,] ITEM ... }     ITEM = VALUE | VALUE..VALUE\n\
        \x20     | FIELD matches \"REGEX\"   (also ~)\n\
         VALUE = 42 | 0x2a | 1.5 | \"text\" | r\"raw text\" | word | 127.0.0.1 | 10.0.0.0/8",
    ),
    Block::Item(
        "FIELD",
        "Holds when the record has the field; a bool field when it is true; anomalies and \
         frames when there is at least one.",
    ),
    Block::Item(
        "==, !=, <, <=, >, >=",
        "Numbers are decimal or 0x hex; strings compare byte by byte; GUIDs as numbers; \
         bytes (payload, data) take hex digits; ranges == N holds for an ACK or NACK that \
         covers datagram N; ip.src and the other addresses take an address or, with == and \
         !=, a network. A test holds when it holds for any value of the field (frames' \
         values, anomalies), as in tshark. a != b is !(a == b), so it holds when the field \
         is absent. Also eq, ne, lt, le, gt, ge; and, or, not.",
    ),
    Block::Item(
        "contains",
        "A substring of a string, or hex bytes within bytes.",
    ),
    Block::Item(
        "in {...}",
        "Holds when a value equals an item of the set, or lies within one of its ranges lo..hi \
         (both ends included; for ACK ranges, shares a datagram with it). Items are separated \
         by spaces or commas. not in {...} is !(... in {...}).",
    ),
    Block::Item(
        "matches, ~",
        "A regular expression (the regex-lite crate's syntax, like tshark's PCRE2 for what \
         filters use, without look-around and backreferences), on a string field or on the \
         bytes of a bytes field, one character per byte. Case-insensitive by default, as in \
         tshark; (?-i) makes it case-sensitive. In \"...\" a backslash is written \\\\; \
         r\"...\" takes it as it is. At most 512 characters; matching takes time linear in \
         the text.",
    ),
    Block::Para("Examples:"),
    Block::Pre(
        "raknet-dissect capture.pcap -Y 'kind == nack'\n\
         raknet-dissect capture.pcap -Y 'id in {0x05 0x07} && udp.dstport in {19132 19133}'\n\
         raknet-dissect capture.pcap -Y 'ip.src == 10.0.0.0/8 && frame.time_relative > 30'\n\
         raknet-dissect capture.pcap -Y 'motd.motd matches \"^my server\"'\n\
         raknet-dissect messages capture.pcap -Y 'data ~ r\"^\\xfe\\x06\"'\n\
         raknet-dissect flows capture.pcap -Y 'c2s.lost > 0 || rtt_ms.median > 50'",
    ),
    Block::Para(
        "-T fields -e FIELD ... prints the named fields, one line per record, as tshark does. \
         A filter that does not parse exits with 4.",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_cases_are_named_as_the_loop_names_them() {
        let mut script = Vec::new();
        clap_complete::generate(Shell::Bash, &mut Cli::command(), BIN, &mut script);
        let script = String::from_utf8(script).unwrap();
        let fixed = bash_fixed(&script, BIN);
        assert!(fixed.contains("        raknet__dissect__subcmd__messages)\n"));
        assert!(!fixed.contains("raknet__subcmd__dissect"));
        assert_eq!(bash_fixed("a__subcmd__b", "ab"), "a__subcmd__b");
    }

    #[test]
    fn every_page_has_its_sections() {
        let root = built();
        for cmd in std::iter::once(&root).chain(subcommands(&root)) {
            let mut page = Vec::new();
            render(cmd, &root, &mut page).unwrap();
            let page = String::from_utf8(page).unwrap();
            let title = Man::new(cmd.clone()).get_filename();
            let title = title.trim_end_matches(".1");
            assert!(page.contains(&format!("\n.TH {title} 1 ")), "{page}");
            assert!(page.contains(".SH \"EXIT STATUS\""), "{title}");
            assert_eq!(
                page.contains(".SH \"FILTERS\""),
                takes_filter(cmd),
                "{title}"
            );
        }
        for name in ["read", "messages", "flows", "handshake", "live"] {
            let cmd = subcommands(&root).find(|c| c.get_name() == name).unwrap();
            assert!(takes_filter(cmd), "{name}");
        }
    }

    #[test]
    fn roff_escapes() {
        assert_eq!(roff_text(".x -Y a\\b\n'q"), "\\&.x \\-Y a\\eb\n\\&'q");
    }
}
