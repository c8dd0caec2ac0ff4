//! Point reads of chosen columns (projections), and a point read's log
//! stamp.
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
use crate::log::UNKNOWN_READS;
use crate::storage;
use crate::storage::version::{Version, TID_MARK};
use crate::table::Table;
use crate::value::{ColumnRef, Key, Row, Value};
use std::sync::atomic::Ordering::SeqCst;

/// Column positions of a projection (32 inline, as the values: see
/// `storage::in_place::PROJECTED`).
pub(super) type Positions = smallvec::SmallVec<[usize; 32]>;

/// The positions `cols` name in `schema` (an unknown name, or a position
/// past the row, is `Error::Schema`).
pub(super) fn positions<C: ColumnRef>(
    schema: &crate::value::Schema,
    cols: &[C],
) -> Result<Positions> {
    // (Pushed one by one: a collect through `Result` moved and copied
    // the buffer, a fifth of a one-column read.)
    let mut at = Positions::new();
    for c in cols {
        at.push(c.resolve(schema)?);
    }
    Ok(at)
}

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
        let at = positions(&t.inner.schema, cols)?;
        with_cc!(self.db.protocol, P => self.read_version_as::<P, R>(t, key, |r| {
            storage::with_columns(r, &at, f)
        }))
    }

    /// Folds the version a point read returned into `read_stamp`: its
    /// commit stamp, or `UNKNOWN_READS` for a version still being stamped
    /// (its writer is committing right now) or none at all (an absent key:
    /// it may be absent because of a delete that GC has already unlinked,
    /// before that delete's fsync).
    /// (Out of line: the in-memory read path keeps only the flag's test.)
    #[inline(never)]
    pub(super) fn note_read_stamp(&mut self, v: *mut Version) {
        // SAFETY: pinned by the caller, and `v` is the version our read
        // returned, alive while pinned.
        self.read_stamp = match unsafe { v.as_ref() } {
            Some(r) => {
                let begin = r.begin.load(SeqCst);
                if begin & TID_MARK != 0 {
                    UNKNOWN_READS
                } else {
                    self.read_stamp.max(begin)
                }
            }
            None => UNKNOWN_READS,
        };
    }
}
