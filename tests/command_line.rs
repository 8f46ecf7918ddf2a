//! One command line: every subcommand takes the shared flags it should,
//! runs with `--color never` (and `--json` where it has JSON), and answers
//! each documented mistake with its documented exit code (README, "Exit
//! codes"). Also: several captures in one run, `-w`, `-z conv,udp`, and a
//! `flows` table that fits a 100-column terminal.

mod common;

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::run_bin as run;
use serde_json::Value;

fn sample(name: &str) -> String {
    common::sample(name).to_string_lossy().into_owned()
}

/// What each subcommand must accept: the shared groups it flattens.
const OUTPUT: &[&str] = &["--json", "--color", "--colour", "-q"];
const CAPTURE: &[&str] = &["-r", "-d", "--flow", "-c", "--no-heuristics"];
const DISPLAY: &[&str] = &["-Y", "-T", "-e", "-E"];

fn wanted(sub: &str) -> Vec<&'static str> {
    let groups: &[&[&str]] = match sub {
        "read" | "messages" => &[OUTPUT, CAPTURE, DISPLAY, &["-t"]],
        "flows" | "handshake" => &[OUTPUT, CAPTURE, DISPLAY],
        "stats" | "plot" | "game" => &[OUTPUT, CAPTURE],
        // export writes files: the capture flags, the key material.
        "export" => &[CAPTURE, &["--out", "--keylog", "--key"]],
        "live" => &[OUTPUT, DISPLAY, &["-d", "--flow", "-c", "-t"]],
        "ping" => &[OUTPUT, &["-c"]],
        "connect" | "serve" | "probe" | "fields" => &[OUTPUT],
        "proxy" => &[OUTPUT, &["-w", "--hide", "--only", "--keylog-out"]],
        "replay" => &[OUTPUT, &["-d", "--flow"]],
        _ => &[],
    };
    groups.iter().flat_map(|g| g.iter().copied()).collect()
}

/// The subcommands `--help` lists.
fn subcommands() -> Vec<String> {
    let help = String::from_utf8(run(&["--help"]).stdout).expect("utf-8");
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

/// The flags a subcommand's `--help` shows (long, short and aliases).
fn flags(sub: &str) -> BTreeSet<String> {
    let o = run(&[sub, "--help"]);
    assert!(o.status.success(), "{sub} --help");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut set = BTreeSet::new();
    for word in text.split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == ']') {
        let w = word.split(['=', '<']).next().unwrap_or("");
        if w.starts_with('-') && w.len() > 1 && w.chars().nth(1) != Some(' ') {
            set.insert(w.to_string());
        }
    }
    set
}

#[test]
fn every_subcommand_takes_the_shared_flags_it_should() {
    let subs = subcommands();
    let known = [
        "read",
        "messages",
        "flows",
        "handshake",
        "ping",
        "connect",
        "serve",
        "proxy",
        "probe",
        "replay",
        "live",
        "game",
        "stats",
        "plot",
        "export",
        "fields",
        "completions",
        "man",
    ];
    assert_eq!(
        subs.iter().map(String::as_str).collect::<BTreeSet<_>>(),
        known.into_iter().collect::<BTreeSet<_>>(),
        "a new subcommand needs its row in `wanted`"
    );
    for sub in &subs {
        let have = flags(sub);
        for f in wanted(sub) {
            assert!(have.contains(f), "{sub} does not take {f}: {have:?}");
        }
        // -t is only where there is a time column.
        if !wanted(sub).contains(&"-t") {
            assert!(
                !have.contains("-t"),
                "{sub} takes -t, which it has no use for"
            );
        }
    }
}

/// No ANSI escape in `o`'s standard output.
fn plain(o: &std::process::Output) -> bool {
    !o.stdout.contains(&0x1b)
}

#[test]
fn every_capture_subcommand_runs_with_color_never_and_json() {
    let f = sample("lossy.pcap");
    let work = common::Work::new("color");
    let svg = work.file("out.svg").to_string_lossy().into_owned();
    let runs: Vec<Vec<&str>> = vec![
        vec!["read", &f],
        vec!["messages", &f],
        vec!["flows", &f],
        vec!["handshake", &f],
        vec!["stats", &f],
        vec!["plot", &f, "-o", &svg],
        vec!["fields"],
    ];
    for args in runs {
        let mut a = args.clone();
        a.extend(["--color", "never"]);
        let o = run(&a);
        assert!(o.status.success() && plain(&o), "{a:?}: {o:?}");
        assert!(!o.stdout.is_empty() || args[0] == "plot", "{a:?} printed");
        // The same with --colour always: colours only where a terminal would get them.
        let mut c = args.clone();
        c.extend(["--colour", "always"]);
        let o = run(&c);
        assert!(o.status.success(), "{c:?}");
        if matches!(args[0], "read" | "messages") {
            assert!(!plain(&o), "{c:?} printed no colour");
        }
        if args[0] == "plot" {
            continue;
        }
        let mut j = args.clone();
        j.extend(["--json", "--color", "always"]);
        let o = run(&j);
        assert!(o.status.success() && plain(&o), "{j:?}: {o:?}");
        for line in String::from_utf8_lossy(&o.stdout).lines() {
            let v: Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{j:?}: {e}: {line}"));
            assert!(v["type"].is_string(), "{j:?}: {line}");
        }
    }
    // Colour when asked: packet lines and message lines.
    for sub in ["read", "messages"] {
        let o = run(&[sub, &f, "--color", "always"]);
        assert!(!plain(&o), "{sub} --color always colours");
    }
}

