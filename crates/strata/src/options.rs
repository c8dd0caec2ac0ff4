//! Options: one choice per dimension of the MVCC design space.
//!
//! Each dimension is an enum; the engine dispatches with one `match` per
//! operation, which costs nothing measurable next to a cache miss.

use crate::error::{Error, Result};

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
    /// Silo-style single-version OCC (Tu et al., SOSP 2013; ERMIA's
    /// "Silo-OCC" baseline): reads see the newest committed version, the
    /// read set and scan set are validated at commit, read-only
    /// transactions included. Serializable.
    Occ,
}

impl Protocol {
    pub const ALL: [Protocol; 7] = [
        Protocol::Mvto,
        Protocol::Mvocc,
        Protocol::Mv2pl,
        Protocol::Si,
        Protocol::SiSsn,
        Protocol::SiSsi,
        Protocol::Occ,
    ];

    /// Whether committed histories are serializable.
    pub fn is_serializable(self) -> bool {
        match self {
            Protocol::Mvto
            | Protocol::Mvocc
            | Protocol::Mv2pl
            | Protocol::SiSsn
            | Protocol::SiSsi
            | Protocol::Occ => true,
            Protocol::Si => false,
        }
    }

    /// A short stable name (`mvto`, `mvocc`, `mv2pl`, `si`, `ssn`, `ssi`,
    /// `occ`).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Mvto => "mvto",
            Protocol::Mvocc => "mvocc",
            Protocol::Mv2pl => "mv2pl",
            Protocol::Si => "si",
            Protocol::SiSsn => "ssn",
            Protocol::SiSsi => "ssi",
            Protocol::Occ => "occ",
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
                    "unknown protocol {s:?}; expected one of mvto, mvocc, mv2pl, si, ssn, ssi, occ"
                ))
            })
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where versions live and how a chain is ordered (see `storage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VersionStorage {
    /// Append-only, chain from newest to oldest; the indirection slot points
    /// at the newest version.
    AppendNewToOld,
    /// Append-only, chain from oldest to newest; the indirection slot points
    /// at the oldest version, writers append at the tail, GC moves the slot
    /// forward.
    AppendOldToNew,
    /// Master version in the table, updated in place (seqlock); on update
    /// the old master is copied into a time-travel store.
    TimeTravel,
    /// Master updated in place (seqlock); the old values of only the
    /// modified attributes go to a delta record in a delta store.
    Delta,
    /// vDriver's SIRO versioning (`storage::siro`): the current version
    /// and one previous version in-row, older ones relocated into
    /// classified version segments (HOT / COLD / LLT), pruned by dead
    /// zones at relocation and a segment at a time. Needs
    /// `GcPolicy::DeadZone`.
    Siro,
}

impl VersionStorage {
    pub const ALL: [VersionStorage; 5] = [
        VersionStorage::AppendNewToOld,
        VersionStorage::AppendOldToNew,
        VersionStorage::TimeTravel,
        VersionStorage::Delta,
        VersionStorage::Siro,
    ];

    /// Whether every version is a separate, immutable row image (the
    /// append-only schemes), as opposed to a master updated in place.
    pub fn is_append_only(self) -> bool {
        // Exhaustive (no `matches!` with its hidden wildcard): a new scheme
        // must say which kind it is.
        match self {
            VersionStorage::AppendNewToOld | VersionStorage::AppendOldToNew => true,
            VersionStorage::TimeTravel | VersionStorage::Delta | VersionStorage::Siro => false,
        }
    }

    /// A short stable name (`n2o`, `o2n`, `time-travel`, `delta`, `siro`).
    pub fn name(self) -> &'static str {
        match self {
            VersionStorage::AppendNewToOld => "n2o",
            VersionStorage::AppendOldToNew => "o2n",
            VersionStorage::TimeTravel => "time-travel",
            VersionStorage::Delta => "delta",
            VersionStorage::Siro => "siro",
        }
    }
}

impl std::str::FromStr for VersionStorage {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        VersionStorage::ALL
            .into_iter()
            .find(|v| v.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                Error::InvalidConfig(format!(
                    "unknown version storage {s:?}; expected one of n2o, o2n, time-travel, delta, siro"
                ))
            })
    }
}

impl std::fmt::Display for VersionStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a new version holds the non-inline (text and bytes) attributes it did not
/// change (the Peloton study's Fig. 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NonInline {
    /// Shared with the version before by reference count (one allocation).
    #[default]
    Shared,
    /// Copied in full into every new version (and every time-travel copy).
    Copy,
}

/// What an MVTO read does when the version it would read is write-locked
/// by another transaction that is still running (see `cc::mvto`).
///
/// ```text
///  T(ts 20) reads x:   x1 [locked by W]  <- W is writing x2 above it
///   Abort (the paper):           abort T, whatever W's timestamp
///   AbortIfOlderHolder:  W.ts < 20 -> abort T (x2 may be the version T must see)
///                        W.ts > 20 -> read x1 (x2 is invisible at 20 anyway)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MvtoLockedRead {
    /// Wu et al. §3.1: "The DBMS aborts a transaction that attempts to
    /// read or update a version whose write lock is held by another
    /// transaction" (the study's Peloton: a read that finds the version
    /// owned fails). The default, so every run of MVTO is the study's
    /// unless it asks otherwise.
    #[default]
    Abort,
    /// Strata's refinement: abort only if the holder is older than the
    /// reader. A younger holder's version will be stamped above the
    /// reader's timestamp, so the locked version is the right one to read,
    /// and the holder already passed its read-timestamp check. Fewer
    /// reader aborts under contention; not the protocol the study measured.
    AbortIfOlderHolder,
}

