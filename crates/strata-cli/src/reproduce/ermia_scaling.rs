//! ERMIA's scalability experiments (Kim et al., SIGMOD 2016, §4.4): TPC-C
//! against the worker threads, a warehouse per thread (the paper's scale
//! factor, §4.5).
//!
//! ```text
//!  ermia-fig7:  a sweep of threads under Silo's OCC, ERMIA-SI, ERMIA-SSN,
//!               each terminal on its home warehouse -> txn/s, per thread
//!  ermia-fig8:  the same, each transaction's warehouse drawn uniformly or
//!               80-20 (TpccConfig::warehouse_pick) -> txn/s
//!  ermia-fig10: ERMIA-SI on the write-ahead log, one log-buffer
//!               reservation per transaction or one per write
//!               (Options::log_granularity) -> txn/s, log records per txn
//!  ermia-fig11: ERMIA-SI on the log with Options::time_breakdown -> each
//!               engine component's share of the transactions' time
//! ```
//!
//! Threads run 1 and 2 at the quick scale (a 2-core machine), 1 to 24 at
//! the paper's. The log runs in a fresh directory under the system's
//! temporary one, removed after each run, and commits asynchronously
//! (`SyncPolicy::Async`): the figures are about the log buffer, not the
//! disk. TPC-E (Fig. 7 right, Figs. 6 and 9) is out of scope: Strata has
//! no TPC-E workload.

use std::path::PathBuf;

use serde::Serialize;
use strata::{Database, Durability, LogGranularity, Options, Protocol, SyncPolicy};
use strata_workloads::driver::DriverConfig;
use strata_workloads::tpcc::{self, TpccConfig, TpccReport, WarehousePick};

use super::findings::{At, Check, Expect, Finding, Measured, Metric};
use super::registry::{Config, Effect, Facts, Figure, Paper, Prepared, Setup};
use super::sweep::{Axis, Series, Set, Sweep, Workload, DEFAULT};
use super::{FigureError, Outcome, ReproduceArgs};
use crate::plot::{line_chart_ticks, Line, XTicks};
use crate::progress::BarObserver;
use crate::read_mostly_cmd::write_csv;
use crate::UsageError;

const OCC: &str = "OCC (Silo)";
const SI: &str = "SI (ERMIA-SI)";
const SSN: &str = "SI+SSN (ERMIA-SSN)";
const FIG_7: &str = "§4.4, Fig. 7";
const LINEAR: &str = "ERMIA achieves near-linear scalability over 24 cores";

/// The paper's three systems (first updater wins on every write under
/// SI+SSN, the sweep's default, as published).
const SYSTEMS: &[Series] = &[
    Series {
        label: OCC,
        settings: &[Set::Protocol(Protocol::Occ)],
    },
    Series {
        label: SI,
        settings: &[Set::Protocol(Protocol::Si)],
    },
    Series {
        label: SSN,
        settings: &[Set::Protocol(Protocol::SiSsn)],
    },
];

const FIG_8: &str = "§4.4, Fig. 8";
const FIG_10: &str = "§4.4, Fig. 10";
const FIG_11: &str = "§4.4, Fig. 11";
const THREADS_QUICK: &[f64] = &[1.0, 2.0];
const THREADS_PAPER: &[f64] = &[1.0, 4.0, 8.0, 12.0, 16.0, 20.0, 24.0];
const OCC_UNIFORM: &str = "OCC (Silo), uniform";
const SI_UNIFORM: &str = "SI (ERMIA-SI), uniform";
const SSN_UNIFORM: &str = "SI+SSN (ERMIA-SSN), uniform";
const OCC_SKEW: &str = "OCC (Silo), 80-20";
const SI_SKEW: &str = "SI (ERMIA-SI), 80-20";
const SSN_SKEW: &str = "SI+SSN (ERMIA-SSN), 80-20";
const PER_TXN: &str = "per-transaction logging";
const PER_OP: &str = "per-operation logging";
/// Fig. 11's series: the engine's components (`strata::TimeBreakdown`).
const INDEX: &str = "index (the paper's Masstree)";
const VERSION_READ: &str = "version read";
const VERSION_INSTALL: &str = "version install";
const CC: &str = "concurrency control";
const LOG: &str = "log manager";
const GC: &str = "GC (the paper's epoch-based resource managers)";
const REST: &str = "rest";
const SHARE: Metric = Metric::Named("share of the transactions' time");
const LOG_RECORDS: Metric = Metric::Named("log records per committed transaction");

