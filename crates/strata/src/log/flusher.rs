//! The flusher and the log writer: two threads, so that room in the ring
//! buffer never waits for an fsync.
//!
//! ```text
//!  publishers ──> ring ──flusher (drain)──> staged ──writer──> log-<lsn>.seg
//!                  ▲   releases ring room     bytes   write + fdatasync,
//!                  │   as soon as it drains           advances `durable`
//!                  └── a publisher waits here only while `staged` is full
//!                      (max(async_max_unflushed_bytes, the ring))
//! ```
//!
//! Why two: a thread blocked in `fdatasync` drains nothing, so with one
//! thread doing both, the ring gave back at most one ring-ful per fsync,
//! and every commit past that waited for the fsync, whatever the sync
//! policy. An Async commit is meant to wait only past the loss bound
//! (`LogTuning::async_max_unflushed_bytes`, 1 MiB by default); through a
//! 4 KiB ring it waited for an fsync every ~40 commits instead. On a
//! shared disk where one fdatasync took 4-9 s, the 4 KiB-ring test of
//! `tests/lsn_stamps.rs` needed ~30 of them per protocol and ran past
//! its 120 s guard ("deadlocked"; gdb: publishers waiting for room, the
//! flusher in fdatasync, readers waiting for the publishers' decision).
//! With fdatasync delayed 5 s (`strace -e inject`), it failed every time.
//! Now the flusher keeps draining into `staged` while the writer is in
//! its fsync, so publishers wait for room only when `staged` is full:
//! past the loss bound, where Async commits wait for durability anyway.
//!
//! The log stays a prefix on disk: the flusher drains in LSN order and
//! appends to `staged` in that order, and the writer writes `staged` whole
//! and in order; `durable` moves only after the fsync covering it.

use super::{Shared, MIN_RECORD_BYTES};
use crate::log::record;
use crate::log::segment::SegmentWriter;
use crate::options::SyncPolicy;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::Duration;

/// Records the flusher drained that the writer has not yet taken (in
/// `Shared::staged`, under its lock; `Shared::staged_cv` signals both ways).
#[derive(Default)]
pub(super) struct Staged {
    /// Whole records, in LSN order, from the writer's end on.
    bytes: Vec<u8>,
    /// The LSN just past `bytes`.
    end: u64,
    /// How many records `bytes` holds, and of them operation records.
    records: u64,
    operation_records: u64,
    /// The writer is writing or syncing a batch.
    busy: bool,
    /// The flusher has stopped: once `bytes` is written, the writer ends.
    done: bool,
}

/// The flusher: drains published records out of the ring, in LSN order,
/// into `staged`, and runs the writer beside it (joined before it returns).
pub(super) fn flusher(sh: Arc<Shared>, w: SegmentWriter) {
    let pos = w.end;
    sh.staged.lock().end = pos;
    std::thread::scope(|s| {
        let writer = std::thread::Builder::new()
            .name("strata-log-writer".into())
            .spawn_scoped(s, || writer(&sh, w));
        if let Err(e) = writer {
            sh.fail(format!("cannot start the log writer: {e}"));
            return;
        }
        // However the loop ends (a panic included), the writer writes what
        // was staged and ends, so the scope's join cannot hang.
        let _stop = StopWriter(&sh);
        drain(&sh, pos);
    });
}

struct StopWriter<'a>(&'a Shared);

impl Drop for StopWriter<'_> {
    fn drop(&mut self) {
        self.0.staged.lock().done = true;
        self.0.staged_cv.notify_all();
    }
}

