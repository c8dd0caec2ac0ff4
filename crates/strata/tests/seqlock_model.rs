//! Shuttle model check of the in-place master's seqlock, on the engine's
//! own code (`storage/in_place/`: `install` and `undo`, which open a
//! `Master::write` section, move the old values into a record and write the
//! new ones; `Master::read`, both its owner fast path and the record walk).
//! `install` is the engine's update path itself: the new version's block
//! holds the overwritten version's record, which the reader then reaches
//! through that version's tagged record word.
//!
//! Built with `--cfg strata_model` (see `src/sync/mod.rs`), so the master's
//! atomics are shuttle's. One writer, holding the row (no other writer),
//! installs versions 2 and 3 over version 1, one of them aborted (`undo`);
//! readers read committed versions, the newest or an older one through its
//! record. The invariant: a read returns exactly the values of the version
//! asked for (never a torn row), whole or projected (`read_columns`). `a_reader_without_the_recheck_is_caught`
//! shows the model fails when readers skip the seqlock's check. Rows are
//! integers, and also one cell of each kind (integer, byte string, float or
//! null), so every cell tag goes through the seqlock.
//!
//! A second model runs SIRO's toggle: a writer overwrites version 1 and
//! aborts by `toggle_back` (the master keeps no owner; version 1, current
//! again, lives only in its copy), while readers read version 1 as the
//! engine does (`values_of`: the copy if there is one, else the master).
//! A reader that met no copy and went to the master must find the copy
//! when the master stops reaching version 1;
//! `a_reader_ignoring_the_toggled_copy_is_caught` shows the model fails
//! (the reader spins past shuttle's step limit) when it does not.
#![cfg(strata_model)]

use shuttle::sync::atomic::AtomicPtr;
use shuttle::sync::Arc;
use shuttle::thread;
use std::sync::atomic::{AtomicPtr as StdPtr, AtomicUsize, Ordering::SeqCst};
use strata::model::{
    caught, install, pin, toggle_back, undo, values_of, Alloc, Break, Deltas, FullCopies, Gauged,
    Master, Projected, Records, Version,
};
use strata::Value;

const CELLS: usize = 3;

struct Row {
    /// The indirection slot (shuttle's atomic, as storage's slots are in
    /// this build).
    slot: AtomicPtr<Version>,
    master: *mut Master,
    /// Versions 1..=4 (index 0 unused), each with all cells = its number:
    /// version 1 made before the race, the others by the writer's
    /// installs (ghost state, published before `committed` names them).
    versions: Vec<StdPtr<Version>>,
    /// Ghost: the newest committed version (readers read only committed
    /// ones, as visibility guarantees in the engine).
    committed: AtomicUsize,
}

// SAFETY: the raw pointers are the engine's, shared as the engine shares
// them (readers are pinned while they read).
unsafe impl Send for Row {}
unsafe impl Sync for Row {}

/// Version `n`'s row: all `Int(n)`, or (`mixed`) one cell of each kind the
/// master holds: inline bits, a shared byte string (a pointer cell), and a
/// float or a null, alternating.
fn image(n: usize, mixed: bool) -> Vec<Value> {
    if !mixed {
        return vec![Value::Int(n as i64); CELLS];
    }
    let last = if n % 2 == 0 {
        Value::Null
    } else {
        Value::Float(n as f64 - 0.5)
    };
    vec![Value::Int(n as i64), Value::from(vec![n as u8; 2]), last]
}

/// A row whose master holds `first` for version 1 (its owner), with room
/// for `count` versions in all.
fn row_of(first: Vec<Value>, count: usize) -> Arc<Row> {
    let master = Master::with_row(first, Gauged::OFF);
    let versions: Vec<StdPtr<Version>> = (0..=count)
        .map(|_| StdPtr::new(std::ptr::null_mut()))
        .collect();
    let v1 = Version::alloc_in_place(Alloc::PLAIN, 1, master, std::ptr::null_mut());
    versions[1].store(v1, SeqCst);
    // SAFETY: fresh and unshared.
    let mut sec = unsafe { &*master }.write();
    sec.set_owner(v1);
    drop(sec);
    Arc::new(Row {
        slot: AtomicPtr::new(v1),
        master,
        versions,
        committed: AtomicUsize::new(1),
    })
}

impl Row {
    fn version(&self, n: usize) -> *mut Version {
        self.versions[n].load(SeqCst)
    }

    /// Installs version `n` over version `over` (the engine's update path).
    fn install<R: Records>(&self, over: usize, n: usize, image: Vec<Value>) {
        let v = install::<R>(&self.slot, self.master, self.version(over), n as u64, image);
        self.versions[n].store(v, SeqCst);
    }
}

