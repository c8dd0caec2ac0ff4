//! `Transaction::update_with`: a read and an update of one row from one
//! index lookup.
//!
//! A read-modify-write (TPC-C's stock and district rows, a counter) is a
//! read, then an update that finds the row again: the key encoded twice,
//! the index searched twice. Silo's and ERMIA's TPC-C search once and keep
//! the record (ERMIA §3.3: the OID the read found is the one the write
//! installs at). `update_with` does the same: the read's lookup hands its
//! primary entry to the write.
//!
//! ```text
//!  read_with(key, f) + update(key, ch)     update_with(key, |row| (ch, r))
//!   encode ─ lookup ─ read ─ f              encode ─ lookup ─ read ─ f
//!   encode ─ lookup ─ lock ─ install                          └ lock ─ install
//! ```
//!
//! Invariant: the protocol sees what it sees for `read_with` then `update`
//! of the same key with nothing in between: the read is recorded as a
//! read (`P::read`, the read stamp), the write takes the eager or buffered
//! path `update` takes, from the same primary entry (or, for a row the
//! read reached without one, MVTO's ghost, the absent-key path `update`
//! takes).

use super::Transaction;
use crate::cc::{with_cc, Cc};
use crate::error::{Error, Result};
use crate::log::UNKNOWN_READS;
use crate::storage::{self, NewRow};
use crate::table::{Table, TableInner};
use crate::value::{ColumnRef, Key, Value};
use crossbeam_epoch as epoch;

/// An update's changes as column positions, each value checked against
/// its column; a primary-key column is `Error::Schema` (its rows move by
/// delete and insert). (Four inline: an update rarely sets more, and a
/// bigger SmallVec was moved with a memcpy call on every update. Always
/// inline: as a call, its result's move and frame cost TPC-C about 200
/// instructions a transaction.)
#[inline(always)]
pub(super) fn checked_changes<'v, C: ColumnRef>(
    ti: &TableInner,
    changes: &'v [(C, Value)],
) -> Result<smallvec::SmallVec<[(usize, &'v Value); 4]>> {
    let mut cols = smallvec::SmallVec::new();
    for (c, v) in changes {
        let i = c.resolve(&ti.schema)?;
        ti.schema.check_value(&ti.schema.columns[i], v)?;
        if ti.schema.primary_key.contains(&i) {
            return Err(Error::Schema(format!(
                "column {}.{} is part of the primary key and cannot be updated; delete and re-insert the row",
                ti.schema.name, ti.schema.columns[i].name
            )));
        }
        cols.push((i, v));
    }
    Ok(cols)
}

impl Transaction {
    /// Reads the row with primary key `key` and sets the columns `f`
    /// chooses from it, with one index lookup: what
    /// [`Transaction::read_with`] then [`Transaction::update`] do, for
    /// the protocol as for the result. `f` returns the changes (an array,
    /// a `Vec`: anything that is a slice of `(column, value)`) and a value
    /// of its own, which `update_with` returns. No changes write nothing:
    /// the call was a read (the row is neither locked nor versioned).
    ///
    /// `Error::NotFound` if the row does not exist for this transaction
    /// (`f` is not called); the errors of `update` for the changes (an
    /// unknown column, a wrong type, a primary-key column), which leave
    /// the row as it was and the read recorded.
    ///
    /// ```
    /// # use strata::{Database, Options, Schema, Type, Value, row, key};
    /// let db = Database::open(Options::default())?;
    /// let t = db.create_table(
    ///     Schema::new("stock").column("item", Type::Int).column("qty", Type::Int).primary_key(&["item"]),
    /// )?;
    /// db.run(|x| x.insert(&t, row![7i64, 10i64]))?;
    /// let left = db.run(|x| {
    ///     x.update_with(&t, &key![7i64], |r| {
    ///         let qty = r[1].as_int().unwrap() - 3;
    ///         ([("qty", Value::Int(qty))], qty)
    ///     })
    /// })?;
    /// assert_eq!(left, 7);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn update_with<C: ColumnRef, U: AsRef<[(C, Value)]>, R>(
        &mut self,
        t: &Table,
        key: &Key,
        f: impl FnOnce(&[Value]) -> (U, R),
    ) -> Result<R> {
        with_cc!(self.db.protocol, P => self.update_with_as::<P, C, U, R>(t, key, f))
    }

    fn update_with_as<P: Cc, C: ColumnRef, U: AsRef<[(C, Value)]>, R>(
        &mut self,
        t: &Table,
        key: &Key,
        f: impl FnOnce(&[Value]) -> (U, R),
    ) -> Result<R> {
        self.check_growable(t)?;
        let ti: &TableInner = &t.inner;
        ti.schema.check_key(key)?;
        let ek = ti.encode(key);
        let guard = epoch::pin();
        let (v, found) = self.point_read::<P>(ti, key, &ek, &guard)?;
        // SAFETY: pinned, and `v` is at or above our visible version, so
        // it is alive (as in `read_version_as`).
        let Some(r) = unsafe { v.as_ref() }.filter(|r| !r.is_tombstone()) else {
            return Err(Error::NotFound {
                table: ti.schema.name.clone(),
                key: key.to_string(),
            });
        };
        let (changes, out) = storage::with_values(r, f);
        let cols = checked_changes(ti, changes.as_ref())?;
        if cols.is_empty() {
            return Ok(out);
        }
        // As `modify`: the write path may answer from what it reads.
        self.read_stamp = UNKNOWN_READS;
        self.modify_found::<P>(ti, key, &ek, found, NewRow::Update(&cols), &guard)?;
        Ok(out)
    }
}
