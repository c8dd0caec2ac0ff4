//! In-place version storage: the master row and its seqlock (shared by
//! time-travel and delta storage).
//!
//! The newest values of a row live in one fixed place, its *master*, which
//! writers update in place. Every logical version keeps a small header of its
//! own (the usual [`Version`] header, no row image), chained newest-to-oldest
//! from the indirection slot, so the protocols' per-version words and the
//! version identity that read and write sets hold never move. When a writer
//! overwrites the master, the values it displaces go to a *record* hung off
//! the overwritten version's header: a full copy (time-travel store) or the
//! old values of the modified attributes only (delta store).
//!
//! ```text
//!  slot ──> [hdr v3] ──> [hdr v2] ──> [hdr v1]        headers (N2O chain)
//!             │ owner      │ record      │ record
//!             ▼            ▼             ▼
//!  master: seq 6 | a=3 b=3 c=3   {b: 2}         {a: 1, b: 1}   delta store
//!                                 (or a full copy each: time-travel store)
//! ```
//!
//! Readers of a master use a seqlock: the writer makes `seq` odd, moves and
//! writes cells, publishes records, sets `owner`, and makes `seq` even again;
//! a reader loads `seq`, copies the raw cell bits (atomic words, never a
//! `Value` it could drop or clone), walks the records from `owner` down to
//! the version it wants, then re-checks `seq`. Only a snapshot that saw the
//! same even `seq` before and after is turned into values: a text value's
//! reference count is touched only for validated bits. The writer is always
//! the holder of the row's write lock, so writers never race each other.
//!
//! Displaced values are never dropped while a reader could hold their bits:
//! they move into a record (freed with its version, through an epoch) or
//! are retired through `crossbeam-epoch` themselves. An abort restores the
//! master from the record (clones of the record's values), retires the
//! record and its own values, and only then releases the write lock.
//!
//! Both in-place schemes are one [`VersionStore`] implementation,
//! [`InPlace`], told by its [`Records`] parameter what an overwrite
//! leaves behind (time-travel: a full copy; delta: the changed
//! attributes). A prune plan that removes versions from the middle of a
//! chain swaps in a merged record for the kept version below them first
//! ([`merge_records`]), so every kept version still reads right.
//!
//! A record is one allocation (header, values, attribute numbers), owned
//! by a [`RecordBox`] until it is published and again once it is unlinked:
//! with memory spaces (`Options::memory_spaces`) it comes from the
//! allocating thread's space, like the version headers, and it remembers
//! which allocator it came from, so every free (a version's, an abort's, a
//! merge's or SIRO's retirement through the epoch, also after the database
//! is gone) returns it there.
//!
//! The master's atomics come from `crate::sync`: `tests/seqlock_model.rs`
//! runs `install`, `undo` and `Master::read` under shuttle.

use super::append_only::carry;
use super::chain::{self, Newest, Span, Survivor, Versions};
use super::reclaim::defer_free;
use super::space::{self, SpaceSet};
use super::version::Version;
use super::{NewRow, PrunePlan, Store, VersionStore};
use crate::options::{NonInline, VersionStorage};
use crate::sync::atomic::{fence, AtomicPtr, AtomicU64, Ordering};
use crate::sync::{broken, thread::spin_loop, Break};
use crate::value::{Text, Value};
use crossbeam_epoch::{self as epoch, Guard};
use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::marker::PhantomData;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};

const STUCK: &str = "a seqlock reader cannot reach its version: a storage invariant is broken";

/// Rows up to this many attributes are read through a stack buffer.
const FAST_CELLS: usize = 32;

const EMPTY: u64 = 0;
const INT: u64 = 1;
const TEXT: u64 = 2;
const NULL: u64 = 3;
const BYTES: u64 = 4;
const FLOAT: u64 = 5;
const BOOL: u64 = 6;

/// One attribute of the master, as two atomic words (tag, payload): a text
/// or byte-string value is held as the raw pointer of its `Arc`, owned by
/// the master; a float as its bits.
struct Cell {
    tag: AtomicU64,
    bits: AtomicU64,
}

#[derive(Clone, Copy)]
struct Raw {
    tag: u64,
    bits: u64,
}

fn encode(v: Value) -> Raw {
    let (tag, bits) = match v {
        Value::Int(i) => (INT, i as u64),
        Value::Text(s) => (TEXT, s.into_raw()),
        Value::Null => (NULL, 0),
        Value::Bytes(b) => (BYTES, Arc::into_raw(b) as u64),
        Value::Float(f) => (FLOAT, f.to_bits()),
        Value::Bool(b) => (BOOL, u64::from(b)),
    };
    Raw { tag, bits }
}

/// The value `r` encodes when it owns nothing out of line.
fn decode_inline(r: Raw) -> Option<Value> {
    match r.tag {
        INT => Some(Value::Int(r.bits as i64)),
        NULL => Some(Value::Null),
        FLOAT => Some(Value::Float(f64::from_bits(r.bits))),
        BOOL => Some(Value::Bool(r.bits != 0)),
        _ => None,
    }
}

/// Takes ownership of the value `r` encodes.
///
/// # Safety
/// `r` was produced by `encode` and its ownership is given up by the caller
/// (the cell it came from no longer holds it).
unsafe fn decode_owned(r: Raw) -> Option<Value> {
    match r.tag {
        // SAFETY: the bits are a `Text::into_raw` word whose count we own.
        TEXT => Some(Value::Text(unsafe { Text::from_raw(r.bits) })),
        // SAFETY: as for text.
        BYTES => Some(Value::Bytes(unsafe {
            Arc::from_raw(r.bits as *const Vec<u8>)
        })),
        _ => decode_inline(r),
    }
}

/// A new value equal to the one `r` encodes (the cell keeps its own).
///
/// # Safety
/// `r` is a validated snapshot of a cell, and the `Arc` it names is still
/// alive: held by the master or a record or retired through an epoch the
/// caller is pinned in.
unsafe fn decode_clone(r: Raw) -> Option<Value> {
    /// A second handle on the `Arc` behind `p`.
    ///
    /// # Safety
    /// As for `decode_clone`: `p` came from `Arc::into_raw` and is alive.
    unsafe fn share<T>(p: u64) -> Arc<T> {
        let p = p as *const T;
        // SAFETY: per the contract the Arc is alive; we add our count
        // before making the handle that will own it.
        unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        }
    }
    match r.tag {
        // SAFETY: forwarded contract.
        TEXT => Some(Value::Text(unsafe { Text::with_raw(r.bits, Text::clone) })),
        // SAFETY: forwarded contract.
        BYTES => Some(Value::Bytes(unsafe { share(r.bits) })),
        _ => decode_inline(r),
    }
}

/// The old values of an overwritten version: a full copy (time-travel) or
/// the old values of only the attributes its overwriter modified (delta).
/// Immutable once published. One allocation, made and freed by
/// [`RecordBox`]: the header, the values, then (a delta) the attribute
/// numbers, sorted:
///
/// ```text
///  [len | ncols | place | shift | full] [Value; len] [u32; ncols]
///   <------ 16 bytes (padded) ------->   16 B each    4 B each
/// ```
///
/// `shift` says which allocator the record came from, as a version's `len`
/// word does: log2 of the chunk size of the memory space that holds it
/// (`storage::space`), 0 for the global allocator. So a free (often an
/// epoch callback, maybe after the database is gone) needs no handle on
/// the database.
#[repr(C)]
pub struct Record {
    /// Values that follow the header.
    len: u32,
    /// Attribute numbers after the values (0 for a full record).
    ncols: u32,
    /// Where a SIRO image lives (`super::siro::place`); 0 for the other
    /// schemes' records.
    place: u8,
    /// The allocator (see above).
    shift: u8,
    /// `vals` is the full row image (no attribute numbers).
    full: bool,
}

