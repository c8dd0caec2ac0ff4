//! Texts handed from version to version (`Version::alloc_update` lends an
//! unchanged text to the new version instead of counting it again) are
//! dropped exactly once, whatever removes the versions that held them:
//! commits, aborts, a transaction writing a row twice, deletes, pruning
//! from the middle of a chain around long readers (dead zones), tuple-level
//! collectors, teardown. Each text the rows ever held is also held here;
//! after the database is gone and the epoch has run its frees, each must be
//! back to this one handle: more is a leak, fewer (or a crash) a double
//! drop. Every readers' value is checked on the way.

use crate::common;

use common::{configs, eventually, hands_texts_over, reclaims};
use strata::{key, row, Database, Schema, Table, Text, Type, Value};

const ROWS: i64 = 4;

fn table(db: &Database) -> Table {
    db.create_table(
        Schema::new("t")
            .column("k", Type::Int)
            .column("a", Type::Text)
            .column("n", Type::Int)
            .column("b", Type::Text)
            .primary_key(&["k"]),
    )
    .unwrap()
}

/// Row `k` as a reader sees it: (a, n, b).
fn read(x: &mut strata::Transaction, t: &Table, k: i64) -> Option<(String, i64, String)> {
    x.get(t, &key![k]).unwrap().map(|r| {
        (
            r[1].as_text().unwrap().to_owned(),
            r[2].as_int().unwrap(),
            r[3].as_text().unwrap().to_owned(),
        )
    })
}

/// Every text `x` sees is still owned by one of its row's versions (held
/// here, in the test's list, and by a version): a text dropped early (its
/// owner gone without handing it down) is down to the first two.
fn owned(c: &str, x: &mut strata::Transaction, t: &Table) {
    for k in 0..ROWS {
        let Some(row) = x.get(t, &key![k]).unwrap() else {
            continue;
        };
        for v in [&row[1], &row[3]] {
            let Value::Text(s) = v else { unreachable!() };
            assert!(Text::strong_count(s) >= 3, "{c}: {:?}", s.as_str());
        }
    }
}

/// Lets the epoch run deferred frees (other threads' included), until
/// every one of `texts` is back to the test's one handle: however long
/// other tests of this binary hold the epoch back (a text never freed
/// ends the wait at the hang guard, and the caller's check fails).
fn settle(texts: &[Text]) {
    for _ in 0..8 {
        crossbeam_epoch::pin().flush();
    }
    eventually(|| {
        for _ in 0..4 {
            crossbeam_epoch::pin().flush();
        }
        texts.iter().all(|t| Text::strong_count(t) == 1)
    });
}

#[test]
fn every_lent_text_is_dropped_once() {
    for c in configs()
        .storages()
        .gc_policies()
        .with(|o| o.gc_every_commits(1))
        .valid()
    {
        let mut texts: Vec<Text> = Vec::new();
        let mut text = |s: String| {
            let t = Text::new(&s);
            texts.push(t.clone());
            Value::Text(t)
        };
        {
            let db = c.open();
            let t = table(&db);
            let first: Vec<(Value, Value)> = (0..ROWS)
                .map(|k| (text(format!("a{k}")), text(format!("b{k}"))))
                .collect();
            db.run(|x| {
                for (k, (a, b)) in (0..ROWS).zip(&first) {
                    x.insert(&t, row![k, a.clone(), 0, b.clone()])?;
                }
                Ok(())
            })
            .unwrap();
            drop(first);
            let mut long = db.begin_read_only().unwrap();
            for round in 1..=6i64 {
                // Updates that leave the texts alone (lent on each time).
                for k in 0..ROWS {
                    db.run(|x| x.update(&t, &key![k], &[("n", Value::Int(round))]))
                        .unwrap();
                }
                // An abort over a lent row, one that changed a text too.
                let mut x = db.begin().unwrap();
                x.update(&t, &key![0], &[("n", Value::Int(-1))]).unwrap();
                x.update(&t, &key![1], &[("a", text(format!("gone{round}")))])
                    .unwrap();
                x.abort();
                // One transaction writing a row twice (its own version
                // replaced), changing a text in the second write.
                let mut x = db.begin().unwrap();
                x.update(&t, &key![2], &[("n", Value::Int(100 + round))])
                    .unwrap();
                let b = text(format!("b2-{round}"));
                x.update(&t, &key![2], &[("b", b)]).unwrap();
                x.commit().unwrap();
                // A new text, then a delete and a re-insert of row 3.
                if round % 3 == 0 {
                    let a = text(format!("a3-{round}"));
                    db.run(|x| x.update(&t, &key![3], &[("a", a.clone())]))
                        .unwrap();
                    db.run(|x| x.delete(&t, &key![3])).unwrap();
                    let (a, b) = (text(format!("a3+{round}")), text(format!("b3+{round}")));
                    db.run(|x| x.insert(&t, row![3, a.clone(), round, b.clone()]))
                        .unwrap();
                }
                // Long readers pin versions in the middle of the chains.
                if round == 3 {
                    assert_eq!(
                        read(&mut long, &t, 1),
                        Some(("a1".into(), 0, "b1".into())),
                        "{c}"
                    );
                    long.commit().unwrap();
                    long = db.begin_read_only().unwrap();
                }
                db.collect_garbage();
                // Whatever the newest rows hold is still owned by one of
                // their versions: a text dropped early (an owner gone
                // without handing it down) is back to this one handle.
                settle(&[]);
                let mut r = db.begin_read_only().unwrap();
                owned(&c.to_string(), &mut r, &t);
                r.commit().unwrap();
                owned(&c.to_string(), &mut long, &t);
            }
            let mut r = db.begin_read_only().unwrap();
            let newest = [
                ("a0", 6, "b0"),
                ("a1", 6, "b1"),
                ("a2", 106, "b2-6"),
                ("a3+6", 6, "b3+6"),
            ];
            for (k, (a, n, b)) in (0..).zip(newest) {
                let want = Some((a.to_owned(), n, b.to_owned()));
                assert_eq!(read(&mut r, &t, k), want, "{c}: row {k}");
            }
            r.commit().unwrap();
            assert_eq!(
                read(&mut long, &t, 0),
                Some(("a0".into(), 3, "b0".into())),
                "{c}"
            );
            long.commit().unwrap();
            db.collect_garbage();
        }
        settle(&texts);
        for t in &texts {
            assert_eq!(Text::strong_count(t), 1, "{c}: {:?}", t.as_str());
        }
    }
}

