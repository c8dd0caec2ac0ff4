//! TPC-C (specification 5.11) on Strata, with the Peloton study's StockScan
//! query and the consistency conditions 1-4.
//!
//! ```text
//!   warehouse ─1:10─ district ─1:3000─ customer ─1:n─ history
//!        │                │                 └─1:n─ orders ─1:5..15─ order_line
//!        └─1:100k─ stock ─n:1─ item            └─ new_order (undelivered orders)
//!
//!   mix: NewOrder 45%  Payment 43%  OrderStatus 4%  Delivery 4%  StockLevel 4%
//!   + StockScan (optional): a read-only scan of every stock row, on its own thread
//!   TPC-C-hybrid (`hybrid`): + TPC-CH's region, nation, supplier and ERMIA's Q2*
//! ```
//!
//! Money is kept in cents and rates (tax, discount) in basis points, as
//! 64-bit integers. Each worker thread is a terminal bound to a home
//! warehouse (thread i -> warehouse i mod W + 1), or, for ERMIA's skew
//! experiments, draws each transaction's warehouse (`WarehousePick`,
//! `tpcc/skew.rs`). Secondary indexes serve
//! Payment's and OrderStatus's lookups by customer last name
//! (`customer_by_last`: w, d, last, first; or, with `--by-name list`, a
//! table of ids per name loaded once, as the peers keep it:
//! `tpcc/by_name.rs`) and OrderStatus's "latest order of
//! a customer" (`orders_by_customer`: w, d, c, o). The second is created only
//! when the mix runs OrderStatus: nothing else reads it, and a NewOrder +
//! Payment run that kept it up to date would do one index insert per order
//! more than the peers it is compared with (CCBench's `tpcc_silo` keeps no
//! such index).
//!
//! Delivery needs the oldest undelivered order of each district: the first
//! row of the district's NEW-ORDER range, read by a scan that stops there
//! (`scan_while`), so its phantom protection ends at that order and the
//! NewOrders appending to the district do not conflict with it. It starts
//! at a *delivery hint*, the o_id after the last one a committed Delivery
//! removed: a delivered order's row stays in the index as a tombstone
//! until GC unlinks it, and a scan from the district's start would read
//! each of those. Rows below the hint are gone in the latest committed
//! state (a transaction whose snapshot still sees one would conflict
//! deleting it).
//!
//! A transaction that loses a conflict counts as aborted with its reason and
//! is not retried. NewOrder's specified 1% rollbacks (an unused item id)
//! count as aborts with reason `user-rollback`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Instant;

use serde::Serialize;
use strata::{
    Database, Error, Index, IndexKind, Key, PointLookups, Schema, Table, Transaction, Type, Unique,
    Value,
};

use crate::driver::{self, DriverConfig, Observer, Outcome, Report, Worker};
use crate::rng::Rng;
use crate::WorkloadError;

/// Districts per warehouse (fixed by the specification).
pub const DISTRICTS: i64 = 10;

/// The abort reasons that are the workload's own outcomes, not the
/// protocol's conflicts: NewOrder's specified 1 % rollbacks, a row a
/// Delivery found gone, a key taken twice. They are not retried, and a
/// design is not charged for them.
pub const WORKLOAD_OUTCOMES: [&str; 3] = ["user-rollback", "not-found", "duplicate-key"];
/// Transaction types, in report order.
pub const TYPES: [&str; 7] = [
    "new-order",
    "payment",
    "order-status",
    "delivery",
    "stock-level",
    "stock-scan",
    "q2*",
];
const NEW_ORDER: usize = 0;
const PAYMENT: usize = 1;
const ORDER_STATUS: usize = 2;
const DELIVERY: usize = 3;
const STOCK_LEVEL: usize = 4;
const STOCK_SCAN: usize = 5;
const Q2_STAR: usize = 6;
/// The types a mix's percentages are for, in `TpccConfig::mix` order.
const MIX_TYPES: [usize; 6] = [
    NEW_ORDER,
    PAYMENT,
    ORDER_STATUS,
    DELIVERY,
    STOCK_LEVEL,
    Q2_STAR,
];

mod by_name;
mod hybrid;
mod skew;
mod tables;
pub use crate::window::{ComponentTime, LogReport, TimeReport};
pub use by_name::{ByName, Names};
pub use hybrid::{Ch, ChTables, Q2_REFILL, Q2_THRESHOLD, SUPPLIERS};
pub use skew::WarehousePick;
use tables::{insert_stock, run_load_jobs, schema};
pub use tables::{load_stock, stock_schema, Tables};

/// Sizes and mix of a TPC-C database.
#[derive(Debug, Clone, Serialize)]
pub struct TpccConfig {
    pub warehouses: u32,
    /// Rows of `item`, and stock rows per warehouse (100,000 in the spec).
    pub items: u32,
    /// Customers per district, and initial orders per district (3,000).
    pub customers: u32,
    /// Terminal threads running the mix.
    pub threads: usize,
    /// Run the StockScan query on an extra thread.
    pub stock_scan: bool,
    /// Run a transaction lost to a conflict again with the same inputs,
    /// after a randomised exponential backoff ([`strata::backoff`]), until
    /// it commits (a terminal retries); otherwise draw a new one.
    /// Rollbacks the mix asks for (NewOrder's 1%) and missing or duplicate
    /// rows are not retried.
    pub retry_aborted: bool,
    pub seed: u64,
    /// Percent of each transaction type (NewOrder, Payment, OrderStatus,
    /// Delivery, StockLevel, Q2*); they add up to 100. [`STANDARD_MIX`] is
    /// the specification's; [`NEW_ORDER_PAYMENT`] is the two-transaction
    /// mix many papers (and CCBench's `tpcc_silo`) run; [`HYBRID_MIX`] is
    /// ERMIA's TPC-C-hybrid. A mix with Q2* loads TPC-CH's tables.
    pub mix: [u32; 6],
    /// Q2*'s size: the fraction of the supplier table it scans (ERMIA
    /// varies it from 1% to 100%).
    pub q2_size: f64,
    /// NewOrder hands its item and stock keys to `Transaction::prefetch`
    /// before it reads them, so their cache misses overlap (CCBench's
    /// `tpcc_silo` does not).
    pub prefetch: bool,
    /// The tables TPC-C appends to and scans (history, new_order, orders,
    /// order_line) get a hash side for point lookups too, like every
    /// other table; by default their primary index is the tree alone
    /// ([`strata::PointLookups::Tree`]), as every table of CCBench's
    /// `tpcc_silo` is: their inserts then write nothing else.
    pub appended_hash: bool,
    /// Which warehouse each transaction runs against: the thread's fixed
    /// home (the default), or one drawn per transaction, uniformly or with
    /// 80-20 skew (ERMIA Fig. 8; see [`WarehousePick`]).
    pub warehouse_pick: WarehousePick,
    /// The structure of the secondary indexes (`customer_by_last`,
    /// `orders_by_customer`): today's kind, or MV-PBT, whose records
    /// carry their versions' stamps (MV-PBT Figures 12a and 14 run TPC-C
    /// through it).
    #[serde(serialize_with = "kind_name")]
    pub index_kind: IndexKind,
    /// How Payment and OrderStatus find a customer by last name: the
    /// secondary index `customer_by_last` (the default) or a list loaded
    /// once, as CCBench's `tpcc_silo` keeps it (see [`ByName`]).
    pub by_name: ByName,
}