/// Where the values start: after the header, aligned for a value.
const RECORD_VALS_AT: usize =
    std::mem::size_of::<Record>().next_multiple_of(std::mem::align_of::<Value>());
const _: () = assert!(RECORD_VALS_AT == 16, "a record's header is 16 bytes");
const _: () = assert!(
    space::MAX_INCREMENT.trailing_zeros() <= u8::MAX as u32,
    "a chunk shift fits a record's byte"
);

/// The layout of a record of `len` values and `ncols` attribute numbers:
/// [`RECORD_VALS_AT`], the values, the numbers, padded.
fn record_layout(len: usize, ncols: usize) -> Layout {
    let (l, vals) = Layout::new::<Record>()
        .extend(Layout::array::<Value>(len).expect("row size overflows"))
        .expect("row size overflows");
    debug_assert_eq!(vals, RECORD_VALS_AT);
    let (l, cols) = l
        .extend(Layout::array::<u32>(ncols).expect("row size overflows"))
        .expect("row size overflows");
    debug_assert_eq!(cols, RECORD_VALS_AT + len * std::mem::size_of::<Value>());
    l.pad_to_align()
}

impl Record {
    #[inline]
    fn vals_ptr(p: *const Record) -> *mut Value {
        // SAFETY: in bounds of the record's allocation (see `record_layout`).
        unsafe { (p as *mut u8).add(RECORD_VALS_AT) as *mut Value }
    }

    #[inline]
    fn cols_ptr(p: *const Record, len: usize) -> *mut u32 {
        // SAFETY: in bounds (or one past the end, for no numbers) of the
        // record's allocation (see `record_layout`).
        unsafe {
            (Self::vals_ptr(p) as *mut u8).add(len * std::mem::size_of::<Value>()) as *mut u32
        }
    }

    /// The values: the row image of a full record, else the old values of
    /// the attributes [`Record::cols`] names, in that order.
    #[inline]
    fn vals(&self) -> &[Value] {
        // SAFETY: `len` values were written by `RecordBox::new` and live,
        // unchanged, as long as the record.
        unsafe { std::slice::from_raw_parts(Self::vals_ptr(self), self.len as usize) }
    }

    /// The attribute numbers of a delta record (sorted); None for a full one.
    #[inline]
    fn cols(&self) -> Option<&[u32]> {
        if self.full {
            return None;
        }
        // SAFETY: `ncols` numbers were written by `RecordBox::new` after
        // the values and live, unchanged, as long as the record.
        Some(unsafe {
            std::slice::from_raw_parts(Self::cols_ptr(self, self.len as usize), self.ncols as usize)
        })
    }

    /// The SIRO place tag (0: not a SIRO image).
    pub(crate) fn place(&self) -> u8 {
        self.place
    }

    pub fn is_full(&self) -> bool {
        self.full
    }

    pub(crate) fn footprint(&self, seen: &mut super::version::Payloads) -> usize {
        record_layout(self.len as usize, self.ncols as usize).size() + seen.bytes(self.vals())
    }

    /// The row image of a full record.
    pub fn full_values(&self) -> &[Value] {
        debug_assert!(self.is_full());
        self.vals()
    }

    /// Turns `row`, the image of the version that overwrote this record's
    /// version, into that version's image.
    pub fn apply_to(&self, row: &mut Vec<Value>) {
        match self.cols() {
            None => {
                row.clear();
                row.extend(self.vals().iter().cloned());
            }
            Some(cols) => {
                for (&c, v) in cols.iter().zip(self.vals().iter()) {
                    row[c as usize] = v.clone();
                }
            }
        }
    }

    fn apply<'a>(&'a self, over: &mut [Option<&'a Value>]) {
        match self.cols() {
            None => {
                for (o, v) in over.iter_mut().zip(self.vals().iter()) {
                    *o = Some(v);
                }
            }
            Some(cols) => {
                for (&c, v) in cols.iter().zip(self.vals().iter()) {
                    over[c as usize] = Some(v);
                }
            }
        }
    }

    /// Drops the values and returns the memory to the allocator it came
    /// from (a memory space's free list or the global allocator).
    ///
    /// # Safety
    /// `p` came from [`RecordBox::into_raw`] (or is a box's own pointer),
    /// nothing reads it any more, and it is freed once.
    unsafe fn free(p: *mut Record) {
        // SAFETY: per the contract we own the record; its `len` values were
        // initialised by `RecordBox::new` and are dropped once here. The
        // layout and `shift` are the ones `RecordBox::new` allocated with:
        // a space slot is returned to the space that owns its chunk (which
        // outlives its slots, even past the database: `storage::space`),
        // global memory to the global allocator.
        unsafe {
            let (len, ncols, shift) = ((*p).len as usize, (*p).ncols as usize, (*p).shift);
            ptr::drop_in_place(ptr::slice_from_raw_parts_mut(Self::vals_ptr(p), len));
            let l = record_layout(len, ncols);
            if shift == 0 {
                dealloc(p as *mut u8, l);
            } else {
                space::free(
                    NonNull::new_unchecked(p as *mut u8),
                    l.size(),
                    u32::from(shift),
                );
            }
        }
    }
}

/// An owned [`Record`]: made in the database's memory spaces when it has
/// them (a record larger than the largest size class, or one made without
/// spaces, comes from the global allocator), and freed, on drop, to the
/// allocator it came from. [`RecordBox::into_raw`] publishes it (in a
/// version's `InPlaceExt::record`); [`RecordBox::from_raw`] takes back an
/// unlinked one, to free it (`retire_record`, `Version::free`).
pub struct RecordBox(NonNull<Record>);

// SAFETY: the box owns its record: values that are Send and Sync, and
// memory that any thread may free (`space::free` takes the space's lock).
unsafe impl Send for RecordBox {}
// SAFETY: as above; a record is immutable while shared.
unsafe impl Sync for RecordBox {}

impl RecordBox {
    /// A full record holding `vals`; `sp`: the database's memory spaces.
    pub fn full(sp: Option<&SpaceSet>, vals: Vec<Value>) -> RecordBox {
        let mut it = vals.into_iter();
        Self::full_with(sp, it.len(), |_| it.next().expect("exactly len values"))
    }

    /// A full record of `len` values, value `i` made by `value(i)` (no
    /// temporary row).
    pub fn full_with(
        sp: Option<&SpaceSet>,
        len: usize,
        mut value: impl FnMut(usize) -> Value,
    ) -> RecordBox {
        Self::new(sp, len, true, |i| (0, value(i)))
    }

    /// A delta record: old value `vals[i]` of attribute `cols[i]` (sorted).
    pub fn delta(sp: Option<&SpaceSet>, cols: &[u32], vals: Vec<Value>) -> RecordBox {
        debug_assert_eq!(cols.len(), vals.len());
        let mut it = vals.into_iter();
        Self::new(sp, cols.len(), false, |i| {
            (cols[i], it.next().expect("one value per attribute"))
        })
    }

    /// A delta record of `len` attributes, the `i`-th (attribute number,
    /// old value) made by `cell(i)`, numbers ascending.
    pub fn delta_with(
        sp: Option<&SpaceSet>,
        len: usize,
        cell: impl FnMut(usize) -> (u32, Value),
    ) -> RecordBox {
        Self::new(sp, len, false, cell)
    }

