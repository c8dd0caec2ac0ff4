//! Physical pointers (Peloton study §6): a secondary entry names one
//! version.
//!
//! ```text
//!  entry key = enc(index key) ++ enc(pk) ++ version address    value = tuple id
//!  entry ──> version (readers check that version's visibility alone)
//! ```
//!
//! Invariant: one entry per version still in the chain, naming it, and an
//! entry is removed before its version is retired (abort: `on_abort` runs
//! before the transaction's versions retire; replacing our own version:
//! `on_replace_own` re-keys its entries before it retires; GC:
//! `before_prune` and `on_unlink` remove them before `storage::prune` or
//! the unlink), so an entry never dangles. Every new version, of any
//! update of any column, inserts an entry into every secondary index; an
//! entry re-keyed to the version replacing our own is a new entry too,
//! and answers to the insert check (MVTO's predicate timestamp).
//!
//! This kind decides visibility itself for read-only snapshots: a
//! read-only scan accepts an entry's version only if it is the one the
//! chain walk would pick (created at or before the snapshot, not
//! overwritten at or before it), without walking the chain. A read-write
//! scan reads each row once through the protocol (for its read tracking;
//! under MV2PL and OCC the newest committed version, which may change
//! while the scan runs) and keeps the row under an entry of its index key,
//! whichever version that entry names.
//!
//! Needs append-only storage (`Options::validate`): an in-place master has
//! no per-version address.

use super::common::{self, EntryScheme, ScanReads, SecScan, SecWrite};
use super::secondary::SecondaryIndex;
use super::table::TableInner;
use super::{IndexTxn, ScanMode, Scanned, SecondaryIndexKind};
use crate::error::{Error, Result};
use crate::index::key::EncodedKey;
use crate::options::{IndexKind, IndexPointers};
use crate::storage::version::{Version, INF_TS, TID_MARK};
use crate::storage::visibility::{self, Mode};
use crate::storage::{self, PrunePlan};
use crate::tid::{Status, TidTable};
use crate::value::Value;
use crossbeam_epoch::Guard;
use std::collections::VecDeque;
use std::ops::{Bound, ControlFlow};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;

/// Bytes appended to a physical entry's key: the version's address.
const ADDR_BYTES: usize = 8;

/// The physical index kind.
pub(crate) struct Physical;

/// The version a physical entry points at.
fn version_of(key: &[u8]) -> *mut Version {
    let mut a = [0u8; ADDR_BYTES];
    a.copy_from_slice(&key[key.len() - ADDR_BYTES..]);
    u64::from_be_bytes(a) as usize as *mut Version
}

impl EntryScheme for Physical {
    // Our key names our version: another value is never a dead row's.
    const REPLACES_OTHER_VALUE: bool = false;
    #[inline]
    fn entry_key(mut ident: Vec<u8>, v: *mut Version) -> Box<[u8]> {
        ident.extend_from_slice(&(v as usize as u64).to_be_bytes());
        ident.into_boxed_slice()
    }
    #[inline]
    fn ident_of(key: &[u8]) -> &[u8] {
        &key[..key.len().saturating_sub(ADDR_BYTES)]
    }
    #[inline]
    fn value_for(tuple: u64) -> u64 {
        tuple
    }
    #[inline]
    fn resolve(_: &TableInner, _: &SecondaryIndex, _: &[u8], value: u64) -> Option<u64> {
        Some(value)
    }
}

impl SecondaryIndexKind for Physical {
    fn implements(kind: IndexKind, pointers: IndexPointers) -> bool {
        kind == IndexKind::Standard && pointers == IndexPointers::Physical
    }

    fn on_write<C: IndexTxn>(
        cx: &mut C,
        t: &TableInner,
        list: &[Arc<SecondaryIndex>],
        tuple: u64,
        _prev: *mut Version,
        v: *mut Version,
        new: &[Value],
    ) -> Result<()> {
        // Every version needs its own entries, whatever the write changed.
        common::add_entries::<Self, C>(cx, t, list, tuple, v, new, None)
    }

    fn on_replace_own<C: IndexTxn>(
        cx: &mut C,
        t: &TableInner,
        tuple: u64,
        own: *mut Version,
        v: *mut Version,
    ) -> Result<()> {
        // SAFETY: both are ours and alive (`own` is unlinked from the
        // chain but retired only after this returns).
        let nv = unsafe { &*v };
        let new: Option<Vec<Value>> =
            (!nv.is_tombstone()).then(|| storage::with_values(nv, |d| d.to_vec()));
        let mut moved = Vec::new();
        let writes = cx.sec_writes();
        writes.retain_mut(|w| {
            if w.version != own || !super::is_mine::<Self>(w) {
                return true;
            }
            let ident = Self::ident_of(&w.key);
            let keeps = new
                .as_ref()
                .is_some_and(|n| w.index.ident_matches(&t.schema, n, ident));
            if keeps {
                // The entry names its version: re-key it to `v`.
                moved.push((Arc::clone(&w.index), Self::entry_key(ident.to_vec(), v)));
            }
            w.index.tree.remove_if(&w.key, w.value);
            false
        });
        let mut checks = Vec::with_capacity(moved.len());
        for (index, key) in moved {
            let value = Self::value_for(tuple);
            if index.tree.insert(&key, value).is_ok() {
                checks.push(Arc::clone(&index));
                writes.push(SecWrite {
                    index,
                    key,
                    value,
                    version: v,
                    tuple,
                });
            }
        }
        // A new entry key, checked as `on_write`'s are (MVTO's index
        // predicate timestamp): between the old entry's removal and this
        // insert the row has no entry, and a younger scan passing then saw
        // nothing of a row its older writer would commit. Either the scan
        // raised the timestamp before this check, which refuses us, or it
        // runs after it and meets the new entry.
        for index in checks {
            cx.check_insert(&index.predicate_read_ts)
                .map_err(Error::Conflict)?;
        }
        Ok(())
    }

