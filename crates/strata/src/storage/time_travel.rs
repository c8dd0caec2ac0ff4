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

use super::in_place::{InPlace, RecordBox, Records, WriteSection};
use super::space::SpaceSet;
use crate::options::VersionStorage;
use crate::value::Value;

/// Time-travel storage: in-place master, full copies.
pub type TimeTravel = InPlace<FullCopies>;

/// A full copy of the old row per overwritten version.
pub struct FullCopies;

impl Records for FullCopies {
    const SCHEME: VersionStorage = VersionStorage::TimeTravel;

    #[inline]
    fn displace(
        sec: &mut WriteSection<'_>,
        _image: Option<&[Value]>,
        sp: Option<&SpaceSet>,
    ) -> RecordBox {
        copy_out(sec, sp)
    }
}

/// Moves every cell of the master into a full copy (the new values are
/// written afterwards from the writer's full image), a record made in `sp`.
pub(crate) fn copy_out(sec: &mut WriteSection<'_>, sp: Option<&SpaceSet>) -> RecordBox {
    RecordBox::full_with(sp, sec.width(), |i| {
        sec.take(i).expect("an overwritten row has every cell")
    })
}