    #[inline]
    fn new(
        sp: Option<&SpaceSet>,
        len: usize,
        full: bool,
        mut cell: impl FnMut(usize) -> (u32, Value),
    ) -> RecordBox {
        let ncols = if full { 0 } else { len };
        let len32 = u32::try_from(len).expect("row too wide");
        let l = record_layout(len, ncols);
        let (p, shift) = match sp.and_then(|s| s.alloc_record(l.size())) {
            Some((p, shift)) => (p.as_ptr() as *mut Record, shift),
            // SAFETY: non-zero size (the header); failure is checked below.
            None => (unsafe { alloc(l) } as *mut Record, 0),
        };
        let Some(p) = NonNull::new(p) else {
            handle_alloc_error(l)
        };
        // SAFETY: a fresh allocation of `l` (a space slot is at least
        // `l.size()` bytes and 16-byte aligned, more than the layout's 8):
        // the header is written first, then each value and attribute number
        // once, inside the allocation (see `record_layout`). `cell` is our
        // own closures' moves and clones, which do not panic; if one did,
        // the record would leak, never be read half-built (it is unshared).
        unsafe {
            let p = p.as_ptr();
            p.write(Record {
                len: len32,
                ncols: if full { 0 } else { len32 },
                place: 0,
                // At most log2(MAX_INCREMENT) (asserted below).
                shift: shift as u8,
                full,
            });
            let vals = Record::vals_ptr(p);
            let cols = Record::cols_ptr(p, len);
            for i in 0..len {
                let (c, v) = cell(i);
                vals.add(i).write(v);
                if !full {
                    cols.add(i).write(c);
                }
            }
        }
        RecordBox(p)
    }

    /// The same record, tagged with a SIRO place (before it is published).
    pub(crate) fn placed(mut self, place: u8) -> RecordBox {
        // SAFETY: the box owns the record and nobody else sees it yet.
        unsafe { self.0.as_mut() }.place = place;
        self
    }

    /// Gives up the record (to publish it); free it with
    /// [`RecordBox::from_raw`].
    pub fn into_raw(self) -> *mut Record {
        let p = self.0.as_ptr();
        std::mem::forget(self);
        p
    }

    /// Takes back a record [`RecordBox::into_raw`] gave up.
    ///
    /// # Safety
    /// `p` came from [`RecordBox::into_raw`], is unlinked (no thread can
    /// reach it any more, or none will read it after this box drops), and
    /// is taken back once.
    pub unsafe fn from_raw(p: *mut Record) -> RecordBox {
        // SAFETY: per the contract, non-null and ours.
        RecordBox(unsafe { NonNull::new_unchecked(p) })
    }
}

impl std::ops::Deref for RecordBox {
    type Target = Record;

    fn deref(&self) -> &Record {
        // SAFETY: the box owns a live, initialised record.
        unsafe { self.0.as_ref() }
    }
}

impl Drop for RecordBox {
    fn drop(&mut self) {
        // SAFETY: the box owns the record (never given up: `into_raw`
        // forgets the box), and drops once.
        unsafe { Record::free(self.0.as_ptr()) }
    }
}

/// The master row of a tuple (see the module doc). The cells follow the
/// struct in the same allocation (one cache miss less per access):
///
/// ```text
///  [seq | owner | len] [tag | bits] x len
/// ```
#[repr(C)]
pub struct Master {
    /// Even: stable; odd: a writer is inside.
    seq: AtomicU64,
    /// The version whose values the cells hold (a tombstone when empty).
    owner: AtomicPtr<Version>,
    len: usize,
}

fn master_layout(len: usize) -> Layout {
    let (l, off) = Layout::new::<Master>()
        .extend(Layout::array::<Cell>(len).expect("row size overflows"))
        .expect("row size overflows");
    debug_assert_eq!(off, std::mem::size_of::<Master>());
    l.pad_to_align()
}

impl Master {
    /// A master with `len` empty cells.
    pub fn new(len: usize) -> *mut Master {
        let l = master_layout(len);
        // SAFETY: non-zero size (the struct); allocation failure is
        // checked; the struct and every cell are written before use.
        unsafe {
            let p = alloc(l) as *mut Master;
            if p.is_null() {
                handle_alloc_error(l);
            }
            p.write(Master {
                seq: AtomicU64::new(0),
                owner: AtomicPtr::new(std::ptr::null_mut()),
                len,
            });
            let cells = (p as *mut u8).add(std::mem::size_of::<Master>()) as *mut Cell;
            for i in 0..len {
                cells.add(i).write(Cell {
                    tag: AtomicU64::new(EMPTY),
                    bits: AtomicU64::new(0),
                });
            }
            p
        }
    }

    #[inline]
    fn cells(&self) -> &[Cell] {
        // SAFETY: `len` initialised cells follow the struct (see `new`) and
        // live as long as the master.
        unsafe {
            std::slice::from_raw_parts(
                (self as *const Master as *const u8).add(std::mem::size_of::<Master>())
                    as *const Cell,
                self.len,
            )
        }
    }

    /// Releases the allocation (values already dropped or moved out).
    ///
    /// # Safety
    /// `m` came from [`Master::new`] and is released once.
    unsafe fn dealloc(m: *mut Master) {
        // SAFETY: per the contract; Cell and Master have no drop glue.
        unsafe { dealloc(m as *mut u8, master_layout((*m).len)) }
    }

    /// A master holding `row`.
    pub fn with_row(row: Vec<Value>) -> *mut Master {
        let m = Self::new(row.len());
        // SAFETY: fresh, unshared.
        let r = unsafe { &*m };
        for (c, v) in r.cells().iter().zip(row) {
            let raw = encode(v);
            c.tag.store(raw.tag, Relaxed);
            c.bits.store(raw.bits, Relaxed);
        }
        m
    }

    /// Drops the values the master owns and frees it.
    ///
    /// # Safety
    /// `m` came from [`Master::new`], no thread can reach it any more, and
    /// it is freed once.
    pub unsafe fn free(m: *mut Master) {
        // SAFETY: per the contract we own `m`; each non-empty cell owns one
        // value, dropped once here.
        unsafe {
            for c in (*m).cells() {
                drop(decode_owned(Raw {
                    tag: c.tag.load(Relaxed),
                    bits: c.bits.load(Relaxed),
                }));
            }
            Master::dealloc(m);
        }
    }

    /// Moves the values out (an unpublished master) and frees it.
    ///
    /// # Safety
    /// As for [`Master::free`]; every cell is full.
    pub unsafe fn into_values(m: *mut Master) -> Vec<Value> {
        // SAFETY: per the contract we own `m`; values are moved out once and
        // the cells are not dropped again (they hold only atomics).
        unsafe {
            let out = (*m)
                .cells()
                .iter()
                .map(|c| {
                    decode_owned(Raw {
                        tag: c.tag.load(Relaxed),
                        bits: c.bits.load(Relaxed),
                    })
                    .expect("a published row has every cell")
                })
                .collect();
            Master::dealloc(m);
            out
        }
    }

    /// Frees `m` once no pinned thread can hold it.
    pub fn retire(m: *mut Master, guard: &Guard) {
        // SAFETY: `m` is unlinked from every version that is still reachable
        // (its row is gone) and retired once.
        unsafe { defer_free(m, guard, |m| Master::free(m)) }
    }

    /// Bytes of the master: struct, cells and owned text and byte strings.
    /// The caller is pinned (stats may run while writers update the row).
    pub fn footprint(&self) -> usize {
        // A cell's tag and payload are two words: only a seqlock-validated
        // snapshot pairs them right (a TEXT tag with another value's bits
        // would be a wild pointer).
        let raw = loop {
            let s1 = self.seq.load(Acquire);
            if s1 & 1 == 1 {
                spin_loop();
                continue;
            }
            let raw: Vec<Raw> = (0..self.len).map(|i| self.load(i)).collect();
            fence(Acquire);
            if self.seq.load(Relaxed) == s1 {
                break raw;
            }
        };
        // Out-of-line payloads, counted as `Value::heap_bytes` counts them.
        let arc_counts = 2 * std::mem::size_of::<usize>();
        let heap: usize = raw
            .iter()
            .map(|r| match r.tag {
                // SAFETY: validated snapshot; the caller is pinned, and a
                // TEXT or BYTES cell's Arc stays alive while in the cell, in
                // a record, or retired through an epoch.
                TEXT => unsafe { (*(r.bits as *const String)).capacity() + arc_counts },
                // SAFETY: as for TEXT.
                BYTES => unsafe { (*(r.bits as *const Vec<u8>)).capacity() + arc_counts },
                _ => 0,
            })
            .sum();
        std::mem::size_of::<Master>() + self.len * std::mem::size_of::<Cell>() + heap
    }

