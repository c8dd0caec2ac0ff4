//! Shuttle model check of the B+-tree behind the ordered indexes, on the
//! engine's own code (`index/btree.rs`, four keys a node under the model,
//! every node word a shuttle atomic).
//!
//! Permanent keys sit in the tree from the start; two threads insert keys
//! between them (splitting leaves, inner nodes and the root under each
//! other's descents), another removes keys present from the start and
//! some of the new ones, and scanners walk ranges. The invariants: a scan
//! returns every permanent key in its range, each once, in order (keys
//! present throughout are never missed: splits move keys right, a scan
//! follows sibling links and re-reads a leaf that changed under it); a
//! removal finds a key present throughout; of two threads inserting one
//! key, exactly one is told it inserted; when the threads are done the
//! tree holds exactly what the model says, in order.
//! `upserts_and_takes_hand_each_value_back_once`: of racing upserts and
//! takes of one key, each value is handed back once (MV-PBT's P_N frees
//! records on that).
//! `a_scan_that_trusts_its_read_is_caught` shows the model fails when a
//! scan takes a leaf's entries without validating its version. A second
//! model drains leaves, which then leave the tree, under a scan and
//! inserts (`emptied_leaves_leave_under_scans_and_inserts`), and a third
//! one a range wide enough that whole inner nodes empty and go
//! (`emptied_subtrees_leave_under_scans_and_inserts`; its PCT runs catch
//! an unlink that leaves the emptied inner nodes unlocked, letting an
//! insert land in a leaf that is gone).
#![cfg(strata_model)]

use shuttle::sync::Arc;
use shuttle::thread;
use std::ops::{Bound, RangeBounds};
use strata::model::{caught, BTree, Break, TreeKey};

/// The encoded bytes of key `i` (byte trees): a composite key whose order
/// words tie across keys, so comparisons reach the full bytes.
fn bytes(i: u64) -> Vec<u8> {
    let mut b = vec![0x01, 0x80, 0, 0, 0, 0, 0, 0, 7];
    b.extend_from_slice(b"a-long-shared-text-prefix");
    b.extend_from_slice(&i.to_be_bytes());
    b
}

fn with_key<R>(byte_keys: bool, i: u64, f: impl FnOnce(&TreeKey) -> R) -> R {
    if byte_keys {
        let b = bytes(i);
        f(&TreeKey::Bytes(&b))
    } else {
        f(&TreeKey::Int(i))
    }
}

fn bytes_for(byte_keys: bool, k: u64) -> Vec<u8> {
    if byte_keys {
        bytes(k)
    } else {
        vec![]
    }
}

/// A scan bound as the tree takes it (`b` holds the bound's bytes).
fn bound_key<'a>(byte_keys: bool, k: Bound<u64>, b: &'a Bound<Vec<u8>>) -> Bound<TreeKey<'a>> {
    let key = |k: u64, v: &'a Vec<u8>| {
        if byte_keys {
            TreeKey::Bytes(&v[..])
        } else {
            TreeKey::Int(k)
        }
    };
    match (k, b) {
        (Bound::Included(k), Bound::Included(v)) => Bound::Included(key(k, v)),
        (Bound::Excluded(k), Bound::Excluded(v)) => Bound::Excluded(key(k, v)),
        _ => Bound::Unbounded,
    }
}

