//! Hand-made histories: each anomaly kind must be flagged, and valid
//! histories must pass.

use strata_verify::{
    check, AnomalyKind, CheckOptions, EdgeKind, History, Op, Outcome, Report, Txn,
};

use AnomalyKind::*;

fn app(key: u64, elem: u64) -> Op {
    Op::Append { key, elem }
}
fn r(key: u64, list: &[u64]) -> Op {
    Op::ReadList {
        key,
        value: Some(list.to_vec()),
    }
}
fn w(key: u64, value: u64) -> Op {
    Op::Write { key, value }
}
fn rr(key: u64, value: Option<u64>) -> Op {
    Op::ReadReg {
        key,
        value: Some(value),
    }
}
fn scan(lo: u64, hi: u64, rows: &[(u64, &[u64])]) -> Op {
    Op::ScanList {
        lo,
        hi,
        value: Some(rows.iter().map(|(k, l)| (*k, l.to_vec())).collect()),
    }
}
fn c(id: usize, ops: Vec<Op>) -> Txn {
    Txn::new(id, ops, Outcome::Committed)
}
fn aborted(id: usize, ops: Vec<Op>) -> Txn {
    Txn::new(id, ops, Outcome::Aborted)
}
fn unknown(id: usize, ops: Vec<Op>) -> Txn {
    Txn::new(id, ops, Outcome::Unknown)
}
/// All transactions overlap in time, so real-time order constrains nothing.
fn concurrent(mut txns: Vec<Txn>) -> History {
    let n = txns.len() as u64;
    for (i, t) in txns.iter_mut().enumerate() {
        t.client = i;
        t.invoke = i as u64;
        t.complete = n + i as u64;
    }
    History::new(txns)
}
fn chk(h: &History) -> Report {
    check(h, &CheckOptions::default())
}
fn only(report: &Report, kind: AnomalyKind) {
    assert!(report.has(kind), "expected {kind}, got:\n{report}");
    let others: Vec<_> = report.anomalies.iter().filter(|a| a.kind != kind).collect();
    assert!(others.is_empty(), "expected only {kind}, got:\n{report}");
}

#[test]
fn g0_write_cycle() {
    let h = concurrent(vec![
        c(1, vec![app(1, 1), app(2, 2)]),
        c(2, vec![app(1, 3), app(2, 4)]),
        c(3, vec![r(1, &[1, 3]), r(2, &[4, 2])]),
    ]);
    let rep = chk(&h);
    only(&rep, G0);
    assert!(rep.violates_read_committed());
    let cycle = rep.smallest_cycle().unwrap().cycle.as_ref().unwrap();
    assert!(cycle.steps.iter().all(|s| s.kind == EdgeKind::Ww));
}

#[test]
fn g1a_aborted_read_list_and_register() {
    let h = History::new(vec![
        aborted(1, vec![app(1, 1), w(2, 10)]),
        c(2, vec![r(1, &[1])]),
        c(3, vec![rr(2, Some(10))]),
    ]);
    let rep = chk(&h);
    only(&rep, G1a);
    assert_eq!(rep.count(G1a), 2);
    assert!(rep.violates_read_committed());
}

#[test]
fn g1b_intermediate_read_list_and_register() {
    let h = concurrent(vec![
        c(1, vec![app(1, 1), app(1, 2), w(2, 10), w(2, 11)]),
        c(2, vec![r(1, &[1]), rr(2, Some(10))]),
        c(3, vec![r(1, &[1, 2]), rr(2, Some(11))]),
    ]);
    let rep = chk(&h);
    assert_eq!(rep.count(G1b), 2, "{rep}");
    // Seeing half of T1 also puts T2 on a cycle with it; nothing else.
    assert!(
        rep.anomalies
            .iter()
            .all(|a| a.kind == G1b || a.kind.is_cycle()),
        "{rep}"
    );
    assert!(rep.violates_read_committed());
}

#[test]
fn g1c_circular_information_flow() {
    let h = concurrent(vec![
        c(1, vec![app(1, 1), r(2, &[2])]),
        c(2, vec![app(2, 2), r(1, &[1])]),
    ]);
    let rep = chk(&h);
    only(&rep, G1c);
    assert!(rep.violates_read_committed());
}

