//! `strata inspect`, `strata export` and `strata import` (issue 43 item
//! 7), end to end through the binary: inspect reports what the directory
//! holds and changes nothing in it; export, import into a fresh database
//! and export again give the same bytes, in both formats, for every value
//! type; a bad line stops an import with its line and column, the batches
//! before it committed; a backup taken while writers run exports whole;
//! a directory that is not a database, is damaged or is open for writing
//! is one line and exit code 2.

use crate::cli::{strata, text, TestDir};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use strata::{
    key, row, Database, Durability, IndexKind, Options, Row, Schema, SyncPolicy, Table, Type,
    Unique, Value,
};

fn wal(d: &Path) -> Options {
    Options::default().durability(Durability::Wal {
        dir: d.to_path_buf(),
        sync: SyncPolicy::GroupCommit,
    })
}

fn path(d: &Path) -> &str {
    d.to_str().expect("a UTF-8 temp path")
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    text(&out.stdout)
}

/// One line on stderr, exit code `code`; nothing on stdout for a usage
/// error (2: refused before any output).
fn one_line_error(out: &Output, code: i32, needles: &[&str]) -> String {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "{n:?} not in: {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    if code == 2 {
        assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    }
    stderr
}

/// Every entry's size, mtime and bytes, and the directory's own mtime.
fn state(d: &Path) -> BTreeMap<String, (u64, SystemTime, Vec<u8>)> {
    std::thread::sleep(Duration::from_millis(30)); // past the mtime granularity
    let mut out = BTreeMap::new();
    let meta = fs::metadata(d).unwrap();
    out.insert(".".into(), (0, meta.modified().unwrap(), Vec::new()));
    for e in fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        let m = fs::metadata(&p).unwrap();
        out.insert(
            p.file_name().unwrap().to_string_lossy().into_owned(),
            (m.len(), m.modified().unwrap(), fs::read(&p).unwrap()),
        );
    }
    out
}

/// Every value type; `note` is nullable text, `blob` nullable bytes.
fn all_types(name: &str) -> Schema {
    Schema::new(name)
        .column("id", Type::Int)
        .column("label", Type::Text)
        .nullable_column("note", Type::Text)
        .nullable_column("blob", Type::Bytes)
        .column("x", Type::Float)
        .nullable_column("n", Type::Int)
        .column("flag", Type::Bool)
        .primary_key(&["id"])
}

/// Rows that stress both formats: commas, quotes, newlines, an empty
/// text where it is not nullable, unicode, extreme integers and floats.
fn tricky_rows() -> Vec<Row> {
    let texts = [
        "plain",
        "a, b, c",
        "she said \"hi\"",
        "two\nlines\r\nand a CR",
        "",
        "ünïcødé ✓ 🦀",
        " leading and trailing ",
        "\\N",
        "null",
    ];
    let floats = [
        0.0,
        -0.0,
        -1.5,
        0.1,
        1e300,
        -2.5e-300,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
    ];
    (0..40i64)
        .map(|i| {
            let label = texts[i as usize % texts.len()];
            let note = (i % 3 != 0).then(|| format!("{label}, note {i}"));
            let blob =
                (i % 4 != 1).then(|| (0..(i as u8 % 5)).map(|b| b * 63).collect::<Vec<u8>>());
            let n = match i % 5 {
                0 => None,
                1 => Some(i64::MIN),
                2 => Some(i64::MAX),
                3 => Some(-i),
                _ => Some(0),
            };
            row![
                i - 20,
                label,
                note,
                blob,
                floats[i as usize % floats.len()],
                n,
                i % 2 == 0
            ]
        })
        .collect()
}

/// A database in `d` with `schema` (and `rows`), closed.
fn make_db(d: &Path, schema: Schema, rows: &[Row]) {
    let db = Database::open(wal(d)).unwrap();
    let t = db.create_table(schema).unwrap();
    db.run(|x| rows.iter().try_for_each(|r| x.insert(&t, r.clone())))
        .unwrap();
}

fn read_rows(d: &Path, table: &str) -> Vec<Row> {
    let db = Database::open_read_only(wal(d)).unwrap();
    let t = db.table(table).unwrap();
    let mut snapshot = db.begin_read_only().unwrap();
    snapshot.scan(&t, ..).unwrap()
}

