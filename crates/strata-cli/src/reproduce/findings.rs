//! The papers' claims, checked against what a run measured, trial by trial.
//!
//! Each figure names the claims its paper makes about it as [`Finding`]s:
//! the claim in the paper's words with its section or figure, a [`Check`]
//! that turns it into one number per trial (a ratio of two series, one
//! series' trend over the x axis, the spread of the series the paper ran,
//! or a plain value), and what the paper says that number is
//! ([`Expect`]). After the run every trial's number gets a verdict, and the
//! claim gets the trials' common verdict:
//!
//! ```text
//!   claim ──> Check ──(trial t's points)──> number_t ──(Expect)──> verdict_t
//!   "N2O ... 2.4–3.4× better"   N2O/O2N at θ 0.9    2.1  2.6  2.2
//!                                                   in direction, agrees, in direction
//!   verdicts all alike ──> that verdict; otherwise ──> undecided
//! ```
//!
//! A trial's verdict: `agrees` (inside the paper's band, or on the side of
//! 1 the paper states when it gives no number), `agrees in direction` (on
//! the band's side of 1, outside it, by at most twice the paper's effect),
//! `exaggerates` (on that side by more than twice the paper's effect: a
//! claimed 40% gain measured as 6x), `differs`. "About equal" is a
//! two-sided band ([`Expect::About`]): a ratio far below 1 differs as much
//! as one far above. A claim whose trials do not share one verdict is
//! `undecided`, never the luckier one; `not measured` when no trial
//! reached the series or x value it reads (e.g. after Ctrl-C).
//!
//! The invariant: a verdict is computed only from the run's own numbers
//! against the paper's stated numbers, never from a table of expected
//! results or a target of ours.

use std::collections::BTreeMap;

