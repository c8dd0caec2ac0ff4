//! Log segment files: writing, rotation, and reading back with torn-tail
//! and truncation detection.
//!
//! ```text
//!  log-00000000000000000000.seg             log-00000000000067108904.seg
//!  ┌──────────────────────┬─────┬───┬──────┐ ┌──────────────────────┬─────┬─ ─ ─
//!  │ header   start=0     │ rec │ … │ seal │ │ header   start=E     │ rec │ (open)
//!  │ mark A / mark B      │     │   │end=E │ │ mark A / mark B      │     │
//!  │ (durable end, sealed)│     │   │      │ │ (durable end)        │     │
//!  └──────────────────────┴─────┴───┴──────┘ └──────────────────────┴─────┴─ ─ ─
//!   0     512    1024     4096
//! ```
//!
//! Format 2 (`STRLSEG2`). A record's LSN is `start + (file offset - 4096)`.
//! The name and the header both carry the start LSN.
//!
//! **Creation and rotation.** A segment is written whole (header and both
//! marks) under a `.tmp` name, fsynced, and renamed into place, so a
//! segment shorter than its header never comes from a crash: it is
//! `Error::Corrupt`. Rotation creates the next segment this way first, then
//! writes the seal into the old one, fsyncs, and only then records "sealed"
//! in the old one's mark: so a sealed segment with no successor, or a mark
//! saying sealed with no seal, means damage, and an unsealed segment
//! followed by a header-only successor is a rotation a crash interrupted.
//!
//! **Durable-end marks.** Each flush writes, together with its records and
//! before its fsync, a mark naming the end the *previous* fsync made
//! durable; a clean close writes the final end and fsyncs. Marks alternate
//! between two slots (offsets 512 and 1024, separate sectors), each with a
//! CRC, so a write torn by a crash leaves the other, older one. The
//! invariant: **a mark on disk never exceeds what is durable on disk**. So
//! a log that ends (or is damaged) below its last segment's mark was
//! truncated or damaged after the fact, not by a crash: `Error::Corrupt`.
//! What a mark cannot cover: after a crash, the records of the last flush
//! (fsynced, but the mark naming them was not yet written) look exactly
//! like an interrupted write if they are cut at a record boundary.
//!
//! Reading back, a damaged record is a **torn tail** only in the last
//! segment, at or past its mark, and only if nothing valid (no record
//! header whose LSN matches its position, no seal) follows it; then it is
//! cut off and reported. Anything else is `Error::Corrupt` naming the file
//! and offset. A format-1 segment (older Strata) is
//! `Error::UnsupportedFormat`.

use super::record::{corrupt, parse_header, CResult, HEADER_BYTES as REC_HEADER};
use crate::error::Error;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const SEG_MAGIC: u64 = u64::from_le_bytes(*b"STRLSEG2");
/// The segment magic without its format digit.
const SEG_MAGIC_STEM: &[u8; 7] = b"STRLSEG";
const SEAL_MAGIC: u64 = u64::from_le_bytes(*b"STRLSEAL");
const MARK_MAGIC: u64 = u64::from_le_bytes(*b"STRLMARK");
/// Mark flag: the segment is sealed at the mark's LSN and has a successor.
const SEALED: u64 = 1;
/// The two mark slots, in different sectors.
const MARK_AT: [u64; 2] = [512, 1024];
/// Bytes before the first record: the header block and the marks.
pub const SEG_HEADER: u64 = 4096;

pub fn segment_name(start: u64) -> String {
    format!("log-{start:020}.seg")
}

fn block32(magic: u64, lsn: u64, flags: u64) -> [u8; 32] {
    let mut b = [0u8; 32];
    b[0..8].copy_from_slice(&magic.to_le_bytes());
    b[8..16].copy_from_slice(&lsn.to_le_bytes());
    b[16..24].copy_from_slice(&flags.to_le_bytes());
    let crc = crc32c::crc32c(&b[0..28]);
    b[28..32].copy_from_slice(&crc.to_le_bytes());
    b
}

