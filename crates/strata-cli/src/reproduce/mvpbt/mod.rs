//! MV-PBT's figures (Riegger, Vinçon, Gottstein, Petrov: "MV-PBT:
//! Multi-Version Index for Large Datasets and HTAP Workloads"): §2's HTAP
//! experiment (Fig. 3), §6's long reader against chain length (Fig. 12b),
//! the partition filters (Fig. 13) and YCSB (Fig. 15), each today's index
//! kind against MV-PBT on the same engine; `oltp.rs` holds the TPC-C ones
//! (the CH-benCHmark, Fig. 12a; TPC-C, Fig. 14).
//!
//! ```text
//!   fig3:   per trial, per chain length, per index kind: the HTAP mix
//!           (YCSB A+E clients beside an analytical reader on an old
//!           snapshot) ──> analytical scans/s, OLTP txn/s
//!   fig12b: per trial, per kind, per chain length: a reader opens, every
//!           row is updated until its chain holds `length` versions, the
//!           reader scans the index ──> scan time (today's index walking
//!           versions; MV-PBT index-only before its GC, and after)
//!   fig13:  per trial, per partition size: random keys, point lookups and
//!           prefix scans ──> the filters' false-positive rate and size
//!   fig15a: per trial, per YCSB workload A, B, D, E, per kind ──> txn/s
//!   fig15b: per trial: YCSB A one second at a time ──> txn/s, partitions
//! ```
//!
//! Figures 3 and 12b run the paper's setting, PostgreSQL's: every update
//! adds index records that point at its version (`IndexPointers::Physical`,
//! for both index kinds). The paper ran PostgreSQL and WiredTiger on flash;
//! here both kinds are in memory, so the figures show what MV-PBT's
//! version records and partitions cost or save against a version-oblivious
//! index on the same engine. Figure 15a's claims compare MV-PBT with an
//! LSM-tree, which is not run here (RocksDB and fjall have no secondary
//! index to run these operations through): its ratios are reported, not
//! judged.

mod oltp;

use std::path::PathBuf;

use serde::Serialize;
use strata::{
    Database, Index, IndexKind, IndexPointers, Options, Protocol, Schema, Table, Type, Unique,
    Value,
};
use strata_workloads::htap::HtapConfig;
use strata_workloads::ycsb_core::{CoreConfig, CoreWorkload};

use super::findings::{At, Check, Expect, Finding, Measured, Metric};
use super::registry::{Config, Effect, Facts, Figure, Paper, Prepared, Setup};
use super::{FigureError, Outcome, ReproduceArgs};
use crate::plot::{bar_chart, line_chart_ticks, Bars, Line, XTicks};
use crate::progress::BarObserver;
use crate::read_mostly_cmd::write_csv;
use crate::UsageError;

const STANDARD: &str = "today's index";
const MVPBT: &str = "MV-PBT";
const WALK: &str = "today's index (visibility check in the table)";
const NO_GC: &str = "MV-PBT w/o GC (index-only)";
const WITH_GC: &str = "MV-PBT w/ GC (index-only)";
const ANALYTICAL: Metric = Metric::Named("analytical scans/s");
const POINT_US: Metric = Metric::Named("point query (us)");
const SCAN_MS: Metric = Metric::Named("scan time (ms)");
const FP_RATE: Metric = Metric::Named("false-positive rate");
const FILTER_BYTES: Metric = Metric::Named("filter bytes per partition");
const PARTITIONS: Metric = Metric::Named("frozen partitions");
const BLOOM: &str = "Bloom filter";
const PREFIX_BLOOM: &str = "prefix Bloom filter";

const FIG_3: &str = "§2, Fig. 3";
const FIG_12B: &str = "§6, Fig. 12b";
const FIG_13: &str = "§6, Fig. 13";

/// Every figure of the paper, in its order.
pub fn figures() -> impl Iterator<Item = &'static Figure> {
    (HTAP.iter())
        .chain(oltp::CH)
        .chain(INDEX_ONLY_AND_FILTERS)
        .chain(oltp::TPCC)
        .chain(YCSB)
}

/// Figure 3 (§2).
const HTAP: &[Figure] = &[
    Figure {
        name: "mvpbt-fig3",
        paper: Paper::MvPbt,
        label: "Fig. 3",
        caption: "HTAP mix (YCSB A+E with an analytical reader): throughput as the chains grow to 50 versions, today's index against MV-PBT",
        config: Config::Own(&MFig::Fig3),
        claims: &[
            Finding {
                claim: "The highly-optimized B+-Tree implementation in PostgreSQL performs better than MV-PBT on a single tuple-version",
                source: FIG_3,
                check: Check::Ratio {
                    metric: ANALYTICAL,
                    a: STANDARD,
                    b: MVPBT,
                    at: At::X(1.0),
                },
                expect: Expect::Above1,
            },
            Finding {
                claim: "as the version-chain length increases (6-8 versions) the performance drops rapidly to approx. 50 transactions/sec, due to version-obliviousness and random I/O",
                source: FIG_3,
                check: Check::Trend {
                    metric: ANALYTICAL,
                    series: STANDARD,
                },
                expect: Expect::Below1,
            },
            Finding {
                claim: "Due to its version-awareness and support for index-only visibility-check MV-PBT exhibits much higher and robust performance (approx. 1200 tx/sec) with growing chain lengths",
                source: FIG_3,
                check: Check::Trend {
                    metric: ANALYTICAL,
                    series: MVPBT,
                },
                expect: Expect::About(1.25),
            },
            Finding {
                claim: "approx. 1200 tx/sec [MV-PBT] against approx. 50 transactions/sec [the B+-tree] at the longest chains",
                source: FIG_3,
                check: Check::Ratio {
                    metric: ANALYTICAL,
                    a: MVPBT,
                    b: STANDARD,
                    at: At::Last,
                },
                expect: Expect::Range(21.6, 26.4),
            },
        ],
        effects: &[Effect::Versions(50), Effect::LongLived],
        note: Some("the throughput judged is the analytical reader's covering scans/s; the paper's point query every 30 s is one a second here"),
    },
];

