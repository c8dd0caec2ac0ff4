//! The study-shaped figure: one parameter swept over series of settings.
//!
//! ```text
//!   figure = sweep of one parameter (x)  ×  series (settings per line)
//!            over a base configuration, plotting one metric per panel (y)
//!
//!   for trial: for s in series: for x in xs (every other trial backwards):
//!       open a fresh database (s's options), load, run, record a row
//!   ──> <out>/<figure>.csv, one PNG per panel; the measured points go back
//!       to `reproduce` for the claims
//! ```
//!
//! A [`Sweep`] is data: its workload (YCSB or TPC-C), its axis, its x values
//! (scaled to a 2-core machine, and the paper's own with `--paper-scale`),
//! its series as lists of [`Set`]tings, its panels (metrics drawn from the
//! same runs). `--paper-scale` also applies the sweep's `paper_base` (the
//! paper's thread count, its warehouses). A sweep that needs a measurement
//! the engine does not take yet names it in `needs` and refuses to run; a
//! series whose `Options` do not validate is skipped with its reason, never
//! run half-configured.

use std::path::Path;

use strata::{
    Database, GcPolicy, IndexKind, IndexPointers, MemorySpaces, MvtoLockedRead, NonInline, Options,
    Preset, Protocol, VersionStorage,
};
use strata_workloads::driver::{DriverConfig, TypeReport};
use strata_workloads::tpcc::{self, TpccConfig, WarehousePick};
use strata_workloads::ycsb::{self, YcsbConfig, YcsbReport};
use strata_workloads::WorkloadError;

use super::findings::{Measured, Metric};
use super::registry::{Facts, Figure, Prepared, Setup};
use super::{FigureError, Outcome, ReproduceArgs};
use crate::plot::{line_chart_ticks, Line, XTicks};
use crate::progress::BarObserver;
use crate::UsageError;

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
    /// TPC-C: the secondary indexes' structure (MV-PBT Fig. 14).
    IndexKind(IndexKind),
    /// TPC-C: each transaction's warehouse, fixed or drawn (ERMIA Fig. 8).
    WarehousePick(WarehousePick),
}

/// A run's whole configuration.
#[derive(Debug, Clone)]
pub struct Point {
    pub opts: Options,
    pub ycsb: YcsbConfig,
    /// TPC-C warehouses (0: one per thread).
    pub warehouses: u32,
    pub stock_scan: bool,
    /// TPC-C's secondary indexes.
    pub index_kind: IndexKind,
    pub warehouse_pick: WarehousePick,
}

impl Set {
    pub fn apply(self, p: &mut Point) {
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
            Set::IndexKind(v) => p.index_kind = v,
            Set::WarehousePick(v) => p.warehouse_pick = v,
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
    /// TPC-C warehouses (the dataset's size).
    Warehouses,
    /// Seconds into one run: one point per second (x values unused).
    Time,
}

impl Axis {
    pub fn label(self) -> &'static str {
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
            Axis::Warehouses => "warehouses",
            Axis::Time => "time (s)",
        }
    }
    pub fn name(self) -> &'static str {
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
            Axis::Warehouses => "warehouses",
            Axis::Time => "seconds",
        }
    }
    /// The setting that puts a run at `x`; none for time, which a run
    /// sweeps by itself.
    pub fn set(self, x: f64) -> Option<Set> {
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
            Axis::Warehouses => Set::Warehouses(n as u32),
            Axis::Time => return None,
        })
    }
}

/// "The DBMS expands each memory space in 512 KB increments" (§7.3).
pub const PAPER_SPACE_INCREMENT: usize = 512 * 1024;

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

/// A figure that sweeps one parameter over series of settings.
pub struct Sweep {
    pub workload: Workload,
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
    /// A measurement the engine does not take yet.
    pub needs: Option<&'static str>,
}