    /// Opens a write section. The caller holds the row's write lock, so no
    /// other writer can be inside.
    pub fn write(&self) -> WriteSection<'_> {
        let s = self.seq.load(Relaxed);
        debug_assert!(s & 1 == 0, "two writers in one master");
        self.seq.store(s + 1, Relaxed);
        // Orders the odd seq before every cell store that follows (pairs
        // with the reader's acquire fence).
        fence(Release);
        WriteSection {
            m: self,
            start: s,
            displaced: Vec::new(),
        }
    }

    /// The current values, for the holder of the row's write lock (no other
    /// thread changes the cells meanwhile).
    pub fn writer_values(&self) -> Vec<Value> {
        self.cells()
            .iter()
            .map(|c| {
                // SAFETY: we hold the write lock, so the cell is stable and
                // owns its value.
                unsafe {
                    decode_clone(Raw {
                        tag: c.tag.load(Relaxed),
                        bits: c.bits.load(Relaxed),
                    })
                }
                .expect("the row the writer locked has every cell")
            })
            .collect()
    }

    /// The values of version `v` (an in-place, non-tombstone version of
    /// this row that the caller may see), reconstructed from the master and
    /// the records between the master's owner and `v`. The caller is pinned.
    pub fn read(&self, v: *mut Version) -> Vec<Value> {
        if self.len <= FAST_CELLS {
            if let Some(out) = self.read_owner(v) {
                return out;
            }
        }
        self.read_slow(v)
    }

    /// The common case: `v` is the master's owner (the newest version),
    /// read with a stack buffer and no record walk. None: `v` is not the
    /// owner, or a writer got in the way (the general path decides).
    #[inline]
    fn read_owner(&self, v: *mut Version) -> Option<Vec<Value>> {
        let n = self.len;
        let mut raw = [Raw {
            tag: EMPTY,
            bits: 0,
        }; FAST_CELLS];
        let s1 = self.seq.load(Acquire);
        if (s1 & 1 == 1 && !broken(Break::SeqlockNoRecheck)) || self.owner.load(Relaxed) != v {
            return None;
        }
        for (r, c) in raw.iter_mut().zip(self.cells().iter()) {
            *r = Raw {
                tag: c.tag.load(Relaxed),
                bits: c.bits.load(Relaxed),
            };
        }
        fence(Acquire);
        if self.seq.load(Relaxed) != s1 && !broken(Break::SeqlockNoRecheck) {
            return None;
        }
        // Validated (see read_slow); an empty cell cannot be in an owner's
        // snapshot, but if it were, the general path would retry.
        raw[..n]
            .iter()
            // SAFETY: a validated snapshot of cells owned by the master at s1.
            .map(|r| unsafe { decode_clone(*r) })
            .collect()
    }

    fn read_slow(&self, v: *mut Version) -> Vec<Value> {
        let n = self.len;
        let mut raw: Vec<Raw> = Vec::with_capacity(n);
        let mut over: Vec<Option<&Value>> = Vec::with_capacity(n);
        let mut attempt = 0u32;
        loop {
            if let Some(out) = self.try_read_slow(v, &mut raw, &mut over) {
                return out;
            }
            // SIRO's toggle (`toggle_back`) may have given `v` the copy it
            // lacked when our caller looked, and left no walk from the
            // master that reaches `v`.
            if let Some(out) = own_copy(v).filter(|_| !broken(Break::ReaderIgnoresNewCopy)) {
                return out;
            }
            attempt = attempt.saturating_add(1);
            debug_assert!(attempt < 100_000_000, "{STUCK}");
            spin_loop();
        }
    }

    /// [`Master::read`] for a caller whose only hold on `v` is an epoch pin
    /// (no registered snapshot keeps GC off `v`, and `v` may be
    /// uncommitted): None once a state of the master with no writer inside
    /// does not reach `v` (GC cut it, or its writer undid or replaced it),
    /// where `read` would wait for good. Waits only while writers move.
    pub fn read_if_reachable(&self, v: *mut Version) -> Option<Vec<Value>> {
        let mut raw = Vec::with_capacity(self.len);
        let mut over = Vec::with_capacity(self.len);
        loop {
            let s1 = self.seq.load(Acquire);
            if s1 & 1 == 0 {
                if let Some(out) = self.try_read_slow(v, &mut raw, &mut over) {
                    return Some(out);
                }
                // Not gone, only toggled (see `read_slow`).
                if let Some(out) = own_copy(v).filter(|_| !broken(Break::ReaderIgnoresNewCopy)) {
                    return Some(out);
                }
                // Orders the attempt's loads before the re-check: `seq`
                // only grows, so the same even value after means no writer
                // entered meanwhile, and the attempt failed on a stable
                // state that does not reach `v`.
                fence(Acquire);
                if self.seq.load(Relaxed) == s1 {
                    return None;
                }
            }
            spin_loop();
        }
    }

    /// One attempt of the general read: None when a writer was inside (or
    /// got in) or the snapshot does not reach `v`.
    fn try_read_slow<'a>(
        &self,
        v: *mut Version,
        raw: &mut Vec<Raw>,
        over: &mut Vec<Option<&'a Value>>,
    ) -> Option<Vec<Value>> {
        let n = self.len;
        let s1 = self.seq.load(Acquire);
        if s1 & 1 == 1 && !broken(Break::SeqlockNoRecheck) {
            return None;
        }
        raw.clear();
        over.clear();
        over.resize(n, None);
        let owner = self.owner.load(Relaxed);
        for c in self.cells().iter() {
            raw.push(Raw {
                tag: c.tag.load(Relaxed),
                bits: c.bits.load(Relaxed),
            });
        }
        // Whether the raw cells still describe the version reached so far
        // (not once the walk passed a tombstone: the cells then belong to a
        // later incarnation of the row, and the version below the tombstone
        // carries a full copy that replaces them).
        let mut ok = true;
        let mut x = owner;
        // SAFETY: pinned; the owner is a version of this row.
        if unsafe { x.as_ref() }.is_some_and(Version::is_tombstone) {
            ok = false;
        }
        while x != v {
            if x.is_null() {
                return None;
            }
            // SAFETY: pinned; versions reachable from the owner (the chain
            // head when loaded) are freed only through an epoch, and so are
            // records.
            let next = unsafe { (*x).next() };
            let n: &'a Version = unsafe { next.as_ref() }?;
            x = next;
            if n.is_tombstone() {
                ok = false;
                continue;
            }
            let rec = n
                .ext()
                .map_or(std::ptr::null_mut(), |e| e.record.load(Acquire));
            // SAFETY: as above.
            let r: &'a Record = unsafe { rec.as_ref() }?;
            if r.is_full() {
                ok = true;
            }
            r.apply(over);
        }
        // Orders the loads above before the re-check of seq.
        fence(Acquire);
        if (self.seq.load(Relaxed) != s1 && !broken(Break::SeqlockNoRecheck)) || !ok {
            return None;
        }
        // Validated: no writer entered since s1, so every raw cell is one
        // value owned by the master at s1 (alive: a later writer moves or
        // retires it through an epoch, never drops it). An empty cell means
        // `v` is not reachable from this state (cannot happen for a visible
        // version): None.
        raw.iter()
            .zip(over.iter())
            .map(|(r, o)| match o {
                Some(v) => Some((*v).clone()),
                // SAFETY: validated snapshot, see above.
                None => unsafe { decode_clone(*r) },
            })
            .collect::<Option<Vec<Value>>>()
    }

    /// One read attempt (tests: a reader must refuse a master a writer is
    /// inside).
    #[cfg(test)]
    fn try_read(&self, v: *mut Version) -> Option<Vec<Value>> {
        if let Some(out) = self.read_owner(v) {
            return Some(out);
        }
        self.try_read_slow(v, &mut Vec::new(), &mut Vec::new())
    }

    #[inline]
    fn load(&self, i: usize) -> Raw {
        let c = &self.cells()[i];
        Raw {
            tag: c.tag.load(Relaxed),
            bits: c.bits.load(Relaxed),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }
}

