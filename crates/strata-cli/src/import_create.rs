//! `strata import --create`: the import that makes what is missing, the
//! database directory and the table, from what the input says.
//!
//! Where each piece comes from, and why:
//!
//! ```text
//!  columns      the input's schema line (`export --with-schema` writes
//!               one: what was exported comes back as it was), or
//!               --schema, in `strata inspect`'s words; both: they agree
//!  primary key  --key (a column list cannot say it, and a key is a
//!               choice the user makes, not one to guess from the rows)
//!  table exists its schema; the input's columns and --key must fit it
//! ```
//!
//! Column types are never guessed from the rows: JSON's numbers, strings
//! and nulls do not name a type (bytes are hex strings, a float column's
//! `"NaN"` is a string, a column of nulls has none), and a table built on a
//! guess would read back other bytes than the export it came from.
//!
//! The invariant this module owns: **input that does not go in changes
//! nothing on disk.** Everything that can be checked without writing is
//! checked before the first write: the schema by the engine itself (an
//! in-memory database's `create_table`), then every row of the input
//! against it (types, nulls, every column given, no key twice unless
//! `--replace`), read whole into memory (the engine holds every row in
//! memory anyway); an existing database is looked at through the
//! read-only open, since a writable open and close rewrites log files even
//! when nothing is written (so it is read twice). Only then is the
//! directory made, the database opened for writing and the table created; a refusal up to there is a usage error (exit 2)
//! and what was made is taken away again (a new directory whole, an empty
//! one emptied). After that only the database can refuse (a key an
//! existing table already holds, a failing disk): exit 1, and a database
//! made by this run is removed whole.
//!
//! ```text
//!  schema (engine-checked) ─ rows (all parsed, keys checked) ─┐ refused: exit 2,
//!                                                              │ nothing on disk
//!  mkdir ─ open ─ create table ─ batches (as a plain import) ─┘ refused: exit 1;
//!                                          a new directory is removed
//! ```

use super::{commit_batch, fits, open_writable, ImportArgs, ImportError, Rows, UsageError};
use crate::inspect_cmd::{one_line, open_read_only};
use std::collections::HashMap;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use strata::{Column, Database, Key, Options, Row, Schema};

/// What `--create` made on disk, so that a failure can take it away.
enum Made {
    /// Nothing: the database was there.
    Nothing,
    /// This directory, which was not there (the topmost of the missing
    /// ones up to DIR), and everything in it.
    Dir(PathBuf),
    /// Everything in this directory, which was there, empty.
    Inside(PathBuf),
}

impl Made {
    /// Removes what was made (best effort: a failure here leaves files the
    /// message's reader can remove).
    fn undo(&self) {
        match self {
            Made::Nothing => {}
            Made::Dir(d) => {
                let _ = fs::remove_dir_all(d);
            }
            Made::Inside(d) => {
                for e in fs::read_dir(d).into_iter().flatten().flatten() {
                    let p = e.path();
                    let _ = match p.is_dir() {
                        true => fs::remove_dir_all(&p),
                        false => fs::remove_file(&p),
                    };
                }
            }
        }
    }
}

/// Where a new database goes, making nothing yet: `dir` must be missing
/// or an empty directory (a database is not made among other files).
fn new_home(dir: &Path) -> Result<Made, UsageError> {
    match fs::read_dir(dir) {
        Ok(mut entries) => match entries.next() {
            None => Ok(Made::Inside(dir.to_path_buf())),
            Some(_) => Err(UsageError(format!(
                "{} holds files but no Strata database: --create makes one only in a new or empty directory",
                dir.display()
            ))),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let mut top = dir.to_path_buf();
            while let Some(up) = top.parent() {
                if up.as_os_str().is_empty() || up.exists() {
                    break;
                }
                top = up.to_path_buf();
            }
            Ok(Made::Dir(top))
        }
        Err(e) => Err(UsageError(format!("{}: {e}", dir.display()))),
    }
}

/// The new table's schema: the declared columns and --key, checked by the
/// engine (`create_table` on an in-memory database), so that a schema it
/// would refuse (a nullable key column, a key naming no column) is refused
/// before anything is made.
fn new_schema(a: &ImportArgs, declared: Option<Vec<Column>>) -> Result<Schema, UsageError> {
    let Some(cols) = declared else {
        return Err(UsageError(format!(
            "--create of table {} needs its columns: a schema line in the input \
             (export --with-schema writes one) or --schema 'id int, name text null, ...'",
            a.table
        )));
    };
    if a.key.is_empty() {
        return Err(UsageError(format!(
            "--create of table {} needs its primary key: --key col[,col]",
            a.table
        )));
    }
    let s = cols
        .iter()
        .fold(Schema::new(&a.table), |s, c| match c.nullable {
            true => s.nullable_column(c.name.clone(), c.ty),
            false => s.column(c.name.clone(), c.ty),
        });
    let key: Vec<&str> = a.key.iter().map(String::as_str).collect();
    let checked = Database::open(Options::default())
        .and_then(|db| db.create_table(s.primary_key(&key)))
        .map_err(|e| UsageError(one_line(&format!("--create of table {}: {e}", a.table))))?;
    Ok(checked.schema().clone())
}

