//! MVTO: multi-version timestamp ordering.
//!
//! Each transaction draws a unique timestamp at begin; the serial order is
//! timestamp order. A read of version `v` raises `v.read_ts` (the header's
//! first protocol word, [`read_ts`]); a writer may replace the head only if no younger transaction
//! read it and the head itself is not younger:
//!
//! ```text
//!  head: [begin 10 | read_ts 30]   T(ts 20) writes -> refused (30 > 20)
//!                                  T(ts 40) writes -> ok
//! ```
//!
//! Reader and writer race on two words (the reader raises `read_ts` then
//! checks the lock, the writer takes the lock then checks `read_ts`); with
//! sequentially consistent operations at least one of them sees the other.
//!
//! A read of a version whose write lock another running transaction holds
//! aborts the reader (Wu et al. §3.1: "The DBMS aborts a transaction that
//! attempts to read or update a version whose write lock is held by
//! another transaction"), whatever the holder's timestamp. That rule is
//! wider than timestamp order needs: a younger holder's version will be
//! stamped above the reader, which may read the locked version. Strata's
//! narrower rule, aborting only for an older holder, is
//! `MvtoLockedRead::AbortIfOlderHolder` (`Options::mvto_locked_read`); the
//! default is the study's:
//!
//! ```text
//!  R(ts 20) reads x1, locked by W     Abort         AbortIfOlderHolder
//!   W.ts 10 (its x2 may be R's)        abort R       abort R
//!   W.ts 30 (its x2 is above R)        abort R       read x1
//! ```
//!
//! (The reader raises `read_ts` before it looks at the lock, so a reader
//! refused here leaves its timestamp on the version; the study's Peloton
//! checks the lock and sets its `last_reader_cid` under one spin lock.)
//! Read-only transactions (`begin_read_only`) take none of this path: they
//! read a snapshot below every running writer's timestamp, as the study's
//! Peloton gives its READ ONLY transactions the last epoch in which every
//! transaction has finished.
//!
//! Phantoms: a read of an absent key creates a *ghost* for it (a tombstone
//! committed at timestamp 0, visible to everyone) and reads that, so an
//! older inserter meets the ghost's `read_ts` like any writer. A range scan
//! raises the table's `predicate_read_ts`, and an insert of a new key by an
//! older transaction is refused: coarse (table granularity) but it never
//! misses a phantom. (An earlier version used the table timestamp for absent
//! keys too, and starved inserts under contention.)

use super::Shared;
use super::Txn;
use super::{Cc, TxnCc};
use crate::error::{ConflictKind, Error, Result};
use crate::index::key::EncodedKey;
use crate::options::{MvtoLockedRead, Protocol};
use crate::storage;
use crate::storage::version::{Version, GC_TID};
use crate::storage::visibility::Mode;
use crate::sync::thread::spin_loop;
use crate::table::TableInner;
use crate::tid::{Status, TidTable};
use crate::value::Key;
use std::sync::atomic::{fence, AtomicU64, Ordering::SeqCst};

/// Multi-version timestamp ordering.
pub(crate) struct Mvto;

/// The version's read timestamp: the largest timestamp of a transaction
/// that read it (MVTO's use of the header's first protocol word).
#[inline]
pub(crate) fn read_ts(v: &Version) -> &crate::sync::atomic::AtomicU64 {
    &v.cc_words[0]
}

impl Cc for Mvto {
    const PROTOCOL: Protocol = Protocol::Mvto;
    const SNAPSHOT_READS: bool = false;
    // Phantoms are caught by ghosts and predicate timestamps instead.
    const VALIDATES_SCANS: bool = false;
    const SCAN_RECORDS: bool = false;
    const READ_ONLY_COMMIT_UNCHECKED: bool = true;
    const NEWER_THAN_SNAPSHOT: Option<ConflictKind> = Some(ConflictKind::TimestampOrder);
    type State = ();

    fn new_state(_tid: u64, _ts: u64, _read_only: bool) -> TxnCc {
        TxnCc::Mvto(())
    }

    fn begin_lower_bound(db: &Shared, read_only: bool) -> u64 {
        if read_only {
            // A read-only snapshot ends up below every running writer's
            // timestamp, possibly below the clock: register the last
            // published horizon, which is at or below it.
            db.horizon.load(SeqCst)
        } else {
            db.clock.load(SeqCst)
        }
    }

    fn begin_ts(db: &Shared, read_only: bool, lower: u64) -> u64 {
        if !read_only {
            // A unique timestamp: the serial order is timestamp order.
            return db.clock.fetch_add(1, SeqCst) + 1;
        }
        // Below every running writer's timestamp, so nothing we could see
        // is still being written.
        let g = db.clock.load(SeqCst);
        fence(SeqCst);
        g.min(db.tids.min_begin(true).saturating_sub(1)).max(lower)
    }