#[test]
fn g_single_read_skew() {
    let h = concurrent(vec![
        c(1, vec![app(1, 1), app(2, 2)]),
        c(2, vec![r(1, &[]), r(2, &[2])]),
        c(3, vec![r(1, &[1])]),
    ]);
    let rep = chk(&h);
    only(&rep, GSingle);
    assert!(rep.violates_snapshot_isolation());
    assert!(!rep.violates_read_committed());
}

#[test]
fn g_single_lost_update_on_lists() {
    let h = concurrent(vec![
        c(1, vec![r(1, &[]), app(1, 1)]),
        c(2, vec![r(1, &[]), app(1, 2)]),
        c(3, vec![r(1, &[1, 2])]),
    ]);
    only(&chk(&h), GSingle);
}

#[test]
fn g_single_lost_update_on_registers() {
    let h = concurrent(vec![
        c(0, vec![w(1, 1)]),
        c(1, vec![rr(1, Some(1)), w(1, 2)]),
        c(2, vec![rr(1, Some(1)), w(1, 3)]),
    ]);
    let rep = chk(&h);
    assert!(rep.has(GSingle), "{rep}");
    assert!(rep.violates_snapshot_isolation());
}

/// A lost update whose overwritten value nobody else reads. Recorded with
/// blind writes (as the Strata adapter once recorded its read-modify-write
/// register writes), nothing orders the two writes and the history passes;
/// with the read of each read-modify-write recorded, both writers are seen
/// to overwrite the initial state.
#[test]
fn lost_update_on_registers_needs_the_recorded_read() {
    let blind = concurrent(vec![
        c(1, vec![w(1, 1)]),
        c(2, vec![w(1, 2)]),
        c(3, vec![rr(1, Some(2))]),
    ]);
    let rep = chk(&blind);
    assert!(rep.is_valid(), "{rep}");
    let read_modify_write = concurrent(vec![
        c(1, vec![rr(1, None), w(1, 1)]),
        c(2, vec![rr(1, None), w(1, 2)]),
        c(3, vec![rr(1, Some(2))]),
    ]);
    let rep = chk(&read_modify_write);
    assert!(rep.has(GSingle), "{rep}");
    assert!(rep.to_string().contains("lost update on key 1"), "{rep}");
    assert!(rep.violates_snapshot_isolation());
}

/// G0 (dirty writes) on registers: T1 and T2 both write keys 1 and 2, in
/// opposite orders. Only the reads of the read-modify-writes say which write
/// came first on each key.
#[test]
fn g0_on_registers_needs_the_recorded_reads() {
    let blind = concurrent(vec![
        c(1, vec![w(1, 1), w(2, 11)]),
        c(2, vec![w(1, 2), w(2, 22)]),
        c(3, vec![rr(1, Some(2)), rr(2, Some(11))]),
    ]);
    let rep = chk(&blind);
    assert!(rep.is_valid(), "{rep}");
    let read_modify_write = concurrent(vec![
        c(1, vec![rr(1, None), w(1, 1), rr(2, Some(22)), w(2, 11)]),
        c(2, vec![rr(1, Some(1)), w(1, 2), rr(2, None), w(2, 22)]),
        c(3, vec![rr(1, Some(2)), rr(2, Some(11))]),
    ]);
    let rep = chk(&read_modify_write);
    assert!(rep.has(G0), "{rep}");
    assert!(rep.violates_read_committed());
}

#[test]
fn g2_item_write_skew() {
    let h = concurrent(vec![
        c(1, vec![r(1, &[]), r(2, &[]), app(1, 1)]),
        c(2, vec![r(1, &[]), r(2, &[]), app(2, 2)]),
        c(3, vec![r(1, &[1]), r(2, &[2])]),
    ]);
    let rep = chk(&h);
    only(&rep, G2Item);
    assert!(rep.violates_serializability());
    assert!(
        !rep.violates_snapshot_isolation(),
        "write skew is allowed by SI"
    );
    let text = rep.to_string();
    assert!(
        text.contains("T1 -rw(key 2: read [], T2 appended 2)-> T2"),
        "{text}"
    );
    assert!(
        text.contains("T2 -rw(key 1: read [], T1 appended 1)-> T1"),
        "{text}"
    );
}