/// `(lsn, flags)` of a valid block with this magic at the start of `b`.
fn parse_block32(b: &[u8], magic: u64) -> Option<(u64, u64)> {
    if b.len() < 32 || u64::from_le_bytes(b[0..8].try_into().unwrap()) != magic {
        return None;
    }
    let crc = u32::from_le_bytes(b[28..32].try_into().unwrap());
    (crc32c::crc32c(&b[0..28]) == crc).then(|| {
        (
            u64::from_le_bytes(b[8..16].try_into().unwrap()),
            u64::from_le_bytes(b[16..24].try_into().unwrap()),
        )
    })
}

/// The valid marks of a segment's first `SEG_HEADER` bytes, by slot.
fn parse_marks(head: &[u8]) -> [Option<(u64, u64)>; 2] {
    MARK_AT.map(|at| parse_block32(head.get(at as usize..)?, MARK_MAGIC))
}

/// fsyncs a directory, so that created, renamed and removed names persist.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// `log-*.seg` files of `dir`, by start LSN (from the name).
pub fn list_segments(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut v = Vec::new();
    for e in fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(n) = name
            .strip_prefix("log-")
            .and_then(|s| s.strip_suffix(".seg"))
        {
            if let Ok(start) = n.parse::<u64>() {
                v.push((start, e.path()));
            }
        }
    }
    v.sort();
    Ok(v)
}

/// Removes `log-*.seg.tmp` files: segments a crash interrupted before
/// their rename (never part of the log).
pub fn remove_partial_segments(dir: &Path) {
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let n = e.file_name();
            let Some(n) = n.to_str() else { continue };
            if n.starts_with("log-") && n.ends_with(".seg.tmp") {
                let _ = fs::remove_file(e.path());
            }
        }
    }
}

/// Writes a new segment starting at `start` whole (header, both marks at
/// `start`) under a temporary name, fsyncs it and renames it into place.
fn create_segment(dir: &Path, start: u64) -> io::Result<File> {
    let name = segment_name(start);
    let tmp = dir.join(format!("{name}.tmp"));
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)?;
    let mut head = vec![0u8; SEG_HEADER as usize];
    head[..32].copy_from_slice(&block32(SEG_MAGIC, start, 0));
    for at in MARK_AT {
        head[at as usize..at as usize + 32].copy_from_slice(&block32(MARK_MAGIC, start, 0));
    }
    f.write_all(&head)?;
    f.sync_all()?;
    fs::rename(&tmp, dir.join(&name))?;
    sync_dir(dir)?;
    Ok(f)
}

/// Copies the log's records with LSNs in `[lo, hi)` from the segments in
/// `from` into one new segment starting at `lo` in `to` (a backup: see
/// `Log::backup`), fsynced and closed. `[lo, hi)` must be durable in
/// `from` and start at a record boundary; the bytes are copied as they
/// are (a record's LSN is its place, so the copy keeps every one valid).
/// Segments past `hi` may still be growing: nothing beyond `hi` is read.
pub fn copy_range(from: &Path, to: &Path, lo: u64, hi: u64) -> io::Result<u64> {
    let segs = list_segments(from)?;
    let mut w = SegmentWriter::resume(to, lo, lo, u64::MAX, None)?;
    let mut buf = Vec::new();
    for (i, (start, path)) in segs.iter().enumerate() {
        let next = segs.get(i + 1).map_or(u64::MAX, |s| s.0);
        let (a, b) = (lo.max(*start), hi.min(next));
        if a >= b {
            continue;
        }
        buf.resize((b - a) as usize, 0);
        File::open(path)?.read_exact_at(&mut buf, SEG_HEADER + (a - start))?;
        w.append(&buf)?;
    }
    if w.end != hi {
        return Err(io::Error::other(format!(
            "the log holds LSNs {lo}..{} of the {lo}..{hi} a backup needs",
            w.end
        )));
    }
    w.sync()?;
    w.close()?;
    Ok(hi - lo)
}

/// Appends batches of records to the current segment, rotating as it fills.
pub struct SegmentWriter {
    dir: PathBuf,
    file: File,
    start: u64,
    /// LSN of the next byte to write.
    pub end: u64,
    /// Everything below this LSN is durable (fsynced).
    synced: u64,
    /// The largest mark written to the current segment, and the slot the
    /// next one goes to (the one holding the older mark).
    marked: u64,
    slot: usize,
    segment_bytes: u64,
    /// Fault injection for tests (`LogTuning::max_log_bytes`).
    budget: Option<u64>,
    pub bytes_written: u64,
}

