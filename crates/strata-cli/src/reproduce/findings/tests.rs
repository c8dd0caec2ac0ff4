//! The verdict rules on crafted numbers.

use super::*;

/// Three trials of N2O and O2N on one metric at θ 0 and 0.9, O2N at 100
/// throughout, N2O at 100 then `n2o[t]` in trial t.
fn two_series(n2o: &[f64]) -> Measured {
    let mut m = Measured::default();
    for &v in n2o {
        for (x, a) in [(0.0, 100.0), (0.9, v)] {
            m.push("N2O", x, vec![(Metric::Throughput, a)]);
            m.push("O2N", x, vec![(Metric::Throughput, 100.0)]);
        }
    }
    m
}

const N2O_OVER_O2N: Check = Check::Ratio {
    metric: Metric::Throughput,
    a: "N2O",
    b: "O2N",
    at: At::X(0.9),
};

fn finding(check: Check, expect: Expect) -> Finding {
    Finding {
        claim: "N2O ordering achieves 2.4–3.4× better performance",
        source: "§7.3, Fig. 12",
        check,
        expect,
    }
}

#[test]
fn each_trial_is_its_own_number_paired_across_series() {
    let m = two_series(&[250.0, 300.0, 280.0]);
    assert_eq!(m.trials(), 3);
    assert_eq!(m.numbers(&N2O_OVER_O2N), [Some(2.5), Some(3.0), Some(2.8)]);
    // A plot draws the mean of the trials.
    let line = m.line("N2O", Metric::Throughput);
    assert_eq!(line[0], (0.0, 100.0));
    assert!((line[1].1 - 276.666).abs() < 0.01, "{line:?}");
    let j = Judged::new(&finding(N2O_OVER_O2N, Expect::Range(2.4, 3.4)), &m);
    assert_eq!(j.verdict, Verdict::Agrees);
    assert_eq!(j.median(), Some(2.8));
    assert_eq!(j.spread(), Some((2.5, 3.0)));
    let text = j.line();
    assert!(
        text.contains("here 2.80x (trials 2.50, 3.00, 2.80; spread 2.50–3.00): agrees"),
        "{text}"
    );
    assert!(text.contains("§7.3, Fig. 12"), "{text}");
    // A CSV row per trial and one for the claim.
    let rows = j.rows("chain-ordering");
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[3].trial, "all");
    assert_eq!((rows[3].min, rows[3].max), (Some(2.5), Some(3.0)));
}

/// Trials on both sides of a band's edge leave the claim undecided, not
/// at the luckier verdict.
#[test]
fn trials_that_straddle_a_band_edge_are_undecided() {
    let m = two_series(&[230.0, 260.0, 250.0]);
    let j = Judged::new(&finding(N2O_OVER_O2N, Expect::Range(2.4, 3.4)), &m);
    assert_eq!(
        j.per_trial,
        [
            Some(Verdict::AgreesInDirection),
            Some(Verdict::Agrees),
            Some(Verdict::Agrees)
        ]
    );
    assert_eq!(j.verdict, Verdict::Undecided);
    assert!(
        j.line()
            .ends_with("undecided (agrees ×2, agrees in direction ×1)"),
        "{}",
        j.line()
    );
    // The same on a direction: one trial above 1, two below.
    let m = two_series(&[110.0, 90.0, 95.0]);
    let j = Judged::new(&finding(N2O_OVER_O2N, Expect::Above1), &m);
    assert_eq!(j.verdict, Verdict::Undecided);
    // All alike: that verdict.
    let m = two_series(&[90.0, 95.0, 80.0]);
    let j = Judged::new(&finding(N2O_OVER_O2N, Expect::Above1), &m);
    assert_eq!(j.verdict, Verdict::Differs);
}

/// A claim some trials did not measure is undecided, not judged on the
/// trials that did; and a ratio at or below 0 (of net memory that shrank)
/// measures nothing (Fig. 19's COOP/VAC memory, 2026-11-29: trials -, -,
/// -0.065 were judged "agrees in direction" on the one negative trial).
#[test]
fn unmeasured_or_non_positive_trials_leave_a_ratio_claim_undecided() {
    // Trial 2 makes O2N's number 0 at 0.9: N2O / O2N is infinite there.
    let mut m = Measured::default();
    for (n2o, o2n) in [(250.0, 100.0), (260.0, 0.0), (270.0, 100.0)] {
        for (x, a, b) in [(0.0, 100.0, 100.0), (0.9, n2o, o2n)] {
            m.push("N2O", x, vec![(Metric::Throughput, a)]);
            m.push("O2N", x, vec![(Metric::Throughput, b)]);
        }
    }
    let j = Judged::new(&finding(N2O_OVER_O2N, Expect::Range(2.4, 3.4)), &m);
    assert_eq!(j.numbers, [Some(2.5), None, Some(2.7)]);
    assert_eq!(j.verdict, Verdict::Undecided);
    // A negative ratio is no number either.
    let m = two_series(&[-50.0, -40.0, -30.0]);
    let j = Judged::new(&finding(N2O_OVER_O2N, Expect::Below1), &m);
    assert_eq!(j.numbers, [None, None, None]);
    assert_eq!(j.verdict, Verdict::NotMeasured);
}

