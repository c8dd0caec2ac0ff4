//! The long-lived-transaction workload of the vDriver paper (§5): a
//! sysbench-like OLTP of short update transactions over a few tables, with
//! long-lived readers that join at a set time and leave at another, and the
//! figures that show what they cost: version space and the longest chain
//! over time.
//!
//! ```text
//!  t=0 ──── window 1: start ─────── end ──── window 2: start ─── end ── duration
//!  updaters: uniform keys ───────── (zipf_at: Zipfian keys, exponent theta) ──>
//!  K LLTs:        begin_read_only; reads; commit   begin; reads; commit
//!  sampler (every second): committed/s, version bytes (in-row / off-row),
//!                          longest chain, live versions, LLTs open
//!  end: chain-length histogram, versions reclaimed / pruned in dead zones
//! ```
//!
//! The clock is wall time; tests pace a run by updates instead
//! ([`run_paced`], [`Pace::Updates`]): the same run whatever the machine's
//! speed.
//!
//! Tables `llt0..` hold `rows` rows each: an integer key, an integer
//! counter and a text payload of about `row_bytes` bytes. An update
//! transaction increments the counter of `updates_per_txn` random rows.
//! In-row bytes are `Stats::main_table_bytes` (every version of the
//! append-only schemes; the master and newest header of the in-place ones),
//! off-row bytes `Stats::version_store_bytes`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use strata::{key, row, Database, Error, Schema, Table, Type, Value};

use crate::driver::{self, DriverConfig, Observer, Outcome, Report, Worker};
use crate::rng::Rng;
use crate::WorkloadError;

/// What to run (see the module doc).
#[derive(Debug, Clone, Serialize)]
pub struct LltConfig {
    pub tables: usize,
    pub rows: u64,
    pub row_bytes: usize,
    /// Update threads.
    pub threads: usize,
    pub updates_per_txn: usize,
    pub duration: Duration,
    /// Long-lived read transactions (0: the LLT-free baseline).
    pub llts: usize,
    /// When the LLTs are open, (begin, end) from the start of the run, in
    /// order (the paper opens them once per phase).
    pub llt_windows: Vec<(Duration, Duration)>,
    /// Whether the LLT threads hold one snapshot for the whole window (true:
    /// the LLTs) or read each row in its own short read-only transaction:
    /// the LLT-free baseline with the same threads, reads and CPU load, so
    /// that on a machine with few cores the comparison isolates what the
    /// long snapshot costs from what an extra reading thread costs.
    pub long_snapshots: bool,
    /// When the key choice turns Zipfian (None: uniform throughout).
    pub zipf_at: Option<Duration>,
    /// The Zipfian exponent, 0 to 2 (the paper sweeps up to 1.2).
    pub theta: f64,
    pub seed: u64,
    /// Whether each sample measures the version space (bytes in all,
    /// in-row and off-row, live versions, the longest chain) by walking
    /// every chain (`Database::stats`). Off, samples carry throughput
    /// alone: a figure that judges throughput only turns it off, because
    /// on a machine with few cores the walk (seconds under a horizon
    /// collector with an LLT open, whose chains are long) takes a core
    /// from the updaters, and takes more of it from the designs that keep
    /// longer chains.
    pub walk_space: bool,
}

impl Default for LltConfig {
    fn default() -> Self {
        LltConfig {
            tables: 4,
            rows: 1_000,
            row_bytes: 256,
            threads: 2,
            updates_per_txn: 1,
            duration: Duration::from_secs(20),
            llts: 1,
            llt_windows: vec![(Duration::from_secs(4), Duration::from_secs(16))],
            long_snapshots: true,
            zipf_at: None,
            theta: 0.9,
            seed: 1,
            walk_space: true,
        }
    }
}

