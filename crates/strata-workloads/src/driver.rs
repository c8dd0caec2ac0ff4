//! The benchmark driver: closed-loop worker threads, a warm-up, a measured
//! window, and the figures every run reports.
//!
//! ```text
//!   t=0          warm-up            measure (duration)          stop
//!    |-----------------------|-----------------------------------|
//!    workers: loop { t0 = now; (type, outcome) = step(); record if measuring }
//!    main:    ticks the observer; samples the commit counters once a second
//!             (throughput-over-time series) and, for an A/B run, every
//!             interval, flipping `strata::ab` (see [`AbReport`]); flips
//!             the phase flag
//! ```
//!
//! A worker is anything that runs one transaction per [`Worker::step`] and
//! says which transaction type it ran and whether it committed. A
//! transaction that loses a conflict counts as aborted, with its reason, and
//! is not retried: the next step draws fresh input. Latency is that of
//! committed transactions, per type and overall (`hdrhistogram`, 3
//! significant figures); a pipelined client (one that keeps commits in
//! flight, `Outcome::CommittedSince`) reports when the acknowledged one
//! began. Every thread keeps its own counters; they are
//! merged after the run, so the driver adds no shared cache line to the hot
//! path except one per-thread counter the main thread reads once a second.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::WorkloadError;

/// How a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Committed,
    /// Rolled back, with a short stable reason (a `ConflictKind` name, or
    /// e.g. `"user-rollback"` for TPC-C's intended NewOrder rollbacks).
    Aborted(&'static str),
    /// A pipelined client acknowledges, at this step, a commit an earlier
    /// step ran, which started at the instant given: counted as committed,
    /// its latency running from that instant.
    CommittedSince(Instant),
    /// A pipelined client's commit is in flight and nothing was
    /// acknowledged at this step: nothing is counted.
    Pending,
}

/// One closed-loop client.
pub trait Worker: Send {
    /// Runs one transaction; returns its type (an index into the type names
    /// given to [`run`]) and how it ended. `Err` stops the whole run.
    fn step(&mut self) -> Result<(usize, Outcome), WorkloadError>;
}

/// Hooks for progress display; every method has a no-op default.
pub trait Observer {
    /// A phase begins: `total` steps of `unit`.
    fn start(&mut self, _phase: &str, _total: u64, _unit: &str) {}
    fn set(&mut self, _pos: u64) {}
    /// A run's measured window begins (after its warm-up); `finish` ends
    /// it. Counters taken at the two bound what the report measured.
    fn measure(&mut self) {}
    fn finish(&mut self) {}
}

/// An observer that shows nothing.
pub struct Quiet;
impl Observer for Quiet {}

/// Waits for a load's worker threads, moving `observer` to `done` as they
/// go; the first worker's error (or panic) is the load's.
pub(crate) fn join_loaders(
    workers: Vec<std::thread::ScopedJoinHandle<'_, Result<(), WorkloadError>>>,
    done: &AtomicU64,
    observer: &mut dyn Observer,
) -> Result<(), WorkloadError> {
    while !workers.iter().all(|w| w.is_finished()) {
        observer.set(done.load(Ordering::Relaxed));
        std::thread::sleep(Duration::from_millis(20));
    }
    workers.into_iter().try_for_each(|w| {
        w.join()
            .map_err(|_| WorkloadError::Engine("a load worker panicked".into()))?
    })
}

/// Timing of a run.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    pub warmup: Duration,
    pub duration: Duration,
    /// Record committed transactions per second, once a second.
    pub series: bool,
    /// Huge pages for memory first touched during the run
    /// (`crate::huge_pages`).
    pub huge_pages: crate::huge_pages::HugePages,
    /// Flip `strata::ab`'s switch every this long during the measured
    /// window and compare neighbouring intervals ([`AbReport`]).
    pub ab_interval: Option<Duration>,
}