fn kind_name<S: serde::Serializer>(k: &IndexKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(k.name())
}

/// Checks `--warehouses` and `--items` (TPC-C's and the Stock-only
/// workloads' scale).
pub(crate) fn validate_scale(warehouses: u32, items: u32) -> Result<(), WorkloadError> {
    if warehouses == 0 || warehouses > 10_000 {
        return Err(WorkloadError::Config(format!(
            "--warehouses must be in 1..=10000, got {warehouses}"
        )));
    }
    if !(100..=100_000).contains(&items) {
        return Err(WorkloadError::Config(format!(
            "--items must be in 100..=100000, got {items}"
        )));
    }
    Ok(())
}

/// The specification's mix (§5.2.3 minimums, NewOrder the rest).
pub const STANDARD_MIX: [u32; 6] = [45, 43, 4, 4, 4, 0];
/// NewOrder and Payment only, half each ("TPC-C-NP").
pub const NEW_ORDER_PAYMENT: [u32; 6] = [50, 50, 0, 0, 0, 0];
/// ERMIA's TPC-C-hybrid (§5): NewOrder 40, Payment 38, Q2* 10, and 4 each
/// of OrderStatus, Delivery and StockLevel.
pub const HYBRID_MIX: [u32; 6] = [40, 38, 4, 4, 4, 10];

impl TpccConfig {
    /// The specification's sizes.
    pub fn spec(warehouses: u32) -> Self {
        TpccConfig {
            warehouses,
            items: 100_000,
            customers: 3_000,
            threads: 2,
            stock_scan: false,
            retry_aborted: true,
            seed: 1,
            mix: STANDARD_MIX,
            q2_size: 0.2,
            prefetch: true,
            appended_hash: false,
            warehouse_pick: WarehousePick::Fixed,
            index_kind: IndexKind::Standard,
            by_name: ByName::Index,
        }
    }

    /// The same, running ERMIA's TPC-C-hybrid mix.
    pub fn hybrid(self) -> Self {
        TpccConfig {
            mix: HYBRID_MIX,
            ..self
        }
    }

    /// Whether the mix runs Q2* (and the TPC-CH tables are loaded).
    pub fn has_q2(&self) -> bool {
        self.mix[5] > 0
    }

    /// Whether the mix runs OrderStatus (and `orders_by_customer` exists).
    pub fn has_order_status(&self) -> bool {
        self.mix[ORDER_STATUS] > 0
    }