impl LltConfig {
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |m: String| Err(WorkloadError::Config(m));
        if self.tables == 0 || self.rows == 0 {
            return bad("--tables and --rows must be at least 1".into());
        }
        if self.threads == 0 {
            return bad("--threads must be at least 1".into());
        }
        if self.updates_per_txn == 0 {
            return bad("--updates-per-txn must be at least 1".into());
        }
        if self.duration.is_zero() {
            return bad("--duration must be positive".into());
        }
        if self.llts > 0 {
            if self.llt_windows.is_empty() {
                return bad("LLTs need at least one window (--llt-start, --llt-end)".into());
            }
            let mut after = Duration::ZERO;
            for &(start, end) in &self.llt_windows {
                if !(start >= after && start < end && end <= self.duration) {
                    return bad(format!(
                        "each LLT window must start before it ends, after the previous one, \
                         within the run: {start:?}-{end:?} (previous ended {after:?}, \
                         --duration {:?})",
                        self.duration
                    ));
                }
                after = end;
            }
        }
        if !(0.0..=2.0).contains(&self.theta) {
            return bad(format!("--theta must be in 0..=2, got {}", self.theta));
        }
        if self.zipf_at.is_some_and(|z| z > self.duration) {
            return bad("--zipf-at is past the end of the run".into());
        }
        Ok(())
    }

    fn keys(&self) -> u64 {
        self.tables as u64 * self.rows
    }
}

/// Zipf's law over `n` ranks by inverse CDF: exact for any exponent (the
/// YCSB generator in `rng` needs theta below 1), one binary search a draw.
pub struct ZipfCdf {
    cdf: Vec<f64>,
}

impl ZipfCdf {
    pub fn new(n: u64, theta: f64) -> Self {
        let mut cdf = Vec::with_capacity(n as usize);
        let mut sum = 0.0;
        for r in 1..=n {
            sum += 1.0 / (r as f64).powf(theta);
            cdf.push(sum);
        }
        cdf.iter_mut().for_each(|c| *c /= sum);
        ZipfCdf { cdf }
    }

    /// A rank, 0 (the most frequent) to n - 1.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let u = rng.next_f64();
        (self.cdf.partition_point(|&c| c < u) as u64).min(self.cdf.len() as u64 - 1)
    }
}

/// One second of the run.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub t_s: f64,
    pub committed_per_s: f64,
    pub version_bytes: u64,
    pub in_row_bytes: u64,
    pub off_row_bytes: u64,
    pub live_versions: u64,
    pub longest_chain: u64,
    pub llts_open: usize,
    /// Whether the space fields above were measured (`LltConfig::
    /// walk_space`); when not, they are 0.
    pub walked: bool,
}

impl Sample {
    /// A second's throughput with the space fields unmeasured (0).
    pub fn throughput_only(t_s: f64, committed_per_s: f64, llts_open: usize) -> Sample {
        Sample {
            t_s,
            committed_per_s,
            version_bytes: 0,
            in_row_bytes: 0,
            off_row_bytes: 0,
            live_versions: 0,
            longest_chain: 0,
            llts_open,
            walked: false,
        }
    }
}

