//! End-to-end tests of `raknet-dissect FILE` on the bundled real-peer samples:
//! every RakNet packet shown, none malformed, the output modes, and bad input.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

mod common;

use common::{bin, run_bin as run};

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 output")
}

fn sample(name: &str) -> String {
    common::sample(name).to_string_lossy().into_owned()
}

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli");
    std::fs::create_dir_all(&dir).expect("tmp dir");
    dir.join(name)
}

/// A pcap record: its 16-byte header and its data.
type Record = ([u8; 16], Vec<u8>);

/// The records of a classic little-endian pcap, after its 24-byte header.
fn pcap_records(bytes: &[u8]) -> (Vec<u8>, Vec<Record>) {
    assert_eq!(
        &bytes[..4],
        &[0xd4, 0xc3, 0xb2, 0xa1],
        "little-endian µs pcap"
    );
    let mut recs = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let mut h = [0u8; 16];
        h.copy_from_slice(&bytes[at..at + 16]);
        let incl = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
        recs.push((h, bytes[at + 16..at + 16 + incl].to_vec()));
        at += 16 + incl;
    }
    (bytes[..24].to_vec(), recs)
}

fn write_pcap(path: &Path, header: &[u8], recs: &[Record]) {
    let mut f = std::fs::File::create(path).expect("create pcap");
    f.write_all(header).unwrap();
    for (h, d) in recs {
        let mut h = *h;
        h[8..12].copy_from_slice(&(d.len() as u32).to_le_bytes());
        f.write_all(&h).unwrap();
        f.write_all(d).unwrap();
    }
}

#[test]
fn every_sample_is_dissected_without_malformed_packets() {
    let files = common::sample_captures();
    assert!(files.len() >= 4, "samples: {files:?}");
    for f in files {
        let f = f.to_string_lossy();
        let o = run(&[&f, "--json"]);
        assert!(
            o.status.success(),
            "{f}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let out = stdout(&o);
        let mut frames = Vec::new();
        let mut icmp = 0;
        for line in out.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("each line is JSON");
            if v["type"] == "icmp" {
                icmp += 1;
                continue;
            }
            assert_eq!(v["type"], "packet");
            for a in v["anomalies"].as_array().expect("anomalies list") {
                assert_ne!(a["kind"], "malformed", "{f}: {line}");
            }
            frames.push(v["frame"].as_u64().expect("frame number"));
        }
        assert!(frames.len() >= 2, "{f}: {} packets", frames.len());
        assert!(
            frames.windows(2).all(|w| w[0] < w[1]),
            "{f}: frames in order"
        );
        let text = stdout(&run(&[&f]));
        assert_eq!(
            text.lines().count(),
            frames.len() + icmp,
            "{f}: one line per packet and per ICMP error"
        );
        assert!(!text.contains("malformed"), "{f}");
    }
}

#[test]
fn handshake_sample_shows_the_whole_connection() {
    let out = stdout(&run(&[&sample("handshake.pcap")]));
    for needle in [
        "ID_UNCONNECTED_PING",
        "ID_UNCONNECTED_PONG",
        "ID_OPEN_CONNECTION_REQUEST_1 protocol=6 mtu=1492",
        "ID_OPEN_CONNECTION_REPLY_1",
        "ID_OPEN_CONNECTION_REQUEST_2",
        "ID_OPEN_CONNECTION_REPLY_2",
        "ID_CONNECTION_REQUEST ",
        "ID_CONNECTION_REQUEST_ACCEPTED",
        "ID_NEW_INCOMING_CONNECTION",
        "RELIABLE_ORDERED",
        "UNRELIABLE_SEQUENCED",
        "RELIABLE_SEQUENCED",
        "split 1/",
        "ACK ",
        "ID_DISCONNECTION_NOTIFICATION",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
    for ch in ["ch=0", "ch=1", "ch=5", "ch=31"] {
        assert!(out.contains(ch), "channel {ch}");
    }
}

#[test]
fn read_spellings_and_stdin_agree() {
    let f = sample("handshake.pcap");
    let plain = stdout(&run(&[&f]));
    assert_eq!(stdout(&run(&["-r", &f])), plain);
    assert_eq!(stdout(&run(&["read", &f])), plain);
    let mut child = bin()
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let bytes = std::fs::read(&f).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || stdin.write_all(&bytes));
    let o = child.wait_with_output().unwrap();
    feeder.join().unwrap().unwrap();
    assert_eq!(stdout(&o), plain);
}

