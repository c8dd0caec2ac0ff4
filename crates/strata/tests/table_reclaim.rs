//! A dropped (or altered) table's memory comes back while the database
//! runs (issue 43, item 11; `gc::dropped`): at once when no transaction is
//! open, else at the first collection after the last transaction open at
//! the drop has ended, or when the last handle to it goes. The rows hold a
//! `Text` the test keeps too: back to the test's one handle means every
//! version that held it was freed.

use crate::common;
use common::{configs, eventually};
use std::path::PathBuf;
use strata::{
    key, row, Database, Durability, Error, GcPolicy, Options, Schema, SyncPolicy, Table, Text,
    Type, Unique, Value,
};

fn table(db: &Database, name: &str) -> Table {
    db.create_table(
        Schema::new(name)
            .column("k", Type::Int)
            .column("s", Type::Text)
            .column("n", Type::Int)
            .primary_key(&["k"]),
    )
    .unwrap()
}

/// `rows` rows holding `text`, each updated `updates` times (versions in
/// chains and, where GC has not run, entries in its queues).
fn fill(db: &Database, t: &Table, text: &Text, rows: i64, updates: i64) {
    db.run(|x| {
        for k in 0..rows {
            x.insert(t, row![k, Value::Text(text.clone()), 0])?;
        }
        Ok(())
    })
    .unwrap();
    for u in 1..=updates {
        db.run(|x| {
            for k in 0..rows {
                x.update(t, &key![k], &[("n", Value::Int(u))])?;
            }
            Ok(())
        })
        .unwrap();
    }
}

/// Lets the epoch run the deferred frees, until `text` is back to the
/// test's one handle (a leak ends the wait at the hang guard, failing).
fn freed(text: &Text) {
    eventually(|| {
        for _ in 0..4 {
            crossbeam_epoch::pin().flush();
        }
        Text::strong_count(text) == 1
    });
}

/// Whether rows still hold `text` after the epoch had every chance to run
/// the frees already deferred.
fn held(text: &Text) -> bool {
    for _ in 0..16 {
        crossbeam_epoch::pin().flush();
    }
    Text::strong_count(text) > 1
}

fn waiting_and_reclaimed(db: &Database) -> (u64, u64) {
    let st = db.stats();
    (st.dropped_tables_waiting, st.tables_reclaimed)
}

/// Every storage scheme and collector, with a secondary index: nothing
/// open, so the drop itself frees the table. The collector's queue still
/// held entries of it (no pass had run): the pass after the drop must not
/// find them (a debug assertion in the transaction-level pass; the other
/// collectors queue rows, not versions).
#[test]
fn with_nothing_open_the_drop_frees_the_table_under_every_scheme_and_collector() {
    for c in configs()
        .storages()
        .gc_policies()
        .with(|o| o.gc_interval(None).gc_every_commits(u32::MAX))
        .valid()
    {
        let db = Database::open(c.opts.clone()).unwrap();
        let t = table(&db, "t");
        db.create_index("t_n", &t, &["n"], Unique::No).unwrap();
        let kept = table(&db, "kept");
        let text = Text::new("held by every version of t");
        fill(&db, &t, &text, 40, 3);
        fill(&db, &kept, &Text::new("other"), 5, 1);
        assert!(held(&text), "{c}");
        drop(t);
        db.drop_table("t").unwrap();
        assert_eq!(waiting_and_reclaimed(&db), (0, 1), "{c}");
        freed(&text);
        db.collect_garbage();
        // The database goes on: the other table, and the name again.
        db.run(|x| x.update(&kept, &key![0], &[("n", Value::Int(9))]))
            .unwrap();
        let again = table(&db, "t");
        fill(&db, &again, &text, 3, 1);
        db.collect_garbage();
        let mut r = db.begin_read_only().unwrap();
        assert_eq!(r.scan(&again, ..).unwrap().len(), 3, "{c}");
        assert_eq!(r.get(&kept, &key![0]).unwrap().unwrap()[2], Value::Int(9));
    }
}

/// A transaction open at the drop (it read the table) holds the memory
/// until it ends, under every collector; the next collection then frees
/// it (`GcPolicy::None` included: the explicit one).
#[test]
fn a_transaction_open_at_the_drop_holds_the_table_until_it_ends() {
    for c in configs()
        .gc_policies()
        .with(|o| o.gc_interval(None).gc_every_commits(u32::MAX))
        .valid()
    {
        let db = Database::open(c.opts.clone()).unwrap();
        let t = table(&db, "t");
        let text = Text::new("held");
        fill(&db, &t, &text, 20, 2);
        let mut x = db.begin().unwrap();
        assert!(x.get(&t, &key![1]).unwrap().is_some());
        drop(t);
        db.drop_table("t").unwrap();
        db.collect_garbage();
        assert_eq!(waiting_and_reclaimed(&db), (1, 0), "{c}");
        assert!(held(&text), "{c}: freed under an open transaction");
        let _ = x.commit();
        db.collect_garbage();
        assert_eq!(waiting_and_reclaimed(&db), (0, 1), "{c}");
        freed(&text);
    }
}