/// What the y value of a point is. Adding one: a variant here, its
/// `label` and `name`, and where a runner measures it (`sweep::value` for
/// the study's sweeps).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// Committed transactions/s of the mix.
    Throughput,
    /// The same, per worker thread: flat when throughput scales
    /// linearly with the threads.
    ThroughputPerThread,
    /// Committed transactions/s of the extra read-only threads.
    ReadOnlyThroughput,
    AbortRate,
    BytesPerRow,
    /// Mean StockScan latency in milliseconds (TPC-C with a StockScan
    /// thread).
    ScanLatencyMs,
    /// Conflict-abort rate of one TPC-C transaction type ("new-order",
    /// "payment"): the specified rollbacks do not count.
    TypeAbortRate(&'static str),
    /// New memory per committed transaction, each second (time axes): the
    /// version store's bytes allocated less those GC freed
    /// (`driver::SeriesPoint::new_bytes_per_txn`).
    NewBytesPerTxn,
    /// A figure's own measurement, by its label (a scan's time, a filter's
    /// false-positive rate).
    Named(&'static str),
}

impl Metric {
    pub fn label(self) -> String {
        match self {
            Metric::Throughput => "committed transactions/s".into(),
            Metric::ThroughputPerThread => "committed transactions/s per worker thread".into(),
            Metric::ReadOnlyThroughput => "read-only transactions/s".into(),
            Metric::AbortRate => "abort rate".into(),
            Metric::BytesPerRow => "bytes per row".into(),
            Metric::ScanLatencyMs => "StockScan latency (ms)".into(),
            Metric::TypeAbortRate(t) => format!("{t} conflict-abort rate"),
            Metric::NewBytesPerTxn => "new memory per transaction (bytes)".into(),
            Metric::Named(l) => l.into(),
        }
    }
    /// The file-name suffix of the panel that plots it.
    pub fn name(self) -> String {
        match self {
            Metric::Throughput => "throughput".into(),
            Metric::ThroughputPerThread => "per-thread".into(),
            Metric::ReadOnlyThroughput => "read-only".into(),
            Metric::AbortRate => "aborts".into(),
            Metric::BytesPerRow => "bytes".into(),
            Metric::ScanLatencyMs => "scan-latency".into(),
            Metric::TypeAbortRate(t) => format!("{t}-aborts"),
            Metric::NewBytesPerTxn => "memory".into(),
            Metric::Named(l) => l.replace(' ', "-"),
        }
    }
}

/// Where on the x axis a check reads its series.
#[derive(Debug, Clone, Copy)]
pub enum At {
    /// The largest x the run reached.
    Last,
    /// This x value.
    X(f64),
    /// The mean over every x (time series).
    Mean,
    /// The mean over the x values from this fraction of the series' x
    /// range on (0.5: the second half of a run).
    MeanFrom(f64),
    /// The mean over the x values up to this fraction of the range (0.5:
    /// the first half).
    MeanUpTo(f64),
    /// The largest value over every x.
    Max,
    /// The smallest value over every x ("regardless of ...").
    Min,
    /// The smallest value over the x values up to this one.
    MinUpTo(f64),
}

/// What the paper says the checked number is.
#[derive(Debug, Clone, Copy)]
pub enum Expect {
    /// A number the paper quotes, as a band (a single number gets a band
    /// of about ±10% around it; "45%–120% higher" is 1.45–2.2).
    Range(f64, f64),
    /// More than 1 (the paper says "higher", "better", "grows", with no
    /// number).
    Above1,
    /// Less than 1 ("lower", "drops").
    Below1,
    /// About equal: within `t`x either way (from 1/t to t). The paper says
    /// "the same", "similar", "stable".
    About(f64),
    /// At most this (the paper states a bound: "under 100").
    AtMost(f64),
    /// At least this ("more than 92%", "greater than 10^3").
    AtLeast(f64),
}

/// How a claim becomes one number per trial.
#[derive(Debug, Clone, Copy)]
pub enum Check {
    /// Series `a` over series `b` on `metric`.
    Ratio {
        metric: Metric,
        a: &'static str,
        b: &'static str,
        at: At,
    },
    /// One series' `a` metric over its `b` metric (TPC-C's Payment against
    /// NewOrder aborts).
    Within {
        series: &'static str,
        a: Metric,
        b: Metric,
        at: At,
    },
    /// One series at the last x over the same series at the first x.
    Trend {
        metric: Metric,
        series: &'static str,
    },
    /// Series `a`'s trend over series `b`'s: which grows faster.
    Growth {
        metric: Metric,
        a: &'static str,
        b: &'static str,
    },
    /// How `a` over `b` changes from one place to another: (a / b at
    /// `after`) over (a / b at `before`) ("degradation more sharply under
    /// skewed distributions": the LLT's cost in the skewed half against
    /// the uniform one).
    Change {
        metric: Metric,
        a: &'static str,
        b: &'static str,
        before: At,
        after: At,
    },
    /// The largest of `series` over the smallest at `at` (every series the
    /// run has when `series` is empty).
    Spread {
        metric: Metric,
        at: At,
        series: &'static [&'static str],
    },
    /// The smallest of `above` over the largest of `below`: above 1 when
    /// every one of `above` beats every one of `below` ("Oracle/MySQL and
    /// NuoDB perform the best ... Postgres and Hekaton the worst").
    Groups {
        metric: Metric,
        above: &'static [&'static str],
        below: &'static [&'static str],
        at: At,
    },
    /// One series' value itself (a rate, a chain length: not a ratio).
    Value {
        metric: Metric,
        series: &'static str,
        at: At,
    },
}

impl Check {
    /// Whether the number is a ratio (1 is "no difference"), so that a
    /// side of 1 means a direction.
    fn is_ratio(&self) -> bool {
        !matches!(self, Check::Value { .. })
    }

    /// The metrics it reads.
    pub fn metrics(&self) -> [Option<Metric>; 2] {
        match *self {
            Check::Ratio { metric, .. }
            | Check::Trend { metric, .. }
            | Check::Growth { metric, .. }
            | Check::Change { metric, .. }
            | Check::Spread { metric, .. }
            | Check::Groups { metric, .. }
            | Check::Value { metric, .. } => [Some(metric), None],
            Check::Within { a, b, .. } => [Some(a), Some(b)],
        }
    }

