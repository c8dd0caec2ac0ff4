//! End-to-end: generators run through `run_workload` on reference executors.

use std::ops::ControlFlow;

use strata_verify::{
    check, run_segmented, run_workload, AnomalyKind, CheckOptions, DirtyExecutor, GeneratorConfig,
    Key, LossyExecutor, Op, Outcome, PlannedOp, Report, SerialExecutor, SnapshotExecutor,
    TxnExecutor, Workload,
};

const WORKLOADS: [Workload; 4] = [
    Workload::ListAppend,
    Workload::Register,
    Workload::Predicate,
    Workload::WriteSkew,
];

fn config(workload: Workload, seed: u64) -> GeneratorConfig {
    GeneratorConfig {
        seed,
        keys: 8,
        max_ops: 5,
        skew: 0.8,
        ..GeneratorConfig::for_workload(workload)
    }
}

#[test]
fn serial_executor_histories_are_valid() {
    for workload in WORKLOADS {
        let exec = SerialExecutor::new();
        let h = run_workload(&exec, &config(workload, 1), 4, 3000);
        assert_eq!(h.len(), 3000);
        assert!(h.txns.iter().all(|t| t.client < 4));
        let rep = check(&h, &CheckOptions::strict());
        assert!(rep.is_valid(), "{workload:?}: {rep}");
        assert!(
            rep.graph_edges > 3000,
            "{workload:?}: graph too sparse to mean anything"
        );
    }
}

#[test]
fn snapshot_isolation_histories_never_violate_si() {
    for workload in WORKLOADS {
        let exec = SnapshotExecutor::new();
        let h = run_workload(&exec, &config(workload, 2), 4, 2000);
        let rep = check(&h, &CheckOptions::default());
        assert!(!rep.violates_snapshot_isolation(), "{workload:?}: {rep}");
    }
}

#[test]
fn snapshot_isolation_write_skew_is_g2_item() {
    let cfg = GeneratorConfig {
        keys: 4,
        ..config(Workload::WriteSkew, 3)
    };
    let exec = SnapshotExecutor::new();
    let h = run_workload(&exec, &cfg, 4, 3000);
    let rep = check(&h, &CheckOptions::default());
    assert!(rep.has(AnomalyKind::G2Item), "{rep}");
    assert!(rep.violates_serializability());
    assert!(!rep.violates_snapshot_isolation(), "{rep}");
}

#[test]
fn snapshot_isolation_phantoms_are_found() {
    let cfg = GeneratorConfig {
        scan_fraction: 0.4,
        max_scan_width: 8,
        ..config(Workload::Predicate, 4)
    };
    let exec = SnapshotExecutor::new();
    let h = run_workload(&exec, &cfg, 4, 3000);
    let rep = check(&h, &CheckOptions::default());
    assert!(rep.violates_serializability(), "{rep}");
    assert!(!rep.violates_snapshot_isolation(), "{rep}");
}

#[test]
fn dirty_reads_are_g1a() {
    let exec = DirtyExecutor::new(4);
    let h = run_workload(&exec, &config(Workload::ListAppend, 5), 4, 3000);
    assert!(h.txns.iter().any(|t| t.outcome == Outcome::Aborted));
    let rep = check(&h, &CheckOptions::default());
    assert!(rep.has(AnomalyKind::G1a), "{rep}");
    assert!(rep.violates_read_committed());
}

#[test]
fn dropped_appends_are_found() {
    let exec = LossyExecutor::new(50);
    let h = run_workload(&exec, &config(Workload::ListAppend, 6), 4, 2000);
    let rep = check(&h, &CheckOptions::strict());
    assert!(rep.has(AnomalyKind::LostAppend), "{rep}");
}

/// Lists stop growing at `max_writes_per_key`, however long the run: a
/// read's cost (and the history's memory per transaction) stays flat. Without
/// the bound the hottest list held thousands of elements after 20,000
/// transactions, and every read copied it.
#[test]
fn lists_stay_short_however_long_the_run() {
    for workload in [
        Workload::ListAppend,
        Workload::Predicate,
        Workload::WriteSkew,
    ] {
        let cfg = GeneratorConfig {
            max_writes_per_key: 8,
            ..config(workload, 9)
        };
        let h = run_workload(&SerialExecutor::new(), &cfg, 4, 20_000);
        // A write-skew pair shares its 8 writes between its two keys.
        let longest = h.longest_list_read();
        assert!((4..=8).contains(&longest), "{workload:?}: {longest}");
        let rep = check(&h, &CheckOptions::strict());
        assert!(rep.is_valid(), "{workload:?}: {rep}");
    }
}

