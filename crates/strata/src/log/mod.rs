//! Durability: an ERMIA-style write-ahead log, group commit, checkpoints
//! and recovery (`Options::durability = Durability::Wal { dir, sync }`).
//!
//! ```text
//!  txn commit ─ pre-commit: build redo record from the write set (private)
//!      │        [header | put(table,row) | delete(table,key) ...]
//!      │        PRECOMMIT; lsn = clock.fetch_add(len)  ◄── the one global op:
//!      │                   cts = lsn + len + K              log place AND
//!      │        COMMITTING(cts); validate                   commit timestamp
//!      │          fails ──> the range becomes a skip record; roll back
//!      │          passes ─> seal, copy words into the ring buffer
//!      │        COMMITTED, stamp versions, unlock
//!      │        GroupCommit: wait durable >= lsn+len
//!      │        Async: return, unless more than async_max_unflushed_bytes
//!      │               would be acknowledged but not durable: then wait
//!      ▼
//!  ring buffer ──flusher thread──> log-<lsn>.seg  write + fdatasync
//!                 (takes published records in LSN order: a prefix)
//!  checkpointer ──> ckpt-<lsn>.dat + MANIFEST; deletes covered segments
//!  Database::open(dir) ──> MANIFEST -> checkpoint -> replay log from its
//!                          LSN -> cut a torn tail -> clock = log end + K
//! ```
//!
//! **LSN commit stamps (ERMIA §3.2: "the commit LSN is the commit
//! timestamp").** With the log on, the database's clock *is* the log's
//! reservation counter (one `Arc`'d atomic, `cc::Shared::clock` and
//! `LogBuffer::reserved`), holding the next free LSN + K. A committing
//! writer's single `fetch_add(len)` gives both its record's place and its
//! commit timestamp, the counter's new value:
//!
//! ```text
//!  counter (= clock) ──────────────────────────────────────────────────────►
//!        │ T1 reserves │ T2 reserves │        │ T3 reserves │
//!  log:  ├──[rec T1]───┼──[rec T2]───┤        ├──[rec T3]───┤
//!        a            b=cts(T1)     c=cts(T2) ▲            d=cts(T3)
//!                                             R: snapshot = clock = c
//!  R sees T1 and T2 (cts <= c), not T3 (cts = d > c): a snapshot sees
//!  exactly the commits that reserved before it read the clock.
//! ```
//!
//! Invariant **STAMP = RESERVATION END**: every commit record's timestamp
//! is its end LSN + K, and the clock always equals the next free LSN + K.
//! So commit timestamps strictly increase in log order (across threads:
//! the reservations are one atomic's successive values), and reading the
//! clock for a snapshot orders it against every commit exactly as the old
//! `clock.fetch_add(1)` did: PRECOMMIT is still announced before the one
//! atomic, and a reader still waits out PRECOMMIT and COMMITTING
//! (`TidTable::settled_status`). `tests/lsn_stamps.rs` reads the log files
//! back and checks it.
//!
//! * **Reservation before validation.** SSN, SSI, MVOCC and MV2PL need the
//!   commit stamp during validation, so the place is taken right after
//!   PRECOMMIT, before validation (the redo record, built first, gives its
//!   length). A transaction that then fails (validation, or a table it
//!   wrote was dropped) holds a reserved range: the flusher writes only a
//!   gap-free published prefix, so the range is published as a **skip
//!   record** of the same length (kind 3, zeros, its own CRCs; timestamp
//!   0), which recovery counts (`RecoveryReport::skip_records`) and
//!   ignores. Torn-tail detection, durable-end marks and checkpoints treat
//!   it as any record. A panic in validation drops the `Reservation`
//!   unpublished; its drop leaves the range to the transaction's rollback
//!   (run by its drop in the same unwinding), which fills it too
//!   (`Log::skip_lost`), so a bug there cannot stall the log. While a transaction validates, the flusher waits at
//!   its range (group commits behind it are delayed by the validation, as
//!   in ERMIA). No deadlock: a validating transaction waits only for
//!   deciding transactions with a smaller stamp, i.e. a smaller LSN, and a
//!   publisher waits for ring room only on smaller LSNs being flushed.
//! * **Transactions that wrote nothing** (SSN and SSI validate read-only
//!   ones; MV2PL validates scans) take `clock + 1` without moving the
//!   clock: no log space, no shared write. It is above every stamp drawn
//!   before (the clock load is SeqCst, after PRECOMMIT) and below every
//!   later reservation (at least a 40-byte record further), and never a
//!   writer's stamp (those are all K mod 8, it is K+1 mod 8). Only such
//!   transactions can share one, and they never depend on each other (no
//!   rw-edge joins two transactions that wrote nothing). A minimal record
//!   instead would cost every SSN reader 40 bytes of log and a ring write.
//! * **MVTO** draws its timestamp at begin with a `fetch_add(1)` that is
//!   its commit timestamp: a bare increment of the log's counter would
//!   leave a hole. So under MVTO the clock stays a counter of its own and
//!   a durable commit still makes two global increments (begin and
//!   reservation); timestamps then disagree with log order, which is why
//!   replay goes by log order (below). `lsn_stamps` decides.
//! * **K** is fixed at open: the least value keeping the clock at or above
//!   the stamps replay gave the recovered versions and the largest stamp
//!   logged (`RecoveryReport::stamp_offset`). For a log begun under LSN
//!   stamps it is 1 (the in-memory clock starts at 1), or 0 once records
//!   without a stamp (catalog, skip) end the log; it may change from one
//!   open to the next, and stamps still increase in log order, since the
//!   clock starts at or above the largest one logged. A log written under
//!   MVTO or by an older Strata, whose timestamps ran ahead of its LSNs,
//!   gets a larger K, so nothing has to be written to fill the difference.
//! * Catalog records also reserve on the counter (stamp 0); an index
//!   backfill's clock bump is a minimal skip record (`Log::bump`).
//! * **In memory** there is no log: `Cc::commit_ts` moves the clock by
//!   `cc::CLOCK_STEP` (two) for a writer, and a transaction that wrote
//!   nothing takes `clock + 1` there too (`cc::read_only_stamp`: the same
//!   argument, with parity in place of `K mod 8`); the clock is reached
//!   through its `Arc` (one more load, no new atomic operation).
//!
//! **Why log order is enough.** A transaction reserves its log position
//! before it is marked COMMITTED and while it holds the write locks of
//! every row it wrote (with LSN stamps before validation, else after). So
//! for each row, the log order of its writers is its version order; and a
//! transaction that read or overwrote another's version did so after that
//! version was committed, hence after its writer had reserved — it lands
//! later in the log. The flusher writes only a prefix of the log, so an
//! acknowledged commit (durable) never depends on a lost one. Replay
//! applies records in log order, never by timestamp: MVTO's commit
//! timestamp is its begin timestamp, so timestamps and log order may
//! disagree.
//!
//! Records are logical redo: whole rows for inserts (`put`), the key and
//! the changed columns' new values for updates, the key for deletes, tagged
//! with the table id and the commit timestamp. Aborted transactions write
//! nothing but, if they had reserved, a skip record, so no partial
//! transaction can be replayed.
//! Catalog changes (create/drop table) are records in the same log, taken
//! under the catalog lock, and always wait for their fsync.
//!
//! **Log granularity** (`Options::log_granularity`; ERMIA §4.4, Fig. 10).
//! ERMIA's log manager makes one round trip to the central log buffer per
//! transaction, at pre-commit (above). `LogGranularity::PerOperation`
//! emulates traditional logging, one round trip per update: every insert,
//! update and delete, as it is made under its row's lock, reserves its own
//! **operation record** (kind 4: one redo op and the LSN of its
//! transaction's previous operation record, ARIES' prevLSN), copies it
//! into the ring and publishes it (`log_op`); pre-commit then logs a
//! **chained commit** (kind 5: the last operation record's LSN and the
//! count) in the commit record's place, reserved and stamped as above.
//!
//! ```text
//!  T: update a ─[op a|prev -]   insert b ─[op b|prev @a]   commit ─[commit|last @b, 2]
//!  log: ...[op a]...[op b]...[commit T]...      recovery: at [commit T], a then b
//! ```
//!
//! The chain lives per TID slot (`OpChain`, its occupant's alone), so
//! nothing is shared beyond the log buffer itself, whose counter is the
//! clock: each write is one more fetch-and-add on it. Recovery keeps
//! operation records aside by LSN and applies a transaction's, oldest
//! first, when it reaches its chained commit, in one transaction as a
//! commit record's; records no commit names (a rollback, a failed
//! validation, a transaction open at the crash) are counted and discarded
//! (`RecoveryReport::operation_records_discarded`). Applying them at the
//! commit's place keeps "log order is version order" (below): per row,
//! writers' commit records are in version order whatever the order of
//! their operation records. An operation that overwrote the transaction's
//! own earlier version is logged as its whole row, not the changed columns
//! (those are relative to the committed version, which an earlier
//! operation of the transaction may have deleted).
//!
//! Checkpoints: a record below the checkpoint's begin LSN B may belong to
//! a transaction that commits after the checkpoint's snapshot, so replay
//! starts lower, at R = min(B, reserved counter, oldest registered
//! snapshot − K), read before B (`operations_floor`); the manifest records
//! R, segments are kept from R, and catalog records below B are passed
//! over (the checkpoint's catalog holds them). Why R is low enough: a
//! transaction open when the snapshots were scanned has a snapshot s ≥ its
//! registration, and every record it reserves is at or above s − K ≥ R
//! (the clock only grows); one whose registration the scan missed read the
//! clock after the scan began (the TID table's registration order, as for
//! GC), so its records are above the counter read first; one that had
//! ended reserved its commit before B, so it is in the checkpoint, and the
//! chain walk stops at R: its records below R are in the checkpoint's
//! rows, those above are replayed as every record after B is (per key, the
//! last replayed writer is the last writer, as in `checkpoint`'s argument).
//! Not under MVTO (`Options::validate` refuses it): there snapshots are not
//! LSNs.
//!
//! **Async loss bound.** The flusher starts a flush every
//! `async_flush_interval`, but only when the scheduler runs it: with more
//! runnable threads than cores that can be far later (190 ms was seen), so
//! time alone bounds nothing. What does: an Async commit returns only once
//! the log is durable up to its end minus `async_max_unflushed_bytes`, so at
//! any moment at most that many bytes of acknowledged records are not yet
//! durable, however the flusher is scheduled; past half of it a commit
//! wakes an idle flusher early, so commits rarely wait.
//!
//! **Failure.** If a write or fsync fails (a full disk), the flusher stops;
//! waiting commits get `Error::ReadOnly`, and every later read-write commit
//! and DDL is refused with `Error::ReadOnly` naming the cause
//! (`Database::read_only_reason`). Under GroupCommit nothing acknowledged is
//! lost: a commit is acknowledged only after its fsync (under Async, what
//! was acknowledged but not yet durable is lost, within the bound above). A
//! commit that failed with `Error::ReadOnly` was already visible in memory, and
//! may or may not be recovered after a restart.
//!
//! A pure in-memory database pays one predictable branch per commit
//! (`DbInner::log` is an empty `OnceLock`).

