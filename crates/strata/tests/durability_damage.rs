//! Durability, damaged files: torn tails, flipped bits, missing or cut
//! segments, checkpoints and manifests, logs of another format, each
//! refused with a typed error that names the file (or cut and reported,
//! for a torn tail), and a refused open that changes none of them.

use crate::common;
use crate::durability::*;
use common::{segments, TestDir};
use std::fs;
use std::path::Path;
use strata::{Database, Error, LogTuning, SyncPolicy};

#[test]
fn truncated_last_record_is_a_torn_tail_cut_and_reported() {
    let (d, _live) = ten_commits("torn");
    let seg = segments(&d).pop().unwrap();
    let len = fs::metadata(&seg).unwrap().len();
    set_len(&seg, len - 5);
    {
        let db = open(&d);
        let r = db.recovery_report().unwrap();
        let torn = r.torn_tail.clone().expect("reported");
        assert_eq!(torn.segment, seg);
        // The report says which LSN range was cut and what was there: the
        // last record, short of its last 5 bytes.
        let rec = len - SEG_HEADER - torn.lsn;
        assert_eq!(torn.offset, SEG_HEADER + torn.lsn, "{torn}");
        assert_eq!(torn.bytes, rec - 5, "{torn}");
        assert_eq!(torn.end_lsn, torn.lsn + torn.bytes, "{torn}");
        assert_eq!(r.log_end_lsn, torn.lsn);
        assert_eq!(
            torn.damage,
            format!("partial record ({} of {rec} bytes)", rec - 5),
            "{torn}"
        );
        assert!(torn.durable_lsn <= torn.lsn, "{torn}");
        let t = db.table("kv").unwrap();
        assert_eq!(get(&db, &t, 8), Some(80));
        assert_eq!(get(&db, &t, 9), None, "the torn commit is cut off");
        // New commits go after the cut, and the log stays readable.
        put(&db, &t, 9, 99);
    }
    let db = open(&d);
    assert!(db.recovery_report().unwrap().torn_tail.is_none());
    assert_eq!(get(&db, &db.table("kv").unwrap(), 9), Some(99));
}

#[test]
fn garbage_after_the_last_record_is_a_torn_tail() {
    let (d, _live) = ten_commits("zeros");
    let seg = segments(&d).pop().unwrap();
    let mut data = fs::read(&seg).unwrap();
    data.extend_from_slice(&[0u8; 300]);
    fs::write(&seg, data).unwrap();
    let db = open(&d);
    let torn = db.recovery_report().unwrap().torn_tail.unwrap();
    assert_eq!(torn.bytes, 300);
    assert_eq!(torn.damage, "300 zero bytes");
    assert_eq!(all(&db, &db.table("kv").unwrap()).len(), 10);
}

#[test]
fn bit_flip_in_the_last_record_is_a_torn_tail() {
    let (d, _live) = ten_commits("flip-last");
    let seg = segments(&d).pop().unwrap();
    let mut data = fs::read(&seg).unwrap();
    let n = data.len();
    data[n - 10] ^= 0x10;
    fs::write(&seg, data).unwrap();
    let db = open(&d);
    assert!(db.recovery_report().unwrap().torn_tail.is_some());
    assert_eq!(all(&db, &db.table("kv").unwrap()).len(), 9);
}

#[test]
fn bit_flip_before_the_tail_is_corrupt() {
    let (d, _live) = ten_commits("flip-mid");
    let seg = segments(&d).pop().unwrap();
    let mut data = fs::read(&seg).unwrap();
    // Inside the first record after the segment header (the catalog record).
    data[SEG_HEADER as usize + 40] ^= 0x01;
    fs::write(&seg, data).unwrap();
    match open_err(&d) {
        Error::Corrupt(m) => {
            assert!(
                m.contains("offset 4096") && m.contains("valid log follows"),
                "{m}"
            )
        }
        e => panic!("{e:?}"),
    }
    // A damaged header in the middle is found by its position too.
    let (d, _live) = ten_commits("flip-mid-header");
    let seg = segments(&d).pop().unwrap();
    let mut data = fs::read(&seg).unwrap();
    data[SEG_HEADER as usize + 9] ^= 0x80; // the LSN field of the first header
    fs::write(&seg, data).unwrap();
    assert!(matches!(open_err(&d), Error::Corrupt(_)));
}

