//! `strata check`: run a workload against the engine and check its history.
//!
//! The verdict holds each protocol to what it promises ([`promise`]), not to
//! the strongest level checked: with `--strict`, SSN's cycles that close
//! only through real-time order are allowed (it is serializable, not
//! strictly), as is SI's write skew without it. Exit codes: 0 no anomaly,
//! 1 a broken promise or a failed run, 3 only anomalies the promise allows,
//! 4 the cycle search ran out of its budget before it could tell whether
//! the promise was kept (never taken as allowed).

use std::fmt;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Instant;

use strata::Protocol;
use strata_verify::{
    check, run_workload, CheckOptions, GeneratorConfig, Op, Outcome, Report, Workload,
};

use crate::executor::StrataExecutor;
use crate::{CheckArgs, UsageError, WorkloadArg};

/// Exit code of a run whose anomalies are all allowed by the protocol.
const EXPECTED_ANOMALIES: u8 = 3;
/// Exit code of a run whose anomalies found are allowed, but whose cycle
/// search gave up where it could have found one that is not
/// ([`strata_verify::AnomalyKind::SearchIncomplete`]).
const SEARCH_INCOMPLETE: u8 = 4;

/// The strongest isolation level a protocol promises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Promise {
    /// Serializable, in an order that respects real time: a transaction
    /// that committed before another began is serialized before it.
    StrictSerializable,
    /// Serializable, in some order that may put a transaction before one
    /// that had committed before it began.
    Serializable,
    /// Snapshot isolation: write skew and phantoms (G2) are allowed.
    SnapshotIsolation,
}

impl fmt::Display for Promise {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Promise::StrictSerializable => "strict serializability",
            Promise::Serializable => "serializability (not strict)",
            Promise::SnapshotIsolation => "snapshot isolation",
        })
    }
}

/// What `protocol` promises to the transactions `strata check` runs.
///
/// MVTO, MVOCC, MV2PL and OCC serialize in timestamp or commit order, and both
/// are drawn inside each transaction's lifetime, so the order respects
/// real time. SSI's too: a cycle that closes through real-time order needs
/// a pivot whose outgoing rw edge goes to a transaction that committed
/// first (its successor began after that commit), and SSI refuses every
/// such dangerous structure. SSN admits any acyclic dependency graph, and
/// a reader may then be serialized before a writer that committed before
/// it began. Read-only snapshots (`--read-only-snapshots`) change two
/// answers: MVTO's read below every running writer's timestamp, so they
/// may miss a younger writer that has already committed (serializable, not
/// strictly); SSN and SSI do no bookkeeping for them, so they may see the
/// read-only anomaly (G2).
pub fn promise(protocol: Protocol, read_only_snapshots: bool) -> Promise {
    match (protocol, read_only_snapshots) {
        (Protocol::Mvocc | Protocol::Mv2pl | Protocol::Occ, _) => Promise::StrictSerializable,
        (Protocol::Mvto | Protocol::SiSsi, false) => Promise::StrictSerializable,
        (Protocol::Mvto, true) | (Protocol::SiSsn, false) => Promise::Serializable,
        (Protocol::SiSsn | Protocol::SiSsi, true) | (Protocol::Si, _) => Promise::SnapshotIsolation,
    }
}

