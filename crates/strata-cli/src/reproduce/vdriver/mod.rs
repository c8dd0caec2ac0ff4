//! The vDriver paper's long-lived-transaction experiments (Kim et al.,
//! SIGMOD 2020: §2.1's Figures 2 and 3, §5.2's Figures 13 to 19) on the
//! LLT workload (`strata_workloads::llt`, `strata bench llt`). This module
//! holds the engines, the run shape and Figures 13, 14, 15 and 19;
//! `motivation.rs` §2.1's figure, `classification.rs` Fig. 16,
//! `scaling.rs` Figures 17 and 18.
//!
//! Unlike the study's sweeps, these are time series and distributions of
//! one run per configuration, repeated per trial:
//!
//! ```text
//!  fig13: for each engine x {with LLTs, without}: one run, uniform keys
//!         then Zipfian, LLTs open once per phase (without: the same
//!         reader threads, each read a short transaction)
//!         -> commits/s, version space, longest chain, every second
//!  fig14: for each engine: one Zipfian run with an LLT
//!         -> CDF of chain lengths while the LLT is open
//!  fig15: vDriver on SIRO, for each Zipfian exponent x {with LLTs,
//!         without} -> where versions leaving the row went (1st prune,
//!         2nd prune, cleaned, kept)
//!  fig19: vDriver on SIRO, for each segment size x {uniform, Zipfian}
//!         -> the longest chain
//! ```
//!
//! The engines are the paper's (§5.1: "MySQL-8.0 with InnoDB engine and
//! PostgreSQL-12.0 ... under REPEATABLE READ"): vDriver (`Preset::VDriver`)
//! against PostgreSQL (the `postgres` preset: append-only O2N with VAC,
//! physical pointers) and MySQL (delta storage, its undo, with
//! transaction-level purge), all under snapshot isolation; and, ours,
//! an in-memory engine's design (N2O with transaction-level GC). Each
//! figure's claims are judged on the run's own numbers (`findings.rs`).
//! Defaults finish in minutes on 2 cores; `--paper-scale` uses the
//! paper's sizes and durations (48 tables, 600 s, LLTs from 50 s and 350
//! s).

mod classification;
mod motivation;
mod scaling;

use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use strata::{Database, GcPolicy, Options, Preset, Protocol, SiroTuning, VersionStorage};
use strata_workloads::llt::{self, LltConfig, LltReport, Pace};

use super::findings::{At, Check, Expect, Finding, Measured, Metric};
use super::registry::{Config, Effect, Facts, Figure, Paper, Prepared, Setup};
use super::{FigureError, Outcome, ReproduceArgs};
use crate::plot::{line_chart, line_chart_ticks, Line, XTicks};
use crate::progress::BarObserver;
use crate::UsageError;

const VERSION_MIB: Metric = Metric::Named("version space (MiB)");
const LONGEST: Metric = Metric::Named("longest chain");
/// Version bytes in the rows' own storage (every version of the
/// append-only schemes, the newest of the in-place ones: vDriver §2.1's
/// in-row versioning) and off it (the undo or version store: off-row).
const IN_ROW_MIB: Metric = Metric::Named("in-row version space (MiB)");
const OFF_ROW_MIB: Metric = Metric::Named("off-row version space (MiB)");
const SHARE: Metric = Metric::Named("share of versions");

/// An engine of the figures: its label, its series' labels with and
/// without LLTs (constants, so that claims can name them), and its
/// options.
struct Engine {
    label: &'static str,
    llts: &'static str,
    no_llt: &'static str,
    options: fn() -> Options,
}

/// The vanilla engines' designs, under snapshot isolation (REPEATABLE
/// READ, §5.1).
fn vanilla(storage: VersionStorage, gc: GcPolicy) -> Options {
    Options::default()
        .protocol(Protocol::Si)
        .version_storage(storage)
        .gc(gc)
}

const VDRIVER: Engine = Engine {
    label: "vDriver (SIRO, dead zones)",
    llts: "vDriver, LLTs",
    no_llt: "vDriver, no LLT",
    options: || Options::preset(Preset::VDriver),
};
const POSTGRES: Engine = Engine {
    label: "PostgreSQL (O2N, VAC)",
    llts: "PostgreSQL, LLTs",
    no_llt: "PostgreSQL, no LLT",
    options: || Options::preset(Preset::Postgres).protocol(Protocol::Si),
};
const MYSQL: Engine = Engine {
    label: "MySQL (delta undo, txn-level purge)",
    llts: "MySQL, LLTs",
    no_llt: "MySQL, no LLT",
    options: || vanilla(VersionStorage::Delta, GcPolicy::TransactionLevel),
};
const IN_MEMORY: Engine = Engine {
    label: "in-memory (N2O, txn-level GC; ours)",
    llts: "in-memory, LLTs",
    no_llt: "in-memory, no LLT",
    options: || vanilla(VersionStorage::AppendNewToOld, GcPolicy::TransactionLevel),
};
const ENGINES: [&Engine; 4] = [&VDRIVER, &POSTGRES, &MYSQL, &IN_MEMORY];

