//! The B+-tree's tests: orders, splits, scans racing writers, named versions.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Byte keys that share long prefixes and tie on the order word (two
/// integers, then text longer than the word holds), so comparisons
/// reach the full bytes.
/// Byte keys in the order of `i`, whose order words tie (a shared
/// text first), so comparisons reach the full bytes: a queue's keys.
fn queue_bytes_of(i: u64) -> Vec<u8> {
    let k = crate::value::Key(vec![
        crate::Value::from("a-queue-of-keys-with-a-long-shared-prefix"),
        crate::Value::Int(i as i64),
    ]);
    match crate::index::key::encode(&k, false) {
        crate::index::key::EncodedKey::Bytes(b) => b.to_vec(),
        crate::index::key::EncodedKey::U64(_) => unreachable!(),
    }
}

fn bytes_of(i: u64) -> Vec<u8> {
    let k = crate::value::Key(vec![
        crate::Value::Int(7),
        crate::Value::Int((i % 5) as i64),
        crate::Value::from(format!("customer-name-{:06}", i / 5).as_str()),
    ]);
    match crate::index::key::encode(&k, false) {
        crate::index::key::EncodedKey::Bytes(b) => b.to_vec(),
        crate::index::key::EncodedKey::U64(_) => unreachable!(),
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u64, u64),
    Remove(u64, u64),
    Take(u64),
    Upsert(u64, u64),
    Get(u64),
    Range(Bound<u64>, Bound<u64>),
}

fn bound() -> impl Strategy<Value = Bound<u64>> {
    prop_oneof![
        (0..3000u64).prop_map(Bound::Included),
        (0..3000u64).prop_map(Bound::Excluded),
        Just(Bound::Unbounded),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..3000u64, 0..4u64).prop_map(|(k, v)| Op::Insert(k, v)),
        3 => (0..3000u64, 0..4u64).prop_map(|(k, v)| Op::Remove(k, v)),
        1 => (0..3000u64).prop_map(Op::Take),
        1 => (0..3000u64, 0..4u64).prop_map(|(k, v)| Op::Upsert(k, v)),
        2 => (0..3000u64).prop_map(Op::Get),
        1 => (bound(), bound()).prop_map(|(l, h)| Op::Range(l, h)),
    ]
}

/// Runs `ops` on a tree and on a `BTreeMap` of the same keys (`u64`
/// order for integer trees, byte order for byte trees) and compares
/// every answer.
fn agree(bytes: bool, ops: &[Op]) {
    agree_in(bytes, false, ops)
}

/// Byte keys some of whose words hold them whole and some not, with
/// ties between the two: `(7, i)`; `(7, j, 2^60 + i)`, whose word is
/// exactly 16 bytes and holds it whole; that key extended by `5`,
/// whose word ties with it and does not hold it; `(7, i, "t")`.
fn whole_mix_of(i: u64) -> Vec<u8> {
    use crate::Value::Int;
    // Kind 2 at `i` extends kind 1 at `i - 1`.
    let at = |i: u64| ((i % 200 + 1) as i64, (1i64 << 60) + i as i64);
    let vals = match i % 4 {
        0 => vec![Int(7), Int(i as i64)],
        1 => vec![Int(7), Int(at(i).0), Int(at(i).1)],
        2 => vec![Int(7), Int(at(i - 1).0), Int(at(i - 1).1), Int(5)],
        _ => vec![Int(7), Int(i as i64), crate::Value::from("t")],
    };
    match crate::index::key::encode(&crate::value::Key(vals), false) {
        crate::index::key::EncodedKey::Bytes(b) => b.to_vec(),
        crate::index::key::EncodedKey::U64(_) => unreachable!(),
    }
}

