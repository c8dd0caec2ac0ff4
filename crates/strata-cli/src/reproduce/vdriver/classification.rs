//! vDriver §5.2.3, Figure 16: the effect of classification errors. SIRO
//! classes a version as it leaves its row (§3.3): LLT if a snapshot older
//! than δ_LLT reads it, else HOT or COLD by its lifetime. Until a
//! transaction is δ_LLT old it is not known as an LLT, so the versions it
//! needs that leave their rows before then land in HOT or COLD segments
//! (the "vulnerability window"), and those segments cannot be cut until
//! the LLT ends. The paper runs an LLT with a legitimate and a huge δ_LLT,
//! under uniform and highly skewed keys, and plots the segments by class.
//!
//! ```text
//!   per trial, for keys in {uniform, Zipfian 1.2}:
//!     normal δ_LLT (SiroTuning's), then huge δ_LLT (the commits of half
//!     the LLT's window at the normal run's rate: the paper's ~15 s)
//!     one run of vDriver (SIRO), one LLT over 20%-80% of it; a sampler
//!     reads SiroStats every 250 ms
//!     -> per class (HOT, COLD, LLT): versions kept off-row, relocated,
//!        pruned at relocation, over time; the judged values at the LLT's
//!        end and after it
//! ```
//!
//! The paper plots each segment's *cut delay* (how long it stayed before
//! it was purged); the engine counts versions per class, not each
//! segment's life, so this figure plots the versions each class keeps
//! off-row over time: a segment left uncleaned is versions of its class
//! kept until the LLT ends.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use strata::{Options, Preset, SiroStats, SiroTuning};
use strata_workloads::llt::LltConfig;

use super::super::findings::{At, Check, Expect, Finding, Measured, Metric};
use super::super::registry::{Config, Effect, Facts, Figure, Paper, Prepared, Setup};
use super::super::{FigureError, Outcome, ReproduceArgs};
use super::{at, base_config, facts_of, open, run_on, scale_for, write_csv, Scale};
use crate::plot::{line_chart, Line};
use crate::UsageError;

const NORMAL_UNIFORM: &str = "normal δ_LLT, uniform";
const NORMAL_SKEWED: &str = "normal δ_LLT, Zipfian 1.2";
const HUGE_UNIFORM: &str = "huge δ_LLT, uniform";
const HUGE_SKEWED: &str = "huge δ_LLT, Zipfian 1.2";
/// The runs of a trial: (series, its plot's name, huge δ_LLT, Zipfian
/// keys), each huge run after the normal one whose rate sizes its δ_LLT.
const RUNS: [(&str, &str, bool, bool); 4] = [
    (NORMAL_UNIFORM, "normal-uniform", false, false),
    (HUGE_UNIFORM, "huge-uniform", true, false),
    (NORMAL_SKEWED, "normal-skewed", false, true),
    (HUGE_SKEWED, "huge-skewed", true, true),
];
/// "To emulate skewed workloads, we set 'rand-zipfian-exp' to 1.2".
const THETA: f64 = 1.2;
const CLASSES: [&str; 3] = ["HOT", "COLD", "LLT"];
const HOT: usize = 0;
const COLD: usize = 1;
const LLT: usize = 2;

const LLT_SHARE: Metric = Metric::Named("LLT class's share of the versions kept at the LLT's end");
const HOT_FIRST: Metric =
    Metric::Named("HOT versions pruned at relocation (1st prune), share of HOT versions");
const HOT_KEPT: Metric = Metric::Named("HOT versions kept at the LLT's end");
const HOT_KEPT_AFTER: Metric = Metric::Named("HOT versions kept after the LLT");
const COLD_KEPT: Metric = Metric::Named("COLD versions kept at the LLT's end");
const COLD_KEPT_AFTER: Metric = Metric::Named("COLD versions kept after the LLT");
const LLT_RELOCATED: Metric =
    Metric::Named("LLT class's share of the versions relocated while the LLT was open");
const FIG_16: &str = "§5.2.3, Fig. 16";
const SUSPENDED: &str = "Cleaning of some VC_HOT segments containing VC_LLT versions are likely to be suspended until LLTs are all committed, irrespective of workload distributions";

