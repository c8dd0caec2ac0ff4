//! `strata reproduce ermia-fig2 | ermia-fig5 | ermia-fig12`: ERMIA's
//! TPC-C-hybrid experiments (Kim et al., SIGMOD 2016, §5 "TPC-C-hybrid",
//! §6.2, §6.5): TPC-C plus the read-mostly Q2* (`tpcc` module, `hybrid`),
//! run under Silo-style OCC, ERMIA-SI and ERMIA-SSN.
//!
//! ```text
//!  fig2:  per series, TPC-C then TPC-C-hybrid (Q2* size 0.2)
//!         -> commit ratio per transaction type (grouped bars, two PNGs)
//!  fig5:  per Q2* size in 1%..100%, per series: TPC-C-hybrid
//!         -> overall txn/s and Q2* commits/s normalised to SI, Q2* abort
//!            ratio (three PNGs); SI's absolute txn/s printed (Table 1)
//!  fig12: per size in {60%, 80%}, per thread count, three runs per series
//!         -> Q2* mean latency, the median run (min and max in the CSV)
//! ```
//!
//! The paper's scale factor is its thread count (§5): each point loads one
//! warehouse per worker thread, with the specification's 100,000 items
//! (`--records` sets the items instead) and, to keep loads short on a small
//! machine, 300 customers a district (the specification's 3,000 with
//! `--paper-scale`; Q2* does not read customers). The paper's three systems are the
//! series, plus SI+SSN with its exclusion test at commit only (fig5: what
//! the early check, ERMIA §3.3, is worth).

use serde::Serialize;
use strata::{Database, Options, Protocol};
use strata_workloads::driver::{DriverConfig, TypeReport};
use strata_workloads::tpcc::{self, TpccConfig, TpccReport, TYPES};

use super::findings::Measured;
use super::registry::{Config, Figure, Paper, Prepared, Setup};
use super::{FigureError, Outcome, ReproduceArgs};
use crate::plot::{bar_chart, line_chart_ticks, Bars, Line, XTicks};
use crate::progress::BarObserver;
use crate::UsageError;

/// The figures, in the paper's order.
pub const FIGURES: &[Figure] = &[
    Figure {
        name: "ermia-fig2",
        paper: Paper::Ermia,
        label: "Fig. 2",
        caption: "Commit ratio per transaction type, TPC-C and TPC-C-hybrid, under OCC, SI and SI+SSN",
        config: Config::Own(&HFig::Fig2),
        claims: &[],
        note: None,
    },
    Figure {
        name: "ermia-fig5",
        paper: Paper::Ermia,
        label: "Fig. 5, Table 1",
        caption: "TPC-C-hybrid against Q2* size: overall throughput, Q2* commits (normalised to SI), Q2* abort ratio",
        config: Config::Own(&HFig::Fig5),
        claims: &[],
        note: None,
    },
    Figure {
        name: "ermia-fig12",
        paper: Paper::Ermia,
        label: "Fig. 12",
        caption: "Q2* latency against threads at 60% and 80% Q2* size",
        config: Config::Own(&HFig::Fig12),
        claims: &[],
        note: None,
    },
];

/// Which of the paper's TPC-C-hybrid figures.
#[derive(Debug, Clone, Copy)]
enum HFig {
    Fig2,
    Fig5,
    Fig12,
}

impl Setup for HFig {
    fn prepare(
        &self,
        fig: &'static Figure,
        a: &ReproduceArgs,
    ) -> Result<Box<dyn Prepared>, UsageError> {
        let s = scale(a)?;
        // About 1 KiB a stock row with its versions and 1 KiB a customer.
        let most_threads = fig12_threads(&s).into_iter().max().unwrap_or(s.threads);
        crate::check_memory(
            &format!("{} with {most_threads} warehouse(s)", fig.name),
            most_threads as f64 * (f64::from(s.items) + 30_000.0) * 1024.0 * 2.0,
        )?;
        Ok(Box::new(Run { fig: *self, s }))
    }
}

/// A figure at its scale.
struct Run {
    fig: HFig,
    s: Scale,
}

