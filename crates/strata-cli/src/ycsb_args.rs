//! The `bench ycsb` flags beyond the original ones (kept in their own struct
//! so `main.rs` only flattens it in).

use clap::Args;

/// Parses a mix name.
fn parse_mix(s: &str) -> Result<strata_workloads::ycsb::Mix, String> {
    s.parse()
        .map_err(|e: strata_workloads::WorkloadError| e.to_string())
}

#[derive(Args, Debug, Clone)]
pub struct YcsbExtra {
    /// The study's mixes: read-only, read-intensive (80% reads) or
    /// update-intensive (20% reads); overrides --read-ratio.
    #[arg(long, value_parser = parse_mix, conflicts_with = "read_ratio")]
    pub mix: Option<strata_workloads::ycsb::Mix>,
    /// Non-inline 100-byte text attributes per row (K).
    #[arg(long, default_value_t = 0)]
    pub text_attributes: usize,
    /// Attributes each read looks at (0: all of them).
    #[arg(long, default_value_t = 0)]
    pub read_attrs: usize,
    /// Integer attributes each update sets.
    #[arg(long, default_value_t = 1)]
    pub modify_attrs: usize,
    /// Updates set one random text attribute to a new 100-byte text
    /// instead of integers (needs --text-attributes).
    #[arg(long)]
    pub update_text: bool,
    /// Secondary indexes on the first integer attributes.
    #[arg(long, default_value_t = 0)]
    pub secondary_indexes: usize,
    /// The secondary indexes' structure: standard (the database's pointer
    /// scheme) or mvpbt (MV-PBT, index-only visibility).
    #[arg(long = "index", default_value = "standard", value_parser = crate::ycsb_core_cmd::parse_index_kind)]
    pub index_kind: strata::IndexKind,
    /// Extra threads running long read-only transactions (the heterogeneous
    /// workload of the study's Fig. 8/9).
    #[arg(long, default_value_t = 0)]
    pub ro_threads: usize,
    /// Reads per transaction of the extra read-only threads.
    #[arg(long, default_value_t = 1000)]
    pub ro_ops: usize,
    /// Begin read-only transactions (the whole mix at read ratio 1.0, and
    /// the extra --ro-threads) without the READ ONLY hint: as ordinary
    /// serializable transactions that do the protocol's full work (read set,
    /// validation), like a peer engine that has no such hint.
    #[arg(long)]
    pub no_ro_hint: bool,
    /// Do not hand each transaction's keys to Strata up front
    /// (`Transaction::prefetch`); every access then waits for its own
    /// cache misses. Peers get no prefetch either way.
    #[arg(long)]
    pub no_prefetch: bool,
    /// Count a transaction lost to a conflict and draw a new one, instead of
    /// running the same operations again until they commit.
    #[arg(long)]
    pub no_retry: bool,
    /// SI+SSN: abort a write to a row a concurrent transaction committed
    /// since our snapshot even when we never read the row (SI's
    /// first-updater-wins, as ERMIA publishes it), instead of writing over
    /// it and letting SSN order the two (`Options::ssn_blind_writes`).
    #[arg(long)]
    pub no_blind_writes: bool,
    /// MVTO: what a read of a version another running transaction has
    /// write-locked does: `abort` (the study's rule, Wu et al. §3.1; the
    /// default) or `abort-if-older-holder` (Strata's narrower rule;
    /// `Options::mvto_locked_read`).
    #[arg(long, value_name = "RULE", default_value_t = strata::MvtoLockedRead::Abort)]
    pub mvto_locked_read: strata::MvtoLockedRead,
    /// When updates and deletes go on their rows: `eager` (as they run,
    /// the papers' engines; the default) or `at-commit` (buffered and
    /// installed after the read phase, as Silo and Cicada;
    /// `Options::write_install`). Refused with mv2pl.
    #[arg(long, value_name = "WHEN", default_value_t = strata::WriteInstall::Eager)]
    pub write_install: strata::WriteInstall,
    /// How a transaction lost to a conflict waits before it runs again:
    /// `exponential` (random, below 2^attempt us; the default) or
    /// `regulated` (Cicada's contention regulation: one bound hill-climbed
    /// on the commit rate; `Options::backoff`).
    #[arg(long, value_name = "KIND", default_value_t = strata::Backoff::Exponential)]
    pub backoff: strata::Backoff,
    /// Print CSV (a header and one row per engine) instead of the summary.
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// Run every engine this many times, interleaved (A B, A B, ...), and
    /// report each engine's median run.
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
    /// Allocate versions from N separate memory spaces (the study's
    /// Fig. 16; thread k uses space k mod N); 0: the global allocator.
    /// Default: the engine's default.
    #[arg(long, value_name = "N")]
    pub memory_spaces: Option<usize>,
    /// Bytes each memory space grows by (a power of two, at least 4096).
    #[arg(long, value_name = "BYTES", default_value_t = strata::MemorySpaces::DEFAULT_INCREMENT)]
    pub space_increment: usize,
    /// Save committed transactions per second, once a second, to this CSV file.
    #[arg(long, value_name = "FILE")]
    pub series: Option<std::path::PathBuf>,
    /// A/B within this run: flip `strata::ab`'s switch every MS
    /// milliseconds of the measured window and report the median ratio of
    /// each "on" interval's throughput to its neighbouring "off" one's. For
    /// a build whose change is written behind `strata::ab::on()` (see
    /// docs/EXTENDING.md, "Measuring a change"); without one it measures
    /// the A/A spread.
    #[arg(long, value_name = "MS")]
    pub ab_ms: Option<u64>,
    /// Transparent huge pages: `os` (the operating system's choice, the
    /// default), `load` (for the loaded data only, none for memory the run
    /// touches first) or `off` (none).
    #[arg(long, value_name = "POLICY", value_parser = parse_huge_pages)]
    pub huge_pages: Option<strata_workloads::huge_pages::HugePages>,
    /// Count the writes to cache lines two or more threads wrote, per
    /// committed transaction and call site, over the measured window (the
    /// counting build only: `RUSTFLAGS="--cfg strata_count"`).
    #[arg(long)]
    pub shared_writes: bool,
    /// Time each transaction by engine component (index, version read,
    /// version install, CC at commit, log, log wait, GC, the rest) over the
    /// measured window and report it per committed transaction (ERMIA's
    /// Fig. 11; `Options::time_breakdown`, Strata's engines only).
    #[arg(long)]
    pub time_breakdown: bool,
}

/// Parses a `--huge-pages` policy.
pub fn parse_huge_pages(s: &str) -> Result<strata_workloads::huge_pages::HugePages, String> {
    s.parse()
}
