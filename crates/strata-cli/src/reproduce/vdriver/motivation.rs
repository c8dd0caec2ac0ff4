//! vDriver §2.1, Figures 2 and 3: what one long-lived transaction does to
//! the two versioning designs of full-fledged engines. In-row versioning
//! (PostgreSQL: every version a tuple in the heap, chained oldest to
//! newest) lets old versions pile up beside the record; off-row versioning
//! (MySQL/InnoDB: the record in place, its old images in undo space,
//! newest first) keeps the record's page intact and grows the undo space
//! instead. Either way the LLT pins every version since its snapshot, the
//! chains grow, and the paper measured throughput collapsing (Fig. 3).
//!
//! ```text
//!   per trial, for PostgreSQL (O2N, VAC: in-row) and MySQL (delta undo:
//!   off-row), with the LLT and without it (its thread then reads in short
//!   transactions, so both runs share the cores alike):
//!     one run, uniform keys, the LLT open from 20% of the run to its end
//!     -> every second: commits/s, in-row and off-row version bytes,
//!        the longest chain
//! ```
//!
//! In-row bytes are the table's own storage (`Stats::main_table_bytes`),
//! off-row bytes the version store's (`Stats::version_store_bytes`): the
//! two places Figure 2 draws. The paper's profile of why PostgreSQL slows
//! (index modifications, page splits) and MySQL slows (page latches held
//! while searching undo) has no counterpart here: Strata has neither
//! pages nor page latches, so only the chains and where their bytes go are
//! measured, and the claims about them judged.

use std::path::PathBuf;

use strata_workloads::llt::LltConfig;

use super::super::findings::{At, Check, Expect, Finding, Measured, Metric};
use super::super::registry::{Config, Effect, Facts, Figure, Paper, Prepared, Setup};
use super::super::{FigureError, Outcome, ReproduceArgs};
use super::{
    at, base_config, facts_of, scale_for, time_series, write_csv, Engine, Scale, IN_ROW_MIB,
    LONGEST, MYSQL, OFF_ROW_MIB, POSTGRES,
};
use crate::plot::{line_chart, Line};
use crate::UsageError;

const FIG_2: &str = "§2.1, Fig. 2";
const FIG_3: &str = "§2.1, Fig. 3";
const COMMON: &str = "Common to both engines is the behavior that as a version chain gets long, transaction throughput is sharply collapsing";

/// The two designs of §2.1.
const ENGINES: [&Engine; 2] = [&POSTGRES, &MYSQL];

/// The engine's throughput with the LLT over without, over the second
/// half of the run (the LLT open since 20% of it).
const fn collapses(claim: &'static str, source: &'static str, e: &Engine) -> Finding {
    Finding {
        claim,
        source,
        check: Check::Ratio {
            metric: Metric::Throughput,
            a: e.llts,
            b: e.no_llt,
            at: At::MeanFrom(0.5),
        },
        expect: Expect::Below1,
    }
}

/// One of the engine's measurements with the LLT over without, at its
/// largest.
const fn with_over_without(
    claim: &'static str,
    source: &'static str,
    metric: Metric,
    e: &Engine,
    expect: Expect,
) -> Finding {
    Finding {
        claim,
        source,
        check: Check::Ratio {
            metric,
            a: e.llts,
            b: e.no_llt,
            at: At::Max,
        },
        expect,
    }
}

pub const FIGURES: &[Figure] = &[Figure {
    name: "vdriver-fig3",
    paper: Paper::VDriver,
    label: "Fig. 2, 3",
    caption: "One long-lived transaction under in-row (PostgreSQL) and off-row (MySQL) versioning: throughput and version space over time",
    config: Config::Own(&Fig3),
    claims: &[
        collapses(
            "PostgreSQL suffers throughput collapse as a long transaction remains alive",
            "§2.1, Fig. 3a",
            &POSTGRES,
        ),
        collapses(
            "As an LLT starts, MySQL also sharply degrades its throughput",
            "§2.1, Fig. 3b",
            &MYSQL,
        ),
        with_over_without(COMMON, FIG_3, LONGEST, &POSTGRES, Expect::Above1),
        with_over_without(COMMON, FIG_3, LONGEST, &MYSQL, Expect::Above1),
        with_over_without(
            "PostgreSQL-12.0, which uses in-row versioning, stores versions in heap pages ... a heap page can be overflowed with old versions",
            FIG_2,
            IN_ROW_MIB,
            &POSTGRES,
            Expect::Above1,
        ),
        with_over_without(
            "off-row versioning makes index structures intact, regardless of a massive influx of versions",
            FIG_2,
            IN_ROW_MIB,
            &MYSQL,
            Expect::About(1.25),
        ),
        with_over_without(
            "MySQL-8.0 with the InnoDB storage engine uses undo space for this purpose",
            FIG_2,
            OFF_ROW_MIB,
            &MYSQL,
            Expect::Above1,
        ),
    ],
    effects: &[Effect::LongLived],
    note: Some("one LLT from 20% of the run to its end, uniform keys (the paper states neither for Fig. 3); its causes (PostgreSQL's index modifications and page splits, MySQL's page latches) are not modelled: Strata has no pages, so only the chains and where their bytes go are judged"),
}];