impl Prepared for Run {
    fn run(&self, a: &ReproduceArgs) -> Result<Outcome, FigureError> {
        let s = &self.s;
        let files = match self.fig {
            HFig::Fig2 => fig2(a, s),
            HFig::Fig5 => fig5(a, s),
            HFig::Fig12 => fig12(a, s),
        }
        .map_err(FigureError::Failed)?;
        let mut files = files.into_iter().map(std::path::PathBuf::from);
        Ok(Outcome {
            files: files.next().into_iter().collect(),
            pngs: files.collect(),
            measured: Measured::default(),
            ran: format!(
                "Ran TPC-C-hybrid with a warehouse per worker thread ({} thread(s)), {} items, \
                 {} customers a district, {} s per point after {} s of warm-up.",
                s.threads,
                s.items,
                s.customers,
                s.driver.duration.as_secs_f64(),
                s.driver.warmup.as_secs_f64()
            ),
            own: Vec::new(),
        })
    }
}

/// A series: its label, protocol, and whether SSN's early check is on.
struct Series {
    label: &'static str,
    protocol: Protocol,
    early: bool,
}

const OCC: Series = Series {
    label: "OCC (Silo)",
    protocol: Protocol::Occ,
    early: true,
};
const SI: Series = Series {
    label: "SI (ERMIA-SI)",
    protocol: Protocol::Si,
    early: true,
};
const SSN: Series = Series {
    label: "SI+SSN (ERMIA-SSN)",
    protocol: Protocol::SiSsn,
    early: true,
};
const SSN_LATE: Series = Series {
    label: "SI+SSN (commit-time check only)",
    protocol: Protocol::SiSsn,
    early: false,
};

/// Q2* sizes of Figure 5 and Table 1.
pub const SIZES: [f64; 8] = [0.01, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0];
/// Q2* size of Figure 2 (the paper does not say; the issue's example).
const FIG2_SIZE: f64 = 0.2;
/// Q2* sizes of Figure 12.
const FIG12_SIZES: [f64; 2] = [0.6, 0.8];
/// Runs per point of Figure 12 (the paper's: median of three).
const FIG12_RUNS: usize = 3;

/// One CSV row: one run.
#[derive(Serialize)]
struct Row {
    figure: &'static str,
    series: &'static str,
    protocol: &'static str,
    ssn_early_exclusion: bool,
    workload: &'static str,
    q2_size: f64,
    threads: usize,
    warehouses: u32,
    run: usize,
    r#type: &'static str,
    committed_per_s: f64,
    aborted_per_s: f64,
    /// committed / (committed + aborted) of this type.
    commit_ratio: f64,
    mean_us: f64,
    p99_us: f64,
    overall_committed_per_s: f64,
}

struct Scale {
    threads: usize,
    items: u32,
    customers: u32,
    driver: DriverConfig,
    seed: u64,
}

fn scale(a: &ReproduceArgs) -> Result<Scale, UsageError> {
    let (duration, warmup) = a.point_times(2.0)?;
    let items = match a.records {
        Some(r) => u32::try_from(r).unwrap_or(u32::MAX),
        None => 100_000,
    };
    let s = Scale {
        threads: a.threads.unwrap_or(2),
        items,
        customers: if a.paper_scale { 3_000 } else { 300 },
        driver: DriverConfig {
            warmup,
            duration,
            series: false,
            huge_pages: Default::default(),
            ab_interval: None,
        },
        seed: a.seed,
    };
    config(&s, s.threads, 0.2, true)
        .validate()
        .map_err(|e| UsageError(format!("{e} (--records sets the items)")))?;
    Ok(s)
}

/// TPC-C at the paper's scale factor: a warehouse per thread.
fn config(s: &Scale, threads: usize, q2_size: f64, hybrid: bool) -> TpccConfig {
    let base = TpccConfig {
        threads,
        items: s.items,
        customers: s.customers,
        q2_size,
        seed: s.seed,
        ..TpccConfig::spec(threads as u32)
    };
    if hybrid {
        base.hybrid()
    } else {
        base
    }
}

/// Loads TPC-C for `cfg` into a fresh database of `series` and runs it.
fn one(series: &Series, cfg: &TpccConfig, s: &Scale) -> Result<TpccReport, String> {
    let db = Database::open(
        Options::default()
            .protocol(series.protocol)
            .ssn_early_exclusion(series.early)
            // As published: first updater wins on every write.
            .ssn_blind_writes(false),
    )
    .map_err(|e| e.to_string())?;
    tpcc::run(db, cfg, &s.driver, &mut BarObserver::new(false)).map_err(|e| e.to_string())
}

