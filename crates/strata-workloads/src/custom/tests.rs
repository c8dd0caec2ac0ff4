use std::path::Path;
use std::time::Duration;

use super::exec::{Draws, Mix};
use super::spec::{ColumnType, KeyDist, OpKind};
use super::*;
use crate::rng::Rng;

/// Every feature of the format once; `BANK_JSON` says the same. The error
/// cases below change one line and expect these line numbers.
const BANK_TOML: &str = r#"name = "bank"

[[table]]
name = "account"
rows = 1000
columns = [
  { name = "balance", type = "int", distinct = 500 },
  { name = "note", type = "text" },
]
indexes = [ { name = "by_balance", columns = ["balance"] } ]

[[table]]
name = "history"
rows = 1
columns = [ { name = "amount", type = "float" } ]

[[transaction]]
name = "transfer"
share = 3
ops = [
  { op = "read", table = "account", keys = "zipf:0.9", count = 2 },
  { op = "update", table = "account", keys = "hotspot:0.1:0.9", columns = ["balance"] },
  { op = "insert", table = "history" },
]

[[transaction]]
name = "audit"
read_only = true
ops = [
  { op = "scan", table = "account", keys = "uniform", length = 5 },
  { op = "index_scan", index = "by_balance" },
  { op = "read", table = "history", keys = "latest", columns = ["amount"] },
]

[[transaction]]
name = "close"
share = 0.5
ops = [ { op = "delete", table = "account" }, { op = "update", table = "history" } ]
"#;

const BANK_JSON: &str = r#"{
  "name": "bank",
  "table": [
    {
      "name": "account",
      "rows": 1000,
      "columns": [
        { "name": "balance", "type": "int", "distinct": 500 },
        { "name": "note", "type": "text" }
      ],
      "indexes": [ { "name": "by_balance", "columns": ["balance"] } ]
    },
    {
      "name": "history",
      "rows": 1,
      "columns": [ { "name": "amount", "type": "float" } ]
    }
  ],
  "transaction": [
    {
      "name": "transfer",
      "share": 3,
      "ops": [
        { "op": "read", "table": "account", "keys": "zipf:0.9", "count": 2 },
        { "op": "update", "table": "account", "keys": "hotspot:0.1:0.9", "columns": ["balance"] },
        { "op": "insert", "table": "history" }
      ]
    },
    {
      "name": "audit",
      "read_only": true,
      "ops": [
        { "op": "scan", "table": "account", "keys": "uniform", "length": 5 },
        { "op": "index_scan", "index": "by_balance" },
        { "op": "read", "table": "history", "keys": "latest", "columns": ["amount"] }
      ]
    },
    {
      "name": "close",
      "share": 0.5,
      "ops": [ { "op": "delete", "table": "account" }, { "op": "update", "table": "history" } ]
    }
  ]
}
"#;

fn toml(text: &str) -> Result<CustomWorkload, WorkloadError> {
    CustomWorkload::parse(text, Format::Toml, "bank.toml")
}

fn json(text: &str) -> Result<CustomWorkload, WorkloadError> {
    CustomWorkload::parse(text, Format::Json, "bank.json")
}

