//! Sections 13 and 14 of the shuttle models (`model.rs`, whose helpers
//! they use): a secondary index's scans against its writers.

use super::*;

// ------------ 13. An index scan's skipped re-validation vs an inserter

// `cc/predicate.rs` `validate_scans`, `index::SecScan::additions_at`: a
// logical index scan reads the index's count of added entries before its
// first entry; at commit, with its scan record out (SSN, SSI), an
// unchanged count lets it skip the re-scan of its range. The scanner
// counts the rows of index key 5 and writes the count + 1 into row A; the
// inserter reads A and inserts a row of key 5 holding what it read. Run
// side by side, if both commit the outcome must be serial: the scanner
// first (A = 1, the new row holds 1) or the inserter first (the new row
// holds 0, A = 2). A = 1 with a new row of 0 is the cycle scanner -rw->
// inserter (a phantom) -rw-> scanner. Every serializable protocol keeps
// it out; SSN and SSI take the count read before the walk
// (`Break::AdditionsCountedAfterScan` reads it after:
// `a_count_of_additions_read_after_the_scan_is_caught`). The model runs
// with the range empty and with `pre` rows of key 5 in it already: the
// index is made before any row, so it never holds a stale entry and the
// scan keeps no identity of those rows (`logical::scan_one`); its
// re-scan must excuse them by the rows read and still find the new one.

fn index_phantom_model(p: Protocol, pre: i64) {
    let db = Database::open(options(p, GcPolicy::None, 4)).unwrap();
    let t = db
        .create_table(
            Schema::new("t")
                .column("k", Type::Int)
                .column("g", Type::Int)
                .column("v", Type::Int)
                .primary_key(&["k"]),
        )
        .unwrap();
    let by_g = db.create_index("by_g", &t, &["g"], Unique::No).unwrap();
    db.run(|x| {
        x.insert(&t, row![0, 0, 0])?;
        (0..pre).try_for_each(|k| x.insert(&t, row![10 + k, 5, 0]))
    })
    .unwrap();
    let scanner = {
        let (db, t, by_g) = (db.clone(), t.clone(), by_g.clone());
        thread::spawn(move || {
            let mut x = db.begin().unwrap();
            let n = x.index_count(&by_g, key![5]..=key![5])?;
            x.update(&t, &key![0], &[(2usize, Value::Int(n as i64 + 1))])?;
            x.commit()
        })
    };
    let inserter = {
        let (db, t) = (db.clone(), t.clone());
        thread::spawn(move || {
            let mut y = db.begin().unwrap();
            let a = y.get(&t, &key![0])?.map(|r| r[2].clone()).unwrap();
            y.insert(&t, row![1, 5, a])?;
            y.commit()
        })
    };
    let both = scanner.join().unwrap().is_ok() & inserter.join().unwrap().is_ok();
    if both {
        let (a, new) = db
            .run(|z| {
                let a = z.get(&t, &key![0])?.unwrap()[2].clone();
                let new = z.get(&t, &key![1])?.unwrap()[2].clone();
                Ok((a, new))
            })
            .unwrap();
        assert!(
            !(a == Value::Int(pre + 1) && new == Value::Int(0)),
            "{p:?}: both committed, each missing the other (A = {a:?}, new row {new:?})"
        );
    }
}

/// `model` under each protocol of `ps`, `n` random and `n` PCT schedules
/// each.
fn check_each(ps: impl IntoIterator<Item = Protocol>, n: usize, model: fn(Protocol)) {
    for p in ps {
        shuttle::check_random(move || model(p), n);
        shuttle::check_pct(move || model(p), n, 3);
    }
}

fn index_phantom_models() {
    let ps = || protocols_where(Protocol::is_serializable);
    check_each(ps(), 2000, |p| index_phantom_model(p, 0));
    check_each(ps(), 1000, |p| index_phantom_model(p, 2));
}

#[test]
fn index_scans_keep_phantoms_out_with_or_without_their_re_scan() {
    index_phantom_models();
}

#[test]
fn a_count_of_additions_read_after_the_scan_is_caught() {
    assert!(caught(
        Break::AdditionsCountedAfterScan,
        index_phantom_models
    ));
}

// ------------ 14. A scan that trusts its entries vs a key's move

// `index::logical` `scan_one`, `SecondaryIndex::may_be_stale`: while an
// index has never held a stale entry (only inserts of new rows, nothing
// undone), a scan hands over the row an entry leads to without checking
// the row's key against the entry's. An update that moves a row to
// another key notes that the index may now hold one *before* it adds the
// row's new entry, so a scan that finds the new entry while the old
// version is still the one it sees checks it, and drops it. Row 1 moves
// from key 5 to key 6 while a scanner reads both keys in one snapshot:
// the scans must show the row exactly as the snapshot's read of its
// primary key does, once, under that version's key (`Break::StaleNotedAfterEntry` notes it after the entry:
// `a_key_noted_stale_after_its_entry_is_caught`).

fn key_move_model(p: Protocol) {
    let db = Database::open(options(p, GcPolicy::None, 4)).unwrap();
    let t = db
        .create_table(
            Schema::new("t")
                .column("k", Type::Int)
                .column("g", Type::Int)
                .primary_key(&["k"]),
        )
        .unwrap();
    let by_g = db.create_index("by_g", &t, &["g"], Unique::No).unwrap();
    db.run(|x| x.insert(&t, row![1, 5])).unwrap();
    let mover = {
        let (db, t) = (db.clone(), t.clone());
        thread::spawn(move || db.run(|x| x.update(&t, &key![1], &[(1usize, Value::Int(6))])))
    };
    let scanner = {
        let (db, by_g) = (db.clone(), by_g.clone());
        thread::spawn(move || {
            let mut x = db.begin_read_only().unwrap();
            let mut seen = Vec::new();
            for g in [5, 6] {
                for r in x.index_scan(&by_g, key![g]..=key![g]).unwrap() {
                    seen.push((g, r[1].clone()));
                }
            }
            // The row as this snapshot sees it, read by its primary key.
            (seen, x.get(by_g.table(), &key![1]).unwrap())
        })
    };
    mover.join().unwrap().unwrap();
    // (An MVTO snapshot may lie below the row's insert: then it sees no
    // row at all, which is serializable.)
    let (seen, row) = scanner.join().unwrap();
    let want: Vec<(i64, Value)> = row
        .map(|r| (r[1].as_int().unwrap(), r[1].clone()))
        .into_iter()
        .collect();
    assert_eq!(seen, want, "{p:?}: the row once, under its own key");
}

fn key_move_models() {
    check_each(protocols(), 500, key_move_model);
}

#[test]
fn a_moved_key_shows_its_row_once_under_its_own_key() {
    key_move_models();
}

#[test]
fn a_key_noted_stale_after_its_entry_is_caught() {
    assert!(caught(Break::StaleNotedAfterEntry, key_move_models));
}
