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

use super::dead_zone::dead_versions;
use super::vacuum::Partition;
use super::Snapshots;
use crate::storage::dead_zones::DeadZones;
use crate::storage::dirty::BLOCK_TUPLES;
use crate::storage::{siro, PrunePlan};
use crate::table::TableInner;
use crossbeam_epoch as epoch;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Between passes (committers' refresh every few commits): publishes the
/// zones of `snaps` to every SIRO table, so that a version that died
/// since the last pass is dropped when it leaves the row instead of
/// copied off-row (the pass's own row step would remove it, but only at
/// the next pass, after the copy).
pub(crate) fn republish(tables: &[Arc<TableInner>], snaps: &Snapshots) {
    let mut zones = None;
    for t in tables {
        if let Some(st) = t.siro.as_deref() {
            st.publish(zones.get_or_insert_with(|| snaps.dead_zones()));
        }
    }
}

/// Publishes `zones` to `t`'s writers and prunes the dead segments' rows
/// of partition `p`. Returns versions retired. Does nothing for a table
/// of another scheme.
pub(crate) fn on_pass(t: &TableInner, p: Partition, zones: Option<&DeadZones>) -> u64 {
    let (Some(st), Some(z)) = (t.siro.as_deref(), zones) else {
        return 0;
    };
    st.publish(z);
    let mine = |tuple: u64| (tuple / BLOCK_TUPLES) % p.count == p.index;
    let taken = siro::take_dead_segments(t, z, mine);
    if taken.is_empty() || t.indexed.load(std::sync::atomic::Ordering::SeqCst) {
        // With secondary indexes, a prune walks the row's kept versions
        // for index work: the row step that follows in this pass prunes
        // these (dead) versions with the others in one walk, instead of
        // a second walk per row here. The dead descriptors are dropped.
        return 0;
    }
    let mut rows: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (tuple, v) in taken {
        rows.entry(tuple).or_default().push(v);
    }
    let mut freed = 0;
    for (tuple, mut addrs) in rows {
        let guard = epoch::pin();
        addrs.sort_unstable();
        let (dead, _) = dead_versions(t, tuple, z);
        let mut victims: Vec<_> = dead
            .into_iter()
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
