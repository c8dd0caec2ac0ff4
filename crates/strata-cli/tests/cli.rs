//! End-to-end tests of the `strata` binary.

use std::process::{Command, Output};
use strata::{Options, Protocol, VersionStorage};

/// Runs the `strata` binary (every module of this test binary uses it).
pub(crate) fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .output()
        .expect("run the strata binary")
}

/// Output bytes as text.
pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn bench_ycsb_json_reports_commits() {
    let out = strata(&[
        "bench",
        "ycsb",
        "--protocol",
        "mvocc",
        "--records",
        "500",
        "--threads",
        "2",
        "--duration",
        "0.3",
        "--warmup",
        "0.1",
        "--ops-per-txn",
        "4",
        "--columns",
        "3",
        "--theta",
        "0.9",
        "--json",
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout.lines().count(),
        1,
        "one JSON object expected: {stdout}"
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("valid JSON");
    assert_eq!(v["protocol"], "mvocc");
    assert!(v["committed"].as_u64().unwrap() > 0, "{v}");
    assert!(v["committed_per_s"].as_f64().unwrap() > 0.0);
    assert!(v["latency"]["p99_us"].as_f64().unwrap() >= v["latency"]["p50_us"].as_f64().unwrap());
    assert_eq!(v["memory"]["rows"].as_u64(), Some(500));
    assert!(v["memory"]["bytes_per_row"].as_f64().unwrap() > 0.0);
    assert!(v["aborts_by_reason"].is_object());
}

/// `bench ycsb --time-breakdown` (issue 42, item 1): the window's time
/// per committed transaction by component, the named ones within the
/// transactions' total, version installs timed in an update mix; the text
/// summary prints the line, and without the flag the JSON has none.
#[test]
fn bench_ycsb_time_breakdown_reports_components() {
    let run = |extra: &[&str]| {
        let mut a = vec![
            "bench",
            "ycsb",
            "--records",
            "500",
            "--threads",
            "2",
            "--duration",
            "0.3",
            "--warmup",
            "0.1",
            "--read-ratio",
            "0.5",
        ];
        a.extend(extra);
        let out = strata(&a);
        assert!(out.status.success(), "stderr: {}", text(&out.stderr));
        text(&out.stdout)
    };
    let v: serde_json::Value =
        serde_json::from_str(&run(&["--time-breakdown", "--json"])).expect("valid JSON");
    let t = &v["time_breakdown"];
    let parts = t["per_committed"].as_array().expect("a breakdown");
    let ns = |name: &str| {
        let c = parts.iter().find(|c| c["name"] == name).unwrap();
        c["ns_per_committed"].as_f64().unwrap()
    };
    assert!(ns("version_install") > 0.0 && ns("index") > 0.0, "{t}");
    let named: f64 = parts
        .iter()
        .filter(|c| c["name"] != "rest")
        .map(|c| c["ns_per_committed"].as_f64().unwrap())
        .sum();
    let committed = t["committed"].as_f64().unwrap();
    assert!(committed > 0.0, "{t}");
    assert!(
        named * committed <= t["total_ns"].as_f64().unwrap() * 1.000_001,
        "{t}"
    );
    assert!(run(&["--time-breakdown"]).contains("time per committed txn"));
    let v: serde_json::Value = serde_json::from_str(&run(&["--json"])).unwrap();
    assert!(v.get("time_breakdown").is_none(), "{v}");
}

#[test]
fn bench_ycsb_memory_spaces_reports_each_space() {
    let args = |n: &'static str, json: bool| {
        let mut a = vec![
            "bench",
            "ycsb",
            "--records",
            "300",
            "--threads",
            "2",
            "--duration",
            "0.2",
            "--warmup",
            "0",
            "--read-ratio",
            "0.2",
            "--memory-spaces",
            n,
            "--space-increment",
            "65536",
        ];
        if json {
            a.push("--json");
        }
        a
    };
    let out = strata(&args("2", true));
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).expect("valid JSON");
    let spaces = v["memory"]["memory_spaces"]
        .as_array()
        .expect("per-space figures");
    assert_eq!(spaces.len(), 2, "{v}");
    for (i, s) in spaces.iter().enumerate() {
        assert_eq!(s["space"].as_u64(), Some(i as u64));
        let chunks = s["chunks"].as_u64().unwrap();
        assert!(chunks > 0, "{v}");
        assert_eq!(s["bytes_reserved"].as_u64(), Some(chunks * 65536));
        assert!(s["bytes_in_use"].as_u64().unwrap() <= chunks * 65536);
    }
    // The text summary has one line per space; 0 is the global allocator.
    let out = strata(&args("2", false));
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("space ")).count(),
        2,
        "{stdout}"
    );
    let out = strata(&args("0", true));
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert!(v["memory"].get("memory_spaces").is_none(), "{v}");
    let mut bad = args("2", true);
    bad[15] = "5000";
    assert_usage_error(&bad, "power of two");
}