pub mod buffer;
pub mod checkpoint;
pub mod record;
pub mod segment;

use crate::cc::WriteEntry;
use crate::error::{Error, Result};
use crate::options::Options;
use crate::options::SyncPolicy;
use crate::storage::{self, version::Version};
use buffer::LogBuffer;
use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};
use record::{CatalogRecord, CommitBuilder, MIN_RECORD_BYTES, NO_PREV_OP};
use segment::SegmentWriter;
use std::cell::Cell;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{Relaxed, SeqCst},
};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub use segment::TornTail;

/// What `Database::open` found and did when it recovered a directory.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecoveryReport {
    /// The checkpoint loaded (file name), if any.
    pub checkpoint: Option<String>,
    /// Rows loaded from the checkpoint.
    pub checkpoint_rows: u64,
    /// The checkpoint's begin LSN (its catalog and rows are the database
    /// as of there) and its file's size; 0 without a checkpoint.
    pub checkpoint_lsn: u64,
    pub checkpoint_bytes: u64,
    /// The log segments replay read, in LSN order (the whole log from
    /// `replay_from_lsn` on). Their sizes are as recovery found them,
    /// before a torn tail was cut.
    pub log_segments: Vec<LogSegment>,
    /// LSN replay started at (the checkpoint's), and where the log ends.
    pub replay_from_lsn: u64,
    pub log_end_lsn: u64,
    /// Committed transactions and catalog changes replayed from the log.
    pub transactions_replayed: u64,
    pub catalog_records_replayed: u64,
    /// Bytes of log segment files read.
    pub log_bytes_read: u64,
    /// A damaged or partial last record that was cut off (a crash during a
    /// write). Its transaction was never acknowledged under GroupCommit.
    pub torn_tail: Option<TornTail>,
    /// Largest commit timestamp recovered; the clock continues above it.
    pub max_commit_ts: u64,
    /// Reserved ranges of transactions that aborted after reserving (skip
    /// records), passed over.
    pub skip_records: u64,
    /// Operation records read (per-operation logging), and of them those
    /// no commit record named: writes of transactions that aborted, or
    /// were still open at the crash, discarded.
    pub operation_records: u64,
    pub operation_records_discarded: u64,
    /// With LSN commit stamps (the write-ahead log on, any protocol but
    /// MVTO): `K` in clock = LSN + K, fixed for this open (see the module
    /// doc). `None`: the clock is a counter of its own.
    pub stamp_offset: Option<u64>,
    /// Wall time of the whole recovery.
    pub duration: Duration,
}