impl MvtoLockedRead {
    pub const ALL: [MvtoLockedRead; 2] =
        [MvtoLockedRead::Abort, MvtoLockedRead::AbortIfOlderHolder];

    /// A short stable name (`abort`, `abort-if-older-holder`).
    pub fn name(self) -> &'static str {
        match self {
            MvtoLockedRead::Abort => "abort",
            MvtoLockedRead::AbortIfOlderHolder => "abort-if-older-holder",
        }
    }
}

impl std::str::FromStr for MvtoLockedRead {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        MvtoLockedRead::ALL
            .into_iter()
            .find(|r| r.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                Error::InvalidConfig(format!(
                    "unknown MVTO locked-read rule {s:?}; expected abort or abort-if-older-holder"
                ))
            })
    }
}

impl std::fmt::Display for MvtoLockedRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// When a write is installed in its row (issue 42, item 4).
///
/// ```text
///  Eager:     begin ─ read ─ update x ══════ x locked ══════ commit
///  AtCommit:  begin ─ read ─ update x (buffered) ─ read ─ install x ═ commit
///                                                         └ x locked ┘
/// ```
///
/// Eager is the papers' engines (Wu et al. §3, ERMIA §3): an update's new
/// version goes on the row as the update runs, and its write lock holds
/// the row until the transaction ends, so two writers of a hot row
/// collide for as long as the first one runs. AtCommit is Silo's and
/// Cicada's: updates and deletes go to a write buffer and are installed
/// after the read phase, right before validation, so a row is held only
/// through the commit. Each protocol's checks run unchanged at the
/// install; a transaction that installs at commit is, to every protocol,
/// one that made its writes last (see `txn::deferred`). Inserts stay
/// eager, and so do writes to a table with a unique secondary index (a
/// duplicate key is an answer the call must give, not its commit).
/// A write the engine can already refuse (absent row, a head the
/// protocol's write check fails) is refused at the call as under Eager;
/// one that loses its row to another writer meanwhile is a retryable
/// conflict at commit. Refused with MV2PL, whose write locks are the
/// protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum WriteInstall {
    /// At the write, holding the row until the end (the default).
    #[default]
    Eager,
    /// Buffered, installed at commit (Silo, Cicada).
    AtCommit,
}

impl WriteInstall {
    pub const ALL: [WriteInstall; 2] = [WriteInstall::Eager, WriteInstall::AtCommit];

    /// A short stable name (`eager`, `at-commit`).
    pub fn name(self) -> &'static str {
        match self {
            WriteInstall::Eager => "eager",
            WriteInstall::AtCommit => "at-commit",
        }
    }
}

impl std::str::FromStr for WriteInstall {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        WriteInstall::ALL
            .into_iter()
            .find(|w| w.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                Error::InvalidConfig(format!(
                    "unknown write install {s:?}; expected eager or at-commit"
                ))
            })
    }
}

impl std::fmt::Display for WriteInstall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a retried transaction waits after a conflict
/// (`Database::run`, `Database::try_run`,
/// [`Database::backoff_after_conflict`](crate::Database::backoff_after_conflict)).
///
/// ```text
///  Exponential:  wait = random [0, 2^attempt us)          (attempt <= 10)
///  Regulated:    wait = random [0, max_backoff) ; max_backoff hill-climbs
///                on the commit rate every 5 ms (Cicada, Lim et al., SIGMOD 2017)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Backoff {
    /// Randomised exponential backoff per attempt (the default).
    #[default]
    Exponential,
    /// Cicada's contention regulation: one bound per database, moved
    /// up or down by hill climbing on the commit rate (`db::contention`).
    Regulated,
}

impl Backoff {
    pub const ALL: [Backoff; 2] = [Backoff::Exponential, Backoff::Regulated];

    /// A short stable name (`exponential`, `regulated`).
    pub fn name(self) -> &'static str {
        match self {
            Backoff::Exponential => "exponential",
            Backoff::Regulated => "regulated",
        }
    }
}

impl std::str::FromStr for Backoff {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Backoff::ALL
            .into_iter()
            .find(|b| b.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                Error::InvalidConfig(format!(
                    "unknown backoff {s:?}; expected exponential or regulated"
                ))
            })
    }
}

