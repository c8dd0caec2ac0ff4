//! vDriver §5.2.4-5.2.5, Figures 17 and 18: whether the LLTs' harm
//! depends on the machine's cores, and on the record size.
//!
//! ```text
//!  fig17: per trial, per update-thread count, for vDriver and MySQL
//!         (delta undo), with LLTs and without (their threads then read in
//!         short transactions): one Zipfian run, LLTs from 1/6 to 11/12 of
//!         it (the paper: 10 s-55 s) -> commits/s while they are open
//!  fig18: per trial, per record size (128, 1024 bytes), for vDriver and
//!         PostgreSQL (O2N, VAC): one run, Zipfian 1.1, an LLT from 1/6 of
//!         it to its end -> commits/s over time, and while it is open
//! ```
//!
//! The paper limits the server's cores with taskset (24, 48, 96); here
//! the engine is a library, so its update threads are the cores it gets.
//! "While open" is the mean of the seconds the LLT threads were open in
//! (the baseline's: the seconds its readers were running), so that both
//! runs compare like for like.

use std::path::PathBuf;
use std::time::Duration;

use strata_workloads::llt::{LltConfig, Sample};

use super::super::findings::{At, Check, Expect, Finding, Measured, Metric};
use super::super::registry::{Config, Effect, Facts, Figure, Paper, Prepared, Setup};
use super::super::{FigureError, Outcome, ReproduceArgs};
use super::{
    at, base_config, facts_of, run_one, scale_for, write_csv, Engine, Scale, TimeRow, MYSQL,
    POSTGRES, VDRIVER,
};
use crate::plot::{line_chart, line_chart_ticks, Line, XTicks};
use crate::UsageError;

/// Committed transactions/s in the seconds the LLT threads were open.
const OPEN: Metric = Metric::Named("committed transactions/s while the LLTs are open");
const FIG_17: &str = "§5.2.4, Fig. 17";
const FIG_18: &str = "§5.2.5, Fig. 18";
const FIG17_ENGINES: [&Engine; 2] = [&VDRIVER, &MYSQL];
const FIG18_ENGINES: [&Engine; 2] = [&VDRIVER, &POSTGRES];
/// Fig. 18's record sizes, bytes (both scales: the paper's).
const ROW_BYTES: [usize; 2] = [128, 1024];
const COLLAPSE: &str = "the vanilla engine suffers the same performance collapse due to the longer version chain created by LLTs, while vDRIVER escapes performance matters";

/// Update threads of Fig. 17: the paper's cores (24, 48, 96), or one and
/// two at the quick scale (a 2-core machine).
fn threads(paper: bool) -> &'static [usize] {
    if paper {
        &[24, 48, 96]
    } else {
        &[1, 2]
    }
}

/// The engine's throughput with its LLTs over without, at the most
/// threads.
const fn with_over_without(e: &Engine, expect: Expect) -> Finding {
    Finding {
        claim: COLLAPSE,
        source: FIG_17,
        check: Check::Ratio {
            metric: OPEN,
            a: e.llts,
            b: e.no_llt,
            at: At::Last,
        },
        expect,
    }
}