/// "the critical components maintain quite steady overhead": a
/// component's share at the most threads over at one.
const fn steady(series: &'static str) -> Finding {
    Finding {
        claim: "With growing parallelism, the critical components maintain quite steady overhead",
        source: FIG_11,
        check: Check::Trend {
            metric: SHARE,
            series,
        },
        expect: Expect::About(1.25),
    }
}

/// "The overhead of log manager consistently takes 8-9% at all points".
const fn log_share(at: At) -> Finding {
    Finding {
        claim: "The overhead of log manager consistently takes 8-9% at all points",
        source: FIG_11,
        check: Check::Value {
            metric: SHARE,
            series: LOG,
            at,
        },
        expect: Expect::Range(0.08, 0.09),
    }
}

/// Near-linear: the throughput per thread stays about the same from the
/// fewest threads to the most.
const fn linear(series: &'static str) -> Finding {
    Finding {
        claim: LINEAR,
        source: FIG_7,
        check: Check::Trend {
            metric: Metric::ThroughputPerThread,
            series,
        },
        expect: Expect::About(1.25),
    }
}

/// The figures, in the paper's order.
pub const FIGURES: &[Figure] = &[Figure {
    name: "ermia-fig7",
    paper: Paper::Ermia,
    label: "Fig. 7 (left)",
    caption: "TPC-C throughput against worker threads under OCC, SI and SI+SSN",
    config: Config::Sweep(Sweep {
        workload: Workload::Tpcc,
        axis: Axis::Threads,
        xs: THREADS_QUICK,
        xs_paper: THREADS_PAPER,
        series: SYSTEMS,
        more: &[Metric::ThroughputPerThread],
        ..DEFAULT
    }),
    claims: &[
        linear(SI),
        linear(SSN),
        Finding {
            claim: "ERMIA achieves ... comparable peak performance to Silo",
            source: FIG_7,
            check: Check::Ratio {
                metric: Metric::Throughput,
                a: SI,
                b: OCC,
                at: At::Max,
            },
            expect: Expect::About(1.25),
        },
        Finding {
            claim: "Silo-OCC shows the best performance by taking advantages of its low-overhead CC and physical layer when little CC pressure exists",
            source: FIG_7,
            check: Check::Groups {
                metric: Metric::Throughput,
                above: &[OCC],
                below: &[SI, SSN],
                at: At::Max,
            },
            expect: Expect::Above1,
        },
        Finding {
            claim: "On ERMIA, indirection arrays brought more cache-misses and SSN paid additional serializability guarantee cost",
            source: FIG_7,
            check: Check::Ratio {
                metric: Metric::Throughput,
                a: SSN,
                b: SI,
                at: At::Max,
            },
            expect: Expect::Below1,
        },
    ],
    effects: &[
        Effect::PaperWarehouseRatio,
        Effect::Concurrency,
        Effect::Updates,
    ],
    note: Some("threads 1 and 2 at the quick scale (the paper: up to 24 cores; its ticks are not in its text, so its scale runs 1, 4, ..., 24); TPC-E (the right panel) is out of scope: Strata has no TPC-E workload"),
},
Figure {
    name: "ermia-fig8",
    paper: Paper::Ermia,
    label: "Fig. 8",
    caption: "TPC-C throughput against worker threads, each transaction's warehouse drawn uniformly (left) or 80-20 (right)",
    config: Config::Sweep(Sweep {
        workload: Workload::Tpcc,
        axis: Axis::Threads,
        xs: THREADS_QUICK,
        xs_paper: THREADS_PAPER,
        series: &[
            Series {
                label: OCC_UNIFORM,
                settings: &[
                    Set::Protocol(Protocol::Occ),
                    Set::WarehousePick(WarehousePick::Uniform),
                ],
            },
            Series {
                label: SI_UNIFORM,
                settings: &[
                    Set::Protocol(Protocol::Si),
                    Set::WarehousePick(WarehousePick::Uniform),
                ],
            },
            Series {
                label: SSN_UNIFORM,
                settings: &[
                    Set::Protocol(Protocol::SiSsn),
                    Set::WarehousePick(WarehousePick::Uniform),
                ],
            },
            Series {
                label: OCC_SKEW,
                settings: &[
                    Set::Protocol(Protocol::Occ),
                    Set::WarehousePick(WarehousePick::Skew8020),
                ],
            },
            Series {
                label: SI_SKEW,
                settings: &[
                    Set::Protocol(Protocol::Si),
                    Set::WarehousePick(WarehousePick::Skew8020),
                ],
            },
            Series {
                label: SSN_SKEW,
                settings: &[
                    Set::Protocol(Protocol::SiSsn),
                    Set::WarehousePick(WarehousePick::Skew8020),
                ],
            },
        ],
        more: &[Metric::AbortRate],
        ..DEFAULT
    }),
    claims: &[
        Finding {
            claim: "growing access skew suppresses Silo-OCC's scalability more than ERMIA",
            source: FIG_8,
            check: Check::Growth {
                metric: Metric::Throughput,
                a: OCC_SKEW,
                b: SI_SKEW,
            },
            expect: Expect::Below1,
        },
        Finding {
            claim: "Silo-OCC is dragged down to performance of ERMIA-SI with uniform random access",
            source: FIG_8,
            check: Check::Ratio {
                metric: Metric::Throughput,
                a: OCC_UNIFORM,
                b: SI_UNIFORM,
                at: At::Last,
            },
            expect: Expect::About(1.25),
        },
        Finding {
            claim: "and to performance of ERMIA-SSN performance with highly skewed access",
            source: FIG_8,
            check: Check::Ratio {
                metric: Metric::Throughput,
                a: OCC_SKEW,
                b: SSN_SKEW,
                at: At::Last,
            },
            expect: Expect::About(1.25),
        },
    ],
    effects: &[
        Effect::PaperWarehouseRatio,
        Effect::Concurrency,
        Effect::Updates,
    ],
    note: Some("threads 1 and 2 at the quick scale (the paper: up to 24); with 2 warehouses 80-20's hot fifth is one warehouse; OCC's scalability against ERMIA's is its throughput's growth from the fewest threads to the most over ERMIA-SI's"),
},
Figure {
    name: "ermia-fig10",
    paper: Paper::Ermia,
    label: "Fig. 10",
    caption: "TPC-C throughput of ERMIA-SI against worker threads with per-transaction and per-operation logging",
    config: Config::Own(&Logged::Granularity),
    claims: &[
        Finding {
            claim: "As shown in the figure, the impact of per-transaction logging is drastic in memory-optimized systems",
            source: FIG_10,
            check: Check::Ratio {
                metric: Metric::Throughput,
                a: PER_TXN,
                b: PER_OP,
                at: At::Last,
            },
            expect: Expect::Above1,
        },
        Finding {
            claim: "The per-operation logging did not scale at all, even without log buffer latching",
            source: FIG_10,
            check: Check::Trend {
                metric: Metric::Throughput,
                series: PER_OP,
            },
            expect: Expect::About(1.25),
        },
    ],
    effects: &[
        Effect::PaperWarehouseRatio,
        Effect::Concurrency,
        Effect::Updates,
    ],
    note: Some("the log commits asynchronously into a temporary directory (the figure is about the log buffer, not the disk); threads 1 and 2 at the quick scale"),
},
Figure {
    name: "ermia-fig11",
    paper: Paper::Ermia,
    label: "Fig. 11",
    caption: "Time breakdown of ERMIA-SI's TPC-C transactions by engine component against worker threads",
    config: Config::Own(&Logged::Breakdown),
    claims: &[
        steady(INDEX),
        steady(LOG),
        Finding {
            claim: "Masstree takes the biggest bottleneck (41%) out of total cycles",
            source: FIG_11,
            check: Check::Value {
                metric: SHARE,
                series: INDEX,
                at: At::Last,
            },
            expect: Expect::Range(0.369, 0.451),
        },
        Finding {
            claim: "Masstree takes the biggest bottleneck (41%) out of total cycles",
            source: FIG_11,
            check: Check::Groups {
                metric: SHARE,
                above: &[INDEX],
                below: &[VERSION_READ, VERSION_INSTALL, CC, LOG, GC],
                at: At::Last,
            },
            expect: Expect::Above1,
        },
        log_share(At::Min),
        log_share(At::Max),
        Finding {
            claim: "The cost of epoch-based resource managers are negligible (less than 1%)",
            source: FIG_11,
            check: Check::Value {
                metric: SHARE,
                series: GC,
                at: At::Max,
            },
            expect: Expect::AtMost(0.01),
        },
    ],
    effects: &[Effect::PaperWarehouseRatio, Effect::Concurrency],
    note: Some("Strata times its components by wall clock per transaction (Options::time_breakdown), not cycles by profiler; its index is a B+-tree, not Masstree; the paper's 16% for indirection has no component of its own here (reading through the indirection array is part of the version read) and is not judged"),
}];

