//! Range scans of the primary index: the rows whose key lies in a range,
//! in key order, as a vector, through a callback, up to a limit, or while
//! a callback says go on. A scan reads each row through the protocol (its
//! read tracking) and leaves a predicate read (`ScanEntry`) for the
//! protocols that re-validate ranges at commit; a scan that stops early
//! protects only the keys up to where it stopped.

use super::*;

impl Transaction {
    /// Rows whose primary key lies in `range`, in key order. Bounds may be
    /// a prefix of a multi-column key: `Included(p)` as a lower bound starts
    /// at the first key beginning with `p`, as an upper bound ends after the
    /// last one.
    pub fn scan(&mut self, t: &Table, range: impl RangeBounds<Key>) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        self.scan_with(t, range, |r| out.push(r.to_vec()))?;
        Ok(out)
    }

    /// Calls `f` on every row whose primary key lies in `range`, in key order,
    /// without copying rows. Returns the number of rows.
    pub fn scan_with(
        &mut self,
        t: &Table,
        range: impl RangeBounds<Key>,
        mut f: impl FnMut(&[Value]),
    ) -> Result<usize> {
        self.scan_while(t, range, |r| {
            f(r);
            ControlFlow::Continue(())
        })
    }

    /// [`Transaction::scan_with`], passing `f` only columns `cols` of each
    /// row (names or positions, in the order given): under every storage
    /// scheme only those cells are decoded, as [`Transaction::get_columns`]
    /// reads a row. A scan that needs one attribute of wide rows (TPC-C's
    /// StockScan) then costs time-travel and delta what it costs
    /// append-only, which reads in place. An unknown column is
    /// `Error::Schema`, and reads nothing.
    ///
    /// ```
    /// # use strata::{Database, Options, Schema, Type, row};
    /// # let db = Database::open(Options::default())?;
    /// # let t = db.create_table(Schema::new("stock").column("id", Type::Int)
    /// #     .column("qty", Type::Int).column("data", Type::Text).primary_key(&["id"]))?;
    /// # db.run(|x| { x.insert(&t, row![1, 9, "a"])?; x.insert(&t, row![2, 30, "b"]) })?;
    /// let mut tx = db.begin()?;
    /// let mut low = 0;
    /// tx.scan_columns_with(&t, .., &["qty"], |r| low += i32::from(r[0].as_int() < Some(15)))?;
    /// assert_eq!(low, 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn scan_columns_with<C: ColumnRef>(
        &mut self,
        t: &Table,
        range: impl RangeBounds<Key>,
        cols: &[C],
        mut f: impl FnMut(&[Value]),
    ) -> Result<usize> {
        self.check_open(t)?;
        let at = super::reads::positions(&t.inner.schema, cols)?;
        self.read_stamp = UNKNOWN_READS;
        let visit = |r: &[Value]| {
            f(r);
            ControlFlow::Continue(())
        };
        with_cc!(self.db.protocol, P => self.scan_while_as::<P>(t, range, Some(&at), visit))
    }

    /// The first `limit` rows whose primary key lies in `range`, in key
    /// order (SQL's `LIMIT`): the scan reads no row past them, and its
    /// predicate covers only the keys up to the last row returned (see
    /// [`Transaction::scan_while`]).
    pub fn scan_limit(
        &mut self,
        t: &Table,
        range: impl RangeBounds<Key>,
        limit: usize,
    ) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        if limit == 0 {
            // Checks the table and the bounds, reads nothing.
            self.check_open(t)?;
            primary_bounds(t, &range)?;
            return Ok(out);
        }
        self.scan_while(t, range, up_to(&mut out, limit))?;
        Ok(out)
    }

    /// Calls `f` on the rows whose primary key lies in `range`, in key
    /// order, without copying them, until `f` returns `Break` (that row is
    /// the last one read). Returns the number of rows `f` was called on.
    ///
    /// A scan that stops early has read only the keys from the range's
    /// start to its last row, and that shorter range is what the
    /// serializable protocols protect against phantoms: a row inserted
    /// past the stop is no conflict, one inserted before it is.
    ///
    /// ```text
    ///  scan_limit([0, 100), 2)     rows 10, 20 | 30, 40 ...
    ///  predicate read:             [0, 20]     (an insert of 50: no phantom;
    ///                                           of 15: a phantom)
    /// ```
    pub fn scan_while(
        &mut self,
        t: &Table,
        range: impl RangeBounds<Key>,
        f: impl FnMut(&[Value]) -> ControlFlow<()>,
    ) -> Result<usize> {
        // (A scan's rows are not named one by one: see `read_stamp`.)
        self.read_stamp = UNKNOWN_READS;
        with_cc!(self.db.protocol, P => self.scan_while_as::<P>(t, range, None, f))
    }

    /// The scan: `f` sees each visible row in key order (its columns `at`,
    /// or all of them), and says whether to go on.
    fn scan_while_as<P: Cc>(
        &mut self,
        t: &Table,
        range: impl RangeBounds<Key>,
        at: Option<&[usize]>,
        mut f: impl FnMut(&[Value]) -> ControlFlow<()>,
    ) -> Result<usize> {
        self.check_open(t)?;
        let ti: &TableInner = &t.inner;
        let (lo, mut hi) = primary_bounds(t, &range)?;
        // Our buffered writes of the table go on their rows first
        // (`deferred`): the scan must see them.
        self.settle_table::<P>(ti)?;
        let guard = epoch::pin();
        let phantom_checked = !self.read_only && P::VALIDATES_SCANS;
        if !self.read_only {
            P::before_scan(self, &ti.predicate_read_ts);
        }
        let mut seen = Vec::new();
        let mut n = 0;
        let mut failed = None;
        // The walk is the index's; rows read and the caller's `f` are timed
        // inside it (and left out of its time).
        timed!(
            self,
            Index,
            ti.index.range_while(&lo, &hi.clone(), &guard, |tuple| {
                let v = match self.read_tuple::<P>(ti, tuple) {
                    Ok(v) => v,
                    Err(e) => {
                        failed = Some(e);
                        return ControlFlow::Break(());
                    }
                };
                if v.is_null() {
                    return ControlFlow::Continue(());
                }
                if phantom_checked {
                    seen.push(tuple);
                }
                // SAFETY: pinned; see read_with.
                let r = unsafe { &*v };
                if r.is_tombstone() {
                    return ControlFlow::Continue(());
                }
                n += 1;
                let flow = match at {
                    None => storage::with_values(r, |row| timed!(self, Caller, f(row))),
                    Some(at) => storage::with_columns(r, at, |vals| timed!(self, Caller, f(vals))),
                };
                if flow.is_break() {
                    // The predicate read ends at this row's key.
                    let key = storage::with_values(r, |row| ti.schema.key_of(row));
                    hi = Bound::Included(ti.encode(&key));
                }
                flow
            })
        );
        if let Some(e) = failed {
            return self.fail(e);
        }
        if phantom_checked {
            self.scans.push(ScanEntry::range(ti, lo, hi, seen));
        }
        Ok(n)
    }
}

/// A scan callback that copies rows into `out` and stops at the `limit`th
/// (`scan_limit`, `index_scan_limit`; `limit` is at least 1).
pub(crate) fn up_to(
    out: &mut Vec<Row>,
    limit: usize,
) -> impl FnMut(&[Value]) -> ControlFlow<()> + '_ {
    move |r| {
        out.push(r.to_vec());
        if out.len() >= limit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

/// A primary-key scan's byte bounds. Bounds may be prefixes of the primary
/// key (see `index::secondary`).
pub(super) fn primary_bounds(
    t: &Table,
    range: &impl RangeBounds<Key>,
) -> Result<(Bound<EncodedKey>, Bound<EncodedKey>)> {
    let ti: &TableInner = &t.inner;
    Ok((
        crate::index::secondary::primary_bound(ti, range.start_bound(), true)?,
        crate::index::secondary::primary_bound(ti, range.end_bound(), false)?,
    ))
}
