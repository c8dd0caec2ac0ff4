//! `strata bench ycsb`: YCSB on Strata, the no-op engine or peer engines.
//!
//! ```text
//!   args ──> YcsbConfig ──> for each --engine: open, load, run (driver) ──> summary
//!                                                 strata | noop | skipdb | fjall | redb | rocksdb
//!   several engines: one table, ratios to the first (Strata when it is listed)
//! ```
//!
//! The workload and the driver live in `strata-workloads`; this module turns
//! flags into a configuration and reports.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use serde::Serialize;
use strata::{Database, Durability, LogStats, MemorySpaces, Options, SyncPolicy};
use strata_workloads::driver::{AbReport, DriverConfig, Latency, SeriesPoint};
use strata_workloads::ycsb::{self, Memory, YcsbConfig, YcsbEngine};
use strata_workloads::{peers, WorkloadError};

use crate::progress::BarObserver;
use crate::{DurabilityArg, UsageError, YcsbArgs};
use strata_workloads::driver::Observer;

/// The engines `--engine` names, in print order.
pub fn parse_engines(s: &str) -> Result<Vec<String>, UsageError> {
    let mut out: Vec<String> = Vec::new();
    for name in s.split(',').map(str::trim) {
        let names: Vec<&str> = match name {
            "all" => std::iter::once("strata")
                .chain(peers::ALL.into_iter().filter(|p| peers::available(p)))
                .collect(),
            "strata" | "noop" => vec![name],
            p if peers::ALL.contains(&p) => vec![p],
            other => {
                return Err(UsageError(format!(
                    "unknown engine {other:?}; expected strata, noop, {}, all, or a comma list",
                    peers::ALL.join(", ")
                )))
            }
        };
        for n in names {
            if !out.iter().any(|o| o == n) {
                out.push(n.to_string());
            }
        }
    }
    Ok(out)
}

/// The workload configuration the flags describe.
pub fn config(a: &YcsbArgs) -> YcsbConfig {
    let x = &a.extra;
    YcsbConfig {
        records: a.records,
        attributes: a.columns,
        text_attributes: x.text_attributes,
        theta: a.theta,
        read_ratio: x.mix.map_or(a.read_ratio, |m| m.read_ratio()),
        ops_per_txn: a.ops_per_txn,
        read_attrs: x.read_attrs,
        modify_attrs: x.modify_attrs,
        update_text: x.update_text,
        secondary_indexes: x.secondary_indexes,
        index_kind: x.index_kind,
        threads: a.threads,
        ro_threads: x.ro_threads,
        ro_ops: x.ro_ops,
        ro_hint: !x.no_ro_hint,
        read_only_hint: !x.no_ro_hint,
        prefetch: !x.no_prefetch,
        retry_aborted: !x.no_retry,
        seed: a.seed,
    }
}

fn usage(e: WorkloadError) -> UsageError {
    UsageError(e.to_string())
}