impl SegmentWriter {
    /// Continues the segment starting at `start` at LSN `end`, cutting
    /// anything after it (a torn tail); creates it if the log is empty.
    /// Called only once recovery has validated the whole log.
    pub fn resume(
        dir: &Path,
        start: u64,
        end: u64,
        segment_bytes: u64,
        budget: Option<u64>,
    ) -> io::Result<Self> {
        let path = dir.join(segment_name(start));
        let file = if path.exists() {
            OpenOptions::new().read(true).write(true).open(&path)?
        } else {
            create_segment(dir, start)?
        };
        let mut head = vec![0u8; SEG_HEADER as usize];
        file.read_exact_at(&mut head, 0)?;
        let marks = parse_marks(&head);
        let value = |i: usize| marks[i].map_or(0, |m| m.0);
        file.set_len(SEG_HEADER + (end - start))?;
        file.sync_all()?;
        Ok(SegmentWriter {
            dir: dir.to_path_buf(),
            file,
            start,
            end,
            synced: end,
            marked: value(0).max(value(1)),
            // Overwrite the older (or damaged) slot first.
            slot: usize::from(value(1) < value(0)),
            segment_bytes,
            budget,
            bytes_written: 0,
        })
    }

    /// Writes `bytes` (whole records) at LSN `self.end`.
    pub fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        if let Some(b) = self.budget {
            if self.bytes_written + bytes.len() as u64 > b {
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "no space left on device (injected by LogTuning::max_log_bytes)",
                ));
            }
        }
        self.file
            .write_all_at(bytes, SEG_HEADER + (self.end - self.start))?;
        self.end += bytes.len() as u64;
        self.bytes_written += bytes.len() as u64;
        Ok(())
    }

    fn write_mark(&mut self, lsn: u64, flags: u64) -> io::Result<()> {
        self.file
            .write_all_at(&block32(MARK_MAGIC, lsn, flags), MARK_AT[self.slot])?;
        self.slot ^= 1;
        self.marked = lsn;
        Ok(())
    }

    /// Makes everything appended so far durable; rotates a full segment.
    pub fn sync(&mut self) -> io::Result<()> {
        // The mark rides on this fsync but names only what the previous
        // one made durable: a crash during this flush may lose this
        // flush's records, never the ones a mark on disk covers.
        if self.synced > self.marked {
            self.write_mark(self.synced, 0)?;
        }
        self.file.sync_data()?;
        self.synced = self.end;
        if self.end - self.start >= self.segment_bytes {
            self.rotate()?;
        }
        Ok(())
    }

    /// Clean close: records the final durable end, so that any later
    /// truncation of the log is detected.
    pub fn close(&mut self) -> io::Result<()> {
        if self.synced > self.marked {
            self.write_mark(self.synced, 0)?;
            self.file.sync_data()?;
        }
        Ok(())
    }

    fn rotate(&mut self) -> io::Result<()> {
        let f = create_segment(&self.dir, self.end)?;
        // Only now seal the old one (see the module doc for why this order),
        // and only once the seal is durable say so in its header.
        self.file.write_all_at(
            &block32(SEAL_MAGIC, self.end, 0),
            SEG_HEADER + (self.end - self.start),
        )?;
        self.file.sync_data()?;
        self.write_mark(self.end, SEALED)?;
        self.file.sync_data()?;
        self.file = f;
        self.start = self.end;
        self.marked = self.end;
        self.slot = 0;
        Ok(())
    }
}

/// A record read back from the log.
pub struct LogRecord<'a> {
    pub lsn: u64,
    pub cts: u64,
    pub payload: &'a [u8],
}

