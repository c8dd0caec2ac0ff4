//! `strata reproduce <figure>`: rerun a figure of one of the four papers
//! (the MVCC study, vDriver, ERMIA, MV-PBT) and judge the paper's claims
//! about it on the run's own numbers.
//!
//! ```text
//!   registry::find(name) ──> Figure { config, claims }
//!        config.prepare(args)        sizes and settings checked first
//!        prepared.run(args)  ──> <out>/<figure>.csv, PNGs, measured points
//!        findings::line(claim, measured) per claim
//!   ──> <out>/<figure>.md: what ran, the plots, each claim with the
//!       paper's number, ours and a verdict
//! ```
//!
//! This module knows no paper: every figure comes from the registry
//! (`registry.rs`), each paper's figures from its own module (`wu.rs`,
//! `vdriver.rs`, `ermia.rs`, `ermia_hybrid.rs`, `mvpbt.rs`), and a figure
//! that sweeps one parameter runs through `sweep.rs`. Every point runs
//! `--trials` times (3 by default) and every claim is judged on each
//! trial (`findings.rs`). `strata reproduce all` runs every figure of the
//! four papers at the quick scale (`--paper` for one paper's) and writes
//! `report.md` with the plots and the verdicts.

mod ermia;
mod ermia_hybrid;
mod ermia_scaling;
pub mod findings;
mod mvpbt;
pub mod registry;
mod sweep;
mod vdriver;
mod wu;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::UsageError;
use findings::{Judged, Measured, Verdict};
use registry::{Figure, Paper, Prepared};

#[derive(Args, Debug, Clone)]
#[command(allow_negative_numbers = true)]
pub struct ReproduceArgs {
    /// The figure to reproduce (see --list), or `all` for every figure of
    /// the four papers (the Peloton study, vDriver, ERMIA, MV-PBT) at the
    /// quick scale, with a report.
    #[arg(required_unless_present_any = ["list", "claims"])]
    pub figure: Option<String>,
    /// List the figures and whether each can run today.
    #[arg(long)]
    pub list: bool,
    /// Print every figure's claims, as the paper words them and as each is
    /// judged, as a Markdown table (docs/REPRODUCTION.md carries it).
    #[arg(long)]
    pub claims: bool,
    /// The paper's sizes (10M records, 40 threads, its full sweep, five
    /// trials) instead of sizes scaled to a 2-core machine.
    #[arg(long)]
    pub paper_scale: bool,
    /// Directory for <figure>.csv, its PNGs and <figure>.md.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Measured seconds per point (default 2, 1 for `all`, or 10 with
    /// --paper-scale; time-axis figures: 8, or 120); the LLT figures'
    /// run length (default 10-30 s, 6-12 s for `all`).
    #[arg(long, value_parser = crate::parse_seconds)]
    pub duration: Option<f64>,
    /// Warm-up seconds per point (default: a quarter of the duration, at most 1).
    #[arg(long, value_parser = crate::parse_seconds)]
    pub warmup: Option<f64>,
    /// Rows loaded per point (overrides the scale's default).
    #[arg(long)]
    pub records: Option<u64>,
    /// Worker threads of every point, for figures whose swept parameter is
    /// not the thread count (default: the workload's, 2; the paper's 40
    /// with --paper-scale).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Runs per point (default 3, or the paper's 5 with --paper-scale):
    /// plots draw their mean, and each claim is judged on every trial (a
    /// claim whose trials disagree is "undecided").
    #[arg(long)]
    pub trials: Option<usize>,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// With `all`: only this paper's figures (wu, vdriver, ermia, mvpbt).
    #[arg(long)]
    pub paper: Option<String>,
    /// For tests: the vDriver figures count time in update transactions,
    /// this many a second, so that their samples, GC passes and LLT
    /// windows fall at the same points whatever the machine's speed
    /// (`strata_workloads::llt::Pace::Updates`); throughput is then
    /// commits per such second.
    #[arg(long, hide = true)]
    pub paced: Option<u64>,
}

impl ReproduceArgs {
    /// Whether this is `reproduce all` (whose figures run shorter points).
    pub fn all(&self) -> bool {
        self.figure.as_deref() == Some("all")
    }

    /// The arguments of a plain run at one scale (no flag but
    /// `--paper-scale`): what a figure's defaults are measured against.
    pub fn for_scale(paper_scale: bool) -> Self {
        ReproduceArgs {
            figure: None,
            list: false,
            claims: false,
            paper_scale,
            out: PathBuf::from("results"),
            duration: None,
            warmup: None,
            records: None,
            threads: None,
            trials: None,
            seed: 1,
            paper: None,
            paced: None,
        }
    }