#[derive(Serialize)]
struct Summary {
    benchmark: &'static str,
    engine: &'static str,
    protocol: &'static str,
    storage: &'static str,
    index_pointers: &'static str,
    /// The secondary indexes' structure (`--index`), with
    /// --secondary-indexes.
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<&'static str>,
    /// MVTO's rule for reading a write-locked version (`--mvto-locked-read`).
    #[serde(skip_serializing_if = "Option::is_none")]
    mvto_locked_read: Option<&'static str>,
    /// Flags that overrode `--preset`'s settings.
    overrides: Vec<String>,
    durability: &'static str,
    gc: &'static str,
    huge_pages: strata_workloads::huge_pages::HugePages,
    records: u64,
    threads: usize,
    duration_s: f64,
    warmup_s: f64,
    ops_per_txn: usize,
    read_ratio: f64,
    theta: f64,
    columns: usize,
    text_attributes: usize,
    read_attrs: usize,
    modify_attrs: usize,
    ro_threads: usize,
    ro_ops: usize,
    ro_hint: bool,
    seed: u64,
    load_s: f64,
    measured_s: f64,
    /// The figures from `committed` to `latency` are the `--threads`
    /// transactions' (the mix); the `--ro-threads` ones are in
    /// `read_only_extra`.
    committed: u64,
    aborted: u64,
    committed_per_s: f64,
    aborted_per_s: f64,
    abort_rate: f64,
    aborts_by_reason: BTreeMap<&'static str, u64>,
    latency: Latency,
    /// Committed read-only transactions/s of the extra threads.
    read_only_extra_per_s: f64,
    /// With --ro-threads: the extra read-only transactions on their own,
    /// aborts by reason included (the study's Fig. 8: MVOCC starves
    /// queries not declared READ ONLY).
    #[serde(skip_serializing_if = "Option::is_none")]
    read_only_extra: Option<TypeSummary>,
    memory: Memory,
    /// Write-ahead log figures over the warm-up and the measured run.
    log: Option<LogSummary>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    series: Vec<SeriesPoint>,
    /// With --ab-ms: the A/B figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    ab: Option<AbReport>,
    /// With --runs > 1: committed/s of every run, in run order (the rest of
    /// the summary is the median run's).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    runs_committed_per_s: Vec<f64>,
    /// `--shared-writes` (the counting build).
    #[serde(skip_serializing_if = "Option::is_none")]
    shared_writes: Option<crate::shared_writes::SharedWrites>,
    /// `--time-breakdown`: time per committed transaction by component.
    #[serde(skip_serializing_if = "Option::is_none")]
    time_breakdown: Option<strata_workloads::tpcc::TimeReport>,
}

/// One transaction type's figures.
#[derive(Serialize)]
struct TypeSummary {
    committed: u64,
    aborted: u64,
    committed_per_s: f64,
    aborted_per_s: f64,
    /// Aborted / (committed + aborted).
    abort_rate: f64,
    /// Every conflict kind, zeros included.
    aborts_by_reason: BTreeMap<&'static str, u64>,
}

impl TypeSummary {
    fn of(t: Option<&strata_workloads::driver::TypeReport>) -> TypeSummary {
        let (committed, aborted) = t.map_or((0, 0), |t| (t.committed, t.aborted));
        TypeSummary {
            committed,
            aborted,
            committed_per_s: t.map_or(0.0, |t| t.committed_per_s),
            aborted_per_s: t.map_or(0.0, |t| t.aborted_per_s),
            abort_rate: aborted as f64 / (committed + aborted).max(1) as f64,
            aborts_by_reason: strata::ConflictKind::ALL
                .iter()
                .map(|k| (k.name(), 0))
                .chain(t.into_iter().flat_map(|t| t.aborts_by_reason.clone()))
                .collect(),
        }
    }
}

#[derive(Serialize)]
struct LogSummary {
    bytes_per_txn: f64,
    txns_per_fsync: f64,
    checkpoints: u64,
}

/// The durability the flags ask for (`--wal-dir` and `--durability` go
/// together).
fn durability(a: &YcsbArgs) -> Result<Durability, UsageError> {
    durability_of(a.durability, a.wal_dir.as_ref())
}

/// `--durability` with `--wal-dir`, for any bench command that has them.
pub(crate) fn durability_of(
    d: DurabilityArg,
    wal_dir: Option<&std::path::PathBuf>,
) -> Result<Durability, UsageError> {
    Ok(match (d, wal_dir) {
        (DurabilityArg::None, None) => Durability::None,
        (DurabilityArg::None, Some(_)) => {
            return Err(UsageError(
                "--wal-dir needs --durability group or async".into(),
            ))
        }
        (_, None) => {
            return Err(UsageError(
                "--durability group|async needs --wal-dir <DIR>".into(),
            ))
        }
        (d, Some(dir)) => Durability::Wal {
            dir: dir.clone(),
            sync: if d == DurabilityArg::Group {
                SyncPolicy::GroupCommit
            } else {
                SyncPolicy::Async
            },
        },
    })
}

/// The file that marks a `--wal-dir` as made by `strata bench`.
pub const BENCH_MARKER: &str = "STRATA-BENCH-DIR";