fn drain(sh: &Shared, mut pos: u64) {
    // Draining past the loss bound would gain an Async commit nothing (it
    // waits for durability there anyway), so that, or one ring, is what
    // may wait in memory for the writer.
    let limit = sh.max_unflushed.max(sh.buf.capacity() as u64) as usize;
    let group = sh.sync == SyncPolicy::GroupCommit;
    loop {
        let drained_at = std::time::Instant::now();
        let (n, writing) = {
            let mut g = sh.staged.lock();
            while g.bytes.len() >= limit && !sh.failed.load(SeqCst) {
                sh.staged_cv.wait(&mut g);
            }
            if sh.failed.load(SeqCst) {
                return;
            }
            let from = g.bytes.len();
            let (next, n) = sh.buf.drain(pos, &mut g.bytes);
            pos = next;
            if n > 0 {
                if sh.per_op {
                    g.operation_records += count_operation_records(&g.bytes[from..]);
                }
                g.records += n;
                g.end = pos;
                sh.staged_cv.notify_all();
            }
            (n, g.busy)
        };
        if n == 0 && sh.shutdown.load(SeqCst) && sh.buf.reserved() == pos {
            // (`StopWriter` tells the writer, which closes the segment.)
            return;
        }
        // Async: drains start every `interval`, which is what bounds the
        // loss. GroupCommit: the next record's publisher wakes us, unless
        // the writer is busy: its group then forms in the ring, and the
        // writer rings when it is done (publishers short of room ring too);
        // the timeout is only a backstop.
        let t = if group {
            Duration::from_millis(5)
        } else {
            sh.interval.saturating_sub(drained_at.elapsed())
        };
        sh.buf.sleep(
            pos,
            group && !writing,
            t,
            || sh.shutdown.load(SeqCst),
            &sh.idle,
        );
    }
}

/// The writer: writes and fsyncs what the flusher staged, batch by batch,
/// and advances `durable`.
fn writer(sh: &Shared, mut w: SegmentWriter) {
    let mut batch = Vec::new();
    loop {
        let (end, records, ops) = {
            let mut g = sh.staged.lock();
            while g.bytes.is_empty() && !g.done {
                sh.staged_cv.wait(&mut g);
            }
            if g.bytes.is_empty() {
                if !sh.failed.load(SeqCst) {
                    // A clean close records the final durable end in the
                    // segment, so that any later truncation is detected.
                    let _ = w.close();
                }
                return;
            }
            std::mem::swap(&mut g.bytes, &mut batch);
            g.busy = true;
            // Room for the flusher again.
            sh.staged_cv.notify_all();
            (
                g.end,
                std::mem::take(&mut g.records),
                std::mem::take(&mut g.operation_records),
            )
        };
        let written = w.append(&batch).and_then(|()| {
            #[cfg(test)]
            sh.sync_hold.pass();
            w.sync()
        });
        if let Err(e) = written {
            sh.fail(format!("log write or fsync failed at LSN {}: {e}", w.end));
            return;
        }
        batch.clear();
        // Counted before `durable` moves: a caller that sees the log
        // durable sees its records counted.
        sh.records.fetch_add(records, SeqCst);
        sh.operation_records.fetch_add(ops, SeqCst);
        sh.flushes.fetch_add(1, SeqCst);
        sh.durable.store(end, SeqCst);
        {
            let _g = sh.durable_mx.lock();
            sh.durable_cv.notify_all();
        }
        // Not busy before the bell: a flusher that then still saw us busy
        // finds the bell rung and does not sleep.
        sh.staged.lock().busy = false;
        if sh.sync == SyncPolicy::GroupCommit {
            // Commits that arrived during the fsync form the next group.
            sh.buf.wake();
        }
    }
}

/// Operation records among the whole records of `batch` (the flusher's).
fn count_operation_records(batch: &[u8]) -> u64 {
    let mut n = 0;
    let mut off = 0;
    while off + MIN_RECORD_BYTES <= batch.len() {
        let total = u32::from_le_bytes(batch[off + 4..off + 8].try_into().unwrap()) as usize;
        n += u64::from(record::kind_of(&batch[off..]) == Some(record::KIND_OP));
        off += total.max(MIN_RECORD_BYTES);
    }
    n
}