impl std::fmt::Display for Backoff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Garbage collection policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GcPolicy {
    /// Never reclaim versions (memory grows with every update).
    None,
    /// Transaction-level, epoch-based: each commit hands its overwritten
    /// rows to GC, reclaimed once the horizon passes (every
    /// `gc_every_commits` commits and every `gc_interval`).
    TransactionLevel,
    /// Tuple-level background vacuuming (VAC): `gc_threads` threads scan
    /// the tables every `gc_interval`, skipping blocks of tuples the
    /// dirty-block bitmap says nobody wrote (see `gc::vacuum`).
    Vacuum,
    /// Tuple-level cooperative cleaning (COOP, append-only O2N only):
    /// workers retire the obsolete versions they pass; one thread does a
    /// full pass for rows nobody touches every `gc_interval`.
    Cooperative,
    /// VAC's pass that also prunes every version no live snapshot reads,
    /// in the middle of a chain too (vDriver's dead zones, see
    /// `gc::dead_zone`): a long-lived reader keeps its own version of a
    /// row, not every version written since it began.
    DeadZone,
}

impl GcPolicy {
    pub const ALL: [GcPolicy; 5] = [
        GcPolicy::None,
        GcPolicy::TransactionLevel,
        GcPolicy::Vacuum,
        GcPolicy::Cooperative,
        GcPolicy::DeadZone,
    ];

    /// A short stable name (`none`, `txn`, `vac`, `coop`, `dead-zone`).
    pub fn name(self) -> &'static str {
        match self {
            GcPolicy::None => "none",
            GcPolicy::TransactionLevel => "txn",
            GcPolicy::Vacuum => "vac",
            GcPolicy::Cooperative => "coop",
            GcPolicy::DeadZone => "dead-zone",
        }
    }
}

impl std::str::FromStr for GcPolicy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        GcPolicy::ALL
            .into_iter()
            .find(|g| g.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                Error::InvalidConfig(format!(
                    "unknown garbage collection {s:?}; expected one of none, txn, vac, coop, dead-zone"
                ))
            })
    }
}

impl std::fmt::Display for GcPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
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

impl IndexPointers {
    pub const ALL: [IndexPointers; 3] = [
        IndexPointers::LogicalTupleId,
        IndexPointers::LogicalPrimaryKey,
        IndexPointers::Physical,
    ];
}

/// The structure of one secondary index, chosen per index
/// (`Database::create_index_as`); every other index setting comes from the
/// database's [`Options`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum IndexKind {
    /// Entries lead to rows and storage decides visibility (the scheme of
    /// `Options::index_pointers`; see `index::logical`, `index::physical`).
    #[default]
    Standard,
    /// A multi-version partitioned B-tree (MV-PBT, `index::mvpbt`): version
    /// records stamped by their writers, so a scan decides visibility from
    /// the index alone.
    MvPbt,
}

impl IndexKind {
    pub const ALL: [IndexKind; 2] = [IndexKind::Standard, IndexKind::MvPbt];

    /// Its name in messages and the CLI (`standard`, `mvpbt`).
    pub fn name(self) -> &'static str {
        match self {
            IndexKind::Standard => "standard",
            IndexKind::MvPbt => "mvpbt",
        }
    }
}

impl std::fmt::Display for IndexKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where versions are allocated (the Peloton study's Fig. 16; see
/// `storage::space`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MemorySpaces {
    /// The global allocator (mimalloc in the `strata` binary).
    #[default]
    System,
    /// `count` separate spaces, each growing by chunks of `increment`
    /// bytes (a power of two, at least 4 KiB); thread k allocates from
    /// space k mod `count`, so 1 is one shared space. Freed slots are
    /// reused; chunks go back to the OS when the database is dropped.
    Spaces { count: usize, increment: usize },
}

impl MemorySpaces {
    /// The default chunk size of a space: 512 KiB.
    pub const DEFAULT_INCREMENT: usize = 512 << 10;

    /// `count` spaces of the default increment.
    pub fn spaces(count: usize) -> Self {
        MemorySpaces::Spaces {
            count,
            increment: Self::DEFAULT_INCREMENT,
        }
    }

    /// Number of spaces (0 for the global allocator).
    pub fn count(self) -> usize {
        match self {
            MemorySpaces::System => 0,
            MemorySpaces::Spaces { count, .. } => count,
        }
    }

    fn validate(self) -> Result<()> {
        let MemorySpaces::Spaces { count, increment } = self else {
            return Ok(());
        };
        if count == 0 || count > MAX_SPACES {
            return Err(Error::InvalidConfig(format!(
                "memory spaces: the count must be in 1..={MAX_SPACES}, got {count} \
                 (use MemorySpaces::System for the global allocator)"
            )));
        }
        if !increment.is_power_of_two() || !(MIN_INCREMENT..=MAX_INCREMENT).contains(&increment) {
            return Err(Error::InvalidConfig(format!(
                "memory spaces: the increment must be a power of two in \
                 {MIN_INCREMENT}..={MAX_INCREMENT} bytes, got {increment}"
            )));
        }
        Ok(())
    }
}

