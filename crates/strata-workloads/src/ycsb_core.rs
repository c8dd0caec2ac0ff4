//! YCSB's core workloads A, B, D and E (Cooper et al., SoCC 2010) run
//! through a secondary index, as MV-PBT's evaluation runs them (Riegger et
//! al., §6, Figure 15a) to compare index structures: every read, scan and
//! insert goes through the index on `sk`, so the index kind
//! (`IndexKind::Standard` or `IndexKind::MvPbt`) is what differs.
//!
//! ```text
//!  usertable(k Int PK, sk Int, f0 .. f{fields-1} Text)      index usertable_sk(sk)
//!
//!  workload  operations                         key distribution
//!  A         50% read, 50% update               Zipfian (θ, scrambled)
//!  B         95% read,  5% update               Zipfian
//!  D         95% read,  5% insert               latest (Zipfian from the newest key)
//!  E         95% scan,  5% insert               Zipfian start, length uniform 1..=max_scan
//!
//!  read:   index_get(sk)                        (one row)
//!  update: set one random field (not the indexed column: MV-PBT writes a
//!          replacement record, §5.1)
//!  insert: the next key, sk = k                 (keys handed out by one counter)
//!  scan:   index_scan(sk .. sk + len)           (sk = k: len rows)
//! ```
//!
//! One operation per transaction, so each transaction type is one
//! operation type and its latency is the operation's. A conflict counts as
//! an abort (not retried). Workload C (read-only) and F (read-modify-write)
//! are not here: MV-PBT's figure runs A, B, D and E.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use strata::{Database, Error, Index, IndexKind, Schema, Table, Type, Unique, Value};

use crate::driver::{self, DriverConfig, Observer, Outcome, Report, Worker};
use crate::rng::{Rng, Zipfian};
use crate::WorkloadError;

/// Transaction types, one per operation.
pub const TYPES: [&str; 4] = ["read", "update", "insert", "scan"];
const READ: usize = 0;
const UPDATE: usize = 1;
const INSERT: usize = 2;
pub(crate) const SCAN: usize = 3;

/// One of YCSB's core workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CoreWorkload {
    A,
    B,
    D,
    E,
}

impl CoreWorkload {
    pub const ALL: [CoreWorkload; 4] = [
        CoreWorkload::A,
        CoreWorkload::B,
        CoreWorkload::D,
        CoreWorkload::E,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CoreWorkload::A => "a",
            CoreWorkload::B => "b",
            CoreWorkload::D => "d",
            CoreWorkload::E => "e",
        }
    }

    /// Percent of reads, updates, inserts and scans.
    fn mix(self) -> [u32; 4] {
        match self {
            CoreWorkload::A => [50, 50, 0, 0],
            CoreWorkload::B => [95, 5, 0, 0],
            CoreWorkload::D => [95, 0, 5, 0],
            CoreWorkload::E => [0, 0, 5, 95],
        }
    }
}

impl std::str::FromStr for CoreWorkload {
    type Err = WorkloadError;
    fn from_str(s: &str) -> Result<Self, WorkloadError> {
        CoreWorkload::ALL
            .into_iter()
            .find(|w| w.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                WorkloadError::Config(format!(
                    "unknown YCSB core workload {s:?}; expected a, b, d or e"
                ))
            })
    }
}

/// Sizes and mix of a run.
#[derive(Debug, Clone, Serialize)]
pub struct CoreConfig {
    pub workload: CoreWorkload,
    /// Rows loaded before the run.
    pub records: u64,
    /// Text fields per row (YCSB: 10).
    pub fields: usize,
    /// Bytes per field (YCSB: 100).
    pub field_bytes: usize,
    /// Zipfian constant of the key choice (YCSB: 0.99).
    pub theta: f64,
    /// Longest scan of workload E (YCSB: 100).
    pub max_scan: u64,
    /// The secondary index's structure.
    #[serde(serialize_with = "kind_name")]
    pub index: IndexKind,
    pub threads: usize,
    pub warmup: Duration,
    pub duration: Duration,
    pub seed: u64,
}

pub(crate) fn kind_name<S: serde::Serializer>(k: &IndexKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(k.name())
}

impl Default for CoreConfig {
    fn default() -> Self {
        CoreConfig {
            workload: CoreWorkload::A,
            records: 100_000,
            fields: 10,
            field_bytes: 100,
            theta: 0.99,
            max_scan: 100,
            index: IndexKind::Standard,
            threads: 2,
            warmup: Duration::from_millis(500),
            duration: Duration::from_secs(5),
            seed: 1,
        }
    }
}

