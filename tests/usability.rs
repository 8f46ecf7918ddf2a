//! What a new user hit on a first try of every command (issue 25), each as
//! a test that runs the binary: a Bedrock server that speaks the Bedrock
//! RakNet protocol, mistyped commands and filter values said with the
//! closest valid one, several files merged by time, key logs that hold no
//! key, clap's wording, tables that fit the terminal, empty results said,
//! value errors in words, and the game tree in wire order with offsets.

mod common;

use std::time::Duration;

use common::{args, run_bin, Ours};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `serve --bedrock` speaks RakNet protocol 11 (the game version decides),
/// so our own `connect --bedrock` gets in on its first try, without the
/// retry that an incompatible protocol triggers.
#[test]
fn bedrock_server_speaks_protocol_11() {
    let port = common::free_port_pair();
    let listen = format!("127.0.0.1:{port}");
    let mut serve = Ours::spawn(
        &args(&[
            "serve",
            "--listen",
            &listen,
            "--bedrock",
            "--once",
            "--json",
        ]),
        None,
    );
    let listening = serve
        .wait_record("listening", Duration::from_secs(10))
        .expect("serve prints `listening`");
    assert_eq!(listening["protocol"], 11, "{listening}");
    let o = run_bin(&["connect", &listen, "--bedrock", "--duration", "1", "--json"]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(!err.contains("trying again"), "a retry: {err}");
    let connected: Vec<serde_json::Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|r: &serde_json::Value| r["type"] == "connected")
        .collect();
    assert_eq!(connected.len(), 1, "{out}");
    assert!(out.contains("spawned"), "{out}");
    let f = serve.finish(Duration::from_secs(15));
    assert_eq!(f.code, Some(0), "{}", f.stderr);
}

