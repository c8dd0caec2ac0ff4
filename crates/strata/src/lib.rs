//! # Strata
//!
//! An in-memory multi-version concurrency control (MVCC) transaction engine,
//! and a laboratory for the MVCC design space of Wu et al. (VLDB 2017),
//! ERMIA (SIGMOD 2016), vDriver (SIGMOD 2020) and MV-PBT.
//!
//! ```
//! use strata::{key, row, Database, Options, Schema, Type, Value};
//!
//! let db = Database::open(Options::default())?;
//! let accounts = db.create_table(
//!     Schema::new("accounts")
//!         .column("id", Type::Int)
//!         .column("balance", Type::Int)
//!         .column("name", Type::Text)
//!         .primary_key(&["id"]),
//! )?;
//! let mut txn = db.begin()?;
//! txn.insert(&accounts, row![1, 100, "alice"])?;
//! txn.commit()?;
//!
//! db.run(|txn| {
//!     let row = txn.get(&accounts, &key![1])?.expect("inserted above");
//!     let balance = row[1].as_int().unwrap();
//!     txn.update(&accounts, &key![1], &[("balance", Value::Int(balance - 10))])
//! })?;
//!
//! let mut ro = db.begin_read_only()?;
//! assert_eq!(ro.get(&accounts, &key![1])?.unwrap()[1], Value::Int(90));
//! # Ok::<(), strata::Error>(())
//! ```
//!
//! See `docs/ARCHITECTURE.md` for the map of modules and how a transaction
//! flows through them.

#[cfg(feature = "lab")]
pub mod ab;
mod breakdown;
mod cc;
mod db;
mod error;
mod gc;
mod index;
mod log;
pub mod matrix;
mod options;
mod prefetch;
mod presets;
#[cfg(feature = "serde")]
pub mod serde_row;
mod stats;
mod storage;
#[doc(hidden)]
pub mod sync;
mod table;
#[cfg(test)]
mod test_util;
mod tid;
mod trace;
mod txn;
mod typed;
mod types;
mod value;

pub use breakdown::TimeBreakdown;
pub use db::{backoff, Alter, BackupReport, Database};
pub use error::{ConflictKind, Error, IoError, Result};
pub use index::secondary::Unique;
pub use log::{CommitTicket, LogSegment, LogStats, RecoveryReport, TornTail};
pub use options::{
    Backoff, Durability, GcPolicy, IndexKind, IndexPointers, LogGranularity, LogTuning,
    MemorySpaces, MvtoLockedRead, NonInline, Options, Protocol, SiroTuning, SyncPolicy,
    VersionStorage, WriteInstall,
};
pub use presets::{presets_markdown, Preset, PresetInfo};
pub use stats::{MvPbtStats, SiroStats, Stats};
/// `f` of every version of the row at `key` in `t`, newest first (none if
/// the key is absent), under an epoch pin: what `internals` and the model
/// tests read of a chain.
#[cfg(any(feature = "lab", strata_model))]
fn chain_versions<T>(
    t: &Table,
    key: &Key,
    mut f: impl FnMut(&storage::version::Version) -> T,
) -> Vec<T> {
    let ti = &*t.inner;
    let Some(tuple) = ti.index.get(&ti.encode(key)) else {
        return Vec::new();
    };
    let _pinned = crossbeam_epoch::pin();
    storage::versions(ti, tuple, storage::Span::ALL)
        // SAFETY: pinned: a version reached from the chain stays alive.
        .map(|v| f(unsafe { &*v }))
        .collect()
}

/// Engine internals for the examples and the tests; not part of the API:
/// the ordered indexes' B+-tree and the key encoding it orders (for
/// `examples/ordered_index.rs`, the measurement against the skip list it
/// replaced), a row's committed versions and a key's byte encoding.
#[doc(hidden)]
#[cfg(feature = "lab")]
pub mod internals {
    pub use crate::index::btree::{BTree, Key as TreeKey};
    pub use crate::index::key::order_word_whole;

    /// The committed versions of the row at `key` in `t`, oldest first
    /// (none if the key is absent): the store's version order, which the
    /// history checker takes to order blind writes
    /// (`strata_verify::History::version_orders`). Complete only where no
    /// version was reclaimed (`GcPolicy::None`).
    pub fn committed_versions(t: &crate::Table, key: &crate::Key) -> Vec<Vec<crate::Value>> {
        use crate::storage::version::TID_MARK;
        use std::sync::atomic::Ordering::SeqCst;
        let mut rows: Vec<(u64, Vec<crate::Value>)> = crate::chain_versions(t, key, |r| {
            let begin = r.begin.load(SeqCst);
            (begin & TID_MARK == 0 && !r.is_tombstone()).then(|| {
                (
                    begin,
                    crate::storage::with_values(r, <[crate::Value]>::to_vec),
                )
            })
        })
        .into_iter()
        .flatten()
        .collect();
        rows.sort_by_key(|&(begin, _)| begin);
        rows.into_iter().map(|(_, row)| row).collect()
    }

