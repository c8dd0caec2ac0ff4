//! Writes installed at commit (`WriteInstall::AtCommit`, issue 42 item 4).
//!
//! Under the papers' eager install an update puts its version on the row
//! at once, and the version's write lock (the head's `txn_id`) holds the
//! row until the transaction ends: a second writer of a hot row aborts
//! (no-wait) for as long as the first one runs. Silo and Cicada buffer
//! writes and install them after the read phase, so a row is held only
//! through the commit. Here an update or delete is *deferred*: checked as
//! far as it can be without the lock, and kept in the transaction's
//! buffer; it is *settled* (installed by the eager path, unchanged) at
//! commit, or earlier when the transaction itself is about to read what
//! it wrote. Inserts are not deferred, nor writes to a table with a
//! unique secondary index: a duplicate key is the call's answer.
//!
//! ```text
//!  update x ── head committed, the protocol's write check passes ──> buffer
//!  get x ───── x in the buffer: settle x, then read (own write seen)
//!  scan T ──── settle every buffered write of table T, then scan
//!  insert k ── settle k (a buffered delete may free the key)
//!  commit ──── settle all, in (table, tuple) order ─> validate ─> stamp
//! ```
//!
//! **Why every protocol stays correct.** Settling runs the eager write
//! path: the row's lock, the protocol's `check_write` against the head it
//! finds *then*, `on_overwrite`, the secondary indexes, the log. So a
//! transaction that installs at commit is, to every protocol, a
//! transaction that issued those writes at that point, after its reads:
//! an operation order each protocol already accepts or refuses. What the
//! deferral adds is only an early answer: an update is refused at once
//! (by the eager path) when the head already fails the write check or
//! the row is absent, and otherwise accepted provisionally; a row that is
//! deleted or overwritten before the settle turns into a conflict then
//! (`ConflictKind::WriteWrite`, retryable), as first-committer-wins says.
//! Reads of our own writes see them because every read that could meet a
//! buffered write settles it first. The history checker, the anomaly
//! scenarios and the shuttle models run over both choices.
//!
//! **Invariant owned here:** a buffered write's row is never read by its
//! own transaction before the write is installed, and every buffered
//! write is installed or dropped before the transaction's commit
//! timestamp is drawn.
//!
//! **Where the buffer lives.** Not in the transaction: a word there
//! pushed it past 128 bytes (every move became a `memcpy` call), and the
//! eager path should carry no more of this than a byte. Each TID slot has
//! one ([`Buffers`], only under AtCommit), which only the slot's occupant
//! touches; the transaction keeps one byte ([`Defer`]) saying whether it
//! holds anything, the only thing the read paths test.
//!
//! ```text
//!  DbInner.deferred: [ slot 0 | slot 1 | ... ]   (cache line each)
//!                               ^ Transaction { tid: slot 1, defer: Buffered }
//! ```
//!
//! Settling at commit goes in (table, tuple) order, so two transactions
//! that write the same rows meet at the first of them and one of them
//! goes on (no-wait locks cannot deadlock; the order makes it unlikely
//! that both give up).

use super::*;
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Whether a transaction buffers its writes, and whether it holds any: the
/// read paths' one test (`has_deferred`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Defer {
    /// `WriteInstall::Eager`, or a read-only transaction.
    Off,
    /// AtCommit, nothing buffered.
    Empty,
    /// AtCommit, the slot's buffer holds writes.
    Buffered,
}

/// One buffer per TID slot, each on its own cache line (slots running at
/// once sit side by side).
pub(crate) struct Buffers(Box<[CachePadded<Slot>]>);

/// A slot's buffer. Behind a mutex only for the borrow checker's sake: a
/// slot has one occupant at a time, so it is never contended.
#[derive(Default)]
pub(crate) struct Slot {
    list: Mutex<Vec<Deferred>>,
    /// A one-word filter of the rows in `list` ([`row_bit`]), set since
    /// the list was last empty: a point read of a row whose bit is clear
    /// has nothing to settle, and skips the lock and the walk (at θ 0.9,
    /// ~570 instructions a 10-operation transaction). Only the occupant
    /// reads and writes it.
    rows: AtomicU64,
}

impl Buffers {
    pub(crate) fn new(slots: usize) -> Buffers {
        Buffers((0..slots).map(|_| Default::default()).collect())
    }

    #[inline]
    fn of(&self, tid: u64) -> &Slot {
        &self.0[crate::tid::TidTable::slot_index(tid)]
    }
}

