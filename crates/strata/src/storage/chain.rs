//! Walking and editing one chain, whatever its direction: the iterator the
//! rest of the engine reads chains with, and the unlinking behind
//! [`super::prune`].
//!
//! Chains are singly linked, newest to oldest (N2O and the in-place
//! schemes) or oldest to newest (O2N). Callers see one order, newest
//! first: an O2N span is collected on the way forward and handed out
//! backwards, costing the same one step per version.
//!
//! ```text
//!  N2O     slot ─> v9 ─> v5 ─> v2       yields v9, v5, v2 (walking)
//!  O2N     slot ─> v2 ─> v5 ─> v9       yields v9, v5, v2 (collected, popped)
//! ```
//!
//! [`Chain`] adds each version's row image at one step per version: an
//! in-place version below a committed one is its newer neighbour's image
//! with its own record applied (that record is immutable once its
//! overwriter has committed). Reading each version alone
//! ([`super::with_values`]) would walk the delta records from the master
//! down to it again, quadratic in the length of the chain.
//!
//! Unlinking ([`remove`]) keeps the newest version and every version it is
//! not told to remove, in order; whatever a removed version's older
//! neighbour needs to keep its image right is the scheme's business (its
//! `merge` callback).

use super::in_place;
use super::meter::Gauged;
use super::reclaim::retire;
use super::version::{Version, TID_MARK};
use crate::sync::atomic::{AtomicPtr, Ordering::SeqCst};
use crate::value::Value;
use crossbeam_epoch::Guard;
use std::ptr;

/// Which versions of a chain to visit: from `newest` down to `oldest`,
/// both included. Null ends are the chain's own ends.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub newest: *mut Version,
    pub oldest: *mut Version,
}

impl Span {
    /// The whole chain.
    pub const ALL: Span = Span {
        newest: ptr::null_mut(),
        oldest: ptr::null_mut(),
    };

    /// `v` and everything older.
    pub fn start_at(v: *mut Version) -> Span {
        Span {
            newest: v,
            oldest: ptr::null_mut(),
        }
    }

    /// The newest version down to `v` (null: the whole chain).
    pub fn down_to(v: *mut Version) -> Span {
        Span {
            newest: ptr::null_mut(),
            oldest: v,
        }
    }
}

/// The versions of a span, newest first. The caller is pinned and is the
/// row's collector or holds its write lock (nothing unlinks the versions
/// walked meanwhile), or only needs versions that stay alive while pinned.
pub struct Versions {
    /// Newest-first chains: the version to yield next (null: done).
    at: *mut Version,
    /// Newest-first chains: stop after this one (null: at the end).
    last: *mut Version,
    /// Oldest-first chains: the span, yielded from the back.
    stack: Vec<*mut Version>,
    steps: u64,
}

impl Versions {
    /// A newest-first chain starting at `head`.
    #[inline]
    pub(crate) fn newest_first(head: *mut Version, span: Span) -> Versions {
        Versions {
            at: if span.newest.is_null() {
                head
            } else {
                span.newest
            },
            last: span.oldest,
            stack: Vec::new(),
            steps: 0,
        }
    }

    /// An oldest-first chain starting at `head`. When `span.newest` is not
    /// in the chain any more (a cut got to it first) the span is empty.
    pub(crate) fn oldest_first(head: *mut Version, span: Span) -> Versions {
        let mut stack = Vec::new();
        let mut v = if span.oldest.is_null() {
            head
        } else {
            span.oldest
        };
        let mut met = span.newest.is_null();
        while !v.is_null() {
            stack.push(v);
            if v == span.newest {
                met = true;
                break;
            }
            // SAFETY: the caller is pinned; chain versions are alive.
            v = unsafe { (*v).next() };
        }
        let steps = stack.len() as u64;
        if !met {
            stack.clear();
        }
        Versions {
            at: ptr::null_mut(),
            last: ptr::null_mut(),
            stack,
            steps,
        }
    }

    /// Versions visited so far (the whole span for an O2N chain).
    pub fn steps(&self) -> u64 {
        self.steps
    }
}

impl Iterator for Versions {
    type Item = *mut Version;

    #[inline]
    fn next(&mut self) -> Option<*mut Version> {
        if let Some(v) = self.stack.pop() {
            return Some(v);
        }
        let v = self.at;
        if v.is_null() {
            return None;
        }
        self.steps += 1;
        self.at = if v == self.last {
            ptr::null_mut()
        } else {
            // SAFETY: the caller is pinned; chain versions are alive.
            unsafe { (*v).next() }
        };
        Some(v)
    }
}

