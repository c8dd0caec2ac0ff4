//! The value types beyond `Int` and `Text`: `Bytes`, `Float`, `Bool` and
//! nullable columns. Rows of every type survive every version storage and
//! updates (including to and from `Null`); keys of every key-able type scan
//! in value order, alone and composite; a secondary index on a nullable
//! column puts nulls first; mismatches are typed errors. Durability of every
//! type is in `durability.rs`.

use crate::common;
use common::{configs, protocols, storage_pointer_schemes};
use strata::{key, row, Database, Error, Key, Options, Schema, Table, Type, Unique, Value};

/// `all(k INT, b BYTES, f FLOAT, t BOOL, nb BYTES?, nf FLOAT?, nt BOOL?,
/// ns TEXT?, ni INT?)`.
fn all_types(db: &Database) -> Table {
    db.create_table(
        Schema::new("all")
            .column("k", Type::Int)
            .column("b", Type::Bytes)
            .column("f", Type::Float)
            .column("t", Type::Bool)
            .nullable_column("nb", Type::Bytes)
            .nullable_column("nf", Type::Float)
            .nullable_column("nt", Type::Bool)
            .nullable_column("ns", Type::Text)
            .nullable_column("ni", Type::Int)
            .primary_key(&["k"]),
    )
    .unwrap()
}

/// Row `k`: every column set, the nullable ones null when `k` is odd.
fn all_row(k: i64) -> Vec<Value> {
    let some = k % 2 == 0;
    row![
        k,
        vec![0u8, k as u8, 0xFF],
        k as f64 * -0.5,
        k % 3 == 0,
        some.then(|| vec![k as u8; 3]),
        some.then_some(k as f64 + 0.25),
        some.then_some(true),
        some.then(|| format!("s{k}")),
        some.then_some(k * 10),
    ]
}

#[test]
fn every_type_round_trips_through_every_version_storage() {
    for c in configs().storages().protocols() {
        let db = c.open();
        let t = all_types(&db);
        db.run(|x| (0..6).try_for_each(|k| x.insert(&t, all_row(k))))
            .unwrap();
        // To null, from null, and a -0.0 over a 0.0 (a change in bits, equal
        // as a value: the store keeps what was written).
        db.run(|x| {
            x.update(&t, &key![0], &[("nf", Value::Null), ("nb", Value::Null)])?;
            x.update(&t, &key![1], &[("nt", Value::Bool(false))])?;
            x.update(&t, &key![1], &[("ns", Value::from("late"))])?;
            x.update(&t, &key![0], &[("f", Value::Float(-0.0))])?;
            x.update(&t, &key![2], &[("b", Value::from(b"new\0bytes"))])
        })
        .unwrap();
        let mut ro = db.begin_read_only().unwrap();
        let rows = ro.scan(&t, ..).unwrap();
        let mut want: Vec<Vec<Value>> = (0..6).map(all_row).collect();
        want[0][5] = Value::Null;
        want[0][4] = Value::Null;
        want[1][6] = Value::Bool(false);
        want[1][7] = Value::from("late");
        want[0][2] = Value::Float(-0.0);
        want[2][1] = Value::from(b"new\0bytes");
        assert_eq!(rows, want, "{c}");
        assert_eq!(
            rows[0][2].as_float().unwrap().to_bits(),
            (-0.0f64).to_bits(),
            "{c}: the stored float keeps its sign"
        );
        assert_eq!(rows[3][4], Value::Null, "{c}");
        assert!(rows[3][4].is_null() && rows[2][6].as_bool() == Some(true));
        drop(ro);
        // Old versions still read right after GC moved things around.
        db.collect_garbage();
        let mut ro = db.begin_read_only().unwrap();
        assert_eq!(ro.scan(&t, ..).unwrap(), want, "{c} after GC");
    }
}

