//! The file's shape (serde structs, which reject unknown fields and wrong
//! types with the parser's own position) and the checks serde cannot make
//! (ranges, cross-references), which name a path into the file that
//! `locate` turns into a line.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;

use super::locate::{self, Step, Step::Idx, Step::Key};
use super::{CustomWorkload, Format};
use crate::WorkloadError;

/// Most rows a table may load.
pub const MAX_ROWS: u64 = 1 << 40;
/// Most repetitions of an op (`count`) and rows of a scan (`length`).
pub const MAX_REPEAT: u64 = 1_000_000;
/// Longest generated text or byte string.
pub const MAX_BYTES: u64 = 1 << 20;
/// Default length of generated text and byte strings.
pub const DEFAULT_BYTES: usize = 100;
/// Default number of distinct values of an integer column.
pub const DEFAULT_DISTINCT: u64 = 1_000_000;
/// Default rows of a scan.
pub const DEFAULT_LENGTH: usize = 10;
/// The skew of `latest` (YCSB's `SkewedLatestGenerator` uses its Zipfian
/// default).
pub const LATEST_THETA: f64 = 0.99;

// ------------------------------------------------------------ the file

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: Option<String>,
    #[serde(default)]
    table: Vec<RawTable>,
    #[serde(default)]
    transaction: Vec<RawTxn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    name: String,
    rows: u64,
    #[serde(default)]
    columns: Vec<RawColumn>,
    #[serde(default)]
    indexes: Vec<RawIndex>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawColumn {
    name: String,
    #[serde(rename = "type")]
    ty: ColumnType,
    bytes: Option<u64>,
    distinct: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIndex {
    name: String,
    columns: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTxn {
    name: String,
    share: Option<f64>,
    #[serde(default)]
    read_only: bool,
    #[serde(default)]
    ops: Vec<RawOp>,
}

/// One struct for every kind of op (not an enum tagged by `op`): serde
/// buffers a tagged enum's fields before it knows the variant, and its
/// errors then lose their position; which fields apply to which kind is
/// checked after parsing.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOp {
    op: OpKind,
    table: Option<String>,
    index: Option<String>,
    keys: Option<String>,
    count: Option<u64>,
    columns: Option<Vec<String>>,
    length: Option<u64>,
}

/// A column's type (the primary key `key` is always `int`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnType {
    Int,
    Float,
    Text,
    Bytes,
    Bool,
}

impl ColumnType {
    pub(crate) fn strata(self) -> strata::Type {
        match self {
            ColumnType::Int => strata::Type::Int,
            ColumnType::Float => strata::Type::Float,
            ColumnType::Text => strata::Type::Text,
            ColumnType::Bytes => strata::Type::Bytes,
            ColumnType::Bool => strata::Type::Bool,
        }
    }
}

/// What an op does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    Read,
    Update,
    Insert,
    Delete,
    Scan,
    IndexScan,
}

impl OpKind {
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Update => "update",
            OpKind::Insert => "insert",
            OpKind::Delete => "delete",
            OpKind::Scan => "scan",
            OpKind::IndexScan => "index_scan",
        }
    }

    pub fn writes(self) -> bool {
        matches!(self, OpKind::Update | OpKind::Insert | OpKind::Delete)
    }

    /// The optional fields this kind takes (besides `op`).
    fn fields(self) -> &'static [&'static str] {
        match self {
            OpKind::Read => &["table", "keys", "count", "columns"],
            OpKind::Update => &["table", "keys", "count", "columns"],
            OpKind::Insert => &["table", "count"],
            OpKind::Delete => &["table", "keys", "count"],
            OpKind::Scan => &["table", "keys", "count", "length"],
            OpKind::IndexScan => &["index", "count", "length"],
        }
    }
}

/// How an op draws its primary keys from a table's current range
/// `0..next`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeyDist {
    Uniform,
    /// Key `r` with probability ∝ 1 / (r + 1)^theta: key 0 is the hottest.
    Zipf(f64),
    /// The first `fraction` of the keys take `probability` of the draws.
    Hotspot {
        fraction: f64,
        probability: f64,
    },
    /// The newest keys are the hottest: `next - 1 - r`, r ~ Zipf(0.99).
    Latest,
}

