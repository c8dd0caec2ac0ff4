//! A table's physical structure: schema, primary index, secondary indexes
//! and version store (its public handle is `crate::table::Table`).
//!
//! ```text
//!   key ──PrimaryIndex──> tuple id ──Store (indirection array)──> version chain
//! ```
//!
//! The table dereferences to its [`Store`]: storage functions take the
//! store, and a caller holding the table passes it as is.
//!
//! It lives in `index` because the index schemes work on it (a secondary
//! index resolves entries through the table's primary index and store), and
//! everything above (`gc`, `cc`, `txn`) reaches it through `crate::table`.
//! Invariant: a table's id, schema and index scheme never change after it
//! is shared; `dropped` only goes from false to true.

use crate::index::key::{encode, EncodedKey};
use crate::index::primary::PrimaryIndex;
use crate::index::scan_log::ScanLog;
use crate::options::{NonInline, VersionStorage};
use crate::storage::dirty::DirtyBlocks;
use crate::storage::{Coop, Store};
use crate::value::{Key, Schema};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

pub struct TableInner {
    pub id: u32,
    /// Id of the database that owns the table.
    pub owner: u64,
    pub schema: Schema,
    pub int_key: bool,
    /// Bytes of a version to prefetch ahead of a point read: the header and
    /// the row image, up to four cache lines.
    pub row_prefetch_bytes: usize,
    pub index: PrimaryIndex,
    /// Tuple slots and versions (`t.rows`, `t.scheme`, ... through `Deref`).
    pub store: Store,
    /// MVTO: largest timestamp of a transaction that read a key range or an
    /// absent key here; an insert below it would be a phantom for that reader.
    pub predicate_read_ts: AtomicU64,
    /// Set by `Database::drop_table`; a committer that wrote here checks
    /// it after announcing itself (`crate::sync`'s: a step of the shuttle
    /// model `drop_table_orders_or_refuses_every_commit`).
    pub dropped: crate::sync::atomic::AtomicBool,
    /// SSN/SSI: ranges read by committing and recently committed scanners
    /// (see `index::scan_log`, `cc::predicate`).
    pub scan_log: ScanLog,
    /// Secondary indexes (see `index::secondary`).
    pub secondary: crate::index::secondary::TableIndexes,
    /// Tuple-level vacuum: blocks written since the last pass.
    pub dirty: DirtyBlocks,
}

impl std::ops::Deref for TableInner {
    type Target = Store;

    #[inline]
    fn deref(&self) -> &Store {
        &self.store
    }
}

impl TableInner {
    pub fn new(id: u32, owner: u64, schema: Schema) -> Self {
        let int_key = schema.int_key();
        let point = schema.point_lookups;
        let columns = schema.columns.len();
        let row_prefetch_bytes = (std::mem::size_of::<crate::storage::version::Version>()
            + schema.columns.len() * std::mem::size_of::<crate::value::Value>())
        .min(256);
        TableInner {
            id,
            owner,
            schema,
            int_key,
            row_prefetch_bytes,
            index: PrimaryIndex::new(int_key, point),
            store: Store::new(columns),
            predicate_read_ts: AtomicU64::new(0),
            dropped: crate::sync::atomic::AtomicBool::new(false),
            scan_log: ScanLog::default(),
            secondary: Default::default(),
            dirty: DirtyBlocks::default(),
        }
    }

    /// Sets the version storage scheme (before the table is shared).
    pub fn with_storage(mut self, storage: VersionStorage, non_inline: NonInline) -> Self {
        self.store.scheme = storage;
        self.store.non_inline = non_inline;
        self
    }

    /// Allocates versions from these memory spaces (before the table is
    /// shared).
    pub fn with_spaces(mut self, spaces: Option<Arc<crate::storage::space::SpaceSet>>) -> Self {
        self.store.spaces = spaces;
        self
    }

    /// Sets up SIRO's segments when the table uses it (before the table is
    /// shared).
    pub fn with_siro(mut self, tuning: &crate::options::SiroTuning) -> Self {
        if self.store.scheme == VersionStorage::Siro {
            self.store.siro = Some(Arc::new(crate::storage::siro::Siro::new(tuning.clone())));
        }
        self
    }

    /// Turns on cooperative cleaning (before the table is shared).
    pub fn with_coop(mut self, coop: Option<Arc<Coop>>) -> Self {
        self.store.coop = coop;
        self
    }

    #[inline]
    pub fn encode(&self, key: &Key) -> EncodedKey {
        encode(key, self.int_key)
    }
}