/// The versions of a span, newest first, each with its row image: None for
/// a tombstone and for an uncommitted version (its writer may replace or
/// undo it meanwhile, and a seqlock read of a version no longer reachable
/// from the master would wait for good).
///
/// ```text
/// let mut c = storage::chain(t, tuple, Span::ALL);
/// while let Some((v, image)) = c.step() { ... }
/// ```
pub struct Chain {
    versions: Versions,
    /// The image of the previous (newer) version, when it was a committed
    /// in-place version (then it overwrote the current one).
    row: Vec<Value>,
    chained: bool,
}

impl Chain {
    pub(crate) fn new(versions: Versions) -> Chain {
        Chain {
            versions,
            row: Vec::new(),
            chained: false,
        }
    }

    /// The next version and its image.
    pub fn step(&mut self) -> Option<(*mut Version, Option<&[Value]>)> {
        let v = self.versions.next()?;
        // SAFETY: pinned; chain versions are alive.
        let r = unsafe { &*v };
        if r.is_tombstone() || r.begin.load(SeqCst) & TID_MARK != 0 {
            self.chained = false;
            return Some((v, None));
        }
        if !r.is_in_place() {
            self.chained = false;
            return Some((v, Some(r.data())));
        }
        let rec = r.ext().map_or(ptr::null_mut(), |e| e.record());
        if rec.is_null() && super::siro::is_hole(r) {
            // Pruned at relocation (SIRO): dead, no image to report.
            self.chained = false;
            return Some((v, None));
        }
        // SAFETY: pinned; records are freed with their versions, through an
        // epoch.
        match unsafe { rec.as_ref() } {
            Some(rec) if self.chained || rec.is_full() => rec.apply_to(&mut self.row),
            // The first committed version of the walk (or the first after a
            // break): read through the master once.
            _ => self.row = in_place::values_of(r),
        }
        self.chained = true;
        Some((v, Some(&self.row)))
    }

    /// Versions visited so far (see [`Versions::steps`]).
    pub fn steps(&self) -> u64 {
        self.versions.steps()
    }
}

/// Where the newest version that `keep` accepts sits in its chain.
#[derive(Clone, Copy, Debug)]
pub struct Survivor {
    /// That version (null: none).
    pub keep: *mut Version,
    /// Whether a newer version exists.
    pub newer: bool,
    /// Whether an older version exists.
    pub older: bool,
    /// Versions in the chain (as far as walked: a newest-first chain stops
    /// at `keep`).
    pub len: u64,
}

/// [`Survivor`] of a newest-first chain: the first version `keep` accepts.
#[inline]
pub(crate) fn survivor_newest_first(
    head: *mut Version,
    mut keep: impl FnMut(&Version) -> bool,
) -> Survivor {
    let mut out = Survivor {
        keep: ptr::null_mut(),
        newer: false,
        older: false,
        len: 0,
    };
    let mut v = head;
    while !v.is_null() {
        // SAFETY: pinned; chain versions are freed only after being
        // unlinked and an epoch passing.
        let r = unsafe { &*v };
        out.len += 1;
        if keep(r) {
            out.keep = v;
            out.older = !r.next().is_null();
            break;
        }
        out.newer = true;
        v = r.next();
    }
    out
}

/// [`Survivor`] of an oldest-first chain: the last version `keep` accepts.
#[inline]
pub(crate) fn survivor_oldest_first(
    head: *mut Version,
    mut keep: impl FnMut(&Version) -> bool,
) -> Survivor {
    let mut out = Survivor {
        keep: ptr::null_mut(),
        newer: false,
        older: false,
        len: 0,
    };
    let mut v = head;
    while !v.is_null() {
        // SAFETY: as above.
        let r = unsafe { &*v };
        out.len += 1;
        if keep(r) {
            out.keep = v;
            out.newer = false;
        } else {
            out.newer = true;
        }
        v = r.next();
    }
    out.older = !out.keep.is_null() && out.keep != head;
    out
}

/// Which end of a chain holds its newest version.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Newest {
    /// The slot points at it (N2O, in-place).
    First,
    /// The last one (O2N).
    Last,
}

