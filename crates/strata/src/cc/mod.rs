//! Concurrency control protocols: one interface, one module per protocol.
//!
//! The transaction code (`crate::txn`) owns the common path — chains, locks
//! on chain heads, commit timestamps, stamping, undo — and asks the protocol
//! through the [`Cc`] trait. Each protocol is a zero-sized type implementing
//! it in its own module; the transaction code is generic over `P: Cc`, and
//! [`with_cc!`] is the one place where the runtime [`Protocol`] picks the
//! type (an exhaustive `match`, so a new protocol that is not wired in does
//! not compile):
//!
//! ```text
//!  Transaction::get ──with_cc!(db.protocol, P => ..)──> read_with_as::<P>
//!        │                                  (monomorphised: no per-hook
//!        ▼                                   match, hooks inline)
//!   P::read ──> which version, and what to remember about the read
//!   P::check_write ──> may this transaction overwrite the locked head?
//!   P::validate ──> after the commit timestamp: may it commit?
//!   P::post_commit / P::on_abort ──> publish stamps, release read locks
//! ```
//!
//! Yes/no properties (does the protocol read a snapshot, validate scans,
//! publish scan records, ...) are associated constants, so the generic code
//! asks `P::VALIDATES_SCANS` instead of listing protocols; the per-transaction
//! state a protocol keeps beyond the common read/write/scan sets is its
//! associated `State` (SSI: its conflict flags; the others keep none), held
//! in the transaction's [`TxnCc`]. The two protocol words of every version
//! header are named by their owner: see `mvto::read_ts`, `mv2pl::readers`,
//! `ssn::pstamp` / `ssn::sstamp` and `ssi::overwriter`.
//!
//! | protocol | reads see        | write check            | commit check                 | phantoms            |
//! |----------|------------------|------------------------|------------------------------|---------------------|
//! | MVTO     | ts order         | read_ts, begin <= ts   | none                         | table predicate ts  |
//! | MVOCC    | snapshot         | lock only              | read set + scan set current, readers too | scan re-validation |
//! | MV2PL    | latest (locked)  | no other readers       | scan set                     | scan re-validation  |
//! | SI       | snapshot         | first updater wins     | none                         | (allowed)           |
//! | SI+SSN   | snapshot         | first updater wins     | exclusion window pi > eta    | re-validation + scan records |
//! | SI+SSI   | snapshot         | first updater wins     | no pivot (in and out; edges to aborted partners ignored) | re-validation + scan records |
//! | OCC      | newest committed | lock only              | read set + scan set current, readers too | scan re-validation |
//!
//! Adding a protocol: a new module with a type implementing [`Cc`], a
//! variant of [`Protocol`] and of [`TxnCc`], and one arm in [`with_cc!`]
//! (see `docs/EXTENDING.md`).

pub mod mv2pl;
pub mod mvocc;
pub mod mvto;
pub mod occ;
pub mod predicate;
pub(crate) mod quiescence;
pub(crate) mod sets;
pub mod si;
pub mod ssi;
pub mod ssn;

use crate::error::{ConflictKind, Result};
use crate::gc::Gc;
use crate::index::key::EncodedKey;
use crate::index::SecWrites;
use crate::options::Protocol;
use crate::storage::version::{Version, TID_MARK};
use crate::storage::visibility::Mode;
use crate::table::TableInner;
use crate::tid::TidTable;
use crate::value::Key;
use crossbeam_utils::CachePadded;
use predicate::ScanEntry;
pub(crate) use sets::{ReadEntry, WriteEntry};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use thin_vec::ThinVec;

/// How far a commit moves the in-memory clock. Two, so that every
/// writer's stamp has the clock's parity and `clock + 1` never is one: see
/// [`read_only_stamp`]. (With LSN commit stamps the log's reservations keep
/// writers' stamps `K mod 8` for the same reason.)
pub(crate) const CLOCK_STEP: u64 = 2;

