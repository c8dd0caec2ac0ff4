//! Update cost with 0, 1 and 3 secondary indexes, per index pointer scheme
//! (the Peloton study's §6 point: with physical pointers every new version
//! enters every secondary index; with logical pointers only an update of an
//! indexed column touches one). Single thread, 100k rows of an Int key and
//! 10 Int columns; secondary indexes on f0, f1 and f2.
//!
//! `cargo run --release -p strata --example secondary_update_cost`
//!
//! Prints ns per update transaction for an update of a non-indexed column
//! (f5) and of an indexed one (f0), and ns per index point lookup
//! (read-only), median of 3 runs of 200k transactions each.

use std::time::Instant;
use strata::{key, Database, IndexPointers, Options, Schema, Type, Unique, Value};

const ROWS: i64 = 100_000;
const TXNS: i64 = 200_000;

fn run(scheme: IndexPointers, indexes: usize, col: usize) -> (f64, f64) {
    let db = Database::open(Options::default().index_pointers(scheme)).unwrap();
    let mut s = Schema::new("y").column("k", Type::Int);
    for i in 0..10 {
        s = s.column(format!("f{i}"), Type::Int);
    }
    let t = db.create_table(s.primary_key(&["k"])).unwrap();
    let mut txn = db.begin().unwrap();
    for k in 0..ROWS {
        let mut r = vec![Value::Int(k)];
        r.extend((0..10).map(|i| Value::Int(k * 10 + i)));
        txn.insert(&t, r).unwrap();
    }
    txn.commit().unwrap();
    let idx: Vec<_> = (0..indexes)
        .map(|i| {
            let c = format!("f{i}");
            db.create_index(&format!("by_{c}"), &t, &[c.as_str()], Unique::No)
                .unwrap()
        })
        .collect();
    let mut x = 88172645463325252u64;
    let start = Instant::now();
    for i in 0..TXNS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = (x % ROWS as u64) as i64;
        let mut txn = db.begin().unwrap();
        // Keep indexed values unique per row (k * 10 + column) + a round.
        let v = k * 10 + (col as i64 - 1) + (i + 1) * ROWS * 10;
        txn.update(&t, &key![k], &[(col, Value::Int(v))]).unwrap();
        txn.commit().unwrap();
    }
    let upd = start.elapsed().as_nanos() as f64 / TXNS as f64;
    let mut lookup = f64::NAN;
    if let Some(i0) = idx.first() {
        let start = Instant::now();
        let mut found = 0;
        for _ in 0..TXNS {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = (x % ROWS as u64) as i64;
            let mut ro = db.begin_read_only().unwrap();
            // f0 of rows never updated in f0 is still k * 10.
            found += ro.index_get(i0, &key![k * 10]).unwrap().len();
        }
        lookup = start.elapsed().as_nanos() as f64 / TXNS as f64;
        assert!(found > 0);
    }
    (upd, lookup)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    println!("scheme,indexes,update_non_indexed_ns,update_indexed_ns,index_lookup_ns");
    for scheme in [
        IndexPointers::LogicalTupleId,
        IndexPointers::LogicalPrimaryKey,
        IndexPointers::Physical,
    ] {
        for n in [0usize, 1, 3] {
            let non: Vec<(f64, f64)> = (0..3).map(|_| run(scheme, n, 6)).collect();
            let ind: Vec<f64> = (0..3).map(|_| run(scheme, n, 1).0).collect();
            println!(
                "{scheme:?},{n},{:.0},{:.0},{:.0}",
                median(non.iter().map(|r| r.0).collect()),
                median(ind),
                median(non.iter().map(|r| r.1).collect()),
            );
        }
    }
}
