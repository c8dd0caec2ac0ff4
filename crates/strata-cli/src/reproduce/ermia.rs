//! `strata reproduce ermia-fig1`: Figure 1 of ERMIA (Kim et al., SIGMOD
//! 2016, §1, with the setup of §4.1 and §4.2 "Microbenchmark"): the throughput of a
//! read-mostly transaction over TPC-C's Stock table as the fraction of the
//! rows it reads that it also updates grows, with 1K reads (left) and 10K
//! reads (right). The paper's finding: Silo's lightweight OCC collapses
//! once 0.1-1% of the touched rows are updates, while ERMIA-SI and
//! ERMIA-SSN hold up.
//!
//! ```text
//!  for each protocol (OCC, MVOCC, SI, SI+SSN, then MVTO, MV2PL, SI+SSI):
//!    one database, Stock loaded once (tpcc::load_stock)
//!    for reads in {1000, 10000}, write fraction in {0, 0.0001, 0.001, 0.01}:
//!      read_mostly::run_on -> committed/s, aborted/s, abort ratio
//!  -> <out>/ermia-fig1.csv (every point)
//!     <out>/ermia-fig1-1k.png, -10k.png (throughput),
//!     <out>/ermia-fig1-1k-aborts.png, -10k-aborts.png (abort ratio)
//! ```
//!
//! The x axis is logarithmic as in the paper: plotted at log10 of the write
//! percentage (0.01% -> -2, 0.1% -> -1, 1% -> 0), the read-only point (0%)
//! one decade left of the smallest (-3); the CSV keeps the fractions.
//! The Stock table has one warehouse (100,000 rows) per worker thread, the
//! paper's rule (its scale factor is its thread count, §4.5), so `--threads`
//! scales the table with the load; `--records` sets the rows instead.
//! Defaults (2 threads, 1.5 s a point) finish in about two minutes on 2
//! cores; `--paper-scale` uses the paper's 30 s points.

use serde::Serialize;
use strata::{Database, Options, Protocol};
use strata_workloads::read_mostly::{self, ReadMostlyConfig, ReadMostlyReport};

use super::findings::{Check, Expect, Finding, Measured, Metric};
use super::registry::{Config, Effect, Facts, Figure, Paper, Prepared, Setup};
use super::{FigureError, Outcome, ReproduceArgs};
use crate::plot::{line_chart_ticks, Line, XTicks};
use crate::progress::BarObserver;
use crate::read_mostly_cmd::{write_csv, STOCK_ROW_BYTES};
use crate::UsageError;

/// The figure.
pub const FIGURES: &[Figure] = &[Figure {
    name: "ermia-fig1",
    paper: Paper::Ermia,
    label: "Fig. 1",
    caption: "Read-mostly microbenchmark: throughput against the fraction of rows read that are updated (1K, 10K reads)",
    config: Config::Own(&Fig1),
    claims: &[
        drops(OCC_1K),
        drops(OCC_10K),
        sharper(OCC_1K, SI_1K),
        sharper(OCC_10K, SI_10K),
    ],
    effects: &[Effect::Concurrency, Effect::Updates, Effect::PaperWarehouseRatio],
    note: Some("2 worker threads at the quick scale (the paper: 24)"),
}];

const ABORT_RATIO: Metric = Metric::Named("abort ratio");
const OCC_1K: &str = "OCC (Silo), 1K reads";
const OCC_10K: &str = "OCC (Silo), 10K reads";
const SI_1K: &str = "SI (ERMIA-SI), 1K reads";
const SI_10K: &str = "SI (ERMIA-SI), 10K reads";
const FIG_1: &str = "§1.1, Fig. 1";

/// Silo's throughput at 1% writes against none.
const fn drops(series: &'static str) -> Finding {
    Finding {
        claim: "Figure 1 shows that it just takes 0.1% or 1% of the touched records to be updates for the transaction throughput to drastically drop in Silo",
        source: FIG_1,
        check: Check::Trend {
            metric: Metric::Throughput,
            series,
        },
        expect: Expect::Below1,
    }
}