/// Figures 12b and 13 (§6).
const INDEX_ONLY_AND_FILTERS: &[Figure] = &[
    Figure {
        name: "mvpbt-fig12b",
        paper: Paper::MvPbt,
        label: "Fig. 12b",
        caption: "Scan time of a long reader against chain length: chain-walking visibility check against index-only",
        config: Config::Own(&MFig::Fig12b),
        claims: &[
            Finding {
                claim: "As the query processing time and version-chain length increase, index scans and VC of slow down PBT by an order of magnitude",
                source: FIG_12B,
                check: Check::Trend {
                    metric: SCAN_MS,
                    series: WALK,
                },
                // "An order of magnitude": within 2x of 10x.
                expect: Expect::Range(5.0, 20.0),
            },
            Finding {
                claim: "MV-PBT performs idxVC however without garbage collection (Figure 12b MV-PBT w/o GC), every index record of successor tuple-versions has to be processed, likewise the scan time increases proportionally to the chain length",
                source: FIG_12B,
                check: Check::Trend {
                    metric: SCAN_MS,
                    series: NO_GC,
                },
                // Proportionally: 50 versions against 1, ±10%.
                expect: Expect::Range(45.0, 55.0),
            },
            Finding {
                claim: "With garbage collection (Figure 12b MV-PBT w/ GC), the number of scanned index records and the scan time remain almost constant",
                source: FIG_12B,
                check: Check::Trend {
                    metric: SCAN_MS,
                    series: WITH_GC,
                },
                expect: Expect::About(1.25),
            },
        ],
        effects: &[Effect::Versions(50), Effect::LongLived],
        note: Some("the paper varies how long the query sleeps (30-120 s) and so the chains; here the chains are set directly (1-50 versions a row)"),
    },
    Figure {
        name: "mvpbt-fig13",
        paper: Paper::MvPbt,
        label: "Fig. 13",
        caption: "Partition filters: false-positive rate and size against the partition size",
        config: Config::Own(&MFig::Fig13),
        claims: &[
            Finding {
                claim: "The precision of both Bloom filters is relatively high (Figure 13): the false positives rate is 2% for BF",
                source: FIG_13,
                check: Check::Value {
                    metric: FP_RATE,
                    series: BLOOM,
                    at: At::Max,
                },
                expect: Expect::AtMost(0.02),
            },
            Finding {
                claim: "The precision of both Bloom filters is relatively high (Figure 13): the false positives rate is ... 10% for pBF",
                source: FIG_13,
                check: Check::Value {
                    metric: FP_RATE,
                    series: PREFIX_BLOOM,
                    at: At::Max,
                },
                expect: Expect::AtMost(0.10),
            },
            Finding {
                claim: "Our experimental evaluation (Figure 13) indicates that the average BF size is small – in the order of few hundred KB",
                source: "§5.7, Fig. 13",
                check: Check::Value {
                    metric: FILTER_BYTES,
                    series: BLOOM,
                    at: At::Max,
                },
                expect: Expect::AtMost(1_000_000.0),
            },
        ],
        effects: &[Effect::Partitions(2.0)],
        note: None,
    },
];

/// Figure 15 (§6).
const YCSB: &[Figure] = &[
    Figure {
        name: "mvpbt-fig15a",
        paper: Paper::MvPbt,
        label: "Fig. 15a",
        caption: "YCSB A, B, D, E through a secondary index: today's index against MV-PBT",
        config: Config::Own(&MFig::Fig15a),
        claims: &[],
        effects: &[Effect::Updates, Effect::Concurrency],
        note: Some("the paper's claims about Fig. 15a compare MV-PBT with WiredTiger's LSM-tree (\"MV-PBT is approx. 42% faster than LSM-Trees\"), which is not run here, so the ratios below are measurements, not verdicts"),
    },
    Figure {
        name: "mvpbt-fig15b",
        paper: Paper::MvPbt,
        label: "Fig. 15b",
        caption: "YCSB A on MV-PBT over time: throughput as the partitions grow",
        config: Config::Own(&MFig::Fig15b),
        claims: &[Finding {
            claim: "The throughput remains stable as the number of partitions increases",
            source: "§6, Fig. 15b",
            check: Check::Trend {
                metric: Metric::Throughput,
                series: "YCSB A",
            },
            expect: Expect::About(1.25),
        }],
        effects: &[Effect::Partitions(2.0), Effect::Updates],
        note: None,
    },
];

