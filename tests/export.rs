//! `export`: the Parquet tables of the bundled captures, read by DuckDB
//! (PyPI `duckdb`; `.ci/run` installs it), hold the rows `--json` prints:
//! the same counts per table, and the same values for a sample of columns.

mod common;

use std::process::Command;

use common::run_bin;
use serde_json::Value;

fn json_lines(args: &[&str]) -> Vec<Value> {
    let o = run_bin(args);
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `query` run by DuckDB, its rows as JSON arrays.
fn duck(py: &str, query: &str) -> Vec<Value> {
    let script = format!(
        "import duckdb, json\nfor r in duckdb.sql({query:?}).fetchall():\n    print(json.dumps(list(r), default=str))"
    );
    let o = Command::new(py).args(["-c", &script]).output().unwrap();
    assert!(
        o.status.success(),
        "{query}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn duckdb_reads_the_rows_json_prints() {
    let Some(py) = common::duckdb_python() else {
        common::skip_or_fail("duckdb not installed (pip install duckdb)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("raknet-dissect-export-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let s = common::root().join("samples");
    let files: Vec<String> = [
        "lossy.pcap",
        "handshake.pcap",
        "bedrock-login.pcap",
        "minecraft.pcap",
    ]
    .iter()
    .map(|f| s.join(f).to_string_lossy().into_owned())
    .collect();
    let keylog = s
        .join("bedrock-login.keylog")
        .to_string_lossy()
        .into_owned();
    let out = dir.to_string_lossy().into_owned();
    let mut args: Vec<&str> = vec!["export"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--keylog", &keylog, "--out", &out]);
    let o = run_bin(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let said = String::from_utf8_lossy(&o.stdout);
    // A line a table, in this order, whichever pass ended first.
    let tables: Vec<&str> = said
        .lines()
        .map(|l| l.rsplit('/').next().unwrap().split('.').next().unwrap())
        .collect();
    assert_eq!(
        tables,
        ["packets", "messages", "flows", "handshakes", "game"],
        "{said}"
    );
    for (table, command) in [
        ("packets", "read"),
        ("messages", "messages"),
        ("flows", "flows"),
        ("handshakes", "handshake"),
        ("game", "game"),
    ] {
        let mut a: Vec<&str> = vec![command, "--json", "--keylog", &keylog];
        if command == "messages" {
            a.truncate(2);
        }
        a.extend(files.iter().map(String::as_str));
        let records = json_lines(&a);
        assert!(!records.is_empty(), "{table}");
        let path = dir.join(format!("{table}.parquet"));
        assert!(
            said.contains(&format!("{}: {} rows", path.display(), records.len())),
            "{said}"
        );
        let q = format!("select count(*) from '{}'", path.display());
        assert_eq!(
            duck(&py, &q),
            [serde_json::json!([records.len()])],
            "{table}"
        );
    }
    // Values: each flow's server and loss each way, as `flows --json` has them.
    let mut a = vec!["flows", "--json"];
    a.extend(files.iter().map(String::as_str));
    let mut flows: Vec<Value> = json_lines(&a)
        .iter()
        .map(|f| serde_json::json!([f["flow"], f["server"], f["c2s"]["lost"], f["s2c"]["lost"]]))
        .collect();
    // (flows --json prints each flow as it ends.)
    flows.sort_by_key(|f| f[0].as_u64());
    let q = format!(
        "select flow, server, \"c2s.lost\", \"s2c.lost\" from '{}' order by flow",
        dir.join("flows.parquet").display()
    );
    assert_eq!(duck(&py, &q), flows);
    // The game table: packet names and a decoded field.
    let q = format!(
        "select name, \"fields.message\" from '{}' where name = 'text'",
        dir.join("game.parquet").display()
    );
    let rows = duck(&py, &q);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows.iter().all(|r| r[1] == "hello from raknet-dissect"),
        "{rows:?}"
    );
    // Packets by file, with the file named in each row.
    let q = format!(
        "select count(distinct file) from '{}'",
        dir.join("packets.parquet").display()
    );
    assert_eq!(duck(&py, &q), [serde_json::json!([4])]);
    let _ = std::fs::remove_dir_all(&dir);
}
