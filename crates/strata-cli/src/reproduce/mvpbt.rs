//! `strata reproduce mvpbt-fig15a`: MV-PBT's Figure 15a (Riegger et al.,
//! §6, "Comparison to LSM-Trees"): YCSB's core workloads A, B, D and E
//! through a secondary index, today's index kind against MV-PBT.
//!
//! ```text
//!   for workload in A, B, D, E: for kind in standard, mvpbt:
//!       fresh database, load, run ──> CSV row
//!   ──> <out>/mvpbt-fig15a.csv, .png (grouped bars: workloads × kinds), .md
//! ```
//!
//! The paper compares MV-PBT with WiredTiger's LSM-tree and B-tree on
//! 100M keys on flash; here both kinds are in memory, so the figure shows
//! what MV-PBT's version records and partitions cost or save against a
//! version-oblivious index on the same engine. The LSM peers (RocksDB,
//! fjall) are not run: they have no secondary index to run these
//! operations through.

use std::path::PathBuf;

use serde::Serialize;
use strata::{Database, Index, IndexKind, Options, Protocol, Schema, Table, Type, Unique, Value};
use strata_workloads::htap::HtapConfig;
use strata_workloads::ycsb_core::{CoreConfig, CoreWorkload};

use super::findings::{judge, At, Check, Expect, Finding, Measured, Metric};
use super::registry::{Config, Figure, Paper, Prepared, Setup};
use super::{FigureError, Outcome, ReproduceArgs};
use crate::plot::{bar_chart, line_chart_ticks, Bars, Line, XTicks};
use crate::read_mostly_cmd::write_csv;
use crate::UsageError;