/// One log segment file, as recovery found it (`RecoveryReport::log_segments`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSegment {
    /// The LSN of its first record (in its name, `log-<lsn>.seg`).
    pub start_lsn: u64,
    pub path: PathBuf,
    /// The file's size, its 4 KiB header included.
    pub bytes: u64,
}

/// Counters of the log since the database was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LogStats {
    /// Records written (one per committed read-write transaction, plus
    /// catalog changes, plus skip records of transactions that aborted
    /// after reserving).
    pub records: u64,
    /// Bytes of records reserved.
    pub bytes: u64,
    /// Of `bytes`, those written and fsynced: the durable end of the log,
    /// as the flusher last advanced it (equal to `bytes` once everything
    /// reserved so far is durable).
    pub durable_bytes: u64,
    /// Writes + fsyncs of the flusher (each covers a group of commits).
    pub flushes: u64,
    /// Checkpoints completed.
    pub checkpoints: u64,
    /// Async commits that waited because acknowledging them would have left
    /// more than `LogTuning::async_max_unflushed_bytes` not yet durable.
    pub async_waits: u64,
    /// Of `records`, operation records (`LogGranularity::PerOperation`:
    /// one per insert, update or delete; 0 under per-transaction logging).
    pub operation_records: u64,
    /// The flusher sleeps with nothing rung: no flush pass is on its way
    /// until a commit, a wait or its timer calls for one. (Tests wait for
    /// it before they need a commit left in flight.)
    pub flusher_quiet: bool,
}

struct Shared {
    buf: LogBuffer,
    sync: SyncPolicy,
    interval: Duration,
    failed: AtomicBool,
    why: Mutex<Option<String>>,
    durable: AtomicU64,
    durable_mx: Mutex<()>,
    durable_cv: Condvar,
    shutdown: AtomicBool,
    /// LSN the log had when the database was opened.
    start_lsn: u64,
    /// Counted by the flusher, so that commits touch no shared counter
    /// besides the one reservation.
    records: AtomicU64,
    /// Of `records`, operation records (counted only under per-operation
    /// logging, from the kind byte of what the flusher drained).
    operation_records: AtomicU64,
    per_op: bool,
    flushes: AtomicU64,
    /// Async: the most bytes of acknowledged records that may be not yet
    /// durable, and how often a commit waited to keep to it.
    max_unflushed: u64,
    async_waits: AtomicU64,
    /// Async: the flusher is in its timed sleep (a commit past half the
    /// bound wakes it).
    idle: AtomicBool,
}

impl Shared {
    fn wake(&self) {
        self.buf.wake();
    }

    fn fail(&self, why: String) {
        let mut w = self.why.lock();
        if w.is_none() {
            *w = Some(why);
        }
        drop(w);
        self.failed.store(true, SeqCst);
        let _g = self.durable_mx.lock();
        self.durable_cv.notify_all();
    }

    fn read_only_error(&self) -> Error {
        Error::ReadOnly {
            reason: (self.why.lock().as_deref().unwrap_or("unknown")).to_string(),
        }
    }

    fn wait_durable(&self, lsn: u64) -> Result<()> {
        if self.durable.load(SeqCst) >= lsn {
            return Ok(());
        }
        if self.sync == SyncPolicy::Async {
            self.wake();
        }
        let mut g = self.durable_mx.lock();
        loop {
            if self.durable.load(SeqCst) >= lsn {
                return Ok(());
            }
            if self.failed.load(SeqCst) {
                return Err(self.read_only_error());
            }
            self.durable_cv.wait_for(&mut g, Duration::from_millis(10));
        }
    }
}