/// Many small segments, no checkpoint.
fn rotated(name: &str) -> (TestDir, LogTuning) {
    let d = dir(name);
    let t = LogTuning {
        segment_bytes: 4096,
        checkpoint_every_bytes: None,
        ..LogTuning::default()
    };
    let db = Database::open(opts(&d, SyncPolicy::GroupCommit, t.clone())).unwrap();
    let kv = kv(&db);
    for k in 0..400 {
        put(&db, &kv, k, k);
    }
    assert!(segments(&d).len() >= 4);
    (d, t)
}

#[test]
fn missing_middle_segment_is_corrupt() {
    let (d, t) = rotated("miss-mid");
    fs::remove_file(&segments(&d)[1]).unwrap();
    let m = corrupt(Database::open(opts(&d, SyncPolicy::GroupCommit, t)).unwrap_err());
    assert!(m.contains("missing"), "{m}");
}

#[test]
fn missing_last_segment_is_corrupt() {
    let (d, t) = rotated("miss-last");
    fs::remove_file(segments(&d).pop().unwrap()).unwrap();
    let m = corrupt(Database::open(opts(&d, SyncPolicy::GroupCommit, t)).unwrap_err());
    assert!(m.contains("sealed") && m.contains("missing"), "{m}");
}

#[test]
fn missing_first_segment_without_checkpoint_is_corrupt() {
    let (d, t) = rotated("miss-first");
    fs::remove_file(&segments(&d)[0]).unwrap();
    let m = corrupt(Database::open(opts(&d, SyncPolicy::GroupCommit, t)).unwrap_err());
    assert!(m.contains("no checkpoint"), "{m}");
}

#[test]
fn truncated_middle_segment_is_corrupt() {
    let (d, t) = rotated("trunc-mid");
    let s = &segments(&d)[1];
    let len = fs::metadata(s).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(s)
        .unwrap()
        .set_len(len - 100)
        .unwrap();
    assert!(matches!(
        Database::open(opts(&d, SyncPolicy::GroupCommit, t)).unwrap_err(),
        Error::Corrupt(_)
    ));
}

/// A checkpoint of 100 rows, then 5 more commits in the log; small
/// segments, so the checkpoint removed the ones it covers.
fn checkpointed(name: &str) -> TestDir {
    let d = dir(name);
    let t = LogTuning {
        segment_bytes: 4096,
        ..tuning()
    };
    let db = Database::open(opts(&d, SyncPolicy::GroupCommit, t)).unwrap();
    let kv = kv(&db);
    for k in 0..100 {
        put(&db, &kv, k, k);
    }
    db.checkpoint().unwrap();
    for k in 100..105 {
        put(&db, &kv, k, k);
    }
    d
}

#[test]
fn bit_flipped_checkpoint_is_corrupt() {
    let d = checkpointed("ckpt-flip");
    let f = checkpoint_file(&d);
    let mut data = fs::read(&f).unwrap();
    let n = data.len();
    data[n / 2] ^= 0x04;
    fs::write(&f, data).unwrap();
    let m = corrupt(open_err(&d));
    assert!(m.contains("checkpoint") && m.contains("CRC"), "{m}");
}

#[test]
fn truncated_checkpoint_is_corrupt() {
    let d = checkpointed("ckpt-trunc");
    let f = checkpoint_file(&d);
    let len = fs::metadata(&f).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&f)
        .unwrap()
        .set_len(len - 1)
        .unwrap();
    let m = corrupt(open_err(&d));
    assert!(m.contains("MANIFEST says"), "{m}");
}

#[test]
fn missing_checkpoint_is_corrupt() {
    let d = checkpointed("ckpt-missing");
    fs::remove_file(checkpoint_file(&d)).unwrap();
    let m = corrupt(open_err(&d));
    assert!(m.contains("missing"), "{m}");
}

#[test]
fn damaged_manifest_is_corrupt() {
    let d = checkpointed("manifest-flip");
    let f = d.join("MANIFEST");
    let mut data = fs::read(&f).unwrap();
    data[10] ^= 0x01;
    fs::write(&f, data).unwrap();
    let m = corrupt(open_err(&d));
    assert!(m.contains("MANIFEST"), "{m}");
}