/// Row `(t, tuple)`'s bit in [`Slot::rows`].
#[inline]
fn row_bit(t: *const TableInner, tuple: u64) -> u64 {
    let h = (tuple ^ (t as u64 >> 6)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    1 << (h >> 58)
}

/// An update or delete made but not installed.
pub(crate) struct Deferred {
    pub table: *const TableInner,
    pub tuple: u64,
    /// The row's key, encoded (the primary entry's hint follows the
    /// version the settle installs).
    pub ek: EncodedKey,
    pub row: DeferredRow,
}

// SAFETY: `table` is dereferenced only by the transaction that buffered
// the write, while it is open (`settle`), and tables outlive every
// transaction open at their drop (`DbInner::tables`). The buffer sits in
// the shared `DbInner` only to be found by its slot's occupant, which may
// have moved threads with its transaction (`Transaction` is `Send`); every
// AtCommit test with threads exercises this.
unsafe impl Send for Deferred {}

/// Most entries a slot's buffer keeps room for between transactions (a
/// buffer allocated and grown per transaction cost a 5-update transaction
/// about 740 instructions; a huge one is not kept).
const KEPT_CAPACITY: usize = 256;

/// What a settle installs: `NewRow`'s update and tombstone, owned.
pub(crate) enum DeferredRow {
    Update(smallvec::SmallVec<[(usize, Value); 4]>),
    Delete(Vec<Value>),
}

impl Transaction {
    /// `modify` under `WriteInstall::AtCommit`: a second write of a
    /// buffered row installs the first (and then writes over our own
    /// version eagerly); else [`Transaction::try_defer`]. Out of line, so
    /// the eager update carries one test of a flag.
    #[inline(never)]
    pub(super) fn defer_write<P: Cc>(
        &mut self,
        ti: &TableInner,
        ek: &EncodedKey,
        tuple: u64,
        row: &NewRow<'_>,
    ) -> Result<bool> {
        self.settle_tuple::<P>(ti, tuple)?;
        Ok(self.try_defer::<P>(ti, ek, tuple, row))
    }

    /// `modify`'s at-commit branch: buffers the write and returns true, or
    /// false to take the eager path (the row is absent, deleted, ours
    /// already, or the head fails the protocol's write check: the eager
    /// path gives the answer it would always give). Never installs.
    pub(super) fn try_defer<P: Cc>(
        &mut self,
        ti: &TableInner,
        ek: &EncodedKey,
        tuple: u64,
        row: &NewRow<'_>,
    ) -> bool {
        if crate::index::has_unique_index(ti) {
            return false;
        }
        let head = storage::newest(ti, tuple);
        if head.is_null() || self.is_own(head) {
            return false;
        }
        // SAFETY: pinned by the caller; heads are alive.
        let h = unsafe { &*head };
        if h.begin.load(SeqCst) & TID_MARK == 0 {
            // A committed head: the version a settle now would overwrite.
            if h.is_tombstone() || P::check_write(self, ti, tuple, h).is_err() {
                return false;
            }
        } else {
            // Another transaction is installing over the row (its commit
            // is running): whether the row exists is the version we read.
            let at = if P::SNAPSHOT_READS {
                self.ts
            } else {
                self.db.clock.load(SeqCst)
            };
            match storage::visible(ti, tuple, at, self.tid, &self.db.tids, Mode::Snapshot) {
                // SAFETY: pinned; a visible version is alive.
                Ok(v) if !v.is_null() && !unsafe { &*v }.is_tombstone() => {}
                _ => return false,
            }
        }
        let row = match row {
            NewRow::Update(ch) => {
                DeferredRow::Update(ch.iter().map(|(c, v)| (*c, (*v).clone())).collect())
            }
            NewRow::Tombstone(k) => DeferredRow::Delete(k.clone()),
            NewRow::Row(_) => unreachable!("inserts are not deferred"),
        };
        let slot = self.slot();
        slot.list.lock().push(Deferred {
            table: ti,
            tuple,
            ek: ek.clone(),
            row,
        });
        // (A first entry starts the filter afresh: whatever bits it kept
        // belonged to writes settled or dropped since.)
        let bit = row_bit(ti, tuple);
        let rows = match self.defer {
            Defer::Buffered => slot.rows.load(Relaxed) | bit,
            _ => bit,
        };
        slot.rows.store(rows, Relaxed);
        self.defer = Defer::Buffered;
        self.db.tids.counts(self.tid).deferred_write();
        true
    }

    /// Whether any write is buffered: a test of a byte on the
    /// transaction's own line (this is on every read path).
    #[inline(always)]
    pub(super) fn has_deferred(&self) -> bool {
        self.defer == Defer::Buffered
    }

    /// Our slot's buffer (AtCommit only).
    fn slot(&self) -> &Slot {
        self.db.deferred.as_ref().expect("AtCommit").of(self.tid)
    }

    /// Installs the buffered write of `tuple`, if there is one: before we
    /// read the row or write it again.
    #[inline(always)]
    pub(super) fn settle_tuple<P: Cc>(&mut self, ti: &TableInner, tuple: u64) -> Result<()> {
        if !self.has_deferred() {
            return Ok(());
        }
        let t: *const TableInner = ti;
        if self.slot().rows.load(Relaxed) & row_bit(t, tuple) == 0 {
            return Ok(());
        }
        self.settle_where::<P>(|d| d.table == t && d.tuple == tuple)
    }

    /// Installs our buffered writes of the row with key `ek` of `ti`: an
    /// insert of the key must find the key freed by a buffered delete.
    #[inline]
    pub(super) fn settle_key<P: Cc>(&mut self, ti: &TableInner, ek: &EncodedKey) -> Result<()> {
        if !self.has_deferred() {
            return Ok(());
        }
        let t: *const TableInner = ti;
        self.settle_where::<P>(|d| d.table == t && d.ek == *ek)
    }

    /// Installs every buffered write of table `ti` (rows apart: any order
    /// will do): before a scan or an index read of the table.
    #[inline]
    pub(super) fn settle_table<P: Cc>(&mut self, ti: &TableInner) -> Result<()> {
        if !self.has_deferred() {
            return Ok(());
        }
        let t: *const TableInner = ti;
        self.settle_where::<P>(|d| d.table == t)
    }

    /// [`Transaction::settle_table`] through the protocol switch (for the
    /// read paths that are not generic over the protocol).
    pub(crate) fn settle_table_any(&mut self, ti: &TableInner) -> Result<()> {
        if !self.has_deferred() {
            return Ok(());
        }
        with_cc!(self.db.protocol, P => self.settle_table::<P>(ti))
    }

    /// Installs every buffered write `pick` chooses (out of line: the
    /// callers' inline part is the emptiness test).
    #[inline(never)]
    fn settle_where<P: Cc>(&mut self, pick: impl Fn(&Deferred) -> bool) -> Result<()> {
        // Out of the slot while the eager path runs (it needs `&mut self`);
        // `Empty` meanwhile, so that a rollback does not look for them. Most
        // reads pick nothing: they move nothing.
        let mut buffer = {
            let mut b = self.slot().list.lock();
            if !b.iter().any(&pick) {
                return Ok(());
            }
            std::mem::take(&mut *b)
        };
        self.defer = Defer::Empty;
        let mut r = Ok(());
        while let Some(i) = buffer.iter().position(&pick) {
            let d = buffer.swap_remove(i);
            r = self.settle::<P>(&d);
            if r.is_err() {
                break;
            }
        }
        // Rolled back by a settle, the slot is no longer ours, and the
        // rest were never made.
        if self.active {
            if !buffer.is_empty() {
                self.defer = Defer::Buffered;
            }
            *self.slot().list.lock() = buffer;
        }
        r
    }

    /// Installs every buffered write, in (table, tuple) order: the commit's
    /// first step. On a conflict the transaction is rolled back.
    #[inline(never)]
    pub(super) fn settle_all<P: Cc>(&mut self) -> Result<()> {
        // (As `settle_where`.)
        let all = std::mem::take(&mut *self.slot().list.lock());
        self.defer = Defer::Empty;
        // The order as indices: an entry is a few cache lines, and moving
        // them cost more than sorting (and settling by reference, none
        // moves at all).
        let mut order: smallvec::SmallVec<[u32; 16]> = (0..all.len() as u32).collect();
        if order.len() > 1 {
            order.sort_unstable_by_key(|&i| {
                let d = &all[i as usize];
                (d.table as usize, d.tuple)
            });
        }
        // One pin over the installs: theirs nest (an outermost pin is a
        // locked instruction, and the commit holds none).
        let _guard = epoch::pin();
        let mut r = Ok(());
        for i in order {
            r = self.settle::<P>(&all[i as usize]);
            if r.is_err() {
                break;
            }
        }
        // Emptied, the buffer goes back to the slot (if it is still ours).
        if self.active {
            self.restore_buffer(all);
        }
        r
    }

    /// A rolled-back transaction's buffered writes, which were never made.
    #[inline(never)]
    pub(super) fn drop_deferred(&mut self) {
        let all = std::mem::take(&mut *self.slot().list.lock());
        self.defer = Defer::Empty;
        self.restore_buffer(all);
    }

    /// Puts an emptied buffer back in the slot, keeping its room unless it
    /// grew past [`KEPT_CAPACITY`].
    fn restore_buffer(&self, mut all: Vec<Deferred>) {
        all.clear();
        if all.capacity() <= KEPT_CAPACITY {
            *self.slot().list.lock() = all;
        }
    }

    /// Installs one buffered write through the eager path. A row that is
    /// gone by now (deleted and committed since we buffered the write) is
    /// a write-write conflict: the write was accepted against a version
    /// that another writer then replaced.
    fn settle<P: Cc>(&mut self, d: &Deferred) -> Result<()> {
        // SAFETY: tables outlive the transaction.
        let ti = unsafe { &*d.table };
        let guard = epoch::pin();
        let refs: smallvec::SmallVec<[(usize, &Value); 4]>;
        let row = match &d.row {
            DeferredRow::Update(ch) => {
                refs = ch.iter().map(|(c, v)| (*c, v)).collect();
                NewRow::Update(&refs)
            }
            DeferredRow::Delete(k) => NewRow::Tombstone(k.clone()),
        };
        let gone = || Error::Conflict(ConflictKind::WriteWrite);
        match self.write_tuple::<P>(ti, &d.ek, None, d.tuple, row, &guard, gone) {
            Err(Error::Conflict(k)) if self.active => Err(self.conflict(k)),
            Err(e) => {
                // (A memory limit, say.) The write was accepted at its
                // call, so the transaction cannot go on without it.
                self.rollback();
                Err(e)
            }
            r => r,
        }
    }
}