impl CoreConfig {
    /// Refuses out-of-range settings with a message naming the flag.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |m: String| Err(WorkloadError::Config(m));
        if self.records == 0 || self.records > 1 << 40 {
            return bad(format!(
                "--records must be in 1..=2^40, got {}",
                self.records
            ));
        }
        if self.fields == 0 || self.fields > 100 {
            return bad(format!("--fields must be in 1..=100, got {}", self.fields));
        }
        if self.field_bytes == 0 || self.field_bytes > 10_000 {
            return bad(format!(
                "--field-bytes must be in 1..=10000, got {}",
                self.field_bytes
            ));
        }
        if !(0.0..1.0).contains(&self.theta) {
            return bad(format!("--theta must be in [0, 1), got {}", self.theta));
        }
        if self.max_scan == 0 || self.max_scan > 10_000 {
            return bad(format!(
                "--max-scan must be in 1..=10000, got {}",
                self.max_scan
            ));
        }
        if self.threads == 0 || self.threads > 1024 {
            return bad(format!(
                "--threads must be in 1..=1024, got {}",
                self.threads
            ));
        }
        Ok(())
    }

    /// Bytes a loaded row takes, roughly (for the memory check).
    pub fn row_bytes(&self) -> f64 {
        300.0 + (self.fields * (self.field_bytes + 40)) as f64
    }
}

/// The table and its index, loaded.
pub struct CoreTables {
    pub table: Table,
    pub index: Index,
    /// The next key an insert takes.
    next_key: AtomicU64,
}

fn field_text(k: u64, f: usize, bytes: usize, salt: u64) -> String {
    let mut s = String::with_capacity(bytes);
    let fill = b'a' + ((k + f as u64 + salt) % 26) as u8;
    s.extend(std::iter::repeat_n(fill as char, bytes));
    s
}

/// Field `f` of row `k` as the load wrote it.
pub(crate) fn loaded_text(cfg: &CoreConfig, k: u64, f: usize) -> Value {
    Value::from(field_text(k, f, cfg.field_bytes, 0))
}

fn row(cfg: &CoreConfig, k: u64) -> Vec<Value> {
    let mut r = Vec::with_capacity(2 + cfg.fields);
    r.push(Value::Int(k as i64));
    r.push(Value::Int(k as i64));
    r.extend((0..cfg.fields).map(|f| Value::from(field_text(k, f, cfg.field_bytes, 0))));
    r
}

/// Creates `usertable` with its index on `sk` and loads `cfg.records` rows.
pub fn load(
    db: &Database,
    cfg: &CoreConfig,
    observer: &mut dyn Observer,
) -> Result<CoreTables, WorkloadError> {
    cfg.validate()?;
    let mut schema = Schema::new("usertable")
        .column("k", Type::Int)
        .column("sk", Type::Int);
    for f in 0..cfg.fields {
        schema = schema.column(format!("f{f}"), Type::Text);
    }
    let table = db.create_table(schema.primary_key(&["k"]))?;
    observer.start("load", cfg.records, "rows");
    let mut k = 0;
    while k < cfg.records {
        let mut t = db.begin()?;
        let end = (k + 1000).min(cfg.records);
        for key in k..end {
            t.insert(&table, row(cfg, key))?;
        }
        t.commit()?;
        k = end;
        observer.set(k);
    }
    observer.finish();
    // Built after the load (one back-fill), as a database would.
    let index = db.create_index_as("usertable_sk", &table, &["sk"], Unique::No, cfg.index)?;
    Ok(CoreTables {
        table,
        index,
        next_key: AtomicU64::new(cfg.records),
    })
}

/// One closed-loop client.
pub(crate) struct Client<'a> {
    db: &'a Database,
    t: &'a CoreTables,
    cfg: &'a CoreConfig,
    /// Percent of reads, updates, inserts and scans.
    mix: [u32; 4],
    /// Keys below this are not drawn (the HTAP mix keeps its analysed
    /// rows out of the OLTP traffic).
    base: u64,
    zipf: Zipfian,
    rng: Rng,
}

/// `cfg.threads` clients running `mix` over the keys from `base` up.
pub(crate) fn clients<'a>(
    db: &'a Database,
    t: &'a CoreTables,
    cfg: &'a CoreConfig,
    mix: [u32; 4],
    base: u64,
) -> Vec<Client<'a>> {
    (0..cfg.threads)
        .map(|i| Client {
            db,
            t,
            cfg,
            mix,
            base,
            zipf: Zipfian::new(cfg.records - base, cfg.theta),
            rng: Rng::for_thread(cfg.seed ^ 0x7c5b, i),
        })
        .collect()
}

