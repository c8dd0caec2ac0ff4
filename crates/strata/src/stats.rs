//! Counters and the `Database::stats()` snapshot.
//!
//! Commit and abort counts are kept per transaction slot ([`TxnCounts`],
//! one padded line each, beside the TID table): only a slot's occupant
//! writes them, so counting is a plain load and store on a line no other
//! thread writes, not a locked instruction. `stats()` sums them over the
//! slots.

use crate::error::ConflictKind;
use crate::sync::counted::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

/// One transaction slot's commit and abort counts (see the module doc).
#[derive(Default)]
pub(crate) struct TxnCounts {
    commits: AtomicU64,
    read_only_commits: AtomicU64,
    aborts: [AtomicU64; crate::ConflictKind::ALL.len()],
    user_aborts: AtomicU64,
    blind_overwrites: AtomicU64,
    writer_waits: AtomicU64,
    deferred_writes: AtomicU64,
    index_writes: AtomicU64,
    /// What this slot's transactions' writes allocated in the version
    /// store (`storage::meter`).
    storage_allocations: AtomicU64,
    storage_bytes_allocated: AtomicU64,
}

/// Adds one; only the slot's occupant calls it (no other writer exists,
/// and readers tolerate a count that is one behind).
fn bump(c: &AtomicU64) {
    add(c, 1);
}

/// Adds `n`, as [`bump`].
#[track_caller]
fn add(c: &AtomicU64, n: u64) {
    c.store(c.load(Relaxed) + n, Relaxed);
}

impl TxnCounts {
    pub fn commit(&self, read_only: bool) {
        bump(if read_only {
            &self.read_only_commits
        } else {
            &self.commits
        });
    }
    /// A conflict abort (and its writes' allocations: their bytes).
    pub fn conflict(&self, kind: ConflictKind) -> u64 {
        bump(&self.aborts[kind.index()]);
        self.storage()
    }
    /// A caller's abort (and its writes' allocations: their bytes).
    pub fn user_abort(&self) -> u64 {
        bump(&self.user_aborts);
        self.storage()
    }
    pub fn blind_overwrite(&self) {
        bump(&self.blind_overwrites);
    }
    pub fn writer_wait(&self) {
        bump(&self.writer_waits);
    }
    pub fn deferred_write(&self) {
        bump(&self.deferred_writes);
    }
    /// The transaction wrote `n` more index entries.
    pub fn index_writes(&self, n: u64) {
        add(&self.index_writes, n);
    }
    /// Takes the allocations this thread's version store made since the
    /// last hand-over (`storage::meter::take_unflushed`): the ending
    /// transaction's writes. A committing transaction that wrote calls it;
    /// an abort counts them itself.
    /// Returns their bytes (for the memory gauge).
    #[inline]
    pub fn storage(&self) -> u64 {
        let (n, bytes) = crate::storage::meter::take_unflushed();
        if n != 0 {
            add(&self.storage_allocations, n);
            add(&self.storage_bytes_allocated, bytes);
        }
        bytes
    }
    /// Commits so far, read-write and read-only.
    pub fn commits(&self) -> u64 {
        self.commits.load(Relaxed) + self.read_only_commits.load(Relaxed)
    }
    pub fn add_to(&self, st: &mut Stats) {
        st.commits += self.commits.load(Relaxed);
        st.read_only_commits += self.read_only_commits.load(Relaxed);
        st.user_aborts += self.user_aborts.load(Relaxed);
        st.blind_overwrites += self.blind_overwrites.load(Relaxed);
        st.writer_waits += self.writer_waits.load(Relaxed);
        st.deferred_writes += self.deferred_writes.load(Relaxed);
        st.index_entry_writes += self.index_writes.load(Relaxed);
        st.storage_allocations += self.storage_allocations.load(Relaxed);
        st.storage_bytes_allocated += self.storage_bytes_allocated.load(Relaxed);
        for (k, a) in self.aborts.iter().enumerate() {
            st.aborts_by_reason[k].1 += a.load(Relaxed);
        }
    }
}