#[test]
fn export_import_export_gives_the_same_bytes_in_both_formats() {
    let rows = tricky_rows();
    let src = TestDir::new("export-src");
    make_db(&src, all_types("t"), &rows);
    let before = state(&src);
    for (format, null) in [
        ("jsonl", None),
        ("csv", Some("\\N")),
        ("csv", Some("<null>")),
    ] {
        let tag = format!("{format}-{}", null.map_or(0, str::len));
        let mut args = vec!["export", path(&src), "--table", "t", "--format", format];
        if let Some(n) = null {
            args.extend(["--null", n]);
        }
        let first = ok(&strata(&args));
        if format == "jsonl" {
            assert_eq!(first.lines().count(), rows.len());
            // Primary-key order, typed values, column names as keys.
            let v: Vec<serde_json::Value> = first
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            assert_eq!(v[0]["id"], -20);
            assert_eq!(v[39]["id"], 19);
            assert_eq!(v[3]["label"], "two\nlines\r\nand a CR");
            assert_eq!(v[0]["note"], serde_json::Value::Null);
            assert_eq!(v[2]["blob"], "003f");
            assert_eq!(v[6]["x"], "NaN");
            assert_eq!(v[1]["n"], i64::MIN);
            assert_eq!(v[0]["flag"], true);
        } else {
            assert_eq!(
                first.lines().next(),
                Some("id,label,note,blob,x,n,flag"),
                "a header of column names"
            );
        }
        let file = TestDir::new(&format!("export-file-{tag}"));
        fs::write(&*file, &first).unwrap();
        let dst = TestDir::new(&format!("export-dst-{tag}"));
        make_db(&dst, all_types("t"), &[]);
        let mut args = vec![
            "import",
            path(&dst),
            "--table",
            "t",
            "--format",
            format,
            "--in",
            path(&file),
            "--batch",
            "7",
        ];
        if let Some(n) = null {
            args.extend(["--null", n]);
        }
        let out = strata(&args);
        ok(&out);
        assert!(
            text(&out.stderr).contains("imported 40 rows into t"),
            "{}",
            text(&out.stderr)
        );
        assert_eq!(read_rows(&dst, "t"), rows, "{tag}: the rows themselves");
        let mut args = vec!["export", path(&dst), "--table", "t", "--format", format];
        if let Some(n) = null {
            args.extend(["--null", n]);
        }
        assert_eq!(ok(&strata(&args)), first, "{tag}: export again");
        // --out writes the same bytes.
        let out_file = TestDir::new(&format!("export-out-{tag}"));
        args.extend(["--out", path(&out_file)]);
        ok(&strata(&args));
        assert_eq!(fs::read_to_string(&*out_file).unwrap(), first);
    }
    let after = state(&src);
    assert!(before == after, "export changed the source directory");
}

#[test]
fn a_csv_null_that_a_value_would_print_as_is_refused() {
    let d = TestDir::new("export-ambiguous");
    make_db(
        &d,
        all_types("t"),
        &[row![1, "a", "", None::<Vec<u8>>, 0.0, None::<i64>, true]],
    );
    // An empty nullable text would read back as a null: refused.
    let out = strata(&["export", path(&d), "--table", "t", "--format", "csv"]);
    one_line_error(&out, 1, &["key (1)", "note", "--null"]);
    // With another null text it goes, and round-trips.
    let out = ok(&strata(&[
        "export",
        path(&d),
        "--table",
        "t",
        "--format",
        "csv",
        "--null",
        "\\N",
    ]));
    assert_eq!(out.lines().nth(1), Some("1,a,,\\N,0.0,\\N,true"));
    // JSON has its null: --null is a usage error there.
    let out = strata(&["export", path(&d), "--table", "t", "--null", "x"]);
    one_line_error(&out, 2, &["--null"]);
}

