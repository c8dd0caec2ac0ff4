//! `strata reproduce vdriver-fig13 | vdriver-fig14 | vdriver-fig15 |
//! vdriver-fig19`: the long-lived-transaction experiments of the vDriver
//! paper (Kim et al., SIGMOD 2020, §5.2), on the LLT workload
//! (`strata_workloads::llt`, `strata bench llt`).
//!
//! Unlike the Peloton figures (`reproduce`: one parameter swept, one
//! number per point), these are time series and distributions of one run
//! per configuration:
//!
//! ```text
//!  fig13: for each config x {with LLTs, without}: one run, uniform keys
//!         then Zipfian, LLTs open once per phase (without: the same
//!         reader threads, each read a short transaction)
//!         -> commits/s, version space, longest chain, every second
//!  fig14: for each config: one Zipfian run with an LLT
//!         -> CDF of chain lengths while the LLT is open
//!  fig15: vDriver on SIRO, for each Zipfian exponent x {with LLTs,
//!         without} -> where versions leaving the row went (1st prune,
//!         2nd prune, cleaned, kept), per class
//!  fig19: vDriver on SIRO, for each segment size x {uniform, Zipfian}
//!         -> the longest chain
//! ```
//!
//! The configurations are the paper's: vDriver (`Preset::VDriver`) against
//! the vanilla engines' designs, transaction-level GC on N2O (an in-memory
//! engine), delta storage with transaction-level GC (MySQL's undo) and VAC
//! on N2O (PostgreSQL's vacuum). Each run writes its rows to
//! `<out>/<figure>.csv` and its plots to `<out>/<figure>*.png`; defaults
//! finish in a few minutes on 2 cores, `--paper-scale` uses the paper's
//! sizes and durations (48 tables, 600 s, LLTs from 50 s and 350 s).

use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use strata::{Database, GcPolicy, Options, Preset, Protocol, SiroTuning, VersionStorage};
use strata_workloads::llt::{self, LltConfig, LltReport};

use super::findings::Measured;
use super::registry::{Config, Figure, Paper, Prepared, Setup};
use super::{FigureError, Outcome, ReproduceArgs};
use crate::plot::{line_chart, line_chart_ticks, Line, XTicks};
use crate::progress::BarObserver;
use crate::UsageError;

/// The figures, in the paper's order.
pub const FIGURES: &[Figure] = &[
    Figure {
        name: "vdriver-fig13",
        paper: Paper::VDriver,
        label: "Fig. 13",
        caption: "Throughput, version space and longest chain over time, with and without LLTs",
        config: Config::Own(&VFig::Fig13),
        claims: &[],
        note: None,
    },
    Figure {
        name: "vdriver-fig14",
        paper: Paper::VDriver,
        label: "Fig. 14",
        caption: "CDF of chain length under skew with an LLT",
        config: Config::Own(&VFig::Fig14),
        claims: &[],
        note: None,
    },
    Figure {
        name: "vdriver-fig15",
        paper: Paper::VDriver,
        label: "Fig. 15",
        caption: "Pruning breakdown by Zipfian exponent, with and without LLTs",
        config: Config::Own(&VFig::Fig15),
        claims: &[],
        note: None,
    },
    Figure {
        name: "vdriver-fig19",
        paper: Paper::VDriver,
        label: "Fig. 19",
        caption: "Segment size against the longest chain",
        config: Config::Own(&VFig::Fig19),
        claims: &[],
        note: None,
    },
];

/// Which of the paper's figures.
#[derive(Debug, Clone, Copy)]
enum VFig {
    Fig13,
    Fig14,
    Fig15,
    Fig19,
}

impl Setup for VFig {
    fn prepare(
        &self,
        _fig: &'static Figure,
        a: &ReproduceArgs,
    ) -> Result<Box<dyn Prepared>, UsageError> {
        Ok(Box::new(Run {
            fig: *self,
            scale: scale(a)?,
        }))
    }
}

/// A figure at its scale.
struct Run {
    fig: VFig,
    scale: Scale,
}

