//! `live`: real peers (the original library, `scripts/peers.py session`)
//! talk on loopback while `raknet-dissect live -i lo -w` and tcpdump both
//! capture. The live output must equal what `raknet-dissect` prints for
//! tcpdump's capture (timestamps aside: each tool stamps on its own), the
//! `-w` file must read back to exactly the live output, and tshark must read
//! it. A second `live` with a display filter (`-Y`) must print what
//! `raknet-dissect -Y` prints for tcpdump's capture. Needs root, tcpdump,
//! tshark and Python with `raknet`.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{reader_lines, run_bin, run_with_timeout, wait_line, Proc, Tcpdump, Work};
use serde_json::Value;

fn records(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// `packet` records without `ts` and `frame`, per direction: two packet
/// sockets on lo may see packets sent at the same moment by the two peers'
/// threads in either order, but each direction keeps its own order.
fn packets_by_direction(records: &[Value]) -> [Vec<Value>; 2] {
    let mut by = [Vec::new(), Vec::new()];
    for r in records.iter().filter(|r| r["type"] == "packet") {
        let mut r = r.clone();
        let o = r.as_object_mut().expect("an object");
        o.remove("ts");
        o.remove("frame");
        let i = usize::from(r["dir"] == "s2c");
        by[i].push(r);
    }
    by
}

fn read_json(path: &Path) -> Vec<Value> {
    let o = run_bin(&[&*path.to_string_lossy(), "--json"]);
    assert!(o.status.success(), "{o:?}");
    records(&o.stdout)
}

/// `cmd` (a `live -i lo` run) started with its standard output to `out`,
/// once it says it captures; its standard error's lines from then on.
fn start_live(
    cmd: &mut Command,
    out: &Path,
    what: &str,
) -> (Proc, std::sync::mpsc::Receiver<String>) {
    let mut live = Proc::spawn(
        cmd.stdout(std::fs::File::create(out).expect("output file"))
            .stderr(Stdio::piped()),
        what,
    );
    let err = reader_lines(live.child.stderr.take().expect("stderr piped"));
    let started = wait_line(
        &err,
        "raknet-dissect: capturing on lo",
        Duration::from_secs(10),
    );
    assert!(started.is_some(), "{what} did not start");
    (live, err)
}

#[test]
fn live_on_lo_equals_reading_tcpdumps_capture() {
    let ready =
        common::require_root() && common::require_tool("tcpdump") && common::require_tool("tshark");
    let py = common::raknet_python();
    if py.is_none() {
        common::skip_or_fail("Python package raknet (PyPI) not installed");
    }
    let (true, Some(py)) = (ready, py) else {
        return;
    };
    let work = Work::new("live-lo");
    let port = 19620u16;
    let pcap = work.file("tcpdump.pcap");
    let written = work.file("live.pcapng");
    let out = work.file("live.ndjson");
    let dump = Tcpdump::start(&pcap, &format!("udp port {port}"));
    let (mut live, err) = start_live(
        common::bin()
            .args(["live", "-i", "lo", "-f"])
            .arg(format!("port {port}"))
            .arg("-w")
            .arg(&written)
            .args(["--json", "--duration", "60"]),
        &out,
        "raknet-dissect live",
    );
    // The same capture through a display filter, at the same time.
    const FILTER: &str = "kind == ack || anomalies || channel == 31";
    let filtered_out = work.file("live-filtered.ndjson");
    let (mut filtered, _) = start_live(
        common::bin()
            .args(["live", "-i", "lo", "-f"])
            .arg(format!("port {port}"))
            .args(["--json", "--duration", "60", "-Y", FILTER]),
        &filtered_out,
        "raknet-dissect live -Y",
    );
    std::thread::sleep(Duration::from_millis(200));
    let session = run_with_timeout(
        Command::new(&py)
            .arg(common::root().join("scripts/peers.py"))
            .args(["session", "--port", &port.to_string()])
            .args(["--scenario", "all-reliabilities", "--timeout", "30"]),
        Duration::from_secs(40),
    );
    assert!(session.status.success(), "{session:?}");
    let pcap = dump.stop();
    // Ctrl-C ends the capture; the flows follow the packets.
    live.signal(libc::SIGINT);
    assert_eq!(
        live.exit_code(Duration::from_secs(10)),
        Some(0),
        "live ends with 0 on SIGINT"
    );
    let stats = wait_line(
        &err,
        "raknet-dissect: the kernel passed",
        Duration::from_secs(5),
    )
    .expect("kernel counters at the end");
    assert!(stats.ends_with("and dropped 0"), "{stats}");
    filtered.signal(libc::SIGINT);
    assert_eq!(filtered.exit_code(Duration::from_secs(10)), Some(0));
    let live_records = records(&std::fs::read(&out).expect("live output"));
    let live_packets = packets_by_direction(&live_records);
    assert!(
        live_packets[0].len() > 25 && live_packets[1].len() > 25,
        "{} and {} packets",
        live_packets[0].len(),
        live_packets[1].len()
    );
    let flows: Vec<&Value> = live_records
        .iter()
        .filter(|r| r["type"] == "flow")
        .collect();
    assert_eq!(flows.len(), 1, "one flow record after the packets");
    assert_eq!(flows[0]["state"], "disconnected_by_client");
    // The same packets, decoded the same, as from tcpdump's capture.
    let tcpdump_packets = packets_by_direction(&read_json(&pcap));
    assert_eq!(live_packets[0], tcpdump_packets[0], "client to server");
    assert_eq!(live_packets[1], tcpdump_packets[1], "server to client");
    // -Y picks the same packets live as from the file.
    let o = run_bin(&[&*pcap.to_string_lossy(), "--json", "-Y", FILTER]);
    assert!(o.status.success(), "{o:?}");
    let from_file = packets_by_direction(&records(&o.stdout));
    let live_filtered = packets_by_direction(&records(
        &std::fs::read(&filtered_out).expect("live -Y output"),
    ));
    assert!(
        !from_file[0].is_empty()
            && !from_file[1].is_empty()
            && from_file[0].len() < tcpdump_packets[0].len(),
        "the filter keeps some packets each way, not all"
    );
    assert_eq!(live_filtered, from_file, "live -Y vs read -Y");
    // The -w file reads back to exactly what live printed, times included.
    let back: Vec<Value> = read_json(&written)
        .into_iter()
        .filter(|r| r["type"] == "packet")
        .collect();
    let printed: Vec<Value> = live_records
        .into_iter()
        .filter(|r| r["type"] == "packet")
        .collect();
    assert_eq!(back, printed);
    // tshark reads it: as many frames as tcpdump's capture, all RakNet.
    let count = |file: &Path| {
        let o = run_with_timeout(
            Command::new("tshark").arg("-r").arg(file).args([
                "-d",
                &format!("udp.port=={port},raknet"),
                "-T",
                "fields",
                "-e",
                "frame.protocols",
            ]),
            Duration::from_secs(60),
        );
        assert!(o.status.success(), "{o:?}");
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        (
            lines.len(),
            lines.iter().filter(|l| l.contains("raknet")).count(),
        )
    };
    let (frames, raknet) = count(&written);
    assert_eq!((frames, raknet), count(&pcap));
    assert_eq!(frames, raknet);
}

#[test]
fn live_without_permission_says_how_and_exits_8() {
    if !common::require_root() || !common::require_tool("setpriv") {
        return;
    }
    // As nobody: no CAP_NET_RAW.
    let o = run_with_timeout(
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(common::bin_path())
            .args(["live", "-i", "lo"]),
        Duration::from_secs(10),
    );
    if String::from_utf8_lossy(&o.stderr).contains("Permission denied")
        && o.status.code() != Some(8)
    {
        // The binary itself is not reachable by nobody (a private target dir).
        common::skip_or_fail("a target directory that user nobody can read");
        return;
    }
    assert_eq!(o.status.code(), Some(8), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("CAP_NET_RAW") && err.contains("setcap cap_net_raw+ep"),
        "{err}"
    );
}

#[test]
fn live_usage_errors() {
    // A filter that does not parse: its position, exit 2, before any capture.
    let o = run_bin(&["live", "-i", "lo", "-f", "port x"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    if cfg!(feature = "libpcap") {
        // libpcap's own message (it compiles the filter once it may capture).
        assert!(err.contains("-f: "), "{err}");
    } else {
        assert!(err.contains("\"x\" is not a port at byte 5"), "{err}");
    }
    // -D lists lo, with no privilege needed.
    let o = run_bin(&["live", "-D"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains(". lo (loopback)"));
}

/// A NetherNet join (aiortc peers, scripts/nethernet-capture.sh, which
/// also captures it with tcpdump) while `live -i lo` runs: live shows its
/// signaling (TCP) and its STUN and DTLS datagrams, each as the record
/// `read` makes of tcpdump's capture (frame numbers, times and flow ids
/// aside: live sees the other tests' traffic too). Needs root, tcpdump and
/// a Python with aiortc.
#[test]
fn live_shows_a_nethernet_join() {
    if !common::require_root() || !common::require_tool("tcpdump") {
        return;
    }
    let Some(py) = common::aiortc_python() else {
        common::skip_or_fail("no Python with aiortc (target/venv/bin/pip install aiortc==1.16.0)");
        return;
    };
    let work = Work::new("live-nethernet");
    let out = work.file("live.ndjson");
    let (mut live, _) = start_live(
        common::bin().args(["live", "-i", "lo", "--json", "--duration", "60"]),
        &out,
        "raknet-dissect live",
    );
    std::thread::sleep(Duration::from_millis(200));
    let made = run_with_timeout(
        Command::new(common::root().join("scripts/nethernet-capture.sh"))
            .arg(&work.0)
            .arg("19880")
            .env("NETHERNET_PYTHON", &py)
            .env("SEGMENT", "1500")
            .env("MAX_PACKETS", "20"),
        Duration::from_secs(90),
    );
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    std::thread::sleep(Duration::from_millis(300));
    live.signal(libc::SIGINT);
    assert_eq!(live.exit_code(Duration::from_secs(10)), Some(0));
    // NetherNet's records, without what differs between the two captures.
    let nethernet = |records: Vec<Value>| -> Vec<Value> {
        records
            .into_iter()
            .filter(|r| r["type"] == "packet" && r["transport"] == "nethernet")
            .map(|mut r| {
                let o = r.as_object_mut().unwrap();
                for k in ["frame", "ts", "flow"] {
                    o.remove(k);
                }
                r
            })
            .collect()
    };
    let shown = nethernet(records(&std::fs::read(&out).expect("live output")));
    let read = nethernet(read_json(&work.file("nethernet-join.pcap")));
    let kinds =
        |v: &[Value]| ["http", "stun", "dtls"].map(|k| v.iter().filter(|r| r["kind"] == k).count());
    let [http, stun, dtls] = kinds(&read);
    assert!(http >= 4 && stun >= 2 && dtls > 20, "{:?}", kinds(&read));
    // tcpdump reports what the kernel dropped for want of buffer (under
    // the load of other tests): those may be missing from its capture, and
    // nothing else.
    let err = String::from_utf8_lossy(&made.stderr);
    let dropped: usize = err
        .lines()
        .find_map(|l| l.strip_suffix(" packets dropped by kernel"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("tcpdump's counters:\n{err}"));
    if dropped == 0 {
        assert_eq!(kinds(&shown), kinds(&read));
        // Each direction's records in the same order. Two packet sockets
        // may interleave the directions differently where two packets
        // cross at the same moment (seen once in CI: a DTLS record each
        // way, in the other order), so the interleaving is not compared.
        let by_direction = |v: &[Value]| {
            let mut m: std::collections::BTreeMap<String, Vec<Value>> = Default::default();
            for r in v {
                let key = format!("{} > {}", r["src"], r["dst"]);
                m.entry(key).or_default().push(r.clone());
            }
            m
        };
        assert_eq!(
            by_direction(&shown),
            by_direction(&read),
            "live vs tcpdump's capture"
        );
    } else {
        let mut rest = shown.iter();
        let missing = read.iter().filter(|r| !rest.any(|s| s == *r)).count();
        assert_eq!(
            missing, 0,
            "a record of tcpdump's capture that live did not show"
        );
        assert!(
            shown.len() - read.len() <= dropped,
            "{}: {err}",
            shown.len()
        );
    }
}