/// Which of the paper's figures.
#[derive(Debug, Clone, Copy)]
enum MFig {
    Fig3,
    Fig12b,
    Fig13,
    Fig15a,
    Fig15b,
}

impl Setup for MFig {
    fn series(&self, _fig: &Figure) -> Vec<String> {
        let labels: &[&str] = match self {
            MFig::Fig3 | MFig::Fig15a => &[STANDARD, MVPBT],
            MFig::Fig12b => &[WALK, NO_GC, WITH_GC],
            MFig::Fig13 => &[BLOOM, PREFIX_BLOOM],
            MFig::Fig15b => &["YCSB A"],
        };
        labels.iter().map(|l| l.to_string()).collect()
    }

    fn xs(&self, _fig: &Figure, _paper_scale: bool) -> Option<Vec<f64>> {
        match self {
            MFig::Fig3 | MFig::Fig12b => Some(CHAIN_LENGTHS.map(|l| l as f64).to_vec()),
            MFig::Fig13 => Some(PARTITION_SIZES.map(|p| p as f64).to_vec()),
            MFig::Fig15a => Some((0..CoreWorkload::ALL.len()).map(|i| i as f64).collect()),
            MFig::Fig15b => None,
        }
    }

    fn facts(&self, _fig: &Figure, a: &ReproduceArgs) -> Facts {
        let longest = CHAIN_LENGTHS.iter().copied().max().unwrap_or(0);
        match self {
            // The analytical reader (Fig. 3) and the scanning reader
            // (Fig. 12b) hold their snapshot while the updates run.
            MFig::Fig3 | MFig::Fig12b => Facts {
                threads: 1,
                versions: longest,
                long_lived: true,
                update_share: 0.5,
                ..Facts::default()
            },
            MFig::Fig13 => Facts {
                partitions: fig13_rows(a) as f64
                    / PARTITION_SIZES.iter().copied().max().unwrap_or(1) as f64,
                ..Facts::default()
            },
            MFig::Fig15a => Facts {
                threads: a.threads.unwrap_or(2),
                update_share: 0.5,
                ..Facts::default()
            },
            MFig::Fig15b => Facts {
                threads: a.threads.unwrap_or(2),
                update_share: 0.5,
                partitions: fig15b_records(a) as f64 / FIG15B_PARTITION as f64,
                ..Facts::default()
            },
        }
    }

    fn prepare(
        &self,
        fig: &'static Figure,
        a: &ReproduceArgs,
    ) -> Result<Box<dyn Prepared>, UsageError> {
        Ok(Box::new(Run {
            fig: *self,
            name: fig.name,
            trials: a.trials()?,
            args: a.clone(),
        }))
    }
}

/// A figure to run (each checks its sizes as it starts).
struct Run {
    fig: MFig,
    name: &'static str,
    trials: usize,
    args: ReproduceArgs,
}

impl Prepared for Run {
    fn estimate_s(&self) -> f64 {
        let a = &self.args;
        let (d, w) = a
            .point_times(if matches!(self.fig, MFig::Fig3) || a.all() {
                1.0
            } else {
                2.0
            })
            .map_or((2.0, 0.25), |(d, w)| (d.as_secs_f64(), w.as_secs_f64()));
        let per_trial = match self.fig {
            MFig::Fig3 => (CHAIN_LENGTHS.len() * 2) as f64 * (d + w + 1.0),
            // 1.56 million updates a kind (every row, 1 + 5 + ... + 50
            // times) and the loads.
            MFig::Fig12b => 15.0,
            MFig::Fig13 => PARTITION_SIZES.len() as f64 * 3.0,
            MFig::Fig15a => (CoreWorkload::ALL.len() * 2) as f64 * (d + w + 1.0),
            MFig::Fig15b => a.duration.unwrap_or(10.0).max(1.0) + 1.0,
        };
        self.trials as f64 * per_trial
    }

    fn run(&self, a: &ReproduceArgs) -> Result<Outcome, FigureError> {
        let (name, trials) = (self.name, self.trials);
        match self.fig {
            MFig::Fig3 => fig3(name, a, trials),
            MFig::Fig12b => fig12b(name, a, trials),
            MFig::Fig13 => fig13(name, a, trials),
            MFig::Fig15a => fig15a(name, a, trials),
            MFig::Fig15b => fig15b(name, a, trials),
        }
    }
}

/// A failed run of a command's workload (it printed why).
fn failed(name: &str) -> FigureError {
    FigureError::Failed(format!("{name}: a run failed"))
}

/// What a figure wrote: its CSV, its PNGs in `--out`.
fn outcome(
    a: &ReproduceArgs,
    csv: PathBuf,
    pngs: &[&str],
    measured: Measured,
    ran: String,
    own: Vec<String>,
) -> Outcome {
    Outcome {
        files: vec![csv],
        pngs: pngs.iter().map(|p| a.out.join(p)).collect(),
        measured,
        ran,
        own,
    }
}

fn lines_of(m: &Measured, labels: &[&str], metric: Metric) -> Vec<Line> {
    (labels.iter())
        .map(|&l| Line {
            label: l.to_string(),
            points: m.line(l, metric),
        })
        .collect()
}

fn kind_label(k: IndexKind) -> &'static str {
    match k {
        IndexKind::Standard => STANDARD,
        IndexKind::MvPbt => MVPBT,
    }
}