/// What an LLT run measured.
#[derive(Debug, Clone, Serialize)]
pub struct LltReport {
    pub run: Report,
    pub samples: Vec<Sample>,
    /// Rows by chain length at the end of the run (LLTs gone).
    pub chain_lengths_end: BTreeMap<u64, u64>,
    /// Rows by chain length in the last sample with the LLTs open.
    pub chain_lengths_during_llt: BTreeMap<u64, u64>,
    pub versions_reclaimed: u64,
    pub versions_pruned_in_dead_zones: u64,
    /// SIRO's pruning breakdown at the end (zeros on other storage).
    pub siro: SiroBreakdown,
    /// Rows the LLTs read.
    pub llt_reads: u64,
    /// Figures over the samples with every LLT open (or, without LLTs,
    /// over the same window): the largest version space and chain, and the
    /// mean throughput.
    pub window: Window,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Window {
    pub max_version_bytes: u64,
    pub max_longest_chain: u64,
    pub mean_committed_per_s: f64,
}

fn table_name(i: usize) -> String {
    format!("llt{i}")
}

/// Creates and fills the tables.
pub fn load(db: &Database, cfg: &LltConfig) -> Result<Vec<Table>, WorkloadError> {
    let pad = "x".repeat(cfg.row_bytes.saturating_sub(16));
    let mut tables = Vec::new();
    for i in 0..cfg.tables {
        let t = db.create_table(
            Schema::new(table_name(i))
                .column("k", Type::Int)
                .column("n", Type::Int)
                .column("pad", Type::Text)
                .primary_key(&["k"]),
        )?;
        for chunk in (0..cfg.rows).collect::<Vec<_>>().chunks(1_000) {
            db.run(|x| {
                for &k in chunk {
                    x.insert(&t, row![k as i64, 0, pad.as_str()])?;
                }
                Ok(())
            })?;
        }
        tables.push(t);
    }
    Ok(tables)
}

/// The run's clock (see [`run_paced`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// Wall time: the benchmark.
    Wall,
    /// Update transactions run (committed or not), `per_second` of them
    /// making a second; a GC pass every `gc_every` of them. The updaters
    /// pause at each point where something is due (an LLT window opens or
    /// closes, a sample, a GC pass) until it is done, so a run does the
    /// same work in the same order whatever the machine's speed: for tests.
    Updates { per_second: u64, gc_every: u64 },
}

/// Where a paced run is: update transactions begun (`issued`) and done,
/// and how many may begin before the next point where something is due.
#[derive(Default)]
struct Gate {
    issued: AtomicU64,
    done: AtomicU64,
    committed: AtomicU64,
    allowed: AtomicU64,
}

/// The run's clock: wall time since the start, or the updates done.
struct Clock<'a> {
    started: Instant,
    pace: Pace,
    gate: &'a Gate,
}

impl Clock<'_> {
    /// Updates that make `d` of a paced run.
    fn ticks(per_second: u64, d: Duration) -> u64 {
        (d.as_secs_f64() * per_second as f64).round() as u64
    }

    fn now(&self) -> Duration {
        match self.pace {
            Pace::Wall => self.started.elapsed(),
            Pace::Updates { per_second, .. } => Duration::from_secs_f64(
                self.gate.done.load(Ordering::SeqCst) as f64 / per_second as f64,
            ),
        }
    }

    fn reached(&self, t: Duration) -> bool {
        match self.pace {
            Pace::Wall => self.started.elapsed() >= t,
            Pace::Updates { per_second, .. } => {
                self.gate.done.load(Ordering::SeqCst) >= Self::ticks(per_second, t)
            }
        }
    }

    /// Sleeps until `t` on this clock, or `stop`.
    fn sleep_until(&self, t: Duration, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) && !self.reached(t) {
            match self.pace {
                Pace::Wall => {
                    let now = self.started.elapsed();
                    std::thread::sleep(t.saturating_sub(now).min(Duration::from_millis(20)));
                }
                Pace::Updates { .. } => std::thread::sleep(Duration::from_micros(100)),
            }
        }
    }
}

struct Updater<'a> {
    db: &'a Database,
    tables: &'a [Table],
    cfg: &'a LltConfig,
    zipf: &'a ZipfCdf,
    clock: &'a Clock<'a>,
    rng: Rng,
}

impl Updater<'_> {
    fn pick(&mut self) -> (usize, i64) {
        let zipf = self.cfg.zipf_at.is_some_and(|z| self.clock.reached(z));
        let n = if zipf {
            self.zipf.sample(&mut self.rng)
        } else {
            self.rng.range(0, self.cfg.keys() - 1)
        };
        // Rank r is row r / tables of table r % tables: hot rows spread
        // over every table.
        (
            (n % self.cfg.tables as u64) as usize,
            (n / self.cfg.tables as u64) as i64,
        )
    }

    /// Paced: takes a place among the updates allowed so far, or says
    /// (after a short sleep) that the run is paused.
    fn admitted(&self) -> bool {
        let g = self.clock.gate;
        loop {
            let t = g.issued.load(Ordering::SeqCst);
            if t >= g.allowed.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_micros(50));
                return false;
            }
            if g.issued
                .compare_exchange(t, t + 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return true;
            }
        }
    }
}

