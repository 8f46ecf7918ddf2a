//! `--separate`: each capture file is a capture of its own. What a run
//! prints is, file after file, what the command prints of that file alone,
//! every record naming its file (its second key, after `type`), text under
//! a `==> FILE <==` line, a field export's header once; the same bytes
//! whatever `--threads` (tests/threads.rs checks that on every command).

mod common;

use common::{bin, sample};

struct Ran {
    out: String,
    err: String,
    code: Option<i32>,
}

fn run(args: &[&str]) -> Ran {
    let o = bin().args(args).output().unwrap();
    Ran {
        out: String::from_utf8(o.stdout).unwrap(),
        err: String::from_utf8(o.stderr).unwrap(),
        code: o.status.code(),
    }
}

/// Bundled captures of both dialects, a lossy one, and Bedrock with keys.
fn files() -> Vec<String> {
    [
        "handshake.pcap",
        "lossy.pcap",
        "minecraft.pcap",
        "bedrock-login.pcap",
    ]
    .map(|f| sample(f).to_str().unwrap().to_string())
    .into()
}

/// `line`, a record of one file read alone, as a `--separate` run prints
/// it: `"file":NAME` after its `type`.
fn named(line: &str, file: &str) -> String {
    let at = line.find(',').expect("a record with keys after its type") + 1;
    let name = serde_json::to_string(file).unwrap();
    format!("{}\"file\":{name},{}", &line[..at], &line[at..])
}

#[test]
fn every_record_is_its_file_alone_s_with_its_name() {
    let files = files();
    let keylog = sample("bedrock-login.keylog");
    let keys = ["--keylog", keylog.to_str().unwrap()];
    for (cmd, keyed) in [
        ("read", true),
        ("messages", false),
        ("flows", true),
        ("handshake", true),
        ("stats", false),
        ("game", true),
    ] {
        let extra: &[&str] = if keyed { &keys } else { &[] };
        let mut want = String::new();
        for f in &files {
            let alone = run(&[&[cmd, "--json", f.as_str()], extra].concat());
            assert_eq!(alone.code, Some(0), "{cmd} {f}: {}", alone.err);
            for line in alone.out.lines() {
                want.push_str(&named(line, f));
                want.push('\n');
            }
        }
        let mut args = vec![cmd, "--json", "--separate"];
        args.extend(files.iter().map(String::as_str));
        args.extend(extra);
        let got = run(&args);
        assert_eq!(got.code, Some(0), "{cmd}: {}", got.err);
        assert!(!want.is_empty(), "{cmd}");
        assert!(
            got.out == want,
            "{cmd} --separate:\n{}\nwant:\n{want}",
            got.out
        );
        for line in got.out.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(files.contains(&v["file"].as_str().unwrap().to_string()));
        }
    }
}

#[test]
fn text_comes_under_each_file_s_name() {
    let files = files();
    for cmd in [
        &["read"][..],
        &["read", "-z", "conv,udp"],
        &["messages"],
        &["flows"],
        &["handshake"],
        &["stats"],
        &["game"],
    ] {
        let mut want = String::new();
        for f in &files {
            let alone = run(&[cmd, &[f.as_str()]].concat());
            want.push_str(&format!("==> {f} <==\n{}", alone.out));
        }
        let mut args = cmd.to_vec();
        args.push("--separate");
        args.extend(files.iter().map(String::as_str));
        let got = run(&args);
        assert_eq!(got.code, Some(0), "{cmd:?}: {}", got.err);
        assert!(got.out == want, "{cmd:?}:\n{}\nwant:\n{want}", got.out);
    }
}

#[test]
fn a_field_export_has_one_header() {
    let files = files();
    let fields = [
        "-T", "fields", "-E", "header=y", "-e", "frame", "-e", "kind",
    ];
    let mut want = String::new();
    for (i, f) in files.iter().enumerate() {
        let alone = run(&[&["read"][..], &fields, &[f.as_str()]].concat());
        let mut lines = alone.out.lines();
        let header = lines.next().unwrap();
        assert_eq!(header, "frame\tkind");
        if i == 0 {
            want.push_str("frame\tkind\n");
        }
        lines.for_each(|l| want.push_str(&format!("{l}\n")));
    }
    let mut args = vec!["read", "--separate"];
    args.extend(fields);
    args.extend(files.iter().map(String::as_str));
    assert_eq!(run(&args).out, want);
}

