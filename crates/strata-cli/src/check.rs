//! `strata check`: run a workload against the engine and check its history.

use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Instant;

use strata_verify::{check, run_workload, CheckOptions, GeneratorConfig, Outcome, Workload};

use crate::executor::StrataExecutor;
use crate::{CheckArgs, UsageError, WorkloadArg};

pub fn run(a: &CheckArgs) -> Result<ExitCode, UsageError> {
    let workload = match a.workload {
        WorkloadArg::ListAppend => Workload::ListAppend,
        WorkloadArg::Register => Workload::Register,
        WorkloadArg::Predicate => Workload::Predicate,
        WorkloadArg::WriteSkew => Workload::WriteSkew,
    };
    if a.clients == 0 || a.clients > 1024 {
        return Err(UsageError(format!(
            "--clients must be in 1..=1024, got {}",
            a.clients
        )));
    }
    if a.txns == 0 {
        return Err(UsageError("--txns must be at least 1".into()));
    }
    let min_keys = if workload == Workload::WriteSkew {
        2
    } else {
        1
    };
    if a.keys < min_keys || a.keys > i64::MAX as u64 / 2 {
        return Err(UsageError(format!(
            "--keys must be at least {min_keys} for this workload, got {}",
            a.keys
        )));
    }
    if !(0.0..1.0).contains(&a.skew) {
        return Err(UsageError(format!(
            "--skew must be in [0, 1), got {}",
            a.skew
        )));
    }
    let cfg = GeneratorConfig {
        workload,
        keys: a.keys,
        skew: a.skew,
        seed: a.seed,
        max_ops: 5,
        scan_fraction: 0.25,
        max_scan_width: 6,
        ..GeneratorConfig::for_workload(workload)
    };
    let mut exec = StrataExecutor::with_options(
        strata::Options::default()
            .protocol(a.protocol)
            .version_storage(a.storage),
    )
    .map_err(|e| UsageError(e.to_string()))?;
    exec.read_only_snapshots = a.read_only_snapshots;

    let started = Instant::now();
    let history = run_workload(&exec, &cfg, a.clients, a.txns);
    let ran = started.elapsed();
    let count = |o: Outcome| history.txns.iter().filter(|t| t.outcome == o).count();
    let (committed, aborted) = (count(Outcome::Committed), count(Outcome::Aborted));

    let started = Instant::now();
    let opts = if a.strict {
        CheckOptions::strict()
    } else {
        CheckOptions::default()
    };
    let report = check(&history, &opts);
    let checked = started.elapsed();

    println!(
        "check  protocol {}  storage {}  workload {:?}  clients {}  keys {}  skew {}  seed {}",
        a.protocol, a.storage, a.workload, a.clients, a.keys, a.skew, a.seed
    );
    println!(
        "ran {} txns in {:.2} s: {committed} committed, {aborted} aborted ({} by the adapter after an insert race); checked in {:.2} s",
        history.len(),
        ran.as_secs_f64(),
        exec.insert_races.load(Ordering::Relaxed),
        checked.as_secs_f64()
    );
    print!("{report}");
    if report.is_valid() {
        println!("verdict: valid");
        Ok(ExitCode::SUCCESS)
    } else {
        let promise = if a.protocol.is_serializable() {
            "serializable"
        } else {
            "snapshot isolation (G2 is allowed)"
        };
        println!(
            "verdict: {} ({} promises {promise})",
            report.verdict(),
            a.protocol
        );
        Ok(ExitCode::FAILURE)
    }
}
