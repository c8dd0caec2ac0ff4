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

use super::findings::{At, Check, Expect, Finding, Measured, Metric};
use super::registry::{Config, Effect, Facts, Figure, Paper, Prepared, Setup};
use super::{FigureError, Outcome, ReproduceArgs};
use crate::plot::{bar_chart, line_chart_ticks, Bars, Line, XTicks};
use crate::progress::BarObserver;
use crate::UsageError;

/// Figures 2 and 5 (§1.1, §4.3), in the paper's order.
pub const HYBRID: &[Figure] = &[
    Figure {
        name: "ermia-fig2",
        paper: Paper::Ermia,
        label: "Fig. 2",
        caption: "Commit ratio per transaction type, TPC-C and TPC-C-hybrid, under OCC, SI and SI+SSN",
        config: Config::Own(&HFig::Fig2),
        claims: &[
            comparable(NEW_ORDER_X),
            comparable(1.0),
            comparable(2.0),
            comparable(3.0),
            comparable(4.0),
            Finding {
                claim: "We see that the commit rate of that read-intensive transaction starves in Silo, while for ERMIA it is quite high",
                source: FIG_2,
                check: Check::Groups {
                    metric: COMMIT_RATIO,
                    above: &["SI (ERMIA-SI), TPC-C-hybrid", "SI+SSN (ERMIA-SSN), TPC-C-hybrid"],
                    below: &["OCC (Silo), TPC-C-hybrid"],
                    at: At::X(Q2_X),
                },
                expect: Expect::Above1,
            },
        ],
        effects: &[Effect::PaperWarehouseRatio, Effect::Concurrency],
        note: Some("the Q2* size (20%) is ours: the paper does not give Figure 2's; a claim's x is its type's place in `tpcc::TYPES` (0 new-order, 1 payment, 2 order-status, 3 delivery, 4 stock-level, 6 Q2*)"),
    },
    Figure {
        name: "ermia-fig5",
        paper: Paper::Ermia,
        label: "Fig. 5, Table 1",
        caption: "TPC-C-hybrid against Q2* size: overall throughput, Q2* commits (normalised to SI), Q2* abort ratio",
        config: Config::Own(&HFig::Fig5),
        claims: &[
            Finding {
                claim: "As shown in Figure 5 (middle), Silo-OCC only produces half TPC-CH-Q2* commits in ERMIA, even at the smallest footprint size",
                source: FIG_5,
                check: Check::Ratio {
                    metric: Q2_COMMITS,
                    a: OCC.label,
                    b: SI.label,
                    at: At::X(1.0),
                },
                expect: Expect::Range(0.45, 0.55),
            },
            Finding {
                claim: "Starting from 40%, Silo-OCC produces two orders of magnitudes lower commits than ERMIA",
                source: FIG_5,
                check: Check::Ratio {
                    metric: Q2_COMMITS,
                    a: OCC.label,
                    b: SI.label,
                    at: At::X(40.0),
                },
                // Two orders of magnitude: within 2x of 1/100.
                expect: Expect::Range(0.005, 0.02),
            },
            si_best(At::X(1.0)),
            si_best(At::Last),
            Finding {
                claim: "Overall TPS of ERMIA-SI in TPC-C-hybrid ... over varying sizes of read-mostly transactions: 70,319 at 1% to 647 at 100%",
                source: "§4.2, Table 1",
                check: Check::Trend {
                    metric: Metric::Throughput,
                    series: SI.label,
                },
                // 647 / 70,319, ±10%.
                expect: Expect::Range(0.0083, 0.0101),
            },
        ],
        effects: &[Effect::PaperWarehouseRatio, Effect::Concurrency],
        note: Some("the series \"SI+SSN (commit-time check only)\" is ours (what SSN's early exclusion test, §3.6.2, is worth)"),
    },
];