/// What ends the measured window ([`run_until`]).
#[derive(Debug, Clone, Default)]
pub enum Stop {
    /// [`DriverConfig::duration`] after it began: benchmarks.
    #[default]
    Elapsed,
    /// Once every worker has had this many transactions counted in it
    /// (committed or aborted; a pending step counts nothing): the same work
    /// whatever the machine's speed, for tests. `duration` is ignored.
    Transactions(u64),
    /// Once the flag is raised (by a worker or by the caller, on a state it
    /// observed). `duration` is ignored.
    Raised(Arc<AtomicBool>),
}

/// One interval of an A/B run: whether `strata::ab` was on, and what
/// committed in it.
#[derive(Debug, Clone, Copy)]
pub struct AbInterval {
    pub on: bool,
    pub committed: u64,
    pub secs: f64,
}

/// The switch's setting for interval `k` of an A/B run: off, on, on, off,
/// ... so that neighbouring pairs come in both orders (a drift over the
/// run, memory growing say, then cancels instead of favouring one side).
pub fn ab_phase(k: usize) -> bool {
    matches!(k % 4, 1 | 2)
}

/// What an A/B run measured (see the `strata::ab` module): the ratio of
/// each "on" interval's throughput to its neighbouring "off" one's.
#[derive(Debug, Clone, Serialize)]
pub struct AbReport {
    pub interval_ms: u64,
    pub pairs: usize,
    pub on_over_off_median: f64,
    /// First and third quartiles of the pairs' ratios.
    pub on_over_off_q1: f64,
    pub on_over_off_q3: f64,
    pub on_committed_per_s: f64,
    pub off_committed_per_s: f64,
}

impl AbReport {
    /// Pairs intervals (0, 1), (2, 3), ... (see [`ab_phase`]); `None`
    /// without a complete pair.
    pub fn of(interval_ms: u64, intervals: &[AbInterval]) -> Option<AbReport> {
        let rate = |i: &AbInterval| i.committed as f64 / i.secs.max(1e-9);
        let mut ratios = Vec::new();
        let (mut on, mut off) = (Vec::new(), Vec::new());
        for pair in intervals.chunks_exact(2) {
            let (a, b) = if pair[0].on {
                (&pair[0], &pair[1])
            } else {
                (&pair[1], &pair[0])
            };
            if a.on == b.on || rate(b) == 0.0 {
                continue;
            }
            ratios.push(rate(a) / rate(b));
            on.push(rate(a));
            off.push(rate(b));
        }
        if ratios.is_empty() {
            return None;
        }
        Some(AbReport {
            interval_ms,
            pairs: ratios.len(),
            on_over_off_median: quantile(&mut ratios, 0.5),
            on_over_off_q1: quantile(&mut ratios, 0.25),
            on_over_off_q3: quantile(&mut ratios, 0.75),
            on_committed_per_s: quantile(&mut on, 0.5),
            off_committed_per_s: quantile(&mut off, 0.5),
        })
    }
}

/// The `q` quantile of `v` (nearest rank; sorts `v`); 0 when empty. The
/// median of an even count is the upper middle value.
pub(crate) fn quantile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// Latency percentiles of committed transactions, in microseconds.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Latency {
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
}

impl Latency {
    fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Latency::default();
        }
        let us = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
        Latency {
            p50_us: us(0.5),
            p99_us: us(0.99),
            p999_us: us(0.999),
            max_us: h.max() as f64 / 1e3,
            mean_us: h.mean() / 1e3,
        }
    }
}

/// Figures of one transaction type.
#[derive(Debug, Clone, Serialize)]
pub struct TypeReport {
    pub name: &'static str,
    pub committed: u64,
    pub aborted: u64,
    pub committed_per_s: f64,
    pub aborted_per_s: f64,
    pub aborts_by_reason: BTreeMap<&'static str, u64>,
    pub latency: Latency,
}

/// One point of the throughput-over-time series.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SeriesPoint {
    /// Seconds since the measured window began (end of the interval).
    pub t_s: f64,
    pub committed_per_s: f64,
    /// New memory the run took in the interval, per committed transaction:
    /// the study's "memory allocated per transaction" (Wu et al., Figures
    /// 19 and 21). With an engine's own accounting ([`MemoryFlow`], given
    /// to [`run_metered`]): the bytes its version store allocated less the
    /// bytes garbage collection freed. Without one: the growth of the
    /// process's resident set (negative when memory went back to the OS; 0
    /// where the OS does not say), which allocators that reuse freed memory
    /// keep near 0 whatever the collector does.
    pub new_bytes_per_txn: f64,
    /// Of that, the bytes allocated and freed, per committed transaction
    /// (`None` without an engine's accounting).
    pub allocated_bytes_per_txn: Option<f64>,
    pub freed_bytes_per_txn: Option<f64>,
}