    fn read(tx: &mut impl Txn, t: &TableInner, tuple: u64) -> Result<*mut Version> {
        read(tx, t, tuple)
    }

    fn absent_read(tx: &mut impl Txn, t: &TableInner, key: &Key, ek: &EncodedKey) -> Option<u64> {
        // The key gets a ghost row whose read timestamp an older inserter
        // must respect: phantom protection per key, not per table.
        ghost(t, key, ek, tx.ts(), TidTable::slot_index(tx.tid()), tx.gc())
    }

    fn before_scan(tx: &impl Txn, predicate_ts: &AtomicU64) {
        predicate_read(predicate_ts, tx.ts());
    }

    fn check_insert(tx: &impl Txn, predicate_ts: &AtomicU64) -> Result<(), ConflictKind> {
        if insert_allowed(predicate_ts, tx.ts()) {
            Ok(())
        } else {
            Err(ConflictKind::TimestampOrder)
        }
    }

    fn check_write(tx: &impl Txn, _t: &TableInner, _tuple: u64, head: &Version) -> Result<()> {
        check_write(tx, head)
    }

    fn note_read(tx: &mut impl Txn, _t: &TableInner, _tuple: u64, v: *mut Version) -> Result<()> {
        // We hold the write lock, so no writer is between us and `v`.
        // SAFETY: the caller is pinned; `v` is the locked head.
        read_ts(unsafe { &*v }).fetch_max(tx.ts(), SeqCst);
        Ok(())
    }

    fn commit_ts(tx: &impl Txn) -> u64 {
        // Serialised at its begin timestamp; no PRECOMMIT window either:
        // snapshots stay below every running writer's timestamp.
        tx.ts()
    }

    fn bound_horizon(db: &Shared, h: u64) -> u64 {
        // A writer with timestamp t may still commit versions at t, so
        // snapshots (and the horizon) must stay below it.
        h.min(db.tids.min_begin(true).saturating_sub(1))
    }

    fn may_remove(tomb: &Version, horizon: u64) -> bool {
        // Readers left their timestamp on the tombstone: it guards the key
        // against older inserters until they are all gone.
        read_ts(tomb).load(SeqCst) <= horizon
    }
}

pub fn read(tx: &mut impl Txn, t: &TableInner, tuple: u64) -> Result<*mut Version> {
    let tids = &tx.shared().tids;
    let v = storage::visible(t, tuple, tx.ts(), tx.tid(), tids, Mode::TimestampOrder)?;
    if v.is_null() || tx.is_own(v) {
        return Ok(v);
    }
    // SAFETY: the caller is pinned and `v` is visible to our registered ts.
    let r = unsafe { &*v };
    // read_ts first, then the lock: against the writer's lock, then
    // read_ts (`check_write`), one of us sees the other.
    let early = crate::sync::broken(crate::sync::Break::LockLoadBeforeReadTs)
        .then(|| r.txn_id.load(SeqCst));
    read_ts(r).fetch_max(tx.ts(), SeqCst);
    let locker = early.unwrap_or_else(|| r.txn_id.load(SeqCst));
    if locker == GC_TID {
        return after_collector(tx, t, tuple, v);
    }
    if locker != 0 && locker != tx.tid() {
        let is_running = |s| {
            matches!(
                s,
                Status::Active | Status::Precommit | Status::Committing(_)
            )
        };
        let mut still_running = false;
        if is_running(tids.status(locker)) {
            match tx.shared().mvto_locked_read {
                // The study's rule (§3.1): a version whose write lock
                // another running transaction holds is not read.
                MvtoLockedRead::Abort => return Err(Error::Conflict(ConflictKind::TimestampOrder)),
                // Only an older writer matters: it may have checked
                // read_ts before we raised it, and its version would be
                // the one we must read.
                MvtoLockedRead::AbortIfOlderHolder => {
                    let wts = tids.registered_begin(locker);
                    still_running = is_running(tids.status(locker));
                    if still_running && wts < tx.ts() {
                        return Err(Error::Conflict(ConflictKind::TimestampOrder));
                    }
                }
            }
        }
        if !still_running
            && storage::visible(t, tuple, tx.ts(), tx.tid(), tids, Mode::TimestampOrder)? != v
        {
            // It finished meanwhile: if it committed below us, we read too old.
            return Err(Error::Conflict(ConflictKind::TimestampOrder));
        }
    }
    Ok(v)
}