/// A writer inside a master's seqlock; dropping it makes `seq` even again
/// (after everything written inside, Release), then retires the values it
/// displaced.
pub struct WriteSection<'a> {
    m: &'a Master,
    start: u64,
    displaced: Vec<Value>,
}

impl WriteSection<'_> {
    /// Cells in the row.
    pub fn width(&self) -> usize {
        self.m.len()
    }

    pub fn is_empty(&self, i: usize) -> bool {
        self.m.load(i).tag == EMPTY
    }

    /// Moves the value of cell `i` out, leaving it empty.
    pub fn take(&mut self, i: usize) -> Option<Value> {
        let r = self.m.load(i);
        let c = &self.m.cells()[i];
        c.tag.store(EMPTY, Relaxed);
        c.bits.store(0, Relaxed);
        // SAFETY: the cell gave up the value (it is empty now).
        unsafe { decode_owned(r) }
    }

    /// Takes cell `i` and keeps it for the epoch (a reader may hold its bits).
    pub fn discard(&mut self, i: usize) {
        if let Some(v) = self.take(i) {
            self.displaced.push(v);
        }
    }

    /// Fills the empty cell `i`.
    pub fn put(&mut self, i: usize, v: Value) {
        debug_assert!(self.is_empty(i));
        let r = encode(v);
        let c = &self.m.cells()[i];
        c.tag.store(r.tag, Relaxed);
        c.bits.store(r.bits, Relaxed);
    }

    /// Whether cell `i` differs from `v` (cell full).
    pub fn differs(&self, i: usize, v: &Value) -> bool {
        let r = self.m.load(i);
        match (r.tag, v) {
            (INT, Value::Int(x)) => r.bits as i64 != *x,
            // SAFETY: we are the writer: the cell holds this text's count
            // for the whole call.
            (TEXT, Value::Text(s)) => unsafe { Text::with_raw(r.bits, |t| t != s) },
            // SAFETY: we are the writer: the cell owns this Arc.
            (BYTES, Value::Bytes(b)) => (unsafe { &*(r.bits as *const Vec<u8>) }) != b.as_ref(),
            // Bit equality: writing `-0.0` over `0.0` is a change.
            (FLOAT, Value::Float(f)) => r.bits != f.to_bits(),
            (BOOL, Value::Bool(b)) => (r.bits != 0) != *b,
            (NULL, Value::Null) => false,
            _ => true,
        }
    }

    pub fn set_owner(&mut self, v: *mut Version) {
        self.m.owner.store(v, Relaxed);
    }

    /// Ends the section; displaced values are freed after the epoch.
    pub fn finish(mut self, guard: &Guard) {
        let d = std::mem::take(&mut self.displaced);
        drop(self);
        if d.iter().any(Value::has_heap) {
            guard.defer(move || drop(d));
        }
    }
}

impl Drop for WriteSection<'_> {
    fn drop(&mut self) {
        self.m.seq.store(self.start + 2, Release);
    }
}

/// Retires a record once no pinned reader can hold it.
pub fn retire_record(r: *mut Record, guard: &Guard) {
    if r.is_null() {
        return;
    }
    // SAFETY: the record was unlinked by a swap (no new reader can load it)
    // and is retired once; it came from RecordBox::into_raw. The deferred
    // free frees it to its own allocator, a space or the global one (see
    // `Record::free`), even after the database is gone.
    unsafe { defer_free(r, guard, |r| drop(RecordBox::from_raw(r))) }
}

/// The master of in-place version `v` (null for an MVTO ghost or a
/// version of an append-only scheme).
#[inline]
pub fn master_of(v: *mut Version) -> *mut Master {
    // SAFETY: callers pass live versions (pinned or owned).
    unsafe { v.as_ref() }
        .and_then(Version::ext)
        .map_or(std::ptr::null_mut(), |e| e.master)
}

/// Inside a write section: `new` (image `image`, or a tombstone when None)
/// overwrites `prev` (locked by the caller; null or a tombstone when the
/// row is absent). Moves `prev`'s values into its record and the new values
/// into the cells.
fn overwrite<R: Records>(
    sec: &mut WriteSection<'_>,
    prev: *mut Version,
    image: Option<Vec<Value>>,
    sp: Option<&SpaceSet>,
) {
    // SAFETY: `prev` is locked by the caller and alive.
    let live = unsafe { prev.as_ref() }.filter(|p| !p.is_tombstone() && p.is_in_place());
    if let Some(p) = live {
        let rec = R::displace(sec, image.as_deref(), sp);
        let old = p
            .ext()
            .expect("in-place version")
            .record
            .swap(rec.into_raw(), Release);
        debug_assert!(old.is_null(), "an overwritten version is overwritten once");
    }
    if let Some(img) = image {
        for (i, v) in img.into_iter().enumerate() {
            if sec.is_empty(i) {
                sec.put(i, v);
            }
            // Else an unchanged attribute (delta): the master keeps its own.
        }
    }
}

/// Inside a write section: undoes the overwrite of `prev` (restores the
/// cells to `prev`'s values, or empties them when `prev` is absent or a
/// tombstone) and retires `prev`'s record.
fn restore(sec: &mut WriteSection<'_>, prev: *mut Version, guard: &Guard) {
    // SAFETY: `prev` is locked by the caller and alive.
    let live = unsafe { prev.as_ref() }.filter(|p| !p.is_tombstone() && p.is_in_place());
    let Some(p) = live else {
        for i in 0..sec.m.len() {
            sec.discard(i);
        }
        return;
    };
    let rec = p
        .ext()
        .expect("in-place version")
        .record
        .swap(std::ptr::null_mut(), AcqRel);
    // SAFETY: we unlinked it; alive until the epoch passes.
    let Some(r) = (unsafe { rec.as_ref() }) else {
        return;
    };
    match r.cols() {
        None => {
            for (i, v) in r.vals().iter().enumerate() {
                sec.discard(i);
                sec.put(i, v.clone());
            }
        }
        Some(cols) => {
            for (&c, v) in cols.iter().zip(r.vals().iter()) {
                sec.discard(c as usize);
                sec.put(c as usize, v.clone());
            }
        }
    }
    retire_record(rec, guard);
}

/// Publishes `new` over the locked `prev` (see [`overwrite`]), its record
/// from the global allocator: the entry point of `tests/seqlock_model.rs`
/// (the engine calls [`install_in`]).
#[cfg(strata_model)]
pub fn install<R: Records>(
    slot: &AtomicPtr<Version>,
    m: &Master,
    prev: *mut Version,
    new: *mut Version,
    image: Option<Vec<Value>>,
    guard: &Guard,
) {
    install_in::<R>(slot, m, prev, new, image, None, guard)
}

/// Publishes `new` over the locked `prev` (see [`overwrite`]); `prev`'s
/// record comes from `sp`, the database's memory spaces.
pub fn install_in<R: Records>(
    slot: &AtomicPtr<Version>,
    m: &Master,
    prev: *mut Version,
    new: *mut Version,
    image: Option<Vec<Value>>,
    sp: Option<&SpaceSet>,
    guard: &Guard,
) {
    let mut sec = m.write();
    overwrite::<R>(&mut sec, prev, image, sp);
    sec.set_owner(new);
    slot.store(new, SeqCst);
    sec.finish(guard);
}

