//! `strata reproduce <figure>`: rerun a figure of the Peloton study (the
//! vDriver paper's LLT figures are in `reproduce_vdriver`, ERMIA's Figure 1 in
//! `reproduce_ermia`, its TPC-C-hybrid figures in `reproduce_ermia_hybrid`).
//!
//! ```text
//!   figure = sweep of one parameter (x)  ×  series (settings per line)
//!            over a base configuration, plotting one metric (y)
//!
//!   for s in series: for x in xs: open a fresh database (s's options),
//!                                  load, run YCSB, record a CSV row
//!   ──> <out>/<figure>.csv  and  <out>/<figure>.png
//! ```
//!
//! The registry is data: a figure names its axis, its x values (scaled to a
//! 2-core machine, and the paper's own with `--paper-scale`), and its series
//! as lists of [`Set`]tings. Whether a figure can run is decided by
//! validating each series' `Options`: a series naming a design variant the
//! engine does not implement yet is skipped with a note, and a figure with no
//! runnable series fails with "needs X, not implemented yet". Figures that
//! need a dimension with no setting yet name it in `needs`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use strata::{
    Database, GcPolicy, IndexPointers, MemorySpaces, NonInline, Options, Preset, Protocol,
    VersionStorage,
};
use strata_workloads::driver::DriverConfig;
use strata_workloads::tpcc::{self, TpccConfig};
use strata_workloads::ycsb::{self, YcsbConfig, YcsbReport};
use strata_workloads::WorkloadError;

use crate::plot::{line_chart_ticks, Line, XTicks};
use crate::progress::BarObserver;
use crate::UsageError;

#[derive(Args, Debug, Clone)]
#[command(allow_negative_numbers = true)]
pub struct ReproduceArgs {
    /// The figure to reproduce (see --list).
    #[arg(required_unless_present = "list")]
    pub figure: Option<String>,
    /// List the figures and whether each can run today.
    #[arg(long)]
    pub list: bool,
    /// The paper's sizes (10M records, its full sweep) instead of sizes
    /// scaled to a 2-core machine.
    #[arg(long)]
    pub paper_scale: bool,
    /// Directory for <figure>.csv and <figure>.png.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Measured seconds per point (default 2, or 10 with --paper-scale).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Warm-up seconds per point (default: a quarter of the duration, at most 1).
    #[arg(long)]
    pub warmup: Option<f64>,
    /// Rows loaded per point (overrides the scale's default).
    #[arg(long)]
    pub records: Option<u64>,
    /// Worker threads of every point, for figures whose swept parameter is
    /// not the thread count (default: the workload's, 2), e.g. the paper's
    /// 40 or your machine's core count.
    #[arg(long)]
    pub threads: Option<usize>,
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

/// One setting of a run: a field of `Options` or of the YCSB configuration.
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
    TextAttrs(usize),
    ModifyAttrs(usize),
    ReadAttrs(usize),
    Attributes(usize),
    SecondaryIndexes(usize),
}

/// A run's whole configuration.
#[derive(Debug, Clone)]
pub struct Point {
    pub opts: Options,
    pub ycsb: YcsbConfig,
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
            Set::TextAttrs(v) => y.text_attributes = v,
            Set::ModifyAttrs(v) => y.modify_attrs = v,
            Set::ReadAttrs(v) => y.read_attrs = v,
            Set::Attributes(v) => y.attributes = v,
            Set::SecondaryIndexes(v) => y.secondary_indexes = v,
        }
    }
}

/// The swept parameter.
#[derive(Debug, Clone, Copy)]
pub enum Axis {
    Threads,
    Theta,
    RoThreads,
    ModifyAttrs,
    ReadAttrs,
    TextAttrs,
    OpsPerTxn,
    SecondaryIndexes,
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
            Axis::OpsPerTxn => "operations per transaction",
            Axis::SecondaryIndexes => "secondary indexes",
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
            Axis::OpsPerTxn => "ops_per_txn",
            Axis::SecondaryIndexes => "secondary_indexes",
        }
    }
    fn set(self, x: f64) -> Set {
        let n = x.round().max(0.0) as usize;
        match self {
            Axis::Threads => Set::Threads(n),
            Axis::Theta => Set::Theta(x),
            Axis::RoThreads => Set::RoThreads(n),
            Axis::ModifyAttrs => Set::ModifyAttrs(n),
            Axis::ReadAttrs => Set::ReadAttrs(n),
            Axis::TextAttrs => Set::TextAttrs(n),
            Axis::OpsPerTxn => Set::OpsPerTxn(n),
            Axis::SecondaryIndexes => Set::SecondaryIndexes(n),
        }
    }
}