/// Every row of the input, checked against `schema` (see `Rows`) and,
/// without --replace, for a key given twice: a bad one is a usage error
/// naming its line.
fn read_all(
    a: &ImportArgs,
    schema: &Schema,
    input: Box<dyn Read>,
    skipped: u64,
) -> Result<Vec<(u64, Row)>, UsageError> {
    let bad = |e: ImportError| UsageError(one_line(&format!("{e}; nothing was imported")));
    let mut rows = Rows::new(a.format, input, schema, &a.null, skipped).map_err(bad)?;
    let mut out = Vec::new();
    let mut first: HashMap<Key, u64> = HashMap::new();
    while let Some((line, row)) = rows.next_row().map_err(bad)? {
        if !a.replace {
            let key = Key(schema.primary_key.iter().map(|&i| row[i].clone()).collect());
            if let Some(before) = first.insert(key.clone(), line) {
                return Err(UsageError(format!(
                    "line {line}: key {key} is on line {before} too (--replace keeps the last); \
                     nothing was imported"
                )));
            }
        }
        out.push((line, row));
    }
    Ok(out)
}

/// `import --create` (see the module doc): `holds` says whether DIR holds
/// a database, `declared` the columns the input or --schema gave, and
/// `skipped` the input's lines read already (its schema line).
pub(super) fn import_creating(
    a: &ImportArgs,
    holds: bool,
    declared: Option<Vec<Column>>,
    input: Box<dyn Read>,
    skipped: u64,
) -> Result<ExitCode, UsageError> {
    // What is there: an existing database is looked at read-only (a
    // writable open and close rewrites files even when nothing is
    // written), else where the new one goes.
    let (existing, made) = match holds {
        true => {
            let ro = open_read_only(&a.dir)?;
            let t = ro.table(&a.table).ok();
            (t.map(|t| t.schema().clone()), Made::Nothing)
        }
        false => (None, new_home(&a.dir)?),
    };
    let schema = match &existing {
        Some(s) => {
            if let Some(cols) = &declared {
                fits(s, cols, "the input's columns")?;
            }
            let pk: Vec<&str> = (s.primary_key.iter())
                .map(|&i| s.columns[i].name.as_str())
                .collect();
            if !a.key.is_empty() && a.key != pk {
                return Err(UsageError(format!(
                    "--key {} is not the primary key of table {} ({})",
                    a.key.join(","),
                    a.table,
                    pk.join(",")
                )));
            }
            s.clone()
        }
        None => new_schema(a, declared)?,
    };
    let rows = read_all(a, &schema, input, skipped)?;
    // Only now is anything written.
    if !holds {
        if let Err(e) = fs::create_dir_all(&a.dir) {
            made.undo();
            return Err(UsageError(format!(
                "cannot create {}: {e}",
                a.dir.display()
            )));
        }
    }
    let db = match open_writable(&a.dir) {
        Ok(db) => db,
        Err(e) => {
            made.undo();
            return Err(e);
        }
    };
    // (The table as the look found it, unless another program changed
    // the database in between: then `create_table` refuses, or the rows
    // do not fit and the first batch says so.)
    let (t, created) = match db.table(&a.table) {
        Ok(t) if existing.is_some() => (t, None),
        _ => match db.create_table(schema) {
            Ok(t) => {
                let what = match made {
                    Made::Nothing => "the table",
                    _ => "the database and the table",
                };
                (t, Some(what))
            }
            Err(e) => {
                drop(db);
                made.undo();
                return Err(UsageError(one_line(&format!(
                    "cannot create table {}: {e}",
                    a.table
                ))));
            }
        },
    };
    let mut committed = 0u64;
    for batch in rows.chunks(a.batch) {
        if let Err(e) = commit_batch(&db, &t, batch, a.replace) {
            drop(db);
            let kept = match made {
                Made::Nothing => format!(
                    "{committed} rows were committed before it (in transactions of {} rows)",
                    a.batch
                ),
                _ => {
                    made.undo();
                    format!("the database it made in {} was removed", a.dir.display())
                }
            };
            eprintln!("error: {}; {kept}", one_line(&e.to_string()));
            return Ok(ExitCode::FAILURE);
        }
        committed += batch.len() as u64;
    }
    match created {
        Some(what) => eprintln!(
            "imported {committed} rows into {} (created {what})",
            a.table
        ),
        None => eprintln!("imported {committed} rows into {}", a.table),
    }
    Ok(ExitCode::SUCCESS)
}