/// Unlinks the `victims` of the chain in `slot` and retires them. Each
/// maximal run of victims between two kept versions is unlinked with one
/// store, after `merge(run, kept)` was told which versions leave above
/// the kept version `kept` (chain order; `kept` null: the run ends the
/// chain). Victims not in the chain are ignored. Returns the number
/// retired. `gauged`: the table's flag (`Store::gauged`).
///
/// The newest version, and the newest committed one, are never removed:
/// a writer may be about to overwrite, or to undo back to, it. A run that
/// would include one is kept (a debug build panics: the plan was wrong).
/// The caller is the row's only collector (under SIRO: whoever holds the
/// row's cleaning flag, `siro::RowState`); under O2N no cooperating
/// worker may move the slot meanwhile (one moving it past a run being
/// unlinked would retire the run again).
pub(crate) fn remove(
    slot: &AtomicPtr<Version>,
    victims: &[*mut Version],
    newest: Newest,
    mut merge: impl FnMut(&[*mut Version], *mut Version),
    gauged: Gauged,
    guard: &Guard,
) -> u64 {
    debug_assert!(
        victims.windows(2).all(|w| w[0] < w[1]),
        "a Versions plan is sorted (PrunePlan::versions)"
    );
    let is_victim = |v: *mut Version| super::PrunePlan::names(victims, v);
    let committed = |v: *mut Version| {
        // SAFETY: pinned; chain versions are alive.
        let b = unsafe { (*v).begin.load(SeqCst) };
        b & TID_MARK == 0
    };
    let mut n = 0;
    let mut run: Vec<*mut Version> = Vec::new();
    // The kept version before the run, in chain order (null: the slot).
    let mut before: *mut Version = ptr::null_mut();
    // Newest-first chains: whether a committed version was kept yet.
    let mut kept_committed = false;
    let head = slot.load(SeqCst);
    let mut v = head;
    loop {
        // SAFETY: pinned; chain versions are alive.
        let next = unsafe { v.as_ref() }.map_or(ptr::null_mut(), Version::next);
        if !v.is_null() && is_victim(v) {
            let allowed = committed(v)
                && match newest {
                    Newest::First => v != head && kept_committed,
                    Newest::Last => !next.is_null(),
                };
            debug_assert!(
                allowed,
                "a prune plan may not remove the newest (committed) version"
            );
            if allowed {
                run.push(v);
                v = next;
                continue;
            }
        }
        if !run.is_empty() {
            // O2N: the versions above the run are the newer ones; the
            // newest committed version is the last committed one.
            let ok = newest == Newest::First || (!v.is_null() && committed(v));
            debug_assert!(
                ok,
                "a prune plan may not remove the newest committed version"
            );
            if ok {
                n += unlink_run(slot, newest, before, &run, v, &mut merge, gauged, guard);
            }
            run.clear();
        }
        if v.is_null() {
            break;
        }
        kept_committed |= committed(v);
        before = v;
        v = next;
    }
    n
}

/// Unlinks `run` (consecutive in chain order after `before`, null: the
/// slot) so that `before` links `after`; retires it.
#[allow(clippy::too_many_arguments)]
fn unlink_run(
    slot: &AtomicPtr<Version>,
    newest: Newest,
    before: *mut Version,
    run: &[*mut Version],
    after: *mut Version,
    merge: &mut impl FnMut(&[*mut Version], *mut Version),
    gauged: Gauged,
    guard: &Guard,
) -> u64 {
    // First whatever `after` needs to stay right without the run (a reader
    // that reaches it the new way must find it so; one still in the run
    // finds it right either way).
    merge(run, after);
    // Among it: an in-place record of its own, not one in the block of the
    // run's oldest version, which goes (`in_place::record`).
    debug_assert!(
        newest == Newest::Last
            // SAFETY: pinned; `after` is a kept version, alive.
            || unsafe { after.as_ref() }
                .and_then(Version::ext)
                .is_none_or(|e| !super::in_place::record::word::is_embedded(e.record_word())),
        "a kept version still borrows its record from a removed one"
    );
    // And the heap values the run owns that the older kept version was
    // lent (`Version::hand_down`).
    let older = match newest {
        Newest::First => after,
        Newest::Last => before,
    };
    // SAFETY: pinned; kept versions and the run are alive.
    if let Some(o) = unsafe { older.as_ref() } {
        for &v in run {
            // SAFETY: as above: a victim, still linked.
            unsafe { &*v }.hand_down(o);
        }
    }
    // SAFETY: pinned; `before` is a kept version, alive.
    match unsafe { before.as_ref() } {
        Some(b) => b.next.store(after, SeqCst),
        // The oldest versions of an O2N chain: only the collector and the
        // row's unlink move the slot, and a compare-and-swap makes a lost
        // race retire nothing.
        None => {
            if slot
                .compare_exchange(run[0], after, SeqCst, SeqCst)
                .is_err()
            {
                return 0;
            }
        }
    }
    for &v in run {
        // Unlinked above: only readers pinned already can still reach it.
        retire(v, gauged, guard);
    }
    run.len() as u64
}
