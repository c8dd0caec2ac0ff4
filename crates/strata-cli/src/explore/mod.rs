//! `strata explore`: which design wins on *your* workload. Every valid
//! combination of protocol × version storage × collector × index pointers ×
//! secondary-index kind runs on one workload, under a time budget
//! (successive halving: [`search`]), and the answer is a ranked table, a
//! Pareto plot, a heatmap over a parameter grid, and the winner's `Options`
//! to paste.
//!
//! ```text
//!   flags ──> Workload (workload) × grid cells ──> per cell:
//!     space::designs (the validity matrix, narrowed, folded)
//!     search::search(budget / cells, CellRunner) ── trials ──> store (<out>/trials.csv,
//!                                                   reused on a rerun: same build,
//!                                                   machine, workload)
//!   ──> report (table, winner set, recommendation), plots (pareto, heatmap),
//!       study (the Wu et al. §8 conclusions beside the map), <out>/report.md
//! ```
//!
//! The study behind it is Wu et al. (VLDB 2017), whose §8 ends with a table
//! of which design suits which workload, measured once on one machine;
//! `--study` runs that grid here (see `docs/EXPLORE.md`).

mod plots;
mod report;
pub mod search;
mod space;
mod store;
mod study;
mod workload;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use strata::{GcPolicy, IndexKind, IndexPointers, Protocol, VersionStorage};
use strata_workloads::ycsb::YcsbConfig;

use report::CellResult;
use search::{Config, Objective};
use space::Narrow;
use store::{CellRunner, Provenance, Store};
use workload::{Kind, Workload};

use crate::UsageError;

#[derive(Args, Debug, Clone)]
#[command(allow_negative_numbers = true)]
pub struct ExploreArgs {
    /// The workload: ycsb, tpcc, tpcc-hybrid, llt or htap.
    #[arg(
        long,
        value_enum,
        default_value = "ycsb",
        conflicts_with = "workload_file"
    )]
    pub workload: Kind,
    /// A workload described in a TOML or JSON file (docs/WORKLOAD_FILE.md).
    #[arg(long)]
    pub workload_file: Option<PathBuf>,
    /// Time for the whole search (all grid cells): `600`, `90s`, `10m`, `1h`.
    /// Default 10m (20m with --study).
    #[arg(long, value_parser = parse_budget)]
    pub budget: Option<f64>,
    /// What ranks the designs.
    #[arg(long, value_enum, default_value = "throughput")]
    pub objective: Objective,
    /// Only these protocols (comma list; default all).
    #[arg(long, value_delimiter = ',', value_parser = crate::parse_protocol)]
    pub protocol: Vec<Protocol>,
    /// Only these version storages (comma list).
    #[arg(long, value_delimiter = ',', value_parser = crate::parse_storage)]
    pub storage: Vec<VersionStorage>,
    /// Only these collectors (comma list).
    #[arg(long, value_delimiter = ',', value_parser = crate::parse_gc)]
    pub gc: Vec<GcPolicy>,
    /// Only these index pointers (comma list: tuple-id, pkey, physical).
    #[arg(long, value_delimiter = ',', value_parser = crate::parse_pointers)]
    pub pointers: Vec<IndexPointers>,
    /// Only these secondary-index kinds (comma list: standard, mvpbt).
    #[arg(long, value_delimiter = ',', value_parser = crate::ycsb_core_cmd::parse_index_kind)]
    pub index_kind: Vec<IndexKind>,
    /// A parameter to sweep, `name=v1,v2,...` (up to three; the first two
    /// are the heatmap's axes). Names: read-ratio, theta, threads,
    /// ops-per-txn, columns, secondary-indexes, records, warehouses,
    /// ro-threads.
    #[arg(long)]
    pub grid: Vec<String>,
    /// Run the grid behind the Peloton study's conclusions (Wu et al. §8):
    /// read-intensive and update-intensive YCSB, low and high skew, with
    /// and without a long reader, over the study's protocols, storages and
    /// collectors; the report sets the map beside the paper's findings.
    #[arg(long, conflicts_with_all = ["grid", "workload_file", "workload"])]
    pub study: bool,
    /// Folder of the results: trials.csv (appended as measured, reused by a
    /// rerun), report.md, result.json, pareto*.png, heatmap*.png.
    #[arg(long, default_value = "explore")]
    pub out: PathBuf,
    /// Measure every trial again: reuse none of <out>/trials.csv (the new
    /// trials are appended to it, the old ones stay).
    #[arg(long, conflicts_with = "any_build")]
    pub fresh: bool,
    /// Reuse trials measured by another build of strata too (same machine
    /// and workload): to redraw a report after a change that does not
    /// touch the engine. The report says so.
    #[arg(long)]
    pub any_build: bool,
    /// Rows loaded (YCSB, HTAP; LLT: rows per table). Default 100000
    /// (20000 with --study; 1000 per LLT table).
    #[arg(long)]
    pub records: Option<u64>,
    /// YCSB: fraction of operations that are reads.
    #[arg(long, default_value_t = 0.8)]
    pub read_ratio: f64,
    /// Zipfian skew of the keys (YCSB, LLT, HTAP).
    #[arg(long, default_value_t = 0.0)]
    pub theta: f64,
    /// YCSB: operations per transaction.
    #[arg(long, default_value_t = 10)]
    pub ops_per_txn: usize,
    /// YCSB: integer columns per row.
    #[arg(long, default_value_t = 10)]
    pub columns: usize,
    /// YCSB: secondary indexes (on the first columns).
    #[arg(long, default_value_t = 0)]
    pub secondary_indexes: usize,
    /// YCSB: extra threads of long read-only transactions (1,000 reads).
    #[arg(long, default_value_t = 0)]
    pub ro_threads: usize,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// TPC-C: warehouses (0: one per thread).
    #[arg(long, default_value_t = 1)]
    pub warehouses: u32,
    /// Points in the final round (each gets --final-trials trials).
    #[arg(long, default_value_t = 4)]
    pub finalists: usize,
    /// Trials of each finalist (at least 3).
    #[arg(long, default_value_t = 3)]
    pub final_trials: usize,
    /// The shortest run of one trial, seconds (a fifth is warm-up).
    #[arg(long, default_value_t = 0.5, value_parser = crate::parse_seconds)]
    pub min_run: f64,
    /// The longest run of one trial, seconds.
    #[arg(long, default_value_t = 20.0, value_parser = crate::parse_seconds)]
    pub max_run: f64,
    /// Random seed (trial t of a point uses seed + t).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// `600`, `600s`, `10m`, `1.5h` as seconds.