/// Makes `dir` an empty log directory for the next run, deleting only what
/// an earlier bench run left there.
///
/// A directory is ours if it did not exist, was empty, or carries
/// [`BENCH_MARKER`] (written when we first took it). Anything else (a user's
/// files, a real database's log) is refused before it is touched: a
/// benchmark must never delete data it did not make. Even in our own
/// directory only plain files are removed, never subdirectories.
pub fn take_wal_dir(dir: &std::path::Path) -> Result<(), UsageError> {
    let err = |what: String| UsageError(format!("--wal-dir {}: {what}", dir.display()));
    let io = |e: std::io::Error| err(e.to_string());
    if !dir.exists() {
        std::fs::create_dir_all(dir).map_err(io)?;
    } else if !dir.is_dir() {
        return Err(err("not a directory".into()));
    }
    let mut entries = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io)? {
        let e = e.map_err(io)?;
        entries.push((e.file_name(), e.file_type().map_err(io)?));
    }
    let marked = entries.iter().any(|(n, _)| n == BENCH_MARKER);
    if !marked {
        if let Some((name, _)) = entries.first() {
            return Err(err(format!(
                "not empty and not made by `strata bench` (it holds {name:?}); \
                 give a new or empty directory: nothing in it was changed"
            )));
        }
    }
    if let Some((name, _)) = entries.iter().find(|(_, t)| !t.is_file()) {
        return Err(err(format!(
            "holds {name:?}, which is not a plain file; `strata bench` made this \
             directory but will not remove what it did not write"
        )));
    }
    for (name, _) in entries.iter().filter(|(n, _)| n != BENCH_MARKER) {
        std::fs::remove_file(dir.join(name)).map_err(io)?;
    }
    if !marked {
        std::fs::write(
            dir.join(BENCH_MARKER),
            "This directory holds a write-ahead log made by `strata bench`; \
             each bench run empties it.\n",
        )
        .map_err(io)?;
    }
    Ok(())
}

/// Shows progress and takes the log's counters when the run (warm-up and
/// measurement) begins, so log figures leave the load out.
struct LogObserver {
    bar: BarObserver,
    db: Option<Database>,
    at_run: Option<LogStats>,
    /// Say on stderr when the run begins (not with --json or --csv).
    announce: bool,
}

impl Observer for LogObserver {
    fn start(&mut self, phase: &str, total: u64, unit: &str) {
        if phase == "run" {
            self.at_run = self.db.as_ref().and_then(|d| d.log_stats());
            if self.announce {
                // The load is done: from here a Ctrl-C has something to report.
                eprintln!(
                    "run: {:.1} s, warm-up included (Ctrl-C ends it early and reports what was \
                     measured)",
                    total as f64 / 1000.0
                );
            }
        }
        self.bar.start(phase, total, unit);
    }
    fn set(&mut self, pos: u64) {
        self.bar.set(pos);
    }
    fn finish(&mut self) {
        self.bar.finish();
    }
}

