//! Records: what an overwrite of an in-place version leaves behind, the
//! old values of the row (a time-travel or SIRO full copy) or of only the
//! attributes its overwriter changed (a delta).
//!
//! A record lives in one of two places:
//!
//! * **In its overwriter's block** (an update's: the common case). The
//!   writer that overwrites version `p` makes its new version `v` and
//!   `p`'s record in one allocation, `v`'s block
//!   (`Version::alloc_in_place_over`), as an append-only update makes one
//!   version: one allocation per update whatever the scheme. `p`'s record
//!   word then names it *tagged* ([`word`]): the record is `v`'s, dropped
//!   and freed with `v`'s block, and `p` only borrows it.
//!
//!   ```text
//!    slot ─> [v: header | ext | record of p] ─> [p: header | ext] ─> ...
//!                                 ^───────────── p.record (tagged)
//!   ```
//!
//!   Borrowing is safe while `v` stays linked above `p`, and `v` leaves a
//!   chain above `p` in three ways, each of which gives `p` its word back
//!   first: an undone or replaced write (`restore` clears `p`'s word), a
//!   prune of `v` from the middle of a chain (`merge_records` or
//!   `rehome` give `p` a record of its own), and SIRO's toggled abort
//!   (`rehome`). A whole row or a tail below a survivor goes at once, and
//!   a free never reads a tagged word's record.
//!   The price is memory: a record in a block lives as long as the block.
//!   When GC cuts the versions below the newest one, the newest block
//!   still holds the record of the version it overwrote, which nobody
//!   reads any more, until the row's next update lets that block go: an
//!   idle row keeps one dead record (a full image under time-travel and
//!   SIRO, the changed attributes under delta). `storage::row_footprint`
//!   counts it where its block is.
//! * **In an allocation of its own** ([`RecordBox`]): a merged record, one
//!   rehomed as above, or one made while a transaction replaces its own
//!   write. With memory spaces (`Options::memory_spaces`) it comes from the
//!   allocating thread's space, like the version headers, and it remembers
//!   which allocator it came from, so every free (a version's, an abort's,
//!   a merge's or SIRO's retirement through the epoch, also after the
//!   database is gone) returns it there.
//!
//! The invariant this module owns: a published record is immutable (but
//! for SIRO's place tag, an atomic), a tagged record word names a record in
//! the block of the version directly above, and every record is freed
//! exactly once, by its owner, to the allocator it came from.

use crate::storage::meter::Gauged;
use crate::storage::reclaim::defer_free;
use crate::storage::space;
use crate::storage::Alloc;
use crate::value::Value;
use crossbeam_epoch::Guard;
use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU8, Ordering};

/// Record words: what a version's `InPlaceExt` holds, a record pointer
/// whose low bit says whether the record lies in another version's block
/// (see the module doc). Records are at least 8-byte aligned, so the bit
/// is free.
pub mod word {
    use super::Record;

    const EMBEDDED: usize = 1;

    /// The word of record `p`, which lies in another version's block.
    #[inline]
    pub fn embedded(p: *mut Record) -> *mut Record {
        (p as usize | EMBEDDED) as *mut Record
    }

    /// Whether `w` names a record in another version's block.
    #[inline]
    pub fn is_embedded(w: *mut Record) -> bool {
        w as usize & EMBEDDED != 0
    }

    /// The record `w` names (null: none).
    #[inline]
    pub fn untag(w: *mut Record) -> *mut Record {
        (w as usize & !EMBEDDED) as *mut Record
    }
}

/// `Record::shift` of a record in a version's block: never freed alone.
const IN_BLOCK: u8 = u8::MAX;

