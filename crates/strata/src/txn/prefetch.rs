//! `Transaction::prefetch`: the staged walk over the rows a transaction
//! is about to touch (index entries, then indirection slots, then chain
//! heads), so that their cache misses overlap (`crate::prefetch` holds the
//! instructions; this is the transaction's side).

use super::*;
use crate::index::hash::Started;

impl Transaction {
    /// A hint that this transaction will soon read or write the rows with
    /// these primary keys: walks them stage by stage (index entries, then
    /// indirection slots, then chain heads) so that their cache misses
    /// overlap instead of following one another (see the `prefetch` module).
    /// Changes nothing and records no read: the later `get`/`update` does
    /// that. Keys whose index hashes them into an integer table (integer
    /// keys, and keys of a few small non-negative integers: see
    /// `index::key::packed_ints`) overlap all three stages; for other keys
    /// the index stage is a plain lookup (nothing to start early) and only
    /// the slot and head stages overlap.
    pub fn prefetch(&self, t: &Table, keys: &[Key]) -> Result<()> {
        self.check_open(t)?;
        let ti: &TableInner = &t.inner;
        for k in keys {
            ti.schema.check_key(k)?;
        }
        let row_bytes = ti.row_prefetch_bytes;
        let guard = epoch::pin();
        const BATCH: usize = 16;
        for chunk in keys.chunks(BATCH) {
            // (A SmallVec, not an array of options: its drop visits only
            // the keys it holds, ~36 instructions a 10-read transaction.)
            // Each key's probe is hashed once: the first stage keeps where
            // it starts for the second (a key that does not pack is kept
            // instead, for a plain lookup).
            let mut stages: smallvec::SmallVec<[Stage<'_>; BATCH]> = smallvec::SmallVec::new();
            for k in chunk {
                let e = ti.encode(k);
                stages.push(match ti.index.start(&e, &guard) {
                    Some(s) => Stage::Started(s),
                    None => Stage::Unpacked(e),
                });
            }
            // The hinted heads load alongside the slots; only rows whose
            // hint is stale need the third stage.
            let mut tuples = [(u64::MAX, ptr::null::<u8>()); BATCH];
            for (stage, t) in stages.iter().zip(tuples.iter_mut()) {
                let found = match stage {
                    Stage::Started(s) => s.get_hinted(),
                    Stage::Unpacked(ek) => ti.index.get_hinted(ek, &guard),
                };
                if let Some((id, hint)) = found {
                    crate::prefetch::line(ti.rows.slot(id));
                    crate::prefetch::range(hint, row_bytes);
                    *t = (id, hint);
                }
            }
            for &(id, hint) in tuples.iter().filter(|t| t.0 != u64::MAX) {
                let head = ti.rows.head(id) as *const u8;
                if crate::index::hash::hint_is_stale(hint, head) {
                    crate::prefetch::range(head, row_bytes);
                }
            }
            // The in-place schemes keep a row's values in its master, a
            // block of its own that only the head names: a fourth
            // dependent miss per read, which a read alone takes after the
            // head's. Here the heads are on their way, so the masters'
            // misses overlap too (Wu Fig. 13a: delta's reads spent 43% of
            // their time on the master's first load without it).
            if !ti.scheme.is_append_only() {
                for &(id, _) in tuples.iter().filter(|t| t.0 != u64::MAX) {
                    let m = crate::storage::in_place::master_of(ti.rows.head(id));
                    if !m.is_null() {
                        crate::prefetch::range(m as *const u8, ti.master_prefetch_bytes);
                    }
                }
            }
        }
        Ok(())
    }
}

/// A key after the walk's first stage.
enum Stage<'g> {
    /// An integer key's probe, its first line on its way.
    Started(Started<'g>),
    /// A key that does not pack: looked up whole in the second stage.
    Unpacked(EncodedKey),
}
