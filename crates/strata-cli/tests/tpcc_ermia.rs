//! `strata bench tpcc`'s flags for ERMIA's engine experiments:
//! `--warehouse-pick` (Fig. 8), `--durability`/`--wal-dir` with
//! `--log-granularity` (Fig. 10) and `--time-breakdown` (Fig. 11).

use crate::cli::{assert_usage_error, strata, text, TestDir};

const SMALL: [&str; 10] = [
    "--items",
    "1000",
    "--customers",
    "30",
    "--duration",
    "0.5",
    "--warmup",
    "0",
    "--huge-pages",
    "off",
];

fn json_run(extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["bench", "tpcc"];
    args.extend(SMALL);
    args.extend(extra);
    args.push("--json");
    let out = strata(&args);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    serde_json::from_str(&text(&out.stdout)).expect("JSON")
}

#[test]
fn warehouse_pick_is_a_config_setting_and_the_run_stays_consistent() {
    let v = json_run(&[
        "--warehouses",
        "5",
        "--threads",
        "2",
        "--warehouse-pick",
        "80-20",
    ]);
    assert_eq!(v["config"]["warehouse_pick"], "80-20", "{v}");
    assert_eq!(v["consistency"]["warehouses_checked"], 5);
    assert!(
        v.get("time_breakdown").is_none() && v.get("log").is_none(),
        "{v}"
    );
    let v = json_run(&["--warehouse-pick", "uniform"]);
    assert_eq!(v["config"]["warehouse_pick"], "uniform");
    // The default is the fixed home of each thread.
    let v = json_run(&[]);
    assert_eq!(v["config"]["warehouse_pick"], "fixed");
    assert_usage_error(
        &["bench", "tpcc", "--warehouse-pick", "zipf"],
        "expected fixed, uniform or 80-20",
    );
}

/// Per-operation logging on a write-ahead log, with the time breakdown:
/// the JSON names both, counts operation records (several per committed
/// transaction: NewOrder writes up to 30 rows), and gives every component
/// a time per committed transaction, the named ones adding up to at most
/// the transactions' total; the text summary prints both lines.
#[test]
fn per_operation_logging_and_the_time_breakdown_are_reported() {
    let wal = TestDir::new("tpcc-opslog");
    let v = json_run(&[
        "--durability",
        "async",
        "--wal-dir",
        wal.to_str().unwrap(),
        "--log-granularity",
        "per-operation",
        "--time-breakdown",
        "--mix",
        "np",
    ]);
    assert_eq!(v["durability"], "async");
    assert_eq!(v["log_granularity"], "per-operation");
    let ops = v["log"]["operation_records_per_committed"]
        .as_f64()
        .unwrap();
    let records = v["log"]["records_per_committed"].as_f64().unwrap();
    assert!(ops > 5.0 && records > ops, "{}", v["log"]);
    let t = &v["time_breakdown"];
    let parts = t["per_committed"].as_array().unwrap();
    let names: Vec<&str> = parts.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "index",
            "version_read",
            "version_install",
            "cc",
            "log",
            "log_wait",
            "gc",
            "rest"
        ]
    );
    for c in parts {
        assert!(c["ns_per_committed"].as_f64().unwrap() > 0.0, "{t}");
    }
    let committed = t["committed"].as_f64().unwrap();
    let named: f64 = parts[..7]
        .iter()
        .map(|c| c["ns_per_committed"].as_f64().unwrap())
        .sum();
    assert!(
        named * committed <= t["total_ns"].as_f64().unwrap() * 1.000_001,
        "{t}"
    );

    let mut args = vec!["bench", "tpcc"];
    args.extend(SMALL);
    args.extend([
        "--durability",
        "group",
        "--wal-dir",
        wal.to_str().unwrap(),
        "--time-breakdown",
    ]);
    let out = strata(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(s.contains("log       per-transaction"), "{s}");
    assert!(s.contains("time per committed txn"), "{s}");
}

#[test]
fn log_flags_are_checked() {
    assert_usage_error(
        &["bench", "tpcc", "--log-granularity", "per-operation"],
        "needs --durability",
    );
    assert_usage_error(
        &["bench", "tpcc", "--log-granularity", "per-row"],
        "expected per-transaction or per-operation",
    );
    assert_usage_error(&["bench", "tpcc", "--durability", "group"], "--wal-dir");
    let wal = TestDir::new("tpcc-mvto");
    assert_usage_error(
        &[
            "bench",
            "tpcc",
            "--protocol",
            "mvto",
            "--durability",
            "group",
            "--wal-dir",
            wal.to_str().unwrap(),
            "--log-granularity",
            "per-operation",
        ],
        "not available under mvto",
    );
}