#[test]
fn files_are_not_one_capture() {
    // The same capture twice: read as one (merged by time), its flow is one
    // flow whose datagrams each come twice; read --separate, it is flow 1 of
    // each file.
    let f = sample("handshake.pcap");
    let f = f.to_str().unwrap();
    let records = |args: &[&str]| -> Vec<serde_json::Value> {
        let r = run(args);
        assert_eq!(r.code, Some(0), "{args:?}: {}", r.err);
        r.out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let one = records(&["flows", "--json", f, f]);
    assert_eq!(one.len(), 1);
    assert_eq!(one[0]["sessions"], 1);
    assert!(one[0]["c2s"]["duplicates"].as_u64() > Some(0), "{}", one[0]);
    assert!(one[0].get("file").is_none());
    let two = records(&["flows", "--json", "--separate", f, f]);
    assert_eq!(two.len(), 2);
    for r in &two {
        assert_eq!(
            (r["flow"].as_u64(), r["sessions"].as_u64()),
            (Some(1), Some(1))
        );
        assert_eq!(r["file"], f);
    }
    // Times count from each file's first datagram.
    let lines = run(&["read", "--separate", f, f]).out;
    let firsts: Vec<&str> = lines
        .lines()
        .filter(|l| !l.starts_with("==>"))
        .filter(|l| l.split_whitespace().next() == Some("3"))
        .collect();
    assert_eq!(firsts.len(), 2, "{lines}");
    assert_eq!(firsts[0], firsts[1]);
    // One file: nothing to name.
    assert_eq!(
        run(&["flows", "--json", "--separate", f]).out,
        run(&["flows", "--json", f]).out
    );
}

#[test]
fn a_bad_file_is_said_and_the_others_are_printed() {
    let dir = common::TempDir::new("separate-bad");
    let missing = dir.path().join("missing.pcap");
    let missing = missing.to_str().unwrap();
    let (a, b) = (sample("handshake.pcap"), sample("lossy.pcap"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let alone = run(&["flows", "--json", missing]);
    assert_ne!(alone.code, Some(0));
    let got = run(&["flows", "--json", "--separate", a, missing, b]);
    assert_eq!(got.code, alone.code, "the bad file's exit code");
    assert!(got.err.contains(missing), "{}", got.err);
    let names: Vec<String> = got
        .out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["file"].to_string())
        .collect();
    assert_eq!(names, [format!("{a:?}"), format!("{b:?}")]);
}

#[test]
fn what_cannot_be_separate_is_a_usage_error() {
    let (a, b) = (sample("handshake.pcap"), sample("lossy.pcap"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let dir = common::TempDir::new("separate-usage");
    let out = dir.path().join("out.pcapng");
    let svg = dir.path().join("p.svg");
    for args in [
        vec!["--separate", "-w", out.to_str().unwrap(), a, b],
        vec!["read", "--separate", "-w", out.to_str().unwrap(), a, b],
        vec!["plot", "--separate", "-o", svg.to_str().unwrap(), a, b],
    ] {
        let r = run(&args);
        assert_eq!(r.code, Some(2), "{args:?}");
        assert!(r.err.contains("--separate"), "{}", r.err);
        assert!(r.out.is_empty() && !out.exists() && !svg.exists());
    }
}

#[test]
fn export_separate_has_a_row_per_file_s_flow() {
    let dir = common::TempDir::new("separate-export");
    let f = sample("handshake.pcap");
    let f = f.to_str().unwrap();
    for (separate, flows) in [(false, 1), (true, 2)] {
        let out = dir.path().join(format!("{separate}"));
        let mut args = vec!["export", f, f, "--out", out.to_str().unwrap()];
        if separate {
            args.push("--separate");
        }
        let r = run(&args);
        assert_eq!(r.code, Some(0), "{}", r.err);
        let line = format!("flows.parquet: {flows} rows");
        assert!(r.out.contains(&line), "{}", r.out);
    }
}

#[test]
fn file_is_a_field_of_every_record() {
    let (a, b) = (sample("handshake.pcap"), sample("lossy.pcap"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let only_b = format!("file == {b:?}");
    for cmd in ["read", "messages", "flows", "handshake"] {
        // -Y picks one file's records, --separate or not (where records
        // name their file).
        let alone = run(&[cmd, "--json", b]);
        let want: String = alone.out.lines().map(|l| named(l, b) + "\n").collect();
        let got = run(&[cmd, "--json", "--separate", "-Y", &only_b, a, b]);
        assert_eq!(got.code, Some(0), "{cmd}: {}", got.err);
        assert!(got.out == want, "{cmd} -Y {only_b}:\n{}", got.out);
        // -e file: the name, row by row.
        let rows = run(&[cmd, "--separate", "-T", "fields", "-e", "file", a, b]).out;
        let mut names: Vec<&str> = rows.lines().collect();
        names.dedup();
        assert_eq!(names, [a, b], "{cmd}");
    }
    // Read as one capture, packets and messages name their file too.
    let rows = run(&["read", "-T", "fields", "-e", "file", "-e", "frame", a, b]).out;
    assert!(rows.lines().any(|l| l.starts_with(&format!("{b}\t"))));
    assert!(rows.lines().all(|l| l.starts_with(a) || l.starts_with(b)));
    // One file names none: the field is empty.
    let rows = run(&["read", "-T", "fields", "-e", "file", a]).out;
    assert!(rows.lines().all(str::is_empty), "{rows}");
}

#[test]
fn a_mistake_in_the_options_is_said_once() {
    let (a, b) = (sample("handshake.pcap"), sample("lossy.pcap"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    for (cmd, opts) in [
        ("flows", &["-Y", "lost >"][..]),
        ("read", &["-T", "fields", "-e", "no_such_field"]),
        ("game", &["--keylog", "/no/such/keylog"]),
        ("handshake", &["--json", "-T", "text"]),
    ] {
        let alone = run(&[&[cmd][..], opts, &[a]].concat());
        assert_ne!(alone.code, Some(0), "{cmd} {opts:?}");
        let got = run(&[&[cmd, "--separate"][..], opts, &[a, b, a, b]].concat());
        assert_eq!(got.code, alone.code, "{cmd} {opts:?}");
        assert_eq!(got.err, alone.err, "{cmd} {opts:?}: said once");
        assert!(got.out.is_empty(), "{cmd} {opts:?}: {}", got.out);
    }
}
