//! Recovery fuzzing: a real database directory (checkpoint, MANIFEST, log
//! segments written after the checkpoint) is damaged at random and then
//! opened. Every damage must end in a clean open or a typed error, never a
//! panic or an abort (an allocation sized by a crafted count aborts the
//! whole process, which fails this binary), and a refused open changes no
//! file.
//!
//! Random damage is mostly caught by CRCs, which would leave the decoders
//! untested. So the checkpoint's block CRCs, its file CRC and MANIFEST's
//! copy of it, and each log record's payload and header CRCs, are
//! recomputed after the damage ("resealed"): the decoders see bytes that
//! pass every checksum, as a crafted file would.
//!
//! The number of cases per target is bounded for the default run
//! (`CASES`); `STRATA_SOAK` multiplies it.

use crate::common;
use common::{soak, TestDir};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use strata::{
    row, Database, Durability, LogTuning, Options, Schema, SyncPolicy, Type, Unique, Value,
};

const CASES: u32 = 96;
const SEG_HEADER: usize = 4096;
/// Counts a damaged file might carry: the ones that find unclamped
/// allocations, off-by-ones and sign mistakes.
const INTERESTING: [u32; 7] = [0, 1, 2, 0x7fff_ffff, 0x8000_0000, 0xffff_fffe, 0xffff_ffff];

fn opts(d: &Path) -> Options {
    Options::default()
        .durability(Durability::Wal {
            dir: d.to_path_buf(),
            sync: SyncPolicy::GroupCommit,
        })
        .log_tuning(LogTuning {
            checkpoint_every_bytes: None,
            ..LogTuning::default()
        })
}

/// The files of a small database with every value type, a nullable
/// column, a secondary index, a checkpoint, and puts, updates, deletes and
/// a table created after the checkpoint (so the log holds commit and
/// catalog records the checkpoint does not).
fn pristine() -> &'static BTreeMap<String, Vec<u8>> {
    static FILES: OnceLock<BTreeMap<String, Vec<u8>>> = OnceLock::new();
    FILES.get_or_init(|| {
        let d = TestDir::new("strata-fuzz-pristine");
        {
            let db = Database::open(opts(&d)).unwrap();
            let t = db
                .create_table(
                    Schema::new("all")
                        .column("k", Type::Int)
                        .column("s", Type::Text)
                        .column("b", Type::Bytes)
                        .column("f", Type::Float)
                        .column("t", Type::Bool)
                        .nullable_column("n", Type::Int)
                        .primary_key(&["k"]),
                )
                .unwrap();
            db.create_index("by_s", &t, &["s"], Unique::No).unwrap();
            for k in 0..6i64 {
                db.run(|x| {
                    x.insert(
                        &t,
                        row![
                            k,
                            format!("s{k}"),
                            vec![k as u8; 3],
                            k as f64 / 2.0,
                            k % 2 == 0,
                            Value::Null
                        ],
                    )
                })
                .unwrap();
            }
            db.checkpoint().unwrap();
            db.run(|x| x.update(&t, &strata::key![1], &[("s", Value::from("one"))]))
                .unwrap();
            db.run(|x| x.delete(&t, &strata::key![2])).unwrap();
            db.run(|x| x.insert(&t, row![9, "nine", vec![9u8], 4.5, true, 7]))
                .unwrap();
            let u = db
                .create_table(Schema::new("u").column("k", Type::Text).primary_key(&["k"]))
                .unwrap();
            db.run(|x| x.insert(&u, row!["a"])).unwrap();
        }
        read_all(&d)
    })
}

fn read_all(d: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(d)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, fs::read(&p).unwrap())
        })
        .collect()
}

fn name_ending(files: &BTreeMap<String, Vec<u8>>, ext: &str) -> String {
    files
        .keys()
        .filter(|n| n.ends_with(ext))
        .max()
        .cloned()
        .unwrap_or_else(|| panic!("no {ext} file in {:?}", files.keys()))
}

