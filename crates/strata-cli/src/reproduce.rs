//! `strata reproduce <figure>`: rerun a figure of the MVCC study (Wu et al.,
//! VLDB 2017, §7; the vDriver paper's LLT figures are in `reproduce_vdriver`,
//! ERMIA's Figure 1 in `reproduce_ermia`, its TPC-C-hybrid figures in
//! `reproduce_ermia_hybrid`), and check the paper's findings on it.
//!
//! ```text
//!   figure = sweep of one parameter (x)  ×  series (settings per line)
//!            over a base configuration, plotting one metric per panel (y)
//!
//!   for s in series: for x in xs: for trial: open a fresh database
//!                                  (s's options), load, run, record a row
//!   ──> <out>/<figure>.csv, one PNG per panel, <out>/<figure>.md
//!       (the paper's findings, each with our number and a verdict)
//! ```
//!
//! The registry is data: a figure names its workload, its axis, its x values
//! (scaled to a 2-core machine, and the paper's own with `--paper-scale`),
//! its series as lists of [`Set`]tings, its panels (metrics drawn from the
//! same runs), and the paper's [`Finding`]s about it. `--paper-scale` also
//! applies the figure's `paper_base` (the paper's 40 worker threads, its
//! warehouses and table widths) and runs five trials. A figure that needs
//! a measurement the engine does not take yet names it in `needs` and
//! refuses to run. `strata reproduce all` runs every figure of the study at
//! the quick scale and writes `report.md` with the plots and the verdicts.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use strata::{
    Database, GcPolicy, IndexPointers, MemorySpaces, NonInline, Options, Preset, Protocol,
    VersionStorage,
};
use strata_workloads::driver::{DriverConfig, TypeReport};
use strata_workloads::tpcc::{self, TpccConfig};
use strata_workloads::ycsb::{self, YcsbConfig, YcsbReport};
use strata_workloads::WorkloadError;

pub use crate::findings::Metric;
use crate::findings::{At, Check, Expect, Finding, Measured, Verdict};
use crate::plot::{line_chart_ticks, Line, XTicks};
use crate::progress::BarObserver;
use crate::UsageError;

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

/// One setting of a run: a field of `Options`, of the YCSB configuration,
/// or of TPC-C's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Set {
    Protocol(Protocol),
    VersionStorage(VersionStorage),
    Gc(GcPolicy),
    IndexPointers(IndexPointers),
    NonInline(NonInline),
    MemorySpaces(MemorySpaces),
    /// A whole configuration of `strata presets` (replaces the options).
    Preset(Preset),
    ReadRatio(f64),
    Theta(f64),
    Threads(usize),
    OpsPerTxn(usize),
    RoThreads(usize),
    RoOps(usize),
    RoHint(bool),
    /// Begin the mix's own transactions READ ONLY when it has no updates.
    MixHint(bool),
    TextAttrs(usize),
    ModifyAttrs(usize),
    /// Updates set a text attribute (Figure 11).
    UpdateText(bool),
    ReadAttrs(usize),
    Attributes(usize),
    SecondaryIndexes(usize),
    /// TPC-C warehouses; 0 is one per worker thread.
    Warehouses(u32),
    /// TPC-C: run StockScan on a thread of its own.
    StockScan(bool),
}

/// A run's whole configuration.
#[derive(Debug, Clone)]
pub struct Point {
    pub opts: Options,
    pub ycsb: YcsbConfig,
    /// TPC-C warehouses (0: one per thread).
    pub warehouses: u32,
    pub stock_scan: bool,
}

impl Set {
    fn apply(self, p: &mut Point) {
        let y = &mut p.ycsb;
        match self {
            Set::Protocol(v) => p.opts.protocol = v,
            Set::VersionStorage(v) => p.opts.version_storage = v,
            Set::Gc(v) => p.opts.gc = v,
            Set::IndexPointers(v) => p.opts.index_pointers = v,
            Set::NonInline(v) => p.opts.non_inline = v,
            Set::MemorySpaces(v) => p.opts.memory_spaces = v,
            Set::Preset(v) => p.opts = Options::preset(v),
            Set::ReadRatio(v) => y.read_ratio = v,
            Set::Theta(v) => y.theta = v,
            Set::Threads(v) => y.threads = v,
            Set::OpsPerTxn(v) => y.ops_per_txn = v,
            Set::RoThreads(v) => y.ro_threads = v,
            Set::RoOps(v) => y.ro_ops = v,
            Set::RoHint(v) => y.ro_hint = v,
            Set::MixHint(v) => y.read_only_hint = v,
            Set::TextAttrs(v) => y.text_attributes = v,
            Set::ModifyAttrs(v) => y.modify_attrs = v,
            Set::UpdateText(v) => y.update_text = v,
            Set::ReadAttrs(v) => y.read_attrs = v,
            Set::Attributes(v) => y.attributes = v,
            Set::SecondaryIndexes(v) => y.secondary_indexes = v,
            Set::Warehouses(v) => p.warehouses = v,
            Set::StockScan(v) => p.stock_scan = v,
        }
    }
}

/// The swept parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Axis {
    Threads,
    Theta,
    RoThreads,
    ModifyAttrs,
    ReadAttrs,
    TextAttrs,
    /// Percent of a transaction's operations that are updates.
    UpdatePercent,
    SecondaryIndexes,
    /// Separate memory spaces (512 KiB increments, the paper's).
    MemorySpaces,
    /// Seconds into one run: one point per second (x values unused).
    Time,
}

impl Axis {
    fn label(self) -> &'static str {
        match self {
            Axis::Threads => "worker threads",
            Axis::Theta => "Zipfian skew (theta)",
            Axis::RoThreads => "read-only threads",
            Axis::ModifyAttrs => "attributes modified per update",
            Axis::ReadAttrs => "attributes read per read",
            Axis::TextAttrs => "non-inline text attributes",
            Axis::UpdatePercent => "update operations per transaction (%)",
            Axis::SecondaryIndexes => "secondary indexes",
            Axis::MemorySpaces => "separate memory spaces",
            Axis::Time => "time (s)",
        }
    }
    fn name(self) -> &'static str {
        match self {
            Axis::Threads => "threads",
            Axis::Theta => "theta",
            Axis::RoThreads => "ro_threads",
            Axis::ModifyAttrs => "modify_attrs",
            Axis::ReadAttrs => "read_attrs",
            Axis::TextAttrs => "text_attributes",
            Axis::UpdatePercent => "update_percent",
            Axis::SecondaryIndexes => "secondary_indexes",
            Axis::MemorySpaces => "memory_spaces",
            Axis::Time => "seconds",
        }
    }
    /// The setting that puts a run at `x`; none for time, which a run
    /// sweeps by itself.
    fn set(self, x: f64) -> Option<Set> {
        let n = x.round().max(0.0) as usize;
        Some(match self {
            Axis::Threads => Set::Threads(n),
            Axis::Theta => Set::Theta(x),
            Axis::RoThreads => Set::RoThreads(n),
            Axis::ModifyAttrs => Set::ModifyAttrs(n),
            Axis::ReadAttrs => Set::ReadAttrs(n),
            Axis::TextAttrs => Set::TextAttrs(n),
            Axis::UpdatePercent => Set::ReadRatio(1.0 - x / 100.0),
            Axis::SecondaryIndexes => Set::SecondaryIndexes(n),
            Axis::MemorySpaces => Set::MemorySpaces(MemorySpaces::Spaces {
                count: n,
                increment: PAPER_SPACE_INCREMENT,
            }),
            Axis::Time => return None,
        })
    }
}

/// "The DBMS expands each memory space in 512 KB increments" (§7.3).
const PAPER_SPACE_INCREMENT: usize = 512 * 1024;

/// One line of a figure.
pub struct Series {
    pub label: &'static str,
    pub settings: &'static [Set],
}

/// The workload a figure runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    Ycsb,
    /// TPC-C (the standard mix); throughput counts the five transactions,
    /// not StockScan.
    Tpcc,
}

/// One figure (or one panel group) of the study.
pub struct Figure {
    pub name: &'static str,
    pub workload: Workload,
    pub title: &'static str,
    /// Where it is in the paper.
    pub paper: &'static str,
    pub axis: Axis,
    pub xs: &'static [f64],
    pub xs_paper: &'static [f64],
    /// Settings of every run, before the series' own.
    pub base: &'static [Set],
    /// Settings `--paper-scale` adds after `base` (threads, warehouses).
    pub paper_base: &'static [Set],
    pub series: &'static [Series],
    /// The first panel's y.
    pub metric: Metric,
    /// Further panels, drawn from the same runs.
    pub more: &'static [Metric],
    /// What the paper says about it.
    pub findings: &'static [Finding],
    /// How the quick run departs from the paper's, beyond its size.
    pub note: Option<&'static str>,
    /// A measurement the engine does not take yet.
    pub needs: Option<&'static str>,
}

