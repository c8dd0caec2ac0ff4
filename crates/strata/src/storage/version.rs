//! The version: one tuple header and one row image.
//!
//! Every write creates a new version and links it into the row's version
//! chain (here append-only, newest-to-oldest; see [`super`] for the other
//! schemes):
//!
//! ```text
//!  indirection[tuple] ──> v3 ──next──> v2 ──next──> v1 ──> null
//!                         [txn_id | begin | end | next | cc_words[2]] + row
//! ```
//!
//! A version of an in-place scheme (time-travel, delta) has no row image:
//! an [`InPlaceExt`] follows the header instead, pointing at the row's
//! master and, once the version is overwritten, at the record holding its
//! old values ([`super::in_place`]). Its header is the same, so protocols
//! treat it like any other version. An update makes that record and the
//! new version's header together, so both live in the new version's
//! block, one allocation (see `in_place::record`):
//!
//! ```text
//!  [header | len] [key, if a tombstone] [master | record] [record of the overwritten version]
//!                                         (InPlaceExt)      (EMBEDS set in `len`)
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
//! transaction table ([`crate::tid`]) whether that transaction has
//! committed, and at which timestamp (ERMIA's post-commit stamping).
//!
//! **Texts handed over, not counted again.** A text or byte string is
//! reference counted (`Value::Text`), and an update shares every one it
//! does not change. Counting each share was an atomic increment on the
//! text's own cold line when the new version was made and a decrement
//! when the old one was freed: eleven of each for a TPC-C stock update,
//! about a tenth of NewOrder + Payment. Instead the count stays one, and
//! bits of the `len` word say which of its first [`OWNED_VALUES`] values a
//! version owns; an update moves the bits of the texts it carries from
//! the old version to the new one:
//!
//! ```text
//!  v1 [a* b*]      update b:  v2 [a* B*] ─> v1 [a  b*]    (* = owns)
//!                  update n:  v3 [a* B*] ─> v2 [a  B ] ─> v1 [a  b*]
//! ```
//!
//! The invariant: of the versions holding one heap value, exactly one owns
//! it, the newest. Versions leave chains oldest first (a cut below the
//! newest version a snapshot needs), so the owner goes last and drops the
//! value once. Three ways take a newer version out first, and each hands
//! back what it owns and the next older kept version holds
//! ([`Version::hand_down`]): an undone write, a transaction's own write
//! replaced by its next one, and a prune from the middle of a chain (dead
//! zones). `tests/lent_texts.rs` checks the count through all of them.

use super::in_place::{record, Master, Record, RecordBox};
use super::meter::Gauged;
use super::space;
use super::Alloc;
use crate::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use crate::value::Value;
use std::alloc::{handle_alloc_error, Layout};
use std::sync::Arc;

/// Set in `begin`/`end` while they hold a transaction id, not a timestamp.
pub const TID_MARK: u64 = 1 << 63;
/// Set in `len` for a tombstone.
const TOMBSTONE: u64 = 1 << 63;
/// Set in `len` when a value holds heap memory (text, bytes), owned or
/// lent: freeing a version without it needs no pass over its (by then
/// cold) values.
const HAS_HEAP: u64 = 1 << 62;
/// Set in `len` for a version of an in-place scheme (time-travel, delta):
/// an [`InPlaceExt`] follows the values.
const IN_PLACE: u64 = 1 << 61;
/// Set in `len` when the version's block also holds the record of the
/// version it overwrote (an in-place update: one allocation, not two).
const EMBEDS: u64 = 1 << 55;
/// Bits of `len` holding log2 of the memory-space chunk size the version
/// was allocated in (`storage::space`); 0 for the global allocator.
const SPACE_SHIFT_AT: u32 = 56;
const SPACE_SHIFT: u64 = 0x1f << SPACE_SHIFT_AT;
/// Bits of `len` holding the number of values.
const COUNT: u64 = 0xFFFF;
/// The most values a version holds: a table's columns.
pub const MAX_VALUES: usize = crate::value::MAX_COLUMNS;
const _: () = assert!(MAX_VALUES as u64 <= COUNT);
/// The values whose heap memory a version can hand over to its successor
/// (see [`Version::alloc_update`]): the first `OWNED_VALUES`.
pub const OWNED_VALUES: usize = 39;
const OWNED_AT: u32 = 16;
/// Bits of `len`: bit `OWNED_AT + i` is set while this version owns value
/// `i`'s heap memory (`i < OWNED_VALUES`; a value further right always
/// owns its own).
const OWNED: u64 = ((1 << OWNED_VALUES) - 1) << OWNED_AT;
const FLAGS: u64 = TOMBSTONE | HAS_HEAP | IN_PLACE | EMBEDS | SPACE_SHIFT | OWNED;
const _: () = assert!(COUNT & FLAGS == 0, "the count and the flags share no bit");
const _: () = assert!(OWNED_AT as usize + OWNED_VALUES <= SPACE_SHIFT_AT as usize);
const _: () = assert!(OWNED & EMBEDS == 0 && SPACE_SHIFT & EMBEDS == 0);
const _: () = assert!(COUNT < 1 << OWNED_AT);
const _: () = assert!(
    (crate::storage::space::MAX_INCREMENT.trailing_zeros() as u64) < 0x1f,
    "the chunk shift must fit its bits"
);

/// `end` of a version nobody has overwritten.
pub const INF_TS: u64 = TID_MARK - 1;
/// The write-lock value (`txn_id`) GC holds on a tombstone while it unlinks
/// its row; no transaction id can take it (generations never get that
/// large).
pub const GC_TID: u64 = INF_TS;

/// A version of a row. The row image follows the struct in the same
/// allocation (`len` values), so reading a row costs one cache miss less
/// than a separately boxed row:
///
/// ```text
///  [txn_id|begin|end|next|cc_words[2]] [len] [Value; len]
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
    /// Two words owned by the concurrency-control protocol; each protocol
    /// names them in its own module: `cc::mvto::read_ts`,
    /// `cc::mv2pl::readers`, `cc::ssn::pstamp` / `cc::ssn::sstamp`,
    /// `cc::ssi::overwriter`. Start as `[0, INF_TS]`.
    pub(crate) cc_words: [AtomicU64; 2],
    /// Number of values that follow, with [`TOMBSTONE`] set for a deleted
    /// row (whose values are then its primary key, so GC can find its index
    /// entry), and the flags above. Atomic for its [`OWNED`] bits, which
    /// change while readers read the rest (a std atomic even under the
    /// model: it orders nothing the model checks).
    len: std::sync::atomic::AtomicU64,
}

