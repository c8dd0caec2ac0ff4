//! Workloads and the benchmark driver for the Strata MVCC engine.
//!
//! ```text
//!   strata-cli ──> ycsb::run(engine, config, driver)    tpcc::run(db, config, driver)
//!                      │  load (threads, 1,000-row txns)     │
//!                      ▼                                     ▼
//!                  driver::run: closed-loop workers, warm-up, measured window,
//!                  per-type commits/aborts/latency, throughput per second
//!                      │
//!        YcsbEngine: Strata │ noop (driver alone) │ peers: skipdb, fjall, redb, rocksdb
//! ```
//!
//! * [`ycsb`]: the Peloton study's YCSB variant (§7.1): one table with a
//!   64-bit key, N 64-bit integer attributes and K non-inline text
//!   attributes; Zipfian keys; read-only / read-intensive / update-intensive
//!   mixes; extra read-only threads (the heterogeneous workload).
//! * [`tpcc`]: TPC-C's five transactions, the standard mix, the study's
//!   StockScan query and the consistency conditions.
//! * [`peers`]: the same YCSB transactions through other embedded
//!   transactional engines, for side-by-side runs.
//! * [`llt`]: vDriver's long-lived-transaction workload (short updates,
//!   long readers joining and leaving) with version space and chain
//!   lengths over time.
//! * [`durable`]: single-row durable commits, Strata's group commit
//!   against peers that fsync each commit.
//! * [`read_mostly`]: ERMIA's read-mostly microbenchmark (§5, Figure 1)
//!   over TPC-C's Stock table: read many rows, update a fraction of them.
//! * [`custom`]: a workload the user describes in a TOML or JSON file
//!   (tables, indexes, a weighted mix of transaction types).
//! * [`driver`]: runs any of them and reports the figures.

pub mod custom;
pub mod driver;
pub mod durable;
pub mod htap;
pub mod huge_pages;
pub mod llt;
pub mod peers;
pub mod read_mostly;
pub mod rng;
pub mod tpcc;
pub mod window;
pub mod ycsb;
pub mod ycsb_core;

pub use driver::{DriverConfig, Observer, Outcome, Quiet, Report, Worker};
pub use rng::{Rng, Zipfian};

/// Errors of the workloads and the driver.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// A setting is out of range or the combination is impossible.
    #[error("{0}")]
    Config(String),
    /// A mistake in a workload file (`custom`): where (1-based line and
    /// column, in characters) and what.
    #[error("{file}:{line}:{column}: {message}")]
    Spec {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// A part this build or branch does not have yet.
    #[error("{0} is not implemented yet")]
    NotImplemented(String),
    /// A part that is implemented but not compiled into this build: a peer
    /// engine behind a cargo feature.
    #[error(
        "{what} is implemented but not compiled into this build: rebuild with the `{feature}` \
         cargo feature (`cargo build --release -p strata-cli --features {feature}`)"
    )]
    NotCompiled { what: String, feature: &'static str },
    /// The engine under test failed (not a conflict: those are aborts).
    #[error("engine error: {0}")]
    Engine(String),
    /// Strata's own error.
    #[error(transparent)]
    Strata(#[from] strata::Error),
    /// A consistency condition failed after a run.
    #[error("consistency check failed: {0}")]
    Inconsistent(String),
}
