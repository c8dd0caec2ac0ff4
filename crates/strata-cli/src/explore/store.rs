//! Where `explore`'s trials go as they are measured, and how a rerun finds
//! them again.
//!
//! ```text
//!   <out>/trials.csv   one row per trial, appended and flushed at once
//!      build, commit, machine, workload, cell, design, round, trial, run_s, metrics...
//!   rerun: rows with the same build, machine and workload fingerprint
//!          ──> Cache: (cell, design, round, trial, run_s) -> Trial
//! ```
//!
//! The invariant it owns: a trial is reused only if it was measured by the
//! same binary (a hash of the executable's bytes), on the same machine
//! (CPU model, cores, memory, host name) and for the same workload (a hash
//! of its description, or of the workload file's bytes), at the same point
//! of the same search. The search is deterministic given its measurements,
//! so a rerun replays the measured part and continues where it stopped.

use std::collections::{BTreeMap, HashMap};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::search::{Runner, Trial};
use super::space::Design;
use super::workload::{fnv, Workload};
use crate::UsageError;

/// What identifies the binary, its source and the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// A hash of the running executable's bytes.
    pub build: String,
    /// The git commit the binary was built from (`+dirty` with
    /// uncommitted changes), or `unknown` outside a checkout.
    pub commit: String,
    pub machine: String,
}

impl Provenance {
    pub fn here() -> Provenance {
        let build = std::env::current_exe()
            .and_then(std::fs::read)
            .map(|b| fnv(&b))
            .unwrap_or_else(|_| "unknown".into());
        Provenance {
            build,
            commit: option_env!("STRATA_GIT_COMMIT")
                .unwrap_or("unknown")
                .to_string(),
            machine: machine(),
        }
    }
}

/// `model, N cores, M GiB, host`.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<u64>().ok())
        })
        .map_or(0, |kib| (kib + (1 << 19)) >> 20);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    format!("{cpu}, {cores} cores, {gib} GiB, {host}")
}

const HEADER: [&str; 18] = [
    "build",
    "commit",
    "machine",
    "workload",
    "workload_description",
    "cell",
    "design",
    "round",
    "trial",
    "run_s",
    "committed_per_s",
    "p99_us",
    "abort_rate",
    "aborts_by_reason",
    "bytes_per_row",
    "longest_chain",
    "elapsed_s",
    "unix_time",
];

type Key = (String, String, usize, usize, String);

/// Which trials of the file a search may reuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reuse {
    None,
    /// Those of this binary on this machine (the default).
    SameBuild,
    /// Those of any binary on this machine (`--any-build`).
    AnyBuild,
}

/// The trials file: what it held for this build, machine and workload, and
/// the writer that appends new ones.
pub struct Store {
    path: PathBuf,
    prov: Provenance,
    cache: HashMap<Key, Trial>,
    file: std::fs::File,
}

fn run_key(run_s: f64) -> String {
    format!("{run_s:.1}")
}

fn reasons(m: &BTreeMap<String, u64>) -> String {
    m.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(";")
}

fn parse_reasons(s: &str) -> BTreeMap<String, u64> {
    s.split(';')
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
        .collect()
}