/// Silo's curve against ERMIA-SI's: which falls further.
const fn sharper(occ: &'static str, si: &'static str) -> Finding {
    Finding {
        claim: "The sharply decreasing curves of Silo in the figure indicate OCC's sensitivity to contention",
        source: FIG_1,
        check: Check::Growth {
            metric: Metric::Throughput,
            a: occ,
            b: si,
        },
        expect: Expect::Below1,
    }
}

/// Figure 1's setup.
struct Fig1;

impl Setup for Fig1 {
    fn series(&self, _fig: &Figure) -> Vec<String> {
        (READS.iter())
            .flat_map(|&r| SERIES.map(|(l, _)| series_label(l, r)))
            .collect()
    }

    fn xs(&self, _fig: &Figure, _paper_scale: bool) -> Option<Vec<f64>> {
        Some(WRITE_FRACTIONS.map(x_of).to_vec())
    }

    fn facts(&self, _fig: &Figure, a: &ReproduceArgs) -> Facts {
        let Ok(s) = scale(a) else {
            return Facts::default();
        };
        Facts {
            threads: s.base.threads,
            warehouses: s.base.warehouses,
            threads_at_last: s.base.threads,
            update_share: WRITE_FRACTIONS.iter().copied().fold(0.0, f64::max),
            ..Facts::default()
        }
    }

    fn prepare(
        &self,
        fig: &'static Figure,
        a: &ReproduceArgs,
    ) -> Result<Box<dyn Prepared>, UsageError> {
        let s = scale(a)?;
        crate::check_memory(
            &format!("{} with {} stock rows", fig.name, s.base.rows()),
            s.base.rows() as f64 * STOCK_ROW_BYTES,
        )?;
        Ok(Box::new(s))
    }
}

impl Prepared for Scale {
    fn estimate_s(&self) -> f64 {
        let point = self.base.duration.as_secs_f64() + self.base.warmup.as_secs_f64();
        // A load of the stock table per protocol, about 10 s a million rows.
        let loads = SERIES.len() as f64 * self.base.rows() as f64 / 100_000.0;
        loads + (SERIES.len() * READS.len() * WRITE_FRACTIONS.len() * self.trials) as f64 * point
    }

    fn run(&self, a: &ReproduceArgs) -> Result<Outcome, FigureError> {
        let mut m = Measured::default();
        let files = fig1(a, self, &mut m).map_err(FigureError::Failed)?;
        let mut files = files.into_iter().map(std::path::PathBuf::from);
        Ok(Outcome {
            files: files.next().into_iter().collect(),
            pngs: files.collect(),
            measured: m,
            ran: format!(
                "Ran {} stock rows ({} warehouse(s)), {} worker thread(s), {} s per point after {} s of warm-up, {} trial(s) on one loaded database per protocol.",
                self.base.rows(),
                self.base.warehouses,
                self.base.threads,
                self.base.duration.as_secs_f64(),
                self.base.warmup.as_secs_f64(),
                self.trials
            ),
            own: Vec::new(),
        })
    }
}

/// The paper's write fractions (Figure 1's x axis).
pub const WRITE_FRACTIONS: [f64; 4] = [0.0, 0.0001, 0.001, 0.01];
/// The paper's read-set sizes (Figure 1 left and right).
pub const READS: [usize; 2] = [1_000, 10_000];

/// The series: the paper's three systems first (Silo-OCC, ERMIA-SI,
/// ERMIA-SSN) and Hekaton-style MVOCC, then the other protocols.
pub const SERIES: [(&str, Protocol); 7] = [
    ("OCC (Silo)", Protocol::Occ),
    ("MVOCC", Protocol::Mvocc),
    ("SI (ERMIA-SI)", Protocol::Si),
    ("SI+SSN (ERMIA-SSN)", Protocol::SiSsn),
    ("MVTO", Protocol::Mvto),
    ("MV2PL", Protocol::Mv2pl),
    ("SI+SSI", Protocol::SiSsi),
];

/// Where a write fraction sits on the plot's log axis.
pub fn x_of(fraction: f64) -> f64 {
    if fraction <= 0.0 {
        -3.0
    } else {
        (fraction * 100.0).log10()
    }
}