/// Asks for the reference counts of `row`'s texts and byte strings, about
/// to be incremented (an update carries them) or decremented (a version is
/// freed). Each is an atomic on a line of its own that nothing else
/// touched lately (a TPC-C stock row carries eleven): asked for together,
/// the misses overlap instead of queuing one behind the other.
#[inline]
fn prefetch_shared_counts(row: &[Value], which: u64) {
    for (i, v) in row.iter().enumerate() {
        if i < OWNED_VALUES && which & (1 << i) == 0 {
            continue;
        }
        match v {
            Value::Text(s) => crate::prefetch::line_for_write(s.heap_ptr()),
            Value::Bytes(b) => crate::prefetch::line_for_write(Arc::as_ptr(b)),
            Value::Null | Value::Int(_) | Value::Float(_) | Value::Bool(_) => {}
        }
    }
}

/// Value `i`'s bit in [`OWNED`] (none past [`OWNED_VALUES`]).
#[inline]
fn own(i: usize) -> u64 {
    if i < OWNED_VALUES {
        1 << (OWNED_AT as usize + i)
    } else {
        0
    }
}

/// Whether `len` says its version owns value `i`'s heap memory (every
/// heap value past [`OWNED_VALUES`] is owned).
#[inline]
fn owned_bit(len: u64, i: usize) -> bool {
    i >= OWNED_VALUES || len & own(i) != 0
}

/// Whether two values hold the same heap memory.
#[inline]
fn same_heap(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Text(x), Value::Text(y)) => x.heap_ptr() == y.heap_ptr(),
        (Value::Bytes(x), Value::Bytes(y)) => Arc::ptr_eq(x, y),
        _ => false,
    }
}

/// Bytes of header per version (everything but the row image).
pub const HEADER_BYTES: usize = std::mem::size_of::<Version>() - std::mem::size_of::<u64>();

// Not under the model: its header words are shuttle's atomics (about 100
// bytes each, see `crate::sync`), which run the protocols, not the layout.
#[cfg(not(strata_model))]
const _: () = assert!(
    HEADER_BYTES <= 48,
    "the version header must stay within 48 bytes"
);
const _: () = assert!(std::mem::size_of::<Version>().is_multiple_of(std::mem::align_of::<Value>()));

/// What an in-place scheme's version carries after its (empty, or for a
/// tombstone key-only) row image: the row's master, and once the version
/// has been overwritten, the record that holds its old values (a full
/// time-travel copy or a delta). The header words never move: the version's
/// identity (its address) is what protocols keep in read and write sets.
#[repr(C)]
pub struct InPlaceExt {
    /// The row's master (fixed per tuple; null for an MVTO ghost).
    pub master: *mut Master,
    /// Null while this version's values are the master's (or it is a
    /// tombstone); set by the writer that overwrote it. A *record word*:
    /// the record, tagged when it lies in the block of the version that
    /// overwrote this one rather than in an allocation of its own
    /// (`in_place::record::word`). Read it through [`InPlaceExt::record`].
    // A std atomic even under the model (see `crate::sync`): the seqlock
    // model reaches the record through the master's seqlock, which is
    // already its scheduling point.
    record: std::sync::atomic::AtomicPtr<Record>,
}