    /// The series labels it reads (none for a spread over every series).
    pub fn series(&self) -> Vec<&'static str> {
        match *self {
            Check::Ratio { a, b, .. } | Check::Growth { a, b, .. } | Check::Change { a, b, .. } => {
                vec![a, b]
            }
            Check::Within { series, .. }
            | Check::Trend { series, .. }
            | Check::Value { series, .. } => vec![series],
            Check::Spread { series, .. } => series.to_vec(),
            Check::Groups { above, below, .. } => above.iter().chain(below).copied().collect(),
        }
    }

    /// Where on the x axis it reads, if at one place.
    pub fn at(&self) -> Option<At> {
        match *self {
            Check::Ratio { at, .. }
            | Check::Within { at, .. }
            | Check::Spread { at, .. }
            | Check::Groups { at, .. }
            | Check::Value { at, .. } => Some(at),
            Check::Trend { .. } | Check::Growth { .. } | Check::Change { .. } => None,
        }
    }

    /// The x value it reads, if one (a run must have that very x).
    pub fn x(&self) -> Option<f64> {
        match self.at()? {
            At::X(x) => Some(x),
            At::Last
            | At::Mean
            | At::MeanFrom(_)
            | At::MeanUpTo(_)
            | At::Max
            | At::Min
            | At::MinUpTo(_) => None,
        }
    }
}

/// A claim of a paper about a figure.
#[derive(Debug, Clone, Copy)]
pub struct Finding {
    /// The paper's words.
    pub claim: &'static str,
    /// Where the paper says it: "§7.2, Fig. 10a".
    pub source: &'static str,
    pub check: Check,
    pub expect: Expect,
}

/// One point of a series: its x and, per metric, one value per trial.
#[derive(Debug, Clone)]
pub struct Point {
    pub x: f64,
    pub values: Vec<(Metric, Vec<f64>)>,
}

impl Point {
    /// Every trial's values of `m` here (empty if none yet).
    fn values_of(&mut self, m: Metric) -> &mut Vec<f64> {
        let j = match self.values.iter().position(|(k, _)| *k == m) {
            Some(j) => j,
            None => {
                self.values.push((m, Vec::new()));
                self.values.len() - 1
            }
        };
        &mut self.values[j].1
    }

    /// Trial `trial`'s value (0-based), if it measured one here (NaN
    /// holds a trial's place where it did not).
    fn trial(&self, m: Metric, trial: usize) -> Option<f64> {
        let (_, vs) = self.values.iter().find(|(k, _)| *k == m)?;
        vs.get(trial).copied().filter(|v| !v.is_nan())
    }
}

/// A run's measured points: series label -> points, each with every
/// trial's values.
#[derive(Debug, Default)]
pub struct Measured {
    pub points: BTreeMap<String, Vec<Point>>,
}

impl Measured {
    /// One trial's sample of a run over time, taken `t_s` seconds in: at
    /// the whole second it was meant for. A sampler's seconds drift by a
    /// few milliseconds from trial to trial; unrounded, each trial's
    /// samples would be points of their own, and every claim over time
    /// would pool the trials into one number instead of judging each.
    /// `trial` counts from 1; a trial with no sample in some second leaves
    /// its place there empty, and a second sample that rounds to the same
    /// second is dropped (a sampler slowed down by its own walk).
    pub fn push_sample(
        &mut self,
        series: &str,
        trial: usize,
        t_s: f64,
        values: Vec<(Metric, f64)>,
    ) {
        let p = self.point(series, t_s.round(), true);
        let slot = trial.saturating_sub(1);
        for (m, v) in values {
            let vs = p.values_of(m);
            if vs.len() <= slot {
                vs.resize(slot, f64::NAN);
                vs.push(v);
            }
        }
    }

    /// One trial's values at (series, x): the next trial of a point that
    /// is there already, else a new point after the series' others.
    pub fn push(&mut self, series: &str, x: f64, values: Vec<(Metric, f64)>) {
        let p = self.point(series, x, false);
        let mut seen = Vec::new();
        for (m, v) in values {
            // One value per metric per trial.
            if seen.contains(&m) {
                continue;
            }
            seen.push(m);
            p.values_of(m).push(v);
        }
    }

