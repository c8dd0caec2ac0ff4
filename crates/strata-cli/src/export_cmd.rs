//! `strata export` and `strata import`: one table's rows as JSON lines or
//! CSV, out of a database directory and into one.
//!
//! ```text
//!  export DIR --table T   open_read_only(DIR) ─ snapshot ─ range(T, ..)
//!                         (lazy, primary-key order) ─ one line / record
//!                         per row ─> stdout or --out FILE
//!  import DIR --table T   Database::open(DIR, WAL, group commit)
//!                         stdin or --in FILE ─ parse a row against T's
//!                         schema ─ batches of --batch rows (1000), each
//!                         one transaction (db.try_run: conflicts retried)
//!  import --create        the same, making the database and the table
//!                         (`import_create.rs`)
//! ```
//!
//! The formats, the same for every column type in both directions, so that
//! export, import into an empty table and export again give the same bytes:
//!
//! | type  | JSON lines                              | CSV                     |
//! |-------|-----------------------------------------|-------------------------|
//! | int   | number                                  | decimal                 |
//! | float | number (shortest that reads back the same); `"NaN"`, `"inf"`, `"-inf"` as strings | the same digits; `NaN`, `inf`, `-inf` |
//! | text  | string                                  | the text, quoted by the `csv` crate where needed (commas, quotes, newlines) |
//! | bytes | lowercase hex string (`"00ff"`)         | lowercase hex           |
//! | bool  | `true` / `false`                        | `true` / `false`        |
//! | null  | `null`                                  | `--null` (default: an empty field) |
//!
//! JSON lines: one object per row, every column by name, in column order.
//! CSV: a header row of the column names (any order on import), then one
//! record per row. A CSV null is the `--null` text, and only in a nullable
//! column (in another column the same text is a value: an empty text, or
//! an error for a number). Where a nullable column holds a value that
//! prints as the null text (an empty text with the default `--null ""`),
//! export refuses, naming the row and column, rather than write a file
//! that would read back a null: choose another `--null` (e.g. `'\N'`).
//!
//! The schema line (`export --with-schema`) carries the table's columns
//! in `strata inspect`'s words, ahead of the rows: `{"strata-schema":"id
//! int, note text null"}` in JSON lines (a JSON object, so JSON tools
//! read the file still), `#strata-schema: id int, ...` before the CSV
//! header. It is what lets `import --create` make the table of an export
//! exactly as it was (types are not guessed from the rows: see
//! `import_create.rs`); every import reads it when it is there, and checks
//! it against an existing table. It is opt-in, so a plain export stays one
//! object (or record) per row.
//!
//! Invariants: export writes nothing to DIR (the read-only open) and
//! writes the rows of one snapshot, in primary-key order; import commits
//! whole batches only: when it stops at a bad line, the batches before it
//! are committed (the count is printed), the batch holding it is rolled
//! back, and nothing after it is read. Without `--create` import needs the
//! database and the table to exist; with it, input that does not go in
//! changes nothing on disk (`import_create.rs`).

#[path = "import_create.rs"]
mod create;

