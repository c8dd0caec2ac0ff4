//! Shuttle model checks of the engine's lock-free protocols.
//!
//! Built with `--cfg strata_model` (see `src/sync.rs`: the engine's TID
//! table, master seqlock, log buffer and COOP CAS then run on shuttle's
//! atomics); `.ci/run` runs this file that way. Two kinds of check live here:
//!
//! - **The engine's own code.** `commit_stamping_and_tid_visibility` runs a
//!   real `Database` (SI): `Transaction::commit` (PRECOMMIT, clock,
//!   COMMITTING, COMMITTED, stamping, slot release) against readers' real
//!   `visible`; `slot_claim_and_reuse` runs the real `TidTable`. The
//!   `*_is_caught` tests break one step of that code (`strata::model::Break`)
//!   and show that shuttle finds the failure.
//! - **Models** of protocols whose steps are on `Version`'s header words and
//!   the indirection slot (install and write lock, MV2PL reader count, MVTO
//!   read timestamp, GC horizon vs registration): those atomics belong to
//!   `storage/version.rs` and `storage/indirection.rs`, which are not built
//!   on `crate::sync`, so their steps would not be scheduling points. Each
//!   reproduces its protocol step for step, with the engine's orderings, on
//!   a small arena of versions (indices instead of pointers) over the
//!   engine's real `TidTable`; keep the functions cited at the top of each in
//!   step with the engine. Each has a `*_is_caught` test that applies one
//!   broken ordering (`Mutation`) and shows shuttle finds it; the "Mutations
//!   tried" notes list others each model caught once.
//!
//! Shuttle executes sequentially consistently, so these check the
//! interleavings of a protocol, not weak-memory effects. Bookkeeping that is
//! not part of a protocol ("ghost" state) uses `std` atomics, which are not
//! scheduling points: a ghost update right after a shuttle operation happens
//! atomically with it.
#![cfg(strata_model)]

use shuttle::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
use shuttle::sync::{Arc, Mutex};
use shuttle::thread;
use std::sync::atomic::{
    AtomicBool as GhostBool, AtomicU64 as GhostU64, AtomicUsize as GhostUsize,
    Ordering::SeqCst as G,
};
use strata::model::{with_broken, Break, Status, TidTable};
use strata::{key, row, Database, GcPolicy, Options, Protocol, Schema, Type, Value};

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

/// `TidTable::acquire`, retried until a slot is free (a model thread that
/// needs a slot another thread still holds).
fn acquire_spin(tids: &TidTable, lower_bound: impl Fn() -> u64) -> u64 {
    loop {
        if let Some(tid) = tids.acquire(lower_bound(), true) {
            return tid;
        }
        thread::yield_now();
    }
}

/// A broken ordering in one of the models below (their `*_is_caught`
/// tests), like `strata::model::Break` for the engine's own code.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mutation {
    /// post_commit clears the lock of its new version before stamping it.
    UnlockBeforeStamp,
    /// MV2PL `read` does not re-check the lock after counting itself in.
    ReadLockWithoutRecheck,
    /// MVTO `read` loads the lock before raising read_ts.
    LockLoadBeforeReadTs,
    /// `compute_horizon` scans the slots before it loads the clock.
    ScanBeforeClock,
}

std::thread_local! {
    static MUTATION: std::cell::Cell<Option<Mutation>> = const { std::cell::Cell::new(None) };
}

fn mutated(m: Mutation) -> bool {
    MUTATION.with(|c| c.get() == Some(m))
}

/// Whether `check` (a shuttle check of a model with `m` applied) fails.
fn caught(m: Mutation, check: impl FnOnce() + std::panic::UnwindSafe) -> bool {
    MUTATION.with(|c| c.set(Some(m)));
    let r = std::panic::catch_unwind(check);
    MUTATION.with(|c| c.set(None));
    r.is_err()
}

/// `storage/visibility.rs::Mode`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Snapshot,
    TimestampOrder,
}

/// A conflict error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Conflict;