/// Bytes an engine's version store has allocated and its garbage
/// collection has freed since it opened (for Strata: `Stats::
/// storage_bytes_allocated` and `Stats::gc_bytes_freed`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryFlow {
    pub allocated: u64,
    pub freed: u64,
}

/// The process's resident memory in bytes (Linux: `VmRSS` of
/// `/proc/self/status`), if the OS says.
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// What a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub measured_s: f64,
    pub committed: u64,
    pub aborted: u64,
    pub committed_per_s: f64,
    pub aborted_per_s: f64,
    /// Aborted / (committed + aborted).
    pub abort_rate: f64,
    pub aborts_by_reason: BTreeMap<&'static str, u64>,
    pub latency: Latency,
    pub per_type: Vec<TypeReport>,
    /// Empty unless [`DriverConfig::series`] was set.
    pub series: Vec<SeriesPoint>,
    /// With [`DriverConfig::ab_interval`] and at least one pair.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ab: Option<AbReport>,
    /// An A/B run's intervals, in order, that `ab` was computed from (not
    /// serialized).
    #[serde(skip)]
    pub ab_intervals: Vec<AbInterval>,
}

impl Report {
    /// The report of the type named `name`, if any.
    pub fn of_type(&self, name: &str) -> Option<&TypeReport> {
        self.per_type.iter().find(|t| t.name == name)
    }
}

/// Nanoseconds from 1 ns to an hour, 3 significant figures.
fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// Per-thread, per-type results of the measured window.
struct Local {
    committed: Vec<u64>,
    aborts: Vec<BTreeMap<&'static str, u64>>,
    latency: Vec<Histogram<u64>>,
}

