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

use super::in_place::{InPlace, RecordBox, Records, WriteSection};
use super::space::SpaceSet;
use crate::options::VersionStorage;
use crate::value::Value;

/// Delta storage: in-place master, deltas backwards.
pub type Delta = InPlace<Deltas>;

/// The old values of the modified attributes per overwritten version.
pub struct Deltas;

impl Records for Deltas {
    const SCHEME: VersionStorage = VersionStorage::Delta;

    #[inline]
    fn displace(
        sec: &mut WriteSection<'_>,
        image: Option<&[Value]>,
        sp: Option<&SpaceSet>,
    ) -> RecordBox {
        match image {
            Some(img) => diff_out(sec, img, sp),
            // A delete keeps the whole row.
            None => super::time_travel::copy_out(sec, sp),
        }
    }
}

/// Moves out the cells that the new image changes; their old values are the
/// delta, a record made in `sp`. Two passes (count, then move), so the
/// record is the only allocation.
pub(crate) fn diff_out(
    sec: &mut WriteSection<'_>,
    image: &[Value],
    sp: Option<&SpaceSet>,
) -> RecordBox {
    let n = (0..image.len())
        .filter(|&i| sec.differs(i, &image[i]))
        .count();
    let mut next = 0;
    RecordBox::delta_with(sp, n, |_| {
        while !sec.differs(next, &image[next]) {
            next += 1;
        }
        let c = next;
        next += 1;
        (
            c as u32,
            sec.take(c).expect("an overwritten row has every cell"),
        )
    })
}
