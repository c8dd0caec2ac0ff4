//! Shuttle model checks of the engine's lock-free protocols.
//!
//! Shuttle controls scheduling only at its own primitives, so these are
//! *models*: each one reproduces, step for step and with the engine's memory
//! orderings, one protocol of the engine on a small arena of versions (indices
//! instead of pointers), explores random schedules, and asserts the invariant
//! the protocol exists for. Shuttle executes sequentially consistently, so a
//! model checks the interleavings of the protocol, not weak-memory effects;
//! the engine uses SeqCst on every step these models mirror.
//!
//! Bookkeeping that is not part of the protocol ("ghost" state: which versions
//! are committed or freed, what each thread saw) uses `std` atomics, which are
//! not scheduling points: a ghost update right after a shuttle operation
//! happens atomically with it.
//!
//! If a model and the engine drift apart, the model is wrong: keep the
//! functions cited at the top of each model in step with it.

use shuttle::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
use shuttle::sync::{Arc, Mutex};
use shuttle::thread;
use std::sync::atomic::{
    AtomicBool as GhostBool, AtomicU64 as GhostU64, AtomicUsize as GhostUsize,
    Ordering::SeqCst as G,
};

use Ordering::{AcqRel, Acquire, SeqCst};

// ----------------------------------------------------------------- shared

/// `storage/version.rs::TID_MARK`.
const TID_MARK: u64 = 1 << 63;
/// `storage/version.rs::INF_TS`.
const INF_TS: u64 = TID_MARK - 1;
/// The null pointer of a chain.
const NIL: usize = usize::MAX;

/// `storage/version.rs::Version`, with `next` an arena index.
struct Version {
    txn_id: AtomicU64,
    begin: AtomicU64,
    end: AtomicU64,
    next: AtomicUsize,
    /// MVTO `read_ts` / MV2PL reader count.
    word_a: AtomicU64,
}

impl Version {
    /// A committed version (begin = `ts`), unlocked.
    fn committed(ts: u64, next: usize) -> Version {
        Version {
            txn_id: AtomicU64::new(0),
            begin: AtomicU64::new(ts),
            end: AtomicU64::new(INF_TS),
            next: AtomicUsize::new(next),
            word_a: AtomicU64::new(0),
        }
    }
    /// `Version::alloc(tid, _, next)`: locked by and marked with `tid`.
    fn uncommitted(tid: u64, next: usize) -> Version {
        Version {
            txn_id: AtomicU64::new(tid),
            begin: AtomicU64::new(TID_MARK | tid),
            end: AtomicU64::new(INF_TS),
            next: AtomicUsize::new(next),
            word_a: AtomicU64::new(0),
        }
    }
}

fn ghost_flags(n: usize) -> Vec<GhostBool> {
    (0..n).map(|_| GhostBool::new(false)).collect()
}

fn ghost_counts(n: usize) -> Vec<GhostU64> {
    (0..n).map(|_| GhostU64::new(0)).collect()
}

// The transaction table, `txn/tid.rs` (slots, generations, the free list;
// the SSN words and `is_rw` are left out: no model reads them).

const SLOT_BITS: u32 = 20;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;
const STATUS_SHIFT: u32 = 62;
const CTS_MASK: u64 = (1 << STATUS_SHIFT) - 1;
const ACTIVE: u64 = 0;
const COMMITTING: u64 = 1;
const COMMITTED: u64 = 2;
const ABORTED: u64 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Active,
    Committing(u64),
    Committed(u64),
    Aborted,
    Gone,
}

struct Slot {
    tid: AtomicU64,
    state: AtomicU64,
    begin: AtomicU64,
    generation: AtomicU64,
}

struct Tids {
    slots: Vec<Slot>,
}

impl Tids {
    /// `TidTable::new`.
    fn new(capacity: usize) -> Tids {
        Tids {
            slots: (0..capacity)
                .map(|_| Slot {
                    tid: AtomicU64::new(0),
                    state: AtomicU64::new(ABORTED << STATUS_SHIFT),
                    begin: AtomicU64::new(u64::MAX),
                    generation: AtomicU64::new(0),
                })
                .collect(),
        }
    }

    /// `TidTable::acquire`: claiming a slot is a CAS of its `begin` from
    /// MAX (free) to the snapshot bound, which registers it at once.
    fn acquire(&self, lower_bound: u64) -> Option<u64> {
        let idx = (0..self.slots.len()).find(|&i| {
            let b = &self.slots[i].begin;
            b.load(SeqCst) == u64::MAX
                && b.compare_exchange(u64::MAX, lower_bound, SeqCst, SeqCst)
                    .is_ok()
        })?;
        let s = &self.slots[idx];
        let gen = s.generation.load(SeqCst) + 1;
        s.generation.store(gen, SeqCst);
        let tid = (gen << SLOT_BITS) | idx as u64;
        s.state.store(ACTIVE << STATUS_SHIFT, SeqCst);
        s.tid.store(tid, SeqCst);
        Some(tid)
    }

    /// `acquire`, retried until a slot is free (a model thread that needs
    /// a slot another thread still holds).
    fn acquire_spin(&self, lower_bound: impl Fn() -> u64) -> u64 {
        loop {
            if let Some(tid) = self.acquire(lower_bound()) {
                return tid;
            }
            thread::yield_now();
        }
    }

    /// `TidTable::release`.
    fn release(&self, tid: u64) {
        let idx = (tid & SLOT_MASK) as usize;
        let s = &self.slots[idx];
        // The id first: once `begin` is MAX the slot can be claimed.
        s.tid.store(0, SeqCst);
        s.begin.store(u64::MAX, SeqCst);
    }

