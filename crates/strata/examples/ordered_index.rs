//! The measurement behind the ordered indexes' own B+-tree (`index/btree.rs`)
//! against the skip list it replaced (`crossbeam-skiplist`, keyed as the
//! engine keyed it: the order word, then the bytes).
//!
//! Keys are TPC-C's order lines `(w, d, o, ol)`, inserted as NewOrder does:
//! twenty districts, each appending orders of ten lines at the end of its
//! own key range. Timed: inserts on one thread and on two (each thread its
//! own districts), a full scan, and short scans (the lines of one order,
//! as Delivery and OrderStatus read them).
//!
//! `cargo run --release -p strata --example ordered_index [orders per district]`

use crossbeam_skiplist::SkipMap;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Instant;
use strata::internals::{encode_key, order_word_whole, BTree, TreeKey};
use strata::{Key, Value};

const DISTRICTS: i64 = 20;
const LINES: i64 = 10;

/// The skip list as the primary index used it: (order word, bytes).
type List = SkipMap<([u64; 2], Box<[u8]>), u64>;

fn line(d: i64, o: i64, ol: i64) -> Vec<u8> {
    encode_key(&Key(vec![
        Value::Int(1),
        Value::Int(d),
        Value::Int(o),
        Value::Int(ol),
    ]))
}

/// The keys in NewOrder's order, for the districts `ds`.
fn keys(orders: i64, ds: impl Iterator<Item = i64> + Clone) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for o in 1..=orders {
        for d in ds.clone() {
            for ol in 1..=LINES {
                out.push(line(d, o, ol));
            }
        }
    }
    out
}

trait Ordered: Send + Sync + 'static {
    fn name() -> &'static str;
    fn make() -> Self;
    fn insert(&self, k: &[u8], v: u64);
    /// Values in `[lo, hi)`, summed (what a scan reads).
    fn scan(&self, lo: &[u8], hi: &[u8]) -> (u64, u64);
}

struct Tree(BTree);

impl Ordered for Tree {
    fn name() -> &'static str {
        "B+-tree (index/btree.rs)"
    }
    fn make() -> Self {
        Tree(BTree::new_whole_words())
    }
    fn insert(&self, k: &[u8], v: u64) {
        self.0.insert(&TreeKey::Bytes(k), v).unwrap();
    }
    fn scan(&self, lo: &[u8], hi: &[u8]) -> (u64, u64) {
        let (mut n, mut sum) = (0, 0);
        let (lo, hi) = (TreeKey::Bytes(lo), TreeKey::Bytes(hi));
        self.0
            .range(Bound::Included(&lo), Bound::Excluded(&hi), |v| {
                n += 1;
                sum += v;
            });
        (n, sum)
    }
}

struct Skip(List);

impl Ordered for Skip {
    fn name() -> &'static str {
        "skip list (crossbeam-skiplist)"
    }
    fn make() -> Self {
        Skip(SkipMap::new())
    }
    fn insert(&self, k: &[u8], v: u64) {
        self.0.insert((order_word_whole(k).0, k.into()), v);
    }
    fn scan(&self, lo: &[u8], hi: &[u8]) -> (u64, u64) {
        let lo = (order_word_whole(lo).0, Box::<[u8]>::from(lo));
        let hi = (order_word_whole(hi).0, Box::<[u8]>::from(hi));
        let (mut n, mut sum) = (0, 0);
        for e in self.0.range(lo..hi) {
            n += 1;
            sum += *e.value();
        }
        (n, sum)
    }
}

fn run<T: Ordered>(orders: i64) -> [f64; 4] {
    // One thread, every district.
    let all = keys(orders, 1..=DISTRICTS);
    let m = T::make();
    let t = Instant::now();
    for (i, k) in all.iter().enumerate() {
        m.insert(k, i as u64);
    }
    let insert_1 = t.elapsed().as_nanos() as f64 / all.len() as f64;

    // Two threads, ten districts each.
    let m2 = Arc::new(T::make());
    let halves: Vec<Vec<Vec<u8>>> = vec![
        keys(orders, (1..=DISTRICTS).filter(|d| d % 2 == 0)),
        keys(orders, (1..=DISTRICTS).filter(|d| d % 2 == 1)),
    ];
    let t = Instant::now();
    std::thread::scope(|s| {
        for h in &halves {
            let m2 = Arc::clone(&m2);
            s.spawn(move || {
                for (i, k) in h.iter().enumerate() {
                    m2.insert(k, i as u64);
                }
            });
        }
    });
    let insert_2 = t.elapsed().as_nanos() as f64 / all.len() as f64;

    let t = Instant::now();
    let (n, _) = m.scan(&line(0, 0, 0), &line(DISTRICTS + 1, 0, 0));
    assert_eq!(n as usize, all.len());
    let full = t.elapsed().as_nanos() as f64 / all.len() as f64;

    let mut x = 88172645463325252u64;
    let scans = 200_000;
    let t = Instant::now();
    for _ in 0..scans {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let d = (x % DISTRICTS as u64) as i64 + 1;
        let o = ((x >> 8) % orders as u64) as i64 + 1;
        let (n, _) = m.scan(&line(d, o, 0), &line(d, o + 1, 0));
        assert_eq!(n, LINES as u64);
    }
    let short = t.elapsed().as_nanos() as f64 / scans as f64;
    [insert_1, insert_2, full, short]
}

fn main() {
    let orders: i64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    println!(
        "{} keys: order lines of {orders} orders in each of {DISTRICTS} districts",
        orders * DISTRICTS * LINES
    );
    println!(
        "{:32} {:>12} {:>12} {:>12} {:>14}",
        "", "insert 1 thr", "insert 2 thr", "full scan", "10-key scan"
    );
    for (name, r) in [
        (Tree::name(), run::<Tree>(orders)),
        (Skip::name(), run::<Skip>(orders)),
    ] {
        println!(
            "{name:32} {:>9.0} ns {:>9.0} ns {:>9.1} ns {:>11.0} ns",
            r[0], r[1], r[2], r[3]
        );
    }
    println!("(insert and full scan: per key; 10-key scan: per scan)");
}
