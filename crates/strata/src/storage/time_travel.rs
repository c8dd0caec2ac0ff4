//! Time-travel version storage (SAP HANA, Peloton's TT): the master version
//! lives in the main table and is updated in place; on every update the old
//! master is copied whole into the time-travel store and linked from the
//! overwritten version's header, newest to oldest.
//!
//! ```text
//!  main table                       time-travel store
//!  master [a=3 b=3] (owner: v3)
//!  slot ──> v3 ──> v2 ─────────────> copy [a=2 b=2]
//!                  └──> v1 ────────> copy [a=1 b=1]
//! ```
//!
//! A reader of an old version copies its time-travel copy (immutable, so no
//! seqlock is needed); only a reader of the newest version reads the master
//! under its seqlock (see [`super::in_place`]). Unchanged text attributes
//! are shared between the master and the copy by reference count, or
//! copied in full with `NonInline::Copy`.
//!
//! The invariant it owns: every overwritten version's record is a full,
//! immutable copy, so each old version stands alone; pruning any of them
//! needs no repair of the others.

use super::in_place::{Change, InPlace, Records, Shape};
use crate::options::VersionStorage;
use crate::value::Value;

/// Time-travel storage: in-place master, full copies.
pub type TimeTravel = InPlace<FullCopies>;

/// A full copy of the old row per overwritten version.
pub struct FullCopies;

impl Records for FullCopies {
    const SCHEME: VersionStorage = VersionStorage::TimeTravel;

    #[inline]
    fn shape(change: &Change<'_>, _differs: impl Fn(usize, &Value) -> bool) -> Shape {
        Shape::full(change)
    }
}