/// [`agree`] on a tree of integer keys, of byte keys, or (`whole`) of
/// byte keys kept as their words where the word holds them whole.
fn agree_in(bytes: bool, whole: bool, ops: &[Op]) {
    let tree = if whole {
        BTree::new_whole_words()
    } else {
        BTree::new(bytes)
    };
    let enc: Vec<Vec<u8>> = (0..3000)
        .map(if whole { whole_mix_of } else { bytes_of })
        .collect();
    if whole {
        let (w1, whole1) = crate::index::key::order_word_whole(&enc[1]);
        let (w2, whole2) = crate::index::key::order_word_whole(&enc[2]);
        assert!(whole1 && !whole2 && w1 == w2, "kinds 1 and 2 tie");
    }
    let key = |k: u64| {
        if bytes {
            Key::Bytes(&enc[k as usize])
        } else {
            Key::Int(k)
        }
    };
    let order = |k: u64| {
        if bytes {
            enc[k as usize].clone()
        } else {
            k.to_be_bytes().to_vec()
        }
    };
    let mut model: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    for op in ops {
        match *op {
            Op::Insert(k, v) => {
                let want = match model.get(&order(k)) {
                    Some(&p) => Err(p),
                    None => {
                        model.insert(order(k), v);
                        Ok(())
                    }
                };
                assert_eq!(tree.insert(&key(k), v), want, "{op:?}");
            }
            Op::Remove(k, v) => {
                let want = model.get(&order(k)) == Some(&v);
                if want {
                    model.remove(&order(k));
                }
                assert_eq!(tree.remove_if(&key(k), v), want, "{op:?}");
            }
            Op::Take(k) => assert_eq!(tree.take(&key(k)), model.remove(&order(k)), "{op:?}"),
            Op::Upsert(k, v) => {
                assert_eq!(tree.upsert(&key(k), v), model.insert(order(k), v), "{op:?}")
            }
            Op::Get(k) => assert_eq!(tree.get(&key(k)), model.get(&order(k)).copied()),
            Op::Range(lo, hi) => {
                let b = |x: Bound<u64>| map_bound(x, order);
                let (l, h) = (b(lo), b(hi));
                let inverted = match (&l, &h) {
                    (
                        Bound::Included(a) | Bound::Excluded(a),
                        Bound::Included(z) | Bound::Excluded(z),
                    ) => {
                        a > z
                            || (a == z
                                && !matches!((&l, &h), (Bound::Included(_), Bound::Included(_))))
                    }
                    _ => false,
                };
                let want: Vec<u64> = if inverted {
                    vec![]
                } else {
                    model.range((l, h)).map(|(_, v)| *v).collect()
                };
                let mut got = vec![];
                let (kl, kh) = (map_bound(lo, key), map_bound(hi, key));
                tree.range(kl.as_ref(), kh.as_ref(), |v| got.push(v));
                assert_eq!(got, want, "{op:?}");
                // The iterator hands out the keys themselves.
                let g = crossbeam_epoch::pin();
                let keys: Vec<&[u8]> = tree
                    .iter(kl.as_ref(), kh.as_ref(), &g)
                    .map(|(k, _)| k)
                    .collect();
                let want: Vec<&[u8]> = match (inverted, bytes) {
                    // Keys held whole come back empty (the primary
                    // index reads values only).
                    _ if whole => keys.clone(),
                    (true, _) => vec![],
                    (false, true) => model.range((b(lo), b(hi))).map(|(k, _)| &k[..]).collect(),
                    // Integer trees own no bytes.
                    (false, false) => vec![&[][..]; got.len()],
                };
                assert_eq!(keys, want, "{op:?}");
            }
        }
    }
    assert_eq!(tree.len(), model.len());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn a_tree_answers_as_an_ordered_map(
        kind in 0..3u8,
        ops in proptest::collection::vec(op(), 1..4000),
    ) {
        agree_in(kind > 0, kind == 2, &ops);
    }
}

#[test]
fn ascending_descending_and_shuffled_fills_split_and_keep_order() {
    for bytes in [false, true] {
        let enc: Vec<Vec<u8>> = (0..3000).map(bytes_of).collect();
        let mut ops: Vec<Op> = (0..3000).map(|k| Op::Insert(k, k % 4)).collect();
        ops.extend((0..3000).rev().map(|k| Op::Insert(k, 1)));
        ops.extend((0..3000).step_by(3).map(|k| Op::Remove(k, k % 4)));
        ops.push(Op::Range(Bound::Unbounded, Bound::Unbounded));
        ops.push(Op::Range(Bound::Excluded(17), Bound::Included(2500)));
        agree(bytes, &ops);
        // Descending inserts split at the middle, not as appends.
        let t = BTree::new(bytes);
        assert!(t.is_empty());
        for k in (0..3000u64).rev() {
            let key = if bytes {
                Key::Bytes(&enc[k as usize])
            } else {
                Key::Int(k)
            };
            t.insert(&key, k).unwrap();
        }
        assert_eq!(t.len(), 3000);
        assert!(!t.is_empty());
    }
}