    /// The point of `series` at `x`; a new one goes in x order (`sorted`)
    /// or after the others.
    fn point(&mut self, series: &str, x: f64, sorted: bool) -> &mut Point {
        let pts = self.points.entry(series.to_string()).or_default();
        let i = match pts.iter().position(|p| (p.x - x).abs() < 1e-9) {
            Some(i) => i,
            None => {
                let at = if sorted {
                    pts.partition_point(|p| p.x < x)
                } else {
                    pts.len()
                };
                let values = Vec::new();
                pts.insert(at, Point { x, values });
                at
            }
        };
        &mut pts[i]
    }

    /// One series' points of `m`, averaged over the trials that measured
    /// them: what a plot draws.
    pub fn line(&self, series: &str, m: Metric) -> Vec<(f64, f64)> {
        self.points.get(series).map_or(Vec::new(), |pts| {
            pts.iter()
                .filter_map(|p| {
                    let (_, vs) = p.values.iter().find(|(k, _)| *k == m)?;
                    // (NaN holds the place of a trial with no value here.)
                    let vs: Vec<f64> = vs.iter().copied().filter(|v| !v.is_nan()).collect();
                    (!vs.is_empty()).then(|| (p.x, vs.iter().sum::<f64>() / vs.len() as f64))
                })
                .collect()
        })
    }

    /// The most trials any point has.
    pub fn trials(&self) -> usize {
        (self.points.values().flatten())
            .flat_map(|p| p.values.iter().map(|(_, vs)| vs.len()))
            .max()
            .unwrap_or(0)
    }

    fn value(&self, series: &str, m: Metric, at: At, trial: usize) -> Option<f64> {
        let pts = self.points.get(series)?;
        let of = |p: &Point| p.trial(m, trial);
        let mean =
            |vs: Vec<f64>| (!vs.is_empty()).then(|| vs.iter().sum::<f64>() / vs.len() as f64);
        match at {
            At::Last => pts.last().and_then(of),
            At::X(x) => pts.iter().find(|p| (p.x - x).abs() < 1e-9).and_then(of),
            At::Mean => mean(pts.iter().filter_map(of).collect()),
            At::MeanFrom(f) | At::MeanUpTo(f) => {
                let lo = pts.iter().map(|p| p.x).fold(f64::INFINITY, f64::min);
                let hi = pts.iter().map(|p| p.x).fold(f64::NEG_INFINITY, f64::max);
                let edge = lo + f * (hi - lo);
                let inside = |x: f64| match at {
                    At::MeanFrom(_) => x >= edge - 1e-9,
                    _ => x <= edge + 1e-9,
                };
                mean(pts.iter().filter(|p| inside(p.x)).filter_map(of).collect())
            }
            At::Max => pts.iter().filter_map(of).reduce(f64::max),
            At::Min => pts.iter().filter_map(of).reduce(f64::min),
            At::MinUpTo(x) => (pts.iter().filter(|p| p.x <= x + 1e-9))
                .filter_map(of)
                .reduce(f64::min),
        }
    }

    fn trend(&self, series: &str, m: Metric, trial: usize) -> Option<f64> {
        let pts = self.points.get(series)?;
        if pts.len() < 2 {
            return None;
        }
        ratio(pts.last()?.trial(m, trial)?, pts.first()?.trial(m, trial)?)
    }