/// SIRO's toggled abort (vDriver §3.5): `own` (uncommitted, which
/// overwrote `prev`) goes, and `prev` stays current with the image it
/// already has, its in-row copy. Nothing is copied back: the cells keep
/// the aborted image, the master has no owner (no version's image is in
/// the cells), and the next write over `prev` fills them
/// ([`install_over_copy`]). The caller holds `prev`'s lock.
pub fn toggle_back(slot: &AtomicPtr<Version>, m: &Master, prev: *mut Version, guard: &Guard) {
    let mut sec = m.write();
    // No reader takes the cells for `prev`: it reads its full copy (first,
    // or after the master failed it: `own_copy`), and nobody but its
    // writer reads `own`.
    sec.set_owner(ptr::null_mut());
    slot.store(prev, SeqCst);
    sec.finish(guard);
}

/// SIRO: a write over `prev` whose image is its in-row copy (after a
/// toggled abort): the copy already is `prev`'s record, so nothing is
/// displaced; the stale cells get the new image. The caller holds `prev`'s
/// lock.
pub(crate) fn install_over_copy(
    s: &Store,
    tuple: u64,
    tid: u64,
    prev: *mut Version,
    row: NewRow<'_>,
) -> *mut Version {
    let m = master_of(prev);
    let v = alloc_version(s, tid, m, &row, prev);
    // SAFETY: `prev` is locked by us and alive.
    let img = image(s, unsafe { &*prev }, row);
    let guard = epoch::pin();
    // SAFETY: the master lives as long as its row.
    let mut sec = unsafe { &*m }.write();
    for i in 0..sec.m.len() {
        sec.discard(i);
    }
    for (i, x) in img.into_iter().flatten().enumerate() {
        sec.put(i, x);
    }
    sec.set_owner(v);
    s.rows.slot(tuple).store(v, SeqCst);
    sec.finish(&guard);
    v
}

/// Replaces our own uncommitted `own` (which overwrote `prev`) by `new`:
/// restore, then overwrite again, in one write section.
fn reinstall<R: Records>(
    slot: &AtomicPtr<Version>,
    m: &Master,
    prev: *mut Version,
    new: *mut Version,
    image: Option<Vec<Value>>,
    sp: Option<&SpaceSet>,
    guard: &Guard,
) {
    let mut sec = m.write();
    restore(&mut sec, prev, guard);
    overwrite::<R>(&mut sec, prev, image, sp);
    sec.set_owner(new);
    slot.store(new, SeqCst);
    sec.finish(guard);
}

/// Rolls the master back to `prev` (null: a fresh insert) and points the
/// slot at it again.
pub fn undo(slot: &AtomicPtr<Version>, m: &Master, prev: *mut Version, guard: &Guard) {
    let mut sec = m.write();
    restore(&mut sec, prev, guard);
    sec.set_owner(prev);
    slot.store(prev, SeqCst);
    sec.finish(guard);
}

/// What an in-place scheme records for an overwritten version: the one
/// thing time-travel and delta storage do differently.
pub trait Records {
    /// The scheme these records make.
    const SCHEME: VersionStorage;
    /// Inside a write section, before the new image `image` (None: a
    /// delete) is written: moves out of the cells what the overwritten
    /// version's record keeps, into a record made in `sp` (the database's
    /// memory spaces; None: the global allocator).
    fn displace(
        sec: &mut WriteSection<'_>,
        image: Option<&[Value]>,
        sp: Option<&SpaceSet>,
    ) -> RecordBox;
}

/// An in-place scheme, by how it records old values (see
/// [`super::time_travel`] and [`super::delta`]).
pub struct InPlace<R>(PhantomData<R>);

impl<R: Records> VersionStore for InPlace<R> {
    const SCHEME: VersionStorage = R::SCHEME;
    #[inline]
    fn install(
        s: &Store,
        tuple: u64,
        tid: u64,
        prev: *mut Version,
        row: NewRow<'_>,
    ) -> *mut Version {
        let mut m = master_of(prev);
        if m.is_null() {
            // Insert over an MVTO ghost: the row gets its first master.
            m = Master::new(s.columns);
        }
        let v = alloc_version(s, tid, m, &row, prev);
        // SAFETY: `prev` is locked by us and alive.
        let img = image(s, unsafe { &*prev }, row);
        // SAFETY: the master lives as long as its row.
        install_in::<R>(
            s.rows.slot(tuple),
            unsafe { &*m },
            prev,
            v,
            img,
            s.spaces.as_deref(),
            &epoch::pin(),
        );
        v
    }

    fn replace_own(
        s: &Store,
        tuple: u64,
        tid: u64,
        own: *mut Version,
        prev: *mut Version,
        row: NewRow<'_>,
        guard: &Guard,
    ) -> *mut Version {
        let m = master_of(own);
        let v = alloc_version(s, tid, m, &row, prev);
        // SAFETY: our own version is alive.
        let img = image(s, unsafe { &*own }, row);
        // SAFETY: the master lives as long as its row.
        reinstall::<R>(
            s.rows.slot(tuple),
            unsafe { &*m },
            prev,
            v,
            img,
            s.spaces.as_deref(),
            guard,
        );
        v
    }

    fn undo(s: &Store, tuple: u64, own: *mut Version, prev: *mut Version, guard: &Guard) {
        let m = master_of(own);
        // SAFETY: the master lives as long as its row.
        undo(s.rows.slot(tuple), unsafe { &*m }, prev, guard);
        if master_of(prev) != m {
            // The master was made by this write (a fresh insert, or an
            // insert over a ghost): nothing reachable refers to it now.
            Master::retire(m, guard);
        }
    }

    fn publish_fresh(s: &Store, tuple: u64, tid: u64, row: Vec<Value>) -> *mut Version {
        let m = Master::with_row(row);
        let v = Version::alloc_in_place(s.spaces.as_deref(), tid, m, ptr::null_mut());
        // SAFETY: fresh, unshared.
        let mut sec = unsafe { &*m }.write();
        sec.set_owner(v);
        drop(sec);
        s.rows.slot(tuple).store(v, SeqCst);
        v
    }

    unsafe fn unpublish_fresh(s: &Store, tuple: u64, v: *mut Version) -> Vec<Value> {
        s.rows.slot(tuple).store(ptr::null_mut(), SeqCst);
        // SAFETY: per the contract nobody else saw `v` or its master.
        unsafe {
            let m = master_of(v);
            Version::free(v);
            Master::into_values(m)
        }
    }

    #[inline]
    fn versions(s: &Store, tuple: u64, span: Span) -> Versions {
        Versions::newest_first(s.rows.head(tuple), span)
    }

    #[inline]
    fn survivor(s: &Store, tuple: u64, keep: impl FnMut(&Version) -> bool) -> Survivor {
        chain::survivor_newest_first(s.rows.head(tuple), keep)
    }

    fn prune(s: &Store, tuple: u64, plan: PrunePlan<'_>, guard: &Guard) -> u64 {
        match plan {
            // The tail's records go with their versions; the survivor's own
            // record is relative to its newer neighbour, which stays.
            PrunePlan::OlderThan(keep) => super::append_only::cut_below(keep, guard),
            PrunePlan::Versions(victims) => chain::remove(
                s.rows.slot(tuple),
                victims,
                Newest::First,
                |run, kept| merge_records(run, kept, s.spaces.as_deref(), guard),
                guard,
            ),
        }
    }
}

/// Whether delta record `own` sets every attribute the delta records
/// `run` set (its columns are sorted, as every delta record's are).
fn covers(own: &Record, run: &[&Record]) -> bool {
    let mine = own.cols().expect("a delta record");
    run.iter().all(|r| {
        (r.cols().expect("a delta record"))
            .iter()
            .all(|c| mine.binary_search(c).is_ok())
    })
}