/// `import` of `input` into a fresh `t(id int, v int, s text null)`:
/// (the output, the rows committed).
fn import_into_fresh(tag: &str, format: &str, input: &str, extra: &[&str]) -> (Output, usize) {
    let d = TestDir::new(&format!("import-{tag}"));
    make_db(
        &d,
        Schema::new("t")
            .column("id", Type::Int)
            .column("v", Type::Int)
            .nullable_column("s", Type::Text)
            .primary_key(&["id"]),
        &[row![-1, 0, "there before"]],
    );
    let file = TestDir::new(&format!("import-in-{tag}"));
    fs::write(&*file, input).unwrap();
    let mut args = vec![
        "import",
        path(&d),
        "--table",
        "t",
        "--format",
        format,
        "--in",
        path(&file),
    ];
    args.extend(extra);
    let out = strata(&args);
    let n = read_rows(&d, "t").len() - 1;
    (out, n)
}

fn jsonl(n: usize) -> String {
    (0..n)
        .map(|i| format!("{{\"id\":{i},\"v\":{},\"s\":\"r{i}\"}}\n", i * 2))
        .collect()
}

#[test]
fn a_bad_line_stops_an_import_naming_its_line_and_column() {
    let good = jsonl(2500);
    for (tag, bad, needles) in [
        (
            "type",
            r#"{"id":9000,"v":"7","s":null}"#,
            &["line 2501", "column v", "expected an integer"][..],
        ),
        (
            "float",
            r#"{"id":9000,"v":1.5,"s":null}"#,
            &["line 2501", "column v", "1.5"][..],
        ),
        (
            "missing",
            r#"{"id":9000,"s":null}"#,
            &["line 2501", "column v", "missing"][..],
        ),
        (
            "unknown",
            r#"{"id":9000,"v":1,"s":null,"w":2}"#,
            &["line 2501", "column w", "no such column"][..],
        ),
        (
            "null",
            r#"{"id":9000,"v":null,"s":null}"#,
            &["line 2501", "column v", "not nullable"][..],
        ),
        (
            "json",
            r#"{"id":9000,"#,
            &["line 2501", "not a JSON object"][..],
        ),
        (
            "duplicate",
            r#"{"id":5,"v":1,"s":null}"#,
            &["line 2501", "duplicate key", "(5)"][..],
        ),
        (
            "existing",
            r#"{"id":-1,"v":1,"s":null}"#,
            &["line 2501", "duplicate key", "(-1)"][..],
        ),
    ] {
        let input = format!("{good}{bad}\n{}", jsonl(3));
        let (out, committed) = import_into_fresh(tag, "jsonl", &input, &[]);
        let mut all = needles.to_vec();
        all.push("2000 rows were committed before it");
        one_line_error(&out, 1, &all);
        assert_eq!(
            committed, 2000,
            "{tag}: the batches before the bad line, only"
        );
    }
    // --replace puts over the existing keys.
    let input = format!("{good}{{\"id\":5,\"v\":1,\"s\":null}}\n");
    let (out, committed) = import_into_fresh("replace", "jsonl", &input, &["--replace"]);
    ok(&out);
    assert_eq!(committed, 2500);
    // Blank lines are passed over; the line numbers still count them.
    let (out, committed) = import_into_fresh(
        "blank",
        "jsonl",
        "\n{\"id\":1,\"v\":1,\"s\":null}\n\n{\"id\":2,\"v\":\"x\",\"s\":null}\n",
        &["--batch", "1"],
    );
    one_line_error(&out, 1, &["line 4, column v", "1 rows were committed"]);
    assert_eq!(committed, 1);
}

