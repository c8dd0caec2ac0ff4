//! ERMIA's read-mostly microbenchmark (Kim et al., SIGMOD 2016, §4.2
//! "Microbenchmark", Figure 1): one transaction type over TPC-C's Stock
//! table that reads a random subset of the rows and updates a small
//! fraction of what it read. Its purpose is read-write conflicts: a
//! lightweight OCC reader (Silo, `Protocol::Occ`) aborts when any row in its
//! read footprint is overwritten before it commits, so its throughput falls
//! sharply once 0.1-1% of the touched rows are updates (§1), while SI-based
//! readers (ERMIA-SI, ERMIA-SSN) keep reading their snapshot.
//!
//! ```text
//!  Stock: warehouses x items rows, loaded by tpcc::load_stock
//!  one transaction:
//!    pick `reads` distinct rows uniformly (Floyd's sampling)
//!    pick k of them to update: k = reads x write_fraction, the fractional
//!      part a coin flip (0.0001 x 1,000 = 0.1 update a transaction on average)
//!    for each picked row, in the drawn order:
//!      read s_quantity
//!      if it is one of the k: update s_quantity, s_ytd, s_order_cnt (NewOrder's
//!        stock update, spec 2.4.2.2) right there, read and written with one
//!        lookup (`Transaction::update_with`)
//!    commit; a conflict counts as an abort (reason kept), not retried
//! ```
//!
//! The paper reads 1K or 10K rows (Figure 1 left and right) and updates
//! 0% to 1% of them. A transaction that draws no update is still a
//! read-write transaction (`Database::begin`): the workload does not know
//! in advance, as the paper's does not, so OCC validates it like any other.

use std::time::Duration;

use serde::Serialize;
use strata::{Database, Error, Key, Table, Transaction, Value};

use crate::driver::{self, DriverConfig, Observer, Outcome, Report, Worker};
use crate::rng::Rng;
use crate::tpcc::{self, col};
use crate::WorkloadError;

/// The one transaction type.
pub const TYPES: [&str; 1] = ["read-mostly"];

/// Sizes and mix of a run.
#[derive(Debug, Clone, Serialize)]
pub struct ReadMostlyConfig {
    /// TPC-C warehouses: Stock holds `warehouses x items` rows.
    pub warehouses: u32,
    /// Stock rows per warehouse (100,000 in the TPC-C specification).
    pub items: u32,
    /// Rows read per transaction (the paper: 1,000 or 10,000).
    pub reads: usize,
    /// Fraction of the rows read that the transaction updates (the paper:
    /// 0 to 0.01).
    pub write_fraction: f64,
    pub threads: usize,
    pub warmup: Duration,
    pub duration: Duration,
    pub seed: u64,
}

impl Default for ReadMostlyConfig {
    fn default() -> Self {
        ReadMostlyConfig {
            warehouses: 1,
            items: 100_000,
            reads: 1_000,
            write_fraction: 0.001,
            threads: 2,
            warmup: Duration::from_millis(500),
            duration: Duration::from_secs(5),
            seed: 1,
        }
    }
}

impl ReadMostlyConfig {
    /// Checks every setting; the error names the flag.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |m: String| Err(WorkloadError::Config(m));
        crate::tpcc::validate_scale(self.warehouses, self.items)?;
        if self.reads == 0 || self.reads as u64 > self.rows() {
            return bad(format!(
                "--reads must be in 1..={} (the stock rows: --warehouses x --items), got {}",
                self.rows(),
                self.reads
            ));
        }
        if !(0.0..=1.0).contains(&self.write_fraction) {
            return bad(format!(
                "--write-fraction must be in 0..=1 (a fraction of the rows read), got {}",
                self.write_fraction
            ));
        }
        if self.threads == 0 || self.threads > 1024 {
            return bad(format!(
                "--threads must be in 1..=1024, got {}",
                self.threads
            ));
        }
        if self.duration.is_zero() {
            return bad("--duration must be positive".into());
        }
        Ok(())
    }

    /// Stock rows in all.
    pub fn rows(&self) -> u64 {
        u64::from(self.warehouses) * u64::from(self.items)
    }

    /// Updates a transaction makes on average.
    pub fn updates_per_txn(&self) -> f64 {
        self.reads as f64 * self.write_fraction
    }
}