    fn slot(&self, tid: u64) -> &Slot {
        &self.slots[(tid & SLOT_MASK) as usize]
    }

    fn set_committing(&self, tid: u64, cts: u64) {
        self.slot(tid)
            .state
            .store((COMMITTING << STATUS_SHIFT) | cts, SeqCst);
    }
    fn set_committed(&self, tid: u64, cts: u64) {
        self.slot(tid)
            .state
            .store((COMMITTED << STATUS_SHIFT) | cts, SeqCst);
    }
    fn set_aborted(&self, tid: u64) {
        self.slot(tid).state.store(ABORTED << STATUS_SHIFT, SeqCst);
    }

    /// `TidTable::status`.
    fn status(&self, tid: u64) -> Status {
        let s = self.slot(tid);
        if s.tid.load(SeqCst) != tid {
            return Status::Gone;
        }
        let st = s.state.load(SeqCst);
        if s.tid.load(SeqCst) != tid {
            return Status::Gone;
        }
        let cts = st & CTS_MASK;
        match st >> STATUS_SHIFT {
            ACTIVE => Status::Active,
            COMMITTING => Status::Committing(cts),
            COMMITTED => Status::Committed(cts),
            _ => Status::Aborted,
        }
    }

    /// `TidTable::wait_decided` (the backoff is a yield).
    fn wait_decided(&self, tid: u64) -> Status {
        loop {
            match self.status(tid) {
                Status::Committing(_) => thread::yield_now(),
                other => return other,
            }
        }
    }

    /// `TidTable::min_begin(false)`.
    fn min_begin(&self) -> u64 {
        let mut m = u64::MAX;
        for s in &self.slots {
            m = m.min(s.begin.load(SeqCst));
        }
        m
    }
}

/// `txn/visibility.rs::Mode`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Snapshot,
    TimestampOrder,
}

/// A conflict error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Conflict;

/// `txn/visibility.rs::visible`. `deref` is called on every version the
/// walk dereferences (the GC model asserts it is not freed).
fn visible(
    arena: &[Version],
    head: usize,
    ts: u64,
    me: u64,
    tids: &Tids,
    mode: Mode,
    deref: &dyn Fn(usize),
) -> Result<usize, Conflict> {
    let mut v = head;
    while v != NIL {
        deref(v);
        let r = &arena[v];
        if is_visible(r, ts, me, tids, mode)? {
            return Ok(v);
        }
        v = r.next.load(Acquire);
    }
    Ok(NIL)
}

/// `txn/visibility.rs::is_visible`.
fn is_visible(r: &Version, ts: u64, me: u64, tids: &Tids, mode: Mode) -> Result<bool, Conflict> {
    let b = r.begin.load(SeqCst);
    if b & TID_MARK == 0 {
        return Ok(b <= ts);
    }
    let creator = b & !TID_MARK;
    if creator == me {
        return Ok(true);
    }
    Ok(match tids.status(creator) {
        Status::Active => {
            if mode == Mode::TimestampOrder {
                let wts = tids.slot(creator).begin.load(SeqCst);
                if tids.status(creator) != Status::Active {
                    return is_visible(r, ts, me, tids, mode);
                }
                if wts < ts {
                    return Err(Conflict);
                }
            }
            false
        }
        Status::Aborted => false,
        Status::Committed(c) => c <= ts,
        Status::Committing(c) => {
            if c > ts {
                false
            } else {
                match tids.wait_decided(creator) {
                    // The engine returns `true`: without a pending state
                    // (see `stamp_model`) a decided COMMITTING(c <= ts) is
                    // COMMITTED(c); `c <= ts` is the same answer there.
                    Status::Committed(c) => c <= ts,
                    Status::Gone => stamped_at_or_before(r, ts),
                    _ => false,
                }
            }
        }
        Status::Gone => stamped_at_or_before(r, ts),
    })
}

/// `txn/visibility.rs::stamped_at_or_before`.
fn stamped_at_or_before(r: &Version, ts: u64) -> bool {
    let b = r.begin.load(SeqCst);
    b & TID_MARK == 0 && b <= ts
}

fn no_check(_: usize) {}

// ------------------------------------------- 1. install + write lock

// Mirrors crates/strata/src/txn/mod.rs: `Transaction::modify` (head load),
// `Transaction::lock_head` (CAS txn_id 0 -> tid, re-check the head),
// `Transaction::install` (link above the head, mark the old end),
// `Transaction::post_commit` (stamp begin, unlock own version, old version
// keeps the lock) and `Transaction::rollback` (restore the head, clear the
// old end and lock); storage/version.rs: `Version::alloc`.
// Protocol check: MVOCC's (none), so only the lock decides.

struct InstallModel {
    /// The row's indirection slot (`TableInner::rows.slot(tuple)`).
    slot: AtomicUsize,
    arena: Vec<Version>,
    clock: AtomicU64,
    // ghost
    head_mirror: GhostUsize,
    committed: Vec<GhostBool>,
    freed: Vec<GhostBool>,
    commits: GhostUsize,
}

