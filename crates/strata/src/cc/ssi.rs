//! SI + SSI: Cahill's serializable snapshot isolation.
//!
//! Snapshot isolation can only go wrong through a *dangerous structure*: a
//! pivot transaction with an incoming and an outgoing rw-antidependency
//! between concurrent transactions:
//!
//! ```text
//!   T_in ──rw──> PIVOT ──rw──> T_out        abort the pivot (or whoever
//!                                           is still running)
//! ```
//!
//! rw edges are found from both ends: a reader that meets a newer version
//! (the overwriter is recorded in the old version's [`overwriter`] word),
//! and a writer
//! that overwrites a version carrying SIREAD marks of concurrent readers.
//! SIREAD marks outlive their reader's commit until no concurrent
//! transaction remains (GC prunes them below the horizon). Each
//! transaction's flags (IN, OUT, COMMITTED, ...) are one atomic byte.
//!
//! An edge whose other end aborted is no edge: only committed transactions
//! can form a cycle. Beside its flags a transaction keeps the partners of
//! its edges (as PostgreSQL's SSI keeps its conflict lists), and the commit
//! check looks at them: a direction whose partners all aborted does not
//! count (nor is it kept in the committed flags, which later markers read).
//! Without that, of two transactions that each read what the other writes,
//! the first to commit is refused and the second too, although the first
//! is gone.
//!
//! ```text
//!  T1 ──rw──> T2 ──rw──> T1     T1 commits first: refused (a pivot), aborts
//!                               T2: both its edges lead to T1 (aborted) -> commits
//! ```
//!
//! Invariant: a transaction's flags change only under its `partners` lock
//! (the other end marking an edge) or from its own thread, and its commit
//! decides under that lock; so an edge is either in the lists the decision
//! reads, or its marker sees COMMITTED (with the flags the decision kept)
//! and refuses itself. A finished transaction's lists are emptied and stay
//! empty, so two transactions' lists never keep each other alive.

use super::Shared;
use super::Txn;
use super::{predicate, si, Cc, TxnCc};
use crate::error::{ConflictKind, Error, Result};
use crate::options::Protocol;
use crate::storage::version::{Version, INF_TS, TID_MARK};
use crate::table::TableInner;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::SeqCst};
use std::sync::Arc;

/// Snapshot isolation plus Cahill's serializable SI.
pub(crate) struct SiSsi;

/// The id of the transaction that overwrote the version (SSI's use of the
/// header's first protocol word), so a reader of the old version finds its
/// concurrent overwriter.
#[inline]
pub(crate) fn overwriter(v: &Version) -> &crate::sync::atomic::AtomicU64 {
    &v.cc_words[0]
}

/// A transaction's SSI state (read-only transactions have none).
#[inline]
pub(crate) fn state(tx: &impl Txn) -> Option<&Arc<SsiTxn>> {
    if let TxnCc::SiSsi(s) = tx.state() {
        s.as_ref()
    } else {
        None
    }
}

fn me(tx: &impl Txn) -> Arc<SsiTxn> {
    Arc::clone(state(tx).expect("SSI transaction has state"))
}

impl Cc for SiSsi {
    const PROTOCOL: Protocol = Protocol::SiSsi;
    const SNAPSHOT_READS: bool = true;
    const VALIDATES_SCANS: bool = true;
    const SCAN_RECORDS: bool = true;
    // A reader can close a cycle between writers (the read-only anomaly).
    const READ_ONLY_COMMIT_UNCHECKED: bool = false;
    const NEWER_THAN_SNAPSHOT: Option<ConflictKind> = Some(ConflictKind::WriteWrite);
    /// The conflict flags and edge partners, shared with the registry.
    type State = Option<Arc<SsiTxn>>;

    fn new_state(tid: u64, ts: u64, read_only: bool) -> TxnCc {
        TxnCc::SiSsi((!read_only).then(|| SsiTxn::new(tid, ts)))
    }

    fn read(tx: &mut impl Txn, t: &TableInner, tuple: u64) -> Result<*mut Version> {
        tx.snapshot_read::<Self>(t, tuple)
    }

    fn on_read(tx: &mut impl Txn, v: *mut Version) -> Result<()> {
        on_read(tx, v)
    }