/// The commit stamp of a transaction that wrote nothing (SSN and SSI
/// validate such transactions, MV2PL their scans): the clock plus one,
/// without moving the clock, so a read-only transaction writes no line
/// that every other commit writes too.
///
/// ```text
///  clock:   ... 41 ───────────── 43 ───────────── 45 ...   (writers: step 2)
///  reader loads 41, takes 42:  above every stamp drawn before its load,
///                              below every stamp drawn after, no writer's
/// ```
///
/// Drawn after PRECOMMIT (the load is SeqCst), so it orders against every
/// writer's stamp as a `fetch_add` would. Only transactions that wrote
/// nothing share a stamp, and no dependency joins two of them (every
/// ww, wr or rw edge has a writer at one end), so no protocol has to order
/// them against each other.
pub(crate) fn read_only_stamp(clock: &crate::sync::Counter) -> u64 {
    let on_writers = crate::sync::broken(crate::sync::Break::ReadOnlyStampOnWriters);
    clock.load(SeqCst) + if on_writers { CLOCK_STEP } else { 1 }
}

/// The engine-wide state the protocols share: one per database (the
/// database's state derefs to it, so `db.clock` and `db.tids` read as
/// before).
pub(crate) struct Shared {
    /// The global timestamp counter: snapshots read it, commits bump it.
    /// (`crate::sync`'s: a step of the shuttle models.) Shared (an `Arc`)
    /// because with the write-ahead log on it is also the log's
    /// reservation counter: a durable commit's one fetch-and-add gives its
    /// LSN and its commit timestamp (see `crate::log`, "LSN commit stamps").
    pub clock: crate::sync::Counter,
    pub tids: TidTable,
    /// Last garbage-collection horizon computed (a safe lower bound for new
    /// MVTO read-only snapshots while they register).
    /// On its own cache line: every GC pass stores it, and the TID table's
    /// read-mostly fields would otherwise share its line.
    pub horizon: CachePadded<AtomicU64>,
    /// SSI: SIREAD marks and writer states.
    pub ssi: ssi::Registry,
    /// Quiescence epochs (`quiescence`): what orders committed
    /// transactions before the open ones when stamps cannot (SSI's marks,
    /// SSN's and SSI's scan records).
    pub quiescence: quiescence::Quiescence,
    /// Test-only: MVOCC, MV2PL and OCC skip re-validating predicate reads at
    /// commit (`Database::skip_phantom_validation_for_testing`).
    pub skip_phantom_validation: AtomicBool,
    /// SI+SSN's early exclusion check (`Options::ssn_early_exclusion`).
    pub ssn_early_exclusion: bool,
    /// SI+SSN's blind overwrites (`Options::ssn_blind_writes`).
    pub ssn_blind_writes: bool,
    /// MVTO's read of a version another running transaction has
    /// write-locked (`Options::mvto_locked_read`).
    pub mvto_locked_read: crate::options::MvtoLockedRead,
}

impl Shared {
    pub fn new(max_open_transactions: usize) -> Shared {
        Shared {
            clock: crate::sync::counter(1),
            tids: TidTable::new(max_open_transactions),
            horizon: CachePadded::new(AtomicU64::new(0)),
            ssi: ssi::Registry::new(),
            quiescence: Default::default(),
            skip_phantom_validation: AtomicBool::new(false),
            ssn_early_exclusion: true,
            ssn_blind_writes: true,
            mvto_locked_read: crate::options::MvtoLockedRead::Abort,
        }
    }
}

/// A transaction as its protocol sees it: identity, snapshot, the read,
/// scan and write sets, the protocol's own state, and the shared state.
/// `txn::Transaction` is the one implementation; the protocols reach the
/// transaction only through this, so `cc` does not depend on `txn` (the
/// transaction code calls the protocols, not the other way round).
pub(crate) trait Txn {
    fn shared(&self) -> &Shared;
    /// The collector (MVTO hands it the ghost rows it makes).
    fn gc(&self) -> &Gc;
    /// The slot id in the TID table.
    fn tid(&self) -> u64;
    /// The snapshot timestamp (MVTO: the transaction's timestamp).
    fn ts(&self) -> u64;
    fn reads(&self) -> &[ReadEntry];
    fn reads_mut(&mut self) -> &mut Vec<ReadEntry>;
    /// Predicate reads (range scans, absent keys).
    fn scans(&self) -> &[ScanEntry];
    fn scans_mut(&mut self) -> &mut ThinVec<ScanEntry>;
    fn writes(&self) -> &[WriteEntry];
    /// Secondary-index entries the transaction added.
    fn sec_writes(&self) -> &SecWrites;
    /// The protocol's own per-transaction state (`Cc::State`).
    fn state(&self) -> &TxnCc;