/// The checker's cycle search does one pass over a valid history's graph.
/// Its work is counted in edges looked at (`Report::search_steps`), not
/// timed: a loaded machine makes any wall-clock bound flaky.
#[test]
fn checks_20k_transactions_in_one_pass() {
    let cfg = GeneratorConfig {
        keys: 200,
        max_ops: 6,
        ..config(Workload::ListAppend, 7)
    };
    let h = run_workload(&SerialExecutor::new(), &cfg, 4, 20_000);
    let rep = check(&h, &CheckOptions::strict());
    assert!(rep.is_valid(), "{rep}");
    assert!(rep.graph_edges > 20_000, "{}", rep.graph_edges);
    assert!(
        rep.search_steps <= rep.graph_edges as u64,
        "{} steps over {} edges",
        rep.search_steps,
        rep.graph_edges
    );
}

/// Broken histories have large strongly connected components; the cycle
/// search must stay bounded on them: a few passes per component and the
/// G-single search's budget (`Report::search_steps`'s bound), counted in
/// edges looked at rather than timed.
#[test]
fn checks_20k_anomalous_transactions_in_bounded_work() {
    let cfg = GeneratorConfig {
        keys: 50,
        max_ops: 6,
        ..config(Workload::ListAppend, 8)
    };
    let h = run_workload(&SnapshotExecutor::new(), &cfg, 4, 20_000);
    let budget = 10_000;
    let opts = CheckOptions {
        cycle_search_budget: budget,
        ..CheckOptions::strict()
    };
    let rep = check(&h, &opts);
    assert!(rep.violates_strict_serializability());
    let components = rep.anomalies.iter().filter(|a| a.cycle.is_some()).count() as u64;
    let edges = rep.graph_edges as u64;
    let bound = 201 * edges + 2 * budget as u64 * components;
    eprintln!(
        "checked 20k SI txns: {} anomalies, {edges} edges, {components} cyclic components, \
         {} search steps (bound {bound})",
        rep.anomalies.len(),
        rep.search_steps
    );
    assert!(rep.search_steps <= bound, "{} > {bound}", rep.search_steps);
    eprintln!(
        "{}",
        rep.to_string()
            .lines()
            .take(12)
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// A correct serial store whose transactions sometimes abort, and whose
/// clients sometimes lose track of the outcome (whether or not the
/// transaction took effect).
struct FlakySerial {
    data: parking_lot::Mutex<(u64, SerialExecutor)>,
}

impl TxnExecutor for FlakySerial {
    fn execute(&self, client: usize, ops: &[PlannedOp]) -> (Vec<Op>, Outcome) {
        let mut guard = self.data.lock();
        guard.0 += 1;
        let n = guard.0;
        // Run against a scratch copy first: an aborted txn must leave no trace.
        let scratch = SerialExecutor::new();
        for (key, elems) in guard.1.snapshot_lists() {
            for elem in elems {
                let _ = scratch.execute(client, &[PlannedOp::Append { key, elem }]);
            }
        }
        for (key, value) in guard.1.snapshot_registers() {
            let _ = scratch.execute(client, &[PlannedOp::Write { key, value }]);
        }
        let (observed, _) = scratch.execute(client, ops);
        let applied = !n.is_multiple_of(5) && !n.is_multiple_of(11);
        if applied {
            guard.1 = scratch;
        }
        let outcome = match (applied, n.is_multiple_of(7) || n.is_multiple_of(11)) {
            (_, true) => Outcome::Unknown,
            (true, false) => Outcome::Committed,
            (false, false) => Outcome::Aborted,
        };
        (observed, outcome)
    }
}

#[test]
fn aborts_and_unknown_outcomes_from_a_correct_store_are_valid() {
    for workload in WORKLOADS {
        let exec = FlakySerial {
            data: parking_lot::Mutex::new((0, SerialExecutor::new())),
        };
        let h = run_workload(&exec, &config(workload, 9), 4, 1500);
        for outcome in [Outcome::Committed, Outcome::Aborted, Outcome::Unknown] {
            assert!(h.txns.iter().any(|t| t.outcome == outcome));
        }
        let rep = check(&h, &CheckOptions::strict());
        assert!(rep.is_valid(), "{workload:?}: {rep}");
    }
}

/// Blind register writes without certification (`SnapshotExecutor::
/// with_blind_writes`: SI's first-committer-wins only for registers the
/// transaction read) are not serializable; the cycles run through the ww
/// edges of blind writers, which the checker orders by the store's
/// version order (`History::version_orders`; the hand-built case without
/// it is `tests/anomalies.rs::blind_writes_need_the_version_order`). The
/// plain SI executor's register histories, orders included, stay clean of
/// G-single (no false edges).
#[test]
fn blind_register_writes_are_caught_through_the_version_order() {
    let cfg = |seed| GeneratorConfig {
        keys: 3,
        max_ops: 4,
        read_fraction: 0.5,
        ..config(Workload::Register, seed)
    };
    let mut caught = 0;
    for seed in 1..=4 {
        let exec = SnapshotExecutor::with_blind_writes();
        let h = run_workload(&exec, &cfg(seed), 4, 3000);
        assert!(!h.version_orders.is_empty());
        if check(&h, &CheckOptions::default()).violates_serializability() {
            caught += 1;
        }
    }
    // (Interleavings depend on the scheduler: three of four at least.)
    assert!(caught >= 3, "{caught} of 4 runs caught");
    for seed in 1..=2 {
        let h = run_workload(&SnapshotExecutor::new(), &cfg(seed), 4, 2000);
        assert!(!h.version_orders.is_empty());
        let rep = check(&h, &CheckOptions::default());
        assert!(!rep.violates_snapshot_isolation(), "{rep}");
    }
}

/// The keys an observed op read, wrote or scanned.
fn footprint(op: &Op) -> std::ops::Range<Key> {
    match *op {
        Op::Append { key, .. }
        | Op::Delete { key, .. }
        | Op::ReadList { key, .. }
        | Op::Write { key, .. }
        | Op::ReadReg { key, .. } => key..key + 1,
        Op::ScanList { lo, hi, .. } => lo..hi,
    }
}

/// A segmented run holds one segment at a time: each history handed over
/// has at most `segment_txns` transactions, numbered on from the segment
/// before; each segment's ops (scans included) stay inside its keys, and
/// those follow one another without overlap; each segment completed before
/// the next began; and the store holds only the last segment's keys in
/// the end (the others were retired), not a number that grows with the
/// run. Every segment checks valid on a correct store, strictly.
#[test]
fn segmented_runs_hold_one_segment_at_a_time() {
    const TXNS: usize = 12_000;
    const SEGMENT: usize = 1_000;
    for workload in WORKLOADS {
        let exec = SerialExecutor::new();
        let cfg = GeneratorConfig {
            max_writes_per_key: 4,
            ..config(workload, 10)
        };
        let mut seen = 0;
        let mut before: Option<(std::ops::Range<Key>, u64)> = None;
        let mut last_keys = 0..0;
        let segments = run_segmented(&exec, &cfg, 4, TXNS, SEGMENT, |seg| {
            let h = &seg.history;
            assert_eq!(seg.index, seen / SEGMENT, "{workload:?}");
            assert_eq!((seg.first_txn, h.len()), (seen, SEGMENT), "{workload:?}");
            for (i, t) in h.txns.iter().enumerate() {
                assert_eq!(t.id, seen + i, "{workload:?}");
                for op in &t.ops {
                    let f = footprint(op);
                    assert!(
                        seg.keys.start <= f.start && f.end <= seg.keys.end,
                        "{workload:?} segment {}: {op} outside {:?}",
                        seg.index,
                        seg.keys
                    );
                }
            }
            let first_invoke = h.txns.iter().map(|t| t.invoke).min().unwrap();
            if let Some((keys, last_complete)) = &before {
                assert!(
                    keys.end <= seg.keys.start,
                    "{workload:?}: {keys:?} {:?}",
                    seg.keys
                );
                assert!(
                    *last_complete < first_invoke,
                    "{workload:?}: segments overlap"
                );
            }
            let rep = check(h, &CheckOptions::strict());
            assert!(rep.is_valid(), "{workload:?} segment {}: {rep}", seg.index);
            seen += h.len();
            let last_complete = h.txns.iter().map(|t| t.complete).max().unwrap();
            before = Some((seg.keys.clone(), last_complete));
            last_keys = seg.keys;
            ControlFlow::Continue(())
        });
        assert_eq!((segments, seen), (TXNS / SEGMENT, TXNS), "{workload:?}");
        let held: Vec<Key> = (exec.snapshot_lists().into_keys())
            .chain(exec.snapshot_registers().into_keys())
            .collect();
        assert!(!held.is_empty(), "{workload:?}");
        let outside: Vec<&Key> = held.iter().filter(|k| !last_keys.contains(k)).collect();
        assert!(
            outside.is_empty(),
            "{workload:?}: {} keys held outside the last segment's {last_keys:?}, from k{}",
            outside.len(),
            outside[0]
        );
    }
}

/// A store that runs correctly (serially) for its first `good`
/// transactions and then loses every 7th append.
struct BreaksLate {
    good: SerialExecutor,
    bad: LossyExecutor,
    ran: std::sync::atomic::AtomicUsize,
    from: usize,
}

impl TxnExecutor for BreaksLate {
    fn execute(&self, client: usize, ops: &[PlannedOp]) -> (Vec<Op>, Outcome) {
        if self.ran.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < self.from {
            self.good.execute(client, ops)
        } else {
            self.bad.execute(client, ops)
        }
    }

    fn retire_keys(&self, keys: std::ops::Range<Key>) {
        self.good.retire_keys(keys.clone());
        self.bad.retire_keys(keys);
    }
}

/// Segmenting hides no anomaly: a store that starts losing appends in the
/// last of eight segments is caught there, with transaction ids of that
/// segment, while every segment before checks valid.
#[test]
fn an_anomaly_in_the_last_segment_is_found() {
    const SEGMENT: usize = 1_000;
    let exec = BreaksLate {
        good: SerialExecutor::new(),
        bad: LossyExecutor::new(7),
        ran: Default::default(),
        from: 7 * SEGMENT,
    };
    let mut reports: Vec<Report> = Vec::new();
    let cfg = config(Workload::ListAppend, 11);
    run_segmented(&exec, &cfg, 4, 8 * SEGMENT, SEGMENT, |seg| {
        reports.push(check(&seg.history, &CheckOptions::strict()));
        ControlFlow::Continue(())
    });
    assert_eq!(reports.len(), 8);
    for (i, rep) in reports[..7].iter().enumerate() {
        assert!(rep.is_valid(), "segment {i}: {rep}");
    }
    let last = &reports[7];
    assert!(last.has(AnomalyKind::LostAppend), "{last}");
    let ids = last.anomalies.iter().flat_map(|a| &a.txns);
    assert!(ids.clone().all(|&t| t >= 7 * SEGMENT), "{last}");
}

/// A panic in `on_segment` ends a segmented run (it fails with the panic,
/// instead of hanging with clients waiting for a next segment).
#[test]
#[should_panic(expected = "checker gave up in segment 1")]
fn a_panic_between_segments_ends_the_run() {
    let cfg = config(Workload::ListAppend, 12);
    run_segmented(&SerialExecutor::new(), &cfg, 4, 3000, 1000, |seg| {
        assert!(seg.index < 1, "checker gave up in segment {}", seg.index);
        ControlFlow::Continue(())
    });
}

/// A store that panics in its 1500th transaction.
struct PanicsOnce(std::sync::atomic::AtomicUsize);

impl TxnExecutor for PanicsOnce {
    fn execute(&self, _client: usize, _ops: &[PlannedOp]) -> (Vec<Op>, Outcome) {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        assert_ne!(n, 1500, "the store broke");
        (Vec::new(), Outcome::Aborted)
    }
}

/// ... and so does a panic in a client, in the middle of a segment.
#[test]
#[should_panic(expected = "a scoped thread panicked")]
fn a_panicking_client_ends_the_run() {
    let cfg = config(Workload::ListAppend, 13);
    run_segmented(&PanicsOnce(Default::default()), &cfg, 4, 3000, 1000, |_| {
        ControlFlow::Continue(())
    });
}