impl KeyDist {
    fn parse(s: &str) -> Result<KeyDist, String> {
        let expected =
            "expected uniform, zipf:THETA, hotspot:HOT_FRACTION:HOT_PROBABILITY or latest";
        let num = |what: &str, v: &str| {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| format!("{what} in {s:?} must be a number, got {v:?}"))
        };
        let parts: Vec<&str> = s.split(':').collect();
        match parts.as_slice() {
            ["uniform"] => Ok(KeyDist::Uniform),
            ["latest"] => Ok(KeyDist::Latest),
            ["zipf", theta] => {
                let theta = num("the zipf theta", theta)?;
                if !(0.0..=1.0).contains(&theta) {
                    return Err(format!("the zipf theta must be in [0, 1], got {theta}"));
                }
                Ok(KeyDist::Zipf(theta))
            }
            ["zipf"] => Err(format!("zipf needs its skew, as zipf:0.9; {expected}")),
            ["hotspot", f, p] => {
                let fraction = num("the hot fraction", f)?;
                let probability = num("the hot probability", p)?;
                if !(fraction > 0.0 && fraction <= 1.0) {
                    return Err(format!(
                        "the hot fraction must be in (0, 1], got {fraction}"
                    ));
                }
                if !(0.0..=1.0).contains(&probability) {
                    return Err(format!(
                        "the hot probability must be in [0, 1], got {probability}"
                    ));
                }
                Ok(KeyDist::Hotspot {
                    fraction,
                    probability,
                })
            }
            ["hotspot", ..] => Err(format!(
                "hotspot takes two numbers, as hotspot:0.2:0.8; {expected}"
            )),
            _ => Err(format!("unknown key distribution {s:?}; {expected}")),
        }
    }
}