/// Figures 10 and 11: TPC-C runs of ERMIA-SI on the write-ahead log.
#[derive(Debug, Clone, Copy)]
enum Logged {
    /// Fig. 10: per-transaction against per-operation logging.
    Granularity,
    /// Fig. 11: the time by component.
    Breakdown,
}

/// Fig. 11's series, each one or more of `strata::TimeBreakdown`'s
/// components (the log manager: its buffer work and its wait).
const COMPONENTS: [(&str, &[&str]); 7] = [
    (INDEX, &["index"]),
    (VERSION_READ, &["version_read"]),
    (VERSION_INSTALL, &["version_install"]),
    (CC, &["cc"]),
    (LOG, &["log", "log_wait"]),
    (GC, &["gc"]),
    (REST, &["rest"]),
];

/// Figures 10 and 11's sizes and times.
struct LogScale {
    fig: Logged,
    threads: &'static [f64],
    items: u32,
    customers: u32,
    driver: DriverConfig,
    trials: usize,
    seed: u64,
}

fn log_scale(fig: Logged, a: &ReproduceArgs) -> Result<LogScale, UsageError> {
    let (duration, warmup) = a.point_times(if a.all() { 1.0 } else { 2.0 })?;
    if duration.is_zero() {
        return Err(UsageError("--duration must be more than 0 seconds".into()));
    }
    let spec = TpccConfig::spec(1);
    Ok(LogScale {
        fig,
        threads: if a.paper_scale {
            THREADS_PAPER
        } else {
            THREADS_QUICK
        },
        // A smaller catalogue unless --paper-scale, as the sweeps'.
        items: if a.paper_scale { spec.items } else { 10_000 },
        customers: if a.paper_scale { spec.customers } else { 300 },
        driver: DriverConfig {
            warmup,
            duration,
            series: false,
            huge_pages: Default::default(),
            ab_interval: None,
        },
        trials: a.trials()?,
        seed: a.seed,
    })
}