/// Without an explicit collection: the collector's own passes (every few
/// commits of any table) reclaim it.
#[test]
fn commits_to_other_tables_reclaim_it_without_an_explicit_collection() {
    let db = Database::open(Options::default().gc_interval(None).gc_every_commits(1)).unwrap();
    let t = table(&db, "t");
    let other = table(&db, "other");
    let text = Text::new("held");
    fill(&db, &t, &text, 20, 1);
    let mut x = db.begin().unwrap();
    x.get(&t, &key![1]).unwrap();
    drop(t);
    db.drop_table("t").unwrap();
    x.abort();
    assert_eq!(waiting_and_reclaimed(&db), (1, 0));
    db.run(|x| x.insert(&other, row![1, "a", 1])).unwrap();
    assert_eq!(waiting_and_reclaimed(&db), (0, 1));
    freed(&text);
}

/// A handle kept past the drop keeps the table's memory (as any `Arc`
/// would), refuses every operation, and lets it go when dropped.
#[test]
fn a_handle_kept_past_the_drop_holds_the_memory_until_it_is_dropped() {
    let db = Database::open(Options::default()).unwrap();
    let t = table(&db, "t");
    let idx = db.create_index("t_n", &t, &["n"], Unique::No).unwrap();
    let text = Text::new("held");
    fill(&db, &t, &text, 20, 1);
    db.drop_table("t").unwrap();
    db.collect_garbage();
    assert_eq!(waiting_and_reclaimed(&db), (1, 0));
    assert!(held(&text));
    let mut x = db.begin().unwrap();
    assert!(matches!(
        x.get(&t, &key![1]),
        Err(Error::TableDropped { .. })
    ));
    drop(x);
    drop(t);
    db.collect_garbage();
    // The index handle holds the table too.
    assert_eq!(waiting_and_reclaimed(&db), (1, 0));
    drop(idx);
    db.collect_garbage();
    assert_eq!(waiting_and_reclaimed(&db), (0, 1));
    freed(&text);
}

/// Under a memory limit: a table filled to the limit and dropped gives
/// the room back to the next table.
#[test]
fn a_dropped_tables_bytes_go_back_to_the_memory_limit() {
    let limit = 4 << 20;
    let db = Database::open(Options::default().memory_limit(limit)).unwrap();
    let fill_until_full = |name: &str| {
        let t = table(&db, name);
        let mut rows = 0i64;
        loop {
            let r = db.run(|x| {
                for k in rows..rows + 500 {
                    x.insert(&t, row![k, "x", k])?;
                }
                Ok(())
            });
            match r {
                Ok(()) => rows += 500,
                Err(Error::MemoryLimit { .. }) => return rows,
                Err(e) => panic!("{e}"),
            }
        }
    };
    let first = fill_until_full("a");
    assert!(first > 0);
    let full = db.stats().memory_in_use;
    db.drop_table("a").unwrap();
    let after = db.stats().memory_in_use;
    assert!(
        after < full / 20,
        "{after} bytes still counted of {full} after the drop"
    );
    let second = fill_until_full("b");
    assert!(
        second >= first * 9 / 10,
        "the second table took {second} rows, the first {first}"
    );
}

/// An altered table is a dropped one for its memory: the table it
/// replaced goes.
#[test]
fn alter_table_frees_the_table_it_replaced() {
    let db = Database::open(Options::default()).unwrap();
    let t = table(&db, "t");
    fill(&db, &t, &Text::new("s"), 10, 2);
    drop(t);
    let t = db
        .alter_table(
            "t",
            strata::Alter::AddColumn {
                name: "extra".into(),
                ty: Type::Int,
            },
        )
        .unwrap();
    assert_eq!(waiting_and_reclaimed(&db), (0, 1));
    let mut r = db.begin_read_only().unwrap();
    assert_eq!(r.scan(&t, ..).unwrap().len(), 10);
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("strata-reclaim-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// With the log: a reclaimed table's place in the catalog (its id) is
/// kept by the tombstone, so a checkpoint after the drop and the log's
/// records after it reopen to the same tables, twice.
#[test]
fn a_reclaimed_table_reopens_as_dropped_through_a_checkpoint() {
    let d = dir("checkpoint");
    let opts = || {
        Options::default().durability(Durability::Wal {
            dir: d.clone(),
            sync: SyncPolicy::GroupCommit,
        })
    };
    {
        let db = Database::open(opts()).unwrap();
        let gone = table(&db, "gone");
        let kept = table(&db, "kept");
        fill(&db, &gone, &Text::new("g"), 10, 1);
        fill(&db, &kept, &Text::new("k"), 10, 1);
        drop(gone);
        db.drop_table("gone").unwrap();
        assert_eq!(waiting_and_reclaimed(&db), (0, 1));
        db.checkpoint().unwrap();
        let third = table(&db, "third");
        db.run(|x| x.insert(&third, row![1, "t", 1])).unwrap();
    }
    for _ in 0..2 {
        let db = Database::open(opts()).unwrap();
        assert!(matches!(db.table("gone"), Err(Error::NoSuchTable { .. })));
        assert_eq!(db.table_names(), ["kept", "third"]);
        let mut r = db.begin_read_only().unwrap();
        assert_eq!(r.scan(&db.table("kept").unwrap(), ..).unwrap().len(), 10);
        assert_eq!(r.scan(&db.table("third").unwrap(), ..).unwrap().len(), 1);
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `GcPolicy::None` frees nothing of a running table, but a drop with
/// nothing open frees the whole table at once.
#[test]
fn gc_none_frees_a_dropped_table_too() {
    let db = Database::open(Options::default().gc(GcPolicy::None)).unwrap();
    let t = table(&db, "t");
    let text = Text::new("held");
    fill(&db, &t, &text, 10, 3);
    drop(t);
    db.drop_table("t").unwrap();
    freed(&text);
}
