//! `strata reproduce` end to end at the smallest sizes: each figure's CSV
//! rows, plots and findings, `reproduce all`'s report per paper, and what
//! it refuses (an unknown or unbuilt figure, a paced second of no
//! updates). The papers' remaining engine experiments are in
//! `reproduce_figures.rs`.

use crate::cli::{assert_usage_error, strata, temp_dir, text};
use strata::Protocol;

/// Runs `strata reproduce FIG` at the smallest size, one trial, into `dir`
/// and returns the two columns after the trial's of each CSV row (the
/// figure's points).
fn small_mvpbt_figure(fig: &str, dir: &std::path::Path) -> Vec<String> {
    let out = strata(&[
        "reproduce",
        fig,
        "--records",
        "2000",
        "--duration",
        "0.05",
        "--warmup",
        "0",
        "--trials",
        "1",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let csv = std::fs::read_to_string(dir.join(format!("{fig}.csv"))).unwrap();
    assert!(csv.starts_with("trial,"), "{csv}");
    csv.lines()
        .skip(1)
        .map(|l| l.split(',').skip(1).take(2).collect::<Vec<_>>().join(" "))
        .collect()
}

/// Checks the PNG signature and that the IHDR chunk gives a sane size.
fn assert_valid_png(path: &std::path::Path) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert_eq!(&bytes[12..16], b"IHDR");
    let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    assert!(w >= 400 && h >= 300, "{w}x{h}");
    assert_eq!(&bytes[bytes.len() - 8..bytes.len() - 4], b"IEND");
}

#[test]
fn reproduce_writes_csv_rows_and_a_png() {
    let dir = temp_dir("reproduce");
    let out = strata(&[
        "reproduce",
        "contention",
        "--duration",
        "0.05",
        "--warmup",
        "0",
        "--records",
        "200",
        "--trials",
        "1",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let csv = std::fs::read_to_string(dir.join("contention.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        &header[..6],
        [
            "figure",
            "series",
            "x_name",
            "x",
            "trial",
            "committed_per_s"
        ]
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    // One series per protocol (labelled MVTO, ..., SI+SSN: its name, upper
    // case, after any "SI+"), each over the six skews.
    let skews = ["0", "0.5", "0.7", "0.8", "0.9", "0.99"];
    assert_eq!(rows.len(), Protocol::ALL.len() * skews.len(), "{csv}");
    for p in Protocol::ALL {
        let xs: Vec<&str> = rows
            .iter()
            .filter(|r| r[1].to_lowercase().rsplit('+').next() == Some(p.name()))
            .map(|r| r[3])
            .collect();
        assert_eq!(xs, skews, "{p}: {csv}");
    }
    for r in &rows {
        assert_eq!(r[0], "contention");
        assert_eq!(r[2], "theta");
        assert!(r[5].parse::<f64>().unwrap() > 0.0, "{r:?}");
    }
    assert_valid_png(&dir.join("contention.png"));
    // --threads sets every point's worker threads (the last column);
    // --trials runs each point that often, each trial a row.
    let out = strata(&[
        "reproduce",
        "footprint",
        "--duration",
        "0.05",
        "--warmup",
        "0",
        "--records",
        "200",
        "--threads",
        "3",
        "--trials",
        "2",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let csv = std::fs::read_to_string(dir.join("footprint.csv")).unwrap();
    let threads = (csv.lines().next().unwrap().split(','))
        .position(|h| h == "threads")
        .unwrap();
    assert!(
        csv.lines()
            .skip(1)
            .all(|l| l.split(',').nth(threads) == Some("3")),
        "{csv}"
    );
    // 3 schemes x 5 update shares x 2 trials.
    assert_eq!(csv.lines().count(), 1 + 3 * 5 * 2, "{csv}");
    for trial in ["1", "2"] {
        assert!(
            csv.lines()
                .skip(1)
                .any(|l| l.split(',').nth(4) == Some(trial)),
            "trial {trial}: {csv}"
        );
    }
    // Each claim's number in each trial, and the claim's over both.
    let claims = std::fs::read_to_string(dir.join("footprint-claims.csv")).unwrap();
    let rows: Vec<&str> = claims.lines().skip(1).collect();
    assert_eq!(rows.len(), 2 * 3, "{claims}");
    assert_eq!(
        rows.iter().filter(|r| r.contains(",all,")).count(),
        2,
        "{claims}"
    );
    let md = std::fs::read_to_string(dir.join("footprint.md")).unwrap();
    assert!(md.contains("(trials "), "{md}");
}

#[test]
fn reproduce_list_and_unimplemented_figures() {
    let out = strata(&["reproduce", "--list"]);
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    for name in [
        "scalability",
        "contention",
        "heterogeneous",
        "non-inline",
        "tpcc",
    ] {
        assert!(stdout.lines().any(|l| l.starts_with(name)), "{stdout}");
    }
    assert!(stdout.contains("[ready]"), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("configurations") && l.ends_with("[ready]")),
        "{stdout}"
    );
    assert_usage_error(&["reproduce", "fig99"], "unknown figure");
    // Every paper's figures are listed, and every claim printable.
    for name in ["vdriver-fig13", "ermia-fig5", "mvpbt-fig12b"] {
        assert!(stdout.lines().any(|l| l.starts_with(name)), "{stdout}");
    }
    let claims = strata(&["reproduce", "--claims"]);
    assert!(claims.status.success());
    let claims = text(&claims.stdout);
    assert!(claims.starts_with("| figure | where |"), "{claims}");
    assert!(claims.contains("| `tpcc` | §7.2, Fig. 10a |"), "{claims}");
}

#[test]
fn reproduce_memory_spaces_runs_every_series() {
    let dir = temp_dir("spaces");
    let out = strata(&[
        "reproduce",
        "memory-spaces",
        "--duration",
        "0.2",
        "--warmup",
        "0",
        "--records",
        "1000",
        "--trials",
        "1",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let csv = std::fs::read_to_string(dir.join("memory-spaces.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    // Fig. 16: the three storage schemes over the number of memory
    // spaces, up to the 20 the paper's claim is about.
    assert_eq!(rows.len(), 9, "{csv}");
    for s in ["append-only", "time-travel", "delta"] {
        let xs: Vec<&str> = rows.iter().filter(|r| r[1] == s).map(|r| r[3]).collect();
        assert_eq!(xs, ["1", "4", "20"], "{s}: {csv}");
    }
    for r in &rows {
        assert_eq!((r[0], r[2]), ("memory-spaces", "memory_spaces"));
        assert!(r[5].parse::<f64>().unwrap() > 0.0, "{r:?}");
    }
}

/// `reproduce all --paper wu` at the smallest size: every figure of the
/// study writes its CSV with the paper's series and x values and a PNG
/// per panel, and the report has a section per figure with the paper's
/// claims judged.
#[test]
fn reproduce_all_runs_every_figure_and_writes_the_report() {
    let dir = temp_dir("all");
    let out = strata(&[
        "reproduce",
        "all",
        "--paper",
        "wu",
        "--trials",
        "1",
        "--duration",
        "0.02",
        "--warmup",
        "0",
        "--records",
        "500",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let list = text(&strata(&["reproduce", "--list"]).stdout);
    let study: Vec<&str> = list
        .lines()
        .take_while(|l| !l.starts_with("vdriver"))
        .collect();
    assert!(study.len() >= 28, "{list}");
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for line in study {
        let name = line.split_whitespace().next().unwrap();
        if line.contains("[needs") {
            assert!(
                report.contains(&format!("| {name} | not run: needs")),
                "{name}"
            );
            continue;
        }
        let csv = std::fs::read_to_string(dir.join(format!("{name}.csv"))).unwrap();
        assert!(csv.lines().count() > 1, "{name}: {csv}");
        assert_valid_png(&dir.join(format!("{name}.png")));
        assert!(report.contains(&format!("(`{name}`)")), "{name}");
    }
    // The paper's series and x values, for figures issue 17 found wrong.
    let series_xs = |name: &str| -> Vec<(String, String)> {
        let csv = std::fs::read_to_string(dir.join(format!("{name}.csv"))).unwrap();
        csv.lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                (f[1].to_string(), f[3].to_string())
            })
            .collect()
    };
    let pairs = |series: &[&str], xs: &[&str]| -> Vec<(String, String)> {
        (series.iter())
            .flat_map(|s| xs.iter().map(move |x| (s.to_string(), x.to_string())))
            .collect()
    };
    let thetas = ["0", "0.5", "0.7", "0.8", "0.9", "0.99"];
    assert_eq!(
        series_xs("chain-ordering-read"),
        pairs(&["N2O", "O2N"], &thetas)
    );
    let schemes = ["append-only", "time-travel", "delta"];
    assert_eq!(
        series_xs("footprint-wide"),
        pairs(&schemes, &["0", "20", "50", "80", "100"])
    );
    assert_eq!(
        series_xs("attributes-accessed-all"),
        pairs(&schemes, &["1", "10", "25", "50", "100"])
    );
    assert_eq!(
        series_xs("index-pointers-high"),
        pairs(
            &["logical (tuple id)", "logical (primary key)", "physical"],
            &["1", "5", "10", "20"]
        )
    );
    // Panels drawn from the same runs: read-only throughput (Fig. 8b, 9b),
    // abort rates by TPC-C type (Fig. 10b), StockScan latency (Fig. 17b, 25).
    for png in [
        "heterogeneous-read-only",
        "heterogeneous-hint-read-only",
        "tpcc-payment-aborts",
        "tpcc-storage-scan-latency",
        "configurations-scan-latency",
    ] {
        assert_valid_png(&dir.join(format!("{png}.png")));
    }
    // Every claim has a verdict.
    let findings = report.lines().filter(|l| l.starts_with("- ")).count();
    let verdicts = [
        ": agrees",
        ": agrees in direction",
        ": exaggerates",
        ": differs",
        ": undecided",
        ": not measured",
    ];
    let judged = report
        .lines()
        .filter(|l| {
            l.starts_with("- ")
                && (verdicts
                    .iter()
                    .any(|v| l.ends_with(v) || l.contains(&format!("{v} (")))
                    || l.contains("states no finding"))
        })
        .count();
    assert!(findings > 80 && judged == findings, "{report}");
}

/// `reproduce all` covers every paper: with `--paper mvpbt` the MV-PBT
/// figures run and report under their paper's heading; a paper it does
/// not know, or `--paper` with a figure, is a usage error.
#[test]
fn reproduce_all_covers_each_paper() {
    let dir = temp_dir("all-mvpbt");
    let out = strata(&[
        "reproduce",
        "all",
        "--paper",
        "mvpbt",
        "--trials",
        "1",
        "--duration",
        "0.05",
        "--warmup",
        "0",
        "--records",
        "2000",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert!(text(&out.stderr).contains("about"), "the estimate");
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("# MV-PBT"), "{report}");
    for fig in [
        "mvpbt-fig3",
        "mvpbt-fig12a",
        "mvpbt-fig12b",
        "mvpbt-fig13",
        "mvpbt-fig14",
        "mvpbt-fig15a",
        "mvpbt-fig15b",
    ] {
        assert!(report.contains(&format!("(`{fig}`)")), "{fig}: {report}");
        assert!(dir.join(format!("{fig}-claims.csv")).exists(), "{fig}");
    }
    assert!(!report.contains("(`contention`)"), "{report}");
    assert_usage_error(
        &["reproduce", "all", "--paper", "nope"],
        "wu, vdriver, ermia, mvpbt",
    );
    assert_usage_error(&["reproduce", "contention", "--paper", "wu"], "--paper");
}

/// vDriver's Fig. 14 at a tiny scale: one CSV row per (config, chain
/// length) with a CDF that climbs to 1 per config, and a PNG; the figures
/// that need SIRO say so.
#[test]
fn reproduce_vdriver_fig14_writes_a_cdf_per_config() {
    let dir = temp_dir("vdriver");
    let out = strata(&[
        "reproduce",
        "vdriver-fig14",
        "--duration",
        "4",
        "--records",
        "100",
        "--threads",
        "1",
        "--trials",
        "1",
        // Its chains are sampled with the LLT open on any machine.
        "--paced",
        "2000",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let csv = std::fs::read_to_string(dir.join("vdriver-fig14.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("trial,config,chain_length,rows,cdf"));
    let mut last: std::collections::BTreeMap<String, f64> = Default::default();
    for l in lines {
        // trial,"label, with commas",length,rows,cdf
        let (front, rest) = l.rsplit_once(',').unwrap();
        let front = front.rsplitn(3, ',').nth(2).unwrap();
        let config = front.split_once(',').unwrap().1.trim_matches('"');
        let cdf: f64 = rest.parse().unwrap();
        let prev = last.insert(config.to_string(), cdf).unwrap_or(0.0);
        assert!(cdf > prev && cdf <= 1.0, "{l}");
    }
    assert_eq!(last.len(), 4, "{csv}");
    assert!(last.values().all(|&c| c == 1.0), "{csv}");
    assert_valid_png(&dir.join("vdriver-fig14.png"));
    let list = text(&strata(&["reproduce", "--list"]).stdout);
    for fig in ["vdriver-fig13", "vdriver-fig15", "vdriver-fig19"] {
        assert!(
            list.lines()
                .any(|l| l.starts_with(fig) && l.ends_with("[ready]")),
            "{fig}: {list}"
        );
    }
}

/// vDriver's Fig. 15 at a tiny paced scale: beside the stages it writes
/// what kept each relocated version, three causes per run, and every run
/// relocated something.
#[test]
fn reproduce_vdriver_fig15_says_what_kept_each_relocated_version() {
    let dir = temp_dir("vdriver-fig15");
    let out = strata(&[
        "reproduce",
        "vdriver-fig15",
        "--duration",
        "4",
        "--records",
        "100",
        "--trials",
        "1",
        "--paced",
        "2000",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let csv = std::fs::read_to_string(dir.join("vdriver-fig15-kept.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("trial,theta,llts,kept_by,versions"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    // 4 exponents, with and without LLTs, 3 causes each.
    assert_eq!(rows.len(), 4 * 2 * 3, "{csv}");
    for run in rows.chunks(3) {
        let kinds: Vec<&str> = run.iter().map(|r| r[3]).collect();
        assert_eq!(
            kinds,
            ["oldest snapshot", "younger snapshot", "zones' floor"],
            "{csv}"
        );
        let n: u64 = run.iter().map(|r| r[4].parse::<u64>().unwrap()).sum();
        assert!(n > 0, "{csv}");
    }
}

/// `--paced` (the vDriver figures' test clock) needs a second of at least
/// one update.
#[test]
fn reproduce_paced_refuses_a_second_of_no_updates() {
    assert_usage_error(
        &["reproduce", "vdriver-fig3", "--paced", "0"],
        "--paced must be at least 1",
    );
}

/// `reproduce ermia-fig1` at a tiny size: a CSV row per protocol, read-set
/// size and write fraction (abort ratio included), and the PNGs.
#[test]
fn reproduce_ermia_fig1_writes_every_point() {
    let dir = temp_dir("ermia-fig1");
    let out = strata(&[
        "reproduce",
        "ermia-fig1",
        "--duration",
        "0.05",
        "--warmup",
        "0",
        "--trials",
        "1",
        "--records",
        "10000",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let csv = std::fs::read_to_string(dir.join("ermia-fig1.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for col in [
        "protocol",
        "reads",
        "write_fraction",
        "committed_per_s",
        "abort_ratio",
    ] {
        assert!(header.contains(&col), "{header:?}");
    }
    let rows = lines.count();
    assert_eq!(rows, Protocol::ALL.len() * 2 * 4, "{csv}");
    for p in Protocol::ALL {
        assert!(csv.contains(&format!(",{},", p.name())), "{p}: {csv}");
    }
    for f in [
        "ermia-fig1-1k.png",
        "ermia-fig1-10k.png",
        "ermia-fig1-1k-aborts.png",
        "ermia-fig1-10k-aborts.png",
    ] {
        assert_valid_png(&dir.join(f));
    }
    let list = text(&strata(&["reproduce", "--list"]).stdout);
    assert!(
        list.lines()
            .any(|l| l.starts_with("ermia-fig1") && l.ends_with("[ready]")),
        "{list}"
    );
}

/// ERMIA's TPC-C-hybrid figures at a tiny size: fig2 has a commit ratio for
/// every type under each series (Q2* only in the hybrid runs), fig5 a point
/// per series and Q2* size, fig12 three runs per series, size and thread
/// count; each writes its PNGs.
#[test]
fn reproduce_ermia_hybrid_figures_write_every_point() {
    let dir = temp_dir("ermia-hybrid");
    let run = |fig: &str, threads: &str, trials: &str| {
        let out = strata(&[
            "reproduce",
            fig,
            "--duration",
            "0.05",
            "--warmup",
            "0",
            "--records",
            "1000",
            "--trials",
            trials,
            "--threads",
            threads,
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{fig}: {}", text(&out.stderr));
        let csv = std::fs::read_to_string(dir.join(format!("{fig}.csv"))).unwrap();
        let header: Vec<String> = csv
            .lines()
            .next()
            .unwrap()
            .split(',')
            .map(String::from)
            .collect();
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let rows: Vec<Vec<String>> = csv
            .lines()
            .skip(1)
            .map(|l| l.split(',').map(String::from).collect())
            .collect();
        (
            rows,
            col("series"),
            col("type"),
            col("workload"),
            col("q2_size"),
        )
    };
    let (rows, series, ty, workload, _) = run("ermia-fig2", "1", "1");
    for s in ["OCC (Silo)", "SI (ERMIA-SI)", "SI+SSN (ERMIA-SSN)"] {
        for w in ["tpcc", "tpcc-hybrid"] {
            let types: Vec<&str> = rows
                .iter()
                .filter(|r| r[series] == s && r[workload] == w)
                .map(|r| r[ty].as_str())
                .collect();
            assert!(types.contains(&"new-order"), "{s} {w}: {types:?}");
            assert_eq!(
                types.contains(&"q2*"),
                w == "tpcc-hybrid",
                "{s} {w}: {types:?}"
            );
        }
    }
    assert_valid_png(&dir.join("ermia-fig2-tpcc.png"));
    assert_valid_png(&dir.join("ermia-fig2-hybrid.png"));
    let (rows, series, ty, _, size) = run("ermia-fig5", "1", "1");
    let q2: Vec<&Vec<String>> = rows.iter().filter(|r| r[ty] == "q2*").collect();
    for s in [
        "OCC (Silo)",
        "SI (ERMIA-SI)",
        "SI+SSN (commit-time check only)",
    ] {
        let sizes = q2.iter().filter(|r| r[series] == s).count();
        // A size whose Q2* never ran in the tiny window has no q2* row.
        assert!(sizes >= 6, "{s}: {sizes} sizes");
    }
    assert!(rows.iter().any(|r| r[size] == "1.0"), "the 100% size ran");
    for f in ["overall", "q2", "q2-aborts"] {
        assert_valid_png(&dir.join(format!("ermia-fig5-{f}.png")));
    }
    let (rows, series, _, _, size) = run("ermia-fig12", "1", "3");
    let header = std::fs::read_to_string(dir.join("ermia-fig12.csv")).unwrap();
    let header: Vec<&str> = header.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (threads, run_no) = (col("threads"), col("run"));
    // 3 series x 2 sizes x threads {1, 2} x 3 trials: every point has rows.
    // (Counted by point, not by its new-order row: in a 50 ms window on a
    // loaded machine a run may draw no new-order at all.)
    let points: std::collections::BTreeSet<[&str; 4]> = rows
        .iter()
        .map(|r| {
            [
                &r[series][..],
                &r[size][..],
                &r[threads][..],
                &r[run_no][..],
            ]
        })
        .collect();
    assert_eq!(points.len(), 36, "{points:?}");
    assert_valid_png(&dir.join("ermia-fig12-60.png"));
    assert_valid_png(&dir.join("ermia-fig12-80.png"));
}

/// `bench ycsb-core` runs each core workload through either index kind;
/// `reproduce mvpbt-fig15a` writes a row per workload and kind, the bar
/// chart and the findings.
#[test]
fn ycsb_core_and_mvpbt_fig15a() {
    for (w, index) in [("a", "mvpbt"), ("e", "standard")] {
        let out = strata(&[
            "bench",
            "ycsb-core",
            "--workload",
            w,
            "--index",
            index,
            "--records",
            "2000",
            "--duration",
            "0.1",
            "--warmup",
            "0",
            "--json",
        ]);
        assert!(out.status.success(), "stderr: {}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["config"]["index"], index);
        assert!(v["run"]["committed"].as_u64().unwrap() > 0, "{v}");
    }
    assert_usage_error(&["bench", "ycsb-core", "--workload", "c"], "a, b, d or e");
    assert_usage_error(
        &["bench", "ycsb-core", "--index", "lsm"],
        "standard or mvpbt",
    );
    let dir = temp_dir("fig15a");
    let pairs = small_mvpbt_figure("mvpbt-fig15a", &dir);
    assert_eq!(
        pairs,
        [
            "a standard",
            "a mvpbt",
            "b standard",
            "b mvpbt",
            "d standard",
            "d mvpbt",
            "e standard",
            "e mvpbt"
        ]
    );
    assert_valid_png(&dir.join("mvpbt-fig15a.png"));
    let md = std::fs::read_to_string(dir.join("mvpbt-fig15a.md")).unwrap();
    assert!(md.contains("workload a: MV-PBT / standard"), "{md}");
}

/// MV-PBT's other figures at the smallest size: each writes its CSV, its
/// PNGs and its findings.
#[test]
fn mvpbt_figures_write_their_files() {
    let dir = temp_dir("mvpbt-figs");
    let d = dir.to_str().unwrap();
    for (fig, extra, pngs) in [
        ("mvpbt-fig12b", "500", &["mvpbt-fig12b"][..]),
        (
            "mvpbt-fig13",
            "5000",
            &["mvpbt-fig13", "mvpbt-fig13-size"][..],
        ),
        (
            "mvpbt-fig15b",
            "2000",
            &["mvpbt-fig15b", "mvpbt-fig15b-partitions"][..],
        ),
    ] {
        let out = strata(&[
            "reproduce",
            fig,
            "--records",
            extra,
            "--duration",
            "2",
            "--trials",
            "1",
            "--out",
            d,
        ]);
        assert!(out.status.success(), "{fig}: {}", text(&out.stderr));
        let csv = std::fs::read_to_string(dir.join(format!("{fig}.csv"))).unwrap();
        assert!(csv.lines().count() > 2, "{fig}: {csv}");
        for png in pngs {
            assert_valid_png(&dir.join(format!("{png}.png")));
        }
        let md = std::fs::read_to_string(dir.join(format!("{fig}.md"))).unwrap();
        assert!(
            md.contains(": agrees") || md.contains(": differs"),
            "{fig}: {md}"
        );
    }
    // Figure 12b's three series at every chain length.
    let csv = std::fs::read_to_string(dir.join("mvpbt-fig12b.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 3 * 7, "{csv}");
}

/// `bench htap` runs the HTAP mix on either index kind and refuses
/// settings it cannot run; `reproduce mvpbt-fig3` writes a row per chain
/// length and kind, both panels and the findings.
#[test]
fn htap_and_mvpbt_fig3() {
    let out = strata(&[
        "bench",
        "htap",
        "--index",
        "mvpbt",
        "--records",
        "2000",
        "--scan-rows",
        "200",
        "--chain-length",
        "5",
        "--point-every",
        "0.01",
        "--duration",
        "0.2",
        "--warmup",
        "0",
        "--json",
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["config"]["core"]["index"], "mvpbt");
    assert!(v["analytical"]["scans"].as_u64().unwrap() > 0, "{v}");
    assert!(
        v["analytical"]["point_queries"].as_u64().unwrap() > 0,
        "{v}"
    );
    assert!(v["oltp"]["committed"].as_u64().unwrap() > 0, "{v}");
    assert_usage_error(
        &["bench", "htap", "--records", "2000", "--scan-rows", "1500"],
        "--scan-rows",
    );
    assert_usage_error(&["bench", "htap", "--chain-length", "0"], "--chain-length");
    let dir = temp_dir("fig3");
    let pairs = small_mvpbt_figure("mvpbt-fig3", &dir);
    let want: Vec<String> = [1, 5, 10, 20, 30, 40, 50]
        .iter()
        .flat_map(|l| [format!("standard {l}"), format!("mvpbt {l}")])
        .collect();
    assert_eq!(pairs, want);
    assert_valid_png(&dir.join("mvpbt-fig3.png"));
    assert_valid_png(&dir.join("mvpbt-fig3-oltp.png"));
    let md = std::fs::read_to_string(dir.join("mvpbt-fig3.md")).unwrap();
    assert!(md.contains("approx. 1200 tx/sec"), "{md}");
}
