//! Shared helpers for the end-to-end tests: the built binary, running a
//! command with a time limit, the bundled samples, and `require_tool` for tests
//! that need an outside program (tshark, tcpdump, the original library ...).
//!
//! Use it from a test file with `mod common;`. Not every test file uses every
//! helper, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Set to `1` (CI does) to make a missing outside tool a failure instead of a skip.
pub const REQUIRE_PEERS_ENV: &str = "RAKNET_DISSECT_REQUIRE_PEERS";

/// The `raknet-dissect` binary that cargo built for this test run.
pub fn bin_path() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_raknet-dissect"))
}

/// A `Command` for the binary, with colour-related environment removed so that
/// output does not depend on the caller's terminal settings.
pub fn bin() -> Command {
    let mut c = Command::new(bin_path());
    c.env_remove("NO_COLOR").env_remove("TERM");
    c
}

/// The crate root (where Cargo.toml is).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `samples/NAME`.
pub fn sample(name: &str) -> PathBuf {
    root().join("samples").join(name)
}

/// Every `samples/*.pcap` and `samples/*.pcapng` but NetherNet's, sorted by
/// name.
pub fn sample_captures() -> Vec<PathBuf> {
    let dir = root().join("samples");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        // NetherNet's and WebRTC's captures hold no RakNet: the tests of
        // tests/nethernet.rs and src/nethernet/sample_tests.rs read them.
        .filter(|p| {
            !p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n.starts_with("nethernet-") || n.starts_with("webrtc-")
            })
        })
        .collect();
    v.sort();
    v
}

/// Whether RAKNET_DISSECT_REQUIRE_PEERS=1 is set.
pub fn peers_required() -> bool {
    fresh_skip_records();
    std::env::var(REQUIRE_PEERS_ENV).is_ok_and(|v| v.trim() == "1")
}

/// `target/skipped-peer-tests/`: a file per test that skipped in this
/// test binary's last run, `<binary>-<test>.txt`, read by the last test
/// binary (`tests/zz_skipped.rs`) to sum them up.
pub fn skip_records_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).join("skipped-peer-tests")
}

/// This test binary's name (`peer` for tests/peer.rs).
const BINARY: &str = env!("CARGO_CRATE_NAME");

/// Remove this binary's records of earlier runs, once per run, before it
/// checks for a tool or records a skip: a binary whose tools are all there
/// now leaves no record behind.
fn fresh_skip_records() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prefix = format!("{BINARY}-");
        let Ok(dir) = std::fs::read_dir(skip_records_dir()) else {
            return;
        };
        for e in dir.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    });
}

/// The running test skipped (all or part of itself) for want of `what`:
/// say so on standard error, straight to the file descriptor, past
/// libtest's capture (which takes `print!` and `eprint!` only, so that a
/// `println!` here is never seen), and record it for the summary. The
/// record names the cargo process that ran the binary (its parent), so
/// that the summary counts this run's skips only.
pub fn skipped(what: &str) {
    use std::io::Write;
    fresh_skip_records();
    let test = std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .to_string();
    let _ = std::io::stderr().write_all(format!("skipped: {BINARY}::{test}: {what}\n").as_bytes());
    let dir = skip_records_dir();
    let file: String = test
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let path = dir.join(format!("{BINARY}-{file}.txt"));
    let record = format!(
        "{}\t{BINARY}::{test}\t{what}\n",
        std::os::unix::process::parent_id()
    );
    let written = std::fs::create_dir_all(&dir).and_then(|()| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?
            .write_all(record.as_bytes())
    });
    if let Err(e) = written {
        let _ = std::io::stderr()
            .write_all(format!("cannot record the skip in {}: {e}\n", path.display()).as_bytes());
    }
}

/// The skips recorded in `dir` by test binaries that `parent` ran: (test,
/// why), sorted.
pub fn skips_recorded(dir: &Path, parent: u32) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        for line in text.lines() {
            let mut f = line.splitn(3, '\t');
            let (Some(pid), Some(test), Some(why)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            if pid.parse() == Ok(parent) {
                out.push((test.to_string(), why.to_string()));
            }
        }
    }
    out.sort();
    out
}

