//! The papers' remaining engine experiments (issue 41, item 13), each run
//! end to end at a tiny size through `strata reproduce <figure>`: the
//! figure's CSV has every series it runs, its plots are written, and its
//! `-claims.csv` and `.md` carry every claim of the registry judged on the
//! run's own numbers (one row per trial and one over all of them).

use crate::cli::{strata, text};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A fresh directory, removed afterwards unless the test failed.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("strata-figures-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

const VERDICTS: [&str; 6] = [
    "agrees",
    "agrees in direction",
    "exaggerates",
    "differs",
    "undecided",
    "not measured",
];

/// Runs `strata reproduce FIG ARGS --trials 1 --out DIR` and returns the
/// figure's CSV.
fn reproduce(fig: &str, args: &[&str], dir: &Path) -> String {
    let mut all = vec!["reproduce", fig];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--trials", "1", "--out", dir.to_str().unwrap()]);
    let out = strata(&all);
    assert!(out.status.success(), "{fig}: {}", text(&out.stderr));
    std::fs::read_to_string(dir.join(format!("{fig}.csv"))).unwrap()
}

/// The claims `reproduce --claims` lists for `fig`: (where, the paper's
/// words), one per claim.
fn registered_claims(fig: &str) -> Vec<(String, String)> {
    let md = text(&strata(&["reproduce", "--claims"]).stdout);
    md.lines()
        .filter(|l| l.starts_with(&format!("| `{fig}` |")))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            (cells[1].to_string(), cells[2].trim_matches('"').to_string())
        })
        .collect()
}

/// Every claim of `fig` is judged in its `-claims.csv` (a trial row and
/// an `all` row with a verdict) and quoted in its `.md`; returns the `all`
/// rows' verdicts. `measured`: each claim has a number in this run.
fn assert_judged(fig: &str, dir: &Path, measured: bool) -> Vec<String> {
    let claims = registered_claims(fig);
    assert!(!claims.is_empty(), "{fig} states no claim");
    let csv = std::fs::read_to_string(dir.join(format!("{fig}-claims.csv"))).unwrap();
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let head = r.headers().unwrap().clone();
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    let (trial, verdict, number, claim) =
        (col("trial"), col("verdict"), col("number"), col("claim"));
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    assert_eq!(rows.len(), 2 * claims.len(), "{fig}: {csv}");
    let all: Vec<&csv::StringRecord> = rows.iter().filter(|x| &x[trial] == "all").collect();
    assert_eq!(all.len(), claims.len(), "{fig}: {csv}");
    let md = std::fs::read_to_string(dir.join(format!("{fig}.md"))).unwrap();
    for (x, (_, words)) in all.iter().zip(&claims) {
        assert!(VERDICTS.contains(&&x[verdict]), "{fig}: {x:?}");
        // The table escapes '|'; the claims here have none.
        assert_eq!(&x[claim], words.as_str(), "{fig}");
        assert!(md.contains(words.as_str()), "{fig}'s .md lacks {words:?}");
        if measured {
            assert!(
                x[number].parse::<f64>().is_ok_and(f64::is_finite),
                "{fig}: a claim has no number: {x:?}"
            );
        }
    }
    all.iter().map(|x| x[verdict].to_string()).collect()
}

/// The distinct values of CSV column `name`.
fn column(csv: &str, name: &str) -> BTreeSet<String> {
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let i = r.headers().unwrap().iter().position(|h| h == name);
    let i = i.unwrap_or_else(|| panic!("no column {name}: {csv}"));
    r.records().map(|x| x.unwrap()[i].to_string()).collect()
}

fn assert_pngs(dir: &Path, names: &[&str]) {
    for n in names {
        let bytes = std::fs::read(dir.join(n)).unwrap_or_else(|e| panic!("{n}: {e}"));
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{n}");
    }
}