/// Runs the benchmark; `Err` for invalid settings.
pub fn ycsb(a: &YcsbArgs) -> Result<ExitCode, UsageError> {
    let cfg = config(a);
    cfg.validate().map_err(usage)?;
    if a.extra.shared_writes {
        crate::shared_writes::check_enabled()?;
    }
    if !(a.duration > 0.0 && a.duration.is_finite()) {
        return Err(UsageError(format!(
            "--duration must be a positive number of seconds, got {}",
            a.duration
        )));
    }
    if !(a.warmup >= 0.0 && a.warmup.is_finite()) {
        return Err(UsageError(format!(
            "--warmup must be zero or more seconds, got {}",
            a.warmup
        )));
    }
    let engines = parse_engines(&a.engine)?;
    // A row: its version (header, cells, text) and its index entries.
    let row_bytes = 160.0 + 16.0 * a.columns as f64;
    crate::check_memory(
        &format!("--records {}", a.records),
        a.records as f64 * row_bytes,
    )?;
    if let Some(path) = &a.extra.series {
        crate::check_output_file("series", path)?;
    }
    let ab_interval = match a.extra.ab_ms {
        None => None,
        Some(ms) if ms < 10 || (ms as f64) * 2.0 > a.duration * 1000.0 => {
            return Err(UsageError(format!(
                "--ab-ms must be at least 10 and leave one pair of intervals in --duration ({} s), got {ms}",
                a.duration
            )));
        }
        Some(ms) => Some(Duration::from_millis(ms)),
    };
    let options = Options::default()
        .protocol(a.protocol)
        .version_storage(a.storage)
        .index_pointers(a.index_pointers)
        .gc(a.gc)
        .gc_threads(a.gc_threads)
        .gc_every_commits(a.gc_every)
        .ssn_blind_writes(!a.extra.no_blind_writes)
        .mvto_locked_read(a.extra.mvto_locked_read)
        .write_install(a.extra.write_install)
        .backoff(a.extra.backoff)
        .durability(durability(a)?)
        .time_breakdown(a.extra.time_breakdown);
    let options = match a.extra.memory_spaces {
        None => options,
        Some(0) => options.memory_spaces(MemorySpaces::System),
        Some(count) => options.memory_spaces(MemorySpaces::Spaces {
            count,
            increment: a.extra.space_increment,
        }),
    };
    options.validate().map_err(|e| UsageError(e.to_string()))?;
    if let Durability::Wal { dir, .. } = &options.durability {
        // Refuse a directory we may not empty before loading anything.
        take_wal_dir(dir)?;
    }
    let driver = DriverConfig {
        warmup: crate::seconds("warmup", a.warmup)?,
        duration: crate::seconds("duration", a.duration)?,
        series: a.extra.series.is_some(),
        huge_pages: a.extra.huge_pages.unwrap_or_default(),
        ab_interval,
    };
    driver.huge_pages.apply_at_start().map_err(usage)?;
    let quiet = a.json || a.extra.csv;
    if a.extra.runs == 0 || a.extra.runs > 100 {
        return Err(UsageError(format!(
            "--runs must be in 1..=100, got {}",
            a.extra.runs
        )));
    }
    // Rounds interleave the engines (A B C, A B C, ...), so background
    // load drifts over all of them alike; each engine reports its median.
    let mut runs: Vec<Vec<Summary>> = engines.iter().map(|_| Vec::new()).collect();
    for (i, name) in (0..a.extra.runs).flat_map(|_| engines.iter().enumerate()) {
        // Open one engine at a time, and drop it before the next loads.
        let mut strata_db = None;
        let engine: Box<dyn YcsbEngine> = match name.as_str() {
            "strata" => {
                if let Durability::Wal { dir, .. } = &options.durability {
                    // Every run starts from an empty database.
                    take_wal_dir(dir)?;
                }
                let db = Database::open(options.clone()).map_err(|e| UsageError(e.to_string()))?;
                strata_db = Some(db.clone());
                Box::new(ycsb::StrataYcsb::new(db, &cfg).map_err(usage)?)
            }
            "noop" => Box::new(ycsb::Noop),
            peer => peers::open(peer, &cfg).map_err(usage)?,
        };
        let mut observer = LogObserver {
            bar: BarObserver::new(quiet),
            db: strata_db.clone(),
            at_run: None,
            announce: !quiet,
        };
        let mut counting = None;
        let observing: &mut dyn strata_workloads::driver::Observer =
            match (&strata_db, a.extra.shared_writes) {
                (Some(db), true) => counting.insert(crate::shared_writes::Counting::new(
                    &mut observer,
                    db.clone(),
                )),
                _ => &mut observer,
            };
        let mut window = None;
        let observing: &mut dyn strata_workloads::driver::Observer =
            match (&strata_db, a.extra.time_breakdown) {
                (Some(db), true) => {
                    window.insert(strata_workloads::window::Window::new(observing, db.clone()))
                }
                _ => observing,
            };
        let run = ycsb::run(engine.as_ref(), &cfg, &driver, observing);
        let time_breakdown = match (&window, &run) {
            (Some(w), Ok(r)) => w.reports(cfg.threads + cfg.ro_threads, &r.run).0,
            _ => None,
        };
        drop(window);
        let shared_writes = counting.and_then(|c| c.result);
        let r = match run {
            Ok(r) => r,
            Err(WorkloadError::Config(m)) | Err(WorkloadError::NotImplemented(m)) => {
                return Err(UsageError(m))
            }
            Err(e @ WorkloadError::NotCompiled { .. }) => return Err(UsageError(e.to_string())),
            Err(e) => {
                eprintln!("error: {name}: {e}");
                return Ok(ExitCode::FAILURE);
            }
        };
        let log = match (&strata_db, observer.at_run) {
            (Some(db), Some(before)) => db.log_stats().map(|after| {
                let records = after.records - before.records;
                LogSummary {
                    bytes_per_txn: (after.bytes - before.bytes) as f64 / records.max(1) as f64,
                    txns_per_fsync: records as f64 / (after.flushes - before.flushes).max(1) as f64,
                    checkpoints: after.checkpoints,
                }
            }),
            _ => None,
        };
        drop(strata_db);
        let extra = r.run.of_type("read-only-extra");
        let main = r.run.of_type("ycsb");
        let mix = TypeSummary::of(main);
        runs[i].push(Summary {
            benchmark: "ycsb",
            engine: r.engine,
            protocol: if r.engine == "strata" {
                a.protocol.name()
            } else {
                "-"
            },
            storage: if r.engine == "strata" {
                a.storage.name()
            } else {
                "-"
            },
            gc: if r.engine == "strata" {
                a.gc.name()
            } else {
                "-"
            },
            index_pointers: if r.engine == "strata" {
                strata::matrix::pointers_name(a.index_pointers)
            } else {
                "-"
            },
            index: (r.engine == "strata" && cfg.secondary_indexes > 0)
                .then(|| cfg.index_kind.name()),
            mvto_locked_read: (r.engine == "strata" && a.protocol == strata::Protocol::Mvto)
                .then(|| a.extra.mvto_locked_read.name()),
            overrides: a.overrides.clone(),
            durability: match (r.engine, a.durability) {
                ("strata", DurabilityArg::Group) => "group",
                ("strata", DurabilityArg::Async) => "async",
                _ => "none",
            },
            huge_pages: a.extra.huge_pages.unwrap_or_default(),
            records: cfg.records,
            threads: cfg.threads,
            duration_s: a.duration,
            warmup_s: a.warmup,
            ops_per_txn: cfg.ops_per_txn,
            read_ratio: cfg.read_ratio,
            theta: cfg.theta,
            columns: cfg.attributes,
            text_attributes: cfg.text_attributes,
            read_attrs: cfg.attrs_read(),
            modify_attrs: cfg.modify_attrs,
            ro_threads: cfg.ro_threads,
            ro_ops: cfg.ro_ops,
            ro_hint: cfg.ro_hint,
            seed: cfg.seed,
            load_s: r.load_s,
            measured_s: r.run.measured_s,
            committed: mix.committed,
            aborted: mix.aborted,
            committed_per_s: mix.committed_per_s,
            aborted_per_s: mix.aborted_per_s,
            abort_rate: mix.abort_rate,
            aborts_by_reason: mix.aborts_by_reason,
            latency: main.map(|t| t.latency.clone()).unwrap_or_default(),
            read_only_extra_per_s: extra.map_or(0.0, |t| t.committed_per_s),
            read_only_extra: (cfg.ro_threads > 0).then(|| TypeSummary::of(extra)),
            memory: r.memory.clone().unwrap_or_default(),
            log,
            series: r.run.series.clone(),
            ab: r.run.ab.clone(),
            runs_committed_per_s: Vec::new(),
            shared_writes,
            time_breakdown,
        });
        drop(engine);
    }
    let summaries: Vec<Summary> = runs
        .into_iter()
        .map(|mut rs| {
            let all: Vec<f64> = rs.iter().map(|s| s.committed_per_s).collect();
            rs.sort_by(|x, y| x.committed_per_s.total_cmp(&y.committed_per_s));
            let mut median = rs.swap_remove(rs.len() / 2);
            if all.len() > 1 {
                median.runs_committed_per_s = all;
            }
            median
        })
        .collect();
    if let Some(path) = &a.extra.series {
        let runs = summaries.iter().map(|s| (s.engine, s.series.as_slice()));
        if let Err(e) = write_series(path, runs) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return Ok(ExitCode::FAILURE);
        }
    }
    if a.json {
        let text = if summaries.len() == 1 {
            serde_json::to_string(&summaries[0])
        } else {
            serde_json::to_string(&summaries)
        };
        println!("{}", text.expect("the summary serialises"));
    } else if a.extra.csv {
        print_csv(&summaries);
    } else if summaries.len() == 1 {
        print_summary(&summaries[0]);
    } else {
        print_side_by_side(&summaries);
    }
    Ok(ExitCode::SUCCESS)
}