/// The fields most sweeps share; each entry overrides what it needs.
pub const DEFAULT: Sweep = Sweep {
    workload: Workload::Ycsb,
    axis: Axis::Threads,
    xs: &[],
    xs_paper: &[],
    base: &[],
    paper_base: &[],
    series: &[],
    metric: Metric::Throughput,
    more: &[],
    needs: None,
};

impl Sweep {
    /// Every panel's metric, the first one first.
    pub fn panels(&self) -> impl Iterator<Item = Metric> + '_ {
        std::iter::once(self.metric).chain(self.more.iter().copied())
    }

    /// The point a series starts from.
    pub fn base_point(&self, s: &Series, records: u64, seed: u64, paper_scale: bool) -> Point {
        let mut p = Point {
            // The study's SI+SSN is SSN on top of snapshot isolation (§7.2):
            // first updater wins on every write, as ERMIA's (not Strata's
            // default blind overwrites). Its MVTO aborts a read of any
            // write-locked version (§3.1), pinned here so that a change of
            // the engine's default cannot change the study's protocol.
            opts: Options::default()
                .ssn_blind_writes(false)
                .mvto_locked_read(MvtoLockedRead::Abort),
            ycsb: YcsbConfig {
                records,
                seed,
                ..YcsbConfig::default()
            },
            warehouses: 0,
            stock_scan: false,
            index_kind: IndexKind::Standard,
            warehouse_pick: WarehousePick::Fixed,
        };
        let paper: &[Set] = if paper_scale { self.paper_base } else { &[] };
        for set in self.base.iter().chain(paper).chain(s.settings) {
            set.apply(&mut p);
        }
        p
    }

    /// The whole configuration of one run of series `s` at `x`.
    fn point_at(&self, s: &Series, x: f64, a: &ReproduceArgs, records: u64) -> Point {
        let mut p = self.base_point(s, records, a.seed, a.paper_scale);
        if let Some(t) = a.threads {
            Set::Threads(t).apply(&mut p);
        }
        if let Some(set) = self.axis.set(x) {
            set.apply(&mut p);
        }
        p
    }

    /// The x values it runs at this scale (one placeholder for a time
    /// axis: the run itself sweeps time).
    pub fn xs_of(&self, paper_scale: bool) -> &'static [f64] {
        if self.axis == Axis::Time {
            return &[0.0];
        }
        if paper_scale {
            self.xs_paper
        } else {
            self.xs
        }
    }

    /// Why series `s` cannot run yet, if it cannot.
    fn series_blocker(&self, s: &Series, xs: &[f64]) -> Option<String> {
        let mut p = self.base_point(s, 1000, 1, false);
        if let Err(e) = p.opts.validate() {
            return Some(e.to_string());
        }
        // The workload's own parts (e.g. secondary indexes) at the first x.
        if let Some(&x) = xs.first() {
            if let Some(set) = self.axis.set(x) {
                set.apply(&mut p);
            }
            if let Err(e @ WorkloadError::NotImplemented(_)) = p.ycsb.validate() {
                return Some(e.to_string());
            }
        }
        None
    }

    /// A plot title: what, which figure of the paper, and its size.
    pub fn plot_title(&self, fig: &Figure, records: u64) -> String {
        let size = match self.workload {
            Workload::Tpcc if self.axis == Axis::Warehouses => {
                let p = self.base_point(&self.series[0], records, 1, false);
                format!("{} threads", p.ycsb.threads)
            }
            Workload::Tpcc => {
                let mut p = self.base_point(&self.series[0], records, 1, false);
                Set::Threads(1).apply(&mut p);
                match p.warehouses {
                    0 => "one warehouse per thread".to_string(),
                    1 => "1 warehouse".to_string(),
                    n => format!("{n} warehouses"),
                }
            }
            Workload::Ycsb => format!("{records} records"),
        };
        format!("{} ({}; {size})", fig.caption, fig.label)
    }

    /// Every metric a run records: the panels', then those the claims
    /// read that no panel plots, each once.
    fn metrics(&self, fig: &Figure) -> Vec<Metric> {
        let mut ms: Vec<Metric> = self.panels().collect();
        for m in (fig.claims.iter()).flat_map(|f| f.check.metrics().into_iter().flatten()) {
            if !ms.contains(&m) {
                ms.push(m);
            }
        }
        ms
    }
}