/// What one transaction will do: the rows it reads, in order, and which of
/// them it updates (indexes into `reads`, ascending).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// (s_w_id, s_i_id) of each row read.
    pub reads: Vec<(i64, i64)>,
    pub updates: Vec<usize>,
}

/// `k` distinct values of `0..n`, uniformly (Floyd's algorithm: `k` draws
/// whatever `n` is, so 10K reads of millions of rows cost 10K draws).
fn sample(rng: &mut Rng, n: u64, k: usize) -> Vec<u64> {
    let mut chosen = std::collections::HashSet::with_capacity(k);
    let mut out = Vec::with_capacity(k);
    for j in n - k as u64..n {
        let t = rng.range(0, j);
        let pick = if chosen.insert(t) { t } else { j };
        chosen.insert(pick);
        out.push(pick);
    }
    out
}

impl Plan {
    /// Draws a transaction for `cfg`.
    pub fn draw(cfg: &ReadMostlyConfig, rng: &mut Rng) -> Plan {
        let items = u64::from(cfg.items);
        let reads = sample(rng, cfg.rows(), cfg.reads)
            .into_iter()
            .map(|r| ((r / items) as i64 + 1, (r % items) as i64 + 1))
            .collect();
        let mean = cfg.updates_per_txn();
        let k = (mean.floor() as usize + usize::from(rng.chance(mean.fract()))).min(cfg.reads);
        let mut updates: Vec<usize> = sample(rng, cfg.reads as u64, k)
            .into_iter()
            .map(|i| i as usize)
            .collect();
        updates.sort_unstable();
        Plan { reads, updates }
    }

    /// Runs the plan in `txn` (not committed): reads every row, updating
    /// the chosen ones as it reaches them. Returns the rows updated.
    pub fn execute(&self, txn: &mut Transaction, stock: &Table) -> Result<usize, Error> {
        let mut next = self.updates.iter().peekable();
        for (i, &(w, item)) in self.reads.iter().enumerate() {
            let key = Key(vec![Value::Int(w), Value::Int(item)]);
            if next.next_if_eq(&&i).is_some() {
                // Read and updated from one lookup, as ERMIA's through the
                // row's OID: NewOrder's stock rule (spec 2.4.2.2), one unit
                // ordered.
                txn.update_with(stock, &key, |r| {
                    let int = |c: usize| r[c].as_int().unwrap_or(0);
                    let qty = int(col::S_QUANTITY);
                    let qty = if qty >= 11 { qty - 1 } else { qty + 90 };
                    let changes = [
                        (col::S_QUANTITY, Value::Int(qty)),
                        (col::S_YTD, Value::Int(int(col::S_YTD) + 1)),
                        (col::S_ORDER_CNT, Value::Int(int(col::S_ORDER_CNT) + 1)),
                    ];
                    (changes, ())
                })?;
                continue;
            }
            let qty = txn.read_with(stock, &key, |r| r[col::S_QUANTITY].as_int())?;
            if qty.is_none() {
                return Err(Error::NotFound {
                    table: "stock".into(),
                    key: key.to_string(),
                });
            }
        }
        Ok(self.updates.len())
    }
}

/// One closed-loop client.
struct Client<'a> {
    db: &'a Database,
    stock: &'a Table,
    cfg: &'a ReadMostlyConfig,
    rng: Rng,
}

