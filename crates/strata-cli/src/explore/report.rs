//! What a search found, for people: a ranked table, the winner set, the
//! recommendation (Rust options and `strata bench` flags, with what each
//! runner-up trades), as text and Markdown.
//!
//! ```text
//!   Outcome (search) + designs ──> rows: rank, design, txn/s [range], p99,
//!                                        aborts by reason, bytes/row, chain, trials, fate
//!                              ──> winner set (ranges overlapping the winner's)
//!                              ──> recommendation: winner.rust(), bench command, trade-offs
//! ```

use std::fmt::Write as _;

use super::search::{median, Objective, Outcome, PointResult, Stopped};
use super::space::Design;
use super::workload::Workload;
use crate::plot::human;

/// One grid cell's search.
pub struct CellResult {
    /// `read-ratio=0.5 theta=0.9`, or empty without a grid.
    pub label: String,
    /// The grid values of this cell, in `--grid` order.
    pub values: Vec<f64>,
    pub workload: Workload,
    pub designs: Vec<Design>,
    pub folded: usize,
    pub outcome: Outcome,
    pub reused: usize,
    pub ran: usize,
}

/// The top abort reasons, `reason n%` of the attempts.
fn reasons(p: &PointResult) -> String {
    let mut sum: std::collections::BTreeMap<&str, u64> = Default::default();
    for t in p.last_trials() {
        for (k, v) in &t.aborts_by_reason {
            *sum.entry(k).or_default() += v;
        }
    }
    let total: u64 = sum.values().sum();
    if total == 0 {
        return "-".into();
    }
    let mut v: Vec<(&str, u64)> = sum.into_iter().collect();
    v.sort_by_key(|e| std::cmp::Reverse(e.1));
    v.iter()
        .take(2)
        .map(|(k, n)| format!("{k} {:.0}%", 100.0 * *n as f64 / total as f64))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A point's row of the ranked table.
pub struct RowView {
    pub rank: Option<usize>,
    pub design: String,
    pub committed_per_s: f64,
    pub lo: f64,
    pub hi: f64,
    pub p99_us: f64,
    pub abort_rate: f64,
    pub reasons: String,
    pub bytes_per_row: f64,
    pub longest_chain: f64,
    pub trials: usize,
    pub fate: String,
}

/// Every measured point: the ranked ones first (best first), then the cut
/// ones (latest cut first, best first within a round), then failures.
pub fn rows(c: &CellResult) -> Vec<RowView> {
    let out = &c.outcome;
    let o = out.objective;
    let mut order: Vec<usize> = out.ranked.clone();
    let mut cut: Vec<usize> = (0..c.designs.len())
        .filter(|p| !out.ranked.contains(p) && !out.points[*p].trials.is_empty())
        .collect();
    cut.sort_by(|&a, &b| {
        let (pa, pb) = (&out.points[a], &out.points[b]);
        pb.last_round
            .cmp(&pa.last_round)
            .then(pb.median(o).total_cmp(&pa.median(o)))
    });
    order.extend(cut);
    order.extend((0..c.designs.len()).filter(|&p| out.points[p].failed.is_some()));
    order
        .into_iter()
        .map(|p| {
            let pr = &out.points[p];
            let tp: Vec<f64> = pr.last_trials().map(|t| t.committed_per_s).collect();
            let rank = out.ranked.iter().position(|&q| q == p).map(|i| i + 1);
            let fate = if let Some(why) = &pr.failed {
                format!("failed: {why}")
            } else if rank.is_some() {
                if out.winners.contains(&p) {
                    "winner set".into()
                } else {
                    "finalist".into()
                }
            } else {
                match pr.cut_after {
                    Some(k) => format!("cut after round {}", k + 1),
                    None => "not measured in the last round".into(),
                }
            };
            RowView {
                rank,
                design: c.designs[p].label(),
                committed_per_s: median(tp.clone()).max(0.0),
                lo: tp.iter().copied().fold(f64::INFINITY, f64::min),
                hi: tp.iter().copied().fold(0.0, f64::max),
                p99_us: pr.median_of(|t| t.p99_us).max(0.0),
                abort_rate: pr.median_of(|t| t.abort_rate).max(0.0),
                reasons: reasons(pr),
                bytes_per_row: pr.median_of(|t| t.bytes_per_row).max(0.0),
                longest_chain: pr.median_of(|t| t.longest_chain as f64).max(0.0),
                trials: pr.trials.len(),
                fate,
            }
        })
        .collect()
}

/// The ranked table in Markdown (`limit` rows; 0 = all).
pub fn table(c: &CellResult, limit: usize) -> String {
    let mut s = String::from(
        "| rank | design | committed txn/s (median [range]) | p99 µs | abort rate (top reasons) \
         | bytes/row | longest chain | trials | fate |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let rows = rows(c);
    let n = if limit == 0 {
        rows.len()
    } else {
        limit.min(rows.len())
    };
    for r in &rows[..n] {
        let range = if r.trials > 0 && r.lo.is_finite() && r.lo < r.hi {
            format!(" [{}–{}]", human(r.lo), human(r.hi))
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "| {} | {} | {}{range} | {:.0} | {:.1}% ({}) | {:.0} | {:.0} | {} | {} |",
            r.rank.map_or("-".into(), |k| k.to_string()),
            r.design,
            human(r.committed_per_s),
            r.p99_us,
            100.0 * r.abort_rate,
            r.reasons,
            r.bytes_per_row,
            r.longest_chain,
            r.trials,
            r.fate
        );
    }
    if n < rows.len() {
        let _ = writeln!(s, "\n({} more rows in the report)", rows.len() - n);
    }
    s
}

fn pct(new: f64, base: f64) -> String {
    if base == 0.0 {
        return "n/a".into();
    }
    format!("{:+.0}%", 100.0 * (new / base - 1.0))
}

/// What `q` trades against the winner `w`, in words.
fn trade(c: &CellResult, w: usize, q: usize) -> String {
    let pts = &c.outcome.points;
    let m = |p: usize, f: &dyn Fn(&super::search::Trial) -> f64| pts[p].median_of(f);
    format!(
        "throughput {}, p99 {}, bytes/row {}, abort rate {:.1}% vs {:.1}%; differs in {}",
        pct(m(q, &|t| t.committed_per_s), m(w, &|t| t.committed_per_s)),
        pct(m(q, &|t| t.p99_us), m(w, &|t| t.p99_us)),
        pct(m(q, &|t| t.bytes_per_row), m(w, &|t| t.bytes_per_row)),
        100.0 * m(q, &|t| t.abort_rate),
        100.0 * m(w, &|t| t.abort_rate),
        c.designs[w].differences(&c.designs[q]).join(", ")
    )
}

/// The recommendation: the winner's options as Rust and as bench flags, the
/// points within its noise, the runner-ups and what each trades.
pub fn recommendation(c: &CellResult) -> String {
    let out = &c.outcome;
    let Some(&w) = out.ranked.first() else {
        return "No design completed a trial: no recommendation.\n".into();
    };
    let d = &c.designs[w];
    let mut s = String::new();
    let by = match out.objective {
        Objective::Throughput => "committed transactions per second",
        Objective::P99 => "99th-percentile latency",
        Objective::Memory => "bytes per row",
    };
    if out.winners.len() > 1 {
        let names: Vec<String> = out.winners.iter().map(|&p| c.designs[p].label()).collect();
        let _ = writeln!(
            s,
            "Best by {by}: a set of {} designs whose trial ranges overlap (within the noise \
             of {} trials each): {}. The first has the best median:",
            names.len(),
            out.points[w].last_trials().count(),
            names.join(", ")
        );
    } else {
        let _ = writeln!(
            s,
            "Best by {by}: {} (no other finalist within its noise).",
            d.label()
        );
    }
    if out.stopped.is_some() {
        let _ = writeln!(
            s,
            "\n**Provisional:** the search stopped before its final round finished ({}).",
            match out.stopped {
                Some(Stopped::Budget) => "the budget ran out",
                _ => "interrupted",
            }
        );
    }
    let _ = writeln!(s, "\n```rust\n{}\n```\n", d.rust());
    let _ = writeln!(s, "```sh\n{}\n```\n", c.workload.bench_command(d));
    let others: Vec<usize> = out.ranked.iter().copied().skip(1).take(3).collect();
    if !others.is_empty() {
        let _ = writeln!(s, "Runner-ups and what each trades against it:\n");
        for q in others {
            let within = if out.winners.contains(&q) {
                " (within the noise)"
            } else {
                ""
            };
            let _ = writeln!(
                s,
                "- `{}`{within}: {}",
                c.designs[q].label(),
                trade(c, w, q)
            );
        }
    }
    s
}

/// How the search went: rounds, time, reuse.
pub fn rounds(c: &CellResult) -> String {
    let out = &c.outcome;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} designs ({} more folded: tuple-id and pkey pointers, and the index kinds, are the \
         same engine without secondary indexes); {} rounds; {:.0} s of {:.0} s spent; {} trials \
         run, {} reused from an earlier run.",
        c.designs.len(),
        c.folded,
        out.rounds.len(),
        out.spent_s,
        out.budget_s,
        c.ran,
        c.reused
    );
    for (k, r) in out.rounds.iter().enumerate() {
        let _ = writeln!(
            s,
            "- round {}: {} designs × {} trial(s) × {:.1} s",
            k + 1,
            r.points,
            r.trials,
            r.run_s
        );
    }
    s
}
