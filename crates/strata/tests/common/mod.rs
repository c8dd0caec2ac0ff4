#![allow(dead_code)]
//! Helpers shared by the integration tests, and the configuration
//! generator: the one place a test gets the protocols, version storage
//! schemes, GC policies and index-pointer schemes it runs over.
//!
//! Every list starts from the enums' `ALL` and keeps what
//! `Options::validate` accepts (the validity matrix), so a variant added to
//! an enum and the matrix reaches every test over its dimension with no
//! test edit. A test that runs over a subset for a reason names the reason
//! as a predicate defined here (`readers_hold_back_gc`, `is_tuple_level`,
//! ...) and filters the generated list with it; it never writes the list.
//! The predicates are exhaustive matches, so a new variant must be placed
//! on one side of each (here, once). `tests/config_lists.rs` fails if a
//! literal list of variants comes back in a test.

use std::collections::HashSet;
use std::fmt;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use strata::{
    row, Database, GcPolicy, IndexPointers, Options, Protocol, Schema, Table, Type, VersionStorage,
    WriteInstall,
};

/// The soak factor: `STRATA_SOAK=<n>` multiplies the work of the tests
/// that scale (transactions, rounds, fuzz cases); unset, it is 1. Every
/// test reads it here: a value that is not a whole number of at least 1
/// (`0`, `-2`, `1.5`, `x`) fails the test with a message, since a run that
/// silently did no work, or the default work, would pass as a soak it was
/// not.
pub fn soak() -> u32 {
    soak_from(std::env::var("STRATA_SOAK").ok().as_deref()).unwrap_or_else(|why| panic!("{why}"))
}

/// `soak`'s parser, apart from the environment so that it can be tested.
pub fn soak_from(v: Option<&str>) -> Result<u32, String> {
    let Some(v) = v else { return Ok(1) };
    match v.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "STRATA_SOAK={v:?}: expected a whole number of at least 1 (the factor \
             that multiplies the soak tests' work), or unset for 1"
        )),
    }
}

/// A test's directory under the system temp dir, `<temp>/<name>-<pid>`,
/// removed on drop so that test runs do not pile up directories in /tmp;
/// kept when the test fails (drop while panicking), for a look at what it
/// left. Not `Clone`: one guard per directory; `d.clone()` gives the path.
pub struct TestDir(PathBuf);

impl TestDir {
    /// The directory, not created; whatever an earlier run of this process
    /// id left there is removed first.
    pub fn new(name: &str) -> TestDir {
        let d = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        TestDir(d)
    }

    /// [`TestDir::new`] in a memory file system (`/dev/shm`) where there
    /// is one, else the temp directory: for a test whose subject is not
    /// the disk but whose progress waits for fsyncs (each costs next to
    /// nothing there, where a loaded shared disk took 4-9 s for one).
    pub fn in_memory_fs(name: &str) -> TestDir {
        let shm = Path::new("/dev/shm");
        if !shm.is_dir() {
            return TestDir::new(name);
        }
        let d = shm.join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        TestDir(d)
    }
}