/// One write transaction of writer `tid` that owns arena version `me`.
/// Returns whether it committed.
fn install_txn(m: &InstallModel, me: usize, tid: u64, commit: bool) -> bool {
    // modify: the head we will overwrite.
    let head = m.slot.load(Acquire);
    let h = &m.arena[head];
    // lock_head
    if h.txn_id.compare_exchange(0, tid, SeqCst, SeqCst).is_err() {
        return false;
    }
    if m.slot.load(Acquire) != head {
        h.txn_id.store(0, SeqCst);
        return false;
    }
    // install: Version::alloc(tid, data, head) — the version is private until
    // the slot store publishes it.
    let v = &m.arena[me];
    v.next.store(head, SeqCst);
    m.slot.store(me, SeqCst);
    let prev = m.head_mirror.swap(me, G);
    assert_eq!(
        prev, head,
        "writer {tid} linked over version {prev} with a stale head {head}"
    );
    assert!(
        m.committed[head].load(G),
        "two uncommitted versions linked: {me} over {head}"
    );
    h.end.store(TID_MARK | tid, SeqCst);
    if commit {
        // commit: cts, then post_commit.
        let cts = m.clock.fetch_add(1, SeqCst) + 1;
        v.begin.store(cts, SeqCst);
        m.committed[me].store(true, G);
        v.txn_id.store(0, SeqCst);
        // The old version keeps our id in txn_id.
        h.end.store(cts, SeqCst);
        m.commits.fetch_add(1, G);
        true
    } else {
        // rollback
        m.slot.store(head, SeqCst);
        let prev = m.head_mirror.swap(head, G);
        assert_eq!(prev, me, "rollback of {tid} overwrote version {prev}");
        h.end.store(INF_TS, SeqCst);
        h.txn_id.store(0, SeqCst);
        // gc::retire(new)
        m.freed[me].store(true, G);
        false
    }
}

/// Walks the chain from the head: a simple list ending at version 0.
fn walk_chain(m: &InstallModel) -> usize {
    let mut v = m.slot.load(Acquire);
    let mut n = 0;
    loop {
        n += 1;
        assert!(n <= m.arena.len(), "the chain has a cycle");
        let next = m.arena[v].next.load(Acquire);
        if next == NIL {
            assert_eq!(v, 0, "the chain does not end at the initial version");
            return n;
        }
        v = next;
    }
}

