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

use strata::{GcPolicy, IndexPointers, MemorySpaces, NonInline, Preset, Protocol, VersionStorage};

use super::findings::{At, Check, Expect, Finding, Metric};
use super::registry::{Config, Figure, Paper};
use super::sweep::{Axis, Series, Set, Sweep, Workload, DEFAULT, PAPER_SPACE_INCREMENT};

/// The fields most of the study's sweeps share; each entry overrides what
/// it needs.
const SWEEP: Sweep = Sweep {
    paper_base: &[PAPER_THREADS],
    ..DEFAULT
};

/// "We fix the number of DBMS threads to 40" (§7.2-§7.5).
const PAPER_THREADS: Set = Set::Threads(40);

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
const LOW_CONTENTION: Set = Set::Theta(0.2);
const HIGH_CONTENTION: Set = Set::Theta(0.8);
const THETAS: &[f64] = &[0.0, 0.5, 0.7, 0.8, 0.9, 0.99];
const THREADS_QUICK: &[f64] = &[1.0, 2.0];
const THREADS_PAPER: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 32.0, 40.0];
/// Figures 14 and 15 fix the table at 100 attributes.
const ATTRS_100: &[f64] = &[1.0, 10.0, 25.0, 50.0, 100.0];

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

const INDEX_SERIES: &[Series] = &[
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
];

/// §7.4's tuple-level comparison (Figures 18-19): O2N, as COOP needs, one
/// GC thread, and a run with GC off.
const TUPLE_GC_SERIES: &[Series] = &[
    Series {
        label: "COOP",
        settings: &[Set::Gc(GcPolicy::Cooperative)],
    },
    Series {
        label: "VAC",
        settings: &[Set::Gc(GcPolicy::Vacuum)],
    },
    Series {
        label: "no GC",
        settings: &[Set::Gc(GcPolicy::None)],
    },
];

/// §7.4's tuple- against transaction-level comparison (Figures 20-21), N2O.
const TXN_GC_SERIES: &[Series] = &[
    Series {
        label: "transaction-level",
        settings: &[Set::Gc(GcPolicy::TransactionLevel)],
    },
    Series {
        label: "VAC",
        settings: &[Set::Gc(GcPolicy::Vacuum)],
    },
    Series {
        label: "no GC",
        settings: &[Set::Gc(GcPolicy::None)],
    },
];

const fn ratio(
    claim: &'static str,
    a: &'static str,
    b: &'static str,
    at: At,
    e: Expect,
) -> Finding {
    Finding {
        claim,
        check: Check::Ratio {
            metric: Metric::Throughput,
            a,
            b,
            at,
        },
        expect: e,
    }
}

const fn ratio_of(
    claim: &'static str,
    metric: Metric,
    a: &'static str,
    b: &'static str,
    at: At,
    e: Expect,
) -> Finding {
    Finding {
        claim,
        check: Check::Ratio { metric, a, b, at },
        expect: e,
    }
}

const fn trend(claim: &'static str, series: &'static str, e: Expect) -> Finding {
    Finding {
        claim,
        check: Check::Trend {
            metric: Metric::Throughput,
            series,
        },
        expect: e,
    }
}