pub const FIGURES: &[Figure] = &[
    Figure {
        name: "vdriver-fig17",
        paper: Paper::VDriver,
        label: "Fig. 17",
        caption: "Throughput with LLTs against the cores (update threads), vDriver against MySQL",
        config: Config::Own(&Fig::Cores),
        claims: &[
            with_over_without(&MYSQL, Expect::Below1),
            with_over_without(&VDRIVER, Expect::About(1.25)),
        ],
        effects: &[Effect::LongLived, Effect::Concurrency, Effect::Skew(0.99)],
        note: Some("update threads stand for the paper's cores (taskset to 24, 48, 96); Zipfian 0.99 keys (the paper: 'specialized distribution'); one LLT at the quick scale, four at the paper's"),
    },
    Figure {
        name: "vdriver-fig18",
        paper: Paper::VDriver,
        label: "Fig. 18",
        caption: "Throughput with an LLT at record sizes of 128 and 1024 bytes, vDriver against PostgreSQL",
        config: Config::Own(&Fig::RecordSize),
        claims: &[
            Finding {
                claim: "Since PostgreSQL with vDRIVER only keeps one version in data pages, the throughput does not change noticeably, although record size becomes enormous",
                source: FIG_18,
                check: Check::Trend {
                    metric: OPEN,
                    series: VDRIVER.llts,
                },
                expect: Expect::About(1.25),
            },
            Finding {
                claim: "the vanilla system exhibits worse throughput as we increase the record size since page splits occur more frequently with the larger size than the smaller one",
                source: FIG_18,
                check: Check::Trend {
                    metric: OPEN,
                    series: POSTGRES.llts,
                },
                expect: Expect::Below1,
            },
            Finding {
                claim: "the vanilla system exhibits worse throughput as we increase the record size since page splits occur more frequently with the larger size than the smaller one",
                source: FIG_18,
                check: Check::Growth {
                    metric: OPEN,
                    a: POSTGRES.llts,
                    b: VDRIVER.llts,
                },
                expect: Expect::Below1,
            },
        ],
        effects: &[Effect::LongLived, Effect::Skew(1.1)],
        note: Some("Strata has no pages to split: a larger record costs PostgreSQL's design here only its copies (every version a whole tuple)"),
    },
];

/// Which figure.
#[derive(Debug, Clone, Copy)]
enum Fig {
    Cores,
    RecordSize,
}

/// The runs' length: 8 s (6 under `reproduce all`), or the paper's 60 s
/// (LLTs "join around 10s and end 55s"); at least 2 s.
fn scale(fig: Fig, a: &ReproduceArgs) -> Result<Scale, UsageError> {
    let default = match (a.paper_scale, a.all()) {
        (true, _) => 60.0,
        (false, false) => 8.0,
        (false, true) => 6.0,
    };
    let s = scale_for(a, default, 2.0)?;
    Ok(match fig {
        Fig::Cores => s,
        // "an LLT begins at about 10s"
        Fig::RecordSize => Scale { llts: 1, ..s },
    })
}

/// Fig. 17's run at `threads` update threads: Zipfian 0.99 keys, the
/// LLTs from 10 s to 55 s of 60 s. Figs. 17 and 18 judge throughput only,
/// so their samples do not walk the chains (`LltConfig::walk_space`): the
/// walk would take a core from the updaters on this machine, and more of
/// it from the designs whose chains the LLT makes long.
fn cores_config(s: &Scale, trial: usize, threads: usize) -> LltConfig {
    let d = s.duration;
    LltConfig {
        threads,
        zipf_at: Some(Duration::ZERO),
        theta: 0.99,
        llt_windows: vec![(at(d, 10.0 / 60.0), at(d, 55.0 / 60.0))],
        walk_space: false,
        ..base_config(s, trial)
    }
}

/// Fig. 18's run: rows of `row_bytes`, Zipfian 1.1, an LLT from 10 s of
/// 60 s to the end.
fn record_config(s: &Scale, trial: usize, row_bytes: usize) -> LltConfig {
    let d = s.duration;
    LltConfig {
        row_bytes,
        zipf_at: Some(Duration::ZERO),
        theta: 1.1,
        llt_windows: vec![(at(d, 10.0 / 60.0), d)],
        walk_space: false,
        ..base_config(s, trial)
    }
}

impl Fig {
    fn engines(self) -> [&'static Engine; 2] {
        match self {
            Fig::Cores => FIG17_ENGINES,
            Fig::RecordSize => FIG18_ENGINES,
        }
    }

