//! Measures recovery: loads N rows durably, closes the database, and times
//! `Database::open` on the directory — once recovering from the log alone,
//! once from a checkpoint.
//!
//! ```text
//! cargo run --release -p strata --example recovery_time -- [rows] [dir]
//! ```
//! (defaults: 1,000,000 rows, /tmp/strata-recovery)

use std::time::Instant;
use strata::{row, Database, Durability, LogTuning, Options, Schema, SyncPolicy, Type};

fn main() -> strata::Result<()> {
    let mut args = std::env::args().skip(1);
    let rows: i64 = args
        .next()
        .map(|s| s.parse().expect("rows"))
        .unwrap_or(1_000_000);
    let dir = std::path::PathBuf::from(args.next().unwrap_or("/tmp/strata-recovery".into()));
    let opts = Options::default()
        .durability(Durability::Wal {
            dir: dir.clone(),
            sync: SyncPolicy::Async,
        })
        .log_tuning(LogTuning {
            checkpoint_every_bytes: None,
            ..LogTuning::default()
        });
    for checkpoint in [false, true] {
        let _ = std::fs::remove_dir_all(&dir);
        let t0 = Instant::now();
        {
            let db = Database::open(opts.clone())?;
            let mut s = Schema::new("usertable").column("key", Type::Int);
            for c in 0..10 {
                s = s.column(format!("field{c}"), Type::Int);
            }
            let t = db.create_table(s.primary_key(&["key"]))?;
            for lo in (0..rows).step_by(1000) {
                let mut txn = db.begin()?;
                for k in lo..(lo + 1000).min(rows) {
                    txn.insert(&t, row![k, k, k, k, k, k, k, k, k, k, k])?;
                }
                txn.commit()?;
            }
            db.sync_log()?;
            if checkpoint {
                db.checkpoint()?;
            }
        }
        let load = t0.elapsed();
        let bytes: u64 = std::fs::read_dir(&dir)
            .map_err(|e| strata::Error::io("listing the database directory", e))?
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum();
        let t1 = Instant::now();
        let db = Database::open(opts.clone())?;
        let open = t1.elapsed();
        let r = db.recovery_report().expect("durable");
        let n = db
            .begin_read_only()?
            .scan_with(&db.table("usertable")?, .., |_| {})?;
        assert_eq!(n as i64, rows);
        println!(
            "{rows} rows from {}: load {:.2} s, {:.1} MiB on disk, Database::open {:.2} s \
             (checkpoint rows {}, log transactions {}, log bytes read {})",
            if checkpoint {
                "a checkpoint"
            } else {
                "the log"
            },
            load.as_secs_f64(),
            bytes as f64 / (1 << 20) as f64,
            open.as_secs_f64(),
            r.checkpoint_rows,
            r.transactions_replayed,
            r.log_bytes_read
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