/// `read`'s answer when the collector held the version `v` just read (GC's
/// lock value, `GC_TID`): it is unlinking a deleted row, cleaning a row's
/// index entries, or a ghost's creator is still publishing it. The
/// collector takes its lock before it looks at `v`'s read timestamp
/// (`gc::prune_row`), so if it missed ours it may be unlinking the row we
/// just read as absent, and an older writer could then insert the key as a
/// new row that no timestamp guards: wait until it lets go or the row is
/// gone, and refuse the read in the second case. (It holds the lock for a
/// few index operations; an unlinked tombstone stays locked for good.)
fn after_collector(
    tx: &impl Txn,
    t: &TableInner,
    tuple: u64,
    v: *mut Version,
) -> Result<*mut Version> {
    let tids = &tx.shared().tids;
    // SAFETY: pinned by the caller.
    let r = unsafe { &*v };
    loop {
        if storage::visible(t, tuple, tx.ts(), tx.tid(), tids, Mode::TimestampOrder)? != v {
            return Err(Error::Conflict(ConflictKind::TimestampOrder));
        }
        if r.txn_id.load(SeqCst) != GC_TID {
            return Ok(v);
        }
        spin_loop();
    }
}

/// The write rule, for the locked head `h`.
pub fn check_write(tx: &impl Txn, h: &Version) -> Result<()> {
    if h.begin.load(SeqCst) > tx.ts() || read_ts(h).load(SeqCst) > tx.ts() {
        return Err(Error::Conflict(ConflictKind::TimestampOrder));
    }
    Ok(())
}

/// Publishes a range scan at `ts` on a table's or index's predicate
/// timestamp.
fn predicate_read(predicate_ts: &AtomicU64, ts: u64) {
    predicate_ts.fetch_max(ts, SeqCst);
    // Pairs with the fence in `insert_allowed`: either the inserter sees
    // our timestamp or our scan sees its key.
    fence(SeqCst);
}

/// Whether a new key (already in the index) may be inserted at `ts`.
fn insert_allowed(predicate_ts: &AtomicU64, ts: u64) -> bool {
    fence(SeqCst);
    predicate_ts.load(SeqCst) <= ts
}

/// Makes sure the absent `key` has a ghost row and returns its tuple id
/// (the row found instead, if another transaction inserted meanwhile).
/// A new ghost is handed to the collector (as a write committed at `ts`)
/// while still locked, so no writer can queue an entry for the row before
/// it (see `gc::Garbage`). `slot`: the index of our TID slot.
pub fn ghost(
    t: &TableInner,
    key: &Key,
    ek: &EncodedKey,
    ts: u64,
    slot: usize,
    gc: &crate::gc::Gc,
) -> Option<u64> {
    let Some(tuple) = t.rows.allocate() else {
        return t.index.get(ek);
    };
    // Committed at timestamp 0 (visible to all), locked by GC's id for now.
    let v = Version::alloc_tombstone(t.alloc(), 0, key.0.clone(), std::ptr::null_mut());
    // SAFETY: `v` is not shared yet.
    unsafe {
        (*v).begin.store(0, SeqCst);
        (*v).txn_id.store(crate::storage::version::GC_TID, SeqCst);
        // Our own read's timestamp, set before anyone can see the ghost:
        // tuple-level GC (which has no entry to wait on) unlinks a ghost
        // only once the horizon passes its read timestamp, so it cannot
        // vanish before we finish.
        read_ts(&*v).store(ts, SeqCst);
    }
    t.rows.slot(tuple).store(v, SeqCst);
    match t.index.insert(ek, tuple, v as *const u8, t.gauged) {
        Ok(()) => {
            gc.on_commit(
                ts,
                slot,
                std::iter::once(crate::gc::Committed {
                    table: t,
                    tuple,
                    version: v,
                }),
            );
            // SAFETY: published, alive (GC waits for our timestamp).
            unsafe { (*v).txn_id.store(0, SeqCst) };
            Some(tuple)
        }
        Err(present) => {
            t.rows.slot(tuple).store(std::ptr::null_mut(), SeqCst);
            // SAFETY: the index never held `tuple`, so `v` was never shared.
            // (Taken apart rather than freed: the gauge gets back its block
            // and the key's payloads, which its allocation counted.)
            drop(unsafe { Version::into_values(v, t.gauged) });
            t.rows.release(tuple, &crossbeam_epoch::pin());
            // The row the index's ordered tree holds, not another lookup:
            // point lookups go to the hash side, which an insert fills
            // after the tree and a removal empties before it, so a lookup
            // here could find nothing and the key would read as absent with
            // no ghost (an older inserter then went unnoticed; the third
            // way in of `tests/storage.rs`'s MVTO runs; `tests/model.rs`,
            // `a_ghost_looking_the_key_up_again_is_caught`). A row on its way
            // out (its slot already empty) makes the caller refuse.
            if crate::sync::broken(crate::sync::Break::GhostLooksUpAgain) {
                return t.index.get(ek);
            }
            Some(present)
        }
    }
}
