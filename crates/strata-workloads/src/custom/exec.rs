//! Running a workload: the tables and indexes, the load, and the workers.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use strata::{Database, Error, Index, Schema, Table, Transaction, Type, Unique, Value};

use super::spec::{ColumnSpec, ColumnType, KeyDist, OpKind, OpSpec, LATEST_THETA};
use super::{CustomReport, CustomRun, CustomWorkload, TableCounts};
use crate::driver::{self, DriverConfig, MemoryFlow, Observer, Outcome, Stop, Worker};
use crate::rng::{Rng, Zipfian};
use crate::ycsb::{fold_value, Memory, YcsbReport, LOAD_BATCH};
use crate::WorkloadError;

/// What the workers share: the engine's handles and each table's next
/// fresh key.
struct Shared<'a> {
    w: &'a CustomWorkload,
    db: &'a Database,
    tables: Vec<Table>,
    indexes: Vec<Index>,
    /// Per table: keys `0..next` have been handed out (loaded, or taken by
    /// an insert, which may not have committed yet).
    next: Vec<AtomicU64>,
    mix: Mix,
    /// Zipfians over the loaded rows, built once (O(rows) each) and cloned
    /// into every worker.
    zipfs: Vec<ZipfEntry>,
    /// The workers' counts, added as each worker ends.
    totals: Mutex<Vec<Tally>>,
}

pub(super) fn run_until(
    db: Database,
    w: &CustomWorkload,
    r: &CustomRun,
    driver_cfg: &DriverConfig,
    stop: &Stop,
    observer: &mut dyn Observer,
) -> Result<CustomReport, WorkloadError> {
    if r.threads == 0 || r.threads > 1024 {
        return Err(WorkloadError::Config(format!(
            "threads must be in 1..=1024, got {}",
            r.threads
        )));
    }
    let mut tables = Vec::with_capacity(w.tables.len());
    for t in &w.tables {
        let mut schema = Schema::new(&t.name).column("key", Type::Int);
        for c in &t.columns {
            schema = schema.column(&c.name, c.ty.strata());
        }
        tables.push(db.create_table(schema.primary_key(&["key"]))?);
    }
    // Before the load, so that the load maintains them as the run will.
    let mut indexes = Vec::with_capacity(w.indexes.len());
    for ix in &w.indexes {
        let cols: Vec<&str> = ix.columns.iter().map(String::as_str).collect();
        indexes.push(db.create_index_as(
            &ix.name,
            &tables[ix.table],
            &cols,
            Unique::No,
            r.index_kind,
        )?);
    }
    let load_s = load(&db, w, &tables, r, observer)?.as_secs_f64();
    let loaded = db.stats();

    let mut zipfs = Vec::new();
    for x in &w.types {
        for op in &x.ops {
            let theta = match op.keys {
                KeyDist::Zipf(theta) => theta,
                KeyDist::Latest => LATEST_THETA,
                _ => continue,
            };
            let rows = w.tables[op.table].rows;
            if Draws::find(&zipfs, op.table, theta).is_none() {
                zipfs.push(ZipfEntry {
                    table: op.table,
                    theta: theta.to_bits(),
                    zipf: Zipfian::new(rows, theta),
                });
            }
        }
    }
    let shared = Shared {
        w,
        db: &db,
        tables,
        indexes,
        next: w.tables.iter().map(|t| AtomicU64::new(t.rows)).collect(),
        mix: Mix::new(w.types.iter().map(|t| t.share)),
        zipfs,
        totals: Mutex::new(vec![Tally::default(); w.tables.len()]),
    };
    let workers: Vec<CustomWorker> = (0..r.threads)
        .map(|i| CustomWorker::new(&shared, Rng::for_thread(r.seed, i)))
        .collect();
    // Counters only: sampled once a second (see `StrataYcsb::memory_flow`).
    let flow = || {
        let st = db.counters();
        MemoryFlow {
            allocated: st.storage_bytes_allocated,
            freed: st.gc_bytes_freed,
        }
    };
    let run = driver::run_metered(
        driver_cfg,
        stop,
        &w.type_names,
        workers,
        observer,
        Some(&flow),
    )?;
    let memory = Some(Memory::of_run(&db.stats(), &loaded));
    let totals = shared.totals.into_inner().expect("not poisoned");
    let tables = w
        .tables
        .iter()
        .zip(totals)
        .map(|(t, c)| TableCounts {
            table: t.name.clone(),
            loaded: t.rows,
            read: c.read,
            scanned: c.scanned,
            index_scanned: c.index_scanned,
            updated: c.updated,
            inserted: c.inserted,
            deleted: c.deleted,
            not_found: c.not_found,
        })
        .collect();
    Ok(CustomReport {
        report: YcsbReport {
            engine: "strata",
            load_s,
            run,
            memory,
        },
        tables,
    })
}