/// Runs `writer` against two readers (`reader(row, its number)`), each
/// pinned, and joins them all. Versions, records and the master are left
/// to leak: a few hundred bytes per schedule, and nothing here may outlive
/// a failed assertion half-freed.
fn race(
    row: Arc<Row>,
    writer: impl FnOnce(&Row, &Master) + Send + 'static,
    reader: impl Fn(&Row, &Master, usize) + Send + Sync + Clone + 'static,
) {
    let w = {
        let row = Arc::clone(&row);
        thread::spawn(move || {
            let _guard = pin();
            // SAFETY: the master lives until the end of the model.
            writer(&row, unsafe { &*row.master });
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (row, reader) = (Arc::clone(&row), reader.clone());
            thread::spawn(move || {
                let _guard = pin();
                // SAFETY: as above.
                reader(&row, unsafe { &*row.master }, r);
            })
        })
        .collect();
    w.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
}

/// `R`: time-travel's full copies or delta's changed attributes. `mixed`:
/// see `image` (the broken-reader check keeps to integers: a torn pointer
/// cell would be a wild pointer, not a failed assertion).
fn model<R: Records>(mixed: bool) {
    let image = move |n| image(n, mixed);
    // Version 3 is aborted; 4 overwrites 2 again.
    let row = row_of(image(1), 4);
    let writer = move |row: &Row, m: &Master| {
        let guard = pin();
        row.install::<R>(1, 2, image(2));
        row.committed.store(2, SeqCst);
        row.install::<R>(2, 3, image(3));
        undo(&row.slot, m, row.version(2), &guard);
        row.install::<R>(2, 4, image(4));
        row.committed.store(4, SeqCst);
    };
    race(row, writer, move |row, m, r| {
        let mut first = 0;
        for i in 0..2 {
            // Reader 1 reads its first version again, by then possibly an
            // older one behind a record.
            let n = if r == 1 && i == 1 {
                first
            } else {
                row.committed.load(SeqCst)
            };
            first = n;
            let got = m.read(row.version(n));
            assert_eq!(got, image(n), "version {n} read as {got:?}");
            // A projection (`Master::read_columns`) reads the same cells
            // under the same seqlock rule: never a torn pair either.
            let mut two = Projected::new();
            m.read_columns(row.version(n), &[2, 0], &mut two);
            let want = image(n);
            assert_eq!(
                two.as_slice(),
                &[want[2].clone(), want[0].clone()],
                "version {n} projected as {two:?}"
            );
        }
    });
}

#[test]
fn seqlock_readers_never_accept_a_torn_row() {
    shuttle::check_random(|| model::<FullCopies>(false), 3000);
    shuttle::check_pct(|| model::<FullCopies>(false), 3000, 3);
    shuttle::check_random(|| model::<Deltas>(false), 2000);
    shuttle::check_random(|| model::<FullCopies>(true), 2000);
    shuttle::check_random(|| model::<Deltas>(true), 2000);
}

#[test]
fn a_reader_without_the_recheck_is_caught() {
    assert!(
        caught(Break::SeqlockNoRecheck, || shuttle::check_random(
            || model::<FullCopies>(false),
            3000
        )),
        "the model must be able to find a torn read"
    );
}

/// SIRO's toggle (see the module doc): version 2 overwrites 1, aborts and
/// toggles back; readers of version 1, which stays visible throughout,
/// must get its image whether they meet the master before, during or
/// after.
fn toggle_model() {
    let row = row_of(image(1, false), 2);
    let writer = |row: &Row, m: &Master| {
        let guard = pin();
        row.install::<FullCopies>(1, 2, image(2, false));
        // Version 1's copy is in version 2's block, which the abort gives
        // up: the toggle gives version 1 a copy of its own first.
        toggle_back(&row.slot, m, row.version(1), Alloc::PLAIN, &guard);
    };
    race(row, writer, |row, _, _| {
        for _ in 0..2 {
            // SAFETY: pinned; versions leak at the end of the model.
            let got = values_of(unsafe { &*row.version(1) });
            assert_eq!(got, image(1, false), "version 1 read as {got:?}");
        }
    });
}

#[test]
fn readers_find_a_toggled_versions_copy() {
    shuttle::check_random(toggle_model, 3000);
    shuttle::check_pct(toggle_model, 3000, 3);
}

#[test]
fn a_reader_ignoring_the_toggled_copy_is_caught() {
    assert!(
        caught(Break::ReaderIgnoresNewCopy, || shuttle::check_random(
            toggle_model,
            3000
        )),
        "the model must see the reader spin"
    );
}