fn set(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// vDriver Figures 2-3: PostgreSQL's and MySQL's designs, with the LLT
/// and without, every second of each run, in-row and off-row bytes apart.
#[test]
fn vdriver_fig3_runs_both_designs_with_and_without_the_llt() {
    let dir = Dir::new("vdriver-fig3");
    // Paced: its one sample a run falls at the same point on any machine
    // (on wall time a loaded machine could leave a series without one).
    let tiny = [
        "--duration",
        "2",
        "--records",
        "100",
        "--threads",
        "1",
        "--paced",
        "2000",
    ];
    let csv = reproduce("vdriver-fig3", &tiny, &dir.0);
    assert_eq!(
        column(&csv, "series"),
        set(&[
            "PostgreSQL, LLTs",
            "PostgreSQL, no LLT",
            "MySQL, LLTs",
            "MySQL, no LLT"
        ])
    );
    assert!(column(&csv, "in_row_bytes").len() > 1, "{csv}");
    assert_pngs(
        &dir.0,
        &[
            "vdriver-fig3.png",
            "vdriver-fig3-in-row.png",
            "vdriver-fig3-off-row.png",
            "vdriver-fig3-chain.png",
        ],
    );
    assert_judged("vdriver-fig3", &dir.0, true);
}

/// vDriver Fig. 16: the four runs (normal and huge δ_LLT, uniform and
/// Zipfian 1.2), each class's counters sampled through the run, the huge
/// δ_LLT above the normal one.
#[test]
fn vdriver_fig16_samples_each_class_under_both_thresholds() {
    let dir = Dir::new("vdriver-fig16");
    let tiny = ["--duration", "2", "--records", "200", "--threads", "1"];
    let csv = reproduce("vdriver-fig16", &tiny, &dir.0);
    let series = [
        "normal δ_LLT, uniform",
        "huge δ_LLT, uniform",
        "normal δ_LLT, Zipfian 1.2",
        "huge δ_LLT, Zipfian 1.2",
    ];
    assert_eq!(column(&csv, "series"), set(&series));
    assert_eq!(column(&csv, "class"), set(&["HOT", "COLD", "LLT"]));
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let (mut normal, mut huge) = (BTreeSet::new(), BTreeSet::new());
    for x in r.records() {
        // trial, series, llt_commits, ...
        let x = x.unwrap();
        let commits: u64 = x[2].parse().unwrap();
        if x[1].starts_with("huge") {
            huge.insert(commits);
        } else {
            normal.insert(commits);
        }
    }
    assert_eq!(normal, [10_000].into_iter().collect(), "{csv}");
    assert!(huge.iter().all(|&h| h >= 100_000), "{huge:?}");
    assert_pngs(
        &dir.0,
        &[
            "vdriver-fig16-normal-uniform.png",
            "vdriver-fig16-huge-skewed.png",
        ],
    );
    assert_judged("vdriver-fig16", &dir.0, false);
}

/// vDriver Figures 17 and 18: the thread sweep with and without LLTs,
/// and the two record sizes with an LLT, every claim measured. Paced: on
/// wall time a loaded machine could take a 2 s run's one sample late,
/// outside the LLT's window.
#[test]
fn vdriver_fig17_and_fig18_sweep_threads_and_record_sizes() {
    let dir = Dir::new("vdriver-fig17");
    let tiny = ["--duration", "2", "--records", "100", "--paced", "2000"];
    let csv = reproduce("vdriver-fig17", &tiny, &dir.0);
    assert_eq!(
        column(&csv, "series"),
        set(&[
            "vDriver, LLTs",
            "vDriver, no LLT",
            "MySQL, LLTs",
            "MySQL, no LLT"
        ])
    );
    assert_pngs(&dir.0, &["vdriver-fig17.png"]);
    assert_judged("vdriver-fig17", &dir.0, true);

    let csv = reproduce("vdriver-fig18", &tiny, &dir.0);
    assert_eq!(
        column(&csv, "config"),
        set(&["vDriver (SIRO, dead zones)", "PostgreSQL (O2N, VAC)"])
    );
    assert_eq!(column(&csv, "long"), set(&["true"]));
    assert_pngs(&dir.0, &["vdriver-fig18.png"]);
    assert_judged("vdriver-fig18", &dir.0, true);
}

/// MV-PBT Fig. 12a: TPC-C with Q13 beside it under the three series,
/// both throughputs measured; Fig. 14b: TPC-C at each warehouse count
/// under the three index settings.
#[test]
fn mvpbt_fig12a_and_fig14_run_tpcc_through_each_index() {
    let dir = Dir::new("mvpbt-tpcc");
    let tiny = ["--duration", "0.3", "--warmup", "0", "--threads", "1"];
    let csv = reproduce("mvpbt-fig12a", &tiny, &dir.0);
    assert_eq!(
        column(&csv, "series"),
        set(&[
            "B+-tree",
            "MV-PBT",
            "MV-PBT w/o partition GC and index-only visibility check"
        ])
    );
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    for x in r.records() {
        let x = x.unwrap();
        // trial, series, oltp_per_s, analytical_per_s: both ran.
        let (oltp, olap): (f64, f64) = (x[2].parse().unwrap(), x[3].parse().unwrap());
        assert!(oltp > 0.0 && olap > 0.0, "{x:?}");
        // The index-only checks' records per row: counted for MV-PBT with
        // them (Q13's covering scans), none for the B+-tree.
        let (visited, rows): (u64, u64) = (x[8].parse().unwrap(), x[9].parse().unwrap());
        match &x[1] {
            "MV-PBT" => assert!(rows > 0 && visited >= rows, "{x:?}"),
            "B+-tree" => assert_eq!((visited, rows), (0, 0), "{x:?}"),
            _ => {}
        }
    }
    assert_pngs(&dir.0, &["mvpbt-fig12a.png", "mvpbt-fig12a-oltp.png"]);
    assert_judged("mvpbt-fig12a", &dir.0, true);

    let csv = reproduce(
        "mvpbt-fig14",
        &["--duration", "0.2", "--warmup", "0"],
        &dir.0,
    );
    assert_eq!(column(&csv, "x_name"), set(&["warehouses"]));
    assert_eq!(column(&csv, "x"), set(&["1", "2", "4"]));
    assert_eq!(
        column(&csv, "series"),
        set(&[
            "B+-tree (indirection)",
            "MV-PBT (physical references)",
            "MV-PBT (indirection)"
        ])
    );
    assert_pngs(&dir.0, &["mvpbt-fig14.png"]);
    assert_judged("mvpbt-fig14", &dir.0, true);
}

/// ERMIA Fig. 7 (left): TPC-C under the three systems at each thread
/// count, a warehouse per thread; TPC-E is listed as out of scope.
#[test]
fn ermia_fig7_sweeps_threads_under_the_three_systems() {
    let dir = Dir::new("ermia-fig7");
    let csv = reproduce(
        "ermia-fig7",
        &["--duration", "0.2", "--warmup", "0"],
        &dir.0,
    );
    assert_eq!(
        column(&csv, "series"),
        set(&["OCC (Silo)", "SI (ERMIA-SI)", "SI+SSN (ERMIA-SSN)"])
    );
    assert_eq!(column(&csv, "threads"), set(&["1", "2"]));
    assert_pngs(&dir.0, &["ermia-fig7.png", "ermia-fig7-per-thread.png"]);
    assert_judged("ermia-fig7", &dir.0, true);
    let list = text(&strata(&["reproduce", "--list"]).stdout);
    assert!(
        list.lines()
            .any(|l| l.starts_with("not reproduced: ERMIA") && l.contains("TPC-E")),
        "{list}"
    );
}

/// ERMIA Fig. 8: the three systems with each transaction's warehouse
/// drawn uniformly and 80-20.
#[test]
fn ermia_fig8_draws_warehouses_uniformly_and_skewed() {
    let dir = Dir::new("ermia-fig8");
    let csv = reproduce(
        "ermia-fig8",
        &["--duration", "0.1", "--warmup", "0"],
        &dir.0,
    );
    let mut series = BTreeSet::new();
    for system in ["OCC (Silo)", "SI (ERMIA-SI)", "SI+SSN (ERMIA-SSN)"] {
        for pick in ["uniform", "80-20"] {
            series.insert(format!("{system}, {pick}"));
        }
    }
    assert_eq!(column(&csv, "series"), series);
    assert_eq!(column(&csv, "threads"), set(&["1", "2"]));
    assert_pngs(&dir.0, &["ermia-fig8.png", "ermia-fig8-aborts.png"]);
    assert_judged("ermia-fig8", &dir.0, true);
}

/// ERMIA Figures 10 and 11 on the write-ahead log: per-operation logging
/// reserves a log record per write (more than one per transaction),
/// per-transaction one; the breakdown's shares are each component's of
/// the transactions' time (they add up to 1); no log directory is left.
#[test]
fn ermia_fig10_and_fig11_run_on_the_log() {
    let dir = Dir::new("ermia-log");
    let before = logs();
    let tiny = ["--duration", "0.3", "--warmup", "0"];
    let csv = reproduce("ermia-fig10", &tiny, &dir.0);
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let head = r.headers().unwrap().clone();
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    let (series, records) = (col("series"), col("log_records_per_committed"));
    let mut seen = BTreeSet::new();
    for x in r.records() {
        let x = x.unwrap();
        let per: f64 = x[records].parse().unwrap();
        match &x[series] {
            "per-transaction logging" => assert!(per <= 1.05, "{x:?}"),
            "per-operation logging" => assert!(per > 3.0, "{x:?}"),
            other => panic!("{other}"),
        }
        seen.insert(x[series].to_string());
    }
    assert_eq!(seen.len(), 2, "{csv}");
    assert_pngs(&dir.0, &["ermia-fig10.png"]);
    assert_judged("ermia-fig10", &dir.0, true);

    let csv = reproduce("ermia-fig11", &tiny, &dir.0);
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let head = r.headers().unwrap().clone();
    let shares = head.iter().position(|h| h == "time_shares").unwrap();
    for x in r.records() {
        let x = x.unwrap();
        let sum: f64 = (x[shares].split("; "))
            .map(|p| p.rsplit_once(':').unwrap().1.parse::<f64>().unwrap())
            .sum();
        assert!((sum - 1.0).abs() < 0.01, "{x:?}");
    }
    assert_pngs(&dir.0, &["ermia-fig11.png"]);
    assert_judged("ermia-fig11", &dir.0, true);
    let after = logs();
    let left: Vec<&String> = after.difference(&before).collect();
    assert!(left.is_empty(), "log directories left: {left:?}");
}

/// The log directories of Figures 10 and 11 in the temporary directory.
fn logs() -> BTreeSet<String> {
    (std::fs::read_dir(std::env::temp_dir()).unwrap())
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("strata-ermia-fig1"))
        .collect()
}