/// Loads every table, threads taking [`LOAD_BATCH`]-row batches of all
/// tables in turn; a batch's values come from a generator seeded by the
/// batch, so a load is the same whatever the threads.
fn load(
    db: &Database,
    w: &CustomWorkload,
    tables: &[Table],
    r: &CustomRun,
    observer: &mut dyn Observer,
) -> Result<Duration, WorkloadError> {
    let started = Instant::now();
    // first_batch[t]: the global number of table t's first batch.
    let mut first_batch = Vec::with_capacity(w.tables.len() + 1);
    let mut batches = 0u64;
    for t in &w.tables {
        first_batch.push(batches);
        batches += t.rows.div_ceil(LOAD_BATCH);
    }
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    observer.start("load", w.rows(), "rows");
    let result = std::thread::scope(|s| {
        let loaders: Vec<_> = (0..r.threads.min(batches as usize).max(1))
            .map(|_| {
                let (next, done, first_batch) = (&next, &done, &first_batch);
                s.spawn(move || -> Result<(), WorkloadError> {
                    loop {
                        let b = next.fetch_add(1, Ordering::Relaxed);
                        if b >= batches {
                            return Ok(());
                        }
                        let t = first_batch.partition_point(|&f| f <= b) - 1;
                        let spec = &w.tables[t];
                        let lo = (b - first_batch[t]) * LOAD_BATCH;
                        let hi = (lo + LOAD_BATCH).min(spec.rows);
                        db.run(|txn| {
                            let mut rng = Rng::for_thread(r.seed ^ 0x10ad, b as usize);
                            for k in lo..hi {
                                txn.insert(&tables[t], new_row(k, &spec.columns, &mut rng))?;
                            }
                            Ok(())
                        })?;
                        done.fetch_add(hi - lo, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        driver::join_loaders(loaders, &done, observer)
    });
    observer.finish();
    result?;
    Ok(started.elapsed())
}

fn new_row(key: u64, columns: &[ColumnSpec], rng: &mut Rng) -> Vec<Value> {
    let mut row = Vec::with_capacity(1 + columns.len());
    row.push(Value::Int(key as i64));
    row.extend(columns.iter().map(|c| value(c, rng)));
    row
}

/// A fresh value for column `c`.
fn value(c: &ColumnSpec, rng: &mut Rng) -> Value {
    match c.ty {
        ColumnType::Int => Value::Int(rng.range(0, c.distinct - 1) as i64),
        ColumnType::Float => Value::Float(rng.next_f64()),
        ColumnType::Bool => Value::Bool(rng.chance(0.5)),
        ColumnType::Text => {
            // Random hex first (distinct values, for indexes), then filler
            // to the length: cheap next to the engine's work.
            let mut s = format!("{:016x}", rng.next_u64());
            s.truncate(c.bytes);
            s.extend(std::iter::repeat_n('.', c.bytes - s.len()));
            Value::from(s)
        }
        ColumnType::Bytes => {
            let mut b = rng.next_u64().to_le_bytes().to_vec();
            b.resize(c.bytes, 0xa5);
            Value::from(b)
        }
    }
}

/// Picks transaction types by their shares.
#[derive(Debug, Clone)]
pub(super) struct Mix {
    cumulative: Vec<f64>,
}

impl Mix {
    pub(super) fn new(shares: impl Iterator<Item = f64>) -> Mix {
        let mut sum = 0.0;
        Mix {
            cumulative: shares
                .map(|s| {
                    sum += s;
                    sum
                })
                .collect(),
        }
    }

    pub(super) fn pick(&self, rng: &mut Rng) -> usize {
        let total = self.cumulative.last().copied().unwrap_or(0.0);
        let x = rng.next_f64() * total;
        self.cumulative
            .partition_point(|&c| c <= x)
            .min(self.cumulative.len().saturating_sub(1))
    }
}

#[derive(Debug, Clone)]
pub(super) struct ZipfEntry {
    table: usize,
    theta: u64,
    zipf: Zipfian,
}

/// A worker's key draws: its generator and its Zipfians, rebuilt over the
/// current key range once inserts have grown it by an eighth (each build is
/// O(keys), so not at every insert; until then the newest eighth of the
/// keys is never drawn by `zipf` and `latest` skips the oldest ones).
#[derive(Debug, Clone)]
pub(super) struct Draws {
    pub(super) rng: Rng,
    zipfs: Vec<ZipfEntry>,
}

impl Draws {
    pub(super) fn new(rng: Rng) -> Draws {
        Draws {
            rng,
            zipfs: Vec::new(),
        }
    }

    fn find(zipfs: &[ZipfEntry], table: usize, theta: f64) -> Option<usize> {
        zipfs
            .iter()
            .position(|z| z.table == table && z.theta == theta.to_bits())
    }

    fn zipf_rank(&mut self, table: usize, theta: f64, keys: u64) -> u64 {
        let i = match Draws::find(&self.zipfs, table, theta) {
            Some(i) => i,
            None => {
                self.zipfs.push(ZipfEntry {
                    table,
                    theta: theta.to_bits(),
                    zipf: Zipfian::new(keys, theta),
                });
                self.zipfs.len() - 1
            }
        };
        let z = &mut self.zipfs[i].zipf;
        if keys > z.n() + z.n() / 8 {
            *z = Zipfian::new(keys, theta);
        }
        z.sample(&mut self.rng).min(keys - 1)
    }

    /// A key of `table` (range `0..keys`, `keys >= 1`) drawn by `dist`.
    pub(super) fn key(&mut self, table: usize, dist: KeyDist, keys: u64) -> u64 {
        let keys = keys.max(1);
        match dist {
            KeyDist::Uniform => self.rng.range(0, keys - 1),
            KeyDist::Zipf(theta) => self.zipf_rank(table, theta, keys),
            KeyDist::Latest => keys - 1 - self.zipf_rank(table, LATEST_THETA, keys),
            KeyDist::Hotspot {
                fraction,
                probability,
            } => {
                let hot = ((keys as f64 * fraction).ceil() as u64).clamp(1, keys);
                if hot == keys || self.rng.chance(probability) {
                    self.rng.range(0, hot - 1)
                } else {
                    self.rng.range(hot, keys - 1)
                }
            }
        }
    }
}

/// What committed transactions did to one table.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    read: u64,
    scanned: u64,
    index_scanned: u64,
    updated: u64,
    inserted: u64,
    deleted: u64,
    not_found: u64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.read += o.read;
        self.scanned += o.scanned;
        self.index_scanned += o.index_scanned;
        self.updated += o.updated;
        self.inserted += o.inserted;
        self.deleted += o.deleted;
        self.not_found += o.not_found;
    }
}

/// One client running the mix.
struct CustomWorker<'a> {
    shared: &'a Shared<'a>,
    draws: Draws,
    /// The running transaction's counts, kept if it commits.
    txn: Vec<Tally>,
    total: Vec<Tally>,
    sink: u64,
}

impl<'a> CustomWorker<'a> {
    fn new(shared: &'a Shared<'a>, rng: Rng) -> Self {
        let n = shared.tables.len();
        let mut draws = Draws::new(rng);
        draws.zipfs = shared.zipfs.clone();
        CustomWorker {
            shared,
            draws,
            txn: vec![Tally::default(); n],
            total: vec![Tally::default(); n],
            sink: 0,
        }
    }

    /// Runs one op `count` times. A missing row is counted and the
    /// transaction goes on (TPC-C's Delivery treats "not found" so); any
    /// other error (a conflict among them) ends it.
    fn op(&mut self, t: &mut Transaction, op: &OpSpec) -> Result<(), Error> {
        let s = self.shared;
        let table = &s.tables[op.table];
        let columns = &s.w.tables[op.table].columns;
        for _ in 0..op.count {
            let tally = &mut self.txn[op.table];
            let keys = s.next[op.table].load(Ordering::Relaxed);
            match op.kind {
                OpKind::Read => {
                    let k = strata::key![self.draws.key(op.table, op.keys, keys) as i64];
                    let got = if op.columns.is_empty() {
                        t.read_with(table, &k, |row| row.iter().fold(0, fold_value))?
                    } else {
                        t.read_columns_with(table, &k, &op.columns, |v| {
                            v.iter().fold(0, fold_value)
                        })?
                    };
                    match got {
                        Some(v) => {
                            self.sink = self.sink.wrapping_add(v);
                            tally.read += 1;
                        }
                        None => tally.not_found += 1,
                    }
                }
                OpKind::Update => {
                    let k = strata::key![self.draws.key(op.table, op.keys, keys) as i64];
                    let changes: Vec<(usize, Value)> = op
                        .columns
                        .iter()
                        .map(|&c| (c, value(&columns[c - 1], &mut self.draws.rng)))
                        .collect();
                    match t.update(table, &k, &changes) {
                        Ok(()) => tally.updated += 1,
                        Err(Error::NotFound { .. }) => tally.not_found += 1,
                        Err(e) => return Err(e),
                    }
                }
                OpKind::Delete => {
                    let k = strata::key![self.draws.key(op.table, op.keys, keys) as i64];
                    match t.delete(table, &k) {
                        Ok(()) => tally.deleted += 1,
                        Err(Error::NotFound { .. }) => tally.not_found += 1,
                        Err(e) => return Err(e),
                    }
                }
                OpKind::Insert => {
                    // A fresh key, never handed out before: no duplicate,
                    // and reads find it once the insert commits.
                    let k = s.next[op.table].fetch_add(1, Ordering::Relaxed);
                    t.insert(table, new_row(k, columns, &mut self.draws.rng))?;
                    tally.inserted += 1;
                }
                OpKind::Scan => {
                    let k = strata::key![self.draws.key(op.table, op.keys, keys) as i64];
                    let (mut n, mut sum) = (0, 0u64);
                    t.scan_while(table, k.., first_rows(op.length, &mut n, &mut sum))?;
                    self.sink = self.sink.wrapping_add(sum);
                    tally.scanned += n as u64;
                }
                OpKind::IndexScan => {
                    let ix = op.index.expect("validated: an index scan names its index");
                    let first = s.w.indexes[ix].first;
                    // From a value the indexed column could hold.
                    let from = if first == 0 {
                        Value::Int(self.draws.key(op.table, KeyDist::Uniform, keys) as i64)
                    } else {
                        value(&columns[first - 1], &mut self.draws.rng)
                    };
                    let (mut n, mut sum) = (0, 0u64);
                    t.index_scan_while(
                        &s.indexes[ix],
                        strata::Key(vec![from])..,
                        first_rows(op.length, &mut n, &mut sum),
                    )?;
                    self.sink = self.sink.wrapping_add(sum);
                    tally.index_scanned += n as u64;
                }
            }
        }
        Ok(())
    }

    fn attempt(&mut self, ty: usize) -> Result<Outcome, Error> {
        let s = self.shared;
        let spec = &s.w.types[ty];
        let mut t = if spec.read_only {
            s.db.begin_read_only()?
        } else {
            s.db.begin()?
        };
        self.txn.iter_mut().for_each(|c| *c = Tally::default());
        for op in &spec.ops {
            self.op(&mut t, op)?;
        }
        t.commit()?;
        for (total, c) in self.total.iter_mut().zip(&self.txn) {
            total.add(c);
        }
        Ok(Outcome::Committed)
    }
}

impl Worker for CustomWorker<'_> {
    fn step(&mut self) -> Result<(usize, Outcome), WorkloadError> {
        let ty = self.shared.mix.pick(&mut self.draws.rng);
        let out = match self.attempt(ty) {
            Ok(out) => out,
            // Rolled back: counted with its kind, and the next step draws
            // a new transaction (the driver does not retry).
            Err(Error::Conflict(kind)) => Outcome::Aborted(kind.name()),
            Err(e) => return Err(e.into()),
        };
        std::hint::black_box(self.sink);
        Ok((ty, out))
    }
}

impl Drop for CustomWorker<'_> {
    /// The driver keeps its workers until the run ends; each hands its
    /// counts in as it goes, so the hot path shares nothing.
    fn drop(&mut self) {
        if let Ok(mut totals) = self.shared.totals.lock() {
            for (t, c) in totals.iter_mut().zip(&self.total) {
                t.add(c);
            }
        }
    }
}

/// A scan callback that folds the first `length` rows into `sum`, counts
/// them in `n`, and stops.
fn first_rows<'a>(
    length: usize,
    n: &'a mut usize,
    sum: &'a mut u64,
) -> impl FnMut(&[Value]) -> ControlFlow<()> + 'a {
    move |row| {
        *sum = row.iter().fold(*sum, fold_value);
        *n += 1;
        if *n >= length {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}