/// Each documented mistake, with its documented exit code and one line.
#[test]
fn documented_mistakes_exit_with_their_codes() {
    let one = sample("handshake.pcap");
    let work = common::Work::new("mistakes");
    let svg = work.file("x.svg").to_string_lossy().into_owned();
    let port = common::free_port_pair().to_string();
    let nothing = format!("127.0.0.1:{port}");
    let never = sample("no-server.pcap");
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        // A flow the capture does not have: exit 2 everywhere.
        (
            vec!["read", &one, "--flow", "7"],
            2,
            "no flow 7: the capture has 1 RakNet flow",
        ),
        (vec!["messages", &one, "--flow", "7"], 2, "no flow 7"),
        (vec!["flows", &one, "--flow", "7"], 2, "no flow 7"),
        (vec!["handshake", &one, "--flow", "7"], 2, "no flow 7"),
        (vec!["stats", &one, "--flow", "7"], 2, "no flow 7"),
        (
            vec!["plot", &one, "--flow", "7", "-o", &svg],
            2,
            "no flow 7",
        ),
        (
            vec!["replay", &one, "--flow", "7", "--target", &nothing],
            2,
            "no RakNet flow 7",
        ),
        // Counts of zero.
        (vec!["read", &one, "-c", "0"], 2, "must be 1 or more"),
        (vec!["messages", &one, "-c", "0"], 2, "must be 1 or more"),
        (vec!["ping", &nothing, "-c", "0"], 2, "must be 1 or more"),
        // Output formats that exclude each other.
        (
            vec!["read", &one, "--json", "-e", "frame"],
            2,
            "--json and -T fields",
        ),
        (
            vec!["read", &one, "--json", "-T", "text"],
            2,
            "--json and -T text",
        ),
        (
            vec!["messages", &one, "--json", "-T", "fields", "-e", "frame"],
            2,
            "--json and -T fields",
        ),
        (
            vec!["read", &one, "-T", "text", "-e", "frame"],
            2,
            "-e and -E need -T fields",
        ),
        // Out of range.
        (
            vec!["messages", &one, "--channel", "40"],
            2,
            "not an ordering channel (0 to 31)",
        ),
        (
            vec!["connect", &nothing, "--channel", "40"],
            2,
            "not an ordering channel (0 to 31)",
        ),
        // A capture that never connected has nothing to replay.
        (
            vec!["replay", &never, "--target", &nothing],
            3,
            "never connected",
        ),
        // Files.
        (vec!["read", "/nonexistent.pcap"], 3, "/nonexistent.pcap"),
        (vec!["flows", "/nonexistent.pcap"], 3, "/nonexistent.pcap"),
        (
            vec!["read", &one, "-Y", "chanel == 1"],
            4,
            "did you mean channel",
        ),
        (
            vec!["read", &one, "-z", "io,stat,1"],
            2,
            "-z conv,udp is `raknet-dissect flows`",
        ),
    ];
    for (args, code, says) in cases {
        let o = run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?} says {says:?}: {err}");
        if code != 3 || args[0] != "flows" {
            continue;
        }
        assert!(o.stdout.is_empty(), "{args:?}: no empty table: {o:?}");
    }
}