    fn check_write(tx: &impl Txn, _t: &TableInner, _tuple: u64, head: &Version) -> Result<()> {
        si::first_updater_wins(tx, head)
    }

    fn note_read(tx: &mut impl Txn, t: &TableInner, tuple: u64, v: *mut Version) -> Result<()> {
        tx.record_read::<Self>(t, tuple, v)
    }

    #[inline]
    fn on_overwrite(tx: &mut impl Txn, old: &Version) -> Result<(), ConflictKind> {
        on_write(tx, old);
        Ok(())
    }

    fn validate(tx: &mut impl Txn, cts: u64) -> Result<(), ConflictKind> {
        pre_commit(tx, cts)
    }

    fn on_abort(tx: &mut impl Txn) {
        on_abort(tx);
        if !tx.scans().is_empty() {
            predicate::withdraw(tx);
        }
    }

    fn post_commit(tx: &mut impl Txn, _cts: u64) {
        if !tx.scans().is_empty() {
            predicate::stamp_epochs(tx);
        }
    }

    fn prune(db: &Shared, tables: &[Arc<TableInner>], horizon: u64, every_shard: bool) {
        let quiesced = db.quiescence.advance(&db.tids);
        tables
            .iter()
            .for_each(|t| predicate::prune(t, horizon, quiesced, every_shard));
        db.ssi.prune(horizon, quiesced);
    }
}

const IN: u8 = 1;
const OUT: u8 = 2;
const COMMITTED: u8 = 4;
const ABORTED: u8 = 8;
/// Set once the transaction is in the writer map (only its owner sets it).
const REGISTERED: u8 = 16;
/// A write made a committed transaction a pivot: we must not commit (the
/// edge's other end is committed, so it cannot go away).
const DOOMED: u8 = 32;

/// One transaction's SSI state, shared with the registries.
pub struct SsiTxn {
    pub tid: u64,
    pub begin: u64,
    flags: AtomicU8,
    cstamp: AtomicU64,
    /// The quiescence epoch, read just after we committed (`u64::MAX`
    /// until then): see `cc::quiescence`.
    commit_epoch: AtomicU64,
    /// The other ends of our edges, while we run.
    partners: Mutex<Partners>,
}

/// Transactions with an rw edge into us (`ins`) and out of us (`outs`).
#[derive(Default)]
struct Partners {
    ins: Vec<Arc<SsiTxn>>,
    outs: Vec<Arc<SsiTxn>>,
}

impl SsiTxn {
    pub fn new(tid: u64, begin: u64) -> Arc<SsiTxn> {
        Arc::new(SsiTxn {
            tid,
            begin,
            flags: AtomicU8::new(0),
            cstamp: AtomicU64::new(u64::MAX),
            commit_epoch: AtomicU64::new(u64::MAX),
            partners: Mutex::new(Partners::default()),
        })
    }
    /// Records an edge to or from `partner` (`dir`: IN or OUT) and returns
    /// our flags from before.
    fn add_edge(&self, dir: u8, partner: &Arc<SsiTxn>) -> u8 {
        let mut p = self.partners.lock();
        // A finished transaction never reads its lists again.
        if self.flags.load(SeqCst) & (COMMITTED | ABORTED) == 0 {
            let list = if dir == IN { &mut p.ins } else { &mut p.outs };
            // Consecutive edges with one partner (a writer overwriting many
            // rows one reader read) are one entry.
            if !list.last().is_some_and(|l| Arc::ptr_eq(l, partner)) {
                list.push(Arc::clone(partner));
            }
        }
        self.flags.fetch_or(dir, SeqCst)
    }
    fn finished_before(&self, ts: u64) -> bool {
        let f = self.flags.load(SeqCst);
        f & ABORTED != 0 || (f & COMMITTED != 0 && self.cstamp.load(SeqCst) <= ts)
    }
    /// Whether no open transaction, nor any later one, can be concurrent
    /// with us: we finished before `horizon` in stamps, or before every
    /// open transaction began (`quiesced`, see [`Registry::prune`]).
    fn forgettable(&self, horizon: u64, quiesced: u64) -> bool {
        self.finished_before(horizon) || self.commit_epoch.load(SeqCst) <= quiesced
    }
}