/// The flusher: takes published records in LSN order, writes and fsyncs.
fn flusher(sh: Arc<Shared>, mut w: SegmentWriter) {
    let mut pos = w.end;
    let mut batch = Vec::with_capacity(1 << 20);
    loop {
        batch.clear();
        let drained_at = std::time::Instant::now();
        let (next, n) = sh.buf.drain(pos, &mut batch);
        pos = next;
        sh.records.fetch_add(n, SeqCst);
        if sh.per_op {
            sh.operation_records
                .fetch_add(count_operation_records(&batch), SeqCst);
        }
        if !batch.is_empty() {
            if let Err(e) = w.append(&batch).and_then(|()| w.sync()) {
                sh.fail(format!("log write or fsync failed at LSN {}: {e}", w.end));
                return;
            }
            sh.flushes.fetch_add(1, SeqCst);
            sh.durable.store(pos, SeqCst);
            let _g = sh.durable_mx.lock();
            sh.durable_cv.notify_all();
            if sh.sync == SyncPolicy::GroupCommit {
                // Commits that arrived during the fsync form the next group.
                continue;
            }
        } else if sh.shutdown.load(SeqCst) && sh.buf.reserved() == pos {
            // A clean close records the final durable end in the segment,
            // so that any later truncation of the log is detected.
            let _ = w.close();
            return;
        }
        let group = sh.sync == SyncPolicy::GroupCommit;
        // Async: drains start every `interval` (or back to back when a
        // write and fsync takes longer), which is what bounds the loss.
        let t = if group {
            Duration::from_millis(5)
        } else {
            sh.interval.saturating_sub(drained_at.elapsed())
        };
        // The sleep/wake handshake (see `buffer`); GroupCommit publishers
        // wake us, the timeout is only a backstop.
        sh.buf
            .sleep(pos, group, t, || sh.shutdown.load(SeqCst), &sh.idle);
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

/// Per-operation logging: the operation records one transaction slot's
/// occupant has logged so far (only the occupant touches its slot, so the
/// accesses are plain loads and stores; padded, so occupants of
/// neighbouring slots share no line).
struct OpChain {
    /// LSN of the last operation record (`NO_PREV_OP`: none yet).
    last: AtomicU64,
    /// How many; `TOO_BIG` set: one did not fit in the log buffer, and the
    /// commit is refused (the low bits then hold its size).
    ops: AtomicU64,
}

const TOO_BIG: u64 = 1 << 63;

impl OpChain {
    fn new() -> Self {
        OpChain {
            last: AtomicU64::new(NO_PREV_OP),
            ops: AtomicU64::new(0),
        }
    }

    fn reset(&self) {
        self.last.store(NO_PREV_OP, Relaxed);
        self.ops.store(0, Relaxed);
    }
}

/// The redo record of a committing transaction, built before validation.
pub(crate) struct Redo(Vec<u8>);

/// A place in the log reserved before validation (LSN commit stamps): it
/// gives the commit timestamp, and must be published, as the commit record
/// (`Log::publish`) or as a skip record (`Log::skip`), or the flusher stops
/// at it.
pub(crate) struct Reservation {
    buf: Vec<u8>,
    lsn: u64,
    cts: u64,
    /// Which log (its `Shared`'s address), for `Log::skip_lost`.
    log: usize,
}

impl Drop for Reservation {
    /// Dropped unpublished: only by a panic between reserving and
    /// publishing (validation is the code in between). The range is left
    /// for the transaction's rollback, run next by its drop during the same
    /// unwinding, to fill (`Log::skip_lost`); else the flusher would stop
    /// at it for good and every later durable commit would hang.
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            LOST.set(Some((self.log, self.lsn, self.buf.len())));
        }
    }
}

impl Reservation {
    /// The commit timestamp: the record's end LSN + K.
    #[inline]
    pub fn cts(&self) -> u64 {
        self.cts
    }
}

/// A pipelined commit's claim on durability (`Transaction::commit_pipelined`,
/// `Database::run_pipelined`): the transaction has committed and is visible;
/// [`CommitTicket::wait`] returns once its log record, and every record
/// before it, is on disk.
///
/// ```text
///  worker:  T1 commit_pipelined ─ T2 commit_pipelined ─ T3 ... ─ wait(T1) ─ ack T1
///  log:     [T1][T2][T3] ──flusher──> write + fsync (one covers all three)
/// ```
///
/// This is flush pipelining (Aether, Johnson et al., VLDB 2010; Silo's and
/// ERMIA's workers do not wait for the log either): a worker goes on with
/// its next transaction while the log flushes, so one fsync covers as many
/// commits as were made meanwhile, not only one per waiting thread. Hold the
/// acknowledgement to the client until `wait` returns.
///
/// Invariant **TICKET COVERS WHAT WAS SEEN**: a ticket's LSN is at or past
/// the end of every commit record the transaction could have read from
/// (log order is commit order, so a durable record implies every earlier
/// one is durable). A writer's ticket is its own record's end; a
/// transaction that logged nothing gets the end of the newest commit its
/// point reads returned, or, after a read not named one by one (a scan, an
/// absent key), the reservation counter at its commit, past every commit
/// visible to it (`Log::reader_lsn`). So once `wait` returns, no
/// acknowledged result depends on a commit a crash could lose.
#[must_use = "a pipelined commit is durable only once its ticket's wait returns"]
#[derive(Clone)]
pub struct CommitTicket {
    /// `None`: nothing to wait for (an in-memory database).
    on: Option<(Arc<Shared>, u64)>,
}

impl CommitTicket {
    /// Nothing to wait for: an in-memory database (`Durability::None`).
    pub(crate) fn done() -> Self {
        CommitTicket { on: None }
    }

    /// Whether the commit is durable now (never blocks).
    pub fn is_durable(&self) -> bool {
        self.on
            .as_ref()
            .is_none_or(|(sh, lsn)| sh.durable.load(SeqCst) >= *lsn)
    }

    /// Waits until the commit (and every commit before it in the log) is
    /// on disk. `Err(Error::ReadOnly)` if the log failed first (a write or fsync
    /// error): the commit is in memory but may not survive a crash, and the
    /// database has turned read-only. On an in-memory database it returns
    /// at once. Under `SyncPolicy::Async` it asks the flusher to flush now.
    pub fn wait(&self) -> Result<()> {
        match &self.on {
            None => Ok(()),
            Some((sh, lsn)) => sh.wait_durable(*lsn),
        }
    }
}

impl std::fmt::Debug for CommitTicket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("CommitTicket");
        if let Some((_, lsn)) = &self.on {
            d.field("lsn", lsn);
        }
        d.field("durable", &self.is_durable()).finish()
    }
}

/// `Transaction::read_stamp` after a read whose sources are not named one
/// by one (see `Log::reader_lsn`).
pub(crate) const UNKNOWN_READS: u64 = u64::MAX;