/// A damaged tail that was cut off: what a crash during a write leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// The segment file that ended in a damaged or partial record.
    pub segment: PathBuf,
    /// File offset where the valid log ends.
    pub offset: u64,
    /// The LSN range cut off: `lsn..end_lsn`. Writing resumes at `lsn`.
    pub lsn: u64,
    pub end_lsn: u64,
    /// Bytes cut off (`end_lsn - lsn`).
    pub bytes: u64,
    /// What was found at `lsn`: "partial record (100 of 180 bytes)",
    /// "record fails its CRC", ... Nothing valid follows it.
    pub damage: String,
    /// The log was durable up to this LSN (the segment's durable-end mark);
    /// the cut starts at or after it, so it holds only records of the last
    /// flush, which a crash may lose (never acknowledged under GroupCommit
    /// unless that flush's fsync had returned).
    pub durable_lsn: u64,
}

impl std::fmt::Display for TornTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cut LSN {}..{} ({} bytes at offset {} of {}): {}; the log was durable up to LSN {}",
            self.lsn,
            self.end_lsn,
            self.bytes,
            self.offset,
            self.segment.display(),
            self.damage,
            self.durable_lsn
        )
    }
}

/// What a scan of the log found.
pub struct ScanEnd {
    /// LSN after the last valid record.
    pub end: u64,
    /// Start LSN of the segment that holds `end` (the one to resume).
    pub last_start: u64,
    pub torn: Option<TornTail>,
    /// Bytes of log read.
    pub bytes: u64,
}

/// Checks a segment's header; returns its durable-end mark and, if its
/// header says it was sealed, the LSN of the seal.
fn check_header(path: &Path, data: &[u8], start: u64) -> CResult<(u64, Option<u64>)> {
    if data.len() >= 8 && data[..7] == SEG_MAGIC_STEM[..] && data[7] != b'2' {
        return Err(Error::UnsupportedFormat(format!(
            "{}: a log segment of format {} (written by another Strata version); \
             this version reads format 2 only",
            path.display(),
            char::from(data[7]).escape_default()
        )));
    }
    if (data.len() as u64) < SEG_HEADER {
        return Err(corrupt(format!(
            "{}: {} bytes, shorter than a segment header ({SEG_HEADER} bytes): the file was \
             truncated (a crash cannot leave this: segments are created whole and renamed \
             into place)",
            path.display(),
            data.len()
        )));
    }
    match parse_block32(data, SEG_MAGIC) {
        Some((s, _)) if s == start => {}
        Some((s, _)) => {
            return Err(corrupt(format!(
                "{}: header says it starts at LSN {s}, its name says {start}",
                path.display()
            )))
        }
        None => {
            return Err(corrupt(format!(
                "{}: damaged segment header at offset 0",
                path.display()
            )))
        }
    }
    let marks = parse_marks(data);
    let Some(durable) = marks.iter().flatten().map(|m| m.0).max() else {
        return Err(corrupt(format!(
            "{}: both durable-end marks (offsets {} and {}) are damaged",
            path.display(),
            MARK_AT[0],
            MARK_AT[1]
        )));
    };
    if durable < start {
        return Err(corrupt(format!(
            "{}: its durable-end mark (LSN {durable}) lies before its start (LSN {start})",
            path.display()
        )));
    }
    let sealed = marks
        .iter()
        .flatten()
        .find(|m| m.1 & SEALED != 0)
        .map(|m| m.0);
    Ok((durable, sealed))
}