const FIG_13: &str = "§5.2.1, Fig. 13";
const FIG_14: &str = "§5.2.1, Fig. 14";
const FIG_15: &str = "§5.2.2, Fig. 15";
const FIG_19: &str = "§5.2.6, Fig. 19";
const DEGRADE: &str = "all the vanilla systems suffer performance degradation more sharply under skewed distributions";
const GROWS: &str = "their storage usage grows as time elapses";
const REACHES: &str = "the max chain length of the vanilla engines reaches 10^4 and keeps growing as long as LLTs remain alive";
const SPECTRUM: &str = "most records retain short chain length (up to the maximum of 35) in vDRIVER while the vanilla system shows a wide spectrum";
const MAJORITY: &str = "A majority of versions have been purged in one of two version pruning stages (i.e., 'HOT 1st prune' and 'HOT 2nd prune'), regardless of workload distributions and the presence of LLTs";
const FIRST_92: &str = "up to Zipfian value 1.1, more than 92% of v^{r,1→2} versions can be pruned when being relocated from data pages to vBUFFER, regardless of the presence of LLTs";

/// What the LLTs cost in throughput (with them over without) in the
/// skewed phase (the run's second half) against the uniform one (its
/// first half): below 1 when they cost more under skew.
const fn degrades(e: &Engine) -> Finding {
    Finding {
        claim: DEGRADE,
        source: FIG_13,
        check: Check::Change {
            metric: Metric::Throughput,
            a: e.llts,
            b: e.no_llt,
            before: At::MeanUpTo(0.5),
            after: At::MeanFrom(0.5),
        },
        expect: Expect::Below1,
    }
}

const fn grows(e: &Engine) -> Finding {
    Finding {
        claim: GROWS,
        source: FIG_13,
        check: Check::Ratio {
            metric: VERSION_MIB,
            a: e.llts,
            b: e.no_llt,
            at: At::Max,
        },
        expect: Expect::Above1,
    }
}

const fn reaches(e: &Engine) -> Finding {
    Finding {
        claim: REACHES,
        source: FIG_13,
        check: Check::Value {
            metric: LONGEST,
            series: e.llts,
            at: At::Max,
        },
        expect: Expect::AtLeast(10_000.0),
    }
}

const fn spectrum(vanilla: &Engine) -> Finding {
    Finding {
        claim: SPECTRUM,
        source: FIG_14,
        check: Check::Ratio {
            metric: LONGEST,
            a: vanilla.label,
            b: VDRIVER.label,
            at: At::Last,
        },
        expect: Expect::Above1,
    }
}

/// A Fig. 15 series: a pruning stage with or without LLTs.
const PRUNED_LLTS: &str = "1st + 2nd prune, LLTs";
const PRUNED_NO_LLT: &str = "1st + 2nd prune, no LLT";
const FIRST_LLTS: &str = "1st prune, LLTs";
const FIRST_NO_LLT: &str = "1st prune, no LLT";
const STAGES: [&str; 4] = ["1st prune", "2nd prune", "cleaned", "kept"];

const fn share_at_least(claim: &'static str, series: &'static str, at: At, least: f64) -> Finding {
    Finding {
        claim,
        source: FIG_15,
        check: Check::Value {
            metric: SHARE,
            series,
            at,
        },
        expect: Expect::AtLeast(least),
    }
}

const UNIFORM: &str = "uniform";
const ZIPFIAN: &str = "Zipfian 0.99";

/// Every figure of the paper, in its order.
pub fn figures() -> impl Iterator<Item = &'static Figure> {
    (motivation::FIGURES.iter())
        .chain(THROUGHPUT_AND_PRUNING)
        .chain(classification::FIGURES)
        .chain(scaling::FIGURES)
        .chain(SEGMENT_SIZE)
}

