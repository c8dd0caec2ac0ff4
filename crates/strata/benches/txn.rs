//! Single-threaded transaction latency per protocol on a 1M-row table
//! (Int key + 10 Int columns, uniformly random keys):
//!
//! - `ro_get`:      begin_read_only + one get + commit
//! - `rw_get`:      begin (read-write) + one get + commit
//! - `update`:      begin + one update of one column + commit
//!
//! Rows: `STRATA_BENCH_ROWS` (default 1,000,000); protocols:
//! `STRATA_BENCH_PROTOCOLS` (comma-separated names, default all seven; a
//! criterion filter alone still loads a table per protocol). After the runs the bench
//! prints header bytes per version and bytes per row (versions + index +
//! indirection) from `Database::stats()`.
//!
//! Run: `cargo bench -p strata --bench txn` (uses mimalloc, like the CLI).

use criterion::{criterion_group, criterion_main, Criterion};

// Same allocator as the `strata` binary, so the figures compare.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::hint::black_box;
use strata::{key, Database, Options, Protocol, Schema, Table, Type, Value};

fn protocols() -> Vec<Protocol> {
    match std::env::var("STRATA_BENCH_PROTOCOLS") {
        Ok(list) => list
            .split(',')
            .map(|p| {
                p.trim()
                    .parse()
                    .unwrap_or_else(|e| panic!("STRATA_BENCH_PROTOCOLS: {e}"))
            })
            .collect(),
        Err(_) => Protocol::ALL.to_vec(),
    }
}

fn rows() -> i64 {
    std::env::var("STRATA_BENCH_ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000)
}

/// Resident memory of this process in bytes (Linux; 0 elsewhere).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

fn setup(p: Protocol, n: i64) -> (Database, Table, u64) {
    let before = rss_bytes();
    let db = Database::open(Options::default().protocol(p)).unwrap();
    let mut s = Schema::new("ycsb").column("k", Type::Int);
    for i in 0..10 {
        s = s.column(format!("f{i}"), Type::Int);
    }
    let t = db.create_table(s.primary_key(&["k"])).unwrap();
    let mut k = 0;
    while k < n {
        let mut txn = db.begin().unwrap();
        for _ in 0..10_000.min(n - k) {
            let mut row = vec![Value::Int(k)];
            row.extend((0..10).map(Value::Int));
            txn.insert(&t, row).unwrap();
            k += 1;
        }
        txn.commit().unwrap();
    }
    db.collect_garbage();
    let grown = rss_bytes().saturating_sub(before);
    (db, t, grown)
}

struct Rng(u64);
impl Rng {
    fn next(&mut self, n: i64) -> i64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as i64
    }
}

fn bench(c: &mut Criterion) {
    let n = rows();
    let protocols = protocols();
    for &p in &protocols {
        let (db, t, rss) = setup(p, n);
        let mut g = c.benchmark_group(p.name());
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        g.bench_function("ro_get", |b| {
            b.iter(|| {
                let mut txn = db.begin_read_only().unwrap();
                let v = txn
                    .read_with(&t, &key![rng.next(n)], |r| r[1].as_int())
                    .unwrap();
                txn.commit().unwrap();
                black_box(v)
            })
        });
        g.bench_function("rw_get", |b| {
            b.iter(|| {
                let mut txn = db.begin().unwrap();
                let v = txn
                    .read_with(&t, &key![rng.next(n)], |r| r[1].as_int())
                    .unwrap();
                txn.commit().unwrap();
                black_box(v)
            })
        });
        let mut i = 0;
        g.bench_function("update", |b| {
            b.iter(|| {
                i += 1;
                let mut txn = db.begin().unwrap();
                txn.update(&t, &key![rng.next(n)], &[(3usize, Value::Int(i))])
                    .unwrap();
                txn.commit().unwrap();
            })
        });
        g.finish();
        db.collect_garbage();
        let st = db.stats();
        eprintln!(
            "{}: {} rows, header {} B/version, {:.1} B/row (versions {} + index {} + indirection {}), {} live versions",
            p.name(),
            st.rows,
            strata::VERSION_HEADER_BYTES,
            st.bytes_per_row(),
            st.version_bytes,
            st.index_bytes,
            st.indirection_bytes,
            st.live_versions,
        );
        if p == protocols[0] {
            // Only the first load is measured against a fresh heap; later
            // ones reuse memory the allocator kept from earlier tables.
            eprintln!(
                "measured: resident memory grew {:.1} B/row while loading the first table \
                 (versions, indexes, indirection, allocator overhead)",
                rss as f64 / n as f64
            );
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