/// Whether an executable called `tool` is on PATH (or `tool` is a path to one).
pub fn tool_on_path(tool: &str) -> bool {
    fresh_skip_records();
    fn is_exe(p: &Path) -> bool {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    if tool.contains('/') {
        return is_exe(Path::new(tool));
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| is_exe(&d.join(tool))))
}

/// For a test that needs the outside program `tool`: true when it is installed.
/// When it is not, says `skipped: ... TOOL not installed` ([`skipped`]) and
/// returns false (the caller then returns early and passes), unless
/// RAKNET_DISSECT_REQUIRE_PEERS=1 is set, in which case it panics so that the
/// run fails.
pub fn require_tool(tool: &str) -> bool {
    if tool_on_path(tool) {
        return true;
    }
    if peers_required() {
        panic!("{tool} not installed, and {REQUIRE_PEERS_ENV}=1 requires it");
    }
    skipped(&format!("{tool} not installed"));
    false
}

/// A missing prerequisite: skip with a line saying so ([`skipped`]), or
/// fail in CI.
pub fn skip_or_fail(what: &str) {
    if peers_required() {
        panic!("{what}, and {}=1 requires it", REQUIRE_PEERS_ENV);
    }
    skipped(what);
}

/// Live capture needs root (or CAP_NET_RAW for tcpdump).
pub fn require_root() -> bool {
    let uid = Command::new("id").arg("-u").output();
    let is_root = uid.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !is_root {
        skip_or_fail("live capture needs root (not root)");
    }
    is_root
}

/// A Python with the PyPI package `raknet`: $RAKNET_PYTHON, target/venv, python3.
pub fn raknet_python() -> Option<String> {
    fresh_skip_records();
    python_with("raknet")
}

/// A Python with the PyPI package `duckdb` (`.ci/run` installs it into
/// target/venv).
pub fn duckdb_python() -> Option<String> {
    python_with("duckdb")
}

/// A Python with the PyPI package `aiortc` (`.ci/run` installs it into
/// target/venv), for NetherNet's peers (scripts/nethernet_peers.py).
pub fn aiortc_python() -> Option<String> {
    python_with("aiortc")
}

/// The first of $RAKNET_PYTHON, target/venv's and python3 that imports `module`.
fn python_with(module: &str) -> Option<String> {
    let candidates = [
        std::env::var("RAKNET_PYTHON").ok(),
        Some(
            root()
                .join("target/venv/bin/python")
                .to_string_lossy()
                .into_owned(),
        ),
        Some("python3".to_string()),
    ];
    candidates.into_iter().flatten().find(|py| {
        Command::new(py)
            .args(["-c", &format!("import {module}")])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// The `mc_pair` example (rust-raknet), built once per test process for the
/// profile of this run: `cargo test` does not build examples, and an older
/// build may lack newer options. Panics if it cannot be built.
pub fn mc_pair_exe() -> PathBuf {
    match mc_pair_built() {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

/// [`mc_pair_exe`], or why it could not be built.
pub fn mc_pair_built() -> Result<PathBuf, String> {
    static BUILT: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let bin = bin_path();
            let exe = bin.with_file_name("examples").join("mc_pair");
            let release = bin
                .parent()
                .and_then(|d| d.file_name())
                .is_some_and(|n| n == "release");
            let mut cmd = Command::new(env!("CARGO"));
            cmd.args(["build", "--example", "mc_pair", "--quiet"])
                .current_dir(root());
            if release {
                cmd.arg("--release");
            }
            match cmd.status() {
                Ok(s) if s.success() && exe.exists() => Ok(exe),
                Ok(s) => Err(format!("cargo build --example mc_pair: {s}")),
                Err(e) => Err(format!("cargo: {e}")),
            }
        })
        .clone()
}

/// Run `cmd` to completion with stdin closed, collecting stdout and stderr; kill
/// it and panic if it runs longer than `limit`.
pub fn run_with_timeout(cmd: &mut Command, limit: Duration) -> Output {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let mut out = child.stdout.take().expect("stdout piped");
    let mut err = child.stderr.take().expect("stderr piped");
    let out_t = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let err_t = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what} still running after {limit:?}: killed");
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => panic!("waiting for {what}: {e}"),
        }
    };
    Output {
        status,
        stdout: out_t.join().expect("stdout reader"),
        stderr: err_t.join().expect("stderr reader"),
    }
}