    /// A small database for tests: same schema, mix and rules.
    pub fn small(warehouses: u32) -> Self {
        TpccConfig {
            items: 1_000,
            customers: 60,
            ..TpccConfig::spec(warehouses)
        }
    }

    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |m: String| Err(WorkloadError::Config(m));
        validate_scale(self.warehouses, self.items)?;
        if self.customers < 10 || self.customers > 3_000 {
            return bad(format!(
                "--customers must be in 10..=3000, got {}",
                self.customers
            ));
        }
        if self.mix.iter().sum::<u32>() != 100 {
            return bad(format!(
                "--mix: the percentages must add up to 100, got {:?}",
                self.mix
            ));
        }
        if !(self.q2_size > 0.0 && self.q2_size <= 1.0) {
            return bad(format!(
                "--q2-size is a fraction of the supplier table, in (0, 1], got {}",
                self.q2_size
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

    /// Orders per district delivered at load time (the first 70%).
    fn delivered_at_load(&self) -> i64 {
        (self.customers as i64 * 7) / 10
    }
}

// Column positions, per table.
pub(crate) mod col {
    pub const W_NAME: usize = 1;
    pub const W_TAX: usize = 7;
    pub const W_YTD: usize = 8;
    pub const D_NAME: usize = 2;
    pub const D_TAX: usize = 8;
    pub const D_YTD: usize = 9;
    pub const D_NEXT_O_ID: usize = 10;
    pub const C_ID: usize = 2;
    pub const C_CREDIT: usize = 13;
    pub const C_DISCOUNT: usize = 15;
    pub const C_BALANCE: usize = 16;
    pub const C_YTD_PAYMENT: usize = 17;
    pub const C_PAYMENT_CNT: usize = 18;
    pub const C_DELIVERY_CNT: usize = 19;
    pub const C_DATA: usize = 20;
    pub const NO_O_ID: usize = 2;
    pub const O_ID: usize = 2;
    pub const O_C_ID: usize = 3;
    pub const O_CARRIER_ID: usize = 5;
    pub const O_OL_CNT: usize = 6;
    pub const OL_NUMBER: usize = 3;
    pub const OL_I_ID: usize = 4;
    pub const OL_DELIVERY_D: usize = 6;
    pub const OL_AMOUNT: usize = 8;
    pub const I_PRICE: usize = 3;
    pub const S_QUANTITY: usize = 2;
    pub const S_DIST_01: usize = 3;
    pub const S_YTD: usize = 13;
    pub const S_ORDER_CNT: usize = 14;
    pub const S_REMOTE_CNT: usize = 15;
}

fn int(v: i64) -> Value {
    Value::Int(v)
}
fn k1(a: i64) -> Key {
    Key(vec![int(a)])
}
fn k2(a: i64, b: i64) -> Key {
    Key(vec![int(a), int(b)])
}
fn k3(a: i64, b: i64, c: i64) -> Key {
    Key(vec![int(a), int(b), int(c)])
}
fn k4(a: i64, b: i64, c: i64, d: i64) -> Key {
    Key(vec![int(a), int(b), int(c), int(d)])
}
/// `rows` as keys of integers, in `keys` from the front: the keys there
/// (and their vectors) are rewritten, not made again. A NewOrder's item
/// and stock keys were 20 to 30 allocations and as many frees, about
/// 2,000 instructions (callgrind); CCBench's `tpcc_silo` builds its keys
/// on the stack.
fn int_keys<const N: usize>(keys: &mut Vec<Key>, rows: impl Iterator<Item = [i64; N]>) -> &[Key] {
    let mut n = 0;
    for row in rows {
        if n == keys.len() {
            keys.push(Key(Vec::with_capacity(N)));
        }
        let k = &mut keys[n].0;
        k.clear();
        k.extend(row.map(Value::Int));
        n += 1;
    }
    &keys[..n]
}
fn get_int(row: &[Value], i: usize) -> i64 {
    row[i].as_int().unwrap_or(0)
}

/// The spec's last-name syllables (4.3.2.3).
const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// Customer last name number `n` in 0..=999.
pub fn last_name(n: u64) -> String {
    let n = n as usize;
    // Sized at once (at most three five-letter syllables): `format!` grew
    // its buffer piece by piece, a reallocation or two a Payment.
    let mut s = String::with_capacity(15);
    for i in [n / 100 % 10, n / 10 % 10, n % 10] {
        s.push_str(SYLLABLES[i]);
    }
    s
}

/// NURand(A, x, y) of the specification (2.1.6) with run constant `c`.
pub fn nurand(rng: &mut Rng, a: u64, x: u64, y: u64, c: u64) -> u64 {
    (((rng.range(0, a) | rng.range(x, y)) + c) % (y - x + 1)) + x
}

/// Random alphanumeric strings, drawn from a pool so loading does not
/// spend its time in the allocator (values are shared by reference count).
struct Pool(Vec<Value>);

impl Pool {
    fn new(rng: &mut Rng, n: usize, lo: u64, hi: u64) -> Self {
        const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        Pool(
            (0..n)
                .map(|_| {
                    let len = rng.range(lo, hi) as usize;
                    let s: String = (0..len)
                        .map(|_| ALNUM[rng.range(0, ALNUM.len() as u64 - 1) as usize] as char)
                        .collect();
                    Value::from(s)
                })
                .collect(),
        )
    }
    fn pick(&self, rng: &mut Rng) -> Value {
        self.0[rng.range(0, self.0.len() as u64 - 1) as usize].clone()
    }
}

struct Pools {
    short: Pool,  // names, streets, cities: 10-20
    data: Pool,   // i_data, s_data: 26-50
    c_data: Pool, // 300-500
    dist: Pool,   // s_dist_xx: 24
    h_data: Pool, // 12-24
    state: Pool,  // 2
    zip: Pool,    // 9
    phone: Pool,  // 16
}

impl Pools {
    fn new(seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0x5eed);
        Pools {
            short: Pool::new(&mut rng, 512, 10, 20),
            data: Pool::new(&mut rng, 512, 26, 50),
            c_data: Pool::new(&mut rng, 64, 300, 500),
            dist: Pool::new(&mut rng, 512, 24, 24),
            h_data: Pool::new(&mut rng, 256, 12, 24),
            state: Pool::new(&mut rng, 64, 2, 2),
            zip: Pool::new(&mut rng, 64, 9, 9),
            phone: Pool::new(&mut rng, 64, 16, 16),
        }
    }

    /// An i_data / s_data value: 10% contain "ORIGINAL" (4.3.3.1).
    fn item_data(&self, rng: &mut Rng) -> Value {
        if rng.chance(0.1) {
            let s = self.data.pick(rng);
            let s = s.as_text().unwrap_or_default();
            let at = s.len().saturating_sub(8) / 2;
            Value::from(format!(
                "{}ORIGINAL{}",
                &s[..at],
                &s[at + 8.min(s.len() - at)..]
            ))
        } else {
            self.data.pick(rng)
        }
    }
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A loaded TPC-C database.
pub struct Tpcc {
    pub db: Database,
    pub t: Tables,
    pub cfg: TpccConfig,
    pools: Pools,
    /// NURand run constants for C_LAST, C_ID and OL_I_ID.
    c_last: u64,
    c_id: u64,
    ol_i_id: u64,
    /// Per (warehouse, district): the o_id after the last delivered one.
    delivery_hint: Vec<AtomicI64>,
    /// Next history row id (history has no natural key).
    next_history: AtomicU64,
    /// TPC-CH's tables, when the mix runs Q2*.
    pub ch: Option<Ch>,
}

/// One load job: a transaction's worth of rows.
enum Job {
    Items(i64, i64),
    Warehouse(i64),
    Stock(i64, i64, i64),
    Customers(i64, i64),
    Orders(i64, i64, i64, i64),
}

impl Tpcc {
    /// Creates the tables in `db` and loads them (spec 4.3.3.1), threads
    /// taking jobs from a queue.
    pub fn load(
        db: Database,
        cfg: TpccConfig,
        observer: &mut dyn Observer,
    ) -> Result<Tpcc, WorkloadError> {
        cfg.validate()?;
        let t = Tables::create(&db, &cfg)?;
        let mut rng = Rng::new(cfg.seed);
        let tpcc = Tpcc {
            pools: Pools::new(cfg.seed),
            c_last: rng.range(0, 255),
            c_id: rng.range(0, 1023),
            ol_i_id: rng.range(0, 8191),
            delivery_hint: (0..cfg.warehouses as i64 * DISTRICTS)
                .map(|_| AtomicI64::new(cfg.delivered_at_load() + 1))
                .collect(),
            next_history: AtomicU64::new(1),
            ch: None,
            db,
            t,
            cfg,
        };
        let mut jobs = Vec::new();
        let items = tpcc.cfg.items as i64;
        for lo in (1..=items).step_by(1000) {
            jobs.push(Job::Items(lo, (lo + 1000).min(items + 1)));
        }
        let orders = tpcc.cfg.customers as i64;
        for w in 1..=tpcc.cfg.warehouses as i64 {
            jobs.push(Job::Warehouse(w));
            for lo in (1..=items).step_by(1000) {
                jobs.push(Job::Stock(w, lo, (lo + 1000).min(items + 1)));
            }
            for d in 1..=DISTRICTS {
                jobs.push(Job::Customers(w, d));
                for lo in (1..=orders).step_by(100) {
                    jobs.push(Job::Orders(w, d, lo, (lo + 100).min(orders + 1)));
                }
            }
        }
        run_load_jobs(
            &tpcc.db,
            &jobs,
            tpcc.cfg.threads,
            tpcc.cfg.seed,
            observer,
            |txn, job, rng| tpcc.load_job(txn, job, rng),
        )?;
        let mut tpcc = tpcc;
        if tpcc.cfg.has_q2() {
            tpcc.ch = Some(Ch::load(&tpcc.db, &tpcc.cfg)?);
        }
        Ok(tpcc)
    }

    fn load_job(&self, txn: &mut Transaction, job: &Job, rng: &mut Rng) -> Result<(), Error> {
        let p = &self.pools;
        let now = now_secs();
        let data = |rng: &mut Rng| p.item_data(rng);
        match *job {
            Job::Items(lo, hi) => {
                for i in lo..hi {
                    txn.insert(
                        &self.t.item,
                        vec![
                            int(i),
                            int(rng.range(1, 10_000) as i64),
                            p.short.pick(rng),
                            int(rng.range(100, 10_000) as i64),
                            data(rng),
                        ],
                    )?;
                }
            }
            Job::Warehouse(w) => {
                txn.insert(
                    &self.t.warehouse,
                    vec![
                        int(w),
                        p.short.pick(rng),
                        p.short.pick(rng),
                        p.short.pick(rng),
                        p.short.pick(rng),
                        p.state.pick(rng),
                        p.zip.pick(rng),
                        int(rng.range(0, 2000) as i64),
                        int(30_000_000),
                    ],
                )?;
                for d in 1..=DISTRICTS {
                    txn.insert(
                        &self.t.district,
                        vec![
                            int(w),
                            int(d),
                            p.short.pick(rng),
                            p.short.pick(rng),
                            p.short.pick(rng),
                            p.short.pick(rng),
                            p.state.pick(rng),
                            p.zip.pick(rng),
                            int(rng.range(0, 2000) as i64),
                            int(3_000_000),
                            int(self.cfg.customers as i64 + 1),
                        ],
                    )?;
                }
            }
            Job::Stock(w, lo, hi) => insert_stock(txn, &self.t.stock, p, w, lo, hi, rng)?,
            Job::Customers(w, d) => {
                let n = self.cfg.customers as u64;
                // Per last name, (first name, id): `ByName::List`'s rows.
                let mut named: BTreeMap<String, Vec<(Value, i64)>> = BTreeMap::new();
                for c in 1..=n as i64 {
                    // The first 1,000 (or all, when fewer) take the names in
                    // order, so every name NURand can draw exists.
                    let last = if (c as u64) <= n.min(1000) {
                        last_name(c as u64 - 1)
                    } else {
                        last_name(nurand(rng, 255, 0, 999.min(n - 1), self.c_last))
                    };
                    let credit = if rng.chance(0.1) { "BC" } else { "GC" };
                    let first = p.short.pick(rng);
                    if matches!(self.t.names, Names::List(_)) {
                        named
                            .entry(last.clone())
                            .or_default()
                            .push((first.clone(), c));
                    }
                    txn.insert(
                        &self.t.customer,
                        vec![
                            int(w),
                            int(d),
                            int(c),
                            first,
                            Value::from("OE"),
                            Value::from(last),
                            p.short.pick(rng),
                            p.short.pick(rng),
                            p.short.pick(rng),
                            p.state.pick(rng),
                            p.zip.pick(rng),
                            p.phone.pick(rng),
                            int(now),
                            Value::from(credit),
                            int(5_000_000),
                            int(rng.range(0, 5000) as i64),
                            int(-1000),
                            int(1000),
                            int(1),
                            int(0),
                            p.c_data.pick(rng),
                        ],
                    )?;
                    let h = self.next_history.fetch_add(1, Ordering::Relaxed) as i64;
                    txn.insert(
                        &self.t.history,
                        vec![
                            int(h),
                            int(c),
                            int(d),
                            int(w),
                            int(d),
                            int(w),
                            int(now),
                            int(1000),
                            p.h_data.pick(rng),
                        ],
                    )?;
                }
                if let Names::List(lists) = &self.t.names {
                    for (last, mut people) in named {
                        // The index's order: first name, then id.
                        people.sort();
                        let ids = by_name::encode_ids(people.into_iter().map(|(_, c)| c));
                        txn.insert(lists, vec![int(w), int(d), Value::from(last), ids])?;
                    }
                }
            }
            Job::Orders(w, d, lo, hi) => {
                // o_c_id is a permutation of the customers: a fixed
                // multiplicative permutation keeps jobs independent.
                let n = self.cfg.customers as i64;
                let step = coprime_step(n);
                for o in lo..hi {
                    let c = ((o - 1) * step) % n + 1;
                    let delivered = o <= self.cfg.delivered_at_load();
                    let ol_cnt = rng.range(5, 15) as i64;
                    let carrier = if delivered {
                        rng.range(1, 10) as i64
                    } else {
                        0
                    };
                    txn.insert(
                        &self.t.orders,
                        vec![
                            int(w),
                            int(d),
                            int(o),
                            int(c),
                            int(now),
                            int(carrier),
                            int(ol_cnt),
                            int(1),
                        ],
                    )?;
                    for ol in 1..=ol_cnt {
                        txn.insert(
                            &self.t.order_line,
                            vec![
                                int(w),
                                int(d),
                                int(o),
                                int(ol),
                                int(rng.range(1, self.cfg.items as u64) as i64),
                                int(w),
                                int(if delivered { now } else { 0 }),
                                int(5),
                                int(if delivered {
                                    0
                                } else {
                                    rng.range(1, 999_999) as i64
                                }),
                                p.dist.pick(rng),
                            ],
                        )?;
                    }
                    if !delivered {
                        txn.insert(&self.t.new_order, vec![int(w), int(d), int(o)])?;
                    }
                }
            }
        }
        Ok(())
    }

    fn hint(&self, w: i64, d: i64) -> &AtomicI64 {
        &self.delivery_hint[((w - 1) * DISTRICTS + (d - 1)) as usize]
    }
}

/// A step coprime with `n`, so `o -> (o * step) mod n` is a permutation.
fn coprime_step(n: i64) -> i64 {
    fn gcd(a: i64, b: i64) -> i64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    (n / 2 + 1..n + n / 2 + 2)
        .find(|&s| gcd(s, n) == 1)
        .unwrap_or(1)
}

/// How a transaction body ended without an engine error.
enum Flow {
    Commit,
    /// NewOrder's specified rollback.
    Rollback,
}

/// A TPC-C terminal.
pub struct TpccWorker<'a> {
    tpcc: &'a Tpcc,
    rng: Rng,
    /// The warehouse of the transaction being run (`fixed_home` unless
    /// `TpccConfig::warehouse_pick` draws one per transaction).
    home: i64,
    /// Thread i's warehouse, i mod W + 1.
    fixed_home: i64,
    /// Runs StockScan only.
    scanner: bool,
    /// Set after a conflict: the type and the generator state its inputs
    /// were drawn from, to draw the same inputs again.
    retry: Option<(usize, Rng)>,
    /// Conflicts in a row of the transaction being retried.
    attempt: u32,
    /// NewOrder's item and stock keys, kept from one NewOrder to the
    /// next and rewritten in place (`int_keys`).
    item_keys: Vec<Key>,
    stock_keys: Vec<Key>,
    /// Every last name NURand can draw, made once: a Payment's name was
    /// built syllable by syllable and copied into a new text each time
    /// (about 200 instructions). The worker's own, so that the count a
    /// clone adds is on a line no other thread writes.
    last_names: Vec<Value>,
}

impl<'a> TpccWorker<'a> {
    pub fn new(tpcc: &'a Tpcc, thread: usize, scanner: bool) -> Self {
        let home = (thread as i64 % tpcc.cfg.warehouses as i64) + 1;
        TpccWorker {
            tpcc,
            rng: Rng::for_thread(tpcc.cfg.seed, thread),
            home,
            fixed_home: home,
            scanner,
            retry: None,
            attempt: 0,
            item_keys: Vec::new(),
            stock_keys: Vec::new(),
            last_names: (0..1000.min(u64::from(tpcc.cfg.customers)))
                .map(|n| Value::from(last_name(n)))
                .collect(),
        }
    }

    fn other_warehouse(&mut self) -> i64 {
        let w = self.tpcc.cfg.warehouses as u64;
        if w == 1 {
            return self.home;
        }
        let x = self.rng.range(1, w - 1) as i64;
        if x >= self.home {
            x + 1
        } else {
            x
        }
    }

    fn customer_id(&mut self) -> i64 {
        let n = self.tpcc.cfg.customers as u64;
        nurand(&mut self.rng, 1023.min(n - 1), 1, n, self.tpcc.c_id) as i64
    }

    /// A last name drawn as the specification says, as a text value of
    /// this worker's own (`last_names`).
    fn customer_last(&mut self) -> Value {
        let n = self.tpcc.cfg.customers as u64;
        let i = nurand(&mut self.rng, 255, 0, 999.min(n - 1), self.tpcc.c_last);
        self.last_names[i as usize].clone()
    }

    /// What `f` takes from the customer row (see `find_customer`). `f`
    /// sees the row in place, so the caller copies only the columns it
    /// uses (a customer row holds a dozen texts, and a clone of each is an
    /// atomic increment on its own cold cache line).
    fn customer<R>(
        &self,
        txn: &mut Transaction,
        w: i64,
        d: i64,
        by_last: Option<&Value>,
        c_id: i64,
        f: impl FnMut(&[Value]) -> R,
    ) -> Result<R, Error> {
        let c_id = self.find_customer(txn, w, d, by_last, c_id)?;
        txn.read_with(&self.tpcc.t.customer, &k3(w, d, c_id), f)?
            .ok_or_else(|| Error::NotFound {
                table: "customer".into(),
                key: format!("({w}, {d}, {c_id})"),
            })
    }

    /// The id of the customer a transaction names: by last name (the
    /// middle one of those sorted by first name, 2.5.2.2) or by id. By
    /// last name through the index, the scan (which reads every customer
    /// of that name, in first-name order: the index key) keeps only their
    /// ids, and the caller reads the middle one alone by its key: its
    /// texts are then read for one row, not a dozen. Through the lists
    /// (`ByName::List`), one row holds the ids.
    fn find_customer(
        &self,
        txn: &mut Transaction,
        w: i64,
        d: i64,
        by_last: Option<&Value>,
        c_id: i64,
    ) -> Result<i64, Error> {
        let t = &self.tpcc.t;
        let Some(last) = by_last else {
            return Ok(c_id);
        };
        let missing = || Error::NotFound {
            table: "customer".into(),
            key: format!("last name {}", last.as_text().unwrap_or_default()),
        };
        let name = Key(vec![int(w), int(d), last.clone()]);
        match &t.names {
            Names::Index(index) => {
                // (NURand's popular names have a dozen customers or so.)
                let mut ids = Vec::with_capacity(16);
                txn.index_scan_with(index, &name..=&name, |r| ids.push(get_int(r, col::C_ID)))?;
                ids.get(ids.len().wrapping_sub(1) / 2)
                    .copied()
                    .ok_or_else(missing)
            }
            Names::List(lists) => txn
                .read_with(lists, &name, |r| by_name::middle_id(&r[by_name::C_IDS]))?
                .flatten()
                .ok_or_else(missing),
        }
    }

    fn new_order(&mut self, txn: &mut Transaction) -> Result<Flow, Error> {
        let tp = self.tpcc;
        let t = &tp.t;
        let w = self.home;
        let d = self.rng.range(1, DISTRICTS as u64) as i64;
        let c = self.customer_id();
        let ol_cnt = self.rng.range(5, 15) as i64;
        let rollback = self.rng.chance(0.01);
        let items = tp.cfg.items as u64;
        let mut lines = Vec::with_capacity(ol_cnt as usize);
        for n in 1..=ol_cnt {
            let i_id = if rollback && n == ol_cnt {
                items as i64 + 1 // unused: the specified rollback
            } else {
                nurand(&mut self.rng, 8191.min(items - 1), 1, items, tp.ol_i_id) as i64
            };
            let supply = if self.rng.chance(0.01) {
                self.other_warehouse()
            } else {
                w
            };
            lines.push((i_id, supply, self.rng.range(1, 10) as i64));
        }
        let w_tax = txn
            .read_with(&t.warehouse, &k1(w), |r| get_int(r, col::W_TAX))?
            .unwrap_or(0);
        // (Read and written from one lookup, as the stock rows below.)
        let (d_tax, o_id) = txn.update_with(&t.district, &k2(w, d), |r| {
            let o_id = get_int(r, col::D_NEXT_O_ID);
            (
                [(col::D_NEXT_O_ID, int(o_id + 1))],
                (get_int(r, col::D_TAX), o_id),
            )
        })?;
        let discount = txn
            .read_with(&t.customer, &k3(w, d, c), |r| get_int(r, col::C_DISCOUNT))?
            .unwrap_or(0);
        let all_local = lines.iter().all(|l| l.1 == w);
        txn.insert(
            &t.orders,
            vec![
                int(w),
                int(d),
                int(o_id),
                int(c),
                int(now_secs()),
                int(0),
                int(ol_cnt),
                int(i64::from(all_local)),
            ],
        )?;
        txn.insert(&t.new_order, vec![int(w), int(d), int(o_id)])?;
        // Each line's keys, made once for the hint and the accesses.
        let item_keys = int_keys(&mut self.item_keys, lines.iter().map(|l| [l.0]));
        let stock_keys = int_keys(&mut self.stock_keys, lines.iter().map(|l| [l.1, l.0]));
        if tp.cfg.prefetch {
            txn.prefetch(&t.item, item_keys)?;
            txn.prefetch(&t.stock, stock_keys)?;
        }
        let mut total = 0i64;
        for (n, &(i_id, supply, qty)) in lines.iter().enumerate() {
            let Some(price) =
                txn.read_with(&t.item, &item_keys[n], |r| get_int(r, col::I_PRICE))?
            else {
                return Ok(Flow::Rollback);
            };
            // The four counters and this district's S_DIST, not the row's
            // eleven texts; read and written from one lookup.
            let s_dist = txn.update_with(&t.stock, &stock_keys[n], |r| {
                let s_qty = get_int(r, col::S_QUANTITY);
                let new_qty = if s_qty >= qty + 10 {
                    s_qty - qty
                } else {
                    s_qty - qty + 91
                };
                let changes = [
                    (col::S_QUANTITY, int(new_qty)),
                    (col::S_YTD, int(get_int(r, col::S_YTD) + qty)),
                    (col::S_ORDER_CNT, int(get_int(r, col::S_ORDER_CNT) + 1)),
                    (
                        col::S_REMOTE_CNT,
                        int(get_int(r, col::S_REMOTE_CNT) + i64::from(supply != w)),
                    ),
                ];
                (changes, r[col::S_DIST_01 + (d as usize - 1)].clone())
            })?;
            let amount = qty * price;
            total += amount;
            txn.insert(
                &t.order_line,
                vec![
                    int(w),
                    int(d),
                    int(o_id),
                    int(n as i64 + 1),
                    int(i_id),
                    int(supply),
                    int(0),
                    int(qty),
                    int(amount),
                    s_dist,
                ],
            )?;
        }
        // The total the terminal would display.
        std::hint::black_box(total * (10_000 - discount) * (10_000 + w_tax + d_tax));
        Ok(Flow::Commit)
    }

    fn payment(&mut self, txn: &mut Transaction) -> Result<Flow, Error> {
        let tp = self.tpcc;
        let t = &tp.t;
        let w = self.home;
        let d = self.rng.range(1, DISTRICTS as u64) as i64;
        let (c_w, c_d) = if self.rng.chance(0.85) || tp.cfg.warehouses == 1 {
            (w, d)
        } else {
            (
                self.other_warehouse(),
                self.rng.range(1, DISTRICTS as u64) as i64,
            )
        };
        let by_last = self.rng.chance(0.6).then(|| self.customer_last());
        let c_id = self.customer_id();
        let amount = self.rng.range(100, 500_000) as i64;

        // Each row read and written from one lookup.
        let w_name = txn.update_with(&t.warehouse, &k1(w), |r| {
            let w_ytd = get_int(r, col::W_YTD);
            ([(col::W_YTD, int(w_ytd + amount))], r[col::W_NAME].clone())
        })?;
        let d_name = txn.update_with(&t.district, &k2(w, d), |r| {
            let d_ytd = get_int(r, col::D_YTD);
            ([(col::D_YTD, int(d_ytd + amount))], r[col::D_NAME].clone())
        })?;
        let c_id = self.find_customer(txn, c_w, c_d, by_last.as_ref(), c_id)?;
        // The columns Payment changes, and C_DATA only for a bad-credit
        // customer, whose data it rewrites.
        txn.update_with(&t.customer, &k3(c_w, c_d, c_id), |r| {
            let mut changes = vec![
                (col::C_BALANCE, int(get_int(r, col::C_BALANCE) - amount)),
                (
                    col::C_YTD_PAYMENT,
                    int(get_int(r, col::C_YTD_PAYMENT) + amount),
                ),
                (col::C_PAYMENT_CNT, int(get_int(r, col::C_PAYMENT_CNT) + 1)),
            ];
            if r[col::C_CREDIT].as_text() == Some("BC") {
                let old = r[col::C_DATA].as_text().unwrap_or_default();
                let mut data = String::with_capacity(old.len() + 64);
                let _ = write!(data, "{c_id} {c_d} {c_w} {d} {w} {amount} | {old}");
                let mut cut = 500.min(data.len());
                while !data.is_char_boundary(cut) {
                    cut -= 1;
                }
                data.truncate(cut);
                changes.push((col::C_DATA, Value::from(data)));
            }
            (changes, ())
        })?;
        let (w_name, d_name) = (
            w_name.as_text().unwrap_or_default(),
            d_name.as_text().unwrap_or_default(),
        );
        let mut h_data = String::with_capacity(w_name.len() + 4 + d_name.len());
        for part in [w_name, "    ", d_name] {
            h_data.push_str(part);
        }
        let h = tp.next_history.fetch_add(1, Ordering::Relaxed) as i64;
        txn.insert(
            &t.history,
            vec![
                int(h),
                int(c_id),
                int(c_d),
                int(c_w),
                int(d),
                int(w),
                int(now_secs()),
                int(amount),
                Value::from(h_data),
            ],
        )?;
        Ok(Flow::Commit)
    }

    fn order_status(&mut self, txn: &mut Transaction) -> Result<Flow, Error> {
        let t = &self.tpcc.t;
        let w = self.home;
        let d = self.rng.range(1, DISTRICTS as u64) as i64;
        let by_last = self.rng.chance(0.6).then(|| self.customer_last());
        let c_id = self.customer_id();
        // The terminal shows the balance and the names; C_ID leads on.
        let (c_id, balance) = self.customer(txn, w, d, by_last.as_ref(), c_id, |r| {
            (get_int(r, col::C_ID), get_int(r, col::C_BALANCE))
        })?;
        std::hint::black_box(balance);
        let mut last_order = None;
        let by_customer = t
            .orders_by_customer
            .as_ref()
            .expect("created when the mix runs OrderStatus");
        txn.index_scan_with(by_customer, k3(w, d, c_id)..=k3(w, d, c_id), |r| {
            last_order = Some(get_int(r, col::O_ID));
        })?;
        if let Some(o) = last_order {
            let mut sum = 0i64;
            txn.scan_with(&t.order_line, k3(w, d, o)..=k3(w, d, o), |r| {
                sum += get_int(r, col::OL_AMOUNT);
            })?;
            std::hint::black_box(sum);
        }
        Ok(Flow::Commit)
    }

    fn delivery(
        &mut self,
        txn: &mut Transaction,
        delivered: &mut Vec<(i64, i64)>,
    ) -> Result<Flow, Error> {
        let tp = self.tpcc;
        let t = &tp.t;
        let w = self.home;
        let carrier = self.rng.range(1, 10) as i64;
        let now = now_secs();
        for d in 1..=DISTRICTS {
            // The oldest new order: the first row from the hint on. The
            // scan stops there, so its predicate ends at that order and
            // NewOrders appending to the district are no phantom of it.
            let hint = tp.hint(w, d).load(Ordering::Relaxed);
            let mut oldest = None;
            txn.scan_while(&t.new_order, k3(w, d, hint)..=k2(w, d), |r| {
                oldest = Some(get_int(r, col::NO_O_ID));
                ControlFlow::Break(())
            })?;
            let Some(o) = oldest else {
                continue; // no undelivered order in this district
            };
            txn.delete(&t.new_order, &k3(w, d, o))?;
            let c = txn.update_with(&t.orders, &k3(w, d, o), |r| {
                ([(col::O_CARRIER_ID, int(carrier))], get_int(r, col::O_C_ID))
            })?;
            let mut lines = Vec::new();
            txn.scan_with(&t.order_line, k3(w, d, o)..=k3(w, d, o), |r| {
                lines.push((get_int(r, col::OL_NUMBER), get_int(r, col::OL_AMOUNT)));
            })?;
            let mut total = 0;
            for (n, amount) in lines {
                total += amount;
                txn.update(
                    &t.order_line,
                    &k4(w, d, o, n),
                    &[(col::OL_DELIVERY_D, int(now))],
                )?;
            }
            txn.update_with(&t.customer, &k3(w, d, c), |r| {
                let changes = [
                    (col::C_BALANCE, int(get_int(r, col::C_BALANCE) + total)),
                    (
                        col::C_DELIVERY_CNT,
                        int(get_int(r, col::C_DELIVERY_CNT) + 1),
                    ),
                ];
                (changes, ())
            })?;
            delivered.push((d, o));
        }
        Ok(Flow::Commit)
    }

    fn stock_level(&mut self, txn: &mut Transaction) -> Result<Flow, Error> {
        let t = &self.tpcc.t;
        let w = self.home;
        let d = self.rng.range(1, DISTRICTS as u64) as i64;
        let threshold = self.rng.range(10, 20) as i64;
        let next = txn
            .read_with(&t.district, &k2(w, d), |r| get_int(r, col::D_NEXT_O_ID))?
            .unwrap_or(1);
        let mut items = Vec::new();
        txn.scan_with(&t.order_line, k3(w, d, next - 20)..k3(w, d, next), |r| {
            items.push(get_int(r, col::OL_I_ID))
        })?;
        items.sort_unstable();
        items.dedup();
        let mut low = 0;
        for i in items {
            let q = txn
                .read_with(&t.stock, &k2(w, i), |r| get_int(r, col::S_QUANTITY))?
                .unwrap_or(i64::MAX);
            low += i64::from(q < threshold);
        }
        std::hint::black_box(low);
        Ok(Flow::Commit)
    }

    /// The study's StockScan: a long read-only pass over every stock row.
    fn stock_scan(&mut self, txn: &mut Transaction) -> Result<Flow, Error> {
        let mut low = 0u64;
        // One attribute of each row (the study's StockScan "counts the
        // number of items in each warehouse", §7.1): every storage scheme
        // decodes that cell only, as append-only always did.
        txn.scan_columns_with(&self.tpcc.t.stock, .., &[col::S_QUANTITY], |r| {
            low += u64::from(get_int(r, 0) < 15);
        })?;
        std::hint::black_box(low);
        Ok(Flow::Commit)
    }

    fn pick(&mut self) -> usize {
        if self.scanner {
            return STOCK_SCAN;
        }
        let mut r = self.rng.range(1, 100) as u32;
        for (&ty, &pct) in MIX_TYPES.iter().zip(&self.tpcc.cfg.mix) {
            if r <= pct {
                return ty;
            }
            r -= pct;
        }
        unreachable!("validate: the mix adds up to 100")
    }
}

/// A conflict or a missing/duplicate row is an abort (with its reason);
/// anything else stops the run.
fn abort_reason(e: Error) -> Result<Outcome, WorkloadError> {
    match e {
        Error::Conflict(k) => Ok(Outcome::Aborted(k.name())),
        Error::NotFound { .. } => Ok(Outcome::Aborted("not-found")),
        Error::DuplicateKey { .. } => Ok(Outcome::Aborted("duplicate-key")),
        other => Err(other.into()),
    }
}

impl TpccWorker<'_> {
    /// One attempt of a transaction of type `ty`: begin, body, commit or
    /// roll back.
    fn try_once(&mut self, ty: usize) -> Result<Outcome, WorkloadError> {
        let db = &self.tpcc.db;
        let mut txn = if ty == STOCK_SCAN {
            db.begin_read_only()?
        } else {
            db.begin()?
        };
        let mut delivered = Vec::new();
        let body = match ty {
            NEW_ORDER => self.new_order(&mut txn),
            PAYMENT => self.payment(&mut txn),
            ORDER_STATUS => self.order_status(&mut txn),
            DELIVERY => self.delivery(&mut txn, &mut delivered),
            STOCK_LEVEL => self.stock_level(&mut txn),
            Q2_STAR => {
                let region = self.rng.range(0, hybrid::REGIONS as u64 - 1) as i64;
                hybrid::q2_star(self, &mut txn, region)
            }
            _ => self.stock_scan(&mut txn),
        };
        Ok(match body {
            Ok(Flow::Commit) => match txn.commit() {
                Ok(()) => {
                    for (d, o) in delivered {
                        self.tpcc
                            .hint(self.home, d)
                            .fetch_max(o + 1, Ordering::Relaxed);
                    }
                    Outcome::Committed
                }
                Err(e) => abort_reason(e)?,
            },
            Ok(Flow::Rollback) => {
                txn.abort();
                Outcome::Aborted("user-rollback")
            }
            Err(e) => {
                drop(txn);
                abort_reason(e)?
            }
        })
    }
}

impl Worker for TpccWorker<'_> {
    fn step(&mut self) -> Result<(usize, Outcome), WorkloadError> {
        let (ty, inputs) = match self.retry.take() {
            Some((ty, rng)) => {
                self.tpcc.db.backoff_after_conflict(self.attempt);
                self.rng = rng.clone();
                (ty, rng)
            }
            None => {
                let ty = self.pick();
                (ty, self.rng.clone())
            }
        };
        // After the type and from the saved state: a retry draws the same
        // warehouse again (`Fixed` draws nothing).
        let cfg = &self.tpcc.cfg;
        self.home = cfg
            .warehouse_pick
            .draw(&mut self.rng, cfg.warehouses, self.fixed_home);
        // The five TPC-C transactions are short and in memory: one epoch pin
        // each (`Database::pinned`). The analytical ones (HTAP scans) may
        // run long and pin per operation.
        let tpcc = self.tpcc;
        let outcome = if matches!(ty, STOCK_SCAN | Q2_STAR) {
            self.try_once(ty)?
        } else {
            tpcc.db.pinned(|| self.try_once(ty))?
        };
        if let Outcome::Aborted(reason) = outcome {
            if self.tpcc.cfg.retry_aborted && !WORKLOAD_OUTCOMES.contains(&reason) {
                self.attempt += 1;
                self.retry = Some((ty, inputs));
                return Ok((ty, outcome));
            }
        }
        self.attempt = 0;
        Ok((ty, outcome))
    }
}