    /// The number a check reads in one trial, if that trial measured it.
    pub fn number(&self, c: &Check, trial: usize) -> Option<f64> {
        let t = trial;
        match *c {
            Check::Ratio { metric, a, b, at } => {
                ratio(self.value(a, metric, at, t)?, self.value(b, metric, at, t)?)
            }
            Check::Within { series, a, b, at } => {
                ratio(self.value(series, a, at, t)?, self.value(series, b, at, t)?)
            }
            Check::Trend { metric, series } => self.trend(series, metric, t),
            Check::Growth { metric, a, b } => {
                ratio(self.trend(a, metric, t)?, self.trend(b, metric, t)?)
            }
            Check::Change {
                metric,
                a,
                b,
                before,
                after,
            } => {
                let at = |at| ratio(self.value(a, metric, at, t)?, self.value(b, metric, at, t)?);
                ratio(at(after)?, at(before)?)
            }
            Check::Spread { metric, at, series } => {
                let named: Vec<&str> = if series.is_empty() {
                    self.points.keys().map(String::as_str).collect()
                } else {
                    series.to_vec()
                };
                // Every named series must be there: a spread over fewer
                // than the paper's is another number.
                let vs: Option<Vec<f64>> =
                    named.iter().map(|s| self.value(s, metric, at, t)).collect();
                let vs = vs?;
                if vs.len() < 2 {
                    return None;
                }
                let max = vs.iter().copied().fold(f64::NAN, f64::max);
                let min = vs.iter().copied().fold(f64::NAN, f64::min);
                ratio(max, min)
            }
            Check::Groups {
                metric,
                above,
                below,
                at,
            } => {
                let all = |g: &[&str]| -> Option<Vec<f64>> {
                    g.iter().map(|s| self.value(s, metric, at, t)).collect()
                };
                let least = all(above)?.into_iter().reduce(f64::min)?;
                let most = all(below)?.into_iter().reduce(f64::max)?;
                ratio(least, most)
            }
            Check::Value { metric, series, at } => {
                self.value(series, metric, at, t).filter(|v| v.is_finite())
            }
        }
    }

    /// The number of every trial (`None` where a trial did not reach it).
    pub fn numbers(&self, c: &Check) -> Vec<Option<f64>> {
        (0..self.trials()).map(|t| self.number(c, t)).collect()
    }
}

fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0 && a.is_finite()).then(|| a / b)
}

/// The verdict on one finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Agrees,
    AgreesInDirection,
    Exaggerates,
    Differs,
    /// The trials do not share one verdict.
    Undecided,
    NotMeasured,
}

impl Verdict {
    pub const ALL: [Verdict; 6] = [
        Verdict::Agrees,
        Verdict::AgreesInDirection,
        Verdict::Exaggerates,
        Verdict::Differs,
        Verdict::Undecided,
        Verdict::NotMeasured,
    ];

    pub fn text(self) -> &'static str {
        match self {
            Verdict::Agrees => "agrees",
            Verdict::AgreesInDirection => "agrees in direction",
            Verdict::Exaggerates => "exaggerates",
            Verdict::Differs => "differs",
            Verdict::Undecided => "undecided",
            Verdict::NotMeasured => "not measured",
        }
    }
}

/// The size of a ratio's effect, the same either side of 1: 1.4 and 1/1.4
/// are both 0.4.
fn effect(r: f64) -> f64 {
    r.max(1.0 / r) - 1.0
}

/// Judges one measured number against what the paper says; `is_ratio`:
/// whether the number is a ratio, so a side of 1 is a direction.
pub fn judge(expect: Expect, r: f64, is_ratio: bool) -> Verdict {
    // A band on one side of 1 states a direction and, by its far edge,
    // the paper's largest effect.
    let side = |lo: f64, hi: f64| -> Option<f64> {
        if !is_ratio {
            None
        } else if lo >= 1.0 {
            Some(hi)
        } else if hi <= 1.0 {
            Some(lo)
        } else {
            None
        }
    };
    let same_side = |edge: f64| (edge >= 1.0 && r > 1.0) || (edge <= 1.0 && r < 1.0);
    match expect {
        Expect::Range(lo, hi) if (lo..=hi).contains(&r) => Verdict::Agrees,
        Expect::Range(lo, hi) => match side(lo, hi) {
            Some(far) if same_side(far) && effect(r) > 2.0 * effect(far) => Verdict::Exaggerates,
            Some(far) if same_side(far) => Verdict::AgreesInDirection,
            _ => Verdict::Differs,
        },
        Expect::Above1 if r > 1.0 => Verdict::Agrees,
        Expect::Below1 if r < 1.0 => Verdict::Agrees,
        Expect::About(t) if r >= 1.0 / t && r <= t => Verdict::Agrees,
        Expect::AtMost(m) if r <= m => Verdict::Agrees,
        Expect::AtLeast(m) if r >= m => Verdict::Agrees,
        // A bound beyond 1 on a ratio states a direction too.
        Expect::AtLeast(m) if is_ratio && m > 1.0 && r > 1.0 => Verdict::AgreesInDirection,
        Expect::AtMost(m) if is_ratio && m < 1.0 && r < 1.0 => Verdict::AgreesInDirection,
        Expect::Above1
        | Expect::Below1
        | Expect::About(_)
        | Expect::AtMost(_)
        | Expect::AtLeast(_) => Verdict::Differs,
    }
}