pub fn parse_budget(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, unit) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => (&t[..i], &t[i..]),
        None => (t, "s"),
    };
    let scale = match unit {
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(format!(
                "expected a time such as 600, 90s, 10m or 1h, got {s:?}"
            ))
        }
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("expected a time such as 600, 90s, 10m or 1h, got {s:?}"))?;
    let secs = v * scale;
    if secs.is_finite() && secs > 0.0 && secs <= crate::MAX_SECONDS {
        Ok(secs)
    } else {
        Err(format!(
            "the budget must be above 0 and at most a year, got {s:?}"
        ))
    }
}

/// `name=v1,v2` as (name, values).
fn parse_grid(s: &str) -> Result<(String, Vec<f64>), UsageError> {
    let bad = || {
        UsageError(format!(
            "--grid {s:?}: expected name=v1,v2,... (e.g. --grid theta=0,0.6,0.9)"
        ))
    };
    let (name, values) = s.split_once('=').ok_or_else(bad)?;
    let vs: Vec<f64> = values
        .split(',')
        .map(|v| v.trim().parse::<f64>().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    if vs.is_empty() {
        return Err(bad());
    }
    Ok((name.trim().to_string(), vs))
}

/// The grid's cells: every combination, the first parameter fastest.
fn cells(grid: &[(String, Vec<f64>)]) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    for (_, vs) in grid {
        out = out
            .into_iter()
            .flat_map(|c| {
                (0..vs.len()).map(move |i| {
                    let mut c = c.clone();
                    c.push(i);
                    c
                })
            })
            .collect();
    }
    // Lexicographic from the last parameter: the first moves fastest.
    out.sort_by(|a, b| a.iter().rev().cmp(b.iter().rev()));
    out
}