impl InPlaceExt {
    fn new(master: *mut Master) -> InPlaceExt {
        InPlaceExt {
            master,
            record: std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The record (untagged; null: none).
    #[inline]
    pub fn record(&self) -> *mut Record {
        record::word::untag(self.record.load(Ordering::Acquire))
    }

    /// The record word, tag included (see the field).
    #[inline]
    pub fn record_word(&self) -> *mut Record {
        self.record.load(Ordering::Acquire)
    }

    /// Publishes record word `w` and returns the one it replaces (for
    /// `in_place::retire_record`, which frees only a record of its own).
    #[inline]
    pub fn swap_record(&self, w: *mut Record) -> *mut Record {
        self.record.swap(w, Ordering::AcqRel)
    }
}

fn layout(len: usize, ext: bool) -> (Layout, usize) {
    let (l, ext_off, _) = block_layout(len, ext, None);
    (l, ext_off)
}

/// A version's block: the header, `len` values, the in-place extension
/// (`ext`), and the record of the version it overwrote (`rec`, its
/// layout), each at its offset (returned: the extension's and the
/// record's).
#[inline]
fn block_layout(len: usize, ext: bool, rec: Option<Layout>) -> (Layout, usize, usize) {
    let (l, off) = Layout::new::<Version>()
        .extend(Layout::array::<Value>(len).expect("row size overflows"))
        .expect("row size overflows");
    debug_assert_eq!(off, std::mem::size_of::<Version>());
    if !ext {
        return (l.pad_to_align(), 0, 0);
    }
    let (l, ext_off) = l
        .extend(Layout::new::<InPlaceExt>())
        .expect("row size overflows");
    let Some(r) = rec else {
        return (l.pad_to_align(), ext_off, 0);
    };
    let (l, rec_off) = l.extend(r).expect("row size overflows");
    (l.pad_to_align(), ext_off, rec_off)
}

/// Frees the buffer of an emptied vector without its drop glue: the
/// vector's drop ran `drop_in_place` over its (zero) values, a call of its
/// own whenever LLVM chose not to inline it (about 180 instructions a TPC-C
/// transaction, 21 inserts and updates, after an unrelated change).
#[inline(always)]
fn free_buffer(values: Vec<Value>) {
    debug_assert!(values.is_empty());
    let mut values = std::mem::ManuallyDrop::new(values);
    // SAFETY: the buffer came from a `Vec<Value>` of this capacity, and
    // `MaybeUninit<Value>` has `Value`'s layout, so it is freed as it was
    // allocated; with length 0 no value is read or dropped (the caller
    // moved them all out). Every insert in the tests runs it.
    drop(unsafe {
        Vec::from_raw_parts(
            values.as_mut_ptr().cast::<std::mem::MaybeUninit<Value>>(),
            0,
            values.capacity(),
        )
    });
}

impl Version {
    /// A new, locked, uncommitted version created by transaction `tid`,
    /// holding `values`. Free it with [`Version::free`].
    /// `at`: the table's memory spaces and gauge flag (`Store::alloc`).
    pub fn alloc(
        at: Alloc<'_>,
        tid: u64,
        mut values: Vec<Value>,
        next: *mut Version,
    ) -> *mut Version {
        let len = values.len();
        let p = Self::alloc_header(at.spaces, tid, len, 0, None, next);
        // SAFETY: `p` has room for `len` values (see `alloc_header`) and is
        // unshared. The values are moved as bytes, then the vector is
        // emptied without dropping them, so each has exactly one owner:
        // the version. (Moved one at a time through an iterator, an insert
        // of a TPC-C order line took about 150 instructions more.)
        unsafe {
            std::ptr::copy_nonoverlapping(values.as_ptr(), Self::values_ptr(p), len);
            values.set_len(0);
            Self::own_heap_values(p, at, len);
        }
        free_buffer(values);
        p
    }

    /// Marks the heap values among the first `len` values of fresh version
    /// `p` as its own and hands their payload to the gauge: a version made
    /// from a row (not from another version) owns every heap value it
    /// holds (`storage::meter`).
    ///
    /// # Safety
    /// `p` is fresh and unshared, its first `len` values written.
    #[inline]
    unsafe fn own_heap_values(p: *mut Version, at: Alloc<'_>, len: usize) {
        // SAFETY: per the contract.
        let row = unsafe { std::slice::from_raw_parts(Self::values_ptr(p), len) };
        let (mut heap, mut payload) = (0, 0);
        for (i, v) in row.iter().enumerate() {
            if v.has_heap() {
                heap |= HAS_HEAP | own(i);
                if at.gauged.on() {
                    payload += v.heap_bytes();
                }
            }
        }
        // (As in `alloc_update`: nothing more for a plain row.)
        if heap != 0 {
            // SAFETY: per the contract (unshared).
            unsafe { (*p).set_flags(heap) };
            at.gauged.held(payload);
        }
    }

    /// The row image of `base` with the columns in `changes` replaced:
    /// an update of the append-only schemes, the default's hot path.
    /// `carry(v)` copies an unchanged value that owns heap memory (text,
    /// bytes) when `lend` is false or `base` does not own it; a row of
    /// plain values (no `HAS_HEAP`) is copied as bytes, which for those
    /// values is their clone, and only the changed columns are written over
    /// it. `base` is a row image (not in place).
    ///
    /// With `lend`, an unchanged text `base` owns is not cloned: the new
    /// version takes it over (the same pointer, no reference count touched)
    /// and `base` keeps reading it without owning it. The caller must hand
    /// it back ([`Version::hand_down`]) if the new version leaves the chain
    /// while `base` stays.
    ///
    /// (Always inline, into `append_only::alloc`'s two modes: it was,
    /// by LLVM's choice, until the gauge's flag and counts made it larger;
    /// a call of its own cost an update about six instructions.)
    #[inline(always)]
    pub fn alloc_update(
        at: Alloc<'_>,
        tid: u64,
        base: &Version,
        changes: &[(usize, &Value)],
        next: *mut Version,
        lend: bool,
        carry: impl Fn(&Value) -> Value,
    ) -> *mut Version {
        let old = base.data();
        let p = Self::alloc_header(at.spaces, tid, old.len(), 0, None, next);
        let dst = Self::values_ptr(p);
        let base_len = base.len_word();
        let lendable = if lend { base_len & OWNED } else { 0 };
        // The changed columns as a bit set: testing each against the list
        // made an update of m columns cost m^2 comparisons (100 columns:
        // about 30,000 instructions an update, most of Fig. 14b's cost).
        // On the stack up to 256 columns (a SmallVec's setup cost a
        // 10-column update about 190 instructions more than the scan did).
        let words = old.len().div_ceil(64);
        let (mut stack, mut heap) = ([0u64; 4], Vec::new());
        let changed_set: &mut [u64] = if words <= stack.len() {
            &mut stack[..words]
        } else {
            heap.resize(words, 0);
            &mut heap
        };
        for (c, _) in changes {
            if *c < old.len() {
                changed_set[c / 64] |= 1 << (c % 64);
            }
        }
        let changed = |i: usize| changed_set[i / 64] & (1 << (i % 64)) != 0;
        // The new version's HAS_HEAP and OWNED bits, what `base` hands
        // over, and the payload bytes of the heap values it owns afresh
        // (cloned or changed).
        let (mut flags, mut handed, mut payload) = (0, 0, 0);
        // SAFETY: `p` is fresh with room for `old.len()` values (see
        // `alloc_header`), unshared. The whole image is first copied as
        // bytes: a plain value (Int, Float, Bool, Null) owns nothing, so its
        // byte copy is its clone; a heap value's byte copy owns nothing yet
        // either. Then each heap value is settled once: a value `base`
        // owns and hands over keeps its byte copy (its bit is cleared in
        // `base` below, so exactly one of the two drops it); any other is
        // overwritten, without a drop, by its clone; a changed one is left
        // for the loop after, which writes each changed column once over
        // its (unowned) copy. A column named twice takes its first value,
        // and a column past the image is not written (never the case for a
        // schema-checked update).
        unsafe {
            std::ptr::copy_nonoverlapping(old.as_ptr(), dst, old.len());
            if base_len & HAS_HEAP != 0 && old.len() <= OWNED_VALUES {
                // The heap values as a bit set from one pass over the tags,
                // then the ones to hand over or clone as bit operations (a
                // copy and three tests a value made a TPC-C stock row of 17
                // values about 750 instructions an update).
                let mut heap = 0u64;
                for (i, v) in old.iter().enumerate() {
                    heap |= u64::from(v.has_heap()) << i;
                }
                let kept = heap & !changed_set.first().copied().unwrap_or(0);
                let lent = kept & (lendable >> OWNED_AT);
                let mut clone = kept & !lent;
                handed = lent << OWNED_AT;
                if kept != 0 {
                    flags = HAS_HEAP | kept << OWNED_AT;
                }
                if clone != 0 {
                    prefetch_shared_counts(old, clone);
                }
                while clone != 0 {
                    let i = clone.trailing_zeros() as usize;
                    clone &= clone - 1;
                    let c = carry(&old[i]);
                    if at.gauged.on() {
                        payload += c.heap_bytes();
                    }
                    dst.add(i).write(c);
                }
            } else if base_len & HAS_HEAP != 0 {
                // Wider rows: value by value (past `OWNED_VALUES` a value
                // always owns its own, so it is cloned).
                prefetch_shared_counts(old, !(lendable >> OWNED_AT));
                for (i, v) in old.iter().enumerate() {
                    if !v.has_heap() || changed(i) {
                        continue;
                    }
                    if lendable & own(i) != 0 {
                        handed |= own(i);
                    } else {
                        let c = carry(v);
                        if at.gauged.on() {
                            payload += c.heap_bytes();
                        }
                        dst.add(i).write(c);
                    }
                    flags |= HAS_HEAP | own(i);
                }
            }
            // Each changed column once, from its first mention: its bit is
            // cleared as it is written.
            for (c, v) in changes {
                if *c >= old.len() || changed_set[c / 64] & (1 << (c % 64)) == 0 {
                    continue;
                }
                changed_set[c / 64] &= !(1 << (c % 64));
                dst.add(*c).write((*v).clone());
                if v.has_heap() {
                    flags |= HAS_HEAP | own(*c);
                    if at.gauged.on() {
                        payload += v.heap_bytes();
                    }
                }
            }
            // A row of plain values sets no flag and owns no payload: its
            // update passes one test here, as before the gauge counted.
            if flags != 0 {
                (*p).set_flags(flags);
                // What the new version owns that `base` did not: a
                // handed-over value stays counted once (`storage::meter`).
                at.gauged.held(payload);
            }
            if handed != 0 {
                base.len.fetch_and(!handed, Ordering::AcqRel);
            }
        }
        p
    }

    /// A version of an in-place scheme: no row image (its values are the
    /// master's until it is overwritten, then its record's).
    pub fn alloc_in_place(
        at: Alloc<'_>,
        tid: u64,
        master: *mut Master,
        next: *mut Version,
    ) -> *mut Version {
        let v = Self::alloc_inner(at, tid, 0, IN_PLACE, None, next, |_| {
            unreachable!("no values")
        });
        // SAFETY: fresh allocation with an extension (IN_PLACE), unshared.
        unsafe { Self::ext_ptr(v).write(InPlaceExt::new(master)) };
        v
    }

    /// An in-place version (a tombstone holding `key`, when given) whose
    /// block also has room for a record of layout `rec`: the record of the
    /// version it overwrites, which the caller writes into the returned
    /// slot before it publishes either (one allocation for an in-place
    /// update, as an append-only one has). The record belongs to the block:
    /// it is dropped and freed with this version.
    pub fn alloc_in_place_over(
        at: Alloc<'_>,
        tid: u64,
        master: *mut Master,
        next: *mut Version,
        key: Option<Vec<Value>>,
        rec: Layout,
    ) -> (*mut Version, *mut Record) {
        let tomb = if key.is_some() { TOMBSTONE } else { 0 };
        let mut it = key.unwrap_or_default().into_iter();
        let flags = tomb | IN_PLACE | EMBEDS;
        let v = Self::alloc_inner(at, tid, it.len(), flags, Some(rec), next, |_| {
            it.next().expect("exactly len values")
        });
        // SAFETY: fresh allocation with an extension (IN_PLACE), unshared.
        unsafe { Self::ext_ptr(v).write(InPlaceExt::new(master)) };
        (v, Self::embedded_ptr(v))
    }

    /// Where the record an [`EMBEDS`] version's block holds starts.
    fn embedded_ptr(v: *mut Version) -> *mut Record {
        // SAFETY: only called on EMBEDS versions, whose block has the
        // record at this offset (see `block_layout`; a record's alignment
        // is the layout's `Record` header's and values', the same for
        // every record).
        unsafe {
            let count = (*v).count();
            let (_, _, off) = block_layout(count, true, Some(record::layout(0, false)));
            (v as *mut u8).add(off) as *mut Record
        }
    }

    /// The layout of `v`'s whole block, from its `len` word `word` (and,
    /// for an [`EMBEDS`] version, the header of the record in it).
    ///
    /// # Safety
    /// `v` is alive (or being freed, its embedded record not yet
    /// dropped), and `word` is its `len` word.
    #[inline]
    unsafe fn block_of(v: *mut Version, word: u64) -> Layout {
        let count = (word & COUNT) as usize;
        let ext = word & IN_PLACE != 0;
        let rec = (word & EMBEDS != 0).then(|| {
            // SAFETY: per the contract, the embedded record's header is
            // initialised (written before the version was published).
            unsafe { record::layout_of(Self::embedded_ptr(v)) }
        });
        block_layout(count, ext, rec).0
    }

    /// Bytes of `v`'s block (the version, and the record it holds if any):
    /// what its allocation took and its free gives back.
    ///
    /// # Safety
    /// As for [`Version::block_of`].
    #[inline]
    pub(crate) unsafe fn block_bytes(v: *mut Version, word: u64) -> usize {
        if word & IN_PLACE == 0 {
            // The header and the values, no padding (asserted above): the
            // append-only retire path, kept to two instructions.
            return Self::plain_block_bytes(word);
        }
        // SAFETY: per the contract.
        unsafe { Self::block_of(v, word) }.size()
    }

    /// What the memory gauge counted for `v` and releases when `v` goes
    /// (`stats::MemoryGauge`, `storage::meter`): (block bytes, payload
    /// bytes). The block is [`Version::block_bytes`] and a record of its own
    /// hanging off it, freed with it; the payload, when `gauged` (its
    /// table's flag, under which it counted its take), is what its heap
    /// values hold (those its `OWNED` bits in `word` say it owns: a value
    /// handed over to its successor is that one's to count), and what the
    /// records in its block and of its own stored when they were made.
    ///
    /// # Safety
    /// As for [`Version::block_of`]; `v` is unlinked (or its row is nobody
    /// else's), so its owned bits and record word no longer change.
    #[inline(never)]
    pub(crate) unsafe fn gauge_bytes(v: *mut Version, word: u64, gauged: Gauged) -> (usize, usize) {
        if word & (HAS_HEAP | IN_PLACE) == 0 {
            return (Self::plain_block_bytes(word), 0);
        }
        // SAFETY: per the contract.
        unsafe { Self::gauge_bytes_slow(v, word, gauged) }
    }

    /// What retiring `v` hands back: [`Version::gauge_bytes`]' block bytes,
    /// returned for the caller to count as retired (a chain's at once), and
    /// its payload, released to the meter here (only a version with heap
    /// values or an in-place one has any). A plain row's version costs one
    /// test, the one [`Version::block_bytes`] has; one with texts two
    /// without the gauge (no call, no value read).
    ///
    /// # Safety
    /// As for [`Version::gauge_bytes`].
    #[inline]
    pub(crate) unsafe fn retire_bytes(v: *mut Version, word: u64, gauged: Gauged) -> usize {
        if word & (HAS_HEAP | IN_PLACE) == 0 || (word & IN_PLACE == 0 && !gauged.on()) {
            return Self::plain_block_bytes(word);
        }
        // SAFETY: per the contract.
        unsafe { Self::retire_bytes_slow(v, word, gauged) }
    }

    /// [`Version::retire_bytes`] past its plain case: one call, after
    /// which its caller needs the flag no more (a flag live across the
    /// call cost every retirement a register to save and restore).
    ///
    /// # Safety
    /// As for [`Version::gauge_bytes`].
    #[inline(never)]
    unsafe fn retire_bytes_slow(v: *mut Version, word: u64, gauged: Gauged) -> usize {
        // SAFETY: per the contract.
        let (block, payload) = unsafe { Self::gauge_bytes_slow(v, word, gauged) };
        gauged.released(payload);
        block
    }

    /// [`Version::block_bytes`] of a version that is not in place.
    #[inline(always)]
    fn plain_block_bytes(word: u64) -> usize {
        let n =
            std::mem::size_of::<Version>() + (word & COUNT) as usize * std::mem::size_of::<Value>();
        debug_assert_eq!(n, layout((word & COUNT) as usize, false).0.size());
        n
    }

    /// [`Version::gauge_bytes`] past its plain-row case (out of line,
    /// in its callers' slow paths: the plain case stays two instructions
    /// on the append-only retire path).
    ///
    /// # Safety
    /// As for [`Version::gauge_bytes`].
    #[inline]
    unsafe fn gauge_bytes_slow(v: *mut Version, word: u64, gauged: Gauged) -> (usize, usize) {
        // SAFETY: per the contract.
        let mut block = unsafe { Self::block_bytes(v, word) };
        let mut payload = 0;
        // SAFETY: per the contract, `v` is alive with `count` initialised
        // values; the heap values it owns are alive (it drops them when it
        // is freed, not before).
        unsafe {
            let len = (word & COUNT) as usize;
            // (Without the gauge, no value nor record is read for it.)
            if word & HAS_HEAP != 0 && gauged.on() {
                let vals = Self::values_ptr(v);
                let mut bits = (word & OWNED) >> OWNED_AT;
                while bits != 0 {
                    payload += (*vals.add(bits.trailing_zeros() as usize)).heap_bytes();
                    bits &= bits - 1;
                }
                for i in OWNED_VALUES..len {
                    payload += (*vals.add(i)).heap_bytes();
                }
            }
            if word & EMBEDS != 0 && gauged.on() {
                payload += (*Self::embedded_ptr(v)).payload();
            }
            if word & IN_PLACE != 0 {
                let w = (*Self::ext_ptr(v)).record_word();
                // (A tagged word names the record in the block above,
                // which that block counts.)
                let own = if record::word::is_embedded(w) {
                    None
                } else {
                    w.as_ref()
                };
                if let Some(r) = own {
                    // A record of its own: freed with this version.
                    block += record::layout_of(r).size();
                    if gauged.on() {
                        payload += r.payload();
                    }
                }
            }
        }
        (block, payload)
    }

    /// The record this version's block holds (the record of the version it
    /// overwrote, whether or not that version still points at it); null if
    /// none.
    pub(crate) fn embedded(&self) -> *mut Record {
        if self.len_word() & EMBEDS == 0 {
            return std::ptr::null_mut();
        }
        Self::embedded_ptr(self as *const Version as *mut Version)
    }

    /// A tombstone of an in-place scheme, holding the key inline.
    pub fn alloc_tombstone_in_place(
        at: Alloc<'_>,
        tid: u64,
        key: Vec<Value>,
        master: *mut Master,
        next: *mut Version,
    ) -> *mut Version {
        let mut it = key.into_iter();
        let v = Self::alloc_inner(at, tid, it.len(), TOMBSTONE | IN_PLACE, None, next, |_| {
            it.next().expect("exactly len values")
        });
        // SAFETY: fresh allocation with an extension (IN_PLACE), unshared.
        unsafe { Self::ext_ptr(v).write(InPlaceExt::new(master)) };
        v
    }

    fn ext_ptr(p: *mut Version) -> *mut InPlaceExt {
        // SAFETY: only called on versions allocated with IN_PLACE, whose
        // layout has the extension at this offset (see `layout`).
        unsafe {
            let len = (*p).count();
            let (_, off) = layout(len, true);
            (p as *mut u8).add(off) as *mut InPlaceExt
        }
    }

    /// The in-place extension, for versions of the in-place schemes.
    #[inline]
    pub fn ext(&self) -> Option<&InPlaceExt> {
        if self.len_word() & IN_PLACE == 0 {
            return None;
        }
        // SAFETY: IN_PLACE versions carry an initialised extension that
        // lives as long as the version.
        Some(unsafe { &*Self::ext_ptr(self as *const _ as *mut _) })
    }

    /// True for versions of the in-place schemes.
    #[inline]
    pub fn is_in_place(&self) -> bool {
        self.len_word() & IN_PLACE != 0
    }

    /// A tombstone (deleted row) holding the row's primary key.
    pub fn alloc_tombstone(
        at: Alloc<'_>,
        tid: u64,
        key: Vec<Value>,
        next: *mut Version,
    ) -> *mut Version {
        let mut it = key.into_iter();
        Self::alloc_inner(at, tid, it.len(), TOMBSTONE, None, next, |_| {
            it.next().expect("exactly len values")
        })
    }

    /// Allocates a version for `len` values (and the in-place extension
    /// with IN_PLACE in `flags`, and room for a record of layout `rec` after
    /// it with EMBEDS) and writes its header; the values are the caller's to
    /// write.
    // (Always inline: an update's flags and record are constants, which
    // fold the layout; LLVM stopped inlining it into `alloc_update` once
    // that grew, which cost YCSB's update about 55 instructions.)
    #[inline(always)]
    fn alloc_header(
        spaces: Option<&space::SpaceSet>,
        tid: u64,
        len: usize,
        flags: u64,
        rec: Option<Layout>,
        next: *mut Version,
    ) -> *mut Version {
        // (Schemas are checked for it: `value::MAX_COLUMNS`.)
        assert!(
            len <= MAX_VALUES,
            "a version holds at most {MAX_VALUES} values"
        );
        debug_assert_eq!(rec.is_some(), flags & EMBEDS != 0);
        let (l, _, _) = block_layout(len, flags & IN_PLACE != 0, rec);
        super::meter::allocated(l.size());
        // SAFETY: the layout has non-zero size (the header); we check for
        // allocation failure; a space slot is at least `l.size()` bytes and
        // 16-byte aligned (>= the layout's align of 8). The header is
        // written with `write` before any reference is made.
        unsafe {
            let (p, shift) = match spaces.and_then(|s| s.alloc(l.size())) {
                Some((p, shift)) => (p.as_ptr() as *mut Version, shift),
                None => (super::version_cache::alloc_block(l) as *mut Version, 0),
            };
            if p.is_null() {
                handle_alloc_error(l);
            }
            let flags = flags | (shift as u64) << SPACE_SHIFT_AT;
            p.write(Version {
                txn_id: AtomicU64::new(tid),
                begin: AtomicU64::new(TID_MARK | tid),
                end: AtomicU64::new(INF_TS),
                next: AtomicPtr::new(next),
                cc_words: [AtomicU64::new(0), AtomicU64::new(INF_TS)],
                len: std::sync::atomic::AtomicU64::new(len as u64 | (flags & !(HAS_HEAP | OWNED))),
            });
            p
        }
    }

    #[inline]
    fn alloc_inner(
        at: Alloc<'_>,
        tid: u64,
        len: usize,
        flags: u64,
        rec: Option<Layout>,
        next: *mut Version,
        mut value: impl FnMut(usize) -> Value,
    ) -> *mut Version {
        let p = Self::alloc_header(at.spaces, tid, len, flags, rec, next);
        // SAFETY: `p` has room for `len` values after the header (see
        // `alloc_header`); each value slot is written exactly once. `value`
        // is our own closures' clones/moves, which do not panic; if one
        // did, the version would leak, never be read half-built (it is not
        // shared yet).
        unsafe {
            let dst = Self::values_ptr(p);
            for i in 0..len {
                dst.add(i).write(value(i));
            }
            Self::own_heap_values(p, at, len);
            p
        }
    }

    /// Sets `flags` in the `len` word of a version nobody else sees yet:
    /// a plain load and store (a locked read-modify-write would cost every
    /// update one for nothing). The caller skips it for no flags.
    #[inline]
    fn set_flags(&self, flags: u64) {
        let w = self.len.load(Ordering::Relaxed);
        self.len.store(w | flags, Ordering::Relaxed);
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
        // initialised by `alloc`, are read (for the prefetch) while still
        // alive, and those it owns are dropped once here.
        unsafe { Self::free_word(v, (*v).len_word()) }
    }

    /// [`Version::free`] with `v`'s `len` word already read.
    ///
    /// # Safety
    /// As for [`Version::free`]; `word` is `v`'s `len` word.
    unsafe fn free_word(v: *mut Version, word: u64) {
        // SAFETY: per the contract.
        unsafe {
            let len = (word & COUNT) as usize;
            if word & HAS_HEAP != 0 {
                // Only what this version owns: a text it handed over to
                // its successor is that one's to drop (and its line need
                // not be read at all).
                let vals = Self::values_ptr(v);
                let owned = (word & OWNED) >> OWNED_AT;
                prefetch_shared_counts(std::slice::from_raw_parts(vals, len), owned);
                let mut bits = owned;
                while bits != 0 {
                    std::ptr::drop_in_place(vals.add(bits.trailing_zeros() as usize));
                    bits &= bits - 1;
                }
                for i in OWNED_VALUES..len {
                    std::ptr::drop_in_place(vals.add(i));
                }
            }
            let ext = word & IN_PLACE != 0;
            // Read before the embedded record's values are dropped (its
            // header stays readable until the block is released).
            let block = Self::block_of(v, word);
            if ext {
                // The record (old values) belongs to this version when it
                // is one of its own; the master belongs to the row and is
                // freed with it. It goes back to its own allocator (a space
                // or the global one: `Record::free`). A record word tagged
                // as embedded names a record in the block of the version
                // that overwrote this one, which frees it with its block
                // (possibly already: never read it here).
                let w = (*Self::ext_ptr(v)).record_word();
                if !w.is_null() && !record::word::is_embedded(w) {
                    drop(RecordBox::from_raw(w));
                }
            }
            if word & EMBEDS != 0 {
                // The record this block holds, whoever still points at it
                // (nobody, once this version is unreachable: the version
                // it overwrote was freed before, or its word was swapped
                // for a record of its own when this version left the chain
                // above it).
                record::drop_values(Self::embedded_ptr(v));
            }
            Self::release_from(v, block, word);
        }
    }

    /// Returns the memory of `v` to its allocator (a memory space or the
    /// global one).
    ///
    /// # Safety
    /// `v` was allocated with layout `l`, its contents are dropped or moved
    /// out, and it is released once.
    #[inline]
    unsafe fn release(v: *mut Version, l: Layout) {
        // SAFETY: per the contract; the shift was stored by `alloc_inner`
        // from the space's `alloc` of `l.size()` bytes.
        unsafe { Self::release_from(v, l, (*v).len_word()) }
    }

    /// [`Version::release`] with `v`'s `len` word already read.
    ///
    /// # Safety
    /// As for [`Version::release`]; `len` is `v`'s `len` word.
    #[inline]
    unsafe fn release_from(v: *mut Version, l: Layout, len: u64) {
        // SAFETY: per the contract.
        unsafe {
            let shift = ((len & SPACE_SHIFT) >> SPACE_SHIFT_AT) as u32;
            if shift == 0 {
                super::version_cache::free_block(v as *mut u8, l);
            } else {
                space::free(
                    std::ptr::NonNull::new_unchecked(v as *mut u8),
                    l.size(),
                    shift,
                );
            }
        }
    }

    /// Gives `older` back the heap values this version took over from it
    /// ([`Version::alloc_update`] with `lend`), when this version leaves
    /// the chain and `older`, the next older version that stays, does not:
    /// an undone or replaced write, a version pruned from the middle of a
    /// chain. A value moves back when this version owns it and `older`
    /// holds the same memory without owning it: the newest holder of a
    /// lent value owns it, so `older` was lent it by this version, or by
    /// versions between them that owned it no more.
    pub fn hand_down(&self, older: &Version) {
        let (mine, theirs) = (self.len_word(), older.len_word());
        if mine & OWNED == 0 || theirs & HAS_HEAP == 0 {
            return;
        }
        let (a, b) = (self.data(), older.data());
        let mut moved = 0;
        let mut bits = (mine & OWNED) >> OWNED_AT;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if theirs & own(i) == 0 && b.get(i).is_some_and(|o| same_heap(&a[i], o)) {
                moved |= own(i);
            }
        }
        if moved != 0 {
            older.len.fetch_or(moved, Ordering::AcqRel);
            self.len.fetch_and(!moved, Ordering::AcqRel);
        }
    }

    /// The `len` word, to read while the version is still hot (when it is
    /// retired) and hand to [`Version::free_with`] later.
    #[inline]
    pub fn len_word(&self) -> u64 {
        self.len.load(Ordering::Acquire)
    }

    /// [`Version::free`], given the `len` word read at retirement: a
    /// version without text or in-place extension is released without
    /// touching its (by then cold) memory.
    ///
    /// # Safety
    /// As for [`Version::free`]; `len` is `v`'s [`Version::len_word`].
    pub unsafe fn free_with(v: *mut Version, len: u64) {
        // SAFETY: per the contract; a version that owns no heap value and
        // has no extension has nothing to drop.
        unsafe {
            // Nothing to read in a version that owns no heap memory (none,
            // or all handed over to its successor) and has no extension.
            let count = (len & COUNT) as usize;
            let owns_heap = len & HAS_HEAP != 0 && (len & OWNED != 0 || count > OWNED_VALUES);
            if owns_heap || len & IN_PLACE != 0 {
                return Self::free_word(v, len);
            }
            Self::release_from(v, layout(count, false).0, len);
        }
    }

    /// Moves the values out and releases the allocation; `gauged`: its
    /// table's flag (what its allocation counted under).
    ///
    /// # Safety
    /// As for [`Version::free`].
    pub unsafe fn into_values(v: *mut Version, gauged: Gauged) -> Vec<Value> {
        // SAFETY: per the contract we own `v`; each value is read (moved)
        // once and the memory is released without dropping them again.
        unsafe {
            let len = (*v).count();
            let word = (*v).len_word();
            let vals = Self::values_ptr(v);
            // A value this version handed over is cloned: its memory is
            // the successor's.
            let out = (0..len)
                .map(|i| {
                    let x = &*vals.add(i);
                    if x.has_heap() && !owned_bit(word, i) {
                        x.clone()
                    } else {
                        std::ptr::read(x)
                    }
                })
                .collect();
            debug_assert!(word & IN_PLACE == 0, "in-place versions own no row image");
            // Its values leave the store (the caller may store them again,
            // which counts them again).
            let (block, payload) = Self::gauge_bytes(v, word, gauged);
            super::meter::retired(block);
            gauged.released(payload);
            Self::release(v, layout(len, false).0);
            out
        }
    }

    #[inline]
    fn count(&self) -> usize {
        (self.len_word() & COUNT) as usize
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
        self.len_word() & TOMBSTONE != 0
    }

    /// Bytes this version occupies: header, row image and text and bytes payloads
    /// (a payload shared with another version is counted by whichever of
    /// them `seen` meets first).
    pub(crate) fn footprint(&self, seen: &mut Payloads) -> usize {
        let inline = layout(self.count(), self.is_in_place()).0.size() + seen.bytes(self.data());
        // SAFETY: the record lives as long as the version (epoch-retired;
        // an embedded one as long as the block of the version above, which
        // leaves the chain only after this version's word is its own).
        let rec = self
            .ext()
            .and_then(|e| unsafe { e.record().as_ref() })
            .map_or(0, |r| r.footprint(seen));
        inline + rec
    }

    #[inline]
    pub fn next(&self) -> *mut Version {
        self.next.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::Text;

    #[test]
    fn header_is_at_most_48_bytes() {
        assert_eq!(HEADER_BYTES, 48);
        assert_eq!(std::mem::size_of::<Value>(), 16);
    }

    // Exercises alloc/free/into_values; small enough for Miri
    // (`cargo +nightly miri test -p strata --lib version`).
    #[test]
    fn inline_rows_own_and_release_their_values() {
        let text = Text::new("shared");
        let v = Version::alloc(
            Alloc::PLAIN,
            7,
            vec![Value::Int(1), Value::Text(text.clone())],
            std::ptr::null_mut(),
        );
        // SAFETY: fresh, unshared allocation.
        let r = unsafe { &*v };
        assert_eq!(r.data(), &[Value::Int(1), Value::Text(text.clone())]);
        assert!(!r.is_tombstone());
        assert_eq!(r.begin.load(Ordering::Relaxed), TID_MARK | 7);
        assert_eq!(Text::strong_count(&text), 2);
        let w = Version::alloc(Alloc::PLAIN, 8, r.data().to_vec(), v);
        assert_eq!(Text::strong_count(&text), 3);
        // SAFETY: both are ours and freed once.
        unsafe {
            assert_eq!((*w).next(), v);
            Version::free(w);
            assert_eq!(Text::strong_count(&text), 2);
            let back = Version::into_values(v, Gauged::OFF);
            assert_eq!(Text::strong_count(&text), 2);
            assert_eq!(back[1].as_text(), Some("shared"));
        }
        let tomb =
            Version::alloc_tombstone(Alloc::PLAIN, 9, vec![Value::Int(4)], std::ptr::null_mut());
        let empty = Version::alloc(Alloc::PLAIN, 9, Vec::new(), std::ptr::null_mut());
        // SAFETY: fresh allocations, freed once.
        unsafe {
            assert!((*tomb).is_tombstone());
            assert_eq!((*tomb).data(), &[Value::Int(4)]);
            assert!(!(*empty).is_tombstone());
            Version::free(tomb);
            Version::free(empty);
        }
    }

    /// Past 256 columns the changed-column set leaves the stack: the
    /// columns past the fourth word are set, a column named twice keeps its
    /// first value there too, and the rest are copied.
    #[test]
    fn updates_of_rows_wider_than_the_stack_set() {
        let n = 300;
        let base = Version::alloc(
            Alloc::PLAIN,
            1,
            (0..n).map(Value::Int).collect(),
            std::ptr::null_mut(),
        );
        let (a, b) = (Value::Int(-1), Value::Int(-2));
        let changes = [(0, &a), (299, &b), (299, &a), (n as usize, &a)];
        // SAFETY: fresh allocations of ours, each freed once, newest first.
        unsafe {
            let v =
                Version::alloc_update(Alloc::PLAIN, 2, &*base, &changes, base, false, Value::clone);
            let want: Vec<Value> = (0..n)
                .map(|i| match i {
                    0 => a.clone(),
                    299 => b.clone(),
                    i => Value::Int(i),
                })
                .collect();
            assert_eq!((*v).data(), &want[..]);
            Version::free(v);
            Version::free(base);
        }
    }

    /// An update of a row of plain values is a byte copy; the first text
    /// it brings in must mark the new version as owning heap values, or
    /// the next update would byte-copy the text's `Arc` without counting
    /// it and a free would drop it twice. Miri-sized, as above.
    #[test]
    fn updates_copy_plain_rows_and_count_the_text_they_bring() {
        let text = Text::new("t");
        let plain = Version::alloc(
            Alloc::PLAIN,
            1,
            vec![Value::Int(1), Value::Null, Value::Int(3)],
            std::ptr::null_mut(),
        );
        let new_text = Value::Text(text.clone());
        // SAFETY: fresh allocations of ours, each freed once, newest first.
        unsafe {
            let a = Version::alloc_update(
                Alloc::PLAIN,
                2,
                &*plain,
                &[(1, &new_text)],
                plain,
                false,
                Value::clone,
            );
            assert_eq!((*plain).len_word() & HAS_HEAP, 0);
            assert_ne!(
                (*a).len_word() & HAS_HEAP,
                0,
                "the text makes the row own heap values"
            );
            assert_eq!(
                (*a).data(),
                &[Value::Int(1), new_text.clone(), Value::Int(3)]
            );
            assert_eq!(Text::strong_count(&text), 3);
            let seven = Value::Int(7);
            let b =
                Version::alloc_update(Alloc::PLAIN, 3, &*a, &[(2, &seven)], a, false, Value::clone);
            assert_eq!(
                (*b).data(),
                &[Value::Int(1), new_text.clone(), Value::Int(7)]
            );
            assert_eq!(Text::strong_count(&text), 4, "the unchanged text is cloned");
            let c = Version::alloc_update(
                Alloc::PLAIN,
                4,
                &*plain,
                &[(0, &seven)],
                plain,
                false,
                Value::clone,
            );
            assert_eq!((*c).data(), &[Value::Int(7), Value::Null, Value::Int(3)]);
            assert_eq!((*c).len_word() & HAS_HEAP, 0);
            // A column named twice keeps its first value on both paths,
            // and the text not used is not kept (its count is back).
            let twice = [(1, &new_text), (1, &seven)];
            let d =
                Version::alloc_update(Alloc::PLAIN, 5, &*plain, &twice, plain, false, Value::clone);
            let e = Version::alloc_update(
                Alloc::PLAIN,
                6,
                &*a,
                &[(2, &seven), (2, &new_text)],
                a,
                false,
                Value::clone,
            );
            assert_eq!((*d).data()[1], new_text);
            assert_eq!((*e).data()[2], Value::Int(7));
            assert_eq!(Text::strong_count(&text), 6);
            for v in [e, d] {
                Version::free(v);
            }
            assert_eq!(Text::strong_count(&text), 4);
            for v in [c, b, a, plain] {
                Version::free(v);
            }
        }
        drop(new_text);
        assert_eq!(Text::strong_count(&text), 1);
    }

    /// A lent text is counted once however many versions hold it, and
    /// dropped once whichever way they go: oldest first (a cut), from the
    /// middle or the top (`hand_down`), or moved out. Miri-sized.
    #[test]
    fn lent_texts_are_dropped_once_whichever_way_their_versions_go() {
        let [t1, t2, t3] = ["one", "two", "three"].map(Text::new);
        let n = |t: &Text| Text::strong_count(t);
        let row = vec![
            Value::Int(1),
            Value::Text(t1.clone()),
            Value::Text(t2.clone()),
        ];
        let (int, text3) = (Value::Int(2), Value::Text(t3.clone()));
        // SAFETY: fresh allocations of ours, each freed once, never before
        // a newer holder of what it lent has handed it down.
        unsafe {
            let v1 = Version::alloc(Alloc::PLAIN, 1, row.clone(), std::ptr::null_mut());
            drop(row);
            let v2 =
                Version::alloc_update(Alloc::PLAIN, 2, &*v1, &[(0, &int)], v1, true, Value::clone);
            assert_eq!((n(&t1), n(&t2)), (2, 2), "handed over, not counted");
            let v3 = Version::alloc_update(
                Alloc::PLAIN,
                3,
                &*v2,
                &[(1, &text3)],
                v2,
                true,
                Value::clone,
            );
            drop(text3);
            assert_eq!((n(&t1), n(&t2), n(&t3)), (2, 2, 2));
            assert_eq!((*v3).data()[2], Value::Text(t2.clone()));
            // An undone write over v3 gives everything back.
            let v4 = Version::alloc_update(Alloc::PLAIN, 4, &*v3, &[], v3, true, Value::clone);
            (*v4).hand_down(&*v3);
            Version::free(v4);
            assert_eq!((n(&t1), n(&t2), n(&t3)), (2, 2, 2));
            // v2 leaves the middle: t1, which it owned, goes back to v1;
            // t2 stays v3's.
            (*v2).hand_down(&*v1);
            Version::free(v2);
            assert_eq!((n(&t1), n(&t2)), (2, 2));
            assert_eq!((*v1).data()[1].as_text(), Some("one"));
            // A copy (no lending) counts again; moved out, it keeps them.
            let moved = Version::into_values(
                Version::alloc_update(Alloc::PLAIN, 5, &*v3, &[], v3, false, Value::clone),
                Gauged::OFF,
            );
            assert_eq!((n(&t2), n(&t3)), (3, 3));
            drop(moved);
            // The top goes while v1 stays: t2 back to v1, t3 dropped.
            (*v3).hand_down(&*v1);
            Version::free(v3);
            assert_eq!((n(&t1), n(&t2), n(&t3)), (2, 2, 1));
            Version::free(v1);
        }
        assert_eq!((n(&t1), n(&t2), n(&t3)), (1, 1, 1));
    }

    /// The payloads a version owns count only under its table's gauge
    /// flag, and its retirement gives back exactly what it counted: all of
    /// it with the flag (a lent text once, by its newest holder), nothing
    /// without it, in take or in release.
    #[test]
    fn a_version_counts_its_payloads_only_under_the_gauge() {
        use crate::storage::meter;
        let (one, two) = (Text::new("payload"), Value::from("other"));
        let bytes = |t: &str| (t.len() + Text::HEADER_BYTES) as u64;
        let gauged = Alloc {
            spaces: None,
            gauged: &Gauged::ON,
        };
        for (at, counted) in [
            (Alloc::PLAIN, 0),
            (gauged, bytes("payload") + bytes("other")),
        ] {
            meter::take_unflushed_held();
            let row = vec![Value::Int(1), Value::Text(one.clone())];
            let v = Version::alloc(at, 1, row, std::ptr::null_mut());
            // SAFETY: `v` and `u` are fresh allocations of ours, alive until
            // they are retired, once each, below.
            unsafe {
                // v lends its text to u (counted once, u owns it); w
                // replaces it with a text of its own.
                let u = Version::alloc_update(
                    at,
                    2,
                    &*v,
                    &[(0, &Value::Int(2))],
                    v,
                    true,
                    Value::clone,
                );
                let w = Version::alloc_update(at, 3, &*u, &[(1, &two)], u, false, Value::clone);
                assert_eq!(meter::take_unflushed_held(), (counted, 0));
                let guard = crossbeam_epoch::pin();
                for x in [w, u, v] {
                    crate::storage::retire(x, *at.gauged, &guard);
                }
            }
            assert_eq!(meter::take_unflushed_held(), (0, counted));
        }
    }
}

/// The text and byte-string payloads one walk over a row has counted.
/// Versions share an unmodified attribute's payload (`NonInline::Shared`: the new version holds
/// another reference to the same `Arc`), so the memory a row holds counts
/// each payload once, however many versions name it; counting it per
/// version made sharing look costlier than copying (issue 17, Fig. 11).
#[derive(Default)]
pub(crate) struct Payloads(rustc_hash::FxHashSet<usize>);

impl Payloads {
    /// Out-of-line bytes of `values` not yet counted.
    pub(crate) fn bytes(&mut self, values: &[Value]) -> usize {
        values
            .iter()
            .map(|v| match v {
                Value::Text(s) if !self.0.insert(s.heap_ptr() as usize) => 0,
                Value::Bytes(b) if !self.0.insert(Arc::as_ptr(b) as usize) => 0,
                _ => v.heap_bytes(),
            })
            .sum()
    }
}
