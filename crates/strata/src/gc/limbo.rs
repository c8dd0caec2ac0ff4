//! Limbo: rows unlinked from their table but not freed yet.
//!
//! A deleted row whose tombstone is visible at the horizon is unlinked as a
//! whole (index entry, tuple slot; see [`super::prune_row`]). Transactions
//! open at that moment may still hold pointers to its versions (read sets)
//! or its tuple id, so the row waits here until the horizon passes the clock
//! value of the unlink, and is only then retired (epoch) and its tuple id
//! reused:
//!
//! ```text
//!  key ─X─> tuple 9 ─X─> [tombstone] -> [v 12] ...   unlinked at clock 80
//!  horizon 81: every transaction open at 80 has ended -> retire, reuse 9
//! ```
//!
//! Transaction-level GC's queued entries may point into an unlinked row
//! too: an entry queued before the unlink committed at or below
//! `unlinked_at`, so a pass has processed it by the time the horizon has
//! passed `unlinked_at` (see [`super::transaction_level`]).

use crate::storage::meter::Gauged;
use crate::storage::{self, version::Version};
use crate::table::TableInner;
use crossbeam_epoch::Guard;
use parking_lot::Mutex;
use std::sync::Arc;

/// A row unlinked from its table, freed once every transaction that was
/// open at `unlinked_at` has ended (its read set may point at the versions,
/// and its tuple id may still be in use).
pub(crate) struct Unlinked {
    pub(crate) unlinked_at: u64,
    pub(crate) head: *mut Version,
    pub(crate) table: u32,
    pub(crate) tuple: u64,
}

// SAFETY: the versions of a limbo row are reachable from no chain and no
// index; only a collector, under the limbo lock, touches them.
unsafe impl Send for Unlinked {}

impl Unlinked {
    /// A row just unlinked; `unlinked_at` is set by [`Limbo::retire`].
    pub(crate) fn new(table: u32, tuple: u64, head: *mut Version) -> Unlinked {
        Unlinked {
            unlinked_at: 0,
            head,
            table,
            tuple,
        }
    }
}

/// The rows in limbo (see the module doc).
#[derive(Default)]
pub(crate) struct Limbo {
    rows: Mutex<Vec<Unlinked>>,
    /// The database's gauge flag, its tables' (`Store::gauged`): a
    /// retired row releases what its versions counted.
    gauged: Gauged,
}

impl Limbo {
    pub(crate) fn new(gauged: Gauged) -> Limbo {
        Limbo {
            rows: Mutex::default(),
            gauged,
        }
    }

    /// Puts rows just unlinked into limbo (stamped with the clock read now,
    /// after the unlinks), and frees the limbo rows that no open
    /// transaction and no queued entry can reach any more: unlinked below
    /// `horizon`. Returns versions freed.
    pub(crate) fn retire(
        &self,
        unlinked: Vec<Unlinked>,
        horizon: u64,
        clock: &dyn Fn() -> u64,
        table: &dyn Fn(u32) -> Option<Arc<TableInner>>,
        guard: &Guard,
    ) -> u64 {
        let mut freed = 0;
        let mut unlinked = unlinked;
        // Read the clock after the unlinks: every transaction that could
        // still reach an unlinked row began before, so its snapshot is at or
        // below this value, and the horizon stays at or below it while that
        // transaction is open.
        let unlinked_at = clock();
        for l in &mut unlinked {
            l.unlinked_at = unlinked_at;
        }
        let mut limbo = self.rows.lock();
        limbo.extend(unlinked);
        limbo.retain(|l| {
            if l.unlinked_at >= horizon {
                return true;
            }
            freed += storage::retire_row(l.head, self.gauged, guard);
            // (A reclaimed table's ids go back to no table: its stand-in
            // has no rows.)
            if let Some(t) = table(l.table).filter(|t| !t.tombstone) {
                t.rows.release(l.tuple, guard);
            }
            false
        });
        freed
    }
}

impl Drop for Limbo {
    fn drop(&mut self) {
        // Rows still in limbo belong to no table any more, so the tables'
        // own teardown does not free them.
        for l in self.rows.get_mut().drain(..) {
            // SAFETY: the database is being dropped (`&mut self`): no
            // transaction or reader exists, and limbo chains are reachable
            // from nowhere else; each row is freed once.
            unsafe { storage::free_row(l.head) };
        }
    }
}