/// The figures, in the paper's order.
pub const FIGURES: &[Figure] = &[
    Figure {
        name: "mvpbt-fig3",
        paper: Paper::MvPbt,
        label: "Fig. 3",
        caption: "HTAP mix (YCSB A+E with an analytical reader): throughput as the chains grow to 50 versions, today's index against MV-PBT",
        config: Config::Own(&MFig::Fig3),
        claims: &[
            Finding {
                claim: "under long chains MV-PBT's index-only visibility check keeps the analytical queries fast (the issue: at least 2x today's index at 50 versions)",
                check: Check::Ratio {
                    metric: ANALYTICAL,
                    a: MVPBT,
                    b: STANDARD,
                    at: At::Last,
                },
                expect: Expect::AtLeast(2.0),
            },
            Finding {
                claim: "MV-PBT's analytical throughput is robust to the chain length (ours: within 1.3x from 1 to 50 versions)",
                check: Check::Trend {
                    metric: ANALYTICAL,
                    series: MVPBT,
                },
                expect: Expect::Range(0.77, 1.3),
            },
            Finding {
                claim: "the version-oblivious index's throughput drops as the chain grows",
                check: Check::Trend {
                    metric: ANALYTICAL,
                    series: STANDARD,
                },
                expect: Expect::Below1,
            },
        ],
        note: None,
    },
    Figure {
        name: "mvpbt-fig12b",
        paper: Paper::MvPbt,
        label: "Fig. 12b",
        caption: "Scan time of a long reader against chain length: chain-walking visibility check against index-only",
        config: Config::Own(&MFig::Fig12b),
        claims: &[
            Finding {
                claim: "with GC the index-only scan time stays almost constant (the issue: within 1.3x)",
                check: Check::Trend {
                    metric: SCAN_MS,
                    series: ONLY,
                },
                expect: Expect::AtMost(1.3),
            },
            Finding {
                claim: "the chain-walking visibility check slows down by an order of magnitude (the issue: at least 5x)",
                check: Check::Trend {
                    metric: SCAN_MS,
                    series: WALK,
                },
                expect: Expect::AtLeast(5.0),
            },
        ],
        note: None,
    },
    Figure {
        name: "mvpbt-fig13",
        paper: Paper::MvPbt,
        label: "Fig. 13",
        caption: "Partition filters: false-positive rate and size against the partition size",
        config: Config::Own(&MFig::Fig13),
        claims: &[],
        note: None,
    },
    Figure {
        name: "mvpbt-fig15a",
        paper: Paper::MvPbt,
        label: "Fig. 15a",
        caption: "YCSB A, B, D, E through a secondary index: today's index against MV-PBT",
        config: Config::Own(&MFig::Fig15a),
        claims: &[],
        note: None,
    },
    Figure {
        name: "mvpbt-fig15b",
        paper: Paper::MvPbt,
        label: "Fig. 15b",
        caption: "YCSB A on MV-PBT over time: throughput as the partitions grow",
        config: Config::Own(&MFig::Fig15b),
        claims: &[Finding {
            claim: "throughput remains stable as the number of partitions increases",
            check: Check::Trend {
                metric: Metric::Throughput,
                series: "YCSB A",
            },
            expect: Expect::Range(0.8, 1.25),
        }],
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
    fn prepare(
        &self,
        fig: &'static Figure,
        _a: &ReproduceArgs,
    ) -> Result<Box<dyn Prepared>, UsageError> {
        Ok(Box::new(Run {
            fig: *self,
            name: fig.name,
        }))
    }
}

/// A figure to run (each checks its sizes as it starts).
struct Run {
    fig: MFig,
    name: &'static str,
}

impl Prepared for Run {
    fn run(&self, a: &ReproduceArgs) -> Result<Outcome, FigureError> {
        let name = self.name;
        match self.fig {
            MFig::Fig3 => fig3(name, a),
            MFig::Fig12b => fig12b(name, a),
            MFig::Fig13 => fig13(name, a),
            MFig::Fig15a => fig15a(name, a),
            MFig::Fig15b => fig15b(name, a),
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

#[derive(Serialize)]
struct Row {
    workload: &'static str,
    index: &'static str,
    committed_per_s: f64,
    aborted_per_s: f64,
    p50_us: f64,
    p99_us: f64,
    records: u64,
    threads: usize,
}

/// The chain lengths Figure 12b's long reader meets.
const CHAIN_LENGTHS: [u64; 7] = [1, 5, 10, 20, 30, 40, 50];

const WALK: &str = "today's index, rows (chain walk)";
const ONLY: &str = "MV-PBT, covering (index-only)";
const ROWS: &str = "MV-PBT, rows";
const SCAN_MS: Metric = Metric::Named("scan time (ms)");
const FP_RATE: Metric = Metric::Named("false-positive rate");
const FILTER_BYTES: Metric = Metric::Named("filter bytes per partition");
const PARTITIONS: Metric = Metric::Named("frozen partitions");

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

/// Figure 12b: a long reader opens, then every row is updated until the
/// chains hold `length` versions; the reader scans the index. Today's
/// index resolves each entry to its row and walks the chain to the
/// reader's version; MV-PBT decides from its records: under the default
/// logical pointers one per row, as the updates change no indexed column
/// (physical pointers would add a replacement per version, whose dead
/// middle ones the freeze drops, §5.6).
fn fig12b(name: &str, a: &ReproduceArgs) -> Result<Outcome, FigureError> {
    let rows = a
        .records
        .unwrap_or(if a.paper_scale { 100_000 } else { 10_000 });
    crate::check_memory(
        &format!("{name} with {rows} rows"),
        rows as f64 * 50.0 * 120.0,
    )?;
    let e = |e: strata::Error| UsageError(e.to_string());
    let mut m = Measured::default();
    let mut csv = Vec::new();
    let total = CHAIN_LENGTHS.len() * 2;
    let mut done = 0;
    for kind in IndexKind::ALL {
        for length in CHAIN_LENGTHS {
            done += 1;
            eprintln!("[{done}/{total}] {name}: {kind}, chains of {length}");
            let db = Database::open(Options::default()).map_err(e)?;
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
            if kind == IndexKind::MvPbt {
                db.freeze_index(&idx).map_err(e)?;
            }
            let time = |reader: &mut strata::Transaction, covering: bool| {
                let mut times = Vec::new();
                for _ in 0..5 {
                    let started = std::time::Instant::now();
                    let n = if covering {
                        reader.index_scan_keys(&idx, ..).map(|r| r.len())
                    } else {
                        reader.index_scan(&idx, ..).map(|r| {
                            assert!(
                                r.iter().all(|row| row[2] == Value::Int(0)),
                                "the reader's values"
                            );
                            r.len()
                        })
                    };
                    times.push(started.elapsed().as_secs_f64() * 1e3);
                    if n.map_err(e)? as u64 != rows {
                        return Err(UsageError(format!("{name}: a scan missed rows")));
                    }
                }
                times.sort_by(f64::total_cmp);
                Ok(times[times.len() / 2])
            };
            let series: &[(&str, bool)] = match kind {
                IndexKind::Standard => &[(WALK, false)],
                IndexKind::MvPbt => &[(ONLY, true), (ROWS, false)],
            };
            for &(label, covering) in series {
                let ms = time(&mut reader, covering)?;
                m.push(label, length as f64, vec![(SCAN_MS, ms)]);
                csv.push(ScanRow {
                    series: label,
                    chain_length: length,
                    rows,
                    scan_ms: ms,
                });
            }
        }
    }
    let csv_path = a.out.join(format!("{name}.csv"));
    write_csv(&csv_path, &csv).map_err(UsageError)?;
    let xs: Vec<f64> = CHAIN_LENGTHS.iter().map(|&l| l as f64).collect();
    let lines = lines_of(&m, &[WALK, ONLY, ROWS], SCAN_MS);
    let png = format!("{name}.png");
    line_chart_ticks(
        &a.out.join(&png),
        &format!("A long reader's index scan against chain length (MV-PBT Fig. 12b; {rows} rows)"),
        "versions per row",
        "scan time (ms, median of 5)",
        &lines,
        XTicks::Values(&xs),
    )
    .map_err(UsageError)?;
    Ok(outcome(
        a,
        csv_path,
        &[&png],
        m,
        format!("Ran {rows} rows, a reader opened before the updates, each scan timed 5 times (the median)."),
        Vec::new(),
    ))
}

const ANALYTICAL: Metric = Metric::Named("analytical scans/s");
const POINT_US: Metric = Metric::Named("point query (us)");

#[derive(Serialize)]
struct HtapRow {
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
fn fig3(name: &str, a: &ReproduceArgs) -> Result<Outcome, FigureError> {
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
    let total = CHAIN_LENGTHS.len() * IndexKind::ALL.len();
    'all: for length in CHAIN_LENGTHS {
        for kind in IndexKind::ALL {
            eprintln!(
                "[{}/{total}] {name}: {kind}, chains of {length}",
                csv.len() + 1
            );
            let mut cfg = base.clone();
            cfg.chain_length = length;
            cfg.core.index = kind;
            let Some(r) = crate::htap_cmd::run_config(Protocol::SiSsn, &cfg, true)? else {
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
    let csv_path = a.out.join(format!("{name}.csv"));
    write_csv(&csv_path, &csv).map_err(UsageError)?;
    let xs: Vec<f64> = CHAIN_LENGTHS.iter().map(|&l| l as f64).collect();
    let labels: Vec<&str> = IndexKind::ALL.iter().map(|&k| kind_label(k)).collect();
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
            &lines_of(&m, &labels, metric),
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
            "Ran {scale}, {} s per point after {} s of warm-up.",
            duration.as_secs_f64(),
            warmup.as_secs_f64()
        ),
        Vec::new(),
    ))
}

const STANDARD: &str = "today's index";
const MVPBT: &str = "MV-PBT";

fn kind_label(k: IndexKind) -> &'static str {
    match k {
        IndexKind::Standard => STANDARD,
        IndexKind::MvPbt => MVPBT,
    }
}

#[derive(Serialize)]
struct ScanRow {
    series: &'static str,
    chain_length: u64,
    rows: u64,
    scan_ms: f64,
}

fn lines_of(m: &Measured, labels: &[&str], metric: Metric) -> Vec<Line> {
    labels
        .iter()
        .map(|&l| Line {
            label: l.to_string(),
            points: m
                .points
                .get(l)
                .map(|pts| {
                    pts.iter()
                        .filter_map(|(x, v)| {
                            v.iter().find(|(k, _)| *k == metric).map(|(_, y)| (*x, *y))
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect()
}

/// Partition sizes (records) Figure 13 sweeps.
const PARTITION_SIZES: [usize; 4] = [1_024, 4_096, 16_384, 65_536];

#[derive(Serialize)]
struct FilterRow {
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
/// partition, over the partition size.
fn fig13(name: &str, a: &ReproduceArgs) -> Result<Outcome, FigureError> {
    let rows = a
        .records
        .unwrap_or(if a.paper_scale { 1_000_000 } else { 200_000 });
    crate::check_memory(&format!("{name} with {rows} rows"), rows as f64 * 400.0)?;
    let e = |e: strata::Error| UsageError(e.to_string());
    let mut m = Measured::default();
    let mut csv = Vec::new();
    for (i, size) in PARTITION_SIZES.into_iter().enumerate() {
        eprintln!(
            "[{}/{}] {name}: partitions of {size} records",
            i + 1,
            PARTITION_SIZES.len()
        );
        let db = Database::open(Options::default().mvpbt_partition_records(size)).map_err(e)?;
        // The index exists before the rows, so inserts fill and freeze
        // partition after partition.
        let t = table_t(&db)?;
        let idx = db
            .create_index_as("t_sk_v", &t, &["sk", "v"], Unique::No, IndexKind::MvPbt)
            .map_err(e)?;
        let mut rng = strata_workloads::rng::Rng::new(a.seed);
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
            "Bloom filter",
            x,
            vec![
                (FP_RATE, rate),
                (FILTER_BYTES, st.bloom_bytes as f64 / parts),
            ],
        );
        m.push(
            "prefix Bloom filter",
            x,
            vec![
                (FP_RATE, prefix_rate),
                (FILTER_BYTES, st.prefix_bloom_bytes as f64 / parts),
            ],
        );
        csv.push(FilterRow {
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
        &lines_of(&m, &["Bloom filter", "prefix Bloom filter"], FP_RATE),
        XTicks::Values(&xs),
    )
    .map_err(UsageError)?;
    let size_png = format!("{name}-size.png");
    line_chart_ticks(
        &a.out.join(&size_png),
        &format!("Partition filters: bytes per partition (MV-PBT Fig. 13; {rows} rows)"),
        "records per partition",
        "filter bytes per partition",
        &lines_of(&m, &["Bloom filter", "prefix Bloom filter"], FILTER_BYTES),
        XTicks::Values(&xs),
    )
    .map_err(UsageError)?;
    // A rate is a number on its own, not a ratio: judged against the
    // paper's 2% directly.
    let worst = csv
        .iter()
        .map(|r| r.false_positive_rate)
        .fold(0.0, f64::max);
    let verdict = judge(Expect::AtMost(0.02), Some(worst));
    let line = format!(
        "the Bloom filter's false-positive rate is 2% (the issue: at most 2%): here at most {:.2}% over the partition sizes: {}",
        worst * 100.0,
        verdict.text()
    );
    Ok(outcome(
        a,
        csv_path,
        &[&rate_png, &size_png],
        m,
        format!("Ran {rows} rows of random keys, 10,000 point lookups and 10,000 prefix scans per partition size."),
        vec![line],
    ))
}

#[derive(Serialize)]
struct PartitionRow {
    second: u64,
    committed_per_s: f64,
    frozen_partitions: u64,
}

/// Figure 15b: YCSB A on an MV-PBT index with small partitions, one
/// second at a time: throughput and the number of partitions.
fn fig15b(name: &str, a: &ReproduceArgs) -> Result<Outcome, FigureError> {
    let seconds = a
        .duration
        .unwrap_or(if a.paper_scale { 120.0 } else { 10.0 })
        .max(1.0) as u64;
    let cfg = CoreConfig {
        workload: CoreWorkload::A,
        index: IndexKind::MvPbt,
        records: a.records.unwrap_or(100_000),
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
    let db = Database::open(
        Options::default()
            .protocol(Protocol::SiSsn)
            .mvpbt_partition_records(16_384),
    )
    .map_err(e)?;
    let Some(t) = crate::workload_outcome(strata_workloads::ycsb_core::load(
        &db,
        &cfg,
        &mut crate::progress::BarObserver::new(true),
    ))?
    else {
        return Err(failed(name));
    };
    let mut m = Measured::default();
    let mut csv = Vec::new();
    for s in 1..=seconds {
        let Some(r) = crate::workload_outcome(strata_workloads::ycsb_core::run_on(
            &db,
            &t,
            &cfg,
            &mut strata_workloads::driver::Quiet,
        ))?
        else {
            return Err(failed(name));
        };
        let parts = db.stats().mvpbt.frozen_partitions;
        eprintln!(
            "{name}: second {s}: {:.0} txn/s, {parts} partitions",
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
            second: s,
            committed_per_s: r.committed_per_s,
            frozen_partitions: parts,
        });
        if strata_workloads::driver::interrupted() {
            break;
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
            "Ran {} records, {} thread(s), {seconds} one-second runs on one database.",
            cfg.records, cfg.threads
        ),
        Vec::new(),
    ))
}

fn fig15a(name: &str, a: &ReproduceArgs) -> Result<Outcome, FigureError> {
    let (duration, warmup) = a.point_times(2.0)?;
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
    let mut rows = Vec::new();
    let total = CoreWorkload::ALL.len() * IndexKind::ALL.len();
    'all: for w in CoreWorkload::ALL {
        for kind in IndexKind::ALL {
            eprintln!(
                "[{}/{total}] {name}: workload {} index {kind}",
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
            rows.push(Row {
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
    let csv = a.out.join(format!("{name}.csv"));
    write_csv(&csv, &rows).map_err(UsageError)?;
    let workloads: Vec<&str> = CoreWorkload::ALL.iter().map(|w| w.name()).collect();
    let tput = |w: &str, k: IndexKind| {
        rows.iter()
            .find(|r| r.workload == w && r.index == k.name())
            .map(|r| r.committed_per_s)
    };
    let bars: Vec<Bars> = IndexKind::ALL
        .iter()
        .map(|&k| Bars {
            label: k.name().to_string(),
            values: workloads
                .iter()
                .map(|w| tput(w, k).unwrap_or(0.0))
                .collect(),
        })
        .collect();
    let png = a.out.join(format!("{name}.png"));
    bar_chart(
        &png,
        &format!(
            "YCSB through a secondary index (MV-PBT Fig. 15a; {} records, {} threads)",
            base.records, base.threads
        ),
        "committed transactions/s",
        &workloads,
        &bars,
    )
    .map_err(UsageError)?;
    // The issue's bar for the cost of version records: MV-PBT at least
    // 0.85x today's index on the update-heavy workload A (the paper: 6% on
    // TPC-C).
    let lines: Vec<String> = workloads
        .iter()
        .map(|w| {
            let ratio = match (tput(w, IndexKind::MvPbt), tput(w, IndexKind::Standard)) {
                (Some(m), Some(s)) if s > 0.0 => Some(m / s),
                _ => None,
            };
            let here = ratio.map_or("not measured".into(), |r| format!("{r:.2}x"));
            match *w {
                "a" => format!(
                    "workload a: MV-PBT / standard {here} (version records may cost at most 15%: {})",
                    judge(Expect::AtLeast(0.85), ratio).text()
                ),
                _ => format!("workload {w}: MV-PBT / standard {here}"),
            }
        })
        .collect();
    let png_name = format!("{name}.png");
    let _ = png;
    Ok(outcome(
        a,
        csv,
        &[&png_name],
        Measured::default(),
        format!(
            "Ran {} records, {} thread(s), {} s per point after {} s of warm-up.",
            base.records,
            base.threads,
            duration.as_secs_f64(),
            warmup.as_secs_f64()
        ),
        lines,
    ))
}