/// Whether `report` keeps `promise` (real-time anomalies are only in a
/// report checked with `--strict`).
fn keeps(report: &Report, promise: Promise) -> bool {
    match promise {
        Promise::StrictSerializable => report.is_valid(),
        Promise::Serializable => !report.violates_serializability(),
        Promise::SnapshotIsolation => !report.violates_snapshot_isolation(),
    }
}

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
    // The adapter stores list k in rows 2k and 2k+1, and scans may run
    // past the last key: keep every row key well inside i64.
    const MAX_KEYS: u64 = 1 << 40;
    if a.keys < min_keys || a.keys > MAX_KEYS {
        return Err(UsageError(format!(
            "--keys must be in {min_keys}..={MAX_KEYS} for this workload, got {}",
            a.keys
        )));
    }
    if a.scan_width == 0 || a.scan_width > MAX_KEYS {
        return Err(UsageError(format!(
            "--scan-width must be in 1..={MAX_KEYS}, got {}",
            a.scan_width
        )));
    }
    if !(0.0..=1.0).contains(&a.limited_scans) {
        return Err(UsageError(format!(
            "--limited-scans must be in [0, 1], got {}",
            a.limited_scans
        )));
    }
    if !(0.0..=1.0).contains(&a.delete_fraction) {
        return Err(UsageError(format!(
            "--delete-fraction must be in [0, 1], got {}",
            a.delete_fraction
        )));
    }
    if a.max_writes_per_key == 0 {
        return Err(UsageError("--max-writes-per-key must be at least 1".into()));
    }
    if !(0.0..1.0).contains(&a.skew) {
        return Err(UsageError(format!(
            "--skew must be in [0, 1), got {}",
            a.skew
        )));
    }
    if a.blind_writes && (workload != Workload::Register || a.gc != strata::GcPolicy::None) {
        return Err(UsageError(
            "--blind-writes needs --workload register and --gc none: the checker orders blind \
             writes by every version the engine kept"
                .into(),
        ));
    }
    let cfg = GeneratorConfig {
        workload,
        keys: a.keys,
        skew: a.skew,
        seed: a.seed,
        max_ops: 5,
        max_scan_width: a.scan_width,
        delete_fraction: a.delete_fraction,
        limited_scan_fraction: a.limited_scans,
        max_writes_per_key: a.max_writes_per_key,
        ..GeneratorConfig::for_workload(workload)
    };
    let mut exec = StrataExecutor::with_options(
        strata::Options::default()
            .protocol(a.protocol)
            .version_storage(a.storage)
            .gc(a.gc),
    )
    .map_err(|e| UsageError(e.to_string()))?;
    exec.read_only_snapshots = a.read_only_snapshots;
    exec.blind_writes = a.blind_writes;
    Ok(run_on(a, &cfg, &exec))
}

