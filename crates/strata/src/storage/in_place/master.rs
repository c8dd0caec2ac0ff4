//! The master row of an in-place scheme: the newest values of a tuple in
//! one fixed place, updated in place by the holder of the row's write lock
//! and read under a seqlock (see [`super`] for the protocol).
//!
//! ```text
//!  [seq | owner | len] [tag | bits] x len      one allocation per row
//! ```
//!
//! A cell is two atomic words: a reader copies raw bits and turns them into
//! values only once the seqlock validated them, so it never clones or drops
//! a value a writer is moving. The invariant this module owns: a value
//! leaves a cell only into a record or through the epoch
//! ([`WriteSection::discard`]), never dropped while a reader may hold its
//! bits.
//!
//! The atomics come from `crate::sync`: `tests/seqlock_model.rs` runs the
//! write section and the read paths under shuttle.

use super::record::Record;
use super::{own_columns, own_copy, Projected, PROJECTED};
use crate::storage::meter::Gauged;
use crate::storage::reclaim::defer_free;
use crate::storage::version::Version;
use crate::sync::atomic::{fence, AtomicPtr, AtomicU64, Ordering};
use crate::sync::{broken, thread::spin_loop, Break};
use crate::value::{Text, Value};
use crossbeam_epoch::Guard;
use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::sync::Arc;

use Ordering::{Acquire, Relaxed, Release};

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

