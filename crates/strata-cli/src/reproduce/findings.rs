//! The paper's findings, checked against what a run measured.
//!
//! Each figure of `strata reproduce` names the claims the paper makes about
//! it as [`Finding`]s: the claim in words, and a [`Check`] that turns it into
//! one number from the run (a ratio of two series, the trend of one series
//! over the x axis, or the spread of all series) and what the paper says
//! that number is ([`Expect`]). After the run every finding gets a verdict:
//!
//! ```text
//!   claim ──> Check ──(measured points)──> number ──(Expect)──> verdict
//!   "N2O beats O2N at θ 0.9"   N2O/O2N at 0.9     2.1   paper 2.4–3.4
//!                                                        ──> agrees in direction
//! ```
//!
//! A verdict is `agrees` (inside the paper's range, or on the side of 1 the
//! paper states), `agrees in direction` (on the paper's side of 1 but
//! outside its range), `differs`, or `not measured` (a series or x value the
//! run did not reach, e.g. after Ctrl-C). The invariant: a verdict is
//! computed only from the run's own numbers, never from a table of expected
//! results.

use std::collections::BTreeMap;

/// What the y value of a point is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// Committed transactions/s of the mix.
    Throughput,
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
    /// New resident memory per committed transaction, each second (time
    /// axes).
    NewBytesPerTxn,
    /// A figure's own measurement, by its label (a scan's time, a filter's
    /// false-positive rate).
    Named(&'static str),
}

impl Metric {
    pub fn label(self) -> String {
        match self {
            Metric::Throughput => "committed transactions/s".into(),
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
}

/// What the paper says the checked number is.
#[derive(Debug, Clone, Copy)]
pub enum Expect {
    /// A number the paper quotes, as a range.
    Range(f64, f64),
    /// More than 1 (the paper says "higher", "better", "grows").
    Above1,
    /// Less than 1 ("lower", "drops").
    Below1,
    /// At most this (the paper says the series are "the same").
    AtMost(f64),
    /// At least this (the issue's bars: "grows at least 5x").
    AtLeast(f64),
}

/// How a claim becomes one number.
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
    /// The largest series over the smallest at `at`.
    Spread { metric: Metric, at: At },
}

/// A claim of the paper about a figure.
#[derive(Debug, Clone, Copy)]
pub struct Finding {
    pub claim: &'static str,
    pub check: Check,
    pub expect: Expect,
}

/// One series' points: (x, each metric's value).
pub type SeriesPoints = Vec<(f64, Vec<(Metric, f64)>)>;

/// A run's measured points: series label -> (x, metric) -> value.
#[derive(Debug, Default)]
pub struct Measured {
    pub points: BTreeMap<String, SeriesPoints>,
}

impl Measured {
    pub fn push(&mut self, series: &str, x: f64, values: Vec<(Metric, f64)>) {
        self.points
            .entry(series.to_string())
            .or_default()
            .push((x, values));
    }

    /// One series' points of `m`, to plot.
    pub fn line(&self, series: &str, m: Metric) -> Vec<(f64, f64)> {
        self.points.get(series).map_or(Vec::new(), |pts| {
            pts.iter()
                .filter_map(|(x, v)| v.iter().find(|(k, _)| *k == m).map(|(_, y)| (*x, *y)))
                .collect()
        })
    }

    fn value(&self, series: &str, m: Metric, at: At) -> Option<f64> {
        let pts = self.points.get(series)?;
        let of = |vals: &Vec<(Metric, f64)>| vals.iter().find(|(k, _)| *k == m).map(|(_, v)| *v);
        match at {
            At::Last => pts.last().and_then(|(_, v)| of(v)),
            At::X(x) => pts
                .iter()
                .find(|(px, _)| (px - x).abs() < 1e-9)
                .and_then(|(_, v)| of(v)),
            At::Mean => {
                let vs: Vec<f64> = pts.iter().filter_map(|(_, v)| of(v)).collect();
                (!vs.is_empty()).then(|| vs.iter().sum::<f64>() / vs.len() as f64)
            }
        }
    }

    fn first(&self, series: &str, m: Metric) -> Option<f64> {
        let (_, v) = self.points.get(series)?.first()?;
        v.iter().find(|(k, _)| *k == m).map(|(_, v)| *v)
    }

    /// The number a check reads, if the run measured it.
    pub fn number(&self, c: &Check) -> Option<f64> {
        let ratio = |a: f64, b: f64| (b > 0.0 && a.is_finite()).then(|| a / b);
        match *c {
            Check::Ratio { metric, a, b, at } => {
                ratio(self.value(a, metric, at)?, self.value(b, metric, at)?)
            }
            Check::Within { series, a, b, at } => {
                ratio(self.value(series, a, at)?, self.value(series, b, at)?)
            }
            Check::Trend { metric, series } => {
                if self.points.get(series)?.len() < 2 {
                    return None;
                }
                ratio(
                    self.value(series, metric, At::Last)?,
                    self.first(series, metric)?,
                )
            }
            Check::Spread { metric, at } => {
                let vs: Vec<f64> = (self.points.keys())
                    .filter_map(|s| self.value(s, metric, at))
                    .collect();
                let max = vs.iter().cloned().fold(f64::NAN, f64::max);
                let min = vs.iter().cloned().fold(f64::NAN, f64::min);
                (vs.len() >= 2).then_some(())?;
                ratio(max, min)
            }
        }
    }
}

/// The verdict on one finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Agrees,
    AgreesInDirection,
    Differs,
    NotMeasured,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Agrees => "agrees",
            Verdict::AgreesInDirection => "agrees in direction",
            Verdict::Differs => "differs",
            Verdict::NotMeasured => "not measured",
        }
    }
}

