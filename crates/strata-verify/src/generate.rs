//! Seeded workload generators: they plan transactions, executors run them.
//!
//! ```text
//!   GeneratorConfig ──► Generator ──next_txn()──► [Read k3, Append k3 ← 17, Delete k5 ← 18, Scan k0..k6]
//!      (seed)             │                               │
//!                         └ value counter: 1, 2, 3, …     └ executor runs it, records what it saw
//! ```
//!
//! Every appended element, delete marker and written value comes from one
//! counter per generator, so each value in a history has exactly one
//! writer. That is the property that lets the checker work without trusting
//! the engine: seeing a value tells it who wrote it, and a list read tells
//! it the order of writes.
//!
//! Keys are drawn from a Zipfian distribution so that a few hot keys collect
//! most of the contention, which is where isolation bugs show up.
//!
//! A list is read whole, so a key's list must not grow without bound: a
//! history of `n` transactions would read O(n) elements per read, O(n^2)
//! in all (a list-append run of 200,000 transactions on 20 keys held 16.7
//! GB). As Elle's list-append generator does (`:max-writes-per-key`), a key
//! gets at most [`GeneratorConfig::max_writes_per_key`] list writes, and
//! then its Zipfian rank (its *slot*) stands for a fresh key:
//!
//! ```text
//!   slot 0 (hottest): k0 ×32 writes ─► k20 ×32 ─► k23 ...   keys 0..keys first,
//!   slot 1:           k1 ×32 writes ─► k21 ...              then fresh ones
//! ```
//!
//! The predicate workload's scans need neighbouring keys to be live
//! together, so it retires the whole key space at once: when a slot's key
//! reaches the limit, every slot moves to the next block of `keys` keys (an
//! *epoch*), and a scan covers slots of the current epoch. Either way no
//! key ever gets more than `max_writes_per_key` list writes, so no list is
//! longer, and memory and time grow linearly with the history.
//!
//! A run may also be cut into *segments* ([`Generator::next_segment`],
//! [`crate::run_segmented`]): every slot then moves to a fresh block of
//! keys past every key the segment before named, its scanned ranges
//! included, so that no two segments' transactions touch or scan a common
//! key ([`Generator::segment_keys`]).

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::history::{Elem, Key};

/// One planned operation; an executor turns it into an observed [`crate::Op`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PlannedOp {
    /// Append `elem` to the list at `key` (observed as [`crate::Op::Append`]).
    Append { key: Key, elem: Elem },
    /// Delete the row at `key`, appending the marker `elem` to its list
    /// (observed as [`crate::Op::Delete`]).
    Delete { key: Key, elem: Elem },
    /// Read the list at `key` (observed as [`crate::Op::ReadList`]).
    Read { key: Key },
    /// Overwrite the register at `key` (observed as [`crate::Op::Write`]).
    Write { key: Key, value: Elem },
    /// Read the register at `key` (observed as [`crate::Op::ReadReg`]).
    ///
    /// Separate from [`PlannedOp::Read`] because an absent key reads as an
    /// empty list in one model and as `nil` in the other.
    ReadReg { key: Key },
    /// Read every non-empty list with a key in `lo..hi` (observed as
    /// [`crate::Op::ScanList`]). With a `limit`, stop once that many lists
    /// were read (an executor may read a little more, to the end of a key):
    /// the observed op then names the range up to the last key read, the
    /// predicate such a scan protects (`Transaction::scan_limit`).
    Scan {
        lo: Key,
        hi: Key,
        limit: Option<u64>,
    },
}

/// Which kind of transactions to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Workload {
    /// Reads, appends and deletes on lists: the most informative workload,
    /// since list reads reveal the full version order.
    ListAppend,
    /// Reads and blind writes on registers.
    Register,
    /// List appends and deletes mixed with range scans over the same keys:
    /// deletes and re-inserts keep changing the scanned ranges (phantoms).
    Predicate,
    /// Keys come in pairs `(2p, 2p+1)`; each transaction reads both keys of a
    /// pair and appends to one of them. Snapshot isolation lets two such
    /// transactions commit concurrently (write skew).
    WriteSkew,
}