/// The fields most figures share; each entry overrides what it needs.
const FIG: Figure = Figure {
    name: "",
    workload: Workload::Ycsb,
    title: "",
    paper: "",
    axis: Axis::Threads,
    xs: &[],
    xs_paper: &[],
    base: &[],
    paper_base: &[PAPER_THREADS],
    series: &[],
    metric: Metric::Throughput,
    more: &[],
    findings: &[],
    note: None,
    needs: None,
};

/// "We fix the number of DBMS threads to 40" (§7.2-§7.5).
const PAPER_THREADS: Set = Set::Threads(40);

macro_rules! per_protocol {
    ($($extra:expr),*) => {
        &[
            Series { label: "MVTO", settings: &[Set::Protocol(Protocol::Mvto) $(, $extra)*] },
            Series { label: "MVOCC", settings: &[Set::Protocol(Protocol::Mvocc) $(, $extra)*] },
            Series { label: "MV2PL", settings: &[Set::Protocol(Protocol::Mv2pl) $(, $extra)*] },
            Series { label: "SI", settings: &[Set::Protocol(Protocol::Si) $(, $extra)*] },
            Series { label: "SI+SSN", settings: &[Set::Protocol(Protocol::SiSsn) $(, $extra)*] },
            Series { label: "SI+SSI", settings: &[Set::Protocol(Protocol::SiSsi) $(, $extra)*] },
            Series { label: "OCC", settings: &[Set::Protocol(Protocol::Occ) $(, $extra)*] },
        ]
    };
}

/// The protocol of the paper's storage, GC and index experiments (§7.3-§7.5,
/// Figures 11-23): MVTO (§7.3's first paragraph).
const SECTION_7_3_TO_7_5: Set = Set::Protocol(Protocol::Mvto);

const READ_ONLY: Set = Set::ReadRatio(1.0);
const READ_INTENSIVE: Set = Set::ReadRatio(0.8);
const UPDATE_INTENSIVE: Set = Set::ReadRatio(0.2);
const LOW_CONTENTION: Set = Set::Theta(0.2);
const HIGH_CONTENTION: Set = Set::Theta(0.8);
const THETAS: &[f64] = &[0.0, 0.5, 0.7, 0.8, 0.9, 0.99];
const THREADS_QUICK: &[f64] = &[1.0, 2.0];
const THREADS_PAPER: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 32.0, 40.0];
/// Figures 14 and 15 fix the table at 100 attributes.
const ATTRS_100: &[f64] = &[1.0, 10.0, 25.0, 50.0, 100.0];

macro_rules! preset_series {
    ($($label:literal => $p:ident),* $(,)?) => {
        &[$(Series { label: $label, settings: &[Set::Preset(Preset::$p)] }),*]
    };
}

/// Table 1 of the study, plus ERMIA and vDriver (`strata presets` lists what
/// each maps to).
const PRESET_SERIES: &[Series] = preset_series![
    "Oracle" => Oracle,
    "Postgres" => Postgres,
    "MySQL" => MySql,
    "HYRISE" => Hyrise,
    "Hekaton" => Hekaton,
    "MemSQL" => MemSql,
    "HANA" => Hana,
    "NuoDB" => NuoDb,
    "HyPer" => HyPer,
    "ERMIA" => Ermia,
    "vDriver" => VDriver,
];

const N2O: Set = Set::VersionStorage(VersionStorage::AppendNewToOld);
const O2N: Set = Set::VersionStorage(VersionStorage::AppendOldToNew);

/// The three schemes of §7.3's comparisons, append-only as N2O.
const STORAGE_SERIES: &[Series] = &[
    Series {
        label: "append-only",
        settings: &[N2O],
    },
    Series {
        label: "time-travel",
        settings: &[Set::VersionStorage(VersionStorage::TimeTravel)],
    },
    Series {
        label: "delta",
        settings: &[Set::VersionStorage(VersionStorage::Delta)],
    },
];

/// "For all the version storage schemes, we have allocated multiple
/// separate memory spaces" (§7.3, Figures 13-15).
const SPACES: Set = Set::MemorySpaces(MemorySpaces::Spaces {
    count: 8,
    increment: PAPER_SPACE_INCREMENT,
});

const NON_INLINE_SERIES: &[Series] = &[
    Series {
        label: "shared (reference counted)",
        settings: &[],
    },
    Series {
        label: "copied in full",
        settings: &[Set::NonInline(NonInline::Copy)],
    },
];

const INDEX_SERIES: &[Series] = &[
    Series {
        label: "logical (tuple id)",
        settings: &[Set::IndexPointers(IndexPointers::LogicalTupleId)],
    },
    Series {
        label: "logical (primary key)",
        settings: &[Set::IndexPointers(IndexPointers::LogicalPrimaryKey)],
    },
    Series {
        label: "physical",
        settings: &[Set::IndexPointers(IndexPointers::Physical)],
    },
];

/// §7.4's tuple-level comparison (Figures 18-19): O2N, as COOP needs, one
/// GC thread, and a run with GC off.
const TUPLE_GC_SERIES: &[Series] = &[
    Series {
        label: "COOP",
        settings: &[Set::Gc(GcPolicy::Cooperative)],
    },
    Series {
        label: "VAC",
        settings: &[Set::Gc(GcPolicy::Vacuum)],
    },
    Series {
        label: "no GC",
        settings: &[Set::Gc(GcPolicy::None)],
    },
];

/// §7.4's tuple- against transaction-level comparison (Figures 20-21), N2O.
const TXN_GC_SERIES: &[Series] = &[
    Series {
        label: "transaction-level",
        settings: &[Set::Gc(GcPolicy::TransactionLevel)],
    },
    Series {
        label: "VAC",
        settings: &[Set::Gc(GcPolicy::Vacuum)],
    },
    Series {
        label: "no GC",
        settings: &[Set::Gc(GcPolicy::None)],
    },
];

const fn ratio(
    claim: &'static str,
    a: &'static str,
    b: &'static str,
    at: At,
    e: Expect,
) -> Finding {
    Finding {
        claim,
        check: Check::Ratio {
            metric: Metric::Throughput,
            a,
            b,
            at,
        },
        expect: e,
    }
}

const fn ratio_of(
    claim: &'static str,
    metric: Metric,
    a: &'static str,
    b: &'static str,
    at: At,
    e: Expect,
) -> Finding {
    Finding {
        claim,
        check: Check::Ratio { metric, a, b, at },
        expect: e,
    }
}

const fn trend(claim: &'static str, series: &'static str, e: Expect) -> Finding {
    Finding {
        claim,
        check: Check::Trend {
            metric: Metric::Throughput,
            series,
        },
        expect: e,
    }
}

/// "About the same": within 25% of each other.
const SAME: Expect = Expect::Range(0.8, 1.25);
const STOCK_SCAN: Set = Set::StockScan(true);
const NEW_ORDER_ABORTS: Metric = Metric::TypeAbortRate("new-order");
const PAYMENT_ABORTS: Metric = Metric::TypeAbortRate("payment");