#[test]
fn bench_ycsb_read_only_summary() {
    let out = strata(&[
        "bench",
        "ycsb",
        "--records",
        "200",
        "--threads",
        "1",
        "--duration",
        "0.2",
        "--warmup",
        "0",
        "--read-ratio",
        "1.0",
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("committed"), "{stdout}");
    assert!(stdout.contains("p99.9"), "{stdout}");
    assert!(stdout.contains("READ ONLY hint"), "{stdout}");
}

/// `--no-ro-hint` runs the read-only mix as full serializable transactions
/// (the like-for-like comparison with peers), and says so.
#[test]
fn bench_ycsb_read_only_without_the_hint() {
    let out = strata(&[
        "bench",
        "ycsb",
        "--records",
        "200",
        "--threads",
        "1",
        "--duration",
        "0.2",
        "--warmup",
        "0",
        "--mix",
        "read-only",
        "--no-ro-hint",
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("without the hint"), "{stdout}");
    assert!(stdout.contains("committed"), "{stdout}");
}

#[test]
fn protocols_lists_every_protocol() {
    let out = strata(&["protocols"]);
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), Protocol::ALL.len(), "{stdout}");
    for p in Protocol::ALL {
        assert!(
            stdout
                .lines()
                .any(|l| l.split_whitespace().next() == Some(p.name())),
            "{p} missing: {stdout}"
        );
    }
}