/// Figures 13, 14 and 15 (§5.2.1-5.2.2).
const THROUGHPUT_AND_PRUNING: &[Figure] = &[
    Figure {
        name: "vdriver-fig13",
        paper: Paper::VDriver,
        label: "Fig. 13",
        caption: "Throughput, version space and longest chain over time, with and without LLTs",
        config: Config::Own(&VFig::Fig13),
        claims: &[
            degrades(&POSTGRES),
            degrades(&MYSQL),
            grows(&POSTGRES),
            grows(&MYSQL),
            Finding {
                claim: "the vDRIVER-based engines retain transaction throughput and low space usage in the presence of LLTs",
                source: FIG_13,
                check: Check::Ratio {
                    metric: Metric::Throughput,
                    a: VDRIVER.llts,
                    b: VDRIVER.no_llt,
                    at: At::Mean,
                },
                expect: Expect::About(1.25),
            },
            Finding {
                claim: "the vDRIVER-based engines retain transaction throughput and low space usage in the presence of LLTs",
                source: FIG_13,
                check: Check::Groups {
                    metric: VERSION_MIB,
                    above: &[POSTGRES.llts, MYSQL.llts],
                    below: &[VDRIVER.llts],
                    at: At::Max,
                },
                expect: Expect::Above1,
            },
            Finding {
                claim: "Even under highly-skewed workloads where a few hot records may lead to long version chains, vDRIVER can control the max chain length under 100 and retain the length until the end of LLTs",
                source: FIG_13,
                check: Check::Value {
                    metric: LONGEST,
                    series: VDRIVER.llts,
                    at: At::Max,
                },
                expect: Expect::AtMost(100.0),
            },
            reaches(&POSTGRES),
            reaches(&MYSQL),
        ],
        effects: &[Effect::LongLived, Effect::Skew(0.99)],
        note: Some("4 tables of 1,000 rows and 2 update threads at the quick scale (the paper: 48 tables, 96 cores); the run is 30 s with the paper's shape (LLTs over 10-40% and 60-90% of it, Zipfian from half-way)"),
    },
    Figure {
        name: "vdriver-fig14",
        paper: Paper::VDriver,
        label: "Fig. 14",
        caption: "CDF of chain length under skew with an LLT",
        config: Config::Own(&VFig::Fig14),
        claims: &[
            Finding {
                claim: SPECTRUM,
                source: FIG_14,
                check: Check::Value {
                    metric: LONGEST,
                    series: VDRIVER.label,
                    at: At::Last,
                },
                expect: Expect::AtMost(35.0),
            },
            spectrum(&POSTGRES),
            spectrum(&MYSQL),
        ],
        effects: &[Effect::LongLived, Effect::Skew(0.99)],
        note: None,
    },
    Figure {
        name: "vdriver-fig15",
        paper: Paper::VDriver,
        label: "Fig. 15",
        caption: "Pruning breakdown by Zipfian exponent, with and without LLTs",
        config: Config::Own(&VFig::Fig15),
        claims: &[
            share_at_least(MAJORITY, PRUNED_LLTS, At::Min, 0.5),
            share_at_least(MAJORITY, PRUNED_NO_LLT, At::Min, 0.5),
            share_at_least(FIRST_92, FIRST_LLTS, At::MinUpTo(1.1), 0.92),
            share_at_least(FIRST_92, FIRST_NO_LLT, At::MinUpTo(1.1), 0.92),
        ],
        effects: &[Effect::LongLived, Effect::Skew(1.1)],
        note: Some("on Strata's SIRO in memory (the paper: vDriver in MySQL); shares of every version that left its row"),
    },
];