/// One damage: where (a fraction of the target's length, so one strategy
/// fits files of any size) and what.
#[derive(Debug, Clone)]
enum Damage {
    Byte { at: f64, value: u8 },
    Count { at: f64, which: usize },
    Truncate { at: f64 },
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (0.0..1.0f64, any::<u8>()).prop_map(|(at, value)| Damage::Byte { at, value }),
        (0.0..1.0f64, 0..INTERESTING.len()).prop_map(|(at, which)| Damage::Count { at, which }),
        (0.0..1.0f64).prop_map(|at| Damage::Truncate { at }),
    ]
}

/// Applies `d` to `data[from..]` (so a segment's header can be spared).
fn apply(data: &mut Vec<u8>, from: usize, d: &Damage) {
    let span = data.len() - from;
    let pos = |at: f64| from + ((at * span as f64) as usize).min(span.saturating_sub(1));
    match *d {
        Damage::Byte { at, value } => {
            let i = pos(at);
            data[i] = value;
        }
        Damage::Count { at, which } => {
            let i = pos(at).min(data.len() - 4);
            data[i..i + 4].copy_from_slice(&INTERESTING[which].to_le_bytes());
        }
        Damage::Truncate { at } => data.truncate(pos(at)),
    }
}

fn put_u32(data: &mut [u8], at: usize, v: u32) {
    data[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Recomputes the checkpoint's block CRCs (as far as its block lengths
/// still make sense), then MANIFEST's copy of the file length and CRC.
/// MANIFEST: magic, begin, end, ts, len (u64 each), file CRC (u32), the
/// file name, and its own CRC as the last 4 bytes.
fn reseal_checkpoint(ckpt: &mut [u8], manifest: &mut [u8]) {
    let mut pos = 0;
    while pos + 8 <= ckpt.len() {
        let len = u32::from_le_bytes(ckpt[pos..pos + 4].try_into().unwrap()) as usize;
        if len > ckpt.len() - pos - 8 {
            break;
        }
        let crc = crc32c::crc32c(&ckpt[pos + 8..pos + 8 + len]);
        put_u32(ckpt, pos + 4, crc);
        pos += 8 + len;
    }
    manifest[32..40].copy_from_slice(&(ckpt.len() as u64).to_le_bytes());
    put_u32(manifest, 40, crc32c::crc32c(ckpt));
    let n = manifest.len();
    let crc = crc32c::crc32c(&manifest[..n - 4]);
    put_u32(manifest, n - 4, crc);
}

/// Recomputes every log record's payload CRC and header CRC, walking by the
/// records' (possibly damaged) lengths. Record header: magic, total (u32),
/// lsn, cts (u64), payload CRC, header CRC (u32).
fn reseal_segment(seg: &mut [u8]) {
    let mut pos = SEG_HEADER;
    while pos + 32 <= seg.len() {
        let total = u32::from_le_bytes(seg[pos + 4..pos + 8].try_into().unwrap()) as usize;
        if total < 40 || total > seg.len() - pos {
            break;
        }
        let crc = crc32c::crc32c(&seg[pos + 32..pos + total]);
        put_u32(seg, pos + 24, crc);
        let crc = crc32c::crc32c(&seg[pos..pos + 28]);
        put_u32(seg, pos + 28, crc);
        pos += total;
    }
}

/// Writes `files` to a fresh directory, opens it, and checks the outcome:
/// an open reads every table to the end; a refusal is a typed error and
/// leaves every file as it was.
fn open_damaged(files: &BTreeMap<String, Vec<u8>>) -> std::result::Result<(), TestCaseError> {
    // The tests run on parallel threads of one process: a directory each.
    static CASE: AtomicUsize = AtomicUsize::new(0);
    let d = TestDir::new(&format!(
        "strata-fuzz-case-{}",
        CASE.fetch_add(1, Ordering::Relaxed)
    ));
    fs::create_dir_all(&d).unwrap();
    for (name, data) in files {
        fs::write(d.join(name), data).unwrap();
    }
    match Database::open(opts(&d)) {
        Ok(db) => {
            let mut ro = db.begin_read_only().unwrap();
            for name in db.table_names() {
                let t = db.table(&name).unwrap();
                ro.scan(&t, ..).unwrap();
            }
        }
        Err(e) => {
            // Any variant is typed; what matters is that it is an error
            // with a message and nothing on disk moved.
            prop_assert!(!e.to_string().is_empty());
            prop_assert!(read_all(&d) == *files, "a refused open changed files: {e}");
        }
    }
    Ok(())
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES * soak(),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    /// A checkpoint damaged anywhere and resealed: its blocks' counts,
    /// lengths, tags and values reach the decoder.
    #[test]
    fn damaged_checkpoints_open_or_are_refused(d in damage()) {
        let mut files = pristine().clone();
        let name = name_ending(&files, ".dat");
        let mut ckpt = files[&name].clone();
        apply(&mut ckpt, 0, &d);
        let mut manifest = files["MANIFEST"].clone();
        reseal_checkpoint(&mut ckpt, &mut manifest);
        files.insert(name, ckpt);
        files.insert("MANIFEST".into(), manifest);
        open_damaged(&files)?;
    }

    /// A log record damaged after the segment header and resealed: the
    /// redo decoder and replay see counts, column positions and values
    /// that pass their CRCs.
    #[test]
    fn damaged_log_records_open_or_are_refused(d in damage(), resealed in any::<bool>()) {
        let mut files = pristine().clone();
        let name = name_ending(&files, ".seg");
        let mut seg = files[&name].clone();
        prop_assume!(seg.len() > SEG_HEADER + 32);
        apply(&mut seg, SEG_HEADER, &d);
        if resealed {
            reseal_segment(&mut seg);
        }
        files.insert(name, seg);
        open_damaged(&files)?;
    }

    /// MANIFEST and the segment header damaged as they lie (their CRCs are
    /// not recomputed): refused or, for a damaged durable-end mark that
    /// still parses, opened.
    #[test]
    fn damaged_headers_open_or_are_refused(d in damage(), manifest in any::<bool>()) {
        let mut files = pristine().clone();
        let name = if manifest { "MANIFEST".to_string() } else { name_ending(&files, ".seg") };
        let mut data = files[&name].clone();
        let end = if manifest { data.len() } else { SEG_HEADER.min(data.len()) };
        let mut head = data[..end].to_vec();
        apply(&mut head, 0, &d);
        data.splice(..end, head);
        files.insert(name, data);
        open_damaged(&files)?;
    }
}

/// The case the clamp exists for, pinned: a checkpoint rows block whose
/// row count says 4 billion (resealed, so it passes every CRC) is
/// `Error::Corrupt`, not an abort on `Vec::with_capacity`.
#[test]
fn a_checkpoint_row_count_of_four_billion_is_corrupt() {
    let mut files = pristine().clone();
    let name = name_ending(&files, ".dat");
    let mut ckpt = files[&name].clone();
    // Blocks are [len][crc][kind][...]; a rows block (kind 3) starts with
    // the table id, then the row count.
    let mut pos = 0;
    let mut patched = false;
    while pos + 8 < ckpt.len() {
        let len = u32::from_le_bytes(ckpt[pos..pos + 4].try_into().unwrap()) as usize;
        if ckpt[pos + 8] == 3 {
            put_u32(&mut ckpt, pos + 13, u32::MAX);
            patched = true;
            break;
        }
        pos += 8 + len;
    }
    assert!(patched, "no rows block in the checkpoint");
    let mut manifest = files["MANIFEST"].clone();
    reseal_checkpoint(&mut ckpt, &mut manifest);
    files.insert(name, ckpt);
    files.insert("MANIFEST".into(), manifest);
    let d = TestDir::new("strata-fuzz-rows");
    fs::create_dir_all(&d).unwrap();
    for (name, data) in &files {
        fs::write(d.join(name), data).unwrap();
    }
    match Database::open(opts(&d)) {
        Err(strata::Error::Corrupt(m)) => assert!(m.contains("checkpoint"), "{m}"),
        Err(e) => panic!("expected Error::Corrupt, got {e:?}"),
        Ok(_) => panic!("a row count past the block's end must be refused"),
    }
}