/// Versions of one class kept at the LLT's end over those kept after it:
/// above 1 when the LLT held them.
const fn held_by_the_llt(
    claim: &'static str,
    series: &'static str,
    end: Metric,
    after: Metric,
) -> Finding {
    Finding {
        claim,
        source: FIG_16,
        check: Check::Within {
            series,
            a: end,
            b: after,
            at: At::Last,
        },
        expect: Expect::Above1,
    }
}

pub const FIGURES: &[Figure] = &[Figure {
    name: "vdriver-fig16",
    paper: Paper::VDriver,
    label: "Fig. 16",
    caption: "Effect of classification errors: versions kept per class with a normal and a huge δ_LLT, uniform and skewed",
    config: Config::Own(&Fig16),
    claims: &[
        Finding {
            claim: "With normal δ_{LLT} and uniform distribution, a majority of versions required for an LLT are correctly classified as VC_{LLT}",
            source: FIG_16,
            check: Check::Value {
                metric: LLT_SHARE,
                series: NORMAL_UNIFORM,
                at: At::Last,
            },
            expect: Expect::AtLeast(0.5),
        },
        Finding {
            claim: "Note that VC_{HOT} versions are mostly pruned by our version pruning ('1st prune') under uniform distribution",
            source: FIG_16,
            check: Check::Value {
                metric: HOT_FIRST,
                series: NORMAL_UNIFORM,
                at: At::Last,
            },
            expect: Expect::AtLeast(0.5),
        },
        held_by_the_llt(
            "under a highly-skewed distribution, we can observe the effect of classification errors such that there are a few VC_{HOT} segments left uncleaned long time ... because it contains VC_{LLT} versions that were not classed as such at first",
            NORMAL_SKEWED,
            HOT_KEPT,
            HOT_KEPT_AFTER,
        ),
        held_by_the_llt(SUSPENDED, HUGE_UNIFORM, HOT_KEPT, HOT_KEPT_AFTER),
        held_by_the_llt(SUSPENDED, HUGE_SKEWED, HOT_KEPT, HOT_KEPT_AFTER),
        Finding {
            claim: "Under highly-skewed workloads, we observe two prominent phenomena; (1) VC_{LLT} segments are rarely flushed to version space since a majority of VC_{LLT} versions remain unmodified and reside in data pages",
            source: FIG_16,
            check: Check::Ratio {
                metric: LLT_RELOCATED,
                a: HUGE_SKEWED,
                b: HUGE_UNIFORM,
                at: At::Last,
            },
            expect: Expect::Below1,
        },
        held_by_the_llt(
            "(2) some VC_{LLT} versions having long update intervals are classed as VC_{COLD} and remain uncleaned until the end of LLTs",
            HUGE_SKEWED,
            COLD_KEPT,
            COLD_KEPT_AFTER,
        ),
    ],
    effects: &[Effect::LongLived, Effect::Skew(1.2)],
    note: Some("versions kept per class stand for the paper's segments by cut delay (the engine does not time each segment); δ_LLT counts commits here (SiroTuning's 10,000 normal; huge: the commits of half the LLT's window at the normal run's rate, the paper's ~15 s)"),
}];

/// Figure 16's setup.
struct Fig16;

/// 10 s a run (6 s under `reproduce all`), 120 s at the paper's scale;
/// the paper's 10,000 rows a table.
fn scale(a: &ReproduceArgs) -> Result<Scale, UsageError> {
    let default = match (a.paper_scale, a.all()) {
        (true, _) => 120.0,
        (false, false) => 10.0,
        (false, true) => 6.0,
    };
    Ok(Scale {
        rows: a.records.unwrap_or(10_000),
        llts: 1,
        ..scale_for(a, default, 2.0)?
    })
}

/// One run: one LLT over 20%-80% of it.
fn config(s: &Scale, trial: usize, skewed: bool) -> LltConfig {
    let d = s.duration;
    LltConfig {
        zipf_at: skewed.then_some(Duration::ZERO),
        theta: THETA,
        llt_windows: vec![(at(d, 0.2), at(d, 0.8))],
        ..base_config(s, trial)
    }
}

impl Setup for Fig16 {
    fn series(&self, _fig: &Figure) -> Vec<String> {
        RUNS.iter().map(|r| r.0.to_string()).collect()
    }

    fn xs(&self, _fig: &Figure, _paper_scale: bool) -> Option<Vec<f64>> {
        Some(vec![0.0])
    }

