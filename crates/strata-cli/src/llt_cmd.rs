//! `strata bench llt`: vDriver's long-lived-transaction workload on a fresh
//! in-memory database, with the per-second series the paper plots.
//!
//! ```text
//!   flags ──> LltConfig + Options ──> llt::run ──> summary (text | JSON)
//!                                              └─> --csv FILE: one row a second
//!                                              └─> --plot DIR: version space and
//!                                                  longest chain over time (PNG)
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde::Serialize;
use strata::{Database, GcPolicy, Options, Protocol, VersionStorage};
use strata_workloads::llt::{self, LltConfig, LltReport};

use crate::plot::{line_chart, Line};
use crate::progress::BarObserver;
use crate::UsageError;

#[derive(Args, Debug, Clone)]
#[command(allow_negative_numbers = true)]
pub struct LltArgs {
    /// Concurrency-control protocol.
    #[arg(long, default_value = "si", value_parser = crate::parse_protocol)]
    pub protocol: Protocol,
    /// Version storage: n2o, o2n, time-travel, delta or siro (siro needs --gc dead-zone).
    #[arg(long, default_value = "n2o", value_parser = crate::parse_storage)]
    pub storage: VersionStorage,
    /// Garbage collection: txn, vac, coop (O2N only), dead-zone or none.
    #[arg(long, default_value = "txn", value_parser = crate::parse_gc)]
    pub gc: GcPolicy,
    /// Background GC threads (vac, dead-zone).
    #[arg(long, default_value_t = 1)]
    pub gc_threads: usize,
    /// Milliseconds between background GC passes (at most a year's).
    #[arg(long, default_value_t = 40,
          value_parser = clap::value_parser!(u64).range(0..=crate::MAX_SECONDS as u64 * 1000))]
    pub gc_interval_ms: u64,
    /// A committer runs a GC pass every this many of its commits (1: after
    /// every commit, the eager end).
    #[arg(long, default_value_t = strata::Options::default().gc_every_commits)]
    pub gc_every: u32,
    /// Tables.
    #[arg(long, default_value_t = 4)]
    pub tables: usize,
    /// Rows per table.
    #[arg(long, default_value_t = 1_000)]
    pub rows: u64,
    /// Approximate bytes per row (a text payload pads it).
    #[arg(long, default_value_t = 256)]
    pub row_bytes: usize,
    /// Update threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Rows each update transaction updates.
    #[arg(long, default_value_t = 1)]
    pub updates_per_txn: usize,
    /// Run time, in seconds.
    #[arg(long, default_value_t = 20.0, value_parser = crate::parse_seconds)]
    pub duration: f64,
    /// Long-lived read transactions (0: the LLT-free baseline).
    #[arg(long, default_value_t = 1)]
    pub llts: usize,
    /// When the LLTs begin, in seconds from the start; a list (4,24) opens
    /// them once per window.
    #[arg(long, value_delimiter = ',', default_value = "4", value_parser = crate::parse_seconds)]
    pub llt_start: Vec<f64>,
    /// When the LLTs end, one per --llt-start.
    #[arg(long, value_delimiter = ',', default_value = "16", value_parser = crate::parse_seconds)]
    pub llt_end: Vec<f64>,
    /// The LLT-free baseline with the same reader threads: each read in its
    /// own short read-only transaction (on a machine with few cores, an
    /// extra reading thread costs throughput whatever its snapshot).
    #[arg(long)]
    pub short_readers: bool,
    /// Samples measure throughput only, not the version space: no walk
    /// of every chain each second, which on few cores slows the updaters
    /// (most under a horizon collector with an LLT open).
    #[arg(long)]
    pub no_space_walk: bool,
    /// When the key choice turns Zipfian, in seconds (default: uniform).
    #[arg(long, value_parser = crate::parse_seconds)]
    pub zipf_at: Option<f64>,
    /// Zipfian exponent (0 to 2; the paper sweeps up to 1.2).
    #[arg(long, default_value_t = 0.9)]
    pub theta: f64,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print one JSON object (every sample included) instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Write the per-second samples as CSV to this file.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Write llt-space.png and llt-chain.png (time on the x-axis) here.
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