impl Logged {
    /// The runs of one x: (series, log granularity).
    fn runs(self) -> &'static [(&'static str, LogGranularity)] {
        match self {
            Logged::Granularity => &[
                (PER_TXN, LogGranularity::PerTransaction),
                (PER_OP, LogGranularity::PerOperation),
            ],
            Logged::Breakdown => &[("ERMIA-SI", LogGranularity::PerTransaction)],
        }
    }

    fn name(self) -> &'static str {
        match self {
            Logged::Granularity => "ermia-fig10",
            Logged::Breakdown => "ermia-fig11",
        }
    }
}

impl Setup for Logged {
    fn series(&self, _fig: &Figure) -> Vec<String> {
        match self {
            Logged::Granularity => vec![PER_TXN.into(), PER_OP.into()],
            Logged::Breakdown => COMPONENTS.iter().map(|c| c.0.to_string()).collect(),
        }
    }

    fn xs(&self, _fig: &Figure, paper_scale: bool) -> Option<Vec<f64>> {
        Some(
            if paper_scale {
                THREADS_PAPER
            } else {
                THREADS_QUICK
            }
            .to_vec(),
        )
    }

    fn facts(&self, _fig: &Figure, a: &ReproduceArgs) -> Facts {
        log_scale(*self, a).map_or(Facts::default(), |s| {
            let most = s.threads.iter().copied().fold(0.0, f64::max) as usize;
            Facts {
                threads: most,
                threads_at_last: most,
                // A warehouse per thread.
                warehouses: most as u32,
                update_share: 0.92,
                ..Facts::default()
            }
        })
    }

