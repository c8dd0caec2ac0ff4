//! Shuttle model of cooperative cleaning (`gc/vacuum.rs::cooperate`)
//! racing another cleaner, a vacuum's `o2n_prune` and a deleted row's unlink
//! (`gc::prune_row`: `slot.swap(null)`, then the whole chain from what the
//! swap returned goes to limbo). The invariant: every version is retired at
//! most once, and versions still reachable from the slot are never retired.
//!
//! As in `tests/model.rs`, this is a model: it mirrors the engine's steps
//! on an arena of versions (indices instead of pointers); keep it in step
//! with `cooperate_slow`, `append_only::o2n_prune` and `prune_row`.

use shuttle::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use shuttle::sync::Arc;
use shuttle::thread;
use std::sync::atomic::{AtomicU64 as Ghost, Ordering::SeqCst as G};

const NIL: usize = usize::MAX;
const N: usize = 5;

struct Chain {
    slot: AtomicUsize,
    begin: Vec<AtomicU64>,
    next: Vec<AtomicUsize>,
    /// Ghost: times each version was retired.
    retired: Vec<Ghost>,
}

/// v0 -> v1 -> ... -> v4, v_i committed at timestamp i + 1.
fn chain() -> Chain {
    Chain {
        slot: AtomicUsize::new(0),
        begin: (0..N).map(|i| AtomicU64::new(i as u64 + 1)).collect(),
        next: (0..N)
            .map(|i| AtomicUsize::new(if i + 1 < N { i + 1 } else { NIL }))
            .collect(),
        retired: (0..N).map(|_| Ghost::new(0)).collect(),
    }
}

fn committed_at_or_below(c: &Chain, v: usize, h: u64) -> bool {
    c.begin[v].load(SeqCst) <= h
}

/// `cooperate` + `cooperate_slow`.
fn cooperate(c: &Chain, h: u64) {
    let head = c.slot.load(SeqCst);
    if head == NIL {
        return;
    }
    let n = c.next[head].load(SeqCst);
    if n == NIL || !committed_at_or_below(c, n, h) {
        return;
    }
    let mut keep = head;
    loop {
        let n = c.next[keep].load(SeqCst);
        if n != NIL && committed_at_or_below(c, n, h) {
            keep = n;
        } else {
            break;
        }
    }
    if c.slot.compare_exchange(head, keep, SeqCst, SeqCst).is_err() {
        return;
    }
    let mut v = head;
    while v != keep {
        let next = c.next[v].load(SeqCst);
        c.retired[v].fetch_add(1, G);
        v = next;
    }
}

/// `append_only::o2n_prune(slot, keep)`.
fn o2n_prune(c: &Chain, keep: usize) {
    let head = c.slot.load(SeqCst);
    let mut v = head;
    while v != keep {
        if v == NIL {
            return;
        }
        v = c.next[v].load(SeqCst);
    }
    if head == keep || c.slot.compare_exchange(head, keep, SeqCst, SeqCst).is_err() {
        return;
    }
    let mut v = head;
    while v != keep {
        let next = c.next[v].load(SeqCst);
        c.retired[v].fetch_add(1, G);
        v = next;
    }
}

/// `prune_row`'s unlink, then `retire_row` of the limbo chain.
fn unlink(c: &Chain) {
    let head = c.slot.swap(NIL, SeqCst);
    let mut v = head;
    while v != NIL {
        let next = c.next[v].load(SeqCst);
        c.retired[v].fetch_add(1, G);
        v = next;
    }
}

fn model(with_unlink: bool) {
    let c = Arc::new(chain());
    let mut hs = Vec::new();
    for h in [5u64, 3] {
        let c = Arc::clone(&c);
        hs.push(thread::spawn(move || cooperate(&c, h)));
    }
    {
        let c = Arc::clone(&c);
        hs.push(thread::spawn(move || o2n_prune(&c, 2)));
    }
    if with_unlink {
        let c = Arc::clone(&c);
        hs.push(thread::spawn(move || unlink(&c)));
    }
    for h in hs {
        h.join().unwrap();
    }
    let head = c.slot.load(SeqCst);
    let mut reachable = [false; N];
    let mut v = head;
    while v != NIL {
        reachable[v] = true;
        v = c.next[v].load(SeqCst);
    }
    for (i, &reached) in reachable.iter().enumerate() {
        let r = c.retired[i].load(G);
        assert!(r <= 1, "version {i} retired {r} times");
        assert_eq!(
            r == 0,
            reached,
            "version {i}: retired {r}, reachable {reached}"
        );
    }
    if with_unlink {
        assert_eq!(head, NIL);
    }
}

#[test]
fn cooperative_cleaners_and_a_vacuum_retire_each_version_once() {
    shuttle::check_random(|| model(false), 2000);
}

#[test]
fn cooperative_cleaning_races_an_unlink() {
    shuttle::check_random(|| model(true), 2000);
    shuttle::check_pct(|| model(true), 2000, 3);
}