/// One CSV row: one point.
#[derive(Serialize)]
struct Row {
    figure: &'static str,
    trial: usize,
    series: &'static str,
    protocol: &'static str,
    reads: usize,
    write_fraction: f64,
    /// The plot's x: log10 of the write percentage (-3 for none).
    x: f64,
    committed_per_s: f64,
    aborted_per_s: f64,
    abort_ratio: f64,
    p50_us: f64,
    p99_us: f64,
    threads: usize,
    warehouses: u32,
    stock_rows: u64,
    duration_s: f64,
}

struct Scale {
    base: ReadMostlyConfig,
    trials: usize,
}

fn scale(a: &ReproduceArgs) -> Result<Scale, UsageError> {
    let threads = a.threads.unwrap_or(2);
    let (duration, warmup) = a.point_times(if a.all() { 1.0 } else { 1.5 })?;
    // --records: Stock rows in all, 100,000 a warehouse (TPC-C's items);
    // else a warehouse per thread, as the paper scales.
    let (warehouses, items) = match a.records {
        Some(r) => {
            let w = r.div_ceil(100_000).max(1);
            (w, r / w)
        }
        None => (threads.max(1) as u64, 100_000),
    };
    let base = ReadMostlyConfig {
        warehouses: u32::try_from(warehouses).unwrap_or(u32::MAX),
        items: u32::try_from(items).unwrap_or(u32::MAX),
        threads,
        warmup,
        duration,
        seed: a.seed,
        ..ReadMostlyConfig::default()
    };
    for &reads in &READS {
        ReadMostlyConfig {
            reads,
            ..base.clone()
        }
        .validate()
        .map_err(|e| UsageError(format!("ermia-fig1: {e} (--records sets the stock rows)")))?;
    }
    Ok(Scale {
        base,
        trials: a.trials()?,
    })
}

fn fig1(a: &ReproduceArgs, s: &Scale, m: &mut Measured) -> Result<Vec<String>, String> {
    let total = SERIES.len() * READS.len() * WRITE_FRACTIONS.len() * s.trials;
    let mut rows = Vec::new();
    let mut step = 0;
    'series: for (label, protocol) in SERIES {
        // ERMIA's SI+SSN aborts every write to a row newer than the
        // snapshot (first updater wins), blind or not.
        let db = Database::open(
            Options::default()
                .protocol(protocol)
                .ssn_blind_writes(false),
        )
        .map_err(|e| e.to_string())?;
        eprintln!(
            "{label}: loading {} stock rows ({} warehouse(s))",
            s.base.rows(),
            s.base.warehouses
        );
        let stock = read_mostly::load(&db, &s.base, &mut BarObserver::new(false))
            .map_err(|e| e.to_string())?;
        for &reads in &READS {
            let series = series_label(label, reads);
            for &f in &WRITE_FRACTIONS {
                for trial in 1..=s.trials {
                    if strata_workloads::driver::interrupted() {
                        break 'series; // Ctrl-C: write what ran
                    }
                    step += 1;
                    let cfg = ReadMostlyConfig {
                        reads,
                        write_fraction: f,
                        seed: s.base.seed.wrapping_add(trial as u64 - 1),
                        ..s.base.clone()
                    };
                    eprintln!(
                        "[{step}/{total}] {label}, {reads} reads, write fraction {f}, trial {trial}"
                    );
                    let r = read_mostly::run_on(&db, &stock, &cfg, &mut BarObserver::new(false))
                        .map_err(|e| e.to_string())?;
                    m.push(
                        &series,
                        x_of(f),
                        vec![
                            (Metric::Throughput, r.run.committed_per_s),
                            (ABORT_RATIO, r.abort_ratio),
                        ],
                    );
                    rows.push(row(label, protocol, trial, &cfg, &r));
                }
            }
        }
    }
    let out = &a.out;
    let csv = out.join("ermia-fig1.csv");
    write_csv(&csv, &rows)?;
    let mut files = vec![csv.display().to_string()];
    let xs: Vec<f64> = WRITE_FRACTIONS.iter().map(|&f| x_of(f)).collect();
    let x_label =
        "write fraction: log10(% of rows read written); -3: none, -2: 0.01%, -1: 0.1%, 0: 1%";
    for &reads in &READS {
        let k = reads / 1000;
        let size = format!(
            "{k}K reads, {} stock rows, {} threads; mean of {} trial(s)",
            s.base.rows(),
            s.base.threads,
            s.trials
        );
        let lines = |metric: Metric| -> Vec<Line> {
            (SERIES.iter())
                .map(|(label, _)| Line {
                    label: label.to_string(),
                    points: m.line(&series_label(label, reads), metric),
                })
                .collect()
        };
        for (file, title, y, lines) in [
            (
                format!("ermia-fig1-{k}k.png"),
                format!("Read-mostly throughput (ERMIA Fig. 1; {size})"),
                "committed transactions/s",
                lines(Metric::Throughput),
            ),
            (
                format!("ermia-fig1-{k}k-aborts.png"),
                format!("Read-mostly abort ratio (ERMIA Fig. 1 setup; {size})"),
                "aborted / (committed + aborted)",
                lines(ABORT_RATIO),
            ),
        ] {
            let path = out.join(file);
            line_chart_ticks(&path, &title, x_label, y, &lines, XTicks::Values(&xs))?;
            files.push(path.display().to_string());
        }
    }
    print_summary(m);
    Ok(files)
}