/// Tests: holds the writer before its fsyncs (after the write), as a
/// stalled disk does, until released.
#[cfg(test)]
#[derive(Default)]
pub(super) struct SyncHold {
    /// (held, the writer is waiting at it)
    state: parking_lot::Mutex<(bool, bool)>,
    cv: parking_lot::Condvar,
}

#[cfg(test)]
impl SyncHold {
    fn pass(&self) {
        let mut g = self.state.lock();
        while g.0 {
            g.1 = true;
            self.cv.notify_all();
            self.cv.wait(&mut g);
        }
        g.1 = false;
    }

    fn set(&self, held: bool) {
        self.state.lock().0 = held;
        self.cv.notify_all();
    }

    fn waiting(&self) -> bool {
        self.state.lock().1
    }
}

#[cfg(test)]
mod tests {
    use crate::test_util::{eventually, within};
    use crate::{row, Database, Durability, LogTuning, Options, Schema, SyncPolicy, Table, Type};

    fn open(dir: &std::path::Path) -> (Database, Table) {
        let db = Database::open(
            Options::default()
                .durability(Durability::Wal {
                    dir: dir.to_path_buf(),
                    sync: SyncPolicy::Async,
                })
                .log_tuning(LogTuning {
                    buffer_bytes: 4096,
                    checkpoint_every_bytes: None,
                    ..LogTuning::default()
                }),
        )
        .unwrap();
        let t = db
            .create_table(
                Schema::new("kv")
                    .column("k", Type::Int)
                    .column("v", Type::Text)
                    .primary_key(&["k"]),
            )
            .unwrap();
        (db, t)
    }

    /// With an fsync stalled (held here, as a loaded disk held it for
    /// seconds), Async commits of ten rings' worth of records, far under
    /// the loss bound, all return: room in the ring does not wait for the
    /// fsync. With one thread draining and syncing, the ring filled behind
    /// the stalled fsync and the commits waited for it (here, for good:
    /// `within` fails that).
    #[test]
    fn async_commits_pass_a_small_ring_while_an_fsync_is_stalled() {
        within(
            "Async commits through a 4 KiB ring behind a held fsync",
            || {
                let dir = tempfile::tempdir().unwrap();
                let (db, t) = open(dir.path());
                let log = db.inner.log.get().unwrap();
                let hold = &log.sh.sync_hold;
                hold.set(true);
                let pad = "x".repeat(100);
                db.run(|tx| tx.insert(&t, row![0, pad.as_str()])).unwrap();
                assert!(
                    eventually(|| hold.waiting()),
                    "the writer reaches its fsync"
                );
                let commits = 300i64;
                for k in 1..=commits {
                    db.run(|tx| tx.insert(&t, row![k, pad.as_str()])).unwrap();
                }
                let s = db.log_stats().unwrap();
                assert!(s.bytes > 10 * 4096, "ten rings' worth: {s:?}");
                assert!(hold.waiting() && s.durable_bytes < s.bytes, "{s:?}");
                assert_eq!(s.async_waits, 0, "{s:?}");
                hold.set(false);
                db.sync_log().unwrap();
                let s = db.log_stats().unwrap();
                assert_eq!(s.durable_bytes, s.bytes, "{s:?}");
                assert_eq!(
                    s.records,
                    commits as u64 + 2,
                    "the catalog record too: {s:?}"
                );
                drop((t, db));
                // Everything written is there, in order, after a reopen.
                let db = Database::open(reopen(dir.path())).unwrap();
                let t = db.table("kv").unwrap();
                let mut ro = db.begin_read_only().unwrap();
                assert_eq!(ro.scan(&t, ..).unwrap().len(), commits as usize + 1);
            },
        )
    }

    fn reopen(dir: &std::path::Path) -> Options {
        Options::default().durability(Durability::Wal {
            dir: dir.to_path_buf(),
            sync: SyncPolicy::Async,
        })
    }
}