/// Keys 0, 10, 20, .. 70 are permanent, 15 and 25 present until the
/// remover takes them out (it must find them, wherever splits moved them);
/// two writers insert keys between them (both runs land in the same
/// leaves, so leaves, inner nodes and the root split under each other's
/// descents), the remover also takes out 2 and 4 if they are in by then,
/// and two scanners read [0, 75] and (5, 45].
fn model(byte_keys: bool) {
    let tree = Arc::new(BTree::new(byte_keys));
    let permanent: Vec<u64> = (0..8).map(|i| i * 10).collect();
    for &k in permanent.iter().chain(&[15, 25]) {
        with_key(byte_keys, k, |key| tree.insert(key, k)).unwrap();
    }
    let runs: [Vec<u64>; 2] = [vec![1, 3, 5, 7, 9, 31, 33, 35], vec![2, 4, 6, 8, 32, 34]];
    let writers: Vec<_> = runs
        .iter()
        .map(|run| {
            let (tree, run) = (Arc::clone(&tree), run.clone());
            thread::spawn(move || {
                for k in run {
                    with_key(byte_keys, k, |key| tree.insert(key, k)).unwrap();
                }
            })
        })
        .collect();
    let remover = {
        let tree = Arc::clone(&tree);
        thread::spawn(move || {
            let mut removed = vec![15, 25];
            for k in [15u64, 25] {
                assert!(
                    with_key(byte_keys, k, |key| tree.remove_if(key, k)),
                    "key {k}, present throughout, was not found to remove"
                );
            }
            for k in [2u64, 4] {
                // The writer's insert may not have happened yet.
                if with_key(byte_keys, k, |key| tree.remove_if(key, k)) {
                    removed.push(k);
                }
            }
            removed
        })
    };
    let scanner = |lo: Bound<u64>, hi: Bound<u64>| {
        let tree = Arc::clone(&tree);
        let permanent = permanent.clone();
        thread::spawn(move || {
            let (lo_b, hi_b) = (
                lo.map(|k| bytes_for(byte_keys, k)),
                hi.map(|k| bytes_for(byte_keys, k)),
            );
            let lo_k = bound_key(byte_keys, lo, &lo_b);
            let hi_k = bound_key(byte_keys, hi, &hi_b);
            let mut seen = vec![];
            tree.range(lo_k.as_ref(), hi_k.as_ref(), |v| seen.push(v));
            assert!(
                seen.windows(2).all(|w| w[0] < w[1]),
                "a scan returned keys out of order or twice: {seen:?}"
            );
            for k in permanent {
                if (lo, hi).contains(&k) {
                    assert!(seen.contains(&k), "a scan missed key {k}: {seen:?}");
                }
            }
        })
    };
    let scans = [
        scanner(Bound::Included(0), Bound::Included(75)),
        scanner(Bound::Excluded(5), Bound::Included(45)),
    ];
    // Two threads race to insert one key: exactly one is told it did.
    let racer = |v: u64| {
        let tree = Arc::clone(&tree);
        thread::spawn(move || with_key(byte_keys, 100, |key| tree.insert(key, v)).is_ok())
    };
    let racers = [racer(1), racer(2)];
    for w in writers {
        w.join().unwrap();
    }
    let removed = remover.join().unwrap();
    for s in scans {
        s.join().unwrap();
    }
    let won: Vec<bool> = racers.into_iter().map(|r| r.join().unwrap()).collect();
    assert_eq!(won.iter().filter(|&&w| w).count(), 1, "{won:?}");

    let mut want: Vec<u64> = permanent
        .iter()
        .chain(&[15, 25])
        .chain(runs.iter().flatten())
        .copied()
        .collect();
    want.retain(|k| !removed.contains(k));
    want.sort();
    want.push(if won[0] { 1 } else { 2 }); // key 100's value
    let mut all = vec![];
    tree.range(Bound::Unbounded, Bound::Unbounded, |v| all.push(v));
    assert_eq!(all, want);
}

/// Leaves emptied and taken out of the tree (`unlink_empty_leaf`) under
/// scans and inserts: keys 0 and 40 are permanent; 12, 14, .. 30 fill
/// three leaves between them and the remover takes them all out, so
/// leaves empty and leave the tree (their ranges join their left
/// siblings'); a writer inserts 23 and 25 meanwhile, into the range of a
/// leaf that may be going (it must land in a leaf of the tree: one that
/// reached the going leaf finds its version moved and starts over), and a
/// scanner reads [0, 50]: it must return 0 and 40, every key once and in
/// order, whichever leaves it stands on when they go.
fn drain_model(byte_keys: bool) {
    drain(byte_keys, (12..=30).step_by(2).collect(), [23, 25], 40);
}

/// The drain of a range wide enough that whole inner nodes empty and leave
/// (nodes of four keys: 38 drained keys fill a three-level tree), with the
/// writer's keys in ranges whose subtrees may be going.
fn deep_drain_model(byte_keys: bool) {
    drain(byte_keys, (2..=76).step_by(2).collect(), [41, 75], 80);
}

fn drain(byte_keys: bool, drained: Vec<u64>, added: [u64; 2], last: u64) {
    let tree = Arc::new(BTree::new(byte_keys));
    for &k in [0u64, last].iter().chain(&drained) {
        with_key(byte_keys, k, |key| tree.insert(key, k)).unwrap();
    }
    let remover = {
        let (tree, drained) = (Arc::clone(&tree), drained.clone());
        thread::spawn(move || {
            for k in drained {
                assert!(
                    with_key(byte_keys, k, |key| tree.remove_if(key, k)),
                    "key {k}, present until now, was not found to remove"
                );
            }
        })
    };
    let writer = {
        let tree = Arc::clone(&tree);
        thread::spawn(move || {
            for k in added {
                with_key(byte_keys, k, |key| tree.insert(key, k)).unwrap();
            }
        })
    };
    let scanner = {
        let tree = Arc::clone(&tree);
        thread::spawn(move || {
            let (lo, hi) = (bytes_for(byte_keys, 0), bytes_for(byte_keys, last + 10));
            let (lo, hi) = if byte_keys {
                (TreeKey::Bytes(&lo), TreeKey::Bytes(&hi))
            } else {
                (TreeKey::Int(0), TreeKey::Int(last + 10))
            };
            let mut seen = vec![];
            tree.range(Bound::Included(&lo), Bound::Included(&hi), |v| seen.push(v));
            assert!(
                seen.windows(2).all(|w| w[0] < w[1]),
                "a scan returned keys out of order or twice: {seen:?}"
            );
            for k in [0, last] {
                assert!(seen.contains(&k), "a scan missed key {k}: {seen:?}");
            }
        })
    };
    remover.join().unwrap();
    writer.join().unwrap();
    scanner.join().unwrap();
    let mut all = vec![];
    tree.range(Bound::Unbounded, Bound::Unbounded, |v| all.push(v));
    let want = vec![0, added[0], added[1], last];
    assert_eq!(all, want);
    for k in want {
        assert_eq!(with_key(byte_keys, k, |key| tree.get(key)), Some(k));
    }
}