impl Prepared for Run {
    fn run(&self, a: &ReproduceArgs) -> Result<Outcome, FigureError> {
        let s = &self.scale;
        let files = match self.fig {
            VFig::Fig13 => fig13(a, s),
            VFig::Fig14 => fig14(a, s),
            VFig::Fig15 => fig15(a, s),
            VFig::Fig19 => fig19(a, s),
        }
        .map_err(FigureError::Failed)?;
        let mut files = files.into_iter().map(std::path::PathBuf::from);
        Ok(Outcome {
            files: files.next().into_iter().collect(),
            pngs: files.collect(),
            measured: Measured::default(),
            ran: format!(
                "Ran {} tables of {} rows, {} update thread(s), {} LLT(s), {:.0} s per run.",
                s.tables,
                a.records.unwrap_or(1_000),
                a.threads.unwrap_or(2),
                s.llts,
                s.duration.as_secs_f64()
            ),
            own: Vec::new(),
        })
    }
}

/// One engine design of a figure.
struct Engine {
    label: String,
    opts: Options,
}

fn configs() -> Vec<Engine> {
    let vdriver = Options::preset(Preset::VDriver);
    let vanilla = |storage, gc| {
        Options::default()
            .protocol(Protocol::Si)
            .version_storage(storage)
            .gc(gc)
    };
    vec![
        Engine {
            label: format!("vDriver ({}, dead zones)", vdriver.version_storage),
            opts: vdriver,
        },
        Engine {
            label: "txn-level GC, N2O".into(),
            opts: vanilla(VersionStorage::AppendNewToOld, GcPolicy::TransactionLevel),
        },
        Engine {
            label: "txn-level GC, delta (undo)".into(),
            opts: vanilla(VersionStorage::Delta, GcPolicy::TransactionLevel),
        },
        Engine {
            label: "VAC, N2O".into(),
            opts: vanilla(VersionStorage::AppendNewToOld, GcPolicy::Vacuum),
        },
    ]
}

/// The run shape at the chosen scale.
struct Scale {
    tables: usize,
    duration: Duration,
    llts: usize,
}

fn scale(a: &ReproduceArgs) -> Result<Scale, UsageError> {
    let default = if a.paper_scale { 600.0 } else { 30.0 };
    let secs = a.duration.unwrap_or(default);
    if !(secs >= 4.0 && secs.is_finite()) {
        return Err(UsageError(format!(
            "--duration must be at least 4 seconds for an LLT figure, got {secs}"
        )));
    }
    Ok(Scale {
        tables: if a.paper_scale { 48 } else { 4 },
        duration: crate::seconds("duration", secs)?,
        llts: if a.paper_scale { 4 } else { 1 },
    })
}

/// A duration's fraction.
fn at(d: Duration, f: f64) -> Duration {
    d.mul_f64(f)
}

fn base_config(a: &ReproduceArgs, s: &Scale) -> LltConfig {
    LltConfig {
        tables: s.tables,
        rows: a.records.unwrap_or(1_000),
        threads: a.threads.unwrap_or(2),
        duration: s.duration,
        llts: s.llts,
        seed: a.seed,
        ..LltConfig::default()
    }
}

fn run_one(
    label: &str,
    opts: &Options,
    cfg: &LltConfig,
    step: usize,
    total: usize,
) -> Result<LltReport, String> {
    let readers = match cfg.long_snapshots {
        true => "long-lived readers (LLTs)",
        false => "short readers (no LLT)",
    };
    eprintln!(
        "[{step}/{total}] {label}, {} {readers}, {:.0} s",
        cfg.llts,
        cfg.duration.as_secs_f64()
    );
    // The GC thread's period of `strata bench llt`.
    let opts = opts.clone().gc_interval(Some(Duration::from_millis(40)));
    let db = Database::open(opts).map_err(|e| e.to_string())?;
    llt::run(&db, cfg, &mut BarObserver::new(false)).map_err(|e| e.to_string())
}

/// One CSV row of fig13: a second of one run.
#[derive(Serialize)]
struct TimeRow<'a> {
    config: &'a str,
    /// Reader threads; `long`: whether each held one snapshot per window
    /// (the LLTs) or read in short transactions (the baseline).
    llts: usize,
    long: bool,
    t_s: f64,
    committed_per_s: f64,
    version_bytes: u64,
    in_row_bytes: u64,
    off_row_bytes: u64,
    longest_chain: u64,
    llts_open: usize,
}