    fn on_abort(w: &SecWrite) {
        common::remove_added(w);
    }

    fn scan<C: IndexTxn>(
        cx: &mut C,
        t: &TableInner,
        idx: &Arc<SecondaryIndex>,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        mode: ScanMode<'_>,
        mut f: impl FnMut(&[Value]) -> ControlFlow<()>,
    ) -> Result<Scanned> {
        let mut reads = ScanReads::new(mode);
        let mut n = 0;
        let mut stopped_at = None;
        let guard = crossbeam_epoch::pin();
        for (k, tuple) in idx.entries(lo, hi, &guard) {
            let named = version_of(k);
            let ident = Self::ident_of(k);
            let v = if mode.rw {
                // Once per row, not per entry: a read-write read sees the
                // newest committed version under MV2PL and OCC, which can
                // change during the scan. Entry by entry, a scan could
                // pass the place where a writer's entry for its new
                // version then went in (entries sort by version address,
                // not by age), reach the old version's entry after that
                // writer committed, read the new version there, and lose
                // the row: the entry it read named neither. `reads` reads
                // a row once (its later entries get the same version), and
                // a row handed over is not handed again.
                if reads.was_handed(tuple) {
                    continue;
                }
                reads.read(cx, t, tuple)?
            } else {
                // SAFETY: the entry was in the index after we pinned, and a
                // version is retired only after its entries are removed.
                if !physically_visible(unsafe { &*named }, cx.snapshot_ts(), cx.tids()) {
                    continue;
                }
                named
            };
            // SAFETY: pinned; `v` is at or above our visible version.
            let Some(r) = (unsafe { v.as_ref() }) else {
                // Nothing visible (an insert after our snapshot): not seen,
                // so re-validation counts it as a phantom, as a primary scan
                // does.
                continue;
            };
            reads.saw(ident);
            if r.is_tombstone() {
                continue; // a deleted row
            }
            // The version read belongs under this entry if it is the one
            // named or (read-write: any entry of the row stands for all)
            // it has this entry's index key; else it is another key's.
            let flow = storage::with_values(r, |d| {
                let ours = v == named || (mode.rw && idx.ident_matches(&t.schema, d, ident));
                ours.then(|| f(d))
            });
            let Some(flow) = flow else { continue };
            reads.handed(tuple);
            n += 1;
            if flow.is_break() {
                stopped_at = Some(ident.to_vec());
                break;
            }
        }
        Ok(Scanned {
            rows: n,
            sec: reads.finish(t, idx, lo, hi, stopped_at.as_deref()),
            stopped_at,
        })
    }

    fn batch(
        idx: &SecondaryIndex,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        from_high: bool,
        max: usize,
        out: &mut VecDeque<Box<[u8]>>,
    ) -> Option<(Bound<EncodedKey>, Bound<EncodedKey>)> {
        common::batch::<Self>(idx, lo, hi, from_high, max, out)
    }

    fn validate(
        t: &TableInner,
        sec: &SecScan,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        own: &[SecWrite],
        accounted: impl FnOnce() -> Vec<u64>,
    ) -> bool {
        common::validate::<Self>(t, sec, lo, hi, own, accounted)
    }

    fn before_prune(
        t: &TableInner,
        list: &[Arc<SecondaryIndex>],
        tuple: u64,
        plan: PrunePlan<'_>,
        _guard: &Guard,
    ) {
        let mut retired = Vec::new();
        let cut = common::walk_retired(t, tuple, plan, &[], |_, v, d| {
            for idx in list {
                retired.push((idx, Self::entry_key(idx.ident(&t.schema, d), v)));
            }
        });
        if !cut {
            return;
        }
        for (idx, key) in retired {
            // A physical entry belongs to its version alone.
            idx.tree.remove(&key[..]);
        }
    }

    fn on_unlink(t: &TableInner, list: &[Arc<SecondaryIndex>], tuple: u64) {
        common::remove_row_entries::<Self>(t, list, tuple);
    }

    fn backfill(t: &TableInner, idx: &SecondaryIndex) {
        common::backfill::<Self>(t, idx);
    }

    fn check_unique(t: &TableInner, idx: &SecondaryIndex) -> Result<()> {
        common::check_unique::<Self>(t, idx)
    }

    fn stats(idx: &SecondaryIndex) -> (u64, u64) {
        idx.approx_bytes()
    }
}

/// Whether version `r` itself is the version a read-only snapshot at `ts`
/// sees: created at or before `ts` and not overwritten at or before `ts`.
fn physically_visible(r: &Version, ts: u64, tids: &TidTable) -> bool {
    if !visibility::is_visible(r, ts, 0, tids, Mode::Snapshot).unwrap_or(false) {
        return false;
    }
    let e = r.end.load(SeqCst);
    if e == INF_TS {
        return true;
    }
    if e & TID_MARK == 0 {
        return e > ts;
    }
    let stamped_after = || {
        let e = r.end.load(SeqCst);
        e & TID_MARK != 0 || e > ts
    };
    match tids.settled_status(e & !TID_MARK) {
        Status::Committed(c) => c > ts,
        Status::Committing(c) if c <= ts => match tids.wait_decided(e & !TID_MARK) {
            Status::Committed(_) => false,
            Status::Gone => stamped_after(),
            _ => true,
        },
        Status::Gone => stamped_after(),
        _ => true,
    }
}