/// The share of TPC-C's standard mix that updates (NewOrder 45%, Payment
/// 43%, Delivery 4%).
const TPCC_UPDATE_SHARE: f64 = 0.92;

impl Setup for Sweep {
    fn series(&self, _fig: &Figure) -> Vec<String> {
        self.series.iter().map(|s| s.label.to_string()).collect()
    }

    fn xs(&self, _fig: &Figure, paper_scale: bool) -> Option<Vec<f64>> {
        (self.axis != Axis::Time).then(|| self.xs_of(paper_scale).to_vec())
    }

    fn facts(&self, _fig: &Figure, a: &ReproduceArgs) -> Facts {
        let mut f = Facts::default();
        for s in self.series {
            for &x in self.xs_of(a.paper_scale) {
                let p = self.point_at(s, x, a, 1000);
                let y = &p.ycsb;
                f.threads = f.threads.max(y.threads);
                f.theta = f.theta.max(y.theta);
                f.update_share = f.update_share.max(match self.workload {
                    Workload::Tpcc => TPCC_UPDATE_SHARE,
                    Workload::Ycsb => 1.0 - y.read_ratio,
                });
                if self.workload == Workload::Tpcc {
                    // The last point's: the contention the claims read.
                    f.threads_at_last = y.threads;
                    f.warehouses = match p.warehouses {
                        0 => y.threads as u32,
                        w => w,
                    };
                }
            }
        }
        f
    }

    fn prepare(
        &self,
        fig: &'static Figure,
        a: &ReproduceArgs,
    ) -> Result<Box<dyn Prepared>, UsageError> {
        Ok(Box::new(Plan::new(fig, a)?))
    }

    /// "ready", "partial: ..." or "needs ...".
    fn status(&self, fig: &Figure) -> String {
        if let Some(n) = self.needs {
            return format!("needs {n}, not implemented yet");
        }
        let blocked: Vec<String> = (self.series.iter())
            .filter_map(|s| {
                self.series_blocker(s, self.xs_of(false))
                    .map(|b| format!("{} ({b})", s.label))
            })
            .collect();
        let _ = fig;
        if blocked.is_empty() {
            "ready".into()
        } else if blocked.len() == self.series.len() {
            format!("needs {}", blocked.join("; "))
        } else {
            format!("partial: skips {}", blocked.join("; "))
        }
    }
}

/// A sweep's sizes and times at the chosen scale, checked before a run.
struct Plan {
    fig: &'static Figure,
    sweep: &'static Sweep,
    records: u64,
    trials: usize,
    xs: &'static [f64],
    driver: DriverConfig,
    series: Vec<&'static Series>,
}

