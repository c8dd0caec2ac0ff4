//! Successive halving under a time budget: every point briefly, the better
//! part longer, the finalists with at least three trials.
//!
//! ```text
//!   round 0   ●●●●●●●●●●●●●●●●   n points × 1 trial × short runs
//!   round 1   ●●●●●●●●           the better half (by the round's median)
//!     ...     ●●●●
//!   final     ●●●●               `finalists` points × 3 trials × longest runs
//!
//!   each round gets an equal share of what is left of the budget (never
//!   less than its minimum: every run at least `min_run_s`); a run costs its
//!   measured time plus an overhead (load, warm-up) estimated from the runs
//!   so far, and the rest of the search is planned again after each round.
//! ```
//!
//! This is Karnin, Koren and Somekh's successive halving (ICML 2013) with
//! two changes for benchmarking: a point whose trial range overlaps the last
//! kept point's is kept too (noise must not decide a cut; at most half again
//! as many points), and the final round gives every point `final_trials`
//! trials so that the winner is named as a set of points within the noise.
//!
//! The invariant this module owns: **the time spent never exceeds the
//! budget** (a trial that would not fit is not started), and every point
//! that reaches the final round with a full round has at least
//! `final_trials` trials. It knows nothing about databases: a [`Runner`]
//! measures a point, so the search is tested with a deterministic fake.

use std::collections::BTreeMap;

/// What one trial of one point measured.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trial {
    pub committed_per_s: f64,
    pub p99_us: f64,
    /// Aborted / (committed + aborted).
    pub abort_rate: f64,
    pub aborts_by_reason: BTreeMap<String, u64>,
    /// Bytes of the version store and indexes per live row after the run.
    pub bytes_per_row: f64,
    pub longest_chain: u64,
    /// Wall-clock seconds the trial took: load, warm-up and run. What the
    /// budget is charged.
    pub elapsed_s: f64,
}

/// What the ranking maximises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Objective {
    /// Committed transactions per second (higher is better).
    #[default]
    Throughput,
    /// 99th-percentile latency of committed transactions (lower is better).
    P99,
    /// Bytes per row after the run (lower is better).
    Memory,
}

impl Objective {
    /// The trial's score: higher is better.
    pub fn score(self, t: &Trial) -> f64 {
        match self {
            Objective::Throughput => t.committed_per_s,
            Objective::P99 => -t.p99_us,
            Objective::Memory => -t.bytes_per_row,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Objective::Throughput => "throughput",
            Objective::P99 => "p99",
            Objective::Memory => "memory",
        }
    }
}

/// Measures points; the search calls it once per trial.
pub trait Runner {
    /// Runs trial `trial` (0-based) of point `point` in round `round`, with
    /// `run_s` seconds of run time (warm-up included). `Err` marks the point
    /// failed (it is cut, with the message), and the search goes on.
    fn run(
        &mut self,
        point: usize,
        round: usize,
        trial: usize,
        run_s: f64,
    ) -> Result<Trial, String>;
}

/// The search's knobs.
#[derive(Debug, Clone)]
pub struct Config {
    pub budget_s: f64,
    /// Each round keeps about 1/eta of its points.
    pub eta: usize,
    /// Points in the final round.
    pub finalists: usize,
    /// Trials of each point in the final round (at least 3).
    pub final_trials: usize,
    /// The shortest and longest run of one trial, seconds.
    pub min_run_s: f64,
    pub max_run_s: f64,
    /// What a trial costs besides its run time (load, set-up) before one
    /// was measured.
    pub overhead_guess_s: f64,
    pub objective: Objective,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            budget_s: 600.0,
            eta: 2,
            finalists: 4,
            final_trials: 3,
            min_run_s: 0.5,
            max_run_s: 20.0,
            overhead_guess_s: 1.0,
            objective: Objective::Throughput,
        }
    }
}

/// Why a search could not start.
#[derive(Debug, Clone, PartialEq)]
pub enum SearchError {
    /// Even the shortest runs of every round do not fit.
    BudgetTooSmall {
        needed_s: f64,
        budget_s: f64,
    },
    NoPoints,
}

impl std::fmt::Display for SearchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SearchError::BudgetTooSmall { needed_s, budget_s } => write!(
                f,
                "a budget of {budget_s:.0} s is too small for this design space: its shortest \
                 search needs about {needed_s:.0} s; raise --budget or narrow the space \
                 (--protocol, --storage, --gc, --pointers, --index-kind)"
            ),
            SearchError::NoPoints => write!(f, "no design point to explore"),
        }
    }
}

/// One round as it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    pub points: usize,
    pub trials: usize,
    pub run_s: f64,
}