/// Smallest accepted memory-space increment.
pub const MIN_INCREMENT: usize = 4 << 10;
/// Largest accepted memory-space increment (its log2 must fit the
/// version's 5 bits, `storage::version`).
pub const MAX_INCREMENT: usize = 1 << 30;
/// Most memory spaces accepted.
pub const MAX_SPACES: usize = 1024;
/// Largest accepted `max_open_transactions`: the TID table's capacity
/// (`tid`: a slot index is the low 20 bits of a transaction id).
pub const MAX_OPEN_TRANSACTIONS: usize = 1 << 20;

/// Database options; `Options::default()` is the best overall configuration
/// (SI+SSN, append-only N2O, transaction-level GC, tuple-id indirection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub protocol: Protocol,
    pub version_storage: VersionStorage,
    pub gc: GcPolicy,
    pub index_pointers: IndexPointers,
    /// Whether unchanged text attributes are shared or copied per version.
    pub non_inline: NonInline,
    /// Most transactions that may be open at once (each holds one slot of
    /// the transaction table). Default 4,096; a `begin` past it is
    /// `Error::TooManyTransactions`.
    pub max_open_transactions: usize,
    /// The most bytes the engine's data may hold (None, the default: no
    /// limit). Past it, inserts and updates get `Error::MemoryLimit` after
    /// one garbage-collection pass tried to get under it; reads, deletes
    /// (the way back under it), commits of what was written before, and
    /// `Database::collect_garbage` go on, and nothing committed is lost.
    ///
    /// Counted, handed over by each commit, abort and collector pass (so a
    /// transaction's writes count once it ends, and the limit is checked
    /// before each insert or update, not inside one: a transaction may pass
    /// it by what it writes):
    /// - the blocks the version store allocates (version headers, row
    ///   images, records, masters) less those it retires, exactly;
    /// - the payloads of `Text` and `Bytes` values (their length and the
    ///   16-byte count and length in front of it), once per holder that
    ///   owns one: a version (a text an update carries over unchanged
    ///   stays counted once, by the newest version, which owns it), a
    ///   master's cell, a time-travel copy or delta for the values moved
    ///   out of the master (a copy shares the master's unchanged texts and
    ///   does not count them again). A text shared by holders that each
    ///   own a handle is counted by each: the same `Text` inserted into two
    ///   rows, a column past the 39th carried into a new version, texts
    ///   copied under `NonInline::Copy` (which are real copies);
    /// - primary and secondary index entries, as an estimate per entry
    ///   from its key (a tree slot, the key's bytes when they do not fit
    ///   in place, the hash side's entry), the same when the entry goes;
    /// - MV-PBT indexes' (`IndexKind::MvPbt`) in-memory records, an
    ///   estimate per record from its key (a slot, the key's bytes, the
    ///   record): P_N counts a record as it comes in and gives it back as
    ///   it leaves (a purge, an abort) or with P_N once a freeze replaced
    ///   it; a frozen partition counts its in-memory records and its Bloom
    ///   filters' bytes when it is built and gives them back when it is
    ///   freed (merged away, or its index dropped). A freeze's sealed P_N
    ///   and its frozen form both count while both live. Records spilled
    ///   to a file (`Options::mvpbt_spill_dir`: memory-mapped) are not
    ///   counted, nor those a merge decodes from a file while it runs.
    ///
    /// Once every transaction has ended and GC has collected, what is
    /// counted is what the live rows and their entries hold: it goes back
    /// to where it was when every row is deleted and collected, or a table
    /// dropped and reclaimed (MV-PBT records leave memory at a freeze or a
    /// merge, `Database::freeze_index`, not at a GC pass). Not counted:
    /// MV-PBT's spilled records and partition bookkeeping, the
    /// indirection arrays, the transaction table, the index trees' inner
    /// nodes and free space beyond the estimate, log buffers, SIRO's
    /// segment bookkeeping, and the allocator's own overhead (size
    /// classes, memory spaces' chunks). Memory comes back as GC retires
    /// versions: a deleted row once a pass has unlinked it and a later
    /// commit has moved the clock past the unlink (`gc::limbo`), so where
    /// nothing else commits, commit a write or two after the deletes; a
    /// dropped table's once it is reclaimed (see `Database::drop_table`),
    /// a dropped index's once it is freed. Setting a limit costs each
    /// read-write commit one shared add (`Stats::memory_in_use`), and each
    /// write of a text, byte string or index entry the count of it.
    /// Without one nothing is counted (`Stats::memory_in_use` stays 0) and
    /// nothing of that is paid; to watch the figure with no refusal, set a
    /// limit beyond reach (`u64::MAX >> 1`). Read when the database opens:
    /// whether it counts is fixed for its life.
    pub memory_limit: Option<u64>,
    /// SI+SSN: also apply the exclusion-window test on every read and
    /// overwrite, with the stamps known so far (ERMIA §3.3, the SSN paper's
    /// early check), so a transaction that could only fail its commit test
    /// stops at once (`ConflictKind::SsnEarlyExclusion`). Default on; off
    /// runs the test at commit only. Other protocols ignore it.
    pub ssn_early_exclusion: bool,
    /// SI+SSN: a write to a row the transaction has not read may overwrite
    /// a version committed after its snapshot, instead of aborting by SI's
    /// first-updater-wins rule; SSN's commit test orders the two writers
    /// (the overwritten version's creator is a predecessor), and such a
    /// write that finds the row locked by a committing writer waits for it
    /// rather than aborting. Writes to rows the transaction read, to rows
    /// deleted since its snapshot, and inserts keep the rule, so no update
    /// is lost. Default on; off is ERMIA's SI+SSN as published (its preset
    /// turns it off). Other protocols ignore it.
    pub ssn_blind_writes: bool,
    /// MVTO: a read of a version another running transaction has
    /// write-locked. Default [`MvtoLockedRead::Abort`], the study's rule
    /// (Wu et al. §3.1); [`MvtoLockedRead::AbortIfOlderHolder`] is Strata's
    /// narrower rule. Other protocols ignore it.
    pub mvto_locked_read: MvtoLockedRead,
    /// When updates and deletes are installed in their rows: as they run
    /// (the default) or at commit ([`WriteInstall`]).
    pub write_install: WriteInstall,
    /// How `Database::run` waits between retries ([`Backoff`]).
    pub backoff: Backoff,
    /// Transaction-level GC runs after every this many commits on a thread
    /// (tuple-level GC: the shared horizon is refreshed that often).
    pub gc_every_commits: u32,
    /// Background vacuum threads (`GcPolicy::Vacuum`); each owns every
    /// n-th block of tuples.
    pub gc_threads: usize,
    /// A background thread also runs a GC pass every this often (the
    /// epoch length of transaction-level GC), so an idle database gives its
    /// garbage back too; `None` disables the thread.
    pub gc_interval: Option<std::time::Duration>,
    /// `Database::run` gives up after this many conflicts in a row.
    pub max_retries: u32,
    /// In memory only (the default) or durable through a write-ahead log.
    pub durability: Durability,
    /// Sizes and intervals of the write-ahead log (ignored without one).
    pub log_tuning: LogTuning,
    /// How often a transaction goes to the shared log buffer: once, at
    /// pre-commit, with its whole redo record (ERMIA's log manager, the
    /// default), or once per write (the traditional per-operation logging
    /// ERMIA's Fig. 10 compares against). Needs the write-ahead log.
    pub log_granularity: LogGranularity,
    /// Time each transaction's work by engine component (index, version
    /// read, version install, CC at commit, log, GC; ERMIA's Fig. 11) into
    /// `Database::time_breakdown`. Off by default: then every timing point
    /// is one predictable branch.
    pub time_breakdown: bool,
    /// Where versions are allocated: the global allocator or memory spaces.
    pub memory_spaces: MemorySpaces,
    /// Segment size and classification thresholds of `VersionStorage::Siro`
    /// (ignored by the other schemes).
    pub siro: SiroTuning,
    /// MV-PBT indexes (`IndexKind::MvPbt`): records in the newest, writable
    /// partition P_N before it is frozen into an immutable sorted partition
    /// (MV-PBT §5.5). Small values freeze often (tests force this).
    pub mvpbt_partition_records: usize,
    /// MV-PBT indexes: `None` (the default) keeps frozen partitions in
    /// memory; a directory has each frozen partition's decided records
    /// written to a file there and read through a memory map
    /// (`index::mvpbt_spill`), so an index can outgrow memory. The files
    /// are caches: each open database uses a subdirectory of its own,
    /// removed when it closes; those of processes that ended are removed
    /// at open. A path that exists and is not a directory, or that cannot
    /// be created, is refused at open. A file is unlinked (and its
    /// descriptor closed) as soon as it is mapped and verified, because a
    /// mapped file truncated by another process would kill this one with
    /// SIGBUS on its next read: with no name, nothing can open it. So the
    /// directory lists no spill files while the index uses them, and their
    /// disk space shows in `df`, not `du`, until the partition is merged
    /// away, the database closes, or the process ends (a crash included).
    pub mvpbt_spill_dir: Option<std::path::PathBuf>,
}