/// The engine's bytes in use against `Options::memory_limit`: what
/// commits, aborts and collectors handed over as allocated, less what they
/// retired (`storage::meter`): the version store's blocks, the text and
/// byte payloads their holders own, and index entries (an estimate per
/// entry).
///
/// ```text
///  commit / abort / GC pass ── meter hand-over ──> allocated += a, retired += r
///  dropped table reclaimed, dropped index freed ──> retired += what it held
///  insert / update ── in_use() > limit? ── GC pass, look again ── Err(MemoryLimit)
/// ```
///
/// The invariant: once every transaction has ended and GC has reclaimed
/// what it can, `in_use` is what the live rows hold (their blocks and
/// payloads) and their index entries; it goes back to where it started
/// when every row is deleted and collected, or the table dropped and
/// reclaimed (`tests/memory_limit.rs`, under every storage scheme). Each
/// holder releases what it counted when it took it (`storage::meter`'s
/// module doc), so nothing depends on who frees last.
///
/// Kept only when a limit is set: each hand-over is then a shared add on
/// this (padded) line, a cost a database without a limit does not pay.
/// Nor does such a database count payloads or index entries at all: its
/// holders take and release under its flag, off for its life
/// (`storage::meter::Gauged`, chosen over a process-wide switch, which
/// could not stay symmetric, and over cheaper counting, which still read
/// each text's length), so its writes and retirements skip the counting
/// and its figure is 0, not a partial count.
/// What a transaction still open has allocated is counted at its end, and
/// what an abort's rollback retires, at once; MV-PBT partitions count
/// their in-memory records and filters directly (an add here as P_N takes
/// or lets go of a record, as a frozen partition is built and freed); the
/// indirection arrays, spilled MV-PBT records and the log's buffers are
/// not counted (see `Options::memory_limit`).
pub(crate) struct MemoryGauge {
    /// `u64::MAX`: no limit (nothing is counted).
    limit: u64,
    allocated: AtomicU64,
    retired: AtomicU64,
}

impl Default for MemoryGauge {
    fn default() -> MemoryGauge {
        MemoryGauge::new(None)
    }
}

impl MemoryGauge {
    pub fn new(limit: Option<u64>) -> MemoryGauge {
        MemoryGauge {
            limit: limit.unwrap_or(u64::MAX),
            allocated: AtomicU64::new(0),
            retired: AtomicU64::new(0),
        }
    }

    /// The limit, if one is set.
    #[inline]
    pub fn limit(&self) -> Option<u64> {
        (self.limit != u64::MAX).then_some(self.limit)
    }

    /// Hands over `allocated` bytes, and the bytes this thread retired and
    /// its holders took and let go out of line since its last hand-over.
    ///
    /// Without a limit nothing is taken: a database with a limit on the
    /// same thread then counts this one's retirements as its own (low by
    /// them), the price of a commit path that pays nothing without one.
    #[inline]
    pub fn hand_over(&self, allocated: u64) {
        if self.limit == u64::MAX {
            return;
        }
        let retired = crate::storage::meter::take_unflushed_retired();
        let (held, released) = crate::storage::meter::take_unflushed_held();
        self.add(allocated + held, retired + released);
    }

    /// Adds what a hand-over took (a collector's pass computes its own).
    #[inline]
    pub fn add(&self, allocated: u64, retired: u64) {
        if self.limit == u64::MAX {
            return;
        }
        if allocated != 0 {
            self.allocated.fetch_add(allocated, Relaxed);
        }
        if retired != 0 {
            self.retired.fetch_add(retired, Relaxed);
        }
    }

    /// Bytes in use (0 without a limit).
    pub fn in_use(&self) -> u64 {
        // Retired first: a racing hand-over then shows its allocation and
        // not yet its retirement, never the reverse (no false low).
        let retired = self.retired.load(Relaxed);
        self.allocated.load(Relaxed).saturating_sub(retired)
    }

