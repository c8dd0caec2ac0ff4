//! MV-PBT spill files (`Options::mvpbt_spill_dir`): a frozen partition's
//! decided records written once, sequentially, into a file of their own
//! and read back through a read-only memory map, so an index can outgrow
//! memory. Spill files are caches like every index: never fsynced, never
//! read by recovery (which rebuilds indexes by back-fill).
//!
//! ```text
//!  <spill dir>/strata-mvpbt-<pid>-<n>/       one per open database
//!      lock                                  held (flock) while it is open
//!      <table>-<index>-<seq>.mvpbt           one per spilled partition
//!
//!  a file (integers little-endian):
//!  0   magic "MVPBTSP1"  8 B
//!  8   version           u32   (FORMAT_VERSION)
//!  12  reserved          u32   (0)
//!  16  record count n    u64
//!  24  body length       u64   (file length - HEADER)
//!  32  checksum          u32   CRC-32C of bytes 0..32, then of the body
//!  36  reserved          u32   (0)
//!  40  body: offsets     n x u64   (each record's offset in the file)
//!            records     n x [ key_len u32 | type u8 | stamp u64 |
//!                              tuple u64 | version u64 | predecessor u64 |
//!                              key (key_len bytes) ]   in key order
//! ```
//!
//! **Invariant.** A file is private to this process: written here, mapped
//! only after it is complete, and never written, truncated or renamed
//! after it is mapped. A mapped file that shrinks underneath its map
//! makes the next read of a page past the new end fault with SIGBUS,
//! which kills the process; so the invariant is enforced, not assumed:
//! [`SpillFile::open`] unlinks the file as soon as it is mapped and
//! verified, and closes its descriptor. From then on the file has no name
//! and no open descriptor, so no other process can open it to truncate it
//! (only one allowed to rewrite this process's memory could); its pages
//! go back to the file system when the [`SpillFile`] (the map's only
//! owner) drops, or when the process ends, crash included. The
//! directory holds nothing but `lock` and a file being written.
//!
//! ```text
//!  write <seq>.mvpbt ──> map ──> verify ──> unlink (nameless) ──> reads
//!                          │ error: remove the file, keep the records in memory
//! ```
//!
//! [`SpillFile::open`] verifies the whole file (header,
//! length, checksum, offsets, key order, record types, stamps) before it
//! hands out a single record, so a truncated or corrupt file is a typed
//! [`SpillError`], never a wrong record; after that, reads are plain slice
//! accesses into the verified map. Only decided records (a commit
//! timestamp, no TID mark, no GC flag) are written: a file is never
//! updated, so a record whose stamp may still change stays in memory
//! (`index::mvpbt`'s overlay).
//!
//! Stale instance directories of processes that ended (their `lock` is
//! free) are removed when a database opens on the same spill directory.

use crate::error::{Error, Result};
use crate::storage::version::TID_MARK;
#[cfg(feature = "mvpbt-spill")]
use memmap2::Mmap as Map;
/// Without the `mvpbt-spill` feature `Options::validate` refuses a spill
/// directory, so no file is ever opened; the type keeps the module whole.
#[cfg(not(feature = "mvpbt-spill"))]
type Map = Box<[u8]>;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// The first bytes of every spill file.
pub(crate) const MAGIC: [u8; 8] = *b"MVPBTSP1";
/// The layout above; a file of another version is refused.
pub(crate) const FORMAT_VERSION: u32 = 1;
/// Bytes before the body.
pub(crate) const HEADER: usize = 40;
/// Bytes of a record before its key.
const FIXED: usize = 4 + 1 + 8 * 4;
/// Instance directories are named `PREFIX<pid>-<n>`.
const PREFIX: &str = "strata-mvpbt-";