/// Physical pointers on a tree alone (`index::primary`): each entry's
/// named version travels with its key through splits (ascending and
/// shuffled inserts) and removals that shift a leaf, and is re-pointed
/// only while the key maps to the value named.
#[test]
fn named_versions_move_with_their_keys() {
    for bytes in [false, true] {
        let enc: Vec<Vec<u8>> = (0..2000).map(bytes_of).collect();
        let key = |k: u64| {
            if bytes {
                Key::Bytes(&enc[k as usize])
            } else {
                Key::Int(k)
            }
        };
        let t = BTree::new(bytes).naming_versions();
        assert!(t.names_versions() && !BTree::new(bytes).names_versions());
        // Evens ascending (appends), then odds descending (middles).
        let odds = (0..1000u64).rev().map(|i| 2 * i + 1);
        let order = (0..2000).step_by(2).chain(odds);
        for k in order {
            t.insert_named(&key(k), k, 1000 + k).unwrap();
        }
        for k in (0..2000).step_by(3) {
            assert!(t.name_version(&key(k), k, 5000 + k));
        }
        assert!(!t.name_version(&key(7), 8, 1), "7 maps to 7, not 8");
        for k in (0..2000).step_by(5) {
            assert!(t.remove_if(&key(k), k));
        }
        assert!(!t.name_version(&key(10), 10, 1), "10 is gone");
        for k in 0..2000 {
            let want = match (k % 5, k % 3) {
                (0, _) => None,
                (_, 0) => Some((k, 5000 + k)),
                _ => Some((k, 1000 + k)),
            };
            assert_eq!(t.named(&key(k)), want, "key {k} (bytes: {bytes})");
        }
        // A tree of logical pointers names nothing.
        let plain = BTree::new(bytes);
        plain.insert_named(&key(1), 1, 77).unwrap();
        assert_eq!(plain.named(&key(1)), Some((1, 0)));
        assert!(!plain.name_version(&key(1), 1, 78));
    }
}

/// The property `scc::TreeIndex` lacked: scans racing inserts and
/// removals (splits included) see every key present throughout, once
/// and in order, wherever the scan starts.
#[test]
fn scans_see_every_key_present_throughout_while_others_churn() {
    for bytes in [false, true] {
        let n = 4000u64;
        let enc: Arc<Vec<Vec<u8>>> = Arc::new((0..2 * n).map(bytes_of).collect());
        let tree = Arc::new(BTree::new(bytes));
        let key = move |enc: &Vec<Vec<u8>>, k: u64| -> Vec<u8> {
            if bytes {
                enc[k as usize].clone()
            } else {
                vec![]
            }
        };
        // Permanent keys: every third.
        for k in (0..n).step_by(3) {
            let kb = key(&enc, k);
            let kk = if bytes { Key::Bytes(&kb) } else { Key::Int(k) };
            tree.insert(&kk, k).unwrap();
        }
        let stop = Arc::new(AtomicBool::new(false));
        let churn = {
            let (tree, stop, enc) = (tree.clone(), stop.clone(), enc.clone());
            std::thread::spawn(move || {
                let mut x = 1u64;
                let mut rounds = 0u64;
                while !stop.load(Relaxed) || rounds < 20_000 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let k = x % (2 * n);
                    if k < n && k.is_multiple_of(3) {
                        continue;
                    }
                    let kb = key(&enc, k);
                    let kk = if bytes { Key::Bytes(&kb) } else { Key::Int(k) };
                    if tree.insert(&kk, k).is_err() {
                        assert!(tree.remove_if(&kk, k));
                    }
                    rounds += 1;
                }
            })
        };
        let order = |k: u64| {
            if bytes {
                enc[k as usize].clone()
            } else {
                k.to_be_bytes().to_vec()
            }
        };
        for round in 0..300u64 {
            let lo = (round * 37) % n;
            let lob = key(&enc, lo);
            let lk = if bytes {
                Key::Bytes(&lob)
            } else {
                Key::Int(lo)
            };
            let mut seen = vec![];
            tree.range(Bound::Included(&lk), Bound::Unbounded, |v| seen.push(v));
            let keys: Vec<Vec<u8>> = seen.iter().map(|&v| order(v)).collect();
            assert!(keys.windows(2).all(|w| w[0] < w[1]), "in order, once");
            let seen: std::collections::HashSet<u64> = seen.into_iter().collect();
            for k in (0..n).step_by(3).filter(|&k| order(k) >= order(lo)) {
                assert!(seen.contains(&k), "round {round}: permanent key {k} missed");
            }
        }
        stop.store(true, Relaxed);
        churn.join().unwrap();
    }
}

