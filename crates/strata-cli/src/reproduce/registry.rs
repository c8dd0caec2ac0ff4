//! The one registry of figures: every figure `strata reproduce` reruns, of
//! all four papers, as one [`Figure`] entry in its paper's module.
//!
//! ```text
//!   Figure { name, paper, label, caption,      what `--list` shows
//!            config,                           how it runs: a Sweep (data)
//!                                              or the paper module's own Setup
//!            claims }                          the paper's findings, judged
//!                                              after the run (findings.rs)
//!   registry::figures() = wu ++ vdriver ++ ermia ++ ermia_hybrid ++ mvpbt
//! ```
//!
//! The invariant this module owns: `reproduce` (`mod.rs`) reaches a figure
//! only through this registry, so it knows no paper; a paper's module
//! knows only its own figures. A new figure is one entry in its paper's
//! `FIGURES`.

use crate::UsageError;

use super::findings::Finding;
use super::sweep::Sweep;
use super::{FigureError, Outcome, ReproduceArgs};

/// The four papers reproduced here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paper {
    /// Wu, Arulraj, Lin, Xian, Pavlo: An Empirical Evaluation of In-Memory
    /// Multi-Version Concurrency Control (VLDB 2017), run on Peloton.
    Wu,
    /// Kim et al.: Long-lived Transactions Made Less Harmful (SIGMOD 2020).
    VDriver,
    /// Kim, Wang, Johnson, Pandis: ERMIA (SIGMOD 2016).
    Ermia,
    /// Riegger, Vinçon, Gottstein, Petrov: MV-PBT.
    MvPbt,
}

impl Paper {
    /// How `--list` and the report prefix a figure label of the paper
    /// (the study's figures go bare, as they always have).
    pub fn prefix(self) -> &'static str {
        match self {
            Paper::Wu => "",
            Paper::VDriver => "vDriver ",
            Paper::Ermia => "ERMIA ",
            Paper::MvPbt => "MV-PBT ",
        }
    }
}

/// How a figure runs.
pub enum Config {
    /// One parameter swept over series of settings (the study's shape;
    /// `sweep.rs` runs it).
    Sweep(Sweep),
    /// A runner of the paper's module (time series, CDFs, index scans).
    Own(&'static dyn Setup),
}

/// A figure's way to run: checked first, then run.
pub trait Setup: Sync {
    /// Checks the arguments and sizes against this figure before anything
    /// runs (`reproduce all` prepares every figure first).
    fn prepare(
        &self,
        fig: &'static Figure,
        a: &ReproduceArgs,
    ) -> Result<Box<dyn Prepared>, UsageError>;

    /// "ready", "partial: ...", or "needs ..." (what `--list` shows).
    fn status(&self, _fig: &Figure) -> String {
        "ready".into()
    }
}

/// A figure checked and sized, ready to run.
pub trait Prepared {
    /// Runs every series and trial, writes the figure's CSV and plots into
    /// `--out`, and returns what it measured for the claims.
    fn run(&self, a: &ReproduceArgs) -> Result<Outcome, FigureError>;
}

/// One figure of a paper.
pub struct Figure {
    /// `strata reproduce <name>`.
    pub name: &'static str,
    pub paper: Paper,
    /// Where it is in the paper: "Fig. 6a", "Fig. 5, Table 1".
    pub label: &'static str,
    /// What it shows, in the paper caption's words.
    pub caption: &'static str,
    pub config: Config,
    /// What the paper says about it, each judged after a run.
    pub claims: &'static [Finding],
    /// How the quick run departs from the paper's, beyond its size.
    pub note: Option<&'static str>,
}

impl Figure {
    /// The paper's label with the paper named: "vDriver Fig. 13".
    pub fn reference(&self) -> String {
        format!("{}{}", self.paper.prefix(), self.label)
    }

    pub fn setup(&self) -> &dyn Setup {
        match &self.config {
            Config::Sweep(s) => s,
            Config::Own(s) => *s,
        }
    }

    pub fn status(&self) -> String {
        self.setup().status(self)
    }

    /// The sweep, for a figure that is one.
    pub fn sweep(&self) -> Option<&Sweep> {
        match &self.config {
            Config::Sweep(s) => Some(s),
            Config::Own(_) => None,
        }
    }
}

/// Every figure, paper by paper, each in its paper's order.
pub fn figures() -> impl Iterator<Item = &'static Figure> {
    (super::wu::FIGURES.iter())
        .chain(super::vdriver::FIGURES)
        .chain(super::ermia::FIGURES)
        .chain(super::ermia_hybrid::FIGURES)
        .chain(super::mvpbt::FIGURES)
}

/// The figure named `name`.
pub fn find(name: &str) -> Option<&'static Figure> {
    figures().find(|f| f.name == name)
}