/// Reads every record with LSN >= `from` in order and passes it to `f`.
/// `segs` is `list_segments`' answer. `from` must lie in the first segment
/// (or at its start when the log is empty). Reads only; changes nothing.
pub fn scan(
    segs: &[(u64, PathBuf)],
    from: u64,
    mut f: impl FnMut(LogRecord<'_>) -> CResult<()>,
) -> CResult<ScanEnd> {
    let io_err = |p: &Path, e: io::Error| Error::io(format!("reading {}", p.display()), e);
    let mut expected_start = segs.first().map(|s| s.0).unwrap_or(0);
    let mut total = 0;
    for (i, (start, path)) in segs.iter().enumerate() {
        let last = i + 1 == segs.len();
        if *start != expected_start {
            return Err(corrupt(format!(
                "log segment {} is missing (expected a segment starting at LSN {expected_start} before {})",
                segment_name(expected_start),
                path.display()
            )));
        }
        let data = fs::read(path).map_err(|e| io_err(path, e))?;
        total += data.len() as u64;
        let (durable, sealed_mark) = check_header(path, &data, *start)?;
        let mut pos = SEG_HEADER as usize;
        let mut lsn = *start;
        let mut sealed = None;
        while pos < data.len() {
            let rest = &data[pos..];
            if let Some((end, _)) = parse_block32(rest, SEAL_MAGIC) {
                if end != lsn || pos + 32 != data.len() {
                    return Err(corrupt(format!(
                        "{}: seal at offset {pos} says the segment ends at LSN {end}, its records end at {lsn}",
                        path.display()
                    )));
                }
                sealed = Some(end);
                break;
            }
            let ok = parse_header(rest).filter(|h| {
                h.lsn == lsn
                    && h.total <= rest.len()
                    && crc32c::crc32c(&rest[REC_HEADER..h.total]) == h.payload_crc
            });
            let Some(h) = ok else {
                let why = damage(rest, lsn);
                if !last || valid_after(&data, pos, *start) {
                    return Err(corrupt(format!(
                        "{}: {why} at offset {pos} (LSN {lsn}), and valid log follows it; \
                         refusing to drop committed transactions",
                        path.display()
                    )));
                }
                if lsn < durable {
                    return Err(corrupt(format!(
                        "{}: {why} at offset {pos} (LSN {lsn}), but the log was durable up to \
                         LSN {durable} (the segment's durable-end mark): committed transactions \
                         were damaged after they were written, not by a crash",
                        path.display()
                    )));
                }
                let bytes = (data.len() - pos) as u64;
                return Ok(ScanEnd {
                    end: lsn,
                    last_start: *start,
                    torn: Some(TornTail {
                        segment: path.clone(),
                        offset: pos as u64,
                        lsn,
                        end_lsn: lsn + bytes,
                        bytes,
                        damage: why,
                        durable_lsn: durable,
                    }),
                    bytes: total,
                });
            };
            if lsn >= from {
                f(LogRecord {
                    lsn,
                    cts: h.cts,
                    payload: &rest[REC_HEADER..h.total],
                })?;
            }
            pos += h.total;
            lsn += h.total as u64;
        }
        if lsn < durable {
            return Err(corrupt(format!(
                "{}: its records end at LSN {lsn} (offset {pos}) but the log was durable up to \
                 LSN {durable} (the segment's durable-end mark): the file was truncated and \
                 {} bytes of committed transactions are missing",
                path.display(),
                durable - lsn
            )));
        }
        if let Some(at) = sealed_mark.filter(|&at| sealed != Some(at)) {
            return Err(corrupt(format!(
                "{}: its header records a seal at LSN {at}, but the seal is missing (the file \
                 was truncated at offset {pos}, LSN {lsn})",
                path.display()
            )));
        }
        match sealed {
            Some(end) if last => {
                return Err(corrupt(format!(
                    "{} is sealed but the next log segment {} is missing",
                    path.display(),
                    segment_name(end)
                )))
            }
            Some(end) => expected_start = end,
            // An unsealed segment may only be followed by one that starts
            // exactly where its records end (an interrupted rotation).
            None if last => {
                return Ok(ScanEnd {
                    end: lsn,
                    last_start: *start,
                    torn: None,
                    bytes: total,
                })
            }
            None => expected_start = lsn,
        }
    }
    Ok(ScanEnd {
        end: expected_start,
        last_start: expected_start,
        torn: None,
        bytes: total,
    })
}

fn damage(rest: &[u8], lsn: u64) -> String {
    if rest.len() < REC_HEADER {
        return format!("partial record header ({} bytes)", rest.len());
    }
    match parse_header(rest) {
        None if rest.iter().all(|&b| b == 0) => format!("{} zero bytes", rest.len()),
        None => "damaged record header".into(),
        Some(h) if h.lsn != lsn => format!("record header names LSN {}", h.lsn),
        Some(h) if h.total > rest.len() => {
            format!("partial record ({} of {} bytes)", rest.len(), h.total)
        }
        Some(_) => "record fails its CRC".into(),
    }
}

/// Whether a valid record header (at the LSN of its position) or a valid
/// seal exists anywhere after the damaged record at `pos`.
fn valid_after(data: &[u8], pos: usize, start: u64) -> bool {
    let mut q = pos + 8;
    while q + REC_HEADER <= data.len() {
        let at_lsn = start + (q as u64 - SEG_HEADER);
        if parse_header(&data[q..]).is_some_and(|h| h.lsn == at_lsn)
            || parse_block32(&data[q..], SEAL_MAGIC).is_some()
        {
            return true;
        }
        q += 8;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::record::{seal, CommitBuilder};
    use crate::value::Value;

    /// A fresh directory, removed when the returned guard drops (so test
    /// runs leave nothing in the temp dir).
    fn tmp_dir(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("strata-seg-{name}-"))
            .tempdir()
            .unwrap()
    }

    fn record(lsn: u64, n: i64) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut b = CommitBuilder::new(&mut buf);
        b.put(1, &[Value::Int(n)]);
        b.finish();
        seal(&mut buf, lsn, n as u64);
        buf
    }

    fn marks_of(path: &Path) -> u64 {
        let data = fs::read(path).unwrap();
        check_header(path, &data, 0).unwrap().0
    }

    fn scan_all(dir: &Path) -> CResult<ScanEnd> {
        scan(&list_segments(dir).unwrap(), 0, |_| Ok(()))
    }

    /// The mark on disk lags one flush behind (never ahead of what is
    /// durable), and a clean close brings it to the end.
    #[test]
    fn marks_name_the_previous_flush_and_the_end_after_close() {
        let tmp = tmp_dir("marks");
        let d = tmp.path();
        let mut w = SegmentWriter::resume(d, 0, 0, 1 << 20, None).unwrap();
        let path = d.join(segment_name(0));
        let mut ends = vec![];
        for n in 0..3 {
            let r = record(w.end, n);
            w.append(&r).unwrap();
            w.sync().unwrap();
            ends.push(w.end);
            let expect = if n == 0 { 0 } else { ends[n as usize - 1] };
            assert_eq!(marks_of(&path), expect, "after flush {n}");
        }
        w.close().unwrap();
        assert_eq!(marks_of(&path), w.end);
        assert_eq!(scan_all(d).unwrap().end, w.end);
    }

    /// A crash between creating the next segment and sealing the old one
    /// leaves an unsealed segment followed by a header-only one: a clean
    /// end of the log, where writing resumes.
    #[test]
    fn interrupted_rotation_is_a_clean_end() {
        let tmp = tmp_dir("rotation");
        let d = tmp.path();
        let mut w = SegmentWriter::resume(d, 0, 0, 1 << 20, None).unwrap();
        for n in 0..4 {
            let r = record(w.end, n);
            w.append(&r).unwrap();
            w.sync().unwrap();
        }
        let end = w.end;
        drop(w);
        drop(create_segment(d, end).unwrap());
        let s = scan_all(d).unwrap();
        assert!(s.torn.is_none());
        assert_eq!((s.end, s.last_start), (end, end));
        let mut w = SegmentWriter::resume(d, end, end, 1 << 20, None).unwrap();
        let r = record(w.end, 9);
        w.append(&r).unwrap();
        w.sync().unwrap();
        assert_eq!(scan_all(d).unwrap().end, end + r.len() as u64);
    }

    /// A rotation leaves the old segment sealed, with "sealed" in its
    /// header too, so cutting off the seal is found.
    #[test]
    fn rotation_seals_and_records_it_in_the_header() {
        let tmp = tmp_dir("sealed");
        let d = tmp.path();
        let mut w = SegmentWriter::resume(d, 0, 0, 4096, None).unwrap();
        while list_segments(d).unwrap().len() < 2 {
            let r = record(w.end, 1);
            w.append(&r).unwrap();
            w.sync().unwrap();
        }
        let first = d.join(segment_name(0));
        let data = fs::read(&first).unwrap();
        let (durable, sealed) = check_header(&first, &data, 0).unwrap();
        assert_eq!((durable, sealed), (w.end, Some(w.end)));
        assert!(scan_all(d).is_ok());
        let f = OpenOptions::new().write(true).open(&first).unwrap();
        f.set_len(data.len() as u64 - 32).unwrap();
        let Err(Error::Corrupt(m)) = scan_all(d) else {
            panic!("a cut-off seal must be corrupt")
        };
        assert!(m.contains("seal is missing"), "{m}");
    }
}