impl Worker for Updater<'_> {
    fn step(&mut self) -> Result<(usize, Outcome), WorkloadError> {
        let paced = self.clock.pace != Pace::Wall;
        if paced && !self.admitted() {
            return Ok((0, Outcome::Pending));
        }
        let picks: Vec<(usize, i64)> = (0..self.cfg.updates_per_txn).map(|_| self.pick()).collect();
        let mut x = self.db.begin()?;
        let res = (|| {
            for &(t, k) in &picks {
                let t = &self.tables[t];
                let n = x
                    .get(t, &key![k])?
                    .map_or(0, |r| r[1].as_int().unwrap_or(0));
                x.update(t, &key![k], &[("n", Value::Int(n + 1))])?;
            }
            x.commit()
        })();
        if paced {
            let g = self.clock.gate;
            if res.is_ok() {
                g.committed.fetch_add(1, Ordering::SeqCst);
            }
            g.done.fetch_add(1, Ordering::SeqCst);
        }
        match res {
            Ok(()) => Ok((0, Outcome::Committed)),
            Err(Error::Conflict(k)) => Ok((0, Outcome::Aborted(k.name()))),
            Err(e) => Err(e.into()),
        }
    }
}

/// Loads the tables, then runs the updaters, the LLTs and the sampler.
pub fn run(
    db: &Database,
    cfg: &LltConfig,
    observer: &mut dyn Observer,
) -> Result<LltReport, WorkloadError> {
    run_paced(db, cfg, Pace::Wall, observer)
}