/// Run the binary with `args` (30 s limit).
pub fn run_bin(args: &[&str]) -> Output {
    run_with_timeout(bin().args(args), Duration::from_secs(30))
}

/// A private temporary directory, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    /// A fresh directory under the system temporary directory; `tag` goes in its name.
    pub fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!(
            "raknet-dissect-test-{tag}-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `target/tmp/<test file>/NAME-PID/`: removed when the test passes, kept (and
/// named on stderr) when it fails.
pub struct Work(pub PathBuf);

impl Work {
    pub fn new(name: &str) -> Work {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(env!("CARGO_CRATE_NAME"))
            .join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("work dir");
        Work(dir)
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("files of the failed test kept in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A JSON file, or a panic saying which and why.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()))
}

/// A child process, killed (and reaped) when dropped if it still runs.
pub struct Proc {
    pub child: std::process::Child,
    pub name: String,
}

impl Proc {
    pub fn spawn(cmd: &mut Command, name: &str) -> Proc {
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc {
            child,
            name: name.to_string(),
        }
    }

    pub fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill(2) on the pid of a child we started and have not reaped.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, sig);
        }
    }

    /// Wait at most `limit` for it to exit.
    pub fn wait_for(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            match self.child.try_wait() {
                Ok(Some(s)) => return Some(s),
                Ok(None) if Instant::now() >= deadline => return None,
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => panic!("waiting for {}: {e}", self.name),
            }
        }
    }

    /// Wait at most `limit`; kill it after that (and return None).
    pub fn wait_or_kill(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let s = self.wait_for(limit);
        if s.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        s
    }

    /// Its exit code, waiting at most `limit`; panics (after killing it) if
    /// it is still running then.
    pub fn exit_code(&mut self, limit: Duration) -> Option<i32> {
        match self.wait_or_kill(limit) {
            Some(s) => s.code(),
            None => panic!("{} still running after {limit:?}: killed", self.name),
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // A stopped process (SIGSTOP) dies of SIGKILL all the same.
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Lines of `r` through a channel, in a thread.
pub fn reader_lines<R: Read + Send + 'static>(r: R) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(r).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Wait at most `limit` for a line starting with `prefix` on `rx`.
pub fn wait_line(
    rx: &std::sync::mpsc::Receiver<String>,
    prefix: &str,
    limit: Duration,
) -> Option<String> {
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        match rx.recv_timeout(left) {
            Ok(l) if l.starts_with(prefix) => return Some(l),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
}

/// A text file's contents, or "" when it cannot be read (yet).
pub fn read_text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// tcpdump on lo writing `path`, started and ready (it said "listening on").
/// 4 KiB slots in a 64 MiB ring: with the default snapshot length (256 KiB)
/// the ring holds few packets and tcpdump drops some under load.
pub struct Tcpdump {
    proc: Proc,
    stderr: std::thread::JoinHandle<String>,
    path: PathBuf,
}

impl Tcpdump {
    pub fn start(path: &Path, filter: &str) -> Tcpdump {
        let mut cmd = Command::new("tcpdump");
        cmd.args(["-i", "lo", "-Z", "root", "--immediate-mode", "-U", "-n"])
            .args(["-s", "4096", "-B", "65536", "-w"])
            .arg(path)
            .arg(filter)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut proc = Proc::spawn(&mut cmd, "tcpdump");
        let err = proc.child.stderr.take().expect("stderr piped");
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = std::thread::spawn(move || {
            use std::io::BufRead;
            let mut all = String::new();
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                if line.contains("listening on") {
                    let _ = tx.send(());
                }
                all.push_str(&line);
                all.push('\n');
            }
            all
        });
        assert!(
            rx.recv_timeout(Duration::from_secs(10)).is_ok(),
            "tcpdump did not say it is listening"
        );
        std::thread::sleep(Duration::from_millis(200));
        Tcpdump {
            proc,
            stderr,
            path: path.to_owned(),
        }
    }

    /// Stop it (after 300 ms for the last packets) and return the capture's
    /// path. Panics if the kernel dropped packets: the capture would not be
    /// what the peers saw.
    pub fn stop(mut self) -> PathBuf {
        std::thread::sleep(Duration::from_millis(300));
        self.proc.signal(libc::SIGINT);
        self.proc.wait_or_kill(Duration::from_secs(10));
        let err = std::mem::replace(&mut self.stderr, std::thread::spawn(String::new))
            .join()
            .unwrap_or_default();
        let dropped = err
            .lines()
            .find(|l| l.contains("dropped by kernel"))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok());
        assert_eq!(dropped, Some(0), "tcpdump must drop nothing:\n{err}");
        self.path.clone()
    }
}

/// A run of our binary with `--json`, its NDJSON records read as they come
/// (`Ours`), and how it ended (`Finished`).
pub fn reader_to_string<R: Read + Send + 'static>(mut r: R) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = r.read_to_end(&mut b);
        String::from_utf8_lossy(&b).into_owned()
    })
}

