//! Shuttle model check of cooperative cleaning on the engine's own code:
//! `storage/append_only.rs::cooperate` (find the obsolete prefix of an O2N chain,
//! move the slot past it by CAS, retire it) racing another cleaner, a
//! vacuum's `storage/append_only.rs::o2n_prune`, and a deleted row's unlink
//! (`gc::prune_row`: `slot.swap(null)`, then the whole chain from what the
//! swap returned goes to limbo; done here by the test).
//!
//! Built with `--cfg strata_model` (see `src/sync/mod.rs`): the slot and the
//! versions' chain pointers are shuttle's atomics, and `cooperate` logs
//! what it retires (`sync::retire`) instead of freeing it. The invariant: every version is retired at most once, and
//! versions still reachable from the slot never.
//! `a_cleaner_without_the_cas_is_caught` breaks the CAS into a check and a
//! store and shows the model fails.
#![cfg(strata_model)]

use shuttle::sync::atomic::AtomicPtr;
use shuttle::sync::Arc;
use shuttle::thread;
use std::sync::atomic::{AtomicU64 as Ghost, Ordering::SeqCst};
use strata::model::{
    caught, cooperate, o2n_prune, pin, take_retired, Alloc, Break, Gauged, Passes, Version,
};

const N: usize = 5;

struct Chain {
    slot: AtomicPtr<Version>,
    /// v0 (oldest, the slot's head) -> v1 -> ... -> v4; v_i committed at
    /// timestamp i + 1.
    v: Vec<*mut Version>,
    passes: Passes,
    /// Ghost: times each version was retired by the vacuum or the unlink.
    retired: Vec<Ghost>,
}

// SAFETY: the versions are the engine's, shared as the engine shares them
// (every walker is pinned).
unsafe impl Send for Chain {}
unsafe impl Sync for Chain {}

fn chain() -> Chain {
    let mut v = vec![std::ptr::null_mut(); N];
    let mut next = std::ptr::null_mut();
    for i in (0..N).rev() {
        let x = Version::alloc(Alloc::PLAIN, 1, Vec::new(), next);
        // SAFETY: fresh and unshared. Committed at i + 1, unlocked.
        unsafe {
            (*x).begin.store(i as u64 + 1, SeqCst);
            (*x).txn_id.store(0, SeqCst);
        }
        v[i] = x;
        next = x;
    }
    Chain {
        slot: AtomicPtr::new(v[0]),
        v,
        passes: Passes::new(()),
        retired: (0..N).map(|_| Ghost::new(0)).collect(),
    }
}

impl Chain {
    fn index(&self, p: *mut Version) -> usize {
        self.v
            .iter()
            .position(|&x| x == p)
            .expect("a version of the chain")
    }
}

/// A worker about to walk the chain (`storage::visible`'s COOP path).
fn clean(c: &Chain, horizon: u64) {
    let _g = pin();
    let head = c.slot.load(SeqCst);
    if !head.is_null() {
        cooperate(&c.slot, head, horizon, &c.passes, Gauged::OFF);
    }
}

/// A vacuum pass that keeps v2 (the newest at or below horizon 3).
fn vacuum(c: &Chain) {
    let g = pin();
    let n = o2n_prune(&c.slot, c.v[2], Gauged::OFF, &g) as usize;
    // It retired the n versions just below v2.
    for r in &c.retired[2 - n..2] {
        r.fetch_add(1, SeqCst);
    }
}

/// `prune_row`'s unlink, then the limbo of the whole chain.
fn unlink(c: &Chain) {
    let mut v = c.slot.swap(std::ptr::null_mut(), SeqCst);
    while !v.is_null() {
        c.retired[c.index(v)].fetch_add(1, SeqCst);
        // SAFETY: the chain's versions are never freed while the model runs
        // (see `vacuum`: o2n_prune's go through the epoch).
        v = unsafe { (*v).next() };
    }
}

fn model(with_vacuum: bool, with_unlink: bool) {
    take_retired();
    let c = Arc::new(chain());
    let mut hs = Vec::new();
    for h in [5u64, 3] {
        let c = Arc::clone(&c);
        hs.push(thread::spawn(move || clean(&c, h)));
    }
    if with_vacuum {
        let c = Arc::clone(&c);
        hs.push(thread::spawn(move || vacuum(&c)));
    }
    if with_unlink {
        let c = Arc::clone(&c);
        hs.push(thread::spawn(move || unlink(&c)));
    }
    for h in hs {
        h.join().unwrap();
    }
    for p in take_retired() {
        c.retired[c.index(p as *mut Version)].fetch_add(1, SeqCst);
    }
    let mut reachable = [false; N];
    let mut v = c.slot.load(SeqCst);
    while !v.is_null() {
        reachable[c.index(v)] = true;
        // SAFETY: reachable, alive.
        v = unsafe { (*v).next() };
    }
    for (i, &reached) in reachable.iter().enumerate() {
        let r = c.retired[i].load(SeqCst);
        assert!(r <= 1, "version {i} retired {r} times");
        assert_eq!(
            r == 0,
            reached,
            "version {i}: retired {r}, reachable {reached}"
        );
    }
    if with_unlink {
        assert!(c.slot.load(SeqCst).is_null());
    }
    // The versions cooperate and the unlink retired, and the survivors, are
    // left to leak (a few hundred bytes per schedule): nothing here may
    // free a version twice when a broken variant is under test.
}

#[test]
fn cooperative_cleaners_and_a_vacuum_retire_each_version_once() {
    shuttle::check_random(|| model(true, false), 2000);
}

#[test]
fn cooperative_cleaning_races_an_unlink() {
    shuttle::check_random(|| model(true, true), 2000);
    shuttle::check_pct(|| model(true, true), 2000, 3);
}

#[test]
fn a_cleaner_without_the_cas_is_caught() {
    assert!(
        caught(Break::CoopCheckThenStore, || shuttle::check_random(
            || model(false, false),
            2000
        )),
        "the model must find a prefix retired twice"
    );
}
