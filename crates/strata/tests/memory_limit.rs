//! `Options::memory_limit`: past it inserts and updates are refused with a
//! typed error (after a GC pass tried to get under it), reads, deletes and
//! commits go on, nothing committed is lost, and deleting (or ending the
//! reader that pinned old versions) makes room again.

use crate::common;
use strata::{key, Database, Error, Options, Protocol, Schema, Table, Type, Value};

const LIMIT: u64 = 2 << 20;

/// `blobs(k, c0 .. c31)`: 32 integer cells a row (the limit counts the
/// version store's blocks; text and byte payloads are not counted yet, see
/// `Options::memory_limit`).
fn blobs(db: &Database) -> Table {
    let mut s = Schema::new("blobs").column("k", Type::Int);
    for c in 0..COLS {
        s = s.column(format!("c{c}"), Type::Int);
    }
    db.create_table(s.primary_key(&["k"])).unwrap()
}

const COLS: usize = 32;

/// Row `k`'s cells, all `k + round`.
fn cells(k: i64, round: i64) -> Vec<Value> {
    std::iter::once(Value::Int(k))
        .chain((0..COLS).map(|_| Value::Int(k + round)))
        .collect()
}

fn row_of(k: i64) -> Vec<Value> {
    cells(k, 0)
}

/// Inserts 100-row batches until the limit refuses one; returns the rows
/// committed and the refusal.
fn fill(db: &Database, t: &Table) -> (i64, Error) {
    let mut next = 0;
    loop {
        let mut tx = db.begin().unwrap();
        for k in next..next + 100 {
            if let Err(e) = tx.insert(t, row_of(k)) {
                // Refused: the transaction is open and unchanged; what it
                // inserted before the refusal commits.
                tx.commit().unwrap();
                let n = db.begin_read_only().unwrap().count(t, ..).unwrap() as i64;
                return (n, e);
            }
        }
        tx.commit().unwrap();
        next += 100;
        assert!(
            next < 100_000,
            "no refusal: {:?}",
            db.counters().memory_in_use
        );
    }
}

#[test]
fn inserts_past_the_limit_are_refused_and_nothing_committed_is_lost() {
    for cfg in common::configs().storages().valid() {
        let db = Database::open(cfg.opts.clone().memory_limit(LIMIT)).unwrap();
        let t = blobs(&db);
        let (rows, err) = fill(&db, &t);
        let Error::MemoryLimit { in_use, limit } = err else {
            panic!("{cfg}: {err}");
        };
        assert_eq!(limit, LIMIT);
        assert!(in_use > LIMIT, "{cfg}: {in_use}");
        // Roughly the data: at least its cells, within a few times.
        let cells = rows * (COLS as i64 + 1) * 16;
        assert!(
            cells <= in_use as i64 && in_use as i64 <= 4 * cells,
            "{cfg}: {rows} rows in {in_use} bytes"
        );
        let st = db.counters();
        assert_eq!(
            (st.memory_limit, st.memory_in_use > LIMIT),
            (Some(LIMIT), true),
            "{cfg}"
        );
        // Reads go on, and every committed row is whole.
        let mut ro = db.begin_read_only().unwrap();
        for k in 0..rows {
            assert_eq!(
                ro.get(&t, &key![k]).unwrap().unwrap(),
                row_of(k),
                "{cfg} row {k}"
            );
        }
        drop(ro);
        // Updates are refused too; deletes are the way back.
        let refused = db.run(|tx| tx.update(&t, &key![0], &[("c0", Value::Int(-1))]));
        assert!(
            matches!(refused, Err(Error::MemoryLimit { .. })),
            "{cfg}: {refused:?}"
        );
        db.run(|tx| (0..rows / 2).try_for_each(|k| tx.delete(&t, &key![k])))
            .unwrap();
        // Deleted rows are freed once a pass has unlinked them and a later
        // commit moved the clock past the unlink (`gc::limbo`): here
        // nothing else commits, so two small writes, each with a pass.
        for k in 1..=2 {
            db.run(|tx| tx.delete(&t, &key![rows - k])).unwrap();
            db.collect_garbage();
        }
        let after = db.counters().memory_in_use;
        assert!(after < LIMIT, "{cfg}: {after} in use after deleting half");
        db.run(|tx| tx.insert(&t, row_of(rows + 1)))
            .unwrap_or_else(|e| panic!("{cfg}: {e}"));
    }
}

/// Updates under a limit the data fits in go on as long as GC can free
/// the versions they replace: a long reader pins them, and then the limit
/// refuses; once the reader ends, the pass the refused write asks for
/// frees them and writes go on.
#[test]
fn a_long_reader_pins_versions_past_the_limit_until_it_ends() {
    for cfg in common::configs().storages().valid() {
        let db = Database::open(cfg.opts.clone().memory_limit(LIMIT)).unwrap();
        let t = blobs(&db);
        db.run(|tx| (0..500).try_for_each(|k| tx.insert(&t, row_of(k))))
            .unwrap();
        let update_all = |round: i64| {
            let changes: Vec<(usize, Value)> = (1..=COLS).map(|c| (c, Value::Int(round))).collect();
            db.run(|tx| (0..500).try_for_each(|k| tx.update(&t, &key![k], &changes)))
        };
        for round in 0..10 {
            update_all(round)
                .unwrap_or_else(|e| panic!("{cfg}: round {round} without a reader: {e}"));
        }
        let reader = db.begin_read_only().unwrap();
        let refused = (10..40).map(update_all).find_map(|r| r.err());
        assert!(
            matches!(refused, Some(Error::MemoryLimit { .. })),
            "{cfg}: {refused:?}"
        );
        drop(reader);
        update_all(99).unwrap_or_else(|e| panic!("{cfg}: after the reader ended: {e}"));
        let mut ro = db.begin_read_only().unwrap();
        assert_eq!(
            ro.get(&t, &key![7]).unwrap().unwrap()[5],
            Value::Int(99),
            "{cfg}"
        );
    }
}

/// An aborted transaction's writes leave the gauge where it was: its
/// rollback's retirements are handed over with its allocations.
#[test]
fn an_abort_gives_its_memory_back() {
    let db = Database::open(
        Options::default()
            .protocol(Protocol::SiSsn)
            .memory_limit(LIMIT),
    )
    .unwrap();
    let t = blobs(&db);
    db.run(|tx| tx.insert(&t, row_of(0))).unwrap();
    let before = db.counters().memory_in_use;
    assert!(before >= 16 * COLS as u64, "{before}");
    let mut tx = db.begin().unwrap();
    for k in 1..500 {
        tx.insert(&t, row_of(k)).unwrap();
    }
    tx.abort();
    assert_eq!(db.counters().memory_in_use, before);
}

#[test]
fn no_limit_counts_nothing_and_a_zero_limit_is_refused() {
    let db = common::db(Protocol::SiSsn);
    let t = blobs(&db);
    db.run(|tx| tx.insert(&t, row_of(0))).unwrap();
    let st = db.counters();
    assert_eq!((st.memory_limit, st.memory_in_use), (None, 0));
    let bad = Database::open(Options::default().memory_limit(0));
    assert!(matches!(bad, Err(Error::InvalidConfig(_))));
}