#[test]
fn csv_import_names_lines_of_multi_line_records_and_checks_the_header() {
    // The header may name the columns in any order; a quoted newline
    // makes a record two lines long, and the line numbers follow.
    let input = "s,id,v\n\"a\nb\",1,10\n,2,20\n\"x, y\",3,not a number\n";
    let (out, committed) = import_into_fresh("csv-lines", "csv", input, &["--batch", "1"]);
    one_line_error(
        &out,
        1,
        &[
            "line 5, column v",
            "expected an integer",
            "\"not a number\"",
        ],
    );
    assert_eq!(committed, 2);
    for (tag, input, needles) in [
        (
            "csv-unknown",
            "id,v,s,w\n1,2,,3\n",
            &["line 1, column w", "does not have"][..],
        ),
        (
            "csv-missing",
            "id,s\n1,\n",
            &["line 1, column v", "missing from the header"][..],
        ),
        (
            "csv-twice",
            "id,v,v,s\n",
            &["line 1, column v", "twice"][..],
        ),
        (
            "csv-short",
            "id,v,s\n1,2\n",
            &["line 2", "2 fields, the header has 3"][..],
        ),
        ("csv-empty", "", &["line 1", "no header row"][..]),
    ] {
        let (out, committed) = import_into_fresh(tag, "csv", input, &[]);
        one_line_error(&out, 1, needles);
        assert_eq!(committed, 0, "{tag}");
    }
    // An empty field is a null in the nullable column, and the rows land.
    let (out, committed) = import_into_fresh("csv-null", "csv", "id,v,s\n1,2,\n", &[]);
    ok(&out);
    assert_eq!(committed, 1);
}

#[test]
fn import_needs_a_database_and_a_table() {
    let none = TestDir::new("import-none");
    fs::create_dir_all(&*none).unwrap();
    let out = strata(&["import", path(&none), "--table", "t", "--in", "/dev/null"]);
    one_line_error(&out, 2, &["holds no Strata database"]);
    assert_eq!(
        fs::read_dir(&*none).unwrap().count(),
        0,
        "import made a database"
    );
    let d = TestDir::new("import-no-table");
    make_db(&d, all_types("t"), &[]);
    let before = state(&d);
    let out = strata(&["import", path(&d), "--table", "nope", "--in", "/dev/null"]);
    one_line_error(&out, 2, &["no table named nope", "tables: t"]);
    // Refused before a writable open: the directory is as it was.
    assert!(state(&d) == before, "a refused import changed the database");
    let out = strata(&["import", path(&d), "--table", "t", "--batch", "0"]);
    one_line_error(&out, 2, &["--batch"]);
}