/// What a committing transaction waits on after it is visible.
pub(crate) struct Ticket {
    end: u64,
    published: bool,
}

thread_local! {
    static REDO_BUF: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
    /// A reservation dropped unpublished on this thread: (log, LSN, length).
    static LOST: Cell<Option<(usize, u64, usize)>> = const { Cell::new(None) };
}

/// The write-ahead log of a durable database.
pub(crate) struct Log {
    sh: Arc<Shared>,
    flusher: Mutex<Option<JoinHandle<()>>>,
    dir: PathBuf,
    report: RecoveryReport,
    checkpoint_every: Option<u64>,
    checkpoint_mx: Mutex<()>,
    last_checkpoint_lsn: AtomicU64,
    checkpoints: AtomicU64,
    /// LSN commit stamps: `Some(K)`, the log's reservation counter is the
    /// clock and holds LSN + K. `None`: the clock is separate (MVTO).
    stamp_offset: Option<u64>,
    /// Per-operation logging: each transaction slot's operation records
    /// (empty under per-transaction logging).
    op_chains: Box<[CachePadded<OpChain>]>,
    /// The directory, held locked (flock) while the database is open.
    _lock: File,
}

impl Log {
    pub fn read_only_reason(&self) -> Option<String> {
        self.sh.why.lock().clone()
    }

    pub fn report(&self) -> &RecoveryReport {
        &self.report
    }

    pub fn stats(&self) -> LogStats {
        LogStats {
            records: self.sh.records.load(SeqCst),
            bytes: self.sh.buf.reserved() - self.sh.start_lsn,
            durable_bytes: self.sh.durable.load(SeqCst) - self.sh.start_lsn,
            flushes: self.sh.flushes.load(SeqCst),
            checkpoints: self.checkpoints.load(SeqCst),
            async_waits: self.sh.async_waits.load(SeqCst),
            operation_records: self.sh.operation_records.load(SeqCst),
            flusher_quiet: self.sh.buf.quiet(&self.sh.idle),
        }
    }

    /// Pre-commit, before the commit timestamp is drawn: builds the redo
    /// record from the write set, and refuses the commit early (so the
    /// caller can still roll back cleanly) if the log has failed or the
    /// record cannot fit in the buffer.
    ///
    /// `slot` is the transaction's TID slot: under per-operation logging
    /// its operation records are already in the log, and the record is a
    /// chained commit naming them.
    pub fn prepare(&self, slot: usize, writes: &[WriteEntry]) -> Result<Redo> {
        if self.sh.failed.load(SeqCst) {
            return Err(self.sh.read_only_error());
        }
        let mut buf = REDO_BUF.take();
        match self.op_chains.get(slot).map(|c| c.take()) {
            Some((_, n)) if n & TOO_BIG != 0 => {
                REDO_BUF.set(buf);
                return Err(Error::Misuse(format!(
                    "an operation's log record ({} bytes) is larger than the log buffer \
                     (LogTuning::buffer_bytes = {}); split it or raise the buffer",
                    n & !TOO_BIG,
                    self.sh.buf.capacity()
                )));
            }
            Some((last, n)) if last != NO_PREV_OP => {
                record::commit_ops_record(&mut buf, last, n as u32);
                return Ok(Redo(buf));
            }
            // (No operation record: only if the log failed meanwhile, which
            // the check above or the publish then reports; a whole record
            // is right anyway.)
            _ => {}
        }
        let mut b = CommitBuilder::new(&mut buf);
        for w in writes {
            encode_write(&mut b, w, false);
        }
        b.finish();
        if buf.len() > self.sh.buf.capacity() {
            let n = buf.len();
            REDO_BUF.set(buf);
            return Err(Error::Misuse(format!(
                "the transaction's log record ({n} bytes) is larger than the log buffer \
                 (LogTuning::buffer_bytes = {}); split it or raise the buffer",
                self.sh.buf.capacity()
            )));
        }
        Ok(Redo(buf))
    }

    /// Whether every write goes to the log buffer as it is made
    /// (`LogGranularity::PerOperation`; see `log_op`).
    #[inline]
    pub fn per_operation(&self) -> bool {
        self.sh.per_op
    }

    /// Per-operation logging: the write `w` (just made, under its row's
    /// lock) reserves and fills its own record in the log buffer, naming
    /// the slot's previous one. `whole`: the write replaced the
    /// transaction's own earlier version of the row, so the record is the
    /// whole row (or the delete), not the changed columns: those are
    /// relative to the committed version, which an earlier operation of the
    /// transaction may have deleted by the time this one is replayed.
    /// If the log has failed, nothing is logged:
    /// the commit is refused at `prepare`. An operation too large for the
    /// buffer (it could never be published) marks the slot so that
    /// `prepare` refuses the commit.
    pub fn log_op(&self, slot: usize, w: &WriteEntry, whole: bool) {
        let Some(chain) = self.op_chains.get(slot) else {
            return;
        };
        if self.sh.failed.load(SeqCst) {
            return;
        }
        let n = chain.ops.load(Relaxed);
        if n & TOO_BIG != 0 {
            return;
        }
        let mut buf = REDO_BUF.take();
        let mut b = CommitBuilder::operation(&mut buf, chain.last.load(Relaxed));
        encode_write(&mut b, w, whole);
        b.finish();
        if buf.len() > self.sh.buf.capacity() {
            chain.ops.store(TOO_BIG | buf.len() as u64, Relaxed);
        } else {
            // The round trip: one fetch-and-add on the shared counter (the
            // clock, with LSN commit stamps), the copy into the ring, the
            // publishing store.
            let lsn = self.sh.buf.reserve(buf.len());
            record::seal(&mut buf, lsn, 0);
            let _ = self.publish_at(lsn, &buf);
            chain.last.store(lsn, Relaxed);
            chain.ops.store(n + 1, Relaxed);
        }
        REDO_BUF.set(buf);
    }

    /// Per-operation logging: the slot's transaction rolled back; its
    /// operation records stay in the log and no commit record will name
    /// them, so recovery discards them.
    pub fn drop_ops(&self, slot: usize) {
        if let Some(c) = self.op_chains.get(slot) {
            c.reset();
        }
    }

