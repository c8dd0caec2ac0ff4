//! `strata bench durable`: single-row durable commits, Strata's group
//! commit against peers that fsync every commit (see
//! `strata_workloads::durable`).
//!
//! ```text
//!   flags ──> DurableConfig ──> for each op, for each round, for each engine
//!             (interleaved) ──> durable::run ──> median per engine (text | JSON)
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use strata_workloads::durable::{self, CommitOp, DurableConfig, DurableReport};

use crate::progress::BarObserver;
use crate::UsageError;

#[derive(Args, Debug, Clone)]
pub struct DurableArgs {
    /// Engines, a comma list: strata (write-ahead log, group commit), redb
    /// (Durability::Immediate), rocksdb (TransactionDB, WAL, sync; needs the
    /// `rocksdb` feature).
    #[arg(long, value_delimiter = ',', default_value = "strata,redb")]
    pub engine: Vec<String>,
    /// The transaction: insert (a new row), update (a loaded row), or both
    /// (one run of each).
    #[arg(long, default_value = "both", value_parser = ["insert", "update", "both"])]
    pub op: String,
    /// Client threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Rows loaded before the run.
    #[arg(long, default_value_t = 10_000)]
    pub records: u64,
    /// Measured run time, in seconds.
    #[arg(long, default_value_t = 5.0, value_parser = crate::parse_seconds)]
    pub duration: f64,
    /// Unmeasured warm-up, in seconds.
    #[arg(long, default_value_t = 1.0, value_parser = crate::parse_seconds)]
    pub warmup: f64,
    /// Rounds; engines run interleaved (A B, A B, ...) and each reports its
    /// median round.
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
    /// Directory on the disk to measure: each engine works in its own new
    /// directory inside it, removed after its run. Default: the system's
    /// temporary directory (check it is not a RAM disk).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Strata's commits in flight per thread: above 1, each thread commits
    /// pipelined (`Transaction::commit_pipelined`) and acknowledges its
    /// oldest commit once that is durable, so one fsync covers more commits
    /// than there are threads. The peers have no pipelined commit and run
    /// one commit at a time whatever this says.
    #[arg(long, default_value_t = 1)]
    pub pipeline: usize,
    /// Print one JSON array of the median runs instead of the table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &DurableArgs) -> Result<ExitCode, UsageError> {
    let secs = crate::seconds;
    if a.runs == 0 {
        return Err(UsageError("--runs must be at least 1".into()));
    }
    for e in &a.engine {
        if !durable::ENGINES.contains(&e.as_str()) {
            return Err(UsageError(format!(
                "--engine {e:?}: expected a comma list of {}",
                durable::ENGINES.join(", ")
            )));
        }
    }
    let ops: Vec<CommitOp> = match a.op.as_str() {
        "insert" => vec![CommitOp::Insert],
        "update" => vec![CommitOp::Update],
        _ => CommitOp::ALL.to_vec(),
    };
    let base = DurableConfig {
        op: ops[0],
        records: a.records,
        threads: a.threads,
        warmup: secs("warmup", a.warmup)?,
        duration: secs("duration", a.duration)?,
        dir: a.dir.clone().unwrap_or_else(std::env::temp_dir),
        seed: a.seed,
        pipeline: a.pipeline,
    };
    base.validate().map_err(|e| UsageError(e.to_string()))?;
    let mut medians = Vec::new();
    for &op in &ops {
        let cfg = DurableConfig { op, ..base.clone() };
        let mut runs: Vec<Vec<DurableReport>> = vec![Vec::new(); a.engine.len()];
        for _ in 0..a.runs {
            for (i, e) in a.engine.iter().enumerate() {
                let r = durable::run(e, &cfg, &mut BarObserver::new(a.json));
                let Some(r) = crate::workload_outcome(r)? else {
                    return Ok(ExitCode::FAILURE);
                };
                runs[i].push(r);
                if strata_workloads::driver::interrupted() {
                    break;
                }
            }
        }
        for mut r in runs.into_iter().filter(|r| !r.is_empty()) {
            r.sort_by(|x, y| x.run.committed_per_s.total_cmp(&y.run.committed_per_s));
            let mid = r.len() / 2;
            medians.push(r.swap_remove(mid));
        }
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string(&medians).expect("the reports serialise")
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "durable commits  threads {}{}  records {}  {} s measured  dir {}{}",
        a.threads,
        if a.pipeline > 1 {
            format!(
                "  strata pipelined ({} in flight per thread; peers one at a time)",
                a.pipeline
            )
        } else {
            String::new()
        },
        a.records,
        a.duration,
        base.dir.display(),
        if a.runs > 1 {
            format!("  (median of {} interleaved runs)", a.runs)
        } else {
            String::new()
        }
    );
    println!(
        "{:<8} {:<8} {:>12} {:>10} {:>10} {:>10} {:>12}",
        "op", "engine", "txn/s", "p50 us", "p99 us", "vs strata", "txns/fsync"
    );
    for r in &medians {
        let strata = medians
            .iter()
            .find(|s| s.engine == "strata" && s.op == r.op)
            .map(|s| s.run.committed_per_s);
        println!(
            "{:<8} {:<8} {:>12.0} {:>10.1} {:>10.1} {:>10} {:>12}",
            r.op.name(),
            r.engine,
            r.run.committed_per_s,
            r.run.latency.p50_us,
            r.run.latency.p99_us,
            strata.map_or("-".into(), |s| format!(
                "{:.2}x",
                r.run.committed_per_s / s.max(1e-9)
            )),
            r.txns_per_fsync.map_or("-".into(), |f| format!("{f:.1}")),
        );
    }
    Ok(ExitCode::SUCCESS)
}
