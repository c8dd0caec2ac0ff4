//! The public handles: [`Table`] and [`Index`]. Both are an `Arc` of the
//! structure they name (`index::table::TableInner`,
//! `index::secondary::SecondaryIndex`), so they are cheap to clone and to
//! send between threads, and a handle kept after a drop stays memory-safe
//! (operations on it fail with `Error::TableDropped` or `Error::Schema`).
//!
//! ```text
//!  Table ──Arc──> TableInner { schema, PrimaryIndex, Store, secondaries }
//!  Index ──Arc──> SecondaryIndex, plus the Table it indexes
//! ```

use crate::index::secondary::SecondaryIndex;
pub(crate) use crate::index::table::TableInner;
use crate::value::Schema;
use std::sync::Arc;

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

/// A handle to a secondary index; cheap to clone, like [`Table`].
#[derive(Clone)]
pub struct Index {
    pub(crate) inner: Arc<SecondaryIndex>,
    pub(crate) table: Table,
}

impl Index {
    /// The index's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }
    /// Names of the indexed columns, in key order.
    pub fn columns(&self) -> &[String] {
        &self.inner.column_names
    }
    /// True for a unique index.
    pub fn is_unique(&self) -> bool {
        self.inner.unique
    }
    /// The index's structure (`Database::create_index_as`).
    pub fn kind(&self) -> crate::IndexKind {
        self.inner.kind
    }
    /// The indexed table.
    pub fn table(&self) -> &Table {
        &self.table
    }
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("name", &self.inner.name)
            .field("table", &self.table.name())
            .field("columns", &self.inner.column_names)
            .field("unique", &self.inner.unique)
            .finish()
    }
}