/// `ping` and `connect` that reach nothing: exit 6, the step on stderr,
/// and with --json a `failed` record on stdout, as `probe` prints `probe`
/// (`ping` also asks NetherNet, and says that nothing answered).
#[test]
fn failures_of_live_commands_are_records_with_json() {
    let port = common::free_port_pair();
    let nothing = format!("127.0.0.1:{port}");
    for args in [
        vec!["ping", &nothing, "--json"],
        vec!["connect", &nothing, "--send", "86", "--json"],
    ] {
        let o = common::run_with_timeout(common::bin().args(&args), Duration::from_secs(20));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(6), "{args:?}: {err}");
        assert!(err.contains("[port_unreachable]"), "{args:?}: {err}");
        let recs: Vec<Value> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON"))
            .collect();
        if args[0] == "ping" {
            // NetherNet was asked too: its TCP port refused, then which
            // transport answered: none.
            let types: Vec<&str> = recs.iter().map(|r| r["type"].as_str().unwrap()).collect();
            assert_eq!(
                types,
                ["failed", "no_join_status", "transports"],
                "{recs:?}"
            );
            assert_eq!(recs[1]["step"], "refused");
            assert_eq!(recs[2]["answered"], "none");
        } else {
            assert_eq!(recs.len(), 1, "{args:?}: {recs:?}");
        }
        assert_eq!(recs[0]["type"], "failed");
        assert_eq!(recs[0]["step"], "port_unreachable");
        assert_eq!(recs[0]["target"], nothing.as_str());
    }
    // A target without a port is port 19132.
    let o = run(&["ping", "127.0.0.1", "--json", "--timeout", "0.2"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("127.0.0.1:19132"), "{out} {o:?}");
}

fn records(args: &[&str]) -> Vec<Value> {
    let o = run(args);
    assert!(o.status.success(), "{args:?}: {o:?}");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect()
}

#[test]
fn several_captures_are_read_in_order_with_their_file() {
    let (a, b) = (sample("handshake.pcap"), sample("lossy.pcap"));
    let ra = records(&["read", &a, "--json"]);
    let rb = records(&["read", &b, "--json"]);
    for args in [
        vec![a.as_str(), &b, "--json"],
        vec!["-r", &a, "-r", &b, "--json"],
    ] {
        let both = records(&args);
        assert_eq!(both.len(), ra.len() + rb.len(), "{args:?}");
        let files: Vec<&str> = both
            .iter()
            .map(|r| r["file"].as_str().unwrap_or(""))
            .collect();
        assert!(files[..ra.len()].iter().all(|f| *f == a), "{args:?}");
        assert!(files[ra.len()..].iter().all(|f| *f == b), "{args:?}");
        // Frame numbers count in each file, as tshark numbers them.
        for (x, y) in both.iter().zip(ra.iter().chain(&rb)) {
            assert_eq!(x["frame"], y["frame"]);
            assert_eq!(x["src"], y["src"]);
        }
    }
    // One file: no `file` key.
    assert!(ra.iter().all(|r| r.get("file").is_none()));
    // Messages and flows of both.
    let m = records(&["messages", &a, &b, "--json"]);
    let (ma, mb) = (
        records(&["messages", &a, "--json"]).len(),
        records(&["messages", &b, "--json"]).len(),
    );
    assert_eq!(m.len(), ma + mb);
    assert!(m
        .iter()
        .all(|r| r["file"] == a.as_str() || r["file"] == b.as_str()));
    assert_eq!(records(&["flows", &a, &b, "--json"]).len(), 2);
    // ICMP records name their file too.
    let n = sample("no-server.pcap");
    let icmp: Vec<Value> = records(&["read", &a, &n, "--json"])
        .into_iter()
        .filter(|r| r["type"] == "icmp")
        .collect();
    assert!(!icmp.is_empty() && icmp.iter().all(|r| r["file"] == n.as_str()));
    // A file that cannot be read among good ones: the others are read, exit 3.
    let o = run(&[&a, "/nonexistent.pcap", "--json"]);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), ra.len());
}

#[test]
fn write_keeps_the_packets_that_pass_the_filter() {
    let f = sample("lossy.pcap");
    let work = common::Work::new("write");
    let out = work.file("nacks.pcapng").to_string_lossy().into_owned();
    let shown = records(&["read", &f, "-Y", "kind == nack", "--json", "-w", &out]);
    assert!(!shown.is_empty());
    let back = records(&["read", &out, "--json", "-d", "19160"]);
    assert_eq!(back.len(), shown.len());
    for (x, y) in back.iter().zip(&shown) {
        for k in ["ts", "src", "dst", "kind", "ranges", "len"] {
            assert_eq!(x[k], y[k], "{k}");
        }
    }
}

#[test]
fn z_conv_udp_is_the_flows_table() {
    let f = sample("lossy.pcap");
    let z = run(&["-q", "-z", "conv,udp", &f]);
    let flows = run(&["flows", &f]);
    assert!(z.status.success());
    assert_eq!(z.stdout, flows.stdout);
}

