//! `strata inspect DIR`: what a database directory holds (tables with
//! their columns and row counts, secondary indexes, the checkpoint, the
//! log segments, what recovery found), read through the engine's
//! read-only open, so that looking changes nothing in the directory.
//!
//! ```text
//!  Database::open_read_only(DIR) ── refused (not a database, damaged,
//!       │                            locked by a writer) ─> exit 2, one line
//!       ├─ catalog: table_names, schema, index_names
//!       ├─ a read-only snapshot: count(table, ..) per table
//!       └─ recovery_report(): checkpoint, log segments, torn tail
//! ```
//!
//! Invariant: inspect never writes to DIR (the read-only open's, see
//! `strata::Database::open_read_only`), and what it prints is one snapshot
//! of the database as recovery finds it.

use crate::UsageError;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use strata::{Database, Durability, Options, PointLookups, RecoveryReport, SyncPolicy};

#[derive(clap::Args, Debug, Clone)]
pub struct InspectArgs {
    /// The database directory (read only: nothing in it changes; refused
    /// while a program has it open for writing: inspect a backup of it).
    pub dir: PathBuf,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    pub json: bool,
}

/// Opens `dir` read-only; a refusal is a usage error (one line, exit 2)
/// naming the directory and why (not a database, damaged, locked).
pub fn open_read_only(dir: &Path) -> Result<Database, UsageError> {
    let opts = Options::default().durability(Durability::Wal {
        dir: dir.to_path_buf(),
        sync: SyncPolicy::GroupCommit,
    });
    Database::open_read_only(opts).map_err(|e| {
        let hint = match e {
            strata::Error::Locked { .. } => {
                " (a program has it open for writing; inspect a backup of it, Database::backup)"
            }
            _ => "",
        };
        UsageError(one_line(&format!(
            "cannot read {} as a database: {e}{hint}",
            dir.display()
        )))
    })
}

/// `s` on one line (an error message is printed as one).
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[derive(Serialize)]
struct Report {
    dir: String,
    tables: Vec<TableInfo>,
    indexes: Vec<IndexInfo>,
    checkpoint: Option<CheckpointInfo>,
    log: LogInfo,
    recovery: RecoveryInfo,
}

#[derive(Serialize)]
struct TableInfo {
    name: String,
    columns: Vec<ColumnInfo>,
    primary_key: Vec<String>,
    /// `hash` (a hash side beside the ordered tree) or `tree`.
    point_lookups: &'static str,
    rows: u64,
}

#[derive(Serialize)]
struct ColumnInfo {
    name: String,
    #[serde(rename = "type")]
    ty: &'static str,
    nullable: bool,
}

#[derive(Serialize)]
struct IndexInfo {
    name: String,
    table: String,
    columns: Vec<String>,
    unique: bool,
    kind: String,
}

#[derive(Serialize)]
struct CheckpointInfo {
    file: String,
    bytes: u64,
    /// Its begin LSN: the database as of there.
    lsn: u64,
    rows: u64,
}

#[derive(Serialize)]
struct LogInfo {
    segments: Vec<SegmentInfo>,
    bytes: u64,
    /// The first segment's start; replay began at `replay_from_lsn`.
    first_lsn: Option<u64>,
    replay_from_lsn: u64,
    /// Where the valid log ends (a torn tail after it is not counted).
    end_lsn: u64,
}

#[derive(Serialize)]
struct SegmentInfo {
    file: String,
    start_lsn: u64,
    bytes: u64,
}

#[derive(Serialize)]
struct RecoveryInfo {
    transactions_replayed: u64,
    catalog_records_replayed: u64,
    skip_records: u64,
    operation_records: u64,
    operation_records_discarded: u64,
    max_commit_ts: u64,
    duration_ms: f64,
    torn_tail: Option<TornInfo>,
}

#[derive(Serialize)]
struct TornInfo {
    segment: String,
    offset: u64,
    lsn: u64,
    end_lsn: u64,
    bytes: u64,
    damage: String,
    durable_lsn: u64,
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into())
}