    /// Whether a write must be refused now (over a limit that is set).
    #[inline]
    pub fn over(&self) -> bool {
        self.limit != u64::MAX && self.in_use() > self.limit
    }
}

/// GC's counters (GC runs on any thread, so these are shared atomics).
#[derive(Default)]
pub(crate) struct Counters {
    pub versions_reclaimed: AtomicU64,
    pub gc_passes: AtomicU64,
    pub blocks_scanned: AtomicU64,
    pub blocks_skipped: AtomicU64,
    pub dead_zone_pruned: AtomicU64,
    /// What collectors allocated in the version store (merged records)
    /// and retired from it (`storage::meter`).
    pub storage_allocations: AtomicU64,
    pub storage_bytes_allocated: AtomicU64,
    pub bytes_freed: AtomicU64,
}

impl Counters {
    /// Adds what a collector's pass allocated (count, bytes) and retired
    /// (bytes) in the version store (`storage::meter`): shared adds only
    /// for a pass that did something.
    pub fn storage(&self, (n, bytes): (u64, u64), freed: u64) {
        if n != 0 {
            self.storage_allocations.fetch_add(n, Relaxed);
            self.storage_bytes_allocated.fetch_add(bytes, Relaxed);
        }
        if freed != 0 {
            self.bytes_freed.fetch_add(freed, Relaxed);
        }
    }

    pub fn fill(&self, st: &mut Stats) {
        st.versions_reclaimed = self.versions_reclaimed.load(Relaxed);
        st.gc_passes = self.gc_passes.load(Relaxed);
        st.gc_blocks_scanned = self.blocks_scanned.load(Relaxed);
        st.gc_blocks_skipped = self.blocks_skipped.load(Relaxed);
        st.versions_pruned_in_dead_zones = self.dead_zone_pruned.load(Relaxed);
        st.storage_allocations += self.storage_allocations.load(Relaxed);
        st.storage_bytes_allocated += self.storage_bytes_allocated.load(Relaxed);
        st.gc_bytes_freed += self.bytes_freed.load(Relaxed);
    }
}