impl Deref for TestDir {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<Path> for TestDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The log segment files of database directory `d`, in order.
pub fn segments(d: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .collect();
    v.sort();
    v
}

pub fn db(p: Protocol) -> Database {
    Database::open(Options::default().protocol(p)).expect("valid options")
}

/// `kv(k INT, v INT, note TEXT)` with primary key k.
pub fn kv_table(db: &Database) -> Table {
    db.create_table(
        Schema::new("kv")
            .column("k", Type::Int)
            .column("v", Type::Int)
            .column("note", Type::Text)
            .primary_key(&["k"]),
    )
    .expect("create kv")
}

/// `kv(k INT, v INT, n INT)` with primary key k (the secondary-index tests
/// index `v`).
pub fn kvn_table(db: &Database) -> Table {
    db.create_table(
        Schema::new("kv")
            .column("k", Type::Int)
            .column("v", Type::Int)
            .column("n", Type::Int)
            .primary_key(&["k"]),
    )
    .expect("create kv")
}

/// Inserts keys with the given values in one transaction.
/// `t(k INT, v INT)` with primary key k and rows `0..rows`, each v = 0:
/// the table of the dead-zone and SIRO tests, which count versions.
pub fn counters_table(db: &Database, rows: i64) -> Table {
    let t = db
        .create_table(
            Schema::new("t")
                .column("k", Type::Int)
                .column("v", Type::Int)
                .primary_key(&["k"]),
        )
        .unwrap();
    db.run(|x| {
        for k in 0..rows {
            x.insert(&t, strata::row![k, 0])?;
        }
        Ok(())
    })
    .unwrap();
    t
}

/// Sets column `v` of row `k` in a transaction of its own.
pub fn set_v(db: &Database, t: &Table, k: i64, v: i64) {
    db.run(|x| x.update(t, &strata::key![k], &[("v", strata::Value::Int(v))]))
        .unwrap();
}

pub fn load(db: &Database, t: &Table, rows: &[(i64, i64)]) {
    let mut txn = db.begin().unwrap();
    for &(k, v) in rows {
        txn.insert(t, row![k, v, "n"]).unwrap();
    }
    txn.commit().unwrap();
}

pub fn value(db: &Database, t: &Table, k: i64) -> Option<i64> {
    let mut ro = db.begin_read_only().unwrap();
    ro.get(t, &strata::key![k])
        .unwrap()
        .map(|r| r[1].as_int().unwrap())
}

// ------------------------------------------------ configuration generator

/// One point of the design space: the four dimensions and the options
/// that select them (the generator's base options otherwise).
#[derive(Debug, Clone)]
pub struct Config {
    pub protocol: Protocol,
    pub storage: VersionStorage,
    pub gc: GcPolicy,
    pub pointers: IndexPointers,
    pub install: WriteInstall,
    pub opts: Options,
}

impl Config {
    pub fn open(&self) -> Database {
        Database::open(self.opts.clone()).unwrap_or_else(|e| panic!("{self}: {e}"))
    }
}

/// `protocol/storage/gc/pointers` with the options' short names, for
/// assertion messages.
impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}/{}/{}",
            self.protocol,
            self.storage,
            self.gc,
            strata::matrix::pointers_name(self.pointers)
        )?;
        if self.install != WriteInstall::Eager {
            write!(f, "/{}", self.install)?;
        }
        Ok(())
    }
}

/// Which configurations to generate: each dimension either stays at the
/// base options' value or runs over a filtered `ALL`. Iterating yields the
/// product, in `ALL` order, less what `Options::validate` refuses.
#[derive(Clone)]
pub struct Configs {
    base: Options,
    protocols: Option<Vec<Protocol>>,
    storages: Option<Vec<VersionStorage>>,
    gcs: Option<Vec<GcPolicy>>,
    pointers: Option<Vec<IndexPointers>>,
    installs: Option<Vec<WriteInstall>>,
}

/// The default options' configuration; widen it dimension by dimension:
/// `configs().protocols().storages()` is every valid protocol x storage
/// pair with the default GC and pointers.
pub fn configs() -> Configs {
    Configs {
        base: Options::default(),
        protocols: None,
        storages: None,
        gcs: None,
        pointers: None,
        installs: None,
    }
}

impl Configs {
    /// Changes the options every configuration starts from (`|o|
    /// o.gc_every_commits(1)`); a dimension not widened keeps their value.
    pub fn with(mut self, f: impl FnOnce(Options) -> Options) -> Self {
        self.base = f(self.base);
        self
    }

    pub fn protocols(self) -> Self {
        self.protocols_where(|_| true)
    }
    pub fn protocols_where(mut self, keep: impl Fn(Protocol) -> bool) -> Self {
        self.protocols = Some(Protocol::ALL.into_iter().filter(|&p| keep(p)).collect());
        self
    }
    pub fn protocol(mut self, p: Protocol) -> Self {
        self.protocols = Some(vec![p]);
        self
    }