    /// Trials per point: `--trials`, else 3 (the quick scale) or 5 (the
    /// paper's, §7).
    pub fn trials(&self) -> Result<usize, UsageError> {
        let trials = self.trials.unwrap_or(if self.paper_scale { 5 } else { 3 });
        if (1..=100).contains(&trials) {
            Ok(trials)
        } else {
            Err(UsageError(format!(
                "--trials must be in 1..=100, got {trials}"
            )))
        }
    }

    /// Measured and warm-up time of a point: `--duration` / `--warmup`,
    /// else `quick` seconds and 0.25 s (30 s and 1 s with --paper-scale).
    pub fn point_times(
        &self,
        quick: f64,
    ) -> Result<(std::time::Duration, std::time::Duration), UsageError> {
        let paper = self.paper_scale;
        Ok((
            crate::seconds(
                "duration",
                self.duration.unwrap_or(if paper { 30.0 } else { quick }),
            )?,
            crate::seconds(
                "warmup",
                self.warmup.unwrap_or(if paper { 1.0 } else { 0.25 }),
            )?,
        ))
    }
}

/// Why a figure's run stopped.
pub enum FigureError {
    /// A setting the run refused (exit code 2).
    Usage(UsageError),
    Failed(String),
}

impl From<UsageError> for FigureError {
    fn from(e: UsageError) -> Self {
        FigureError::Usage(e)
    }
}

/// What a figure's run wrote and measured.
pub struct Outcome {
    /// The CSV(s), first the figure's own `<name>.csv`.
    pub files: Vec<PathBuf>,
    pub pngs: Vec<PathBuf>,
    /// The points the claims are judged on.
    pub measured: Measured,
    /// What ran (sizes, times, trials), one sentence for the report.
    pub ran: String,
    /// Measurements a figure reports beside its claims, not judged (what
    /// the paper compares with something not run here).
    pub own: Vec<String>,
}

/// A figure's run, judged: its outcome, its claims judged, and the
/// effects its settings lose.
struct Judgement {
    out: Outcome,
    judged: Vec<Judged>,
    lines: Vec<String>,
}

/// Why a claim is not measured, when its figure's setup can say: a series
/// the run does not have, or an x value this scale does not run.
fn not_measured_why(fig: &Figure, a: &ReproduceArgs, j: &Judged) -> Option<String> {
    if j.verdict != Verdict::NotMeasured {
        return None;
    }
    let setup = fig.setup();
    let series = setup.series(fig);
    if let Some(s) = (j.finding.check.series().into_iter()).find(|s| !series.iter().any(|l| l == s))
    {
        return Some(format!("the run has no series {s:?}"));
    }
    let x = j.finding.check.x()?;
    let xs = setup.xs(fig, a.paper_scale)?;
    (!xs.iter().any(|v| (v - x).abs() < 1e-9))
        .then(|| format!("x = {x} is not run at this scale (it runs {xs:?})"))
}

/// One figure's claims, judged over the run's trials.
fn judge(fig: &Figure, a: &ReproduceArgs, mut out: Outcome) -> Judgement {
    if let (Paper::VDriver, Some(n)) = (fig.paper, a.paced) {
        out.ran += &format!(
            " Paced (a test mode): a second is {n} update transactions, and throughput counts commits per such second."
        );
    }
    let judged: Vec<Judged> = (fig.claims.iter())
        .map(|c| Judged::new(c, &out.measured))
        .collect();
    let lines = (judged.iter())
        .map(|j| match not_measured_why(fig, a, j) {
            Some(why) => format!("{} ({why})", j.line()),
            None => j.line(),
        })
        .chain(out.own.iter().cloned())
        .collect();
    Judgement { out, judged, lines }
}

/// The effects a figure studies that these settings lose (a `--records`
/// or `--threads` too small, say), each a sentence.
fn effects_lost(fig: &Figure, a: &ReproduceArgs) -> Vec<String> {
    let setup = fig.setup();
    let here = setup.facts(fig, a);
    let paper = setup.facts(fig, &ReproduceArgs::for_scale(true));
    (fig.effects.iter())
        .filter_map(|e| e.holds(&here, &paper).err())
        .collect()
}

/// Writes `<out>/<name>-claims.csv`: each claim's number in each trial,
/// and its median, spread and verdict.
fn write_claims(a: &ReproduceArgs, fig: &Figure, judged: &[Judged]) -> Result<PathBuf, String> {
    let path = a.out.join(format!("{}-claims.csv", fig.name));
    let err = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", path.display());
    let mut w = csv::Writer::from_path(&path).map_err(|e| err(&e))?;
    for row in judged.iter().flat_map(|j| j.rows(fig.name)) {
        w.serialize(row).map_err(|e| err(&e))?;
    }
    w.flush().map_err(|e| err(&e))?;
    Ok(path)
}