/// An effect more than twice the paper's largest exaggerates it, either
/// side of 1; up to twice it agrees in direction; a claim with no number
/// cannot be exaggerated.
#[test]
fn an_effect_beyond_twice_the_papers_exaggerates() {
    // "40% higher": the band 1.3–1.5, its largest effect 0.5.
    let forty = Expect::Range(1.3, 1.5);
    assert_eq!(judge(forty, 1.4, true), Verdict::Agrees);
    assert_eq!(judge(forty, 1.9, true), Verdict::AgreesInDirection);
    assert_eq!(judge(forty, 2.01, true), Verdict::Exaggerates);
    assert_eq!(judge(forty, 6.1, true), Verdict::Exaggerates);
    assert_eq!(judge(forty, 1.1, true), Verdict::AgreesInDirection);
    assert_eq!(judge(forty, 0.9, true), Verdict::Differs);
    // "falls by about 50%": 0.4–0.6, the largest effect 1/0.4 - 1 = 1.5.
    let half = Expect::Range(0.4, 0.6);
    assert_eq!(judge(half, 0.3, true), Verdict::AgreesInDirection);
    assert_eq!(judge(half, 0.2, true), Verdict::Exaggerates);
    assert_eq!(judge(half, 0.8, true), Verdict::AgreesInDirection);
    // "slightly better": 1.0–1.1; 1.35x is more than twice that.
    assert_eq!(
        judge(Expect::Range(1.0, 1.1), 1.35, true),
        Verdict::Exaggerates
    );
    // No number stated: no exaggeration.
    assert_eq!(judge(Expect::Above1, 50.0, true), Verdict::Agrees);
    // The rule over trials: 6.1x, 7.8x against "25% higher".
    let m = two_series(&[610.0, 780.0, 700.0]);
    let j = Judged::new(&finding(N2O_OVER_O2N, Expect::Range(1.15, 1.35)), &m);
    assert_eq!(j.verdict, Verdict::Exaggerates);
}

/// "About equal" is a band on both sides of 1: a scan that became 0.38x
/// as long is not "about the same".
#[test]
fn about_equal_is_two_sided() {
    let same = Expect::About(1.3);
    assert_eq!(judge(same, 1.0, true), Verdict::Agrees);
    assert_eq!(judge(same, 1.25, true), Verdict::Agrees);
    assert_eq!(judge(same, 0.8, true), Verdict::Agrees);
    assert_eq!(judge(same, 0.38, true), Verdict::Differs);
    assert_eq!(judge(same, 1.5, true), Verdict::Differs);
    assert!(
        expect_text(same).contains("0.77–1.3x"),
        "{}",
        expect_text(same)
    );
    // Over trials: a trend of 0.38 in every trial.
    let mut m = Measured::default();
    for _ in 0..3 {
        m.push("index-only", 1.0, vec![(Metric::Throughput, 10.0)]);
        m.push("index-only", 50.0, vec![(Metric::Throughput, 3.8)]);
    }
    let trend = Check::Trend {
        metric: Metric::Throughput,
        series: "index-only",
    };
    let j = Judged::new(&finding(trend, same), &m);
    assert_eq!(j.verdict, Verdict::Differs);
}

/// A spread reads exactly the series the paper ran: protocols the paper
/// did not run do not widen it, and a missing one leaves it unmeasured.
#[test]
fn a_spread_reads_only_the_series_it_names() {
    let mut m = Measured::default();
    for (s, v) in [
        ("MVTO", 100.0),
        ("MVOCC", 110.0),
        ("MV2PL", 95.0),
        ("SI+SSN", 105.0),
        ("SI", 300.0),
        ("OCC", 20.0),
    ] {
        m.push(s, 2.0, vec![(Metric::ReadOnlyThroughput, v)]);
    }
    let four = Check::Spread {
        metric: Metric::ReadOnlyThroughput,
        at: At::Last,
        series: &["MVTO", "MVOCC", "MV2PL", "SI+SSN"],
    };
    let every = Check::Spread {
        metric: Metric::ReadOnlyThroughput,
        at: At::Last,
        series: &[],
    };
    let four_n = m.number(&four, 0).unwrap();
    assert!((four_n - 110.0 / 95.0).abs() < 1e-9);
    assert_eq!(m.number(&every, 0), Some(15.0));
    assert_eq!(judge(Expect::About(1.25), four_n, true), Verdict::Agrees);
    let missing = Check::Spread {
        metric: Metric::ReadOnlyThroughput,
        at: At::Last,
        series: &["MVTO", "SI+SSI"],
    };
    assert_eq!(m.number(&missing, 0), None);
}