/// What the y axis shows.
#[derive(Debug, Clone, Copy)]
pub enum Metric {
    /// Committed transactions/s of the mix.
    Throughput,
    /// Committed transactions/s of the extra read-only threads.
    ReadOnlyThroughput,
    AbortRate,
    BytesPerRow,
}

impl Metric {
    fn label(self) -> &'static str {
        match self {
            Metric::Throughput => "committed transactions/s",
            Metric::ReadOnlyThroughput => "read-only transactions/s",
            Metric::AbortRate => "abort rate",
            Metric::BytesPerRow => "bytes per row",
        }
    }
}

/// One line of a figure.
pub struct Series {
    pub label: &'static str,
    pub settings: &'static [Set],
}

/// The workload a figure runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    Ycsb,
    /// TPC-C with one warehouse per worker thread; throughput counts the
    /// five transactions (not StockScan).
    Tpcc,
}

/// One figure of the study.
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
    pub series: &'static [Series],
    pub metric: Metric,
    /// A workload or dimension with no setting yet.
    pub needs: Option<&'static str>,
}

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
const THETAS: &[f64] = &[0.0, 0.5, 0.7, 0.8, 0.9, 0.99];

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

const STORAGE_SERIES: &[Series] = &[
    Series {
        label: "append-only N2O",
        settings: &[Set::VersionStorage(VersionStorage::AppendNewToOld)],
    },
    Series {
        label: "append-only O2N",
        settings: &[Set::VersionStorage(VersionStorage::AppendOldToNew)],
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

/// Every figure, in the paper's order.
pub const FIGURES: &[Figure] = &[
    Figure {
        workload: Workload::Ycsb,
        name: "scalability",
        title: "Scalability: read-only YCSB",
        paper: "Fig. 6",
        axis: Axis::Threads,
        xs: &[1.0, 2.0, 4.0],
        xs_paper: &[
            1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 20.0, 24.0, 28.0, 32.0, 36.0, 40.0,
        ],
        base: &[READ_ONLY],
        series: per_protocol!(),
        metric: Metric::Throughput,
        needs: None,
    },
    Figure {
        workload: Workload::Ycsb,
        name: "contention",
        title: "Contention: update-intensive YCSB",
        paper: "Fig. 7",
        axis: Axis::Theta,
        xs: THETAS,
        xs_paper: THETAS,
        base: &[UPDATE_INTENSIVE],
        series: per_protocol!(),
        metric: Metric::Throughput,
        needs: None,
    },
    Figure {
        workload: Workload::Ycsb,
        name: "contention-read",
        title: "Contention: read-intensive YCSB",
        paper: "Fig. 7",
        axis: Axis::Theta,
        xs: THETAS,
        xs_paper: THETAS,
        base: &[READ_INTENSIVE],
        series: per_protocol!(),
        metric: Metric::Throughput,
        needs: None,
    },
    Figure {
        workload: Workload::Ycsb,
        name: "heterogeneous",
        title: "Heterogeneous workload, no READ ONLY hint",
        paper: "Fig. 8",
        axis: Axis::RoThreads,
        xs: &[0.0, 1.0, 2.0],
        xs_paper: &[0.0, 4.0, 8.0, 12.0, 16.0, 20.0],
        base: &[
            UPDATE_INTENSIVE,
            Set::Theta(0.8),
            Set::RoOps(1000),
            Set::RoHint(false),
        ],
        series: per_protocol!(),
        metric: Metric::Throughput,
        needs: None,
    },
    Figure {
        workload: Workload::Ycsb,
        name: "heterogeneous-read-only",
        title: "Heterogeneous workload, READ ONLY hint",
        paper: "Fig. 9",
        axis: Axis::RoThreads,
        xs: &[0.0, 1.0, 2.0],
        xs_paper: &[0.0, 4.0, 8.0, 12.0, 16.0, 20.0],
        base: &[
            UPDATE_INTENSIVE,
            Set::Theta(0.8),
            Set::RoOps(1000),
            Set::RoHint(true),
        ],
        series: per_protocol!(),
        metric: Metric::Throughput,
        needs: None,
    },
    Figure {
        workload: Workload::Tpcc,
        name: "tpcc",
        title: "TPC-C",
        paper: "Fig. 10",
        axis: Axis::Threads,
        xs: &[1.0, 2.0],
        xs_paper: &[1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 32.0, 40.0],
        base: &[],
        series: per_protocol!(),
        metric: Metric::Throughput,
        needs: None,
    },
    Figure {
        workload: Workload::Ycsb,
        name: "non-inline",
        title: "Non-inline attributes: update-intensive YCSB",
        paper: "Fig. 11",
        axis: Axis::TextAttrs,
        xs: &[0.0, 1.0, 5.0, 10.0],
        xs_paper: &[0.0, 10.0, 20.0, 50.0, 100.0],
        base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE],
        series: &[
            Series {
                label: "shared (reference counted)",
                settings: &[],
            },
            Series {
                label: "copied in full",
                settings: &[Set::NonInline(NonInline::Copy)],
            },
        ],
        metric: Metric::Throughput,
        needs: None,
    },
    Figure {
        workload: Workload::Ycsb,
        name: "contention-aborts",
        title: "Contention: abort rate, update-intensive YCSB",
        paper: "Fig. 7",
        axis: Axis::Theta,
        xs: THETAS,
        xs_paper: THETAS,
        base: &[UPDATE_INTENSIVE],
        series: per_protocol!(),
        metric: Metric::AbortRate,
        needs: None,
    },
    Figure {
        workload: Workload::Ycsb,
        name: "non-inline-memory",
        title: "Non-inline attributes: memory, update-intensive YCSB",
        paper: "Fig. 11",
        axis: Axis::TextAttrs,
        xs: &[0.0, 1.0, 5.0, 10.0],
        xs_paper: &[0.0, 10.0, 20.0, 50.0, 100.0],
        base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE],
        series: &[
            Series {
                label: "shared (reference counted)",
                settings: &[],
            },
            Series {
                label: "copied in full",
                settings: &[Set::NonInline(NonInline::Copy)],
            },
        ],
        metric: Metric::BytesPerRow,
        needs: None,
    },
    Figure {
        workload: Workload::Ycsb,
        name: "chain-ordering",
        title: "Version chain ordering: update-intensive YCSB",
        paper: "Fig. 12",
        axis: Axis::Theta,
        xs: THETAS,
        xs_paper: THETAS,
        base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE],
        series: &[
            Series {
                label: "N2O",
                settings: &[Set::VersionStorage(VersionStorage::AppendNewToOld)],
            },
            Series {
                label: "O2N",
                settings: &[Set::VersionStorage(VersionStorage::AppendOldToNew)],
            },
        ],
        metric: Metric::Throughput,
        needs: None,
    },
    Figure {
        workload: Workload::Ycsb,
        name: "footprint",
        title: "Transaction footprint: operations per transaction",
        paper: "Fig. 13",
        axis: Axis::OpsPerTxn,
        xs: &[1.0, 10.0, 100.0],
        xs_paper: &[1.0, 10.0, 100.0, 1000.0],
        base: &[SECTION_7_3_TO_7_5, Set::Theta(0.2)],
        series: &[
            Series {
                label: "read-intensive",
                settings: &[READ_INTENSIVE],
            },
            Series {
                label: "update-intensive",
                settings: &[UPDATE_INTENSIVE],
            },
        ],
        metric: Metric::Throughput,
        needs: None,
    },
    Figure {
        workload: Workload::Ycsb,
        name: "attributes-modified",
        title: "Attributes modified: update-intensive YCSB",
        paper: "Fig. 14",
        axis: Axis::ModifyAttrs,
        xs: &[1.0, 2.0, 5.0, 10.0],
        xs_paper: &[1.0, 10.0, 25.0, 50.0, 100.0],
        base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE, Set::Attributes(10)],
        series: STORAGE_SERIES,
        metric: Metric::Throughput,
        needs: None,
    },
    Figure {
        workload: Workload::Ycsb,
        name: "attributes-accessed",
        title: "Attributes accessed: read-only YCSB",
        paper: "Fig. 15",
        axis: Axis::ReadAttrs,
        xs: &[1.0, 2.0, 5.0, 10.0],
        xs_paper: &[1.0, 10.0, 25.0, 50.0, 100.0],
        base: &[SECTION_7_3_TO_7_5, READ_ONLY, Set::Attributes(10)],
        series: STORAGE_SERIES,
        metric: Metric::Throughput,
        needs: None,
    },
    Figure {
        workload: Workload::Ycsb,
        name: "memory-spaces",
        title: "Memory allocation: separate memory spaces",
        paper: "Fig. 16",
        axis: Axis::Threads,
        xs: &[1.0, 2.0],
        xs_paper: &[1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 32.0, 40.0],
        base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE],
        series: &[
            Series {
                label: "global allocator",
                settings: &[Set::MemorySpaces(MemorySpaces::System)],
            },
            Series {
                label: "1 space",
                settings: &[Set::MemorySpaces(MemorySpaces::Spaces {
                    count: 1,
                    increment: MemorySpaces::DEFAULT_INCREMENT,
                })],
            },
            Series {
                label: "2 spaces",
                settings: &[Set::MemorySpaces(MemorySpaces::Spaces {
                    count: 2,
                    increment: MemorySpaces::DEFAULT_INCREMENT,
                })],
            },
            Series {
                label: "4 spaces",
                settings: &[Set::MemorySpaces(MemorySpaces::Spaces {
                    count: 4,
                    increment: MemorySpaces::DEFAULT_INCREMENT,
                })],
            },
            Series {
                label: "8 spaces",
                settings: &[Set::MemorySpaces(MemorySpaces::Spaces {
                    count: 8,
                    increment: MemorySpaces::DEFAULT_INCREMENT,
                })],
            },
        ],
        metric: Metric::Throughput,
        needs: None,
    },
    Figure {
        workload: Workload::Ycsb,
        name: "gc",
        title: "Tuple-level vs. transaction-level GC: update-intensive YCSB",
        paper: "Fig. 18, 20",
        axis: Axis::Threads,
        xs: &[1.0, 2.0],
        xs_paper: &[1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 32.0, 40.0],
        base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE],
        series: &[
            Series {
                label: "transaction-level",
                settings: &[Set::Gc(GcPolicy::TransactionLevel)],
            },
            Series {
                label: "tuple-level VAC",
                settings: &[Set::Gc(GcPolicy::Vacuum)],
            },
            Series {
                label: "tuple-level COOP",
                settings: &[
                    Set::Gc(GcPolicy::Cooperative),
                    Set::VersionStorage(VersionStorage::AppendOldToNew),
                ],
            },
        ],
        metric: Metric::Throughput,
        needs: None,
    },
    Figure {
        workload: Workload::Ycsb,
        name: "index-pointers",
        title: "Index management: secondary indexes, update-intensive YCSB",
        paper: "Fig. 22",
        axis: Axis::SecondaryIndexes,
        xs: &[1.0, 2.0, 5.0],
        xs_paper: &[1.0, 2.0, 4.0, 6.0, 8.0, 10.0],
        base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE],
        series: &[
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
        ],
        metric: Metric::Throughput,
        needs: None,
    },
    Figure {
        workload: Workload::Ycsb,
        name: "presets",
        title: "Configuration comparison: Table 1, update-intensive YCSB",
        paper: "Table 1, Fig. 24",
        axis: Axis::Threads,
        xs: &[1.0, 2.0],
        xs_paper: &[1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 32.0, 40.0],
        base: &[UPDATE_INTENSIVE],
        series: PRESET_SERIES,
        metric: Metric::Throughput,
        needs: None,
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

/// The point a series of a figure starts from.
fn base_point(f: &Figure, s: &Series, records: u64, seed: u64) -> Point {
    let mut p = Point {
        opts: Options::default(),
        ycsb: YcsbConfig {
            records,
            seed,
            ..YcsbConfig::default()
        },
    };
    for set in f.base.iter().chain(s.settings) {
        set.apply(&mut p);
    }
    p
}

/// Why series `s` cannot run yet, if it cannot.
fn series_blocker(f: &Figure, s: &Series, xs: &[f64]) -> Option<String> {
    let mut p = base_point(f, s, 1000, 1);
    if let Err(e) = p.opts.validate() {
        return Some(e.to_string());
    }
    // The workload's own parts (e.g. secondary indexes) at the first x.
    if let Some(&x) = xs.first() {
        f.axis.set(x).apply(&mut p);
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
        .filter_map(|s| series_blocker(f, s, f.xs).map(|b| format!("{} ({b})", s.label)))
        .collect();
    if blocked.is_empty() {
        "ready".into()
    } else if blocked.len() == f.series.len() {
        format!("needs {}", blocked.join("; "))
    } else {
        format!("partial: skips {}", blocked.join("; "))
    }
}

pub fn run(a: &ReproduceArgs) -> Result<ExitCode, UsageError> {
    if a.list {
        for f in FIGURES {
            println!(
                "{:<24} {:<18} {}  [{}]",
                f.name,
                f.paper,
                f.title,
                status(f)
            );
        }
        for (name, paper, title) in crate::reproduce_vdriver::FIGURES {
            let status = crate::reproduce_vdriver::status(name);
            println!("{name:<24} {paper:<18} {title}  [{status}]");
        }
        for (name, paper, title) in crate::reproduce_ermia::FIGURES {
            let status = crate::reproduce_ermia::status(name);
            println!("{name:<24} {paper:<18} {title}  [{status}]");
        }
        for (name, paper, title) in crate::reproduce_ermia_hybrid::FIGURES {
            println!("{name:<24} {paper:<18} {title}  [ready]");
        }
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
    let Some(fig) = FIGURES.iter().find(|f| f.name == name) else {
        let names: Vec<&str> = (FIGURES.iter().map(|f| f.name))
            .chain(crate::reproduce_vdriver::FIGURES.iter().map(|f| f.0))
            .chain(crate::reproduce_ermia::FIGURES.iter().map(|f| f.0))
            .chain(crate::reproduce_ermia_hybrid::FIGURES.iter().map(|f| f.0))
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
    let duration = a.duration.unwrap_or(if a.paper_scale { 10.0 } else { 2.0 });
    if !(duration > 0.0 && duration.is_finite()) {
        return Err(UsageError(format!(
            "--duration must be a positive number of seconds, got {duration}"
        )));
    }
    let warmup = a.warmup.unwrap_or((duration / 4.0).min(1.0));
    if !(warmup >= 0.0 && warmup.is_finite()) {
        return Err(UsageError(format!(
            "--warmup must be zero or more seconds, got {warmup}"
        )));
    }
    let records = a
        .records
        .unwrap_or(if a.paper_scale { 10_000_000 } else { 100_000 });
    // One database at a time; about 310 bytes a row at 10 columns (see
    // `bench ycsb`), more with the wide rows some figures sweep.
    crate::check_memory(
        &format!("{name} with {records} records"),
        records as f64 * 320.0,
    )?;
    let xs = if a.paper_scale { fig.xs_paper } else { fig.xs };
    let runnable: Vec<&Series> = fig
        .series
        .iter()
        .filter(|s| match series_blocker(fig, s, xs) {
            None => true,
            Some(why) => {
                eprintln!("note: skipping series {:?}: {why}", s.label);
                false
            }
        })
        .collect();
    if runnable.is_empty() {
        return Err(UsageError(format!("figure {name} {}", status(fig))));
    }
    // Check every point before running any.
    for s in &runnable {
        for &x in xs {
            let mut p = base_point(fig, s, records, a.seed);
            if let Some(t) = a.threads {
                Set::Threads(t).apply(&mut p);
            }
            fig.axis.set(x).apply(&mut p);
            p.ycsb
                .validate()
                .map_err(|e| UsageError(format!("{name}, {} at x = {x}: {e}", s.label)))?;
        }
    }
    crate::check_output_dir("out", &a.out)?;
    let driver = DriverConfig {
        warmup: Duration::from_secs_f64(warmup),
        duration: Duration::from_secs_f64(duration),
        series: false,
    };
    let csv_path = a.out.join(format!("{name}.csv"));
    let png_path = a.out.join(format!("{name}.png"));
    let mut rows = Vec::new();
    let mut lines = Vec::new();
    let total = runnable.len() * xs.len();
    for s in &runnable {
        let mut line = Line {
            label: s.label.to_string(),
            points: Vec::new(),
        };
        for &x in xs {
            let mut p = base_point(fig, s, records, a.seed);
            if let Some(t) = a.threads {
                Set::Threads(t).apply(&mut p);
            }
            fig.axis.set(x).apply(&mut p);
            eprintln!(
                "[{}/{total}] {name}: {} {} = {x}",
                rows.len() + 1,
                s.label,
                fig.axis.name()
            );
            let r = match run_point(fig, &p, &driver, a.paper_scale) {
                Ok(r) => r,
                Err(WorkloadError::Config(m)) | Err(WorkloadError::NotImplemented(m)) => {
                    return Err(UsageError(m))
                }
                Err(e) => {
                    eprintln!("error: {name}, {} at x = {x}: {e}", s.label);
                    return Ok(ExitCode::FAILURE);
                }
            };
            line.points.push((x, metric(fig.metric, &r)));
            rows.push(Row::new(fig, s.label, x, p.ycsb.threads, &r));
            if strata_workloads::driver::interrupted() {
                break;
            }
        }
        lines.push(line);
        if strata_workloads::driver::interrupted() {
            // Ctrl-C: the points run so far, written and plotted.
            break;
        }
    }
    if let Err(e) = write_csv(&csv_path, &rows) {
        eprintln!("error: cannot write {}: {e}", csv_path.display());
        return Ok(ExitCode::FAILURE);
    }
    let title = plot_title(fig, records);
    if let Err(e) = line_chart_ticks(
        &png_path,
        &title,
        fig.axis.label(),
        fig.metric.label(),
        &lines,
        XTicks::Values(xs),
    ) {
        eprintln!("error: {e}");
        return Ok(ExitCode::FAILURE);
    }
    println!("wrote {} and {}", csv_path.display(), png_path.display());
    Ok(ExitCode::SUCCESS)
}

/// A figure's plot title: what, which figure of the paper, and its size.
fn plot_title(fig: &Figure, records: u64) -> String {
    let size = match fig.workload {
        Workload::Tpcc => "one warehouse per thread".to_string(),
        _ => format!("{records} records"),
    };
    format!("{} ({}; {size})", fig.title, fig.paper)
}

fn run_point(
    f: &Figure,
    p: &Point,
    driver: &DriverConfig,
    paper_scale: bool,
) -> Result<YcsbReport, WorkloadError> {
    let db = Database::open(p.opts.clone())?;
    if f.workload == Workload::Tpcc {
        // One warehouse per thread; a smaller catalogue unless --paper-scale.
        let base = TpccConfig::spec(p.ycsb.threads as u32);
        let cfg = TpccConfig {
            threads: p.ycsb.threads,
            seed: p.ycsb.seed,
            items: if paper_scale { base.items } else { 10_000 },
            customers: if paper_scale { base.customers } else { 300 },
            ..base
        };
        let r = tpcc::run(db, &cfg, driver, &mut BarObserver::new(false))?;
        // Report it in the YCSB shape: the mix's five types as one.
        let mut run = r.run;
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
        return Ok(YcsbReport {
            engine: "strata",
            load_s: r.load_s,
            run,
            memory: None,
        });
    }
    let engine = ycsb::StrataYcsb::new(db, &p.ycsb)?;
    ycsb::run(&engine, &p.ycsb, driver, &mut BarObserver::new(false))
}

fn metric(m: Metric, r: &YcsbReport) -> f64 {
    let of = |t: &str| r.run.of_type(t).map_or(0.0, |t| t.committed_per_s);
    match m {
        Metric::Throughput => of("ycsb"),
        Metric::ReadOnlyThroughput => of("read-only-extra"),
        Metric::AbortRate => r.run.abort_rate,
        Metric::BytesPerRow => r.memory.as_ref().map_or(0.0, |m| m.bytes_per_row),
    }
}

/// One CSV row.
struct Row {
    figure: &'static str,
    series: &'static str,
    x_name: &'static str,
    x: f64,
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
    threads: usize,
}

impl Row {
    fn new(f: &Figure, series: &'static str, x: f64, threads: usize, r: &YcsbReport) -> Self {
        let main = r.run.of_type("ycsb");
        let m = r.memory.clone().unwrap_or_default();
        Row {
            figure: f.name,
            series,
            x_name: f.axis.name(),
            x,
            committed_per_s: main.map_or(0.0, |t| t.committed_per_s),
            aborted_per_s: main.map_or(0.0, |t| t.aborted_per_s),
            abort_rate: r.run.abort_rate,
            read_only_per_s: metric(Metric::ReadOnlyThroughput, r),
            p50_us: main.map_or(0.0, |t| t.latency.p50_us),
            p99_us: main.map_or(0.0, |t| t.latency.p99_us),
            p999_us: main.map_or(0.0, |t| t.latency.p999_us),
            bytes_per_row: m.bytes_per_row,
            version_bytes: m.version_bytes,
            longest_chain: m.longest_chain,
            threads,
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
        "threads",
    ])?;
    for r in rows {
        w.write_record([
            r.figure.to_string(),
            r.series.to_string(),
            r.x_name.to_string(),
            r.x.to_string(),
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
            r.threads.to_string(),
        ])?;
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each figure's label names the paper's figure whose caption its title
    /// carries (the captions' words, from the paper's text): a mislabelled
    /// figure (the GC experiments were once called 17-19) fails here.
    #[test]
    fn figure_labels_match_the_papers_captions() {
        let captions: &[(u32, &[&str])] = &[
            (6, &["Scalability"]),
            (7, &["Contention"]),
            (8, &["Heterogeneous", "no READ ONLY"]),
            (9, &["Heterogeneous", "READ ONLY hint"]),
            (10, &["TPC-C"]),
            (11, &["Non-inline attributes"]),
            (12, &["Version chain ordering"]),
            (13, &["Transaction footprint"]),
            (14, &["Attributes modified"]),
            (15, &["Attributes accessed"]),
            (16, &["Memory allocation"]),
            (18, &["Tuple-level"]),
            (20, &["Tuple-level vs. transaction-level"]),
            (22, &["Index management"]),
            (24, &["Configuration comparison"]),
        ];
        for f in FIGURES {
            let numbers: Vec<u32> = f
                .paper
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|n| n.parse().ok())
                .filter(|&n| n != 1 || !f.paper.starts_with("Table 1"))
                .collect();
            assert!(!numbers.is_empty(), "{}: {}", f.name, f.paper);
            for n in numbers {
                let (_, words) = captions
                    .iter()
                    .find(|(c, _)| *c == n)
                    .unwrap_or_else(|| panic!("{}: Fig. {n} is not one we reproduce", f.name));
                for w in *words {
                    assert!(
                        f.title.to_lowercase().contains(&w.to_lowercase()),
                        "{} is labelled Fig. {n} but its title {:?} lacks {w:?}",
                        f.name,
                        f.title
                    );
                }
            }
            let protocol = base_point(f, &f.series[0], 1000, 1).opts.protocol;
            let section_7_3 = (11..=23).contains(&f.paper_figure());
            if section_7_3 && f.name != "presets" {
                assert_eq!(protocol, Protocol::Mvto, "{}: §7.3-7.5 run MVTO", f.name);
            }
        }
    }

    /// Every figure, drawn from made-up points at its own x values (the
    /// scaled and the paper's): its title, and tick labels that are
    /// exactly those values, cleanly printed (no float noise, no
    /// fractional ticks on integer axes).
    #[test]
    fn every_figure_draws_its_title_and_its_x_values_as_ticks() {
        use crate::plot::{line_chart_svg, XTicks};
        for f in FIGURES {
            for xs in [f.xs, f.xs_paper] {
                let lines: Vec<Line> = (f.series.iter().enumerate())
                    .map(|(i, s)| Line {
                        label: s.label.to_string(),
                        points: xs.iter().map(|&x| (x, 1000.0 * (i + 1) as f64)).collect(),
                    })
                    .collect();
                let title = plot_title(f, 1000);
                let svg = line_chart_svg(&title, f.axis.label(), "y", &lines, XTicks::Values(xs))
                    .unwrap();
                let texts: Vec<String> = svg
                    .split("<text")
                    .skip(1)
                    .filter_map(|t| {
                        let body = &t[t.find('>')? + 1..];
                        Some(body[..body.find("</text>")?].trim().to_string())
                    })
                    .collect();
                let has = |t: &str| texts.iter().any(|x| x == t);
                assert!(has(&title.replace('&', "&amp;")), "{}: {texts:?}", f.name);
                for s in f.series {
                    assert!(
                        has(&s.label.replace('&', "&amp;")),
                        "{}: {}",
                        f.name,
                        s.label
                    );
                }
                let integers = xs.iter().all(|x| x.fract() == 0.0);
                if xs.len() <= 12 {
                    for &x in xs {
                        let want = if integers {
                            format!("{x:.0}")
                        } else {
                            format!("{x}")
                        };
                        assert!(has(&want), "{}: tick {want} in {texts:?}", f.name);
                    }
                }
                assert!(
                    !texts
                        .iter()
                        .any(|t| t.contains("0000") || t.contains("9999")),
                    "{}: {texts:?}",
                    f.name
                );
            }
        }
    }

    #[test]
    fn figure_names_are_unique_and_every_figure_has_a_status() {
        let mut names: Vec<&str> = FIGURES.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FIGURES.len());
        for f in FIGURES {
            assert!(!f.xs.is_empty() && !f.xs_paper.is_empty(), "{}", f.name);
            let s = status(f);
            assert!(!s.is_empty());
        }
        // Protocols exist on main: these run today.
        for name in [
            "scalability",
            "contention",
            "heterogeneous",
            "non-inline",
            "index-pointers",
            "tpcc",
        ] {
            let f = FIGURES.iter().find(|f| f.name == name).unwrap();
            assert_eq!(status(f), "ready", "{name}");
        }
        let presets = FIGURES.iter().find(|f| f.name == "presets").unwrap();
        assert_eq!(status(presets), "ready");
        assert_eq!(presets.series.len(), Preset::ALL.len());
        let mut p = base_point(presets, &presets.series[4], 100, 1);
        presets.axis.set(2.0).apply(&mut p);
        assert_eq!(p.opts, Options::preset(Preset::Hekaton));
    }

    #[test]
    fn series_settings_reach_the_configuration() {
        let f = FIGURES.iter().find(|f| f.name == "heterogeneous").unwrap();
        let s = &f.series[1];
        let mut p = base_point(f, s, 500, 3);
        f.axis.set(2.0).apply(&mut p);
        assert_eq!(p.opts.protocol, Protocol::Mvocc);
        assert_eq!(p.ycsb.ro_threads, 2);
        assert!(!p.ycsb.ro_hint);
        assert_eq!(p.ycsb.read_ratio, 0.2);
        assert_eq!(p.ycsb.theta, 0.8);
        assert_eq!(p.ycsb.records, 500);
        // Fig. 11's second series copies text attributes in full.
        let f = FIGURES.iter().find(|f| f.name == "non-inline").unwrap();
        let copied = base_point(f, &f.series[1], 500, 3);
        assert_eq!(copied.opts.non_inline, NonInline::Copy);
        assert_eq!(
            base_point(f, &f.series[0], 500, 3).opts.non_inline,
            NonInline::Shared
        );
    }
}