#[test]
fn toml_and_json_say_the_same_with_defaults_applied() {
    let t = toml(BANK_TOML).unwrap();
    let j = json(BANK_JSON).unwrap();
    assert_eq!(t, j);
    assert_eq!(t.name(), "bank");
    assert_eq!(t.rows(), 1001);
    assert!(t.has_secondary_indexes());
    assert!(!t.is_read_only());
    assert_eq!(t.transaction_names(), ["transfer", "audit", "close"]);
    assert_eq!(t.table_names().collect::<Vec<_>>(), ["account", "history"]);

    let account = &t.tables[0];
    assert_eq!(account.columns[0].ty, ColumnType::Int);
    assert_eq!(account.columns[0].distinct, 500);
    assert_eq!(
        account.columns[1].bytes,
        spec::DEFAULT_BYTES,
        "text default"
    );
    assert_eq!(t.indexes[0].first, 1, "by_balance starts at row position 1");

    let [transfer, audit, close] = &t.types[..] else {
        panic!("three types");
    };
    assert_eq!((transfer.share, audit.share, close.share), (3.0, 1.0, 0.5));
    assert!(!transfer.read_only && audit.read_only && !close.read_only);
    assert_eq!(transfer.ops[0].keys, KeyDist::Zipf(0.9));
    assert_eq!(transfer.ops[0].count, 2);
    assert_eq!(transfer.ops[0].columns, Vec::<usize>::new(), "whole row");
    assert_eq!(transfer.ops[1].columns, [1], "balance only");
    assert_eq!(
        transfer.ops[1].keys,
        KeyDist::Hotspot {
            fraction: 0.1,
            probability: 0.9
        }
    );
    assert_eq!(transfer.ops[2].kind, OpKind::Insert);
    assert_eq!(transfer.ops[2].table, 1);
    assert_eq!(audit.ops[0].length, 5);
    assert_eq!(audit.ops[1].length, spec::DEFAULT_LENGTH, "length default");
    assert_eq!(audit.ops[1].index, Some(0));
    assert_eq!(audit.ops[1].table, 0, "the index's table");
    assert_eq!(audit.ops[2].keys, KeyDist::Latest);
    assert_eq!(close.ops[0].keys, KeyDist::Uniform, "keys default");
    assert_eq!(close.ops[0].count, 1, "count default");
    assert_eq!(
        close.ops[1].columns,
        [1],
        "update default: every non-key column"
    );

    // Without `name`: the file's stem.
    let unnamed = BANK_TOML.replacen("name = \"bank\"\n", "", 1);
    let w = CustomWorkload::parse(&unnamed, Format::Toml, "dir/my-mix.toml").unwrap();
    assert_eq!(w.name(), "my-mix");
}

/// One mistake, in each format: what to change, and the line (1-based)
/// the error must name.
struct Case {
    what: &'static str,
    toml: (&'static str, &'static str, usize),
    json: (&'static str, &'static str, usize),
    /// A fragment of the message.
    says: &'static str,
}