/// Figure 19 (§5.2.6).
const SEGMENT_SIZE: &[Figure] = &[
    Figure {
        name: "vdriver-fig19",
        paper: Paper::VDriver,
        label: "Fig. 19",
        caption: "Segment size against the longest chain",
        config: Config::Own(&VFig::Fig19),
        claims: &[
            Finding {
                claim: "the max chain length is well controlled under uniform workloads, while there are significant differences under skewed workloads",
                source: FIG_19,
                check: Check::Growth {
                    metric: LONGEST,
                    a: ZIPFIAN,
                    b: UNIFORM,
                },
                expect: Expect::Above1,
            },
            Finding {
                claim: "Especially when the segment size is 16 MiB, the max chain length is greater than 10^3",
                source: FIG_19,
                check: Check::Value {
                    metric: LONGEST,
                    series: ZIPFIAN,
                    // log2 of 16,384 KiB.
                    at: At::X(14.0),
                },
                expect: Expect::AtLeast(1000.0),
            },
        ],
        effects: &[Effect::LongLived, Effect::Skew(0.99)],
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
    fn series(&self, _fig: &Figure) -> Vec<String> {
        let named = |ls: &[&str]| ls.iter().map(|l| l.to_string()).collect::<Vec<_>>();
        match self {
            VFig::Fig13 => named(&ENGINES.map(|e| e.llts))
                .into_iter()
                .chain(named(&ENGINES.map(|e| e.no_llt)))
                .collect(),
            VFig::Fig14 => named(&ENGINES.map(|e| e.label)),
            VFig::Fig15 => (STAGES.iter())
                .flat_map(|st| [format!("{st}, LLTs"), format!("{st}, no LLT")])
                .chain(named(&[PRUNED_LLTS, PRUNED_NO_LLT]))
                .collect(),
            VFig::Fig19 => named(&[UNIFORM, ZIPFIAN]),
        }
    }

    fn xs(&self, _fig: &Figure, paper_scale: bool) -> Option<Vec<f64>> {
        match self {
            VFig::Fig13 => None,
            VFig::Fig14 => Some(vec![0.0]),
            VFig::Fig15 => Some(thetas(paper_scale).to_vec()),
            VFig::Fig19 => Some(
                (segment_sizes_kib(paper_scale).iter())
                    .map(|&k| (k as f64).log2())
                    .collect(),
            ),
        }
    }

    /// From the very configurations a run builds: its LLT windows, its
    /// skew, its updaters.
    fn facts(&self, _fig: &Figure, a: &ReproduceArgs) -> Facts {
        let Ok(s) = scale(*self, a) else {
            return Facts::default();
        };
        let cfgs: Vec<LltConfig> = match self {
            VFig::Fig13 => vec![fig13_config(&s, 1)],
            VFig::Fig14 => vec![fig14_config(&s, 1)],
            VFig::Fig15 => (thetas(a.paper_scale).iter())
                .map(|&t| fig15_config(&s, 1, t, true))
                .collect(),
            VFig::Fig19 => vec![fig19_config(&s, 1, Some(Duration::ZERO))],
        };
        facts_of(&cfgs)
    }

    fn prepare(
        &self,
        _fig: &'static Figure,
        a: &ReproduceArgs,
    ) -> Result<Box<dyn Prepared>, UsageError> {
        Ok(Box::new(Run {
            fig: *self,
            scale: scale(*self, a)?,
        }))
    }
}

/// What the runs of `cfgs` set up: their updaters, their skew, whether
/// an LLT holds its snapshot while they update.
fn facts_of(cfgs: &[LltConfig]) -> Facts {
    let mut f = Facts::default();
    for c in cfgs {
        f.threads = f.threads.max(c.threads);
        if c.zipf_at.is_some() {
            f.theta = f.theta.max(c.theta);
        }
        f.update_share = 1.0;
        f.long_lived |= c.llts > 0 && c.long_snapshots && !c.llt_windows.is_empty();
    }
    f
}

/// A figure at its scale.
struct Run {
    fig: VFig,
    scale: Scale,
}

impl Prepared for Run {
    fn estimate_s(&self) -> f64 {
        let s = &self.scale;
        let runs = match self.fig {
            VFig::Fig13 => ENGINES.len() * 2,
            VFig::Fig14 => ENGINES.len(),
            VFig::Fig15 => thetas(s.paper).len() * 2,
            VFig::Fig19 => segment_sizes_kib(s.paper).len() * 2,
        };
        (runs * s.trials) as f64 * (s.duration.as_secs_f64() + 0.5)
    }

    fn run(&self, a: &ReproduceArgs) -> Result<Outcome, FigureError> {
        let s = &self.scale;
        let mut m = Measured::default();
        let files = match self.fig {
            VFig::Fig13 => fig13(a, s, &mut m),
            VFig::Fig14 => fig14(a, s, &mut m),
            VFig::Fig15 => fig15(a, s, &mut m),
            VFig::Fig19 => fig19(a, s, &mut m),
        }
        .map_err(FigureError::Failed)?;
        let mut files = files.into_iter().map(std::path::PathBuf::from);
        Ok(Outcome {
            files: files.next().into_iter().collect(),
            pngs: files.collect(),
            measured: m,
            ran: format!(
                "Ran {} tables of {} rows, {} update thread(s), {} LLT(s), {:.0} s per run, {} trial(s).",
                s.tables, s.rows, s.threads, s.llts, s.duration.as_secs_f64(), s.trials
            ),
            own: Vec::new(),
        })
    }
}

/// The run shape at the chosen scale.
struct Scale {
    tables: usize,
    rows: u64,
    threads: usize,
    duration: Duration,
    llts: usize,
    trials: usize,
    seed: u64,
    paper: bool,
    /// Wall time, or `--paced`'s updates counted as time.
    pace: Pace,
}

/// A figure's run length: `--duration`, else the paper's (600 s for
/// Figures 13-14, 90 s for 15, Fig. 13's for 19) or the quick scale's, and
/// shorter under `reproduce all`.
fn scale(fig: VFig, a: &ReproduceArgs) -> Result<Scale, UsageError> {
    let all = a.all();
    let default = match (fig, a.paper_scale, all) {
        (VFig::Fig13 | VFig::Fig14 | VFig::Fig19, true, _) => 600.0,
        (VFig::Fig15, true, _) => 90.0,
        (VFig::Fig13, false, false) => 30.0,
        (VFig::Fig13, false, true) => 12.0,
        (VFig::Fig14, false, false) => 20.0,
        (VFig::Fig14, false, true) => 8.0,
        (VFig::Fig15 | VFig::Fig19, false, false) => 10.0,
        (VFig::Fig15 | VFig::Fig19, false, true) => 6.0,
    };
    scale_for(a, default, 4.0)
}

/// The run shape with `--duration` or `default` seconds, refusing runs
/// shorter than `least` (a figure whose windows need whole seconds of
/// samples inside them).
fn scale_for(a: &ReproduceArgs, default: f64, least: f64) -> Result<Scale, UsageError> {
    let secs = a.duration.unwrap_or(default);
    if !(secs >= least && secs.is_finite()) {
        return Err(UsageError(format!(
            "--duration must be at least {least} seconds for this LLT figure, got {secs}"
        )));
    }
    Ok(Scale {
        tables: if a.paper_scale { 48 } else { 4 },
        rows: a.records.unwrap_or(1_000),
        threads: a.threads.unwrap_or(2),
        duration: crate::seconds("duration", secs)?,
        llts: if a.paper_scale { 4 } else { 1 },
        trials: a.trials()?,
        seed: a.seed,
        paper: a.paper_scale,
        pace: match a.paced {
            None => Pace::Wall,
            Some(0) => return Err(UsageError("--paced must be at least 1".into())),
            // GC passes between the samples, not at them: a sample sees
            // the versions written since the last pass.
            Some(n) => Pace::Updates {
                per_second: n,
                gc_every: (n * 3 / 10).max(1),
            },
        },
    })
}

/// A duration's fraction.
fn at(d: Duration, f: f64) -> Duration {
    d.mul_f64(f)
}

fn base_config(s: &Scale, trial: usize) -> LltConfig {
    LltConfig {
        tables: s.tables,
        rows: s.rows,
        threads: s.threads,
        duration: s.duration,
        llts: s.llts,
        seed: s.seed.wrapping_add(trial as u64 - 1),
        ..LltConfig::default()
    }
}

fn run_one(
    label: &str,
    opts: &Options,
    cfg: &LltConfig,
    pace: Pace,
    step: usize,
    total: usize,
) -> Result<LltReport, String> {
    run_on(label, &open(opts, pace)?, cfg, pace, step, total)
}

/// A database of `opts` with the GC thread's period of `strata bench llt`.
/// Paced, GC runs only at the run's own passes (no GC thread, none after
/// commits), which fall on its clock between the samples: a sample then
/// sees what the updates since the last pass left, on any machine.
fn open(opts: &Options, pace: Pace) -> Result<Database, String> {
    let opts = match pace {
        Pace::Wall => opts.clone().gc_interval(Some(Duration::from_millis(40))),
        Pace::Updates { .. } => opts.clone().gc_interval(None).gc_every_commits(u32::MAX),
    };
    Database::open(opts).map_err(|e| e.to_string())
}

/// Runs `cfg` on `db` (a database of [`open`]), run `step` of `total`.
fn run_on(
    label: &str,
    db: &Database,
    cfg: &LltConfig,
    pace: Pace,
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
    llt::run_paced(db, cfg, pace, &mut BarObserver::new(false)).map_err(|e| e.to_string())
}

/// One CSV row of fig13: a second of one run.
#[derive(Serialize)]
struct TimeRow {
    trial: usize,
    series: &'static str,
    config: &'static str,
    /// Reader threads; `long`: whether each held one snapshot per window
    /// (the LLTs) or read in short transactions (the baseline).
    llts: usize,
    long: bool,
    t_s: f64,
    committed_per_s: f64,
    /// The space columns: empty where the run did not measure them
    /// (`LltConfig::walk_space`, off in the throughput figures).
    version_bytes: Option<u64>,
    in_row_bytes: Option<u64>,
    off_row_bytes: Option<u64>,
    longest_chain: Option<u64>,
    llts_open: usize,
}

impl TimeRow {
    /// The row of second `x` of a run of `config`.
    fn of(
        (trial, series, config): (usize, &'static str, &'static str),
        cfg: &LltConfig,
        x: &llt::Sample,
    ) -> TimeRow {
        let space = |v: u64| x.walked.then_some(v);
        TimeRow {
            trial,
            series,
            config,
            llts: cfg.llts,
            long: cfg.long_snapshots,
            t_s: x.t_s,
            committed_per_s: x.committed_per_s,
            version_bytes: space(x.version_bytes),
            in_row_bytes: space(x.in_row_bytes),
            off_row_bytes: space(x.off_row_bytes),
            longest_chain: space(x.longest_chain),
            llts_open: x.llts_open,
        }
    }
}

/// Runs `e` on `cfg` once (run `step` of `total`) and records every
/// second of it: into `m` under the engine's series with or without LLTs
/// (throughput, version space in all, in-row and off-row, the longest
/// chain), and as CSV rows.
fn time_series(
    e: &Engine,
    cfg: &LltConfig,
    pace: Pace,
    trial: usize,
    (step, total): (usize, usize),
    m: &mut Measured,
    rows: &mut Vec<TimeRow>,
) -> Result<(), String> {
    let r = run_one(e.label, &(e.options)(), cfg, pace, step, total)?;
    let series = if cfg.long_snapshots { e.llts } else { e.no_llt };
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    for x in &r.samples {
        m.push_sample(
            series,
            trial,
            x.t_s,
            vec![
                (Metric::Throughput, x.committed_per_s),
                (VERSION_MIB, mib(x.version_bytes)),
                (IN_ROW_MIB, mib(x.in_row_bytes)),
                (OFF_ROW_MIB, mib(x.off_row_bytes)),
                (LONGEST, x.longest_chain as f64),
            ],
        );
        rows.push(TimeRow::of((trial, series, e.label), cfg, x));
    }
    Ok(())
}

/// Fig. 13: each engine with and without LLTs; uniform keys for the first
/// half, Zipfian (theta 0.99) for the second, LLTs open from 10% to 40%
/// and from 60% to 90% of the run (the paper: 50 s-250 s and 350 s-550 s
/// of 600 s).
fn fig13_config(s: &Scale, trial: usize) -> LltConfig {
    let d = s.duration;
    LltConfig {
        zipf_at: Some(at(d, 0.5)),
        theta: 0.99,
        llt_windows: vec![(at(d, 0.1), at(d, 0.4)), (at(d, 0.6), at(d, 0.9))],
        ..base_config(s, trial)
    }
}

fn fig13(a: &ReproduceArgs, s: &Scale, m: &mut Measured) -> Result<Vec<String>, String> {
    let total = ENGINES.len() * 2 * s.trials;
    let mut rows = Vec::new();
    let mut step = 0;
    'all: for trial in 1..=s.trials {
        let with = fig13_config(s, trial);
        // Without LLTs: the same reader threads and reads, each read its
        // own short transaction, so that both runs share the cores alike.
        let without = LltConfig {
            long_snapshots: false,
            ..with.clone()
        };
        for e in ENGINES {
            for cfg in [&with, &without] {
                if strata_workloads::driver::interrupted() {
                    break 'all; // Ctrl-C: write what ran
                }
                step += 1;
                time_series(e, cfg, s.pace, trial, (step, total), m, &mut rows)?;
            }
        }
    }
    let out = &a.out;
    let csv = out.join("vdriver-fig13.csv");
    write_csv(&csv, &rows)?;
    let windows = "LLTs 10-40%, 60-90%; Zipfian from 50%";
    let mut files = vec![csv.display().to_string()];
    let labels: Vec<&str> = ENGINES.iter().flat_map(|e| [e.llts, e.no_llt]).collect();
    let lines = |metric: Metric, f: &dyn Fn(f64) -> f64| -> Vec<Line> {
        (labels.iter())
            .map(|&l| Line {
                label: l.to_string(),
                points: m
                    .line(l, metric)
                    .into_iter()
                    .map(|(x, y)| (x, f(y)))
                    .collect(),
            })
            .collect()
    };
    for (file, title, y, lines) in [
        (
            "vdriver-fig13-throughput.png",
            "Throughput",
            "committed transactions/s",
            lines(Metric::Throughput, &|y| y),
        ),
        (
            "vdriver-fig13-space.png",
            "Version space",
            "version bytes (MiB)",
            lines(VERSION_MIB, &|y| y),
        ),
        (
            "vdriver-fig13-chain.png",
            "Longest chain",
            "log10(longest chain)",
            lines(LONGEST, &|y| y.max(1.0).log10()),
        ),
    ] {
        let path = out.join(file);
        line_chart(
            &path,
            &format!("{title} (vDriver Fig. 13; {windows}; mean of the trials)"),
            "time (s)",
            y,
            &lines,
        )?;
        files.push(path.display().to_string());
    }
    Ok(files)
}