    /// Per-operation logging: the lowest LSN a checkpoint must replay from
    /// to see every operation record of a transaction not in it, read
    /// before the checkpoint's begin LSN (see "Log granularity" in the
    /// module doc): the reservation counter now, lowered to the oldest
    /// snapshot registered in `tids` (as an LSN).
    fn operations_floor(&self, tids: &crate::tid::TidTable) -> u64 {
        let now = self.sh.buf.reserved();
        let oldest = tids.min_begin(false);
        let k = self.stamp_offset.unwrap_or(0);
        now.min(oldest.saturating_sub(k))
    }

    /// Whether commit timestamps are LSNs (the clock is the reservation
    /// counter): then `reserve`/`publish`/`skip` replace `append`.
    #[inline]
    pub fn lsn_stamps(&self) -> bool {
        self.stamp_offset.is_some()
    }

    /// LSN commit stamps: the one fetch-and-add of a durable commit, made
    /// right after PRECOMMIT is announced and before validation. The
    /// counter's new value is the commit timestamp.
    #[inline]
    pub fn reserve(&self, redo: Redo) -> Reservation {
        let buf = redo.0;
        let lsn = self.sh.buf.reserve(buf.len());
        let k = self.stamp_offset.unwrap_or(0);
        Reservation {
            cts: lsn + buf.len() as u64 + k,
            lsn,
            buf,
            log: Arc::as_ptr(&self.sh) as usize,
        }
    }

    /// Validation passed: the commit record goes into its reserved place.
    #[inline]
    pub fn publish(&self, mut r: Reservation) -> Ticket {
        // (Taking the buffer disarms the reservation's drop.)
        let (mut buf, lsn, cts) = (std::mem::take(&mut r.buf), r.lsn, r.cts);
        record::seal(&mut buf, lsn, cts);
        let t = self.publish_at(lsn, &buf);
        REDO_BUF.set(buf);
        t
    }

    /// The transaction aborts after reserving: its range becomes a skip
    /// record, which the flusher writes like any other (it writes only a
    /// gap-free prefix, so the range must be filled) and recovery ignores.
    pub fn skip(&self, mut r: Reservation) {
        let (mut buf, lsn) = (std::mem::take(&mut r.buf), r.lsn);
        record::skip_record(&mut buf);
        record::seal(&mut buf, lsn, 0);
        // If the log failed, nothing more is written anyway.
        let _ = self.publish_at(lsn, &buf);
        REDO_BUF.set(buf);
    }

    /// From a rollback: fills the range of a reservation of this log that a
    /// panic dropped unpublished on this thread, if any (see `Reservation`).
    pub fn skip_lost(&self) {
        let Some((log, lsn, len)) = LOST.get() else {
            return;
        };
        if log != Arc::as_ptr(&self.sh) as usize {
            return;
        }
        LOST.set(None);
        let mut buf = vec![0u8; len];
        record::skip_record(&mut buf);
        record::seal(&mut buf, lsn, 0);
        let _ = self.publish_at(lsn, &buf);
    }

    /// LSN commit stamps: moves the clock past every timestamp drawn so
    /// far (as a bare `fetch_add` does for a separate clock) by reserving
    /// and publishing a minimal skip record. Returns the clock's new value.
    pub fn bump(&self) -> u64 {
        let mut buf = vec![0u8; MIN_RECORD_BYTES];
        let lsn = self.sh.buf.reserve(buf.len());
        record::skip_record(&mut buf);
        record::seal(&mut buf, lsn, 0);
        let _ = self.publish_at(lsn, &buf);
        lsn + buf.len() as u64 + self.stamp_offset.unwrap_or(0)
    }

    #[inline]
    fn publish_at(&self, lsn: u64, buf: &[u8]) -> Ticket {
        let sh = &self.sh;
        let published = sh.buf.publish(lsn, buf, &sh.failed);
        Ticket {
            end: lsn + buf.len() as u64,
            published,
        }
    }

    /// Reserves the record's place (the one fetch-and-add) and publishes it.
    /// Called after validation, before the versions become visible. Only
    /// where the clock is separate (`!lsn_stamps()`).
    pub fn append(&self, redo: Redo, cts: u64) -> Ticket {
        let mut buf = redo.0;
        let t = self.append_bytes(&mut buf, cts);
        REDO_BUF.set(buf);
        t
    }

    fn append_bytes(&self, buf: &mut [u8], cts: u64) -> Ticket {
        let lsn = self.sh.buf.reserve(buf.len());
        record::seal(buf, lsn, cts);
        self.publish_at(lsn, buf)
    }

    /// The database's sync policy (a commit may choose its own:
    /// `Transaction::commit_with`).
    #[inline]
    pub fn sync(&self) -> SyncPolicy {
        self.sh.sync
    }

    /// After the commit is visible: GroupCommit waits for the fsync, Async
    /// only past the loss bound (`sync`: this commit's policy).
    #[inline]
    pub fn finish_commit(&self, t: Ticket, sync: SyncPolicy) -> Result<()> {
        if !t.published {
            return Err(self.sh.read_only_error());
        }
        let sh = &self.sh;
        match sync {
            SyncPolicy::GroupCommit => sh.wait_durable(t.end),
            SyncPolicy::Async => {
                let durable = sh.durable.load(SeqCst);
                let unflushed = t.end.saturating_sub(durable);
                if unflushed > sh.max_unflushed / 2 && sh.idle.load(SeqCst) {
                    sh.wake();
                }
                if unflushed <= sh.max_unflushed {
                    return Ok(());
                }
                // The bound holds whenever the flusher runs: every
                // acknowledged end is within it of `durable`, which only
                // grows.
                sh.async_waits.fetch_add(1, SeqCst);
                sh.wait_durable(t.end - sh.max_unflushed)
            }
        }
    }

