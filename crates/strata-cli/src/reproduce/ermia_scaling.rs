//! ERMIA's scalability experiments (Kim et al., SIGMOD 2016, §4.4): TPC-C
//! throughput against the worker threads under the paper's three systems
//! (Silo's OCC, ERMIA-SI, ERMIA-SSN), each a sweep (`sweep.rs`).
//!
//! ```text
//!  ermia-fig7: threads 1..24 (1, 2 at the quick scale), a warehouse per
//!              thread (the paper's scale factor, §4.5), each terminal on
//!              its home warehouse -> txn/s, and txn/s per thread
//! ```
//!
//! TPC-E (Fig. 7 right, Figs. 6 and 9) is out of scope: Strata has no
//! TPC-E workload.

use strata::Protocol;

use super::findings::{At, Check, Expect, Finding, Metric};
use super::registry::{Config, Effect, Figure, Paper};
use super::sweep::{Axis, Series, Set, Sweep, Workload, DEFAULT};

const OCC: &str = "OCC (Silo)";
const SI: &str = "SI (ERMIA-SI)";
const SSN: &str = "SI+SSN (ERMIA-SSN)";
const FIG_7: &str = "§4.4, Fig. 7";
const LINEAR: &str = "ERMIA achieves near-linear scalability over 24 cores";

/// The paper's three systems (first updater wins on every write under
/// SI+SSN, the sweep's default, as published).
const SYSTEMS: &[Series] = &[
    Series {
        label: OCC,
        settings: &[Set::Protocol(Protocol::Occ)],
    },
    Series {
        label: SI,
        settings: &[Set::Protocol(Protocol::Si)],
    },
    Series {
        label: SSN,
        settings: &[Set::Protocol(Protocol::SiSsn)],
    },
];

/// Near-linear: the throughput per thread stays about the same from the
/// fewest threads to the most.
const fn linear(series: &'static str) -> Finding {
    Finding {
        claim: LINEAR,
        source: FIG_7,
        check: Check::Trend {
            metric: Metric::ThroughputPerThread,
            series,
        },
        expect: Expect::About(1.25),
    }
}

/// The figures, in the paper's order.
pub const FIGURES: &[Figure] = &[Figure {
    name: "ermia-fig7",
    paper: Paper::Ermia,
    label: "Fig. 7 (left)",
    caption: "TPC-C throughput against worker threads under OCC, SI and SI+SSN",
    config: Config::Sweep(Sweep {
        workload: Workload::Tpcc,
        axis: Axis::Threads,
        xs: &[1.0, 2.0],
        xs_paper: &[1.0, 4.0, 8.0, 12.0, 16.0, 20.0, 24.0],
        series: SYSTEMS,
        more: &[Metric::ThroughputPerThread],
        ..DEFAULT
    }),
    claims: &[
        linear(SI),
        linear(SSN),
        Finding {
            claim: "ERMIA achieves ... comparable peak performance to Silo",
            source: FIG_7,
            check: Check::Ratio {
                metric: Metric::Throughput,
                a: SI,
                b: OCC,
                at: At::Max,
            },
            expect: Expect::About(1.25),
        },
        Finding {
            claim: "Silo-OCC shows the best performance by taking advantages of its low-overhead CC and physical layer when little CC pressure exists",
            source: FIG_7,
            check: Check::Groups {
                metric: Metric::Throughput,
                above: &[OCC],
                below: &[SI, SSN],
                at: At::Max,
            },
            expect: Expect::Above1,
        },
        Finding {
            claim: "On ERMIA, indirection arrays brought more cache-misses and SSN paid additional serializability guarantee cost",
            source: FIG_7,
            check: Check::Ratio {
                metric: Metric::Throughput,
                a: SSN,
                b: SI,
                at: At::Max,
            },
            expect: Expect::Below1,
        },
    ],
    effects: &[
        Effect::PaperWarehouseRatio,
        Effect::Concurrency,
        Effect::Updates,
    ],
    note: Some("threads 1 and 2 at the quick scale (the paper: up to 24 cores; its ticks are not in its text, so its scale runs 1, 4, ..., 24); TPC-E (the right panel) is out of scope: Strata has no TPC-E workload"),
}];