/// The LLT windows of `--llt-start` and `--llt-end` (as many of each).
pub fn windows(starts: &[f64], ends: &[f64]) -> Result<Vec<(Duration, Duration)>, UsageError> {
    if starts.len() != ends.len() {
        return Err(UsageError(format!(
            "--llt-start has {} values and --llt-end {}: give one end per start",
            starts.len(),
            ends.len()
        )));
    }
    starts
        .iter()
        .zip(ends)
        .map(|(&s, &e)| {
            Ok((
                crate::seconds("llt-start", s)?,
                crate::seconds("llt-end", e)?,
            ))
        })
        .collect()
}

#[derive(Serialize)]
struct Summary<'a> {
    benchmark: &'static str,
    protocol: &'static str,
    storage: &'static str,
    gc: &'static str,
    config: &'a LltConfig,
    #[serde(flatten)]
    report: &'a LltReport,
}

pub fn run(a: &LltArgs) -> Result<ExitCode, UsageError> {
    let cfg = LltConfig {
        tables: a.tables,
        rows: a.rows,
        row_bytes: a.row_bytes,
        threads: a.threads,
        updates_per_txn: a.updates_per_txn,
        duration: crate::seconds("duration", a.duration)?,
        llts: a.llts,
        llt_windows: windows(&a.llt_start, &a.llt_end)?,
        long_snapshots: !a.short_readers,
        zipf_at: a
            .zipf_at
            .map(|z| crate::seconds("zipf-at", z))
            .transpose()?,
        theta: a.theta,
        seed: a.seed,
        walk_space: !a.no_space_walk,
    };
    cfg.validate().map_err(|e| UsageError(e.to_string()))?;
    crate::check_memory(
        &format!("--tables {} --rows {}", a.tables, a.rows),
        (a.tables as u64 * a.rows) as f64 * (160.0 + a.row_bytes as f64),
    )?;
    if let Some(path) = &a.csv {
        crate::check_output_file("csv", path)?;
    }
    if let Some(dir) = &a.plot {
        if a.no_space_walk {
            return Err(UsageError(
                "--plot draws the version space over time, which --no-space-walk does not measure"
                    .into(),
            ));
        }
        crate::check_output_dir("plot", dir)?;
    }
    let opts = Options::default()
        .protocol(a.protocol)
        .version_storage(a.storage)
        .gc(a.gc)
        .gc_threads(a.gc_threads)
        .gc_every_commits(a.gc_every)
        .gc_interval(Some(Duration::from_millis(a.gc_interval_ms.max(1))));
    let db = Database::open(opts).map_err(|e| UsageError(e.to_string()))?;
    let Some(r) = crate::workload_outcome(llt::run(&db, &cfg, &mut BarObserver::new(a.json)))?
    else {
        return Ok(ExitCode::FAILURE);
    };
    if let Some(path) = &a.csv {
        write_csv(path, &r).map_err(UsageError)?;
    }
    if let Some(dir) = &a.plot {
        plot(dir, a, &r).map_err(UsageError)?;
    }
    if a.json {
        let s = Summary {
            benchmark: "llt",
            protocol: a.protocol.name(),
            storage: a.storage.name(),
            gc: a.gc.name(),
            config: &cfg,
            report: &r,
        };
        println!(
            "{}",
            serde_json::to_string(&s).expect("the summary serialises")
        );
        return Ok(ExitCode::SUCCESS);
    }
    print_summary(a, &cfg, &r);
    Ok(ExitCode::SUCCESS)
}

