//! The engine's integration tests, one module per file of this folder,
//! built as one test binary.
//!
//! Each file used to be a test binary of its own: about 35 of them, each
//! linking the engine and its dependencies again, which made most of a
//! cold `cargo test --workspace` (issue 40, item 15; the measurement is in
//! docs/PERFORMANCE.md). Run one file's tests with a filter on its module:
//! `cargo test -p strata --test integration durability::`.
//!
//! A new test file is a new line below (`autotests = false` in
//! Cargo.toml: a file not listed here is not built). Binaries of their
//! own: the shuttle models (`*model.rs` but `model_based.rs`), built only
//! with `--cfg strata_model` (see the README), and `spaces.rs`, whose
//! bounds need the process's epoch to itself (its module doc says why).

mod common;
/// `strata check`'s executor (the engine side of the history checker),
/// shared by `dead_zone`, `storage` and `verify`.
#[path = "../../strata-cli/src/executor.rs"]
mod executor;

#[path = "alter.rs"]
mod alter;
#[path = "anomalies.rs"]
mod anomalies;
#[path = "api.rs"]
mod api;
#[path = "backup.rs"]
mod backup;
#[path = "bank.rs"]
mod bank;
#[path = "concurrent_inserts.rs"]
mod concurrent_inserts;
#[path = "config_lists.rs"]
mod config_lists;
#[path = "crash.rs"]
mod crash;
#[path = "dead_zone.rs"]
mod dead_zone;
#[path = "drop_table.rs"]
mod drop_table;
#[path = "durability.rs"]
mod durability;
#[path = "durability_commits.rs"]
mod durability_commits;
#[path = "durability_damage.rs"]
mod durability_damage;
#[path = "gc.rs"]
mod gc;
#[path = "gc_secondary.rs"]
mod gc_secondary;
#[path = "gc_tuple_level.rs"]
mod gc_tuple_level;
#[path = "gc_waiting_deletes.rs"]
mod gc_waiting_deletes;
#[path = "index_iterator.rs"]
mod index_iterator;
#[path = "index_writes.rs"]
mod index_writes;
#[path = "iterator.rs"]
mod iterator;
#[path = "lent_texts.rs"]
mod lent_texts;
#[path = "log_granularity.rs"]
mod log_granularity;
#[path = "lsn_stamps.rs"]
mod lsn_stamps;
#[path = "memory_limit.rs"]
mod memory_limit;
#[path = "model_based.rs"]
mod model_based;
#[path = "model_secondary.rs"]
mod model_secondary;
#[path = "mvpbt.rs"]
mod mvpbt;
#[path = "projection.rs"]
mod projection;
#[path = "read_only.rs"]
mod read_only;
#[path = "recovery_fuzz.rs"]
mod recovery_fuzz;
#[path = "retries.rs"]
mod retries;
#[path = "seams.rs"]
mod seams;
#[path = "secondary.rs"]
mod secondary;
#[path = "secondary_cc.rs"]
mod secondary_cc;
#[path = "siro.rs"]
mod siro;
#[path = "snapshot.rs"]
mod snapshot;
#[path = "ssn_blind_writes.rs"]
mod ssn_blind_writes;
#[path = "ssn_early.rs"]
mod ssn_early;
#[path = "storage.rs"]
mod storage;
mod table_reclaim;
#[path = "time_breakdown.rs"]
mod time_breakdown;
#[path = "value_types.rs"]
mod value_types;
#[path = "verify.rs"]
mod verify;
#[path = "write_install.rs"]
mod write_install;