/// A claim judged over its trials.
#[derive(Debug, Clone)]
pub struct Judged {
    pub finding: Finding,
    /// Each trial's number (`None`: that trial did not reach it).
    pub numbers: Vec<Option<f64>>,
    /// Each measured trial's own verdict.
    pub per_trial: Vec<Option<Verdict>>,
    pub verdict: Verdict,
}

impl Judged {
    /// Judges `f` on every trial of `m`: the trials' common verdict, or
    /// undecided when they do not share one.
    pub fn new(f: &Finding, m: &Measured) -> Judged {
        let ratio = f.check.is_ratio();
        // A ratio compares two magnitudes: one at or below 0 (net memory
        // that shrank in a second, say) is no measurement of the claim.
        let numbers: Vec<Option<f64>> = (m.numbers(&f.check).into_iter())
            .map(|n| n.filter(|r| !ratio || (r.is_finite() && *r > 0.0)))
            .collect();
        let per_trial: Vec<Option<Verdict>> = (numbers.iter())
            .map(|n| n.map(|r| judge(f.expect, r, ratio)))
            .collect();
        let mut seen: Vec<Verdict> = per_trial.iter().flatten().copied().collect();
        seen.sort_unstable();
        seen.dedup();
        // A verdict needs every trial: one that gave no number may have
        // gone either way.
        let some_unmeasured = per_trial.iter().any(Option::is_none);
        let verdict = match seen[..] {
            [] => Verdict::NotMeasured,
            [one] if !some_unmeasured => one,
            _ => Verdict::Undecided,
        };
        Judged {
            finding: *f,
            numbers,
            per_trial,
            verdict,
        }
    }

    fn measured(&self) -> Vec<f64> {
        self.numbers.iter().flatten().copied().collect()
    }

    /// The trials' median (the number a report quotes).
    pub fn median(&self) -> Option<f64> {
        let mut v = self.measured();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(v[n / 2]),
            _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
        }
    }

    /// The smallest and largest trial.
    pub fn spread(&self) -> Option<(f64, f64)> {
        let v = self.measured();
        let lo = v.iter().copied().reduce(f64::min)?;
        let hi = v.iter().copied().reduce(f64::max)?;
        Some((lo, hi))
    }

    /// The claim's line: the paper's words and where, the check, the
    /// paper's number, ours with every trial and the spread, the verdict.
    pub fn line(&self) -> String {
        let f = &self.finding;
        let unit = if f.check.is_ratio() { "x" } else { "" };
        let num = |v: f64| format!("{}{unit}", fmt(v));
        let here = match (self.median(), self.spread()) {
            (Some(med), Some((lo, hi))) => {
                let trials: Vec<String> = (self.numbers.iter())
                    .map(|n| n.map_or("-".into(), fmt))
                    .collect();
                format!(
                    "{} (trials {}; spread {}–{})",
                    num(med),
                    trials.join(", "),
                    fmt(lo),
                    fmt(hi)
                )
            }
            _ => "not measured".into(),
        };
        let verdict = match self.verdict {
            Verdict::Undecided => {
                let mut counts: BTreeMap<Verdict, usize> = BTreeMap::new();
                for v in self.per_trial.iter().flatten() {
                    *counts.entry(*v).or_default() += 1;
                }
                let parts: Vec<String> = (counts.iter())
                    .map(|(v, n)| format!("{} ×{n}", v.text()))
                    .collect();
                format!("undecided ({})", parts.join(", "))
            }
            v => v.text().into(),
        };
        format!(
            "\"{}\" ({}; {}): paper {}; here {here}: {verdict}",
            f.claim,
            f.source,
            check_text(&f.check),
            expect_text(f.expect),
        )
    }
}

