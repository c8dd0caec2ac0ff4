//! Dropped tables: their memory comes back while the database runs.
//!
//! `Database::drop_table` (and `alter_table`, for the table it replaces)
//! freezes a table: from the moment `dropped` is set, every operation
//! through a handle fails at its start and every commit that wrote the
//! table is refused. What still reaches the table's versions after that is
//! the transactions that were open at the drop (an operation in progress,
//! a write set a rollback will walk) and the collectors' queues (entries
//! that name a version by address). So the table is *retired* with the
//! list of transaction slots taken at the drop, and *reclaimed* by the
//! first collection that finds every one of them left:
//!
//! ```text
//!  drop_table: dropped = true ─> wait for deciding commits ─> log
//!              ─> retire(id, slots taken now)             [SeqCst, after the flag]
//!  a pass, an explicit collection, or the drop itself:
//!     every slot taken at the drop left?  no ─> try again next time
//!       yes ─> under Common::running: each collector forgets the id's entries
//!          ─> tables[id] = an empty tombstone (same id, schema; dropped)
//!          ─> the old Arc goes: rows, versions, indexes, spill files freed
//!             (at once, or when the last user handle to it is dropped)
//! ```
//!
//! A transaction that begins after the scan of the slots checks `dropped`
//! (SeqCst) before it touches the table, so it fails there: the flag was
//! set before the scan. Threads that reach the table through an `Arc`
//! (a collector's pass, a checkpoint, a user's `Table` handle) keep it
//! alive by that `Arc`; the tombstone only cuts the catalog's. Limbo rows
//! (`super::limbo`) are unlinked from their table and freed on their own
//! schedule; their tuple id goes back to no table once it is a tombstone.
//!
//! Invariant this module owns: **a dropped table's versions are freed
//! only after every transaction open at its drop has ended and no
//! collector's queue names one of them.** Checked by
//! `tests/table_reclaim.rs` (memory and texts back, a transaction open at
//! the drop keeps it) and the shuttle model
//! `drop_table_reclaims_after_the_last_open_transaction`.

use super::{Common, Engine};
use crate::table::TableInner;
use crate::tid::Occupied;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

/// A table frozen by a drop, waiting for the transactions open then.
struct Retired {
    id: u32,
    open: Occupied,
}

/// The dropped tables not reclaimed yet (see the module doc).
#[derive(Default)]
pub(crate) struct DroppedTables {
    /// Retired plus lingering: the passes' cheap test (one load) for
    /// whether there is anything to do.
    waiting: AtomicUsize,
    retired: Mutex<Vec<Retired>>,
    /// Out of the catalog, but a user's handle (`Table`, `Index`) still
    /// holds the `Arc`: freed when the last one goes, found by a later
    /// pass.
    lingering: Mutex<Vec<Arc<TableInner>>>,
    /// Tables whose memory was freed (`Stats::tables_reclaimed`).
    reclaimed: AtomicU64,
}

impl DroppedTables {
    /// Retires table `id`, just frozen (`dropped` set, SeqCst, before
    /// `open` was scanned: `TidTable::occupied`).
    pub(crate) fn retire(&self, id: u32, open: Occupied) {
        self.retired.lock().push(Retired { id, open });
        self.waiting.fetch_add(1, SeqCst);
    }

    /// Tables dropped whose memory is not freed yet.
    pub(crate) fn waiting(&self) -> u64 {
        self.waiting.load(SeqCst) as u64
    }

    pub(crate) fn reclaimed(&self) -> u64 {
        self.reclaimed.load(SeqCst)
    }

    /// Reclaims every retired table that no transaction open at its drop
    /// can reach any more, and frees those no handle holds. `forget`
    /// drops a table's entries from the collector's queues; it runs under
    /// `Common::running`, so no pass holds entries it took meanwhile.
    /// Returns the tables freed. Takes no lock a pass holds while it waits
    /// for `running` (the catalog's is taken after `running` is let go).
    pub(crate) fn reclaim<E: Engine>(
        &self,
        common: &Common,
        forget: impl Fn(u32),
        engine: &E,
    ) -> u64 {
        if self.waiting.load(SeqCst) == 0 {
            return 0;
        }
        let ready: Vec<u32> = {
            let mut retired = self.retired.lock();
            let tids = engine.tids();
            let mut ready = Vec::new();
            retired.retain(|r| {
                // A slot taken by the same generation or the next one may
                // still be a transaction open at the drop.
                if !crate::sync::broken(crate::sync::Break::ReclaimIgnoresOpen)
                    && tids.any_still_open(&r.open)
                {
                    return true;
                }
                ready.push(r.id);
                false
            });
            ready
        };
        let mut lingering = self.lingering.lock();
        if !ready.is_empty() {
            {
                let _running = common.running.lock();
                for &id in &ready {
                    forget(id);
                }
            }
            crate::sync::logged(crate::sync::Logged::TableReclaimed);
            lingering.extend(ready.iter().filter_map(|&id| engine.tombstone(id)));
        }
        let mut freed = 0;
        lingering.retain(|t| {
            // Ours alone: nobody can clone it any more (it is out of the
            // catalog, and every other holder let go).
            if Arc::strong_count(t) > 1 {
                return true;
            }
            let bytes = if common.memory.limit().is_some() {
                footprint(t)
            } else {
                0
            };
            freed += 1;
            common.memory.add(0, bytes);
            false
        });
        self.waiting.fetch_sub(freed, SeqCst);
        self.reclaimed.fetch_add(freed as u64, SeqCst);
        freed as u64
    }
}

/// What the memory gauge counted for a table's rows (their blocks and
/// payloads, `storage::row_gauge_bytes`) and its primary index's entries:
/// walked once, before the table goes. (Its secondary indexes give theirs
/// back themselves, when they are freed: `SecondaryIndex`'s drop, with
/// the table, since no list of them outlives it: `TableIndexes`'s drop
/// frees the lists DDL replaced too, however far behind the epoch is.)
fn footprint(t: &TableInner) -> u64 {
    let _guard = crossbeam_epoch::pin();
    let mut bytes = 0;
    t.rows.for_each_head(|_, head| {
        // SAFETY: the table is ours alone (see the caller); pinned.
        bytes += unsafe { crate::storage::row_gauge_bytes(head, t.gauged) };
    });
    // (Its entries counted under the table's flag, as its rows did.)
    if t.gauged.on() {
        bytes += t.index.gauge_bytes();
    }
    bytes
}