fn list() {
    for f in registry::figures() {
        println!(
            "{:<24} {:<22} {}  [{}]",
            f.name,
            f.reference(),
            f.caption,
            f.status()
        );
    }
    println!(
        "{:<24} {:<22} every figure above (of the four papers: the Peloton study, vDriver, ERMIA, MV-PBT), quick scale, with report.md",
        "all", ""
    );
    for p in Paper::ALL {
        if let Some(why) = p.out_of_scope() {
            println!("not reproduced: {} {why}", p.title());
        }
    }
}

/// Every figure's claims as a Markdown table: the paper's words and
/// where, the number each becomes, and what the paper says it is.
pub fn claims_markdown() -> String {
    let cell = |t: &str| t.replace('|', "\\|");
    let mut s = String::from(
        "| figure | where | the paper's claim | judged as | the paper's number |\n|---|---|---|---|---|\n",
    );
    for f in registry::figures() {
        for c in f.claims {
            s += &format!(
                "| `{}` | {}{} | \"{}\" | {} | {} |\n",
                f.name,
                f.paper.prefix(),
                cell(c.source),
                cell(c.claim),
                cell(&findings::check_text(&c.check)),
                cell(&findings::expect_text(c.expect)),
            );
        }
        if f.claims.is_empty() {
            s += &format!(
                "| `{}` | {} | (none judged: {}) | | |\n",
                f.name,
                f.reference(),
                cell(f.note.unwrap_or("the paper states none"))
            );
        }
    }
    s
}

/// Prepares a figure: its checks, and a warning per effect its settings
/// lose.
fn prepare(
    fig: &'static Figure,
    a: &ReproduceArgs,
) -> Result<(Box<dyn Prepared>, Vec<String>), UsageError> {
    let prepared = fig.setup().prepare(fig, a)?;
    let lost = effects_lost(fig, a);
    for l in &lost {
        eprintln!(
            "warning: {}: {l}; the claims are judged on a run that may not show it",
            fig.name
        );
    }
    Ok((prepared, lost))
}