const CASES: &[Case] = &[
    Case {
        what: "syntax",
        toml: ("rows = 1000", "rows = ", 5),
        json: ("\"rows\": 1000,", "\"rows\": 1000", 7),
        says: "",
    },
    Case {
        what: "wrong type",
        toml: ("rows = 1000", "rows = \"many\"", 5),
        json: ("\"rows\": 1000", "\"rows\": \"many\"", 6),
        says: "u64",
    },
    Case {
        what: "unknown field",
        toml: (
            "name = \"audit\"\n",
            "name = \"audit\"\nreadonly = true\n",
            28,
        ),
        json: (
            "\"name\": \"audit\",",
            "\"name\": \"audit\", \"readonly\": true,",
            30,
        ),
        says: "unknown field `readonly`",
    },
    Case {
        // JSON: serde_json stops at the closing brace; the object's
        // opening line is reported.
        what: "missing field",
        toml: ("name = \"history\"\n", "", 12),
        json: ("\"name\": \"history\",\n", "", 13),
        says: "missing field `name`",
    },
    Case {
        what: "missing op kind",
        toml: (
            "{ op = \"delete\", table = \"account\" }",
            "{ table = \"account\" }",
            38,
        ),
        json: (
            "{ \"op\": \"delete\", \"table\": \"account\" }",
            "{ \"table\": \"account\" }",
            41,
        ),
        says: "missing field `op`",
    },
    Case {
        what: "unknown op kind",
        toml: ("op = \"insert\"", "op = \"upsert\"", 23),
        json: ("\"op\": \"insert\"", "\"op\": \"upsert\"", 26),
        says: "unknown variant `upsert`",
    },
    Case {
        what: "unknown column type",
        toml: ("type = \"float\"", "type = \"double\"", 15),
        json: ("\"type\": \"float\"", "\"type\": \"double\"", 16),
        says: "unknown variant `double`",
    },
    Case {
        what: "negative share",
        toml: ("share = 3", "share = -3", 19),
        json: ("\"share\": 3,", "\"share\": -3,", 22),
        says: "share must be a positive number",
    },
    Case {
        what: "zero share",
        toml: ("share = 0.5", "share = 0", 37),
        json: ("\"share\": 0.5", "\"share\": 0", 40),
        says: "share must be a positive number",
    },
    Case {
        what: "theta out of range",
        toml: ("zipf:0.9", "zipf:1.5", 21),
        json: ("zipf:0.9", "zipf:1.5", 24),
        says: "theta must be in [0, 1]",
    },
    Case {
        what: "bad distribution",
        toml: ("keys = \"latest\"", "keys = \"gaussian\"", 32),
        json: ("\"keys\": \"latest\"", "\"keys\": \"gaussian\"", 35),
        says: "unknown key distribution",
    },
    Case {
        what: "bad hotspot",
        toml: ("hotspot:0.1:0.9", "hotspot:0.1", 22),
        json: ("hotspot:0.1:0.9", "hotspot:0.1", 25),
        says: "hotspot takes two numbers",
    },
    Case {
        what: "zero rows",
        toml: ("rows = 1\n", "rows = 0\n", 14),
        json: ("\"rows\": 1,", "\"rows\": 0,", 15),
        says: "rows must be at least 1",
    },
    Case {
        what: "duplicate table",
        toml: ("name = \"history\"", "name = \"account\"", 13),
        json: ("\"name\": \"history\"", "\"name\": \"account\"", 14),
        says: "table `account` is declared twice",
    },
    Case {
        what: "duplicate transaction",
        toml: ("name = \"close\"", "name = \"audit\"", 36),
        json: ("\"name\": \"close\"", "\"name\": \"audit\"", 39),
        says: "transaction `audit` is declared twice",
    },
    Case {
        what: "a column named key",
        toml: ("name = \"note\"", "name = \"key\"", 8),
        json: ("\"name\": \"note\"", "\"name\": \"key\"", 9),
        says: "implicit primary key",
    },
    Case {
        what: "bytes on an int",
        toml: ("distinct = 500", "bytes = 500", 7),
        json: ("\"distinct\": 500", "\"bytes\": 500", 8),
        says: "`bytes` applies to text and bytes columns only",
    },
    Case {
        what: "op on an unknown table",
        toml: ("table = \"history\" }", "table = \"hist\" }", 23),
        json: ("\"table\": \"history\" }", "\"table\": \"hist\" }", 26),
        says: "no table named `hist`",
    },
    Case {
        what: "update of an unknown column",
        toml: ("[\"balance\"] },", "[\"balanse\"] },", 22),
        json: ("[\"balance\"] },", "[\"balanse\"] },", 25),
        says: "table `account` has no column `balanse`",
    },
    Case {
        what: "index on an unknown column",
        toml: ("[\"balance\"] } ]", "[\"bal\"] } ]", 10),
        json: ("[\"balance\"] } ]", "[\"bal\"] } ]", 11),
        says: "table `account` has no column `bal`",
    },
    Case {
        what: "scan of an unknown index",
        toml: ("index = \"by_balance\"", "index = \"by_name\"", 31),
        json: ("\"index\": \"by_balance\"", "\"index\": \"by_name\"", 34),
        says: "no index named `by_name`",
    },
    Case {
        what: "a field the op does not take",
        toml: ("count = 2 }", "count = 2, length = 3 }", 21),
        json: ("\"count\": 2 }", "\"count\": 2, \"length\": 3 }", 24),
        says: "`length` does not apply to a `read` op",
    },
    Case {
        what: "a write in a read_only type",
        toml: (
            "  { op = \"index_scan\"",
            "  { op = \"insert\", table = \"history\" },\n  { op = \"index_scan\"",
            31,
        ),
        json: (
            "        { \"op\": \"index_scan\"",
            "        { \"op\": \"insert\", \"table\": \"history\" },\n        { \"op\": \"index_scan\"",
            34,
        ),
        says: "transaction `audit` is read_only but this op is a write (`insert`)",
    },
    Case {
        what: "count zero",
        toml: ("count = 2", "count = 0", 21),
        json: ("\"count\": 2", "\"count\": 0", 24),
        says: "count must be in 1..=",
    },
];