impl Client<'_> {
    /// A key in `[base, n)`: Zipfian ranks scrambled over the keys (YCSB's
    /// "scrambled zipfian"), so the hot keys are not neighbours.
    fn zipf_key(&mut self, n: u64) -> u64 {
        let r = self.zipf.sample(&mut self.rng);
        self.base + (r.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (r >> 7)) % (n - self.base)
    }

    fn op(&mut self) -> usize {
        let mix = self.mix;
        let mut p = self.rng.range(0, 99) as u32;
        for (i, &share) in mix.iter().enumerate() {
            if p < share {
                return i;
            }
            p -= share;
        }
        unreachable!("a mix adds up to 100")
    }

    fn execute(&mut self, op: usize) -> Result<(), Error> {
        let inserted = self.t.next_key.load(Ordering::Relaxed);
        let mut txn = self.db.begin()?;
        match op {
            READ => {
                let k = match self.cfg.workload {
                    // "latest": the newest keys are the hottest.
                    CoreWorkload::D => {
                        let back = self.zipf.sample(&mut self.rng) % inserted;
                        inserted - 1 - back
                    }
                    CoreWorkload::A | CoreWorkload::B | CoreWorkload::E => self.zipf_key(inserted),
                };
                txn.index_get(&self.t.index, &strata::key![k as i64])?;
            }
            UPDATE => {
                let k = self.zipf_key(inserted);
                let f = self.rng.range(0, self.cfg.fields as u64 - 1) as usize;
                let salt = self.rng.next_u64();
                let text = field_text(k, f, self.cfg.field_bytes, salt);
                txn.update(
                    &self.t.table,
                    &strata::key![k as i64],
                    &[(2 + f, Value::from(text))],
                )?;
            }
            INSERT => {
                let k = self.t.next_key.fetch_add(1, Ordering::Relaxed);
                txn.insert(&self.t.table, row(self.cfg, k))?;
            }
            SCAN => {
                let start = self.zipf_key(inserted) as i64;
                let len = self.rng.range(1, self.cfg.max_scan) as i64;
                let lo = strata::key![start];
                let hi = strata::key![start + len];
                txn.index_scan(&self.t.index, lo..hi)?;
            }
            _ => unreachable!("four operation types"),
        }
        txn.commit()
    }
}

impl Worker for Client<'_> {
    fn step(&mut self) -> Result<(usize, Outcome), WorkloadError> {
        let op = self.op();
        settle(op, self.execute(op))
    }
}

/// How a transaction ended, for the driver. A key is drawn below
/// `next_key` once an insert has taken it, before that insert commits, and
/// an insert that aborts (MVTO and MV2PL refuse some) never fills it: an
/// update of such a key finds no row. YCSB counts that as a failed
/// operation of the workload (`not-found`), not an engine error that ends
/// the run.
fn settle(op: usize, r: Result<(), Error>) -> Result<(usize, Outcome), WorkloadError> {
    match r {
        Ok(()) => Ok((op, Outcome::Committed)),
        Err(Error::Conflict(k)) => Ok((op, Outcome::Aborted(k.name()))),
        Err(Error::NotFound { .. }) => Ok((op, Outcome::Aborted("not-found"))),
        Err(e) => Err(e.into()),
    }
}

/// What a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct CoreReport {
    pub config: CoreConfig,
    pub load_s: f64,
    pub run: Report,
}

/// Runs the workload on tables `load` made.
pub fn run_on(
    db: &Database,
    t: &CoreTables,
    cfg: &CoreConfig,
    observer: &mut dyn Observer,
) -> Result<Report, WorkloadError> {
    cfg.validate()?;
    let workers = clients(db, t, cfg, cfg.workload.mix(), 0);
    let driver_cfg = DriverConfig {
        warmup: cfg.warmup,
        duration: cfg.duration,
        series: false,
        huge_pages: Default::default(),
        ab_interval: None,
    };
    driver::run(&driver_cfg, &TYPES, workers, observer)
}

