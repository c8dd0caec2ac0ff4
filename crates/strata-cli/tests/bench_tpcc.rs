//! `strata bench tpcc` end to end: each design dimension with the
//! consistency check, the name lookups, counted runs, ERMIA's hybrid mix.
//! The flags of ERMIA's engine experiments are in `tpcc_ermia.rs`.

use crate::cli::{assert_usage_error, strata, temp_dir, text};

/// `bench tpcc` takes the design dimensions `bench ycsb` does (version
/// storage, GC, index pointers) and the secondary indexes' structure, runs
/// them with the consistency check, says which ran, and refuses an invalid
/// combination with the engine's reason.
#[test]
fn bench_tpcc_runs_each_design_dimension() {
    let out = strata(&[
        "bench",
        "tpcc",
        "--items",
        "1000",
        "--customers",
        "30",
        "--threads",
        "1",
        "--duration",
        "0.3",
        "--warmup",
        "0",
        "--storage",
        "o2n",
        "--gc",
        "vac",
        "--index-pointers",
        "physical",
        "--index",
        "mvpbt",
        "--json",
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).expect("JSON");
    assert_eq!(v["storage"], "o2n");
    assert_eq!(v["gc"], "vac");
    assert_eq!(v["index_pointers"], "physical");
    assert_eq!(v["config"]["index_kind"], "mvpbt");
    assert!(v["run"]["committed"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["consistency"]["districts_checked"], 10);
    assert_usage_error(
        &[
            "bench",
            "tpcc",
            "--storage",
            "delta",
            "--index-pointers",
            "physical",
        ],
        "physical index pointers need an append-only version storage",
    );
    assert_usage_error(
        &["bench", "tpcc", "--index", "hash"],
        "expected standard or mvpbt",
    );
}

/// `--by-name list` loads the peers' table of names instead of the index
/// (and says so in the JSON), and `--transactions N` stops each terminal
/// after N transactions, committed or aborted, whatever the machine's
/// speed; 0 is refused.
#[test]
fn bench_tpcc_by_name_list_runs_a_counted_number_of_transactions() {
    let out = strata(&[
        "bench",
        "tpcc",
        "--items",
        "1000",
        "--customers",
        "30",
        "--threads",
        "2",
        "--transactions",
        "300",
        "--warmup",
        "0",
        "--by-name",
        "list",
        "--huge-pages",
        "off",
        "--json",
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).expect("JSON");
    assert_eq!(v["config"]["by_name"], "list");
    let run = &v["run"];
    let counted = run["committed"].as_u64().unwrap() + run["aborted"].as_u64().unwrap();
    assert_eq!(counted, 600, "{run}");
    assert!(
        run["per_type"][1]["committed"].as_u64().unwrap() > 0,
        "{run}"
    );
    assert_eq!(v["consistency"]["districts_checked"], 10);
    assert_usage_error(&["bench", "tpcc", "--transactions", "0"], "0 is not in 1..");
    assert_usage_error(
        &["bench", "tpcc", "--by-name", "scan"],
        "expected index or list",
    );
}

#[test]
fn bench_tpcc_small_run_checks_consistency() {
    let out = strata(&[
        "bench",
        "tpcc",
        "--items",
        "1000",
        "--customers",
        "30",
        "--threads",
        "2",
        "--stock-scan",
        "--duration",
        "0.5",
        "--warmup",
        "0",
        "--no-prefetch",
        "--huge-pages",
        "off",
        "--json",
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).expect("JSON");
    assert_eq!(v["benchmark"], "tpcc");
    // (The CSV run below prefetches, the default.)
    assert_eq!(v["config"]["prefetch"], false);
    assert_eq!(v["huge_pages"], "off");
    let types: Vec<&str> = v["run"]["per_type"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "new-order",
            "payment",
            "order-status",
            "delivery",
            "stock-level",
            "stock-scan",
            "q2*"
        ]
    );
    assert!(
        v["run"]["per_type"][0]["committed"].as_u64().unwrap() > 0,
        "{v}"
    );
    assert_eq!(v["consistency"]["districts_checked"], 10);
    assert!(v["consistency"]["orders"].as_u64().unwrap() >= 300);
    // The CSV run also saves its throughput once a second (`--series`).
    let dir = temp_dir("tpcc-series");
    let series = dir.join("series.csv");
    let csv = strata(&[
        "bench",
        "tpcc",
        "--items",
        "500",
        "--customers",
        "20",
        "--threads",
        "1",
        "--duration",
        "1.5",
        "--warmup",
        "0",
        "--csv",
        "--series",
        series.to_str().unwrap(),
    ]);
    assert!(csv.status.success(), "stderr: {}", text(&csv.stderr));
    let lines: Vec<String> = text(&csv.stdout).lines().map(String::from).collect();
    assert_eq!(lines.len(), 8, "{lines:?}");
    assert!(lines[0].starts_with("protocol,warehouses,threads,type,"));
    assert!(lines[1].starts_with("ssn,1,1,new-order,"));
    let points = std::fs::read_to_string(&series).expect("the series file");
    let points: Vec<&str> = points.lines().collect();
    assert_eq!(points[0], "engine,t_s,committed_per_s", "{points:?}");
    // (A point a second: at least one in 1.5 s.)
    assert!(points.len() >= 2, "no point in 1.5 s: {points:?}");
    for p in &points[1..] {
        let cols: Vec<&str> = p.split(',').collect();
        assert_eq!(cols[0], "strata");
        assert!(cols[2].parse::<f64>().unwrap() > 0.0, "{points:?}");
    }
    assert_usage_error(
        &["bench", "tpcc", "--series", "/nonexistent/dir/s.csv"],
        "--series /nonexistent/dir/s.csv",
    );
    assert_usage_error(&["bench", "tpcc", "--warehouses", "0"], "--warehouses");
    assert_usage_error(
        &["bench", "tpcc", "--huge-pages", "on"],
        "expected os, load or off",
    );
    assert_usage_error(&["bench", "tpcc", "--customers", "5"], "--customers");
}

/// `--hybrid` runs ERMIA's TPC-C-hybrid: Q2* commits beside the TPC-C types
/// and the consistency conditions still hold; a bad Q2* size is refused.
#[test]
fn bench_tpcc_hybrid_runs_q2_star() {
    let out = strata(&[
        "bench",
        "tpcc",
        "--hybrid",
        "--q2-size",
        "0.05",
        "--items",
        "1000",
        "--customers",
        "30",
        "--duration",
        "0.5",
        "--warmup",
        "0",
        "--json",
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).expect("JSON");
    let q2 = v["run"]["per_type"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "q2*")
        .expect("a q2* row");
    assert!(q2["committed"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["config"]["mix"], serde_json::json!([40, 38, 4, 4, 4, 10]));
    assert_eq!(v["consistency"]["districts_checked"], 10);
    let pages = if cfg!(target_os = "linux") {
        "load"
    } else {
        "os"
    };
    assert_eq!(v["huge_pages"], pages, "bench tpcc's default policy");
    assert_usage_error(
        &["bench", "tpcc", "--hybrid", "--q2-size", "0"],
        "--q2-size",
    );
    assert_usage_error(&["bench", "tpcc", "--hybrid", "--mix", "np"], "--mix");
}
