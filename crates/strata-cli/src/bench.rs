//! `strata bench ycsb`: a YCSB-style key-value benchmark.
//!
//! ```text
//!   load: threads insert disjoint key ranges in 1,000-row transactions
//!   run:  threads loop { begin; ops_per_txn x (read | update one column) on
//!         Zipfian keys; commit }  (warm-up first, then the measured window)
//! ```
//!
//! A transaction that loses a conflict counts as aborted and is not retried:
//! the next one draws fresh keys. Latency is that of committed transactions.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;
use strata::{ConflictKind, Database, Error, Options, Schema, Table, Type, Value};

use crate::progress::Progress;
use crate::{UsageError, YcsbArgs};

/// Rows per load transaction.
const LOAD_BATCH: u64 = 1_000;

/// SplitMix64: tiny, fast and good enough for choosing keys.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// YCSB's Zipfian generator (Gray et al., SIGMOD 1994): O(n) set-up for
/// zeta(n), then O(1) per draw. Rank 0 is the hottest key.
#[derive(Clone, Debug)]
pub struct Zipfian {
    n: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    half_pow_theta: f64,
}

impl Zipfian {
    /// `theta` in [0, 1); 0 is uniform.
    pub fn new(n: u64, theta: f64) -> Self {
        assert!(n > 0 && (0.0..1.0).contains(&theta));
        let zeta = |m: u64| (1..=m).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
        let zetan = zeta(n);
        let zeta2 = zeta(2.min(n));
        let eta = if n > 1 {
            (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan)
        } else {
            0.0
        };
        Zipfian {
            n,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta,
            half_pow_theta: 0.5f64.powf(theta),
        }
    }

    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let u = rng.next_f64();
        if self.theta == 0.0 {
            return ((u * self.n as f64) as u64).min(self.n - 1);
        }
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta {
            return 1.min(self.n - 1);
        }
        let r = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n - 1)
    }
}

fn validate(a: &YcsbArgs) -> Result<(), UsageError> {
    let bad = |m: String| Err(UsageError(m));
    if a.records == 0 {
        return bad("--records must be at least 1".into());
    }
    if a.threads == 0 || a.threads > 1024 {
        return bad(format!("--threads must be in 1..=1024, got {}", a.threads));
    }
    if !(a.duration > 0.0 && a.duration.is_finite()) {
        return bad(format!(
            "--duration must be a positive number of seconds, got {}",
            a.duration
        ));
    }
    if !(a.warmup >= 0.0 && a.warmup.is_finite()) {
        return bad(format!(
            "--warmup must be zero or more seconds, got {}",
            a.warmup
        ));
    }
    if a.ops_per_txn == 0 {
        return bad("--ops-per-txn must be at least 1".into());
    }
    if !(0.0..=1.0).contains(&a.read_ratio) {
        return bad(format!(
            "--read-ratio must be in [0, 1], got {}",
            a.read_ratio
        ));
    }
    if !(0.0..1.0).contains(&a.theta) {
        return bad(format!("--theta must be in [0, 1), got {}", a.theta));
    }
    if a.columns == 0 || a.columns > 1000 {
        return bad(format!("--columns must be in 1..=1000, got {}", a.columns));
    }
    if a.records > i64::MAX as u64 {
        return bad("--records is too large".into());
    }
    Ok(())
}

/// Nanoseconds from 1 ns to an hour, 3 significant figures.
fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// Per-thread results of the measured window.
struct Local {
    commits: u64,
    aborts: [u64; 6],
    latency_ns: Histogram<u64>,
}

#[derive(Serialize)]
struct Latency {
    p50_us: f64,
    p99_us: f64,
    p999_us: f64,
    max_us: f64,
    mean_us: f64,
}

#[derive(Serialize)]
struct Memory {
    rows: u64,
    bytes_per_row: f64,
    version_bytes: u64,
    main_table_bytes: u64,
    version_store_bytes: u64,
    header_bytes: u64,
    index_bytes: u64,
    live_versions: u64,
    longest_chain: u64,
    avg_chain_length: f64,
    versions_reclaimed: u64,
}