#[test]
fn g2_item_write_skew_on_registers() {
    let h = concurrent(vec![
        c(1, vec![rr(1, None), rr(2, None), w(1, 1)]),
        c(2, vec![rr(1, None), rr(2, None), w(2, 2)]),
    ]);
    let rep = chk(&h);
    only(&rep, G2Item);
}

#[test]
fn g2_predicate_phantom() {
    let h = concurrent(vec![
        c(1, vec![scan(0, 10, &[]), app(1, 1)]),
        c(2, vec![scan(0, 10, &[]), app(2, 2)]),
        c(3, vec![r(1, &[1]), r(2, &[2])]),
    ]);
    let rep = chk(&h);
    only(&rep, G2Predicate);
    assert!(!rep.violates_snapshot_isolation());
    assert!(rep.to_string().contains("scan k0..k10"), "{rep}");
}

#[test]
fn predicate_read_skew_is_g_single() {
    // T2's scan saw T1's append to key 3 but not its append to key 1.
    let h = concurrent(vec![
        c(1, vec![app(1, 1), app(3, 3)]),
        c(2, vec![scan(0, 5, &[(3, &[3])])]),
        c(3, vec![r(1, &[1])]),
    ]);
    only(&chk(&h), GSingle);
}

#[test]
fn duplicate_elements() {
    let h = History::new(vec![c(1, vec![app(1, 1)]), c(2, vec![r(1, &[1, 1])])]);
    only(&chk(&h), DuplicateElements);
}

#[test]
fn incompatible_order() {
    let h = concurrent(vec![
        c(1, vec![app(1, 1)]),
        c(2, vec![app(1, 2)]),
        c(3, vec![r(1, &[1, 2])]),
        c(4, vec![r(1, &[2, 1])]),
    ]);
    let rep = chk(&h);
    assert!(rep.has(IncompatibleOrder), "{rep}");
    assert!(rep.violates_read_committed());
}

#[test]
fn lost_append_within_a_transaction() {
    let h = History::new(vec![
        c(1, vec![app(1, 1), app(1, 2)]),
        c(2, vec![r(1, &[2])]),
    ]);
    only(&chk(&h), LostAppend);
}

#[test]
fn lost_append_in_real_time() {
    // T1's append was acknowledged, yet T2 (started later) and everyone else
    // never see it.
    let h = History::new(vec![
        c(1, vec![app(1, 1)]),
        c(2, vec![app(1, 2)]),
        c(3, vec![r(1, &[2])]),
    ]);
    assert!(chk(&h).is_valid(), "serializable as T3, T1 or T2, T3, T1");
    let rep = check(&h, &CheckOptions::strict());
    only(&rep, LostAppend);
    assert!(!rep.violates_serializability());
    assert!(rep.violates_strict_serializability());
}

#[test]
fn garbage_reads() {
    let h = History::new(vec![
        c(1, vec![app(1, 1), w(5, 50)]),
        c(2, vec![r(1, &[99])]),
        c(3, vec![rr(5, Some(77))]),
        c(4, vec![r(2, &[1])]),
    ]);
    let rep = chk(&h);
    only(&rep, GarbageRead);
    assert_eq!(rep.count(GarbageRead), 3);
}

#[test]
fn internal_inconsistency() {
    let h = History::new(vec![
        c(1, vec![app(1, 1), r(1, &[])]),
        c(2, vec![w(2, 5), rr(2, None)]),
        c(3, vec![r(3, &[]), r(3, &[7])]),
        c(4, vec![app(3, 7)]),
    ]);
    let rep = chk(&h);
    assert_eq!(rep.count(InternalInconsistency), 3, "{rep}");
    assert!(rep.violates_snapshot_isolation());
}

#[test]
fn serial_history_is_valid() {
    let h = History::new(vec![
        c(0, vec![r(1, &[]), app(1, 1), r(1, &[1])]),
        c(1, vec![app(1, 2), app(2, 3), w(9, 90)]),
        c(
            2,
            vec![r(1, &[1, 2]), r(2, &[3]), rr(9, Some(90)), w(9, 91)],
        ),
        c(
            3,
            vec![scan(0, 3, &[(1, &[1, 2]), (2, &[3])]), rr(9, Some(91))],
        ),
        c(4, vec![app(1, 4), scan(1, 2, &[(1, &[1, 2, 4])])]),
    ]);
    for opts in [CheckOptions::default(), CheckOptions::strict()] {
        let rep = check(&h, &opts);
        assert!(rep.is_valid(), "{rep}");
        assert_eq!(rep.txns_checked, 5);
    }
}

