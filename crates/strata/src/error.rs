//! Typed errors. Every failure a caller can cause or must react to is a
//! variant here; the engine never panics on bad input.

use crate::types::Type;
use std::fmt;

/// Why a transaction was refused by its concurrency control protocol.
///
/// A conflict is never the caller's fault: the transaction has been rolled
/// back and may simply be retried (see [`crate::Database::run`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum ConflictKind {
    /// Another transaction holds the write lock on the row, or (snapshot
    /// isolation) committed a newer version after our snapshot.
    WriteWrite,
    /// A version read by an optimistic transaction changed before commit,
    /// or a scanned range gained or lost rows (phantom).
    Validation,
    /// MV2PL: the row is write-locked (for a read) or read-locked by others
    /// (for a write); no-wait aborts instead of blocking.
    ReadLock,
    /// MVTO: the operation would break timestamp order.
    TimestampOrder,
    /// SI+SSN: the transaction's exclusion window was violated
    /// (successor low watermark <= predecessor high watermark).
    SsnExclusion,
    /// SI+SSN, before commit (`Options::ssn_early_exclusion`): a read or an
    /// overwrite already closed the exclusion window, so the commit-time
    /// test could only fail; the transaction stops at once.
    SsnEarlyExclusion,
    /// SI+SSI: the transaction is the pivot of a dangerous structure
    /// (it has both an incoming and an outgoing rw-antidependency).
    DangerousStructure,
}

impl ConflictKind {
    /// All kinds, in the order [`crate::Stats`] reports them.
    pub const ALL: [ConflictKind; 7] = [
        ConflictKind::WriteWrite,
        ConflictKind::Validation,
        ConflictKind::ReadLock,
        ConflictKind::TimestampOrder,
        ConflictKind::SsnExclusion,
        ConflictKind::SsnEarlyExclusion,
        ConflictKind::DangerousStructure,
    ];

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// A short stable name, used in stats and CSV output.
    pub fn name(self) -> &'static str {
        match self {
            ConflictKind::WriteWrite => "write-write",
            ConflictKind::Validation => "validation",
            ConflictKind::ReadLock => "read-lock",
            ConflictKind::TimestampOrder => "timestamp-order",
            ConflictKind::SsnExclusion => "ssn-exclusion",
            ConflictKind::SsnEarlyExclusion => "ssn-early-exclusion",
            ConflictKind::DangerousStructure => "dangerous-structure",
        }
    }
}