/// Why a spill file could not be written or read back.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub(crate) enum SpillError {
    /// The operating system refused (disk full, permissions).
    #[error("spill file I/O: {0}")]
    Io(crate::error::IoError),
    /// Shorter than its header or than its header says.
    #[error("spill file truncated: {0}")]
    Truncated(String),
    /// Not a spill file (or its first bytes were overwritten).
    #[error("spill file has a wrong magic")]
    BadMagic,
    /// Written by another format version.
    #[error("spill file format version {0}, expected {FORMAT_VERSION}")]
    BadVersion(u32),
    /// The contents do not match the checksum.
    #[error("spill file checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum { stored: u32, computed: u32 },
    /// The checksum matched but the structure is inconsistent.
    #[error("spill file malformed: {0}")]
    Malformed(String),
}

impl SpillError {
    /// Whether the file was read back damaged (not refused by the OS).
    pub(crate) fn is_corrupt(&self) -> bool {
        !matches!(self, SpillError::Io(_))
    }
}

impl From<io::Error> for SpillError {
    fn from(e: io::Error) -> SpillError {
        SpillError::Io(crate::error::IoError(Arc::new(e)))
    }
}

impl From<SpillError> for Error {
    fn from(e: SpillError) -> Error {
        match e {
            SpillError::Io(e) => Error::Io {
                context: "an MV-PBT spill file".into(),
                source: e,
            },
            other => Error::Corrupt(other.to_string()),
        }
    }
}

/// One decided record as stored (the fields of `mvpbt::Record`, the
/// stamp a commit timestamp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fixed {
    /// `RecordType`'s code (0..=3).
    pub ty: u8,
    /// The commit timestamp (no `TID_MARK`).
    pub stamp: u64,
    pub tuple: u64,
    /// The version's address.
    pub version: u64,
    pub predecessor: u64,
}

/// Tests: damages a file between its write and its map.
#[cfg(test)]
pub(crate) type Tamper = Box<dyn Fn(&Path) + Send + Sync>;

/// The spill directory of one open database: its own subdirectory of
/// `Options::mvpbt_spill_dir`, removed when the database (and every
/// partition holding a file in it) is gone.
pub(crate) struct SpillDir {
    dir: PathBuf,
    /// Held locked while this database is open: tells other processes
    /// (and databases) the directory is live.
    _lock: File,
    next: AtomicU64,
    /// Tests: runs between the write and the map of each file (to damage
    /// it).
    #[cfg(test)]
    pub(crate) tamper: parking_lot::Mutex<Option<Tamper>>,
}

impl std::fmt::Debug for SpillDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpillDir").field("dir", &self.dir).finish()
    }
}

impl SpillDir {
    /// Opens `root` for a new database: creates it if missing, removes
    /// the instance directories of databases that are gone, and makes
    /// this one's. `root` naming something other than a directory, or one
    /// that cannot be created or written, is an error.
    pub(crate) fn open(root: &Path) -> Result<Arc<SpillDir>> {
        let what = |e: io::Error, doing: &str| {
            Error::io(
                format!("mvpbt_spill_dir {}: cannot {doing}", root.display()),
                e,
            )
        };
        if root.exists() && !root.is_dir() {
            return Err(Error::InvalidConfig(format!(
                "mvpbt_spill_dir {} exists and is not a directory",
                root.display()
            )));
        }
        fs::create_dir_all(root).map_err(|e| what(e, "create it"))?;
        remove_stale(root);
        static INSTANCE: AtomicU64 = AtomicU64::new(0);
        let pid = std::process::id();
        for _ in 0..1000 {
            let n = INSTANCE.fetch_add(1, Relaxed);
            // Set up under a name `remove_stale` ignores, then renamed: a
            // directory with the prefix always has its lock held or free
            // for good.
            let tmp = root.join(format!(".{PREFIX}{pid}-{n}"));
            let dir = root.join(format!("{PREFIX}{pid}-{n}"));
            if dir.exists() {
                continue; // an earlier process with our pid, still live
            }
            let _ = fs::remove_dir_all(&tmp);
            fs::create_dir(&tmp).map_err(|e| what(e, "create a directory in it"))?;
            let lock = File::create(tmp.join("lock")).map_err(|e| what(e, "write in it"))?;
            // A file system without locks: then no other database can take
            // ours for stale either (its `try_lock` fails too).
            let _ = lock.try_lock();
            if fs::rename(&tmp, &dir).is_err() {
                let _ = fs::remove_dir_all(&tmp);
                continue;
            }
            return Ok(Arc::new(SpillDir {
                dir,
                _lock: lock,
                next: AtomicU64::new(0),
                #[cfg(test)]
                tamper: parking_lot::Mutex::new(None),
            }));
        }
        Err(Error::io(
            format!("mvpbt_spill_dir {}", root.display()),
            io::Error::other("cannot make a directory of its own in it"),
        ))
    }

