//! Unit tests of `reproduce` (a file of their own to keep `reproduce.rs` to its
//! ideas).

use strata::{GcPolicy, MvtoLockedRead, NonInline, Options, Preset, Protocol, VersionStorage};

use super::findings::{At, Check, Judged, Measured, Metric, Verdict};
use super::registry::{self, Figure};
use super::sweep::{Axis, Sweep, Workload};
use super::{effects_lost, ReproduceArgs};
use crate::plot::Line;

/// The study's figures.
fn study() -> Vec<&'static Figure> {
    super::wu::figures().collect()
}

/// A study figure's sweep (every one of them is a sweep).
fn sweep(f: &Figure) -> &Sweep {
    f.sweep().unwrap_or_else(|| panic!("{} is a sweep", f.name))
}

/// The first figure number a study label names (0 for a table alone).
fn paper_figure(f: &Figure) -> u32 {
    f.label
        .split("Fig. ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

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
        (17, &["TPC-C", "version storage"]),
        (18, &["Tuple-level comparison"]),
        (19, &["Tuple-level comparison"]),
        (20, &["Tuple-level vs. transaction-level"]),
        (21, &["Tuple-level vs. transaction-level"]),
        (22, &["Index management"]),
        (23, &["Index management", "eight secondary indexes"]),
        (24, &["Configuration comparison"]),
        (25, &["Configuration comparison", "StockScan"]),
    ];
    for f in study() {
        let numbers: Vec<u32> = f
            .label
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse().ok())
            .filter(|&n| n != 1 || !f.label.starts_with("Table 1"))
            .collect();
        assert!(!numbers.is_empty(), "{}: {}", f.name, f.label);
        for n in numbers {
            let (_, words) = captions
                .iter()
                .find(|(c, _)| *c == n)
                .unwrap_or_else(|| panic!("{}: Fig. {n} is not one we reproduce", f.name));
            for w in *words {
                assert!(
                    f.caption.to_lowercase().contains(&w.to_lowercase()),
                    "{} is labelled Fig. {n} but its title {:?} lacks {w:?}",
                    f.name,
                    f.caption
                );
            }
        }
        let sw = sweep(f);
        let protocol = sw.base_point(&sw.series[0], 1000, 1, false).opts.protocol;
        let section_7_3 = (11..=23).contains(&paper_figure(f));
        if section_7_3 {
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
    for f in study() {
        let sw = sweep(f);
        if sw.axis == Axis::Time {
            continue;
        }
        for xs in [sw.xs, sw.xs_paper] {
            let lines: Vec<Line> = (sw.series.iter().enumerate())
                .map(|(i, s)| Line {
                    label: s.label.to_string(),
                    points: xs.iter().map(|&x| (x, 1000.0 * (i + 1) as f64)).collect(),
                })
                .collect();
            let title = sw.plot_title(f, 1000);
            let svg =
                line_chart_svg(&title, sw.axis.label(), "y", &lines, XTicks::Values(xs)).unwrap();
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
            for s in sw.series {
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
    let mut names: Vec<&str> = study().iter().map(|f| f.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), study().len());
    for f in study() {
        let sw = sweep(f);
        let time = sw.axis == Axis::Time;
        assert!(
            time || (!sw.xs.is_empty() && !sw.xs_paper.is_empty()),
            "{}",
            f.name
        );
        let s = f.status();
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
        let f = study().into_iter().find(|f| f.name == name).unwrap();
        assert_eq!(f.status(), "ready", "{name}");
    }
    let presets = study()
        .into_iter()
        .find(|f| f.name == "configurations")
        .unwrap();
    assert_eq!(presets.status(), "ready");
    let presets = sweep(presets);
    assert_eq!(presets.series.len(), Preset::ALL.len());
    let mut p = presets.base_point(&presets.series[4], 100, 1, false);
    presets.axis.set(2.0).unwrap().apply(&mut p);
    assert_eq!(p.opts, Options::preset(Preset::Hekaton));
}

/// The study's SI+SSN is SSN over snapshot isolation: every series of
/// every figure that runs SSN keeps first-updater-wins.
#[test]
fn the_studys_ssn_keeps_first_updater_wins() {
    let mut ssn_series = 0;
    for f in study() {
        for s in sweep(f).series {
            let p = sweep(f).base_point(s, 500, 1, false);
            if p.opts.protocol == Protocol::SiSsn {
                ssn_series += 1;
                assert!(!p.opts.ssn_blind_writes, "{} / {}", f.name, s.label);
            }
        }
    }
    assert!(ssn_series > 0);
}

/// The study's MVTO refuses a read of a write-locked version whoever
/// holds the lock (§3.1): every MVTO series runs that rule, not Strata's
/// narrower `AbortIfOlderHolder`.
#[test]
fn the_studys_mvto_aborts_reads_of_locked_versions() {
    let mut mvto_series = 0;
    for f in study() {
        for s in sweep(f).series {
            let p = sweep(f).base_point(s, 500, 1, false);
            if p.opts.protocol == Protocol::Mvto {
                mvto_series += 1;
                assert_eq!(
                    p.opts.mvto_locked_read,
                    MvtoLockedRead::Abort,
                    "{} / {}",
                    f.name,
                    s.label
                );
            }
        }
    }
    assert!(mvto_series > 0);
}

#[test]
fn series_settings_reach_the_configuration() {
    let f = sweep(
        study()
            .into_iter()
            .find(|f| f.name == "heterogeneous")
            .unwrap(),
    );
    let s = &f.series[1];
    let mut p = f.base_point(s, 500, 3, false);
    f.axis.set(2.0).unwrap().apply(&mut p);
    assert_eq!(p.opts.protocol, Protocol::Mvocc);
    assert_eq!(p.ycsb.ro_threads, 2);
    assert!(!p.ycsb.ro_hint);
    assert_eq!(p.ycsb.read_ratio, 0.2);
    assert_eq!(p.ycsb.theta, 0.8);
    assert_eq!(p.ycsb.records, 500);
    // Fig. 11's second series copies text attributes in full.
    let f = sweep(
        study()
            .into_iter()
            .find(|f| f.name == "non-inline")
            .unwrap(),
    );
    let copied = f.base_point(&f.series[1], 500, 3, false);
    assert_eq!(copied.opts.non_inline, NonInline::Copy);
    assert_eq!(
        f.base_point(&f.series[0], 500, 3, false).opts.non_inline,
        NonInline::Shared
    );
}

/// Every TPC-C figure keeps, at the quick scale, the contention its
/// paper setting has at its last point: terminals share warehouses at
/// both scales (fewer warehouses than threads) or at neither (one or
/// more per thread). Judged per figure from its own settings, so a
/// figure added with a quick scale that loses its effect fails here.
#[test]
fn tpcc_figures_keep_their_contention_at_the_quick_scale() {
    let mut seen = 0;
    for f in study()
        .into_iter()
        .filter(|f| sweep(f).workload == Workload::Tpcc)
    {
        let sw = sweep(f);
        let shares = |paper: bool| {
            let xs = if paper { sw.xs_paper } else { sw.xs };
            let mut p = sw.base_point(&sw.series[0], 1000, 1, paper);
            if let Some(s) = sw.axis.set(*xs.last().unwrap()) {
                s.apply(&mut p);
            }
            let threads = p.ycsb.threads as u32;
            let warehouses = if p.warehouses == 0 {
                threads
            } else {
                p.warehouses
            };
            (warehouses < threads, warehouses, threads)
        };
        let (quick, paper) = (shares(false), shares(true));
        assert_eq!(
            quick.0, paper.0,
            "{} ({}): quick scale {} warehouses for {} threads, paper scale {} for {}",
            f.name, f.label, quick.1, quick.2, paper.1, paper.2
        );
        seen += 1;
    }
    assert!(seen >= 4, "{seen} TPC-C figures");
}

/// The settings issue 17 found wrong are the paper's now: Figure 6 runs
/// without the READ ONLY hint at θ 0.2 with 1 and 100 operations;
/// Figures 8-9 run 100-operation transactions and 100-read queries on
/// 20 read-write threads at paper scale; TPC-C runs the paper's 10
/// warehouses at paper scale; Figure 13 sweeps the update share over
/// the storage schemes.
#[test]
fn figures_run_the_papers_settings() {
    let fig = |n: &str| sweep(study().into_iter().find(|f| f.name == n).unwrap());
    let at = |f: &Sweep, x: f64, paper: bool| {
        let mut p = f.base_point(&f.series[0], 1000, 1, paper);
        if let Some(s) = f.axis.set(x) {
            s.apply(&mut p);
        }
        p
    };
    for (name, ops) in [("scalability", 1), ("scalability-long", 100)] {
        let p = at(fig(name), 4.0, false);
        assert!(!p.ycsb.read_only_hint, "{name}");
        assert_eq!(
            (p.ycsb.ops_per_txn, p.ycsb.theta, p.ycsb.threads),
            (ops, 0.2, 4)
        );
        assert_eq!(p.ycsb.read_ratio, 1.0);
    }
    for name in ["heterogeneous", "heterogeneous-hint"] {
        let p = at(fig(name), 2.0, true);
        assert_eq!(
            (p.ycsb.ops_per_txn, p.ycsb.ro_ops, p.ycsb.threads),
            (100, 100, 20)
        );
        assert_eq!(fig(name).more, &[Metric::ReadOnlyThroughput]);
    }
    assert_eq!(at(fig("tpcc"), 40.0, true).warehouses, 10);
    for name in ["non-inline-read", "non-inline"] {
        let p = at(fig(name), 10.0, false);
        assert!(p.ycsb.update_text, "{name}: updates set a text attribute");
        assert_eq!((p.ycsb.attributes, p.ycsb.text_attributes), (1, 10));
        assert_eq!(p.ycsb.read_attrs, 1);
    }
    let p = at(fig("footprint"), 80.0, false);
    assert!((p.ycsb.read_ratio - 0.2).abs() < 1e-9);
    assert_eq!(fig("footprint").series[2].label, "delta");
    assert_eq!(at(fig("footprint-wide"), 0.0, false).ycsb.attributes, 100);
    // Paper scale: 40 threads where x is not the thread count.
    assert_eq!(at(fig("chain-ordering"), 0.9, true).ycsb.threads, 40);
    assert_eq!(at(fig("chain-ordering"), 0.9, false).ycsb.threads, 2);
    let p = at(fig("memory-spaces"), 4.0, false);
    assert_eq!(p.opts.memory_spaces.count(), 4);
    // Figure 18's VAC runs on O2N, as COOP must.
    let gc = fig("gc-tuple");
    let vac = gc.base_point(&gc.series[1], 1000, 1, false);
    assert_eq!(vac.opts.gc, GcPolicy::Vacuum);
    assert_eq!(vac.opts.version_storage, VersionStorage::AppendOldToNew);
}

/// A claim can only be judged from series and x values its figure runs:
/// a typo in a label, or an x the quick scale stops short of (Fig. 22a's
/// 20 indexes), would leave it "not measured" for good. Every figure of
/// every paper, at both scales.
#[test]
fn every_claim_reads_series_and_x_values_its_figure_runs() {
    for f in registry::figures() {
        let setup = f.setup();
        let series = setup.series(f);
        for c in f.claims {
            for s in c.check.series() {
                assert!(
                    series.iter().any(|l| l == s),
                    "{}: {:?} reads series {s:?}, not among {series:?}",
                    f.name,
                    c.claim
                );
            }
            if let Some(x) = c.check.x() {
                for paper in [false, true] {
                    let a = ReproduceArgs::for_scale(paper);
                    let xs = setup.xs(f, a.paper_scale).unwrap_or_else(|| {
                        panic!(
                            "{}: {:?} reads x = {x} of an axis with none",
                            f.name, c.claim
                        )
                    });
                    assert!(
                        xs.iter().any(|v| (v - x).abs() < 1e-9),
                        "{} (paper scale: {paper}): {:?} reads x = {x}, not among {xs:?}",
                        f.name,
                        c.claim
                    );
                }
            }
        }
        if f.sweep().is_none_or(|s| s.needs.is_none()) {
            assert!(
                !f.claims.is_empty() || f.note.is_some(),
                "{}: a figure states the paper's claims, or why it judges none",
                f.name
            );
        }
    }
}

/// Every claim quotes its paper and says where (a section, a figure or a
/// table), never a target of ours.
#[test]
fn every_claim_quotes_the_paper_and_its_place() {
    for f in registry::figures() {
        for c in f.claims {
            assert!(
                c.source.starts_with('§')
                    && (c.source.contains("Fig.") || c.source.contains("Table")),
                "{}: {:?} has source {:?}",
                f.name,
                c.claim,
                c.source
            );
            for ours in [
                "the issue",
                "(ours",
                "our bar",
                "at least 5x",
                "within 1.3x",
            ] {
                assert!(!c.claim.contains(ours), "{}: {:?}", f.name, c.claim);
            }
        }
    }
}

/// Each figure states the effect it studies, and its quick scale keeps
/// it, judged from the figure's own configuration against the paper
/// scale's: TPC-C terminals share warehouses at both scales or at
/// neither, a contention figure reaches its skew with two writers, an LLT
/// figure opens a long-lived snapshot while updates run, MV-PBT's chains
/// reach 50 versions, its filters fill several partitions. A figure added
/// with a quick scale that loses its effect fails here.
#[test]
fn every_figure_keeps_its_effect_at_the_quick_scale() {
    for f in registry::figures() {
        assert!(!f.effects.is_empty(), "{}: states no effect", f.name);
        let quick = f.setup().facts(f, &ReproduceArgs::for_scale(false));
        let paper = f.setup().facts(f, &ReproduceArgs::for_scale(true));
        for e in f.effects {
            if let Err(why) = e.holds(&quick, &paper) {
                panic!("{} ({}): {why}", f.name, f.reference());
            }
        }
    }
    // And the check bites: a run with one thread loses a contention
    // figure's effect, with ten warehouses Fig. 10's.
    let fig = registry::find("contention").unwrap();
    let one = ReproduceArgs {
        threads: Some(1),
        ..ReproduceArgs::for_scale(false)
    };
    assert_eq!(
        effects_lost(fig, &one).len(),
        1,
        "{:?}",
        effects_lost(fig, &one)
    );
    let tpcc = registry::find("tpcc").unwrap();
    assert!(effects_lost(tpcc, &ReproduceArgs::for_scale(false)).is_empty());
}

/// The claims read the series the paper names (issue 41, item 8): Fig.
/// 9's "the same" spreads over the study's four protocols, not the seven
/// run; Fig. 10's "than the other protocols" reads all three others; Fig.
/// 22a's number is judged at the 20 indexes the paper quotes, which the
/// quick scale runs.
#[test]
fn claims_read_the_series_and_range_the_paper_names() {
    let claims = |name: &str| registry::find(name).unwrap().claims;
    let spread = claims("heterogeneous-hint")
        .iter()
        .find_map(|c| match c.check {
            Check::Spread { series, .. } => Some(series),
            _ => None,
        })
        .unwrap();
    assert_eq!(spread, ["MVTO", "MVOCC", "MV2PL", "SI+SSN"]);
    let mvto_over: Vec<&str> = (claims("tpcc").iter())
        .filter_map(|c| match c.check {
            Check::Ratio { a: "MVTO", b, .. } => Some(b),
            _ => None,
        })
        .collect();
    assert_eq!(mvto_over, ["MVOCC", "MV2PL", "SI+SSN"]);
    let at_20 = claims("index-pointers")
        .iter()
        .any(|c| matches!(c.check, Check::Ratio { at: At::X(x), .. } if x == 20.0));
    assert!(at_20);
    assert!(sweep(registry::find("index-pointers").unwrap())
        .xs
        .contains(&20.0));
}

/// Fig. 20a's "slightly better" is a band of 1.0-1.1x: the 1.35x the
/// 2-core run measured is more than twice that effect, so it exaggerates
/// (it once read "differs" in the code and "in direction" in the docs).
#[test]
fn fig_20a_slightly_better_measured_at_1_35x_exaggerates() {
    let fig = registry::find("gc-read").unwrap();
    let mut m = Measured::default();
    for _ in 0..3 {
        for (s, v) in [
            ("transaction-level", 135.0),
            ("VAC", 100.0),
            ("no GC", 50.0),
        ] {
            m.push(s, 1.0, vec![(Metric::Throughput, v)]);
        }
    }
    let slightly = fig
        .claims
        .iter()
        .find(|c| c.claim.contains("slightly better"))
        .unwrap();
    assert_eq!(Judged::new(slightly, &m).verdict, Verdict::Exaggerates);
}

/// MV-PBT Fig. 12b's "almost constant" is two-sided: an index-only scan
/// that became 0.38x as long differs (it read "agrees" under "at most
/// 1.3x").
#[test]
fn mvpbt_12b_almost_constant_is_two_sided() {
    let fig = registry::find("mvpbt-fig12b").unwrap();
    let constant = fig
        .claims
        .iter()
        .find(|c| c.claim.contains("almost constant"))
        .unwrap();
    let Check::Trend { series, metric } = constant.check else {
        panic!("a trend");
    };
    let mut m = Measured::default();
    for _ in 0..3 {
        m.push(series, 1.0, vec![(metric, 2.0)]);
        m.push(series, 50.0, vec![(metric, 0.76)]);
    }
    assert_eq!(Judged::new(constant, &m).verdict, Verdict::Differs);
}

/// A claim over time is judged per trial: three trials whose samples
/// land a few milliseconds apart line up at their seconds (they once
/// pooled into one "trial"), and a claim whose trials straddle its band
/// is undecided.
#[test]
fn claims_over_time_are_judged_per_trial() {
    let fig = registry::find("vdriver-fig13").unwrap();
    let retains = fig
        .claims
        .iter()
        .find(|c| {
            c.claim.contains("retain transaction throughput")
                && matches!(c.check, Check::Ratio { .. })
        })
        .unwrap();
    let Check::Ratio { a, b, .. } = retains.check else {
        panic!("a ratio");
    };
    let mut m = Measured::default();
    // Trial 1: 1.0x, trial 2: 1.0x, trial 3: 0.5x (its LLT series slow).
    // Trial 3's sampler fell behind: no sample near 4 s, two near 6 s.
    for (trial, (llt, drift)) in [(100.0, 0.003), (100.0, -0.004), (50.0, 0.007)]
        .into_iter()
        .enumerate()
    {
        let mut seconds: Vec<f64> = (1..=10).map(f64::from).collect();
        if trial == 2 {
            seconds = vec![1.0, 2.0, 3.0, 5.6, 6.2, 7.0, 8.0, 9.0, 10.0];
        }
        for t in seconds {
            let t = t + drift * (trial as f64 + 1.0);
            m.push_sample(a, trial + 1, t, vec![(Metric::Throughput, llt)]);
            m.push_sample(b, trial + 1, t, vec![(Metric::Throughput, 100.0)]);
        }
    }
    assert_eq!(m.trials(), 3);
    let j = Judged::new(retains, &m);
    assert_eq!(j.verdict, Verdict::Undecided, "{}", j.line());
}

/// Three trials by default at the quick scale, five at the paper's.
#[test]
fn three_trials_by_default() {
    assert_eq!(ReproduceArgs::for_scale(false).trials().ok(), Some(3));
    assert_eq!(ReproduceArgs::for_scale(true).trials().ok(), Some(5));
    let zero = ReproduceArgs {
        trials: Some(0),
        ..ReproduceArgs::for_scale(false)
    };
    assert!(zero.trials().is_err());
}

/// The registry holds every paper's figures once each, under unique
/// names, each with a status, a caption and a label; `find` reaches each.
#[test]
fn the_registry_holds_every_papers_figures_under_unique_names() {
    use super::registry::Paper;
    let all: Vec<&Figure> = registry::figures().collect();
    let mut names: Vec<&str> = all.iter().map(|f| f.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), all.len(), "a name is registered twice");
    for paper in [Paper::Wu, Paper::VDriver, Paper::Ermia, Paper::MvPbt] {
        assert!(all.iter().any(|f| f.paper == paper), "{paper:?}");
    }
    for f in &all {
        assert!(!f.caption.is_empty() && !f.label.is_empty(), "{}", f.name);
        assert!(!f.status().is_empty(), "{}", f.name);
        assert!(std::ptr::eq(registry::find(f.name).unwrap(), *f));
    }
    assert!(registry::find("all").is_none(), "`all` is not a figure");
}

/// Every point of every sweep is a configuration the workload takes, at
/// both scales (20 secondary indexes once needed more attributes than
/// the table had, so Fig. 22's paper scale could never run).
#[test]
fn every_point_of_every_sweep_validates_at_both_scales() {
    for f in study() {
        let sw = sweep(f);
        for paper in [false, true] {
            for s in sw.series {
                for &x in sw.xs_of(paper) {
                    let mut p = sw.base_point(s, 1000, 1, paper);
                    if let Some(set) = sw.axis.set(x) {
                        set.apply(&mut p);
                    }
                    if let Err(e) = p.ycsb.validate() {
                        panic!("{} {} at x = {x} (paper: {paper}): {e}", f.name, s.label);
                    }
                }
            }
        }
    }
}

/// docs/REPRODUCTION.md's claims table is the registry's: the docs state
/// the claims the code judges, and no verdict of their own.
#[test]
fn the_docs_claims_table_is_the_registrys() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/REPRODUCTION.md");
    let doc = std::fs::read_to_string(path).expect("docs/REPRODUCTION.md");
    let begin = "<!-- claims:begin -->\n";
    let a = doc.find(begin).expect("begin marker") + begin.len();
    let b = doc[a..].find("<!-- claims:end -->").expect("end marker") + a;
    assert_eq!(
        doc[a..b],
        super::claims_markdown(),
        "docs/REPRODUCTION.md's claims are stale: paste `strata reproduce --claims`"
    );
}

/// `reproduce all` takes every paper's figures unless `--paper` names one.
#[test]
fn all_runs_every_paper_unless_one_is_named() {
    use super::registry::Paper;
    let every = super::papers(&ReproduceArgs::for_scale(false)).ok();
    assert_eq!(every, Some(Paper::ALL.to_vec()));
    let one = ReproduceArgs {
        paper: Some("vdriver".into()),
        ..ReproduceArgs::for_scale(false)
    };
    assert_eq!(super::papers(&one).ok(), Some(vec![Paper::VDriver]));
    let bad = ReproduceArgs {
        paper: Some("peloton".into()),
        ..ReproduceArgs::for_scale(false)
    };
    assert!(super::papers(&bad).is_err());
}

/// A plotted line averages the trials that have a sample at a point; a
/// trial without one (its place held by NaN) does not make it NaN.
#[test]
fn a_line_over_time_skips_trials_without_a_sample() {
    let mut m = Measured::default();
    m.push_sample("s", 1, 1.0, vec![(Metric::Throughput, 10.0)]);
    m.push_sample("s", 2, 2.0, vec![(Metric::Throughput, 30.0)]);
    m.push_sample("s", 3, 1.002, vec![(Metric::Throughput, 20.0)]);
    m.push_sample("s", 3, 2.004, vec![(Metric::Throughput, 50.0)]);
    assert_eq!(m.line("s", Metric::Throughput), [(1.0, 15.0), (2.0, 40.0)]);
}
