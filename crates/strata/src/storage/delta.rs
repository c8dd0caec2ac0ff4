//! Delta version storage (MySQL-InnoDB, Oracle, HyPer): the master version is
//! updated in place, and only the old values of the attributes an update
//! modified go to a delta record in the delta store, linked from the
//! overwritten version's header (whose header words keep the old
//! timestamps). A reader reconstructs an older version by copying the
//! master and applying the deltas backwards, newest first:
//!
//! ```text
//!  master [a=3 b=3 c=0] (owner v3)
//!  slot ──> v3 ──> v2 {b: 2} ──> v1 {a: 1, b: 1}
//!  v2 = master + {b: 2}            = [a=3 b=2 c=0]
//!  v1 = master + {b: 2} + {a, b: 1} = [a=1 b=1 c=0]
//! ```
//!
//! The whole reconstruction runs inside one seqlock read (see
//! [`super::in_place`]), so it never mixes a master state with deltas of
//! another. A delete moves the whole row into the delta (a full record),
//! like time-travel does.
//!
//! The invariant it owns: a delta record turns the image of the version
//! that overwrote its version into its version's image. Removing a version
//! from the middle of a chain therefore merges its delta into its older
//! neighbour's (see `in_place::merge_records`):
//!
//! ```text
//!  v3 ─> v2 {b: 2} ─> v1 {a: 1, b: 1}     remove v2:
//!  v3 ─> v1 {a: 1, b: 1}                  ({b: 2} then {a: 1, b: 1})
//! ```

use super::in_place::{Change, InPlace, Records, Shape};
use crate::options::VersionStorage;
use crate::value::Value;

/// Delta storage: in-place master, deltas backwards.
pub type Delta = InPlace<Deltas>;

/// The old values of the modified attributes per overwritten version.
pub struct Deltas;

impl Records for Deltas {
    const SCHEME: VersionStorage = VersionStorage::Delta;

    /// The attributes the write sets to another value (a delete keeps the
    /// whole row): the writer compares before its write section, and the
    /// record is made to that size in the new version's block.
    #[inline]
    fn shape(change: &Change<'_>, differs: impl Fn(usize, &Value) -> bool) -> Shape {
        Shape::delta(change, differs)
    }
}