    /// True if `v` is a version this transaction created.
    #[inline]
    fn is_own(&self, v: *mut Version) -> bool {
        // SAFETY: pinned by the caller; v is alive (see read_tuple callers).
        !v.is_null() && unsafe { (*v).begin.load(SeqCst) } == TID_MARK | self.tid()
    }

    /// A snapshot read of `tuple` with the read bookkeeping of `P`.
    #[inline]
    fn snapshot_read<P: Cc>(&mut self, t: &TableInner, tuple: u64) -> Result<*mut Version>
    where
        Self: Sized,
    {
        let v = crate::storage::visible(
            t,
            tuple,
            self.ts(),
            self.tid(),
            &self.shared().tids,
            Mode::Snapshot,
        )?;
        if !self.is_own(v) {
            self.record_read::<P>(t, tuple, v)?;
        }
        Ok(v)
    }

    /// The read bookkeeping of MVOCC, SSN and SSI for version `v` (null:
    /// nothing visible) of `tuple`: the read set, SSN's read filter, SSI's
    /// SIREAD mark, and for a deleted row a point predicate read of its key
    /// (if GC unlinks the row, a later insert of the key makes a new tuple,
    /// seen only by the predicate machinery).
    fn record_read<P: Cc>(&mut self, t: &TableInner, tuple: u64, v: *mut Version) -> Result<()>
    where
        Self: Sized,
    {
        self.reads_mut().push(ReadEntry {
            table: t,
            tuple,
            version: v,
        });
        P::on_read(self, v)?;
        if !P::SCAN_RECORDS {
            return Ok(());
        }
        // SAFETY: pinned by the caller; `v` is visible to us or locked by us.
        if let Some(r) = unsafe { v.as_ref() }.filter(|r| r.is_tombstone()) {
            let ek = t.encode(&Key(r.data().to_vec()));
            // The tuple itself was seen (as deleted): only a new tuple for
            // the key is a phantom. Without it, a deleted row that GC has
            // not unlinked yet (or never will: GC None) would fail every
            // reader's validation.
            self.scans_mut().push(ScanEntry::range(
                t,
                Bound::Included(ek.clone()),
                Bound::Included(ek),
                vec![tuple],
            ));
        }
        Ok(())
    }
}

/// A concurrency control protocol, as the transaction code sees it.
///
/// Every hook has the transaction at hand; hooks that a protocol does not
/// need have a default that does nothing. Implementations are zero-sized
/// marker types: all state lives in the transaction, the TID table and the
/// version headers.
pub(crate) trait Cc {
    /// The `Protocol` value this type implements.
    const PROTOCOL: Protocol;
    /// Reads see the snapshot taken at begin (MVOCC and the SI family).
    /// MV2PL reads the newest committed version under a read lock, OCC
    /// without one, MVTO reads in timestamp order.
    const SNAPSHOT_READS: bool;
    /// Range scans and reads of absent keys are predicate reads that the
    /// commit re-validates (scan re-validation against phantoms).
    const VALIDATES_SCANS: bool;
    /// Scans are also published on the table / index as scan records, so
    /// that a writer committing later finds the scanner as its rw
    /// predecessor (SSN, SSI); then a key read as absent or as deleted is
    /// a point predicate read too.
    const SCAN_RECORDS: bool;
    /// A transaction that wrote nothing may commit without validation: it
    /// read one consistent snapshot and its serial point is its snapshot
    /// (TO, SI). SSN and SSI must still check such a reader (the
    /// read-only anomaly); MV2PL checks its scans (see
    /// `read_only_commit_is_safe`); Silo-style OCC read no snapshot, so it
    /// validates its reads as any committer does; MVOCC validates it as the
    /// study's MVOCC does (Wu et al. §3.2, Fig. 8), though its snapshot
    /// would not need it. (A transaction begun READ ONLY never validates.)
    const READ_ONLY_COMMIT_UNCHECKED: bool;
    /// A write finds the row's holder committed after our snapshot: for us
    /// the key is free (or the row different), yet we cannot write it. The
    /// conflict to report; `None` where the protocol reads the newest state
    /// (MV2PL), for which it is the plain answer (duplicate key).
    const NEWER_THAN_SNAPSHOT: Option<ConflictKind>;