/// `plans[w][a]`: whether writer `w`'s `a`-th transaction commits (if it gets
/// the lock) or aborts after installing.
fn install_model(plans: &'static [&'static [bool]], observer: bool) {
    let attempts = plans[0].len();
    let n = 1 + plans.len() * attempts;
    let mut arena = vec![Version::committed(1, NIL)];
    for i in 1..n {
        arena.push(Version::uncommitted(i as u64, NIL));
    }
    let m = Arc::new(InstallModel {
        slot: AtomicUsize::new(0),
        arena,
        clock: AtomicU64::new(1),
        head_mirror: GhostUsize::new(0),
        committed: ghost_flags(n),
        freed: ghost_flags(n),
        commits: GhostUsize::new(0),
    });
    m.committed[0].store(true, G);
    let mut threads = Vec::new();
    for (w, plan) in plans.iter().enumerate() {
        let m = Arc::clone(&m);
        threads.push(thread::spawn(move || {
            for (a, &commit) in plan.iter().enumerate() {
                let me = 1 + w * attempts + a;
                install_txn(&m, me, me as u64, commit);
            }
        }));
    }
    if observer {
        let m = Arc::clone(&m);
        threads.push(thread::spawn(move || {
            walk_chain(&m);
            walk_chain(&m);
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
    let len = walk_chain(&m);
    assert_eq!(len, 1 + m.commits.load(G), "chain length != 1 + commits");
    let mut v = m.slot.load(Acquire);
    while v != NIL {
        assert!(
            m.committed[v].load(G),
            "uncommitted version {v} left in the chain"
        );
        assert!(!m.freed[v].load(G), "freed version {v} in the chain");
        assert_eq!(m.arena[v].begin.load(SeqCst) & TID_MARK, 0);
        v = m.arena[v].next.load(Acquire);
    }
}

// Mutations tried (each made shuttle report a violation):
// - post_commit clears the old version's lock too, and lock_head skips the
//   head re-check: "linked over version .. with a stale head" (lost update).
// - rollback clears the old lock before restoring the head, and lock_head
//   skips the re-check: a stale install, then the restore drops it.
// - post_commit clears txn_id before stamping begin: "two uncommitted
//   versions linked".
// (Dropping only the re-check passes: with the engine's orderings an
// unlocked version is always the head; the re-check is what keeps that
// true if either ordering above changes.)
#[test]
fn install_and_write_lock() {
    shuttle::check_random(
        || install_model(&[&[true, true], &[false, true], &[true, false]], true),
        15000,
    );
}

#[test]
fn install_and_write_lock_pct() {
    shuttle::check_pct(
        || install_model(&[&[true, false], &[true, true]], false),
        10000,
        3,
    );
}

// ---------------------------------- 2. MV2PL reader count vs write lock

// Mirrors crates/strata/src/cc/mv2pl.rs: `read` (check the lock, increment
// the count, re-check the lock and the head), `check_write` (after
// `Transaction::lock_head`'s CAS: the count must be our own read locks) and
// `release` (decrement on commit/abort); txn/mod.rs `lock_head`, `install`,
// `post_commit`.

struct TwoPl {
    slot: AtomicUsize,
    arena: Vec<Version>,
    clock: AtomicU64,
    // ghost: read locks held per version, and versions a writer passed
    // check_write on (kept until that writer unlocks on abort; a committed
    // writer's old version stays locked).
    readers: Vec<GhostU64>,
    write_locked: Vec<GhostBool>,
}

/// `mv2pl::read`; Ok(version) with the read lock held.
fn mv2pl_read(m: &TwoPl, tid: u64) -> Result<usize, Conflict> {
    let head = m.slot.load(SeqCst);
    let h = &m.arena[head];
    let free = |x: u64| x == 0 || x == tid;
    if !free(h.txn_id.load(SeqCst)) {
        return Err(Conflict);
    }
    h.word_a.fetch_add(1, SeqCst);
    if !free(h.txn_id.load(SeqCst)) || m.slot.load(SeqCst) != head {
        h.word_a.fetch_sub(1, SeqCst);
        return Err(Conflict);
    }
    m.readers[head].fetch_add(1, G);
    assert!(
        !m.write_locked[head].load(G) || h.txn_id.load(SeqCst) == tid,
        "reader {tid} holds a read lock on {head} next to a writer"
    );
    Ok(head)
}

/// `mv2pl::release` for the read locks in `reads`.
fn mv2pl_release(m: &TwoPl, reads: &[usize]) {
    for &v in reads {
        m.readers[v].fetch_sub(1, G);
        m.arena[v].word_a.fetch_sub(1, SeqCst);
    }
}

/// A write of the row by `tid` (its version is `me`), after the reads in
/// `reads` (still locked); commits or rolls back, then releases the reads.
fn mv2pl_write(m: &TwoPl, tid: u64, me: usize, reads: &[usize], commit: bool) {
    let head = m.slot.load(Acquire);
    let h = &m.arena[head];
    // lock_head
    let locked = h.txn_id.compare_exchange(0, tid, SeqCst, SeqCst).is_ok()
        && if m.slot.load(Acquire) != head {
            h.txn_id.store(0, SeqCst);
            false
        } else {
            // check_write
            let mine = reads.iter().filter(|&&r| r == head).count() as u64;
            if h.word_a.load(SeqCst) != mine {
                h.txn_id.store(0, SeqCst);
                false
            } else {
                true
            }
        };
    if locked {
        let mine = reads.iter().filter(|&&r| r == head).count() as u64;
        m.write_locked[head].store(true, G);
        assert_eq!(
            m.readers[head].load(G),
            mine,
            "writer {tid} passed check_write on {head} while others hold read locks"
        );
        // install
        m.arena[me].next.store(head, SeqCst);
        m.slot.store(me, SeqCst);
        h.end.store(TID_MARK | tid, SeqCst);
        if commit {
            let cts = m.clock.fetch_add(1, SeqCst) + 1;
            m.arena[me].begin.store(cts, SeqCst);
            m.arena[me].txn_id.store(0, SeqCst);
            h.end.store(cts, SeqCst);
        } else {
            m.slot.store(head, SeqCst);
            h.end.store(INF_TS, SeqCst);
            m.write_locked[head].store(false, G);
            h.txn_id.store(0, SeqCst);
        }
    }
    mv2pl_release(m, reads);
}

fn mv2pl_model() {
    // 0: initial version; 1, 2: the two writers' versions.
    let m = Arc::new(TwoPl {
        slot: AtomicUsize::new(0),
        arena: vec![
            Version::committed(1, NIL),
            Version::uncommitted(1, NIL),
            Version::uncommitted(2, NIL),
        ],
        clock: AtomicU64::new(1),
        readers: ghost_counts(3),
        write_locked: ghost_flags(3),
    });
    // T1 reads then writes (lock upgrade), commits.
    let m1 = Arc::clone(&m);
    let t1 = thread::spawn(move || {
        let reads: Vec<usize> = mv2pl_read(&m1, 1).into_iter().collect();
        mv2pl_write(&m1, 1, 1, &reads, true);
    });
    // T2 writes blind, aborts after installing.
    let m2 = Arc::clone(&m);
    let t2 = thread::spawn(move || mv2pl_write(&m2, 2, 2, &[], false));
    // T3, T4 read (twice, holding the locks to the end), then release.
    let readers: Vec<_> = [3u64, 4]
        .into_iter()
        .map(|tid| {
            let m = Arc::clone(&m);
            thread::spawn(move || {
                let mut reads = Vec::new();
                for _ in 0..2 {
                    if let Ok(v) = mv2pl_read(&m, tid) {
                        reads.push(v);
                    }
                }
                mv2pl_release(&m, &reads);
            })
        })
        .collect();
    t1.join().unwrap();
    t2.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
    for v in &m.arena {
        assert_eq!(v.word_a.load(SeqCst), 0, "a read lock leaked");
    }
}

// Mutations tried (each made shuttle report a violation):
// - `read` skips the re-check of txn_id after the increment: "writer ..
//   passed check_write .. while others hold read locks".
// - the writer reads the count before its CAS on txn_id (check, then lock):
//   same report.
#[test]
fn mv2pl_reader_count_vs_write_lock() {
    shuttle::check_random(mv2pl_model, 10000);
    shuttle::check_pct(mv2pl_model, 5000, 3);
}

// ------------------------------------- 3. MVTO read_ts vs writer

// Mirrors crates/strata/src/cc/mvto.rs: `read` (visible in TimestampOrder
// mode, fetch_max read_ts, load the lock, ask the locker's state) and
// `check_write` (after lock_head's CAS: begin and read_ts <= ts);
// txn/visibility.rs: `is_visible` (Mode::TimestampOrder: a running older
// writer is a conflict; re-decide when it leaves ACTIVE, commit 6d59bba);
// txn/mod.rs: `Transaction::begin` (MVTO rw: register lower bound, fence,
// draw ts), `commit` (cts = ts), `post_commit`, `rollback`; txn/tid.rs.

struct Mvto {
    slot: AtomicUsize,
    arena: Vec<Version>,
    tids: Tids,
    clock: AtomicU64,
    // ghost
    writer_committed: GhostBool,
    /// 0 = conflict, 1 + version index otherwise.
    reader_got: GhostUsize,
}

/// `Transaction::begin` for an MVTO read-write transaction.
fn mvto_begin(m: &Mvto) -> (u64, u64) {
    let tid = m.tids.acquire_spin(|| m.clock.load(SeqCst));
    fence(SeqCst);
    let ts = m.clock.fetch_add(1, SeqCst) + 1;
    m.tids.slot(tid).begin.store(ts, SeqCst);
    (tid, ts)
}

/// `mvto::read` of the row by (tid, ts).
fn mvto_read(m: &Mvto, tid: u64, ts: u64) -> Result<usize, Conflict> {
    let tids = &m.tids;
    let v = visible(
        &m.arena,
        m.slot.load(Acquire),
        ts,
        tid,
        tids,
        Mode::TimestampOrder,
        &no_check,
    )?;
    let r = &m.arena[v];
    r.word_a.fetch_max(ts, SeqCst);
    let locker = r.txn_id.load(SeqCst);
    if locker != 0 && locker != tid {
        let wts = tids.slot(locker).begin.load(SeqCst);
        let running = matches!(tids.status(locker), Status::Active | Status::Committing(_));
        if running && wts < ts {
            return Err(Conflict);
        }
        if !running
            && visible(
                &m.arena,
                m.slot.load(Acquire),
                ts,
                tid,
                tids,
                Mode::TimestampOrder,
                &no_check,
            )? != v
        {
            return Err(Conflict);
        }
    }
    Ok(v)
}

/// modify + lock_head (check_write) + install + commit/rollback + finish, by
/// (tid, ts) writing arena version `me`.
fn mvto_write(m: &Mvto, tid: u64, ts: u64, me: usize, commit: bool) {
    let head = m.slot.load(Acquire);
    let h = &m.arena[head];
    let ok = h.txn_id.compare_exchange(0, tid, SeqCst, SeqCst).is_ok()
        && if m.slot.load(Acquire) != head {
            h.txn_id.store(0, SeqCst);
            false
        } else if h.begin.load(SeqCst) > ts || h.word_a.load(SeqCst) > ts {
            // check_write refused
            h.txn_id.store(0, SeqCst);
            false
        } else {
            true
        };
    if !ok {
        m.tids.set_aborted(tid);
        m.tids.release(tid);
        return;
    }
    let v = &m.arena[me];
    v.next.store(head, SeqCst);
    m.slot.store(me, SeqCst);
    h.end.store(TID_MARK | tid, SeqCst);
    if commit {
        let cts = ts;
        m.tids.set_committing(tid, cts);
        m.tids.set_committed(tid, cts);
        m.writer_committed.store(true, G);
        v.begin.store(cts, SeqCst);
        v.txn_id.store(0, SeqCst);
        h.end.store(cts, SeqCst);
    } else {
        m.slot.store(head, SeqCst);
        h.end.store(INF_TS, SeqCst);
        h.txn_id.store(0, SeqCst);
        m.tids.set_aborted(tid);
    }
    m.tids.release(tid);
}

/// Writer W (ts 2) and reader R (ts 3 > 2) on one row. With `reuse`, a
/// third transaction begins as soon as W frees its slot, so W's id goes
/// stale and the slot's `begin` becomes someone else's.
fn mvto_model(writer_commits: bool, reuse: bool) {
    let m = Arc::new(Mvto {
        slot: AtomicUsize::new(0),
        arena: vec![Version::committed(1, NIL), Version::committed(0, NIL)],
        tids: Tids::new(2),
        clock: AtomicU64::new(1),
        writer_committed: GhostBool::new(false),
        reader_got: GhostUsize::new(usize::MAX),
    });
    let (wtid, wts) = mvto_begin(&m);
    let (rtid, rts) = mvto_begin(&m);
    assert!(wts < rts);
    // W's version, as Version::alloc makes it.
    m.arena[1].txn_id.store(wtid, SeqCst);
    m.arena[1].begin.store(TID_MARK | wtid, SeqCst);
    let mw = Arc::clone(&m);
    let w = thread::spawn(move || mvto_write(&mw, wtid, wts, 1, writer_commits));
    let mr = Arc::clone(&m);
    let r = thread::spawn(move || {
        let got = mvto_read(&mr, rtid, rts).map_or(0, |v| v + 1);
        mr.reader_got.store(got, G);
    });
    let o = reuse.then(|| {
        let mo = Arc::clone(&m);
        thread::spawn(move || {
            let (tid, _ts) = mvto_begin(&mo);
            mo.tids.set_aborted(tid);
            mo.tids.release(tid);
        })
    });
    w.join().unwrap();
    r.join().unwrap();
    if let Some(o) = o {
        o.join().unwrap();
    }
    let committed = m.writer_committed.load(G);
    match m.reader_got.load(G) {
        0 => {}
        1 => assert!(
            !committed,
            "timestamp order broken: the writer (ts {wts}) committed but the reader (ts {rts}) read the old version"
        ),
        2 => assert!(committed, "the reader read an uncommitted/aborted version"),
        x => panic!("reader result {x}"),
    }
}

// Mutations tried (each made shuttle report "timestamp order broken"):
// - `read` loads txn_id before raising read_ts (fetch_max after the load).
// - `check_write` reads read_ts before the CAS on txn_id.
// - the pre-6d59bba `read` (load wts only while the first status() says
//   running, treat a later Gone as finished-without-conflict and skip the
//   re-read) in `mvto_writer_commits_between_reader_steps`.
#[test]
fn mvto_read_ts_vs_writer() {
    shuttle::check_random(|| mvto_model(true, false), 10000);
    shuttle::check_random(|| mvto_model(false, false), 5000);
}

#[test]
fn mvto_writer_commits_between_reader_steps() {
    shuttle::check_random(|| mvto_model(true, true), 10000);
    shuttle::check_pct(|| mvto_model(true, true), 5000, 3);
}

// ------------------------- 4. commit stamping + TID-table visibility

// Mirrors crates/strata/src/txn/mod.rs: `Transaction::commit` (set_precommit,
// cts = clock.fetch_add + 1, set_committing, set_committed), `post_commit` (stamp
// begin, unlock, old end), `finish` (release the slot), `rollback`;
// txn/tid.rs: `acquire`, `release`, `status`, `wait_decided`;
// txn/visibility.rs: `visible`, `is_visible` (Mode::Snapshot),
// `stamped_at_or_before`.

struct Stamp {
    /// Rows A and B.
    slots: [AtomicUsize; 2],
    arena: Vec<Version>,
    tids: Tids,
    clock: AtomicU64,
    // ghost
    cts: GhostU64,
}

/// COMMITTING with no timestamp yet: readers wait for the decision.
const PENDING_CTS: u64 = 0;

/// `pending`: announce COMMITTING (PRECOMMIT in the engine, `TidTable::
/// set_precommit`) before drawing the commit timestamp, as the engine does.
fn stamp_model(commit: bool, reuse: bool, pending: bool) {
    // 0, 1: committed a0, b0; 2, 3: the writer's a1, b1.
    let m = Arc::new(Stamp {
        slots: [AtomicUsize::new(2), AtomicUsize::new(3)],
        arena: vec![
            Version::committed(1, NIL),
            Version::committed(1, NIL),
            Version::committed(0, 0),
            Version::committed(0, 1),
        ],
        tids: Tids::new(2),
        clock: AtomicU64::new(1),
        cts: GhostU64::new(0),
    });
    let wtid = m.tids.acquire(1).unwrap();
    m.tids.slot(wtid).begin.store(1, SeqCst);
    for (new, old) in [(2, 0), (3, 1)] {
        m.arena[new].txn_id.store(wtid, SeqCst);
        m.arena[new].begin.store(TID_MARK | wtid, SeqCst);
        m.arena[old].txn_id.store(wtid, SeqCst);
        m.arena[old].end.store(TID_MARK | wtid, SeqCst);
    }
    let mw = Arc::clone(&m);
    let writer = thread::spawn(move || {
        let m = &*mw;
        if commit {
            if pending {
                m.tids.set_committing(wtid, PENDING_CTS);
            }
            let cts = m.clock.fetch_add(1, SeqCst) + 1;
            m.tids.set_committing(wtid, cts);
            m.cts.store(cts, G);
            m.tids.set_committed(wtid, cts);
            for (new, old) in [(2, 0), (3, 1)] {
                m.arena[new].begin.store(cts, SeqCst);
                m.arena[new].txn_id.store(0, SeqCst);
                m.arena[old].end.store(cts, SeqCst);
            }
        } else {
            for (row, (_new, old)) in [(2, 0), (3, 1)].into_iter().enumerate().rev() {
                m.slots[row].store(old, SeqCst);
                m.arena[old].end.store(INF_TS, SeqCst);
                m.arena[old].txn_id.store(0, SeqCst);
            }
            m.tids.set_aborted(wtid);
        }
        m.tids.release(wtid);
        if reuse {
            // The next transaction in the same slot commits (nothing written).
            let tid = m.tids.acquire_spin(|| m.clock.load(SeqCst));
            let cts = m.clock.fetch_add(1, SeqCst) + 1;
            m.tids.set_committing(tid, cts);
            m.tids.set_committed(tid, cts);
            m.tids.release(tid);
        }
    });
    let readers: Vec<_> = [[0usize, 1], [1, 0]]
        .into_iter()
        .map(|order| {
            let m = Arc::clone(&m);
            thread::spawn(move || {
                let s = m.clock.load(SeqCst);
                let mut saw = [false; 2];
                for row in order {
                    let head = m.slots[row].load(Acquire);
                    let v =
                        visible(&m.arena, head, s, 0, &m.tids, Mode::Snapshot, &no_check).unwrap();
                    saw[row] = v == row + 2;
                }
                (s, saw)
            })
        })
        .collect();
    writer.join().unwrap();
    let cts = m.cts.load(G);
    for r in readers {
        let (s, saw) = r.join().unwrap();
        let expect = commit && cts <= s;
        assert_eq!(
            saw,
            [expect; 2],
            "fractured read: snapshot {s} saw {saw:?} of a writer that {} at {cts}",
            if commit { "committed" } else { "aborted" }
        );
    }
}

// The engine's protocol (PRECOMMIT — COMMITTING with a pending timestamp —
// before the fetch_add; a reader that meets it waits and then compares the
// timestamp): snapshot consistency holds, with and without slot reuse, for
// commit and abort. This model found the engine's original order (fetch_add
// before announcing) to allow a fractured read: a snapshot taken between the
// two found the writer ACTIVE, skipped its version of row A, then saw its
// stamped version of row B (`pending = false` reproduces it).
// Mutations tried (each made shuttle report a "fractured read"):
// - `pending = false` (the original engine order).
// - `status` without the second tid load: a reader takes the next
//   occupant's state for the writer's (with `reuse`; found by PCT only).
// - `is_visible` treats COMMITTING(c <= s) as invisible instead of waiting.
// - post_commit releases the slot before stamping begin.
#[test]
fn commit_stamping_and_tid_visibility() {
    shuttle::check_random(|| stamp_model(true, true, true), 5000);
    shuttle::check_pct(|| stamp_model(true, true, true), 10000, 3);
    shuttle::check_random(|| stamp_model(true, false, true), 2500);
    shuttle::check_pct(|| stamp_model(false, true, true), 2500, 3);
}

// `TidTable::acquire` / `release` under slot reuse: two threads take turns
// on one slot. The releaser clears the id before `begin` (which frees the
// slot); the other order let a claimant's new id be overwritten by the
// releaser's 0, so its own transaction read as Gone (checked: that
// mutation fails this model).
fn slot_reuse_model() {
    let tids = Arc::new(Tids::new(1));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let tids = Arc::clone(&tids);
            thread::spawn(move || {
                for _ in 0..3 {
                    let tid = tids.acquire_spin(|| 1);
                    assert_eq!(tids.status(tid), Status::Active, "own id lost");
                    assert_eq!(tids.min_begin(), 1, "claim registered nothing");
                    tids.release(tid);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(tids.min_begin(), u64::MAX);
}

#[test]
fn slot_claim_and_reuse() {
    shuttle::check_random(slot_reuse_model, 5000);
    shuttle::check_pct(slot_reuse_model, 5000, 3);
}

// ------------------------------------- 5. GC horizon vs registration

// Mirrors crates/strata/src/txn/mod.rs: `Transaction::begin` (register a
// lower bound in the slot, fence, take the snapshot, store it), `commit`,
// `post_commit` (GC queue entry at cts), `finish`; db.rs:
// `DbInner::compute_horizon` (load the clock, fence, min over registered
// snapshots); gc/mod.rs: `GcQueue::collect` (entries with cts <= horizon),
// `prune_chain` (now `prune_row`, which cuts below the version an entry
// names; cutting below the newest version visible at the horizon, as
// modelled here, is the same rule seen from the chain's head),
// `retire_chain`/`retire` (freeing is immediate here: a freed version must
// never be dereferenced again by a reader that holds a registered snapshot).

struct Gc {
    slot: AtomicUsize,
    arena: Vec<Version>,
    tids: Tids,
    clock: AtomicU64,
    /// Commit timestamps of overwriters (GcQueue).
    queue: Mutex<Vec<u64>>,
    // ghost
    freed: Vec<GhostBool>,
    /// begin of each version once committed.
    stamped: Vec<GhostU64>,
}

/// Transaction::begin (SI family): returns (tid, snapshot).
fn gc_begin(m: &Gc) -> (u64, u64) {
    let lower = m.clock.load(SeqCst);
    // (The claim's SeqCst CAS registered `lower`: no fence.)
    let tid = m.tids.acquire(lower).expect("a free slot");
    let ts = m.clock.load(SeqCst);
    m.tids.slot(tid).begin.store(ts, SeqCst);
    (tid, ts)
}

/// One update transaction writing arena version `me` over the head.
fn gc_update(m: &Gc, me: usize) {
    let (tid, _ts) = gc_begin(m);
    let head = m.slot.load(Acquire);
    let h = &m.arena[head];
    // No other writer: the lock is always free.
    h.txn_id.compare_exchange(0, tid, SeqCst, SeqCst).unwrap();
    let v = &m.arena[me];
    v.txn_id.store(tid, SeqCst);
    v.begin.store(TID_MARK | tid, SeqCst);
    v.next.store(head, SeqCst);
    m.slot.store(me, SeqCst);
    h.end.store(TID_MARK | tid, SeqCst);
    let cts = m.clock.fetch_add(1, SeqCst) + 1;
    m.tids.set_committing(tid, cts);
    m.tids.set_committed(tid, cts);
    // Visible from here on (through the TID table, then the stamp).
    m.stamped[me].store(cts, G);
    v.begin.store(cts, SeqCst);
    v.txn_id.store(0, SeqCst);
    h.end.store(cts, SeqCst);
    m.queue.lock().unwrap().push(cts);
    m.tids.release(tid);
}

/// DbInner::compute_horizon.
fn compute_horizon(m: &Gc) -> u64 {
    let g = m.clock.load(SeqCst);
    fence(SeqCst);
    g.min(m.tids.min_begin())
}

/// DbInner::collect_garbage -> GcQueue::collect -> prune_chain.
fn gc_pass(m: &Gc) {
    let h = compute_horizon(m);
    let ready = {
        let mut q = m.queue.lock().unwrap();
        let n = q.len();
        q.retain(|&cts| cts > h);
        n != q.len()
    };
    if !ready {
        return;
    }
    // prune_chain
    let mut v = m.slot.load(Acquire);
    while v != NIL {
        let r = &m.arena[v];
        let b = r.begin.load(SeqCst);
        if b & TID_MARK == 0 && b <= h {
            let mut tail = r.next.swap(NIL, AcqRel);
            // retire_chain
            while tail != NIL {
                let next = m.arena[tail].next.load(Acquire);
                m.freed[tail].store(true, G);
                tail = next;
            }
            return;
        }
        v = r.next.load(Acquire);
    }
}

fn gc_model() {
    // 0: initial (begin 1); 1, 2: two updates.
    let m = Arc::new(Gc {
        slot: AtomicUsize::new(0),
        arena: vec![
            Version::committed(1, NIL),
            Version::committed(0, NIL),
            Version::committed(0, NIL),
        ],
        tids: Tids::new(3),
        clock: AtomicU64::new(1),
        queue: Mutex::new(Vec::new()),
        freed: ghost_flags(3),
        stamped: ghost_counts(3),
    });
    m.stamped[0].store(1, G);
    let mw = Arc::clone(&m);
    let writer = thread::spawn(move || {
        gc_update(&mw, 1);
        gc_update(&mw, 2);
    });
    let mg = Arc::clone(&m);
    let gc = thread::spawn(move || {
        gc_pass(&mg);
        gc_pass(&mg);
    });
    let mr = Arc::clone(&m);
    let reader = thread::spawn(move || {
        let m = &*mr;
        let (tid, s) = gc_begin(m);
        // Two reads across which the snapshot must stay readable.
        // The newest version decided committed at or before s.
        let newest = || {
            (0..3)
                .filter(|&i| {
                    let b = m.stamped[i].load(G);
                    b != 0 && b <= s
                })
                .max()
                .unwrap()
        };
        for _ in 0..2 {
            let deref = |v: usize| {
                assert!(
                    !m.freed[v].load(G),
                    "reader at snapshot {s} dereferenced freed version {v}"
                );
            };
            let before = newest();
            let v = visible(
                &m.arena,
                m.slot.load(Acquire),
                s,
                0,
                &m.tids,
                Mode::Snapshot,
                &deref,
            )
            .unwrap();
            // Not `v == newest()`: a commit whose cts was drawn but which
            // was still ACTIVE when read is the fractured read of model 4.
            assert!(
                v != NIL && v >= before && v <= newest(),
                "reader at snapshot {s} lost its version (got {v}, want {before})"
            );
        }
        m.tids.release(tid);
    });
    writer.join().unwrap();
    gc.join().unwrap();
    reader.join().unwrap();
}

// Mutations tried (each made shuttle report "dereferenced freed version" or
// "lost its version"):
// - `begin` takes the snapshot before registering (the reordering the fence
//   forbids: register lower bound, fence, then read the clock).
// - `compute_horizon` scans the slots before loading the clock.
// Both need a reader descheduled across a whole writer + GC pass, which
// the random scheduler practically never picks: PCT finds them.
#[test]
fn gc_horizon_vs_registration() {
    shuttle::check_random(gc_model, 5000);
    shuttle::check_pct(gc_model, 15000, 3);
}

// ------------------------------------------- 6. drop_table vs commit
//
// Mirrors crates/strata/src/db.rs: `Database::drop_table` (set `dropped`,
// `TidTable::wait_for_deciding`, then log the DropTable record) and
// txn/mod.rs: `Transaction::commit` (announce PRECOMMIT/COMMITTING, then
// `dropped_table_written`; refused: roll back; else validate, reserve the
// log record, COMMITTED). The log is a counter of reserved positions. A
// commit that is not refused must be decided, with its record reserved,
// before the drop's record: every commit is ordered before the drop or
// refused.

struct DropModel {
    tids: Tids,
    dropped: shuttle::sync::atomic::AtomicBool,
    lsn: AtomicU64,
    // ghost: each committer's log position (0: refused), the drop's
    committed_at: Vec<GhostU64>,
    drop_at: GhostU64,
}

/// `TidTable::wait_for_deciding` (the backoff is a yield).
fn wait_for_deciding(tids: &Tids) {
    let deciding = |st: u64| st >> STATUS_SHIFT == COMMITTING;
    for s in &tids.slots {
        if !deciding(s.state.load(SeqCst)) {
            continue;
        }
        let tid = s.tid.load(SeqCst);
        while deciding(s.state.load(SeqCst)) && s.tid.load(SeqCst) == tid {
            thread::yield_now();
        }
    }
}

fn drop_model() {
    let m = Arc::new(DropModel {
        tids: Tids::new(2),
        dropped: shuttle::sync::atomic::AtomicBool::new(false),
        lsn: AtomicU64::new(1),
        committed_at: ghost_counts(2),
        drop_at: GhostU64::new(0),
    });
    let committers: Vec<_> = (0..2)
        .map(|i| {
            let m = Arc::clone(&m);
            thread::spawn(move || {
                let tid = m.tids.acquire(1).expect("a free slot");
                // (It wrote to the table earlier, while it still existed.)
                m.tids.set_committing(tid, 2 + i as u64);
                if m.dropped.load(SeqCst) {
                    m.tids.set_aborted(tid);
                } else {
                    let at = m.lsn.fetch_add(1, SeqCst);
                    m.committed_at[i].store(at, G);
                    m.tids.set_committed(tid, 2 + i as u64);
                }
                m.tids.release(tid);
            })
        })
        .collect();
    let md = Arc::clone(&m);
    let dropper = thread::spawn(move || {
        md.dropped.store(true, SeqCst);
        wait_for_deciding(&md.tids);
        md.drop_at.store(md.lsn.fetch_add(1, SeqCst), G);
    });
    for c in committers {
        c.join().unwrap();
    }
    dropper.join().unwrap();
    let drop_at = m.drop_at.load(G);
    for c in &m.committed_at {
        let at = c.load(G);
        assert!(
            at == 0 || at < drop_at,
            "a commit logged at {at}, after the drop at {drop_at}"
        );
    }
}

// Mutations tried (each made shuttle report "a commit logged ... after the
// drop"): the dropper does not wait (`wait_for_deciding` left out); the
// committer checks `dropped` before announcing COMMITTING.
#[test]
fn drop_table_orders_or_refuses_every_commit() {
    shuttle::check_random(drop_model, 5000);
    shuttle::check_pct(drop_model, 5000, 3);
}
