//! A table: schema, primary index and indirection array.
//!
//! ```text
//!   key ──PrimaryIndex──> tuple id ──IndirectionArray──> version chain
//! ```

use crate::cc::predicate::ScanRecord;
use crate::index::key::{encode, EncodedKey};
use crate::index::primary::PrimaryIndex;
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
    /// Secondary indexes (see `index::secondary`).
    pub secondary: crate::index::secondary::TableIndexes,
}

impl TableInner {
    pub fn new(id: u32, owner: u64, schema: Schema) -> Self {
        let int_key = schema.int_key();
        TableInner {
            id,
            owner,
            schema,
            int_key,
            index: PrimaryIndex::new(int_key),
            rows: IndirectionArray::new(),
            predicate_read_ts: AtomicU64::new(0),
            dropped: AtomicBool::new(false),
            scan_log: Mutex::new(Vec::new()),
            pruned_scan_pstamp: AtomicU64::new(0),
            secondary: Default::default(),
        }
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