use crate::inspect_cmd::{one_line, open_read_only};
use crate::UsageError;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use strata::{Column, Database, Durability, Options, Row, Schema, SyncPolicy, Table, Type, Value};

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per line, columns by name.
    Jsonl,
    /// A header row of column names, then one record per row.
    Csv,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ExportArgs {
    /// The database directory (opened read-only: nothing in it changes;
    /// refused while a program has it open for writing: export from a
    /// backup of it).
    pub dir: PathBuf,
    /// The table to export, every row in primary-key order.
    #[arg(long)]
    pub table: String,
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    pub format: Format,
    /// Write to this file instead of standard output.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// CSV: how a null is written (default: an empty field).
    #[arg(long, default_value = "")]
    pub null: String,
    /// Write the table's columns first, as a schema line that `import
    /// --create` makes the table from: `{"strata-schema":"id int, name
    /// text, note text null"}` (JSON lines), `#strata-schema: id int, ...`
    /// before the CSV header. The columns as `strata inspect` prints them.
    #[arg(long)]
    pub with_schema: bool,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ImportArgs {
    /// The database directory (opened for writing, durably: group
    /// commit). The database and the table must exist, unless --create.
    pub dir: PathBuf,
    /// The table to import into.
    #[arg(long)]
    pub table: String,
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    pub format: Format,
    /// Read from this file instead of standard input.
    #[arg(long = "in")]
    pub input: Option<PathBuf>,
    /// Replace a row whose key exists (a put) instead of stopping at it.
    #[arg(long)]
    pub replace: bool,
    /// Rows per transaction. A bad line stops the import: the batches
    /// before it stay committed, its own is rolled back.
    #[arg(long, default_value_t = 1000)]
    pub batch: usize,
    /// CSV: the text that is a null in a nullable column (default: an
    /// empty field).
    #[arg(long, default_value = "")]
    pub null: String,
    /// Create what is missing: the database (in a new or empty directory)
    /// and the table, with the columns of the input's schema line
    /// (`export --with-schema` writes one) or of --schema, and the primary
    /// key --key. The whole input is read and checked first: a bad line,
    /// a duplicate key, a missing --key or columns that do not fit is
    /// exit code 2, and nothing on disk changed.
    #[arg(long)]
    pub create: bool,
    /// With --create: the primary-key columns, `col[,col]`. Required for a
    /// table that does not exist; checked against one that does.
    #[arg(long, value_delimiter = ',')]
    pub key: Vec<String>,
    /// With --create: the table's columns, as `strata inspect` prints them
    /// (`id int, name text, note text null`; types int, float, text,
    /// bytes, bool), for input without a schema line (one it has must say
    /// the same).
    #[arg(long)]
    pub schema: Option<String>,
}

// ------------------------------------------------------------- schema line

/// The JSON-lines schema line's one key.
const SCHEMA_KEY: &str = "strata-schema";
/// The CSV schema line's start.
const CSV_SCHEMA: &str = "#strata-schema:";

/// Columns as `strata inspect` prints them: `id int, note text null`.
fn column_list(cols: &[Column]) -> String {
    let each = cols.iter().map(|c| {
        let null = if c.nullable { " null" } else { "" };
        format!("{} {}{null}", c.name, c.ty)
    });
    each.collect::<Vec<_>>().join(", ")
}

/// A table's column list (see [`column_list`]): what a schema line and
/// --schema hold. A name the list cannot hold (empty, or with a comma or
/// white space) is an error naming it.
fn columns_spec(s: &Schema) -> Result<String, String> {
    match s.columns.iter().find(|c| {
        c.name.is_empty() || c.name.contains(',') || c.name.contains(char::is_whitespace)
    }) {
        Some(c) => Err(format!(
            "column {:?} of {} cannot be written in a column list (a comma or white space in its name)",
            c.name, s.name
        )),
        None => Ok(column_list(&s.columns)),
    }
}

/// A column list (`id int, note text null`) as columns.
fn parse_columns(spec: &str) -> Result<Vec<Column>, String> {
    let mut out: Vec<Column> = Vec::new();
    for part in spec.split(',') {
        let words: Vec<&str> = part.split_whitespace().collect();
        let (name, ty, nullable) = match words[..] {
            [name, ty] => (name, ty, false),
            [name, ty, "null"] => (name, ty, true),
            _ => {
                return Err(format!(
                    "{:?} is not `name type` or `name type null`",
                    part.trim()
                ))
            }
        };
        let Some(ty) = Type::ALL.into_iter().find(|t| t.name() == ty) else {
            return Err(format!(
                "column {name}: unknown type {ty} (int, float, text, bytes, bool)"
            ));
        };
        if out.iter().any(|c| c.name == name) {
            return Err(format!("column {name} is named twice"));
        }
        out.push(Column {
            name: name.to_string(),
            ty,
            nullable,
        });
    }
    Ok(out)
}

/// Whether `line` (the input's first, without its end) is `format`'s
/// schema line: its column list if so.
fn schema_line(format: Format, line: &str) -> Option<String> {
    match format {
        Format::Csv => Some(line.strip_prefix(CSV_SCHEMA)?.trim().to_string()),
        Format::Jsonl => {
            if !line.contains(SCHEMA_KEY) {
                return None; // (no JSON parse of a first row)
            }
            // One object of that one key, a string: a row has every column.
            let mut obj: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(line).ok()?;
            match (obj.len(), obj.remove(SCHEMA_KEY)) {
                (1, Some(serde_json::Value::String(spec))) => Some(spec),
                _ => None,
            }
        }
    }
}

/// An input, past its schema line if it had one.
struct Input {
    /// The columns its schema line declares.
    declared: Option<Vec<Column>>,
    rest: Box<dyn Read>,
    /// Lines read already (0 or 1), so that errors name the input's own.
    skipped: u64,
}

/// The input past its schema line, if its first line is one.
fn take_schema_line(format: Format, input: Box<dyn Read>) -> Result<Input, UsageError> {
    let mut r = BufReader::with_capacity(1 << 16, input);
    let mut first = Vec::new();
    r.read_until(b'\n', &mut first)
        .map_err(|e| UsageError(format!("reading the input: {e}")))?;
    let spec = std::str::from_utf8(&first)
        .ok()
        .and_then(|l| schema_line(format, l.trim_end_matches(['\n', '\r'])));
    match spec {
        // Not one: the line goes back in front of the rest.
        None => Ok(Input {
            declared: None,
            rest: Box::new(io::Cursor::new(first).chain(r)),
            skipped: 0,
        }),
        Some(spec) => {
            let cols = parse_columns(&spec)
                .map_err(|e| UsageError(format!("line 1, the schema line: {e}")))?;
            Ok(Input {
                declared: Some(cols),
                rest: Box::new(r),
                skipped: 1,
            })
        }
    }
}

/// Whether `cols` are `s`'s columns (names, types, nullability, in
/// order); else a usage error showing both, `what` naming `cols`.
fn fits(s: &Schema, cols: &[Column], what: &str) -> Result<(), UsageError> {
    if s.columns == cols {
        return Ok(());
    }
    Err(UsageError(format!(
        "{what} ({}) does not fit table {} ({})",
        column_list(cols),
        s.name,
        column_list(&s.columns)
    )))
}

// ------------------------------------------------------------- values

fn hex(b: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        s.push(DIGITS[usize::from(x >> 4)] as char);
        s.push(DIGITS[usize::from(x & 15)] as char);
    }
    s
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A float as CSV text and, finite, as JSON's number: Rust's shortest
/// digits that parse back to the same bits (`NaN`, `inf`, `-inf` else).
fn float_text(f: f64) -> String {
    format!("{f:?}")
}

fn parse_float(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        _ => s.parse::<f64>().ok().filter(|f| f.is_finite()),
    }
}

