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

use super::in_place::{Record, WriteSection};
use crate::value::Value;

/// Moves out the cells that the new image changes; their old values are the
/// delta.
pub(crate) fn diff_out(sec: &mut WriteSection<'_>, image: &[Value]) -> Record {
    let mut cols = Vec::new();
    let mut vals = Vec::new();
    for (i, v) in image.iter().enumerate() {
        if sec.differs(i, v) {
            cols.push(i as u32);
            vals.push(sec.take(i).expect("an overwritten row has every cell"));
        }
    }
    Record::delta(cols, vals)
}