#[test]
fn mismatches_are_typed_errors_naming_table_column_and_types() {
    let db = Database::open(Options::default()).unwrap();
    let t = all_types(&db);
    let mut x = db.begin().unwrap();
    let mut bad = all_row(0);
    bad[2] = Value::Int(1);
    match x.insert(&t, bad) {
        Err(e @ Error::TypeMismatch { .. }) => {
            assert_eq!(
                e,
                Error::TypeMismatch {
                    table: "all".into(),
                    column: "f".into(),
                    expected: Type::Float,
                    found: Type::Int
                }
            );
            assert_eq!(
                e.to_string(),
                "type mismatch: column all.f is float, got a value of type int"
            );
        }
        r => panic!("{r:?}"),
    }
    let mut bad = all_row(0);
    bad[1] = Value::Null;
    assert_eq!(
        x.insert(&t, bad),
        Err(Error::NullNotAllowed {
            table: "all".into(),
            column: "b".into()
        })
    );
    assert!(matches!(
        x.update(&t, &key![0], &[("nt", Value::from(1.5))]),
        Err(Error::TypeMismatch {
            expected: Type::Bool,
            found: Type::Float,
            ..
        })
    ));
    assert!(matches!(
        x.update(&t, &key![0], &[("t", Value::Null)]),
        Err(Error::NullNotAllowed { .. })
    ));
    // The transaction is still usable.
    x.insert(&t, all_row(0)).unwrap();
    x.commit().unwrap();

    // A nullable primary-key column is refused when the table is created.
    let r = db.create_table(
        Schema::new("p")
            .nullable_column("k", Type::Int)
            .primary_key(&["k"]),
    );
    assert!(
        matches!(&r, Err(Error::Schema(m)) if m.contains("nullable")),
        "{r:?}"
    );
}

/// One key column of each key-able type: scans return rows in value order,
/// range bounds of that type work, equal floats (`-0.0`/`0.0`, NaNs) are one
/// key.
#[test]
fn keys_of_every_type_scan_in_value_order() {
    let floats = [
        f64::NEG_INFINITY,
        -1e300,
        -1.0,
        -f64::MIN_POSITIVE,
        0.0,
        f64::from_bits(1),
        0.5,
        1.0,
        f64::INFINITY,
        f64::NAN,
    ];
    let bytes: [&[u8]; 7] = [b"", b"\0", b"\0\0", b"a", b"a\0", b"a\x01", b"\xff"];
    let cases: Vec<(Type, Vec<Value>)> = vec![
        (
            Type::Float,
            floats.iter().map(|&f| Value::Float(f)).collect(),
        ),
        (Type::Bytes, bytes.iter().map(|&b| Value::from(b)).collect()),
        (Type::Bool, vec![Value::Bool(false), Value::Bool(true)]),
    ];
    for p in protocols() {
        for (ty, sorted) in &cases {
            let db = Database::open(Options::default().protocol(p)).unwrap();
            let t = db
                .create_table(
                    Schema::new("t")
                        .column("k", *ty)
                        .column("v", Type::Int)
                        .primary_key(&["k"]),
                )
                .unwrap();
            // Inserted in reverse.
            db.run(|x| {
                sorted
                    .iter()
                    .rev()
                    .try_for_each(|k| x.insert(&t, vec![k.clone(), Value::Int(0)]))
            })
            .unwrap();
            let mut x = db.begin().unwrap();
            let got: Vec<Value> = x
                .scan(&t, ..)
                .unwrap()
                .into_iter()
                .map(|r| r[0].clone())
                .collect();
            assert_eq!(&got, sorted, "{p} {ty}");
            // A range strictly inside.
            let (lo, hi) = (
                Key(vec![sorted[1].clone()]),
                Key(vec![sorted[sorted.len() - 1].clone()]),
            );
            assert_eq!(
                x.scan(&t, lo..hi).unwrap().len(),
                sorted.len() - 2,
                "{p} {ty}"
            );
            x.commit().unwrap();
        }
    }
    // -0.0 is the key 0.0, and every NaN is the one NaN key.
    let db = Database::open(Options::default()).unwrap();
    let t = db
        .create_table(
            Schema::new("f")
                .column("k", Type::Float)
                .primary_key(&["k"]),
        )
        .unwrap();
    db.run(|x| {
        x.insert(&t, row![0.0])?;
        x.insert(&t, row![f64::NAN])
    })
    .unwrap();
    let mut x = db.begin().unwrap();
    assert!(matches!(
        x.insert(&t, row![-0.0]),
        Err(Error::DuplicateKey { .. })
    ));
    assert!(matches!(
        x.insert(&t, row![-f64::NAN]),
        Err(Error::DuplicateKey { .. })
    ));
    assert!(x.get(&t, &key![-0.0]).unwrap().is_some());
}