/// Every figure, in the paper's order.
pub const FIGURES: &[Figure] = &[
    Figure {
        name: "scalability",
        title: "Scalability: read-only YCSB, 1 operation per transaction",
        paper: "Fig. 6a",
        xs: &[1.0, 2.0, 4.0],
        xs_paper: &[
            1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 20.0, 24.0, 28.0, 32.0, 36.0, 40.0,
        ],
        base: &[READ_ONLY, LOW_CONTENTION, Set::OpsPerTxn(1), Set::MixHint(false)],
        series: per_protocol!(),
        findings: &[
            trend("all but SI+SSN scale almost linearly", "MVTO", Expect::Above1),
            ratio(
                "SI+SSN achieves lower performance (its central transaction table)",
                "SI+SSN",
                "MVTO",
                At::Last,
                Expect::Below1,
            ),
        ],
        note: Some("on 2 cores, threads beyond 2 share them"),
        ..FIG
    },
    Figure {
        name: "scalability-long",
        title: "Scalability: read-only YCSB, 100 operations per transaction",
        paper: "Fig. 6b",
        xs: &[1.0, 2.0, 4.0],
        xs_paper: &[
            1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 20.0, 24.0, 28.0, 32.0, 36.0, 40.0,
        ],
        base: &[READ_ONLY, LOW_CONTENTION, Set::OpsPerTxn(100), Set::MixHint(false)],
        series: per_protocol!(),
        findings: &[trend(
            "the protocols scale linearly up to 40 threads",
            "SI+SSN",
            Expect::Above1,
        )],
        note: Some("on 2 cores, threads beyond 2 share them"),
        ..FIG
    },
    Figure {
        name: "contention-read",
        title: "Contention: read-intensive YCSB",
        paper: "Fig. 7a",
        axis: Axis::Theta,
        xs: THETAS,
        xs_paper: THETAS,
        base: &[READ_INTENSIVE],
        series: per_protocol!(),
        findings: &[ratio(
            "beyond θ 0.7 MVOCC's throughput falls by about 50% against the others",
            "MVOCC",
            "MVTO",
            At::X(0.99),
            Expect::Range(0.4, 0.6),
        )],
        ..FIG
    },
    Figure {
        name: "contention",
        title: "Contention: update-intensive YCSB",
        paper: "Fig. 7b",
        axis: Axis::Theta,
        xs: THETAS,
        xs_paper: THETAS,
        base: &[UPDATE_INTENSIVE],
        series: per_protocol!(),
        more: &[Metric::AbortRate],
        findings: &[
            ratio(
                "no great difference among the protocols at high contention",
                "SI",
                "MVTO",
                At::X(0.99),
                SAME,
            ),
            ratio(
                "except MV2PL, which falls behind",
                "MV2PL",
                "MVTO",
                At::X(0.99),
                Expect::Below1,
            ),
        ],
        note: Some("the abort-rate panel is ours"),
        ..FIG
    },
    Figure {
        name: "heterogeneous",
        title: "Heterogeneous workload, no READ ONLY hint",
        paper: "Fig. 8",
        axis: Axis::RoThreads,
        xs: &[0.0, 1.0, 2.0],
        xs_paper: &[0.0, 4.0, 8.0, 12.0, 16.0, 20.0],
        base: &[
            UPDATE_INTENSIVE,
            HIGH_CONTENTION,
            Set::OpsPerTxn(100),
            Set::RoOps(100),
            Set::RoHint(false),
        ],
        paper_base: &[Set::Threads(20)],
        series: per_protocol!(),
        more: &[Metric::ReadOnlyThroughput],
        findings: &[
            trend(
                "MV2PL's read-write throughput drops as read-only threads are added",
                "MV2PL",
                Expect::Below1,
            ),
            ratio_of(
                "MVOCC starves read-only queries: lower than MVTO's",
                Metric::ReadOnlyThroughput,
                "MVOCC",
                "MVTO",
                At::Last,
                Expect::Below1,
            ),
            ratio(
                "SI+SSN achieves a much higher read-write throughput",
                "SI+SSN",
                "MVTO",
                At::Last,
                Expect::Above1,
            ),
        ],
        ..FIG
    },
    Figure {
        name: "heterogeneous-hint",
        title: "Heterogeneous workload, READ ONLY hint",
        paper: "Fig. 9",
        axis: Axis::RoThreads,
        xs: &[0.0, 1.0, 2.0],
        xs_paper: &[0.0, 4.0, 8.0, 12.0, 16.0, 20.0],
        base: &[
            UPDATE_INTENSIVE,
            HIGH_CONTENTION,
            Set::OpsPerTxn(100),
            Set::RoOps(100),
            Set::RoHint(true),
        ],
        paper_base: &[Set::Threads(20)],
        series: per_protocol!(),
        more: &[Metric::ReadOnlyThroughput],
        findings: &[
            Finding {
                claim: "read-only throughput is the same for every protocol",
                check: Check::Spread {
                    metric: Metric::ReadOnlyThroughput,
                    at: At::Last,
                },
                expect: Expect::AtMost(1.25),
            },
            ratio(
                "SI+SSN is 1.6x faster than MVTO (and MV2PL)",
                "SI+SSN",
                "MVTO",
                At::Last,
                Expect::Range(1.4, 1.8),
            ),
            ratio(
                "MVOCC achieves the lowest read-write throughput",
                "MVOCC",
                "MVTO",
                At::Last,
                Expect::Below1,
            ),
        ],
        ..FIG
    },
    Figure {
        name: "tpcc",
        workload: Workload::Tpcc,
        title: "TPC-C: fewer warehouses than threads",
        paper: "Fig. 10",
        xs: THREADS_QUICK,
        xs_paper: THREADS_PAPER,
        // The paper's 10 warehouses for up to 40 threads: terminals share
        // warehouses, which is the contention the figure is about. At the
        // quick scale's 2 threads, 10 warehouses would give each thread its
        // own (home warehouse `thread % W + 1`); one keeps them sharing.
        base: &[Set::Warehouses(1)],
        paper_base: &[Set::Warehouses(10)],
        series: per_protocol!(),
        more: &[NEW_ORDER_ABORTS, PAYMENT_ABORTS],
        findings: &[
            ratio(
                "MVTO achieves 45-120% higher throughput than the others",
                "MVTO",
                "MVOCC",
                At::Last,
                Expect::Range(1.45, 2.2),
            ),
            ratio(
                "SI+SSN yields higher throughput than MVOCC",
                "SI+SSN",
                "MVOCC",
                At::Last,
                Expect::Above1,
            ),
            Finding {
                claim: "MV2PL's Payment abort rate is 6.8x its NewOrder's",
                check: Check::Within {
                    series: "MV2PL",
                    a: PAYMENT_ABORTS,
                    b: NEW_ORDER_ABORTS,
                    at: At::Last,
                },
                expect: Expect::Range(6.0, 7.5),
            },
            Finding {
                claim: "MVOCC is more likely to abort NewOrder than Payment",
                check: Check::Within {
                    series: "MVOCC",
                    a: NEW_ORDER_ABORTS,
                    b: PAYMENT_ABORTS,
                    at: At::Last,
                },
                expect: Expect::Above1,
            },
        ],
        note: Some("a smaller item catalogue (10,000 items, 300 customers per district)"),
        ..FIG
    },
    Figure {
        name: "non-inline-read",
        title: "Non-inline attributes: read-intensive YCSB",
        paper: "Fig. 11a",
        axis: Axis::TextAttrs,
        xs: &[1.0, 5.0, 10.0, 20.0],
        xs_paper: &[1.0, 10.0, 20.0, 50.0, 100.0],
        base: &[
            SECTION_7_3_TO_7_5,
            READ_INTENSIVE,
            LOW_CONTENTION,
            // "a variable number of 100-byte non-inline VARCHAR type
            // attributes"; "each operation only accesses one attribute".
            Set::Attributes(1),
            Set::ReadAttrs(1),
            Set::UpdateText(true),
        ],
        series: NON_INLINE_SERIES,
        findings: &[ratio(
            "reference counting is ~40% faster than full copies at 50 attributes",
            "shared (reference counted)",
            "copied in full",
            At::Last,
            Expect::Range(1.3, 1.5),
        )],
        note: Some("rows keep one integer attribute beside the text ones (Strata's YCSB table needs one)"),
        ..FIG
    },
    Figure {
        name: "non-inline",
        title: "Non-inline attributes: update-intensive YCSB",
        paper: "Fig. 11b",
        axis: Axis::TextAttrs,
        xs: &[1.0, 5.0, 10.0, 20.0],
        xs_paper: &[1.0, 10.0, 20.0, 50.0, 100.0],
        base: &[
            SECTION_7_3_TO_7_5,
            UPDATE_INTENSIVE,
            LOW_CONTENTION,
            // "a variable number of 100-byte non-inline VARCHAR type
            // attributes"; "each operation only accesses one attribute".
            Set::Attributes(1),
            Set::ReadAttrs(1),
            Set::UpdateText(true),
        ],
        series: NON_INLINE_SERIES,
        more: &[Metric::BytesPerRow],
        findings: &[
            ratio(
                "with updates the gap reaches over 100%",
                "shared (reference counted)",
                "copied in full",
                At::Last,
                Expect::Range(2.0, 3.0),
            ),
            ratio_of(
                "after the run sharing holds no more memory per row than copying (ours)",
                Metric::BytesPerRow,
                "shared (reference counted)",
                "copied in full",
                At::Last,
                Expect::AtMost(1.1),
            ),
        ],
        note: Some("rows keep one integer attribute beside the text ones (Strata's YCSB table needs one); the memory panel is ours: once old versions are reclaimed both keep one payload per attribute, so sharing saves allocation per update (not measured yet), not resident memory"),
        ..FIG
    },
    Figure {
        name: "chain-ordering-read",
        title: "Version chain ordering: read-intensive YCSB",
        paper: "Fig. 12a",
        axis: Axis::Theta,
        xs: THETAS,
        xs_paper: THETAS,
        base: &[SECTION_7_3_TO_7_5, READ_INTENSIVE],
        series: &[
            Series {
                label: "N2O",
                settings: &[N2O],
            },
            Series {
                label: "O2N",
                settings: &[O2N],
            },
        ],
        findings: &[ratio(
            "N2O beats O2N, by 2.4-3.4x at θ 0.9",
            "N2O",
            "O2N",
            At::X(0.9),
            Expect::Range(2.4, 3.4),
        )],
        ..FIG
    },
    Figure {
        name: "chain-ordering",
        title: "Version chain ordering: update-intensive YCSB",
        paper: "Fig. 12b",
        axis: Axis::Theta,
        xs: THETAS,
        xs_paper: THETAS,
        base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE],
        series: &[
            Series {
                label: "N2O",
                settings: &[N2O],
            },
            Series {
                label: "O2N",
                settings: &[O2N],
            },
        ],
        findings: &[ratio(
            "N2O beats O2N, by 2.4-3.4x at θ 0.9",
            "N2O",
            "O2N",
            At::X(0.9),
            Expect::Range(2.4, 3.4),
        )],
        ..FIG
    },
    Figure {
        name: "footprint",
        title: "Transaction footprint: 10 attributes",
        paper: "Fig. 13a",
        axis: Axis::UpdatePercent,
        xs: &[0.0, 20.0, 50.0, 80.0, 100.0],
        xs_paper: &[0.0, 20.0, 40.0, 60.0, 80.0, 100.0],
        base: &[
            SECTION_7_3_TO_7_5,
            LOW_CONTENTION,
            SPACES,
            Set::MixHint(false),
            Set::Attributes(10),
            Set::ReadAttrs(1),
        ],
        series: STORAGE_SERIES,
        findings: &[
            ratio(
                "append-only and delta perform alike at 10 attributes",
                "delta",
                "append-only",
                At::Last,
                SAME,
            ),
            ratio(
                "append-only and time-travel are almost the same",
                "time-travel",
                "append-only",
                At::Last,
                SAME,
            ),
        ],
        ..FIG
    },
    Figure {
        name: "footprint-wide",
        title: "Transaction footprint: 100 attributes",
        paper: "Fig. 13b",
        axis: Axis::UpdatePercent,
        xs: &[0.0, 20.0, 50.0, 80.0, 100.0],
        xs_paper: &[0.0, 20.0, 40.0, 60.0, 80.0, 100.0],
        base: &[
            SECTION_7_3_TO_7_5,
            LOW_CONTENTION,
            SPACES,
            Set::MixHint(false),
            Set::Attributes(100),
            Set::ReadAttrs(1),
        ],
        series: STORAGE_SERIES,
        findings: &[ratio(
            "at 100 attributes delta is ~2x append-only (it uses less memory)",
            "delta",
            "append-only",
            At::Last,
            Expect::Range(1.7, 2.3),
        )],
        ..FIG
    },
    Figure {
        name: "attributes-modified-read",
        title: "Attributes modified: read-intensive YCSB",
        paper: "Fig. 14a",
        axis: Axis::ModifyAttrs,
        xs: ATTRS_100,
        xs_paper: ATTRS_100,
        base: &[
            SECTION_7_3_TO_7_5,
            READ_INTENSIVE,
            LOW_CONTENTION,
            SPACES,
            Set::Attributes(100),
            Set::ReadAttrs(1),
        ],
        series: STORAGE_SERIES,
        findings: &[
            trend(
                "append-only is stable whatever the attributes modified",
                "append-only",
                SAME,
            ),
            ratio(
                "delta performs best when few attributes are modified",
                "delta",
                "append-only",
                At::X(1.0),
                Expect::Above1,
            ),
        ],
        ..FIG
    },
    Figure {
        name: "attributes-modified",
        title: "Attributes modified: update-intensive YCSB",
        paper: "Fig. 14b",
        axis: Axis::ModifyAttrs,
        xs: ATTRS_100,
        xs_paper: ATTRS_100,
        base: &[
            SECTION_7_3_TO_7_5,
            UPDATE_INTENSIVE,
            LOW_CONTENTION,
            SPACES,
            Set::Attributes(100),
            Set::ReadAttrs(1),
        ],
        series: STORAGE_SERIES,
        findings: &[
            ratio(
                "delta performs best when few attributes are modified",
                "delta",
                "append-only",
                At::X(1.0),
                Expect::Above1,
            ),
            ratio(
                "when all are modified delta is equivalent to the others",
                "delta",
                "append-only",
                At::Last,
                SAME,
            ),
        ],
        ..FIG
    },
    Figure {
        name: "attributes-accessed",
        title: "Attributes accessed: updates modify one attribute",
        paper: "Fig. 15a",
        axis: Axis::ReadAttrs,
        xs: ATTRS_100,
        xs_paper: ATTRS_100,
        base: &[
            SECTION_7_3_TO_7_5,
            READ_INTENSIVE,
            LOW_CONTENTION,
            SPACES,
            Set::Attributes(100),
            Set::ModifyAttrs(1),
        ],
        series: STORAGE_SERIES,
        findings: &[trend(
            "reading more attributes largely affects delta",
            "delta",
            Expect::Below1,
        )],
        note: Some("the read-intensive mix (the paper does not name the mix)"),
        ..FIG
    },
    Figure {
        name: "attributes-accessed-all",
        title: "Attributes accessed: updates modify every attribute",
        paper: "Fig. 15b",
        axis: Axis::ReadAttrs,
        xs: ATTRS_100,
        xs_paper: ATTRS_100,
        base: &[
            SECTION_7_3_TO_7_5,
            READ_INTENSIVE,
            LOW_CONTENTION,
            SPACES,
            Set::Attributes(100),
            Set::ModifyAttrs(100),
        ],
        series: STORAGE_SERIES,
        findings: &[
            trend(
                "reading more attributes degrades every scheme: append-only",
                "append-only",
                Expect::Below1,
            ),
            trend(
                "reading more attributes degrades every scheme: delta",
                "delta",
                Expect::Below1,
            ),
        ],
        note: Some("the read-intensive mix (the paper does not name the mix)"),
        ..FIG
    },
    Figure {
        name: "memory-spaces",
        title: "Memory allocation: separate memory spaces",
        paper: "Fig. 16",
        axis: Axis::MemorySpaces,
        xs: &[1.0, 2.0, 4.0, 8.0],
        xs_paper: &[1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 20.0],
        base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE, LOW_CONTENTION, Set::ReadAttrs(1)],
        series: STORAGE_SERIES,
        findings: &[
            trend(
                "delta is stable whatever the number of spaces",
                "delta",
                SAME,
            ),
            trend(
                "append-only gains 1.6-4x from 1 to 20 spaces",
                "append-only",
                Expect::Range(1.6, 4.0),
            ),
        ],
        note: Some("spaces hold every version and the in-place schemes' records (time-travel copies, deltas); a row's master (made once, at insert), text payloads and index entries use the global allocator"),
        ..FIG
    },
    Figure {
        name: "tpcc-storage",
        workload: Workload::Tpcc,
        title: "TPC-C: version storage schemes, with StockScan",
        paper: "Fig. 17",
        xs: THREADS_QUICK,
        xs_paper: THREADS_PAPER,
        base: &[SECTION_7_3_TO_7_5, STOCK_SCAN, Set::Warehouses(0)],
        paper_base: &[Set::Warehouses(40)],
        series: STORAGE_SERIES,
        more: &[Metric::ScanLatencyMs],
        findings: &[
            ratio(
                "append-only performs better than delta",
                "append-only",
                "delta",
                At::Last,
                Expect::Above1,
            ),
            ratio(
                "append-only performs better than time-travel",
                "append-only",
                "time-travel",
                At::Last,
                Expect::Above1,
            ),
            ratio_of(
                "delta's StockScan latency is 25-47% above append-only's (append-only 25-47% lower)",
                Metric::ScanLatencyMs,
                "delta",
                "append-only",
                At::Last,
                Expect::Range(1.33, 1.89),
            ),
        ],
        note: Some("one warehouse per thread (the paper: 40); a smaller item catalogue"),
        ..FIG
    },
    Figure {
        name: "gc-tuple",
        title: "Tuple-level comparison: update-intensive YCSB, low contention",
        paper: "Fig. 18a, 19a",
        axis: Axis::Time,
        xs: &[],
        xs_paper: &[],
        base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE, LOW_CONTENTION, O2N],
        series: TUPLE_GC_SERIES,
        more: &[Metric::NewBytesPerTxn],
        findings: &[
            ratio_of(
                "COOP allocates 30-60% less memory per transaction than VAC",
                Metric::NewBytesPerTxn,
                "COOP",
                "VAC",
                At::Mean,
                Expect::Range(0.4, 0.7),
            ),
            ratio_of(
                "without GC the system takes new memory for every version: VAC takes less",
                Metric::NewBytesPerTxn,
                "VAC",
                "no GC",
                At::Mean,
                Expect::Below1,
            ),
            ratio(
                "COOP achieves ~45% higher throughput than VAC",
                "COOP",
                "VAC",
                At::Mean,
                Expect::Range(1.3, 1.6),
            ),
            trend(
                "without GC throughput declines over time",
                "no GC",
                Expect::Below1,
            ),
        ],
        ..FIG
    },
    Figure {
        name: "gc-tuple-high",
        title: "Tuple-level comparison: update-intensive YCSB, high contention",
        paper: "Fig. 18b, 19b",
        axis: Axis::Time,
        xs: &[],
        xs_paper: &[],
        base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE, HIGH_CONTENTION, O2N],
        series: TUPLE_GC_SERIES,
        more: &[Metric::NewBytesPerTxn],
        findings: &[
            ratio_of(
                "COOP allocates 30-60% less memory per transaction than VAC",
                Metric::NewBytesPerTxn,
                "COOP",
                "VAC",
                At::Mean,
                Expect::Range(0.4, 0.7),
            ),
            ratio_of(
                "without GC the system takes new memory for every version: VAC takes less",
                Metric::NewBytesPerTxn,
                "VAC",
                "no GC",
                At::Mean,
                Expect::Below1,
            ),
            ratio(
                "COOP achieves higher throughput than VAC",
                "COOP",
                "VAC",
                At::Mean,
                Expect::Above1,
            ),
            trend(
                "without GC throughput declines over time",
                "no GC",
                Expect::Below1,
            ),
        ],
        ..FIG
    },
    Figure {
        name: "gc-read",
        title: "Tuple-level vs. transaction-level: read-intensive YCSB",
        paper: "Fig. 20a, 21a",
        axis: Axis::Time,
        base: &[SECTION_7_3_TO_7_5, READ_INTENSIVE, HIGH_CONTENTION, N2O],
        series: TXN_GC_SERIES,
        more: &[Metric::NewBytesPerTxn],
        findings: &[
            ratio_of(
                "both mechanisms reduce memory: transaction-level against none",
                Metric::NewBytesPerTxn,
                "transaction-level",
                "no GC",
                At::Mean,
                Expect::Below1,
            ),
            ratio_of(
                "both mechanisms reduce memory: VAC against none",
                Metric::NewBytesPerTxn,
                "VAC",
                "no GC",
                At::Mean,
                Expect::Below1,
            ),
            ratio(
                "transaction-level GC is slightly better than tuple-level",
                "transaction-level",
                "VAC",
                At::Mean,
                Expect::Range(1.0, 1.1),
            ),
            ratio(
                "GC improves throughput by 20-30% over none",
                "transaction-level",
                "no GC",
                At::Mean,
                Expect::Range(1.2, 1.3),
            ),
        ],
        ..FIG
    },
    Figure {
        name: "gc",
        title: "Tuple-level vs. transaction-level: update-intensive YCSB",
        paper: "Fig. 20b, 21b",
        axis: Axis::Time,
        base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE, HIGH_CONTENTION, N2O],
        series: TXN_GC_SERIES,
        more: &[Metric::NewBytesPerTxn],
        findings: &[
            ratio_of(
                "both mechanisms reduce memory: transaction-level against none",
                Metric::NewBytesPerTxn,
                "transaction-level",
                "no GC",
                At::Mean,
                Expect::Below1,
            ),
            ratio_of(
                "both mechanisms reduce memory: VAC against none",
                Metric::NewBytesPerTxn,
                "VAC",
                "no GC",
                At::Mean,
                Expect::Below1,
            ),
            ratio(
                "transaction-level GC is 20% faster than tuple-level",
                "transaction-level",
                "VAC",
                At::Mean,
                Expect::Range(1.1, 1.3),
            ),
            ratio(
                "GC improves throughput by 20-30% over none",
                "transaction-level",
                "no GC",
                At::Mean,
                Expect::Range(1.2, 1.3),
            ),
        ],
        ..FIG
    },
    Figure {
        name: "index-pointers",
        title: "Index management: secondary indexes, low contention",
        paper: "Fig. 22a",
        axis: Axis::SecondaryIndexes,
        xs: &[1.0, 2.0, 5.0, 10.0],
        xs_paper: &[1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0],
        base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE, LOW_CONTENTION, N2O],
        series: INDEX_SERIES,
        findings: &[ratio(
            "under low contention logical pointers are 40% faster at 20 indexes",
            "logical (tuple id)",
            "physical",
            At::Last,
            Expect::Range(1.3, 1.5),
        )],
        ..FIG
    },
    Figure {
        name: "index-pointers-high",
        title: "Index management: secondary indexes, high contention",
        paper: "Fig. 22b",
        axis: Axis::SecondaryIndexes,
        xs: &[1.0, 2.0, 5.0, 10.0],
        xs_paper: &[1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0],
        base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE, HIGH_CONTENTION, N2O],
        series: INDEX_SERIES,
        findings: &[ratio(
            "under high contention logical pointers are 25% faster",
            "logical (tuple id)",
            "physical",
            At::Last,
            Expect::Range(1.15, 1.35),
        )],
        ..FIG
    },
    Figure {
        name: "index-pointers-threads",
        title: "Index management: eight secondary indexes, high contention",
        paper: "Fig. 23",
        xs: THREADS_QUICK,
        xs_paper: THREADS_PAPER,
        base: &[
            SECTION_7_3_TO_7_5,
            UPDATE_INTENSIVE,
            HIGH_CONTENTION,
            N2O,
            Set::SecondaryIndexes(8),
        ],
        series: INDEX_SERIES,
        findings: &[ratio(
            "logical pointers are 45% faster than physical under high contention",
            "logical (tuple id)",
            "physical",
            At::X(1.0),
            Expect::Range(1.35, 1.55),
        )],
        ..FIG
    },
    Figure {
        name: "configurations",
        workload: Workload::Tpcc,
        title: "Configuration comparison: Table 1, TPC-C with StockScan, low contention",
        paper: "Table 1, Fig. 24a, 25a",
        xs: THREADS_QUICK,
        xs_paper: THREADS_PAPER,
        base: &[STOCK_SCAN, Set::Warehouses(0)],
        series: PRESET_SERIES,
        more: &[Metric::ScanLatencyMs],
        findings: &[
            ratio(
                "Oracle/MySQL and NuoDB perform best, Postgres and Hekaton worst",
                "NuoDB",
                "Postgres",
                At::Last,
                Expect::Above1,
            ),
            ratio(
                "Oracle/MySQL above Hekaton",
                "Oracle",
                "Hekaton",
                At::Last,
                Expect::Above1,
            ),
            ratio_of(
                "StockScan latency is worst with delta storage (Oracle) against append-only (NuoDB)",
                Metric::ScanLatencyMs,
                "Oracle",
                "NuoDB",
                At::Last,
                Expect::Above1,
            ),
        ],
        note: Some("one warehouse per thread; a smaller item catalogue"),
        ..FIG
    },
    Figure {
        name: "configurations-high",
        workload: Workload::Tpcc,
        title: "Configuration comparison: Table 1, TPC-C with StockScan, high contention",
        paper: "Table 1, Fig. 24b, 25b",
        xs: THREADS_QUICK,
        xs_paper: THREADS_PAPER,
        base: &[STOCK_SCAN, Set::Warehouses(1)],
        paper_base: &[Set::Warehouses(10)],
        series: PRESET_SERIES,
        more: &[Metric::ScanLatencyMs],
        findings: &[
            ratio(
                "Oracle/MySQL and NuoDB perform best, Postgres and Hekaton worst",
                "NuoDB",
                "Postgres",
                At::Last,
                Expect::Above1,
            ),
            ratio_of(
                "StockScan latency is worst with delta storage (Oracle) against append-only (NuoDB)",
                Metric::ScanLatencyMs,
                "Oracle",
                "NuoDB",
                At::Last,
                Expect::Above1,
            ),
        ],
        note: Some("one warehouse (the paper: 10 for 40 threads); a smaller item catalogue"),
        ..FIG
    },
];

