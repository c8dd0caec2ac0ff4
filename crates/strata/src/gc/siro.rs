//! The collector's side of SIRO version storage (`storage::siro`): once
//! per table per dead-zone pass, publish the zones to the table's writers
//! (their first prune and classification at relocation) and cut the
//! segments that lie inside one dead zone (vDriver §3.4, segment pruning);
//! between passes, republish fresher zones whenever committers refresh
//! the horizon (vDriver refreshes its zones periodically, §3.3).
//!
//! A cut takes, from every sealed dead segment, the locators of the rows
//! in the caller's partition (the pass holds that partition's lock, so no
//! other collector touches those rows), and unlinks those versions from
//! their chains in one `PrunePlan::Versions` step per row: secondary
//! entries first, as every prune does (`super::prune_versions`). A locator
//! is an address, not a pointer: a version the row step already pruned is
//! simply not found in its chain; one still there is pruned only if the
//! zones say it is dead (true of every version of a dead segment), so an
//! address reused by a newer version is never pruned by mistake.

use crate::storage::dead_zones::DeadZones;
use crate::storage::siro::{self, CutAction, CutOutcome, Handover};
use crate::table::TableInner;
use crossbeam_epoch as epoch;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};

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
pub(crate) fn on_pass(t: &TableInner, z: &DeadZones) -> Cut {
    let Some(st) = t.siro.as_deref() else {
        return Cut::default();
    };
    st.publish(z);
    let (taken, event) = siro::take_dead_segments(t, z, |_| true);
    let Some(event) = event else {
        return Cut::default();
    };
    match event {
        siro::CutEvent::CutI => st.counters.cut_i.fetch_add(1, Relaxed),
        siro::CutEvent::CutII => st.counters.cut_ii.fetch_add(1, Relaxed),
    };
    if taken.is_empty() || t.indexed.load(SeqCst) {
        // With secondary indexes, a prune walks the row's kept versions
        // for index work and reads the images of the versions it removes:
        // the row step prunes these (dead) versions with the others in one
        // walk when the row comes up (its versions' last readers ended:
        // the watch hands it over), instead of a cut that drops images.
        // The dead descriptors are dropped.
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