/// One CSV row of fig14: the rows of one chain length.
#[derive(Serialize)]
struct CdfRow {
    trial: usize,
    config: &'static str,
    chain_length: u64,
    rows: u64,
    cdf: f64,
}

/// Fig. 14: each engine once per trial, Zipfian keys (theta 0.99)
/// throughout, one LLT from 20% to 80% of the run; the chain lengths of
/// every row at the last second the LLT was open (the plot: every
/// trial's rows together).
fn fig14_config(s: &Scale, trial: usize) -> LltConfig {
    let d = s.duration;
    LltConfig {
        zipf_at: Some(Duration::ZERO),
        theta: 0.99,
        llts: 1,
        llt_windows: vec![(at(d, 0.2), at(d, 0.8))],
        ..base_config(s, trial)
    }
}

fn fig14(a: &ReproduceArgs, s: &Scale, m: &mut Measured) -> Result<Vec<String>, String> {
    let mut rows = Vec::new();
    let mut pooled: Vec<std::collections::BTreeMap<u64, u64>> = vec![Default::default(); 4];
    let total = ENGINES.len() * s.trials;
    'all: for trial in 1..=s.trials {
        let cfg = fig14_config(s, trial);
        for (i, e) in ENGINES.iter().enumerate() {
            if strata_workloads::driver::interrupted() {
                break 'all;
            }
            let step = (trial - 1) * ENGINES.len() + i + 1;
            let r = run_one(e.label, &(e.options)(), &cfg, s.pace, step, total)?;
            let h = &r.chain_lengths_during_llt;
            let Some(&longest) = h.keys().next_back() else {
                return Err(format!(
                    "{}: no sample was taken with the LLT open",
                    e.label
                ));
            };
            m.push(e.label, 0.0, vec![(LONGEST, longest as f64)]);
            for (&len, &n) in h {
                *pooled[i].entry(len).or_default() += n;
            }
            rows.extend(cdf(h).into_iter().map(|(len, n, f)| CdfRow {
                trial,
                config: e.label,
                chain_length: len,
                rows: n,
                cdf: f,
            }));
        }
    }
    let lines: Vec<Line> = (ENGINES.iter().zip(&pooled))
        .map(|(e, h)| Line {
            label: e.label.to_string(),
            points: (cdf(h).iter())
                .map(|&(len, _, f)| ((len as f64).log10(), f))
                .collect(),
        })
        .collect();
    let csv = a.out.join("vdriver-fig14.csv");
    write_csv(&csv, &rows)?;
    let png = a.out.join("vdriver-fig14.png");
    line_chart(
        &png,
        "Chain length CDF, Zipfian 0.99, one LLT (vDriver Fig. 14; every trial's rows)",
        "log10(chain length)",
        "fraction of rows",
        &lines,
    )?;
    Ok(vec![csv.display().to_string(), png.display().to_string()])
}