    fn prepare(
        &self,
        _fig: &'static Figure,
        a: &ReproduceArgs,
    ) -> Result<Box<dyn Prepared>, UsageError> {
        Ok(Box::new(log_scale(*self, a)?))
    }
}

/// One CSV row: one run.
#[derive(Serialize)]
struct LogRow {
    trial: usize,
    series: &'static str,
    threads: usize,
    committed_per_s: f64,
    aborted_per_s: f64,
    log_records_per_committed: Option<f64>,
    operation_records_per_committed: Option<f64>,
    log_bytes_per_committed: Option<f64>,
    /// Fig. 11: each component's share of the transactions' time,
    /// "name:share" pairs separated by "; ".
    time_shares: String,
}

impl LogScale {
    /// One run on a fresh log directory, removed afterwards.
    fn run_one(
        &self,
        threads: usize,
        granularity: LogGranularity,
        trial: usize,
    ) -> Result<TpccReport, String> {
        let dir = wal_dir(self.fig.name(), trial, threads, granularity);
        let _ = std::fs::remove_dir_all(&dir);
        let opts = Options::default()
            .protocol(Protocol::Si)
            .durability(Durability::Wal {
                dir: dir.clone(),
                sync: SyncPolicy::Async,
            })
            .log_granularity(granularity)
            .time_breakdown(matches!(self.fig, Logged::Breakdown));
        let cfg = TpccConfig {
            threads,
            items: self.items,
            customers: self.customers,
            seed: self.seed.wrapping_add(trial as u64 - 1),
            ..TpccConfig::spec(threads as u32)
        };
        let r = Database::open(opts)
            .map_err(|e| e.to_string())
            .and_then(|db| {
                tpcc::run(db, &cfg, &self.driver, &mut BarObserver::new(false))
                    .map_err(|e| e.to_string())
            });
        // The database is closed (tpcc::run owned it): its log can go.
        let _ = std::fs::remove_dir_all(&dir);
        r
    }
}

/// A run's log directory: the system's temporary one, per process.
fn wal_dir(name: &str, trial: usize, threads: usize, g: LogGranularity) -> PathBuf {
    std::env::temp_dir().join(format!(
        "strata-{name}-{}-{trial}-{threads}-{}",
        std::process::id(),
        g.name()
    ))
}

impl Prepared for LogScale {
    fn estimate_s(&self) -> f64 {
        let run = self.driver.duration.as_secs_f64() + self.driver.warmup.as_secs_f64() + 1.5;
        (self.fig.runs().len() * self.threads.len() * self.trials) as f64 * run
    }