    /// After the commit is visible, instead of `finish_commit`: the ticket
    /// to wait on later (no waiting here, whatever the sync policy; under
    /// Async the byte bound is for acknowledged commits, and a pipelined
    /// one is acknowledged only when its ticket's wait returns).
    #[inline]
    pub fn pipelined(&self, t: Ticket) -> Result<CommitTicket> {
        if !t.published {
            return Err(self.sh.read_only_error());
        }
        Ok(self.ticket_at(t.end))
    }

    /// A ticket that is durable once the log is durable up to `lsn`.
    fn ticket_at(&self, lsn: u64) -> CommitTicket {
        CommitTicket {
            on: Some((self.sh.clone(), lsn)),
        }
    }

    /// The log position a committed transaction that logged nothing
    /// depends on, from `read_stamp` (`Transaction::read_stamp`): with LSN
    /// commit stamps a commit stamp *is* its record's end + K, so the
    /// largest stamp it read names the one record it waits for; nothing
    /// read, nothing to wait for. Reads not named one by one (scans, keys
    /// read as absent, a version still being stamped), and MVTO's separate
    /// clock, fall back to everything reserved so far, which covers every
    /// commit it could have read (see `CommitTicket`).
    ///
    /// ```text
    ///  log:  ...[W1 durable]|[W2 in flight][W3 in flight]   reserved ─┐
    ///  reader of W1's row ──> lsn = end(W1): no wait                  │
    ///  reader of W2's row ──> lsn = end(W2): waits for W2's fsync     │
    ///  reader that scanned ──> lsn = reserved ◄───────────────────────┘
    /// ```
    pub fn reader_lsn(&self, read_stamp: u64) -> u64 {
        match (read_stamp, self.stamp_offset) {
            (0, _) => 0,
            (s, Some(k)) if s != UNKNOWN_READS => s.saturating_sub(k),
            _ => self.sh.buf.reserved(),
        }
    }

    /// A committed transaction that logged nothing, instead of
    /// `finish_commit`: under GroupCommit it returns once the commits it
    /// read are durable (`reader_lsn`; usually they already are). Readers
    /// see a commit once it is decided, before its fsync (ERMIA's order:
    /// stamp the versions, then wait for the log), so without this a reader
    /// could acknowledge a value that a crash then loses. Async
    /// acknowledges before durability by design and does not wait.
    #[inline]
    pub fn finish_reader(&self, read_stamp: u64, sync: SyncPolicy) -> Result<()> {
        if sync == SyncPolicy::Async || read_stamp == 0 {
            return Ok(());
        }
        self.sh.wait_durable(self.reader_lsn(read_stamp))
    }

    /// The ticket of a committed transaction that logged nothing (see
    /// `reader_lsn`).
    pub fn ticket_for_reader(&self, read_stamp: u64) -> CommitTicket {
        self.ticket_at(self.reader_lsn(read_stamp))
    }

    /// Logs a catalog change; the caller holds the catalog lock and then
    /// waits (after releasing it) with `wait_durable`.
    pub fn catalog(&self, c: &CatalogRecord) -> Result<u64> {
        if self.sh.failed.load(SeqCst) {
            return Err(self.sh.read_only_error());
        }
        let mut buf = Vec::new();
        record::catalog_record(&mut buf, c);
        let t = self.append_bytes(&mut buf, 0);
        if !t.published {
            return Err(self.sh.read_only_error());
        }
        Ok(t.end)
    }

    /// Waits until the log is durable up to `lsn` (asks the flusher to
    /// flush now in Async mode).
    pub fn wait_durable(&self, lsn: u64) -> Result<()> {
        self.sh.wait_durable(lsn)
    }

    /// Waits until everything reserved so far is durable.
    pub fn sync_all(&self) -> Result<()> {
        if self.sh.failed.load(SeqCst) {
            return Err(self.sh.read_only_error());
        }
        self.sh.wait_durable(self.sh.buf.reserved())
    }

    /// Takes a checkpoint of `db` now (one at a time). `abandon()` turning
    /// true stops the scan (the database is closing).
    pub fn checkpoint(
        &self,
        db: &impl checkpoint::Source,
        abandon: impl Fn() -> bool,
    ) -> Result<checkpoint::CheckpointStats> {
        let _one = self.checkpoint_mx.lock();
        let start = std::time::Instant::now();
        let r = self.checkpoint_locked(db, abandon);
        let seen = match &r {
            Ok(s) => Ok((s.begin_lsn, s.bytes, s.rows)),
            Err(e) => Err(e.clone()),
        };
        crate::trace::checkpoint(start, seen);
        r
    }

    /// Writes a backup of `db` into the empty directory `stage`: a
    /// checkpoint of a snapshot taken now (writers go on), and a copy of
    /// the log from where its replay starts to the end the checkpoint saw,
    /// which recovery replays over it. So the backup opens as the database
    /// was at that end: a prefix of the log, whole transactions in commit
    /// order. Under the checkpoint lock: no checkpoint removes a segment
    /// the copy still reads. Returns the rows and the log bytes copied.
    pub fn backup(
        &self,
        db: &impl checkpoint::Source,
        stage: &std::path::Path,
    ) -> Result<(u64, u64)> {
        let _one = self.checkpoint_mx.lock();
        if self.sh.failed.load(SeqCst) {
            return Err(self.sh.read_only_error());
        }
        let floor = self.sh.per_op.then(|| self.operations_floor(db.tids()));
        let s = checkpoint::take(
            db,
            stage,
            || self.sh.buf.reserved(),
            floor,
            |l| self.sh.wait_durable(l),
            || false,
        )?;
        let m = checkpoint::read_manifest(stage)?.ok_or_else(|| {
            Error::Corrupt(format!("{}: the backup wrote no MANIFEST", stage.display()))
        })?;
        let bytes = segment::copy_range(&self.dir, stage, m.replay_from, m.end_lsn)
            .map_err(|e| Error::io(format!("copying the log into {}", stage.display()), e))?;
        Ok((s.rows, bytes))
    }

