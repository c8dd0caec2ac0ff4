//! The Strata engine as a [`TxnExecutor`] for the `strata-verify` checker.
//!
//! Shared by `strata check` and the engine's `tests/verify.rs` (which
//! includes this file with `#[path]`), so it depends only on `strata` and
//! `strata-verify`.
//!
//! Data model:
//!
//! * lists live in `lists(k INT, v TEXT)`, the list stored as the elements
//!   joined by commas (`"3,17,42"`); an absent row is the empty list;
//! * registers live in `registers(k INT, v INT)`; an absent row is `nil`.
//!
//! An append reads the list (`get`) and then inserts the row or updates it
//! with the element appended. A conflict from any operation, or from commit,
//! means the engine rolled the transaction back: it is recorded as
//! [`Outcome::Aborted`] with the ops issued so far (the failed read without a
//! value). Any other error is an engine or adapter bug and panics, with one
//! exception: under MV2PL, which reads the newest data, an `insert` of a key
//! that `get` had just reported absent can answer `DuplicateKey` when a
//! concurrent transaction inserted and committed the key in between (the
//! snapshot-reading protocols answer a conflict instead). The adapter then rolls the
//! transaction back itself, records it as aborted and counts it in
//! [`StrataExecutor::insert_races`].

use std::sync::atomic::{AtomicU64, Ordering};

use strata::{
    key, row, Database, Error, Options, Protocol, Schema, Table, Transaction, Type, Value,
};
use strata_verify::{Op, Outcome, PlannedOp, TxnExecutor};

/// Why a transaction stopped early.
enum Stop {
    /// The engine rolled it back (`Error::Conflict`).
    Conflict,
    /// `DuplicateKey` on an insert after `get` found no row: the key was
    /// inserted concurrently; the adapter aborts.
    InsertRace,
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        match e {
            Error::Conflict(_) => Stop::Conflict,
            e => panic!("engine error: {e}"),
        }
    }
}

/// Inserts `row`, mapping `DuplicateKey` to [`Stop::InsertRace`].
fn insert_absent(txn: &mut Transaction, t: &Table, row: strata::Row) -> Result<(), Stop> {
    match txn.insert(t, row) {
        Ok(()) => Ok(()),
        Err(Error::DuplicateKey { .. }) => Err(Stop::InsertRace),
        Err(e) => Err(e.into()),
    }
}

/// Runs planned transactions against a Strata database.
pub struct StrataExecutor {
    pub db: Database,
    pub lists: Table,
    pub registers: Table,
    /// Run transactions whose plan has no writes with
    /// `Database::begin_read_only` (snapshot reads, no bookkeeping).
    pub read_only_snapshots: bool,
    /// Transactions aborted by the adapter after an insert race (see the
    /// module docs).
    pub insert_races: AtomicU64,
    /// Yield the thread between operations, so that transactions interleave
    /// more on machines with few cores.
    pub yield_between_ops: bool,
}

impl StrataExecutor {
    /// A fresh database with `protocol` and the two tables.
    #[allow(dead_code)] // the binary passes full options; tests use this
    pub fn open(protocol: Protocol) -> Result<Self, Error> {
        Self::with_options(Options::default().protocol(protocol))
    }

    /// A fresh database with `opts` and the two tables.
    pub fn with_options(opts: Options) -> Result<Self, Error> {
        let db = Database::open(opts)?;
        let lists = db.create_table(
            Schema::new("lists")
                .column("k", Type::Int)
                .column("v", Type::Text)
                .primary_key(&["k"]),
        )?;
        let registers = db.create_table(
            Schema::new("registers")
                .column("k", Type::Int)
                .column("v", Type::Int)
                .primary_key(&["k"]),
        )?;
        Ok(StrataExecutor {
            db,
            lists,
            registers,
            read_only_snapshots: false,
            insert_races: AtomicU64::new(0),
            yield_between_ops: true,
        })
    }