    /// Per-transaction state beyond the common read, write and scan sets.
    type State;

    /// The state of a transaction that begins at `ts` in slot `tid`.
    fn new_state(tid: u64, ts: u64, read_only: bool) -> TxnCc;

    /// The timestamp a transaction reads at, drawn after `lower` was
    /// registered in its slot (see `Transaction::begin`).
    fn begin_ts(db: &Shared, read_only: bool, lower: u64) -> u64 {
        let _ = (read_only, lower);
        db.clock.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The lower bound a beginning transaction registers before it takes
    /// its snapshot.
    fn begin_lower_bound(db: &Shared, read_only: bool) -> u64 {
        let _ = read_only;
        db.clock.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Reads `tuple` for a read-write transaction: the version to return
    /// (null: nothing visible) and the protocol's read bookkeeping.
    fn read(tx: &mut impl Txn, t: &TableInner, tuple: u64) -> Result<*mut Version>;

    /// The protocol's part of recording a read of `v` (already in the read
    /// set): SSN's read filter, SSI's SIREAD mark.
    fn on_read(tx: &mut impl Txn, v: *mut Version) -> Result<()> {
        let _ = (tx, v);
        Ok(())
    }

    /// `key` has no row: record the predicate read. Returns a tuple to read
    /// instead (MVTO's ghost row).
    fn absent_read(tx: &mut impl Txn, t: &TableInner, key: &Key, ek: &EncodedKey) -> Option<u64> {
        let _ = key;
        if Self::VALIDATES_SCANS {
            tx.scans_mut()
                .push(predicate::ScanEntry::point(t, ek.clone()));
        }
        None
    }

    /// Before a range scan of a table or secondary index whose predicate
    /// timestamp word is `predicate_ts` (MVTO raises it).
    fn before_scan(tx: &impl Txn, predicate_ts: &AtomicU64) {
        let _ = (tx, predicate_ts);
    }

    /// After a new key entered a table's or secondary index's key space
    /// (or an insert overwrote a tombstone): may this transaction insert
    /// it, given that space's predicate timestamp word?
    fn check_insert(tx: &impl Txn, predicate_ts: &AtomicU64) -> Result<(), ConflictKind> {
        let _ = (tx, predicate_ts);
        Ok(())
    }

    /// The write check, with `head` locked by us (unlocked again by the
    /// caller if this fails).
    fn check_write(tx: &impl Txn, t: &TableInner, tuple: u64, head: &Version) -> Result<()>;

    /// The row's head is write-locked by a transaction that is deciding
    /// (committing or rolling back): may we wait for it and then write
    /// whatever head it leaves, instead of aborting at once? Only a
    /// protocol whose write check would accept that head gains anything by
    /// waiting (SSN's blind overwrites).
    fn waits_for_deciding_writer(tx: &impl Txn, t: &TableInner, tuple: u64) -> bool {
        let _ = (tx, t, tuple);
        false
    }

    /// A read made on the write path (a duplicate-key or not-found answer
    /// depends on the version seen).
    fn note_read(tx: &mut impl Txn, t: &TableInner, tuple: u64, v: *mut Version) -> Result<()>;

    /// We just overwrote `old` (our version is installed above it and in
    /// our write set). A conflict rolls the transaction back.
    fn on_overwrite(tx: &mut impl Txn, old: &Version) -> Result<(), ConflictKind> {
        let _ = (tx, old);
        Ok(())
    }

    /// The commit timestamp, drawn after PRECOMMIT is announced (MVTO:
    /// the transaction's own timestamp). Not called with LSN commit stamps
    /// (the write-ahead log on, any protocol but MVTO): there the log's
    /// reservation gives it (see `crate::log`). A transaction that wrote
    /// nothing (and is validated all the same) takes a
    /// [`read_only_stamp`] and leaves the clock alone.
    fn commit_ts(tx: &impl Txn) -> u64 {
        let db = tx.shared();
        db.tids.set_precommit(tx.tid());
        if tx.writes().is_empty() {
            read_only_stamp(&db.clock)
        } else {
            db.clock.fetch_add(CLOCK_STEP, SeqCst) + CLOCK_STEP
        }
    }

    /// Whether a transaction that wrote nothing may skip validation.
    fn read_only_commit_is_safe(tx: &impl Txn) -> bool {
        let _ = tx;
        Self::READ_ONLY_COMMIT_UNCHECKED
    }

    /// The commit-time check, after the commit timestamp is drawn.
    fn validate(tx: &mut impl Txn, cts: u64) -> Result<(), ConflictKind> {
        let _ = (tx, cts);
        Ok(())
    }

    /// After COMMITTED, before the versions are stamped (SSN publishes its
    /// stamps here).
    fn post_commit(tx: &mut impl Txn, cts: u64) {
        let _ = (tx, cts);
    }

    /// The transaction ends (committed or not): release what the protocol
    /// holds until the end (MV2PL's read locks).
    fn release(tx: &mut impl Txn) {
        let _ = tx;
    }

    /// The transaction aborted: forget its registrations (after its writes
    /// were undone).
    fn on_abort(tx: &mut impl Txn) {
        let _ = tx;
    }

    /// GC: the horizon `h` (the oldest registered snapshot, clock-bounded)
    /// as this protocol must have it.
    fn bound_horizon(db: &Shared, h: u64) -> u64 {
        let _ = db;
        h
    }

    /// GC: whether a deleted row whose tombstone `tomb` is visible at
    /// `horizon` may be unlinked now (no running transaction relies on
    /// per-version read state of the tombstone).
    fn may_remove(tomb: &Version, horizon: u64) -> bool {
        let _ = (tomb, horizon);
        true
    }

    /// GC: forget protocol state no transaction open at or after `horizon`
    /// can need (SSN/SSI scan records, SSI's SIREAD marks). Scan-log
    /// shards whose scanners are active prune themselves; with
    /// `every_shard` (a pass someone waits for) every shard is pruned.
    fn prune(db: &Shared, tables: &[Arc<TableInner>], horizon: u64, every_shard: bool) {
        let _ = (db, tables, horizon, every_shard);
    }
}

/// The per-transaction protocol state: one variant per protocol, holding
/// that protocol's [`Cc::State`].
pub(crate) enum TxnCc {
    Mvto(<mvto::Mvto as Cc>::State),
    Mvocc(<mvocc::Mvocc as Cc>::State),
    Mv2pl(<mv2pl::Mv2pl as Cc>::State),
    Si(<si::Si as Cc>::State),
    SiSsn(<ssn::SiSsn as Cc>::State),
    SiSsi(<ssi::SiSsi as Cc>::State),
    Occ(<occ::Occ as Cc>::State),
}

/// Runs `$body` with `$P` bound to the type implementing the protocol
/// `$protocol`: the one dispatch point from a runtime [`Protocol`] to the
/// protocol's code. Exhaustive by construction (no wildcard arm).
macro_rules! with_cc {
    ($protocol:expr, $P:ident => $body:expr) => {
        match $protocol {
            $crate::options::Protocol::Mvto => {
                type $P = $crate::cc::mvto::Mvto;
                $body
            }
            $crate::options::Protocol::Mvocc => {
                type $P = $crate::cc::mvocc::Mvocc;
                $body
            }
            $crate::options::Protocol::Mv2pl => {
                type $P = $crate::cc::mv2pl::Mv2pl;
                $body
            }
            $crate::options::Protocol::Si => {
                type $P = $crate::cc::si::Si;
                $body
            }
            $crate::options::Protocol::SiSsn => {
                type $P = $crate::cc::ssn::SiSsn;
                $body
            }
            $crate::options::Protocol::SiSsi => {
                type $P = $crate::cc::ssi::SiSsi;
                $body
            }
            $crate::options::Protocol::Occ => {
                type $P = $crate::cc::occ::Occ;
                $body
            }
        }
    };
}
pub(crate) use with_cc;

use parking_lot::Mutex;
use rustc_hash::FxHashMap;

/// A map from version address to a small list, split over shards so that
/// unrelated rows do not contend on one lock. Used for SSI's SIREAD marks.
///
/// Pruning visits a few shards a call, round robin ([`Self::prune_some`]),
/// and shrinks a shard it left mostly empty: a prune of every shard at
/// every GC pass (each 16 commits) walked every mark, which made
/// read-only transactions not declared READ ONLY (a mark per read) 100x
/// slower under SSI than under SSN (`bench ycsb --protocol ssi
/// --read-ratio 1 --no-ro-hint --threads 1`: 9.5K against 949K/s, 89% of
/// the time in the prune's `retain`; 14.9K/s with this, before marks of
/// no-write commits could be pruned at all: `ssi::Registry::prune`).
pub(crate) struct ShardedMultiMap<V> {
    shards: Box<[Shard<V>]>,
    /// The next shard [`Self::prune_some`] visits.
    cursor: std::sync::atomic::AtomicUsize,
}

type Shard<V> = Mutex<FxHashMap<usize, Vec<V>>>;

const SHARDS: usize = 64;

impl<V: Clone> ShardedMultiMap<V> {
    pub fn new() -> Self {
        ShardedMultiMap {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(FxHashMap::default()))
                .collect(),
            cursor: std::sync::atomic::AtomicUsize::new(0),
        }
    }
    fn shard(&self, key: usize) -> &Shard<V> {
        // Versions are 64-byte aligned-ish allocations: drop the low bits.
        &self.shards[(key >> 6) % SHARDS]
    }
    pub fn add(&self, key: usize, v: V) {
        self.shard(key).lock().entry(key).or_default().push(v);
    }
    pub fn get(&self, key: usize) -> Vec<V> {
        self.shard(key)
            .lock()
            .get(&key)
            .cloned()
            .unwrap_or_default()
    }
    /// Removes the values for which `f` is true from the next `n` shards
    /// (every shard once in `SHARDS / n` calls). Returns the shards visited.
    pub fn prune_some(&self, n: usize, mut f: impl FnMut(&V) -> bool) -> usize {
        let n = n.clamp(1, SHARDS);
        let first = self
            .cursor
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        for i in first..first + n {
            let mut s = self.shards[i % SHARDS].lock();
            s.retain(|_, list| {
                list.retain(|v| !f(v));
                !list.is_empty()
            });
            // `retain` walks every bucket: keep their number near the
            // entries', or a shard that once held a burst stays slow.
            if s.capacity() > 4 * s.len().max(16) {
                let keep = 2 * s.len();
                s.shrink_to(keep);
            }
        }
        n
    }

    /// Values over all shards.
    pub fn values(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().values().map(Vec::len).sum::<usize>())
            .sum()
    }

