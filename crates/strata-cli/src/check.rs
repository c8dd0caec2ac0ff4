//! `strata check`: run a workload against the engine and check its history.
//!
//! The verdict holds each protocol to what it promises ([`promise`]), not to
//! the strongest level checked: with `--strict`, SSN's cycles that close
//! only through real-time order are allowed (it is serializable, not
//! strictly), as is SI's write skew without it. Exit codes: 0 no anomaly,
//! 1 a broken promise or a failed run, 3 only anomalies the promise allows,
//! 4 the cycle search ran out of its budget before it could tell whether
//! the promise was kept (never taken as allowed).
//!
//! A run longer than `--segment-txns` runs and is checked in segments
//! ([`strata_verify::run_segmented`]: keys of their own, a barrier between
//! them, so no dependency joins two); the verdict and the exit code are
//! those of every segment's anomalies together, each named by its segment.

use std::fmt;
use std::ops::ControlFlow;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Instant;

use strata::Protocol;
use strata_verify::{
    check, run_segmented, Anomaly, CheckOptions, GeneratorConfig, Outcome, Report, Workload,
};

use crate::executor::{ScanVia, StrataExecutor};
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
    let (cfg, exec) = prepare(a)?;
    Ok(run_on(a, &cfg, &exec).code)
}

/// The workload and the engine `a` asks for, or why they are unusable.
fn prepare(a: &CheckArgs) -> Result<(GeneratorConfig, StrataExecutor), UsageError> {
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
    if a.segment_txns == 0 {
        return Err(UsageError("--segment-txns must be at least 1".into()));
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
    exec.scan_via = match a.scans {
        crate::ScansArg::Callback => ScanVia::Callback,
        crate::ScansArg::Iterator => ScanVia::Iterator,
        crate::ScansArg::Reverse => ScanVia::Reverse,
    };
    Ok((cfg, exec))
}

/// What a run found, besides what it printed.
#[derive(Debug)]
#[cfg_attr(not(test), allow(dead_code))] // the tests read the rest
pub struct Checked {
    pub code: ExitCode,
    /// Segments run (`--segment-txns`).
    pub segments: usize,
    /// The most transactions one history held (at most `--segment-txns`):
    /// no more were ever held at once.
    pub largest_history: usize,
    /// The last segment's keys: the only ones whose rows were not deleted.
    pub last_keys: std::ops::Range<u64>,
    /// Every segment's report merged ([`Merged`]).
    pub report: Report,
}

/// Anomalies kept in the merged report: beyond them only one of each
/// kind not yet kept, so that the verdict is the same and a run that
/// finds anomalies everywhere keeps its memory flat too.
const MAX_KEPT: usize = 10_000;

/// The segments' reports merged into one: the verdict of the whole run.
#[derive(Debug, Default)]
struct Merged {
    report: Report,
    /// Anomalies found, kept or not.
    found: usize,
    /// Per segment with anomalies: its index, first and last transaction,
    /// and its report's verdict and summary.
    segments: Vec<(usize, usize, usize, String)>,
}

impl Merged {
    /// Adds the report of segment `index` (transactions `first..=last`);
    /// when the run has more than one (`of_many`), its anomalies say which
    /// segment they were found in.
    fn add(&mut self, index: usize, of_many: bool, first: usize, last: usize, r: Report) {
        let m = &mut self.report;
        m.txns_checked += r.txns_checked;
        m.graph_nodes += r.graph_nodes;
        m.graph_edges += r.graph_edges;
        m.search_steps += r.search_steps;
        if r.is_valid() {
            return;
        }
        let summary: Vec<String> = (r.summary().iter())
            .map(|(k, n)| format!("{k} x{n}"))
            .collect();
        self.segments.push((
            index,
            first,
            last,
            format!("{} ({})", r.verdict(), summary.join(", ")),
        ));
        self.found += r.anomalies.len();
        for mut a in r.anomalies {
            let kept = |b: &Anomaly| b.kind == a.kind && b.realtime == a.realtime;
            if m.anomalies.len() >= MAX_KEPT && m.anomalies.iter().any(kept) {
                continue;
            }
            if of_many {
                a.detail = format!("segment {index}: {}", a.detail);
            }
            m.anomalies.push(a);
        }
    }
}

/// Runs the workload `cfg` on `exec` in segments of `--segment-txns`,
/// checks each segment's history as it completes, prints the merged
/// report and the verdict, and returns the exit code.
fn run_on(a: &CheckArgs, cfg: &GeneratorConfig, exec: &StrataExecutor) -> Checked {
    let promise = promise(a.protocol, a.read_only_snapshots);
    let opts = CheckOptions {
        cycle_search_budget: a.cycle_search_budget,
        ..if a.strict {
            CheckOptions::strict()
        } else {
            CheckOptions::default()
        }
    };
    let of_many = a.txns > a.segment_txns;
    let (mut committed, mut aborted, mut ran_txns) = (0, 0, 0);
    let (mut longest_list, mut largest_history) = (0, 0);
    let mut merged = Merged::default();
    let mut checked = std::time::Duration::ZERO;
    let mut last_keys = 0..0;

    let started = Instant::now();
    let segments = run_segmented(exec, cfg, a.clients, a.txns, a.segment_txns, |seg| {
        let history = seg.history;
        let count = |o: Outcome| history.txns.iter().filter(|t| t.outcome == o).count();
        committed += count(Outcome::Committed);
        aborted += count(Outcome::Aborted);
        ran_txns += history.len();
        largest_history = largest_history.max(history.len());
        // What a read cost: bounded by --max-writes-per-key, whatever --txns.
        longest_list = longest_list.max(history.longest_list_read());
        let check_started = Instant::now();
        let report = check(&history, &opts);
        checked += check_started.elapsed();
        let last = seg.first_txn + history.len().saturating_sub(1);
        drop(history);
        last_keys = seg.keys;
        merged.add(seg.index, of_many, seg.first_txn, last, report);
        // A failed run is not judged: stop at once.
        if exec.failure().is_some() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    let ran = started.elapsed().saturating_sub(checked);
    let stats = exec.db.stats();
    let report = merged.report;

    println!(
        "check  protocol {} (promises {promise})  storage {}  gc {}  workload {}  clients {}  keys {}  \
         skew {}  scan width {}  limited scans {}  deletes {}  writes per key {}  segment txns {}  \
         seed {}{}{}",
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
        a.segment_txns,
        a.seed,
        if a.strict { "  strict" } else { "" },
        if a.blind_writes { "  blind writes" } else { "" }
    );
    println!(
        "ran {ran_txns} txns in {:.2} s: {committed} committed, {aborted} aborted ({} by the adapter \
         after an insert race, {} after a row its snapshot holds was gone; {} blind overwrites, \
         {} writer waits); longest list read {longest_list}; checked in {:.2} s",
        ran.as_secs_f64(),
        exec.insert_races.load(Ordering::Relaxed),
        exec.vanished_rows.load(Ordering::Relaxed),
        stats.blind_overwrites,
        stats.writer_waits,
        checked.as_secs_f64()
    );
    if of_many {
        println!(
            "segments: {segments} of at most {} txns (each on keys of its own, checked alone, \
             then dropped and its rows deleted); largest history held: {largest_history} txns; \
             rows left in the engine: {}",
            a.segment_txns, stats.rows
        );
    } else {
        println!(
            "segments: 1 (--txns <= --segment-txns); largest history held: {largest_history} \
             txns; rows left in the engine: {}",
            stats.rows
        );
    }
    const SEGMENTS_SHOWN: usize = 10;
    if of_many {
        for (index, first, last, what) in merged.segments.iter().take(SEGMENTS_SHOWN) {
            println!("segment {index} (T{first}..T{last}): {what}");
        }
        if merged.segments.len() > SEGMENTS_SHOWN {
            println!(
                "... and {} more segments with anomalies",
                merged.segments.len() - SEGMENTS_SHOWN
            );
        }
    }
    print!("{report}");
    if merged.found > report.anomalies.len() {
        println!(
            "({} anomalies found in all; the report keeps {}, at least one of each kind)",
            merged.found,
            report.anomalies.len()
        );
    }
    let code = verdict(a, promise, &report, exec);
    Checked {
        code,
        segments,
        largest_history,
        last_keys,
        report,
    }
}

/// Prints the verdict on the merged `report` and returns the exit code.
fn verdict(a: &CheckArgs, promise: Promise, report: &Report, exec: &StrataExecutor) -> ExitCode {
    if let Some(failure) = exec.failure() {
        println!("verdict: run failed: {failure}");
        return ExitCode::FAILURE;
    }
    if report.is_valid() {
        println!("verdict: valid");
        ExitCode::SUCCESS
    } else if keeps(report, promise) {
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
    use crate::executor::RETIRE_BATCH;
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
        let code = run_on(&a, &list_workload(&a), &exec).code;
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
        let code = run_on(&a, &list_workload(&a), &exec).code;
        assert_eq!(code, ExitCode::FAILURE);
        let failure = exec.failure().expect("the run failed");
        assert!(
            failure.contains("begin") && failure.contains("too many open transactions"),
            "{failure}"
        );
        drop(held);
    }

    /// Runs `args` through `strata check`'s own path, on its engine.
    fn check_on_engine(
        args: &[&str],
        setup: impl FnOnce(&StrataExecutor),
    ) -> (Checked, StrataExecutor) {
        let a = check_args(args);
        let (cfg, exec) = prepare(&a).unwrap_or_else(|e| panic!("{}", e.0));
        setup(&exec);
        let checked = run_on(&a, &cfg, &exec);
        (checked, exec)
    }

    /// Rows the engine holds once garbage collection caught up.
    fn rows_left(exec: &StrataExecutor) -> u64 {
        for _ in 0..10 {
            if exec.db.collect_garbage() == 0 {
                break;
            }
        }
        exec.db.stats().rows
    }

    /// What a long segmented run keeps is one segment's worth, whatever
    /// --txns: no history it checked held more than --segment-txns
    /// transactions, and the engine ends with rows of the last segment's
    /// keys only (two rows a list key at most, one a register), while the
    /// same run in one segment keeps a row of every key it ever used.
    #[test]
    fn a_segmented_run_holds_one_segment_of_history_and_rows() {
        // One write a list key under list-append: a segment leaves more
        // rows than a transaction of the adapter deletes (RETIRE_BATCH).
        for (workload, protocol, writes) in [
            ("list-append", "mvto", "1"),
            ("predicate", "ssn", "8"),
            ("register", "mv2pl", "8"),
            ("write-skew", "occ", "8"),
        ] {
            let args = |segment: &'static str| {
                [
                    "--workload",
                    workload,
                    "--protocol",
                    protocol,
                    "--txns",
                    "24000",
                    "--segment-txns",
                    segment,
                    "--max-writes-per-key",
                    writes,
                ]
            };
            let (checked, exec) = check_on_engine(&args("1000"), |_| {});
            assert_eq!(checked.code, ExitCode::SUCCESS, "{workload}");
            assert_eq!(checked.segments, 24, "{workload}");
            assert_eq!(checked.largest_history, 1000, "{workload}");
            assert_eq!(checked.report.txns_checked, 24_000, "{workload}");
            let rows = rows_left(&exec);
            let bound = 2 * (checked.last_keys.end - checked.last_keys.start);
            if workload == "list-append" {
                assert!(bound > 2 * RETIRE_BATCH as u64, "{bound}");
            }
            assert!(
                rows <= bound,
                "{workload}: {rows} rows left, more than the last segment's keys \
                 {:?} hold",
                checked.last_keys
            );
            let (whole, exec) = check_on_engine(&args("24000"), |_| {});
            assert_eq!((whole.segments, whole.largest_history), (1, 24_000));
            if workload != "register" {
                // Registers never retire within a segment.
                let rows_whole = rows_left(&exec);
                assert!(
                    rows_whole > 4 * bound,
                    "{workload}: {rows_whole} <= 4 x {bound}"
                );
            }
        }
    }

    /// Segmenting hides no anomaly: MV2PL with its phantom check switched
    /// off commits phantoms, and a run of four segments finds them in a
    /// segment past the first, names that segment, and fails (exit 1).
    #[test]
    fn a_segmented_run_finds_an_anomaly_in_a_late_segment() {
        for seed in 0..12 {
            let seed = seed.to_string();
            let (checked, _) = check_on_engine(
                &[
                    "--workload",
                    "predicate",
                    "--protocol",
                    "mv2pl",
                    "--keys",
                    "24",
                    "--txns",
                    "8000",
                    "--segment-txns",
                    "2000",
                    "--seed",
                    &seed,
                ],
                |exec| exec.db.skip_phantom_validation_for_testing(),
            );
            let late = checked.report.anomalies.iter().find(|a| {
                let segment = a.txns.iter().map(|&t| t / 2000).min().unwrap_or(0);
                segment > 0 && a.detail.starts_with(&format!("segment {segment}: "))
            });
            if let Some(a) = late {
                assert_eq!(checked.code, ExitCode::FAILURE, "{a}");
                assert!(checked.report.violates_serializability(), "{a}");
                assert_eq!(checked.segments, 4);
                return;
            }
        }
        panic!("mv2pl without phantom validation: no anomaly past the first segment in 12 runs");
    }
}
