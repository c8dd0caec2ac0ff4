//! The engine under the `strata-verify` checker: every protocol runs
//! concurrent, highly contended list-append, register and predicate
//! workloads, and the recorded histories must check serializable (or, for
//! plain SI, free of anything but G2). Plain SI must also be *caught* doing
//! write skew, which shows that the checker can fail here at all.
//!
//! `STRATA_SOAK=<n>` multiplies the transaction counts for soak runs.

#[path = "../../strata-cli/src/executor.rs"]
mod executor;

use executor::StrataExecutor;
use strata::Protocol;
use strata_verify::{check, run_workload, AnomalyKind, CheckOptions, GeneratorConfig, Report, Workload};

const CLIENTS: usize = 4;

/// Transaction count scaled by `STRATA_SOAK`.
fn txns(base: usize) -> usize {
    let soak = std::env::var("STRATA_SOAK")
        .ok()
        .map(|s| s.trim().parse::<f64>().unwrap_or_else(|_| panic!("STRATA_SOAK={s:?} is not a number")))
        .unwrap_or(1.0);
    ((base as f64) * soak.max(0.0)).round().max(1.0) as usize
}

fn config(workload: Workload, keys: u64, seed: u64) -> GeneratorConfig {
    GeneratorConfig {
        workload,
        keys,
        min_ops: 1,
        max_ops: 5,
        read_fraction: 0.5,
        scan_fraction: 0.25,
        max_scan_width: 6,
        skew: 0.99,
        seed,
    }
}

fn run(protocol: Protocol, cfg: &GeneratorConfig, clients: usize, n: usize) -> Report {
    let exec = StrataExecutor::open(protocol).expect("open database");
    let history = run_workload(&exec, cfg, clients, n);
    let committed = history
        .txns
        .iter()
        .filter(|t| t.outcome == strata_verify::Outcome::Committed)
        .count();
    assert!(
        committed * 10 >= n,
        "{protocol}: only {committed} of {n} transactions committed; the workload checks little"
    );
    let report = check(&history, &CheckOptions::default());
    assert_eq!(report.txns_checked, n);
    report
}

/// Runs `workload` under every protocol and checks each history against the
/// protocol's promise.
fn every_protocol(workload: Workload, keys: u64, base: usize) {
    let n = txns(base);
    let mut failures = Vec::new();
    for (i, protocol) in Protocol::ALL.into_iter().enumerate() {
        let cfg = config(workload, keys, 0x5eed + i as u64);
        let started = std::time::Instant::now();
        let report = run(protocol, &cfg, CLIENTS, n);
        eprintln!(
            "{workload:?} under {protocol}: {report}  ({} ms)",
            started.elapsed().as_millis()
        );
        let ok = if protocol.is_serializable() {
            report.is_valid()
        } else {
            !report.violates_snapshot_isolation()
        };
        if !ok {
            failures.push(format!("{protocol} ({workload:?}, seed {}):\n{report}", cfg.seed));
        }
    }
    assert!(failures.is_empty(), "anomalies found:\n{}", failures.join("\n"));
}

#[test]
fn list_append_every_protocol() {
    every_protocol(Workload::ListAppend, 16, 5_000);
}

#[test]
fn registers_every_protocol() {
    every_protocol(Workload::Register, 16, 5_000);
}

#[test]
fn predicate_every_protocol() {
    every_protocol(Workload::Predicate, 24, 5_000);
}

/// Write skew is the anomaly SI allows: with enough contention the checker
/// must find a G2-item cycle in plain SI's history, and it must be the only
/// kind of anomaly there.
#[test]
fn si_write_skew_is_caught() {
    let n = txns(4_000);
    let mut tried = Vec::new();
    for seed in 1..=5u64 {
        let cfg = GeneratorConfig {
            keys: 4,
            skew: 0.5,
            ..config(Workload::WriteSkew, 4, seed)
        };
        let report = run(Protocol::Si, &cfg, 8, n);
        assert!(
            !report.violates_snapshot_isolation(),
            "SI broke snapshot isolation (seed {seed}):\n{report}"
        );
        if report.has(AnomalyKind::G2Item) {
            eprintln!("write skew under si (seed {seed}): {report}");
            return;
        }
        tried.push(seed);
    }
    panic!("no G2-item found under SI with seeds {tried:?}");
}

/// The same write-skew workload under the serializable protocols stays valid.
#[test]
fn write_skew_prevented_by_serializable_protocols() {
    let n = txns(2_000);
    let mut failures = Vec::new();
    for protocol in Protocol::ALL.into_iter().filter(|p| p.is_serializable()) {
        let cfg = GeneratorConfig {
            keys: 4,
            skew: 0.5,
            ..config(Workload::WriteSkew, 4, 7)
        };
        let report = run(protocol, &cfg, 8, n);
        if !report.is_valid() {
            failures.push(format!("{protocol} (WriteSkew):\n{report}"));
        }
    }
    assert!(failures.is_empty(), "anomalies found:\n{}", failures.join("\n"));
}
