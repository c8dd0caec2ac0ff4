//! The MVCC study's figures (Wu et al., VLDB 2017, §7, and Table 1 with
//! Figures 24-25 of §8): every one a [`Sweep`] over the protocols, version
//! storage schemes, collectors, index pointers or Table 1's configurations,
//! each with the paper's claims about it.
//!
//! The settings are the paper's (§7.1-§7.5): YCSB with 10 integer
//! attributes and 10 operations per transaction unless a figure says
//! otherwise; append-only N2O, transaction-level GC and logical pointers
//! under §7.2's protocols; MVTO for §7.3-§7.5. The x values come twice:
//! scaled to a 2-core machine (the quick scale) and the paper's own
//! (`--paper-scale`, which also applies `paper_base`: 40 worker threads,
//! the paper's warehouses).

mod gc_index;
mod protocols;
mod storage;

use strata::{GcPolicy, IndexPointers, MemorySpaces, NonInline, Preset, Protocol, VersionStorage};

use super::findings::{At, Check, Expect, Finding, Metric};
use super::registry::Figure;
use super::sweep::{Set, Sweep, DEFAULT, PAPER_SPACE_INCREMENT};

/// Every figure of the study, in the paper's order: §7.2's protocols
/// (Figures 6-10), §7.3's version storage (11-17), §7.4-§7.5's GC and
/// index pointers (18-23) and §8's configurations (Table 1, 24-25).
pub fn figures() -> impl Iterator<Item = &'static Figure> {
    (protocols::FIGURES.iter())
        .chain(storage::FIGURES)
        .chain(gc_index::FIGURES)
}

/// The fields most of the study's sweeps share; each entry overrides what
/// it needs.
const SWEEP: Sweep = Sweep {
    paper_base: &[PAPER_THREADS],
    ..DEFAULT
};

/// "We fix the number of DBMS threads to 40" (§7.2-§7.5).
const PAPER_THREADS: Set = Set::Threads(40);

/// The protocol of the paper's storage, GC and index experiments (§7.3-§7.5,
/// Figures 11-23): MVTO (§7.3's first paragraph).
const SECTION_7_3_TO_7_5: Set = Set::Protocol(Protocol::Mvto);

const READ_ONLY: Set = Set::ReadRatio(1.0);
const READ_INTENSIVE: Set = Set::ReadRatio(0.8);
const UPDATE_INTENSIVE: Set = Set::ReadRatio(0.2);
const LOW_CONTENTION: Set = Set::Theta(0.2);
const HIGH_CONTENTION: Set = Set::Theta(0.8);
const THREADS_QUICK: &[f64] = &[1.0, 2.0];
const THREADS_PAPER: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 32.0, 40.0];
/// Series `a` over `b` on throughput.
const fn ratio(
    claim: &'static str,
    source: &'static str,
    a: &'static str,
    b: &'static str,
    at: At,
    expect: Expect,
) -> Finding {
    ratio_of(claim, source, Metric::Throughput, a, b, at, expect)
}

/// Series `a` over `b` on `metric`.
const fn ratio_of(
    claim: &'static str,
    source: &'static str,
    metric: Metric,
    a: &'static str,
    b: &'static str,
    at: At,
    expect: Expect,
) -> Finding {
    Finding {
        claim,
        source,
        check: Check::Ratio { metric, a, b, at },
        expect,
    }
}

/// One series' throughput at the last x over its first.
const fn trend(
    claim: &'static str,
    source: &'static str,
    series: &'static str,
    expect: Expect,
) -> Finding {
    trend_of(claim, source, Metric::Throughput, series, expect)
}

const fn trend_of(
    claim: &'static str,
    source: &'static str,
    metric: Metric,
    series: &'static str,
    expect: Expect,
) -> Finding {
    Finding {
        claim,
        source,
        check: Check::Trend { metric, series },
        expect,
    }
}

/// Every one of `above` over every one of `below` on `metric`: above 1.
const fn groups(
    claim: &'static str,
    source: &'static str,
    metric: Metric,
    above: &'static [&'static str],
    below: &'static [&'static str],
    at: At,
) -> Finding {
    Finding {
        claim,
        source,
        check: Check::Groups {
            metric,
            above,
            below,
            at,
        },
        expect: Expect::Above1,
    }
}

/// "Similar", "the same", "stable": within 25% either way.
const SAME: Expect = Expect::About(1.25);
/// The four protocols the study ran (§3, §7.2): a claim about "the
/// protocols" or "the others" reads these, not the three more Strata runs
/// beside them (SI, SI+SSI, OCC).
const STUDY_PROTOCOLS: &[&str] = &["MVTO", "MVOCC", "MV2PL", "SI+SSN"];
const STOCK_SCAN: Set = Set::StockScan(true);
const NEW_ORDER_ABORTS: Metric = Metric::TypeAbortRate("new-order");
const PAYMENT_ABORTS: Metric = Metric::TypeAbortRate("payment");