/// Why a search ended before its final round was complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    Budget,
    Interrupted,
}

/// One point's history.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PointResult {
    /// (round, trial) in the order they ran.
    pub trials: Vec<(usize, Trial)>,
    /// The last round the point ran in.
    pub last_round: usize,
    /// The round after which it was cut (None: it reached the end).
    pub cut_after: Option<usize>,
    pub failed: Option<String>,
}

impl PointResult {
    /// Its trials of the last round it ran in.
    pub fn last_trials(&self) -> impl Iterator<Item = &Trial> {
        let r = self.last_round;
        self.trials
            .iter()
            .filter(move |(k, _)| *k == r)
            .map(|(_, t)| t)
    }
    /// Median score of its last round's trials (-inf when none).
    pub fn median(&self, o: Objective) -> f64 {
        median(self.last_trials().map(|t| o.score(t)).collect())
    }
    /// (lowest, highest) score of its last round's trials.
    pub fn range(&self, o: Objective) -> (f64, f64) {
        self.last_trials()
            .map(|t| o.score(t))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), s| {
                (lo.min(s), hi.max(s))
            })
    }
    /// The median of a metric over its last round's trials.
    pub fn median_of(&self, f: impl Fn(&Trial) -> f64) -> f64 {
        median(self.last_trials().map(f).collect())
    }
}

/// The median (the upper middle of an even count); -inf when empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NEG_INFINITY;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A finished (or stopped) search.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub points: Vec<PointResult>,
    pub rounds: Vec<Round>,
    /// The points still in the search at its end, best first.
    pub ranked: Vec<usize>,
    /// The winner and the points within its noise (trial ranges
    /// overlapping the winner's), best first.
    pub winners: Vec<usize>,
    pub spent_s: f64,
    pub budget_s: f64,
    pub stopped: Option<Stopped>,
    pub objective: Objective,
}

/// The sizes of the rounds: n, n/eta, ... down to `finalists`.
pub fn schedule(n: usize, eta: usize, finalists: usize) -> Vec<usize> {
    let finalists = finalists.max(1).min(n);
    let mut sizes = vec![n];
    while *sizes.last().expect("not empty") > finalists {
        let next = sizes
            .last()
            .expect("not empty")
            .div_ceil(eta.max(2))
            .max(finalists);
        sizes.push(next);
    }
    sizes
}

/// Trials per point in each round: `final_trials` in the last; two in the
/// round before it and in every round of at most four times the
/// finalists (a single short trial of a few strong points is where a
/// machine's change of pace would decide); one before.
fn trials_of(sizes: &[usize], k: usize, c: &Config) -> usize {
    if k + 1 == sizes.len() {
        c.final_trials
    } else if k + 2 == sizes.len() || sizes[k] <= 4 * c.finalists.max(1) {
        2
    } else {
        1
    }
}