    /// Entries (keys) over all shards.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A prune visits the shards it is asked to, round robin, so that
    /// every stale value is gone after `SHARDS / n` calls and none before
    /// its shard's turn; a shard emptied after a burst gives its buckets
    /// back.
    #[test]
    fn pruning_visits_a_few_shards_a_call_and_reaches_all() {
        let m: ShardedMultiMap<u64> = ShardedMultiMap::new();
        for k in 0..10_000usize {
            m.add(k << 6, k as u64);
        }
        let n = SHARDS / 8;
        assert_eq!(m.prune_some(n, |_| true), n);
        let left = m.len();
        let in_first_n = (0..10_000).filter(|k| k % SHARDS < n).count();
        assert_eq!(left, 10_000 - in_first_n, "one call, the first n shards");
        for _ in 1..SHARDS / n {
            m.prune_some(n, |_| true);
        }
        assert_eq!(m.len(), 0, "every shard visited");
        assert!(m.shards.iter().all(|s| s.lock().capacity() <= 64));
        // Values kept stay.
        m.add(64, 1);
        m.add(64, 2);
        for _ in 0..SHARDS / n {
            m.prune_some(n, |&v| v == 1);
        }
        assert_eq!(m.get(64), vec![2]);
    }

    /// The dispatch point maps every protocol to the type that implements
    /// it (a swapped arm would run one protocol's code under another's
    /// name), and each type's constants agree with the protocol's public
    /// properties.
    #[test]
    fn with_cc_picks_the_protocols_own_type() {
        for p in Protocol::ALL {
            assert_eq!(with_cc!(p, P => P::PROTOCOL), p);
            let (validates, records) = with_cc!(p, P => (P::VALIDATES_SCANS, P::SCAN_RECORDS));
            // Scan records only make sense on top of scan re-validation.
            assert!(validates || !records, "{p}");
            // Every serializable protocol guards against phantoms somehow:
            // re-validation, or MVTO's ghosts and predicate timestamps.
            assert_eq!(
                p.is_serializable(),
                validates || p == Protocol::Mvto,
                "{p}: phantom protection"
            );
        }
    }
}