/// A queue (appends at one end, removals at the other) leaves no trail
/// of empty leaves: an emptied leaf, and then a parent left with it
/// alone, joins its left neighbour; only the tree's left edge keeps
/// one. The 1,000 keys left fill 32 leaves. Without the unlinking the
/// 9,000 removed keys kept ~280 empty leaves, which every scan from
/// the start walked (one empty leaf per parent: ~9, when only leaves
/// with a left sibling under their parent went).
#[test]
fn emptied_leaves_leave_the_tree() {
    for bytes in [false, true] {
        let enc: Vec<Vec<u8>> = (0..12_000).map(queue_bytes_of).collect();
        let t = BTree::new(bytes);
        let with = |k: u64, f: &mut dyn FnMut(&Key)| {
            if bytes {
                f(&Key::Bytes(&enc[k as usize]))
            } else {
                f(&Key::Int(k))
            }
        };
        for k in 0..10_000 {
            with(k, &mut |key| t.insert(key, k).unwrap());
        }
        let (before, ..) = t.shape();
        for k in 0..9_000 {
            with(k, &mut |key| assert!(t.remove_if(key, k)));
        }
        let (leaves, entries, _) = t.shape();
        assert_eq!(entries, 1_000, "bytes {bytes}");
        assert!(
            before >= 300 && leaves <= 36,
            "bytes {bytes}: {before} -> {leaves} leaves"
        );
        let mut all = vec![];
        t.range(Bound::Unbounded, Bound::Unbounded, |v| all.push(v));
        assert_eq!(all, (9_000..10_000).collect::<Vec<_>>(), "bytes {bytes}");
        // The drained range takes keys again, in order, and finds them.
        for k in (0..9_000).step_by(7).chain(10_000..12_000) {
            with(k, &mut |key| t.insert(key, k).unwrap());
        }
        for k in (0..9_000).step_by(7) {
            with(k, &mut |key| {
                assert_eq!(t.get(key), Some(k), "bytes {bytes}")
            });
        }
        let mut all = vec![];
        t.range(Bound::Unbounded, Bound::Unbounded, |v| all.push(v));
        let want: Vec<u64> = (0..9_000).step_by(7).chain(9_000..12_000).collect();
        assert_eq!(all, want, "bytes {bytes}");
    }
}

/// A queue under concurrent scans: one thread appends, one removes the
/// oldest key, and scanners check that keys placed beyond the queue
/// for good are seen, in order, while leaves empty and leave the tree
/// (and are freed through the epoch) under them.
#[test]
fn a_queue_drains_under_scans() {
    for bytes in [false, true] {
        let n = 30_000u64;
        let enc: Arc<Vec<Vec<u8>>> = Arc::new((0..n + 100).map(queue_bytes_of).collect());
        let tree = Arc::new(BTree::new(bytes));
        let op = move |tree: &BTree, enc: &[Vec<u8>], k: u64, insert: bool| {
            let key = if bytes {
                Key::Bytes(&enc[k as usize])
            } else {
                Key::Int(k)
            };
            if insert {
                tree.insert(&key, k).is_ok()
            } else {
                tree.remove_if(&key, k)
            }
        };
        // Permanent keys past every key the queue takes.
        let permanent: Vec<u64> = (n..n + 100).collect();
        for &k in &permanent {
            assert!(op(&tree, &enc, k, true));
        }
        let done = Arc::new(AtomicBool::new(false));
        let appender = {
            let (tree, enc) = (tree.clone(), enc.clone());
            std::thread::spawn(move || {
                for k in 0..n {
                    assert!(op(&tree, &enc, k, true));
                }
            })
        };
        let popper = {
            let (tree, enc, done) = (tree.clone(), enc.clone(), done.clone());
            std::thread::spawn(move || {
                let mut next = 0;
                while next < n {
                    if op(&tree, &enc, next, false) {
                        next += 1;
                    } else {
                        std::thread::yield_now(); // not appended yet
                    }
                }
                done.store(true, Relaxed);
            })
        };
        let mut scans = 0;
        while !done.load(Relaxed) || scans < 20 {
            let mut seen = vec![];
            tree.range(Bound::Unbounded, Bound::Unbounded, |v| seen.push(v));
            let order = |v: &u64| {
                if bytes {
                    enc[*v as usize].clone()
                } else {
                    v.to_be_bytes().to_vec()
                }
            };
            assert!(
                seen.windows(2).all(|w| order(&w[0]) < order(&w[1])),
                "in order, once"
            );
            let tail = &seen[seen.len().saturating_sub(permanent.len())..];
            assert_eq!(
                tail,
                &permanent[..],
                "bytes {bytes}: the permanent keys, last"
            );
            scans += 1;
        }
        appender.join().unwrap();
        popper.join().unwrap();
        let mut all = vec![];
        tree.range(Bound::Unbounded, Bound::Unbounded, |v| all.push(v));
        assert_eq!(all, permanent, "bytes {bytes}");
        // ~940 leaves held the queue's keys; the permanent ones fill
        // four, and the tree's left edge keeps an empty leaf (a first
        // child whose parent still holds keys), as may a removal that
        // lost a race now and then.
        let leaves = tree.shape().0;
        assert!(leaves <= 12, "bytes {bytes}: {leaves} leaves");
    }
}