/// `--series`: one row per engine (or workload) and second.
pub(crate) fn write_series<'a>(
    path: &std::path::Path,
    runs: impl IntoIterator<Item = (&'a str, &'a [SeriesPoint])>,
) -> std::io::Result<()> {
    let mut w = csv::Writer::from_path(path)?;
    w.write_record(["engine", "t_s", "committed_per_s"])?;
    for (engine, series) in runs {
        for p in series {
            w.write_record([
                engine.to_string(),
                format!("{:.3}", p.t_s),
                format!("{:.0}", p.committed_per_s),
            ])?;
        }
    }
    w.flush()
}

fn print_csv(s: &[Summary]) {
    let mut w = csv::Writer::from_writer(std::io::stdout());
    let _ = w.write_record([
        "engine",
        "protocol",
        "records",
        "threads",
        "ops_per_txn",
        "read_ratio",
        "theta",
        "committed_per_s",
        "aborted_per_s",
        "abort_rate",
        "p50_us",
        "p99_us",
        "p999_us",
        "bytes_per_row",
        "longest_chain",
    ]);
    for x in s {
        let _ = w.write_record([
            x.engine.to_string(),
            x.protocol.to_string(),
            x.records.to_string(),
            x.threads.to_string(),
            x.ops_per_txn.to_string(),
            x.read_ratio.to_string(),
            x.theta.to_string(),
            format!("{:.1}", x.committed_per_s),
            format!("{:.1}", x.aborted_per_s),
            format!("{:.5}", x.abort_rate),
            format!("{:.2}", x.latency.p50_us),
            format!("{:.2}", x.latency.p99_us),
            format!("{:.2}", x.latency.p999_us),
            format!("{:.1}", x.memory.bytes_per_row),
            x.memory.longest_chain.to_string(),
        ]);
    }
    let _ = w.flush();
}