    /// [`Log::checkpoint`] under its lock.
    fn checkpoint_locked(
        &self,
        db: &impl checkpoint::Source,
        abandon: impl Fn() -> bool,
    ) -> Result<checkpoint::CheckpointStats> {
        if self.sh.failed.load(SeqCst) {
            return Err(self.sh.read_only_error());
        }
        // Read before the begin LSN: transactions that miss it began after.
        let floor = self.sh.per_op.then(|| self.operations_floor(db.tids()));
        let s = checkpoint::take(
            db,
            &self.dir,
            || self.sh.buf.reserved(),
            floor,
            |l| self.sh.wait_durable(l),
            abandon,
        )?;
        self.last_checkpoint_lsn.store(s.begin_lsn, SeqCst);
        self.checkpoints.fetch_add(1, SeqCst);
        Ok(s)
    }
}

impl OpChain {
    /// The chain so far (last LSN, count), leaving the slot empty for its
    /// next transaction.
    fn take(&self) -> (u64, u64) {
        let r = (self.last.load(Relaxed), self.ops.load(Relaxed));
        self.reset();
        r
    }
}

/// Appends the redo of one write of the write set to a commit or
/// operation record; `whole`: as a put of the whole row (or a delete) even
/// where it overwrote a committed version.
fn encode_write(b: &mut CommitBuilder<'_>, w: &WriteEntry, whole: bool) {
    // SAFETY: tables outlive transactions, and our own newest
    // versions are freed only by our commit or abort.
    // The version we overwrote is locked by us and alive until our
    // commit (GC cannot pass it before).
    let (t, v): (_, &Version) = unsafe { (&*w.table, &*w.new) };
    let old = unsafe { w.old.as_ref() }.filter(|o| !whole && !o.is_tombstone());
    // `with_values`: in-place schemes keep no row image in the
    // version (our new values are in the master we hold locked).
    match old {
        _ if v.is_tombstone() => b.delete(t.id, v.data()),
        // Only the changed columns of an update go to the log.
        Some(o) => storage::with_values(v, |nv| {
            storage::with_values(o, |ov| b.update(t.id, &t.schema.primary_key, nv, ov))
        }),
        None => storage::with_values(v, |nv| b.put(t.id, nv)),
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        self.sh.shutdown.store(true, SeqCst);
        self.sh.wake();
        if let Some(h) = self.flusher.lock().take() {
            let _ = h.join();
        }
    }
}

/// Whether a durable database with these options stamps commits with LSNs
/// (the clock is the log's reservation counter). Not under MVTO, whose
/// commit timestamp is its begin timestamp, drawn from the clock at begin
/// (a bare increment that would leave a hole in the log).
pub(crate) fn lsn_stamps(opts: &Options) -> bool {
    matches!(opts.durability, crate::options::Durability::Wal { .. })
        && opts.protocol != crate::options::Protocol::Mvto
}

/// Starts the flusher for a recovered directory (the database attaches
/// the log and starts its checkpointer, `db::recovery`). With `stamps =
/// Some((clock, K))` the log's reservation counter is the clock, set here
/// to the log's end + K (no transaction runs yet).
pub(crate) fn start(
    opts: &Options,
    dir: PathBuf,
    lock: File,
    writer: SegmentWriter,
    report: RecoveryReport,
    checkpoint_lsn: u64,
    stamps: Option<(buffer::Counter, u64)>,
) -> Result<Log> {
    let tuning = &opts.log_tuning;
    let sync = match &opts.durability {
        crate::options::Durability::Wal { sync, .. } => *sync,
        crate::options::Durability::None => unreachable!("start is called for Wal only"),
    };
    let start = writer.end;
    let stamp_offset = stamps.as_ref().map(|s| s.1);
    let buf = match stamps {
        Some((clock, k)) => LogBuffer::on_counter(tuning.buffer_bytes, start, clock, k),
        None => LogBuffer::new(tuning.buffer_bytes, start),
    };
    let sh = Arc::new(Shared {
        buf,
        sync,
        interval: tuning.async_flush_interval,
        failed: AtomicBool::new(false),
        why: Mutex::new(None),
        durable: AtomicU64::new(start),
        durable_mx: Mutex::new(()),
        durable_cv: Condvar::new(),
        shutdown: AtomicBool::new(false),
        start_lsn: start,
        records: AtomicU64::new(0),
        operation_records: AtomicU64::new(0),
        per_op: opts.log_granularity == crate::options::LogGranularity::PerOperation,
        flushes: AtomicU64::new(0),
        max_unflushed: tuning.async_max_unflushed_bytes,
        async_waits: AtomicU64::new(0),
        idle: AtomicBool::new(false),
    });
    let sh2 = Arc::clone(&sh);
    let h = std::thread::Builder::new()
        .name("strata-log-flusher".into())
        .spawn(move || flusher(sh2, writer))
        .map_err(|e| Error::io("cannot start the log flusher", e))?;
    let log = Log {
        sh,
        flusher: Mutex::new(Some(h)),
        dir,
        report,
        checkpoint_every: tuning.checkpoint_every_bytes,
        checkpoint_mx: Mutex::new(()),
        last_checkpoint_lsn: AtomicU64::new(checkpoint_lsn),
        checkpoints: AtomicU64::new(0),
        stamp_offset,
        op_chains: if opts.log_granularity == crate::options::LogGranularity::PerOperation {
            (0..opts.max_open_transactions)
                .map(|_| CachePadded::new(OpChain::new()))
                .collect()
        } else {
            Box::new([])
        },
        _lock: lock,
    };
    Ok(log)
}

impl Log {
    /// For the background checkpointer: `None` once the log is shut down
    /// or failed (no checkpoint can be taken), else whether `every` bytes
    /// of log were made durable since the last checkpoint.
    pub fn checkpoint_due(&self, every: u64) -> Option<bool> {
        if self.sh.shutdown.load(SeqCst) || self.sh.failed.load(SeqCst) {
            return None;
        }
        let since =
            (self.sh.durable.load(SeqCst)).saturating_sub(self.last_checkpoint_lsn.load(SeqCst));
        Some(since >= every)
    }

    /// `LogTuning::checkpoint_every_bytes`.
    pub fn checkpoint_every(&self) -> Option<u64> {
        self.checkpoint_every
    }
}