/// Fig. 13: each configuration with and without LLTs; uniform keys for the
/// first half, Zipfian (theta 0.99) for the second, LLTs open from 10% to
/// 40% and from 60% to 90% of the run (the paper: 50 s-250 s and
/// 350 s-550 s of 600 s).
fn fig13(a: &ReproduceArgs, s: &Scale) -> Result<Vec<String>, String> {
    let d = s.duration;
    let with = LltConfig {
        zipf_at: Some(at(d, 0.5)),
        theta: 0.99,
        llt_windows: vec![(at(d, 0.1), at(d, 0.4)), (at(d, 0.6), at(d, 0.9))],
        ..base_config(a, s)
    };
    // Without LLTs: the same reader threads and reads, each read its own
    // short transaction, so that both runs share the cores alike.
    let without = LltConfig {
        long_snapshots: false,
        ..with.clone()
    };
    let configs = configs();
    let total = configs.len() * 2;
    let mut rows = Vec::new();
    let (mut tput, mut space, mut chain) = (Vec::new(), Vec::new(), Vec::new());
    let mut step = 0;
    for c in &configs {
        for cfg in [&with, &without] {
            if strata_workloads::driver::interrupted() {
                break; // Ctrl-C: write what ran
            }
            step += 1;
            let r = run_one(&c.label, &c.opts, cfg, step, total)?;
            let label = format!(
                "{}{}",
                c.label,
                if cfg.long_snapshots {
                    ", LLTs"
                } else {
                    ", no LLT"
                }
            );
            let series = |f: &dyn Fn(&llt::Sample) -> f64| Line {
                label: label.clone(),
                points: r.samples.iter().map(|x| (x.t_s, f(x))).collect(),
            };
            tput.push(series(&|x| x.committed_per_s));
            space.push(series(&|x| x.version_bytes as f64 / (1 << 20) as f64));
            chain.push(series(&|x| (x.longest_chain.max(1) as f64).log10()));
            rows.extend(r.samples.iter().map(|x| TimeRow {
                config: &c.label,
                llts: cfg.llts,
                long: cfg.long_snapshots,
                t_s: x.t_s,
                committed_per_s: x.committed_per_s,
                version_bytes: x.version_bytes,
                in_row_bytes: x.in_row_bytes,
                off_row_bytes: x.off_row_bytes,
                longest_chain: x.longest_chain,
                llts_open: x.llts_open,
            }));
        }
    }
    let out = &a.out;
    let csv = out.join("vdriver-fig13.csv");
    write_csv(&csv, &rows)?;
    let windows = "LLTs 10-40%, 60-90%; Zipfian from 50%";
    let mut files = vec![csv.display().to_string()];
    for (file, title, y, lines) in [
        (
            "vdriver-fig13-throughput.png",
            "Throughput",
            "committed transactions/s",
            &tput,
        ),
        (
            "vdriver-fig13-space.png",
            "Version space",
            "version bytes (MiB)",
            &space,
        ),
        (
            "vdriver-fig13-chain.png",
            "Longest chain",
            "log10(longest chain)",
            &chain,
        ),
    ] {
        let path = out.join(file);
        line_chart(
            &path,
            &format!("{title} (vDriver Fig. 13; {windows})"),
            "time (s)",
            y,
            lines,
        )?;
        files.push(path.display().to_string());
    }
    Ok(files)
}

/// One CSV row of fig14: the rows of one chain length.
#[derive(Serialize)]
struct CdfRow<'a> {
    config: &'a str,
    chain_length: u64,
    rows: u64,
    cdf: f64,
}

