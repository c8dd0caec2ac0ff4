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
use strata_workloads::llt::{LltConfig, Pace};

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
const HOT_SEGMENTS: Metric = Metric::Named("HOT segments held at the LLT's end");
const MISCLASSED: Metric =
    Metric::Named("versions kept outside the LLT class (HOT, COLD) at the LLT's end");
const COLD_KEPT: Metric = Metric::Named("COLD versions kept at the LLT's end");
const ALL_KEPT: Metric = Metric::Named("versions kept off-row at the LLT's end");
const LLT_RELOCATED: Metric =
    Metric::Named("LLT class's share of the versions relocated while the LLT was open");
const FIG_16: &str = "§5.2.3, Fig. 16";
const SUSPENDED: &str = "Cleaning of some VC_HOT segments containing VC_LLT versions are likely to be suspended until LLTs are all committed, irrespective of workload distributions";

/// A measurement at the LLT's end, huge δ_LLT over normal.
const fn huge_over_normal(
    claim: &'static str,
    metric: Metric,
    huge: &'static str,
    normal: &'static str,
) -> Finding {
    Finding {
        claim,
        source: FIG_16,
        check: Check::Ratio {
            metric,
            a: huge,
            b: normal,
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
        Finding {
            claim: "under a highly-skewed distribution, we can observe the effect of classification errors such that there are a few VC_{HOT} segments left uncleaned long time ... because it contains VC_{LLT} versions that were not classed as such at first",
            source: FIG_16,
            check: Check::Ratio {
                metric: HOT_SEGMENTS,
                a: NORMAL_SKEWED,
                b: NORMAL_UNIFORM,
                at: At::Last,
            },
            expect: Expect::Above1,
        },
        huge_over_normal(SUSPENDED, MISCLASSED, HUGE_UNIFORM, NORMAL_UNIFORM),
        huge_over_normal(SUSPENDED, MISCLASSED, HUGE_SKEWED, NORMAL_SKEWED),
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
        huge_over_normal(
            "(2) some VC_{LLT} versions having long update intervals are classed as VC_{COLD} and remain uncleaned until the end of LLTs",
            COLD_KEPT,
            HUGE_SKEWED,
            NORMAL_SKEWED,
        ),
        huge_over_normal(
            "the penalty for the classification errors is the suspension of segment cleaning due to misclassified VC_{LLT} versions in VC_{HOT} segments, thus increasing version space",
            ALL_KEPT,
            HUGE_SKEWED,
            NORMAL_SKEWED,
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
    segments: [u64; 3],
}

impl Snapshot {
    fn of(t_s: f64, st: &SiroStats) -> Self {
        Snapshot {
            t_s,
            kept: st.kept(),
            relocated: st.relocated,
            first_prune: st.pruned_at_relocation,
            segments: st.segments,
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
    segments: u64,
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
/// beside it: every 25 ms until the tables are loaded (the run's clock
/// starts then, so that the snapshots' times are the run's to within
/// that), then every 250 ms; and once after the run and a last GC pass.
fn run_sampled(
    label: &str,
    cfg: &LltConfig,
    llt_commits: u64,
    pace: Pace,
    (step, total): (usize, usize),
) -> Result<Ran, String> {
    let opts = Options::preset(Preset::VDriver).siro(SiroTuning {
        llt_commits,
        ..SiroTuning::default()
    });
    let db = open(&opts, pace)?;
    let done = AtomicBool::new(false);
    let loaded = cfg.tables as u64 * cfg.rows;
    let (report, mut snapshots) = std::thread::scope(|sc| {
        let sampler = sc.spawn(|| {
            let mut v = Vec::new();
            let mut started = None;
            while !done.load(Ordering::Relaxed) {
                let st = db.stats();
                match started {
                    None if st.rows >= loaded => started = Some(Instant::now()),
                    None => {
                        std::thread::sleep(Duration::from_millis(25));
                        continue;
                    }
                    Some(t0) => v.push(Snapshot::of(t0.elapsed().as_secs_f64(), &st.siro)),
                }
                std::thread::sleep(Duration::from_millis(250));
            }
            v
        });
        let r = run_on(label, &db, cfg, pace, step, total);
        done.store(true, Ordering::Relaxed);
        (r, sampler.join().unwrap_or_default())
    });
    let report = report?;
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

/// Every value [`judged`] gives.
const JUDGED: [Metric; 7] = [
    LLT_SHARE,
    HOT_FIRST,
    HOT_SEGMENTS,
    MISCLASSED,
    COLD_KEPT,
    ALL_KEPT,
    LLT_RELOCATED,
];

/// The judged values of one run at the LLT's end: the last snapshot taken
/// while it was open (a quarter second inside its window, for the
/// sampler's clock). NaN for each when no snapshot fell inside (a run too
/// short), which keeps the trials aligned and no claim reads as a number.
fn judged(snapshots: &[Snapshot], window: (f64, f64)) -> Vec<(Metric, f64)> {
    let open: Vec<&Snapshot> = (snapshots.iter())
        .filter(|x| x.t_s > window.0 + 0.25 && x.t_s <= window.1 - 0.25)
        .collect();
    let (Some(first), Some(end)) = (open.first(), open.last()) else {
        return JUDGED.iter().map(|&m| (m, f64::NAN)).collect();
    };
    let share = |n: u64, all: u64| {
        if all == 0 {
            f64::NAN
        } else {
            n as f64 / all as f64
        }
    };
    let relocated_while_open: Vec<u64> = (0..3)
        .map(|c| end.relocated[c].saturating_sub(first.relocated[c]))
        .collect();
    let kept: u64 = end.kept.iter().sum();
    vec![
        (LLT_SHARE, share(end.kept[LLT], kept)),
        (
            HOT_FIRST,
            share(
                end.first_prune[HOT],
                end.first_prune[HOT] + end.relocated[HOT],
            ),
        ),
        (HOT_SEGMENTS, end.segments[HOT] as f64),
        (MISCLASSED, (end.kept[HOT] + end.kept[COLD]) as f64),
        (COLD_KEPT, end.kept[COLD] as f64),
        (ALL_KEPT, kept as f64),
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
            let ran = run_sampled(&label, &cfg, llt_commits, s.pace, (step, total))?;
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
                        class,
                        kept: x.kept[c],
                        segments: x.segments[c],
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
            &format!("Versions kept per class, {series} (vDriver Fig. 16; trial 1)"),
            "time (s)",
            "versions kept",
            &lines,
        )?;
        files.push(png);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t_s: f64, kept: [u64; 3], relocated: [u64; 3]) -> Snapshot {
        Snapshot {
            t_s,
            kept,
            relocated,
            first_prune: [30, 0, 0],
            segments: [2, 1, 1],
        }
    }

    /// The values come from the last snapshot inside the LLT's window,
    /// what was relocated from its first one in the window; every one is
    /// NaN when none fell inside.
    #[test]
    fn judged_reads_the_llts_end() {
        let snaps = [
            at(0.5, [1, 1, 0], [5, 5, 0]),
            at(1.5, [2, 4, 4], [10, 10, 10]),
            at(2.5, [4, 6, 30], [10, 20, 40]),
            at(3.5, [0, 0, 0], [10, 30, 40]),
        ];
        let v = judged(&snaps, (1.0, 3.0));
        let of = |m: Metric| v.iter().find(|x| x.0 == m).unwrap().1;
        assert_eq!(v.len(), JUDGED.len());
        assert_eq!(of(LLT_SHARE), 30.0 / 40.0);
        assert_eq!(of(HOT_FIRST), 30.0 / 40.0);
        assert_eq!(of(HOT_SEGMENTS), 2.0);
        assert_eq!(of(MISCLASSED), 10.0);
        assert_eq!(of(ALL_KEPT), 40.0);
        // Relocated inside the window: 0 HOT, 10 COLD, 30 LLT.
        assert_eq!(of(LLT_RELOCATED), 30.0 / 40.0);
        let none = judged(&snaps, (3.6, 4.0));
        assert_eq!(none.len(), JUDGED.len());
        assert!(none.iter().all(|x| x.1.is_nan()));
    }
}