/// The payload bytes of the value `r` encodes, as `Value::heap_bytes`
/// counts them (0 for an inline one).
///
/// # Safety
/// `r` is a validated snapshot of a cell (or the cell is stable: its
/// writer, or nobody can reach the master), and the value it names is
/// alive (held by the cell, a record, or retired through an epoch the
/// caller is pinned in).
unsafe fn heap_bytes_of(r: Raw) -> usize {
    let arc_counts = 2 * std::mem::size_of::<usize>();
    match r.tag {
        // SAFETY: per the contract; the count stays with its holder.
        TEXT => unsafe { Text::with_raw(r.bits, |t| t.len() + Text::HEADER_BYTES) },
        // SAFETY: as for TEXT.
        BYTES => unsafe { (*(r.bits as *const Vec<u8>)).capacity() + arc_counts },
        _ => 0,
    }
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

/// The master row of a tuple (see the module doc). The cells follow the
/// struct in the same allocation (one cache miss less per access):
///
/// ```text
///  [seq | owner | len gauged] [tag | bits] x len
/// ```
#[repr(C)]
pub struct Master {
    /// Even: stable; odd: a writer is inside.
    seq: AtomicU64,
    /// The version whose values the cells hold (a tombstone when empty).
    owner: AtomicPtr<Version>,
    /// Cells (at most `value::MAX_COLUMNS`).
    len: u32,
    /// Whether its cells count their payloads (its table's flag, set when
    /// it is made): every put and take, and its retirement, count under
    /// it, so what it releases is what it held whoever writes.
    gauged: Gauged,
}

/// Bytes of a master of `len` cells to prefetch ahead of a read: the
/// seqlock word and the cells, up to four cache lines.
pub fn prefetch_bytes(len: usize) -> usize {
    master_layout(len).size().min(256)
}

fn master_layout(len: usize) -> Layout {
    let (l, off) = Layout::new::<Master>()
        .extend(Layout::array::<Cell>(len).expect("row size overflows"))
        .expect("row size overflows");
    debug_assert_eq!(off, std::mem::size_of::<Master>());
    l.pad_to_align()
}

impl Master {
    /// A master with `len` empty cells, counting its payloads when
    /// `gauged`.
    pub fn new(len: usize, gauged: Gauged) -> *mut Master {
        let l = master_layout(len);
        crate::storage::meter::allocated(l.size());
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
                len: u32::try_from(len).expect("row too wide"),
                gauged,
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
                self.len(),
            )
        }
    }

    /// Releases the allocation (values already dropped or moved out).
    ///
    /// # Safety
    /// `m` came from [`Master::new`] and is released once.
    unsafe fn dealloc(m: *mut Master) {
        // SAFETY: per the contract; Cell and Master have no drop glue.
        unsafe { dealloc(m as *mut u8, master_layout((*m).len())) }
    }

    /// A master holding `row` (see [`Master::new`] for `gauged`).
    pub fn with_row(row: Vec<Value>, gauged: Gauged) -> *mut Master {
        let m = Self::new(row.len(), gauged);
        // SAFETY: fresh, unshared.
        let r = unsafe { &*m };
        if gauged.on() {
            gauged.held(row.iter().map(Value::heap_bytes).sum());
        }
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
            // Its values leave the store (see `Version::into_values`).
            crate::storage::meter::retired(master_layout((*m).len()).size());
            (*m).gauged.released((*m).payload());
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
        // SAFETY: `m` is alive until the deferred free below; unlinked, so
        // its cells no longer change.
        let r = unsafe { &*m };
        crate::storage::meter::retired(master_layout(r.len()).size());
        r.gauged.released(r.payload());
        // SAFETY: `m` is unlinked from every version that is still reachable
        // (its row is gone) and retired once.
        unsafe { defer_free(m, guard, |m| Master::free(m)) }
    }

    /// What the memory gauge counts for the master beyond its block: the
    /// payloads of the values its cells own (`storage::meter`), none when
    /// it does not count them. For a master nobody changes (its row's
    /// writer, or nobody can reach it).
    pub(crate) fn payload(&self) -> usize {
        if !self.gauged.on() {
            return 0;
        }
        // SAFETY: per the contract the cells are stable and own their
        // values.
        (0..self.len())
            .map(|i| unsafe { heap_bytes_of(self.load(i)) })
            .sum()
    }

    /// [`Master::retire`]'s count: the block and [`Master::payload`] (a
    /// dropped table's reclaim credits it).
    pub(crate) fn gauge_bytes(&self) -> (usize, usize) {
        (master_layout(self.len()).size(), self.payload())
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
            let raw: Vec<Raw> = (0..self.len()).map(|i| self.load(i)).collect();
            fence(Acquire);
            if self.seq.load(Relaxed) == s1 {
                break raw;
            }
        };
        // Out-of-line payloads, counted as `Value::heap_bytes` counts them.
        // SAFETY: validated snapshots; the caller is pinned, and a TEXT or
        // BYTES cell's value stays alive while in the cell, in a record,
        // or retired through an epoch.
        let heap: usize = raw.iter().map(|&r| unsafe { heap_bytes_of(r) }).sum();
        std::mem::size_of::<Master>() + self.len() * std::mem::size_of::<Cell>() + heap
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
        if self.len() <= FAST_CELLS {
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
        let n = self.len();
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
        let n = self.len();
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
        let mut raw = Vec::with_capacity(self.len());
        let mut over = Vec::with_capacity(self.len());
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
        let n = self.len();
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
            let rec = n.ext().map_or(std::ptr::null_mut(), |e| e.record());
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

    /// The values of attributes `cols` (in that order) of version `v`, as
    /// [`Master::read`] reads the whole row, into `out` (empty): only those
    /// cells are copied and decoded, and only those attributes of the
    /// records between the master's owner and `v` are looked at. The
    /// caller is pinned.
    pub fn read_columns(&self, v: *mut Version, cols: &[usize], out: &mut Projected) {
        let mut attempt = 0u32;
        loop {
            if self.try_read_columns(v, cols, out) {
                return;
            }
            // See `read_slow`: a toggled abort may have left `v`'s image
            // only in its copy.
            if own_columns(v, cols, out) {
                return;
            }
            attempt = attempt.saturating_add(1);
            debug_assert!(attempt < 100_000_000, "{STUCK}");
            spin_loop();
        }
    }

    /// One attempt of [`Master::read_columns`], as [`Master::try_read_slow`]
    /// for the whole row: true when it filled `out` (left empty if not).
    fn try_read_columns(&self, v: *mut Version, cols: &[usize], out: &mut Projected) -> bool {
        let s1 = self.seq.load(Acquire);
        if s1 & 1 == 1 {
            return false;
        }
        let owner = self.owner.load(Relaxed);
        let raw: smallvec::SmallVec<[Raw; PROJECTED]> =
            cols.iter().map(|&c| self.load(c)).collect();
        let mut over: smallvec::SmallVec<[Option<&Value>; PROJECTED]> =
            smallvec::smallvec![None; cols.len()];
        // As in `try_read_slow`: past a tombstone the cells belong to a
        // later incarnation until a full record replaces them.
        let mut ok = true;
        let mut x = owner;
        // SAFETY: pinned; the owner is a version of this row.
        if unsafe { x.as_ref() }.is_some_and(Version::is_tombstone) {
            ok = false;
        }
        while x != v {
            if x.is_null() {
                return false;
            }
            // SAFETY: pinned; versions reachable from the owner, and their
            // records, are freed only through an epoch.
            let next = unsafe { (*x).next() };
            let Some(n) = (unsafe { next.as_ref() }) else {
                return false;
            };
            x = next;
            if n.is_tombstone() {
                ok = false;
                continue;
            }
            let rec = n.ext().map_or(std::ptr::null_mut(), |e| e.record());
            // SAFETY: as above.
            let Some(r) = (unsafe { rec.as_ref() }) else {
                return false;
            };
            if r.is_full() {
                ok = true;
            }
            r.apply_columns(cols, &mut over);
        }
        // Orders the loads above before the re-check of seq.
        fence(Acquire);
        if self.seq.load(Relaxed) != s1 || !ok {
            return false;
        }
        for (r, o) in raw.iter().zip(over.iter()) {
            let value = match o {
                Some(v) => (*v).clone(),
                // SAFETY: validated snapshot (see `try_read_slow`).
                None => match unsafe { decode_clone(*r) } {
                    Some(v) => v,
                    // An empty cell: `v` is not reachable from this state.
                    None => {
                        out.clear();
                        return false;
                    }
                },
            };
            out.push(value);
        }
        true
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

    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
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
    /// The cell's payload goes with it (`storage::meter`): into the record
    /// that takes it (which counts it) or through the epoch.
    pub fn take(&mut self, i: usize) -> Option<Value> {
        let r = self.m.load(i);
        let c = &self.m.cells()[i];
        c.tag.store(EMPTY, Relaxed);
        c.bits.store(0, Relaxed);
        // SAFETY: the cell gave up the value (it is empty now).
        let v = unsafe { decode_owned(r) };
        if let Some(x) = v.as_ref().filter(|_| self.m.gauged.on()) {
            self.m.gauged.released(x.heap_bytes());
        }
        v
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
        if self.m.gauged.on() {
            self.m.gauged.held(v.heap_bytes());
        }
        let r = encode(v);
        let c = &self.m.cells()[i];
        c.tag.store(r.tag, Relaxed);
        c.bits.store(r.bits, Relaxed);
    }

    /// Whether cell `i` differs from `v` (cell full).
    pub fn differs(&self, i: usize, v: &Value) -> bool {
        self.m.differs(i, v)
    }

    /// A copy of the value of full cell `i` (the cell keeps its own).
    pub fn value(&self, i: usize) -> Value {
        // SAFETY: we are the writer: the cell owns its value for the call.
        unsafe { decode_clone(self.m.load(i)) }.expect("a full cell")
    }

    /// A copy of full cell `i` for a record that keeps it while the cell
    /// keeps its own: an inline value is rebuilt from the cell's bits
    /// directly (a time-travel image of a plain row is all such copies),
    /// a text or byte string is shared, or copied under `NonInline::Copy`.
    #[inline]
    pub fn carried(&self, i: usize, mode: crate::options::NonInline) -> Value {
        let r = self.m.load(i);
        match decode_inline(r) {
            Some(v) => v,
            None => crate::storage::append_only::carry(&self.value(i), mode),
        }
    }

    pub fn set_owner(&mut self, v: *mut Version) {
        self.m.owner.store(v, Relaxed);
    }

    /// Ends a section that displaced no value (an install: what it takes
    /// out of the cells moves into a record), with no epoch to wait for.
    pub fn end(self) {
        debug_assert!(self.displaced.is_empty(), "displaced values need `finish`");
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

impl Master {
    /// Whether full cell `i` holds another value than `v`, for the holder
    /// of the row's write lock (the cell is stable).
    pub fn differs(&self, i: usize, v: &Value) -> bool {
        let r = self.load(i);
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
}

impl Drop for WriteSection<'_> {
    fn drop(&mut self) {
        self.m.seq.store(self.start + 2, Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Alloc;

    /// A reader never accepts a master while a writer is inside its write
    /// section, on either read path, and accepts it again after.
    #[test]
    fn a_reader_refuses_a_master_inside_a_write_section() {
        let guard = crossbeam_epoch::pin();
        let m = Master::with_row(
            vec![Value::Int(1), Value::from("a"), Value::Int(1)],
            Gauged::OFF,
        );
        let v = Version::alloc_in_place(Alloc::PLAIN, 1, m, std::ptr::null_mut());
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