#[test]
fn help_has_examples() {
    let out = strata(&["--help"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("Examples:"));
}

/// Bad input: one line on stderr, exit code 2, no panic.
pub(crate) fn assert_usage_error(args: &[&str], needle: &str) {
    let out = strata(args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.contains(needle), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.stdout.is_empty(), "{args:?}");
}

#[test]
fn bad_flags_and_configs_are_one_line_errors() {
    assert_usage_error(&["bench", "ycsb", "--bogus"], "--bogus");
    assert_usage_error(&["bench", "ycsb", "--protocol", "nope"], "expected one of");
    assert_usage_error(&["bench", "ycsb", "--records", "many"], "--records");
    assert_usage_error(&["bench", "ycsb", "--theta", "1.5"], "--theta");
    assert_usage_error(&["bench", "ycsb", "--read-ratio", "2"], "--read-ratio");
    assert_usage_error(&["bench", "ycsb", "--threads", "0"], "--threads");
    assert_usage_error(&["check", "--workload", "nope"], "nope");
    assert_usage_error(&["check", "--skew", "1.0"], "--skew");
    assert_usage_error(
        &["check", "--workload", "write-skew", "--keys", "1"],
        "--keys",
    );
    assert_usage_error(
        &["check", "--workload", "register", "--blind-writes"],
        "--gc none",
    );
    assert_usage_error(
        &["check", "--gc", "none", "--blind-writes"],
        "--workload register",
    );
    assert_usage_error(&["frobnicate"], "frobnicate");
    // Negative numbers reach the validation that names the range.
    assert_usage_error(&["bench", "ycsb", "--theta", "-0.5"], "--theta must be in");
    assert_usage_error(&["bench", "ycsb", "--records", "-5"], "invalid value '-5'");
    // What is missing or allowed is on the one line.
    assert_usage_error(&["reproduce"], "<FIGURE>");
    assert_usage_error(&["check", "--workload", "nosuch"], "list-append, register");
    // Output paths are checked before the run, which would lose its results.
    assert_usage_error(
        &["bench", "ycsb", "--series", "/nonexistent/dir/s.csv"],
        "--series /nonexistent/dir/s.csv",
    );
    assert_usage_error(
        &["bench", "llt", "--csv", "/nonexistent/dir/s.csv"],
        "--csv /nonexistent/dir/s.csv",
    );
    assert_usage_error(
        &["bench", "llt", "--plot", "/proc/nope"],
        "--plot /proc/nope",
    );
    // A size that cannot fit is refused before loading.
    assert_usage_error(
        &["bench", "ycsb", "--records", "10000000000"],
        "needs about",
    );
    assert_usage_error(&["bench", "llt", "--rows", "100000000000"], "needs about");
    assert_usage_error(
        &["reproduce", "contention", "--records", "100000000000"],
        "needs about",
    );
    assert_usage_error(
        &["check", "--storage", "siro"],
        "needs garbage collection dead-zone",
    );
    // Impossible combinations name the flags' values.
    assert_usage_error(
        &["bench", "ycsb", "--storage", "n2o", "--gc", "coop"],
        "needs version storage o2n",
    );
}

#[test]
fn bench_ycsb_noop_engine_measures_the_driver_alone() {
    let out = strata(&[
        "bench",
        "ycsb",
        "--engine",
        "noop",
        "--records",
        "200",
        "--duration",
        "0.2",
        "--warmup",
        "0",
        "--gc",
        "none",
        "--json",
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).expect("JSON");
    assert_eq!(v["engine"], "noop");
    assert!(v["committed"].as_u64().unwrap() > 0);
    let bad = strata(&["bench", "ycsb", "--engine", "rocks"]);
    assert!(!bad.status.success());
    assert!(text(&bad.stderr).contains("unknown engine"));
}

/// A test's directory, `<temp>/strata-cli-<tag>-<pid>`, removed on drop so
/// that test runs do not pile up directories in /tmp; kept when the test
/// fails (drop while panicking), for a look at what the binary wrote.
pub(crate) struct TestDir(std::path::PathBuf);

impl TestDir {
    /// Not created; what an earlier run of this process id left is removed.
    pub(crate) fn new(tag: &str) -> TestDir {
        let d = std::env::temp_dir().join(format!("strata-cli-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        TestDir(d)
    }
}

impl std::ops::Deref for TestDir {
    type Target = std::path::PathBuf;
    fn deref(&self) -> &std::path::PathBuf {
        &self.0
    }
}

impl AsRef<std::path::Path> for TestDir {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A fresh, empty directory.
pub(crate) fn temp_dir(tag: &str) -> TestDir {
    let d = TestDir::new(tag);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The heterogeneous workload (the study's Fig. 8): the `--ro-threads`
/// transactions' commits and aborts, by reason, are reported on their own
/// (`read_only_extra`), and the top-level figures are the mix's alone.
#[test]
fn bench_ycsb_reports_the_read_only_threads_aborts_on_their_own() {
    let run = |ro_threads: &'static str| {
        let out = strata(&[
            "bench",
            "ycsb",
            "--protocol",
            "mvocc",
            "--records",
            "200",
            "--threads",
            "1",
            "--ro-threads",
            ro_threads,
            "--ro-ops",
            "40",
            "--no-ro-hint",
            "--theta",
            "0.9",
            "--ops-per-txn",
            "8",
            "--duration",
            "0.4",
            "--warmup",
            "0",
            "--json",
        ]);
        assert!(out.status.success(), "stderr: {}", text(&out.stderr));
        serde_json::from_str::<serde_json::Value>(&text(&out.stdout)).expect("JSON")
    };
    let sum = |reasons: &serde_json::Value| -> u64 {
        let m = reasons.as_object().expect("aborts_by_reason is an object");
        // Every conflict kind is named, zeros included.
        for k in strata::ConflictKind::ALL {
            assert!(m[k.name()].is_u64(), "{k}: {reasons}");
        }
        m.values().map(|n| n.as_u64().unwrap()).sum()
    };
    let v = run("1");
    let x = &v["read_only_extra"];
    assert!(x.is_object(), "{v}");
    assert_eq!(
        sum(&x["aborts_by_reason"]),
        x["aborted"].as_u64().unwrap(),
        "{v}"
    );
    assert_eq!(
        sum(&v["aborts_by_reason"]),
        v["aborted"].as_u64().unwrap(),
        "{v}"
    );
    assert!(x["committed"].as_u64().unwrap() + x["aborted"].as_u64().unwrap() > 0);
    assert_eq!(x["committed_per_s"], v["read_only_extra_per_s"], "{v}");
    let rate = x["abort_rate"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&rate), "{v}");
    // A write-free transaction of the extra threads can only fail MVOCC's
    // validation: no other kind of conflict is counted for them.
    let only_validation = x["aborts_by_reason"]
        .as_object()
        .unwrap()
        .iter()
        .all(|(k, n)| k == "validation" || n == 0);
    assert!(only_validation, "{v}");
    // Without extra threads there is nothing to report.
    let v = run("0");
    assert!(v.get("read_only_extra").is_none(), "{v}");
}

/// `--mvto-locked-read` picks MVTO's rule for reading a write-locked
/// version; the study's is the default, and the summary names the rule
/// (MVTO runs only).
#[test]
fn bench_ycsb_mvto_locked_read_rule() {
    let run = |extra: &[&'static str]| {
        let mut args = vec![
            "bench",
            "ycsb",
            "--records",
            "200",
            "--threads",
            "2",
            "--theta",
            "0.9",
            "--duration",
            "0.2",
            "--warmup",
            "0",
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = strata(&args);
        assert!(out.status.success(), "stderr: {}", text(&out.stderr));
        serde_json::from_str::<serde_json::Value>(&text(&out.stdout)).expect("JSON")
    };
    let v = run(&["--protocol", "mvto"]);
    assert_eq!(v["mvto_locked_read"], "abort", "{v}");
    let v = run(&[
        "--protocol",
        "mvto",
        "--mvto-locked-read",
        "abort-if-older-holder",
    ]);
    assert_eq!(v["mvto_locked_read"], "abort-if-older-holder", "{v}");
    assert!(v["committed"].as_u64().unwrap() > 0, "{v}");
    let v = run(&["--protocol", "mvocc"]);
    assert!(v.get("mvto_locked_read").is_none(), "{v}");
    assert_usage_error(
        &["bench", "ycsb", "--mvto-locked-read", "sometimes"],
        "abort-if-older-holder",
    );
}

#[test]
fn bench_ycsb_mix_heterogeneous_and_series() {
    let dir = temp_dir("series");
    let series = dir.join("series.csv");
    let out = strata(&[
        "bench",
        "ycsb",
        "--mix",
        "update-intensive",
        "--records",
        "300",
        "--threads",
        "1",
        "--ro-threads",
        "1",
        "--ro-ops",
        "50",
        "--no-ro-hint",
        "--text-attributes",
        "2",
        "--modify-attrs",
        "3",
        "--duration",
        "1.2",
        "--warmup",
        "0",
        "--series",
        series.to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).expect("JSON");
    assert_eq!(v["read_ratio"], 0.2);
    assert_eq!(v["modify_attrs"], 3);
    assert_eq!(v["ro_hint"], false);
    assert_eq!(v["huge_pages"], "os", "bench ycsb's default policy");
    assert!(v["read_only_extra_per_s"].as_f64().unwrap() > 0.0, "{v}");
    assert!(
        v["memory"]["bytes_per_row"].as_f64().unwrap() > 200.0,
        "{v}"
    );
    let s = std::fs::read_to_string(&series).unwrap();
    assert!(s.starts_with("engine,t_s,committed_per_s"), "{s}");
    assert_eq!(s.lines().count(), 2, "one point per full second: {s}");
    assert!(
        s.lines().nth(1).unwrap().starts_with("strata,1.000,"),
        "{s}"
    );
    assert_usage_error(
        &["bench", "ycsb", "--mix", "read-only", "--read-ratio", "0.5"],
        "--read-ratio",
    );
    assert_usage_error(&["bench", "ycsb", "--mix", "write-only"], "unknown mix");
    assert_usage_error(&["bench", "ycsb", "--modify-attrs", "11"], "--modify-attrs");
}

#[test]
fn bench_ycsb_engines_side_by_side() {
    let out = strata(&[
        "bench",
        "ycsb",
        "--engine",
        "strata,noop,skipdb,fjall,redb",
        "--records",
        "300",
        "--threads",
        "2",
        "--duration",
        "0.2",
        "--warmup",
        "0",
        "--csv",
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{stdout}");
    assert!(lines[0].starts_with("engine,protocol,"));
    for (line, engine) in lines[1..]
        .iter()
        .zip(["strata", "noop", "skipdb", "fjall", "redb"])
    {
        assert!(line.starts_with(&format!("{engine},")), "{line}");
        let tps: f64 = line.split(',').nth(7).unwrap().parse().unwrap();
        assert!(tps > 0.0, "{line}");
    }
    let table = strata(&[
        "bench",
        "ycsb",
        "--engine",
        "strata,redb",
        "--records",
        "200",
        "--duration",
        "0.1",
        "--warmup",
        "0",
    ]);
    assert!(table.status.success(), "stderr: {}", text(&table.stderr));
    let t = text(&table.stdout);
    assert!(
        t.contains("vs strata") && t.contains("redb") && t.contains("1.00x"),
        "{t}"
    );
    assert_usage_error(
        &["bench", "ycsb", "--engine", "strata,oracle"],
        "unknown engine",
    );
}

/// `--wal-dir` never deletes what `strata bench` did not make: a directory
/// holding a user's files (or another database's log) is refused before
/// anything loads, and everything in it is left as it was.
#[test]
fn bench_refuses_a_wal_dir_it_did_not_make_and_leaves_it_alone() {
    let root = TestDir::new("waldir");
    let user = root.join("user");
    std::fs::create_dir_all(user.join("sub")).unwrap();
    std::fs::write(user.join("important.txt"), "x\n").unwrap();
    std::fs::write(user.join("sub").join("deep.txt"), "y\n").unwrap();
    // Looks like a Strata database, but not one the bench made.
    let db = root.join("db");
    std::fs::create_dir_all(&db).unwrap();
    std::fs::write(db.join("LOCK"), "").unwrap();
    std::fs::write(db.join("log-00000000000000000000.seg"), "z").unwrap();
    for dir in [&user, &db] {
        let args = [
            "bench",
            "ycsb",
            "--records",
            "100",
            "--duration",
            "0.1",
            "--warmup",
            "0",
            "--durability",
            "async",
            "--wal-dir",
            dir.to_str().unwrap(),
        ];
        let out = strata(&args);
        assert_eq!(out.status.code(), Some(2), "stderr: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("not made by `strata bench`"),
            "stderr: {}",
            text(&out.stderr)
        );
    }
    assert_eq!(
        std::fs::read_to_string(user.join("important.txt")).unwrap(),
        "x\n"
    );
    assert_eq!(
        std::fs::read_to_string(user.join("sub").join("deep.txt")).unwrap(),
        "y\n"
    );
    assert_eq!(std::fs::read_dir(&user).unwrap().count(), 2);
    assert_eq!(
        std::fs::read_to_string(db.join("log-00000000000000000000.seg")).unwrap(),
        "z"
    );
    assert_eq!(std::fs::read_dir(&db).unwrap().count(), 2);
    // A file where a directory should be is refused too, and kept.
    let file = root.join("file");
    std::fs::write(&file, "f").unwrap();
    assert_usage_error(
        &[
            "bench",
            "ycsb",
            "--durability",
            "async",
            "--wal-dir",
            file.to_str().unwrap(),
        ],
        "not a directory",
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "f");
}

#[test]
fn bench_ycsb_durable_reports_log_bytes_per_transaction() {
    let dir = TestDir::new("wal");
    for mode in ["group", "async"] {
        let out = strata(&[
            "bench",
            "ycsb",
            "--records",
            "300",
            "--duration",
            "0.3",
            "--warmup",
            "0",
            "--read-ratio",
            "0.2",
            "--durability",
            mode,
            "--wal-dir",
            dir.to_str().unwrap(),
            "--json",
        ]);
        assert!(out.status.success(), "stderr: {}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).expect("JSON");
        assert_eq!(v["durability"], mode);
        assert!(v["committed"].as_u64().unwrap() > 0, "{v}");
        assert!(v["log"]["bytes_per_txn"].as_f64().unwrap() > 32.0, "{v}");
        assert!(dir.join("log-00000000000000000000.seg").exists());
        assert!(
            dir.join("STRATA-BENCH-DIR").exists(),
            "the bench marks its directory"
        );
    }
    assert_usage_error(&["bench", "ycsb", "--durability", "group"], "--wal-dir");
    assert_usage_error(&["bench", "ycsb", "--wal-dir", "/tmp/x"], "--durability");
    assert_usage_error(
        &["bench", "ycsb", "--durability", "sometimes"],
        "--durability",
    );
}

#[test]
fn every_storage_scheme_benches_and_checks() {
    // Every scheme the validity matrix accepts with the default options
    // (the CLI's, bar the flag).
    let storages = VersionStorage::ALL
        .into_iter()
        .filter(|&s| Options::default().version_storage(s).validate().is_ok())
        .map(VersionStorage::name);
    for s in storages {
        let out = strata(&[
            "bench",
            "ycsb",
            "--storage",
            s,
            "--records",
            "500",
            "--threads",
            "2",
            "--duration",
            "0.2",
            "--warmup",
            "0.05",
            "--read-ratio",
            "0.5",
            "--json",
        ]);
        assert!(out.status.success(), "{s}: {}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).expect("JSON");
        assert_eq!(v["storage"], s);
        assert!(v["committed"].as_u64().unwrap() > 0, "{v}");
        let m = &v["memory"];
        assert_eq!(
            m["version_bytes"].as_u64().unwrap(),
            m["main_table_bytes"].as_u64().unwrap() + m["version_store_bytes"].as_u64().unwrap(),
            "{v}"
        );
        // The version store's flows (`Stats::storage_allocations` and
        // friends), per committed transaction of the run: half the
        // operations update, one block each (tests/allocations.rs pins
        // the one block), so at most the ten operations' worth.
        let per_txn = |k: &str| m[k].as_f64().unwrap_or_else(|| panic!("{k}: {v}"));
        let allocs = per_txn("storage_allocations_per_txn");
        assert!(allocs > 0.0 && allocs <= 10.0, "{s}: {v}");
        assert!(per_txn("storage_bytes_allocated_per_txn") > 0.0, "{v}");
        assert!(per_txn("gc_bytes_freed_per_txn") >= 0.0, "{v}");
        assert!(m["gc_bytes_freed"].as_u64().is_some(), "{v}");
        let out = strata(&[
            "check",
            "--protocol",
            "mvto",
            "--storage",
            s,
            "--txns",
            "500",
        ]);
        assert!(out.status.success(), "{s}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains(&format!("storage {s}")));
    }
    assert_usage_error(
        &["bench", "ycsb", "--storage", "no-such-scheme"],
        "expected one of",
    );
}

#[test]
fn bench_llt_windows_must_pair_up() {
    assert_usage_error(
        &["bench", "llt", "--llt-start", "1,5", "--llt-end", "3"],
        "one end per start",
    );
    assert_usage_error(
        &[
            "bench",
            "llt",
            "--duration",
            "10",
            "--llt-start",
            "1,2",
            "--llt-end",
            "3,4",
        ],
        "after the previous one",
    );
}

/// `--preset` sets every dimension (index pointers too) except those given
/// by their own flags, which override it, and the header says so.
#[test]
fn explicit_flags_override_a_preset_and_the_header_says_so() {
    let run = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "ycsb",
            "--records",
            "500",
            "--duration",
            "0.1",
            "--warmup",
            "0",
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = strata(&args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        serde_json::from_str::<serde_json::Value>(&text(&out.stdout)).expect("JSON")
    };
    let v = run(&["--preset", "hekaton"]);
    assert_eq!(
        (
            &v["protocol"],
            &v["storage"],
            &v["gc"],
            &v["index_pointers"]
        ),
        (
            &"mvocc".into(),
            &"o2n".into(),
            &"coop".into(),
            &"physical".into()
        )
    );
    assert_eq!(v["overrides"], serde_json::json!([]));
    let v = run(&[
        "--preset",
        "hekaton",
        "--protocol",
        "ssn",
        "--storage",
        "n2o",
        "--gc",
        "txn",
    ]);
    assert_eq!(
        (
            &v["protocol"],
            &v["storage"],
            &v["gc"],
            &v["index_pointers"]
        ),
        (
            &"ssn".into(),
            &"n2o".into(),
            &"txn".into(),
            &"physical".into()
        )
    );
    let notes = v["overrides"].as_array().unwrap();
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(notes[0]
        .as_str()
        .unwrap()
        .contains("--protocol ssn overrides preset hekaton's mvocc"));
    let out = strata(&[
        "bench",
        "ycsb",
        "--preset",
        "hekaton",
        "--gc",
        "txn",
        "--records",
        "500",
        "--duration",
        "0.1",
        "--warmup",
        "0",
    ]);
    assert!(text(&out.stdout).contains("--gc txn overrides preset hekaton's coop"));
    assert_usage_error(
        &["bench", "ycsb", "--index-pointers", "nope"],
        "tuple-id, pkey, physical",
    );
}

/// Ctrl-C (SIGINT) in the middle of a run: the summary of what was measured
/// so far, and exit code 130.
#[cfg(unix)]
#[test]
fn an_interrupted_run_reports_what_it_measured() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "bench",
            "ycsb",
            "--records",
            "2000",
            "--duration",
            "60",
            "--warmup",
            "0",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the run is under way: the child says so on stderr
    // after the load (its Ctrl-C handler is in place long before).
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
        assert!(n > 0, "the run never began: {seen}");
        seen.push_str(&line);
        if line.starts_with("run: ") {
            break;
        }
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    std::io::Read::read_to_string(&mut stderr, &mut seen).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{seen}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("committed"), "{stdout}");
    assert!(seen.contains("interrupted"), "{seen}");
}

/// `bench durable` runs each engine in its own directory under --dir,
/// leaves nothing behind, and reports the group commit's sharing.
#[test]
fn bench_durable_compares_group_commit_with_peers() {
    let dir = temp_dir("durable");
    // Strata and redb, 100 rows, 0.3 s, no warm-up, in `dir`, then `extra`.
    let durable = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "durable",
            "--engine",
            "strata,redb",
            "--records",
            "100",
            "--duration",
            "0.3",
            "--warmup",
            "0",
            "--dir",
            dir.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        strata(&args)
    };
    let out = durable(&["--op", "update", "--json"]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).expect("JSON");
    let runs = v.as_array().expect("one report per engine");
    assert_eq!(runs.len(), 2, "{v}");
    assert_eq!(runs[0]["engine"], "strata");
    assert_eq!(runs[1]["engine"], "redb");
    for r in runs {
        assert_eq!(r["op"], "update");
        assert!(r["run"]["committed"].as_u64().unwrap() > 0, "{r}");
    }
    assert!(runs[0]["txns_per_fsync"].as_f64().unwrap() >= 1.0, "{v}");
    assert_eq!(runs[0]["pipeline"], 1);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "left files");
    // Pipelined: the flag reaches Strata's clients (not the peers'), and
    // the text table says so.
    let out = durable(&["--op", "insert", "--pipeline", "16"]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("strata pipelined (16 in flight per thread; peers one at a time)"),
        "{stdout}"
    );
    assert_usage_error(&["bench", "durable", "--pipeline", "0"], "--pipeline");
    assert_usage_error(&["bench", "durable", "--engine", "sqlite"], "--engine");
    assert_usage_error(
        &["bench", "durable", "--dir", "/nonexistent/strata"],
        "--dir",
    );
}

/// `bench read-mostly` (ERMIA's microbenchmark) runs briefly under OCC and
/// commits; at write fraction 0 nothing aborts; bad flags are usage errors
/// naming the flag.
#[test]
fn bench_read_mostly_runs_and_checks_its_flags() {
    let run = |fraction: &str| {
        let out = strata(&[
            "bench",
            "read-mostly",
            "--protocol",
            "occ",
            "--items",
            "2000",
            "--reads",
            "200",
            "--write-fraction",
            fraction,
            "--duration",
            "0.3",
            "--warmup",
            "0",
            "--json",
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_str::<serde_json::Value>(&text(&out.stdout)).expect("JSON")
    };
    let v = run("0.01");
    assert_eq!(v["benchmark"], "read-mostly");
    assert_eq!(v["protocol"], "occ");
    assert!(v["run"]["committed"].as_u64().unwrap() > 0, "{v}");
    assert!(v["abort_ratio"].as_f64().is_some(), "{v}");
    let v = run("0");
    assert_eq!(v["run"]["aborted"].as_u64(), Some(0), "{v}");
    assert_usage_error(
        &["bench", "read-mostly", "--write-fraction", "2"],
        "--write-fraction",
    );
    assert_usage_error(
        &["bench", "read-mostly", "--items", "1000", "--reads", "5000"],
        "--reads",
    );
    assert_usage_error(
        &["bench", "read-mostly", "--warehouses", "0"],
        "--warehouses",
    );
    // The run flags read-mostly, ycsb-core and htap share (`RunFlags`).
    for cmd in ["read-mostly", "ycsb-core", "htap"] {
        assert_usage_error(&["bench", cmd, "--duration", "-1"], "--duration");
        assert_usage_error(&["bench", cmd, "--warmup", "nan"], "--warmup");
    }
}

/// SSN's blind overwrites show in the JSON (`memory.blind_overwrites`,
/// `memory.writer_waits`): two threads updating 20 rows at Zipf 0.9 meet
/// newer versions constantly, and `--no-blind-writes` and the `ermia`
/// preset (ERMIA's rule) never write over one.
#[test]
fn bench_ycsb_reports_blind_overwrites_and_the_flag_turns_them_off() {
    let run = |extra: &[&'static str]| {
        let mut a = vec![
            "bench",
            "ycsb",
            "--records",
            "20",
            "--threads",
            "2",
            "--duration",
            "0.5",
            "--warmup",
            "0",
            "--read-ratio",
            "0",
            "--theta",
            "0.9",
            "--json",
        ];
        a.extend_from_slice(extra);
        let out = strata(&a);
        assert!(out.status.success(), "stderr: {}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).expect("valid JSON");
        let m = &v["memory"];
        (
            m["blind_overwrites"].as_u64().expect("a count"),
            m["writer_waits"].as_u64().expect("a count"),
        )
    };
    let (blind, _) = run(&[]);
    assert!(blind > 0, "no blind overwrite among thousands of conflicts");
    assert_eq!(run(&["--no-blind-writes"]), (0, 0));
    assert_eq!(
        run(&["--preset", "ermia"]),
        (0, 0),
        "ERMIA's published rule"
    );
}

/// `--ab-ms` flips `strata::ab` during the measured window and reports the
/// neighbouring intervals' ratio (on an unswitched build, the A/A spread:
/// near 1), in the summary and the JSON; intervals that leave no pair in
/// the window are refused.
#[test]
fn bench_ycsb_ab_reports_neighbouring_interval_pairs() {
    let args = |extra: &[&'static str]| {
        let mut a = vec![
            "bench",
            "ycsb",
            "--records",
            "2000",
            "--threads",
            "1",
            "--duration",
            "0.8",
            "--warmup",
            "0",
        ];
        a.extend_from_slice(extra);
        a
    };
    let out = strata(&args(&["--ab-ms", "100"]));
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(s.contains("a/b       strata::ab on/off"), "{s}");
    assert!(s.contains("of 100 ms intervals"), "{s}");
    let out = strata(&args(&["--ab-ms", "100", "--json"]));
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).expect("JSON");
    assert!(v["ab"]["pairs"].as_u64().unwrap() >= 2, "{v}");
    let r = v["ab"]["on_over_off_median"].as_f64().unwrap();
    assert!(r > 0.2 && r < 5.0, "{v}");
    let out = strata(&args(&["--json"]));
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).expect("JSON");
    assert!(v.get("ab").is_none(), "{v}");
    assert_usage_error(&args(&["--ab-ms", "5"]), "--ab-ms");
    assert_usage_error(&args(&["--ab-ms", "500"]), "--ab-ms");
}

/// Every flag of seconds takes 0 to one year: a huge, negative, infinite or
/// NaN value is a usage error naming the flag and the range (before it
/// panicked in `Duration::from_secs_f64` or overflowed the clock).
#[test]
fn durations_beyond_a_year_nan_or_negative_are_usage_errors() {
    let flags: &[(&[&str], &str)] = &[
        (&["bench", "ycsb"], "--duration"),
        (&["bench", "ycsb"], "--warmup"),
        (&["bench", "tpcc"], "--duration"),
        (&["bench", "tpcc"], "--warmup"),
        (&["bench", "llt"], "--duration"),
        (&["bench", "llt"], "--llt-start"),
        (&["bench", "llt"], "--llt-end"),
        (&["bench", "llt"], "--zipf-at"),
        (&["bench", "durable"], "--duration"),
        (&["bench", "durable"], "--warmup"),
        (&["bench", "read-mostly"], "--duration"),
        (&["bench", "read-mostly"], "--warmup"),
        (&["bench", "ycsb-core"], "--duration"),
        (&["bench", "htap"], "--warmup"),
        (&["bench", "htap"], "--point-every"),
        (&["reproduce", "contention"], "--duration"),
        (&["reproduce", "contention"], "--warmup"),
        (&["reproduce", "vdriver-fig14"], "--duration"),
    ];
    for (command, flag) in flags {
        for value in ["1e20", "1e19", "31536001", "NaN", "inf", "-1"] {
            let mut args = command.to_vec();
            // `--flag=-1`: a value, not a flag, whatever the command's
            // negative-number setting.
            let arg = format!("{flag}={value}");
            args.push(&arg);
            assert_usage_error(&args, flag);
            assert_usage_error(&args, "from 0 to 31536000");
        }
    }
    assert_usage_error(
        &["bench", "llt", "--gc-interval-ms", "18446744073709551615"],
        "--gc-interval-ms",
    );
}

/// The text after `flag`'s line in a command's `--help`, up to its default.
fn flag_help(command: &[&str], flag: &str) -> String {
    let mut args = command.to_vec();
    args.push("--help");
    let out = strata(&args);
    assert!(out.status.success(), "{args:?}");
    let help = text(&out.stdout);
    let mut lines = help
        .lines()
        .skip_while(|l| !l.trim_start().starts_with(flag));
    assert!(lines.next().is_some(), "{args:?}: no {flag}:\n{help}");
    lines
        .take_while(|l| {
            let l = l.trim_start();
            !l.starts_with("[default") && !l.starts_with("--")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Help texts say what the commands do: every collector the engine has
/// under each `--gc` (from `GcPolicy::ALL`, not a list of our own), the
/// four studies `reproduce` covers, `bench` writing a log with
/// `--durability`, and a peer engine left out of the build named as such.
#[test]
fn help_texts_name_what_the_commands_take() {
    for command in [
        &["bench", "ycsb"][..],
        &["bench", "llt"],
        &["bench", "read-mostly"],
        &["check"],
    ] {
        let help = flag_help(command, "--gc <GC>");
        let words: Vec<&str> = help
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .collect();
        for gc in strata::GcPolicy::ALL {
            assert!(
                words.contains(&gc.name()),
                "{command:?} --gc help lacks {gc}: {help}"
            );
        }
    }
    let reproduce = text(&strata(&["reproduce", "--help"]).stdout);
    for study in ["Peloton", "vDriver", "ERMIA", "MV-PBT"] {
        assert!(reproduce.contains(study), "{study}: {reproduce}");
    }
    assert!(
        !reproduce.contains("a figure of the Peloton study"),
        "{reproduce}"
    );
    let bench = text(&strata(&["bench", "--help"]).stdout);
    assert!(!bench.contains("fresh in-memory database"), "{bench}");
    assert!(bench.contains("--durability"), "{bench}");
    if !cfg!(feature = "rocksdb") {
        for args in [
            &["bench", "ycsb", "--engine", "rocksdb", "--records", "10"][..],
            &[
                "bench",
                "ycsb",
                "--engine",
                "rocksdb-optimistic",
                "--records",
                "10",
            ],
        ] {
            assert_usage_error(args, "is implemented but not compiled into this build");
            assert_usage_error(args, "the `rocksdb` cargo feature");
            assert_usage_error(args, "--features rocksdb");
        }
        let out = strata(&[
            "bench",
            "durable",
            "--engine",
            "rocksdb",
            "--duration",
            "0.1",
        ]);
        let stderr = text(&out.stderr);
        assert!(stderr.contains("not compiled into this build"), "{stderr}");
        assert!(!stderr.contains("not implemented"), "{stderr}");
    }
}

/// `bench ycsb --index mvpbt` builds its secondary indexes as MV-PBT and
/// says so; without secondary indexes there is no index to name.
#[test]
fn bench_ycsb_index_kind_is_reported() {
    let run = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "ycsb",
            "--records",
            "300",
            "--threads",
            "1",
            "--duration",
            "0.1",
            "--warmup",
            "0",
            "--columns",
            "3",
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = strata(&args);
        assert!(out.status.success(), "stderr: {}", text(&out.stderr));
        serde_json::from_str::<serde_json::Value>(&text(&out.stdout)).expect("JSON")
    };
    let v = run(&["--secondary-indexes", "1", "--index", "mvpbt"]);
    assert_eq!(v["index"], "mvpbt");
    assert!(v["committed"].as_u64().unwrap() > 0);
    assert!(run(&[])["index"].is_null());
    let bad = strata(&["bench", "ycsb", "--index", "btree"]);
    assert_eq!(bad.status.code(), Some(2));
}