/// A snapshot of the engine's counters and memory, from `Database::stats()`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Stats {
    /// Read-write transactions committed.
    pub commits: u64,
    /// Read-only transactions committed.
    pub read_only_commits: u64,
    /// Conflict aborts, by reason.
    pub aborts_by_reason: [(crate::ConflictKind, u64); crate::ConflictKind::ALL.len()],
    /// Transactions rolled back by the caller (`abort()` or drop).
    pub user_aborts: u64,
    /// SI+SSN writes that landed on a version committed after the
    /// writer's snapshot (`Options::ssn_blind_writes`).
    pub blind_overwrites: u64,
    /// Writes that found the row locked by a deciding transaction and
    /// waited for it instead of aborting (SI+SSN with blind overwrites).
    pub writer_waits: u64,
    /// Updates and deletes buffered to be installed at commit
    /// (`WriteInstall::AtCommit`; the rest took the eager path: absent
    /// rows, rows the protocol's write check already refused, tables with
    /// a unique secondary index, rows the transaction had written).
    pub deferred_writes: u64,
    /// Rows (chains with a head) over all tables.
    pub rows: u64,
    /// Versions currently linked in chains, tombstones included.
    pub live_versions: u64,
    /// Bytes of those versions: header, row image, text and byte-string
    /// payloads.
    pub version_bytes: u64,
    /// Of `version_bytes`, what lives in the main table: every version of the
    /// append-only schemes; the master and newest header of the in-place
    /// ones.
    pub main_table_bytes: u64,
    /// Of `version_bytes`, what lives in the time-travel or delta store
    /// (older headers and their copies / deltas; SIRO: the off-row
    /// versions); 0 for append-only.
    pub version_store_bytes: u64,
    /// Bytes of the version headers alone.
    pub header_bytes: u64,
    /// Approximate bytes of primary index entries.
    pub index_bytes: u64,
    /// Bytes of the indirection arrays (8 per tuple id handed out).
    pub indirection_bytes: u64,
    /// Index entries transactions wrote (committed or rolled back): primary
    /// entries they inserted or, under physical pointers on N2O chains,
    /// re-pointed at a row's new version (or back, by a rollback);
    /// secondary entries and MV-PBT records they added.
    /// Per update of non-indexed columns: 0 with logical pointers, one per
    /// index of the table (the primary included) with physical ones on N2O
    /// (Wu et al. §6).
    pub index_entry_writes: u64,
    /// Entries in secondary indexes (stale ones GC has not removed yet
    /// included; with physical pointers one per version).
    pub secondary_index_entries: u64,
    /// Approximate bytes of those entries (key, value, slot overhead).
    pub secondary_index_bytes: u64,
    /// Longest version chain.
    pub longest_chain: u64,
    /// Rows by chain length (versions, tombstones included).
    pub chain_lengths: std::collections::BTreeMap<u64, u64>,
    /// Versions garbage collection has unlinked from their chains and
    /// retired so far. Counted at the unlink, not when the memory goes: a
    /// retired version is freed once every thread pinned then has moved on
    /// (`gc_bytes_freed` says the same of its bytes). A pass counts what it
    /// unlinked before it lets go of what it cut under (COOP's workers as
    /// they cut): a pass running on a GC thread may have cut rows (gone
    /// from `live_versions`) that it has not counted yet, but once
    /// `Database::collect_garbage` returns, every pass it waited for has
    /// counted its work.
    pub versions_reclaimed: u64,
    /// Garbage collection passes run.
    pub gc_passes: u64,
    /// Transaction-level collection: committers' passes run by a thread
    /// that took them over from the leader, which had fallen behind
    /// (`gc::transaction_level`: a pass's own cache lines move between
    /// cores once per takeover).
    pub gc_pass_takeovers: u64,
    /// Transaction-level collection: wake-ups of the GC thread that found
    /// a committer's pass run since its last one and ran none (the
    /// committers keep pace; `gc::transaction_level`).
    pub gc_background_skips: u64,
    /// Tuple-level vacuum: blocks of tuples scanned, and blocks skipped
    /// because the dirty-block bitmap said nothing changed there.
    pub gc_blocks_scanned: u64,
    pub gc_blocks_skipped: u64,
    /// Of `versions_reclaimed`, versions `GcPolicy::DeadZone` pruned above
    /// the horizon (read by no live snapshot, in the middle of a chain).
    pub versions_pruned_in_dead_zones: u64,
    /// Blocks the version store allocated for transactions' writes and
    /// collectors' merges: version blocks (an in-place update's also holds
    /// the record of the version it overwrites: one block per update under
    /// every scheme), records of their own (a merge's, an abort's, a
    /// replaced write's) and masters (one per inserted row of an in-place
    /// scheme). Counted where they are made (`storage::meter`), so per
    /// committed transaction it is what Wu et al. §7.3 compares.
    pub storage_allocations: u64,
    /// Bytes of those blocks.
    pub storage_bytes_allocated: u64,
    /// Bytes of version blocks, records and masters garbage collection
    /// retired (freed once every thread pinned then has moved on): with
    /// `storage_bytes_allocated`, the memory the version store takes and
    /// gives back over a run (Wu et al. Figs. 18-21). Writers' own undone
    /// versions are not GC's and not counted.
    pub gc_bytes_freed: u64,
    /// Versions garbage collection walked to find the secondary-index
    /// entries it must remove: each version it retires, and the versions
    /// it keeps when a retired one had another key. Grows with
    /// `versions_reclaimed`, not with its square (`tests/gc_secondary.rs`).
    pub gc_index_steps: u64,
    /// Transactions open right now.
    pub open_transactions: u64,
    /// `Options::memory_limit`, if set.
    pub memory_limit: Option<u64>,
    /// Bytes in use counted against the limit: the version store's
    /// blocks, the text and byte payloads they hold, and index entries (an
    /// estimate per entry, MV-PBT's in-memory records and filters; not
    /// its spilled records). Always 0 when no limit is set: such a
    /// database counts nothing, blocks, payloads or entries, so that the
    /// counting costs it nothing (see `Options::memory_limit` for what is
    /// counted and how; a limit beyond reach, `u64::MAX >> 1`, counts
    /// with no refusal). Without a limit, `Database::stats` walks the
    /// tables for what they hold (`main_table_bytes`,
    /// `version_store_bytes`, `index_bytes`, `secondary_index_bytes`).
    pub memory_in_use: u64,
    /// Dropped (or altered) tables whose memory is not freed yet: a
    /// transaction open at the drop is still running, or a handle to the
    /// table is still held (see `Database::drop_table`).
    pub dropped_tables_waiting: u64,
    /// Dropped (or altered) tables whose memory was freed.
    pub tables_reclaimed: u64,
    /// SI+SSI: SIREAD marks held (one per version read and reader),
    /// until no transaction that could be concurrent with their reader is
    /// left; 0 under the other protocols. Counted by `stats()`, not
    /// `counters()` (O(marks)).
    pub siread_marks: u64,
    /// SI+SSN and SI+SSI: scan records held on tables and secondary
    /// indexes (one per committed range scan, until no open transaction
    /// can conflict with it); 0 under the other protocols. Counted by
    /// `stats()`, not `counters()`.
    pub scan_records: u64,
    /// Per memory space: chunks, bytes reserved and in use, free slots
    /// (empty with `MemorySpaces::System`).
    pub memory_spaces: Vec<crate::storage::space::SpaceStats>,
    /// SIRO's pruning breakdown (all zero under the other schemes).
    pub siro: SiroStats,
    /// MV-PBT indexes (`IndexKind::MvPbt`), all of them together.
    pub mvpbt: MvPbtStats,
}