    pub fn storages(self) -> Self {
        self.storages_where(|_| true)
    }
    pub fn storages_where(mut self, keep: impl Fn(VersionStorage) -> bool) -> Self {
        self.storages = Some(
            VersionStorage::ALL
                .into_iter()
                .filter(|&s| keep(s))
                .collect(),
        );
        self
    }
    pub fn storage(mut self, s: VersionStorage) -> Self {
        self.storages = Some(vec![s]);
        self
    }

    pub fn gc_policies(self) -> Self {
        self.gc_where(|_| true)
    }
    pub fn gc_where(mut self, keep: impl Fn(GcPolicy) -> bool) -> Self {
        self.gcs = Some(GcPolicy::ALL.into_iter().filter(|&g| keep(g)).collect());
        self
    }
    pub fn gc(mut self, g: GcPolicy) -> Self {
        self.gcs = Some(vec![g]);
        self
    }

    pub fn pointers(self) -> Self {
        self.pointers_where(|_| true)
    }
    pub fn pointers_where(mut self, keep: impl Fn(IndexPointers) -> bool) -> Self {
        self.pointers = Some(
            IndexPointers::ALL
                .into_iter()
                .filter(|&p| keep(p))
                .collect(),
        );
        self
    }
    pub fn pointer(mut self, p: IndexPointers) -> Self {
        self.pointers = Some(vec![p]);
        self
    }

    /// Both write installs (`WriteInstall::ALL`): eager and at commit.
    pub fn installs(mut self) -> Self {
        self.installs = Some(WriteInstall::ALL.to_vec());
        self
    }
    pub fn install(mut self, w: WriteInstall) -> Self {
        self.installs = Some(vec![w]);
        self
    }

    /// Every combination, valid or not.
    fn product(&self) -> Vec<Config> {
        let b = &self.base;
        let protocols = self.protocols.clone().unwrap_or_else(|| vec![b.protocol]);
        let storages = self
            .storages
            .clone()
            .unwrap_or_else(|| vec![b.version_storage]);
        let gcs = self.gcs.clone().unwrap_or_else(|| vec![b.gc]);
        let pointers = self
            .pointers
            .clone()
            .unwrap_or_else(|| vec![b.index_pointers]);
        let installs = self
            .installs
            .clone()
            .unwrap_or_else(|| vec![b.write_install]);
        let mut out = Vec::new();
        for &protocol in &protocols {
            for &storage in &storages {
                for &gc in &gcs {
                    for &ptr in &pointers {
                        for &install in &installs {
                            out.push(Config {
                                protocol,
                                storage,
                                gc,
                                pointers: ptr,
                                install,
                                opts: b
                                    .clone()
                                    .protocol(protocol)
                                    .version_storage(storage)
                                    .gc(gc)
                                    .index_pointers(ptr)
                                    .write_install(install),
                            });
                        }
                    }
                }
            }
        }
        out
    }

    /// The combinations `Options::validate` accepts. Panics when there is
    /// none (a test over nothing would pass without checking anything).
    pub fn valid(&self) -> Vec<Config> {
        let v: Vec<Config> = self
            .product()
            .into_iter()
            .filter(|c| c.opts.validate().is_ok())
            .collect();
        assert!(
            !v.is_empty(),
            "no valid configuration among {:?}",
            self.product()
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
        );
        v
    }

    /// The combinations `Options::validate` refuses (their `opts` do not
    /// open).
    pub fn rejected(&self) -> Vec<Config> {
        self.product()
            .into_iter()
            .filter(|c| c.opts.validate().is_err())
            .collect()
    }

    /// A sample of the valid combinations in which every variant of every
    /// dimension that appears in a valid combination appears at least
    /// once: for tests too costly to run on the whole product. Greedy: each
    /// pick is the first combination (in `ALL` order) covering the most
    /// variants not yet covered.
    pub fn covering(&self) -> Vec<Config> {
        fn marks(c: &Config) -> [String; 5] {
            [
                format!("p{:?}", c.protocol),
                format!("s{:?}", c.storage),
                format!("g{:?}", c.gc),
                format!("i{:?}", c.pointers),
                format!("w{:?}", c.install),
            ]
        }
        let gain = |c: &Config, missing: &HashSet<String>| {
            marks(c).iter().filter(|m| missing.contains(*m)).count()
        };
        let valid = self.valid();
        let mut missing: HashSet<String> = valid.iter().flat_map(marks).collect();
        let mut out = Vec::new();
        while !missing.is_empty() {
            let most = valid.iter().map(|c| gain(c, &missing)).max().unwrap();
            let best = valid.iter().find(|c| gain(c, &missing) == most).unwrap();
            for m in marks(best) {
                missing.remove(&m);
            }
            out.push(best.clone());
        }
        out
    }
}

