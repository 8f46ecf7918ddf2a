//! The Bedrock game layer against a real second implementation:
//! bedrock-protocol's server and client (npm, on jsp-raknet) log in over
//! loopback with encryption, recording from inside every game packet they
//! sent (scripts/bedrock_peers.js); tcpdump captures the session; `game
//! --json` must name every packet both ways with its bytes identical, with
//! the key log or either side's private key, and show the encrypted part as
//! opaque without them. One version of each generation: 1.16.201 (RakNet
//! 10's raw DEFLATE, AES-CFB8), 1.19.1 (raw DEFLATE, AES-CTR), 1.26.45
//! (negotiated compression with the algorithm byte).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{run_bin, Tcpdump, Work};
use raknet_dissect::bedrock::schema::compare::differences;
use serde_json::Value;

use common::bedrock_peers_ready as peers_ready;

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("NDJSON"))
        .collect()
}

fn game(pcap: &Path, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["game", pcap.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let o = run_bin(&args);
    assert!(
        o.status.success(),
        "game {extra:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("NDJSON"))
        .collect()
}

/// `(dir, batch, name, hex, encrypted)` of each packet, in order.
fn packets(v: &[Value], hex_key: &str) -> Vec<(String, u64, String, String, bool)> {
    v.iter()
        .filter(|r| r.get("type").is_none_or(|t| t == "game"))
        .map(|r| {
            (
                r["dir"].as_str().unwrap().to_string(),
                r["batch"].as_u64().unwrap(),
                r["name"].as_str().unwrap_or("?").to_string(),
                r[hex_key].as_str().unwrap().to_string(),
                r["encrypted"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// One session of `version`, through a seeded lossy relay when `relay`;
/// `play` rounds of gameplay (move_player, level_chunk of 3 KB compressed:
/// split across datagrams) after the spawn.
fn session(version: &str, relay: bool, play: u32) {
    let work = Work::new(&format!("bedrock-{version}-{relay}"));
    let port = common::free_port_pair();
    let relayed = relay.then(|| {
        let py = common::require_tool("python3");
        assert!(py, "python3 runs the relay");
        let mut cmd = Command::new("python3");
        cmd.arg(common::root().join("scripts/relay.py"))
            .args(["--listen", &format!("127.0.0.2:{port}")])
            .args(["--target", &format!("127.0.0.1:{port}")])
            .args([
                "--seed",
                "14",
                "--loss",
                "0.02",
                "--dup",
                "0.05",
                "--reorder",
                "0.05",
            ])
            .args(["--duration", "40", "--stats-json"])
            .arg(work.file("relay.json"));
        cmd.spawn().expect("relay.py starts")
    });
    let pcap = work.file("session.pcap");
    let (sent, keylog) = (work.file("sent.jsonl"), work.file("session.keylog"));
    let (client_pem, server_pem) = (work.file("client.pem"), work.file("server.pem"));
    // The server's side only: not the client's leg to the relay.
    let dump = Tcpdump::start(&pcap, &format!("udp port {port} and not host 127.0.0.2"));
    let o = Command::new("node")
        .arg(common::root().join("scripts/bedrock_peers.js"))
        .args(["--version", version, "--port", &port.to_string()])
        .args(["--play", &play.to_string()])
        .arg("--out")
        .arg(&sent)
        .arg("--keylog")
        .arg(&keylog)
        .arg("--client-pem")
        .arg(&client_pem)
        .arg("--server-pem")
        .arg(&server_pem)
        .args([
            "--connect-host",
            if relay { "127.0.0.2" } else { "127.0.0.1" },
        ])
        .output()
        .expect("node runs");
    dump.stop();
    if let Some(mut r) = relayed {
        // SIGINT: the relay writes its counts and exits.
        unsafe { libc::kill(r.id() as i32, libc::SIGINT) };
        let _ = r.wait();
        let stats = std::fs::read_to_string(work.file("relay.json")).unwrap_or_default();
        println!("{version} through the relay: {stats}");
        // The capture shows what the relay did: resends and duplicates.
        let o = run_bin(&["flows", pcap.to_str().unwrap(), "--json"]);
        let f: Value = serde_json::from_slice(&o.stdout).expect("one flow record");
        let hits = ["c2s", "s2c"]
            .iter()
            .map(|d| {
                f[d]["duplicates"].as_u64().unwrap_or(0) + f[d]["resends"].as_u64().unwrap_or(0)
            })
            .sum::<u64>();
        println!("{version}: {hits} duplicates and resends in the capture");
        assert!(hits > 0, "the relay changed nothing: {f}");
    }
    assert!(
        o.status.success(),
        "bedrock_peers.js {version}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let truth = lines(&sent);
    let want = packets(&truth, "hex");
    assert!(want.len() >= 8, "{version}: {want:?}");
    let encrypted = want.iter().filter(|p| p.4).count();
    assert!(encrypted >= 4, "{version}: the session was encrypted");
    let chunks = want.iter().filter(|p| p.2 == "level_chunk").count();
    assert_eq!(chunks, play as usize, "{version}: the gameplay rounds");

    // With the key log: every packet, both ways, bytes identical.
    let with_log = game(&pcap, &["--keylog", keylog.to_str().unwrap()]);
    let got = packets(&with_log, "data");
    for dir in ["c2s", "s2c"] {
        let w: Vec<_> = want.iter().filter(|p| p.0 == dir).collect();
        let g: Vec<_> = got.iter().filter(|p| p.0 == dir).collect();
        assert_eq!(g, w, "{version} {dir}");
    }
    assert!(
        with_log.iter().all(|r| r["type"] == "game"),
        "{version}: nothing opaque"
    );
    println!(
        "{version}: {} packets ({encrypted} encrypted) named and byte-identical",
        got.len()
    );

    // Either side's private key opens it as the key log does.
    for pem in [&client_pem, &server_pem] {
        let by_key = game(&pcap, &["--key", pem.to_str().unwrap()]);
        assert_eq!(
            packets(&by_key, "data"),
            got,
            "{version} --key {}",
            pem.display()
        );
    }

    // Without keys: the packets up to the encryption, then opaque batches.
    let bare = game(&pcap, &[]);
    let clear: Vec<_> = want.iter().filter(|p| !p.4).cloned().collect();
    assert_eq!(packets(&bare, "data"), clear, "{version} without keys");
    let opaque: Vec<&Value> = bare.iter().filter(|r| r["type"] == "game_opaque").collect();
    let batches: std::collections::BTreeSet<(String, u64)> = want
        .iter()
        .filter(|p| p.4)
        .map(|p| (p.0.clone(), p.1))
        .collect();
    assert_eq!(
        opaque.len(),
        batches.len(),
        "{version}: an opaque record per encrypted batch"
    );
    assert!(opaque.iter().all(|r| r["reason"] == "encrypted"));

    // The login, decoded.
    let login = with_log
        .iter()
        .find(|r| r["name"] == "login")
        .expect("login");
    assert_eq!(login["fields"]["display_name"], "Steve");
    // Offline logins: a self-signed chain (or, from 1.26.10, a self-signed
    // token) that verifies, not by Mojang; the server's handshake signed.
    let f = &login["fields"];
    assert!(
        f["chain_verifies"] == true || f["token_verifies"] == true,
        "{version}: {f}"
    );
    assert!(f.get("signed_by_mojang").is_none_or(|m| m == false));
    let stch = with_log
        .iter()
        .find(|r| r["name"] == "server_to_client_handshake")
        .unwrap();
    assert_eq!(stch["fields"]["signature_valid"], true, "{version}");
    assert_eq!(login["fields"]["game_version"], version);
    // messages name the game packets inside each 0xFE message.
    let o = run_bin(&["messages", pcap.to_str().unwrap(), "--json"]);
    let named = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.contains("\"game\":[\"login\"]"))
        .count();
    assert_eq!(named, 1, "{version}: messages names the login");
}

#[test]
fn bedrock_protocol_sessions_of_three_generations() {
    if !peers_ready() {
        return;
    }
    for version in ["1.16.201", "1.19.1", "1.26.45"] {
        session(version, false, 0);
    }
}

/// Loss, duplicates and reordering between the peers (the capture is the
/// server's side): the mirror's delivery order keeps the decryption in step.
#[test]
fn bedrock_protocol_through_a_lossy_relay() {
    if !peers_ready() {
        return;
    }
    session("1.26.45", true, 10);
}

/// The bundled sample (no outside tool needed): named to the encryption
/// without a key, all 23 packets with its key log (its .packets.jsonl is
/// what each side recorded sending).
#[test]
fn the_bundled_login_sample() {
    let pcap = common::sample("bedrock-login.pcap");
    let bare = game(&pcap, &[]);
    let names: Vec<&str> = bare
        .iter()
        .map(|r| r["name"].as_str().unwrap_or(""))
        .collect();
    let clear = [
        "request_network_settings",
        "network_settings",
        "login",
        "server_to_client_handshake",
    ];
    assert_eq!(&names[..4], clear);
    assert!(names[4..].iter().all(|n| n.is_empty()));
    assert_eq!(
        bare.iter().filter(|r| r["type"] == "game_opaque").count(),
        15
    );
    let keylog = common::sample("bedrock-login.keylog");
    let all = game(&pcap, &["--keylog", keylog.to_str().unwrap()]);
    let truth = lines(&common::sample("bedrock-login.packets.jsonl"));
    assert_eq!(packets(&all, "data").len(), 23);
    for dir in ["c2s", "s2c"] {
        let want: Vec<_> = packets(&truth, "hex")
            .into_iter()
            .filter(|p| p.0 == dir)
            .collect();
        let got: Vec<_> = packets(&all, "data")
            .into_iter()
            .filter(|p| p.0 == dir)
            .collect();
        assert_eq!(got, want, "{dir}");
    }
    let last = all.last().unwrap();
    assert_eq!(
        (last["name"].as_str(), last["dir"].as_str()),
        (Some("disconnect"), Some("c2s"))
    );
    assert_eq!(all[2]["fields"]["protocol"], 2169);
    let h = run_bin(&[
        "handshake",
        pcap.to_str().unwrap(),
        "--keylog",
        keylog.to_str().unwrap(),
    ]);
    let h = String::from_utf8(h.stdout).unwrap();
    assert!(
        h.contains("game login: the client disconnected after"),
        "{h}"
    );
    // Before 1.19.30 NetworkSettings has the threshold only, big-endian.
    let old = game(&common::sample("bedrock-1.19.1.pcap"), &[]);
    let ns = old
        .iter()
        .find(|r| r["name"] == "network_settings")
        .unwrap();
    assert_eq!(ns["fields"]["compression_threshold"], 512);
    // A key that does not fit: opaque, said once per batch.
    let work = Work::new("wrong-key");
    let wrong = work.file("wrong.keylog");
    std::fs::write(&wrong, format!("BEDROCK_KEY {}\n", "ab".repeat(32))).unwrap();
    let o = game(&pcap, &["--keylog", wrong.to_str().unwrap()]);
    assert!(o[4]["detail"]
        .as_str()
        .unwrap()
        .contains("none of the keys"));
}

/// A client newer than the server: bedrock-protocol's server answers
/// PlayStatus failed_spawn; `handshake` says so with both protocols (the
/// server's from its pong).
#[test]
fn handshake_says_why_the_server_refused_the_game_login() {
    if !peers_ready() {
        return;
    }
    let work = Work::new("refused");
    let port = common::free_port_pair();
    let pcap = work.file("refused.pcap");
    let dump = Tcpdump::start(&pcap, &format!("udp port {port}"));
    let o = Command::new("node")
        .arg(common::root().join("scripts/bedrock_peers.js"))
        .args(["--version", "1.21.90", "--client-version", "1.26.45"])
        .args([
            "--port",
            &port.to_string(),
            "--ping",
            "1",
            "--expect-refusal",
            "1",
        ])
        .arg("--out")
        .arg(work.file("sent.jsonl"))
        .output()
        .expect("node runs");
    dump.stop();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run_bin(&["handshake", pcap.to_str().unwrap(), "--json"]);
    let records: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let game: Vec<&str> = records.iter().filter_map(|r| r["game"].as_str()).collect();
    assert_eq!(game.len(), 1, "{records:?}");
    let g = game[0];
    println!("{g}");
    assert!(
        g.contains("failed_spawn") && g.contains("2169") && g.contains("818"),
        "{g}"
    );
    let text = String::from_utf8(run_bin(&["handshake", pcap.to_str().unwrap()]).stdout).unwrap();
    assert!(
        text.contains("  game login: the server refused the client as too new"),
        "{text}"
    );
}

/// `stats` counts the game packets by name each way (encrypted batches,
/// without a key, as `encrypted`).
#[test]
fn stats_count_game_packets_by_name() {
    let pcap = common::sample("bedrock-login.pcap");
    let o = run_bin(&["stats", pcap.to_str().unwrap(), "--json"]);
    let game: std::collections::BTreeMap<String, (u64, u64)> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["type"] == "stats_game")
        .map(|r| {
            let n = |d: &str| r[d].as_u64().unwrap();
            (
                r["name"].as_str().unwrap().to_string(),
                (n("c2s"), n("s2c")),
            )
        })
        .collect();
    let want: std::collections::BTreeMap<String, (u64, u64)> = [
        ("encrypted", (8, 7)),
        ("login", (1, 0)),
        ("network_settings", (0, 1)),
        ("request_network_settings", (1, 0)),
        ("server_to_client_handshake", (0, 1)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(game, want);
    let text = String::from_utf8(run_bin(&["stats", pcap.to_str().unwrap()]).stdout).unwrap();
    assert!(text.contains("Bedrock game packets, by name"), "{text}");
}

/// `game -Y` and `-e` over game records: their keys (`game.name`, with or
/// without the prefix) and the decoded fields (`game.login.display_name`),
/// each checked against the same records' `--json`.
#[test]
fn game_filters_and_exports_the_decoded_fields() {
    let pcap = common::sample("bedrock-login.pcap");
    let keylog = common::sample("bedrock-login.keylog");
    let (p, k) = (pcap.to_str().unwrap(), keylog.to_str().unwrap());
    let all = game(&pcap, &["--keylog", k]);
    let want_frames = |pred: &dyn Fn(&Value) -> bool| -> Vec<u64> {
        all.iter()
            .filter(|r| pred(r))
            .map(|r| r["frame"].as_u64().unwrap())
            .collect()
    };
    let frames = |filter: &str| -> Vec<u64> {
        game(&pcap, &["--keylog", k, "-Y", filter])
            .iter()
            .map(|r| r["frame"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(
        frames("game.name == disconnect"),
        want_frames(&|r| r["name"] == "disconnect")
    );
    assert_eq!(frames("game.name == disconnect").len(), 1);
    assert_eq!(
        frames("encrypted && dir == s2c"),
        want_frames(&|r| r["encrypted"] == true && r["dir"] == "s2c")
    );
    assert_eq!(
        frames("game.play_status.status_name == player_spawn"),
        want_frames(&|r| r["fields"]["status_name"] == "player_spawn")
    );
    assert_eq!(frames("game.play_status").len(), 2);
    assert_eq!(frames("game.login.protocol > 100 && len > 1000").len(), 1);
    // -e: the fields as columns, absent ones empty.
    let o = run_bin(&[
        "game",
        p,
        "--keylog",
        k,
        "-e",
        "game.name",
        "-e",
        "game.login.display_name",
        "-e",
        "fields.status_name",
        "-Y",
        "game.login || game.play_status",
    ]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "login\tSteve\t\nplay_status\t\tlogin_success\nplay_status\t\tplayer_spawn\n"
    );
    // Without a key, the opaque batches by their reason.
    let o = run_bin(&[
        "game", p, "-T", "fields", "-e", "type", "-e", "reason", "-Y", "reason",
    ]);
    let rows = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(rows.lines().count(), 15, "{rows}");
    assert!(
        rows.lines().all(|l| l == "game_opaque\tencrypted"),
        "{rows}"
    );
    // A misspelt packet: exit 4 and the nearest name.
    let o = run_bin(&["game", p, "-Y", "game.logn.display_name == Steve"]);
    assert_eq!(o.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&o.stderr).contains("did you mean login"));
}

/// `flows` on a Bedrock flow: the game version and protocol, the player,
/// the compression and whether the encryption was opened, in the table and
/// under the `game` key of its record.
#[test]
fn flows_say_the_game_session() {
    let pcap = common::sample("bedrock-login.pcap");
    let keylog = common::sample("bedrock-login.keylog");
    let (p, k) = (pcap.to_str().unwrap(), keylog.to_str().unwrap());
    let record = |extra: &[&str]| -> Value {
        let mut args = vec!["flows", p, "--json"];
        args.extend_from_slice(extra);
        let o = run_bin(&args);
        assert!(o.status.success(), "{o:?}");
        serde_json::from_slice(&o.stdout).expect("one flow record")
    };
    let bare = record(&[]);
    let g = &bare["game"];
    assert_eq!(g["version"], "1.26.45");
    assert_eq!(g["protocol"], 2169);
    assert_eq!(g["player"], "Steve");
    assert_eq!(g["compression"], "deflate");
    assert_eq!(g["encryption"], "encrypted");
    // The packets up to the encryption, then the batches not shown (the
    // counts of `stats`).
    assert_eq!(g["packets"], serde_json::json!({"c2s": 2, "s2c": 2}));
    assert_eq!(g["opaque"], serde_json::json!({"c2s": 8, "s2c": 7}));
    let opened = record(&["--keylog", k]);
    assert_eq!(opened["game"]["encryption"], "decrypted");
    assert_eq!(
        opened["game"]["opaque"],
        serde_json::json!({"c2s": 0, "s2c": 0})
    );
    let n = opened["game"]["packets"]["c2s"].as_u64().unwrap()
        + opened["game"]["packets"]["s2c"].as_u64().unwrap();
    assert_eq!(n, game(&pcap, &["--keylog", k]).len() as u64);
    // The rest of the record is the RakNet flow's, key or not.
    let strip = |mut v: Value| {
        v.as_object_mut().unwrap().remove("game");
        v
    };
    assert_eq!(strip(bare), strip(opened));
    let table = String::from_utf8(run_bin(&["flows", p]).stdout).unwrap();
    assert!(table.contains("Bedrock 1.26.45 (2169)"), "{table}");
    assert!(table.contains("deflate, encrypted"), "{table}");
    // -Y over the game key.
    let o = run_bin(&[
        "flows",
        p,
        "-Y",
        "game.player == Steve",
        "-e",
        "game.encryption",
    ]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "encrypted\n");
    // A RakNet flow has none.
    let raknet = common::sample("handshake.pcap");
    let o = run_bin(&["flows", raknet.to_str().unwrap(), "--json"]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("\"game\""));
}

/// The default view (`read`) of a Bedrock flow: the 0xFE capsules are
/// `game`, and each packet line ends with the game packets of the
/// messages it delivered; with the key log, past the encryption too.
#[test]
fn packet_lines_name_the_game_packets_they_delivered() {
    let pcap = common::sample("bedrock-login.pcap");
    let keylog = common::sample("bedrock-login.keylog");
    let (p, k) = (pcap.to_str().unwrap(), keylog.to_str().unwrap());
    let text = |extra: &[&str]| {
        let mut args = vec![p, "--color", "never"];
        args.extend_from_slice(extra);
        let o = run_bin(&args);
        assert!(o.status.success(), "{o:?}");
        String::from_utf8(o.stdout).unwrap()
    };
    let bare = text(&[]);
    assert!(!bare.contains("ID_USER_PACKET_ENUM+120"), "{bare}");
    let after = |t: &str| -> Vec<String> {
        t.lines()
            .filter_map(|l| l.split_once(" ⇒ ").map(|(_, n)| n.to_string()))
            .flat_map(|n| n.split(", ").map(str::to_string).collect::<Vec<_>>())
            .collect()
    };
    let names = after(&bare);
    assert_eq!(
        names[..4],
        [
            "request_network_settings",
            "network_settings",
            "login",
            "server_to_client_handshake"
        ]
    );
    assert!(names[4..].iter().all(|n| n == "encrypted"), "{names:?}");
    // The login's line is its split's last part.
    let login = bare.lines().find(|l| l.ends_with("⇒ login")).unwrap();
    assert!(login.contains("split 5/5"), "{login}");
    // With the key log: every name, in the order of `game`.
    let all: Vec<String> = game(&pcap, &["--keylog", k])
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(after(&text(&["--keylog", k])), all);
    // -V: the game packets' fields under the RakNet tree of the packet
    // that delivered them.
    let tree = text(&["--keylog", k, "-V"]);
    let at = tree.find("  Bedrock game packets").expect("a game section");
    assert!(tree[at..].contains("    s2c play_status (0x02) len=5 batch 2, encrypted\n        status: 0\n        status_name: \"login_success\""), "{}", &tree[at..]);
    let delivering = text(&["--keylog", k]).matches(" ⇒ ").count();
    assert_eq!(tree.matches("  Bedrock game packets").count(), delivering);
    // A RakNet capture keeps its message names.
    let raknet = common::sample("handshake.pcap");
    let o = run_bin(&[raknet.to_str().unwrap(), "--color", "never"]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains('⇒'));
}

/// The snappy vectors of `bedrock::flow`'s tests are Google's snappy: each
/// message of src/bedrock/testdata/snappy-1.26.45.jsonl decompresses, by
/// libsnappy's own snappy_uncompress, to the packets the test expects.
#[test]
fn the_snappy_vectors_are_libsnappys() {
    if !common::require_tool("python3") {
        return;
    }
    let script = common::root().join("scripts/bedrock-snappy.py");
    let o = Command::new("python3")
        .arg(&script)
        .arg("--check")
        .output()
        .expect("python3 runs");
    let err = String::from_utf8_lossy(&o.stderr);
    if err.contains("libsnappy not installed") {
        common::skip_or_fail("libsnappy not installed (Debian: libsnappy1v5)");
        return;
    }
    assert!(o.status.success(), "{err}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("17 messages"));
}

/// The vectors of `bedrock::packets`' tests are what bedrock-protocol
/// serialises: scripts/bedrock-vectors.js makes the committed files again.
#[test]
fn the_packet_vectors_are_bedrock_protocols() {
    if !peers_ready() {
        return;
    }
    let o = Command::new("node")
        .arg(common::root().join("scripts/bedrock-vectors.js"))
        .arg("--check")
        .output()
        .expect("node runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("128 vectors") && out.contains("55 vectors") && out.contains("619 vectors"),
        "{out}"
    );
}

/// Issue 16's check: every game packet of the bundled real-peer sessions
/// (1.26.45 and 1.19.1, decrypted with their key logs), decoded field by
/// field by `game --json` and by bedrock-protocol's own deserializer
/// (scripts/bedrock-fields.js); every field bedrock-protocol reads is ours
/// with the same value, after the normalisation of docs/json.md (UUIDs
/// read as two little-endian halves, floats as 32-bit, null for absent).
/// Agreement is printed per packet type.
#[test]
fn fields_equal_bedrock_protocols_deserializer() {
    if !peers_ready() {
        return;
    }
    let mut per_type = Default::default();
    let mut failures = Vec::new();
    for (sample, version) in [("bedrock-login", "1.26.45"), ("bedrock-1.19.1", "1.19.1")] {
        let dir = common::root().join("samples");
        let keylog = dir.join(format!("{sample}.keylog"));
        let pcap = dir.join(format!("{sample}.pcap"));
        let n = compare_fields(&pcap, &keylog, version, &mut per_type, &mut failures);
        assert!(n >= 20, "{sample}: {n}");
    }
    for (t, (ok, n)) in &per_type {
        println!("{t}: {ok}/{n}");
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// A world's worth of packets (bedrock_peers.js --world: every packet type
/// the version has, add_player, available_commands, inventory_content and
/// level_chunk with values) from bedrock-protocol's server to its client,
/// captured in two versions: every packet's fields equal bedrock-protocol's
/// deserializer's.
#[test]
fn a_worlds_worth_of_packets_as_bedrock_protocol_reads_them() {
    if !peers_ready() {
        return;
    }
    let mut per_type = Default::default();
    let mut failures = Vec::new();
    let mut total = 0;
    for version in ["1.21.50", "1.26.45"] {
        let (_work, pcap, keylog) = captured_session("world", version, &["--world", "1"]);
        let n = compare_fields(&pcap, &keylog, version, &mut per_type, &mut failures);
        assert!(n >= 150, "{version}: {n} packets");
        // The filter: the server's zero-valued move_player is at y 0.
        let moved = game(
            &pcap,
            &[
                "--keylog",
                keylog.to_str().unwrap(),
                "-Y",
                "game.name == \"move_player\" && game.move_player.position.y < 1",
            ],
        );
        assert!(!moved.is_empty(), "{version}");
        assert!(
            moved.iter().all(|m| m["fields"]["position"]["y"] == 0.0),
            "{version}: {moved:?}"
        );
        total += n;
    }
    let types = per_type.len();
    let whole = per_type.values().filter(|(ok, n)| ok == n).count();
    println!(
        "{total} packets, {} failed; {whole} of {types} packet types agree",
        failures.len()
    );
    for (t, (ok, n)) in per_type.iter().filter(|(_, (ok, n))| ok != n) {
        println!("{t}: {ok}/{n}");
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Every packet type both ways with seeded random values (bedrock_peers.js
/// --every: bedrock-protocol's serializer on each side), captured in
/// 1.21.50, 1.21.130 and 1.26.45: every packet decodes with no `error`,
/// and its fields equal bedrock-protocol's deserializer's, but for the
/// packets whose layout Mojang's published documentation corrects.
#[test]
fn every_packet_type_both_ways_with_random_values() {
    if !peers_ready() {
        return;
    }
    let mut per_type = Default::default();
    let mut failures = Vec::new();
    for (version, seed) in [("1.21.50", "11"), ("1.21.130", "12"), ("1.26.45", "13")] {
        let (work, pcap, keylog) = captured_session("every", version, &["--every", seed]);
        let sent = std::fs::read_to_string(work.file("sent.jsonl")).unwrap();
        let records = game(&pcap, &["--keylog", keylog.to_str().unwrap()]);
        let packets: Vec<&Value> = records.iter().filter(|r| r["type"] == "game").collect();
        // Every packet each side sent, in order, byte for byte.
        let mut want: Vec<(String, String)> = sent
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|r| {
                (
                    r["dir"].as_str().unwrap().into(),
                    r["hex"].as_str().unwrap().into(),
                )
            })
            .collect();
        let mut got: Vec<(String, String)> = packets
            .iter()
            .map(|r| {
                (
                    r["dir"].as_str().unwrap().into(),
                    r["data"].as_str().unwrap().into(),
                )
            })
            .collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{version}");
        for dir in ["c2s", "s2c"] {
            let types: std::collections::HashSet<&str> = packets
                .iter()
                .filter(|r| r["dir"] == dir)
                .filter_map(|r| r["name"].as_str())
                .collect();
            assert!(types.len() >= 190, "{version} {dir}: {} types", types.len());
        }
        for r in &packets {
            assert!(r.get("fields").is_some(), "{version}: {r}");
            if r.get("error").is_some() && !CORRECTED.contains(&r["name"].as_str().unwrap_or("")) {
                failures.push(format!("{version}: {}", r["error"]));
            }
        }
        let n = compare_fields(&pcap, &keylog, version, &mut per_type, &mut failures);
        println!("{version}: {n} packets");
    }
    let whole = per_type.values().filter(|(ok, n)| ok == n).count();
    println!("{whole} of {} packet types agree", per_type.len());
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The packets whose layout a correction changes (the types of
/// src/bedrock/schema/corrections.json, MaterialReducer's packet for it):
/// bedrock-protocol writes and reads them by minecraft-data's layout.
const CORRECTED: &[&str] = &[
    "move_player",
    "crafting_data",
    "update_equipment",
    "education_settings",
    "remove_volume_entity",
    "agent_action",
    "lesson_progress",
    "camera_instruction",
    "camera_aim_assist_presets",
    "server_script_debug_drawer",
];

#[test]
fn the_corrected_packets_are_those_of_the_corrections() {
    let text = std::fs::read_to_string(common::root().join("src/bedrock/schema/corrections.json"))
        .unwrap();
    let list: Vec<Value> = serde_json::from_str(&text).unwrap();
    let mut named: Vec<String> = list
        .iter()
        .map(|c| match c["type"].as_str().unwrap() {
            "MaterialReducer" => "crafting_data".to_string(),
            t => t.strip_prefix("packet_").unwrap().to_string(),
        })
        .collect();
    named.sort();
    named.dedup();
    let mut ours: Vec<String> = CORRECTED.iter().map(|s| s.to_string()).collect();
    ours.sort();
    assert_eq!(named, ours);
}

/// A bedrock_peers.js session of `version` with `mode`'s options, captured
/// by tcpdump: its work directory (the sender's record in `sent.jsonl`),
/// the capture and the key log. The session must succeed.
fn captured_session(name: &str, version: &str, mode: &[&str]) -> (Work, PathBuf, PathBuf) {
    let work = Work::new(&format!("bedrock-{name}-{version}"));
    let port = common::free_port_pair();
    let pcap = work.file(&format!("{name}.pcap"));
    let keylog = work.file(&format!("{name}.keylog"));
    let dump = Tcpdump::start(&pcap, &format!("udp port {port}"));
    let o = Command::new("node")
        .arg(common::root().join("scripts/bedrock_peers.js"))
        .args(["--version", version, "--port", &port.to_string()])
        .args(mode)
        .arg("--out")
        .arg(work.file("sent.jsonl"))
        .arg("--keylog")
        .arg(&keylog)
        .output()
        .expect("node runs");
    dump.stop();
    assert!(
        o.status.success(),
        "{version} {mode:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (work, pcap, keylog)
}

/// `game --json` on `pcap` with `keylog`, each game packet compared with
/// bedrock-protocol's deserializer of `version`: agreement counted per
/// "version name" in `per_type` (agreeing, seen), disagreements pushed to
/// `failures`. Returns the packets compared.
fn compare_fields(
    pcap: &Path,
    keylog: &Path,
    version: &str,
    per_type: &mut std::collections::BTreeMap<String, (u32, u32)>,
    failures: &mut Vec<String>,
) -> usize {
    let records: Vec<Value> = game(pcap, &["--keylog", keylog.to_str().unwrap()])
        .into_iter()
        .filter(|r| r["type"] == "game")
        .collect();
    let input: String = records
        .iter()
        .map(|r| {
            format!(
                "{{\"version\":\"{version}\",\"hex\":\"{}\"}}\n",
                r["data"].as_str().unwrap()
            )
        })
        .collect();
    let theirs = node_fields(&input);
    assert_eq!(theirs.len(), records.len());
    for (ours, theirs) in records.iter().zip(&theirs) {
        let name = ours["name"].as_str().unwrap_or("?").to_string();
        // Mojang's layout, not minecraft-data's (bedrock-protocol's).
        if CORRECTED.contains(&name.as_str()) {
            continue;
        }
        let e = per_type.entry(format!("{version} {name}")).or_default();
        e.1 += 1;
        if let Some(err) = theirs.get("error") {
            failures.push(format!(
                "{version} {name}: bedrock-protocol cannot read it: {err}"
            ));
            continue;
        }
        assert_eq!(theirs["name"], ours["name"]);
        let why = differences(&theirs["params"], &ours["fields"]);
        if why.is_empty() && ours.get("anomalies").is_none() {
            e.0 += 1;
        } else {
            failures.push(format!(
                "{version} {name}: {why:?} {:?}",
                ours.get("anomalies")
            ));
        }
    }
    records.len()
}

/// bedrock-protocol's deserializer on each line of `input`.
fn node_fields(input: &str) -> Vec<Value> {
    use std::io::Write;
    let mut child = Command::new("node")
        .arg(common::root().join("scripts/bedrock-fields.js"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("node runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The decoded fields under -e, -Y and -V, on the bundled session (no
/// peers needed).
#[test]
fn decoded_fields_in_filters_exports_and_trees() {
    let dir = common::root().join("samples");
    let (pcap, keylog) = (
        dir.join("bedrock-login.pcap"),
        dir.join("bedrock-login.keylog"),
    );
    let (pcap, keylog) = (pcap.to_str().unwrap(), keylog.to_str().unwrap());
    let out = |args: &[&str]| {
        let o = run_bin(args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    };
    let text = out(&[
        "game",
        pcap,
        "--keylog",
        keylog,
        "-T",
        "fields",
        "-e",
        "game.text.message",
        "-Y",
        "game.text",
    ]);
    assert_eq!(
        text,
        "hello from raknet-dissect\nhello from raknet-dissect\n"
    );
    let spawn = out(&["game", pcap, "--keylog", keylog, "-Y",
        "game.name == \"start_game\" && game.start_game.player_position.y > 65 && game.start_game.player_position.y < 66"]);
    assert_eq!(spawn.lines().count(), 1, "{spawn}");
    assert!(spawn.contains("start_game"), "{spawn}");
    // -V: the start_game's fields as a tree in wire order, each with its
    // offset and length, nested objects indented (tests/game_tree.rs).
    let tree = out(&[
        "game",
        pcap,
        "--keylog",
        keylog,
        "-V",
        "-Y",
        "game.start_game",
    ]);
    assert!(
        tree.contains("\n      4   12     player_position\n"),
        "{tree}"
    );
    assert!(
        tree.contains("\n      8    4       y: 65.62000274658203\n"),
        "{tree}"
    );
    // --no-fields: only the hand decoders' keys (set_time has none).
    let records = game(Path::new(pcap), &["--keylog", keylog, "--no-fields"]);
    let set_time = records.iter().find(|r| r["name"] == "set_time").unwrap();
    assert!(set_time.get("fields").is_none(), "{set_time}");
    let records = game(Path::new(pcap), &["--keylog", keylog]);
    let set_time = records.iter().find(|r| r["name"] == "set_time").unwrap();
    assert_eq!(set_time["fields"]["time"], 6000);
}

/// A bedrock-protocol server (scripts/bedrock_peers.js --server-only) on
/// `port` speaking `version`, waiting for one client.
fn bedrock_protocol_server(version: &str, port: u16, work: &Work) -> common::Proc {
    bedrock_protocol_server_with(version, port, work, &[])
}

/// [`bedrock_protocol_server`] with more of bedrock_peers.js's options.
fn bedrock_protocol_server_with(
    version: &str,
    port: u16,
    work: &Work,
    extra: &[&str],
) -> common::Proc {
    let mut cmd = Command::new("node");
    cmd.arg(common::root().join("scripts/bedrock_peers.js"))
        .args([
            "--version",
            version,
            "--port",
            &port.to_string(),
            "--server-only",
            "1",
            "--timeout",
            "15",
        ])
        .arg("--out")
        .arg(work.file("server-sent.jsonl"))
        .arg("--keylog")
        .arg(work.file("unused.keylog"))
        .args(extra)
        .stderr(std::process::Stdio::piped());
    let mut p = common::Proc::spawn(&mut cmd, "bedrock_peers.js --server-only");
    // It says when it listens.
    let mut err = std::io::BufReader::new(p.child.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut err, &mut line).unwrap();
    assert!(line.contains("waiting for a client"), "{line}");
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    p
}

/// Issue 17: our client (`connect --bedrock`) logs in to bedrock-protocol's
/// server in three generations, prints the StartGame and the spawn, writes
/// the key log, and the capture of its session decrypts with that key log,
/// every packet; against a server of another version it is refused in
/// words naming both, exit 10.
#[test]
fn our_client_logs_in_to_bedrock_protocols_server() {
    if !peers_ready() {
        return;
    }
    for version in ["1.26.45", "1.21.50", "1.19.1"] {
        let work = Work::new(&format!("bedrock-connect-{version}"));
        let port = common::free_port_pair();
        let pcap = work.file("connect.pcap");
        let keylog = work.file("connect.keylog");
        let dump = Tcpdump::start(&pcap, &format!("udp port {port}"));
        let mut server = bedrock_protocol_server(version, port, &work);
        let target = format!("127.0.0.1:{port}");
        // 1.26.45 without --protocol: the client offers RakNet 11, jsp-raknet
        // answers that it speaks 10, the client tries again with 10.
        let mut args = vec!["connect", &target, "--bedrock", "--version", version];
        if version != "1.26.45" {
            args.extend(["--protocol", "10"]);
        }
        let k = keylog.to_str().unwrap();
        args.extend(["--duration", "2", "--name", "Alex"]);
        // 1.19.1's key log through the environment, as SSLKEYLOGFILE.
        if version != "1.19.1" {
            args.extend(["--keylog-out", k]);
        }
        let o = common::bin()
            .args(&args)
            .env("BEDROCK_KEYLOG_FILE", k)
            .output()
            .unwrap();
        if version == "1.26.45" {
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains("speaks RakNet protocol 10, not 11: trying again with 10"),
                "{err}"
            );
        }
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{version}: {out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(out.contains("s2c start_game"), "{version}: {out}");
        assert!(
            out.contains("game login: spawned: as Alex"),
            "{version}: {out}"
        );
        assert_eq!(
            server.exit_code(Duration::from_secs(10)),
            Some(0),
            "{version}: the server saw our disconnect"
        );
        dump.stop();
        let records = game(&pcap, &["--keylog", keylog.to_str().unwrap()]);
        let opaque = records
            .iter()
            .filter(|r| r["type"] == "game_opaque")
            .count();
        assert_eq!(opaque, 0, "{version}: every batch decrypts");
        let names: Vec<&str> = records.iter().filter_map(|r| r["name"].as_str()).collect();
        for want in [
            "login",
            "start_game",
            "set_local_player_as_initialized",
            "disconnect",
        ] {
            assert!(names.contains(&want), "{version}: {want} in {names:?}");
        }
        let login = records.iter().find(|r| r["name"] == "login").unwrap();
        assert_eq!(login["fields"]["display_name"], "Alex", "{version}");
    }
    // Refused: the server speaks 1.21.50, the client 1.26.45.
    let work = Work::new("bedrock-connect-refused");
    let port = common::free_port_pair();
    let _server = bedrock_protocol_server("1.21.50", port, &work);
    let target = format!("127.0.0.1:{port}");
    let o = run_bin(&[
        "connect",
        &target,
        "--bedrock",
        "--protocol",
        "10",
        "--version",
        "1.26.45",
        "--duration",
        "3",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(10), "{out}");
    assert!(
        out.contains("refused: the server refused the client as too new (outdated server): the client speaks protocol 2169 (1.26.45), the server protocol 766 (1.21.50)"),
        "{out}"
    );
}

/// Issue 17: bedrock-protocol's client (bedrock_peers.js --client-only)
/// logs in to our `serve --bedrock` in three generations, spawns, chats and
/// leaves; we print what it sent, and the capture decrypts with the key log
/// our server wrote.
#[test]
fn a_bedrock_protocol_client_logs_in_to_our_server() {
    if !peers_ready() {
        return;
    }
    for version in ["1.26.45", "1.21.50", "1.19.1"] {
        let work = Work::new(&format!("bedrock-serve-{version}"));
        let port = common::free_port_pair();
        let pcap = work.file("serve.pcap");
        let keylog = work.file("serve.keylog");
        let dump = Tcpdump::start(&pcap, &format!("udp port {port}"));
        let listen = format!("127.0.0.1:{port}");
        let mut ours = common::Proc::spawn(
            common::bin()
                .args([
                    "serve",
                    "--listen",
                    &listen,
                    "--bedrock",
                    "--version",
                    version,
                ])
                .args([
                    "--dialect",
                    "minecraft",
                    "--protocol",
                    "10",
                    "--once",
                    "--json",
                ])
                .arg("--keylog-out")
                .arg(&keylog)
                // A file, not a pipe nobody reads until the end (the
                // Login's record alone is tens of KB).
                .stdout(std::fs::File::create(work.file("serve.out")).unwrap()),
            "serve --bedrock",
        );
        std::thread::sleep(Duration::from_millis(300));
        let o = bedrock_protocol_client(version, port, &work, None);
        assert!(
            o.status.success(),
            "{version}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(
            ours.exit_code(Duration::from_secs(10)),
            Some(0),
            "{version}: serve --once ends"
        );
        dump.stop();
        let out = std::fs::read_to_string(work.file("serve.out")).unwrap();
        let records: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let events: Vec<&str> = records.iter().filter_map(|r| r["event"].as_str()).collect();
        for want in ["key_log", "logged_in", "spawned", "disconnected"] {
            assert!(events.contains(&want), "{version}: {want} in {events:?}");
        }
        let chat = records
            .iter()
            .find(|r| r["type"] == "game" && r["name"] == "text")
            .expect("the chat");
        assert_eq!(
            chat["fields"]["message"], "hello from raknet-dissect",
            "{version}"
        );
        // Our server's key log is the client's.
        let ours_log = std::fs::read_to_string(&keylog).unwrap();
        let theirs_log = std::fs::read_to_string(work.file("client.keylog")).unwrap();
        assert_eq!(ours_log.trim(), theirs_log.trim(), "{version}");
        let game_records = game(&pcap, &["--keylog", keylog.to_str().unwrap()]);
        assert!(
            game_records.iter().all(|r| r["type"] == "game"),
            "{version}: every batch decrypts"
        );
        assert!(
            game_records.iter().any(|r| r["name"] == "start_game"),
            "{version}"
        );
    }
}

/// Issue 17's game replay: a bedrock-protocol client's scripted session
/// (three moves, a chat) captured; `replay --bedrock` plays the client's
/// packets after the spawn to a fresh bedrock-protocol server in a new
/// login: the server application receives the same game packets, byte for
/// byte (none of these carries a per-session field), in the same order, and
/// the report finds the same answers; a server changed to leave moves
/// unanswered shows the first divergence.
#[test]
fn a_captured_game_session_replays_to_a_fresh_server() {
    if !peers_ready() {
        return;
    }
    let version = "1.26.45";
    let work = Work::new("bedrock-game-replay");
    // The original session, captured.
    let port = common::free_port_pair();
    let pcap = work.file("original.pcap");
    let keylog = work.file("original.keylog");
    let dump = Tcpdump::start(&pcap, &format!("udp port {port}"));
    let o = Command::new("node")
        .arg(common::root().join("scripts/bedrock_peers.js"))
        .args([
            "--version",
            version,
            "--port",
            &port.to_string(),
            "--play",
            "3",
        ])
        .arg("--out")
        .arg(work.file("original.jsonl"))
        .arg("--keylog")
        .arg(&keylog)
        .output()
        .expect("node runs");
    dump.stop();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The client's packets after its spawn, as the original server got them.
    let after_spawn = |file: &Path, key: &str| -> Vec<(String, String)> {
        let text = std::fs::read_to_string(file).unwrap();
        let rs: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let c2s: Vec<(String, String)> = rs
            .iter()
            .filter(|r| r["dir"] == "c2s" && r.get(key).is_none_or(|v| v == true))
            .map(|r| {
                (
                    r["name"].as_str().unwrap().to_string(),
                    r["hex"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let spawn = c2s
            .iter()
            .position(|(n, _)| n == "set_local_player_as_initialized")
            .expect("the spawn");
        c2s[spawn + 1..].to_vec()
    };
    let original = after_spawn(&work.file("original.jsonl"), "received");
    let names: Vec<&str> = original.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "move_player",
            "move_player",
            "move_player",
            "text",
            "disconnect"
        ]
    );
    for (silent, same) in [(false, true), (true, false)] {
        let port = common::free_port_pair();
        let received = work.file(&format!("received-{silent}.jsonl"));
        let silent = if silent { "1" } else { "0" };
        let r = received.to_str().unwrap();
        let mut server = bedrock_protocol_server_with(
            version,
            port,
            &work,
            &["--silent-moves", silent, "--received", r],
        );
        let target = format!("127.0.0.1:{port}");
        let o = run_bin(&[
            "replay",
            pcap.to_str().unwrap(),
            "--bedrock",
            "--keylog",
            keylog.to_str().unwrap(),
            "--target",
            &target,
            "--protocol",
            "10",
            "--json",
        ]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(
            server.exit_code(Duration::from_secs(10)),
            Some(0),
            "the server got the captured disconnect"
        );
        let report: Value = out
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|r| r["type"] == "game_replay")
            .expect("the report");
        assert_eq!(
            (report["sent"].clone(), report["packets"].clone()),
            (Value::from(5), Value::from(5))
        );
        let now = after_spawn(&received, "none");
        assert_eq!(
            now, original,
            "silent {silent}: the server got what the original one got"
        );
        if same {
            // The same answers (their order against the client's packets
            // depends on the round trips: the captured client waited for
            // each chunk, the replay keeps the captured spacing).
            assert_eq!(report["captured"], report["now"], "{report}");
        } else {
            assert_eq!(report["first_divergence"]["index"], 0, "{report}");
            assert_eq!(
                report["first_divergence"]["captured"], "level_chunk",
                "{report}"
            );
            assert_eq!(report["now"].get("level_chunk"), None, "{report}");
        }
    }
    // And the server side: `serve --bedrock --replay` plays the captured
    // server's packets after the spawn to a bedrock-protocol client, which
    // gets them byte for byte in order.
    let server_after_spawn = |file: &Path, received_only: bool| -> Vec<(String, String)> {
        let text = std::fs::read_to_string(file).unwrap();
        let rs: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let s2c: Vec<(String, String)> = rs
            .iter()
            .filter(|r| r["dir"] == "s2c" && (!received_only || r["received"] == true))
            .map(|r| {
                (
                    r["name"].as_str().unwrap().to_string(),
                    r["hex"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let spawn = s2c
            .iter()
            .position(|(n, h)| n == "play_status" && h == "0200000003")
            .expect("player_spawn");
        s2c[spawn + 1..].to_vec()
    };
    let captured = server_after_spawn(&work.file("original.jsonl"), true);
    assert!(captured.len() >= 7, "{captured:?}");
    let port = common::free_port_pair();
    let listen = format!("127.0.0.1:{port}");
    let mut ours = common::Proc::spawn(
        common::bin()
            .args([
                "serve",
                "--listen",
                &listen,
                "--bedrock",
                "--replay",
                pcap.to_str().unwrap(),
            ])
            .args([
                "--keylog",
                keylog.to_str().unwrap(),
                "--dialect",
                "minecraft",
                "--protocol",
                "10",
                "--once",
            ])
            .stdout(std::fs::File::create(work.file("serve-replay.out")).unwrap()),
        "serve --bedrock --replay",
    );
    std::thread::sleep(Duration::from_millis(300));
    let got = work.file("client-received.jsonl");
    let o = bedrock_protocol_client(version, port, &work, Some(&got));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(ours.exit_code(Duration::from_secs(10)), Some(0));
    assert_eq!(
        server_after_spawn(&got, false),
        captured,
        "the client got the captured server's packets"
    );
}

/// Issue 17 under loss: our client's login and a game replay through the
/// seeded relay (2% loss, 5% duplicates, 5% reordering each way) to
/// bedrock-protocol's server still reach the spawn and the end.
#[test]
fn login_and_game_replay_through_a_lossy_relay() {
    if !peers_ready() || !common::require_tool("python3") {
        return;
    }
    let version = "1.26.45";
    let work = Work::new("bedrock-lossy-speak");
    let relay = |port: u16, seed: &str| {
        let mut cmd = Command::new("python3");
        cmd.arg(common::root().join("scripts/relay.py"))
            .args(["--listen", &format!("127.0.0.2:{port}")])
            .args(["--target", &format!("127.0.0.1:{port}")])
            .args([
                "--seed",
                seed,
                "--loss",
                "0.02",
                "--dup",
                "0.05",
                "--reorder",
                "0.05",
            ])
            .args(["--duration", "30"]);
        let p = common::Proc::spawn(&mut cmd, "relay.py");
        std::thread::sleep(Duration::from_millis(300));
        p
    };
    // The login.
    let port = common::free_port_pair();
    let mut server = bedrock_protocol_server(version, port, &work);
    let _relay = relay(port, "21");
    let target = format!("127.0.0.2:{port}");
    // jsp-raknet never resends on a timer, only on a NACK: when the relay
    // drops the last datagram of the server's burst (which one it drops
    // depends on timing: acks and pings shift the seeded draws), nothing
    // showed the gap until our keepalive ping (after 5 s of quiet) drew a
    // pong, and 3 s was too short once in CI. Our tail-loss probe (a ping
    // a second after we sent and heard no data) shows it within a second,
    // so the login gets 3 s here (the default is 10).
    let o = run_bin(&[
        "connect",
        &target,
        "--bedrock",
        "--protocol",
        "10",
        "--version",
        version,
        "--duration",
        "3",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("game login: spawned"), "{out}");
    assert_eq!(server.exit_code(Duration::from_secs(10)), Some(0));
    // A replay of a captured session (the bundled one).
    let port = common::free_port_pair();
    let mut server = bedrock_protocol_server(version, port, &work);
    let _relay = relay(port, "22");
    let dir = common::root().join("samples");
    let target = format!("127.0.0.2:{port}");
    let o = run_bin(&[
        "replay",
        dir.join("bedrock-login.pcap").to_str().unwrap(),
        "--bedrock",
        "--keylog",
        dir.join("bedrock-login.keylog").to_str().unwrap(),
        "--target",
        &target,
        "--protocol",
        "10",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("2 of 2 client packets sent after the spawn"),
        "{out}"
    );
    assert!(out.contains("the same packets in the same order"), "{out}");
    assert_eq!(server.exit_code(Duration::from_secs(10)), Some(0));
}

/// bedrock-protocol's client (bedrock_peers.js --client-only) logging in to
/// the server on `port`; what it received goes to `received` when given.
fn bedrock_protocol_client(
    version: &str,
    port: u16,
    work: &Work,
    received: Option<&Path>,
) -> std::process::Output {
    let mut cmd = Command::new("node");
    cmd.arg(common::root().join("scripts/bedrock_peers.js"))
        .args([
            "--version",
            version,
            "--port",
            &port.to_string(),
            "--client-only",
            "1",
        ])
        .arg("--out")
        .arg(work.file("client-sent.jsonl"))
        .arg("--keylog")
        .arg(work.file("client.keylog"));
    if let Some(r) = received {
        cmd.arg("--received").arg(r);
    }
    cmd.output().expect("node runs")
}

/// Issue 28: `ping` asks NetherNet (`GET /v1/join` on the TCP port) and
/// RakNet (an unconnected ping on the UDP port) at once and says which
/// answered, against real servers of each: aiortc's NetherNet server
/// (scripts/nethernet_peers.py), bedrock-protocol's RakNet server, and
/// both on the same port number as a dedicated server has them. The
/// status printed is the JSON the NetherNet server says it sent.
#[test]
fn ping_says_which_transport_answered() {
    if !peers_ready() {
        return;
    }
    let Some(py) = common::aiortc_python() else {
        common::skip_or_fail("no Python with aiortc (target/venv/bin/pip install aiortc==1.16.0)");
        return;
    };
    let work = Work::new("ping-transports");
    let port = common::free_port_pair();
    let target = format!("127.0.0.1:{port}");
    let truth = work.file("nethernet.truth.jsonl");
    let mut nethernet = Command::new(&py);
    nethernet
        .arg(common::root().join("scripts/nethernet_peers.py"))
        .args(["server", "--port", &port.to_string(), "--timeout", "60"])
        .arg("--truth")
        .arg(&truth)
        .arg("--keylog")
        .arg(work.file("nethernet.keylog"))
        .stderr(std::process::Stdio::piped());
    let mut nethernet = common::Proc::spawn(&mut nethernet, "nethernet_peers.py server");
    let err = nethernet.child.stderr.take().unwrap();
    let said = common::reader_lines(err);
    assert!(
        common::wait_line(
            &said,
            "nethernet_peers: server listening",
            Duration::from_secs(20)
        )
        .is_some(),
        "nethernet_peers.py server did not start"
    );
    let ping = |extra: &[&str]| {
        let mut a = vec!["ping", target.as_str(), "--json", "--timeout", "1"];
        a.extend_from_slice(extra);
        let o = common::run_with_timeout(
            Command::new(common::bin_path()).args(&a),
            Duration::from_secs(20),
        );
        let records: Vec<Value> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("NDJSON"))
            .collect();
        (o.status.code(), records)
    };
    let of = |records: &[Value], t: &str| -> Vec<Value> {
        records.iter().filter(|r| r["type"] == t).cloned().collect()
    };

    // NetherNet only.
    let (code, r) = ping(&["-c", "2"]);
    assert_eq!(code, Some(0), "{r:?}");
    assert_eq!(of(&r, "transports")[0]["answered"], "nethernet", "{r:?}");
    let status = of(&r, "join_status");
    assert_eq!(status.len(), 2, "{r:?}");
    let sent: Vec<Value> = lines(&truth)
        .into_iter()
        .filter(|t| t["type"] == "http" && t["event"] == "sent" && t["status"] == 200)
        .collect();
    assert_eq!(sent.len(), 2, "{sent:?}");
    let body: Value = serde_json::from_str(sent[0]["body"].as_str().unwrap()).unwrap();
    assert_eq!(status[0]["server"], body);
    assert_eq!(status[0]["status"], 200);
    println!("NetherNet only: {}", status[0]);
    let (code, r) = ping(&["--transport", "raknet"]);
    assert_eq!(code, Some(6), "{r:?}");
    assert_eq!(of(&r, "failed")[0]["step"], "port_unreachable", "{r:?}");
    assert!(of(&r, "transports").is_empty());

    // Both, on one port number, as a dedicated server has them.
    let mut raknet = bedrock_protocol_server("1.26.45", port, &work);
    let (code, r) = ping(&[]);
    assert_eq!(code, Some(0), "{r:?}");
    assert_eq!(of(&r, "transports")[0]["answered"], "both", "{r:?}");
    assert_eq!(of(&r, "pong")[0]["motd"]["edition"], "MCPE", "{r:?}");
    assert_eq!(of(&r, "pong")[0]["transport"], "raknet");
    let (code, r) = ping(&["--transport", "nethernet"]);
    assert_eq!((code, of(&r, "join_status").len()), (Some(0), 1), "{r:?}");
    assert!(of(&r, "pong").is_empty());

    // RakNet only.
    nethernet.signal(libc::SIGTERM);
    nethernet.wait_or_kill(Duration::from_secs(10));
    let (code, r) = ping(&[]);
    assert_eq!(code, Some(0), "{r:?}");
    assert_eq!(of(&r, "transports")[0]["answered"], "raknet", "{r:?}");
    assert_eq!(of(&r, "no_join_status")[0]["step"], "refused", "{r:?}");
    let (code, r) = ping(&["--nethernet", "-c", "2"]);
    assert_eq!(code, Some(6), "{r:?}");
    // A closed port is not asked again.
    assert_eq!(of(&r, "no_join_status").len(), 1, "{r:?}");
    raknet.signal(libc::SIGTERM);
    raknet.wait_or_kill(Duration::from_secs(10));
}

/// Issue 28: `connect --bedrock --transport auto` asks the NetherNet status
/// first, as the game's newer clients do; bedrock-protocol's server has no
/// NetherNet (nothing listens on its TCP port), so the client joins over
/// RakNet, logs in and spawns.
#[test]
fn connect_auto_falls_back_to_raknet() {
    if !peers_ready() {
        return;
    }
    let work = Work::new("connect-auto");
    let port = common::free_port_pair();
    let mut server = bedrock_protocol_server("1.26.45", port, &work);
    let target = format!("127.0.0.1:{port}");
    let o = common::run_with_timeout(
        Command::new(common::bin_path()).args([
            "connect",
            &target,
            "--bedrock",
            "--transport",
            "auto",
            "--version",
            "1.26.45",
            "--duration",
            "2",
            "--json",
        ]),
        Duration::from_secs(30),
    );
    server.wait_or_kill(Duration::from_secs(10));
    let err = String::from_utf8_lossy(&o.stderr);
    let records: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("NDJSON"))
        .collect();
    assert_eq!(o.status.code(), Some(0), "{err} {records:?}");
    assert!(err.contains("joining over RakNet"), "{err}");
    assert!(
        records.iter().any(|r| r["type"] == "connected"),
        "{records:?}"
    );
    assert!(records
        .iter()
        .any(|r| r["type"] == "login" && r["event"] == "spawned"));
    assert!(!records.iter().any(|r| r["type"] == "joined"));
}