/// One run of our binary with `--json`: its NDJSON records as they come.
pub struct Ours {
    pub proc: Proc,
    rx: std::sync::mpsc::Receiver<serde_json::Value>,
    records: Vec<serde_json::Value>,
    stderr: Option<std::thread::JoinHandle<String>>,
    started: Instant,
}

/// How a run of our binary ended.
pub struct Finished {
    pub code: Option<i32>,
    pub records: Vec<serde_json::Value>,
    pub stderr: String,
    pub secs: f64,
}

impl Finished {
    pub fn of_type(&self, t: &str) -> Vec<&serde_json::Value> {
        self.records.iter().filter(|r| r["type"] == t).collect()
    }

    pub fn one(&self, t: &str) -> &serde_json::Value {
        let v = self.of_type(t);
        assert_eq!(
            v.len(),
            1,
            "exactly one `{t}` record expected; stderr:\n{}",
            tail(&self.stderr, 10)
        );
        v[0]
    }
}

impl Ours {
    /// `raknet-dissect ARGS`; `stdin` is written to its standard input (then closed).
    pub fn spawn(args: &[String], stdin: Option<Vec<u8>>) -> Ours {
        use std::io::{BufRead, Write};
        let name = format!("raknet-dissect {}", args.join(" "));
        let mut cmd = bin();
        cmd.args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut proc = Proc::spawn(&mut cmd, &name);
        if let Some(bytes) = stdin {
            let mut w = proc.child.stdin.take().expect("stdin piped");
            std::thread::spawn(move || {
                let _ = w.write_all(&bytes);
            });
        }
        let out = proc.child.stdout.take().expect("stdout piped");
        let err = proc.child.stderr.take().expect("stderr piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if line.trim().is_empty() {
                    continue;
                }
                let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(
                    |e| serde_json::json!({"type": "NOT_JSON", "error": e.to_string(), "line": line}),
                );
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Ours {
            proc,
            rx,
            records: Vec::new(),
            stderr: Some(reader_to_string(err)),
            started: Instant::now(),
        }
    }