/// Tuning of SIRO version storage (vDriver, §3.3 and §5.2.6; see
/// `storage::siro`). The paper's thresholds are in wall-clock time
/// ("a multiple of an average transaction length / update interval");
/// Strata's timestamps are commit counts, so both are in commits: a
/// snapshot is long-lived once `llt_commits` transactions committed after
/// it began, and a version is hot when it was overwritten within
/// `hot_commits` commits of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiroTuning {
    /// Bytes of version images per segment before it is sealed (the
    /// paper's default, 64 KiB, is also its smallest, Fig. 19).
    pub segment_bytes: usize,
    /// δ_hot: a version whose lifetime (`end - begin`) is shorter is HOT,
    /// else COLD.
    pub hot_commits: u64,
    /// δ_LLT: a snapshot older than this many commits is a long-lived
    /// transaction; a version it reads is classified LLT.
    pub llt_commits: u64,
}

impl Default for SiroTuning {
    fn default() -> Self {
        SiroTuning {
            segment_bytes: 64 << 10,
            hot_commits: 1_000,
            llt_commits: 10_000,
        }
    }
}

/// Whether committed transactions survive a crash (see the `log` module).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Durability {
    /// Pure in-memory: nothing is written anywhere (the default; benchmarks).
    #[default]
    None,
    /// A write-ahead log and checkpoints in `dir`. Opening a directory that
    /// holds a database recovers it.
    Wal {
        dir: std::path::PathBuf,
        sync: SyncPolicy,
    },
}