#[test]
fn inspect_reports_tables_indexes_checkpoint_and_log_and_changes_nothing() {
    // A fresh database: one empty log segment, no table, no checkpoint.
    let fresh = TestDir::new("inspect-fresh");
    drop(Database::open(wal(&fresh)).unwrap());
    let before = state(&fresh);
    let v: serde_json::Value =
        serde_json::from_str(&ok(&strata(&["inspect", path(&fresh), "--json"]))).unwrap();
    assert_eq!(v["tables"].as_array().unwrap().len(), 0, "{v}");
    assert_eq!(v["checkpoint"], serde_json::Value::Null);
    assert_eq!(v["log"]["segments"].as_array().unwrap().len(), 1, "{v}");
    assert!(v["recovery"]["torn_tail"].is_null());
    let summary = ok(&strata(&["inspect", path(&fresh)]));
    assert!(
        summary.contains("tables: 0") && summary.contains("checkpoint: none"),
        "{summary}"
    );
    assert!(before == state(&fresh), "inspect changed a fresh database");

    // Tables, indexes of both kinds, a checkpoint and log after it.
    let d = TestDir::new("inspect-full");
    let db = Database::open(wal(&d)).unwrap();
    let t = db.create_table(all_types("items")).unwrap();
    let kv = db
        .create_table(
            Schema::new("kv")
                .column("k", Type::Int)
                .column("v", Type::Text)
                .primary_key(&["k"]),
        )
        .unwrap();
    db.create_index("items_by_label", &t, &["label", "flag"], Unique::No)
        .unwrap();
    db.create_index_as("kv_by_v", &kv, &["v"], Unique::Yes, IndexKind::MvPbt)
        .unwrap();
    let rows = tricky_rows();
    db.run(|x| rows.iter().try_for_each(|r| x.insert(&t, r.clone())))
        .unwrap();
    db.checkpoint().unwrap();
    db.run(|x| (0..7).try_for_each(|i| x.insert(&kv, row![i, format!("v{i}")])))
        .unwrap();
    db.run(|x| x.delete(&t, &key![0])).unwrap();
    drop(db);
    let before = state(&d);
    let v: serde_json::Value =
        serde_json::from_str(&ok(&strata(&["inspect", path(&d), "--json"]))).unwrap();
    let tables = v["tables"].as_array().unwrap();
    let by_name = |n: &str| {
        tables
            .iter()
            .find(|t| t["name"] == n)
            .unwrap_or_else(|| panic!("{n}: {v}"))
    };
    assert_eq!(by_name("items")["rows"], 39);
    assert_eq!(by_name("kv")["rows"], 7);
    assert_eq!(by_name("items")["primary_key"], serde_json::json!(["id"]));
    assert_eq!(
        by_name("items")["columns"][2],
        serde_json::json!({"name": "note", "type": "text", "nullable": true})
    );
    assert_eq!(by_name("items")["columns"][4]["type"], "float");
    let indexes = v["indexes"].as_array().unwrap();
    assert_eq!(indexes.len(), 2, "{v}");
    assert_eq!(
        indexes[0],
        serde_json::json!({"name": "items_by_label", "table": "items", "columns": ["label", "flag"], "unique": false, "kind": "standard"})
    );
    assert_eq!(indexes[1]["kind"], "mvpbt");
    assert_eq!(indexes[1]["unique"], true);
    let c = &v["checkpoint"];
    assert_eq!(c["rows"], 40, "{v}");
    assert!(
        c["lsn"].as_u64().unwrap() > 0 && c["bytes"].as_u64().unwrap() > 0,
        "{v}"
    );
    assert!(c["file"].as_str().unwrap().starts_with("ckpt-"), "{v}");
    let log = &v["log"];
    assert!(
        log["end_lsn"].as_u64().unwrap() > c["lsn"].as_u64().unwrap(),
        "{v}"
    );
    let seg_bytes: u64 = log["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(log["bytes"].as_u64(), Some(seg_bytes));
    assert!(
        v["recovery"]["transactions_replayed"].as_u64().unwrap() >= 2,
        "{v}"
    );
    let summary = ok(&strata(&["inspect", path(&d)]));
    for needle in [
        "items: 39 rows; primary key (id)",
        "note text null",
        "items_by_label on items (label, flag), not unique, standard",
        "kv_by_v on kv (v), unique, mvpbt",
        "checkpoint: ckpt-",
        "no torn tail",
    ] {
        assert!(summary.contains(needle), "{needle:?} not in:\n{summary}");
    }
    assert!(before == state(&d), "inspect changed the database's files");
}

#[test]
fn a_directory_that_is_not_a_readable_database_is_one_line_and_exit_code_two() {
    let none = TestDir::new("inspect-none");
    fs::create_dir_all(&*none).unwrap();
    fs::write(none.join("notes.txt"), "not a database").unwrap();
    let before = state(&none);
    for cmd in [&["inspect"][..], &["export", "--table", "t"][..]] {
        let mut args = cmd.to_vec();
        args.push(path(&none));
        one_line_error(&strata(&args), 2, &["no Strata database"]);
        let missing = none.join("missing");
        args.pop();
        args.push(path(&missing));
        one_line_error(&strata(&args), 2, &["No such file"]);
        assert!(!missing.exists());
    }
    assert!(before == state(&none));
    // A truncated checkpoint: the engine's Error::Corrupt, on one line.
    let d = TestDir::new("inspect-damaged");
    let db = Database::open(wal(&d)).unwrap();
    let t = db.create_table(all_types("t")).unwrap();
    db.run(|x| tricky_rows().into_iter().try_for_each(|r| x.insert(&t, r)))
        .unwrap();
    db.checkpoint().unwrap();
    drop(db);
    let ckpt = fs::read_dir(&*d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "dat"))
        .unwrap();
    let len = fs::metadata(&ckpt).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&ckpt)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    let before = state(&d);
    one_line_error(
        &strata(&["inspect", path(&d)]),
        2,
        &["corrupt database files", "ckpt-"],
    );
    one_line_error(
        &strata(&["export", path(&d), "--table", "t"]),
        2,
        &["corrupt database files"],
    );
    assert!(before == state(&d), "a refused inspect changed the files");
    // A database open for writing (here, in this process) is locked.
    let live = TestDir::new("inspect-live");
    let db = Database::open(wal(&live)).unwrap();
    one_line_error(&strata(&["inspect", path(&live)]), 2, &["locked", "backup"]);
    drop(db);
}