/// One CSV row of fig15: a pruning stage of one class in one run.
#[derive(Serialize)]
struct StageRow {
    trial: usize,
    theta: f64,
    llts: bool,
    class: &'static str,
    stage: &'static str,
    versions: u64,
}

const CLASSES: [&str; 3] = ["HOT", "COLD", "LLT"];

/// One CSV row of fig15's second file: what kept the versions copied
/// off-row of one run alive at their first prune.
#[derive(Serialize)]
struct KeptRow {
    trial: usize,
    theta: f64,
    llts: bool,
    /// `SiroStats::relocated_for`'s order.
    kept_by: &'static str,
    versions: u64,
}

const KEPT_BY: [&str; 3] = ["oldest snapshot", "younger snapshot", "zones' floor"];

/// Fig. 15: vDriver on SIRO, one run per Zipfian exponent (keys Zipfian
/// throughout), with LLTs open from 20% to 80% of the run and with short
/// readers instead; where the versions that left their rows went: pruned
/// at relocation (the paper's "1st prune"), with their segment ("2nd
/// prune"), cleaned one by one, or still kept.
/// Fig. 15's Zipfian exponents.
fn thetas(paper: bool) -> &'static [f64] {
    if paper {
        &[0.0, 0.5, 0.7, 0.9, 1.0, 1.1, 1.2]
    } else {
        &[0.0, 0.7, 1.0, 1.2]
    }
}

