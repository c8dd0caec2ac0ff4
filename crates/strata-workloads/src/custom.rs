//! A workload described by the user in a small TOML or JSON file: tables,
//! their secondary indexes, and a weighted mix of transaction types made of
//! reads, updates, inserts, deletes and scans (the format:
//! `docs/WORKLOAD_FILE.md`; examples under `workloads/`).
//!
//! ```text
//!   orders.toml ──parse──> serde structs ──validate──> CustomWorkload
//!        │  (a mistake: WorkloadError::Spec, file:line:column: message)
//!        ▼
//!   run(db, workload, CustomRun { threads, seed, index_kind }, driver)
//!        │ create tables (+ indexes of `index_kind`), load keys 0..rows
//!        │ in 1,000-row transactions on `threads` threads
//!        ▼
//!   workers: loop { type ~ shares; begin [READ ONLY];
//!                   each op × count: key ~ distribution over 0..next(table);
//!                   commit } ── a conflict: Aborted(kind), no retry
//!        │                       a deleted row: counted, not an error
//!        ▼
//!   YcsbReport { run: one TypeReport per transaction type, load_s, memory }
//! ```
//!
//! Keys are the integers `0..rows` at load; an insert takes the next one
//! above (one counter per table), so the key range only grows and a drawn
//! key is missing only if a delete (or an aborted insert) left a hole.
//! Values are generated per column type; nothing checks what a read
//! returns: the workload measures the engine, it does not verify it (the
//! TPC-C consistency checks do that).

mod exec;
mod locate;
mod spec;
#[cfg(test)]
mod tests;

use std::path::Path;

use serde::Serialize;

use crate::driver::{DriverConfig, Observer, Stop};
use crate::ycsb::YcsbReport;
use crate::WorkloadError;

/// The syntax of a workload file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Toml,
    Json,
}

impl Format {
    /// The format a file's extension names (`.toml`, `.json`), if any.
    pub fn of_path(path: &Path) -> Option<Format> {
        match path.extension()?.to_str()? {
            "toml" => Some(Format::Toml),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}

/// A parsed and validated workload file.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomWorkload {
    pub(crate) name: String,
    pub(crate) tables: Vec<spec::TableSpec>,
    pub(crate) indexes: Vec<spec::IndexSpec>,
    pub(crate) types: Vec<spec::TxnSpec>,
    /// The transaction types' names, for the driver's report, which takes
    /// `&'static str`: leaked once per parsed workload (a few bytes; a
    /// process parses a handful of files).
    pub(crate) type_names: Vec<&'static str>,
}

impl CustomWorkload {
    /// Reads and parses `path`, its format taken from the extension.
    pub fn from_path(path: &Path) -> Result<Self, WorkloadError> {
        let format = Format::of_path(path).ok_or_else(|| {
            WorkloadError::Config(format!(
                "{}: a workload file must end in .toml or .json",
                path.display()
            ))
        })?;
        let text = std::fs::read_to_string(path).map_err(|e| {
            WorkloadError::Config(format!("cannot read workload file {}: {e}", path.display()))
        })?;
        Self::parse(&text, format, &path.display().to_string())
    }

    /// Parses `text`; `file` names it in errors, and its stem is the
    /// workload's name when the file gives none.
    pub fn parse(text: &str, format: Format, file: &str) -> Result<Self, WorkloadError> {
        spec::parse(text, format, file)
    }

    /// The file's `name`, else the file's stem.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn has_secondary_indexes(&self) -> bool {
        !self.indexes.is_empty()
    }

    /// Rows loaded before the run, all tables together.
    pub fn rows(&self) -> u64 {
        self.tables.iter().map(|t| t.rows).sum()
    }

    /// No transaction type writes (whether or not it is marked
    /// `read_only`): after the load the database only serves reads.
    pub fn is_read_only(&self) -> bool {
        self.types
            .iter()
            .all(|t| t.ops.iter().all(|o| !o.kind.writes()))
    }

    /// The transaction types' names, in file order (the report's types).
    pub fn transaction_names(&self) -> &[&'static str] {
        &self.type_names
    }

    /// The tables' names, in file order.
    pub fn table_names(&self) -> impl Iterator<Item = &str> {
        self.tables.iter().map(|t| t.name.as_str())
    }
}

/// How to run a workload.
#[derive(Debug, Clone)]
pub struct CustomRun {
    /// Worker threads (and loader threads).
    pub threads: usize,
    pub seed: u64,
    /// The structure of every secondary index the file declares.
    pub index_kind: strata::IndexKind,
}

/// What a run's committed transactions did to one table, over the whole
/// run (warm-up included, unlike the driver's counts).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TableCounts {
    pub table: String,
    /// Rows loaded before the run.
    pub loaded: u64,
    /// Rows found by reads.
    pub read: u64,
    /// Rows returned by scans of the table, and by scans of its indexes.
    pub scanned: u64,
    pub index_scanned: u64,
    pub updated: u64,
    pub inserted: u64,
    pub deleted: u64,
    /// Reads, updates and deletes that found no row (deleted, or an insert
    /// that aborted or has not committed yet): the transaction went on.
    pub not_found: u64,
}

/// A run's report with what its transactions did to each table.
#[derive(Debug, Clone, Serialize)]
pub struct CustomReport {
    pub report: YcsbReport,
    /// In file order.
    pub tables: Vec<TableCounts>,
}

/// Creates the tables (and indexes, of `index_kind`) in `db`, loads them,
/// runs the mix for the driver's warm-up and duration.
pub fn run(
    db: strata::Database,
    w: &CustomWorkload,
    r: &CustomRun,
    driver: &DriverConfig,
    observer: &mut dyn Observer,
) -> Result<YcsbReport, WorkloadError> {
    run_until(db, w, r, driver, &Stop::Elapsed, observer).map(|c| c.report)
}

/// [`run`], with the measured window ended by `stop`, and each table's
/// counts.
pub fn run_until(
    db: strata::Database,
    w: &CustomWorkload,
    r: &CustomRun,
    driver: &DriverConfig,
    stop: &Stop,
    observer: &mut dyn Observer,
) -> Result<CustomReport, WorkloadError> {
    exec::run_until(db, w, r, driver, stop, observer)
}