    /// The first record (already seen or new) with `"type": t`, waiting at
    /// most `limit`; None when none came (or the output ended).
    pub fn wait_record(&mut self, t: &str, limit: Duration) -> Option<serde_json::Value> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(r) = self.records.iter().find(|r| r["type"] == t) {
                return Some(r.clone());
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            match self.rx.recv_timeout(left) {
                Ok(v) => self.records.push(v),
                Err(_) => return None,
            }
        }
    }

    /// How many records with `"type": t` came (already seen or new),
    /// waiting at most `limit` for `n` of them.
    pub fn wait_records(&mut self, t: &str, n: usize, limit: Duration) -> usize {
        let deadline = Instant::now() + limit;
        loop {
            let seen = self.records.iter().filter(|r| r["type"] == t).count();
            if seen >= n {
                return seen;
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return seen;
            };
            match self.rx.recv_timeout(left) {
                Ok(v) => self.records.push(v),
                Err(_) => return seen,
            }
        }
    }

    /// Wait at most `limit` for it to exit (panics after killing it if not);
    /// all its records and its stderr.
    pub fn finish(mut self, limit: Duration) -> Finished {
        let status = self.proc.wait_or_kill(limit);
        let stderr = self.stderr.take().map(|t| t.join().unwrap_or_default());
        let stderr = stderr.unwrap_or_default();
        while let Ok(v) = self.rx.recv_timeout(Duration::from_secs(5)) {
            self.records.push(v);
        }
        let secs = self.started.elapsed().as_secs_f64();
        let Some(status) = status else {
            panic!(
                "{} still running after {limit:?}: killed. It printed {} records; stderr:\n{}",
                self.proc.name,
                self.records.len(),
                tail(&stderr, 20)
            );
        };
        let bad: Vec<&serde_json::Value> = self
            .records
            .iter()
            .filter(|r| r["type"] == "NOT_JSON")
            .collect();
        assert!(
            bad.is_empty(),
            "{}: lines that are not JSON: {bad:?}",
            self.proc.name
        );
        Finished {
            code: status.code(),
            records: std::mem::take(&mut self.records),
            stderr,
            secs,
        }
    }
}

pub fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// Two consecutive free UDP ports on loopback, never the same twice in this
/// process. They are taken below the kernel's ephemeral range (32768 and up
/// by default), so that a socket bound to port 0 elsewhere, by this test run
/// or another program, cannot take them between this check and their use.
pub fn free_port_pair() -> u16 {
    use std::net::UdpSocket;
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    const LOW: u32 = 21_000;
    const SPAN: u32 = 11_000;
    let start = std::process::id().wrapping_mul(7_919) % SPAN;
    for _ in 0..SPAN / 2 {
        let n = NEXT.fetch_add(2, std::sync::atomic::Ordering::Relaxed);
        let p = (LOW + (start + n) % SPAN) as u16;
        if UdpSocket::bind(("127.0.0.1", p)).is_ok()
            && UdpSocket::bind(("127.0.0.1", p + 1)).is_ok()
        {
            return p;
        }
    }
    panic!(
        "no two consecutive free ports between {LOW} and {}",
        LOW + SPAN
    )
}

/// bedrock-protocol under target/bedrock-node (scripts/bedrock-setup.sh),
/// with node, npm and root for tcpdump; skipped (or failed in CI) without.
#[allow(dead_code)]
pub fn bedrock_peers_ready() -> bool {
    if !require_tool("node") || !require_tool("npm") || !require_root() {
        return false;
    }
    let setup = root().join("scripts/bedrock-setup.sh");
    let ok = Command::new("bash")
        .arg(&setup)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        skip_or_fail("bedrock-protocol not installed (scripts/bedrock-setup.sh failed)");
    }
    ok
}

/// aiortc's Python and bedrock-protocol, or why not (skipped).
pub fn nethernet_game_peers() -> Option<String> {
    if !require_tool("tcpdump") || !bedrock_peers_ready() {
        return None;
    }
    let Some(py) = aiortc_python() else {
        skip_or_fail("no Python with aiortc (target/venv/bin/pip install aiortc==1.16.0)");
        return None;
    };
    Some(py)
}

/// bedrock-protocol's own session of `version` (bedrock_peers.js on
/// RakNet port `port`): every game packet each side sent, recorded inside
/// it, for nethernet_peers.py --game to play.
pub fn bedrock_protocol_packets(dir: &TempDir, version: &str, port: u16) -> std::path::PathBuf {
    let packets = dir.path().join(format!("{version}.packets.jsonl"));
    let made = run_with_timeout(
        Command::new("node")
            .arg(root().join("scripts/bedrock_peers.js"))
            .args(["--version", version, "--port", &port.to_string(), "--out"])
            .arg(&packets)
            .arg("--keylog")
            .arg(dir.path().join(format!("{version}.raknet.keylog"))),
        std::time::Duration::from_secs(60),
    );
    let err = String::from_utf8_lossy(&made.stderr);
    assert!(made.status.success(), "bedrock_peers.js {version}: {err}");
    packets
}