impl Worker for Client<'_> {
    fn step(&mut self) -> Result<(usize, Outcome), WorkloadError> {
        let plan = Plan::draw(self.cfg, &mut self.rng);
        let mut txn = self.db.begin()?;
        match plan
            .execute(&mut txn, self.stock)
            .and_then(|_| txn.commit())
        {
            Ok(()) => Ok((0, Outcome::Committed)),
            Err(Error::Conflict(k)) => Ok((0, Outcome::Aborted(k.name()))),
            Err(e) => Err(e.into()),
        }
    }
}

/// What a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct ReadMostlyReport {
    pub config: ReadMostlyConfig,
    pub run: Report,
    /// Aborted / (committed + aborted) transactions.
    pub abort_ratio: f64,
}

/// Loads the Stock table into `db` (TPC-C's loader) and returns it.
pub fn load(
    db: &Database,
    cfg: &ReadMostlyConfig,
    observer: &mut dyn Observer,
) -> Result<Table, WorkloadError> {
    cfg.validate()?;
    tpcc::load_stock(
        db,
        cfg.warehouses,
        cfg.items,
        cfg.threads,
        cfg.seed,
        observer,
    )
}

/// Runs the microbenchmark on a Stock table `load` made (several runs may
/// share one load: the figure sweeps the write fraction over one table).
pub fn run_on(
    db: &Database,
    stock: &Table,
    cfg: &ReadMostlyConfig,
    observer: &mut dyn Observer,
) -> Result<ReadMostlyReport, WorkloadError> {
    cfg.validate()?;
    let workers: Vec<Client> = (0..cfg.threads)
        .map(|i| Client {
            db,
            stock,
            cfg,
            rng: Rng::for_thread(cfg.seed ^ 0xe41a, i),
        })
        .collect();
    let driver_cfg = DriverConfig {
        warmup: cfg.warmup,
        duration: cfg.duration,
        series: false,
        huge_pages: Default::default(),
        ab_interval: None,
    };
    let run = driver::run(&driver_cfg, &TYPES, workers, observer)?;
    let total = run.committed + run.aborted;
    Ok(ReadMostlyReport {
        config: cfg.clone(),
        abort_ratio: if total == 0 {
            0.0
        } else {
            run.aborted as f64 / total as f64
        },
        run,
    })
}