/// A mistyped command is said as one, with the command meant, before any
/// file is read (it was read as a capture file: every packet of the next
/// file printed, then "No such file", exit 3).
#[test]
fn a_mistyped_command_is_said_with_the_one_meant() {
    let lossy = common::sample("lossy.pcap");
    let lossy = lossy.to_str().unwrap();
    for (typed, meant) in [
        ("flow", "flows"),
        ("mesages", "messages"),
        ("handshakes", "handshake"),
    ] {
        let o = run_bin(&[typed, lossy]);
        assert_eq!(o.status.code(), Some(2), "{typed}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{typed}: printed {}", stdout(&o));
        let err = stderr(&o);
        assert!(err.contains(&format!("`{meant}`")), "{typed}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // A file of that name is read as one.
    let dir = common::TempDir::new("typo");
    std::fs::copy(lossy, dir.path().join("flow")).unwrap();
    let o = common::bin()
        .current_dir(dir.path())
        .args(["flow", "-c", "1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// A value of a closed set (kinds, directions, anomaly kinds, record
/// types, reliabilities, message and game packet names) that is not one of
/// them is a mistake said with the closest valid value (exit 4), not a
/// filter that silently matches nothing.
#[test]
fn a_mistyped_filter_value_is_said_with_the_closest_valid_one() {
    let lossy = common::sample("lossy.pcap");
    let lossy = lossy.to_str().unwrap();
    let login = common::sample("bedrock-login.pcap");
    let keylog = common::sample("bedrock-login.keylog");
    let (login, keylog) = (login.to_str().unwrap(), keylog.to_str().unwrap());
    let cases: [(&[&str], &str, &str); 8] = [
        (&[lossy, "-Y", "kind == nak"], "nak", "nack"),
        (&[lossy, "-Y", "dir == c2z"], "c2z", "c2s"),
        (
            &[lossy, "-Y", "anomalies.kind == resent"],
            "resent",
            "resend",
        ),
        (
            &[lossy, "-Y", "reliability == RELIABLE_ORDRED"],
            "RELIABLE_ORDRED",
            "RELIABLE_ORDERED",
        ),
        (
            &[lossy, "-Y", "name in {ID_CONECTION_REQUEST}"],
            "ID_CONECTION_REQUEST",
            "ID_CONNECTION_REQUEST",
        ),
        (&["messages", lossy, "-Y", "dir != s2x"], "s2x", "s2c"),
        (
            &[
                "game",
                login,
                "--keylog",
                keylog,
                "-Y",
                "game.name == disconect",
            ],
            "disconect",
            "disconnect",
        ),
        (&["flows", lossy, "-Y", "type == flwo"], "flwo", "flow"),
    ];
    for (args, bad, meant) in cases {
        let o = run_bin(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(4), "{args:?}: {err}");
        assert!(
            err.contains(&format!("{bad:?}")) && err.contains(&format!("did you mean {meant}?")),
            "{args:?}: {err}"
        );
    }
    // Valid values of the same fields still filter.
    for filter in [
        "kind == nack",
        "anomalies.kind == resend && dir == c2s",
        "name == ID_USER_PACKET_ENUM+3 || reliability == RELIABLE_ORDERED",
        "name contains CONNECT",
    ] {
        let o = run_bin(&[lossy, "-Y", filter]);
        assert_eq!(o.status.code(), Some(0), "{filter}: {}", stderr(&o));
        assert!(!stdout(&o).is_empty(), "{filter}: nothing matched");
    }
}

/// A key log that holds no key line (a README, a capture given by
/// mistake) is one error line and exit 2, not a warning per line and
/// exit 0.
#[test]
fn a_key_log_without_keys_is_one_error() {
    let login = common::sample("bedrock-login.pcap");
    let login = login.to_str().unwrap();
    let readme = common::root().join("README.md");
    let pcap = common::sample("lossy.pcap");
    for (file, said) in [
        (readme.to_str().unwrap(), "not a key log"),
        (pcap.to_str().unwrap(), "not text"),
    ] {
        for command in ["game", "read", "flows"] {
            let o = run_bin(&[command, login, "--keylog", file]);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{command} --keylog {file}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.contains(said), "{err}");
            assert!(stdout(&o).is_empty(), "{}", stdout(&o));
        }
    }
    let keylog = common::sample("bedrock-login.keylog");
    let o = run_bin(&["game", login, "--keylog", keylog.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
}

/// Values of the wrong kind are said in words, not as Rust ranges, and an
/// unknown Bedrock version is a usage error (2) that lists the known ones.
#[test]
fn value_errors_are_said_in_words() {
    let lossy = common::sample("lossy.pcap");
    let lossy = lossy.to_str().unwrap();
    for (args, said) in [
        (&[lossy, "-c", "0"][..], "must be 1 or more"),
        (
            &[lossy, "--threads", "99999999"][..],
            "must be at most 65535",
        ),
        (
            &["connect", "127.0.0.1:9", "--channel", "40"][..],
            "0 to 31",
        ),
        (
            &["ping", "127.0.0.1:9", "-c", "x"][..],
            "not a whole number",
        ),
    ] {
        let o = run_bin(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
        assert!(!err.contains("18446744073709551615"), "{err}");
    }
    let o = run_bin(&["connect", "127.0.0.1:9", "--bedrock", "--version", "1.99.0"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no Bedrock version \"1.99.0\""), "{err}");
    assert!(err.contains("1.19.1") && err.contains("1.26.45"), "{err}");
}

/// A classic pcap's records, split by `pick(i)` (the record's index) into
/// two files with the same global header.
fn split_pcap(
    from: &std::path::Path,
    a: &std::path::Path,
    b: &std::path::Path,
    pick: impl Fn(usize) -> bool,
) {
    let bytes = std::fs::read(from).unwrap();
    assert_eq!(
        &bytes[..4],
        &[0xd4, 0xc3, 0xb2, 0xa1],
        "a little-endian pcap"
    );
    let (mut out_a, mut out_b) = (bytes[..24].to_vec(), bytes[..24].to_vec());
    let (mut at, mut i) = (24, 0);
    while at + 16 <= bytes.len() {
        let caplen = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        let record = &bytes[at..at + 16 + caplen];
        if pick(i) { &mut out_a } else { &mut out_b }.extend_from_slice(record);
        at += 16 + caplen;
        i += 1;
    }
    std::fs::write(a, out_a).unwrap();
    std::fs::write(b, out_b).unwrap();
}

fn json_lines(o: &std::process::Output) -> Vec<serde_json::Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Several files are one capture merged by time, as mergecap merges them:
/// a capture split in two files that interleave (each second record in the
/// other file), given in either order, reads as the whole one (the same
/// packets in the same order, each naming its file; the same messages
/// delivered), and a later-named, earlier-dated file comes first.
#[test]
fn several_files_merge_by_time() {
    let dir = common::TempDir::new("merge");
    let whole = common::sample("lossy.pcap");
    let (odd, even) = (
        dir.path().join("a-odd.pcap"),
        dir.path().join("b-even.pcap"),
    );
    split_pcap(&whole, &odd, &even, |i| i % 2 == 1);
    // Frame numbers count in each file (in records and in anomalies' words).
    let frame_word = regex_lite::Regex::new(r"frame \d+").unwrap();
    let strip = |records: Vec<serde_json::Value>| -> Vec<String> {
        records
            .into_iter()
            .map(|mut r| {
                let o = r.as_object_mut().unwrap();
                o.remove("frame");
                o.remove("file");
                frame_word
                    .replace_all(&r.to_string(), "frame N")
                    .into_owned()
            })
            .collect()
    };
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    for command in ["read", "messages"] {
        let alone = json_lines(&run_bin(&[command, &path(&whole), "--json"]));
        assert!(alone.len() > 50, "{command}: {} records", alone.len());
        for (first, second) in [(&even, &odd), (&odd, &even)] {
            let o = run_bin(&[command, &path(first), &path(second), "--json"]);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            let merged = json_lines(&o);
            if command == "read" {
                let files: std::collections::BTreeSet<&str> =
                    merged.iter().filter_map(|r| r["file"].as_str()).collect();
                assert_eq!(files.len(), 2, "every packet names its file: {files:?}");
            }
            assert_eq!(
                strip(merged),
                strip(alone.clone()),
                "{command}: merged differs"
            );
        }
    }
    // handshake.pcap is from before lossy.pcap: given second, it is read first.
    let early = common::sample("handshake.pcap");
    let o = run_bin(&[&path(&whole), &path(&early), "-c", "1"]);
    let out = stdout(&o);
    assert!(
        out.starts_with(&format!("==> {} <==", path(&early))),
        "{out}"
    );
    assert!(out.contains(" 0.0"), "{out}");
}

/// A flag of another command is named with the commands that have it, not
/// with clap's tip to pass it as a value; `-w -` writes the capture to
/// standard output (tshark's habit) and nothing else goes there; `export`
/// takes `-o` as `plot` does.
#[test]
fn flags_say_what_they_are() {
    let o = run_bin(&["ping", "127.0.0.1:9", "-Y", "kind == ack"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("-Y is an option of read, messages"), "{err}");
    assert!(!err.contains("as a value"), "{err}");
    let o = run_bin(&["ping", "127.0.0.1:9", "-Q"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no command has -Q"), "{err}");
    let lossy = common::sample("lossy.pcap");
    let lossy = lossy.to_str().unwrap();
    // -w -: a pcapng on standard output, which reads as the capture itself.
    let dir = common::TempDir::new("write-stdout");
    let o = run_bin(&["read", lossy, "-w", "-"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        &o.stdout[..4],
        &[0x0a, 0x0d, 0x0d, 0x0a],
        "a pcapng section header"
    );
    assert!(!dir.path().join("-").exists());
    let copy = dir.path().join("copy.pcapng");
    std::fs::write(&copy, &o.stdout).unwrap();
    let fields = ["-T", "fields", "-e", "ts", "-e", "src", "-e", "len"];
    let again = run_bin(&[&["read", copy.to_str().unwrap()][..], &fields].concat());
    let first = run_bin(&[&["read", lossy][..], &fields].concat());
    assert_eq!(stdout(&again), stdout(&first));
    assert!(stdout(&first).lines().count() > 100);
    // export -o DIR, as plot -o FILE.
    let out = dir.path().join("tables");
    let o = run_bin(&["export", lossy, "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(out.join("packets.parquet").exists());
}

/// A classic pcap (raw IPv4) of one UDP datagram that is not RakNet.
fn not_raknet_pcap(path: &std::path::Path) {
    let payload: Vec<u8> = (0u8..20).collect();
    let udp_len = 8 + payload.len() as u16;
    let mut ip = vec![0x45, 0];
    ip.extend((20 + udp_len).to_be_bytes());
    ip.extend([0, 0, 0, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1]);
    ip.extend(5353u16.to_be_bytes());
    ip.extend(5353u16.to_be_bytes());
    ip.extend(udp_len.to_be_bytes());
    ip.extend([0, 0]);
    ip.extend(payload);
    let mut pcap = Vec::new();
    pcap.extend(0xa1b2_c3d4u32.to_le_bytes());
    pcap.extend(2u16.to_le_bytes());
    pcap.extend(4u16.to_le_bytes());
    for v in [0u32, 0, 65535, 101] {
        pcap.extend(v.to_le_bytes());
    }
    for v in [1_795_322_000u32, 0, ip.len() as u32, ip.len() as u32] {
        pcap.extend(v.to_le_bytes());
    }
    pcap.extend(ip);
    std::fs::write(path, pcap).unwrap();
}

/// Nothing to show is said, terminal or not, with what to try: a capture
/// with no RakNet (`-d PORT`), `game` with no Bedrock flow (`--bedrock`),
/// `export` with no records (no empty directory left).
#[test]
fn empty_results_say_why() {
    let dir = common::TempDir::new("empty");
    let udp = dir.path().join("udp.pcap");
    not_raknet_pcap(&udp);
    let udp = udp.to_str().unwrap();
    for command in ["read", "messages", "flows", "stats"] {
        let o = run_bin(&[command, udp]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{command}: {err}");
        assert!(
            err.contains("no RakNet packets") && err.contains("-d PORT"),
            "{command}: {err}"
        );
        assert_eq!(err.matches("no RakNet").count(), 1, "{err}");
    }
    let lossy = common::sample("lossy.pcap");
    let o = run_bin(&["game", lossy.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(stdout(&o).is_empty());
    assert!(
        err.contains("no Minecraft Bedrock flow") && err.contains("--bedrock"),
        "{err}"
    );
    // A Bedrock capture says none of it.
    let login = common::sample("bedrock-login.pcap");
    let o = run_bin(&["game", login.to_str().unwrap()]);
    assert_eq!(stderr(&o), "");
    // export: no tables, no directory, one line of each.
    let out = dir.path().join("tables");
    let o = run_bin(&["export", udp, "-o", out.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!out.exists(), "an empty directory was left");
    assert!(err.contains("nothing written"), "{err}");
    assert_eq!(err.matches("no RakNet").count(), 1, "{err}");
}