fn ratio(t: &TypeReport) -> f64 {
    let n = t.committed + t.aborted;
    if n == 0 {
        0.0
    } else {
        t.committed as f64 / n as f64
    }
}

fn rows_of(
    figure: &'static str,
    series: &Series,
    cfg: &TpccConfig,
    run: usize,
    r: &TpccReport,
) -> Vec<Row> {
    let hybrid = cfg.has_q2();
    r.run
        .per_type
        .iter()
        .filter(|t| t.committed + t.aborted > 0)
        .map(|t| Row {
            figure,
            series: series.label,
            protocol: series.protocol.name(),
            ssn_early_exclusion: series.early,
            workload: if hybrid { "tpcc-hybrid" } else { "tpcc" },
            q2_size: if hybrid { cfg.q2_size } else { 0.0 },
            threads: cfg.threads,
            warehouses: cfg.warehouses,
            run,
            r#type: t.name,
            committed_per_s: t.committed_per_s,
            aborted_per_s: t.aborted_per_s,
            commit_ratio: ratio(t),
            mean_us: t.latency.mean_us,
            p99_us: t.latency.p99_us,
            overall_committed_per_s: r.run.committed_per_s,
        })
        .collect()
}

fn write_csv(path: &std::path::Path, rows: &[Row]) -> Result<(), String> {
    let mut w = csv::Writer::from_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
    for r in rows {
        w.serialize(r).map_err(|e| e.to_string())?;
    }
    w.flush().map_err(|e| e.to_string())
}

fn q2(r: &TpccReport) -> Option<&TypeReport> {
    r.run.of_type("q2*")
}

fn fig2(a: &ReproduceArgs, s: &Scale) -> Result<Vec<String>, String> {
    let series = [OCC, SI, SSN];
    let mut rows = Vec::new();
    let mut files = Vec::new();
    for (hybrid, file, title) in [
        (false, "ermia-fig2-tpcc.png", "TPC-C"),
        (
            true,
            "ermia-fig2-hybrid.png",
            "TPC-C-hybrid (Q2* 10% of the mix, size 20%)",
        ),
    ] {
        let cfg = config(s, s.threads, FIG2_SIZE, hybrid);
        let types: Vec<&str> = TYPES
            .iter()
            .copied()
            .filter(|t| *t != "stock-scan" && (hybrid || *t != "q2*"))
            .collect();
        let mut bars = Vec::new();
        for se in &series {
            if strata_workloads::driver::interrupted() {
                break;
            }
            eprintln!("{}: {title}, {} threads", se.label, s.threads);
            let r = one(se, &cfg, s)?;
            let values = types
                .iter()
                .map(|ty| r.run.of_type(ty).map_or(0.0, ratio))
                .collect();
            bars.push(Bars {
                label: format!("{} ({:.0} txn/s)", se.label, r.run.committed_per_s),
                values,
            });
            rows.extend(rows_of("ermia-fig2", se, &cfg, 1, &r));
        }
        let path = a.out.join(file);
        bar_chart(
            &path,
            &format!(
                "Commit ratio per type, {title} (ERMIA Fig. 2; {} warehouses, {} threads)",
                cfg.warehouses, s.threads
            ),
            "committed / attempted",
            &types,
            &bars,
        )?;
        files.push(path.display().to_string());
    }
    let csv = a.out.join("ermia-fig2.csv");
    write_csv(&csv, &rows)?;
    files.insert(0, csv.display().to_string());
    println!("commit ratio per type (committed / attempted):");
    for r in &rows {
        println!(
            "  {:<30} {:<12} {:<13} {:>7.3}  ({:.0} committed/s)",
            r.series, r.workload, r.r#type, r.commit_ratio, r.committed_per_s
        );
    }
    Ok(files)
}