/// What a TPC-C run measured.
#[derive(Debug, Clone, Serialize)]
pub struct TpccReport {
    pub load_s: f64,
    pub run: Report,
    pub consistency: Consistency,
    /// The measured window's time by engine component, per committed
    /// transaction (with `Options::time_breakdown`; ERMIA Fig. 11).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_breakdown: Option<TimeReport>,
    /// The measured window's log records (with the write-ahead log).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<LogReport>,
}

/// The consistency conditions checked after a run.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Consistency {
    pub warehouses_checked: u64,
    pub districts_checked: u64,
    pub orders: u64,
    pub new_orders: u64,
    pub order_lines: u64,
}

impl Tpcc {
    /// Checks consistency conditions 1-4 (spec 3.3.2.1-4) in one snapshot.
    pub fn check_consistency(&self) -> Result<Consistency, WorkloadError> {
        let t = &self.t;
        let mut txn = self.db.begin_read_only()?;
        let mut c = Consistency::default();
        let fail = |m: String| Err(WorkloadError::Inconsistent(m));
        for w in 1..=self.cfg.warehouses as i64 {
            let w_ytd = txn
                .read_with(&t.warehouse, &k1(w), |r| get_int(r, col::W_YTD))?
                .ok_or_else(|| WorkloadError::Inconsistent(format!("warehouse {w} missing")))?;
            let mut d_ytd_sum = 0;
            for d in 1..=DISTRICTS {
                let (d_ytd, next) = txn
                    .read_with(&t.district, &k2(w, d), |r| {
                        (get_int(r, col::D_YTD), get_int(r, col::D_NEXT_O_ID))
                    })?
                    .ok_or_else(|| {
                        WorkloadError::Inconsistent(format!("district ({w}, {d}) missing"))
                    })?;
                d_ytd_sum += d_ytd;
                // Condition 2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID).
                let (mut max_o, mut ol_cnt_sum, mut orders) = (0, 0, 0u64);
                txn.scan_with(&t.orders, k2(w, d)..=k2(w, d), |r| {
                    max_o = max_o.max(get_int(r, col::O_ID));
                    ol_cnt_sum += get_int(r, col::O_OL_CNT);
                    orders += 1;
                })?;
                let (mut min_no, mut max_no, mut new_orders) = (i64::MAX, 0, 0i64);
                txn.scan_with(&t.new_order, k2(w, d)..=k2(w, d), |r| {
                    let o = get_int(r, col::NO_O_ID);
                    min_no = min_no.min(o);
                    max_no = max_no.max(o);
                    new_orders += 1;
                })?;
                if next - 1 != max_o || (new_orders > 0 && max_no != max_o) {
                    return fail(format!(
                        "condition 2, district ({w}, {d}): d_next_o_id - 1 = {}, max(o_id) = {max_o}, max(no_o_id) = {max_no}",
                        next - 1
                    ));
                }
                // Condition 3: new-order ids are contiguous.
                if new_orders > 0 && max_no - min_no + 1 != new_orders {
                    return fail(format!(
                        "condition 3, district ({w}, {d}): max(no_o_id) - min(no_o_id) + 1 = {} but {new_orders} rows",
                        max_no - min_no + 1
                    ));
                }
                // Condition 4: sum(O_OL_CNT) = number of order lines.
                let lines = txn.scan_with(&t.order_line, k2(w, d)..=k2(w, d), |_| {})? as i64;
                if lines != ol_cnt_sum {
                    return fail(format!(
                        "condition 4, district ({w}, {d}): sum(o_ol_cnt) = {ol_cnt_sum} but {lines} order lines"
                    ));
                }
                c.districts_checked += 1;
                c.orders += orders;
                c.new_orders += new_orders as u64;
                c.order_lines += lines as u64;
            }
            // Condition 1: W_YTD = sum(D_YTD).
            if w_ytd != d_ytd_sum {
                return fail(format!(
                    "condition 1, warehouse {w}: w_ytd = {w_ytd} but sum(d_ytd) = {d_ytd_sum}"
                ));
            }
            c.warehouses_checked += 1;
        }
        Ok(c)
    }
}

