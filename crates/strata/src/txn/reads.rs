//! Point reads of chosen columns (projections), and the prefetch hint.
//!
//! A read that wants some attributes of a row names them, and storage
//! decodes only those (Wu et al. §7.3, Fig. 15a: "the number of attributes
//! accessed per read operation"): under time-travel and delta storage a
//! read reconstructs its version from the master's cells and the records
//! down to it, and `get` decodes every cell; `get_columns` decodes the
//! chosen ones, and looks at only those attributes of the records on the
//! way (`storage::with_columns`). Append-only versions are read in place
//! either way; a projection copies the chosen values only.
//!
//! ```text
//!  get_columns(t, key, ["f7"]) ─> resolve names/positions (Error::Schema)
//!    ─> the protocol's read (as get) ─> storage::with_columns(v, [8])
//!         append-only: v.data()[8]          in-place: cell 8 (+ records' 8)
//! ```

use super::Transaction;
use crate::cc::with_cc;
use crate::error::Result;
use crate::index::key::EncodedKey;
use crate::storage;
use crate::table::{Table, TableInner};
use crate::value::{ColumnRef, Key, Row, Value};
use crossbeam_epoch as epoch;
use std::ptr;

/// Column positions of a projection (32 inline, as the values: see
/// `storage::in_place::PROJECTED`).
type Positions = smallvec::SmallVec<[usize; 32]>;

impl Transaction {
    /// Reads columns `cols` (names or positions, in the order given) of
    /// the row with primary key `key`, if it exists for this transaction:
    /// what [`Transaction::get`] reads, projected. Under every storage
    /// scheme only the chosen cells are decoded. An unknown column name or
    /// a position past the row is `Error::Schema`, and leaves the
    /// transaction open and unchanged.
    pub fn get_columns<C: ColumnRef>(
        &mut self,
        t: &Table,
        key: &Key,
        cols: &[C],
    ) -> Result<Option<Row>> {
        self.read_columns_with(t, key, cols, <[Value]>::to_vec)
    }

    /// [`Transaction::get_columns`], passing the chosen values to `f`
    /// (in the order of `cols`) instead of returning them.
    pub fn read_columns_with<C: ColumnRef, R>(
        &mut self,
        t: &Table,
        key: &Key,
        cols: &[C],
        f: impl FnOnce(&[Value]) -> R,
    ) -> Result<Option<R>> {
        self.check_open(t)?;
        let schema = &t.inner.schema;
        let at = cols
            .iter()
            .map(|c| c.resolve(schema))
            .collect::<Result<Positions>>()?;
        with_cc!(self.db.protocol, P => self.read_version_as::<P, R>(t, key, |r| {
            storage::with_columns(r, &at, f)
        }))
    }

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
            let mut eks: [Option<EncodedKey>; BATCH] = Default::default();
            for (k, ek) in chunk.iter().zip(eks.iter_mut()) {
                let e = ti.encode(k);
                ti.index.prefetch(&e, &guard);
                *ek = Some(e);
            }
            // The hinted heads load alongside the slots; only rows whose
            // hint is stale need the third stage.
            let mut tuples = [(u64::MAX, ptr::null::<u8>()); BATCH];
            for (ek, t) in eks.iter().zip(tuples.iter_mut()) {
                if let Some((id, hint)) = ek.as_ref().and_then(|e| ti.index.get_hinted(e, &guard)) {
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
        }
        Ok(())
    }
}
