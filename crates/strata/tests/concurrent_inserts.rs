//! Two transactions insert the same absent key at the same moment: exactly
//! one of them may commit it, under every protocol and for both kinds of
//! primary index (integer keys: skip list + hash; other keys: skip list).
//!
//! The primary index used to report both racing inserts as successful
//! (`SkipMap::get_or_insert_with` runs its closure even when it then loses
//! the race). Both transactions committed; the loser's row was in no index
//! entry, so nobody could read, delete or collect it. Under MVTO, whose
//! readers insert ghost rows for absent keys, this left a row behind in
//! tests/gc_waiting_deletes.rs about once in fifty runs.

use crate::common;
use common::protocols;
use std::sync::atomic::{AtomicU64, Ordering};
use strata::{row, Database, Error, Key, Options, Protocol, Schema, Type, Value};

const ROUNDS: i64 = 3000;

#[test]
fn racing_inserts_of_one_key_commit_once_int_keys() {
    for p in protocols() {
        race(p, Type::Int);
    }
}

#[test]
fn racing_inserts_of_one_key_commit_once_text_keys() {
    for p in protocols() {
        race(p, Type::Text);
    }
}

fn key_value(ty: Type, r: i64) -> Value {
    match ty {
        Type::Int => Value::Int(r),
        Type::Text => Value::from(format!("k{r:06}")),
        // Byte-encoded keys, like text: the same index path.
        Type::Bytes => Value::from(r.to_be_bytes().to_vec()),
        Type::Float => Value::Float(r as f64 / 4.0),
        Type::Bool => panic!("a bool key has two values, not {ROUNDS}"),
    }
}

fn race(p: Protocol, ty: Type) {
    let db = Database::open(Options::default().protocol(p)).unwrap();
    let t = db
        .create_table(
            Schema::new("kv")
                .column("k", ty)
                .column("v", Type::Int)
                .primary_key(&["k"]),
        )
        .unwrap();
    let start = AtomicU64::new(0);
    let wins: Vec<Vec<bool>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2i64)
            .map(|w| {
                let (db, t, start) = (&db, &t, &start);
                s.spawn(move || {
                    let mut won = Vec::with_capacity(ROUNDS as usize);
                    for r in 0..ROUNDS {
                        // A spinning start line, so both look the key up
                        // before either links it.
                        start.fetch_add(1, Ordering::SeqCst);
                        let mut spins = 0u32;
                        while start.load(Ordering::SeqCst) < 2 * (r as u64 + 1) {
                            spins += 1;
                            if spins.is_multiple_of(1024) {
                                std::thread::yield_now();
                            }
                            std::hint::spin_loop();
                        }
                        let res =
                            db.run(|txn| txn.insert(t, vec![key_value(ty, r), Value::Int(w)]));
                        match res {
                            Ok(()) => won.push(true),
                            Err(Error::DuplicateKey { .. }) => won.push(false),
                            Err(e) => panic!("{p} {ty:?}: round {r}: {e}"),
                        }
                    }
                    won
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut ro = db.begin_read_only().unwrap();
    for r in 0..ROUNDS {
        assert!(
            wins[0][r as usize] ^ wins[1][r as usize],
            "{p} {ty:?}: round {r}: winners {} and {}",
            wins[0][r as usize],
            wins[1][r as usize]
        );
        let winner = i64::from(wins[1][r as usize]);
        let got = ro.get(&t, &Key(vec![key_value(ty, r)])).unwrap();
        assert_eq!(
            got,
            Some(row![key_value(ty, r), winner]),
            "{p} {ty:?}: round {r}"
        );
    }
    let visible = ro.scan(&t, ..).unwrap().len() as i64;
    drop(ro);
    assert_eq!(visible, ROUNDS, "{p} {ty:?}");
    db.collect_garbage();
    // No committed row outside the index (the loser's, before the fix).
    assert_eq!(db.stats().rows, ROUNDS as u64, "{p} {ty:?}");
}
