//! `--threads`: every capture command prints the same bytes, and exits
//! the same, whatever the number of threads, on every bundled capture, on
//! all of them read as one capture and as captures of their own
//! (`--separate`), and with the options that keep a run
//! on one thread (`-t dd`, `-w`) or cut it short (`-c`).

mod common;

use std::path::Path;

use common::{bin, sample, sample_captures};

/// The output and exit code of `args` with `--threads n`.
fn with_threads(args: &[&str], n: u32) -> (Vec<u8>, Option<i32>) {
    let o = bin()
        .args(args)
        .args(["--threads", &n.to_string()])
        .output()
        .unwrap();
    (o.stdout, o.status.code())
}

fn same_for_every_count(args: &[&str]) {
    let one = with_threads(args, 1);
    for n in [2, 3] {
        let other = with_threads(args, n);
        assert!(
            one == other,
            "{args:?}: --threads {n} printed {} bytes (exit {:?}), --threads 1 {} (exit {:?})",
            other.0.len(),
            other.1,
            one.0.len(),
            one.1
        );
    }
}

/// The commands, with the options that change what each prints.
const COMMANDS: &[&[&str]] = &[
    &["read"],
    &["read", "--json"],
    &["read", "-V"],
    &["read", "-x"],
    &["read", "-t", "d"],
    &["read", "-t", "dd"],
    &[
        "read", "-T", "fields", "-e", "frame", "-e", "kind", "-e", "flow",
    ],
    &["read", "-Y", "kind == \"data\" && len > 100"],
    &["read", "--flow", "1", "--json"],
    &["read", "-c", "7"],
    &["messages"],
    &["messages", "--json"],
    &["messages", "-t", "d"],
    &["messages", "-Y", "len > 50", "--json"],
    &["messages", "--dir", "s2c"],
    &["flows", "--json"],
    &["stats", "--json"],
    &["handshake", "--json"],
    &["game", "--json"],
    &["plot", "--json"],
];

#[test]
fn every_command_prints_the_same_whatever_the_threads() {
    let captures = sample_captures();
    assert!(captures.len() >= 10, "the bundled captures: {captures:?}");
    let mut runs = 0;
    for capture in &captures {
        let capture = capture.to_str().unwrap();
        for cmd in COMMANDS {
            let mut args = cmd.to_vec();
            args.push(capture);
            same_for_every_count(&args);
            runs += 1;
        }
    }
    // All of them as one capture (records name their file).
    let all: Vec<&str> = captures.iter().map(|p| p.to_str().unwrap()).collect();
    for cmd in COMMANDS {
        let mut args = cmd.to_vec();
        args.extend(&all);
        same_for_every_count(&args);
        runs += 1;
    }
    // Each a capture of its own, read in parallel (tests/separate.rs).
    for cmd in COMMANDS {
        let mut args = cmd.to_vec();
        args.push("--separate");
        args.extend(&all);
        same_for_every_count(&args);
        runs += 1;
    }
    println!("{runs} runs, each the same with 1, 2 and 3 threads");
}

#[test]
fn a_large_capture_goes_through_many_batches_in_order() {
    // The lossy sample 40 times one after the other (each copy a minute
    // later: files are merged by time) as one capture: thousands of
    // packets and messages, so every worker formats many batches (256
    // records each).
    let dir = common::TempDir::new("threads-large");
    let copies: Vec<String> = (0..40).map(|i| later_copy(&dir, i)).collect();
    for cmd in [&["read", "--json"][..], &["messages", "--json"], &["read"]] {
        let mut args = cmd.to_vec();
        args.extend(copies.iter().map(String::as_str));
        let (out, code) = with_threads(&args, 1);
        assert_eq!(code, Some(0));
        let lines = out.iter().filter(|&&b| b == b'\n').count();
        assert!(lines > 10 * 256, "{cmd:?}: {lines} lines");
        assert_eq!(with_threads(&args, 2), (out.clone(), code), "{cmd:?}");
        assert_eq!(with_threads(&args, 4), (out, code), "{cmd:?}");
    }
}

/// lossy.pcap with every record `i` minutes later, in `dir`.
fn later_copy(dir: &common::TempDir, i: u32) -> String {
    let mut bytes = std::fs::read(sample("lossy.pcap")).unwrap();
    assert_eq!(
        &bytes[..4],
        &[0xd4, 0xc3, 0xb2, 0xa1],
        "a little-endian pcap"
    );
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let secs = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) + 60 * i;
        bytes[at..at + 4].copy_from_slice(&secs.to_le_bytes());
        at += 16 + u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
    }
    let path = dir.path().join(format!("lossy-{i:02}.pcap"));
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn write_keeps_the_same_packets_with_threads() {
    let dir = common::TempDir::new("threads-write");
    let capture = sample("lossy.pcap");
    let mut files = Vec::new();
    for n in [1, 2] {
        let out = dir.path().join(format!("{n}.pcapng"));
        let (printed, code) = with_threads(
            &[
                "read",
                capture.to_str().unwrap(),
                "-Y",
                "kind == \"ack\"",
                "-w",
                out.to_str().unwrap(),
            ],
            n,
        );
        assert_eq!(code, Some(0));
        files.push((printed, read_back(&out)));
    }
    assert!(!files[0].1.is_empty());
    assert_eq!(files[0], files[1]);
}

/// The lines `read` prints of a written file.
fn read_back(p: &Path) -> Vec<u8> {
    with_threads(&["read", p.to_str().unwrap()], 1).0
}

