//! §7.3, version storage (Figures 11-17): MVTO throughout ("since it
//! achieved the most balanced performance in the previous experiments");
//! non-inline attributes and chain ordering in append-only storage, then
//! append-only (N2O), time-travel and delta against each other.

use super::*;
use crate::reproduce::findings::{At, Expect, Metric};
use crate::reproduce::registry::{Config, Effect, Figure, Paper};
use crate::reproduce::sweep::{Axis, Series, Sweep, Workload};

const THETAS: &[f64] = &[0.0, 0.5, 0.7, 0.8, 0.9, 0.99];
/// Figures 14 and 15 fix the table at 100 attributes.
const ATTRS_100: &[f64] = &[1.0, 10.0, 25.0, 50.0, 100.0];

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

const ORDER_SERIES: &[Series] = &[
    Series {
        label: "N2O",
        settings: &[N2O],
    },
    Series {
        label: "O2N",
        settings: &[O2N],
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

/// "a variable number of 100-byte non-inline VARCHAR type attributes";
/// "each operation only accesses one attribute".
const NON_INLINE_BASE: [Set; 3] = [Set::Attributes(1), Set::ReadAttrs(1), Set::UpdateText(true)];
/// The paper's x values of Fig. 11, and the quick scale's: up to the 50
/// attributes §7.3's read-intensive number is quoted at.
const NON_INLINE_XS: &[f64] = &[1.0, 10.0, 50.0];
const NON_INLINE_XS_PAPER: &[f64] = &[1.0, 10.0, 20.0, 50.0, 100.0];
const NON_INLINE_NOTE: &str = "rows keep one integer attribute beside the text ones (Strata's YCSB table needs one); the memory panel (11b) is ours";

const FIG_12: &str = "§7.3, Fig. 12";
const ORDER_ALWAYS: &str = "the N2O ordering always performs better than O2N in both workloads";
const ORDER_AT_09: &str = "This phenomenon is especially evident with the measurements under the highest contention level (θ =0.9), where the N2O ordering achieves 2.4–3.4× better performance";
const FIG_13A: &str = "§7.3, Fig. 13a";
const FIG_13B: &str = "§7.3, Fig. 13b";
const DELTA_2X: &str = "when the table has 100 attributes, the delta scheme achieves ∼2× better performance than append-only and time-travel schemes because it uses less memory";
const FIG_14: &str = "§7.3, Fig. 14";
const STABLE_14: &str = "the append-only and time-travel schemes' performance is stable regardless of the number of modified attributes";
const DELTA_BEST_14: &str = "the delta scheme performs the best when the number of modified attributes is small because it copies less data per version";
const EQUAL_14: &str = "as the scope of the update operations increases, it is equivalent to the others because it copies the same amount of data per delta";
const FIG_15A: &str = "§7.3, Fig. 15a";
const DEGRADES_15A: &str = "The performance of appendonly storage and time-travel storage also degrades because the intersocket communication overhead increases proportionally to the amount of data accessed by each read operation";
const FIG_15B: &str = "§7.3, Fig. 15b";
const DEGRADES_15B: &str = "increasing the number of attributes accessed by each read operation degrades the performance of all the storage schemes";
const FIG_16: &str = "§7.3, Fig. 16";
const SPACES_16: &str = "the append-only and time-travel schemes' throughput is improved by 1.6−4× when increasing the number of separate memory spaces from 1 to 20";
const FIG_17A: &str = "§7.3, Fig. 17a";
const FIG_17B: &str = "§7.3, Fig. 17b";
const BETTER_17: &str =
    "append-only storage achieves comparatively better performance than the other two schemes";
const SCAN_17: &str = "the append-only and time-travel schemes maintain a latency that is 25–47% lower when using 40 threads";

/// Figure 14's claims, the same for both panels.
const CLAIMS_14: &[Finding] = &[
    trend(STABLE_14, FIG_14, "append-only", SAME),
    trend(STABLE_14, FIG_14, "time-travel", SAME),
    groups(
        DELTA_BEST_14,
        FIG_14,
        Metric::Throughput,
        &["delta"],
        &["append-only", "time-travel"],
        At::X(1.0),
    ),
    ratio(EQUAL_14, FIG_14, "delta", "append-only", At::Last, SAME),
    ratio(EQUAL_14, FIG_14, "delta", "time-travel", At::Last, SAME),
];

pub const FIGURES: &[Figure] = &[
    Figure {
        name: "non-inline-read",
        paper: Paper::Wu,
        label: "Fig. 11a",
        caption: "Non-inline attributes: read-intensive YCSB",
        config: Config::Sweep(Sweep {
            axis: Axis::TextAttrs,
            xs: NON_INLINE_XS,
            xs_paper: NON_INLINE_XS_PAPER,
            base: &[
                SECTION_7_3_TO_7_5,
                READ_INTENSIVE,
                LOW_CONTENTION,
                NON_INLINE_BASE[0],
                NON_INLINE_BASE[1],
                NON_INLINE_BASE[2],
            ],
            series: NON_INLINE_SERIES,
            ..SWEEP
        }),
        claims: &[ratio(
            "With the read-intensive workload, the DBMS achieves ∼40% higher throughput when the number of non-inlined attributes is increased to 50 with these counters compared to conventional full-tuple-copy scheme",
            "§7.3, Fig. 11a",
            "shared (reference counted)",
            "copied in full",
            At::X(50.0),
            Expect::Range(1.3, 1.5),
        )],
        effects: &[Effect::Updates],
        note: Some(NON_INLINE_NOTE),
    },
    Figure {
        name: "non-inline",
        paper: Paper::Wu,
        label: "Fig. 11b",
        caption: "Non-inline attributes: update-intensive YCSB",
        config: Config::Sweep(Sweep {
            axis: Axis::TextAttrs,
            xs: NON_INLINE_XS,
            xs_paper: NON_INLINE_XS_PAPER,
            base: &[
                SECTION_7_3_TO_7_5,
                UPDATE_INTENSIVE,
                LOW_CONTENTION,
                NON_INLINE_BASE[0],
                NON_INLINE_BASE[1],
                NON_INLINE_BASE[2],
            ],
            series: NON_INLINE_SERIES,
            more: &[Metric::BytesPerRow],
            ..SWEEP
        }),
        claims: &[ratio(
            "This difference is more prominent with the update-intensive workload where the results in Fig. 11b show that the performance gap reaches over 100%",
            "§7.3, Fig. 11b",
            "shared (reference counted)",
            "copied in full",
            At::Last,
            Expect::AtLeast(2.0),
        )],
        effects: &[Effect::Updates],
        note: Some(NON_INLINE_NOTE),
    },
    Figure {
        name: "chain-ordering-read",
        paper: Paper::Wu,
        label: "Fig. 12a",
        caption: "Version chain ordering: read-intensive YCSB",
        config: Config::Sweep(Sweep {
            axis: Axis::Theta,
            xs: THETAS,
            xs_paper: THETAS,
            base: &[SECTION_7_3_TO_7_5, READ_INTENSIVE],
            series: ORDER_SERIES,
            ..SWEEP
        }),
        claims: &[
            ratio(ORDER_ALWAYS, FIG_12, "N2O", "O2N", At::X(0.0), Expect::Above1),
            ratio(ORDER_AT_09, FIG_12, "N2O", "O2N", At::X(0.9), Expect::Range(2.4, 3.4)),
        ],
        effects: &[Effect::Skew(0.8), Effect::Updates],
        note: None,
    },
    Figure {
        name: "chain-ordering",
        paper: Paper::Wu,
        label: "Fig. 12b",
        caption: "Version chain ordering: update-intensive YCSB",
        config: Config::Sweep(Sweep {
            axis: Axis::Theta,
            xs: THETAS,
            xs_paper: THETAS,
            base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE],
            series: ORDER_SERIES,
            ..SWEEP
        }),
        claims: &[
            ratio(ORDER_ALWAYS, FIG_12, "N2O", "O2N", At::X(0.0), Expect::Above1),
            ratio(ORDER_AT_09, FIG_12, "N2O", "O2N", At::X(0.9), Expect::Range(2.4, 3.4)),
        ],
        effects: &[Effect::Skew(0.8), Effect::Updates],
        note: None,
    },
    Figure {
        name: "footprint",
        paper: Paper::Wu,
        label: "Fig. 13a",
        caption: "Transaction footprint: 10 attributes",
        config: Config::Sweep(Sweep {
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
            ..SWEEP
        }),
        claims: &[
            ratio(
                "the append-only and delta schemes achieve similar performance when the table has 10 attributes",
                FIG_13A,
                "delta",
                "append-only",
                At::Last,
                SAME,
            ),
            ratio(
                "Likewise, the append-only and time-travel throughput is almost the same",
                FIG_13A,
                "time-travel",
                "append-only",
                At::Last,
                SAME,
            ),
        ],
        effects: &[Effect::Updates],
        note: None,
    },
    Figure {
        name: "footprint-wide",
        paper: Paper::Wu,
        label: "Fig. 13b",
        caption: "Transaction footprint: 100 attributes",
        config: Config::Sweep(Sweep {
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
            ..SWEEP
        }),
        claims: &[
            ratio(DELTA_2X, FIG_13B, "delta", "append-only", At::Last, Expect::Range(1.8, 2.2)),
            ratio(DELTA_2X, FIG_13B, "delta", "time-travel", At::Last, Expect::Range(1.8, 2.2)),
        ],
        effects: &[Effect::Updates],
        note: None,
    },
    Figure {
        name: "attributes-modified-read",
        paper: Paper::Wu,
        label: "Fig. 14a",
        caption: "Attributes modified: read-intensive YCSB",
        config: Config::Sweep(Sweep {
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
            ..SWEEP
        }),
        claims: CLAIMS_14,
        effects: &[Effect::Updates],
        note: None,
    },
    Figure {
        name: "attributes-modified",
        paper: Paper::Wu,
        label: "Fig. 14b",
        caption: "Attributes modified: update-intensive YCSB",
        config: Config::Sweep(Sweep {
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
            ..SWEEP
        }),
        claims: CLAIMS_14,
        effects: &[Effect::Updates],
        note: None,
    },
    Figure {
        name: "attributes-accessed",
        paper: Paper::Wu,
        label: "Fig. 15a",
        caption: "Attributes accessed: updates modify one attribute",
        config: Config::Sweep(Sweep {
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
            ..SWEEP
        }),
        claims: &[
            Finding {
                claim: "when updates only modify one (random) attribute, increasing the number of read attributes largely affects the delta schemes",
                source: FIG_15A,
                check: Check::Growth {
                    metric: Metric::Throughput,
                    a: "delta",
                    b: "append-only",
                },
                expect: Expect::Below1,
            },
            trend(DEGRADES_15A, FIG_15A, "append-only", Expect::Below1),
            trend(DEGRADES_15A, FIG_15A, "time-travel", Expect::Below1),
        ],
        effects: &[Effect::Updates],
        note: Some("the read-intensive mix (the paper does not name the mix)"),
    },
    Figure {
        name: "attributes-accessed-all",
        paper: Paper::Wu,
        label: "Fig. 15b",
        caption: "Attributes accessed: updates modify every attribute",
        config: Config::Sweep(Sweep {
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
            ..SWEEP
        }),
        claims: &[
            trend(DEGRADES_15B, FIG_15B, "append-only", Expect::Below1),
            trend(DEGRADES_15B, FIG_15B, "time-travel", Expect::Below1),
            trend(DEGRADES_15B, FIG_15B, "delta", Expect::Below1),
        ],
        effects: &[Effect::Updates],
        note: Some("the read-intensive mix (the paper does not name the mix)"),
    },
    Figure {
        name: "memory-spaces",
        paper: Paper::Wu,
        label: "Fig. 16",
        caption: "Memory allocation: separate memory spaces",
        config: Config::Sweep(Sweep {
            axis: Axis::MemorySpaces,
            // The paper's range, 1 to 20 spaces, is the claim's.
            xs: &[1.0, 4.0, 20.0],
            xs_paper: &[1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 20.0],
            base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE, LOW_CONTENTION, Set::ReadAttrs(1)],
            series: STORAGE_SERIES,
            ..SWEEP
        }),
        claims: &[
            trend(
                "the delta storage scheme's performance is stable regardless of the number of memory spaces that the DBMS allocates",
                FIG_16,
                "delta",
                SAME,
            ),
            trend(SPACES_16, FIG_16, "append-only", Expect::Range(1.6, 4.0)),
            trend(SPACES_16, FIG_16, "time-travel", Expect::Range(1.6, 4.0)),
        ],
        effects: &[Effect::Concurrency, Effect::Updates],
        note: Some("the workload's mix is update-intensive (§7.3 names only θ 0.2 and one attribute per operation); spaces hold every version and the in-place schemes' records (time-travel copies, deltas); a row's master (made once, at insert), text payloads and index entries use the global allocator"),
    },
    Figure {
        name: "tpcc-storage",
        paper: Paper::Wu,
        label: "Fig. 17",
        caption: "TPC-C: version storage schemes, with StockScan",
        config: Config::Sweep(Sweep {
            workload: Workload::Tpcc,
            xs: THREADS_QUICK,
            xs_paper: THREADS_PAPER,
            base: &[SECTION_7_3_TO_7_5, STOCK_SCAN, Set::Warehouses(0)],
            paper_base: &[Set::Warehouses(40)],
            series: STORAGE_SERIES,
            more: &[Metric::ScanLatencyMs],
            ..SWEEP
        }),
        claims: &[
            groups(
                BETTER_17,
                FIG_17A,
                Metric::Throughput,
                &["append-only"],
                &["time-travel", "delta"],
                At::Last,
            ),
            ratio_of(
                SCAN_17,
                FIG_17B,
                Metric::ScanLatencyMs,
                "append-only",
                "delta",
                At::Last,
                Expect::Range(0.53, 0.75),
            ),
            ratio_of(
                SCAN_17,
                FIG_17B,
                Metric::ScanLatencyMs,
                "time-travel",
                "delta",
                At::Last,
                Expect::Range(0.53, 0.75),
            ),
            trend_of(
                "With delta storage, the latency of the scan queries grows near-linearly with the increase of number of threads",
                FIG_17B,
                Metric::ScanLatencyMs,
                "delta",
                Expect::Above1,
            ),
        ],
        effects: &[Effect::PaperWarehouseRatio],
        note: Some("one warehouse per thread (the paper: 40); a smaller item catalogue"),
    },
];
