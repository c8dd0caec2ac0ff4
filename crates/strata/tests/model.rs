//! Shuttle model checks of the engine's lock-free protocols, on the
//! engine's own code.
//!
//! Built with `--cfg strata_model` (see `src/sync/mod.rs`: the engine's TID
//! table, clock, version headers, indirection slots, master seqlock, log
//! buffer and COOP CAS then run on shuttle's atomics, so each of their
//! steps is a scheduling point); `.ci/run` runs this file that way. Each
//! model runs a real `Database` (small tables, two to four shuttle threads,
//! no GC thread: `gc_interval(None)`, GC passes called where the model
//! needs them) or the real `TidTable`, and checks what a user of the
//! engine could observe, plus the chain's header words at the end
//! (`strata::model::chain`):
//!
//! - `install_and_write_lock`: `Transaction::lock_head` (CAS, re-check of
//!   the head), `install`, `post_commit` and `rollback` (MVOCC: only the
//!   lock decides) against each other and a chain walker.
//! - `mv2pl_reader_count_vs_write_lock`: MV2PL's read lock (count, then
//!   re-check the write lock) against `check_write`.
//! - `mvto_read_ts_vs_writer`: MVTO's `read` (raise `read_ts`, then look at
//!   the lock) against `check_write` (lock, then look at `read_ts`), under
//!   both rules for a locked version (`Options::mvto_locked_read`);
//!   `mvto_younger_writer_vs_reader`: the same with the writer younger.
//! - `commit_stamping_and_tid_visibility`, `slot_claim_and_reuse`: commit
//!   (PRECOMMIT, clock, COMMITTING, COMMITTED, stamping, slot release)
//!   against readers' `visible`; slot claim and reuse.
//! - `gc_horizon_vs_registration`: `TidTable::snapshots` (clock, then the
//!   slots) in a real `collect_garbage` against `Transaction::begin`
//!   (register, then read the clock).
//! - `gc_queue_producer_vs_pass`: a slot's GC queue (`gc::slot_queue`:
//!   the committer's lock-free push, crossing blocks) against a pass
//!   taking from it, on every version storage scheme that takes
//!   transaction-level GC.
//! - `drop_table_orders_or_refuses_every_commit`: `Database::drop_table`
//!   against deciding commits, observed through the order in which their
//!   records would reach the log (`strata::model::take_logged`: the model's
//!   database has no log, its flusher being an OS thread).
//! - `drop_table_reclaims_after_the_last_open_transaction`: the collection
//!   that reclaims a dropped table (`gc::dropped`) against the commit of a
//!   transaction that was open at the drop, ordered by the ghost log.
//! - `read_only_stamps_keep_the_read_only_anomaly_out`: SSN's and SSI's
//!   commit of a transaction that wrote nothing (a stamp that does not
//!   move the clock) against a writer's commit closing a cycle with it.
//! - `mvto_gc_unlink_vs_absent_read`, `mvto_ghost_vs_older_insert`: a
//!   transaction-level pass unlinking a deleted row (`gc::prune_row`: lock,
//!   ask `may_remove`, index entry, slot), or nothing, against MVTO's read
//!   of the key (ghost rows) and an older transaction's insert of it.
//! - `ssn_insert_vs_scan_log_prune`: SSN's inserter (the scan records
//!   covering its key, then the log's pruned stamp) against a collection
//!   pruning the scan log, in a cycle of three rw edges.
//! - `ssn_blind_overwrite_vs_a_writer`: SSN's blind overwrite of a version
//!   committed after the snapshot (`Options::ssn_blind_writes`) against
//!   the writer that committed it, closing a cycle with a read.
//! - `installs_at_commit_keep_increments_and_snapshots_whole`: writes
//!   buffered and installed at commit (`WriteInstall::AtCommit`,
//!   `txn::deferred`) against another writer of the row and a snapshot
//!   reader, under every protocol that takes them.
//! - `update_with_keeps_increments_under_eager_installs`: the same model
//!   with eager installs, under every protocol; in both, one writer
//!   increments through `Transaction::update_with` (one lookup for the
//!   read and the write), the other through `get` and `update`.
//! - `index_scans_keep_phantoms_out_with_or_without_their_re_scan`: a
//!   logical index scan that may skip its commit-time re-scan (SSN, SSI:
//!   the index's count of added entries unchanged, `SecScan::additions_at`)
//!   against an inserter into its range closing a cycle, under every
//!   serializable protocol (`model_index.rs`).
//! - `a_moved_key_shows_its_row_once_under_its_own_key`: a logical index
//!   scan that trusts an entry without checking its row while the index
//!   has never held a stale entry (`SecondaryIndex::may_be_stale`) against
//!   an update that moves the row to another key (`model_index.rs`).
//!
//! Each has a `*_is_caught` test that breaks one step of that code
//! (`strata::model::Break`, compiled to `false` outside the model build)
//! and shows that shuttle finds the failure; the "Mutations tried" notes
//! list others.
//!
//! A whole database runs under shuttle because its other locks
//! (parking_lot) are never held across a shuttle operation where another
//! model thread could want them, and crossbeam-epoch's per-thread state,
//! shared by shuttle's simulated threads (one OS thread), only counts
//! nested pins. Shuttle executes sequentially consistently, so these check
//! the interleavings of a protocol, not weak-memory effects. Bookkeeping
//! that is not part of a protocol ("ghost" state) uses `std` atomics, which
//! are not scheduling points.
#![cfg(strata_model)]

mod common;
// Sections 13 and 14: the secondary index's scans.
mod model_index;

use common::{
    checks_commits_that_wrote_nothing, protocols, protocols_where, serial_order_is_commit_order,
};
use shuttle::sync::Arc;
use shuttle::thread;
use std::sync::atomic::{AtomicBool as Ghost, Ordering::SeqCst};
use strata::model::{
    caught, chain, take_logged, Break, Logged, Status, TidTable, Words, INF_TS, TID_MARK,
};
use strata::{
    key, row, Database, Error, GcPolicy, MvtoLockedRead, Options, Protocol, Schema, Table, Type,
    Unique, Value, VersionStorage,
};

// ----------------------------------------------------------------- shared