impl fmt::Display for ConflictKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Errors returned by Strata. New variants may be added: match the ones
/// you branch on and keep a wildcard arm.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The transaction lost a conflict and has been rolled back.
    #[error("transaction conflict ({0}); the transaction was rolled back and may be retried")]
    Conflict(ConflictKind),
    /// An insert (or a unique index) found the key already present.
    #[error("duplicate key in {table}: {key}")]
    DuplicateKey { table: String, key: String },
    /// An update or delete named a row that does not exist (or is not
    /// visible to the transaction).
    #[error("no row with key {key} in {table}")]
    NotFound { table: String, key: String },
    /// No table of this name (it was never created, or it was dropped
    /// before the call looked it up).
    #[error("no table named {table}")]
    NoSuchTable { table: String },
    /// `create_table` of a name a table already has (see
    /// `Database::open_table` for open-or-create).
    #[error("table {table} already exists")]
    TableExists { table: String },
    /// A column name the table does not have.
    #[error("table {table} has no column {column}")]
    NoSuchColumn { table: String, column: String },
    /// No index of this name.
    #[error("no index named {index}")]
    NoSuchIndex { index: String },
    /// `create_index` of a name an index already has.
    #[error("index {index} already exists")]
    IndexExists { index: String },
    /// `Database::alter_table` would drop a column a secondary index keys
    /// on: drop the index first (nothing was changed).
    #[error(
        "column {table}.{column} is in index {index}: drop the index before dropping the column"
    )]
    ColumnIndexed {
        table: String,
        column: String,
        index: String,
    },
    /// A schema that cannot be (wrong arity, a key naming a column twice,
    /// too many columns, a table from another database ...): says what.
    #[error("schema error: {0}")]
    Schema(String),
    /// A value (in a row, an update or a key) is not of its column's type.
    #[error("type mismatch: column {table}.{column} is {expected}, got a value of type {found}")]
    TypeMismatch {
        table: String,
        column: String,
        expected: Type,
        found: Type,
    },
    /// `Database::open_table` found the table with another schema: the
    /// first difference, the stored table's side first.
    #[error("table {table} exists with another schema: {difference}")]
    SchemaMismatch { table: String, difference: String },
    /// A column's value read as a Rust type it does not convert into
    /// (`Table::value`, `NamedRow::get`): another type, a null read as a
    /// non-`Option`, or an integer out of the type's range.
    #[error("column {table}.{column} holds {found}, which cannot be read as {wanted}")]
    ColumnValue {
        table: String,
        column: String,
        found: &'static str,
        wanted: &'static str,
    },
    /// A `Null` (in a row, an update or a key) for a column that is not
    /// nullable.
    #[error("column {table}.{column} is not nullable, got a null")]
    NullNotAllowed { table: String, column: String },
    /// `serde_row`: a struct could not be turned into a row or a row into
    /// a struct (a field type with no column type, a value the field cannot
    /// take, a row of another length); says what.
    #[error("row mapping: {0}")]
    RowMapping(String),
    /// The table was dropped: by the time of the call, or (for `commit`)
    /// after the transaction wrote to it and before it committed. The
    /// transaction has been rolled back (a commit that is not refused is
    /// ordered before the drop).
    #[error("table {table} was dropped")]
    TableDropped { table: String },
    /// The options given to [`crate::Database::open`] are invalid or name a
    /// part of the design space that is not implemented yet.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// The transaction has already committed or aborted.
    #[error("transaction misuse: the transaction has already finished")]
    TransactionFinished,
    /// A write in a transaction begun READ ONLY.
    #[error("transaction misuse: write in a read-only transaction")]
    WriteInReadOnlyTransaction,
    /// Another misuse of a transaction or the API: says what.
    #[error("transaction misuse: {0}")]
    Misuse(String),
    /// The operating system refused something the engine needed (a file, a
    /// write, an fsync, disk space, a thread). `source` is the system's
    /// error (`source.kind()`), `context` what the engine was doing.
    #[error("I/O error: {context}: {source}")]
    Io {
        context: String,
        #[source]
        source: IoError,
    },
    /// The database directory is held by another open database (in this
    /// process or another): one directory, one writer.
    #[error("database directory {} is locked by another open database (process)", .path.display())]
    Locked { path: std::path::PathBuf },
    /// The database turned read-only after its log failed (a write or
    /// fsync error, a full disk): reads go on, writes are refused. The
    /// cause is `Database::read_only_reason`.
    #[error("the database is read-only after a log failure: {reason}")]
    ReadOnly { reason: String },
    /// Durable state on disk is damaged or inconsistent: says what and where.
    /// Recovery refuses to guess rather than lose data silently.
    #[error("corrupt database files: {0}")]
    Corrupt(String),
    /// A database file is in an on-disk format this version does not read
    /// (written by another Strata version): says which file and format.
    /// Nothing was changed; open it with the version that wrote it.
    #[error("unsupported database file format: {0}")]
    UnsupportedFormat(String),
    /// More transactions are open at once than `Options::max_open_transactions`.
    #[error("too many open transactions (limit {0}); finish some or raise Options::max_open_transactions")]
    TooManyTransactions(usize),
    /// An insert or update found the database over
    /// `Options::memory_limit` (its rows, their versions and payloads,
    /// index entries), after a garbage-collection pass: nothing was
    /// written (the transaction stays open; reads, deletes and its commit
    /// go on).
    #[error("memory limit reached: rows, versions and index entries hold {in_use} bytes, limit {limit}; delete rows, end long transactions, or raise Options::memory_limit")]
    MemoryLimit { in_use: u64, limit: u64 },
}

impl Error {
    /// True for errors after which retrying the whole transaction may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Conflict(_))
    }

    /// An [`Error::Io`]: `context` says what the engine was doing.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source: IoError(std::sync::Arc::new(source)),
        }
    }

    /// The `std::io::ErrorKind` of an [`Error::Io`].
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        match self {
            Error::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }
}

/// The system's error inside an [`Error::Io`]: a `std::io::Error`, shared
/// so that `Error` stays `Clone`. Two are equal when their kinds and
/// messages are (a `std::io::Error` has no equality of its own).
#[derive(Debug, Clone)]
pub struct IoError(pub std::sync::Arc<std::io::Error>);

impl std::ops::Deref for IoError {
    type Target = std::io::Error;
    fn deref(&self) -> &std::io::Error {
        &self.0
    }
}

impl PartialEq for IoError {
    fn eq(&self, o: &IoError) -> bool {
        self.0.kind() == o.0.kind() && self.0.to_string() == o.0.to_string()
    }
}

impl Eq for IoError {}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for IoError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