fn accounts(d: &Path) -> (Database, Table) {
    let db = Database::open(wal(d)).unwrap();
    let t = db
        .create_table(
            Schema::new("accounts")
                .column("id", Type::Int)
                .column("balance", Type::Int)
                .column("owner", Type::Text)
                .primary_key(&["id"]),
        )
        .unwrap();
    (db, t)
}

/// Writers move money while the database is backed up; the backup exports
/// whole (the total holds) while they go on, in both formats, and the
/// export imports into a fresh database that exports the same again.
#[test]
fn a_backup_taken_under_writers_exports_and_round_trips_whole() {
    const N: i64 = 30;
    let src = TestDir::new("bank-src");
    let (db, t) = accounts(&src);
    db.run(|x| (0..N).try_for_each(|i| x.insert(&t, row![i, 100, format!("owner, {i}")])))
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let movers: Vec<_> = (0..2i64)
        .map(|w| {
            let (db, t, stop) = (db.clone(), t.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut n = 0i64;
                while !stop.load(SeqCst) {
                    let (a, b) = ((n * 7 + w) % N, (n * 11 + 3 + w) % N);
                    n += 1;
                    if a == b {
                        continue;
                    }
                    db.run(|x| {
                        let va = x.get(&t, &key![a])?.unwrap()[1].as_int().unwrap();
                        let vb = x.get(&t, &key![b])?.unwrap()[1].as_int().unwrap();
                        x.update(&t, &key![a], &[("balance", Value::Int(va - 1))])?;
                        x.update(&t, &key![b], &[("balance", Value::Int(vb + 1))])
                    })
                    .unwrap();
                }
                n
            })
        })
        .collect();
    while db.counters().commits < 100 {
        std::thread::yield_now();
    }
    let backup = TestDir::new("bank-backup");
    db.backup(&*backup).unwrap();
    // The live database is locked; its backup is not, and the writers go on.
    one_line_error(
        &strata(&["export", path(&src), "--table", "accounts"]),
        2,
        &["locked"],
    );
    for format in ["jsonl", "csv"] {
        let exported = ok(&strata(&[
            "export",
            path(&backup),
            "--table",
            "accounts",
            "--format",
            format,
        ]));
        let balances: Vec<i64> = match format {
            "jsonl" => exported
                .lines()
                .map(|l| {
                    serde_json::from_str::<serde_json::Value>(l).unwrap()["balance"]
                        .as_i64()
                        .unwrap()
                })
                .collect(),
            _ => csv::Reader::from_reader(exported.as_bytes())
                .records()
                .map(|r| r.unwrap()[1].parse().unwrap())
                .collect(),
        };
        assert_eq!(balances.len(), N as usize);
        assert_eq!(
            balances.iter().sum::<i64>(),
            N * 100,
            "{format}: a partial transfer"
        );
        let dst = TestDir::new(&format!("bank-dst-{format}"));
        drop(accounts(&dst));
        let file = TestDir::new(&format!("bank-file-{format}"));
        fs::write(&*file, &exported).unwrap();
        ok(&strata(&[
            "import",
            path(&dst),
            "--table",
            "accounts",
            "--format",
            format,
            "--in",
            path(&file),
        ]));
        let again = ok(&strata(&[
            "export",
            path(&dst),
            "--table",
            "accounts",
            "--format",
            format,
        ]));
        assert_eq!(again, exported, "{format}");
    }
    stop.store(true, SeqCst);
    let moved: i64 = movers.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(moved > 0);
}