fn fmt_value(v: f64) -> String {
    format!("{v}")
}

pub fn run(a: &ExploreArgs) -> Result<ExitCode, UsageError> {
    let budget = a.budget.unwrap_or(if a.study { 1200.0 } else { 600.0 });
    let mut grid: Vec<(String, Vec<f64>)> = a
        .grid
        .iter()
        .map(|g| parse_grid(g))
        .collect::<Result<_, _>>()?;
    if grid.len() > 3 {
        return Err(UsageError(
            "--grid takes at most three parameters (the heatmap's two axes, and one more that \
             splits it)"
                .into(),
        ));
    }
    let mut narrow = Narrow {
        protocols: a.protocol.clone(),
        storages: a.storage.clone(),
        gcs: a.gc.clone(),
        pointers: a.pointers.clone(),
        index_kinds: a.index_kind.clone(),
    };
    let records = a.records;
    let mut base = Workload {
        kind: a.workload,
        file: None,
        ycsb: YcsbConfig {
            records: records.unwrap_or(if a.study { 20_000 } else { 100_000 }),
            read_ratio: a.read_ratio,
            theta: a.theta,
            ops_per_txn: a.ops_per_txn,
            attributes: a.columns,
            secondary_indexes: a.secondary_indexes,
            ro_threads: a.ro_threads,
            threads: a.threads,
            seed: a.seed,
            ..YcsbConfig::default()
        },
        warehouses: a.warehouses,
        llt_rows: if a.workload == Kind::Llt {
            records.unwrap_or(1_000)
        } else {
            1_000
        },
        seed: a.seed,
    };
    if let Some(path) = &a.workload_file {
        base.file = Some(workload::File::read(path.clone())?);
    }
    if a.study {
        study::configure(&mut base, &mut grid, &mut narrow);
    }
    let cells = cells(&grid);
    let mut plans = Vec::new();
    for c in &cells {
        let mut w = base.clone();
        let mut label = Vec::new();
        for (k, &i) in c.iter().enumerate() {
            let (name, vs) = &grid[k];
            w.set(name, vs[i])?;
            label.push(format!("{name}={}", fmt_value(vs[i])));
        }
        w.validate()?;
        let (designs, folded) = space::designs(&narrow, w.secondary_indexes());
        if designs.is_empty() {
            return Err(UsageError(
                "no valid design is left after --protocol/--storage/--gc/--pointers/--index-kind \
                 (see `strata matrix`)"
                    .into(),
            ));
        }
        plans.push((label.join(" "), c.clone(), w, designs, folded));
    }
    let per_cell = budget / plans.len() as f64;
    let config = |w: &Workload| Config {
        budget_s: per_cell,
        eta: 2,
        finalists: a.finalists.max(1),
        final_trials: a.final_trials.max(3),
        min_run_s: a.min_run.max(0.1).max(w.min_run_s()),
        max_run_s: a.max_run.max(a.min_run.max(0.1).max(w.min_run_s())),
        overhead_guess_s: w.overhead_guess_s(),
        objective: a.objective,
    };
    // Every cell must fit before any runs.
    for (label, _, w, designs, _) in &plans {
        let c = config(w);
        let sizes = search::schedule(designs.len(), c.eta, c.finalists);
        let needed = search::least_total(&sizes, &c);
        if needed > per_cell {
            let at = if label.is_empty() {
                String::new()
            } else {
                format!(" (cell {label})")
            };
            return Err(UsageError(format!(
                "a budget of {:.0} s per cell is too small{at}: the shortest search of {} \
                 designs needs about {needed:.0} s per cell ({} cell(s)); raise --budget to at \
                 least {:.0}s, or narrow the space (--protocol, --storage, --gc, --pointers, \
                 --index-kind), or load fewer --records",
                per_cell,
                designs.len(),
                plans.len(),
                (needed * plans.len() as f64).ceil()
            )));
        }
    }
    let prov = Provenance::here();
    let reuse = match (a.fresh, a.any_build) {
        (true, _) => store::Reuse::None,
        (false, false) => store::Reuse::SameBuild,
        (false, true) => store::Reuse::AnyBuild,
    };
    let mut store = Store::open(&a.out, prov.clone(), reuse)?;
    eprintln!(
        "explore: {} on {}; {} cell(s) × up to {} designs, budget {:.0} s ({:.0} s per cell); \
         trials to {}",
        base.name(),
        prov.machine,
        plans.len(),
        plans.iter().map(|p| p.3.len()).max().unwrap_or(0),
        budget,
        per_cell,
        store.path().display()
    );
    let mut results = Vec::new();
    let started = std::time::Instant::now();
    let progress = |s: &str| {
        eprintln!("[{:>5.0} s] {s}", started.elapsed().as_secs_f64());
    };
    for (label, values, w, designs, folded) in plans {
        let c = config(&w);
        let mut runner = CellRunner {
            store: &mut store,
            workload: &w,
            cell: label.clone(),
            designs: &designs,
            reused: 0,
            ran: 0,
            progress: &progress,
            failed_write: None,
        };
        let outcome = search::search(designs.len(), &c, &mut runner, &|| {
            strata_workloads::driver::interrupted()
        })
        .map_err(|e| UsageError(e.to_string()))?;
        let (reused, ran) = (runner.reused, runner.ran);
        if let Some(e) = runner.failed_write.take() {
            return Err(UsageError(e));
        }
        if reused > 0 {
            eprintln!(
                "{}reused {reused} trial(s) already measured by this build on this machine for \
                 this workload ({}); ran {ran}",
                if label.is_empty() {
                    String::new()
                } else {
                    format!("[{label}] ")
                },
                store.path().display()
            );
        }
        let values = values
            .iter()
            .enumerate()
            .map(|(k, &i)| grid[k].1[i])
            .collect();
        results.push(CellResult {
            label,
            values,
            workload: w,
            designs,
            folded,
            outcome,
            reused,
            ran,
        });
        if strata_workloads::driver::interrupted() {
            break;
        }
    }
    let text = write_outputs(a, &grid, &results, &prov, budget)?;
    println!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// Writes report.md, result.json and the plots; returns what to print.
fn write_outputs(
    a: &ExploreArgs,
    grid: &[(String, Vec<f64>)],
    results: &[CellResult],
    prov: &Provenance,
    budget: f64,
) -> Result<String, UsageError> {
    let err = |e: &dyn std::fmt::Display| UsageError(format!("{}: {e}", a.out.display()));
    let mut md = String::new();
    let first = results
        .first()
        .map(|r| r.workload.name())
        .unwrap_or_default();
    let _ = writeln!(md, "# strata explore: {first}\n");
    let _ = writeln!(
        md,
        "- machine: {}\n- build: {} (commit {}){}\n- budget: {:.0} s; objective: {}\n- command: \
         `{}`\n",
        prov.machine,
        prov.build,
        prov.commit,
        if a.any_build {
            "; --any-build: trials measured by other builds were reused (trials.csv names each \
             trial's build)"
        } else {
            ""
        },
        budget,
        a.objective.name(),
        std::env::args().collect::<Vec<_>>().join(" ")
    );
    let mut printed = String::new();
    for r in results {
        let head = if r.label.is_empty() {
            r.workload.describe()
        } else {
            format!("{} ({})", r.label, r.workload.describe())
        };
        let _ = writeln!(md, "## {head}\n\n{}", report::rounds(r));
        let _ = writeln!(md, "{}", report::table(r, 0));
        let _ = writeln!(md, "### Recommendation\n\n{}", report::recommendation(r));
        let _ = writeln!(printed, "== {head}\n{}", report::rounds(r));
        let _ = writeln!(printed, "{}", report::table(r, 12));
        let _ = writeln!(printed, "{}", report::recommendation(r));
        // The Pareto plot of this cell.
        let file = if r.label.is_empty() {
            "pareto.png".to_string()
        } else {
            format!("pareto-{}.png", slug(&r.label))
        };
        let dots: Vec<plots::Dot> = report::rows(r)
            .into_iter()
            .filter(|row| row.trials > 0 && !row.fate.starts_with("failed"))
            .map(|row| plots::Dot {
                finalist: row.rank.is_some(),
                label: row.design,
                bytes_per_row: row.bytes_per_row,
                committed_per_s: row.committed_per_s,
            })
            .collect();
        plots::pareto_png(
            &a.out.join(&file),
            &format!(
                "{}{}: throughput against memory",
                r.workload.name(),
                if r.label.is_empty() {
                    String::new()
                } else {
                    format!(", {}", r.label)
                }
            ),
            &dots,
        )
        .map_err(|e| err(&e))?;
        let _ = writeln!(md, "![Pareto plot]({file})\n");
    }
    if !grid.is_empty() {
        let maps = heatmaps(a, grid, results)?;
        let _ = writeln!(md, "## The map\n");
        let _ = writeln!(printed, "== The map");
        for (file, table) in maps {
            let _ = writeln!(md, "{table}\n![heatmap]({file})\n");
            let _ = writeln!(printed, "{table}");
        }
    }
    if a.study {
        let s = study::findings(results);
        let _ = writeln!(
            md,
            "## Beside the paper's conclusions (Wu et al. §8)\n\n{s}"
        );
        let _ = writeln!(
            printed,
            "== Beside the paper's conclusions (Wu et al. §8)\n{s}"
        );
    }
    if results.iter().any(|r| r.outcome.stopped.is_some()) {
        let _ = writeln!(
            printed,
            "note: the search stopped early; rerun the same command to continue (the trials in \
             {} are reused)",
            a.out.join("trials.csv").display()
        );
    }
    std::fs::write(a.out.join("report.md"), &md).map_err(|e| err(&e))?;
    let json = serde_json::json!({
        "machine": prov.machine,
        "build": prov.build,
        "commit": prov.commit,
        "budget_s": budget,
        "objective": a.objective.name(),
        "cells": results.iter().map(|r| serde_json::json!({
            "cell": r.label,
            "workload": r.workload.describe(),
            "spent_s": r.outcome.spent_s,
            "stopped": r.outcome.stopped.map(|s| format!("{s:?}")),
            "winners": r.outcome.winners.iter().map(|&p| r.designs[p].label()).collect::<Vec<_>>(),
            "ranked": r.outcome.ranked.iter().map(|&p| serde_json::json!({
                "design": r.designs[p].label(),
                "committed_per_s": r.outcome.points[p].median_of(|t| t.committed_per_s),
                "p99_us": r.outcome.points[p].median_of(|t| t.p99_us),
                "bytes_per_row": r.outcome.points[p].median_of(|t| t.bytes_per_row),
                "trials": r.outcome.points[p].last_trials().count(),
            })).collect::<Vec<_>>(),
            "recommendation": r.outcome.ranked.first().map(|&p| serde_json::json!({
                "rust": r.designs[p].rust(),
                "bench": r.workload.bench_command(&r.designs[p]),
            })),
        })).collect::<Vec<_>>(),
    });
    std::fs::write(
        a.out.join("result.json"),
        serde_json::to_string_pretty(&json).expect("serializable"),
    )
    .map_err(|e| err(&e))?;
    let _ = writeln!(printed, "report: {}", a.out.join("report.md").display());
    Ok(printed)
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The heatmaps of a grid (one per value of a third parameter), and each
/// as a Markdown table.
fn heatmaps(
    a: &ExploreArgs,
    grid: &[(String, Vec<f64>)],
    results: &[CellResult],
) -> Result<Vec<(String, String)>, UsageError> {
    let (xname, xs) = &grid[0];
    let (yname, ys) = grid
        .get(1)
        .map(|(n, v)| (n.clone(), v.clone()))
        .unwrap_or((String::new(), vec![0.0]));
    let splits: Vec<Option<(String, f64)>> = match grid.get(2) {
        Some((n, vs)) => vs.iter().map(|&v| Some((n.clone(), v))).collect(),
        None => vec![None],
    };
    let mut out = Vec::new();
    for split in splits {
        let mut cells = Vec::new();
        let mut table = format!(
            "| {} \\ {} |{}\n|---|{}\n",
            if yname.is_empty() { "-" } else { &yname },
            xname,
            xs.iter()
                .map(|x| format!(" {} |", fmt_value(*x)))
                .collect::<String>(),
            "---|".repeat(xs.len())
        );
        for (j, y) in ys.iter().enumerate().rev() {
            let _ = write!(
                table,
                "| {} |",
                if yname.is_empty() {
                    "-".into()
                } else {
                    fmt_value(*y)
                }
            );
            for (i, x) in xs.iter().enumerate() {
                let r = results.iter().find(|r| {
                    r.values.first() == Some(x)
                        && (grid.len() < 2 || r.values.get(1) == Some(y))
                        && split
                            .as_ref()
                            .is_none_or(|(_, v)| r.values.get(2) == Some(v))
                });
                let Some(r) = r else {
                    let _ = write!(table, " (not run) |");
                    continue;
                };
                let (winner, note) = winner_note(r);
                let _ = write!(table, " {winner}: {note} |");
                cells.push(plots::Cell {
                    at: (i, j),
                    winner,
                    note,
                });
            }
            table.push('\n');
        }
        let (file, title) = match &split {
            None => (
                "heatmap.png".to_string(),
                "winning design per cell".to_string(),
            ),
            Some((n, v)) => (
                format!("heatmap-{}.png", slug(&format!("{n}={v}"))),
                format!("winning design per cell, {n} = {v}"),
            ),
        };
        let axes = plots::Axes {
            title: format!("{title} ({})", a.objective.name()),
            x_name: xname.clone(),
            xs: xs.iter().map(|x| fmt_value(*x)).collect(),
            y_name: yname.clone(),
            ys: ys.iter().map(|y| fmt_value(*y)).collect(),
        };
        plots::heatmap_png(&a.out.join(&file), &axes, &cells)
            .map_err(|e| UsageError(format!("{}: {e}", a.out.display())))?;
        let head = match &split {
            None => String::new(),
            Some((n, v)) => format!("{n} = {v}:\n\n"),
        };
        out.push((file, format!("{head}{table}")));
    }
    Ok(out)
}

/// A cell's winner and its margin: `+8% over X`, or the others within its
/// noise.
fn winner_note(r: &CellResult) -> (String, String) {
    let out = &r.outcome;
    let Some(&w) = out.ranked.first() else {
        return ("none".into(), "no design completed a trial".into());
    };
    let o = out.objective;
    let winner = r.designs[w].label();
    if out.winners.len() > 1 {
        let others: Vec<String> = out.winners[1..]
            .iter()
            .map(|&p| r.designs[p].label())
            .collect();
        return (winner, format!("~ {}", others.join(", ")));
    }
    match out.ranked.get(1) {
        None => (winner, "alone".into()),
        Some(&q) => {
            let (a, b) = (out.points[w].median(o).abs(), out.points[q].median(o).abs());
            let margin = if o == Objective::Throughput {
                100.0 * (a / b.max(1e-9) - 1.0)
            } else {
                100.0 * (b / a.max(1e-9) - 1.0)
            };
            (
                winner,
                format!("+{margin:.0}% over {}", r.designs[q].label()),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_parse_with_units() {
        assert_eq!(parse_budget("600"), Ok(600.0));
        assert_eq!(parse_budget("90s"), Ok(90.0));
        assert_eq!(parse_budget("10m"), Ok(600.0));
        assert_eq!(parse_budget("1.5h"), Ok(5400.0));
        assert!(parse_budget("0").is_err());
        assert!(parse_budget("10d").is_err());
        assert!(parse_budget("-5m").is_err());
        assert!(parse_budget("m").is_err());
    }

    #[test]
    fn grids_parse_and_enumerate_every_cell() {
        let g = vec![
            parse_grid("read-ratio=0.5,1").ok().unwrap(),
            parse_grid("theta=0,0.6,0.9").ok().unwrap(),
        ];
        assert_eq!(g[1], ("theta".to_string(), vec![0.0, 0.6, 0.9]));
        let c = cells(&g);
        assert_eq!(c.len(), 6);
        assert_eq!(c[0], vec![0, 0]);
        assert_eq!(c[1], vec![1, 0]);
        assert_eq!(c[5], vec![1, 2]);
        assert_eq!(cells(&[]), vec![Vec::<usize>::new()]);
        assert!(parse_grid("theta").is_err());
        assert!(parse_grid("theta=a,b").is_err());
    }
}