impl Workload {
    /// Every workload, for tests and sweeps that run them all.
    pub const ALL: [Workload; 4] = [
        Workload::ListAppend,
        Workload::Register,
        Workload::Predicate,
        Workload::WriteSkew,
    ];
}

/// Configuration for a [`Generator`].
#[derive(Clone, Debug, PartialEq)]
pub struct GeneratorConfig {
    pub workload: Workload,
    /// Number of keys; keys are `0..keys`.
    pub keys: u64,
    /// Minimum operations per transaction (at least 1).
    pub min_ops: usize,
    /// Maximum operations per transaction (inclusive).
    pub max_ops: usize,
    /// Probability that an operation is a read (given that it is not a scan).
    pub read_fraction: f64,
    /// Probability that a list write is a delete rather than an append
    /// ([`Workload::ListAppend`] and [`Workload::Predicate`]). Deleted keys
    /// are re-inserted by later appends, so scanned ranges keep gaining
    /// rows: without deletes every key exists after a few hundred
    /// transactions and a missing phantom check can no longer show.
    pub delete_fraction: f64,
    /// Probability that an operation is a scan ([`Workload::Predicate`] only).
    pub scan_fraction: f64,
    /// Widest scan range, in keys (scans are `1..=max_scan_width` wide).
    pub max_scan_width: u64,
    /// Probability that a scan stops after its first one or two lists
    /// ([`PlannedOp::Scan`]'s `limit`).
    pub limited_scan_fraction: f64,
    /// Zipfian theta in `0.0..1.0`: 0 is uniform, 0.99 is very skewed.
    pub skew: f64,
    pub seed: u64,
    /// Most list writes (appends and deletes) planned for one key; then
    /// the key is retired and a fresh one takes its place (see the module
    /// docs). Bounds every list, and so the cost of each read, whatever
    /// the length of the history. At least 1; registers are not bounded
    /// (a register holds one value).
    pub max_writes_per_key: u64,
}

impl Default for GeneratorConfig {
    fn default() -> Self {
        GeneratorConfig {
            workload: Workload::ListAppend,
            keys: 16,
            min_ops: 1,
            max_ops: 4,
            read_fraction: 0.5,
            delete_fraction: 0.3,
            scan_fraction: 0.4,
            max_scan_width: 6,
            limited_scan_fraction: 0.3,
            skew: 0.5,
            seed: 0,
            max_writes_per_key: 32,
        }
    }
}

impl GeneratorConfig {
    /// The default configuration for `workload`.
    pub fn for_workload(workload: Workload) -> Self {
        GeneratorConfig {
            workload,
            ..Self::default()
        }
    }
}

/// A Zipfian sampler over `0..n`: rank `i` has weight `1 / (i + 1)^theta`.
///
/// It keeps the cumulative distribution and binary-searches it, which is
/// exact, simple and fast enough for key spaces of a few million.
#[derive(Clone, Debug)]
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    /// # Panics
    /// If `n == 0` or `theta` is not in `0.0..1.0`.
    pub fn new(n: u64, theta: f64) -> Self {
        assert!(n > 0, "Zipf over an empty range");
        assert!(
            (0.0..1.0).contains(&theta),
            "Zipf theta must be in 0.0..1.0, got {theta}"
        );
        let mut cdf = Vec::with_capacity(n as usize);
        let mut total = 0.0;
        for i in 0..n {
            total += 1.0 / ((i + 1) as f64).powf(theta);
            cdf.push(total);
        }
        for c in &mut cdf {
            *c /= total;
        }
        Zipf { cdf }
    }

    /// Draws a rank; 0 is the most likely.
    pub fn sample<R: RngExt + ?Sized>(&self, rng: &mut R) -> u64 {
        let u: f64 = rng.random();
        let i = self.cdf.partition_point(|&c| c <= u);
        // Rounding can leave the last cumulative value just under 1.0.
        i.min(self.cdf.len() - 1) as u64
    }

    pub fn len(&self) -> u64 {
        self.cdf.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.cdf.is_empty()
    }
}

