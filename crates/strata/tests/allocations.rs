//! Heap allocations of one update under every version storage scheme,
//! counted by the process's own allocator (issue 41, item 1; Wu et al.
//! §4 and §7.3: an in-place update used to allocate a version header *and*
//! a record, where an append-only one allocates once).
//!
//! A test binary of its own: it installs a counting `#[global_allocator]`
//! (per thread, so other threads' work does not count), which must not
//! slow or skew the other tests. The claim checked: an update, in a
//! transaction that already wrote (so its own bookkeeping has room),
//! allocates at most once on the heap, under every scheme, and the
//! version store's own count (`strata::storage_meter`, and
//! `Stats::storage_allocations`, which a bench reports per transaction)
//! says exactly what the heap saw, so it cannot lie.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use strata::{key, Database, GcPolicy, MemorySpaces, Options, Schema, Type, Value, VersionStorage};

/// Counts the calling thread's allocations (and reallocations) and hands
/// the work to the system allocator.
struct Counting;

std::thread_local! {
    // (`const`, no destructor: safe to touch from inside the allocator.)
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every call is forwarded to `System` unchanged; the count is a
// thread-local with no destructor and no allocation of its own.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded contract.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded contract.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        count();
        // SAFETY: forwarded contract.
        unsafe { System.realloc(p, l, new) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

const COLS: usize = 10;

/// A database under `scheme` where no collector runs during the test (so
/// no freed block comes back through this thread's version cache, and
/// what the heap sees is what storage asked for).
fn open(scheme: VersionStorage) -> Database {
    // SIRO runs only with its own collector (refused without one); its
    // passes run every few commits, fewer than this test makes.
    let gc = if scheme == VersionStorage::Siro {
        GcPolicy::DeadZone
    } else {
        GcPolicy::None
    };
    let opts = Options::default()
        .version_storage(scheme)
        .gc(gc)
        .gc_every_commits(1_000)
        .memory_spaces(MemorySpaces::System);
    Database::open(opts).unwrap()
}

/// What one measured update cost.
#[derive(Debug)]
struct Cost {
    heap: u64,
    meter: strata::StorageMeter,
    /// The whole transaction's allocations (two updates) in the stats.
    stats: u64,
}

/// Runs the measured update on a thread of its own (an empty version
/// cache, thread-locals made during the warm-up there): rows 1..=4, row 2
/// updated three times (SIRO then has the row's cleaning state and an open
/// segment), then one transaction updates row 1 (its own bookkeeping
/// grows) and row 2, which is measured.
fn one_update(scheme: VersionStorage) -> Cost {
    std::thread::spawn(move || {
        let db = open(scheme);
        let mut schema = Schema::new("t").column("k", Type::Int);
        for c in 0..COLS {
            schema = schema.column(format!("c{c}"), Type::Int);
        }
        let t = db.create_table(schema.primary_key(&["k"])).unwrap();
        let mut txn = db.begin().unwrap();
        for k in 1..=4i64 {
            let mut row = vec![Value::Int(k)];
            row.extend((0..COLS).map(|c| Value::Int(c as i64)));
            txn.insert(&t, row).unwrap();
        }
        txn.commit().unwrap();
        for n in 0..3 {
            let mut txn = db.begin().unwrap();
            txn.update(&t, &key![2], &[("c3", Value::Int(100 + n))])
                .unwrap();
            txn.commit().unwrap();
        }
        let stats = db.stats().storage_allocations;
        let whole = strata::storage_meter();
        let mut txn = db.begin().unwrap();
        txn.update(&t, &key![1], &[("c3", Value::Int(7))]).unwrap();
        // (The key and the change are the caller's allocations: made first.)
        let (k2, change) = (key![2], [("c5", Value::Int(9))]);
        let (heap, meter) = (allocs(), strata::storage_meter());
        txn.update(&t, &k2, &change).unwrap();
        let (heap, meter) = (allocs() - heap, strata::storage_meter().since(&meter));
        txn.commit().unwrap();
        // The stats take a transaction's allocations at its commit: both
        // updates', as the meter counted them.
        let whole = strata::storage_meter().since(&whole).allocations;
        let stats = db.stats().storage_allocations - stats;
        assert_eq!(stats, whole, "{scheme}: the stats count what the meter did");
        // The update is there, under every scheme.
        let mut r = db.begin_read_only().unwrap();
        let row = r.get(&t, &key![2]).unwrap().unwrap();
        assert_eq!(
            (row[4].clone(), row[6].clone()),
            (Value::Int(102), Value::Int(9))
        );
        Cost { heap, meter, stats }
    })
    .join()
    .unwrap()
}

#[test]
fn an_update_allocates_once_under_every_storage_scheme() {
    for scheme in VersionStorage::ALL {
        let c = one_update(scheme);
        assert_eq!(
            c.heap, 1,
            "{scheme}: one block on the heap per update ({c:?})"
        );
        assert_eq!(
            c.meter.allocations, c.heap,
            "{scheme}: the version store counts what the heap saw ({c:?})"
        );
        assert_eq!(
            c.stats,
            2 * c.heap,
            "{scheme}: two such updates in the stats ({c:?})"
        );
        assert!(c.meter.bytes_allocated > 0, "{scheme}: {c:?}");
    }
}