/// [`run`] on the clock `pace`: wall time, or updates counted as time.
pub fn run_paced(
    db: &Database,
    cfg: &LltConfig,
    pace: Pace,
    observer: &mut dyn Observer,
) -> Result<LltReport, WorkloadError> {
    cfg.validate()?;
    if let Pace::Updates {
        per_second,
        gc_every,
    } = pace
    {
        if per_second == 0 || gc_every == 0 {
            return Err(WorkloadError::Config(
                "a paced run needs updates per second and per GC pass".into(),
            ));
        }
    }
    let tables = load(db, cfg)?;
    let zipf = ZipfCdf::new(cfg.keys(), cfg.theta);
    let gate = Gate::default();
    let clock = Clock {
        started: Instant::now(),
        pace,
        gate: &gate,
    };
    let clock = &clock;
    let stop = AtomicBool::new(false);
    let ended = Arc::new(AtomicBool::new(false));
    let open = AtomicUsize::new(0);
    let llt_reads = AtomicU64::new(0);
    let driver_cfg = DriverConfig {
        warmup: Duration::ZERO,
        duration: cfg.duration,
        series: pace == Pace::Wall,
        huge_pages: Default::default(),
        ab_interval: None,
    };
    let (run, mut samples, during) = std::thread::scope(|s| {
        let llts: Vec<_> = (0..cfg.llts)
            .map(|i| {
                let (tables, stop, open, llt_reads) = (&tables, &stop, &open, &llt_reads);
                s.spawn(move || -> Result<(), WorkloadError> {
                    // If the thread fails (an error, a panic), a paced
                    // run's coordinator stops waiting for it (disarmed once
                    // its windows are done).
                    let failed = RaiseOnDrop(stop);
                    let mut rng = Rng::for_thread(cfg.seed ^ 0x11, i);
                    for &(start, end) in &cfg.llt_windows {
                        clock.sleep_until(start, stop);
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let mut x = match cfg.long_snapshots {
                            true => Some(db.begin_read_only()?),
                            false => None,
                        };
                        // Open once the first read is done (a paced run
                        // goes on only then).
                        let mut counted = false;
                        loop {
                            let t = &tables[rng.range(0, cfg.tables as u64 - 1) as usize];
                            let k = rng.range(0, cfg.rows - 1) as i64;
                            if cfg.long_snapshots {
                                let x = x.as_mut().expect("open for the window");
                                std::hint::black_box(x.get(t, &key![k])?);
                            } else {
                                let mut short = db.begin_read_only()?;
                                std::hint::black_box(short.get(t, &key![k])?);
                                short.commit()?;
                            }
                            llt_reads.fetch_add(1, Ordering::Relaxed);
                            if !counted {
                                open.fetch_add(1, Ordering::SeqCst);
                                counted = true;
                            }
                            if clock.reached(end) || stop.load(Ordering::Relaxed) {
                                break;
                            }
                            // A reader, not a spinner: leave the cores to
                            // the updaters.
                            std::thread::sleep(Duration::from_micros(200));
                        }
                        if let Some(x) = x.take() {
                            x.commit()?;
                        }
                        open.fetch_sub(1, Ordering::SeqCst);
                    }
                    std::mem::forget(failed);
                    Ok(())
                })
            })
            .collect();
        let (stop, gate, open) = (&stop, &gate, &open);
        let take_sample = move |t_s: f64, committed_per_s: f64, during: &mut BTreeMap<u64, u64>| {
            if !cfg.walk_space {
                return Sample::throughput_only(t_s, committed_per_s, open.load(Ordering::SeqCst));
            }
            // Stats walk every chain: under a horizon collector and an LLT
            // that takes seconds.
            let st = db.stats();
            let llts_open = open.load(Ordering::SeqCst);
            if llts_open == cfg.llts && cfg.llts > 0 {
                *during = st.chain_lengths.clone();
            }
            Sample {
                t_s,
                committed_per_s,
                version_bytes: st.version_bytes,
                in_row_bytes: st.main_table_bytes,
                off_row_bytes: st.version_store_bytes,
                live_versions: st.live_versions,
                longest_chain: st.longest_chain,
                llts_open,
                walked: true,
            }
        };
        let ended_flag = Arc::clone(&ended);
        let sampler = s.spawn(move || -> Result<_, WorkloadError> {
            // However the coordinator ends, the driver's run ends with it.
            let _ended = (pace != Pace::Wall).then(|| RaiseOnDrop(&ended_flag));
            let mut out = Vec::new();
            let mut during = BTreeMap::new();
            match pace {
                Pace::Wall => {
                    let mut next = Duration::from_secs(1);
                    while !stop.load(Ordering::SeqCst) {
                        clock.sleep_until(next, stop);
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        // A sample carries its own time (a stats walk may
                        // take long), and the next one is due a whole
                        // second after it.
                        let mut sample = take_sample(0.0, 0.0, &mut during);
                        let t = clock.now();
                        sample.t_s = t.as_secs_f64();
                        out.push(sample);
                        next = Duration::from_secs(t.as_secs() + 1);
                    }
                }
                Pace::Updates {
                    per_second,
                    gc_every,
                } => {
                    paced(
                        db,
                        cfg,
                        gate,
                        per_second,
                        gc_every,
                        open,
                        stop,
                        |t_s, committed| out.push(take_sample(t_s, committed, &mut during)),
                    )?;
                }
            }
            Ok((out, during))
        });
        let workers: Vec<Updater> = (0..cfg.threads)
            .map(|i| Updater {
                db,
                tables: &tables,
                cfg,
                zipf: &zipf,
                clock,
                rng: Rng::for_thread(cfg.seed, i),
            })
            .collect();
        let run = match pace {
            Pace::Wall => driver::run(&driver_cfg, &["update"], workers, observer),
            Pace::Updates { .. } => {
                let until = driver::Stop::Raised(Arc::clone(&ended));
                driver::run_until(&driver_cfg, &until, &["update"], workers, observer)
            }
        };
        stop.store(true, Ordering::SeqCst);
        let llts: Result<Vec<()>, WorkloadError> = llts
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| WorkloadError::Engine("an LLT panicked".into()))?
            })
            .collect();
        let sampled = sampler
            .join()
            .map_err(|_| WorkloadError::Engine("the sampler panicked".into()))
            .and_then(|r| r);
        match sampled {
            Ok((samples, during)) => (run.and_then(|r| llts.map(|_| r)), samples, during),
            Err(e) => (Err(e), Vec::new(), BTreeMap::new()),
        }
    });
    let run = run?;
    if pace == Pace::Wall {
        // The driver's throughput of the second each sample fell in; a
        // sample taken as the run stopped has none and is dropped.
        samples.retain_mut(|s| {
            let second = s.t_s.ceil().max(1.0);
            match run.series.iter().find(|p| p.t_s >= second - 1e-6) {
                Some(p) => {
                    s.committed_per_s = p.committed_per_s;
                    true
                }
                None => false,
            }
        });
    }
    let end = db.stats();
    let window = window(cfg, &samples);
    Ok(LltReport {
        run,
        samples,
        chain_lengths_end: end.chain_lengths,
        chain_lengths_during_llt: during,
        versions_reclaimed: end.versions_reclaimed,
        versions_pruned_in_dead_zones: end.versions_pruned_in_dead_zones,
        siro: SiroBreakdown::from(&end.siro),
        llt_reads: llt_reads.into_inner(),
        window,
    })
}