/// Loads and runs.
pub fn run(
    db: &Database,
    cfg: &CoreConfig,
    observer: &mut dyn Observer,
) -> Result<CoreReport, WorkloadError> {
    let started = std::time::Instant::now();
    let t = load(db, cfg, observer)?;
    let load_s = started.elapsed().as_secs_f64();
    let run = run_on(db, &t, cfg, observer)?;
    Ok(CoreReport {
        config: cfg.clone(),
        load_s,
        run,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::Quiet;
    use strata::Options;

    fn small(w: CoreWorkload, index: IndexKind) -> CoreConfig {
        CoreConfig {
            workload: w,
            records: 2_000,
            fields: 3,
            field_bytes: 20,
            index,
            warmup: Duration::ZERO,
            duration: Duration::from_millis(200),
            ..CoreConfig::default()
        }
    }

    /// Every workload runs its own operations on both index kinds, and
    /// what it did is in the table afterwards: inserts add rows the index
    /// finds, updates change fields, scans and reads commit.
    #[test]
    fn every_workload_runs_its_mix_on_both_index_kinds() {
        for index in IndexKind::ALL {
            for w in CoreWorkload::ALL {
                let db = Database::open(Options::default()).unwrap();
                let cfg = small(w, index);
                let t = load(&db, &cfg, &mut Quiet).unwrap();
                let r = run_on(&db, &t, &cfg, &mut Quiet).unwrap();
                let committed = |ty: &str| r.of_type(ty).map_or(0, |t| t.committed);
                let mix = w.mix();
                for (i, ty) in TYPES.iter().enumerate() {
                    if mix[i] == 0 {
                        assert_eq!(committed(ty), 0, "{w:?} {index:?}: no {ty}");
                    } else if mix[i] >= 50 {
                        assert!(committed(ty) > 0, "{w:?} {index:?}: {ty}");
                    }
                }
                let inserted = t.next_key.load(Ordering::Relaxed);
                let mut txn = db.begin_read_only().unwrap();
                let last = strata::key![inserted as i64 - 1];
                let rows = txn.index_get(&t.index, &last).unwrap();
                assert_eq!(rows.len(), 1, "{w:?} {index:?}: the newest row is indexed");
                let all = txn
                    .index_scan(&t.index, strata::key![0]..strata::key![inserted as i64])
                    .unwrap();
                assert_eq!(all.len() as u64, inserted, "{w:?} {index:?}");
                if w == CoreWorkload::A {
                    let changed = all.iter().any(|r| {
                        let k = r[0].as_int().unwrap() as u64;
                        (0..3).any(|f| r[2 + f] != Value::from(field_text(k, f, 20, 0)))
                    });
                    assert!(changed, "{index:?}: updates wrote fields");
                }
            }
        }
    }

    /// Keys taken by inserts that never committed (holes above the load)
    /// are updated as `not-found`, and the run goes on.
    #[test]
    fn an_update_of_a_key_whose_insert_never_committed_is_not_found() {
        let db = Database::open(Options::default()).unwrap();
        let cfg = CoreConfig {
            records: 20,
            theta: 0.0,
            threads: 1,
            ..small(CoreWorkload::A, IndexKind::Standard)
        };
        let t = load(&db, &cfg, &mut Quiet).unwrap();
        // Ten inserts took their keys and never committed.
        t.next_key.store(30, Ordering::Relaxed);
        let mut c = clients(&db, &t, &cfg, cfg.workload.mix(), 0).pop().unwrap();
        let (mut committed, mut not_found) = (0, 0);
        for _ in 0..200 {
            match settle(UPDATE, c.execute(UPDATE)).unwrap().1 {
                Outcome::Committed => committed += 1,
                Outcome::Aborted("not-found") => not_found += 1,
                other => panic!("{other:?}"),
            }
        }
        assert!(committed > 50 && not_found > 50, "{committed} {not_found}");
    }

    #[test]
    fn bad_settings_name_the_flag() {
        let base = small(CoreWorkload::A, IndexKind::Standard);
        for (flag, cfg) in [
            (
                "--records",
                CoreConfig {
                    records: 0,
                    ..base.clone()
                },
            ),
            (
                "--fields",
                CoreConfig {
                    fields: 0,
                    ..base.clone()
                },
            ),
            (
                "--theta",
                CoreConfig {
                    theta: 1.0,
                    ..base.clone()
                },
            ),
            (
                "--max-scan",
                CoreConfig {
                    max_scan: 0,
                    ..base.clone()
                },
            ),
            (
                "--threads",
                CoreConfig {
                    threads: 0,
                    ..base.clone()
                },
            ),
        ] {
            let e = cfg.validate().unwrap_err().to_string();
            assert!(e.contains(flag), "{flag}: {e}");
        }
        assert!("c".parse::<CoreWorkload>().is_err());
        assert_eq!("E".parse::<CoreWorkload>().unwrap(), CoreWorkload::E);
    }
}