/// Produces planned transactions for a [`GeneratorConfig`].
#[derive(Debug)]
pub struct Generator {
    cfg: GeneratorConfig,
    rng: StdRng,
    keys: Zipf,
    next_value: Elem,
    /// Per slot (a Zipfian rank): the key it stands for now (a pair's
    /// number under [`Workload::WriteSkew`]; an offset into the epoch
    /// under [`Workload::Predicate`]) and the list writes planned to it.
    slots: Vec<(Key, u64)>,
    /// The next fresh key (or pair).
    next_key: Key,
    /// [`Workload::Predicate`]: the first key of the current epoch.
    epoch: Key,
    /// The current segment's first key ([`Generator::segment_keys`]).
    segment_start: Key,
    /// One past the last key any op of this segment named, or any scan of
    /// it covered.
    segment_end: Key,
}

impl Generator {
    /// # Panics
    /// On an unusable configuration (no keys, `max_ops < min_ops`, …).
    pub fn new(cfg: GeneratorConfig) -> Self {
        assert!(cfg.keys > 0, "generator needs at least one key");
        assert!(cfg.max_ops >= cfg.min_ops.max(1), "max_ops < min_ops");
        assert!(
            cfg.max_writes_per_key > 0,
            "max_writes_per_key must be at least 1"
        );
        let domain = match cfg.workload {
            Workload::WriteSkew => (cfg.keys / 2).max(1),
            _ => cfg.keys,
        };
        Generator {
            rng: StdRng::seed_from_u64(cfg.seed),
            keys: Zipf::new(domain, cfg.skew),
            next_value: 1,
            slots: (0..domain).map(|k| (k, 0)).collect(),
            next_key: domain,
            epoch: 0,
            segment_start: 0,
            segment_end: 0,
            cfg,
        }
    }

    /// The keys the current segment's transactions named so far: every
    /// key an op of them reads or writes, and every key in the range of a
    /// scan of theirs, lies in here. After [`Generator::next_segment`] no
    /// transaction names one of them again.
    pub fn segment_keys(&self) -> std::ops::Range<Key> {
        self.segment_start..self.segment_end
    }

    /// Starts a new segment: every slot moves to a fresh key (the
    /// predicate workload's epoch to a fresh block, write-skew pairs to
    /// fresh pairs) past every key the segments so far named or could
    /// still have named, so that the transactions planned from now on
    /// touch and scan only keys no earlier transaction touched or scanned.
    /// Per-key write counts start over; values keep counting, so they stay
    /// unique over the whole run.
    pub fn next_segment(&mut self) {
        let domain = self.slots.len() as Key;
        // Past the keys named (scans included) and those the slots hold.
        let reserved = match self.cfg.workload {
            Workload::Predicate => self.epoch + domain,
            Workload::WriteSkew => 2 * self.next_key,
            Workload::ListAppend | Workload::Register => self.next_key,
        };
        let mut start = self.segment_end.max(reserved);
        if self.cfg.workload == Workload::WriteSkew {
            start = start.div_ceil(2) * 2;
        }
        let first = match self.cfg.workload {
            Workload::WriteSkew => start / 2,
            _ => start,
        };
        for (i, slot) in self.slots.iter_mut().enumerate() {
            *slot = (first + i as Key, 0);
        }
        self.next_key = first + domain;
        self.epoch = start;
        self.segment_start = start;
        self.segment_end = start;
    }

    pub fn config(&self) -> &GeneratorConfig {
        &self.cfg
    }

    fn fresh(&mut self) -> Elem {
        let v = self.next_value;
        self.next_value += 1;
        v
    }

    /// A Zipfian slot.
    fn slot(&mut self) -> usize {
        self.keys.sample(&mut self.rng) as usize
    }

    /// The key a slot stands for now.
    fn key_of(&self, slot: usize) -> Key {
        match self.cfg.workload {
            Workload::Predicate => self.epoch + slot as Key,
            _ => self.slots[slot].0,
        }
    }

    /// A Zipfian key, for a read.
    fn key(&mut self) -> Key {
        let slot = self.slot();
        self.key_of(slot)
    }