/// Before `run` (newest first) leaves the chain above `kept`: makes
/// `kept`'s record relative to the version that will be its newer
/// neighbour. Its delta was taken against the run's oldest version, whose
/// image is the run's records applied to that neighbour's, so the new
/// record is the run's records followed by `kept`'s own, merged; a full
/// record (time-travel, a delete's, one below a tombstone) stands alone
/// and needs nothing.
///
/// ```text
///  v9 ─> v5 {b:5} ─> v2 {a:2}    remove v5:   v9 ─> v2 {a:2, b:5}
/// ```
///
/// The merged record is swapped in before the run is unlinked: a reader
/// that reaches `kept` without the run finds it; one inside the run
/// applies the run's records and then the merged one, which sets every
/// attribute to the same values again. The merged record comes from `sp`,
/// the database's memory spaces (the collecting thread's space).
fn merge_records(run: &[*mut Version], kept: *mut Version, sp: Option<&SpaceSet>, guard: &Guard) {
    // SAFETY: pinned; `kept` and the run are alive (the caller is the
    // row's collector).
    let Some(k) = (unsafe { kept.as_ref() }) else {
        return; // the run ends the chain: nothing below needs it
    };
    if k.is_tombstone() {
        return; // no image, no record; the version below has a full one
    }
    let ext = k.ext().expect("in-place version");
    let own = ext.record.load(Acquire);
    // SAFETY: records are freed through an epoch; we are pinned.
    debug_assert!(!own.is_null(), "a version below another has a record");
    let Some(own_rec) = (unsafe { own.as_ref() }) else {
        return;
    };
    if own_rec.is_full() {
        return;
    }
    // SAFETY: as above; a tombstone in the run has no record (the version
    // below it has a full one, which then starts the merge).
    let recs: Vec<&Record> = run
        .iter()
        .filter_map(|&v| unsafe { (*v).ext()?.record.load(Acquire).as_ref() })
        .collect();
    let merged = match recs.iter().rposition(|r| r.is_full()) {
        Some(i) => {
            let mut row = recs[i].full_values().to_vec();
            for r in &recs[i + 1..] {
                r.apply_to(&mut row);
            }
            own_rec.apply_to(&mut row);
            RecordBox::full(sp, row)
        }
        None if covers(own_rec, &recs) => {
            // `kept`'s own record sets every attribute the run's do, and it
            // is applied last: the merge is that record itself. (Under a
            // long reader whose updaters keep setting the same attributes,
            // every prune is this case: no new record, nothing to retire.)
            return;
        }
        None => {
            // Later records win (applied last): a stable sort by attribute
            // keeps them last in each run. (A BTreeMap here was a third of
            // the merge under a long reader, which makes every update's
            // predecessor a middle version.)
            let mut cells: Vec<(u32, &Value)> = Vec::new();
            for r in recs.iter().chain(std::iter::once(&own_rec)) {
                let cols = r.cols().expect("a delta record");
                cells.extend(cols.iter().copied().zip(r.vals().iter()));
            }
            cells.sort_by_key(|&(c, _)| c);
            let mut cols = Vec::with_capacity(cells.len());
            let mut vals: Vec<Value> = Vec::with_capacity(cells.len());
            for (c, v) in cells {
                if cols.last() == Some(&c) {
                    *vals.last_mut().expect("one per attribute") = v.clone();
                } else {
                    cols.push(c);
                    vals.push(v.clone());
                }
            }
            // SAFETY: pinned; a version's master lives as long as its row.
            let width = unsafe { ext.master.as_ref() }.map_or(usize::MAX, Master::len);
            if cols.len() == width {
                // Every attribute: the image itself. Stored full, later
                // merges into this version stop at the early return above
                // instead of re-sorting the whole row each time (under a
                // long reader every update's predecessor merges into the
                // reader's version).
                RecordBox::full(sp, vals)
            } else {
                RecordBox::delta(sp, &cols, vals)
            }
        }
    };
    let old = ext.record.swap(merged.into_raw(), AcqRel);
    retire_record(old, guard);
}

/// The row of in-place, non-tombstone version `v`. The caller is pinned.
pub fn values_of(v: &Version) -> Vec<Value> {
    let v = v as *const Version as *mut Version;
    if let Some(out) = own_copy(v) {
        return out;
    }
    // SAFETY: a live in-place version's master lives as long as its row.
    unsafe { &*master_of(v) }.read(v)
}

/// [`values_of`] for a caller whose only hold on `v` is an epoch pin (see
/// [`Master::read_if_reachable`]): None once no state of the row holds
/// `v`'s image.
pub fn values_if_reachable(v: &Version) -> Option<Vec<Value>> {
    let v = v as *const Version as *mut Version;
    if let Some(out) = own_copy(v) {
        return Some(out);
    }
    // SAFETY: pinned; a master is retired through an epoch, after its row
    // is unlinked, so it is alive while we are.
    unsafe { &*master_of(v) }.read_if_reachable(v)
}

/// The image of in-place version `v` from its own full copy, if it has
/// one: an overwritten version's under time-travel and SIRO, a deleted
/// row's last image under delta. A full copy is immutable once published,
/// so no master is read.
///
/// A reader that found no copy reads the master, and must look here again
/// each time the master does not reach `v`: SIRO's toggle makes a copy the
/// only place the *current* version's image lives. A writer overwrites `v`
/// (`v`'s image moves to a copy, the master's owner is the new version),
/// aborts, and `toggle_back` clears the owner: `v` is current again, and
/// no walk from the master reaches it.
///
/// ```text
///  reader: record of v? none ──────────────────────────> master walk: owner = null, never reaches v
///  writer:                    install w over v (v.record = copy); abort: owner = null
/// ```
///
/// The caller is pinned; `v` is not a tombstone.
fn own_copy(v: *mut Version) -> Option<Vec<Value>> {
    // SAFETY: pinned by the caller; versions and records are freed through
    // an epoch.
    let ext = unsafe { (*v).ext() }.expect("in-place version");
    // SAFETY: as above.
    let r = unsafe { ext.record.load(Acquire).as_ref() }?;
    r.is_full().then(|| r.full_values().to_vec())
}

/// The new image a write puts in the master, derived from `base` (its
/// writer's current row) for an update; None for a delete.
fn image(s: &Store, base: &Version, row: NewRow<'_>) -> Option<Vec<Value>> {
    match row {
        NewRow::Row(r) => Some(r),
        NewRow::Tombstone(_) => None,
        NewRow::Update(ch) => {
            let mut r = writer_row(base);
            if s.non_inline == NonInline::Copy {
                for v in r.iter_mut() {
                    *v = carry(v, NonInline::Copy);
                }
            }
            for (c, v) in ch {
                r[*c] = (*v).clone();
            }
            Some(r)
        }
    }
}

/// The current row of `base` for its writer (who holds the row's lock or
/// created `base`), to derive an update from.
fn writer_row(base: &Version) -> Vec<Value> {
    if !base.is_in_place() || base.is_tombstone() {
        return base.data().to_vec();
    }
    // A newest version with a full copy is SIRO's after a toggled abort
    // (`install_over_copy`): the copy is its image, the cells are stale.
    // (Under the other schemes the newest version has no record.)
    // SAFETY: the writer holds the row's lock: nobody retires the record.
    if let Some(r) = base
        .ext()
        .and_then(|e| unsafe { e.record.load(Acquire).as_ref() })
    {
        if r.is_full() {
            return r.full_values().to_vec();
        }
    }
    // SAFETY: the writer holds the row's lock: the master is stable.
    unsafe { &*master_of(base as *const _ as *mut _) }.writer_values()
}

