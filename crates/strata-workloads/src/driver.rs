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
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
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
    /// New memory the process took in the interval (growth of its resident
    /// set), per committed transaction: the study's "memory allocated per
    /// transaction" (Wu et al., Figures 19 and 21). Negative when memory
    /// went back to the OS; 0 where the OS does not say.
    pub new_bytes_per_txn: f64,
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

/// Runs `workers` for the warm-up and the measured window.
pub fn run<W: Worker>(
    cfg: &DriverConfig,
    types: &[&'static str],
    workers: Vec<W>,
    observer: &mut dyn Observer,
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
    observer.start("run", total.as_millis() as u64, "ms");
    let mut series = Vec::new();
    let mut ab = Vec::new();
    let (locals, measured) = std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .into_iter()
            .zip(&counters)
            .map(|(w, counter)| {
                let phase = &phase;
                s.spawn(move || work(w, types.len(), phase, &counter.0))
            })
            .collect();
        let started = Instant::now();
        let mut measure_started = started;
        if !cfg.warmup.is_zero() {
            tick_until(started + cfg.warmup, started, observer, &handles, |_| {});
            measure_started = Instant::now();
            phase.store(MEASURE, Ordering::SeqCst);
        }
        let end = measure_started + cfg.duration;
        let mut next_sample = measure_started + Duration::from_secs(1);
        let mut last_sum = 0u64;
        let mut last_resident = if cfg.series { resident_bytes() } else { None };
        let sum = |c: &[Padded]| c.iter().map(|p| p.0.load(Ordering::Relaxed)).sum::<u64>();
        let mut ab_last = (measure_started, 0u64);
        if cfg.ab_interval.is_some() {
            strata::ab::set(ab_phase(0));
        }
        tick_until(end, started, observer, &handles, |now| {
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
                let grown = match (resident, last_resident) {
                    (Some(now), Some(before)) => now as f64 - before as f64,
                    _ => 0.0,
                };
                series.push(SeriesPoint {
                    t_s: next_sample.duration_since(measure_started).as_secs_f64(),
                    committed_per_s: committed as f64,
                    new_bytes_per_txn: grown / committed.max(1) as f64,
                });
                last_resident = resident;
                last_sum = total;
                next_sample += Duration::from_secs(1);
            }
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
    Ok(report)
}

/// Sleeps until `until` in short ticks, updating the observer and calling
/// `each` with the time; returns early if a worker ended (only on an error).
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

fn tick_until<T>(
    until: Instant,
    started: Instant,
    observer: &mut dyn Observer,
    workers: &[std::thread::ScopedJoinHandle<'_, T>],
    mut each: impl FnMut(Instant),
) {
    loop {
        let now = Instant::now();
        observer.set(now.duration_since(started).as_millis() as u64);
        each(now);
        if now >= until || interrupted() || workers.iter().any(|w| w.is_finished()) {
            return;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(20)));
    }
}

fn work<W: Worker>(
    mut w: W,
    ntypes: usize,
    phase: &AtomicU8,
    counter: &AtomicU64,
) -> Result<Local, WorkloadError> {
    let mut local = Local {
        committed: vec![0; ntypes],
        aborts: vec![BTreeMap::new(); ntypes],
        latency: (0..ntypes).map(|_| latency_histogram()).collect(),
    };
    let mut committed = 0u64;
    loop {
        let ph = phase.load(Ordering::Relaxed);
        if ph == STOP {
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
                continue;
            }
            Outcome::Pending => continue,
        };
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

    #[test]
    fn counts_commits_aborts_and_series_per_type() {
        let cfg = DriverConfig {
            warmup: Duration::from_millis(10),
            duration: Duration::from_millis(1100),
            series: true,
            huge_pages: Default::default(),
            ab_interval: None,
        };
        let r = run(&cfg, &["a", "b"], vec![Fake(0), Fake(0)], &mut Quiet).unwrap();
        assert!(r.committed > 0 && r.aborted > 0);
        // One abort per two commits, give or take the steps cut by the phase flips.
        let ratio = r.committed as f64 / r.aborted as f64;
        assert!((1.9..2.1).contains(&ratio), "{ratio}");
        assert_eq!(r.of_type("a").unwrap().aborted, 0);
        assert_eq!(r.of_type("b").unwrap().committed, 0);
        assert_eq!(r.aborts_by_reason["write-write"], r.aborted);
        assert_eq!(r.series.len(), 1, "{:?}", r.series);
        assert!(r.series[0].committed_per_s > 0.0);
        assert!(r.series[0].new_bytes_per_txn.is_finite());
        assert!(r.latency.p99_us >= r.latency.p50_us);
    }

    /// Commits every step while `strata::ab` is on, every other step while
    /// it is off: an "on" interval commits twice what its neighbour does,
    /// whatever the machine's speed.
    struct Switched(u64);
    impl Worker for Switched {
        fn step(&mut self) -> Result<(usize, Outcome), WorkloadError> {
            self.0 += 1;
            std::thread::sleep(Duration::from_micros(200));
            Ok(if strata::ab::on() || self.0.is_multiple_of(2) {
                (0, Outcome::Committed)
            } else {
                (0, Outcome::Aborted("write-write"))
            })
        }
    }

    /// The driver flips the switch every interval, in the off, on, on, off
    /// order, reports the on/off ratio of neighbouring intervals, and
    /// leaves the switch off.
    #[test]
    fn ab_runs_flip_the_switch_and_pair_neighbouring_intervals() {
        assert_eq!(
            (0..8).map(ab_phase).collect::<Vec<_>>(),
            [false, true, true, false, false, true, true, false]
        );
        let cfg = DriverConfig {
            warmup: Duration::from_millis(10),
            duration: Duration::from_millis(800),
            series: false,
            huge_pages: Default::default(),
            ab_interval: Some(Duration::from_millis(100)),
        };
        let r = run(&cfg, &["a"], vec![Switched(0)], &mut Quiet).unwrap();
        let ab = r.ab.expect("pairs");
        assert!(ab.pairs >= 2, "{ab:?}");
        assert!((1.5..2.7).contains(&ab.on_over_off_median), "{ab:?}");
        assert!(
            ab.on_over_off_q1 <= ab.on_over_off_median
                && ab.on_over_off_median <= ab.on_over_off_q3
        );
        assert!(!strata::ab::on());
        // Without an interval: no figures, and the switch stays off.
        let cfg = DriverConfig {
            ab_interval: None,
            ..cfg
        };
        assert!(run(&cfg, &["a"], vec![Switched(0)], &mut Quiet)
            .unwrap()
            .ab
            .is_none());
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
        let cfg = DriverConfig {
            warmup: Duration::ZERO,
            duration: Duration::from_millis(300),
            series: false,
            huge_pages: Default::default(),
            ab_interval: None,
        };
        let r = run(&cfg, &["a"], vec![Pipelined(None)], &mut Quiet).unwrap();
        // 300 ms of 20 ms steps, less the first (pending) one.
        assert!((8..=15).contains(&r.committed), "{}", r.committed);
        assert_eq!(r.aborted, 0);
        // Two steps from the acknowledged commit's start to its ack.
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
