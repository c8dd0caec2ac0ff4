//! The version: one tuple header and one row image.
//!
//! Every write creates a new version and links it in front of the row's
//! version chain (append-only, newest-to-oldest):
//!
//! ```text
//!  indirection[tuple] ──> v3 ──next──> v2 ──next──> v1 ──> null
//!                         [txn_id | begin | end | next | word_a | word_b] + row
//! ```
//!
//! The header follows the Peloton study: `txn_id` is the write lock (0 when
//! free, else the owner's transaction id), `begin`/`end` bound the version's
//! lifetime in commit timestamps, `next` is the chain pointer, and two words
//! belong to the protocol (`read_ts` for MVTO, the reader count for MV2PL,
//! `pstamp`/`sstamp` for SSN). That is 48 bytes; the row image adds a 16-byte
//! slice pointer.
//!
//! While its creator is running, `begin` holds the creator's id with
//! [`TID_MARK`] set, and the overwritten version's `end` holds the
//! overwriter's id the same way. Readers that meet a marker ask the
//! transaction table ([`crate::txn::tid`]) whether that transaction has
//! committed, and at which timestamp (ERMIA's post-commit stamping).

use crate::value::Value;
use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// Set in `begin`/`end` while they hold a transaction id, not a timestamp.
pub const TID_MARK: u64 = 1 << 63;
/// Set in `len` for a tombstone.
const TOMBSTONE: u64 = 1 << 63;
/// Set in `len` when a value owns heap memory (text): freeing a version
/// without it needs no pass over its (by then cold) values.
const HAS_HEAP: u64 = 1 << 62;
const FLAGS: u64 = TOMBSTONE | HAS_HEAP;

/// `end` of a version nobody has overwritten.
pub const INF_TS: u64 = TID_MARK - 1;

/// A version of a row. The row image follows the struct in the same
/// allocation (`len` values), so reading a row costs one cache miss less
/// than a separately boxed row:
///
/// ```text
///  [txn_id|begin|end|next|word_a|word_b] [len] [Value; len]
///   <------------- 48 bytes ------------> 8 B   16 B each
/// ```
#[repr(C)]
pub struct Version {
    /// Write lock: 0 = free, else the id of the transaction that owns it.
    pub txn_id: AtomicU64,
    /// Commit timestamp of the creator, or `TID_MARK | creator id`.
    pub begin: AtomicU64,
    /// Commit timestamp of the overwriter, `INF_TS`, or `TID_MARK | id`.
    pub end: AtomicU64,
    /// The next older version.
    pub next: AtomicPtr<Version>,
    /// MVTO `read_ts` | MV2PL reader count | SSN `pstamp` (max reader cstamp).
    pub word_a: AtomicU64,
    /// SSN `sstamp` (the overwriter's successor low watermark).
    pub word_b: AtomicU64,
    /// Number of values that follow, with [`TOMBSTONE`] set for a deleted
    /// row (whose values are then its primary key, so GC can find its index
    /// entry).
    len: u64,
}

/// Bytes of header per version (everything but the row image).
pub const HEADER_BYTES: usize = std::mem::size_of::<Version>() - std::mem::size_of::<u64>();

const _: () = assert!(
    HEADER_BYTES <= 48,
    "the version header must stay within 48 bytes"
);
const _: () = assert!(std::mem::size_of::<Version>().is_multiple_of(std::mem::align_of::<Value>()));

fn layout(len: usize) -> Layout {
    let (l, off) = Layout::new::<Version>()
        .extend(Layout::array::<Value>(len).expect("row size overflows"))
        .expect("row size overflows");
    debug_assert_eq!(off, std::mem::size_of::<Version>());
    l.pad_to_align()
}

impl Version {
    /// A new, locked, uncommitted version created by transaction `tid`,
    /// holding `values`. Free it with [`Version::free`].
    pub fn alloc(tid: u64, values: Vec<Value>, next: *mut Version) -> *mut Version {
        let mut it = values.into_iter();
        Self::alloc_with(tid, it.len(), next, |_| {
            it.next().expect("exactly len values")
        })
    }

    /// Like [`Version::alloc`], with value `i` produced by `value(i)`; an
    /// update builds its row image in place this way, with no temporary row.
    pub fn alloc_with(
        tid: u64,
        len: usize,
        next: *mut Version,
        value: impl FnMut(usize) -> Value,
    ) -> *mut Version {
        Self::alloc_inner(tid, len, 0, next, value)
    }

    /// A tombstone (deleted row) holding the row's primary key.
    pub fn alloc_tombstone(tid: u64, key: Vec<Value>, next: *mut Version) -> *mut Version {
        let mut it = key.into_iter();
        Self::alloc_inner(tid, it.len(), TOMBSTONE, next, |_| {
            it.next().expect("exactly len values")
        })
    }