/// The same under concurrency: two writers (texts carried, changed,
/// aborted, a row written twice) and a reader holding snapshots open
/// while the collector runs, on the schemes that hand texts over, with
/// every collector. Each text's bytes name its row, so a
/// text freed early and reused reads wrong (or crashes); at the end every
/// text is back to the test's one handle.
#[test]
fn lent_texts_survive_concurrent_writers_readers_and_gc() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Mutex;
    const HOT: i64 = 6;
    const WRITES: i64 = 5_000;
    /// Runs `f` when dropped: however a thread ends (a failed check
    /// unwinds through it), the others learn of it.
    struct OnExit<F: FnMut()>(F);
    impl<F: FnMut()> Drop for OnExit<F> {
        fn drop(&mut self) {
            (self.0)()
        }
    }
    for c in configs()
        .storages_where(hands_texts_over)
        .gc_where(reclaims)
        .with(|o| o.gc_every_commits(4))
        .valid()
    {
        let texts: Mutex<Vec<Text>> = Mutex::new(Vec::new());
        let text = |s: String| {
            let t = Text::new(&s);
            texts.lock().unwrap().push(t.clone());
            Value::Text(t)
        };
        {
            let db = c.open();
            let t = table(&db);
            db.run(|x| {
                for k in 0..HOT {
                    x.insert(&t, row![k, text(format!("a{k}")), 0, text(format!("b{k}"))])?;
                }
                Ok(())
            })
            .unwrap();
            let stop = AtomicBool::new(false);
            let finished = AtomicUsize::new(0);
            std::thread::scope(|s| {
                for w in 0..2i64 {
                    let (db, t, stop, finished, text) = (&db, &t, &stop, &finished, &text);
                    s.spawn(move || {
                        // A bounded run: the reader's snapshots keep every
                        // version since they began (a horizon collector),
                        // so writers left free would grow the chains it
                        // walks faster than it walks them.
                        let _done = OnExit(|| {
                            finished.fetch_add(1, Ordering::Relaxed);
                        });
                        for i in 1..=WRITES {
                            if stop.load(Ordering::Relaxed) {
                                break;
                            }
                            let k = (i * 7 + w) % HOT;
                            let mut x = db.begin().unwrap();
                            let r = x
                                .update(t, &key![k], &[("n", Value::Int(i))])
                                .and_then(|_| {
                                    match i % 5 {
                                        // A changed text, then the row again.
                                        0 => x.update(
                                            t,
                                            &key![k],
                                            &[("b", text(format!("b{k}.{w}.{i}")))],
                                        ),
                                        1 => x.update(t, &key![k], &[("n", Value::Int(-i))]),
                                        _ => Ok(()),
                                    }
                                });
                            match r {
                                Ok(()) if i % 7 == 0 => x.abort(),
                                Ok(()) => {
                                    let _ = x.commit();
                                }
                                Err(_) => x.abort(),
                            }
                        }
                    });
                }
                let (db, t, stop, finished, c) = (&db, &t, &stop, &finished, &c);
                s.spawn(move || {
                    // Until both writers are done; a failed check here
                    // stops them.
                    let _stop = OnExit(|| stop.store(true, Ordering::Relaxed));
                    while finished.load(Ordering::Relaxed) < 2 {
                        let mut r = db.begin_read_only().unwrap();
                        for _ in 0..3 {
                            for k in 0..HOT {
                                // While the snapshot reads it, a text is
                                // owned by a version: the test's handle,
                                // this clone and the owner's.
                                let row = r.get(t, &key![k]).unwrap().unwrap();
                                for v in [&row[1], &row[3]] {
                                    let Value::Text(x) = v else { unreachable!() };
                                    assert!(Text::strong_count(x) >= 3, "{c}: {:?}", x.as_str());
                                }
                                let (a, b) = (row[1].as_text().unwrap(), row[3].as_text().unwrap());
                                assert_eq!(a, format!("a{k}"), "{c}");
                                assert!(
                                    b == format!("b{k}") || b.starts_with(&format!("b{k}.")),
                                    "{c}: row {k} reads {b:?}"
                                );
                            }
                        }
                        r.commit().unwrap();
                    }
                });
            });
            db.collect_garbage();
        }
        let texts = texts.into_inner().unwrap();
        settle(&texts);
        for t in &texts {
            assert_eq!(Text::strong_count(t), 1, "{c}: {:?}", t.as_str());
        }
    }
}