#[test]
fn log_shorter_than_the_checkpoint_needs_is_corrupt() {
    let d = checkpointed("ckpt-mismatch");
    // Cut the log back to just after the checkpoint began: the checkpoint
    // saw commits the log no longer has.
    let seg = segments(&d).pop().unwrap();
    set_len(&seg, SEG_HEADER);
    match open_err(&d) {
        Error::Corrupt(m) => {
            assert!(
                m.contains("missing") || m.contains("log ends") || m.contains("durable up to"),
                "{m}"
            )
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn partial_checkpoint_left_by_a_crash_is_ignored() {
    let d = checkpointed("ckpt-partial");
    fs::write(
        d.join("ckpt-00000000000000999999.dat.tmp"),
        b"half a checkpoint",
    )
    .unwrap();
    let db = open(&d);
    assert_eq!(all(&db, &db.table("kv").unwrap()).len(), 105);
    assert!(!d.join("ckpt-00000000000000999999.dat.tmp").exists());
}

/// At least `n` segments: single-row commits into 4 KiB segments, then a
/// clean close. Returns the directory and its tuning.
fn with_segments(name: &str, n: usize) -> (TestDir, LogTuning) {
    let d = dir(name);
    let t = LogTuning {
        segment_bytes: 4096,
        checkpoint_every_bytes: None,
        ..LogTuning::default()
    };
    let db = Database::open(opts(&d, SyncPolicy::GroupCommit, t.clone())).unwrap();
    let kv = kv(&db);
    let mut k = 0;
    while segments(&d).len() < n {
        put(&db, &kv, k, k);
        k += 1;
    }
    // A few records in the newest segment.
    for j in 0..5 {
        put(&db, &kv, k + j, k + j);
    }
    (d, t)
}

fn file_name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// Issue 12 item 1: a rotation writes the next segment whole (renamed into
/// place) before it seals the old one, so a headerless or short newest
/// segment after a sealed one is damage, never a crash; and a header-only
/// one whose durable-end mark says it held records was truncated.
#[test]
fn empty_or_short_last_segment_after_a_sealed_one_is_corrupt_naming_the_file() {
    let (pristine, t) = with_segments("short-last", 3);
    for len in [0, 5, 9, 32, SEG_HEADER] {
        let d = copy_dir(&pristine, &format!("short-last-{len}"));
        let seg = segments(&d).pop().unwrap();
        set_len(&seg, len);
        let before = snapshot(&d);
        let m = corrupt(Database::open(opts(&d, SyncPolicy::GroupCommit, t.clone())).unwrap_err());
        assert!(m.contains(&file_name(&seg)), "{len} bytes: {m}");
        assert!(
            m.contains("truncated") || m.contains("damaged segment header"),
            "{len} bytes: {m}"
        );
        assert_eq!(
            snapshot(&d),
            before,
            "{len} bytes: the failed open changed files"
        );
    }
}

/// Issue 12 item 3: a segment cut exactly at a record boundary. After a
/// clean close the final durable-end mark covers every record, so any cut
/// is found; after a crash the marks lag one flush behind, so a cut below
/// the last flush is found and one inside it cannot be told from the crash
/// (the documented limit).
#[test]
fn last_segment_cut_at_a_record_boundary_is_detected() {
    // Bytes of the log after each of ten commits.
    let ends = |db: &Database| db.log_stats().unwrap().bytes;
    let d = dir("cut-clean");
    let (b8, b9, b10) = {
        let db = open(&d);
        let t = kv(&db);
        for k in 0..8 {
            put(&db, &t, k, k);
        }
        let b8 = ends(&db);
        put(&db, &t, 8, 8);
        let b9 = ends(&db);
        put(&db, &t, 9, 9);
        (b8, b9, ends(&db))
    };
    let seg = segments(&d).pop().unwrap();
    let len = fs::metadata(&seg).unwrap().len();
    assert_eq!(len, SEG_HEADER + b10);
    set_len(&seg, len - (b10 - b9));
    let m = corrupt(open_err(&d));
    assert!(
        m.contains(&file_name(&seg)) && m.contains("truncated") && m.contains("durable up to"),
        "{m}"
    );

    let live = dir("cut-crash-live");
    let db = open(&live);
    let t = kv(&db);
    for k in 0..10 {
        put(&db, &t, k, k);
    }
    assert_eq!(ends(&db), b10, "the same log as above");
    let crashed = crash_copy(db, &live, "cut-crash");
    // Below the last flush: found.
    let d = copy_dir(&crashed, "cut-crash-two");
    let seg = segments(&d).pop().unwrap();
    set_len(&seg, SEG_HEADER + b8);
    let m = corrupt(open_err(&d));
    assert!(m.contains("truncated"), "{m}");
    // Inside the last flush: looks like the crash lost an unsynced write.
    let d = copy_dir(&crashed, "cut-crash-one");
    let seg = segments(&d).pop().unwrap();
    set_len(&seg, SEG_HEADER + b9);
    let db = open(&d);
    let r = db.recovery_report().unwrap();
    assert!(r.torn_tail.is_none() && r.log_end_lsn == b9, "{r:?}");
    assert_eq!(get(&db, &db.table("kv").unwrap(), 9), None);
}

/// A segment of another on-disk format is refused with its own error, not
/// misread (and nothing is changed).
#[test]
fn log_segment_of_another_format_is_refused_with_a_typed_error() {
    let d = dir("old-format");
    fs::create_dir_all(&d).unwrap();
    let seg = d.join("log-00000000000000000000.seg");
    let mut v1 = b"STRLSEG1".to_vec();
    v1.resize(32 + 64, 0);
    fs::write(&seg, &v1).unwrap();
    let before = snapshot(&d);
    match open_err(&d) {
        Error::UnsupportedFormat(m) => {
            assert!(
                m.contains(&file_name(&seg)) && m.contains("format 1"),
                "{m}"
            )
        }
        e => panic!("{e:?}"),
    }
    assert_eq!(snapshot(&d), before);
}

/// Issue 12 item 2, the reported case: with a checkpoint present and
/// MANIFEST renamed away, the open fails and deletes nothing, so putting
/// MANIFEST back makes the directory open again with all its data.
#[test]
fn failed_open_without_manifest_keeps_the_checkpoint() {
    let d = checkpointed("no-manifest");
    let ckpt = checkpoint_file(&d);
    fs::rename(d.join("MANIFEST"), d.join("MANIFEST.away")).unwrap();
    let before = snapshot(&d);
    let m = corrupt(open_err(&d));
    assert!(m.contains("no MANIFEST"), "{m}");
    assert_eq!(snapshot(&d), before);
    assert!(ckpt.exists());
    fs::rename(d.join("MANIFEST.away"), d.join("MANIFEST")).unwrap();
    let db = open(&d);
    assert_eq!(all(&db, &db.table("kv").unwrap()).len(), 105);
}

/// Issue 12 item 2: every refused open, over the whole damage matrix,
/// leaves the directory exactly as it found it (same files, same bytes),
/// including stale and partial files that a successful open cleans up.
#[test]
fn every_failed_open_leaves_the_directory_byte_for_byte() {
    type Damage = Box<dyn Fn(&Path)>;
    let flip = |name: &'static str, at: fn(usize) -> usize| -> Damage {
        Box::new(move |d: &Path| {
            let f = if name == "seg" {
                segments(d).pop().unwrap()
            } else if name == "ckpt" {
                checkpoint_file(d)
            } else {
                d.join(name)
            };
            let mut data = fs::read(&f).unwrap();
            let i = at(data.len());
            data[i] ^= 0x01;
            fs::write(&f, data).unwrap();
        })
    };
    let seg_len = |i: isize, len: fn(u64) -> u64| -> Damage {
        Box::new(move |d: &Path| {
            let s = segments(d);
            let f = &s[i.rem_euclid(s.len() as isize) as usize];
            set_len(f, len(fs::metadata(f).unwrap().len()));
        })
    };
    let remove_seg = |i: isize| -> Damage {
        Box::new(move |d: &Path| {
            let s = segments(d);
            fs::remove_file(&s[i.rem_euclid(s.len() as isize) as usize]).unwrap();
        })
    };
    // Three clean images: one segment after a crash, several segments,
    // a checkpoint with a stale older one and partial files beside it.
    let (one, _one_live) = ten_commits("matrix-one");
    let (many, _) = with_segments("matrix-many", 4);
    let ckpt = checkpointed("matrix-ckpt");
    fs::write(
        ckpt.join("ckpt-00000000000000000008.dat"),
        b"an older checkpoint",
    )
    .unwrap();
    fs::write(ckpt.join("ckpt-00000000000000999999.dat.tmp"), b"partial").unwrap();
    fs::write(ckpt.join("log-00000000000000999999.seg.tmp"), b"partial").unwrap();
    let cases: Vec<(&str, &TestDir, Damage)> = vec![
        ("flip first record", &one, flip("seg", |_| 4096 + 40)),
        ("flip a record header", &one, flip("seg", |_| 4096 + 9)),
        ("flip segment header", &one, flip("seg", |_| 3)),
        (
            "flip both marks",
            &one,
            Box::new(|d: &Path| {
                let f = segments(d).pop().unwrap();
                let mut data = fs::read(&f).unwrap();
                data[512 + 9] ^= 1;
                data[1024 + 9] ^= 1;
                fs::write(&f, data).unwrap();
            }),
        ),
        (
            "other format",
            &one,
            Box::new(|d: &Path| {
                let f = segments(d).pop().unwrap();
                let mut data = fs::read(&f).unwrap();
                data[7] = b'1';
                fs::write(&f, data).unwrap();
            }),
        ),
        ("missing middle segment", &many, remove_seg(1)),
        ("missing last segment", &many, remove_seg(-1)),
        ("missing first segment", &many, remove_seg(0)),
        ("truncated middle segment", &many, seg_len(1, |l| l - 100)),
        ("seal cut off", &many, seg_len(-2, |l| l - 32)),
        ("empty last segment", &many, seg_len(-1, |_| 0)),
        ("5-byte last segment", &many, seg_len(-1, |_| 5)),
        ("header-only last segment", &many, seg_len(-1, |_| 4096)),
        ("last record cut short", &many, seg_len(-1, |l| l - 8)),
        ("flipped checkpoint", &ckpt, flip("ckpt", |n| n / 2)),
        (
            "truncated checkpoint",
            &ckpt,
            Box::new(|d: &Path| {
                let f = checkpoint_file(d);
                set_len(&f, fs::metadata(&f).unwrap().len() - 1);
            }),
        ),
        (
            "missing checkpoint",
            &ckpt,
            Box::new(|d: &Path| fs::remove_file(checkpoint_file(d)).unwrap()),
        ),
        ("flipped MANIFEST", &ckpt, flip("MANIFEST", |_| 10)),
        (
            "MANIFEST renamed away",
            &ckpt,
            Box::new(|d: &Path| fs::rename(d.join("MANIFEST"), d.join("MANIFEST.away")).unwrap()),
        ),
        (
            "log shorter than the checkpoint",
            &ckpt,
            seg_len(-1, |_| 4096),
        ),
    ];
    for (i, (what, image, damage)) in cases.iter().enumerate() {
        let d = copy_dir(image, &format!("matrix-{i}"));
        damage(&d);
        let before = snapshot(&d);
        let e = open_err(&d);
        assert!(
            matches!(e, Error::Corrupt(_) | Error::UnsupportedFormat(_)),
            "{what}: {e:?}"
        );
        assert_eq!(
            snapshot(&d).keys().collect::<Vec<_>>(),
            before.keys().collect::<Vec<_>>(),
            "{what}: files added or removed by a failed open ({e})"
        );
        assert!(
            snapshot(&d) == before,
            "{what}: bytes changed by a failed open ({e})"
        );
    }
    // The clean images themselves open (and only then are stale and
    // partial files removed).
    let d = copy_dir(&ckpt, "matrix-ckpt-opens");
    drop(open(&d));
    let left: Vec<String> = snapshot(&d).into_keys().collect();
    assert!(
        left.iter()
            .all(|f| !f.ends_with(".tmp") && f != "ckpt-00000000000000000008.dat"),
        "{left:?}"
    );
}