fn expect_spec(
    r: Result<CustomWorkload, WorkloadError>,
    file: &str,
    text: &str,
    line: usize,
    says: &str,
    what: &str,
) -> usize {
    match r {
        Err(WorkloadError::Spec {
            file: f,
            line: l,
            column,
            message,
        }) => {
            assert_eq!(f, file, "{what}");
            assert_eq!(
                l,
                line,
                "{what}: {message}; line {l} is {:?}",
                text.lines().nth(l.saturating_sub(1))
            );
            assert!(message.contains(says), "{what}: {message:?} lacks {says:?}");
            assert!(
                !message.contains(" at line "),
                "{what}: {message:?}: twice placed"
            );
            assert!(column >= 1, "{what}");
            column
        }
        other => panic!("{what}: expected a Spec error, got {other:?}"),
    }
}

#[test]
fn every_mistake_names_its_line_in_toml_and_json() {
    for c in CASES {
        let (from, to, line) = c.toml;
        assert!(BANK_TOML.contains(from), "{}: {from:?}", c.what);
        let text = BANK_TOML.replacen(from, to, 1);
        expect_spec(toml(&text), "bank.toml", &text, line, c.says, c.what);
        let (from, to, line) = c.json;
        assert!(BANK_JSON.contains(from), "{}: {from:?}", c.what);
        let text = BANK_JSON.replacen(from, to, 1);
        expect_spec(json(&text), "bank.json", &text, line, c.says, c.what);
    }
}

/// The column is the offending value's (1-based, in characters), and the
/// error reads `file:line:column: message`.
#[test]
fn errors_name_the_column_and_print_as_file_line_column() {
    let text = BANK_TOML.replacen("zipf:0.9", "zipf:1.5", 1);
    let col = expect_spec(toml(&text), "bank.toml", &text, 21, "theta", "toml");
    let line = text.lines().nth(20).unwrap();
    assert_eq!(col, line.find("\"zipf:1.5\"").unwrap() + 1, "{line}");
    let e = toml(&text).unwrap_err().to_string();
    assert!(e.starts_with(&format!("bank.toml:21:{col}: ")), "{e}");

    let text = BANK_JSON.replacen("zipf:0.9", "zipf:1.5", 1);
    let col = expect_spec(json(&text), "bank.json", &text, 24, "theta", "json");
    let line = text.lines().nth(23).unwrap();
    assert_eq!(col, line.find("\"zipf:1.5\"").unwrap() + 1, "{line}");

    // Characters, not bytes: a multi-byte name before the mistake.
    let text = BANK_TOML.replacen(
        "table = \"account\", keys = \"zipf:0.9\", count = 2 }",
        "table = \"äccöunt\", keys = \"zipf:0.9\", count = 2, length = 3 }",
        1,
    );
    let col = expect_spec(toml(&text), "bank.toml", &text, 21, "`length`", "utf-8");
    let line = text.lines().nth(20).unwrap();
    let byte = line.find("3 }").unwrap();
    assert_eq!(col, line[..byte].chars().count() + 1, "{line}");
    assert_ne!(
        col,
        byte + 1,
        "the line has multi-byte characters before it"
    );
}

/// Mistakes about the whole file: no tables, no transaction types, an
/// empty file, a file of the wrong shape.
#[test]
fn whole_file_mistakes_name_a_line_too() {
    // TOML: no [[transaction]] at all: the file's start.
    let cut = BANK_TOML.find("[[transaction]]").unwrap();
    let text = &BANK_TOML[..cut];
    expect_spec(
        toml(text),
        "bank.toml",
        text,
        1,
        "no transaction types",
        "toml",
    );
    // JSON: an empty list: the list's line.
    let cut = BANK_JSON.find("\"transaction\"").unwrap();
    let text = format!("{}\"transaction\": []\n}}\n", &BANK_JSON[..cut]);
    expect_spec(
        json(&text),
        "bank.json",
        &text,
        19,
        "no transaction types",
        "json",
    );
    expect_spec(toml(""), "bank.toml", "", 1, "no tables", "empty toml");
    expect_spec(json("[]"), "bank.json", "[]", 1, "", "json list");
    expect_spec(json(""), "bank.json", "", 1, "EOF", "empty json");
}