impl Plan {
    fn new(fig: &'static Figure, a: &ReproduceArgs) -> Result<Plan, UsageError> {
        let name = fig.name;
        let Some(sweep) = fig.sweep() else {
            return Err(UsageError(format!("figure {name} is not a sweep")));
        };
        if let Some(n) = sweep.needs {
            return Err(UsageError(format!(
                "figure {name} needs {n}, not implemented yet"
            )));
        }
        let time = sweep.axis == Axis::Time;
        // `all` runs shorter points so that every paper's figures, three
        // trials each, fit in about an hour and a half on 2 cores.
        let all = a.all();
        let duration = a.duration.unwrap_or(match (a.paper_scale, time, all) {
            (true, true, _) => 120.0,
            (true, false, _) => 10.0,
            (false, true, _) => 8.0,
            (false, false, false) => 2.0,
            (false, false, true) => 1.0,
        });
        let duration = crate::seconds("duration", duration)?;
        if duration.is_zero() {
            return Err(UsageError("--duration must be more than 0 seconds".into()));
        }
        let warmup = crate::seconds(
            "warmup",
            a.warmup.unwrap_or((duration.as_secs_f64() / 4.0).min(1.0)),
        )?;
        let trials = a.trials()?;
        let records = a
            .records
            .unwrap_or(if a.paper_scale { 10_000_000 } else { 100_000 });
        let xs = sweep.xs_of(a.paper_scale);
        let series: Vec<&Series> = (sweep.series.iter())
            .filter(|s| match sweep.series_blocker(s, xs) {
                None => true,
                Some(why) => {
                    eprintln!("note: {name}: skipping series {:?}: {why}", s.label);
                    false
                }
            })
            .collect();
        if series.is_empty() {
            return Err(UsageError(format!("figure {name} {}", fig.status())));
        }
        // Check every point before running any; one database at a time,
        // sized by its widest row (about 310 bytes at 10 integer columns,
        // see `bench ycsb`).
        let mut widest = 0.0f64;
        let mut most_threads = 0;
        for s in &series {
            for &x in xs {
                let p = sweep.point_at(s, x, a, records);
                p.ycsb
                    .validate()
                    .map_err(|e| UsageError(format!("{name}, {} at x = {x}: {e}", s.label)))?;
                let y = &p.ycsb;
                widest = widest
                    .max(230.0 + 8.0 * y.attributes as f64 + 110.0 * y.text_attributes as f64);
                most_threads = most_threads.max(y.threads + y.ro_threads);
            }
        }
        if sweep.workload == Workload::Ycsb {
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
            fig,
            sweep,
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

    /// What ran, for the report: sizes, times, trials and threads.
    fn describe(&self) -> String {
        let sw = self.sweep;
        let threads = (self.series.first())
            .map(|first| sw.base_point(first, self.records, 1, false).ycsb.threads)
            .unwrap_or(0);
        let size = match sw.workload {
            Workload::Tpcc => "TPC-C".to_string(),
            Workload::Ycsb => format!("{} records", self.records),
        };
        format!(
            "Ran {size}, {} s per point after {} s of warm-up, {} trial(s){}.",
            self.driver.duration.as_secs_f64(),
            self.driver.warmup.as_secs_f64(),
            self.trials,
            if sw.axis == Axis::Threads {
                String::new()
            } else {
                format!(", {threads} worker threads")
            },
        )
    }
}

impl Prepared for Plan {
    fn estimate_s(&self) -> f64 {
        // A load per run: 100,000 YCSB rows, or TPC-C's smaller catalogue.
        let load = match self.sweep.workload {
            Workload::Ycsb => 0.5,
            Workload::Tpcc => 1.5,
        };
        let run = self.driver.duration.as_secs_f64() + self.driver.warmup.as_secs_f64() + load;
        (self.series.len() * self.xs.len() * self.trials) as f64 * run
    }

    /// Runs every series at every x (and trial), writes the CSV and a PNG
    /// per panel.
    fn run(&self, a: &ReproduceArgs) -> Result<Outcome, FigureError> {
        let (fig, sw) = (self.fig, self.sweep);
        let name = fig.name;
        let mut rows = Vec::new();
        let mut measured = Measured::default();
        let total = self.series.len() * self.xs.len() * self.trials;
        let mut done = 0;
        // Trials are the outer loop, and every other round runs the points
        // backwards: this VM (and any shared machine) drifts between
        // speed modes that last tens of seconds, and a point whose trials
        // ran back to back could land all of them in one mode. Spread
        // over the whole figure, a mode hits every point alike.
        let cells: Vec<(&Series, f64)> = (self.series.iter().copied())
            .flat_map(|s| self.xs.iter().map(move |&x| (s, x)))
            .collect();
        let mut results: Vec<Vec<(usize, usize, Ran)>> = cells.iter().map(|_| Vec::new()).collect();
        'trials: for trial in 0..self.trials {
            let order: Vec<usize> = if trial % 2 == 0 {
                (0..cells.len()).collect()
            } else {
                (0..cells.len()).rev().collect()
            };
            for c in order {
                let (s, x) = cells[c];
                let p = sw.point_at(s, x, a, self.records);
                done += 1;
                eprintln!(
                    "[{done}/{total}] {name}: {} {} = {x}{}",
                    s.label,
                    sw.axis.name(),
                    if self.trials > 1 {
                        format!(", trial {}", trial + 1)
                    } else {
                        String::new()
                    }
                );
                let r = match run_point(sw, &p, &self.driver, a.paper_scale) {
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
                results[c].push((trial, p.ycsb.threads, r));
                if strata_workloads::driver::interrupted() {
                    // Ctrl-C: the points run so far, written and plotted.
                    break 'trials;
                }
            }
        }
        for (&(s, x), trials) in cells.iter().zip(&results) {
            for (trial, threads, r) in trials {
                rows.push(Row::new(fig, sw, s.label, x, trial + 1, *threads, r));
            }
            // Each trial on its own: the claims are judged per trial.
            for (trial, _, r) in trials {
                if sw.axis == Axis::Time {
                    for p in &r.report.run.series {
                        let values = vec![
                            (Metric::Throughput, p.committed_per_s),
                            (Metric::NewBytesPerTxn, p.new_bytes_per_txn),
                        ];
                        measured.push_sample(s.label, trial + 1, p.t_s, values);
                    }
                } else {
                    let values = (sw.metrics(fig).into_iter())
                        .map(|m| (m, value(m, r)))
                        .collect();
                    measured.push(s.label, x, values);
                }
            }
        }
        let csv = a.out.join(format!("{name}.csv"));
        write_csv(&csv, &rows)
            .map_err(|e| FigureError::Failed(format!("cannot write {}: {e}", csv.display())))?;
        let title = sw.plot_title(fig, self.records);
        let mut pngs = Vec::new();
        for (i, m) in sw.panels().enumerate() {
            let lines: Vec<Line> = (self.series.iter())
                .map(|s| Line {
                    label: s.label.to_string(),
                    points: measured.line(s.label, m),
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
            let ticks = match sw.axis {
                Axis::Time => XTicks::Auto,
                _ => XTicks::Values(self.xs),
            };
            line_chart_ticks(
                &png,
                &panel_title,
                sw.axis.label(),
                &m.label(),
                &lines,
                ticks,
            )
            .map_err(FigureError::Failed)?;
            pngs.push(png);
        }
        Ok(Outcome {
            files: vec![csv],
            pngs,
            measured,
            ran: self.describe(),
            own: Vec::new(),
        })
    }
}

/// One run's report, and for TPC-C its per-type reports (StockScan's
/// latency, each type's aborts).
struct Ran {
    report: YcsbReport,
    types: Vec<TypeReport>,
    /// The run's worker threads (the mix's, not StockScan's).
    threads: usize,
}

fn run_point(
    f: &Sweep,
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
            index_kind: p.index_kind,
            warehouse_pick: p.warehouse_pick,
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
            threads: p.ycsb.threads,
        });
    }
    let engine = ycsb::StrataYcsb::new(db, &p.ycsb)?;
    let report = ycsb::run(&engine, &p.ycsb, driver, &mut BarObserver::new(false))?;
    Ok(Ran {
        report,
        types: Vec::new(),
        threads: p.ycsb.threads,
    })
}

fn value(m: Metric, r: &Ran) -> f64 {
    let run = &r.report.run;
    let of = |t: &str| run.of_type(t).map_or(0.0, |t| t.committed_per_s);
    let ty = |name: &str| r.types.iter().find(|t| t.name == name);
    match m {
        Metric::Throughput => of("ycsb"),
        Metric::ThroughputPerThread => of("ycsb") / r.threads.max(1) as f64,
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
            let data: u64 = tpcc::WORKLOAD_OUTCOMES
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
        sw: &Sweep,
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
            x_name: sw.axis.name(),
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
            new_order_abort_rate: value(Metric::TypeAbortRate("new-order"), r),
            payment_abort_rate: value(Metric::TypeAbortRate("payment"), r),
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
