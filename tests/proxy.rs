//! `proxy` between real Bedrock peers: bedrock-protocol's client (npm, on
//! jsp-raknet) logs in through our proxy to bedrock-protocol's server,
//! each recording from inside what it sent and what its decoder got
//! (scripts/bedrock_peers.js): every packet either sent, but the few the
//! proxy rewrites or ends (the Login, each leg's encryption handshake),
//! reaches the other byte for byte and in order, with every packet type
//! of the version each way (`--every`); each leg's key is the one its
//! peer derived.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::Work;
use serde_json::Value;

use common::bedrock_peers_ready as peers_ready;

/// `game --json` on a capture of the proxy's, with no key argument.
fn game_records(pcapng: &Path) -> Vec<Value> {
    let o = common::run_bin(&["game", pcapng.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("NDJSON"))
        .collect()
}

/// bedrock_peers.js as `role` (`server-only` or `client-only`) on `port`,
/// its files named after the role.
fn bedrock_peer(role: &str, version: &str, port: u16, work: &Work, every: &str) -> Command {
    let side = role.trim_end_matches("-only");
    let mut cmd = Command::new("node");
    cmd.arg(common::root().join("scripts/bedrock_peers.js"))
        .args(["--version", version, "--port", &port.to_string()])
        .args([&format!("--{role}"), "1", "--timeout", "15"]);
    if !every.is_empty() {
        cmd.args(["--every", every]);
    }
    cmd.arg("--out")
        .arg(work.file(&format!("{side}-sent.jsonl")))
        .arg("--received")
        .arg(work.file(&format!("{side}-got.jsonl")))
        .arg("--keylog")
        .arg(work.file(&format!("{side}.keylog")));
    cmd
}

/// bedrock_peers.js `--server-only` on `port`, once it waits for a
/// client (its standard error read to the end).
fn bedrock_server(version: &str, port: u16, work: &Work, every: &str) -> common::Proc {
    bedrock_server_with(version, port, work, every, &[])
}

/// [`bedrock_server`] with more of bedrock_peers.js's options.
fn bedrock_server_with(
    version: &str,
    port: u16,
    work: &Work,
    every: &str,
    more: &[&str],
) -> common::Proc {
    let mut server = bedrock_peer("server-only", version, port, work, every);
    server.args(more);
    server.stderr(std::process::Stdio::piped());
    let mut server = common::Proc::spawn(&mut server, "bedrock_peers.js --server-only");
    let mut err = std::io::BufReader::new(server.child.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut err, &mut line).unwrap();
    assert!(line.contains("waiting for a client"), "{line}");
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    server
}

/// bedrock_peers.js `--client-only` to `port`, run to its end, which
/// must be a success.
fn bedrock_client(version: &str, port: u16, work: &Work, every: &str) {
    let client = bedrock_peer("client-only", version, port, work, every)
        .output()
        .expect("node runs");
    assert!(
        client.status.success(),
        "{version}: the client: {}",
        String::from_utf8_lossy(&client.stderr)
    );
}

/// Ours run with `args`, once it said it is listening.
fn listening(args: &[String]) -> common::Ours {
    let mut ours = common::Ours::spawn(args, None);
    ours.wait_record("listening", Duration::from_secs(10))
        .expect("listening");
    ours
}

/// The proxy run with `args` for bedrock-protocol's client of `version`
/// on `listen` (`every` as [`bedrock_peer`] takes it), which must succeed,
/// as must the proxy.
fn proxy_for_client(
    args: &[String],
    (version, listen, work, every): (&str, u16, &Work, &str),
) -> common::Finished {
    let proxy = listening(args);
    bedrock_client(version, listen, work, every);
    let f = proxy.finish(Duration::from_secs(20));
    assert_eq!(f.code, Some(0), "{version}: {}", f.stderr);
    f
}

/// `(name, hex)` of each packet of `records` (bedrock_peers.js's), but
/// those the proxy rewrites or ends.
fn passed(records: &[Value]) -> Vec<(String, String)> {
    const ENDED: [&str; 3] = [
        "login",
        "client_to_server_handshake",
        "server_to_client_handshake",
    ];
    records
        .iter()
        .filter(|r| !ENDED.contains(&r["name"].as_str().unwrap_or("")))
        .map(|r| {
            (
                r["name"].as_str().unwrap_or("").to_string(),
                r["hex"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `got` is `want`, or where they part, and how long each is.
fn same(got: &[(String, String)], want: &[(String, String)], what: &str) {
    if let Some(i) = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i)) {
        panic!(
            "{what}: they part at packet {i} of {} got, {} sent: got {:?}, sent {:?}",
            got.len(),
            want.len(),
            got.get(i),
            want.get(i)
        );
    }
}

#[test]
fn bedrock_protocols_client_plays_through_the_proxy_byte_for_byte() {
    if !peers_ready() {
        return;
    }
    for version in ["1.26.45", "1.21.50"] {
        through_the_proxy(version, false);
    }
}

/// The same through the seeded lossy relay on the upstream leg
/// (scripts/relay.py seed 29: 2% lost, 5% duplicated, 5% reordered each
/// way): the proxy's RakNet client recovers what the relay did, and every
/// packet still arrives byte for byte, in order.
#[test]
fn through_the_proxy_with_a_lossy_upstream_leg() {
    if !peers_ready() || !common::require_tool("python3") {
        return;
    }
    let stats = through_the_proxy("1.26.45", true).expect("the relay's counts");
    let dropped = stats["c2s"]["dropped"].as_u64().unwrap_or(0)
        + stats["s2c"]["dropped"].as_u64().unwrap_or(0);
    println!("relay: {stats}");
    assert!(dropped > 0, "the relay dropped nothing: {stats}");
}

/// bedrock-protocol's client through our proxy to bedrock-protocol's
/// server in `version`, the upstream leg through the lossy relay when
/// `relay` (its counts returned); everything checked.
fn through_the_proxy(version: &str, relay: bool) -> Option<Value> {
    {
        let work = Work::new(&format!("proxy-{version}-{relay}"));
        let (upstream, listen) = (common::free_port_pair(), common::free_port_pair());
        // The relay on 127.0.0.2 with the server's port number (jsp-raknet
        // checks the port its client names).
        let relayed = relay.then(|| {
            let mut cmd = Command::new("python3");
            cmd.arg(common::root().join("scripts/relay.py"))
                .args(["--listen", &format!("127.0.0.2:{upstream}")])
                .args(["--target", &format!("127.0.0.1:{upstream}")])
                .args(["--seed", "29", "--loss", "0.02", "--dup", "0.05"])
                .args(["--reorder", "0.05", "--duration", "60", "--latest-client"])
                .arg("--stats-json")
                .arg(work.file("relay.json"));
            cmd.spawn().expect("relay.py starts")
        });
        let upstream_host = if relay { "127.0.0.2" } else { "127.0.0.1" };
        let mut server = bedrock_server(version, upstream, &work, "7");
        let keys = work.file("proxy.keylog");
        let pcapng = work.file("proxy.pcapng");
        let args = common::args(&[
            "proxy",
            "--listen",
            &format!("127.0.0.1:{listen}"),
            "--upstream",
            &format!("{upstream_host}:{upstream}"),
            "--once",
            "--json",
            "--keylog-out",
            keys.to_str().unwrap(),
            "-w",
            pcapng.to_str().unwrap(),
        ]);
        let f = proxy_for_client(&args, (version, listen, &work, "7"));
        assert_eq!(
            server.exit_code(Duration::from_secs(20)),
            Some(0),
            "{version}: the server"
        );
        // What each sent, the other got, in order, byte for byte.
        let (c_sent, c_got) = (
            lines(&work.file("client-sent.jsonl")),
            lines(&work.file("client-got.jsonl")),
        );
        let (s_sent, s_got) = (
            lines(&work.file("server-sent.jsonl")),
            lines(&work.file("server-got.jsonl")),
        );
        let (up, down) = (passed(&c_sent), passed(&s_sent));
        println!(
            "{version}: c2s {} packets sent, {} passed; s2c {} sent, {} passed",
            c_sent.len(),
            up.len(),
            s_sent.len(),
            down.len()
        );
        assert!(
            up.len() > 100 && down.len() > 100,
            "--every: {} {}",
            up.len(),
            down.len()
        );
        // The server stops reading at the client's first Disconnect (the
        // client may send one more as it closes).
        let first_bye = up
            .iter()
            .position(|(n, _)| n == "disconnect")
            .expect("a disconnect");
        let got = passed(&s_got);
        let upto = got.len().clamp(first_bye + 1, up.len());
        same(
            &got,
            &up[..upto],
            &format!("{version}: the server got what the client sent"),
        );
        same(
            &passed(&c_got),
            &down,
            &format!("{version}: the client got what the server sent"),
        );
        // Each leg's key is its peers'.
        let ours = std::fs::read_to_string(&keys).unwrap();
        for side in ["client", "server"] {
            let theirs = std::fs::read_to_string(work.file(&format!("{side}.keylog"))).unwrap();
            let key = theirs.split_whitespace().last().unwrap();
            assert!(
                ours.contains(key),
                "{version}: the {side}'s key {theirs} in {ours}"
            );
        }
        // The proxy showed and counted both ways.
        let counts = f.one("game_counts");
        assert_eq!(counts["players"], 1);
        let count = |dir: &str| -> u64 {
            counts[dir]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_u64().unwrap())
                .sum()
        };
        assert_eq!(count("c2s") as usize, c_sent.len(), "{version}");
        assert_eq!(count("s2c") as usize, s_sent.len(), "{version}");
        let rewritten: Vec<&str> = f
            .of_type("game")
            .iter()
            .filter(|r| r.get("relay").is_some())
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(rewritten.len(), 3, "{rewritten:?}");
        // Its capture of both legs opens in `game` with the keys inside,
        // nothing opaque: each leg carried what its sender sent.
        let records = game_records(&pcapng);
        let opaque = records.iter().filter(|r| r["type"] != "game").count();
        assert_eq!(opaque, 0, "{version}: every batch of both legs decrypts");
        let mut flows: Vec<u64> = records
            .iter()
            .map(|r| r["flow"].as_u64().unwrap())
            .collect();
        flows.sort_unstable();
        flows.dedup();
        assert_eq!(flows.len(), 2, "{version}: a flow per leg");
        let leg = |flow: u64, dir: &str| -> Vec<(String, String)> {
            let shown: Vec<Value> = records
                .iter()
                .filter(|r| r["flow"] == flow && r["dir"] == dir)
                .map(|r| serde_json::json!({"name": r["name"], "hex": r["data"]}))
                .collect();
            passed(&shown)
        };
        let (player, upstream) = (flows[0], flows[1]);
        same(
            &leg(upstream, "c2s"),
            &up,
            &format!("{version}: the upstream leg c2s"),
        );
        same(
            &leg(player, "s2c"),
            &down,
            &format!("{version}: the player's leg s2c"),
        );
        // tshark reads the file.
        if common::require_tool("tshark") {
            let t = Command::new("tshark")
                .arg("-r")
                .arg(&pcapng)
                .output()
                .unwrap();
            assert!(
                t.status.success(),
                "tshark: {}",
                String::from_utf8_lossy(&t.stderr)
            );
        }
        // editcap copies it, its secrets kept (`game` opens the copy).
        if common::require_tool("editcap") {
            let copy = work.file("copy.pcapng");
            let e = Command::new("editcap")
                .args(["-F", "pcapng"])
                .arg(&pcapng)
                .arg(&copy)
                .output()
                .unwrap();
            assert!(e.status.success(), "editcap: {e:?}");
            let again = game_records(&copy);
            assert_eq!(
                again.len(),
                records.len(),
                "{version}: the copy opens as well"
            );
        }
        relayed.map(|mut r| {
            // SIGINT: the relay writes its counts and exits.
            unsafe { libc::kill(r.id() as i32, libc::SIGINT) };
            let _ = r.wait();
            let text = std::fs::read_to_string(work.file("relay.json")).unwrap_or_default();
            serde_json::from_str(&text).unwrap_or(Value::Null)
        })
    }
}

/// Two players at once: two bedrock-protocol clients log in through the
/// proxy to our `serve --bedrock` at the same time, each on its own
/// upstream leg; both spawn, chat and leave; the proxy counts two players
/// and its capture holds four flows (a leg each way for each), every batch
/// decrypted with the keys inside.
#[test]
fn two_players_through_the_proxy_at_once() {
    if !peers_ready() {
        return;
    }
    let work = Work::new("proxy-two");
    let (upstream, listen) = (common::free_port_pair(), common::free_port_pair());
    let serve = common::args(&[
        "serve",
        "--listen",
        &format!("127.0.0.1:{upstream}"),
        "--bedrock",
        "--version",
        "1.26.45",
        "--json",
    ]);
    let serve = listening(&serve);
    let pcapng = work.file("two.pcapng");
    let args = common::args(&[
        "proxy",
        "--listen",
        &format!("127.0.0.1:{listen}"),
        "--upstream",
        &format!("127.0.0.1:{upstream}"),
        "--json",
        "-w",
        pcapng.to_str().unwrap(),
    ]);
    let proxy = listening(&args);
    let clients: Vec<std::process::Child> = ["Alex", "Steve"]
        .iter()
        .map(|name| {
            Command::new("node")
                .arg(common::root().join("scripts/bedrock_peers.js"))
                .args(["--version", "1.26.45", "--port", &listen.to_string()])
                .args(["--client-only", "1", "--username", name, "--out"])
                .arg(work.file(&format!("{name}-sent.jsonl")))
                .arg("--keylog")
                .arg(work.file(&format!("{name}.keylog")))
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("node runs")
        })
        .collect();
    for c in clients {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    std::thread::sleep(Duration::from_millis(500));
    proxy.proc.signal(libc::SIGINT);
    let f = proxy.finish(Duration::from_secs(10));
    serve.proc.signal(libc::SIGTERM);
    let s = serve.finish(Duration::from_secs(10));
    assert_eq!(f.one("game_counts")["players"], 2, "{}", f.stderr);
    let mut names: Vec<&str> = f
        .of_type("login")
        .iter()
        .filter(|r| r["event"] == "login")
        .map(|r| r["detail"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["Alex", "Steve"]);
    let spawned = s
        .of_type("login")
        .iter()
        .filter(|r| r["event"] == "spawned")
        .count();
    assert_eq!(spawned, 2, "our server saw both spawn");
    let records = game_records(&pcapng);
    assert!(
        records.iter().all(|r| r["type"] == "game"),
        "nothing opaque"
    );
    let flows: std::collections::BTreeSet<u64> = records
        .iter()
        .map(|r| r["flow"].as_u64().unwrap())
        .collect();
    assert_eq!(flows.len(), 4, "{flows:?}");
}

/// A Transfer followed: bedrock-protocol's server answers the player's chat
/// with a Transfer to a second bedrock-protocol server; the proxy sends the
/// player its own address instead, the player (bedrock_peers.js, as the
/// game does) connects again, and the proxy takes this session on to the
/// second server, where the player spawns, chats and leaves. The capture
/// holds both sessions, every batch decrypted.
#[test]
fn a_transfer_goes_on_through_the_proxy() {
    if !peers_ready() {
        return;
    }
    let work = Work::new("proxy-transfer");
    let (first, second, listen) = (
        common::free_port_pair(),
        common::free_port_pair(),
        common::free_port_pair(),
    );
    let server = |port: u16, name: &str, more: &[&str]| {
        let mut cmd = Command::new("node");
        cmd.arg(common::root().join("scripts/bedrock_peers.js"))
            .args(["--version", "1.26.45", "--port", &port.to_string()])
            .args(["--server-only", "1", "--timeout", "15", "--out"])
            .arg(work.file(&format!("{name}.jsonl")))
            .arg("--keylog")
            .arg(work.file(&format!("{name}.keylog")))
            .args(more)
            .stderr(std::process::Stdio::piped());
        let mut p = common::Proc::spawn(&mut cmd, name);
        let mut err = std::io::BufReader::new(p.child.stderr.take().unwrap());
        let mut line = String::new();
        std::io::BufRead::read_line(&mut err, &mut line).unwrap();
        assert!(line.contains("waiting for a client"), "{line}");
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        p
    };
    let second_addr = format!("127.0.0.1:{second}");
    let mut a = server(first, "first", &["--transfer", &second_addr]);
    let mut b = server(second, "second", &[]);
    let pcapng = work.file("transfer.pcapng");
    let args = common::args(&[
        "proxy",
        "--listen",
        &format!("127.0.0.1:{listen}"),
        "--upstream",
        &format!("127.0.0.1:{first}"),
        "--once",
        "--json",
        "-w",
        pcapng.to_str().unwrap(),
    ]);
    let proxy = listening(&args);
    let client = Command::new("node")
        .arg(common::root().join("scripts/bedrock_peers.js"))
        .args(["--version", "1.26.45", "--port", &listen.to_string()])
        .args(["--client-only", "1", "--timeout", "15", "--out"])
        .arg(work.file("client.jsonl"))
        .arg("--keylog")
        .arg(work.file("client.keylog"))
        .output()
        .expect("node runs");
    let said = String::from_utf8_lossy(&client.stderr);
    assert!(client.status.success(), "the client: {said}");
    assert!(
        said.contains(&format!("transferred to 127.0.0.1:{listen}")),
        "the player was sent the proxy's address: {said}"
    );
    let f = proxy.finish(Duration::from_secs(20));
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    assert_eq!(
        a.exit_code(Duration::from_secs(20)),
        Some(0),
        "the first server"
    );
    assert_eq!(
        b.exit_code(Duration::from_secs(20)),
        Some(0),
        "the second server"
    );
    let transfer = f
        .of_type("login")
        .into_iter()
        .find(|r| r["event"] == "transfer")
        .expect("a transfer record");
    assert!(
        transfer["detail"].as_str().unwrap().contains(&second_addr),
        "{transfer}"
    );
    assert_eq!(f.one("game_counts")["players"], 2);
    let records = game_records(&pcapng);
    assert!(
        records.iter().all(|r| r["type"] == "game"),
        "nothing opaque"
    );
    let flows: std::collections::BTreeSet<u64> = records
        .iter()
        .map(|r| r["flow"].as_u64().unwrap())
        .collect();
    assert_eq!(flows.len(), 4, "two sessions, two legs each: {flows:?}");
    // The second server got the chat the player sent after the transfer.
    let got = lines(&work.file("second.jsonl"));
    assert!(
        got.iter().any(|r| r["name"] == "text"),
        "the second server echoed the chat"
    );
}

/// The hex of each game packet aiortc's peer (nethernet_peers.py's
/// truth) recorded as `event` (`sent` or `received`), but the Login.
fn aiortc_packets(truth: &Path, event: &str) -> Vec<String> {
    lines(truth)
        .iter()
        .filter(|r| r["type"] == "packet" && r["event"] == event && r["id"] != 1)
        .map(|r| r["hex"].as_str().unwrap().to_string())
        .collect()
}

/// The hex of each packet of `records` (bedrock_peers.js's) the proxy
/// passes.
fn hex_of(records: &[Value]) -> Vec<String> {
    passed(records).into_iter().map(|(_, h)| h).collect()
}

/// The proxy's capture of a bridge between the transports, checked: its
/// game records (`game` with no key argument, nothing opaque) and their
/// two flows, a leg each; tshark decrypts the NetherNet leg with the
/// file's own keys; `handshake` reads its signaling (`POST /v1/join/`).
fn bridged_capture(
    pcapng: &Path,
    dir: &common::TempDir,
) -> (Vec<Value>, std::collections::BTreeSet<u64>) {
    let records = game_records(pcapng);
    let opaque = records.iter().filter(|r| r["type"] != "game").count();
    assert_eq!(opaque, 0, "every batch of both legs opens: {records:?}");
    let flows: std::collections::BTreeSet<u64> = records
        .iter()
        .map(|r| r["flow"].as_u64().unwrap())
        .collect();
    assert_eq!(flows.len(), 2, "a flow per leg: {flows:?}");
    if common::require_tool("tshark") && common::require_tool("openssl") {
        let n = common::tshark_dtls_messages(pcapng, dir);
        println!("tshark decrypts {n} binary data-channel messages");
        assert!(n > 10, "tshark decrypts the DTLS leg: {n}");
    }
    let o = common::run_bin(&["handshake", pcapng.to_str().unwrap(), "--json"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("POST /v1/join/"), "the signaling: {text}");
    (records, flows)
}

/// The bridge from RakNet to NetherNet: bedrock-protocol's client (RakNet)
/// logs in through the proxy to aiortc's NetherNet server
/// (nethernet_peers.py --game, playing the server's side of
/// bedrock-protocol's session of the version), spawns, chats and leaves;
/// what each application sent, the other received byte for byte, but the
/// Login the proxy signs again and the player's leg's own encryption
/// handshake. The proxy's capture holds both legs, the signaling's TCP too,
/// and opens in `game` with the keys inside: 0 opaque, the NetherNet leg
/// carrying what aiortc's server received and sent.
#[test]
fn a_raknet_player_through_the_proxy_to_a_nethernet_server() {
    let Some(py) = common::nethernet_game_peers() else {
        return;
    };
    let version = "1.26.45";
    let dir = common::TempDir::new("proxy-to-nethernet");
    let work = Work::new("proxy-to-nethernet");
    let (upstream, listen) = (common::free_port_pair(), common::free_port_pair());
    let packets = common::bedrock_protocol_packets(&dir, version, common::free_port_pair());
    let (truth, theirs) = (work.file("truth.jsonl"), work.file("aiortc.keylog"));
    let mut server = common::nethernet_peer(&py, "server", upstream, &packets, &truth, &theirs);
    let pcapng = work.file("proxy.pcapng");
    let args = common::args(&[
        "proxy",
        "--listen",
        &format!("127.0.0.1:{listen}"),
        "--upstream",
        &format!("nethernet://127.0.0.1:{upstream}"),
        "--version",
        version,
        "--once",
        "--json",
        "-w",
        pcapng.to_str().unwrap(),
    ]);
    let f = proxy_for_client(&args, (version, listen, &work, ""));
    assert_eq!(
        server.exit_code(Duration::from_secs(30)),
        Some(0),
        "aiortc's server: {}",
        common::tail(&common::read_text(&truth), 5)
    );
    let up = f.one("joined");
    println!("{up}");
    assert_eq!(up["peer"], format!("127.0.0.1:{upstream}"));
    assert_eq!(up["transport"], "nethernet");
    // What each application sent, the other received.
    let (c_sent, c_got) = (
        hex_of(&lines(&work.file("client-sent.jsonl"))),
        hex_of(&lines(&work.file("client-got.jsonl"))),
    );
    let (s_got, s_sent) = (
        aiortc_packets(&truth, "received"),
        aiortc_packets(&truth, "sent"),
    );
    println!(
        "c2s: the client sent {} that pass, the server got {}; s2c: the server sent {}, the client got {}",
        c_sent.len(),
        s_got.len(),
        s_sent.len(),
        c_got.len()
    );
    assert!(c_sent.len() > 5 && s_sent.len() > 10, "a whole session");
    assert_eq!(s_got, c_sent, "the server got what the client sent");
    assert_eq!(c_got, s_sent, "the client got what the server sent");
    let (records, flows) = bridged_capture(&pcapng, &dir);
    // The NetherNet leg: the flow without an encryption handshake.
    let leg = flows
        .iter()
        .find(|&&f| {
            !records
                .iter()
                .any(|r| r["flow"] == f && r["name"] == "client_to_server_handshake")
        })
        .copied()
        .expect("a leg without a handshake");
    let nethernet_leg = |dir: &str| -> Vec<String> {
        records
            .iter()
            .filter(|r| r["flow"] == leg && r["dir"] == dir && r["name"] != "login")
            .map(|r| r["data"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(nethernet_leg("c2s"), s_got, "the NetherNet leg c2s");
    assert_eq!(nethernet_leg("s2c"), s_sent, "the NetherNet leg s2c");
}

/// The bridge from NetherNet to RakNet: aiortc's NetherNet client
/// (nethernet_peers.py client --game, playing the client's side of
/// bedrock-protocol's session of the version) joins the proxy, which
/// listens on both transports on one port number, and plays through it to
/// bedrock-protocol's server on RakNet; what each application sent, the
/// other received byte for byte (but the Login, signed again, and the
/// upstream leg's encryption handshake); the capture opens with the keys
/// inside (0 opaque), and its DTLS key is the one aiortc logged.
#[test]
fn a_nethernet_player_through_the_proxy_to_a_raknet_server() {
    let Some(py) = common::nethernet_game_peers() else {
        return;
    };
    let version = "1.26.45";
    let dir = common::TempDir::new("proxy-from-nethernet");
    let work = Work::new("proxy-from-nethernet");
    let (upstream, listen) = (common::free_port_pair(), common::free_port_pair());
    let packets = common::bedrock_protocol_packets(&dir, version, common::free_port_pair());
    let mut server = bedrock_server(version, upstream, &work, "");
    let pcapng = work.file("proxy.pcapng");
    let ours = work.file("ours.keylog");
    let args = common::args(&[
        "proxy",
        "--listen",
        &format!("127.0.0.1:{listen}"),
        "--upstream",
        &format!("raknet://127.0.0.1:{upstream}"),
        "--version",
        version,
        "--once",
        "--json",
        "--tls-keylog-out",
        ours.to_str().unwrap(),
        "-w",
        pcapng.to_str().unwrap(),
    ]);
    let mut proxy = common::Ours::spawn(&args, None);
    assert_eq!(
        proxy.wait_records("listening", 2, Duration::from_secs(10)),
        2,
        "listening on both transports"
    );
    let (truth, theirs) = (work.file("truth.jsonl"), work.file("aiortc.keylog"));
    let files = (packets.as_path(), truth.as_path(), theirs.as_path());
    let mut client = common::nethernet_peer_with(&py, "client", listen, files, &["--chat"]);
    let code = client.exit_code(Duration::from_secs(60));
    let f = proxy.finish(Duration::from_secs(20));
    assert_eq!(
        code,
        Some(0),
        "aiortc's client: {} / {}",
        common::tail(&common::read_text(&truth), 5),
        f.stderr
    );
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    for r in f.of_type("login") {
        println!("{r}");
    }
    assert_eq!(
        server.exit_code(Duration::from_secs(20)),
        Some(0),
        "bedrock-protocol's server"
    );
    assert!(
        f.of_type("joined")
            .iter()
            .any(|r| r["transport"] == "nethernet"),
        "the player joined over NetherNet: {:?}",
        f.records
    );
    let (c_sent, c_got) = (
        aiortc_packets(&truth, "sent"),
        aiortc_packets(&truth, "received"),
    );
    let (s_sent, s_got) = (
        hex_of(&lines(&work.file("server-sent.jsonl"))),
        hex_of(&lines(&work.file("server-got.jsonl"))),
    );
    println!(
        "c2s: the client sent {}, the server got {} that pass; s2c: the server sent {} that pass, the client got {}",
        c_sent.len(),
        s_got.len(),
        s_sent.len(),
        c_got.len()
    );
    assert!(c_sent.len() > 5 && s_sent.len() > 10, "a whole session");
    assert_eq!(s_got, c_sent, "the server got what the client sent");
    assert_eq!(c_got, s_sent, "the client got what the server sent");
    // The DTLS key of the player's leg is the one aiortc logged.
    let key = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let theirs_line = key(&theirs);
    let first = theirs_line.lines().next().unwrap_or("");
    assert!(
        first.starts_with("CLIENT_RANDOM ") && key(&ours).contains(first),
        "{first} in {}",
        key(&ours)
    );
    bridged_capture(&pcapng, &dir);
}

/// The live view takes `game`'s `-Y` and `-e`: bedrock-protocol's client
/// chats through the proxy; `-Y 'name == text'` with `-e dir -e name -e
/// text.message` prints two rows and nothing else, the chat up and
/// its echo down, with the message bedrock-protocol's client sent; a
/// filter that does not parse exits with 4 before anything starts.
#[test]
fn the_live_view_takes_filters_and_fields() {
    let bad = common::run_bin(&["proxy", "--upstream", "127.0.0.1:9", "-Y", "name =="]);
    assert_eq!(bad.status.code(), Some(4), "a bad filter");
    if !peers_ready() {
        return;
    }
    let version = "1.26.45";
    let work = Work::new("proxy-view");
    let (upstream, listen) = (common::free_port_pair(), common::free_port_pair());
    let mut server = bedrock_server(version, upstream, &work, "");
    let args = common::args(&[
        "proxy",
        "--listen",
        &format!("127.0.0.1:{listen}"),
        "--upstream",
        &format!("raknet://127.0.0.1:{upstream}"),
        "--once",
        "-Y",
        "name == text",
        "-e",
        "dir",
        "-e",
        "name",
        "-e",
        "text.message",
    ]);
    let mut cmd = common::bin();
    cmd.args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let proxy = cmd.spawn().expect("the proxy starts");
    // Rows only: it listens once its signaling port takes a connection.
    let up = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        std::net::TcpStream::connect(("127.0.0.1", listen)).is_ok()
    });
    assert!(up, "the proxy listens");
    bedrock_client(version, listen, &work, "");
    let (tx, rx) = std::sync::mpsc::channel();
    let pid = proxy.id();
    std::thread::spawn(move || tx.send(proxy.wait_with_output()));
    let out = match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(o) => o.expect("the proxy's output"),
        Err(_) => {
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("the proxy did not end");
        }
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(server.exit_code(Duration::from_secs(20)), Some(0));
    let rows: Vec<Vec<String>> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect();
    println!("{rows:?}");
    assert_eq!(rows.len(), 2, "the chat and its echo: {rows:?}");
    assert_eq!((rows[0][0].as_str(), rows[1][0].as_str()), ("c2s", "s2c"));
    assert!(rows.iter().all(|r| r[1] == "text"));
    assert!(
        !rows[0][2].is_empty() && rows[0][2] == rows[1][2],
        "{rows:?}"
    );
    let sent = lines(&work.file("client-sent.jsonl"));
    let chat = sent.iter().find(|r| r["name"] == "text").expect("a chat");
    let hex = chat["hex"].as_str().unwrap();
    let message_hex: String = rows[0][2].bytes().map(|b| format!("{b:02x}")).collect();
    assert!(hex.contains(&message_hex), "{} in {hex}", rows[0][2]);
}

/// Bounded memory per session: bedrock-protocol's server answers the
/// player's chat with 400 level_chunks at once (`--burst`, about 1.3 MB of
/// batches), faster than the proxy's RakNet connection to the player
/// takes them; with `--max-queued 128` the session ends once more than
/// 128 KB wait toward the player, in words, and the proxy itself goes on
/// to its end (`--once`) and prints its counts.
#[test]
fn a_player_that_does_not_keep_up_ends_its_session() {
    if !peers_ready() {
        return;
    }
    let version = "1.26.45";
    let work = Work::new("proxy-bound");
    let (upstream, listen) = (common::free_port_pair(), common::free_port_pair());
    let mut server = bedrock_server_with(version, upstream, &work, "", &["--burst", "400"]);
    let args = common::args(&[
        "proxy",
        "--listen",
        &format!("raknet://127.0.0.1:{listen}"),
        "--upstream",
        &format!("raknet://127.0.0.1:{upstream}"),
        "--once",
        "--json",
        "--hide",
        "level_chunk",
        "--max-queued",
        "128",
    ]);
    let proxy = listening(&args);
    // The player's session is cut: its own run fails, as it should.
    let _ = bedrock_peer("client-only", version, listen, &work, "").output();
    let f = proxy.finish(Duration::from_secs(30));
    let _ = server.wait_or_kill(Duration::from_secs(5));
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    let closed = f
        .of_type("login")
        .into_iter()
        .find(|r| r["event"] == "closed")
        .expect("the session's end");
    println!("{closed}");
    let why = closed["detail"].as_str().unwrap();
    assert!(
        why.starts_with("the player does not keep up: ") && why.ends_with("more than 128 KB"),
        "{why}"
    );
    let chunks = f.one("game_counts")["s2c"]["level_chunk"]
        .as_u64()
        .unwrap_or(0);
    assert!(chunks > 0, "the burst came: {chunks} chunks");
}