#[test]
fn files_are_read_by_their_extension() {
    assert_eq!(Format::of_path(Path::new("a/b.toml")), Some(Format::Toml));
    assert_eq!(Format::of_path(Path::new("b.json")), Some(Format::Json));
    assert_eq!(Format::of_path(Path::new("b.yaml")), None);
    let e = CustomWorkload::from_path(Path::new("mix.yaml")).unwrap_err();
    assert!(
        matches!(&e, WorkloadError::Config(m) if m.contains(".toml or .json")),
        "{e}"
    );
    let e = CustomWorkload::from_path(Path::new("/nonexistent/mix.toml")).unwrap_err();
    assert!(
        matches!(&e, WorkloadError::Config(m) if m.contains("cannot read")),
        "{e}"
    );
}

fn examples() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads")
}

/// Every file under `workloads/` parses (and names its own file in an
/// error, were there one).
#[test]
fn every_example_file_parses() {
    let mut seen = 0;
    for entry in std::fs::read_dir(examples()).unwrap() {
        let path = entry.unwrap().path();
        if Format::of_path(&path).is_none() {
            continue;
        }
        let w = CustomWorkload::from_path(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(!w.transaction_names().is_empty());
        seen += 1;
    }
    assert!(seen >= 2, "{seen} example files");
    let kv = CustomWorkload::from_path(&examples().join("kv.json")).unwrap();
    assert_eq!(kv.name(), "kv");
    assert!(!kv.is_read_only() && !kv.has_secondary_indexes());
    let orders = CustomWorkload::from_path(&examples().join("orders.toml")).unwrap();
    assert_eq!(orders.rows(), 101_000);
    assert!(orders.has_secondary_indexes());
}

#[test]
fn transaction_types_are_drawn_by_their_shares() {
    let shares = [45.0, 40.0, 10.0, 4.5, 0.5];
    let mix = Mix::new(shares.into_iter());
    let mut rng = Rng::new(9);
    let draws = 400_000;
    let mut counts = [0u32; 5];
    for _ in 0..draws {
        counts[mix.pick(&mut rng)] += 1;
    }
    let total: f64 = shares.iter().sum();
    for (i, s) in shares.iter().enumerate() {
        let got = f64::from(counts[i]) / draws as f64;
        assert!(
            (got - s / total).abs() < 0.01,
            "type {i}: {got} vs {}",
            s / total
        );
    }
    // One type: always it.
    let one = Mix::new([2.0].into_iter());
    assert!((0..100).all(|_| one.pick(&mut rng) == 0));
}

fn histogram(dist: KeyDist, keys: u64, draws: u32) -> Vec<u32> {
    let mut d = Draws::new(Rng::new(5));
    let mut counts = vec![0u32; keys as usize];
    for _ in 0..draws {
        counts[d.key(0, dist, keys) as usize] += 1;
    }
    counts
}

fn median(counts: &[u32]) -> u32 {
    let mut c = counts.to_vec();
    c.sort_unstable();
    c[c.len() / 2]
}

#[test]
fn zipf_keys_are_skewed_and_uniform_ones_are_not() {
    let zipf = histogram(KeyDist::Zipf(0.9), 1000, 200_000);
    let hottest = *zipf.iter().max().unwrap();
    assert_eq!(zipf[0], hottest, "key 0 is the hottest");
    assert!(
        hottest > 50 * median(&zipf).max(1),
        "{hottest} vs {}",
        median(&zipf)
    );

    let uniform = histogram(KeyDist::Uniform, 1000, 200_000);
    let (lo, hi) = (
        *uniform.iter().min().unwrap(),
        *uniform.iter().max().unwrap(),
    );
    assert!(lo > 100 && hi < 2 * median(&uniform), "{lo}..{hi}");

    let hot = histogram(
        KeyDist::Hotspot {
            fraction: 0.1,
            probability: 0.9,
        },
        1000,
        200_000,
    );
    let in_hot: u32 = hot[..100].iter().sum();
    let share = f64::from(in_hot) / 200_000.0;
    assert!((share - 0.9).abs() < 0.01, "{share}");

    let latest = histogram(KeyDist::Latest, 1000, 200_000);
    assert_eq!(*latest.iter().max().unwrap(), latest[999], "the newest key");
    assert!(latest[999] > 50 * median(&latest).max(1));
}

/// The range grows with inserts: once it has grown by an eighth, `zipf`
/// and `latest` draw over the new keys too (`latest` mostly them).
#[test]
fn draws_follow_a_growing_key_range() {
    let mut d = Draws::new(Rng::new(3));
    for _ in 0..1000 {
        assert!(d.key(0, KeyDist::Latest, 1000) < 1000);
        assert!(d.key(1, KeyDist::Zipf(0.5), 1000) < 1000);
        assert!(d.key(2, KeyDist::Uniform, 1) == 0);
    }
    let fresh = (0..1000)
        .filter(|_| d.key(0, KeyDist::Latest, 2000) >= 1000)
        .count();
    assert!(fresh > 850, "{fresh} of 1000 draws of the newest half");
    assert!((0..10_000).any(|_| d.key(1, KeyDist::Zipf(0.5), 2000) >= 1000));
    assert!((0..10_000).all(|_| d.key(1, KeyDist::Zipf(0.5), 2000) < 2000));
}

/// A bank for a real run: transfers insert into `history`, audits read it
/// and scan both the table and the index, closes delete accounts.
const RUN_TOML: &str = r#"
[[table]]
name = "account"
rows = 3000
columns = [
  { name = "balance", type = "int", distinct = 1000 },
  { name = "note", type = "text", bytes = 24 },
]
indexes = [ { name = "by_balance", columns = ["balance"] } ]

[[table]]
name = "history"
rows = 1
columns = [ { name = "amount", type = "int" }, { name = "memo", type = "bytes", bytes = 8 } ]

[[transaction]]
name = "transfer"
share = 3
ops = [
  { op = "read", table = "account", keys = "zipf:0.8", count = 2 },
  { op = "update", table = "account", keys = "uniform", columns = ["balance"] },
  { op = "insert", table = "history" },
]

[[transaction]]
name = "audit"
read_only = true
ops = [
  { op = "scan", table = "account", keys = "uniform", length = 5 },
  { op = "index_scan", index = "by_balance", length = 5 },
  { op = "read", table = "history", keys = "latest", columns = ["amount"] },
]

[[transaction]]
name = "close"
ops = [ { op = "delete", table = "account" } ]
"#;

fn quick() -> DriverConfig {
    DriverConfig {
        warmup: Duration::ZERO,
        duration: Duration::from_millis(100),
        series: false,
        huge_pages: Default::default(),
        ab_interval: None,
    }
}

#[test]
fn a_short_run_commits_every_type_and_keeps_the_row_counts() {
    let w = CustomWorkload::parse(RUN_TOML, Format::Toml, "run.toml").unwrap();
    for kind in strata::IndexKind::ALL {
        let db = strata::Database::open(strata::Options::default()).unwrap();
        let r = CustomRun {
            threads: 2,
            seed: 7,
            index_kind: kind,
        };
        let stop = Stop::Transactions(300);
        let c = run_until(db.clone(), &w, &r, &quick(), &stop, &mut crate::Quiet).unwrap();
        let rep = &c.report;
        assert_eq!(rep.engine, "strata");
        assert!(rep.load_s > 0.0);
        assert!(rep.memory.is_some(), "{kind}");
        assert_eq!(rep.run.committed + rep.run.aborted, 600, "{kind}");
        for ty in ["transfer", "audit", "close"] {
            let t = rep.run.of_type(ty).unwrap();
            assert!(t.committed > 0, "{kind}: {ty}: {t:?}");
        }
        let [account, history] = &c.tables[..] else {
            panic!("two tables");
        };
        assert_eq!((account.loaded, history.loaded), (3000, 1));
        assert!(account.read > 0 && account.updated > 0 && account.deleted > 0);
        assert!(account.scanned > 0, "{kind}: {account:?}");
        assert!(
            account.index_scanned > 0,
            "{kind}: the index scans found rows"
        );
        assert!(history.inserted > 0 && history.read > 0, "{history:?}");
        assert_eq!(account.inserted + history.deleted, 0);

        // What is in the database is what the committed transactions did.
        let mut t = db.begin_read_only().unwrap();
        let (acc, his) = (db.table("account").unwrap(), db.table("history").unwrap());
        let rows = t.count(&acc, ..).unwrap() as u64;
        assert_eq!(rows, account.loaded - account.deleted, "{kind}");
        let idx = db.index("by_balance").unwrap();
        assert_eq!(t.index_scan(&idx, ..).unwrap().len() as u64, rows, "{kind}");
        // Inserts took fresh keys above the loaded ones.
        let inserted = t.scan(&his, strata::key![1i64]..).unwrap();
        assert_eq!(inserted.len() as u64, history.inserted, "{kind}");
        assert!(t.get(&his, &strata::key![0i64]).unwrap().is_some());
    }
}

/// The driver's timed run (`run`), and a read-only workload begun READ
/// ONLY.
#[test]
fn a_timed_run_reports_its_types() {
    let text = r#"
        [[table]]
        name = "kv"
        rows = 500
        columns = [ { name = "v", type = "bool" } ]
        [[transaction]]
        name = "get"
        read_only = true
        ops = [ { op = "read", table = "kv", keys = "zipf:1", count = 4 } ]
    "#;
    let w = CustomWorkload::parse(text, Format::Toml, "kv.toml").unwrap();
    assert!(w.is_read_only());
    let db = strata::Database::open(strata::Options::default()).unwrap();
    let r = CustomRun {
        threads: 1,
        seed: 1,
        index_kind: strata::IndexKind::Standard,
    };
    // Fifty transactions, however fast the machine runs them.
    let stop = Stop::Transactions(50);
    let rep = run_until(db.clone(), &w, &r, &quick(), &stop, &mut crate::Quiet)
        .unwrap()
        .report;
    assert_eq!(rep.run.of_type("get").unwrap().committed, 50);
    assert_eq!(rep.run.aborted, 0);
    let st = db.stats();
    assert!(st.read_only_commits > 0, "begun READ ONLY: {st:?}");
    // The tables exist now: a second run on the same database is refused.
    assert!(matches!(
        run(db, &w, &r, &quick(), &mut crate::Quiet),
        Err(WorkloadError::Strata(_))
    ));
    let r0 = CustomRun { threads: 0, ..r };
    let db = strata::Database::open(strata::Options::default()).unwrap();
    assert!(matches!(
        run(db, &w, &r0, &quick(), &mut crate::Quiet),
        Err(WorkloadError::Config(_))
    ));
}

/// TOML's other spellings of the same lists (arrays of tables, dotted
/// keys) locate their items too.
#[test]
fn toml_arrays_of_tables_locate_their_items() {
    let text = r#"[[table]]
name = "t"
rows = 10
[[table.columns]]
name = "v"
type = "int"

[[transaction]]
name = "x"
[[transaction.ops]]
op = "read"
table = "t"
[[transaction.ops]]
op = "update"
table = "t"
columns = ["v", "w"]
"#;
    expect_spec(toml(text), "bank.toml", text, 16, "no column `w`", "ops");
    let ok = text.replacen(", \"w\"", "", 1);
    let w = toml(&ok).unwrap();
    assert_eq!(w.types[0].ops[1].columns, [1]);
    let text = ok.replacen("name = \"v\"\n", "name = \"v\"\nlength = 3\n", 1);
    expect_spec(
        toml(&text),
        "bank.toml",
        &text,
        6,
        "unknown field `length`",
        "col",
    );
}