/// Raises its flag when dropped.
struct RaiseOnDrop<'a>(&'a AtomicBool);

impl Drop for RaiseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A paced run's coordinator: lets the updaters run up to each point where
/// something is due, waits for them to get there, and does it: the LLT
/// windows' ends and starts (waiting for the LLT threads to close and
/// open), a GC pass, a sample (once a paced second, with that second's
/// commits). Ends at the run's end, or when `stop` is raised (an updater
/// or an LLT failed).
#[allow(clippy::too_many_arguments)]
fn paced(
    db: &Database,
    cfg: &LltConfig,
    gate: &Gate,
    per_second: u64,
    gc_every: u64,
    open: &AtomicUsize,
    stop: &AtomicBool,
    mut sample: impl FnMut(f64, f64),
) -> Result<(), WorkloadError> {
    let ticks = |d: Duration| Clock::ticks(per_second, d);
    let total = ticks(cfg.duration);
    let seconds = cfg.duration.as_secs();
    let mut points: Vec<u64> = (1..seconds.max(1))
        .map(|k| k * per_second)
        .chain(
            cfg.llt_windows
                .iter()
                .take(if cfg.llts > 0 { usize::MAX } else { 0 })
                .flat_map(|&(a, b)| [ticks(a), ticks(b)]),
        )
        .chain((1..=total / gc_every).map(|k| k * gc_every))
        .chain([total])
        .filter(|&p| p > 0 && p <= total)
        .collect();
    points.sort_unstable();
    points.dedup();
    let mut last_committed = 0;
    for p in points {
        gate.allowed.store(p, Ordering::SeqCst);
        // Every update up to the point done (the LLTs read meanwhile).
        let wait = |done: &dyn Fn() -> bool| {
            while !done() {
                if stop.load(Ordering::SeqCst) {
                    return false;
                }
                std::thread::sleep(Duration::from_micros(100));
            }
            true
        };
        if !wait(&|| gate.done.load(Ordering::SeqCst) >= p) {
            return Ok(());
        }
        if cfg.llts > 0 {
            for &(_, b) in &cfg.llt_windows {
                if ticks(b) == p && !wait(&|| open.load(Ordering::SeqCst) == 0) {
                    return Ok(());
                }
            }
            for &(a, _) in &cfg.llt_windows {
                if ticks(a) == p && !wait(&|| open.load(Ordering::SeqCst) == cfg.llts) {
                    return Ok(());
                }
            }
        }
        if p % gc_every == 0 {
            db.collect_garbage();
        }
        if p % per_second == 0 && p < total {
            let committed = gate.committed.load(Ordering::SeqCst);
            sample(
                p as f64 / per_second as f64,
                (committed - last_committed) as f64,
            );
            last_committed = committed;
        }
    }
    Ok(())
}