fn fig5(a: &ReproduceArgs, s: &Scale) -> Result<Vec<String>, String> {
    let series = [OCC, SI, SSN, SSN_LATE];
    let mut rows = Vec::new();
    // (overall, q2 commits, q2 abort ratio) per series, per size.
    let mut m: Vec<Vec<(f64, f64, f64)>> = series.iter().map(|_| Vec::new()).collect();
    let total = SIZES.len() * series.len();
    let mut step = 0;
    'sizes: for &size in &SIZES {
        let cfg = config(s, s.threads, size, true);
        for (i, se) in series.iter().enumerate() {
            if strata_workloads::driver::interrupted() {
                break 'sizes;
            }
            step += 1;
            eprintln!("[{step}/{total}] {}: Q2* size {size}", se.label);
            let r = one(se, &cfg, s)?;
            let q = q2(&r);
            m[i].push((
                r.run.committed_per_s,
                q.map_or(0.0, |t| t.committed_per_s),
                q.map_or(0.0, |t| 1.0 - ratio(t)),
            ));
            rows.extend(rows_of("ermia-fig5", se, &cfg, 1, &r));
        }
    }
    let csv = a.out.join("ermia-fig5.csv");
    write_csv(&csv, &rows)?;
    let mut files = vec![csv.display().to_string()];
    let si = 1; // the series the paper normalises to
    let xs: Vec<f64> = SIZES.iter().map(|s| s * 100.0).collect();
    let norm = |k: usize| -> Vec<Line> {
        series
            .iter()
            .enumerate()
            .map(|(i, se)| Line {
                label: se.label.into(),
                points: m[i]
                    .iter()
                    .zip(&m[si])
                    .zip(&xs)
                    .map(|((p, b), &x)| {
                        let (v, base) = match k {
                            0 => (p.0, b.0),
                            _ => (p.1, b.1),
                        };
                        (x, if base > 0.0 { v / base } else { 0.0 })
                    })
                    .collect(),
            })
            .collect()
    };
    let aborts: Vec<Line> = series
        .iter()
        .enumerate()
        .map(|(i, se)| Line {
            label: se.label.into(),
            points: m[i].iter().zip(&xs).map(|(p, &x)| (x, p.2)).collect(),
        })
        .collect();
    let size = format!("{} warehouses, {} threads", s.threads, s.threads);
    for (file, title, y, lines) in [
        (
            "ermia-fig5-overall.png",
            format!(
                "TPC-C-hybrid overall throughput, normalised to SI (ERMIA Fig. 5 left; {size})"
            ),
            "txn/s / SI's txn/s",
            norm(0),
        ),
        (
            "ermia-fig5-q2.png",
            format!("Q2* commits, normalised to SI (ERMIA Fig. 5 middle; {size})"),
            "Q2* commits/s / SI's",
            norm(1),
        ),
        (
            "ermia-fig5-q2-aborts.png",
            format!("Q2* abort ratio (ERMIA Fig. 5 right; {size})"),
            "aborted / attempted",
            aborts,
        ),
    ] {
        let path = a.out.join(file);
        line_chart_ticks(
            &path,
            &title,
            "Q2* size (% of the supplier table scanned)",
            y,
            &lines,
            XTicks::Values(&xs),
        )?;
        files.push(path.display().to_string());
    }
    println!("Table 1 (SI, absolute): overall txn/s per Q2* size");
    println!(
        "  {}",
        SIZES
            .iter()
            .zip(&m[si])
            .map(|(z, p)| format!("{:.0}%: {:.0}", z * 100.0, p.0))
            .collect::<Vec<_>>()
            .join("  ")
    );
    println!("per size: overall/SI, Q2* commits/SI, Q2* abort ratio");
    for (i, se) in series.iter().enumerate() {
        let cells: Vec<String> = m[i]
            .iter()
            .zip(&m[si])
            .map(|(p, b)| {
                format!(
                    "{:.2} {:.3} {:.2}",
                    p.0 / b.0.max(1e-9),
                    p.1 / b.1.max(1e-9),
                    p.2
                )
            })
            .collect();
        println!("  {:<30} {}", se.label, cells.join(" | "));
    }
    Ok(files)
}

/// Thread counts of Figure 12: powers of two up to the machine's cores
/// (at least 2), or up to --threads when given.
fn fig12_threads(s: &Scale) -> Vec<usize> {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let top = s.threads.max(if s.threads == 2 { cores } else { 1 }).max(2);
    let mut t = vec![1];
    while t.last().is_some_and(|&x| x * 2 <= top) {
        t.push(t.last().unwrap() * 2);
    }
    t
}

