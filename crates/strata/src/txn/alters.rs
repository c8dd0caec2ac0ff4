//! The alters whose copy is running: `Database::alter_table` copies a
//! table's rows outside the catalog lock (`DbInner::names`), and holds
//! here, until it is done, what no other catalog operation may touch
//! meanwhile: the altered table's name, the name it takes, and the table
//! itself (its indexes). (Beside `DbInner`, which holds it, below `db`,
//! which uses it: `db/alter.rs`.)
//!
//! ```text
//!  alter:  catalog lock ── freeze, log, new table ── hold ── unlock
//!              copy rows (lookups of other tables, other DDL go on)
//!          catalog lock ── let go ── move the names ── unlock
//!  other:  catalog lock ── holds my name / table? ── no: go on
//!                                                 └─ yes: unlock, wait, start over
//! ```
//!
//! Who waits: a lookup of either name (`Database::table`: it gets the
//! altered table, as it did when the copy held the catalog lock), a
//! create, drop or alter of either name, a drop of one of the table's
//! indexes, and a checkpoint (its catalog, any running alter: a
//! checkpoint taken in the middle would begin after the alter's log
//! record and find the old table frozen and the new one half copied).
//!
//! The invariant: an alter is held from inside the catalog lock (write)
//! where it freezes the table to inside the one where it moves the names
//! (or thaws the table, if the copy failed), so a look under the catalog
//! lock, read or write, sees exactly the alters between those points.

use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

/// One running alter: its table's id and the two names it holds.
struct Held {
    table: u32,
    names: [String; 2],
}

/// The running alters (see the module doc).
#[derive(Default)]
pub(crate) struct Alters {
    /// How many are held: a lookup looks no further while it is 0.
    running: AtomicUsize,
    held: Mutex<Vec<Held>>,
    /// Signalled when one is let go.
    done: Condvar,
    /// A test's hook, run by each alter once it holds its names and has
    /// let go of the catalog lock, before it copies
    /// (`Database::pause_alters_for_testing`).
    #[cfg(feature = "lab")]
    pub(crate) pause: Mutex<Option<std::sync::Arc<dyn Fn() + Send + Sync>>>,
}

impl Alters {
    /// Holds `table` and `names` for an alter. The caller holds the
    /// catalog lock (write) and lets go with [`Alters::let_go`], under it
    /// again.
    pub fn hold(&self, table: u32, names: [String; 2]) {
        self.held.lock().push(Held { table, names });
        self.running.fetch_add(1, SeqCst);
    }

    /// Lets go of the alter of `table`, under the catalog lock (write),
    /// and wakes whoever waits.
    pub fn let_go(&self, table: u32) {
        let mut held = self.held.lock();
        if let Some(at) = held.iter().position(|h| h.table == table) {
            held.swap_remove(at);
            self.running.fetch_sub(1, SeqCst);
        }
        drop(held);
        self.done.notify_all();
    }

    /// Whether a running alter holds name `name`. Exact under the catalog
    /// lock (read or write).
    #[inline]
    pub fn holds_name(&self, name: &str) -> bool {
        self.running.load(SeqCst) != 0 && self.held.lock().iter().any(|h| names_it(h, name))
    }

    /// Whether a running alter holds table `id`. As [`Alters::holds_name`].
    pub fn holds_table(&self, id: u32) -> bool {
        self.running.load(SeqCst) != 0 && self.held.lock().iter().any(|h| h.table == id)
    }

    /// Whether any alter is running. As [`Alters::holds_name`].
    pub fn any(&self) -> bool {
        self.running.load(SeqCst) != 0
    }

    /// Waits, without the catalog lock, until no running alter holds
    /// `name`.
    pub fn wait_for_name(&self, name: &str) {
        self.wait_while(|h| names_it(h, name));
    }

    /// Waits, without the catalog lock, until no running alter holds
    /// table `id`.
    pub fn wait_for_table(&self, id: u32) {
        self.wait_while(|h| h.table == id);
    }

    /// Waits, without the catalog lock, until no alter runs.
    pub fn wait_for_all(&self) {
        self.wait_while(|_| true);
    }

    fn wait_while(&self, busy: impl Fn(&Held) -> bool) {
        let mut held = self.held.lock();
        while held.iter().any(&busy) {
            self.done.wait(&mut held);
        }
    }

    /// Runs the test's pause hook, if one is set.
    #[cfg(feature = "lab")]
    pub fn paused(&self) {
        let hook = self.pause.lock().clone();
        if let Some(h) = hook {
            h();
        }
    }
}

fn names_it(h: &Held, name: &str) -> bool {
    h.names.iter().any(|n| n == name)
}