/// MV-PBT figures (`index::mvpbt`): partitions, records, filters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct MvPbtStats {
    /// MV-PBT indexes.
    pub indexes: u64,
    /// Frozen (immutable, sorted) partitions P_0..P_{N-1}.
    pub frozen_partitions: u64,
    /// Records in the writable partitions P_N.
    pub active_records: u64,
    /// Records in the frozen partitions.
    pub frozen_records: u64,
    /// Freezes run (Algorithm 4).
    pub freezes: u64,
    /// Records the freezes dropped: no live or future snapshot could see
    /// them (§5.6), or their writer aborted.
    pub records_dropped_at_freeze: u64,
    /// Records writers removed from P_N before its freeze: older records of
    /// the row they wrote, superseded by one every snapshot at or above the
    /// published horizon sees (§5.6 phase 2).
    pub records_purged_from_p_n: u64,
    /// Bytes of the per-partition Bloom filters on the full index key.
    pub bloom_bytes: u64,
    /// Bytes of the per-partition prefix Bloom filters (first column).
    pub prefix_bloom_bytes: u64,
    /// Partition filter probes by point lookups and prefix scans.
    pub filter_probes: u64,
    /// Probes answered "absent": the partition was skipped.
    pub filter_skips: u64,
    /// Probes answered "maybe" where the partition held no record of the
    /// key or prefix.
    pub filter_false_positives: u64,
    /// Index-only visibility checks (Algorithm 3, read-only scans): the
    /// records they visited, and the rows they found visible. The ratio is
    /// the records a scan steps over per row it returns (MV-PBT Fig. 12a:
    /// under physical references a record per version).
    pub index_only_records_visited: u64,
    pub index_only_rows: u64,
    /// Frozen partitions whose decided records are in a spill file
    /// (`Options::mvpbt_spill_dir`), read through a memory map.
    pub spilled_partitions: u64,
    /// Records in those files (part of `frozen_records`).
    pub spilled_records: u64,
    /// Bytes of those files.
    pub spilled_bytes: u64,
    /// Spills the operating system refused (disk full, permissions): the
    /// partition stayed in memory.
    pub spill_failures: u64,
    /// Spill files found truncated or corrupt when mapped: the partition
    /// stayed in memory, rebuilt from the records the freeze held.
    pub spill_corrupt_rebuilt: u64,
}