/// Loads TPC-C into `db`, runs the mix (and StockScan if configured), and
/// checks the consistency conditions.
pub fn run(
    db: Database,
    cfg: &TpccConfig,
    driver_cfg: &DriverConfig,
    observer: &mut dyn Observer,
) -> Result<TpccReport, WorkloadError> {
    run_until(db, cfg, driver_cfg, &driver::Stop::Elapsed, observer)
}

/// [`run`] with a measured window that ends at `stop` (tests: a count of
/// transactions per worker, whatever the machine's speed).
pub fn run_until(
    db: Database,
    cfg: &TpccConfig,
    driver_cfg: &DriverConfig,
    stop: &driver::Stop,
    observer: &mut dyn Observer,
) -> Result<TpccReport, WorkloadError> {
    let started = Instant::now();
    let tpcc = Tpcc::load(db, cfg.clone(), observer)?;
    let load_s = started.elapsed().as_secs_f64();
    let mut workers: Vec<TpccWorker> = (0..cfg.threads)
        .map(|i| TpccWorker::new(&tpcc, i, false))
        .collect();
    if cfg.stock_scan {
        workers.push(TpccWorker::new(&tpcc, cfg.threads, true));
    }
    let n = workers.len();
    let mut window = crate::window::Window::new(observer, tpcc.db.clone());
    let run = driver::run_until(driver_cfg, stop, &TYPES, workers, &mut window)?;
    let (time_breakdown, log) = window.reports(n, &run);
    let consistency = tpcc.check_consistency()?;
    Ok(TpccReport {
        load_s,
        run,
        consistency,
        time_breakdown,
        log,
    })
}

/// Per-type committed transactions/s, by name (for summaries).
pub fn per_type(r: &Report) -> BTreeMap<&'static str, f64> {
    r.per_type
        .iter()
        .map(|t| (t.name, t.committed_per_s))
        .collect()
}

#[cfg(test)]
mod tests;
