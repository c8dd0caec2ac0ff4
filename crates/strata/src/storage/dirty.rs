//! The dirty-block bitmap: one bit per block of [`BLOCK_TUPLES`] tuple
//! slots, set by a commit that wrote a row of the block and cleared by the
//! tuple-level vacuum (`gc::vacuum`) before it scans the block. It lives with
//! the tuple slots it describes, so a table holds one without knowing which
//! collector reads it.
//!
//! ```text
//!  bitmap   1 0 0 1 0 ...
//!  blocks  [0 ][1 ][2 ][3 ][4 ]   (BLOCK_TUPLES slots each)
//! ```
//!
//! Invariant: a block with a version committed after its bit was last
//! cleared has its bit set (writers set it after their commit, the vacuum
//! clears it before scanning and sets it again for garbage it left).

use super::indirection::MAX_TUPLES;
use std::sync::atomic::{AtomicU64, Ordering};

/// Tuples per dirty-block bit.
pub const BLOCK_TUPLES: u64 = 4096;
const WORDS: usize = (MAX_TUPLES / BLOCK_TUPLES / 64) as usize;

/// One bit per block of tuples: set by writers, cleared by the vacuum.
pub struct DirtyBlocks {
    words: Box<[AtomicU64]>,
}

impl Default for DirtyBlocks {
    fn default() -> Self {
        DirtyBlocks {
            words: (0..WORDS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl DirtyBlocks {
    /// Marks the block of `tuple` modified. A load first: in a hot block the
    /// bit is usually set already, and a plain load keeps the line shared.
    #[inline]
    pub fn mark(&self, tuple: u64) {
        let b = tuple / BLOCK_TUPLES;
        let w = &self.words[(b / 64) as usize];
        let bit = 1u64 << (b % 64);
        if w.load(Ordering::Relaxed) & bit == 0 {
            w.fetch_or(bit, Ordering::SeqCst);
        }
    }

    /// Clears the bit of `block`; returns whether it was set.
    pub fn take(&self, block: u64) -> bool {
        let bit = 1u64 << (block % 64);
        let w = &self.words[(block / 64) as usize];
        w.load(Ordering::SeqCst) & bit != 0 && w.fetch_and(!bit, Ordering::SeqCst) & bit != 0
    }

    pub fn set(&self, block: u64) {
        self.words[(block / 64) as usize].fetch_or(1 << (block % 64), Ordering::SeqCst);
    }
}