impl MvPbtStats {
    /// False positives over all probes of keys absent from the partition
    /// (a Bloom filter has no false negatives: every skip was right).
    pub fn false_positive_rate(&self) -> f64 {
        let absent = self.filter_false_positives + self.filter_skips;
        if absent == 0 {
            return 0.0;
        }
        self.filter_false_positives as f64 / absent as f64
    }

    pub(crate) fn add(&mut self, o: &MvPbtStats) {
        self.indexes += o.indexes;
        self.frozen_partitions += o.frozen_partitions;
        self.active_records += o.active_records;
        self.frozen_records += o.frozen_records;
        self.freezes += o.freezes;
        self.records_dropped_at_freeze += o.records_dropped_at_freeze;
        self.records_purged_from_p_n += o.records_purged_from_p_n;
        self.bloom_bytes += o.bloom_bytes;
        self.prefix_bloom_bytes += o.prefix_bloom_bytes;
        self.filter_probes += o.filter_probes;
        self.index_only_records_visited += o.index_only_records_visited;
        self.index_only_rows += o.index_only_rows;
        self.filter_skips += o.filter_skips;
        self.filter_false_positives += o.filter_false_positives;
        self.spilled_partitions += o.spilled_partitions;
        self.spilled_records += o.spilled_records;
        self.spilled_bytes += o.spilled_bytes;
        self.spill_failures += o.spill_failures;
        self.spill_corrupt_rebuilt += o.spill_corrupt_rebuilt;
    }
}

/// SIRO version storage's pruning breakdown (vDriver Fig. 15), summed over
/// tables. Per class, indexed HOT, COLD, LLT (`storage::siro::Class`).
/// In-row and off-row bytes are `Stats::main_table_bytes` and
/// `Stats::version_store_bytes` (SIRO counts its previous version's copy
/// in-row and its segments' images off-row).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SiroStats {
    /// Versions dead when they left the row: never copied off-row.
    pub pruned_at_relocation: [u64; 3],
    /// Versions copied off-row into a segment of their class.
    pub relocated: [u64; 3],
    /// What kept each version copied off-row from its first prune (not
    /// per class): the oldest live snapshot (an LLT's, while one is
    /// open), a younger one (an updater's), or the published zones'
    /// floor (overwritten after the last GC pass built them).
    pub relocated_for: [u64; 3],
    /// Off-row versions unlinked with their whole dead segment.
    pub segment_pruned: [u64; 3],
    /// Off-row versions unlinked one by one (the dead-zone row step).
    pub cleaned: [u64; 3],
    /// Segments dropped whole.
    pub segments_dropped: u64,
    /// Segments holding locators now (open ones included).
    pub segments: [u64; 3],
    /// Cut-I events (vDriver §3.4, Fig. 8): passes whose dead segments
    /// were consecutive in one cluster.
    pub cut_i: u64,
    /// Cut-II events: passes whose dead segments were not (a live segment
    /// between them, or several clusters).
    pub cut_ii: u64,
    /// Chains a cut took from the 0-hole to the 1-hole state.
    pub holes_opened: u64,
    /// Fixups: cuts that filled every hole of a chain.
    pub fixups: u64,
    /// Holes the row step filled (unlinking them with the row's other
    /// dead versions).
    pub holes_cleaned: u64,
    /// Chains in the 1-hole state now.
    pub one_hole_chains: u64,
    /// Collaborative cleaning (Fig. 9), contested rows: the cutter won
    /// (the writer waited, then relocated) ...
    pub cutter_won: u64,
    /// ... or the writer won (and did the cutter's cut of the row too).
    pub sorter_won: u64,
    /// Aborts undone by the toggle: the previous version's in-row copy
    /// became current again, nothing copied back (vDriver §3.5).
    pub aborts_toggled: u64,
}