    /// This database's directory.
    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }

    /// Writes `recs` (in key order, decided) to a new file named after
    /// `stem` (`<table>-<index>`) and maps it, verified. On any error the
    /// file is removed and the caller keeps the records in memory.
    pub(crate) fn spill(
        &self,
        stem: &str,
        recs: &[(&[u8], Fixed)],
    ) -> Result<SpillFile, SpillError> {
        let seq = self.next.fetch_add(1, Relaxed);
        let path = self.dir.join(format!("{stem}-{seq}.mvpbt"));
        let done = write(&path, recs).and_then(|()| {
            #[cfg(test)]
            if let Some(t) = self.tamper.lock().as_ref() {
                t(&path);
            }
            SpillFile::open(&path)
        });
        if done.is_err() {
            let _ = fs::remove_file(&path);
        }
        done
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Removes instance directories under `root` whose database is gone (their
/// lock is free). One still being set up (no lock file yet) is left.
fn remove_stale(root: &Path) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with(PREFIX) || !e.path().is_dir() {
            continue;
        }
        let Ok(lock) = OpenOptions::new().write(true).open(e.path().join("lock")) else {
            continue;
        };
        if lock.try_lock().is_ok() {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// A file-name-safe form of a table or index name (a short one).
pub(crate) fn stem(table: &str, index: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .take(32)
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("{}-{}", clean(table), clean(index))
}

/// The bytes of a file holding `recs`.
fn body_len(recs: &[(&[u8], Fixed)]) -> u64 {
    recs.iter().map(|(k, _)| (8 + FIXED + k.len()) as u64).sum()
}

/// Writes the file (see the module doc): the header last, once the
/// checksum is known.
fn write(path: &Path, recs: &[(&[u8], Fixed)]) -> Result<(), SpillError> {
    let file = OpenOptions::new().write(true).create_new(true).open(path)?;
    let mut w = BufWriter::with_capacity(1 << 16, file);
    let mut header = [0u8; HEADER];
    header[0..8].copy_from_slice(&MAGIC);
    header[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    header[16..24].copy_from_slice(&(recs.len() as u64).to_le_bytes());
    header[24..32].copy_from_slice(&body_len(recs).to_le_bytes());
    w.write_all(&header)?;
    let mut crc = crc32c::crc32c(&header[0..32]);
    let mut put = |w: &mut BufWriter<File>, b: &[u8]| -> io::Result<()> {
        crc = crc32c::crc32c_append(crc, b);
        w.write_all(b)
    };
    let mut off = (HEADER + 8 * recs.len()) as u64;
    for (k, _) in recs {
        put(&mut w, &off.to_le_bytes())?;
        off += (FIXED + k.len()) as u64;
    }
    for (k, r) in recs {
        let len = u32::try_from(k.len())
            .map_err(|_| SpillError::from(io::Error::other("a key longer than 4 GiB")))?;
        let mut fixed = [0u8; FIXED];
        fixed[0..4].copy_from_slice(&len.to_le_bytes());
        fixed[4] = r.ty;
        fixed[5..13].copy_from_slice(&r.stamp.to_le_bytes());
        fixed[13..21].copy_from_slice(&r.tuple.to_le_bytes());
        fixed[21..29].copy_from_slice(&r.version.to_le_bytes());
        fixed[29..37].copy_from_slice(&r.predecessor.to_le_bytes());
        put(&mut w, &fixed)?;
        put(&mut w, k)?;
    }
    header[32..36].copy_from_slice(&crc.to_le_bytes());
    w.seek(SeekFrom::Start(0))?;
    w.write_all(&header)?;
    w.flush()?;
    Ok(())
}

/// A verified, mapped spill file, unlinked: its records by position, in
/// key order. Dropping it unmaps the file, whose pages then go.
pub(crate) struct SpillFile {
    map: Map,
    /// Where it was written (for messages; it has no name any more).
    path: PathBuf,
    count: usize,
}

impl std::fmt::Debug for SpillFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpillFile")
            .field("path", &self.path)
            .field("count", &self.count)
            .finish()
    }
}

impl SpillFile {
    /// Maps the file at `path` and verifies all of it (see [`verify`]).
    pub(crate) fn open(path: &Path) -> Result<SpillFile, SpillError> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        if len < HEADER as u64 {
            return Err(SpillError::Truncated(format!(
                "{len} bytes, shorter than the {HEADER}-byte header"
            )));
        }
        // SAFETY: the map is sound while nobody modifies or truncates the
        // file underneath it. The module's invariant: the file is private
        // to this process, was written completely before this call and is
        // never written again; it is unlinked only when this SpillFile
        // (the map's only owner) drops. `verify` then checks every byte we
        // will read, so a file damaged before the map is an error here.
        #[cfg(feature = "mvpbt-spill")]
        let map = unsafe { Map::map(&file)? };
        #[cfg(not(feature = "mvpbt-spill"))]
        let map: Map = fs::read(path)?.into();
        let count = verify(&map)?;
        // Nameless from here (see the module's invariant): nobody can
        // open it to shrink it under the map. `file` closes on return.
        fs::remove_file(path)?;
        Ok(SpillFile {
            map,
            path: path.to_path_buf(),
            count,
        })
    }

    /// Records in the file.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// The file's size in bytes.
    pub(crate) fn bytes(&self) -> u64 {
        self.map.len() as u64
    }

    /// Where it lies.
    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    #[inline]
    fn offset(&self, i: usize) -> usize {
        let at = HEADER + 8 * i;
        u64::from_le_bytes(self.map[at..at + 8].try_into().expect("8 bytes")) as usize
    }

    /// Record `i`'s key (borrowed from the map).
    #[inline]
    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let o = self.offset(i);
        let len = u32::from_le_bytes(self.map[o..o + 4].try_into().expect("4 bytes")) as usize;
        &self.map[o + FIXED..o + FIXED + len]
    }

    /// Record `i`, decoded.
    #[inline]
    pub(crate) fn record(&self, i: usize) -> Fixed {
        decode_fixed(&self.map[self.offset(i)..])
    }

    /// The first position whose key is not `< key` (`incl`: not `<= key`).
    pub(crate) fn lower(&self, key: &[u8], incl: bool) -> usize {
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let k = self.key(mid);
            if k < key || (incl && k == key) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// Tests: the spill files under `dir` this process has mapped now, read
/// from `/proc/self/maps` (they have no names in `dir` any more; a mapped
/// file shows there as `<path> (deleted)`).
#[cfg(test)]
pub(crate) fn mapped_files(dir: &Path) -> usize {
    let maps = fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    let dir = dir.to_string_lossy();
    maps.lines()
        .filter_map(|l| l.find('/').map(|at| &l[at..]))
        .map(|p| p.strip_suffix(" (deleted)").unwrap_or(p))
        .filter(|p| p.starts_with(&*dir) && p.ends_with(".mvpbt"))
        .collect::<std::collections::HashSet<_>>()
        .len()
}

fn decode_fixed(b: &[u8]) -> Fixed {
    let u = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    Fixed {
        ty: b[4],
        stamp: u(5),
        tuple: u(13),
        version: u(21),
        predecessor: u(29),
    }
}

/// Checks a whole file image: header, length, checksum, then the
/// structure (offsets in order and in bounds, keys strictly ascending,
/// valid record types, decided stamps). Returns the record count.
pub(crate) fn verify(b: &[u8]) -> Result<usize, SpillError> {
    if b.len() < HEADER {
        return Err(SpillError::Truncated(format!(
            "{} bytes, shorter than the {HEADER}-byte header",
            b.len()
        )));
    }
    if b[0..8] != MAGIC {
        return Err(SpillError::BadMagic);
    }
    let version = u32::from_le_bytes(b[8..12].try_into().expect("4 bytes"));
    if version != FORMAT_VERSION {
        return Err(SpillError::BadVersion(version));
    }
    let count = u64::from_le_bytes(b[16..24].try_into().expect("8 bytes"));
    let body = u64::from_le_bytes(b[24..32].try_into().expect("8 bytes"));
    let have = (b.len() - HEADER) as u64;
    if have < body {
        return Err(SpillError::Truncated(format!(
            "a body of {have} bytes, the header says {body}"
        )));
    }
    if have > body {
        return Err(SpillError::Malformed(format!(
            "{} bytes after the body",
            have - body
        )));
    }
    if b[12..16] != [0; 4] || b[36..40] != [0; 4] {
        return Err(SpillError::Malformed(
            "reserved header bytes are set".into(),
        ));
    }
    let stored = u32::from_le_bytes(b[32..36].try_into().expect("4 bytes"));
    let computed = crc32c::crc32c_append(crc32c::crc32c(&b[0..32]), &b[HEADER..]);
    if stored != computed {
        return Err(SpillError::Checksum { stored, computed });
    }
    let bad = |m: String| Err(SpillError::Malformed(m));
    let Some(table) = count.checked_mul(8).filter(|t| *t <= body) else {
        return bad(format!("{count} records do not fit {body} bytes"));
    };
    let count = count as usize;
    let mut at = HEADER + table as usize;
    let mut prev: Option<&[u8]> = None;
    for i in 0..count {
        let o = HEADER + 8 * i;
        let off = u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        if off != at as u64 || b.len() - at < FIXED {
            return bad(format!("record {i} at {off}, expected {at}"));
        }
        let len = u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes")) as usize;
        if b.len() - at - FIXED < len {
            return bad(format!("record {i}'s key runs past the end"));
        }
        let f = decode_fixed(&b[at..]);
        if f.ty > 3 || f.stamp & TID_MARK != 0 {
            return bad(format!("record {i}: type {} stamp {:#x}", f.ty, f.stamp));
        }
        let key = &b[at + FIXED..at + FIXED + len];
        if prev.is_some_and(|p| p >= key) {
            return bad(format!("record {i} out of key order"));
        }
        prev = Some(key);
        at += FIXED + len;
    }
    if at != b.len() {
        return bad(format!("{} bytes after the last record", b.len() - at));
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_root(name: &str) -> PathBuf {
        static N: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "strata-spill-test-{}-{name}-{}",
            std::process::id(),
            N.fetch_add(1, Relaxed)
        ));
        let _ = fs::remove_dir_all(&p);
        p
    }

    fn sample(n: u64) -> Vec<(Vec<u8>, Fixed)> {
        (0..n)
            .map(|i| {
                let key = format!("key-{i:05}").into_bytes();
                let f = Fixed {
                    ty: (i % 4) as u8,
                    stamp: 100 + i,
                    tuple: i * 7,
                    version: 0x1000 + i * 64,
                    predecessor: i * 3,
                };
                (key, f)
            })
            .collect()
    }

    fn borrowed(v: &[(Vec<u8>, Fixed)]) -> Vec<(&[u8], Fixed)> {
        v.iter().map(|(k, f)| (&k[..], *f)).collect()
    }

    /// Writes `n` records to a file and returns its bytes.
    fn image(n: u64) -> Vec<u8> {
        let root = temp_root("image");
        fs::create_dir_all(&root).unwrap();
        let p = root.join("x.mvpbt");
        write(&p, &borrowed(&sample(n))).unwrap();
        let b = fs::read(&p).unwrap();
        fs::remove_dir_all(&root).unwrap();
        b
    }

    /// Every record comes back as written, through the map, and the
    /// binary search finds each key; the file goes with its SpillFile.
    #[test]
    fn round_trip_through_the_map() {
        for n in [0u64, 1, 2, 100] {
            let root = temp_root("rt");
            let dir = SpillDir::open(&root).unwrap();
            let recs = sample(n);
            let f = dir.spill("t-i", &borrowed(&recs)).unwrap();
            assert_eq!(f.len(), n as usize);
            assert!(!f.path().exists(), "unlinked once mapped");
            assert_eq!(mapped_files(dir.path()), 1);
            assert_eq!(f.bytes(), HEADER as u64 + body_len(&borrowed(&recs)));
            for (i, (k, r)) in recs.iter().enumerate() {
                assert_eq!(f.key(i), &k[..]);
                assert_eq!(f.record(i), *r);
                assert_eq!(f.lower(k, false), i);
                assert_eq!(f.lower(k, true), i + 1);
            }
            assert_eq!(f.lower(b"a", false), 0);
            assert_eq!(f.lower(b"z", false), n as usize);
            drop(f);
            assert_eq!(mapped_files(dir.path()), 0, "unmapped on drop");
            let inst = dir.path().to_path_buf();
            drop(dir);
            assert!(
                !inst.exists(),
                "the instance directory goes with the database"
            );
            fs::remove_dir_all(&root).unwrap();
        }
    }

    #[test]
    fn a_truncated_file_is_a_typed_error() {
        let b = image(10);
        for cut in [0, 7, HEADER - 1, HEADER, HEADER + 8, b.len() - 1] {
            assert!(
                matches!(verify(&b[..cut]), Err(SpillError::Truncated(_))),
                "cut at {cut}: {:?}",
                verify(&b[..cut])
            );
        }
        assert_eq!(verify(&b), Ok(10));
        // Through a real file and the map too.
        let root = temp_root("trunc");
        fs::create_dir_all(&root).unwrap();
        let p = root.join("x.mvpbt");
        fs::write(&p, &b[..b.len() - 3]).unwrap();
        assert!(matches!(SpillFile::open(&p), Err(SpillError::Truncated(_))));
        fs::write(&p, &b[..5]).unwrap();
        assert!(matches!(SpillFile::open(&p), Err(SpillError::Truncated(_))));
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_flipped_byte_is_a_typed_error() {
        let b = image(10);
        // Anywhere after the magic and the version: header fields, the
        // offsets, fixed fields, keys.
        for at in (12..b.len()).step_by(7).chain([b.len() - 1]) {
            let mut c = b.clone();
            c[at] ^= 0x20;
            let e = verify(&c).expect_err("a flipped byte");
            assert!(e.is_corrupt(), "{e}");
            assert!(
                matches!(
                    e,
                    SpillError::Checksum { .. }
                        | SpillError::Truncated(_)
                        | SpillError::Malformed(_)
                ),
                "byte {at}: {e:?}"
            );
            assert!(matches!(Error::from(e), Error::Corrupt(_)));
        }
        // A flipped key byte alone: the checksum catches it.
        let mut c = b.clone();
        let last = c.len() - 1;
        c[last] ^= 1;
        assert!(matches!(verify(&c), Err(SpillError::Checksum { .. })));
    }

    #[test]
    fn a_wrong_magic_or_version_is_a_typed_error() {
        let b = image(3);
        let mut c = b.clone();
        c[0] = b'X';
        assert_eq!(verify(&c), Err(SpillError::BadMagic));
        let mut c = b.clone();
        c[8] = 9;
        assert_eq!(verify(&c), Err(SpillError::BadVersion(9)));
        assert_eq!(verify(&[0u8; HEADER]), Err(SpillError::BadMagic));
    }

    /// A consistent checksum over an inconsistent structure (written by a
    /// buggy writer) is still refused.
    #[test]
    fn a_malformed_body_with_a_good_checksum_is_refused() {
        let mut b = image(3);
        // Record 1's type to 7, then re-seal the checksum.
        let off = u64::from_le_bytes(b[HEADER + 8..HEADER + 16].try_into().unwrap()) as usize;
        b[off + 4] = 7;
        let crc = crc32c::crc32c_append(crc32c::crc32c(&b[0..32]), &b[HEADER..]);
        b[32..36].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(verify(&b), Err(SpillError::Malformed(_))));
    }

    /// The spill directory: a file in its place is refused at open; stale
    /// instance directories (their lock free) go, live ones stay.
    #[test]
    fn the_directory_is_checked_and_stale_instances_go() {
        let root = temp_root("dir");
        fs::create_dir_all(root.parent().unwrap()).unwrap();
        fs::write(&root, b"not a dir").unwrap();
        assert!(matches!(
            SpillDir::open(&root),
            Err(Error::InvalidConfig(_))
        ));
        fs::remove_file(&root).unwrap();
        // Something under a file cannot be created.
        fs::write(&root, b"x").unwrap();
        assert!(matches!(
            SpillDir::open(&root.join("sub")),
            Err(Error::Io { .. })
        ));
        fs::remove_file(&root).unwrap();

        let live = SpillDir::open(&root).unwrap();
        // An earlier process's directory: its lock is free.
        let stale = root.join(format!("{PREFIX}999999999-0"));
        fs::create_dir_all(&stale).unwrap();
        fs::write(stale.join("lock"), b"").unwrap();
        fs::write(stale.join("t-i-0.mvpbt"), b"old").unwrap();
        let other = SpillDir::open(&root).unwrap();
        assert!(!stale.exists(), "stale spill files are removed at open");
        assert!(live.path().exists(), "a live database's directory stays");
        assert_ne!(live.path(), other.path());
        drop((live, other));
        assert_eq!(fs::read_dir(&root).unwrap().count(), 0);
        fs::remove_dir_all(&root).unwrap();
    }

    /// A file damaged between its write and its map is refused and
    /// removed.
    #[test]
    fn damage_before_the_map_is_caught() {
        let root = temp_root("tamper");
        let dir = SpillDir::open(&root).unwrap();
        *dir.tamper.lock() = Some(Box::new(|p: &Path| {
            let f = OpenOptions::new().write(true).open(p).unwrap();
            let len = f.metadata().unwrap().len();
            f.set_len(len - 1).unwrap();
        }));
        let recs = sample(5);
        let e = dir.spill("t-i", &borrowed(&recs)).unwrap_err();
        assert!(matches!(e, SpillError::Truncated(_)), "{e:?}");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "only the lock is left"
        );
        drop(dir);
        fs::remove_dir_all(&root).unwrap();
    }

    /// What another process sees of a mapped spill file: nothing to open
    /// and truncate (truncating a mapped file makes this process's next
    /// read of it fault with SIGBUS). The directory holds only the lock
    /// while the records are read back intact from the nameless file.
    #[test]
    fn a_mapped_file_has_no_name_to_truncate() {
        let root = temp_root("nameless");
        let dir = SpillDir::open(&root).unwrap();
        let recs = sample(50);
        let files: Vec<SpillFile> = (0..3)
            .map(|_| dir.spill("t-i", &borrowed(&recs)).unwrap())
            .collect();
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["lock"], "no spill file can be opened by name");
        assert_eq!(mapped_files(dir.path()), 3);
        for f in &files {
            for (i, (k, r)) in recs.iter().enumerate() {
                assert_eq!((f.key(i), f.record(i)), (&k[..], *r));
            }
        }
        drop(files);
        assert_eq!(mapped_files(dir.path()), 0);
        drop(dir);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn stems_are_file_name_safe() {
        assert_eq!(stem("a/b", "c d.e"), "a_b-c_d_e");
    }
}