/// A value is not a ratio: below a bound it differs, with no direction.
#[test]
fn a_value_has_no_direction() {
    let mut m = Measured::default();
    for v in [500.0, 40.0] {
        m.push("vDriver", 0.0, vec![(Metric::Named("longest chain"), v)]);
    }
    let longest = Check::Value {
        metric: Metric::Named("longest chain"),
        series: "vDriver",
        at: At::Max,
    };
    assert_eq!(m.numbers(&longest), [Some(500.0), Some(40.0)]);
    assert_eq!(
        judge(Expect::AtLeast(1000.0), 500.0, false),
        Verdict::Differs
    );
    assert_eq!(
        judge(Expect::AtLeast(1000.0), 500.0, true),
        Verdict::AgreesInDirection
    );
    let j = Judged::new(&finding(longest, Expect::AtMost(100.0)), &m);
    assert_eq!(j.verdict, Verdict::Undecided);
    assert!(
        j.line().contains("here 270 (trials 500, 40.0;"),
        "{}",
        j.line()
    );
}

#[test]
fn the_places_on_the_x_axis() {
    let mut m = Measured::default();
    for (x, v) in [(1.0, 10.0), (2.0, 20.0), (3.0, 30.0), (4.0, 40.0)] {
        m.push("a", x, vec![(Metric::Throughput, v)]);
        m.push("b", x, vec![(Metric::Throughput, 10.0)]);
    }
    let at = |at| Check::Ratio {
        metric: Metric::Throughput,
        a: "a",
        b: "b",
        at,
    };
    assert_eq!(m.number(&at(At::Last), 0), Some(4.0));
    assert_eq!(m.number(&at(At::X(2.0)), 0), Some(2.0));
    assert_eq!(m.number(&at(At::Mean), 0), Some(2.5));
    assert_eq!(m.number(&at(At::MeanFrom(0.5)), 0), Some(3.5));
    assert_eq!(m.number(&at(At::Max), 0), Some(4.0));
    assert_eq!(m.number(&at(At::Min), 0), Some(1.0));
    assert_eq!(m.number(&at(At::MinUpTo(2.5)), 0), Some(1.0));
    assert_eq!(m.number(&at(At::X(9.0)), 0), None);
    let growth = Check::Growth {
        metric: Metric::Throughput,
        a: "a",
        b: "b",
    };
    assert_eq!(m.number(&growth, 0), Some(4.0));
    // a / b over the second half (3.5) against the first (1.5).
    let change = Check::Change {
        metric: Metric::Throughput,
        a: "a",
        b: "b",
        before: At::MeanUpTo(0.5),
        after: At::MeanFrom(0.5),
    };
    assert_eq!(m.number(&change, 0), Some(3.5 / 1.5));
    // Nothing measured: not measured.
    let j = Judged::new(&finding(at(At::X(9.0)), Expect::Above1), &m);
    assert_eq!(j.verdict, Verdict::NotMeasured);
    assert!(
        j.line().contains("here not measured: not measured"),
        "{}",
        j.line()
    );
}

/// Groups: every one of `above` over every one of `below`, by the closest
/// pair; a missing member leaves it unmeasured.
#[test]
fn groups_compare_the_closest_pair() {
    let mut m = Measured::default();
    for (s, v) in [
        ("Oracle", 90.0),
        ("NuoDB", 120.0),
        ("Postgres", 60.0),
        ("Hekaton", 75.0),
    ] {
        m.push(s, 2.0, vec![(Metric::Throughput, v)]);
    }
    let best = Check::Groups {
        metric: Metric::Throughput,
        above: &["Oracle", "NuoDB"],
        below: &["Postgres", "Hekaton"],
        at: At::Last,
    };
    assert_eq!(m.number(&best, 0), Some(1.2));
    let missing = Check::Groups {
        metric: Metric::Throughput,
        above: &["Oracle", "MySQL"],
        below: &["Postgres"],
        at: At::Last,
    };
    assert_eq!(m.number(&missing, 0), None);
}