fn fig15_config(s: &Scale, trial: usize, theta: f64, long: bool) -> LltConfig {
    let d = s.duration;
    LltConfig {
        zipf_at: Some(Duration::ZERO),
        theta,
        llt_windows: vec![(at(d, 0.2), at(d, 0.8))],
        long_snapshots: long,
        ..base_config(s, trial)
    }
}

fn fig15(a: &ReproduceArgs, s: &Scale, m: &mut Measured) -> Result<Vec<String>, String> {
    let thetas = thetas(s.paper);
    let opts = Options::preset(Preset::VDriver);
    let total = thetas.len() * 2 * s.trials;
    let mut rows = Vec::new();
    let mut kept = Vec::new();
    let mut step = 0;
    'all: for trial in 1..=s.trials {
        for long in [true, false] {
            let tag = if long { ", LLTs" } else { ", no LLT" };
            for &theta in thetas {
                if strata_workloads::driver::interrupted() {
                    break 'all;
                }
                let cfg = fig15_config(s, trial, theta, long);
                step += 1;
                let label = format!("vDriver (SIRO), theta {theta}{tag}");
                let r = run_one(&label, &opts, &cfg, s.pace, step, total)?;
                let b = &r.siro;
                let by_stage = [b.pruned_at_relocation, b.segment_pruned, b.cleaned, b.kept];
                let all: u64 = by_stage.iter().flatten().sum();
                let share = |n: u64| if all == 0 { 0.0 } else { n as f64 / all as f64 };
                let stage_n: Vec<u64> = by_stage.iter().map(|c| c.iter().sum()).collect();
                for (k, stage) in STAGES.iter().enumerate() {
                    let series = format!("{stage}{tag}");
                    m.push(&series, theta, vec![(SHARE, share(stage_n[k]))]);
                    for (c, &versions) in by_stage[k].iter().enumerate() {
                        rows.push(StageRow {
                            trial,
                            theta,
                            llts: long,
                            class: CLASSES[c],
                            stage,
                            versions,
                        });
                    }
                }
                kept.extend(
                    (KEPT_BY.iter().zip(b.relocated_for)).map(|(&kept_by, versions)| KeptRow {
                        trial,
                        theta,
                        llts: long,
                        kept_by,
                        versions,
                    }),
                );
                let pruned = if long { PRUNED_LLTS } else { PRUNED_NO_LLT };
                m.push(pruned, theta, vec![(SHARE, share(stage_n[0] + stage_n[1]))]);
            }
        }
    }
    let lines: Vec<Line> = (["LLTs", "no LLT"].iter())
        .flat_map(|tag| STAGES.map(|st| format!("{st}, {tag}")))
        .map(|l| Line {
            points: m.line(&l, SHARE),
            label: l,
        })
        .collect();
    let csv = a.out.join("vdriver-fig15.csv");
    write_csv(&csv, &rows)?;
    // Which snapshots made the first prune miss (not judged: the paper
    // does not say; REPRODUCTION.md reads it).
    let kept_csv = a.out.join("vdriver-fig15-kept.csv");
    write_csv(&kept_csv, &kept)?;
    let png = a.out.join("vdriver-fig15.png");
    line_chart_ticks(
        &png,
        "Where versions leaving the row went (vDriver Fig. 15, SIRO; mean of the trials)",
        "Zipfian exponent",
        "share of versions",
        &lines,
        XTicks::Values(thetas),
    )?;
    Ok(vec![
        csv.display().to_string(),
        kept_csv.display().to_string(),
        png.display().to_string(),
    ])
}