impl IntoIterator for Configs {
    type Item = Config;
    type IntoIter = std::vec::IntoIter<Config>;
    fn into_iter(self) -> Self::IntoIter {
        self.valid().into_iter()
    }
}

/// Every protocol (valid with the default options).
pub fn protocols() -> impl Iterator<Item = Protocol> {
    protocols_where(|_| true)
}

/// The protocols (valid with the default options) that `keep` keeps.
pub fn protocols_where(keep: impl Fn(Protocol) -> bool) -> impl Iterator<Item = Protocol> {
    configs()
        .protocols_where(keep)
        .into_iter()
        .map(|c| c.protocol)
}

/// Every version storage scheme (valid with the default options).
pub fn storages() -> impl Iterator<Item = VersionStorage> {
    storages_where(|_| true)
}

/// The storage schemes (valid with the default options) that `keep` keeps.
pub fn storages_where(
    keep: impl Fn(VersionStorage) -> bool,
) -> impl Iterator<Item = VersionStorage> {
    configs()
        .storages_where(keep)
        .into_iter()
        .map(|c| c.storage)
}

/// Every version storage x index-pointer pair that `Options::validate`
/// accepts (physical pointers need append-only storage); the
/// secondary-index tests run on each.
pub fn storage_pointer_schemes() -> Vec<(VersionStorage, IndexPointers)> {
    configs()
        .storages()
        .pointers()
        .into_iter()
        .map(|c| (c.storage, c.pointers))
        .collect()
}

// -------------------------------------------- reasons for running a subset

pub fn default_protocol() -> Protocol {
    Options::default().protocol
}

pub fn default_storage() -> VersionStorage {
    Options::default().version_storage
}

pub fn default_gc() -> GcPolicy {
    Options::default().gc
}

/// Whether a reader's mark on a version can keep GC from unlinking it:
/// MVTO's read timestamp (until the horizon passes it), MV2PL's read lock
/// (until released). See `may_remove` in `db.rs`.
pub fn readers_hold_back_gc(p: Protocol) -> bool {
    match p {
        Protocol::Mvto | Protocol::Mv2pl => true,
        Protocol::Mvocc | Protocol::Si | Protocol::SiSsn | Protocol::SiSsi | Protocol::Occ => false,
    }
}

/// Whether a blind write over a version committed after the writer's
/// snapshot is refused (SI's first-updater-wins), with the default
/// options: SI and SSI; SSN's blind overwrites take it
/// (`Options::ssn_blind_writes`), MVTO orders it by timestamp, the OCCs
/// validate reads only.
pub fn refuses_blind_overwrites(p: Protocol) -> bool {
    match p {
        Protocol::Si | Protocol::SiSsi => true,
        Protocol::Mvto | Protocol::Mvocc | Protocol::Mv2pl | Protocol::SiSsn | Protocol::Occ => {
            false
        }
    }
}

/// The protocols a long GC run is worth its time on: the default one and
/// those whose readers can hold GC back.
pub fn stresses_gc(p: Protocol) -> bool {
    p == default_protocol() || readers_hold_back_gc(p)
}

/// Whether readers lock what they read, so that no writer changes it while
/// they read (MV2PL's reader count).
pub fn readers_lock(p: Protocol) -> bool {
    match p {
        Protocol::Mv2pl => true,
        Protocol::Mvto
        | Protocol::Mvocc
        | Protocol::Si
        | Protocol::SiSsn
        | Protocol::SiSsi
        | Protocol::Occ => false,
    }
}