/// Figures 2 and 3's setup.
struct Fig3;

/// The run of a trial: one LLT, from 20% of the run to its end, keys
/// uniform throughout.
fn config(s: &Scale, trial: usize) -> LltConfig {
    let d = s.duration;
    LltConfig {
        llts: 1,
        zipf_at: None,
        llt_windows: vec![(at(d, 0.2), d)],
        ..base_config(s, trial)
    }
}

/// 12 s a run (8 s under `reproduce all`), 600 s at the paper's scale
/// (§5.2.1's); at least 2 s, one sample with the LLT open.
fn scale(a: &ReproduceArgs) -> Result<Scale, UsageError> {
    let default = match (a.paper_scale, a.all()) {
        (true, _) => 600.0,
        (false, false) => 12.0,
        (false, true) => 8.0,
    };
    scale_for(a, default, 2.0)
}

impl Setup for Fig3 {
    fn series(&self, _fig: &Figure) -> Vec<String> {
        (ENGINES.iter())
            .flat_map(|e| [e.llts, e.no_llt])
            .map(String::from)
            .collect()
    }

    fn xs(&self, _fig: &Figure, _paper_scale: bool) -> Option<Vec<f64>> {
        None
    }

    fn facts(&self, _fig: &Figure, a: &ReproduceArgs) -> Facts {
        scale(a).map_or(Facts::default(), |s| facts_of(&[config(&s, 1)]))
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
        (ENGINES.len() * 2 * s.trials) as f64 * (s.duration.as_secs_f64() + 0.5)
    }

    fn run(&self, a: &ReproduceArgs) -> Result<Outcome, FigureError> {
        let s = &self.0;
        let mut m = Measured::default();
        let files = fig3(a, s, &mut m).map_err(FigureError::Failed)?;
        let mut files = files.into_iter();
        Ok(Outcome {
            files: files.next().into_iter().collect(),
            pngs: files.collect(),
            measured: m,
            ran: format!(
                "Ran {} tables of {} rows, {} update thread(s), one LLT from 20% of each {:.0} s run to its end, {} trial(s).",
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

fn fig3(a: &ReproduceArgs, s: &Scale, m: &mut Measured) -> Result<Vec<PathBuf>, String> {
    let total = ENGINES.len() * 2 * s.trials;
    let mut rows = Vec::new();
    let mut step = 0;
    'all: for trial in 1..=s.trials {
        let with = config(s, trial);
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
    let csv = a.out.join("vdriver-fig3.csv");
    write_csv(&csv, &rows)?;
    let mut files = vec![csv];
    let labels: Vec<&str> = ENGINES.iter().flat_map(|e| [e.llts, e.no_llt]).collect();
    let lines = |metric: Metric, f: fn(f64) -> f64| -> Vec<Line> {
        (labels.iter())
            .map(|&l| Line {
                label: l.to_string(),
                points: (m.line(l, metric).into_iter())
                    .map(|(x, y)| (x, f(y)))
                    .collect(),
            })
            .collect()
    };
    for (file, title, y, lines) in [
        (
            "vdriver-fig3.png",
            "Throughput",
            "committed transactions/s",
            lines(Metric::Throughput, |y| y),
        ),
        (
            "vdriver-fig3-in-row.png",
            "In-row version space (Fig. 2)",
            "in-row version bytes (MiB)",
            lines(IN_ROW_MIB, |y| y),
        ),
        (
            "vdriver-fig3-off-row.png",
            "Off-row version space (Fig. 2)",
            "off-row version bytes (MiB)",
            lines(OFF_ROW_MIB, |y| y),
        ),
        (
            "vdriver-fig3-chain.png",
            "Longest chain",
            "log10(longest chain)",
            lines(LONGEST, |y| y.max(1.0).log10()),
        ),
    ] {
        let path = a.out.join(file);
        line_chart(
            &path,
            &format!("{title} (vDriver Fig. 3; LLT from 20% on; mean of trials)"),
            "time (s)",
            y,
            &lines,
        )?;
        files.push(path);
    }
    Ok(files)
}