pub fn run(a: &ReproduceArgs) -> Result<ExitCode, UsageError> {
    if a.list {
        list();
        return Ok(ExitCode::SUCCESS);
    }
    if a.claims {
        print!("{}", claims_markdown());
        return Ok(ExitCode::SUCCESS);
    }
    let name = a.figure.as_deref().unwrap_or_default();
    if name == "all" {
        return run_all(a);
    }
    if a.paper.is_some() {
        return Err(UsageError(
            "--paper chooses the figures of `reproduce all`; name a figure alone".into(),
        ));
    }
    let Some(fig) = registry::find(name) else {
        let names: Vec<&str> = (registry::figures().map(|f| f.name))
            .chain(["all"])
            .collect();
        return Err(UsageError(format!(
            "unknown figure {name:?}; expected one of {}",
            names.join(", ")
        )));
    };
    let (prepared, lost) = prepare(fig, a)?;
    crate::check_output_dir("out", &a.out)?;
    match prepared.run(a) {
        Ok(out) => {
            let j = judge(fig, a, out);
            for line in &j.lines {
                println!("finding: {line}");
            }
            let claims = match write_claims(a, fig, &j.judged) {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("error: {e}");
                    return Ok(ExitCode::FAILURE);
                }
            };
            let md = a.out.join(format!("{name}.md"));
            if let Err(e) = std::fs::write(&md, section(fig, &j, &lost)) {
                eprintln!("error: cannot write {}: {e}", md.display());
                return Ok(ExitCode::FAILURE);
            }
            let files: Vec<String> = (j.out.files.iter().chain(&j.out.pngs))
                .chain([&claims, &md])
                .map(|p| p.display().to_string())
                .collect();
            println!("wrote {}", files.join(", "));
            Ok(ExitCode::SUCCESS)
        }
        Err(FigureError::Usage(e)) => Err(e),
        Err(FigureError::Failed(e)) => {
            eprintln!("error: {name}: {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The papers `--paper` names (every one when it is not given).
fn papers(a: &ReproduceArgs) -> Result<Vec<Paper>, UsageError> {
    match a.paper.as_deref() {
        None => Ok(Paper::ALL.to_vec()),
        Some(name) => (Paper::ALL.into_iter())
            .find(|p| p.name() == name)
            .map(|p| vec![p])
            .ok_or_else(|| {
                let names: Vec<&str> = Paper::ALL.iter().map(|p| p.name()).collect();
                UsageError(format!(
                    "--paper {name:?}: expected one of {}",
                    names.join(", ")
                ))
            }),
    }
}

/// Every figure of the four papers (or of `--paper`'s) at the quick
/// scale, then `report.md`.
fn run_all(a: &ReproduceArgs) -> Result<ExitCode, UsageError> {
    if a.paper_scale {
        return Err(UsageError(
            "reproduce all runs the quick scale; run a figure by name with --paper-scale".into(),
        ));
    }
    let papers = papers(a)?;
    let (mut runnable, mut blocked) = (Vec::new(), Vec::new());
    for f in registry::figures().filter(|f| papers.contains(&f.paper)) {
        let status = f.status();
        if status.starts_with("needs") {
            blocked.push((f, status));
        } else {
            runnable.push(f);
        }
    }
    // Check every figure's plan before the first run.
    let mut plans = Vec::new();
    for f in runnable {
        let (p, lost) = prepare(f, a)?;
        plans.push((f, p, lost));
    }
    let estimate: f64 = plans.iter().map(|(_, p, _)| p.estimate_s()).sum();
    eprintln!(
        "reproduce all: {} figures, about {:.0} minutes",
        plans.len(),
        estimate / 60.0
    );
    crate::check_output_dir("out", &a.out)?;
    let started = std::time::Instant::now();
    let mut sections: Vec<(Paper, String)> = Vec::new();
    let mut summary = Vec::new();
    for (i, (f, plan, lost)) in plans.iter().enumerate() {
        eprintln!(
            "== [{}/{}] {} ({})",
            i + 1,
            plans.len(),
            f.name,
            f.reference()
        );
        match plan.run(a) {
            Ok(out) => {
                let j = judge(f, a, out);
                let counts: Vec<String> = (Verdict::ALL.iter())
                    .map(|v| {
                        j.judged
                            .iter()
                            .filter(|x| x.verdict == *v)
                            .count()
                            .to_string()
                    })
                    .collect();
                summary.push(format!(
                    "| {} | [{}](#{}) | {} |",
                    f.reference(),
                    f.name,
                    f.name,
                    counts.join(" | ")
                ));
                if let Err(e) = write_claims(a, f, &j.judged) {
                    eprintln!("error: {e}");
                }
                sections.push((f.paper, section(f, &j, lost)));
            }
            Err(FigureError::Usage(UsageError(e)) | FigureError::Failed(e)) => {
                summary.push(format!(
                    "| {} | {} | failed: {e} | | | | | |",
                    f.reference(),
                    f.name
                ));
            }
        }
        if strata_workloads::driver::interrupted() {
            break;
        }
    }
    for (f, status) in blocked {
        summary.push(format!(
            "| {} | {} | not run: {status} | | | | | |",
            f.reference(),
            f.name
        ));
    }
    let mut body = String::new();
    for p in &papers {
        let mine: Vec<&str> = (sections.iter())
            .filter(|(q, _)| q == p)
            .map(|(_, s)| s.as_str())
            .collect();
        if !mine.is_empty() {
            body += &format!("# {}\n\n{}", p.title(), mine.join("\n"));
        }
    }
    let report = format!(
        "# `strata reproduce all`\n\nEvery figure of {} at the quick scale, {:.0} minutes \
         (estimated {:.0}) on a machine with {} cores. Each claim is the paper's words \
         judged on its number in every trial of this run; a claim whose trials disagree \
         is undecided; see docs/REPRODUCTION.md for what each verdict means.\n\n\
         | paper | figure | agrees | in direction | exaggerates | differs | undecided | not measured |\n\
         |---|---|---|---|---|---|---|---|\n{}\n\n{body}",
        (papers.iter().map(|p| p.title()))
            .collect::<Vec<_>>()
            .join(", "),
        started.elapsed().as_secs_f64() / 60.0,
        estimate / 60.0,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        summary.join("\n"),
    );
    let path = a.out.join("report.md");
    if let Err(e) = std::fs::write(&path, report) {
        eprintln!("error: cannot write {}: {e}", path.display());
        return Ok(ExitCode::FAILURE);
    }
    println!("wrote {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// A figure's section of a report: what ran, the plots, the claims.
fn section(fig: &Figure, j: &Judgement, lost: &[String]) -> String {
    let mut s = format!(
        "## {}: {} (`{}`)\n\n{}",
        fig.reference(),
        fig.caption,
        fig.name,
        j.out.ran
    );
    if let Some(n) = fig.note {
        s += &format!(" Ours, not the paper's: {n}.");
    }
    for l in lost {
        s += &format!(" **Warning**: {l}.");
    }
    s += "\n\n";
    for png in &j.out.pngs {
        let file = png
            .file_name()
            .map_or(String::new(), |f| f.to_string_lossy().into_owned());
        s += &format!("![{file}]({file})\n");
    }
    s += "\n";
    if j.lines.is_empty() {
        s += "- The paper states no finding for this panel.\n";
    }
    for line in &j.lines {
        s += &format!("- {line}\n");
    }
    s + "\n"
}

#[cfg(test)]
mod tests;