/// Loads the Stock table and runs the microbenchmark.
pub fn run(
    db: &Database,
    cfg: &ReadMostlyConfig,
    observer: &mut dyn Observer,
) -> Result<ReadMostlyReport, WorkloadError> {
    let stock = load(db, cfg, observer)?;
    run_on(db, &stock, cfg, observer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::Quiet;
    use std::collections::BTreeMap;
    use strata::{Options, Protocol};

    fn small() -> ReadMostlyConfig {
        ReadMostlyConfig {
            items: 1_000,
            reads: 100,
            write_fraction: 0.05,
            threads: 2,
            warmup: Duration::ZERO,
            duration: Duration::from_millis(300),
            ..ReadMostlyConfig::default()
        }
    }

    #[test]
    fn bad_settings_are_config_errors_naming_the_flag() {
        let cases: [(&str, ReadMostlyConfig); 6] = [
            (
                "--warehouses",
                ReadMostlyConfig {
                    warehouses: 0,
                    ..small()
                },
            ),
            (
                "--items",
                ReadMostlyConfig {
                    items: 5,
                    ..small()
                },
            ),
            (
                "--reads",
                ReadMostlyConfig {
                    reads: 0,
                    ..small()
                },
            ),
            (
                "--reads",
                ReadMostlyConfig {
                    reads: 1_001,
                    ..small()
                },
            ),
            (
                "--write-fraction",
                ReadMostlyConfig {
                    write_fraction: f64::NAN,
                    ..small()
                },
            ),
            (
                "--threads",
                ReadMostlyConfig {
                    threads: 0,
                    ..small()
                },
            ),
        ];
        for (flag, cfg) in cases {
            match cfg.validate() {
                Err(WorkloadError::Config(m)) => assert!(m.contains(flag), "{flag}: {m}"),
                other => panic!("{flag}: {other:?}"),
            }
        }
        let over = ReadMostlyConfig {
            write_fraction: 1.5,
            ..small()
        };
        assert!(
            matches!(over.validate(), Err(WorkloadError::Config(m)) if m.contains("--write-fraction"))
        );
        small().validate().unwrap();
    }

    #[test]
    fn plans_read_distinct_rows_and_update_only_rows_they_read() {
        let cfg = ReadMostlyConfig {
            reads: 1_000,
            write_fraction: 0.0001,
            ..small()
        };
        let mut rng = Rng::new(7);
        let mut updates = 0;
        for _ in 0..2_000 {
            let p = Plan::draw(&cfg, &mut rng);
            let mut rows = p.reads.clone();
            rows.sort_unstable();
            rows.dedup();
            assert_eq!(rows.len(), cfg.reads, "distinct rows");
            assert!(rows
                .iter()
                .all(|&(w, i)| w == 1 && (1..=1_000).contains(&i)));
            assert!(p.updates.iter().all(|&u| u < cfg.reads));
            updates += p.updates.len();
        }
        // 0.1 update a transaction on average: about 200 in 2,000.
        assert!((120..=280).contains(&updates), "{updates}");
        let none = ReadMostlyConfig {
            write_fraction: 0.0,
            ..cfg.clone()
        };
        assert!(Plan::draw(&none, &mut rng).updates.is_empty());
    }

    /// Executing a plan changes exactly the rows it chose to update, all of
    /// them rows it read.
    #[test]
    fn a_transaction_changes_only_rows_it_read() {
        let cfg = small();
        let db = Database::open(Options::default()).unwrap();
        let stock = load(&db, &cfg, &mut Quiet).unwrap();
        let snapshot = |db: &Database| -> BTreeMap<(i64, i64), Vec<Value>> {
            let mut t = db.begin_read_only().unwrap();
            t.scan(&stock, ..)
                .unwrap()
                .into_iter()
                .map(|r| ((r[0].as_int().unwrap(), r[1].as_int().unwrap()), r))
                .collect()
        };
        let before = snapshot(&db);
        assert_eq!(before.len(), 1_000);
        let plan = Plan::draw(&cfg, &mut Rng::new(3));
        assert_eq!(plan.updates.len(), 5);
        let mut txn = db.begin().unwrap();
        assert_eq!(plan.execute(&mut txn, &stock).unwrap(), 5);
        txn.commit().unwrap();
        let after = snapshot(&db);
        let changed: Vec<(i64, i64)> = before
            .iter()
            .filter(|(k, r)| &after[*k] != *r)
            .map(|(k, _)| *k)
            .collect();
        let mut expected: Vec<(i64, i64)> = plan.updates.iter().map(|&u| plan.reads[u]).collect();
        expected.sort_unstable();
        assert_eq!(changed, expected);
    }

    #[test]
    fn runs_briefly_and_commits_under_every_protocol() {
        for p in Protocol::ALL {
            let db = Database::open(Options::default().protocol(p)).unwrap();
            let r = run(&db, &small(), &mut Quiet).unwrap();
            assert!(r.run.committed > 0, "{p}: {:?}", r.run);
            assert!((0.0..=1.0).contains(&r.abort_ratio), "{p}");
        }
    }

    /// At write fraction 0 nothing is written: no conflict can arise, even
    /// under OCC, whose readers validate.
    #[test]
    fn read_only_at_fraction_zero() {
        let cfg = ReadMostlyConfig {
            write_fraction: 0.0,
            ..small()
        };
        let db = Database::open(Options::default().protocol(Protocol::Occ)).unwrap();
        let r = run(&db, &cfg, &mut Quiet).unwrap();
        assert!(r.run.committed > 0);
        assert_eq!(r.run.aborted, 0, "{:?}", r.run.aborts_by_reason);
        let st = db.stats();
        assert_eq!(
            (st.live_versions, st.longest_chain),
            (1_000, 1),
            "only the load wrote"
        );
    }
}