fn print_side_by_side(s: &[Summary]) {
    let first = &s[0];
    println!(
        "ycsb  records {}  threads {}  ops/txn {}  read ratio {}  theta {}  columns {}",
        first.records,
        first.threads,
        first.ops_per_txn,
        first.read_ratio,
        first.theta,
        first.columns
    );
    println!(
        "{:<20} {:>14} {:>12} {:>10} {:>10} {:>12}",
        "engine",
        "committed/s",
        "aborted/s",
        "p50 us",
        "p99 us",
        format!("vs {}", first.engine)
    );
    if s[0].runs_committed_per_s.len() > 1 {
        println!(
            "(median of {} interleaved runs per engine)",
            s[0].runs_committed_per_s.len()
        );
    }
    for x in s {
        let name = if x.engine == "strata" {
            format!("strata ({})", x.protocol)
        } else {
            x.engine.to_string()
        };
        println!(
            "{:<20} {:>14.0} {:>12.0} {:>10.1} {:>10.1} {:>11.2}x",
            name,
            x.committed_per_s,
            x.aborted_per_s,
            x.latency.p50_us,
            x.latency.p99_us,
            x.committed_per_s / first.committed_per_s.max(1e-9)
        );
    }
}

/// `validation 3, write-write 1` for the kinds that aborted anything
/// (empty if none did).
fn reasons_line(by_reason: &BTreeMap<&'static str, u64>) -> String {
    let reasons: Vec<String> = by_reason
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    reasons.join(", ")
}