/// One value as JSON text.
fn json_value(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) if f.is_finite() => out.push_str(&float_text(*f)),
        Value::Float(f) => out.push_str(&format!("\"{}\"", float_text(*f))),
        Value::Text(t) => out.push_str(&serde_json::to_string(t.as_str()).expect("a string")),
        Value::Bytes(b) => out.push_str(&format!("\"{}\"", hex(b))),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
    }
}

/// One value as CSV text (a null is the caller's: `--null`).
fn csv_value(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => float_text(*f),
        Value::Text(t) => t.as_str().to_string(),
        Value::Bytes(b) => hex(b),
        Value::Bool(b) => b.to_string(),
    }
}

/// What a value of type `ty` looks like, for errors.
fn expected(ty: Type) -> &'static str {
    match ty {
        Type::Int => "an integer",
        Type::Float => "a number (or \"NaN\", \"inf\", \"-inf\")",
        Type::Text => "a string",
        Type::Bytes => "a hex string (two digits a byte)",
        Type::Bool => "true or false",
    }
}

/// A JSON value as a value of column type `ty`.
fn from_json(ty: Type, v: serde_json::Value) -> Result<Value, String> {
    use serde_json::Value as J;
    let got = |v: &J| {
        let s = v.to_string();
        let short: String = s.chars().take(40).collect();
        format!("expected {}, got {short}", expected(ty))
    };
    Ok(match (ty, v) {
        (_, J::Null) => Value::Null,
        (Type::Int, J::Number(n)) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => return Err(got(&J::Number(n))),
        },
        (Type::Float, J::Number(n)) => match n.as_f64() {
            Some(f) => Value::Float(f),
            None => return Err(got(&J::Number(n))),
        },
        (Type::Float, J::String(s)) => match s.as_str() {
            "NaN" | "inf" | "-inf" => Value::Float(parse_float(&s).expect("named")),
            _ => return Err(got(&J::String(s))),
        },
        (Type::Text, J::String(s)) => Value::from(s),
        (Type::Bytes, J::String(s)) => match unhex(&s) {
            Some(b) => Value::from(b),
            None => return Err(got(&J::String(s))),
        },
        (Type::Bool, J::Bool(b)) => Value::Bool(b),
        (_, v) => return Err(got(&v)),
    })
}