/// NetherNet's captures too, decrypted: every command the same with 1, 2
/// and 3 threads.
#[test]
fn nethernet_prints_the_same_whatever_the_threads() {
    for name in ["nethernet-join", "nethernet-lossy"] {
        let capture = sample(&format!("{name}.pcap"));
        let keylog = sample(&format!("{name}.keylog"));
        for cmd in COMMANDS {
            let mut args = cmd.to_vec();
            args.extend([
                capture.to_str().unwrap(),
                "--tls-keylog",
                keylog.to_str().unwrap(),
            ]);
            same_for_every_count(&args);
        }
    }
}

/// `game` with the sessions' keys: each packet's fields are decoded on the
/// thread that prints it (StartGame's first, in order, since the items
/// after it depend on it), and the output is the same whatever the
/// threads, in every form and over all the sessions at once.
#[test]
fn game_with_keys_prints_the_same_whatever_the_threads() {
    let dir = common::root().join("samples");
    let mut all = Vec::new();
    for sample in ["bedrock-login", "bedrock-1.19.1"] {
        let pcap = dir.join(format!("{sample}.pcap"));
        let keylog = dir.join(format!("{sample}.keylog"));
        let (pcap, keylog) = (pcap.to_str().unwrap(), keylog.to_str().unwrap());
        for form in [
            &["--json"][..],
            &["-V"],
            &[],
            &["-Y", "game.name == \"start_game\"", "--json"],
        ] {
            let mut args = vec!["game", pcap, "--keylog", keylog];
            args.extend(form);
            let (out, code) = with_threads(&args, 1);
            assert_eq!(code, Some(0), "{args:?}");
            assert!(!out.is_empty(), "{args:?}");
            same_for_every_count(&args);
        }
        all.push((pcap.to_string(), keylog.to_string()));
    }
    let mut args = vec!["game", "--json"];
    for (pcap, keylog) in &all {
        args.extend([pcap.as_str(), "--keylog", keylog.as_str()]);
    }
    same_for_every_count(&args);
}

/// Copies of a capture's sessions, each on ports of its own, started
/// `step_us` microseconds apart and interleaved by time (a little-endian
/// microsecond pcap of Ethernet, IPv4 and UDP; UDP checksums zeroed, as
/// IPv4 allows): many Bedrock flows at once.
fn interleaved_copies(src: &Path, copies: u16, step_us: u64) -> Vec<u8> {
    let data = std::fs::read(src).unwrap();
    let (header, mut body) = data.split_at(24);
    assert_eq!(header[..4], [0xd4, 0xc3, 0xb2, 0xa1]);
    assert_eq!(u32::from_le_bytes(header[20..24].try_into().unwrap()), 1);
    let le = |b: &[u8]| u32::from_le_bytes(b.try_into().unwrap());
    let mut records = Vec::new();
    while body.len() >= 16 {
        let t = u64::from(le(&body[..4])) * 1_000_000 + u64::from(le(&body[4..8]));
        let (incl, orig) = (le(&body[8..12]) as usize, le(&body[12..16]));
        records.push((t, orig, body[16..16 + incl].to_vec()));
        body = &body[16 + incl..];
    }
    let mut out: Vec<(u64, u32, Vec<u8>)> = Vec::new();
    for k in 0..copies {
        for (t, orig, frame) in &records {
            let mut f = frame.clone();
            let ip = 14;
            let udp = ip + usize::from(f[ip] & 0x0f) * 4;
            for at in [udp, udp + 2] {
                let port = u16::from_be_bytes([f[at], f[at + 1]]);
                f[at..at + 2].copy_from_slice(&port.wrapping_add(k * 2).to_be_bytes());
            }
            f[udp + 6..udp + 8].copy_from_slice(&[0, 0]);
            out.push((t + u64::from(k) * step_us, *orig, f));
        }
    }
    out.sort_by_key(|r| r.0);
    let mut pcap = header.to_vec();
    for (t, orig, f) in out {
        pcap.extend(((t / 1_000_000) as u32).to_le_bytes());
        pcap.extend(((t % 1_000_000) as u32).to_le_bytes());
        pcap.extend((f.len() as u32).to_le_bytes());
        pcap.extend(orig.to_le_bytes());
        pcap.extend(f);
    }
    pcap
}

/// `game` over many encrypted Bedrock sessions at once, whose batches the
/// reading thread opens ahead on other threads (each flow's from its
/// encryption on, while the others' logins go on): the same bytes with
/// any number of threads, every batch decrypted.
#[test]
fn game_over_many_sessions_at_once_prints_the_same_whatever_the_threads() {
    let dir = common::TempDir::new("many-sessions");
    let pcap = dir.path().join("many.pcap");
    std::fs::write(
        &pcap,
        interleaved_copies(&sample("bedrock-1.19.1.pcap"), 40, 7_000),
    )
    .unwrap();
    let keylog = sample("bedrock-1.19.1.keylog");
    let (pcap, keylog) = (pcap.to_str().unwrap(), keylog.to_str().unwrap());
    let args = ["game", pcap, "--keylog", keylog, "--json"];
    let (out, code) = with_threads(&args, 1);
    assert_eq!(code, Some(0));
    let text = String::from_utf8(out).unwrap();
    let packets = text.matches("\"type\":\"game\"").count();
    assert!(!text.contains("game_opaque"), "every batch decrypted");
    // Each copy's session in full: 40 times the one session's packets.
    let one = with_threads(
        &[
            "game",
            sample("bedrock-1.19.1.pcap").to_str().unwrap(),
            "--keylog",
            keylog,
            "--json",
        ],
        1,
    );
    let one = String::from_utf8(one.0)
        .unwrap()
        .matches("\"type\":\"game\"")
        .count();
    assert_eq!(packets, 40 * one);
    same_for_every_count(&args);
    same_for_every_count(&["game", pcap, "--keylog", keylog]);
}