/// A series of one panel: "OCC (Silo), 10K reads".
fn series_label(label: &str, reads: usize) -> String {
    format!("{label}, {}K reads", reads / 1000)
}

fn row(
    label: &'static str,
    protocol: Protocol,
    trial: usize,
    cfg: &ReadMostlyConfig,
    r: &ReadMostlyReport,
) -> Row {
    Row {
        figure: "ermia-fig1",
        trial,
        series: label,
        protocol: protocol.name(),
        reads: cfg.reads,
        write_fraction: cfg.write_fraction,
        x: x_of(cfg.write_fraction),
        committed_per_s: r.run.committed_per_s,
        aborted_per_s: r.run.aborted_per_s,
        abort_ratio: r.abort_ratio,
        p50_us: r.run.latency.p50_us,
        p99_us: r.run.latency.p99_us,
        threads: cfg.threads,
        warehouses: cfg.warehouses,
        stock_rows: cfg.rows(),
        duration_s: r.run.measured_s,
    }
}

/// Throughput per point (the trials' mean), and each series' throughput
/// at 1% writes as a share of its read-only throughput.
fn print_summary(m: &Measured) {
    for reads in READS {
        println!("{reads} reads: committed/s at write fraction {WRITE_FRACTIONS:?} (abort ratio), 1% vs 0%");
        for (label, _) in SERIES {
            let series = series_label(label, reads);
            let (tput, aborts) = (
                m.line(&series, Metric::Throughput),
                m.line(&series, ABORT_RATIO),
            );
            if tput.is_empty() {
                continue;
            }
            let cells: Vec<String> = (tput.iter().zip(&aborts))
                .map(|(t, ab)| format!("{:.0} ({:.3})", t.1, ab.1))
                .collect();
            let share = match (tput.first(), tput.last()) {
                (Some(a), Some(b)) if a.1 > 0.0 && tput.len() == WRITE_FRACTIONS.len() => {
                    format!("{:.2}x", b.1 / a.1)
                }
                _ => "-".into(),
            };
            println!("  {label:<20} {}  {share}", cells.join("  "));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_axis_puts_the_papers_fractions_a_decade_apart() {
        let xs: Vec<f64> = WRITE_FRACTIONS.iter().map(|&f| x_of(f)).collect();
        for (x, want) in xs.iter().zip([-3.0, -2.0, -1.0, 0.0]) {
            assert!((x - want).abs() < 1e-9, "{xs:?}");
        }
    }

    #[test]
    fn every_protocol_is_a_series_once() {
        for p in Protocol::ALL {
            assert_eq!(SERIES.iter().filter(|s| s.1 == p).count(), 1, "{p}");
        }
        // The paper's three systems lead.
        assert_eq!(
            SERIES[..4].iter().map(|s| s.1).collect::<Vec<_>>(),
            [
                Protocol::Occ,
                Protocol::Mvocc,
                Protocol::Si,
                Protocol::SiSsn
            ]
        );
    }
}