/// A model's database: `p`, collector `gc` with no GC thread and no pass
/// on the commit path, `slots` transaction slots.
fn options(p: Protocol, gc: GcPolicy, slots: usize) -> Options {
    Options::default()
        .protocol(p)
        .gc(gc)
        .gc_interval(None)
        .gc_every_commits(u32::MAX)
        .max_open_transactions(slots)
}

/// Opens a database and its table `t(k, v)` with rows `k = 0..rows`,
/// `v = 0`.
fn open(opts: Options, rows: i64) -> (Database, Table) {
    let db = Database::open(opts).unwrap();
    let t = db
        .create_table(
            Schema::new("t")
                .column("k", Type::Int)
                .column("v", Type::Int)
                .primary_key(&["k"]),
        )
        .unwrap();
    db.run(|x| {
        for k in 0..rows {
            x.insert(&t, row![k, 0])?;
        }
        Ok(())
    })
    .unwrap();
    (db, t)
}

/// Column `v` of row `k`, read by transaction `x`.
fn read_v(x: &mut strata::Transaction, t: &Table, k: i64) -> strata::Result<Option<Value>> {
    Ok(x.get(t, &key![k])?.map(|r| r[1].clone()))
}

fn set_v(x: &mut strata::Transaction, t: &Table, k: i64, v: i64) -> strata::Result<()> {
    x.update(t, &key![k], &[("v", Value::Int(v))])
}

/// Every version of a quiet chain is stamped, the head unlocked and not
/// overwritten, and each older version ends where the next one begins.
fn assert_settled(c: &[Words]) {
    for (i, w) in c.iter().enumerate() {
        assert_eq!(w.begin & TID_MARK, 0, "version {i} of {c:?} is not stamped");
        if i == 0 {
            assert_eq!((w.txn_id, w.end), (0, INF_TS), "head of {c:?}");
        } else {
            assert_eq!(w.end, c[i - 1].begin, "version {i} of {c:?}");
            assert!(w.begin < w.end, "version {i} of {c:?}");
        }
    }
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

// ------------------------------------------- 1. install + write lock

// `Transaction::update` (`modify`: head load; `lock_head`: CAS txn_id
// 0 -> tid, re-check the head; `install`: link above the head, mark its
// end), `commit` (`post_commit`: stamp begin, unlock the new version, the
// old one keeps the lock) and `abort` (`rollback`: restore the head, then
// clear the old end and lock). MVOCC, whose write check is empty: only the
// lock decides. Writer `w`'s attempt `a` writes `v = 1 + 10 w + a`; the
// attempts of `plans[w]` commit (`true`) or abort after installing. An
// observer walks the chain meanwhile.

fn install_model(plans: &'static [&'static [bool]], observer: bool) {
    let (db, t) = open(options(Protocol::Mvocc, GcPolicy::None, plans.len() + 1), 1);
    let mut threads = Vec::new();
    for (w, plan) in plans.iter().enumerate() {
        let (db, t) = (db.clone(), t.clone());
        threads.push(thread::spawn(move || {
            let mut committed = Vec::new();
            for (a, &commit) in plan.iter().enumerate() {
                let v = 1 + 10 * w as i64 + a as i64;
                let mut x = db.begin().unwrap();
                // A conflict (the row is locked) rolls the attempt back.
                if set_v(&mut x, &t, 0, v).is_ok() {
                    if commit {
                        x.commit().unwrap();
                        committed.push(Value::Int(v));
                    } else {
                        x.abort();
                    }
                }
            }
            committed
        }));
    }
    let walker = observer.then(|| {
        let t = t.clone();
        thread::spawn(move || {
            for _ in 0..2 {
                let c = chain(&t, &key![0]);
                let last = c.last().expect("the row has versions");
                assert_eq!(
                    last.row,
                    row![0, 0],
                    "the chain does not end at the first version"
                );
            }
            Vec::new()
        })
    });
    let mut committed: Vec<Value> = threads
        .into_iter()
        .chain(walker)
        .flat_map(|h| h.join().unwrap())
        .collect();
    let c = chain(&t, &key![0]);
    assert_settled(&c);
    let mut in_chain: Vec<Value> = c[..c.len() - 1].iter().map(|w| w.row[1].clone()).collect();
    committed.sort();
    in_chain.sort();
    assert_eq!(
        in_chain, committed,
        "the chain {c:?} does not hold exactly the committed writes (a lost update?)"
    );
    let mut x = db.begin_read_only().unwrap();
    assert_eq!(read_v(&mut x, &t, 0).unwrap(), Some(c[0].row[1].clone()));
}

const INSTALL_PLANS: &[&[bool]] = &[&[true, true], &[false, true], &[true, false]];

// Mutations tried (on this model, the engine's code):
// - `lock_head` takes the lock by a load and a store, not a CAS: two
//   writers install over the same head and one commit is lost
//   (`a_write_lock_without_the_cas_is_caught`).
// - `post_commit` also clears the new version's lock before it stamps
//   `begin` (what the earlier copy of this model called "unlock before
//   stamp"): a lost update, but through the second, usual clear: it
//   releases the lock of a writer that took the version in between. The
//   bare reorder (clear, then stamp, once) passes: a writer that locks the
//   unstamped version finds its creator COMMITTED in the TID table (SI and
//   MVTO refuse an unstamped head), so nothing a reader or the chain shows
//   goes wrong.
// - `rollback` also clears the old version's lock before it restores the
//   head: a lost update the same way (its usual stores then clobber the
//   mark and lock of a writer that came in between). The bare reorder
//   (mark and unlock, then restore) passes: `lock_head`'s re-check refuses
//   a version that is not the head yet.
// - Each of these passes alone, as the orderings and the re-check cover
//   each other: `post_commit` unlocking the old version; `lock_head`
//   without the re-check (with the engine's orderings an unlocked version
//   is the head).
#[test]
fn install_and_write_lock() {
    shuttle::check_random(|| install_model(INSTALL_PLANS, true), 10000);
    shuttle::check_pct(
        || install_model(&[&[true, false], &[true, true]], false),
        5000,
        3,
    );
}

#[test]
fn a_write_lock_without_the_cas_is_caught() {
    assert!(caught(Break::WriteLockCheckThenStore, || {
        shuttle::check_random(|| install_model(INSTALL_PLANS, false), 3000)
    }));
}