/// Figure 12 (§4.5), after §4.4's scalability figures (`ermia_scaling.rs`).
pub const LATENCY: &[Figure] = &[
    Figure {
        name: "ermia-fig12",
        paper: Paper::Ermia,
        label: "Fig. 12",
        caption: "Q2* latency against threads at 60% and 80% Q2* size",
        config: Config::Own(&HFig::Fig12),
        claims: &[
            proportional("SI (ERMIA-SI), 60%"),
            proportional("SI (ERMIA-SI), 80%"),
            quicker("OCC (Silo), 60%", "SI (ERMIA-SI), 60%"),
            quicker("OCC (Silo), 80%", "SI (ERMIA-SI), 80%"),
        ],
        effects: &[Effect::PaperWarehouseRatio],
        note: Some("threads up to the machine's cores (the paper: up to 24); each point is the mean of the trials, the paper's the median of three"),
    },
];

const FIG_2: &str = "§1.1, Fig. 2";
const FIG_5: &str = "§4.3, Fig. 5";
const FIG_12: &str = "§4.5, Fig. 12";
const COMMIT_RATIO: Metric = Metric::Named("commit ratio");
const Q2_COMMITS: Metric = Metric::Named("Q2* commits/s");
const Q2_ABORTS: Metric = Metric::Named("Q2* abort ratio");
const Q2_LATENCY: Metric = Metric::Named("Q2* mean latency (ms)");

/// TPC-C's types commit alike under the three systems.
const fn comparable(x: f64) -> Finding {
    Finding {
        claim: "The left graph shows the commit rate of each individual transaction of TPC-C under Silo as well as the ERMIA flavors. We can see that the commit rates are comparable under TPC-C",
        source: FIG_2,
        check: Check::Spread {
            metric: COMMIT_RATIO,
            at: At::X(x),
            series: &[
                "OCC (Silo), TPC-C",
                "SI (ERMIA-SI), TPC-C",
                "SI+SSN (ERMIA-SSN), TPC-C",
            ],
        },
        expect: Expect::About(1.25),
    }
}

/// ERMIA-SI's overall throughput above Silo's and ERMIA-SSN's.
const fn si_best(at: At) -> Finding {
    Finding {
        claim: "ERMIA-SI performs the best at all transaction sizes and ERMIA-SSN pays an additional cost for serializability guarantee",
        source: FIG_5,
        check: Check::Groups {
            metric: Metric::Throughput,
            above: &["SI (ERMIA-SI)"],
            below: &["OCC (Silo)", "SI+SSN (ERMIA-SSN)"],
            at,
        },
        expect: Expect::Above1,
    }
}

const fn proportional(series: &'static str) -> Finding {
    Finding {
        claim: "latency of TPC-CH-Q2* transaction is proportional to the number of threads in TPC-C-hybrid workload because the Stock table which is heavily accessed by the transaction grows proportionally to scale factor",
        source: FIG_12,
        check: Check::Trend {
            metric: Q2_LATENCY,
            series,
        },
        expect: Expect::Above1,
    }
}

const fn quicker(occ: &'static str, si: &'static str) -> Finding {
    Finding {
        claim: "Also, latency increases more quickly than ERMIA with increasing parallelism",
        source: FIG_12,
        check: Check::Growth {
            metric: Q2_LATENCY,
            a: occ,
            b: si,
        },
        expect: Expect::Above1,
    }
}

/// Which of the paper's TPC-C-hybrid figures.
#[derive(Debug, Clone, Copy)]
enum HFig {
    Fig2,
    Fig5,
    Fig12,
}

impl Setup for HFig {
    fn series(&self, _fig: &Figure) -> Vec<String> {
        match self {
            HFig::Fig2 => [OCC, SI, SSN]
                .iter()
                .flat_map(|se| [fig2_series(se.label, false), fig2_series(se.label, true)])
                .collect(),
            HFig::Fig5 => [OCC, SI, SSN, SSN_LATE]
                .map(|se| se.label.to_string())
                .to_vec(),
            HFig::Fig12 => (FIG12_SIZES.iter())
                .flat_map(|&z| [OCC, SI, SSN].map(|se| fig12_series(se.label, z)))
                .collect(),
        }
    }

