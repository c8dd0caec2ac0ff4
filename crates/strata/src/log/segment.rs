//! Log segment files: writing, rotation, and reading back with torn-tail
//! detection.
//!
//! ```text
//!  log-00000000000000000000.seg          log-00000000000067108904.seg
//!  ┌────────┬──────┬──────┬───┬──────┐   ┌────────┬──────┬──────┬─ ─ ─
//!  │ header │ rec  │ rec  │ … │ seal │   │ header │ rec  │ rec  │  (open)
//!  │start=0 │      │      │   │end=E │   │start=E │      │      │
//!  └────────┴──────┴──────┴───┴──────┘   └────────┴──────┴──────┴─ ─ ─
//! ```
//!
//! A record's LSN is `start + (file offset - header)`. The name and the
//! header both carry the start LSN. Rotation first creates (and fsyncs) the
//! next segment, then writes the seal into the old one: so a sealed segment
//! with no successor means a deleted file (corruption), and an unsealed one
//! followed by an empty successor is a rotation interrupted by a crash.
//!
//! Reading back, a damaged record is a **torn tail** only in the last
//! segment and only if nothing valid (no record header whose LSN matches its
//! position, no seal) follows it; then it is cut off and reported. Anything
//! else is `Error::Corrupt` naming the file and offset.

use super::record::{corrupt, parse_header, CResult, HEADER_BYTES as REC_HEADER};
use crate::error::Error;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const SEG_MAGIC: u64 = u64::from_le_bytes(*b"STRLSEG1");
const SEAL_MAGIC: u64 = u64::from_le_bytes(*b"STRLSEAL");
pub const SEG_HEADER: u64 = 32;

pub fn segment_name(start: u64) -> String {
    format!("log-{start:020}.seg")
}

fn block32(magic: u64, lsn: u64) -> [u8; 32] {
    let mut b = [0u8; 32];
    b[0..8].copy_from_slice(&magic.to_le_bytes());
    b[8..16].copy_from_slice(&lsn.to_le_bytes());
    let crc = crc32c::crc32c(&b[0..28]);
    b[28..32].copy_from_slice(&crc.to_le_bytes());
    b
}

fn parse_block32(b: &[u8], magic: u64) -> Option<u64> {
    if b.len() < 32 || u64::from_le_bytes(b[0..8].try_into().unwrap()) != magic {
        return None;
    }
    let crc = u32::from_le_bytes(b[28..32].try_into().unwrap());
    (crc32c::crc32c(&b[0..28]) == crc).then(|| u64::from_le_bytes(b[8..16].try_into().unwrap()))
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

/// Appends batches of records to the current segment, rotating as it fills.
pub struct SegmentWriter {
    dir: PathBuf,
    file: File,
    start: u64,
    /// LSN of the next byte to write.
    pub end: u64,
    segment_bytes: u64,
    /// Fault injection for tests (`LogTuning::max_log_bytes`).
    budget: Option<u64>,
    pub bytes_written: u64,
}

impl SegmentWriter {
    /// Continues the segment at `path` (starting at `start`) at LSN `end`,
    /// cutting anything after it (a torn tail).
    pub fn resume(
        dir: &Path,
        start: u64,
        end: u64,
        segment_bytes: u64,
        budget: Option<u64>,
    ) -> io::Result<Self> {
        let path = dir.join(segment_name(start));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        let len = SEG_HEADER + (end - start);
        if file.metadata()?.len() < SEG_HEADER {
            file.write_all_at(&block32(SEG_MAGIC, start), 0)?;
        }
        file.set_len(len)?;
        file.sync_all()?;
        sync_dir(dir)?;
        Ok(SegmentWriter {
            dir: dir.to_path_buf(),
            file,
            start,
            end,
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

    /// Makes everything appended so far durable; rotates a full segment.
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()?;
        if self.end - self.start >= self.segment_bytes {
            self.rotate()?;
        }
        Ok(())
    }

    fn rotate(&mut self) -> io::Result<()> {
        let next = self.dir.join(segment_name(self.end));
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&next)?;
        f.write_all(&block32(SEG_MAGIC, self.end))?;
        f.sync_all()?;
        sync_dir(&self.dir)?;
        // Only now seal the old one (see the module doc for why this order).
        self.file.write_all_at(
            &block32(SEAL_MAGIC, self.end),
            SEG_HEADER + (self.end - self.start),
        )?;
        self.file.sync_data()?;
        self.file = f;
        self.start = self.end;
        Ok(())
    }
}

/// A record read back from the log.
pub struct LogRecord<'a> {
    pub lsn: u64,
    pub cts: u64,
    pub payload: &'a [u8],
}

/// A damaged tail that was cut off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// The segment file that ended in a damaged or partial record.
    pub segment: PathBuf,
    /// File offset where the valid log ends.
    pub offset: u64,
    /// LSN where the valid log ends (where writing resumes).
    pub lsn: u64,
    /// Bytes cut off.
    pub bytes: u64,
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

/// Reads every record with LSN >= `from` in order and passes it to `f`.
/// `segs` is `list_segments`' answer. `from` must lie in the first segment
/// (or at its start when the log is empty).
pub fn scan(
    segs: &[(u64, PathBuf)],
    from: u64,
    mut f: impl FnMut(LogRecord<'_>) -> CResult<()>,
) -> CResult<ScanEnd> {
    let io_err = |p: &Path, e: io::Error| Error::Io(format!("reading {}: {e}", p.display()));
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
        match parse_block32(&data, SEG_MAGIC) {
            Some(s) if s == *start => {}
            Some(s) => {
                return Err(corrupt(format!(
                    "{}: header says it starts at LSN {s}, its name says {start}",
                    path.display()
                )))
            }
            None if last && data.len() < SEG_HEADER as usize => {
                // Created by a rotation that a crash interrupted.
                return Ok(ScanEnd {
                    end: *start,
                    last_start: *start,
                    torn: (!data.is_empty()).then(|| TornTail {
                        segment: path.clone(),
                        offset: 0,
                        lsn: *start,
                        bytes: data.len() as u64,
                    }),
                    bytes: total,
                });
            }
            None => {
                return Err(corrupt(format!(
                    "{}: damaged segment header at offset 0",
                    path.display()
                )))
            }
        }
        let mut pos = SEG_HEADER as usize;
        let mut lsn = *start;
        let mut sealed = None;
        while pos < data.len() {
            let rest = &data[pos..];
            if let Some(end) = parse_block32(rest, SEAL_MAGIC) {
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
                return Ok(ScanEnd {
                    end: lsn,
                    last_start: *start,
                    torn: Some(TornTail {
                        segment: path.clone(),
                        offset: pos as u64,
                        lsn,
                        bytes: (data.len() - pos) as u64,
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