#[test]
fn unread_aborted_writes_are_fine() {
    let h = History::new(vec![
        c(0, vec![app(1, 1)]),
        aborted(1, vec![app(1, 2), w(3, 30)]),
        c(2, vec![r(1, &[1]), rr(3, None), app(1, 3)]),
        c(3, vec![r(1, &[1, 3])]),
    ]);
    let rep = check(&h, &CheckOptions::strict());
    assert!(rep.is_valid(), "{rep}");
}

#[test]
fn concurrent_serializable_interleaving_is_valid() {
    // Real time runs T1, T2, T3 concurrently; the only serial order is
    // T2, T3, T1 (T1 saw both), which is fine without real-time edges and
    // even with them, since they overlap.
    let h = concurrent(vec![
        c(1, vec![r(1, &[2, 3]), app(2, 4)]),
        c(2, vec![app(1, 2)]),
        c(3, vec![r(1, &[2]), app(1, 3), r(2, &[])]),
    ]);
    for opts in [CheckOptions::default(), CheckOptions::strict()] {
        let rep = check(&h, &opts);
        assert!(rep.is_valid(), "{rep}");
    }
}

#[test]
fn unknown_outcomes_are_possibly_committed() {
    let h = History::new(vec![
        unknown(0, vec![app(1, 1)]), // observed: it committed
        unknown(1, vec![app(1, 2)]), // never observed: maybe it did not
        unknown(2, vec![w(2, 5)]),   // observed through a register
        c(3, vec![r(1, &[1]), rr(2, Some(5))]),
        c(4, vec![app(1, 3), r(1, &[1, 3])]),
    ]);
    let rep = check(&h, &CheckOptions::strict());
    assert!(rep.is_valid(), "{rep}");
}

#[test]
fn observed_unknown_txn_joins_cycles() {
    // T0's outcome is unknown, but T2 saw its append to key 1, so it
    // committed — and T2 missed its append to key 2: read skew.
    let h = concurrent(vec![
        unknown(0, vec![app(1, 1), app(2, 2)]),
        c(2, vec![r(1, &[1]), r(2, &[])]),
        c(3, vec![r(2, &[2])]),
    ]);
    only(&chk(&h), GSingle);
}

#[test]
fn realtime_only_cycle_is_strict_violation() {
    // T1 completes before T2 starts, yet T2 does not see T1's append: fine
    // for serializability (T2 before T1), not for strict serializability.
    let h = History::new(vec![
        c(1, vec![app(1, 1)]),
        c(2, vec![r(1, &[])]),
        c(3, vec![r(1, &[1])]),
    ]);
    assert!(chk(&h).is_valid());
    let rep = check(&h, &CheckOptions::strict());
    assert!(rep.has(GSingle), "{rep}");
    assert!(rep.anomalies.iter().all(|a| a.realtime));
    assert!(!rep.violates_serializability() && rep.violates_strict_serializability());
    let text = rep.to_string();
    assert!(
        text.contains("-rt(T1 completed at 3 before T2 was invoked at 4)-> T2"),
        "{text}"
    );
}

#[test]
fn serializability_cycle_not_hidden_by_realtime_edges() {
    let h = History::new(vec![
        c(1, vec![r(1, &[]), r(2, &[]), app(1, 1)]),
        c(2, vec![r(1, &[]), r(2, &[]), app(2, 2)]),
        c(3, vec![r(1, &[1]), r(2, &[2])]),
    ]);
    let rep = check(&h, &CheckOptions::strict());
    assert!(rep.violates_serializability(), "{rep}");
}