fn print_summary(s: &Summary) {
    println!(
        "ycsb  engine {}  protocol {}  storage {}  gc {}  pointers {}  records {}  threads {}  ops/txn {}  read ratio {}  theta {}  columns {}",
        s.engine, s.protocol, s.storage, s.gc, s.index_pointers, s.records, s.threads, s.ops_per_txn, s.read_ratio, s.theta, s.columns
    );
    for o in &s.overrides {
        println!("      {o}");
    }
    if s.read_ratio >= 1.0 && s.engine == "strata" {
        println!(
            "      read-only mix {}",
            if s.ro_hint {
                "begun with the READ ONLY hint (no concurrency control)"
            } else {
                "without the hint (--no-ro-hint): full serializable transactions"
            }
        );
    }
    println!(
        "load      {:.2} s ({:.0} rows/s)",
        s.load_s,
        s.records as f64 / s.load_s.max(1e-9)
    );
    println!(
        "committed {:>12.0} txn/s  ({} in {:.2} s)",
        s.committed_per_s, s.committed, s.measured_s
    );
    println!(
        "aborted   {:>12.0} txn/s  ({}, {:.2}% of attempts)",
        s.aborted_per_s,
        s.aborted,
        100.0 * s.abort_rate
    );
    let reasons = reasons_line(&s.aborts_by_reason);
    if !reasons.is_empty() {
        println!("  by reason: {reasons}");
    }
    if let Some(x) = &s.read_only_extra {
        println!(
            "read-only {:>12.0} txn/s  ({} extra threads of {}-read transactions, {})",
            x.committed_per_s,
            s.ro_threads,
            s.ro_ops,
            if s.ro_hint {
                "READ ONLY hint"
            } else {
                "no hint"
            }
        );
        let reasons = reasons_line(&x.aborts_by_reason);
        println!(
            "  aborted {:>12.0} txn/s  ({}, {:.2}% of attempts){}{}",
            x.aborted_per_s,
            x.aborted,
            100.0 * x.abort_rate,
            if reasons.is_empty() {
                ""
            } else {
                "; by reason: "
            },
            reasons
        );
    }
    let l = &s.latency;
    println!(
        "latency   p50 {:.1} us  p99 {:.1} us  p99.9 {:.1} us  max {:.1} us",
        l.p50_us, l.p99_us, l.p999_us, l.max_us
    );
    if let Some(ab) = &s.ab {
        println!(
            "a/b       strata::ab on/off {:.3} median (quartiles {:.3}-{:.3}) over {} pairs of {} ms intervals; on {:.0}, off {:.0} txn/s",
            ab.on_over_off_median,
            ab.on_over_off_q1,
            ab.on_over_off_q3,
            ab.pairs,
            ab.interval_ms,
            ab.on_committed_per_s,
            ab.off_committed_per_s
        );
    }
    if s.engine == "strata" {
        let m = &s.memory;
        println!(
            "memory    {:.1} bytes/row  versions {} B in {} versions ({} rows)  longest chain {}",
            m.bytes_per_row, m.version_bytes, m.live_versions, m.rows, m.longest_chain
        );
        println!(
            "stores    storage {}  main table {} B  time-travel/delta store {} B  average chain {:.2}",
            s.storage, m.main_table_bytes, m.version_store_bytes, m.avg_chain_length
        );
        for sp in &m.memory_spaces {
            println!(
                "space {:<3} {} B reserved ({} chunks)  {} B in use  {} free slots  {} allocations ({} records)  {} waited for the lock",
                sp.space,
                sp.bytes_reserved,
                sp.chunks,
                sp.bytes_in_use,
                sp.free_slots,
                sp.allocations,
                sp.record_allocations,
                sp.contended
            );
        }
    }
    if let Some(l) = &s.log {
        println!(
            "log       durability {}  {:.1} bytes/txn  {:.1} txns/fsync  {} checkpoints",
            s.durability, l.bytes_per_txn, l.txns_per_fsync, l.checkpoints
        );
    }
    if let Some(t) = &s.time_breakdown {
        println!("time per committed txn, us (share): {}", t.line());
    }
    if let Some(sw) = &s.shared_writes {
        sw.print();
    }
}