/// Judges a measured number against what the paper says.
pub fn judge(expect: Expect, here: Option<f64>) -> Verdict {
    let Some(r) = here else {
        return Verdict::NotMeasured;
    };
    match expect {
        Expect::Above1 if r > 1.0 => Verdict::Agrees,
        Expect::Below1 if r < 1.0 => Verdict::Agrees,
        Expect::AtMost(m) if r <= m => Verdict::Agrees,
        Expect::AtLeast(m) if r >= m => Verdict::Agrees,
        Expect::AtLeast(m) if m > 1.0 && r > 1.0 => Verdict::AgreesInDirection,
        Expect::Range(lo, hi) if (lo..=hi).contains(&r) => Verdict::Agrees,
        // A range on one side of 1 states a direction too.
        Expect::Range(lo, _) if lo > 1.0 && r > 1.0 => Verdict::AgreesInDirection,
        Expect::Range(_, hi) if hi < 1.0 && r < 1.0 => Verdict::AgreesInDirection,
        Expect::Above1
        | Expect::Below1
        | Expect::AtMost(_)
        | Expect::AtLeast(_)
        | Expect::Range(..) => Verdict::Differs,
    }
}

fn at_text(at: At) -> String {
    match at {
        At::Last => "at the largest x".into(),
        At::X(x) => format!("at x = {x}"),
        At::Mean => "over the run".into(),
    }
}

fn check_text(c: &Check) -> String {
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
        Check::Spread { metric, at } => {
            format!(
                "largest / smallest series, {}, {}",
                metric.label(),
                at_text(at)
            )
        }
    }
}

fn expect_text(e: Expect) -> String {
    match e {
        Expect::Range(lo, hi) if lo == hi => format!("{lo}x"),
        Expect::Range(lo, hi) => format!("{lo}–{hi}x"),
        Expect::Above1 => "above 1".into(),
        Expect::Below1 => "below 1".into(),
        Expect::AtMost(m) => format!("at most {m}x (about equal)"),
        Expect::AtLeast(m) => format!("at least {m}x"),
    }
}

/// One finding's line: the claim, the paper's number, ours, the verdict.
pub fn line(f: &Finding, m: &Measured) -> (Verdict, String) {
    let here = m.number(&f.check);
    let v = judge(f.expect, here);
    let ours = here.map_or("not measured".to_string(), |r| format!("{r:.2}x"));
    (
        v,
        format!(
            "{} ({}): paper {}; here {ours}: {}",
            f.claim,
            check_text(&f.check),
            expect_text(f.expect),
            v.text()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured() -> Measured {
        let mut m = Measured::default();
        for (x, a, b) in [(0.0, 100.0, 100.0), (0.9, 300.0, 100.0)] {
            m.push("N2O", x, vec![(Metric::Throughput, a)]);
            m.push("O2N", x, vec![(Metric::Throughput, b)]);
        }
        m
    }

    #[test]
    fn a_ratio_inside_the_papers_range_agrees_and_outside_keeps_its_direction() {
        let m = measured();
        let check = Check::Ratio {
            metric: Metric::Throughput,
            a: "N2O",
            b: "O2N",
            at: At::X(0.9),
        };
        assert_eq!(m.number(&check), Some(3.0));
        assert_eq!(
            judge(Expect::Range(2.4, 3.4), m.number(&check)),
            Verdict::Agrees
        );
        assert_eq!(
            judge(Expect::Range(3.5, 4.0), m.number(&check)),
            Verdict::AgreesInDirection
        );
        assert_eq!(judge(Expect::Below1, m.number(&check)), Verdict::Differs);
        assert_eq!(judge(Expect::Range(0.2, 0.5), Some(3.0)), Verdict::Differs);
    }

    #[test]
    fn trends_spreads_and_missing_series() {
        let m = measured();
        let trend = Check::Trend {
            metric: Metric::Throughput,
            series: "N2O",
        };
        assert_eq!(m.number(&trend), Some(3.0));
        let spread = Check::Spread {
            metric: Metric::Throughput,
            at: At::Last,
        };
        assert_eq!(m.number(&spread), Some(3.0));
        assert_eq!(
            judge(Expect::AtMost(1.3), m.number(&spread)),
            Verdict::Differs
        );
        let missing = Check::Ratio {
            metric: Metric::Throughput,
            a: "delta",
            b: "O2N",
            at: At::Last,
        };
        assert_eq!(
            judge(Expect::Above1, m.number(&missing)),
            Verdict::NotMeasured
        );
        let f = Finding {
            claim: "N2O beats O2N",
            check: Check::Ratio {
                metric: Metric::Throughput,
                a: "N2O",
                b: "O2N",
                at: At::Mean,
            },
            expect: Expect::Range(2.4, 3.4),
        };
        let (v, text) = line(&f, &m);
        assert_eq!(
            v,
            Verdict::AgreesInDirection,
            "mean of 1 and 3 is 2: {text}"
        );
        assert!(text.contains("paper 2.4–3.4x; here 2.00x"), "{text}");
    }
}