/// A CSV field as a value of column type `ty` (not a null: the caller
/// matched `--null` first).
fn from_csv(ty: Type, s: &str) -> Result<Value, String> {
    let got = || {
        let short: String = s.chars().take(40).collect();
        format!("expected {}, got {short:?}", expected(ty))
    };
    Ok(match ty {
        Type::Int => Value::Int(s.parse().map_err(|_| got())?),
        Type::Float => Value::Float(parse_float(s).ok_or_else(got)?),
        Type::Text => Value::from(s),
        Type::Bytes => Value::from(unhex(s).ok_or_else(got)?),
        Type::Bool => match s {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => return Err(got()),
        },
    })
}

// ------------------------------------------------------------- export

fn column_names(s: &Schema) -> Vec<&str> {
    s.columns.iter().map(|c| c.name.as_str()).collect()
}

pub fn export(a: &ExportArgs) -> Result<ExitCode, UsageError> {
    if a.format == Format::Jsonl && !a.null.is_empty() {
        return Err(UsageError(
            "--null applies to --format csv (JSON has null)".into(),
        ));
    }
    let db = open_read_only(&a.dir)?;
    let t = db.table(&a.table).map_err(|e| {
        UsageError(format!(
            "{e} in {} (tables: {})",
            a.dir.display(),
            db.table_names().join(", ")
        ))
    })?;
    let spec = match a.with_schema {
        true => {
            Some(columns_spec(t.schema()).map_err(|e| UsageError(format!("--with-schema: {e}")))?)
        }
        false => None,
    };
    let out: Box<dyn Write> = match &a.out {
        Some(p) => Box::new(
            File::create(p).map_err(|e| UsageError(format!("--out {}: {e}", p.display())))?,
        ),
        None => Box::new(io::stdout().lock()),
    };
    let mut w = BufWriter::with_capacity(1 << 16, out);
    let written = write_rows(&db, &t, a, spec.as_deref(), &mut w).and_then(|n| {
        w.flush().map_err(ExportError::Io)?;
        Ok(n)
    });
    match written {
        Ok(n) => {
            if let Some(p) = &a.out {
                eprintln!("exported {n} rows of {} to {}", a.table, p.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        // A reader that stopped early (`| head`) is not a failure.
        Err(ExportError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("error: {}", one_line(&e.to_string()));
            Ok(ExitCode::FAILURE)
        }
    }
}

enum ExportError {
    Io(io::Error),
    Db(strata::Error),
    /// A value of a nullable column prints as the null text.
    Ambiguous {
        key: String,
        column: String,
    },
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportError::Io(e) => write!(f, "writing the rows: {e}"),
            ExportError::Db(e) => write!(f, "reading the rows: {e}"),
            ExportError::Ambiguous { key, column } => write!(
                f,
                "the row with key {key} holds a value in nullable column {column} that \
                 prints as the null text, so it would read back as a null; \
                 choose another with --null (e.g. --null '\\N')"
            ),
        }
    }
}

impl From<strata::Error> for ExportError {
    fn from(e: strata::Error) -> Self {
        ExportError::Db(e)
    }
}

/// Every row of `t` from one snapshot, in primary-key order, read as the
/// iterator reaches it (nothing collected), after the schema line of
/// column list `spec` if given; returns how many rows.
fn write_rows(
    db: &Database,
    t: &Table,
    a: &ExportArgs,
    spec: Option<&str>,
    w: &mut impl Write,
) -> Result<u64, ExportError> {
    let schema = t.schema();
    let mut snapshot = db.begin_read_only()?;
    let mut n = 0u64;
    if let Some(spec) = spec {
        let line = match a.format {
            Format::Jsonl => format!(
                "{{\"{SCHEMA_KEY}\":{}}}\n",
                serde_json::to_string(spec).expect("a string")
            ),
            Format::Csv => format!("{CSV_SCHEMA} {spec}\n"),
        };
        w.write_all(line.as_bytes()).map_err(ExportError::Io)?;
    }
    match a.format {
        Format::Jsonl => {
            let names: Vec<String> = column_names(schema)
                .into_iter()
                .map(|c| serde_json::to_string(c).expect("a string"))
                .collect();
            let mut line = String::new();
            for row in snapshot.range(t, ..)? {
                let row = row?;
                line.clear();
                line.push('{');
                for (i, (name, v)) in names.iter().zip(&row).enumerate() {
                    if i > 0 {
                        line.push(',');
                    }
                    line.push_str(name);
                    line.push(':');
                    json_value(v, &mut line);
                }
                line.push_str("}\n");
                w.write_all(line.as_bytes()).map_err(ExportError::Io)?;
                n += 1;
            }
        }
        Format::Csv => {
            let mut c = csv::Writer::from_writer(w);
            let csv_err = |e: csv::Error| ExportError::Io(io::Error::other(e));
            c.write_record(column_names(schema)).map_err(csv_err)?;
            let mut fields: Vec<String> = Vec::with_capacity(schema.columns.len());
            for row in snapshot.range(t, ..)? {
                let row = row?;
                fields.clear();
                for (col, v) in schema.columns.iter().zip(&row) {
                    let text = match v {
                        Value::Null => a.null.clone(),
                        v => csv_value(v),
                    };
                    if col.nullable && !v.is_null() && text == a.null {
                        return Err(ExportError::Ambiguous {
                            key: strata::Key(
                                schema.primary_key.iter().map(|&i| row[i].clone()).collect(),
                            )
                            .to_string(),
                            column: col.name.clone(),
                        });
                    }
                    fields.push(text);
                }
                c.write_record(&fields).map_err(csv_err)?;
                n += 1;
            }
            c.flush().map_err(ExportError::Io)?;
        }
    }
    snapshot.commit()?;
    Ok(n)
}

// ------------------------------------------------------------- import

/// Why an import stopped.
#[derive(Debug)]
pub enum ImportError {
    /// A line that is not a row of the table: what, where.
    Row {
        line: u64,
        column: Option<String>,
        what: String,
    },
    /// The engine refused a row (a duplicate key, ...).
    Refused { line: u64, error: strata::Error },
    /// Reading the input failed.
    Read(String),
    /// The engine failed where no line is to blame (a commit).
    Db(strata::Error),
}

impl From<strata::Error> for ImportError {
    fn from(e: strata::Error) -> Self {
        ImportError::Db(e)
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportError::Row {
                line,
                column: Some(c),
                what,
            } => write!(f, "line {line}, column {c}: {what}"),
            ImportError::Row {
                line,
                column: None,
                what,
            } => write!(f, "line {line}: {what}"),
            ImportError::Refused { line, error } => write!(f, "line {line}: {error}"),
            ImportError::Read(e) => write!(f, "reading the input: {e}"),
            ImportError::Db(e) => write!(f, "{e}"),
        }
    }
}