// ---------------------------------- 2. MV2PL reader count vs write lock

// `cc/mv2pl.rs`: `read` (check the lock, count ourselves in, re-check the
// lock and the head), `check_write` (after `lock_head`'s CAS: the count
// must be our own read locks) and `release` (at commit or abort). T1 reads
// the row and writes it (a lock upgrade) and commits; T2 writes it blind
// and aborts after installing; T3 and T4 read it twice, holding their read
// locks to the end: under two-phase locking both reads see the same
// version.

fn mv2pl_model() {
    let (db, t) = open(options(Protocol::Mv2pl, GcPolicy::None, 4), 1);
    let mut threads = Vec::new();
    {
        let (db, t) = (db.clone(), t.clone());
        threads.push(thread::spawn(move || {
            let mut x = db.begin().unwrap();
            if let Ok(Some(Value::Int(v))) = read_v(&mut x, &t, 0) {
                if set_v(&mut x, &t, 0, v + 1).is_ok() {
                    x.commit().unwrap();
                }
            }
        }));
    }
    {
        let (db, t) = (db.clone(), t.clone());
        threads.push(thread::spawn(move || {
            let mut x = db.begin().unwrap();
            if set_v(&mut x, &t, 0, 100).is_ok() {
                x.abort();
            }
        }));
    }
    for _ in 0..2 {
        let (db, t) = (db.clone(), t.clone());
        threads.push(thread::spawn(move || {
            let mut x = db.begin().unwrap();
            // A read that meets the write lock rolls the transaction back.
            let Ok(first) = read_v(&mut x, &t, 0) else {
                return;
            };
            let Ok(second) = read_v(&mut x, &t, 0) else {
                return;
            };
            assert_eq!(
                first, second,
                "a read lock did not keep the row from changing"
            );
            x.commit().unwrap();
        }));
    }
    for h in threads {
        h.join().unwrap();
    }
    let c = chain(&t, &key![0]);
    assert_settled(&c);
    for w in &c {
        assert_eq!(w.cc_words[0], 0, "a read lock leaked: {c:?}");
    }
}

// Mutations tried:
// - `read` skips the re-check after counting itself in: a reader holds a
//   read lock on a version the writer passed `check_write` on
//   (`a_read_lock_without_the_recheck_is_caught`).
// - (on the earlier copy of this model) the writer reads the count before
//   its CAS on txn_id: same report.
#[test]
fn mv2pl_reader_count_vs_write_lock() {
    shuttle::check_random(mv2pl_model, 5000);
    shuttle::check_pct(mv2pl_model, 5000, 3);
}

#[test]
fn a_read_lock_without_the_recheck_is_caught() {
    // PCT: the writer must read, lock, install and commit between the
    // reader's check and its increment; random schedules find that in
    // about one run of 1,000 in two.
    assert!(caught(Break::ReadLockNoRecheck, || {
        shuttle::check_pct(mv2pl_model, 3000, 3)
    }));
}

// ------------------------------------- 3. MVTO read_ts vs writer

// `cc/mvto.rs`: `read` (visible in TimestampOrder mode, raise read_ts, load
// the lock, ask the locker's state) and `check_write` (after `lock_head`'s
// CAS: begin and read_ts <= ts); `storage/visibility.rs::is_visible`
// (TimestampOrder: a running older writer is a conflict; re-decided once it
// leaves ACTIVE). Writer W (ts w) and reader R (ts r > w) on one row. With
// `reuse`, a third transaction begins as soon as W frees its slot, so W's
// id goes stale and the slot's `begin` becomes someone else's. `rule` is
// the read of a locked version (`Options::mvto_locked_read`): the study's
// (abort whoever holds it) or the narrower one (abort for an older
// holder), whose reader looks up the holder's timestamp.