/// Whether reads return the newest committed data rather than a version
/// picked by a snapshot or a timestamp (MV2PL under its read locks, OCC
/// without locks): a repeated read or scan in one transaction can see a
/// commit made meanwhile, which validation at commit must then refuse.
pub fn reads_newest_data(p: Protocol) -> bool {
    match p {
        Protocol::Mv2pl | Protocol::Occ => true,
        Protocol::Mvto | Protocol::Mvocc | Protocol::Si | Protocol::SiSsn | Protocol::SiSsi => {
            false
        }
    }
}

/// Whether the reads of an open transaction always form one consistent
/// state (a snapshot, timestamp order, or read locks that keep writers
/// out). Not OCC's (Silo's): it reads each row's newest committed version
/// at the moment of the read, unlocked, so a transaction can see one
/// writer's change to x and not its change to y; such a "doomed"
/// transaction is refused at commit by read validation.
pub fn reads_are_consistent_while_open(p: Protocol) -> bool {
    match p {
        Protocol::Occ => false,
        Protocol::Mvto
        | Protocol::Mvocc
        | Protocol::Mv2pl
        | Protocol::Si
        | Protocol::SiSsn
        | Protocol::SiSsi => true,
    }
}

/// Whether a read-only snapshot taken after a commit returned sees that
/// commit. Not MVTO's: its read-only snapshots stay below every running
/// writer's timestamp (a writer may still commit versions at it), so they
/// may miss commits that returned meanwhile.
pub fn read_only_sees_every_returned_commit(p: Protocol) -> bool {
    match p {
        Protocol::Mvto => false,
        Protocol::Mvocc
        | Protocol::Mv2pl
        | Protocol::Si
        | Protocol::SiSsn
        | Protocol::SiSsi
        | Protocol::Occ => true,
    }
}

/// Whether, with the write-ahead log on, the protocol's commit timestamp is
/// its log record's position (LSN commit stamps, one atomic per durable
/// commit). Not MVTO's: its timestamp is drawn at begin.
pub fn stamps_commits_with_lsns(p: Protocol) -> bool {
    match p {
        Protocol::Mvto => false,
        Protocol::Mvocc
        | Protocol::Mv2pl
        | Protocol::Si
        | Protocol::SiSsn
        | Protocol::SiSsi
        | Protocol::Occ => true,
    }
}

/// Whether a read-write transaction that wrote nothing but read and
/// scanned still goes through validation at commit (and so takes a commit
/// stamp): SSN and SSI (the read-only anomaly), MV2PL (its scans), OCC (its
/// reads are not a snapshot), MVOCC (as the study's does, Wu et al. §3.2:
/// only the READ ONLY hint skips it).
pub fn checks_commits_that_wrote_nothing(p: Protocol) -> bool {
    match p {
        Protocol::SiSsn | Protocol::SiSsi | Protocol::Mv2pl | Protocol::Occ | Protocol::Mvocc => {
            true
        }
        Protocol::Mvto | Protocol::Si => false,
    }
}

/// Whether every committer not begun READ ONLY, one that wrote nothing
/// included, is refused if a version it read is no longer the row's
/// newest when it validates (read-set validation: MVOCC, OCC). So an
/// overwrite committed between a transaction's read and its commit aborts
/// it, snapshot or not.
pub fn validates_read_sets_of_readers(p: Protocol) -> bool {
    match p {
        Protocol::Mvocc | Protocol::Occ => true,
        Protocol::Mvto | Protocol::Mv2pl | Protocol::Si | Protocol::SiSsn | Protocol::SiSsi => {
            false
        }
    }
}

/// Whether each overwrite leaves exactly one record (a time-travel copy or
/// a delta) that stays until its version goes: the in-place schemes but
/// SIRO, which also copies each in-row image off-row once its overwriter
/// has committed. (Append-only schemes keep no records.)
pub fn one_record_per_overwrite(s: VersionStorage) -> bool {
    match s {
        VersionStorage::TimeTravel | VersionStorage::Delta => true,
        VersionStorage::AppendNewToOld | VersionStorage::AppendOldToNew | VersionStorage::Siro => {
            false
        }
    }
}

