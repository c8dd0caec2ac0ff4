//! The workload `explore` measures each design on: one of the built-in
//! mixes or a file the user wrote (`docs/WORKLOAD_FILE.md`), at the quick
//! scale unless flags say otherwise, with the `--grid` parameters applied.
//!
//! ```text
//!   --workload ycsb|tpcc|tpcc-hybrid|llt|htap   or   --workload-file F
//!        │ + flags (--records, --read-ratio, --theta, ...) + one grid cell
//!        ▼
//!   Workload ── run(design, run_s, seed) ──> fresh Database(design.options())
//!                                            load, warm up, run ──> Trial
//! ```
//!
//! Every trial opens a fresh database, so trials are independent; the time
//! a trial takes (load included) is what the search's budget is charged.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use strata::Database;
use strata_workloads::custom::{self, CustomRun, CustomWorkload};
use strata_workloads::driver::{DriverConfig, Report};
use strata_workloads::htap::HtapConfig;
use strata_workloads::llt::LltConfig;
use strata_workloads::tpcc::{self, TpccConfig};
use strata_workloads::ycsb::{self, YcsbConfig};
use strata_workloads::{Quiet, WorkloadError};

use super::search::Trial;
use super::space::Design;
use crate::UsageError;

/// The built-in mixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// YCSB: --read-ratio, --theta, --ops-per-txn, --columns,
    /// --secondary-indexes.
    Ycsb,
    /// TPC-C's standard mix (NewOrder, Payment, ...), --warehouses.
    Tpcc,
    /// TPC-C plus ERMIA's read-mostly Q2* (TPC-C-hybrid).
    TpccHybrid,
    /// vDriver's long-lived-transaction mix: short updates while a long
    /// reader holds a snapshot for the middle of each run.
    Llt,
    /// MV-PBT's HTAP mix: YCSB A+E clients beside an analytical reader
    /// scanning through a secondary index.
    Htap,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Ycsb => "ycsb",
            Kind::Tpcc => "tpcc",
            Kind::TpccHybrid => "tpcc-hybrid",
            Kind::Llt => "llt",
            Kind::Htap => "htap",
        }
    }
}

/// A user's workload file, parsed, with what identifies its content.
#[derive(Debug, Clone)]
pub struct File {
    pub path: PathBuf,
    pub spec: CustomWorkload,
    /// A hash of the file's bytes: a rerun on an edited file measures anew.
    pub digest: String,
}

/// The workload of one search (one grid cell).
#[derive(Debug, Clone)]
pub struct Workload {
    pub kind: Kind,
    pub file: Option<File>,
    /// The YCSB settings (threads and seed for every kind; records for
    /// YCSB and HTAP).
    pub ycsb: YcsbConfig,
    /// TPC-C warehouses (0: one per thread).
    pub warehouses: u32,
    /// LLT: rows per table; the long reader's share of the run.
    pub llt_rows: u64,
    pub seed: u64,
}

/// Grid parameters and what they set.
pub const GRID_PARAMS: &[(&str, &str)] = &[
    ("read-ratio", "YCSB: fraction of operations that are reads"),
    ("theta", "YCSB, LLT, HTAP: Zipfian skew"),
    ("threads", "every workload: worker threads"),
    ("ops-per-txn", "YCSB: operations per transaction"),
    ("columns", "YCSB: integer columns per row"),
    ("secondary-indexes", "YCSB: secondary indexes"),
    ("records", "YCSB, HTAP: rows loaded; LLT: rows per table"),
    ("warehouses", "TPC-C: warehouses"),
    (
        "ro-threads",
        "YCSB: extra threads of long read-only transactions",
    ),
];