/// The chain lengths Figures 3 and 12b sweep ("until 50 versions are
/// reached").
const CHAIN_LENGTHS: [u64; 7] = [1, 5, 10, 20, 30, 40, 50];

/// The paper's setting for Figures 3 and 12b: PostgreSQL's indexes point
/// at versions, so every update adds index records.
fn physical() -> Options {
    Options::default().index_pointers(IndexPointers::Physical)
}

/// The figures' table `t(k, sk, v)`, empty.
fn table_t(db: &Database) -> Result<Table, UsageError> {
    db.create_table(
        Schema::new("t")
            .column("k", Type::Int)
            .column("sk", Type::Int)
            .column("v", Type::Int)
            .primary_key(&["k"]),
    )
    .map_err(|e| UsageError(e.to_string()))
}

/// A table `t(k, sk, v)` of `rows` rows with an index on `sk` of `kind`.
fn indexed_table(db: &Database, rows: u64, kind: IndexKind) -> Result<(Table, Index), UsageError> {
    let e = |e: strata::Error| UsageError(e.to_string());
    let t = table_t(db)?;
    let mut k = 0;
    while k < rows {
        let mut txn = db.begin().map_err(e)?;
        for key in k..(k + 1000).min(rows) {
            let key = key as i64;
            txn.insert(&t, vec![Value::Int(key), Value::Int(key), Value::Int(0)])
                .map_err(e)?;
        }
        txn.commit().map_err(e)?;
        k += 1000;
    }
    let idx = db
        .create_index_as("t_sk", &t, &["sk"], Unique::No, kind)
        .map_err(e)?;
    Ok((t, idx))
}

#[derive(Serialize)]
struct ScanRow {
    trial: usize,
    series: &'static str,
    chain_length: u64,
    rows: u64,
    scan_ms: f64,
}

/// Figure 12b: a long reader opens, then every row is updated until the
/// chains hold `length` versions; the reader scans the index. Today's
/// index resolves each entry to its version and checks it in the table
/// (the paper's "VC"); MV-PBT decides from its records alone (idxVC):
/// first with every record of the chain still in P_N ("w/o GC": the
/// partition is not frozen), then after a freeze dropped the records no
/// live snapshot decides by ("w/ GC", §5.6).
fn fig12b(name: &str, a: &ReproduceArgs, trials: usize) -> Result<Outcome, FigureError> {
    let rows = a
        .records
        .unwrap_or(if a.paper_scale { 100_000 } else { 10_000 });
    crate::check_memory(
        &format!("{name} with {rows} rows"),
        rows as f64 * 50.0 * 200.0,
    )?;
    let e = |e: strata::Error| UsageError(e.to_string());
    let mut m = Measured::default();
    let mut csv = Vec::new();
    let total = trials * CHAIN_LENGTHS.len() * IndexKind::ALL.len();
    let mut done = 0;
    'all: for trial in 1..=trials {
        for kind in IndexKind::ALL {
            for length in CHAIN_LENGTHS {
                done += 1;
                eprintln!("[{done}/{total}] {name}: {kind}, chains of {length}, trial {trial}");
                // No freeze until the figure asks for one (w/o GC first).
                let db = Database::open(physical().mvpbt_partition_records(u32::MAX as usize))
                    .map_err(e)?;
                let (t, idx) = indexed_table(&db, rows, kind)?;
                let mut reader = db.begin_read_only().map_err(e)?;
                for round in 1..length {
                    let mut k = 0;
                    while k < rows {
                        let mut txn = db.begin().map_err(e)?;
                        for key in k..(k + 1000).min(rows) {
                            txn.update(
                                &t,
                                &strata::key![key as i64],
                                &[("v", Value::Int(round as i64))],
                            )
                            .map_err(e)?;
                        }
                        txn.commit().map_err(e)?;
                        k += 1000;
                    }
                }
                let mut time = |covering: bool| -> Result<f64, FigureError> {
                    let mut times = Vec::new();
                    for _ in 0..5 {
                        let started = std::time::Instant::now();
                        let n = if covering {
                            reader.index_scan_keys(&idx, ..).map(|r| r.len())
                        } else {
                            reader.index_scan(&idx, ..).map(|r| {
                                debug_assert!(r.iter().all(|row| row[2] == Value::Int(0)));
                                r.len()
                            })
                        };
                        times.push(started.elapsed().as_secs_f64() * 1e3);
                        if n.map_err(e)? as u64 != rows {
                            return Err(FigureError::Failed(format!("{name}: a scan missed rows")));
                        }
                    }
                    times.sort_by(f64::total_cmp);
                    Ok(times[times.len() / 2])
                };
                let mut scans = Vec::new();
                match kind {
                    IndexKind::Standard => scans.push((WALK, time(false)?)),
                    IndexKind::MvPbt => {
                        scans.push((NO_GC, time(true)?));
                        db.freeze_index(&idx).map_err(e)?;
                        scans.push((WITH_GC, time(true)?));
                    }
                }
                for (label, ms) in scans {
                    m.push(label, length as f64, vec![(SCAN_MS, ms)]);
                    csv.push(ScanRow {
                        trial,
                        series: label,
                        chain_length: length,
                        rows,
                        scan_ms: ms,
                    });
                }
                if strata_workloads::driver::interrupted() {
                    break 'all;
                }
            }
        }
    }
    let csv_path = a.out.join(format!("{name}.csv"));
    write_csv(&csv_path, &csv).map_err(UsageError)?;
    let xs: Vec<f64> = CHAIN_LENGTHS.iter().map(|&l| l as f64).collect();
    let png = format!("{name}.png");
    line_chart_ticks(
        &a.out.join(&png),
        &format!("A long reader's index scan against chain length (MV-PBT Fig. 12b; {rows} rows, physical pointers)"),
        "versions per row",
        "scan time (ms, median of 5)",
        &lines_of(&m, &[WALK, NO_GC, WITH_GC], SCAN_MS),
        XTicks::Values(&xs),
    )
    .map_err(UsageError)?;
    Ok(outcome(
        a,
        csv_path,
        &[&png],
        m,
        format!(
            "Ran {rows} rows, physical index pointers, a reader opened before the updates, \
             each scan timed 5 times (the median), {trials} trial(s)."
        ),
        Vec::new(),
    ))
}