/// `export --with-schema`, `import --create` into a directory that does
/// not exist (nor does its parent), `export --with-schema` again: the same
/// bytes, in both formats, for every value type; the schema line is the
/// table's columns as `strata inspect` prints them.
#[test]
fn export_with_schema_import_create_export_gives_the_same_bytes() {
    let rows = tricky_rows();
    let src = TestDir::new("create-src");
    make_db(&src, all_types("t"), &rows);
    let columns =
        "id int, label text, note text null, blob bytes null, x float, n int null, flag bool";
    for (format, null) in [("jsonl", None), ("csv", Some("\\N"))] {
        let export = |dir: &Path| {
            let mut args = vec!["export", path(dir), "--table", "t", "--format", format];
            args.push("--with-schema");
            if let Some(n) = null {
                args.extend(["--null", n]);
            }
            ok(&strata(&args))
        };
        let first = export(&src);
        let schema_line = first.lines().next().unwrap();
        match format {
            "jsonl" => assert_eq!(schema_line, format!("{{\"strata-schema\":\"{columns}\"}}")),
            _ => {
                assert_eq!(schema_line, format!("#strata-schema: {columns}"));
                assert_eq!(first.lines().nth(1), Some("id,label,note,blob,x,n,flag"));
            }
        }
        let file = TestDir::new(&format!("create-file-{format}"));
        fs::write(&*file, &first).unwrap();
        let root = TestDir::new(&format!("create-dst-{format}"));
        let dst = root.join("nested").join("db");
        let mut args = vec!["import", path(&dst), "--create", "--key", "id"];
        args.extend(["--table", "t", "--format", format, "--in", path(&file)]);
        args.extend(["--batch", "7"]);
        if let Some(n) = null {
            args.extend(["--null", n]);
        }
        let out = strata(&args);
        ok(&out);
        assert!(
            text(&out.stderr)
                .contains("imported 40 rows into t (created the database and the table)"),
            "{}",
            text(&out.stderr)
        );
        assert_eq!(read_rows(&dst, "t"), rows, "{format}: the rows themselves");
        assert_eq!(export(&dst), first, "{format}: export again");
        // The line is read by a plain import too, into the table it fits.
        let again = TestDir::new(&format!("create-again-{format}"));
        make_db(&again, all_types("t"), &[]);
        let mut args = vec!["import", path(&again), "--table", "t", "--format", format];
        args.extend(["--in", path(&file)]);
        if let Some(n) = null {
            args.extend(["--null", n]);
        }
        ok(&strata(&args));
        assert_eq!(export(&again), first, "{format}: a plain import of it");
    }
}

