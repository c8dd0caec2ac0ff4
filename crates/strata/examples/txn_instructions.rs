//! A fixed workload for instruction counts per transaction, to compare
//! builds with `valgrind --tool=callgrind` (stable on a noisy machine,
//! unlike timings): loads 100k rows of an Int key + 10 Int columns, then
//! runs `count` transactions of one kind on one thread.
//!
//! ```text
//! cargo build --release -p strata --example txn_instructions
//! valgrind --tool=callgrind target/release/examples/txn_instructions ssn load 0
//! valgrind --tool=callgrind target/release/examples/txn_instructions ssn update 100000
//! per transaction = (Ir(update) - Ir(load)) / 100000
//! ```
//!
//! Kinds: `load` (nothing after the load), `ro_get` (begin_read_only + get +
//! commit), `rw_get` (begin + get + commit), `update` (begin + update of one
//! column + commit), `scan` (begin + `scan_with` of the 100 keys from a
//! random one + commit), `scan_limit` (the same 100 rows as
//! `scan_limit(k.., 100)`), `range` and `range_keys` (the same 100 rows
//! through the lazy iterators, a row or a key copied per step).

use strata::{key, Database, Options, Protocol, Schema, Type, Value};

fn main() {
    let mut args = std::env::args().skip(1);
    let p: Protocol = args.next().unwrap_or("ssn".into()).parse().unwrap();
    let kind = args.next().unwrap_or("update".into());
    let count: i64 = args.next().unwrap_or("100000".into()).parse().unwrap();
    let n = 100_000i64;
    let db = Database::open(Options::default().protocol(p)).unwrap();
    let mut s = Schema::new("y").column("k", Type::Int);
    for i in 0..10 {
        s = s.column(format!("f{i}"), Type::Int);
    }
    let t = db.create_table(s.primary_key(&["k"])).unwrap();
    let mut txn = db.begin().unwrap();
    for k in 0..n {
        let mut r = vec![Value::Int(k)];
        r.extend((0..10).map(Value::Int));
        txn.insert(&t, r).unwrap();
    }
    txn.commit().unwrap();
    let mut x = 88172645463325252u64;
    for i in 0..count {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = key![(x % n as u64) as i64];
        match kind.as_str() {
            "ro_get" | "rw_get" => {
                let mut txn = if kind == "ro_get" {
                    db.begin_read_only().unwrap()
                } else {
                    db.begin().unwrap()
                };
                let v = txn.read_with(&t, &k, |r| r[1].as_int()).unwrap();
                std::hint::black_box(v);
                txn.commit().unwrap();
            }
            "update" => {
                let mut txn = db.begin().unwrap();
                txn.update(&t, &k, &[(3usize, Value::Int(i))]).unwrap();
                txn.commit().unwrap();
            }
            "scan" | "scan_limit" => {
                let mut txn = db.begin().unwrap();
                let lo = (x % n as u64) as i64;
                let rows = if kind == "scan" {
                    txn.scan_with(&t, key![lo]..key![lo + 100], |r| {
                        std::hint::black_box(r[1].as_int());
                    })
                    .unwrap()
                } else {
                    txn.scan_limit(&t, key![lo].., 100).unwrap().len()
                };
                std::hint::black_box(rows);
                txn.commit().unwrap();
            }
            "range" | "range_keys" => {
                // The lazy iterators over the same 100 rows as `scan`:
                // a step each (its own epoch pin), a row or a key copied.
                let mut txn = db.begin().unwrap();
                let lo = (x % n as u64) as i64;
                let range = key![lo]..key![lo + 100];
                let rows = if kind == "range" {
                    let it = txn.range(&t, range).unwrap();
                    it.fold(0, |n, r| {
                        std::hint::black_box(r.unwrap()[1].as_int());
                        n + 1
                    })
                } else {
                    let it = txn.range_keys(&t, range).unwrap();
                    it.fold(0, |n, k| {
                        std::hint::black_box(k.unwrap());
                        n + 1
                    })
                };
                std::hint::black_box(rows);
                txn.commit().unwrap();
            }
            "load" => {}
            other => panic!("unknown kind {other}"),
        }
    }
}
