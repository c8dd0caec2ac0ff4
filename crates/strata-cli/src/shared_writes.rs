//! `--shared-writes` of `strata bench ycsb|tpcc`: the writes to cache
//! lines more than one thread wrote, per committed transaction and per
//! call site, over the measured window (issue 42's proxy for what stops a
//! write path from scaling past a few cores).
//!
//! ```text
//!  measure() ──> strata::shared_writes::reset(), commits counted so far
//!  finish()  ──> report() by site ÷ commits in the window ──> text | --json
//! ```
//!
//! Only the counting build counts (`RUSTFLAGS="--cfg strata_count"`, a
//! build of its own, as the shuttle models are; see the engine's
//! `sync::counting`); in any other build the flag is refused with how to
//! get one.

use serde::Serialize;
use strata::Database;
use strata_workloads::driver::Observer;

use crate::UsageError;

/// Refuses `--shared-writes` outside the counting build.
pub fn check_enabled() -> Result<(), UsageError> {
    if strata::shared_writes::ENABLED {
        return Ok(());
    }
    Err(UsageError(
        "--shared-writes needs the counting build: RUSTFLAGS=\"--cfg strata_count\" cargo run \
         --release --target-dir target/count -- bench ... --shared-writes (its numbers are \
         counts; its speed means nothing)"
            .into(),
    ))
}

/// One call site's writes per committed transaction.
#[derive(Debug, Clone, Serialize)]
pub struct Site {
    pub site: String,
    pub shared_per_commit: f64,
    /// Writes that took the line from the thread that wrote it last.
    pub moved_per_commit: f64,
    pub writes_per_commit: f64,
}

/// The window's writes per committed transaction (read-only ones
/// included), by site, most shared first.
#[derive(Debug, Clone, Serialize)]
pub struct SharedWrites {
    pub commits: u64,
    pub shared_per_commit: f64,
    pub moved_per_commit: f64,
    pub writes_per_commit: f64,
    /// Garbage-collection passes in the window, and of those, passes a
    /// committer ran after taking them over from the pass leader (the
    /// transaction-level collector's: its lines move once a takeover).
    pub gc_passes: u64,
    pub gc_pass_takeovers: u64,
    /// Wake-ups of the GC thread that found the committers' passes keeping
    /// pace and ran none.
    pub gc_background_skips: u64,
    pub sites: Vec<Site>,
}

impl SharedWrites {
    fn of(
        report: Vec<strata::shared_writes::SiteWrites>,
        commits: u64,
        gc: [u64; 3],
    ) -> SharedWrites {
        let per = |n: u64| n as f64 / commits.max(1) as f64;
        let [gc_passes, gc_pass_takeovers, gc_background_skips] = gc;
        SharedWrites {
            commits,
            gc_passes,
            gc_pass_takeovers,
            gc_background_skips,
            shared_per_commit: per(report.iter().map(|s| s.shared).sum()),
            moved_per_commit: per(report.iter().map(|s| s.moved).sum()),
            writes_per_commit: per(report.iter().map(|s| s.writes).sum()),
            sites: report
                .into_iter()
                .map(|s| Site {
                    shared_per_commit: per(s.shared),
                    moved_per_commit: per(s.moved),
                    writes_per_commit: per(s.writes),
                    site: s.site,
                })
                .collect(),
        }
    }

    /// The table `bench` prints: the sites with shared writes, then the
    /// total of the others.
    pub fn print(&self) {
        println!(
            "shared writes  {:.2} per commit to lines two or more threads wrote, {:.2} of them \
             taking the line from the thread that wrote it last ({:.2} writes per commit in all, \
             {} commits); budget: read-only 0, read-write 1 + the rows it writes",
            self.shared_per_commit, self.moved_per_commit, self.writes_per_commit, self.commits
        );
        println!(
            "  GC passes {} in the window, {} of them taken over from the pass leader; \
             the GC thread skipped {} wake-ups",
            self.gc_passes, self.gc_pass_takeovers, self.gc_background_skips
        );
        for s in self.sites.iter().filter(|s| s.shared_per_commit >= 0.005) {
            println!(
                "  {:>8.2} shared  {:>8.2} moved  {:>8.2} writes  {}",
                s.shared_per_commit, s.moved_per_commit, s.writes_per_commit, s.site
            );
        }
    }
}

fn commits(db: &Database) -> u64 {
    let c = db.counters();
    c.commits + c.read_only_commits
}

/// GC passes, takeovers and the GC thread's skipped wake-ups so far
/// (`Database::stats` locks the scan logs, a counted write: read outside
/// the window).
fn passes(db: &Database) -> [u64; 3] {
    let st = db.stats();
    [st.gc_passes, st.gc_pass_takeovers, st.gc_background_skips]
}

/// Wraps a run's observer: counts from the start of its measured window
/// to its end.
pub struct Counting<'a> {
    pub inner: &'a mut dyn Observer,
    pub db: Database,
    at: Option<(u64, [u64; 3])>,
    pub result: Option<SharedWrites>,
}

impl<'a> Counting<'a> {
    pub fn new(inner: &'a mut dyn Observer, db: Database) -> Self {
        Counting {
            inner,
            db,
            at: None,
            result: None,
        }
    }
}

impl Observer for Counting<'_> {
    fn start(&mut self, phase: &str, total: u64, unit: &str) {
        self.inner.start(phase, total, unit);
    }
    fn set(&mut self, pos: u64) {
        self.inner.set(pos);
    }
    fn measure(&mut self) {
        self.inner.measure();
        let gc = passes(&self.db);
        strata::shared_writes::reset();
        self.at = Some((commits(&self.db), gc));
    }
    fn finish(&mut self) {
        if let Some((at, gc0)) = self.at.take() {
            let report = strata::shared_writes::report();
            let n = commits(&self.db) - at;
            let gc = passes(&self.db);
            self.result = Some(SharedWrites::of(
                report,
                n,
                std::array::from_fn(|i| gc[i] - gc0[i]),
            ));
        }
        self.inner.finish();
    }
}
