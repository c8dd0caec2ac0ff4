//! `strata bench ycsb-core`: YCSB's core workloads A, B, D and E through a
//! secondary index of either kind (`--index standard|mvpbt`), as MV-PBT's
//! Figure 15a runs them.
//!
//! ```text
//!   flags ──> CoreConfig + Options ──> ycsb_core::run ──> summary (text | JSON)
//! ```

use std::process::ExitCode;

use clap::Args;
use serde::Serialize;
use strata::{Database, IndexKind, Options, Protocol};
use strata_workloads::ycsb_core::{self, CoreConfig, CoreReport, CoreWorkload};
use strata_workloads::WorkloadError;

use crate::progress::BarObserver;
use crate::UsageError;

#[derive(Args, Debug, Clone)]
#[command(allow_negative_numbers = true)]
pub struct CoreArgs {
    /// The core workload: a (50% reads, 50% updates), b (95/5), d (95%
    /// reads of the latest keys, 5% inserts) or e (95% short scans, 5%
    /// inserts).
    #[arg(long, default_value = "a", value_parser = parse_workload)]
    pub workload: CoreWorkload,
    /// The secondary index's structure: standard or mvpbt.
    #[arg(long, default_value = "standard", value_parser = parse_index_kind)]
    pub index: IndexKind,
    /// Concurrency-control protocol.
    #[arg(long, default_value = "ssn", value_parser = crate::parse_protocol)]
    pub protocol: Protocol,
    /// Rows loaded before the run.
    #[arg(long, default_value_t = 100_000)]
    pub records: u64,
    /// Text fields per row.
    #[arg(long, default_value_t = 10)]
    pub fields: usize,
    /// Bytes per field.
    #[arg(long, default_value_t = 100)]
    pub field_bytes: usize,
    /// Zipfian constant of the key choice, in [0, 1).
    #[arg(long, default_value_t = 0.99)]
    pub theta: f64,
    /// Longest scan of workload e.
    #[arg(long, default_value_t = 100)]
    pub max_scan: u64,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    #[command(flatten)]
    pub run: crate::RunFlags,
}

fn parse_workload(s: &str) -> Result<CoreWorkload, String> {
    s.parse()
        .map_err(|e: strata_workloads::WorkloadError| e.to_string())
}

/// Parses an index kind (`standard`, `mvpbt`).
pub fn parse_index_kind(s: &str) -> Result<IndexKind, String> {
    IndexKind::ALL
        .into_iter()
        .find(|k| k.name() == s)
        .ok_or_else(|| "expected standard or mvpbt".to_string())
}

impl CoreArgs {
    pub fn config(&self) -> Result<CoreConfig, UsageError> {
        let (warmup, duration) = self.run.times()?;
        let cfg = CoreConfig {
            workload: self.workload,
            records: self.records,
            fields: self.fields,
            field_bytes: self.field_bytes,
            theta: self.theta,
            max_scan: self.max_scan,
            index: self.index,
            threads: self.threads,
            warmup,
            duration,
            seed: self.run.seed,
        };
        cfg.validate().map_err(|e| UsageError(e.to_string()))?;
        crate::check_memory(
            &format!("--records {}", cfg.records),
            cfg.records as f64 * cfg.row_bytes(),
        )?;
        Ok(cfg)
    }
}

/// Prints `report` as one JSON object, tagged with the benchmark and the
/// protocol (the `--json` output of `bench ycsb-core` and `bench htap`).
pub fn print_json<T: Serialize>(benchmark: &'static str, protocol: Protocol, report: &T) {
    #[derive(Serialize)]
    struct Summary<'a, T> {
        benchmark: &'static str,
        protocol: &'static str,
        #[serde(flatten)]
        report: &'a T,
    }
    let s = Summary {
        benchmark,
        protocol: protocol.name(),
        report,
    };
    println!(
        "{}",
        serde_json::to_string(&s).expect("the summary serialises")
    );
}

/// Opens a fresh database for `protocol` and runs `work` on it with a
/// progress bar (`quiet`: none).
pub fn on_fresh_db<R>(
    protocol: Protocol,
    quiet: bool,
    work: impl FnOnce(&Database, &mut BarObserver) -> Result<R, WorkloadError>,
) -> Result<Option<R>, UsageError> {
    let db = Database::open(Options::default().protocol(protocol))
        .map_err(|e| UsageError(e.to_string()))?;
    crate::workload_outcome(work(&db, &mut BarObserver::new(quiet)))
}

/// Opens a database for `protocol` and runs `cfg` on it.
pub fn run_config(
    protocol: Protocol,
    cfg: &CoreConfig,
    quiet: bool,
) -> Result<Option<CoreReport>, UsageError> {
    on_fresh_db(protocol, quiet, |db, bar| ycsb_core::run(db, cfg, bar))
}

pub fn run(a: &CoreArgs) -> Result<ExitCode, UsageError> {
    let cfg = a.config()?;
    let Some(r) = run_config(a.protocol, &cfg, a.run.json)? else {
        return Ok(ExitCode::FAILURE);
    };
    if a.run.json {
        print_json("ycsb-core", a.protocol, &r);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "ycsb-core {}  index {}  {}  {} records, {} fields of {} B, theta {}, {} threads",
        a.workload.name(),
        a.index,
        a.protocol,
        cfg.records,
        cfg.fields,
        cfg.field_bytes,
        cfg.theta,
        cfg.threads
    );
    println!(
        "  committed/s {:.1}  aborted/s {:.1}  p50 {:.0} us  p99 {:.0} us  (load {:.1} s)",
        r.run.committed_per_s,
        r.run.aborted_per_s,
        r.run.latency.p50_us,
        r.run.latency.p99_us,
        r.load_s
    );
    for t in &r.run.per_type {
        if t.committed + t.aborted > 0 {
            println!(
                "  {:<7} committed/s {:.1}  p50 {:.0} us  p99 {:.0} us",
                t.name, t.committed_per_s, t.latency.p50_us, t.latency.p99_us
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