/// A composite key over bytes, float and bool: prefix bounds select the
/// rows that start with the prefix, in order.
#[test]
fn composite_keys_of_new_types_support_prefix_scans() {
    let db = Database::open(Options::default()).unwrap();
    let t = db
        .create_table(
            Schema::new("c")
                .column("b", Type::Bytes)
                .column("f", Type::Float)
                .column("t", Type::Bool)
                .primary_key(&["b", "f", "t"]),
        )
        .unwrap();
    let prefixes: [&[u8]; 3] = [b"a", b"a\0", b"ab"];
    db.run(|x| {
        for b in prefixes {
            for f in [-2.5, 0.0, 3.0] {
                for t2 in [true, false] {
                    x.insert(&t, row![b, f, t2])?;
                }
            }
        }
        Ok(())
    })
    .unwrap();
    let mut x = db.begin().unwrap();
    let all = x.scan(&t, ..).unwrap();
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(all, sorted);
    assert_eq!(all.len(), 18);
    // Prefix (b"a"): only b"a" rows, not b"a\0" or b"ab".
    let a = x.scan(&t, key![b"a"]..=key![b"a"]).unwrap();
    assert_eq!(a.len(), 6);
    assert!(a.iter().all(|r| r[0] == Value::from(b"a")));
    // Prefix (b"a\0", 0.0): two rows, false before true.
    let r = x.scan(&t, key![b"a\0", 0.0]..=key![b"a\0", 0.0]).unwrap();
    assert_eq!(r, vec![row![b"a\0", 0.0, false], row![b"a\0", 0.0, true]]);
    assert_eq!(
        x.get(&t, &key![b"ab", 3.0, true]).unwrap(),
        Some(row![b"ab", 3.0, true])
    );
}

fn keys(rows: Vec<Vec<Value>>) -> Vec<i64> {
    rows.iter().map(|r| r[0].as_int().unwrap()).collect()
}

/// A secondary index on a nullable column: nulls sort first, `index_get`
/// of `Null` finds the null rows, a unique index refuses two equal floats
/// (`-0.0` and `0.0`), and updates to and from null move rows between keys.
#[test]
fn secondary_index_on_a_nullable_column_puts_nulls_first() {
    for s in storage_pointer_schemes() {
        let db =
            Database::open(Options::default().version_storage(s.0).index_pointers(s.1)).unwrap();
        let t = db
            .create_table(
                Schema::new("m")
                    .column("k", Type::Int)
                    .nullable_column("score", Type::Float)
                    .nullable_column("tag", Type::Bytes)
                    .primary_key(&["k"]),
            )
            .unwrap();
        let scores = [Some(2.0), None, Some(-1.0), None, Some(0.5)];
        db.run(|x| {
            for (k, sc) in scores.iter().enumerate() {
                x.insert(&t, row![k as i64, *sc, (k % 2 == 0).then_some(b"x")])?;
            }
            Ok(())
        })
        .unwrap();
        let by_score = db
            .create_index("by_score", &t, &["score"], Unique::No)
            .unwrap();
        let by_tag = db.create_index("by_tag", &t, &["tag"], Unique::No).unwrap();
        let mut x = db.begin().unwrap();
        let r = keys(x.index_scan(&by_score, ..).unwrap());
        assert_eq!(r, vec![1, 3, 2, 4, 0], "{s:?}");
        let r = keys(x.index_get(&by_score, &Key(vec![Value::Null])).unwrap());
        assert_eq!(r, vec![1, 3], "{s:?}");
        let r = keys(x.index_scan(&by_score, key![-5.0]..).unwrap());
        assert_eq!(r, vec![2, 4, 0], "{s:?}");
        let r = keys(x.index_get(&by_tag, &key![b"x"]).unwrap());
        assert_eq!(r, vec![0, 2, 4], "{s:?}");
        x.update(&t, &key![1], &[("score", Value::Float(9.0))])
            .unwrap();
        x.update(&t, &key![0], &[("score", Value::Null)]).unwrap();
        x.commit().unwrap();
        let mut x = db.begin().unwrap();
        let r = keys(x.index_scan(&by_score, ..).unwrap());
        assert_eq!(r, vec![0, 3, 2, 4, 1], "{s:?}");
        x.commit().unwrap();

        let u = db
            .create_table(
                Schema::new("u")
                    .column("k", Type::Int)
                    .column("f", Type::Float)
                    .primary_key(&["k"]),
            )
            .unwrap();
        db.create_index("uf", &u, &["f"], Unique::Yes).unwrap();
        db.run(|x| x.insert(&u, row![1, 0.0])).unwrap();
        let mut x = db.begin().unwrap();
        assert!(
            matches!(x.insert(&u, row![2, -0.0]), Err(Error::DuplicateKey { .. })),
            "{s:?}"
        );
        // An index key of the wrong type is a typed error.
        assert!(matches!(
            x.index_get(&by_score, &key![1]),
            Err(Error::TypeMismatch { .. })
        ));
    }
}