/// The order in which a round runs its points for trial `t`: shuffled by
/// round (never by rank: a machine that changes pace in the middle of a
/// round, as this 2-core VM does between its cross-core modes, would
/// otherwise slow the leaders together), and reversed on every other
/// trial, so that a drift within a round reaches every point about
/// equally.
pub fn round_order(alive: &[usize], k: usize, t: usize) -> Vec<usize> {
    let mix = |p: usize| {
        let mut z = (p as u64) ^ ((k as u64) << 32) ^ 0x9e37_79b9_7f4a_7c15;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut order = alive.to_vec();
    order.sort_by_key(|&p| mix(p));
    if t % 2 == 1 {
        order.reverse();
    }
    order
}

/// The least time the rounds from `from` on take.
fn least(sizes: &[usize], from: usize, c: &Config, overhead: f64) -> f64 {
    (from..sizes.len())
        .map(|k| (sizes[k] * trials_of(sizes, k, c)) as f64)
        .sum::<f64>()
        * (overhead + c.min_run_s)
}

/// The least time a whole search with these round sizes takes, at the
/// guessed overhead.
pub fn least_total(sizes: &[usize], c: &Config) -> f64 {
    let c = Config {
        final_trials: c.final_trials.max(3),
        ..c.clone()
    };
    least(sizes, 0, &c, c.overhead_guess_s)
}

/// The run time of round `k`'s trials: an equal share of what is left,
/// never below the rounds' minimum or above `max_run_s`, in tenths of a
/// second (so that a resumed search plans the same runs).
fn plan_run_s(sizes: &[usize], k: usize, c: &Config, left: f64, overhead: f64) -> f64 {
    let runs = (sizes[k] * trials_of(sizes, k, c)) as f64;
    let rest = least(sizes, k + 1, c, overhead);
    let share = (left / (sizes.len() - k) as f64).min(left - rest);
    let run_s = (share / runs - overhead).clamp(c.min_run_s, c.max_run_s);
    ((run_s * 10.0).floor() / 10.0).max(c.min_run_s)
}

/// Runs the search over points `0..n`. `interrupted` is polled before each
/// trial (Ctrl-C keeps what was measured).
pub fn search(
    n: usize,
    c: &Config,
    runner: &mut dyn Runner,
    interrupted: &dyn Fn() -> bool,
) -> Result<Outcome, SearchError> {
    if n == 0 {
        return Err(SearchError::NoPoints);
    }
    let final_trials = c.final_trials.max(3);
    let c = &Config {
        final_trials,
        ..c.clone()
    };
    let mut sizes = schedule(n, c.eta, c.finalists);
    let needed = least(&sizes, 0, c, c.overhead_guess_s);
    if needed > c.budget_s {
        return Err(SearchError::BudgetTooSmall {
            needed_s: needed,
            budget_s: c.budget_s,
        });
    }
    let o = c.objective;
    let mut points = vec![PointResult::default(); n];
    let mut alive: Vec<usize> = (0..n).collect();
    let mut rounds = Vec::new();
    let mut spent = 0.0;
    // Overhead per trial: (sum of elapsed - run, trials measured).
    let mut over = (0.0, 0usize);
    let overhead = |over: (f64, usize)| {
        if over.1 == 0 {
            c.overhead_guess_s
        } else {
            (over.0 / over.1 as f64).max(0.0)
        }
    };
    let mut stopped = None;
    'rounds: for k in 0.. {
        if k >= sizes.len() {
            break;
        }
        let trials = trials_of(&sizes, k, c);
        let run_s = plan_run_s(&sizes, k, c, c.budget_s - spent, overhead(over));
        rounds.push(Round {
            points: alive.len(),
            trials,
            run_s,
        });
        for t in 0..trials {
            for p in round_order(&alive, k, t) {
                if points[p].failed.is_some() {
                    continue;
                }
                if interrupted() {
                    stopped = Some(Stopped::Interrupted);
                    break 'rounds;
                }
                // (A microsecond of slack for the sums' rounding.)
                if spent + overhead(over) + run_s > c.budget_s + 1e-6 {
                    stopped = Some(Stopped::Budget);
                    break 'rounds;
                }
                let ran = runner.run(p, k, t, run_s);
                if interrupted() {
                    // Cut short by the interrupt: not a measurement.
                    stopped = Some(Stopped::Interrupted);
                    break 'rounds;
                }
                match ran {
                    Ok(trial) => {
                        spent += trial.elapsed_s;
                        over = (over.0 + trial.elapsed_s - run_s, over.1 + 1);
                        points[p].trials.push((k, trial));
                        points[p].last_round = k;
                    }
                    Err(why) => {
                        points[p].failed = Some(why);
                        points[p].cut_after = Some(k);
                    }
                }
            }
        }
        alive.retain(|&p| points[p].failed.is_none());
        if k + 1 == sizes.len() || alive.is_empty() {
            break;
        }
        // Keep the better part; then every point whose range reaches the
        // last kept one's (at most half again as many, and always fewer
        // than ran, so that every round shrinks).
        alive.sort_by(|&a, &b| points[b].median(o).total_cmp(&points[a].median(o)));
        let keep = sizes[k + 1].min(alive.len());
        let floor = points[alive[keep - 1]].range(o).0;
        let mut kept = keep;
        while kept + 1 < alive.len()
            && kept < keep + keep / 2
            && points[alive[kept]].range(o).1 >= floor
            && trials > 1
        {
            kept += 1;
        }
        // The later rounds planned again for the points kept; a point
        // rescued only if its runs still fit.
        let replan = |kept: usize| {
            let mut s = sizes[..=k].to_vec();
            s.extend(schedule(kept, c.eta, c.finalists));
            s
        };
        while kept > keep && least(&replan(kept), k + 1, c, overhead(over)) > c.budget_s - spent {
            kept -= 1;
        }
        for &p in &alive[kept..] {
            points[p].cut_after = Some(k);
        }
        alive.truncate(kept);
        if kept != sizes[k + 1] {
            sizes = replan(kept);
        }
    }
    alive.retain(|&p| points[p].failed.is_none() && !points[p].trials.is_empty());
    alive.sort_by(|&a, &b| points[b].median(o).total_cmp(&points[a].median(o)));
    let winners = match alive.first() {
        None => Vec::new(),
        Some(&best) => {
            let (lo, _) = points[best].range(o);
            alive
                .iter()
                .copied()
                .filter(|&p| {
                    p == best
                        || (points[p].last_round == points[best].last_round
                            && points[p].range(o).1 >= lo)
                })
                .collect()
        }
    };
    Ok(Outcome {
        points,
        rounds,
        ranked: alive,
        winners,
        spent_s: spent,
        budget_s: c.budget_s,
        stopped,
        objective: o,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// Point p's true throughput is `means[p]`; a trial draws noise of up to
    /// `noise` (relative) from a seeded generator, smaller for longer runs;
    /// it takes exactly `overhead + run_s` seconds.
    struct Fake {
        means: Vec<f64>,
        noise: f64,
        overhead: f64,
        state: u64,
        calls: usize,
        fail: Option<usize>,
    }

    impl Fake {
        fn new(means: Vec<f64>, noise: f64, seed: u64) -> Self {
            Fake {
                means,
                noise,
                overhead: 1.0,
                state: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
                calls: 0,
                fail: None,
            }
        }
        fn uniform(&mut self) -> f64 {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            (self.state >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    impl Runner for Fake {
        fn run(&mut self, p: usize, _k: usize, _t: usize, run_s: f64) -> Result<Trial, String> {
            self.calls += 1;
            if self.fail == Some(p) {
                return Err("refused".into());
            }
            let spread = self.noise / run_s.sqrt().max(1.0);
            let x = self.means[p] * (1.0 + spread * (2.0 * self.uniform() - 1.0));
            Ok(Trial {
                committed_per_s: x,
                elapsed_s: self.overhead + run_s,
                bytes_per_row: 100.0 + p as f64,
                ..Trial::default()
            })
        }
    }

    fn never() -> bool {
        false
    }

    #[test]
    fn a_round_runs_its_points_shuffled_and_every_other_trial_reversed() {
        let alive: Vec<usize> = (0..20).collect();
        let a = round_order(&alive, 1, 0);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, alive, "a permutation");
        assert_ne!(a, alive, "not the rank order");
        let mut b = round_order(&alive, 1, 1);
        b.reverse();
        assert_eq!(a, b);
        assert_ne!(round_order(&alive, 2, 0), a, "each round its own order");
    }

    #[test]
    fn the_schedule_halves_down_to_the_finalists() {
        assert_eq!(schedule(185, 2, 4), vec![185, 93, 47, 24, 12, 6, 4]);
        assert_eq!(schedule(3, 2, 4), vec![3]);
        assert_eq!(schedule(9, 3, 1), vec![9, 3, 1]);
    }

    /// 40 points whose true values are 1% apart around the best; noise of
    /// ±4% makes the best's trial range overlap its neighbours'. Over 30
    /// seeds the true best is always kept to the end, and in the winner set
    /// in at least 27.
    #[test]
    fn keeps_the_true_best_under_noise_with_overlapping_ranges() {
        let n = 40;
        let best = 17;
        let means: Vec<f64> = (0..n)
            .map(|p| 1000.0 * (1.0 - 0.01 * (p as f64 - best as f64).abs()))
            .collect();
        let (mut overlapped, mut in_winners) = (0, 0);
        for seed in 1..=30 {
            let mut fake = Fake::new(means.clone(), 0.04, seed);
            let c = Config {
                budget_s: 300.0,
                ..Config::default()
            };
            let out = search(n, &c, &mut fake, &never).unwrap();
            assert!(out.ranked.contains(&best), "seed {seed}: {:?}", out.ranked);
            if out.winners.contains(&best) {
                in_winners += 1;
            }
            assert!(out.stopped.is_none());
            if out.winners.len() > 1 {
                overlapped += 1;
            }
        }
        // Three trials of noisy points can miss each other's ranges: the
        // best is in the winner set nearly always, not always.
        assert!(in_winners >= 27, "{in_winners} of 30");
        // The noise was real: ranges did overlap in some searches.
        assert!(overlapped > 0);
    }

    #[test]
    fn the_budget_is_never_exceeded() {
        let means: Vec<f64> = (0..60).map(|p| 100.0 + p as f64).collect();
        for budget in [250.0, 333.0, 600.0, 5000.0] {
            let mut fake = Fake::new(means.clone(), 0.02, 7);
            let c = Config {
                budget_s: budget,
                ..Config::default()
            };
            let out = search(60, &c, &mut fake, &never).unwrap();
            assert!(out.spent_s <= budget, "{} > {budget}", out.spent_s);
            // Most of it is used: runs grow with the budget.
            assert!(
                out.spent_s > 0.8 * budget.min(1300.0),
                "{budget}: {}",
                out.spent_s
            );
            // Every finalist ran the final round's trials.
            let last = out.rounds.len() - 1;
            assert_eq!(out.rounds[last].trials, 3);
            for &p in &out.ranked {
                assert_eq!(out.points[p].last_round, last);
                assert!(out.points[p].last_trials().count() >= 3, "{p}");
            }
            // Cut points say when.
            let cut = (0..60)
                .filter(|&p| out.points[p].cut_after.is_some())
                .count();
            assert_eq!(cut + out.ranked.len(), 60);
        }
    }

    #[test]
    fn a_budget_below_the_shortest_search_is_refused() {
        let mut fake = Fake::new(vec![1.0; 100], 0.0, 1);
        let c = Config {
            budget_s: 60.0,
            ..Config::default()
        };
        match search(100, &c, &mut fake, &never) {
            Err(SearchError::BudgetTooSmall { needed_s, budget_s }) => {
                assert_eq!(budget_s, 60.0);
                assert!(needed_s > 60.0);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(fake.calls, 0);
    }

    /// A slower load than guessed: the plan is corrected from the measured
    /// overhead and the search stops rather than overrun.
    #[test]
    fn an_underestimated_overhead_stops_at_the_budget() {
        let mut fake = Fake::new((0..30).map(|p| p as f64).collect(), 0.0, 3);
        fake.overhead = 6.0;
        let c = Config {
            budget_s: 200.0,
            overhead_guess_s: 0.5,
            ..Config::default()
        };
        let out = search(30, &c, &mut fake, &never).unwrap();
        assert!(out.spent_s <= 200.0, "{}", out.spent_s);
        assert_eq!(out.stopped, Some(Stopped::Budget));
    }

    #[test]
    fn a_failed_point_is_cut_with_its_reason_and_the_search_goes_on() {
        let mut fake = Fake::new((0..8).map(|p| p as f64).collect(), 0.0, 3);
        fake.fail = Some(7);
        let out = search(8, &Config::default(), &mut fake, &never).unwrap();
        assert_eq!(out.points[7].failed.as_deref(), Some("refused"));
        assert_eq!(out.points[7].cut_after, Some(0));
        assert_eq!(out.ranked[0], 6);
        assert_eq!(out.winners, vec![6]);
    }

    #[test]
    fn an_interrupt_keeps_what_was_measured() {
        let mut fake = Fake::new((0..8).map(|p| p as f64).collect(), 0.0, 3);
        let polls = Cell::new(0);
        // Polled before and after each trial: true from the poll after the
        // fifth.
        let stop = || {
            polls.set(polls.get() + 1);
            polls.get() > 9
        };
        let out = search(8, &Config::default(), &mut fake, &stop).unwrap();
        assert_eq!(out.stopped, Some(Stopped::Interrupted));
        // The interrupt came during the fifth trial (the poll after it):
        // four were measured, the fifth is not a measurement.
        assert_eq!(fake.calls, 5);
        let measured: usize = out.points.iter().map(|p| p.trials.len()).sum();
        assert_eq!(measured, 4);
    }

    #[test]
    fn the_winner_set_is_the_points_whose_ranges_overlap_the_winners() {
        // Exact values: p3 best (1000..1010), p2 overlaps (990..1001), p1
        // does not (900..950).
        struct Fixed;
        impl Runner for Fixed {
            fn run(&mut self, p: usize, _k: usize, t: usize, _r: f64) -> Result<Trial, String> {
                let v = [
                    [1.0, 2.0, 3.0],
                    [900.0, 950.0, 920.0],
                    [990.0, 1001.0, 995.0],
                    [1000.0, 1010.0, 1005.0],
                ][p][t];
                Ok(Trial {
                    committed_per_s: v,
                    elapsed_s: 1.0,
                    ..Trial::default()
                })
            }
        }
        let out = search(4, &Config::default(), &mut Fixed, &never).unwrap();
        assert_eq!(out.ranked, vec![3, 2, 1, 0]);
        assert_eq!(out.winners, vec![3, 2]);
        // Lower-is-better objectives rank the other way.
        let c = Config {
            objective: Objective::P99,
            ..Config::default()
        };
        struct Latency;
        impl Runner for Latency {
            fn run(&mut self, p: usize, _k: usize, _t: usize, _r: f64) -> Result<Trial, String> {
                Ok(Trial {
                    p99_us: [50.0, 10.0, 30.0, 20.0][p],
                    elapsed_s: 1.0,
                    ..Trial::default()
                })
            }
        }
        let out = search(4, &c, &mut Latency, &never).unwrap();
        assert_eq!(out.ranked, vec![1, 3, 2, 0]);
        assert_eq!(out.winners, vec![1]);
    }
}