fn mvto_model(writer_commits: bool, reuse: bool, rule: MvtoLockedRead) {
    let (db, t) = open(
        options(Protocol::Mvto, GcPolicy::None, 2).mvto_locked_read(rule),
        1,
    );
    // Both begin here, W first: W's timestamp is the smaller.
    let mut w = db.begin().unwrap();
    let mut r = db.begin().unwrap();
    let committed = std::sync::Arc::new(Ghost::new(false));
    let writer = {
        let (t, committed) = (t.clone(), committed.clone());
        thread::spawn(move || {
            if set_v(&mut w, &t, 0, 1).is_ok() {
                if writer_commits {
                    w.commit().unwrap();
                    committed.store(true, SeqCst);
                } else {
                    w.abort();
                }
            }
        })
    };
    let reader = {
        let t = t.clone();
        thread::spawn(move || {
            let got = read_v(&mut r, &t, 0);
            drop(r);
            got
        })
    };
    let other = reuse.then(|| {
        let db = db.clone();
        thread::spawn(move || loop {
            match db.begin() {
                Ok(x) => return x.abort(),
                Err(Error::TooManyTransactions(_)) => thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        })
    });
    writer.join().unwrap();
    let got = reader.join().unwrap();
    if let Some(o) = other {
        o.join().unwrap();
    }
    let committed = committed.load(SeqCst);
    match got {
        Err(Error::Conflict(_)) => {}
        Ok(Some(Value::Int(0))) => assert!(
            !committed,
            "timestamp order broken: the older writer committed, the younger reader read the old version"
        ),
        Ok(Some(Value::Int(1))) => assert!(committed, "the reader read an aborted write"),
        other => panic!("the reader got {other:?}"),
    }
}

// Mutations tried:
// - `read` loads txn_id before raising read_ts:
//   `loading_the_lock_before_raising_read_ts_is_caught`.
// - (on the earlier copy) `check_write` reads read_ts before the CAS on
//   txn_id; the pre-6d59bba `read` (load wts only while the first status()
//   says running, treat a later Gone as finished-without-conflict and skip
//   the re-read), in `mvto_writer_commits_between_reader_steps`.
#[test]
fn mvto_read_ts_vs_writer() {
    for rule in MvtoLockedRead::ALL {
        shuttle::check_random(move || mvto_model(true, false, rule), 5000);
        shuttle::check_random(move || mvto_model(false, false, rule), 2000);
    }
}

#[test]
fn mvto_writer_commits_between_reader_steps() {
    for rule in MvtoLockedRead::ALL {
        shuttle::check_random(move || mvto_model(true, true, rule), 5000);
        shuttle::check_pct(move || mvto_model(true, true, rule), 5000, 3);
    }
}

#[test]
fn loading_the_lock_before_raising_read_ts_is_caught() {
    for rule in MvtoLockedRead::ALL {
        assert!(caught(Break::LockLoadBeforeReadTs, || {
            shuttle::check_random(move || mvto_model(true, false, rule), 3000)
        }));
    }
}

// The writer younger than the reader: R (ts r) must read the old version
// whatever W does (W's version is stamped above r), and W is never refused
// for R's read (its read timestamp is below w). The study's rule refuses R
// when it finds the lock held by W still running; the narrower rule never
// refuses it.
fn mvto_younger_writer_model(writer_commits: bool, rule: MvtoLockedRead) {
    let (db, t) = open(
        options(Protocol::Mvto, GcPolicy::None, 2).mvto_locked_read(rule),
        1,
    );
    let mut r = db.begin().unwrap();
    let mut w = db.begin().unwrap();
    let writer = {
        let t = t.clone();
        thread::spawn(move || {
            set_v(&mut w, &t, 0, 1).unwrap();
            if writer_commits {
                w.commit().unwrap();
            } else {
                w.abort();
            }
        })
    };
    let reader = {
        let t = t.clone();
        thread::spawn(move || {
            let got = read_v(&mut r, &t, 0);
            (got, r.commit())
        })
    };
    writer.join().unwrap();
    let (got, committed) = reader.join().unwrap();
    match (got, rule) {
        (Ok(v), _) => {
            assert_eq!(
                v,
                Some(Value::Int(0)),
                "the older reader saw a younger write"
            );
            committed.unwrap();
        }
        (Err(Error::Conflict(_)), MvtoLockedRead::Abort) => {}
        (other, _) => panic!("the reader got {other:?} under {rule}"),
    }
}

// Mutations tried:
// - the narrower rule refusing a younger holder too (`wts != ts` for
//   `wts < ts`): "the reader got Err(Conflict(TimestampOrder)) under
//   abort-if-older-holder".
#[test]
fn mvto_younger_writer_vs_reader() {
    for rule in MvtoLockedRead::ALL {
        shuttle::check_random(move || mvto_younger_writer_model(true, rule), 3000);
        shuttle::check_random(move || mvto_younger_writer_model(false, rule), 1000);
    }
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

/// The writer's commit timestamp, or 0 if it aborted.
fn stamp_writer(db: &Database, t: &Table, commit: bool, reuse: bool) -> u64 {
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
    let (db, t) = open(options(Protocol::Si, GcPolicy::None, 4), 3);
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
    // PCT: with the slots and headers scheduling points too, the random
    // scheduler finds it in about half of its 5,000-schedule runs.
    assert!(
        caught(Break::NoPrecommit, || {
            shuttle::check_pct(|| stamp_model(true, false), 3000, 3)
        }),
        "the model must find the fractured read"
    );
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
    assert!(
        caught(Break::ReleaseFreesSlotFirst, || {
            shuttle::check_pct(slot_reuse_model, 5000, 3)
        }),
        "the model must find the lost id"
    );
}

// ------------------------------------- 5. GC horizon vs registration

// `Transaction::begin` (register a lower bound in the slot, then read the
// clock for the snapshot) against a real `collect_garbage` (transaction-
// level: `TidTable::snapshots` reads the clock, then the slots; the queue
// entries at or below the horizon cut their rows). A writer commits two
// updates of the row; a read-only transaction reads it twice: it must find
// the same version both times, so GC must not cut below it.

/// A model thread that commits `updates` updates of row 0 (`v` = 1, 2,
/// ...), one transaction each.
fn spawn_updates(db: &Database, t: &Table, updates: i64) -> thread::JoinHandle<()> {
    let (db, t) = (db.clone(), t.clone());
    thread::spawn(move || {
        for v in 1..=updates {
            let mut x = db.begin().unwrap();
            set_v(&mut x, &t, 0, v).unwrap();
            x.commit().unwrap();
        }
    })
}

/// A model thread that runs `passes` whole collections.
fn spawn_collections(db: &Database, passes: usize) -> thread::JoinHandle<()> {
    let db = db.clone();
    thread::spawn(move || {
        for _ in 0..passes {
            db.collect_garbage();
        }
    })
}

fn gc_model() {
    let (db, t) = open(options(Protocol::Si, GcPolicy::TransactionLevel, 3), 1);
    let writer = spawn_updates(&db, &t, 2);
    let gc = spawn_collections(&db, 2);
    let reader = {
        let (db, t) = (db.clone(), t.clone());
        thread::spawn(move || {
            let mut x = db.begin_read_only().unwrap();
            let s = x.snapshot_ts();
            let first = read_v(&mut x, &t, 0).unwrap();
            let second = read_v(&mut x, &t, 0).unwrap();
            assert!(
                first.is_some() && first == second,
                "the reader at snapshot {s} lost its version: read {first:?}, then {second:?}"
            );
        })
    };
    for h in [writer, gc, reader] {
        h.join().unwrap();
    }
}

// Mutations tried (each made the reader lose its version):
// - `TidTable::snapshots` scans the slots before it reads the clock
//   (`a_horizon_scanned_before_the_clock_is_caught`).
// - (on the earlier copy) `begin` takes the snapshot before registering.
// Both need a reader descheduled across a whole writer and GC pass, which
// the random scheduler practically never picks: PCT finds them.
#[test]
fn gc_horizon_vs_registration() {
    shuttle::check_random(gc_model, 3000);
    shuttle::check_pct(gc_model, 10000, 3);
}

#[test]
fn a_horizon_scanned_before_the_clock_is_caught() {
    assert!(caught(Break::ScanBeforeClock, || {
        shuttle::check_pct(gc_model, 10000, 3)
    }));
}

// ------------------------------- 5b. GC queue: the committer vs a pass

// A slot's GC queue (`gc::slot_queue`: the committer pushes its entries
// with no lock, a pass takes the ready ones and frees the blocks it has
// left) holds two entries a block under the model, so the writer's five
// commits cross blocks twice while passes take from them.
// Every update leaves one version to reclaim: after a last pass with
// nothing open, all five are reclaimed (an entry lost or taken twice
// shows there, or as a crash in the pass), and the row reads the last
// value. On every version storage scheme that takes this collector (SIRO
// needs the dead-zone one: the validity matrix refuses the pair).

fn gc_queue_model(vs: VersionStorage) {
    let (db, t) = open(
        options(Protocol::Si, GcPolicy::TransactionLevel, 3).version_storage(vs),
        1,
    );
    let writer = spawn_updates(&db, &t, 5);
    let gc = spawn_collections(&db, 3);
    for h in [writer, gc] {
        h.join().unwrap();
    }
    db.collect_garbage();
    let reclaimed = db.stats().versions_reclaimed;
    assert_eq!(
        reclaimed, 5,
        "{vs:?}: versions reclaimed after five updates"
    );
    let mut x = db.begin_read_only().unwrap();
    assert_eq!(
        read_v(&mut x, &t, 0).unwrap(),
        Some(Value::Int(5)),
        "{vs:?}"
    );
}

#[test]
fn gc_queue_producer_vs_pass() {
    for vs in VersionStorage::ALL {
        if vs == VersionStorage::Siro {
            continue;
        }
        shuttle::check_random(move || gc_queue_model(vs), 300);
        shuttle::check_pct(move || gc_queue_model(vs), 1000, 3);
    }
}

// Mutations tried: a consumer that hops to the next block again each time
// it looks at a block's first entry without taking it (it freed a live
// block: caught by the unit test with a producer and a consumer thread).
#[test]
fn a_queue_published_before_its_block_is_linked_is_caught() {
    assert!(caught(Break::QueuePublishesBeforeLink, || {
        shuttle::check_pct(
            move || gc_queue_model(VersionStorage::AppendNewToOld),
            10000,
            3,
        )
    }));
}

// ------------------------------------------- 6. drop_table vs commit

// `Database::drop_table` (set `dropped`, wait for every deciding commit,
// then log the DropTable record) against `Transaction::commit` (announce
// COMMITTING, then check `dropped_table_written`: refused, roll back; else
// reserve the log record, COMMITTED). Two transactions have written a row
// of the table each; they commit while the table is dropped. A commit that
// is not refused must reach the log before the drop's record: every
// commit is ordered before the drop or refused. The order is the ghost log
// of `strata::sync::logged`, which marks the steps where the engine
// reserves those records.

fn drop_model() {
    let (db, t) = open(options(Protocol::Si, GcPolicy::None, 3), 2);
    let txs: Vec<_> = (0..2)
        .map(|k| {
            let mut x = db.begin().unwrap();
            set_v(&mut x, &t, k, 1).unwrap();
            x
        })
        .collect();
    take_logged();
    let committers: Vec<_> = txs
        .into_iter()
        .map(|x| thread::spawn(move || x.commit()))
        .collect();
    let dropper = {
        let db = db.clone();
        thread::spawn(move || db.drop_table("t").unwrap())
    };
    let mut ok = 0;
    for c in committers {
        match c.join().unwrap() {
            Ok(()) => ok += 1,
            Err(Error::TableDropped { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
    dropper.join().unwrap();
    let log = take_logged();
    let drop_at = log.iter().position(|&r| r == Logged::DropTable);
    assert_eq!(
        log.iter().filter(|&&r| r == Logged::Commit).count(),
        ok,
        "{log:?}"
    );
    assert!(
        log[..drop_at.expect("the drop is logged")]
            .iter()
            .filter(|&&r| r == Logged::Commit)
            .count()
            == ok,
        "a commit logged after the drop: {log:?}"
    );
}

#[test]
fn drop_table_orders_or_refuses_every_commit() {
    shuttle::check_random(drop_model, 3000);
    shuttle::check_pct(drop_model, 3000, 3);
}

#[test]
fn a_drop_that_does_not_wait_for_deciding_commits_is_caught() {
    assert!(caught(Break::DropDoesNotWait, || {
        shuttle::check_pct(drop_model, 2000, 3)
    }));
}

// ------------------- 6b. drop_table's reclamation vs a transaction open at the drop

// `gc::dropped`: the drop retires the table with the slots taken after
// `dropped` was set; a collection reclaims it (the catalog's place goes to
// an empty tombstone, queued entries are forgotten) once every one of them
// was left. A transaction open at the drop has written a row of the table;
// it commits (ordered before the drop, or refused) while another thread
// drops the table and collects. The table may leave the catalog only after
// that transaction left its slot: the ghost log orders the two steps
// (`Logged::SlotReleased` is noted just before the store that frees the
// slot). The last collection also processes the queue the transaction
// filled: an entry of the reclaimed table left in it fails a debug
// assertion there.

fn reclaim_model() {
    let (db, t) = open(options(Protocol::Si, GcPolicy::TransactionLevel, 3), 2);
    let mut x = db.begin().unwrap();
    set_v(&mut x, &t, 0, 1).unwrap();
    take_logged();
    let writer = thread::spawn(move || {
        let r = x.commit();
        drop(t);
        r
    });
    let dropper = {
        let db = db.clone();
        thread::spawn(move || {
            db.drop_table("t").unwrap();
            db.collect_garbage();
        })
    };
    match writer.join().unwrap() {
        Ok(()) | Err(Error::TableDropped { .. }) => {}
        Err(e) => panic!("{e}"),
    }
    dropper.join().unwrap();
    db.collect_garbage();
    let log = take_logged();
    let released = log.iter().position(|&r| r == Logged::SlotReleased);
    let reclaimed = log.iter().position(|&r| r == Logged::TableReclaimed);
    assert!(
        released.expect("the transaction ended") < reclaimed.expect("the table was reclaimed"),
        "the table was reclaimed while a transaction open at its drop ran: {log:?}"
    );
    let st = db.stats();
    assert_eq!((st.tables_reclaimed, st.dropped_tables_waiting), (1, 0));
}

#[test]
fn drop_table_reclaims_after_the_last_open_transaction() {
    shuttle::check_random(reclaim_model, 2000);
    shuttle::check_pct(reclaim_model, 2000, 3);
}

#[test]
fn a_reclaim_that_does_not_wait_for_open_transactions_is_caught() {
    assert!(caught(Break::ReclaimIgnoresOpen, || {
        shuttle::check_pct(reclaim_model, 1000, 3)
    }));
}

// ------------------------- 7. read-only commit stamps vs a writer's stamp

// A transaction that wrote nothing takes `clock + 1` as its commit stamp
// without moving the clock (`cc::read_only_stamp`); writers move it by two.
// The read-only anomaly, set up one step at a time: T2 reads X and Y;
// T1 sets Y and commits; T3 begins, reads X (T2's write of X is not
// committed) and Y (T1's); T2 writes X. Now T2 -rw-> T1 -wr-> T3 -rw-> T2:
// T2 and T3 commit concurrently and one of them must fail. SSN finds the
// edge T3 -rw-> T2 from whichever side has the larger stamp (the reader:
// the overwriter is COMMITTING below it; the overwriter: the reader is in
// its filter below it, or published its pstamp); a read-only stamp equal to
// a writer's would let both sides leave the edge to the other
// (`Break::ReadOnlyStampOnWriters`: `a_read_only_stamp_on_a_writers_is_caught`).
// SSI finds T2 as a pivot.

fn read_only_anomaly_model(p: Protocol) {
    let (db, t) = open(options(p, GcPolicy::None, 4), 2);
    let (x, y) = (0, 1);
    let mut t2 = db.begin().unwrap();
    read_v(&mut t2, &t, x).unwrap();
    read_v(&mut t2, &t, y).unwrap();
    db.run(|t1| set_v(t1, &t, y, 1)).unwrap();
    let mut t3 = db.begin().unwrap();
    assert_eq!(read_v(&mut t3, &t, x).unwrap(), Some(Value::Int(0)));
    assert_eq!(read_v(&mut t3, &t, y).unwrap(), Some(Value::Int(1)));
    if let Err(e) = set_v(&mut t2, &t, x, 1) {
        // SSN's early exclusion may refuse the write already.
        assert!(matches!(e, Error::Conflict(_)), "{e}");
        return;
    }
    let commits: Vec<_> = [t2, t3]
        .into_iter()
        .map(|tx| thread::spawn(move || tx.commit()))
        .collect();
    let ok: Vec<bool> = commits
        .into_iter()
        .map(|c| match c.join().unwrap() {
            Ok(()) => true,
            Err(Error::Conflict(_)) => false,
            Err(e) => panic!("{e}"),
        })
        .collect();
    assert!(
        !(ok[0] && ok[1]),
        "{p}: T2 and the read-only T3 both committed: a cycle T2 -> T1 -> T3 -> T2"
    );
}

#[test]
fn read_only_stamps_keep_the_read_only_anomaly_out() {
    // The snapshot protocols that validate a transaction that wrote
    // nothing: SSN and SSI.
    let certified = |p| !serial_order_is_commit_order(p) && checks_commits_that_wrote_nothing(p);
    for p in protocols_where(certified) {
        shuttle::check_random(move || read_only_anomaly_model(p), 2000);
        shuttle::check_pct(move || read_only_anomaly_model(p), 2000, 3);
    }
}

#[test]
fn a_read_only_stamp_on_a_writers_is_caught() {
    assert!(caught(Break::ReadOnlyStampOnWriters, || {
        shuttle::check_pct(|| read_only_anomaly_model(Protocol::SiSsn), 2000, 3)
    }));
}

// ---------------------------------- 8. GC's unlink vs an MVTO absent read

// A real transaction-level pass (`gc::prune_row`: lock the tombstone, ask
// `Mvto::may_remove` whether a reader left its timestamp on it, unlink the
// row: index entry, then slot) against MVTO's reads of the deleted key
// (`lookup_read`: index, slot, `mvto::read`: raise `read_ts`, look at the
// lock) and an older transaction's insert of it. The key is deleted and
// the pass's horizon already passes the delete; W begins, then R (so
// W's timestamp is the smaller), R reads the key, W inserts it. If both
// commit, R must have read W's row: an absent read that W's insert did
// not meet (no read timestamp on a tombstone it wrote over, no ghost row
// it collided with) puts R before W against timestamp order. Both ways
// in were found by `tests/storage.rs`'s list-append run, about once in 700
// runs: the pass asked `may_remove` before it took the lock
// (`Break::UnlinkAsksBeforeLock`), and a read that met the unlinked
// tuple's empty slot answered "absent" without a ghost
// (`Break::LeftKeyReadUnrecorded`).
//
// Without the delete and the pass (`fresh`), the key never existed: R's
// read finds no index entry and places a ghost, which the index's tree
// refuses while W's insert is between the tree and the hash side (where
// point lookups go): R must then read W's row, not look the key up again
// and find nothing (`Break::GhostLooksUpAgain`).

fn mvto_unlink_model() {
    mvto_absent_key_model(false);
}

fn mvto_fresh_key_model() {
    mvto_absent_key_model(true);
}

fn mvto_absent_key_model(fresh: bool) {
    let (db, t) = open(
        options(Protocol::Mvto, GcPolicy::TransactionLevel, 4),
        i64::from(!fresh),
    );
    let w_began = std::sync::Arc::new(Ghost::new(false));
    let gc = (!fresh).then(|| {
        db.run(|x| x.delete(&t, &key![0])).unwrap();
        let db = db.clone();
        thread::spawn(move || {
            db.collect_garbage();
        })
    });
    let writer = {
        let (db, t, w_began) = (db.clone(), t.clone(), w_began.clone());
        thread::spawn(move || {
            let mut w = db.begin().unwrap();
            w_began.store(true, SeqCst);
            match w.insert(&t, row![0, 1]) {
                Ok(()) => w.commit().is_ok(),
                Err(Error::Conflict(_)) => false,
                Err(e) => panic!("{e}"),
            }
        })
    };
    let reader = {
        let (db, t) = (db.clone(), t.clone());
        thread::spawn(move || {
            while !w_began.load(SeqCst) {
                thread::yield_now();
            }
            let mut r = db.begin().unwrap();
            match read_v(&mut r, &t, 0) {
                Ok(got) => r.commit().is_ok().then_some(got),
                Err(Error::Conflict(_)) => None,
                Err(e) => panic!("{e}"),
            }
        })
    };
    if let Some(gc) = gc {
        gc.join().unwrap();
    }
    let w_committed = writer.join().unwrap();
    if let (true, Some(got)) = (w_committed, reader.join().unwrap()) {
        assert_eq!(
            got,
            Some(Value::Int(1)),
            "the younger reader read the key as absent, the older writer then inserted it, both committed"
        );
    }
}

#[test]
fn mvto_gc_unlink_vs_absent_read() {
    shuttle::check_random(mvto_unlink_model, 5000);
    shuttle::check_pct(mvto_unlink_model, 20000, 3);
    shuttle::check_pct(mvto_unlink_model, 20000, 4);
}

#[test]
fn an_unlink_asking_before_its_lock_is_caught() {
    // (PCT at depth 4 finds it within some thousands of schedules; at
    // depth 2, and by the random scheduler, not in 40,000.)
    assert!(caught(Break::UnlinkAsksBeforeLock, || {
        shuttle::check_pct(mvto_unlink_model, 40000, 4)
    }));
}

#[test]
fn an_unrecorded_read_of_an_unlinked_row_is_caught() {
    assert!(caught(Break::LeftKeyReadUnrecorded, || {
        shuttle::check_pct(mvto_unlink_model, 40000, 4)
    }));
}

#[test]
fn mvto_ghost_vs_older_insert() {
    shuttle::check_random(mvto_fresh_key_model, 5000);
    shuttle::check_pct(mvto_fresh_key_model, 20000, 3);
    shuttle::check_pct(mvto_fresh_key_model, 20000, 4);
}

#[test]
fn a_ghost_looking_the_key_up_again_is_caught() {
    assert!(caught(Break::GhostLooksUpAgain, || {
        shuttle::check_pct(mvto_fresh_key_model, 40000, 4)
    }));
}

// ------------------------- 9. SSN's insert vs a prune of the scan log

// `ssn::watermarks` for an insert (the scan records covering the key,
// then the log's pruned stamp: `records_then_pruned`) against a real
// collection that prunes the scan log (`Cc::prune`: records committed
// below the horizon go, their stamps folded into `pruned_pstamp`). The
// rest is set up in order, so that the insert closes a cycle of three rw
// edges: T1 reads key 5 as absent and updates x; T3 (older than T1's
// commit) reads the old x and updates y; T2 (begun after T1's commit and
// one more, so the horizon can pass T1 once T3 is gone) reads the old y,
// then inserts key 5 while the collector runs. T1 -> T2 (T1 read the key
// T2 inserts), T2 -> T3 (y), T3 -> T1 (x): T2 must not commit. With the
// pruned stamp read before the records (`Break::PrunedStampFirst`), a
// prune in between hides T1 from both and T2 commits (found by
// `tests/storage.rs`, `ssn_on_predicates_over_many_seeds`, about once in
// 20,000 runs).

fn ssn_prune_model() {
    let (db, t) = open(options(Protocol::SiSsn, GcPolicy::TransactionLevel, 4), 2);
    let (x, y, k) = (0, 1, 5);
    let mut t3 = db.begin().unwrap();
    let mut t1 = db.begin().unwrap();
    assert_eq!(read_v(&mut t1, &t, k).unwrap(), None);
    set_v(&mut t1, &t, x, 1).unwrap();
    t1.commit().unwrap();
    assert_eq!(read_v(&mut t3, &t, x).unwrap(), Some(Value::Int(0)));
    set_v(&mut t3, &t, y, 3).unwrap();
    // Moves the clock past T1's commit before T2 begins.
    db.run(|z| z.insert(&t, row![6, 0])).unwrap();
    let mut t2 = db.begin().unwrap();
    assert_eq!(read_v(&mut t2, &t, y).unwrap(), Some(Value::Int(0)));
    t3.commit().unwrap();
    let gc = {
        let db = db.clone();
        thread::spawn(move || {
            db.collect_garbage();
        })
    };
    let inserter = {
        let t = t.clone();
        thread::spawn(move || t2.insert(&t, row![k, 2]).and_then(|()| t2.commit()).is_ok())
    };
    gc.join().unwrap();
    assert!(
        !inserter.join().unwrap(),
        "T2 committed: T1 -rw-> T2 -rw-> T3 -rw-> T1 is a cycle"
    );
}

#[test]
fn ssn_insert_vs_scan_log_prune() {
    shuttle::check_random(ssn_prune_model, 3000);
    shuttle::check_pct(ssn_prune_model, 3000, 3);
}

#[test]
fn a_pruned_stamp_read_before_the_records_is_caught() {
    assert!(caught(Break::PrunedStampFirst, || {
        shuttle::check_random(ssn_prune_model, 3000);
        shuttle::check_pct(ssn_prune_model, 3000, 3);
    }));
}

// -------------------- 10. SSN's blind overwrite vs a writer closing a cycle

// `cc/ssn.rs`, `Options::ssn_blind_writes` (the default): a write to a row
// the transaction never read may land on a version committed after its
// snapshot. TA reads Y and writes X blind; TB writes X and Y. Run side by
// side, every interleaving of their reads, writes, locks and commit steps
// (PRECOMMIT, stamp, COMMITTING, watermarks, stamping) must leave a serial
// outcome: if both commit, TA's read of Y and the final X agree on one
// order (TA read Y before TB's write: TB is last, X is TB's; TA read TB's
// Y: TA is last, X is TA's). The cycle TA -rw-> TB -ww-> TA is closed by
// TA's blind overwrite of TB's X, whose creator SSN must count as TA's
// predecessor (`Break::OverwriteForgetsCreator` leaves it out:
// `a_blind_overwrite_that_forgets_its_creator_is_caught`).

fn blind_overwrite_model() {
    let (db, t) = open(options(Protocol::SiSsn, GcPolicy::None, 4), 2);
    let (x, y) = (0, 1);
    let ta = {
        let (db, t) = (db.clone(), t.clone());
        thread::spawn(move || {
            let mut a = db.begin().unwrap();
            let seen = match read_v(&mut a, &t, y) {
                Ok(v) => v,
                Err(_) => return None,
            };
            thread::yield_now();
            match set_v(&mut a, &t, x, 1).and_then(|()| a.commit()) {
                Ok(()) => Some(seen),
                Err(Error::Conflict(_)) => None,
                Err(e) => panic!("{e}"),
            }
        })
    };
    let tb = {
        let (db, t) = (db.clone(), t.clone());
        thread::spawn(move || {
            let mut b = db.begin().unwrap();
            match set_v(&mut b, &t, x, 2)
                .and_then(|()| set_v(&mut b, &t, y, 2))
                .and_then(|()| b.commit())
            {
                Ok(()) => true,
                Err(Error::Conflict(_)) => false,
                Err(e) => panic!("{e}"),
            }
        })
    };
    let (a, b) = (ta.join().unwrap(), tb.join().unwrap());
    let mut r = db.begin_read_only().unwrap();
    let final_x = read_v(&mut r, &t, x).unwrap();
    if let (Some(seen_y), true) = (a, b) {
        let ta_last = seen_y == Some(Value::Int(2));
        let expected = Some(Value::Int(if ta_last { 1 } else { 2 }));
        assert_eq!(
            final_x, expected,
            "both committed, TA read Y = {seen_y:?}: not serial (a cycle TA -rw-> TB -ww-> TA)"
        );
    }
    assert_settled(&chain(&t, &key![x]));
}

#[test]
fn ssn_blind_overwrite_vs_a_writer() {
    shuttle::check_random(blind_overwrite_model, 5000);
    shuttle::check_pct(blind_overwrite_model, 5000, 3);
}

#[test]
fn a_blind_overwrite_that_forgets_its_creator_is_caught() {
    assert!(caught(Break::OverwriteForgetsCreator, || {
        shuttle::check_random(blind_overwrite_model, 5000);
        shuttle::check_pct(blind_overwrite_model, 5000, 3);
    }));
}

// ----------------------------- 11. Installs at commit (`txn::deferred`)

// `WriteInstall::AtCommit`: A reads row 0 and buffers its increment (one
// `update_with`), inserts row 5 (eager) and commits; B reads row 0, buffers +10, reads it
// back (its own write, settled by the read) and buffers a write of row 1,
// installed by its commit; R, a read-only snapshot, reads row 0 then row 5. Every
// interleaving must lose no committed increment and give R all of A or
// none of it: A's increment is in R's row 0 exactly when R sees row 5.
// A commit that installs its buffered writes after drawing its stamp
// (`Break::SettleAfterCommitStamp`) lets R's snapshot include A's stamp
// yet miss A's update: `settling_after_the_commit_stamp_is_caught`. The
// same model with eager installs, for every protocol, checks
// `update_with`'s read and write there:
// `update_with_keeps_increments_under_eager_installs`.

fn at_commit_model(p: Protocol) {
    increments_model(p, strata::WriteInstall::AtCommit);
}

fn increments_model(p: Protocol, install: strata::WriteInstall) {
    let opts = options(p, GcPolicy::None, 4).write_install(install);
    let (db, t) = open(opts, 2);
    let writer = |plus: i64, insert: bool| {
        let (db, t) = (db.clone(), t.clone());
        thread::spawn(move || {
            let mut x = db.begin().unwrap();
            let r = (|| {
                // A reads and writes with one call, B with two.
                let v = if insert {
                    x.update_with(&t, &key![0], |r| {
                        let v = r[1].as_int().unwrap();
                        ([("v", Value::Int(v + plus))], v)
                    })?
                } else {
                    let v = read_v(&mut x, &t, 0)?.unwrap().as_int().unwrap();
                    set_v(&mut x, &t, 0, v + plus)?;
                    v
                };
                if !insert {
                    assert_eq!(
                        read_v(&mut x, &t, 0)?,
                        Some(Value::Int(v + plus)),
                        "its own buffered write"
                    );
                }
                if insert {
                    x.insert(&t, row![5, 1])?;
                } else {
                    set_v(&mut x, &t, 1, plus)?;
                }
                x.commit()
            })();
            match r {
                Ok(()) => plus,
                Err(Error::Conflict(_)) => 0,
                Err(e) => panic!("{e}"),
            }
        })
    };
    let a = writer(1, true);
    let b = writer(10, false);
    let reader = {
        let (db, t) = (db.clone(), t.clone());
        thread::spawn(move || {
            // Snapshots spread over the writers' run (a yield is a
            // scheduling point), so some begin while A commits.
            for _ in 0..6 {
                for _ in 0..4 {
                    thread::yield_now();
                }
                let mut r = db.begin_read_only().unwrap();
                // (MVTO's read-only snapshot may sit below the load, between
                // a writer's registration and its timestamp: it sees no rows.)
                let v0 = read_v(&mut r, &t, 0).unwrap().map(|v| v.as_int().unwrap());
                let five = read_v(&mut r, &t, 5).unwrap().is_some();
                let Some(v0) = v0 else {
                    assert!(!five, "{p}: R saw row 5 and no row 0");
                    continue;
                };
                assert_eq!(
                    v0 % 10 == 1,
                    five,
                    "{p}: R saw part of A: row 0 = {v0}, row 5 {five}"
                );
            }
        })
    };
    let committed = a.join().unwrap() + b.join().unwrap();
    reader.join().unwrap();
    let mut r = db.begin_read_only().unwrap();
    assert_eq!(
        read_v(&mut r, &t, 0).unwrap(),
        Some(Value::Int(committed)),
        "a committed increment was lost"
    );
    assert_settled(&chain(&t, &key![0]));
}

fn at_commit_models() {
    for p in protocols_where(|p| p != Protocol::Mv2pl) {
        shuttle::check_random(move || at_commit_model(p), 600);
        shuttle::check_pct(move || at_commit_model(p), 600, 3);
    }
}

#[test]
fn installs_at_commit_keep_increments_and_snapshots_whole() {
    at_commit_models();
}

#[test]
fn update_with_keeps_increments_under_eager_installs() {
    for p in protocols() {
        let eager = move || increments_model(p, strata::WriteInstall::Eager);
        shuttle::check_random(eager, 600);
        shuttle::check_pct(eager, 600, 3);
    }
}

#[test]
fn settling_after_the_commit_stamp_is_caught() {
    assert!(caught(Break::SettleAfterCommitStamp, at_commit_models));
}