/// A row maps to a struct by position, by hand (the README shows
/// `serde_row`, which does the same through serde).
#[test]
fn a_row_maps_to_a_struct_and_back() {
    #[derive(Debug, PartialEq)]
    struct Reading {
        id: i64,
        sensor: Vec<u8>,
        value: f64,
        ok: bool,
        note: Option<String>,
    }
    impl Reading {
        fn to_row(&self) -> Vec<Value> {
            row![
                self.id,
                self.sensor.clone(),
                self.value,
                self.ok,
                self.note.clone()
            ]
        }
        fn from_row(r: &[Value]) -> Option<Reading> {
            Some(Reading {
                id: r[0].as_int()?,
                sensor: r[1].as_bytes()?.to_vec(),
                value: r[2].as_float()?,
                ok: r[3].as_bool()?,
                note: r[4].as_text().map(str::to_string),
            })
        }
    }
    let db = Database::open(Options::default()).unwrap();
    let t = db
        .create_table(
            Schema::new("readings")
                .column("id", Type::Int)
                .column("sensor", Type::Bytes)
                .column("value", Type::Float)
                .column("ok", Type::Bool)
                .nullable_column("note", Type::Text)
                .primary_key(&["id"]),
        )
        .unwrap();
    let rs = [
        Reading {
            id: 1,
            sensor: vec![1, 2],
            value: 20.5,
            ok: true,
            note: None,
        },
        Reading {
            id: 2,
            sensor: vec![],
            value: -3.0,
            ok: false,
            note: Some("cold".into()),
        },
    ];
    db.run(|x| rs.iter().try_for_each(|r| x.insert(&t, r.to_row())))
        .unwrap();
    let mut ro = db.begin_read_only().unwrap();
    let back: Vec<Reading> = ro
        .scan(&t, ..)
        .unwrap()
        .iter()
        .map(|r| Reading::from_row(r).unwrap())
        .collect();
    assert_eq!(back, rs);
}

/// Byte-string payloads count in the memory statistics like text ones: in
/// the row image (append-only), the master (in-place), and the copy or
/// delta an update leaves behind.
#[test]
fn byte_payloads_count_in_version_bytes() {
    const BIG: usize = 100_000;
    for c in configs().storages().gc(strata::GcPolicy::None) {
        let db = c.open();
        let t = db
            .create_table(
                Schema::new("blob")
                    .column("k", Type::Int)
                    .column("v", Type::Bytes)
                    .primary_key(&["k"]),
            )
            .unwrap();
        let empty = db.stats().version_bytes;
        db.run(|x| x.insert(&t, row![1, vec![7u8; BIG]])).unwrap();
        let one = db.stats().version_bytes;
        assert!(one - empty >= BIG as u64, "{c}: {empty} -> {one}");
        // The big value moves to the old version (or its copy / delta).
        db.run(|x| x.update(&t, &key![1], &[("v", Value::from(b"small"))]))
            .unwrap();
        let two = db.stats().version_bytes;
        assert!(two - empty >= BIG as u64, "{c}: {empty} -> {two}");
        assert!(two - empty < 2 * BIG as u64, "{c}: {empty} -> {two}");
    }
}

/// Nulls are distinct in a unique index (as in SQL): many rows may hold a
/// null key, on insert and when the index is created over them; a non-null
/// key is still unique.
#[test]
fn unique_index_admits_many_nulls() {
    for s in storage_pointer_schemes() {
        let db =
            Database::open(Options::default().version_storage(s.0).index_pointers(s.1)).unwrap();
        let t = db
            .create_table(
                Schema::new("u")
                    .column("k", Type::Int)
                    .nullable_column("email", Type::Text)
                    .nullable_column("region", Type::Int)
                    .primary_key(&["k"]),
            )
            .unwrap();
        db.run(|x| {
            x.insert(&t, row![1, None::<&str>, 1])?;
            x.insert(&t, row![2, None::<&str>, 1])
        })
        .unwrap();
        // Created over two null emails: fine.
        let by_email = db
            .create_index("by_email", &t, &["region", "email"], Unique::Yes)
            .unwrap();
        db.run(|x| {
            x.insert(&t, row![3, None::<&str>, 1])?;
            x.insert(&t, row![4, "a@x", 1])?;
            x.insert(&t, row![5, "a@x", None::<i64>])?;
            x.insert(&t, row![6, "a@x", None::<i64>])
        })
        .unwrap();
        let mut x = db.begin().unwrap();
        assert!(
            matches!(
                x.insert(&t, row![7, "a@x", 1]),
                Err(Error::DuplicateKey { .. })
            ),
            "{s:?}"
        );
        let nulls = x.index_get(&by_email, &key![1, None::<&str>]).unwrap();
        assert_eq!(keys(nulls), vec![1, 2, 3], "{s:?}");
        x.commit().unwrap();
        // A unique index over a non-null duplicate is still refused.
        assert!(matches!(
            db.create_index("by_email_only", &t, &["email"], Unique::Yes),
            Err(Error::DuplicateKey { .. })
        ));
    }
}

