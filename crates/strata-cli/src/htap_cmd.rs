//! `strata bench htap`: the HTAP mix of MV-PBT's Figure 3: OLTP clients
//! run YCSB A and E while an analytical reader holds one old snapshot,
//! scans a range through the secondary index (covering) and looks up a
//! row whose chain has grown under it (`strata_workloads::htap`).
//!
//! ```text
//!   flags ──> HtapConfig ──> htap::run ──> summary (text | JSON)
//! ```

use std::process::ExitCode;

use clap::Args;
use strata::{IndexKind, Protocol};
use strata_workloads::htap::{self, HtapConfig, HtapReport};
use strata_workloads::ycsb_core::{CoreConfig, CoreWorkload};

use crate::ycsb_core_cmd::{on_fresh_db, parse_index_kind, print_json};
use crate::UsageError;

#[derive(Args, Debug, Clone)]
#[command(allow_negative_numbers = true)]
pub struct HtapArgs {
    /// The secondary index's structure: standard or mvpbt.
    #[arg(long, default_value = "standard", value_parser = parse_index_kind)]
    pub index: IndexKind,
    /// Versions of each analysed row the analytical snapshot meets.
    #[arg(long, default_value_t = 50)]
    pub chain_length: u64,
    /// Rows of the analytical range scan (keys 0..scan-rows; the OLTP
    /// clients use the keys above).
    #[arg(long, default_value_t = 1_000)]
    pub scan_rows: u64,
    /// Seconds between the analytical reader's point queries.
    #[arg(long, default_value_t = 1.0, value_parser = crate::parse_seconds)]
    pub point_every: f64,
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
    /// Zipfian constant of the OLTP key choice, in [0, 1).
    #[arg(long, default_value_t = 0.99)]
    pub theta: f64,
    /// Longest OLTP scan (workload E's).
    #[arg(long, default_value_t = 100)]
    pub max_scan: u64,
    /// OLTP worker threads (the analytical reader has its own).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    #[command(flatten)]
    pub run: crate::RunFlags,
}

impl HtapArgs {
    pub fn config(&self) -> Result<HtapConfig, UsageError> {
        let (warmup, duration) = self.run.times()?;
        let cfg = HtapConfig {
            core: CoreConfig {
                workload: CoreWorkload::A,
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
            },
            chain_length: self.chain_length,
            scan_rows: self.scan_rows,
            point_every: crate::seconds("point-every", self.point_every)?,
        };
        cfg.validate().map_err(|e| UsageError(e.to_string()))?;
        crate::check_memory(
            &format!("--records {}", cfg.core.records),
            cfg.core.records as f64 * cfg.core.row_bytes()
                + (cfg.scan_rows * cfg.chain_length) as f64 * cfg.core.row_bytes(),
        )?;
        Ok(cfg)
    }
}

/// Opens a database for `protocol` and runs `cfg` on it.
pub fn run_config(
    protocol: Protocol,
    cfg: &HtapConfig,
    quiet: bool,
) -> Result<Option<HtapReport>, UsageError> {
    on_fresh_db(protocol, quiet, |db, bar| htap::run(db, cfg, bar))
}

pub fn run(a: &HtapArgs) -> Result<ExitCode, UsageError> {
    let cfg = a.config()?;
    let Some(r) = run_config(a.protocol, &cfg, a.run.json)? else {
        return Ok(ExitCode::FAILURE);
    };
    if a.run.json {
        print_json("htap", a.protocol, &r);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "htap  index {}  {}  chains of {}  {} records, scan of {} rows, {} OLTP threads",
        a.index, a.protocol, cfg.chain_length, cfg.core.records, cfg.scan_rows, cfg.core.threads
    );
    println!(
        "  analytical: {:.1} scans/s  scan p50 {:.2} ms  point query p50 {:.0} us ({} queries)",
        r.analytical.scans_per_s,
        r.analytical.scan_ms_p50,
        r.analytical.point_query_us_p50,
        r.analytical.point_queries
    );
    println!(
        "  OLTP:       committed/s {:.1}  aborted/s {:.1}  p50 {:.0} us  p99 {:.0} us",
        r.oltp.committed_per_s, r.oltp.aborted_per_s, r.oltp.latency.p50_us, r.oltp.latency.p99_us
    );
    Ok(ExitCode::SUCCESS)
}
