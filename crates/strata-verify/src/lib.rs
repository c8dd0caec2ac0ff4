//! Strata's history checker.
pub mod checker;
pub mod generate;
pub mod history;
pub mod runner;

pub use checker::{check, Anomaly, AnomalyKind, CheckOptions, Cycle, CycleStep, EdgeKind, Report};
pub use generate::{Generator, GeneratorConfig, PlannedOp, Workload, Zipf};
pub use history::{Elem, History, Key, Op, Outcome, Recorder, Ticket, Txn};
pub use runner::{
    run_workload, DirtyExecutor, LossyExecutor, SerialExecutor, SnapshotExecutor, TxnExecutor,
};