    /// The runs of a trial, as (x, engine, configuration).
    fn runs(self, s: &Scale, trial: usize) -> Vec<(f64, &'static Engine, LltConfig)> {
        let mut v = Vec::new();
        match self {
            Fig::Cores => {
                for &n in threads(s.paper) {
                    for e in FIG17_ENGINES {
                        let with = cores_config(s, trial, n);
                        let without = LltConfig {
                            long_snapshots: false,
                            ..with.clone()
                        };
                        v.push((n as f64, e, with));
                        v.push((n as f64, e, without));
                    }
                }
            }
            Fig::RecordSize => {
                for bytes in ROW_BYTES {
                    for e in FIG18_ENGINES {
                        v.push((bytes as f64, e, record_config(s, trial, bytes)));
                    }
                }
            }
        }
        v
    }
}

impl Setup for Fig {
    fn series(&self, _fig: &Figure) -> Vec<String> {
        let mut v = Vec::new();
        for e in self.engines() {
            v.push(e.llts.to_string());
            match self {
                Fig::Cores => v.push(e.no_llt.to_string()),
                Fig::RecordSize => {
                    v.extend(ROW_BYTES.map(|b| over_time(e, b)));
                }
            }
        }
        v
    }

    fn xs(&self, _fig: &Figure, paper_scale: bool) -> Option<Vec<f64>> {
        Some(match self {
            Fig::Cores => threads(paper_scale).iter().map(|&n| n as f64).collect(),
            Fig::RecordSize => ROW_BYTES.map(|b| b as f64).to_vec(),
        })
    }