/// `storage/visibility.rs::visible` over the arena (the engine's own runs in
/// `stamp_model`). `deref` is called on every version the walk dereferences
/// (the GC model asserts it is not freed).
fn visible(
    arena: &[Version],
    head: usize,
    ts: u64,
    me: u64,
    tids: &TidTable,
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

/// `storage/visibility.rs::is_visible`.
fn is_visible(
    r: &Version,
    ts: u64,
    me: u64,
    tids: &TidTable,
    mode: Mode,
) -> Result<bool, Conflict> {
    let b = r.begin.load(SeqCst);
    if b & TID_MARK == 0 {
        return Ok(b <= ts);
    }
    let creator = b & !TID_MARK;
    if creator == me {
        return Ok(true);
    }
    Ok(match tids.settled_status(creator) {
        Status::Precommit => unreachable!("settled_status waits PRECOMMIT out"),
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
                    Status::Committed(_) => true,
                    Status::Gone => stamped_at_or_before(r, ts),
                    _ => false,
                }
            }
        }
        Status::Gone => stamped_at_or_before(r, ts),
    })
}

/// `storage/visibility.rs::stamped_at_or_before`.
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
        if mutated(Mutation::UnlockBeforeStamp) {
            v.txn_id.store(0, SeqCst);
        }
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
        // storage::retire(new)
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
//   versions linked" (`unlock_before_stamp_is_caught`).
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
fn unlock_before_stamp_is_caught() {
    assert!(caught(Mutation::UnlockBeforeStamp, || {
        shuttle::check_random(
            || install_model(&[&[true, true], &[false, true], &[true, false]], true),
            15000,
        )
    }));
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
    let recheck = !mutated(Mutation::ReadLockWithoutRecheck);
    if recheck && (!free(h.txn_id.load(SeqCst)) || m.slot.load(SeqCst) != head) {
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
//   passed check_write .. while others hold read locks", or "reader ..
//   holds a read lock .. next to a writer"
//   (`a_read_lock_without_the_recheck_is_caught`).
// - the writer reads the count before its CAS on txn_id (check, then lock):
//   same report.
#[test]
fn mv2pl_reader_count_vs_write_lock() {
    shuttle::check_random(mv2pl_model, 10000);
    shuttle::check_pct(mv2pl_model, 5000, 3);
}

#[test]
fn a_read_lock_without_the_recheck_is_caught() {
    assert!(caught(Mutation::ReadLockWithoutRecheck, || {
        shuttle::check_random(mv2pl_model, 10000)
    }));
}

// ------------------------------------- 3. MVTO read_ts vs writer

// Mirrors crates/strata/src/cc/mvto.rs: `read` (visible in TimestampOrder
// mode, fetch_max read_ts, load the lock, ask the locker's state) and
// `check_write` (after lock_head's CAS: begin and read_ts <= ts);
// storage/visibility.rs: `is_visible` (Mode::TimestampOrder: a running older
// writer is a conflict; re-decide when it leaves ACTIVE, commit 6d59bba);
// txn/mod.rs: `Transaction::begin` (MVTO rw: register lower bound, fence,
// draw ts), `commit` (cts = ts), `post_commit`, `rollback`. The TID table
// is the engine's own.

struct Mvto {
    slot: AtomicUsize,
    arena: Vec<Version>,
    tids: TidTable,
    clock: AtomicU64,
    // ghost
    writer_committed: GhostBool,
    /// 0 = conflict, 1 + version index otherwise.
    reader_got: GhostUsize,
}

/// `Transaction::begin` for an MVTO read-write transaction.
fn mvto_begin(m: &Mvto) -> (u64, u64) {
    let tid = acquire_spin(&m.tids, || m.clock.load(SeqCst));
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
    let early = mutated(Mutation::LockLoadBeforeReadTs).then(|| r.txn_id.load(SeqCst));
    r.word_a.fetch_max(ts, SeqCst);
    let locker = early.unwrap_or_else(|| r.txn_id.load(SeqCst));
    if locker != 0 && locker != tid {
        let is_running = |s| {
            matches!(
                s,
                Status::Active | Status::Precommit | Status::Committing(_)
            )
        };
        let mut still_running = false;
        if is_running(tids.status(locker)) {
            let wts = tids.slot(locker).begin.load(SeqCst);
            still_running = is_running(tids.status(locker));
            if still_running && wts < ts {
                return Err(Conflict);
            }
        }
        if !still_running
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
        tids: TidTable::new(2),
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
// - `read` loads txn_id before raising read_ts (fetch_max after the load):
//   `loading_the_lock_before_raising_read_ts_is_caught`.
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

#[test]
fn loading_the_lock_before_raising_read_ts_is_caught() {
    assert!(caught(Mutation::LockLoadBeforeReadTs, || {
        shuttle::check_random(|| mvto_model(true, false), 10000)
    }));
}

// ------------------------- 4. commit stamping + TID-table visibility

// The engine's own code: a `Database` (SI, no GC) whose writer updates rows
// A and B in one transaction, commits (`Transaction::commit`: PRECOMMIT,
// cts = clock + 1, COMMITTING, COMMITTED, `post_commit` stamps, `finish`
// frees the slot) or aborts (`rollback`), while read-only transactions read
// A and B in either order through `storage/visibility.rs::visible` and the
// `TidTable` (whose atomics are shuttle's in this build). With `reuse`, the
// writer's next transaction takes its slot again at once, so readers meet
// a stale id (Status::Gone).
// A whole database runs under shuttle because its other locks
// (parking_lot) are never held across a shuttle operation on this path, and
// crossbeam-epoch's per-thread state, shared by shuttle's simulated threads
// (one OS thread), only counts nested pins. No GC thread, no log.

/// The writer's commit timestamp, or 0 if it aborted.
fn stamp_writer(db: &Database, t: &strata::Table, commit: bool, reuse: bool) -> u64 {
    let mut x = db.begin().unwrap();
    for k in 0..2 {
        x.update(t, &key![k], &[("v", Value::Int(1))]).unwrap();
    }
    let cts = if commit {
        x.commit().unwrap();
        // Nothing else draws a commit timestamp meanwhile: the clock is ours.
        db.begin_read_only().unwrap().snapshot_ts()
    } else {
        x.abort();
        0
    };
    if reuse {
        let mut y = db.begin().unwrap();
        y.update(t, &key![2], &[("v", Value::Int(1))]).unwrap();
        y.commit().unwrap();
    }
    cts
}

fn stamp_model(commit: bool, reuse: bool) {
    let db = Database::open(
        Options::default()
            .protocol(Protocol::Si)
            .gc(GcPolicy::None)
            .gc_interval(None)
            .max_open_transactions(4),
    )
    .unwrap();
    let t = db
        .create_table(
            Schema::new("t")
                .column("k", Type::Int)
                .column("v", Type::Int)
                .primary_key(&["k"]),
        )
        .unwrap();
    db.run(|x| {
        for k in 0..3 {
            x.insert(&t, row![k, 0])?;
        }
        Ok(())
    })
    .unwrap();
    let writer = {
        let (db, t) = (db.clone(), t.clone());
        thread::spawn(move || stamp_writer(&db, &t, commit, reuse))
    };
    let readers: Vec<_> = [[0i64, 1], [1, 0]]
        .into_iter()
        .map(|order| {
            let (db, t) = (db.clone(), t.clone());
            thread::spawn(move || {
                let mut x = db.begin_read_only().unwrap();
                let s = x.snapshot_ts();
                let mut saw = [false; 2];
                for k in order {
                    let r = x.get(&t, &key![k]).unwrap().expect("the row exists");
                    saw[k as usize] = r[1] == Value::Int(1);
                }
                x.commit().unwrap();
                (s, saw)
            })
        })
        .collect();
    let cts = writer.join().unwrap();
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

// The engine announces PRECOMMIT (COMMITTING with a pending timestamp)
// before the fetch_add; a reader that meets it waits and then compares the
// timestamp. This model (then a copy of the engine) found the original
// order (fetch_add before announcing) to allow a fractured read: a snapshot
// taken between the two found the writer ACTIVE, skipped its version of row
// A, then saw its stamped version of row B. `Break::NoPrecommit` puts that
// order back: `no_precommit_is_caught`.
// Mutations tried on the earlier copy (each made shuttle report a
// "fractured read"): `status` without the second tid load (with `reuse`;
// found by PCT only); `is_visible` treating COMMITTING(c <= s) as
// invisible instead of waiting; post_commit releasing the slot before
// stamping begin.
#[test]
fn commit_stamping_and_tid_visibility() {
    shuttle::check_random(|| stamp_model(true, true), 2000);
    shuttle::check_pct(|| stamp_model(true, true), 3000, 3);
    shuttle::check_random(|| stamp_model(true, false), 1000);
    shuttle::check_pct(|| stamp_model(false, true), 1000, 3);
}

#[test]
fn no_precommit_is_caught() {
    let r = with_broken(Break::NoPrecommit, || {
        std::panic::catch_unwind(|| shuttle::check_random(|| stamp_model(true, false), 5000))
    });
    assert!(r.is_err(), "the model must find the fractured read");
}

// The engine's `TidTable::acquire` / `release` under slot reuse: two
// threads take turns on one slot. The releaser clears the id before `begin`
// (which frees the slot); the other order lets a claimant's new id be
// overwritten by the releaser's 0, so its own transaction reads as Gone:
// `release_freeing_the_slot_first_is_caught`.
fn slot_reuse_model() {
    let tids = Arc::new(TidTable::new(1));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let tids = Arc::clone(&tids);
            thread::spawn(move || {
                for _ in 0..3 {
                    let tid = acquire_spin(&tids, || 1);
                    assert_eq!(tids.status(tid), Status::Active, "own id lost");
                    assert_eq!(tids.min_begin(false), 1, "claim registered nothing");
                    tids.release(tid);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(tids.min_begin(false), u64::MAX);
}

#[test]
fn slot_claim_and_reuse() {
    shuttle::check_random(slot_reuse_model, 5000);
    shuttle::check_pct(slot_reuse_model, 5000, 3);
}

#[test]
fn release_freeing_the_slot_first_is_caught() {
    // PCT: about one schedule in 200 shows it (random: one in 700).
    let r = with_broken(Break::ReleaseFreesSlotFirst, || {
        std::panic::catch_unwind(|| shuttle::check_pct(slot_reuse_model, 5000, 3))
    });
    assert!(r.is_err(), "the model must find the lost id");
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
// The TID table (slot claim = registration, `min_begin`) is the engine's own.

struct Gc {
    slot: AtomicUsize,
    arena: Vec<Version>,
    tids: TidTable,
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
    let tid = m.tids.acquire(lower, true).expect("a free slot");
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
    if mutated(Mutation::ScanBeforeClock) {
        let b = m.tids.min_begin(false);
        return m.clock.load(SeqCst).min(b);
    }
    let g = m.clock.load(SeqCst);
    fence(SeqCst);
    g.min(m.tids.min_begin(false))
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
        tids: TidTable::new(3),
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
// - `compute_horizon` scans the slots before loading the clock
//   (`a_horizon_scanned_before_the_clock_is_caught`).
// Both need a reader descheduled across a whole writer + GC pass, which
// the random scheduler practically never picks: PCT finds them.
#[test]
fn gc_horizon_vs_registration() {
    shuttle::check_random(gc_model, 5000);
    shuttle::check_pct(gc_model, 15000, 3);
}

#[test]
fn a_horizon_scanned_before_the_clock_is_caught() {
    // One schedule in ~1,500 shows it (PCT; random practically never).
    assert!(caught(Mutation::ScanBeforeClock, || {
        shuttle::check_pct(gc_model, 30000, 3)
    }));
}

// ------------------------------------------- drop_table vs commit
//
// The engine's `TidTable` (`set_committing`, `wait_for_deciding`, ...)
// under the protocol of `db.rs::Database::drop_table` (set `dropped`, wait
// for every deciding commit, then log the DropTable record) and
// `txn/mod.rs::Transaction::commit_as` (announce COMMITTING, then check
// `dropped_table_written`; refused: roll back; else reserve the log record,
// COMMITTED). The log is a counter of reserved positions. A commit that is
// not refused must be decided, with its record reserved, before the drop's
// record: every commit is ordered before the drop or refused.

struct DropModel {
    tids: TidTable,
    dropped: shuttle::sync::atomic::AtomicBool,
    lsn: AtomicU64,
    /// Ghost: each committer's log position (0: refused).
    committed_at: Vec<GhostU64>,
    drop_at: GhostU64,
}

fn drop_model(dropper_waits: bool) {
    let m = Arc::new(DropModel {
        tids: TidTable::new(2),
        dropped: shuttle::sync::atomic::AtomicBool::new(false),
        lsn: AtomicU64::new(1),
        committed_at: ghost_counts(2),
        drop_at: GhostU64::new(0),
    });
    let committers: Vec<_> = (0..2)
        .map(|i| {
            let m = Arc::clone(&m);
            thread::spawn(move || {
                let tid = acquire_spin(&m.tids, || 1);
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
        if dropper_waits {
            md.tids.wait_for_deciding();
        }
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

#[test]
fn drop_table_orders_or_refuses_every_commit() {
    shuttle::check_random(|| drop_model(true), 5000);
    shuttle::check_pct(|| drop_model(true), 5000, 3);
}

#[test]
fn a_drop_that_does_not_wait_for_deciding_commits_is_caught() {
    let r = std::panic::catch_unwind(|| shuttle::check_pct(|| drop_model(false), 5000, 3));
    let msg = r.err().map(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    });
    assert!(
        msg.as_deref().is_some_and(|m| m.contains("after the drop")),
        "shuttle must find a commit logged after the drop: {msg:?}"
    );
}
