//! Events for an application's `tracing` subscriber: what the engine did
//! that an operator wants to see in logs or metrics, off unless a
//! subscriber listens.
//!
//! ```text
//!  target          level  when                         fields
//!  strata::commit  debug  a read-write commit returns   tid, writes, micros (the commit call,
//!                                                       log wait included), outcome
//!  strata::abort   debug  a conflict rolls back         tid, reason (ConflictKind's name)
//!                         Transaction::abort, a drop    tid, reason = "user"
//!                         a write to a dropped table    tid, reason = "table-dropped"
//!  strata::gc      debug  a GC pass freed something     freed_bytes, allocated_bytes, micros
//!  strata::log     info   a checkpoint was written      begin_lsn, bytes, rows, micros
//!                  info   recovery at open              the RecoveryReport's counts
//! ```
//!
//! Cost with no subscriber: each site is `tracing`'s level check (a load
//! of the global maximum level and a compare) and nothing else; the
//! commit's clock is read only when its event is enabled. The callgrind
//! measurement is in docs/PERFORMANCE.md.
//!
//! Invariant this module owns: no event on a read-only commit or a read
//! (the paths whose cost is a few hundred instructions), and no allocation
//! or clock read unless a subscriber enabled the event.

use crate::error::Result;
use std::time::Instant;
use tracing::Level;

/// The start of a commit when its event is enabled.
#[inline]
pub(crate) fn commit_start() -> Option<Instant> {
    tracing::enabled!(target: "strata::commit", Level::DEBUG).then(Instant::now)
}

/// A read-write commit returned `r` (`start` from [`commit_start`]).
#[cold]
pub(crate) fn committed<T>(start: Instant, tid: u64, writes: usize, r: &Result<T>) {
    let micros = start.elapsed().as_micros() as u64;
    match r {
        Ok(_) => {
            tracing::debug!(target: "strata::commit", tid, writes, micros, outcome = "committed", "commit")
        }
        Err(e) => {
            tracing::debug!(target: "strata::commit", tid, writes, micros, outcome = %e, "commit refused")
        }
    }
}

/// A transaction was rolled back: by a conflict (`reason`, the kind's
/// name) or by its user (`"user"`).
#[inline]
pub(crate) fn aborted(tid: u64, reason: &'static str) {
    tracing::debug!(target: "strata::abort", tid, reason, "abort");
}

/// A GC pass (or a committer's share of one) that freed or allocated
/// something.
#[inline]
pub(crate) fn gc_pass(freed_bytes: u64, allocated_bytes: u64, start: Option<Instant>) {
    if let Some(start) = start {
        let micros = start.elapsed().as_micros() as u64;
        tracing::debug!(target: "strata::gc", freed_bytes, allocated_bytes, micros, "gc pass");
    }
}

/// The start of a GC pass when its event is enabled.
#[inline]
pub(crate) fn gc_start() -> Option<Instant> {
    tracing::enabled!(target: "strata::gc", Level::DEBUG).then(Instant::now)
}

/// A checkpoint was written: (begin LSN, bytes, rows), or the error.
/// (Plain values: the log calls this module, which knows no log types.)
pub(crate) fn checkpoint(start: Instant, r: Result<(u64, u64, u64)>) {
    let micros = start.elapsed().as_micros() as u64;
    match r {
        Ok((begin_lsn, bytes, rows)) => tracing::info!(
            target: "strata::log",
            begin_lsn,
            bytes,
            rows,
            micros,
            "checkpoint"
        ),
        Err(e) => tracing::warn!(target: "strata::log", error = %e, micros, "checkpoint failed"),
    }
}

/// What recovery did at open (the `RecoveryReport`).
pub(crate) fn recovered(report: &dyn std::fmt::Debug) {
    tracing::info!(target: "strata::log", report = ?report, "recovered");
}