    fn facts(&self, _fig: &Figure, a: &ReproduceArgs) -> Facts {
        scale(*self, a).map_or(Facts::default(), |s| {
            let cfgs: Vec<LltConfig> = self.runs(&s, 1).into_iter().map(|r| r.2).collect();
            facts_of(&cfgs)
        })
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

/// Fig. 18's time series of one engine at one record size.
fn over_time(e: &Engine, bytes: usize) -> String {
    format!("{}, {bytes} B", e.llts)
}

struct Run {
    fig: Fig,
    scale: Scale,
}

impl Prepared for Run {
    fn estimate_s(&self) -> f64 {
        let s = &self.scale;
        (self.fig.runs(s, 1).len() * s.trials) as f64 * (s.duration.as_secs_f64() + 0.5)
    }

    fn run(&self, a: &ReproduceArgs) -> Result<Outcome, FigureError> {
        let s = &self.scale;
        let mut m = Measured::default();
        let files = run(self.fig, a, s, &mut m).map_err(FigureError::Failed)?;
        let mut files = files.into_iter();
        Ok(Outcome {
            files: files.next().into_iter().collect(),
            pngs: files.collect(),
            measured: m,
            ran: format!(
                "Ran {} tables of {} rows, {} LLT(s), {:.0} s per run, {} trial(s).",
                s.tables,
                s.rows,
                s.llts,
                s.duration.as_secs_f64(),
                s.trials
            ),
            own: Vec::new(),
        })
    }
}

/// The mean throughput of the seconds the LLT threads were open in (a
/// baseline's: its readers were running), less each window's first (they
/// were just opening); all of them when a run is too short for that; none
/// when no second was sampled with them open (a run of a second or two).
fn while_open(samples: &[Sample]) -> Option<f64> {
    let open: Vec<f64> = (samples.iter())
        .filter(|x| x.llts_open > 0)
        .map(|x| x.committed_per_s)
        .collect();
    let settled = if open.len() > 1 { &open[1..] } else { &open };
    (!settled.is_empty()).then(|| settled.iter().sum::<f64>() / settled.len() as f64)
}

fn run(fig: Fig, a: &ReproduceArgs, s: &Scale, m: &mut Measured) -> Result<Vec<PathBuf>, String> {
    let name = match fig {
        Fig::Cores => "vdriver-fig17",
        Fig::RecordSize => "vdriver-fig18",
    };
    let per_trial = fig.runs(s, 1).len();
    let total = per_trial * s.trials;
    let mut rows = Vec::new();
    let mut step = 0;
    'all: for trial in 1..=s.trials {
        for (x, e, cfg) in fig.runs(s, trial) {
            if strata_workloads::driver::interrupted() {
                break 'all; // Ctrl-C: write what ran
            }
            step += 1;
            let label = format!(
                "{}, {} update thread(s), {} B records",
                e.label, cfg.threads, cfg.row_bytes
            );
            let r = run_one(&label, &(e.options)(), &cfg, s.pace, step, total)?;
            let series = if cfg.long_snapshots { e.llts } else { e.no_llt };
            // NaN keeps the trials aligned; no claim reads it as a number.
            let tput = while_open(&r.samples).unwrap_or(f64::NAN);
            m.push(series, x, vec![(OPEN, tput)]);
            if let Fig::RecordSize = fig {
                let line = over_time(e, cfg.row_bytes);
                for p in &r.samples {
                    m.push_sample(
                        &line,
                        trial,
                        p.t_s,
                        vec![(Metric::Throughput, p.committed_per_s)],
                    );
                }
            }
            rows.extend((r.samples.iter()).map(|p| TimeRow::of((trial, series, e.label), &cfg, p)));
        }
    }
    let csv = a.out.join(format!("{name}.csv"));
    write_csv(&csv, &rows)?;
    let png = a.out.join(format!("{name}.png"));
    match fig {
        Fig::Cores => {
            let labels: Vec<&str> = (FIG17_ENGINES.iter())
                .flat_map(|e| [e.llts, e.no_llt])
                .collect();
            let lines: Vec<Line> = (labels.iter())
                .map(|&l| Line {
                    label: l.to_string(),
                    points: (m.line(l, OPEN).into_iter())
                        .filter(|p| p.1.is_finite())
                        .collect(),
                })
                .collect();
            let xs: Vec<f64> = threads(s.paper).iter().map(|&n| n as f64).collect();
            line_chart_ticks(
                &png,
                "Throughput while the LLTs are open (vDriver Fig. 17; Zipfian 0.99; mean of trials)",
                "update threads (the paper: cores)",
                "committed transactions/s",
                &lines,
                XTicks::Values(&xs),
            )?;
        }
        Fig::RecordSize => {
            let lines: Vec<Line> = (FIG18_ENGINES.iter())
                .flat_map(|e| ROW_BYTES.map(|b| over_time(e, b)))
                .map(|l| Line {
                    points: m.line(&l, Metric::Throughput),
                    label: l,
                })
                .collect();
            line_chart(
                &png,
                "Throughput with an LLT, 128 and 1024-byte records (vDriver Fig. 18; mean of trials)",
                "time (s)",
                "committed transactions/s",
                &lines,
            )?;
        }
    }
    Ok(vec![csv, png])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(t_s: f64, committed_per_s: f64, llts_open: usize) -> Sample {
        Sample::throughput_only(t_s, committed_per_s, llts_open)
    }

    /// The seconds with the LLTs open, less the first; the one there is
    /// when there is one; none when none was open (not a zero, which a
    /// ratio would read as a collapse).
    /// Figs. 17 and 18 judge throughput alone: no run of theirs walks the
    /// chains each second (the walk would slow the updaters it measures).
    #[test]
    fn throughput_figures_do_not_walk_the_chains() {
        for fig in [Fig::Cores, Fig::RecordSize] {
            let Ok(s) = scale(fig, &ReproduceArgs::for_scale(false)) else {
                panic!("the quick scale is valid")
            };
            let runs = fig.runs(&s, 1);
            assert!(!runs.is_empty());
            assert!(runs.iter().all(|(_, _, cfg)| !cfg.walk_space));
        }
    }

    #[test]
    fn while_open_reads_the_seconds_the_llts_were_open() {
        let run = [
            second(1.0, 900.0, 0),
            second(2.0, 500.0, 1),
            second(3.0, 100.0, 1),
            second(4.0, 300.0, 1),
            second(5.0, 900.0, 0),
        ];
        assert_eq!(while_open(&run), Some(200.0));
        assert_eq!(while_open(&run[..2]), Some(500.0));
        assert_eq!(while_open(&[second(1.0, 900.0, 0)]), None);
    }
}