/// Fig. 14: each configuration once, Zipfian keys (theta 0.99) throughout,
/// one LLT from 20% to 80% of the run; the chain lengths of every row at
/// the last second the LLT was open.
fn fig14(a: &ReproduceArgs, s: &Scale) -> Result<Vec<String>, String> {
    let d = s.duration;
    let cfg = LltConfig {
        zipf_at: Some(Duration::ZERO),
        theta: 0.99,
        llts: 1,
        llt_windows: vec![(at(d, 0.2), at(d, 0.8))],
        ..base_config(a, s)
    };
    let configs = configs();
    let mut rows = Vec::new();
    let mut lines = Vec::new();
    for (i, c) in configs.iter().enumerate() {
        let r = run_one(&c.label, &c.opts, &cfg, i + 1, configs.len())?;
        let cdf = cdf(&r.chain_lengths_during_llt);
        if cdf.is_empty() {
            return Err(format!(
                "{}: no sample was taken with the LLT open",
                c.label
            ));
        }
        lines.push(Line {
            label: c.label.clone(),
            points: cdf
                .iter()
                .map(|&(len, _, f)| ((len as f64).log10(), f))
                .collect(),
        });
        rows.extend(cdf.into_iter().map(|(len, n, f)| CdfRow {
            config: &c.label,
            chain_length: len,
            rows: n,
            cdf: f,
        }));
    }
    let csv = a.out.join("vdriver-fig14.csv");
    write_csv(&csv, &rows)?;
    let png = a.out.join("vdriver-fig14.png");
    line_chart(
        &png,
        "Chain length CDF, Zipfian 0.99, one LLT (vDriver Fig. 14)",
        "log10(chain length)",
        "fraction of rows",
        &lines,
    )?;
    Ok(vec![csv.display().to_string(), png.display().to_string()])
}

/// One CSV row of fig15: a pruning stage of one class in one run.
#[derive(Serialize)]
struct StageRow {
    theta: f64,
    llts: bool,
    class: &'static str,
    stage: &'static str,
    versions: u64,
}

const CLASSES: [&str; 3] = ["HOT", "COLD", "LLT"];

/// Fig. 15: vDriver on SIRO, one run per Zipfian exponent (keys Zipfian
/// throughout), with LLTs open from 20% to 80% of the run and with short
/// readers instead; where the versions that left their rows went: pruned
/// at relocation (the paper's "1st prune"), with their segment ("2nd
/// prune"), cleaned one by one, or still kept, per class.
fn fig15(a: &ReproduceArgs, s: &Scale) -> Result<Vec<String>, String> {
    let thetas: &[f64] = if a.paper_scale {
        &[0.0, 0.5, 0.7, 0.9, 1.0, 1.1, 1.2]
    } else {
        &[0.0, 0.7, 1.0, 1.2]
    };
    // A short run per point: the breakdown, not its time course (the paper
    // runs 90 s and finds the same shape at any time).
    let d = if a.duration.is_some() || a.paper_scale {
        s.duration
    } else {
        Duration::from_secs(10)
    };
    let opts = Options::preset(Preset::VDriver);
    let total = thetas.len() * 2;
    let mut rows = Vec::new();
    let mut lines: Vec<Line> = Vec::new();
    let stages = ["1st prune", "2nd prune", "cleaned", "kept"];
    for long in [true, false] {
        let mut per_stage: Vec<Line> = stages
            .iter()
            .map(|st| Line {
                label: format!("{st}{}", if long { ", LLTs" } else { ", no LLT" }),
                points: Vec::new(),
            })
            .collect();
        for &theta in thetas {
            if strata_workloads::driver::interrupted() {
                break;
            }
            let cfg = LltConfig {
                duration: d,
                zipf_at: Some(Duration::ZERO),
                theta,
                llts: s.llts.max(if a.paper_scale { 4 } else { 1 }),
                llt_windows: vec![(at(d, 0.2), at(d, 0.8))],
                long_snapshots: long,
                ..base_config(a, s)
            };
            let label = format!("vDriver (siro), theta {theta}");
            let r = run_one(&label, &opts, &cfg, rows.len() / 12 + 1, total)?;
            let b = &r.siro;
            let by_stage = [b.pruned_at_relocation, b.segment_pruned, b.cleaned, b.kept];
            let all: u64 = by_stage.iter().flatten().sum();
            for (k, counts) in by_stage.iter().enumerate() {
                let n: u64 = counts.iter().sum();
                let share = if all == 0 { 0.0 } else { n as f64 / all as f64 };
                per_stage[k].points.push((theta, share));
                for (c, &versions) in counts.iter().enumerate() {
                    rows.push(StageRow {
                        theta,
                        llts: long,
                        class: CLASSES[c],
                        stage: stages[k],
                        versions,
                    });
                }
            }
        }
        lines.extend(per_stage);
    }
    let csv = a.out.join("vdriver-fig15.csv");
    write_csv(&csv, &rows)?;
    let png = a.out.join("vdriver-fig15.png");
    line_chart_ticks(
        &png,
        "Where versions leaving the row went (vDriver Fig. 15, SIRO)",
        "Zipfian exponent",
        "share of versions",
        &lines,
        XTicks::Values(thetas),
    )?;
    Ok(vec![csv.display().to_string(), png.display().to_string()])
}

