//! `strata bench read-mostly`: ERMIA's read-mostly microbenchmark (SIGMOD
//! 2016, §4.2 "Microbenchmark", Figure 1) on a fresh in-memory database:
//! transactions over TPC-C's Stock table that read `--reads` random rows and
//! update `--write-fraction` of them.
//!
//! ```text
//!   flags ──> ReadMostlyConfig + Options ──> read_mostly::run ──> summary (text | JSON)
//!                                                            └─> --csv FILE: one row
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde::Serialize;
use strata::{Database, GcPolicy, Options, Protocol, VersionStorage};
use strata_workloads::read_mostly::{self, ReadMostlyConfig, ReadMostlyReport};

use crate::progress::BarObserver;
use crate::UsageError;

#[derive(Args, Debug, Clone)]
#[command(allow_negative_numbers = true)]
pub struct ReadMostlyArgs {
    /// Concurrency-control protocol (the paper compares occ, si and ssn).
    #[arg(long, default_value = "ssn", value_parser = crate::parse_protocol)]
    pub protocol: Protocol,
    /// Version storage: n2o, o2n, time-travel, delta or siro (siro needs --gc dead-zone).
    #[arg(long, default_value = "n2o", value_parser = crate::parse_storage)]
    pub storage: VersionStorage,
    /// Garbage collection: txn, vac, coop (O2N only), dead-zone or none.
    #[arg(long, default_value = "txn", value_parser = crate::parse_gc)]
    pub gc: GcPolicy,
    /// TPC-C warehouses: the Stock table holds warehouses x items rows.
    #[arg(long, default_value_t = 1)]
    pub warehouses: u32,
    /// Stock rows per warehouse (100,000 in TPC-C).
    #[arg(long, default_value_t = 100_000)]
    pub items: u32,
    /// Rows each transaction reads (the paper: 1000 or 10000).
    #[arg(long, default_value_t = 1_000)]
    pub reads: usize,
    /// Fraction of the rows read that a transaction updates (the paper:
    /// 0 to 0.01); fractional updates per transaction are a coin flip.
    #[arg(long, default_value_t = 0.001)]
    pub write_fraction: f64,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    #[command(flatten)]
    pub run: crate::RunFlags,
    /// Write the run's figures as one CSV row (with a header) to this file.
    #[arg(long)]
    pub csv: Option<PathBuf>,
}

/// Bytes a stock row takes with its version and index entry (17 columns,
/// the text values shared from TPC-C's pools), for the memory check.
pub const STOCK_ROW_BYTES: f64 = 400.0;

#[derive(Serialize)]
struct Summary<'a> {
    benchmark: &'static str,
    protocol: &'static str,
    storage: &'static str,
    gc: &'static str,
    #[serde(flatten)]
    report: &'a ReadMostlyReport,
}

/// One CSV row: the run's figures.
#[derive(Serialize)]
pub struct CsvRow {
    pub protocol: &'static str,
    pub reads: usize,
    pub write_fraction: f64,
    pub threads: usize,
    pub warehouses: u32,
    pub committed_per_s: f64,
    pub aborted_per_s: f64,
    pub abort_ratio: f64,
    pub p50_us: f64,
    pub p99_us: f64,
}

impl CsvRow {
    pub fn new(protocol: Protocol, r: &ReadMostlyReport) -> CsvRow {
        CsvRow {
            protocol: protocol.name(),
            reads: r.config.reads,
            write_fraction: r.config.write_fraction,
            threads: r.config.threads,
            warehouses: r.config.warehouses,
            committed_per_s: r.run.committed_per_s,
            aborted_per_s: r.run.aborted_per_s,
            abort_ratio: r.abort_ratio,
            p50_us: r.run.latency.p50_us,
            p99_us: r.run.latency.p99_us,
        }
    }
}

pub fn run(a: &ReadMostlyArgs) -> Result<ExitCode, UsageError> {
    let (warmup, duration) = a.run.times()?;
    let cfg = ReadMostlyConfig {
        warehouses: a.warehouses,
        items: a.items,
        reads: a.reads,
        write_fraction: a.write_fraction,
        threads: a.threads,
        warmup,
        duration,
        seed: a.run.seed,
    };
    cfg.validate().map_err(|e| UsageError(e.to_string()))?;
    crate::check_memory(
        &format!("--warehouses {} --items {}", a.warehouses, a.items),
        cfg.rows() as f64 * STOCK_ROW_BYTES,
    )?;
    if let Some(path) = &a.csv {
        crate::check_output_file("csv", path)?;
    }
    let opts = Options::default()
        .protocol(a.protocol)
        .version_storage(a.storage)
        .gc(a.gc);
    let db = Database::open(opts).map_err(|e| UsageError(e.to_string()))?;
    let Some(r) = crate::workload_outcome(read_mostly::run(
        &db,
        &cfg,
        &mut BarObserver::new(a.run.json),
    ))?
    else {
        return Ok(ExitCode::FAILURE);
    };
    if let Some(path) = &a.csv {
        write_csv(path, &[CsvRow::new(a.protocol, &r)]).map_err(UsageError)?;
    }
    if a.run.json {
        let s = Summary {
            benchmark: "read-mostly",
            protocol: a.protocol.name(),
            storage: a.storage.name(),
            gc: a.gc.name(),
            report: &r,
        };
        println!(
            "{}",
            serde_json::to_string(&s).expect("the summary serialises")
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "read-mostly  {} / {} / {}  stock {} rows ({} warehouse(s)), {} reads, write fraction {}, {} threads",
        a.protocol,
        a.storage,
        a.gc,
        cfg.rows(),
        cfg.warehouses,
        cfg.reads,
        cfg.write_fraction,
        cfg.threads
    );
    println!(
        "  committed/s {:.1}  aborted/s {:.1}  abort ratio {:.4}  p50 {:.0} us  p99 {:.0} us",
        r.run.committed_per_s,
        r.run.aborted_per_s,
        r.abort_ratio,
        r.run.latency.p50_us,
        r.run.latency.p99_us
    );
    for (reason, n) in &r.run.aborts_by_reason {
        println!("  aborts ({reason}): {n}");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn write_csv<T: Serialize>(path: &std::path::Path, rows: &[T]) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let mut w = csv::Writer::from_path(path).map_err(|e| err(&e))?;
    for r in rows {
        w.serialize(r).map_err(|e| err(&e))?;
    }
    w.flush().map_err(|e| err(&e))
}