fn write_csv(path: &std::path::Path, r: &LltReport) -> Result<(), String> {
    let mut w = csv::Writer::from_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
    for s in &r.samples {
        w.serialize(s)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    w.flush().map_err(|e| format!("{}: {e}", path.display()))
}

/// Draws the plots into `dir` (made by `run`'s check before the run).
fn plot(dir: &std::path::Path, a: &LltArgs, r: &LltReport) -> Result<(), String> {
    let label = format!("{} / {} / {}", a.protocol, a.storage, a.gc);
    let series = |f: fn(&llt::Sample) -> f64| Line {
        label: label.clone(),
        points: r.samples.iter().map(|s| (s.t_s, f(s))).collect(),
    };
    line_chart(
        &dir.join("llt-space.png"),
        &format!("Version space, LLTs open {}", window_text(a)),
        "time (s)",
        "version bytes (MiB)",
        &[series(|s| s.version_bytes as f64 / (1 << 20) as f64)],
    )?;
    line_chart(
        &dir.join("llt-chain.png"),
        &format!("Longest chain, LLTs open {}", window_text(a)),
        "time (s)",
        "versions",
        &[series(|s| s.longest_chain as f64)],
    )
}

/// "4-16 s, 24-36 s".
fn window_text(a: &LltArgs) -> String {
    let w: Vec<String> = (a.llt_start.iter().zip(&a.llt_end))
        .map(|(s, e)| format!("{s}-{e} s"))
        .collect();
    w.join(", ")
}

fn print_summary(a: &LltArgs, cfg: &LltConfig, r: &LltReport) {
    println!(
        "llt  {} / {} / {}  {} tables x {} rows, {} threads, {} LLT(s) open {}",
        a.protocol,
        a.storage,
        a.gc,
        cfg.tables,
        cfg.rows,
        cfg.threads,
        cfg.llts,
        window_text(a)
    );
    println!(
        "  committed/s {:.0}  aborted/s {:.0}  LLT reads {}",
        r.run.committed_per_s, r.run.aborted_per_s, r.llt_reads
    );
    println!("    t_s  commits/s  version MiB  in-row MiB  off-row MiB  longest chain  LLTs");
    for s in &r.samples {
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        if !s.walked {
            println!(
                "  {:5.0}  {:9.0}  {:>11}  {:>10}  {:>11}  {:>13}  {:4}",
                s.t_s, s.committed_per_s, "-", "-", "-", "-", s.llts_open
            );
            continue;
        }
        println!(
            "  {:5.0}  {:9.0}  {:11.2}  {:10.2}  {:11.2}  {:13}  {:4}",
            s.t_s,
            s.committed_per_s,
            mib(s.version_bytes),
            mib(s.in_row_bytes),
            mib(s.off_row_bytes),
            s.longest_chain,
            s.llts_open
        );
    }
    println!(
        "  LLT window: max version space {:.2} MiB, max chain {}, {:.0} commits/s",
        r.window.max_version_bytes as f64 / (1 << 20) as f64,
        r.window.max_longest_chain,
        r.window.mean_committed_per_s
    );
    println!(
        "  versions reclaimed {} (in dead zones {})",
        r.versions_reclaimed, r.versions_pruned_in_dead_zones
    );
    for (when, h) in [
        ("with the LLTs open", &r.chain_lengths_during_llt),
        ("at the end", &r.chain_lengths_end),
    ] {
        if !h.is_empty() {
            let q = |p: f64| percentile(h, p);
            println!(
                "  chain length {when}: p50 {} p90 {} p99 {} max {}",
                q(0.5),
                q(0.9),
                q(0.99),
                q(1.0)
            );
        }
    }
}

/// The smallest chain length at or below which a fraction `p` of the rows
/// lie, from a histogram (length -> rows).
fn percentile(h: &std::collections::BTreeMap<u64, u64>, p: f64) -> u64 {
    let total: u64 = h.values().sum();
    let want = ((total as f64 * p).ceil() as u64).max(1);
    let mut seen = 0;
    for (&len, &n) in h {
        seen += n;
        if seen >= want {
            return len;
        }
    }
    0
}