    fn xs(&self, _fig: &Figure, _paper_scale: bool) -> Option<Vec<f64>> {
        match self {
            HFig::Fig2 => Some((0..TYPES.len()).map(|i| i as f64).collect()),
            HFig::Fig5 => Some(SIZES.map(|z| z * 100.0).to_vec()),
            // Threads up to the machine's cores.
            HFig::Fig12 => None,
        }
    }

    fn facts(&self, _fig: &Figure, a: &ReproduceArgs) -> Facts {
        let Ok(s) = scale(a) else {
            return Facts::default();
        };
        let cfg = config(&s, s.threads, FIG2_SIZE, true, 1);
        Facts {
            threads: s.threads,
            warehouses: cfg.warehouses,
            threads_at_last: cfg.threads,
            update_share: 0.92,
            ..Facts::default()
        }
    }

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
    fn estimate_s(&self) -> f64 {
        let s = &self.s;
        // A TPC-C load per run, about a second a warehouse.
        let run = |threads: usize| {
            s.driver.duration.as_secs_f64() + s.driver.warmup.as_secs_f64() + threads as f64
        };
        let trials = s.trials as f64;
        trials
            * match self.fig {
                HFig::Fig2 => 6.0 * run(s.threads),
                HFig::Fig5 => (SIZES.len() * 4) as f64 * run(s.threads),
                HFig::Fig12 => (fig12_threads(s).iter())
                    .map(|&t| (FIG12_SIZES.len() * 3) as f64 * run(t))
                    .sum(),
            }
    }