#[derive(Serialize)]
struct HtapRow {
    trial: usize,
    index: &'static str,
    chain_length: u64,
    analytical_scans_per_s: f64,
    analytical_scan_ms_p50: f64,
    point_query_us_p50: f64,
    oltp_committed_per_s: f64,
    oltp_aborted_per_s: f64,
    records: u64,
    scan_rows: u64,
    oltp_threads: usize,
}

/// Figure 3: the HTAP mix (`strata bench htap`) at each chain length, on
/// both index kinds: the analytical reader's throughput (covering scans
/// from its old snapshot) and the OLTP clients'. The paper's PostgreSQL
/// B-tree drops to ~50 tx/s by 6-8 versions while MV-PBT holds ~1,200.
fn fig3(name: &str, a: &ReproduceArgs, trials: usize) -> Result<Outcome, FigureError> {
    let (duration, warmup) = a.point_times(1.0)?;
    let base = HtapConfig {
        core: CoreConfig {
            records: a
                .records
                .unwrap_or(if a.paper_scale { 1_000_000 } else { 20_000 }),
            // The analytical reader takes the other core.
            threads: a.threads.unwrap_or(1),
            duration,
            warmup,
            seed: a.seed,
            ..CoreConfig::default()
        },
        scan_rows: if a.paper_scale { 10_000 } else { 1_000 },
        ..HtapConfig::default()
    };
    let mut probe = base.clone();
    probe.chain_length = *CHAIN_LENGTHS.last().expect("lengths");
    probe.validate().map_err(|e| UsageError(e.to_string()))?;
    let row_bytes = base.core.row_bytes();
    crate::check_memory(
        &format!("{name} with {} records", base.core.records),
        (base.core.records + base.scan_rows * probe.chain_length) as f64 * row_bytes,
    )?;
    let mut m = Measured::default();
    let mut csv = Vec::new();
    let total = trials * CHAIN_LENGTHS.len() * IndexKind::ALL.len();
    'all: for trial in 1..=trials {
        for length in CHAIN_LENGTHS {
            for kind in IndexKind::ALL {
                eprintln!(
                    "[{}/{total}] {name}: {kind}, chains of {length}, trial {trial}",
                    csv.len() + 1
                );
                let mut cfg = base.clone();
                cfg.chain_length = length;
                cfg.core.index = kind;
                let db = Database::open(physical().protocol(Protocol::SiSsn))
                    .map_err(|e| UsageError(e.to_string()))?;
                let run = strata_workloads::htap::run(&db, &cfg, &mut BarObserver::new(true));
                let Some(r) = crate::workload_outcome(run)? else {
                    return Err(failed(name));
                };
                let label = kind_label(kind);
                m.push(
                    label,
                    length as f64,
                    vec![
                        (ANALYTICAL, r.analytical.scans_per_s),
                        (Metric::Throughput, r.oltp.committed_per_s),
                        (POINT_US, r.analytical.point_query_us_p50),
                    ],
                );
                csv.push(HtapRow {
                    trial,
                    index: kind.name(),
                    chain_length: length,
                    analytical_scans_per_s: r.analytical.scans_per_s,
                    analytical_scan_ms_p50: r.analytical.scan_ms_p50,
                    point_query_us_p50: r.analytical.point_query_us_p50,
                    oltp_committed_per_s: r.oltp.committed_per_s,
                    oltp_aborted_per_s: r.oltp.aborted_per_s,
                    records: cfg.core.records,
                    scan_rows: cfg.scan_rows,
                    oltp_threads: cfg.core.threads,
                });
                if strata_workloads::driver::interrupted() {
                    break 'all;
                }
            }
        }
    }
    let csv_path = a.out.join(format!("{name}.csv"));
    write_csv(&csv_path, &csv).map_err(UsageError)?;
    let xs: Vec<f64> = CHAIN_LENGTHS.iter().map(|&l| l as f64).collect();
    let scale = format!(
        "{} records, scans of {} rows, {} OLTP thread(s) + 1 analytical",
        base.core.records, base.scan_rows, base.core.threads
    );
    let mut pngs = Vec::new();
    for (file, title, y, metric) in [
        (
            format!("{name}.png"),
            "analytical throughput",
            "covering scans/s (old snapshot)",
            ANALYTICAL,
        ),
        (
            format!("{name}-oltp.png"),
            "OLTP throughput",
            "committed transactions/s (YCSB A+E)",
            Metric::Throughput,
        ),
    ] {
        line_chart_ticks(
            &a.out.join(&file),
            &format!("HTAP mix, {title} against chain length (MV-PBT Fig. 3; {scale})"),
            "versions per analysed row",
            y,
            &lines_of(&m, &[STANDARD, MVPBT], metric),
            XTicks::Values(&xs),
        )
        .map_err(UsageError)?;
        pngs.push(file);
    }
    let png_refs: Vec<&str> = pngs.iter().map(String::as_str).collect();
    Ok(outcome(
        a,
        csv_path,
        &png_refs,
        m,
        format!(
            "Ran {scale}, physical index pointers, {} s per point after {} s of warm-up, {trials} trial(s).",
            duration.as_secs_f64(),
            warmup.as_secs_f64()
        ),
        Vec::new(),
    ))
}