/// How a transaction's redo reaches the shared log buffer (see the `log`
/// module, "Log granularity").
///
/// ```text
///  PerTransaction: write write write ─ pre-commit: [redo of all three] ─ 1 reservation
///  PerOperation:   write─[op] write─[op] write─[op] ─ pre-commit: [commit] ─ 4
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LogGranularity {
    /// One reservation per committing writer, made at pre-commit with the
    /// whole redo record (ERMIA §3.2, "a single round-trip to the
    /// centralized log buffer at pre-commit").
    #[default]
    PerTransaction,
    /// Every insert, update and delete reserves and fills its own record
    /// in the shared log buffer as it is made (each names the previous
    /// record of its transaction); pre-commit then logs a small commit
    /// record naming the last one. Recovery applies a transaction's
    /// operation records when it reaches its commit record, so those of a
    /// transaction that aborted are never replayed. ERMIA's emulation of
    /// traditional logging (§4.4, Fig. 10). Not under MVTO.
    PerOperation,
}

impl LogGranularity {
    pub const ALL: [LogGranularity; 2] =
        [LogGranularity::PerTransaction, LogGranularity::PerOperation];

    pub fn name(self) -> &'static str {
        match self {
            LogGranularity::PerTransaction => "per-transaction",
            LogGranularity::PerOperation => "per-operation",
        }
    }
}

/// When `commit` returns relative to its log record reaching stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyncPolicy {
    /// `commit` returns after its record is written and fsynced; one fsync
    /// covers every commit that reached the log buffer meanwhile.
    GroupCommit,
    /// `commit` returns at once; a flush (write + fsync) starts every
    /// `LogTuning::async_flush_interval`, or right after the previous one
    /// if that took longer. A crash loses at most
    /// `LogTuning::async_max_unflushed_bytes` of acknowledged log records
    /// (a commit waits rather than exceed it), always whole transactions,
    /// always the newest ones. In time that is the last max(interval, one
    /// flush) plus one flush while the flusher thread gets a core; when it
    /// does not (more runnable threads than cores), as long as the
    /// scheduler keeps it waiting, but never more than the byte bound.
    Async,
}

/// Tuning of the write-ahead log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogTuning {
    /// A log segment file is sealed and a new one started once it holds
    /// this many bytes.
    pub segment_bytes: u64,
    /// Size of the central log buffer. A transaction whose log record is
    /// larger is refused (`Error::Misuse`) before it commits.
    pub buffer_bytes: usize,
    /// A background checkpoint starts after this many log bytes since the
    /// last one; `None` leaves checkpoints to `Database::checkpoint`.
    pub checkpoint_every_bytes: Option<u64>,
    /// `SyncPolicy::Async`: how often the flusher writes and fsyncs, so
    /// about the longest time a commit stays only in memory while the
    /// flusher gets a core (see `SyncPolicy::Async`).
    pub async_flush_interval: std::time::Duration,
    /// `SyncPolicy::Async`: the most bytes of acknowledged log records that
    /// may be not yet durable, whatever the scheduling; a commit that would
    /// exceed it waits for the flusher. Bounds what a crash can lose.
    pub async_max_unflushed_bytes: u64,
    /// For testing a full disk: once the log files would hold more than
    /// this many bytes in total, the log write fails as if the disk were
    /// full (ENOSPC), and the database turns read-only.
    pub max_log_bytes: Option<u64>,
}

