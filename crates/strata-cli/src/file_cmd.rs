//! `strata bench file`: a workload the user described in a TOML or JSON
//! file (`docs/WORKLOAD_FILE.md`), run once on one design: what `strata
//! explore --workload-file` recommends is rerun here.
//!
//! ```text
//!   --workload-file F ──> CustomWorkload ──┐
//!   design flags ──> Options ──> Database ─┴─> custom::run ──> per type: txn/s, aborts, p99
//! ```

use std::process::ExitCode;

use clap::Args;
use serde::Serialize;
use strata::{Database, GcPolicy, IndexKind, IndexPointers, Options, Protocol, VersionStorage};
use strata_workloads::custom::{self, CustomRun, CustomWorkload};
use strata_workloads::driver::DriverConfig;
use strata_workloads::ycsb::YcsbReport;

use crate::progress::BarObserver;
use crate::UsageError;

#[derive(Args, Debug, Clone)]
#[command(allow_negative_numbers = true)]
pub struct FileArgs {
    /// The workload file (.toml or .json).
    #[arg(long)]
    pub workload_file: std::path::PathBuf,
    /// Concurrency-control protocol.
    #[arg(long, default_value = "ssn", value_parser = crate::parse_protocol)]
    pub protocol: Protocol,
    /// Version storage: n2o, o2n, time-travel, delta or siro.
    #[arg(long, default_value = "n2o", value_parser = crate::parse_storage)]
    pub storage: VersionStorage,
    /// Garbage collection: none, txn, vac, coop or dead-zone.
    #[arg(long, default_value = "txn", value_parser = crate::parse_gc)]
    pub gc: GcPolicy,
    /// What secondary-index entries point at: tuple-id, pkey or physical.
    #[arg(long, default_value = "tuple-id", value_parser = crate::parse_pointers)]
    pub index_pointers: IndexPointers,
    /// The secondary indexes' structure: standard or mvpbt.
    #[arg(long, default_value = "standard", value_parser = crate::ycsb_core_cmd::parse_index_kind)]
    pub index: IndexKind,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    #[command(flatten)]
    pub run: crate::RunFlags,
}

#[derive(Serialize)]
struct Summary<'a> {
    benchmark: &'static str,
    workload: &'a str,
    protocol: &'static str,
    storage: &'static str,
    gc: &'static str,
    index_pointers: &'static str,
    index: &'static str,
    threads: usize,
    #[serde(flatten)]
    report: &'a YcsbReport,
}

pub fn run(a: &FileArgs) -> Result<ExitCode, UsageError> {
    // A mistake in the file is a usage error naming its line (exit 2).
    let spec =
        CustomWorkload::from_path(&a.workload_file).map_err(|e| UsageError(e.to_string()))?;
    let opts = Options::default()
        .protocol(a.protocol)
        .version_storage(a.storage)
        .gc(a.gc)
        .index_pointers(a.index_pointers);
    opts.validate().map_err(|e| UsageError(e.to_string()))?;
    let (warmup, duration) = a.run.times()?;
    let driver = DriverConfig {
        warmup,
        duration,
        series: false,
        huge_pages: Default::default(),
        ab_interval: None,
    };
    let db = Database::open(opts).map_err(|e| UsageError(e.to_string()))?;
    let r = CustomRun {
        threads: a.threads,
        seed: a.run.seed,
        index_kind: a.index,
    };
    let report = match crate::workload_outcome(custom::run(
        db,
        &spec,
        &r,
        &driver,
        &mut BarObserver::new(a.run.json),
    ))? {
        Some(report) => report,
        None => return Ok(ExitCode::FAILURE),
    };
    let s = Summary {
        benchmark: "file",
        workload: spec.name(),
        protocol: a.protocol.name(),
        storage: a.storage.name(),
        gc: a.gc.name(),
        index_pointers: strata::matrix::pointers_name(a.index_pointers),
        index: a.index.name(),
        threads: a.threads,
        report: &report,
    };
    if a.run.json {
        println!(
            "{}",
            serde_json::to_string(&s).expect("the summary serialises")
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "file {}  {} / {} / {} / {} / {}  {} threads",
        s.workload, s.protocol, s.storage, s.gc, s.index_pointers, s.index, s.threads
    );
    let run = &report.run;
    println!(
        "  all:  committed/s {:.1}  aborted/s {:.1}  p50 {:.0} us  p99 {:.0} us",
        run.committed_per_s, run.aborted_per_s, run.latency.p50_us, run.latency.p99_us
    );
    for t in &run.per_type {
        let reasons: Vec<String> = t
            .aborts_by_reason
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        println!(
            "  {:<16} committed/s {:.1}  aborted/s {:.1}  p99 {:.0} us{}",
            t.name,
            t.committed_per_s,
            t.aborted_per_s,
            t.latency.p99_us,
            if reasons.is_empty() {
                String::new()
            } else {
                format!("  aborts: {}", reasons.join(", "))
            }
        );
    }
    if let Some(m) = &report.memory {
        println!(
            "  memory: {:.0} bytes/row over {} rows, longest chain {}",
            m.bytes_per_row, m.rows, m.longest_chain
        );
    }
    Ok(ExitCode::SUCCESS)
}