fn fig12(a: &ReproduceArgs, s: &Scale) -> Result<Vec<String>, String> {
    let series = [OCC, SI, SSN];
    let threads = fig12_threads(s);
    let mut rows = Vec::new();
    let mut files = Vec::new();
    let xs: Vec<f64> = threads.iter().map(|&t| t as f64).collect();
    let total = FIG12_SIZES.len() * series.len() * threads.len() * FIG12_RUNS;
    let mut step = 0;
    'sizes: for &size in &FIG12_SIZES {
        let mut lines = Vec::new();
        for se in &series {
            let mut line = Line {
                label: se.label.into(),
                points: Vec::new(),
            };
            for &t in &threads {
                let cfg = config(s, t, size, true);
                let mut means = Vec::new();
                for run in 1..=FIG12_RUNS {
                    if strata_workloads::driver::interrupted() {
                        lines.push(line);
                        break 'sizes;
                    }
                    step += 1;
                    eprintln!(
                        "[{step}/{total}] {}: Q2* size {size}, {t} threads, run {run}",
                        se.label
                    );
                    let r = one(se, &cfg, s)?;
                    if let Some(q) = q2(&r).filter(|q| q.committed > 0) {
                        means.push(q.latency.mean_us);
                    }
                    rows.extend(rows_of("ermia-fig12", se, &cfg, run, &r));
                }
                means.sort_by(f64::total_cmp);
                // No Q2* committed in any run: no point (OCC can starve it).
                if let Some(&mid) = means.get(means.len() / 2) {
                    line.points.push((t as f64, mid / 1000.0));
                }
            }
            lines.push(line);
        }
        let path = a.out.join(format!("ermia-fig12-{:.0}.png", size * 100.0));
        line_chart_ticks(
            &path,
            &format!(
                "Q2* mean latency at {:.0}% size, median of {FIG12_RUNS} runs (ERMIA Fig. 12)",
                size * 100.0
            ),
            "threads (= warehouses)",
            "Q2* mean latency (ms)",
            &lines,
            XTicks::Values(&xs),
        )?;
        files.push(path.display().to_string());
    }
    let csv = a.out.join("ermia-fig12.csv");
    write_csv(&csv, &rows)?;
    files.insert(0, csv.display().to_string());
    println!("Q2* mean latency (ms), median [min-max] of {FIG12_RUNS} runs:");
    for &size in &FIG12_SIZES {
        for se in &series {
            let cells: Vec<String> = threads
                .iter()
                .map(|&t| {
                    let mut v: Vec<f64> = rows
                        .iter()
                        .filter(|r| {
                            r.series == se.label
                                && r.q2_size == size
                                && r.threads == t
                                && r.r#type == "q2*"
                                && r.committed_per_s > 0.0
                        })
                        .map(|r| r.mean_us / 1000.0)
                        .collect();
                    v.sort_by(f64::total_cmp);
                    match (v.first(), v.get(v.len() / 2), v.last()) {
                        (Some(lo), Some(mid), Some(hi)) => {
                            format!("{t}T {mid:.1} [{lo:.1}-{hi:.1}]")
                        }
                        _ => format!("{t}T -"),
                    }
                })
                .collect();
            println!(
                "  {:.0}% {:<22} {}",
                size * 100.0,
                se.label,
                cells.join("  ")
            );
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_sizes_are_the_papers_and_fig12s_are_among_them() {
        assert_eq!(SIZES.first(), Some(&0.01));
        assert_eq!(SIZES.last(), Some(&1.0));
        for z in FIG12_SIZES {
            assert!(SIZES.contains(&z));
        }
    }

    #[test]
    fn fig12_sweeps_powers_of_two_from_one() {
        let s = Scale {
            threads: 8,
            items: 1000,
            customers: 30,
            driver: DriverConfig {
                warmup: Duration::ZERO,
                duration: Duration::ZERO,
                series: false,
                huge_pages: Default::default(),
                ab_interval: None,
            },
            seed: 1,
        };
        assert_eq!(fig12_threads(&s), [1, 2, 4, 8]);
    }
}
