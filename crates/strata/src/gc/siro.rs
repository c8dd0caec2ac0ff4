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

use super::dead_zone::{dead_versions, Pins};
use crate::storage::dead_zones::DeadZones;
use crate::storage::{siro, PrunePlan};
use crate::table::TableInner;
use crossbeam_epoch as epoch;
use std::collections::BTreeMap;

/// Publishes `zones` to `t`'s writers and prunes the rows of its dead
/// segments. Returns versions retired. Does nothing for a table of another
/// scheme. Called by the dead-zone pass (`gc::dead_zone`) once per table,
/// under the pass lock: no other collector touches these rows.
pub(crate) fn on_pass(t: &TableInner, z: &DeadZones) -> u64 {
    let Some(st) = t.siro.as_deref() else {
        return 0;
    };
    st.publish(z);
    let taken = siro::take_dead_segments(t, z, |_| true);
    if taken.is_empty() || t.indexed.load(std::sync::atomic::Ordering::SeqCst) {
        // With secondary indexes, a prune walks the row's kept versions
        // for index work: the row step prunes these (dead) versions with
        // the others in one walk when the row comes up (its versions' last
        // readers ended: the watch hands it over), instead of a second
        // walk per row here. The dead descriptors are dropped.
        return 0;
    }
    let mut rows: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (tuple, v) in taken {
        rows.entry(tuple).or_default().push(v);
    }
    let mut freed = 0;
    let (mut pins, mut dead) = (Pins::default(), Vec::new());
    for (tuple, mut addrs) in rows {
        let guard = epoch::pin();
        addrs.sort_unstable();
        dead.clear();
        dead_versions(t, tuple, z, 0, &mut pins, &mut dead);
        let mut victims: Vec<_> = dead
            .iter()
            .copied()
            .filter(|&v| addrs.binary_search(&(v as usize)).is_ok())
            .collect();
        if victims.is_empty() {
            continue;
        }
        freed += siro::cutting(|| {
            super::prune_versions(t, tuple, PrunePlan::versions(&mut victims), &guard)
        });
    }
    freed
}
