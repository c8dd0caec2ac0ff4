//! The collector's side of SIRO version storage (`storage::siro`): once
//! per table per dead-zone pass (committers run them every
//! `gc_every_commits`, so the zones are as fresh as that; vDriver too
//! refreshes its zones periodically, §3.3), publish the zones to the
//! table's writers (their first prune and classification at relocation)
//! and cut the segments that lie inside one dead zone (vDriver §3.4,
//! vCUTTER's segment cleaning).
//!
//! A cut takes every sealed dead segment's locators and names the event
//! (Cut-I: the dead segments were consecutive in one cluster; Cut-II:
//! not), then cuts row by row, each row under its cleaning flag
//! (`siro::cut`: the test-and-set of collaborative cleaning, Fig. 9). A
//! cut that wins the row takes the chain's transition of Fig. 8 (leave a
//! hole: drop the images, keep the headers linked; or Fixup: unlink every
//! hole); one that loses hands the row's cut to the writer holding it,
//! which does it before it frees the row.
//!
//! ```text
//!  pass ──> publish zones ──> take_dead_segments ──> event (Cut-I | Cut-II)
//!             │                                        │ per row:
//!             v                                        v
//!      writers' first prune          TAS ── won ──> transition: LeaveHole ──> row queued
//!                                     │                         Fixup ──> headers retired
//!                                     └─ lost ──> the writer does the cut (its commit
//!                                                 queues the row)
//! ```
//!
//! A locator is an address, not a pointer: a version the row step already
//! pruned is simply not found in its chain; one still there is cut only
//! if it is off-row and the zones say it is dead (true of every version of
//! a dead segment), so an address reused by a newer version is never cut
//! by mistake, even when a handed-over cut runs after the cutter unpinned.
//!
//! Secondary indexes. A cut (and a writer's first prune) drops images, and
//! an image is where index maintenance finds a version's keys; so before
//! it drops them, storage hands the versions to the table's index work
//! ([`index_work`], installed here before the zones are first published):
//! the kind's `before_prune`, exactly what the row step runs before it
//! unlinks versions. No entry can lead to a dropped version: SIRO is an
//! in-place scheme, whose indexes hold logical pointers (a tuple id or a
//! primary key, which name the row; readers walk to the version their
//! snapshot sees, never a dead one), and MV-PBT records there are read
//! through the tuple id too. What the work removes is the entries of keys
//! only the dropped versions held (logical), which no later walk could
//! find again; it runs under the row's cleaning flag, and a logical
//! removal whose row a writer holds waits in the kind's deferred set, as
//! the row step's does.
//!
//! Invariant (owned here): a row this cut left in the 1-hole state comes
//! up at the next pass (the row step fills the hole if no cut's Fixup
//! came first). A cut handed over to a writer comes up with the writer's
//! commit; if the writer aborts, with the row's next write or the next
//! cut that meets the chain.

use crate::storage::dead_zones::DeadZones;
use crate::storage::siro::{self, CutAction, CutOutcome, Handover, IndexWork};
use crate::storage::PrunePlan;
use crate::table::TableInner;
use crossbeam_epoch as epoch;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Weak};

/// What a pass's cut did to one table.
#[derive(Default)]
pub(crate) struct Cut {
    /// Headers retired (by Fixups).
    pub freed: u64,
    /// Rows the cut left in the 1-hole state: the next pass's row step
    /// looks at them (it unlinks their holes with their other dead
    /// versions, unless a cut's Fixup comes first).
    pub holes: Vec<u64>,
}

