//! A lazy range's batches over MV-PBT's partitions
//! ([`SecondaryIndexKind::batch`](crate::index::SecondaryIndexKind::batch)).
//!
//! A scan decides an identity from all its records, in every partition
//! (Algorithm 3), so a batch lists identities, never records: a lazy range
//! then scans one listed identity at a time, `[ident, prefix_end(ident))`,
//! and that scan meets every record of it however the partitions split
//! them. The batch's extent comes from the partitions' own orders: each
//! sorted run (P_N and a sealed P_N, B+-trees; a frozen partition's
//! in-memory records and its spill file, sorted) offers a *cut*, the key
//! `max` records in from the batch's end (P_N: the fence of the leaf
//! there, as the standard index's walk from the high end has it), and the
//! batch ends at the nearest cut:
//!
//! ```text
//!   from the low end, max = 3      lo ─────────────────────────── hi
//!   P_N          a  c  f  k  ...       a c f|          cut f
//!   P_1 (file)   b  c  d  e  ...       b c d|          cut d  <- nearest
//!   batch: every record in [lo, d] -> identities a b c d (c from both)
//!   rest: from prefix_end(d) on
//! ```
//!
//! So a batch holds at most `max` records of each run, and at least one
//! (the cutting run's).

use super::partitions::{bytes, Probe};
use super::parts;
use super::record::ident_of;
use crate::index::key::{prefix_end, ByteKey, EncodedKey};
use crate::index::secondary::SecondaryIndex;
use crossbeam_epoch as epoch;
use std::collections::VecDeque;
use std::ops::Bound;

/// See the module doc.
pub(super) fn batch(
    idx: &SecondaryIndex,
    lo: &Bound<EncodedKey>,
    hi: &Bound<EncodedKey>,
    from_high: bool,
    max: usize,
    out: &mut VecDeque<Box<[u8]>>,
) -> Option<(Bound<EncodedKey>, Bound<EncodedKey>)> {
    let max = max.max(1);
    let p = parts(idx);
    let view = p.view();
    let (bl, bh) = (bytes(lo), bytes(hi));
    let mut cut: Option<Box<[u8]>> = None;
    let mut offer = |k: &[u8]| {
        let nearer = cut
            .as_deref()
            .is_none_or(|c| if from_high { k > c } else { k < c });
        if nearer {
            cut = Some(k.into());
        }
    };
    {
        let g = epoch::pin();
        for m in std::iter::once(&view.active).chain(view.sealed.as_ref()) {
            if from_high {
                if let Some(f) = m.fence_below(bh, &g).filter(|f| above(f, bl)) {
                    offer(&f);
                }
            } else {
                let first: Vec<&[u8]> = m.range(bl, bh, &g).take(max + 1).map(|(k, _)| k).collect();
                if first.len() > max {
                    offer(first[max - 1]);
                }
            }
        }
    }
    for f in &view.frozen {
        let mem = f.mem_range(bl, bh);
        if mem.len() > max {
            offer(&mem[if from_high { mem.len() - max } else { max - 1 }].0);
        }
        if let Some(file) = &f.file {
            let from = match bl {
                Bound::Included(l) => file.lower(l, false),
                Bound::Excluded(l) => file.lower(l, true),
                Bound::Unbounded => 0,
            };
            let to = match bh {
                Bound::Included(h) => file.lower(h, true),
                Bound::Excluded(h) => file.lower(h, false),
                Bound::Unbounded => file.len(),
            }
            .max(from);
            if to - from > max {
                offer(file.key(if from_high { to - max } else { from + max - 1 }));
            }
        }
    }
    let key = |b: &[u8]| EncodedKey::Bytes(ByteKey::from_slice(b));
    let (l, h) = match (&cut, from_high) {
        (None, _) => (lo.clone(), hi.clone()),
        (Some(c), true) => (Bound::Included(key(c)), hi.clone()),
        (Some(c), false) => (lo.clone(), Bound::Included(key(c))),
    };
    let mut ids: Vec<Box<[u8]>> = Vec::new();
    p.for_each(&view, &l, &h, &Probe::None, |k, _| {
        let id = ident_of(k);
        if ids.last().is_none_or(|x| **x != *id) {
            ids.push(id.into());
        }
    });
    // Partition by partition: merge them.
    ids.sort_unstable();
    ids.dedup();
    let rest = cut.map(|c| match (from_high, ids.first(), ids.last()) {
        // Every record of an identity below the first listed one lies
        // below the cut, and every record of the first at or above it.
        (true, Some(first), _) => Some((lo.clone(), Bound::Excluded(key(first)))),
        (false, _, Some(last)) => prefix_end(last).map(|e| (Bound::Included(key(&e)), hi.clone())),
        // The cutting record left since: go on past the cut.
        (true, None, _) => Some((lo.clone(), Bound::Excluded(key(&c)))),
        (false, _, None) => Some((Bound::Excluded(key(&c)), hi.clone())),
    });
    if from_high {
        out.extend(ids.into_iter().rev());
    } else {
        out.extend(ids);
    }
    rest.flatten()
}

/// Whether `k` lies above the start of a range that begins at `lo`.
fn above(k: &[u8], lo: Bound<&[u8]>) -> bool {
    match lo {
        Bound::Included(l) | Bound::Excluded(l) => k > l,
        Bound::Unbounded => true,
    }
}