#[derive(Serialize)]
struct Summary {
    benchmark: &'static str,
    engine: &'static str,
    protocol: &'static str,
    storage: &'static str,
    gc: &'static str,
    records: u64,
    threads: usize,
    duration_s: f64,
    warmup_s: f64,
    ops_per_txn: usize,
    read_ratio: f64,
    theta: f64,
    columns: usize,
    seed: u64,
    load_s: f64,
    measured_s: f64,
    committed: u64,
    aborted: u64,
    committed_per_s: f64,
    aborted_per_s: f64,
    abort_rate: f64,
    aborts_by_reason: BTreeMap<&'static str, u64>,
    latency: Latency,
    memory: Memory,
    durability: &'static str,
    /// Write-ahead log figures over the warm-up and the measured run.
    log: Option<LogSummary>,
}

#[derive(Serialize)]
struct LogSummary {
    bytes_per_txn: f64,
    txns_per_fsync: f64,
    checkpoints: u64,
}

/// Runs the benchmark; `Err` for invalid settings.
pub fn ycsb(a: &YcsbArgs) -> Result<ExitCode, UsageError> {
    validate(a)?;
    let durability = match (a.durability, &a.wal_dir) {
        (crate::DurabilityArg::None, None) => strata::Durability::None,
        (crate::DurabilityArg::None, Some(_)) => {
            return Err(UsageError(
                "--wal-dir needs --durability group or async".into(),
            ))
        }
        (_, None) => {
            return Err(UsageError(
                "--durability group|async needs --wal-dir <DIR>".into(),
            ))
        }
        (d, Some(dir)) => {
            // A benchmark starts from an empty database.
            if dir.exists() {
                std::fs::remove_dir_all(dir).map_err(|e| {
                    UsageError(format!("cannot empty --wal-dir {}: {e}", dir.display()))
                })?;
            }
            strata::Durability::Wal {
                dir: dir.clone(),
                sync: if d == crate::DurabilityArg::Group {
                    strata::SyncPolicy::GroupCommit
                } else {
                    strata::SyncPolicy::Async
                },
            }
        }
    };
    let db = Database::open(
        Options::default()
            .protocol(a.protocol)
            .version_storage(a.storage)
            .gc(a.gc)
            .gc_threads(a.gc_threads)
            .gc_every_commits(a.gc_every)
            .durability(durability),
    )
    .map_err(|e| UsageError(e.to_string()))?;
    let mut schema = Schema::new("usertable").column("key", Type::Int);
    for c in 0..a.columns {
        schema = schema.column(format!("field{c}"), Type::Int);
    }
    let table = db
        .create_table(schema.primary_key(&["key"]))
        .map_err(|e| UsageError(e.to_string()))?;

    let load_started = Instant::now();
    if let Err(e) = load(&db, &table, a) {
        eprintln!("error: loading failed: {e}");
        return Ok(ExitCode::FAILURE);
    }
    let load_s = load_started.elapsed().as_secs_f64();

    let log_before = db.log_stats().unwrap_or_default();
    let (locals, measured) = match run(&db, &table, a) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: engine error during the run: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let mut hist = latency_histogram();
    let mut commits = 0;
    let mut aborts = [0u64; 6];
    for l in &locals {
        commits += l.commits;
        for (t, x) in aborts.iter_mut().zip(l.aborts) {
            *t += x;
        }
        hist.add(&l.latency_ns)
            .expect("auto-resizing histograms merge");
    }
    let aborted: u64 = aborts.iter().sum();
    let secs = measured.as_secs_f64();
    let st = db.stats();
    let log = db.log_stats().map(|after| {
        let records = after.records - log_before.records;
        LogSummary {
            bytes_per_txn: (after.bytes - log_before.bytes) as f64 / records.max(1) as f64,
            txns_per_fsync: records as f64 / (after.flushes - log_before.flushes).max(1) as f64,
            checkpoints: after.checkpoints,
        }
    });
    let us = |q: f64| hist.value_at_quantile(q) as f64 / 1e3;
    let summary = Summary {
        benchmark: "ycsb",
        engine: match a.engine {
            crate::EngineArg::Strata => "strata",
            crate::EngineArg::Noop => "noop",
        },
        protocol: a.protocol.name(),
        storage: a.storage.name(),
        gc: a.gc.name(),
        records: a.records,
        threads: a.threads,
        duration_s: a.duration,
        warmup_s: a.warmup,
        ops_per_txn: a.ops_per_txn,
        read_ratio: a.read_ratio,
        theta: a.theta,
        columns: a.columns,
        seed: a.seed,
        load_s,
        measured_s: secs,
        committed: commits,
        aborted,
        committed_per_s: commits as f64 / secs,
        aborted_per_s: aborted as f64 / secs,
        abort_rate: if commits + aborted == 0 {
            0.0
        } else {
            aborted as f64 / (commits + aborted) as f64
        },
        aborts_by_reason: ConflictKind::ALL
            .iter()
            .zip(aborts)
            .map(|(k, n)| (k.name(), n))
            .collect(),
        latency: Latency {
            p50_us: us(0.5),
            p99_us: us(0.99),
            p999_us: us(0.999),
            max_us: hist.max() as f64 / 1e3,
            mean_us: hist.mean() / 1e3,
        },
        memory: Memory {
            rows: st.rows,
            bytes_per_row: st.bytes_per_row(),
            version_bytes: st.version_bytes,
            main_table_bytes: st.main_table_bytes,
            version_store_bytes: st.version_store_bytes,
            header_bytes: st.header_bytes,
            index_bytes: st.index_bytes,
            live_versions: st.live_versions,
            longest_chain: st.longest_chain,
            avg_chain_length: st.avg_chain_length(),
            versions_reclaimed: st.versions_reclaimed,
        },
        durability: match a.durability {
            crate::DurabilityArg::None => "none",
            crate::DurabilityArg::Group => "group",
            crate::DurabilityArg::Async => "async",
        },
        log,
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string(&summary).expect("the summary serialises")
        );
    } else {
        print_summary(&summary);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_summary(s: &Summary) {
    println!(
        "ycsb  engine {}  protocol {}  storage {}  gc {}  records {}  threads {}  ops/txn {}  read ratio {}  theta {}  columns {}",
        s.engine, s.protocol, s.storage, s.gc, s.records, s.threads, s.ops_per_txn, s.read_ratio, s.theta, s.columns
    );
    println!(
        "load      {:.2} s ({:.0} rows/s)",
        s.load_s,
        s.records as f64 / s.load_s.max(1e-9)
    );
    println!(
        "committed {:>12.0} txn/s  ({} in {:.2} s)",
        s.committed_per_s, s.committed, s.measured_s
    );
    println!(
        "aborted   {:>12.0} txn/s  ({}, {:.2}% of attempts)",
        s.aborted_per_s,
        s.aborted,
        100.0 * s.abort_rate
    );
    let reasons: Vec<String> = s
        .aborts_by_reason
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    if !reasons.is_empty() {
        println!("  by reason: {}", reasons.join(", "));
    }
    let l = &s.latency;
    println!(
        "latency   p50 {:.1} us  p99 {:.1} us  p99.9 {:.1} us  max {:.1} us",
        l.p50_us, l.p99_us, l.p999_us, l.max_us
    );
    let m = &s.memory;
    println!(
        "memory    {:.1} bytes/row  versions {} B in {} versions ({} rows)  longest chain {}",
        m.bytes_per_row, m.version_bytes, m.live_versions, m.rows, m.longest_chain
    );
    if let Some(l) = &s.log {
        println!(
            "log       durability {}  {:.1} bytes/txn  {:.1} txns/fsync  {} checkpoints",
            s.durability, l.bytes_per_txn, l.txns_per_fsync, l.checkpoints
        );
    }
    println!(
        "stores    main table {} B  time-travel/delta store {} B  average chain {:.2}",
        m.main_table_bytes, m.version_store_bytes, m.avg_chain_length
    );
}

/// Loads `records` rows, threads taking disjoint key ranges.
fn load(db: &Database, table: &Table, a: &YcsbArgs) -> Result<(), Error> {
    let batches = a.records.div_ceil(LOAD_BATCH);
    let next = std::sync::atomic::AtomicU64::new(0);
    let done = std::sync::atomic::AtomicU64::new(0);
    let mut progress = Progress::new(a.records, "load", "rows", a.json);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..a.threads.min(batches as usize).max(1))
            .map(|_| {
                let (next, done) = (&next, &done);
                s.spawn(move || -> Result<(), Error> {
                    loop {
                        let b = next.fetch_add(1, Ordering::Relaxed);
                        if b >= batches {
                            return Ok(());
                        }
                        let lo = b * LOAD_BATCH;
                        let hi = (lo + LOAD_BATCH).min(a.records);
                        db.run(|txn| {
                            for k in lo..hi {
                                let k = k as i64;
                                let mut row = Vec::with_capacity(a.columns + 1);
                                row.push(Value::Int(k));
                                row.extend((0..a.columns as i64).map(|c| Value::Int(k * 31 + c)));
                                txn.insert(table, row)?;
                            }
                            Ok(())
                        })?;
                        done.fetch_add(hi - lo, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        while !workers.iter().all(|w| w.is_finished()) {
            progress.set(done.load(Ordering::Relaxed));
            std::thread::sleep(Duration::from_millis(50));
        }
        progress.finish();
        workers
            .into_iter()
            .try_for_each(|w| w.join().expect("load worker panicked"))
    })
}

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// Runs the warm-up and the measured window; returns per-thread results
/// and the measured window's length.
fn run(db: &Database, table: &Table, a: &YcsbArgs) -> Result<(Vec<Local>, Duration), Error> {
    let zipf = Zipfian::new(a.records, a.theta);
    let phase = AtomicU8::new(if a.warmup > 0.0 { WARMUP } else { MEASURE });
    let total = Duration::from_secs_f64(a.warmup + a.duration);
    let mut progress = Progress::new(total.as_millis() as u64, "run", "ms", a.json);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..a.threads)
            .map(|i| {
                let (phase, zipf) = (&phase, &zipf);
                let mut rng =
                    Rng::new(a.seed.wrapping_mul(0x1000_0000_01b3).wrapping_add(i as u64));
                s.spawn(move || worker(db, table, a, zipf, &mut rng, phase))
            })
            .collect();
        let started = Instant::now();
        let warmup = Duration::from_secs_f64(a.warmup);
        let mut measure_started = started;
        if a.warmup > 0.0 {
            tick_until(started + warmup, started, &mut progress, &workers);
            measure_started = Instant::now();
            phase.store(MEASURE, Ordering::SeqCst);
        }
        let end = measure_started + Duration::from_secs_f64(a.duration);
        tick_until(end, started, &mut progress, &workers);
        phase.store(STOP, Ordering::SeqCst);
        let measured = measure_started.elapsed();
        progress.finish();
        let locals = workers
            .into_iter()
            .map(|w| w.join().expect("benchmark worker panicked"))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((locals, measured))
    })
}

/// Sleeps until `until`, updating the bar; returns early if a worker ended
/// (which only happens on an engine error).
fn tick_until<T>(
    until: Instant,
    started: Instant,
    progress: &mut Progress,
    workers: &[std::thread::ScopedJoinHandle<'_, T>],
) {
    loop {
        let now = Instant::now();
        progress.set(now.duration_since(started).as_millis() as u64);
        if now >= until || workers.iter().any(|w| w.is_finished()) {
            return;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(50)));
    }
}

fn worker(
    db: &Database,
    table: &Table,
    a: &YcsbArgs,
    zipf: &Zipfian,
    rng: &mut Rng,
    phase: &AtomicU8,
) -> Result<Local, Error> {
    let mut local = Local {
        commits: 0,
        aborts: [0; 6],
        latency_ns: latency_histogram(),
    };
    let read_only = a.read_ratio >= 1.0;
    let mut sink = 0i64;
    loop {
        let ph = phase.load(Ordering::Relaxed);
        if ph == STOP {
            break;
        }
        let started = Instant::now();
        let r = txn(db, table, a, zipf, rng, read_only, &mut sink);
        let ns = started.elapsed().as_nanos() as u64;
        if ph != MEASURE {
            match r {
                Ok(()) | Err(Error::Conflict(_)) => continue,
                Err(e) => return Err(e),
            }
        }
        match r {
            Ok(()) => {
                local.commits += 1;
                local.latency_ns.saturating_record(ns.max(1));
            }
            Err(Error::Conflict(k)) => {
                let i = ConflictKind::ALL.iter().position(|&x| x == k).unwrap_or(0);
                local.aborts[i] += 1;
            }
            Err(e) => return Err(e),
        }
    }
    std::hint::black_box(sink);
    Ok(local)
}

/// One transaction: `ops_per_txn` reads or single-column updates.
fn txn(
    db: &Database,
    table: &Table,
    a: &YcsbArgs,
    zipf: &Zipfian,
    rng: &mut Rng,
    read_only: bool,
    sink: &mut i64,
) -> Result<(), Error> {
    if a.engine == crate::EngineArg::Noop {
        // Everything the driver does per operation, minus the engine.
        for _ in 0..a.ops_per_txn {
            let key = strata::key![zipf.sample(rng) as i64];
            if read_only || rng.next_f64() < a.read_ratio {
                *sink = sink.wrapping_add(key.0[0].as_int().unwrap_or(0));
            } else {
                let col = 1 + (rng.next_u64() % a.columns as u64) as usize;
                let value = Value::Int((rng.next_u64() >> 1) as i64);
                *sink = sink.wrapping_add(col as i64 ^ value.as_int().unwrap_or(0));
            }
            std::hint::black_box(&key);
        }
        return Ok(());
    }
    let mut t = if read_only {
        db.begin_read_only()?
    } else {
        db.begin()?
    };
    for _ in 0..a.ops_per_txn {
        let key = strata::key![zipf.sample(rng) as i64];
        if read_only || rng.next_f64() < a.read_ratio {
            let v = t.read_with(table, &key, |row| row[1].as_int().unwrap_or(0))?;
            *sink = sink.wrapping_add(v.unwrap_or(0));
        } else {
            let col = 1 + (rng.next_u64() % a.columns as u64) as usize;
            let value = Value::Int((rng.next_u64() >> 1) as i64);
            t.update(table, &key, &[(col, value)])?;
        }
    }
    t.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipfian_stays_in_range_and_is_skewed() {
        let z = Zipfian::new(1000, 0.99);
        let mut rng = Rng::new(1);
        let mut counts = vec![0u32; 1000];
        for _ in 0..100_000 {
            counts[z.sample(&mut rng) as usize] += 1;
        }
        let top10: u32 = counts[..10].iter().sum();
        assert!(top10 > 30_000, "top10 = {top10}");
        assert!(counts[0] > counts[100]);
    }

    #[test]
    fn zipfian_theta_zero_is_uniform() {
        let z = Zipfian::new(10, 0.0);
        let mut rng = Rng::new(2);
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            counts[z.sample(&mut rng) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn zipfian_tiny_domains() {
        let mut rng = Rng::new(3);
        for n in [1, 2, 3] {
            let z = Zipfian::new(n, 0.9);
            for _ in 0..1000 {
                assert!(z.sample(&mut rng) < n);
            }
        }
    }
}