#[cfg(test)]
impl Figure {
    /// The first figure number its label names (0 for a table alone).
    fn paper_figure(&self) -> u32 {
        self.paper
            .split("Fig. ")
            .nth(1)
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }
}

impl Figure {
    /// Every panel's metric, the first one first.
    fn panels(&self) -> impl Iterator<Item = Metric> + '_ {
        std::iter::once(self.metric).chain(self.more.iter().copied())
    }
}

/// The point a series of a figure starts from.
fn base_point(f: &Figure, s: &Series, records: u64, seed: u64, paper_scale: bool) -> Point {
    let mut p = Point {
        // The study's SI+SSN is SSN on top of snapshot isolation (§7.2):
        // first updater wins on every write, as ERMIA's (not Strata's
        // default blind overwrites).
        opts: Options::default().ssn_blind_writes(false),
        ycsb: YcsbConfig {
            records,
            seed,
            ..YcsbConfig::default()
        },
        warehouses: 0,
        stock_scan: false,
    };
    let paper: &[Set] = if paper_scale { f.paper_base } else { &[] };
    for set in f.base.iter().chain(paper).chain(s.settings) {
        set.apply(&mut p);
    }
    p
}

/// The whole configuration of one run of series `s` at `x`.
fn point_at(f: &Figure, s: &Series, x: f64, a: &ReproduceArgs, records: u64) -> Point {
    let mut p = base_point(f, s, records, a.seed, a.paper_scale);
    if let Some(t) = a.threads {
        Set::Threads(t).apply(&mut p);
    }
    if let Some(set) = f.axis.set(x) {
        set.apply(&mut p);
    }
    p
}