/// nethernet_peers.py `role` --game on `port`, playing `packets`, once it
/// says it listens (a server) or at once (a client).
pub fn nethernet_peer(
    py: &str,
    role: &str,
    port: u16,
    packets: &std::path::Path,
    truth: &std::path::Path,
    keys: &std::path::Path,
) -> Proc {
    nethernet_peer_with(py, role, port, (packets, truth, keys), &[])
}

/// [`nethernet_peer`] with more of nethernet_peers.py's options.
pub fn nethernet_peer_with(
    py: &str,
    role: &str,
    port: u16,
    (packets, truth, keys): (&std::path::Path, &std::path::Path, &std::path::Path),
    more: &[&str],
) -> Proc {
    let mut cmd = Command::new(py);
    cmd.arg(root().join("scripts/nethernet_peers.py"))
        .args([role, "--game", "--port", &port.to_string(), "--packets"])
        .arg(packets)
        .arg("--truth")
        .arg(truth)
        .arg("--keylog")
        .arg(keys)
        .args(more)
        .stderr(std::process::Stdio::piped());
    let mut p = Proc::spawn(&mut cmd, "nethernet_peers.py --game");
    let said = reader_lines(p.child.stderr.take().unwrap());
    if role == "server" {
        let up = wait_line(
            &said,
            "nethernet_peers: server listening",
            std::time::Duration::from_secs(20),
        );
        assert!(up.is_some(), "nethernet_peers.py did not start");
    }
    // Its standard error read to the end (a closed pipe would fail its
    // last lines, and its exit code).
    std::thread::spawn(move || said.into_iter().for_each(drop));
    p
}

/// tshark, with the same key log, decrypts the same DTLS records and
/// shows the same SCTP chunks in every datagram: their types, and each
/// DATA chunk's TSN, stream and PPID; no frame of it is malformed; and the
/// same DTLS records (content type, epoch, sequence number, length) and
/// DCEP labels.
/// Any RSA private key, in `dir`: tshark carries DTLS to SCTP only on the
/// ports of a `dtls.keys_list` entry, which names a key file, though the
/// key log gives the secrets.
pub fn any_pem(dir: &TempDir) -> std::path::PathBuf {
    let pem = dir.path().join("any.pem");
    let made = std::process::Command::new("openssl")
        .args(["genrsa", "-out", pem.to_str().unwrap(), "2048"])
        .output()
        .unwrap();
    assert!(made.status.success());
    pem
}

/// tshark's `dtls.keys_list` for `pcap`: DTLS to SCTP on the UDP ports of
/// the ICE pairs (each leg's STUN source ports), with key file `pem`.
pub fn dtls_keys_list(pcap: &str, pem: &std::path::Path) -> String {
    let stun = std::process::Command::new("tshark")
        .args([
            "-r",
            pcap,
            "-Y",
            "stun",
            "-T",
            "fields",
            "-e",
            "udp.srcport",
        ])
        .output()
        .unwrap();
    let mut ports: Vec<String> = String::from_utf8_lossy(&stun.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    ports.sort();
    ports.dedup();
    let keys: Vec<String> = ports
        .iter()
        .map(|p| format!("127.0.0.1,{p},sctp,{}", pem.display()))
        .collect();
    format!("dtls.keys_list:{}", keys.join(";"))
}

/// The binary messages (SCTP PPID 53) tshark decrypts in `pcapng` with
/// the DTLS keys of its own Decryption Secrets Blocks (no key file
/// given), DTLS read as SCTP on the ICE pairs' ports.
pub fn tshark_dtls_messages(pcapng: &Path, dir: &TempDir) -> usize {
    let pcap = pcapng.to_str().unwrap();
    let o = run_with_timeout(
        Command::new("tshark")
            .args(["-r", pcap, "-o", &dtls_keys_list(pcap, &any_pem(dir))])
            .args(["-o", "udp.try_heuristic_first:TRUE"])
            .args(["-Y", "sctp.data_payload_proto_id == 53"])
            .args(["-T", "fields", "-e", "sctp.data_payload_proto_id"])
            .args(["-E", "aggregator=,"]),
        Duration::from_secs(60),
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.split(',').filter(|p| *p == "53").count())
        .sum()
}
