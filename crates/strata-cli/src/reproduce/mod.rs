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
//! that sweeps one parameter runs through `sweep.rs`. `strata reproduce
//! all` runs the study's figures at the quick scale and writes
//! `report.md` with the plots and the verdicts.

mod ermia;
mod ermia_hybrid;
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
use findings::{Measured, Verdict};
use registry::{Figure, Paper};

#[derive(Args, Debug, Clone)]
#[command(allow_negative_numbers = true)]
pub struct ReproduceArgs {
    /// The figure to reproduce (see --list), or `all` for every figure of
    /// the Peloton study at the quick scale, with a report.
    #[arg(required_unless_present = "list")]
    pub figure: Option<String>,
    /// List the figures and whether each can run today.
    #[arg(long)]
    pub list: bool,
    /// The paper's sizes (10M records, 40 threads, its full sweep, five
    /// trials) instead of sizes scaled to a 2-core machine.
    #[arg(long)]
    pub paper_scale: bool,
    /// Directory for <figure>.csv, its PNGs and <figure>.md.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Measured seconds per point (default 2, 1.5 for `all`, or 10 with
    /// --paper-scale; time-axis figures: 8, or 120).
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
    /// Runs per point, averaged (default 1, or the paper's 5 with
    /// --paper-scale).
    #[arg(long)]
    pub trials: Option<usize>,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl ReproduceArgs {
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
    /// Lines a figure judged itself (a number that is not a ratio).
    pub own: Vec<String>,
}

/// One figure's claims, judged: (verdict, line).
fn judge(fig: &Figure, out: &Outcome) -> Vec<(Verdict, String)> {
    fig.claims
        .iter()
        .map(|c| findings::line(c, &out.measured))
        .collect()
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
        "{:<24} {:<22} every figure of the Peloton study above, quick scale, with report.md",
        "all", ""
    );
}

pub fn run(a: &ReproduceArgs) -> Result<ExitCode, UsageError> {
    if a.list {
        list();
        return Ok(ExitCode::SUCCESS);
    }
    let name = a.figure.as_deref().unwrap_or_default();
    if name == "all" {
        return run_all(a);
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
    let prepared = fig.setup().prepare(fig, a)?;
    crate::check_output_dir("out", &a.out)?;
    match prepared.run(a) {
        Ok(out) => {
            let judged = judge(fig, &out);
            for line in judged.iter().map(|(_, l)| l).chain(&out.own) {
                println!("finding: {line}");
            }
            let md = a.out.join(format!("{name}.md"));
            if let Err(e) = std::fs::write(&md, section(fig, &out, &judged)) {
                eprintln!("error: cannot write {}: {e}", md.display());
                return Ok(ExitCode::FAILURE);
            }
            let files: Vec<String> = (out.files.iter().chain(&out.pngs))
                .chain([&md])
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

/// Every figure of the study at the quick scale, then `report.md`.
fn run_all(a: &ReproduceArgs) -> Result<ExitCode, UsageError> {
    if a.paper_scale {
        return Err(UsageError(
            "reproduce all runs the quick scale; run a figure by name with --paper-scale".into(),
        ));
    }
    let (mut runnable, mut blocked) = (Vec::new(), Vec::new());
    for f in registry::figures().filter(|f| f.paper == Paper::Wu) {
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
        plans.push((f, f.setup().prepare(f, a)?));
    }
    crate::check_output_dir("out", &a.out)?;
    let started = std::time::Instant::now();
    let mut sections = Vec::new();
    let mut summary = Vec::new();
    for (i, (f, plan)) in plans.iter().enumerate() {
        eprintln!("== [{}/{}] {} ({})", i + 1, plans.len(), f.name, f.label);
        match plan.run(a) {
            Ok(out) => {
                let judged = judge(f, &out);
                let count = |v: Verdict| judged.iter().filter(|(x, _)| *x == v).count();
                summary.push(format!(
                    "| {} | [{}](#{}) | {} | {} | {} | {} |",
                    f.reference(),
                    f.name,
                    f.name,
                    count(Verdict::Agrees),
                    count(Verdict::AgreesInDirection),
                    count(Verdict::Differs),
                    count(Verdict::NotMeasured),
                ));
                sections.push(section(f, &out, &judged));
            }
            Err(FigureError::Usage(UsageError(e)) | FigureError::Failed(e)) => {
                summary.push(format!(
                    "| {} | {} | failed: {e} | | | |",
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
            "| {} | {} | not run: {status} | | | |",
            f.reference(),
            f.name
        ));
    }
    let report = format!(
        "# `strata reproduce all`\n\nEvery figure of the MVCC study (Wu et al., VLDB 2017) at \
         the quick scale, {:.0} minutes on a machine with {} cores. Each finding is the \
         paper's claim as one number from this run; see docs/REPRODUCTION.md for what \
         each verdict means and why some differ.\n\n\
         | paper | figure | agrees | in direction | differs | not measured |\n\
         |---|---|---|---|---|---|\n{}\n\n{}",
        started.elapsed().as_secs_f64() / 60.0,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        summary.join("\n"),
        sections.join("\n")
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
fn section(fig: &Figure, out: &Outcome, judged: &[(Verdict, String)]) -> String {
    let mut s = format!(
        "## {}: {} (`{}`)\n\n{}",
        fig.reference(),
        fig.caption,
        fig.name,
        out.ran
    );
    if let Some(n) = fig.note {
        s += &format!(" Ours, not the paper's: {n}.");
    }
    s += "\n\n";
    for png in &out.pngs {
        let file = png
            .file_name()
            .map_or(String::new(), |f| f.to_string_lossy().into_owned());
        s += &format!("![{file}]({file})\n");
    }
    s += "\n";
    if judged.is_empty() && out.own.is_empty() {
        s += "- The paper states no finding for this panel.\n";
    }
    for line in judged.iter().map(|(_, l)| l).chain(&out.own) {
        s += &format!("- {line}\n");
    }
    s + "\n"
}

#[cfg(test)]
mod tests;