impl Store {
    /// Opens (or creates) `<dir>/trials.csv`; rows of other machines or
    /// workloads (and builds, unless [`Reuse::AnyBuild`]) stay in the file
    /// but are not reused.
    pub fn open(dir: &Path, prov: Provenance, reuse: Reuse) -> Result<Store, UsageError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| UsageError(format!("--out {}: {e}", dir.display())))?;
        let path = dir.join("trials.csv");
        let err = |e: &dyn std::fmt::Display| UsageError(format!("{}: {e}", path.display()));
        let mut cache = HashMap::new();
        let exists = path.metadata().map(|m| m.len() > 0).unwrap_or(false);
        if exists {
            let mut r = csv::Reader::from_path(&path).map_err(|e| err(&e))?;
            let headers = r.headers().map_err(|e| err(&e))?.clone();
            if headers.iter().collect::<Vec<_>>() != HEADER {
                return Err(err(
                    &"not an explore trials file (its header differs); choose \
                                 another --out",
                ));
            }
            for (i, rec) in r.records().enumerate() {
                let rec = rec.map_err(|e| err(&e))?;
                let bad = || err(&format!("line {}: a malformed row", i + 2));
                let f = |k: usize| rec.get(k).ok_or_else(bad);
                let num = |k: usize| -> Result<f64, UsageError> {
                    f(k)?.parse::<f64>().map_err(|_| bad())
                };
                let (build, machine) = (f(0)?, f(2)?);
                let build_ok = reuse == Reuse::AnyBuild || build == prov.build;
                if reuse == Reuse::None || !build_ok || machine != prov.machine {
                    continue;
                }
                let key = (
                    format!("{}|{}", f(3)?, f(5)?),
                    f(6)?.to_string(),
                    num(7)? as usize,
                    num(8)? as usize,
                    f(9)?.to_string(),
                );
                let trial = Trial {
                    committed_per_s: num(10)?,
                    p99_us: num(11)?,
                    abort_rate: num(12)?,
                    aborts_by_reason: parse_reasons(f(13)?),
                    bytes_per_row: num(14)?,
                    longest_chain: num(15)? as u64,
                    elapsed_s: num(16)?,
                };
                cache.insert(key, trial);
            }
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| err(&e))?;
        if !exists {
            writeln!(file, "{}", HEADER.join(",")).map_err(|e| err(&e))?;
        }
        Ok(Store {
            path,
            prov,
            cache,
            file,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn get(&self, key: &Key) -> Option<Trial> {
        self.cache.get(key).cloned()
    }

    #[allow(clippy::too_many_arguments)]
    fn append(
        &mut self,
        w: &Workload,
        cell: &str,
        d: &Design,
        round: usize,
        trial: usize,
        run_s: f64,
        t: &Trial,
    ) -> std::io::Result<()> {
        let mut row = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(Vec::new());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        row.write_record([
            self.prov.build.clone(),
            self.prov.commit.clone(),
            self.prov.machine.clone(),
            w.fingerprint(),
            w.describe(),
            cell.to_string(),
            d.label(),
            round.to_string(),
            trial.to_string(),
            run_key(run_s),
            format!("{:.1}", t.committed_per_s),
            format!("{:.2}", t.p99_us),
            format!("{:.6}", t.abort_rate),
            reasons(&t.aborts_by_reason),
            format!("{:.1}", t.bytes_per_row),
            t.longest_chain.to_string(),
            format!("{:.3}", t.elapsed_s),
            now.to_string(),
        ])?;
        let bytes = row.into_inner().map_err(|e| e.into_error())?;
        // One unbuffered write per row: Ctrl-C or a killed process keeps
        // every trial measured before it (no fsync: one per trial cost
        // the search's wall clock time it did not charge).
        self.file.write_all(&bytes)
    }
}

/// The search's runner for one grid cell: a cached trial if the store has
/// it, else a real run, appended at once.
pub struct CellRunner<'a> {
    pub store: &'a mut Store,
    pub workload: &'a Workload,
    pub cell: String,
    pub designs: &'a [Design],
    /// Trials reused, and run now.
    pub reused: usize,
    pub ran: usize,
    pub progress: &'a dyn Fn(&str),
    /// A trial measured but not written (a full disk): the search is
    /// stopped and the command fails with it.
    pub failed_write: Option<String>,
}

impl Runner for CellRunner<'_> {
    fn run(&mut self, p: usize, round: usize, trial: usize, run_s: f64) -> Result<Trial, String> {
        let d = &self.designs[p];
        let key = (
            format!("{}|{}", self.workload.fingerprint(), self.cell),
            d.label(),
            round,
            trial,
            run_key(run_s),
        );
        if let Some(t) = self.store.get(&key) {
            self.reused += 1;
            return Ok(t);
        }
        (self.progress)(&format!(
            "{}round {} trial {} {} ({run_s:.1} s)",
            if self.cell.is_empty() {
                String::new()
            } else {
                format!("[{}] ", self.cell)
            },
            round + 1,
            trial + 1,
            d.label()
        ));
        let t = self
            .workload
            .run(d, run_s, trial)
            .map_err(|e| e.to_string())?;
        if strata_workloads::driver::interrupted() {
            // Ctrl-C cut the run short: not a trial to keep or reuse.
            return Ok(t);
        }
        self.ran += 1;
        if let Err(e) = self
            .store
            .append(self.workload, &self.cell, d, round, trial, run_s, &t)
        {
            self.failed_write = Some(format!(
                "cannot append to {}: {e}",
                self.store.path.display()
            ));
            strata_workloads::driver::interrupt();
        }
        self.store.cache.insert(key, t.clone());
        Ok(t)
    }
}