    fn alloc_inner(
        tid: u64,
        len: usize,
        flags: u64,
        next: *mut Version,
        mut value: impl FnMut(usize) -> Value,
    ) -> *mut Version {
        let l = layout(len);
        // SAFETY: the layout has non-zero size (the header); we check for
        // allocation failure; the header is written with `write` before any
        // reference is made. Each value slot (inside the allocation, see
        // `layout`) is written exactly once. `value` is our own closures'
        // clones/moves, which do not panic; if one did, the version would
        // leak, never be read half-built (it is not shared yet).
        unsafe {
            let p = alloc(l) as *mut Version;
            if p.is_null() {
                handle_alloc_error(l);
            }
            p.write(Version {
                txn_id: AtomicU64::new(tid),
                begin: AtomicU64::new(TID_MARK | tid),
                end: AtomicU64::new(INF_TS),
                next: AtomicPtr::new(next),
                word_a: AtomicU64::new(0),
                word_b: AtomicU64::new(INF_TS),
                len: len as u64 | flags,
            });
            let dst = Self::values_ptr(p);
            let mut heap = false;
            for i in 0..len {
                let v = value(i);
                heap |= matches!(v, Value::Text(_));
                dst.add(i).write(v);
            }
            if heap {
                (*p).len |= HAS_HEAP;
            }
            p
        }
    }

    fn values_ptr(p: *mut Version) -> *mut Value {
        // SAFETY: the values start right after the struct (see `layout`).
        unsafe { (p as *mut u8).add(std::mem::size_of::<Version>()) as *mut Value }
    }

    /// Drops the values and releases the allocation.
    ///
    /// # Safety
    /// `v` came from [`Version::alloc`], is unlinked from every chain, no
    /// thread can still reach it, and it is freed once.
    pub unsafe fn free(v: *mut Version) {
        // SAFETY: per the contract, we own `v` exclusively; the values were
        // initialised by `alloc` and are dropped once here.
        unsafe {
            let len = (*v).count();
            if (*v).len & HAS_HEAP != 0 {
                std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(
                    Self::values_ptr(v),
                    len,
                ));
            }
            dealloc(v as *mut u8, layout(len));
        }
    }

    /// Moves the values out and releases the allocation.
    ///
    /// # Safety
    /// As for [`Version::free`].
    pub unsafe fn into_values(v: *mut Version) -> Vec<Value> {
        // SAFETY: per the contract we own `v`; each value is read (moved)
        // once and the memory is released without dropping them again.
        unsafe {
            let len = (*v).count();
            let mut out = Vec::with_capacity(len);
            std::ptr::copy_nonoverlapping(Self::values_ptr(v), out.as_mut_ptr(), len);
            out.set_len(len);
            dealloc(v as *mut u8, layout(len));
            out
        }
    }

    #[inline]
    fn count(&self) -> usize {
        (self.len & !FLAGS) as usize
    }

    /// The row image; for a tombstone, the deleted row's primary key.
    #[inline]
    pub fn data(&self) -> &[Value] {
        // SAFETY: `self` lives in an allocation made by `alloc` with `len`
        // initialised values after the struct; they are never mutated while
        // the version is shared.
        unsafe {
            std::slice::from_raw_parts(Self::values_ptr(self as *const _ as *mut _), self.count())
        }
    }

    /// True if this version records a deletion.
    #[inline]
    pub fn is_tombstone(&self) -> bool {
        self.len & TOMBSTONE != 0
    }

    /// Bytes this version occupies: header, row image and text payloads
    /// (text shared with other versions is counted once per version that
    /// holds it, i.e. an upper bound).
    pub fn footprint(&self) -> usize {
        layout(self.count()).size() + self.data().iter().map(Value::heap_bytes).sum::<usize>()
    }

    #[inline]
    pub fn next(&self) -> *mut Version {
        self.next.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Arc;

    #[test]
    fn header_is_at_most_48_bytes() {
        assert_eq!(HEADER_BYTES, 48);
        assert_eq!(std::mem::size_of::<Value>(), 16);
    }

    // Exercises alloc/free/into_values; small enough for Miri
    // (`cargo +nightly miri test -p strata --lib version`).
    #[test]
    fn inline_rows_own_and_release_their_values() {
        let text = Arc::new("shared".to_string());
        let v = Version::alloc(
            7,
            vec![Value::Int(1), Value::Text(Arc::clone(&text))],
            std::ptr::null_mut(),
        );
        // SAFETY: fresh, unshared allocation.
        let r = unsafe { &*v };
        assert_eq!(r.data(), &[Value::Int(1), Value::Text(Arc::clone(&text))]);
        assert!(!r.is_tombstone());
        assert_eq!(r.begin.load(Ordering::Relaxed), TID_MARK | 7);
        assert_eq!(Arc::strong_count(&text), 2);
        let w = Version::alloc(8, r.data().to_vec(), v);
        assert_eq!(Arc::strong_count(&text), 3);
        // SAFETY: both are ours and freed once.
        unsafe {
            assert_eq!((*w).next(), v);
            Version::free(w);
            assert_eq!(Arc::strong_count(&text), 2);
            let back = Version::into_values(v);
            assert_eq!(Arc::strong_count(&text), 2);
            assert_eq!(back[1].as_text(), Some("shared"));
        }
        let tomb = Version::alloc_tombstone(9, vec![Value::Int(4)], std::ptr::null_mut());
        let empty = Version::alloc(9, Vec::new(), std::ptr::null_mut());
        // SAFETY: fresh allocations, freed once.
        unsafe {
            assert!((*tomb).is_tombstone());
            assert_eq!((*tomb).data(), &[Value::Int(4)]);
            assert!(!(*empty).is_tombstone());
            Version::free(tomb);
            Version::free(empty);
        }
    }
}