fn row_error(line: u64, column: Option<&str>, what: impl Into<String>) -> ImportError {
    ImportError::Row {
        line,
        column: column.map(str::to_string),
        what: what.into(),
    }
}

/// A value for a column that was given, or the error naming it.
fn check_null(line: u64, schema: &Schema, col: usize, v: Value) -> Result<Value, ImportError> {
    let c = &schema.columns[col];
    if v.is_null() && !c.nullable {
        return Err(row_error(
            line,
            Some(&c.name),
            "a null in a column that is not nullable",
        ));
    }
    Ok(v)
}

/// Rows parsed from the input, one at a time, with the line each starts on.
enum Rows<'s, R: Read> {
    Jsonl {
        r: BufReader<R>,
        schema: &'s Schema,
        line: u64,
        buf: String,
    },
    Csv {
        r: csv::Reader<R>,
        schema: &'s Schema,
        /// The column of each field, in the header's order.
        order: Vec<usize>,
        null: String,
        rec: csv::StringRecord,
        /// Lines before the header (a schema line): the reader counts
        /// from the header.
        offset: u64,
    },
}

impl<'s, R: Read> Rows<'s, R> {
    /// Rows of `input`, whose first `skipped` lines were read already (a
    /// schema line), so that errors name the input's own lines.
    fn new(
        format: Format,
        input: R,
        schema: &'s Schema,
        null: &str,
        skipped: u64,
    ) -> Result<Self, ImportError> {
        Ok(match format {
            Format::Jsonl => Rows::Jsonl {
                r: BufReader::with_capacity(1 << 16, input),
                schema,
                line: skipped,
                buf: String::new(),
            },
            Format::Csv => {
                let mut r = csv::ReaderBuilder::new()
                    .has_headers(false)
                    .from_reader(input);
                let mut header = csv::StringRecord::new();
                let head = 1 + skipped;
                let read = r
                    .read_record(&mut header)
                    .map_err(|e| csv_error(1, skipped, e))?;
                if !read {
                    return Err(row_error(
                        head,
                        None,
                        "no header row (the first line names the columns)",
                    ));
                }
                let mut order = Vec::with_capacity(header.len());
                for name in header.iter() {
                    let Some(i) = schema.columns.iter().position(|c| c.name == name) else {
                        return Err(row_error(
                            head,
                            Some(name),
                            format!(
                                "the header names a column {} does not have (it has {})",
                                schema.name,
                                column_names(schema).join(", ")
                            ),
                        ));
                    };
                    if order.contains(&i) {
                        return Err(row_error(
                            head,
                            Some(name),
                            "the header names the column twice",
                        ));
                    }
                    order.push(i);
                }
                if let Some(c) = (0..schema.columns.len()).find(|i| !order.contains(i)) {
                    return Err(row_error(
                        head,
                        Some(&schema.columns[c].name),
                        "missing from the header",
                    ));
                }
                Rows::Csv {
                    r,
                    schema,
                    order,
                    null: null.to_string(),
                    rec: csv::StringRecord::new(),
                    offset: skipped,
                }
            }
        })
    }