/// A counter on its own cache line (read by the main thread for the series).
#[repr(align(128))]
#[derive(Default)]
struct Padded(AtomicU64);

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// Runs `workers` for the warm-up and the measured window
/// ([`DriverConfig::duration`] long).
pub fn run<W: Worker>(
    cfg: &DriverConfig,
    types: &[&'static str],
    workers: Vec<W>,
    observer: &mut dyn Observer,
) -> Result<Report, WorkloadError> {
    run_until(cfg, &Stop::Elapsed, types, workers, observer)
}

/// [`run`] with a measured window that ends at `stop`.
pub fn run_until<W: Worker>(
    cfg: &DriverConfig,
    stop: &Stop,
    types: &[&'static str],
    workers: Vec<W>,
    observer: &mut dyn Observer,
) -> Result<Report, WorkloadError> {
    run_metered(cfg, stop, types, workers, observer, None)
}

/// [`run_until`], with the series' memory read from the engine's own
/// accounting (`flow`, read once a second) instead of the resident set.
pub fn run_metered<W: Worker>(
    cfg: &DriverConfig,
    stop: &Stop,
    types: &[&'static str],
    workers: Vec<W>,
    observer: &mut dyn Observer,
    flow: Option<&(dyn Fn() -> MemoryFlow + Sync)>,
) -> Result<Report, WorkloadError> {
    if workers.is_empty() {
        return Err(WorkloadError::Config(
            "at least one worker thread is needed".into(),
        ));
    }
    // Dropped when this function returns: the run phase's memory only.
    let _pages = crate::huge_pages::RunPhase::begin(cfg.huge_pages)?;
    let phase = AtomicU8::new(if cfg.warmup.is_zero() {
        MEASURE
    } else {
        WARMUP
    });
    let counters: Vec<Padded> = (0..workers.len()).map(|_| Padded::default()).collect();
    let total = cfg.warmup + cfg.duration;
    let quota = match stop {
        Stop::Transactions(n) => Some(*n),
        Stop::Elapsed | Stop::Raised(_) => None,
    };
    match stop {
        Stop::Elapsed => observer.start("run", total.as_millis() as u64, "ms"),
        _ => observer.start("run", 0, "ms"),
    }
    let mut series = Vec::new();
    let mut ab = Vec::new();
    if cfg.warmup.is_zero() {
        observer.measure();
    }
    let (locals, measured) = std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .into_iter()
            .zip(&counters)
            .map(|(w, counter)| {
                let phase = &phase;
                s.spawn(move || work(w, types.len(), phase, &counter.0, quota))
            })
            .collect();
        let started = Instant::now();
        let mut measure_started = started;
        if !cfg.warmup.is_zero() {
            tick_until(started + cfg.warmup, started, observer, |_| {
                handles.iter().any(|h| h.is_finished())
            });
            observer.measure();
            measure_started = Instant::now();
            phase.store(MEASURE, Ordering::SeqCst);
        }
        // Counted or raised stops end the window themselves; the clock's
        // end is then out of reach (a year).
        let end = match stop {
            Stop::Elapsed => measure_started + cfg.duration,
            _ => measure_started + Duration::from_secs(365 * 24 * 3600),
        };
        let mut next_sample = measure_started + Duration::from_secs(1);
        let mut last_sum = 0u64;
        let mut last_resident = if cfg.series { resident_bytes() } else { None };
        let mut last_flow = if cfg.series { flow.map(|f| f()) } else { None };
        let sum = |c: &[Padded]| c.iter().map(|p| p.0.load(Ordering::Relaxed)).sum::<u64>();
        let mut ab_last = (measure_started, 0u64);
        if cfg.ab_interval.is_some() {
            strata::ab::set(ab_phase(0));
        }
        tick_until(end, started, observer, |now| {
            let ended = match stop {
                // A worker ends early only on an error: the run ends.
                Stop::Elapsed => handles.iter().any(|h| h.is_finished()),
                Stop::Raised(flag) => {
                    flag.load(Ordering::SeqCst) || handles.iter().any(|h| h.is_finished())
                }
                // Each worker stops at its quota (one that failed stops
                // early, and is reported at the join).
                Stop::Transactions(_) => handles.iter().all(|h| h.is_finished()),
            };
            if let Some(every) = cfg.ab_interval {
                if now >= ab_last.0 + every {
                    let total = sum(&counters);
                    ab.push(AbInterval {
                        on: ab_phase(ab.len()),
                        committed: total - ab_last.1,
                        secs: now.duration_since(ab_last.0).as_secs_f64(),
                    });
                    strata::ab::set(ab_phase(ab.len()));
                    ab_last = (now, total);
                }
            }
            if cfg.series && now >= next_sample {
                let total = sum(&counters);
                let resident = resident_bytes();
                let committed = total - last_sum;
                let per = |bytes: f64| bytes / committed.max(1) as f64;
                let flow_now = flow.map(|f| f());
                let (grown, allocated, freed) = match (flow_now, last_flow) {
                    (Some(now), Some(before)) => {
                        let allocated = now.allocated.saturating_sub(before.allocated) as f64;
                        let freed = now.freed.saturating_sub(before.freed) as f64;
                        (allocated - freed, Some(per(allocated)), Some(per(freed)))
                    }
                    _ => match (resident, last_resident) {
                        (Some(now), Some(before)) => (now as f64 - before as f64, None, None),
                        _ => (0.0, None, None),
                    },
                };
                series.push(SeriesPoint {
                    t_s: next_sample.duration_since(measure_started).as_secs_f64(),
                    committed_per_s: committed as f64,
                    new_bytes_per_txn: per(grown),
                    allocated_bytes_per_txn: allocated,
                    freed_bytes_per_txn: freed,
                });
                last_flow = flow_now;
                last_resident = resident;
                last_sum = total;
                next_sample += Duration::from_secs(1);
            }
            ended
        });
        phase.store(STOP, Ordering::SeqCst);
        strata::ab::set(false);
        let measured = measure_started.elapsed();
        observer.finish();
        let locals = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| WorkloadError::Engine("a benchmark worker panicked".into()))?
            })
            .collect::<Result<Vec<_>, _>>();
        (locals, measured)
    });
    let mut report = merge(types, locals?, measured, series);
    report.ab = cfg
        .ab_interval
        .and_then(|every| AbReport::of(every.as_millis() as u64, &ab));
    report.ab_intervals = ab;
    Ok(report)
}

