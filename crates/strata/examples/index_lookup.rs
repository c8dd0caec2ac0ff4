//! The measurement behind the primary index's hash side: random point
//! lookups in 1M `u64` keys, B+-tree (`scc::TreeIndex`) vs `scc::HashIndex`
//! (what we used first), and a whole read-only `get` through the engine,
//! whose hash side is now `strata`'s own open-addressing table.
//!
//! `cargo run --release -p strata --example index_lookup [rows]`

use std::time::Instant;
use strata::{key, Database, Options, Schema, Type, Value};

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let iters = 2_000_000;
    let mut x = 88172645463325252u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let mut sink = 0u64;

    let tree: scc::TreeIndex<u64, u64> = scc::TreeIndex::new();
    let hash: scc::HashIndex<u64, u64> = scc::HashIndex::new();
    for k in 0..n {
        tree.insert_sync(k, k).unwrap();
        hash.insert_sync(k, k).unwrap();
    }
    let st = Instant::now();
    for _ in 0..iters {
        sink += tree.peek(&rnd(), &scc::Guard::new()).copied().unwrap_or(0);
    }
    println!(
        "TreeIndex peek: {:.0} ns",
        st.elapsed().as_nanos() as f64 / iters as f64
    );
    let st = Instant::now();
    for _ in 0..iters {
        sink += hash.peek(&rnd(), &scc::Guard::new()).copied().unwrap_or(0);
    }
    println!(
        "HashIndex peek: {:.0} ns",
        st.elapsed().as_nanos() as f64 / iters as f64
    );

    let db = Database::open(Options::default()).unwrap();
    let mut s = Schema::new("y").column("k", Type::Int);
    for i in 0..10 {
        s = s.column(format!("f{i}"), Type::Int);
    }
    let t = db.create_table(s.primary_key(&["k"])).unwrap();
    let mut txn = db.begin().unwrap();
    for k in 0..n as i64 {
        let mut r = vec![Value::Int(k)];
        r.extend((0..10).map(Value::Int));
        txn.insert(&t, r).unwrap();
    }
    txn.commit().unwrap();
    let st = Instant::now();
    for _ in 0..iters {
        let mut ro = db.begin_read_only().unwrap();
        sink += ro
            .read_with(&t, &key![rnd() as i64], |r| r[1].as_int().unwrap() as u64)
            .unwrap()
            .unwrap();
        ro.commit().unwrap();
    }
    println!(
        "engine: begin_read_only + get + commit: {:.0} ns",
        st.elapsed().as_nanos() as f64 / iters as f64
    );
    std::hint::black_box(sink);
}