/// Every way `import --create` can be refused before it writes: exit code
/// 2, one line naming the cause, and nothing on disk changed (no new
/// directory; an empty one stays empty; a database keeps its files and
/// tables).
#[test]
fn import_create_refuses_what_does_not_fit_and_changes_nothing() {
    let rows = "{\"id\":1,\"v\":2,\"s\":\"a\"}\n{\"id\":2,\"v\":3,\"s\":null}\n";
    let line = "{\"strata-schema\":\"id int, v int, s text null\"}\n";
    let bad_type = format!("{line}{rows}{{\"id\":3,\"v\":\"x\",\"s\":null}}\n");
    let twice = format!("{line}{rows}{{\"id\":1,\"v\":9,\"s\":null}}\n");
    let cases: Vec<(&str, String, Vec<&str>, Vec<&str>)> = vec![
        ("no-key", format!("{line}{rows}"), vec![], vec!["--key"]),
        (
            "no-columns",
            rows.to_string(),
            vec!["--key", "id"],
            vec!["columns", "--with-schema", "--schema"],
        ),
        (
            "bad-type",
            bad_type.clone(),
            vec!["--key", "id"],
            vec![
                "line 4",
                "column v",
                "expected an integer",
                "nothing was imported",
            ],
        ),
        (
            "twice",
            twice,
            vec!["--key", "id"],
            vec!["line 4", "key (1)", "line 2", "--replace"],
        ),
        (
            "no-such-key",
            format!("{line}{rows}"),
            vec!["--key", "nope"],
            vec!["nope"],
        ),
        (
            "nullable-key",
            format!("{line}{rows}"),
            vec!["--key", "s"],
            vec!["nullable"],
        ),
        (
            "bad-schema",
            rows.to_string(),
            vec!["--key", "id", "--schema", "id integer"],
            vec!["--schema", "unknown type integer"],
        ),
        (
            "schemas-differ",
            format!("{line}{rows}"),
            vec!["--key", "id", "--schema", "id int, v int, s text"],
            vec![
                "--schema (id int, v int, s text)",
                "schema line (id int, v int, s text null)",
                "differ",
            ],
        ),
        (
            "bad-line",
            format!("{{\"strata-schema\":\"id whatever\"}}\n{rows}"),
            vec!["--key", "id"],
            vec!["line 1", "schema line"],
        ),
    ];
    for (tag, input, flags, needles) in &cases {
        let file = TestDir::new(&format!("create-bad-in-{tag}"));
        fs::write(&*file, input).unwrap();
        // A directory that does not exist: still does not.
        let root = TestDir::new(&format!("create-bad-{tag}"));
        let dst = root.join("db");
        one_line_error(
            &import_create(
                path(&dst),
                &file,
                &[&["--table", "t"][..], &flags[..]].concat(),
            ),
            2,
            needles,
        );
        assert!(!root.exists(), "{tag}: {} was made", root.display());
        // An empty directory: stays empty.
        let empty = TestDir::new(&format!("create-empty-{tag}"));
        fs::create_dir_all(&*empty).unwrap();
        one_line_error(
            &import_create(
                path(&empty),
                &file,
                &[&["--table", "t"][..], &flags[..]].concat(),
            ),
            2,
            needles,
        );
        assert_eq!(
            fs::read_dir(&*empty).unwrap().count(),
            0,
            "{tag}: files left"
        );
    }
    // A database without the table: the same refusals leave it as it was.
    let d = TestDir::new("create-bad-db");
    make_db(&d, all_types("other"), &[]);
    let before = state(&d);
    let file = TestDir::new("create-bad-db-in");
    fs::write(&*file, &bad_type).unwrap();
    let out = import_create(path(&d), &file, &["--key", "id", "--table", "t"]);
    one_line_error(&out, 2, &["line 4", "column v"]);
    assert!(
        state(&d) == before,
        "a refused --create changed the database"
    );
    // An existing table: the input's columns and --key must fit it.
    let e = TestDir::new("create-existing");
    make_db(
        &e,
        Schema::new("t")
            .column("id", Type::Int)
            .column("v", Type::Int)
            .nullable_column("s", Type::Text)
            .primary_key(&["id"]),
        &[row![0, 0, "there before"]],
    );
    fs::write(
        &*file,
        format!("{{\"strata-schema\":\"id int, v float, s text null\"}}\n{rows}"),
    )
    .unwrap();
    let out = import_create(path(&e), &file, &["--table", "t"]);
    one_line_error(&out, 2, &["v float", "does not fit table t", "v int"]);
    fs::write(&*file, format!("{line}{rows}")).unwrap();
    let out = import_create(path(&e), &file, &["--key", "v", "--table", "t"]);
    one_line_error(&out, 2, &["--key v", "primary key", "(id)"]);
    // ... and with both fitting it imports into it.
    let out = import_create(path(&e), &file, &["--key", "id", "--table", "t"]);
    ok(&out);
    assert!(
        text(&out.stderr).contains("imported 2 rows into t"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(read_rows(&e, "t").len(), 3);
    // A plain import checks the schema line too; --key needs --create; a
    // directory of other files is no place for a new database.
    fs::write(&*file, format!("{{\"strata-schema\":\"id int\"}}\n{rows}")).unwrap();
    let out = strata(&["import", path(&e), "--table", "t", "--in", path(&file)]);
    one_line_error(&out, 2, &["does not fit table t"]);
    let out = strata(&[
        "import",
        path(&e),
        "--key",
        "id",
        "--table",
        "t",
        "--in",
        path(&file),
    ]);
    one_line_error(&out, 2, &["--create"]);
    let other = TestDir::new("create-other-files");
    fs::create_dir_all(&*other).unwrap();
    fs::write(other.join("notes.txt"), "mine").unwrap();
    fs::write(&*file, format!("{line}{rows}")).unwrap();
    let out = import_create(path(&other), &file, &["--key", "id", "--table", "t"]);
    one_line_error(&out, 2, &["holds files but no Strata database"]);
    assert_eq!(fs::read_dir(&*other).unwrap().count(), 1);
}

/// `strata import DIR --create --in FILE` with `flags`.
fn import_create(dir: &str, file: &Path, flags: &[&str]) -> std::process::Output {
    let mut args = vec!["import", dir, "--create", "--in", path(file)];
    args.extend_from_slice(flags);
    strata(&args)
}