/// Shards of SIREAD marks pruned a GC pass (of 64).
const SIREAD_SHARDS_A_PASS: usize = 8;

/// SIREAD marks and writer states.
pub struct Registry {
    sireads: super::ShardedMultiMap<Arc<SsiTxn>>,
    writers: Mutex<FxHashMap<u64, Arc<SsiTxn>>>,
}

impl Registry {
    pub fn new() -> Self {
        Registry {
            sireads: super::ShardedMultiMap::new(),
            writers: Mutex::new(FxHashMap::default()),
        }
    }

    /// Forgets transactions no open or later transaction can be concurrent
    /// with, and aborted ones: the SIREAD marks of an eighth of the shards
    /// a call (stale marks are only memory: a writer skips readers that
    /// finished before it began), and the writer states.
    ///
    /// "Committed below `horizon`" alone is not enough: a commit that
    /// wrote nothing stamps the clock plus one without moving the clock,
    /// so while nothing writes the horizon stays below every such stamp.
    /// Its marks piled up, one list per version read (SSI ran undeclared
    /// read-only YCSB at 15K/s against SSN's 950K). Those transactions are
    /// ordered by quiescence instead (`cc::quiescence`): one that committed
    /// in epoch `quiesced` or before finished before every open
    /// transaction began.
    pub fn prune(&self, horizon: u64, quiesced: u64) {
        self.sireads
            .prune_some(SIREAD_SHARDS_A_PASS, |t| t.forgettable(horizon, quiesced));
        self.writers
            .lock()
            .retain(|_, t| !t.forgettable(horizon, quiesced));
    }

