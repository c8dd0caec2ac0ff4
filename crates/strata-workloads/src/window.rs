//! What the engine counted during a run's measured window (TPC-C's, and
//! `bench ycsb --time-breakdown`'s): the time
//! breakdown by component (`Options::time_breakdown`, ERMIA Fig. 11) and
//! the log's records (ERMIA Fig. 10: one log-buffer reservation per
//! transaction, or one per write and the commit).
//!
//! ```text
//!  load ── warm-up ──┬──────── measured window ────────┬── consistency check
//!                 measure()                         finish()
//!                 counters A                        counters B   report: B − A
//! ```
//!
//! The window is the driver's own (`Observer::measure` to `finish`), so the
//! log figures divide by the report's committed transactions. The
//! breakdown divides by the commits the engine counted in the window (the
//! same transactions, give or take the one each worker had in flight at
//! either end: a transaction is counted whole when it ends).

use serde::Serialize;
use std::time::Instant;
use strata::{Database, LogStats, TimeBreakdown};

use crate::driver::{Observer, Report};

/// Engine counters at one end of the window.
struct Counters {
    at: Instant,
    time: Option<TimeBreakdown>,
    log: Option<LogStats>,
}

impl Counters {
    fn now(db: &Database) -> Self {
        Counters {
            at: Instant::now(),
            time: db.time_breakdown(),
            log: db.log_stats(),
        }
    }
}

/// Passes every event on to `inner`, taking the engine's counters when the
/// measured window begins and ends.
pub struct Window<'a> {
    inner: &'a mut dyn Observer,
    db: Database,
    begin: Option<Counters>,
    end: Option<Counters>,
}

impl<'a> Window<'a> {
    pub fn new(inner: &'a mut dyn Observer, db: Database) -> Self {
        Window {
            inner,
            db,
            begin: None,
            end: None,
        }
    }

    /// The breakdown and log reports of the window (`None` where the
    /// engine counted nothing: timing off, no log).
    pub fn reports(&self, workers: usize, run: &Report) -> (Option<TimeReport>, Option<LogReport>) {
        let (Some(a), Some(b)) = (&self.begin, &self.end) else {
            return (None, None);
        };
        let window_ns = b.at.duration_since(a.at).as_nanos() as u64;
        let time = match (&a.time, &b.time) {
            (Some(x), Some(y)) => Some(TimeReport::of(&y.since(x), workers, window_ns)),
            _ => None,
        };
        let log = match (&a.log, &b.log) {
            (Some(x), Some(y)) => Some(LogReport::of(x, y, run.committed)),
            _ => None,
        };
        (time, log)
    }
}

impl Observer for Window<'_> {
    fn start(&mut self, phase: &str, total: u64, unit: &str) {
        self.inner.start(phase, total, unit);
    }
    fn set(&mut self, pos: u64) {
        self.inner.set(pos);
    }
    fn measure(&mut self) {
        self.begin = Some(Counters::now(&self.db));
        self.inner.measure();
    }
    fn finish(&mut self) {
        if self.begin.is_some() && self.end.is_none() {
            self.end = Some(Counters::now(&self.db));
        }
        self.inner.finish();
    }
}

/// One component's time per committed transaction.
#[derive(Debug, Clone, Serialize)]
pub struct ComponentTime {
    /// `index`, `version_read`, `version_install`, `cc`, `log`, `log_wait`,
    /// `gc`, or `rest` (what no component took; see
    /// `strata::TimeBreakdown`).
    pub name: &'static str,
    pub ns_per_committed: f64,
    /// Of the transactions' total time.
    pub share: f64,
}

/// The time breakdown of the measured window (ERMIA Fig. 11).
#[derive(Debug, Clone, Serialize)]
pub struct TimeReport {
    /// Transactions that ended in the window, and of them committed.
    pub transactions: u64,
    pub committed: u64,
    /// Their time, begin to end (all components and the rest).
    pub total_ns: u64,
    /// The workers' wall time: workers × the window.
    pub worker_wall_ns: u64,
    pub per_committed: Vec<ComponentTime>,
}

impl TimeReport {
    fn of(t: &TimeBreakdown, workers: usize, window_ns: u64) -> Self {
        let per = t.committed.max(1) as f64;
        let total = t.total_ns.max(1) as f64;
        TimeReport {
            transactions: t.transactions,
            committed: t.committed,
            total_ns: t.total_ns,
            worker_wall_ns: window_ns * workers as u64,
            per_committed: t
                .components()
                .into_iter()
                .map(|(name, ns)| ComponentTime {
                    name,
                    ns_per_committed: ns as f64 / per,
                    share: ns as f64 / total,
                })
                .collect(),
        }
    }

    /// `name us (share%)` per component, as the benchmarks print it.
    pub fn line(&self) -> String {
        let parts: Vec<String> = (self.per_committed.iter())
            .map(|c| {
                let us = c.ns_per_committed / 1e3;
                format!("{} {us:.1} ({:.0}%)", c.name, 100.0 * c.share)
            })
            .collect();
        parts.join("  ")
    }

    /// A component's time per committed transaction, by name.
    pub fn ns_per_committed(&self, name: &str) -> Option<f64> {
        self.per_committed
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.ns_per_committed)
    }
}

/// The log during the measured window.
#[derive(Debug, Clone, Serialize)]
pub struct LogReport {
    /// Log records (each one reservation in the shared log buffer) and,
    /// of them, operation records (per-operation logging).
    pub records: u64,
    pub operation_records: u64,
    pub bytes: u64,
    pub flushes: u64,
    /// Per committed transaction of the run's report.
    pub records_per_committed: f64,
    pub operation_records_per_committed: f64,
    pub bytes_per_committed: f64,
}

impl LogReport {
    fn of(a: &LogStats, b: &LogStats, committed: u64) -> Self {
        let per = committed.max(1) as f64;
        let records = b.records - a.records;
        let operation_records = b.operation_records - a.operation_records;
        let bytes = b.bytes - a.bytes;
        LogReport {
            records,
            operation_records,
            bytes,
            flushes: b.flushes - a.flushes,
            records_per_committed: records as f64 / per,
            operation_records_per_committed: operation_records as f64 / per,
            bytes_per_committed: bytes as f64 / per,
        }
    }
}
