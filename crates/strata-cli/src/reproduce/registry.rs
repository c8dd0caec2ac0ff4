//! The one registry of figures: every figure `strata reproduce` reruns, of
//! all four papers, as one [`Figure`] entry in its paper's module.
//!
//! ```text
//!   Figure { name, paper, label, caption,      what `--list` shows
//!            config,                           how it runs: a Sweep (data)
//!                                              or the paper module's own Setup
//!            claims }                          the paper's findings, judged
//!                                              after the run (findings.rs)
//!   registry::figures() = wu ++ vdriver ++ ermia (ermia, ermia_hybrid,
//!                         ermia_scaling) ++ mvpbt
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
    pub const ALL: [Paper; 4] = [Paper::Wu, Paper::VDriver, Paper::Ermia, Paper::MvPbt];

    /// The paper in words (the report's headings).
    pub fn title(self) -> &'static str {
        match self {
            Paper::Wu => "The MVCC study (Wu et al., VLDB 2017, on Peloton)",
            Paper::VDriver => "vDriver (Kim et al., SIGMOD 2020)",
            Paper::Ermia => "ERMIA (Kim et al., SIGMOD 2016)",
            Paper::MvPbt => "MV-PBT (Riegger et al.)",
        }
    }

    /// The name `reproduce all --paper` takes.
    pub fn name(self) -> &'static str {
        match self {
            Paper::Wu => "wu",
            Paper::VDriver => "vdriver",
            Paper::Ermia => "ermia",
            Paper::MvPbt => "mvpbt",
        }
    }

    /// The paper's figures no entry reruns, and why (`--list` says so).
    pub fn out_of_scope(self) -> Option<&'static str> {
        match self {
            Paper::Ermia => Some(
                "TPC-E and TPC-E-hybrid (Fig. 6, Fig. 7 right, Fig. 9, Table 1's TPC-E row): \
                 out of scope, Strata has no TPC-E workload",
            ),
            Paper::Wu | Paper::VDriver | Paper::MvPbt => None,
        }
    }

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

    /// The series labels a run measures: the names its claims may read.
    fn series(&self, fig: &Figure) -> Vec<String>;

    /// The x values a run at this scale measures (`None`: the axis is time
    /// or the machine's, so a claim reads no fixed x of it).
    fn xs(&self, fig: &Figure, paper_scale: bool) -> Option<Vec<f64>>;

    /// What a run with these arguments sets up, for the [`Effect`]s it
    /// needs.
    fn facts(&self, fig: &Figure, a: &ReproduceArgs) -> Facts;
}

/// What a figure's runs set up at one scale, as far as its effect goes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Facts {
    /// Worker (writer) threads, the most at any point.
    pub threads: usize,
    /// TPC-C: warehouses and worker threads at the sweep's last point (0
    /// warehouses: not TPC-C).
    pub warehouses: u32,
    pub threads_at_last: usize,
    /// The largest Zipfian skew a run has.
    pub theta: f64,
    /// The largest share of a run's operations (or rows read) that
    /// update.
    pub update_share: f64,
    /// Whether a run holds a long-lived snapshot while others update.
    pub long_lived: bool,
    /// The longest version chain a run builds on purpose.
    pub versions: u64,
    /// The fewest MV-PBT partitions a run fills.
    pub partitions: f64,
}

/// The effect a figure studies, which its quick scale must keep (a run
/// too small to show it would judge the paper's claims on nothing).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Effect {
    /// TPC-C contention: terminals share warehouses (fewer warehouses
    /// than threads) at the quick scale exactly when they do at the
    /// paper's, or each has its own at both (the paper's ratio).
    PaperWarehouseRatio,
    /// Contention on hot rows: a Zipfian skew of at least this, with two
    /// or more writers.
    Skew(f64),
    /// Two or more worker threads at some point.
    Concurrency,
    /// Updates, at least the paper's share of the operations.
    Updates,
    /// A long-lived snapshot open while updates run.
    LongLived,
    /// Version chains of at least this many versions.
    Versions(u64),
    /// At least this many MV-PBT partitions filled.
    Partitions(f64),
}

impl Effect {
    /// Whether the quick scale's facts keep the effect the paper's have.
    pub fn holds(self, quick: &Facts, paper: &Facts) -> Result<(), String> {
        let ok = match self {
            Effect::PaperWarehouseRatio => {
                let shares =
                    |f: &Facts| f.warehouses > 0 && (f.warehouses as usize) < f.threads_at_last;
                quick.warehouses > 0 && shares(quick) == shares(paper)
            }
            Effect::Skew(t) => quick.theta >= t && quick.threads >= 2,
            Effect::Concurrency => quick.threads >= 2,
            Effect::Updates => quick.update_share > 0.0 && quick.update_share >= paper.update_share,
            Effect::LongLived => quick.long_lived && quick.update_share > 0.0,
            Effect::Versions(n) => quick.versions >= n,
            Effect::Partitions(n) => quick.partitions >= n,
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "{self:?} lost at the quick scale: {quick:?} (the paper's: {paper:?})"
            ))
        }
    }
}

/// A figure checked and sized, ready to run.
pub trait Prepared {
    /// About how many seconds the run takes (points x trials x their
    /// time, with a load each), for `reproduce all` to say up front.
    fn estimate_s(&self) -> f64;

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
    /// The effects the figure studies: its quick scale keeps each.
    pub effects: &'static [Effect],
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
    (super::wu::figures())
        .chain(super::vdriver::figures())
        .chain(super::ermia::FIGURES)
        .chain(super::ermia_hybrid::HYBRID)
        .chain(super::ermia_scaling::FIGURES)
        .chain(super::ermia_hybrid::LATENCY)
        .chain(super::mvpbt::figures())
}

/// The figure named `name`.
pub fn find(name: &str) -> Option<&'static Figure> {
    figures().find(|f| f.name == name)
}
