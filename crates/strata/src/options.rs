//! Options: one choice per dimension of the MVCC design space.
//!
//! Each dimension is an enum; the engine dispatches with one `match` per
//! operation, which costs nothing measurable next to a cache miss.

use crate::error::{Error, Result};
use crate::txn::tid::MAX_SLOTS;

/// Concurrency control protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// Multi-version timestamp ordering (read timestamps in the header).
    Mvto,
    /// Multi-version optimistic CC (Hekaton-style: snapshot reads, read-set
    /// and scan-set validation at commit).
    Mvocc,
    /// Multi-version two-phase locking, no-wait (reader count + write lock).
    Mv2pl,
    /// Snapshot isolation, first-updater-wins. Not serializable.
    Si,
    /// Snapshot isolation + ERMIA's Serial Safety Net. Serializable.
    SiSsn,
    /// Snapshot isolation + Cahill's serializable SI. Serializable.
    SiSsi,
}

impl Protocol {
    pub const ALL: [Protocol; 6] = [
        Protocol::Mvto,
        Protocol::Mvocc,
        Protocol::Mv2pl,
        Protocol::Si,
        Protocol::SiSsn,
        Protocol::SiSsi,
    ];

    /// Whether committed histories are serializable.
    pub fn is_serializable(self) -> bool {
        !matches!(self, Protocol::Si)
    }

    /// A short stable name (`mvto`, `mvocc`, `mv2pl`, `si`, `ssn`, `ssi`).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Mvto => "mvto",
            Protocol::Mvocc => "mvocc",
            Protocol::Mv2pl => "mv2pl",
            Protocol::Si => "si",
            Protocol::SiSsn => "ssn",
            Protocol::SiSsi => "ssi",
        }
    }
}

impl std::str::FromStr for Protocol {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Protocol::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                Error::InvalidConfig(format!(
                    "unknown protocol {s:?}; expected one of mvto, mvocc, mv2pl, si, ssn, ssi"
                ))
            })
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where versions live and how a chain is ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VersionStorage {
    /// Append-only, chain from newest to oldest (implemented).
    AppendNewToOld,
    /// Append-only, chain from oldest to newest (not implemented yet).
    AppendOldToNew,
    /// Master version in the table, older copies in a time-travel store
    /// (not implemented yet).
    TimeTravel,
    /// Master updated in place, old values of modified attributes in a
    /// delta store (not implemented yet).
    Delta,
}

/// Garbage collection policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GcPolicy {
    /// Never reclaim versions (memory grows with every update).
    None,
    /// Transaction-level, epoch-based (implemented).
    TransactionLevel,
    /// Tuple-level background vacuuming (not implemented yet).
    Vacuum,
    /// Tuple-level cooperative cleaning (not implemented yet).
    Cooperative,
}

/// What index entries point at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexPointers {
    /// Secondary entries hold the tuple id (into the indirection array).
    LogicalTupleId,
    /// Secondary entries hold the primary key, looked up in the primary
    /// index.
    LogicalPrimaryKey,
    /// Secondary entries point at versions; every new version enters every
    /// secondary index. Needs append-only version storage.
    Physical,
}

/// Database options; `Options::default()` is the best overall configuration
/// (SI+SSN, append-only N2O, transaction-level GC, tuple-id indirection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub protocol: Protocol,
    pub version_storage: VersionStorage,
    pub gc: GcPolicy,
    pub index_pointers: IndexPointers,
    /// Most transactions that may be open at once (each holds one slot of
    /// the transaction table).
    pub max_open_transactions: usize,
    /// Transaction-level GC runs after every this many commits on a thread.
    pub gc_every_commits: u32,
    /// A background thread also runs a GC pass every this often (the
    /// epoch length of transaction-level GC), so an idle database gives its
    /// garbage back too; `None` disables the thread.
    pub gc_interval: Option<std::time::Duration>,
    /// `Database::run` gives up after this many conflicts in a row.
    pub max_retries: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            protocol: Protocol::SiSsn,
            version_storage: VersionStorage::AppendNewToOld,
            gc: GcPolicy::TransactionLevel,
            index_pointers: IndexPointers::LogicalTupleId,
            max_open_transactions: 4096,
            gc_every_commits: 16,
            gc_interval: Some(std::time::Duration::from_millis(40)),
            max_retries: 1000,
        }
    }
}

impl Options {
    pub fn protocol(mut self, p: Protocol) -> Self {
        self.protocol = p;
        self
    }
    pub fn version_storage(mut self, v: VersionStorage) -> Self {
        self.version_storage = v;
        self
    }
    pub fn gc(mut self, g: GcPolicy) -> Self {
        self.gc = g;
        self
    }
    pub fn index_pointers(mut self, p: IndexPointers) -> Self {
        self.index_pointers = p;
        self
    }
    pub fn max_open_transactions(mut self, n: usize) -> Self {
        self.max_open_transactions = n;
        self
    }
    pub fn gc_every_commits(mut self, n: u32) -> Self {
        self.gc_every_commits = n;
        self
    }
    pub fn gc_interval(mut self, every: Option<std::time::Duration>) -> Self {
        self.gc_interval = every;
        self
    }
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    /// Refuses impossible combinations and parts not implemented yet.
    pub fn validate(&self) -> Result<()> {
        if self.max_open_transactions == 0 || self.max_open_transactions > MAX_SLOTS {
            return Err(Error::InvalidConfig(format!(
                "max_open_transactions must be in 1..={MAX_SLOTS}, got {}",
                self.max_open_transactions
            )));
        }
        if self.gc_interval.is_some_and(|d| d.is_zero()) {
            return Err(Error::InvalidConfig(
                "gc_interval must be longer than zero (use None to turn the GC thread off)".into(),
            ));
        }
        if self.gc_every_commits == 0 {
            return Err(Error::InvalidConfig(
                "gc_every_commits must be at least 1".into(),
            ));
        }
        if self.index_pointers == IndexPointers::Physical
            && !matches!(
                self.version_storage,
                VersionStorage::AppendNewToOld | VersionStorage::AppendOldToNew
            )
        {
            return Err(Error::InvalidConfig(format!(
                "physical index pointers need append-only version storage (AppendNewToOld or AppendOldToNew), got {:?}: with in-place storage an index entry cannot point at a fixed version",
                self.version_storage
            )));
        }
        if self.version_storage != VersionStorage::AppendNewToOld {
            return Err(Error::InvalidConfig(format!(
                "version storage {:?} is not implemented yet; only AppendNewToOld is",
                self.version_storage
            )));
        }
        if !matches!(self.gc, GcPolicy::None | GcPolicy::TransactionLevel) {
            return Err(Error::InvalidConfig(format!(
                "garbage collection {:?} is not implemented yet; use TransactionLevel or None",
                self.gc
            )));
        }
        Ok(())
    }
}