/// Everything inspect reports, from one read-only open.
fn gather(dir: &Path, db: &Database) -> strata::Result<Report> {
    let mut snapshot = db.begin_read_only()?;
    let mut tables = Vec::new();
    for name in db.table_names() {
        let t = db.table(&name)?;
        let s = t.schema();
        tables.push(TableInfo {
            columns: (s.columns.iter())
                .map(|c| ColumnInfo {
                    name: c.name.clone(),
                    ty: c.ty.name(),
                    nullable: c.nullable,
                })
                .collect(),
            primary_key: (s.primary_key.iter())
                .map(|&i| s.columns[i].name.clone())
                .collect(),
            point_lookups: match s.point_lookups {
                PointLookups::Hash => "hash",
                PointLookups::Tree => "tree",
            },
            rows: snapshot.count(&t, ..)? as u64,
            name,
        });
    }
    snapshot.commit()?;
    let mut indexes = Vec::new();
    for name in db.index_names() {
        let i = db.index(&name)?;
        indexes.push(IndexInfo {
            table: i.table().name().to_string(),
            columns: i.columns().to_vec(),
            unique: i.is_unique(),
            kind: i.kind().to_string(),
            name,
        });
    }
    let r: RecoveryReport = db.recovery_report().unwrap_or_default();
    let checkpoint = r.checkpoint.as_ref().map(|file| CheckpointInfo {
        file: file.clone(),
        bytes: r.checkpoint_bytes,
        lsn: r.checkpoint_lsn,
        rows: r.checkpoint_rows,
    });
    let log = LogInfo {
        segments: (r.log_segments.iter())
            .map(|s| SegmentInfo {
                file: file_name(&s.path),
                start_lsn: s.start_lsn,
                bytes: s.bytes,
            })
            .collect(),
        bytes: r.log_segments.iter().map(|s| s.bytes).sum(),
        first_lsn: r.log_segments.first().map(|s| s.start_lsn),
        replay_from_lsn: r.replay_from_lsn,
        end_lsn: r.log_end_lsn,
    };
    let recovery = RecoveryInfo {
        transactions_replayed: r.transactions_replayed,
        catalog_records_replayed: r.catalog_records_replayed,
        skip_records: r.skip_records,
        operation_records: r.operation_records,
        operation_records_discarded: r.operation_records_discarded,
        max_commit_ts: r.max_commit_ts,
        duration_ms: r.duration.as_secs_f64() * 1e3,
        torn_tail: r.torn_tail.as_ref().map(|t| TornInfo {
            segment: file_name(&t.segment),
            offset: t.offset,
            lsn: t.lsn,
            end_lsn: t.end_lsn,
            bytes: t.bytes,
            damage: t.damage.clone(),
            durable_lsn: t.durable_lsn,
        }),
    };
    Ok(Report {
        dir: dir.display().to_string(),
        tables,
        indexes,
        checkpoint,
        log,
        recovery,
    })
}

pub fn run(a: &InspectArgs) -> Result<ExitCode, UsageError> {
    let db = open_read_only(&a.dir)?;
    let report = match gather(&a.dir, &db) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {}", one_line(&e.to_string()));
            return Ok(ExitCode::FAILURE);
        }
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string(&report).expect("the report serializes")
        );
    } else {
        print_summary(&report);
    }
    Ok(ExitCode::SUCCESS)
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn print_summary(r: &Report) {
    println!("database {} (opened read-only)", r.dir);
    println!("tables: {}", r.tables.len());
    for t in &r.tables {
        let cols: Vec<String> = (t.columns.iter())
            .map(|c| {
                let null = if c.nullable { " null" } else { "" };
                format!("{} {}{null}", c.name, c.ty)
            })
            .collect();
        println!(
            "  {}: {}; primary key ({}), point lookups: {}",
            t.name,
            plural(t.rows, "row", "rows"),
            t.primary_key.join(", "),
            t.point_lookups
        );
        println!("    columns: {}", cols.join(", "));
    }
    println!("indexes: {}", r.indexes.len());
    for i in &r.indexes {
        println!(
            "  {} on {} ({}), {}, {}",
            i.name,
            i.table,
            i.columns.join(", "),
            if i.unique { "unique" } else { "not unique" },
            i.kind
        );
    }
    match &r.checkpoint {
        Some(c) => println!(
            "checkpoint: {}, {} bytes, begin LSN {}, {}",
            c.file,
            c.bytes,
            c.lsn,
            plural(c.rows, "row", "rows")
        ),
        None => println!("checkpoint: none (the log holds everything)"),
    }
    let l = &r.log;
    println!(
        "log: {}, {} bytes, LSN {}..{} (replay from {})",
        plural(l.segments.len() as u64, "segment", "segments"),
        l.bytes,
        l.first_lsn.unwrap_or(0),
        l.end_lsn,
        l.replay_from_lsn
    );
    for s in &l.segments {
        println!("  {}: {} bytes from LSN {}", s.file, s.bytes, s.start_lsn);
    }
    let rc = &r.recovery;
    println!(
        "recovery: {} and {} replayed, {}, in {:.1} ms",
        plural(rc.transactions_replayed, "transaction", "transactions"),
        plural(
            rc.catalog_records_replayed,
            "catalog record",
            "catalog records"
        ),
        plural(rc.skip_records, "skip record", "skip records"),
        rc.duration_ms
    );
    if rc.operation_records > 0 {
        println!(
            "  operation records: {} read, {} discarded (transactions that never committed)",
            rc.operation_records, rc.operation_records_discarded
        );
    }
    match &rc.torn_tail {
        Some(t) => println!(
            "  torn tail (left in the file; a writable open cuts it): LSN {}..{}, {} bytes at \
             offset {} of {}: {}; durable up to LSN {}",
            t.lsn, t.end_lsn, t.bytes, t.offset, t.segment, t.damage, t.durable_lsn
        ),
        None => println!("  no torn tail"),
    }
}