/// The x values a figure runs at this scale (one placeholder for a time
/// axis: the run itself sweeps time).
fn xs_of(f: &Figure, paper_scale: bool) -> &'static [f64] {
    if f.axis == Axis::Time {
        return &[0.0];
    }
    if paper_scale {
        f.xs_paper
    } else {
        f.xs
    }
}

/// Why series `s` cannot run yet, if it cannot.
fn series_blocker(f: &Figure, s: &Series, xs: &[f64]) -> Option<String> {
    let mut p = base_point(f, s, 1000, 1, false);
    if let Err(e) = p.opts.validate() {
        return Some(e.to_string());
    }
    // The workload's own parts (e.g. secondary indexes) at the first x.
    if let Some(&x) = xs.first() {
        if let Some(set) = f.axis.set(x) {
            set.apply(&mut p);
        }
        if let Err(e @ WorkloadError::NotImplemented(_)) = p.ycsb.validate() {
            return Some(e.to_string());
        }
    }
    None
}

/// "ready", "partial: ..." or "needs ...".
pub fn status(f: &Figure) -> String {
    if let Some(n) = f.needs {
        return format!("needs {n}, not implemented yet");
    }
    let blocked: Vec<String> = f
        .series
        .iter()
        .filter_map(|s| series_blocker(f, s, xs_of(f, false)).map(|b| format!("{} ({b})", s.label)))
        .collect();
    if blocked.is_empty() {
        "ready".into()
    } else if blocked.len() == f.series.len() {
        format!("needs {}", blocked.join("; "))
    } else {
        format!("partial: skips {}", blocked.join("; "))
    }
}

