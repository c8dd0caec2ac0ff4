//! MVTO: multi-version timestamp ordering.
//!
//! Each transaction draws a unique timestamp at begin; the serial order is
//! timestamp order. A read of version `v` raises `v.read_ts` (header word
//! `word_a`); a writer may replace the head only if no younger transaction
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
//! Phantoms: a read of an absent key creates a *ghost* for it (a tombstone
//! committed at timestamp 0, visible to everyone) and reads that, so an
//! older inserter meets the ghost's `read_ts` like any writer. A range scan
//! raises the table's `predicate_read_ts`, and an insert of a new key by an
//! older transaction is refused: coarse (table granularity) but it never
//! misses a phantom. (An earlier version used the table timestamp for absent
//! keys too, and starved inserts under contention.)

use crate::error::{ConflictKind, Error, Result};
use crate::index::key::EncodedKey;
use crate::storage;
use crate::storage::version::Version;
use crate::storage::visibility::Mode;
use crate::table::TableInner;
use crate::txn::tid::Status;
use crate::txn::Transaction;
use crate::value::Key;
use std::sync::atomic::{fence, Ordering::SeqCst};

pub fn read(tx: &mut Transaction, t: &TableInner, tuple: u64) -> Result<*mut Version> {
    let tids = &tx.db.tids;
    let v = storage::visible(t, tuple, tx.ts, tx.tid, tids, Mode::TimestampOrder)?;
    if v.is_null() || tx.is_own(v) {
        return Ok(v);
    }
    // SAFETY: the caller is pinned and `v` is visible to our registered ts.
    let r = unsafe { &*v };
    r.word_a.fetch_max(tx.ts, SeqCst);
    let locker = r.txn_id.load(SeqCst);
    if locker != 0 && locker != tx.tid {
        // An older writer may have checked read_ts before we raised it; its
        // version would be the one we must read.
        let is_running = |s| {
            matches!(
                s,
                Status::Active | Status::Precommit | Status::Committing(_)
            )
        };
        // (GC's lock value maps to no slot: its status is Gone.)
        let mut still_running = false;
        if is_running(tids.status(locker)) {
            let wts = tids.slot(locker).begin.load(SeqCst);
            still_running = is_running(tids.status(locker));
            if still_running && wts < tx.ts {
                return Err(Error::Conflict(ConflictKind::TimestampOrder));
            }
        }
        if !still_running
            && storage::visible(t, tuple, tx.ts, tx.tid, tids, Mode::TimestampOrder)? != v
        {
            // It finished meanwhile: if it committed below us, we read too old.
            return Err(Error::Conflict(ConflictKind::TimestampOrder));
        }
    }
    Ok(v)
}

/// The write rule, for the locked head `h`.
pub fn check_write(tx: &Transaction, h: &Version) -> Result<()> {
    if h.begin.load(SeqCst) > tx.ts || h.word_a.load(SeqCst) > tx.ts {
        return Err(Error::Conflict(ConflictKind::TimestampOrder));
    }
    Ok(())
}

/// Publishes a predicate read (range scan or absent key) at `ts`.
pub fn predicate_read(t: &TableInner, ts: u64) {
    t.predicate_read_ts.fetch_max(ts, SeqCst);
    fence(SeqCst);
}

/// Whether a new key (already in the index) may be inserted at `ts`.
pub fn insert_allowed(t: &TableInner, ts: u64) -> bool {
    fence(SeqCst);
    t.predicate_read_ts.load(SeqCst) <= ts
}

/// Makes sure the absent `key` has a ghost row and returns its tuple id
/// (the row found instead, if another transaction inserted meanwhile).
/// A new ghost is handed to GC (`gc_entry`) while still locked, so no
/// writer can queue an entry for the row before it (see `gc::Garbage`).
pub fn ghost(
    t: &TableInner,
    key: &Key,
    ek: &EncodedKey,
    ts: u64,
    gc: Option<&crate::gc::GcQueue>,
) -> Option<u64> {
    let Some(tuple) = t.rows.allocate() else {
        return t.index.get(ek);
    };
    // Committed at timestamp 0 (visible to all), locked by GC's id for now.
    let v = Version::alloc_tombstone(t.spaces.as_deref(), 0, key.0.clone(), std::ptr::null_mut());
    // SAFETY: `v` is not shared yet.
    unsafe {
        (*v).begin.store(0, SeqCst);
        (*v).txn_id.store(crate::gc::GC_TID, SeqCst);
        // Our own read's timestamp, set before anyone can see the ghost:
        // tuple-level GC (which has no entry to wait on) unlinks a ghost
        // only once the horizon passes its read timestamp, so it cannot
        // vanish before we finish.
        (*v).word_a.store(ts, SeqCst);
    }
    t.rows.slot(tuple).store(v, SeqCst);
    match t.index.insert(ek, tuple, v as *const u8) {
        Ok(()) => {
            match gc {
                Some(gc) => gc.push(std::iter::once(crate::gc::Garbage {
                    cts: ts,
                    table: t.id,
                    tuple,
                    version: v,
                })),
                None => t.dirty.mark(tuple),
            }
            // SAFETY: published, alive (GC waits for our timestamp).
            unsafe { (*v).txn_id.store(0, SeqCst) };
            Some(tuple)
        }
        Err(_) => {
            t.rows.slot(tuple).store(std::ptr::null_mut(), SeqCst);
            // SAFETY: the index never held `tuple`, so `v` was never shared.
            unsafe { Version::free(v) };
            t.rows.release(tuple, &crossbeam_epoch::pin());
            t.index.get(ek)
        }
    }
}