    /// SIREAD marks held now (one per version and reader).
    pub fn marks(&self) -> usize {
        self.sireads.values()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

/// Marks reader -rw-> writer. `me_is_reader` says which end is running now.
/// Errs if the other end is a committed pivot.
fn mark(reader: &Arc<SsiTxn>, writer: &Arc<SsiTxn>, me_is_reader: bool) -> Result<()> {
    let r = reader.add_edge(OUT, writer);
    let w = writer.add_edge(IN, reader);
    let other_is_committed_pivot = if me_is_reader {
        w & COMMITTED != 0 && w & OUT != 0
    } else {
        r & COMMITTED != 0 && r & IN != 0
    };
    if other_is_committed_pivot {
        return Err(Error::Conflict(ConflictKind::DangerousStructure));
    }
    Ok(())
}

/// A read of `v`: leave a SIREAD mark, and check for a newer version.
pub fn on_read(tx: &mut impl Txn, v: *mut Version) -> Result<()> {
    // SAFETY: the caller is pinned and `v` is visible to us.
    let Some(r) = (unsafe { v.as_ref() }) else {
        return Ok(());
    };
    let me = me(tx);
    tx.shared().ssi.sireads.add(v as usize, Arc::clone(&me));
    let e = r.end.load(SeqCst);
    if e == INF_TS || (e & TID_MARK != 0 && e & !TID_MARK == tx.tid()) {
        return Ok(());
    }
    // Someone overwrote what we see: they are concurrent (else we would see
    // their version).
    let writer = tx
        .shared()
        .ssi
        .writers
        .lock()
        .get(&overwriter(r).load(SeqCst))
        .cloned();
    if let Some(w) = writer {
        if w.flags.load(SeqCst) & ABORTED == 0 {
            mark(&me, &w, true)?;
        }
    }
    Ok(())
}

/// We are overwriting `old`: record us as its overwriter and mark edges
/// from its concurrent readers.
#[inline]
pub fn on_write(tx: &mut impl Txn, old: &Version) {
    let me = me(tx);
    // The first overwrite registers us (an earlier insert of a new key does
    // not overwrite anything and so does not).
    if me.flags.fetch_or(REGISTERED, SeqCst) & REGISTERED == 0 {
        tx.shared()
            .ssi
            .writers
            .lock()
            .insert(tx.tid(), Arc::clone(&me));
    }
    overwriter(old).store(tx.tid(), SeqCst);
    let key = old as *const Version as usize;
    for reader in tx.shared().ssi.sireads.get(key) {
        if reader.tid == tx.tid() || reader.finished_before(me.begin) {
            continue;
        }
        if mark(&reader, &me, false).is_err() {
            // Remember it: the commit check will refuse us.
            me.flags.fetch_or(DOOMED, SeqCst);
        }
    }
}

pub fn pre_commit(tx: &mut impl Txn, cts: u64) -> Result<(), ConflictKind> {
    let _guard = crossbeam_epoch::pin();
    let me = me(tx);
    me.cstamp.store(cts, SeqCst);
    if !tx.scans().is_empty() {
        predicate::publish_pending::<SiSsi>(tx, cts);
        if !predicate::validate_scans::<SiSsi>(tx) {
            return Err(ConflictKind::Validation);
        }
    }
    let mut inserted: Vec<Vec<Arc<predicate::ScanRecord>>> = Vec::new();
    for w in tx.writes() {
        let Some(k) = &w.index_key else { continue };
        // SAFETY: tables outlive transactions.
        let t = unsafe { &*w.table };
        inserted.push(predicate::scanners_of(t, k, tx));
    }
    // Entries added to secondary indexes count as inserts into their ranges.
    for (idx, k, row) in crate::index::added_keys(tx.sec_writes()) {
        inserted.push(predicate::scanners_in(&idx.scan_log, &k, Some(row), tx));
    }
    // (By reference: dropping a consumed Flatten<IntoIter> was two
    // out-of-line calls per commit even with nothing inserted.)
    for rec in inserted.iter().flatten() {
        let Some(s) = rec
            .scanner
            .clone()
            .and_then(|s| s.downcast::<SsiTxn>().ok())
        else {
            continue;
        };
        if rec.cstamp > cts
            && rec
                .state
                .compare_exchange(predicate::PENDING, predicate::POISONED, SeqCst, SeqCst)
                .is_ok()
        {
            continue; // the scanner will abort
        }
        if rec.wait_decided() == predicate::COMMITTED
            && !s.finished_before(me.begin)
            && mark(&s, &me, false).is_err()
        {
            return Err(ConflictKind::DangerousStructure);
        }
    }
    if !predicate::try_commit_records(tx) {
        return Err(ConflictKind::Validation);
    }
    // Commit unless we are a pivot; a failed attempt withdraws the records
    // in rollback (an inserter that saw them meanwhile was only conservative).
    // Under our partners lock no edge can be added to us (see the module
    // doc), so the lists are complete for this decision.
    let mut partners = me.partners.lock();
    let f = me.flags.load(SeqCst);
    if f & DOOMED != 0 {
        return Err(ConflictKind::DangerousStructure);
    }
    let live = |l: &[Arc<SsiTxn>]| l.iter().any(|t| t.flags.load(SeqCst) & ABORTED == 0);
    let mut gone = 0;
    if f & IN != 0 && !live(&partners.ins) {
        gone |= IN;
    }
    if f & OUT != 0 && !live(&partners.outs) {
        gone |= OUT;
    }
    if f & !gone & IN != 0 && f & !gone & OUT != 0 {
        return Err(ConflictKind::DangerousStructure);
    }
    // Only our own thread changes our flags outside the lock, and it is here.
    // A committed transaction keeps the flags of its live edges: a later
    // marker refuses itself only if we really were half a pivot.
    me.flags.store((f & !gone) | COMMITTED, SeqCst);
    // After COMMITTED (both SeqCst): see `Registry::prune`.
    me.commit_epoch
        .store(tx.shared().quiescence.epoch(), SeqCst);
    // (Most transactions have no partner: the out-of-line drop of two
    // empty lists is then skipped.)
    if !partners.ins.is_empty() || !partners.outs.is_empty() {
        let finished = std::mem::take(&mut *partners);
        drop(partners);
        drop(finished);
    }
    Ok(())
}

pub fn on_abort(tx: &mut impl Txn) {
    if let Some(me) = state(tx) {
        let mut partners = me.partners.lock();
        me.flags.fetch_or(ABORTED, SeqCst);
        let finished = std::mem::take(&mut *partners);
        drop(partners);
        drop(finished);
    }
    tx.shared().ssi.writers.lock().remove(&tx.tid());
}