/// One CSV row of fig19.
#[derive(Serialize)]
struct SegmentRow {
    trial: usize,
    segment_kib: u64,
    keys: &'static str,
    max_longest_chain: u64,
    max_version_bytes: u64,
}

/// The segment sizes of Fig. 19: the paper's 64 KiB to 16 MiB (every
/// fourth power of two at the quick scale).
fn segment_sizes_kib(paper: bool) -> &'static [u64] {
    if paper {
        &[64, 256, 1024, 4096, 16384]
    } else {
        &[64, 1024, 16384]
    }
}

/// Fig. 19: vDriver on SIRO with segments of each size, Fig. 13's run
/// (LLTs open), once with uniform keys and once Zipfian 0.99: the longest
/// chain the run saw. An unfilled segment has no (v_min, v_max) to prune
/// by, so larger segments keep hot rows' versions longer.
fn fig19_config(s: &Scale, trial: usize, zipf: Option<Duration>) -> LltConfig {
    let d = s.duration;
    LltConfig {
        zipf_at: zipf,
        theta: 0.99,
        llt_windows: vec![(at(d, 0.2), at(d, 0.8))],
        ..base_config(s, trial)
    }
}

fn fig19(a: &ReproduceArgs, s: &Scale, m: &mut Measured) -> Result<Vec<String>, String> {
    let sizes_kib = segment_sizes_kib(s.paper);
    let mut rows = Vec::new();
    let total = sizes_kib.len() * 2 * s.trials;
    'all: for trial in 1..=s.trials {
        for (keys, zipf) in [(UNIFORM, None), (ZIPFIAN, Some(Duration::ZERO))] {
            for &kib in sizes_kib {
                if strata_workloads::driver::interrupted() {
                    break 'all;
                }
                let opts = Options::preset(Preset::VDriver).siro(SiroTuning {
                    segment_bytes: (kib as usize) << 10,
                    ..SiroTuning::default()
                });
                let cfg = fig19_config(s, trial, zipf);
                let label = format!("vDriver (SIRO), {kib} KiB segments, {keys}");
                let r = run_one(&label, &opts, &cfg, s.pace, rows.len() + 1, total)?;
                let x = (kib as f64).log2();
                m.push(keys, x, vec![(LONGEST, r.window.max_longest_chain as f64)]);
                rows.push(SegmentRow {
                    trial,
                    segment_kib: kib,
                    keys,
                    max_longest_chain: r.window.max_longest_chain,
                    max_version_bytes: r.window.max_version_bytes,
                });
            }
        }
    }
    let csv = a.out.join("vdriver-fig19.csv");
    write_csv(&csv, &rows)?;
    let png = a.out.join("vdriver-fig19.png");
    let xs: Vec<f64> = sizes_kib.iter().map(|&k| (k as f64).log2()).collect();
    let lines: Vec<Line> = ([UNIFORM, ZIPFIAN].iter())
        .map(|&l| Line {
            label: l.to_string(),
            points: m.line(l, LONGEST),
        })
        .collect();
    line_chart_ticks(
        &png,
        "Segment size against the longest chain (vDriver Fig. 19, SIRO; mean of the trials)",
        "segment size, log2(KiB) (6 = 64 KiB, 10 = 1 MiB, 14 = 16 MiB)",
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

    /// The engines are the paper's: vDriver's preset, PostgreSQL as the
    /// `postgres` preset (O2N with VAC, not N2O), MySQL's delta undo; all
    /// under snapshot isolation (§5.1's REPEATABLE READ), and valid.
    #[test]
    fn the_engines_are_the_papers_and_valid() {
        assert_eq!((VDRIVER.options)().gc, GcPolicy::DeadZone);
        let pg = (POSTGRES.options)();
        let preset = Options::preset(Preset::Postgres);
        assert_eq!(
            (pg.version_storage, pg.gc, pg.index_pointers),
            (preset.version_storage, preset.gc, preset.index_pointers)
        );
        assert_eq!(pg.version_storage, VersionStorage::AppendOldToNew);
        assert_eq!(pg.gc, GcPolicy::Vacuum);
        assert_eq!((MYSQL.options)().version_storage, VersionStorage::Delta);
        for e in ENGINES {
            let o = (e.options)();
            assert_eq!(o.protocol, Protocol::Si, "{}", e.label);
            o.validate().unwrap();
        }
    }
}