/// Publishes `zones` to `t`'s writers and cuts the rows of its dead
/// segments. Does nothing for a table of another scheme. Called by the
/// dead-zone pass (`gc::dead_zone`) once per table, under the pass lock:
/// no other collector touches these rows.
pub(crate) fn on_pass(t: &Arc<TableInner>, z: &DeadZones) -> Cut {
    let Some(st) = t.siro.as_deref() else {
        return Cut::default();
    };
    // Before any zones reach the writers: a first prune needs it.
    st.init_index_work(|| index_work(Arc::downgrade(t)));
    st.publish(z);
    let (taken, event) = siro::take_dead_segments(t, z, |_| true);
    let Some(event) = event else {
        return Cut::default();
    };
    match event {
        siro::CutEvent::CutI => st.counters.cut_i.fetch_add(1, Relaxed),
        siro::CutEvent::CutII => st.counters.cut_ii.fetch_add(1, Relaxed),
    };
    if taken.is_empty() {
        return Cut::default();
    }
    let zones = st.zones().expect("published above");
    let mut rows: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (tuple, v) in taken {
        rows.entry(tuple).or_default().push(v);
    }
    let mut out = Cut::default();
    for (tuple, mut victims) in rows {
        let guard = epoch::pin();
        victims.sort_unstable();
        victims.dedup();
        let h = Box::new(Handover {
            victims,
            event,
            zones: zones.clone(),
        });
        match siro::cut(t, st, tuple, h, &guard) {
            CutOutcome::Done(CutAction::LeaveHole, _) => out.holes.push(tuple),
            CutOutcome::Done(CutAction::Fixup | CutAction::Nothing, n) => out.freed += n,
            // The writer holding the row cuts it; its commit queues the
            // row for the row step.
            CutOutcome::HandedOver => {}
        }
    }
    out
}