/// FNV-1a of `bytes`, as 16 hex digits: stable across builds and
/// platforms (std's hasher is not), so a file written by one build can be
/// matched by another.
pub fn fnv(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

impl File {
    pub fn read(path: PathBuf) -> Result<File, UsageError> {
        let bytes = std::fs::read(&path)
            .map_err(|e| UsageError(format!("--workload-file {}: {e}", path.display())))?;
        let spec = CustomWorkload::from_path(&path).map_err(|e| UsageError(e.to_string()))?;
        Ok(File {
            digest: fnv(&bytes),
            path,
            spec,
        })
    }
}

impl Workload {
    pub fn name(&self) -> String {
        match &self.file {
            Some(f) => format!("file {}", f.spec.name()),
            None => self.kind.name().to_string(),
        }
    }

    /// What was run, in words; with the file's digest, what identifies it
    /// for a resumed search.
    pub fn describe(&self) -> String {
        let y = &self.ycsb;
        let mut s = match (&self.file, self.kind) {
            (Some(f), _) => format!(
                "file {} ({}, digest {})",
                f.path.display(),
                f.spec.name(),
                f.digest
            ),
            (None, Kind::Ycsb) => format!(
                "ycsb records={} read-ratio={} theta={} ops-per-txn={} columns={} \
                 secondary-indexes={} ro-threads={}",
                y.records,
                y.read_ratio,
                y.theta,
                y.ops_per_txn,
                y.attributes,
                y.secondary_indexes,
                y.ro_threads
            ),
            (None, k @ (Kind::Tpcc | Kind::TpccHybrid)) => {
                format!("{} warehouses={}", k.name(), self.tpcc_warehouses())
            }
            (None, Kind::Llt) => format!("llt rows={} theta={}", self.llt_rows, y.theta),
            (None, Kind::Htap) => format!("htap records={} theta={}", y.records, y.theta),
        };
        s.push_str(&format!(" threads={} seed={}", y.threads, self.seed));
        s
    }

    /// The search's key for reusing measured trials.
    pub fn fingerprint(&self) -> String {
        fnv(self.describe().as_bytes())
    }

    pub fn secondary_indexes(&self) -> bool {
        match &self.file {
            Some(f) => f.spec.has_secondary_indexes(),
            None => match self.kind {
                Kind::Ycsb => self.ycsb.secondary_indexes > 0,
                Kind::Tpcc | Kind::TpccHybrid | Kind::Htap => true,
                Kind::Llt => false,
            },
        }
    }

    fn tpcc_warehouses(&self) -> u32 {
        match self.warehouses {
            0 => self.ycsb.threads as u32,
            w => w,
        }
    }

    /// Applies one grid parameter.
    pub fn set(&mut self, param: &str, v: f64) -> Result<(), UsageError> {
        let n = || -> Result<usize, UsageError> {
            if v >= 0.0 && v.fract() == 0.0 {
                Ok(v as usize)
            } else {
                Err(UsageError(format!(
                    "--grid {param}: expected a whole number, got {v}"
                )))
            }
        };
        if !self.takes(param) {
            return Err(UsageError(format!(
                "--grid {param} does not apply to {} (it sets {})",
                self.name(),
                GRID_PARAMS
                    .iter()
                    .find(|p| p.0 == param)
                    .map_or("nothing", |p| p.1)
            )));
        }
        let y = &mut self.ycsb;
        match param {
            "read-ratio" => y.read_ratio = v,
            "theta" => y.theta = v,
            "threads" => y.threads = n()?,
            "ops-per-txn" => y.ops_per_txn = n()?,
            "columns" => y.attributes = n()?,
            "secondary-indexes" => y.secondary_indexes = n()?,
            "records" if self.kind == Kind::Llt => self.llt_rows = n()? as u64,
            "records" => y.records = n()? as u64,
            "warehouses" => self.warehouses = n()? as u32,
            "ro-threads" => y.ro_threads = n()?,
            other => {
                let names: Vec<&str> = GRID_PARAMS.iter().map(|p| p.0).collect();
                return Err(UsageError(format!(
                    "--grid: unknown parameter {other:?}; expected one of {}",
                    names.join(", ")
                )));
            }
        }
        Ok(())
    }

    /// Whether grid parameter `param` changes this workload (an unknown
    /// one is refused by `set` with the list).
    fn takes(&self, param: &str) -> bool {
        if !GRID_PARAMS.iter().any(|p| p.0 == param) {
            return true;
        }
        match (&self.file, self.kind) {
            (Some(_), _) => param == "threads",
            (None, Kind::Ycsb) => param != "warehouses",
            (None, Kind::Tpcc | Kind::TpccHybrid) => matches!(param, "threads" | "warehouses"),
            (None, Kind::Llt | Kind::Htap) => matches!(param, "threads" | "theta" | "records"),
        }
    }

    /// Refuses settings the workload would refuse, before anything runs.
    pub fn validate(&self) -> Result<(), UsageError> {
        let e = |e: WorkloadError| UsageError(format!("{}: {e}", self.describe()));
        match (&self.file, self.kind) {
            (Some(_), _) => Ok(()),
            (None, Kind::Ycsb) => self.ycsb.validate().map_err(e),
            (None, Kind::Tpcc | Kind::TpccHybrid) => self.tpcc().validate().map_err(e),
            (None, Kind::Llt) => self.llt(2.0).validate().map_err(e),
            (None, Kind::Htap) => self.htap(Duration::from_secs(1)).validate().map_err(e),
        }
    }

    /// The shortest run that measures what the workload is about: the LLT
    /// mix samples its version space once a second, and its long reader
    /// holds the middle 60 % of the run, so a run under 5 s has no sample
    /// with the reader open.
    pub fn min_run_s(&self) -> f64 {
        match (&self.file, self.kind) {
            (None, Kind::Llt) => 5.0,
            _ => 0.0,
        }
    }

    /// A guess of what a trial costs besides its run, before one ran.
    pub fn overhead_guess_s(&self) -> f64 {
        match (&self.file, self.kind) {
            (Some(f), _) => 0.1 + f.spec.rows() as f64 * 3e-6,
            (None, Kind::Ycsb) => 0.1 + self.ycsb.records as f64 * 3e-6,
            (None, Kind::Tpcc | Kind::TpccHybrid) => 0.5 + 0.5 * self.tpcc_warehouses() as f64,
            (None, Kind::Llt) => 0.3,
            (None, Kind::Htap) => 1.0 + self.ycsb.records as f64 * 2e-5,
        }
    }

    fn tpcc(&self) -> TpccConfig {
        let base = TpccConfig {
            threads: self.ycsb.threads,
            seed: self.seed,
            // The quick scale's catalogue (as `reproduce`'s sweeps).
            items: 10_000,
            customers: 300,
            index_kind: strata::IndexKind::Standard,
            ..TpccConfig::spec(self.tpcc_warehouses())
        };
        if self.kind == Kind::TpccHybrid {
            base.hybrid()
        } else {
            base
        }
    }

    fn llt(&self, run_s: f64) -> LltConfig {
        let d = Duration::from_secs_f64(run_s);
        LltConfig {
            rows: self.llt_rows,
            threads: self.ycsb.threads,
            theta: self.ycsb.theta,
            duration: d,
            // The long reader holds its snapshot over the middle 60%.
            llt_windows: vec![(d.mul_f64(0.2), d.mul_f64(0.8))],
            seed: self.seed,
            walk_space: true,
            ..LltConfig::default()
        }
    }

    fn htap(&self, run: Duration) -> HtapConfig {
        let mut h = HtapConfig::default();
        h.core.records = self.ycsb.records;
        h.core.theta = self.ycsb.theta;
        h.core.threads = self.ycsb.threads;
        h.core.seed = self.seed;
        h.core.warmup = run.mul_f64(0.2);
        h.core.duration = run.mul_f64(0.8);
        h.scan_rows = h.scan_rows.min(self.ycsb.records / 2).max(1);
        h
    }

    /// The `strata bench` command that runs this workload on `d`, where
    /// one does.
    pub fn bench_command(&self, d: &Design) -> String {
        let y = &self.ycsb;
        let index = if d.index_kind == strata::IndexKind::Standard {
            String::new()
        } else {
            format!(" --index {}", d.index_kind.name())
        };
        match (&self.file, self.kind) {
            (Some(f), _) => format!(
                "strata bench file --workload-file {} {}{index} --threads {}",
                f.path.display(),
                d.flags(),
                y.threads
            ),
            (None, Kind::Ycsb) => format!(
                "strata bench ycsb {} --records {} --read-ratio {} --theta {} --ops-per-txn {} \
                 --columns {} --secondary-indexes {}{index} --ro-threads {} --threads {}",
                d.flags(),
                y.records,
                y.read_ratio,
                y.theta,
                y.ops_per_txn,
                y.attributes,
                y.secondary_indexes,
                y.ro_threads,
                y.threads
            ),
            (None, k @ (Kind::Tpcc | Kind::TpccHybrid)) => format!(
                "strata bench tpcc {}{} --warehouses {} --threads {} --items 10000 --customers 300{}",
                d.flags(),
                index,
                self.tpcc_warehouses(),
                y.threads,
                if k == Kind::TpccHybrid { " --hybrid" } else { "" }
            ),
            (None, Kind::Llt) => format!(
                "strata bench llt {} --rows {} --theta {} --threads {}",
                d.flags(),
                self.llt_rows,
                y.theta,
                y.threads
            ),
            (None, Kind::Htap) => format!(
                "strata bench htap {}{index} --records {} --threads {}",
                d.flags(),
                y.records,
                y.threads
            ),
        }
    }

    /// One trial of `d`: a fresh database, loaded, warmed up and run for
    /// `run_s` seconds (a fifth of it warm-up).
    pub fn run(&self, d: &Design, run_s: f64, trial: usize) -> Result<Trial, WorkloadError> {
        let started = Instant::now();
        let run = Duration::from_secs_f64(run_s);
        let driver = DriverConfig {
            warmup: run.mul_f64(0.2),
            duration: run.mul_f64(0.8),
            series: false,
            huge_pages: Default::default(),
            ab_interval: None,
        };
        let db = Database::open(d.options())?;
        let seed = self.seed.wrapping_add(trial as u64);
        let report: Report = match (&self.file, self.kind) {
            (Some(f), _) => {
                let r = CustomRun {
                    threads: self.ycsb.threads,
                    seed,
                    index_kind: d.index_kind,
                };
                custom::run(db.clone(), &f.spec, &r, &driver, &mut Quiet)?.run
            }
            (None, Kind::Ycsb) => {
                let cfg = YcsbConfig {
                    seed,
                    index_kind: d.index_kind,
                    ..self.ycsb.clone()
                };
                let engine = ycsb::StrataYcsb::new(db.clone(), &cfg)?;
                ycsb::run(&engine, &cfg, &driver, &mut Quiet)?.run
            }
            (None, Kind::Tpcc | Kind::TpccHybrid) => {
                let cfg = TpccConfig {
                    seed,
                    index_kind: d.index_kind,
                    ..self.tpcc()
                };
                let mut r = tpcc::run(db.clone(), &cfg, &driver, &mut Quiet)?.run;
                // Conflicts only: NewOrder's specified rollbacks are the
                // workload's outcome, not the design's.
                for reason in tpcc::WORKLOAD_OUTCOMES {
                    if let Some(n) = r.aborts_by_reason.remove(reason) {
                        r.aborted -= n;
                    }
                }
                let attempts = r.committed + r.aborted;
                r.abort_rate = if attempts == 0 {
                    0.0
                } else {
                    r.aborted as f64 / attempts as f64
                };
                r
            }
            (None, Kind::Llt) => {
                let cfg = LltConfig {
                    seed,
                    ..self.llt(run_s)
                };
                let r = strata_workloads::llt::run(&db, &cfg, &mut Quiet)?;
                let rows = (cfg.tables as u64 * cfg.rows).max(1);
                let mut t = trial_of(&r.run, &db, started);
                // The space the long reader held: its window's peak (sampled
                // once a second; see `min_run_s`).
                if r.window.max_version_bytes > 0 {
                    t.bytes_per_row = r.window.max_version_bytes as f64 / rows as f64;
                    t.longest_chain = r.window.max_longest_chain;
                }
                return Ok(t);
            }
            (None, Kind::Htap) => {
                let mut cfg = self.htap(run);
                cfg.core.seed = seed;
                cfg.core.index = d.index_kind;
                strata_workloads::htap::run(&db, &cfg, &mut Quiet)?.oltp
            }
        };
        Ok(trial_of(&report, &db, started))
    }
}

/// A trial from a run's report and the database after it.
fn trial_of(r: &Report, db: &Database, started: Instant) -> Trial {
    let st = db.stats();
    Trial {
        committed_per_s: r.committed_per_s,
        p99_us: r.latency.p99_us,
        abort_rate: r.abort_rate,
        aborts_by_reason: (r.aborts_by_reason.iter())
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        bytes_per_row: st.bytes_per_row(),
        longest_chain: st.longest_chain,
        elapsed_s: started.elapsed().as_secs_f64(),
    }
}