// ------------------------------------------------------------ validated

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TableSpec {
    pub name: String,
    pub rows: u64,
    /// The columns after the key (row position `1 + i`).
    pub columns: Vec<ColumnSpec>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ColumnSpec {
    pub name: String,
    pub ty: ColumnType,
    /// Length of generated text and bytes.
    pub bytes: usize,
    /// Integers are drawn from `0..distinct`.
    pub distinct: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IndexSpec {
    pub name: String,
    pub table: usize,
    pub columns: Vec<String>,
    /// Row position of the first indexed column (0: the key): an index
    /// scan starts at a value drawn for it.
    pub first: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TxnSpec {
    pub name: String,
    pub share: f64,
    pub read_only: bool,
    pub ops: Vec<OpSpec>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OpSpec {
    pub kind: OpKind,
    /// For an index scan, the index's table.
    pub table: usize,
    pub index: Option<usize>,
    pub keys: KeyDist,
    pub count: u32,
    /// Row positions a read projects (none: the whole row) or an update
    /// sets (all the non-key columns when the file names none).
    pub columns: Vec<usize>,
    pub length: usize,
}

// ------------------------------------------------------------ parsing

/// A mistake found after parsing: where (a path into the file) and what.
struct Bad {
    path: Vec<Step>,
    message: String,
}

fn bad<T>(path: Vec<Step>, message: impl Into<String>) -> Result<T, Bad> {
    Err(Bad {
        path,
        message: message.into(),
    })
}

pub(super) fn parse(
    text: &str,
    format: Format,
    file: &str,
) -> Result<CustomWorkload, WorkloadError> {
    let spec_error = |(line, column): (usize, usize), message: String| WorkloadError::Spec {
        file: file.to_string(),
        line,
        column,
        message,
    };
    let raw: RawSpec = match format {
        Format::Toml => toml::from_str(text).map_err(|e| {
            let at = e.span().map_or(0, |s| s.start);
            spec_error(locate::line_col(text, at), e.message().trim().to_string())
        })?,
        Format::Json => serde_json::from_str(text).map_err(|e| {
            let (line, column) = locate::json_error_at(text, &e);
            // serde_json appends its position, which the variant holds.
            let message = e.to_string();
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            let message = message.strip_suffix(&suffix).unwrap_or(&message);
            spec_error((line, column), message.to_string())
        })?,
    };
    let stem = Path::new(file)
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .unwrap_or("custom");
    validate(raw, stem).map_err(|b| {
        let tree = match format {
            Format::Toml => locate::toml_tree(text),
            Format::Json => locate::json_tree(text),
        };
        let at = tree.map_or(0, |t| t.locate(&b.path));
        spec_error(locate::line_col(text, at), b.message)
    })
}

fn validate(raw: RawSpec, stem: &str) -> Result<CustomWorkload, Bad> {
    let name = match raw.name {
        Some(n) if n.trim().is_empty() => return bad(vec![Key("name")], "the name is empty"),
        Some(n) => n,
        None => stem.to_string(),
    };
    if raw.table.is_empty() {
        return bad(
            vec![Key("table")],
            "no tables: declare at least one [[table]] (JSON: \"table\": [...])",
        );
    }
    let mut tables = Vec::new();
    let mut indexes: Vec<IndexSpec> = Vec::new();
    let mut table_ids: HashMap<String, usize> = HashMap::new();
    let mut index_ids: HashMap<String, usize> = HashMap::new();
    for (ti, t) in raw.table.into_iter().enumerate() {
        let at = |rest: &[Step]| [&[Key("table"), Idx(ti)], rest].concat();
        if t.name.is_empty() {
            return bad(at(&[Key("name")]), "the table's name is empty");
        }
        if table_ids.insert(t.name.clone(), ti).is_some() {
            return bad(
                at(&[Key("name")]),
                format!("table `{}` is declared twice", t.name),
            );
        }
        if t.rows == 0 || t.rows > MAX_ROWS {
            return bad(
                at(&[Key("rows")]),
                format!("rows must be at least 1 (and at most 2^40), got {}", t.rows),
            );
        }
        let mut columns: Vec<ColumnSpec> = Vec::new();
        for (ci, c) in t.columns.into_iter().enumerate() {
            let at = |f: &'static str| at(&[Key("columns"), Idx(ci), Key(f)]);
            if c.name.is_empty() {
                return bad(at("name"), "the column's name is empty");
            }
            if c.name == "key" {
                return bad(
                    at("name"),
                    "`key` is the table's implicit primary key (an int); name this column otherwise",
                );
            }
            if columns.iter().any(|o| o.name == c.name) {
                return bad(
                    at("name"),
                    format!("table `{}` has two columns named `{}`", t.name, c.name),
                );
            }
            let sized = matches!(c.ty, ColumnType::Text | ColumnType::Bytes);
            if let Some(b) = c.bytes {
                if !sized {
                    return bad(
                        at("bytes"),
                        "`bytes` applies to text and bytes columns only",
                    );
                }
                if b > MAX_BYTES {
                    return bad(
                        at("bytes"),
                        format!("bytes must be at most {MAX_BYTES}, got {b}"),
                    );
                }
            }
            if let Some(d) = c.distinct {
                if c.ty != ColumnType::Int {
                    return bad(at("distinct"), "`distinct` applies to int columns only");
                }
                if d == 0 || d > i64::MAX as u64 {
                    return bad(
                        at("distinct"),
                        format!("distinct must be in 1..={}, got {d}", i64::MAX),
                    );
                }
            }
            columns.push(ColumnSpec {
                name: c.name,
                ty: c.ty,
                bytes: c.bytes.map_or(DEFAULT_BYTES, |b| b as usize),
                distinct: c.distinct.unwrap_or(DEFAULT_DISTINCT),
            });
        }
        let position = |name: &str| {
            if name == "key" {
                Some(0)
            } else {
                columns.iter().position(|c| c.name == name).map(|i| i + 1)
            }
        };
        for (ii, ix) in t.indexes.into_iter().enumerate() {
            let at = |rest: &[Step]| at(&[&[Key("indexes"), Idx(ii)], rest].concat());
            if ix.name.is_empty() {
                return bad(at(&[Key("name")]), "the index's name is empty");
            }
            if index_ids.insert(ix.name.clone(), indexes.len()).is_some() {
                return bad(
                    at(&[Key("name")]),
                    format!(
                        "index `{}` is declared twice (index names are global)",
                        ix.name
                    ),
                );
            }
            if ix.columns.is_empty() {
                return bad(at(&[Key("columns")]), "an index needs at least one column");
            }
            for (k, c) in ix.columns.iter().enumerate() {
                if position(c).is_none() {
                    return bad(
                        at(&[Key("columns"), Idx(k)]),
                        format!("table `{}` has no column `{c}`", t.name),
                    );
                }
                if ix.columns[..k].contains(c) {
                    return bad(
                        at(&[Key("columns"), Idx(k)]),
                        format!("index `{}` names column `{c}` twice", ix.name),
                    );
                }
            }
            let first = position(&ix.columns[0]).unwrap_or(0);
            indexes.push(IndexSpec {
                name: ix.name,
                table: ti,
                columns: ix.columns,
                first,
            });
        }
        tables.push(TableSpec {
            name: t.name,
            rows: t.rows,
            columns,
        });
    }

    if raw.transaction.is_empty() {
        return bad(
            vec![Key("transaction")],
            "no transaction types: declare at least one [[transaction]] (JSON: \"transaction\": [...])",
        );
    }
    let mut types: Vec<TxnSpec> = Vec::new();
    for (xi, x) in raw.transaction.into_iter().enumerate() {
        let at = |rest: &[Step]| [&[Key("transaction"), Idx(xi)], rest].concat();
        if x.name.is_empty() {
            return bad(at(&[Key("name")]), "the transaction's name is empty");
        }
        if types.iter().any(|o| o.name == x.name) {
            return bad(
                at(&[Key("name")]),
                format!("transaction `{}` is declared twice", x.name),
            );
        }
        let share = x.share.unwrap_or(1.0);
        if !(share.is_finite() && share > 0.0) {
            return bad(
                at(&[Key("share")]),
                format!("share must be a positive number, got {share}"),
            );
        }
        if x.ops.is_empty() {
            return bad(
                at(&[Key("ops")]),
                format!("transaction `{}` has no ops", x.name),
            );
        }
        let mut ops = Vec::new();
        for (oi, o) in x.ops.into_iter().enumerate() {
            let at = |f: &'static str| at(&[Key("ops"), Idx(oi), Key(f)]);
            ops.push(op(
                o,
                &x.name,
                x.read_only,
                &tables,
                &indexes,
                &table_ids,
                &index_ids,
                &at,
            )?);
        }
        types.push(TxnSpec {
            name: x.name,
            share,
            read_only: x.read_only,
            ops,
        });
    }
    let type_names = types
        .iter()
        .map(|t| &*Box::leak(t.name.clone().into_boxed_str()))
        .collect();
    Ok(CustomWorkload {
        name,
        tables,
        indexes,
        types,
        type_names,
    })
}

/// Checks one op; `at(field)` is the path of one of its fields.
#[allow(clippy::too_many_arguments)]
fn op(
    o: RawOp,
    txn: &str,
    read_only: bool,
    tables: &[TableSpec],
    indexes: &[IndexSpec],
    table_ids: &HashMap<String, usize>,
    index_ids: &HashMap<String, usize>,
    at: &dyn Fn(&'static str) -> Vec<Step>,
) -> Result<OpSpec, Bad> {
    let kind = o.op;
    let given: [(&'static str, bool); 6] = [
        ("table", o.table.is_some()),
        ("index", o.index.is_some()),
        ("keys", o.keys.is_some()),
        ("count", o.count.is_some()),
        ("columns", o.columns.is_some()),
        ("length", o.length.is_some()),
    ];
    for (field, present) in given {
        if present && !kind.fields().contains(&field) {
            return bad(
                at(field),
                format!(
                    "`{field}` does not apply to a `{}` op (it takes {})",
                    kind.name(),
                    kind.fields().join(", ")
                ),
            );
        }
    }
    if read_only && kind.writes() {
        return bad(
            at("op"),
            format!(
                "transaction `{txn}` is read_only but this op is a write (`{}`)",
                kind.name()
            ),
        );
    }
    let (table, index) = if kind == OpKind::IndexScan {
        let Some(name) = &o.index else {
            return bad(at("op"), "an index_scan op needs `index`");
        };
        let Some(&i) = index_ids.get(name) else {
            return bad(at("index"), format!("no index named `{name}`"));
        };
        (indexes[i].table, Some(i))
    } else {
        let Some(name) = &o.table else {
            return bad(at("op"), format!("a `{}` op needs `table`", kind.name()));
        };
        let Some(&t) = table_ids.get(name) else {
            return bad(at("table"), format!("no table named `{name}`"));
        };
        (t, None)
    };
    let keys = match &o.keys {
        Some(s) => KeyDist::parse(s).or_else(|m| bad(at("keys"), m))?,
        None => KeyDist::Uniform,
    };
    let count = o.count.unwrap_or(1);
    if count == 0 || count > MAX_REPEAT {
        return bad(
            at("count"),
            format!("count must be in 1..={MAX_REPEAT}, got {count}"),
        );
    }
    let length = o.length.unwrap_or(DEFAULT_LENGTH as u64);
    if length == 0 || length > MAX_REPEAT {
        return bad(
            at("length"),
            format!("length must be in 1..={MAX_REPEAT}, got {length}"),
        );
    }
    let t = &tables[table];
    let mut columns = Vec::new();
    if let Some(names) = &o.columns {
        let mut seen = HashSet::new();
        for (k, c) in names.iter().enumerate() {
            let here = || [at("columns"), vec![Idx(k)]].concat();
            let pos = if c == "key" {
                0
            } else {
                match t.columns.iter().position(|x| &x.name == c) {
                    Some(i) => i + 1,
                    None => return bad(here(), format!("table `{}` has no column `{c}`", t.name)),
                }
            };
            if pos == 0 && kind == OpKind::Update {
                return bad(here(), "the primary key `key` cannot be updated");
            }
            if !seen.insert(pos) {
                return bad(here(), format!("column `{c}` is named twice"));
            }
            columns.push(pos);
        }
        if names.is_empty() {
            return bad(
                at("columns"),
                "`columns` is empty (leave it out for all of them)",
            );
        }
    } else if kind == OpKind::Update {
        if t.columns.is_empty() {
            return bad(
                at("op"),
                format!(
                    "table `{}` has no columns besides its key to update",
                    t.name
                ),
            );
        }
        columns = (1..=t.columns.len()).collect();
    }
    Ok(OpSpec {
        kind,
        table,
        index,
        keys,
        count: count as u32,
        columns,
        length: length as usize,
    })
}