impl Default for LogTuning {
    fn default() -> Self {
        LogTuning {
            segment_bytes: 64 << 20,
            buffer_bytes: 16 << 20,
            checkpoint_every_bytes: Some(256 << 20),
            async_flush_interval: std::time::Duration::from_millis(10),
            async_max_unflushed_bytes: 1 << 20,
            max_log_bytes: None,
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            protocol: Protocol::SiSsn,
            version_storage: VersionStorage::AppendNewToOld,
            gc: GcPolicy::TransactionLevel,
            index_pointers: IndexPointers::LogicalTupleId,
            non_inline: NonInline::Shared,
            max_open_transactions: 4096,
            memory_limit: None,
            ssn_early_exclusion: true,
            ssn_blind_writes: true,
            mvto_locked_read: MvtoLockedRead::Abort,
            write_install: WriteInstall::Eager,
            backoff: Backoff::Exponential,
            gc_every_commits: 16,
            gc_threads: 1,
            gc_interval: Some(std::time::Duration::from_millis(40)),
            max_retries: 1000,
            durability: Durability::None,
            log_tuning: LogTuning::default(),
            log_granularity: LogGranularity::PerTransaction,
            time_breakdown: false,
            memory_spaces: MemorySpaces::default(),
            siro: SiroTuning::default(),
            mvpbt_partition_records: 1 << 16,
            mvpbt_spill_dir: None,
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
    /// See [`Options::mvpbt_partition_records`].
    pub fn mvpbt_partition_records(mut self, n: usize) -> Self {
        self.mvpbt_partition_records = n;
        self
    }
    /// See [`Options::mvpbt_spill_dir`].
    pub fn mvpbt_spill_dir(mut self, dir: Option<std::path::PathBuf>) -> Self {
        self.mvpbt_spill_dir = dir;
        self
    }
    pub fn non_inline(mut self, n: NonInline) -> Self {
        self.non_inline = n;
        self
    }
    /// Shorthand: `true` copies text attributes in full on every new
    /// version, `false` shares them (the default).
    pub fn text_copy(self, copy: bool) -> Self {
        self.non_inline(if copy {
            NonInline::Copy
        } else {
            NonInline::Shared
        })
    }
    pub fn max_open_transactions(mut self, n: usize) -> Self {
        self.max_open_transactions = n;
        self
    }
    /// See [`Options::memory_limit`] (bytes).
    pub fn memory_limit(mut self, bytes: u64) -> Self {
        self.memory_limit = Some(bytes);
        self
    }
    pub fn ssn_early_exclusion(mut self, on: bool) -> Self {
        self.ssn_early_exclusion = on;
        self
    }
    /// See [`Options::ssn_blind_writes`].
    pub fn ssn_blind_writes(mut self, on: bool) -> Self {
        self.ssn_blind_writes = on;
        self
    }
    /// See [`Options::mvto_locked_read`].
    pub fn mvto_locked_read(mut self, r: MvtoLockedRead) -> Self {
        self.mvto_locked_read = r;
        self
    }
    pub fn write_install(mut self, w: WriteInstall) -> Self {
        self.write_install = w;
        self
    }
    pub fn backoff(mut self, b: Backoff) -> Self {
        self.backoff = b;
        self
    }
    pub fn gc_every_commits(mut self, n: u32) -> Self {
        self.gc_every_commits = n;
        self
    }
    pub fn gc_threads(mut self, n: usize) -> Self {
        self.gc_threads = n;
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
    pub fn durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }
    pub fn log_tuning(mut self, t: LogTuning) -> Self {
        self.log_tuning = t;
        self
    }
    pub fn log_granularity(mut self, g: LogGranularity) -> Self {
        self.log_granularity = g;
        self
    }
    pub fn time_breakdown(mut self, on: bool) -> Self {
        self.time_breakdown = on;
        self
    }
    pub fn memory_spaces(mut self, m: MemorySpaces) -> Self {
        self.memory_spaces = m;
        self
    }
    pub fn siro(mut self, t: SiroTuning) -> Self {
        self.siro = t;
        self
    }

    /// Refuses impossible combinations and parts not implemented yet.
    pub fn validate(&self) -> Result<()> {
        if self.max_open_transactions == 0 || self.max_open_transactions > MAX_OPEN_TRANSACTIONS {
            return Err(Error::InvalidConfig(format!(
                "max_open_transactions must be in 1..={MAX_OPEN_TRANSACTIONS}, got {}",
                self.max_open_transactions
            )));
        }
        if self.memory_limit.is_some_and(|b| b == 0 || b == u64::MAX) {
            return Err(Error::InvalidConfig(
                "memory_limit must be between 1 byte and u64::MAX - 1 (use None for no limit)"
                    .into(),
            ));
        }
        if self.gc_interval.is_some_and(|d| d.is_zero()) {
            return Err(Error::InvalidConfig(
                "gc_interval must be longer than zero (use None to turn the GC thread off)".into(),
            ));
        }
        self.memory_spaces.validate()?;
        if self.gc_every_commits == 0 {
            return Err(Error::InvalidConfig(
                "gc_every_commits must be at least 1".into(),
            ));
        }
        if self.mvpbt_partition_records == 0 {
            return Err(Error::InvalidConfig(
                "mvpbt_partition_records must be at least 1".into(),
            ));
        }
        if self.mvpbt_spill_dir.is_some() && !cfg!(feature = "mvpbt-spill") {
            return Err(Error::InvalidConfig(
                "mvpbt_spill_dir needs the engine's `mvpbt-spill` feature (on by default)".into(),
            ));
        }
        if let Some(d) = &self.mvpbt_spill_dir {
            if d.as_os_str().is_empty() {
                return Err(Error::InvalidConfig(
                    "mvpbt_spill_dir is empty (use None to keep partitions in memory)".into(),
                ));
            }
            if d.exists() && !d.is_dir() {
                return Err(Error::InvalidConfig(format!(
                    "mvpbt_spill_dir {} exists and is not a directory",
                    d.display()
                )));
            }
        }
        // Impossible combinations first (they stay impossible once the
        // parts exist), then parts not implemented yet.
        if self.gc == GcPolicy::Cooperative
            && self.version_storage != VersionStorage::AppendOldToNew
        {
            return Err(Error::InvalidConfig(format!(
                "garbage collection {} (GcPolicy::Cooperative) needs version storage o2n \
                 (VersionStorage::AppendOldToNew: readers clean from the oldest end), not {}",
                self.gc.name(),
                self.version_storage.name()
            )));
        }
        if self.index_pointers == IndexPointers::Physical && !self.version_storage.is_append_only()
        {
            return Err(Error::InvalidConfig(format!(
                "physical index pointers need an append-only version storage \
                 (n2o or o2n), not {}: an in-place master has no per-version address to \
                 point at",
                self.version_storage.name()
            )));
        }
        if self.version_storage == VersionStorage::Siro && self.gc != GcPolicy::DeadZone {
            return Err(Error::InvalidConfig(format!(
                "version storage siro (VersionStorage::Siro) needs garbage collection \
                 dead-zone (GcPolicy::DeadZone), not {}: its relocation-time pruning and \
                 segment pruning use the dead zones that collector builds (without them an \
                 LLT pins every off-row version)",
                self.gc.name()
            )));
        }
        if self.protocol == Protocol::Occ && self.gc == GcPolicy::DeadZone {
            return Err(Error::InvalidConfig(format!(
                "protocol occ (Protocol::Occ) cannot run with garbage collection dead-zone \
                 (GcPolicy::DeadZone): OCC reads the newest committed version, newer than \
                 its begin snapshot, so a version in its read set can be overwritten and \
                 fall into a dead zone (no snapshot reads it) while the transaction is \
                 open; freed and reused, its address would pass commit validation, which \
                 compares version addresses (use {} or another horizon collector)",
                GcPolicy::TransactionLevel.name()
            )));
        }
        if self.protocol == Protocol::Mv2pl && self.write_install == WriteInstall::AtCommit {
            return Err(Error::InvalidConfig(
                "protocol mv2pl (Protocol::Mv2pl) cannot install writes at commit \
                 (WriteInstall::AtCommit): two-phase locking takes a row's write lock when \
                 it writes, and a lock taken only after the read phase is optimistic \
                 concurrency control, another protocol (use occ or mvocc)"
                    .into(),
            ));
        }
        if self.version_storage == VersionStorage::Siro
            && (self.siro.segment_bytes < 1024 || self.siro.hot_commits == 0)
        {
            return Err(Error::InvalidConfig(format!(
                "siro.segment_bytes must be at least 1024 and siro.hot_commits at least 1, \
                 got {} and {}",
                self.siro.segment_bytes, self.siro.hot_commits
            )));
        }
        if self.gc_threads == 0 || self.gc_threads > 64 {
            return Err(Error::InvalidConfig(format!(
                "gc_threads must be in 1..=64, got {}",
                self.gc_threads
            )));
        }
        if self.log_granularity == LogGranularity::PerOperation {
            if self.durability == Durability::None {
                return Err(Error::InvalidConfig(
                    "log granularity per-operation needs the write-ahead log \
                     (Durability::Wal): an in-memory database logs nothing"
                        .into(),
                ));
            }
            if self.protocol == Protocol::Mvto {
                return Err(Error::InvalidConfig(
                    "log granularity per-operation is not available under mvto: its \
                     checkpoints bound the operation records of open transactions by \
                     their snapshots, which are LSNs only with LSN commit stamps \
                     (every protocol but MVTO)"
                        .into(),
                ));
            }
        }
        if let Durability::Wal { .. } = self.durability {
            let t = &self.log_tuning;
            if t.segment_bytes < 4096 {
                return Err(Error::InvalidConfig(format!(
                    "log_tuning.segment_bytes must be at least 4096, got {}",
                    t.segment_bytes
                )));
            }
            if t.buffer_bytes < 4096 || !t.buffer_bytes.is_power_of_two() {
                return Err(Error::InvalidConfig(format!(
                    "log_tuning.buffer_bytes must be a power of two of at least 4096, got {}",
                    t.buffer_bytes
                )));
            }
            if t.async_flush_interval.is_zero() {
                return Err(Error::InvalidConfig(
                    "log_tuning.async_flush_interval must be longer than zero".into(),
                ));
            }
            if t.async_max_unflushed_bytes == 0 {
                return Err(Error::InvalidConfig(
                    "log_tuning.async_max_unflushed_bytes must be at least 1 \
                     (it bounds what an Async crash may lose)"
                        .into(),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spill directory without the `mvpbt-spill` feature is refused,
    /// naming the feature, not silently ignored (`.ci/run` runs this
    /// test without the default features too).
    #[test]
    fn a_spill_dir_needs_its_feature() {
        let r = Options::default()
            .mvpbt_spill_dir(Some(std::env::temp_dir()))
            .validate();
        if cfg!(feature = "mvpbt-spill") {
            assert!(r.is_ok(), "{r:?}");
        } else {
            assert!(
                matches!(&r, Err(Error::InvalidConfig(m)) if m.contains("mvpbt-spill")),
                "{r:?}"
            );
        }
    }
}
