//! The counting build's atomics: every write to a cache line, by call
//! site, and whether another thread wrote the line too.
//!
//! Built with `RUSTFLAGS="--cfg strata_count"` (a cfg, as the model build
//! is, so that no normal build pays for it), the atomics of
//! [`crate::sync::atomic`] are these wrappers: each store and
//! read-modify-write notes its caller (`#[track_caller]`) and the 64-byte
//! line it wrote. A line written by two or more threads during the
//! window is *shared*, and a write that takes a line another thread wrote
//! last has *moved* it (a transfer between caches, at least): its writes move it between cores, which is what
//! stops a write path from scaling (issue 42: ERMIA's budget is one
//! shared fetch-and-add per read-write commit, plus the rows it writes):
//!
//! ```text
//!  tid/mod.rs:291   store   line 0x7f..40  by thread 3   (its own slot)
//!  cc/mod.rs:120    fetch_add line 0x55..00 by threads 1, 2, 3  -> shared
//!  report: per site, writes and writes to shared lines; divided by the
//!          window's commits (`strata bench ycsb|tpcc --shared-writes`)
//! ```
//!
//! What it sees is what goes through `crate::sync::atomic`: the
//! protocols' words (clock, transaction table, version headers, chain
//! heads, the seqlock, the log buffer, the B+-tree's nodes) and the
//! counters moved there for it. Locks (`parking_lot`), `crossbeam-epoch`'s
//! pins and the allocator are outside; their sites are named in
//! `docs/PERFORMANCE.md`. The wrappers are `repr(transparent)`, so
//! layouts (the 48-byte version header) do not change. Every write takes
//! a global lock: a counting run is several times slower, and only its
//! counts mean anything.

use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::panic::Location;
use std::sync::atomic::{AtomicU32, Ordering};

pub use super::SiteWrites;

#[derive(Default)]
struct Window {
    /// (site, line) -> writes.
    writes: FxHashMap<(&'static Location<'static>, usize), u64>,
    /// line -> the first thread that wrote it, whether another did, and
    /// the last one that did.
    lines: FxHashMap<usize, (u32, bool, u32)>,
    /// (site, line) -> writes that took the line from another thread.
    moved: FxHashMap<(&'static Location<'static>, usize), u64>,
}

static WINDOW: Mutex<Option<Window>> = Mutex::new(None);
static NEXT_THREAD: AtomicU32 = AtomicU32::new(1);

std::thread_local! {
    static THREAD: u32 = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
}

#[inline]
pub(crate) fn note(addr: usize, site: &'static Location<'static>) {
    let me = THREAD.with(|t| *t);
    let line = addr & !63;
    let mut w = WINDOW.lock();
    let w = w.get_or_insert_with(Window::default);
    *w.writes.entry((site, line)).or_default() += 1;
    let owner = w.lines.entry(line).or_insert((me, false, me));
    if owner.0 != me {
        owner.1 = true;
    }
    if owner.2 != me {
        owner.2 = me;
        *w.moved.entry((site, line)).or_default() += 1;
    }
}

/// Starts a new window: forgets every write noted so far.
pub fn reset() {
    *WINDOW.lock() = Some(Window::default());
}

/// The writes of the window so far, by site, most shared first.
pub fn report() -> Vec<SiteWrites> {
    let w = WINDOW.lock();
    let Some(w) = w.as_ref() else {
        return Vec::new();
    };
    let mut by_site: FxHashMap<&'static Location<'static>, (u64, u64, u64)> = FxHashMap::default();
    for (&(site, line), &n) in &w.writes {
        let e = by_site.entry(site).or_default();
        e.0 += n;
        if w.lines.get(&line).is_some_and(|l| l.1) {
            e.1 += n;
        }
        e.2 += w.moved.get(&(site, line)).copied().unwrap_or(0);
    }
    let mut v: Vec<SiteWrites> = by_site
        .into_iter()
        .map(|(site, (writes, shared, moved))| SiteWrites {
            site: format!("{}:{}", site.file(), site.line()),
            writes,
            shared,
            moved,
        })
        .collect();
    v.sort_by(|a, b| {
        b.shared
            .cmp(&a.shared)
            .then(b.writes.cmp(&a.writes))
            .then(a.site.cmp(&b.site))
    });
    v
}