/// Partition sizes (records) Figure 13 sweeps.
const PARTITION_SIZES: [usize; 4] = [1_024, 4_096, 16_384, 65_536];

#[derive(Serialize)]
struct FilterRow {
    trial: usize,
    partition_records: usize,
    frozen_partitions: u64,
    probes: u64,
    skips: u64,
    false_positives: u64,
    false_positive_rate: f64,
    prefix_false_positive_rate: f64,
    bloom_bytes_per_partition: f64,
    prefix_bloom_bytes_per_partition: f64,
}

/// Figure 13: point lookups of keys each partition mostly does not hold;
/// the filters' measured false-positive rate and their size per
/// partition, over the partition size; each trial its own random keys.
/// Figure 13's rows: enough to fill several partitions of the largest
/// size.
fn fig13_rows(a: &ReproduceArgs) -> u64 {
    a.records
        .unwrap_or(if a.paper_scale { 1_000_000 } else { 200_000 })
}

fn fig13(name: &str, a: &ReproduceArgs, trials: usize) -> Result<Outcome, FigureError> {
    let rows = fig13_rows(a);
    crate::check_memory(&format!("{name} with {rows} rows"), rows as f64 * 400.0)?;
    let e = |e: strata::Error| UsageError(e.to_string());
    let mut m = Measured::default();
    let mut csv = Vec::new();
    let total = trials * PARTITION_SIZES.len();
    for (i, (trial, size)) in (1..=trials)
        .flat_map(|t| PARTITION_SIZES.map(|s| (t, s)))
        .enumerate()
    {
        eprintln!(
            "[{}/{total}] {name}: partitions of {size} records, trial {trial}",
            i + 1
        );
        let db = Database::open(Options::default().mvpbt_partition_records(size)).map_err(e)?;
        // The index exists before the rows, so inserts fill and freeze
        // partition after partition.
        let t = table_t(&db)?;
        let idx = db
            .create_index_as("t_sk_v", &t, &["sk", "v"], Unique::No, IndexKind::MvPbt)
            .map_err(e)?;
        let mut rng = strata_workloads::rng::Rng::new(a.seed.wrapping_add(trial as u64 - 1));
        let mut k = 0;
        while k < rows {
            let mut txn = db.begin().map_err(e)?;
            for key in k..(k + 1000).min(rows) {
                let sk = (rng.next_u64() >> 2) as i64;
                txn.insert(
                    &t,
                    vec![Value::Int(key as i64), Value::Int(sk), Value::Int(0)],
                )
                .map_err(e)?;
            }
            txn.commit().map_err(e)?;
            k += 1000;
        }
        // Point lookups of whole keys probe the Bloom filters; prefix
        // scans of the first column, the prefix filters. Keys are random,
        // so nearly every probe is of a key its partition does not hold.
        let mut reader = db.begin_read_only().map_err(e)?;
        let mut phase = |prefix: bool| -> Result<(u64, u64, u64), UsageError> {
            let before = db.stats().mvpbt;
            for _ in 0..10_000 {
                let sk = (rng.next_u64() >> 2) as i64;
                if prefix {
                    reader
                        .index_scan(&idx, strata::key![sk]..strata::key![sk + 1])
                        .map_err(e)?;
                } else {
                    reader.index_get(&idx, &strata::key![sk, 0]).map_err(e)?;
                }
            }
            let st = db.stats().mvpbt;
            Ok((
                st.filter_probes - before.filter_probes,
                st.filter_skips - before.filter_skips,
                st.filter_false_positives - before.filter_false_positives,
            ))
        };
        let (probes, skips, fps) = phase(false)?;
        let (_, prefix_skips, prefix_fps) = phase(true)?;
        let st = db.stats().mvpbt;
        let rate_of = |skips: u64, fps: u64| {
            if skips + fps == 0 {
                0.0
            } else {
                fps as f64 / (skips + fps) as f64
            }
        };
        let rate = rate_of(skips, fps);
        let prefix_rate = rate_of(prefix_skips, prefix_fps);
        let parts = st.frozen_partitions.max(1) as f64;
        let x = size as f64;
        m.push(
            BLOOM,
            x,
            vec![
                (FP_RATE, rate),
                (FILTER_BYTES, st.bloom_bytes as f64 / parts),
            ],
        );
        m.push(
            PREFIX_BLOOM,
            x,
            vec![
                (FP_RATE, prefix_rate),
                (FILTER_BYTES, st.prefix_bloom_bytes as f64 / parts),
            ],
        );
        csv.push(FilterRow {
            trial,
            partition_records: size,
            frozen_partitions: st.frozen_partitions,
            probes,
            skips,
            false_positives: fps,
            false_positive_rate: rate,
            prefix_false_positive_rate: prefix_rate,
            bloom_bytes_per_partition: st.bloom_bytes as f64 / parts,
            prefix_bloom_bytes_per_partition: st.prefix_bloom_bytes as f64 / parts,
        });
    }
    let csv_path = a.out.join(format!("{name}.csv"));
    write_csv(&csv_path, &csv).map_err(UsageError)?;
    let xs: Vec<f64> = PARTITION_SIZES.iter().map(|&s| s as f64).collect();
    let rate_png = format!("{name}.png");
    line_chart_ticks(
        &a.out.join(&rate_png),
        &format!(
            "Partition filters: false-positive rate (MV-PBT Fig. 13; {rows} rows, random keys)"
        ),
        "records per partition",
        "false-positive rate",
        &lines_of(&m, &[BLOOM, PREFIX_BLOOM], FP_RATE),
        XTicks::Values(&xs),
    )
    .map_err(UsageError)?;
    let size_png = format!("{name}-size.png");
    line_chart_ticks(
        &a.out.join(&size_png),
        &format!("Partition filters: bytes per partition (MV-PBT Fig. 13; {rows} rows)"),
        "records per partition",
        "filter bytes per partition",
        &lines_of(&m, &[BLOOM, PREFIX_BLOOM], FILTER_BYTES),
        XTicks::Values(&xs),
    )
    .map_err(UsageError)?;
    Ok(outcome(
        a,
        csv_path,
        &[&rate_png, &size_png],
        m,
        format!(
            "Ran {rows} rows of random keys, 10,000 point lookups and 10,000 prefix scans \
             per partition size, {trials} trial(s) (each its own keys)."
        ),
        Vec::new(),
    ))
}