    /// The key of `slot` for one more list write, and the retirement of
    /// the key (or, for the predicate workload, of the epoch) that this
    /// write fills up.
    fn write_key(&mut self, slot: usize) -> Key {
        let key = self.key_of(slot);
        self.slots[slot].1 += 1;
        if self.slots[slot].1 >= self.cfg.max_writes_per_key {
            if self.cfg.workload == Workload::Predicate {
                self.epoch += self.slots.len() as Key;
                self.slots.iter_mut().for_each(|s| s.1 = 0);
            } else {
                self.slots[slot] = (self.next_key, 0);
                self.next_key += 1;
            }
        }
        key
    }

    /// Plans the next transaction.
    pub fn next_txn(&mut self) -> Vec<PlannedOp> {
        if self.cfg.workload == Workload::WriteSkew {
            return self.write_skew_txn();
        }
        let n = self
            .rng
            .random_range(self.cfg.min_ops.max(1)..=self.cfg.max_ops);
        let mut ops = Vec::with_capacity(n);
        for _ in 0..n {
            let op = match self.cfg.workload {
                Workload::ListAppend => self.list_op(),
                Workload::Register => {
                    let key = self.key();
                    if self.rng.random_bool(self.cfg.read_fraction) {
                        PlannedOp::ReadReg { key }
                    } else {
                        let value = self.fresh();
                        PlannedOp::Write { key, value }
                    }
                }
                Workload::Predicate => {
                    if self.rng.random_bool(self.cfg.scan_fraction) {
                        // Start scans at Zipfian keys too, so they cover the
                        // hot keys that the appends land on.
                        let lo = self.key();
                        let width = self.rng.random_range(1..=self.cfg.max_scan_width.max(1));
                        let limit = self
                            .rng
                            .random_bool(self.cfg.limited_scan_fraction)
                            .then(|| self.rng.random_range(1..=2));
                        PlannedOp::Scan {
                            lo,
                            hi: lo.saturating_add(width),
                            limit,
                        }
                    } else {
                        self.list_op()
                    }
                }
                Workload::WriteSkew => unreachable!("handled above"),
            };
            ops.push(op);
        }
        self.cover(&ops);
        ops
    }

    /// Extends the segment's keys over everything `ops` name.
    fn cover(&mut self, ops: &[PlannedOp]) {
        for op in ops {
            let end = match *op {
                PlannedOp::Append { key, .. }
                | PlannedOp::Delete { key, .. }
                | PlannedOp::Read { key }
                | PlannedOp::Write { key, .. }
                | PlannedOp::ReadReg { key } => key + 1,
                PlannedOp::Scan { hi, .. } => hi,
            };
            self.segment_end = self.segment_end.max(end);
        }
    }

    fn list_op(&mut self) -> PlannedOp {
        let slot = self.slot();
        if self.rng.random_bool(self.cfg.read_fraction) {
            PlannedOp::Read {
                key: self.key_of(slot),
            }
        } else {
            let key = self.write_key(slot);
            let elem = self.fresh();
            if self.rng.random_bool(self.cfg.delete_fraction) {
                PlannedOp::Delete { key, elem }
            } else {
                PlannedOp::Append { key, elem }
            }
        }
    }

    fn write_skew_txn(&mut self) -> Vec<PlannedOp> {
        let slot = self.slot();
        let pair = self.write_key(slot);
        let (a, b) = (2 * pair, 2 * pair + 1);
        let target = if self.rng.random_bool(0.5) { a } else { b };
        let elem = self.fresh();
        let ops = vec![
            PlannedOp::Read { key: a },
            PlannedOp::Read { key: b },
            PlannedOp::Append { key: target, elem },
        ];
        self.cover(&ops);
        ops
    }
}

impl Iterator for Generator {
    type Item = Vec<PlannedOp>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(self.next_txn())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn histogram(n: u64, theta: f64, draws: usize) -> Vec<usize> {
        let z = Zipf::new(n, theta);
        let mut rng = StdRng::seed_from_u64(7);
        let mut counts = vec![0; n as usize];
        for _ in 0..draws {
            counts[z.sample(&mut rng) as usize] += 1;
        }
        counts
    }