#[test]
fn report_display_explains_the_cycle() {
    let h = concurrent(vec![
        c(8, vec![app(5, 1), app(5, 2)]),
        c(7, vec![app(5, 3), app(6, 9)]),
        c(3, vec![r(5, &[1, 2]), r(6, &[9])]),
        c(10, vec![r(5, &[1, 2, 3])]),
    ]);
    let rep = chk(&h);
    let text = rep.to_string();
    only(&rep, GSingle);
    assert!(
        text.starts_with("4 txns checked: violates snapshot isolation (G-single x1)"),
        "{text}"
    );
    assert!(
        text.contains("T3 -rw(key 5: read [1,2], T7 appended 3)-> T7"),
        "{text}"
    );
    assert!(
        text.contains("T7 -wr(key 6: T7 appended 9, T3 read [9])-> T3"),
        "{text}"
    );
    assert!(
        text.contains("T3 (client 2, Committed): read(k5) = [1,2]; read(k6) = [9]"),
        "{text}"
    );
    let cycle = rep.smallest_cycle().unwrap().cycle.as_ref().unwrap();
    assert_eq!(cycle.txns.len(), 2);
}

#[test]
fn empty_history_is_valid() {
    assert!(chk(&History::default()).is_valid());
}

/// TA reads y (the initial state) and writes x blind; TB writes x and y
/// blind; the store installed TA's x over TB's. TA -rw-> TB (TA read the
/// y TB overwrote) and TB -ww-> TA (x): a cycle with one rw edge. Nothing
/// anyone read shows the ww edge, so without the store's version order
/// the history checks clean; with it, G-single.
#[test]
fn blind_writes_need_the_version_order() {
    let txns = vec![
        c(0, vec![rr(2, None), w(1, 1)]),
        c(1, vec![w(1, 2), w(2, 3)]),
    ];
    let bare = concurrent(txns);
    assert!(chk(&bare).is_valid(), "{}", chk(&bare));
    let mut ordered = bare.clone();
    ordered.version_orders.insert(1, vec![2, 1]);
    ordered.version_orders.insert(2, vec![3]);
    only(&chk(&ordered), GSingle);
    // The other order is serializable (TA before TB) and checks clean.
    let mut fine = bare;
    fine.version_orders.insert(1, vec![1, 2]);
    fine.version_orders.insert(2, vec![3]);
    assert!(chk(&fine).is_valid(), "{}", chk(&fine));
}

/// A write skew (T1 -rw-> T2 -rw-> T1) in one component with a G-single
/// (T1 -rw-> T2 -wr-> T3 -wr-> T1), which snapshot isolation forbids. With
/// the budget the G-single is found; with a tiny one the search gives up,
/// and the G2 it reports instead must not read as "allowed by SI": the
/// report says the search was incomplete and counts against SI.
fn write_skew_hiding_a_g_single() -> History {
    concurrent(vec![
        c(1, vec![r(0, &[]), r(1, &[]), r(2, &[3]), app(0, 1)]),
        c(2, vec![r(0, &[]), r(1, &[]), app(1, 2)]),
        c(3, vec![r(1, &[2]), app(2, 3)]),
        c(4, vec![r(0, &[1]), r(1, &[2])]),
    ])
}

#[test]
fn a_g_single_is_found_with_the_budget() {
    let rep = chk(&write_skew_hiding_a_g_single());
    assert!(rep.has(GSingle), "{rep}");
    assert!(rep.is_complete(), "{rep}");
    assert!(rep.violates_snapshot_isolation(), "{rep}");
}

#[test]
fn a_cycle_search_out_of_budget_is_incomplete_never_allowed() {
    for budget in [0, 1] {
        let opts = CheckOptions {
            cycle_search_budget: budget,
            ..CheckOptions::default()
        };
        let rep = check(&write_skew_hiding_a_g_single(), &opts);
        assert!(!rep.has(GSingle), "budget {budget}: {rep}");
        assert!(rep.has(G2Item), "budget {budget}: {rep}");
        assert!(rep.has(SearchIncomplete), "budget {budget}: {rep}");
        assert!(!rep.is_complete());
        // Not "allowed by snapshot isolation".
        assert!(rep.violates_snapshot_isolation(), "budget {budget}: {rep}");
        assert!(!rep.violates_read_committed(), "budget {budget}: {rep}");
        assert!(
            rep.verdict().contains("cycle search incomplete"),
            "budget {budget}: {}",
            rep.verdict()
        );
        let text = rep.to_string();
        assert!(text.contains("search-incomplete"), "{text}");
    }
}