macro_rules! counted_int {
    ($name:ident, $t:ty) => {
        /// `std`'s atomic, counting its writes (see the module doc).
        #[repr(transparent)]
        #[derive(Default, Debug)]
        pub struct $name(std::sync::atomic::$name);

        impl $name {
            pub const fn new(v: $t) -> Self {
                Self(std::sync::atomic::$name::new(v))
            }
            #[inline]
            fn at(&self) -> usize {
                self as *const Self as usize
            }
            pub fn get_mut(&mut self) -> &mut $t {
                self.0.get_mut()
            }
            pub fn into_inner(self) -> $t {
                self.0.into_inner()
            }
            pub fn as_ptr(&self) -> *mut $t {
                self.0.as_ptr()
            }
            #[inline]
            pub fn load(&self, o: Ordering) -> $t {
                self.0.load(o)
            }
            #[track_caller]
            pub fn store(&self, v: $t, o: Ordering) {
                note(self.at(), Location::caller());
                self.0.store(v, o)
            }
            #[track_caller]
            pub fn swap(&self, v: $t, o: Ordering) -> $t {
                note(self.at(), Location::caller());
                self.0.swap(v, o)
            }
            #[track_caller]
            pub fn compare_exchange(
                &self,
                c: $t,
                n: $t,
                s: Ordering,
                f: Ordering,
            ) -> Result<$t, $t> {
                note(self.at(), Location::caller());
                self.0.compare_exchange(c, n, s, f)
            }
            #[track_caller]
            pub fn compare_exchange_weak(
                &self,
                c: $t,
                n: $t,
                s: Ordering,
                f: Ordering,
            ) -> Result<$t, $t> {
                note(self.at(), Location::caller());
                self.0.compare_exchange_weak(c, n, s, f)
            }
            #[track_caller]
            pub fn fetch_add(&self, v: $t, o: Ordering) -> $t {
                note(self.at(), Location::caller());
                self.0.fetch_add(v, o)
            }
            #[track_caller]
            pub fn fetch_sub(&self, v: $t, o: Ordering) -> $t {
                note(self.at(), Location::caller());
                self.0.fetch_sub(v, o)
            }
            #[track_caller]
            pub fn fetch_and(&self, v: $t, o: Ordering) -> $t {
                note(self.at(), Location::caller());
                self.0.fetch_and(v, o)
            }
            #[track_caller]
            pub fn fetch_or(&self, v: $t, o: Ordering) -> $t {
                note(self.at(), Location::caller());
                self.0.fetch_or(v, o)
            }
            #[track_caller]
            pub fn fetch_max(&self, v: $t, o: Ordering) -> $t {
                note(self.at(), Location::caller());
                self.0.fetch_max(v, o)
            }
            #[track_caller]
            pub fn fetch_min(&self, v: $t, o: Ordering) -> $t {
                note(self.at(), Location::caller());
                self.0.fetch_min(v, o)
            }
        }
    };
}

counted_int!(AtomicU64, u64);
counted_int!(AtomicUsize, usize);

/// `std`'s `AtomicBool`, counting its writes.
#[repr(transparent)]
#[derive(Default, Debug)]
pub struct AtomicBool(std::sync::atomic::AtomicBool);

impl AtomicBool {
    pub const fn new(v: bool) -> Self {
        Self(std::sync::atomic::AtomicBool::new(v))
    }
    pub fn get_mut(&mut self) -> &mut bool {
        self.0.get_mut()
    }
    #[inline]
    pub fn load(&self, o: Ordering) -> bool {
        self.0.load(o)
    }
    #[track_caller]
    pub fn store(&self, v: bool, o: Ordering) {
        note(self as *const Self as usize, Location::caller());
        self.0.store(v, o)
    }
    #[track_caller]
    pub fn swap(&self, v: bool, o: Ordering) -> bool {
        note(self as *const Self as usize, Location::caller());
        self.0.swap(v, o)
    }
    #[track_caller]
    pub fn compare_exchange(
        &self,
        c: bool,
        n: bool,
        s: Ordering,
        f: Ordering,
    ) -> Result<bool, bool> {
        note(self as *const Self as usize, Location::caller());
        self.0.compare_exchange(c, n, s, f)
    }
}

/// `std`'s `AtomicPtr`, counting its writes.
#[repr(transparent)]
pub struct AtomicPtr<T>(std::sync::atomic::AtomicPtr<T>);

impl<T> std::fmt::Debug for AtomicPtr<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl<T> Default for AtomicPtr<T> {
    fn default() -> Self {
        Self(std::sync::atomic::AtomicPtr::default())
    }
}

impl<T> AtomicPtr<T> {
    pub const fn new(p: *mut T) -> Self {
        Self(std::sync::atomic::AtomicPtr::new(p))
    }
    pub fn get_mut(&mut self) -> &mut *mut T {
        self.0.get_mut()
    }
    pub fn into_inner(self) -> *mut T {
        self.0.into_inner()
    }
    #[inline]
    pub fn load(&self, o: Ordering) -> *mut T {
        self.0.load(o)
    }
    #[track_caller]
    pub fn store(&self, p: *mut T, o: Ordering) {
        note(self as *const Self as usize, Location::caller());
        self.0.store(p, o)
    }
    #[track_caller]
    pub fn swap(&self, p: *mut T, o: Ordering) -> *mut T {
        note(self as *const Self as usize, Location::caller());
        self.0.swap(p, o)
    }
    #[track_caller]
    pub fn compare_exchange(
        &self,
        c: *mut T,
        n: *mut T,
        s: Ordering,
        f: Ordering,
    ) -> Result<*mut T, *mut T> {
        note(self as *const Self as usize, Location::caller());
        self.0.compare_exchange(c, n, s, f)
    }
    #[track_caller]
    pub fn compare_exchange_weak(
        &self,
        c: *mut T,
        n: *mut T,
        s: Ordering,
        f: Ordering,
    ) -> Result<*mut T, *mut T> {
        note(self as *const Self as usize, Location::caller());
        self.0.compare_exchange_weak(c, n, s, f)
    }
}