/// TPC-C's order lines: twenty districts, each appending its orders'
/// lines at the end of its own key range.
#[test]
fn appends_at_the_end_of_many_ranges_fill_their_leaves() {
    let t = BTree::new(true);
    let mut n = 0;
    for o in 1..=300i64 {
        for d in 1..=20i64 {
            for ol in 1..=10i64 {
                let k = crate::value::Key([2, d, o, ol].map(crate::Value::Int).to_vec());
                let b = match crate::index::key::encode(&k, false) {
                    crate::index::key::EncodedKey::Bytes(b) => b,
                    crate::index::key::EncodedKey::U64(_) => unreachable!(),
                };
                t.insert(&Key::Bytes(&b), n).unwrap();
                n += 1;
            }
        }
    }
    let (leaves, entries, height) = t.shape();
    assert_eq!(entries, n as usize);
    eprintln!("leaves {leaves} entries {entries} height {height}");
    assert!(
        entries >= leaves * CAP * 3 / 4,
        "{entries} entries in {leaves} leaves"
    );
}

#[test]
fn of_racing_inserts_of_one_key_exactly_one_wins() {
    let tree = Arc::new(BTree::new(true));
    let keys: Arc<Vec<Vec<u8>>> = Arc::new((0..2000).map(bytes_of).collect());
    let hs: Vec<_> = (0..2u64)
        .map(|t| {
            let (tree, keys) = (tree.clone(), keys.clone());
            std::thread::spawn(move || {
                keys.iter()
                    .filter(|k| tree.insert(&Key::Bytes(k), t).is_ok())
                    .count()
            })
        })
        .collect();
    let won: usize = hs.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(won, 2000);
    assert_eq!(tree.len(), 2000);
}

/// Of threads that upsert and take the same few keys, each value that
/// went in comes back once: to the upsert that replaced it, to the take
/// that removed it, or from the tree at the end (MV-PBT's P_N frees the
/// record a value names on exactly that hand-back: `mvpbt/active.rs`).
#[test]
fn upserts_and_takes_hand_each_value_back_once() {
    let tree = Arc::new(BTree::new(true));
    let keys: Arc<Vec<Vec<u8>>> = Arc::new((0..8).map(bytes_of).collect());
    let hs: Vec<_> = (0..3u64)
        .map(|t| {
            let (tree, keys) = (tree.clone(), keys.clone());
            std::thread::spawn(move || {
                let mut back = Vec::new();
                for i in 0..20_000u64 {
                    let k = Key::Bytes(&keys[(i * 7 + t) as usize % keys.len()]);
                    // Values are unique across threads: t, then the step.
                    let v = (t << 32) | i;
                    if i % 3 == 2 {
                        back.extend(tree.take(&k));
                    } else {
                        back.extend(tree.upsert(&k, v));
                    }
                }
                back
            })
        })
        .collect();
    let mut back: Vec<u64> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
    tree.range(Bound::Unbounded, Bound::Unbounded, |v| back.push(v));
    let went_in = 3 * (0..20_000u64).filter(|i| i % 3 != 2).count();
    back.sort_unstable();
    let n = back.len();
    back.dedup();
    assert_eq!(back.len(), n, "a value came back twice");
    assert_eq!(n, went_in, "a value was lost");
}