/// Columns read by name as Rust types (`Table::value`, `NamedRow::get`):
/// every type converts into its Rust types, nulls into `Option`s, and a
/// value that does not convert (another type, a null into a non-`Option`,
/// an integer out of range, a float beyond `f32`) is an error naming the
/// column, what it holds and the type asked for. Unknown columns and rows
/// of another width are schema errors.
#[test]
fn columns_read_by_name_as_rust_types() {
    let db = Database::open(Options::default()).unwrap();
    let t = all_types(&db);
    let big = 1i64 << 40;
    db.run(|x| {
        x.insert(
            &t,
            row![
                big,
                vec![1u8, 2],
                1e300,
                true,
                Value::Null,
                Value::Null,
                Some(false),
                Some("hi"),
                Value::Null
            ],
        )
    })
    .unwrap();
    let row = db
        .run_read_only(|x| x.get(&t, &key![big]))
        .unwrap()
        .unwrap();
    let r = t.named(row.clone());
    assert_eq!(r.get::<i64>("k").unwrap(), big);
    assert_eq!(r.get::<u64>("k").unwrap(), big as u64);
    assert_eq!(r.get::<usize>(0).unwrap(), big as usize);
    assert_eq!(r.get::<Vec<u8>>("b").unwrap(), vec![1, 2]);
    assert_eq!(r.get::<f64>("f").unwrap(), 1e300);
    assert!(r.get::<bool>("t").unwrap());
    assert_eq!(r.get::<Option<Vec<u8>>>("nb").unwrap(), None);
    assert_eq!(r.get::<Option<bool>>("nt").unwrap(), Some(false));
    assert_eq!(r.get::<Option<String>>("ns").unwrap(), Some("hi".into()));
    assert_eq!(r.get::<Option<i64>>("ni").unwrap(), None);
    assert_eq!(r.values(), &row[..]);
    let mismatch = |e: Error, column: &str, found: &str, wanted: &str| match e {
        Error::ColumnValue {
            table,
            column: c,
            found: f,
            wanted: w,
        } => {
            assert_eq!(
                (table.as_str(), c.as_str(), f, w),
                ("all", column, found, wanted)
            );
            let msg = Error::ColumnValue {
                table,
                column: c,
                found: f,
                wanted: w,
            }
            .to_string();
            assert!(
                msg.contains(column) && msg.contains(found) && msg.contains(wanted),
                "{msg}"
            );
        }
        other => panic!("{other:?}"),
    };
    mismatch(
        r.get::<u32>("k").unwrap_err(),
        "k",
        "an integer out of its range",
        "u32",
    );
    mismatch(
        r.get::<String>("k").unwrap_err(),
        "k",
        "an integer",
        "String",
    );
    mismatch(
        r.get::<f32>("f").unwrap_err(),
        "f",
        "a float out of its range",
        "f32",
    );
    mismatch(r.get::<i64>("ni").unwrap_err(), "ni", "null", "i64");
    mismatch(r.get::<Option<i64>>("ns").unwrap_err(), "ns", "text", "i64");
    assert!(matches!(
        r.get::<i64>("nope"),
        Err(Error::NoSuchColumn { .. })
    ));
    assert!(matches!(
        t.value::<i64>(&row[..3], "k"),
        Err(Error::Schema(_))
    ));
    // The other way: `Option` for a nullable column, `TryFrom` where the
    // Rust type's range exceeds the column's.
    assert_eq!(Value::from(None::<i64>), Value::Null);
    assert_eq!(Value::from(2.5f32), Value::Float(2.5));
    assert_eq!(Value::try_from(7u64).unwrap(), Value::Int(7));
    assert!(matches!(Value::try_from(u64::MAX), Err(Error::Schema(_))));
    assert!(Value::try_from(usize::MAX).is_err());
}