/// The old values of an overwritten version: a full copy (time-travel) or
/// the old values of only the attributes its overwriter modified (delta).
/// Immutable once published. One allocation, made and freed by
/// [`RecordBox`]: the header, the values, then (a delta) the attribute
/// numbers, sorted:
///
/// ```text
///  [len | ncols | place | shift | full | heap | payload] [Value; len] [u32; ncols]
///   <------------------- 16 bytes ------------------->   16 B each    4 B each
/// ```
///
/// `shift` says which allocator the record came from, as a version's `len`
/// word does: log2 of the chunk size of the memory space that holds it
/// (`storage::space`), 0 for the global allocator ([`IN_BLOCK`]: the
/// block of the version that made it). So a free (often an epoch callback,
/// maybe after the database is gone) needs no handle on the database.
#[repr(C)]
pub struct Record {
    /// Values that follow the header.
    len: u32,
    /// Attribute numbers after the values (0 for a full record).
    ncols: u32,
    /// Where a SIRO image lives (`super::siro::place`); 0 for the other
    /// schemes' records. Atomic: relocating an image off-row changes only
    /// its place, in place, while readers may look at it.
    place: AtomicU8,
    /// The allocator (see above).
    shift: u8,
    /// `vals` is the full row image (no attribute numbers).
    full: bool,
    /// Some value owns heap memory (a text or byte string): only then are
    /// the values dropped one by one when the record goes. Time-travel's
    /// full images of plain rows spent 13% of an update of 100 attributes
    /// dropping integers (REPRODUCTION.md, Fig. 13b).
    heap: bool,
    /// The payload bytes the memory gauge counts for this record
    /// (`storage::meter`), fixed when it is made and released when it
    /// goes: its text and byte strings but those it shares with the
    /// master's cells, which count them (a full record's unchanged
    /// attributes under `NonInline::Shared`). Saturates (a record holding
    /// 4 GiB of text counts 4 GiB).
    payload: u32,
}

/// Where the values start: after the header, aligned for a value.
const RECORD_VALS_AT: usize =
    std::mem::size_of::<Record>().next_multiple_of(std::mem::align_of::<Value>());
const _: () = assert!(RECORD_VALS_AT == 16, "a record's header is 16 bytes");
const _: () = assert!(
    space::MAX_INCREMENT.trailing_zeros() <= u8::MAX as u32,
    "a chunk shift fits a record's byte"
);

/// The layout of a record of `len` values: a full one, or a delta (`len`
/// attribute numbers too).
#[inline]
pub fn layout(len: usize, full: bool) -> Layout {
    record_layout(len, if full { 0 } else { len })
}

/// The layout of the record at `p` (its header says).
///
/// # Safety
/// `p` is an initialised record, alive.
#[inline]
pub unsafe fn layout_of(p: *const Record) -> Layout {
    // SAFETY: per the contract.
    unsafe { record_layout((*p).len as usize, (*p).ncols as usize) }
}