    fn facts(&self, _fig: &Figure, a: &ReproduceArgs) -> Facts {
        scale(a).map_or(Facts::default(), |s| {
            facts_of(&[config(&s, 1, false), config(&s, 1, true)])
        })
    }

    fn prepare(
        &self,
        _fig: &'static Figure,
        a: &ReproduceArgs,
    ) -> Result<Box<dyn Prepared>, UsageError> {
        Ok(Box::new(Run(scale(a)?)))
    }
}

struct Run(Scale);

impl Prepared for Run {
    fn estimate_s(&self) -> f64 {
        let s = &self.0;
        (RUNS.len() * s.trials) as f64 * (s.duration.as_secs_f64() + 1.0)
    }

    fn run(&self, a: &ReproduceArgs) -> Result<Outcome, FigureError> {
        let s = &self.0;
        let mut m = Measured::default();
        let files = fig16(a, s, &mut m).map_err(FigureError::Failed)?;
        let mut files = files.into_iter();
        Ok(Outcome {
            files: files.next().into_iter().collect(),
            pngs: files.collect(),
            measured: m,
            ran: format!(
                "Ran vDriver (SIRO) on {} tables of {} rows, {} update thread(s), one LLT over 20%-80% of each {:.0} s run, {} trial(s).",
                s.tables,
                s.rows,
                s.threads,
                s.duration.as_secs_f64(),
                s.trials
            ),
            own: Vec::new(),
        })
    }
}

/// SIRO's counters at one moment of a run.
#[derive(Debug, Clone, Default)]
struct Snapshot {
    /// Seconds since the run's clock started.
    t_s: f64,
    kept: [u64; 3],
    relocated: [u64; 3],
    first_prune: [u64; 3],
}

impl Snapshot {
    fn of(t_s: f64, st: &SiroStats) -> Self {
        Snapshot {
            t_s,
            kept: st.kept(),
            relocated: st.relocated,
            first_prune: st.pruned_at_relocation,
        }
    }
}

/// One CSV row: a class at one moment of one run.
#[derive(Serialize)]
struct Row {
    trial: usize,
    series: &'static str,
    llt_commits: u64,
    t_s: f64,
    llt_open: bool,
    class: &'static str,
    kept: u64,
    relocated: u64,
    pruned_at_relocation: u64,
}

/// What one run measured: its snapshots, and its rate (for the huge
/// δ_LLT of the run after it).
struct Ran {
    snapshots: Vec<Snapshot>,
    committed_per_s: f64,
}

/// Runs vDriver with `llt_commits` as δ_LLT on `cfg`, reading SiroStats
/// every 250 ms beside it. The sampler's clock starts before the tables
/// are loaded; the load's time (the whole call less the run) is taken off
/// afterwards, so that its times are the run's.
fn run_sampled(
    label: &str,
    cfg: &LltConfig,
    llt_commits: u64,
    (step, total): (usize, usize),
) -> Result<Ran, String> {
    let opts = Options::preset(Preset::VDriver).siro(SiroTuning {
        llt_commits,
        ..SiroTuning::default()
    });
    let db = open(&opts)?;
    let done = AtomicBool::new(false);
    let started = Instant::now();
    let (report, mut snapshots) = std::thread::scope(|sc| {
        let sampler = sc.spawn(|| {
            let mut v = Vec::new();
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(250));
                v.push(Snapshot::of(
                    started.elapsed().as_secs_f64(),
                    &db.stats().siro,
                ));
            }
            v
        });
        let r = run_on(label, &db, cfg, step, total);
        done.store(true, Ordering::Relaxed);
        (r, sampler.join().unwrap_or_default())
    });
    let report = report?;
    let load_s = (started.elapsed().as_secs_f64() - cfg.duration.as_secs_f64()).max(0.0);
    for x in &mut snapshots {
        x.t_s -= load_s;
    }
    snapshots.retain(|x| x.t_s >= 0.0);
    // After the run (its LLT long closed, a last GC pass): what no LLT
    // holds any more.
    db.collect_garbage();
    snapshots.push(Snapshot::of(
        cfg.duration.as_secs_f64() + 0.1,
        &db.stats().siro,
    ));
    Ok(Ran {
        snapshots,
        committed_per_s: report.run.committed_per_s,
    })
}