/// Sleeps until `until` in short ticks, updating the observer and calling
/// `each` with the time; returns early once `each` says the phase ended
/// (a worker ended on an error, a [`Stop`] was reached).
/// Set by [`interrupt`] (Ctrl-C in the CLI): every running driver ends its
/// current phase now and reports what it measured so far.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Asks every running driver to stop and report what it measured so far.
/// Safe to call from a signal handler's thread.
pub fn interrupt() {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Whether [`interrupt`] was called.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

fn tick_until(
    until: Instant,
    started: Instant,
    observer: &mut dyn Observer,
    mut each: impl FnMut(Instant) -> bool,
) {
    loop {
        let now = Instant::now();
        observer.set(now.duration_since(started).as_millis() as u64);
        let ended = each(now);
        if ended || now >= until || interrupted() {
            return;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(20)));
    }
}

/// One worker's loop; with a `quota` ([`Stop::Transactions`]) it stops
/// once that many of its transactions were counted in the window.
fn work<W: Worker>(
    mut w: W,
    ntypes: usize,
    phase: &AtomicU8,
    counter: &AtomicU64,
    quota: Option<u64>,
) -> Result<Local, WorkloadError> {
    let mut local = Local {
        committed: vec![0; ntypes],
        aborts: vec![BTreeMap::new(); ntypes],
        latency: (0..ntypes).map(|_| latency_histogram()).collect(),
    };
    let mut committed = 0u64;
    let mut counted = 0u64;
    loop {
        let ph = phase.load(Ordering::Relaxed);
        if ph == STOP || quota.is_some_and(|q| counted >= q) {
            break;
        }
        let started = Instant::now();
        let (ty, outcome) = w.step()?;
        if ph != MEASURE {
            continue;
        }
        let ty = ty.min(ntypes - 1);
        let since = match outcome {
            Outcome::Committed => started,
            Outcome::CommittedSince(t) => t,
            Outcome::Aborted(reason) => {
                *local.aborts[ty].entry(reason).or_default() += 1;
                counted += 1;
                continue;
            }
            Outcome::Pending => continue,
        };
        counted += 1;
        let ns = since.elapsed().as_nanos() as u64;
        local.committed[ty] += 1;
        local.latency[ty].saturating_record(ns.max(1));
        committed += 1;
        // Only this thread writes the counter: a plain store suffices.
        counter.store(committed, Ordering::Relaxed);
    }
    Ok(local)
}