/// Drops the values of the record at `p`, which lies in a version's block
/// (the block is released by its version's free).
///
/// # Safety
/// `p` is an initialised record in a block being freed, and nothing reads
/// it any more.
pub unsafe fn drop_values(p: *mut Record) {
    // SAFETY: per the contract; the values were written once by
    // `write_record` and are dropped once here.
    unsafe {
        debug_assert_eq!((*p).shift, IN_BLOCK);
        let len = (*p).len as usize;
        if (*p).heap {
            ptr::drop_in_place(ptr::slice_from_raw_parts_mut(Record::vals_ptr(p), len));
        }
    }
}

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
    pub(super) fn vals(&self) -> &[Value] {
        // SAFETY: `len` values were written by `RecordBox::new` and live,
        // unchanged, as long as the record.
        unsafe { std::slice::from_raw_parts(Self::vals_ptr(self), self.len as usize) }
    }

    /// The attribute numbers of a delta record (sorted); None for a full one.
    #[inline]
    pub(super) fn cols(&self) -> Option<&[u32]> {
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
        self.place.load(Ordering::Acquire)
    }

    /// Moves a published SIRO image to another place without moving its
    /// bytes (relocation off-row). The caller holds the row's write lock.
    pub(crate) fn set_place(&self, place: u8) {
        self.place.store(place, Ordering::Release)
    }

    pub fn is_full(&self) -> bool {
        self.full
    }

    /// The payload bytes the memory gauge counts for this record (see the
    /// field).
    #[inline]
    pub(crate) fn payload(&self) -> usize {
        self.payload as usize
    }

    pub(crate) fn footprint(&self, seen: &mut crate::storage::version::Payloads) -> usize {
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

    pub(super) fn apply<'a>(&'a self, over: &mut [Option<&'a Value>]) {
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

    /// [`Record::apply`] for a projection: `over[j]` is attribute
    /// `cols[j]`'s value.
    pub(super) fn apply_columns<'a>(&'a self, cols: &[usize], over: &mut [Option<&'a Value>]) {
        let vals = self.vals();
        match self.cols() {
            None => {
                for (o, &c) in over.iter_mut().zip(cols) {
                    *o = Some(&vals[c]);
                }
            }
            Some(mine) => {
                for (o, &c) in over.iter_mut().zip(cols) {
                    if let Ok(at) = mine.binary_search(&(c as u32)) {
                        *o = Some(&vals[at]);
                    }
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
            debug_assert_ne!(shift, IN_BLOCK, "a record in a block is freed with it");
            if (*p).heap {
                ptr::drop_in_place(ptr::slice_from_raw_parts_mut(Self::vals_ptr(p), len));
            }
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
    /// A full record holding `vals`; `at`: the table's memory spaces and
    /// gauge flag (`Store::alloc`).
    pub fn full(at: Alloc<'_>, vals: Vec<Value>) -> RecordBox {
        let mut it = vals.into_iter();
        Self::full_with(at, it.len(), |_| it.next().expect("exactly len values"))
    }

    /// A full record of `len` values, value `i` made by `value(i)` (no
    /// temporary row).
    pub fn full_with(
        at: Alloc<'_>,
        len: usize,
        mut value: impl FnMut(usize) -> Value,
    ) -> RecordBox {
        Self::new(at, len, true, 0, |i| (0, value(i), true))
    }

    /// A delta record: old value `vals[i]` of attribute `cols[i]` (sorted).
    pub fn delta(at: Alloc<'_>, cols: &[u32], vals: Vec<Value>) -> RecordBox {
        debug_assert_eq!(cols.len(), vals.len());
        let mut it = vals.into_iter();
        Self::new(at, cols.len(), false, 0, |i| {
            (cols[i], it.next().expect("one value per attribute"), true)
        })
    }

    /// A record of its own holding what `r` holds (the values shared),
    /// counting the payload `r` counts: it takes `r`'s place, and `r`,
    /// in a block, goes with that block (each releases its own).
    pub fn copy(at: Alloc<'_>, r: &Record) -> RecordBox {
        let vals = r.vals();
        let b = match r.cols() {
            None => Self::new(at, vals.len(), true, r.payload, |i| {
                (0, vals[i].clone(), false)
            }),
            Some(cols) => Self::new(at, cols.len(), false, r.payload, |i| {
                (cols[i], vals[i].clone(), false)
            }),
        };
        b.placed(r.place())
    }

    /// See [`write_record`] for `payload` and `cell`.
    #[inline]
    fn new(
        at: Alloc<'_>,
        len: usize,
        full: bool,
        payload: u32,
        cell: impl FnMut(usize) -> (u32, Value, bool),
    ) -> RecordBox {
        let l = layout(len, full);
        let (p, shift) = match at.spaces.and_then(|s| s.alloc_record(l.size())) {
            Some((p, shift)) => (p.as_ptr() as *mut Record, shift),
            // SAFETY: non-zero size (the header); failure is checked below.
            None => (unsafe { alloc(l) } as *mut Record, 0),
        };
        let Some(p) = NonNull::new(p) else {
            handle_alloc_error(l)
        };
        crate::storage::meter::allocated(l.size());
        // SAFETY: a fresh allocation of `l` (a space slot is at least
        // `l.size()` bytes and 16-byte aligned, more than the layout's 8).
        // At most log2(MAX_INCREMENT) (asserted above).
        unsafe {
            write_record(
                p.as_ptr(),
                len,
                full,
                0,
                shift as u8,
                payload,
                *at.gauged,
                cell,
            )
        };
        RecordBox(p)
    }

    /// The same record, tagged with a SIRO place (before it is published).
    pub(crate) fn placed(self, place: u8) -> RecordBox {
        self.set_place(place);
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

/// Writes a record of `len` values (`full`, or a delta with attribute
/// numbers) at `p`, the `i`-th (attribute number, value, whether the
/// record counts its payload) made by `cell(i)`, numbers ascending. When
/// `gauged` (its table's flag), the record counts `payload` bytes and the
/// payloads of the values `cell` says it counts (`storage::meter`): a
/// value moved out of the master's cells, or a copy of its own; not one it
/// shares with a cell that keeps it. It stores what it counted (none
/// without the gauge), which is what it gives back when it goes.
///
/// # Safety
/// `p` is writable for [`layout`]`(len, full)` bytes, aligned for it, and
/// not yet shared. `cell` is our own closures' moves and clones, which do
/// not panic; if one did, the record would leak, never be read half-built
/// (it is unshared).
#[inline]
#[allow(clippy::too_many_arguments)]
unsafe fn write_record(
    p: *mut Record,
    len: usize,
    full: bool,
    place: u8,
    shift: u8,
    payload: u32,
    gauged: Gauged,
    mut cell: impl FnMut(usize) -> (u32, Value, bool),
) {
    let len32 = u32::try_from(len).expect("row too wide");
    // SAFETY: per the contract: the header is written first, then each
    // value and attribute number once, inside the allocation (see
    // `record_layout`).
    unsafe {
        p.write(Record {
            len: len32,
            ncols: if full { 0 } else { len32 },
            place: AtomicU8::new(place),
            shift,
            full,
            heap: false,
            payload: 0,
        });
        let vals = Record::vals_ptr(p);
        let cols = Record::cols_ptr(p, len);
        let mut heap = false;
        let mut counted = if gauged.on() { payload as usize } else { 0 };
        for i in 0..len {
            let (c, v, counts) = cell(i);
            if v.has_heap() {
                heap = true;
                if counts && gauged.on() {
                    counted += v.heap_bytes();
                }
            }
            vals.add(i).write(v);
            if !full {
                cols.add(i).write(c);
            }
        }
        // Before the record is published (nobody else sees it yet).
        (*p).heap = heap;
        let counted = u32::try_from(counted).unwrap_or(u32::MAX);
        (*p).payload = counted;
        gauged.held(counted as usize);
    }
}

/// Where an overwrite puts the record it makes: room in the new
/// version's block, or an allocation of its own.
#[derive(Clone, Copy)]
pub enum Dest<'a> {
    /// The record slot of the new version's block
    /// (`Version::alloc_in_place_over`), sized for exactly this record;
    /// the flag that block was allocated under.
    Block(*mut Record, Gauged),
    /// A [`RecordBox`] allocated so.
    Own(Alloc<'a>),
}

impl Dest<'_> {
    /// Makes the record (see [`write_record`]) and returns its word, to
    /// publish in the overwritten version.
    ///
    /// # Safety
    /// A `Block` slot is the unwritten record room of a block allocated for
    /// [`layout`]`(len, full)`, written once.
    #[inline]
    pub unsafe fn make(
        self,
        len: usize,
        full: bool,
        place: u8,
        cell: impl FnMut(usize) -> (u32, Value, bool),
    ) -> *mut Record {
        match self {
            Dest::Block(p, gauged) => {
                // SAFETY: per the contract.
                unsafe { write_record(p, len, full, place, IN_BLOCK, 0, gauged, cell) };
                word::embedded(p)
            }
            Dest::Own(at) => RecordBox::new(at, len, full, 0, cell)
                .placed(place)
                .into_raw(),
        }
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

/// Retires the record of record word `r` once no pinned reader can hold
/// it: one of its own (a record in another version's block goes with that
/// block; nothing to do).
pub fn retire_record(r: *mut Record, guard: &Guard) {
    if r.is_null() || word::is_embedded(r) {
        return;
    }
    // SAFETY: an own record, alive until the deferred free below.
    crate::storage::meter::retired(unsafe { layout_of(r) }.size());
    // SAFETY: as above. (What it stored is what it counted.)
    crate::storage::meter::give_back(unsafe { (*r).payload() });
    // SAFETY: the record was unlinked by a swap (no new reader can load it)
    // and is retired once; it came from RecordBox::into_raw. The deferred
    // free frees it to its own allocator, a space or the global one (see
    // `Record::free`), even after the database is gone.
    unsafe { defer_free(r, guard, |r| drop(RecordBox::from_raw(r))) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Text;
    use crossbeam_epoch as epoch;

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
        let set = space::SpaceSet::new(1, inc);
        let at = Alloc {
            spaces: Some(&set),
            gauged: &Gauged::OFF,
        };
        let text = Text::new("old");
        let full = RecordBox::full(at, vec![Value::Int(1), Value::Text(text.clone())]);
        assert!(full.is_full());
        assert_eq!(full.shift, inc.trailing_zeros() as u8);
        assert_eq!(
            full.full_values(),
            &[Value::Int(1), Value::Text(text.clone())][..]
        );
        let delta = RecordBox::delta(at, &[0, 2], vec![Value::Int(7), Value::Null]).placed(3);
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
        let again = RecordBox::full(at, vec![Value::Int(2), Value::Int(3)]);
        assert_eq!(again.0.as_ptr(), p);
        assert_eq!(set.stats()[0].free_slots, 0);
        // No spaces, or a record too large for the largest class (inc / 8):
        // the global allocator, shift 0, not a slot.
        let global = RecordBox::full(Alloc::PLAIN, vec![Value::Int(1)]);
        assert_eq!(global.shift, 0);
        let wide = RecordBox::full_with(at, inc / 8 / 16, |i| Value::Int(i as i64));
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
}