/// The index work of `t` (see the module doc): the index kinds'
/// `before_prune` for the versions whose images are about to drop, as
/// `gc::prune_versions` runs it before storage unlinks versions. (A weak
/// reference: the work lives in the table's own SIRO state.)
fn index_work(t: Weak<TableInner>) -> IndexWork {
    Box::new(move |tuple, versions, guard| {
        let Some(t) = t.upgrade() else { return };
        let mut victims = versions.to_vec();
        crate::index::before_prune(&t, tuple, PrunePlan::versions(&mut victims), guard);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::siro::{ChainState, CutterTas, Siro};
    use crate::storage::{self, Span};
    use crate::{key, row, Database, GcPolicy, Options, Schema, SiroTuning, Table, Type, Value};
    use crate::{VersionStorage, VersionStorage::Siro as SiroScheme};
    use std::sync::atomic::AtomicBool;
    use std::sync::atomic::Ordering::SeqCst;

    /// Row 0 (tuple 0) written `n` times over its insert: v0..vn, where
    /// v_k holds v = k; each image is big enough to seal its own HOT
    /// segment, so v_k (k < n - 1) is alone in the k-th one. No pass runs
    /// by itself, so none of it is pruned yet.
    fn chain_of(n: i64) -> (Database, Table) {
        let db = Database::open(
            Options::default()
                .version_storage(SiroScheme)
                .gc(GcPolicy::DeadZone)
                .gc_interval(Some(std::time::Duration::from_secs(3600)))
                .gc_every_commits(1 << 30)
                .siro(SiroTuning {
                    segment_bytes: 1024,
                    hot_commits: 1 << 40,
                    llt_commits: 1 << 40,
                }),
        )
        .unwrap();
        assert_eq!(db.inner.opts.version_storage, VersionStorage::Siro);
        let t = db
            .create_table(
                Schema::new("t")
                    .column("k", Type::Int)
                    .column("v", Type::Int)
                    .column("pad", Type::Text)
                    .primary_key(&["k"]),
            )
            .unwrap();
        db.run(|x| x.insert(&t, row![0, 0, "p".repeat(1100)]))
            .unwrap();
        for k in 1..=n {
            set(&db, &t, k);
        }
        assert_eq!(siro(&t).segment_counts()[0], n as usize - 1);
        (db, t)
    }

    fn set(db: &Database, t: &Table, v: i64) {
        db.run(|x| x.update(t, &key![0], &[("v", Value::Int(v))]))
            .unwrap();
    }

    fn siro(t: &Table) -> &Siro {
        t.inner.siro.as_deref().unwrap()
    }

    /// Begin timestamps, oldest version first (index k: v_k).
    fn begins(t: &Table) -> Vec<u64> {
        let _g = epoch::pin();
        let mut b: Vec<u64> = storage::versions(&t.inner, 0, Span::ALL)
            // SAFETY: pinned.
            .map(|v| unsafe { (*v).begin.load(SeqCst) })
            .collect();
        b.reverse();
        b
    }

    /// The chain, newest first: each version's `v` (None: no image).
    fn chain(t: &Table) -> Vec<Option<i64>> {
        let _g = epoch::pin();
        let mut c = storage::chain(&t.inner, 0, Span::ALL);
        let mut out = Vec::new();
        while let Some((_, img)) = c.step() {
            out.push(img.map(|r| {
                let Value::Int(v) = r[1] else {
                    panic!("v is an INT column");
                };
                v
            }));
        }
        out
    }

    /// Zones under which exactly the listed versions v_k are read (by a
    /// snapshot at their begin): every other overwritten one is dead.
    fn keeping(t: &Table, alive: &[usize]) -> DeadZones {
        let b = begins(t);
        DeadZones::new(alive.iter().map(|&k| b[k]).collect(), b[b.len() - 1] + 100)
    }

    fn count(c: &std::sync::atomic::AtomicU64) -> u64 {
        c.load(Relaxed)
    }

    const N: i64 = 8;

    /// 0-hole + Cut-I -> 1-hole; 1-hole + Cut-II -> Fixup -> 0-hole. The
    /// hole's headers stay linked with no image; every other version
    /// keeps its image; the Fixup unlinks the old hole and the new cut's
    /// versions.
    #[test]
    fn cut_i_leaves_one_hole_and_cut_ii_on_it_takes_the_fixup() {
        let (_db, t) = chain_of(N);
        let st = siro(&t);
        assert_eq!(st.chain_state(0), ChainState::ZeroHole);
        // v1 and v2 die: two consecutive HOT segments.
        let cut = on_pass(&t.inner, &keeping(&t, &[0, 3, 4, 5, 6]));
        assert_eq!((cut.freed, cut.holes.as_slice()), (0, &[0][..]));
        assert_eq!(st.chain_state(0), ChainState::OneHole);
        assert_eq!(
            (count(&st.counters.cut_i), count(&st.counters.holes_opened)),
            (1, 1)
        );
        let some = |v: &[i64]| v.iter().map(|&x| Some(x)).collect::<Vec<_>>();
        let mut want = some(&[8, 7, 6, 5, 4, 3]);
        want.extend([None, None, Some(0)]);
        assert_eq!(chain(&t), want, "a hole: linked headers, no images");
        assert_eq!(st.counters.segment_pruned[0].load(Relaxed), 2);
        // v4 and v6 die, v5 (between them) lives: Cut-II on a 1-hole chain.
        let cut = on_pass(&t.inner, &keeping(&t, &[0, 3, 5]));
        assert_eq!((cut.freed, cut.holes.len()), (4, 0));
        assert_eq!(st.chain_state(0), ChainState::ZeroHole);
        assert_eq!(
            (count(&st.counters.cut_ii), count(&st.counters.fixups)),
            (1, 1)
        );
        assert_eq!(chain(&t), some(&[8, 7, 5, 3, 0]));
        assert_eq!(st.one_hole_chains(), 0);
    }

    /// 1-hole + Cut-I next to the hole: still one (longer) hole; 1-hole +
    /// Cut-I apart from it: two holes would be left, so the Fixup.
    #[test]
    fn cut_i_on_a_hole_grows_it_or_takes_the_fixup() {
        let (_db, t) = chain_of(N);
        let st = siro(&t);
        on_pass(&t.inner, &keeping(&t, &[0, 3, 4, 5, 6]));
        // v3 dies: it touches the hole (v2, v1).
        let cut = on_pass(&t.inner, &keeping(&t, &[0, 4, 5, 6]));
        assert_eq!(cut.holes, [0]);
        assert_eq!(st.chain_state(0), ChainState::OneHole);
        assert_eq!(count(&st.counters.holes_opened), 1, "the same hole");
        assert_eq!(chain(&t)[4..], [Some(4), None, None, None, Some(0)]);
        // v5 dies alone (one segment: Cut-I), apart from the hole.
        let cut = on_pass(&t.inner, &keeping(&t, &[0, 4, 6]));
        assert_eq!((cut.freed, cut.holes.len()), (4, 0));
        assert_eq!(count(&st.counters.cut_i), 3);
        assert_eq!(count(&st.counters.fixups), 1);
        assert_eq!(st.chain_state(0), ChainState::ZeroHole);
        assert_eq!(chain(&t), [Some(8), Some(7), Some(6), Some(4), Some(0)]);
    }

    /// The row step unlinks a hole's dead headers with the rest of the
    /// row's dead versions: 1-hole -> 0-hole without a cut's Fixup; and a
    /// reader of a live snapshot reads through a hole.
    #[test]
    fn the_row_step_fills_a_hole_and_readers_step_over_it() {
        let (db, t) = chain_of(N);
        let st = siro(&t);
        let mut now = db.begin_read_only().unwrap();
        on_pass(&t.inner, &keeping(&t, &[0, 3, 4, 5, 6]));
        assert_eq!(st.chain_state(0), ChainState::OneHole);
        assert_eq!(now.get(&t, &key![0]).unwrap().unwrap()[1], Value::Int(N));
        now.commit().unwrap();
        // An explicit pass: no snapshot, everything but the newest is dead.
        db.collect_garbage();
        assert_eq!(st.chain_state(0), ChainState::ZeroHole);
        assert_eq!(count(&st.counters.holes_cleaned), 1);
        assert_eq!(chain(&t), [Some(N)]);
    }

    /// Fig. 9 on a real chain, the writer wins: while a writer holds the
    /// row (relocating), the cutter's cut is handed over and the chain is
    /// untouched; the writer, leaving, does the cut (the hole appears).
    #[test]
    fn a_cut_handed_over_to_the_writer_is_done_when_it_leaves() {
        let (_db, t) = chain_of(N);
        let st = siro(&t);
        let row = st.row(0);
        row.sorter_enter(); // a writer mid-relocation
        let cut = on_pass(&t.inner, &keeping(&t, &[0, 3, 4, 5, 6]));
        assert!(cut.holes.is_empty());
        assert_eq!(count(&st.counters.sorter_won), 1);
        assert_eq!(chain(&t)[6..], [Some(2), Some(1), Some(0)], "not cut yet");
        siro::sorter_leave(&t.inner, st, 0, &row, &epoch::pin());
        assert_eq!(chain(&t)[6..], [None, None, Some(0)]);
        assert_eq!(st.chain_state(0), ChainState::OneHole);
        assert_eq!(count(&st.counters.holes_opened), 1);
    }

    /// Fig. 9 on a real chain, the cutter wins: a writer that comes while
    /// the cutter holds the row waits (its update does not return), and
    /// relocates once the cutter has cut and left.
    #[test]
    fn a_writer_waits_for_the_cutter_then_relocates() {
        let (db, t) = chain_of(N);
        let st = siro(&t);
        let row = st.row(0);
        let z = keeping(&t, &[0, 3, 4, 5, 6]);
        st.publish(&z);
        let h = Box::new(Handover {
            victims: {
                let _g = epoch::pin();
                let mut v: Vec<usize> = storage::versions(&t.inner, 0, Span::ALL)
                    .map(|v| v as usize)
                    .collect();
                v.sort_unstable();
                v
            },
            event: siro::CutEvent::CutI,
            zones: st.zones().unwrap(),
        });
        let CutterTas::Won(h) = row.cutter_tas(h) else {
            panic!("an idle row");
        };
        let relocated = || st.counters.relocated.iter().map(count).sum::<u64>();
        let before = relocated();
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let w = s.spawn(|| {
                set(&db, &t, N + 1);
                done.store(true, SeqCst);
            });
            // The writer swapped its footprint in: it lost and spin-waits
            // (its wait loop on the row turns), and has not returned.
            let from = row.spins();
            row.wait_for_a_waiter(from, 1000, || done.load(SeqCst));
            assert!(row.writer_footprint());
            assert!(!done.load(SeqCst), "the writer waits for the cutter");
            let (action, _) = siro::cut_chain(&t.inner, st, 0, &row, &h, &epoch::pin());
            assert_eq!(action, CutAction::LeaveHole);
            assert!(row.cutter_release(), "the writer's footprint");
            w.join().unwrap();
        });
        assert!(done.load(SeqCst));
        // v7 went off-row after the cut (v7 is dead by the zones: first
        // prune, no copy).
        assert_eq!(relocated(), before);
        assert_eq!(count(&st.counters.pruned_at_relocation[0]), 1);
        let imgs = chain(&t);
        assert_eq!(imgs[..3], [Some(N + 1), Some(N), None]);
        assert_eq!(imgs[imgs.len() - 3..], [None, None, Some(0)]);
    }
}