    #[test]
    fn zipf_skewed_puts_most_mass_on_few_keys() {
        let counts = histogram(1000, 0.99, 100_000);
        let top10: usize = counts[..10].iter().sum();
        // Analytically ≈ 39% of the mass is on the first 10 of 1000 ranks.
        assert!(top10 > 33_000, "top10 = {top10}");
        assert!(counts[0] > counts[1] && counts[1] > counts[5]);
        assert!(counts[0] > 20 * counts[500].max(1));
    }

    #[test]
    fn zipf_theta_zero_is_uniform() {
        let counts = histogram(20, 0.0, 100_000);
        for &c in &counts {
            // Expected 5000 per key; allow 10%.
            assert!((4500..5500).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn zipf_single_key() {
        assert_eq!(histogram(1, 0.5, 100), vec![100]);
    }

    #[test]
    fn generated_values_are_unique_and_deterministic() {
        for workload in Workload::ALL {
            let cfg = GeneratorConfig {
                seed: 42,
                ..GeneratorConfig::for_workload(workload)
            };
            let a: Vec<_> = Generator::new(cfg.clone()).take(500).collect();
            let b: Vec<_> = Generator::new(cfg.clone()).take(500).collect();
            assert_eq!(a, b);
            let mut seen = HashSet::new();
            // Registers stay in 0..keys; list keys are retired for fresh ones.
            let in_range = |key: Key| workload != Workload::Register || key < cfg.keys;
            for op in a.iter().flatten() {
                match *op {
                    PlannedOp::Append { key, elem: v }
                    | PlannedOp::Delete { key, elem: v }
                    | PlannedOp::Write { key, value: v } => {
                        assert!(seen.insert(v), "value {v} reused");
                        assert!(in_range(key));
                    }
                    PlannedOp::Read { key } | PlannedOp::ReadReg { key } => {
                        assert!(in_range(key))
                    }
                    PlannedOp::Scan { lo, hi, limit } => {
                        assert!(lo < hi);
                        assert!(limit.is_none_or(|n| (1..=2).contains(&n)));
                    }
                }
            }
            assert!(!seen.is_empty());
        }
    }

    /// No key gets more than `max_writes_per_key` list writes (so no list
    /// grows longer), in every list workload, however long the run; the
    /// hottest slot keeps moving to fresh keys, and a read or scan only
    /// names a key that is live (not retired) when it is planned.
    #[test]
    fn no_key_gets_more_than_max_writes_per_key() {
        for workload in [
            Workload::ListAppend,
            Workload::Predicate,
            Workload::WriteSkew,
        ] {
            for max in [1, 5, 32] {
                let cfg = GeneratorConfig {
                    keys: 10,
                    skew: 0.99,
                    max_writes_per_key: max,
                    ..GeneratorConfig::for_workload(workload)
                };
                let mut writes: std::collections::HashMap<Key, u64> = Default::default();
                let mut retired = HashSet::new();
                for op in Generator::new(cfg).take(20_000).flatten() {
                    match op {
                        PlannedOp::Append { key, .. } | PlannedOp::Delete { key, .. } => {
                            assert!(!retired.contains(&key), "{workload:?}: k{key} retired");
                            let n = writes.entry(key).or_default();
                            *n += 1;
                            assert!(*n <= max, "{workload:?}: k{key} got {n} > {max} writes");
                            if *n == max {
                                retired.insert(key);
                            }
                        }
                        PlannedOp::Read { key } => {
                            assert!(!retired.contains(&key), "{workload:?}: k{key} retired")
                        }
                        _ => {}
                    }
                }
                // The hot keys were retired many times over.
                assert!(
                    writes.len() as u64 > 20_000 / (max * 10),
                    "{workload:?}: {max}"
                );
            }
        }
    }

    /// The keys an op reads, writes or scans.
    fn footprint(op: &PlannedOp) -> std::ops::Range<Key> {
        match *op {
            PlannedOp::Append { key, .. }
            | PlannedOp::Delete { key, .. }
            | PlannedOp::Read { key }
            | PlannedOp::Write { key, .. }
            | PlannedOp::ReadReg { key } => key..key + 1,
            PlannedOp::Scan { lo, hi, .. } => lo..hi,
        }
    }

    /// After [`Generator::next_segment`], no op names or scans a key any
    /// op before it named or scanned: every op of a segment lies in its
    /// [`Generator::segment_keys`], and those ranges follow one another
    /// without overlapping. Scans here are wider than the key space, so
    /// the predicate workload's scans reach well past its epoch's keys.
    #[test]
    fn segments_name_and_scan_disjoint_keys() {
        for workload in Workload::ALL {
            let cfg = GeneratorConfig {
                keys: 5,
                skew: 0.99,
                max_writes_per_key: 4,
                max_scan_width: 9,
                ..GeneratorConfig::for_workload(workload)
            };
            let mut g = Generator::new(cfg);
            let mut before: std::ops::Range<Key> = 0..0;
            let mut reached_past_epoch = false;
            for segment in 0..40 {
                // Short and long segments, some ending mid-epoch.
                let txns = [1, 3, 17, 200][segment % 4];
                let (mut lo, mut hi) = (Key::MAX, 0);
                for _ in 0..txns {
                    for op in g.next_txn() {
                        let f = footprint(&op);
                        let keys = g.segment_keys();
                        assert!(
                            keys.start <= f.start && f.end <= keys.end,
                            "{workload:?} segment {segment}: {op:?} outside {keys:?}"
                        );
                        assert!(
                            before.end <= f.start,
                            "{workload:?} segment {segment}: {op:?} reaches the segment before, \
                             {before:?}"
                        );
                        (lo, hi) = (lo.min(f.start), hi.max(f.end));
                        if matches!(op, PlannedOp::Scan { .. }) {
                            reached_past_epoch |= f.end > g.epoch + g.slots.len() as Key;
                        }
                    }
                }
                let keys = g.segment_keys();
                // It ends where the ops' keys end (the next segment
                // starts there or past it).
                assert!(keys.start <= lo, "{workload:?}: {segment}");
                assert_eq!(keys.end, hi, "{workload:?}: {segment}");
                assert!(
                    before.end <= keys.start,
                    "{workload:?}: {before:?} {keys:?}"
                );
                before = keys;
                g.next_segment();
            }
            if workload == Workload::Predicate {
                assert!(reached_past_epoch, "no scan reached past its epoch");
            }
        }
    }

    #[test]
    fn write_skew_txns_read_a_pair_and_append_to_it() {
        let mut g = Generator::new(GeneratorConfig::for_workload(Workload::WriteSkew));
        for _ in 0..100 {
            let t = g.next_txn();
            let (PlannedOp::Read { key: a }, PlannedOp::Read { key: b }) = (t[0], t[1]) else {
                panic!("{t:?}")
            };
            assert_eq!((a % 2, b), (0, a + 1));
            let PlannedOp::Append { key, .. } = t[2] else {
                panic!("{t:?}")
            };
            assert!(key == a || key == b);
        }
    }

    #[test]
    fn predicate_workload_mixes_scans_appends_and_deletes() {
        let g = Generator::new(GeneratorConfig::for_workload(Workload::Predicate));
        let ops: Vec<_> = g.take(300).flatten().collect();
        assert!(ops
            .iter()
            .any(|o| matches!(o, PlannedOp::Scan { limit: None, .. })));
        assert!(ops
            .iter()
            .any(|o| matches!(o, PlannedOp::Scan { limit: Some(_), .. })));
        assert!(ops.iter().any(|o| matches!(o, PlannedOp::Append { .. })));
        assert!(ops.iter().any(|o| matches!(o, PlannedOp::Delete { .. })));
    }

    #[test]
    fn scans_are_at_most_max_scan_width_wide() {
        for width in [1, 3, 9] {
            let cfg = GeneratorConfig {
                max_scan_width: width,
                ..GeneratorConfig::for_workload(Workload::Predicate)
            };
            let widths: HashSet<u64> = Generator::new(cfg)
                .take(2000)
                .flatten()
                .filter_map(|o| match o {
                    PlannedOp::Scan { lo, hi, .. } => Some(hi - lo),
                    _ => None,
                })
                .collect();
            assert_eq!(widths, (1..=width).collect(), "max_scan_width {width}");
        }
    }
}