    /// The next row and the line it starts on; `None` at the end.
    fn next_row(&mut self) -> Result<Option<(u64, Row)>, ImportError> {
        match self {
            Rows::Jsonl {
                r,
                schema,
                line,
                buf,
            } => loop {
                buf.clear();
                *line += 1;
                let n = r
                    .read_line(buf)
                    .map_err(|e| ImportError::Read(format!("line {line}: {e}")))?;
                if n == 0 {
                    return Ok(None);
                }
                if buf.trim().is_empty() {
                    continue;
                }
                return json_row(*line, buf, schema).map(Some);
            },
            Rows::Csv {
                r,
                schema,
                order,
                null,
                rec,
                offset,
            } => {
                let line = r.position().line();
                if !r
                    .read_record(rec)
                    .map_err(|e| csv_error(line, *offset, e))?
                {
                    return Ok(None);
                }
                let line = rec.position().map_or(line, |p| p.line()) + *offset;
                let mut row = vec![Value::Null; schema.columns.len()];
                for (field, &col) in rec.iter().zip(order.iter()) {
                    let c = &schema.columns[col];
                    let v = if c.nullable && field == null.as_str() {
                        Value::Null
                    } else {
                        from_csv(c.ty, field)
                            .map_err(|what| row_error(line, Some(&c.name), what))?
                    };
                    row[col] = v;
                }
                Ok(Some((line, row)))
            }
        }
    }
}

/// A CSV reader's error at reader line `line` (or where it says), in the
/// input's lines (`offset` lines came before the reader's first).
fn csv_error(line: u64, offset: u64, e: csv::Error) -> ImportError {
    let line = e.position().map_or(line, |p| p.line()) + offset;
    match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => row_error(
            line,
            None,
            format!("{len} fields, the header has {expected_len}"),
        ),
        csv::ErrorKind::Utf8 { .. } => row_error(line, None, "not UTF-8"),
        _ => ImportError::Read(format!("line {line}: {e}")),
    }
}

/// One JSON line as a row of `schema`: every column by name, no other key.
fn json_row(line: u64, text: &str, schema: &Schema) -> Result<(u64, Row), ImportError> {
    let obj: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text)
        .map_err(|e| row_error(line, None, format!("not a JSON object: {e}")))?;
    let mut obj = obj;
    let mut row = Vec::with_capacity(schema.columns.len());
    for (i, c) in schema.columns.iter().enumerate() {
        let Some(v) = obj.remove(&c.name) else {
            return Err(row_error(
                line,
                Some(&c.name),
                "missing (every column must be given; null for a null)",
            ));
        };
        let v = from_json(c.ty, v).map_err(|what| row_error(line, Some(&c.name), what))?;
        row.push(check_null(line, schema, i, v)?);
    }
    if let Some(k) = obj.keys().next() {
        return Err(row_error(
            line,
            Some(k),
            format!(
                "{} has no such column (it has {})",
                schema.name,
                column_names(schema).join(", ")
            ),
        ));
    }
    Ok((line, row))
}