/// "About the same": within 25% of each other.
const SAME: Expect = Expect::Range(0.8, 1.25);
const STOCK_SCAN: Set = Set::StockScan(true);
const NEW_ORDER_ABORTS: Metric = Metric::TypeAbortRate("new-order");
const PAYMENT_ABORTS: Metric = Metric::TypeAbortRate("payment");
/// Every figure, in the paper's order.
pub const FIGURES: &[Figure] = &[
    Figure {
        name: "scalability",
        paper: Paper::Wu,
        label: "Fig. 6a",
        caption: "Scalability: read-only YCSB, 1 operation per transaction",
        config: Config::Sweep(Sweep {
            xs: &[1.0, 2.0, 4.0],
            xs_paper: &[
                1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 20.0, 24.0, 28.0, 32.0, 36.0, 40.0,
            ],
            base: &[READ_ONLY, LOW_CONTENTION, Set::OpsPerTxn(1), Set::MixHint(false)],
            series: per_protocol!(),
            ..SWEEP
        }),
        claims: &[
            trend("all but SI+SSN scale almost linearly", "MVTO", Expect::Above1),
            ratio(
                "SI+SSN achieves lower performance (its central transaction table)",
                "SI+SSN",
                "MVTO",
                At::Last,
                Expect::Below1,
            ),
        ],
        note: Some("on 2 cores, threads beyond 2 share them"),
    },
    Figure {
        name: "scalability-long",
        paper: Paper::Wu,
        label: "Fig. 6b",
        caption: "Scalability: read-only YCSB, 100 operations per transaction",
        config: Config::Sweep(Sweep {
            xs: &[1.0, 2.0, 4.0],
            xs_paper: &[
                1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 20.0, 24.0, 28.0, 32.0, 36.0, 40.0,
            ],
            base: &[READ_ONLY, LOW_CONTENTION, Set::OpsPerTxn(100), Set::MixHint(false)],
            series: per_protocol!(),
            ..SWEEP
        }),
        claims: &[trend(
            "the protocols scale linearly up to 40 threads",
            "SI+SSN",
            Expect::Above1,
        )],
        note: Some("on 2 cores, threads beyond 2 share them"),
    },
    Figure {
        name: "contention-read",
        paper: Paper::Wu,
        label: "Fig. 7a",
        caption: "Contention: read-intensive YCSB",
        config: Config::Sweep(Sweep {
            axis: Axis::Theta,
            xs: THETAS,
            xs_paper: THETAS,
            base: &[READ_INTENSIVE],
            series: per_protocol!(),
            ..SWEEP
        }),
        claims: &[ratio(
            "beyond θ 0.7 MVOCC's throughput falls by about 50% against the others",
            "MVOCC",
            "MVTO",
            At::X(0.99),
            Expect::Range(0.4, 0.6),
        )],
        note: None,
    },
    Figure {
        name: "contention",
        paper: Paper::Wu,
        label: "Fig. 7b",
        caption: "Contention: update-intensive YCSB",
        config: Config::Sweep(Sweep {
            axis: Axis::Theta,
            xs: THETAS,
            xs_paper: THETAS,
            base: &[UPDATE_INTENSIVE],
            series: per_protocol!(),
            more: &[Metric::AbortRate],
            ..SWEEP
        }),
        claims: &[
            ratio(
                "no great difference among the protocols at high contention",
                "SI",
                "MVTO",
                At::X(0.99),
                SAME,
            ),
            ratio(
                "except MV2PL, which falls behind",
                "MV2PL",
                "MVTO",
                At::X(0.99),
                Expect::Below1,
            ),
        ],
        note: Some("the abort-rate panel is ours"),
    },
    Figure {
        name: "heterogeneous",
        paper: Paper::Wu,
        label: "Fig. 8",
        caption: "Heterogeneous workload, no READ ONLY hint",
        config: Config::Sweep(Sweep {
            axis: Axis::RoThreads,
            xs: &[0.0, 1.0, 2.0],
            xs_paper: &[0.0, 4.0, 8.0, 12.0, 16.0, 20.0],
            base: &[
                UPDATE_INTENSIVE,
                HIGH_CONTENTION,
                Set::OpsPerTxn(100),
                Set::RoOps(100),
                Set::RoHint(false),
            ],
            paper_base: &[Set::Threads(20)],
            series: per_protocol!(),
            more: &[Metric::ReadOnlyThroughput],
            ..SWEEP
        }),
        claims: &[
            trend(
                "MV2PL's read-write throughput drops as read-only threads are added",
                "MV2PL",
                Expect::Below1,
            ),
            ratio_of(
                "MVOCC starves read-only queries: lower than MVTO's",
                Metric::ReadOnlyThroughput,
                "MVOCC",
                "MVTO",
                At::Last,
                Expect::Below1,
            ),
            ratio(
                "SI+SSN achieves a much higher read-write throughput",
                "SI+SSN",
                "MVTO",
                At::Last,
                Expect::Above1,
            ),
        ],
        note: None,
    },
    Figure {
        name: "heterogeneous-hint",
        paper: Paper::Wu,
        label: "Fig. 9",
        caption: "Heterogeneous workload, READ ONLY hint",
        config: Config::Sweep(Sweep {
            axis: Axis::RoThreads,
            xs: &[0.0, 1.0, 2.0],
            xs_paper: &[0.0, 4.0, 8.0, 12.0, 16.0, 20.0],
            base: &[
                UPDATE_INTENSIVE,
                HIGH_CONTENTION,
                Set::OpsPerTxn(100),
                Set::RoOps(100),
                Set::RoHint(true),
            ],
            paper_base: &[Set::Threads(20)],
            series: per_protocol!(),
            more: &[Metric::ReadOnlyThroughput],
            ..SWEEP
        }),
        claims: &[
            Finding {
                claim: "read-only throughput is the same for every protocol",
                check: Check::Spread {
                    metric: Metric::ReadOnlyThroughput,
                    at: At::Last,
                },
                expect: Expect::AtMost(1.25),
            },
            ratio(
                "SI+SSN is 1.6x faster than MVTO (and MV2PL)",
                "SI+SSN",
                "MVTO",
                At::Last,
                Expect::Range(1.4, 1.8),
            ),
            ratio(
                "MVOCC achieves the lowest read-write throughput",
                "MVOCC",
                "MVTO",
                At::Last,
                Expect::Below1,
            ),
        ],
        note: None,
    },
    Figure {
        name: "tpcc",
        paper: Paper::Wu,
        label: "Fig. 10",
        caption: "TPC-C: fewer warehouses than threads",
        config: Config::Sweep(Sweep {
            workload: Workload::Tpcc,
            xs: THREADS_QUICK,
            xs_paper: THREADS_PAPER,
            // The paper's 10 warehouses for up to 40 threads: terminals share
            // warehouses, which is the contention the figure is about. At the
            // quick scale's 2 threads, 10 warehouses would give each thread its
            // own (home warehouse `thread % W + 1`); one keeps them sharing.
            base: &[Set::Warehouses(1)],
            paper_base: &[Set::Warehouses(10)],
            series: per_protocol!(),
            more: &[NEW_ORDER_ABORTS, PAYMENT_ABORTS],
            ..SWEEP
        }),
        claims: &[
            ratio(
                "MVTO achieves 45-120% higher throughput than the others",
                "MVTO",
                "MVOCC",
                At::Last,
                Expect::Range(1.45, 2.2),
            ),
            ratio(
                "SI+SSN yields higher throughput than MVOCC",
                "SI+SSN",
                "MVOCC",
                At::Last,
                Expect::Above1,
            ),
            Finding {
                claim: "MV2PL's Payment abort rate is 6.8x its NewOrder's",
                check: Check::Within {
                    series: "MV2PL",
                    a: PAYMENT_ABORTS,
                    b: NEW_ORDER_ABORTS,
                    at: At::Last,
                },
                expect: Expect::Range(6.0, 7.5),
            },
            Finding {
                claim: "MVOCC is more likely to abort NewOrder than Payment",
                check: Check::Within {
                    series: "MVOCC",
                    a: NEW_ORDER_ABORTS,
                    b: PAYMENT_ABORTS,
                    at: At::Last,
                },
                expect: Expect::Above1,
            },
        ],
        note: Some("a smaller item catalogue (10,000 items, 300 customers per district)"),
    },
    Figure {
        name: "non-inline-read",
        paper: Paper::Wu,
        label: "Fig. 11a",
        caption: "Non-inline attributes: read-intensive YCSB",
        config: Config::Sweep(Sweep {
            axis: Axis::TextAttrs,
            xs: &[1.0, 5.0, 10.0, 20.0],
            xs_paper: &[1.0, 10.0, 20.0, 50.0, 100.0],
            base: &[
                SECTION_7_3_TO_7_5,
                READ_INTENSIVE,
                LOW_CONTENTION,
                // "a variable number of 100-byte non-inline VARCHAR type
                // attributes"; "each operation only accesses one attribute".
                Set::Attributes(1),
                Set::ReadAttrs(1),
                Set::UpdateText(true),
            ],
            series: NON_INLINE_SERIES,
            ..SWEEP
        }),
        claims: &[ratio(
            "reference counting is ~40% faster than full copies at 50 attributes",
            "shared (reference counted)",
            "copied in full",
            At::Last,
            Expect::Range(1.3, 1.5),
        )],
        note: Some("rows keep one integer attribute beside the text ones (Strata's YCSB table needs one)"),
    },
    Figure {
        name: "non-inline",
        paper: Paper::Wu,
        label: "Fig. 11b",
        caption: "Non-inline attributes: update-intensive YCSB",
        config: Config::Sweep(Sweep {
            axis: Axis::TextAttrs,
            xs: &[1.0, 5.0, 10.0, 20.0],
            xs_paper: &[1.0, 10.0, 20.0, 50.0, 100.0],
            base: &[
                SECTION_7_3_TO_7_5,
                UPDATE_INTENSIVE,
                LOW_CONTENTION,
                // "a variable number of 100-byte non-inline VARCHAR type
                // attributes"; "each operation only accesses one attribute".
                Set::Attributes(1),
                Set::ReadAttrs(1),
                Set::UpdateText(true),
            ],
            series: NON_INLINE_SERIES,
            more: &[Metric::BytesPerRow],
            ..SWEEP
        }),
        claims: &[
            ratio(
                "with updates the gap reaches over 100%",
                "shared (reference counted)",
                "copied in full",
                At::Last,
                Expect::Range(2.0, 3.0),
            ),
            ratio_of(
                "after the run sharing holds no more memory per row than copying (ours)",
                Metric::BytesPerRow,
                "shared (reference counted)",
                "copied in full",
                At::Last,
                Expect::AtMost(1.1),
            ),
        ],
        note: Some("rows keep one integer attribute beside the text ones (Strata's YCSB table needs one); the memory panel is ours: once old versions are reclaimed both keep one payload per attribute, so sharing saves allocation per update (not measured yet), not resident memory"),
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
            series: &[
                Series {
                    label: "N2O",
                    settings: &[N2O],
                },
                Series {
                    label: "O2N",
                    settings: &[O2N],
                },
            ],
            ..SWEEP
        }),
        claims: &[ratio(
            "N2O beats O2N, by 2.4-3.4x at θ 0.9",
            "N2O",
            "O2N",
            At::X(0.9),
            Expect::Range(2.4, 3.4),
        )],
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
            series: &[
                Series {
                    label: "N2O",
                    settings: &[N2O],
                },
                Series {
                    label: "O2N",
                    settings: &[O2N],
                },
            ],
            ..SWEEP
        }),
        claims: &[ratio(
            "N2O beats O2N, by 2.4-3.4x at θ 0.9",
            "N2O",
            "O2N",
            At::X(0.9),
            Expect::Range(2.4, 3.4),
        )],
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
                "append-only and delta perform alike at 10 attributes",
                "delta",
                "append-only",
                At::Last,
                SAME,
            ),
            ratio(
                "append-only and time-travel are almost the same",
                "time-travel",
                "append-only",
                At::Last,
                SAME,
            ),
        ],
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
        claims: &[ratio(
            "at 100 attributes delta is ~2x append-only (it uses less memory)",
            "delta",
            "append-only",
            At::Last,
            Expect::Range(1.7, 2.3),
        )],
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
        claims: &[
            trend(
                "append-only is stable whatever the attributes modified",
                "append-only",
                SAME,
            ),
            ratio(
                "delta performs best when few attributes are modified",
                "delta",
                "append-only",
                At::X(1.0),
                Expect::Above1,
            ),
        ],
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
        claims: &[
            ratio(
                "delta performs best when few attributes are modified",
                "delta",
                "append-only",
                At::X(1.0),
                Expect::Above1,
            ),
            ratio(
                "when all are modified delta is equivalent to the others",
                "delta",
                "append-only",
                At::Last,
                SAME,
            ),
        ],
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
        claims: &[trend(
            "reading more attributes largely affects delta",
            "delta",
            Expect::Below1,
        )],
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
            trend(
                "reading more attributes degrades every scheme: append-only",
                "append-only",
                Expect::Below1,
            ),
            trend(
                "reading more attributes degrades every scheme: delta",
                "delta",
                Expect::Below1,
            ),
        ],
        note: Some("the read-intensive mix (the paper does not name the mix)"),
    },
    Figure {
        name: "memory-spaces",
        paper: Paper::Wu,
        label: "Fig. 16",
        caption: "Memory allocation: separate memory spaces",
        config: Config::Sweep(Sweep {
            axis: Axis::MemorySpaces,
            xs: &[1.0, 2.0, 4.0, 8.0],
            xs_paper: &[1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 20.0],
            base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE, LOW_CONTENTION, Set::ReadAttrs(1)],
            series: STORAGE_SERIES,
            ..SWEEP
        }),
        claims: &[
            trend(
                "delta is stable whatever the number of spaces",
                "delta",
                SAME,
            ),
            trend(
                "append-only gains 1.6-4x from 1 to 20 spaces",
                "append-only",
                Expect::Range(1.6, 4.0),
            ),
        ],
        note: Some("spaces hold every version and the in-place schemes' records (time-travel copies, deltas); a row's master (made once, at insert), text payloads and index entries use the global allocator"),
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
            ratio(
                "append-only performs better than delta",
                "append-only",
                "delta",
                At::Last,
                Expect::Above1,
            ),
            ratio(
                "append-only performs better than time-travel",
                "append-only",
                "time-travel",
                At::Last,
                Expect::Above1,
            ),
            ratio_of(
                "delta's StockScan latency is 25-47% above append-only's (append-only 25-47% lower)",
                Metric::ScanLatencyMs,
                "delta",
                "append-only",
                At::Last,
                Expect::Range(1.33, 1.89),
            ),
        ],
        note: Some("one warehouse per thread (the paper: 40); a smaller item catalogue"),
    },
    Figure {
        name: "gc-tuple",
        paper: Paper::Wu,
        label: "Fig. 18a, 19a",
        caption: "Tuple-level comparison: update-intensive YCSB, low contention",
        config: Config::Sweep(Sweep {
            axis: Axis::Time,
            xs: &[],
            xs_paper: &[],
            base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE, LOW_CONTENTION, O2N],
            series: TUPLE_GC_SERIES,
            more: &[Metric::NewBytesPerTxn],
            ..SWEEP
        }),
        claims: &[
            ratio_of(
                "COOP allocates 30-60% less memory per transaction than VAC",
                Metric::NewBytesPerTxn,
                "COOP",
                "VAC",
                At::Mean,
                Expect::Range(0.4, 0.7),
            ),
            ratio_of(
                "without GC the system takes new memory for every version: VAC takes less",
                Metric::NewBytesPerTxn,
                "VAC",
                "no GC",
                At::Mean,
                Expect::Below1,
            ),
            ratio(
                "COOP achieves ~45% higher throughput than VAC",
                "COOP",
                "VAC",
                At::Mean,
                Expect::Range(1.3, 1.6),
            ),
            trend(
                "without GC throughput declines over time",
                "no GC",
                Expect::Below1,
            ),
        ],
        note: None,
    },
    Figure {
        name: "gc-tuple-high",
        paper: Paper::Wu,
        label: "Fig. 18b, 19b",
        caption: "Tuple-level comparison: update-intensive YCSB, high contention",
        config: Config::Sweep(Sweep {
            axis: Axis::Time,
            xs: &[],
            xs_paper: &[],
            base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE, HIGH_CONTENTION, O2N],
            series: TUPLE_GC_SERIES,
            more: &[Metric::NewBytesPerTxn],
            ..SWEEP
        }),
        claims: &[
            ratio_of(
                "COOP allocates 30-60% less memory per transaction than VAC",
                Metric::NewBytesPerTxn,
                "COOP",
                "VAC",
                At::Mean,
                Expect::Range(0.4, 0.7),
            ),
            ratio_of(
                "without GC the system takes new memory for every version: VAC takes less",
                Metric::NewBytesPerTxn,
                "VAC",
                "no GC",
                At::Mean,
                Expect::Below1,
            ),
            ratio(
                "COOP achieves higher throughput than VAC",
                "COOP",
                "VAC",
                At::Mean,
                Expect::Above1,
            ),
            trend(
                "without GC throughput declines over time",
                "no GC",
                Expect::Below1,
            ),
        ],
        note: None,
    },
    Figure {
        name: "gc-read",
        paper: Paper::Wu,
        label: "Fig. 20a, 21a",
        caption: "Tuple-level vs. transaction-level: read-intensive YCSB",
        config: Config::Sweep(Sweep {
            axis: Axis::Time,
            base: &[SECTION_7_3_TO_7_5, READ_INTENSIVE, HIGH_CONTENTION, N2O],
            series: TXN_GC_SERIES,
            more: &[Metric::NewBytesPerTxn],
            ..SWEEP
        }),
        claims: &[
            ratio_of(
                "both mechanisms reduce memory: transaction-level against none",
                Metric::NewBytesPerTxn,
                "transaction-level",
                "no GC",
                At::Mean,
                Expect::Below1,
            ),
            ratio_of(
                "both mechanisms reduce memory: VAC against none",
                Metric::NewBytesPerTxn,
                "VAC",
                "no GC",
                At::Mean,
                Expect::Below1,
            ),
            ratio(
                "transaction-level GC is slightly better than tuple-level",
                "transaction-level",
                "VAC",
                At::Mean,
                Expect::Range(1.0, 1.1),
            ),
            ratio(
                "GC improves throughput by 20-30% over none",
                "transaction-level",
                "no GC",
                At::Mean,
                Expect::Range(1.2, 1.3),
            ),
        ],
        note: None,
    },
    Figure {
        name: "gc",
        paper: Paper::Wu,
        label: "Fig. 20b, 21b",
        caption: "Tuple-level vs. transaction-level: update-intensive YCSB",
        config: Config::Sweep(Sweep {
            axis: Axis::Time,
            base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE, HIGH_CONTENTION, N2O],
            series: TXN_GC_SERIES,
            more: &[Metric::NewBytesPerTxn],
            ..SWEEP
        }),
        claims: &[
            ratio_of(
                "both mechanisms reduce memory: transaction-level against none",
                Metric::NewBytesPerTxn,
                "transaction-level",
                "no GC",
                At::Mean,
                Expect::Below1,
            ),
            ratio_of(
                "both mechanisms reduce memory: VAC against none",
                Metric::NewBytesPerTxn,
                "VAC",
                "no GC",
                At::Mean,
                Expect::Below1,
            ),
            ratio(
                "transaction-level GC is 20% faster than tuple-level",
                "transaction-level",
                "VAC",
                At::Mean,
                Expect::Range(1.1, 1.3),
            ),
            ratio(
                "GC improves throughput by 20-30% over none",
                "transaction-level",
                "no GC",
                At::Mean,
                Expect::Range(1.2, 1.3),
            ),
        ],
        note: None,
    },
    Figure {
        name: "index-pointers",
        paper: Paper::Wu,
        label: "Fig. 22a",
        caption: "Index management: secondary indexes, low contention",
        config: Config::Sweep(Sweep {
            axis: Axis::SecondaryIndexes,
            xs: &[1.0, 2.0, 5.0, 10.0],
            xs_paper: &[1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0],
            base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE, LOW_CONTENTION, N2O],
            series: INDEX_SERIES,
            ..SWEEP
        }),
        claims: &[ratio(
            "under low contention logical pointers are 40% faster at 20 indexes",
            "logical (tuple id)",
            "physical",
            At::Last,
            Expect::Range(1.3, 1.5),
        )],
        note: None,
    },
    Figure {
        name: "index-pointers-high",
        paper: Paper::Wu,
        label: "Fig. 22b",
        caption: "Index management: secondary indexes, high contention",
        config: Config::Sweep(Sweep {
            axis: Axis::SecondaryIndexes,
            xs: &[1.0, 2.0, 5.0, 10.0],
            xs_paper: &[1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0],
            base: &[SECTION_7_3_TO_7_5, UPDATE_INTENSIVE, HIGH_CONTENTION, N2O],
            series: INDEX_SERIES,
            ..SWEEP
        }),
        claims: &[ratio(
            "under high contention logical pointers are 25% faster",
            "logical (tuple id)",
            "physical",
            At::Last,
            Expect::Range(1.15, 1.35),
        )],
        note: None,
    },
    Figure {
        name: "index-pointers-threads",
        paper: Paper::Wu,
        label: "Fig. 23",
        caption: "Index management: eight secondary indexes, high contention",
        config: Config::Sweep(Sweep {
            xs: THREADS_QUICK,
            xs_paper: THREADS_PAPER,
            base: &[
                SECTION_7_3_TO_7_5,
                UPDATE_INTENSIVE,
                HIGH_CONTENTION,
                N2O,
                Set::SecondaryIndexes(8),
            ],
            series: INDEX_SERIES,
            ..SWEEP
        }),
        claims: &[ratio(
            "logical pointers are 45% faster than physical under high contention",
            "logical (tuple id)",
            "physical",
            At::X(1.0),
            Expect::Range(1.35, 1.55),
        )],
        note: None,
    },
    Figure {
        name: "configurations",
        paper: Paper::Wu,
        label: "Table 1, Fig. 24a, 25a",
        caption: "Configuration comparison: Table 1, TPC-C with StockScan, low contention",
        config: Config::Sweep(Sweep {
            workload: Workload::Tpcc,
            xs: THREADS_QUICK,
            xs_paper: THREADS_PAPER,
            base: &[STOCK_SCAN, Set::Warehouses(0)],
            series: PRESET_SERIES,
            more: &[Metric::ScanLatencyMs],
            ..SWEEP
        }),
        claims: &[
            ratio(
                "Oracle/MySQL and NuoDB perform best, Postgres and Hekaton worst",
                "NuoDB",
                "Postgres",
                At::Last,
                Expect::Above1,
            ),
            ratio(
                "Oracle/MySQL above Hekaton",
                "Oracle",
                "Hekaton",
                At::Last,
                Expect::Above1,
            ),
            ratio_of(
                "StockScan latency is worst with delta storage (Oracle) against append-only (NuoDB)",
                Metric::ScanLatencyMs,
                "Oracle",
                "NuoDB",
                At::Last,
                Expect::Above1,
            ),
        ],
        note: Some("one warehouse per thread; a smaller item catalogue"),
    },
    Figure {
        name: "configurations-high",
        paper: Paper::Wu,
        label: "Table 1, Fig. 24b, 25b",
        caption: "Configuration comparison: Table 1, TPC-C with StockScan, high contention",
        config: Config::Sweep(Sweep {
            workload: Workload::Tpcc,
            xs: THREADS_QUICK,
            xs_paper: THREADS_PAPER,
            base: &[STOCK_SCAN, Set::Warehouses(1)],
            paper_base: &[Set::Warehouses(10)],
            series: PRESET_SERIES,
            more: &[Metric::ScanLatencyMs],
            ..SWEEP
        }),
        claims: &[
            ratio(
                "Oracle/MySQL and NuoDB perform best, Postgres and Hekaton worst",
                "NuoDB",
                "Postgres",
                At::Last,
                Expect::Above1,
            ),
            ratio_of(
                "StockScan latency is worst with delta storage (Oracle) against append-only (NuoDB)",
                Metric::ScanLatencyMs,
                "Oracle",
                "NuoDB",
                At::Last,
                Expect::Above1,
            ),
        ],
        note: Some("one warehouse (the paper: 10 for 40 threads); a smaller item catalogue"),
    },
];