    /// Runs one planned op. `out` receives the op as issued before it runs,
    /// and its observed value once it returns; other errors than conflicts
    /// and insert races panic.
    fn run_op(&self, txn: &mut Transaction, op: PlannedOp, out: &mut Vec<Op>) -> Result<(), Stop> {
        match op {
            PlannedOp::Append { key, elem } => {
                out.push(Op::Append { key, elem });
                let k = key_of(key);
                match txn.get(&self.lists, &k)? {
                    None => {
                        insert_absent(txn, &self.lists, row![k.0[0].clone(), elem.to_string()])?
                    }
                    Some(row) => {
                        let old = text(&row);
                        let new = if old.is_empty() {
                            elem.to_string()
                        } else {
                            format!("{old},{elem}")
                        };
                        txn.update(&self.lists, &k, &[("v", Value::from(new))])?
                    }
                }
            }
            PlannedOp::Read { key } => {
                out.push(Op::ReadList { key, value: None });
                let row = txn.get(&self.lists, &key_of(key))?;
                let list = row.map_or_else(Vec::new, |r| parse_list(text(&r)));
                *out.last_mut().expect("pushed above") = Op::ReadList {
                    key,
                    value: Some(list),
                };
            }
            PlannedOp::Write { key, value } => {
                out.push(Op::Write { key, value });
                let k = key_of(key);
                let v = int(value);
                if txn.get(&self.registers, &k)?.is_some() {
                    txn.update(&self.registers, &k, &[("v", Value::Int(v))])?
                } else {
                    insert_absent(txn, &self.registers, row![k.0[0].clone(), v])?
                }
            }
            PlannedOp::ReadReg { key } => {
                out.push(Op::ReadReg { key, value: None });
                let row = txn.get(&self.registers, &key_of(key))?;
                let value = row.map(|r| match r[1] {
                    Value::Int(v) => u64::try_from(v).expect("register values are non-negative"),
                    ref other => panic!("register k{key} holds a non-integer {other:?}"),
                });
                *out.last_mut().expect("pushed above") = Op::ReadReg {
                    key,
                    value: Some(value),
                };
            }
            PlannedOp::Scan { lo, hi } => {
                out.push(Op::ScanList {
                    lo,
                    hi,
                    value: None,
                });
                let rows = txn.scan(&self.lists, key_of(lo)..key_of(hi))?;
                let mut found = Vec::with_capacity(rows.len());
                for r in &rows {
                    let k = match r[0] {
                        Value::Int(k) => u64::try_from(k).expect("keys are non-negative"),
                        ref other => panic!("list key {other:?} is not an integer"),
                    };
                    let list = parse_list(text(r));
                    if !list.is_empty() {
                        found.push((k, list));
                    }
                }
                *out.last_mut().expect("pushed above") = Op::ScanList {
                    lo,
                    hi,
                    value: Some(found),
                };
            }
        }
        Ok(())
    }
}

impl TxnExecutor for StrataExecutor {
    fn execute(&self, _client: usize, ops: &[PlannedOp]) -> (Vec<Op>, Outcome) {
        let read_only = self.read_only_snapshots
            && ops
                .iter()
                .all(|o| !matches!(o, PlannedOp::Append { .. } | PlannedOp::Write { .. }));
        let begun = if read_only {
            self.db.begin_read_only()
        } else {
            self.db.begin()
        };
        let mut txn = begun.unwrap_or_else(|e| panic!("begin failed: {e}"));
        let mut out = Vec::with_capacity(ops.len());
        for &op in ops {
            if self.yield_between_ops {
                std::thread::yield_now();
            }
            match self.run_op(&mut txn, op, &mut out) {
                Ok(()) => {}
                Err(Stop::Conflict) => return (out, Outcome::Aborted),
                Err(Stop::InsertRace) => {
                    self.insert_races.fetch_add(1, Ordering::Relaxed);
                    txn.abort();
                    return (out, Outcome::Aborted);
                }
            }
        }
        match txn.commit() {
            Ok(()) => (out, Outcome::Committed),
            Err(Error::Conflict(_)) => (out, Outcome::Aborted),
            Err(e) => panic!("commit failed with a non-conflict error: {e}"),
        }
    }
}

fn int(v: u64) -> i64 {
    i64::try_from(v).expect("checker keys and values fit in i64")
}

fn key_of(k: u64) -> strata::Key {
    key![int(k)]
}

fn text(row: &[Value]) -> &str {
    row[1]
        .as_text()
        .unwrap_or_else(|| panic!("list column holds a non-text value {:?}", row[1]))
}

/// Parses `"1,2,3"` (or `""`) into elements.
pub fn parse_list(s: &str) -> Vec<u64> {
    s.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().unwrap_or_else(|_| panic!("corrupt list {s:?}")))
        .collect()
}