pub fn import(a: &ImportArgs) -> Result<ExitCode, UsageError> {
    if a.batch == 0 {
        return Err(UsageError("--batch must be at least 1".into()));
    }
    if a.format == Format::Jsonl && !a.null.is_empty() {
        return Err(UsageError(
            "--null applies to --format csv (JSON has null)".into(),
        ));
    }
    if !a.create && (!a.key.is_empty() || a.schema.is_some()) {
        return Err(UsageError("--key and --schema apply to --create".into()));
    }
    let given = match &a.schema {
        Some(spec) => Some(parse_columns(spec).map_err(|e| UsageError(format!("--schema: {e}")))?),
        None => None,
    };
    let input: Box<dyn Read> = match &a.input {
        Some(p) => {
            Box::new(File::open(p).map_err(|e| UsageError(format!("--in {}: {e}", p.display())))?)
        }
        None => Box::new(io::stdin().lock()),
    };
    let Input {
        declared: line,
        rest: input,
        skipped,
    } = take_schema_line(a.format, input)?;
    let declared = match (given, line) {
        (Some(g), Some(l)) if g != l => {
            return Err(UsageError(format!(
                "--schema ({}) and the input's schema line ({}) differ",
                column_list(&g),
                column_list(&l)
            )))
        }
        (g, l) => g.or(l),
    };
    // A writable open would make a database of any directory.
    let holds = match Database::holds_database(&a.dir) {
        Ok(h) => h,
        Err(e) => return Err(UsageError(one_line(&e.to_string()))),
    };
    if a.create {
        return create::import_creating(a, holds, declared, input, skipped);
    }
    if !holds {
        return Err(UsageError(format!(
            "{} holds no Strata database (import adds rows to an existing table; \
             --create makes the database and the table)",
            a.dir.display()
        )));
    }
    // Looked at read-only first: a writable open and close rewrites the
    // log's files, so a refusal (no such table, columns that do not fit)
    // must come before it to leave the directory as it was (the database
    // is loaded twice, the price of that).
    let target = |db: &Database| -> Result<Table, UsageError> {
        let t = db.table(&a.table).map_err(|e| {
            UsageError(format!(
                "{e} in {} (import needs the table to exist, or --create; tables: {})",
                a.dir.display(),
                db.table_names().join(", ")
            ))
        })?;
        if let Some(cols) = &declared {
            fits(t.schema(), cols, "the input's schema line")?;
        }
        Ok(t)
    };
    target(&open_read_only(&a.dir)?)?;
    let db = open_writable(&a.dir)?;
    let t = target(&db)?;
    let mut committed = 0u64;
    let imported = Rows::new(a.format, input, t.schema(), &a.null, skipped)
        .and_then(|rows| import_rows(&db, &t, a, rows, &mut committed));
    match imported {
        Ok(()) => {
            eprintln!("imported {committed} rows into {}", a.table);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!(
                "error: {}; {committed} rows were committed before it (in transactions of \
                 {} rows), the rest was not imported",
                one_line(&e.to_string()),
                a.batch
            );
            Ok(ExitCode::FAILURE)
        }
    }
}

/// `dir`'s database, opened for writing (group commit).
fn open_writable(dir: &std::path::Path) -> Result<Database, UsageError> {
    Database::open(Options::default().durability(Durability::Wal {
        dir: dir.to_path_buf(),
        sync: SyncPolicy::GroupCommit,
    }))
    .map_err(|e| UsageError(one_line(&format!("cannot open {}: {e}", dir.display()))))
}

/// Parses and inserts every row of `rows`, `a.batch` rows a transaction;
/// `committed` counts the rows of the batches committed so far.
fn import_rows<R: Read>(
    db: &Database,
    t: &Table,
    a: &ImportArgs,
    mut rows: Rows<'_, R>,
    committed: &mut u64,
) -> Result<(), ImportError> {
    let mut batch: Vec<(u64, Row)> = Vec::with_capacity(a.batch);
    loop {
        let next = rows.next_row()?;
        let done = next.is_none();
        batch.extend(next);
        if batch.len() == a.batch || (done && !batch.is_empty()) {
            commit_batch(db, t, &batch, a.replace)?;
            *committed += batch.len() as u64;
            batch.clear();
        }
        if done {
            return Ok(());
        }
    }
}