impl SiroStats {
    /// Off-row versions still kept, per class (relocated and not yet
    /// unlinked; versions of rows deleted whole leave this count too late
    /// or never, so it is an upper bound).
    pub fn kept(&self) -> [u64; 3] {
        std::array::from_fn(|i| {
            self.relocated[i].saturating_sub(self.segment_pruned[i] + self.cleaned[i])
        })
    }

    pub(crate) fn add(&mut self, st: &crate::storage::siro::Siro) {
        use std::sync::atomic::Ordering::Relaxed;
        let c = &st.counters;
        for i in 0..3 {
            self.pruned_at_relocation[i] += c.pruned_at_relocation[i].load(Relaxed);
            self.relocated[i] += c.relocated[i].load(Relaxed);
            self.relocated_for[i] += c.relocated_for[i].load(Relaxed);
            self.segment_pruned[i] += c.segment_pruned[i].load(Relaxed);
            self.cleaned[i] += c.cleaned[i].load(Relaxed);
        }
        self.segments_dropped += c.segments_dropped.load(Relaxed);
        self.cut_i += c.cut_i.load(Relaxed);
        self.cut_ii += c.cut_ii.load(Relaxed);
        self.holes_opened += c.holes_opened.load(Relaxed);
        self.fixups += c.fixups.load(Relaxed);
        self.holes_cleaned += c.holes_cleaned.load(Relaxed);
        self.one_hole_chains += st.one_hole_chains() as u64;
        self.cutter_won += c.cutter_won.load(Relaxed);
        self.sorter_won += c.sorter_won.load(Relaxed);
        self.aborts_toggled += c.aborts_toggled.load(Relaxed);
        for (o, n) in self.segments.iter_mut().zip(st.segment_counts()) {
            *o += n as u64;
        }
    }
}

impl Stats {
    pub(crate) fn empty() -> Self {
        Stats {
            commits: 0,
            read_only_commits: 0,
            aborts_by_reason: ConflictKind::ALL.map(|k| (k, 0)),
            user_aborts: 0,
            blind_overwrites: 0,
            writer_waits: 0,
            deferred_writes: 0,
            rows: 0,
            live_versions: 0,
            version_bytes: 0,
            main_table_bytes: 0,
            version_store_bytes: 0,
            header_bytes: 0,
            index_bytes: 0,
            indirection_bytes: 0,
            index_entry_writes: 0,
            secondary_index_entries: 0,
            secondary_index_bytes: 0,
            longest_chain: 0,
            chain_lengths: Default::default(),
            versions_reclaimed: 0,
            gc_passes: 0,
            gc_pass_takeovers: 0,
            gc_background_skips: 0,
            gc_blocks_scanned: 0,
            gc_blocks_skipped: 0,
            versions_pruned_in_dead_zones: 0,
            gc_index_steps: 0,
            storage_allocations: 0,
            storage_bytes_allocated: 0,
            gc_bytes_freed: 0,
            open_transactions: 0,
            memory_limit: None,
            memory_in_use: 0,
            dropped_tables_waiting: 0,
            tables_reclaimed: 0,
            siread_marks: 0,
            scan_records: 0,
            memory_spaces: Vec::new(),
            siro: SiroStats::default(),
            mvpbt: MvPbtStats::default(),
        }
    }

    /// Conflict aborts of all kinds.
    pub fn aborts(&self) -> u64 {
        self.aborts_by_reason.iter().map(|(_, n)| n).sum()
    }

    /// Conflict aborts of one kind.
    pub fn aborts_of(&self, kind: ConflictKind) -> u64 {
        self.aborts_by_reason[kind.index()].1
    }

    /// Average version-chain length (live versions per row).
    pub fn avg_chain_length(&self) -> f64 {
        if self.rows == 0 {
            return 0.0;
        }
        self.live_versions as f64 / self.rows as f64
    }

    /// Bytes per row: versions + index entries + indirection slots.
    pub fn bytes_per_row(&self) -> f64 {
        if self.rows == 0 {
            return 0.0;
        }
        (self.version_bytes + self.index_bytes + self.indirection_bytes) as f64 / self.rows as f64
    }
}