/// An in-place version (or tombstone) of the row whose master is `m`.
fn alloc_version(
    s: &Store,
    tid: u64,
    m: *mut Master,
    row: &NewRow<'_>,
    next: *mut Version,
) -> *mut Version {
    let sp = s.spaces.as_deref();
    match row {
        NewRow::Tombstone(k) => Version::alloc_tombstone_in_place(sp, tid, k.clone(), m, next),
        _ => Version::alloc_in_place(sp, tid, m, next),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Merging a run's delta records into the kept version's: later
    /// records win, and a merge that covers every attribute is stored as
    /// the full image (so the next merge into it is free).
    #[test]
    fn merged_records_become_full_once_they_cover_the_row() {
        let guard = crossbeam_epoch::pin();
        let m = Master::with_row(vec![Value::Int(9), Value::Int(9), Value::Int(9)]);
        let kept = Version::alloc_in_place(None, 1, m, std::ptr::null_mut());
        let run = Version::alloc_in_place(None, 2, m, kept);
        let set = |v: *mut Version, r: RecordBox| {
            // SAFETY: ours, alive until the end of the test.
            let ext = unsafe { &*v }.ext().unwrap();
            let old = ext.record.swap(r.into_raw(), SeqCst);
            if !old.is_null() {
                // SAFETY: unlinked just now, never read again.
                drop(unsafe { RecordBox::from_raw(old) });
            }
        };
        let record = |v: *mut Version| {
            // SAFETY: as above.
            let ext = unsafe { &*v }.ext().unwrap();
            unsafe { &*ext.record.load(SeqCst) }
        };
        // A run whose attributes kept's own record sets: nothing to merge,
        // the record stays (no new one, nothing retired).
        set(run, RecordBox::delta(None, &[1], vec![Value::Int(7)]));
        set(kept, RecordBox::delta(None, &[1], vec![Value::Int(2)]));
        // SAFETY: ours, alive until the end of the test.
        let before = unsafe { &*kept }.ext().unwrap().record.load(SeqCst);
        merge_records(&[run], kept, None, &guard);
        let after = unsafe { &*kept }.ext().unwrap().record.load(SeqCst);
        assert_eq!(after, before, "no new record");
        assert_eq!(record(kept).vals(), &[Value::Int(2)][..]);
        set(
            run,
            RecordBox::delta(None, &[0, 1], vec![Value::Int(1), Value::Int(1)]),
        );
        merge_records(&[run], kept, None, &guard);
        let r = record(kept);
        assert!(!r.is_full(), "two of three attributes");
        assert_eq!(r.cols(), Some(&[0, 1][..]));
        assert_eq!(
            r.vals(),
            &[Value::Int(1), Value::Int(2)][..],
            "kept's own wins"
        );
        set(run, RecordBox::delta(None, &[2], vec![Value::Int(3)]));
        merge_records(&[run], kept, None, &guard);
        let r = record(kept);
        assert!(r.is_full(), "every attribute: the image");
        assert_eq!(
            r.full_values(),
            &[Value::Int(1), Value::Int(2), Value::Int(3)][..]
        );
        drop(guard);
        // SAFETY: never shared; each freed once (a version frees its own
        // record; the merge retired the replaced ones through the epoch).
        unsafe {
            Version::free(run);
            Version::free(kept);
            Master::free(m);
        }
    }

    /// Records come from the memory spaces when the database has them,
    /// each knows its allocator, and a free returns it there: a space slot
    /// to its space's free list (reused by the next record of the class),
    /// a record without spaces or too large for a class to the global
    /// allocator. Small enough for Miri (`cargo +nightly miri test -p
    /// strata --lib in_place`), which checks each free against its
    /// allocation.
    #[test]
    fn records_are_freed_to_the_allocator_they_came_from() {
        let inc = space::MIN_INCREMENT;
        let set = SpaceSet::new(1, inc);
        let text = Text::new("old");
        let full = RecordBox::full(Some(&set), vec![Value::Int(1), Value::Text(text.clone())]);
        assert!(full.is_full());
        assert_eq!(full.shift, inc.trailing_zeros() as u8);
        assert_eq!(
            full.full_values(),
            &[Value::Int(1), Value::Text(text.clone())][..]
        );
        let delta =
            RecordBox::delta(Some(&set), &[0, 2], vec![Value::Int(7), Value::Null]).placed(3);
        assert_eq!(
            (delta.cols(), delta.vals()),
            (Some(&[0, 2][..]), &[Value::Int(7), Value::Null][..])
        );
        assert_eq!(delta.place(), 3);
        let mut row = vec![Value::Int(9); 3];
        delta.apply_to(&mut row);
        assert_eq!(row, [Value::Int(7), Value::Int(9), Value::Null]);
        let st = set.stats()[0];
        assert_eq!(
            (st.allocations, st.record_allocations, st.slots_in_use),
            (2, 2, 2)
        );
        // 16 B header + 2 values (+ 2 numbers for the delta), in 16 B granules.
        assert_eq!(st.bytes_in_use, 48 + 64);
        // Published and retired as the engine does: the deferred free runs
        // once the epoch moves on. (A collector of its own: other tests
        // pinned on the global one would hold the free back.)
        let p = full.into_raw();
        let collector = epoch::Collector::new();
        let handle = collector.register();
        retire_record(p, &handle.pin());
        for _ in 0..64 {
            handle.pin().flush();
            if set.stats()[0].slots_in_use == 1 {
                break;
            }
        }
        let st = set.stats()[0];
        assert_eq!((st.slots_in_use, st.free_slots), (1, 1), "{st:?}");
        assert_eq!(Text::strong_count(&text), 1, "the record's values dropped");
        // The freed slot is the next one of its class.
        let again = RecordBox::full(Some(&set), vec![Value::Int(2), Value::Int(3)]);
        assert_eq!(again.0.as_ptr(), p);
        assert_eq!(set.stats()[0].free_slots, 0);
        // No spaces, or a record too large for the largest class (inc / 8):
        // the global allocator, shift 0, not a slot.
        let global = RecordBox::full(None, vec![Value::Int(1)]);
        assert_eq!(global.shift, 0);
        let wide = RecordBox::full_with(Some(&set), inc / 8 / 16, |i| Value::Int(i as i64));
        assert_eq!(wide.shift, 0);
        let st = set.stats()[0];
        assert_eq!((st.large_allocations, st.record_allocations), (1, 3));
        drop((global, wide, again));
        // A record that outlives the set (an epoch-deferred free after the
        // database is gone) keeps its space until it is freed, and the
        // free releases the space (Miri: no use after free, no leak).
        drop(set);
        // SAFETY: unlinked (never published), freed once.
        unsafe { Record::free(delta.into_raw()) };
    }

    /// A reader never accepts a master while a writer is inside its write
    /// section, on either read path, and accepts it again after.
    #[test]
    fn a_reader_refuses_a_master_inside_a_write_section() {
        let guard = crossbeam_epoch::pin();
        let m = Master::with_row(vec![Value::Int(1), Value::from("a"), Value::Int(1)]);
        let v = Version::alloc_in_place(None, 1, m, std::ptr::null_mut());
        // SAFETY: both ours, freed at the end.
        let r = unsafe { &*m };
        let mut sec = r.write();
        sec.set_owner(v);
        drop(sec);
        assert_eq!(
            r.try_read(v),
            Some(vec![Value::Int(1), Value::from("a"), Value::Int(1)])
        );
        // Half-way through an update of every cell to 2 / "b".
        let mut sec = r.write();
        sec.discard(0);
        sec.put(0, Value::Int(2));
        sec.discard(1);
        sec.put(1, Value::from("b"));
        assert_eq!(r.try_read(v), None, "torn row accepted (fast path)");
        assert_eq!(
            r.try_read_slow(v, &mut Vec::new(), &mut Vec::new()),
            None,
            "torn row accepted (general path)"
        );
        sec.discard(2);
        sec.put(2, Value::Int(2));
        sec.finish(&guard);
        assert_eq!(
            r.try_read(v),
            Some(vec![Value::Int(2), Value::from("b"), Value::Int(2)])
        );
        drop(guard);
        // SAFETY: never shared with another thread; freed once.
        unsafe {
            Version::free(v);
            Master::free(m);
        }
    }
}
