//! `strata explore` end to end: a tiny real sweep over a grid, its outputs,
//! a rerun that reuses every trial, and the errors a user meets first.

use crate::cli::{strata, text};

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("strata-explore-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Four designs, two grid cells, a budget that fits the search at its
/// shortest runs (0.2 s each).
fn sweep(out: &std::path::Path) -> std::process::Output {
    strata(&sweep_args(out))
}

fn sweep_args(out: &std::path::Path) -> Vec<&str> {
    vec![
        "explore",
        "--protocol",
        "ssn,mvto",
        "--storage",
        "n2o",
        "--gc",
        "txn,vac",
        "--pointers",
        "tuple-id",
        "--records",
        "2000",
        "--columns",
        "3",
        "--read-ratio",
        "0.5",
        "--grid",
        "theta=0,0.9",
        "--finalists",
        "2",
        "--min-run",
        "0.2",
        "--max-run",
        "0.3",
        "--budget",
        "60",
        "--out",
        out.to_str().unwrap(),
    ]
}

#[test]
fn a_tiny_sweep_ranks_recommends_plots_and_resumes() {
    let out = tmp("sweep");
    let r = sweep(&out);
    assert!(r.status.success(), "stderr: {}", text(&r.stderr));
    let stdout = text(&r.stdout);
    // Both cells, a ranked table, a recommendation to paste, the map.
    for s in [
        "theta=0 ",
        "theta=0.9 ",
        "| rank | design |",
        "strata::Options::default()",
        "strata bench ycsb --protocol",
        "== The map",
    ] {
        assert!(stdout.contains(s), "{s:?} missing from:\n{stdout}");
    }
    for f in ["report.md", "result.json", "trials.csv", "heatmap.png"] {
        assert!(out.join(f).exists(), "{f}");
    }
    assert!(std::fs::read_dir(&out).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with("pareto-theta")));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap();
    let cells = json["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for c in cells {
        assert!(!c["winners"].as_array().unwrap().is_empty(), "{c}");
        // Every finalist has at least three trials.
        for p in c["ranked"].as_array().unwrap() {
            assert!(p["trials"].as_u64().unwrap() >= 3, "{p}");
        }
        assert!(c["spent_s"].as_f64().unwrap() <= 30.0, "{c}");
    }
    assert!(json["machine"].as_str().unwrap().contains("cores"));
    let rows = std::fs::read_to_string(out.join("trials.csv"))
        .unwrap()
        .lines()
        .count()
        - 1;
    assert!(rows >= 2 * (4 + 2 * 3), "{rows} trials");

    // The same command again: every trial is reused, nothing runs.
    let again = sweep(&out);
    assert!(again.status.success(), "stderr: {}", text(&again.stderr));
    let err = text(&again.stderr);
    assert!(err.contains("reused"), "{err}");
    assert!(!err.contains("round 1 trial"), "a trial ran again:\n{err}");
    let rows_after = std::fs::read_to_string(out.join("trials.csv"))
        .unwrap()
        .lines()
        .count()
        - 1;
    assert_eq!(rows_after, rows);
    // The same ranking.
    let json2: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap();
    assert_eq!(json["cells"][0]["winners"], json2["cells"][0]["winners"]);
    assert!(!text(&again.stdout).contains("--any-build"));
    // Reused from any build: the report says so.
    let any = strata(&[&sweep_args(&out)[..], &["--any-build"]].concat());
    assert!(any.status.success(), "stderr: {}", text(&any.stderr));
    assert!(text(&any.stderr).contains("reused"));
    assert!(std::fs::read_to_string(out.join("report.md"))
        .unwrap()
        .contains("--any-build: trials measured by other builds"));
    // --fresh measures again, and keeps the old rows.
    let fresh = strata(&[&sweep_args(&out)[..], &["--fresh"]].concat());
    assert!(fresh.status.success(), "stderr: {}", text(&fresh.stderr));
    assert!(!text(&fresh.stderr).contains("reused"));
    let rows_fresh = std::fs::read_to_string(out.join("trials.csv"))
        .unwrap()
        .lines()
        .count()
        - 1;
    assert!(rows_fresh > rows_after, "{rows_fresh} vs {rows_after}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn mistakes_are_usage_errors_that_say_what_to_do() {
    let out = tmp("errors");
    let o = out.to_str().unwrap();
    for (args, says) in [
        (vec!["--budget", "5", "--out", o], "too small"),
        (
            vec!["--grid", "colour=1,2", "--out", o],
            "unknown parameter",
        ),
        (vec!["--grid", "theta", "--out", o], "expected name=v1,v2"),
        (
            vec!["--workload", "tpcc", "--grid", "theta=0,0.9", "--out", o],
            "does not apply to tpcc",
        ),
        (
            vec!["--study", "--workload", "llt", "--out", o],
            "cannot be used with",
        ),
        (vec!["--budget", "10d", "--out", o], "expected a time"),
        (
            vec!["--storage", "siro", "--gc", "txn", "--out", o],
            "no valid design",
        ),
        (
            vec!["--workload-file", "/nonexistent/w.toml", "--out", o],
            "/nonexistent/w.toml",
        ),
    ] {
        let mut all = vec!["explore"];
        all.extend(args.iter().copied());
        let r = strata(&all);
        assert_eq!(r.status.code(), Some(2), "{all:?}: {}", text(&r.stderr));
        assert!(
            text(&r.stderr).contains(says),
            "{all:?}: {}",
            text(&r.stderr)
        );
    }
    // Nothing was measured, so nothing was written.
    assert!(!out.join("trials.csv").exists());
}

#[test]
fn a_workload_file_is_explored_and_a_bad_one_names_its_line() {
    let out = tmp("file");
    std::fs::create_dir_all(&out).unwrap();
    let good = out.join("w.toml");
    std::fs::write(
        &good,
        r#"name = "tiny"
[[table]]
name = "t"
rows = 500
columns = [ { name = "v", type = "int" } ]
indexes = [ { name = "t_v", columns = ["v"] } ]

[[transaction]]
name = "bump"
ops = [ { op = "update", table = "t", keys = "zipf:0.8", count = 2 } ]

[[transaction]]
name = "look"
read_only = true
ops = [ { op = "index_scan", index = "t_v", length = 5 } ]
"#,
    )
    .unwrap();
    let r = strata(&[
        "explore",
        "--workload-file",
        good.to_str().unwrap(),
        "--protocol",
        "ssn",
        "--storage",
        "n2o",
        "--gc",
        "txn",
        "--pointers",
        "tuple-id",
        "--finalists",
        "2",
        "--min-run",
        "0.2",
        "--max-run",
        "0.2",
        "--budget",
        "20",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "stderr: {}", text(&r.stderr));
    let stdout = text(&r.stdout);
    // The index kind is a dimension here: the file has a secondary index.
    assert!(stdout.contains("ssn/n2o/txn/tuple-id/mvpbt"), "{stdout}");
    assert!(stdout.contains("ssn/n2o/txn/tuple-id "), "{stdout}");
    assert!(stdout.contains("(tiny, digest "), "{stdout}");
    // The recommendation reruns the winner with `strata bench file`.
    assert!(
        stdout.contains(&format!(
            "strata bench file --workload-file {}",
            good.display()
        )),
        "{stdout}"
    );
    let bench = strata(&[
        "bench",
        "file",
        "--workload-file",
        good.to_str().unwrap(),
        "--index",
        "mvpbt",
        "--duration",
        "0.2",
        "--warmup",
        "0",
        "--json",
    ]);
    assert!(bench.status.success(), "{}", text(&bench.stderr));
    let v: serde_json::Value = serde_json::from_str(&text(&bench.stdout)).unwrap();
    assert_eq!(v["workload"], "tiny");
    assert_eq!(v["index"], "mvpbt");
    let types: Vec<&str> = (v["run"]["per_type"].as_array().unwrap().iter())
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["bump", "look"]);
    assert!(v["run"]["committed"].as_u64().unwrap() > 0, "{v}");

    let bad = out.join("bad.toml");
    std::fs::write(
        &bad,
        "[[table]]\nname = \"t\"\nrows = 10\n\n[[transaction]]\nname = \"x\"\nops = [ { op = \"read\", table = \"nope\" } ]\n",
    )
    .unwrap();
    let r = strata(&[
        "explore",
        "--workload-file",
        bad.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(2), "{}", text(&r.stderr));
    let err = text(&r.stderr);
    assert!(err.contains("bad.toml:7:"), "{err}");
    assert!(err.contains("nope"), "{err}");
    // The same mistake through `bench file`: exit 2, the same line.
    let r = strata(&["bench", "file", "--workload-file", bad.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(2), "{}", text(&r.stderr));
    assert!(
        text(&r.stderr).contains("bad.toml:7:"),
        "{}",
        text(&r.stderr)
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// Ctrl-C (SIGINT) during a sweep: the trials measured so far stay in
/// trials.csv (the one cut short is not kept), the report is written and
/// says the search stopped early, and the same command resumes from them.
#[cfg(unix)]
#[test]
fn an_interrupted_sweep_keeps_its_trials_and_resumes() {
    let out = tmp("interrupt");
    let args = [
        "explore",
        "--protocol",
        "ssn,mvto,si",
        "--storage",
        "n2o,o2n",
        "--gc",
        "txn",
        "--pointers",
        "tuple-id",
        "--records",
        "1000",
        "--columns",
        "2",
        "--min-run",
        "0.3",
        "--max-run",
        "0.5",
        "--budget",
        "600",
        "--out",
        out.to_str().unwrap(),
    ];
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for three trials on disk (state, not time; the bound only turns
    // a hang into a failure).
    let rows = || {
        std::fs::read_to_string(out.join("trials.csv"))
            .map(|s| s.lines().count().saturating_sub(1))
            .unwrap_or(0)
    };
    for _ in 0..6000 {
        if rows() >= 3 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(rows() >= 3, "no trials written");
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let r = child.wait_with_output().unwrap();
    // 130, as every interrupted strata command, after its report.
    assert_eq!(r.status.code(), Some(130), "stderr: {}", text(&r.stderr));
    let kept = rows();
    assert!(kept >= 3);
    assert!(
        text(&r.stdout).contains("stopped early"),
        "{}",
        text(&r.stdout)
    );
    assert!(std::fs::read_to_string(out.join("report.md"))
        .unwrap()
        .contains("Provisional"));
    // The same command again: what was measured is reused, the rest runs.
    let again = strata(&args);
    assert!(again.status.success(), "stderr: {}", text(&again.stderr));
    assert!(
        text(&again.stderr).contains(&format!("reused {kept} trial(s)")),
        "{}",
        text(&again.stderr)
    );
    assert!(rows() > kept);
    let _ = std::fs::remove_dir_all(&out);
}

/// Every built-in workload runs through the explorer (one design, its three
/// final trials) and reports a rate and the memory it held.
#[test]
fn every_built_in_workload_explores() {
    for w in ["tpcc", "tpcc-hybrid", "llt", "htap"] {
        let out = tmp(w);
        let r = strata(&[
            "explore",
            "--workload",
            w,
            "--protocol",
            "mvto",
            "--storage",
            "n2o",
            "--gc",
            "txn",
            "--pointers",
            "tuple-id",
            "--index-kind",
            "standard",
            "--finalists",
            "1",
            "--min-run",
            "0.3",
            "--max-run",
            "0.3",
            "--threads",
            "1",
            "--records",
            "2000",
            "--budget",
            "120",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(r.status.success(), "{w}: {}", text(&r.stderr));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap())
                .unwrap();
        let best = &json["cells"][0]["ranked"][0];
        assert_eq!(best["design"], "mvto/n2o/txn/tuple-id", "{w}: {json}");
        assert!(
            best["committed_per_s"].as_f64().unwrap() > 0.0,
            "{w}: {best}"
        );
        assert!(best["bytes_per_row"].as_f64().unwrap() > 0.0, "{w}: {best}");
        assert_eq!(best["trials"], 3, "{w}");
        let _ = std::fs::remove_dir_all(&out);
    }
}