fn list() {
    for f in FIGURES {
        println!(
            "{:<24} {:<22} {}  [{}]",
            f.name,
            f.paper,
            f.title,
            status(f)
        );
    }
    for (name, paper, title) in crate::reproduce_vdriver::FIGURES {
        let status = crate::reproduce_vdriver::status(name);
        println!("{name:<24} {paper:<22} {title}  [{status}]");
    }
    for (name, paper, title) in crate::reproduce_ermia::FIGURES {
        let status = crate::reproduce_ermia::status(name);
        println!("{name:<24} {paper:<22} {title}  [{status}]");
    }
    for (name, paper, title) in crate::reproduce_ermia_hybrid::FIGURES {
        println!("{name:<24} {paper:<22} {title}  [ready]");
    }
    for (name, paper, title) in crate::reproduce_mvpbt::FIGURES {
        println!("{name:<24} {paper:<22} {title}  [ready]");
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
    if crate::reproduce_vdriver::is_vdriver(name) {
        return crate::reproduce_vdriver::run(name, a);
    }
    if crate::reproduce_ermia::is_ermia(name) {
        return crate::reproduce_ermia::run(name, a);
    }
    if crate::reproduce_ermia_hybrid::is_hybrid(name) {
        return crate::reproduce_ermia_hybrid::run(name, a);
    }
    if crate::reproduce_mvpbt::is_mvpbt(name) {
        return crate::reproduce_mvpbt::run(name, a);
    }
    if name == "all" {
        return run_all(a);
    }
    let Some(fig) = FIGURES.iter().find(|f| f.name == name) else {
        let names: Vec<&str> = (FIGURES.iter().map(|f| f.name))
            .chain(crate::reproduce_vdriver::FIGURES.iter().map(|f| f.0))
            .chain(crate::reproduce_ermia::FIGURES.iter().map(|f| f.0))
            .chain(crate::reproduce_ermia_hybrid::FIGURES.iter().map(|f| f.0))
            .chain(crate::reproduce_mvpbt::FIGURES.iter().map(|f| f.0))
            .chain(["all"])
            .collect();
        return Err(UsageError(format!(
            "unknown figure {name:?}; expected one of {}",
            names.join(", ")
        )));
    };
    if let Some(n) = fig.needs {
        return Err(UsageError(format!(
            "figure {name} needs {n}, not implemented yet"
        )));
    }
    let plan = Plan::new(fig, a)?;
    crate::check_output_dir("out", &a.out)?;
    match run_figure(fig, &plan, a) {
        Ok(out) => {
            for (_, line) in &out.findings {
                println!("finding: {line}");
            }
            let md = a.out.join(format!("{name}.md"));
            if let Err(e) = std::fs::write(&md, figure_section(fig, &plan, &out)) {
                eprintln!("error: cannot write {}: {e}", md.display());
                return Ok(ExitCode::FAILURE);
            }
            let files: Vec<String> = (std::iter::once(&out.csv).chain(&out.pngs))
                .chain([&md])
                .map(|p| p.display().to_string())
                .collect();
            println!("wrote {}", files.join(", "));
            Ok(ExitCode::SUCCESS)
        }
        Err(FigureError::Usage(e)) => Err(e),
        Err(FigureError::Failed(e)) => {
            eprintln!("error: {e}");
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
    // Check every figure's plan before the first run.
    let mut plans = Vec::new();
    for f in FIGURES.iter().filter(|f| f.needs.is_none()) {
        plans.push((f, Plan::new(f, a)?));
    }
    crate::check_output_dir("out", &a.out)?;
    let started = std::time::Instant::now();
    let mut sections = Vec::new();
    let mut summary = Vec::new();
    for (i, (f, plan)) in plans.iter().enumerate() {
        eprintln!("== [{}/{}] {} ({})", i + 1, plans.len(), f.name, f.paper);
        match run_figure(f, plan, a) {
            Ok(out) => {
                let count = |v: Verdict| out.findings.iter().filter(|(x, _)| *x == v).count();
                summary.push(format!(
                    "| {} | [{}](#{}) | {} | {} | {} | {} |",
                    f.paper,
                    f.name,
                    f.name,
                    count(Verdict::Agrees),
                    count(Verdict::AgreesInDirection),
                    count(Verdict::Differs),
                    count(Verdict::NotMeasured),
                ));
                sections.push(figure_section(f, plan, &out));
            }
            Err(FigureError::Usage(UsageError(e)) | FigureError::Failed(e)) => {
                summary.push(format!("| {} | {} | failed: {e} | | | |", f.paper, f.name));
            }
        }
        if strata_workloads::driver::interrupted() {
            break;
        }
    }
    for f in FIGURES.iter().filter(|f| f.needs.is_some()) {
        summary.push(format!(
            "| {} | {} | not run: needs {} | | | |",
            f.paper,
            f.name,
            f.needs.unwrap_or_default()
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

/// A figure's sizes and times at the chosen scale, checked before a run.
struct Plan {
    records: u64,
    trials: usize,
    xs: &'static [f64],
    driver: DriverConfig,
    series: Vec<&'static Series>,
}

impl Plan {
    fn new(fig: &'static Figure, a: &ReproduceArgs) -> Result<Plan, UsageError> {
        let name = fig.name;
        let time = fig.axis == Axis::Time;
        // `all` runs shorter points so that the whole study fits in half an
        // hour on 2 cores.
        let all = a.figure.as_deref() == Some("all");
        let duration = a.duration.unwrap_or(match (a.paper_scale, time, all) {
            (true, true, _) => 120.0,
            (true, false, _) => 10.0,
            (false, true, _) => 8.0,
            (false, false, false) => 2.0,
            (false, false, true) => 1.5,
        });
        let duration = crate::seconds("duration", duration)?;
        if duration.is_zero() {
            return Err(UsageError("--duration must be more than 0 seconds".into()));
        }
        let warmup = crate::seconds(
            "warmup",
            a.warmup.unwrap_or((duration.as_secs_f64() / 4.0).min(1.0)),
        )?;
        let trials = a.trials.unwrap_or(if a.paper_scale { 5 } else { 1 });
        if !(1..=100).contains(&trials) {
            return Err(UsageError(format!(
                "--trials must be in 1..=100, got {trials}"
            )));
        }
        let records = a
            .records
            .unwrap_or(if a.paper_scale { 10_000_000 } else { 100_000 });
        let xs = xs_of(fig, a.paper_scale);
        let series: Vec<&Series> = fig
            .series
            .iter()
            .filter(|s| match series_blocker(fig, s, xs) {
                None => true,
                Some(why) => {
                    eprintln!("note: {name}: skipping series {:?}: {why}", s.label);
                    false
                }
            })
            .collect();
        if series.is_empty() {
            return Err(UsageError(format!("figure {name} {}", status(fig))));
        }
        // Check every point before running any; one database at a time,
        // sized by its widest row (about 310 bytes at 10 integer columns,
        // see `bench ycsb`).
        let mut widest = 0.0f64;
        let mut most_threads = 0;
        for s in &series {
            for &x in xs {
                let p = point_at(fig, s, x, a, records);
                p.ycsb
                    .validate()
                    .map_err(|e| UsageError(format!("{name}, {} at x = {x}: {e}", s.label)))?;
                let y = &p.ycsb;
                widest = widest
                    .max(230.0 + 8.0 * y.attributes as f64 + 110.0 * y.text_attributes as f64);
                most_threads = most_threads.max(y.threads + y.ro_threads);
            }
        }
        if fig.workload == Workload::Ycsb {
            crate::check_memory(
                &format!("{name} with {records} records"),
                records as f64 * widest,
            )?;
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if a.paper_scale && most_threads > cores {
            eprintln!(
                "warning: {name} runs up to {most_threads} threads on {cores} cores; \
                 the paper had 40 cores, so the threads here share them"
            );
        }
        Ok(Plan {
            records,
            trials,
            xs,
            driver: DriverConfig {
                warmup,
                duration,
                series: time,
                huge_pages: Default::default(),
                ab_interval: None,
            },
            series,
        })
    }
}

enum FigureError {
    /// A setting the run refused (exit code 2).
    Usage(UsageError),
    Failed(String),
}

/// What a figure's run wrote and found.
struct Outcome {
    csv: PathBuf,
    pngs: Vec<PathBuf>,
    findings: Vec<(Verdict, String)>,
}

/// Runs every series at every x (and trial), writes the CSV and a PNG per
/// panel, and judges the figure's findings.
fn run_figure(fig: &Figure, plan: &Plan, a: &ReproduceArgs) -> Result<Outcome, FigureError> {
    let name = fig.name;
    let mut rows = Vec::new();
    let mut measured = Measured::default();
    let total = plan.series.len() * plan.xs.len() * plan.trials;
    let mut done = 0;
    'series: for s in &plan.series {
        for &x in plan.xs {
            let p = point_at(fig, s, x, a, plan.records);
            let mut trials = Vec::new();
            for trial in 0..plan.trials {
                done += 1;
                eprintln!(
                    "[{done}/{total}] {name}: {} {} = {x}{}",
                    s.label,
                    fig.axis.name(),
                    if plan.trials > 1 {
                        format!(", trial {}", trial + 1)
                    } else {
                        String::new()
                    }
                );
                let r = match run_point(fig, &p, &plan.driver, a.paper_scale) {
                    Ok(r) => r,
                    Err(WorkloadError::Config(m)) | Err(WorkloadError::NotImplemented(m)) => {
                        return Err(FigureError::Usage(UsageError(m)))
                    }
                    Err(e @ WorkloadError::NotCompiled { .. }) => {
                        return Err(FigureError::Usage(UsageError(e.to_string())))
                    }
                    Err(e) => {
                        return Err(FigureError::Failed(format!(
                            "{name}, {} at x = {x}: {e}",
                            s.label
                        )))
                    }
                };
                rows.push(Row::new(fig, s.label, x, trial + 1, p.ycsb.threads, &r));
                trials.push(r);
                if strata_workloads::driver::interrupted() {
                    break;
                }
            }
            if fig.axis == Axis::Time {
                for (t, v, bytes) in mean_series(&trials) {
                    let values = vec![(Metric::Throughput, v), (Metric::NewBytesPerTxn, bytes)];
                    measured.push(s.label, t, values);
                }
            } else if !trials.is_empty() {
                let values = fig
                    .panels()
                    .chain(finding_metrics(fig))
                    .map(|m| {
                        let sum: f64 = trials.iter().map(|r| value(m, r)).sum();
                        (m, sum / trials.len() as f64)
                    })
                    .collect();
                measured.push(s.label, x, values);
            }
            if strata_workloads::driver::interrupted() {
                // Ctrl-C: the points run so far, written and plotted.
                break 'series;
            }
        }
    }
    let csv = a.out.join(format!("{name}.csv"));
    write_csv(&csv, &rows)
        .map_err(|e| FigureError::Failed(format!("cannot write {}: {e}", csv.display())))?;
    let title = plot_title(fig, plan.records);
    let mut pngs = Vec::new();
    for (i, m) in fig.panels().enumerate() {
        let lines: Vec<Line> = (plan.series.iter())
            .map(|s| Line {
                label: s.label.to_string(),
                points: measured
                    .points
                    .get(s.label)
                    .map(|pts| {
                        pts.iter()
                            .filter_map(|(x, v)| {
                                v.iter().find(|(k, _)| *k == m).map(|(_, y)| (*x, *y))
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            })
            .collect();
        let (png, panel_title) = if i == 0 {
            (a.out.join(format!("{name}.png")), title.clone())
        } else {
            (
                a.out.join(format!("{name}-{}.png", m.name())),
                format!("{title}: {}", m.label()),
            )
        };
        let ticks = match fig.axis {
            Axis::Time => XTicks::Auto,
            _ => XTicks::Values(plan.xs),
        };
        line_chart_ticks(
            &png,
            &panel_title,
            fig.axis.label(),
            &m.label(),
            &lines,
            ticks,
        )
        .map_err(FigureError::Failed)?;
        pngs.push(png);
    }
    let findings = fig
        .findings
        .iter()
        .map(|f| crate::findings::line(f, &measured))
        .collect();
    Ok(Outcome {
        csv,
        pngs,
        findings,
    })
}

/// Metrics the findings read that no panel plots.
fn finding_metrics(fig: &Figure) -> impl Iterator<Item = Metric> + '_ {
    fig.findings.iter().flat_map(move |f| {
        let ms = match f.check {
            Check::Ratio { metric, .. }
            | Check::Trend { metric, .. }
            | Check::Spread { metric, .. } => [Some(metric), None],
            Check::Within { a, b, .. } => [Some(a), Some(b)],
        };
        ms.into_iter()
            .flatten()
            .filter(move |m| !fig.panels().any(|p| p == *m))
    })
}

/// Per-second throughput and new memory per transaction, averaged over
/// trials (as long as the shortest).
fn mean_series(trials: &[Ran]) -> Vec<(f64, f64, f64)> {
    let n = trials
        .iter()
        .map(|r| r.report.run.series.len())
        .min()
        .unwrap_or(0);
    let mean = |f: &dyn Fn(&strata_workloads::driver::SeriesPoint) -> f64, i: usize| {
        trials
            .iter()
            .map(|r| f(&r.report.run.series[i]))
            .sum::<f64>()
            / trials.len() as f64
    };
    (0..n)
        .map(|i| {
            (
                trials[0].report.run.series[i].t_s,
                mean(&|p| p.committed_per_s, i),
                mean(&|p| p.new_bytes_per_txn, i),
            )
        })
        .collect()
}

/// A figure's section of a report: what ran, the plots, the findings.
fn figure_section(fig: &Figure, plan: &Plan, out: &Outcome) -> String {
    let mut s = format!("## {}: {} (`{}`)\n\n", fig.paper, fig.title, fig.name);
    let threads = plan
        .series
        .first()
        .map(|first| base_point(fig, first, plan.records, 1, false).ycsb.threads)
        .unwrap_or(0);
    let size = match fig.workload {
        Workload::Tpcc => "TPC-C".to_string(),
        Workload::Ycsb => format!("{} records", plan.records),
    };
    s += &format!(
        "Ran {size}, {} s per point after {} s of warm-up, {} trial(s){}.",
        plan.driver.duration.as_secs_f64(),
        plan.driver.warmup.as_secs_f64(),
        plan.trials,
        if fig.axis == Axis::Threads {
            String::new()
        } else {
            format!(", {threads} worker threads")
        },
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
    if out.findings.is_empty() {
        s += "- The paper states no finding for this panel.\n";
    }
    for (_, line) in &out.findings {
        s += &format!("- {line}\n");
    }
    s + "\n"
}

/// A figure's plot title: what, which figure of the paper, and its size.
fn plot_title(fig: &Figure, records: u64) -> String {
    let size = match fig.workload {
        Workload::Tpcc => {
            let mut p = base_point(fig, &fig.series[0], records, 1, false);
            Set::Threads(1).apply(&mut p);
            match p.warehouses {
                0 => "one warehouse per thread".to_string(),
                1 => "1 warehouse".to_string(),
                n => format!("{n} warehouses"),
            }
        }
        Workload::Ycsb => format!("{records} records"),
    };
    format!("{} ({}; {size})", fig.title, fig.paper)
}

/// One run's report, and for TPC-C its per-type reports (StockScan's
/// latency, each type's aborts).
struct Ran {
    report: YcsbReport,
    types: Vec<TypeReport>,
}

fn run_point(
    f: &Figure,
    p: &Point,
    driver: &DriverConfig,
    paper_scale: bool,
) -> Result<Ran, WorkloadError> {
    let db = Database::open(p.opts.clone())?;
    if f.workload == Workload::Tpcc {
        let warehouses = match p.warehouses {
            0 => p.ycsb.threads as u32,
            n => n,
        };
        // A smaller catalogue unless --paper-scale.
        let base = TpccConfig::spec(warehouses);
        let cfg = TpccConfig {
            threads: p.ycsb.threads,
            seed: p.ycsb.seed,
            stock_scan: p.stock_scan,
            items: if paper_scale { base.items } else { 10_000 },
            customers: if paper_scale { base.customers } else { 300 },
            ..base
        };
        let r = tpcc::run(db, &cfg, driver, &mut BarObserver::new(false))?;
        // Report it in the YCSB shape: the mix's five types as one.
        let mut run = r.run;
        let types = run.per_type.clone();
        let five: Vec<_> = run
            .per_type
            .iter()
            .filter(|t| t.name != "stock-scan")
            .cloned()
            .collect();
        let committed: u64 = five.iter().map(|t| t.committed).sum();
        let aborted: u64 = five.iter().map(|t| t.aborted).sum();
        let mut all = five[0].clone();
        all.name = "ycsb";
        all.committed = committed;
        all.aborted = aborted;
        all.committed_per_s = committed as f64 / run.measured_s;
        all.aborted_per_s = aborted as f64 / run.measured_s;
        all.latency = run.latency.clone();
        run.per_type = vec![all];
        return Ok(Ran {
            report: YcsbReport {
                engine: "strata",
                load_s: r.load_s,
                run,
                memory: None,
            },
            types,
        });
    }
    let engine = ycsb::StrataYcsb::new(db, &p.ycsb)?;
    let report = ycsb::run(&engine, &p.ycsb, driver, &mut BarObserver::new(false))?;
    Ok(Ran {
        report,
        types: Vec::new(),
    })
}

fn value(m: Metric, r: &Ran) -> f64 {
    let run = &r.report.run;
    let of = |t: &str| run.of_type(t).map_or(0.0, |t| t.committed_per_s);
    let ty = |name: &str| r.types.iter().find(|t| t.name == name);
    match m {
        Metric::Throughput => of("ycsb"),
        Metric::ReadOnlyThroughput => of("read-only-extra"),
        Metric::AbortRate => run.abort_rate,
        Metric::BytesPerRow => r.report.memory.as_ref().map_or(0.0, |m| m.bytes_per_row),
        Metric::ScanLatencyMs => ty("stock-scan").map_or(0.0, |t| t.latency.mean_us / 1000.0),
        // Time series only: one run has no single value.
        Metric::NewBytesPerTxn => 0.0,
        // Other figures' measurements; no study figure plots one.
        Metric::Named(_) => 0.0,
        // Conflicts only: NewOrder's specified 1% rollbacks and rows a
        // Delivery found gone are the workload's outcomes, not the
        // protocol's aborts.
        Metric::TypeAbortRate(name) => ty(name).map_or(0.0, |t| {
            let attempts = t.committed + t.aborted;
            let data: u64 = ["user-rollback", "not-found", "duplicate-key"]
                .iter()
                .filter_map(|r| t.aborts_by_reason.get(r))
                .sum();
            if attempts == 0 {
                0.0
            } else {
                t.aborted.saturating_sub(data) as f64 / attempts as f64
            }
        }),
    }
}

/// One CSV row.
struct Row {
    figure: &'static str,
    series: &'static str,
    x_name: &'static str,
    x: f64,
    trial: usize,
    committed_per_s: f64,
    aborted_per_s: f64,
    abort_rate: f64,
    read_only_per_s: f64,
    p50_us: f64,
    p99_us: f64,
    p999_us: f64,
    bytes_per_row: f64,
    version_bytes: u64,
    longest_chain: u64,
    scan_latency_ms: f64,
    new_order_abort_rate: f64,
    payment_abort_rate: f64,
    threads: usize,
    /// Per-second throughput and new bytes per transaction (time-axis
    /// figures), "t:txn/s:bytes" triples.
    per_second: String,
}

impl Row {
    fn new(
        f: &Figure,
        series: &'static str,
        x: f64,
        trial: usize,
        threads: usize,
        r: &Ran,
    ) -> Self {
        let main = r.report.run.of_type("ycsb");
        let m = r.report.memory.clone().unwrap_or_default();
        Row {
            figure: f.name,
            series,
            x_name: f.axis.name(),
            x,
            trial,
            committed_per_s: main.map_or(0.0, |t| t.committed_per_s),
            aborted_per_s: main.map_or(0.0, |t| t.aborted_per_s),
            abort_rate: r.report.run.abort_rate,
            read_only_per_s: value(Metric::ReadOnlyThroughput, r),
            p50_us: main.map_or(0.0, |t| t.latency.p50_us),
            p99_us: main.map_or(0.0, |t| t.latency.p99_us),
            p999_us: main.map_or(0.0, |t| t.latency.p999_us),
            bytes_per_row: m.bytes_per_row,
            version_bytes: m.version_bytes,
            longest_chain: m.longest_chain,
            scan_latency_ms: value(Metric::ScanLatencyMs, r),
            new_order_abort_rate: value(NEW_ORDER_ABORTS, r),
            payment_abort_rate: value(PAYMENT_ABORTS, r),
            threads,
            per_second: (r.report.run.series.iter())
                .map(|p| {
                    format!(
                        "{:.0}:{:.0}:{:.0}",
                        p.t_s, p.committed_per_s, p.new_bytes_per_txn
                    )
                })
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

fn write_csv(path: &Path, rows: &[Row]) -> std::io::Result<()> {
    let mut w = csv::Writer::from_path(path)?;
    w.write_record([
        "figure",
        "series",
        "x_name",
        "x",
        "trial",
        "committed_per_s",
        "aborted_per_s",
        "abort_rate",
        "read_only_per_s",
        "p50_us",
        "p99_us",
        "p999_us",
        "bytes_per_row",
        "version_bytes",
        "longest_chain",
        "scan_latency_ms",
        "new_order_abort_rate",
        "payment_abort_rate",
        "threads",
        "per_second",
    ])?;
    for r in rows {
        w.write_record([
            r.figure.to_string(),
            r.series.to_string(),
            r.x_name.to_string(),
            r.x.to_string(),
            r.trial.to_string(),
            format!("{:.1}", r.committed_per_s),
            format!("{:.1}", r.aborted_per_s),
            format!("{:.5}", r.abort_rate),
            format!("{:.1}", r.read_only_per_s),
            format!("{:.2}", r.p50_us),
            format!("{:.2}", r.p99_us),
            format!("{:.2}", r.p999_us),
            format!("{:.1}", r.bytes_per_row),
            r.version_bytes.to_string(),
            r.longest_chain.to_string(),
            format!("{:.3}", r.scan_latency_ms),
            format!("{:.5}", r.new_order_abort_rate),
            format!("{:.5}", r.payment_abort_rate),
            r.threads.to_string(),
            r.per_second.clone(),
        ])?;
    }
    w.flush()
}

#[cfg(test)]
mod tests;