/// One CSV row of fig19.
#[derive(Serialize)]
struct SegmentRow {
    segment_kib: u64,
    keys: &'static str,
    max_longest_chain: u64,
    max_version_bytes: u64,
}

/// Fig. 19: vDriver on SIRO with segments of each size, Fig. 13's run
/// (LLTs open), once with uniform keys and once Zipfian 0.99: the longest
/// chain the run saw. An unfilled segment has no (v_min, v_max) to prune
/// by, so larger segments keep hot rows' versions longer.
fn fig19(a: &ReproduceArgs, s: &Scale) -> Result<Vec<String>, String> {
    let sizes_kib: &[u64] = if a.paper_scale {
        &[64, 256, 1024, 4096, 16384]
    } else {
        &[4, 16, 64, 256, 1024]
    };
    let d = if a.duration.is_some() || a.paper_scale {
        s.duration
    } else {
        Duration::from_secs(10)
    };
    let mut rows = Vec::new();
    let mut lines = Vec::new();
    let total = sizes_kib.len() * 2;
    for (keys, zipf) in [("uniform", None), ("Zipfian 0.99", Some(Duration::ZERO))] {
        let mut line = Line {
            label: keys.to_string(),
            points: Vec::new(),
        };
        for &kib in sizes_kib {
            if strata_workloads::driver::interrupted() {
                break;
            }
            let opts = Options::preset(Preset::VDriver).siro(SiroTuning {
                segment_bytes: (kib as usize) << 10,
                ..SiroTuning::default()
            });
            let cfg = LltConfig {
                duration: d,
                zipf_at: zipf,
                theta: 0.99,
                llt_windows: vec![(at(d, 0.2), at(d, 0.8))],
                ..base_config(a, s)
            };
            let label = format!("vDriver (siro), {kib} KiB segments, {keys}");
            let r = run_one(&label, &opts, &cfg, rows.len() + 1, total)?;
            let x = (kib as f64).log2();
            line.points.push((x, r.window.max_longest_chain as f64));
            rows.push(SegmentRow {
                segment_kib: kib,
                keys,
                max_longest_chain: r.window.max_longest_chain,
                max_version_bytes: r.window.max_version_bytes,
            });
        }
        lines.push(line);
    }
    let csv = a.out.join("vdriver-fig19.csv");
    write_csv(&csv, &rows)?;
    let png = a.out.join("vdriver-fig19.png");
    let xs: Vec<f64> = sizes_kib.iter().map(|&k| (k as f64).log2()).collect();
    line_chart_ticks(
        &png,
        "Segment size against the longest chain (vDriver Fig. 19, SIRO)",
        "segment size, log2(KiB) (6 = 64 KiB, 10 = 1 MiB)",
        "longest chain while the LLT is open",
        &lines,
        XTicks::Values(&xs),
    )?;
    Ok(vec![csv.display().to_string(), png.display().to_string()])
}

/// (chain length, rows, fraction of rows at or below it), ascending.
fn cdf(h: &std::collections::BTreeMap<u64, u64>) -> Vec<(u64, u64, f64)> {
    let total: u64 = h.values().sum();
    let mut seen = 0;
    h.iter()
        .map(|(&len, &n)| {
            seen += n;
            (len, n, seen as f64 / total as f64)
        })
        .collect()
}

fn write_csv<T: Serialize>(path: &Path, rows: &[T]) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let mut w = csv::Writer::from_path(path).map_err(|e| err(&e))?;
    for r in rows {
        w.serialize(r).map_err(|e| err(&e))?;
    }
    w.flush().map_err(|e| err(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cdf_climbs_to_one_over_the_lengths() {
        let h = [(1, 6), (2, 3), (40, 1)].into_iter().collect();
        assert_eq!(cdf(&h), [(1, 6, 0.6), (2, 3, 0.9), (40, 1, 1.0)]);
        assert!(cdf(&Default::default()).is_empty());
    }

    #[test]
    fn the_vanilla_configs_are_the_papers_and_valid() {
        let c = configs();
        assert_eq!(c.len(), 4);
        assert_eq!(c[0].opts.gc, GcPolicy::DeadZone);
        for x in &c {
            x.opts.validate().unwrap();
        }
    }
}