/// Runs the workload `cfg` on `exec`, checks the history, prints the
/// report and the verdict, and returns the exit code.
fn run_on(a: &CheckArgs, cfg: &GeneratorConfig, exec: &StrataExecutor) -> ExitCode {
    let promise = promise(a.protocol, a.read_only_snapshots);

    let started = Instant::now();
    let history = run_workload(exec, cfg, a.clients, a.txns);
    let ran = started.elapsed();
    let count = |o: Outcome| history.txns.iter().filter(|t| t.outcome == o).count();
    let (committed, aborted) = (count(Outcome::Committed), count(Outcome::Aborted));
    // What a read cost: bounded by --max-writes-per-key, whatever --txns.
    let longest_list = (history.txns.iter().flat_map(|t| &t.ops))
        .map(|op| match op {
            Op::ReadList { value: Some(l), .. } => l.len(),
            Op::ScanList {
                value: Some(rows), ..
            } => rows.iter().map(|(_, l)| l.len()).max().unwrap_or(0),
            _ => 0,
        })
        .max()
        .unwrap_or(0);

    let started = Instant::now();
    let opts = CheckOptions {
        cycle_search_budget: a.cycle_search_budget,
        ..if a.strict {
            CheckOptions::strict()
        } else {
            CheckOptions::default()
        }
    };
    let report = check(&history, &opts);
    let checked = started.elapsed();
    let stats = exec.db.stats();

    println!(
        "check  protocol {} (promises {promise})  storage {}  gc {}  workload {}  clients {}  keys {}  \
         skew {}  scan width {}  limited scans {}  deletes {}  writes per key {}  seed {}{}{}",
        a.protocol,
        a.storage,
        a.gc,
        clap::ValueEnum::to_possible_value(&a.workload)
            .map_or_else(|| "?".to_string(), |v| v.get_name().to_string()),
        a.clients,
        a.keys,
        a.skew,
        a.scan_width,
        a.limited_scans,
        a.delete_fraction,
        a.max_writes_per_key,
        a.seed,
        if a.strict { "  strict" } else { "" },
        if a.blind_writes { "  blind writes" } else { "" }
    );
    println!(
        "ran {} txns in {:.2} s: {committed} committed, {aborted} aborted ({} by the adapter \
         after an insert race, {} after a row its snapshot holds was gone; {} blind overwrites, \
         {} writer waits); longest list read {longest_list}; checked in {:.2} s",
        history.len(),
        ran.as_secs_f64(),
        exec.insert_races.load(Ordering::Relaxed),
        exec.vanished_rows.load(Ordering::Relaxed),
        stats.blind_overwrites,
        stats.writer_waits,
        checked.as_secs_f64()
    );
    print!("{report}");
    if let Some(failure) = exec.failure() {
        println!("verdict: run failed: {failure}");
        return ExitCode::FAILURE;
    }
    if report.is_valid() {
        println!("verdict: valid");
        ExitCode::SUCCESS
    } else if keeps(&report, promise) {
        let why = match promise {
            Promise::Serializable => format!(
                "{} is serializable but not strictly serializable{}; real-time-only cycles are \
                 allowed",
                a.protocol,
                if a.protocol == Protocol::Mvto {
                    " with read-only snapshots"
                } else {
                    ""
                }
            ),
            Promise::SnapshotIsolation if a.read_only_snapshots && a.protocol != Protocol::Si => {
                format!(
                    "{} does no bookkeeping for read-only snapshots, which may see the read-only \
                     anomaly (G2)",
                    a.protocol
                )
            }
            _ => format!("{} promises {promise}, which allows G2", a.protocol),
        };
        println!("verdict: {}: expected: {why}", report.verdict());
        ExitCode::from(EXPECTED_ANOMALIES)
    } else if keeps(&report.found(), promise) {
        println!(
            "verdict: {}: cannot tell whether {} kept its promise ({promise}); raise \
             --cycle-search-budget (now {})",
            report.verdict(),
            a.protocol,
            a.cycle_search_budget
        );
        ExitCode::from(SEARCH_INCOMPLETE)
    } else {
        println!(
            "verdict: {}: a bug: {} promises {promise}",
            report.verdict(),
            a.protocol
        );
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use strata_verify::{PlannedOp, TxnExecutor};

    fn check_args(args: &[&str]) -> CheckArgs {
        let cli = crate::Cli::try_parse_from(["strata", "check"].iter().chain(args))
            .unwrap_or_else(|e| panic!("{e}"));
        match cli.command {
            crate::Command::Check(a) => a,
            other => panic!("{other:?}"),
        }
    }

    fn list_workload(a: &CheckArgs) -> GeneratorConfig {
        GeneratorConfig {
            keys: a.keys,
            seed: a.seed,
            ..GeneratorConfig::for_workload(Workload::ListAppend)
        }
    }

    /// An operation's engine error (here the lists' table was dropped
    /// under the adapter: `TableDropped`) aborts the transaction and fails
    /// the run, with the error; it used to panic ("engine error").
    #[test]
    fn an_engine_error_in_an_operation_fails_the_run() {
        let exec = StrataExecutor::open(Protocol::SiSsn).expect("open");
        exec.db.drop_table("lists").expect("drop the lists");
        let (ops, outcome) = exec.execute(0, &[PlannedOp::Append { key: 1, elem: 1 }]);
        assert_eq!(outcome, Outcome::Aborted, "{ops:?}");
        let failure = exec.failure().expect("the run failed");
        assert!(failure.contains("lists was dropped"), "{failure}");

        let a = check_args(&["--txns", "40", "--clients", "2"]);
        let code = run_on(&a, &list_workload(&a), &exec);
        assert_eq!(code, ExitCode::FAILURE);
        let failure = exec.failure().expect("the run failed");
        assert!(failure.contains("engine error(s)"), "{failure}");
    }

    /// A `begin` the engine refuses (more transactions open than
    /// `max_open_transactions`) fails the run too; it used to panic
    /// ("begin failed").
    #[test]
    fn a_refused_begin_fails_the_run() {
        let exec = StrataExecutor::with_options(
            strata::Options::default()
                .protocol(Protocol::Mvto)
                .max_open_transactions(1),
        )
        .expect("open");
        let held = exec.db.begin().expect("the one open transaction");
        let a = check_args(&["--protocol", "mvto", "--txns", "20", "--clients", "2"]);
        let code = run_on(&a, &list_workload(&a), &exec);
        assert_eq!(code, ExitCode::FAILURE);
        let failure = exec.failure().expect("the run failed");
        assert!(
            failure.contains("begin") && failure.contains("too many open transactions"),
            "{failure}"
        );
        drop(held);
    }
}