    fn run(&self, a: &ReproduceArgs) -> Result<Outcome, FigureError> {
        let name = self.fig.name();
        let mut m = Measured::default();
        let mut rows = Vec::new();
        let total = self.fig.runs().len() * self.threads.len() * self.trials;
        let mut step = 0;
        'all: for trial in 1..=self.trials {
            for &(series, granularity) in self.fig.runs() {
                for &x in self.threads {
                    if strata_workloads::driver::interrupted() {
                        break 'all;
                    }
                    step += 1;
                    let threads = x as usize;
                    eprintln!(
                        "[{step}/{total}] {name}: {series}, {threads} thread(s), trial {trial}"
                    );
                    let r = self
                        .run_one(threads, granularity, trial)
                        .map_err(|e| FigureError::Failed(format!("{name}, {series}: {e}")))?;
                    let five: f64 = (tpcc::TYPES[..5].iter())
                        .filter_map(|t| r.run.of_type(t))
                        .map(|t| t.committed_per_s)
                        .sum();
                    let log = r.log.as_ref();
                    let shares: Vec<(&str, f64)> = (COMPONENTS.iter())
                        .map(|(label, parts)| {
                            let share = (r.time_breakdown.iter())
                                .flat_map(|t| t.per_committed.iter())
                                .filter(|c| parts.contains(&c.name))
                                .map(|c| c.share)
                                .sum();
                            (*label, share)
                        })
                        .collect();
                    match self.fig {
                        Logged::Granularity => m.push(
                            series,
                            x,
                            vec![
                                (Metric::Throughput, five),
                                (
                                    LOG_RECORDS,
                                    log.map_or(f64::NAN, |l| l.records_per_committed),
                                ),
                            ],
                        ),
                        Logged::Breakdown => {
                            for &(label, share) in &shares {
                                m.push(label, x, vec![(SHARE, share)]);
                            }
                        }
                    }
                    rows.push(LogRow {
                        trial,
                        series,
                        threads,
                        committed_per_s: five,
                        aborted_per_s: r.run.aborted_per_s,
                        log_records_per_committed: log.map(|l| l.records_per_committed),
                        operation_records_per_committed: log
                            .map(|l| l.operation_records_per_committed),
                        log_bytes_per_committed: log.map(|l| l.bytes_per_committed),
                        time_shares: (shares.iter())
                            .map(|(l, v)| format!("{l}:{v:.4}"))
                            .collect::<Vec<_>>()
                            .join("; "),
                    });
                }
            }
        }
        let csv = a.out.join(format!("{name}.csv"));
        write_csv(&csv, &rows).map_err(FigureError::Failed)?;
        let png = a.out.join(format!("{name}.png"));
        let (labels, metric, title, y): (Vec<&str>, Metric, &str, &str) = match self.fig {
            Logged::Granularity => (
                vec![PER_TXN, PER_OP],
                Metric::Throughput,
                "TPC-C, ERMIA-SI: per-transaction against per-operation logging (ERMIA Fig. 10)",
                "committed transactions/s",
            ),
            Logged::Breakdown => (
                COMPONENTS.iter().map(|c| c.0).collect(),
                SHARE,
                "TPC-C, ERMIA-SI: time by component (ERMIA Fig. 11)",
                "share of the transactions' time",
            ),
        };
        let lines: Vec<Line> = (labels.iter())
            .map(|&l| Line {
                label: l.to_string(),
                points: m.line(l, metric),
            })
            .collect();
        line_chart_ticks(
            &png,
            title,
            "worker threads (a warehouse each)",
            y,
            &lines,
            XTicks::Values(self.threads),
        )
        .map_err(FigureError::Failed)?;
        // What the paper does not plot but Fig. 10 rests on: the log
        // records each committed transaction reserved.
        let own = match self.fig {
            Logged::Granularity => (self.fig.runs().iter())
                .map(|&(series, _)| {
                    let per: Vec<String> = (m.line(series, LOG_RECORDS).iter())
                        .map(|(x, v)| format!("{v:.1} at {x} thread(s)"))
                        .collect();
                    format!(
                        "{series}: log records per committed transaction {}",
                        per.join(", ")
                    )
                })
                .collect(),
            Logged::Breakdown => Vec::new(),
        };
        Ok(Outcome {
            files: vec![csv],
            pngs: vec![png],
            measured: m,
            ran: format!(
                "Ran TPC-C under ERMIA-SI on the write-ahead log (asynchronous commit), a warehouse per thread ({} items, {} customers a district), {} s after {} s of warm-up, {} trial(s).",
                self.items,
                self.customers,
                self.driver.duration.as_secs_f64(),
                self.driver.warmup.as_secs_f64(),
                self.trials
            ),
            own,
        })
    }
}