/// `flows` on a two-flow capture in a real 100-column terminal (`script`
/// gives it a pty): every line fits.
#[test]
fn flows_fit_a_100_column_terminal() {
    if !common::require_tool("script") {
        return;
    }
    let bin = common::bin_path();
    let (a, b) = (sample("handshake.pcap"), sample("lossy.pcap"));
    let shell = format!(
        "stty cols 100 rows 50; {} flows {a} {b} 2>/dev/null",
        bin.display()
    );
    let o = Command::new("script")
        .args(["-qec", &shell, "/dev/null"])
        .env_remove("COLUMNS")
        .stdin(Stdio::null())
        .output()
        .expect("script runs");
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<&str> = text.lines().collect();
    assert!(rows.iter().any(|l| l.contains("127.0.0.1:19141")), "{text}");
    assert!(rows.iter().any(|l| l.contains("127.0.0.1:38635")), "{text}");
    for l in &rows {
        let w = l.trim_end_matches('\r').chars().count();
        assert!(w <= 100, "{w} columns: {l}\n{text}");
    }
    // --wide has every column, and is wider.
    let wide = run(&["flows", &a, &b, "--wide"]);
    let widest = String::from_utf8_lossy(&wide.stdout)
        .lines()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0);
    assert!(widest > 100, "--wide is {widest} columns");
}

/// The `-Y` examples each command's `--help` gives parse there, and each
/// selects some records of the samples.
#[test]
fn filter_examples_in_help_work_where_they_are_given() {
    let raknet = [
        sample("lossy.pcap"),
        sample("handshake.pcap"),
        sample("incompatible-protocol.pcap"),
    ];
    let bedrock = [sample("bedrock-login.pcap")];
    for sub in ["read", "messages", "flows", "handshake", "game"] {
        let files: &[String] = if sub == "game" { &bedrock } else { &raknet };
        let help = String::from_utf8(run(&[sub, "--help"]).stdout).expect("utf-8");
        let line = help
            .lines()
            .find(|l| l.contains("-Y, --filter"))
            .unwrap_or_else(|| panic!("{sub} --help has -Y"));
        let examples: Vec<&str> = line.split('`').skip(3).step_by(2).collect();
        assert!(examples.len() >= 2, "{sub}: {line}");
        for ex in examples {
            let mut kept = 0;
            for f in files {
                let o = run(&[sub, f, "--json", "-Y", ex]);
                assert!(o.status.success(), "{sub} -Y {ex:?}: {o:?}");
                kept += String::from_utf8_lossy(&o.stdout).lines().count();
            }
            assert!(kept > 0, "{sub} -Y {ex:?} selects nothing in the samples");
        }
    }
}

/// `examples/flow_loss.rs`, the library's example, gives each flow's loss
/// and median RTT as `flows --json` does.
#[test]
fn the_library_example_prints_each_flows_loss_and_rtt() {
    let f = sample("lossy.pcap");
    let o = common::run_with_timeout(
        Command::new(env!("CARGO"))
            .args(["run", "--quiet", "--example", "flow_loss", "--", &f])
            .current_dir(common::root()),
        Duration::from_secs(600),
    );
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let flows = records(&["flows", &f, "--json"]);
    assert_eq!(text.lines().count(), flows.len(), "{text}");
    for (line, fl) in text.lines().zip(&flows) {
        let want = format!(
            "flow {} {} -> {}: lost {} c2s, {} s2c; median RTT {:.3} ms",
            fl["flow"],
            fl["client"].as_str().unwrap(),
            fl["server"].as_str().unwrap(),
            fl["c2s"]["lost"],
            fl["s2c"]["lost"],
            fl["rtt_ms"]["median"].as_f64().unwrap()
        );
        assert_eq!(line, want);
    }
    assert!(
        std::fs::read_to_string(common::root().join("examples/flow_loss.rs"))
            .expect("the example")
            .lines()
            .count()
            < 40
    );
}

/// The `flows` table the README shows is what `flows samples/lossy.pcap`
/// prints (trailing spaces aside).
#[test]
fn the_readme_flows_table_is_true() {
    let readme = std::fs::read_to_string(common::root().join("README.md")).expect("README");
    let at = readme.find("## Flows: `flows`").expect("the flows section");
    let block = readme[at..]
        .split("```text\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a text block");
    let o = run(&["flows", &sample("lossy.pcap")]);
    let got: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.trim_end().to_string())
        .collect();
    let want: Vec<&str> = block.lines().collect();
    assert_eq!(got, want);
}

/// The parser's shapes, through the binary (the command line is the
/// binary's, not the library's): clap's own consistency checks run in a
/// debug build, a bare capture is `read`, a subcommand's options land in
/// its arguments (a file that is missing is then the only complaint).
#[test]
fn cli_shapes() {
    let missing = "/nonexistent/f.pcap";
    for args in [
        &[missing, "-V"][..],
        &["messages", missing, "--dir", "c2s", "--id", "0x86"],
        &["read", "-r", missing],
        &["stats", missing, "--threads", "3"],
    ] {
        let o = run(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {err}");
        assert!(err.contains(missing), "{args:?}: {err}");
    }
    let o = run(&[missing, "--threads", "0"]);
    assert_eq!(o.status.code(), Some(2));
}