/// SIRO's pruning breakdown (`strata::SiroStats`), per class (HOT, COLD,
/// LLT): where each version that left its row went (vDriver Fig. 15).
#[derive(Debug, Clone, Default, Serialize)]
pub struct SiroBreakdown {
    /// Dead when it left the row: never copied (first prune).
    pub pruned_at_relocation: [u64; 3],
    /// Cut with its whole dead segment (segment pruning).
    pub segment_pruned: [u64; 3],
    /// Unlinked one by one by the dead-zone row step (cleaning).
    pub cleaned: [u64; 3],
    /// Still off-row at the end.
    pub kept: [u64; 3],
    /// What kept the versions copied off-row (`SiroStats::relocated_for`):
    /// the oldest snapshot, a younger one, the zones' floor.
    pub relocated_for: [u64; 3],
}

impl From<&strata::SiroStats> for SiroBreakdown {
    fn from(s: &strata::SiroStats) -> Self {
        SiroBreakdown {
            pruned_at_relocation: s.pruned_at_relocation,
            segment_pruned: s.segment_pruned,
            cleaned: s.cleaned,
            kept: s.kept(),
            relocated_for: s.relocated_for,
        }
    }
}

/// The LLT windows' figures: the samples taken with the LLTs open, less
/// the first second of each window (they were just beginning); without
/// LLTs, the samples in the same time ranges, so a baseline run compares
/// like for like.
fn window(cfg: &LltConfig, samples: &[Sample]) -> Window {
    let inside: Vec<&Sample> = samples
        .iter()
        .filter(|s| {
            cfg.llt_windows.iter().any(|&(start, end)| {
                s.t_s > start.as_secs_f64() + 1.0 && s.t_s <= end.as_secs_f64()
            })
        })
        .collect();
    if inside.is_empty() {
        return Window::default();
    }
    Window {
        max_version_bytes: inside.iter().map(|s| s.version_bytes).max().unwrap_or(0),
        max_longest_chain: inside.iter().map(|s| s.longest_chain).max().unwrap_or(0),
        mean_committed_per_s: inside.iter().map(|s| s.committed_per_s).sum::<f64>()
            / inside.len() as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata::{GcPolicy, Options};

    #[test]
    fn zipf_cdf_follows_the_law_for_exponents_past_one() {
        let z = ZipfCdf::new(100, 1.2);
        let mut rng = Rng::new(3);
        let mut counts = [0u32; 100];
        for _ in 0..200_000 {
            counts[z.sample(&mut rng) as usize] += 1;
        }
        let h: f64 = (1..=100).map(|r| 1.0 / (r as f64).powf(1.2)).sum();
        let p0 = 1.0 / h;
        let got = counts[0] as f64 / 200_000.0;
        assert!((got - p0).abs() < 0.01, "rank 0: {got} vs {p0}");
        assert!(counts[0] > 2 * counts[1] && counts[1] > counts[9]);
    }

    #[test]
    fn bad_settings_are_config_errors() {
        let ok = LltConfig::default();
        assert!(ok.validate().is_ok());
        for bad in [
            LltConfig {
                threads: 0,
                ..ok.clone()
            },
            LltConfig {
                llt_windows: vec![(Duration::from_secs(4), Duration::from_secs(4))],
                ..ok.clone()
            },
            LltConfig {
                llt_windows: vec![(Duration::from_secs(4), ok.duration + Duration::from_secs(1))],
                ..ok.clone()
            },
            LltConfig {
                // Overlapping windows.
                llt_windows: vec![
                    (Duration::from_secs(4), Duration::from_secs(10)),
                    (Duration::from_secs(8), Duration::from_secs(12)),
                ],
                ..ok.clone()
            },
            LltConfig {
                llt_windows: vec![],
                ..ok.clone()
            },
            LltConfig {
                theta: 3.0,
                ..ok.clone()
            },
        ] {
            assert!(
                matches!(bad.validate(), Err(WorkloadError::Config(_))),
                "{bad:?}"
            );
        }
    }

    /// A short run: the LLT keeps the horizon collector's chains growing,
    /// and dead zones keep them short (the figure `strata bench llt` draws).
    /// Paced by updates, with a GC pass every 50 of them instead of every
    /// 20 ms: the same run, samples and passes whatever the machine's
    /// speed (on the wall clock a loaded machine took fewer samples, or
    /// none inside the window, and ran fewer passes per update).
    #[test]
    fn an_llt_grows_chains_under_vac_not_under_dead_zones() {
        let cfg = LltConfig {
            tables: 2,
            rows: 100,
            row_bytes: 64,
            threads: 1,
            duration: Duration::from_secs(4),
            llt_windows: vec![(Duration::from_millis(500), Duration::from_secs(4))],
            ..LltConfig::default()
        };
        let pace = Pace::Updates {
            per_second: 2000,
            gc_every: 50,
        };
        let open = |gc| Database::open(Options::default().gc(gc).gc_interval(None)).unwrap();
        let mut chains = Vec::new();
        for gc in [GcPolicy::Vacuum, GcPolicy::DeadZone] {
            let r = run_paced(&open(gc), &cfg, pace, &mut crate::Quiet).unwrap();
            // Every update ran: 4 paced seconds of 2,000 (one thread: none
            // conflicts).
            assert_eq!((r.run.committed, r.run.aborted), (8000, 0), "{gc}");
            assert!(r.llt_reads > 0);
            // A sample each paced second, the LLT open in the last two.
            let at: Vec<(f64, usize)> = r.samples.iter().map(|s| (s.t_s, s.llts_open)).collect();
            assert_eq!(at, [(1.0, 1), (2.0, 1), (3.0, 1)], "{gc}");
            chains.push(r.window.max_longest_chain);
        }
        // Dead zones keep the LLT's version, the newest, and what arrived
        // since the last pass (50 updates over 200 rows); VAC keeps
        // everything since the LLT began (2,500 updates by the last
        // sample). (43 and 2 here, the same on every run.)
        assert!(chains[0] > 10 * chains[1], "VAC under an LLT: {chains:?}");
        // The baseline: the same reader reads in short transactions, and
        // VAC's chains stay as short as without any reader.
        let short = LltConfig {
            long_snapshots: false,
            ..cfg
        };
        let r = run_paced(&open(GcPolicy::Vacuum), &short, pace, &mut crate::Quiet).unwrap();
        assert!(r.llt_reads > 0);
        assert!(
            10 * r.window.max_longest_chain < chains[0],
            "short readers pin nothing for long: {} vs {chains:?}",
            r.window.max_longest_chain
        );
    }

    /// Samples walk the chains for the space columns only when asked:
    /// without the walk they carry throughput and mark themselves
    /// unmeasured, with it the LLT's versions show.
    #[test]
    fn samples_walk_the_chains_only_when_asked() {
        let cfg = LltConfig {
            tables: 1,
            rows: 50,
            row_bytes: 64,
            threads: 1,
            duration: Duration::from_secs(3),
            llt_windows: vec![(Duration::from_millis(500), Duration::from_secs(3))],
            ..LltConfig::default()
        };
        let pace = Pace::Updates {
            per_second: 500,
            gc_every: 50,
        };
        for walk_space in [true, false] {
            let db =
                Database::open(Options::default().gc(GcPolicy::Vacuum).gc_interval(None)).unwrap();
            let cfg = LltConfig {
                walk_space,
                ..cfg.clone()
            };
            let r = run_paced(&db, &cfg, pace, &mut crate::Quiet).unwrap();
            assert_eq!(r.samples.len(), 2);
            for s in &r.samples {
                assert_eq!(s.walked, walk_space);
                assert_eq!(s.committed_per_s, 500.0);
                assert_eq!(s.version_bytes > 0, walk_space, "{s:?}");
                assert_eq!(s.longest_chain > 1, walk_space, "{s:?}");
            }
            assert_eq!(r.chain_lengths_during_llt.is_empty(), !walk_space);
        }
    }
}
