//! The last test binary of a run (cargo runs the test binaries of a package
//! in order of name: unit tests, then `tests/*.rs` alphabetically): the
//! tests of this run that skipped for want of an outside tool, a real peer
//! or root, as `tests/common` recorded them ([`common::skipped`]), summed up
//! on standard error past libtest's capture, so that a green `cargo test`
//! says what it did not test. With RAKNET_DISSECT_REQUIRE_PEERS=1 (CI), any
//! of them fails the run.
//!
//! Only this run's records count: each names the process that ran its test
//! binary, and cargo runs them all, this one too.

use std::io::Write;

mod common;

#[test]
fn skipped_tests_are_summed_up() {
    let skips = common::skips_recorded(
        &common::skip_records_dir(),
        std::os::unix::process::parent_id(),
    );
    if skips.is_empty() {
        return;
    }
    let mut text = format!(
        "{} real-peer tests skipped (outside tools, real peers or root missing):\n",
        skips.len()
    );
    for (test, why) in &skips {
        text.push_str(&format!("  {test}: {why}\n"));
    }
    let _ = std::io::stderr().write_all(text.as_bytes());
    assert!(
        !common::peers_required(),
        "{text}and {}=1 allows none",
        common::REQUIRE_PEERS_ENV
    );
}

#[test]
fn only_this_runs_records_count() {
    let work = common::Work::new("records");
    let dir = work.0.clone();
    std::fs::write(
        dir.join("peer-a.txt"),
        "41\tpeer::a\tPython package raknet (PyPI) not installed\n",
    )
    .expect("record");
    std::fs::write(
        dir.join("cli-b.txt"),
        "42\tcli::b\tgroff not installed\n42\tcli::b\tbash not installed\n",
    )
    .expect("record");
    std::fs::write(dir.join("junk.txt"), "not a record\n").expect("junk");
    assert_eq!(
        common::skips_recorded(&dir, 42),
        [
            ("cli::b".to_string(), "bash not installed".to_string()),
            ("cli::b".to_string(), "groff not installed".to_string()),
        ]
    );
    assert_eq!(common::skips_recorded(&dir, 41).len(), 1);
    assert!(common::skips_recorded(&dir, 7).is_empty());
    assert!(common::skips_recorded(&dir.join("none"), 42).is_empty());
}

/// Held by the tests that record skips made by this process (for their
/// children to read), one at a time.
static RECORDING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Run by [`a_skip_shows_past_the_capture_and_is_recorded`], in a child.
#[test]
#[ignore = "a skip made on purpose, run by a_skip_shows_past_the_capture_and_is_recorded"]
fn skips_on_purpose() {
    common::skipped("the reason given");
}

#[test]
fn a_skip_shows_past_the_capture_and_is_recorded() {
    let _one = RECORDING.lock().unwrap_or_else(|e| e.into_inner());
    let me = std::env::current_exe().expect("this test binary");
    let o = common::run_with_timeout(
        std::process::Command::new(me).args(["--ignored", "--exact", "skips_on_purpose"]),
        std::time::Duration::from_secs(30),
    );
    assert!(o.status.success(), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("skipped: zz_skipped::skips_on_purpose: the reason given\n"),
        "libtest captured it: {o:?}"
    );
    let dir = common::skip_records_dir();
    let got = common::skips_recorded(&dir, std::process::id());
    let _ = std::fs::remove_file(dir.join("zz_skipped-skips_on_purpose.txt"));
    assert_eq!(
        got,
        [(
            "zz_skipped::skips_on_purpose".to_string(),
            "the reason given".to_string()
        )]
    );
}

#[test]
fn a_skip_fails_the_run_when_peers_are_required() {
    let _one = RECORDING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = common::skip_records_dir();
    std::fs::create_dir_all(&dir).expect("records dir");
    // Named for no test binary, so that none removes it; made by this
    // process, so that only the children below count it.
    let fake = dir.join("summary-probe-fake.txt");
    std::fs::write(
        &fake,
        format!("{}\tprobe::t\tjq not installed\n", std::process::id()),
    )
    .expect("record");
    let me = std::env::current_exe().expect("this test binary");
    let summary = |required: &str| {
        common::run_with_timeout(
            std::process::Command::new(&me)
                .args(["--exact", "skipped_tests_are_summed_up"])
                .env(common::REQUIRE_PEERS_ENV, required),
            std::time::Duration::from_secs(30),
        )
    };
    let (strict, lax) = (summary("1"), summary("0"));
    let _ = std::fs::remove_file(&fake);
    let said = "1 real-peer tests skipped (outside tools, real peers or root missing):\n  probe::t: jq not installed\n";
    assert!(!strict.status.success(), "{strict:?}");
    assert!(
        String::from_utf8_lossy(&strict.stderr).contains(said),
        "{strict:?}"
    );
    assert!(lax.status.success(), "{lax:?}");
    assert!(
        String::from_utf8_lossy(&lax.stderr).contains(said),
        "{lax:?}"
    );
}
