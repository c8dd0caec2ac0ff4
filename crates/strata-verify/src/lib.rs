//! Strata's history checker: decides from a recorded history alone whether
//! transactions were serializable, in the style of Elle (Kingsbury & Alvaro,
//! VLDB 2020), without trusting anything the engine says about itself.
//!
//! ```text
//!   generate ──plans──► runner (your TxnExecutor) ──observed ops──► history::Recorder
//!                                                                        │
//!                                 Report ◄── checker::check ◄── History ◄┘
//! ```
//!
//! * [`history`]: what clients observed ([`Op`], [`Txn`], [`History`]) and a
//!   thread-safe [`Recorder`].
//! * [`generate`]: seeded list-append, register, predicate and write-skew
//!   workloads with unique values and Zipfian keys.
//! * [`checker`]: version-order inference, Adya's G0/G1a/G1b/G1c/G-single/G2
//!   and data anomalies, with readable explanations of the cycles found.
//! * [`runner`]: [`TxnExecutor`] and [`run_workload`], so an engine can be
//!   plugged in without this crate depending on it, plus reference executors.
//!
//! ```
//! use strata_verify::*;
//!
//! let config = GeneratorConfig::for_workload(Workload::WriteSkew);
//! // A correct (serial) store checks valid…
//! let history = run_workload(&SerialExecutor::new(), &config, 4, 500);
//! assert!(check(&history, &CheckOptions::strict()).is_valid());
//! // …and a hand-made write skew does not.
//! let read = |key| Op::ReadList { key, value: Some(vec![]) };
//! let history = History::new(vec![
//!     Txn::new(1, vec![read(0), read(1), Op::Append { key: 0, elem: 1 }], Outcome::Committed),
//!     Txn::new(2, vec![read(0), read(1), Op::Append { key: 1, elem: 2 }], Outcome::Committed),
//!     Txn::new(3, vec![Op::ReadList { key: 0, value: Some(vec![1]) },
//!                      Op::ReadList { key: 1, value: Some(vec![2]) }], Outcome::Committed),
//! ]);
//! let report = check(&history, &CheckOptions::default());
//! assert!(report.has(AnomalyKind::G2Item));
//! assert!(report.violates_serializability() && !report.violates_snapshot_isolation());
//! println!("{report}");
//! ```
#![forbid(unsafe_code)]

pub mod checker;
pub mod generate;
pub mod history;
pub mod runner;

pub use checker::{check, Anomaly, AnomalyKind, CheckOptions, Cycle, CycleStep, EdgeKind, Report};
pub use generate::{Generator, GeneratorConfig, PlannedOp, Workload, Zipf};
pub use history::{Elem, History, Key, Op, Outcome, Recorder, Ticket, Txn};
pub use runner::{
    run_segmented, run_workload, DirtyExecutor, LossyExecutor, Segment, SerialExecutor,
    SnapshotExecutor, TxnExecutor,
};