/// Whether an update hands the texts it does not change over to the new
/// version (the append-only schemes' row images; `Version::alloc_update`)
/// rather than copying them into a record.
pub fn hands_texts_over(s: VersionStorage) -> bool {
    match s {
        VersionStorage::AppendNewToOld | VersionStorage::AppendOldToNew => true,
        VersionStorage::TimeTravel | VersionStorage::Delta | VersionStorage::Siro => false,
    }
}

/// Whether the policy reclaims versions at all.
pub fn reclaims(g: GcPolicy) -> bool {
    match g {
        GcPolicy::None => false,
        GcPolicy::TransactionLevel
        | GcPolicy::Vacuum
        | GcPolicy::Cooperative
        | GcPolicy::DeadZone => true,
    }
}

/// Whether the policy collects tuple by tuple (VAC's background passes,
/// COOP's workers, dead-zone pruning's VAC passes) rather than by committed
/// transaction, or not at all.
pub fn is_tuple_level(g: GcPolicy) -> bool {
    match g {
        GcPolicy::Vacuum | GcPolicy::Cooperative | GcPolicy::DeadZone => true,
        GcPolicy::None | GcPolicy::TransactionLevel => false,
    }
}

/// Whether the serial order is the commit order (2PL, OCC, TO), so that a
/// read-only snapshot of committed state is serializable as it is; under
/// the SI family a read-only snapshot can close a cycle between writers
/// (the read-only anomaly), which only SSN's and SSI's checks of read-write
/// transactions rule out.
pub fn serial_order_is_commit_order(p: Protocol) -> bool {
    match p {
        Protocol::Mvto | Protocol::Mvocc | Protocol::Mv2pl | Protocol::Occ => true,
        Protocol::Si | Protocol::SiSsn | Protocol::SiSsi => false,
    }
}

/// Whether the protocol's only guard against phantoms is the commit-time
/// re-scan of its scans and absent-key reads (MVOCC, MV2PL, OCC): what the
/// test-only `Database::skip_phantom_validation_for_testing` switches off.
/// SSN and SSI also publish scan records; MVTO uses ghosts and predicate
/// timestamps; SI allows phantoms.
pub fn phantom_check_is_rescan_only(p: Protocol) -> bool {
    match p {
        Protocol::Mvocc | Protocol::Mv2pl | Protocol::Occ => true,
        Protocol::Mvto | Protocol::Si | Protocol::SiSsn | Protocol::SiSsi => false,
    }
}

/// Whether the protocol leaves scan records on tables and indexes for
/// later inserters (SSN, SSI: `cc::predicate`), which GC prunes.
pub fn publishes_scan_records(p: Protocol) -> bool {
    match p {
        Protocol::SiSsn | Protocol::SiSsi => true,
        Protocol::Mvto | Protocol::Mvocc | Protocol::Mv2pl | Protocol::Occ | Protocol::Si => false,
    }
}

// `eventually`, `within` and `HANG_GUARD`: the unit tests' helpers
// (`src/test_util.rs`, std only), the same file compiled here.
#[path = "../../src/test_util.rs"]
mod test_util;
#[allow(unused_imports)] // Not every test binary uses all three.
pub use test_util::{eventually, within, HANG_GUARD};

/// `strata_verify::check` with the default options, looking harder where
/// the G-single search gave up: an SI history full of G2 cycles can run
/// out of the default `cycle_search_budget`, and an incomplete search is
/// never read as allowed (`AnomalyKind::SearchIncomplete`), so such a
/// history is checked again with 100 times the budget before a test
/// judges it. A search still incomplete then fails the test's verdict.
pub fn check_history(h: &strata_verify::History) -> strata_verify::Report {
    let opts = strata_verify::CheckOptions::default();
    let report = strata_verify::check(h, &opts);
    if report.is_complete() {
        return report;
    }
    let harder = strata_verify::CheckOptions {
        cycle_search_budget: opts.cycle_search_budget * 100,
        ..opts
    };
    strata_verify::check(h, &harder)
}