#[derive(Serialize)]
struct PartitionRow {
    trial: usize,
    second: u64,
    committed_per_s: f64,
    frozen_partitions: u64,
}

/// Figure 15b: YCSB A on an MV-PBT index with small partitions, one
/// second at a time: throughput and the number of partitions; each trial
/// a fresh database.
/// Figure 15b's records, and its partitions' size.
fn fig15b_records(a: &ReproduceArgs) -> u64 {
    a.records.unwrap_or(100_000)
}
const FIG15B_PARTITION: usize = 16_384;

fn fig15b(name: &str, a: &ReproduceArgs, trials: usize) -> Result<Outcome, FigureError> {
    let seconds = a
        .duration
        .unwrap_or(if a.paper_scale { 120.0 } else { 10.0 })
        .max(1.0) as u64;
    let cfg = CoreConfig {
        workload: CoreWorkload::A,
        index: IndexKind::MvPbt,
        records: fig15b_records(a),
        threads: a.threads.unwrap_or(2),
        warmup: std::time::Duration::ZERO,
        duration: std::time::Duration::from_secs(1),
        seed: a.seed,
        ..CoreConfig::default()
    };
    cfg.validate().map_err(|e| UsageError(e.to_string()))?;
    crate::check_memory(
        &format!("{name} with {} records", cfg.records),
        cfg.records as f64 * cfg.row_bytes() * 2.0,
    )?;
    let e = |e: strata::Error| UsageError(e.to_string());
    let mut m = Measured::default();
    let mut csv = Vec::new();
    'all: for trial in 1..=trials {
        let db = Database::open(
            Options::default()
                .protocol(Protocol::SiSsn)
                .mvpbt_partition_records(FIG15B_PARTITION),
        )
        .map_err(e)?;
        let load = strata_workloads::ycsb_core::load(&db, &cfg, &mut BarObserver::new(true));
        let Some(t) = crate::workload_outcome(load)? else {
            return Err(failed(name));
        };
        for s in 1..=seconds {
            let run = strata_workloads::ycsb_core::run_on(
                &db,
                &t,
                &cfg,
                &mut strata_workloads::driver::Quiet,
            );
            let Some(r) = crate::workload_outcome(run)? else {
                return Err(failed(name));
            };
            let parts = db.stats().mvpbt.frozen_partitions;
            eprintln!(
                "{name}: trial {trial}, second {s}: {:.0} txn/s, {parts} partitions",
                r.committed_per_s
            );
            m.push(
                "YCSB A",
                s as f64,
                vec![
                    (Metric::Throughput, r.committed_per_s),
                    (PARTITIONS, parts as f64),
                ],
            );
            csv.push(PartitionRow {
                trial,
                second: s,
                committed_per_s: r.committed_per_s,
                frozen_partitions: parts,
            });
            if strata_workloads::driver::interrupted() {
                break 'all;
            }
        }
    }
    let csv_path = a.out.join(format!("{name}.csv"));
    write_csv(&csv_path, &csv).map_err(UsageError)?;
    let png = format!("{name}.png");
    line_chart_ticks(
        &a.out.join(&png),
        "YCSB A on MV-PBT over time (MV-PBT Fig. 15b; partitions of 16,384 records)",
        "time (s)",
        "committed transactions/s",
        &lines_of(&m, &["YCSB A"], Metric::Throughput),
        XTicks::Auto,
    )
    .map_err(UsageError)?;
    let parts_png = format!("{name}-partitions.png");
    line_chart_ticks(
        &a.out.join(&parts_png),
        "MV-PBT partitions over time (MV-PBT Fig. 15b)",
        "time (s)",
        "frozen partitions",
        &lines_of(&m, &["YCSB A"], PARTITIONS),
        XTicks::Auto,
    )
    .map_err(UsageError)?;
    Ok(outcome(
        a,
        csv_path,
        &[&png, &parts_png],
        m,
        format!(
            "Ran {} records, {} thread(s), {seconds} one-second runs on one database, {trials} trial(s).",
            cfg.records, cfg.threads
        ),
        Vec::new(),
    ))
}