fn merge(
    types: &[&'static str],
    locals: Vec<Local>,
    measured: Duration,
    series: Vec<SeriesPoint>,
) -> Report {
    let secs = measured.as_secs_f64().max(1e-9);
    let mut all = latency_histogram();
    let mut per_type = Vec::with_capacity(types.len());
    let mut aborts_by_reason = BTreeMap::new();
    for (i, &name) in types.iter().enumerate() {
        let mut h = latency_histogram();
        let mut committed = 0;
        let mut reasons: BTreeMap<&'static str, u64> = BTreeMap::new();
        for l in &locals {
            committed += l.committed[i];
            h.add(&l.latency[i]).expect("same-bounds histograms merge");
            for (&r, &n) in &l.aborts[i] {
                *reasons.entry(r).or_default() += n;
                *aborts_by_reason.entry(r).or_default() += n;
            }
        }
        all.add(&h).expect("same-bounds histograms merge");
        let aborted = reasons.values().sum::<u64>();
        per_type.push(TypeReport {
            name,
            committed,
            aborted,
            committed_per_s: committed as f64 / secs,
            aborted_per_s: aborted as f64 / secs,
            aborts_by_reason: reasons,
            latency: Latency::of(&h),
        });
    }
    let committed: u64 = per_type.iter().map(|t| t.committed).sum();
    let aborted: u64 = per_type.iter().map(|t| t.aborted).sum();
    Report {
        measured_s: secs,
        committed,
        aborted,
        committed_per_s: committed as f64 / secs,
        aborted_per_s: aborted as f64 / secs,
        abort_rate: if committed + aborted == 0 {
            0.0
        } else {
            aborted as f64 / (committed + aborted) as f64
        },
        aborts_by_reason,
        latency: Latency::of(&all),
        per_type,
        series,
        ab: None,
        ab_intervals: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    /// The resident set is read, and grows when memory is touched.
    #[test]
    fn resident_bytes_grow_with_touched_memory() {
        let Some(before) = super::resident_bytes() else {
            return; // not Linux
        };
        let v = vec![1u8; 64 << 20];
        let after = super::resident_bytes().unwrap();
        assert!(after >= before + (32 << 20), "{before} -> {after}");
        drop(std::hint::black_box(v));
    }

    use super::*;

    /// Commits type 0, aborts type 1 every third step.
    struct Fake(u64);
    impl Worker for Fake {
        fn step(&mut self) -> Result<(usize, Outcome), WorkloadError> {
            self.0 += 1;
            std::hint::black_box(&self.0);
            Ok(if self.0.is_multiple_of(3) {
                (1, Outcome::Aborted("write-write"))
            } else {
                (0, Outcome::Committed)
            })
        }
    }

    fn timed(warmup_ms: u64, duration_ms: u64) -> DriverConfig {
        DriverConfig {
            warmup: Duration::from_millis(warmup_ms),
            duration: Duration::from_millis(duration_ms),
            series: false,
            huge_pages: Default::default(),
            ab_interval: None,
        }
    }

    /// Counts per type and reason, by a run of a fixed number of
    /// transactions per worker (whatever the machine's speed); and the
    /// once-a-second series of a timed run.
    #[test]
    fn counts_commits_aborts_and_series_per_type() {
        let cfg = timed(10, 0);
        let stop = Stop::Transactions(1500);
        let r = run_until(&cfg, &stop, &["a", "b"], vec![Fake(0), Fake(0)], &mut Quiet).unwrap();
        // Each worker's 1,500 counted steps (wherever the warm-up left its
        // cycle) hold exactly 500 multiples of three: its aborts.
        assert_eq!((r.committed, r.aborted), (2000, 1000), "{r:?}");
        assert_eq!(r.of_type("a").unwrap().aborted, 0);
        assert_eq!(r.of_type("b").unwrap().committed, 0);
        assert_eq!(r.aborts_by_reason["write-write"], r.aborted);
        assert!(r.latency.p99_us >= r.latency.p50_us);
        assert!(r.series.is_empty(), "no series asked for");
        // The series: a point once a second of the measured window. 1.1 s
        // ends after the first second, and the driver's loop takes at most
        // one more point before it sees the end, however late it ticks.
        let cfg = DriverConfig {
            series: true,
            ..timed(10, 1100)
        };
        let r = run(&cfg, &["a", "b"], vec![Fake(0), Fake(0)], &mut Quiet).unwrap();
        assert!((1..=2).contains(&r.series.len()), "{:?}", r.series);
        let in_series: f64 = r.series.iter().map(|p| p.committed_per_s).sum();
        assert!(in_series <= r.committed as f64, "{:?}", r.series);
        assert!(r.series.iter().all(|p| p.new_bytes_per_txn.is_finite()));
        assert!(r.series.iter().all(|p| p.allocated_bytes_per_txn.is_none()));
    }

    /// With an engine's accounting, the series' memory is its flow: bytes
    /// allocated less bytes freed in each interval, per committed
    /// transaction (not the resident set, which a reusing allocator keeps
    /// flat).
    #[test]
    fn a_metered_series_reports_the_engines_memory_flow() {
        // Every call: 300 more bytes allocated and 100 more freed.
        let calls = AtomicU64::new(0);
        let flow = || {
            let k = calls.fetch_add(1, Ordering::Relaxed);
            MemoryFlow {
                allocated: 300 * k,
                freed: 100 * k,
            }
        };
        let cfg = DriverConfig {
            series: true,
            ..timed(10, 1100)
        };
        let workers = vec![Fake(0), Fake(0)];
        let r = run_metered(
            &cfg,
            &Stop::Elapsed,
            &["a", "b"],
            workers,
            &mut Quiet,
            Some(&flow),
        )
        .unwrap();
        assert!(!r.series.is_empty(), "{r:?}");
        for p in &r.series {
            let committed = p.committed_per_s.max(1.0);
            assert_eq!(p.allocated_bytes_per_txn, Some(300.0 / committed), "{p:?}");
            assert_eq!(p.freed_bytes_per_txn, Some(100.0 / committed), "{p:?}");
            assert_eq!(p.new_bytes_per_txn, 200.0 / committed, "{p:?}");
        }
    }

    /// Commits every step while `strata::ab` is on, every other step while
    /// it is off, and counts its commits by the switch it saw. After it has
    /// seen the switch change four times (off, on, off, on, off: seven
    /// intervals closed), it raises `done` and commits nothing more.
    struct Switched {
        n: u64,
        last: bool,
        changes: u32,
        seen_on: u64,
        seen_off: u64,
        done: Arc<AtomicBool>,
        tally: Arc<std::sync::Mutex<(u64, u64)>>,
    }
    impl Worker for Switched {
        fn step(&mut self) -> Result<(usize, Outcome), WorkloadError> {
            let on = strata::ab::on();
            if on != self.last {
                self.changes += 1;
                self.last = on;
            }
            if self.changes >= 4 {
                *self.tally.lock().unwrap() = (self.seen_on, self.seen_off);
                self.done.store(true, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(1));
                return Ok((0, Outcome::Pending));
            }
            self.n += 1;
            std::thread::sleep(Duration::from_micros(200));
            Ok(if on || self.n.is_multiple_of(2) {
                if on {
                    self.seen_on += 1;
                } else {
                    self.seen_off += 1;
                }
                (0, Outcome::Committed)
            } else {
                (0, Outcome::Aborted("write-write"))
            })
        }
    }

    /// The driver flips the switch every interval, in the off, on, on, off
    /// order, and counts each interval's commits under the phase it set:
    /// checked against what the worker counted under the switch it saw,
    /// which only the steps straddling a flip may move to the neighbouring
    /// interval (one per boundary), whatever the machine's speed. The run
    /// ends on the worker's observation, not on time; the pairing and the
    /// ratios are `ab_report_takes_on_over_off_in_both_orders`'.
    #[test]
    fn ab_runs_flip_the_switch_and_pair_neighbouring_intervals() {
        assert_eq!(
            (0..8).map(ab_phase).collect::<Vec<_>>(),
            [false, true, true, false, false, true, true, false]
        );
        let cfg = DriverConfig {
            ab_interval: Some(Duration::from_millis(100)),
            ..timed(0, 0)
        };
        let done = Arc::new(AtomicBool::new(false));
        let tally = Arc::new(std::sync::Mutex::new((0, 0)));
        let w = Switched {
            n: 0,
            last: false,
            changes: 0,
            seen_on: 0,
            seen_off: 0,
            done: done.clone(),
            tally: tally.clone(),
        };
        let r = run_until(&cfg, &Stop::Raised(done), &["a"], vec![w], &mut Quiet).unwrap();
        assert!(!strata::ab::on(), "the switch is left off");
        let iv = &r.ab_intervals;
        assert!(iv.len() >= 7, "{iv:?}");
        for (k, i) in iv.iter().enumerate() {
            assert_eq!(i.on, ab_phase(k), "interval {k}: {iv:?}");
        }
        let (seen_on, seen_off) = *tally.lock().unwrap();
        assert_eq!(seen_on + seen_off, r.committed, "{r:?}");
        let sum = |on: bool| {
            iv.iter()
                .filter(|i| i.on == on)
                .map(|i| i.committed)
                .sum::<u64>()
        };
        // One commit may move across each boundary, and one may come after
        // the last interval closed.
        let slack = iv.len() as u64 + 1;
        for (on, seen) in [(true, seen_on), (false, seen_off)] {
            let counted = sum(on);
            assert!(
                counted.abs_diff(seen) <= slack,
                "on {on}: the driver counted {counted}, the worker {seen}: {iv:?}"
            );
        }
        if let Some(ab) = &r.ab {
            assert!(ab.pairs >= 1 && ab.pairs <= iv.len() / 2, "{ab:?}");
            assert!(
                ab.on_over_off_q1 <= ab.on_over_off_median
                    && ab.on_over_off_median <= ab.on_over_off_q3
            );
        }
        // Without an interval: no figures, and the switch stays off.
        let cfg = DriverConfig {
            ab_interval: None,
            ..cfg
        };
        let r = run_until(
            &cfg,
            &Stop::Transactions(10),
            &["a"],
            vec![Fake(0)],
            &mut Quiet,
        );
        let r = r.unwrap();
        assert!(r.ab.is_none() && r.ab_intervals.is_empty());
        assert!(!strata::ab::on());
    }

    /// Each pair's ratio is on over off in whichever order the pair ran;
    /// a steady drift over the run cancels between the two orders.
    #[test]
    fn ab_report_takes_on_over_off_in_both_orders() {
        let intervals: Vec<AbInterval> = (0..8)
            .map(|k| {
                let base = 1000.0 - 10.0 * k as f64;
                let on = ab_phase(k);
                AbInterval {
                    on,
                    committed: (base * if on { 1.1 } else { 1.0 }) as u64,
                    secs: 0.5,
                }
            })
            .collect();
        let ab = AbReport::of(500, &intervals).unwrap();
        assert_eq!(ab.pairs, 4);
        assert!((1.08..1.12).contains(&ab.on_over_off_median), "{ab:?}");
        assert!(ab.on_committed_per_s > ab.off_committed_per_s);
        // Rates, not counts: a longer interval does not look faster.
        let uneven = [
            AbInterval {
                on: false,
                committed: 1000,
                secs: 1.0,
            },
            AbInterval {
                on: true,
                committed: 1000,
                secs: 0.5,
            },
        ];
        assert!((AbReport::of(500, &uneven).unwrap().on_over_off_median - 2.0).abs() < 1e-9);
        assert!(AbReport::of(500, &intervals[..1]).is_none());
    }

    /// A pipelined client with two commits in flight: every step but the
    /// first acknowledges the previous step's commit, which began 20 ms
    /// before this step did.
    struct Pipelined(Option<Instant>);
    impl Worker for Pipelined {
        fn step(&mut self) -> Result<(usize, Outcome), WorkloadError> {
            let began = self.0.replace(Instant::now());
            std::thread::sleep(Duration::from_millis(20));
            Ok((0, began.map_or(Outcome::Pending, Outcome::CommittedSince)))
        }
    }

    /// An acknowledgement counts once, with its latency from the start of
    /// the commit it acknowledges; a pending step counts nothing.
    #[test]
    fn pipelined_acknowledgements_count_from_their_commits_start() {
        let stop = Stop::Transactions(10);
        let r = run_until(
            &timed(0, 0),
            &stop,
            &["a"],
            vec![Pipelined(None)],
            &mut Quiet,
        )
        .unwrap();
        // Ten acknowledgements counted (eleven steps: the first is pending).
        assert_eq!((r.committed, r.aborted), (10, 0));
        // Two steps of at least 20 ms each (a sleep never ends early) from
        // the acknowledged commit's start to its ack.
        assert!(r.latency.p50_us >= 40_000.0, "{:?}", r.latency);
    }

    struct Failing;
    impl Worker for Failing {
        fn step(&mut self) -> Result<(usize, Outcome), WorkloadError> {
            Err(WorkloadError::Engine("boom".into()))
        }
    }

    #[test]
    fn an_engine_error_ends_the_run_early() {
        let cfg = DriverConfig {
            warmup: Duration::ZERO,
            duration: Duration::from_secs(30),
            series: false,
            huge_pages: Default::default(),
            ab_interval: None,
        };
        let started = Instant::now();
        let r = run(&cfg, &["a"], vec![Failing], &mut Quiet);
        assert!(matches!(r, Err(WorkloadError::Engine(m)) if m == "boom"));
        assert!(started.elapsed() < Duration::from_secs(20));
    }
}