#[test]
fn count_verbose_hex_and_json_modes() {
    let f = sample("handshake.pcap");
    assert_eq!(stdout(&run(&[&f, "-c", "5"])).lines().count(), 5);
    assert_eq!(stdout(&run(&[&f, "-c", "3", "--json"])).lines().count(), 3);
    let v = stdout(&run(&[&f, "-V"]));
    for needle in [
        "datagram number",
        "capsule flags",
        "reliable index",
        "magic",
        "mtu padding",
    ] {
        assert!(v.contains(needle), "-V lacks {needle}");
    }
    let x = stdout(&run(&[&f, "-x", "-c", "1"]));
    assert!(x.contains("  0000  "), "{x}");
    let first: serde_json::Value =
        serde_json::from_str(stdout(&run(&[&f, "--json"])).lines().next().unwrap()).unwrap();
    for key in [
        "type",
        "frame",
        "ts",
        "src",
        "dst",
        "flow",
        "dir",
        "kind",
        "anomalies",
    ] {
        assert!(
            first.get(key).is_some(),
            "packet record lacks {key}: {first}"
        );
    }
}

#[test]
fn color_follows_the_choice() {
    let f = sample("handshake.pcap");
    assert!(stdout(&run(&[&f, "--color", "always"])).contains("\x1b["));
    assert!(!stdout(&run(&[&f, "--color", "never"])).contains("\x1b["));
    // auto: stdout is a pipe here
    assert!(!stdout(&run(&[&f])).contains("\x1b["));
    let o = bin()
        .args([&f, "--color", "auto"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(!stdout(&o).contains("\x1b["));
}

#[test]
fn unreadable_and_foreign_files_fail_with_one_line_and_code_3() {
    let o = run(&["/nonexistent/capture.pcap"]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    let o = run(&[&format!("{}/Cargo.toml", env!("CARGO_MANIFEST_DIR"))]);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&o.stderr).lines().count(), 1);
    let empty = tmp("empty.pcap");
    std::fs::write(&empty, b"").unwrap();
    assert_eq!(run(&[&empty.to_string_lossy()]).status.code(), Some(3));
}

#[test]
fn a_capture_cut_short_prints_what_was_there_then_warns() {
    let f = sample("handshake.pcap");
    let bytes = std::fs::read(&f).unwrap();
    let full = stdout(&run(&[&f]));
    let cut = tmp("cut.pcap");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let o = run(&[&cut.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(5));
    let got = stdout(&o);
    assert!(got.lines().count() > 10);
    assert!(
        full.starts_with(&got),
        "the lines before the cut are the same"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("warning"), "{err}");
}

#[test]
fn mid_connection_flows_need_heuristics_or_a_port() {
    let f = sample("handshake.pcap");
    let (header, recs) = pcap_records(&std::fs::read(&f).unwrap());
    // Drop everything before the first data datagram (offline messages have ids < 0x80).
    let json = stdout(&run(&[&f, "--json"]));
    let first_data = json
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["kind"] == "data")
        .expect("a data datagram");
    let port = first_data["dst"]
        .as_str()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    let from = first_data["frame"].as_u64().unwrap() as usize;
    let mid = tmp("mid.pcap");
    write_pcap(&mid, &header, &recs[from - 1..]);
    let mid = mid.to_string_lossy();
    let heuristic = stdout(&run(&[&mid]));
    assert!(heuristic.lines().count() > 20, "{heuristic}");
    assert!(!heuristic.contains("malformed"));
    assert_eq!(stdout(&run(&[&mid, "--no-heuristics"])).lines().count(), 0);
    let forced = stdout(&run(&[
        &mid,
        "--no-heuristics",
        "-d",
        &format!("udp.port=={port},raknet"),
    ]));
    assert_eq!(forced.lines().count(), heuristic.lines().count());
    let forced2 = stdout(&run(&[&mid, "--no-heuristics", "-d", &port]));
    assert_eq!(forced2, forced);
}

#[test]
fn snaplen_cuts_are_truncated_not_malformed() {
    let f = sample("handshake.pcap");
    let (header, recs) = pcap_records(&std::fs::read(&f).unwrap());
    let mut header = header;
    header[16..20].copy_from_slice(&80u32.to_le_bytes());
    let cut: Vec<_> = recs
        .into_iter()
        .map(|(h, d)| (h, d[..d.len().min(80)].to_vec()))
        .collect();
    let path = tmp("snap80.pcap");
    write_pcap(&path, &header, &cut);
    let o = run(&[&path.to_string_lossy(), "--json"]);
    assert!(o.status.success());
    let out = stdout(&o);
    assert!(out.contains("\"truncated\""), "{out}");
    assert!(!out.contains("\"malformed\""), "{out}");
}

/// The `handshake` records of a sample, as JSON values.
fn handshakes(name: &str) -> Vec<serde_json::Value> {
    let o = run(&["handshake", &sample(name), "--json"]);
    assert!(o.status.success(), "{o:?}");
    stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON record per line"))
        .collect()
}

#[test]
fn handshake_outcomes_of_the_samples() {
    // Each sample was made by real peers doing exactly this (samples/README.md).
    let cases = [
        ("handshake.pcap", "disconnected_by_client"),
        ("lossy.pcap", "disconnected_by_client"),
        ("incompatible-protocol.pcap", "incompatible_protocol"),
        ("server-full.pcap", "no_free_incoming_connections"),
        ("no-server.pcap", "port_unreachable"),
    ];
    for (name, outcome) in cases {
        let records = handshakes(name);
        let last = records.last().expect("an attempt");
        assert_eq!(last["type"], "handshake");
        assert_eq!(last["outcome"], outcome, "{name}: {last}");
        assert!(last["diagnosis"].as_str().is_some_and(|d| !d.is_empty()));
    }
    let hs = &handshakes("handshake.pcap")[0];
    let steps: Vec<&str> = hs["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["step"].as_str().expect("a step name"))
        .collect();
    assert_eq!(
        steps,
        [
            "unconnected_ping",
            "unconnected_pong",
            "open_connection_request_1",
            "open_connection_reply_1",
            "open_connection_request_2",
            "open_connection_reply_2",
            "connection_request",
            "connection_request_acked",
            "connection_request_accepted",
            "new_incoming_connection",
            "first_data",
            "disconnection_notification",
        ]
    );
    let bad = &handshakes("incompatible-protocol.pcap")[0];
    assert_eq!(
        (
            bad["client_protocol"].as_u64(),
            bad["server_protocol"].as_u64()
        ),
        (Some(7), Some(6))
    );
    // ICMP errors are events of the flow they quote, not packets: four
    // probes, each answered by a port unreachable, on lines of their own
    // (the frames tshark shows as ICMP).
    let none = &handshakes("no-server.pcap")[0];
    assert_eq!(
        none["mtu_probes"],
        serde_json::json!([1492, 1200, 576, 576])
    );
    let o = run(&[&sample("no-server.pcap")]);
    let lines = stdout(&o);
    let icmp: Vec<&str> = lines.lines().filter(|l| l.contains(" ICMP ")).collect();
    assert_eq!(lines.lines().count(), 8, "{lines}");
    assert_eq!(icmp.len(), 4, "{lines}");
    assert!(icmp.iter().all(|l| l.contains(
        "127.0.0.1 → 127.0.0.1:19157         1 s2c ICMP port unreachable for 127.0.0.1:19157 → 127.0.0.1:19158"
    )), "{lines}");
    let frames: Vec<&str> = icmp
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(frames, ["3", "5", "7", "9"]);
    let o = run(&[&sample("no-server.pcap"), "--json"]);
    let records: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .filter(|v: &serde_json::Value| v["type"] == "icmp")
        .collect();
    assert_eq!(records.len(), 4);
    assert_eq!(records[0]["kind"], "port_unreachable");
    assert_eq!(records[0]["datagram"]["dir"], "c2s");
    assert_eq!(records[0]["datagram"]["dst"], "127.0.0.1:19158");
    // Not under a filter, which chooses among packets.
    let o = run(&[&sample("no-server.pcap"), "-Y", "flow == 1"]);
    assert_eq!(stdout(&o).lines().count(), 4);
    // Minecraft pairs: a pinging flow and a connecting one.
    let mc = handshakes("minecraft.pcap");
    let outcomes: Vec<&str> = mc
        .iter()
        .map(|r| r["outcome"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(outcomes, ["pinged", "disconnected_by_client"]);
}

#[test]
fn completions_and_man_page_come_from_the_clap_definitions() {
    let o = run(&["completions", "bash"]);
    assert!(o.status.success(), "{o:?}");
    let bash = stdout(&o);
    for sub in [
        "read",
        "messages",
        "flows",
        "handshake",
        "ping",
        "connect",
        "serve",
        "probe",
        "replay",
        "live",
    ] {
        assert!(bash.contains(sub), "bash completion lacks {sub}");
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = run(&["completions", shell]);
        assert!(o.status.success() && !o.stdout.is_empty(), "{shell}: {o:?}");
    }
    let o = run(&["completions", "tcsh"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
    let o = run(&["man"]);
    assert!(o.status.success());
    let man = stdout(&o);
    assert!(
        man.contains(".TH raknet-dissect 1"),
        "{}",
        &man[..200.min(man.len())]
    );
    for sub in ["replay", "live", "probe"] {
        assert!(
            man.contains(&format!("raknet\\-dissect\\-{sub}(1)")),
            "man page lacks {sub}"
        );
    }
}

/// What bash completes for the words `line` (the last one being completed),
/// with the script sourced into a bash without start-up files.
fn bash_completes(script: &Path, line: &[&str]) -> Vec<String> {
    let words: Vec<String> = line.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "source '{}' || exit 9\n\
         f=$(complete -p raknet-dissect | sed -n 's/.* -F \\([^ ]*\\) .*/\\1/p')\n\
         [ -n \"$f\" ] || exit 8\n\
         COMP_WORDS=({})\n\
         COMP_CWORD={}\n\
         COMP_LINE=\"${{COMP_WORDS[*]}}\"\n\
         COMP_POINT=${{#COMP_LINE}}\n\
         \"$f\" raknet-dissect \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        words.join(" "),
        line.len() - 1
    );
    let o = common::run_with_timeout(
        std::process::Command::new("bash").args(["--norc", "--noprofile", "-c", &program]),
        std::time::Duration::from_secs(30),
    );
    assert!(o.status.success(), "bash: {o:?}");
    stdout(&o).lines().map(String::from).collect()
}

#[test]
fn bash_completes_subcommands_and_their_flags() {
    if !common::require_tool("bash") {
        return;
    }
    let path = tmp("raknet-dissect.bash");
    std::fs::write(&path, stdout(&run(&["completions", "bash"]))).expect("write completion");
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .status()
        .expect("bash runs");
    assert!(check.success(), "bash -n rejects the completion script");
    let flags = bash_completes(&path, &["raknet-dissect", "messages", "--"]);
    for f in [
        "--json",
        "--flow",
        "--channel",
        "--dir",
        "--data-limit",
        "--filter",
    ] {
        assert!(flags.iter().any(|x| x == f), "messages --<TAB>: {flags:?}");
    }
    assert!(
        !flags.iter().any(|x| x == "--verbose"),
        "read's flag: {flags:?}"
    );
    assert_eq!(bash_completes(&path, &["raknet-dissect", "fl"]), ["flows"]);
    let mut read = bash_completes(&path, &["raknet-dissect", "read", "--c"]);
    read.sort();
    assert_eq!(read, ["--color", "--colour", "--count"]);
    let mut formats = bash_completes(&path, &["raknet-dissect", "read", "-t", "a"]);
    formats.sort();
    assert_eq!(formats, ["a", "ad"]);
    let live = bash_completes(&path, &["raknet-dissect", "live", "--inter"]);
    assert_eq!(live, ["--interface"]);
}

#[test]
fn a_man_page_per_command_with_filters_and_exit_status() {
    let o = run(&["man", "read"]);
    assert!(o.status.success(), "{o:?}");
    let read = stdout(&o);
    assert!(read.contains(".TH raknet-dissect-read 1"), "{read}");
    for section in [".SH \"EXIT STATUS\"", ".SH \"FILTERS\"", ".SH \"SEE ALSO\""] {
        assert!(read.contains(section), "man read lacks {section}");
    }
    let ping = stdout(&run(&["man", "ping"]));
    assert!(ping.contains(".TH raknet-dissect-ping 1"));
    assert!(ping.contains(".SH \"EXIT STATUS\"") && !ping.contains(".SH \"FILTERS\""));
    assert!(
        ping.contains("\\fB6\\fR") && !ping.contains("\\fB3\\fR"),
        "{ping}"
    );
    let o = run(&["man", "nosuch"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("read, messages"));
    // --all: every page, each named as the others refer to it.
    let dir = tmp("man");
    let _ = std::fs::remove_dir_all(&dir);
    let o = run(&["man", "--all", &dir.to_string_lossy()]);
    assert!(o.status.success(), "{o:?}");
    let top = std::fs::read_to_string(dir.join("raknet-dissect.1")).expect("top page");
    let mut pages = 0;
    for sub in [
        "read",
        "messages",
        "flows",
        "handshake",
        "live",
        "ping",
        "replay",
        "man",
    ] {
        let page = dir.join(format!("raknet-dissect-{sub}.1"));
        let text = std::fs::read_to_string(&page).expect("a page per command");
        assert!(text.contains(&format!(".TH raknet-dissect-{sub} 1")));
        assert!(
            top.contains(&format!("raknet\\-dissect\\-{sub}(1)")),
            "{sub}"
        );
        pages += 1;
    }
    assert_eq!(pages, 8);
    assert_eq!(
        stdout(&o).lines().count(),
        std::fs::read_dir(&dir).unwrap().count()
    );
    // Every page: its title, EXIT STATUS, FILTERS exactly where -Y is, the
    // licence of the embedded data on the top page and game's.
    let filters = [
        "raknet-dissect",
        "read",
        "messages",
        "flows",
        "handshake",
        "live",
        "game",
        "proxy",
    ];
    for entry in std::fs::read_dir(&dir).expect("pages") {
        let page = entry.expect("a page").path();
        let text = std::fs::read_to_string(&page).expect("a page");
        let title = page.file_stem().unwrap().to_string_lossy().into_owned();
        let name = title.strip_prefix("raknet-dissect-").unwrap_or(&title);
        assert!(text.contains(&format!("\n.TH {title} 1 ")), "{title}");
        assert!(text.contains(".SH \"EXIT STATUS\""), "{title}");
        let licensed = matches!(name, "raknet-dissect" | "game");
        let licence = text.contains("Permission is hereby granted");
        assert_eq!(
            licence, licensed,
            "{title}: the licence where data needs it"
        );
        if name == "proxy" {
            assert!(
                text.contains(".SH \"EXAMPLES\"") && text.contains("nethernet://"),
                "{title}: its examples"
            );
        }
        let filter = text.contains(".SH \"FILTERS\"");
        assert_eq!(
            filter,
            filters.contains(&name),
            "{title}: FILTERS where -Y is"
        );
    }
    // They render, without a warning from groff.
    if !common::require_tool("groff") {
        return;
    }
    // Plain text: no bold (overstrike or SGR), no underline.
    let render = |page: &Path| {
        let o = std::process::Command::new("groff")
            .args(["-man", "-Tascii", "-ww", "-P-c", "-P-b", "-P-u"])
            .arg(page)
            .output()
            .expect("groff runs");
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(
            o.status.success() && err.is_empty(),
            "{}: {err}",
            page.display()
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    for entry in std::fs::read_dir(&dir).expect("pages") {
        let page = entry.expect("a page").path();
        let text = render(&page);
        assert!(text.contains("EXIT STATUS"), "{}:\n{text}", page.display());
    }
    let text = render(&dir.join("raknet-dissect-read.1"));
    for needle in [
        "FILTERS",
        "EXIT STATUS",
        "matches, ~",
        "frame.time_relative",
        "-t <FORMAT>",
    ] {
        assert!(
            text.contains(needle),
            "rendered read page lacks {needle}:\n{text}"
        );
    }
}

#[test]
fn quiet_prints_no_packets() {
    let o = run(&[&sample("lossy.pcap"), "-q"]);
    assert!(o.status.success(), "{o:?}");
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
    // Without -q the same file prints a line per packet.
    assert!(stdout(&run(&[&sample("lossy.pcap")])).lines().count() > 100);
    let o = run(&[&sample("lossy.pcap"), "-q", "--json", "-V", "-x"]);
    assert!(o.status.success() && o.stdout.is_empty());
}

/// The README's `console` blocks: `$ ` lines are commands (run by sh from
/// the repository, with the built binary first on PATH), the lines after
/// them their exact output.
#[test]
fn readme_console_examples_print_what_the_readme_says() {
    if !common::require_tool("jq") {
        return;
    }
    let readme = std::fs::read_to_string(common::root().join("README.md")).expect("README.md");
    let mut examples: Vec<(String, String)> = Vec::new();
    let mut in_block = false;
    for line in readme.lines() {
        if line.starts_with("```console") {
            in_block = true;
        } else if in_block && line.starts_with("```") {
            in_block = false;
        } else if in_block {
            match line.strip_prefix("$ ") {
                Some(cmd) => examples.push((cmd.to_string(), String::new())),
                None => {
                    let (_, out) = examples.last_mut().expect("output after a command");
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
    }
    assert!(examples.len() >= 5, "the README's jq examples");
    let bin_dir = common::bin_path().parent().expect("a directory").to_owned();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (cmd, want) in examples {
        let o = common::run_with_timeout(
            std::process::Command::new("sh")
                .args(["-c", &cmd])
                .env("PATH", &path)
                .current_dir(common::root()),
            std::time::Duration::from_secs(30),
        );
        assert!(o.status.success(), "{cmd}: {o:?}");
        assert_eq!(stdout(&o), want, "README example: {cmd}");
    }
}

/// A capture of 17 MB: the records of `lossy.pcap` 260 times over.
fn big_capture(work: &common::Work) -> PathBuf {
    let d = std::fs::read(sample("lossy.pcap")).expect("lossy.pcap");
    let mut big = d[..24].to_vec();
    for _ in 0..260 {
        big.extend_from_slice(&d[24..]);
    }
    let path = work.file("big.pcap");
    std::fs::write(&path, big).expect("write big.pcap");
    path
}

/// `script` gives the command a terminal; what the terminal showed comes
/// back on script's standard output.
fn on_a_terminal(shell_command: &str) -> String {
    let o = common::run_with_timeout(
        std::process::Command::new("script").args(["-qefc", shell_command, "/dev/null"]),
        std::time::Duration::from_secs(60),
    );
    assert!(o.status.success(), "{shell_command}: {o:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn progress_bar_only_on_a_terminal_and_not_over_packet_lines() {
    if !common::require_tool("script") {
        return;
    }
    let work = common::Work::new("progress");
    let big = big_capture(&work);
    let bin = common::bin_path();
    let (bin, big) = (bin.display(), big.display());
    // stderr a terminal, stdout a file: the bar, then cleared.
    let shown = on_a_terminal(&format!("{bin} read {big} > /dev/null"));
    assert!(
        shown.contains("reading ") && shown.contains("16.76 MiB"),
        "{shown:?}"
    );
    assert!(shown.contains("\u{1b}[2K"), "the bar is cleared: {shown:?}");
    // A command that prints only at the end keeps the bar on a shared terminal.
    let shown = on_a_terminal(&format!("{bin} flows --wide {big}"));
    assert!(
        shown.contains("reading ") && shown.contains("client / guid"),
        "{shown:?}"
    );
    // Packet lines on the terminal: no bar among them.
    let shown = on_a_terminal(&format!("{bin} read {big} -c 20000"));
    assert!(
        !shown.contains("reading ") && shown.contains("NACK"),
        "{shown:?}"
    );
    // No terminal at all: nothing on stderr.
    let o = run(&["flows", &big.to_string()]);
    assert!(o.status.success() && o.stderr.is_empty(), "{o:?}");
    // A small file: no bar.
    let shown = on_a_terminal(&format!("{bin} flows {}", sample("lossy.pcap")));
    assert!(!shown.contains("reading "), "{shown:?}");
}

#[test]
fn what_receivers_held_at_the_end_is_reported_in_text_and_json() {
    // lossy.pcap cut after 55 frames: 3 of the 4 parts of a split message.
    let (header, recs) = pcap_records(&std::fs::read(sample("lossy.pcap")).expect("lossy"));
    let cut = tmp("cut-mid-split.pcap");
    write_pcap(&cut, &header, &recs[..55]);
    let cut = cut.to_str().expect("path");
    let text = stdout(&run(&[cut, "--color", "never"]));
    let ends: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("end of capture: [split_incomplete: "))
        .collect();
    assert_eq!(
        ends,
        ["flow 1 c2s at the end of the capture: split 0: 3 of 4 parts received]"]
    );
    let json = stdout(&run(&[cut, "--json"]));
    let last: serde_json::Value =
        serde_json::from_str(json.lines().last().expect("records")).expect("JSON");
    assert_eq!(last["type"], "end_of_capture");
    assert_eq!(last["anomalies"][0]["kind"], "split_incomplete");
    assert_eq!(
        format!(
            "{}]",
            last["anomalies"][0]["detail"].as_str().expect("detail")
        ),
        ends[0]
    );
    assert_eq!(json.lines().count(), text.lines().count());
    // Not with a filter, -q, or -c stopping the reading.
    for extra in [&["-Y", "kind == data"][..], &["-q"], &["-c", "10"]] {
        let mut a = vec![cut, "--json"];
        a.extend_from_slice(extra);
        assert!(!stdout(&run(&a)).contains("end_of_capture"), "{extra:?}");
    }
}

/// A pcapng block that cannot be read past in the middle of the file (its
/// trailing length disagrees): what came before is printed, a warning
/// says where, and the exit code is 9, not the 5 of a file cut short.
#[test]
fn a_capture_malformed_in_the_middle_exits_9() {
    let f = sample("handshake.pcapng");
    let mut bytes = std::fs::read(&f).unwrap();
    // Walk the blocks to the 20th packet block; break its trailing length.
    let (mut pos, mut packets) = (0usize, 0);
    while pos + 12 <= bytes.len() {
        let kind = u32::from_le_bytes(bytes[pos..pos + 4].try_into().unwrap());
        let len = u32::from_le_bytes(bytes[pos + 4..pos + 8].try_into().unwrap()) as usize;
        if kind == 6 {
            packets += 1;
            if packets == 20 {
                bytes[pos + len - 4] ^= 0x40;
                break;
            }
        }
        pos += len;
    }
    assert_eq!(packets, 20, "the sample has 20 packet blocks");
    let bad = tmp("malformed.pcapng");
    std::fs::write(&bad, &bytes).unwrap();
    let o = run(&[&bad.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(9));
    let (got, full) = (stdout(&o), stdout(&run(&[&f])));
    assert!(got.lines().count() > 10 && full.starts_with(&got), "{got}");
    let last = got
        .lines()
        .last()
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    assert_eq!(last, "19", "the frames before the broken block");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning: malformed capture after frame 19"),
        "{err}"
    );
}

/// Frames dropped on the way are said: a link type not decoded, pcapng
/// packet blocks that name no interface (one warning line each, exit 0).
#[test]
fn dropped_frames_are_warned_of() {
    // A pcap of link type 147 (USER0): three frames, none decoded.
    let mut user0 = Vec::new();
    user0.extend(0xa1b2_c3d4u32.to_le_bytes());
    user0.extend([2, 0, 4, 0]);
    user0.extend([0; 8]);
    user0.extend(65_535u32.to_le_bytes());
    user0.extend(147u32.to_le_bytes());
    for i in 0..3u32 {
        user0.extend(1u32.to_le_bytes());
        user0.extend(i.to_le_bytes());
        user0.extend(20u32.to_le_bytes());
        user0.extend(20u32.to_le_bytes());
        user0.extend([0; 20]);
    }
    let p = tmp("user0.pcap");
    std::fs::write(&p, &user0).unwrap();
    let o = run(&[&p.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning: 3 frames of a link type not decoded: skipped"),
        "{err}"
    );
    // `stats` counts them, in its record and its last line.
    let user0 = p.to_string_lossy().into_owned();
    let stats = stdout(&run(&["stats", &user0, "--json"]));
    let last: serde_json::Value = serde_json::from_str(stats.lines().last().unwrap()).unwrap();
    assert_eq!(last["capture"]["frames"], 3, "{stats}");
    assert_eq!(last["capture"]["unsupported_link"], 3, "{stats}");
    assert_eq!(last["capture"]["raknet_packets"], 0, "{stats}");
    let text = stdout(&run(&["stats", &user0]));
    assert!(
        text.ends_with(
            "Capture: 3 frames read, 0 RakNet; skipped: 3 frames of a link type not decoded\n"
        ),
        "{text}"
    );
    // A pcapng section with no interface block before its packet blocks.
    let block = |kind: u32, body: &[u8]| {
        let mut b = body.to_vec();
        b.resize(body.len().div_ceil(4) * 4, 0);
        let n = (12 + b.len()) as u32;
        let mut out = kind.to_le_bytes().to_vec();
        out.extend(n.to_le_bytes());
        out.extend(b);
        out.extend(n.to_le_bytes());
        out
    };
    let mut shb = 0x1a2b_3c4du32.to_le_bytes().to_vec();
    shb.extend([1, 0, 0, 0]);
    shb.extend((-1i64).to_le_bytes());
    let mut epb = Vec::new();
    for v in [0u32, 0, 0, 28, 28] {
        epb.extend(v.to_le_bytes());
    }
    epb.push(0x45);
    epb.extend([0; 27]);
    let mut ng = block(0x0a0d_0d0a, &shb);
    ng.extend(block(6, &epb));
    ng.extend(block(6, &epb));
    let p = tmp("no-interface.pcapng");
    std::fs::write(&p, &ng).unwrap();
    let o = run(&[&p.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("warning: 2 packet records malformed"), "{err}");
    let stats = stdout(&run(&["stats", &p.to_string_lossy(), "--json"]));
    let last: serde_json::Value = serde_json::from_str(stats.lines().last().unwrap()).unwrap();
    assert_eq!(last["capture"]["bad_records"], 2, "{stats}");
}

/// A directory stands for the capture files in it and its subdirectories,
/// in name order: the same records as naming them, each with its `file`.
#[test]
fn a_directory_is_its_captures() {
    let dir = std::env::temp_dir().join(format!("raknet-dissect-dir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("b")).unwrap();
    let samples = common::root().join("samples");
    std::fs::copy(samples.join("handshake.pcap"), dir.join("a.pcap")).unwrap();
    std::fs::copy(samples.join("lossy.pcap"), dir.join("b/c.pcap")).unwrap();
    std::fs::write(dir.join("notes.txt"), "not a capture").unwrap();
    let d = dir.to_string_lossy().into_owned();
    let by_dir = stdout(&run(&["messages", &d, "--json"]));
    let (a, c) = (dir.join("a.pcap"), dir.join("b/c.pcap"));
    let by_name = stdout(&run(&[
        "messages",
        &a.to_string_lossy(),
        &c.to_string_lossy(),
        "--json",
    ]));
    assert_eq!(by_dir, by_name);
    assert!(
        by_dir.contains(&format!("\"file\":\"{}\"", c.display())),
        "{by_dir}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A path that does not exist and has glob characters is the files it
/// matches, in name order (a fleet too large for the shell's command line,
/// or a quoted pattern): every file it names, whatever its extension; a
/// directory it names, the capture files in it; nothing matched, an error.
#[test]
fn a_glob_is_the_files_it_matches() {
    let tmp = common::TempDir::new("glob");
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("host2/day1")).unwrap();
    let samples = common::root().join("samples");
    let (a, b) = (dir.join("host1.pcap"), dir.join("host2/day1/rot.pcap1"));
    std::fs::copy(samples.join("handshake.pcap"), &a).unwrap();
    std::fs::copy(samples.join("lossy.pcap"), &b).unwrap();
    std::fs::write(dir.join("host1.keylog"), "").unwrap();
    let (a, b) = (a.to_string_lossy(), b.to_string_lossy());
    let d = dir.to_string_lossy();
    for (pattern, files) in [
        ("**/*.pcap*", vec![&a, &b]),
        ("*.pcap*", vec![&a]),
        ("host[0-9]/*/rot.pcap?", vec![&b]),
        ("host2", vec![]),
    ] {
        let globbed = format!("{d}/{pattern}");
        let got = run(&["flows", "--json", "--separate", &globbed]);
        if files.is_empty() {
            // A directory with no .pcap, .pcapng or .cap in it.
            assert_eq!(got.status.code(), Some(3), "{pattern}");
            continue;
        }
        let mut args = vec!["flows", "--json", "--separate"];
        args.extend(files.iter().map(|f| f.as_ref()));
        assert_eq!(stdout(&got), stdout(&run(&args)), "{pattern}");
        assert!(!stdout(&got).is_empty(), "{pattern}");
    }
    let o = run(&["flows", &format!("{d}/nothing*.pcap")]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nothing*.pcap"));
}