/// Two threads upsert and take the same keys (each value put in unique)
/// while a third inserts keys between them, splitting the leaves they
/// work in: every value that went in comes back exactly once, to the
/// upsert that replaced it, to the take that removed it, or from the tree
/// at the end. MV-PBT's P_N gives back the record a value names on that
/// hand-back (`index/mvpbt/active.rs`), so twice would be a double free
/// and never a leak.
fn hand_back_model(byte_keys: bool) {
    let tree = Arc::new(BTree::new(byte_keys));
    let start = [10u64, 20, 30];
    for k in start {
        with_key(byte_keys, k, |key| tree.insert(key, k)).unwrap();
    }
    let ops = [10u64, 20, 10, 30, 20];
    let upserts = |t: u64| (0..ops.len()).filter(move |i| (i + t as usize) % 2 == 0);
    let value = |t: u64, i: usize| 100 * (t + 1) + i as u64;
    let workers: Vec<_> = (0..2u64)
        .map(|t| {
            let tree = Arc::clone(&tree);
            thread::spawn(move || {
                let mut back = vec![];
                for (i, k) in ops.into_iter().enumerate() {
                    back.extend(with_key(byte_keys, k, |key| {
                        if (i + t as usize) % 2 == 0 {
                            tree.upsert(key, value(t, i))
                        } else {
                            tree.take(key)
                        }
                    }));
                }
                back
            })
        })
        .collect();
    let added = [11u64, 13, 15, 17, 19, 21, 25, 29];
    let splitter = {
        let tree = Arc::clone(&tree);
        thread::spawn(move || {
            for k in added {
                with_key(byte_keys, k, |key| tree.insert(key, k)).unwrap();
            }
        })
    };
    let mut back: Vec<u64> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    splitter.join().unwrap();
    let mut rest = vec![];
    tree.range(Bound::Unbounded, Bound::Unbounded, |v| rest.push(v));
    for k in added {
        assert!(rest.contains(&k), "an insert beside the upserts was lost");
    }
    back.extend(rest.into_iter().filter(|v| !added.contains(v)));
    back.sort_unstable();
    let mut went_in: Vec<u64> = start
        .into_iter()
        .chain((0..2).flat_map(|t| upserts(t).map(move |i| value(t, i))))
        .collect();
    went_in.sort_unstable();
    assert_eq!(back, went_in, "each value comes back exactly once");
}

#[test]
fn upserts_and_takes_hand_each_value_back_once() {
    shuttle::check_random(|| hand_back_model(false), 3000);
    shuttle::check_pct(|| hand_back_model(false), 3000, 3);
    shuttle::check_random(|| hand_back_model(true), 2000);
}

#[test]
fn emptied_leaves_leave_under_scans_and_inserts() {
    shuttle::check_random(|| drain_model(false), 5000);
    shuttle::check_pct(|| drain_model(false), 5000, 3);
    shuttle::check_random(|| drain_model(true), 3000);
}

#[test]
fn emptied_subtrees_leave_under_scans_and_inserts() {
    shuttle::check_random(|| deep_drain_model(false), 400);
    shuttle::check_pct(|| deep_drain_model(false), 20000, 3);
    shuttle::check_random(|| deep_drain_model(true), 200);
}

#[test]
fn scans_never_miss_a_key_present_throughout() {
    shuttle::check_random(|| model(false), 5000);
    shuttle::check_pct(|| model(false), 5000, 3);
    shuttle::check_random(|| model(true), 3000);
}

#[test]
fn a_scan_that_trusts_its_read_is_caught() {
    assert!(
        caught(Break::TreeScanTrustsItsRead, || shuttle::check_random(
            || model(false),
            3000
        )),
        "the model must be able to find a scan that misses a key"
    );
}
