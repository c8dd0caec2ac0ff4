//! A table: schema, primary index and indirection array.
//!
//! ```text
//!   key ──PrimaryIndex──> tuple id ──IndirectionArray──> version chain
//! ```

use crate::cc::predicate::ScanRecord;
use crate::gc::vacuum::DirtyBlocks;
use crate::index::key::{encode, EncodedKey};
use crate::index::primary::PrimaryIndex;
use crate::options::{NonInline, VersionStorage};
use crate::storage::indirection::IndirectionArray;
use crate::value::{Key, Schema};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64};
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
    pub rows: IndirectionArray,
    /// MVTO: largest timestamp of a transaction that read a key range or an
    /// absent key here; an insert below it would be a phantom for that reader.
    pub predicate_read_ts: AtomicU64,
    pub dropped: AtomicBool,
    /// SSN/SSI: ranges read by committing and recently committed scanners
    /// (see `cc::predicate`).
    pub scan_log: Mutex<Vec<Arc<ScanRecord>>>,
    /// SSN: largest commit stamp among pruned scan records.
    pub pruned_scan_pstamp: AtomicU64,
    /// Where this table's versions live (`Options::version_storage`).
    pub storage: VersionStorage,
    /// Whether new versions share or copy unchanged text attributes.
    pub non_inline: NonInline,
    /// Secondary indexes (see `index::secondary`).
    pub secondary: crate::index::secondary::TableIndexes,
    /// Tuple-level vacuum: blocks written since the last pass.
    pub dirty: DirtyBlocks,
    /// Cooperative cleaning (O2N): the shared horizon and counter; None
    /// under every other GC policy.
    pub coop: Option<Arc<Coop>>,
    /// The database's memory spaces versions are allocated from; None: the
    /// global allocator (`Options::memory_spaces`).
    pub spaces: Option<Arc<crate::storage::space::SpaceSet>>,
}

/// What cooperating workers share: the last horizon computed (a stale
/// one is lower, so safe) and how many versions they retired.
pub struct Coop {
    pub horizon: AtomicU64,
    pub reclaimed: AtomicU64,
    /// `gc::Common::tuple_passes`: a worker cuts only while it holds it shared.
    pub passes: Arc<parking_lot::RwLock<()>>,
}

impl TableInner {
    pub fn new(id: u32, owner: u64, schema: Schema) -> Self {
        let int_key = schema.int_key();
        let row_prefetch_bytes = (std::mem::size_of::<crate::storage::version::Version>()
            + schema.columns.len() * std::mem::size_of::<crate::value::Value>())
        .min(256);
        TableInner {
            id,
            owner,
            schema,
            int_key,
            row_prefetch_bytes,
            index: PrimaryIndex::new(int_key),
            rows: IndirectionArray::new(),
            predicate_read_ts: AtomicU64::new(0),
            dropped: AtomicBool::new(false),
            scan_log: Mutex::new(Vec::new()),
            pruned_scan_pstamp: AtomicU64::new(0),
            storage: VersionStorage::AppendNewToOld,
            non_inline: NonInline::Shared,
            secondary: Default::default(),
            dirty: DirtyBlocks::default(),
            coop: None,
            spaces: None,
        }
    }

    /// Sets the version storage scheme (before the table is shared).
    pub fn with_storage(mut self, storage: VersionStorage, non_inline: NonInline) -> Self {
        self.storage = storage;
        self.non_inline = non_inline;
        self
    }

    /// Allocates versions from these memory spaces (before the table is
    /// shared).
    pub fn with_spaces(mut self, spaces: Option<Arc<crate::storage::space::SpaceSet>>) -> Self {
        self.spaces = spaces;
        self
    }

    /// Turns on cooperative cleaning (before the table is shared).
    pub fn with_coop(mut self, coop: Option<Arc<Coop>>) -> Self {
        self.coop = coop;
        self
    }

    #[inline]
    pub fn encode(&self, key: &Key) -> EncodedKey {
        encode(key, self.int_key)
    }
}

/// A handle to a table; cheap to clone and to send between threads.
#[derive(Clone)]
pub struct Table {
    pub(crate) inner: Arc<TableInner>,
}

impl Table {
    /// The table's name.
    pub fn name(&self) -> &str {
        &self.inner.schema.name
    }
    /// The table's schema.
    pub fn schema(&self) -> &Schema {
        &self.inner.schema
    }
    /// Position of a column by name.
    pub fn column(&self, name: &str) -> crate::Result<usize> {
        self.inner.schema.column_index(name)
    }
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.name())
            .field("id", &self.inner.id)
            .finish()
    }
}