/// One transaction of `batch` (retried on conflicts); a refused row is
/// named by its line.
fn commit_batch(
    db: &Database,
    t: &Table,
    batch: &[(u64, Row)],
    replace: bool,
) -> Result<(), ImportError> {
    db.try_run(|x| {
        for (line, row) in batch {
            let r = if replace {
                x.put(t, row.clone())
            } else {
                x.insert(t, row.clone())
            };
            r.map_err(|error| ImportError::Refused { line: *line, error })?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_go_to_hex_and_back() {
        for b in [&[][..], &[0, 1, 0x7f, 0x80, 0xff][..]] {
            assert_eq!(unhex(&hex(b)).as_deref(), Some(b));
        }
        assert_eq!(hex(&[0x0a, 0xff]), "0aff");
        assert_eq!(unhex("0AFF"), Some(vec![0x0a, 0xff]));
        for bad in ["0", "zz", "0g", "é1"] {
            assert_eq!(unhex(bad), None, "{bad}");
        }
    }

    #[test]
    fn floats_read_back_to_the_same_bits() {
        for f in [
            0.0,
            -0.0,
            1.0,
            -0.5,
            0.1,
            1e300,
            -1e-300,
            f64::MIN_POSITIVE,
            f64::MAX,
            5e-324,
            123_456_789.123_456_79,
            0.1 + 0.2,
        ] {
            let t = float_text(f);
            assert_eq!(parse_float(&t).map(f64::to_bits), Some(f.to_bits()), "{t}");
            let mut j = String::new();
            json_value(&Value::Float(f), &mut j);
            let back: serde_json::Value = serde_json::from_str(&j).unwrap();
            match from_json(Type::Float, back).unwrap() {
                Value::Float(g) => assert_eq!(g.to_bits(), f.to_bits(), "{j}"),
                v => panic!("{v:?}"),
            }
        }
        for (f, s) in [
            (f64::NAN, "NaN"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(float_text(f), s);
            let mut j = String::new();
            json_value(&Value::Float(f), &mut j);
            assert_eq!(j, format!("\"{s}\""));
        }
        assert_eq!(parse_float("1e999"), None, "not finite, not named");
    }

    /// A column list reads back to the same columns, in either schema
    /// line; a line that only looks like one (a row with a column of that
    /// name, another key beside it, not JSON) is a row.
    #[test]
    fn column_lists_and_schema_lines_read_back() {
        let spec = "id int, label text, note text null, blob bytes null, x float, f bool";
        let cols = parse_columns(spec).unwrap();
        assert_eq!(column_list(&cols), spec);
        assert!(cols[2].nullable && !cols[1].nullable);
        let json = format!(
            "{{\"{SCHEMA_KEY}\":{}}}",
            serde_json::to_string(spec).unwrap()
        );
        assert_eq!(schema_line(Format::Jsonl, &json).as_deref(), Some(spec));
        let csv = format!("{CSV_SCHEMA} {spec}");
        assert_eq!(schema_line(Format::Csv, &csv).as_deref(), Some(spec));
        for row in [
            format!("{{\"{SCHEMA_KEY}\":\"a\",\"id\":1}}"),
            format!("{{\"{SCHEMA_KEY}\":1}}"),
            format!("\"{SCHEMA_KEY}\""),
            "id,label".to_string(),
        ] {
            assert_eq!(schema_line(Format::Jsonl, &row), None, "{row}");
            assert_eq!(schema_line(Format::Csv, &row), None, "{row}");
        }
        for bad in [
            "id",
            "id int null extra",
            "id number",
            "id int, id text",
            "",
        ] {
            assert!(parse_columns(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_json_value_of_another_type_is_refused() {
        use serde_json::json;
        assert!(from_json(Type::Int, json!(1.5)).is_err());
        assert!(from_json(Type::Int, json!("1")).is_err());
        assert!(from_json(Type::Int, json!(u64::MAX)).is_err());
        assert!(from_json(Type::Bool, json!(1)).is_err());
        assert!(from_json(Type::Bytes, json!("abc")).is_err());
        assert!(from_json(Type::Float, json!("nan")).is_err());
        assert_eq!(from_json(Type::Float, json!(2)).unwrap(), Value::Float(2.0));
        assert_eq!(from_json(Type::Text, json!(null)).unwrap(), Value::Null);
    }
}
