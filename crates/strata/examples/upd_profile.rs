//! A fixed workload for instruction profiles: 200k single-update and 200k
//! read-only single-get transactions on a 100k-row table, one thread.
//! Instruction counts are repeatable under callgrind even on a busy machine:
//!
//! `cargo build --release -p strata --example upd_profile &&
//!  valgrind --tool=callgrind target/release/examples/upd_profile ssn`

use strata::{key, Database, Options, Protocol, Schema, Type, Value};
fn main() {
    let n = 100_000i64;
    let p: Protocol = std::env::args()
        .nth(1)
        .unwrap_or("ssn".into())
        .parse()
        .unwrap();
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
    for i in 0..200_000i64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut txn = db.begin().unwrap();
        txn.update(&t, &key![(x % n as u64) as i64], &[(3usize, Value::Int(i))])
            .unwrap();
        txn.commit().unwrap();
    }
    for i in 0..200_000i64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut txn = db.begin_read_only().unwrap();
        let v = txn
            .read_with(&t, &key![(x % n as u64) as i64], |r| r[1].as_int())
            .unwrap();
        std::hint::black_box(v);
        txn.commit().unwrap();
        let _ = i;
    }
}