/// A number for a report: three significant figures, no float noise.
fn fmt(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.3e}")
    }
}

fn at_text(at: At) -> String {
    match at {
        At::Last => "at the largest x".into(),
        At::X(x) => format!("at x = {x}"),
        At::Mean => "over the run".into(),
        At::MeanFrom(f) => format!("over the run from {:.0}% of it", f * 100.0),
        At::MeanUpTo(f) => format!("over the run up to {:.0}% of it", f * 100.0),
        At::Max => "its largest".into(),
        At::Min => "its smallest".into(),
        At::MinUpTo(x) => format!("its smallest up to x = {x}"),
    }
}

pub fn check_text(c: &Check) -> String {
    match *c {
        Check::Ratio { metric, a, b, at } => {
            format!("{a} / {b}, {}, {}", metric.label(), at_text(at))
        }
        Check::Within { series, a, b, at } => {
            format!("{series}: {} / {}, {}", a.label(), b.label(), at_text(at))
        }
        Check::Trend { metric, series } => {
            format!("{series}, {}: last x / first x", metric.label())
        }
        Check::Growth { metric, a, b } => {
            format!("{a}'s growth / {b}'s, {}: last x / first x", metric.label())
        }
        Check::Change {
            metric,
            a,
            b,
            before,
            after,
        } => format!(
            "{a} / {b}, {}: ({}) / ({})",
            metric.label(),
            at_text(after),
            at_text(before)
        ),
        Check::Spread { metric, at, series } => {
            let over = if series.is_empty() {
                "every series".to_string()
            } else {
                series.join(", ")
            };
            format!(
                "largest / smallest of {over}, {}, {}",
                metric.label(),
                at_text(at)
            )
        }
        Check::Groups {
            metric,
            above,
            below,
            at,
        } => format!(
            "the smallest of {} / the largest of {}, {}, {}",
            above.join(", "),
            below.join(", "),
            metric.label(),
            at_text(at)
        ),
        Check::Value { metric, series, at } => {
            format!("{series}, {}, {}", metric.label(), at_text(at))
        }
    }
}

pub fn expect_text(e: Expect) -> String {
    match e {
        Expect::Range(lo, hi) if lo == hi => format!("{lo}x"),
        Expect::Range(lo, hi) => format!("{lo}–{hi}x"),
        Expect::Above1 => "above 1".into(),
        Expect::Below1 => "below 1".into(),
        Expect::About(t) => format!("about equal ({:.2}–{t}x)", 1.0 / t),
        Expect::AtMost(m) => format!("at most {m}"),
        Expect::AtLeast(m) => format!("at least {m}"),
    }
}

/// One CSV row per claim and trial, and one for the claim over all
/// trials (trial "all": the median, the spread and the verdict).
#[derive(serde::Serialize)]
pub struct ClaimRow {
    pub figure: &'static str,
    pub claim: &'static str,
    pub source: &'static str,
    pub check: String,
    pub paper: String,
    pub trial: String,
    pub number: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub verdict: &'static str,
}

impl Judged {
    /// The claim's CSV rows.
    pub fn rows(&self, figure: &'static str) -> Vec<ClaimRow> {
        let f = &self.finding;
        let row = |trial: String, number, min, max, verdict: Option<Verdict>| ClaimRow {
            figure,
            claim: f.claim,
            source: f.source,
            check: check_text(&f.check),
            paper: expect_text(f.expect),
            trial,
            number,
            min,
            max,
            verdict: verdict.map_or("not measured", Verdict::text),
        };
        let mut rows: Vec<ClaimRow> = (self.numbers.iter().zip(&self.per_trial))
            .enumerate()
            .map(|(i, (n, v))| row((i + 1).to_string(), *n, None, None, *v))
            .collect();
        let (lo, hi) = self.spread().unzip();
        rows.push(row("all".into(), self.median(), lo, hi, Some(self.verdict)));
        rows
    }
}

#[cfg(test)]
mod tests;