#[derive(Serialize)]
struct Row {
    trial: usize,
    workload: &'static str,
    index: &'static str,
    committed_per_s: f64,
    aborted_per_s: f64,
    p50_us: f64,
    p99_us: f64,
    records: u64,
    threads: usize,
}

/// Figure 15a: YCSB A, B, D and E through a secondary index of each
/// kind, a fresh database per run.
fn fig15a(name: &str, a: &ReproduceArgs, trials: usize) -> Result<Outcome, FigureError> {
    let (duration, warmup) = a.point_times(if a.all() { 1.0 } else { 2.0 })?;
    let base = CoreConfig {
        records: a
            .records
            .unwrap_or(if a.paper_scale { 10_000_000 } else { 100_000 }),
        threads: a.threads.unwrap_or(2),
        duration,
        warmup,
        seed: a.seed,
        ..CoreConfig::default()
    };
    base.validate().map_err(|e| UsageError(e.to_string()))?;
    crate::check_memory(
        &format!("{name} with {} records", base.records),
        base.records as f64 * base.row_bytes(),
    )?;
    let mut m = Measured::default();
    let mut rows = Vec::new();
    let total = trials * CoreWorkload::ALL.len() * IndexKind::ALL.len();
    'all: for trial in 1..=trials {
        for (i, w) in CoreWorkload::ALL.into_iter().enumerate() {
            for kind in IndexKind::ALL {
                eprintln!(
                    "[{}/{total}] {name}: workload {} index {kind}, trial {trial}",
                    rows.len() + 1,
                    w.name()
                );
                let cfg = CoreConfig {
                    workload: w,
                    index: kind,
                    ..base.clone()
                };
                let Some(r) = crate::ycsb_core_cmd::run_config(Protocol::SiSsn, &cfg, true)? else {
                    return Err(failed(name));
                };
                m.push(
                    kind_label(kind),
                    i as f64,
                    vec![(Metric::Throughput, r.run.committed_per_s)],
                );
                rows.push(Row {
                    trial,
                    workload: w.name(),
                    index: kind.name(),
                    committed_per_s: r.run.committed_per_s,
                    aborted_per_s: r.run.aborted_per_s,
                    p50_us: r.run.latency.p50_us,
                    p99_us: r.run.latency.p99_us,
                    records: cfg.records,
                    threads: cfg.threads,
                });
                if strata_workloads::driver::interrupted() {
                    break 'all;
                }
            }
        }
    }
    let csv = a.out.join(format!("{name}.csv"));
    write_csv(&csv, &rows).map_err(UsageError)?;
    let workloads: Vec<&str> = CoreWorkload::ALL.iter().map(|w| w.name()).collect();
    let mean = |w: usize, k: IndexKind| {
        (m.line(kind_label(k), Metric::Throughput).iter())
            .find(|(x, _)| *x as usize == w)
            .map(|p| p.1)
    };
    let bars: Vec<Bars> = (IndexKind::ALL.iter())
        .map(|&k| Bars {
            label: k.name().to_string(),
            values: (0..workloads.len())
                .map(|w| mean(w, k).unwrap_or(0.0))
                .collect(),
        })
        .collect();
    let png_name = format!("{name}.png");
    bar_chart(
        &a.out.join(&png_name),
        &format!(
            "YCSB through a secondary index (MV-PBT Fig. 15a; {} records, {} threads)",
            base.records, base.threads
        ),
        "committed transactions/s (mean of the trials)",
        &workloads,
        &bars,
    )
    .map_err(UsageError)?;
    // Measurements, not verdicts: the paper's claims here are against an
    // LSM-tree.
    let lines: Vec<String> = (workloads.iter().enumerate())
        .map(|(i, w)| {
            let here = match (mean(i, IndexKind::MvPbt), mean(i, IndexKind::Standard)) {
                (Some(mv), Some(st)) if st > 0.0 => format!("{:.2}x", mv / st),
                _ => "not measured".into(),
            };
            format!(
                "workload {w}: MV-PBT / standard {here} (mean of the trials; measured, not judged)"
            )
        })
        .collect();
    Ok(outcome(
        a,
        csv,
        &[&png_name],
        m,
        format!(
            "Ran {} records, {} thread(s), {} s per point after {} s of warm-up, {trials} trial(s).",
            base.records,
            base.threads,
            duration.as_secs_f64(),
            warmup.as_secs_f64()
        ),
        lines,
    ))
}