    fn run(&self, a: &ReproduceArgs) -> Result<Outcome, FigureError> {
        let s = &self.s;
        let mut m = Measured::default();
        let files = match self.fig {
            HFig::Fig2 => fig2(a, s, &mut m),
            HFig::Fig5 => fig5(a, s, &mut m),
            HFig::Fig12 => fig12(a, s, &mut m),
        }
        .map_err(FigureError::Failed)?;
        let mut files = files.into_iter().map(std::path::PathBuf::from);
        Ok(Outcome {
            files: files.next().into_iter().collect(),
            pngs: files.collect(),
            measured: m,
            ran: format!(
                "Ran TPC-C-hybrid with a warehouse per worker thread ({} thread(s)), {} items, \
                 {} customers a district, {} s per point after {} s of warm-up, {} trial(s) \
                 (each a fresh database).",
                s.threads,
                s.items,
                s.customers,
                s.driver.duration.as_secs_f64(),
                s.driver.warmup.as_secs_f64(),
                s.trials
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
    trials: usize,
    threads: usize,
    items: u32,
    customers: u32,
    driver: DriverConfig,
    seed: u64,
}

fn scale(a: &ReproduceArgs) -> Result<Scale, UsageError> {
    let (duration, warmup) = a.point_times(if a.all() { 1.0 } else { 2.0 })?;
    let items = match a.records {
        Some(r) => u32::try_from(r).unwrap_or(u32::MAX),
        None => 100_000,
    };
    let s = Scale {
        trials: a.trials()?,
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
    config(&s, s.threads, 0.2, true, 1)
        .validate()
        .map_err(|e| UsageError(format!("{e} (--records sets the items)")))?;
    Ok(s)
}

/// TPC-C at the paper's scale factor: a warehouse per thread.
fn config(s: &Scale, threads: usize, q2_size: f64, hybrid: bool, trial: usize) -> TpccConfig {
    let base = TpccConfig {
        threads,
        items: s.items,
        customers: s.customers,
        q2_size,
        seed: s.seed.wrapping_add(trial as u64 - 1),
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

/// The type names of TPC-C-hybrid, as Figure 2's x values (their index
/// in `tpcc::TYPES`).
const NEW_ORDER_X: f64 = 0.0;
const Q2_X: f64 = 6.0;

fn fig2(a: &ReproduceArgs, s: &Scale, m: &mut Measured) -> Result<Vec<String>, String> {
    let series = [OCC, SI, SSN];
    let mut rows = Vec::new();
    let mut files = Vec::new();
    let total = 2 * series.len() * s.trials;
    let mut step = 0;
    for (hybrid, file, title) in [
        (false, "ermia-fig2-tpcc.png", "TPC-C"),
        (
            true,
            "ermia-fig2-hybrid.png",
            "TPC-C-hybrid (Q2* 10% of the mix, size 20%)",
        ),
    ] {
        let types: Vec<&str> = (TYPES.iter().copied())
            .filter(|t| *t != "stock-scan" && (hybrid || *t != "q2*"))
            .collect();
        for trial in 1..=s.trials {
            let cfg = config(s, s.threads, FIG2_SIZE, hybrid, trial);
            for se in &series {
                if strata_workloads::driver::interrupted() {
                    break;
                }
                step += 1;
                eprintln!(
                    "[{step}/{total}] {}: {title}, {} threads, trial {trial}",
                    se.label, s.threads
                );
                let r = one(se, &cfg, s)?;
                let label = fig2_series(se.label, hybrid);
                for (x, ty) in TYPES.iter().enumerate() {
                    if let Some(t) = r.run.of_type(ty).filter(|t| types.contains(&t.name)) {
                        m.push(&label, x as f64, vec![(COMMIT_RATIO, ratio(t))]);
                    }
                }
                rows.extend(rows_of("ermia-fig2", se, &cfg, trial, &r));
            }
        }
        let bars: Vec<Bars> = (series.iter())
            .map(|se| {
                let line = m.line(&fig2_series(se.label, hybrid), COMMIT_RATIO);
                Bars {
                    label: se.label.to_string(),
                    values: (types.iter())
                        .map(|ty| {
                            let x = TYPES.iter().position(|t| t == ty).unwrap_or(0) as f64;
                            line.iter().find(|p| p.0 == x).map_or(0.0, |p| p.1)
                        })
                        .collect(),
                }
            })
            .collect();
        let path = a.out.join(file);
        bar_chart(
            &path,
            &format!(
                "Commit ratio per type, {title} (ERMIA Fig. 2; {} warehouses, {} threads; mean of {} trial(s))",
                s.threads, s.threads, s.trials
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
    Ok(files)
}

/// A Figure 2 series: a system under TPC-C or TPC-C-hybrid.
fn fig2_series(label: &str, hybrid: bool) -> String {
    format!("{label}, {}", if hybrid { "TPC-C-hybrid" } else { "TPC-C" })
}

fn fig5(a: &ReproduceArgs, s: &Scale, m: &mut Measured) -> Result<Vec<String>, String> {
    let series = [OCC, SI, SSN, SSN_LATE];
    let mut rows = Vec::new();
    let total = SIZES.len() * series.len() * s.trials;
    let mut step = 0;
    'all: for trial in 1..=s.trials {
        for &size in &SIZES {
            let cfg = config(s, s.threads, size, true, trial);
            for se in &series {
                if strata_workloads::driver::interrupted() {
                    break 'all;
                }
                step += 1;
                eprintln!(
                    "[{step}/{total}] {}: Q2* size {size}, trial {trial}",
                    se.label
                );
                let r = one(se, &cfg, s)?;
                let q = q2(&r);
                m.push(
                    se.label,
                    size * 100.0,
                    vec![
                        (Metric::Throughput, r.run.committed_per_s),
                        (Q2_COMMITS, q.map_or(0.0, |t| t.committed_per_s)),
                        (Q2_ABORTS, q.map_or(0.0, |t| 1.0 - ratio(t))),
                    ],
                );
                rows.extend(rows_of("ermia-fig5", se, &cfg, trial, &r));
            }
        }
    }
    let csv = a.out.join("ermia-fig5.csv");
    write_csv(&csv, &rows)?;
    let mut files = vec![csv.display().to_string()];
    let xs: Vec<f64> = SIZES.iter().map(|s| s * 100.0).collect();
    // The paper's panels normalise to ERMIA-SI.
    let norm = |metric: Metric| -> Vec<Line> {
        let base = m.line(SI.label, metric);
        (series.iter())
            .map(|se| Line {
                label: se.label.into(),
                points: (m.line(se.label, metric).into_iter())
                    .filter_map(|(x, v)| {
                        let b = base.iter().find(|p| p.0 == x)?.1;
                        Some((x, if b > 0.0 { v / b } else { 0.0 }))
                    })
                    .collect(),
            })
            .collect()
    };
    let aborts: Vec<Line> = (series.iter())
        .map(|se| Line {
            label: se.label.into(),
            points: m.line(se.label, Q2_ABORTS),
        })
        .collect();
    let size = format!(
        "{} warehouses, {} threads; mean of {} trial(s)",
        s.threads, s.threads, s.trials
    );
    for (file, title, y, lines) in [
        (
            "ermia-fig5-overall.png",
            format!(
                "TPC-C-hybrid overall throughput, normalised to SI (ERMIA Fig. 5 left; {size})"
            ),
            "txn/s / SI's txn/s",
            norm(Metric::Throughput),
        ),
        (
            "ermia-fig5-q2.png",
            format!("Q2* commits, normalised to SI (ERMIA Fig. 5 middle; {size})"),
            "Q2* commits/s / SI's",
            norm(Q2_COMMITS),
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
    println!("Table 1 (SI, absolute, mean of the trials): overall txn/s per Q2* size");
    println!(
        "  {}",
        (m.line(SI.label, Metric::Throughput).iter())
            .map(|(x, v)| format!("{x:.0}%: {v:.0}"))
            .collect::<Vec<_>>()
            .join("  ")
    );
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

fn fig12(a: &ReproduceArgs, s: &Scale, m: &mut Measured) -> Result<Vec<String>, String> {
    let series = [OCC, SI, SSN];
    let threads = fig12_threads(s);
    let mut rows = Vec::new();
    let mut files = Vec::new();
    let xs: Vec<f64> = threads.iter().map(|&t| t as f64).collect();
    let total = FIG12_SIZES.len() * series.len() * threads.len() * s.trials;
    let mut step = 0;
    'sizes: for &size in &FIG12_SIZES {
        for se in &series {
            let label = fig12_series(se.label, size);
            for &t in &threads {
                for trial in 1..=s.trials {
                    if strata_workloads::driver::interrupted() {
                        break 'sizes;
                    }
                    let cfg = config(s, t, size, true, trial);
                    step += 1;
                    eprintln!(
                        "[{step}/{total}] {}: Q2* size {size}, {t} threads, trial {trial}",
                        se.label
                    );
                    let r = one(se, &cfg, s)?;
                    // No Q2* committed: no point (OCC can starve it).
                    if let Some(q) = q2(&r).filter(|q| q.committed > 0) {
                        m.push(
                            &label,
                            t as f64,
                            vec![(Q2_LATENCY, q.latency.mean_us / 1000.0)],
                        );
                    }
                    rows.extend(rows_of("ermia-fig12", se, &cfg, trial, &r));
                }
            }
        }
        let lines: Vec<Line> = (series.iter())
            .map(|se| Line {
                label: se.label.into(),
                points: m.line(&fig12_series(se.label, size), Q2_LATENCY),
            })
            .collect();
        let path = a.out.join(format!("ermia-fig12-{:.0}.png", size * 100.0));
        line_chart_ticks(
            &path,
            &format!(
                "Q2* mean latency at {:.0}% size, mean of {} trial(s) (ERMIA Fig. 12)",
                size * 100.0,
                s.trials
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
    Ok(files)
}

/// A Figure 12 series: a system at a Q2* size.
fn fig12_series(label: &str, size: f64) -> String {
    format!("{label}, {:.0}%", size * 100.0)
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
            trials: 1,
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
