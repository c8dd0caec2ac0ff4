//! `Options::memory_limit`: past it inserts and updates are refused with a
//! typed error (after a GC pass tried to get under it), reads, deletes and
//! commits go on, nothing committed is lost, and deleting (or ending the
//! reader that pinned old versions) makes room again. The gauge counts the
//! version store's blocks, the text and byte payloads their holders own,
//! and index entries, and goes back to where it started once everything
//! is deleted and collected, or dropped, under every storage scheme.

use crate::common;
use strata::{
    key, row, Database, Error, Index, IndexKind, NonInline, Options, Protocol, Schema, Table, Text,
    Type, Unique, Value,
};

const LIMIT: u64 = 2 << 20;

/// `blobs(k, c0 .. c31)`: 32 integer cells a row.
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
    fill_with(db, t, row_of)
}

/// [`fill`] with row `k` made by `row(k)`.
fn fill_with(db: &Database, t: &Table, row: impl Fn(i64) -> Vec<Value>) -> (i64, Error) {
    let mut next = 0;
    loop {
        let mut tx = db.begin().unwrap();
        for k in next..next + 100 {
            if let Err(e) = tx.insert(t, row(k)) {
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

/// Payloads and index entries count only in a database with a limit (its
/// flag, fixed at open: `storage::meter::Gauged`). Their counts go
/// through the thread's meter, which any hand-over with a limit takes:
/// a database without one that counted its texts there would put them in
/// the gauge of one with a limit on the same thread at its next commit.
/// Each row of texts and secondary entries written without a limit costs
/// no counting, and the limited database's gauge sees only its own row.
#[test]
fn a_database_without_a_limit_counts_nothing_into_another_ones_gauge() {
    let limited = Database::open(Options::default().memory_limit(u64::MAX >> 1)).unwrap();
    let t = docs(&limited, "docs");
    limited.run(|tx| tx.insert(&t, row![0, "a", 0])).unwrap();
    let before = limited.counters().memory_in_use;
    let free = Database::open(Options::default()).unwrap();
    let u = docs(&free, "docs");
    free.create_index("by_body", &u, &["body"], Unique::No)
        .unwrap();
    free.run(|tx| (0..ROWS).try_for_each(|k| tx.insert(&u, row![k, body(k, 0, BODY), k])))
        .unwrap();
    // A second text for each row (the first goes to the collector).
    free.run(|tx| {
        (0..ROWS).try_for_each(|k| tx.update(&u, &key![k], &[("body", body(k, 1, BODY))]))
    })
    .unwrap();
    free.collect_garbage();
    limited.run(|tx| tx.insert(&t, row![1, "b", 1])).unwrap();
    let after = limited.counters().memory_in_use;
    assert!(
        after > before && after - before < SLACK,
        "{before} -> {after}: {ROWS} rows of {BODY}-byte texts in another database counted here"
    );
    assert_eq!(free.counters().memory_in_use, 0);
}

/// `docs(k, body, n)`: a text a row, and a plain counter.
fn docs(db: &Database, name: &str) -> Table {
    db.create_table(
        Schema::new(name)
            .column("k", Type::Int)
            .column("body", Type::Text)
            .column("n", Type::Int)
            .primary_key(&["k"]),
    )
    .unwrap()
}

/// A text of `len` bytes, its own for `k` (and `round`).
fn body(k: i64, round: i64, len: usize) -> Value {
    let mut s = format!("{k}-{round}-");
    s.extend(std::iter::repeat_n('x', len.saturating_sub(s.len())));
    Value::Text(Text::from(s))
}

const BODY: usize = 4096;

/// A table of 4 KiB texts reaches the limit with far fewer rows than one
/// of integers (its payloads count), gets the typed error, and keeps
/// every row it committed.
#[test]
fn texts_reach_the_limit_with_fewer_rows_than_integers() {
    // (`covering`: every storage scheme, SIRO with its collector.)
    for cfg in common::configs().storages().gc_policies().covering() {
        let ints = Database::open(cfg.opts.clone().memory_limit(LIMIT)).unwrap();
        let (int_rows, _) = fill(&ints, &blobs(&ints));
        drop(ints);
        let db = Database::open(cfg.opts.clone().memory_limit(LIMIT)).unwrap();
        let t = docs(&db, "docs");
        let (rows, err) = fill_with(&db, &t, |k| row![k, body(k, 0, BODY), k]);
        let Error::MemoryLimit { in_use, limit } = err else {
            panic!("{cfg}: {err}");
        };
        assert_eq!(limit, LIMIT, "{cfg}");
        // Each row holds its text: a row of texts weighs about 4 KiB, a
        // row of 33 integers about 600 bytes (a text counted as its
        // 16-byte cell alone let three times as many rows in as integers).
        assert!(
            rows > 0 && rows * 4 < int_rows,
            "{cfg}: {rows} text rows, {int_rows} integer rows"
        );
        assert!(
            in_use >= rows as u64 * BODY as u64,
            "{cfg}: {rows} rows of {BODY}-byte texts in {in_use} bytes"
        );
        let mut ro = db.begin_read_only().unwrap();
        for k in 0..rows {
            assert_eq!(
                ro.get(&t, &key![k]).unwrap().unwrap(),
                row![k, body(k, 0, BODY), k],
                "{cfg} row {k}"
            );
        }
        assert_eq!(ro.count(&t, ..).unwrap() as i64, rows, "{cfg}");
    }
}

/// Slack for the gauge's "back where it started": the one-row table the
/// tests tick keeps a version or two more or less than when the start was
/// taken, and a background pass may be between its retirements and its
/// hand-over. What the tests put in is megabytes.
const SLACK: u64 = 16 << 10;

/// A table whose row 0 `tick` updates: a commit that moves the clock past
/// what a pass unlinked (`gc::limbo`), so the next pass frees it. Its
/// other rows are ballast that stays: a gauge that released more than it
/// counted would fall below where it started by that much (with nothing
/// held it could only stop at 0, near any small start).
fn ticker(db: &Database) -> (Table, impl Fn() + '_) {
    let t = docs(db, "ticker");
    db.run(|tx| tx.insert(&t, row![0, "tick", 0])).unwrap();
    db.run(|tx| (1..=BALLAST).try_for_each(|k| tx.insert(&t, row![k, body(k, 0, BODY), k])))
        .unwrap();
    let tt = t.clone();
    let tick = move || {
        db.run(|tx| tx.update(&tt, &key![0], &[("n", Value::Int(1))]))
            .unwrap();
        db.collect_garbage();
    };
    (t, tick)
}

/// Rows of 4 KiB texts in the ticker's table: a megabyte.
const BALLAST: i64 = 256;

/// Ticks and collects until the gauge is within [`SLACK`] of `start`, for
/// at most [`ROUNDS`] rounds (each pass unlinks or frees what the one
/// before left: a handful do); returns it.
fn settle(db: &Database, tick: &impl Fn(), start: u64) -> u64 {
    for _ in 0..ROUNDS {
        tick();
        let m = db.counters().memory_in_use;
        if m.abs_diff(start) <= SLACK {
            return m;
        }
    }
    db.counters().memory_in_use
}

const ROUNDS: usize = 64;

/// The gauge at rest: a few ticks, so the ticker's row has its steady
/// shape.
fn at_rest(db: &Database, tick: &impl Fn()) -> u64 {
    for _ in 0..4 {
        tick();
    }
    db.counters().memory_in_use
}

/// Fills `t` (a secondary index on its texts) with `rows` rows of texts,
/// then, under a reader that pins the first versions, updates every text
/// and every counter (texts carried over) a few times with collections
/// between (a dead-zone collector prunes the versions between the reader's
/// and the newest: merged and re-homed records, texts handed back), and
/// aborts a write of new texts over some.
fn churn(db: &Database, t: &Table, rows: i64) {
    db.run(|tx| (0..rows).try_for_each(|k| tx.insert(t, row![k, body(k, 0, BODY), k])))
        .unwrap();
    let reader = db.begin_read_only().unwrap();
    for round in 1..=3 {
        db.run(|tx| {
            (0..rows).try_for_each(|k| tx.update(t, &key![k], &[("body", body(k, round, BODY))]))
        })
        .unwrap();
        db.run(|tx| {
            (0..rows).try_for_each(|k| tx.update(t, &key![k], &[("n", Value::Int(round))]))
        })
        .unwrap();
        db.collect_garbage();
    }
    drop(reader);
    // (A conflict rolls the attempt back: try again. The background
    // collector removes stale index entries under the row's write lock, so
    // a write may meet it.)
    loop {
        let mut tx = db.begin().unwrap();
        let wrote =
            (0..rows / 4).try_for_each(|k| tx.update(t, &key![k], &[("body", body(k, 9, BODY))]));
        match wrote {
            Ok(()) => return tx.abort(),
            Err(Error::Conflict(_)) => continue,
            Err(e) => panic!("{e}"),
        }
    }
}

const ROWS: i64 = 200;

/// Deletes rows `0..ROWS` of `t` and waits for the gauge to settle: it is
/// back at `start` (it was at `peak`), and the table is empty.
fn deleting_every_row_gives_it_back(
    db: &Database,
    t: &Table,
    tick: &impl Fn(),
    start: u64,
    peak: u64,
    cfg: &str,
) {
    db.run(|tx| (0..ROWS).try_for_each(|k| tx.delete(t, &key![k])))
        .unwrap();
    let end = settle(db, tick, start);
    assert!(
        end.abs_diff(start) <= SLACK,
        "{cfg}: the gauge went {start} -> {peak} -> {end} after deleting every row"
    );
    assert_eq!(db.begin_read_only().unwrap().count(t, ..).unwrap(), 0);
}

/// Under every storage scheme and collector: rows of texts with a secondary index on
/// them, updated (new texts, and texts carried to new versions), an
/// abort, then every row deleted and collected: the gauge is back where
/// it started (so every payload and index entry counted on the way in was
/// released on the way out, whoever held it last).
#[test]
fn the_gauge_comes_back_after_deleting_everything_under_every_scheme() {
    let shared = common::configs()
        .protocols()
        .storages()
        .gc_where(common::reclaims);
    // Also with texts copied into each new version and full record.
    let copied = common::configs()
        .with(|o| o.non_inline(NonInline::Copy))
        .storages();
    let all = (shared.valid().into_iter().map(|c| (c, "")))
        .chain(copied.valid().into_iter().map(|c| (c, ", texts copied")));
    for (c, how) in all {
        let cfg = format!("{c}{how}");
        let db = Database::open(c.opts.clone().memory_limit(u64::MAX >> 1)).unwrap();
        let (_ticker, tick) = ticker(&db);
        let t = docs(&db, "docs");
        db.create_index("docs_body", &t, &["body"], Unique::No)
            .unwrap();
        let start = at_rest(&db, &tick);
        churn(&db, &t, ROWS);
        let full = db.counters().memory_in_use;
        assert!(
            full > start + ROWS as u64 * 2 * BODY as u64,
            "{cfg}: {start} -> {full}: texts and their index entries count"
        );
        deleting_every_row_gives_it_back(&db, &t, &tick, start, full, &cfg);
    }
}

/// `named(name TEXT, body TEXT, n INT)`, keyed by name: the drop tests'
/// table.
fn named(db: &Database) -> strata::Table {
    db.create_table(
        Schema::new("named")
            .column("name", Type::Text)
            .column("body", Type::Text)
            .column("n", Type::Int)
            .primary_key(&["name"]),
    )
    .unwrap()
}

/// The same rows, then the table dropped: its reclaim gives back its rows
/// (blocks and payloads), its primary index (text keys here), and its
/// secondary indexes (a standard one, or an MV-PBT one and a standard
/// one), under every
/// storage scheme and collector (none included: a drop's reclaim needs
/// none).
#[test]
fn the_gauge_comes_back_after_a_drop_under_every_scheme() {
    let configs = common::configs()
        .with(|o| o.mvpbt_partition_records(64))
        .storages()
        .gc_policies();
    for (cfg, kind) in configs
        .valid()
        .into_iter()
        .flat_map(|c| [(c.clone(), IndexKind::Standard), (c, IndexKind::MvPbt)])
    {
        let db = Database::open(cfg.opts.clone().memory_limit(u64::MAX >> 1)).unwrap();
        let cfg = format!("{cfg}, {kind}");
        let (_ticker, tick) = ticker(&db);
        let t = named(&db);
        // A standard index, or an MV-PBT one (its records in P_N and
        // frozen partitions, freezing at 64) beside a standard one: freed
        // with the table. (With two indexes, the list the second replaced
        // held the first until the epoch freed it: first until the
        // creating thread's epoch bag was flushed, which this thread, idle
        // in the epoch, never did, so the gauge went 1096284 -> 5442028 ->
        // 3673084 under ssn/n2o/none/tuple-id; then, flushed, until the
        // epoch moved, which a thread pinned anywhere in the process holds
        // back: 1095868 -> 5441612 -> 3666012 under load. The table's
        // drop frees such lists now: the test after this one.)
        db.create_index_as("named_body", &t, &["body", "n"], Unique::No, kind)
            .unwrap();
        if kind == IndexKind::MvPbt {
            db.create_index_as("named_std", &t, &["n"], Unique::No, IndexKind::Standard)
                .unwrap();
        }
        let start = at_rest(&db, &tick);
        let name = |k: i64| format!("row number {k:>40}");
        db.run(|tx| (0..ROWS).try_for_each(|k| tx.insert(&t, row![name(k), body(k, 0, BODY), k])))
            .unwrap();
        db.run(|tx| {
            (0..ROWS).try_for_each(|k| tx.update(&t, &key![name(k)], &[("body", body(k, 1, BODY))]))
        })
        .unwrap();
        drop_named_and_settle(&db, &tick, t, start, &cfg);
    }
}

/// The drop tests' end: the filled table `named` (its rows' bodies at
/// least twice over in the gauge) is dropped, reclaimed, and the gauge
/// comes back to `start`.
fn drop_named_and_settle(db: &Database, tick: &impl Fn(), t: strata::Table, start: u64, cfg: &str) {
    let full = db.counters().memory_in_use;
    assert!(
        full > start + ROWS as u64 * 2 * BODY as u64,
        "{cfg}: {start} -> {full}"
    );
    drop(t);
    db.drop_table("named").unwrap();
    reclaimed(db, tick, cfg);
    let end = settle(db, tick, start);
    assert!(
        end.abs_diff(start) <= SLACK,
        "{cfg}: the gauge went {start} -> {full} -> {end} after dropping the table"
    );
}

/// Ticks until no dropped table waits to be reclaimed: the drop reclaims
/// at once unless another thread still holds the table (a background
/// pass's list of tables, a transaction slot it had at the drop), and
/// then the first collection after it let go does, however long that
/// thread was descheduled. (A hang fails after `common::HANG_GUARD`.)
fn reclaimed(db: &Database, tick: &impl Fn(), cfg: &str) {
    let done = common::eventually(|| {
        tick();
        db.counters().dropped_tables_waiting == 0
    });
    assert!(done, "{cfg}: the dropped table was never reclaimed");
}

/// A dropped table's indexes leave the gauge at its reclaim, however far
/// behind the epoch is: here a scan in another database holds it back
/// throughout (its callback waits, pinned, as any scan's callback or a
/// thread descheduled while pinned can; the epoch is the process's). The
/// list its second index replaced held its first until the epoch freed
/// it, so the first index's entries stayed counted after the reclaim: the
/// gauge went 1095868 -> 5441612 -> 3666012 (MV-PBT) under load, and
/// stopped there here.
#[test]
fn a_dropped_tables_indexes_leave_the_gauge_while_the_epoch_is_held_back() {
    let other = common::db(Protocol::SiSsn);
    let o = docs(&other, "other");
    other.run(|tx| tx.insert(&o, row![0, "pin", 0])).unwrap();
    let snap = other.snapshot().unwrap();
    let (snap, o) = (&snap, &o);
    std::thread::scope(|s| {
        let (pinned_tx, pinned) = std::sync::mpsc::channel();
        // (Dropped on the way out, a panic's too: the scan then ends.)
        let (release, released) = std::sync::mpsc::channel::<()>();
        s.spawn(move || {
            snap.scan_while(o, .., |_| {
                pinned_tx.send(()).unwrap();
                let _ = released.recv();
                std::ops::ControlFlow::Break(())
            })
            .unwrap();
        });
        pinned.recv().expect("the scan is in its callback");
        for kind in [IndexKind::Standard, IndexKind::MvPbt] {
            let opts = Options::default()
                .mvpbt_partition_records(64)
                .memory_limit(u64::MAX >> 1);
            let db = Database::open(opts).unwrap();
            let (_ticker, tick) = ticker(&db);
            let t = named(&db);
            // The first index holds the texts; the second replaces the
            // list that holds the first.
            db.create_index_as("named_body", &t, &["body", "n"], Unique::No, kind)
                .unwrap();
            db.create_index_as("named_n", &t, &["n"], Unique::No, IndexKind::Standard)
                .unwrap();
            let start = at_rest(&db, &tick);
            db.run(|tx| {
                (0..ROWS).try_for_each(|k| tx.insert(&t, row![format!("{k}"), body(k, 0, BODY), k]))
            })
            .unwrap();
            drop_named_and_settle(&db, &tick, t, start, &kind.to_string());
        }
        release.send(()).unwrap();
    });
}

/// Index entries count: the same rows weigh more in a table with three
/// secondary indexes than in one without, by at least the entries' keys,
/// under every index-pointer scheme; an index made on loaded rows counts
/// its back-fill; deleting the rows gives it all back. The same for an
/// MV-PBT index (`IndexKind::MvPbt`: its records in P_N, and its
/// back-fill's frozen partition), whose records leave at a freeze.
#[test]
fn a_table_with_indexes_counts_more_than_one_without() {
    for (cfg, kind) in common::configs()
        .pointers()
        .valid()
        .into_iter()
        .flat_map(|c| [(c.clone(), IndexKind::Standard), (c, IndexKind::MvPbt)])
    {
        let db = Database::open(cfg.opts.clone().memory_limit(u64::MAX >> 1)).unwrap();
        let cfg = format!("{cfg}, {kind}");
        let (_ticker, tick) = ticker(&db);
        let plain = docs(&db, "plain");
        let indexed = docs(&db, "indexed");
        for (name, cols) in [
            ("by_body", &["body"][..]),
            ("by_n", &["n"]),
            ("by_both", &["n", "body"]),
        ] {
            db.create_index_as(name, &indexed, cols, Unique::No, kind)
                .unwrap();
        }
        let start = at_rest(&db, &tick);
        let load = |t: &Table| {
            let before = db.counters().memory_in_use;
            db.run(|tx| (0..ROWS).try_for_each(|k| tx.insert(t, row![k, body(k, 0, 256), k])))
                .unwrap();
            db.counters().memory_in_use.saturating_sub(before)
        };
        let (p, i) = (load(&plain), load(&indexed));
        // Two of the three indexes key on a 256-byte text: at least that
        // much a row each, besides the entries' slots.
        assert!(
            i >= p + ROWS as u64 * (2 * 256 + 3 * 40),
            "{cfg}: {p} bytes without indexes, {i} with three"
        );
        // An index made on the loaded table: its back-fill counts at once.
        let before = db.counters().memory_in_use;
        db.create_index_as("plain_body", &plain, &["body"], Unique::No, kind)
            .unwrap();
        let filled = db.counters().memory_in_use.saturating_sub(before);
        assert!(
            filled >= ROWS as u64 * (256 + 40),
            "{cfg}: the back-fill of {ROWS} entries counted {filled} bytes"
        );
        for t in [&plain, &indexed] {
            db.run(|tx| (0..ROWS).try_for_each(|k| tx.delete(t, &key![k])))
                .unwrap();
        }
        // MV-PBT records leave memory at a freeze (no snapshot left to
        // decide by them, nothing older to end: all go).
        let indexes: Vec<Index> = ["by_body", "by_n", "by_both", "plain_body"]
            .iter()
            .map(|n| db.index(n).unwrap())
            .collect();
        let tick = || {
            tick();
            if kind == IndexKind::MvPbt {
                indexes.iter().for_each(|i| db.freeze_index(i).unwrap());
            }
        };
        let end = settle(&db, &tick, start);
        assert!(end.abs_diff(start) <= SLACK, "{cfg}: {start} -> {end}");
    }
}

/// An MV-PBT index under every storage scheme, in memory and with a spill
/// directory: [`churn`] (tiny partitions: freezes, merges, records purged
/// from P_N, an abort's records leaving it), then every row deleted and
/// the index frozen: the gauge is back where it started. Spilled, a
/// frozen partition counts only the records its file does not hold (and
/// its filters): freezing committed rows into a file gives their records'
/// bytes back, where in memory they stay counted.
#[test]
fn an_mvpbt_index_gives_back_its_records_and_spilled_ones_do_not_count() {
    let root = common::TestDir::new("strata-memory-mvpbt");
    for spill in [None, Some(root.to_path_buf())] {
        let configs = common::configs()
            // (No background GC: a pass between the two freezes below
            // unlinked versions whose records the first one had kept,
            // about one run in three.)
            .with(|o| {
                o.mvpbt_partition_records(32)
                    .mvpbt_spill_dir(spill.clone())
                    .gc_interval(None)
            })
            .storages();
        for c in configs.valid() {
            let cfg = format!("{c}, spill {}", spill.is_some());
            let db = Database::open(c.opts.clone().memory_limit(u64::MAX >> 1)).unwrap();
            let (_ticker, tick) = ticker(&db);
            let t = docs(&db, "docs");
            let idx = db
                .create_index_as("docs_body", &t, &["body"], Unique::No, IndexKind::MvPbt)
                .unwrap();
            let tick = || {
                tick();
                db.freeze_index(&idx).unwrap();
            };
            let start = at_rest(&db, &tick);
            churn(&db, &t, ROWS);
            // A freeze with no snapshot open keeps one record a row.
            db.freeze_index(&idx).unwrap();
            let before = db.counters().memory_in_use;
            // One more freeze: the frozen partition merged again (counted
            // anew, the old one given back): no change.
            db.freeze_index(&idx).unwrap();
            let again = db.counters().memory_in_use;
            assert_eq!(before, again, "{cfg}: a merge into the same records");
            let st = db.stats().mvpbt;
            if spill.is_some() {
                assert_eq!(st.spilled_records, ROWS as u64, "{cfg}: {st:?}");
            } else {
                assert_eq!(st.frozen_records, ROWS as u64, "{cfg}: {st:?}");
            }
            deleting_every_row_gives_it_back(&db, &t, &tick, start, before, &cfg);
        }
    }
    // In memory against spilled: the same committed rows, frozen.
    let frozen = |spill: Option<std::path::PathBuf>| {
        let o = Options::default()
            .mvpbt_partition_records(1 << 20)
            .mvpbt_spill_dir(spill)
            .memory_limit(u64::MAX >> 1);
        let db = Database::open(o).unwrap();
        let t = docs(&db, "docs");
        let idx = db
            .create_index_as("docs_body", &t, &["body"], Unique::No, IndexKind::MvPbt)
            .unwrap();
        db.run(|tx| (0..ROWS).try_for_each(|k| tx.insert(&t, row![k, body(k, 0, 256), k])))
            .unwrap();
        let loaded = db.counters().memory_in_use;
        db.freeze_index(&idx).unwrap();
        (loaded, db.counters().memory_in_use)
    };
    let (mem_loaded, mem_frozen) = frozen(None);
    let (spill_loaded, spill_frozen) = frozen(Some(root.to_path_buf()));
    assert_eq!(mem_loaded, spill_loaded, "P_N counts alike");
    // In memory the records stay counted (and the filters are added);
    // spilled, their keys (256-byte texts and more) go to the file.
    assert!(mem_frozen >= mem_loaded, "{mem_loaded} -> {mem_frozen}");
    assert!(
        spill_frozen + ROWS as u64 * 256 <= spill_loaded,
        "spilled: {spill_loaded} -> {spill_frozen}"
    );
}
