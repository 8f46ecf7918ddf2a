//! The sections of the man pages that clap cannot generate: the display
//! filter grammar, the exit codes and which commands give them, and the
//! roff they are written in. `raknet-dissect man` puts them after clap's.

/// A piece of a section: a paragraph, preformatted lines, or a tagged
/// paragraph.
pub enum Block<'a> {
    /// A paragraph of running text (`.PP`).
    Para(&'a str),
    /// Lines kept as written (`.nf` … `.fi`).
    Pre(&'a str),
    /// A paragraph under a bold tag (`.TP`): the tag, then the text.
    Item(&'a str, &'a str),
}

/// `text` for roff: backslashes and hyphens escaped, no line taken for a
/// request.
pub(crate) fn roff_text(text: &str) -> String {
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

/// `.SH title` and its blocks, appended to `roff`.
pub fn section(roff: &mut String, title: &str, blocks: &[Block]) {
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

/// The sections a page has after clap's: FILTERS (for a command that takes
/// `-Y`), EXIT STATUS, and COPYRIGHT where embedded data carries a licence
/// (the top page and `game`: minecraft-data's packet names and
/// definitions). `name` is the command, `None` for the top page.
pub fn extra_sections(
    name: Option<&str>,
    filter: bool,
) -> Vec<(&'static str, Vec<Block<'static>>)> {
    let mut out = Vec::new();
    if filter {
        out.push(("FILTERS", FILTERS.iter().map(Block::copy).collect()));
    }
    if name == Some("proxy") {
        // Its `--help` examples, without their heading.
        let e = PROXY_EXAMPLES;
        let lines = e.split_once('\n').map_or(e, |(_, rest)| rest);
        out.push(("EXAMPLES", vec![Block::Pre(lines)]));
    }
    out.push(("EXIT STATUS", exit_status(name, filter)));
    if matches!(name, None | Some("game")) {
        out.push((
            "COPYRIGHT",
            vec![
                Block::Para(
                    "The Bedrock packet names and definitions embedded in this program are \
                     generated from the npm package minecraft-data 3.119.0, under this licence:",
                ),
                Block::Pre(MINECRAFT_DATA_LICENSE),
            ],
        ));
    }
    out
}

/// `proxy --help`'s examples (and its man page's).
pub const PROXY_EXAMPLES: &str = "Examples:
  raknet-dissect proxy --listen 0.0.0.0:19133 --upstream play.example.net:19132 --hide move_player,level_chunk
  raknet-dissect proxy --listen nethernet://0.0.0.0:19133 --upstream raknet://127.0.0.1:19132 -w session.pcapng
  raknet-dissect game session.pcapng      # both legs, decrypted with the keys inside
  raknet-dissect proxy --upstream 127.0.0.1:19132 --once --json | jq -c 'select(.type==\"game\") | [.dir, .name]'
  raknet-dissect proxy --upstream 127.0.0.1:19132 -Y 'name == text' -e dir -e text.message
The upstream must accept offline logins; docs/proxy.md says what is rewritten.";

/// minecraft-data's licence notice, as `src/bedrock/LICENSE-minecraft-data`
/// gives it.
pub(crate) const MINECRAFT_DATA_LICENSE: &str = include_str!("../bedrock/LICENSE-minecraft-data");

impl Block<'_> {
    fn copy(&self) -> Block<'_> {
        match *self {
            Block::Para(t) => Block::Para(t),
            Block::Pre(t) => Block::Pre(t),
            Block::Item(a, b) => Block::Item(a, b),
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
    "game",
    "export",
];

/// Every exit code (`cli`'s module doc), with the commands it applies to.
const EXIT_STATUS: &[(&str, &str, Applies)] = &[
    ("0", "Success, also when a reader closes the pipe early.", Applies::All),
    ("1", "An unexpected error (one line on standard error).", Applies::All),
    ("2", "A usage error: a mistyped command, an option the command does not have, a bad value (an unknown --version, a --keylog with no key line), a missing file name, a --flow the capture does not have.", Applies::All),
    ("3", "The capture file cannot be opened or is not a pcap or pcapng capture (replay: the captured flow never connected).", Applies::To(READERS)),
    ("4", "The display filter (-Y) does not parse: one line on standard error gives the column and why.", Applies::Filter),
    (
        "5",
        "The capture is cut short: everything before the cut was printed, then a warning.",
        Applies::To(&["read", "messages", "flows", "handshake", "game", "stats", "plot", "export"]),
    ),
    (
        "6",
        "No connection: no pong, a handshake refused or unanswered, nothing listening (port unreachable), a peer that timed out.",
        Applies::To(&["ping", "connect", "probe", "replay"]),
    ),
    ("7", "The replay was cut short: the server disconnected or went silent first.", Applies::To(&["replay"])),
    ("8", "Live capture is not permitted (root or CAP_NET_RAW needed).", Applies::To(&["live"])),
    (
        "9",
        "The capture is malformed past some point (a block that cannot be read past, not the end of the file): everything before it was printed, then a warning.",
        Applies::To(&["read", "messages", "flows", "handshake", "game", "stats", "plot", "export"]),
    ),
    (
        "10",
        "connect --bedrock: connected, but the game login did not reach the spawn: refused by PlayStatus (outdated client or server, server full: one line names both protocols), disconnected, or never answered.",
        Applies::To(&["connect"]),
    ),
];

/// The FILTERS section: the -Y grammar (src/display/filter.rs) for people.
pub(crate) const FILTERS: &[Block] = &[
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

/// The exit codes, a line each, for `--help`.
pub fn exit_codes_line() -> String {
    let mut s = String::from("Exit codes:");
    for (code, meaning, _) in EXIT_STATUS {
        s.push_str(&format!("\n  {code}  {meaning}"));
    }
    s
}

/// The EXIT STATUS items of the page of command `name` (every code for the
/// top level's page, `None`); `filter`: whether the command takes `-Y`.
pub(crate) fn exit_status(name: Option<&str>, filter: bool) -> Vec<Block<'static>> {
    EXIT_STATUS
        .iter()
        .filter(|(_, _, which)| {
            name.is_none_or(|name| match which {
                Applies::All => true,
                Applies::Filter => filter,
                Applies::To(names) => names.contains(&name),
            })
        })
        .map(|(code, meaning, _)| Block::Item(code, meaning))
        .collect()
}

/// The bash script with its subcommands' cases named as its loop names
/// them. clap_complete (4.6.11, the latest) builds the state `cmd` from the
/// binary name with `-` turned into `__` (`raknet__dissect__subcmd__read`),
/// but labels the cases with every `-` turned into `__subcmd__`
/// (`raknet__subcmd__dissect__subcmd__read`), so no subcommand's options
/// ever complete (clap issue 6421). Nothing changes once that is fixed.
pub fn bash_fixed(script: &str, bin: &str) -> String {
    let right = format!("{}__subcmd__", bin.replace('-', "__"));
    let wrong = format!("{}__subcmd__", bin.replace('-', "__subcmd__"));
    if right == wrong {
        return script.to_string();
    }
    script.replace(&wrong, &right)
}

/// The command tree `root`, built (so that subcommands know their full
/// names), without the `help` subcommand, which has no page.
pub fn built(root: clap::Command) -> clap::Command {
    let mut root = root.disable_help_subcommand(true);
    root.build();
    root
}

/// The subcommands that have a page.
pub fn subcommands(root: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    root.get_subcommands().filter(|c| !c.is_hide_set())
}

/// The completion script of `shell` for `root`, as binary `bin`.
pub fn completions(mut root: clap::Command, shell: clap_complete::Shell, bin: &str) -> String {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut root, bin, &mut script);
    let script = String::from_utf8_lossy(&script).into_owned();
    match shell {
        clap_complete::Shell::Bash => bash_fixed(&script, bin),
        _ => script,
    }
}

/// Every page of `root` (built): its file name and text.
pub fn pages(root: &clap::Command, bin: &str) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    std::iter::once(root)
        .chain(subcommands(root))
        .map(|cmd| {
            let mut page = Vec::new();
            render(cmd, root, bin, &mut page)?;
            Ok((clap_mangen::Man::new(cmd.clone()).get_filename(), page))
        })
        .collect()
}

/// One page of `cmd` (of `root`, built; binary `bin`): clap_mangen's
/// sections, then FILTERS (commands with -Y), EXIT STATUS and SEE ALSO.
pub fn render(
    cmd: &clap::Command,
    root: &clap::Command,
    bin: &str,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let version = root.get_version().unwrap_or_default();
    let man = clap_mangen::Man::new(cmd.clone()).source(format!("{bin} {version}"));
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
    let filter = cmd.get_arguments().any(|a| a.get_id() == "filter");
    for (title, blocks) in extra_sections(which, filter) {
        section(&mut roff, title, &blocks);
    }
    let see_also: Vec<String> = if std::ptr::eq(cmd, root) {
        subcommands(root)
            .map(|c| format!("{bin}-{}(1)", c.get_name()))
            .collect()
    } else {
        vec![format!("{bin}(1)")]
    };
    section(&mut roff, "SEE ALSO", &[Block::Para(&see_also.join(", "))]);
    out.write_all(roff.as_bytes())?;
    if cmd.get_version().is_some() {
        man.render_version_section(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_cases_are_named_as_the_loop_names_them() {
        let script = "    case \"${cmd}\" in\n        raknet__subcmd__dissect__subcmd__messages)\n";
        let fixed = bash_fixed(script, "raknet-dissect");
        assert!(fixed.contains("        raknet__dissect__subcmd__messages)\n"));
        assert!(!fixed.contains("raknet__subcmd__dissect"));
        assert_eq!(bash_fixed("a__subcmd__b", "ab"), "a__subcmd__b");
    }

    #[test]
    fn roff_escapes() {
        assert_eq!(roff_text(".x -Y a\\b\n'q"), "\\&.x \\-Y a\\eb\n\\&'q");
    }

    #[test]
    fn exit_codes_go_to_the_commands_that_give_them() {
        let codes = |name, filter| -> Vec<&str> {
            exit_status(name, filter)
                .iter()
                .map(|b| match b {
                    Block::Item(code, _) => *code,
                    _ => "?",
                })
                .collect()
        };
        assert_eq!(codes(None, false).len(), 11);
        assert_eq!(codes(Some("ping"), false), ["0", "1", "2", "6"]);
        assert_eq!(codes(Some("connect"), false), ["0", "1", "2", "6", "10"]);
        assert_eq!(
            codes(Some("read"), true),
            ["0", "1", "2", "3", "4", "5", "9"]
        );
        assert_eq!(codes(Some("live"), true), ["0", "1", "2", "4", "8"]);
    }
}