    /// The byte encoding of `key` as the ordered indexes store it.
    pub fn encode_key(key: &crate::Key) -> Vec<u8> {
        match crate::index::key::encode(key, false) {
            crate::index::key::EncodedKey::Bytes(b) => b.to_vec(),
            crate::index::key::EncodedKey::U64(_) => unreachable!("byte form asked for"),
        }
    }
}
/// What the version store did on the calling thread so far: blocks it
/// allocated and their bytes, bytes it retired, cells reads decoded
/// (`storage::meter`). Per thread and per process, whatever the database:
/// take a reading before and after the work to measure and subtract
/// ([`StorageMeter::since`]). `Stats` has the per-database sums.
pub use storage::meter::{this_thread as storage_meter, Meter as StorageMeter};

/// Writes to cache lines more than one thread wrote, by call site: the
/// counting build's measurement (`RUSTFLAGS="--cfg strata_count"`, see
/// `sync::counting`; `strata bench ycsb|tpcc --shared-writes`). In every
/// other build [`shared_writes::ENABLED`] is false and nothing is counted.
pub mod shared_writes {
    /// Whether this is the counting build.
    pub const ENABLED: bool = cfg!(strata_count);

    #[cfg(strata_count)]
    pub use crate::sync::counting::{report, reset};
    pub use crate::sync::SiteWrites;

    /// Starts a new window (nothing outside the counting build).
    #[cfg(not(strata_count))]
    pub fn reset() {}

    /// The window's writes by site (empty outside the counting build).
    #[cfg(not(strata_count))]
    pub fn report() -> Vec<SiteWrites> {
        Vec::new()
    }
}

#[cfg(all(strata_model, strata_count))]
compile_error!("the model build and the counting build are separate: set one cfg");
/// Memory spaces not yet released in the whole process (a space outlives
/// its database while epoch-deferred frees still hold slots of it): tests
/// check with it that every version and record slot is freed.
#[doc(hidden)]
pub use storage::space::live_spaces;
pub use storage::space::SpaceStats;
pub use table::{Index, Table};
pub use txn::{IndexRange, Range, Snapshot, Transaction};
pub use typed::{FromValue, NamedRow};
/// Bytes of tuple header per version (write lock, begin, end, chain pointer
/// and two protocol words); the row image is extra.
pub const VERSION_HEADER_BYTES: usize = storage::version::HEADER_BYTES;

pub use value::{Column, ColumnRef, Key, PointLookups, Row, Schema, Text, Type, Value};

/// The engine pieces the shuttle model tests (`tests/*model.rs`) call, and
/// their switches; only in the model build (see `sync`).
#[cfg(strata_model)]
#[doc(hidden)]
pub mod model {
    pub use crate::index::btree::{BTree, Key as TreeKey};
    pub use crate::log::buffer::{counter, LogBuffer};
    pub use crate::log::record::{parse_header, seal, skip_record, CommitBuilder, KIND_SKIP};
    pub use crate::storage::append_only::{cooperate, o2n_prune};
    pub use crate::storage::dead_zones::DeadZones;
    pub use crate::storage::delta::Deltas;
    pub use crate::storage::in_place::{
        install, toggle_back, undo, values_of, Master, Projected, Records,
    };
    pub use crate::storage::meter::Gauged;
    pub use crate::storage::siro::{CutEvent, CutterTas, Handover, RowState};
    pub use crate::storage::time_travel::FullCopies;
    pub use crate::storage::version::{Version, INF_TS, TID_MARK};
    pub use crate::storage::Alloc;
    pub use crate::sync::model::{caught, take_logged, take_retired, with_broken};
    pub use crate::sync::{Break, Logged};
    pub use crate::tid::{Status, TidTable};
    pub use crossbeam_epoch::pin;
    /// COOP's pause lock (`Coop::passes`).
    pub type Passes = parking_lot::RwLock<()>;

    /// One version's header words and row image, as a model reads them.
    #[derive(Debug, Clone, PartialEq)]
    pub struct Words {
        pub txn_id: u64,
        pub begin: u64,
        pub end: u64,
        pub cc_words: [u64; 2],
        pub row: Vec<crate::Value>,
    }

    /// The versions of the row at `key` in `t`, newest first (none if the
    /// key is absent): what a model checks of a chain.
    pub fn chain(t: &crate::Table, key: &crate::Key) -> Vec<Words> {
        use crate::sync::atomic::Ordering::SeqCst;
        crate::chain_versions(t, key, |r| Words {
            txn_id: r.txn_id.load(SeqCst),
            begin: r.begin.load(SeqCst),
            end: r.end.load(SeqCst),
            cc_words: [r.cc_words[0].load(SeqCst), r.cc_words[1].load(SeqCst)],
            row: crate::storage::with_values(r, <[crate::Value]>::to_vec),
        })
    }
}

/// The README's examples, compiled and run as doc-tests (`cargo test`), so
/// that they cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExamples;

/// docs/DURABILITY.md's example, compiled (it names a directory of its own).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/DURABILITY.md")]
pub struct DurabilityExamples;