/// The judged values of one run: at the LLT's end (the last snapshot
/// taken while it was open) and after the run.
fn judged(snapshots: &[Snapshot], window: (f64, f64)) -> Vec<(Metric, f64)> {
    let open: Vec<&Snapshot> = (snapshots.iter())
        .filter(|x| x.t_s > window.0 && x.t_s <= window.1)
        .collect();
    let (Some(end), Some(after)) = (open.last(), snapshots.last()) else {
        return Vec::new();
    };
    let share = |n: u64, all: u64| {
        if all == 0 {
            f64::NAN
        } else {
            n as f64 / all as f64
        }
    };
    let first = open.first().map_or(&Snapshot::default(), |x| *x).clone();
    let relocated_while_open: Vec<u64> = (0..3)
        .map(|c| end.relocated[c].saturating_sub(first.relocated[c]))
        .collect();
    vec![
        (LLT_SHARE, share(end.kept[LLT], end.kept.iter().sum())),
        (
            HOT_FIRST,
            share(
                end.first_prune[HOT],
                end.first_prune[HOT] + end.relocated[HOT],
            ),
        ),
        (HOT_KEPT, end.kept[HOT] as f64),
        (HOT_KEPT_AFTER, after.kept[HOT] as f64),
        (COLD_KEPT, end.kept[COLD] as f64),
        (COLD_KEPT_AFTER, after.kept[COLD] as f64),
        (
            LLT_RELOCATED,
            share(relocated_while_open[LLT], relocated_while_open.iter().sum()),
        ),
    ]
}

fn fig16(a: &ReproduceArgs, s: &Scale, m: &mut Measured) -> Result<Vec<PathBuf>, String> {
    let total = RUNS.len() * s.trials;
    let normal = SiroTuning::default().llt_commits;
    let mut rows = Vec::new();
    // Trial 1's snapshots of each run, for the plots.
    let mut plotted: Vec<(&str, &str, Vec<Snapshot>)> = Vec::new();
    let mut step = 0;
    'all: for trial in 1..=s.trials {
        let mut rate = 0.0;
        for (series, slug, huge, skewed) in RUNS {
            if strata_workloads::driver::interrupted() {
                break 'all; // Ctrl-C: write what ran
            }
            step += 1;
            let cfg = config(s, trial, skewed);
            let (start, end) = cfg.llt_windows[0];
            let window = (start.as_secs_f64(), end.as_secs_f64());
            let llt_commits = if huge {
                // The paper's ~15 s against its LLT's life: half of it.
                ((rate * (window.1 - window.0) / 2.0) as u64).max(normal * 10)
            } else {
                normal
            };
            let label = format!("vDriver (SIRO), {series}, δ_LLT {llt_commits} commits");
            let ran = run_sampled(&label, &cfg, llt_commits, (step, total))?;
            if !huge {
                rate = ran.committed_per_s;
            }
            m.push(series, 0.0, judged(&ran.snapshots, window));
            for x in &ran.snapshots {
                for (c, class) in CLASSES.iter().enumerate() {
                    rows.push(Row {
                        trial,
                        series,
                        llt_commits,
                        t_s: x.t_s,
                        llt_open: x.t_s > window.0 && x.t_s <= window.1,
                        class: *class,
                        kept: x.kept[c],
                        relocated: x.relocated[c],
                        pruned_at_relocation: x.first_prune[c],
                    });
                }
            }
            if trial == 1 {
                plotted.push((series, slug, ran.snapshots));
            }
        }
    }
    let csv = a.out.join("vdriver-fig16.csv");
    write_csv(&csv, &rows)?;
    let mut files = vec![csv];
    for (series, slug, snaps) in &plotted {
        let png = a.out.join(format!("vdriver-fig16-{slug}.png"));
        let lines: Vec<Line> = (CLASSES.iter().enumerate())
            .map(|(c, class)| Line {
                label: format!("{class} versions kept"),
                points: snaps.iter().map(|x| (x.t_s, x.kept[c] as f64)).collect(),
            })
            .collect();
        line_chart(
            &png,
            &format!("Versions kept off-row per class, {series} (vDriver Fig. 16; LLT over 20%-80% of the run; trial 1)"),
            "time (s)",
            "versions kept",
            &lines,
        )?;
        files.push(png);
    }
    Ok(files)
}
